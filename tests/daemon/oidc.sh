#!/bin/sh
# oidc.sh: OpenID Connect tokens (daemon.oidc, docs/identity.md) against a
# real OpenID provider: npm's oidc-provider 8 (OpenID Certified), run by
# node from tests/daemon/oidc_idp.mjs, which hands out RFC 9068 JWT access
# tokens (client_credentials with a resource indicator; one client per
# user, each with its groups claim).  One provider process (two issuers)
# and one daemon.  A token of group ml submits as team ml and the audit log
# names its user; a viewer group reads but gets 403 on submit and cancel;
# an admin group cancels another team's job; static tokens keep working
# beside OIDC; a token for another audience, from another issuer, expired,
# with an altered payload, with alg none, or of a user whose groups map to
# nothing gets 401 with a sentence; a token signed by a key the daemon has
# not seen (a key rotation) makes it fetch the JWKS again, once, and a
# forged unknown kid cannot make it fetch on every request.
# oidc-provider is installed once with npm into $SPW_NPM_DIR (default
# ~/.cache/spillway-tests/oidc-provider-8, with the provider's two test RSA
# keys, made on the first run); without node, or when npm's
# registry cannot be reached, the file skips itself saying so.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"

NPM_DIR=${SPW_NPM_DIR:-$HOME/.cache/spillway-tests/oidc-provider-8}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "1..0 # skip node and npm are not installed (make deps-test installs Debian's nodejs and npm)"
    exit 0
fi
if [ ! -f "$NPM_DIR/node_modules/oidc-provider/package.json" ]; then
    mkdir -p "$NPM_DIR" &&
        timeout 180 npm install --prefix "$NPM_DIR" --no-audit --no-fund --silent \
            oidc-provider@8.8.1 >"$T/npm.log" 2>&1
    if [ ! -f "$NPM_DIR/node_modules/oidc-provider/package.json" ]; then
        echo "1..0 # skip cannot install npm's oidc-provider into $NPM_DIR (is registry.npmjs.org reachable?): $(tail -n 2 "$T/npm.log" | tr '\n' ' ')"
        exit 0
    fi
fi
plan 17

# ---- the provider and the daemon, started side by side ----------------------------
# The provider's script runs from the npm directory, where `import
# 'oidc-provider'` resolves.  The daemon needs the issuer's URL in its config
# but fetches nothing from it before the first token, so it starts while node
# loads.
P1=$(free_port)
ISS=http://127.0.0.1:$P1
cp "$(dirname "$0")/oidc_idp.mjs" "$NPM_DIR/idp-$$.mjs"
env SPW_DTEST="$T" node "$NPM_DIR/idp-$$.mjs" "$T/idp.ports" "$T/k2.flag" "$T/jwks.log" "$P1" \
    "$NPM_DIR/test-keys.json" >"$T/idp.log" 2>&1 &
XPIDS="$XPIDS $!"
mkconfig "$T/serve.yaml" 2 never
cat >>"$T/serve.yaml" <<EOT
  oidc:
    issuer: $ISS
    audience: spillway
    leeway_s: 0
    teams: {ml: ml}
    roles: {wall-screens: viewer, platform: admin}
EOT
start_daemon "$T/serve.yaml" "$T/state" || exit 1
wait_until 30 test -s "$T/idp.ports" || diag "the provider did not start:" "$(cat "$T/idp.log")"
rm -f "$NPM_DIR/idp-$$.mjs"
read -r P1 P2 <"$T/idp.ports"

# token CLIENT [RESOURCE] [PORT]: an access token from the provider.
token() {
    curl -s -m 10 -u "$1:secret-$1-0123456789abcdef" -d grant_type=client_credentials \
        -d scope=api -d "resource=${2:-urn:spillway}" "http://127.0.0.1:${3:-$P1}/token" |
        sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p'
}
SHORT=$(token short)   # lives 1 s: checked last, when it has expired
ML_JWT=$(token ml-user)
WALL_JWT=$(token wall)
OPS_JWT=$(token ops)
[ -n "$ML_JWT" ] && [ -n "$WALL_JWT" ] && [ -n "$OPS_JWT" ] && [ -n "$SHORT" ]
ok $? "oidc-provider issues JWT access tokens (issuer $ISS)" || diag "$(cat "$T/idp.log")"

j=$(submit "$ML_JWT" --gpus 1 --name by-oidc -- sleep 600)
[ -n "$j" ] && [ "$(field "$j" 'd["team"]')" = ml ]
ok $? "a token of group ml submits as team ml ($j)"
jobs_fetched=$(wc -l <"$T/jwks.log")
t_f1=$(now_ms)   # the first fetch is before this instant
[ "$jobs_fetched" -eq 1 ]
ok $? "the JWKS was fetched once, through the discovery document's jwks_uri" ||
    diag "fetched $jobs_fetched times"

k=$(submit ml --gpus 1 --name by-static -- sleep 600)
[ -n "$k" ] && [ "$(field "$k" 'd["team"]')" = ml ]
ok $? "a static token of team ml still submits beside OIDC ($k)"

http GET /v1/jobs "$WALL_JWT"
http_is 200 "$j" "a viewer group's token reads the jobs"
spw "$WALL_JWT" submit --gpus 1 -- true >"$T/out" 2>"$T/err"
[ $? -ne 0 ] && contains "$T/err" "read-only"
ok $? "a viewer group's token cannot submit (403, read-only)" || diag "$(cat "$T/err")"
http POST "/v1/jobs/$j/cancel" "$WALL_JWT"
http_is 403 "read-only" "a viewer group's token cannot cancel"

http POST "/v1/jobs/$k/cancel" "$OPS_JWT"
http_is 200 "$k" "a token of group platform (role admin) cancels team ml's job"

# ---- refusals ------------------------------------------------------------------------
http GET /v1/jobs "$(token nobody)"
http_is 401 "none of its 'groups'" "a valid token whose groups map to nothing: 401 saying so"
http GET /v1/jobs "$(token ml-user urn:other)"
http_is 401 "another audience" "a token for another audience: 401"
http GET /v1/jobs "$(token ml-user urn:spillway "$P2")"
http_is 401 "not by daemon.oidc.issuer" "a token from another issuer (same keys): 401"
# The payload rewritten to claim group platform, the signature kept.
FORGED=$(printf '%s' "$ML_JWT" | python3 -c '
import base64, json, sys
h, p, s = sys.stdin.read().split(".")
c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
c["groups"] = ["platform"]
p = base64.urlsafe_b64encode(json.dumps(c).encode()).decode().rstrip("=")
print(h + "." + p + "." + s)')
http GET /v1/jobs "$FORGED"
http_is 401 "signature does not verify" "a token whose claims were altered: 401"
NONE=$(printf '%s' "$FORGED" | python3 -c '
import base64, sys
h, p, s = sys.stdin.read().split(".")
print(base64.urlsafe_b64encode(b"{\"alg\":\"none\",\"typ\":\"JWT\"}").decode().rstrip("=") + "." + p + ".")')
http GET /v1/jobs "$NONE"
http_is 401 "'none' never" "an unsigned token (alg none): 401"

# ---- a key rotation ------------------------------------------------------------------
# An unknown kid fetches the JWKS again only a second after the last fetch
# (REFETCH_MIN_S): on a fast run the checks above take less than that.
touch "$T/k2.flag"
K2_JWT=$(token ml-user urn:spillway:k2)
wait_until 3 sh -c "[ \$(date +%s%3N) -ge $((t_f1 + 1100)) ]"
t_k2=$(now_ms)
http GET /v1/jobs "$K2_JWT"
c1=$code
http GET /v1/jobs "$K2_JWT"
[ "$c1" = 200 ] && [ "$code" = 200 ] && [ "$(wc -l <"$T/jwks.log")" -eq 2 ]
ok $? "a token signed with a new key (kid k2) makes the daemon fetch the JWKS once more" ||
    diag "status $c1 then $code; JWKS fetched $(wc -l <"$T/jwks.log") times"

# A kid the provider never had: one more fetch at most (a second after the
# last), then none for the same kid.
BOGUS=$(printf '%s' "$ML_JWT" | python3 -c '
import base64, json, sys
h, p, s = sys.stdin.read().split(".")
print(base64.urlsafe_b64encode(b"{\"alg\":\"RS256\",\"kid\":\"nope\"}").decode().rstrip("=") + "." + p + "." + s)')
wait_until 3 sh -c "[ \$(date +%s%3N) -ge $((t_k2 + 1100)) ]"
http GET /v1/jobs "$BOGUS"
c1=$code n1=$(wc -l <"$T/jwks.log")
http GET /v1/jobs "$BOGUS"
[ "$c1" = 401 ] && [ "$n1" -eq 3 ] && [ "$(wc -l <"$T/jwks.log")" -eq 3 ] &&
    contains "$T/http.body" "does not have"
ok $? "a token naming an unknown kid: 401; the JWKS is fetched once for it, not on every request" ||
    diag "status $c1 then $code; JWKS fetched $n1 then $(wc -l <"$T/jwks.log") times"

# ---- expiry and the audit log ------------------------------------------------------------
wait_until 10 sh -c "[ \$(date +%s) -gt $(printf '%s' "$SHORT" | python3 -c '
import base64, json, sys
p = sys.stdin.read().split(".")[1]
print(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["exp"])') ]"
http GET /v1/jobs "$SHORT"
http_is 401 "expired" "an expired token: 401"

spw admin audit -o json >"$T/audit.json" 2>"$T/err"
json_check "$T/audit.json" "
rows = d['entries']
assert any(r['token'] == 'oidc:ml-user' and r['action'] == 'submit' and r['status'] == 201
           and r['team'] == 'ml' for r in rows), rows
assert any(r['token'] == 'oidc:wall' and r['action'] == 'cancel' and r['status'] == 403
           for r in rows), rows
assert any(r['token'] == 'oidc:ops' and r['action'] == 'cancel' and r['status'] == 200
           for r in rows), rows
"
ok $? "the audit log names the OIDC users (oidc:ml-user's submit, oidc:wall's refusal, oidc:ops's cancel)"
