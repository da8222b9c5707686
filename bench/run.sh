#!/usr/bin/env bash
# bench/run.sh: spillway's simulator and daemon benchmarks against the spec's
# speed targets.  Run from the repository root as `make bench` (which builds
# ./spillway and build/bench/* first).  Inputs and raw outputs go to
# bench/out/ (gitignored); the report is printed and saved there as report.txt
# (the daemon sections, 8 to 10, also as daemon.txt; bench/daemon.sh runs
# them alone).
#
# Environment:
#   BENCH_REPS=3        runs per measurement (best and median are printed)
#   BENCH_PROFILE=0     skip the callgrind / perf stat profiles
#   BENCH_MICRO=0       skip the engine-only microbenchmark
#   BENCH_NO_TIME=1     behave as if /usr/bin/time were missing (no RSS figures)
#   BENCH_DAEMON=0      skip the daemon sections (engine turn, spillway serve, Slurm)
#   BENCH_SLURM=0       skip only Slurm's sbatch figures
#   (bench/daemon.sh lists the sizes it takes from the environment)
#
# See bench/README.md for what each figure means.
set -uo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.." || exit 1
OUT=bench/out
T=$OUT/runs
mkdir -p "$OUT" "$T"
SPW=./spillway
MICRO=build/bench/bench_engine
REPS=${BENCH_REPS:-3}
PROFILE=${BENCH_PROFILE:-1}
DO_MICRO=${BENCH_MICRO:-1}
REPORT=$OUT/report.txt

if [ ! -x "$SPW" ]; then
    echo "bench: $SPW not found; run 'make bench' (or 'make') from the repository root" >&2
    exit 1
fi

# Everything printed from here on also goes to bench/out/report.txt.
exec > >(tee "$REPORT") 2>&1

HAVE_TIME=0
if /usr/bin/time -f %M true >/dev/null 2>&1; then
    HAVE_TIME=1
fi
[ "${BENCH_NO_TIME:-0}" = 1 ] && HAVE_TIME=0   # for testing the no-/usr/bin/time path

GEN_ARGS=(--rate 2048 --runtime exp:3600 --gpus "1:0.7,2:0.15,4:0.1,8:0.05" --seed 1)
SIZES=(10000 30000 100000 300000 1000000)
NEVER_SIZES=(100000 300000 1000000)

# ---- helpers ---------------------------------------------------------------

calc() { awk "BEGIN { printf \"%s\", $1 }" </dev/null; }   # calc 'EXPR'  (awk syntax)
fmt() { awk -v v="$2" "BEGIN { printf \"$1\", v }" </dev/null; }
label() { # 10000 -> 10k, 1000000 -> 1M
    case $1 in
    *000000) echo "${1%000000}M" ;;
    *000) echo "${1%000}k" ;;
    *) echo "$1" ;;
    esac
}
best() { sort -g "$1" | head -1; }
worst() { sort -g "$1" | tail -1; }
median() {
    sort -g "$1" | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# json_num FIELD FILE: a number from spillway's flat JSON output
json_num() { grep -o "\"$1\": [-0-9.eE+]*" "$2" | head -1 | awk '{ print $2 }'; }

SUMMARY=()
verdict() { # verdict NAME OK(1/0) TEXT
    local v=MISS
    [ "$2" = 1 ] && v=PASS
    [ "$2" = skip ] && v=SKIP
    SUMMARY+=("$(printf '%-4s  %-44s %s' "$v" "$1" "$3")")
    echo "$v"
}

# measure TAG CMD...: runs CMD $REPS times; T/TAG.wall gets each wall time
# (seconds), T/TAG.rss each peak RSS (KB), T/TAG.sim each JSON sim_seconds;
# T/TAG.out keeps the stdout of the last run.
measure() {
    local tag=$1
    shift
    : >"$T/$tag.wall"
    : >"$T/$tag.rss"
    : >"$T/$tag.sim"
    local r t0 t1
    for ((r = 0; r < REPS; r++)); do
        t0=$EPOCHREALTIME
        if ((HAVE_TIME)); then
            /usr/bin/time -f %M -o "$T/$tag.time" "$@" >"$T/$tag.out" 2>"$T/$tag.err"
        else
            "$@" >"$T/$tag.out" 2>"$T/$tag.err"
        fi
        local rc=$?
        t1=$EPOCHREALTIME
        if [ $rc -ne 0 ]; then
            echo "bench: command failed ($rc): $*" >&2
            cat "$T/$tag.err" >&2
            return 1
        fi
        calc "$t1 - $t0" >>"$T/$tag.wall"
        echo >>"$T/$tag.wall"
        if ((HAVE_TIME)); then tail -1 "$T/$tag.time" >>"$T/$tag.rss"; fi
        json_num sim_seconds "$T/$tag.out" >>"$T/$tag.sim"
    done
}
rss_mb() { # peak RSS over the runs in MB (10^6 bytes), or n/a
    if ((HAVE_TIME)) && [ -s "$T/$1.rss" ]; then fmt %.1f "$(calc "$(worst "$T/$1.rss") * 1024 / 1e6")"; else echo n/a; fi
}

section() { printf '\n== %s ==\n' "$*"; }

# ---- header and inputs -----------------------------------------------------

T_START=$EPOCHREALTIME
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
git diff --quiet HEAD -- src 2>/dev/null || rev="$rev+dirty"
echo "spillway benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')  rev $rev  ($($SPW version 2>/dev/null))"
echo "host: $(nproc) cores, ${cpu:-unknown CPU}; runs per figure: $REPS (best and median)"
if ((HAVE_TIME)); then
    echo "peak RSS: /usr/bin/time -f %M (max over the runs)"
else
    echo "peak RSS: NOT MEASURED: /usr/bin/time is missing (install it: apt-get install -y time)"
fi

section "Inputs (spillway gen ${GEN_ARGS[*]})"
for n in "${SIZES[@]}"; do
    f=$OUT/jobs_$(label "$n").csv
    t0=$EPOCHREALTIME
    $SPW gen --jobs "$n" "${GEN_ARGS[@]}" -o "$f" || { echo "bench: gen failed" >&2; exit 1; }
    t1=$EPOCHREALTIME
    printf '  %-24s %9d rows %7.1f MB   gen %.2f s\n' "$f" "$n" "$(calc "$(stat -c %s "$f") / 1e6")" \
        "$(calc "$t1 - $t0")"
done
CSV1M=$OUT/jobs_1M.csv

fleet_yaml() { # fleet_yaml NODES SCAN BACKFILL WAIT > file
    cat <<EOF
# generated by bench/run.sh
onprem:
  - name: dc
    nodes: $1
    gpus_per_node: 8
    gpu: A100
    cost_usd_per_gpu_h: 1.10
cloud:
  price_usd_per_gpu_h: 2.5
  boot_delay_s: 0
policy:
  queue: fifo
  scan: $2
  backfill: $3
  fit: first
  wait: $4
EOF
}
fleet_yaml 512 hol none compute:0.25 >"$OUT/fleet512_c025.yaml"
fleet_yaml 256 hol none never >"$OUT/fleet256_hol.yaml"
fleet_yaml 256 skip none never >"$OUT/fleet256_skip.yaml"
fleet_yaml 256 hol easy never >"$OUT/fleet256_easy.yaml"
echo "  configs: $OUT/fleet512_c025.yaml (512 x 8 GPUs, compute:0.25), $OUT/fleet256_{hol,skip,easy}.yaml (256 x 8, never)"

# ---- 1. the 1M target and scaling -----------------------------------------

section "1. 1M jobs on 512 nodes x 8 GPUs, wait compute:0.25 (target: whole run <= 2 s, peak RSS <= 400 MB)"
for n in "${SIZES[@]}"; do
    measure "c025_$n" $SPW sim --trace "$OUT/jobs_$(label "$n").csv" --config "$OUT/fleet512_c025.yaml" -o json -q ||
        exit 1
done
tag=c025_1000000
W1=$(best "$T/$tag.wall")
WM=$(median "$T/$tag.wall")
S1=$(best "$T/$tag.sim")
SM=$(median "$T/$tag.sim")
R1=$(rss_mb $tag)
printf '  spillway sim, 1,000,000 jobs: wall %.3f s best, %.3f s median; sim_seconds %.3f best, %.3f median\n' \
    "$W1" "$WM" "$S1" "$SM"
printf '  throughput: %s jobs/s whole run (best), %s jobs/s simulation only\n' \
    "$(fmt %.0f "$(calc "1e6 / $W1")")" "$(fmt %.0f "$(calc "1e6 / $S1")")"
printf '  peak RSS: %s;  queue_max %s, events %s, jobs_cloud %s\n' \
    "$([ "$R1" = n/a ] && echo "n/a (no /usr/bin/time)" || echo "$R1 MB")" \
    "$(json_num queue_max "$T/$tag.out")" "$(json_num events "$T/$tag.out")" "$(json_num jobs_cloud "$T/$tag.out")"
printf '  wall <= 2 s:      '
verdict "1M compute:0.25 wall <= 2 s" "$(calc "$W1 <= 2 ? 1 : 0")" "$(fmt %.3f "$W1") s best ($(fmt %.3f "$WM") median)"
printf '  RSS  <= 400 MB:   '
if [ "$R1" = n/a ]; then
    verdict "1M compute:0.25 peak RSS <= 400 MB" skip "/usr/bin/time missing"
else
    verdict "1M compute:0.25 peak RSS <= 400 MB" "$(calc "$R1 <= 400 ? 1 : 0")" "$R1 MB"
fi

section "2. Scaling with trace size (same rate, 512 x 8 GPUs, compute:0.25)"
printf '  %-6s %10s %10s %12s %10s %12s %9s\n' jobs "wall best" median "us/job wall" "sim best" "ns/job sim" "RSS MB"
for n in "${SIZES[@]}"; do
    tag=c025_$n
    w=$(best "$T/$tag.wall")
    s=$(best "$T/$tag.sim")
    printf '  %-6s %9.3fs %9.3fs %12.3f %9.3fs %12.1f %9s\n' "$(label "$n")" "$w" "$(median "$T/$tag.wall")" \
        "$(calc "$w * 1e6 / $n")" "$s" "$(calc "$s * 1e9 / $n")" "$(rss_mb "$tag")"
done
w10=$(best "$T/c025_10000.wall")
s10=$(best "$T/c025_10000.sim")
RW=$(calc "($W1 / 1e6) / ($w10 / 1e4)")
RS=$(calc "($S1 / 1e6) / ($s10 / 1e4)")
printf '  per-job time ratio 1M/10k: wall %.2f, simulation %.2f  (1.0 = linear; n log n ~1.5; quadratic = 100)\n' "$RW" "$RS"
printf '  (at 10k the wall time is mostly process start and config, so the wall ratio is below 1)\n'
printf '  near-linear (both ratios <= 2): '
verdict "scaling 10k->1M near-linear (per-job <= 2x)" "$(calc "$RW <= 2 && $RS <= 2 ? 1 : 0")" \
    "per-job 1M/10k: wall $(fmt %.2f "$RW"), sim $(fmt %.2f "$RS")"

# ---- 3. deep queues --------------------------------------------------------

section "3. wait: never on 256 nodes x 8 GPUs (overloaded: the queue grows past 100,000 jobs)"
for p in hol skip easy; do
    for n in "${NEVER_SIZES[@]}"; do
        measure "never_${p}_$n" $SPW sim --trace "$OUT/jobs_$(label "$n").csv" --config "$OUT/fleet256_$p.yaml" -o json -q ||
            exit 1
    done
done
printf '  %-12s %-5s %10s %10s %10s %9s %10s %11s %10s\n' policy jobs "wall best" median "sim best" "RSS MB" queue_max "ns/job sim" backfilled
for p in hol skip easy; do
    for n in "${NEVER_SIZES[@]}"; do
        tag=never_${p}_$n
        s=$(best "$T/$tag.sim")
        printf '  %-12s %-5s %9.3fs %9.3fs %9.3fs %9s %10s %11.1f %10s\n' "scan $p" "$(label "$n")" \
            "$(best "$T/$tag.wall")" "$(median "$T/$tag.wall")" "$s" "$(rss_mb "$tag")" \
            "$(json_num queue_max "$T/$tag.out")" "$(calc "$s * 1e9 / $n")" "$(json_num jobs_backfilled "$T/$tag.out")"
    done
done
echo "  (scan easy = scan: hol with backfill: easy)"
echo "  per-job time ratio 100k -> 1M (1.0 = linear; n log n ~1.2; quadratic = 10); target: not quadratic (<= 2):"
for p in hol skip easy; do
    a=never_${p}_100000
    b=never_${p}_1000000
    rw=$(calc "($(best "$T/$b.wall") / 1e6) / ($(best "$T/$a.wall") / 1e5)")
    rs=$(calc "($(best "$T/$b.sim") / 1e6) / ($(best "$T/$a.sim") / 1e5)")
    wb=$(best "$T/$b.wall")
    printf '    %-10s wall %.2f  sim %.2f   ' "$p" "$rw" "$rs"
    name="never/$p 100k->1M not quadratic"
    [ $p = easy ] && name="never/easy backfill 100k->1M not quadratic"
    verdict "$name" "$(calc "$rs <= 2 && $rw <= 2 ? 1 : 0")" \
        "per-job wall $(fmt %.2f "$rw"), sim $(fmt %.2f "$rs"); 1M wall $(fmt %.2f "$wb") s, queue_max $(json_num queue_max "$T/$b.out")"
done
echo "  for reference against the 2 s budget of the compute:0.25 run (not a target for these):"
for p in hol skip easy; do
    wb=$(best "$T/never_${p}_1000000.wall")
    printf '    %-10s 1M wall %.3f s  %s\n' "$p" "$wb" "$(calc "$wb <= 2 ? \"(within 2 s)\" : \"(over 2 s)\"")"
done

# ---- 4. breakdown ----------------------------------------------------------

section "4. Where the 1M compute:0.25 run goes"
LOAD=""
if [ -x "$MICRO" ]; then
    $MICRO --load "$CSV1M" --reps "$REPS" >"$T/load.txt" 2>&1 && LOAD=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^best_s=/) { sub("best_s=", "", $i); print $i } }' "$T/load.txt")
fi
printf '  whole run (wall, best)                      %7.3f s  100%%\n' "$W1"
printf '  simulation (JSON sim_seconds: spw_sim_run)  %7.3f s  %4.0f%%\n' "$S1" "$(calc "100 * $S1 / $W1")"
if [ -n "$LOAD" ]; then
    REST=$(calc "$W1 - $S1 - $LOAD")
    printf '  trace parsing (spw_trace_load, measured    %7.3f s  %4.0f%%\n' "$LOAD" "$(calc "100 * $LOAD / $W1")"
    printf '    alone by bench_engine --load)\n'
    printf '  rest: exec, config, report, teardown        %7.3f s  %4.0f%%\n' "$REST" "$(calc "100 * $REST / $W1")"
else
    printf '  load + report (wall - sim_seconds)          %7.3f s  %4.0f%%\n' "$(calc "$W1 - $S1")" "$(calc "100 * ($W1 - $S1) / $W1")"
    echo "  ($MICRO not built: no separate parse figure)"
fi
printf '  per job: %.0f ns simulation, %s ns parsing\n' "$(calc "$S1 * 1e3")" \
    "$([ -n "$LOAD" ] && fmt %.0f "$(calc "$LOAD * 1e3")" || echo '?')"

# ---- 5. engine-only microbenchmark ----------------------------------------

if [ -x "$MICRO" ] && [ "$DO_MICRO" = 1 ]; then
    section "5. Engine only: spw_sim_run on in-memory jobs (build/bench/bench_engine, no CSV)"
    $MICRO --jobs 10000,100000,1000000 --reps "$REPS" >"$T/micro.txt" 2>&1 || { cat "$T/micro.txt"; exit 1; }
    kv() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) print a[2] } }'; }
    printf '  %-34s %12s %12s %12s %10s\n' policy "10k ns/job" "100k ns/job" "1M ns/job" "1M/100k"
    for p in c025 hol skip easy; do
        case $p in
        c025) d="512x8, compute:0.25, hol" ;;
        hol) d="256x8, never, scan hol" ;;
        skip) d="256x8, never, scan skip" ;;
        easy) d="256x8, never, backfill easy" ;;
        esac
        v=()
        for n in 10000 100000 1000000; do
            v+=("$(grep "^engine policy=$p jobs=$n " "$T/micro.txt" | kv ns_per_job)")
        done
        printf '  %-34s %12s %12s %12s %10s\n' "$d" "${v[0]}" "${v[1]}" "${v[2]}" "$(fmt %.2f "$(calc "${v[2]} / ${v[1]}")")"
    done
    echo "  ($(grep '^info' "$T/micro.txt" | sed 's/^info //'); best of $REPS; raw: $T/micro.txt)"
fi

# ---- 6. peers --------------------------------------------------------------

section "6. Reference points on the same 1M-row CSV ($(fmt %.1f "$(calc "$(stat -c %s "$CSV1M") / 1e6")") MB)"
measure peer_wc wc -l "$CSV1M"
cat >"$T/pyread.py" <<'EOF'
import csv, sys
n = 0
with open(sys.argv[1], newline="") as f:
    for row in csv.reader(f):
        n += 1
print(n)
EOF
cat >"$T/pyparse.py" <<'EOF'
import csv, sys
n = 0
with open(sys.argv[1], newline="") as f:
    r = csv.reader(f)
    next(r)
    for row in r:
        float(row[1]); int(row[2]); float(row[3])
        n += 1
print(n)
EOF
HAVE_PY=0
# Python itself, not a version manager's shim in front of it (pyenv's adds
# about a second to every run): Debian's /usr/bin/python3 when there is one.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -n "$PY" ]; then
    HAVE_PY=1
    measure peer_py "$PY" "$T/pyread.py" "$CSV1M"
    measure peer_pyparse "$PY" "$T/pyparse.py" "$CSV1M"
fi
measure peer_sort sort -t, -k2 -n "$CSV1M"
printf '  %-52s %9s %9s   %s\n' "" "best" "median" "spillway sim (whole 1M run, $(fmt %.3f "$W1") s) ="
peer() { # peer TAG TEXT
    local b
    b=$(best "$T/$1.wall")
    printf '  %-52s %8.3fs %8.3fs   %.2fx that\n' "$2" "$b" "$(median "$T/$1.wall")" "$(calc "$W1 / $b")"
}
peer peer_wc "wc -l"
if ((HAVE_PY)); then
    peer peer_py "python3 csv.reader loop (read rows only)"
    peer peer_pyparse "python3 csv.reader + float/int of 3 fields"
else
    echo "  python3 not found: no Python reference"
fi
peer peer_sort "sort -t, -k2 -n (GNU sort, LC_ALL=C)"
if ((HAVE_PY)); then
    printf '  => simulating 1M jobs (parsing included) takes %.2fx the time Python takes only to read the CSV\n' \
        "$(calc "$W1 / $(best "$T/peer_py.wall")")"
fi
printf '  => and %.2fx the time GNU sort takes to sort it\n' "$(calc "$W1 / $(best "$T/peer_sort.wall")")"

# ---- 7. profiles -----------------------------------------------------------

# top_fns FILE N: the first N rows of a callgrind_annotate function table,
# as "Ir (pct)  src/dir/file.c:function" (libc frames as libc/file.c:function).
top_fns() {
    awk -v n="$2" '
        /file:function/ { on = 1; next }
        on && /^ *[0-9,]+ +\( *[0-9.]+%\)/ { sub(/ \[[^]]*\]$/, ""); print; if (++k == n) exit }' "$1" |
        sed -E 's#[^ ]*/src/#src/#; s#\./[^ ]*/([^/ ]+:)#libc/\1#'
}
# pct_of FILE FUNCTION: the percentage column of FUNCTION's first row
pct_of() {
    local v
    v=$(grep -m1 -E ":$2( |$)" "$1" | sed -E 's/^[^(]*\( *([0-9.]+%)\).*/\1/')
    echo "${v:--}"
}

if [ "$PROFILE" = 1 ]; then
    section "7. Profiles (bench/out/)"
    if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
        for prof in "c025 fleet512_c025 compute:0.25 on 512x8" "easy fleet256_easy never+EASY backfill on 256x8"; do
            set -- $prof
            name=$1
            cfg=$2
            shift 2
            desc="$*"
            cg=$OUT/callgrind_${name}_100k.out
            txt=$OUT/callgrind_${name}_100k.txt
            valgrind --tool=callgrind --callgrind-out-file="$cg" \
                $SPW sim --trace "$OUT/jobs_100k.csv" --config "$OUT/$cfg.yaml" -o json -q \
                >/dev/null 2>"$T/callgrind_$name.log" || { echo "  callgrind failed: see $T/callgrind_$name.log"; continue; }
            {
                echo "# self instruction counts (Ir), 100k jobs, $desc"
                callgrind_annotate --inclusive=no "$cg" 2>/dev/null
                echo
                echo "# inclusive instruction counts"
                callgrind_annotate --inclusive=yes "$cg" 2>/dev/null
            } >"$txt"
            callgrind_annotate --inclusive=no "$cg" >"$T/cg_self_$name.txt" 2>/dev/null
            callgrind_annotate --inclusive=yes "$cg" >"$T/cg_incl_$name.txt" 2>/dev/null
            total=$(grep -m1 'PROGRAM TOTALS' "$T/cg_self_$name.txt" | awk '{ print $1 }')
            echo "  callgrind, 100k jobs, $desc: $total instructions ($cg, annotated: $txt)"
            echo "  top 10 functions by self instructions:"
            top_fns "$T/cg_self_$name.txt" 10 >"$OUT/callgrind_${name}_100k_top10.txt"
            sed 's/^/    /' "$OUT/callgrind_${name}_100k_top10.txt"
            I=$T/cg_incl_$name.txt
            echo "  inclusive: spw_trace_load $(pct_of "$I" spw_trace_load), spw_sim_run $(pct_of "$I" spw_sim_run)," \
                "spw_engine_schedule $(pct_of "$I" spw_engine_schedule), trace.c get_int $(pct_of "$I" get_int)" \
                "(of which snprintf $(pct_of "$I" snprintf))"
            echo
        done
    else
        echo "  valgrind/callgrind_annotate not installed: no instruction profile (apt-get install -y valgrind)"
    fi
    if command -v perf >/dev/null; then
        if perf stat -o "$OUT/perf_stat_1M.txt" $SPW sim --trace "$CSV1M" --config "$OUT/fleet512_c025.yaml" -o json -q \
            >/dev/null 2>"$T/perf.err"; then
            echo "  perf stat, 1M compute:0.25 run ($OUT/perf_stat_1M.txt):"
            grep -E 'task-clock|page-faults|context-switches|instructions|cycles|elapsed|user|sys' "$OUT/perf_stat_1M.txt" |
                sed -E 's/ +/ /g; s/^ */    /'
        else
            echo "  perf stat failed ($(head -1 "$T/perf.err")): see $T/perf.err"
        fi
    else
        echo "  perf not installed: no perf stat"
    fi
fi

# ---- 8-10. the daemon ------------------------------------------------------

if [ "${BENCH_DAEMON:-1}" = 1 ]; then
    # Engine turn with a deep queue, spillway serve over HTTP, Slurm's sbatch;
    # bench/daemon.sh prints its sections and leaves its verdicts in a file.
    bench/daemon.sh
    if [ -f "$OUT/daemon_summary.txt" ]; then
        while IFS= read -r l; do SUMMARY+=("$l"); done <"$OUT/daemon_summary.txt"
    fi
else
    section "8-10. Daemon benchmarks skipped (BENCH_DAEMON=0)"
fi

# ---- summary ---------------------------------------------------------------

section "Summary"
for s in "${SUMMARY[@]}"; do echo "  $s"; done
printf '  benchmark took %.0f s; report saved to %s\n' "$(calc "$EPOCHREALTIME - $T_START")" "$REPORT"
