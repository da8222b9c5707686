#!/bin/sh
# retention.sh: jobs cannot fill the daemon's memory.  Ended jobs leave it
# daemon.job_retention_s (30 s here) after their end and are served from
# the database after that, the same as before: 200 jobs submitted and
# cancelled by team ml while team cv's job holds the only GPU, then a job
# that succeeds, one that fails and one that runs in the emulated cloud
# (2 GPUs: it never fits on-prem).  While they are all in memory the test
# takes a snapshot of what a user can ask (GET /v1/jobs/ID, the job lists
# with their filters and pages, `queue -o json`, `explain`, `logs`, `costs
# -o json` as admin and as a team, the /metrics job counts and spend); the
# gauge spillway_jobs_in_memory then falls to 0 by itself, and every answer
# is the same as in the snapshot, after the eviction and again after a
# SIGTERM restart that does not load them (the gauge stays 0, the log says
# how many stayed in the database) and a kill -9 one.  A job submitted
# after that is in memory while the old ones are not.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 24

NBULK=200
RET=30
mkconfig "$T/r.yaml" 1 constant:3600
echo "  job_retention_s: $RET" >>"$T/r.yaml"
start_daemon "$T/r.yaml" "$T/state"
ok $? "serve starts with daemon.job_retention_s: $RET"

# in_memory: the spillway_jobs_in_memory gauge of /metrics.
in_memory() {
    curl -s -m 5 "$URL/metrics" | sed -n 's/^spillway_jobs_in_memory //p'
}
# in_memory_is N: the gauge says N.
in_memory_is() { [ "$(in_memory)" = "$1" ]; }

blocker=$(submit cv --gpus 1 --name blocker -- sleep 300)
wait_for "$blocker" running 30 cv
ok $? "team cv's job holds the only GPU ($blocker)"

# ---- many submits and cancels --------------------------------------------
python3 - "$URL" "$ML_TOKEN" "$NBULK" >"$T/bulk.ids" 2>"$T/bulk.err" <<'EOF'
import http.client, json, sys, urllib.parse
url, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
u = urllib.parse.urlsplit(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
for i in range(n):
    c.request("POST", "/v1/jobs", json.dumps({"run": ["sleep", "300"], "gpus": 1, "name": "b-%d" % i}), h)
    r = c.getresponse()
    body = r.read()
    assert r.status == 201, (r.status, body)
    jid = json.loads(body)["id"]
    c.request("POST", "/v1/jobs/%s/cancel" % jid, "{}", h)
    r = c.getresponse()
    body = r.read()
    assert r.status == 200, (r.status, body)
    print(jid)
EOF
[ "$(wc -l <"$T/bulk.ids")" -eq "$NBULK" ]
ok $? "$NBULK jobs of team ml submitted and cancelled over one connection" || diag "$(cat "$T/bulk.err")"
first=$(head -1 "$T/bulk.ids")
last=$(tail -1 "$T/bulk.ids")
spw cv cancel "$blocker" >/dev/null 2>&1 && wait_for "$blocker" cancelled 10 cv
ok $? "team cv's job is cancelled"
good=$(submit ml --gpus 1 --name good -- sh -c 'echo out-of-good; echo err-of-good >&2; sleep 0.3')
bad=$(submit ml --gpus 1 --name bad -- sh -c 'echo out-of-bad; exit 3')
cl=$(submit ml --gpus 2 --name cloudy -- sh -c 'echo in-the-cloud; sleep 0.3')
wait_for "$good" succeeded 10 && wait_for "$bad" failed 10 && wait_for "$cl" succeeded 20
ok $? "then one job succeeds ($good), one fails ($bad) and one succeeds in the cloud ($cl)"
# no_instances: the cloud's instances are released (their bill has stopped)
no_instances() { ! curl -s -m 5 "$URL/metrics" | grep -q '^spillway_cloud_instances{'; }
wait_until 20 no_instances
ok $? "its idle instances are released"
total=$((NBULK + 4))

# snap TAG: what a user can ask about those jobs, into $T/TAG.*.
snap() {
    for id in "$first" "$last" "$blocker" "$good" "$bad" "$cl"; do
        http GET "/v1/jobs/$id" admin
        echo "$code" >"$T/$1.job.$id.code"
        cp "$T/http.body" "$T/$1.job.$id.json"
    done
    http GET "/v1/jobs?limit=10000" admin
    cp "$T/http.body" "$T/$1.list.json"
    http GET "/v1/jobs?team=ml&state=cancelled&limit=37&after=5" ml
    cp "$T/http.body" "$T/$1.page.json"
    spw admin queue --all -o json >"$T/$1.queue-all.json" 2>&1
    spw ml queue --state failed -o json >"$T/$1.queue-failed.json" 2>&1
    spw cv queue --all -o json >"$T/$1.queue-cv.json" 2>&1
    spw ml explain "$good" -o json >"$T/$1.explain.json" 2>&1
    spw ml logs "$good" >"$T/$1.logs.out" 2>&1
    spw ml logs --stderr "$good" >"$T/$1.logs.err" 2>&1
    spw admin costs -o json >"$T/$1.costs.json" 2>&1
    spw ml costs -o json >"$T/$1.costs-ml.json" 2>&1
    curl -s -m 5 "$URL/metrics" |
        grep -e '^spillway_jobs{' -e '^spillway_spend_usd_total' -e '^spillway_restarts_total' \
            -e '^spillway_preemptions_total' >"$T/$1.metrics"
}

# same TAG: the answers of snapshot TAG are those of snapshot "in"; the
# differences on stdout.
same() {
    rc=0
    for f in "$T"/in.*; do
        g=$T/$1.${f#"$T"/in.}
        case $f in
        *.costs.json | *.costs-ml.json)
            same_costs "$f" "$g" || rc=1 ;;
        *.explain.json)
            # The clock moves: now_ts, and where each candidate would start.
            python3 - "$f" "$g" <<'EOF' || rc=1
import json, sys
def norm(p):
    d = json.load(open(p))
    d.pop("now_ts", None)
    for c in d.get("candidates") or []:
        c.pop("est_start_ts", None)
    return d
a, b = (norm(p) for p in sys.argv[1:])
if a != b:
    print("explain: %r before, %r after" % (a, b))
    sys.exit(1)
EOF
            ;;
        *)
            cmp -s "$f" "$g" || {
                echo "${f#"$T"/in.} differs:"
                diff "$f" "$g" | head -8
                rc=1
            } ;;
        esac
    done
    return $rc
}

[ "$(in_memory)" -eq "$total" ] 2>/dev/null
ok $? "spillway_jobs_in_memory counts all $total jobs while they are in the window"
snap in
[ "$(in_memory)" -eq "$total" ] 2>/dev/null
ok $? "... still all of them once the snapshot is taken ($(in_memory))"
json_check "$T/in.queue-all.json" "assert len(d['jobs']) == $total, len(d['jobs'])"
ok $? "queue --all lists the $total jobs"
[ "$(cat "$T/in.job.$good.code")" = 200 ] && grep -q out-of-good "$T/in.logs.out" &&
    grep -q err-of-good "$T/in.logs.err" &&
    json_check "$T/in.costs-ml.json" 'ml = [t for t in d["teams"] if t["team"] == "ml"][0]
assert ml["onprem_gpu_h"] > 0 and ml["cloud_usd"] > 0, d["teams"]' &&
    json_check "$T/in.job.$cl.json" 'assert d["where"] == "cloud" and len(d["instances"]) == 2, d'
ok $? "the snapshot has the jobs, the logs, team ml's GPU-hours and cloud spend, the cloud job's 2 instances"

# ---- they leave memory -----------------------------------------------------
t0=$(now_ms)
wait_until $((RET + 30)) in_memory_is 0
ok $? "within $(($(now_ms) - t0)) ms the gauge falls to 0 by itself (it was $total)" ||
    diag "spillway_jobs_in_memory: $(in_memory)"
snap out
same out >"$T/out.diff"
ok $? "every answer is the same once they left memory (jobs, lists, queue, explain, logs, costs, metrics)" ||
    diag "$(head -40 "$T/out.diff")"
http POST "/v1/jobs/$last/cancel" ml
http_is 409 "has already ended" "cancel of a job out of memory: 409, it has ended"
http GET "/v1/jobs/$blocker" ml
http_is 404 "no job $blocker" "team ml still cannot see team cv's job out of memory (404)"
http GET "/v1/jobs/j-999999" admin
http_is 404 "no job j-999999" "a job that never was is still 404"
http GET "/v1/jobs?state=nonesuch" admin
http_is 400 "must be one of" "a bad state filter is still 400"

# ---- restarts do not load them -------------------------------------------
stop_daemon "$DPID"
start_daemon "$T/r.yaml" "$T/state"
ok $? "the daemon restarts (SIGTERM) on the same state dir"
grep -q "$total ended more than daemon.job_retention_s ago stay in the database" "$DLOG"
ok $? "it says it left the $total ended jobs in the database" || diag "$(grep recovered "$DLOG")"
in_memory_is 0
ok $? "and holds none of them in memory ($(in_memory))"
snap restart
same restart >"$T/restart.diff"
ok $? "every answer is the same after the restart" || diag "$(head -40 "$T/restart.diff")"
kill9_daemon "$DPID"
start_daemon "$T/r.yaml" "$T/state"
snap kill9
same kill9 >"$T/kill9.diff" && in_memory_is 0
ok $? "and after a kill -9 restart (none in memory: $(in_memory))" || diag "$(head -40 "$T/kill9.diff")"

# ---- live jobs stay ------------------------------------------------------------
live=$(submit ml --gpus 1 --name live -- sleep 300)
wait_for "$live" running 10 && in_memory_is 1
ok $? "a new job runs and is the one job in memory ($live)"
spw ml cancel "$live" >/dev/null 2>&1 && wait_for "$live" cancelled 10
ok $? "it is cancelled"
stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
