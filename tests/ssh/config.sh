#!/bin/sh
# config.sh: the config keys of an ssh pool (backend: ssh, hosts, hosts_file,
# ssh: {...}): errors name FILE:LINE:COL and what to do; a valid pool is a
# pool of one node per host for the simulator.  Needs no root and no sshd.
root=$(cd "$(dirname "$0")/../.." && pwd)
SPW=${SPILLWAY:-$root/spillway}
T=$(mktemp -d /tmp/spw-ssh-cfg.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0
fails=0
check() { # check NAME YAML EXPECTED-SUBSTRING ("" = must succeed)
    n=$((n + 1))
    printf '%b' "$2" >"$T/$1.yaml"
    out=$("$SPW" sim --config "$T/$1.yaml" --trace "$root/examples/jobs.csv" -o json 2>&1)
    rc=$?
    if [ -z "$3" ]; then
        [ $rc = 0 ]
    else
        [ $rc != 0 ] && echo "$out" | grep -qF "$3"
    fi
    if [ $? = 0 ]; then echo "ok $n - $1"; else
        echo "not ok $n - $1"; echo "$out" | head -3 | sed 's/^/# /'; fails=$((fails + 1)); fi
}
echo 1..8
printf '# the hosts\nh1\n\nh2  # second\n10.0.0.3\n' >"$T/hosts.txt"
check bad-host 'onprem:\n  - name: a\n    backend: ssh\n    hosts: [h1, "bad host"]\n' \
    "bad-host.yaml:4:12: pool 'a': 'bad host' is not a host name or address"
check hosts-without-ssh 'onprem:\n  - name: a\n    nodes: 1\n    gpus_per_node: 1\n    hosts: [h1]\n' \
    "need 'backend: ssh'"
check bad-port 'onprem:\n  - name: a\n    backend: ssh\n    hosts: [h1]\n    ssh: {port: 70000}\n' \
    "bad-port.yaml:5:17: pool 'a': ssh port must be 1..65535"
check unknown-ssh-key 'onprem:\n  - name: a\n    backend: ssh\n    hosts: [h1]\n    ssh: {usr: x}\n' \
    "unknown key 'usr' in ssh: did you mean 'user'? (expected one of: user, key, known_hosts, port, down_after_s)"
check nodes-mismatch "onprem:\n  - name: a\n    backend: ssh\n    hosts_file: $T/hosts.txt\n    nodes: 2\n" \
    "an ssh pool has one node per host (3); leave out 'nodes'"
check no-hosts 'onprem:\n  - name: a\n    backend: ssh\n    gpus_per_node: 2\n' \
    "needs 'hosts: [HOST, ...]' or 'hosts_file: FILE'"
check missing-file 'onprem:\n  - name: a\n    backend: ssh\n    hosts_file: nope.txt\n' \
    "nope.txt"
check valid "onprem:\n  - name: a\n    backend: ssh\n    hosts_file: $T/hosts.txt\n    gpus_per_node: 4\n    ssh: {user: u, key: k, known_hosts: kh, port: 2222, down_after_s: 5}\n" ""
exit $fails
