// report.js: draws spillway's what-if report from the JSON in #spw-data.
// Inlined into the HTML by `spillway sim --report`; no dependencies, no
// network: every chart is SVG made here.
// It must not contain "</" outside strings: the writer escapes it as "<\/".
'use strict';
(function () {
  const D = JSON.parse(document.getElementById('spw-data').textContent);
  const COLORS = ['#2b6cb0', '#dd6b20', '#38a169', '#805ad5', '#d53f8c', '#319795', '#b7791f', '#4a5568'];
  const $ = id => document.getElementById(id);
  const esc = s => String(s === null || s === undefined ? '' : s).replace(/&/g, '&amp;').replace(/[<]/g, '&lt;')
    .replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const usd = v => v === null || v === undefined ? '' : '$' + Number(v).toFixed(2).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const dur = s => !isFinite(s) ? '' : s < 120 ? s.toFixed(0) + ' s' : s < 7200 ? (s / 60).toFixed(1) + ' min' :
    s < 172800 ? (s / 3600).toFixed(1) + ' h' : (s / 86400).toFixed(1) + ' d';
  const num = v => Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : String(+v.toFixed(2));
  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }
  // series: [{name, pts: [[x, y]...]}]; opts: fx, fy (tick labels), points (dots, no lines), xlog
  function chart(el, series, opts) {
    const W = 620, H = 260, L = 78, R = 20, T = 10, B = 34;
    const all = series.flatMap(s => s.pts);
    if (!all.length) { el.innerHTML = '<p class="muted">no data</p>'; return; }
    const xs = all.map(p => p[0]), ys = all.map(p => p[1]);
    let x0 = opts.x0 !== undefined ? opts.x0 : Math.min(...xs), x1 = Math.max(...xs);
    if (opts.points) { const pad = (x1 - x0) * 0.08 || 1; x0 = Math.max(0, x0 - pad); x1 += pad; }
    if (x1 <= x0) x1 = x0 + 1;
    const y1 = niceMax(Math.max(...ys) * (opts.points ? 1.1 : 1));
    const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R), sy = y => T + (1 - y / y1) * (H - T - B);
    let s = '<svg viewBox="0 0 ' + W + ' ' + H + '" role="img">';
    for (let i = 0; i <= 4; i++) {
      const v = y1 * i / 4;
      s += '<line class="grid" x1="' + L + '" x2="' + (W - R) + '" y1="' + sy(v) + '" y2="' + sy(v) + '"/>' +
        '<text x="' + (L - 6) + '" y="' + (sy(v) + 4) + '" text-anchor="end">' + esc(opts.fy ? opts.fy(v) : num(v)) + '</text>';
      const x = x0 + (x1 - x0) * i / 4;
      s += '<text x="' + sx(x) + '" y="' + (H - 16) + '" text-anchor="middle">' + esc(opts.fx ? opts.fx(x) : num(x)) + '</text>';
    }
    if (opts.xlabel) s += '<text x="' + ((L + W - R) / 2) + '" y="' + (H - 2) + '" text-anchor="middle">' + esc(opts.xlabel) + '</text>';
    if (opts.frontier && opts.frontier.length > 1)
      s += '<path class="frontier" d="' + opts.frontier.map((p, k) => (k ? 'L' : 'M') + sx(p[0]).toFixed(1) + ' ' +
        sy(p[1]).toFixed(1)).join(' ') + '" fill="none" stroke="#a0aec0" stroke-width="1.5" stroke-dasharray="5 4"/>';
    series.forEach((se, i) => {
      const c = COLORS[i % COLORS.length];
      if (opts.points) {
        se.pts.forEach(p => {
          s += '<circle class="pt" cx="' + sx(p[0]).toFixed(1) + '" cy="' + sy(p[1]).toFixed(1) + '" r="6" fill="' + c + '"><title>' +
            esc(se.name) + '</title></circle><text class="lbl" data-x="' + sx(p[0]).toFixed(1) + '" data-y="' + sy(p[1]).toFixed(1) +
            '" x="' + (sx(p[0]) + 9).toFixed(1) + '" y="' + (sy(p[1]) + 4).toFixed(1) +
            '" style="fill:#1a202c">' + esc(se.name) + '</text>';
        });
      } else {
        const d = se.pts.map((p, k) => (k ? 'L' : 'M') + sx(p[0]).toFixed(1) + ' ' + sy(p[1]).toFixed(1)).join(' ');
        s += '<path d="' + d + '" fill="none" stroke="' + c + '" stroke-width="1.8"/>';
      }
    });
    s += '</svg>';
    if (!opts.points)
      s += '<div class="legend">' + series.map((se, i) => '<span><i style="background:' + COLORS[i % COLORS.length] +
        '"></i>' + esc(se.name) + '</span>').join('') + '</div>';
    el.innerHTML = s;
    if (opts.points)
      unclutter(el.querySelector('svg'), W, H);
  }
  // Moves each point's label to the first place, near its point, where it
  // overlaps no label placed before it, no point and stays inside the chart
  // (measured: the labels are in the page); a label moved off its point's
  // side gets a thin leader line.
  function unclutter(svg, W, H) {
    const boxes = [...svg.querySelectorAll('circle.pt')].map(c => {
      const x = +c.getAttribute('cx'), y = +c.getAttribute('cy');
      return { x: x - 6, y: y - 6, width: 12, height: 12 };
    });
    const hit = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
    const tries = [[9, 4, 'start'], [-9, 4, 'end'], [0, -10, 'middle'], [0, 18, 'middle']];
    for (let k = 1; k <= 8; k++)
      tries.push([9, 4 + 14 * k, 'start'], [9, 4 - 14 * k, 'start'], [-9, 4 + 14 * k, 'end'], [-9, 4 - 14 * k, 'end']);
    svg.querySelectorAll('text.lbl').forEach(t => {
      const px = +t.dataset.x, py = +t.dataset.y;
      let best = null;
      for (const [dx, dy, anchor] of tries) {
        t.setAttribute('x', (px + dx).toFixed(1));
        t.setAttribute('y', (py + dy).toFixed(1));
        t.setAttribute('text-anchor', anchor);
        const b = t.getBBox();
        const inside = b.x >= 0 && b.y >= 0 && b.x + b.width <= W && b.y + b.height <= H;
        if (inside && !boxes.some(o => hit(b, o))) { best = [dx, dy, anchor, b]; break; }
      }
      if (!best) {  // nowhere free: beside the point, as before
        t.setAttribute('x', (px + 9).toFixed(1));
        t.setAttribute('y', (py + 4).toFixed(1));
        t.setAttribute('text-anchor', 'start');
        boxes.push(t.getBBox());
        return;
      }
      boxes.push(best[3]);
      if (Math.abs(best[1]) > 18) {
        const ln = document.createElementNS('http://www.w3.org/2000/svg', 'line');
        ln.setAttribute('class', 'lead');
        ln.setAttribute('x1', px); ln.setAttribute('y1', py);
        ln.setAttribute('x2', px + best[0] * 0.8); ln.setAttribute('y2', py + best[1] - 4);
        ln.setAttribute('stroke', '#a0aec0');
        svg.insertBefore(ln, svg.firstChild);
      }
    });
  }
  function bars(el, groups, keys) {
    // groups: [{name, vals: {key: v}}], stacked bars of keys
    const W = 620, H = 260, L = 78, R = 20, T = 10, B = 34;
    const tot = groups.map(g => keys.reduce((a, k) => a + (g.vals[k] || 0), 0));
    const y1 = niceMax(Math.max(0, ...tot));
    const sy = y => T + (1 - y / y1) * (H - T - B);
    const bw = (W - L - R) / Math.max(1, groups.length);
    let s = '<svg viewBox="0 0 ' + W + ' ' + H + '" role="img">';
    for (let i = 0; i <= 4; i++) {
      const v = y1 * i / 4;
      s += '<line class="grid" x1="' + L + '" x2="' + (W - R) + '" y1="' + sy(v) + '" y2="' + sy(v) + '"/>' +
        '<text x="' + (L - 6) + '" y="' + (sy(v) + 4) + '" text-anchor="end">' + esc(usd(v)) + '</text>';
    }
    groups.forEach((g, i) => {
      let acc = 0;
      const x = L + i * bw + bw * 0.15;
      keys.forEach((k, j) => {
        const v = g.vals[k] || 0;
        s += '<rect x="' + x.toFixed(1) + '" width="' + (bw * 0.7).toFixed(1) + '" y="' + sy(acc + v).toFixed(1) + '" height="' +
          (sy(acc) - sy(acc + v)).toFixed(1) + '" fill="' + COLORS[j % COLORS.length] + '"><title>' + esc(g.name + ' ' + k + ' ' + usd(v)) + '</title></rect>';
        acc += v;
      });
      s += '<text x="' + (x + bw * 0.35).toFixed(1) + '" y="' + (H - 18) + '" text-anchor="middle">' + esc(g.name) + '</text>';
    });
    // Each run's name once, under its run's bars (one under each narrow bar
    // would overlap its neighbours), with a tick between runs.
    for (let i = 0; i < groups.length;) {
      let k = i;
      while (k < groups.length && groups[k].sub === groups[i].sub) k++;
      if (groups[i].sub) {
        const cx = L + (i + k) / 2 * bw;
        s += '<text class="sub" x="' + cx.toFixed(1) + '" y="' + (H - 4) + '" text-anchor="middle" style="font-size:10px;fill:#1a202c">' +
          esc(groups[i].sub) + '</text>';
        if (i > 0)
          s += '<line class="grid" x1="' + (L + i * bw).toFixed(1) + '" x2="' + (L + i * bw).toFixed(1) + '" y1="' + (H - B) + '" y2="' + H + '"/>';
      }
      i = k;
    }
    s += '</svg><div class="legend">' + keys.map((k, j) => '<span><i style="background:' + COLORS[j % COLORS.length] + '"></i>' + esc(k) + '</span>').join('') + '</div>';
    el.innerHTML = s;
  }

  const runs = D.runs, inp = D.inputs;
  $('subtitle').textContent = inp.trace + ' \u2014 ' + inp.jobs + ' jobs' + (inp.compare ? ', comparing ' + inp.compare : '') +
    ' \u2014 spillway ' + inp.version;

  // comparison table
  const total = r => r.summary.total_cost_usd;
  // The cost rows add up: on-prem used + on-prem idle + cloud (+ committed
  // used + idle) (+ egress) = total; owned GPUs and committed ones cost money
  // whether a job used them or not.
  const S = r => r.summary, G = r => r.summary.governance || {};
  const egress = runs.some(r => (S(r).egress_usd || 0) > 0);
  // Cloud commitments (cloud.commitments) are paid used or idle too.
  const commit = runs.some(r => S(r).commit_cost_usd !== undefined);
  const gov = runs.some(r => G(r).active);
  const rowsDef = [
    ['jobs on-prem', r => S(r).jobs_onprem],
    ['jobs to cloud', r => S(r).jobs_cloud],
    ['on-prem used (amortised)', r => usd(S(r).owned_used_usd)],
    ['on-prem idle (owned, unused)', r => usd(S(r).owned_idle_usd)],
    ['cloud cost', r => usd(S(r).cloud_cost_usd)],
  ].concat(commit ? [['cloud committed used', r => usd(S(r).commit_used_usd || 0)],
                     ['cloud committed idle', r => usd(S(r).commit_idle_usd || 0)]] : [],
           egress ? [['egress cost', r => usd(S(r).egress_usd)]] : [], [
    ['total cost', r => usd(total(r))],
    ['wait mean', r => dur(S(r).wait_mean_s)],
    ['wait p50', r => dur(S(r).wait_p50_s)],
    ['wait p90', r => dur(S(r).wait_p90_s)],
    ['wait p99', r => dur(S(r).wait_p99_s)],
    ['JCT mean', r => dur(S(r).jct_mean_s)],
    ['on-prem utilisation', r => S(r).onprem_utilization === undefined ? '' : (100 * S(r).onprem_utilization).toFixed(1) + '%'],
    ['most jobs queued', r => S(r).queue_max],
    ['cloud GPU-hours', r => S(r).cloud_gpu_hours === undefined ? '' : num(S(r).cloud_gpu_hours)],
  ], gov ? [
    ['held (budget/cap)', r => G(r).jobs_held],
    ['rejected (budget)', r => G(r).jobs_rejected],
    ['never ran', r => G(r).jobs_never_ran],
    ['on-prem: residency', r => G(r).jobs_onprem_by_residency],
    ['on-prem only (budget)', r => G(r).jobs_onprem_only_budget],
    ['stopped at max runtime', r => G(r).jobs_stopped_max_runtime],
    ['peak cloud $/h', r => usd(G(r).peak_cloud_usd_per_h)],
    ['peak cloud GPUs', r => G(r).peak_cloud_gpus === undefined ? '' : String(+G(r).peak_cloud_gpus.toFixed(1))],
  ] : []);
  $('compare').querySelector('thead').innerHTML = '<tr><th>' + esc(inp.compare || 'policy') + '</th>' +
    runs.map(r => '<th>' + esc(r.label) + '</th>').join('') + '</tr>';
  $('compare').querySelector('tbody').innerHTML = rowsDef.map(([name, f]) => '<tr data-row="' + esc(name) + '"><td>' + esc(name) + '</td>' +
    runs.map(r => '<td>' + esc(f(r)) + '</td>').join('') + '</tr>').join('');

  // frontier: each policy a point (mean wait, total cost); the policies no
  // other beats on both are joined by a dashed line (the Pareto frontier)
  const pts = runs.map(r => ({ name: r.label, w: r.summary.wait_mean_s / 3600, c: total(r) }));
  const front = pts.filter(p => !pts.some(q => q !== p && q.w <= p.w && q.c <= p.c && (q.w < p.w || q.c < p.c)))
    .sort((a, b) => a.w - b.w);
  chart($('frontier'), pts.map(p => ({ name: p.name, pts: [[p.w, p.c]] })),
    { points: true, fx: v => num(v) + ' h', fy: usd, xlabel: 'mean wait (hours)', frontier: front.map(p => [p.w, p.c]) });
  $('frontier').dataset.frontier = front.map(p => p.name).join(',');
  $('frontier').insertAdjacentHTML('beforeend', '<p class="muted" style="margin:2px 8px;font-size:12px">On the dashed line: ' +
    esc(front.map(p => p.name).join(', ')) + ' (no other policy is both cheaper and faster).</p>');

  const hours = t => t / 3600;
  chart($('queue'), runs.map(r => ({ name: r.label, pts: r.timeseries.map(p => [hours(p[0]), p[1]]) })),
    { fx: v => num(v) + ' h', xlabel: 'simulated time (hours)' });
  chart($('cloud'), runs.map(r => ({ name: r.label, pts: r.timeseries.map(p => [hours(p[0]), p[3]]) })),
    { fx: v => num(v) + ' h', xlabel: 'simulated time (hours)' });
  // distributions as CDFs: x = seconds (as hours), y = share of jobs
  chart($('wait'), runs.map(r => ({ name: r.label, pts: r.wait_pct_s.map((v, p) => [v / 3600, p / 100]) })),
    { fx: v => num(v) + ' h', fy: v => Math.round(v * 100) + '%', xlabel: 'wait (hours)', x0: 0 });
  chart($('jct'), runs.map(r => ({ name: r.label, pts: r.jct_pct_s.map((v, p) => [v / 3600, p / 100]) })),
    { fx: v => num(v) + ' h', fy: v => Math.round(v * 100) + '%', xlabel: 'job completion time (hours)', x0: 0 });

  // per-team spend
  const groups = [];
  runs.forEach(r => r.teams.forEach(t => groups.push({ name: t.team, sub: r.label,
    vals: { 'on-prem (amortised)': t.onprem_usd, cloud: t.cloud_usd, egress: t.egress_usd } })));
  if (!groups.length)  // no teams: the whole run is one bar
    runs.forEach(r => groups.push({ name: r.label, vals: { 'on-prem (amortised)': r.summary.onprem_cost_usd, cloud: r.summary.cloud_cost_usd, egress: 0 } }));
  bars($('teams'), groups, ['on-prem (amortised)', 'cloud', 'egress']);
  $('team-table').querySelector('thead').innerHTML = '<tr><th>team</th><th>' + esc(inp.compare || 'policy') +
    '</th><th>jobs</th><th>on-prem</th><th>cloud</th><th>egress</th><th>total</th><th>mean wait</th>' +
    '<th>p90 wait</th><th>rho</th></tr>';
  $('team-table').querySelector('tbody').innerHTML = groups.length && runs.some(r => r.teams.length) ?
    runs.flatMap(r => r.teams.map(t => '<tr><td>' + esc(t.team) + '</td><td>' + esc(r.label) + '</td><td>' + esc(t.jobs) +
      '</td><td>' + usd(t.onprem_usd) + '</td><td>' + usd(t.cloud_usd) + '</td><td>' + usd(t.egress_usd) + '</td><td>' +
      usd(t.onprem_usd + t.cloud_usd + t.egress_usd) + '</td><td>' + esc(dur(t.wait_mean_s)) + '</td><td>' +
      esc(dur(t.wait_p90_s)) + '</td><td>' + esc(t.rho > 0 ? t.rho.toFixed(2) : '-') + '</td></tr>')).join('') :
    '<tr><td colspan="10" class="muted">the trace has no teams</td></tr>';

  // inputs
  const fleet = inp.pools.map(p => p.name + ': ' + p.nodes + ' nodes, ' + p.gpus + ' ' + p.gpu + ' GPUs at ' + usd(p.cost_usd_per_gpu_h) + '/GPU-h').join('; ');
  const offers = Object.entries(inp.offers_by_provider).map(([k, v]) => k + ' (' + v + ' offers)').join(', ');
  const items = [['command', '<code>' + esc(inp.command) + '</code>'], ['trace', esc(inp.trace) + ' (' + inp.jobs + ' jobs, ' + inp.jobs_skipped + ' skipped)'],
    ['config', esc(inp.config || 'the built-in example fleet')], ['on-prem fleet', esc(fleet || 'none')], ['cloud', esc(offers || 'none')],
    ['wait policy', esc(inp.wait_policy) + (inp.compare ? ' (the config\'s; the comparison varies ' + esc(inp.compare) + ')' : '')],
    ['time-series step', esc(dur(inp.step_s))], ['spillway', esc(inp.version)]];
  $('inputs').innerHTML = items.map(([k, v]) => '<dt>' + esc(k) + '</dt><dd>' + v + '</dd>').join('');
  document.body.dataset.ready = '1';
})();
