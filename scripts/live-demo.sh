#!/bin/sh
# live-demo.sh: the live path in one go.  Starts `spillway serve` with
# examples/serve.yaml on a free port and a fresh state dir, submits a burst
# of jobs that is more than the 4 local GPU slots can take, shows them spill
# to the emulated cloud, prints `spillway costs` and the audit log, cancels
# what is still running and stops the daemon -- by its pid, never by name.
# Exits 0 when all of that worked.
#
# DEMO_JOB_S (default 15) sets how long each job runs (tests use a short
# one); SPILLWAY_BIN the spillway to run (default ./spillway).
cd "$(dirname "$0")/.." || exit 1
spw=${SPILLWAY_BIN:-./spillway}
job_s=${DEMO_JOB_S:-15}
wait_s=$((job_s < 10 ? job_s : 10))
state=$(mktemp -d "${TMPDIR:-/tmp}/spillway-demo.XXXXXX") || exit 1
log=$state/serve.log
pid=
# The config holds tokens, so serve wants it private: a copy of mode 600.
(umask 077 && sed "s/constant:10/constant:$wait_s/" examples/serve.yaml >"$state/serve.yaml")

stop() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        wait "$pid" 2>/dev/null
    fi
    pid=
}
fail() {
    echo "live-demo: $*" >&2
    [ -f "$log" ] && tail -20 "$log" >&2
    stop
    exit 1
}
trap 'stop' EXIT
trap 'stop; exit 130' INT TERM

"$spw" serve --config "$state/serve.yaml" --state-dir "$state" --listen 127.0.0.1:0 \
    2>"$log" &
pid=$!
url=
i=0
while [ -z "$url" ] && [ $i -lt 100 ] && kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$log")
    i=$((i + 1))
done
[ -n "$url" ] || fail "spillway serve did not start"
export SPILLWAY_URL="$url"
# Tokens from files of mode 600, never on the command line (ps shows it).
(umask 077 && echo ml-team-token-0001 >"$state/ml.token" && echo admin-token-000003 >"$state/admin.token")
export SPILLWAY_TOKEN_FILE="$state/ml.token"
admin() { SPILLWAY_TOKEN_FILE="$state/admin.token" "$spw" "$@"; }

echo "== daemon at $url (state in $state)"
echo "== submitting 6 jobs of 2 GPUs, $job_s s each: the 4 local slots take 2 at a time"
for i in 1 2 3 4 5 6; do
    "$spw" submit --gpus 2 --name "train-$i" --est-runtime "${job_s}s" \
        -- sh -c "echo \"training on GPUs \$CUDA_VISIBLE_DEVICES at \$SPILLWAY_PLACEMENT\"; sleep $job_s" \
        || fail "submit failed"
done
sleep 1
echo "== queue now: two run on-prem, four wait (they burst after $wait_s s)"
"$spw" queue || fail "queue failed"
sleep "$wait_s"
sleep 4
echo "== queue after the wait: the waiting jobs spilled to the emulated cloud"
"$spw" queue || fail "queue failed"
id=
for j in j-000003 j-000004 j-000005 j-000006; do
    if "$spw" show "$j" -o json | grep -q '"where": *"cloud"'; then
        id=$j
        break
    fi
done
if [ -n "$id" ]; then
    echo "== why $id went to the cloud"
    "$spw" explain "$id" || fail "explain failed"
fi
i=0
until "$spw" show j-000001 -o json | grep -Eq '"state": *"(succeeded|failed|cancelled)"'; do
    [ $i -lt $((job_s * 10 + 100)) ] || fail "j-000001 did not end"
    sleep 0.1
    i=$((i + 1))
done
echo "== logs of train-1"
"$spw" logs j-000001 || fail "logs failed"
echo "== costs (admin view: on-prem amortised and emulated cloud billing side by side)"
admin costs || fail "costs failed"
echo "== audit log (admin): who did what, by token name"
admin audit --limit 8 || fail "audit failed"
echo "== dashboard: $url/ui (sign in with a token; admin-token-000003 sees everything)"
echo "   this demo's daemon stops now; keep one with: chmod 600 examples/serve.yaml; ./spillway serve --config examples/serve.yaml"
echo "   (chmod 600 it first) and open http://127.0.0.1:8470/ui"
if [ -f build/demo-report.html ]; then
    echo "== what-if report of the policy comparison: build/demo-report.html (opens offline)"
fi
echo "== cancelling what still runs, then stopping the daemon"
for i in 1 2 3 4 5 6; do
    admin cancel "j-00000$i" >/dev/null 2>&1
done
i=0
while admin queue -o json | grep -Eq '"state": *"(queued|placed|running)"'; do
    [ $i -lt 200 ] || fail "jobs did not stop after cancel"
    sleep 0.1
    i=$((i + 1))
done
stop
rm -rf "$state"
echo "== done"
exit 0
