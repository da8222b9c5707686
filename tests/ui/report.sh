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
plan 9
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
  "extract": "({head: [...document.querySelectorAll('#compare thead th')].map(c => c.textContent), rows: Object.fromEntries([...document.querySelectorAll('#compare tbody tr')].map(r => [r.dataset.row, [...r.cells].slice(1).map(c => c.textContent)])), frontier: document.getElementById('frontier').dataset.frontier, points: document.querySelectorAll('#frontier svg circle.pt').length, charts: Object.fromEntries(['frontier', 'teams', 'queue', 'cloud', 'wait', 'jct'].map(id => [id, document.querySelectorAll('#' + id + ' svg path, #' + id + ' svg circle.pt, #' + id + ' svg rect').length])), teams: [...document.querySelectorAll('#team-table tbody tr')].map(r => [...r.cells].map(c => c.textContent)), inputs: document.getElementById('inputs').textContent})",
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

json_check "$T/res.json" '
v = d["steps"][0]["value"]
teams = sorted(set(r[0] for r in v["teams"]))
assert teams == ["cv", "nlp", "research"] or len(teams) >= 2, teams
assert "team-jobs.csv" in v["inputs"] and "governance.yaml" in v["inputs"], v["inputs"]
assert "--compare never,none,compute:0.25" in v["inputs"], v["inputs"]'
ok $? "per-team spend rows and the inputs (trace, config, command line) are shown"

[ -s "$ART/report.png" ] && [ -s "$ART/report-charts.png" ]
ok $? "screenshots saved under build/artifacts/ui/"
