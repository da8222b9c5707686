#!/bin/sh
# dashboard.sh: the web dashboard (/ui) in a real headless Chromium, driven
# over the DevTools protocol by browse.py, against a live daemon with jobs
# running on-prem and bursting to the emulated cloud and GPU telemetry from
# a fake nvidia-smi.  Each view is loaded; what it shows is compared with
# what the /v1 API answers; there must be no console error, exception or
# failed load; a team token sees its own jobs only; screenshots are saved
# under build/artifacts/ui/ (CI keeps them).
# shellcheck source=tests/ui/ui-lib
. "$(dirname "$0")/ui-lib"

need_chromium
plan 26
ART=$(pwd)/build/artifacts/ui
mkdir -p "$ART"

# GPUs 0 and 1 busy, 2 and 3 at 0%: the job on 2-3 gets flagged idle.
fake_gpus 80 80 0 0
mkconfig_ui "$T/d.yaml" constant:1
# Fair share: ml's quota is 2 of the 4 slots; cv, without one, borrows the other 2.
sed -i 's/{name: ml, monthly_usd: 100}/{name: ml, monthly_usd: 100, quota: {gpus: 2}}/' "$T/d.yaml"
# A read-only token for a wall screen (role viewer, every team's view).
WALL_TOKEN=wall-viewer-token-4a8c21
sed -i "s/^    - {token: $ADMIN_TOKEN, admin: true}\$/&\n    - {name: wall, role: viewer, token: $WALL_TOKEN}/" "$T/d.yaml"
start_daemon "$T/d.yaml" "$T/state"
ok $? "spillway serve starts (4 GPU slots, wait constant:1, teams ml and cv with budgets)"

j1=$(submit ml --gpus 2 --name train-a --est-runtime 10m -- sleep 300)
j2=$(submit cv --gpus 2 --name train-b --est-runtime 10m -- sleep 300)
j3=$(submit ml --gpus 2 --name burst-c --est-runtime 10m --max-runtime 20m -- sleep 300)
j4=$(submit ml --gpus 1 --name done-d --est-runtime 10s -- sh -c 'echo out-of-d; echo "err-of-d <b>" >&2')
cloud_running() {
    [ "$(state_of "$j3")" = running ] && [ "$(field "$j3" 'd["where"]')" = cloud ]
}
wait_for "$j1" running 10 && wait_for "$j2" running 10 cv && wait_until 15 cloud_running &&
    wait_for "$j4" succeeded 15
ok $? "two jobs run on-prem, one bursts to the emulated cloud, one has ended"

# A spot-style preemption of one of the burst job's instances: it is placed
# again (and bursts again) and counts a preemption and a restart.
inst=$(field "$j3" 'd["instances"][0]')
spw admin admin preempt "$inst" >/dev/null
preempted_again() {
    [ "$(field "$j3" 'd["preemptions"]')" = 1 ] && cloud_running
}
wait_until 15 preempted_again
ok $? "a preempted instance: the burst job is placed again in the cloud, with one preemption"

# Wait until the sampler has seen the burst and the idle job.
sampled() {
    http GET /v1/ui/telemetry admin && python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
assert [j["id"] for j in t["jobs"] if j["idle"]] == [sys.argv[2]]' "$T/http.body" "$j2" 2>/dev/null &&
        http GET /v1/ui/series admin && python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
assert len(s) >= 3 and s[-1]["cloud_gpus"] == 2 and s[-1]["preemptions"] == 1
assert s[-1]["running"] == 3 and max(x["queued"] for x in s) >= 1' "$T/http.body" 2>/dev/null
}
wait_until 15 sampled
ok $? "the sampler's series has the queued burst job, 3 running, 2 cloud GPUs, 1 preemption; $j2 (GPUs at 0%) is flagged idle"

http GET /ui none
[ "$code" = 200 ] && grep -q 'text/html' "$T/http.head" && contains "$T/http.body" '/ui/app.js' &&
    cp "$T/http.body" "$T/index.html" && http GET /ui/app.js none && cp "$T/http.body" "$T/app.js" &&
    http GET /ui/style.css none && ! grep -Eq '(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/' \
        "$T/index.html" "$T/app.js" "$T/http.body"
ok $? "GET /ui serves the page without a token; it, its script and its styles load nothing from elsewhere"

# browse N DESCRIPTION: Chromium runs the steps of $T/stepsN.json (N may be
# empty) into $T/resN.json; one check: every step ran.
browse() {
    python3 "$(dirname "$0")/browse.py" "$T/steps$1.json" "$T/res$1.json" 2>"$T/browse$1.err"
    ok $? "$2" || diag "$(cat "$T/browse$1.err")" "$(python3 -c 'import json,sys; [print(s["name"], s["error"]) for s in json.load(open(sys.argv[1]))["steps"] if not s["ok"]]' "$T/res$1.json" 2>/dev/null)"
}

# collect N KEY=FILE...: $T/allN.json: each step's value of $T/resN.json by
# name, the console, and each FILE under KEY (parsed when it ends in .json).
collect() {
    python3 - "$T" "$@" <<'PYEOF'
import json, sys
t, n = sys.argv[1], sys.argv[2]
r = json.load(open("%s/res%s.json" % (t, n)))
out = {s["name"]: s["value"] for s in r["steps"]}
out["console"] = r["console"]
for a in sys.argv[3:]:
    k, f = a.split("=", 1)
    out[k] = json.load(open(f)) if f.endswith(".json") else open(f).read()
json.dump(out, open("%s/all%s.json" % (t, n), "w"))
PYEOF
}

A="$URL/ui#token=$ADMIN_TOKEN"
ready="document.body.dataset.ready === '1'"
rows_js() {  # rows_js TABLE: [{attrs..., cells: [...]}] of a table's body rows
    echo "[...document.querySelectorAll('#$1 tbody tr:not(.empty)')].map(r => Object.assign({cells: [...r.cells].map(c => c.textContent.trim())}, r.dataset))"
}
cat >"$T/steps.json" <<JSON
[
 {"name": "login", "url": "$URL/ui", "wait": "!document.getElementById('login').hidden",
  "extract": "document.getElementById('main').hidden", "shot": "$ART/login.png"},
 {"name": "bad-token", "extract": "(document.getElementById('token').value = 'not-a-token-0000000000', 1)"},
 {"name": "bad-token-submit", "click": "#login button[type=submit]", "wait": "document.getElementById('login-error').textContent.length > 0",
  "extract": "[document.getElementById('login-error').textContent, document.getElementById('main').hidden]"},
 {"name": "sign-in", "extract": "(document.getElementById('token').value = '$ADMIN_TOKEN', 1)"},
 {"name": "sign-in-submit", "click": "#login button[type=submit]", "wait": "$ready && !document.getElementById('main').hidden",
  "extract": "[document.getElementById('who').textContent, sessionStorage.getItem('spillway-token') === '$ADMIN_TOKEN']"},
 {"name": "jobs", "url": "$A&view=jobs", "wait": "$ready && document.querySelectorAll('#jobs-active tr.job').length === 3",
  "extract": "({rows: $(rows_js jobs-active), ended: $(rows_js jobs-ended), interrupted: $(rows_js jobs-interrupted), ipaths: document.querySelectorAll('#chart-interrupts svg path').length, alerts: [...document.querySelectorAll('#alerts .alert')].map(a => [a.dataset.kind, a.textContent]), tiles: {queued: document.getElementById('n-queued').textContent, running: document.getElementById('n-running').textContent, busy: document.getElementById('n-onprem-busy').textContent, cloud: document.getElementById('n-cloud-gpus').textContent}, token_in_url: location.href.includes('token')})",
  "shot": "$ART/jobs.png"},
 {"name": "explain", "click": "[data-explain=\"$j3\"]", "wait": "!!document.querySelector('#explain table tbody tr')",
  "extract": "({decision: document.querySelector('#explain .decision').textContent, kinds: [...document.querySelectorAll('#explain tbody tr')].map(r => r.cells[0].textContent)})",
  "shot": "$ART/explain.png"},
 {"name": "jobs-pages", "extract": "(() => { const ids = () => [...document.querySelectorAll('#jobs-active tbody tr.job')].map(r => r.dataset.id); const info = () => document.getElementById('page-info').textContent; const prev = document.getElementById('page-prev'), next = document.getElementById('page-next'); const set = (id, v, ev) => { const e = document.getElementById(id); e.value = v; e.dispatchEvent(new Event(ev)); }; const out = {}; state.pageSize = 2; renderJobs(); out.p1 = [ids(), info(), prev.disabled, next.disabled]; next.click(); out.p2 = [ids(), info(), prev.disabled, next.disabled]; set('f-team', 'cv', 'change'); out.team = [ids(), info()]; set('f-team', '', 'change'); set('f-state', 'queued', 'change'); out.queued = [ids(), info(), document.querySelector('#jobs-active tbody tr.empty').textContent]; set('f-state', '', 'change'); set('f-q', 'BURST', 'input'); out.q = [ids(), info()]; set('f-q', '', 'input'); state.pageSize = 25; renderJobs(); out.reset = [ids(), info()]; return out; })()"},
 {"name": "pools", "url": "$URL/ui#pools", "wait": "$ready && !document.getElementById('view-pools').hidden && !!document.querySelector('#chart-pools svg path')",
  "extract": "({rows: $(rows_js pools), fair: $(rows_js fair-share), paths: document.querySelectorAll('#chart-pools svg path').length, qpaths: document.querySelectorAll('#chart-queue svg path').length})",
  "shot": "$ART/pools.png"},
 {"name": "cloud", "url": "$URL/ui#cloud", "wait": "$ready && !document.getElementById('view-cloud').hidden",
  "extract": "({rows: $(rows_js instances)})", "shot": "$ART/cloud.png"},
 {"name": "budgets", "url": "$URL/ui#budgets", "wait": "$ready && !document.getElementById('view-budgets').hidden && !!document.querySelector('#chart-burn svg path')",
  "extract": "({rows: $(rows_js budgets)})", "shot": "$ART/budgets.png"},
 {"name": "budget-colours", "extract": "(() => { const real = [...document.querySelectorAll('#budgets tbody tr')].map(r => [r.dataset.team, r.dataset.level]); const saved = state.data.costs; state.data.costs = {teams: [50, 79.9, 80, 99.9, 100, 130].map(p => ({team: 't' + p, period: '2026-11', budget_usd: 100, settled_usd: p, reserved_usd: 0, remaining_usd: 100 - p, cloud_usd_per_h: 0, held_jobs: 0}))}; renderBudgets(); const out = [...document.querySelectorAll('#budgets tbody tr')].map(r => { const b = r.querySelector('.bar'), i = b.querySelector('.settled'); return [r.dataset.team, r.dataset.level, getComputedStyle(i).backgroundColor, i.getBoundingClientRect().width / b.getBoundingClientRect().width]; }); state.data.costs = saved; renderBudgets(); return {real, drawn: out}; })()"},
 {"name": "spend", "url": "$URL/ui#spend", "wait": "$ready && !document.getElementById('view-spend').hidden && !!document.querySelector('#chart-spend svg path')",
  "extract": "({teams: $(rows_js spend-teams), providers: $(rows_js spend-providers), commitments: $(rows_js spend-commitments), empty: document.querySelector('#spend-commitments tbody').textContent, drawn: (() => { const saved = state.data.costs; state.data.costs = Object.assign({}, saved, {commit_used_usd: 3, commitments: [{name: 'ri', gpus: 2, usd_per_gpu_h: 1.5, usd: 10, used_usd: 3, idle_usd: 7}], teams: saved.teams.map(t => Object.assign({}, t, {commit_usd: 3}))}); renderSpend(); const out = {commitments: $(rows_js spend-commitments), teams: $(rows_js spend-teams)}; state.data.costs = saved; renderSpend(); return out; })()})", "shot": "$ART/spend.png"},
 {"name": "gpus", "url": "$URL/ui#gpus", "wait": "$ready && !document.getElementById('view-gpus').hidden && document.querySelectorAll('#gpus tbody tr[data-gpu]').length === 4",
  "extract": "({gpus: $(rows_js gpus), jobs: $(rows_js gpu-jobs)})", "shot": "$ART/gpus.png"},
 {"name": "team", "url": "$URL/ui#token=$CV_TOKEN&view=jobs", "wait": "$ready && document.getElementById('who').textContent === 'team view'",
  "extract": "({rows: $(rows_js jobs-active), budgets: $(rows_js budgets), fair: $(rows_js fair-share), explain_hidden: document.getElementById('explain').hidden && !document.getElementById('explain').textContent})", "shot": "$ART/team-cv.png"}
]
JSON
browse "" "chromium loads the login page and every view (jobs, explain, pools, cloud, budgets, spend, GPUs, team)"

# The API's view, right after the browser's (the jobs sleep 300 s, so
# states and placements hold still; money moves by cents).
for what in jobs pools costs teams; do
    case $what in jobs) p='/v1/jobs?limit=10000' ;; *) p=/v1/$what ;; esac
    http GET "$p" admin
    cp "$T/http.body" "$T/api-$what.json"
done
http GET /v1/ui/telemetry admin
cp "$T/http.body" "$T/api-tel.json"
http GET "/v1/jobs/$j3/explain" admin
cp "$T/http.body" "$T/api-explain.json"
collect "" $(for k in jobs pools costs teams tel explain; do echo "api_$k=$T/api-$k.json"; done)

json_check "$T/all.json" '
# The unknown token is answered 401, which Chromium logs (the entry may come
# in just after its step); nothing else may be.
other = [c for c in d["console"]
         if not (c["step"] in ("bad-token-submit", "sign-in") and "status of 401" in c["text"])]
assert other == [], other'
ok $? "no console error or warning, no exception, no failed load in any view"

json_check "$T/all.json" '
assert d["login"] is True, "the main view showed without a token"
assert "does not know this token" in d["bad-token-submit"][0] and d["bad-token-submit"][1], d["bad-token-submit"]
assert d["sign-in-submit"] == ["admin view", True], d["sign-in-submit"]'
ok $? "without a token the page asks for one; an unknown one is refused; the admin token signs in"

json_check "$T/all.json" "
live = {j['id']: j for j in d['api_jobs']['jobs'] if j['state'] in ('queued', 'placed', 'running')}
rows = {r['id']: r for r in d['jobs']['rows']}
assert sorted(rows) == sorted(live), (sorted(rows), sorted(live))
for i, j in live.items():
    c = rows[i]['cells']
    assert rows[i]['state'] == j['state'], (i, rows[i]['state'], j['state'])
    assert c[2] == j['team'] and c[4] == str(j['gpus']) and c[6] == j['placement'], (c, j)
    assert c[5].startswith(j['where']), (c[5], j['where'])
    assert c[9] == (j.get('reason') or ''), (c[9], j.get('reason'))
ended = [r['id'] for r in d['jobs']['ended']]
assert '$j4' in ended, ended
tl = d['jobs']['tiles']
assert tl['running'] == str(len([j for j in live.values() if j['state'] == 'running'])), tl
assert tl['busy'] == '4 / 4' and tl['cloud'] == '2', tl
assert not d['jobs']['token_in_url']
"
ok $? "jobs view: the live jobs, their state, team, GPUs, where, placement and why equal the API's"

json_check "$T/all.json" "
p = d['jobs-pages']
assert p['p1'] == [['$j1', '$j2'], '1\u20132 of 3', True, False], p['p1']
assert p['p2'] == [['$j3'], '3\u20133 of 3', False, True], p['p2']
assert p['team'] == [['$j2'], '1\u20131 of 1 (3 live)'], p['team']
assert p['queued'] == [[], '0 of 3', 'no job matches the filters'], p['queued']
assert p['q'] == [['$j3'], '1\u20131 of 1 (3 live)'], p['q']
assert p['reset'] == [['$j1', '$j2', '$j3'], '1\u20133 of 3'], p['reset']
"
ok $? "the job list pages (2 a page: $j1 $j2, then $j3) and filters by team, state and text (case-insensitive)"

json_check "$T/all.json" "
api = {j['id']: j for j in d['api_jobs']['jobs'] if j['preemptions'] or j['restarts'] or j['failures']}
rows = {r['id']: r['cells'] for r in d['jobs']['interrupted']}
assert sorted(rows) == sorted(api) == ['$j3'], (rows, sorted(api))
c, j = rows['$j3'], api['$j3']
assert c[3:6] == [str(j['preemptions']), str(j['failures']), str(j['restarts'])], (c, j)
assert d['jobs']['ipaths'] == 3, d['jobs']['ipaths']
"
ok $? "preemptions and restarts: the preempted job with its counts equal to the API's, and their chart"

json_check "$T/all.json" "
kinds = [a[0] for a in d['jobs']['alerts']]
assert 'gpu-idle' in kinds, d['jobs']['alerts']
assert any('$j2' in a[1] for a in d['jobs']['alerts'] if a[0] == 'gpu-idle'), d['jobs']['alerts']
e, api = d['explain'], d['api_explain']
assert e['decision'].startswith('decision: cloud'), e
assert api['decision']['reason'] in e['decision'], (e, api['decision'])
assert e['kinds'] == [c['kind'] for c in api['candidates']], (e['kinds'], api['candidates'])
"
ok $? "the idle-GPU job is called out, and a click on a job shows its explain as the API gives it"

json_check "$T/all.json" "
api = {p['name']: p for p in d['api_pools']['pools']}
rows = {r['pool']: r['cells'] for r in d['pools']['rows']}
assert sorted(rows) == sorted(api), rows
for n, p in api.items():
    assert rows[n][3:7] == [str(p['gpus']), str(p['gpus_busy']), str(p['gpus_free']), str(p['gpus_down'])], (rows[n], p)
owned = {p['pool']: p for p in d['api_costs']['pools']}
for n in api:
    # the owned cost grows by the second: the API was asked a few seconds later;
    # the page shows whole cents, rounded (0.00977 shows as 0.01)
    ui_all, ui_idle = (float(x.lstrip('\$')) for x in rows[n][8:10])
    assert -0.005 <= owned[n]['owned_usd'] - ui_all < 0.25 and owned[n]['owned_usd'] > 0, (rows[n], owned[n])
    assert -0.005 <= owned[n]['owned_idle_usd'] - ui_idle < 0.25, (rows[n], owned[n])
assert d['pools']['paths'] >= 2 and d['pools']['qpaths'] >= 2, d['pools']
live = sorted(i['id'] for i in d['api_pools']['instances'] if i['state'] in ('ready', 'booting'))
shown = sorted(r['instance'] for r in d['cloud']['rows'] if r['cells'][2] in ('ready', 'booting'))
assert shown == live and len(live) == 2, (shown, live)
for r in d['cloud']['rows']:
    i = [x for x in d['api_pools']['instances'] if x['id'] == r['instance']][0]
    assert r['cells'][3] == (i['job_id'] or r['cells'][3]), (r, i)
    assert abs(float(r['cells'][5].lstrip('\$')) - i['cost_usd']) < 0.05, (r, i)
"
ok $? "pools and cloud views: GPUs busy/free/down, owned and idle owned cost (as costs has them), charts, and the live instances with their job and cost equal the API's"

json_check "$T/all.json" "
api = d['api_teams']
want = [['team', t['team'], t['cohort'] or '-', t['nominal_gpus'], t['used_gpus'], t['borrowed_gpus'],
         t['lent_gpus']] for t in api['teams']]
got = [r['cells'][:7] for r in d['pools']['fair']]
assert [[str(x) if not isinstance(x, float) else '%g' % x for x in w] for w in want] == got, (got, want)
assert {r['team']: r['cells'][3:7] for r in d['pools']['fair']} == {
    'ml': ['2', '2', '0', '0'], 'cv': ['0', '2', '2', '0']}, got
assert [r['cells'][:2] for r in d['team']['fair']] == [['team', 'cv']], d['team']['fair']
"
ok $? "pools view: the fair share table equals /v1/teams (ml uses its quota of 2, cv borrows 2); team cv sees its row only"

json_check "$T/all.json" "
api = {t['team']: t for t in d['api_costs']['teams']}
rows = {r['team']: r['cells'] for r in d['budgets']['rows']}
assert sorted(rows) == sorted(api), (rows, sorted(api))
money = lambda s: float(s.replace('\$', ''))
for n, t in api.items():
    c = rows[n]
    assert c[2] == ('none' if t['budget_usd'] is None else '\$%.2f' % t['budget_usd']), (c, t)
    assert abs(money(c[3]) - t['settled_usd']) < 0.05 and abs(money(c[4]) - t['reserved_usd']) < 0.05, (c, t)
    assert c[8] == str(t['held_jobs']), (c, t)
assert api['ml']['reserved_usd'] > 0, api['ml']
sp = {r['team']: r['cells'] for r in d['spend']['teams']}
for n, t in api.items():
    assert abs(money(sp[n][1]) - t['onprem_usd']) < 0.05 and abs(money(sp[n][2]) - t['cloud_usd']) < 0.05, (sp[n], t)
    assert abs(money(sp[n][3]) - t['commit_usd']) < 0.005, (sp[n], t)
    assert abs(money(sp[n][4]) - t['onprem_usd'] - t['cloud_usd'] - t['commit_usd']) < 0.05, (sp[n], t)
# No cloud.commitments in this config: the table says so; drawn from a
# costs answer with one, its row and each team's committed share show.
assert d['spend']['commitments'] == [] and 'no commitments' in d['spend']['empty'], d['spend']
dc = d['spend']['drawn']
assert [(r['commitment'], r['cells']) for r in dc['commitments']] == [('ri', ['ri', '2', '\$1.50', '\$3.00', '\$7.00', '\$10.00'])], dc
assert all(r['cells'][3] == '\$3.00' for r in dc['teams']) and dc['teams'], dc['teams']
provs = sorted(r['provider'] for r in d['spend']['providers'])
assert provs == sorted(p['provider'] for p in d['api_costs']['providers']), provs
"
ok $? "budgets and spend views: budget, settled, reserved, held, on-prem, cloud and committed spend per team, provider and commitment equal the API's"

json_check "$T/all.json" "
api = {t['team']: t for t in d['api_costs']['teams']}
lvl = lambda f: 'over' if f >= 1 else 'warn' if f >= 0.8 else 'ok'
real = dict(d['budget-colours']['real'])
for n, t in api.items():
    want = '' if t['budget_usd'] is None else lvl((t['settled_usd'] + t['reserved_usd']) / t['budget_usd'])
    assert real[n] == want, (n, real[n], want, t)
green, amber, red = 'rgb(47, 133, 90)', 'rgb(183, 121, 31)', 'rgb(197, 48, 48)'
want = [('t50', 'ok', green, 0.5), ('t79.9', 'ok', green, 0.799), ('t80', 'warn', amber, 0.8),
        ('t99.9', 'warn', amber, 0.999), ('t100', 'over', red, 1.0), ('t130', 'over', red, 1.0)]
got = d['budget-colours']['drawn']
assert [g[:3] for g in got] == [list(w[:3]) for w in want], got
assert all(abs(g[3] - w[3]) < 0.02 for g, w in zip(got, want)), got
"
ok $? "budget colours: green below 80%, amber from 80% to 100%, red at 100% and above (the bar full), for the API's teams and drawn at 50-130%"

json_check "$T/all.json" "
g = {r['gpu']: r['cells'] for r in d['gpus']['gpus']}
api = {str(x['index']): x for x in d['api_tel']['gpus']}
assert sorted(g) == sorted(api) == ['0', '1', '2', '3'], g
for k, x in api.items():
    assert g[k][2] == '%d%%' % round(x['util_pct']), (g[k], x)
    assert g[k][4] == (x['job'] or 'free'), (g[k], x)
idle = [r['id'] for r in d['gpus']['jobs'] if r['cells'][6].startswith('idle')]
assert idle == ['$j2'], idle
"
ok $? "GPUs view: utilisation and job per GPU equal the telemetry API's; $j2 is flagged idle"

json_check "$T/all.json" "
ids = sorted(r['id'] for r in d['team']['rows'])
assert ids == ['$j2'], ids
assert [r['team'] for r in d['team']['budgets']] == ['cv'], d['team']['budgets']
assert d['team']['explain_hidden'], 'the admin explain of $j3 is still shown'
"
ok $? "the cv team token sees its own job and budget only (nothing left from the admin view)"

# ---- logs, history range and cancel from the UI ------------------------------
# A second browser run, after the API's view above was taken: it cancels a job.
# The page's confirm() answers yes (one document: the steps change the hash).
cat >"$T/steps2.json" <<JSON
[
 {"name": "admin", "url": "$URL/ui#token=$ADMIN_TOKEN&view=jobs", "wait": "$ready && !!document.querySelector('#jobs-ended [data-explain=\"$j4\"]')",
  "extract": "(window.confirm = () => true, 1)"},
 {"name": "range", "extract": "(() => { const r = document.getElementById('range'); r.value = '604800'; r.dispatchEvent(new Event('change')); return 1; })()"},
 {"name": "range-week", "wait": "state.data.series && state.data.series.range_s === 604800",
  "extract": "[state.data.series.range_s, state.data.series.tiers.map(t => [t.step_s, t.keep_s]), state.data.series.caller]"},
 {"name": "ended", "click": "#jobs-ended [data-explain=\"$j4\"]", "wait": "!!document.getElementById('job-logs')",
  "extract": "!!document.getElementById('job-cancel')"},
 {"name": "logs", "click": "#job-logs", "wait": "document.querySelectorAll('#job-log pre.log').length === 2",
  "extract": "[...document.querySelectorAll('#job-log pre.log')].map(p => [p.dataset.stream, p.textContent])", "shot": "$ART/logs.png"},
 {"name": "live", "click": "#jobs-active [data-explain=\"$j1\"]", "wait": "document.querySelector('#explain h3').textContent.includes('$j1') && !!document.getElementById('job-logs')",
  "extract": "!!document.getElementById('job-cancel')"},
 {"name": "wall", "url": "$URL/ui#token=$WALL_TOKEN&view=jobs", "wait": "$ready && state.token === '$WALL_TOKEN' && document.querySelectorAll('#jobs-active tr.job').length === 3"},
 {"name": "wall-explain", "click": "#jobs-active [data-explain=\"$j2\"]", "wait": "!!document.getElementById('job-logs')", "extract": "[!!document.getElementById('job-cancel'), state.data.series.caller, (cancelJob('$j2'), 1)]"},
 {"name": "wall-refused", "wait": "document.getElementById('job-action').textContent.length > 0",
  "extract": "document.getElementById('job-action').textContent"},
 {"name": "cv", "url": "$URL/ui#token=$CV_TOKEN&view=jobs", "wait": "$ready && state.token === '$CV_TOKEN' && document.getElementById('who').textContent === 'team view' && !!document.querySelector('[data-explain=\"$j2\"]')"},
 {"name": "cv-explain", "click": "#jobs-active [data-explain=\"$j2\"]", "wait": "!!document.getElementById('job-cancel')",
  "extract": "[document.getElementById('job-cancel').textContent, (showLogs('$j1'), 1)][0]"},
 {"name": "cv-foreign-refused", "wait": "!!document.querySelector('#job-log .bad')",
  "extract": "[document.querySelector('#job-log .bad').textContent, document.querySelectorAll('#job-log pre').length]"},
 {"name": "cv-cancel-click", "click": "#job-cancel", "wait": "document.getElementById('job-action').textContent.startsWith('cancel asked')",
  "extract": "document.getElementById('job-action').textContent", "shot": "$ART/cancel.png"}
]
JSON
browse 2 "chromium: a job's logs, the history range, cancel as admin, viewer and team"
http GET "/v1/jobs/$j4/logs?stream=out" admin
cp "$T/http.body" "$T/log-out"
http GET "/v1/jobs/$j4/logs?stream=err" admin
cp "$T/http.body" "$T/log-err"
collect 2 "api_out=$T/log-out" "api_err=$T/log-err"

json_check "$T/all2.json" '
assert d["api_out"] == "out-of-d\n" and d["api_err"] == "err-of-d <b>\n", (d["api_out"], d["api_err"])
assert d["logs"] == [["stdout", d["api_out"]], ["stderr", d["api_err"]]], d["logs"]
assert d["ended"] is False, "a cancel button on an ended job"'
ok $? "a click on logs shows the job's stdout and stderr as the logs API gives them (markup shown as text)"

json_check "$T/all2.json" '
assert d["range-week"][0] == 604800, d["range-week"]
assert d["range-week"][1] == [[0.3, 3600], [60, 86400], [600, 691200]], d["range-week"]
assert d["range-week"][2] == {"role": "admin", "team": None, "may_cancel": True, "user": None}, d["range-week"]'
ok $? "the history range: last week asks /v1/ui/series for 604800 s (tiers 0.3 s for 1 h, 1 min for 1 day, 10 min for 8 days)"

json_check "$T/all2.json" '
assert d["live"] is True, "no cancel button for the admin on a running job"
assert d["wall-explain"][:2] == [False, {"role": "viewer", "team": None, "may_cancel": False, "user": None}], d["wall-explain"]
assert "read-only" in d["wall-refused"], d["wall-refused"]'
ok $? "cancel: the admin has the button on a live job; a viewer has none, and the API refuses its cancel (shown)"

json_check "$T/all2.json" "
assert d['cv-explain'] == 'cancel $j2', d['cv-explain']
msg, pres = d['cv-foreign-refused']
assert pres == 0 and '$j1' in msg, d['cv-foreign-refused']
"
ok $? "team cv has the cancel button on its own job; the logs of ml's $j1 are refused to it"

wait_for "$j2" cancelled 10 cv
ok $? "team cv cancels $j2 from the UI: the API has it cancelled"

json_check "$T/all2.json" '
# The refused cancel (403) and logs (404) are logged by Chromium; nothing else may be.
other = [c for c in d["console"]
         if not ((c["step"] in ("wall-explain", "wall-refused") and "status of 403" in c["text"]) or
                 (c["step"] in ("cv-explain", "cv-foreign-refused") and "status of 404" in c["text"]))]
assert other == [], other'
ok $? "no other console error in the second run"

n=0
for f in login jobs explain pools cloud budgets spend gpus team-cv; do
    [ -s "$ART/$f.png" ] && [ "$(head -c 4 "$ART/$f.png" | tail -c 3)" = PNG ] && n=$((n + 1))
done
[ "$n" -eq 9 ]
ok $? "9 screenshots saved under build/artifacts/ui/"
