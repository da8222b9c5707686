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
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
C=$T/cluster
out=$("$ROOT/scripts/slurm-cluster.sh" start "$C" --nodes 1 --gpus 4 --cloud 2 \
    --resume "$SPW slurm resume" --suspend "$SPW slurm suspend" --suspend-time 10 2>&1)
rc=$?
if [ $rc = 3 ]; then echo "1..0 # SKIP $out"; exit 0; fi
trap '"$ROOT/scripts/slurm-cluster.sh" stop "$C" >/dev/null 2>&1; cleanup' EXIT
plan 12
ok $rc "a Slurm cluster with 1 on-prem node and 2 cloud nodes is up" || { diag "$out"; exit 1; }
export SLURM_CONF=$C/slurm.conf

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
sq() { squeue -h -t all -o '%i %T %k %N' | grep " spw"; }

a=$(submit ml --gpus 4 --name fill -- sleep 120)
wait_for "$a" running 20
ok $? "a 4-GPU job fills the on-prem node"
b=$(submit ml --gpus 4 --name burst -- sh -c 'echo burst on $SLURMD_NODENAME')
wait_for "$b" running 20
[ "$(field "$b" 'd["where"]')" = onprem ] && spw ml show "$b" | grep -q "burst/0"
ok $? "the next one is placed on the cloud pool (burst/0): $(spw ml show "$b" | grep -i placement)"
wait_for "$b" succeeded 60
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
SPILLWAY_SLURMD=/bin/false "$SPW" slurm resume c2 >"$T/fail.out" 2>&1
st=$?
[ $st != 0 ] && scontrol show node c2 | grep -q "Reason=spillway: /bin/false -N c2 failed"
ok $? "a node whose slurmd cannot start is set DOWN with spillway's reason: $(scontrol show node c2 | grep -o 'Reason=[^[]*')"
gone() { grep -q "Slurm node c2 (burst/1) is down" "$DLOG"; }
wait_until 10 gone
ok $? "and leaves spillway's pool: $(grep 'Slurm node c2' "$DLOG")"
spw ml cancel "$a" >/dev/null 2>&1
