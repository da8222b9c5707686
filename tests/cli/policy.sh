#!/bin/sh
# policy.sh: `spillway policy check` and `policy test`: the governance of
# examples/governance.yaml (skipped without ../shared/data, where its catalog
# lives), exit statuses 0/1/2, JSON output, and config errors with FILE:LINE.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 29

G=examples/governance.yaml

# ---- help ----------------------------------------------------------------
run_spw "$T/out" "$T/err" policy --help
[ "$rc" -eq 0 ] && contains "$T/out" "usage: spillway policy check CONFIG" &&
    contains "$T/out" "spillway policy test examples/governance.yaml"
ok $? "policy --help shows both commands and an example"

run_spw "$T/out" "$T/err" policy check --help
[ "$rc" -eq 0 ] && contains "$T/out" "usage: spillway policy check CONFIG [-o json]"
ok $? "policy check --help"

run_spw "$T/out" "$T/err" policy test --help
[ "$rc" -eq 0 ] && contains "$T/out" "usage: spillway policy test CONFIG JOB.yaml" &&
    contains "$T/out" "Exit status: 0"
ok $? "policy test --help"

run_spw "$T/out" "$T/err" help
contains "$T/out" "  policy "
ok $? "the main help lists policy"

run_spw "$T/out" "$T/err" policy frobnicate
[ "$rc" -eq 2 ] && contains "$T/err" "unknown subcommand 'frobnicate'"
ok $? "an unknown subcommand exits 2 (status $rc)"

run_spw "$T/out" "$T/err" policy test "$G"
[ "$rc" -eq 2 ] && contains "$T/err" "give a CONFIG file and a JOB spec file"
ok $? "policy test without a job exits 2 (status $rc)"

# ---- a self-contained config (no catalog needed) ----------------------------
cat >"$T/gov.yaml" <<'YAML'
onprem:
  - {name: dc1, nodes: 2, gpus_per_node: 8, gpu: A100}
cloud:
  price_usd_per_gpu_h: 2.5
teams:
  - {name: ml, monthly_usd: 5000}
  - {name: cv, weekly_usd: "$1200", on_exhausted: onprem_only}
caps:
  default_max_runtime_s: 6h
rules:
  - name: prod-onprem
    match: {team: ml, labels: {env: prod}}
    placement: onprem_only
residency:
  restricted: {onprem: true}
YAML
run_spw "$T/out" "$T/err" policy check "$T/gov.yaml"
[ "$rc" -eq 0 ] && contains "$T/out" "valid" && contains "$T/out" "\$1,200" &&
    contains "$T/out" "1. prod-onprem (line 11)" && contains "$T/out" "leaves: 1 of 1 pools, 0 of 1 offers"
ok $? "check on a small config: teams, rules and what each leaves (status $rc)"

printf 'run: [x]\ngpus: 4\nteam: ml\nlabels: {env: prod}\n' >"$T/prod.yaml"
run_spw "$T/out" "$T/err" policy test "$T/gov.yaml" "$T/prod.yaml"
[ "$rc" -eq 0 ] && contains "$T/out" "1. prod-onprem (line 11)" &&
    contains "$T/out" "cloud: nowhere" && contains "$T/out" "1 offer: by rule 'prod-onprem' (line 11)" &&
    contains "$T/out" "worst case: 6h"
ok $? "test: a prod job of team ml stays on-prem, and the rule is named (status $rc)"

printf 'run: [x]\ngpus: 4\nteam: ops\n' >"$T/ops.yaml"
run_spw "$T/out" "$T/err" policy test "$T/gov.yaml" "$T/ops.yaml"
[ "$rc" -eq 0 ] &&
    contains "$T/err" "warning: team 'ops' has no budget in $T/gov.yaml; only organisation caps apply" &&
    contains "$T/out" "cloud: 1 offer"
ok $? "test: an unknown team is a warning, and the job may burst (status $rc)"

printf 'run: [x]\ngpus: 32\nclass: restricted\n' >"$T/big.yaml"
run_spw "$T/out" "$T/err" policy test "$T/gov.yaml" "$T/big.yaml"
[ "$rc" -eq 1 ] && contains "$T/out" "may run nowhere" &&
    contains "$T/out" "fewer than 32 GPUs" && contains "$T/out" "by residency 'restricted'"
ok $? "test: a job too big for on-prem and restricted to it exits 1 and says why (status $rc)"

printf 'run: [x]\ngpus: 1\ndata: mnist\n' >"$T/data.yaml"
run_spw "$T/out" "$T/err" policy test "$T/gov.yaml" "$T/data.yaml"
[ "$rc" -eq 2 ] && contains "$T/err" "dataset 'mnist' is not in"
ok $? "test: an unknown dataset exits 2 (status $rc)"

printf 'run: [x]\ngpus: 1\nresidency: mars\n' >"$T/res.yaml"
run_spw "$T/out" "$T/err" policy test "$T/gov.yaml" "$T/res.yaml"
[ "$rc" -eq 2 ] && contains "$T/err" "'mars' is not a residency class" && contains "$T/err" "known: restricted"
ok $? "test: an unknown residency exits 2 and names the known ones (status $rc)"

printf 'run: [x]\ngpus: 0\n' >"$T/bad.yaml"
run_spw "$T/out" "$T/err" policy test "$T/gov.yaml" "$T/bad.yaml"
[ "$rc" -eq 2 ] && contains "$T/err" "bad.yaml:2:7: field 'gpus'"
ok $? "test: a bad job spec exits 2 with its position (status $rc)"

sed 's/monthly_usd: 5000/monthly_usd: 5k/' "$T/gov.yaml" >"$T/unit.yaml"
run_spw "$T/out" "$T/err" policy check "$T/unit.yaml"
[ "$rc" -eq 2 ] && contains "$T/err" "unit.yaml:6:29: budget in the wrong unit: write dollars as a number"
ok $? "check: a budget in the wrong unit exits 2 with FILE:LINE:COL (status $rc)"

sed 's/match: {team: ml,/match: {team: mll,/' "$T/gov.yaml" >"$T/team.yaml"
run_spw "$T/out" "$T/err" policy check "$T/team.yaml"
[ "$rc" -eq 2 ] && contains "$T/err" "team.yaml:12:19: rule 'prod-onprem': team 'mll' is not in teams: (known: ml, cv)"
ok $? "check: an undeclared team in a rule exits 2 with its line (status $rc)"

{ sed '/^residency:/,$d' "$T/gov.yaml"; echo "    spot: required"; } >"$T/c2.yaml"
run_spw "$T/out" "$T/err" policy check "$T/c2.yaml"
[ "$rc" -eq 2 ] && contains "$T/err" "c2.yaml:11: rule 'prod-onprem'" &&
    contains "$T/err" "spot: required with placement: onprem_only"
ok $? "check: a contradictory rule exits 2 naming its line (status $rc)"

# ---- examples/governance.yaml over the real catalog --------------------------
if [ ! -d ../shared/data ]; then
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        skip "examples/governance.yaml reads ../shared/data, which is absent"
    done
    done_testing
    exit $?
fi

run_spw "$T/out" "$T/err" policy check "$G"
[ "$rc" -eq 0 ] && contains "$T/out" "$G: valid" && contains "$T/out" "teams (3):" &&
    contains "$T/out" "research" && contains "$T/out" "prod-inference-onprem (line" &&
    contains "$T/out" "restricted  yes"
ok $? "check $G: valid, teams, residency and rules (status $rc)"

run_spw "$T/check.json" "$T/err" policy check "$G" -o json
[ "$rc" -eq 0 ] && json_check "$T/check.json" '
assert d["valid"] and d["active"]
assert [t["name"] for t in d["teams"]] == ["ml", "cv", "research"]
assert d["teams"][1]["period"] == "week" and d["teams"][1]["budget_usd"] == 1200
assert len(d["rules"]) == 6 and d["rules"][1]["placement"] == "onprem_only"
assert d["rules"][1]["offers_allowed"] == 0 and d["rules"][1]["pools_allowed"] == 2
assert d["caps"]["default_max_runtime_s"] == 86400
assert d["sim_start"] == "2026-11-01T00:00:00Z"
assert [r["name"] for r in d["residency"]] == ["eu", "restricted"]
'
ok $? "check -o json: a JSON document with teams, caps, rules and residency"

run_spw "$T/out" "$T/err" policy test "$G" examples/job-restricted.yaml
[ "$rc" -eq 0 ] && contains "$T/out" "residency: restricted" && contains "$T/out" "cloud: nowhere" &&
    contains "$T/out" "on-prem: 1 pool" && contains "$T/out" "by residency 'restricted'"
ok $? "test job-restricted: on-prem only, the residency named (status $rc)"

run_spw "$T/r.json" "$T/err" policy test "$G" examples/job-restricted.yaml -o json
[ "$rc" -eq 0 ] && json_check "$T/r.json" '
assert d["may_run"] and d["residency"] == "restricted"
assert d["cloud"] == []
assert [p["pool"] for p in d["onprem"]] == ["dc1"]
assert d["worst_case_s"] == 43200 and d["worst_case_from"] == "max_runtime"
assert any(e["reason"].startswith("by residency") for e in d["excluded"])
'
ok $? "test job-restricted -o json: no cloud offer, only dc1"

run_spw "$T/e.json" "$T/err" policy test "$G" examples/job-experiment.yaml -o json
[ "$rc" -eq 0 ] && json_check "$T/e.json" '
assert d["placement"] == "cloud_first" and d["spot"] == "required"
assert d["max_usd_per_gpu_h"] == 3
assert [r["name"] for r in d["rules"]] == ["modern-gpus-only", "experiments-cloud-first", "research-cheap"]
c = d["cloud"]
assert len(c) > 10
assert all(o["provider"] in ("aws", "gcp") for o in c)
assert all(o["usd_per_h"] / (o["instances"] * o["gpus_per_instance"]) <= 3 + 1e-9 for o in c)
t = [o["work_usd"] for o in c]
assert t == sorted(t)
assert any(o["egress_usd"] > 0 for o in c) and c[0]["region"] == "us-east-1"
# Issue 24: the preview is the engine: its first choice for a 4-GPU job on
# one node is g6e.12xlarge (4 x L40S), not a 1-GPU g6.xlarge x 4.
assert all(o["gpus_per_instance"] >= 4 for o in c), [o["instance_type"] for o in c if o["gpus_per_instance"] < 4]
assert c[0]["engine_choice"] and c[0]["instance_type"] == "g6e.12xlarge", c[0]
assert sum(o["engine_choice"] for o in c) == 1
'
ok $? "test job-experiment -o json: spot under \$3/GPU-h on aws and gcp, the engine's choice (g6e.12xlarge) first, by cost for the work"

run_spw "$T/out" "$T/err" policy test "$G" examples/job-experiment.yaml
[ "$rc" -eq 0 ] && contains "$T/out" "placement: cloud_first" && contains "$T/out" "... and " &&
    contains "$T/out" "by rule 'research-cheap' (line" &&
    contains "$T/out" "the engine's first choice (as \`spillway explain\` gives it): the best allowed offer: 1 x g6e.12xlarge" &&
    contains "$T/out" "must be on one node"
ok $? "test job-experiment: the table shows the cheapest 10 and the rules that excluded (status $rc)"

# Issue 24: one worst case: the table's row for the engine's first choice
# and the first-choice line give the same figure (spw_engine_worst_usd:
# boot, transfer and the daemon's billing margin included), and say so.
row=$(awk '/^  cloud:/ { getline; getline; print $NF; exit }' "$T/out")
line=$(sed -n 's/.*first choice.*; worst case \(\$[0-9.]*\) fits.*/\1/p' "$T/out")
[ -n "$row" ] && [ "$row" = "$line" ] && contains "$T/out" "plus its boot, the data transfer and 11.2s"
ok $? "test job-experiment: the first offer's worst case ($row) is the first choice's ($line)"

printf 'run: [x]\ngpus: H100:64\nclass: restricted\n' >"$T/none.yaml"
run_spw "$T/out" "$T/err" policy test "$G" "$T/none.yaml"
[ "$rc" -eq 1 ] && contains "$T/out" "may run nowhere" && contains "$T/out" "fewer than 64 GPUs"
ok $? "test: 64 H100 restricted to on-prem runs nowhere, exit 1 (status $rc)"

printf 'run: [x]\ngpus: 8\nclass: inference\nlabels: {env: prod}\n' >"$T/inf.yaml"
run_spw "$T/out" "$T/err" policy test "$G" "$T/inf.yaml"
[ "$rc" -eq 0 ] && contains "$T/out" "placement: onprem_only" &&
    contains "$T/out" "by rule 'prod-inference-onprem' (line"
ok $? "test: production inference stays on-prem by its rule (status $rc)"

printf 'run: [x]\ngpus: 8\nclass: eu\n' >"$T/eu.yaml"
run_spw "$T/eu.json" "$T/err" policy test "$G" "$T/eu.yaml" -o json
[ "$rc" -eq 0 ] && json_check "$T/eu.json" '
assert d["residency"] == "eu"
assert d["cloud"] and all(o["region"] in ("eu-west-1", "eu-central-1", "europe-west4") for o in d["cloud"])
'
ok $? "test: an eu job bursts only to eu regions"

sed -e "s#offers: \\.\\./\\.\\./shared#offers: $(pwd)/../shared#" -e 's/max_cloud_gpus: 64/max_cloud_gpus: 6.5/' \
    "$G" >"$T/cap.yaml"
line=$(grep -n 'max_cloud_gpus: 64' "$G" | cut -d: -f1)
run_spw "$T/out" "$T/err" policy check "$T/cap.yaml"
[ "$rc" -eq 2 ] && contains "$T/err" "cap.yaml:$line:19: max_cloud_gpus"
ok $? "check: a fractional GPU cap in a copy of $G exits 2 with its line (status $rc)"

# Issue 24: rules that leave a class nowhere are not "valid": class big may
# only use H100s, then only T4s; exit 1, the class named on stderr.
printf 'onprem:\n  - {name: a, nodes: 1, gpus_per_node: 1, gpu: T4}\n  - {name: b, nodes: 1, gpus_per_node: 1, gpu: H100}\nrules:\n  - {name: only-h100, match: {class: big}, allow_gpus: [H100]}\n  - {name: t4-only, match: {class: big}, allow_gpus: [T4]}\n' \
    >"$T/nowhere.yaml"
run_spw "$T/out" "$T/err" policy check "$T/nowhere.yaml"
[ "$rc" -eq 1 ] && contains "$T/err" "class 'big': its rules and residency leave no pool and no cloud offer" &&
    ! grep -q "valid" "$T/out"
ok $? "policy check: rules that leave a class nowhere exit 1 naming the class (status $rc)"

# Issue 24: a commitment is the engine's first choice, named as such.
printf 'onprem:\n  - {name: dc, nodes: 1, gpus_per_node: 8, cost_usd_per_gpu_h: 1.1}\ncloud:\n  price_usd_per_gpu_h: 3\n  commitments: [{name: ri, gpus: 8, usd_per_gpu_h: 1.8}]\n' \
    >"$T/commit.yaml"
printf 'gpus: 4\nrun: [train]\n' >"$T/four.yaml"
run_spw "$T/out" "$T/err" policy test "$T/commit.yaml" "$T/four.yaml"
[ "$rc" -eq 0 ] && grep -A1 "instance" "$T/out" | grep -q "gpu@ri" &&
    contains "$T/out" "first choice (as \`spillway explain\` gives it): commitment ri: 4 x gpu free now"
ok $? "policy test: the commitment (gpu@ri) is ranked and chosen first, as explain says"

done_testing
