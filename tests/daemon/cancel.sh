#!/bin/sh
# cancel.sh: cancelling a running job kills its whole process group (the
# shell and the two sleeps it started in the background); a job that ignores
# SIGTERM is SIGKILLed after kill_grace_s (1 s); a queued job is cancelled at
# once without running; cancelling an ended job is refused (409).
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 17

mkconfig "$T/serve.yaml" 4 never
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts (1 node x 4 slots, kill_grace_s 1)"

# ---- the process group --------------------------------------------------
a=$(submit ml --gpus 1 --name group -- sh -c 'sleep 300.123 & sleep 300.123 & wait')
two_sleeps() { [ "$(procs_with 'sleep 300.123' | wc -l)" -eq 2 ]; }
wait_for "$a" running 5 && wait_until 5 two_sleeps
ok $? "the job runs and its two background sleeps are up ($(procs_with 'sleep 300.123' | tr '\n' ' '))"
[ "$(field "$a" 'd["gpus_assigned"]')" = 0 ]
ok $? "it holds GPU 0"

spw ml cancel "$a" -o json >"$T/cancel.json" 2>"$T/cancel.err"
ok $? "spillway cancel of the running job exits 0" || diag "$(cat "$T/cancel.err")"
json_check "$T/cancel.json" '
assert d["cancel_requested"] is True or d["state"] == "cancelled", d'
ok $? "the answer shows the cancel request"
t0=$(now_ms)
none_left() { [ -z "$(procs_with 'sleep 300.123')" ]; }
wait_until 5 none_left
ok $? "within $(($(now_ms) - t0)) ms both background sleeps are gone" ||
    diag "$(show_procs "$(procs_with 'sleep 300.123')")"
wait_for "$a" cancelled 5
ok $? "the job is cancelled"
show_json "$a" "$T/a.json"
json_check "$T/a.json" '
assert d["end_ts"] is not None, d["end_ts"]
assert "cancel" in d["reason"], d["reason"]'
ok $? "it has an end time and its reason says it was cancelled"

# ---- SIGTERM ignored: SIGKILL after kill_grace_s ---------------------------
b=$(submit ml --gpus 1 --name stubborn -- sh -c 'trap "" TERM; echo armed; sleep 300.456; echo survived')
armed() { [ -n "$(procs_with 'sleep 300.456')" ] && spw ml logs "$b" 2>/dev/null | grep -q armed; }
wait_for "$b" running 5 && wait_until 5 armed
ok $? "a job that ignores SIGTERM runs"
spw ml cancel "$b" >/dev/null 2>"$T/cancel.err"
t0=$(now_ms)
sleep 0.3
# Alive while the grace (1 s) runs: looked at with ps (fast), and only
# judged when the look itself came back within the grace (a loaded
# machine, or a sanitizer build's client, may take longer than the grace
# to answer; the next check bounds the kill from both sides).
alive_now=0; [ -n "$(procs_with 'sleep 300.456')" ] && alive_now=1
t_look=$(($(now_ms) - t0))
[ $alive_now = 1 ] || [ $t_look -ge 900 ]
ok $? "$t_look ms after the cancel it is still alive (SIGTERM ignored, grace not over)"
gone() { [ -z "$(procs_with 'sleep 300.456')" ]; }
wait_until 5 gone
t1=$(now_ms)
[ $((t1 - t0)) -ge 900 ] && [ $((t1 - t0)) -le 4000 ]
ok $? "it is SIGKILLed after kill_grace_s: gone $((t1 - t0)) ms after the cancel"
wait_for "$b" cancelled 5 && ! spw ml logs "$b" | grep -q survived
ok $? "the job is cancelled and never got past its sleep"

# ---- a queued job, and an ended one ---------------------------------------
long=$(submit ml --gpus 3 --name hog -- sleep 300.789)
q=$(submit ml --gpus 4 --name waiter -- sh -c 'echo ran')
wait_for "$long" running 5 && [ "$(state_of "$q")" = queued ]
ok $? "a 4-GPU job waits behind a running 3-GPU one"
spw ml cancel "$q" >/dev/null 2>&1 && [ "$(state_of "$q")" = cancelled ]
ok $? "cancelling the queued job ends it at once"
spw ml cancel "$long" >/dev/null 2>&1 && wait_for "$long" cancelled 5
sleep 0.3
[ "$(state_of "$q")" = cancelled ] && [ -z "$(spw ml logs "$q" 2>/dev/null)" ] &&
    [ "$(field "$q" 'd["start_ts"]')" = null ]
ok $? "the cancelled queued job never starts, even once the GPUs are free"

http POST "/v1/jobs/$q/cancel" ml
http_is 409 "ended" "cancelling a job that has already ended: 409"

stop_daemon "$DPID"
no_strays "no process of the jobs is left"

done_testing
