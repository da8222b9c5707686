#!/bin/sh
# slurm-demo.sh: spillway in front of a real Slurm 22.05.  Starts a throwaway
# cluster on loopback (scripts/slurm-cluster.sh: 2 nodes x 4 fake GPUs), then
# `spillway serve` with examples/slurm.yaml on a free port: the pool's nodes
# come from Slurm, jobs run as Slurm batch jobs (squeue shows them, with
# their launch token as comment), the overflow bursts to the emulated cloud
# after 10 s.  Stops everything it started, by pid.  About 40 s.
set -u
cd "$(dirname "$0")/.."
# SPILLWAY_BIN: the spillway to run (tests pass theirs); default ./spillway.
SPW=${SPILLWAY_BIN:-./spillway}
[ -x "$SPW" ] || make -j2 spillway >/dev/null || exit 1
D=$(mktemp -d "${TMPDIR:-/tmp}/spillway-slurm-demo.XXXXXX")
# Jobs run as spillway-job when the daemon is root: they must pass through
# $D to their checkpoint directories under the state dir.
chmod 711 "$D"
pid=
# alive PID: whether PID still runs (a zombie, exited but not reaped, does not).
alive() { kill -0 "$1" 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' "/proc/$1/status"; }
stop() {
    # Jobs outlive their daemon (by design): cancel the demo's own first, and
    # wait until none runs, so that nothing of it is left (10 s at most).
    if [ -n "${SPILLWAY_URL:-}" ] && alive "$pid"; then
        for j in 1 2 3 4 5 6; do "$SPW" cancel "j-00000$j" >/dev/null 2>&1; done
        i=0
        while "$SPW" queue 2>/dev/null | grep -Eq ' (queued|placed|running) ' && [ $i -lt 100 ]; do
            sleep 0.1; i=$((i + 1))
        done
    fi
    # The daemon may take a while to stop (Slurm commands in flight end
    # first, 30 s at most): wait for it by pid, then SIGKILL.
    if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
        i=0
        while alive "$pid" && [ $i -lt 400 ]; do sleep 0.1; i=$((i + 1)); done
        alive "$pid" && kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    scripts/slurm-cluster.sh stop "$D/cluster" >/dev/null 2>&1
    rm -rf "$D"
}
trap stop EXIT
trap 'exit 130' INT TERM
# Exit 3 (this machine cannot run Slurm: not root, no slurmctld) is passed on.
scripts/slurm-cluster.sh start "$D/cluster" --nodes 2 --gpus 4 --cloud 0 || exit $?
export SLURM_CONF=$D/cluster/slurm.conf
# The example holds API tokens: serve refuses a config others can read, and a
# checkout leaves it 0644, so the demo runs a private copy.
cp examples/slurm.yaml "$D/slurm.yaml" && chmod 600 "$D/slurm.yaml" || exit 1
"$SPW" serve --config "$D/slurm.yaml" --state-dir "$D/state" --listen 127.0.0.1:0 \
    2>"$D/serve.log" &
pid=$!
for _ in $(seq 100); do
    grep -q "listening on" "$D/serve.log" && break
    sleep 0.1
done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$D/serve.log")
[ -n "$url" ] || { cat "$D/serve.log" >&2; exit 1; }
export SPILLWAY_URL=$url SPILLWAY_TOKEN=ml-team-token-0001
echo "== daemon at $url; Slurm has 2 nodes x 4 GPUs:"
sinfo -p onprem -o '%N %G %T'
echo "== submitting a 2-node gang (8 GPUs), then five 2-GPU jobs of 15 s"
"$SPW" submit --gpus 8 --name gang --est-runtime 4s -- \
    sh -c 'echo "rank $RANK of $WORLD_SIZE on $SLURMD_NODENAME, master $MASTER_ADDR:$MASTER_PORT"; sleep 4'
for i in 1 2 3 4 5; do
    "$SPW" submit --gpus 2 --name "train-$i" --est-runtime 15s -- \
        sh -c 'echo "training on $SLURMD_NODENAME GPUs $CUDA_VISIBLE_DEVICES"; sleep 15'
done
sleep 3
echo "== spillway queue: the gang holds both nodes; the others wait"
"$SPW" queue
echo "== squeue: spillway's jobs in Slurm, the comment is the launch token"
squeue -t all -o '%.4i %.10T %.24k %N'
sleep 10
echo "== 10 s later: four run in Slurm after the gang, the fifth waited 10 s and burst to the emulated cloud"
"$SPW" queue --all
squeue -t all -o '%.4i %.10T %.24k %N'
echo "== spillway logs j-000001 (written by Slurm, read by spillway):"
"$SPW" logs j-000001
