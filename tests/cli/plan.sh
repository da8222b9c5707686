#!/bin/sh
# plan.sh: `spillway plan`: the sweep of owned capacity x wait policies, the
# parameter search for a target wait, the robust choice, the frontier, the
# cheapest fleet, JSON and CSV output, determinism across thread counts, and
# the errors for bad options.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 27

"$SPW" gen --jobs 1500 --rate 30 --runtime lognormal:1800:1.2 --seed 21 >"$T/jobs.csv"
cat >"$T/fleet.yaml" <<'YAML'
onprem:
  - name: dc
    nodes: 4
    gpus_per_node: 8
    owned: {price_usd_per_gpu: 25000, years: 4, gpu_busy_w: 800, gpu_idle_w: 150, pue: 1.5,
            usd_per_kwh: 0.10, node_usd_per_month: 1300}
cloud: {price_usd_per_gpu_h: 3.0, boot_delay_s: 60}
policy: {wait: none}
YAML

"$SPW" plan --help >"$T/help.txt"
ok $? "plan --help exits 0"
contains "$T/help.txt" "--target-wait" && contains "$T/help.txt" "Example, should we buy" &&
    contains "$T/help.txt" "--csv FILE" && contains "$T/help.txt" "--capex" &&
    contains "$T/help.txt" "--swing PCT"
ok $? "--help explains the options and gives an example"

run_spw "$T/p.json" "$T/p.err" plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" \
    --nodes 0,2,4,6 --waits none,compute,runtime,constant --target-wait mean:15m \
    --horizon 3y -o json --csv "$T/p.csv" -q
ok "$rc" "plan -o json --csv exits 0"
awk -F, 'NR == 2 { a = $2 } END { print $2 - a }' "$T/jobs.csv" >"$T/span"
json_check "$T/p.json" '
span = float(open("'"$T/span"'").read())
c = d["configurations"]
assert len(c) == 16, len(c)
assert [x["nodes"] for x in c] == [n for n in (0, 2, 4, 6) for _ in range(4)]
assert all(x["onprem_gpus"] == 8 * x["nodes"] for x in c)
for x in c:
    assert x["meets"] == (x["wait_stat_s"] <= 900 + 1e-9), x
    assert abs(x["total_usd"] - x["cloud_usd"] - x["owned_usd"] - x["egress_usd"]) < 1e-4, x
    tco = (x["owned_usd"] / x["makespan_s"] + (x["cloud_usd"] + x["egress_usd"]) / span) * d["horizon_s"]
    assert abs(x["tco_usd"] - tco) < 1e-3 * x["tco_usd"], (x, tco)
    assert x["param_lo"] <= x["param_hi"], x'
ok $? "16 configurations (4 node counts x 4 waits); meets, totals and TCO (owned per hour, cloud per hour of arrivals) add up"
json_check "$T/p.json" '
c = d["configurations"]
meets = [i for i, x in enumerate(c) if x["meets"]]
assert meets and d["best"] == min(meets, key=lambda i: c[i]["decide_usd"]), d["best"]'
ok $? "best is the cheapest from now (TCO less sunk capital) among the configurations meeting the target"
json_check "$T/p.json" '
c = d["configurations"]
for i, x in enumerate(c):
    dom = any(y["decide_usd"] <= x["decide_usd"] and y["wait_stat_s"] <= x["wait_stat_s"] and
              (y["decide_usd"] < x["decide_usd"] or y["wait_stat_s"] < x["wait_stat_s"]) for y in c)
    assert x["frontier"] == (not dom), (i, x)
assert any(x["frontier"] for x in c)'
ok $? "the frontier holds exactly the configurations no other beats on both cost and wait"
json_check "$T/p.json" '
c = d["configurations"]
owned = {x["nodes"]: x["owned_usd"] / x["makespan_s"] for x in c if x["wait_policy"] == "none"}
assert owned[0] == 0 and owned[2] < owned[4] < owned[6], owned'
ok $? "owning more nodes costs more per hour, used or not (none owned costs nothing)"
# Owned capacity is sunk: the 4 nodes the config owns cost their capital
# whatever the plan says; only nodes beyond them are bought.
json_check "$T/p.json" '
cap_h = 25000 / (4 * 8766.0)
assert d["owned_nodes"] == 4 and d["capex"] is False and abs(d["swing_frac"] - 0.1) < 1e-12
for x in d["configurations"]:
    sunk = min(x["nodes"], 4) * 8 * cap_h * d["horizon_s"] / 3600
    assert abs(x["sunk_usd"] - sunk) <= 1e-6 * max(1, sunk), (x, sunk)
    assert abs(x["decide_usd"] - (x["tco_usd"] - sunk)) <= 1e-6 * x["tco_usd"], x'
ok $? "sunk: the capital of the owned nodes kept (min(nodes, 4) x 8 GPUs) is left out of the cost from now"
[ "$(head -n 1 "$T/p.csv" | cut -d, -f1-5)" = "pool,nodes,onprem_gpus,wait_policy,meets" ] &&
    [ "$(wc -l <"$T/p.csv")" -eq 17 ]
ok $? "--csv has a header and one row per configuration"

# The knife edge, its swing and the robust setting, replayed by plain
# `spillway sim` runs of the same fleet: the figures are real runs.
replay() { # replay NODES WAIT > json: a plain sim of that fleet and wait
    sed "s/^    nodes: 4$/    nodes: $1/" "$T/fleet.yaml" >"$T/r$1.yaml"
    "$SPW" sim --trace "$T/jobs.csv" --config "$T/r$1.yaml" --wait "$2" -o json
}
cat >"$T/runs.py" <<'PY'
import json
def runs(path):
    """The JSON objects of a file of concatenated `sim -o json` outputs."""
    dec, text, out, i = json.JSONDecoder(), open(path).read(), [], 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text):
            o, i = dec.raw_decode(text, i)
            out.append(o)
    return out
PY
python3 - "$T/p.json" >"$T/sw.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b = d["configurations"][d["best"]]
k, p = b["wait_policy"].split(":")
r = b["robust_param"]
print(b["nodes"], "%s:%g %s:%g %s:%g %s:%g %s:%g" % (k, float(p) * 0.9, k, float(p) * 1.1,
      k, r * 0.9, k, r, k, r * 1.1))
PY
read -r bn w1 w2 r1 r2 r3 <"$T/sw.txt"
for x in "$w1" "$w2" "$r1" "$r2" "$r3"; do replay "$bn" "$x"; done >"$T/sw.jsonl"
PYTHONPATH=$T python3 - "$T/p.json" "$T/sw.jsonl" "$T/span" <<'PY'
import json, sys
from runs import runs
d = json.load(open(sys.argv[1]))
rs = runs(sys.argv[2])
span, H = float(open(sys.argv[3]).read()), d["horizon_s"]
b = d["configurations"][d["best"]]
tot = lambda s: s["cloud_cost_usd"] + s["owned_cost_usd"] + s["egress_usd"]
tco = lambda s: (s["owned_cost_usd"] / s["makespan_s"] + (s["cloud_cost_usd"] + s["egress_usd"]) / span) * H
assert len(rs) == 5 and float(b["wait_policy"].split(":")[1]) > 0, b
swing = max(abs(tot(s) - b["total_usd"]) / b["total_usd"] for s in rs[:2])
assert swing > 0 and abs(swing - b["swing"]) <= 1e-5, (swing, b["swing"])
assert b["edge_breaks"] == (rs[1]["wait_mean_s"] > 900), b
assert b["robust_meets"] and all(s["wait_mean_s"] <= 900 for s in rs[2:]), b
worst = max(tco(s) for s in rs[2:])
assert abs(b["robust_tco_usd"] - worst) <= 1e-5 * worst and worst >= b["tco_usd"] - 1e-6, (b, worst)
PY
ok $? "swing and robust are real runs: sim at the choice +-10% gives the swing; the robust setting and it +-10% meet the target, priced at the dearest"

# The knife edge against a hand sweep of the same configuration (4 nodes,
# compute): within 1% of the cheapest swept setting that meets the target.
for k in 0 0.01 0.02 0.03 0.04 0.05 0.06 0.08 0.1 0.12 0.15 0.2 0.3; do
    replay 4 "compute:$k"
done >"$T/sweep.jsonl"
PYTHONPATH=$T python3 - "$T/p.json" "$T/sweep.jsonl" <<'PY'
import json, sys
from runs import runs
d = json.load(open(sys.argv[1]))
rs = runs(sys.argv[2])
x = [c for c in d["configurations"] if c["nodes"] == 4 and c["wait_policy"].startswith("compute")][0]
ok = [r["cloud_cost_usd"] + r["owned_cost_usd"] + r["egress_usd"] for r in rs if r["wait_mean_s"] <= 900]
assert len(rs) == 13 and ok and x["meets"], (len(rs), x)
assert x["total_usd"] <= 1.01 * min(ok), (x["wait_policy"], x["total_usd"], min(ok))
PY
ok $? "automatic: the knife edge is within 1% of the cheapest setting of a 13-point hand sweep"

# A target that only a parameter below 10 / 256 meets (8 bisection steps
# from 10 leave the bracket [0, 0.039]): the search goes on below it rather
# than answer 0, bursting every job at once.
replay 4 compute:0.01 >"$T/small.json" && replay 4 compute:0 >>"$T/small.json" &&
    small=$(PYTHONPATH=$T python3 -c 'import math, sys
from runs import runs
print(math.ceil(runs(sys.argv[1])[0]["wait_mean_s"]))' "$T/small.json") &&
    "$SPW" plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" --nodes 4 --waits compute \
        --target-wait "mean:${small}s" -o json -q >"$T/psmall.json" &&
    PYTHONPATH=$T python3 - "$T/psmall.json" "$T/small.json" <<'PY'
import json, sys
from runs import runs
c = json.load(open(sys.argv[1]))["configurations"][0]
at01, at0 = runs(sys.argv[2])
cost = lambda r: r["cloud_cost_usd"] + r["owned_cost_usd"] + r["egress_usd"]
assert 0 < at01["wait_mean_s"] and cost(at01) < cost(at0), "the check needs a wait that pays"
k = float(c["wait_policy"].split(":")[1])
assert c["meets"] and k >= 0.005, c["wait_policy"]
assert c["total_usd"] <= 1.01 * cost(at01) and c["total_usd"] < cost(at0), (c["total_usd"], cost(at01), cost(at0))
PY
ok $? "a target met only below compute:0.039 is searched on (${small}s: not compute:0, bursting all)"

# --capex asks what to buy: with dear GPUs, bursting beats buying the hall,
# but the hall already bought is sunk and keeping it is the cheaper plan.
sed 's/price_usd_per_gpu: 25000/price_usd_per_gpu: 400000/' "$T/fleet.yaml" >"$T/dear.yaml"
run_spw "$T/sunk.txt" "$T/sunk.err" plan --trace "$T/jobs.csv" --config "$T/dear.yaml" \
    --nodes 0,4 --waits none --target-wait mean:15m -q
run_spw "$T/capex.txt" "$T/capex.err" plan --trace "$T/jobs.csv" --config "$T/dear.yaml" \
    --nodes 0,4 --waits none --target-wait mean:15m -q --capex
contains "$T/sunk.txt" "cheapest meeting the target: 4 nodes" &&
    contains "$T/sunk.txt" "4 nodes of dc already owned: their capital is sunk" &&
    contains "$T/capex.txt" "cheapest meeting the target: 0 nodes" &&
    contains "$T/capex.txt" "--capex: nothing owned yet"
ok $? "owned GPUs are sunk by default (keep the 4 nodes); --capex asks what to buy (buy none)"

# The same answer on one thread and on two (the workers share the runs of no
# wait and each search reuses its own runs).
run_spw "$T/p1.json" "$T/p1.err" plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" \
    --nodes 0,2,4,6 --waits none,compute,runtime,constant --target-wait mean:15m \
    --horizon 3y -o json --threads 1 -q
run_spw "$T/p4.json" "$T/p4.err" plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" \
    --nodes 0,2,4,6 --waits none,compute,runtime,constant --target-wait mean:15m \
    --horizon 3y -o json --threads 2 -q
python3 - "$T/p1.json" "$T/p4.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("seconds", "threads"):
    a.pop(k); b.pop(k)
assert a == b
PY
ok $? "1 thread and 2 threads give identical configurations"

# The chosen configuration, replayed alone by a plain `spillway sim` of that
# fleet and wait policy, gives the same figures as the planner's run.
best=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
b = d["configurations"][d["best"]]; print(b["nodes"], b["wait_policy"])' "$T/p1.json")
sed "s/^    nodes: 4$/    nodes: ${best% *}/" "$T/fleet.yaml" >"$T/best.yaml"
# same_figures PLAN_JSON CONFIG WAIT ROW PAIRS: a plain `spillway sim` of
# CONFIG under WAIT gives the figures of the plan's row ROW (a Python
# expression over its JSON d), for each (plan key, sim key) of PAIRS; the
# sim's JSON is left in $T/same.json.
same_figures() {
    run_spw "$T/same.json" "$T/same.err" sim --trace "$T/jobs.csv" --config "$2" \
        --wait "$3" -o json
    python3 - "$1" "$T/same.json" "$4" "$5" <<'PY'
import json, sys
d, s = (json.load(open(p)) for p in sys.argv[1:3])
b = eval(sys.argv[3], {"d": d})
for pk, sk in eval(sys.argv[4]):
    assert abs(b[pk] - s[sk]) <= 1e-6 * max(1, abs(s[sk])), (pk, b[pk], s[sk])
PY
}
same_figures "$T/p1.json" "$T/best.yaml" "${best#* }" 'd["configurations"][d["best"]]' \
    '(("cloud_usd", "cloud_cost_usd"), ("owned_usd", "owned_cost_usd"),
      ("owned_idle_usd", "owned_idle_usd"), ("wait_mean_s", "wait_mean_s"),
      ("wait_p90_s", "wait_p90_s"), ("makespan_s", "makespan_s"), ("onprem_gpus", "onprem_gpus"))'
ok $? "the chosen configuration's figures are those of a plain spillway sim of it ($best)"

# predict:K (a wait policy beyond Starburst's) is searched like compute:K;
# at the same target it costs less here, and a plain sim of its setting
# replays the row, with every job it bursts for its predicted wait sent to
# the cloud at arrival (its wait is the 60 s boot alone).
run_spw "$T/pr.json" "$T/pr.err" plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" \
    --nodes 4 --waits compute,predict --target-wait mean:15m -o json -q
pr=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["configurations"]
print(c[1]["wait_policy"])' "$T/pr.json")
run_spw "$T/prs.json" "$T/prs.err" sim --trace "$T/jobs.csv" --config "$T/fleet.yaml" \
    --wait "$pr" -o json --jobs-out "$T/prs.csv"
python3 - "$T/pr.json" "$T/prs.json" "$T/prs.csv" <<'PY'
import csv, json, sys
d, s = (json.load(open(p)) for p in sys.argv[1:3])
comp, pred = d["configurations"]
assert comp["wait_policy"].startswith("compute:") and pred["wait_policy"].startswith("predict:"), d
assert comp["meets"] and pred["meets"], (comp, pred)
assert pred["decide_usd"] < comp["decide_usd"], (pred["decide_usd"], comp["decide_usd"])
for pk, sk in (("cloud_usd", "cloud_cost_usd"), ("wait_mean_s", "wait_mean_s")):
    assert abs(pred[pk] - s[sk]) <= 1e-6 * max(1, abs(s[sk])), (pk, pred[pk], s[sk])
rows = [r for r in csv.DictReader(open(sys.argv[3]))
        if r["reason"] == "its predicted on-prem start is past its wait budget"]
assert len(rows) > 10, len(rows)
assert all(r["placement"] != "onprem" and abs(float(r["wait_s"]) - 60) < 1e-6 for r in rows), rows[:3]
PY
ok $? "predict:K is searched by plan ($pr), costs less than compute:K at the same target, replays in sim, and bursts at arrival"

# How much to commit: a cloud commitment at $1.80 per GPU-hour (the
# on-demand price is $3), sized by --commit beside the node count.
sed 's/^cloud: .*/cloud:\n  price_usd_per_gpu_h: 3.0\n  boot_delay_s: 60\n  commitments: [{name: ri, gpus: 8, usd_per_gpu_h: 1.8}]/' \
    "$T/fleet.yaml" >"$T/commit.yaml"
run_spw "$T/c.json" "$T/c.err" plan --trace "$T/jobs.csv" --config "$T/commit.yaml" \
    --nodes 2,4 --waits compute --commit 0,16,32 --target-wait mean:15m --threads 1 -q -o json
json_check "$T/c.json" '
c = d["commit"]
assert [x["gpus"] for x in c] == [0, 16, 32], c
assert all(x["best"] >= 0 for x in c), c
for x in c:
    assert abs(x["total_usd"] - x["cloud_usd"] - x["owned_usd"] - x["commit_usd"] - x["egress_usd"]) < 1e-4, x
assert c[0]["commit_usd"] == 0 and c[0]["commit_idle_usd"] == 0, c[0]
assert all(x["commit_usd"] > x["commit_idle_usd"] > 0 for x in c[1:]), c
bc = d["best_commit"]
assert bc == min(range(3), key=lambda k: c[k]["decide_usd"]), bc
assert c[bc]["gpus"] > 0, "committing nothing is not the cheapest here"
p = d["plan"]
assert abs(p["configurations"][p["best"]]["decide_usd"] - c[bc]["decide_usd"]) < 1e-6'
ok $? "plan --commit: the cheapest commitment meeting the target beside the node count; totals add up (cloud + owned + committed + egress)"
choice=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
x = d["commit"][d["best_commit"]]; print(x["gpus"], x["nodes"], x["wait_policy"])' "$T/c.json")
set -- $choice
sed "s/^    nodes: 4$/    nodes: $2/; s/gpus: 8, usd_per_gpu_h/gpus: $1, usd_per_gpu_h/" \
    "$T/commit.yaml" >"$T/cbest.yaml"
same_figures "$T/c.json" "$T/cbest.yaml" "$3" 'd["commit"][d["best_commit"]]' \
    '(("cloud_usd", "cloud_cost_usd"), ("owned_usd", "owned_cost_usd"),
      ("commit_usd", "commit_cost_usd"), ("commit_idle_usd", "commit_idle_usd"),
      ("total_usd", "total_cost_usd"), ("wait_stat_s", "wait_mean_s"))' &&
    python3 - "$T/same.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["wait_mean_s"] <= 900, s["wait_mean_s"]
assert abs(s["commit_used_usd"] + s["commit_idle_usd"] - s["commit_cost_usd"]) < 1e-6
assert abs(s["commit_used_usd"] - 1.8 * s["commit_gpu_hours"]) < 1e-6 * s["commit_used_usd"]
PY
ok $? "spillway sim at the chosen commitment ($choice) gives the plan's figures and meets the target"
fails_with "--commit without a commitment in the config is explained" "add cloud.commitments" \
    plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" --commit 0,8

run_spw "$T/t.txt" "$T/t.err" plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" \
    --nodes 2:6:2 --target-wait p90:1h
contains "$T/t.txt" "cheapest meeting the target:" && contains "$T/t.txt" "configurations/s" &&
    contains "$T/t.err" "configurations in"
ok $? "the table names the cheapest fleet and the speed; progress goes to stderr"

fails_with "a bad --target-wait is explained" "mean:DURATION or p90:DURATION" \
    plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" --target-wait median:1h
fails_with "a bad --swing is explained" "--swing takes a percentage from 0 to 100" \
    plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" --swing 150
fails_with "an unknown --pool lists the pools" "it has dc" \
    plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" --pool nope
fails_with "--trace and --config are required" "needs --trace FILE and --config FILE" \
    plan --trace "$T/jobs.csv"
# --slurm (run on a cluster in tests/slurm/daemon.sh): what is refused
# before anything is submitted.
fails_with "--slurm-tasks without --slurm is refused" \
    "--slurm-tasks, --slurm-dir and --slurm-bin go with --slurm PARTITION" \
    plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" --slurm-tasks 2
fails_with "more array tasks than configurations are refused" \
    "--slurm-tasks: 7 tasks for 6 configurations (give 1 to 6)" \
    plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" --nodes 0,4 --slurm p --slurm-tasks 7
fails_with "--slurm-dir that does not exist is named" \
    "--slurm-dir $T/nowhere: No such file or directory (give a directory the Slurm nodes share)" \
    plan --trace "$T/jobs.csv" --config "$T/fleet.yaml" --slurm p --slurm-dir "$T/nowhere"

done_testing
