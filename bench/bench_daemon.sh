#!/usr/bin/env bash
# bench/bench_daemon.sh: `spillway serve` under a stream of submits, for the
# daemon's targets: durable submits over HTTP >= 2,000 jobs/s from one
# keep-alive client and >= 5,000 jobs/s from 8; daemon RSS with 100,000 jobs
# <= 200 MB.  Run from the repository root (bench/run.sh calls it).
#
#   bench/bench_daemon.sh [--jobs N] [--rss-jobs N] [--threads "1 8"] [--reps R]
#                         [--full-reps R] [--cli-jobs N] [--retention-jobs N]
#
# Each run starts a fresh daemon on 127.0.0.1 (a free port) with a fresh
# state dir under bench/out/ (the disk the daemon would use), on a fleet that
# runs nothing during the run: one on-prem GPU slot, `wait: never`, no cloud,
# and one first job (`sleep 3600`) that holds the slot, so every job of the
# run stays queued and the figure is the submit path alone.  Then
# build/bench/bench_http posts N small specs ({"run":["true"],"gpus":1,
# "est_runtime":3600}) from T keep-alive connections, each waiting for its
# 201 before the next.
#
# Checks: every response was 201; after the daemon is stopped, the jobs in its
# SQLite file (read with python3's sqlite3 module, or the sqlite3 CLI) are
# exactly the acknowledged ones plus the blocker.  Throughput runs stop the
# daemon with SIGKILL, so an acknowledged job that was not committed would be
# missing; the RSS run stops it with SIGTERM (the clean shutdown).
#
# Then the same runs with `serve --sync full` (--full-reps, default 1), and
# the CLI: `spillway submit` --cli-jobs times (default 500) from one shell
# loop and from 8 at once, one process per job as with sbatch.
#
# The RSS run submits --rss-jobs jobs (default 100,000) from 8 clients, then
# reads VmHWM and VmRSS from /proc/PID/status and the daemon's /metrics
# (spillway_decision_seconds: the time of its scheduling turns).
#
# --retention-jobs N (default 0: not run): jobs cannot fill the daemon's
# memory.  N submits from one client, each cancelled at once (bench_http
# --cancel), on a daemon with daemon.job_retention_s: 2 and on one with the
# retention off (job_retention_s: 3153600000: every ended job stays in
# memory, as before retention existed); the daemon's VmRSS before, at its
# peak (VmHWM), once the ended jobs left memory (spillway_jobs_in_memory back
# to 1, the blocker) and after a SIGTERM restart on the same state dir, and
# the ratios retained / off.  Alone:
#   bench/bench_daemon.sh --reps 0 --full-reps 0 --cli-jobs 0 --rss-jobs 0 --retention-jobs 32000
#
# Output: key=value lines for run.sh:
#   daemon_http rep=R [sync=full] threads=T ok=... jobs_per_s=... p50_ms=...
#       p99_ms=... committed=... acked=... missing=... verified=1|0
#   daemon_cli clients=C jobs=N ok=... jobs_per_s=... (best of R)
#   daemon_rss jobs=N vmhwm_kb=... vmrss_kb=... ...
#   daemon_metrics turns=... turn_sum_s=... turn_mean_ms=... turn_p99_le_ms=... (bucket bounds)
#   daemon_retention retention_s=S jobs=N cancelled=... base_kb=... hwm_kb=... after_kb=...
#       in_memory=... restart_kb=... restart_in_memory=...
#   daemon_retention_ratio after=... restart=... (VmRSS retained / off)
# Exits 3 with "daemon: SKIP ..." when a prerequisite is missing.
set -uo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.." || exit 1
JOBS=20000
RSS_JOBS=100000
THREADS="1 8"
REPS=${BENCH_REPS:-3}
FULL_REPS=1
CLI_JOBS=500
RETENTION_JOBS=0
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --rss-jobs) RSS_JOBS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --full-reps) FULL_REPS=$2; shift 2 ;;
    --cli-jobs) CLI_JOBS=$2; shift 2 ;;
    --retention-jobs) RETENTION_JOBS=$2; shift 2 ;;
    *) echo "usage: bench/bench_daemon.sh [--jobs N] [--rss-jobs N] [--threads \"1 8\"] [--reps R]" \
            "[--full-reps R] [--cli-jobs N] [--retention-jobs N]" >&2
       exit 2 ;;
    esac
done

HTTP=build/bench/bench_http
TOKEN=bench-token-0000000000000001
BLOCKER='{"name":"blocker","run":["sleep","3600"],"gpus":1,"est_runtime":3600}'

if [ ! -x ./spillway ] || ! ./spillway serve --help >/dev/null 2>&1; then
    echo "daemon: SKIP: ./spillway has no working 'serve' command (run make)"
    exit 3
fi
if [ ! -x "$HTTP" ]; then
    echo "daemon: SKIP: $HTTP not built (make build/bench/bench_http)"
    exit 3
fi
DBTOOL=
if command -v python3 >/dev/null && python3 -c 'import sqlite3' 2>/dev/null; then
    DBTOOL=python3
elif command -v sqlite3 >/dev/null; then
    DBTOOL=sqlite3
else
    echo "daemon: no python3 sqlite3 module and no sqlite3 CLI: committed jobs will not be checked" >&2
fi

mkdir -p bench/out
D=$(mktemp -d "$PWD/bench/out/daemon.XXXXXX")
# A root daemon runs the blocker as spillway-job, which must reach its
# checkpoint and log dirs under the state dirs in $D (mktemp -d: 0700), or it
# fails at once and the figures measure submit + fork + fail.
chmod 711 "$D"
# A copy of the binary: a rebuild of ./spillway during the run changes nothing.
cp ./spillway "$D/spillway"
SPW=$D/spillway
DPID=

cat >"$D/fleet.yaml" <<EOF
# generated by bench/bench_daemon.sh: one GPU slot, no cloud, so queued jobs stay queued
onprem:
  - name: local
    nodes: 1
    gpus_per_node: 1
    cost_usd_per_gpu_h: 1.10
policy:
  queue: fifo
  scan: hol
  wait: never
daemon:
  gpus: slots
  tokens:
    - {token: $TOKEN, team: bench}
EOF
chmod 600 "$D/fleet.yaml"   # it holds a token: serve refuses it readable by others

# http_get PATH: the body of GET http://127.0.0.1:$PORT/PATH
http_get() {
    if command -v curl >/dev/null; then
        curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT$1"
    else
        python3 - "$PORT" "$1" "$TOKEN" <<'EOF'
import sys, urllib.request
r = urllib.request.Request("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]),
                           headers={"Authorization": "Bearer " + sys.argv[3]})
sys.stdout.write(urllib.request.urlopen(r, timeout=10).read().decode())
EOF
    fi
}

# db_query STATE SQL: one value from the daemon's database
db_query() {
    case $DBTOOL in
    python3)
        python3 - "$1/spillway.db" "$2" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=10)
print(c.execute(sys.argv[2]).fetchone()[0])
EOF
        ;;
    sqlite3) sqlite3 "$1/spillway.db" "$2" ;;
    esac
}

# db_check STATE IDS: "committed missing": rows in jobs, and acknowledged ids
# (one a line in IDS) that are not among them
db_check() {
    case $DBTOOL in
    python3)
        python3 - "$1/spillway.db" "$2" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=10)
ids = set(r[0] for r in c.execute("SELECT id FROM jobs"))
acked = [l.strip() for l in open(sys.argv[2]) if l.strip()]
missing = [i for i in acked if i not in ids]
dup = len(acked) - len(set(acked))
print(len(ids), len(missing), dup)
EOF
        ;;
    sqlite3)
        local n m
        n=$(sqlite3 "$1/spillway.db" "SELECT count(*) FROM jobs")
        m=$(sqlite3 "$1/spillway.db" "SELECT id FROM jobs" | sort >"$D/db_ids"; sort "$2" | comm -23 - "$D/db_ids" | wc -l)
        echo "$n $m $(($(wc -l <"$2") - $(sort -u "$2" | wc -l)))"
        ;;
    *) echo "? ? ?" ;;
    esac
}

start_daemon() { # start_daemon STATE [SERVE OPTIONS]: sets DPID and PORT ($FLEET: the config)
    local state=$1
    shift
    : >"$state.log" # exists before the first look for the port
    "$SPW" serve --config "${FLEET:-$D/fleet.yaml}" --state-dir "$state" --listen 127.0.0.1:0 "$@" \
        >"$state.log" 2>&1 &
    DPID=$!
    disown "$DPID" # no "Killed" notice from bash when stop_daemon uses SIGKILL
    PORT=
    local i
    for ((i = 0; i < 100; i++)); do
        PORT=$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\).*#\1#p' "$state.log" | head -1)
        [ -n "$PORT" ] && return 0
        kill -0 "$DPID" 2>/dev/null || break
        sleep 0.1
    done
    echo "daemon: FAIL: the daemon did not start listening within 10 s; its log:" >&2
    tail -20 "$state.log" >&2
    kill -KILL "$DPID" 2>/dev/null
    DPID=
    return 1
}

stop_daemon() { # stop_daemon SIG: stops the daemon by PID (SIGKILL after 10 s)
    local i
    [ -n "$DPID" ] || return 0
    kill "-$1" "$DPID" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        kill -0 "$DPID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$DPID" 2>/dev/null; then
        echo "daemon: did not exit within 10 s of SIG$1; killing it" >&2
        kill -KILL "$DPID" 2>/dev/null
    fi
    DPID=
}

# kill_blocker STATE: the blocker's `sleep 3600` outlives the daemon (running
# jobs are re-adopted by the next one).  The local backend runs each job in a
# process group led by a shim (a fork of the daemon, so its command line is
# this run's private copy of spillway) whose pid the database keeps; end that
# group, after checking the pid still is such a shim.
kill_blocker() {
    [ -n "$DBTOOL" ] || return 0
    local pid
    pid=$(db_query "$1" "SELECT coalesce(pid, 0) FROM jobs WHERE json_extract(spec_json, '\$.name') = 'blocker'" 2>/dev/null)
    [ -n "$pid" ] && [ "$pid" != 0 ] || return 0
    kill_ours "$pid"
}

# kill_ours PID: ends PID's process group when PID leads it and runs this
# run's copy of spillway ($SPW, a path unique to this run) or the blocker.
kill_ours() {
    local pid=$1 cmd pgid
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 0
    pgid=$(awk '{ sub(/.*\) /, ""); print $3 }' "/proc/$pid/stat" 2>/dev/null)
    case $cmd in
    "$SPW serve "* | "sleep 3600 ") ;;
    *) return 0 ;;
    esac
    if [ "$pgid" = "$pid" ]; then
        kill -TERM -- "-$pid" 2>/dev/null
    else
        kill -TERM "$pid" 2>/dev/null
    fi
}

# sweep: whatever of this run is still alive (a shim whose pid the database
# did not have): processes running this run's copy of spillway, which no one
# else runs.
sweep() {
    local p
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$p" = "$$" ] && continue
        case $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") in
        "$SPW serve "*) kill_ours "$p" ;;
        esac
    done
}

STATES=()
cleanup() {
    [ -n "$DPID" ] && stop_daemon KILL
    for s in "${STATES[@]}"; do kill_blocker "$s"; done
    sweep
    rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# submit_blocker TAG: the first job, which holds the only GPU slot
submit_blocker() {
    if ! "$HTTP" --url "127.0.0.1:$PORT" --token "$TOKEN" --threads 1 --jobs 1 --body "$BLOCKER" \
        --ids "$D/$1.blocker" >"$D/$1.blocker.out" 2>&1; then
        echo "daemon: FAIL: the blocker job was not accepted: $(cat "$D/$1.blocker.out")" >&2
        stop_daemon KILL
        return 1
    fi
    # It must really run: a blocker that failed leaves the slot free, and
    # every submit after it would start (and fail) a job.
    local id st= i
    id=$(head -1 "$D/$1.blocker")
    for ((i = 0; i < 100; i++)); do
        st=$(http_get "/v1/jobs/$id" 2>/dev/null | sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p' | head -1)
        [ "$st" = running ] && return 0
        sleep 0.1
    done
    echo "daemon: FAIL: the blocker $id is ${st:-unknown}, not running, after 10 s" >&2
    stop_daemon KILL
    return 1
}

# one_run TAG THREADS JOBS STOPSIG [SERVE OPTIONS]: a fresh daemon, the
# blocker, the submits; leaves the bench_http line in $D/TAG.http and the
# check in $D/TAG.check
one_run() {
    local tag=$1 threads=$2 jobs=$3 sig=$4 state=$D/$1
    shift 4
    STATES+=("$state")
    start_daemon "$state" "$@" || return 1
    submit_blocker "$tag" || return 1
    "$HTTP" --url "127.0.0.1:$PORT" --token "$TOKEN" --threads "$threads" --jobs "$jobs" \
        --ids "$D/$tag.ids" >"$D/$tag.http" 2>"$D/$tag.err"
    local rc=$?
    [ $rc -ne 0 ] && { echo "daemon: bench_http exited $rc:" >&2; cat "$D/$tag.err" >&2; }
    if [ "$tag" = rss ]; then
        # Let the loop finish the turns the submits caused, then measure.
        sleep 1
        local hwm rss
        hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$DPID/status")
        rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status")
        http_get /metrics >"$D/metrics.txt" 2>/dev/null || echo "daemon: GET /metrics failed" >&2
        local q
        q=$(http_get "/v1/jobs?state=queued&limit=1" >/dev/null 2>&1 && echo ok || echo failed)
        echo "daemon_rss jobs=$jobs vmhwm_kb=$hwm vmrss_kb=$rss vmhwm_mb=$(awk -v k="$hwm" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }') vmrss_mb=$(awk -v k="$rss" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }') list_queued=$q"
    fi
    stop_daemon "$sig"
    kill_blocker "$state"
    local acked=0
    [ -f "$D/$tag.ids" ] && acked=$(wc -l <"$D/$tag.ids")
    read -r committed missing dup < <(db_check "$state" "$D/$tag.ids")
    local verified=0
    # The database holds the blocker and every acknowledged job, nothing else.
    [ "$missing" = 0 ] && [ "$dup" = 0 ] && [ "$committed" = $((acked + 1)) ] && verified=1
    echo "committed=$committed acked=$acked missing=$missing duplicate_ids=$dup verified=$verified stop=SIG$sig" >"$D/$tag.check"
    rm -rf "$state" "$state.log"
    return 0
}

echo "daemon info spillway=$("$SPW" version 2>/dev/null | head -1 | tr ' ' '_') jobs=$JOBS rss_jobs=$RSS_JOBS reps=$REPS dbcheck=${DBTOOL:-none} state_fs=$(df -T "$D" | awk 'NR == 2 { print $2 }')"
for t in $THREADS; do
    for ((r = 1; r <= REPS; r++)); do
        tag=t${t}_r$r
        one_run "$tag" "$t" "$JOBS" KILL || exit 1
        echo "daemon_http rep=$r $(sed 's/^http //' "$D/$tag.http") $(cat "$D/$tag.check")"
    done
done

# The same with --sync full: every commit waits for fsync of the WAL (durable
# against power loss too, not only against the daemon dying).
for t in $THREADS; do
    for ((r = 1; r <= FULL_REPS; r++)); do
        tag=full_t${t}_r$r
        one_run "$tag" "$t" "$JOBS" KILL --sync full || exit 1
        echo "daemon_http rep=full$r sync=full $(sed 's/^http //' "$D/$tag.http") $(cat "$D/$tag.check")"
    done
done

# The CLI, one process per job like sbatch: `spillway submit` CLI_JOBS times
# from one shell loop, then from 8 loops at once (same total), on one daemon.
cli_loop() { # cli_loop N OUT
    local k
    for ((k = 0; k < $1; k++)); do
        SPILLWAY_TOKEN=$TOKEN "$SPW" submit --url "http://127.0.0.1:$PORT" --gpus 1 --est-runtime 1h \
            -o json -- true 2>&1
    done >"$2"
}
if [ "$CLI_JOBS" -gt 0 ] && "$SPW" submit --help >/dev/null 2>&1; then
    state=$D/cli
    STATES+=("$state")
    start_daemon "$state" || exit 1
    submit_blocker cli || exit 1
    cli_total=0
    for c in 1 8; do
        : >"$D/cli_rates.$c"
        for ((r = 1; r <= REPS; r++)); do
            rm -f "$D"/cli_out.*
            t0=$EPOCHREALTIME
            for ((k = 0; k < c; k++)); do
                n=$((CLI_JOBS / c + (k < CLI_JOBS % c ? 1 : 0)))
                cli_loop "$n" "$D/cli_out.$k" &
            done
            wait
            t1=$EPOCHREALTIME
            ok=$(cat "$D"/cli_out.* | grep -c '"id"')
            cli_total=$((cli_total + ok))
            [ "$ok" = "$CLI_JOBS" ] ||
                echo "daemon: $((CLI_JOBS - ok)) of $CLI_JOBS spillway submit calls failed; first: $(grep -hv '"' "$D"/cli_out.* | head -1)" >&2
            awk -v n="$ok" -v a="$t0" -v b="$t1" 'BEGIN { printf "%d %.3f %.1f\n", n, b - a, n / (b - a) }' >>"$D/cli_rates.$c"
        done
        sort -k3 -g -r "$D/cli_rates.$c" | awk -v c="$c" -v n="$CLI_JOBS" -v reps="$REPS" '
            { ok[NR] = $1; el[NR] = $2; r[NR] = $3 }
            END { m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
                  printf "daemon_cli clients=%d jobs=%d reps=%d ok=%d elapsed_s=%.3f jobs_per_s=%.1f median_jobs_per_s=%.1f\n",
                         c, n, reps, ok[1], el[1], r[1], m }'
    done
    stop_daemon TERM
    kill_blocker "$state"
    n=$(db_query "$state" "SELECT count(*) FROM jobs" 2>/dev/null)
    echo "daemon_cli_check committed=${n:-?} acked=$cli_total verified=$([ "${n:-x}" = $((cli_total + 1)) ] && echo 1 || echo 0)"
    rm -rf "$state" "$state.log"
fi

if [ "$RSS_JOBS" -gt 0 ]; then
    one_run rss 8 "$RSS_JOBS" TERM || exit 1
    echo "daemon_http rep=rss $(sed 's/^http //' "$D/rss.http") $(cat "$D/rss.check")"
    M=$D/metrics.txt
    if [ -s "$M" ] && grep -q '^spillway_decision_seconds_count' "$M"; then
        awk '
            /^spillway_decision_seconds_bucket/ {
                le = $0; sub(/.*le="/, "", le); sub(/".*/, "", le); b[++n] = le; c[n] = $2 }
            /^spillway_decision_seconds_sum/ { sum = $2 }
            /^spillway_decision_seconds_count/ { cnt = $2 }
            /^spillway_queue_length/ { q = $2 }
            /^spillway_jobs_submitted_total/ { sub_total = $2 }
            END {
                # the upper bound (le) of the bucket holding the median, the
                # 99th percentile and the largest turn, in ms
                p50 = "nan"; p99 = "nan"; mx = "nan"
                for (i = 1; i <= n; i++) {
                    v = (b[i] == "+Inf") ? "inf" : sprintf("%g", b[i] * 1e3)
                    if (p50 == "nan" && c[i] >= 0.5 * cnt) p50 = v
                    if (p99 == "nan" && c[i] >= 0.99 * cnt) p99 = v
                    if (mx == "nan" && c[i] >= cnt) mx = v
                }
                printf "daemon_metrics turns=%d turn_sum_s=%.6f turn_mean_ms=%.4f turn_p50_le_ms=%s turn_p99_le_ms=%s turn_max_le_ms=%s queue_length=%s submitted_total=%s\n",
                       cnt, sum, cnt ? sum / cnt * 1e3 : 0, p50, p99, mx, q, sub_total }' "$M"
    else
        echo "daemon_metrics missing=1 (no spillway_decision_seconds in GET /metrics)"
    fi
fi

# vm KEY: the daemon's VmRSS or VmHWM, kB
vm() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DPID/status"; }
# in_memory: its spillway_jobs_in_memory
in_memory() { http_get /metrics 2>/dev/null | awk '$1 == "spillway_jobs_in_memory" { print $2 }'; }
# in_memory_at_most N: waits up to 60 s for the gauge to be N or less
in_memory_at_most() {
    local i
    for ((i = 0; i < 600; i++)); do
        [ "$(in_memory)" -le "$1" ] 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# retention_run TAG RETENTION_S: prints the daemon_retention line; leaves
# its after and restart VmRSS in $D/TAG.after and $D/TAG.restart
retention_run() {
    local tag=$1 state=$D/$1 base hwm after mem
    STATES+=("$state")
    { cat "$D/fleet.yaml"; echo "  job_retention_s: $2"; } >"$D/$tag.yaml"
    chmod 600 "$D/$tag.yaml"
    FLEET=$D/$tag.yaml start_daemon "$state" || return 1
    submit_blocker "$tag" || return 1
    in_memory_at_most 1
    base=$(vm VmRSS)
    "$HTTP" --url "127.0.0.1:$PORT" --token "$TOKEN" --threads 1 --jobs "$RETENTION_JOBS" --cancel \
        >"$D/$tag.http" 2>"$D/$tag.err" || { echo "daemon: bench_http --cancel failed:" >&2; cat "$D/$tag.err" >&2; }
    hwm=$(vm VmHWM)
    # Retained: the ended jobs leave memory (the blocker stays); off: all stay.
    [ "$2" -lt 3600 ] && in_memory_at_most 1
    sleep 1
    after=$(vm VmRSS)
    mem=$(in_memory)
    stop_daemon TERM
    FLEET=$D/$tag.yaml start_daemon "$state" || return 1
    sleep 1
    echo "$after" >"$D/$tag.after"
    vm VmRSS >"$D/$tag.restart"
    echo "daemon_retention retention_s=$2 jobs=$RETENTION_JOBS $(kv cancelled <"$D/$tag.http" | sed 's/^/cancelled=/') jobs_per_s=$(kv jobs_per_s <"$D/$tag.http") base_kb=$base hwm_kb=$hwm after_kb=$after in_memory=$mem restart_kb=$(cat "$D/$tag.restart") restart_in_memory=$(in_memory)"
    stop_daemon TERM
    kill_blocker "$state"
    rm -rf "$state" "$state.log"
}

if [ "$RETENTION_JOBS" -gt 0 ]; then
    kv() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) { n = index($i, "="); if (n && substr($i, 1, n - 1) == k) print substr($i, n + 1) } }'; }
    retention_run kept 2 || exit 1
    retention_run off 3153600000 || exit 1
    awk -v a="$(cat "$D/kept.after")" -v b="$(cat "$D/off.after")" -v c="$(cat "$D/kept.restart")" \
        -v e="$(cat "$D/off.restart")" 'BEGIN { printf "daemon_retention_ratio after=%.3f restart=%.3f\n", a / b, c / e }'
fi
