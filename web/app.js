// spillway dashboard: plain JavaScript, no dependencies. It reads the
// daemon's /v1 API with the bearer token kept in sessionStorage, polls every
// few seconds, and draws its charts as hand-made SVG.  The token is pasted,
// or comes from the daemon's OpenID Connect provider (daemon.oidc): an
// authorization code login with PKCE (S256), state and nonce checked.
'use strict';

const POLL_MS = 3000;
const KEY = 'spillway-token';
const EXP_KEY = 'spillway-token-exp';  // when an OIDC access token expires, ms
const OIDC_KEY = 'spillway-oidc';      // the login under way: verifier, state, nonce
const state = { token: null, view: 'jobs', data: {}, timer: null, explainId: null,
                filter: { state: '', team: '', q: '', page: 0 }, pageSize: 25, range: 3600 };

// ---- helpers ---------------------------------------------------------------

function esc(s) {
  return String(s === null || s === undefined ? '' : s)
    .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}
function usd(v) {
  if (v === null || v === undefined) return 'none';
  if (v === Infinity) return 'none';
  return (v < 0 ? '-$' : '$') + Math.abs(v).toFixed(2);
}
function dur(s) {
  if (s === null || s === undefined || !isFinite(s)) return '';
  s = Math.max(0, s);
  if (s < 60) return Math.round(s) + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm' + String(Math.round(s % 60)).padStart(2, '0') + 's';
  if (s < 86400) return Math.floor(s / 3600) + 'h' + String(Math.floor(s % 3600 / 60)).padStart(2, '0') + 'm';
  return (s / 86400).toFixed(1) + 'd';
}
function clock(t) {
  const d = new Date(t * 1000);
  return d.toTimeString().slice(0, 8);
}
function $(id) { return document.getElementById(id); }
function rows(tableId, html, empty) {
  const tb = $(tableId).querySelector('tbody');
  const cols = $(tableId).querySelectorAll('thead th').length;
  tb.innerHTML = html.length ? html.join('') :
    '<tr class="empty"><td colspan="' + cols + '">' + esc(empty || 'none') + '</td></tr>';
}

// opts: {method, text}: text = 1 returns the body as text (logs), not JSON.
async function api(path, opts) {
  const o = opts || {};
  const exp = Number(sessionStorage.getItem(EXP_KEY) || 0);
  if (exp && Date.now() >= exp) {
    const e = new Error('your login has expired: log in again');
    e.auth = true;
    throw e;
  }
  // X-Spillway-Client: the daemon refuses a POST without it (forgery).
  const r = await fetch(path, { method: o.method || 'GET',
    headers: { Authorization: 'Bearer ' + state.token, 'X-Spillway-Client': 'dashboard' } });
  if (r.status === 401) {
    const b = await r.json().catch(() => ({}));
    const e = new Error((sessionStorage.getItem(EXP_KEY) && b.error && b.error.message) ||
                        'the daemon does not know this token');
    e.auth = true;
    throw e;
  }
  if (r.ok && o.text) return { text: await r.text(), offset: r.headers.get('X-Spillway-Offset') };
  const body = await r.json();
  if (!r.ok) throw new Error((body.error && body.error.message) || ('HTTP ' + r.status));
  return body;
}

// ---- charts: hand-made SVG -------------------------------------------------

const COLORS = ['#2b6cb0', '#dd6b20', '#38a169', '#805ad5', '#d53f8c', '#319795', '#b7791f', '#4a5568'];

// lines: [{name, points: [[t, v], ...], dash}], x is unix time.
function lineChart(el, lines, opts) {
  opts = opts || {};
  const W = 1100, H = 240, L = 56, R = 12, T = 12, B = 28;
  const pts = lines.flatMap(l => l.points);
  if (!pts.length) {
    el.innerHTML = '<p class="muted">no samples yet (the daemon samples every few seconds)</p>';
    return;
  }
  let x0 = Math.min(...pts.map(p => p[0])), x1 = Math.max(...pts.map(p => p[0]));
  if (x1 <= x0) x1 = x0 + 1;
  let y1 = Math.max(opts.minMax || 1, ...pts.map(p => p[1]));
  y1 = niceMax(y1);
  const sx = t => L + (t - x0) / (x1 - x0) * (W - L - R);
  const sy = v => T + (1 - v / y1) * (H - T - B);
  let svg = '<svg viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="' + esc(opts.label || 'chart') + '">';
  for (let i = 0; i <= 4; i++) {
    const v = y1 * i / 4, y = sy(v);
    svg += '<line x1="' + L + '" x2="' + (W - R) + '" y1="' + y + '" y2="' + y + '" class="grid"/>';
    svg += '<text x="' + (L - 6) + '" y="' + (y + 4) + '" text-anchor="end">' + esc(opts.fmt ? opts.fmt(v) : fmtNum(v)) + '</text>';
  }
  for (let i = 0; i <= 4; i++) {
    const t = x0 + (x1 - x0) * i / 4;
    svg += '<text x="' + sx(t) + '" y="' + (H - 8) + '" text-anchor="middle">' + esc(clock(t)) + '</text>';
  }
  lines.forEach((l, i) => {
    if (!l.points.length) return;
    const d = l.points.map((p, k) => (k ? 'L' : 'M') + sx(p[0]).toFixed(1) + ' ' + sy(p[1]).toFixed(1)).join(' ');
    svg += '<path d="' + d + '" fill="none" stroke="' + COLORS[i % COLORS.length] + '" stroke-width="2"' +
      (l.dash ? ' stroke-dasharray="6 4"' : '') + '/>';
  });
  svg += '</svg>';
  const legend = '<div class="legend">' + lines.map((l, i) =>
    '<span><i style="background:' + COLORS[i % COLORS.length] + '"></i>' + esc(l.name) + '</span>').join('') + '</div>';
  el.innerHTML = svg + legend;
}
// Axis labels in dollars: cents are not enough for a few seconds of spend.
function usdAxis(v) {
  return v > 0 && v < 1 ? '$' + v.toFixed(v < 0.1 ? 4 : 3) : usd(v);
}
function niceMax(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
function fmtNum(v) {
  return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2).replace(/\.?0+$/, '') || '0';
}

// ---- views -----------------------------------------------------------------

function renderTiles() {
  const d = state.data;
  const jobs = (d.jobs && d.jobs.jobs) || [];
  $('n-queued').textContent = jobs.filter(j => j.state === 'queued').length + (d.jobs && d.jobs.queuedMore ? '+' : '');
  $('n-running').textContent = jobs.filter(j => j.state === 'running').length;
  const pools = (d.pools && d.pools.pools) || [];
  $('n-onprem-busy').textContent = pools.reduce((a, p) => a + p.gpus_busy, 0) + ' / ' +
    pools.reduce((a, p) => a + p.gpus, 0);
  $('n-cloud-gpus').textContent = cloudGpus();
  $('n-spend').textContent = d.costs ? usd(d.costs.total_usd) : '-';
}

function cloudGpus() {
  const p = state.data.pools;
  if (!p) return 0;
  const g = {};
  p.offers.forEach(o => { g[o.name] = o.gpus; });
  return p.instances.filter(i => i.state === 'ready' || i.state === 'booting')
    .reduce((a, i) => a + (g[i.offer] || 0), 0);
}

function renderAlerts() {
  const d = state.data, out = [];
  const pools = (d.pools && d.pools.pools) || [];
  const jobs = (d.jobs && d.jobs.jobs) || [];
  const queued = jobs.filter(j => j.state === 'queued').length;
  pools.forEach(p => {
    if (p.gpus_free > 0 && queued === 0)
      out.push('<div class="alert idle" data-kind="onprem-idle">' + esc(p.gpus_free) + ' on-prem GPU(s) of pool ' +
        esc(p.name) + ' are idle (nothing is queued)</div>');
  });
  const idleInst = ((d.pools && d.pools.instances) || []).filter(i => i.state === 'ready' && !i.job_id);
  idleInst.forEach(i => out.push('<div class="alert idle" data-kind="cloud-idle">cloud instance ' + esc(i.id) +
    ' (' + esc(i.offer) + ') is ready with no job: it bills while idle</div>'));
  ((d.tel && d.tel.jobs) || []).filter(j => j.idle).forEach(j => out.push(
    '<div class="alert bad" data-kind="gpu-idle">job ' + esc(j.id) + ' holds GPU(s) ' + esc(j.gpus.join(',')) +
    ' at ' + esc((j.util_pct || 0).toFixed(0)) + '% utilisation since ' + esc(clock(j.idle_since_ts)) +
    (j.stopped ? ' (stopped)' : '') + '</div>'));
  $('alerts').innerHTML = out.join('');
}

function jobRuntime(j, now) {
  if (j.start_ts) return (j.end_ts || now) - j.start_ts;
  return now - j.submit_ts;
}

// The live jobs the filters let through (state, team, text in the id, name
// or reason), one page of state.pageSize at a time.
function jobFilter(j) {
  const f = state.filter;
  const q = f.q.trim().toLowerCase();
  return (!f.state || j.state === f.state) && (!f.team || j.team === f.team) &&
    (!q || [j.id, j.name, j.reason].some(x => String(x || '').toLowerCase().includes(q)));
}

function renderJobs() {
  const jobs = (state.data.jobs && state.data.jobs.jobs) || [];
  const now = Date.now() / 1000;
  const all = jobs.filter(j => ['queued', 'placed', 'running'].includes(j.state));
  const teams = [...new Set(all.map(j => j.team))].sort();
  const sel = $('f-team');
  const opts = ['<option value="">all teams</option>'].concat(teams.map(t =>
    '<option value="' + esc(t) + '"' + (t === state.filter.team ? ' selected' : '') + '>' + esc(t) + '</option>')).join('');
  if (sel.innerHTML !== opts) sel.innerHTML = opts;
  if (state.filter.team && !teams.includes(state.filter.team))
    sel.insertAdjacentHTML('beforeend', '<option value="' + esc(state.filter.team) + '" selected>' + esc(state.filter.team) + '</option>');
  const shown = all.filter(jobFilter);
  const size = state.pageSize;
  const pages = Math.max(1, Math.ceil(shown.length / size));
  state.filter.page = Math.min(Math.max(0, state.filter.page), pages - 1);
  const from = state.filter.page * size;
  const live = shown.slice(from, from + size);
  $('page-info').textContent = shown.length ? (from + 1) + '\u2013' + (from + live.length) + ' of ' + shown.length +
    (shown.length < all.length ? ' (' + all.length + ' live)' : '') : '0 of ' + all.length;
  $('page-prev').disabled = state.filter.page === 0;
  $('page-next').disabled = state.filter.page >= pages - 1;
  rows('jobs-active', live.map(j =>
    '<tr class="job" data-id="' + esc(j.id) + '" data-state="' + esc(j.state) + '">' +
    '<td><a href="#jobs" data-explain="' + esc(j.id) + '">' + esc(j.id) + '</a></td><td>' + esc(j.name) +
    '</td><td>' + esc(j.team) + '</td><td class="st-' + esc(j.state) + '">' + esc(j.state) + '</td><td class="num">' +
    esc(j.gpus) + '</td><td>' + esc(j.where || '') + (j.emulated ? '*' : '') + (j.spot ? ' (spot)' : '') +
    '</td><td>' + esc(j.placement || '') + '</td><td class="num">' + esc(dur(jobRuntime(j, now))) +
    '</td><td class="num cost">' + esc(usd(j.cost_usd)) + '</td><td class="why">' + esc(j.reason || '') + '</td></tr>'),
    all.length ? 'no job matches the filters' : 'no job is queued or running');
  const intr = jobs.filter(j => j.preemptions || j.restarts || j.failures);
  rows('jobs-interrupted', intr.map(j => '<tr data-id="' + esc(j.id) + '"><td>' + esc(j.id) + '</td><td>' +
    esc(j.team) + '</td><td>' + esc(j.state) + '</td><td class="num">' + esc(j.preemptions) +
    '</td><td class="num">' + esc(j.failures) + '</td><td class="num">' + esc(j.restarts) +
    '</td><td class="num">' + esc(dur(j.lost_s)) + '</td></tr>'), 'no preemption or restart yet');
  const s = (state.data.series && state.data.series.samples) || [];
  lineChart($('chart-interrupts'), [
    { name: 'spot preemptions', points: s.map(x => [x.t, x.preemptions || 0]) },
    { name: 'restarts', points: s.map(x => [x.t, x.restarts || 0]) },
    { name: 'node-failure interruptions', points: s.map(x => [x.t, x.failures || 0]) },
  ], { label: 'preemptions and restarts so far (all jobs)' });
  const ended = jobs.filter(j => !['queued', 'placed', 'running'].includes(j.state)).slice(-20).reverse();
  rows('jobs-ended', ended.map(j => '<tr data-id="' + esc(j.id) + '"><td><a href="#jobs" data-explain="' +
    esc(j.id) + '">' + esc(j.id) + '</a></td><td>' + esc(j.name) + '</td><td>' + esc(j.team) + '</td><td class="st-' +
    esc(j.state) + '">' + esc(j.state) + '</td><td>' + esc(j.where || '') + '</td><td class="num">' +
    esc(dur(jobRuntime(j, now))) + '</td><td class="num">' + esc(usd(j.cost_usd)) + '</td><td class="why">' +
    esc(j.reason || '') + '</td></tr>'), 'no job has ended yet');
}

async function showExplain(id) {
  state.explainId = id;
  const box = $('explain');
  box.hidden = false;
  box.innerHTML = '<p class="muted">asking the daemon about ' + esc(id) + '...</p>';
  try {
    const e = await api('/v1/jobs/' + encodeURIComponent(id) + '/explain');
    const dec = e.decision;
    // No decision: the job's own reason says why (rejected, held).
    const job = state.jobs && state.jobs.byId.get(e.id);
    const reason = (job && job.reason) || 'no decision yet: the scheduler has not placed it';
    const why = (e.state === 'rejected' && !reason.startsWith('rejected') ? 'rejected: ' : '') + reason;
    let h = '<h3>explain ' + esc(e.id) + ' <button type="button" id="explain-close">close</button></h3>';
    h += '<p class="decision">' + (dec ? 'decision: <b>' + esc(dec.where) + '</b> ' + esc(dec.name || dec.placement || '') +
      ' &mdash; ' + esc(dec.reason || '') : 'decision: ' + esc(why)) + '</p>';
    const c = e.candidates || [];
    h += '<table><thead><tr><th>kind</th><th>name</th><th>ok</th><th>est. start</th><th>est. cost</th><th>why</th></tr></thead><tbody>';
    h += c.slice(0, 40).map(x => '<tr class="' + (x.ok ? 'ok' : 'no') + '"><td>' + esc(x.kind) + '</td><td>' + esc(x.name) +
      '</td><td>' + (x.ok ? 'yes' : 'no') + '</td><td>' + esc(x.est_start_ts ? clock(x.est_start_ts) : '') + '</td><td class="num">' +
      esc(x.est_cost_usd === null || x.est_cost_usd === undefined ? '' : usd(x.est_cost_usd)) + '</td><td>' + esc(x.why) + '</td></tr>').join('');
    h += '</tbody></table>';
    if (c.length > 40) h += '<p class="muted">' + esc(c.length - 40) + ' more candidates: <code>spillway explain --all ' + esc(id) + '</code></p>';
    h += '<div class="actions"><button type="button" id="job-logs">logs</button>';
    if (mayCancel(job || e)) h += ' <button type="button" id="job-cancel" class="danger">cancel ' + esc(e.id) + '</button>';
    h += ' <span id="job-action" class="muted"></span></div><div id="job-log" hidden></div>';
    box.innerHTML = h;
    $('explain-close').onclick = () => { box.hidden = true; state.explainId = null; };
    $('job-logs').onclick = () => showLogs(e.id);
    if ($('job-cancel')) $('job-cancel').onclick = () => cancelJob(e.id);
  } catch (err) {
    box.innerHTML = '<p class="bad">' + esc(err.message) + '</p>';
  }
}

// Whether this token may cancel job j: an admin any job, a member its own
// team's (the API decides in the end; a viewer is refused there too).
function mayCancel(j) {
  const c = state.data.series && state.data.series.caller;
  if (!c || !c.may_cancel || !j || !LIVE.includes(j.state)) return false;
  return c.role === 'admin' || c.team === j.team;
}

// A job's stdout and stderr (rank 0), as GET /v1/jobs/ID/logs gives them
// to this token: the first LOG_MAX bytes the daemon sends of each.
async function showLogs(id) {
  const box = $('job-log');
  box.hidden = false;
  box.innerHTML = '<p class="muted">reading the logs of ' + esc(id) + '...</p>';
  const base = '/v1/jobs/' + encodeURIComponent(id) + '/logs?stream=';
  try {
    const [out, err] = await Promise.all([api(base + 'out', { text: 1 }), api(base + 'err', { text: 1 })]);
    const part = (name, r) => '<h4>' + name + '</h4><pre class="log" data-stream="' + name + '">' + esc(r.text) + '</pre>' +
      (r.text ? '' : '<p class="muted">(empty)</p>');
    box.innerHTML = part('stdout', out) + part('stderr', err) +
      '<p class="muted">All ranks, and following: <code>spillway logs -f --all-ranks ' + esc(id) + '</code></p>';
  } catch (err) {
    box.innerHTML = '<p class="bad">' + esc(err.message) + '</p>';
  }
}

async function cancelJob(id) {
  if (!window.confirm('Cancel job ' + id + '?')) return;
  const note = $('job-action');
  try {
    const r = await api('/v1/jobs/' + encodeURIComponent(id) + '/cancel', { method: 'POST' });
    note.textContent = 'cancel asked: ' + (r.state || 'done');
    note.className = '';
    $('job-cancel').disabled = true;
    poll();
  } catch (err) {
    note.textContent = err.message;
    note.className = 'bad';
  }
}

function renderPools() {
  const p = state.data.pools;
  if (!p) return;
  // What owned GPUs cost this month, used or idle (`spillway costs`; admins).
  const owned = new Map(((state.data.costs && state.data.costs.pools) || []).map(x => [x.pool, x]));
  const money = v => v === null || v === undefined ? '' : usd(v);
  rows('pools', p.pools.map(x => {
    const o = owned.get(x.name) || {};
    return '<tr data-pool="' + esc(x.name) + '"><td>' + esc(x.name) + '</td><td>' +
      esc(x.gpu_model || '') + '</td><td class="num">' + esc(x.nodes) + '</td><td class="num">' + esc(x.gpus) +
      '</td><td class="num busy">' + esc(x.gpus_busy) + '</td><td class="num free">' + esc(x.gpus_free) +
      '</td><td class="num down">' + esc(x.gpus_down) + '</td><td class="num">' + esc(usd(x.cost_usd_per_gpu_h)) +
      '</td><td class="num owned">' + esc(money(o.owned_usd)) + '</td><td class="num owned-idle">' +
      esc(money(o.owned_idle_usd)) + '</td></tr>';
  }), 'no on-prem pool');
  const s = (state.data.series && state.data.series.samples) || [];
  const lines = [];
  p.pools.forEach(pool => {
    lines.push({ name: pool.name + ' busy', points: s.map(x => [x.t, ((x.pools.find(q => q.name === pool.name)) || {}).busy || 0]) });
    lines.push({ name: pool.name + ' free', dash: true, points: s.map(x => [x.t, ((x.pools.find(q => q.name === pool.name)) || {}).free || 0]) });
  });
  lineChart($('chart-pools'), lines, { label: 'on-prem GPUs busy and free' });
  lineChart($('chart-queue'), [
    { name: 'queued jobs', points: s.map(x => [x.t, x.queued]) },
    { name: 'cloud GPUs', points: s.map(x => [x.t, x.cloud_gpus]) },
  ], { label: 'queue length and cloud GPUs' });
}

// Fair share (docs/fairshare.md): GET /v1/teams as it is, each team's then
// each cohort's nominal, used, borrowed and lent on-prem GPUs; hidden when
// the daemon has neither quotas nor queue fair.
function renderFair() {
  const f = state.data.teams;
  $('fair').hidden = !f || !(f.quotas || f.queue === 'fair');
  if ($('fair').hidden) return;
  const row = (kind, name, group, x) => '<tr data-' + kind + '="' + esc(name) + '"><td>' + kind + '</td><td>' +
    esc(name) + '</td><td>' + esc(group || '-') + '</td><td class="num">' + esc(x.nominal_gpus) +
    '</td><td class="num">' + esc(x.used_gpus) + '</td><td class="num">' + esc(x.borrowed_gpus) +
    '</td><td class="num">' + esc(x.lent_gpus) + '</td><td class="num">' +
    esc(x.share === undefined ? '-' : (100 * x.share).toFixed(0) + '%') + '</td></tr>';
  rows('fair-share', f.teams.map(t => row('team', t.team, t.cohort, t))
    .concat(f.cohorts.map(c => row('cohort', c.cohort, c.parent, c))), 'no team');
}

function renderCloud() {
  const p = state.data.pools;
  if (!p) return;
  const now = Date.now() / 1000;
  const live = p.instances.filter(i => i.state === 'ready' || i.state === 'booting');
  const rest = p.instances.filter(i => !(i.state === 'ready' || i.state === 'booting')).slice(-20);
  rows('instances', live.concat(rest).map(i => '<tr data-instance="' + esc(i.id) + '" class="' +
    (i.state === 'ready' && !i.job_id ? 'idle' : '') + '"><td>' + esc(i.id) + (i.emulated ? '*' : '') + '</td><td>' +
    esc(i.offer) + '</td><td>' + esc(i.state) + '</td><td>' + esc(i.job_id || (i.state === 'ready' ? 'none (idle)' : '')) +
    '</td><td class="num">' + esc(dur((i.ended_ts || now) - i.launched_ts)) + '</td><td class="num cost">' +
    esc(usd(i.cost_usd)) + '</td></tr>'), 'no cloud instance');
  rows('offers', p.offers.filter(o => o.instances_live > 0).map(o => '<tr><td>' + esc(o.name) + (o.emulated ? '*' : '') +
    '</td><td class="num">' + esc(o.gpus) + '</td><td class="num">' + esc(usd(o.ondemand_usd_per_h)) + '</td><td class="num">' +
    esc(o.spot_usd_per_h === null ? '' : usd(o.spot_usd_per_h)) + '</td><td class="num">' + esc(o.instances_live) +
    '</td></tr>'), 'no offer has a live instance');
}

// How far a team is into its budget: ok (green) below 80%, warn (amber)
// from 80% up to 100%, over (red) at 100% and above.
function budgetLevel(frac) {
  return frac >= 1 ? 'over' : frac >= 0.8 ? 'warn' : 'ok';
}

function renderBudgets() {
  const c = state.data.costs;
  if (!c) return;
  rows('budgets', c.teams.map(t => {
    const has = t.budget_usd !== null && t.budget_usd !== undefined;
    const part = v => has && t.budget_usd > 0 ? v / t.budget_usd : (v > 0 ? Infinity : 0);
    const used = has ? part(t.settled_usd + t.reserved_usd) : null;
    const lvl = used === null ? '' : budgetLevel(used);
    const ws = Math.min(100, 100 * part(t.settled_usd));
    const wr = Math.min(100 - ws, 100 * part(t.reserved_usd));
    const bar = used === null ? '' : '<div class="bar lvl-' + lvl + '" data-level="' + lvl + '"><i class="settled" style="width:' +
      ws.toFixed(1) + '%"></i><i class="reserved" style="width:' + wr.toFixed(1) + '%"></i></div>';
    return '<tr data-team="' + esc(t.team) + '" data-level="' + lvl + '"><td>' + esc(t.team) + '</td><td>' + esc(t.period || '') + '</td><td class="num budget">' +
      esc(has ? usd(t.budget_usd) : 'none') + '</td><td class="num settled">' + esc(usd(t.settled_usd)) +
      '</td><td class="num reserved">' + esc(usd(t.reserved_usd)) + '</td><td class="num">' +
      esc(t.remaining_usd === null || t.remaining_usd === undefined ? '' : usd(t.remaining_usd)) + '</td><td>' + bar +
      (used === null ? '' : '<span class="pct lvl-' + lvl + '">' + esc(isFinite(used) ? (100 * used).toFixed(0) + '%' : 'over') + '</span>') +
      '</td><td class="num">' + esc(usd(t.cloud_usd_per_h)) +
      '</td><td class="num held">' + esc(t.held_jobs) + '</td></tr>';
  }), 'no team');
  const s = (state.data.series && state.data.series.samples) || [];
  const lines = [];
  c.teams.forEach(t => {
    lines.push({ name: t.team + ' settled + reserved', points: s.map(x => {
      const r = x.teams.find(q => q.team === t.team) || {};
      return [x.t, (r.settled_usd || 0) + (r.reserved_usd || 0)];
    }) });
    if (t.budget_usd !== null)
      lines.push({ name: t.team + ' budget', dash: true, points: s.map(x => [x.t, t.budget_usd]) });
  });
  lineChart($('chart-burn'), lines, { label: 'budget burn-down', fmt: usdAxis, minMax: 0.01 });
}

function renderSpend() {
  const c = state.data.costs;
  if (!c) return;
  rows('spend-teams', c.teams.map(t => '<tr data-team="' + esc(t.team) + '"><td>' + esc(t.team) + '</td><td class="num onprem">' +
    esc(usd(t.onprem_usd)) + '</td><td class="num cloud">' + esc(usd(t.cloud_usd)) + '</td><td class="num">' +
    esc(usd(t.commit_usd || 0)) + '</td><td class="num">' +
    esc(usd(t.onprem_usd + t.cloud_usd + (t.commit_usd || 0))) + '</td><td class="num">' + esc((t.onprem_gpu_h || 0).toFixed(2)) + '</td><td class="num">' +
    esc((t.cloud_gpu_h || 0).toFixed(2)) + '</td><td class="num">' + esc(t.jobs) + '</td></tr>'), 'no spend');
  rows('spend-providers', (c.providers || []).map(p => '<tr data-provider="' + esc(p.provider) + '"><td>' + esc(p.provider) +
    '</td><td class="num">' + esc(usd(p.usd)) + '</td><td class="num">' + esc(p.instances) + '</td><td>' +
    (p.emulated ? 'yes (nothing real is bought)' : 'no') + '</td></tr>'), 'providers are shown to admins');
  // Commitments (cloud.commitments): paid used or idle, outside budgets.
  rows('spend-commitments', (c.commitments || []).map(m => '<tr data-commitment="' + esc(m.name) + '"><td>' +
    esc(m.name) + '</td><td class="num">' + esc(m.gpus) + '</td><td class="num">' + esc(usd(m.usd_per_gpu_h)) +
    '</td><td class="num">' + esc(usd(m.used_usd)) + '</td><td class="num">' + esc(usd(m.idle_usd)) +
    '</td><td class="num">' + esc(usd(m.usd)) + '</td></tr>'),
    c.commit_used_usd === null ? 'commitments are shown to admins' : 'no commitments (cloud.commitments)');
  const s = (state.data.series && state.data.series.samples) || [];
  const lines = [{ name: 'on-prem (amortised)', points: s.map(x => [x.t, x.onprem_usd]) },
                 { name: 'cloud', points: s.map(x => [x.t, x.cloud_usd]) }];
  c.teams.forEach(t => lines.push({ name: t.team, dash: true, points: s.map(x => {
    const r = x.teams.find(q => q.team === t.team) || {};
    return [x.t, (r.onprem_usd || 0) + (r.cloud_usd || 0)];
  }) }));
  lineChart($('chart-spend'), lines, { label: 'spend over time', fmt: usdAxis, minMax: 0.01 });
  const provs = [...new Set(s.flatMap(x => x.providers.map(p => p.provider)))];
  lineChart($('chart-providers'), provs.map(name => ({ name, points: s.map(x =>
    [x.t, ((x.providers.find(p => p.provider === name)) || {}).usd || 0]) })), { label: 'cloud spend per provider', fmt: usdAxis, minMax: 0.01 });
}

function renderGpus() {
  const t = state.data.tel;
  if (!t) return;
  $('tel-source').textContent = t.source === 'nvidia-smi' ? 'from nvidia-smi at ' + clock(t.ts) +
    '; a job under ' + t.idle_gpu.threshold_pct + '% for ' + dur(t.idle_gpu.window_s) + ' is flagged (' + t.idle_gpu.action + ')'
    : (t.error || 'no telemetry yet');
  rows('gpus', t.gpus.map(g => '<tr data-gpu="' + esc(g.index) + '"><td>' + esc(g.index) + '</td><td>' + esc(g.uuid) +
    '</td><td class="num util"><div class="bar"><i class="settled" style="width:' + g.util_pct.toFixed(0) + '%"></i></div>' +
    esc(g.util_pct.toFixed(0)) + '%</td><td class="num">' + esc((g.mem_used_mib / 1024).toFixed(1) + ' / ' +
    (g.mem_total_mib / 1024).toFixed(1) + ' GiB') + '</td><td>' + esc(g.job || 'free') + '</td></tr>'), 'no GPU seen');
  rows('gpu-jobs', t.jobs.map(j => '<tr data-id="' + esc(j.id) + '" class="' + (j.idle ? 'idle' : '') + '"><td>' + esc(j.id) +
    '</td><td>' + esc(j.team) + '</td><td>' + esc(j.gpus.join(',')) + '</td><td class="num util">' +
    esc(j.util_pct === null ? '' : j.util_pct.toFixed(0) + '%') + '</td><td class="num">' +
    esc((j.mem_used_mib / 1024).toFixed(1) + ' GiB') + '</td><td>' + esc(j.idle_since_ts ? clock(j.idle_since_ts) : '') +
    '</td><td>' + (j.idle ? (j.stopped ? 'idle: stopped' : 'idle') : '') + '</td></tr>'), 'no running on-prem job');
}

function render() {
  document.querySelectorAll('.view').forEach(v => { v.hidden = v.id !== 'view-' + state.view; });
  document.querySelectorAll('#nav a').forEach(a => a.classList.toggle('on', a.dataset.view === state.view));
  renderTiles();
  renderAlerts();
  renderJobs();
  renderPools();
  renderFair();
  renderCloud();
  renderBudgets();
  renderSpend();
  renderGpus();
  document.body.dataset.ready = '1';
}

// The jobs to show, without reading the whole history every poll (the API
// lists oldest first): the live states in full each time; jobs newer than
// the last seen seq (a cursor; the first poll pages through the history
// once); and, for a job that has left the live states, its record once.
// Keeps the live jobs and the last KEEP_ENDED ended ones.
const KEEP_ENDED = 50;
const LIVE = ['queued', 'placed', 'running'];
const QUEUED_MAX = 1000;
async function loadJobs() {
  const j = state.jobs || (state.jobs = { cursor: 0, byId: new Map() });
  // At most QUEUED_MAX of a deep queue (the oldest): listing them all every
  // few seconds would cost the daemon more than the page is worth.
  const lists = await Promise.all(LIVE.map(st => api('/v1/jobs?state=' + st + '&limit=' +
    (st === 'queued' ? QUEUED_MAX : 10000))));
  j.queuedMore = lists[0].next_after !== null;
  const live = new Map();
  lists.forEach(l => l.jobs.forEach(x => live.set(x.id, x)));
  for (;;) {
    const page = await api('/v1/jobs?after=' + j.cursor + '&limit=10000');
    page.jobs.forEach(x => { j.byId.set(x.id, x); j.cursor = Math.max(j.cursor, x.seq); });
    if (page.next_after === null || !page.jobs.length) break;
  }
  // Queued jobs past the first QUEUED_MAX are not shown (nor looked up).
  if (j.queuedMore)
    [...j.byId.values()].filter(x => x.state === 'queued' && !live.has(x.id)).forEach(x => j.byId.delete(x.id));
  const gone = [...j.byId.values()].filter(x => LIVE.includes(x.state) && !live.has(x.id));
  const fresh = await Promise.all(gone.map(x => api('/v1/jobs/' + encodeURIComponent(x.id)).catch(() => null)));
  fresh.forEach((x, i) => { if (x) j.byId.set(x.id, x); else j.byId.delete(gone[i].id); });
  live.forEach((x, id) => j.byId.set(id, x));
  const ended = [...j.byId.values()].filter(x => !LIVE.includes(x.state)).sort((a, b) => a.seq - b.seq);
  ended.slice(0, Math.max(0, ended.length - KEEP_ENDED)).forEach(x => j.byId.delete(x.id));
  return { jobs: [...j.byId.values()].sort((a, b) => a.seq - b.seq), queuedMore: j.queuedMore };
}

async function poll() {
  clearTimeout(state.timer);
  try {
    const [jobs, pools, costs, series, tel, teams] = await Promise.all([
      loadJobs(), api('/v1/pools'), api('/v1/costs'),
      api('/v1/ui/series?range=' + state.range), api('/v1/ui/telemetry'), api('/v1/teams')]);
    Object.assign(state.data, { jobs, pools, costs, series, tel, teams });
    $('status').textContent = '';
    $('updated').textContent = 'Last update ' + new Date().toTimeString().slice(0, 8) + '.';
    render();
  } catch (err) {
    if (err.auth) { signOut(err.message); return; }
    $('status').textContent = 'cannot reach the daemon: ' + err.message;
    $('status').className = 'bad';
  }
  state.timer = setTimeout(poll, POLL_MS);
}

// ---- sign in, navigation ---------------------------------------------------

function signOut(msg) {
  clearTimeout(state.timer);
  clearViews();
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(EXP_KEY);
  state.token = null;
  $('main').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = msg || '';
  $('who').textContent = '';
  offerLogin();
}

// ---- OpenID Connect login (authorization code + PKCE) -----------------------

function b64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
function randomText() { return b64url(crypto.getRandomValues(new Uint8Array(32))); }
// The claims of a JWT, unverified (the daemon verifies; the page only reads).
function jwtClaims(t) {
  try {
    const p = t.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(p + '='.repeat((4 - p.length % 4) % 4)));
  } catch (err) {
    return null;
  }
}

// GET /v1/ui/login (no token): the daemon's provider, public client and
// endpoints; null when it has no daemon.oidc login.  Asked once.
async function loginInfo() {
  if (state.oidc === undefined) {
    state.oidc = fetch('/v1/ui/login').then(async r => {
      const b = await r.json();
      if (!r.ok) throw new Error((b.error && b.error.message) || ('HTTP ' + r.status));
      return b.login ? b : null;
    });
  }
  return state.oidc;
}
function redirectUri(o) { return o.redirect_uri || location.origin + '/ui/'; }

// Shows "Log in with ISSUER" on the sign-in form when there is a login.
async function offerLogin() {
  try {
    const o = await loginInfo();
    if (!o) return;
    $('oidc-login').textContent = 'Log in with ' + o.issuer;
    $('oidc').hidden = false;
  } catch (err) {
    state.oidc = undefined;  // asked again next time
    $('login-error').textContent = 'the login through the identity provider is unavailable: ' + err.message;
  }
}

// To the provider's authorization endpoint, with a fresh code verifier
// (its S256 challenge sent), state and nonce kept in this tab.
async function startLogin() {
  if (!window.isSecureContext)
    throw new Error('the login needs the dashboard over HTTPS (daemon.tls_cert and tls_key)');
  const o = await loginInfo();
  const verifier = randomText();
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const pending = { verifier, state: randomText(), nonce: randomText(), view: state.view };
  sessionStorage.setItem(OIDC_KEY, JSON.stringify(pending));
  const q = new URLSearchParams({ response_type: 'code', client_id: o.client_id,
    redirect_uri: redirectUri(o), scope: o.scopes, state: pending.state, nonce: pending.nonce,
    code_challenge: challenge, code_challenge_method: 'S256' });
  const a = o.authorization_endpoint;
  location.assign(a + (a.includes('?') ? '&' : '?') + q);
}

// The provider sent the browser back with ?code=&state= (or ?error=):
// state must be this tab's, the code is exchanged with the verifier, and
// the ID token must carry this login's nonce, the issuer and the client.
// Returns the access token (its expiry kept), or throws a sentence.
async function finishLogin(q) {
  const pending = JSON.parse(sessionStorage.getItem(OIDC_KEY) || 'null');
  sessionStorage.removeItem(OIDC_KEY);
  history.replaceState(null, '', location.pathname + '#' + ((pending && pending.view) || 'jobs'));
  if (q.get('error'))
    throw new Error('the identity provider refused the login: ' + (q.get('error_description') || q.get('error')));
  if (!pending || q.get('state') !== pending.state)
    throw new Error('this answer is not for the login started in this tab (state differs): log in again');
  const o = await loginInfo();
  if (!o) throw new Error('the daemon offers no login (daemon.oidc.client_id)');
  const r = await fetch(o.token_endpoint, { method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: q.get('code'),
      redirect_uri: redirectUri(o), client_id: o.client_id, code_verifier: pending.verifier }) });
  const t = await r.json().catch(() => ({}));
  if (!r.ok || !t.access_token)
    throw new Error('the provider refused the code: ' + (t.error_description || t.error || ('HTTP ' + r.status)));
  const id = t.id_token ? jwtClaims(t.id_token) : null;
  if (!id || id.nonce !== pending.nonce || id.iss !== o.issuer || ![].concat(id.aud).includes(o.client_id))
    throw new Error('the ID token is not for this login (nonce, issuer or audience differs): log in again');
  state.view = pending.view || 'jobs';
  const exp = t.expires_in ? Date.now() + t.expires_in * 1000 : ((jwtClaims(t.access_token) || {}).exp || 0) * 1000;
  sessionStorage.setItem(EXP_KEY, String(exp));
  return t.access_token;
}

// Forgets what the previous token showed (an open explain, the views).
function clearViews() {
  state.explainId = null;
  state.filter = { state: '', team: '', q: '', page: 0 };
  $('f-state').value = '';
  $('f-team').value = '';
  $('f-q').value = '';
  $('explain').hidden = true;
  $('explain').innerHTML = '';
}

async function signIn(token) {
  clearTimeout(state.timer);
  clearViews();
  document.body.dataset.ready = '0';
  state.data = {};
  state.jobs = null;
  state.token = token;
  sessionStorage.setItem(KEY, token);
  $('login').hidden = true;
  $('main').hidden = false;
  $('logout').hidden = false;
  try {
    const c = await api('/v1/costs');
    const view = c.org ? 'admin view' : 'team view';
    const cl = sessionStorage.getItem(EXP_KEY) && jwtClaims(token);
    const name = cl && (cl.preferred_username || cl.email || cl.sub);
    $('who').textContent = name ? name + ' (' + view + ')' : view;
  } catch (err) {
    if (err.auth) { signOut(err.message); return; }
  }
  poll();
}

// The view named by the address.  #token=T&view=V (for scripts and tests)
// signs in with T, which goes to sessionStorage at once and is dropped from
// the address; returns 1 then.
function route() {
  const h = location.hash.replace(/^#/, '');
  const params = new URLSearchParams(h.includes('=') ? h : '');
  if (params.get('token')) {
    sessionStorage.setItem(KEY, params.get('token'));
    sessionStorage.removeItem(EXP_KEY);
    const v = params.get('view') || 'jobs';
    history.replaceState(null, '', location.pathname + '#' + v);
    state.view = v;
    return 1;
  }
  state.view = ['jobs', 'pools', 'cloud', 'budgets', 'spend', 'gpus'].includes(h) ? h : 'jobs';
  return 0;
}

window.addEventListener('hashchange', () => {
  if (route()) signIn(sessionStorage.getItem(KEY));
  else if (state.token && state.data.costs) render();
});
document.addEventListener('click', ev => {
  const a = ev.target.closest('[data-explain]');
  if (a) { ev.preventDefault(); showExplain(a.dataset.explain); }
});
$('login').addEventListener('submit', ev => {
  ev.preventDefault();
  const t = $('token').value.trim();
  sessionStorage.removeItem(EXP_KEY);  // a pasted token: no known expiry
  if (t) signIn(t);
});
$('logout').addEventListener('click', () => signOut(''));
$('oidc-login').addEventListener('click', () => startLogin().catch(err => {
  $('login-error').textContent = 'cannot start the login: ' + err.message;
}));
// Filters and pages of the job list: drawn again at once, from what the
// last poll read.
function refilter(change) {
  Object.assign(state.filter, change);
  if (state.data.jobs) renderJobs();
}
$('f-state').addEventListener('change', ev => refilter({ state: ev.target.value, page: 0 }));
$('f-team').addEventListener('change', ev => refilter({ team: ev.target.value, page: 0 }));
$('f-q').addEventListener('input', ev => refilter({ q: ev.target.value, page: 0 }));
$('page-prev').addEventListener('click', () => refilter({ page: state.filter.page - 1 }));
$('page-next').addEventListener('click', () => refilter({ page: state.filter.page + 1 }));
// The span of the charts: the daemon keeps every sample for an hour, one
// a minute for a day and one every ten minutes for a week.
$('range').addEventListener('change', ev => { state.range = Number(ev.target.value) || 3600; if (state.token) poll(); });

route();
const answer = new URLSearchParams(location.search);
if (answer.get('code') || answer.get('error')) {
  finishLogin(answer).then(signIn, err => signOut(err.message));
} else {
  const saved = sessionStorage.getItem(KEY);
  if (saved) signIn(saved); else signOut('');
}
