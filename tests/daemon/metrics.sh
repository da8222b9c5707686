#!/bin/sh
# metrics.sh: GET /metrics of a live daemon passes `promtool check metrics`
# and has the documented series (jobs, pool GPUs, the decision histogram,
# spend, emulated cloud instances); then a real Prometheus scrapes it and
# its spillway_queue_length matches the daemon's queue.  The daemon runs
# with daemon.metrics_auth: /metrics answers 401 without a token and 403 to
# a team token; Prometheus scrapes it with a metrics token (which reads
# nothing else).  No series names a job (metrics_per_job is off).
#
# Under `wait: runtime:1` a job waits for on-prem up to once its estimated
# runtime: a 2-GPU job fills the node, a 1-GPU job estimated at 1 s bursts
# to the emulated cloud, and a 2-GPU job estimated at 1 h stays queued.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 20

PROM_TOKEN=prom-scrape-token-5c1e2a9b
mkconfig "$T/serve.yaml" 2 runtime:1
printf '    - {name: prometheus, token: %s, metrics: true}\n  metrics_auth: true\n' \
    "$PROM_TOKEN" >>"$T/serve.yaml"
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts (1 node x 2 slots, wait runtime:1)"

hog=$(submit ml --gpus 2 --name hog --est-runtime 40s -- sleep 40.5)
cl=$(submit ml --gpus 1 --name burst --est-runtime 1s -- sleep 40.6)
q=$(submit cv --gpus 2 --name patient --est-runtime 1h -- true)
cloud_running() { [ "$(state_of "$cl")" = running ] && [ "$(field "$cl" 'd["where"]')" = cloud ]; }
wait_for "$hog" running 5 && wait_until 8 cloud_running && [ "$(state_of "$q" cv)" = queued ]
ok $? "one job runs on-prem, one on the emulated cloud, one is queued" ||
    diag "$hog $(state_of "$hog"), $cl $(state_of "$cl"), $q $(state_of "$q" cv)"

http GET /metrics none
c1=$code
http GET /metrics ml
[ "$c1" = 401 ] && [ "$code" = 403 ]
ok $? "metrics_auth: GET /metrics without a token is 401, with a team token 403 ($c1, $code)"
printf '%s\n' "$PROM_TOKEN" >"$T/prom.tok"
chmod 600 "$T/prom.tok"
curl -s -m 5 -o "$T/metrics.txt" -w '%{http_code} %{content_type}' \
    -H "Authorization: Bearer $PROM_TOKEN" "$URL/metrics" >"$T/mcode"
grep -q '^200 text/plain' "$T/mcode"
ok $? "GET /metrics with the metrics token: 200, text/plain ($(cat "$T/mcode"))"
spw "$PROM_TOKEN" queue >"$T/out" 2>"$T/err"
[ $? -ne 0 ] && contains "$T/err" "403"
ok $? "the metrics token reads nothing else (queue: 403)" || diag "$(cat "$T/err")"
! grep -q -e "$hog" -e "$cl" -e "$q" "$T/metrics.txt"
ok $? "no series names a job id (metrics_per_job is off by default)"

# missing WHAT: a skip on a developer's machine, a failure in CI, where
# scripts/deps.sh installs prometheus (and promtool) for the tests.
missing() {
    if [ -n "${CI:-}" ]; then
        ok 1 "$1 (CI installs it through scripts/deps.sh test)"
    else
        skip "$1"
    fi
}

if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1
    ok $? "promtool check metrics passes (exit 0)" || diag "$(cat "$T/promtool.out")"
else
    missing "promtool is not installed"
fi

has() {
    grep -qE "$1" "$T/metrics.txt" && return 0
    diag "no line matching $1"
    return 1
}
has '^spillway_jobs\{[^}]*state="running"[^}]*pool="local"[^}]*\} 1$' &&
    has '^spillway_jobs\{[^}]*state="queued"[^}]*\} 1$'
ok $? "spillway_jobs: 1 running on pool local, 1 queued"
has '^spillway_pool_gpus\{[^}]*pool="local"[^}]*state="busy"[^}]*\} 2$' &&
    has '^spillway_pool_gpus\{[^}]*pool="local"[^}]*state="free"[^}]*\} 0$'
ok $? "spillway_pool_gpus: local has 2 busy, 0 free"
has '^spillway_decision_seconds_bucket\{le="\+Inf"\} [1-9]' && has '^spillway_decision_seconds_count [1-9]' &&
    has '^# TYPE spillway_decision_seconds histogram'
ok $? "spillway_decision_seconds is a histogram with observations"
has '^spillway_spend_usd_total\{[^}]*kind="onprem"' && has '^spillway_spend_usd_total\{[^}]*kind="cloud"[^}]*emulated="true"'
ok $? "spillway_spend_usd_total has onprem and emulated cloud series"
has '^spillway_cloud_instances\{[^}]*emulated="true"[^}]*\} 1$'
ok $? "spillway_cloud_instances: 1 emulated instance"
has '^spillway_queue_length 1$' && has '^spillway_jobs_submitted_total 3$'
ok $? "spillway_queue_length 1, spillway_jobs_submitted_total 3"
# Owned capacity as `spillway costs` prices it: the API's answer right
# after the scrape (the owned cost grows by the second, so by a cent at most).
http GET /v1/costs admin
python3 - "$T/metrics.txt" "$T/http.body" <<'PYEOF'
import json, re, sys
m = open(sys.argv[1]).read()
c = {p["pool"]: p for p in json.load(open(sys.argv[2]))["pools"]}
assert re.search(r'^spillway_pool_owned_gpus\{pool="local"\} 2$', m, re.M), "owned GPUs"
got = {k: float(v) for k, v in re.findall(r'^spillway_pool_owned_usd\{pool="local",share="(used|idle)"\} (\S+)$', m, re.M)}
api = c["local"]
assert set(got) == {"used", "idle"}, got
assert got["used"] > 0 and got["idle"] >= 0, got
assert 0 <= api["owned_usd"] - (got["used"] + got["idle"]) < 0.01, (got, api)
assert 0 <= api["owned_idle_usd"] - got["idle"] < 0.01, (got, api)
PYEOF
ok $? "spillway_pool_owned_gpus (2) and spillway_pool_owned_usd (used, idle) equal spillway costs' owned and idle owned cost"

# ---- a real Prometheus -----------------------------------------------------
if ! command -v prometheus >/dev/null 2>&1; then
    for _ in 1 2 3 4; do missing "prometheus is not installed"; done
else
    pport=$(free_port)
    dport=${URL##*:}
    cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: spillway
    scrape_interval: 1s
    authorization:
      type: Bearer
      credentials_file: $T/prom.tok
    static_configs:
      - targets: ['127.0.0.1:$dport']
EOF
    prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
        --web.listen-address="127.0.0.1:$pport" </dev/null >"$T/prometheus.log" 2>&1 &
    ppid_=$!
    XPIDS="$XPIDS $ppid_"
    PROM=http://127.0.0.1:$pport
    t0=$(now_ms)
    scraped() {
        curl -s -m 2 -o "$T/pq.json" "$PROM/api/v1/query?query=spillway_queue_length" &&
            [ "$(jpy "$T/pq.json" 'len(d["data"]["result"])' 2>/dev/null)" = 1 ]
    }
    wait_until 30 scraped
    ok $? "Prometheus scrapes the daemon: spillway_queue_length is queryable after $(($(now_ms) - t0)) ms" ||
        diag "$(tail -5 "$T/prometheus.log")" "$(cat "$T/pq.json" 2>/dev/null)"
    pv=$(jpy "$T/pq.json" 'd["data"]["result"][0]["value"][1]' 2>/dev/null)
    spw admin queue --state queued -o json >"$T/queued.json"
    nq=$(jpy "$T/queued.json" 'len(d["jobs"])')
    [ -n "$pv" ] && [ "$pv" = "$nq" ] && [ "$nq" = 1 ]
    ok $? "Prometheus's spillway_queue_length ($pv) is the daemon's queue ($nq queued)"
    curl -s -m 2 -o "$T/up.json" "$PROM/api/v1/query?query=up%7Bjob%3D%22spillway%22%7D"
    [ "$(jpy "$T/up.json" 'd["data"]["result"][0]["value"][1]' 2>/dev/null)" = 1 ]
    ok $? "up{job=\"spillway\"} is 1"
    curl -s -m 2 -o "$T/ci.json" \
        "$PROM/api/v1/query?query=sum(spillway_cloud_instances%7Bemulated%3D%22true%22%7D)"
    [ "$(jpy "$T/ci.json" 'd["data"]["result"][0]["value"][1]' 2>/dev/null)" = 1 ]
    ok $? "Prometheus sees 1 emulated cloud instance"
    kill -TERM "$ppid_" 2>/dev/null
    wait "$ppid_" 2>/dev/null
fi

# The queued job first, or it would start (and end) in the GPUs freed.
spw cv cancel "$q" >/dev/null 2>&1
spw ml cancel "$hog" >/dev/null 2>&1
spw ml cancel "$cl" >/dev/null 2>&1
wait_for "$hog" cancelled 5 && wait_for "$cl" cancelled 5 && wait_for "$q" cancelled 5 cv
ok $? "the three jobs are cancelled"
stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
