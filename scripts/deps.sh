#!/bin/sh
# deps.sh: make sure the Debian packages spillway needs are installed.
# usage: scripts/deps.sh [build|test|fuzz]   (each level includes the ones before)
# The packages are checked with dpkg-query, so this works before make exists.
# As root it installs what is missing; otherwise it prints the apt-get line.
set -e
level=${1:-build}
pkgs="gcc libc6-dev make pkg-config libyaml-dev libsqlite3-dev libjansson-dev libmicrohttpd-dev libcurl4-openssl-dev"
case $level in
test) pkgs="$pkgs perl python3 prometheus curl slurm-wlm slurmctld slurmd slurm-client openssh-server openssh-client iproute2 bubblewrap" ;;
fuzz) pkgs="$pkgs perl python3 prometheus curl slurm-wlm slurmctld slurmd slurm-client openssh-server openssh-client iproute2 bubblewrap clang libclang-rt-14-dev valgrind" ;;
esac
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    # A fresh machine has no package lists yet: update once if the install fails.
    apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
        apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing >/dev/null
    }
else
    echo "spillway needs these Debian packages; run as root:" >&2
    echo "  apt-get install -y --no-install-recommends$missing" >&2
    exit 1
fi
