#!/usr/bin/env bash
# bench/slurm_spillway.sh: spillway's Slurm backend beside raw sbatch on the
# same throwaway cluster (scripts/slurm-cluster.sh: 8 nodes x 64 fake GPUs,
# partition `onprem` set DOWN so that jobs are accepted but stay pending:
# only submission is measured, as in bench/slurm.sh).
#
#   bench/slurm_spillway.sh [--jobs N] [--sync-jobs M] [--before BIN]
#
# 1. raw: N x `sbatch --parsable --gres=gpu:1 --comment=...` with the batch
#    script on stdin, one after the other (what the backend runs per job).
# 2. spillway: N x `spillway submit --gpus 1` to `spillway serve` with a
#    Slurm pool, one after the other; timed until squeue lists all N jobs
#    (submit -> Slurm job id, end to end).  Ratio = spillway rate / raw rate.
#    N is at most 512 (the cluster's GPUs: the engine places what fits).
#    --before BIN: the same with another spillway binary (an older build),
#    first, on the same cluster in the same run, printed as
#    "slurm_spillway_before", so that a change is compared under the same
#    load.
# 3. state sync (--sync-jobs 0 skips it): M jobs in Slurm (submitted by 8
#    parallel sbatch clients, about 70 s for 10,000 on 2 cores),
#    all M tracked by the backend; the cost of one sync (one squeue --json
#    of all M, its parse and the walk) by build/bench/bench_slurm_sync.
#
# Prints key=value lines starting "slurm_spillway" and "slurm_sync".  Exits 3
# with SKIP when Slurm is not installed.  Stops everything by pid.
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 1
JOBS=300
SYNC_JOBS=10000
BEFORE=
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --sync-jobs) SYNC_JOBS=$2; shift 2 ;;
    --before) BEFORE=$2; shift 2 ;;
    *) echo "usage: bench/slurm_spillway.sh [--jobs N] [--sync-jobs M] [--before BIN]" >&2; exit 2 ;;
    esac
done
[ -x ./spillway ] && [ -x build/bench/bench_slurm_sync ] ||
    make -j2 spillway build/bench/bench_slurm_sync >/dev/null || exit 1
D=$(mktemp -d /tmp/spw-slurm-bench.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    scripts/slurm-cluster.sh stop "$D/cluster" >/dev/null 2>&1
    rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
out=$(scripts/slurm-cluster.sh start "$D/cluster" --nodes 8 --gpus 64 --cloud 0 2>&1)
rc=$?
[ $rc = 3 ] && { echo "slurm_spillway: $out"; exit 3; }
[ $rc = 0 ] || { echo "slurm_spillway: the cluster did not start: $out" >&2; exit 1; }
export SLURM_CONF=$D/cluster/slurm.conf
scontrol update partitionname=onprem state=down || exit 1
now() { echo "$EPOCHREALTIME"; }
el() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# ---- 1. raw sbatch -----------------------------------------------------------
script=$'#!/bin/sh\nexport RANK=0 WORLD_SIZE=1\nexec sleep 1\n'
t0=$(now)
for ((i = 0; i < JOBS; i++)); do
    printf '%s' "$script" | sbatch --parsable -p onprem -J raw-$i --comment=raw.$i -N1 \
        --ntasks-per-node=1 --gres=gpu:1 --no-requeue --open-mode=append -o /dev/null -e /dev/null \
        >/dev/null || echo "slurm_spillway: sbatch $i failed" >&2
done
t1=$(now)
raw_s=$(el "$t0" "$t1")
raw_rate=$(awk -v n="$JOBS" -v t="$raw_s" 'BEGIN { printf "%.1f", n / t }')
scancel -p onprem >/dev/null 2>&1

# ---- 2. spillway submit -> Slurm job id --------------------------------------
# spw_bench BIN LABEL: N submits through BIN's daemon, timed to Slurm job ids.
spw_bench() {
    local bin=$1 label=$2 st=$D/state-$2
    cat >"$D/serve.yaml" <<YAML
onprem:
  - {name: gpu, backend: slurm, partition: onprem, slurm_conf: $SLURM_CONF}
policy: {queue: fifo, backfill: easy, wait: never}
daemon: {tick_s: 0.01}
YAML
    "$bin" serve --config "$D/serve.yaml" --state-dir "$st" --listen 127.0.0.1:0 -q \
        2>"$D/serve-$label.log" &
    pid=$!
    for _ in $(seq 100); do grep -q "listening on" "$D/serve-$label.log" && break; sleep 0.1; done
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$D/serve-$label.log")
    [ -n "$url" ] || { echo "slurm_spillway: serve did not start: $(cat "$D/serve-$label.log")" >&2; exit 1; }
    export SPILLWAY_URL=$url
    t0=$(now)
    for ((i = 0; i < JOBS; i++)); do
        "$bin" submit --gpus 1 -- sleep 1 >/dev/null || echo "slurm_spillway: submit $i failed" >&2
    done
    t1=$(now)
    for ((k = 0; k < 600; k++)); do
        n=$(squeue -h -p onprem -o %j | grep -c '^spw-')   # job names spw-JOBID
        [ "$n" -ge "$JOBS" ] && break
        sleep 0.05
    done
    t2=$(now)
    sub_s=$(el "$t0" "$t1")
    spw_s=$(el "$t0" "$t2")
    spw_rate=$(awk -v n="$n" -v t="$spw_s" 'BEGIN { printf "%.1f", n / t }')
    ratio=$(awk -v a="$spw_rate" -v b="$raw_rate" 'BEGIN { printf "%.2f", a / b }')
    echo "$label jobs=$JOBS raw_sbatch_s=$raw_s raw_jobs_per_s=$raw_rate spillway_submits_s=$sub_s spillway_to_slurm_id_s=$spw_s spillway_in_slurm=$n spillway_jobs_per_s=$spw_rate ratio=$ratio"
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
    scancel -p onprem >/dev/null 2>&1
    # the next run counts only its own jobs
    for ((k = 0; k < 600; k++)); do
        [ "$(squeue -h -p onprem -t pending,running -o %j | grep -c '^spw-')" = 0 ] && break
        sleep 0.05
    done
}
[ -n "$BEFORE" ] && spw_bench "$BEFORE" slurm_spillway_before
spw_bench ./spillway slurm_spillway

# ---- 3. state sync at M jobs -------------------------------------------------
[ "$SYNC_JOBS" -gt 0 ] || exit 0
C=8
per=$((SYNC_JOBS / C))
t0=$(now)
for ((c = 0; c < C; c++)); do
    (
        lo=$((c * per))
        hi=$((c == C - 1 ? SYNC_JOBS : lo + per))
        for ((i = lo; i < hi; i++)); do
            sbatch --parsable -p onprem -J b --comment=bench.$i --gres=gpu:1 -o /dev/null \
                --wrap 'sleep 1' >/dev/null || echo "slurm_spillway: sbatch bench.$i failed" >&2
        done
    ) &
done
wait
t1=$(now)
echo "slurm_spillway sync_setup jobs=$SYNC_JOBS sbatch_8_clients_s=$(el "$t0" "$t1")"
build/bench/bench_slurm_sync "$SYNC_JOBS" onprem
