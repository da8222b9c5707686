#!/bin/sh
# cloud.sh: `spillway serve` with 2 on-prem hosts (network namespaces with
# sshd, scripts/netns-hosts.sh up) and an emulated cloud whose instances are
# real hosts booted on demand (daemon.emulated.boot_command: netns-hosts.sh
# add/del; at most 2 live at once): a job that does not fit on-prem bursts
# and runs inside an instance's namespace (its SPILLWAY_HOST_DIR and
# SPILLWAY_TEST_HOST are the instance's); its exit code and logs (logs -f)
# come back; cancel stops the remote process; an idle instance is released
# after the idle timeout and its namespace goes; a preempted instance's job
# resumes from its checkpoint on a new instance; after kill -9 of the
# daemon a cloud job is re-adopted on its instance, not run twice.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NET=$ROOT/scripts/netns-hosts.sh
C=$T/cluster
HD=$T/instances
out=$("$NET" up "$C" 2 2>&1)
rc=$?
if [ $rc = 3 ]; then echo "1..0 # SKIP $out"; exit 0; fi
# Every instance namespace this test's daemon booted, then the on-prem ones.
down_all() {
    for d in "$HD"/inst-*; do [ -d "$d" ] && "$NET" del "$HD" "${d##*/inst-}"; done
    "$NET" down "$C"
}
trap 'down_all >/dev/null 2>&1; cleanup' EXIT
plan 40
ok $rc "2 on-prem hosts with sshd are up" || { diag "$out"; exit 1; }
set -- $(cat "$C/hosts")
H0=$1 H1=$2

# The boot command: netns-hosts.sh, except that `add` fails while
# $T/fail-boot exists (a boot that fails).
cat >"$T/boot.sh" <<EOF
#!/bin/sh
[ "\$1" = add ] && [ -e "$T/fail-boot" ] && { date +%s.%N >>"$T/boot-fails"; echo "boot.sh: no capacity today" >&2; exit 1; }
exec "$NET" "\$@"
EOF
chmod +x "$T/boot.sh"
cat >"$T/offers.csv" <<'EOF'
provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h
emu,test-1,test-1a,g1,A100,1,3.00,0.90
EOF
cat >"$T/serve.yaml" <<EOF2
onprem:
  - name: hosts
    backend: ssh
    hosts: [$H0, $H1]
    gpus_per_node: 1
    gpu: A100
    ssh: {user: root, key: $C/id_ed25519, known_hosts: $C/known_hosts, port: 2222, down_after_s: 4}
    cost_usd_per_gpu_h: 1.10
cloud:
  offers: offers.csv
  boot_delay_s: 1
policy:
  queue: fifo
  backfill: easy
  wait: none
spot:
  failover: requeue
  checkpoint_interval_s: continuous
daemon:
  tick_s: 0.05
  kill_grace_s: 1
  idle_timeout_s: 3
  emulated:
    capacity: 2
    boot_command: $T/boot.sh
    hosts_dir: $HD
    ssh: {down_after_s: 4}
  tokens:
    - {token: $ML_TOKEN, team: ml}
    - {token: $ADMIN_TOKEN, admin: true}
EOF2
chmod 600 "$T/serve.yaml"
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts with 2 ssh hosts and instances as hosts" || { diag "$(cat "$DLOG")"; exit 1; }

# Instance ids of job $1 (from its JSON), space-separated.
insts() { show_json "$1" "$T/j.json" && jpy "$T/j.json" '" ".join(d["instances"])'; }
# Namespaces of this file's instances only (other runs on this machine have
# theirs): those the state files of $HD name that exist.
live_ns() {
    ip netns list 2>/dev/null | cut -d' ' -f1 >"$T/netns.all"
    cat "$HD"/inst-*/state 2>/dev/null | sed -n 's/^netns //p' | grep -cxF -f "$T/netns.all"
}
ns_of() { sed -n 's/^netns //p' "$HD/inst-$1/state" 2>/dev/null; }
remote_pid() { cat "$HD/inst-$1/spillway/jobs/$2/pid" 2>/dev/null; }
rdirs() { ls "$HD/inst-$2/spillway/jobs" 2>/dev/null | grep "\.$1\.[0-9]*-r"; }
alive_remote() { ar_p=$(remote_pid "$1" "$2"); [ -n "$ar_p" ] && kill -0 "$ar_p" 2>/dev/null && grep -q spw-shim "/proc/$ar_p/cmdline" 2>/dev/null; }

# ---- both on-prem hosts busy ----------------------------------------------
h0=$(submit ml --gpus 1 --name hog0 -- sleep 600)
h1=$(submit ml --gpus 1 --name hog1 -- sleep 600)
wait_for "$h0" running 30 && wait_for "$h1" running 30
ok $? "two long jobs take both on-prem hosts"

# ---- a burst runs inside a booted instance ---------------------------------
a=$(submit ml --gpus 1 --name burst -- sh -c 'echo "dir=$SPILLWAY_HOST_DIR host=$SPILLWAY_TEST_HOST"; echo warn >&2; exit 3')
wait_for "$a" failed 40
ok $? "a job that does not fit on-prem bursts and ends (exit 3: failed)" || diag "$(tail -20 "$DLOG")"
[ "$(field "$a" 'd["exit_code"]')" = 3 ] && [ "$(field "$a" 'd["where"]')" = cloud ]
ok $? "with exit_code 3, in the cloud"
ia=$(insts "$a")
spw ml logs --stdout "$a" >"$T/a.out" 2>&1
[ -n "$ia" ] && [ "$(cat "$T/a.out")" = "dir=$HD/inst-$ia/spillway host=$ia" ]
ok $? "it ran inside instance $ia's namespace, over ssh: $(cat "$T/a.out")"
[ -s "$HD/inst-$ia/addr" ] && grep -q "instance $ia is host $(cat "$HD/inst-$ia/addr")" "$DLOG"
ok $? "the instance was booted on demand as host $(cat "$HD/inst-$ia/addr" 2>/dev/null)"

# ---- release after the idle timeout: the namespace goes ---------------------
ns=$(ns_of "$ia")
released() { [ ! -f "$HD/inst-$ia/state" ] && ! ip netns list | grep -q "^$ns\b"; }
wait_until 20 released
ok $? "idle for idle_timeout_s, instance $ia is released and its namespace $ns is gone" || diag "$(tail -20 "$DLOG")"
grep -q "instance $ia released after" "$DLOG"
ok $? "the daemon says so: $(grep "instance $ia released" "$DLOG" | head -1)"

# ---- a 2-node gang across two instances (TCP all-reduce) ------------------
# Rank 0 sums RANK+1 of every rank over TCP (a copy: jobs run as spillway-job).
cp "$ROOT/tests/ssh/allreduce.py" "$T/allreduce.py" && chmod 644 "$T/allreduce.py"
# The system's python3: jobs run as spillway-job, which may not reach a
# python3 installed under root's home.
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
g=$(submit ml --gpus 2 --gpus-per-node 1 --name gang -- "$PY" "$T/allreduce.py")
wait_for "$g" succeeded 60
ok $? "a 2-GPU job with gpus_per_node 1 succeeds in the cloud" || diag "$(spw ml logs "$g" 2>&1)" "$(tail -20 "$DLOG")"
set -- $(insts "$g")
g0=${1:-} g1=${2:-}
A0=$(cat "$HD/inst-$g0/addr" 2>/dev/null) A1=$(cat "$HD/inst-$g1/addr" 2>/dev/null)
spw ml logs "$g" >"$T/gang.out" 2>&1
[ -n "$g1" ] && [ "$(cat "$T/gang.out")" = "rank 0 of 2 nodes $A0,$A1 on $g0 sum=3" ]
ok $? "a gang on instances $g0 and $g1, rank 0 summed both over TCP: $(cat "$T/gang.out")"
grep -q "^rank 1 of 2 nodes $A0,$A1 on $g1 sum=3\$" "$T/state/logs/$g.node1.out" 2>/dev/null ||
    grep -rqs "^rank 1 of 2 nodes $A0,$A1 on $g1 sum=3\$" "$T/state/logs"
ok $? "rank 1 ran on instance $g1"

# ---- logs -f, and cancel ----------------------------------------------------
f=$(submit ml --gpus 1 --name follow -- sh -c 'for i in 1 2 3 4; do echo "tick $i on $SPILLWAY_TEST_HOST"; sleep 0.5; done')
SPILLWAY_TOKEN=$ML_TOKEN timeout 60 "$SPW" logs -f "$f" >"$T/f.out" 2>"$T/f.err"
ok $? "spillway logs -f follows a cloud job to its end"
if_=$(insts "$f")
[ "$(grep -c "^tick [1-4] on $if_\$" "$T/f.out")" = 4 ] && [ "$(state_of "$f")" = succeeded ]
ok $? "all 4 lines, from instance $if_; the job succeeded" || diag "$(cat "$T/f.out" "$T/f.err")"

c=$(submit ml --gpus 1 --name sleeper -- sleep 300)
wait_for "$c" running 40
ic=$(insts "$c")
wait_until 10 alive_remote "$ic" "$(rdirs "$c" "$ic")"
ok $? "a sleep runs on instance $ic"
spw ml cancel "$c" >/dev/null 2>&1
wait_for "$c" cancelled 30
ok $? "spillway cancel: the job is cancelled"
dead_remote() { ! alive_remote "$@"; }
wait_until 10 dead_remote "$ic" "$(rdirs "$c" "$ic")"
ok $? "and its process on instance $ic is gone"

# ---- preemption -> resumes from its checkpoint on another instance ----------
p=$(submit ml --gpus 1 --name spotty -- sh -c 'c=$SPILLWAY_CHECKPOINT_DIR/step; [ -f "$c" ] && echo "resumed from $(cat "$c") on $SPILLWAY_TEST_HOST"; echo "$SPILLWAY_TEST_HOST" >"$c"; echo "start $SPILLWAY_ATTEMPT on $SPILLWAY_TEST_HOST"; sleep 300')
wait_for "$p" running 40
ip1=$(insts "$p")
wait_until 10 alive_remote "$ip1" "$(rdirs "$p" "$ip1")"
ok $? "a checkpointing job runs on instance $ip1"
pid1=$(remote_pid "$ip1" "$(rdirs "$p" "$ip1")")
ns=$(ns_of "$ip1")
spw admin pools -o json >"$T/pools.json" 2>&1
[ "$(jpy "$T/pools.json" "[i['addr'] for i in d['instances'] if i['id'] == '$ip1'][0]")" = "$(cat "$HD/inst-$ip1/addr")" ]
ok $? "GET /v1/pools shows instance $ip1's address" || diag "$(cat "$T/pools.json")"
spw admin admin preempt "$ip1" >/dev/null 2>"$T/err"
ok $? "spillway admin preempt $ip1" || diag "$(cat "$T/err")"
moved() { i=$(insts "$p"); [ -n "$i" ] && [ "$i" != "$ip1" ] && [ "$(state_of "$p")" = running ]; }
wait_until 40 moved
ok $? "the job is placed again, on instance $(insts "$p")" || diag "$(tail -20 "$DLOG")"
ip2=$(insts "$p")
resumed() { spw ml logs "$p" 2>/dev/null | grep -q "^resumed from $ip1 on $ip2\$"; }
wait_until 20 resumed
ok $? "its attempt 2 read attempt 1's checkpoint: $(spw ml logs "$p" 2>/dev/null | grep resumed)"
gone_ns() { [ ! -f "$HD/inst-$ip1/state" ] && ! kill -0 "$pid1" 2>/dev/null; }
wait_until 20 gone_ns
ok $? "the preempted instance $ip1 is torn down (namespace $ns deleted) and its process $pid1 is gone"
[ "$(live_ns)" -le 2 ]
ok $? "at most 2 instances live ($(live_ns) namespaces)"

# ---- a boot that fails: the job is placed again ---------------------------
: >"$T/fail-boot"
b=$(submit ml --gpus 1 --name unlucky -- sh -c 'echo "ran on $SPILLWAY_TEST_HOST"')
lost() { grep -q "instance .* lost" "$DLOG" && [ "$(field "$b" 'd["state"]')" != running ]; }
wait_until 30 lost
ok $? "a boot that fails: $(grep "instance .* lost" "$DLOG" | head -1)" || diag "$(tail -20 "$DLOG")"
# It is not booted again at every turn: the offer backs off (5 s, then 10 s).
backed() { grep -q "failed to boot: .* not tried again for 10 s" "$DLOG"; }
wait_until 40 backed
ok $? "a second failed boot backs the offer off for 10 s: $(grep "failed to boot" "$DLOG" | tail -1)" ||
    diag "$(tail -20 "$DLOG")"
gap=$(awk 'NR == 1 { a = $1 } NR == 2 { printf "%.1f", $1 - a }' "$T/boot-fails")
[ "$(wc -l <"$T/boot-fails")" = 2 ] && awk -v g="$gap" 'BEGIN { exit !(g >= 4.5) }'
ok $? "2 failed boots, the second $gap s after the first ($(wc -l <"$T/boot-fails") in all)"
rm -f "$T/fail-boot"
wait_for "$b" succeeded 40
ok $? "its job is placed again, on a new instance, and succeeds" || diag "$(tail -20 "$DLOG")"
ib=$(insts "$b")
[ "$(spw ml logs "$b" 2>&1)" = "ran on $ib" ]
ok $? "$(spw ml logs "$b" 2>&1)"

# ---- kill -9 of the daemon: re-adopted, not started twice -------------------
pid2=$(remote_pid "$ip2" "$(rdirs "$p" "$ip2")")
stored=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select addr from instances where id = ?", (sys.argv[2],)).fetchone()[0])' "$T/state/spillway.db" "$ip2" 2>&1)
[ "$stored" = "$(cat "$HD/inst-$ip2/addr")" ]
ok $? "the store records instance $ip2's address ($stored)"
kill9_daemon
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon restarts after kill -9"
wait_for "$p" running 10
ok $? "the cloud job is running again after the restart" || diag "$(cat "$DLOG")"
sleep 1
grep -q "job $p: re-adopted ssh job $(cat "$HD/inst-$ip2/addr" 2>/dev/null)" "$DLOG"
ok $? "re-adopted on its instance: $(grep "job $p: re-adopted" "$DLOG")" || diag "$(cat "$DLOG")"
[ "$(rdirs "$p" "$ip2" | wc -l)" = 1 ] && [ "$(remote_pid "$ip2" "$(rdirs "$p" "$ip2")")" = "$pid2" ] &&
    kill -0 "$pid2" 2>/dev/null && [ "$(field "$p" 'd["attempts"]')" = 2 ]
ok $? "the same process ($pid2) still runs, no third attempt"
spw ml cancel "$p" >/dev/null 2>&1
wait_for "$p" cancelled 30
ok $? "the re-adopted job is cancelled through the new daemon"
wait_until 10 dead_remote "$ip2" "$(rdirs "$p" "$ip2")"
ok $? "and its process on instance $ip2 is gone"
# ---- kill -9 while an instance boots ---------------------------------------
no_ns() { [ "$(live_ns)" = 0 ]; }
wait_until 20 no_ns
ok $? "every idle instance is released: no instance namespace is left"
k=$(submit ml --gpus 1 --name bootkill -- sh -c 'echo "once on $SPILLWAY_TEST_HOST"')
placed() { grep -q "job $k placed" "$DLOG"; }
wait_until 10 placed
kill9_daemon
start_daemon "$T/serve.yaml" "$T/state"
wait_for "$k" succeeded 40
ok $? "a job whose instance was booting at a kill -9 runs after the restart" || diag "$(cat "$DLOG")"
ik=$(insts "$k")
[ "$(spw ml logs "$k" 2>&1)" = "once on $ik" ] && [ "$(live_ns)" -le 1 ]
ok $? "once, on instance $ik ($(live_ns) instance namespace(s) live)" || diag "$(spw ml logs "$k" 2>&1)"

spw ml cancel "$h0" >/dev/null 2>&1
spw ml cancel "$h1" >/dev/null 2>&1
stop_daemon
ok $? "the daemon stops on SIGTERM"
