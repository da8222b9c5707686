#!/bin/sh
# limits.sh: per-request and per-team bounds answer clear 4xx errors, and a
# provider refusal that can never succeed ends the job instead of retrying
# every turn.  `gpus: 60000` on a flat-priced emulated cloud is a 400 naming
# the limit and its key (the largest gang the fleet can give: 256 instances
# per job by default); daemon.max_gpus_per_job gives its own 400; a team
# past daemon.max_queued_per_team gets 429 while other teams still submit;
# and with max_gpus_per_job raised by hand, the emulated cloud's refusal of
# 60000 instances (capacity 8) fails the job at once with the reason, in one
# log line, and nothing is retried.  A job on 8,000 one-GPU instances
# (max_instances_per_job raised) boots, runs and has its instances released
# while the API keeps answering: the emulated cloud writes its state once
# per turn, not once per instance.  Jobs cannot exhaust the daemon's disk:
# with the logs on their own filesystem (daemon.log_dir, a small tmpfs
# here) a job writing 5 MB keeps only daemon.max_log_bytes of it, with a
# marker line; with that filesystem filled by hand below
# daemon.min_free_mib, /healthz and submits answer 503 naming it, a job
# whose wait for on-prem runs out meanwhile buys no cloud instance, and all
# works again once it is freed.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 26

# ---- logs: size cap, own directory, free space watched ---------------------
mkdir -p "$T/joblogs"
mount -t tmpfs -o size=8m spw-test-logs "$T/joblogs"
trap 'umount "$T/joblogs" 2>/dev/null; cleanup' EXIT
mkconfig "$T/l.yaml" 1 constant:4
cat >>"$T/l.yaml" <<EOF
  log_dir: $T/joblogs
  max_log_bytes: 100000
  min_free_mib: 4
EOF
start_daemon "$T/l.yaml" "$T/l"
ok $? "serve starts with its logs on an 8 MiB tmpfs, max_log_bytes 100000, min_free_mib 4"
loud=$(submit ml --gpus 1 --name loud -- sh -c 'head -c 5000000 /dev/zero | tr "\\000" a; echo; echo to-stderr >&2')
wait_for "$loud" succeeded 20
ok $? "a job writing 5 MB to stdout succeeds ($loud)" || diag "$(state_of "$loud")" "$(tail -3 "$DLOG")"
out=$(find "$T/joblogs" -name "$loud.out")
size=$(stat -c %s "$out" 2>/dev/null || echo missing)
[ -n "$out" ] && [ "$size" -lt 100200 ] && [ "$size" -ge 100000 ] &&
    tail -n 1 "$out" | grep -qx '\[spillway: log truncated at 100000 bytes (daemon.max_log_bytes)\]'
ok $? "its log under log_dir holds 100000 bytes and the marker line ($size bytes)"
spw ml logs "$loud" --stderr >"$T/loud.err" 2>&1 || spw ml logs "$loud" >"$T/loud.err" 2>&1
contains "$T/loud.err" "to-stderr"
ok $? "its stderr is kept apart" || diag "$(head -c 300 "$T/loud.err")"
hold=$(submit ml --gpus 1 --name hold -- sleep 60)
wait_for "$hold" running 10
burst=$(submit ml --gpus 1 --name burst -- true)
dd if=/dev/zero of="$T/joblogs/fill" bs=1M count=6 2>/dev/null
low() { http GET /healthz admin; [ "$code" = 503 ]; }
wait_until 8 low && contains "$T/http.body" "has" && contains "$T/http.body" "MiB free, below daemon.min_free_mib (4)"
ok $? "with the log filesystem filled by hand, /healthz says 503 and why" || diag "$code $(cat "$T/http.body")"
echo '{"run": ["true"], "gpus": 1}' >"$T/small.json"
http POST /v1/jobs ml "$T/small.json"
http_is 503 "below daemon.min_free_mib" "a submit then gets 503 with the same reason"
refused() { field "$burst" 'd["reason"]' | grep -q "no instance is bought while the daemon cannot record it"; }
wait_until 15 refused && ! grep -q "emu-i-" "$DLOG"
ok $? "a job whose wait runs out meanwhile buys no cloud instance, and says why" ||
    diag "$(field "$burst" 'd["reason"]')" "$(grep -i "emu-i\|acquire" "$DLOG" | head -3)"
spw ml cancel "$burst" >/dev/null 2>&1
spw ml cancel "$hold" >/dev/null 2>&1
wait_for "$hold" cancelled 10
rm -f "$T/joblogs/fill"
fine() { http GET /healthz admin; [ "$code" = 200 ]; }
wait_until 8 fine && http POST /v1/jobs ml "$T/small.json" && [ "$code" = 201 ]
ok $? "once it is freed /healthz and submits work again" || diag "$code $(cat "$T/http.body")"
stop_daemon "$DPID"
umount "$T/joblogs" || diag "$(fuser -vm "$T/joblogs" 2>&1)"

mkconfig "$T/a.yaml" 1 constant:0
start_daemon "$T/a.yaml" "$T/a"
ok $? "serve starts with a flat-priced emulated cloud"

spw ml submit --gpus 60000 -- true >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && contains "$T/err" "400" && contains "$T/err" "60000 GPUs" &&
    contains "$T/err" "max_instances_per_job"
ok $? "gpus 60000 on a flat-priced cloud: 400 naming the limit and its key" ||
    diag "rc $rc: $(cat "$T/err")"
http GET "/v1/jobs" ml
[ "$code" = 200 ] && ! grep -q 60000 "$T/http.body"
ok $? "... and no job was queued"
spw ml submit --gpus 256 --est-runtime 1m -- true >"$T/out" 2>"$T/err"
ok $? "256 GPUs (256 one-GPU instances) is still accepted" || diag "$(cat "$T/err")"
spw admin cancel "$(cat "$T/out")" >/dev/null 2>&1
stop_daemon "$DPID"

# ---- max_queued_per_team (no cloud: the wait policy never bursts) ---------------
mkconfig "$T/c.yaml" 1 never
printf '  max_queued_per_team: 2\n' >>"$T/c.yaml"
start_daemon "$T/c.yaml" "$T/c"
a1=$(submit ml --gpus 1 -- sleep 60)
wait_for "$a1" running 10
a2=$(submit ml --gpus 1 -- sleep 1)
a3=$(submit ml --gpus 1 -- sleep 1)
spw ml submit --gpus 1 -- sleep 1 >"$T/out" 2>"$T/err"
rc=$?
[ -n "$a2" ] && [ -n "$a3" ] && [ $rc -eq 1 ] && contains "$T/err" "429" &&
    contains "$T/err" "max_queued_per_team"
ok $? "a third queued job of team ml is refused with 429 naming max_queued_per_team" ||
    diag "rc $rc: $(cat "$T/err") ($a2 $a3: $(state_of "$a2") $(state_of "$a3"))"
c1=$(submit cv --gpus 1 -- sleep 1)
[ -n "$c1" ]
ok $? "team cv still submits"
# cv has one queued: of 8 concurrent submits exactly one more gets in
pids=
for k in 1 2 3 4 5 6 7 8; do
    spw cv submit --gpus 1 -- sleep 1 >"$T/cc.$k.out" 2>"$T/cc.$k.err" &
    pids="$pids $!"
done
for p in $pids; do wait "$p"; done
n201=$(cat "$T"/cc.*.out | grep -c '^j-')
n429=$(cat "$T"/cc.*.err | grep -c '429')
[ "$n201" -eq 1 ] && [ "$n429" -eq 7 ]
ok $? "8 concurrent submits of cv at 1 of 2 queued: 1 accepted, 7 refused ($n201, $n429)"
# The count follows each job as it leaves the queue (cancel, start) and
# is rebuilt at a restart: ml holds a3 and a2 queued, at its bound.
# two_ml: of two submits of ml, the first accepted and the second refused
two_ml() {
    t1=$(submit ml --gpus 1 -- sleep 1)
    spw ml submit --gpus 1 -- sleep 1 >"$T/out" 2>"$T/err"
    [ -n "$t1" ] && contains "$T/err" "429"
}
spw ml cancel "$a2" >/dev/null 2>&1 && wait_for "$a2" cancelled && two_ml
ok $? "once one of ml's queued jobs is cancelled, one more is accepted and the next refused" ||
    diag "$(state_of "$a2") $(cat "$T/err")"
a4=$t1
stop_daemon "$DPID" && start_daemon "$T/c.yaml" "$T/c" &&
    ! spw ml submit --gpus 1 -- sleep 1 >"$T/out" 2>"$T/err" && contains "$T/err" "429"
ok $? "after a restart ml is still at its bound (a3 and a4 queued): refused" || diag "$(cat "$T/err")"
# a1 ends: a3 starts, c1 and cv's second job (1 s each) run before a4
not_queued() { [ "$(state_of "$1")" != queued ]; }
spw ml cancel "$a1" >/dev/null 2>&1 && wait_until 10 not_queued "$a3" && two_ml
ok $? "once a queued job of ml starts, one more is accepted and the next refused" ||
    diag "$(state_of "$a3") $(state_of "$a4") $(cat "$T/err")"
stop_daemon "$DPID"

# ---- max_gpus_per_job ------------------------------------------------------------
mkconfig "$T/b.yaml" 4 constant:0
printf '  max_gpus_per_job: 100000\n  emulated:\n    capacity: 8\n' >>"$T/b.yaml"
start_daemon "$T/b.yaml" "$T/b"
ok $? "serve starts with max_gpus_per_job 100000 and an emulated capacity of 8"
spw ml submit --gpus 100001 -- true >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "daemon.max_gpus_per_job: 100000"
ok $? "more than max_gpus_per_job is a 400 naming the key" || diag "$(cat "$T/err")"

j=$(submit ml --gpus 60000 -- true)
wait_for "$j" failed 10
ok $? "gpus 60000 past the cloud's whole capacity: the job fails ($j)" ||
    diag "$(state_of "$j")" "$(tail -5 "$DLOG")"
reason=$(field "$j" 'd["reason"]')
case $reason in *"refuses"*"at most 8"*) true ;; *) false ;; esac
ok $? "its reason says the provider refuses it for good ($reason)"
sleep 1
n=$(grep -c "job $j" "$DLOG")
[ "$n" -le 2 ] && [ "$(state_of "$j")" = failed ]
ok $? "nothing retries it: $n log line(s) about it, it stays failed" || diag "$(cat "$DLOG")"
stop_daemon "$DPID"

# ---- 8,000 instances: the API stays up -------------------------------------------
mkconfig "$T/d.yaml" 1 constant:0
printf '  max_instances_per_job: 10000\n' >>"$T/d.yaml"
start_daemon "$T/d.yaml" "$T/d"
big=$(submit ml --gpus 8000 -- true)
worst=0
end=$(($(now_ms) + 90000))
done8k=0
while [ "$(now_ms)" -lt "$end" ]; do
    t0=$(now_ms)
    curl -s -m 30 -o /dev/null "$URL/healthz"
    dt=$(($(now_ms) - t0))
    [ "$dt" -gt "$worst" ] && worst=$dt
    if grep -q "emu-i-008000 released" "$DLOG"; then
        done8k=1
        break
    fi
    sleep 0.2
done
[ -n "$big" ] && [ "$(state_of "$big")" = succeeded ] && [ $done8k = 1 ]
ok $? "a job on 8,000 cloud instances runs and all its instances are released ($big)" ||
    diag "$(state_of "$big")" "$(tail -3 "$DLOG")"
[ "$worst" -lt 5000 ]
ok $? "the API answered /healthz within 5 s all along (worst $worst ms)"
n=$(grep -c "released after" "$DLOG")
[ "$n" -eq 8000 ]
ok $? "8000 release lines, one per instance ($n)"
stop_daemon "$DPID"
done_testing
