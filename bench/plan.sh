#!/bin/sh
# plan.sh: the planner's speed: `spillway plan` over a 100,000-job trace and
# 50 configurations (10 node counts x 5 wait policies, three of them with a
# parameter searched), on every core and on one, beside its baseline from the
# same run: one standalone `spillway sim` of the same trace (the fleet as the
# config has it).  Each round runs the baseline and then the plans, so they
# see the same load; BENCH_RUNS rounds (default 3) give min/median/max, and
# the ratio is plan median / sim median (the goal: <= 15).  Prints
# configurations per second, simulations asked for and simulator runs made.
# Run from the repository root after make.  BENCH_JOBS, BENCH_THREADS and
# BENCH_RUNS change the sizes; SPILLWAY names another binary (an older build
# to compare: it prints no run count).
set -eu
SPW=${SPILLWAY:-./spillway}
JOBS=${BENCH_JOBS:-100000}
RUNS=${BENCH_RUNS:-3}
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
threads_list=${BENCH_THREADS:-$cores 1}
now() { date +%s.%N; }
: >"$OUT/plan-times.txt"
r=1
while [ "$r" -le "$RUNS" ]; do
    start=$(now)
    "$SPW" sim --trace "$OUT/plan-jobs.csv" --config "$OUT/plan-fleet.yaml" -o json -q \
        >"$OUT/plan-sim.json"
    end=$(now)
    echo "sim $start $end" >>"$OUT/plan-times.txt"
    for threads in $threads_list; do
        start=$(now)
        "$SPW" plan --trace "$OUT/plan-jobs.csv" --config "$OUT/plan-fleet.yaml" \
            --nodes 0:72:8 --waits never,none,compute,runtime,constant --target-wait mean:10m \
            --threads "$threads" -o json >"$OUT/plan-$threads.json" 2>"$OUT/plan-$threads.err"
        end=$(now)
        echo "plan-$threads $start $end" >>"$OUT/plan-times.txt"
    done
    r=$((r + 1))
done
python3 - "$OUT" "$threads_list" <<'PY'
import json, re, statistics, sys
out, threads = sys.argv[1], sys.argv[2].split()
walls = {}
for line in open(out + "/plan-times.txt"):
    k, a, b = line.split()
    walls.setdefault(k, []).append(float(b) - float(a))
def mmm(v):
    return "min %.2f / median %.2f / max %.2f s" % (min(v), statistics.median(v), max(v))
sim = walls["sim"]
print("baseline: one spillway sim of the same trace (whole process), %d runs: %s"
      % (len(sim), mmm(sim)))
for t in threads:
    d = json.load(open("%s/plan-%s.json" % (out, t)))
    n = len(d["configurations"])
    m = re.search(r"(\d+) simulator runs", open("%s/plan-%s.err" % (out, t)).read())
    runs = m.group(1) if m else "?"
    w = walls["plan-" + t]
    print("plan: %d jobs x %d configurations on %s thread(s): %d simulations asked for, %s "
          "simulator runs made; whole process %s; %.2f s planning in the last run; "
          "%.1f configurations/s" % (d["jobs"], n, t, d["sims"], runs, mmm(w), d["seconds"],
                                     n / d["seconds"]))
    print("  ratio plan / sim (medians): %.1fx (goal <= 15x); min/min %.1fx, max/max %.1fx"
          % (statistics.median(w) / statistics.median(sim), min(w) / min(sim),
             max(w) / max(sim)))
PY
