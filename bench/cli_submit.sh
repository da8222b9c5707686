#!/bin/bash
# bench/cli_submit.sh: `spillway submit` as one process per job, the way
# `sbatch` is used: N sequential submits from one shell loop against a
# local `spillway serve` (one GPU slot, no cloud, so the jobs stay queued),
# and the submits/s.  Then sbatch's figure on the same machine: the same
# loop with `sbatch --hold --wrap true` against a running cluster (`sinfo`
# answers), else against bench/slurm.sh's throwaway cluster when Slurm is
# installed; otherwise the historical figure, labelled as such.
#
#   bench/cli_submit.sh [N]          (default N = 1000)
#   CLI_SUBMIT_TLS=1 bench/cli_submit.sh [N]   the same over HTTPS: the
#                    daemon serves a certificate openssl makes here, the CLI
#                    verifies it against that CA (SPILLWAY_CA)
#
# Output lines: "cli_submit spillway N=... seconds=... per_s=..." and
# "cli_submit sbatch ..." (measured) or "cli_submit sbatch_historical ...",
# then "cli_submit ratio spillway/sbatch=..." of the two rates (measured in
# this run, or against the historical figure, labelled as such).
set -u
cd "$(dirname "$0")/.." || exit 1
N=${1:-1000}
SPW=${SPILLWAY:-./spillway}
case $SPW in /*) ;; *) SPW=$(pwd)/$SPW ;; esac
if [ ! -x "$SPW" ]; then
    echo "cli_submit: SKIP: $SPW is not built (run make)"
    exit 0
fi
D=$(mktemp -d "${TMPDIR:-/tmp}/spw-cli-bench.XXXXXX") || exit 1
TOKEN=bench-cli-token-0123456789
PID=
BLOCKER=
cleanup() {
    # The blocker job first (jobs outlive a stopped daemon by design), then
    # the daemon, each by what it is.
    if [ -n "$BLOCKER" ]; then
        "$SPW" cancel "$BLOCKER" >/dev/null 2>&1
        for _ in $(seq 100); do
            "$SPW" show "$BLOCKER" -o json 2>/dev/null | grep -q '"state": *"cancelled"' && break
            sleep 0.1
        done
    fi
    if [ -n "$PID" ]; then
        kill -TERM "$PID" 2>/dev/null
        wait "$PID" 2>/dev/null
    fi
    rm -rf "$D"
}
trap cleanup EXIT

umask 077
# mktemp -d made D 0700: a root daemon's jobs (spillway-job) must pass it.
chmod 711 "$D"
TLS_KEYS=
if [ "${CLI_SUBMIT_TLS:-0}" = 1 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout "$D/key.pem" \
        -out "$D/cert.pem" >/dev/null 2>&1 || { echo "cli_submit: FAIL: openssl req"; exit 1; }
    chmod 600 "$D/key.pem"
    TLS_KEYS="  tls_cert: $D/cert.pem
  tls_key: $D/key.pem"
    export SPILLWAY_CA=$D/cert.pem
fi
cat >"$D/c.yaml" <<EOF
onprem:
  - name: local
    nodes: 1
    gpus_per_node: 1
    cost_usd_per_gpu_h: 1.10
policy:
  wait: never
daemon:
  gpus: slots
  tokens:
    - {name: bench, token: $TOKEN, team: bench}
$TLS_KEYS
EOF
"$SPW" serve --config "$D/c.yaml" --state-dir "$D/state" --listen 127.0.0.1:0 -q \
    2>"$D/serve.log" &
PID=$!
URL=
for _ in $(seq 100); do
    URL=$(sed -n 's|.*listening on \(https\{0,1\}://[^ ]*\).*|\1|p' "$D/serve.log")
    [ -n "$URL" ] && break
    sleep 0.05
done
if [ -z "$URL" ]; then
    echo "cli_submit: FAIL: spillway serve did not start: $(cat "$D/serve.log")"
    exit 1
fi
echo "$TOKEN" >"$D/token"
export SPILLWAY_URL=$URL SPILLWAY_TOKEN_FILE=$D/token
# one job first, so the queue is not empty and the first submit is not special
BLOCKER=$("$SPW" submit --gpus 1 --est-runtime 1h -- sleep 3600) || exit 1
# It must really run (as root it runs as spillway-job, which must reach its
# checkpoint dir through $D), or every submit below starts and fails a job.
st=
for _ in $(seq 100); do
    st=$("$SPW" show "$BLOCKER" -o json 2>/dev/null | sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p' | head -1)
    [ "$st" = running ] && break
    sleep 0.1
done
if [ "$st" != running ]; then
    echo "cli_submit: FAIL: the blocker job is ${st:-unknown}, not running: $(tail -3 "$D/serve.log")"
    exit 1
fi

t0=$(date +%s.%N)
for ((k = 0; k < N; k++)); do
    "$SPW" submit --gpus 1 --est-runtime 1h -- true >/dev/null || { echo "cli_submit: FAIL at $k"; exit 1; }
done
t1=$(date +%s.%N)
spw_rate=$(awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }')
awk -v n="$N" -v a="$t0" -v b="$t1" \
    -v u="${URL%%:*}" 'BEGIN { printf "cli_submit spillway N=%d seconds=%.2f per_s=%.0f (%s)\n", n, b - a, n / (b - a), u }'
sb_rate= sb_what="measured in this run"

if command -v sbatch >/dev/null 2>&1 && timeout 5 sinfo >/dev/null 2>&1; then
    t0=$(date +%s.%N)
    ids=
    for ((k = 0; k < N; k++)); do
        id=$(sbatch --parsable --hold --wrap true 2>/dev/null) || { echo "cli_submit: sbatch failed"; break; }
        ids="$ids $id"
    done
    t1=$(date +%s.%N)
    # shellcheck disable=SC2086
    [ -n "$ids" ] && scancel $ids 2>/dev/null
    sb_rate=$(awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }')
    awk -v n="$N" -v a="$t0" -v b="$t1" \
        'BEGIN { printf "cli_submit sbatch N=%d seconds=%.2f per_s=%.0f (measured, running cluster, held jobs)\n", n, b - a, n / (b - a) }'
elif command -v slurmctld >/dev/null 2>&1 && [ -x bench/slurm.sh ] &&
    out=$(bench/slurm.sh --jobs "$N" --clients 1 --reps 1 2>&1) &&
    line=$(printf '%s\n' "$out" | grep -m1 '^slurm clients=1 '); then
    # a throwaway cluster (bench/slurm.sh): sbatch --hold from one shell loop
    rate=$(printf '%s\n' "$line" | sed -n 's/.* jobs_per_s=\([0-9.]*\).*/\1/p')
    sb_rate=$rate
    echo "cli_submit sbatch N=$N per_s=${rate%.*} (measured: bench/slurm.sh's throwaway cluster, held jobs)"
else
    echo "cli_submit sbatch_historical per_s=322 (not measured here: no Slurm cluster;" \
        "issue 11's figure for sbatch from one shell loop on this class of machine)"
    sb_rate=322 sb_what="against the historical sbatch figure, not this run's"
fi
if [ -n "$sb_rate" ]; then
    awk -v a="$spw_rate" -v b="$sb_rate" -v w="$sb_what" \
        'BEGIN { if (b > 0) printf "cli_submit ratio spillway/sbatch=%.2f (submits/s, %s)\n", a / b, w }'
fi
