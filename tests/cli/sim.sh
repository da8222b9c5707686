#!/bin/sh
# sim.sh: `spillway sim` on a generated trace: JSON report, determinism,
# --compare, and the per-job and time-series CSV outputs.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 14

"$SPW" gen --jobs 400 --rate 20 --runtime lognormal:1800:1.2 --seed 11 >"$T/jobs.csv"

run_spw "$T/r1.json" "$T/err" sim --trace "$T/jobs.csv" -o json -q
ok "$rc" "sim -o json exits 0"

json_check "$T/r1.json" '
keys = """jobs jobs_onprem jobs_cloud jobs_skipped cloud_cost_usd onprem_cost_usd
cloud_gpu_hours onprem_gpu_hours wait_mean_s wait_p50_s wait_p90_s wait_p99_s
jct_mean_s jct_p50_s jct_p90_s jct_p99_s onprem_utilization queue_max makespan_s""".split()
missing = [k for k in keys if k not in d]
assert not missing, "missing keys: %s" % missing
bad = [k for k in keys if not isinstance(d[k], (int, float)) or isinstance(d[k], bool)]
assert not bad, "not numbers: %s" % bad'
ok $? "the JSON report has every required key, all numbers"

json_check "$T/r1.json" '
assert d["jobs"] == 400, d["jobs"]
assert d["jobs_onprem"] + d["jobs_cloud"] == d["jobs"], (d["jobs_onprem"], d["jobs_cloud"])'
ok $? "jobs_onprem + jobs_cloud == jobs == 400"

json_check "$T/r1.json" '
assert d["wait_p50_s"] <= d["wait_p90_s"] <= d["wait_p99_s"]
assert d["jct_p50_s"] <= d["jct_p90_s"] <= d["jct_p99_s"]
assert 0 <= d["onprem_utilization"] <= 1
assert d["jct_mean_s"] >= d["wait_mean_s"] >= 0
assert d["makespan_s"] > 0'
ok $? "quantiles are ordered and utilization is within 0..1"

# Determinism: two runs give the same report, sim_seconds (wall time) aside.
"$SPW" sim --trace "$T/jobs.csv" -o json -q >"$T/r2.json"
no_wall_time() { sed 's/, *"sim_seconds": *[-+0-9.eE]*//g' "$1"; }
no_wall_time "$T/r1.json" >"$T/r1.s"
no_wall_time "$T/r2.json" >"$T/r2.s"
cmp -s "$T/r1.s" "$T/r2.s" && ! grep -q sim_seconds "$T/r1.s"
ok $? "two runs give byte-identical JSON (without sim_seconds)"

# --compare: one object per policy, in order.
run_spw "$T/cmp.json" "$T/err" sim --trace "$T/jobs.csv" --compare never,none,compute:0.25 -o json -q
ok "$rc" "sim --compare never,none,compute:0.25 -o json exits 0"
json_check "$T/cmp.json" '
assert isinstance(d, list) and len(d) == 3, "expected a list of 3, got %r" % type(d)
assert [r["wait_policy"] for r in d] == ["never", "none", "compute:0.25"], [r.get("wait_policy") for r in d]'
ok $? "--compare gives 3 objects, in the order asked"
json_check "$T/cmp.json" '
assert d[0]["cloud_cost_usd"] == 0 and d[0]["jobs_cloud"] == 0, d[0]["cloud_cost_usd"]
assert d[1]["cloud_cost_usd"] > 0, "none never burst on an overloaded fleet"
assert all(r["jobs_onprem"] + r["jobs_cloud"] == r["jobs"] for r in d)'
ok $? "never has no cloud cost; none bursts; every policy places every job"

"$SPW" sim --trace "$T/jobs.csv" --compare never,none,compute:0.25 -o json -q >"$T/cmp2.json"
no_wall_time "$T/cmp.json" >"$T/c1.s"
no_wall_time "$T/cmp2.json" >"$T/c2.s"
cmp -s "$T/c1.s" "$T/c2.s"
ok $? "--compare output is deterministic too"

# Per-job and time-series CSVs.
run_spw "$T/r3.json" "$T/err" sim --trace "$T/jobs.csv" -o json -q \
    --jobs-out "$T/perjob.csv" --timeseries-out "$T/ts.csv" --step 600
ok "$rc" "sim with --jobs-out and --timeseries-out exits 0"
[ "$(head -n 1 "$T/perjob.csv")" = "id,submit_s,start_s,end_s,placement,wait_s,cost_usd" ] \
    && [ "$(wc -l <"$T/perjob.csv")" -eq 401 ]
ok $? "--jobs-out has the documented header and one row per job"
awk -F, 'NR > 1 && !($5 ~ /^(onprem|cloud)/) { bad = 1 } END { exit bad }' "$T/perjob.csv"
ok $? "every job row says onprem or cloud"

[ "$(head -n 1 "$T/ts.csv")" = "t_s,queued,onprem_busy_gpus,cloud_gpus,cloud_usd_per_h" ]
ok $? "--timeseries-out has the documented header"
# One sample per step from the first submit through the last end.
rows=$(($(wc -l <"$T/ts.csv") - 1))
json_check "$T/r3.json" "
import math
want = math.floor(d['makespan_s'] / 600) + 1
assert abs($rows - want) <= 1, 'timeseries rows %d, makespan %.0f s / 600 s step wants %d' % ($rows, d['makespan_s'], want)"
ok $? "--timeseries-out has one row per 600 s step over the makespan ($rows rows)"

done_testing
