#!/bin/sh
# spot_multi.sh: multi-region deadline-aware spot (docs/spot.md, "Multi-region
# spot").  One job replayed from the same random start offsets on the zones
# of one preemption trace directory: uniform progress (and greedy) in each
# zone alone, the same policies hopping between zones, and the omniscient
# multi-region optimum (dynamic programming over the known traces).
# 1. The full table: aws-04-22-2023 (4 zones, V100), 48 h of work, deadline
#    60 h, restart overhead 0.2 h, $1 egress per move, 100 offsets.
# 2. A matrix over job sizes, restart overheads and egress prices on
#    aws-04-22-2023 and aws-04-19-2023 (3 zones): each multi-region policy's
#    mean cost / the optimum's, its misses, and the best and the mean
#    single-zone uniform progress.
# Takes about 3 minutes of CPU.  Run from the repository root after make.
set -eu
SPW=${SPILLWAY:-./spillway}
DATA=${SPW_DATA:-../shared/data}/spot-traces/preemption/1-node
OFFSETS=${OFFSETS:-100}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

traces() {
    for f in "$DATA/$1"/*.json; do printf ' --spot-trace %s' "$f"; done
}

echo "== 1. aws-04-22-2023, 4 zones: 48 h of work, deadline 60 h, d 0.2 h, \$1 per move"
# shellcheck disable=SC2046
"$SPW" sim --spot-job 48h --deadline 60h --restart-overhead 0.2h --multi-region \
    $(traces aws-04-22-2023) --step 160 --egress-usd 1 --offsets "$OFFSETS" \
    --spot-policy greedy,uniform-progress

echo
echo "== 2. matrix: mean cost / the optimum's mean cost ($OFFSETS offsets each)"
printf '%-15s %-9s %-5s %-6s %9s %14s %14s %12s %12s\n' trace job d egress 'opt $' \
    'greedy multi' 'UP multi' 'UP 1 best' 'UP 1 mean'
for set in "aws-04-22-2023 160" "aws-04-19-2023 170"; do
    # shellcheck disable=SC2086
    set -- $set
    dir=$1 step=$2
    for job in "48h 60h" "24h 48h"; do
        for d in 0.05h 0.2h; do
            for e in 0 0.2 1; do
                # shellcheck disable=SC2046,SC2086
                "$SPW" sim --spot-job ${job% *} --deadline ${job#* } --restart-overhead $d \
                    --multi-region $(traces "$dir") --step "$step" --egress-usd "$e" \
                    --offsets "$OFFSETS" --spot-policy greedy,uniform-progress -o json |
                    "$PY" -c '
import json, sys
d = json.load(sys.stdin)
rows = d["rows"]
opt = rows[-1]["cost_usd_mean"]
multi = {r["policy"]: r for r in rows if r["kind"] == "multi"}
up1 = [r["cost_usd_mean"] for r in rows
       if r["kind"] == "single" and r["policy"] == "uniform-progress"]
cell = lambda r: "%.3f (%d)" % (r["cost_usd_mean"] / opt, r["missed"])
print("%-15s %-9s %-5s %-6s %9.2f %14s %14s %12.3f %12.3f" % (
    sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], opt, cell(multi["greedy"]),
    cell(multi["uniform-progress"]), min(up1) / opt, sum(up1) / len(up1) / opt))
' "$dir" "${job% *}/${job#* }" "$d" "$e"
            done
        done
    done
done
echo
echo "cells: mean cost / optimum's (missed deadlines); UP 1: single-zone uniform progress,"
echo "the best zone (known only afterwards) and the mean over the zones."
