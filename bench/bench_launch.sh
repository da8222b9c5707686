#!/usr/bin/env bash
# bench/bench_launch.sh: launches per second of `spillway serve`, the cost of
# committing each launch intent before its fork (docs/daemon.md, "Exactly-
# once launches").  Run from the repository root after `make`.
#
#   bench/bench_launch.sh [--jobs N] [--slots S] [--reps R] [--spillway PATH]
#
# A fresh daemon (state dir under bench/out/) with one on-prem node of S GPU
# slots (default 16) gets N jobs (default 600) of `true`, 1 GPU each, while
# that node is down (`spillway admin node local/0 down`), so they all wait.
# The node is brought up and the clock runs until every job has ended
# `succeeded`: launches/s = N / that time.  Each job is launched (intent
# committed, then forked), reaped and ended; the turn's tick is 0.01 s.
# --spillway runs another binary (an older build, to compare).
#
# Output: bench_launch rep=R jobs=N slots=S seconds=... launches_per_s=...
#   daemon_cpu_ms_per_launch=... (the daemon process's own user + system CPU
#   time over the run, per job: steadier than wall time on a busy machine)
#   spawn_per_s=... ratio=... (the baseline, measured in the same rep right
#   after: N runs of `true` forked one after the other by this shell, the
#   floor of a launch with no daemon; ratio = launches_per_s / spawn_per_s)
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 1
JOBS=600
SLOTS=16
REPS=3
BIN=./spillway
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --slots) SLOTS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --spillway) BIN=$2; shift 2 ;;
    *) echo "usage: bench/bench_launch.sh [--jobs N] [--slots S] [--reps R] [--spillway PATH]" >&2
       exit 2 ;;
    esac
done
for tool in curl python3; do
    command -v "$tool" >/dev/null || { echo "bench_launch: SKIP: $tool is not installed"; exit 3; }
done
D=$(mktemp -d "$PWD/bench/out/launch.XXXXXX") || exit 1
chmod 711 "$D"   # as root the jobs run as spillway-job, and must pass D
DPID=
cleanup() {
    [ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
cp "$BIN" "$D/spillway"
SPW=$D/spillway
now() { date +%s.%N; }
cat >"$D/serve.yaml" <<EOF
onprem:
  - name: local
    nodes: 1
    gpus_per_node: $SLOTS
    gpu: A100
    cost_usd_per_gpu_h: 1.10
policy:
  queue: fifo
  backfill: easy
  wait: never
daemon:
  gpus: slots
  tick_s: 0.01
  kill_grace_s: 1
  tokens:
    - {token: bench-admin-token-000001, admin: true}
EOF
chmod 600 "$D/serve.yaml"   # it holds a token: serve refuses it readable by others
export SPILLWAY_TOKEN=bench-admin-token-000001
for rep in $(seq 1 "$REPS"); do
    rm -rf "$D/state"
    "$SPW" serve --config "$D/serve.yaml" --state-dir "$D/state" --listen 127.0.0.1:0 \
        </dev/null >"$D/out" 2>"$D/err" &
    DPID=$!
    URL=
    for _ in $(seq 1 100); do
        URL=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9][0-9]*\).*|\1|p' "$D/err" "$D/out" | head -1)
        [ -n "$URL" ] && break
        sleep 0.05
    done
    [ -n "$URL" ] || { echo "bench_launch: the daemon did not start: $(cat "$D/err")"; exit 1; }
    export SPILLWAY_URL=$URL
    "$SPW" admin node local/0 down >/dev/null || { echo "bench_launch: cannot take the node down"; exit 1; }
    python3 - "$URL" "$JOBS" <<'EOF' || exit 1
import http.client, json, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port)
body = json.dumps({"run": ["true"], "gpus": 1})
for i in range(int(sys.argv[2])):
    c.request("POST", "/v1/jobs", body, {"Authorization": "Bearer bench-admin-token-000001",
                                          "Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 201:
        sys.exit("submit %d: HTTP %d" % (i, r.status))
EOF
    cpu() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$DPID/stat"; }  # utime + stime, ticks
    c0=$(cpu)
    t0=$(now)
    "$SPW" admin node local/0 up >/dev/null
    while :; do
        n=$(curl -s -H "Authorization: Bearer $SPILLWAY_TOKEN" "$URL/metrics" |
            awk '/^spillway_jobs\{state="succeeded"/ { n += $NF } END { print n + 0 }')
        [ "${n:-0}" -ge "$JOBS" ] && break
        sleep 0.02
    done
    t1=$(now)
    c1=$(cpu)
    kill -KILL "$DPID" 2>/dev/null
    wait "$DPID" 2>/dev/null
    DPID=
    # The baseline: the same number of processes, forked by this shell.
    tb0=$(now)
    for ((k = 0; k < JOBS; k++)); do /bin/true; done
    tb1=$(now)
    awk -v r="$rep" -v n="$JOBS" -v s="$SLOTS" -v a="$t0" -v b="$t1" -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" \
        -v ba="$tb0" -v bb="$tb1" \
        'BEGIN { printf "bench_launch rep=%d jobs=%d slots=%d seconds=%.3f launches_per_s=%.1f daemon_cpu_ms_per_launch=%.3f spawn_per_s=%.1f ratio=%.3f\n", r, n, s, b - a, n / (b - a), c * 1000 / hz / n, n / (bb - ba), (n / (b - a)) / (n / (bb - ba)) }'
done
