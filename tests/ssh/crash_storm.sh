#!/bin/sh
# crash_storm.sh: the launch protocol of the ssh backend under a kill -9
# storm (tests/daemon/storm-lib says what runs and what must hold): a pool
# of 2 hosts with sshd in network namespaces (scripts/netns-hosts.sh, 2 fake
# GPUs each), the daemon killed -9 and restarted 8 times while jobs are
# launched over ssh, cancelled and ended.  No job runs twice, no GPU of a
# host is held by two runs, no acknowledged submit or cancel is lost.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NET=$ROOT/scripts/netns-hosts.sh
C=$T/cluster
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 missing (scripts/deps.sh test)"; exit 0; }
out=$("$NET" up "$C" 2 --gpus 2 2>&1)
rc=$?
if [ $rc = 3 ]; then echo "1..0 # SKIP $out"; exit 0; fi
trap '"$NET" down "$C" >/dev/null 2>&1; cleanup' EXIT
plan 13
ok $rc "2 hosts with sshd are up" || { diag "$out"; exit 1; }
set -- $(cat "$C/hosts")

cat >"$T/serve.yaml" <<EOF2
onprem:
  - name: hosts
    backend: ssh
    hosts: [$1, $2]
    ssh: {user: root, key: $C/id_ed25519, known_hosts: $C/known_hosts, port: 2222}
    cost_usd_per_gpu_h: 1.10
policy: {queue: fifo, backfill: easy, wait: never}
daemon:
  tick_s: 0.05
  kill_grace_s: 1
  tokens:
    - {token: $ML_TOKEN, team: ml}
    - {token: $ADMIN_TOKEN, admin: true}
EOF2
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts with an ssh pool of 2 hosts x 2 GPUs" || { diag "$(cat "$DLOG")"; exit 1; }

STORM_ROUNDS=8 STORM_JOBS=15 STORM_WAIT_S=120
# shellcheck source=tests/daemon/storm-lib
. "$ROOT/tests/daemon/storm-lib"
grep -q " [01]$" "$LEDGER"
ok $? "the runs were on the ssh hosts (their SPILLWAY_TEST_HOST in the ledger)" || diag "$(head -3 "$LEDGER")"
done_testing
