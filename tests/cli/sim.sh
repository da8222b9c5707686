#!/bin/sh
# sim.sh: `spillway sim` on a generated trace: JSON report, determinism,
# --compare, and the per-job and time-series CSV outputs; governance: trace
# columns team/class/data, the per-team JSON and table, --compare gravity;
# spot, restarts and failures: the config sections, the trace columns, every
# flag, --compare of spot policies and the errors for bad values and files.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 81

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
[ "$(head -n 1 "$T/perjob.csv")" = "id,submit_s,start_s,end_s,placement,wait_s,cost_usd,reason,held,spot,restarts,lost_s,outcome" ] \
    && [ "$(wc -l <"$T/perjob.csv")" -eq 401 ]
ok $? "--jobs-out has the documented header and one row per job"
awk -F, 'NR > 1 && $8 == "" { bad = 1 } END { exit bad }' "$T/perjob.csv"
ok $? "every job row gives the reason for its placement"
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

# ---- governance ------------------------------------------------------------------
# A self-contained fleet: one 4-GPU pool holding dataset ds (100 GB, leaving
# on-prem costs $0.05/GB) with a replica in aws:us-west-2; two 1-GPU offers,
# us-east-1 cheaper than us-west-2.  Gravity on sends bursts to the replica.
cat >"$T/offers.csv" <<'CSV'
provider,region,zone,instance_type,gpu,gpus,vcpus,mem_gib,ondemand_usd_per_h,spot_usd_per_h,source
aws,us-east-1,a,g1.x,A100,1,8,64,2.00,,test
aws,us-west-2,a,g1.x,A100,1,8,64,2.10,,test
CSV
cat >"$T/gov.yaml" <<'YAML'
onprem:
  - {name: dc, nodes: 1, gpus_per_node: 4, gpu: A100, cost_usd_per_gpu_h: 1.0}
cloud: {offers: offers.csv, boot_delay_s: 0}
policy: {wait: none}
teams:
  - {name: ml, monthly_usd: 100000}
  - {name: tight, monthly_usd: 20, on_exhausted: reject}
data:
  cache_ttl_s: 0
  egress_usd_per_gb: {onprem: 0.05}
  datasets:
    - {name: ds, size_gb: 100, home: dc, replicas: ["aws:us-west-2"]}
sim: {start: 2026-11-01T00:00:00Z}
YAML
"$SPW" gen --jobs 60 --rate 30 --runtime exp:3600 --gpus 1:1 --seed 3 |
    awk -F, 'BEGIN { OFS = "," }
             NR == 1 { print $0, "team", "class", "data"; next }
             { print $0, (NR % 5 == 0 ? "tight" : NR % 7 == 0 ? "ghost" : "ml"),
                         (NR % 3 == 0 ? "experiment" : ""), (NR % 2 == 0 ? "ds" : "") }' \
    >"$T/gov-jobs.csv"

run_spw "$T/g.json" "$T/g.err" sim --trace "$T/gov-jobs.csv" --config "$T/gov.yaml" -o json
ok "$rc" "sim with teams, a dataset and team/class/data columns exits 0"
json_check "$T/g.json" '
g = d["governance"]
keys = """active jobs_held jobs_rejected jobs_never_ran jobs_onprem_by_residency
jobs_onprem_only_budget jobs_stopped_max_runtime egress_gb egress_usd peak_cloud_usd_per_h
peak_cloud_gpus teams""".split()
missing = [k for k in keys if k not in g]
assert not missing, "missing: %s" % missing
assert g["active"] is True
teams = [t["team"] for t in g["teams"]]
assert teams == [None, "ml", "tight"], teams
for t in g["teams"]:
    for k in "budget_usd period jobs jobs_held jobs_rejected cloud_usd onprem_usd egress_usd egress_gb budget_use".split():
        assert k in t, (t["team"], k)
assert sum(t["jobs"] for t in g["teams"]) == d["jobs"] == 60
assert d["jobs_onprem"] + d["jobs_cloud"] + g["jobs_rejected"] == 60
assert abs(d["total_cost_usd"] - d["cloud_cost_usd"] - d["owned_cost_usd"] - d["egress_usd"]) < 1e-6'
ok $? "-o json: governance section with every key, one entry per team (null = no team)"
json_check "$T/g.json" '
t = [t for t in d["governance"]["teams"] if t["team"] == "tight"][0]
assert t["budget_usd"] == 20 and t["period"] == "month"
assert t["cloud_usd"] + t["egress_usd"] <= 20 + 1e-6, t
assert t["budget_use"] <= 1 + 1e-9, t
assert t["jobs_rejected"] > 0, "the $20 team should run out: %r" % t'
ok $? "the \$20 team stays within its budget and has jobs rejected"
contains "$T/g.err" "jobs of teams not in the config: ghost"
ok $? "one warning line names the team the config lacks"

# ---- capacity errors --------------------------------------------------------------
# The same two offers, no on-prem pool: us-east-1 (the cheaper) refuses half
# its acquisitions for 10 minutes each; the jobs it refuses run in us-west-2
# at once.  Without the entry nothing is refused and none runs there.
cat >"$T/ce.yaml" <<'YAML'
cloud:
  offers: offers.csv
  boot_delay_s: 0
  capacity_errors:
    - {region: us-east-1, rate: 0.5, block_s: 600}
policy: {wait: none}
YAML
"$SPW" gen --jobs 80 --rate 20 --runtime exp:1800 --gpus 1:1 --seed 5 >"$T/ce-jobs.csv"
run_spw "$T/ce.json" "$T/ce.err" sim --trace "$T/ce-jobs.csv" --config "$T/ce.yaml" -o json \
    --jobs-out "$T/ce-jobs-out.csv"
ok "$rc" "sim with cloud.capacity_errors exits 0"
json_check "$T/ce.json" '
n = d["capacity_errors"]
assert 0 < n < 80, n
assert d["jobs_cloud"] == 80, d["jobs_cloud"]'
r1=$?
west=$(grep -c "us-west-2" "$T/ce-jobs-out.csv")
[ "$r1" = 0 ] && [ "$west" -gt 0 ]
ok $? "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["capacity_errors"])' \
    "$T/ce.json") acquisitions refused, every job still runs; $west ran in us-west-2"
run_spw "$T/ce.out" "$T/ce.err" sim --trace "$T/ce-jobs.csv" --config "$T/ce.yaml"
contains "$T/ce.out" "capacity errors"
ok $? "the table reports them"

run_spw "$T/g.txt" "$T/g.err" sim --trace "$T/gov-jobs.csv" --config "$T/gov.yaml" -q
contains "$T/g.txt" "governance (data gravity on):" && grep -E '^  tight +\$20\.00/month' "$T/g.txt" >/dev/null
ok $? "the table has a governance section and a row per team"

run_spw "$T/gc.txt" "$T/gc.err" sim --trace "$T/gov-jobs.csv" --config "$T/gov.yaml" \
    --compare gravity -q
ok "$rc" "--compare gravity exits 0"
grep -E '^data gravity +on +off$' "$T/gc.txt" >/dev/null && contains "$T/gc.txt" "egress GB" &&
    contains "$T/gc.txt" "wait p90"
ok $? "--compare gravity prints on and off side by side with egress and waits"
run_spw "$T/gc.json" "$T/gc.err" sim --trace "$T/gov-jobs.csv" --config "$T/gov.yaml" \
    --compare gravity -o json -q
json_check "$T/gc.json" '
assert [r["gravity"] for r in d] == [True, False], [r["gravity"] for r in d]
on, off = d
assert off["egress_usd"] > 0, "gravity off should copy data to us-east-1"
assert on["egress_usd"] <= off["egress_usd"], (on["egress_usd"], off["egress_usd"])
assert on["wait_policy"] == off["wait_policy"] == "none"'
ok $? "--compare gravity -o json: gravity on pays no more egress than off"

fails_with "--gravity and --compare gravity do not mix" "do not mix" \
    sim --trace "$T/gov-jobs.csv" --config "$T/gov.yaml" --compare gravity --gravity off
fails_with "--gravity takes on or off" "--gravity takes on or off" \
    sim --trace "$T/gov-jobs.csv" --config "$T/gov.yaml" --gravity maybe
run_spw "$T/goff.json" "$T/goff.err" sim --trace "$T/gov-jobs.csv" --config "$T/gov.yaml" \
    --gravity off -o json -q
json_check "$T/goff.json" 'assert d["gravity"] is False'
ok $? "--gravity off runs with gravity off"

printf 'id,submit_s,gpus,runtime_s,data\na,0,1,10,cifar\n' >"$T/baddata.csv"
fails_with "a dataset the config lacks is an error naming it and its line" \
    "dataset 'cifar' (first at line 2) is not in the config's data: datasets (known: ds)" \
    sim --trace "$T/baddata.csv" --config "$T/gov.yaml"

# ---- spot, restarts and failures: the command line ---------------------------------
# A self-contained fleet: one 4-GPU pool, two 1-GPU offers with spot prices,
# one with a measured-style availability trace, the other with a rate.
cat >"$T/spot-offers.csv" <<'CSV'
provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h
aws,us-east-1,use1-az1,g1.x,A100,1,3.00,0.90
aws,us-west-2,usw2-az1,g1.x,A100,1,3.00,1.00
CSV
printf '{"metadata": {"gap_seconds": 600}, "data": [1, 1, 0, 0, 1, 1, 1, 0]}\n' >"$T/avail.json"
printf 'node,down_s,up_s\ndc/0,1800,2h\ndc/1,1h,\n' >"$T/failures.csv"
cat >"$T/spot.yaml" <<'YAML'
onprem:
  - {name: dc, nodes: 2, gpus_per_node: 2, gpu: A100, mtbf: 30d, mttr: 4h}
cloud: {offers: spot-offers.csv}
policy: {wait: none}
spot:
  policy: greedy
  restart_overhead_s: 2m
  checkpoint_interval_s: 10m
  availability:
    - {zone: use1-az1, trace: avail.json, start_offset: 1h}
    - {region: us-west-2, interruption: "10-15%"}
failures: {file: failures.csv}
YAML
"$SPW" gen --jobs 80 --rate 40 --runtime exp:3600 --gpus 1:0.7,2:0.3 --seed 8 |
    awk -F, 'BEGIN { OFS = "," }
             NR == 1 { print $0, "deadline_s", "spot", "spot_policy", "checkpoint_interval_s"; next }
             { print $0, (NR % 3 == 0 ? $2 + 3 * $4 : ""), (NR % 7 == 0 ? "never" : ""),
                         (NR % 5 == 0 ? "uniform-progress" : ""),
                         (NR % 4 == 0 ? "continuous" : NR % 6 == 0 ? "5m" : "") }' \
    >"$T/spot-jobs.csv"

run_spw "$T/s.json" "$T/s.err" sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" -o json -q
[ "$rc" -eq 0 ] || diag "$(cat "$T/s.err")"
ok "$rc" "sim with spot:, failures:, pool mtbf and the spot trace columns exits 0"
run_spw "$T/s2.json" "$T/s2.err" sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" -o json -q \
    --spot-policy uniform-progress --restart-overhead 5m --checkpoint-interval continuous \
    --max-restarts 3 --recovery next_region --failover burst --failures "$T/failures.csv" \
    --seed 9
[ "$rc" -eq 0 ] || diag "$(cat "$T/s2.err")"
ok "$rc" "every spot and failure flag is accepted"
run_spw "$T/s3.json" "$T/s3.err" sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" -o json -q \
    --checkpoint-interval 0 --max-restarts unlimited
ok "$rc" "--checkpoint-interval 0 (restart from scratch) and --max-restarts unlimited"
run_spw "$T/sc.json" "$T/sc.err" sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" -o json -q \
    --compare ondemand,greedy,uniform-progress
json_check "$T/sc.json" 'assert isinstance(d, list) and len(d) == 3, d'
ok $? "--compare ondemand,greedy,uniform-progress runs one simulation per spot policy"
run_spw "$T/sc.txt" "$T/sc.err" sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" -q \
    --compare greedy,ondemand
grep -E '^spot policy +greedy +ondemand$' "$T/sc.txt" >/dev/null
ok $? "--compare of spot policies prints them side by side, in the order asked"
"$SPW" sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" -o json -q --seed 9 >"$T/d1.json"
"$SPW" sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" -o json -q --seed 9 >"$T/d2.json"
no_wall_time "$T/d1.json" >"$T/d1.s"
no_wall_time "$T/d2.json" >"$T/d2.s"
cmp -s "$T/d1.s" "$T/d2.s"
ok $? "with spot capacity and failures, the same seed gives byte-identical JSON"

run_spw "$T/w.out" "$T/w.err" sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" -o json \
    --restart-overhead 20m
[ "$rc" -eq 0 ] &&
    contains "$T/w.err" "--restart-overhead (1200 s) is longer than spot.checkpoint_interval_s (600 s)"
ok $? "a restart overhead longer than the checkpoint interval: a warning naming both"

# Bad values on the command line: exit 2 and what to write.
fails2() {
    desc=$1 text=$2
    shift 2
    run_spw "$T/f2.out" "$T/f2.err" "$@"
    [ "$rc" -eq 2 ] && contains "$T/f2.err" "$text"
    ok $? "$desc (exit $rc)"
}
fails2 "--spot-policy with an unknown policy" "unknown spot policy 'cheapest'" \
    sim --trace "$T/spot-jobs.csv" --spot-policy cheapest
fails2 "--spot-policy with two policies in a trace replay" "--spot-policy takes one policy" \
    sim --trace "$T/spot-jobs.csv" --spot-policy greedy,ondemand
fails2 "--checkpoint-interval soon" "0 = restart from scratch) or continuous" \
    sim --trace "$T/spot-jobs.csv" --checkpoint-interval soon
fails2 "--max-restarts -1" "--max-restarts takes a count >= 0 or unlimited" \
    sim --trace "$T/spot-jobs.csv" --max-restarts -1
fails2 "--recovery anywhere" "'anywhere'" sim --trace "$T/spot-jobs.csv" --recovery anywhere
fails2 "--failover panic" "'panic'" sim --trace "$T/spot-jobs.csv" --failover panic
fails2 "--deadline without --spot-job" "--deadline goes with --spot-job" \
    sim --trace "$T/spot-jobs.csv" --deadline 60h
fails2 "--failures with --spot-job" "--failures applies to a trace replay" \
    sim --spot-job 48h --deadline 60h --spot-trace "$T/avail.json" --failures "$T/failures.csv"
fails2 "--compare of spot policies with --spot-policy" "do not mix" \
    sim --trace "$T/spot-jobs.csv" --compare greedy,ondemand --spot-policy greedy

# Bad files: exit 1, FILE:LINE and the value.
printf 'node,down_s,up_s\ndc/0,10,20\ndc/2,5,\n' >"$T/badfail.csv"
fails_with "--failures naming a node the pool lacks" \
    "badfail.csv:3: column 'node': pool 'dc' has nodes dc/0 to dc/1; got 'dc/2'" \
    sim --trace "$T/spot-jobs.csv" --config "$T/spot.yaml" --failures "$T/badfail.csv"
printf 'id,submit_s,gpus,runtime_s,checkpoint_interval_s\na,0,1,60,5m\nb,0,1,60,sometimes\n' \
    >"$T/badckpt.csv"
fails_with "a bad checkpoint_interval_s cell names the file, line and value" \
    "badckpt.csv:3: column 'checkpoint_interval_s': expected seconds or a duration" \
    sim --trace "$T/badckpt.csv" --config "$T/spot.yaml"
sed 's/zone: use1-az1, trace/zone: use1-az9, trace/' "$T/spot.yaml" >"$T/nozone.yaml"
fails_with "an availability entry matching no offer names the config line" \
    "nozone.yaml:10:7: this availability entry (zone use1-az9) matches no cloud offer" \
    sim --trace "$T/spot-jobs.csv" --config "$T/nozone.yaml"
printf '{"metadata": {"gap_seconds": 0}, "data": [1]}\n' >"$T/zerogap.json"
sed 's/trace: avail.json/trace: zerogap.json/' "$T/spot.yaml" >"$T/zerogap.yaml"
fails_with "an availability trace with gap_seconds 0 names the config line and the trace" \
    "zerogap.json: metadata.gap_seconds is 0" \
    sim --trace "$T/spot-jobs.csv" --config "$T/zerogap.yaml"

# The single spot job keeps the paper's model by default; continuous and 0 work.
run_spw "$T/sj.json" "$T/sj.err" sim --spot-job 4h --deadline 6h --spot-trace "$T/avail.json" \
    --offsets 5 -o json -q
json_check "$T/sj.json" 'assert d["checkpoint"] == "continuous", d["checkpoint"]'
ok $? "--spot-job defaults to continuous checkpoints (the paper's model)"
run_spw "$T/sj0.json" "$T/sj0.err" sim --spot-job 4h --deadline 6h --spot-trace "$T/avail.json" \
    --offsets 5 -o json -q --checkpoint-interval 0
json_check "$T/sj0.json" 'assert d["checkpoint"] == "none" and d["checkpoint_interval_s"] == 0, d'
ok $? "--spot-job --checkpoint-interval 0 means restart from scratch"

# The egress cap holds every egress dollar of the team (issue 24), copies
# into pools too.  Dataset cds lives only in aws:us-west-2 ($0.09/GB out),
# 50 GB, no cache: a job on-prem copies it into the pool ($4.50), and so
# would a burst to us-east-1; team ml's $5 max_cloud_egress_usd_per_month
# has room for one such copy.  The first job copies it into the pool; the
# others, finding no copy they may pay for, burst to us-west-2 where the
# data is (the old build copied into the pool for each on-prem job).
cat >"$T/egress.yaml" <<'YAML'
onprem:
  - {name: dc, nodes: 1, gpus_per_node: 2, gpu: A100, cost_usd_per_gpu_h: 1.0}
cloud: {offers: offers.csv, boot_delay_s: 0}
policy: {wait: none}
teams:
  - {name: ml, max_cloud_egress_usd_per_month: 5, on_exhausted: onprem_only}
data:
  cache_ttl_s: 0
  datasets:
    - {name: cds, size_gb: 50, home: "aws:us-west-2"}
sim: {start: 2026-11-01T00:00:00Z}
YAML
"$SPW" gen --jobs 40 --rate 60 --runtime exp:3600 --gpus 1:1 --seed 5 |
    awk -F, 'BEGIN { OFS = "," } NR == 1 { print $0, "team", "data"; next } { print $0, "ml", "cds" }' \
    >"$T/egress-jobs.csv"
run_spw "$T/eg.json" "$T/eg.err" sim --trace "$T/egress-jobs.csv" --config "$T/egress.yaml" --gravity off -o json -q
json_check "$T/eg.json" '
t = [t for t in d["governance"]["teams"] if t["team"] == "ml"][0]
assert abs(t["cloud_egress_usd"] + t["onprem_egress_usd"] - t["egress_usd"]) < 1e-9, t
assert t["egress_usd"] <= 5 + 1e-9, t
assert abs(t["onprem_egress_usd"] - 4.5) < 1e-9, t
assert t["jobs"] == 40 and d["jobs_onprem"] + d["jobs_cloud"] == 40, t'
ok $? "max_cloud_egress_usd_per_month holds all of the team's egress to \$5, the copy into the pool included"
run_spw "$T/eg.txt" "$T/eg.err" sim --trace "$T/egress-jobs.csv" --config "$T/egress.yaml" --gravity off -q
grep -E '^  ml .* \$4\.50 / \$5\.00 +\$4\.50$' "$T/eg.txt" >/dev/null &&
    contains "$T/eg.txt" "into pools: the part that copied data into on-prem pools"
ok $? "the team table shows all egress against the cap and the part copied into pools"
sed 's/max_cloud_egress_usd_per_month/max_egress_usd_per_month/' "$T/egress.yaml" >"$T/egress-old.yaml"
run_spw "$T/ego.json" "$T/ego.err" sim --trace "$T/egress-jobs.csv" --config "$T/egress-old.yaml" --gravity off -o json -q
json_check "$T/ego.json" '
t = [t for t in d["governance"]["teams"] if t["team"] == "ml"][0]
assert abs(t["egress_usd"] - 4.5) < 1e-9, t'
ok $? "the old name max_egress_usd_per_month is still read as the same cap"
sed 's/max_cloud_egress_usd_per_month: 5/max_cloud_egress_usd_per_month: 5, max_egress_usd_per_month: 5/' \
    "$T/egress.yaml" >"$T/egress-both.yaml"
fails_with "both names of the egress cap are refused" "give only max_cloud_egress_usd_per_month" \
    sim --trace "$T/egress-jobs.csv" --config "$T/egress-both.yaml"

# On-prem cost: the owned model and the simple form.  The pool of
# docs/config.md's example (8 x 8 GPUs): a busy GPU-hour is $1.0554, an idle
# one $0.9579; the same trace on 8 and on 80 nodes (simple form, $1.10).
cat >"$T/owned.yaml" <<'YAML'
onprem:
  - name: dc1
    nodes: 8
    gpus_per_node: 8
    owned: {price_usd_per_gpu: 25000, years: 4, gpu_busy_w: 800, gpu_idle_w: 150, pue: 1.5,
            usd_per_kwh: 0.10, node_usd_per_month: 1300}
policy: {wait: never}
YAML
run_spw "$T/ow.json" "$T/ow.err" sim --trace "$T/jobs.csv" --config "$T/owned.yaml" -o json -q
json_check "$T/ow.json" '
busy = 25000 / (4 * 8766) + 1300 / 730.5 / 8 + 0.8 * 1.5 * 0.10
idle = busy - (0.8 - 0.15) * 1.5 * 0.10
h = d["makespan_s"] / 3600
used = d["onprem_cost_usd"] / busy
assert abs(d["owned_used_usd"] - d["onprem_cost_usd"]) < 1e-6 * d["owned_used_usd"], d
assert abs(d["owned_idle_usd"] - (64 * h - used) * idle) < 1e-6 * d["owned_idle_usd"], d
assert abs(d["owned_cost_usd"] - d["owned_used_usd"] - d["owned_idle_usd"]) < 1e-6
assert abs(d["total_cost_usd"] - d["cloud_cost_usd"] - d["owned_cost_usd"] - d["egress_usd"]) < 1e-6
assert abs(d["cost_per_useful_gpu_h"] * d["useful_gpu_hours"] - d["total_cost_usd"]) < 1e-6'
ok $? "owned: model: used GPU-hours at the busy rate, the rest at the idle rate, every GPU for the makespan"
sed 's/^    nodes: 8$/    nodes: NODES/; s/^    owned: .*/    cost_usd_per_gpu_h: 1.10/; /^            usd_per_kwh/d' \
    "$T/owned.yaml" >"$T/simple.tmpl"
sed 's/NODES/8/' "$T/simple.tmpl" >"$T/s8.yaml"
sed 's/NODES/80/' "$T/simple.tmpl" >"$T/s80.yaml"
run_spw "$T/s8.json" "$T/s8.err" sim --trace "$T/jobs.csv" --config "$T/s8.yaml" -o json -q
run_spw "$T/s80.json" "$T/s80.err" sim --trace "$T/jobs.csv" --config "$T/s80.yaml" -o json -q
python3 - "$T/s8.json" "$T/s80.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert abs(a["onprem_cost_usd"] - b["onprem_cost_usd"]) < 1e-6, (a["onprem_cost_usd"], b["onprem_cost_usd"])
assert abs(a["owned_cost_usd"] - 64 * 1.10 * a["makespan_s"] / 3600) < 1e-4, a["owned_cost_usd"]
assert abs(b["owned_cost_usd"] - 640 * 1.10 * b["makespan_s"] / 3600) < 1e-4, b["owned_cost_usd"]
assert b["owned_cost_usd"] > 5 * a["owned_cost_usd"], (a["owned_cost_usd"], b["owned_cost_usd"])
PY
ok $? "64 vs 640 owned GPUs, wait never: the same GPU-hours used, ten times the GPUs cost more"
"$SPW" sim --trace "$T/jobs.csv" --config "$T/s8.yaml" -q >"$T/s8.txt" 2>&1 &&
    contains "$T/s8.txt" "on-prem owned" && contains "$T/s8.txt" "idle (every owned GPU" &&
    contains "$T/s8.txt" "per useful GPU-hour"
ok $? "the table shows owned cost, used vs idle, and the cost per useful GPU-hour"
sed 's/^    owned: {/    cost_usd_per_gpu_h: 1\n    owned: {/' "$T/owned.yaml" >"$T/both.yaml"
fails_with "cost_usd_per_gpu_h and owned: do not mix" "not both" \
    sim --trace "$T/jobs.csv" --config "$T/both.yaml"
sed 's/pue: 1.5/pue: 0.9/' "$T/owned.yaml" >"$T/pue.yaml"
fails_with "a PUE below 1 is refused with its line" "pue.yaml:5:" \
    sim --trace "$T/jobs.csv" --config "$T/pue.yaml"

# performance: in the config: a reference, the fleet's throughputs and a job
# class's own.  Offers: T4 at $0.60/h, A100 at $3/h (offers.csv above has
# A100s only, so a file of its own).
cat >"$T/perf-offers.csv" <<'CSV'
provider,region,zone,instance_type,gpu,gpus,vcpus,mem_gib,ondemand_usd_per_h,spot_usd_per_h,source
aws,us-east-1,a,t4.x,T4,1,8,64,0.60,,test
aws,us-east-1,a,a100.x,A100,1,8,64,3.00,,test
CSV
cat >"$T/perf.yaml" <<'YAML'
cloud: {offers: perf-offers.csv, boot_delay_s: 0}
policy: {wait: none}
performance:
  reference: A100
  throughput: {T4: 0.16}
  classes: {inference: {T4: 0.5}}
YAML
printf 'id,submit_s,gpus,runtime_s,class\ninf,0,1,3600,inference\ntrain,0,1,3600,training\n' >"$T/perf-jobs.csv"
run_spw "$T/perf.txt" "$T/perf.err" sim --trace "$T/perf-jobs.csv" --config "$T/perf.yaml" -q \
    --jobs-out "$T/perf-out.csv"
grep -q '^inf,0\.000,0\.000,7200\.000,cloud:aws:us-east-1:t4\.x\*1,' "$T/perf-out.csv" &&
    grep -q '^train,0\.000,0\.000,3600\.000,cloud:aws:us-east-1:a100\.x\*1,' "$T/perf-out.csv"
ok $? "performance: classes: an inference job takes the T4 at 0.5 (7200 s), a training job the A100"
sed 's/T4: 0.16/T4: 0/' "$T/perf.yaml" >"$T/perf-bad.yaml"
fails_with "a throughput of 0 is refused with its line" "perf-bad.yaml:5:" \
    sim --trace "$T/perf-jobs.csv" --config "$T/perf-bad.yaml"
sed 's/reference: A100/reference: X9000/' "$T/perf.yaml" >"$T/perf-ref.yaml"
fails_with "an unknown reference GPU says how to rate it" "add it under performance: throughput:" \
    sim --trace "$T/perf-jobs.csv" --config "$T/perf-ref.yaml"

# A preempted-then-rejected spot job (issue 24): its spot attempt (0 to
# 1200 s at $0.90/h, where avail.json's capacity ends) was paid, $0.30; the
# retry on demand ($3/h x the 2 h default max_runtime = $6) is over team
# t's whole $5 budget, so it is rejected.  Its --jobs-out row carries the
# $0.30, not a blank cost.
printf 'provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h\naws,us-east-1,use1-az1,g1.x,A100,1,3.00,0.90\n' \
    >"$T/pr-offers.csv"
printf '%s\n' 'cloud: {offers: pr-offers.csv, boot_delay_s: 0}' 'policy: {wait: none}' \
    'spot: {policy: greedy, availability: [{zone: use1-az1, trace: avail.json}]}' \
    'teams: [{name: t, monthly_usd: 5, on_exhausted: reject}]' 'caps: {default_max_runtime_s: 2h}' \
    >"$T/pr.yaml"
printf 'id,submit_s,gpus,runtime_s,team\na,0,1,3600,t\n' >"$T/pr.csv"
(cd "$T" && "$SPW" sim --trace pr.csv --config pr.yaml -q --jobs-out - >pr-jobs.csv 2>pr.err)
grep -E '^a,0\.000,,,rejected,,0\.300000,.*,1,1200\.000,rejected$' "$T/pr-jobs.csv" >/dev/null
ok $? "a preempted-then-rejected spot job ends rejected with the \$0.30 its spot attempt cost"
# ... and the summary agrees with that row and the money: its restart
# (restarts 1 in --jobs-out) and its 0.3 spot GPU-hours (1200 s) beside
# the $0.30, not "0 restarts" and "0 spot".
(cd "$T" && "$SPW" sim --trace pr.csv --config pr.yaml -q >pr.txt 2>pr.err)
grep -qE '^  cloud GPU-hours +0\.3 spot, 0 on demand$' "$T/pr.txt" &&
    grep -qE '^  restarts +1 restarts \(0 moves from on demand to spot\), 0\.3 GPU-hours of work lost$' "$T/pr.txt" &&
    grep -qE '^  ran on spot +1 jobs, \$0\.30 of \$0\.30 cloud compute$' "$T/pr.txt"
ok $? "its summary: 1 restart and 0.3 spot GPU-hours beside the \$0.30, as --jobs-out says" ||
    diag "$(cat "$T/pr.txt")"

# Spot without data (issue 24): no availability entry.  Not silently
# unlimited and never preempted: a loud warning (even with -q), and each
# instance interrupted at spot.default_interruption.  Three 2000-h jobs on
# spot at the ">20%" bucket (3.94e-4 per hour): each is preempted at least
# once with chance 1 - exp(-0.79) = 55%; at ">20%" in this seed, some are.
printf 'cloud: {offers: spot-offers.csv, boot_delay_s: 0}\npolicy: {wait: none}\nspot: {policy: greedy, checkpoint_interval_s: continuous}\n' \
    >"$T/nodata.yaml"
printf 'id,submit_s,gpus,runtime_s\na,0,1,7200000\nb,0,1,7200000\nc,0,1,7200000\n' >"$T/nodata.csv"
run_spw "$T/nd.json" "$T/nd.err" sim --trace "$T/nodata.csv" --config "$T/nodata.yaml" -q -o json
contains "$T/nd.err" 'WARNING' && contains "$T/nd.err" '2 offers with a spot price have no spot.availability entry' &&
    json_check "$T/nd.json" '
assert d["preemptions"] >= 1, d["preemptions"]'
ok $? "spot without availability data: a warning under -q, and preemptions at the default rate"
sed 's/continuous}/continuous, default_interruption: "<5%"}/' "$T/nodata.yaml" >"$T/nodata2.yaml"
run_spw "$T/nd2.json" "$T/nd2.err" sim --trace "$T/nodata.csv" --config "$T/nodata2.yaml" -q -o json
contains "$T/nd2.err" 'spot.default_interruption "<5%"'
ok $? "spot.default_interruption sets the bucket the warning names"

# Summary by last placement (issue 24): j starts on spot, its capacity goes
# at 600 s, when b frees the pool: it ends on-prem.  The table says one job
# ran in the cloud at some attempt; --jobs-out's spot column is 0 for it.
printf '{"metadata": {"gap_seconds": 600}, "data": [1, 0, 0, 0]}\n' >"$T/av2.json"
printf 'onprem:\n  - {name: dc, nodes: 1, gpus_per_node: 1, gpu: A100}\ncloud: {offers: spot-offers.csv, boot_delay_s: 0}\npolicy: {wait: none}\nspot:\n  policy: greedy\n  availability:\n    - {trace: av2.json}\n' \
    >"$T/pre.yaml"
printf 'id,submit_s,gpus,runtime_s\nb,0,1,600\nj,0,1,3600\n' >"$T/pre.csv"
(cd "$T" && "$SPW" sim --trace pre.csv --config pre.yaml -q --jobs-out pre-out.csv >pre.txt 2>&1)
contains "$T/pre.txt" "2 on-prem, 0 cloud (by where they ended; 1 ran in the cloud at some attempt)" &&
    grep -q '^j,0\.000,600\.000,4200\.000,onprem:dc:0,.*,0,1,600\.000,done$' "$T/pre-out.csv"
ok $? "a spot job that ended on-prem: counted as having run in the cloud; spot column 0"

# Never buy what cannot finish (issue 24): a T4 at $0.30/h is the cheapest
# for the work ($1.875 per A100-hour at 0.16), but an A100-hour takes 22,500 s
# there.  cap (max_runtime 2 h) buys the A100; free (no bound) the T4; over
# (estimate 600 s, true runtime 3600 s, max_runtime 1800 s) goes to the A100
# on its estimate and is stopped at 1800 s: its own outcome, not work done.
sed 's/0\.60,,test/0.30,,test/' "$T/perf-offers.csv" >"$T/mr-offers.csv"
printf 'cloud: {offers: mr-offers.csv, boot_delay_s: 0}\npolicy: {wait: none}\nperformance: {reference: A100}\n' \
    >"$T/mr.yaml"
printf 'id,submit_s,gpus,runtime_s,est_runtime_s,max_runtime_s\nfree,0,1,3600,,\ncap,0,1,3600,,7200\nover,0,1,3600,600,1800\n' \
    >"$T/mr.csv"
run_spw "$T/mr.json" "$T/mr.err" sim --trace "$T/mr.csv" --config "$T/mr.yaml" -q -o json \
    --jobs-out "$T/mr-out.csv"
grep -q '^free,.*,cloud:aws:us-east-1:t4\.x\*1,' "$T/mr-out.csv" &&
    grep -q '^cap,.*,cloud:aws:us-east-1:a100\.x\*1,.*,done$' "$T/mr-out.csv"
ok $? "max_runtime: the T4 that cannot finish in 2 h is not bought; without a bound it is"
grep -q '^over,0\.000,0\.000,1800\.000,cloud:aws:us-east-1:a100\.x\*1,.*,stopped_max_runtime$' \
    "$T/mr-out.csv" && json_check "$T/mr.json" '
assert d["governance"]["jobs_stopped_max_runtime"] == 1, d["governance"]
assert abs(d["stopped_gpu_hours"] - 0.5) < 1e-9, d["stopped_gpu_hours"]
assert abs(d["useful_gpu_hours"] - 2.0) < 1e-9, d["useful_gpu_hours"]'
ok $? "a job stopped at max_runtime: outcome stopped_max_runtime in --jobs-out, 0.5 GPU-h paid, not useful"
(cd "$T" && "$SPW" sim --trace mr.csv --config mr.yaml -q --jobs-out - >mr-stdout.csv 2>mr-sum.txt)
[ "$(head -n 1 "$T/mr-stdout.csv" | cut -d, -f1-3)" = "id,submit_s,start_s" ] &&
    [ "$(wc -l <"$T/mr-stdout.csv")" -eq 4 ] && [ ! -e "$T/-" ] && contains "$T/mr-sum.txt" "not finished"
ok $? "--jobs-out - writes the CSV to stdout (the summary to stderr), no file named -"

# Per-pool speed (issue 24): two pools, A100 first, T4 second, no
# performance: section.  The A100 pool is the reference; a job pinned to T4
# runs there at 0.16: 3600 / 0.16 = 22,500 s.
printf 'onprem:\n  - {name: a100, nodes: 1, gpus_per_node: 8, gpu: A100-80GB, cost_usd_per_gpu_h: 1.4}\n  - {name: t4, nodes: 1, gpus_per_node: 4, gpu: T4, cost_usd_per_gpu_h: 0.2}\npolicy: {wait: never}\n' \
    >"$T/two.yaml"
printf 'id,submit_s,gpus,runtime_s,gpu\nslow,0,1,3600,T4\nfast,0,1,3600,A100\n' >"$T/two.csv"
run_spw "$T/two.txt" "$T/two.err" sim --trace "$T/two.csv" --config "$T/two.yaml" -q \
    --jobs-out "$T/two-out.csv"
grep -q '^slow,0\.000,0\.000,22500\.000,onprem:t4:0,' "$T/two-out.csv" &&
    grep -q '^fast,0\.000,0\.000,3600\.000,onprem:a100:0,' "$T/two-out.csv"
ok $? "without performance.reference each pool runs at its GPU's speed: 22,500 s on the T4 pool"
printf 'id,submit_s,gpus,runtime_s,gpu\ntypo,0,1,3600,A1OO\n' >"$T/typo.csv"
fails_with "a GPU model no pool or offer has (A1OO) is an error with did-you-mean" \
    "job typo: no pool or cloud offer has GPU model 'A1OO' (did you mean A100?)" \
    sim --trace "$T/typo.csv" --config "$T/two.yaml"
printf 'id,submit_s,gpus,runtime_s,gpu\nother,0,1,3600,H200\n' >"$T/h200.csv"
fails_with "a real model the fleet lacks (H200) is no typo of A100: the models the fleet has" \
    "job other: no pool or cloud offer has GPU model 'H200' (the fleet has: A100-80GB, T4)" \
    sim --trace "$T/h200.csv" --config "$T/two.yaml"

# Gang shapes from the trace: offers.csv has only 1-GPU A100 instances.  A
# 4-GPU job on one node has no offer (unschedulable); with gpus_per_node 1 it
# takes 4 instances of the cheapest.
printf 'cloud: {offers: offers.csv, boot_delay_s: 0}\npolicy: {wait: none}\n' >"$T/gang.yaml"
printf 'id,submit_s,gpus,runtime_s,gpus_per_node\none,0,4,3600,\nmulti,0,4,3600,1\n' >"$T/gang.csv"
run_spw "$T/gang.txt" "$T/gang.err" sim --trace "$T/gang.csv" --config "$T/gang.yaml" -q \
    --jobs-out "$T/gang-out.csv"
grep -q '^one,.*,unschedulable,' "$T/gang-out.csv" &&
    grep -q '^multi,0\.000,0\.000,3600\.000,cloud:aws:us-east-1:g1\.x\*4,' "$T/gang-out.csv"
ok $? "trace gpus_per_node: a one-node 4-GPU job finds no 1-GPU offer; with gpus_per_node 1 it takes 4"

# The example config (reads the catalog in ../shared/data).
if [ -r ../shared/data/catalog/gpu_offers.csv ]; then
    "$SPW" gen --jobs 300 --rate 30 --runtime lognormal:1800:1.2 --seed 4 |
        awk -F, 'BEGIN { OFS = ","; split("ml cv research", t, " ");
                         split("experiment inference restricted eu", c, " ") }
                 NR == 1 { print $0, "team", "class", "data", "labels"; next }
                 { print $0, t[NR % 3 + 1], (NR % 2 ? c[NR % 4 + 1] : ""),
                             (NR % 4 == 0 ? "imagenet" : ""), (NR % 5 == 0 ? "env=prod" : "") }' \
        >"$T/ex-jobs.csv"
    run_spw "$T/ex.json" "$T/ex.err" sim --trace "$T/ex-jobs.csv" \
        --config examples/governance.yaml -o json -q
    json_check "$T/ex.json" '
teams = [t["team"] for t in d["governance"]["teams"]]
assert [t for t in teams if t] == ["ml", "cv", "research"], teams
assert d["governance"]["active"]'
    ok $? "sim with examples/governance.yaml: teams ml, cv, research in the JSON"
    # Issue 24's row: team ml paid $287.50 of egress over its $200 cap, as
    # copies into the pools were not capped.  Every egress dollar counts now.
    run_spw "$T/tj.json" "$T/tj.err" sim --trace examples/team-jobs.csv \
        --config examples/governance.yaml -o json -q
    json_check "$T/tj.json" '
t = [t for t in d["governance"]["teams"] if t["team"] == "ml"][0]
assert t["egress_usd"] <= 200 + 1e-9, t
assert t["onprem_egress_usd"] > 0 and t["jobs"] == 1000, t'
    ok $? "examples/governance.yaml + team-jobs.csv: all of ml's egress, copies into pools included, within its \$200 cap"
    # Issue 12's rows on examples/fleet.yaml (A100 pool, the real catalog):
    # bursts go to the offer cheapest for the work at its GPU's speed, not
    # to the cheapest per hour (T4 g4dn.xlarge); a job of 8 GPUs takes one
    # instance with 8 GPUs, never 8 x 1-GPU VMs.
    "$SPW" gen --jobs 300 --rate 60 --runtime exp:3600 --gpus 1:0.8,8:0.2 --seed 12 >"$T/fl.csv"
    run_spw "$T/fl.txt" "$T/fl.err" sim --trace "$T/fl.csv" --config examples/fleet.yaml -q \
        --jobs-out "$T/fl-jobs.csv"
    python3 - "$T/fl.csv" "$T/fl-jobs.csv" ../shared/data/catalog/gpu_offers.csv <<'PY'
import csv, sys
gpus = {r["id"]: int(r["gpus"]) for r in csv.DictReader(open(sys.argv[1]))}
shape = {}
for r in csv.DictReader(open(sys.argv[3])):
    shape[(r["provider"], r["instance_type"])] = (r["gpu"], int(r["gpus"]))
cloud = t4 = bad = 0
for r in csv.DictReader(open(sys.argv[2])):
    if not r["placement"].startswith("cloud:"):
        continue
    cloud += 1
    _, prov, region, inst = r["placement"].split(":", 3)
    itype, count = inst.split("*")
    model, per = shape[(prov, itype)]
    t4 += model == "T4"
    if int(count) != 1 or per < gpus[r["id"]]:
        bad += 1
        print("# %s: %d GPUs on %s" % (r["id"], gpus[r["id"]], inst))
assert cloud > 50, cloud
assert t4 == 0, "%d of %d bursts on T4" % (t4, cloud)
assert bad == 0, bad
PY
    ok $? "examples/fleet.yaml: no burst on T4 at the A100's runtime; every gang on one instance"
else
    skip "examples/governance.yaml reads ../shared/data/catalog, which is absent"
    skip "examples/governance.yaml reads ../shared/data/catalog, which is absent"
    skip "examples/fleet.yaml reads ../shared/data/catalog, which is absent"
fi

# Fair share before and after (docs/fairshare.md): the issue's scenario,
# small: team a's 24 x 8-GPU hour-long jobs at t = 0 fill a 4 x 8-GPU pool,
# team b's eight 1-GPU half-hour jobs come at 10 min.  --compare fifo,fair
# runs the queue orders side by side with each team's waits and rho.
{
    echo "id,submit_s,gpus,runtime_s,gpu,team,checkpoint_interval_s"
    i=1; while [ $i -le 24 ]; do echo "a$i,0,8,3600,,a,600"; i=$((i + 1)); done
    i=1; while [ $i -le 8 ]; do echo "b$i,600,1,1800,,b,600"; i=$((i + 1)); done
} >"$T/fair-jobs.csv"
printf 'onprem:\n  - {name: pool, nodes: 4, gpus_per_node: 8}\npolicy: {wait: never, half_life: 1d}\nteams:\n  - {name: a}\n  - {name: b}\n' >"$T/fair.yaml"
run_spw "$T/fc.txt" "$T/fc.err" sim --trace "$T/fair-jobs.csv" --config "$T/fair.yaml" -q \
    --compare fifo,fair
[ "$rc" = 0 ] && grep -Eq '^queue order +fifo +fair *$' "$T/fc.txt" &&
    grep -Eq '^b wait mean +5\.8 h +50\.0 min *$' "$T/fc.txt" && grep -Eq '^b wait p90 ' "$T/fc.txt" &&
    grep -Eq '^a rho +[0-9.]+ +[0-9.]+ *$' "$T/fc.txt" && grep -Eq '^b rho +[0-9.]+ +[0-9.]+ *$' "$T/fc.txt"
ok $? "sim --compare fifo,fair: per-team mean and p90 waits and rho side by side" ||
    diag "$(cat "$T/fc.txt" "$T/fc.err")"
run_spw "$T/fc.json" "$T/fc.err" sim --trace "$T/fair-jobs.csv" --config "$T/fair.yaml" -q \
    --compare fifo,fair -o json --report "$T/fc.html"
[ "$rc" = 0 ] && python3 - "$T/fc.json" "$T/fc.html" <<'PY'
import json, re, sys
rows = json.load(open(sys.argv[1]))
assert [r["queue"] for r in rows] == ["fifo", "fair"], rows
b = [[t for t in r["governance"]["teams"] if t["team"] == "b"][0] for r in rows]
assert b[1]["wait_mean_s"] < b[0]["wait_mean_s"] / 4 and b[1]["rho"] < b[0]["rho"], b
assert abs(rows[0]["onprem_utilization"] - rows[1]["onprem_utilization"]) < 0.02, rows
html = open(sys.argv[2]).read()
m = re.search(r'<script id="spw-data" type="application/json">(.*?)</script>', html, re.S)
d = json.loads(m.group(1).replace("<\\/", "</"))
assert d["inputs"]["compare"] == "queue order", d["inputs"]
for r, j in zip(d["runs"], rows):
    t = {x["team"]: x for x in r["teams"]}
    g = {x["team"]: x for x in j["governance"]["teams"]}
    for k in ("a", "b"):
        for f in ("wait_mean_s", "wait_p90_s", "rho"):
            assert abs(t[k][f] - g[k][f]) < 1e-6, (r["label"], k, f, t[k], g[k])
PY
ok $? "fair cuts team b's mean wait and rho at the same utilisation; --report has each team's waits and rho" ||
    diag "$(cat "$T/fc.err")"

done_testing
