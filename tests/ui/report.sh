#!/bin/sh
# report.sh: `spillway sim --report FILE.html` writes one self-contained
# file (no reference to anything outside it) that a real headless Chromium
# renders with no console error: the comparison table equals `sim -o json`,
# every chart is drawn, per-team spend and the inputs are there.  The
# screenshots go to build/artifacts/ui/.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/../cli/tap-lib"

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
if [ -z "$CHROMIUM" ] || ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # skip chromium or python3 is not installed (make deps-test)"
    exit 0
fi
export CHROMIUM
plan 12
ART=$(pwd)/build/artifacts/ui
mkdir -p "$ART"
EX=$(cd "$(dirname "$0")/../../examples" && pwd)

"$SPW" sim --trace "$EX/team-jobs.csv" --config "$EX/governance.yaml" -q \
    --compare never,none,compute:0.25 --report "$T/r.html" -o json >"$T/r.json" 2>"$T/err"
ok $? "sim --compare ... --report writes the report" || diag "$(cat "$T/err")"

python3 - "$T/r.html" <<'PYEOF'
import re, sys
h = open(sys.argv[1]).read()
assert h.count("<html") == 1 and "</html>" in h
# nothing loaded from elsewhere: no src/href but data: and #anchors
refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', h)
bad = [r for r in refs if not (r.startswith("data:") or r.startswith("#"))]
assert not bad, bad
assert "/*SPW_DATA*/" not in h and "/*SPW_SCRIPT*/" not in h
PYEOF
ok $? "the file is self-contained: one page, no external script, style or image"

cat >"$T/steps.json" <<JSON
[{"name": "report", "url": "file://$T/r.html", "wait": "document.body.dataset.ready === '1'",
  "extract": "({head: [...document.querySelectorAll('#compare thead th')].map(c => c.textContent), rows: Object.fromEntries([...document.querySelectorAll('#compare tbody tr')].map(r => [r.dataset.row, [...r.cells].slice(1).map(c => c.textContent)])), frontier: document.getElementById('frontier').dataset.frontier, points: document.querySelectorAll('#frontier svg circle.pt').length, charts: Object.fromEntries(['frontier', 'teams', 'queue', 'cloud', 'wait', 'jct'].map(id => [id, document.querySelectorAll('#' + id + ' svg path, #' + id + ' svg circle.pt, #' + id + ' svg rect').length])), labels: [...document.querySelectorAll('#frontier svg text[style]')].map(t => { const b = t.getBBox(); return [t.textContent, b.x, b.y, b.width, b.height]; }), dots: [...document.querySelectorAll('#frontier svg circle.pt')].map(c => [+c.getAttribute('cx'), +c.getAttribute('cy'), +c.getAttribute('r')]), box: document.querySelector('#frontier svg').getAttribute('viewBox'), xlabels: [...document.querySelectorAll('#teams svg text')].filter(t => t.getBBox().y > 200).map(t => { const b = t.getBBox(); return [t.textContent, b.x, b.y, b.width, b.height]; }), teams: [...document.querySelectorAll('#team-table tbody tr')].map(r => [...r.cells].map(c => c.textContent)), inputs: document.getElementById('inputs').textContent})",
  "shot": "$ART/report.png"},
 {"name": "report-lower", "extract": "window.scrollTo(0, 720)", "shot": "$ART/report-charts.png"}]
JSON
python3 "$(dirname "$0")/browse.py" "$T/steps.json" "$T/res.json" 2>"$T/browse.err"
ok $? "chromium opens the report from file://" || diag "$(cat "$T/browse.err" "$T/res.json")"

json_check "$T/res.json" 'assert d["console"] == [], d["console"]'
ok $? "no console error, exception or failed load"

python3 - "$T/res.json" "$T/r.json" <<'PYEOF'
import json, sys
v = json.load(open(sys.argv[1]))["steps"][0]["value"]
runs = json.load(open(sys.argv[2]))
assert v["head"][1:] == [r["wait_policy"] for r in runs], v["head"]
rows = v["rows"]
assert rows["jobs on-prem"] == [str(r["jobs_onprem"]) for r in runs], rows["jobs on-prem"]
assert rows["jobs to cloud"] == [str(r["jobs_cloud"]) for r in runs], rows["jobs to cloud"]
money = lambda x: "$" + format(round(x, 2), ",.2f")
assert rows["total cost"] == [money(r["total_cost_usd"]) for r in runs], (rows["total cost"], [r["total_cost_usd"] for r in runs])
assert rows["cloud cost"] == [money(r["cloud_cost_usd"]) for r in runs], rows["cloud cost"]
PYEOF
ok $? "the comparison table equals sim -o json (policies, jobs on-prem and to cloud, total and cloud cost)"

json_check "$T/res.json" '
c = d["steps"][0]["value"]["charts"]
assert d["steps"][0]["value"]["points"] == 3, d["steps"][0]["value"]["points"]  # one point per policy
assert c["frontier"] >= 3, c          # the points, and the frontier line when one is drawn
assert c["queue"] == 3 and c["cloud"] == 3 and c["wait"] == 3 and c["jct"] == 3, c
assert c["teams"] >= 3, c'
ok $? "frontier (a point per policy), queue, cloud GPUs, wait and JCT charts (a line per policy) and team bars are drawn"

python3 - "$T/res.json" "$T/r.json" <<'PYEOF'
import json, sys
v = json.load(open(sys.argv[1]))["steps"][0]["value"]
runs = json.load(open(sys.argv[2]))
pts = [(r["wait_policy"], r["wait_mean_s"], r["total_cost_usd"]) for r in runs]
front = sorted((p for p in pts if not any(q != p and q[1] <= p[1] and q[2] <= p[2] and (q[1] < p[1] or q[2] < p[2]) for q in pts)), key=lambda p: p[1])
assert v["frontier"] == ",".join(p[0] for p in front), (v["frontier"], front)
PYEOF
ok $? "the frontier line joins the policies no other beats on both cost and mean wait (from sim -o json)"

# The comparison table's rows against sim -o json: rows.py sums | governance
cat >"$T/rows.py" <<'PYEOF'
import json, sys
v = json.load(open(sys.argv[2]))["steps"][0]["value"]
runs = json.load(open(sys.argv[3]))
rows = v["rows"]
cents = lambda s: round(float(s.replace("$", "").replace(",", "")) * 100)
money = lambda x: "$" + format(round(x, 2), ",.2f")
if sys.argv[1] == "sums":
    parts = ["on-prem used (amortised)", "on-prem idle (owned, unused)", "cloud cost"]
    if any(r["egress_usd"] > 0 for r in runs):
        parts.append("egress cost")
    for i, r in enumerate(runs):
        # each part as sim -o json has it, and the parts add up to the total shown
        assert rows["on-prem used (amortised)"][i] == money(r["owned_used_usd"]), (rows, r)
        assert rows["on-prem idle (owned, unused)"][i] == money(r["owned_idle_usd"]), (rows, r)
        assert r["owned_idle_usd"] > 0, r
        s = sum(cents(rows[p][i]) for p in parts)
        assert abs(s - cents(rows["total cost"][i])) <= len(parts) - 1, (i, [rows[p][i] for p in parts], rows["total cost"][i])
else:
    assert all(r["governance"]["active"] for r in runs)
    for name, key in (("held (budget/cap)", "jobs_held"), ("rejected (budget)", "jobs_rejected"),
                      ("never ran", "jobs_never_ran"), ("on-prem: residency", "jobs_onprem_by_residency"),
                      ("on-prem only (budget)", "jobs_onprem_only_budget"),
                      ("stopped at max runtime", "jobs_stopped_max_runtime")):
        assert rows[name] == [str(r["governance"][key]) for r in runs], (name, rows.get(name))
    assert rows["peak cloud $/h"] == [money(r["governance"]["peak_cloud_usd_per_h"]) for r in runs], rows["peak cloud $/h"]
    assert any(r["governance"]["jobs_held"] or r["governance"]["jobs_rejected"] for r in runs), runs
PYEOF
python3 "$T/rows.py" sums "$T/res.json" "$T/r.json"
ok $? "the cost rows add up: on-prem used + on-prem idle (owned) + cloud (+ egress) = total cost, each as in sim -o json"

python3 "$T/rows.py" governance "$T/res.json" "$T/r.json"
ok $? "governance rows (held, rejected, never ran, residency, on-prem only, max runtime, peak cloud \$/h) equal sim -o json"

json_check "$T/res.json" '
v = d["steps"][0]["value"]
labels, dots = v["labels"], v["dots"]
x0, y0, w, h = map(float, v["box"].split())
assert len(labels) == len(dots) == 3, (labels, dots)
hit = lambda a, b: a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]
boxes = [l[1:] for l in labels]
for i, a in enumerate(boxes):
    assert a[0] >= x0 and a[1] >= y0 and a[0] + a[2] <= x0 + w and a[1] + a[3] <= y0 + h, ("outside", labels[i])
    for j, b in enumerate(boxes[:i]):
        assert not hit(a, b), ("labels overlap", labels[i], labels[j])
    for c in dots:
        assert not hit(a, [c[0] - c[2], c[1] - c[2], 2 * c[2], 2 * c[2]]), ("label on a point", labels[i], c)
xl = v["xlabels"]
assert len(xl) >= 4, xl
for i, a in enumerate(xl):
    for b in xl[:i]:
        assert not hit(a[1:], b[1:]), ("team chart labels overlap", a, b)'
ok $? "frontier labels are readable: none overlaps another label or a point, all inside the chart; the team chart's labels do not overlap" ||
    diag "$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["steps"][0]["value"]; print(v["labels"], v["dots"])' "$T/res.json")"

json_check "$T/res.json" '
v = d["steps"][0]["value"]
teams = sorted(set(r[0] for r in v["teams"]))
assert teams == ["cv", "nlp", "research"] or len(teams) >= 2, teams
assert "team-jobs.csv" in v["inputs"] and "governance.yaml" in v["inputs"], v["inputs"]
assert "--compare never,none,compute:0.25" in v["inputs"], v["inputs"]'
ok $? "per-team spend rows and the inputs (trace, config, command line) are shown"

[ -s "$ART/report.png" ] && [ -s "$ART/report-charts.png" ]
ok $? "screenshots saved under build/artifacts/ui/"
