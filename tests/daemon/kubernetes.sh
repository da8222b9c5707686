#!/bin/sh
# kubernetes.sh: `spillway serve` with a `backend: kubernetes` pool against
# tests/fake/kube.py (a schema-checked fake API server over HTTPS with its
# own CA and a bearer token, whose kubelet runs each pod's command as a real
# process; no real cluster): the pool's nodes come from the cluster's Nodes;
# a job runs as one batch/v1 Job carrying its launch token, its exit code
# and logs come back; an indexed 2-node gang gets RANK from the completion
# index; cancel deletes the Job; a node NotReady mid-job fails the job over;
# a Kueue-suspended Job runs once admitted; foreign pods holding GPUs are
# counted busy; a restarted daemon adopts by token and creates nothing twice;
# a create answered 409 AlreadyExists adopts the Job carrying its token;
# the state comes from watches (one list, then watch; 410 Gone lists again);
# storm-lib's kill -9 storm on the pool.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 56

K=$T/kube
mkdir -p "$K"
/usr/bin/python3 "$(dirname "$0")/../fake/kube.py" --dir "$K/fake" --url-file "$K/url" \
    --node gpu-a:4:NVIDIA-H100-80GB-HBM3 --node gpu-b:4:NVIDIA-H100-80GB-HBM3 \
    --bookmark-s 1 --start-delay-s 1 >"$K/fake.log" 2>&1 &
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
  wait: never              # never burst: every job runs in the cluster
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
kstate '[ (j["spec"]["template"]["spec"].get("automountServiceAccountToken"), j["spec"]["template"]["spec"]["containers"][0].get("securityContext", {}).get("allowPrivilegeEscalation")) for j in s["objects"]["jobs"] if j["metadata"]["annotations"].get("spillway.dev/job-id") == "'"$a"'"]' >"$K/a.sec"
[ "$(cat "$K/a.sec")" = "[(False, False)]" ]
ok $? "its pod mounts no service-account token and cannot gain privileges: $(cat "$K/a.sec")"
spw ml logs "$a" >"$T/logs.out" 2>&1
grep -Eq "^hello kube gpus=[0-9],[0-9] token=[0-9a-f]+\.$a\.1$" "$T/logs.out"
ok $? "spillway logs shows its output (from pods/log): $(head -1 "$T/logs.out")"

# kjobs JOBID: "NAME TOKEN NODE..." of each Job of that spillway job, by attempt.
kjobs() {
    kstate '"\n".join(sorted("%s %s %s" % (j["metadata"]["name"], j["metadata"]["annotations"]["spillway.dev/token"], ",".join(sorted(p["spec"].get("nodeName") or "-" for p in s["objects"]["pods"] if p["metadata"]["labels"].get("spillway.dev/job-name") == j["metadata"]["name"]))) for j in s["objects"]["jobs"] if j["metadata"]["annotations"].get("spillway.dev/job-id") == "'"$1"'"))'
}
running_pods() { [ "$(kstate 'len([p for p in s["objects"]["pods"] if p["metadata"]["labels"].get("spillway.dev/job-name","").startswith("spw-'"$1"'-") and p["status"].get("phase") == "Running"])')" = "$2" ]; }

# ---- watched, not polled: list once, then watch; 410 Gone -> list again ----
# kcalls PATH WATCH: the GET calls of PATH that were watches (1) or lists (0).
kcalls() { kstate 'len([c for c in s["calls"] if c["method"] == "GET" and c["path"] == "'"$1"'" and ("watch=1" in c["query"]) == bool('"$2"')])'; }
JP=/apis/batch/v1/namespaces/default/jobs
kstate '[c["query"] for c in s["calls"] if c["method"] == "GET" and c["path"] in ("'$JP'", "/api/v1/pods", "/api/v1/nodes") and "watch=1" in c["query"]]' >"$K/watches"
[ "$(kcalls $JP 0)" = 1 ] && [ "$(kcalls /api/v1/pods 0)" = 1 ] &&
    grep -q "allowWatchBookmarks=true&resourceVersion=[0-9]" "$K/watches" &&
    [ "$(kcalls /api/v1/nodes 1)" -ge 1 ] && [ "$(kcalls /api/v1/pods 1)" -ge 1 ]
ok $? "the job's changes were seen through watches (resourceVersion, bookmarks): one list of the Jobs and one of the pods, then watches (Job lists $(kcalls $JP 0), watches $(kcalls $JP 1); pod lists $(kcalls /api/v1/pods 0); node watches $(kcalls /api/v1/nodes 1))"
w=$(submit ml --gpus 1 --name watched -- sh -c 'echo up; sleep 1.5; exit 7')
wait_for "$w" running 30 && wait_until 20 running_pods "$w" 1
kctl compact '{"expire_watches": true}'
wait_for "$w" failed 30 && [ "$(field "$w" 'd["exit_code"]')" = 7 ]
ok $? "after every watch got 410 Gone (a compaction) mid-job, nothing is missed: the job ends failed with exit code 7"
relisted() { [ "$(kcalls $JP 0)" = 2 ] && [ "$(kcalls /api/v1/pods 0)" = 2 ] && [ "$(kcalls /api/v1/nodes 0)" -ge 2 ]; }
wait_until 10 relisted
ok $? "each 410 Gone led to one list again (Jobs $(kcalls $JP 0), pods $(kcalls /api/v1/pods 0), nodes $(kcalls /api/v1/nodes 0) lists in all)"

# ---- an indexed 2-node gang ----------------------------------------------
g=$(submit ml --gpus 8 --gpus-per-node 4 --name gang -- sh -c 'echo rank=$RANK node_rank=$NODE_RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT')
wait_for "$g" succeeded 30
ok $? "a gang of 2 nodes x 4 GPUs succeeds"
kstate '[(j["spec"].get("completionMode"), j["spec"].get("parallelism"), j["spec"].get("completions")) for j in s["objects"]["jobs"] if j["metadata"]["annotations"].get("spillway.dev/job-id") == "'"$g"'"] + [v["spec"]["clusterIP"] for v in s["objects"]["services"] if v["metadata"]["name"].startswith("spw-'"$g"'-")]' >"$K/g.job"
[ "$(cat "$K/g.job")" = "[('Indexed', 2, 2), 'None']" ]
ok $? "as one Indexed Job, parallelism = completions = 2, with a headless Service: $(cat "$K/g.job")"
cat "$T"/state/logs/"$g"/"$g".out "$T"/state/logs/"$g"/"$g".rank1.out >"$T/gang.out" 2>&1
grep -q "^rank=0 node_rank=0 world=2 master=spw-$g-[0-9a-f]*-0\.spw-$g-[0-9a-f]*:29500$" "$T/gang.out" &&
    grep -q "^rank=1 node_rank=1 world=2 master=spw-$g-" "$T/gang.out"
ok $? "each rank's log is kept; RANK and NODE_RANK from the completion index, WORLD_SIZE, MASTER_ADDR:PORT" || diag "$(cat "$T/gang.out"; ls -R "$T/state/logs/$g")"
spw ml logs "$g" --rank 1 >"$T/rank1.out" 2>&1 && grep -q "^rank=1 node_rank=1" "$T/rank1.out" &&
    spw ml logs "$g" --all-ranks >"$T/ranks.out" 2>&1 && grep -q "^\[rank 1\] rank=1" "$T/ranks.out" &&
    grep -q "^\[rank 0\] rank=0" "$T/ranks.out"
ok $? "spillway logs --rank 1 and --all-ranks read every rank of the gang" || diag "$(cat "$T/rank1.out" "$T/ranks.out")"

# ---- cancel ----------------------------------------------------------------
c=$(submit ml --gpus 1 --name cancelme -- sh -c 'echo up; sleep 300')
wait_for "$c" running 30 && wait_until 20 running_pods "$c" 1
ok $? "a job to cancel runs as a pod"
spw ml logs -f "$c" >"$T/follow.out" 2>&1 &
fpid=$!
follow_up() { grep -q "^up$" "$T/follow.out"; }
wait_until 15 follow_up && [ "$(state_of "$c")" = running ]
ok $? "spillway logs -f shows the running Job's output as it comes (pods/log?follow=true): $(cat "$T/follow.out")"
spw ml cancel "$c" >/dev/null 2>&1
wait_for "$c" cancelled 20
ok $? "spillway cancel ends it cancelled"
wait_until 10 sh -c "! kill -0 $fpid 2>/dev/null" && [ "$(grep -c '^up$' "$T/follow.out")" = 1 ]
ok $? "and logs -f ends with the job, its output once: $(tr '\n' ' ' <"$T/follow.out")"
no_job() { [ -z "$(kjobs "$1")" ]; }
wait_until 20 no_job "$c"
ok $? "its Job is deleted (propagationPolicy Background): $(kjobs "$c")"
no_procs_of() { [ "$(kstate 'sum(len(v) for k, v in s["processes"].items() if k.startswith("default/spw-'"$1"'-"))')" = 0 ]; }
wait_until 20 no_procs_of "$c"
ok $? "and its process is gone"

# ---- a cancel is answered after its Job's delete, not before --------------
# The fake now holds each DELETE of a Job 4 s (a slow API server) while its
# kubelet starts a bound pod 3 s after it sees it (wide enough for a loaded
# machine to send the cancel in between).  A cancel sent once the
# Job exists and before its pod starts is answered only once the delete was
# answered: the pod, which starts meanwhile, began before the 200.  (A 200
# given when the delete was merely queued comes before the pod starts, and
# the pod starts after it.)  A try whose pod started before the cancel was
# sent proves nothing and is made again.
kctl config '{"delete_delay_s": 4, "start_delay_s": 3}'
job_made() { [ -n "$(kjobs "$1")" ]; }
late_ok=1
for try in 1 2 3; do
    rm -f "$K/late.start"
    l=$(submit ml --gpus 1 --name late -- sh -c "date +%s%N >$K/late.start; sleep 300") || break
    wait_until 20 job_made "$l" || break
    sent=$(date +%s%N)
    spw ml cancel "$l" >/dev/null 2>&1 || break
    t200=$(date +%s%N)
    wait_for "$l" cancelled 20 && wait_until 20 no_procs_of "$l" || break
    started=$(cat "$K/late.start" 2>/dev/null)
    if [ -n "$started" ]; then
        pod="the pod started at +$(((started - sent) / 1000000)) ms"
    else
        pod="the pod never started"
    fi
    diag "try $try: cancel sent at +0 ms, its 200 at +$(((t200 - sent) / 1000000)) ms; $pod"
    [ -n "$started" ] && [ "$started" -lt "$sent" ] && continue
    [ -z "$started" ] || [ "$started" -lt "$t200" ]
    late_ok=$?
    break
done
ok $late_ok "a cancel sent before its pod started is answered after its Job's delete: the pod did not start after the 200"
kctl config '{"delete_delay_s": 0, "start_delay_s": 1}'

# ---- a node NotReady mid-job -> failover ---------------------------------
f=$(submit ml --gpus 4 --name failover -- sh -c 'echo start $SPILLWAY_ATTEMPT; sleep 300')
wait_for "$f" running 30 && wait_until 20 running_pods "$f" 1
node=$(kjobs "$f" | awk '{print $3}')
[ "$node" = gpu-a ] || [ "$node" = gpu-b ]
ok $? "a 4-GPU job runs on node '$node'"
kctl node-notready "{\"name\": \"$node\", \"evict\": true}"
on_attempt2() { kjobs "$f" | grep -q "\.$f\.2 gpu-"; }
wait_until 40 on_attempt2
ok $? "after $node went NotReady, the job fails over: attempt 2 runs ($(kjobs "$f" | tr '\n' ';'))"
node2=$(kjobs "$f" | grep "\.$f\.2 " | awk '{print $3}')
[ -n "$node2" ] && [ "$node2" != "$node" ]
ok $? "on the other node ($node2)"
kctl node-ready "{\"name\": \"$node\"}"
spw ml cancel "$f" >/dev/null 2>&1
wait_for "$f" cancelled 20

# ---- foreign pods holding GPUs ---------------------------------------------
kctl foreign-pod '{"name": "theirs", "node": "gpu-a", "gpus": 4}'
kctl foreign-pod '{"name": "theirs2", "node": "gpu-b", "gpus": 3}'
held() { grep -q "Kubernetes node k8s/[01]: 4 GPUs held by jobs not submitted" "$DLOG" && grep -q "Kubernetes node k8s/[01]: 3 GPUs held by jobs not submitted" "$DLOG"; }
wait_until 20 held
ok $? "the daemon counts the GPUs that pods spillway did not launch hold: $(grep 'GPUs held by' "$DLOG" | tr '\n' ';')"
busy=$(submit ml --gpus 4 --name wait-for-foreign -- sh -c 'echo ran')
# Nothing to wait on for "still not running": give the loop 3 s to misplace it.
sleep 3
[ "$(state_of "$busy")" = queued ]
ok $? "with 7 of 8 GPUs held by them, a 4-GPU job waits: $(state_of "$busy")"
curl -sk -X DELETE "$KURL/api/v1/namespaces/default/pods/theirs" -H "Authorization: Bearer $(cat "$K/fake/token")" >/dev/null
wait_for "$busy" succeeded 30
ok $? "once the foreign pod is gone it runs"

# ---- kill -9 of the daemon: adopted by token, nothing created twice -------
r=$(submit ml --gpus 1 --name survivor -- sh -c 'echo alive; sleep 4; echo done; exit 5')
wait_for "$r" running 30 && wait_until 20 running_pods "$r" 1
ok $? "a job runs before the daemon is killed"
posts() { kstate 'len([c for c in s["calls"] if c["method"] == "POST" and c["path"].endswith("/jobs") and c["status"] == 201])'; }
before=$(posts)
kill9_daemon
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon restarts after kill -9"
wait_for "$r" failed 30
ok $? "it adopted the running Job by its token and saw it end"
[ "$(field "$r" 'd["exit_code"]')" = 5 ] && [ "$(kjobs "$r" | wc -l)" = 1 ]
ok $? "with its exit code 5, from the one Job of attempt 1 ($(kjobs "$r" | tr '\n' ';'))"
[ "$(posts)" = "$before" ]
ok $? "no Job was created again after the restart (creates: $before, then $(posts))"
spw ml logs "$r" 2>/dev/null | tr '\n' ' ' | grep -q "^alive done $"
ok $? "its log is whole: $(spw ml logs "$r" 2>&1 | tr '\n' ' ')"

# ---- a create answered 409 AlreadyExists adopts the Job, never twice ------
# The Job the next launch will create, made first (as a create whose answer
# was lost would have): same name (from the token), same token.
did=$(kjobs "$r" | awk '{print $2}' | cut -d. -f1)
next=$(echo "$r" | awk -F- '{ printf "j-%06d", $2 + 1 }')   # the id the next submit gets
python3 - "$did.$next.1" "$next" >"$K/pre.json" <<'PY'
import json, sys
tok, jid = sys.argv[1], sys.argv[2]
h = 14695981039346656037
for b in tok.encode():
    h = ((h ^ b) * 1099511628211) & (2**64 - 1)
name = "spw-%s-%010x" % (jid, h & 0xffffffffff)
meta = {"name": name, "labels": {"spillway.dev/daemon": tok.split(".")[0]},
        "annotations": {"spillway.dev/token": tok, "spillway.dev/job-id": jid}}
pod = {"metadata": {"labels": {"spillway.dev/job-name": name}, "annotations": meta["annotations"]},
       "spec": {"restartPolicy": "Never", "containers": [{"name": "job", "image": "busybox:1.36",
                "command": ["/bin/sh", "-c", "echo made-before; exit 4"]}]}}
print(json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                  "spec": {"backoffLimit": 0, "template": pod}}))
PY
curl -sk -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$K/fake/token")" \
    -H 'Content-Type: application/json' --data @"$K/pre.json" \
    "$KURL/apis/batch/v1/namespaces/default/jobs" >"$K/pre.code"
p=$(submit ml --gpus 1 --name second-create -- sh -c 'echo would-run-twice')
[ "$p" = "$next" ] && [ "$(cat "$K/pre.code")" = 201 ]
ok $? "a Job carrying the next launch's name and token exists ($(cat "$K/pre.code")), the job is $p"
wait_for "$p" failed 30
conflicts() { kstate 'len([c for c in s["calls"] if c["method"] == "POST" and c["path"].endswith("/jobs") and c["status"] == 409])'; }
[ "$(field "$p" 'd["exit_code"]')" = 4 ] && [ "$(conflicts)" = 1 ] && [ "$(kjobs "$p" | wc -l)" = 1 ]
ok $? "its create got 409 AlreadyExists and adopted that Job: exit code 4, one Job ($(conflicts) conflict)"
spw ml logs "$p" 2>/dev/null | grep -q "^made-before$"
ok $? "the log is that Job's; the job's own command never ran: $(spw ml logs "$p" 2>&1 | tr '\n' ' ')"

# ---- Kueue: a suspended Job runs once admitted ----------------------------
stop_daemon
sed -i 's/^    image: busybox:1.36$/    image: busybox:1.36\n    local_queue: team-q/' "$T/serve.yaml"
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon restarts with local_queue team-q"
q=$(submit ml --gpus 1 --name kueued -- sh -c 'echo admitted')
has_wl() { [ "$(kstate 'len([w for w in s["objects"]["workloads"] if w["metadata"]["ownerReferences"][0]["name"].startswith("spw-'"$q"'-")])')" = 1 ]; }
wait_until 20 has_wl
ok $? "its Job is created suspended with kueue.x-k8s.io/queue-name: Kueue made a Workload"
kstate '[(j["spec"].get("suspend"), j["metadata"]["labels"].get("kueue.x-k8s.io/queue-name")) for j in s["objects"]["jobs"] if j["metadata"]["name"].startswith("spw-'"$q"'-")]' >"$K/q.job"
sleep 2
[ "$(state_of "$q")" = placed ] && [ "$(cat "$K/q.job")" = "[(True, 'team-q')]" ]
ok $? "not admitted, spillway does not count it running: $(state_of "$q") $(cat "$K/q.job")"
kctl admit "{\"job\": \"$(kjobs "$q" | awk '{print $1}')\"}"
wait_for "$q" succeeded 30
ok $? "admitted by Kueue (unsuspended), it runs and succeeds"
kstate 's["violations"]' >"$K/viol"
[ "$(cat "$K/viol")" = "[]" ]
ok $? "every object spillway sent passed the fake's schema checks: $(cat "$K/viol")"

# ---- the kill -9 storm of storm-lib on the Kubernetes pool ---------------
# A fresh state (the storm judges every job of it), no Kueue, no foreign pod.
stop_daemon
curl -sk -X DELETE "$KURL/api/v1/namespaces/default/pods/theirs2" -H "Authorization: Bearer $(cat "$K/fake/token")" >/dev/null
sed -i '/^    local_queue: team-q$/d' "$T/serve.yaml"
mv "$T/state" "$T/state.before-storm"
storm_t0=$(date +%s)
STORM_ROUNDS=3 STORM_JOBS=6 STORM_WHAT="a kubernetes pool" STORM_GPU_VAR=NVIDIA_VISIBLE_DEVICES STORM_HOSTS='gpu-[ab]'
# shellcheck source=tests/daemon/storm-lib
. "$(dirname "$0")/storm-lib"
diag "the storm took $(($(date +%s) - storm_t0)) s"
# A cancel acknowledged just before a kill -9 is not lost (the storm's
# canceller may find no job still running to cancel).
x=$(submit ml --gpus 1 --name cancel-then-kill -- sh -c 'echo up; sleep 300')
wait_for "$x" running 30 && wait_until 20 running_pods "$x" 1
spw ml cancel "$x" >"$T/x.cancel" 2>&1
xc=$?
kill9_daemon
start_daemon "$T/serve.yaml" "$T/state"
wait_for "$x" cancelled 30 && wait_until 20 no_job "$x" && wait_until 20 no_procs_of "$x"
ok $? "a cancel acknowledged ($xc) just before kill -9 is done after the restart: cancelled, its Job and process gone"
kstate 's["violations"]' >"$K/viol"
[ "$(cat "$K/viol")" = "[]" ]
ok $? "nothing sent during the storm broke the schemas: $(cat "$K/viol")"

done_testing
