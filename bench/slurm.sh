#!/usr/bin/env bash
# bench/slurm.sh: Slurm's submission rate on this machine, the reference for
# the daemon's submit benchmark (bench/bench_daemon.sh).  Starts a throwaway
# Slurm cluster with scripts/slurm-cluster.sh (one slurmctld, one slurmd,
# auth/none, loopback only, everything in a temporary directory), submits `sbatch --hold --wrap true
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
ME=$(id -un)

# The cluster is the tests' own (scripts/slurm-cluster.sh): one node, no
# cloud nodes; stopped by its pid files, slurmd first.
root=$(cd "$(dirname "$0")/.." && pwd)
D=$(mktemp -d /tmp/spw-slurm.XXXXXX)
cleanup() {
    "$root/scripts/slurm-cluster.sh" stop "$D" >/dev/null 2>&1
    rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$root/scripts/slurm-cluster.sh" start "$D" --nodes 1 --gpus 1 --cloud 0 >"$D/start.out" 2>&1
case $? in
0) ;;
3) echo "slurm: SKIP: $(tail -1 "$D/start.out")"; exit 3 ;;
*) echo "slurm: FAIL: the cluster did not come up:" >&2; cat "$D/start.out" >&2; exit 1 ;;
esac
# shellcheck disable=SC1091
. "$D/env"

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
