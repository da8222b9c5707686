#!/bin/sh
# plan.sh: the planner's speed: `spillway plan` over a 100,000-job trace and
# 50 configurations (10 node counts x 5 wait policies, three of them with a
# parameter searched), on every core and on one.  Prints configurations per
# second and job-configurations per second.  Run from the repository root
# after make.  BENCH_JOBS and BENCH_THREADS change the sizes.
set -eu
SPW=${SPILLWAY:-./spillway}
JOBS=${BENCH_JOBS:-100000}
OUT=bench/out
mkdir -p "$OUT"
"$SPW" gen --jobs "$JOBS" --rate 400 --runtime lognormal:1800:1.2 --seed 5 >"$OUT/plan-jobs.csv"
cat >"$OUT/plan-fleet.yaml" <<'YAML'
onprem:
  - name: dc
    nodes: 40
    gpus_per_node: 8
    cost_usd_per_gpu_h: 1.10
cloud: {price_usd_per_gpu_h: 3.0, boot_delay_s: 60}
policy: {wait: none}
YAML
cores=$(getconf _NPROCESSORS_ONLN)
for threads in ${BENCH_THREADS:-$cores 1}; do
    start=$(date +%s.%N)
    "$SPW" plan --trace "$OUT/plan-jobs.csv" --config "$OUT/plan-fleet.yaml" \
        --nodes 0:72:8 --waits never,none,compute,runtime,constant --target-wait mean:10m \
        --threads "$threads" -o json -q >"$OUT/plan-$threads.json"
    end=$(date +%s.%N)
    python3 - "$OUT/plan-$threads.json" "$start" "$end" "$threads" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
n = len(d["configurations"])
print("plan: %d jobs x %d configurations (%d simulations) on %s thread(s): %.2f s planning, "
      "%.2f s with loading; %.1f configurations/s, %.3g jobs x configurations/s, "
      "%.3g job-simulations/s"
      % (d["jobs"], n, d["sims"], sys.argv[4], d["seconds"], wall, n / d["seconds"],
         d["jobs"] * n / d["seconds"], d["jobs"] * d["sims"] / d["seconds"]))
PY
done
