#!/bin/sh
# accounts.sh: several cloud accounts at once (cloud.accounts), with
# emulated accounts whose refusals are EC2's error codes:
# - an offer no account serves (the cheapest, aws) is never chosen, and
#   explain says so;
# - a capacity refusal (InsufficientInstanceCapacity) in zone a blocks that
#   offer, and the job runs in zone b within seconds; pools, explain and
#   /metrics show what is blocked and why;
# - the account's max_instances holds jobs back, and explain names it;
# - an acquisition intent asked again after a kill -9, with its token, buys
#   nothing (the provider answers what the token bought);
# - a second daemon: an account-wide refusal (AuthFailure) blocks the
#   account (no further launch there), /healthz names it, and jobs run on
#   the other account;
# - `spillway instances` lists what each account holds; an instance whose
#   record is lost is released at start; --release-all-on-stop leaves
#   nothing billing;
# - a third daemon: a family refusal (VcpuLimitExceeded) blocks the
#   family in its region (the job runs on another family), and a refusal
#   of the job's shape (InvalidParameterValue) fails the job with the
#   cloud's reason.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 27

cat >"$T/offers.csv" <<EOF
provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h
aws,us-east-1,us-east-1a,p3.2xlarge,A100,1,0.50,
lab,r1,r1-a,g1.small,A100,1,1.00,
lab,r1,r1-b,g1.small,A100,1,1.10,
other,r2,r2-a,g2.small,A100,1,3.00,
EOF

# accounts_config FILE ACCOUNTS: one busy on-prem slot (the blocker job
# holds it), the catalog above, no wait before bursting, and ACCOUNTS (the
# YAML list of cloud.accounts).
accounts_config() {
    cat >"$1" <<EOF
onprem:
  - name: local
    nodes: 1
    gpus_per_node: 1
    gpu: A100
    cost_usd_per_gpu_h: 0.1
cloud:
  offers: $T/offers.csv
  boot_delay_s: 0.5
  accounts:
$2
policy:
  wait: none
$(daemon_yaml)
  gpus: slots
  idle_timeout_s: 60
  job_env: [SPW_DTEST]
EOF
}

accounts_config "$T/a.yaml" "    - {name: lab, type: emulated, max_instances: 2,
       refuse: {r1-a: InsufficientInstanceCapacity}}"
start_daemon "$T/a.yaml" "$T/state"
ok $? "serve starts with cloud.accounts (one emulated account, lab)"

blocker=$(submit ml --gpus 1 --name blocker -- sleep 60)
wait_for "$blocker" running 5
ok $? "a blocker holds the on-prem slot"

j1=$(submit ml --gpus 1 --name b1 --est-runtime 30s -- sleep 30)
t0=$(now_ms)
wait_for "$j1" running 10
ok $? "a cloud job runs despite a capacity refusal"
ran_s=$(( ($(now_ms) - t0) / 1000 ))
show_json "$j1" "$T/j1.json"
json_check "$T/j1.json" '
assert d["where"] == "cloud", d["where"]
assert "r1/r1-b" in d["placement"] or "r1-b" in d["placement"], d["placement"]'
ok $? "it runs in zone b (r1-b), within $ran_s s"

spw ml pools -o json >"$T/pools.json"
json_check "$T/pools.json" '
blk = d["blocked"]
assert any("r1-a" in b["offer"] and "InsufficientInstanceCapacity" in b["why"] for b in blk), blk
offs = {o["name"]: o for o in d["offers"]}
aws = [o for n, o in offs.items() if o["provider"] == "aws"][0]
assert aws["account"] is None and "no cloud account serves aws offers" in aws["blocked"], aws
assert all(i["account"] == "lab" and i["id"].startswith("lab-i-") for i in d["instances"]), d["instances"]
acc = d["accounts"]
assert [a["name"] for a in acc] == ["lab"] and acc[0]["max_instances"] == 2, acc'
ok $? "pools -o json: r1-a blocked (InsufficientInstanceCapacity), aws served by no account, instances of account lab"
python3 - "$T/state/accounts/lab/emulated.json" <<'EOF2'
import json, sys
s = json.load(open(sys.argv[1]))
r = [i for i in s["instances"] if i["zone"] == "r1-a"]
assert len(r) == 1 and r[0]["ended_s"] == r[0]["launched_s"], r
EOF2
ok $? "the refused instance in zone a never billed (ended when asked for)"

http GET /metrics admin
grep -q 'spillway_offer_blocked{offer="[^"]*r1-a[^"]*",market="ondemand",why="[^"]*InsufficientInstanceCapacity' "$T/http.body"
ok $? "/metrics: spillway_offer_blocked names the offer, market and why"

j2=$(submit ml --gpus 1 --name b2 --est-runtime 30s -- sleep 30)
wait_for "$j2" running 10
ok $? "a second cloud job runs (2 live instances: lab's max_instances)"

j3=$(submit ml --gpus 1 --name b3 --est-runtime 30s -- sleep 30)
sleep 1
[ "$(state_of "$j3")" = queued ]
ok $? "a third waits: the account is at max_instances"
spw ml explain "$j3" -o json >"$T/explain3.json"
json_check "$T/explain3.json" '
c = {x["name"]: x for x in d["candidates"] if x["kind"] == "cloud"}
whys = " | ".join(x["why"] for x in c.values())
assert any("no cloud account serves aws offers" in x["why"] for x in c.values()), whys
assert any("max_instances (2 live of 2)" in x["why"] for x in c.values()), whys'
ok $? "explain: aws offers are served by no account; lab is at max_instances"

# kill -9, then the records as a daemon that died between the provider's
# answer and its record leaves them: j1 placed, its acquisition intent
# (with the token its instance was bought under) recorded, its instance
# not.  Asked again with that token, the provider buys nothing.
inst1=$(field "$j1" 'd["instances"][0]')
kill9_daemon "$DPID"
tok=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print([i["token"] for i in s["instances"] if i["job_id"] == sys.argv[2]][-1])' \
    "$T/state/accounts/lab/emulated.json" "$j1")
python3 - "$T/state/spillway.db" "$tok" "$j1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
off = db.execute("SELECT offer FROM instances WHERE job_id = ?", (sys.argv[3],)).fetchone()[0]
db.execute("INSERT INTO acquisitions VALUES (?, ?, 'lab', ?, 1, 0, 0)",
           (sys.argv[2], sys.argv[3], off))
db.execute("DELETE FROM instances WHERE job_id = ?", (sys.argv[3],))
db.execute("UPDATE jobs SET state = 'placed', pid = NULL WHERE id = ?", (sys.argv[3],))
db.commit()
EOF
[ -n "$tok" ]
ok $? "kill -9; an unanswered acquisition intent recorded with token $tok"
n_before=$(python3 -c '
import json, sys
print(len(json.load(open(sys.argv[1]))["instances"]))' "$T/state/accounts/lab/emulated.json")
start_daemon "$T/a.yaml" "$T/state"
ok $? "serve starts again"
grep -q "acquisition $tok asked again after a restart: 1 instance(s), 1 new" "$DLOG" ||
    diag "$(cat "$DLOG")"
[ "$(field "$j1" 'd["instances"][0]')" = "$inst1" ]
ok $? "recovery asks again with the same token: the same instance ($inst1) is $j1's again"
n_after=$(python3 -c '
import json, sys
print(len(json.load(open(sys.argv[1]))["instances"]))' "$T/state/accounts/lab/emulated.json")
[ "$n_before" = "$n_after" ] && [ "$(state_of "$j1")" = running ]
ok $? "the account holds as many instances as before ($n_before, $n_after): nothing bought; $j1 runs"
stop_daemon "$DPID"

# A second daemon: account lab refuses everything (AuthFailure); the jobs
# go to account other.
accounts_config "$T/b.yaml" "    - {name: lab, type: emulated, refuse: {'*': AuthFailure}}
    - {name: other, type: emulated}"
start_daemon "$T/b.yaml" "$T/state2"
ok $? "a second daemon: lab refuses every launch, other does not"
blocker=$(submit ml --gpus 1 --name blocker -- sleep 60)
wait_for "$blocker" running 5
k1=$(submit ml --gpus 1 --name c1 -- sleep 30)
k2=$(submit ml --gpus 1 --name c2 -- sleep 30)
wait_for "$k1" running 10 && wait_for "$k2" running 10 &&
    [ "$(field "$k1" 'd["instances"][0].split("-")[0]')" = other ] &&
    [ "$(field "$k2" 'd["instances"][0].split("-")[0]')" = other ]
ok $? "both jobs run on account other"
spw ml pools -o json >"$T/pools2.json"
json_check "$T/pools2.json" '
acc = {a["name"]: a for a in d["accounts"]}
assert "AuthFailure" in acc["lab"]["blocked"], acc'
ok $? "account lab is blocked: AuthFailure"
python3 - "$T/state2/accounts/lab/emulated.json" <<'EOF2'
import json, sys
s = json.load(open(sys.argv[1]))["instances"]
assert len(s) == 1 and s[0]["ended_s"] == s[0]["launched_s"], s
EOF2
ok $? "account lab was asked once, and that instance never billed: no launch after the refusal"
http GET /healthz none
http_is 200 "cloud account lab cannot launch: AuthFailure" "/healthz names the account and why (degraded, 200)"

spw admin instances -o json >"$T/inst.json"
json_check "$T/inst.json" "
live = [i for i in d['instances'] if i['account'] == 'other']
assert sorted(i['job_id'] for i in live) == sorted('$k1 $k2'.split()), live
assert not any(i['orphan'] for i in d['instances']), d['instances']
assert all(i['cost_usd'] > 0 and i['state'] in ('booting', 'ready') for i in live), live
assert [a['name'] for a in d['accounts']] == ['lab', 'other'], d['accounts']"
ok $? "instances -o json (admin): what each account holds, with job, state and cost; no orphan"
! spw ml instances >"$T/inst.err" 2>&1 && contains "$T/inst.err" "admin token"
ok $? "instances needs an admin token"

# The orphan sweep at start: an instance whose record is lost (the row
# removed after a kill -9) is released when the daemon starts again; and
# --release-all-on-stop leaves nothing billing.
kill9_daemon "$DPID"
python3 - "$T/state2/spillway.db" "$k2" <<'EOF2'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("DELETE FROM instances WHERE job_id = ?", (sys.argv[2],))
db.commit()
EOF2
SERVE_EXTRA=--release-all-on-stop start_daemon "$T/b.yaml" "$T/state2"
grep -q "released instance other-i-[0-9]*, acquired before a crash but never recorded" "$DLOG"
ok $? "the orphan (its record lost) is released at start" || diag "$(cat "$DLOG")"
stop_daemon "$DPID"
live_left=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["instances"]
print(len([i for i in s if i["state"] in ("booting", "ready")]))' "$T/state2/accounts/other/emulated.json")
[ "$live_left" = 0 ] && grep -q "released [0-9]* cloud instance(s) on stop" "$DLOG"
ok $? "serve --release-all-on-stop: no instance left billing ($live_left live)"

# A third daemon: refusals that block a family, and one that fails a job.
cat >"$T/offers3.csv" <<EOF
provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h
fam,rf,f-a,p3.small,A100,1,1.00,
fam,rf,f-b,p3.large,A100,1,1.20,
fam,rg,g-a,g5.small,A100,1,1.50,
shape,rs,s-a,x1.small,H100,1,1.00,
EOF
accounts_config "$T/c.yaml" "    - {name: fam, type: emulated, refuse: {f-a: VcpuLimitExceeded}}
    - {name: shape, type: emulated, refuse: {'*': InvalidParameterValue}}"
sed -i "s|offers: $T/offers.csv|offers: $T/offers3.csv|" "$T/c.yaml"
start_daemon "$T/c.yaml" "$T/state3"
ok $? "a third daemon: account fam refuses p3 in zone f-a (VcpuLimitExceeded), shape refuses every shape"
blocker=$(submit ml --gpus 1 --name blocker -- sleep 60)
wait_for "$blocker" running 5
f1=$(submit ml --gpus 1 --model A100 --name f1 -- sleep 30)
wait_for "$f1" running 10 && field "$f1" 'd["placement"]' | grep -q "g-a"
ok $? "the A100 job runs on the other family (g5 in rg): $(field "$f1" 'd["placement"]')"
spw ml pools -o json >"$T/pools3.json"
json_check "$T/pools3.json" '
blk = {b["offer"]: b["why"] for b in d["blocked"] if b["market"] == "ondemand"}
fb = [w for o, w in blk.items() if "f-b" in o]
assert fb and "family p3 in rf" in fb[0] and "VcpuLimitExceeded" in fb[0], blk
assert not any("g-a" in o for o in blk), blk'
ok $? "the whole family p3 in rf is blocked (zone f-b too, never asked), g5 is not"
s1=$(submit ml --gpus 1 --model H100 --name s1 -- sleep 30)
wait_for "$s1" failed 10 && field "$s1" 'd["reason"]' | grep -q "InvalidParameterValue"
ok $? "the H100 job fails with the cloud's reason: $(field "$s1" 'd["reason"]')"
stop_daemon "$DPID"
