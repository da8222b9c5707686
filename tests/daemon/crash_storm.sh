#!/bin/sh
# crash_storm.sh: the launch protocol under a kill -9 storm.  Three
# submitters and a canceller run against the daemon while it is killed -9
# and restarted again and again (bounded rounds).  Every job appends a
# "start" and an "end" line (job id, pid, time in ns, its GPUs, its launch
# token) to
# a ledger file.  Once everything has ended, the ledger and the final
# states must show:
#   - no job ran twice (no second start of the same job, no overlapping
#     runs of one job),
#   - no two runs held the same GPU at the same instant,
#   - no acknowledged cancel was lost (each job whose cancel got a 200
#     ended `cancelled`, and none started after that 200),
#   - no acknowledged submit was lost.
# Jobs have `retries: 2`, so a forgotten cancel or a relaunch would show.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 12

ROUNDS=${SPW_STORM_ROUNDS:-8}
PER_SUBMITTER=${SPW_STORM_JOBS:-30}

mkconfig "$T/serve.yaml" 4 never
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts (1 node x 4 GPU slots)"
echo "$URL" >"$T/url"

LEDGER=$T/ledger
: >"$LEDGER"
chmod 666 "$LEDGER"   # jobs run as spillway-job when the test runs as root
# The job: start line, 0.2-0.6 s of "work", end line; SIGTERM ends it
# after 0.3 s, with an end line.
python3 - "$LEDGER" "$T" <<'EOF'
import json, sys
ledger, t = sys.argv[1], sys.argv[2]
line = ('echo "%s $SPILLWAY_JOB_ID $$ $(date +%%s%%N) ${CUDA_VISIBLE_DEVICES:-none} '
        '${SPILLWAY_LAUNCH_TOKEN:-none}" >>' + ledger)
script = "\n".join([
    line % "start",
    # on TERM it "checkpoints" for 0.3 s, so cancels are in flight when
    # the daemon is killed
    "trap 'sleep 0.3; " + (line % "end").replace("'", "'\\''") + "; exit 143' TERM",
    "sleep 0.$((2 + $(od -An -N1 -tu1 /dev/urandom) % 5)) & wait $!",
    line % "end",
])
for g in (1, 2):
    with open("%s/spec%d.json" % (t, g), "w") as f:
        json.dump({"run": script, "gpus": g, "retries": 2}, f)
EOF

# submitter N: PER_SUBMITTER acknowledged submits, retrying refused or
# unanswered ones (the daemon is down part of the time).
submitter() {
    n=0
    while [ $n -lt "$PER_SUBMITTER" ]; do
        url=$(cat "$T/url")
        g=$((1 + (n + $1) % 2))
        rm -f "$T/sub$1.body"
        code=$(curl -s -m 5 -o "$T/sub$1.body" -w '%{http_code}' -H "Authorization: Bearer $ML_TOKEN" \
            --data-binary "@$T/spec$g.json" "$url/v1/jobs")
        id=$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$T/sub$1.body" 2>/dev/null)
        if [ "$code" = 201 ] && [ -n "$id" ]; then
            echo "$id" >>"$T/acked"
            n=$((n + 1))
        else
            sleep 0.05
        fi
    done
    echo done >"$T/sub$1.done"
}

# canceller: cancels a random acknowledged job now and then; notes every
# 200 with the time it was received.
canceller() {
    while [ ! -f "$T/stop.cancel" ]; do
        sleep 0.$((1 + $(od -An -N1 -tu1 /dev/urandom) % 3))
        id=$(tail -n 12 "$T/acked" 2>/dev/null | shuf -n 1)
        [ -n "$id" ] || continue
        url=$(cat "$T/url")
        code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST \
            -H "Authorization: Bearer $ML_TOKEN" "$url/v1/jobs/$id/cancel")
        [ "$code" = 200 ] && echo "$id $(date +%s%N)" >>"$T/cancelled"
    done
}

: >"$T/acked"
: >"$T/cancelled"
for s in 1 2 3; do
    submitter $s </dev/null >/dev/null 2>&1 &
    XPIDS="$XPIDS $!"
done
canceller </dev/null >/dev/null 2>&1 &
cpid=$!
XPIDS="$XPIDS $cpid"

# The storm: ROUNDS times, let it run 0.3-1.2 s, kill -9, restart.
restarted=0
i=0
while [ $i -lt "$ROUNDS" ]; do
    i=$((i + 1))
    sleep 0.$((3 + $(od -An -N1 -tu1 /dev/urandom) % 9))
    kill9_daemon "$DPID"
    start_daemon "$T/serve.yaml" "$T/state" || break
    echo "$URL" >"$T/url.new" && mv "$T/url.new" "$T/url"
    restarted=$((restarted + 1))
done
ok $((restarted != ROUNDS)) "$restarted kill -9 and restarts"

subs_done() { [ -f "$T/sub1.done" ] && [ -f "$T/sub2.done" ] && [ -f "$T/sub3.done" ]; }
wait_until 60 subs_done
ok $? "the submitters got $(wc -l <"$T/acked") submits acknowledged"
touch "$T/stop.cancel"
wait_until 10 sh -c "! kill -0 $cpid 2>/dev/null"
diag "$(wc -l <"$T/cancelled") cancels acknowledged"

all_ended() {
    spw ml queue -o json >"$T/live.json" 2>/dev/null &&
        [ "$(jpy "$T/live.json" 'len(d["jobs"])')" = 0 ]
}
wait_until 60 all_ended
ok $? "every job reaches an end state" ||
    diag "$(jpy "$T/live.json" '[(j["id"], j["state"]) for j in d["jobs"]][:10]')"
spw ml queue --all -o json >"$T/all.json"

python3 - "$LEDGER" "$T/all.json" "$T/acked" "$T/cancelled" >"$T/verdict" 2>&1 <<'EOF'
import collections, json, sys
ledger, alljobs, acked, cancelled = sys.argv[1:5]
runs = {}            # (job, shell pid) -> [start, end, gpus]
starts = collections.Counter()
for l in open(ledger):
    f = l.split()
    if len(f) < 4 or f[0] not in ("start", "end"):
        continue
    kind, job, tok, ts = f[0], f[1], f[2], int(f[3])
    gpus = set(f[4].split(",")) if len(f) > 4 and f[4] != "none" else set()
    r = runs.setdefault((job, tok), [None, None, gpus])
    if kind == "start":
        r[0] = ts
        starts[job] += 1
    else:
        r[1] = ts
INF = float("inf")
iv = [(j, t, s, e if e is not None else INF, g) for (j, t), (s, e, g) in runs.items() if s]
twice = sorted(j for j, n in starts.items() if n > 1)
overlap_same = set()
gpu_clash = 0
for a in range(len(iv)):
    for b in range(a + 1, len(iv)):
        ja, _, sa, ea, ga = iv[a]
        jb, _, sb, eb, gb = iv[b]
        if sa < eb and sb < ea:
            if ja == jb:
                overlap_same.add(ja)
            elif ga & gb:
                gpu_clash += 1
jobs = {j["id"]: j for j in json.load(open(alljobs))["jobs"]}
ack = [l.strip() for l in open(acked) if l.strip()]
lost_submits = [i for i in ack if i not in jobs]
lost_cancels = []
for l in open(cancelled):
    jid, t200 = l.split()
    j = jobs.get(jid)
    late = [s for (jj, _, s, _, _) in iv if jj == jid and s > int(t200)]
    if not j or j["state"] != "cancelled" or late:
        lost_cancels.append((jid, j and j["state"], len(late)))
states = collections.Counter(j["state"] for j in jobs.values())
print("runs %d, jobs %d, states %s" % (len(iv), len(jobs), dict(states)))
print("started_twice %d %s" % (len(twice), twice[:5]))
print("overlapping_same_job %d" % len(overlap_same))
print("gpu_overlaps %d" % gpu_clash)
print("lost_cancels %d %s" % (len(lost_cancels), lost_cancels[:5]))
print("lost_submits %d %s" % (len(lost_submits), lost_submits[:5]))
bad = [j for j in jobs.values() if j["state"] not in ("succeeded", "cancelled")]
print("other_ends %d %s" % (len(bad), [(j["id"], j["state"], j.get("reason")) for j in bad][:3]))
EOF
while read -r l; do diag "$l"; done <"$T/verdict"
count() { sed -n "s/^$1 \([0-9]*\).*/\1/p" "$T/verdict"; }
[ "$(count started_twice)" = 0 ]
ok $? "no job started twice"
[ "$(count overlapping_same_job)" = 0 ]
ok $? "no overlapping runs of one job"
[ "$(count gpu_overlaps)" = 0 ]
ok $? "no GPU held by two runs at once"
[ "$(count lost_cancels)" = 0 ]
ok $? "no acknowledged cancel lost ($(wc -l <"$T/cancelled") acknowledged)"
[ "$(count lost_submits)" = 0 ]
ok $? "no acknowledged submit lost"
[ "$(count other_ends)" = 0 ]
ok $? "every job ended succeeded or cancelled"
grep -q "^runs [1-9]" "$T/verdict"
ok $? "the ledger recorded runs (the check is not vacuous)"
# Fences and exit records go once each attempt's end is committed.
left_in_run() { [ -z "$(ls "$T/state/run")" ]; }
wait_until 5 left_in_run
ok $? "nothing is left in STATE/run" || diag "$(ls "$T/state/run" | head -5)"
done_testing
