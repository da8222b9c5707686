#!/bin/sh
# budget.sh: a team's budget holds in the live daemon, under concurrent
# submissions racing for its last dollars and across a kill -9.
# (a) on_exhausted: hold.  The budget fits exactly 4 worst cases; 12 jobs
#     are submitted at once.  Polling /v1/costs every 0.2 s, settled +
#     reserved never exceeds the budget; exactly 4 run in the cloud, the
#     other 8 are held and explain says it is the budget.  kill -9 while they
#     run: after a restart on the same state dir the reservations are the
#     same, and nothing new is placed.  The 4 are stopped at max_runtime; what
#     they billed is within the budget and what is left fits no 5th.
# (b) on_exhausted: reject.  Of 8 jobs racing, 4 run and 4 are rejected.
# (c) The net under max_runtime: a daemon frozen (SIGSTOP) while a cloud
#     job boots, past its worst case, stops the job as soon as it runs
#     again, with a reason that says so; the ledger settles no more than
#     the reservation.
# (d) A cloud job that ends while the daemon is down (kill -9) is settled
#     once, at the restart, to what its instances billed.
# (e) Egress into an on-prem pool (a dataset whose home is the cloud) counts
#     in the team's egress month and not in its budget, before and after a
#     kill -9: the restart rebuilds the ledger as the running daemon kept it.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 42

# One job: 2 GPUs, so 2 instances of $2.50/h (a 1-GPU on-prem node never
# holds it and it bursts at once); max_runtime 12 s.  Its worst case is
# 2 x $2.50/h x (boot 1 s + max_runtime 12 s + kill_grace 1 s + 2 turns of
# 0.05 s + 1 s) = $0.0209722.  The budget, $0.0861, holds 4 of those and not
# 5.  Each of the 4 bills at least boot + max_runtime = 13 s ($0.0180556),
# so what is left once they end ($0.0139 at most) never fits a 5th.
BUDGET=0.0861
WC=$(python3 -c 'print("%.10f" % (2 * 2.5 * (1 + 12 + 1 + 2 * 0.05 + 1) / 3600))')
JOB='{"run": ["sleep", "60"], "gpus": 2, "max_runtime": 12, "name": "race-%s"}'

# budget_config FILE ON_EXHAUSTED
budget_config() {
    mkconfig "$1" 1 none
    cat >>"$1" <<EOF
teams:
  - name: ml
    monthly_usd: $BUDGET
    on_exhausted: $2
EOF
}

# race N: N submissions as team ml at once; their ids in $T/ids.
race() {
    rc_pids=
    for i in $(seq 1 "$1"); do
        # shellcheck disable=SC2059
        printf "$JOB" "$i" >"$T/job.$i.json"
        curl -s -m 10 -o "$T/sub.$i" -w '%{http_code}' -H "Authorization: Bearer $ML_TOKEN" \
            -H "Content-Type: application/json" --data-binary "@$T/job.$i.json" "$URL/v1/jobs" >"$T/code.$i" &
        rc_pids="$rc_pids $!"
    done
    # shellcheck disable=SC2086
    wait $rc_pids
    : >"$T/ids"
    for i in $(seq 1 "$1"); do
        [ "$(cat "$T/code.$i")" = 201 ] && sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$T/sub.$i" >>"$T/ids"
    done
    [ "$(wc -l <"$T/ids")" -eq "$1" ]
}

# census: $T/q.json (every job) and counts: cloud (placed or running in
# the cloud), held (queued, held by the budget), rej (rejected), ran
# (ever placed in the cloud).
census() {
    spw admin queue --all -o json >"$T/q.json" 2>/dev/null || return 1
    set -- $(jpy "$T/q.json" '" ".join(str(x) for x in [
        sum(j["where"] == "cloud" and j["state"] in ("placed", "running") for j in d["jobs"]),
        sum(j["state"] == "queued" and j["held"] > 0 and "budget" in (j["reason"] or "") for j in d["jobs"]),
        sum(j["state"] == "rejected" for j in d["jobs"]),
        sum(j["where"] == "cloud" for j in d["jobs"])])')
    cloud=$1 held=$2 rej=$3 ran=$4
}

# ---- (a) hold ------------------------------------------------------------
budget_config "$T/hold.yaml" hold
start_daemon "$T/hold.yaml" "$T/state"
ok $? "spillway serve starts with team ml's budget of \$$BUDGET (worst case \$$WC a job)"
echo "$URL" >"$T/url"

# Poll the admin's costs every 0.2 s for as long as the jobs live, across
# the restart ($T/url follows the daemon).
: >"$T/polls"
(
    while [ ! -f "$T/poll.stop" ]; do
        curl -s -m 2 -H "Authorization: Bearer $ADMIN_TOKEN" "$(cat "$T/url")/v1/costs" >>"$T/polls" 2>/dev/null
        sleep 0.2
    done
) </dev/null >/dev/null 2>&1 &
poller=$!
XPIDS="$XPIDS $poller"

race 12
ok $? "12 jobs submitted at once are all accepted"

four_and_eight() { census && [ "$cloud" = 4 ] && [ "$held" = 8 ]; }
wait_until 10 four_and_eight
ok $? "exactly 4 run in the cloud, 8 are held by the budget ($cloud in the cloud, $held held)" ||
    diag "$(jpy "$T/q.json" '[(j["id"], j["state"], j["where"], j["reason"]) for j in d["jobs"]]')"
held_id=$(jpy "$T/q.json" '[j["id"] for j in d["jobs"] if j["state"] == "queued"][0]')
cloud_id=$(jpy "$T/q.json" '[j["id"] for j in d["jobs"] if j["where"] == "cloud"][0]')

show_json "$held_id" "$T/held.json"
json_check "$T/held.json" '
assert d["state"] == "queued", d["state"]
assert d["held"] >= 1, d["held"]
assert d["reserved_usd"] == 0, d["reserved_usd"]
assert d["reason"].startswith("held by budget: team ml"), d["reason"]
assert "--max-runtime" in d["reason"] and "fewer GPUs" in d["reason"], d["reason"]
assert d["reason_code"] == "budget" and d["burst_ts"] is None, d'
ok $? "a held job: queued, held >= 1, reserves nothing, its reason says held by budget and how to start sooner" ||
    diag "$(cat "$T/held.json")"
spw ml explain "$held_id" >"$T/explain.txt" 2>&1
contains "$T/explain.txt" "budget" && contains "$T/explain.txt" "may cost"
ok $? "explain of a held job says what is left of the budget and what the placement may cost" ||
    diag "$(cat "$T/explain.txt")"
show_json "$cloud_id" "$T/cloud.json"
json_check "$T/cloud.json" "
assert abs(d['reserved_usd'] - $WC) < 1e-9, d['reserved_usd']
assert d['max_runtime_s'] == 12, d['max_runtime_s']
assert d['charge_ts'] is not None"
ok $? "a cloud job reserves its worst case (\$$WC) and shows max_runtime_s and charge_ts"

spw ml costs -o json >"$T/costs1.json"
json_check "$T/costs1.json" "
t = [t for t in d['teams'] if t['team'] == 'ml'][0]
assert t['budget_usd'] == $BUDGET, t
assert t['source'] == 'ledger' and t['period'] == d['period'], t
assert t['settled_usd'] == 0, t
assert abs(t['reserved_usd'] - 4 * $WC) < 1e-9, t
assert abs(t['remaining_usd'] - ($BUDGET - 4 * $WC)) < 1e-9, t
assert t['held_jobs'] == 8 and t['rejected_jobs'] == 0, t
assert t['cloud_gpus'] == 8 and abs(t['cloud_usd_per_h'] - 20) < 1e-9, t
assert d['org'] is None, 'a team token sees no organisation totals'"
ok $? "costs (team ml): budget, 4 worst cases reserved, the rest remaining, 8 held, 8 cloud GPUs"
spw ml costs >"$T/costs1.txt" 2>&1 && contains "$T/costs1.txt" "budgets" && contains "$T/costs1.txt" "REMAINING"
ok $? "costs (table) shows the budget" || diag "$(cat "$T/costs1.txt")"

curl -s -m 5 "$URL/metrics" >"$T/metrics.txt"
grep -qx 'spillway_team_budget_usd{team="ml"} 0.086100' "$T/metrics.txt" &&
    grep -qx 'spillway_jobs_held{team="ml",reason="budget"} 8' "$T/metrics.txt" &&
    grep -qx 'spillway_jobs_waiting{reason="budget"} 8' "$T/metrics.txt" &&
    grep -q '^spillway_team_reserved_usd{team="ml"} 0.08' "$T/metrics.txt" &&
    grep -qx 'spillway_team_spend_usd{team="ml"} 0.000000' "$T/metrics.txt"
ok $? "/metrics: the team's budget, spend, reservations and held jobs" ||
    diag "$(grep 'team=' "$T/metrics.txt")"

# ---- kill -9 while they run ----------------------------------------------
kill9_daemon "$DPID"
start_daemon "$T/hold.yaml" "$T/state"
ok $? "after kill -9 the daemon restarts on the same state dir" || diag "$(cat "$DLOG")"
echo "$URL" >"$T/url.new" && mv "$T/url.new" "$T/url"
spw ml costs -o json >"$T/costs2.json"
python3 - "$T/costs1.json" "$T/costs2.json" >"$T/cmp" 2>&1 <<'EOF'
import json, sys
a = [t for t in json.load(open(sys.argv[1]))["teams"] if t["team"] == "ml"][0]
b = [t for t in json.load(open(sys.argv[2]))["teams"] if t["team"] == "ml"][0]
for k in ("budget_usd", "settled_usd", "reserved_usd", "held_jobs", "cloud_gpus"):
    assert abs(a[k] - b[k]) < 1e-9, (k, a[k], b[k])
EOF
ok $? "the reservations survive: settled, reserved, held and cloud GPUs as before the kill" ||
    diag "$(cat "$T/cmp")"
sleep 1
census
# Under load some of the 4 may already have reached their max_runtime: what
# must hold is that none was added and the 8 are still held.
[ "$ran" = 4 ] && [ "$held" = 8 ] && [ "$cloud" -le 4 ]
ok $? "nothing new is placed after the restart ($ran placed in the cloud in all, $held held)"

# The 4 are stopped at max_runtime (12 s after they started).
none_in_cloud() { census && [ "$cloud" = 0 ]; }
wait_until 25 none_in_cloud
ok $? "the 4 cloud jobs end" || diag "$cloud still in the cloud"
json_check "$T/q.json" '
c = [j for j in d["jobs"] if j["where"] == "cloud"]
assert len(c) == 4, len(c)
assert all(j["state"] == "failed" and ("max_runtime" in j["reason"] or "worst-case cost" in j["reason"])
           for j in c), [(j["state"], j["reason"]) for j in c]'
ok $? "each was stopped by a money bound: its max_runtime (or, if its launch came late, its worst case)"
sleep 0.5
census
[ "$ran" = 4 ] && [ "$held" = 8 ]
ok $? "what is left of the budget fits no 5th: the 8 stay held, 4 ran in the cloud in all"

spw admin costs -o json >"$T/costs3.json"
python3 - "$T/costs3.json" "$T/q.json" "$BUDGET" "$WC" >"$T/end" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
jobs = json.load(open(sys.argv[2]))["jobs"]
budget, wc = float(sys.argv[3]), float(sys.argv[4])
t = [t for t in d["teams"] if t["team"] == "ml"][0]
billed = sum(j["cost_usd"] for j in jobs if j["where"] == "cloud")
assert t["reserved_usd"] == 0, t
assert t["settled_usd"] <= budget, (t["settled_usd"], budget)
assert billed <= budget, (billed, budget)
assert all(j["cost_usd"] <= wc for j in jobs if j["where"] == "cloud"), [j["cost_usd"] for j in jobs]
assert abs(t["settled_usd"] - billed) < 1e-6, (t["settled_usd"], billed)
assert budget - t["settled_usd"] < wc, "a 5th would fit"
print("billed %.6f of %.6f; the provider billed %.6f with idle instances" % (billed, budget, d["cloud_usd"]))
EOF
ok $? "at the end: nothing reserved, settled = what the jobs billed <= the budget, each <= its worst case" ||
    diag "$(cat "$T/end")"
diag "$(cat "$T/end")"

touch "$T/poll.stop"
wait "$poller" 2>/dev/null
python3 - "$T/polls" "$BUDGET" "$WC" >"$T/polled" 2>&1 <<'EOF'
import json, sys
budget, wc = float(sys.argv[2]), float(sys.argv[3])
n, top = 0, 0.0
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    t = [t for t in d["teams"] if t["team"] == "ml"]
    if not t:
        continue
    used = t[0]["settled_usd"] + t[0]["reserved_usd"]
    assert used <= budget + 1e-12, "settled + reserved %.6f > budget %.6f" % (used, budget)
    n += 1
    top = max(top, used)
assert n >= 20, "only %d polls" % n
assert top >= 4 * wc - 1e-9, "the race never reached 4 worst cases (%.6f)" % top
print("%d polls; settled + reserved peaked at %.6f of %.6f" % (n, top, budget))
EOF
ok $? "polled every 0.2 s: settled + reserved never exceeded the budget" || diag "$(cat "$T/polled")"
diag "$(cat "$T/polled")"

# (after the checks that race the cloud jobs' 12 s max_runtime)
spw ml queue >"$T/queue.txt" 2>&1
[ "$(awk 'NR == 1 { print $NF } $4 == "queued" && $NF == "budget" { n++ } END { print n + 0 }' "$T/queue.txt" | tr '\n' ' ')" = "REASON 8 " ] &&
    spw ml show "$held_id" >"$T/show.txt" 2>&1 && grep -q "held by budget" "$T/show.txt"
ok $? "queue's REASON column says budget for the 8 held, and show says why" ||
    diag "$(cat "$T/queue.txt" "$T/show.txt")"
for id in $(jpy "$T/q.json" '" ".join(j["id"] for j in d["jobs"] if j["state"] == "queued")'); do
    spw ml cancel "$id" >/dev/null 2>&1
done
census
[ "$held" = 0 ] && [ "$ran" = 4 ]
ok $? "the held jobs are cancelled"

# A job whose worst case is over the whole budget (1 GPU, max_runtime 600 s:
# $0.419 > $0.0861) waits for on-prem, which a 1-GPU job holds: it is held,
# says so with the fix, and costs counts it (it said "reason: -" and
# HELD 0 before).
onp=$(spw ml submit --gpus 1 -- sleep 60 2>/dev/null)
onp_is() { [ "$(state_of "$onp")" = "$1" ]; }
wait_until 10 onp_is running
big=$(spw ml submit --gpus 1 --max-runtime 600 -- true 2>/dev/null)
limit_held() {
    show_json "$big" "$T/big.json" && spw ml costs -o json >"$T/costs-big.json" &&
        json_check "$T/big.json" 'assert d["reason_code"] == "limit", d' 2>/dev/null
}
wait_until 10 limit_held
json_check "$T/big.json" '
assert d["state"] == "queued", d["state"]
assert d["reason"].startswith("held by budget: its worst case is over"), d["reason"]
assert "--max-runtime" in d["reason"], d["reason"]' &&
    json_check "$T/costs-big.json" "
t = [t for t in d['teams'] if t['team'] == 'ml'][0]
assert t['held_jobs'] == 1, t"
ok $? "a job over the budget outright waits held by budget (limit), says a shorter --max-runtime helps, and costs counts it" ||
    diag "$(cat "$T/big.json" "$T/costs-big.json")"
spw ml cancel "$big" >/dev/null 2>&1
spw ml cancel "$onp" >/dev/null 2>&1
wait_until 10 onp_is cancelled
stop_daemon "$DPID"
no_strays "no job process is left"

# ---- (b) reject ----------------------------------------------------------
rm -f "$T/poll.stop"
budget_config "$T/reject.yaml" reject
start_daemon "$T/reject.yaml" "$T/state-reject"
ok $? "spillway serve starts with on_exhausted: reject"
race 8
ok $? "8 jobs submitted at once are accepted"
four_and_four() { census && [ "$cloud" = 4 ] && [ "$rej" = 4 ]; }
wait_until 10 four_and_four
ok $? "4 run in the cloud and 4 are rejected ($cloud, $rej)" ||
    diag "$(jpy "$T/q.json" '[(j["id"], j["state"], j["reason"]) for j in d["jobs"]]')"
json_check "$T/q.json" '
r = [j for j in d["jobs"] if j["state"] == "rejected"]
assert all("budget" in j["reason"] and j["end_ts"] and j["where"] is None for j in r), r'
ok $? "a rejected job has ended, never ran, and its reason names the budget"
spw ml queue --state rejected -o json >"$T/rq.json"
json_check "$T/rq.json" 'assert len(d["jobs"]) == 4, len(d["jobs"])'
ok $? "queue --state rejected lists them"
spw ml costs -o json >"$T/costs4.json"
json_check "$T/costs4.json" "
t = [t for t in d['teams'] if t['team'] == 'ml'][0]
assert t['rejected_jobs'] == 4 and t['held_jobs'] == 0, t
assert t['on_exhausted'] == 'reject', t"
ok $? "costs counts 4 rejected jobs"
for id in $(jpy "$T/q.json" '" ".join(j["id"] for j in d["jobs"] if j["where"] == "cloud")'); do
    spw ml cancel "$id" >/dev/null 2>&1
done
all_cancelled() { census && [ "$cloud" = 0 ]; }
wait_until 10 all_cancelled
ok $? "the 4 running jobs are cancelled"
stop_daemon "$DPID"
no_strays "no job process is left"

# ---- (c) a stalled daemon ------------------------------------------------
BUDGET=5
BOOT_DELAY=3 budget_config "$T/stall.yaml" hold
start_daemon "$T/stall.yaml" "$T/state-stall"
ok $? "spillway serve starts (boot 3 s)"
# worst case: 2 x $2.50/h x (3 + 4 + 2.1 s)
wc=$(python3 -c 'print("%.10f" % (2 * 2.5 * (3 + 4 + 1 + 2 * 0.05 + 1) / 3600))')
sid=$(submit ml --gpus 2 --max-runtime 4 -- sleep 60)
wait_for "$sid" placed 5
ok $? "a cloud job is placed and boots"
kill -STOP "$DPID"
sleep 10
kill -CONT "$DPID"
wait_for "$sid" failed 5
ok $? "the daemon, resumed past the job's worst case, stops it"
show_json "$sid" "$T/stall.json"
json_check "$T/stall.json" "
assert d['reason'].startswith('stopped: reached its worst-case cost'), d['reason']
assert d['cost_usd'] > $wc, (d['cost_usd'], 'billed while the daemon was stopped')
assert d['reserved_usd'] == 0"
ok $? "its reason says it reached its worst-case cost" || diag "$(cat "$T/stall.json")"
spw ml costs -o json >"$T/costs5.json"
json_check "$T/costs5.json" "
t = [t for t in d['teams'] if t['team'] == 'ml'][0]
assert abs(t['settled_usd'] - $wc) < 1e-9 and t['reserved_usd'] == 0, t"
ok $? "the ledger settles the reservation (\$$wc), not the overrun of the frozen daemon"

# ---- (d) a job that ends while the daemon is down --------------------------
did=$(submit ml --gpus 2 --max-runtime 60 -- sleep 2.017)
job_up() { [ -n "$(procs_with 'sleep 2.017')" ]; }
wait_for "$did" running 8 && wait_until 5 job_up
ok $? "a cloud job runs"
kill9_daemon "$DPID"
# Wait for the job's process to exit (not a fixed 3 s: under load the job
# may still be running then, and the restart would re-adopt it instead).
job_gone() { ! job_up; }
wait_until 20 job_gone
ok $? "the job's process exits while the daemon is down"
start_daemon "$T/stall.yaml" "$T/state-stall"
ok $? "the daemon restarts after the job has ended" || diag "$(cat "$DLOG")"
wait_for "$did" succeeded 5
ok $? "the job is found to have exited 0 while the daemon was down"
show_json "$did" "$T/down.json"
spw ml costs -o json >"$T/costs6.json"
python3 - "$T/costs6.json" "$T/down.json" "$wc" >"$T/down" 2>&1 <<'EOF'
import json, sys
t = [t for t in json.load(open(sys.argv[1]))["teams"] if t["team"] == "ml"][0]
j = json.load(open(sys.argv[2]))
wc = float(sys.argv[3])
assert t["reserved_usd"] == 0, t
# the stalled job's reservation, and this job's bill (up to the restart)
assert abs(t["settled_usd"] - (wc + j["cost_usd"])) < 1e-9, (t["settled_usd"], wc, j["cost_usd"])
EOF
ok $? "it is settled once, to what its instances billed up to the restart" || diag "$(cat "$T/down")"
stop_daemon "$DPID"

# ---- (e) on-prem egress across a restart -----------------------------------
# A region of its own (emu:test-1) for the dataset's home; emu's egress is
# priced as aws's, $0.09/GB.
cat >"$T/offers-e.csv" <<'EOF'
provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h
emu,test-1,test-1a,g1,A100,1,3.00,0.90
EOF
mkconfig "$T/egress.yaml" 1 never
python3 - "$T/egress.yaml" <<'EOF'
import sys
path = sys.argv[1]
text = open(path).read().replace("  price_usd_per_gpu_h: 2.5\n", "  offers: offers-e.csv\n")
extra = """teams:
  - name: ml
    monthly_usd: 100
    max_cloud_egress_usd_per_month: 50
data:
  datasets:
    - name: corpus
      size_gb: 10
      home: emu:test-1
"""
open(path, "w").write(text.replace("daemon:\n", extra + "daemon:\n"))
EOF
start_daemon "$T/egress.yaml" "$T/state-egress"
ok $? "a daemon starts with a dataset at home in the cloud" || diag "$(cat "$DLOG")"
eid=$(submit ml --gpus 1 --data corpus -- sleep 300)
wait_for "$eid" running 15
spw ml costs -o json >"$T/costs7.json"
kill9_daemon "$DPID"
start_daemon "$T/egress.yaml" "$T/state-egress"
wait_for "$eid" running 15
spw ml costs -o json >"$T/costs8.json"
python3 - "$T/costs7.json" "$T/costs8.json" >"$T/egress" 2>&1 <<'EOF'
import json, sys
before, after = ([t for t in json.load(open(p))["teams"] if t["team"] == "ml"][0] for p in sys.argv[1:3])
# 10 GB leave emu:test-1 at $0.09/GB into the on-prem pool: $0.90 of egress, none of it budget
assert abs(before["egress_usd"] - 0.9) < 1e-9, before
assert before["settled_usd"] == 0 and before["reserved_usd"] == 0, before
for k in ("egress_usd", "settled_usd", "reserved_usd"):
    assert abs(before[k] - after[k]) < 1e-9, (k, before[k], after[k])
EOF
ok $? "on-prem egress counts in the egress month (\$0.90), not the budget, before and after a kill -9" ||
    diag "$(cat "$T/egress" "$T/costs7.json" "$T/costs8.json")"
spw admin cancel "$eid" >/dev/null 2>&1
wait_for "$eid" cancelled 15
stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
