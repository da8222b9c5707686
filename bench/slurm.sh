#!/usr/bin/env bash
# bench/slurm.sh: Slurm's submission rate on this machine, the reference for
# the daemon's submit benchmark (bench/bench_daemon.sh).  Starts a throwaway
# Slurm cluster (one slurmctld, one slurmd, auth/none, loopback only,
# everything in a temporary directory), submits `sbatch --hold --wrap true
# -n1` JOBS times from one client (one sbatch after the other) and from 8
# concurrent clients (the same total), REPS times each, and stops everything
# by PID (slurmd first).  Held jobs stay pending, so no job runs and only
# submission is measured.
#
#   bench/slurm.sh [--jobs N] [--clients C] [--reps R]
#
# Prints, per client count, one line of key=value pairs (the best run first):
#   slurm clients=C jobs=N ok=... elapsed_s=... jobs_per_s=... median_jobs_per_s=...
# Exits 0 after the figures, 3 with "slurm: SKIP ..." when Slurm is not
# installed, 1 when the cluster did not come up (the logs are printed).
set -uo pipefail
export LC_ALL=C

JOBS=500
CLIENTS=8
REPS=${BENCH_REPS:-3}
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    *) echo "usage: bench/slurm.sh [--jobs N] [--clients C] [--reps R]" >&2; exit 2 ;;
    esac
done

for b in slurmctld slurmd sbatch squeue sinfo scancel; do
    if ! command -v "$b" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$b" ]; then
        echo "slurm: SKIP: $b not found (apt-get install -y --no-install-recommends slurm-wlm slurmctld slurmd slurm-client)"
        exit 3
    fi
done
CTLD=$(command -v slurmctld || echo /usr/sbin/slurmctld)
SLURMD=$(command -v slurmd || echo /usr/sbin/slurmd)

D=$(mktemp -d /tmp/spw-slurm.XXXXXX)
CTLD_PID=
SLURMD_PID=

# Stops what this script started, by PID: slurmd first (it can hang on
# SIGTERM once slurmctld is gone), SIGKILL after 5 s.
stop_pid() {
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
}
cleanup() {
    # Daemonized (-D keeps them in the foreground, so $! is the daemon).
    stop_pid "$SLURMD_PID"
    stop_pid "$CTLD_PID"
    SLURMD_PID=
    CTLD_PID=
    rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    if command -v python3 >/dev/null; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    else
        echo $((20000 + RANDOM % 20000))
    fi
}
CPORT=$(free_port)
NPORT=$(free_port)
while [ "$NPORT" = "$CPORT" ]; do NPORT=$(free_port); done
ME=$(id -un)
mkdir -p "$D/state" "$D/spool"

cat >"$D/slurm.conf" <<EOF
# throwaway cluster of bench/slurm.sh
ClusterName=spwbench
SlurmctldHost=localhost
SlurmctldPort=$CPORT
SlurmdPort=$NPORT
SlurmUser=$ME
SlurmdUser=$ME
AuthType=auth/none
CredType=cred/none
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmdParameters=config_overrides
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=2
MaxJobCount=100000
NodeName=n1 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=8 RealMemory=8000 State=UNKNOWN
PartitionName=bench Nodes=n1 Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$D/slurm.conf

fail() {
    echo "slurm: FAIL: $*" >&2
    for f in "$D"/slurmctld.log "$D"/slurmd-*.log; do
        [ -f "$f" ] && { echo "--- $f (last 20 lines)" >&2; tail -20 "$f" >&2; }
    done
    exit 1
}

"$CTLD" -D -i -f "$D/slurm.conf" >"$D/slurmctld.out" 2>&1 &
CTLD_PID=$!
for ((i = 0; i < 100; i++)); do
    scontrol ping 2>/dev/null | grep -q UP && break
    kill -0 "$CTLD_PID" 2>/dev/null || fail "slurmctld exited"
    sleep 0.1
done
scontrol ping 2>/dev/null | grep -q UP || fail "slurmctld did not answer within 10 s"

"$SLURMD" -D -N n1 -f "$D/slurm.conf" </dev/null >"$D/slurmd.out" 2>&1 &
SLURMD_PID=$!
for ((i = 0; i < 150; i++)); do
    st=$(sinfo -h -n n1 -o %T 2>/dev/null)
    [ "$st" = idle ] && break
    kill -0 "$SLURMD_PID" 2>/dev/null || fail "slurmd exited"
    sleep 0.1
done
[ "$st" = idle ] || fail "node n1 is '$st', not idle, after 15 s"

# One client: sbatch after sbatch.  C clients: JOBS/C each, in parallel.
# A submit counts when sbatch printed "Submitted batch job N".
submit_seq() { # submit_seq N OUTFILE
    local k
    for ((k = 0; k < $1; k++)); do
        sbatch --hold -n1 -o /dev/null -e /dev/null --wrap true 2>&1
    done >"$2"
}
run_rep() { # run_rep CLIENTS -> prints "ok elapsed_s"
    local c=$1 t0 t1 k per rest n ok
    rm -f "$D"/sub.*
    per=$((JOBS / c))
    rest=$((JOBS % c))
    t0=$EPOCHREALTIME
    for ((k = 0; k < c; k++)); do
        n=$per
        ((k < rest)) && n=$((n + 1))
        submit_seq "$n" "$D/sub.$k" &
    done
    wait
    t1=$EPOCHREALTIME
    ok=$(cat "$D"/sub.* | grep -c '^Submitted batch job')
    if [ "$ok" != "$JOBS" ]; then
        echo "slurm: $((JOBS - ok)) of $JOBS sbatch calls failed; first: $(grep -hv '^Submitted' "$D"/sub.* | head -1)" >&2
    fi
    echo "$ok $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
}

for c in 1 "$CLIENTS"; do
    : >"$D/rates.$c"
    for ((r = 0; r < REPS; r++)); do
        read -r ok el < <(run_rep "$c")
        pending=$(squeue -h -t PD -o %i | wc -l)
        if [ "$pending" -lt "$ok" ]; then
            echo "slurm: only $pending pending jobs after $ok acknowledged submits" >&2
        fi
        echo "$ok $el $(awk -v n="$ok" -v t="$el" 'BEGIN { printf "%.1f", n / t }')" >>"$D/rates.$c"
        # Cancel them so the queue is empty again for the next run (slurmctld
        # purges cancelled jobs after MinJobAge, in the background).
        scancel --state=PENDING -u "$ME" 2>/dev/null
    done
    sort -k3 -g -r "$D/rates.$c" | awk -v c="$c" -v n="$JOBS" -v reps="$REPS" '
        { ok[NR] = $1; el[NR] = $2; r[NR] = $3 }
        END { m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
              printf "slurm clients=%d jobs=%d reps=%d ok=%d elapsed_s=%.3f jobs_per_s=%.1f median_jobs_per_s=%.1f\n",
                     c, n, reps, ok[1], el[1], r[1], m }'
done
echo "slurm info version=$("$CTLD" -V | awk '{ print $2 }') auth=none nodes=1 submit='sbatch --hold -n1 --wrap true'"
