#!/bin/sh
# cloud.sh: bursting to Slurm cloud nodes.  The cluster (one slurmctld, one
# on-prem node n1, cloud nodes c1, c2 in State=CLOUD) has
# `spillway slurm resume` / `suspend` as its ResumeProgram and
# SuspendProgram, SuspendTime 10 s.  spillway serve has two Slurm pools, the
# on-prem partition and the cloud one (dearer).  A job that does not fit
# on-prem is placed on the cloud pool; Slurm powers c1 up through spillway
# (its address set, its slurmd started), the job runs and succeeds, and
# after 10 s idle Slurm powers c1 down through spillway (its slurmd
# stopped).  A cloud node that cannot come up is set DOWN with the reason
# and leaves spillway's pool.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
# shellcheck source=tests/slurm/slurm-lib
. "$(dirname "$0")/slurm-lib"
# Slurm runs these with its own environment: once $T/daemon.env exists (the
# second daemon), resume and suspend go through that daemon.
for w in resume suspend; do
    cat >"$T/$w-wrap" <<EOF2
#!/bin/sh
[ -f "$T/daemon.env" ] && . "$T/daemon.env"
exec "$SPW" slurm $w "\$1"
EOF2
    chmod 755 "$T/$w-wrap"
done
slurm_up 33 "a Slurm cluster with 1 on-prem node and 3 cloud nodes is up" --nodes 1 --gpus 4 \
    --cloud 3 --resume "$T/resume-wrap" --suspend "$T/suspend-wrap" --suspend-time 10

"$SPW" slurm nodes cloud >"$T/nodes.txt" 2>&1
grep -q "^c1 .*POWERED_DOWN .*yes" "$T/nodes.txt" && grep -q "^c2 .*POWERED_DOWN .*yes" "$T/nodes.txt"
ok $? "spillway slurm nodes: the powered-down cloud nodes count as capacity" || diag "$(cat "$T/nodes.txt")"

cat >"$T/serve.yaml" <<EOF2
onprem:
  - {name: onprem, backend: slurm, partition: onprem, cost_usd_per_gpu_h: 1.0}
  - {name: burst, backend: slurm, partition: cloud, cost_usd_per_gpu_h: 3.0}
policy: {queue: fifo, backfill: easy, wait: never}
daemon:
  tick_s: 0.05
  tokens:
    - {token: $ML_TOKEN, team: ml}
EOF2
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts with the on-prem and the cloud partition as pools" || exit 1
# Launch tokens: DAEMONID (12 hex characters).JOBID.ATTEMPT.
sq() { squeue -h -t all -o '%i %T %k %N' | grep -E ' [0-9a-f]{12}\.j-[0-9]+\.[0-9]+ '; }

a=$(submit ml --gpus 4 --name fill -- sleep 120)
wait_for "$a" running 20
ok $? "a 4-GPU job fills the on-prem node"
b=$(submit ml --gpus 4 --name burst -- sh -c 'echo burst on $SLURMD_NODENAME')
wait_for "$b" running 20
[ "$(field "$b" 'd["where"]')" = onprem ] && spw ml show "$b" | grep -q "burst/0"
ok $? "the next one is placed on the cloud pool (burst/0): $(spw ml show "$b" | grep -i placement)"
wait_for "$b" succeeded 120
ok $? "Slurm powers a cloud node up through spillway and the job succeeds"
grep -q "spillway slurm resume: c1 is up at 127.0.0.1" "$C/resume.log"
ok $? "spillway slurm resume set c1's address and started its slurmd: $(cat "$C/resume.log" 2>/dev/null)"
spw ml logs "$b" >"$T/b.out" 2>&1
grep -q "^burst on c1$" "$T/b.out"
ok $? "it ran on c1: $(cat "$T/b.out")"
released() { [ -f "$C/suspend.log" ] && grep -q "spillway slurm suspend: c1 released" "$C/suspend.log"; }
wait_until 45 released
ok $? "after 10 s idle, Slurm powers c1 down through spillway: $(cat "$C/suspend.log" 2>/dev/null)" || diag "$(grep -i "power\|suspend\|c1" "$C/slurmctld.log" | tail -15; sinfo -N -p cloud; squeue -t all; scontrol show node c1)"
# (gone, or a zombie: what runs slurmctld here may not reap it at once)
pid1=$(cat "$C/slurmd-c1.pid" 2>/dev/null)
[ -z "$pid1" ] || ! kill -0 "$pid1" 2>/dev/null || [ "$(ps -o stat= -p "$pid1" | cut -c1)" = Z ]
ok $? "and c1's slurmd is gone" || diag "$(cat "$C/slurmd-c1.pid"; ps -o pid,stat,cmd -p "$(cat "$C/slurmd-c1.pid")")"

# A node that cannot come up: set DOWN with the reason, and out of the pool.
SPILLWAY_SLURMD=/bin/false env -u SPILLWAY_URL "$SPW" slurm resume c2 >"$T/fail.out" 2>&1
st=$?
[ $st != 0 ] && scontrol show node c2 | grep -q "Reason=spillway: /bin/false -N c2 failed"
ok $? "a node whose slurmd cannot start is set DOWN with spillway's reason: $(scontrol show node c2 | grep -o 'Reason=[^[]*')"
gone() { grep -q "Slurm node c2 (burst/1) is down" "$DLOG"; }
wait_until 10 gone
ok $? "and leaves spillway's pool: $(grep 'Slurm node c2' "$DLOG")"
spw ml cancel "$a" >/dev/null 2>&1
wait_for "$a" cancelled 20
stop_daemon "$DPID"

# ---- The cloud partition as the daemon's cloud (cloud.slurm_partition) ----
# The engine bursts as to any cloud (wait policy constant:6, budgets,
# residency); each burst's instance is acquired from the emulated provider
# and is a node of the partition; Slurm's resume/suspend go through the
# daemon.  c2 is still DOWN from above: c1 and c3 are free.
cat >"$T/serve2.yaml" <<EOF2
onprem:
  - {name: onprem, backend: slurm, partition: onprem, cost_usd_per_gpu_h: 1.0}
cloud: {price_usd_per_gpu_h: 3.0, boot_delay_s: 1, slurm_partition: cloud}
policy: {queue: fifo, backfill: easy, wait: "constant:6"}
residency:
  restricted: {onprem: true}
caps: {max_cloud_gpus: 1}
teams:
  - {name: cv, monthly_usd: 0.001, on_exhausted: onprem_only}
daemon:
  tick_s: 0.05
  idle_timeout_s: 600
  share_run_as: true
  tokens:
    - {token: $ML_TOKEN, team: ml}
    - {token: $CV_TOKEN, team: cv}
    - {token: $ADMIN_TOKEN, admin: true}
EOF2
start_daemon "$T/serve2.yaml" "$T/state2"
ok $? "spillway serve starts with cloud.slurm_partition: cloud" || { diag "$(cat "$DLOG")"; exit 1; }
printf 'export SPILLWAY_URL=%s SPILLWAY_TOKEN=%s\n' "$URL" "$ADMIN_TOKEN" >"$T/daemon.env"
chmod 600 "$T/daemon.env"
: >"$C/resume.log"
: >"$C/suspend.log"

a=$(submit ml --gpus 4 --name fill -- sleep 300)
wait_for "$a" running 20
ok $? "a 4-GPU job fills the on-prem node"
t0=$(now_ms)   # before b's submit: b is at most (now - t0) old
b=$(submit ml --gpus 1 --name burst2 -- sh -c 'sleep 3; echo burst on $SLURMD_NODENAME')
b2=$(submit ml --gpus 1 --name capped -- sh -c 'echo again on $SLURMD_NODENAME')
r=$(submit ml --gpus 1 --residency restricted --name resident -- sh -c 'echo resident on $SLURMD_NODENAME')
h=$(submit cv --gpus 1 --name broke -- sh -c 'echo broke on $SLURMD_NODENAME')
# The wait policy is about time: look 3 s after the submit (of its 6), and
# check the daemon's own record of when it placed it (a loaded machine may
# make the look late: past 5 s it proves nothing, the record still does).
past() { [ "$(now_ms)" -ge "$1" ]; }
wait_until 4 past $((t0 + 3000))
look=$(($(now_ms) - t0))
st=$(state_of "$b")
incloud=$(squeue -h -p cloud -t PENDING,CONFIGURING,RUNNING -o %i)
wait_for "$b" running 120
w=$(field "$b" 'round(d["placed_ts"] - d["submit_ts"], 2)')
python3 -c "import sys; sys.exit(0 if float('$w') >= 5.9 else 1)" &&
    { [ "$look" -ge 5000 ] || { [ "$st" = queued ] && [ -z "$incloud" ]; }; }
ok $? "wait policy constant:6: placed $w s after its submit; $look ms after it, it still waited (state $st), nothing in the cloud partition"
[ "$(state_of "$b2")" = queued ] && spw ml explain "$b2" 2>&1 | grep -q "cloud GPUs of its cap of 1"
ok $? "while it runs in the cloud, the org cap max_cloud_gpus: 1 keeps the next one from bursting: $(spw ml explain "$b2" 2>&1 | grep -i cap | head -2)"
# kill -9 of the daemon while c1 is an instance: after the restart the
# daemon still knows which instance c1 is (the suspend below releases it).
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
start_daemon "$T/serve2.yaml" "$T/state2"
ok $? "the daemon restarts after kill -9 while the burst runs on c1"
printf 'export SPILLWAY_URL=%s SPILLWAY_TOKEN=%s\n' "$URL" "$ADMIN_TOKEN" >"$T/daemon.env"
bound() {
    SPILLWAY_TOKEN=$ADMIN_TOKEN "$SPW" pools -o json >"$T/pools.json" 2>/dev/null &&
        [ "$(jpy "$T/pools.json" "[x['slurm_node'] for x in d['instances'] if x['state'] != 'released']")" = '["c1"]' ]
}
wait_until 10 bound
ok $? "and its instance is still node c1: $(jpy "$T/pools.json" "[(x['id'], x['slurm_node']) for x in d['instances']]" 2>&1)"
wait_for "$b" succeeded 120
ok $? "then it bursts to the cloud and succeeds"
[ "$(field "$b" 'd["where"]')" = cloud ]
ok $? "it ran as a cloud job (where: $(field "$b" 'd["where"]'))"
spw ml logs "$b" >"$T/b2.out" 2>&1
grep -q "^burst on c1$" "$T/b2.out"
ok $? "on Slurm cloud node c1: $(cat "$T/b2.out")"
iid=$(sed -n 's/^spillway slurm resume: c1 is up at 127\.0\.0\.1 as instance \([^ ]*\)$/\1/p' "$C/resume.log")
[ -n "$iid" ] && [ "$(field "$b" 'd["instances"][0]')" = "$iid" ]
ok $? "Slurm's resume of c1 went through the daemon: c1 is instance $iid: $(cat "$C/resume.log")"
SPILLWAY_TOKEN=$ADMIN_TOKEN "$SPW" pools -o json >"$T/pools.json" 2>"$T/pools.err"
inst_ok=$(jpy "$T/pools.json" "[x for x in d['instances'] if x['id'] == '$iid' and x['slurm_node'] == 'c1' and abs(x['price_usd_per_h'] - 3.0) < 1e-9 and x['launched_ts'] is not None]" 2>&1)
[ "$inst_ok" != "[]" ] && [ -n "$inst_ok" ] && [ "${inst_ok#\[}" != "$inst_ok" ]
ok $? "spillway pools lists it: an instance of the flat offer at \$3/h, node c1: $inst_ok" || diag "$(cat "$T/pools.json" "$T/pools.err")"
wait_for "$b2" succeeded 120 && spw ml logs "$b2" 2>&1 | grep -q "^again on c1$"
ok $? "once it has ended, the capped one bursts onto the same instance, c1: $(spw ml logs "$b2" 2>&1)"
cost=$(field "$b" 'd.get("cost_usd") or 0')
python3 -c "import sys; sys.exit(0 if float('$cost') > 0 else 1)"
ok $? "its cost is accounted as a cloud job's: \$$cost"
inst_released() {
    grep -q "spillway slurm suspend: c1 released (slurmd [0-9]* stopped; instance $iid released)" "$C/suspend.log"
}
wait_until 45 inst_released
ok $? "after 10 s idle Slurm suspends c1 through the daemon, which releases the instance: $(cat "$C/suspend.log")"
SPILLWAY_TOKEN=$ADMIN_TOKEN "$SPW" pools -o json >"$T/pools.json" 2>"$T/pools.err"
ended=$(jpy "$T/pools.json" "[x['state'] for x in d['instances'] if x['id'] == '$iid' and x['ended_ts'] is not None]" 2>&1)
[ "$ended" = '["released"]' ]
ok $? "the instance has ended (released, with its end time): $ended" || diag "$(cat "$T/pools.json")"

# Residency and budget: never on a cloud node, even once others burst.
[ "$(state_of "$r")" = queued ] && [ "$(state_of "$h" cv)" = queued ]
ok $? "a job whose residency forbids the cloud and one whose team budget cannot pay for it are not burst (states $(state_of "$r"), $(state_of "$h" cv))" || diag "$(spw ml explain "$r" 2>&1; spw cv explain "$h" 2>&1)"
# Wait policy: a job that fits on-prem before its wait is over runs there.
d2=$(submit ml --gpus 1 --name soon -- sh -c 'echo soon on $SLURMD_NODENAME')
spw ml cancel "$a" >/dev/null 2>&1
wait_for "$d2" succeeded 30 && [ "$(field "$d2" 'd["where"]')" = onprem ]
ok $? "a job that fits on-prem within its wait runs there, not in the cloud (where: $(field "$d2" 'd["where"]'))"
wait_for "$r" succeeded 30 && wait_for "$h" succeeded 30 cv
spw ml logs "$r" >"$T/r.out" 2>&1
spw cv logs "$h" >"$T/h.out" 2>&1
grep -q "^resident on n1$" "$T/r.out" && grep -q "^broke on n1$" "$T/h.out"
ok $? "they ran on-prem once it was free: $(cat "$T/r.out" "$T/h.out")"
ni=$(jpy "$T/pools.json" "len(d['instances'])")
[ "$ni" = 1 ]
ok $? "and only the one burst acquired an instance ($ni)"

# A node Slurm powers up for a job spillway did not burst (an sbatch to the
# cloud partition behind its back): the daemon refuses, the node is set
# DOWN with its reason, and Slurm does not run the job there.
fj=$(sbatch --parsable -p cloud -w c3 --no-requeue -o /dev/null --wrap true 2>&1)
c3down() { scontrol show node c3 | grep -q "Reason=spillway: the daemon refuses: no spillway instance is node c3"; }
wait_until 30 c3down
ok $? "a resume the daemon refuses sets c3 DOWN with the reason: $(scontrol show node c3 | grep -o 'Reason=.*')" || diag "$(cat "$C/resume.log")"
fjst() { st=$(squeue -h -j "$fj" -t all -o %T 2>/dev/null); [ -z "$st" ] || [ "$st" = FAILED ] || [ "$st" = NODE_FAIL ] || [ "$st" = CANCELLED ] || [ "$st" = PENDING ]; }
fst=$(squeue -h -j "$fj" -t all -o %T 2>/dev/null)
[ "$fst" != RUNNING ] && [ "$fst" != COMPLETED ]
ok $? "and that job does not run on it (job $fj: ${fst:-gone})"
scancel "$fj" >/dev/null 2>&1
