#!/bin/sh
# backend.sh: the Slurm backend (tests/slurm/slurm_backend.c) against a real
# throwaway Slurm 22.05 cluster (scripts/slurm-cluster.sh: 3 nodes x 4 fake
# GPUs), started once for the file and stopped by pid at the end.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${SPW_SLURM_TEST_BIN:-$root/build/tests/slurm/slurm_backend}
T=$(mktemp -d /tmp/spw-slurm-be.XXXXXX)
cleanup() { "$root/scripts/slurm-cluster.sh" stop "$T/cluster" >/dev/null 2>&1; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
out=$("$root/scripts/slurm-cluster.sh" start "$T/cluster" --nodes 3 --gpus 4 --cloud 0 2>&1)
rc=$?
if [ $rc = 3 ]; then echo "1..0 # SKIP $out"; exit 0; fi
if [ $rc != 0 ]; then echo "1..1"; echo "not ok 1 - the test cluster starts"; echo "$out" | sed 's/^/# /'; exit 1; fi
mkdir -p "$T/logs"
SLURM_CONF=$T/cluster/slurm.conf SPW_TEST_DIR=$T "$bin"
