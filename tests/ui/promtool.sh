#!/bin/sh
# promtool.sh: the Prometheus rules in deploy/prometheus pass `promtool
# check rules` and their unit tests (`promtool test rules`); the Grafana
# dashboard in deploy/grafana is valid JSON; and every metric the rules and
# the dashboard use is one a live daemon (with GPU telemetry from a fake
# nvidia-smi) really exports, in a text format promtool can parse.
# shellcheck source=tests/ui/ui-lib
. "$(dirname "$0")/ui-lib"

if ! command -v promtool >/dev/null 2>&1; then
    echo "1..0 # skip promtool is not installed (Debian package prometheus; make deps-test)"
    exit 0
fi
plan 7
D=$(cd "$(dirname "$0")/../../deploy" && pwd)

out=$(promtool check rules "$D/prometheus/spillway-rules.yml" 2>&1)
ok $? "promtool check rules deploy/prometheus/spillway-rules.yml" || diag "$out"

out=$(cd "$D/prometheus" && promtool test rules spillway-rules.test.yml 2>&1)
ok $? "promtool test rules: budget 80%/100%, queue wait, idle instances, turn latency, 5xx, idle GPUs" ||
    diag "$out"

python3 - "$D/grafana/spillway.json" >"$T/grafana-exprs" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["uid"] == "spillway" and d["panels"], "no panels"
for p in d["panels"]:
    assert p["targets"], p["title"]
    for t in p["targets"]:
        print(t["expr"])
PYEOF
ok $? "deploy/grafana/spillway.json is a dashboard whose every panel has a query"

fake_gpus 70 0 0 0
mkconfig_ui "$T/p.yaml" constant:1
start_daemon "$T/p.yaml" "$T/state"
ok $? "spillway serve starts with a fake nvidia-smi in PATH"

j=$(submit ml --gpus 1 --name t --est-runtime 1m -- sleep 60)
wait_for "$j" running 5
have_gpu_metrics() {
    curl -s -m 5 "$URL/metrics" >"$T/metrics" &&
        grep -q '^spillway_gpu_utilization_percent{gpu="0"} 70' "$T/metrics" &&
        grep -q '^spillway_jobs_gpu_idle{team="ml"} 0' "$T/metrics"
}
wait_until 10 have_gpu_metrics && ! grep -q "$j" "$T/metrics"
ok $? "/metrics has GPU utilisation per GPU from nvidia-smi and idle jobs per team, naming no job" ||
    diag "$(grep gpu "$T/metrics")"

# Names used by the rules and the dashboard, less recording rules (a:b).
python3 - "$D/prometheus/spillway-rules.yml" "$T/grafana-exprs" "$T/metrics" <<'PYEOF' >"$T/missing"
import re, sys
text = open(sys.argv[1]).read() + open(sys.argv[2]).read()
used = set(re.findall(r"\bspillway_[a-z_]+", text))
have = set()
for line in open(sys.argv[3]):
    # a sample, or the TYPE line of a metric with no sample right now
    m = re.match(r"(?:# TYPE )?(spillway_[a-z_]+)", line)
    if m:
        n = m.group(1)
        have.add(n)
        for suffix in ("_bucket", "_sum", "_count"):
            if n.endswith(suffix):
                have.add(n[: -len(suffix)])
print(" ".join(sorted(used - have)))
PYEOF
[ -z "$(cat "$T/missing")" ]
ok $? "every metric the rules and the dashboard use is exported by the daemon" ||
    diag "missing: $(cat "$T/missing")"

out=$(promtool check metrics <"$T/metrics" 2>&1)
case $out in
*"error while linting"* | *"text format parsing error"*) false ;;
*) true ;;
esac
ok $? "promtool parses the daemon's /metrics" || diag "$out"
