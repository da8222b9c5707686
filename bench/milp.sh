#!/bin/sh
# milp.sh: how far `spillway plan`'s answer is from the optimum, on a small
# workload of Starburst's Table 4 kind (issue #24, the `plan` bullet).
#
# Table 4's own job mix is not available (docs/roi.md section 8), so this
# makes a small one and computes, for it, a provable LOWER BOUND on the cloud
# cost of ANY schedule meeting the target mean wait: a time-indexed MILP
# (bench/milp.py, solved with CBC) that every real schedule maps onto at no
# more cost.  Then it runs `spillway plan` and replays its knife edges.
#
# Workload: `spillway gen` (1/2/4/8 GPUs at 70/15/10/5%, Poisson arrivals,
# seed 1) with runtimes resampled from the Philly runtimes of at most 4 h
# (90.7% of Philly's jobs; the tail of days-long jobs would make the MILP's
# horizon days long), MILP_JOBS jobs (default 100) at MILP_RATE jobs/h
# (default 30: 90% of 32 GPUs at the mean GPU-seconds of that runtime mix).
# Fleet as bench/wait_policy.sh: 4 nodes x 8 GPUs at $0/GPU-h (sunk), cloud
# flat $2.5/GPU-h, boot_delay_s 0, FIFO with EASY backfill.  Target: the mean
# wait of compute:0.25, rounded to the second as wait_policy.sh does.
# MILP_SLOTS: the slot lengths D tried (default "600 300 120 60"; smaller is
# tighter and slower); MILP_OUT: where its files go (default bench/out/milp);
# MILP_SEC: CBC's time limit per solve (default 240 s of CPU;
# when it stops on time the bound is CBC's best bound, still a bound).
# MILP_UPPER / MILP_NODE_UPPER: the slots of the upper models (a real
# schedule, pool-level / on the 4 nodes; defaults 60 and 120, "" skips):
# where the two bounds meet, the optimum is known.
#
# Needs ../shared/data (the Philly runtimes), /usr/bin/python3 and CBC:
#   apt-get install -y coinor-cbc
# (scripts/deps.sh has no bench level; no test needs CBC).  Without either it
# says so and exits 0.  Run from the repository root after make.
set -eu
SPW=${SPILLWAY:-./spillway}
JOBS=${MILP_JOBS:-100}
RATE=${MILP_RATE:-30}
SLOTS=${MILP_SLOTS:-600 300 120 60}
SEC=${MILP_SEC:-240}
UPPER=${MILP_UPPER-60}
NODE_UPPER=${MILP_NODE_UPPER-120}
PY=/usr/bin/python3
DATA=../shared/data
OUT=${MILP_OUT:-bench/out/milp}
if [ ! -f "$DATA/runtimes/philly_runtime.csv" ]; then
    echo "milp.sh: skipped: $DATA/runtimes/philly_runtime.csv is missing (../shared/data beside the repository)"
    exit 0
fi
if ! command -v cbc >/dev/null 2>&1; then
    echo "milp.sh: skipped: the MILP solver cbc is not installed; install it with:"
    echo "  apt-get install -y coinor-cbc"
    exit 0
fi
[ -x "$PY" ] || { echo "milp.sh: skipped: $PY is missing"; exit 0; }
mkdir -p "$OUT"
: >"$OUT/commands.txt"
log() { echo "$*" >>"$OUT/commands.txt"; "$@"; }

# Philly runtimes of at most 4 h, one column, as `gen --runtime file:` reads.
"$PY" - "$DATA/runtimes/philly_runtime.csv" >"$OUT/philly_le4h.csv" <<'PY'
import sys
print("runtime")
for line in open(sys.argv[1]):
    try:
        v = float(line)
    except ValueError:
        continue
    if v <= 14400:
        print(line.strip())
PY
# the fleet of bench/wait_policy.sh's easy.yaml, in flow style
printf '%s\n' 'onprem: [{name: dc, nodes: 4, gpus_per_node: 8, cost_usd_per_gpu_h: 0}]' \
    'cloud: {price_usd_per_gpu_h: 2.5, boot_delay_s: 0}' \
    'policy: {queue: fifo, scan: hol, backfill: easy, wait: compute:0.25}' >"$OUT/easy.yaml"
TR="$OUT/jobs.csv"
log "$SPW" gen --jobs "$JOBS" --rate "$RATE" --runtime "file:$OUT/philly_le4h.csv" --seed 1 -o "$TR"
log "$SPW" sim --trace "$TR" --config "$OUT/easy.yaml" --wait compute:0.25 -o json -q >"$OUT/ref.json"
target=$("$PY" -c 'import json, sys; print("%.0f" % json.load(open(sys.argv[1]))["wait_mean_s"])' "$OUT/ref.json")
log "$SPW" plan --trace "$TR" --config "$OUT/easy.yaml" --nodes 4 --waits constant,compute,runtime,predict \
    --target-wait "mean:${target}s" -o json -q >"$OUT/plan.json"

# Each knife edge replayed by plain sim (the figures the table shows), and a
# hand sweep of each policy's parameter (400 points from 0 to 2x the plan's
# top) to see whether the plan's search missed a cheaper setting of its own.
"$PY" - "$SPW" "$TR" "$OUT" "$target" <<'PY'
import json, subprocess, sys
spw, tr, out, target = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def sim(w):
    p = subprocess.run([spw, "sim", "--trace", tr, "--config", out + "/easy.yaml", "--wait", w,
                        "-o", "json", "-q"], stdout=subprocess.PIPE, check=True, text=True)
    d = json.loads(p.stdout)
    return d["cloud_cost_usd"], d["wait_mean_s"], d["jobs"], d["jobs_done"] if "jobs_done" in d else d["jobs"]
plan = json.load(open(out + "/plan.json"))
res = {}
for c in plan["configurations"]:
    name, k = c["wait_policy"].split(":")
    cost, wait, n, _ = sim(c["wait_policy"])
    top = {"constant": 86400.0, "compute": 10.0, "runtime": 10.0, "predict": 10.0}[name]
    top = min(top, 2 * float(k)) if float(k) > 0 else top
    best = None
    for i in range(401):
        kk = "%g" % (top * i / 400)
        cc, ww, _, _ = sim("%s:%s" % (name, kk))
        if ww <= target and (best is None or cc < best[1] - 1e-9):
            best = ("%s:%s" % (name, kk), cc, ww)
    res[name] = {"plan": c["wait_policy"], "cost": cost, "wait": wait, "meets": c["meets"],
                 "sweep": best}
json.dump(res, open(out + "/replay.json", "w"))
PY

: >"$OUT/bounds.txt"
milp() {   # milp D [--upper [--per-node]]
    D=$1; shift
    echo "D=$D $("$PY" bench/milp.py "$TR" "$target" "$D" --sec "$SEC" --dir "$OUT" "$@" | tr '\n' ' ')" \
        >>"$OUT/bounds.txt"
    echo "$PY bench/milp.py $TR $target $D --sec $SEC --dir $OUT $*" >>"$OUT/commands.txt"
}
for D in $SLOTS; do milp "$D"; done
for D in $UPPER; do milp "$D" --upper; done
for D in $NODE_UPPER; do milp "$D" --upper --per-node; done

"$PY" - "$OUT" "$target" "$JOBS" "$RATE" <<'PY'
import json, sys
out, target, jobs, rate = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
ref = json.load(open(out + "/ref.json"))
rp = json.load(open(out + "/replay.json"))
bounds = []
for line in open(out + "/bounds.txt"):
    kv = dict(x.split("=", 1) for x in line.split())
    bounds.append(kv)
print("%s jobs at %s/h on 4 x 8 GPUs, cloud $2.5/GPU-h, owned sunk, EASY backfill" % (jobs, rate))
print("target: mean wait <= %.0f s (compute:0.25: $%.2f at %.0f s)\n"
      % (target, ref["cloud_cost_usd"], ref["wait_mean_s"]))
print("the cheapest schedule meeting the target, known future (bench/milp.py, CBC):")
print("  %-22s %6s %8s %8s %10s %10s %8s" % ("model", "D", "binaries", "status", "bound", "schedule", "solve"))
lb, ub = 0.0, float("inf")
for b in bounds:
    m = b.get("model", "?")
    name = {"lower": "lower bound (relaxed)", "upper": "pool schedule",
            "upper_nodes": "4 x 8 schedule"}.get(m, m)
    inc = b.get("incumbent_usd", "-")
    if m == "upper":
        name += " (packs)" if b.get("node_packed") == "1" else " (no pack)"
    if m == "lower" and b.get("bound_usd", "nan") != "nan":
        lb = max(lb, float(b["bound_usd"]))
    if b.get("schedule_ok", "1") != "1":
        name += " (WRONG: not a schedule meeting the target)"
    elif m == "upper_nodes" and inc not in ("-", ""):
        ub = min(ub, float(inc))
    elif m == "upper" and b.get("node_packed") == "1" and inc not in ("-", ""):
        ub = min(ub, float(inc))
    print("  %-22s %5ss %8s %8s %10s %10s %7ss" % (name, b["D"], b.get("binaries", "-"),
          b.get("status", "-"), "$%.2f" % float(b.get("bound_usd", "nan")) if m == "lower" else "",
          "$%.2f" % float(inc) if m != "lower" and inc not in ("-", "") else "-", b.get("solve_s", "-")))
print("\noptimum: at least $%.2f%s\n" % (lb, ", at most $%.2f (a schedule the 4 x 8 GPUs run)" % ub
                                           if ub < float("inf") else ""))
hdr = "%-9s %-22s %10s %8s %9s   %-22s %10s"
print(hdr % ("policy", "plan's knife edge", "cloud", "mean", "vs bound", "hand sweep (401 pts)", "cloud"))
bad = 0
for name in ("constant", "compute", "runtime", "predict"):
    r = rp[name]
    if r["cost"] < lb - 1e-6:
        bad = 1
    gap = ("%+.1f%%" % (100 * (r["cost"] / lb - 1))) if lb > 0 else "+$%.2f" % (r["cost"] - lb)
    sw = r["sweep"] or ["(none meets)", float("nan")]
    print(hdr % (name, r["plan"], "$%.2f" % r["cost"], "%.0f s" % r["wait"], gap, sw[0], "$%.2f" % sw[1]))
if bad:
    print("\nWRONG: a replayed schedule costs less than the MILP's bound: the formulation is not a relaxation")
print("\n(gap in % when the bound is above $0, else in dollars)")
PY
echo
echo "commands ($OUT/commands.txt):"
sed 's/^/  /' "$OUT/commands.txt"
