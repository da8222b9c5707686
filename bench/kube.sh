#!/usr/bin/env bash
# bench/kube.sh: the Kubernetes backend's figures, against the fake API
# server of the tests (tests/fake/kube.py: HTTPS, schema checks, a kubelet
# that runs real processes; not a real cluster).  Run from the repository
# root after `make` and `make build/bench/bench_kube_sync`.  Not run by CI.
#
#   [BENCH_KUBE_SUBMITS=S] [BENCH_KUBE_JOBS=N] [BENCH_KUBE_PATCHES=M]
#   [BENCH_REPS=R] bench/kube.sh
#
# 1. Submit -> Job created, beside the local backend in the same run: a
#    fresh daemon gets S jobs (default 200; 1 GPU each, `sleep 60`) through
#    `spillway submit`, one after another, on a pool with S GPUs (4 nodes of
#    S/4; S a multiple of 4, at most 256): a local pool (`gpus: slots`),
#    then a kubernetes pool on a fake with 4 such nodes.  The time runs
#    from the first submit to the S-th start: for the local pool the S-th
#    job's first line (its date), for the kubernetes pool the fake's S-th
#    `POST .../jobs` answered 201.  Rates are S / time;
#    ratio = kubernetes / local.
# 2. State sync at N Jobs (default 10000): the fake holds N suspended Jobs
#    of daemon "bench"; build/bench/bench_kube_sync measures one paged list
#    of them (what the backend did every second before it watched), the
#    backend's start-up (first lists + find() of every Job), the CPU per
#    second when nothing changes (bookmarks), and the CPU per watch event
#    while M Jobs (default 500) are changed by merge PATCHes.
# Each is run R times (default 3): min/median/max are printed.
# BENCH_SPILLWAY and BENCH_KUBE_SYNC name other binaries (default ./spillway
# and build/bench/bench_kube_sync).
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 1
SUBMITS=${BENCH_KUBE_SUBMITS:-200}
JOBS=${BENCH_KUBE_JOBS:-10000}
PATCHES=${BENCH_KUBE_PATCHES:-500}
REPS=${BENCH_REPS:-3}
PY=/usr/bin/python3
SYNC=${BENCH_KUBE_SYNC:-build/bench/bench_kube_sync}
SPW=${BENCH_SPILLWAY:-./spillway}
[ -x "$SPW" ] && [ -x "$SYNC" ] || { echo "bench/kube.sh: run make and make $SYNC first" >&2; exit 2; }
SCHEMAS=$(cd .. && pwd)/shared/data/contracts/kubernetes/openapi-v3
[ -n "${SPW_KUBE_CONTRACTS:-}" ] && SCHEMAS=$SPW_KUBE_CONTRACTS/openapi-v3
[ -d "$SCHEMAS" ] || { echo "bench/kube.sh: SKIP: no OpenAPI schemas at $SCHEMAS" >&2; exit 3; }
mkdir -p bench/out
D=$(mktemp -d "$PWD/bench/out/kube.XXXXXX") || exit 1
FPID= DPID=
cleanup() {
    [ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    [ -n "$FPID" ] && kill -TERM "$FPID" 2>/dev/null && wait "$FPID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
export SPILLWAY_TOKEN=bench-admin-token-000001

# fake_start DIR ARGS...: a fake in DIR; sets FPID and FURL.
fake_start() {
    local dir=$1
    shift
    mkdir -p "$dir"
    "$PY" tests/fake/kube.py --dir "$dir" --url-file "$dir/url" --schemas "$SCHEMAS" "$@" \
        </dev/null >"$dir/log" 2>&1 &
    FPID=$!
    for _ in $(seq 1 600); do [ -s "$dir/url" ] && break; sleep 0.05; done
    [ -s "$dir/url" ] || { echo "bench/kube.sh: the fake did not start: $(cat "$dir/log")" >&2; exit 1; }
    FURL=$(cat "$dir/url")
}
fake_stop() { kill -TERM "$FPID" 2>/dev/null; wait "$FPID" 2>/dev/null; FPID=; }

# daemon_run POOLYAML: a fresh daemon (DPID); submits S jobs; t0 = the
# first submit's time (s since the epoch).
daemon_run() {
    cat >"$D/serve.yaml" <<EOF
onprem:
$1
policy: {queue: fifo, wait: never}
daemon: {gpus: slots, tick_s: 0.01, kill_grace_s: 1, tokens: [{token: $SPILLWAY_TOKEN, admin: true}]}
EOF
    chmod 600 "$D/serve.yaml"
    rm -rf "$D/state"
    "$SPW" serve --config "$D/serve.yaml" --state-dir "$D/state" --listen 127.0.0.1:0 \
        </dev/null >"$D/out" 2>"$D/err" &
    DPID=$!
    local url=
    for _ in $(seq 1 200); do
        url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9][0-9]*\).*|\1|p' "$D/err" "$D/out" | head -1)
        [ -n "$url" ] && break
        sleep 0.05
    done
    [ -n "$url" ] || { echo "bench/kube.sh: the daemon did not start: $(cat "$D/err")" >&2; exit 1; }
    t0=$(date +%s.%N)
    local i
    for i in $(seq 1 "$SUBMITS"); do
        SPILLWAY_URL=$url "$SPW" submit --gpus 1 -- \
            sh -c "echo \$(date +%s.%N) \$\$ >>$D/starts; exec sleep 60" >/dev/null ||
            { echo "bench/kube.sh: submit $i failed" >&2; exit 1; }
    done
}
daemon_stop() { kill -KILL "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=; }

# stats NAME: min/median/max of the values in $D/NAME (one a line).
stats() {
    sort -g "$D/$1" | awk -v n="$1" '{ v[NR] = $1 } END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "  %-26s min %10.2f  median %10.2f  max %10.2f  (%d runs)\n", n, v[1], m, v[NR], NR }'
}

echo "bench/kube.sh: submits=$SUBMITS jobs=$JOBS patches=$PATCHES reps=$REPS (fake API server, $(nproc) CPUs)"
for rep in $(seq 1 "$REPS"); do
    # --- 1a. local pool ---
    # (run as root, the daemon runs jobs as spillway-job: the file is theirs too)
    chmod 755 "$D"
    : >"$D/starts"
    chmod 666 "$D/starts"
    # (a local node has at most 64 GPU slots: 4 nodes of S/4, on both pools)
    daemon_run "  - {name: local, nodes: 4, gpus_per_node: $((SUBMITS / 4)), gpu: A100, cost_usd_per_gpu_h: 1.10}"
    [ -n "$t0" ] || exit 1
    for _ in $(seq 1 600); do [ "$(wc -l <"$D/starts")" -ge "$SUBMITS" ] && break; sleep 0.1; done
    t1=$(sort -g "$D/starts" | sed -n "${SUBMITS}p" | cut -d' ' -f1)
    daemon_stop
    for p in $(cut -d' ' -f2 "$D/starts"); do kill -KILL "$p" 2>/dev/null; done   # the jobs' sleeps
    [ -n "$t1" ] || { echo "bench/kube.sh: the local jobs did not all start" >&2; exit 1; }
    local_rate=$(awk -v a="$t0" -v b="$t1" -v n="$SUBMITS" 'BEGIN { printf "%.2f", n / (b - a) }')
    # --- 1b. kubernetes pool on the fake ---
    fake_start "$D/fake$rep" --watch-window 100000 \
        $(for n in 0 1 2 3; do echo "--node n$n:$((SUBMITS / 4)):NVIDIA-H100-80GB-HBM3"; done)
    daemon_run "  - {name: k8s, backend: kubernetes, kubeconfig: $D/fake$rep/kubeconfig, namespace: default, image: 'busybox:1.36', cost_usd_per_gpu_h: 1.10}"
    [ -n "$t0" ] || exit 1
    t1=
    for _ in $(seq 1 300); do
        t1=$(curl -s --cacert "$D/fake$rep/ca.crt" "$FURL/_fake/state" | "$PY" -c '
import json, sys
n = int(sys.argv[1])
t = sorted(c["t"] for c in json.load(sys.stdin)["calls"]
           if c["method"] == "POST" and c["path"].endswith("/jobs") and c["status"] == 201)
print("%.6f" % t[n - 1] if len(t) >= n else "")' "$SUBMITS")
        [ -n "$t1" ] && break
        sleep 0.2
    done
    daemon_stop
    fake_stop
    [ -n "$t1" ] || { echo "bench/kube.sh: the Jobs were not all created" >&2; exit 1; }
    kube_rate=$(awk -v a="$t0" -v b="$t1" -v n="$SUBMITS" 'BEGIN { printf "%.2f", n / (b - a) }')
    echo "$local_rate" >>"$D/local_starts_per_s"
    echo "$kube_rate" >>"$D/kube_jobs_created_per_s"
    awk -v k="$kube_rate" -v l="$local_rate" 'BEGIN { printf "%.3f\n", k / l }' >>"$D/ratio_kube_to_local"
    echo "rep $rep: local $local_rate starts/s, kubernetes $kube_rate Jobs created/s"

    # --- 2. state sync at N Jobs ---
    fake_start "$D/sync$rep" --watch-window 100000 --bookmark-s 1
    "$PY" - "$JOBS" "$D/sync$rep/names" >"$D/seed.json" <<'EOF' || exit 1
import json, sys
def name(jid, tok):   # spw_kube_job_name: spw-JOBID-FNV1A(token)
    h = 14695981039346656037
    for c in tok.encode():
        h = ((h ^ c) * 1099511628211) & (2**64 - 1)
    return "spw-%s-%010x" % (jid, h & 0xffffffffff)
jobs = []
for i in range(1, int(sys.argv[1]) + 1):
    jid = "j-%06d" % i
    jobs.append({"apiVersion": "batch/v1", "kind": "Job",
                 "metadata": {"name": name(jid, "bench.%s.1" % jid),
                              "labels": {"spillway.dev/daemon": "bench"},
                              "annotations": {"spillway.dev/token": "bench.%s.1" % jid,
                                              "spillway.dev/job-id": jid}},
                 "spec": {"suspend": True, "backoffLimit": 0, "template": {"spec": {
                     "restartPolicy": "Never",
                     "containers": [{"name": "job", "image": "busybox:1.36",
                                     "command": ["/bin/sh", "-c", "true"]}]}}}})
print(json.dumps({"namespace": "default", "jobs": jobs}))
open(sys.argv[2], "w").write("".join(j["metadata"]["name"] + "\n" for j in jobs))
EOF
    curl -sf --max-time 900 --cacert "$D/sync$rep/ca.crt" -H 'Content-Type: application/json' \
        --data @"$D/seed.json" "$FURL/_fake/seed-jobs" >/dev/null ||
        { echo "bench/kube.sh: cannot seed $JOBS Jobs" >&2; exit 1; }
    cat >"$D/patch.py" <<'EOF'
import http.client, json, ssl, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
d, n, m = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
h = {"Authorization": "Bearer " + open(d + "/token").read().strip(),
     "Content-Type": "application/merge-patch+json"}
names = [l.strip() for l in open(d + "/names")]
for k in range(m):
    c.request("PATCH", "/apis/batch/v1/namespaces/default/jobs/" + names[(k * 7919) % n],
              json.dumps({"metadata": {"labels": {"bench-touch": str(k)}}}), h)
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit("patch %d: HTTP %d" % (k, r.status))
EOF
    line=$(BENCH_KUBE_PATCHES=$PATCHES "$SYNC" "$D/sync$rep/kubeconfig" "$JOBS" \
        "$PY $D/patch.py $FURL $D/sync$rep $JOBS $PATCHES") || { fake_stop; exit 1; }
    fake_stop
    echo "rep $rep: $line"
    for f in list_cpu_ms list_wall_ms find_cpu_ms idle_cpu_ms_per_s event_cpu_us event_marginal_cpu_us; do
        echo "$line" | tr ' ' '\n' | sed -n "s/^$f=//p" >>"$D/$f"
    done
done
echo "submit -> started, $SUBMITS jobs, one after another:"
stats local_starts_per_s
stats kube_jobs_created_per_s
stats ratio_kube_to_local
echo "state sync at $JOBS Jobs (bench_kube_sync; $PATCHES watch events a run):"
for f in list_cpu_ms list_wall_ms find_cpu_ms idle_cpu_ms_per_s event_cpu_us event_marginal_cpu_us; do
    stats "$f"
done
