#!/bin/sh
# deb.sh: a new user's first hour, in one file.  `make deb` builds a Debian
# package of the tree; dpkg installs it into a scratch root (dpkg --root,
# the maintainer scripts run against it); the files, the spillway-job user
# and the installed binary and man page are checked.  Then the service runs
# as systemd would run it: the installed unit's ExecStart (its paths moved
# into the root), with the installed example config as
# /etc/spillway/spillway.yaml, edited to serve HTTPS with a self-signed
# certificate made here by openssl and to take its users from a test
# OpenID provider (npm's oidc-provider, tests/daemon/oidc_idp.mjs, with a
# public client "dashboard").  `spillway submit` over HTTPS, verifying that
# certificate, with a token from the provider, is accepted.  A headless
# Chromium (tests/ui/browse.py) opens the dashboard over HTTPS, clicks
# "Log in with ...", signs in as alice on the provider's own login page,
# lands back on the dashboard as alice of team ml (authorization code +
# PKCE, exchanged by the page) and sees the submitted job; a forged state is
# refused, logout forgets the token, an expired token sends the user back to
# log in.  The service stops on SIGTERM and dpkg --purge removes it all.
# Without chromium, node or npm's oidc-provider (make deps-test installs
# it into ~/.cache/spillway-tests), the service part is
# skipped saying which is missing.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
for tool in dpkg dpkg-deb useradd; do
    command -v $tool >/dev/null 2>&1 || { echo "1..0 # skip no $tool"; exit 0; }
done
plan 13

# The provider starts first (node loads it while the package is built),
# when everything the service part needs is here; the browser starts after
# the build, and its first step waits until the service and the provider
# answer.
NPM_DIR=${SPW_NPM_DIR:-$HOME/.cache/spillway-tests/oidc-provider-8}
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
missing=
command -v node >/dev/null 2>&1 || missing="node (make deps-test installs nodejs)"
[ -f "$NPM_DIR/node_modules/oidc-provider/package.json" ] ||
    missing="npm's oidc-provider in $NPM_DIR (make deps-test installs it)"
[ -n "$CHROMIUM" ] || missing="chromium (Debian package chromium; make deps-test)"
command -v openssl >/dev/null 2>&1 || missing="openssl"
if [ -z "$missing" ]; then
    export CHROMIUM
    DP=$(free_port)
    P1=$(free_port)
    D=https://127.0.0.1:$DP
    ISS=http://127.0.0.1:$P1
    # The provider's script runs from the npm directory (where `import
    # 'oidc-provider'` resolves), with the dashboard's address to send
    # browsers back to.
    cp "$(dirname "$0")/../daemon/oidc_idp.mjs" "$NPM_DIR/idp-$$.mjs"
    env SPW_DTEST="$T" node "$NPM_DIR/idp-$$.mjs" "$T/idp.ports" "$T/k2" "$T/jwks.log" "$P1" \
        "$NPM_DIR/test-keys.json" "$D/ui/" >"$T/idp.log" 2>&1 &
    XPIDS="$XPIDS $!"
    # The operator's certificate for 127.0.0.1: self-signed, its own CA.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$T/tls.key" -out "$T/tls.pem" >"$T/openssl.log" 2>&1
    # Chromium trusts exactly this certificate's key.
    spki=$(openssl x509 -in "$T/tls.pem" -pubkey -noout | openssl pkey -pubin -outform der |
        openssl dgst -sha256 -binary | base64)
    # The user's part.  The job the CLI submits is found by its name; each
    # wait is on what the page shows (it polls every 3 s).
    ready="document.body.dataset.ready === '1' && !document.getElementById('main').hidden"
    row="[...document.querySelectorAll('tr[data-id]')].find(r => r.textContent.includes('from-the-cli'))"
    up="fetch('$D/healthz', {mode: 'no-cors'}).then(() => fetch('$ISS/jwks', {mode: 'no-cors'})).then(() => true, () => false)"
    cat >"$T/steps.json" <<JSON
[
 {"name": "wait-service", "wait": "$up", "timeout_s": 120},
 {"name": "open", "url": "$D/ui", "wait": "!document.getElementById('oidc').hidden",
  "extract": "[document.getElementById('oidc-login').textContent, document.getElementById('main').hidden, location.protocol, window.isSecureContext]"},
 {"name": "to-provider", "click": "#oidc-login", "wait": "location.origin === '$ISS' && !!document.querySelector('input[name=login]')",
  "extract": "(document.querySelector('input[name=login]').value = 'alice', document.querySelector('input[name=password]').value = 'any', location.pathname)"},
 {"name": "provider-login", "click": "button[type=submit]", "timeout_s": 30,
  "wait": "location.origin === '$D' && $ready && !!$row && !!(state.data.series && state.data.series.caller)",
  "extract": "({who: document.getElementById('who').textContent, href: location.href, caller: state.data.series.caller, job: $row.dataset.id, session: (sessionStorage.getItem('spillway-token') || '').split('.').length, exp: Number(sessionStorage.getItem('spillway-token-exp')) - Date.now(), pending: sessionStorage.getItem('spillway-oidc'), local: localStorage.length})"},
 {"name": "explain", "extract": "(document.querySelector('[data-explain=\"' + $row.dataset.id + '\"]').click(), 1)"},
 {"name": "cancel-button", "wait": "!!document.getElementById('job-logs')",
  "extract": "(window.jwt = sessionStorage.getItem('spillway-token'), !!document.getElementById('job-cancel'))"},
 {"name": "expire", "extract": "(sessionStorage.setItem('spillway-token-exp', String(Date.now() - 1000)), poll(), 1)"},
 {"name": "expired", "wait": "!document.getElementById('login').hidden",
  "extract": "[document.getElementById('login-error').textContent, sessionStorage.getItem('spillway-token'), document.getElementById('oidc').hidden]"},
 {"name": "viewer", "extract": "(signIn('@WALL@'), 1)"},
 {"name": "viewer-in", "wait": "$ready && !!$row", "extract": "(document.querySelector('[data-explain=\"' + $row.dataset.id + '\"]').click(), 1)"},
 {"name": "viewer-explain", "wait": "!!document.getElementById('job-logs')", "extract": "[!!document.getElementById('job-cancel'), state.data.series.caller]"},
 {"name": "token-again", "extract": "(signIn(window.jwt), 1)"},
 {"name": "in-again", "wait": "$ready"},
 {"name": "logout", "click": "#logout", "wait": "!document.getElementById('login').hidden && !document.getElementById('oidc').hidden",
  "extract": "[sessionStorage.getItem('spillway-token'), sessionStorage.getItem('spillway-token-exp'), document.getElementById('main').hidden]"},
 {"name": "forged-state", "url": "$D/ui/?code=stolen-code&state=forged", "wait": "document.getElementById('login-error').textContent.length > 0",
  "extract": "[document.getElementById('login-error').textContent, document.getElementById('main').hidden, sessionStorage.getItem('spillway-token'), location.search]"}
]
JSON
fi

make --no-print-directory -s deb >"$T/make.out" 2>&1
deb=$(ls build/spillway_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] && dpkg-deb --info "$deb" | grep -q "Package: spillway"
ok $? "make deb builds $deb" || diag "$(tail -20 "$T/make.out")"
# The browser starts once the build has the CPUs no more, with a token of
# the provider's wall-screens group (role viewer) to sign in with later.
# idp_token CLIENT: an access token for the API (client_credentials).
idp_token() {
    curl -s -m 10 -u "$1:secret-$1-0123456789abcdef" -d grant_type=client_credentials \
        -d scope=api -d resource=urn:spillway "$ISS/token" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p'
}
if [ -z "$missing" ]; then
    wait_until 30 test -s "$T/idp.ports"
    rm -f "$NPM_DIR/idp-$$.mjs"
    sed -i "s/@WALL@/$(idp_token wall)/" "$T/steps.json"
    # In the cleanup's reach (SPW_DTEST) with its profile under $T.
    env SPW_DTEST="$T" TMPDIR="$T" CHROMIUM_FLAGS="--ignore-certificate-errors-spki-list=$spki" \
        python3 "$(dirname "$0")/../ui/browse.py" "$T/steps.json" "$T/res.json" 2>"$T/browse.err" &
    BROWSE=$!
    XPIDS="$XPIDS $BROWSE"
fi

# A root of its own: dpkg's database and the account files useradd edits.
R=$T/root
mkdir -p "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/info" "$R/etc"
: >"$R/var/lib/dpkg/status"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\n' >"$R/etc/group"
printf 'root:*:19000:0:99999:7:::\n' >"$R/etc/shadow"
printf 'root:*::\n' >"$R/etc/gshadow"
dpk() { dpkg --root="$R" --force-script-chrootless --force-depends --force-not-root "$@"; }
dpk -i "$deb" >"$T/dpkg.out" 2>&1
ok $? "dpkg -i installs it (its postinst run against the root)" || diag "$(cat "$T/dpkg.out")"
# The service starts now, as systemd would run it, and comes up while the
# files are checked (its checks follow them).
if [ -z "$missing" ]; then
    # The operator's part: the certificate, and the example config, edited,
    # as the service's config.
    E=$R/etc/spillway
    install -m 0600 "$T/tls.key" "$E/tls.key" && install -m 0644 "$T/tls.pem" "$E/tls.pem" &&
        install -m 0600 "$R/usr/share/doc/spillway/examples/serve.yaml" "$E/spillway.yaml" &&
        sed -i "s|^  listen: 127.0.0.1:8470\$|  listen: 127.0.0.1:$DP|" "$E/spillway.yaml" &&
        cat >>"$E/spillway.yaml" <<EOT
  tls_cert: $E/tls.pem
  tls_key: $E/tls.key
  oidc:
    issuer: $ISS
    audience: spillway
    client_id: dashboard
    scopes: openid api
    teams: {ml: ml}
    roles: {wall-screens: viewer}
EOT
    # ExecStart as the unit has it, each absolute path moved into the root.
    cmd=
    for w in $(sed -n 's/^ExecStart=//p' "$R/lib/systemd/system/spillway.service"); do
        case $w in /*) w=$R$w ;; esac
        cmd="$cmd $w"
    done
    # shellcheck disable=SC2086
    env SPW_DTEST="$T" $cmd </dev/null >"$T/service.log" 2>&1 &
    SVC=$!
    DPIDS="$DPIDS $SVC"
fi
[ -x "$R/usr/bin/spillway" ] && [ -f "$R/lib/systemd/system/spillway.service" ] &&
    [ -f "$R/usr/share/man/man1/spillway.1" ] && grep -q '^spillway-job:x:[0-9]*:' "$R/etc/passwd" &&
    [ -d "$R/etc/spillway" ] && [ -d "$R/var/lib/spillway" ]
ok $? "binary, unit, man page, /etc/spillway, /var/lib/spillway and the spillway-job user are there"
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$R/usr/share/man/man1/spillway.1" 2>/dev/null >"$T/man.txt"
else
    cp "$R/usr/share/man/man1/spillway.1" "$T/man.txt"   # no man(1) to render it
fi
"$R/usr/bin/spillway" --version | grep -q "^spillway " && grep -q "usage: spillway submit" "$T/man.txt"
ok $? "the installed spillway --version runs and its man page reads"

# ---- the service, HTTPS, the provider's login, a submit ------------------------------
if [ -n "$missing" ]; then
    for _ in 5 6 7 8 9 10 11 12; do skip "no $missing: the service, login and submit are not tried"; done
else
    healthy() { curl -sf -m 5 --cacert "$E/tls.pem" "$D/healthz" >/dev/null; }
    grep -q "listen: 127.0.0.1:$DP" "$E/spillway.yaml" && wait_until 20 healthy &&
        curl -sf -m 5 --cacert "$E/tls.pem" -D "$T/ui.head" "$D/ui" -o /dev/null &&
        curl -sf -m 5 --cacert "$E/tls.pem" "$D/v1/ui/login" >"$T/login.json" &&
        json_check "$T/login.json" "assert d['login'] and d['issuer'] == '$ISS' and d['client_id'] == 'dashboard' and d['token_endpoint'].startswith('$ISS/') and d['redirect_uri'] is None and 'secret' not in open('$T/login.json').read()" &&
        grep -qi "^content-security-policy:.*connect-src 'self' $ISS;" "$T/ui.head"
    if ! ok $? "the unit's ExecStart ($cmd) serves HTTPS with the certificate; GET /v1/ui/login (no token) names the provider and the public client, and the page may call its token endpoint"; then
        diag "$(cat "$T/service.log" "$T/openssl.log" "$T/login.json" 2>/dev/null)" "$(cat "$T/ui.head" 2>/dev/null)"
        kill "$BROWSE"  # it would wait for the service in vain (the cleanup stops its Chromium)
    fi

    TOKEN=$(idp_token ml-user)
    # From another directory: the job's workdir is where it was submitted.
    J=$(cd /tmp && SPILLWAY_URL=$D SPILLWAY_CA=$E/tls.pem SPILLWAY_TOKEN=$TOKEN \
        "$R/usr/bin/spillway" submit --gpus 1 --name from-the-cli -- sleep 300 2>"$T/submit.err")
    [ -n "$TOKEN" ] && case $J in j-*) true ;; *) false ;; esac
    ok $? "spillway submit over HTTPS (the certificate verified) with the provider's token is accepted ($J; the dashboard shows it in team ml's view below)" ||
        diag "$(cat "$T/submit.err" "$T/idp.log")"

    wait "$BROWSE"
    ok $? "Chromium opens the dashboard over HTTPS and logs in through the provider" ||
        diag "$(cat "$T/browse.err")" "$(python3 -c 'import json,sys; [print(s["name"], s["error"]) for s in json.load(open(sys.argv[1]))["steps"] if not s["ok"]]' "$T/res.json" 2>/dev/null)"
    # What each step saw, judged at once (one python): $T/v.NAME holds why a
    # check failed, and stays empty when it passed.
    python3 - "$T" "$D" "$ISS" "$J" <<'PYEOF'
import json, sys
t, D, ISS, J = sys.argv[1:]
r = json.load(open(t + "/res.json"))
v = {s["name"]: s["value"] for s in r["steps"]}
def judge(name, *conds):
    bad = [why for ok, why in conds if not ok]
    open("%s/v.%s" % (t, name), "w").write("\n".join(bad))
c = v.get("provider-login") or {}
judge("open", (v.get("open") == ["Log in with " + ISS, True, "https:", True], "open: %r" % v.get("open")))
judge("login",
      (c.get("who") == "alice (team view)", "who: %r" % c.get("who")),
      (c.get("caller") == {"role": "member", "team": "ml", "may_cancel": True, "user": "oidc:alice"},
       "caller: %r" % c.get("caller")),
      (c.get("job") == J, "the job shown: %r, submitted: %r" % (c.get("job"), J)),
      (c.get("href") == D + "/ui/#jobs", "address: %r" % c.get("href")),
      (c.get("session") == 3 and 0 < c.get("exp", 0) <= 600000, "token: %r" % c),
      (c.get("pending") is None and c.get("local") == 0, "storage: %r" % c),
      (v.get("cancel-button") is True, "cancel button: %r" % v.get("cancel-button")),
      (v.get("viewer-explain") == [False, {"role": "viewer", "team": None, "may_cancel": False,
                                           "user": "oidc:wall"}], "viewer: %r" % v.get("viewer-explain")))
e = v.get("expired") or ["", "?", "?"]
judge("after",
      ("expired" in e[0] and e[1:] == [None, False], "expired: %r" % e),
      (v.get("logout") == [None, None, True], "logout: %r" % v.get("logout")),
      ((v.get("forged-state") or [""])[0].find("state differs") >= 0 and
       v["forged-state"][1:] == [True, None, ""], "forged state: %r" % v.get("forged-state")))
bad = [c for c in r["console"] if c["kind"] == "exception" or "Content Security Policy" in (c["text"] or "")]
judge("console", (not bad, "console: %r" % bad))
PYEOF
    [ -f "$T/v.open" ] && [ ! -s "$T/v.open" ]
    ok $? "without a token the page offers 'Log in with $ISS', over HTTPS, in a secure context" ||
        diag "$(cat "$T/v.open")"
    [ -f "$T/v.login" ] && [ ! -s "$T/v.login" ]
    ok $? "after the provider's login the dashboard shows alice of team ml and the CLI's job $J with a cancel button; the JWT is in sessionStorage only, the code gone from the address; a viewer group's token sees the job and no cancel button" ||
        diag "$(cat "$T/v.login")"
    [ -f "$T/v.after" ] && [ ! -s "$T/v.after" ]
    ok $? "an expired token sends the user back to log in; logout forgets the token; an answer whose state is not this tab's is refused" ||
        diag "$(cat "$T/v.after")"
    [ -f "$T/v.console" ] && [ ! -s "$T/v.console" ]
    ok $? "no exception and no Content-Security-Policy refusal in the browser" || diag "$(cat "$T/v.console")"

    kill -TERM "$SVC" && wait "$SVC"
    ok $? "the service stops on SIGTERM (exit 0)" || diag "$(tail -5 "$T/service.log")"
fi

dpk --purge spillway >"$T/purge.out" 2>&1
[ ! -e "$R/usr/bin/spillway" ] && [ ! -e "$R/etc/spillway" ] && ! grep -q '^spillway-job:' "$R/etc/passwd"
ok $? "dpkg --purge removes the files, the config directory and the user" || diag "$(cat "$T/purge.out")"
done_testing
