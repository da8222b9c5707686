#!/bin/sh
# telemetry.sh: GPU telemetry from nvidia-smi (a fake one first in the
# daemon's PATH) and the idle-GPU rule with action: stop: a job whose GPUs
# stay at 0% for window_s is flagged and cancelled, a busy one is left
# alone; a job that gets busy again is no longer idle; a failing
# nvidia-smi is reported, not fatal.  With daemon.metrics_per_job the
# per-job series are on /metrics.
# shellcheck source=tests/ui/ui-lib
. "$(dirname "$0")/ui-lib"
plan 7

fake_gpus 90 90 0 0
mkconfig_ui "$T/t.yaml" never stop
echo "  metrics_per_job: true" >>"$T/t.yaml"
start_daemon "$T/t.yaml" "$T/state"
ok $? "spillway serve starts with idle_gpu {threshold_pct: 5, window_s: 1, action: stop}"

busy=$(submit ml --gpus 2 --name busy --est-runtime 1h -- sleep 120)
idle=$(submit cv --gpus 2 --name idle --est-runtime 1h -- sleep 120)
wait_for "$busy" running 10 && wait_for "$idle" running 10 cv
ok $? "two jobs run, on GPUs 0-1 (90%) and 2-3 (0%)"

wait_for "$idle" cancelled 15 cv
ok $? "the job at 0% for over window_s is stopped (cancelled)"

# The next sample no longer has the cancelled job.
only_busy() {
    http GET /v1/ui/telemetry admin && cp "$T/http.body" "$T/tel.json" &&
        python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert [j["id"] for j in d["jobs"]] == [sys.argv[2]]' "$T/tel.json" "$busy" 2>/dev/null
}
wait_until 10 only_busy
json_check "$T/tel.json" "
assert d['source'] == 'nvidia-smi', d
assert d['idle_gpu'] == {'threshold_pct': 5, 'window_s': 1, 'action': 'stop'}, d['idle_gpu']
g = {x['index']: x for x in d['gpus']}
assert g[0]['util_pct'] == 90 and g[0]['job'] == '$busy', g[0]
assert g[0]['mem_used_mib'] == 9000 and g[0]['mem_total_mib'] == 81920, g[0]
assert [j['id'] for j in d['jobs']] == ['$busy'] and not d['jobs'][0]['idle'], d['jobs']"
ok $? "telemetry maps GPUs 0-1 to the busy job with their utilisation and memory; it is not idle"

curl -s -m 5 "$URL/metrics" >"$T/m.txt"
grep -q '^spillway_idle_gpu_jobs_stopped_total 1$' "$T/m.txt" &&
    grep -q "^spillway_job_gpu_idle{job=\"$busy\",team=\"ml\"} 0$" "$T/m.txt" &&
    grep -q "^spillway_gpu_utilization_percent{gpu=\"0\",job=\"$busy\"} 90" "$T/m.txt"
ok $? "/metrics counts one job stopped for idle GPUs, and (metrics_per_job) the busy job is not idle" ||
    diag "$(grep idle "$T/m.txt")"

http GET /v1/ui/telemetry cv
json_check "$T/http.body" "
assert all(j['team'] == 'cv' for j in d['jobs']), d['jobs']
assert all(g['job'] in (None,) for g in d['gpus']), d['gpus']"
ok $? "a team token does not see another team's jobs or GPUs in the telemetry"

echo fail >"$T/gpu-util"
failing() {
    http GET /v1/ui/telemetry admin &&
        python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert d["source"] == "none" and "nvidia-smi failed" in d["error"]' "$T/http.body" 2>/dev/null
}
wait_until 10 failing && [ "$(state_of "$busy")" = running ]
ok $? "a failing nvidia-smi is reported in the telemetry; jobs keep running"
