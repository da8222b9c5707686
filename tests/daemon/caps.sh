#!/bin/sh
# caps.sh: where governance lets jobs run, in the live daemon.
# (a) Residency: with on-prem full and `wait: none`, a job of class
#     restricted (residency: on-prem only) stays queued and never goes to the
#     cloud, while a job of another class bursts; explain names the
#     residency.  Unknown residencies and datasets are refused at submit.
# (b) The organisation's max_cloud_gpus holds while 10 jobs burst at once:
#     polling every 0.2 s, never more than 3 cloud GPUs are bound to jobs;
#     the held ones run as the others end, and all succeed.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 18

# post NAME BODY: POST /v1/jobs as ml; the job id on stdout.
post() {
    printf '%s' "$2" >"$T/$1.json"
    http POST /v1/jobs ml "$T/$1.json"
    [ "$code" = 201 ] || { diag "POST $1: $code $(cat "$T/http.body")"; return 1; }
    sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$T/http.body"
}

# ---- (a) residency ---------------------------------------------------------
mkconfig "$T/res.yaml" 1 none
cat >>"$T/res.yaml" <<EOF
residency:
  restricted: {onprem: true}
EOF
start_daemon "$T/res.yaml" "$T/state-res"
ok $? "spillway serve starts with residency restricted (on-prem only), wait none"

hog=$(submit ml --gpus 1 --name hog -- sleep 300)
wait_for "$hog" running 5 && [ "$(field "$hog" 'd["where"]')" = onprem ]
ok $? "a hog fills the one on-prem GPU"

rid=$(post restricted '{"run": ["sleep", "1"], "gpus": 1, "class": "restricted", "name": "restricted"}')
xid=$(post residency '{"run": ["sleep", "1"], "gpus": 1, "residency": "restricted", "name": "by-residency"}')
bid=$(post batch '{"run": ["sleep", "1"], "gpus": 1, "class": "batch", "name": "batch"}')
[ -n "$rid" ] && [ -n "$xid" ] && [ -n "$bid" ]
ok $? "jobs of class restricted, of residency restricted and of class batch are accepted"

wait_for "$bid" succeeded 10 && [ "$(field "$bid" 'd["where"]')" = cloud ]
ok $? "the batch job bursts to the cloud and succeeds"
sleep 0.5
[ "$(state_of "$rid")" = queued ] && [ "$(field "$rid" 'd["where"]')" = null ] &&
    [ "$(state_of "$xid")" = queued ] && [ "$(field "$xid" 'd["where"]')" = null ]
ok $? "the restricted ones stay queued, on-prem full and wait none notwithstanding"
spw ml explain "$rid" -o json >"$T/rex.json"
json_check "$T/rex.json" '
c = [c for c in d["candidates"] if c["kind"] == "cloud"]
assert c and all(not x["ok"] and "residency" in x["why"] for x in c), c'
ok $? "explain: every cloud offer is excluded by its residency" || diag "$(cat "$T/rex.json")"

printf '{"run": ["true"], "gpus": 1, "residency": "mars"}' >"$T/mars.json"
http POST /v1/jobs ml "$T/mars.json"
http_is 400 "restricted" "an unknown residency: 400 naming the ones there are"
printf '{"run": ["true"], "gpus": 1, "data": "imagenet"}' >"$T/data.json"
http POST /v1/jobs ml "$T/data.json"
http_is 400 "'data'" "an unknown dataset: 400 naming the field"

spw ml cancel "$hog" >/dev/null 2>&1
wait_for "$rid" succeeded 10 && wait_for "$xid" succeeded 10 &&
    [ "$(field "$rid" 'd["where"]')" = onprem ] && [ "$(field "$xid" 'd["where"]')" = onprem ]
ok $? "once the hog is cancelled both run on-prem and succeed"
stop_daemon "$DPID"
no_strays "no job process is left"

# ---- (b) max_cloud_gpus under concurrent bursts ---------------------------
mkconfig "$T/caps.yaml" 1 none
cat >>"$T/caps.yaml" <<EOF
caps:
  max_cloud_gpus: 3
EOF
start_daemon "$T/caps.yaml" "$T/state-caps"
ok $? "spillway serve starts with the organisation's max_cloud_gpus: 3"
hog=$(submit ml --gpus 1 --name hog -- sleep 300)
wait_for "$hog" running 5
ok $? "a hog fills the one on-prem GPU"

: >"$T/pools"
: >"$T/costs"
(
    while [ ! -f "$T/poll.stop" ]; do
        curl -s -m 2 -H "Authorization: Bearer $ADMIN_TOKEN" "$URL/v1/pools" >>"$T/pools" 2>/dev/null
        curl -s -m 2 -H "Authorization: Bearer $ADMIN_TOKEN" "$URL/v1/costs" >>"$T/costs" 2>/dev/null
        sleep 0.2
    done
) </dev/null >/dev/null 2>&1 &
poller=$!
XPIDS="$XPIDS $poller"

pids=
for i in $(seq 1 10); do
    printf '{"run": ["sleep", "2"], "gpus": 1, "name": "c-%s"}' "$i" >"$T/c.$i.json"
    curl -s -m 10 -o "$T/c.$i.out" -w '%{http_code}' -H "Authorization: Bearer $CV_TOKEN" \
        -H "Content-Type: application/json" --data-binary "@$T/c.$i.json" "$URL/v1/jobs" >"$T/c.$i.code" &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
n=0
for i in $(seq 1 10); do [ "$(cat "$T/c.$i.code")" = 201 ] && n=$((n + 1)); done
[ "$n" = 10 ]
ok $? "10 jobs submitted at once are accepted"

all_done() {
    spw cv queue --all -o json >"$T/cq.json" 2>/dev/null &&
        [ "$(jpy "$T/cq.json" 'sum(j["state"] == "succeeded" for j in d["jobs"])')" = 10 ]
}
wait_until 45 all_done
ok $? "all 10 succeed, in the cloud" ||
    diag "$(jpy "$T/cq.json" '[(j["id"], j["state"], j["reason"]) for j in d["jobs"]]')"
json_check "$T/cq.json" '
assert all(j["where"] == "cloud" for j in d["jobs"]), [j["where"] for j in d["jobs"]]
assert sum(j["held"] > 0 for j in d["jobs"]) >= 1, "none was ever held"'
ok $? "the cap held some of them for a while"

touch "$T/poll.stop"
wait "$poller" 2>/dev/null
python3 - "$T/pools" "$T/costs" >"$T/capped" 2>&1 <<'EOF'
import json, sys
top_bound, top_org, n = 0, 0, 0
for line in open(sys.argv[1]):
    if line.startswith("{"):
        d = json.loads(line)
        bound = sum(1 for i in d["instances"] if i["job_id"] and i["state"] in ("booting", "ready"))
        assert bound <= 3, "%d instances bound to jobs" % bound
        top_bound = max(top_bound, bound)
        n += 1
for line in open(sys.argv[2]):
    if line.startswith("{"):
        o = json.loads(line)["org"]
        assert o["max_cloud_gpus"] == 3, o
        assert o["cloud_gpus"] <= 3, o
        top_org = max(top_org, o["cloud_gpus"])
assert n >= 10, "only %d polls" % n
assert top_bound == 3 and top_org == 3, (top_bound, top_org)
print("%d polls; at most %d cloud GPUs bound to jobs (the ledger: %g)" % (n, top_bound, top_org))
EOF
ok $? "polled every 0.2 s: never more than 3 cloud GPUs bound to jobs, and 3 at the peak" ||
    diag "$(cat "$T/capped")"
diag "$(cat "$T/capped")"

spw ml cancel "$hog" >/dev/null 2>&1
wait_for "$hog" cancelled 5
ok $? "the hog is cancelled"
stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
