#!/bin/sh
# basic.sh: a live `spillway serve` running real commands on one node of 4
# GPU slots: each job gets its own CUDA_VISIBLE_DEVICES (disjoint sets that
# match gpus_assigned) and SPILLWAY_JOB_ID; a YAML spec's env: and workdir:
# reach the process; `spillway logs -f` streams a job's output in order and
# ends by itself when the job ends, with the job's exit status; --stderr
# gives its stderr; a job runs in the directory it was submitted from.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 31

mkconfig "$T/serve.yaml" 4 never
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts on a free loopback port ($URL)"

# ---- 1. CUDA_VISIBLE_DEVICES -------------------------------------------------
script='echo "$CUDA_VISIBLE_DEVICES"; echo "$SPILLWAY_JOB_ID"; sleep 1.5'
a=$(submit ml --gpus 1 --name g1 -- sh -c "$script")
b=$(submit ml --gpus 2 --name g2 -- sh -c "$script")
c=$(submit ml --gpus 1 --name g3 -- sh -c "$script")
[ -n "$a" ] && [ -n "$b" ] && [ -n "$c" ]
ok $? "three jobs of 1, 2 and 1 GPUs are accepted ($a $b $c)"

ran=0
for id in $a $b $c; do
    wait_for "$id" succeeded 10 || ran=1
done
ok "$ran" "all three run and succeed"

for id in $a $b $c; do
    show_json "$id" "$T/$id.json"
    spw ml logs "$id" >"$T/$id.out" 2>"$T/$id.err"
done
python3 - "$T" "$a" "$b" "$c" <<'EOF' >"$T/gpu-check" 2>&1
import json, sys
t, ids = sys.argv[1], sys.argv[2:]
want = dict(zip(ids, [1, 2, 1]))
seen, errs, starts, ends = {}, [], [], []
for i in ids:
    d = json.load(open("%s/%s.json" % (t, i)))
    lines = open("%s/%s.out" % (t, i)).read().split("\n")
    cvd, jid = lines[0], lines[1] if len(lines) > 1 else ""
    sets = [int(x) for x in cvd.split(",")] if cvd else []
    if len(sets) != want[i] or len(set(sets)) != len(sets):
        errs.append("%s: CUDA_VISIBLE_DEVICES=%r for %d GPUs" % (i, cvd, want[i]))
    if any(g < 0 or g > 3 for g in sets):
        errs.append("%s: CUDA_VISIBLE_DEVICES=%r outside 0..3" % (i, cvd))
    if d["gpus_assigned"] != cvd:
        errs.append("%s: gpus_assigned %r != CUDA_VISIBLE_DEVICES %r" % (i, d["gpus_assigned"], cvd))
    if jid != i:
        errs.append("%s: SPILLWAY_JOB_ID=%r" % (i, jid))
    seen[i] = set(sets)
    starts.append(d["start_ts"]); ends.append(d["end_ts"])
    print("RAN %s gpus=%s %s..%s" % (i, cvd, d["start_ts"], d["end_ts"]))
if max(starts) >= min(ends):
    errs.append("the three jobs did not run at the same time")
for x in ids:
    for y in ids:
        if x < y and seen[x] & seen[y]:
            errs.append("%s and %s share GPUs %s" % (x, y, sorted(seen[x] & seen[y])))
print("ERR " + "\nERR ".join(errs) if errs else "OK")
EOF
grep -q '^OK$' "$T/gpu-check"
ok $? "the jobs ran together and their CUDA_VISIBLE_DEVICES sets are disjoint, sized 1, 2, 1"
grep -q '^ERR .*gpus_assigned' "$T/gpu-check" && st=1 || st=0
ok "$st" "each job's CUDA_VISIBLE_DEVICES is the gpus_assigned of \`spillway show -o json\`"
grep -q '^ERR .*SPILLWAY_JOB_ID' "$T/gpu-check" && st=1 || st=0
ok "$st" "each job sees its own id in SPILLWAY_JOB_ID"
grep -q '^OK$' "$T/gpu-check" || diag "$(cat "$T/gpu-check")"

json_check "$T/$b.json" '
assert d["where"] == "onprem" and d["placement"] == "local/0", (d["where"], d["placement"])
assert d["exit_code"] == 0 and d["emulated"] is False, (d["exit_code"], d["emulated"])
assert d["spec"]["run"][0] == "sh" and d["spec"]["gpus"] == 2, d["spec"]
assert d["name"] == "g2" and d["team"] == "ml", (d["name"], d["team"])'
ok $? "show -o json: on-prem placement local/0, exit_code 0, name, team and spec"

# ---- env: and workdir: from a YAML spec -----------------------------------
job_dir "$T/wd"
cat >"$T/job.yaml" <<EOF
name: envjob
gpus: 1
env:
  GREETING: hello world
  SEED: "7"
workdir: $T/wd
run: |
  echo "\$GREETING seed=\$SEED"
  pwd
  echo "cvd=\$CUDA_VISIBLE_DEVICES"
  echo written > result.txt
EOF
e=$(submit ml "$T/job.yaml")
ok $? "a YAML spec file with env: and workdir: is accepted ($e)"
[ -n "$e" ] && wait_for "$e" succeeded 10
ok $? "the spec-file job succeeds"
spw ml logs "$e" >"$T/e.out" 2>"$T/e.err"
printf 'hello world seed=7\n%s\n' "$T/wd" >"$T/e.want"
head -2 "$T/e.out" | cmp -s - "$T/e.want"
ok $? "env: values reach the job and it runs in workdir:" || diag "got:" "$(cat "$T/e.out")"
[ "$(cat "$T/wd/result.txt" 2>/dev/null)" = written ]
ok $? "a relative file the job writes lands in its workdir"
cvd=$(sed -n 's/^cvd=//p' "$T/e.out")
[ -n "$cvd" ] && [ "$cvd" = "$(field "$e" 'd["gpus_assigned"]')" ]
ok $? "the spec-file job gets CUDA_VISIBLE_DEVICES too (got '$cvd')"
show_json "$e" "$T/e.json"
json_check "$T/e.json" '
s = d["spec"]
assert d["name"] == "envjob", d["name"]
assert s["env"] == {"GREETING": "hello world", "SEED": "7"}, s.get("env")
assert s["workdir"].rstrip("/").endswith("/wd"), s.get("workdir")'
ok $? "show -o json keeps the spec's env and workdir"

printf 'gpus: 1\nrun: [true]\nenv: {CUDA_VISIBLE_DEVICES: "99"}\n' >"$T/cvd.yaml"
spw ml submit "$T/cvd.yaml" >"$T/cvd.out" 2>"$T/cvd.err"
[ $? -eq 1 ] && contains "$T/cvd.err" "CUDA_VISIBLE_DEVICES"
ok $? "a spec whose env: sets CUDA_VISIBLE_DEVICES is refused, naming it"

# ---- 4. logs -f ---------------------------------------------------------
# A line every 0.2 s for 2 s on stdout, and one on stderr for each.
# After its fifth line the ticker waits for $T/ticker.go (at most 30 s), so
# that it is still running when the test checks that logs -f follows it.
f=$(submit ml --gpus 1 --name ticker -- sh -c \
    'i=1; while [ $i -le 10 ]; do echo "out $i"; echo "err $i" >&2; i=$((i + 1)); sleep 0.2
     if [ $i = 6 ]; then w=0; while [ ! -e '"$T/ticker.go"' ] && [ $w -lt 300 ]; do sleep 0.1; w=$((w + 1)); done; fi
     done')
t0=$(now_ms)
spw ml logs -f "$f" >"$T/follow.out" 2>"$T/follow.err" &
fpid=$!
XPIDS="$XPIDS $fpid"
wait_for "$f" running 5 && sleep 0.5 && kill -0 "$fpid" 2>/dev/null && [ "$(state_of "$f")" = running ]
ok $? "logs -f is still following while the job runs"
touch "$T/ticker.go"
wait_until 10 eval '! kill -0 "$fpid" 2>/dev/null'
ended=$?
wait "$fpid"
frc=$?
t1=$(now_ms)
[ "$ended" -eq 0 ] && [ "$frc" -eq 0 ]
ok $? "logs -f ends by itself, status 0, after the job ends ($((t1 - t0)) ms)"
for i in 1 2 3 4 5 6 7 8 9 10; do echo "out $i"; done >"$T/follow.want"
cmp -s "$T/follow.out" "$T/follow.want"
ok $? "logs -f printed all ten lines, in order, and nothing else" ||
    diag "got:" "$(cat "$T/follow.out")" "stderr:" "$(cat "$T/follow.err")"
[ "$(state_of "$f")" = succeeded ]
ok $? "the followed job succeeded"
spw ml logs --stderr "$f" >"$T/f.err" 2>"$T/f.err2"
sed 's/^out/err/' "$T/follow.want" | cmp -s "$T/f.err" -
ok $? "logs --stderr gives the job's stderr" || diag "got:" "$(cat "$T/f.err" "$T/f.err2")"
spw ml logs -f --stderr "$f" >"$T/f.err3" 2>&1
cmp -s "$T/f.err" "$T/f.err3"
ok $? "logs -f --stderr of an ended job prints its stderr and returns"

# ---- 5. a job runs where it was submitted from; logs shows both streams ----
job_dir "$T/here"
(cd "$T/here" && SPILLWAY_TOKEN=$ML_TOKEN "$SPW" submit --gpus 1 --name here -- \
    sh -c 'pwd; echo kept > rel.txt; echo "to stderr" >&2; exit 3') >"$T/here.id" 2>"$T/here.err"
h=$(cat "$T/here.id")
[ -n "$h" ] && wait_for "$h" failed 10
ok $? "a job submitted with -- COMMAND from a directory is accepted and runs ($h)" ||
    diag "$(cat "$T/here.err")"
spw ml logs "$h" >"$T/h.out" 2>"$T/h.err"
[ "$(cat "$T/h.out")" = "$T/here" ] && [ "$(cat "$T/here/rel.txt" 2>/dev/null)" = kept ]
ok $? "it ran in the directory submit was run in, and wrote its relative file there" ||
    diag "stdout: $(cat "$T/h.out")"
[ "$(cat "$T/h.err")" = "to stderr" ]
ok $? "logs writes the job's stdout to stdout and its stderr to stderr" ||
    diag "stderr: $(cat "$T/h.err")"
spw ml logs -f --stdout "$h" >"$T/h.f" 2>&1
frc=$?
[ "$frc" -eq 3 ] && [ "$(cat "$T/h.f")" = "$T/here" ]
ok $? "logs -f of a job that exited 3 prints its stdout and exits 3 (status $frc)"
mkdir -p "$T/private" && chmod 700 "$T/private"
(cd "$T/private" && SPILLWAY_TOKEN=$ML_TOKEN "$SPW" submit --gpus 1 -- true) >"$T/p.out" 2>"$T/p.err"
prc=$?
[ "$prc" -eq 1 ] && contains "$T/p.err" "who cannot enter $T/private" &&
    contains "$T/p.err" "--workdir DIR"
ok $? "from a directory the job's user cannot enter, submit is refused and says so (status $prc)"

# ---- a Slurm batch script with #SBATCH directives -------------------------
cat >"$T/here/train.sbatch" <<'EOF'
#!/bin/sh
#SBATCH --job-name=sb-train
#SBATCH --gres=gpu:2
#SBATCH --time=00:05:00
#SBATCH --output=sb-%j.out
#SBATCH --partition=gpu
echo "hi from $1 in $(pwd) with $CUDA_VISIBLE_DEVICES"
echo "to stderr" >&2
EOF
(cd "$T/here" && SPILLWAY_TOKEN=$ML_TOKEN "$SPW" submit --sbatch train.sbatch -- there) \
    >"$T/sb.id" 2>"$T/sb.err"
sb=$(cat "$T/sb.id")
[ -n "$sb" ] && wait_for "$sb" succeeded 10 && show_json "$sb" "$T/sb.json" &&
    json_check "$T/sb.json" '
assert d["name"] == "sb-train" and d["gpus"] == 2, (d["name"], d["gpus"])
assert d["spec"]["max_runtime"] == 300, d["spec"].get("max_runtime")' &&
    grep -q "^hi from there in $T/here with [0-9],[0-9]\$" "$T/here/sb-$sb.out" &&
    grep -q "^to stderr\$" "$T/here/sb-$sb.out" && contains "$T/sb.err" "--partition ignored"
ok $? "submit --sbatch reads --job-name, --gres=gpu:2, --time=00:05:00 and --output=sb-%j.out" ||
    diag "$(cat "$T/sb.err" "$T/here/sb-$sb.out" 2>&1)"

# ---- 6. cancel several ids, or by team and label; queue --watch ----------
c1=$(submit ml --gpus 1 --label sweep=x -- sleep 30)
c2=$(submit ml --gpus 1 --label sweep=x --label lr=3 -- sleep 30)
c3=$(submit ml --gpus 1 --label sweep=y -- sleep 30)
c4=$(submit ml --gpus 1 -- sleep 30)
spw ml cancel --team ml --label sweep=x >"$T/cx.out" 2>&1
crc=$?
wait_for "$c1" cancelled 10 && wait_for "$c2" cancelled 10 && [ "$crc" -eq 0 ] &&
    [ "$(grep -c "cancel" "$T/cx.out")" -eq 2 ] && ! is_state "$c3" cancelled && ! is_state "$c4" cancelled
ok $? "cancel --team ml --label sweep=x cancels the two jobs labelled so, and only them" ||
    diag "$(cat "$T/cx.out")"
timeout 1.5 sh -c 'cd "$1" && SPILLWAY_TOKEN=$2 exec "$3" queue --watch=0.3' sh "$SUBMIT_DIR" "$ML_TOKEN" "$SPW" \
    >"$T/watch.out" 2>&1
n=$(grep -c "^ID " "$T/watch.out")
[ "$n" -ge 2 ] && grep -q "^$c3 " "$T/watch.out"
ok $? "queue --watch=0.3 prints the queue again and again ($n times in 1.5 s)"
spw ml cancel "$c3" "$c4" >"$T/c34.out" 2>&1
crc=$?
wait_for "$c3" cancelled 10 && wait_for "$c4" cancelled 10 && [ "$crc" -eq 0 ]
ok $? "cancel ID ID cancels both" || diag "$(cat "$T/c34.out")"

stop_daemon "$DPID"
ok $? "the daemon stops on SIGTERM"
no_strays "no process of the test's jobs is left"

done_testing
