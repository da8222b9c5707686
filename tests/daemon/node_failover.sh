#!/bin/sh
# node_failover.sh: `spillway admin node POOL/INDEX down` takes an on-prem
# node out of service as a failure would.  Its jobs are stopped and placed
# again, resuming from their checkpoints: under failover: requeue the job
# waits for the node (which stays down across a daemon restart) and runs
# on it again once it is up; under failover: burst a job whose deadline
# cannot wait goes to the cloud while one without a deadline waits its
# wait (an hour) on-prem.  Past spot.max_restarts the job fails.  A job
# submitted while a node is down, that fits the pool with all its nodes,
# waits for it ("waits: nodes local/1 are down"): it neither fails nor
# bursts as if it could never fit on-prem.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 35

# failconfig FILE SLOTS WAIT FAILOVER
failconfig() {
    mkconfig "$1" "$2" "$3"
    python3 - "$1" "$4" <<'EOF'
import sys
path, failover = sys.argv[1], sys.argv[2]
text = open(path).read()
text = text.replace("daemon:\n", "spot:\n  failover: %s\n  checkpoint_interval_s: continuous\ndaemon:\n"
                    % failover)
open(path, "w").write(text)
EOF
}

# jobspec FILE NAME [EXTRA_LINE]: 12 steps of 0.4 s, each saved to the
# checkpoint directory; a new attempt starts from the last step saved.
jobspec() {
    cat >"$1" <<EOF
name: $2
gpus: 1
est_runtime: 5s
${3:-}
EOF
    cat >>"$1" <<'EOF'
run: |
  d=$SPILLWAY_CHECKPOINT_DIR
  s=0
  [ -f "$d/step" ] && s=$(cat "$d/step")
  echo "attempt $SPILLWAY_ATTEMPT restarts $SPILLWAY_RESTARTS from step $s at $SPILLWAY_PLACEMENT"
  while [ "$s" -lt 12 ]; do
    sleep 0.4
    s=$((s + 1))
    echo "$s" >"$d/step.tmp" && mv "$d/step.tmp" "$d/step"
    echo "step $s"
  done
  echo done
EOF
}

# resumed LOG PLACE1 PLACE2: the log shows attempt 1 at PLACE1 from step 0,
# then attempt 2 (restart 1) at PLACE2 from a step > 0, then the steps
# after it, then done; prints that step.
resumed() {
    python3 - "$1" "$2" "$3" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
starts = [re.match(r"attempt (\d+) restarts (\d+) from step (\d+) at (\S+)$", l)
          for l in lines if l.startswith("attempt ")]
assert len(starts) == 2 and all(starts), lines
a, b = starts
assert a.groups() == ("1", "0", "0", sys.argv[2]), a.groups()
assert b.group(1, 2, 4) == ("2", "1", sys.argv[3]) and int(b.group(3)) > 0, b.groups()
after = lines[lines.index(b.group(0)) + 1:]
steps = [int(l.split()[1]) for l in after if l.startswith("step ")]
assert steps == list(range(int(b.group(3)) + 1, 13)), steps
assert [l for l in lines if l][-1] == "done", lines[-3:]
print(b.group(3))
EOF
}

stepped() { spw ml logs "$1" 2>/dev/null | grep -q '^step 2$'; }

# ---- failover: requeue ------------------------------------------------------

failconfig "$T/a.yaml" 1 never requeue
start_daemon "$T/a.yaml" "$T/state-a"
ok $? "spillway serve starts (1 node x 1 slot, wait never, failover requeue)"
jobspec "$T/job.yaml" resumable
job=$(submit ml "$T/job.yaml")
wait_until 6 stepped "$job" && [ "$(field "$job" 'd["placement"]')" = local/0 ]
ok $? "the job runs on local/0 and checkpoints steps ($job)"

spw ml admin node local/0 down >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "403"
ok $? "admin node with a team token exits 1 (403)"
spw admin admin node local/9 down >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "no node '9'"
ok $? "an unknown node is refused"
spw admin admin node local/0 down >"$T/out" 2>"$T/err"
ok $? "spillway admin node local/0 down" || diag "$(cat "$T/err")"
contains "$T/out" "node local/0 is down; jobs stopped and placed again: $job"
ok $? "it names the job it stopped"
queued() { [ "$(state_of "$1")" = queued ]; }
wait_until 3 queued "$job"
ok $? "the job is stopped and back in the queue"
show_json "$job" "$T/a1.json"
json_check "$T/a1.json" '
assert d["failures"] == 1 and d["restarts"] == 1 and d["preemptions"] == 0, d
assert "node local/0 went down" in d["reason"], d["reason"]
assert d["done_s"] > 0 and d["where"] is None, d'
ok $? "failures 1, restarts 1, its reason names the node, its work is kept"
spw admin admin node local/0 down >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "already down"
ok $? "taking it down again is refused (409)"
curl -s "$URL/metrics" >"$T/metrics"
grep -qx 'spillway_node_failures_total 1' "$T/metrics" && grep -qx 'spillway_nodes_down{pool="local"} 1' "$T/metrics"
ok $? "metrics: spillway_node_failures_total 1, spillway_nodes_down 1" || diag "$(grep node "$T/metrics")"

stop_daemon "$DPID"
start_daemon "$T/a.yaml" "$T/state-a"
ok $? "the daemon restarts on the same state dir"
grep -q "node local/0 stays down" "$DLOG" && spw admin pools -o json >"$T/pools.json" &&
    json_check "$T/pools.json" 'assert d["pools"][0]["nodes_down"] == [0], d["pools"]'
ok $? "the node stays down across the restart"
sleep 1
queued "$job"
ok $? "the job stays queued while the node is down"
spw admin admin node local/0 up >"$T/out" 2>"$T/err" && contains "$T/out" "node local/0 is up"
ok $? "spillway admin node local/0 up"
wait_for "$job" succeeded 12
ok $? "the job runs again on the node and succeeds"
spw ml logs "$job" >"$T/a.log"
from=$(resumed "$T/a.log" local/0 local/0 2>"$T/err")
ok $? "its second attempt resumed from step $from of its checkpoint" || diag "$(cat "$T/err")" "$(cat "$T/a.log")"
show_json "$job" "$T/a2.json"
json_check "$T/a2.json" 'assert d["attempts"] == 2 and d["failures"] == 1 and d["restarts"] == 1, d'
ok $? "attempts 2, failures 1, restarts 1"
stop_daemon "$DPID"

# ---- failover: burst, with a deadline ---------------------------------------

failconfig "$T/b.yaml" 2 constant:3600 burst
start_daemon "$T/b.yaml" "$T/state-b"
ok $? "spillway serve starts (1 node x 2 slots, wait an hour, failover burst)"
jobspec "$T/patient.yaml" patient
jobspec "$T/urgent.yaml" urgent "deadline: $(($(date +%s) + 9))"
pat=$(submit ml "$T/patient.yaml")
urg=$(submit ml "$T/urgent.yaml")
wait_until 6 stepped "$pat" && wait_until 3 stepped "$urg" &&
    [ "$(field "$pat" 'd["placement"]')" = local/0 ] && [ "$(field "$urg" 'd["placement"]')" = local/0 ]
ok $? "both jobs run on local/0 ($pat without a deadline, $urg with one 9 s away)"
show_json "$urg" "$T/u0.json"
json_check "$T/u0.json" 'assert d["deadline_ts"] is not None and d["deadline_at_risk"] is False, d'
ok $? "the urgent job's deadline is not at risk while it runs"
spw admin admin node local/0 down >"$T/out" 2>"$T/err"
ok $? "node local/0 goes down under both" || diag "$(cat "$T/err")"
on_cloud() { [ "$(field "$urg" 'd["where"]')" = cloud ] && [ "$(state_of "$urg")" = running ]; }
wait_until 8 on_cloud
ok $? "the urgent job fails over to the cloud: its deadline cannot wait" || spw ml show "$urg" | while read -r l; do diag "$l"; done
wait_for "$urg" succeeded 10
ok $? "and succeeds there"
spw ml logs "$urg" >"$T/u.log"
from=$(resumed "$T/u.log" local/0 flat/gpu 2>"$T/err")
ok $? "it resumed in the cloud from step $from of the checkpoint it wrote on-prem" ||
    diag "$(cat "$T/err")" "$(cat "$T/u.log")"
queued "$pat"
ok $? "the job without a deadline still waits on-prem (its wait is an hour)"
spw admin admin node local/0 up >/dev/null 2>&1 && wait_for "$pat" succeeded 12
ok $? "once the node is up it runs there again and succeeds"
spw ml logs "$pat" >"$T/p.log"
from=$(resumed "$T/p.log" local/0 local/0 2>"$T/err")
ok $? "it resumed from step $from" || diag "$(cat "$T/err")" "$(cat "$T/p.log")"
stop_daemon "$DPID"

# ---- submitted while a node is down -----------------------------------------

# drained NAME WAIT NODE DESCRIPTION: a daemon with 2 nodes x 1 slot and
# wait WAIT, node local/NODE taken down, then a 2-GPU job (it needs both)
# submitted: sets $big, and its view a second later is in $T/NAME.json.
drained() {
    mkconfig "$T/$1.yaml" 1 "$2"
    sed -i 's/^    nodes: 1$/    nodes: 2/' "$T/$1.yaml"
    start_daemon "$T/$1.yaml" "$T/state-$1"
    spw admin admin node "local/$3" down >/dev/null 2>"$T/err"
    ok $? "$4: node local/$3 is down" || diag "$(cat "$T/err")"
    big=$(submit ml --gpus 2 --name both-nodes -- true)
    sleep 1.5
    show_json "$big" "$T/$1.json"
}
drained d never 1 "2 nodes x 1 slot, wait never"
json_check "$T/d.json" '
assert d["state"] == "queued", (d["state"], d["reason"])
assert d["reason"].endswith("waits: nodes local/1 are down"), d["reason"]'
ok $? "a 2-GPU job submitted meanwhile waits for the node, and says so" || diag "$(cat "$T/d.json")"
spw admin admin node local/1 up >/dev/null 2>&1 && wait_for "$big" succeeded 8
ok $? "once the node is up it runs on both nodes and succeeds" || diag "$(state_of "$big")"
stop_daemon "$DPID"

drained e constant:3600 0 "2 nodes x 1 slot, wait an hour, a cloud"
json_check "$T/e.json" '
assert d["state"] == "queued" and d["where"] is None, (d["state"], d["where"], d["reason"])'
ok $? "a 2-GPU job submitted meanwhile does not burst as if it could never fit on-prem" ||
    diag "$(cat "$T/e.json")"
spw admin admin node local/0 up >/dev/null 2>&1 && wait_for "$big" succeeded 8 &&
    [ "$(field "$big" 'd["where"]')" = onprem ]
ok $? "once the node is up it runs on-prem and succeeds" || diag "$(cat "$DLOG")"
stop_daemon "$DPID"

# ---- max_restarts: 0 ---------------------------------------------------------

failconfig "$T/c.yaml" 1 never requeue
sed -i 's/^spot:$/spot:\n  max_restarts: 0/' "$T/c.yaml"
start_daemon "$T/c.yaml" "$T/state-c"
job=$(submit ml "$T/job.yaml")
wait_until 6 stepped "$job" && spw admin admin node local/0 down >/dev/null 2>&1 &&
    wait_for "$job" failed 5 && show_json "$job" "$T/c.json" &&
    json_check "$T/c.json" '
assert d["failures"] == 1 and d["restarts"] == 0, d
assert d["reason"].endswith("failed: interrupted 1 time (0 preemptions, 1 node failures); max_restarts 0"), d["reason"]'
ok $? "under max_restarts 0 a job whose node fails ends failed, and says why"
stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
