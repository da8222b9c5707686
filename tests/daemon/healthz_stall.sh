#!/bin/sh
# healthz_stall.sh: a scheduler loop that stops turning makes /healthz
# unhealthy, for real.  The daemon's scheduler thread (named spw-loop) is
# frozen from outside with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT stop that
# one thread; the HTTP threads keep answering).  No hook in the daemon and no
# test-only build: the binary under test is the one users run.
# - Before: /healthz 200, the last turn a moment ago.
# - Frozen: /healthz still answers at once; within the stall limit (10 s,
#   or 50 x tick_s) plus a little it says 503, "unhealthy", with the reason
#   and the age of the last turn, and never before the limit.
# - Thawed: /healthz 200 again, and a job submitted then runs.
# Needs ptrace of the daemon's thread (root, or kernel.yama.ptrace_scope 0);
# skipped otherwise.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"

scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$(id -u)" != 0 ] && [ "$scope" != 0 ]; then
    echo "1..0 # skip ptrace of the daemon's thread needs root or kernel.yama.ptrace_scope 0 (it is $scope)"
    exit 0
fi
if [ "$scope" = 3 ]; then
    echo "1..0 # skip kernel.yama.ptrace_scope is 3: no process may ptrace another"
    exit 0
fi
# The same relation as the tracer's to the daemon (a sibling): may it
# seize one?  (Capabilities and LSMs decide too, not only the above.)
sleep 30 &
sib=$!
python3 - "$sib" >"$T/preflight" 2>&1 <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) != 0:   # PTRACE_SEIZE
    print(os.strerror(ctypes.get_errno()))
    sys.exit(1)
EOF
pre=$?
kill "$sib" 2>/dev/null
wait "$sib" 2>/dev/null
if [ "$pre" != 0 ]; then
    echo "1..0 # skip this machine does not let a test ptrace a process: $(cat "$T/preflight")"
    exit 0
fi
plan 12

mkconfig "$T/serve.yaml" 1 none
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts (tick_s 0.05: the stall limit is 10 s)"

# The scheduler thread, by its name.
loop_tid=
for task in /proc/"$DPID"/task/*; do
    [ "$(cat "$task/comm" 2>/dev/null)" = spw-loop ] && loop_tid=${task##*/}
done
[ -n "$loop_tid" ] && [ "$loop_tid" != "$DPID" ]
ok $? "the daemon's scheduler thread is named spw-loop ($loop_tid), apart from its main thread" ||
    diag "$(for t in /proc/"$DPID"/task/*; do echo "${t##*/} $(cat "$t/comm")"; done)"

health() { http GET /healthz none; }
health
json_check "$T/http.body" 'assert d["status"] == "ok" and d["last_turn_age_s"] < 2, d' &&
    [ "$code" = 200 ]
ok $? "before: /healthz 200, the last turn under 2 s ago" || diag "$code $(cat "$T/http.body")"

# The tracer: stops the one thread, says so in $T/frozen, waits for
# $T/thaw (60 s at most), and lets it go.  Were it to die, the kernel would
# detach it and the thread would run on.
python3 - "$loop_tid" "$T/frozen" "$T/thaw" >"$T/tracer.out" 2>&1 <<'EOF' &
import ctypes, os, sys, time
tid, frozen, thaw = int(sys.argv[1]), sys.argv[2], sys.argv[3]
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long
def call(req, what):
    if libc.ptrace(req, tid, None, None) != 0:
        e = ctypes.get_errno()
        print("%s: %s" % (what, os.strerror(e)))
        sys.exit(2 if e == 1 else 1)   # EPERM: not allowed here
call(PTRACE_SEIZE, "PTRACE_SEIZE")
call(PTRACE_INTERRUPT, "PTRACE_INTERRUPT")
_, status = os.waitpid(tid, WALL)
if not os.WIFSTOPPED(status):
    print("the thread did not stop: status %#x" % status)
    sys.exit(1)
open(frozen, "w").write("%.3f\n" % time.time())
end = time.time() + 60
while not os.path.exists(thaw) and time.time() < end:
    time.sleep(0.05)
call(PTRACE_DETACH, "PTRACE_DETACH")
print("detached")
EOF
tracer=$!
XPIDS="$XPIDS $tracer"
frozen() { [ -s "$T/frozen" ] || { kill -0 "$tracer" 2>/dev/null || return 2; return 1; }; }
wait_until 10 frozen
st=$?
if [ "$st" != 0 ] && grep -q "Operation not permitted" "$T/tracer.out"; then
    # Permission is decided by the kernel (capabilities, LSMs): say so.
    diag "ptrace is not permitted here: $(cat "$T/tracer.out")"
fi
ok "$st" "the scheduler thread is frozen by ptrace" || diag "$(cat "$T/tracer.out")"
# When it stopped, as the tracer saw it (ms), not when this shell noticed.
t_frozen=$(awk '{ printf "%d", $1 * 1000 }' "$T/frozen")
# Field 3 of /proc/PID/task/TID/stat, after the name in parentheses: t is
# a tracing stop.  The main thread runs on.
thread_state() { sed 's/^.*) //' "/proc/$DPID/task/$1/stat" | cut -d' ' -f1; }
[ "$(thread_state "$loop_tid")" = t ] && [ "$(thread_state "$DPID")" != t ]
ok $? "only that thread is stopped (loop: $(thread_state "$loop_tid"), main: $(thread_state "$DPID"))"

# Poll /healthz: every answer must come at once; 200 until the limit, then
# 503 for good.
: >"$T/polls"
unhealthy() {
    p0=$(now_ms)
    health
    p1=$(now_ms)
    echo "$((p0 - t_frozen)) $((p1 - p0)) $code" >>"$T/polls"
    [ "$code" = 503 ]
}
wait_until 25 unhealthy
ok $? "frozen: /healthz turns 503 ($(($(now_ms) - t_frozen)) ms after the freeze)" ||
    diag "$(tail -3 "$T/polls")"
json_check "$T/http.body" '
assert d["status"] == "unhealthy", d
assert "completed no turn for" in d["reason"] and "limit 10.0 s" in d["reason"], d["reason"]
assert d["last_turn_age_s"] > 10, d["last_turn_age_s"]'
ok $? "its body says unhealthy, why, and how long ago the last turn was" || diag "$(cat "$T/http.body")"
python3 - "$T/polls" >"$T/polled" 2>&1 <<'EOF'
import sys
rows = [tuple(int(x) if x.isdigit() else x for x in l.split()) for l in open(sys.argv[1]) if l.strip()]
assert rows, "no polls"
assert all(took < 2000 for _, took, _ in rows), "an answer took %d ms" % max(r[1] for r in rows)
early = [r for r in rows if r[2] == "503" and r[0] + r[1] < 9000]
assert not early, "503 before the 10 s limit: %s" % early
print("%d polls, the slowest answer %d ms" % (len(rows), max(r[1] for r in rows)))
EOF
ok $? "every /healthz answered within 2 s while the loop was frozen, none 503 before the limit" ||
    diag "$(cat "$T/polled")"
diag "$(cat "$T/polled")"

touch "$T/thaw"
wait "$tracer"
ok $? "the tracer lets the thread go" || diag "$(cat "$T/tracer.out")"
healthy() { health; [ "$code" = 200 ]; }
wait_until 10 healthy
ok $? "thawed: /healthz 200 again" || diag "$code $(cat "$T/http.body")"
j=$(submit ml --gpus 1 -- true)
wait_for "$j" succeeded 10
ok $? "the loop turns again: a job submitted now runs ($j)"

stop_daemon "$DPID"
ok $? "the daemon stops"
done_testing
