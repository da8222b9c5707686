#!/bin/sh
# wait_policy.sh: predict:K (the wait policy that projects each job's
# on-prem start) against Starburst's wait policies on Starburst's Table 4
# setting: 4 nodes x 8 GPUs, the cloud at $2.5/GPU-h, owned GPUs sunk ($0).
# Three workloads: two 100,000-job Philly-like synthetic traces (`spillway
# gen`: Philly runtimes resampled, 1/2/4/8 GPUs at 70/15/10/5%, Poisson
# arrivals), one under FIFO with head-of-line blocking and one under EASY
# backfill, and the Alibaba 2023 GPU pod list (EASY backfill).
#
# For each workload the target is the mean wait of Compute-Wait at K = 0.25
# (spillway's default).  `spillway plan` then tunes every policy to that
# target: Starburst's Constant-Wait (constant:S) and Compute-Wait
# (compute:K), spillway's runtime:K, and predict:K; each row is its knife
# edge, the cheapest setting found that meets the target.  Prints the table
# and the commands that made it.  Run from the repository root after make;
# needs ../shared/data (the Philly runtimes and the Alibaba trace).
# BENCH_JOBS changes the synthetic traces' size (default 100000).
set -eu
SPW=${SPILLWAY:-./spillway}
JOBS=${BENCH_JOBS:-100000}
DATA=../shared/data
OUT=bench/out/wait
for f in "$DATA/runtimes/philly_runtime.csv" "$DATA/alibaba-gpu-2023/openb_pod_list_default.csv"; do
    [ -f "$f" ] || { echo "wait_policy.sh: $f is missing (../shared/data beside the repository)" >&2; exit 1; }
done
mkdir -p "$OUT"
: >"$OUT/commands.txt"
log() { echo "$*" >>"$OUT/commands.txt"; "$@"; }

fleet() {   # fleet FILE BACKFILL
    cat >"$1" <<YAML
onprem:
  - name: dc
    nodes: 4
    gpus_per_node: 8
    cost_usd_per_gpu_h: 0
cloud: {price_usd_per_gpu_h: 2.5, boot_delay_s: 0}
policy: {queue: fifo, scan: hol, backfill: $2, wait: compute:0.25}
YAML
}
fleet "$OUT/fifo.yaml" none
fleet "$OUT/easy.yaml" easy
log "$SPW" gen --jobs "$JOBS" --rate 4 --runtime "file:$DATA/runtimes/philly_runtime.csv" \
    --seed 1 -o "$OUT/philly1.csv"
log "$SPW" gen --jobs "$JOBS" --rate 4 --runtime "file:$DATA/runtimes/philly_runtime.csv" \
    --seed 2 -o "$OUT/philly2.csv"

# name trace config
set -- "philly-100k-fifo $OUT/philly1.csv $OUT/fifo.yaml" \
       "philly-100k-easy $OUT/philly2.csv $OUT/easy.yaml" \
       "alibaba-2023-easy $DATA/alibaba-gpu-2023/openb_pod_list_default.csv $OUT/easy.yaml"
for w in "$@"; do
    # shellcheck disable=SC2086
    set -- $w
    log "$SPW" sim --trace "$2" --config "$3" --wait compute:0.25 -o json -q >"$OUT/$1-ref.json"
    target=$(python3 -c 'import json, sys; print("%.0f" % json.load(open(sys.argv[1]))["wait_mean_s"])' \
        "$OUT/$1-ref.json")
    log "$SPW" plan --trace "$2" --config "$3" --nodes 4 --waits constant,compute,runtime,predict \
        --target-wait "mean:${target}s" -o json -q >"$OUT/$1-plan.json" 2>"$OUT/$1-plan.err"
    echo "$1 $target" >>"$OUT/targets.txt.new"
done
mv "$OUT/targets.txt.new" "$OUT/targets.txt"

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
print("Table 4 setting: 4 x 8 GPUs, cloud $2.5/GPU-h, owned GPUs sunk; cost = cloud $ of the replay")
print("target: the mean wait of compute:0.25 on each workload; each row the plan's knife edge\n")
hdr = "%-18s %7s  %-20s %11s %9s  %-20s %11s %9s  %-20s %11s %9s  %8s"
print(hdr % ("workload", "target", "best Starburst", "cost", "mean", "compute:K", "cost", "mean",
             "predict:K", "cost", "mean", "vs best"))
for line in open(out + "/targets.txt"):
    name, target = line.split()
    d = json.load(open("%s/%s-plan.json" % (out, name)))
    rows = {c["wait_policy"].split(":")[0]: c for c in d["configurations"]}
    star = [rows[k] for k in ("constant", "compute") if rows[k]["meets"]]
    best = min(star, key=lambda c: c["cloud_usd"]) if star else None
    pred, comp = rows["predict"], rows["compute"]
    def cell(c):
        if not c or not c["meets"]:
            return ("(misses)", "-", "-")
        return (c["wait_policy"], "$%.0f" % c["cloud_usd"], "%.0f s" % c["wait_mean_s"])
    save = ("%+.1f%%" % (100 * (pred["cloud_usd"] / best["cloud_usd"] - 1))
            if best and pred["meets"] else "-")
    print(hdr % ((name, target + " s") + cell(best) + cell(comp) + cell(pred) + (save,)))
    r = rows["runtime"]
    print("%-18s %7s  (runtime:K, not Starburst's: %s %s)" % ("", "", *cell(r)[:2]))
PY
echo
echo "commands (bench/out/wait/commands.txt):"
sed 's/^/  /' "$OUT/commands.txt"
