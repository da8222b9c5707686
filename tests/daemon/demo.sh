#!/bin/sh
# demo.sh: `make demo`'s live part, scripts/live-demo.sh, with 2 s jobs:
# it prints the queue, the spill to the cloud, costs and the audit log,
# exits 0, and leaves no process behind (it stops the daemon by its pid and
# kills nothing by name).
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 4

env SPW_DTEST="$T" SPILLWAY_BIN="$SPW" DEMO_JOB_S=2 TMPDIR="$T" \
    sh "$(dirname "$0")/../../scripts/live-demo.sh" >"$T/demo.out" 2>&1 </dev/null
rc=$?
ok $rc "scripts/live-demo.sh exits 0" || diag "status $rc:" "$(tail -30 "$T/demo.out")"
contains "$T/demo.out" "spilled to the emulated cloud" && contains "$T/demo.out" "costs" &&
    contains "$T/demo.out" "== done"
ok $? "it shows the burst, the costs and gets to the end"
grep -q "submit *j-000006 *201" "$T/demo.out"
ok $? "it shows the audit log with the submits" || diag "$(cat "$T/demo.out")"
no_strays "no daemon or job of the demo is left running"
done_testing
