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
#
# Other users of network namespaces on this machine (other test runs, other
# clones, containers) must not collide with these hosts, so nothing is
# derived from the pid: names and subnets come from a random number, and
# before anything is made the script checks that they are free: no
# namespace of that name (`ip netns list`), no link of those names (`ip
# link`), no address or route of this machine's in or around the
# 10.X.Y.0/24 (`ip -o addr`, `ip route`).  The choice and the creation are
# serialised machine-wide (flock on /run/lock/spillway-netns-hosts.lock);
# a creation that fails all the same (someone outside took the name or the
# subnet meanwhile) is undone and retried with another number, as is a
# subnet in which, once made, another interface holds an address: 30 tries.
# Namespaces are spwTAG-I (`up`) and spwcTAG (`add`), veths swTAGrI/hI and
# scTAGr/h, TAG 6 hex digits; each host gets one /30 of the 10.X.Y.0/24
# (root end .4I+1, host end .4I+2), assigned only to these veths and routed
# nowhere else.  sshd listens on port 2222 of the host end; ssh user root.
# For tests: NETNS_HOSTS_SEED=N makes the K-th try use number N+K-1 (not a
# random one); `pick N` prints the "TAG X Y" that number gives; and
# NETNS_HOSTS_NOCHECK=1 skips the checks before creating, as if another
# user took the names between check and creation.
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
# Progress and retries are said on stderr.
set -u
cmd=${1:-}
dir=${2:-}
PORT=2222
TRIES=30
LOCK=/run/lock/spillway-netns-hosts.lock

die() { echo "netns-hosts: $*" >&2; exit 1; }
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,11p' "$0" >&2; exit 2; }

now_s() { date +%s; }

# Undoes what the state file ${1:-$dir/state} lists.
down() {
    sf=${1:-$dir/state}
    [ -f "$sf" ] || return 0
    while read -r dk da; do
        case $dk in
        pidfile) [ -s "$da" ] && kill "$(cat "$da")" 2>/dev/null ;;
        esac
    done <"$sf"
    # Whatever still runs inside a namespace (ssh sessions whose client
    # vanished, jobs started over ssh) was started by this cluster: stop it
    # by pid before the namespace goes.
    # SIGTERM first, so that shells in the middle of their startup files
    # (a login shell's rc taking a lock, say) clean up, for 3 s at most;
    # SIGKILL what is left.
    for sig in TERM KILL; do
        while read -r dk da; do
            [ "$dk" = netns ] || continue
            pids=$(ip netns pids "$da" 2>/dev/null)
            [ -n "$pids" ] && kill -$sig $pids 2>/dev/null
        done <"$sf"
        [ $sig = KILL ] && break
        end=$(($(now_s) + 3))
        while [ -n "$(ns_pids "$sf")" ] && [ "$(now_s)" -lt "$end" ]; do sleep 0.1; done
    done
    while read -r dk da; do
        case $dk in
        veth) ip link del "$da" 2>/dev/null ;;
        netns) ip netns del "$da" 2>/dev/null ;;
        esac
    done <"$sf"
    rm -f "$sf"
}

# ns_pids STATE: the pids of whatever runs in STATE's namespaces.
ns_pids() {
    while read -r dk da; do
        [ "$dk" = netns ] && ip netns pids "$da" 2>/dev/null
    done <"$1"
}

# pick N: sets tag (6 hex digits), X and Y (the subnet 10.X.Y.0/24, X in
# 100..227) from the number N; N and N+1 differ in all three.
pick() {
    tag=$(printf '%06x' $(($1 % 16777216)))
    X=$((100 + $1 % 128))
    Y=$((($1 / 128) % 256))
}

# next_pick: pick of the next number: NETNS_HOSTS_SEED, then one more each
# call, when set (tests); a random one otherwise.
next_pick() {
    if [ -n "${NETNS_HOSTS_SEED:-}" ]; then
        pick "$NETNS_HOSTS_SEED"
        NETNS_HOSTS_SEED=$((NETNS_HOSTS_SEED + 1))
    else
        pick "$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
    fi
}

# checks: 0 unless NETNS_HOSTS_NOCHECK asks to skip the checks before
# creating (tests of the retries after a failed creation).
checks() { [ -z "${NETNS_HOSTS_NOCHECK:-}" ]; }

# subnet_free X Y: no address or route of this machine's (root namespace)
# lies in, holds or overlaps 10.X.Y.0/24 (routes of /8 or wider, such as the
# default route, aside: they lose to our /30s and carry no host of ours).
subnet_free() {
    { ip -o -4 addr show; ip -4 route show table all; } 2>/dev/null | awk -v x="$1" -v y="$2" '
    # Each a.b.c.d[/p] token: does a.b.c.d/p overlap 10.x.y.0/24?  Both
    # cut to the shorter of the two prefixes must be equal.
    {
        for (i = 1; i <= NF; i++) {
            if ($i !~ /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+(\/[0-9]+)?$/) continue
            split($i, ap, "/")
            p = (ap[2] == "") ? 32 : ap[2] + 0
            if (p <= 8) continue
            split(ap[1], o, ".")
            ip = ((o[1] * 256 + o[2]) * 256 + o[3]) * 256 + o[4]
            ours = ((10 * 256 + x) * 256 + y) * 256
            m = (p < 24) ? p : 24
            if (int(ip / 2 ^ (32 - m)) == int(ours / 2 ^ (32 - m))) bad = 1
        }
    }
    END { exit bad }'
}

# names_free NS LINK...: no namespace NS, no link of those names.
names_free() {
    [ ! -e "/run/netns/$1" ] && ! ip netns list 2>/dev/null | grep -q "^$1\( \|\$\)" || return 1
    shift
    for l in "$@"; do
        ip link show dev "$l" >/dev/null 2>&1 && return 1
    done
    return 0
}

# subnet_ours X Y STATE...: every address and route of the root namespace
# in 10.X.Y.0/24 is on a veth the STATE files list (nobody else took the
# subnet while we made ours).
subnet_ours() {
    sx=$1 sy=$2
    shift 2
    cat "$@" 2>/dev/null | sed -n 's/^veth //p' >"$dir/devs.$$"
    others=$({
        ip -o -4 addr show | awk '{ print $2, $4 }'
        ip -4 route show table all | awk '{ d = "?"; for (i = 1; i < NF; i++) if ($i == "dev") d = $(i + 1); print d, $0 }'
    } 2>/dev/null | grep " .*10\.$sx\.$sy\." | awk '{ print $1 }' | sort -u | grep -vxF -f "$dir/devs.$$")
    rm -f "$dir/devs.$$"
    [ -z "$others" ]
}

# lock_machine / unlock_machine: the machine-wide lock around choosing and
# creating names and subnets (fd 8; 60 s at most).
lock_machine() {
    mkdir -p "${LOCK%/*}" 2>/dev/null
    exec 8>>"$LOCK" || die "cannot open $LOCK"
    flock -w 60 8 || die "$LOCK held for 60 s by another run"
}
unlock_machine() { flock -u 8; exec 8>&-; }

case $cmd in
pick)
    case $dir in ''|*[!0-9]*) die "pick N: N is a number" ;; esac
    pick "$dir"
    echo "$tag $X $Y"
    exit 0 ;;
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
*) die "unknown command '$cmd' (up, down, cut, mend, add, del, pick)" ;;
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
# Starts the sshd of a test host from its DIR: in the host's network
# namespace (nsenter --net keeps /sys/fs/cgroup, see above), and in a
# mount namespace of its own where root's ~/.bashrc is empty, so that a
# root login runs none of this machine's shell start-up: a `pyenv init`
# there waited on a stale lock and held every login 60 s.
start_sshd() { # NS DIR
    nsenter --net=/run/netns/"$1" unshare --mount --propagation private sh -c '
        rc=$(getent passwd root | cut -d: -f6)/.bashrc
        [ -f "$rc" ] && mount --bind /dev/null "$rc"
        exec /usr/sbin/sshd -f "$1/sshd_config" -E "$1/sshd.log"' sh "$2" </dev/null
}

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

# mk_netns NS VR VH ROOT_ADDR HOST_ADDR STATE: namespace NS joined to the
# root namespace by the veth pair VR (root end, ROOT_ADDR/30) and VH (in NS,
# HOST_ADDR/30), both up, lo up in NS; what is made is appended to STATE (for
# `down`).  Returns 1 on an error, the reason in $why.
mk_netns() {
    why=
    e=$(ip netns add "$1" 2>&1) || { why="ip netns add $1: $e"; return 1; }
    echo "netns $1" >>"$6"
    e=$(ip link add "$2" type veth peer name "$3" 2>&1) || { why="ip link add $2: $e"; return 1; }
    echo "veth $2" >>"$6"
    e=$(ip link set "$3" netns "$1" 2>&1) || { why="cannot move $3 into $1: $e"; return 1; }
    e=$(ip addr add "$4/30" dev "$2" 2>&1) || { why="address on $2: $e"; return 1; }
    e=$(ip link set "$2" up 2>&1) || { why="link $2 up: $e"; return 1; }
    e=$(ip -n "$1" addr add "$5/30" dev "$3" 2>&1) || { why="address on $3: $e"; return 1; }
    e=$(ip -n "$1" link set "$3" up 2>&1) || { why="link $3 up: $e"; return 1; }
    e=$(ip -n "$1" link set lo up 2>&1) || { why="lo up in $1: $e"; return 1; }
}

# Waits (bounded, 120 s by the clock: ssh is slow on a loaded machine) until
# the sshd at address $1 answers.
wait_ssh() {
    ws_end=$(($(now_s) + 120))
    until ssh -i "$dir/id_ed25519" -p $PORT -o BatchMode=yes -o StrictHostKeyChecking=yes \
        -o UserKnownHostsFile="$dir/known_hosts" -o ConnectTimeout=5 "root@$1" true 2>/dev/null; do
        [ "$(now_s)" -lt "$ws_end" ] || return 1
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
    rm -rf "$idir"
    mkdir -p "$idir/spillway" "$idir/bin" || die "cannot create $idir"
    echo $slot >"$idir/slot"
    : >"$idir/state"
    lock_machine
    # DIR's subnet, picked by its first host: one this machine does not use.
    if [ ! -s "$dir/subnet" ]; then
        t=0
        while :; do
            t=$((t + 1))
            [ $t -le $TRIES ] || afail "no free 10.X.Y.0/24 after $TRIES tries"
            next_pick
            checks && ! subnet_free "$X" "$Y" && continue
            echo "$X $Y" >"$dir/subnet"
            break
        done
    fi
    read -r X Y <"$dir/subnet"
    a=10.$X.$Y.$((4 * slot + 2))
    # This host's names: a new random TAG per try.
    t=0
    while :; do
        t=$((t + 1))
        [ $t -le $TRIES ] || afail "no free namespace and link names after $TRIES tries: $why"
        next_pick
        read -r X Y <"$dir/subnet"   # DIR's, not the pick's
        ns=spwc$tag vr=sc${tag}r vh=sc${tag}h
        if checks && ! names_free "$ns" "$vr" "$vh"; then
            why="$ns, $vr or $vh exists"
        elif mk_netns "$ns" "$vr" "$vh" "10.$X.$Y.$((4 * slot + 1))" "$a" "$idir/state"; then
            # shellcheck disable=SC2046
            subnet_ours "$X" "$Y" $(ls "$dir"/inst-*/state 2>/dev/null) && break
            why="an interface outside $dir has an address in 10.$X.$Y.0/24"
        fi
        echo "netns-hosts: host $name: $why; trying other names" >&2
        down "$idir/state"
        : >"$idir/state"
    done
    unlock_machine
    # Other hosts of DIR (a gang's ranks) through the root namespace, which
    # forwards on this veth only.
    echo 1 >"/proc/sys/net/ipv4/conf/$vr/forwarding" 2>/dev/null
    ip -n "$ns" route add "10.$X.$Y.0/24" via "10.$X.$Y.$((4 * slot + 1))" 2>/dev/null
    host_files "$idir" "$a" "$name" afail
    echo "pidfile $idir/sshd.pid" >>"$idir/state"
    mkdir -p /run/sshd
    start_sshd "$ns" "$idir" >&2 9>&- ||
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
command -v flock >/dev/null || { echo "netns-hosts: no flock (apt-get install util-linux)"; exit 3; }
probe=spwprobe$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
ip netns add "$probe" 2>/dev/null || { echo "netns-hosts: cannot create a network namespace here"; exit 3; }
ip netns del "$probe"

mkdir -p "$dir" || die "cannot create $dir"
dir=$(cd "$dir" && pwd)
[ "$cmd" = add ] && { add_host; exit $?; }
[ -f "$dir/state" ] && die "$dir already holds a running cluster (down it first)"
: >"$dir/state"
trap 'down; exit 1' INT TERM
fail() { echo "netns-hosts: $*" >&2; down; exit 1; }

mkdir -p /run/sshd
rm -f "$dir/id_ed25519" "$dir/id_ed25519.pub"
ssh-keygen -q -t ed25519 -N '' -C spillway-test -f "$dir/id_ed25519" </dev/null || fail "ssh-keygen failed"
cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
: >"$dir/hosts"
: >"$dir/known_hosts"

# The namespaces and veths of all N hosts, with one TAG and one subnet per
# try (see the top of this file).
lock_machine
t=0
while :; do
    t=$((t + 1))
    [ $t -le $TRIES ] || fail "no free names and subnet after $TRIES tries: $why"
    next_pick
    why=
    if checks && ! subnet_free "$X" "$Y"; then
        why="10.$X.$Y.0/24 is in use here"
    else
        i=0
        while [ $i -lt "$n" ]; do
            if checks && ! names_free "spw$tag-$i" "sw${tag}r$i" "sw${tag}h$i"; then
                why="spw$tag-$i, sw${tag}r$i or sw${tag}h$i exists"
                break
            fi
            mk_netns "spw$tag-$i" "sw${tag}r$i" "sw${tag}h$i" "10.$X.$Y.$((4 * i + 1))" \
                "10.$X.$Y.$((4 * i + 2))" "$dir/state" || break
            i=$((i + 1))
        done
        [ -z "$why" ] && ! subnet_ours "$X" "$Y" "$dir/state" &&
            why="an interface not ours has an address in 10.$X.$Y.0/24"
    fi
    [ -z "$why" ] && break
    echo "netns-hosts: $why; trying other names and subnet" >&2
    down
    : >"$dir/state"
done
unlock_machine

i=0
while [ $i -lt "$n" ]; do
    hd=$dir/host-$i
    mkdir -p "$hd/spillway" "$hd/bin"
    # Hosts reach each other (a gang's ranks talk to rank 0) through the
    # root namespace, which forwards between these veths (and only these:
    # forwarding is enabled per interface, not globally).
    echo 1 >"/proc/sys/net/ipv4/conf/sw${tag}r$i/forwarding" 2>/dev/null
    ip -n "spw$tag-$i" route add "10.$X.$Y.0/24" via "10.$X.$Y.$((4 * i + 1))" 2>/dev/null
    host_files "$hd" "10.$X.$Y.$((4 * i + 2))" "$i" fail
    echo "pidfile $hd/sshd.pid" >>"$dir/state"
    start_sshd "spw$tag-$i" "$hd" ||
        fail "sshd of host $i did not start: $(tail -3 "$hd/sshd.log" 2>/dev/null)"
    echo "10.$X.$Y.$((4 * i + 2))" >>"$dir/hosts"
    echo "[10.$X.$Y.$((4 * i + 2))]:$PORT $(cut -d' ' -f1,2 "$hd/ssh_host_ed25519_key.pub")" >>"$dir/known_hosts"
    i=$((i + 1))
done

# Wait (bounded) until every sshd answers.
i=0
for h in $(cat "$dir/hosts"); do
    wait_ssh "$h" || fail "host $i ($h) does not answer ssh: $(tail -3 "$dir/host-$i/sshd.log")"
    i=$((i + 1))
done
echo "netns-hosts: $n hosts up: $(tr '\n' ' ' <"$dir/hosts")(port $PORT, key $dir/id_ed25519)"
