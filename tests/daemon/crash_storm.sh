#!/bin/sh
# crash_storm.sh: the launch protocol of the local backend under a kill -9
# storm (tests/daemon/storm-lib says what runs and what must hold), and
# nothing left behind in STATE/run after it.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 12

STORM_ROUNDS=${SPW_STORM_ROUNDS:-8}
STORM_JOBS=${SPW_STORM_JOBS:-30}

mkconfig "$T/serve.yaml" 4 never
STORM_WHAT="1 node x 4 GPU slots"

# shellcheck source=tests/daemon/storm-lib
. "$(dirname "$0")/storm-lib"

# Fences and exit records go once each attempt's end is committed.
left_in_run() { [ -z "$(ls "$T/state/run")" ]; }
wait_until 5 left_in_run
ok $? "nothing is left in STATE/run" || diag "$(ls "$T/state/run" | head -5)"
done_testing
