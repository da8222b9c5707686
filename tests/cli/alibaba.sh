#!/bin/sh
# alibaba.sh: the real Alibaba GPU trace 2023 (../shared/data, not in the
# repository) through `spillway sim`, on a fleet read with nodes_from.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 6

data=${SPW_SHARED_DATA:-../shared/data}/alibaba-gpu-2023
if [ ! -f "$data/openb_pod_list_default.csv" ] || [ ! -f "$data/openb_node_list_gpu_node.csv" ]; then
    for _ in 1 2 3 4 5 6; do skip "shared data absent ($data)"; done
    exit 0
fi
data=$(cd "$data" && pwd)

cat >"$T/alibaba.yaml" <<YAML
onprem:
  - name: openb
    nodes_from: $data/openb_node_list_gpu_node.csv
    cost_usd_per_gpu_h: 1.0
cloud:
  price_usd_per_gpu_h: 2.5
policy:
  wait: compute:0.25
YAML

run_spw "$T/r.json" "$T/err" sim --trace "$data/openb_pod_list_default.csv" \
    --config "$T/alibaba.yaml" -o json
ok "$rc" "sim on openb_pod_list_default.csv with the openb node list exits 0"
[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"

json_check "$T/r.json" '
assert d["trace_rows"] == 8152, d["trace_rows"]
assert d["jobs"] + d["jobs_skipped"] == 8152, (d["jobs"], d["jobs_skipped"])'
ok $? "jobs + skipped rows == 8,152 rows of the pod list"

json_check "$T/r.json" '
assert d["onprem_gpus"] == 6212, d["onprem_gpus"]'
ok $? "the node list gives 6,212 on-prem GPUs"

json_check "$T/r.json" '
assert d["jobs_onprem"] + d["jobs_cloud"] + d.get("jobs_unschedulable", 0) == d["jobs"]'
ok $? "every job that was read is placed somewhere"

contains "$T/err" "skipped"
ok $? "a note on stderr says how many rows were skipped"

# Issue 24, first row: examples/roi.yaml with a cloud cap (the 24 h default
# max runtime then bounds cloud jobs) and greedy spot.  Before, 159 jobs were
# bought on GPUs too slow to finish in 24 h and stopped after paying.
sed -e "s#offers: .*#offers: $data/../catalog/gpu_offers.csv#" examples/roi.yaml >"$T/roi.yaml"
printf 'caps: {max_cloud_usd_per_h: 100000}\nspot: {policy: greedy}\n' >>"$T/roi.yaml"
run_spw "$T/roi.json" "$T/roi.err" sim --trace "$data/openb_pod_list_default.csv" \
    --config "$T/roi.yaml" -o json -q
json_check "$T/roi.json" '
assert d["governance"]["jobs_stopped_max_runtime"] == 0, d["governance"]
assert d["stopped_gpu_hours"] == 0, d["stopped_gpu_hours"]'
ok $? "roi.yaml + a cap + greedy spot: no job is bought where it cannot finish (0 stopped, was 159)"

done_testing
