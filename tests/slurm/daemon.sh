#!/bin/sh
# daemon.sh: `spillway serve` with a pool backed by a real Slurm 22.05
# cluster (scripts/slurm-cluster.sh: nodes n1..n3, 4 fake GPUs each, started
# once for this file): the pool's nodes are read from Slurm; a job runs as a
# Slurm batch job carrying its launch token, its exit code and logs come
# back; a gang of 2 nodes gets the rank environment; cancel is scancel; a
# node drained in Slurm mid-job takes it down and the job fails over; after
# kill -9 of the daemon the running job is re-adopted, never submitted
# twice; a slurmctld restart while jobs run loses nothing.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
# shellcheck source=tests/slurm/slurm-lib
. "$(dirname "$0")/slurm-lib"
slurm_up 50 "a Slurm cluster of 3 nodes x 4 GPUs is up" --nodes 3 --gpus 4 --cloud 0

cat >"$T/serve.yaml" <<EOF2
onprem:
  - name: gpu
    backend: slurm
    partition: onprem
    cluster: spw
    slurm_conf: $C/slurm.conf
    cost_usd_per_gpu_h: 1.10
policy:
  queue: fifo
  backfill: easy
  wait: never
spot:
  failover: requeue
daemon:
  tick_s: 0.05
  kill_grace_s: 1
  tokens:
    - {token: $ML_TOKEN, team: ml}
    - {token: $ADMIN_TOKEN, admin: true}
EOF2
# The daemon runs as root with secrets in its environment, as an operator's
# would: a job must see none of them (issue 20).
export AWS_SECRET_ACCESS_KEY="spw-test-secret-$$" SPILLWAY_TOKEN="$ADMIN_TOKEN"
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts with a slurm pool" || exit 1
unset AWS_SECRET_ACCESS_KEY SPILLWAY_TOKEN
spw ml pools -o json >"$T/pools.json" 2>&1
json_check "$T/pools.json" '
p = [x for x in d["pools"] if x["name"] == "gpu"][0]
assert p["backend"] == "slurm" and p["nodes"] == 3 and p["gpus"] == 12, p'
ok $? "the pool's nodes and GPUs come from Slurm: backend slurm, 3 nodes, 12 GPUs" || diag "$(cat "$T/pools.json")"
# Jobs of this daemon in Slurm: "ID STATE COMMENT NODES" lines.
# Launch tokens: DAEMONID (12 hex characters).JOBID.ATTEMPT.
sq() { squeue -h -t all -o '%i %T %k %N' | grep -E ' [0-9a-f]{12}\.j-[0-9]+\.[0-9]+ '; }
sq_count() { sq | grep -c "\.$1\.";  }

# ---- submit -> run -> exit code -> logs ---------------------------------
a=$(submit ml --gpus 2 --name hello --env WHO=slurm -- sh -c 'echo hello $WHO on $SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES; echo warn >&2; exit 3')
wait_for "$a" failed 30
ok $? "a job exiting 3 ends failed"
[ "$(field "$a" 'd["exit_code"]')" = 3 ]
ok $? "with exit_code 3"
line=$(sq | grep "\.$a\.1 ")
[ -n "$line" ] && echo "$line" | grep -q " FAILED "
ok $? "it ran as one Slurm job whose comment is its launch token: $line"
spw ml logs "$a" >"$T/logs.out" 2>&1
grep -q "^hello slurm on n[1-3] gpus=0,1$" "$T/logs.out"
ok $? "spillway logs shows its stdout (Slurm wrote it): $(head -1 "$T/logs.out")"
pool_nodes() { spw ml show "$a" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("where",""))'; }

# ---- a hostile job under a root daemon ----------------------------------
# It used to run as root with sbatch --export=ALL: the daemon's whole
# environment, and the admin token in the 0600 config (issue 20).
id spillway-job >/dev/null 2>&1 || diag "no spillway-job user: the next checks fail (scripts/deps.sh creates it)"
h=$(submit ml --gpus 1 --name hostile -- sh -c 'id -un; echo "token=${SPILLWAY_TOKEN:-none} aws=${AWS_SECRET_ACCESS_KEY:-none} dtest=${SPW_DTEST:-none}"; cat "$0" >/dev/null 2>&1 && echo read-config || echo config-denied; echo "$SPILLWAY_PLACEMENT $SLURMD_NODENAME"' "$T/serve.yaml")
wait_for "$h" succeeded 30
ok $? "a job reading the daemon's secrets runs" || diag "$(spw ml logs "$h" 2>&1)"
[ "$(spw ml logs "$h" 2>/dev/null | head -3 | tr '\n' ' ')" = "spillway-job token=none aws=none dtest=none config-denied " ]
ok $? "Slurm ran it as spillway-job, without the daemon's environment, unable to read the config: $(spw ml logs "$h" 2>&1 | tr '\n' ' ')"
grep -q "jobs run as user spillway-job" "$DLOG"
ok $? "and the daemon's log says so: $(grep 'jobs run as' "$DLOG")"
# A job's env may not steer its placement (SPILLWAY_SLURM_NODES overrode
# spillway's --nodelist).
if spw ml submit --gpus 1 --env SPILLWAY_SLURM_NODES=n2 -- true >"$T/sub.out" 2>"$T/sub.err"; then
    false
else
    grep -q "SPILLWAY_SLURM_NODES is reserved" "$T/sub.err"
fi
ok $? "a job whose env sets SPILLWAY_SLURM_NODES is refused at submit, naming it: $(head -c 160 "$T/sub.err")"
# Its placement (gpu/K: node K of the pool's n1..n3) and where Slurm ran it.
hp=$(spw ml logs "$h" 2>/dev/null | sed -n 4p)
hnode=${hp#* } hp=${hp%% *}
hn=$(sq | grep "\.$h\.1 " | awk '{print $4}')
hk=${hp##*/}
case $hk in '' | *[!0-9]*) hk=-9 ;; esac
[ -n "$hn" ] && [ "$hn" = "$hnode" ] && [ "n$((hk + 1))" = "$hn" ]
ok $? "Slurm ran the job on the node spillway placed it on (placement $hp, ran on $hnode, squeue: $hn)"

# ---- gang of 2 nodes ----------------------------------------------------
g=$(submit ml --gpus 8 --name gang -- sh -c 'echo rank=$RANK node_rank=$NODE_RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT')
wait_for "$g" succeeded 40
ok $? "an 8-GPU job (2 nodes of 4) succeeds"
spw ml logs "$g" >"$T/gang.out" 2>&1
grep -q "^rank=0 node_rank=0 world=2 master=n[1-3]:295" "$T/gang.out" &&
    grep -q "^rank=1 node_rank=1 world=2 master=n[1-3]:295" "$T/gang.out"
ok $? "both ranks ran with RANK, NODE_RANK, WORLD_SIZE, MASTER_ADDR:PORT" || diag "$(cat "$T/gang.out")"
[ "$(sq | grep "\.$g\.1 " | awk '{print $4}')" != "" ] && sq | grep "\.$g\.1 " | grep -q 'n\[[1-3]-[1-3]\]\|n[1-3],n[1-3]'
ok $? "Slurm ran it on two nodes: $(sq | grep "\.$g\.1 ")"

# ---- cancel --------------------------------------------------------------
c=$(submit ml --gpus 1 --name sleeper -- sleep 300)
wait_for "$c" running 30
running_in_slurm() { sq | grep "\.$1\.1 " | grep -q RUNNING; }
wait_until 20 running_in_slurm "$c"
ok $? "a sleep runs in Slurm: $(sq | grep "\.$c\.1 ")"
spw ml cancel "$c" >/dev/null 2>&1
wait_for "$c" cancelled 30
ok $? "spillway cancel: the job is cancelled"
sq | grep "\.$c\.1 " | grep -q CANCELLED
ok $? "and its Slurm job too: $(sq | grep "\.$c\.1 ")"

# ---- node drained in Slurm mid-job -> failover -----------------------------
f=$(submit ml --gpus 4 --name failover --retries 0 -- sh -c 'echo start $SPILLWAY_ATTEMPT on $SLURMD_NODENAME; sleep 300')
wait_for "$f" running 30 && wait_until 20 running_in_slurm "$f"
node=$(sq | grep "\.$f\.1 " | awk '{print $4}')
[ -n "$node" ]
ok $? "a 4-GPU job runs on Slurm node '$node'"
scontrol update nodename="$node" state=drain reason=spw-test-drain
on_attempt2() { sq | grep "\.$f\.2 " | grep -q RUNNING; }
wait_until 30 on_attempt2
ok $? "after scontrol drain of $node, the daemon fails it over: attempt 2 runs in Slurm ($(sq | grep "\.$f\." | tr '\n' ';'))"
node2=$(sq | grep "\.$f\.2 " | awk '{print $4}')
[ -n "$node2" ] && [ "$node2" != "$node" ]
ok $? "on another node ($node2)"
sq | grep "\.$f\.1 " | grep -q CANCELLED
ok $? "and the Slurm job of attempt 1 was cancelled"
grep -q "Slurm node $node .* drain\|Slurm node $node" "$DLOG"
ok $? "the daemon says why: $(grep "Slurm node $node" "$DLOG" | head -1)"
scontrol update nodename="$node" state=resume
node_back() { grep -q "Slurm node $node .*back" "$DLOG"; }
wait_until 15 node_back
ok $? "resumed in Slurm, the node comes back in the pool"

# ---- kill -9 of the daemon: re-adopted, not submitted twice ---------------
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon restarts after kill -9"
wait_for "$f" running 10
ok $? "the running job is running again after the restart"
grep -q "re-adopted slurm job" "$DLOG"
ok $? "re-adopted by its token: $(grep 're-adopted' "$DLOG" | head -1)"
sleep_check() { [ "$(sq | grep "\.$f\." | grep -c 'RUNNING\|PENDING')" = 1 ]; }
sleep 2
sleep_check
ok $? "exactly one live Slurm job for it: $(sq | grep "\.$f\." | tr '\n' ';')"

# ---- kill -9 mid-submit: sbatch landed, the daemon never learnt the id ----
# An sbatch wrapper first in the daemon's PATH submits, then (while
# $T/slow exists) hangs before printing the job id.
mkdir -p "$T/bin"
cat >"$T/bin/sbatch" <<EOF2
#!/bin/sh
out=\$($(command -v sbatch) "\$@")
rc=\$?
if [ -f "$T/slow" ]; then echo "\$out" >"$T/submitted"; sleep 60; fi
echo "\$out"
exit \$rc
EOF2
chmod +x "$T/bin/sbatch"
stop_daemon
OLDPATH=$PATH
PATH=$T/bin:$PATH
export PATH
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon runs with the slow sbatch wrapper"
touch "$T/slow"
# In the background: the daemon's loop (and so its answer) waits on sbatch.
spw ml submit --gpus 1 --name midsubmit -- sleep 300 >"$T/mid.out" 2>&1 &
XPIDS="$XPIDS $!"
landed() { [ -s "$T/submitted" ]; }
wait_until 20 landed
ok $? "an sbatch landed in Slurm (job $(cat "$T/submitted" 2>/dev/null)) and hangs before answering"
m=$(squeue -h -t all -o '%k' -j "$(cut -d';' -f1 "$T/submitted")" | cut -d. -f2)
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
rm -f "$T/slow"
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon is killed -9 mid-submit and restarted"
wait_for "$m" running 15
ok $? "the job ($m) is running after the restart"
one_job() { [ "$(sq | grep -c "\.$m\.")" = 1 ]; }
sleep 2
one_job
ok $? "exactly one Slurm job for it, adopted by its token: $(sq | grep "\.$m\." | tr '\n' ';')"
[ "$(sq | grep -c "\.$m\.")" = 1 ] || grep "$m" "$DLOG" | sed 's/^/# /'
spw ml cancel "$m" >/dev/null 2>&1
wait_for "$m" cancelled 30
ok $? "and it is cancelled through the adopted handle"

# ---- kill -9 with an sbatch that has not reached Slurm yet -----------------
# sbatch runs on the backend's op threads: the daemon has committed the
# launch (placed) before Slurm has the job.  Killed then, the restarted
# daemon finds no Slurm job with the token: it fences the token and
# requeues the job (never started); the old sbatch, landing late, is
# cancelled.  The wrapper holds the first sbatch after $T/hold appears
# until it is removed.
real_sbatch=$(PATH=$OLDPATH command -v sbatch)
cat >"$T/bin/sbatch" <<EOF2
#!/bin/sh
if [ -f "$T/hold" ] && mkdir "$T/held" 2>/dev/null; then
    while [ -f "$T/hold" ]; do sleep 0.1; done
fi
exec $real_sbatch "\$@"
EOF2
touch "$T/hold"
p=$(submit ml --gpus 1 --name held -- sleep 300)
is_placed() { [ "$(state_of "$p")" = placed ]; }
wait_until 10 is_placed && sleep 1 && is_placed && [ -z "$(sq | grep "\.$p\.")" ] && [ -d "$T/held" ]
ok $? "its sbatch held, the job is placed (not running) and Slurm has nothing of it"
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon is killed -9 with that sbatch in flight and restarted"
second() { sq | grep "\.$p\.2 " | grep -q RUNNING; }
wait_until 30 second && [ "$(state_of "$p")" = running ]
ok $? "the job is requeued as never started, its attempt 2 runs: $(sq | grep "\.$p\." | tr '\n' ';')" ||
    { diag "state: $(state_of "$p"); squeue: $(squeue -h -o '%i %T %r %k' | tr '\n' ';')"; grep "$p" "$DLOG" | sed 's/^/# /'; }
rm -f "$T/hold"
late_cancelled() { sq | grep "\.$p\.1 " | grep -q CANCELLED; }
wait_until 30 late_cancelled
ok $? "the first attempt's sbatch, landing late, is cancelled (its token fenced): $(sq | grep "\.$p\." | tr '\n' ';')"
[ "$(sq | grep "\.$p\." | grep -c 'RUNNING\|PENDING')" = 1 ]
ok $? "one live Slurm job for it"
spw ml cancel "$p" >/dev/null 2>&1
wait_for "$p" cancelled 30
ok $? "and it is cancelled"
PATH=$OLDPATH

# ---- slurmctld restart while spillway runs --------------------------------
"$ROOT/scripts/slurm-cluster.sh" stop-ctld "$C"
sleep 1
! scontrol ping 2>/dev/null | grep -q 'is UP'
ok $? "slurmctld is down"
"$ROOT/scripts/slurm-cluster.sh" start-ctld "$C" >/dev/null
ok $? "slurmctld is back"
spw ml cancel "$f" >/dev/null 2>&1
wait_for "$f" cancelled 30
ok $? "the job that ran across the restart is cancelled through the new slurmctld"
h=$(submit ml --gpus 1 --name after -- sh -c 'exit 0')
wait_for "$h" succeeded 30
ok $? "a new job runs after the slurmctld restart"

# ---- spillway plan --slurm: the sweep as a Slurm job array ------------------
# The same sweep run here and as an array on the cluster's nodes prints the
# same thing: the table and JSON byte for byte but for the run's own time and
# thread count, the CSV byte for byte.
"$SPW" gen --jobs 300 --rate 30 --runtime lognormal:1800:1.2 --seed 21 >"$T/pj.csv"
printf '%s\n' "onprem: [{name: dc, nodes: 2, gpus_per_node: 8, cost_usd_per_gpu_h: 1.9}]" \
    "cloud: {price_usd_per_gpu_h: 3.0, boot_delay_s: 60}" "policy: {wait: none}" >"$T/pf.yaml"
pl() {
    "$SPW" plan --trace "$T/pj.csv" --config "$T/pf.yaml" --nodes 0,2,4 \
        --waits none,compute,runtime --target-wait mean:15m --swing 15 --horizon 2y "$@"
}
# The figures of the run itself: its seconds and threads.
untimed() { sed -e 's/"seconds": [0-9.]*, "threads": [0-9]*/"seconds": S, "threads": N/' \
    -e 's/ in [0-9.]* s on [0-9]* threads: .*/ in S s on N threads)/' "$1"; }
pl -q --csv "$T/pl.csv" >"$T/pl.txt" && pl -q -o json >"$T/pl.json"
(cd "$T" && pl --slurm onprem --slurm-tasks 2 --csv "$T/ps.csv" >"$T/ps.txt" 2>"$T/ps.err")
rc=$?
aid=$(sed -n 's/.* in 2 tasks: Slurm array job \([0-9]*\) on partition onprem.*/\1/p' "$T/ps.err")
[ $rc = 0 ] && [ -n "$aid" ] &&
    [ "$(squeue -h -t all -j "$aid" -o %T | grep -c COMPLETED)" = 2 ]
ok $? "plan --slurm onprem --slurm-tasks 2 runs the sweep as Slurm array job ${aid:-?}, its 2 tasks COMPLETED" ||
    diag "$(cat "$T/ps.err")" "$(squeue -h -t all -o '%i %T' | tr '\n' ';')"
cmp "$T/pl.csv" "$T/ps.csv" && untimed "$T/pl.txt" >"$T/pl.t" && untimed "$T/ps.txt" >"$T/ps.t" &&
    cmp "$T/pl.t" "$T/ps.t" && ! cmp -s "$T/pl.t" "$T/pl.txt"
ok $? "its table equals the local run's (but for seconds and threads), its CSV byte for byte" ||
    diag "$(diff "$T/pl.t" "$T/ps.t" | head -20)"
(cd "$T" && pl --slurm onprem --slurm-tasks 4 -q -o json >"$T/ps.json") &&
    untimed "$T/pl.json" >"$T/pl.j" && untimed "$T/ps.json" >"$T/ps.j" && cmp "$T/pl.j" "$T/ps.j" &&
    [ "$(jpy "$T/ps.json" 'd["threads"]')" = 4 ]
ok $? "-o json in 4 tasks (3, 2, 2 and 2 of the 9 configurations) equals the local JSON but for seconds and threads" ||
    diag "$(diff "$T/pl.j" "$T/ps.j" | head -20)"
# --commit: one array per commitment size, merged as a local run prints it.
sed 's/^cloud: .*/cloud: {price_usd_per_gpu_h: 3.0, boot_delay_s: 60, commitments: [{name: ri, gpus: 8, usd_per_gpu_h: 1.8}]}/' \
    "$T/pf.yaml" >"$T/pc.yaml"
plc() {
    "$SPW" plan --trace "$T/pj.csv" --config "$T/pc.yaml" --nodes 0,2 --waits none,compute \
        --target-wait mean:15m --commit 0,8 -q -o json "$@"
}
plc >"$T/pcl.json" && (cd "$T" && plc --slurm onprem --slurm-tasks 2 >"$T/pcs.json") &&
    untimed "$T/pcl.json" >"$T/pcl.j" && untimed "$T/pcs.json" >"$T/pcs.j" &&
    cmp "$T/pcl.j" "$T/pcs.j" && [ "$(jpy "$T/pcs.json" 'len(d["commit"])')" = 2 ]
ok $? "plan --commit 0,8 --slurm: two arrays, one per size; the JSON equals the local run's but for seconds and threads" ||
    diag "$(diff "$T/pcl.j" "$T/pcs.j" | head -20)"
! ls -d "$T"/plan-* >/dev/null 2>&1
ok $? "the runs' directories are removed once merged"
# A task that fails and one cancelled in Slurm: each named with its log.
cat >"$T/badspw" <<EOF
#!/bin/sh
case \$SLURM_ARRAY_TASK_ID in
0) echo "task 0 breaks on purpose" >&2; exit 3 ;;
1) scancel "\${SLURM_ARRAY_JOB_ID}_1"; sleep 30 ;;
esac
exec "$SPW" "\$@"
EOF
chmod +x "$T/badspw"
mkdir -p "$T/shared"
pl --slurm onprem --slurm-tasks 2 --slurm-dir "$T/shared" --slurm-bin "$T/badspw" \
    >"$T/pb.txt" 2>"$T/pb.err"
rc=$?
log0=$(sed -n 's/.*task 0 of Slurm job [0-9]* failed (exit 3: task 0 breaks on purpose); its log: //p' "$T/pb.err")
[ $rc = 1 ] && [ ! -s "$T/pb.txt" ] && [ -n "$log0" ] && grep -q "breaks on purpose" "$log0" &&
    grep -Eq "task 1 of Slurm job [0-9]+ ended without a result \(cancelled, out of time or its node failed(: signal 15)?\); its log: $T/shared/plan-" "$T/pb.err" &&
    grep -q "2 of the 2 tasks of Slurm job [0-9]* failed" "$T/pb.err"
ok $? "a failed task and a cancelled one: exit 1, no output, each named with its log, the files kept" ||
    diag "rc $rc" "$(cat "$T/pb.err")"
