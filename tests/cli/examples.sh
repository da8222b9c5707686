#!/bin/sh
# examples.sh: every example config (examples/*.yaml but the job specs) loads
# and runs on a tiny trace.  Those that read ../shared/data (beside the
# repository) are skipped without it.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"

# examples/job-*.yaml are job specs, not configs (tests/cli/policy.sh reads them).
set --
for f in examples/*.yaml; do
    case $f in examples/job-*) ;; *) [ -e "$f" ] && set -- "$@" "$f" ;; esac
done
if [ $# -eq 0 ]; then
    echo "1..0 # skip no examples/*.yaml yet"
    exit 0
fi
plan $#

"$SPW" gen --jobs 50 --rate 10 --seed 5 >"$T/tiny.csv"
for cfg in "$@"; do
    if grep -q 'shared/data' "$cfg" && [ ! -d ../shared/data ]; then
        skip "$cfg reads ../shared/data, which is absent"
        continue
    fi
    # A config that reads the hosts scripts/netns-hosts.sh writes gets two
    # addresses of the documentation range instead (TEST-NET-1).
    if grep -q '/tmp/cluster/hosts' "$cfg"; then
        printf '192.0.2.1\n192.0.2.2\n' >"$T/hosts"
        sed "s|/tmp/cluster/hosts|$T/hosts|" "$cfg" >"$T/cfg.yaml"
        run_spw "$T/out" "$T/err" sim --trace "$T/tiny.csv" --config "$T/cfg.yaml" -o json -q
        [ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
        ok "$rc" "$cfg loads and runs (its hosts_file: two addresses)"
        continue
    fi
    run_spw "$T/out" "$T/err" sim --trace "$T/tiny.csv" --config "$cfg" -o json -q
    [ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
    ok "$rc" "$cfg loads and runs"
done

done_testing
