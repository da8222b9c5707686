#!/bin/sh
# deps.sh: make sure the Debian packages spillway needs are installed.
# usage: scripts/deps.sh [build|test|fuzz]   (each level includes the ones before)
# The packages are checked with dpkg-query, so this works before make exists.
# As root it installs what is missing; otherwise it prints the apt-get line.
set -e
level=${1:-build}
pkgs="gcc libc6-dev make pkg-config libyaml-dev libsqlite3-dev libjansson-dev libmicrohttpd-dev libcurl4-openssl-dev libssl-dev libxml2-dev"
case $level in
test) pkgs="$pkgs perl python3 prometheus curl chromium fonts-dejavu-core slurm-wlm slurmctld slurmd slurm-client openssh-server openssh-client iproute2 bubblewrap skopeo umoci podman runc python3-botocore awscli openssl" ;;
fuzz) pkgs="$pkgs perl python3 prometheus curl chromium fonts-dejavu-core slurm-wlm slurmctld slurmd slurm-client openssh-server openssh-client iproute2 bubblewrap skopeo umoci podman runc python3-botocore awscli openssl clang libclang-rt-14-dev valgrind" ;;
esac
# kubectl for tests/backends/kube_fake.sh: Debian's kubernetes-client only where
# no kubectl is present (it conflicts with google-cloud-cli's kubectl).
case $level in test|fuzz) command -v kubectl >/dev/null 2>&1 || pkgs="$pkgs kubernetes-client" ;; esac
# node and npm for tests/daemon/oidc.sh (it runs npm's oidc-provider): Debian's
# nodejs and npm only where no node is present (a NodeSource nodejs bundles npm
# and conflicts with Debian's npm).
case $level in test|fuzz) { command -v node && command -v npm; } >/dev/null 2>&1 || pkgs="$pkgs nodejs npm" ;; esac
# Jobs of a daemon running as root run as this unprivileged user (daemon.run_as
# in docs/daemon.md): created here, as root, like the packages.
job_user=spillway-job
if ! id "$job_user" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        echo "deps: creating the system user $job_user (jobs of a root daemon run as it)" >&2
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$job_user"
    else
        echo "note: a daemon started as root runs jobs as the user $job_user; create it with:" >&2
        echo "  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin $job_user" >&2
    fi
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
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
fi
# npm's oidc-provider, the OpenID provider of tests/daemon/oidc.sh and
# tests/cli/deb.sh, into the cache both read (so that neither installs it
# while the other runs); without npm's registry they skip saying so.
npm_dir=${SPW_NPM_DIR:-$HOME/.cache/spillway-tests/oidc-provider-8}
case $level in test|fuzz)
    if command -v npm >/dev/null 2>&1 && [ ! -f "$npm_dir/node_modules/oidc-provider/package.json" ]; then
        echo "deps: npm install oidc-provider@8.8.1 into $npm_dir" >&2
        mkdir -p "$npm_dir" && timeout 180 npm install --prefix "$npm_dir" --no-audit --no-fund \
            --silent oidc-provider@8.8.1 >/dev/null 2>&1 ||
            echo "deps: npm could not install oidc-provider (the OIDC tests will skip)" >&2
    fi ;;
esac
exit 0
