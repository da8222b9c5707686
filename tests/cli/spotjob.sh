#!/bin/sh
# spotjob.sh: `spillway sim --spot-job`: help, bad input (empty trace, zero
# or missing gap_seconds, negative counts, bad durations), an infeasible
# deadline, the table and JSON on a small synthetic trace, determinism.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 16

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
