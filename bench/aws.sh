#!/usr/bin/env bash
# bench/aws.sh: the scheduler loop while a slow cloud answers.  `spillway
# serve` with one AWS account (type aws) pointed at the fake EC2
# (tests/fake/ec2.py) answering every call in 1 to 5 s (--delay-s 1:5), no
# on-prem pool: N one-GPU jobs are submitted at once and all burst, so N
# RunInstances calls (then their DescribeInstances) queue on the account's op
# threads.  Beside it, the same config with an emulated account (no network
# at all) is the baseline, in the same run.
#
#   bench/aws.sh [--jobs N] [--watch S] [--ready K]
#
# Instances never finish booting (the fake's boot delay and the emulated
# one are longer than the run), so what is measured is the loop beside the
# provider's calls alone, not the jobs' launches over ssh.
#
# For each daemon, a probe asks /healthz every 20 ms for S seconds (30)
# from the first submit and keeps the largest last_turn_age_s (how long ago
# the loop last finished a turn: a loop that waits on the network shows it
# here) and the slowest /healthz answer.  For the aws daemon it also reads,
# per job, the time from its burst decision (placed_ts) to the arrival of
# its RunInstances at the fake (the fake's t_arrived): median and max.
#
# Then, as root with sshd (network namespaces), "instance ready -> job
# started": a third daemon bursts K one-GPU jobs (5) to a fake that answers
# at once and boots every instance as a netns host with sshd
# (scripts/netns-hosts.sh); per job, the time from its instance's READY (the
# describe that saw it running, once its sshd answers: boot excluded) to the
# job's start (start_ts, the daemon's turn clock when it launched it:
# ready_to_job_started) and to the job's own first instruction on the host
# (its `date`, the ssh launch included: ready_to_process_ran): min, median
# and max.
#
# Prints key=value lines starting "aws_bench".  Needs Debian's python3 with
# python3-botocore (scripts/deps.sh test); exits 3 with SKIP without it.
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 1
JOBS=200
WATCH=30
READY=5
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --watch) WATCH=$2; shift 2 ;;
    --ready) READY=$2; shift 2 ;;
    *) echo "usage: bench/aws.sh [--jobs N] [--watch S] [--ready K]" >&2; exit 2 ;;
    esac
done
PY=/usr/bin/python3
$PY -c 'import botocore' 2>/dev/null || { echo "aws_bench: SKIP needs Debian's python3-botocore"; exit 3; }
[ -x ./spillway ] || make -j2 spillway >/dev/null || exit 1
D=$(mktemp -d /tmp/spw-aws-bench.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

$PY tests/fake/ec2.py --url-file "$D/url" --delay-s 1:5 --zones us-east-1a,us-east-1b \
    --boot-delay-s 100000 \
    >"$D/fake.out" 2>"$D/fake.err" &
pids+=($!)
for _ in $(seq 300); do [ -s "$D/url" ] && break; sleep 0.1; done
[ -s "$D/url" ] || { echo "aws_bench: the fake EC2 did not start: $(cat "$D/fake.err")" >&2; exit 1; }
FAKE=$(cat "$D/url")
ssh-keygen -q -t ed25519 -N "" -f "$D/key"
cat >"$D/offers.csv" <<'EOF'
provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h
aws,us-east-1,us-east-1a,g4dn.xlarge,T4,1,0.526,0.158
aws,us-east-1,us-east-1b,g4dn.xlarge,T4,1,0.600,0.180
EOF
TOKEN=bench-admin-token-0000000001
# config NAME ACCOUNT_YAML
config() {
    cat >"$D/$1.yaml" <<EOF
cloud:
  offers: $D/offers.csv
  boot_delay_s: 100000
  accounts:
$2
policy:
  wait: none
daemon:
  tick_s: 0.05
  max_queued_per_team: 100000
  max_instances_per_job: 4
  cloud_ssh: {key: $D/key}
  tokens:
    - {token: $TOKEN, team: ml}
    - {token: ${TOKEN}-admin, admin: true}
EOF
    chmod 600 "$D/$1.yaml"
}
config aws "    - {name: prod, type: aws, regions: [us-east-1], endpoint_url: $FAKE,
       image: ami-0123456789abcdef0, ssh_public_key: $D/key.pub, threads: 32}"
config emu "    - {name: aws, type: emulated}"
export AWS_ACCESS_KEY_ID=AKIDFAKEEC2TEST AWS_SECRET_ACCESS_KEY=fake-secret-key AWS_REGION=us-east-1

# serve_start NAME: `spillway serve` with $D/NAME.yaml; sets url and dpid.
serve_start() {
    url=
    ./spillway serve --config "$D/$1.yaml" --state-dir "$D/state-$1" \
        --listen 127.0.0.1:0 </dev/null >"$D/$1.out" 2>"$D/$1.log" &
    dpid=$!
    pids+=($dpid)
    for _ in $(seq 600); do
        url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$D/$1.log" 2>/dev/null)
        [ -n "$url" ] && break
        sleep 0.05
    done
    [ -n "$url" ] || { echo "aws_bench: serve ($1) did not start: $(cat "$D/$1.log")" >&2; return 1; }
}

# run NAME: one daemon, N submits at once, the probe; prints key=value.
run() {
    local name=$1 url= dpid
    serve_start "$name" || return 1
    $PY - "$url" "$TOKEN" "$JOBS" "$WATCH" "$name" "$FAKE" <<'PY'
import json, sys, threading, time, urllib.request
url, token, jobs, watch, name, fake = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
def req(path, body=None):
    r = urllib.request.Request(url + path, data=body, headers=H, method="POST" if body else "GET")
    with urllib.request.urlopen(r, timeout=30) as f:
        return json.load(f)
worst_age, worst_call, probes, stop = 0.0, 0.0, 0, False
def probe():
    global worst_age, worst_call, probes
    while not stop:
        t0 = time.time()
        try:
            h = req("/healthz")
            age = h.get("last_turn_age_s") or 0.0
            worst_age = max(worst_age, age)
        except Exception:
            worst_age = max(worst_age, 99.0)
        worst_call = max(worst_call, time.time() - t0)
        probes += 1
        time.sleep(0.02)
th = threading.Thread(target=probe)
th.start()
t0 = time.time()
ids = []
spec = json.dumps({"name": "b", "gpus": 1, "run": ["sleep", "600"]}).encode()
for _ in range(jobs):
    ids.append(req("/v1/jobs", spec)["id"])
submit_s = time.time() - t0
time.sleep(max(0.0, watch - (time.time() - t0)))
stop = True
th.join()
print("aws_bench_%s_submit_s=%.3f" % (name, submit_s))
print("aws_bench_%s_max_turn_age_s=%.4f" % (name, worst_age))
print("aws_bench_%s_max_healthz_s=%.4f" % (name, worst_call))
print("aws_bench_%s_probes=%d" % (name, probes))
if name == "aws":
    placed = {}
    for i in ids:
        j = req("/v1/jobs/" + i)
        if j.get("placed_ts"):
            placed[i] = j["placed_ts"]
    with urllib.request.urlopen(fake + "/_fake/state", timeout=30) as f:
        st = json.load(f)
    lat, inflight = [], st.get("max_in_flight", 0)
    for c in st["calls"]:
        if c["action"] != "RunInstances":
            continue
        p = c["params"]
        job = [p[k[:-4] + ".Value"] for k in p if k.endswith(".Key") and p[k] == "spillway:job"]
        if job and job[0] in placed:
            lat.append(c["t_arrived"] - placed[job[0]])
    lat.sort()
    n = len(lat)
    print("aws_bench_run_instances=%d" % n)
    print("aws_bench_max_calls_in_flight=%d" % inflight)
    if n:
        print("aws_bench_decision_to_run_instances_min_s=%.4f" % lat[0])
        print("aws_bench_decision_to_run_instances_median_s=%.4f" % lat[n // 2])
        print("aws_bench_decision_to_run_instances_max_s=%.4f" % lat[-1])
PY
    kill "$dpid" 2>/dev/null
    wait "$dpid" 2>/dev/null
}
run emu >"$D/emu.kv" || exit 1
run aws >"$D/aws.kv" || exit 1
cat "$D/emu.kv" "$D/aws.kv"

# ---- instance ready -> job started ------------------------------------------
ready_phase() {
    local url= dpid fpid
    mkdir -p "$D/hosts"
    $PY tests/fake/ec2.py --url-file "$D/url2" --zones us-east-1a,us-east-1b --boot-delay-s 0.3 \
        --boot-hosts "$PWD/scripts/netns-hosts.sh" "$D/hosts" >"$D/fake2.out" 2>"$D/fake2.err" &
    fpid=$!
    pids+=($fpid)
    for _ in $(seq 300); do [ -s "$D/url2" ] && break; sleep 0.1; done
    [ -s "$D/url2" ] || { echo "aws_bench: the second fake did not start" >&2; return 1; }
    config ready "    - {name: prod, type: aws, regions: [us-east-1], endpoint_url: $(cat "$D/url2"),
       image: ami-0123456789abcdef0, ssh_public_key: $D/key.pub, ssh_user: root, describe_s: 0.2}"
    sed -i "s|  cloud_ssh: {key: $D/key}|  cloud_ssh: {key: $D/key, port: 2222}\n  idle_timeout_s: 600|" "$D/ready.yaml"
    serve_start ready || return 1
    $PY - "$url" "$TOKEN" "$READY" <<'PY'
import json, sys, time, urllib.request
url, token, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
def req(path, body=None, tok=token):
    h = dict(H, Authorization="Bearer " + tok)
    r = urllib.request.Request(url + path, data=body, headers=h, method="POST" if body else "GET")
    with urllib.request.urlopen(r, timeout=30) as f:
        return json.load(f)
spec = json.dumps({"name": "r", "gpus": 1, "run": ["date", "+%s.%N"]}).encode()
ids = [req("/v1/jobs", spec)["id"] for _ in range(k)]
end = time.time() + 300
jobs = {}
while time.time() < end:
    jobs = {i: req("/v1/jobs/" + i) for i in ids}
    if all(j["state"] in ("succeeded", "failed", "cancelled") for j in jobs.values()):
        break
    time.sleep(0.5)
ready = {}
for i in req("/v1/pools", tok=token + "-admin").get("instances", []):
    if i.get("ready_ts"):
        ready[i["id"]] = i["ready_ts"]
lat, proc = [], []
for i, j in jobs.items():
    r = [ready[x] for x in j.get("instances", []) if x in ready]
    if j.get("start_ts") and r:
        lat.append(j["start_ts"] - max(r))
        # The job's own first instruction on the host (its date), the ssh
        # launch included.
        with urllib.request.urlopen(urllib.request.Request(
                url + "/v1/jobs/" + i + "/logs", headers=H), timeout=30) as f:
            out = f.read().decode().split()
        if out:
            proc.append(float(out[0]) - max(r))
proc.sort()
lat.sort()
n = len(lat)
print("aws_bench_ready_jobs=%d" % n)
for name, v in (("job_started", lat), ("process_ran", proc)):
    for what, i in (("min", 0), ("median", len(v) // 2), ("max", len(v) - 1)):
        if v:
            print("aws_bench_ready_to_%s_%s_s=%.4f" % (name, what, v[i]))
PY
    kill "$dpid" 2>/dev/null
    wait "$dpid" 2>/dev/null
    kill "$fpid" 2>/dev/null   # deletes its hosts first
    wait "$fpid" 2>/dev/null
}
if [ "$(id -u)" = 0 ] && [ -x /usr/sbin/sshd ]; then
    ready_phase || echo "aws_bench_ready_to_job_started: FAILED (see above)"
else
    echo "aws_bench_ready_to_job_started: SKIP needs root and sshd (network namespaces)"
fi
e=$(sed -n 's/^aws_bench_emu_max_turn_age_s=//p' "$D/emu.kv")
a=$(sed -n 's/^aws_bench_aws_max_turn_age_s=//p' "$D/aws.kv")
awk -v a="$a" -v e="$e" 'BEGIN { printf "aws_bench_turn_age_ratio_aws_over_emulated=%.2f\n", (e > 0 ? a / e : 0) }'
