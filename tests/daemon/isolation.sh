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
plan 40

job_uid=$(id -u spillway-job)
mkconfig "$T/serve.yaml" 2 never
printf '  job_pids_max: 64\n  job_memory_mib: 64\n' >>"$T/serve.yaml"
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
ckpt=$(realpath "$T/state")/checkpoints/team-ml/$a
[ "$(stat -c '%u %a' "$ckpt")" = "$job_uid 700" ]
ok $? "which is its user's, mode 0700 ($(stat -c '%U %a' "$ckpt"))"
[ "$(stat -c '%u %g %a' "$(dirname "$ckpt")")" = "0 $(id -g spillway-job) 710" ]
ok $? "inside its team's directory, root's and passable by the team's group alone ($(stat -c '%U %G %a' "$(dirname "$ckpt")"))"
grep -q "^cwd=$(realpath "$T/submit-dir")\$" "$T/a.out"
ok $? "spillway submit runs it where submit was run (the CLI sends its directory)" ||
    diag "$(grep cwd "$T/a.out")"
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

# ---- a job's processes end with the job (its cgroup) ---------------------------
# A child that calls setsid leaves the job's process group; it must still end
# when the job exits and when it is cancelled, or it would keep its GPU
# (CUDA_VISIBLE_DEVICES) while the next job gets it.  Tested on cgroup v1.
contains "$DLOG" "jobs run in a cgroup each (cgroup v" && contains "$DLOG" "processes 64, memory 64 MiB"
ok $? "the daemon says once that jobs run in a cgroup each, with their limits" ||
    diag "$(grep -i cgroup "$DLOG")"
e=$(submit ml --gpus 1 -- sh -c "$ORPHAN")
wait_for "$e" succeeded 10
spw ml logs "$e" >"$T/e.out" 2>&1
sids=$(sed -n 's/^sid *\([0-9]*\) orphan-sid *\([0-9]*\)$/\1 \2/p' "$T/e.out")
[ -n "$sids" ] && [ "${sids% *}" != "${sids#* }" ]
ok $? "a job's child leaves its session with setsid (sessions $sids)" || diag "$(cat "$T/e.out")"
wait_until 5 orphan_gone "$e"
ok $? "and ends when the job exits" || diag "still there: $(ps -o pid,sid,user,args -p "$og")"
c=$(submit ml --gpus 1 -- sh -c "$ORPHAN; exec sleep 300")
wait_for "$c" running 10 && wait_until 10 test -s "$T/state/checkpoints/team-ml/$c/orphan"
spw ml cancel "$c" >/dev/null 2>&1
wait_for "$c" cancelled 10 && wait_until 5 orphan_gone "$c"
ok $? "a setsid child ends with its job's cancel" || diag "still there: $(ps -o pid,sid,user,args -p "$og")"
f=$(submit ml --gpus 1 -- sh -c 'n=0; while [ $n -lt 100 ]; do sleep 30 & n=$((n + 1)); done; echo forked 100')
wait_until 10 is_state "$f" succeeded ml
spw ml logs "$f" >"$T/f.out" 2>&1
spw ml logs "$f" --stderr >>"$T/f.out" 2>&1
! grep -q "^forked 100" "$T/f.out" && grep -qi "cannot fork" "$T/f.out"
ok $? "job_pids_max: 64 stops a job forking 100 processes" || diag "$(cat "$T/f.out")"
m=$(submit ml --gpus 1 -- python3 -c 'b = b"x" * (200 << 20); print("allocated")')
wait_until 20 is_state "$m" failed ml
spw ml logs "$m" >"$T/m.out" 2>&1
! grep -q allocated "$T/m.out"
ok $? "job_memory_mib: 64 stops a job filling 200 MiB ($(state_of "$m" ml))" || diag "$(cat "$T/m.out")"
# ---- a hostile env: PATH and LD_PRELOAD reach only the job's user -----------
EV=$T/evil
mkdir -p "$EV" && chmod 777 "$EV" && : >"$EV/ran" && chmod 666 "$EV/ran"
for c in id sh cat env setpriv; do
    printf '#!/bin/sh\necho "$(/usr/bin/id -u) %s" >>%s/ran\nexec /usr/bin/%s "$@"\n' "$c" "$EV" "$c" >"$EV/$c"
    chmod 755 "$EV/$c"
done
pl=
if command -v cc >/dev/null 2>&1; then
    printf '#include <stdio.h>\n#include <unistd.h>\n__attribute__((constructor)) static void evil(void) { FILE *f = fopen("%s/ran", "a"); if (f) { fprintf(f, "%%d preload\\n", (int)geteuid()); fclose(f); } }\n' "$EV" >"$EV/evil.c"
    cc -shared -fPIC -o "$EV/evil.so" "$EV/evil.c" && chmod 755 "$EV/evil.so" && pl=$EV/evil.so
fi
e=$(submit ml --gpus 1 --env PATH="$EV:/usr/bin:/bin" ${pl:+--env LD_PRELOAD="$pl"} -- id -u)
wait_for "$e" succeeded 10
[ "$(spw ml logs "$e" 2>&1)" = "$job_uid" ] && grep -q "^$job_uid id\$" "$EV/ran" && ! grep -q '^0 ' "$EV/ran"
ok $? "a job's PATH${pl:+ and LD_PRELOAD} reach only its own process, nothing of root's: $(sort "$EV/ran" | uniq -c | tr '\n' ' ')"
# Names spillway sets itself are refused at submit, naming them.
printf '{"run": ["true"], "gpus": 1, "env": {"SPILLWAY_PLACEMENT": "x/0"}}' >"$T/res.json"
http POST /v1/jobs ml "$T/res.json"
http_is 400 "SPILLWAY_PLACEMENT is reserved" "a spec whose env sets SPILLWAY_PLACEMENT is refused with 400, naming it"
! spw ml submit --gpus 1 --env D=/tmp -- true >/dev/null 2>"$T/d.err" && contains "$T/d.err" "D is reserved"
ok $? "spillway submit --env D=... is refused, naming D: $(head -c 120 "$T/d.err")"
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

# ---- teams isolated from each other -------------------------------------------
# Two teams on the default run_as would share one user: a job of one could
# read the other's environment from /proc, overwrite its checkpoint and kill
# it.  Refused unless share_run_as; with a user per team, each attack fails.
mkconfig "$T/shared.yaml" 2 never
sed -i '/share_run_as: true/d' "$T/shared.yaml"
refuses "$T/shared.yaml" "teams 'ml' and 'cv' would both run their jobs as user spillway-job"
ok $? "two teams on the default run_as: serve refuses to start" || diag "$(cat "$T/refused.err")"
grep -q "give 'cv' a user of its own (teams: run_as: USER) or set daemon.share_run_as: true" "$T/refused.err"
ok $? "naming both fixes (a run_as per team, or share_run_as: true)" || diag "$(cat "$T/refused.err")"
mkconfig "$T/twoteam.yaml" 2 never
sed -i '/share_run_as: true/d' "$T/twoteam.yaml"
printf 'teams:\n  - name: cv\n    run_as: nobody\n' >>"$T/twoteam.yaml"
start_daemon "$T/twoteam.yaml" "$T/state-2t"
ok $? "with a run_as of its own for cv the daemon starts"
v=$(submit ml --gpus 1 --env API_KEY=ml-secret-key -- sh -c \
    'echo v1 >"$SPILLWAY_CHECKPOINT_DIR/model"; echo $$ >"$SPILLWAY_CHECKPOINT_DIR/pid"; exec sleep 60')
wait_for "$v" running 10
vck=$(realpath "$T/state-2t")/checkpoints/team-ml/$v
wait_until 10 test -s "$vck/pid"
vpid=$(cat "$vck/pid")
tr '\0' '\n' <"/proc/$vpid/environ" | grep -q '^API_KEY=ml-secret-key$'
ok $? "ml's victim job runs with its API key (pid $vpid)"
x=$(submit cv --gpus 1 -- sh -c '
    tr "\0" "\n" <"/proc/$1/environ" 2>/dev/null | grep -q API_KEY && echo "environ read" || echo "environ denied"
    echo evil >"$2/model" 2>/dev/null && echo "ckpt written" || echo "ckpt denied"
    ls "$2" >/dev/null 2>&1 && echo "ckpt listed" || echo "ckpt unlisted"
    ls "$(dirname "$2")" >/dev/null 2>&1 && echo "team dir listed" || echo "team dir unlisted"
    kill -9 "$1" 2>/dev/null && echo "killed" || echo "kill denied"
' attack "$vpid" "$vck")
wait_for "$x" succeeded 10 cv
spw cv logs "$x" >"$T/x.out" 2>&1
grep -q '^environ denied$' "$T/x.out" && grep -q '^ckpt denied$' "$T/x.out" &&
    grep -q '^ckpt unlisted$' "$T/x.out" && grep -q '^team dir unlisted$' "$T/x.out" &&
    grep -q '^kill denied$' "$T/x.out"
ok $? "cv's job cannot read ml's environment, reach its checkpoints or kill it" ||
    diag "$(cat "$T/x.out")"
[ "$(cat "$vck/model")" = v1 ] && is_state "$v" running ml
ok $? "ml's checkpoint is intact and its job still running"
spw admin cancel "$v" >/dev/null 2>&1
wait_for "$v" cancelled 10
stop_daemon

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
