#!/bin/sh
# config.sh: the pool keys of the Slurm backend in the config (backend,
# partition, cluster, slurm_conf): clear FILE:LINE errors, `sim` accepting a
# Slurm pool, and `spillway serve` refusing to start, with the reason, when
# it cannot read the partition's nodes.  Needs no Slurm cluster.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/../cli/tap-lib"
plan 6

cfg() { printf '%s\n' "$@" >"$T/c.yaml"; }
serve_err() { "$SPW" serve --config "$T/c.yaml" --state-dir "$T/st" --listen 127.0.0.1:0 -q >"$T/err" 2>&1; }
has() { contains "$T/err" "$1"; }

cfg "onprem:" "  - name: gpu" "    backend: slurm" "policy: {wait: never}"
serve_err
has "c.yaml:3:" && has "a slurm pool needs 'partition: NAME'"
ok $? "backend: slurm without a partition: $(cat "$T/err")"

cfg "onprem:" "  - name: gpu" "    backend: pbs" "    partition: x" "policy: {wait: never}"
serve_err
has "c.yaml:3:" && has "unknown backend 'pbs' (known: local, slurm, ssh, kubernetes)"
ok $? "an unknown backend: $(cat "$T/err")"

cfg "onprem:" "  - {name: gpu, nodes: 1, gpus_per_node: 2, partition: p}" "policy: {wait: never}"
serve_err
has "c.yaml:2:" && has "need 'backend: slurm'"
ok $? "partition on a local pool: $(cat "$T/err")"

cfg "onprem:" "  - {name: gpu, backend: slurm, partition: gpu, slurm_conf: nowhere/slurm.conf}" \
    "policy: {wait: never}"
serve_err
[ $? != 0 ] && has "pool gpu: cannot read slurm_conf"
ok $? "serve with an unreadable slurm_conf refuses to start, saying why: $(tail -1 "$T/err")"
has "$T/nowhere/slurm.conf"
ok $? "slurm_conf is taken relative to the config's directory"

printf 'id,submit_s,gpus,runtime_s\n1,0,1,60\n' >"$T/t.csv"
"$SPW" sim --trace "$T/t.csv" --config "$T/c.yaml" -o json >"$T/sim.json" 2>"$T/sim.err"
ok $? "spillway sim accepts a config with a Slurm pool (it ignores the backend keys)" ||
    diag "$(cat "$T/sim.err")"
