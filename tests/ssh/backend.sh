#!/bin/sh
# backend.sh: the ssh backend (tests/ssh/ssh_backend.c) against a real
# cluster of 4 network namespaces with sshd (scripts/netns-hosts.sh, 2 fake
# GPUs each), started once for the file and stopped by pid at the end.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${SPW_SSH_TEST_BIN:-$root/build/tests/ssh/ssh_backend}
net=$root/scripts/netns-hosts.sh
T=$(mktemp -d /tmp/spw-ssh-be.XXXXXX)
cleanup() {
    "$net" down "$T/cluster" >/dev/null 2>&1
    for i in a b; do "$net" del "$T/inst" $i >/dev/null 2>&1; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 missing (scripts/deps.sh test)"; exit 0; }
out=$("$net" up "$T/cluster" 4 --gpus 2 2>&1)
rc=$?
if [ $rc = 3 ]; then echo "1..0 # SKIP $out"; exit 0; fi
if [ $rc != 0 ]; then echo "1..1"; echo "not ok 1 - the test cluster starts"; echo "$out" | sed 's/^/# /'; exit 1; fi
mkdir -p "$T/logs"
rootfs=$("$here/mkrootfs" "$root/build/ssh-rootfs") && export SPW_TEST_ROOTFS=$rootfs &&
    "$here/mkociarchive" "$rootfs" "$T/image.tar" && export SPW_TEST_OCI=$T/image.tar
# Its stdin closed, as a daemon started without one: every ssh command's
# output must still come back (not be lost to a descriptor 0 reused).
SPW_TEST_DIR=$T SPW_NETNS_SCRIPT=$net "$bin" <&-
