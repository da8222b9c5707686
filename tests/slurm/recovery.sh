#!/bin/sh
# recovery.sh: `spillway serve` restarting while Slurm does not answer, on a
# real Slurm 22.05 (nodes n1, n2, 4 fake GPUs each, one cluster for this
# file).
# 1. kill -9 of the daemon, slurmctld stopped, the daemon restarted: it
#    starts (the pool's nodes as last read), cannot tell whether the running
#    job's Slurm job still runs, and keeps its placement instead of placing
#    it again; once slurmctld is back the same Slurm job is re-adopted, no
#    second one submitted.
# 2. A job whose node was drained while its scancel failed (its old attempt
#    still being stopped) when the daemon was killed: after the restart the
#    old Slurm job is found by its launch token and cancelled, and the job
#    runs its next attempt, one live Slurm job for it.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
# shellcheck source=tests/slurm/slurm-lib
. "$(dirname "$0")/slurm-lib"
slurm_up 22 "a Slurm cluster of 2 nodes x 4 GPUs (and 1 cloud node) is up" --nodes 2 --gpus 4 --cloud 1

# A scancel that fails while $T/noscancel exists (a controller that cannot
# be reached for cancels), first on the daemon's PATH.
mkdir -p "$T/bin"
cat >"$T/bin/scancel" <<EOF2
#!/bin/sh
if [ -f "$T/noscancel" ]; then echo "scancel: test: refused" >&2; exit 1; fi
exec $(command -v scancel) "\$@"
EOF2
chmod +x "$T/bin/scancel"
PATH=$T/bin:$PATH
export PATH

cat >"$T/serve.yaml" <<EOF2
onprem:
  - {name: gpu, backend: slurm, partition: onprem, cost_usd_per_gpu_h: 1.10}
policy: {queue: fifo, backfill: easy, wait: never}
spot: {failover: requeue}
daemon:
  tick_s: 0.05
  kill_grace_s: 1
  tokens:
    - {token: $ML_TOKEN, team: ml}
    - {token: $ADMIN_TOKEN, admin: true}
EOF2
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts with a slurm pool" || exit 1
# start_slow CONFIG STATE: start_daemon, waiting up to 90 s for it to
# listen: while slurmctld is down each Slurm command of its start takes
# about 9 s to fail (the client's retries).
start_slow() {
    chmod 600 "$1"
    ndaemon=$((ndaemon + 1))
    DLOG=$T/serve.$ndaemon.log
    : >"$DLOG"
    "$SPW" serve --config "$1" --state-dir "$2" --listen 127.0.0.1:0 </dev/null \
        >"$T/serve.$ndaemon.out" 2>"$DLOG" &
    DPID=$!
    DPIDS="$DPIDS $DPID"
    listening() { kill -0 "$DPID" 2>/dev/null || return 2; grep -q "listening on http" "$DLOG"; }
    wait_until 90 listening || { diag "spillway serve did not start:" "$(cat "$DLOG")"; return 1; }
    URL=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9][0-9]*\).*|\1|p' "$DLOG")
    export SPILLWAY_URL="$URL"
}
sq() { squeue -h -t all -o '%i %T %k %N' | grep -E ' [0-9a-f]{12}\.j-[0-9]+\.[0-9]+ '; }
running_in_slurm() { sq | grep "\.$1\.$2 " | grep -q RUNNING; }
live_count() { sq | grep "\.$1\." | grep -c 'RUNNING\|PENDING\|COMPLETING'; }

# ---- 1. restart while slurmctld is down -----------------------------------
u=$(submit ml --gpus 2 --name unsure -- sleep 300)
wait_for "$u" running 30 && wait_until 20 running_in_slurm "$u" 1
ok $? "a job runs in Slurm: $(sq | grep "\.$u\.")"
uid=$(sq | grep "\.$u\.1 " | awk '{print $1}')
kill9_daemon
"$ROOT/scripts/slurm-cluster.sh" stop-ctld "$C"
! scontrol ping 2>/dev/null | grep -q 'is UP'
ok $? "the daemon is killed -9 and slurmctld stopped"
start_slow "$T/serve.yaml" "$T/state"
ok $? "the daemon starts although Slurm does not answer" || diag "$(cat "$DLOG")"
grep -q "pool gpu: Slurm does not answer .*using its 2 nodes as last read" "$DLOG"
ok $? "it uses the pool's nodes as last read: $(grep 'does not answer' "$DLOG" | head -1)"
unsure_said() { grep -q "job $u: cannot tell yet whether its launch" "$DLOG"; }
unsure_said
ok $? "it cannot tell whether $u's Slurm job runs, and says so: $(grep "job $u: cannot tell" "$DLOG" | cut -c1-200)"
sleep 3   # several loop turns and rechecks while Slurm is still down
[ "$(state_of "$u")" = running ] && [ "$(field "$u" 'd["attempts"]')" = 1 ]
ok $? "meanwhile the job keeps its placement: running, attempt 1 ($(state_of "$u"), attempts $(field "$u" 'd["attempts"]'))"
"$ROOT/scripts/slurm-cluster.sh" start-ctld "$C" >/dev/null
ok $? "slurmctld is back"
readopted() { grep -q "job $u: re-adopted slurm job $uid" "$DLOG"; }
wait_until 60 readopted
ok $? "the same Slurm job ($uid) is re-adopted: $(grep "job $u: re-adopted" "$DLOG")"
sleep 2
[ "$(live_count "$u")" = 1 ] && [ "$(field "$u" 'd["attempts"]')" = 1 ]
ok $? "exactly one live Slurm job for it, never submitted twice: $(sq | grep "\.$u\." | tr '\n' ';')"
spw ml cancel "$u" >/dev/null 2>&1
wait_for "$u" cancelled 30 && sq | grep "\.$u\.1 " | grep -q CANCELLED
ok $? "and it is cancelled through the adopted handle: $(sq | grep "\.$u\.1 ")"

# ---- 2. an attempt still being stopped when the daemon died ---------------
v=$(submit ml --gpus 4 --name stopping --retries 0 -- sleep 300)
wait_for "$v" running 30 && wait_until 20 running_in_slurm "$v" 1
node=$(sq | grep "\.$v\.1 " | awk '{print $4}')
[ -n "$node" ]
ok $? "a 4-GPU job runs on Slurm node '$node'" || {
    diag "spillway: $(state_of "$v"): $(spw ml show "$v" 2>&1 | sed -n 's/^reason: *//p')"
    diag "squeue: $(squeue -h -t all -o '%i %T %r %k %N' | tr '\n' ';')"
    diag "sinfo: $(sinfo -h -N -o '%N %T %G' | tr '\n' ';')"
    grep "$v\|Slurm\|slurm" "$DLOG" | tail -20 | sed 's/^/# /'
    exit 1
}
touch "$T/noscancel"
scontrol update nodename="$node" state=drain reason=spw-test-drain
waiting() { grep -q "Slurm node $node " "$DLOG" && running_in_slurm "$v" 1 &&
    [ "$(state_of "$v")" = placed ]; }
wait_until 30 waiting
ok $? "$node drained, scancel failing: $v is placed again, its old Slurm job still runs ($(state_of "$v"); $(sq | grep "\.$v\." | tr '\n' ';'))"
kill9_daemon
rm -f "$T/noscancel"
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon is killed -9 and restarted"
stopped() { sq | grep "\.$v\.1 " | grep -q CANCELLED; }
wait_until 30 stopped
ok $? "the interrupted attempt's Slurm job is found by its token and cancelled: $(grep "job $v: stopping" "$DLOG")"
wait_until 40 running_in_slurm "$v" 2
ok $? "and the job's next attempt runs in Slurm: $(sq | grep "\.$v\." | tr '\n' ';')"
[ "$(live_count "$v")" = 1 ]
ok $? "one live Slurm job for it"
spw ml cancel "$v" >/dev/null 2>&1
scontrol update nodename="$node" state=resume

# ---- 3. cloud.slurm_partition while slurmctld is down ----------------------
# The daemon with a cloud partition restarts while Slurm does not answer:
# it starts, the partition's nodes as last read (STATE/slurm-cloud-partition).
sed 's/^policy:/cloud: {price_usd_per_gpu_h: 3.0, boot_delay_s: 1, slurm_partition: cloud}\npolicy:/' \
    "$T/serve.yaml" >"$T/serve3.yaml"
kill9_daemon
start_daemon "$T/serve3.yaml" "$T/state3"
ok $? "spillway serve starts with cloud.slurm_partition: cloud" || diag "$(cat "$DLOG")"
kill9_daemon
"$ROOT/scripts/slurm-cluster.sh" stop-ctld "$C"
start_slow "$T/serve3.yaml" "$T/state3"
ok $? "after kill -9 it starts again while slurmctld is down" || diag "$(cat "$DLOG")"
grep -q "cloud.slurm_partition cloud: Slurm does not answer .*using its 1 nodes as last read" "$DLOG"
ok $? "with the cloud partition's nodes as last read: $(grep 'slurm_partition cloud: Slurm does not' "$DLOG" | cut -c1-160)"
"$ROOT/scripts/slurm-cluster.sh" start-ctld "$C" >/dev/null
w=$(submit ml --gpus 1 --name after -- sh -c 'exit 0')
wait_for "$w" succeeded 60
ok $? "once slurmctld is back, a job runs"
