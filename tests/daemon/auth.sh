#!/bin/sh
# auth.sh: team isolation and bearer tokens.  Team cv's token cannot see
# (404), list (its queue has none of ml's jobs; ?team=ml is 403), cancel
# (404), read the logs of or explain team ml's jobs (404), nor submit for ml
# (403); no token or an unknown one is 401; the admin sees both teams; the
# tokens never appear in the daemon's log.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 29

WRONG_TOKEN=wrong-secret-token-9e4c27
mkconfig "$T/serve.yaml" 2 never
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts with tokens for ml, cv and an admin"

m=$(submit ml --gpus 1 --name ml-private -- sh -c 'echo ml-secret-output; echo ml-err >&2; exec sleep 120')
c=$(submit cv --gpus 1 --name cv-job -- sleep 0.2)
wait_for "$m" running 5 && [ -n "$c" ]
ok $? "ml and cv each submit a job ($m, $c)"
[ "$(field "$m" 'd["team"]')" = ml ] && [ "$(field "$c" 'd["team"]' cv)" = cv ]
ok $? "each job is filed under its token's team"

# ---- what cv cannot do with ml's job ---------------------------------------
http GET "/v1/jobs/$m" cv
http_is 404 "no job" "cv: GET ml's job is 404"
spw cv show "$m" >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && ! grep -q "ml-private" "$T/out" "$T/err"
ok $? "cv: spillway show of ml's job exits 1 and reveals nothing"

spw cv queue --all -o json >"$T/cvq.json"
json_check "$T/cvq.json" "
ids = [j['id'] for j in d['jobs']]
assert '$m' not in ids, ids
assert ids == ['$c'], ids
assert all(j['team'] == 'cv' for j in d['jobs'])"
ok $? "cv: queue --all lists only cv's job"
http GET "/v1/jobs?team=ml" cv
http_is 403 "ml" "cv: GET /v1/jobs?team=ml is 403"
spw cv queue --team ml >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "403"
ok $? "cv: spillway queue --team ml exits 1 with the 403"

http POST "/v1/jobs/$m/cancel" cv
http_is 404 "no job" "cv: cancel of ml's job is 404"
spw cv cancel "$m" >/dev/null 2>&1
[ $? -eq 1 ] && [ "$(state_of "$m")" = running ]
ok $? "cv: spillway cancel exits 1 and ml's job keeps running"

http GET "/v1/jobs/$m/logs" cv
http_is 404 "no job" "cv: stdout of ml's job is 404"
! grep -q "ml-secret-output" "$T/http.body"
ok $? "... and the body has none of the job's output"
http GET "/v1/jobs/$m/logs?stream=err" cv
http_is 404 "no job" "cv: stderr of ml's job is 404"
spw cv logs "$m" >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && ! grep -q "ml-secret-output" "$T/out" "$T/err"
ok $? "cv: spillway logs exits 1 without the output"
http GET "/v1/jobs/$m/explain" cv
http_is 404 "no job" "cv: explain of ml's job is 404"

printf 'team: ml\ngpus: 1\nrun: [true]\n' >"$T/forml.yaml"
http POST /v1/jobs cv "$T/forml.yaml"
http_is 403 "team" "cv: a spec with team: ml is 403"
spw cv submit --team ml --gpus 1 -- true >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "403"
ok $? "cv: spillway submit --team ml exits 1 with the 403"

# ---- what ml and the admin can ---------------------------------------------
spw ml logs "$m" >"$T/out" 2>&1 && contains "$T/out" "ml-secret-output"
ok $? "ml reads its own job's logs"
spw admin queue --all -o json >"$T/adq.json"
json_check "$T/adq.json" "
ids = sorted(j['id'] for j in d['jobs'])
assert ids == sorted(['$m', '$c']), ids"
ok $? "the admin lists both teams' jobs"
spw admin show "$m" >/dev/null 2>&1 && spw admin explain "$c" >/dev/null 2>&1
ok $? "the admin shows and explains either team's jobs"
spw cv costs -o json >"$T/cvcost.json"
json_check "$T/cvcost.json" 'assert [t["team"] for t in d["teams"]] == ["cv"], d["teams"]'
ok $? "cv: costs cover team cv only"
http POST /v1/admin/instances/emu-i-000001/preempt cv
http_is 403 "admin" "cv: an admin endpoint is 403"

# ---- tokens ---------------------------------------------------------------
http GET /v1/jobs none
[ "$code" = 401 ] && grep -qi '^WWW-Authenticate: *Bearer' "$T/http.head"
ok $? "no token: 401 with WWW-Authenticate: Bearer" || diag "status $code" "$(cat "$T/http.head")"
http GET "/v1/jobs/$m" "$WRONG_TOKEN"
http_is 401 "token" "an unknown token: 401"
spw "$WRONG_TOKEN" queue >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "401"
ok $? "the client with an unknown token exits 1 with the 401"
http GET /healthz none
http_is 200 '"ok"' "GET /healthz needs no token"

spw ml cancel "$m" >/dev/null 2>&1 && wait_for "$m" cancelled 5
ok $? "ml cancels its own job"
stop_daemon "$DPID"
found=
for tok in "$ML_TOKEN" "$CV_TOKEN" "$ADMIN_TOKEN" "$WRONG_TOKEN"; do
    grep -rlF "$tok" "$T"/serve.*.log "$T"/serve.*.out "$T/state" >/dev/null 2>&1 && found="$found $tok"
done
[ -z "$found" ]
ok $? "no token (nor the wrong one) is in the daemon's stderr, stdout or state dir" || diag "found:$found"
no_strays "no job process is left"

done_testing
