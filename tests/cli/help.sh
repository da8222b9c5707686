#!/bin/sh
# help.sh: usage texts and exit statuses of the spillway command line.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 8

run_spw "$T/out" "$T/err" help
ok "$rc" "spillway help exits 0"
contains "$T/out" "usage: spillway COMMAND"
ok $? "spillway help prints the usage and the command list"

run_spw "$T/out" "$T/err" sim --help
[ "$rc" -eq 0 ] && contains "$T/out" "usage: spillway sim --trace FILE" && contains "$T/out" "--compare"
ok $? "spillway sim --help prints the sim usage and exits 0"

run_spw "$T/out" "$T/err" help gen
[ "$rc" -eq 0 ] && contains "$T/out" "usage: spillway gen"
ok $? "spillway help gen prints the gen usage"

run_spw "$T/out" "$T/err" frobnicate
[ "$rc" -eq 2 ] && contains "$T/err" "unknown command 'frobnicate'"
ok $? "an unknown command exits 2 and names the command (status $rc)"

run_spw "$T/out" "$T/err"
[ "$rc" -eq 2 ]
ok $? "no command at all exits 2"

run_spw "$T/out" "$T/err" sim --no-such-option
[ "$rc" -eq 2 ]
ok $? "an unknown sim option exits 2"

run_spw "$T/out" "$T/err" version
[ "$rc" -eq 0 ] && grep -Eq '^spillway [0-9]+\.[0-9]+' "$T/out"
ok $? "spillway version prints a version"

done_testing
