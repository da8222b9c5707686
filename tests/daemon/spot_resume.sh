#!/bin/sh
# spot_resume.sh: a job with `spot: always` bursts to spot capacity of the
# emulated cloud (the on-prem slot is taken), checkpointing its steps to
# $SPILLWAY_CHECKPOINT_DIR.  Preempted mid-run, it resumes from its last
# checkpoint on a new instance, in the same checkpoint directory, and
# succeeds: attempt 2, one preemption, one restart.  Twice: once preempted
# by `spillway admin preempt`, once by a spot availability trace
# (spot.availability) whose count drops to 0 six seconds after the daemon
# starts and comes back six seconds later, while the job waits for spot.
# Then a third time without a preemption: under uniform-progress, with no
# spot at first, a job with a deadline runs on demand; once spot comes back
# and the job is ahead of uniform progress it is stopped and moved to spot,
# where it resumes from its checkpoint (attempt 2, no preemption).
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 36

# One emulated offer with a spot price, booting in 1 s.
cat >"$T/offers.csv" <<'EOF'
provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h
emu,test-1,test-1a,g1,A100,1,3.00,0.90
EOF
# spotconfig FILE [AVAILABILITY_LINE]
spotconfig() {
    policy=${3:-greedy}
    mkconfig "$1" 1 none
    # mkconfig writes a flat-price cloud: swap it for the catalog, and put
    # a spot: section before daemon: (the last section).
    python3 - "$1" "${2:-}" "$policy" <<'EOF'
import sys
path, avail, policy = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
text = text.replace("  price_usd_per_gpu_h: 2.5\n", "  offers: offers.csv\n")
spot = "spot:\n  policy: " + policy + "\n  checkpoint_interval_s: continuous\n"
spot += "  restart_overhead_s: 1\n"
if avail:
    spot += "  availability:\n    - " + avail + "\n"
text = text.replace("daemon:\n", spot + "daemon:\n")
open(path, "w").write(text)
EOF
}

# The job: 12 steps of 0.4 s, each saved; a new attempt starts from the
# last step saved.
cat >"$T/job.yaml" <<'EOF'
name: resumable
gpus: 1
spot: always
run: |
  d=$SPILLWAY_CHECKPOINT_DIR
  s=0
  [ -f "$d/step" ] && s=$(cat "$d/step")
  echo "attempt $SPILLWAY_ATTEMPT restarts $SPILLWAY_RESTARTS from step $s in $d on $SPILLWAY_INSTANCE_IDS"
  while [ "$s" -lt 12 ]; do
    sleep 0.4
    s=$((s + 1))
    echo "$s" >"$d/step.tmp" && mv "$d/step.tmp" "$d/step"
    echo "step $s"
  done
  echo done
EOF

# check_resumed JOB LOG [STEPS]: the log of a job of STEPS steps (12
# unless given) preempted once and resumed.
check_resumed() {
    python3 - "$2" "${3:-12}" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
starts = [re.match(r"attempt (\d+) restarts (\d+) from step (\d+) in (\S+) on (\S+)$", l)
          for l in lines if l.startswith("attempt ")]
assert len(starts) == 2 and all(starts), lines
a, b = starts
assert a.group(1, 2, 3) == ("1", "0", "0"), a.groups()
assert b.group(1) == "2" and b.group(2) == "1" and int(b.group(3)) > 0, b.groups()
assert a.group(4) == b.group(4), (a.group(4), b.group(4))
assert a.group(5) != b.group(5), "the same instance twice"
after = lines[lines.index(b.group(0)) + 1:]
steps = [int(l.split()[1]) for l in after if l.startswith("step ")]
assert steps == list(range(int(b.group(3)) + 1, int(sys.argv[2]) + 1)), steps
assert [l for l in lines if l][-1] == "done", lines[-3:]
print(b.group(3))
EOF
}

# ---- 1: preempted by an administrator --------------------------------------

spotconfig "$T/a.yaml"
start_daemon "$T/a.yaml" "$T/state-a"
ok $? "spillway serve starts (1 slot, an emulated offer with a spot price, policy greedy)"
hog=$(submit ml --gpus 1 --name hog -- sleep 60.5)
wait_for "$hog" running 5
ok $? "a long job takes the only on-prem slot"
# Its first attempt holds after step 5 until the test has preempted it
# (the file go in its checkpoint directory), so the preemption lands
# mid-run however slow the machine; a new attempt never waits.
sed 's|^    echo "step $s"$|&\
    if [ "$SPILLWAY_ATTEMPT" = 1 ] \&\& [ "$s" = 5 ]; then n=0; while [ ! -e "$d/go" ] \&\& [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done; fi|' "$T/job.yaml" >"$T/job1.yaml"
grep -q 'd/go' "$T/job1.yaml" || echo "# job1.yaml has no gate" >&2
job=$(submit ml "$T/job1.yaml")
# stepped [N]: the job has saved its step N (2 unless given).
stepped() { spw ml logs "$job" 2>/dev/null | grep -q "^step ${1:-2}\$"; }
# The engine counts an attempt's progress from its modelled start, the
# placement + the offer's boot (1 s), after the restart overhead (1 s): the
# first 2 s after placement are no work kept.  Step 5 is saved 2 s after
# the process starts, which is after the instance booted, so more than 2 s
# after placement whatever the machine's speed.  (Preempting at step 2, as
# this test did, left a margin of ~0.15 s: a fast machine saw done_s 0.)
wait_until 10 stepped 5
ok $? "the resumable job bursts to the cloud and checkpoints steps ($job)" || spw ml show "$job" | while read -r l; do diag "$l"; done
show_json "$job" "$T/a1.json"
json_check "$T/a1.json" '
assert d["where"] == "cloud" and d["spot"] is True and d["attempts"] == 1, d
assert d["spec"]["spot"] == "always" and d["checkpoint_interval_s"] == "continuous", d
assert d["checkpoint_dir"].endswith("/checkpoints/team-ml/" + d["id"]), d["checkpoint_dir"]'
ok $? "it runs on spot capacity, attempt 1, with its checkpoint directory"
inst=$(jpy "$T/a1.json" 'd["instances"][0]')
dir=$(jpy "$T/a1.json" 'd["checkpoint_dir"]')
[ -d "$dir" ]
ok $? "the checkpoint directory exists under the state dir"

spw admin admin preempt "$inst" >/dev/null 2>"$T/err"
ok $? "spillway admin preempt $inst" || diag "$(cat "$T/err")"
touch "$dir/go"
wait_for "$job" succeeded 15
ok $? "the job runs again and succeeds"
spw ml logs "$job" >"$T/a.log"
from=$(check_resumed "$job" "$T/a.log" 2>"$T/err")
ok $? "its second attempt resumed from step $from of its checkpoint, in the same directory, on a new instance" ||
    diag "$(cat "$T/err")" "$(cat "$T/a.log")"
show_json "$job" "$T/a2.json"
json_check "$T/a2.json" '
assert d["state"] == "succeeded" and d["exit_code"] == 0, d
assert d["attempts"] == 2 and d["restarts"] == 1 and d["preemptions"] == 1 and d["failures"] == 0, d
assert d["spot"] is True and d["where"] == "cloud", d
assert d["done_s"] > 0 and d["lost_s"] == 0, (d["done_s"], d["lost_s"])'
ok $? "attempts 2, restarts 1, preemptions 1; work kept, none lost (continuous checkpoints)"
[ "$(cat "$dir/step")" = 12 ]
ok $? "the checkpoint directory is kept after the job ends, with its last step"
grep -q "job $job requeued after its instance was preempted" "$DLOG"
ok $? "the daemon logs the preemption"
curl -s "$URL/metrics" >"$T/metrics"
grep -qx 'spillway_preemptions_total 1' "$T/metrics" && grep -qx 'spillway_restarts_total 1' "$T/metrics"
ok $? "metrics: spillway_preemptions_total 1, spillway_restarts_total 1" || diag "$(grep -E 'preempt|restart' "$T/metrics")"
spw ml show "$job" >"$T/show.txt"
contains "$T/show.txt" "preemptions:" && contains "$T/show.txt" "done_s:" && contains "$T/show.txt" "spot:"
ok $? "spillway show prints preemptions, done_s and spot"
spw ml cancel "$hog" >/dev/null 2>&1 && wait_for "$hog" cancelled 5
ok $? "the long job is cancelled"
stop_daemon "$DPID"
ok $? "the daemon stops"
start_daemon "$T/a.yaml" "$T/state-a" && show_json "$job" "$T/a3.json" &&
    json_check "$T/a3.json" '
assert d["attempts"] == 2 and d["restarts"] == 1 and d["preemptions"] == 1, d
assert d["spot"] is True and d["done_s"] > 0, d' &&
    curl -s "$URL/metrics" | grep -qx 'spillway_preemptions_total 1'
ok $? "after a restart the job still shows its preemption, restart, work kept and spot"
stop_daemon "$DPID"

# ---- 2: preempted by the availability trace --------------------------------

# Ticks of 2 s from the daemon's start: spot for 6 s, none for 6 s, then
# spot again (the trace repeats after its 200 ticks).  The job must be
# placed more than 2 s (boot + restart overhead) before the drop for work
# to be kept, and the queue is checked while spot is still gone: 6 s each
# leaves seconds of margin on a loaded machine.  The job has 20 steps here
# (8 s), so that it is still running when spot goes.
python3 -c '
import json
print(json.dumps({"metadata": {"gap_seconds": 2}, "data": [1, 1, 1, 0, 0, 0] + [1] * 194}))' >"$T/trace.json"
spotconfig "$T/b.yaml" "{provider: emu, zone: test-1a, trace: trace.json}"
start_daemon "$T/b.yaml" "$T/state-b"
ok $? "spillway serve starts with spot.availability from a trace (2 s ticks)"
t0=$(now_ms)
hog=$(submit ml --gpus 1 --name hog -- sleep 60.5)
wait_for "$hog" running 5
sed 's/-lt 12 /-lt 20 /' "$T/job.yaml" >"$T/job2.yaml"
job=$(submit ml "$T/job2.yaml")
wait_until 8 stepped && [ "$(field "$job" 'd["spot"]')" = true ]
ok $? "the resumable job runs on spot ($job)"
gone() { grep -q "spot capacity of emu/test-1/test-1a/g1: 0 instance" "$DLOG"; }
wait_until 8 gone
ok $? "the trace's count drops to 0 at its third tick"
requeued() { [ "$(field "$job" 'd["preemptions"]')" = 1 ] && [ "$(state_of "$job")" = queued ]; }
wait_until 3 requeued
ok $? "the job is preempted and waits in the queue for spot" || spw ml show "$job" | while read -r l; do diag "$l"; done
show_json "$job" "$T/b1.json"
json_check "$T/b1.json" '
assert "preempted" in d["reason"] and d["restarts"] == 1 and d["done_s"] > 0, d'
ok $? "its reason says it was preempted; the work before is kept"
# Still queued a second later, in a sample the log proves was taken
# before spot came back (the third capacity line).
capacity_lines() { grep -c "spot capacity of emu/test-1/test-1a/g1: " "$DLOG"; }
sleep 1   # an observation window, not a wait: nothing may happen in it
q_state=$(state_of "$job")
q_lines=$(capacity_lines)
[ "$q_state" = queued ] && [ "$q_lines" = 2 ]
ok $? "while the trace has no spot, it stays queued (spot: always)" ||
    diag "state $q_state, capacity lines $q_lines (3: spot came back before the sample)"
wait_for "$job" succeeded 20
ok $? "once spot is back it runs again and succeeds"
back=$(sed -n 's/.*spot capacity of emu\/test-1\/test-1a\/g1: \([0-9]*\) instance.*/\1/p' "$DLOG" | tr '\n' ' ')
[ "$back" = "1 0 1 " ]
ok $? "the daemon saw the trace's capacity go 1, 0, 1" || diag "got: $back"
spw ml logs "$job" >"$T/b.log"
from=$(check_resumed "$job" "$T/b.log" 20 2>"$T/err")
ok $? "it resumed from step $from of its checkpoint, on a new instance" ||
    diag "$(cat "$T/err")" "$(cat "$T/b.log")"
show_json "$job" "$T/b2.json"
json_check "$T/b2.json" '
assert d["attempts"] == 2 and d["restarts"] == 1 and d["preemptions"] == 1, d
assert d["spot"] is True, d'
ok $? "attempts 2, restarts 1, preemptions 1, on spot"
[ $(($(now_ms) - t0)) -lt 30000 ]
ok $? "all within 30 s of the second daemon's start"
spw ml cancel "$hog" >/dev/null 2>&1 && wait_for "$hog" cancelled 5
ok $? "the long job is cancelled"
stop_daemon "$DPID"

# ---- 3: moved from on demand to spot (uniform progress) --------------------

# No spot for the first 10 s, then spot.  The job: 30 steps of 0.4 s (est
# 12 s), deadline 60 s away.  d = 1 s overhead + 1 s boot; k = 12/60.  It is
# not behind at 0, then behind: on demand.  Ahead by the hysteresis margin
# (done >= (t + 2d) k) within a few seconds; spot returns at 10 s: moved.
python3 -c '
import json
print(json.dumps({"metadata": {"gap_seconds": 2}, "data": [0] * 5 + [1] * 195}))' >"$T/trace3.json"
spotconfig "$T/c.yaml" "{provider: emu, zone: test-1a, trace: trace3.json}" uniform-progress
start_daemon "$T/c.yaml" "$T/state-c"
ok $? "spillway serve starts under uniform-progress, no spot for the first 10 s"
hog=$(submit ml --gpus 1 --name hog -- sleep 60.5)
wait_for "$hog" running 5
deadline=$(python3 -c 'import time; print(int(time.time()) + 60)')
sed -e 's/^spot: always$/est_runtime: 12s/' -e "s/^gpus: 1\$/gpus: 1\ndeadline: $deadline/" \
    -e 's/-lt 12 /-lt 30 /' "$T/job.yaml" >"$T/job3.yaml"
job=$(submit ml "$T/job3.yaml")
wait_until 8 stepped && [ "$(field "$job" 'd["spot"]')" = false ]
ok $? "the job runs on demand while there is no spot ($job)" ||
    spw ml show "$job" | while read -r l; do diag "$l"; done
moved() { grep -q "job $job stopped on demand to move to spot" "$DLOG"; }
wait_until 15 moved
ok $? "once spot is back it is stopped on demand to move to spot" || diag "$(tail -5 "$DLOG")"
wait_for "$job" succeeded 25
ok $? "it runs again, on spot, and succeeds"
show_json "$job" "$T/c1.json"
json_check "$T/c1.json" '
assert d["attempts"] == 2 and d["restarts"] == 1, d
assert d["preemptions"] == 0 and d["failures"] == 0, d
assert d["spot"] is True and d["where"] == "cloud", d
assert d["done_s"] > 0 and d["lost_s"] == 0, (d["done_s"], d["lost_s"])'
ok $? "attempts 2, restarts 1, no preemption, ends on spot, work kept"
spw ml logs "$job" >"$T/c.log"
python3 - "$T/c.log" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
starts = [re.match(r"attempt (\d+) restarts (\d+) from step (\d+)", l) for l in lines if l.startswith("attempt ")]
assert len(starts) == 2 and all(starts), lines
assert starts[1].group(1, 2) == ("2", "1") and int(starts[1].group(3)) > 0, starts[1].groups()
assert [l for l in lines if l][-1] == "done", lines[-3:]
EOF
ok $? "its second attempt resumed from its checkpoint" || diag "$(cat "$T/c.log")"
spw ml cancel "$hog" >/dev/null 2>&1 && wait_for "$hog" cancelled 5
ok $? "the long job is cancelled"
stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
