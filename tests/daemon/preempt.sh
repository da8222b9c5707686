#!/bin/sh
# preempt.sh: `spillway admin preempt INSTANCE` takes an emulated cloud
# instance back as a spot reclaim would: the job on it is killed, requeued
# (attempts 2), placed again on a new instance and runs to success.  A team
# token gets 403; an unknown instance is 404; an ended one 409.
# Fair share (docs/fairshare.md): ml has a quota of the slot, cv none; in
# one cohort cv borrows ml's idle slot with a checkpointing job; when ml
# submits, the slot is reclaimed after the grace: cv's job is preempted,
# requeued and resumes from its checkpoint, and ml's job runs on-prem.
# ml's quota is its part of pool local (quota.pools): the reclaim is for
# that part; its cloud GPU cap shows in /v1/teams and the fair share table.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 28

mkconfig "$T/serve.yaml" 1 none
sed -i 's/^  queue: fifo$/  queue: fair\n  reclaim_grace: 3/' "$T/serve.yaml"
cat >>"$T/serve.yaml" <<EOF
cohorts:
  - {name: lab}
teams:
  - {name: ml, quota: {gpus: 1, pools: {local: 1}}, cohort: lab, max_cloud_gpus: 2}
  - {name: cv, cohort: lab}
rules:
  - {name: owned-onprem, match: {class: owned}, placement: onprem_only}
EOF
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts (1 node x 1 slot, wait none)"

hog=$(submit ml --gpus 1 --name hog -- sleep 60.25)
wait_for "$hog" running 5
ok $? "a long job takes the only on-prem slot"
# Its first attempt outlasts the checks before the preemption whatever the
# load (it used to end 2.5 s in, which a slow machine could reach first);
# the second one ends at once.
job=$(submit ml --gpus 1 --name spot -- sh -c 'echo "run on $SPILLWAY_INSTANCE_IDS"
    if [ "$SPILLWAY_ATTEMPT" = 1 ]; then sleep 60; else sleep 0.5; fi; echo done')
on_cloud() { [ "$(state_of "$job")" = running ] && spw ml logs "$job" 2>/dev/null | grep -q '^run on emu-'; }
wait_until 6 on_cloud && [ "$(field "$job" 'd["where"]')" = cloud ]
ok $? "the next job bursts at once to the emulated cloud and runs ($job)"
show_json "$job" "$T/before.json"
inst=$(jpy "$T/before.json" 'd["instances"][0]')
json_check "$T/before.json" 'assert d["attempts"] == 1 and d["emulated"] is True and len(d["instances"]) == 1, d'
ok $? "it runs on one emulated instance ($inst), attempt 1"

http POST "/v1/admin/instances/$inst/preempt" ml
http_is 403 "admin" "a team token gets 403 for admin preempt"
spw ml admin preempt "$inst" >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && contains "$T/err" "403" && [ "$(state_of "$job")" = running ]
ok $? "spillway admin preempt with a team token exits 1; the job keeps running"
http POST /v1/admin/instances/emu-i-999999/preempt admin
http_is 404 "emu-i-999999" "preempting an unknown instance is 404"

spw admin admin preempt "$inst" -o json >"$T/pre.json" 2>"$T/err"
ok $? "spillway admin preempt $inst with the admin token exits 0" || diag "$(cat "$T/err")"
json_check "$T/pre.json" "assert d['id'] == '$inst' and d['state'] == 'preempted', d"
ok $? "the answer is the instance, now preempted"

requeued() { [ "$(field "$job" 'd["attempts"]')" = 2 ]; }
wait_until 5 requeued
ok $? "the job is requeued: attempts 2" || diag "$(spw ml show "$job")"
grep -q "job $job requeued after its instance was preempted" "$DLOG"
ok $? "the daemon logs the requeue after the preemption"

wait_for "$job" succeeded 12
ok $? "it runs again and succeeds"
show_json "$job" "$T/after.json"
json_check "$T/after.json" "
assert d['exit_code'] == 0, d['exit_code']
assert d['attempts'] == 2, d['attempts']
assert d['where'] == 'cloud' and d['emulated'] is True, d['where']"
ok $? "exit_code 0, attempt 2, on the emulated cloud"
spw ml logs "$job" >"$T/log.out"
[ "$(sed -n 1p "$T/log.out")" = "run on $inst" ] && [ "$(grep -c '^run on emu-' "$T/log.out")" = 2 ] &&
    [ "$(grep -c '^done$' "$T/log.out")" = 1 ]
ok $? "its log has both runs, only the second one complete" || diag "$(cat "$T/log.out")"
last=$(sed -n 's/^run on //p' "$T/log.out" | tail -1)
[ -n "$last" ] && [ "$last" != "$inst" ] && [ "$(tail -1 "$T/log.out")" = "done" ]
ok $? "the second run was on a new instance ($last)"

http POST "/v1/admin/instances/$inst/preempt" admin
http_is 409 "$inst" "preempting it again is 409"

spw ml cancel "$hog" >/dev/null 2>&1 && wait_for "$hog" cancelled 5
ok $? "the long job is cancelled"

# Borrow: cv has no quota; the idle slot is ml's, lent in cohort lab.  Its
# job saves a step every 0.3 s and holds after step 3 of its first attempt,
# so the reclaim lands mid-run.
cat >"$T/cv.yaml" <<'EOF'
name: borrower
gpus: 1
checkpoint_interval: continuous
run: |
  d=$SPILLWAY_CHECKPOINT_DIR; s=$(cat "$d/step" 2>/dev/null || echo 0)
  echo "attempt $SPILLWAY_ATTEMPT from step $s"
  for n in $(seq $((s + 1)) 6); do
    sleep 0.3; echo "$n" >"$d/step.tmp" && mv "$d/step.tmp" "$d/step"; echo "step $n"
    if [ "$SPILLWAY_ATTEMPT" = 1 ] && [ "$n" = 3 ]; then sleep 60; fi
  done
  echo done
EOF
cvj=$(submit cv "$T/cv.yaml")
stepped3() { spw cv logs "$cvj" 2>/dev/null | grep -q '^step 3$'; }
wait_until 10 stepped3 && [ "$(field "$cvj" 'd["where"]' cv)" = onprem ]
ok $? "team cv (no quota) borrows ml's idle slot on-prem and checkpoints ($cvj)" ||
    diag "$(spw cv show "$cvj" 2>&1)"
printf 'name: owner\ngpus: 1\nclass: owned\nrun: echo owner ran\n' >"$T/owner.yaml"
http GET /v1/teams admin
python3 - "$T/http.body" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = {r["team"]: r for r in d["teams"]}
assert d["queue"] == "fair" and d["quotas"] is True and d["onprem_gpus"] == 1, d
assert t["ml"]["nominal_gpus"] == 1 and t["ml"]["used_gpus"] == 0 and t["ml"]["lent_gpus"] == 1, t
assert t["cv"]["nominal_gpus"] == 0 and t["cv"]["used_gpus"] == 1 and t["cv"]["borrowed_gpus"] == 1, t
assert t["ml"]["quota_pools"] == {"local": 1} and "quota_pools" not in t["cv"], t
assert t["ml"]["max_cloud_gpus"] == 2 and t["cv"]["max_cloud_gpus"] is None, t
assert t["ml"]["cloud_gpus"] == 0 and t["cv"]["cloud_gpus"] == 0, t
c = d["cohorts"][0]
assert c["cohort"] == "lab" and c["used_gpus"] == 1 and c["borrowed_gpus"] == 1, c
EOF
ok $? "/v1/teams: ml lends its 1 GPU of quota (its part of pool local), cv borrows it (cohort lab); cloud GPU caps" || diag "$(cat "$T/http.body")"
http GET /metrics admin
grep -q '^spillway_team_gpus{team="cv",kind="borrowed"} 1$' "$T/http.body" &&
    grep -q '^spillway_team_gpus{team="ml",kind="lent"} 1$' "$T/http.body" &&
    grep -q '^spillway_cohort_gpus{cohort="lab",kind="borrowed"} 1$' "$T/http.body" &&
    grep -q '^spillway_cohort_gpus{cohort="lab",kind="nominal"} 1$' "$T/http.body"
ok $? "/metrics: spillway_team_gpus shows cv borrowing and ml lending, spillway_cohort_gpus lab's sums"
# queue and costs print /v1/teams under their tables: teams, then cohorts.
fair_rows() { sed -n '/^fair share: on-prem GPUs now (1 in all; queue fair)$/,$p' "$1"; }
spw admin costs >"$T/costs.out" 2>&1 && fair_rows "$T/costs.out" >"$T/fair.out" &&
    grep -Eq '^team +cv +lab +0 +1 +1 +0 +' "$T/fair.out" &&
    grep -Eq '^team +ml +lab +1 +0 +0 +1 +[0-9]+% +0/2$' "$T/fair.out" &&
    grep -Eq '^team +cv +lab +0 +1 +1 +0 +[0-9]+% +0/-$' "$T/fair.out"
ok $? "spillway costs: a fair share table with cv's borrowed GPU, ml's lent one, cloud GPUs/cap" ||
    diag "$(cat "$T/costs.out")"
spw admin queue >"$T/queue.out" 2>&1 && fair_rows "$T/queue.out" >"$T/fair.out" &&
    grep -Eq '^team +cv +lab +0 +1 +1 +0 +' "$T/fair.out" &&
    grep -Eq '^cohort +lab +- +1 +1 +1 +1 +- +- *$' "$T/fair.out" &&
    spw cv queue >"$T/queue.out" 2>&1 && fair_rows "$T/queue.out" >"$T/fair.out" &&
    grep -Eq '^team +cv ' "$T/fair.out" && ! grep -Eq '^(team +ml|cohort) ' "$T/fair.out"
ok $? "spillway queue: the same per team and cohort under the jobs (team cv sees its own row)" ||
    diag "$(cat "$T/queue.out")"
mlj=$(submit ml "$T/owner.yaml")
will_preempt() {
    spw ml explain "$mlj" -o json >"$T/ex.json" 2>/dev/null &&
        grep -q "will preempt $cvj (borrowed by team cv)" "$T/ex.json"
}
wait_until 3 will_preempt
ok $? "explain during the grace: ml's job will preempt $cvj (borrowed by team cv)" ||
    diag "$(cat "$T/ex.json")"
wait_for "$mlj" succeeded 15 && [ "$(field "$mlj" 'd["where"]')" = onprem ]
ok $? "ml submits: the slot is reclaimed after the 3 s grace and ml's job runs on-prem" ||
    diag "$(spw ml show "$mlj" 2>&1)"
grep -q "job $cvj preempted: team ml is under its quota and took back the GPUs borrowed by team cv" "$DLOG"
ok $? "the daemon logs the reclaim of cv's job for team ml"
wait_for "$cvj" succeeded 20 cv
ok $? "cv's job is requeued and runs to success" || diag "$(spw cv show "$cvj" 2>&1)"
spw cv logs "$cvj" >"$T/cv.out"
grep -q '^attempt 1 from step 0$' "$T/cv.out" && grep -q '^attempt 2 from step [3-6]$' "$T/cv.out" &&
    [ "$(tail -1 "$T/cv.out")" = done ]
ok $? "it resumed from its checkpoint (attempt 2 from step 3 or later)" || diag "$(cat "$T/cv.out")"
stop_daemon "$DPID"
no_strays "no job process is left"

done_testing
