#!/bin/sh
# live-demo.sh: the live path in one go.  Starts `spillway serve` with
# examples/serve.yaml on a free port and a fresh state dir, submits a burst
# of jobs that is more than the 4 local GPU slots can take, shows them spill
# to the emulated cloud, prints `spillway costs`, and stops the daemon.
set -e
cd "$(dirname "$0")/.."
state=$(mktemp -d /tmp/spillway-demo.XXXXXX)
log=$state/serve.log
./spillway serve --config examples/serve.yaml --state-dir "$state" --listen 127.0.0.1:0 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; pkill -f "SPILLWAY_DEMO_JOB" 2>/dev/null; true' EXIT
for _ in $(seq 50); do
    grep -q "listening on" "$log" && break
    sleep 0.1
done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$log")
[ -n "$url" ] || { cat "$log" >&2; exit 1; }
export SPILLWAY_URL=$url SPILLWAY_TOKEN=ml-team-token-0001
echo "== daemon at $url (state in $state)"
echo "== submitting 6 jobs of 2 GPUs, 15 s each: the 4 local slots take 2 at a time"
for i in 1 2 3 4 5 6; do
    ./spillway submit --gpus 2 --name "train-$i" --est-runtime 15s --env SPILLWAY_DEMO_JOB=1 \
        -- sh -c 'echo "training on GPUs $CUDA_VISIBLE_DEVICES at $SPILLWAY_PLACEMENT"; sleep 15'
done
sleep 1
echo "== queue now: two run on-prem, four wait (they burst after 10 s)"
./spillway queue
sleep 14
echo "== queue after the wait: the waiting jobs spilled to the emulated cloud"
./spillway queue
id=
for j in j-000003 j-000004 j-000005 j-000006; do
    if ./spillway show "$j" -o json | grep -q '"where": *"cloud"'; then
        id=$j
        break
    fi
done
if [ -n "$id" ]; then
    echo "== why $id went to the cloud"
    ./spillway explain "$id"
fi
sleep 10
echo "== logs of train-1"
./spillway logs j-000001
echo "== costs (admin view: on-prem amortised and emulated cloud billing side by side)"
SPILLWAY_TOKEN=admin-token-000003 ./spillway costs

# The dashboard and the what-if report (docs/dashboard.md).
echo "== dashboard: $url/ui (paste a token; admin-token-000003 sees everything)"
echo "   this demo's daemon stops now; keep one with: ./spillway serve --config examples/serve.yaml"
echo "   and open http://127.0.0.1:8470/ui"
if [ -f build/demo-report.html ]; then
    echo "== what-if report of the policy comparison: build/demo-report.html (opens offline)"
fi
