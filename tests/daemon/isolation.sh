#!/bin/sh
# isolation.sh: jobs cannot reach the daemon.  A daemon started as root runs
# its jobs as the unprivileged spillway-job user (or a team's run_as), with
# an environment built from an allow-list: a job sees none of the daemon's
# variables (its SPILLWAY_TOKEN among them) but those allowed, cannot read
# the config (mode 0600) with every team's token, the database or the logs
# of other jobs, and owns its checkpoint directory alone.  Jobs as root are
# refused unless allowed; run_as naming a missing user, or a job_env that
# would pass the daemon's tokens, stops the daemon at start with the fix.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"

if [ "$(id -u)" != 0 ]; then
    echo "1..0 # skip the daemon switches job users only when run as root"
    exit 0
fi
if ! id spillway-job >/dev/null 2>&1; then
    echo "1..0 # skip no spillway-job user (scripts/deps.sh creates it as root)"
    exit 0
fi
plan 24

job_uid=$(id -u spillway-job)
mkconfig "$T/serve.yaml" 2 never
chmod 600 "$T/serve.yaml"
# The daemon's own environment holds a token and a secret of its operator:
# neither may reach a job.
export SPILLWAY_TOKEN="$ADMIN_TOKEN" OPERATOR_SECRET=hunter2
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts as root with the default run_as"
unset SPILLWAY_TOKEN OPERATOR_SECRET
contains "$DLOG" "jobs run as user spillway-job"
ok $? "its log says jobs run as spillway-job" || diag "$(cat "$DLOG")"
! contains "$DLOG" "cannot reach their checkpoint"
ok $? "and no warning about reaching the state dir (\$T is 0711)" || diag "$(cat "$DLOG")"

# ---- who the job is, what it sees, what it can open ------------------------
a=$(submit ml --gpus 1 --name probe -- sh -c '
    echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
    echo "home=$HOME user=$USER"
    env | sed -n "s/^\(SPILLWAY_TOKEN\|OPERATOR_SECRET\|SPW_DTEST\|SPILLWAY_JOB_ID\)=.*/has \1/p"
    cat "$1" >/dev/null 2>&1 && echo "config readable" || echo "config denied"
    cat "$2/spillway.db" >/dev/null 2>&1 && echo "db readable" || echo "db denied"
    ls "$2/logs" >/dev/null 2>&1 && echo "logs listable" || echo "logs denied"
    ls "$2" >/dev/null 2>&1 && echo "state listable" || echo "state denied"
    echo data >"$SPILLWAY_CHECKPOINT_DIR/ckpt" && echo "checkpoint written"
    echo "cwd=$(pwd)"
' probe "$T/serve.yaml" "$T/state")
wait_for "$a" succeeded 10
ok $? "the probe job runs to its end"
spw ml logs "$a" >"$T/a.out" 2>&1
grep -q "^uid=$job_uid " "$T/a.out"
ok $? "it runs as spillway-job (uid $job_uid)" || diag "$(cat "$T/a.out")"
grep -q "groups=$(id -g spillway-job)\$" "$T/a.out"
ok $? "with that user's group alone (no supplementary group of the daemon's)" ||
    diag "$(grep groups "$T/a.out")"
grep -q '^home=/nonexistent user=spillway-job$' "$T/a.out"
ok $? "HOME and USER are its user's, not the daemon's" || diag "$(grep home "$T/a.out")"
! grep -q '^has SPILLWAY_TOKEN' "$T/a.out"
ok $? "the daemon's SPILLWAY_TOKEN is not in its environment"
! grep -q '^has OPERATOR_SECRET' "$T/a.out"
ok $? "nor any other variable of the daemon's outside the allow-list"
grep -q '^has SPW_DTEST' "$T/a.out" && grep -q '^has SPILLWAY_JOB_ID' "$T/a.out"
ok $? "a variable named in daemon.job_env passes, and SPILLWAY_JOB_ID is set"
grep -q '^config denied$' "$T/a.out"
ok $? "it cannot read the config file and its tokens (mode 0600)"
grep -q '^db denied$' "$T/a.out" && grep -q '^logs denied$' "$T/a.out" &&
    grep -q '^state denied$' "$T/a.out"
ok $? "nor the database, nor list the logs or the state dir" || diag "$(cat "$T/a.out")"
grep -q '^checkpoint written$' "$T/a.out"
ok $? "it writes its own checkpoint directory"
ckpt=$(realpath "$T/state")/checkpoints/$a
[ "$(stat -c '%u %a' "$ckpt")" = "$job_uid 700" ]
ok $? "which is its user's, mode 0700 ($(stat -c '%U %a' "$ckpt"))"
grep -q "^cwd=$ckpt\$" "$T/a.out"
ok $? "without a workdir it starts in that directory" || diag "$(grep cwd "$T/a.out")"
[ "$(stat -c '%a' "$T/state/spillway.db")" != "" ] &&
    [ "$(stat -c '%a' "$T/state")" = 711 ] && [ "$(stat -c '%a' "$T/state/logs")" = 700 ]
ok $? "the state dir is 0711 and its logs 0700"

# A job's log file paths are the daemon's, opened before the switch: its
# output still reaches `spillway logs` (checked above) though it cannot
# open the file itself.
b=$(submit ml --gpus 1 -- sh -c 'ls "$1"/logs/*.out 2>&1 | head -1' x "$T/state")
wait_for "$b" succeeded 10
spw ml logs "$b" >"$T/b.out" 2>&1
grep -q 'Permission denied' "$T/b.out"
ok $? "a job cannot read the log directory (where another job's output is)" ||
    diag "$(cat "$T/b.out")"
stop_daemon

# ---- refusals at start ------------------------------------------------------
refuses() {  # refuses CONFIG WORDS: serve exits non-zero naming WORDS
    "$SPW" serve --config "$1" --state-dir "$T/st-refused" --listen 127.0.0.1:0 \
        </dev/null >/dev/null 2>"$T/refused.err" &
    rp=$!
    rp_end=$(($(now_ms) + 5000))
    while kill -0 "$rp" 2>/dev/null && [ "$(now_ms)" -lt "$rp_end" ]; do sleep 0.05; done
    if kill -0 "$rp" 2>/dev/null; then
        kill -KILL "$rp"; wait "$rp" 2>/dev/null
        return 1
    fi
    wait "$rp"
    [ $? -ne 0 ] && grep -q "$2" "$T/refused.err"
}
mkconfig "$T/root.yaml" 2 never
printf '  run_as: root\n' >>"$T/root.yaml"
chmod 600 "$T/root.yaml"
refuses "$T/root.yaml" "allow_root_jobs"
ok $? "run_as: root is refused without allow_root_jobs" || diag "$(cat "$T/refused.err")"

mkconfig "$T/nouser.yaml" 2 never
printf '  run_as: no-such-user-x\n' >>"$T/nouser.yaml"
chmod 600 "$T/nouser.yaml"
refuses "$T/nouser.yaml" "useradd"
ok $? "run_as naming a missing user is refused with the useradd line" ||
    diag "$(cat "$T/refused.err")"

mkconfig "$T/tok.yaml" 2 never
sed -i 's/job_env: \[SPW_DTEST\]/job_env: [SPW_DTEST, SPILLWAY_TOKEN]/' "$T/tok.yaml"
chmod 600 "$T/tok.yaml"
refuses "$T/tok.yaml" "job_env"
ok $? "job_env naming SPILLWAY_TOKEN is a config error" || diag "$(cat "$T/refused.err")"

# ---- allowed root jobs ------------------------------------------------------
printf '  allow_root_jobs: true\n' >>"$T/root.yaml"
start_daemon "$T/root.yaml" "$T/state-root"
ok $? "with allow_root_jobs: true the daemon starts"
r=$(submit ml --gpus 1 -- id -u)
wait_for "$r" succeeded 10
[ "$(spw ml logs "$r")" = 0 ]
ok $? "and its jobs run as root"
stop_daemon

# ---- a state dir jobs cannot reach is said at start ---------------------------
mkdir -m 700 "$T/private"
start_daemon "$T/serve.yaml" "$T/private/state"
contains "$DLOG" "warning: jobs running as spillway-job cannot reach their checkpoint directories" &&
    contains "$DLOG" "chmod o+x $T/private"
ok $? "a state dir under a 0700 directory: the daemon names the directory and the fix" ||
    diag "$(cat "$DLOG")"
stop_daemon

# ---- a daemon that is not root runs jobs as itself ---------------------------
mkdir -p "$T/nr" && chmod 777 "$T/nr"
mkconfig "$T/nr/serve.yaml" 1 never
printf '  run_as: nobody\n' >>"$T/nr/serve.yaml"
chown spillway-job "$T/nr/serve.yaml" && chmod 600 "$T/nr/serve.yaml"
# A copy of the binary: spillway-job may not enter the clone.
others_copy "$SPW"
runuser -u spillway-job -- "$COPY" serve --config "$T/nr/serve.yaml" --state-dir "$T/nr/st" \
    --listen 127.0.0.1:0 </dev/null >/dev/null 2>"$T/nr.err"
[ $? -ne 0 ] && grep -q "needs the daemon to run as root" "$T/nr.err"
ok $? "a daemon not run as root refuses a run_as naming another user" ||
    diag "$(cat "$T/nr.err")"

done_testing
