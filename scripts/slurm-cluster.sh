#!/usr/bin/env bash
# slurm-cluster.sh: a throwaway Slurm 22.05 cluster on loopback, for the
# tests, the demo and the benchmark.
#
#   scripts/slurm-cluster.sh start DIR [--nodes N] [--gpus G] [--cloud M]
#                                      [--resume CMD] [--suspend CMD]
#                                      [--suspend-time S]
#   scripts/slurm-cluster.sh stop DIR
#   scripts/slurm-cluster.sh stop-ctld DIR     (slurmctld only; nodes keep running)
#   scripts/slurm-cluster.sh start-ctld DIR    (slurmctld again, same state)
#   scripts/slurm-cluster.sh start-node DIR NAME   (slurmd for NAME, e.g. a cloud node)
#
# start writes DIR/slurm.conf, DIR/gres.conf and DIR/env (". DIR/env" sets
# SLURM_CONF), then starts one slurmctld and N slurmd (nodes n1..nN of the
# partition `onprem`, G fake GPUs each of type `a100`), and waits until every
# on-prem node is idle.  The partition `cloud` has M nodes c1..cM in
# State=CLOUD: Slurm powers them up through ResumeProgram (DIR/resume, which
# runs CMD HOSTLIST when --resume is given, else sets the nodes' address to
# 127.0.0.1 and starts their slurmd itself) and down through SuspendProgram
# (DIR/suspend: CMD HOSTLIST, else stops their slurmd) after S s idle
# (--suspend-time, default 30).
#
# Fake GPUs: gres.conf File= paths are symlinks to /dev/null (Slurm drops
# GPUs without files).  Authentication is auth/none, every daemon listens on
# 127.0.0.1 on ports chosen free at start, and every host is named by that
# address (SlurmctldHost=localhost(127.0.0.1), NodeAddr=127.0.0.1 on each
# node): nothing relies on this machine's host name resolving (as root the
# daemons run in a UTS namespace named localhost: see named_localhost).
# Processes are stopped by their pid files (DIR/*.pid), slurmd before
# slurmctld.  Exits 3 with "SKIP ..."
# when Slurm is not installed (scripts/deps.sh test installs it).
set -uo pipefail
export LC_ALL=C

usage() {
    sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
[ $# -ge 2 ] || usage
CMD=$1
D=$2
shift 2

CTLD=$(command -v slurmctld || echo /usr/sbin/slurmctld)
SLURMD=$(command -v slurmd || echo /usr/sbin/slurmd)

need_slurm() {
    local b
    for b in "$CTLD" "$SLURMD" sbatch squeue sinfo scontrol scancel; do
        if ! command -v "$b" >/dev/null 2>&1; then
            echo "SKIP: $b not found (run scripts/deps.sh test as root, or apt-get install -y --no-install-recommends slurm-wlm slurmctld slurmd slurm-client)"
            exit 3
        fi
    done
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# stop_pid PID: TERM, then KILL after 5 s.
stop_pid() {
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    return 0
}

# The pid in a pid file, if that process is still a slurm daemon.
pid_of() {
    local f=$1 pid
    [ -f "$f" ] || return 1
    pid=$(cat "$f" 2>/dev/null)
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
    case $(cat "/proc/$pid/comm") in slurm*) echo "$pid" ;; *) return 1 ;; esac
}

fail() {
    echo "slurm-cluster: FAIL: $*" >&2
    local f
    for f in "$D"/slurmctld.log "$D"/slurmd-*.log; do
        [ -f "$f" ] && { echo "--- $f (last 15 lines)" >&2; tail -15 "$f" >&2; }
    done
    exit 1
}

# named_localhost CMD...: runs CMD with the host name "localhost".  Every
# daemon listens on 127.0.0.1 only (NoInAddrAny, NoCtldInAddrAny), and
# Slurm finds that address by resolving the host name (gethostname), which
# a fresh Debian root without "127.0.1.1 HOST" in /etc/hosts cannot do:
# slurmctld then dies with 'Unable to resolve "HOST"'.  As root, CMD runs in
# a UTS namespace of its own named localhost (only the name differs; jobs
# under slurmd see that name too); otherwise the machine's host name must
# resolve, and we say how to fix it when it does not.
named_localhost() {
    if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
        unshare --uts sh -c 'hostname localhost && exec "$@"' named-localhost "$@"
        return
    fi
    getent hosts "$(uname -n)" >/dev/null ||
        fail "host name $(uname -n) does not resolve, and Slurm binds to its address: run as root (a UTS namespace named localhost is used), or add '127.0.1.1 $(uname -n)' to /etc/hosts"
    "$@"
}

start_ctld() {
    export SLURM_CONF=$D/slurm.conf
    named_localhost "$CTLD" -i -f "$D/slurm.conf" </dev/null >>"$D/slurmctld.out" 2>&1 || fail "slurmctld did not start"
    # By the clock, generously: on a loaded machine (tests side by side,
    # busy loops) one scontrol can take seconds.
    local end=$((SECONDS + 60))
    while ((SECONDS < end)); do
        scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
        sleep 0.1
    done
    fail "slurmctld did not answer within 60 s"
}

start_node() { # start_node NAME
    export SLURM_CONF=$D/slurm.conf
    pid_of "$D/slurmd-$1.pid" >/dev/null && return 0
    named_localhost "$SLURMD" -b -N "$1" -f "$D/slurm.conf" </dev/null >>"$D/slurmd-$1.out" 2>&1 ||
        fail "slurmd $1 did not start"
}

stop_nodes() {
    local f pid
    for f in "$D"/slurmd-*.pid; do
        [ -e "$f" ] || continue
        pid=$(pid_of "$f") && stop_pid "$pid"
        rm -f "$f"
    done
}

# descendants PID...: every process below the PIDs (children, their
# children...), by pid.
descendants() {
    local c
    for c in $(pgrep -P "$(echo "$@" | tr ' ' ',')" 2>/dev/null); do
        echo "$c"
        descendants "$c"
    done
}

# Job steps left behind (slurmstepd outlives a stopped slurmd): each
# slurmstepd whose environment names this cluster's SLURM_CONF, and
# everything below it (the batch script and what it started), by pid.
stop_steps() {
    local p pid pids=""
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
        tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$D/slurm.conf" || continue
        pids="$pids $pid $(descendants "$pid" | tr '\n' ' ')"
    done
    [ -n "${pids// /}" ] || return 0
    kill -KILL $pids 2>/dev/null
    return 0
}

stop_ctld() {
    local pid
    pid=$(pid_of "$D/slurmctld.pid") && stop_pid "$pid"
    rm -f "$D/slurmctld.pid"
}

cmd_start() {
    local nodes=3 gpus=4 cloud=2 resume="" suspend="" stime=30
    while [ $# -gt 0 ]; do
        case $1 in
        --nodes) nodes=$2; shift 2 ;;
        --gpus) gpus=$2; shift 2 ;;
        --cloud) cloud=$2; shift 2 ;;
        --resume) resume=$2; shift 2 ;;
        --suspend) suspend=$2; shift 2 ;;
        --suspend-time) stime=$2; shift 2 ;;
        *) usage ;;
        esac
    done
    need_slurm
    mkdir -p "$D/state" "$D/spool" "$D/fakedev" || fail "cannot create $D"
    D=$(cd "$D" && pwd)
    local i me cport
    for ((i = 0; i < gpus; i++)); do ln -sf /dev/null "$D/fakedev/nvidia$i"; done
    me=$(id -un)
    cport=$(free_port)
    {
        echo "# throwaway cluster of scripts/slurm-cluster.sh"
        echo "ClusterName=spw"
        echo "SlurmctldHost=localhost(127.0.0.1)"
        echo "SlurmctldPort=$cport"
        echo "SlurmUser=$me"
        echo "SlurmdUser=$me"
        echo "AuthType=auth/none"
        echo "CredType=cred/none"
        echo "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny"
        echo "SlurmdParameters=config_overrides"
        echo "StateSaveLocation=$D/state"
        echo "SlurmdSpoolDir=$D/spool/%n"
        echo "SlurmctldPidFile=$D/slurmctld.pid"
        echo "SlurmdPidFile=$D/slurmd-%n.pid"
        echo "SlurmctldLogFile=$D/slurmctld.log"
        echo "SlurmdLogFile=$D/slurmd-%n.log"
        echo "SlurmctldDebug=info"
        echo "SlurmdDebug=info"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "MpiDefault=none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "SchedulerType=sched/backfill"
        # A job that has to wait (its pinned node still completing the job
        # before) is tried again within seconds, not at the 30 s backfill
        # and 60 s main passes of a default slurmctld.
        echo "SchedulerParameters=sched_interval=2,bf_interval=1"
        echo "GresTypes=gpu"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        echo "ReturnToService=2"
        echo "MinJobAge=300"
        echo "MaxJobCount=100000"
        echo "SlurmdTimeout=30"
        # A client waits this long for slurmctld (default 10 s): tests stop
        # slurmctld (SIGSTOP) for a few seconds, which a loaded machine can
        # stretch past 10 s; below the daemon's 30 s limit of one command.
        echo "MessageTimeout=20"
        echo "ResumeProgram=$D/resume"
        echo "SuspendProgram=$D/suspend"
        echo "SuspendTime=$stime"
        echo "ResumeTimeout=60"
        echo "SuspendTimeout=30"
        echo "SuspendExcParts=onprem"
        echo "TreeWidth=65533"
        echo "PrivateData=cloud"
        echo "DefMemPerNode=100"
        for ((i = 1; i <= nodes; i++)); do
            echo "NodeName=n$i NodeAddr=127.0.0.1 NodeHostname=localhost Port=$(free_port) CPUs=8 RealMemory=8000 Gres=gpu:a100:$gpus Feature=a100,onprem State=UNKNOWN"
        done
        for ((i = 1; i <= cloud; i++)); do
            echo "NodeName=c$i Port=$(free_port) CPUs=8 RealMemory=8000 Gres=gpu:a100:$gpus Feature=a100,cloud State=CLOUD"
        done
        echo "PartitionName=onprem Nodes=$( ((nodes > 0)) && echo "n[1-$nodes]") Default=YES MaxTime=INFINITE State=UP"
        ((cloud > 0)) && echo "PartitionName=cloud Nodes=c[1-$cloud] MaxTime=INFINITE State=UP"
    } >"$D/slurm.conf"
    {
        echo "AutoDetect=off"
        echo "Name=gpu Type=a100 File=$D/fakedev/nvidia[0-$((gpus - 1))]"
    } >"$D/gres.conf"
    # ResumeProgram / SuspendProgram: slurmctld runs them with the hostlist.
    {
        echo "#!/bin/sh"
        echo "export SLURM_CONF=$D/slurm.conf"
        if [ -n "$resume" ]; then
            echo "exec $resume \"\$1\" >>$D/resume.log 2>&1"
        else
            echo "for n in \$(scontrol show hostnames \"\$1\"); do"
            echo "  scontrol update nodename=\$n nodeaddr=127.0.0.1 nodehostname=localhost"
            echo "  $SLURMD -b -N \$n -f $D/slurm.conf </dev/null >/dev/null 2>&1"
            echo "done"
        fi
    } >"$D/resume"
    {
        echo "#!/bin/sh"
        echo "export SLURM_CONF=$D/slurm.conf"
        if [ -n "$suspend" ]; then
            echo "exec $suspend \"\$1\" >>$D/suspend.log 2>&1"
        else
            echo "for n in \$(scontrol show hostnames \"\$1\"); do"
            echo "  [ -f $D/slurmd-\$n.pid ] && kill \$(cat $D/slurmd-\$n.pid)"
            echo "done"
        fi
    } >"$D/suspend"
    chmod 755 "$D/resume" "$D/suspend"
    echo "export SLURM_CONF=$D/slurm.conf" >"$D/env"
    start_ctld
    for ((i = 1; i <= nodes; i++)); do start_node "n$i"; done
    local st end=$((SECONDS + 90))
    while ((SECONDS < end)); do
        st=$(sinfo -h -p onprem -o %T 2>/dev/null | sort -u | tr '\n' ' ')
        [ "$st" = "idle " ] && break
        sleep 0.1
    done
    [ "$st" = "idle " ] || fail "on-prem nodes are '$st', not idle, after 90 s"
    echo "slurm-cluster: up in $D (SLURM_CONF=$D/slurm.conf; $nodes nodes x $gpus GPUs, $cloud cloud nodes)"
}

case $CMD in
start) cmd_start "$@" ;;
stop)
    [ -d "$D" ] && D=$(cd "$D" && pwd)
    stop_nodes
    stop_ctld
    stop_steps
    ;;
stop-ctld) stop_ctld ;;
start-ctld) need_slurm; start_ctld ;;
start-node) [ $# -eq 1 ] || usage; need_slurm; start_node "$1" ;;
*) usage ;;
esac
