#!/bin/sh
# gen.sh: `spillway gen` writes a valid, deterministic synthetic trace.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 7

gen() { "$SPW" gen --jobs 300 --rate 20 --runtime lognormal:1800:1.2 "$@"; }

gen --seed 7 >"$T/a.csv"
ok $? "gen exits 0"
gen --seed 7 >"$T/b.csv"
cmp -s "$T/a.csv" "$T/b.csv"
ok $? "the same seed gives byte-identical output"
gen --seed 8 >"$T/c.csv"
! cmp -s "$T/a.csv" "$T/c.csv"
ok $? "a different seed gives a different trace"

[ "$(head -n 1 "$T/a.csv")" = "id,submit_s,gpus,runtime_s" ]
ok $? "the header is id,submit_s,gpus,runtime_s"

[ "$(wc -l <"$T/a.csv")" -eq 301 ]
ok $? "--jobs 300 gives 300 rows and a header"

# Every row: integer id, submit times non-decreasing, gpus >= 1, runtime >= 0.
awk -F, 'NR > 1 {
    if (NF != 4 || $1 != NR - 1 || $2 + 0 < prev || $3 + 0 < 1 || $4 + 0 < 0) bad = 1
    prev = $2 + 0
} END { exit bad }' "$T/a.csv"
ok $? "rows are well formed and sorted by submit time"

gen --seed 7 -o "$T/d.csv" >"$T/stdout" && cmp -s "$T/a.csv" "$T/d.csv" && [ ! -s "$T/stdout" ]
ok $? "-o FILE writes the same bytes to the file"

done_testing
