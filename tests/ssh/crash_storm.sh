#!/bin/sh
# crash_storm.sh: the launch protocol of the ssh backend under a kill -9
# storm (tests/daemon/storm-lib says what runs and what must hold): a pool
# of 2 hosts with sshd in network namespaces (scripts/netns-hosts.sh, 2 fake
# GPUs each), the daemon killed -9 and restarted 8 times while jobs are
# launched over ssh, cancelled and ended.  No job runs twice, no GPU of a
# host is held by two runs, no acknowledged submit or cancel is lost.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
# shellcheck source=tests/ssh/ssh-lib
. "$(dirname "$0")/ssh-lib"
hosts_up 2 13 "2 hosts with sshd are up" --gpus 2
set -- $(cat "$C/hosts")

cat >"$T/serve.yaml" <<EOF2
onprem:
  - name: hosts
    backend: ssh
    hosts: [$1, $2]
    ssh: {user: root, key: $C/id_ed25519, known_hosts: $C/known_hosts, port: 2222}
    cost_usd_per_gpu_h: 1.10
policy: {queue: fifo, backfill: easy, wait: never}
$(daemon_yaml)
EOF2
STORM_WHAT="an ssh pool of 2 hosts x 2 GPUs" STORM_HOSTS="[01]" STORM_JOBS=15 STORM_WAIT_S=120

# shellcheck source=tests/daemon/storm-lib
. "$ROOT/tests/daemon/storm-lib"
done_testing
