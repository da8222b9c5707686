#!/bin/sh
# spotjob.sh: `spillway sim --spot-job`: help, bad input (empty trace, zero
# or missing gap_seconds, negative counts, bad durations), an infeasible
# deadline, the table and JSON on a small synthetic trace, determinism, the
# checkpoint modes (continuous by default, every k, 0 = from scratch), and the
# Table 3 figures of docs/spot.md on the shared traces when they are there;
# --multi-region on three synthetic zones.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 24

# A synthetic trace: 10-minute ticks, spot up 70% of the time in runs.
python3 - "$T/trace.json" <<'PY'
import json, random, sys
r = random.Random(3)
data, on = [], 1
for _ in range(2000):
    if r.random() < 0.1:
        on = 1 if r.random() < 0.7 else 0
    data.append(on)
json.dump({"metadata": {"gap_seconds": 600}, "data": data}, open(sys.argv[1], "w"))
PY

run_spw "$T/out" "$T/err" sim --help
[ "$rc" -eq 0 ] && contains "$T/out" "--spot-job DURATION" && contains "$T/out" "--spot-policy LIST"
ok $? "sim --help describes the single spot job mode"

J="--spot-job 48h --deadline 60h --restart-overhead 0.2h"
# shellcheck disable=SC2086
run_spw "$T/t.out" "$T/t.err" sim $J --spot-trace "$T/trace.json" --offsets 50
[ "$rc" -eq 0 ] && contains "$T/t.out" "uniform-progress" && contains "$T/t.out" "greedy" \
    && contains "$T/t.out" "48.0+-0.0"
ok $? "the table has a row per policy, ondemand at 48 h (status $rc)"

# shellcheck disable=SC2086
run_spw "$T/j1.json" "$T/err" sim $J --spot-trace "$T/trace.json" --offsets 50 -o json
ok "$rc" "-o json exits 0"
json_check "$T/j1.json" '
p = {x["policy"]: x for x in d["policies"]}
assert set(p) == {"ondemand", "greedy", "uniform-progress"}, list(p)
assert all(x["runs"] == 50 for x in p.values())
assert p["greedy"]["missed"] == 0 and p["uniform-progress"]["missed"] == 0
assert abs(p["ondemand"]["cost_vs_ondemand"] - 1) < 1e-9
for x in p.values():
    assert abs(x["ondemand_h_mean"] + x["spot_h_mean"] - 48) < 1e-6, x
assert p["uniform-progress"]["cost_vs_ondemand"] < 1'
ok $? "JSON: three policies, no misses, progress adds up to 48 h, spot is cheaper"

# shellcheck disable=SC2086
"$SPW" sim $J --spot-trace "$T/trace.json" --offsets 50 -o json >"$T/j2.json"
cmp -s "$T/j1.json" "$T/j2.json"
ok $? "same seed, byte-identical JSON"

# shellcheck disable=SC2086
"$SPW" sim $J --spot-trace "$T/trace.json" --offsets 50 --seed 9 -o json >"$T/j3.json"
! cmp -s "$T/j1.json" "$T/j3.json"
ok $? "another seed, other start offsets"

# shellcheck disable=SC2086
run_spw "$T/out" "$T/err" sim $J --spot-trace "$T/trace.json" --spot-policy greedy -o json
json_check "$T/out" 'assert [x["policy"] for x in d["policies"]] == ["greedy"]'
ok $? "--spot-policy picks the policies"

run_spw "$T/out" "$T/err" sim --spot-job 48h --deadline 40h --spot-trace "$T/trace.json" \
    --offsets 10 -o json
[ "$rc" -eq 0 ] && contains "$T/err" "infeasible" && json_check "$T/out" '
assert all(x["infeasible"] == 10 and x["missed"] == 0 for x in d["policies"])'
ok $? "deadline shorter than the work: warned, counted as infeasible, no crash"

run_spw "$T/out" "$T/err" sim --spot-job 4h --deadline 10h --restart-overhead 30m \
    --checkpoint-interval 10m --spot-trace "$T/trace.json" --offsets 10
[ "$rc" -eq 0 ] && contains "$T/err" "longer than the checkpoint interval"
ok $? "restart overhead longer than the checkpoint interval: a warning"

# Checkpoint modes.  The default is continuous (the paper's model).
# shellcheck disable=SC2086
run_spw "$T/jc.json" "$T/err" sim $J --spot-trace "$T/trace.json" --offsets 50 -o json \
    --checkpoint-interval continuous
[ "$rc" -eq 0 ] && cmp -s "$T/j1.json" "$T/jc.json" && json_check "$T/jc.json" '
assert d["checkpoint"] == "continuous" and d["checkpoint_interval_s"] is None, d
assert all(x["lost_h_mean"] == 0 for x in d["policies"])'
ok $? "the default is --checkpoint-interval continuous: nothing lost (status $rc)"

# A job with room for spot even from scratch (deadline > 2 x work) on a
# trace whose spot runs last about 100 minutes: many preemptions.
K="--spot-job 8h --deadline 30h --restart-overhead 0.1h --spot-policy greedy,uniform-progress"
# shellcheck disable=SC2086
run_spw "$T/k0.json" "$T/err" sim $K --spot-trace "$T/trace.json" --offsets 100 -o json \
    --checkpoint-interval 0
# shellcheck disable=SC2086
run_spw "$T/kc.json" "$T/err" sim $K --spot-trace "$T/trace.json" --offsets 100 -o json
json_check "$T/k0.json" '
import json
c = {x["policy"]: x for x in json.load(open("'"$T/kc.json"'"))["policies"]}
assert d["checkpoint"] == "none" and d["checkpoint_interval_s"] == 0, d
for x in d["policies"]:
    y = c[x["policy"]]
    assert x["missed"] == 0 and y["missed"] == 0, (x, y)
    assert y["lost_h_mean"] == 0 and x["lost_h_mean"] > 0.5, (x, y)
    assert x["cost_usd_mean"] > y["cost_usd_mean"], (x, y)
g = {x["policy"]: x for x in d["policies"]}["greedy"]
assert g["preemptions_mean"] > 1 and g["spot_h_mean"] - g["lost_h_mean"] > 0, g'
ok $? "--checkpoint-interval 0: restarts from scratch lose work and cost more than continuous"

# shellcheck disable=SC2086
run_spw "$T/out" "$T/err" sim $K --spot-trace "$T/trace.json" --offsets 10 \
    --checkpoint-interval 0
[ "$rc" -eq 0 ] && contains "$T/out" "checkpoints: none: restart from scratch"
ok $? "the table names the checkpoint mode: none"
# shellcheck disable=SC2086
run_spw "$T/out" "$T/err" sim $K --spot-trace "$T/trace.json" --offsets 10 \
    --checkpoint-interval 2h
[ "$rc" -eq 0 ] && contains "$T/out" "checkpoints: every 2.00 h"
ok $? "the table names the checkpoint mode: every 2 h"

# shellcheck disable=SC2086
run_spw "$T/out" "$T/err" sim $J --spot-trace "$T/trace.json" --offsets 10 \
    --checkpoint-interval 0
[ "$rc" -eq 0 ] && contains "$T/err" "no policy takes spot" && contains "$T/out" "48.0+-0.0"
ok $? "from scratch with a deadline under twice the work: a note, everything on demand"

# Table 3 of docs/spot.md: the exact command and figures printed there.
D=../shared/data/spot-traces/availability/1-node/aws-10-26-2022
if [ -d "$D" ]; then
    set --
    for f in "$D"/*.json; do set -- "$@" --spot-trace "$f"; done
    run_spw "$T/t3.json" "$T/err" sim --spot-job 48h --deadline 60h --restart-overhead 0.2h \
        "$@" --offsets 300 -o json
    [ "$rc" -eq 0 ] && [ $# -eq 16 ] && json_check "$T/t3.json" '
p = {x["policy"]: x for x in d["policies"]}
r = lambda v: round(v, 1)
got = {k: (r(x["ondemand_h_mean"]), r(x["ondemand_h_sd"]), r(x["spot_h_mean"]),
           round(x["cost_usd_mean"], 2), x["missed"], x["runs"]) for k, x in p.items()}
want = {"ondemand": (48.0, 0.0, 0.0, 147.49, 0, 2400),
        "greedy": (29.1, 19.3, 18.9, 108.43, 0, 2400),
        "uniform-progress": (25.4, 17.1, 22.6, 103.11, 0, 2400)}
assert got == want, got'
    ok $? "Table 3 reproduction: the figures in docs/spot.md (status $rc)"
else
    skip "shared traces not found at $D"
fi

# Multi-region: three zones of the same days, the job may hop between them.
python3 - "$T" <<'PY'
import json, random, sys
for z in range(3):
    r = random.Random(10 + z)
    data, on = [], 1
    for _ in range(1500):
        if r.random() < 0.15:
            on = 1 if r.random() < 0.6 else 0
        data.append(on)
    json.dump({"metadata": {"gap_seconds": 600}, "data": data},
              open("%s/zone%d.json" % (sys.argv[1], z), "w"))
PY
run_spw "$T/mr.json" "$T/err" sim --spot-job 8h --deadline 12h --restart-overhead 20m \
    --multi-region --spot-trace "$T/zone0.json" --spot-trace "$T/zone1.json" \
    --spot-trace "$T/zone2.json" --region-prices 0.9:3,0.8:3,1:2.5 --egress-usd 0.5 \
    --spot-policy greedy,uniform-progress --offsets 30 -o json
[ "$rc" -eq 0 ] && json_check "$T/mr.json" '
rows = d["rows"]
assert [r["kind"] for r in rows] == ["single"] * 3 + ["multi"] + ["single"] * 3 + ["multi", "optimum"]
assert [x["name"] for x in d["regions"]] == ["zone0", "zone1", "zone2"]
assert d["regions"][2] == {"name": "zone2", "spot_usd_per_h": 1, "ondemand_usd_per_h": 2.5}
opt = rows[-1]["cost_usd_mean"]
assert all(r["runs"] == 30 and r["missed"] == 0 for r in rows), rows
assert all(r["cost_usd_mean"] >= opt - 1e-9 for r in rows), rows
m = [r for r in rows if r["kind"] == "multi"]
assert all(r["moves_mean"] > 0 and abs(r["egress_usd_mean"] - 0.5 * r["moves_mean"]) < 1e-5 for r in m), m'
ok $? "--multi-region: each policy per zone and across zones, then the optimum; no misses, none below the optimum, egress = moves x price (status $rc)"
fails_with "--egress-usd needs --multi-region" "--egress-usd applies to --multi-region" \
    sim --spot-job 8h --deadline 12h --spot-trace "$T/zone0.json" --egress-usd 1

printf '{"metadata":{"gap_seconds":600},"data":[]}' >"$T/empty.json"
fails_with "an empty trace is refused with its name" "empty.json: \"data\" is empty" \
    sim --spot-job 1h --deadline 2h --spot-trace "$T/empty.json"
printf '{"metadata":{"gap_seconds":0},"data":[1,0]}' >"$T/gap0.json"
fails_with "gap_seconds 0 is refused" "gap_seconds is 0" \
    sim --spot-job 1h --deadline 2h --spot-trace "$T/gap0.json"
printf '{"metadata":{},"data":[1,0]}' >"$T/nogap.json"
fails_with "a missing gap_seconds is refused" "gap_seconds is missing" \
    sim --spot-job 1h --deadline 2h --spot-trace "$T/nogap.json"
printf '{"metadata":{"gap_seconds":600},\n"data":[1,-1]}' >"$T/neg.json"
fails_with "a negative count is refused with its index" "data[1] is -1" \
    sim --spot-job 1h --deadline 2h --spot-trace "$T/neg.json"
fails_with "a bad duration names the option" "--deadline takes a duration" \
    sim --spot-job 1h --deadline soon --spot-trace "$T/trace.json"
fails_with "--spot-job without --deadline" "needs --deadline" \
    sim --spot-job 1h --spot-trace "$T/trace.json"
fails_with "an unknown policy lists the known ones" "use ondemand, greedy or uniform-progress" \
    sim --spot-job 1h --deadline 2h --spot-trace "$T/trace.json" --spot-policy fast

done_testing
