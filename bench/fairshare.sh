#!/bin/sh
# fairshare.sh: fair share and quotas (docs/fairshare.md), before and after.
# 1. The scenario: one 4 x 8-GPU pool; team a submits 200 x 8-GPU
#    one-hour jobs at t = 0, team b twenty 1-GPU 30-minute jobs at 10 min;
#    FIFO (today) against queue: fair with quotas of 16 GPUs each in one
#    cohort and a 5-minute reclaim grace.  Jobs checkpoint every 10 min.
# 2. The Alibaba 2023 trace (openb_pod_list_default.csv, pods with GPUs,
#    whole GPUs, runtime = deletion - creation) with its pods spread over
#    4 teams round-robin, on one 8 x 8-GPU pool, quotas of 16 GPUs each.
# Prints per-team mean and p90 waits, mean JCT and Themis's rho, and the
# on-prem utilisation; then, per team, fair against its FIFO baseline of the
# same run as ratios (mean wait fair / fifo, rho fair / fifo).  Run from the repository root after make.
set -eu
SPW=${SPILLWAY:-./spillway}
OUT=bench/out
DATA=${SPW_DATA:-../shared/data}
mkdir -p "$OUT"
hdr="id,submit_s,gpus,runtime_s,gpu,team,priority,deadline_s,est_runtime_s,class,data,residency,labels,max_runtime_s,spot,spot_policy,checkpoint_interval_s"
{
    echo "$hdr"
    i=1; while [ $i -le 200 ]; do echo "a$i,0,8,3600,,a,,,,,,,,,,,600"; i=$((i + 1)); done
    i=1; while [ $i -le 20 ]; do echo "b$i,600,1,1800,,b,,,,,,,,,,,600"; i=$((i + 1)); done
} >"$OUT/fair-scenario.csv"

# $1 file, $2 queue, $3 pool nodes, $4... team names; quotas when $2 = fair.
config() {
    f=$1 q=$2 nodes=$3
    shift 3
    {
        echo "onprem:"
        echo "  - {name: pool, nodes: $nodes, gpus_per_node: 8}"
        if [ "$q" = fair ]; then
            echo "policy: {queue: fair, wait: never, half_life: 1d, reclaim_grace: 5m}"
            echo "cohorts:"
            echo "  - {name: lab}"
        else
            echo "policy: {queue: fifo, wait: never}"
        fi
        echo "teams:"
        for t in "$@"; do
            if [ "$q" = fair ]; then
                echo "  - {name: $t, quota: {gpus: 16}, cohort: lab}"
            else
                echo "  - {name: $t}"
            fi
        done
    } >"$f"
}

show() {
    "$SPW" sim --trace "$1" --config "$2" -q 2>&1 |
        sed -n -e '/on-prem utilisation/p' -e '/^  team  *jobs/,/reclaimed: attempts/p'
}

# ratios NAME: per team, the fair run's mean wait and rho over the FIFO
# run's (the baseline), from the tables saved in $OUT/fair-NAME-{fifo,fair}.txt.
ratios() {
    echo "== $1: fair / fifo (the baseline, same run), per team"
    awk 'function sec(v, u) { return v * (u == "d" ? 86400 : u == "h" ? 3600 : u == "min" ? 60 : 1) }
         FNR == 1 { q++ }
         $1 ~ /^[a-z]$/ && $2 ~ /^[0-9]+$/ { w[q, $1] = sec($3, $4); r[q, $1] = $9; t[$1] = 1 }
         END { for (k in t) printf("  team %s  mean wait %s  rho %s\n", k,
                   (w[1, k] > 0 ? sprintf("%.3f", w[2, k] / w[1, k]) : "-"),
                   (r[1, k] > 0 ? sprintf("%.3f", r[2, k] / r[1, k]) : "-")) }' \
        "$OUT/fair-$1-fifo.txt" "$OUT/fair-$1-fair.txt" | sort
}

for q in fifo fair; do
    config "$OUT/fair-scenario-$q.yaml" $q 4 a b
    echo "== scenario, queue $q$( [ $q = fair ] && echo ' + quotas 16/16, reclaim grace 5m')"
    show "$OUT/fair-scenario.csv" "$OUT/fair-scenario-$q.yaml" | tee "$OUT/fair-scenario-$q.txt"
done
ratios scenario

POD="$DATA/alibaba-gpu-2023/openb_pod_list_default.csv"
if [ ! -f "$POD" ]; then
    echo "(no $POD: the Alibaba part is skipped)"
    exit 0
fi
awk -F, -v hdr="$hdr" 'NR == 1 { print hdr; next }
    $4 + 0 < 1 || $10 == "" || $10 + 0 <= $9 + 0 { next }
    { n++; t = substr("abcd", n % 4 + 1, 1);
      printf "%s,%d,%d,%d,,%s,,,,,,,,,,,600\n", $1, $9, $4, $10 - $9, t }' "$POD" |
    sort -t, -k2,2n -s >"$OUT/fair-alibaba.csv.body"
{ echo "$hdr"; grep -v '^id,' "$OUT/fair-alibaba.csv.body"; } >"$OUT/fair-alibaba.csv"
rm -f "$OUT/fair-alibaba.csv.body"
for q in fifo fair; do
    config "$OUT/fair-alibaba-$q.yaml" $q 8 a b c d
    echo "== Alibaba 2023 (4 teams, 8 x 8 GPUs), queue $q"
    show "$OUT/fair-alibaba.csv" "$OUT/fair-alibaba-$q.yaml" | tee "$OUT/fair-alibaba-$q.txt"
done
ratios alibaba
