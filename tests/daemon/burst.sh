#!/bin/sh
# burst.sh: jobs that do not fit on-prem burst to the emulated cloud after
# the wait policy (constant:1), run there and succeed; explain names the
# policy; costs show both sides; idle instances are released after
# idle_timeout_s.  Then, under `wait: never`, what submit refuses: a job
# bigger than on-prem, 0 GPUs, an unknown field, malformed JSON (line:col),
# and a body over max_body_bytes (413).
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 34

mkconfig "$T/burst.yaml" 2 constant:1
# A commitment of 1 GPU (issue 24): too small for the 2-GPU jobs below.
sed -i 's/^  boot_delay_s: .*/&\n  commitments: [{name: ri, gpus: 1, usd_per_gpu_h: 1.5}]/' "$T/burst.yaml"
start_daemon "$T/burst.yaml" "$T/state"
ok $? "spillway serve starts (1 node x 2 slots, wait constant:1, boot 1 s)"

ids=
for i in 1 2 3 4; do
    ids="$ids $(submit ml --gpus 2 --name burst-$i --est-runtime 4s -- sleep 4)"
done
# shellcheck disable=SC2086
set -- $ids
j1=$1 j2=$2 j3=$3 j4=$4
[ $# -eq 4 ]
ok $? "four jobs of 2 GPUs are accepted ($ids)"

wait_for "$j1" running 5 && [ "$(field "$j1" 'd["where"]')" = onprem ]
ok $? "the first runs on-prem"

cloud_ok() { [ "$(field "$1" 'd["where"]')" = cloud ]; }
for j in $j2 $j3 $j4; do
    wait_until 6 cloud_ok "$j" || { diag "$j: where=$(field "$j" 'd["where"]')"; break; }
done
bad=0
for j in $j2 $j3 $j4; do
    show_json "$j" "$T/$j.json"
    json_check "$T/$j.json" '
assert d["where"] == "cloud", d["where"]
assert d["emulated"] is True, d["emulated"]
assert len(d["instances"]) == 2, d["instances"]
w = d["placed_ts"] - d["submit_ts"]
assert 0.8 <= w <= 4, "placed %.2f s after submit" % w' || bad=1
done
ok "$bad" "the other three go to the emulated cloud after about 1 s, on 2 instances each"

spw ml pools -o json >"$T/pools1.json"
json_check "$T/pools1.json" "
live = [i for i in d['instances'] if i['state'] in ('booting', 'ready')]
jobs = sorted(set(i['job_id'] for i in live))
assert jobs == sorted('$j2 $j3 $j4'.split()), jobs
assert len(live) == 6, len(live)
assert all(i['emulated'] for i in live)
assert sum(o['instances_live'] for o in d['offers']) == 6, d['offers']"
ok $? "pools -o json lists the 6 instances, bound to the cloud jobs"

spw ml explain "$j2" -o json >"$T/explain.json"
json_check "$T/explain.json" '
dec = d["decision"]
assert dec["where"] == "cloud", dec
assert "wait policy" in dec["reason"], dec["reason"]
w = [c for c in dec["candidates"] if c["kind"] == "wait"]
assert w and w[0]["name"] == "constant:1", w'
ok $? "explain -o json of a cloud job: decided by the wait policy constant:1"
spw ml explain "$j2" >"$T/explain.txt" 2>&1
contains "$T/explain.txt" "wait policy" && contains "$T/explain.txt" "constant:1"
ok $? "explain (table) names the wait policy"

done=0
for j in $j1 $j2 $j3 $j4; do
    wait_for "$j" succeeded 12 || done=1
done
ok "$done" "all four succeed"
bad=0
for j in $j2 $j3 $j4; do
    show_json "$j" "$T/$j.json"
    json_check "$T/$j.json" '
assert d["exit_code"] == 0, d["exit_code"]
assert d["cost_usd"] > 0, d["cost_usd"]
assert d["start_ts"] - d["placed_ts"] >= 0.8, "started %.2f s after placed" % (d["start_ts"] - d["placed_ts"])' ||
        bad=1
done
ok "$bad" "cloud jobs start after the 1 s boot, exit 0 and cost more than 0"

spw admin costs -o json >"$T/costs.json"
json_check "$T/costs.json" '
assert d["cloud_usd"] > 0, d["cloud_usd"]
assert d["onprem_usd"] > 0, d["onprem_usd"]
assert abs(d["total_usd"] - d["onprem_usd"] - d["cloud_usd"] - d["commit_usd"]) < 1e-6, d
p = [x for x in d["providers"] if x["emulated"]]
assert p and p[0]["instances"] == 6, d["providers"]
# Owned capacity (the simulator'"'"'s model): every GPU since the first submit,
# at least what jobs used; the idle part is the rest.
assert d["owned_usd"] >= d["onprem_usd"] - 1e-6 and d["owned_idle_usd"] > 0, d
assert abs(d["owned_usd"] - sum(x["owned_usd"] for x in d["pools"])) < 1e-6, d'
ok $? "costs -o json (admin): cloud_usd > 0 and onprem_usd > 0, 6 emulated instances, owned cost used + idle"
spw admin costs >"$T/costs.txt" 2>&1
ok $? "costs (table) works for the admin"

released() {
    spw admin pools -o json >"$T/pools2.json" &&
        jpy "$T/pools2.json" 'len(d["instances"]) == 6 and all(i["state"] == "released" for i in d["instances"])' |
        grep -qx true
}
wait_until 8 released
ok $? "after idle_timeout_s (2 s) every instance is released (pools, admin)" ||
    diag "$(cat "$T/pools2.json")"
json_check "$T/pools2.json" '
assert all(i["ended_ts"] is not None for i in d["instances"])
assert all(o["instances_live"] == 0 for o in d["offers"]), d["offers"]
assert d["pools"][0]["gpus_busy"] == 0, d["pools"]'
ok $? "released instances have an end time; nothing is live or busy"
grep -q "released after" "$DLOG"
ok $? "the daemon logs the idle releases"
# Issue 24: a job that can never run is refused at submit, with the reason:
# 3 GPUs never fit on-prem (2), and spot: always finds no offer with a spot
# price (before: accepted, then failed with "none yet").
printf '{"run": ["true"], "gpus": 3, "spot": "always"}' >"$T/never-runs.json"
http POST /v1/jobs ml "$T/never-runs.json"
http_is 400 "can never run here: no on-prem pool and no cloud offer can run it" \
    "a job no place can run: 400 at submit, saying why"

# Issue 24: with on-prem full, a 1-GPU job takes the commitment at once
# (paid used or idle), not on-demand capacity once its 1 s wait is over.
blk=$(submit ml --gpus 2 --name blocker --est-runtime 30s -- sleep 30)
wait_for "$blk" running 5
spw admin costs -o json >"$T/costs-c0.json"
jc=$(submit ml --gpus 1 --name committed --est-runtime 2s -- sleep 2)
wait_until 6 cloud_ok "$jc"
spw ml explain "$jc" -o json >"$T/explain-c.json"
json_check "$T/explain-c.json" '
dec = d["decision"]
assert dec["where"] == "cloud", dec
assert "committed" in dec["reason"], dec["reason"]
assert any(c["kind"] == "cloud" and c["name"].endswith("@ri") for c in dec["candidates"]), dec'
ok $? "a 1-GPU job goes to the 1-GPU commitment (offer ...@ri) at once, reason committed" ||
    diag "$(cat "$T/explain-c.json")"
# Priced at the committed rate (1 GPU x $1.5/GPU-h) for the time its
# instance was bound to it (from its placement to its end), outside the
# team's budget ledger: settled_usd does not move.
wait_for "$jc" succeeded 10
show_json "$jc" "$T/jc.json"
spw admin costs -o json >"$T/costs-c.json"
json_check "$T/jc.json" '
import json
lo = 1.5 * (d["end_ts"] - d["start_ts"]) / 3600 - 1.5 * 0.5 / 3600
hi = 1.5 * (d["end_ts"] - d["placed_ts"]) / 3600 + 1.5 * 0.5 / 3600
assert lo <= d["commit_usd"] <= hi, (lo, d["commit_usd"], hi)
assert abs(d["cost_usd"] - d["commit_usd"]) < 1e-9, d["cost_usd"]
c0 = json.load(open("'"$T/costs-c0.json"'"))
c = json.load(open("'"$T/costs-c.json"'"))
t0 = [t for t in c0["teams"] if t["team"] == "ml"][0]
t = [t for t in c["teams"] if t["team"] == "ml"][0]
assert abs(t["settled_usd"] - t0["settled_usd"]) < 1e-9, (t0["settled_usd"], t["settled_usd"])
assert abs(t["commit_usd"] - t0["commit_usd"] - d["commit_usd"]) < 1e-9, (t, d["commit_usd"])'
ok $? "the job on the commitment costs its share at 1.5 \$/GPU-h; its team's settled budget is unchanged" ||
    diag "$(cat "$T/jc.json")"
json_check "$T/costs-c.json" '
import json
r = [x for x in d["commitments"] if x["name"] == "ri"]
assert len(r) == 1 and r[0]["gpus"] == 1, d["commitments"]
r = r[0]
all_ = 1.5 * (d["now_ts"] - d["since_ts"]) / 3600
assert abs(r["usd"] - all_) < 1.5 * 0.05 / 3600, (r, all_)  # times in JSON: 0.01 s
assert abs(r["used_usd"] + r["idle_usd"] - r["usd"]) < 1e-9, r
job = json.load(open("'"$T/jc.json"'"))["commit_usd"]
assert r["used_usd"] >= job - 1e-9 and r["idle_usd"] > 0, (r, job)
assert abs(d["commit_usd"] - d["commit_used_usd"] - d["commit_idle_usd"]) < 1e-9, d
assert abs(d["commit_usd"] - r["usd"]) < 1e-9, d
assert abs(d["total_usd"] - d["onprem_usd"] - d["cloud_usd"] - d["commit_usd"]) < 1e-6, d'
ok $? "costs -o json: the commitment's row, every GPU since the first submit = used + idle, in the total" ||
    diag "$(cat "$T/costs-c.json")"
http GET /metrics admin
grep -Eq '^spillway_commitment_usd\{name="ri",share="used"\} [0-9.]+$' "$T/http.body" &&
    grep -Eq '^spillway_commitment_usd\{name="ri",share="idle"\} [0-9.]+$' "$T/http.body"
ok $? "/metrics: spillway_commitment_usd{name=ri,share=used|idle}" ||
    diag "$(grep commitment "$T/http.body")"
spw ml cancel "$blk" >/dev/null 2>&1
wait_for "$blk" cancelled 10
# After kill -9 and a restart the job's committed share is still committed
# (schema 12 keeps it apart from cloud_usd): in the job, its team and the
# commitment's used share, which come from the jobs charged to the period.
spw admin costs -o json >"$T/costs-pre.json"
show_json "$jc" "$T/jc-pre.json"
kill9_daemon
start_daemon "$T/burst.yaml" "$T/state" &&
    spw admin costs -o json >"$T/costs-post.json" &&
    show_json "$jc" "$T/jc-post.json" &&
    json_check "$T/costs-post.json" '
import json
pre = json.load(open("'"$T/costs-pre.json"'"))
jb, ja = (json.load(open("'"$T"'/jc-%s.json" % w)) for w in ("pre", "post"))
assert ja["commit_usd"] > 0 and abs(ja["commit_usd"] - jb["commit_usd"]) < 1e-9, (jb["commit_usd"], ja["commit_usd"])
assert abs(ja["cost_usd"] - jb["cost_usd"]) < 1e-9, (jb["cost_usd"], ja["cost_usd"])
ml = lambda c: [t for t in c["teams"] if t["team"] == "ml"][0]
for k in ("cloud_usd", "commit_usd", "settled_usd"):
    assert abs(ml(d)[k] - ml(pre)[k]) < 1e-9, (k, ml(pre)[k], ml(d)[k])
ri = lambda c: [x for x in c["commitments"] if x["name"] == "ri"][0]
assert abs(ri(d)["used_usd"] - ri(pre)["used_usd"]) < 1e-9, (ri(pre), ri(d))
assert ri(d)["used_usd"] >= ja["commit_usd"] - 1e-9, (ri(d), ja["commit_usd"])'
ok $? "after kill -9 and a restart: the job's, its team's and the commitment's committed share are unchanged, none moved to cloud" ||
    diag "$(cat "$T/costs-pre.json" "$T/costs-post.json" 2>&1)"

stop_daemon "$DPID"
no_strays "no job process is left"

# ---- wait: never, and what submit refuses --------------------------------
mkconfig "$T/never.yaml" 2 never
echo "  max_body_bytes: 1024" >>"$T/never.yaml"
start_daemon "$T/never.yaml" "$T/state-never"
ok $? "spillway serve starts (wait never, max_body_bytes 1024)"

printf '{"run": ["true"], "gpus": 3}' >"$T/big.json"
http POST /v1/jobs ml "$T/big.json"
http_is 400 "never" "a job bigger than on-prem under wait: never: 400 naming the policy"
contains "$T/http.body" "'gpus'"
ok $? "... and naming the field gpus"
spw ml submit --gpus 3 -- true >"$T/s.out" 2>"$T/s.err"
[ $? -eq 1 ] && contains "$T/s.err" "400"
ok $? "spillway submit of it exits 1 with the daemon's message"

printf '{"run": ["true"], "gpus": "A1OO:1"}' >"$T/typo.json"
http POST /v1/jobs ml "$T/typo.json"
http_is 400 "did you mean A100?" "a GPU model typo (A1OO): 400 with did you mean A100 (issue 24)"
printf '{"run": ["true"], "gpus": "H200:1"}' >"$T/h200.json"
http POST /v1/jobs ml "$T/h200.json"
http_is 400 "GPU model H200 (the fleet has: " \
    "a model the fleet lacks (H200) is no typo of A100: 400 with the models the fleet has"

printf '{"run": ["true"], "gpus": 0}' >"$T/zero.json"
http POST /v1/jobs ml "$T/zero.json"
http_is 400 "gpus" "0 GPUs: 400 naming gpus"

printf '{"run": ["true"], "gpus": 1, "colour": "blue"}' >"$T/unknown.json"
http POST /v1/jobs ml "$T/unknown.json"
http_is 400 "colour" "an unknown field: 400 naming the field"

printf '{\n  "run": ["true"],\n  "gpus": 1,,\n}' >"$T/bad.json"
http POST /v1/jobs ml "$T/bad.json"
[ "$code" = 400 ] && grep -qE '[0-9]+:[0-9]+' "$T/http.body" && grep -q '"status": *400' "$T/http.body"
ok $? "malformed JSON: 400, a JSON error with line:col" || diag "status $code: $(cat "$T/http.body")"

# 1024 is the limit: a valid spec of about 1000 bytes goes in, 2000 does not.
pad=$(python3 -c 'print("x" * 980)')
printf '{"run": ["true", "%s"], "gpus": 1}' "$pad" >"$T/fits.json"
http POST /v1/jobs ml "$T/fits.json"
[ "$code" = 201 ]
ok $? "a $(wc -c <"$T/fits.json")-byte spec is accepted (201)" || diag "status $code: $(cat "$T/http.body")"
pad=$(python3 -c 'print("x" * 2000)')
printf '{"run": ["true", "%s"], "gpus": 1}' "$pad" >"$T/huge.json"
http POST /v1/jobs ml "$T/huge.json"
http_is 413 "max_body_bytes" "a $(wc -c <"$T/huge.json")-byte body: 413"

spw ml queue --all -o json >"$T/q.json"
json_check "$T/q.json" 'assert len(d["jobs"]) == 1, [j["id"] for j in d["jobs"]]'
ok $? "only the one accepted job is in the queue"

stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
