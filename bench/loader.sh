#!/usr/bin/env bash
# bench/loader.sh: `spillway sim` on a 1M-job trace beside Python's csv
# module counting the rows of the same file, in the same run (issue 25, "a
# loader at the speed of the disk"), and a 10M-job replay.  Run from the
# repository root after `make`; inputs and raw figures go to bench/out/loader/.
#
# Environment:
#   LOADER_REPS=3     runs of each command, interleaved (min/median/max)
#   LOADER_JOBS=1000000  jobs in the compared trace
#   LOADER_10M=1      also replay 10M jobs once (0: skip; needs ~3 GB free)
#   LOADER_BASE=PATH  another spillway binary to time in the same runs
#                     (a build of an older commit), with its JSON compared
#                     to this one's (sim_seconds aside)
#
# Each figure: wall seconds (min/median/max), CPU seconds (user + system,
# median), peak RSS (the largest of the runs, /usr/bin/time %M) and minor
# page faults (median; they hardly vary from run to run, unlike times on a
# shared machine).
# See bench/README.md ("The loader") for what the figures mean.
set -uo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.." || exit 1
OUT=bench/out/loader
mkdir -p "$OUT"
SPW=./spillway
REPS=${LOADER_REPS:-3}
JOBS=${LOADER_JOBS:-1000000}
BASE=${LOADER_BASE:-}
GEN_ARGS=(--rate 2048 --runtime exp:3600 --gpus "1:0.7,2:0.15,4:0.1,8:0.05" --seed 1)

[ -x "$SPW" ] || { echo "loader.sh: $SPW not found; run make first" >&2; exit 1; }
/usr/bin/time -f %M true >/dev/null 2>&1 ||
    { echo "loader.sh: /usr/bin/time is missing (apt-get install -y time)" >&2; exit 1; }
# Python itself, not a version manager's shim in front of it (pyenv's adds
# about a second of its own to every run, which made spillway look 4x
# nearer Python than it is): Debian's /usr/bin/python3 when there is one.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || { echo "loader.sh: python3 is missing" >&2; exit 1; }

# The fleet of bench/run.sh's section 1 (512 x 8 GPUs, compute:0.25), from
# run.sh's own fleet_yaml, so both benches replay the same configuration.
# shellcheck source=/dev/null
source <(sed -n '/^fleet_yaml() {/,/^}/p' bench/run.sh)
declare -F fleet_yaml >/dev/null || { echo "loader.sh: no fleet_yaml in bench/run.sh" >&2; exit 1; }
fleet_yaml 512 hol none compute:0.25 >"$OUT/fleet.yaml"
# Python's row count: the very script of bench/run.sh's section 6.
# shellcheck disable=SC2016 # the pattern is run.sh's text, not an expansion
sed -n '/^cat >"$T\/pyread.py" <</,/^EOF$/p' bench/run.sh | sed '1d;$d' >"$OUT/pyread.py"
[ -s "$OUT/pyread.py" ] || { echo "loader.sh: no pyread.py in bench/run.sh" >&2; exit 1; }

trace() { # trace JOBS: generates bench/out/loader/jobs_JOBS.csv once, prints its path
    local f=$OUT/jobs_$1.csv
    if [ ! -s "$f" ]; then
        if ! $SPW gen --jobs "$1" "${GEN_ARGS[@]}" -o "$f.tmp" || ! mv "$f.tmp" "$f"; then
            echo "loader.sh: gen failed" >&2
            exit 1
        fi
    fi
    echo "$f"
}

# run TAG CMD...: one timed run; appends "wall cpu rss_kb" to $OUT/TAG.txt
run() {
    local tag=$1 t0 t1
    shift
    t0=$EPOCHREALTIME
    /usr/bin/time -o "$OUT/$tag.time" -f '%U %S %M %R' "$@" >"$OUT/$tag.out" 2>"$OUT/$tag.err" ||
        { echo "loader.sh: failed: $*" >&2; cat "$OUT/$tag.err" >&2; exit 1; }
    t1=$EPOCHREALTIME
    awk -v w="$(awk "BEGIN { print $t1 - $t0 }")" '{ print w, $1 + $2, $3, $4 }' \
        "$OUT/$tag.time" >>"$OUT/$tag.txt"
}

# stats TAG COL: min median max of column COL over the runs
stats() {
    sort -g -k"$2","$2" "$OUT/$1.txt" | awk -v c="$2" '{ v[NR] = $c }
        END { printf "%s %s %s", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR] }'
}
med() { stats "$1" "$2" | awk '{ print $2 }'; }
line() { # line TAG TEXT
    local w
    read -r -a w <<<"$(stats "$1" 1)"
    printf '  %-34s %7.3f %7.3f %7.3f   %6.3f   %7.1f  %7.0f\n' "$2" "${w[0]}" "${w[1]}" "${w[2]}" \
        "$(med "$1" 2)" "$(stats "$1" 3 | awk '{ print $3 / 1000 }')" "$(med "$1" 4)"
}

F=$(trace "$JOBS")
echo "spillway loader benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')  rev $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $REPS runs each, interleaved"
printf 'trace: %s, %d jobs, %.1f MB; fleet %s\n' "$F" "$JOBS" "$(awk -v s="$(stat -c %s "$F")" 'BEGIN { print s / 1e6 }')" "$OUT/fleet.yaml"
rm -f "$OUT"/{sim,base,py}.txt
# A run that follows a large one finds its memory cheaper to fault in (on a
# virtual machine most of all), so the two spillway binaries take turns at
# going first, with Python between them.
for ((i = 0; i < REPS; i++)); do
    first=sim second=base
    ((i % 2)) && first=base second=sim
    for who in $first py $second; do
        case $who in
        sim) run sim $SPW sim --trace "$F" --config "$OUT/fleet.yaml" -o json -q ;;
        base) [ -n "$BASE" ] && run base "$BASE" sim --trace "$F" --config "$OUT/fleet.yaml" -o json -q ;;
        py) run py "$PY" "$OUT/pyread.py" "$F" ;;
        esac
    done
done
printf '\n  %-34s %7s %7s %7s   %6s   %7s  %7s\n' "" "min s" "median" "max s" "CPU s" "RSS MB" "faults"
line sim "spillway sim (whole run)"
[ -n "$BASE" ] && line base "base: $BASE"
line py "python3 csv.reader row count"
awk -v s="$(med sim 1)" -v p="$(med py 1)" -v cs="$(med sim 2)" -v cp="$(med py 2)" 'BEGIN {
    printf "  => sim / Python: %.2fx wall (medians), %.2fx CPU; goal <= 1\n", s / p, cs / cp }'
awk -v r="$(stats sim 3 | awk '{ print $3 / 1000 }')" 'BEGIN { printf "  => peak RSS %.1f MB; goal <= 250 MB\n", r }'
if [ -n "$BASE" ]; then
    if diff <(grep -v '"sim_seconds"' "$OUT/sim.out") <(grep -v '"sim_seconds"' "$OUT/base.out") >/dev/null; then
        echo "  => JSON identical to the base's (sim_seconds aside)"
    else
        echo "  => JSON DIFFERS from the base's: diff $OUT/sim.out $OUT/base.out"
    fi
fi

if [ "${LOADER_10M:-1}" = 1 ]; then
    F10=$(trace 10000000)
    rm -f "$OUT/sim10M.txt"
    run sim10M $SPW sim --trace "$F10" --config "$OUT/fleet.yaml" -o json -q
    read -r w c r <"$OUT/sim10M.txt"
    printf '\n  10M jobs (%s, %.0f MB): %.1f s wall, %.1f s CPU, peak RSS %.0f MB, %s jobs in the summary\n' \
        "$F10" "$(awk -v s="$(stat -c %s "$F10")" 'BEGIN { print s / 1e6 }')" "$w" "$c" \
        "$(awk -v r="$r" 'BEGIN { print r / 1000 }')" "$(grep -o '"jobs": *[0-9]*' "$OUT/sim10M.out" | head -1 | grep -o '[0-9]*$')"
fi
