#!/bin/sh
# restart.sh: kill -9 of the daemon loses nothing and duplicates nothing.
# (a) A loop submits 200 jobs one by one with curl, noting every id
#     acknowledged with 201; the daemon is killed -9 at a random moment and
#     restarted on the same state dir while the loop goes on.  Every
#     acknowledged id is there exactly once, ids are never reused, and at
#     most the one request in flight at the kill was committed unanswered.
# (b) Running jobs survive: after kill -9 and a restart they are
#     re-adopted (same pid), keep running and end as succeeded, exit code 0.
# (c) Queued jobs stay queued with their original submit_ts and seq.
# (d) Every ledger figure survives a restart: `costs -o json` is the same
#     before and after a SIGTERM restart and a kill -9 restart (GPU-hours
#     per team and per pool included), but for the clock and the owned
#     capacity's idle part, which grows with it.
# (e) The dashboard's time series survives a kill -9 (GET /v1/ui/series).
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 27

mkconfig "$T/serve.yaml" 8 never
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts (1 node x 8 slots)"

# ---- (a) submissions across a kill -9 ------------------------------------
echo "$URL" >"$T/url"
: >"$T/acked"
: >"$T/unacked"
(
    n=0
    while [ $n -lt 200 ]; do
        url=$(cat "$T/url")
        rm -f "$T/sub.body"
        code=$(curl -s -m 5 -o "$T/sub.body" -w '%{http_code}' -H "Authorization: Bearer $ML_TOKEN" \
            -H "Content-Type: application/json" --data-binary "{\"run\": [\"true\"], \"gpus\": 1, \"name\": \"n-$n\"}" "$url/v1/jobs")
        id=$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$T/sub.body" 2>/dev/null)
        if [ "$code" = 201 ] && [ -n "$id" ]; then
            echo "$id" >>"$T/acked"
            n=$((n + 1))
        else
            echo "n-$n $code" >>"$T/unacked"
            sleep 0.05
        fi
    done
    echo finished >"$T/loop.done"
) </dev/null >/dev/null 2>&1 &
loop=$!
t_loop=$(now_ms)
XPIDS="$XPIDS $loop"

r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
at=$((20 + r % 140))
n_acked() { wc -l <"$T/acked"; }
wait_growing 20 "$at" n_acked
ok $? "the loop got $at submissions acknowledged"
kill9_daemon "$DPID"
n_kill=$(wc -l <"$T/acked")
diag "killed -9 after $n_kill acknowledged submissions"
sleep 0.3
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon restarts on the same state dir" || diag "$(cat "$DLOG")"
echo "$URL" >"$T/url.new" && mv "$T/url.new" "$T/url"
grep -q "recovered" "$DLOG"
ok $? "it reports what it recovered: $(sed -n 's/^spillway: \(recovered.*\)/\1/p' "$DLOG")"

# The loop's pace is the machine's (a curl and a durable commit per job):
# waited on while it makes progress, not against a fixed deadline.
wait_growing 40 200 n_acked && wait_until 10 sh -c "[ -f '$T/loop.done' ]"
ok $? "the loop finished its 200 acknowledged submissions ($(wc -l <"$T/unacked") refused or unanswered)" ||
    diag "acked $(wc -l <"$T/acked"); last unacked: $(tail -3 "$T/unacked")"
wait "$loop" 2>/dev/null
diag "submissions took $(($(now_ms) - t_loop)) ms"

all_ended() {
    spw ml queue -o json >"$T/live.json" 2>/dev/null &&
        [ "$(jpy "$T/live.json" 'len(d["jobs"])')" = 0 ]
}
wait_until 20 all_ended
ok $? "every job reaches an end state" || diag "$(jpy "$T/live.json" '[(j["id"], j["state"]) for j in d["jobs"]][:10]')"

spw ml queue --all -o json >"$T/all.json"
python3 - "$T/all.json" "$T/acked" "$T/unacked" >"$T/dup-check" 2>&1 <<'EOF'
import collections, json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
acked = open(sys.argv[2]).read().split()
unacked = [l.split()[0] for l in open(sys.argv[3]) if l.strip()]
ids = collections.Counter(j["id"] for j in jobs)
seqs = collections.Counter(j["seq"] for j in jobs)
errs = []
if len(acked) != 200:
    errs.append("ACKED %d acknowledged, not 200" % len(acked))
dup_acked = [i for i, c in collections.Counter(acked).items() if c > 1]
if dup_acked:
    errs.append("REUSED ids acknowledged twice: %s" % dup_acked)
missing = [i for i in acked if ids[i] == 0]
if missing:
    errs.append("LOST acknowledged ids missing from the queue: %s" % missing)
dups = [i for i, c in ids.items() if c > 1] + ["seq %d" % s for s, c in seqs.items() if c > 1]
if dups:
    errs.append("DUP listed more than once: %s" % dups)
extra = [j for j in jobs if j["id"] not in set(acked)]
if len(extra) > 1:
    errs.append("EXTRA %d unacknowledged jobs committed: %s" % (len(extra), [(j["id"], j["name"]) for j in extra]))
for j in extra:
    print("note: unacknowledged but committed: %s %s (in flight at the kill)" % (j["id"], j["name"]))
    if j["name"] not in unacked:
        errs.append("EXTRA %s named %s, which no failed attempt used" % (j["id"], j["name"]))
names = collections.Counter(j["name"] for j in jobs)
if sorted(set(names)) != sorted("n-%d" % i for i in range(200)):
    errs.append("NAMES not n-0..n-199")
failed = [j for j in jobs if j["state"] != "succeeded"]
print("jobs %d, acknowledged %d, unacknowledged committed %d, not succeeded %d" %
      (len(jobs), len(acked), len(extra), len(failed)))
for j in failed[:5]:
    print("FAILED %s %s: %s" % (j["id"], j["state"], j["reason"]))
print("\n".join(errs) if errs else "OK")
EOF
diag "$(grep -v '^FAILED' "$T/dup-check")"
! grep -qE '^(LOST|ACKED)' "$T/dup-check"
ok $? "every acknowledged id is in \`queue --all -o json\`"
! grep -qE '^(DUP|REUSED)' "$T/dup-check"
ok $? "no id is listed twice and none was handed out twice"
! grep -qE '^(EXTRA|NAMES)' "$T/dup-check"
ok $? "total = acknowledged + at most the 1 request in flight at the kill"
nf=$(grep -c '^FAILED' "$T/dup-check")
[ "$nf" -eq 0 ] && st=0 || st=1
# The shim records each job's exit (STATE/run/TOKEN.exit), so a job that
# ended while the daemon was down ends with its real exit status.
ok "$st" "every job succeeded, also those that ended while the daemon was down" ||
    diag "$(grep '^FAILED' "$T/dup-check")"

# ---- (b) running jobs survive, (c) queued jobs stay -----------------------
r1=$(submit ml --gpus 4 --name adopt-1 -- sleep 6.1)
r2=$(submit ml --gpus 4 --name adopt-2 -- sleep 6.2)
q1=$(submit ml --gpus 8 --name queued-1 -- true)
q2=$(submit ml --gpus 8 --name queued-2 -- true)
two_up() { [ -n "$(procs_with 'sleep 6.1')" ] && [ -n "$(procs_with 'sleep 6.2')" ]; }
wait_for "$r1" running 5 && wait_for "$r2" running 5 && wait_until 5 two_up &&
    [ "$(state_of "$q1")" = queued ] && [ "$(state_of "$q2")" = queued ]
ok $? "two 4-GPU jobs run ($r1 $r2), two 8-GPU jobs wait ($q1 $q2)"
# The daemon tracks a job by its process group leader: the job's process,
# or a shim of spillway's that is its parent.
s1=$(procs_with 'sleep 6.1')
s2=$(procs_with 'sleep 6.2')
p1=$(pgid_of "$s1")
p2=$(pgid_of "$s2")
show_json "$q1" "$T/q1.before.json"
show_json "$q2" "$T/q2.before.json"
show_json "$r1" "$T/r1.before.json"

# logs -f follows q1 (queued until r1 and r2 end) across the kill; the
# daemon comes back on its port.
spw ml logs -f "$q1" >"$T/r1.follow" 2>"$T/r1.follow.err" &
lpid=$!
XPIDS="$XPIDS $lpid"
LISTEN_PORT=${URL##*:}
# logs -f retries only once it has reached the daemon: the kill comes after
# its connection is up (its client process holds one to the port).
following() { ss -Htnp state established "( dport = :$LISTEN_PORT )" 2>/dev/null | grep -q "pid=[0-9]*," &&
    [ -n "$(ss -Htnp state established "( dport = :$LISTEN_PORT )" | grep -o "pid=[0-9]*" |
        sed 's/pid=//' | while read -r p; do [ "$(ps -o ppid= -p "$p" | tr -d ' ')" = "$lpid" ] ||
        [ "$p" = "$lpid" ] && echo "$p"; done)" ]; }
wait_until 10 following || diag "logs -f did not connect: $(cat "$T/r1.follow.err")"
kill9_daemon "$DPID"
t_kill=$(now_ms)
sleep 0.5
start_daemon "$T/serve.yaml" "$T/state"
ok $? "after another kill -9 the daemon restarts (on the same port, $LISTEN_PORT)"
LISTEN_PORT=
diag "restarted $(($(now_ms) - t_kill)) ms after the kill"
kill -0 "$lpid" 2>/dev/null && contains "$T/r1.follow.err" "is not answering"
ok $? "logs -f of a queued job is still there after the daemon's restart, and said it was retrying"
grep -q "job $r1: re-adopted its process $p1\$" "$DLOG" && grep -q "job $r2: re-adopted its process $p2\$" "$DLOG"
ok $? "it re-adopts both running jobs, by the pids they had ($p1, $p2)" || diag "$(cat "$DLOG")"
[ "$(state_of "$r1")" = running ] && [ "$(state_of "$r2")" = running ] &&
    [ "$(procs_with 'sleep 6.1')" = "$s1" ] && [ "$(procs_with 'sleep 6.2')" = "$s2" ]
ok $? "they are still running, the same processes"
show_json "$r1" "$T/r1.after.json"
python3 - "$T/r1.before.json" "$T/r1.after.json" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for k in ("start_ts", "placed_ts", "gpus_assigned", "placement", "attempts"):
    assert a[k] == b[k], "%s: %r before, %r after" % (k, a[k], b[k])
EOF
ok $? "a re-adopted job keeps its start time, GPUs, placement and attempt count"

bad=0
for q in $q1 $q2; do
    show_json "$q" "$T/$q.after.json"
    python3 - "$T/$q.after.json" "$T/${q}" "$q1" "$T/q1.before.json" "$T/q2.before.json" <<'EOF' || bad=1
import json, sys
b = json.load(open(sys.argv[1]))
a = json.load(open(sys.argv[4] if b["id"] == sys.argv[3] else sys.argv[5]))
assert b["state"] == "queued", "%s: %s" % (b["id"], b["state"])
assert abs(b["submit_ts"] - a["submit_ts"]) < 1e-6, "submit_ts %r before, %r after" % (a["submit_ts"], b["submit_ts"])
assert b["seq"] == a["seq"], (a["seq"], b["seq"])
EOF
done
ok "$bad" "the queued jobs are still queued, with their original submit_ts and seq"

wait_for "$r1" succeeded 12 && wait_for "$r2" succeeded 5
st=$?
show_json "$r1" "$T/r1.end.json"
show_json "$r2" "$T/r2.end.json"
ok "$st" "the re-adopted jobs end as succeeded" || for r in $r1 $r2; do
    diag "$r: $(state_of "$r"): $(field "$r" 'd["reason"]')"
done
json_check "$T/r1.end.json" 'assert d["exit_code"] == 0, d["exit_code"]' &&
    json_check "$T/r2.end.json" 'assert d["exit_code"] == 0, d["exit_code"]'
ok $? "... with exit_code 0"
wait_for "$q1" succeeded 8 && wait_for "$q2" succeeded 8
ok $? "then the queued jobs run and succeed"
wait_until 5 eval '! kill -0 "$lpid" 2>/dev/null'
wait "$lpid"
lrc=$?
[ "$lrc" -eq 0 ]
ok $? "the logs -f that outlived the restart ends with its job, status 0 (status $lrc)" ||
    diag "$(cat "$T/r1.follow.err")"
[ "$(($(now_ms) - t_kill))" -lt 15000 ]
ok $? "all within 15 s of the kill"

# ---- (d) costs across restarts ------------------------------------------
spw admin costs -o json >"$T/costs.0.json"
json_check "$T/costs.0.json" 'assert [t["onprem_gpu_h"] for t in d["teams"] if t["team"] == "ml"][0] > 0, d["teams"]
assert d["pools"][0]["gpu_h"] > 0, d["pools"]'
ok $? "costs before the restarts: team ml used $(jpy "$T/costs.0.json" '[round(t["onprem_gpu_h"], 4) for t in d["teams"] if t["team"] == "ml"][0]') on-prem GPU-h"
stop_daemon "$DPID"
start_daemon "$T/serve.yaml" "$T/state"
spw admin costs -o json >"$T/costs.1.json"
same_costs "$T/costs.0.json" "$T/costs.1.json" >"$T/costs.1.diff" 2>&1
ok $? "costs -o json is the same after a SIGTERM restart" || diag "$(cat "$T/costs.1.diff")"
http GET /v1/ui/series admin
cp "$T/http.body" "$T/series.0.json"
kill9_daemon "$DPID"
start_daemon "$T/serve.yaml" "$T/state"
spw admin costs -o json >"$T/costs.2.json"
same_costs "$T/costs.0.json" "$T/costs.2.json" >"$T/costs.2.diff" 2>&1
ok $? "costs -o json is the same after a kill -9 restart" || diag "$(cat "$T/costs.2.diff")"

# ---- (e) the dashboard's history across a kill -9 --------------------------
# Every sample served before the kill is served after the restart (the
# state store's table series); the base build kept them in memory only.
series_kept() {
    http GET /v1/ui/series admin && [ "$code" = 200 ] && python3 -c '
import json, sys
a = [s["t"] for s in json.load(open(sys.argv[1]))["samples"]]
b = [s["t"] for s in json.load(open(sys.argv[2]))["samples"]]
assert a and set(a) <= set(b), (a, b)' "$T/series.0.json" "$T/http.body" 2>/dev/null
}
wait_until 5 series_kept
ok $? "the dashboard's $(jpy "$T/series.0.json" 'len(d["samples"])') samples from before the kill -9 are served after the restart"

stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
