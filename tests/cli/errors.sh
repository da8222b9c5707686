#!/bin/sh
# errors.sh: bad input fails with a non-zero status and a message that names
# the file and line to fix.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 13

printf 'id,submit_s,gpus,runtime_s\n1,0,1,60\n2,5,1,60\n' >"$T/good.csv"

printf 'id,submit_s,gpus,runtime_s,colour\n1,0,1,60,red\n' >"$T/unknown-col.csv"
fails_with "a trace with an unknown column fails naming FILE:1 and the column" \
    "unknown-col.csv:1: unknown column 'colour'" sim --trace "$T/unknown-col.csv" -q

printf 'id,submit_s,gpus,runtime_s\n1,0,1,60\n2,5,0,60\n' >"$T/zero-gpus.csv"
fails_with "a trace with gpus 0 on line 3 fails naming FILE:3 and the column" \
    "zero-gpus.csv:3: column 'gpus'" sim --trace "$T/zero-gpus.csv" -q

cat >"$T/unknown-key.yaml" <<'YAML'
onprem:
  - name: dc1
    nodes: 2
    gpus_per_node: 8
    gpus_model: A100
YAML
fails_with "a config with an unknown key fails naming FILE:LINE and the key" \
    "unknown-key.yaml:5:" sim --trace "$T/good.csv" --config "$T/unknown-key.yaml" -q
contains "$T/fw.err" "gpus_model"
ok $? "the unknown-key message names the key"
printf 'onprem:\n  - name: dc1\n    nodes: 2\n    gpu_per_node: 8\n' >"$T/typo-key.yaml"
"$SPW" sim --trace "$T/good.csv" --config "$T/typo-key.yaml" -q >/dev/null 2>"$T/tk.err"
contains "$T/tk.err" "unknown key 'gpu_per_node' in onprem pool: did you mean 'gpus_per_node'?"
ok $? "a typo'd key: the message says the key it most likely meant" || diag "$(cat "$T/tk.err")"

# A section with many keys: every key listed is whole, the rest counted.
printf 'daemon:\n  max_gpus_pe: 3\n' >"$T/daemon-typo.yaml"
"$SPW" serve --config "$T/daemon-typo.yaml" --state-dir "$T/st" >"$T/dt.out" 2>"$T/dt.err"
rc=$?
python3 - "$T/dt.err" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
assert "unknown key 'max_gpus_pe' in daemon: did you mean 'max_gpus_per_job'?" in t, t
m = re.search(r"\(expected one of: (.*), and (\d+) more\)$", t.strip())
assert m, t
keys = m.group(1).split(", ")
known = {"listen", "state_dir", "gpus", "default_est_runtime_s", "kill_grace_s",
         "idle_timeout_s", "max_instance_lifetime_s", "tick_s", "max_body_bytes", "tokens"}
assert keys and all(k in known for k in keys), keys
EOF
[ $? -eq 0 ] && [ "$rc" -ne 0 ]
ok $? "a typo'd daemon key: 'did you mean', whole keys only, and how many more" ||
    diag "$(cat "$T/dt.err")"

run_spw "$T/out" "$T/err" sbumit --gpus 1 -- true
[ "$rc" -eq 2 ] && [ "$(head -1 "$T/err")" = "spillway: unknown command 'sbumit'; did you mean 'submit'?" ] &&
    [ "$(wc -l <"$T/err")" -le 2 ]
ok $? "an unknown command suggests the nearest one in two lines, not the whole usage" ||
    diag "$(cat "$T/err")"

cat >"$T/zero-nodes.yaml" <<'YAML'
onprem:
  - name: dc1
    nodes: 0
    gpus_per_node: 8
YAML
fails_with "a config pool with nodes: 0 fails naming FILE:3 and nodes" \
    "zero-nodes.yaml:3:" sim --trace "$T/good.csv" --config "$T/zero-nodes.yaml" -q
contains "$T/fw.err" "nodes"
ok $? "the nodes: 0 message says what is wrong with nodes"

fails_with "a missing trace file fails naming the file" \
    "$T/no-such-trace.csv" sim --trace "$T/no-such-trace.csv" -q

fails_with "a missing config file fails naming the file" \
    "$T/no-such.yaml" sim --trace "$T/good.csv" --config "$T/no-such.yaml" -q

fails_with "--wait bogus fails and quotes the bad policy" \
    "bogus" sim --trace "$T/good.csv" --wait bogus -q

done_testing

# Found by fuzzing: submit + runtime overflowed to infinity and the job was lost.
printf 'id,submit_s,gpus,runtime_s\n1,1e308,1,1e308\n' >"$T/huge-time.csv"
fails_with "a submit time beyond 1e12 s fails naming FILE:2 and the bound" \
    "huge-time.csv:2: column 'submit_s': expected a number of seconds from 0 to 1e12" \
    sim --trace "$T/huge-time.csv" -q
