#!/bin/sh
# kube_fake.sh: the fake Kubernetes API server (tests/fake/kube.py) the
# Kubernetes backend is tested against, checked by the real kubectl (its
# kubeconfig: HTTPS with the fake's CA, a bearer token, or an exec credential
# plugin), by plain HTTP calls, and against the Job and Status fixtures of
# Kubernetes' own api-testdata (field names and shape).  One fake for the
# file; every Job runs its command as a real process.  The schemas and
# fixtures are read from ../shared/data/contracts/kubernetes (or
# $SPW_KUBE_CONTRACTS); the test skips when they are absent.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
T=$(mktemp -d /tmp/spw-kube-fake.XXXXXX)
FAKE_KUBE_PY=${FAKE_KUBE_PY:-$root/tests/fake/kube.py}
# shellcheck source=tests/fake/kube-lib
. "$root/tests/fake/kube-lib"
cleanup() {
    [ -n "${WPID:-}" ] && kill "$WPID" 2>/dev/null
    fake_kube_stop_all
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

KUBECTL=${KUBECTL:-/usr/bin/kubectl}
[ -x "$KUBECTL" ] || KUBECTL=$(command -v kubectl)
[ -n "$KUBECTL" ] || { echo "1..0 # SKIP kubectl missing (google-cloud-cli's, or Debian's kubernetes-client)"; exit 0; }
kminor=$("$KUBECTL" version --client -o json 2>/dev/null | /usr/bin/python3 -c \
    'import json, sys; print(int(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+")))' 2>/dev/null)
[ "${kminor:-0}" -ge 27 ] || { echo "1..0 # SKIP kubectl 1.${kminor:-?} is older than 1.27 (the fake serves /openapi/v3 only)"; exit 0; }
command -v openssl >/dev/null || { echo "1..0 # SKIP openssl missing"; exit 0; }
[ -x /usr/bin/python3 ] || { echo "1..0 # SKIP /usr/bin/python3 missing"; exit 0; }
CONTRACTS=$(fake_kube_contracts)
fake_kube_schemas >/dev/null && [ -f "$CONTRACTS/api-testdata-v1.36.0/batch.v1.Job.json" ] || {
    echo "1..0 # SKIP Kubernetes contracts absent: $CONTRACTS (openapi-v3/, api-testdata-v1.36.0/)"
    exit 0
}

tap_n=0 tap_failed=0
ok() {
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; return 0; fi
    echo "not ok $tap_n - $2"
    tap_failed=$((tap_failed + 1))
    return 1
}
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
# wait_until SECONDS CMD...: polls CMD (every 0.2 s) until it succeeds
wait_until() {
    wu_end=$(($(date +%s) + $1))
    shift
    until "$@"; do
        [ "$(date +%s)" -ge $wu_end ] && return 1
        sleep 0.2
    done
}
# py EXPR [FILE]: EXPR with j = the JSON of FILE (stdin without FILE)
py() {
    /usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[2]) if len(sys.argv) > 2 else sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v) if isinstance(v, (dict, list)) else v)' "$@"
}
# sleep_job NAME [SED]: creates a Job NAME whose pod sleeps (follow.yaml,
# below, edited by SED too)
sleep_job() {
    sed "s/\"name\": \"follow\"/\"name\": \"$1\"/; s/echo one; sleep 2; echo two; exit 3/exec sleep 300/; ${2:-}" \
        "$T/follow.yaml" | K create -f - >/dev/null 2>&1
}
# pod_phase JOB PHASE: the first pod of JOB is in PHASE
pod_phase() {
    "$KUBECTL" get pods -l "job-name=$1" -o jsonpath='{.items[0].status.phase}' 2>/dev/null |
        grep -qx "$2"
}
export HOME=$T/home     # kubectl's discovery cache, fresh for the test
mkdir -p "$HOME"

echo "1..48"
fake_kube_start kube --node gpu-a:4:NVIDIA-H100-80GB-HBM3 --node gpu-b:2:NVIDIA-A100-SXM4-40GB \
    --bookmark-s 0.5
ok $? "the fake starts on HTTPS with its own CA and writes a kubeconfig" || {
    cat "$T/kube/stderr" | sed 's/^/# /'
    exit 1
}
export KUBECONFIG=$FAKE_KUBE_CONFIG
K() { "$KUBECTL" --request-timeout=30s "$@"; }

# --- authentication ---
out=$(curl -sS --cacert "$FAKE_KUBE_DIR/ca.crt" -w '\nHTTP %{http_code}' "$FAKE_KUBE_URL/api/v1/nodes")
echo "$out" | grep -q 'HTTP 401' && echo "$out" | head -1 | py 'j["kind"] + " " + j["reason"]' |
    grep -qx 'Status Unauthorized'
ok $? "a request without the bearer token gets 401 with an Unauthorized Status" || diag "$out"
curl -sS --max-time 5 "$FAKE_KUBE_URL/version" >/dev/null 2>&1
ok $((! $?)) "a client that does not trust the fake's CA is refused (TLS verification)"

# --- kubectl: nodes, label selector ---
out=$(K get nodes -o name 2>&1)
[ "$out" = "$(printf 'node/gpu-a\nnode/gpu-b')" ]
ok $? "kubectl get nodes lists the declared nodes" || diag "$out"
out=$(K get nodes -l 'nvidia.com/gpu.product in (NVIDIA-A100-SXM4-40GB),kubernetes.io/os' -o name 2>&1)
[ "$out" = node/gpu-b ]
ok $? "kubectl get nodes -l 'key in (v),exists' selects by label" || diag "$out"
out=$(K get nodes -l 'nvidia.com/gpu.product!=NVIDIA-A100-SXM4-40GB,!missing' \
    -o jsonpath='{.items[*].status.allocatable.nvidia\.com/gpu}' 2>&1)
[ "$out" = 4 ]
ok $? "!= and !key selectors; allocatable nvidia.com/gpu is served" || diag "$out"

# --- a Job: apply, watch to completion, logs ---
cat >"$T/hello.yaml" <<'EOF'
apiVersion: batch/v1
kind: Job
metadata:
  name: hello
  labels: {app: hello}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c"]
        args: ["echo hello from $(POD) on $NODE gpus=$NVIDIA_VISIBLE_DEVICES; echo to-stderr >&2; sleep 1"]
        env:
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        resources: {limits: {nvidia.com/gpu: "2"}}
EOF
# (kubectl's jsonpath watch prints nothing when its first list was empty:
# one Job first)
fake_kube_api POST /apis/batch/v1/namespaces/default/jobs '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"first"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"x","command":["true"]}]}}}}' >/dev/null
"$KUBECTL" get jobs -w -o jsonpath='{.metadata.name} {.metadata.resourceVersion} {.status.conditions[*].type}{"\n"}' \
    >"$T/watch.out" 2>&1 &
WPID=$!
wait_until 30 grep -q '"query": "resourceVersion=[0-9]*&watch=true"' "$FAKE_KUBE_DIR/log"
out=$(K apply -f "$T/hello.yaml" 2>&1)
[ "$out" = "job.batch/hello created" ]
ok $? "kubectl apply -f creates the Job (discovery, /openapi/v3, fieldValidation=Strict)" || diag "$out"
wait_until 60 grep -q 'hello .* Complete' "$T/watch.out"
ok $? "kubectl get jobs -w sees the Job go Complete" || diag "$(cat "$T/watch.out")"
kill $WPID 2>/dev/null
wait $WPID 2>/dev/null
WPID=
rvs=$(grep '^hello ' "$T/watch.out" | cut -d' ' -f2 | tr '\n' ' ')
[ "$(echo $rvs | wc -w)" -ge 3 ] && [ "$(echo $rvs | tr ' ' '\n' | sort -n | tr '\n' ' ')" = "$rvs" ]
ok $? "the watch streamed the Job's ADDED and MODIFIED events in resourceVersion order ($rvs)" ||
    diag "$(cat "$T/watch.out")"
out=$(K get pods -l job-name=hello -o jsonpath='{.items[0].status.phase} {.items[0].status.containerStatuses[0].state.terminated.exitCode} {.items[0].spec.nodeName}' 2>&1)
[ "$out" = "Succeeded 0 gpu-a" ]
ok $? "its pod Succeeded with exit code 0 on the node with the GPUs free" || diag "$out"
out=$(K logs job/hello 2>&1)
pod=$(K get pods -l job-name=hello -o jsonpath='{.items[0].metadata.name}')
[ "$out" = "$(printf 'hello from %s on gpu-a gpus=0,1\nto-stderr' "$pod")" ]
ok $? "kubectl logs job/hello: the real process's stdout and stderr, env from fieldRef" || diag "$out"

# --- logs -f follows a running pod ---
cat >"$T/follow.yaml" <<'EOF'
{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "follow"},
 "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
   {"name": "main", "image": "x", "command": ["/bin/sh", "-c", "echo one; sleep 2; echo two; exit 3"]}]}}}}
EOF
K create -f "$T/follow.yaml" >/dev/null 2>&1
wait_until 30 pod_phase follow Running
out=$(timeout 60 "$KUBECTL" logs -f job/follow 2>&1)
[ "$out" = "$(printf 'one\ntwo')" ]
ok $? "kubectl logs -f streams a running pod's output until it ends" || diag "$out"
wait_until 30 sh -c "'$KUBECTL' get job follow -o jsonpath='{.status.conditions[?(@.type==\"Failed\")].reason}' | grep -q BackoffLimitExceeded"
ok $? "exit 3 with backoffLimit 0 fails the Job (BackoffLimitExceeded)"
out=$(K get pods -l job-name=follow -o jsonpath='{.items[0].status.phase} {.items[0].status.containerStatuses[0].state.terminated.exitCode} {.items[0].status.containerStatuses[0].state.terminated.reason}')
[ "$out" = "Failed 3 Error" ]
ok $? "its pod: phase Failed, terminated exitCode 3" || diag "$out"

# --- an Indexed gang ---
cat >"$T/gang.yaml" <<'EOF'
{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "gang"},
 "spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimit": 0,
   "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x",
     "command": ["/bin/sh", "-c", "echo rank=$JOB_COMPLETION_INDEX host=$HOSTNAME"],
     "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}}}
EOF
K create -f "$T/gang.yaml" >/dev/null 2>&1
wait_until 60 sh -c "'$KUBECTL' get job gang -o jsonpath='{.status.completedIndexes}' | grep -qx 0-1"
ok $? "an Indexed Job (parallelism = completions = 2) completes indexes 0-1"
out=$(for p in $(K get pods -l job-name=gang -o name); do K logs "$p"; done | sort | tr '\n' ' ')
names=$(K get pods -l job-name=gang -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.annotations.batch\.kubernetes\.io/job-completion-index} {end}')
[ "$out" = "rank=0 host=gang-0 rank=1 host=gang-1 " ] &&
    echo "$names" | grep -Eq '^gang-0-[a-z0-9]{5}=0 gang-1-[a-z0-9]{5}=1 $'
ok $? "each rank's pod is JOB-INDEX-xxxxx with the index annotation, JOB_COMPLETION_INDEX and hostname" ||
    diag "$out" "$names"

# --- delete with propagation ---
sleep_job long
wait_until 30 pod_phase long Running
pid=$(fake_kube_py '[v for k, v in d["processes"].items() if "/long-" in k][0][0]')
kill -0 "$pid" 2>/dev/null
ok $? "a running Job's container is a real process (pid $pid)"
out=$(K delete job long --cascade=foreground 2>&1)
gone=$(K get pods -l job-name=long -o name 2>&1; K get job long -o name 2>&1)
! kill -0 "$pid" 2>/dev/null && [ "$out" = 'job.batch "long" deleted' ] &&
    [ "$gone" = 'Error from server (NotFound): jobs.batch "long" not found' ]
ok $? "kubectl delete --cascade=foreground: the process is killed, the pods and then the Job go" ||
    diag "$out" "$gone"
sleep_job long2
wait_until 30 pod_phase long2 Running
out=$(fake_kube_api DELETE /apis/batch/v1/namespaces/default/jobs/long2 '{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}')
echo "$out" | tail -1 | grep -q 'HTTP 200' &&
    wait_until 30 sh -c "[ -z \"\$('$KUBECTL' get pods -l job-name=long2 -o name)\" ]"
ok $? "DELETE with propagationPolicy Background: the Job goes at once, its pods after" || diag "$out"

# --- nothing kubectl sent so far broke the schemas ---
out=$(fake_kube_py 'len(d["violations"])')
[ "$out" = 0 ]
ok $? "0 schema violations from kubectl's requests" || diag "$(fake_kube_py 'd["violations"]')"

# --- validation, AlreadyExists ---
sed 's/name: hello/name: bad/; s/restartPolicy: Never/restartPolicy: Always/; s/image: busybox/imagePullPolicy: Sometimes/' \
    "$T/hello.yaml" >"$T/bad.yaml"
out=$(K apply -f "$T/bad.yaml" 2>&1)
echo "$out" | grep -q 'spec.template.spec.restartPolicy: Unsupported value: "Always"' &&
    echo "$out" | grep -q 'spec.template.spec.containers\[0\].image: Required value' &&
    echo "$out" | grep -q 'spec.template.spec.containers\[0\].imagePullPolicy: Unsupported value'
ok $? "an invalid Job is refused (422 Invalid), each bad field named" || diag "$out"
out=$(fake_kube_py '" ".join(sorted(v["field"] + ":" + str(v["code"]) for v in d["violations"]))')
[ "$out" = "spec.template.spec.containers[0].image:422 spec.template.spec.containers[0].imagePullPolicy:422 spec.template.spec.restartPolicy:422" ]
ok $? "the violations log records them" || diag "$out"
job='{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"typo"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"x","comand":["true"]}]}}}}'
out=$(fake_kube_api POST /apis/batch/v1/namespaces/default/jobs "$job")
echo "$out" | tail -1 | grep -q 'HTTP 400' &&
    echo "$out" | head -1 | py 'j["reason"] + ": " + j["message"]' |
    grep -qx 'BadRequest: strict decoding error: unknown field "spec.template.spec.containers\[0\].comand"'
ok $? "an unknown field is refused (400, strict decoding error naming it)" || diag "$out"
job='{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"gpus"},"spec":{"completionMode":"Indexed","template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"x","resources":{"requests":{"nvidia.com/gpu":"2"},"limits":{"nvidia.com/gpu":"1"}}}]}}}}'
out=$(fake_kube_api POST /apis/batch/v1/namespaces/default/jobs "$job")
echo "$out" | tail -1 | grep -q 'HTTP 422' &&
    [ "$(echo "$out" | head -1 | py '" ".join(c["field"] for c in j["details"]["causes"])')" = \
      "spec.template.spec.containers[0].resources.requests[nvidia.com/gpu] spec.completions" ]
ok $? "GPU requests must equal limits; Indexed needs completions (details.causes[].field)" || diag "$out"
out=$(K create -f "$T/hello.yaml" 2>&1)
echo "$out" | grep -q 'Error from server (AlreadyExists).*jobs.batch "hello" already exists'
ok $? "creating an existing Job: AlreadyExists" || diag "$out"
fake_kube_api POST /apis/batch/v1/namespaces/default/jobs \
    "$(K get job hello -o json | py 'dict(j, metadata={"name": "hello"}, status={})')" >"$T/exists.out"
tail -1 "$T/exists.out" | grep -q 'HTTP 409' && head -1 "$T/exists.out" | py '[j["reason"], j["code"], j["details"]]' |
    grep -qx '\["AlreadyExists", 409, {"name": "hello", "kind": "jobs", "group": "batch"}\]'
ok $? "... a 409 Status with reason AlreadyExists and details" || diag "$(cat "$T/exists.out")"

# --- chunked lists ---
n=$(K get pods -o name | wc -l)
out=$(K get pods --chunk-size=1 -o name | wc -l)
[ "$n" -ge 3 ] && [ "$out" = "$n" ]
ok $? "kubectl get pods --chunk-size=1 lists all $n pods through limit/continue" || diag "$out"
p1=$(fake_kube_api GET '/api/v1/namespaces/default/pods?limit=2' | head -1)
tok=$(echo "$p1" | py 'j["metadata"]["continue"]')
p2=$(fake_kube_api GET "/api/v1/namespaces/default/pods?limit=100&continue=$tok" | head -1)
[ "$(echo "$p1" | py 'j["metadata"]["remainingItemCount"]')" = $((n - 2)) ] &&
    [ "$(echo "$p2" | py 'len(j["items"])')" = $((n - 2)) ] &&
    [ "$(echo "$p2" | py '"continue" in j["metadata"]')" = False ] &&
    [ -z "$(echo "$p1" | py '"kind" in j["items"][0]' | grep True)" ]
ok $? "limit=2: continue token and remainingItemCount; the next chunk has the rest; items carry no kind" ||
    diag "$p1" | head -3

# --- watch: bookmarks, 410 Gone ---
rv=$(fake_kube_api GET /apis/batch/v1/namespaces/default/jobs | head -1 | py 'j["metadata"]["resourceVersion"]')
fake_kube_api GET "/apis/batch/v1/namespaces/default/jobs?watch=1&resourceVersion=$rv&allowWatchBookmarks=true&timeoutSeconds=2" >"$T/bm.out"
grep -q '"type": "BOOKMARK".*"resourceVersion": "'"$rv"'"' "$T/bm.out"
ok $? "a watch with allowWatchBookmarks gets BOOKMARK events at its resourceVersion" || diag "$(head -3 "$T/bm.out")"
svc='{"apiVersion":"v1","kind":"Service","metadata":{"name":"gang"},"spec":{"clusterIP":"None","selector":{"job-name":"gang"},"ports":[{"port":29500}]}}'
fake_kube_api POST /api/v1/namespaces/default/services "$svc" | tail -1 | grep -q 'HTTP 201'
ok $? "a headless Service is created (a change after the continue token was issued)"
fake_kube_post _fake/compact '{}' >/dev/null
fake_kube_api GET "/apis/batch/v1/namespaces/default/jobs?watch=1&resourceVersion=1" >"$T/gone.out"
head -1 "$T/gone.out" | py '[j["type"], j["object"]["kind"], j["object"]["code"], j["object"]["reason"]]' |
    grep -qx '\["ERROR", "Status", 410, "Expired"\]'
ok $? "a watch from a compacted resourceVersion gets an ERROR event with 410 Expired" || diag "$(cat "$T/gone.out")"
out=$(fake_kube_api GET "/api/v1/namespaces/default/pods?limit=100&continue=$tok")
echo "$out" | tail -1 | grep -q 'HTTP 410' && echo "$out" | head -1 | py 'j["reason"]' | grep -qx Expired
ok $? "a continue token older than the compaction: 410 Expired" || diag "$out"

# --- the fixtures of Kubernetes' api-testdata: field names and shape ---
cat >"$T/shape.py" <<'EOF'
import json, sys
MAPS = {'labels', 'annotations', 'nodeSelector', 'limits', 'requests', 'matchLabels',
        'capacity', 'allocatable'}
def shape(got, ref, path, errs):
    if isinstance(ref, dict) and isinstance(got, dict):
        for k, v in got.items():
            if path.split('.')[-1] in MAPS:
                continue
            if k not in ref:
                errs.append('%s.%s: not a field of the fixture' % (path, k))
            else:
                shape(v, ref[k], path + '.' + k, errs)
    elif isinstance(ref, list) and isinstance(got, list):
        for i, x in enumerate(got):
            shape(x, ref[0], '%s[%d]' % (path, i), errs)
    elif type(got) != type(ref) and not (isinstance(got, str) and isinstance(ref, str)):
        errs.append('%s: %s where the fixture has %s' % (path, type(got).__name__,
                                                         type(ref).__name__))
got = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))
errs = []
shape(got, ref, got.get('kind', ''), errs)
print('\n'.join(errs) or 'same shape')
EOF
fake_kube_api GET /apis/batch/v1/namespaces/default/jobs/gang | head -1 >"$T/gang.json"
out=$(/usr/bin/python3 "$T/shape.py" "$T/gang.json" "$CONTRACTS/api-testdata-v1.36.0/batch.v1.Job.json")
[ "$out" = "same shape" ]
ok $? "a Job the fake returns has the fields and types of batch.v1.Job.json (api-testdata v1.36.0)" || diag "$out"
fake_kube_api GET /apis/batch/v1/namespaces/default/jobs/nope | head -1 >"$T/status.json"
out=$(/usr/bin/python3 "$T/shape.py" "$T/status.json" "$CONTRACTS/api-testdata-v1.36.0/core.v1.Status.json")
[ "$out" = "same shape" ] && head -1 "$T/exists.out" >"$T/status409.json" &&
    [ "$(/usr/bin/python3 "$T/shape.py" "$T/status409.json" "$CONTRACTS/api-testdata-v1.36.0/core.v1.Status.json")" = "same shape" ]
ok $? "its 404 and 409 Status objects have the shape of core.v1.Status.json" || diag "$out"

# --- Kueue: suspended until admitted ---
cat >"$T/queued.yaml" <<'EOF'
{"apiVersion": "batch/v1", "kind": "Job",
 "metadata": {"name": "queued", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
 "spec": {"suspend": true, "backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
   "containers": [{"name": "main", "image": "x", "command": ["/bin/sh", "-c", "echo admitted"]}]}}}}
EOF
K create -f "$T/queued.yaml" >/dev/null 2>&1
wait_until 30 sh -c "'$KUBECTL' get job queued -o jsonpath='{.status.conditions[?(@.type==\"Suspended\")].status}' | grep -qx True"
out=$(K get workloads -o jsonpath='{.items[0].spec.queueName} {.items[0].status.conditions[?(@.type=="Admitted")].status} {.items[0].metadata.ownerReferences[0].name}' 2>&1)
pods=$(K get pods -l job-name=queued -o name 2>&1)
[ "$out" = "team-a False queued" ] && [ -z "$pods" ]
ok $? "a Job created suspended with a queue-name: a Workload (not Admitted), no pods" || diag "$out" "$pods"
fake_kube_post _fake/admit '{"job":"queued"}' >/dev/null
wait_until 30 sh -c "'$KUBECTL' get job queued -o jsonpath='{.status.succeeded}' | grep -qx 1"
out=$(K get workloads -o jsonpath='{.items[0].status.conditions[?(@.type=="Admitted")].status}{"\n"}'; K logs job/queued)
[ "$out" = "$(printf 'True\nadmitted')" ]
ok $? "admitted (POST /_fake/admit): the Workload's Admitted is True, the Job runs" || diag "$out"

# --- foreign pods holding GPUs, NotReady nodes, failed pods, deadlines ---
fake_kube_post _fake/foreign-pod '{"name":"squatter","node":"gpu-a","gpus":4}' >/dev/null
sleep_job big 's/"command":/"resources": {"limits": {"nvidia.com\/gpu": "3"}}, "command":/'
wait_until 30 sh -c "'$KUBECTL' get pods -l job-name=big -o jsonpath='{.items[0].status.conditions[0].reason}' 2>/dev/null | grep -q Unschedulable"
out=$(K get pods -l job-name=big -o jsonpath='{.items[0].status.phase} {.items[0].status.conditions[0].message}')
[ "$out" = "Pending 0/2 nodes are available: 2 Insufficient nvidia.com/gpu." ]
ok $? "a foreign pod holds gpu-a's 4 GPUs: a pod asking 3 stays Pending, Unschedulable" || diag "$out"
K delete pod squatter >/dev/null 2>&1
wait_until 30 pod_phase big Running
ok $? "the foreign pod deleted: the pod is scheduled and runs"
fake_kube_post _fake/node-notready '{"name":"gpu-a"}' >/dev/null
wait_until 30 sh -c "'$KUBECTL' get job big -o jsonpath='{.status.conditions[?(@.type==\"Failed\")].reason}' | grep -q BackoffLimitExceeded"
out=$(K get node gpu-a -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.spec.taints[0].key}')
[ "$out" = "Unknown node.kubernetes.io/unreachable" ]
ok $? "gpu-a NotReady: Ready Unknown + unreachable taint, its pod fails and the Job fails" || diag "$out"
fake_kube_post _fake/node-ready '{"name":"gpu-a"}' >/dev/null
sleep_job victim
wait_until 30 pod_phase victim Running
vp=$(K get pods -l job-name=victim -o jsonpath='{.items[0].metadata.name}')
fake_kube_post _fake/pod-fail "{\"name\":\"$vp\",\"exitCode\":42}" >/dev/null
wait_until 30 sh -c "'$KUBECTL' get pod $vp -o jsonpath='{.status.phase}' | grep -q Failed"
out=$(K get pod "$vp" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
[ "$out" = 42 ]
ok $? "POST /_fake/pod-fail: the pod fails with the exit code asked" || diag "$out"
sleep_job slow 's/"backoffLimit": 0/"activeDeadlineSeconds": 1/'
wait_until 30 sh -c "'$KUBECTL' get job slow -o jsonpath='{.status.conditions[?(@.type==\"Failed\")].reason}' | grep -q DeadlineExceeded"
ok $? "activeDeadlineSeconds: the Job fails with DeadlineExceeded"
K cordon gpu-a >/dev/null 2>&1 && K cordon gpu-b >/dev/null 2>&1
sleep_job fenced
wait_until 30 sh -c "'$KUBECTL' get pods -l job-name=fenced -o jsonpath='{.items[0].status.conditions[0].message}' | grep -q '2 unschedulable'"
ok $? "kubectl cordon (a strategic-merge PATCH): no pod goes to a cordoned node"
K uncordon gpu-b >/dev/null 2>&1
wait_until 30 pod_phase fenced Running &&
    [ "$(K get pods -l job-name=fenced -o jsonpath='{.items[0].spec.nodeName}')" = gpu-b ]
ok $? "uncordoned, the pod runs on that node"
# gpu-a is still cordoned and fenced holds gpu-b's 2 GPUs: the TTL Job
# needs a node free for it.
K uncordon gpu-a >/dev/null 2>&1
sleep_job ttl 's/"backoffLimit": 0/"ttlSecondsAfterFinished": 1/; s/exec sleep 300/true/'
wait_until 90 sh -c "'$KUBECTL' get job ttl 2>&1 | grep -q NotFound" &&
    ls "$FAKE_KUBE_DIR"/logs/default/ttl-*/main.log >/dev/null 2>&1
ok $? "ttlSecondsAfterFinished: a Job that ran is deleted once finished" ||
    diag "$("$KUBECTL" get job ttl -o yaml 2>&1 | tail -15)" "$(ls "$FAKE_KUBE_DIR"/logs/default/ 2>&1)"

# --- the exec credential plugin kubeconfig ---
out=$(KUBECONFIG=$FAKE_KUBE_DIR/kubeconfig-exec "$KUBECTL" get nodes -o name 2>&1 | head -1)
[ "$out" = node/gpu-a ]
ok $? "kubeconfig-exec (an exec credential plugin) authenticates kubectl too" || diag "$out"
out=$(KUBECONFIG=$FAKE_KUBE_DIR/kubeconfig-cert "$KUBECTL" get nodes -o name 2>&1 | head -1)
[ "$out" = node/gpu-a ]
ok $? "kubeconfig-cert (a client certificate the fake's CA signed) authenticates kubectl too" ||
    diag "$out"
out=$(fake_kube_py '[v for v in d["violations"] if v["name"] not in ("bad", "typo", "gpus")]')
[ "$out" = "[]" ]
ok $? "no violations beyond the three invalid objects sent on purpose" || diag "$out"

pids=$(fake_kube_py '" ".join(str(p) for v in d["processes"].values() for p in v)')
fake_kube_stop_all
# A killed process stays a zombie until init reaps it (late on a loaded
# machine): wait for each to be gone or a zombie.
alive() {
    left=
    for p in $pids; do
        kill -0 "$p" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] &&
            left="$left $p"
    done
    [ -n "$left" ]
}
end_s=$(($(date +%s) + 20))
while alive && [ "$(date +%s)" -lt $end_s ]; do sleep 0.2; done
! alive
ok $? "stopping the fake kills its pods' processes" || diag "left:$left"
[ $tap_failed = 0 ]
