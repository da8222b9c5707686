#!/usr/bin/env bash
# bench/daemon.sh: the daemon benchmarks of bench/run.sh (its sections 8 to
# 10), runnable alone from the repository root after `make` and
# `make build/bench/bench_turn build/bench/bench_http`:
#
#   8. one scheduling turn of the engine with 100,000 queued jobs on 1,000
#      nodes x 8 GPUs (build/bench/bench_turn; target <= 50 ms);
#   9. `spillway serve`: durable submits over HTTP from 1 and 8 keep-alive
#      clients (bench/bench_daemon.sh + build/bench/bench_http; targets
#      >= 2,000 and >= 5,000 jobs/s, each acknowledged job committed) and the
#      daemon's RSS with 100,000 jobs (target <= 200 MB);
#  10. Slurm's sbatch on the same machine in the same run (bench/slurm.sh),
#      and the ratio spillway jobs/s / sbatch jobs/s for 1 and 8 clients.
#
# Environment (defaults in brackets):
#   BENCH_REPS [3]               runs per throughput figure (best and median)
#   BENCH_TURNS [20000]          finish turns per engine run
#   BENCH_DAEMON_JOBS [20000]    jobs per HTTP throughput run
#   BENCH_DAEMON_RSS_JOBS [100000]  jobs for the RSS figure
#   BENCH_CLI_JOBS [500]         `spillway submit` processes per CLI run
#   BENCH_SLURM_JOBS [500]       sbatch calls per Slurm run
#   BENCH_SLURM=0                skip Slurm
#
# The report goes to stdout and bench/out/daemon.txt; raw outputs to
# bench/out/runs/daemon_*.txt.  Each target line reads PASS, MISS or SKIP;
# they are also written to bench/out/daemon_summary.txt for run.sh's summary.
set -uo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.." || exit 1
OUT=bench/out
T=$OUT/runs
mkdir -p "$T"
REPS=${BENCH_REPS:-3}
TURNS=${BENCH_TURNS:-20000}
DJOBS=${BENCH_DAEMON_JOBS:-20000}
RJOBS=${BENCH_DAEMON_RSS_JOBS:-100000}
CJOBS=${BENCH_CLI_JOBS:-500}
SJOBS=${BENCH_SLURM_JOBS:-500}
TURN=build/bench/bench_turn
SUMFILE=$OUT/daemon_summary.txt
: >"$SUMFILE"

exec > >(tee "$OUT/daemon.txt") 2>&1
TEE_PID=$!
# On exit, let tee write everything before the caller (run.sh) prints on.
trap 'exec >&- 2>&-; wait "$TEE_PID" 2>/dev/null' EXIT

calc() { awk "BEGIN { printf \"%s\", ($1) }" </dev/null; }   # parenthesised: mawk reads a bare > as a redirection
# kv KEY < lines: the value of KEY=... in each line
kv() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) { n = index($i, "="); if (n && substr($i, 1, n - 1) == k) print substr($i, n + 1) } }'; }
section() { printf '\n== %s ==\n' "$*"; }
verdict() { # verdict NAME OK(1/0/skip) TEXT
    local v=MISS
    [ "$1" = "" ] && return
    [ "$2" = 1 ] && v=PASS
    [ "$2" = skip ] && v=SKIP
    printf '%-4s  %-44s %s\n' "$v" "$1" "$3" >>"$SUMFILE"
    echo "$v"
}

echo "daemon benchmarks  $(date -u '+%Y-%m-%d %H:%M UTC')  host: $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "(client, daemon and slurmctld share these cores: every figure here is a lower bound for a daemon on its own machine)"

# ---- 8. engine turn ----------------------------------------------------------

section "8. Engine: one scheduling turn, 100,000 queued jobs, 1,000 nodes x 8 GPUs (target <= 50 ms)"
if [ -x "$TURN" ]; then
    if "$TURN" --turns "$TURNS" >"$T/daemon_turn.txt" 2>&1; then
        R=$T/daemon_turn.txt
        echo "  build/bench/bench_turn: FIFO, wait compute:0.25, flat cloud; GPUs 1/2/4/8/16/32 at 55/17/14/10/3/1%;"
        echo "  fill to 100k queued, then $TURNS turns of 'finish a random running job, schedule', 100 submits every 100."
        echo "  spw_engine_schedule time per turn in ms: median / max over the turns (n = turns of that kind)"
        printf '  %-7s %-6s %-22s %-22s %-22s %-22s %s\n' fleet policy "full: nothing fits" "finish: starts jobs" "finish: starts none" "after 100 submits" "queued"
        worst=0
        for f in 1pool 4pools; do
            for p in hol skip easy; do
                cell() {
                    local l
                    l=$(grep "^turn fleet=$f policy=$p kind=$1 " "$R")
                    printf '%s / %s (%s)' "$(echo "$l" | kv median_ms | awk '{ printf "%.4f", $1 }')" \
                        "$(echo "$l" | kv max_ms | awk '{ printf "%.4f", $1 }')" "$(echo "$l" | kv n)"
                }
                run=$(grep "^run fleet=$f policy=$p " "$R")
                printf '  %-7s %-6s %-22s %-22s %-22s %-22s %s\n' "$f" "$p" "$(cell full)" "$(cell finish+start)" \
                    "$(cell finish+none)" "$(cell submit100)" \
                    "$(echo "$run" | kv queued_min)-$(echo "$run" | kv queued_max)"
                for k in full finish+start finish+none submit100 idle; do
                    m=$(grep "^turn fleet=$f policy=$p kind=$k " "$R" | kv max_ms)
                    worst=$(calc "$m > $worst ? $m : $worst")
                done
            done
        done
        echo "  (1pool: one pool of 1,000 nodes; 4pools: 4 x 250 nodes of A100/H100/L40S/V100, 40% of jobs ask for one model)"
        echo "  idle turn (nothing changed since the last): max $(grep 'kind=idle ' "$R" | kv max_ms | sort -g | tail -1) ms"
        echo "  for reference, the worst turn there is: the clock jumps a day and every queued job's wait expires at once;"
        grep 'kind=burst_all ' "$R" | while read -r l; do
            f=$(echo "$l" | kv fleet)
            p=$(echo "$l" | kv policy)
            printf '    %-7s %-5s one turn bursts %s jobs to the cloud in %.1f ms\n' "$f" "$p" \
                "$(grep "^run fleet=$f policy=$p " "$R" | kv burst_all_placed)" "$(echo "$l" | kv max_ms)"
        done
        printf '  every turn of the loop <= 50 ms: '
        verdict "engine turn, 100k queued, 1k nodes <= 50 ms" "$(calc "$worst <= 50 ? 1 : 0")" \
            "max $(printf '%.3f' "$worst") ms over all policies and kinds (burst_all excluded)"
    else
        echo "  bench_turn failed:"
        tail -5 "$T/daemon_turn.txt"
        verdict "engine turn, 100k queued, 1k nodes <= 50 ms" 0 "bench_turn failed"
    fi
else
    echo "  $TURN not built (make build/bench/bench_turn): SKIP"
    verdict "engine turn, 100k queued, 1k nodes <= 50 ms" skip "bench_turn not built"
fi

# ---- 9. the daemon over HTTP -------------------------------------------------

section "9. spillway serve: durable submits over HTTP (targets >= 2,000 jobs/s 1 client, >= 5,000 jobs/s 8 clients; RSS <= 200 MB at 100k jobs)"
bench/bench_daemon.sh --jobs "$DJOBS" --rss-jobs "$RJOBS" --reps "$REPS" --cli-jobs "$CJOBS" \
    >"$T/daemon_http.txt" 2>"$T/daemon_http.err"
drc=$?
SPW1=
SPW8=
CLI1=
CLI8=
H=$T/daemon_http.txt
if [ $drc -eq 3 ]; then
    sed 's/^/  /' "$H"
    for n in "daemon submits, 1 client >= 2,000 jobs/s" "daemon submits, 8 clients >= 5,000 jobs/s" \
        "daemon submits: every ack committed" "daemon RSS with 100k jobs <= 200 MB"; do
        verdict "$n" skip "$(head -1 "$H")" >/dev/null
    done
elif [ $drc -ne 0 ] || ! grep -q '^daemon_http ' "$H"; then
    echo "  bench/bench_daemon.sh failed ($drc):"
    sed 's/^/    /' "$H" "$T/daemon_http.err" | tail -20
    verdict "daemon submits, 1 client >= 2,000 jobs/s" 0 "bench_daemon.sh failed" >/dev/null
    verdict "daemon submits, 8 clients >= 5,000 jobs/s" 0 "bench_daemon.sh failed" >/dev/null
else
    [ -s "$T/daemon_http.err" ] && { echo "  messages:"; sed 's/^/    /' "$T/daemon_http.err"; }
    echo "  each run: a fresh daemon and state dir ($(grep '^daemon info' "$H" | kv state_fs)), one GPU slot held by a"
    echo "  'sleep 3600' job so every submitted job stays queued; build/bench/bench_http posts"
    echo "  {\"run\":[\"true\"],\"gpus\":1,\"est_runtime\":3600}, each client waiting for its 201; then the daemon is"
    echo "  killed (SIGKILL) and its SQLite file read: committed must equal acknowledged + the blocker."
    printf '  %-22s %7s %10s %10s %9s %9s %9s %10s %9s\n' run clients jobs/s elapsed p50_ms p99_ms max_ms committed verified
    grep '^daemon_http ' "$H" | while read -r l; do
        rep=$(echo "$l" | kv rep)
        s=$(echo "$l" | kv sync)
        printf '  %-22s %7s %10s %9ss %9s %9s %9s %10s %9s\n' "rep $rep${s:+ (sync $s)}" "$(echo "$l" | kv threads)" \
            "$(echo "$l" | kv jobs_per_s)" "$(echo "$l" | kv elapsed_s)" "$(echo "$l" | kv p50_ms)" \
            "$(echo "$l" | kv p99_ms)" "$(echo "$l" | kv max_ms)" \
            "$(echo "$l" | kv committed)/$(echo "$l" | kv acked)" "$(echo "$l" | kv verified)"
    done
    # best and median of the normal-sync reps
    stat_of() { # stat_of THREADS best|median
        grep '^daemon_http rep=[0-9]' "$H" | grep -v sync= | grep " threads=$1 " | kv jobs_per_s | sort -g |
            awk -v w="$2" '{ v[NR] = $1 } END { if (!NR) { print "nan"; exit }
                if (w == "best") print v[NR]; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
    }
    SPW1=$(stat_of 1 best)
    SPW8=$(stat_of 8 best)
    allver=$(grep '^daemon_http ' "$H" | kv verified | sort -u | paste -sd, -)
    errs=$(grep '^daemon_http ' "$H" | kv errors | awk '{ s += $1 } END { print s + 0 }')
    printf '  1 client:  %s jobs/s best, %s median   ' "$SPW1" "$(stat_of 1 median)"
    verdict "daemon submits, 1 client >= 2,000 jobs/s" "$(calc "$SPW1 >= 2000 ? 1 : 0")" "$SPW1 jobs/s best of $REPS ($DJOBS jobs each)"
    printf '  8 clients: %s jobs/s best, %s median   ' "$SPW8" "$(stat_of 8 median)"
    verdict "daemon submits, 8 clients >= 5,000 jobs/s" "$(calc "$SPW8 >= 5000 ? 1 : 0")" "$SPW8 jobs/s best of $REPS ($DJOBS jobs each)"
    printf '  every response 201 and every acknowledged job in the database after kill -9: '
    verdict "daemon submits: every ack committed" "$([ "$allver" = 1 ] && [ "$errs" = 0 ] && echo 1 || echo 0)" \
        "verified=$allver in every run, $errs non-201 responses"
    if grep -q '^daemon_cli ' "$H"; then
        CLI1=$(grep '^daemon_cli clients=1 ' "$H" | kv jobs_per_s)
        CLI8=$(grep '^daemon_cli clients=8 ' "$H" | kv jobs_per_s)
        echo "  the CLI, one process per job (as sbatch): spillway submit x $CJOBS: 1 client $CLI1 jobs/s, 8 clients $CLI8 jobs/s (best of $REPS);" \
            "$(grep '^daemon_cli_check' "$H" | sed 's/^daemon_cli_check //')"
    fi
    rl=$(grep '^daemon_rss ' "$H")
    if [ -n "$rl" ]; then
        hwm=$(echo "$rl" | kv vmhwm_mb)
        echo "  RSS after $(echo "$rl" | kv jobs) submits from 8 clients ($(grep '^daemon_http rep=rss' "$H" | kv jobs_per_s) jobs/s," \
            "verified=$(grep '^daemon_http rep=rss' "$H" | kv verified) after SIGTERM):"
        printf '    VmHWM %s MB, VmRSS %s MB (MB = 10^6 bytes)   ' "$hwm" "$(echo "$rl" | kv vmrss_mb)"
        verdict "daemon RSS with 100k jobs <= 200 MB" "$(calc "$hwm <= 200 ? 1 : 0")" "VmHWM $hwm MB at $(echo "$rl" | kv jobs) queued jobs"
        ml=$(grep '^daemon_metrics ' "$H")
        if echo "$ml" | grep -q missing=1; then
            echo "    GET /metrics: no spillway_decision_seconds histogram"
        else
            echo "    daemon's own turns (GET /metrics, spillway_decision_seconds): $(echo "$ml" | kv turns) turns, mean" \
                "$(echo "$ml" | kv turn_mean_ms) ms; median <= $(echo "$ml" | kv turn_p50_le_ms) ms, p99 <= $(echo "$ml" | kv turn_p99_le_ms) ms," \
                "max <= $(echo "$ml" | kv turn_max_le_ms) ms (histogram bucket bounds); queue_length $(echo "$ml" | kv queue_length)"
        fi
    fi
fi

# ---- 10. Slurm -----------------------------------------------------------------

section "10. Slurm's sbatch on this machine, same run (slurmctld + 1 slurmd, auth/none, held jobs)"
if [ "${BENCH_SLURM:-1}" = 1 ]; then
    bench/slurm.sh --jobs "$SJOBS" --reps "$REPS" >"$T/daemon_slurm.txt" 2>"$T/daemon_slurm.err"
    src=$?
    S=$T/daemon_slurm.txt
    if [ $src -eq 3 ]; then
        sed 's/^/  /' "$S"
    elif [ $src -ne 0 ] || ! grep -q '^slurm clients=' "$S"; then
        echo "  bench/slurm.sh failed ($src):"
        sed 's/^/    /' "$S" "$T/daemon_slurm.err" | tail -25
    else
        [ -s "$T/daemon_slurm.err" ] && sed 's/^/  note: /' "$T/daemon_slurm.err"
        SB1=$(grep '^slurm clients=1 ' "$S" | kv jobs_per_s)
        SB8=$(grep '^slurm clients=8 ' "$S" | kv jobs_per_s)
        echo "  $(grep '^slurm info' "$S" | sed 's/^slurm info //')"
        printf '  sbatch x %s, 1 client:  %s jobs/s best, %s median\n' "$SJOBS" "$SB1" "$(grep '^slurm clients=1 ' "$S" | kv median_jobs_per_s)"
        printf '  sbatch x %s, 8 clients: %s jobs/s best, %s median\n' "$SJOBS" "$SB8" "$(grep '^slurm clients=8 ' "$S" | kv median_jobs_per_s)"
        if [ -n "$SPW1" ]; then
            echo "  ratio spillway / sbatch (best against best):"
            printf '    HTTP keep-alive client:   1 client %.1fx (%s / %s), 8 clients %.1fx (%s / %s)\n' \
                "$(calc "$SPW1 / $SB1")" "$SPW1" "$SB1" "$(calc "$SPW8 / $SB8")" "$SPW8" "$SB8"
            [ -n "$CLI1" ] && printf '    CLI, a process per job:   1 client %.2fx (%s / %s), 8 clients %.2fx (%s / %s)\n' \
                "$(calc "$CLI1 / $SB1")" "$CLI1" "$SB1" "$(calc "$CLI8 / $SB8")" "$CLI8" "$SB8"
            echo "  (sbatch is a process per job, its own RPC to slurmctld; compare it with the CLI line for like with like)"
        fi
    fi
else
    echo "  BENCH_SLURM=0: skipped"
fi
