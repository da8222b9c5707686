#!/bin/sh
# cross_origin.sh: a page on another origin, in a real headless Chromium,
# tries to act through the user's browser on a daemon without tokens
# (loopback, open API): a `fetch` POST with Content-Type text/plain
# (no-cors) and an HTML form (enctype text/plain) submitting a job.  Both
# reach the daemon and are answered 415; no job is queued and the job's
# command never runs.  A submit with Content-Type: application/json from
# that page needs a CORS preflight, which the daemon never grants.
# shellcheck source=tests/ui/ui-lib
. "$(dirname "$0")/ui-lib"

need_chromium
plan 5

# The daemon of the attack: no tokens at all (every caller is admin).
mkconfig "$T/open.yaml" 2 never
sed -i '/^  tokens:/,$d' "$T/open.yaml"
start_daemon "$T/open.yaml" "$T/state"
ok $? "spillway serve starts without tokens (loopback, open API)"
dport=${URL##*:}

# The attacker's site: another origin (another port), served by Python.
mkdir -p "$T/site"
cat >"$T/site/evil.html" <<EOF
<!doctype html><title>start</title>
<form id="f" method="POST" action="$URL/v1/jobs" enctype="text/plain" target="sink">
<input type="hidden" name='{"run": ["touch", "$T/pwned-form"], "gpus": 1, "x": "' value='"}'>
</form>
<iframe name="sink"></iframe>
<script>
fetch('$URL/v1/jobs', {method: 'POST', mode: 'no-cors',
    headers: {'Content-Type': 'text/plain'},
    body: '{"run": ["touch", "$T/pwned-fetch"], "gpus": 1}'})
  .then(() => { document.title = 'fetch sent'; }, (e) => { document.title = 'fetch error ' + e; })
  .then(() => fetch('$URL/v1/jobs', {method: 'POST', mode: 'cors',
      headers: {'Content-Type': 'application/json'},
      body: '{"run": ["touch", "$T/pwned-json"], "gpus": 1}'}))
  .then(() => { window.json = 'answered'; }, (e) => { window.json = 'blocked'; });
</script>
EOF
sport=$(free_port)
(cd "$T/site" && exec python3 -m http.server --bind 127.0.0.1 "$sport") >"$T/site.log" 2>&1 &
XPIDS="$XPIDS $!"
wait_until 10 curl -s -o /dev/null "http://127.0.0.1:$sport/evil.html"

cat >"$T/steps.json" <<JSON
[
 {"name": "page", "url": "http://127.0.0.1:$sport/evil.html",
  "wait": "document.title === 'fetch sent' && !!window.json", "extract": "({title: document.title, json: window.json})"},
 {"name": "form", "wait": "true", "extract": "(document.getElementById('f').submit(), 'submitted')"},
 {"name": "after", "wait": "true", "extract": "new Promise(r => setTimeout(() => r('waited'), 1500))"}
]
JSON
python3 "$(dirname "$0")/browse.py" "$T/steps.json" "$T/res.json" 2>"$T/browse.err"
st=$?
json_check "$T/res.json" "assert d['steps'][0]['value']['json'] == 'blocked', d['steps'][0]" && [ $st = 0 ]
ok $? "chromium ran the page: its text/plain fetch was sent, its application/json one blocked by CORS" ||
    diag "$(cat "$T/browse.err")" "$(cat "$T/res.json" 2>/dev/null)"

refused() {
    curl -s -m 5 "$URL/metrics" >"$T/m.txt" &&
        [ "$(sed -n 's/^spillway_http_requests_total{code="4xx"} //p' "$T/m.txt")" -ge 2 ]
}
wait_until 10 refused
ok $? "the daemon got the forged requests and refused them (4xx: $(sed -n 's/^spillway_http_requests_total{code="4xx"} //p' "$T/m.txt"))"
spw none queue --all -o json >"$T/q.json"
json_check "$T/q.json" "assert d['jobs'] == [], d"
ok $? "no job was queued"
[ ! -e "$T/pwned-fetch" ] && [ ! -e "$T/pwned-form" ] && [ ! -e "$T/pwned-json" ]
ok $? "none of the forged jobs' commands ran"
done_testing
