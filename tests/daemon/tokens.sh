#!/bin/sh
# tokens.sh: tokens and the audit log.  `spillway serve` refuses a config
# holding tokens, or a tokens_file, that other users can read (with the
# chmod line); tokens have names, several per team, from the config and a
# private tokens_file; a token marked `revoked: true` and reloaded with
# SIGHUP gets 401 right after, without a restart, while the other tokens
# keep working; a tokens file owned by another user is refused; a tokens
# file rewritten in place (not renamed) and reloaded half-written never
# brings a revoked token back, and a half that does not parse keeps the old
# table; every mutating call (refusals too) lands in the audit log
# with the token's name and never the secret; `spillway audit` (admin only)
# shows it; the CLI reads --token-file and SPILLWAY_TOKEN_FILE and warns
# that --token is visible in ps.  Roles: a `role: viewer` token (a wall
# screen) reads every team's jobs and /metrics but may change nothing (403,
# audited under its name); a viewer with a team sees that team's only.
# TLS: with daemon.tls_cert and tls_key the API is HTTPS only; a key that
# others can read is refused; the CLI verifies the certificate (its CA by
# --ca or SPILLWAY_CA; an unknown CA is refused with the fix); SIGHUP
# serves a renewed certificate to new connections, and a bad pair keeps
# the old one.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 45

ML2_TOKEN=ml-second-token-a61c0e
CI_TOKEN=ml-ci-token-3b27d9f4
WALL_TOKEN=wall-screen-token-5e0a1c
CVWALL_TOKEN=cv-wall-token-77f2b6a0

mkconfig "$T/serve.yaml" 2 never
echo "  tokens_file: tokens.yaml" >>"$T/serve.yaml"
write_tokens() { # write_tokens REVOKED(true|false)
    cat >"$T/tokens.yaml" <<EOT
tokens:
  - {name: ml-ci, team: ml, token: $CI_TOKEN, revoked: $1}
  - {team: ml, token: $ML2_TOKEN}
  - {name: wall, role: viewer, token: $WALL_TOKEN}
  - {name: cv-wall, role: viewer, team: cv, token: $CVWALL_TOKEN}
EOT
}
write_tokens false

# ---- file modes ---------------------------------------------------------------
# serve_refused: `serve` of serve.yaml exits 1 at once (30 s at most, so an
# old build that starts does not hang the file); its stderr in $T/err.
serve_refused() {
    timeout 30 "$SPW" serve --config "$T/serve.yaml" --state-dir "$T/state0" \
        --listen 127.0.0.1:0 >/dev/null 2>"$T/err"
    rc=$?
    [ $rc -eq 1 ] || diag "rc $rc"
    [ $rc -eq 1 ]
}
chmod 644 "$T/serve.yaml"
chmod 600 "$T/tokens.yaml"
serve_refused && contains "$T/err" "chmod 600 $T/serve.yaml" && contains "$T/err" "0644"
ok $? "serve refuses a config with inline tokens that others can read, naming chmod 600" ||
    diag "$(cat "$T/err")"
chmod 600 "$T/serve.yaml"
chmod 640 "$T/tokens.yaml"
serve_refused && contains "$T/err" "chmod 600 $T/tokens.yaml"
ok $? "serve refuses a tokens_file readable by its group" || diag "$(cat "$T/err")"
chmod 600 "$T/tokens.yaml"
chown 65534 "$T/tokens.yaml"
serve_refused && contains "$T/err" "owned by uid 65534" && contains "$T/err" "chown"
ok $? "serve refuses a tokens_file owned by another user, naming chown" || diag "$(cat "$T/err")"
chown 0 "$T/tokens.yaml"

start_daemon "$T/serve.yaml" "$T/state"
ok $? "serve starts once both files are private"

# ---- several named tokens per team ---------------------------------------------
a=$(submit "$CI_TOKEN" --gpus 1 --name from-ci -- sleep 600)
b=$(submit "$ML2_TOKEN" --gpus 1 --name from-ml2 -- sleep 600)
[ -n "$a" ] && [ -n "$b" ] && [ "$(field "$a" 'd["team"]')" = ml ] &&
    [ "$(field "$b" 'd["team"]')" = ml ]
ok $? "two tokens of team ml from the tokens file both submit as ml ($a, $b)"
c=$(submit ml --gpus 1 -- true)
[ -n "$c" ]
ok $? "the inline ml token works beside them"

# ---- the CLI: --token-file, SPILLWAY_TOKEN_FILE, --token warns -----------------
printf '%s\n' "$CV_TOKEN" >"$T/cv.tok"
chmod 600 "$T/cv.tok"
"$SPW" queue --all --token-file "$T/cv.tok" -o json >"$T/out" 2>"$T/err"
rc=$?
json_check "$T/out" "assert all(j['team'] == 'cv' for j in d['jobs'])" && [ $rc -eq 0 ] &&
    [ ! -s "$T/err" ]
ok $? "--token-file FILE sends the token in FILE (cv sees cv's queue)" || diag "$(cat "$T/err")"
SPILLWAY_TOKEN_FILE=$T/cv.tok "$SPW" show "$a" >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "no job"
ok $? "SPILLWAY_TOKEN_FILE is read too (cv cannot see ml's job)"
"$SPW" show "$a" --token "$ML_TOKEN" >"$T/out" 2>"$T/err" &&
    contains "$T/err" "ps" && ! grep -q "$ML_TOKEN" "$T/err" "$T/out"
ok $? "--token still works but warns that it is visible in ps (without printing it)"
for cmd in submit queue show cancel logs costs audit; do
    "$SPW" "$cmd" --help
done >"$T/help" 2>&1
! grep -q -- "--token TOK" "$T/help" && contains "$T/help" "--token-file"
ok $? "no client --help suggests --token; they teach --token-file"

# ---- revocation with SIGHUP ---------------------------------------------------
write_tokens true
kill -HUP "$DPID"
wait_until 5 grep -q "tokens reloaded" "$DLOG"
ok $? "SIGHUP reloads the tokens (the log says so)" || diag "$(cat "$DLOG")"
http GET /v1/jobs "$CI_TOKEN"
http_is 401 "revoked" "the revoked ml-ci token gets 401 right after the HUP"
http GET /v1/jobs "$ML2_TOKEN"
[ "$code" = 200 ]
ok $? "the other token of team ml still works"
kill -0 "$DPID" && [ "$(state_of "$a" ml)" = running ]
ok $? "no restart: the daemon and the job of the revoked token go on"
spw "$CI_TOKEN" cancel "$a" >/dev/null 2>&1
[ $? -eq 1 ]
ok $? "the revoked token cannot cancel its job"

# a broken reload keeps the current table
chmod 644 "$T/tokens.yaml"
kill -HUP "$DPID"
wait_until 5 grep -q "keeping the current tokens" "$DLOG"
ok $? "a HUP with a tokens file others can read is refused; the old table stays"
chmod 600 "$T/tokens.yaml"
http GET /v1/jobs "$ML2_TOKEN"
[ "$code" = 200 ]
ok $? "... and the valid tokens still work"

# A tokens file rewritten in place, as an editor or `cat >` does, and a HUP
# while it is half-written.  The whole file revokes ml-ci on its own line.
cat >"$T/whole.yaml" <<EOT
tokens:
  - name: ml-ci
    team: ml
    token: $CI_TOKEN
    revoked: true
  - {team: ml, token: $ML2_TOKEN}
  - {name: wall, role: viewer, token: $WALL_TOKEN}
  - {name: cv-wall, role: viewer, team: cv, token: $CVWALL_TOKEN}
EOT
cat >"$T/inplace.py" <<'PY'
import os, sys, time
path, whole, cut, ready, go = sys.argv[1:6]
data = open(whole, "rb").read()
cut = data.index(cut.encode())
fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
os.write(fd, data[:cut])
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.05)
os.write(fd, data[cut:])
os.close(fd)
PY
# inplace CUT: rewrites tokens.yaml in place up to CUT, HUPs the daemon
# while it is cut there, waits for the reload to say something, then
# finishes the file.
inplace() {
    rm -f "$T/ready" "$T/go"
    n0=$(grep -c "SIGHUP" "$DLOG")
    python3 "$T/inplace.py" "$T/tokens.yaml" "$T/whole.yaml" "$1" "$T/ready" "$T/go" &
    ip_pid=$!
    wait_until 60 test -e "$T/ready" || diag "the writer did not start"
    kill -HUP "$DPID"
    wait_until 60 sh -c "[ \$(grep -c SIGHUP '$DLOG') -gt $n0 ]"
    http GET /v1/jobs "$CI_TOKEN"
    ip_ci=$code
    http GET /v1/jobs "$ML2_TOKEN"
    ip_ml2=$code
    touch "$T/go"
    wait "$ip_pid"
}
inplace "    revoked: true"
[ "$ip_ci" = 401 ] && contains "$DLOG" "stay revoked"
ok $? "a HUP while the file is cut before ml-ci's 'revoked: true': ml-ci stays revoked (401)" ||
    diag "ml-ci got $ip_ci; $(tail -3 "$DLOG")"
n0=$(grep -c "tokens reloaded" "$DLOG")
kill -HUP "$DPID"
wait_until 20 sh -c "[ \$(grep -c 'tokens reloaded' '$DLOG') -gt $n0 ]"
http GET /v1/jobs "$ML2_TOKEN"
c2=$code
http GET /v1/jobs "$CI_TOKEN"
[ "$c2" = 200 ] && [ "$code" = 401 ]
ok $? "once the file is whole, a HUP loads it: ml-2 works, ml-ci is still 401"
k0=$(grep -c "keeping the current tokens" "$DLOG")
inplace "token: $ML2_TOKEN}"
[ "$ip_ci" = 401 ] && [ "$ip_ml2" = 200 ] &&
    [ "$(grep -c "keeping the current tokens" "$DLOG")" -gt "$k0" ]
ok $? "a HUP while the file is cut mid-entry: the old table stays (ml-ci 401, ml-2 200)" ||
    diag "ml-ci $ip_ci, ml-2 $ip_ml2; $(grep SIGHUP "$DLOG")"

# ---- the audit log ------------------------------------------------------------
spw ml cancel "$b" >/dev/null 2>&1
spw cv cancel "$b" >/dev/null 2>&1
http POST /v1/jobs/j-000001/cancel "wrong-token-aaaaaaaaaaaa"
spw admin admin node local/0 down >/dev/null 2>&1
spw admin admin node local/0 up >/dev/null 2>&1
spw admin audit -o json >"$T/audit.json" 2>"$T/err"
ok $? "spillway audit as admin exits 0" || diag "$(cat "$T/err")"
json_check "$T/audit.json" "
E = d['entries']
def has(**kw):
    return any(all(e.get(k) == v for k, v in kw.items()) for e in E)
assert has(action='submit', token='ml-ci', team='ml', target='$a', status=201), E
assert has(action='submit', token='ml-2', team='ml', target='$b', status=201), E
assert has(action='submit', token='ml-1', team='ml', target='$c', status=201), E
assert has(action='cancel', token='ml-1', team='ml', target='$b', status=200), E
assert has(action='cancel', token='cv-1', team='cv', target='$b', status=404), E
assert has(action='cancel', token='ml-ci', target='$a', status=401), E
assert has(action='cancel', token=None, target='j-000001', status=401), E
assert has(action='node.down', token='admin-1', target='local/0', status=200), E
assert has(action='node.up', token='admin-1', target='local/0', status=200), E
assert has(action='tokens.reload', token='daemon', status=200), E
assert has(action='tokens.reload', token='daemon', status=500), E
"
ok $? "the log holds submits, cancels (refused ones too), node down/up and reloads, by token name"
! grep -q -e "$ML_TOKEN" -e "$CV_TOKEN" -e "$CI_TOKEN" -e "$ML2_TOKEN" -e "$ADMIN_TOKEN" \
    -e wrong-token "$T/audit.json"
ok $? "no token secret is in the audit log"
python3 - "$T/state/spillway.db" "$ML_TOKEN" "$CI_TOKEN" "$ADMIN_TOKEN" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select * from audit").fetchall()
text = repr(rows)
assert len(rows) >= 10, rows
assert not any(t in text for t in sys.argv[2:]), "a secret is in the table"
PY
ok $? "the rows are in the audit table of the state dir's SQLite file, without secrets"

spw admin audit --team cv -o json >"$T/cv.json"
json_check "$T/cv.json" "assert d['entries'] and all(e['team'] == 'cv' for e in d['entries'])"
ok $? "spillway audit --team cv shows cv's entries only"
spw admin audit --since 1h >"$T/table" 2>&1 && contains "$T/table" "node.down" &&
    contains "$T/table" "ml-ci"
ok $? "spillway audit --since 1h prints a table"
# ---- roles: viewer -----------------------------------------------------------
spw "$WALL_TOKEN" queue -o json >"$T/wall.json" &&
    json_check "$T/wall.json" "assert any(j['team'] == 'ml' for j in d['jobs']), d"
ok $? "a viewer token without a team reads every team's queue"
spw "$CVWALL_TOKEN" queue -o json >"$T/cvwall.json" &&
    json_check "$T/cvwall.json" "assert not any(j['team'] == 'ml' for j in d['jobs']), d"
ok $? "a viewer token of team cv sees none of ml's jobs"
vj=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["id"])' "$T/wall.json")
spw "$WALL_TOKEN" submit --gpus 1 -- true >/dev/null 2>"$T/err1"; s1=$?
spw "$WALL_TOKEN" cancel "$vj" >/dev/null 2>"$T/err2"; s2=$?
[ $s1 -eq 1 ] && [ $s2 -eq 1 ] && contains "$T/err1" "403" && contains "$T/err1" "read-only" &&
    contains "$T/err2" "403"
ok $? "the viewer may not submit or cancel (403): $(cat "$T/err1")"
spw admin audit -o json >"$T/audit-wall.json" &&
    json_check "$T/audit-wall.json" "
assert any(e['token'] == 'wall' and e['status'] == 403 for e in d['entries']), d"
ok $? "the viewer's refused calls are in the audit log under its name"

spw ml audit >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "403"
ok $? "a team token cannot read the audit log (403)"

stop_daemon "$DPID"
ok $? "the daemon stops on SIGTERM"

# ---- TLS ------------------------------------------------------------------
# A CA, and certificates for 127.0.0.1 (an IP entry) signed by it: the
# first, a renewal (another serial), and a key that belongs to neither.
(
    cd "$T" || exit 1
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
        -subj /CN=spillway-test-ca
    for n in 1 2; do
        openssl req -newkey rsa:2048 -nodes -keyout "tls$n.key" -out "tls$n.csr" -subj /CN=spillway
        printf 'subjectAltName=IP:127.0.0.1\n' >"tls$n.ext"
        openssl x509 -req -in "tls$n.csr" -CA ca.pem -CAkey ca.key -set_serial "$((4660 + n))" \
            -days 2 -extfile "tls$n.ext" -out "tls$n.pem"
    done
    openssl req -newkey rsa:2048 -nodes -keyout other.key -out other.csr -subj /CN=other
    cp tls1.pem cert.pem && cp tls1.key key.pem && chmod 600 key.pem
) >"$T/openssl.log" 2>&1
ok $? "openssl made a CA and two certificates for 127.0.0.1" || diag "$(cat "$T/openssl.log")"
mkconfig "$T/tls.yaml" 2 never
printf '  tls_cert: cert.pem\n  tls_key: key.pem\n' >>"$T/tls.yaml"
chmod 644 "$T/key.pem"
chmod 600 "$T/tls.yaml"
"$SPW" serve --config "$T/tls.yaml" --state-dir "$T/tls-state" --listen 127.0.0.1:0 \
    >/dev/null 2>"$T/tls-refused.log" </dev/null
[ $? -ne 0 ] && contains "$T/tls-refused.log" "chmod 600 $T/key.pem"
ok $? "a TLS key others can read is refused: $(cat "$T/tls-refused.log")"
chmod 600 "$T/key.pem"
start_daemon "$T/tls.yaml" "$T/tls-state" && case $URL in https://*) true ;; *) false ;; esac
ok $? "with tls_cert and tls_key the daemon listens on $URL"
TLS_URL=$URL
j=$(SPILLWAY_CA=$T/ca.pem submit ml --gpus 1 -- true) &&
    SPILLWAY_CA=$T/ca.pem wait_for "$j" succeeded 10 &&
    spw ml show "$j" --ca "$T/ca.pem" -o json >"$T/tls-show.json" &&
    json_check "$T/tls-show.json" "assert d['state'] == 'succeeded'"
ok $? "submit, wait and show over HTTPS with --ca / SPILLWAY_CA"
spw ml queue >"$T/out" 2>"$T/err"
[ $? -eq 2 ] && contains "$T/err" "not trusted" && contains "$T/err" "--ca"
ok $? "without the CA the CLI refuses the certificate and says how to trust it: $(cat "$T/err")"
spw ml queue --ca "$T/ca.pem" --url "https://localhost:${TLS_URL##*:}" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && contains "$T/err" "not trusted"
ok $? "a certificate for 127.0.0.1 is refused for the name localhost: $(cat "$T/err")"
spw ml queue --url "http://${TLS_URL#https://}" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && contains "$T/err" "cannot reach the daemon at http://"
ok $? "plain http:// gets no answer from an HTTPS daemon: $(cat "$T/err")"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/ca.pem" "$TLS_URL/healthz")
[ "$code" = 200 ]
ok $? "curl, checking the certificate, reads /healthz (HTTP $code)"
serial() { echo | openssl s_client -connect "${TLS_URL#https://}" -CAfile "$T/ca.pem" \
    2>/dev/null | openssl x509 -noout -serial; }
[ "$(serial)" = serial=1235 ]
ok $? "the first certificate is served ($(serial))"
# A renewal: the files are replaced (by rename, as certbot does) and SIGHUP.
cp "$T/tls2.pem" "$T/cert.new" && mv "$T/cert.new" "$T/cert.pem"
cp "$T/tls2.key" "$T/key.new" && chmod 600 "$T/key.new" && mv "$T/key.new" "$T/key.pem"
kill -HUP "$DPID"
renewed() { [ "$(serial)" = serial=1236 ]; }
wait_until 10 renewed && contains "$DLOG" "new connections get the certificate"
ok $? "after SIGHUP new connections get the renewed certificate ($(serial))"
spw ml queue --ca "$T/ca.pem" >/dev/null
ok $? "the CLI works against the renewed certificate"
cp "$T/other.key" "$T/key.new" && chmod 600 "$T/key.new" && mv "$T/key.new" "$T/key.pem"
kill -HUP "$DPID"
refused() { contains "$DLOG" "keeping the current certificate"; }
wait_until 10 refused && renewed && spw ml queue --ca "$T/ca.pem" >/dev/null
ok $? "a key that does not match is refused on SIGHUP, and the renewed pair stays: $(grep 'current certificate' "$DLOG")"
stop_daemon "$DPID"
ok $? "the HTTPS daemon stops on SIGTERM"
done_testing
