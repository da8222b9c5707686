#!/bin/sh
# launch_safety.sh: three rows of issue 11's table.
# (a) Two daemons on one host, separate state dirs, both with a running
#     j-000001.  Daemon A is killed -9 and its record of the pid erased (as
#     if it died before recording it); restarted, A finds ITS process by its
#     launch token (never B's, which has the same job id), and cancelling
#     A's job leaves B's running.
# (a2) A running job that takes a while to exit on SIGTERM (and then exits
#     0) is cancelled; the daemon is killed -9 right after the 200.  After
#     the restart the job ends cancelled, never succeeded, never re-run.
# (b) A job plants a FIFO and a symbolic link at the log paths of a future
#     job, and a link in place of another future job's log directory: those
#     jobs still start at once, write their own logs, and /healthz answers
#     throughout.
# (c) Another process holds the database's write lock for 8 s (no root
#     needed): /healthz says 503 ("database is locked"), a job that could
#     start meanwhile does not; once the lock is gone it runs, once.
# (d) The state dir on a full disk (a 2 MiB tmpfs; needs root, else
#     skipped): submits get 503, /healthz says 503 with the reason, a job
#     placed meanwhile is not started; once space is back it starts exactly
#     once (also across a kill -9) and /healthz is 200 again.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 36

# ---- (a) two daemons, one job id ---------------------------------------------
mkconfig "$T/serve.yaml" 2 never
start_daemon "$T/serve.yaml" "$T/a"
ok $? "daemon A starts"
A_PID=$DPID A_URL=$URL
start_daemon "$T/serve.yaml" "$T/b"
ok $? "daemon B starts (another state dir)"
B_PID=$DPID B_URL=$URL
use() { export SPILLWAY_URL="$1"; URL=$1; }
use "$A_URL"
ja=$(submit ml --gpus 1 -- sleep 300.101)
use "$B_URL"
jb=$(submit ml --gpus 1 -- sleep 300.202)
[ "$ja" = "$jb" ]
ok $? "both have job $ja"
use "$A_URL"
wait_for "$ja" running && use "$B_URL" && wait_for "$jb" running
ok $? "both run it"
pa=$(procs_with 'sleep 300.101')
pb=$(procs_with 'sleep 300.202')
ida=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select value from meta where key=\"daemon_id\"").fetchone()[0])' "$T/a/spillway.db")
idb=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select value from meta where key=\"daemon_id\"").fetchone()[0])' "$T/b/spillway.db")
[ -n "$ida" ] && [ -n "$idb" ] && [ "$ida" != "$idb" ] &&
    grep -qzx "SPILLWAY_LAUNCH_TOKEN=$ida.$ja.1" "/proc/$pa/environ" &&
    grep -qzx "SPILLWAY_LAUNCH_TOKEN=$idb.$jb.1" "/proc/$pb/environ"
ok $? "each job carries its own daemon's launch token ($ida.$ja.1, $idb.$jb.1)"
kill9_daemon "$A_PID"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("update jobs set pid=NULL, pid_start_ticks=NULL where id=?", (sys.argv[2],)); c.commit()' \
    "$T/a/spillway.db" "$ja"
ok $? "A is killed -9 and its record of the pid erased"
start_daemon "$T/serve.yaml" "$T/a"
ok $? "A restarts" || diag "$(cat "$DLOG")"
A_PID=$DPID A_URL=$URL
use "$A_URL"
field "$ja" 'd["state"]' >"$T/a.state"
grep -q "re-adopted its process" "$DLOG" && [ "$(cat "$T/a.state")" = running ]
ok $? "A re-adopts its job by token: $(grep 're-adopted' "$DLOG" | head -1)"
spw ml cancel "$ja" >/dev/null 2>&1
wait_for "$ja" cancelled 5
ok $? "A cancels its job"
gone_a() { ! kill -0 "$pa" 2>/dev/null; }
wait_until 5 gone_a && kill -0 "$pb" 2>/dev/null
ok $? "A's process is gone, B's still runs"
use "$B_URL"
is_state "$jb" running ml
ok $? "B's job is still running in B"
stop_daemon "$A_PID"
stop_daemon "$B_PID"
kill -TERM "$pb" 2>/dev/null

# ---- (a2) an acknowledged cancel survives kill -9 ---------------------------
# The job takes 0.5 s to exit on SIGTERM, then exits 0 (a checkpoint); it
# has retries.  The daemon is killed -9 right after the cancel's 200.
start_daemon "$T/serve.yaml" "$T/c"
ok $? "a daemon for the cancel row"
LC=$T/cancel.ledger
: >"$LC"
chmod 666 "$LC"   # jobs run as spillway-job when the test runs as root
jc=$(submit ml --gpus 1 --retries 2 -- sh -c "echo start >>$LC; trap 'sleep 0.5; echo term >>$LC; exit 0' TERM; sleep 60 & wait \$!")
started() { grep -q start "$LC"; }
wait_for "$jc" running 5 && wait_until 5 started
spw ml cancel "$jc" >/dev/null 2>&1
st=$?
kill9_daemon "$DPID"
ok "$st" "the cancel is acknowledged, and the daemon killed -9 at once"
start_daemon "$T/serve.yaml" "$T/c"
wait_for "$jc" cancelled 10
ok $? "after the restart the job ends cancelled ($(grep -c start "$LC") start, $(grep -c term "$LC") SIGTERM handled)"
sleep 1
[ "$(grep -c start "$LC")" = 1 ] && [ "$(state_of "$jc")" = cancelled ]
ok $? "and is never run again under its retries"
stop_daemon "$DPID"

# ---- (b) FIFO and links at future log paths -------------------------------
# Jobs of a daemon run as root are another user, who cannot even enter the
# logs directory; the row matters where jobs run as the daemon's own user,
# so this daemon runs them so.
cp "$T/serve.yaml" "$T/fifo.yaml"
if [ "$(id -u)" = 0 ]; then
    printf '  run_as: root\n  allow_root_jobs: true\n' >>"$T/fifo.yaml"
fi
chmod 600 "$T/fifo.yaml"
start_daemon "$T/fifo.yaml" "$T/f"
ok $? "a daemon for the FIFO row (jobs as the daemon's user)"
L=$T/f/logs
mkdir -p "$T/elsewhere-ckpt"
j1=$(submit ml --gpus 1 -- sh -c "mkdir -p $L/j-000002 && mkfifo $L/j-000002/j-000002.out && ln -s $T/stolen $L/j-000002/j-000002.err && ln -s $T/elsewhere $L/j-000003 && ln -s $T/elsewhere-ckpt $T/f/checkpoints/team-ml/j-000003")
wait_for "$j1" succeeded 5 && [ -p "$L/j-000002/j-000002.out" ] && [ -L "$L/j-000003" ]
ok $? "a job plants a FIFO, a link and a linked directory"
t0=$(now_ms)
j2=$(submit ml --gpus 1 -- sh -c 'echo mine; echo err >&2')
j3=$(submit ml --gpus 1 -- sh -c 'echo three >"$SPILLWAY_CHECKPOINT_DIR/state"')
wait_for "$j2" succeeded 5 && wait_for "$j3" succeeded 5
ok $? "the next jobs run at once ($(($(now_ms) - t0)) ms)"
http GET /healthz none
[ "$code" = 200 ]
ok $? "/healthz answers 200"
[ -f "$L/j-000002/j-000002.out" ] && [ ! -p "$L/j-000002/j-000002.out" ] &&
    [ "$(spw ml logs "$j2" 2>/dev/null)" = mine ] && [ ! -e "$T/stolen" ] &&
    [ -d "$L/j-000003" ] && [ ! -L "$L/j-000003" ] && [ ! -e "$T/elsewhere" ] &&
    [ ! -L "$T/f/checkpoints/team-ml/j-000003" ] && [ -f "$T/f/checkpoints/team-ml/j-000003/state" ] &&
    [ -z "$(ls "$T/elsewhere-ckpt")" ]
ok $? "logs are regular files in real directories, the checkpoint directory is real; nothing went through the links"
stop_daemon "$DPID"

# ---- (c) the database locked by another process ---------------------------
start_daemon "$T/serve.yaml" "$T/l"
ok $? "a daemon for the locked-database row"
LL=$T/locked.ledger
: >"$LL"
chmod 666 "$LL"   # jobs run as spillway-job when the test runs as root
# The first job holds both GPUs until the lock is held ($T/big-go): a
# fixed-length job could end, and the waiting one rightly start, before
# the lock is taken on a slow (sanitizer) build.
big=$(submit ml --gpus 2 -- sh -c "while [ ! -e $T/big-go ]; do sleep 0.05; done")
wait_for "$big" running 5
ql=$(submit ml --gpus 2 -- sh -c "echo start >>$LL")
# The lock is held until the test says so ($T/unlock), at most 60 s: a
# fixed hold could run out on a loaded machine before the checks below.
python3 -c 'import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
end = time.time() + 60
while not os.path.exists(sys.argv[3]) and time.time() < end:
    time.sleep(0.05)
c.execute("ROLLBACK")' "$T/l/spillway.db" "$T/locked" "$T/unlock" &
lockpid=$!
XPIDS="$XPIDS $lockpid"
locked() { [ -f "$T/locked" ]; }
wait_until 5 locked
lock_503() { http GET /healthz none; [ "$code" = 503 ] && contains "$T/http.body" "locked"; }
wait_until 10 lock_503
ok $? "/healthz says 503 while the database is locked: $(cat "$T/http.body")"
# Once the first job has ended its GPUs are free and the waiting job could
# start; give the daemon a second of turns after that, the lock still held.
touch "$T/big-go"
big_gone() { ! pgrep -f "$T/big-go" >/dev/null; }
wait_until 10 big_gone && sleep 1
[ ! -s "$LL" ] && kill -0 "$lockpid" 2>/dev/null
ok $? "nothing starts while no turn can be recorded"
touch "$T/unlock"
wait "$lockpid"
wait_for "$ql" succeeded 15
ok $? "once the lock is gone the waiting job runs"
[ "$(grep -c start "$LL")" = 1 ]
ok $? "once ($(grep -c start "$LL") runs)"
health_ok() { http GET /healthz none; [ "$code" = 200 ]; }
wait_until 5 health_ok
ok $? "/healthz is 200 again"
stop_daemon "$DPID"

# ---- (d) a full disk ------------------------------------------------------------
SMALL=$T/small
mkdir -p "$SMALL"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=2m tmpfs "$SMALL" 2>/dev/null; then
    for i in 1 2 3 4 5 6 7 8 9 10; do
        echo "ok $((tap_n + i)) # skip a full disk needs a tmpfs mount (root)"
    done
    tap_n=$((tap_n + 10))
    done_testing
    exit
fi
umount_small() { umount "$SMALL" 2>/dev/null; }
# Whatever happens, the tmpfs goes before $T is removed: first every
# process of this test (the daemon holds files there), then the mount.
cleanup_small() {
    for p in $(ours) $DPIDS; do
        kill -KILL "$p" 2>/dev/null
    done
    for p in $DPIDS; do
        wait "$p" 2>/dev/null
    done
    umount_small
    cleanup
}
trap cleanup_small EXIT
LEDGER=$T/full.ledger
: >"$LEDGER"
chmod 666 "$LEDGER"   # jobs run as spillway-job when the test runs as root
# The free-space watch (daemon.min_free_mib) would refuse submits on so
# small a disk before it is full: this row is about the commits that fail.
cp "$T/serve.yaml" "$T/full.yaml"
echo "  min_free_mib: 0" >>"$T/full.yaml"
start_daemon "$T/full.yaml" "$SMALL/state"
ok $? "a daemon with its state dir on a 2 MiB tmpfs"
big=$(submit ml --gpus 2 -- sleep 2)
wait_for "$big" running 5
qd=$(submit ml --gpus 2 -- sh -c "echo start \$SPILLWAY_LAUNCH_TOKEN >>$LEDGER")
is_state "$qd" queued ml
ok $? "one job holds both GPUs, another waits"
# Fill the disk.
dd if=/dev/zero of="$SMALL/fill" bs=64k 2>/dev/null
full_503() {
    code=$(curl -s -m 5 -o "$T/full.body" -w '%{http_code}' -H "Authorization: Bearer $ML_TOKEN" \
        -H "Content-Type: application/json" --data-binary '{"run": ["true"], "gpus": 1}' "$URL/v1/jobs")
    [ "$code" = 503 ]
}
wait_until 10 full_503
ok $? "on the full disk a submit gets 503: $(cat "$T/full.body")"
health_503() { http GET /healthz none; [ "$code" = 503 ] && contains "$T/http.body" "commits"; }
wait_until 10 health_503
ok $? "/healthz says 503 with the reason: $(cat "$T/http.body")"
http GET /readyz none
[ "$code" = 503 ]
ok $? "/readyz says 503 too"
curl -s "$URL/metrics" >"$T/full.metrics"
grep -qx 'spillway_commit_failing 1' "$T/full.metrics" &&
    grep -q '^spillway_commit_failures_total [1-9]' "$T/full.metrics"
ok $? "metrics: spillway_commit_failing 1 and spillway_commit_failures_total > 0 (for the alert)" ||
    diag "$(grep commit "$T/full.metrics")"
# The big job ends while the disk is full: the waiting one is placed, but
# its launch intent cannot be committed, so it must not start.
big_ended() { [ "$(field "$big" 'd["state"]')" = succeeded ]; }
wait_until 10 big_ended && sleep 1
[ ! -s "$LEDGER" ] && grep -q "commits fail" "$DLOG" &&
    [ "$(field "$qd" 'd["state"]')" = placed ]
ok $? "the job placed while commits fail has not started" ||
    diag "big: $(field "$big" 'd["state"]'); ledger: $(cat "$LEDGER")" "$(tail -5 "$DLOG")"
rm -f "$SMALL/fill"
health_200() { http GET /healthz none; [ "$code" = 200 ]; }
wait_until 10 health_200
ok $? "space is back: /healthz 200 again" && grep -q "commits work again" "$DLOG"
wait_for "$qd" succeeded 10
ok $? "the waiting job runs"
kill9_daemon "$DPID"
start_daemon "$T/full.yaml" "$SMALL/state" && sleep 1
[ "$(grep -c start "$LEDGER")" = 1 ]
ok $? "exactly once, also after a kill -9 and restart ($(grep -c start "$LEDGER") runs)"
stop_daemon "$DPID"
umount_small
done_testing
