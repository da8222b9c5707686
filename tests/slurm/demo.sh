#!/bin/sh
# demo.sh: scripts/slurm-demo.sh (the issue's demo: `spillway serve` with
# examples/slurm.yaml in front of a throwaway Slurm) runs to its end from a
# checkout as it is (the example's mode 0644 included), shows the gang's
# ranks on both Slurm nodes, the burst of the job that waited, and leaves no
# daemon or job behind.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
env SPW_DTEST="$T" SPILLWAY_BIN="$SPW" TMPDIR="$T" \
    sh "$ROOT/scripts/slurm-demo.sh" >"$T/demo.out" 2>&1 </dev/null
rc=$?
if [ $rc = 3 ]; then echo "1..0 # SKIP $(tail -1 "$T/demo.out")"; exit 0; fi
plan 5
ok $rc "scripts/slurm-demo.sh exits 0" || diag "status $rc:" "$(tail -30 "$T/demo.out")"
grep -q "^rank 0 of 2 on n[12], master n[12]:" "$T/demo.out" &&
    grep -q "^rank 1 of 2 on n[12], master n[12]:" "$T/demo.out"
ok $? "the gang's two ranks ran on the Slurm nodes, with the master address" ||
    diag "$(tail -30 "$T/demo.out")"
grep -Eq "^ *[0-9]+ +(RUNNING|COMPLETED) +[0-9a-f]{12}\.j-000001\.1 +n\[1-2\]" "$T/demo.out"
ok $? "squeue lists the gang under its launch token on n[1-2]" || diag "$(cat "$T/demo.out")"
grep -Eq "^j-000006 .* cloud" "$T/demo.out"
ok $? "the job that waited burst to the cloud: $(grep '^j-000006' "$T/demo.out" | tail -1)" ||
    diag "$(cat "$T/demo.out")"
no_strays "no daemon or job of the demo is left running"
done_testing
