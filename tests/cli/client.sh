#!/bin/sh
# client.sh: the client commands (submit, queue, ...) without a daemon:
# their --help texts, usage errors (exit 2), and a daemon that cannot be
# reached (exit 2 with a hint).  With a daemon they are tested elsewhere.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 28

cmds="submit queue show cancel explain logs pools costs admin"
for c in $cmds; do
    run_spw "$T/out" "$T/err" "$c" --help
    [ "$rc" -eq 0 ] && contains "$T/out" "usage: spillway $c" && contains "$T/out" "Examples:" &&
        contains "$T/out" "Exit status:"
    ok $? "spillway $c --help prints its usage, examples and exit statuses"
done

run_spw "$T/out" "$T/err" help submit
[ "$rc" -eq 0 ] && contains "$T/out" "-- COMMAND [ARG...]"
ok $? "spillway help submit prints the submit usage"

bad=0
for c in show cancel explain logs; do
    run_spw "$T/out" "$T/err" "$c"
    [ "$rc" -eq 2 ] && contains "$T/err" "missing the job id" || { diag "$c: status $rc"; bad=1; }
done
ok $bad "show, cancel, explain and logs without an id exit 2 and say the id is missing"

run_spw "$T/out" "$T/err" admin preempt
[ "$rc" -eq 2 ] && contains "$T/err" "missing the instance id"
ok $? "admin preempt without an id exits 2 (status $rc)"

run_spw "$T/out" "$T/err" admin frobnicate
[ "$rc" -eq 2 ] && contains "$T/err" "unknown action 'frobnicate'"
ok $? "an unknown admin action exits 2 and names it (status $rc)"

run_spw "$T/out" "$T/err" queue --no-such-option
[ "$rc" -eq 2 ] && contains "$T/err" "unknown option"
ok $? "an unknown option exits 2 (status $rc)"

run_spw "$T/out" "$T/err" queue -o yaml
[ "$rc" -eq 2 ] && contains "$T/err" "-o takes 'table' or 'json'"
ok $? "-o yaml exits 2 (status $rc)"

run_spw "$T/out" "$T/err" submit
[ "$rc" -eq 2 ] && contains "$T/err" "missing the job"
ok $? "submit with nothing to submit exits 2 (status $rc)"

run_spw "$T/out" "$T/err" submit --gpus 2
[ "$rc" -eq 2 ] && contains "$T/err" "missing '-- COMMAND"
ok $? "submit --gpus 2 without a command exits 2 (status $rc)"

run_spw "$T/out" "$T/err" submit --gpus 2 --
[ "$rc" -eq 2 ] && contains "$T/err" "missing the command after '--'"
ok $? "submit --gpus 2 -- with nothing after -- exits 2 (status $rc)"

run_spw "$T/out" "$T/err" submit -- python train.py
[ "$rc" -eq 2 ] && contains "$T/err" "--gpus N is required"
ok $? "submit -- COMMAND without --gpus exits 2 (status $rc)"

run_spw "$T/out" "$T/err" submit --gpus 0 -- true
[ "$rc" -eq 2 ] && contains "$T/err" "--gpus takes a whole number"
ok $? "submit --gpus 0 exits 2 (status $rc)"

run_spw "$T/out" "$T/err" submit "$T/no-such-job.yaml"
[ "$rc" -eq 1 ] && contains "$T/err" "$T/no-such-job.yaml"
ok $? "submit of a missing spec file exits 1 and names the file (status $rc)"

# A port nothing listens on: bind one, then let it go.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null) || port=9
url=http://127.0.0.1:$port

run_spw "$T/out" "$T/err" queue --url "$url"
[ "$rc" -eq 2 ] && contains "$T/err" "spillway: cannot reach the daemon at $url" &&
    contains "$T/err" "is \`spillway serve\` running? set --url or SPILLWAY_URL"
ok $? "a daemon that is not there: exit 2, the URL and the hint (status $rc)"

bad=0
export SPILLWAY_URL="$url"
for args in "submit --gpus 1 -- true" "show j-1" "cancel j-1" "explain j-1" "logs j-1" \
    "logs -f j-1" "pools" "costs" "admin preempt emu-i-1"; do
    # shellcheck disable=SC2086
    run_spw "$T/out" "$T/err" $args
    [ "$rc" -eq 2 ] && contains "$T/err" "cannot reach the daemon at $url" || {
        diag "$args: status $rc"
        bad=1
    }
done
unset SPILLWAY_URL
ok $bad "every client command honours SPILLWAY_URL and exits 2 when it cannot reach it"

export SPILLWAY_TOKEN=env-secret-0123
run_spw "$T/out" "$T/err" show j-1 --url "$url"
[ "$rc" -eq 2 ] && ! grep -q "secret" "$T/out" "$T/err" &&
    run_spw "$T/out" "$T/err" show j-1 --url "$url" --token arg-secret-4567 &&
    [ "$rc" -eq 2 ] && ! grep -q "secret" "$T/out" "$T/err"
unset SPILLWAY_TOKEN
ok $? "the token is never printed"


# ---- client contexts (~/.config/spillway/config.yaml) ----------------------
mkdir -p "$T/cfg"
cat >"$T/cfg/config.yaml" <<'EOF'
# two daemons, neither up: the URL in the error says which one was asked
contexts:
  prod: {url: "http://127.0.0.1:9", token_file: ~/prod.token}
  lab: {url: "http://127.0.0.1:7"}
current_context: prod
EOF
printf 'prod-token\n' >"$T/prod.token" && chmod 600 "$T/prod.token"
export SPILLWAY_CONFIG="$T/cfg/config.yaml"
env -u SPILLWAY_URL -u SPILLWAY_TOKEN -u SPILLWAY_TOKEN_FILE HOME="$T" "$SPW" queue >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 2 ] && contains "$T/err" "http://127.0.0.1:9"
ok $? "the current context's url is used (status $rc)"
run_spw "$T/out" "$T/err" context use lab
"$SPW" context list >"$T/list" 2>&1
[ "$rc" -eq 0 ] && grep -q "^\* lab  *http://127.0.0.1:7$" "$T/list" && grep -q "^  prod " "$T/list" &&
    grep -q "^current_context: lab$" "$T/cfg/config.yaml" && grep -q "^# two daemons" "$T/cfg/config.yaml"
ok $? "context use lab makes it current, the rest of the file kept" || diag "$(cat "$T/list" "$T/err")"
env -u SPILLWAY_URL HOME="$T" SPILLWAY_CONTEXT=prod "$SPW" queue >"$T/out" 2>"$T/err"
contains "$T/err" "http://127.0.0.1:9" &&
    env SPILLWAY_URL=http://127.0.0.1:5 "$SPW" queue >"$T/out" 2>"$T/err2"; contains "$T/err2" "http://127.0.0.1:5"
ok $? "SPILLWAY_CONTEXT picks another context; SPILLWAY_URL wins over both"
env SPILLWAY_CONTEXT=nope "$SPW" queue >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 2 ] && contains "$T/err" "no context 'nope'"
ok $? "an unknown context is exit 2, naming it (status $rc)"
unset SPILLWAY_CONFIG

done_testing
