#!/bin/sh
# hosts.sh: the test hosts of scripts/netns-hosts.sh come up beside other
# users of network namespaces on this machine.  "Another user" (this file)
# first takes what the script would pick on its first tries (a namespace
# name, a subnet, a veth name), then the script is run: it checks, skips
# them and retries; with its checks off (NETNS_HOSTS_NOCHECK=1, as if the
# other user took them between check and creation) the creations fail and
# are undone and retried.  Two clusters started at once with the same first
# pick get different subnets.  The other user's namespaces, links and
# addresses are left as they were.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
net=$root/scripts/netns-hosts.sh
T=$(mktemp -d /tmp/spw-ssh-hosts.XXXXXX)
OTHER=          # the other user's namespaces (deleted at the end)
OTHER_LINKS=    # and its links in the root namespace
cleanup() {
    for d in c1 c2 i c3 c4; do "$net" down "$T/$d" >/dev/null 2>&1; done
    "$net" del "$T/i" a >/dev/null 2>&1
    for l in $OTHER_LINKS; do ip link del "$l" 2>/dev/null; done
    for ns in $OTHER; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
n=0
failed=0
ok() {
    n=$((n + 1))
    if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
    return "$1"
}
diag() { printf '%s\n' "$@" | sed 's/^/# /' >&2; }

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || [ ! -x /usr/sbin/sshd ]; then
    echo "1..0 # SKIP needs root, iproute2 and sshd (scripts/deps.sh test)"
    exit 0
fi
probe=spwhp$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
ip netns add "$probe" 2>/dev/null || { echo "1..0 # SKIP cannot create a network namespace here"; exit 0; }
ip netns del "$probe"
echo "1..9"

# answers DIR: every host of DIR's `hosts` answers ssh.
answers() {
    for h in $(cat "$1/hosts"); do
        ssh -i "$1/id_ed25519" -p 2222 -o BatchMode=yes -o StrictHostKeyChecking=yes \
            -o UserKnownHostsFile="$1/known_hosts" -o ConnectTimeout=10 "root@$h" true || return 1
    done
}
# subnet_of DIR: the 10.X.Y of DIR's first host.
subnet_of() { head -1 "$1/hosts" | cut -d. -f1-3; }

# The picks of seed S, S+1...: S a random number.
S=$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')
set -- $("$net" pick "$S");       t0=$1 x0=$2 y0=$3
set -- $("$net" pick $((S + 1))); t1=$1 x1=$2 y1=$3
set -- $("$net" pick $((S + 2))); t2=$1
set -- $("$net" pick $((S + 3))); x3=$2 y3=$3
set -- $("$net" pick $((S + 4))); x4=$2 y4=$3

# ---- the other user takes the first three picks -----------------------------
# Pick S: the namespace name of host 0.  Pick S+1: its subnet, on a veth to
# a namespace of the other user's.  Pick S+2: the veth name of host 1.
oth=spwo$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
ip netns add "spw$t0-0" && OTHER="spw$t0-0" &&
    ip netns add "$oth" && OTHER="$OTHER $oth" &&
    ip link add "o${t1}a" type veth peer name "o${t1}b" && OTHER_LINKS="o${t1}a" &&
    ip link set "o${t1}b" netns "$oth" && ip addr add "10.$x1.$y1.1/30" dev "o${t1}a" &&
    ip link add "sw${t2}r1" type veth peer name "o${t2}b" && OTHER_LINKS="$OTHER_LINKS sw${t2}r1" &&
    ip netns add "spwc$t1" && OTHER="$OTHER spwc$t1"
ok $? "another user holds namespace spw$t0-0, 10.$x1.$y1.0/24, link sw${t2}r1 and namespace spwc$t1" ||
    exit 1

# ---- checked: the script skips what is taken ---------------------------------
NETNS_HOSTS_SEED=$S "$net" up "$T/c1" 2 >"$T/c1.out" 2>&1
rc=$?
[ $rc = 0 ] && answers "$T/c1" && [ "$(subnet_of "$T/c1")" = "10.$x3.$y3" ]
ok $? "2 hosts come up and answer ssh, on the first free pick (10.$x3.$y3.0/24): $(subnet_of "$T/c1")" ||
    diag "exit $rc" "$(cat "$T/c1.out")"
[ "$(grep -c 'trying other names' "$T/c1.out")" = 3 ]
ok $? "after skipping the 3 picks in use, each said on stderr" || diag "$(cat "$T/c1.out")"

# ---- unchecked: creations fail, are undone and retried ---------------------
# The same picks, plus pick S+3 now held by c1: 4 failed tries (a namespace
# that exists, a subnet in use once made, a veth name that exists after host
# 0 was made, c1's names), then pick S+4.
NETNS_HOSTS_NOCHECK=1 NETNS_HOSTS_SEED=$S "$net" up "$T/c2" 2 >"$T/c2.out" 2>&1
rc=$?
[ $rc = 0 ] && answers "$T/c2" && [ "$(subnet_of "$T/c2")" = "10.$x4.$y4" ]
ok $? "with the checks off the creations fail and are retried: up on 10.$x4.$y4.0/24 ($(subnet_of "$T/c2"))" ||
    diag "exit $rc" "$(cat "$T/c2.out")"
grep -q 'File exists' "$T/c2.out" && grep -q "not ours has an address in 10.$x1.$y1.0/24" "$T/c2.out" &&
    [ "$(grep -c 'trying other names' "$T/c2.out")" = 4 ]
ok $? "after 4 failed tries, each said (a name that exists, a subnet taken)" || diag "$(cat "$T/c2.out")"
answers "$T/c1"
ok $? "the first cluster still answers (the undone tries touched nothing of it)"

# ---- one host added: its subnet and then its names ------------------------
# Pick S: a subnet nobody uses; pick S+1: namespace spwc$t1 exists.
a=$(NETNS_HOSTS_SEED=$S "$net" add "$T/i" a 2>"$T/i.err")
[ "${a%.*}" = "10.$x0.$y0" ] && grep -q "spwc$t1, .* exists" "$T/i.err" &&
    [ "$(sed -n 's/^netns //p' "$T/i/inst-a/state")" = "spwc$t2" ]
ok $? "add: a host comes up at $a, named after pick S+2 as spwc$t1 exists" || diag "$(cat "$T/i.err")"

# ---- two clusters at once, the same first pick ------------------------------
NETNS_HOSTS_SEED=$((S + 5)) "$net" up "$T/c3" 1 >"$T/c3.out" 2>&1 &
p3=$!
NETNS_HOSTS_SEED=$((S + 5)) "$net" up "$T/c4" 1 >"$T/c4.out" 2>&1
rc4=$?
wait $p3
rc3=$?
[ $rc3 = 0 ] && [ $rc4 = 0 ] && answers "$T/c3" && answers "$T/c4" &&
    [ "$(subnet_of "$T/c3")" != "$(subnet_of "$T/c4")" ]
ok $? "two clusters started at once with the same picks both come up, on $(subnet_of "$T/c3") and $(subnet_of "$T/c4")" ||
    diag "$(cat "$T/c3.out" "$T/c4.out")"

# ---- down: ours go, the other user's stay -----------------------------------
cat "$T"/c?/state "$T/i/inst-a/state" | sed -n 's/^netns //p' >"$T/ours"
echo "spw$t1-0 spw$t1-1 spw$t2-0" | tr ' ' '\n' >>"$T/ours"   # made by the failed tries
for d in c1 c2 c3 c4; do "$net" down "$T/$d"; done
"$net" del "$T/i" a
left=$(ip netns list | cut -d' ' -f1 | grep -xF -f "$T/ours")
ip netns list | grep -q "^spw$t0-0\b" && ip netns list | grep -q "^$oth\b" &&
    ip netns list | grep -q "^spwc$t1\b" && ip -o -4 addr show dev "o${t1}a" | grep -q "10\.$x1\.$y1\.1/" &&
    ip link show "sw${t2}r1" >/dev/null 2>&1 && [ -z "$left" ] && [ "$(wc -l <"$T/ours")" -ge 9 ]
ok $? "down removes ours (left: ${left:-none}) and leaves the other user's namespaces, links and addresses"
[ "$failed" = 0 ]
