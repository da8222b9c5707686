#!/bin/sh
# netns-hosts.sh: a throwaway cluster of "hosts" on this machine, each a
# network namespace with a veth pair to the root namespace and a real sshd,
# for the ssh backend's tests (tests/ssh/) and demos.  Needs root.
#
#   scripts/netns-hosts.sh up DIR N [--gpus G]   start N hosts, state in DIR
#   scripts/netns-hosts.sh down DIR              stop them (always safe to run)
#   scripts/netns-hosts.sh cut DIR I | mend DIR I  link of host I down / up
#   scripts/netns-hosts.sh add DIR NAME [--gpus G]  boot one more host, NAME;
#                                         prints its address (and only that)
#   scripts/netns-hosts.sh del DIR NAME   stop host NAME (always safe to run)
#
# `add` and `del` manage hosts one at a time, as a cloud boots and stops
# instances (the emulated provider's `boot_command`, docs/hosts.md): every
# host added to one DIR shares DIR's client key and known_hosts (made by
# the first `add`) and one 10.X.Y.0/24 (picked by the first `add`, kept in
# DIR/subnet), up to 60 hosts at once; host NAME's state lives in
# DIR/inst-NAME/ (its SPILLWAY_HOST_DIR is DIR/inst-NAME/spillway).  `add`
# of a NAME that runs already prints its address again once it answers.
# Calls on one DIR are serialised with flock(1) on DIR/lock.  `up`/`down`
# clusters and `add`/`del` hosts must not share a DIR.
#
# `up` writes into DIR:
#   hosts          one address per line (host 0 first)
#   id_ed25519     the client key (root@ADDR logs in with it)
#   known_hosts    every host's key, for StrictHostKeyChecking=yes
#   host-I/        host I's own state: sshd_config, host key, pid file, log,
#                  and the directory its ssh sessions see as SPILLWAY_HOST_DIR
#   state          what `down` undoes (namespaces, veths, sshd pid files)
# Addresses come from 10.X.Y.0/24 with X.Y derived from this script's pid,
# one /30 per host (root end .4I+1, host end .4I+2), assigned only to these
# veths and routed nowhere else, so parallel runs do not collide.  sshd
# listens on port 2222 of the host end; ssh user root.
#
# The namespaces share this machine's filesystem: a job "on host I" sees the
# same files as the daemon, and its cgroups (sshd is started with nsenter
# --net, not `ip netns exec`, which remounts /sys and so hides
# /sys/fs/cgroup: jobs on the hosts get their cgroup as on a real host).
# Each host's sshd sets SPILLWAY_HOST_DIR to its
# own DIR/host-I/spillway, so the ssh backend's per-host state (exit records,
# logs, token files) stays apart as it would on separate machines.  With
# --gpus G, each host gets a fake `nvidia-smi` (in DIR/host-I/bin, first in
# the session's PATH) that lists G GPUs, to exercise GPU detection.
#
# Exit status: 0 done, 1 failed (and `up` undid what it had started), 3 this
# machine cannot run it (not root, no sshd or no `ip netns`): tests skip.
set -u
cmd=${1:-}
dir=${2:-}
PORT=2222

die() { echo "netns-hosts: $*" >&2; exit 1; }
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,11p' "$0" >&2; exit 2; }

# Undoes what the state file ${1:-$dir/state} lists.
down() {
    sf=${1:-$dir/state}
    [ -f "$sf" ] || return 0
    while read -r kind a; do
        case $kind in
        pidfile) [ -s "$a" ] && kill "$(cat "$a")" 2>/dev/null ;;
        esac
    done <"$sf"
    # Whatever still runs inside a namespace (ssh sessions whose client
    # vanished, jobs started over ssh) was started by this cluster: stop it
    # by pid before the namespace goes.
    # SIGTERM first, so that shells in the middle of their startup files
    # (a login shell's rc taking a lock, say) clean up; SIGKILL what is left.
    for sig in TERM KILL; do
        while read -r kind a; do
            [ "$kind" = netns ] || continue
            pids=$(ip netns pids "$a" 2>/dev/null)
            [ -n "$pids" ] && kill -$sig $pids 2>/dev/null
        done <"$sf"
        [ $sig = TERM ] && sleep 0.3
    done
    while read -r kind a; do
        case $kind in
        veth) ip link del "$a" 2>/dev/null ;;
        netns) ip netns del "$a" 2>/dev/null ;;
        esac
    done <"$sf"
    rm -f "$sf"
}

case $cmd in
down) down; exit 0 ;;
cut|mend)
    i=${3:?host index}
    v=$(sed -n "s/^veth //p" "$dir/state" | sed -n "$((i + 1))p")
    [ -n "$v" ] || die "no host $i in $dir/state"
    if [ "$cmd" = cut ]; then ip link set "$v" down; else ip link set "$v" up; fi
    exit $? ;;
up|add) ;;
del)
    name=${3:?host name}
    [ -d "$dir" ] || exit 0
    exec 9>>"$dir/lock" && flock 9
    down "$dir/inst-$name/state"
    exit 0 ;;
*) die "unknown command '$cmd' (up, down, cut, mend, add, del)" ;;
esac

if [ "$cmd" = add ]; then
    name=${3:-}
    case $name in ''|*[!A-Za-z0-9_-]*) die "NAME must be letters, digits, - and _" ;; esac
    gpus=0
    [ "${4:-}" = --gpus ] && gpus=${5:-0}
fi

if [ "$cmd" = up ]; then
    n=${3:-}
    case $n in ''|*[!0-9]*) die "N must be a number of hosts (1..60)" ;; esac
    [ "$n" -ge 1 ] && [ "$n" -le 60 ] || die "N must be 1..60"
    gpus=0
    [ "${4:-}" = --gpus ] && gpus=${5:-0}
fi

# host_files HD ADDR NAME FAIL: host NAME's files in HD: its host key, an
# sshd_config listening on ADDR:$PORT (keys of $dir/authorized_keys, its
# session's SPILLWAY_HOST_DIR=HD/spillway and PATH with HD/bin first) and,
# with --gpus, a fake nvidia-smi; FAIL (a function) is called on an error.
host_files() {
    ssh-keygen -q -t ed25519 -N '' -f "$1/ssh_host_ed25519_key" </dev/null || $4 "host key"
    cat >"$1/sshd_config" <<CONF
Port $PORT
ListenAddress $2
HostKey $1/ssh_host_ed25519_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $1/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 100
SetEnv SPILLWAY_HOST_DIR=$1/spillway PATH=$1/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SPILLWAY_TEST_HOST=$3
CONF
    if [ "$gpus" -gt 0 ]; then
        printf '#!/bin/sh\n# fake nvidia-smi of test host %s: %s GPUs\ng=0; while [ $g -lt %s ]; do echo $g; g=$((g + 1)); done\n' \
            "$3" "$gpus" "$gpus" >"$1/bin/nvidia-smi"
        chmod +x "$1/bin/nvidia-smi"
    fi
}

# mk_netns NS VR VH ROOT_ADDR HOST_ADDR STATE FAIL: namespace NS joined to the
# root namespace by the veth pair VR (root end, ROOT_ADDR/30) and VH (in NS,
# HOST_ADDR/30), both up, lo up in NS; what is made is appended to STATE (for
# `down`); on an error FAIL (a function) is called with the reason.
mk_netns() {
    ip netns add "$1" || $7 "ip netns add $1 failed"
    echo "netns $1" >>"$6"
    ip link add "$2" type veth peer name "$3" || $7 "ip link add $2 failed"
    echo "veth $2" >>"$6"
    ip link set "$3" netns "$1" || $7 "cannot move $3 into $1"
    ip addr add "$4/30" dev "$2" || $7 "address on $2"
    ip link set "$2" up || $7 "link $2 up"
    ip -n "$1" addr add "$5/30" dev "$3" || $7 "address on $3"
    ip -n "$1" link set "$3" up || $7 "link $3 up"
    ip -n "$1" link set lo up || $7 "lo up in $1"
}

# Waits (bounded, about 10 s) until the sshd at address $1 answers.
wait_ssh() {
    t=0
    until ssh -i "$dir/id_ed25519" -p $PORT -o BatchMode=yes -o StrictHostKeyChecking=yes \
        -o UserKnownHostsFile="$dir/known_hosts" -o ConnectTimeout=2 "root@$1" true 2>/dev/null; do
        t=$((t + 1))
        [ $t -lt 50 ] || return 1
        sleep 0.2
    done
}

# `add DIR NAME`: boots host NAME in DIR/inst-NAME and prints its address.
add_host() {
    exec 9>>"$dir/lock" && flock 9 || die "cannot lock $dir/lock"
    idir=$dir/inst-$name
    if [ -s "$idir/addr" ] && [ -f "$idir/state" ]; then
        a=$(cat "$idir/addr")
        if wait_ssh "$a"; then echo "$a"; return 0; fi
        down "$idir/state"
    fi
    afail() { echo "netns-hosts: host $name: $*" >&2; down "$idir/state"; exit 1; }
    trap 'down "$idir/state"; exit 1' INT TERM
    if [ ! -s "$dir/subnet" ]; then
        # From the pid, skipping a /24 this machine already has addresses in
        # (an `up` cluster, another DIR).
        p=$$
        k=0
        while ip -o addr show | grep -q " 10\.$((100 + (p / 256) % 64))\.$((p % 256))\."; do
            p=$((p + 1)); k=$((k + 1))
            [ $k -lt 256 ] || die "no free 10.X.Y.0/24 for $dir"
        done
        echo "$((100 + (p / 256) % 64)) $((p % 256))" >"$dir/subnet"
    fi
    read -r X Y <"$dir/subnet"
    tag=$(((X - 100) * 256 + Y))
    if [ ! -s "$dir/id_ed25519" ]; then
        rm -f "$dir/id_ed25519" "$dir/id_ed25519.pub"
        ssh-keygen -q -t ed25519 -N '' -C spillway-test -f "$dir/id_ed25519" </dev/null ||
            die "ssh-keygen failed"
        cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
        : >"$dir/known_hosts"
    fi
    # The first slot (one /30 each) no running host of DIR holds.
    slot=0
    while [ $slot -lt 60 ]; do
        used=0
        for f in "$dir"/inst-*/slot; do
            [ -f "$f" ] && [ -f "${f%/slot}/state" ] && [ "$(cat "$f")" = $slot ] && used=1
        done
        [ $used = 0 ] && break
        slot=$((slot + 1))
    done
    [ $slot -lt 60 ] || die "60 hosts run in $dir already"
    ns=spwc$tag-$slot
    vr=sc${tag}r$slot
    vh=sc${tag}h$slot
    a=10.$X.$Y.$((4 * slot + 2))
    rm -rf "$idir"
    mkdir -p "$idir/spillway" "$idir/bin" || die "cannot create $idir"
    echo $slot >"$idir/slot"
    : >"$idir/state"
    mk_netns "$ns" "$vr" "$vh" "10.$X.$Y.$((4 * slot + 1))" "$a" "$idir/state" afail
    # Other hosts of DIR (a gang's ranks) through the root namespace, which
    # forwards on this veth only.
    echo 1 >"/proc/sys/net/ipv4/conf/$vr/forwarding" 2>/dev/null
    ip -n "$ns" route add "10.$X.$Y.0/24" via "10.$X.$Y.$((4 * slot + 1))" 2>/dev/null
    host_files "$idir" "$a" "$name" afail
    echo "pidfile $idir/sshd.pid" >>"$idir/state"
    mkdir -p /run/sshd
    nsenter --net=/run/netns/"$ns" /usr/sbin/sshd -f "$idir/sshd_config" -E "$idir/sshd.log" </dev/null >&2 9>&- ||
        afail "sshd did not start: $(tail -3 "$idir/sshd.log" 2>/dev/null)"
    # known_hosts: this address's new key instead of a former holder's.
    grep -v "^\[$a\]:$PORT " "$dir/known_hosts" >"$dir/known_hosts.tmp"
    echo "[$a]:$PORT $(cut -d' ' -f1,2 "$idir/ssh_host_ed25519_key.pub")" >>"$dir/known_hosts.tmp"
    mv "$dir/known_hosts.tmp" "$dir/known_hosts"
    echo "$a" >"$idir/addr"
    # Other boots of DIR need not wait for this sshd to answer.
    flock -u 9
    if ! wait_ssh "$a"; then
        flock 9
        afail "does not answer ssh at $a: $(tail -3 "$idir/sshd.log")"
    fi
    echo "$a"
}

if [ "$(id -u)" != 0 ]; then echo "netns-hosts: needs root (network namespaces)"; exit 3; fi
[ -x /usr/sbin/sshd ] || { echo "netns-hosts: no /usr/sbin/sshd (apt-get install openssh-server)"; exit 3; }
command -v ssh-keygen >/dev/null || { echo "netns-hosts: no ssh-keygen (apt-get install openssh-client)"; exit 3; }
probe=spwprobe$$
ip netns add "$probe" 2>/dev/null || { echo "netns-hosts: cannot create a network namespace here"; exit 3; }
ip netns del "$probe"

mkdir -p "$dir" || die "cannot create $dir"
dir=$(cd "$dir" && pwd)
[ "$cmd" = add ] && { add_host; exit $?; }
[ -f "$dir/state" ] && die "$dir already holds a running cluster (down it first)"
: >"$dir/state"
trap 'down; exit 1' INT TERM
fail() { echo "netns-hosts: $*" >&2; down; exit 1; }

# 10.X.Y.0/24 from the pid: X in 100..163, Y in 0..255.
p=$$
X=$((100 + (p / 256) % 64))
Y=$((p % 256))
mkdir -p /run/sshd
rm -f "$dir/id_ed25519" "$dir/id_ed25519.pub"
ssh-keygen -q -t ed25519 -N '' -C spillway-test -f "$dir/id_ed25519" || fail "ssh-keygen failed"
cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
: >"$dir/hosts"
: >"$dir/known_hosts"
i=0
while [ $i -lt $n ]; do
    ns=spw$p-$i
    vr=sw${p}r$i
    vh=sw${p}h$i
    [ ${#vr} -le 15 ] || fail "veth name $vr too long"
    a=$((4 * i + 1))
    b=$((4 * i + 2))
    hd=$dir/host-$i
    mkdir -p "$hd/spillway" "$hd/bin"
    mk_netns "$ns" "$vr" "$vh" "10.$X.$Y.$a" "10.$X.$Y.$b" "$dir/state" fail
    # Hosts reach each other (a gang's ranks talk to rank 0) through the root
    # namespace: a route to the whole /24 via the root end; the root
    # namespace forwards between these veths only if ip_forward is on, so
    # instead every host gets its own route per peer below.
    host_files "$hd" "10.$X.$Y.$b" "$i" fail
    echo "pidfile $hd/sshd.pid" >>"$dir/state"
    nsenter --net=/run/netns/"$ns" /usr/sbin/sshd -f "$hd/sshd_config" -E "$hd/sshd.log" ||
        fail "sshd of host $i did not start: $(tail -3 "$hd/sshd.log" 2>/dev/null)"
    echo "10.$X.$Y.$b" >>"$dir/hosts"
    echo "[10.$X.$Y.$b]:$PORT $(cut -d' ' -f1,2 "$hd/ssh_host_ed25519_key.pub")" >>"$dir/known_hosts"
    i=$((i + 1))
done

# Routes between hosts: each host reaches every other host's address through
# the root namespace, which forwards between these veths (and only these:
# forwarding is enabled per interface, not globally).
i=0
while [ $i -lt $n ]; do
    echo 1 >"/proc/sys/net/ipv4/conf/sw${p}r$i/forwarding" 2>/dev/null
    ip -n "spw$p-$i" route add "10.$X.$Y.0/24" via "10.$X.$Y.$((4 * i + 1))" 2>/dev/null
    i=$((i + 1))
done

# Wait (bounded) until every sshd answers.
i=0
for h in $(cat "$dir/hosts"); do
    t=0
    until ssh -i "$dir/id_ed25519" -p $PORT -o BatchMode=yes -o StrictHostKeyChecking=yes \
        -o UserKnownHostsFile="$dir/known_hosts" -o ConnectTimeout=2 "root@$h" true 2>/dev/null; do
        t=$((t + 1))
        [ $t -lt 50 ] || fail "host $i ($h) does not answer ssh: $(tail -3 "$dir/host-$i/sshd.log")"
        sleep 0.2
    done
    i=$((i + 1))
done
echo "netns-hosts: $n hosts up: $(tr '\n' ' ' <"$dir/hosts")(port $PORT, key $dir/id_ed25519)"
