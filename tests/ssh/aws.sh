#!/bin/sh
# aws.sh: `spillway serve` bursting to an AWS account (cloud.accounts, type
# aws) whose endpoint is the fake EC2 (tests/fake/ec2.py: every request
# checked against botocore's EC2 model and SigV4 signer), each instance
# booted as a network namespace with sshd (--boot-hosts netns-hosts.sh):
# - burst: RunInstances with MinCount = MaxCount, the acquisition's token
#   as ClientToken and spillway's tags; the job runs inside the instance
#   over ssh (its host key learnt at first contact), without the daemon's
#   AWS credentials in its environment; idle, the instance is terminated
#   and its namespace goes;
# - InsufficientInstanceCapacity in zone a: the job runs in zone b, and
#   pools says what is blocked;
# - kill -9 while RunInstances is in flight: after the restart, exactly
#   one instance for the job;
# - a spot interruption told only by DescribeInstances (shutting-down,
#   Server.SpotInstanceTermination): the job is requeued and resumes
#   elsewhere;
# - a spot interruption notice, read on the instance from its own IMDSv2
#   (the fake serves one inside each namespace; imds_url moves it): the
#   job gets SIGTERM while the instance still runs, saves its checkpoint,
#   and resumes from it on another instance;
# - live spot prices (DescribeSpotPriceHistory on the account's thread):
#   the fake's prices replace the catalog's in pools and /metrics, and a
#   price raised in zone a sends the next spot job to zone b;
# - an orphan carrying the daemon's tag: listed, and released; one made
#   while the daemon was down: released by the sweep at start;
# - AuthFailure: no launch, /healthz names the account and why;
# - the kill -9 storm of tests/daemon/storm-lib (short: STORM_ROUNDS=3,
#   STORM_JOBS=2, three submitters) on this account: every job on an
#   instance bought from the fake, no launch token bought twice, none
#   leaked.  SPILLWAY_AWS_STORM=0 leaves it out (make san-daemon does: the
#   storm already runs under ASan on the local, ssh, Slurm and Kubernetes
#   pools, and CI's time is short).
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/../daemon/daemon-lib"
# shellcheck source=tests/fake/ec2-lib
. "$(dirname "$0")/../fake/ec2-lib"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NET=$ROOT/scripts/netns-hosts.sh
HD=$T/instances
if [ "$(id -u)" != 0 ] || ! command -v sshd >/dev/null 2>&1 && [ ! -x /usr/sbin/sshd ]; then
    echo "1..0 # SKIP needs root and sshd (network namespaces with sshd)"
    exit 0
fi
if ! /usr/bin/python3 -c 'import botocore' 2>/dev/null; then
    echo "1..0 # SKIP needs Debian's python3-botocore (scripts/deps.sh test)"
    exit 0
fi
down_all() {
    fake_ec2_stop_all
    for d in "$HD"/inst-*; do [ -d "$d" ] && "$NET" del "$HD" "${d##*/inst-}"; done
}
trap 'down_all >/dev/null 2>&1; cleanup' EXIT
# The storm (the last section) unless SPILLWAY_AWS_STORM=0: 14 checks more.
if [ "${SPILLWAY_AWS_STORM:-1}" = 1 ]; then plan 49; else plan 35; fi

mkdir -p "$HD"
ssh-keygen -q -t ed25519 -N "" -f "$T/key" -C spillway-test
fake_ec2_start ec2 --zones us-east-1a,us-east-1b --boot-delay-s 0.3 --boot-hosts "$NET" "$HD" \
    --imds-port 1338
ok $? "the fake EC2 is up at $FAKE_EC2_URL, booting instances as netns hosts" || exit 1

cat >"$T/offers.csv" <<'EOF'
provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h,spot_usd_per_h
aws,us-east-1,us-east-1a,g4dn.xlarge,T4,1,0.526,0.158
aws,us-east-1,us-east-1b,g4dn.xlarge,T4,1,0.600,0.180
EOF
cat >"$T/serve.yaml" <<EOF
cloud:
  offers: offers.csv
  boot_delay_s: 1
  accounts:
    - name: prod
      type: aws
      regions: [us-east-1]
      endpoint_url: $FAKE_EC2_URL
      image: ami-0123456789abcdef0
      ssh_public_key: $T/key.pub
      ssh_user: root
      describe_s: 0.3
      imds_url: http://169.254.169.254:1338
      spot_price_s: 2
policy:
  wait: none
spot:
  checkpoint_interval_s: continuous
$(daemon_yaml)
  idle_timeout_s: 3
  cloud_ssh: {key: $T/key, port: 2222, down_after_s: 4}
EOF
# The daemon's credentials: the fake's.  They must never reach a job.
export AWS_ACCESS_KEY_ID=$FAKE_EC2_AKID AWS_SECRET_ACCESS_KEY=$FAKE_EC2_SECRET
export AWS_REGION=us-east-1
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts with an aws account" || { diag "$(cat "$DLOG")"; exit 1; }

# ---- a burst runs inside an EC2 instance ------------------------------------
# The host key lives in STATE/cloud_known_hosts while the instance does
# (idle_timeout_s after the job): a watcher keeps what it held, so a slow
# look after the job cannot miss it.
(
    while [ ! -f "$T/kh.stop" ]; do
        [ -s "$T/state/cloud_known_hosts" ] && cp "$T/state/cloud_known_hosts" "$T/kh1.new" &&
            mv "$T/kh1.new" "$T/kh1"
        sleep 0.05
    done
) </dev/null >/dev/null 2>&1 &
XPIDS="$XPIDS $!"
a=$(submit ml --gpus 1 --name burst -- sh -c 'echo "host=$SPILLWAY_TEST_HOST keys=$(env | grep -c "^AWS_")"')
wait_for "$a" succeeded 60
ok $? "a job bursts to the aws account and succeeds" || diag "$(tail -30 "$DLOG")"
touch "$T/kh.stop"
fake_ec2_get _fake/state >"$T/s1.json"
json_check "$T/s1.json" "
ri = [c for c in d['calls'] if c['action'] == 'RunInstances']
assert len(ri) == 1, [c['action'] for c in d['calls']]
p = ri[0]['params']
assert p['MinCount'] == p['MaxCount'] == '1', p
assert p['ImageId'] == 'ami-0123456789abcdef0' and p['InstanceType'] == 'g4dn.xlarge', p
assert p['ClientToken'], p
tags = {}
for k, v in p.items():
    if k.startswith('TagSpecification.1.Tag.') and k.endswith('.Key'):
        tags[v] = p[k[:-4] + '.Value']
assert tags.get('spillway:job') == '$a' and tags.get('spillway:token') == p['ClientToken'], tags
assert tags.get('spillway:daemon'), tags"
ok $? "RunInstances: MinCount = MaxCount = 1, the image, the token as ClientToken, spillway's tags"
fake_ec2_py 'len(d["violations"]) + len(d["auth_failures"])' >"$T/bad"
[ "$(cat "$T/bad")" = 0 ]
ok $? "every request matched botocore's EC2 model and its SigV4 signature ($(cat "$T/bad") bad)"
iid=$(fake_ec2_py '[i["id"] for i in d["instances"]][0]')
spw ml logs "$a" >"$T/a.out" 2>&1
[ "$(cat "$T/a.out")" = "host=$iid keys=0" ]
ok $? "it ran inside instance $iid's namespace, without the daemon's AWS variables: $(cat "$T/a.out")"
grep -q "." "$T/kh1" 2>/dev/null
ok $? "the instance's host key was learnt at first contact (STATE_DIR/cloud_known_hosts)"
terminated() { [ "$(fake_ec2_py "[i['state'] for i in d['instances'] if i['id'] == '$iid'][0]")" = terminated ]; }
wait_until 30 terminated
ok $? "idle for idle_timeout_s, instance $iid is terminated" || diag "$(tail -20 "$DLOG")"
gone() { [ ! -d "$HD/inst-$iid" ] || [ ! -f "$HD/inst-$iid/state" ]; }
wait_until 20 gone
ok $? "and its namespace is gone"

# ---- a capacity error in zone a: zone b -------------------------------------
fake_ec2_post _fake/inject '{"action": "RunInstances", "code": "InsufficientInstanceCapacity", "zone": "us-east-1a", "count": "always"}' >/dev/null
b=$(submit ml --gpus 1 --name zoneb -- sleep 1)
wait_for "$b" succeeded 60
ok $? "with zone a out of capacity, the job still runs" || diag "$(tail -30 "$DLOG")"
[ "$(field "$b" 'd["placement"]')" != "" ] && field "$b" 'd["placement"]' | grep -q us-east-1b
ok $? "in zone b: $(field "$b" 'd["placement"]')"
spw ml pools -o json >"$T/pools.json"
json_check "$T/pools.json" '
blk = d["blocked"]
assert any("us-east-1a" in b["offer"] and "InsufficientInstanceCapacity" in b["why"] for b in blk), blk'
ok $? "pools: the zone-a offer is blocked, with EC2's code"
fake_ec2_post _fake/inject/clear '{}' >/dev/null

# ---- kill -9 while RunInstances is in flight --------------------------------
# No idle instance left to reuse: the next job needs a RunInstances.
none_live() { [ "$(fake_ec2_py "len([i for i in d['instances'] if i['state'] in ('pending', 'running')])")" = 0 ]; }
wait_until 30 none_live
fake_ec2_post _fake/config '{"delay_s": "3:3"}' >/dev/null
c=$(submit ml --gpus 1 --name slow -- sleep 2)
inflight() { [ "$(fake_ec2_py 'd["in_flight"]')" -ge 1 ] && [ "$(state_of "$c")" = placed ]; }
wait_until 20 inflight
ok $? "job $c is placed, its RunInstances in flight (the fake answers in 3 s)"
kill9_daemon "$DPID"
fake_ec2_post _fake/config '{"delay_s": null}' >/dev/null
start_daemon "$T/serve.yaml" "$T/state"
wait_for "$c" succeeded 60
ok $? "after kill -9 and a restart, the job runs and succeeds" || diag "$(tail -30 "$DLOG")"
n=$(fake_ec2_py "len([i for i in d['instances'] if i['tags'].get('spillway:job') == '$c'])")
[ "$n" = 1 ]
ok $? "exactly one instance was bought for it ($n)"

# ---- a spot interruption -----------------------------------------------------
s=$(submit ml --gpus 1 --name spot --spot always -- sh -c 'sleep 8; echo done')
wait_for "$s" running 60
ok $? "a spot job runs" || diag "$(tail -30 "$DLOG")"
sid=$(fake_ec2_py "[i['id'] for i in d['instances'] if i['tags'].get('spillway:job') == '$s' and i['state'] == 'running'][0]")
fake_ec2_post _fake/interrupt "{\"instance\": \"$sid\", \"notice_s\": 0.5, \"notice\": false}" >/dev/null
wait_for "$s" succeeded 90
ok $? "its instance $sid is reclaimed with no notice (DescribeInstances: Server.SpotInstanceTermination); the job resumes elsewhere and succeeds" || diag "$(tail -30 "$DLOG")"
[ "$(field "$s" 'd.get("preemptions", 0)')" -ge 1 ] 2>/dev/null
ok $? "it counts $(field "$s" 'd.get("preemptions", 0)') preemption(s)"

# ---- a spot interruption notice, read on the instance from IMDS --------------
# The job counts in steps of 0.2 s, resuming from its checkpoint: the
# first attempt until it is stopped, a resumed one 10 steps more; on
# SIGTERM it saves the count there and says where.
ck='d=$SPILLWAY_CHECKPOINT_DIR; n=0; [ -f "$d/n" ] && n=$(cat "$d/n")
echo "start $n $SPILLWAY_TEST_HOST"
trap '"'"'echo "$n" >"$d/n.tmp" && mv "$d/n.tmp" "$d/n"; echo "saved $n $SPILLWAY_TEST_HOST" >>"$d/saves"; exit 143'"'"' TERM
end=1000000; [ "$n" -gt 0 ] && end=$((n + 10))
while [ "$n" -lt "$end" ]; do sleep 0.2; n=$((n + 1)); done
echo "done $n"'
k=$(submit ml --gpus 1 --name notice --spot always -- sh -c "$ck")
wait_for "$k" running 60
# Its instance (maybe an idle one, bought for another job): where it says it runs.
counted() { kid=$(spw ml logs "$k" 2>/dev/null | sed -n 's/^start 0 \(i-[0-9a-f]*\)$/\1/p'); [ -n "$kid" ]; }
wait_until 30 counted
fake_ec2_post _fake/interrupt "{\"instance\": \"$kid\", \"notice_s\": 15}" >/dev/null
kdir=$(field "$k" 'd.get("checkpoint_dir", "")')
[ -n "$kdir" ] || kdir=$(find "$T/state/checkpoints" -type d -name "$k" | head -1)
saved() { grep -q "^saved [0-9]* $kid\$" "$kdir/saves" 2>/dev/null || return 1; }
wait_until 30 saved
ok $? "at the notice, the job on $kid got SIGTERM and saved its checkpoint: $(cat "$kdir/saves" 2>/dev/null)" || diag "$(grep -i "notice\|$kid" "$DLOG" | tail -10)"
[ "$(fake_ec2_py "[i['state'] for i in d['instances'] if i['id'] == '$kid'][0]")" = running ]
ok $? "while $kid still ran (the notice, not the termination, stopped it)"
fake_ec2_py "[i['imds'] for i in d['instances'] if i['id'] == '$kid'][0]" >"$T/imds"
/usr/bin/python3 -c 'import ast, sys; m = ast.literal_eval(open(sys.argv[1]).read())
sys.exit(not (m["tokens"] >= 1 and m["notices_read"] >= 1 and m["unauthorized"] == 0))' "$T/imds"
ok $? "the host read it from its own IMDS at imds_url, with an IMDSv2 token: $(cat "$T/imds")"
grep -q "instance .*spot interruption notice on the host" "$DLOG"
ok $? "the daemon logs the notice: $(grep -o "spot interruption notice on the host.*" "$DLOG" | head -1)"
wait_for "$k" succeeded 90
ok $? "the job resumes and succeeds" || diag "$(tail -30 "$DLOG")"
spw ml logs "$k" >"$T/k.out" 2>&1
n0=$(sed -n 's/^saved \([0-9]*\) .*/\1/p' "$kdir/saves" | head -1)
grep -q "^start $n0 " "$T/k.out" && ! grep -q "^start $n0 $kid\$" "$T/k.out" && [ "$n0" -gt 0 ] && grep -q "^done $((n0 + 10))\$" "$T/k.out"
ok $? "from its checkpoint ($n0 steps), on another instance: $(tr '\n' ' ' <"$T/k.out")"

# ---- live spot prices ---------------------------------------------------------
# The fake's own prices (g4dn.xlarge: 0.1578 in zone a, 0.1625 in b), not
# the catalog's (0.158, 0.180).
pools_py() { spw ml pools -o json >"$T/pools.json" 2>/dev/null && jpy "$T/pools.json" "$1"; }
spot_of() { pools_py "[(o['spot_usd_per_h'], o['spot_price_source']) for o in d['offers'] if o['name'].endswith('$1/g4dn.xlarge')][0]"; }
live_b() { [ "$(spot_of us-east-1b)" = "(0.1625, 'live')" ]; }
wait_until 20 live_b
ok $? "pools: zone b's spot price is EC2's live one, $(spot_of us-east-1b) (the catalog says 0.180)"
fake_ec2_post _fake/spot-price '{"instance_type": "g4dn.xlarge", "zone": "us-east-1a", "price": 0.4}' >/dev/null
live_a() { [ "$(spot_of us-east-1a)" = "(0.4, 'live')" ]; }
wait_until 20 live_a
ok $? "a price raised at EC2 in zone a reaches the daemon: $(spot_of us-east-1a)"
http GET /metrics admin
grep -q 'spillway_offer_spot_usd_per_h{offer="aws/us-east-1/us-east-1a/g4dn.xlarge",source="live"} 0.400000' "$T/http.body"
ok $? "/metrics: $(grep 'spillway_offer_spot_usd_per_h.*us-east-1a' "$T/http.body")"
# The decision is what is checked: the job is cancelled once placed.
p=$(submit ml --gpus 1 --name priced --spot always -- true)
placed() { case $(state_of "$p") in placed | running | succeeded) return 0 ;; esac; return 1; }
wait_until 30 placed
field "$p" 'd["placement"]' | grep -q us-east-1b
ok $? "the next spot job goes to zone b, now the cheaper: $(field "$p" 'd["placement"]')" || diag "$(grep "live spot price\|$p" "$DLOG")" "$(spw ml explain "$p")"
spw ml cancel "$p" >/dev/null 2>&1
fake_ec2_py 'len(d["violations"]) + len(d["auth_failures"])' >"$T/bad"
fake_ec2_py "len([c for c in d['calls'] if c['action'] == 'DescribeSpotPriceHistory'])" >"$T/nprice"
[ "$(cat "$T/bad")" = 0 ] && [ "$(cat "$T/nprice")" -ge 2 ]
ok $? "$(cat "$T/nprice") DescribeSpotPriceHistory calls, every request still matching botocore's model and signer ($(cat "$T/bad") bad)"

# ---- an orphan ---------------------------------------------------------------
did=$(fake_ec2_py "[c['params'] for c in d['calls'] if c['action'] == 'RunInstances'][0]" |
    /usr/bin/python3 -c 'import ast, sys
p = ast.literal_eval(sys.stdin.read())
print([p[k[:-4] + ".Value"] for k in p if k.endswith(".Key") and p[k] == "spillway:daemon"][0])')
awscli_start >/dev/null 2>&1
fake_ec2_env
awscli_run "$T/orphan.json" --endpoint-url "$FAKE_EC2_URL" --output json ec2 run-instances --image-id ami-0123456789abcdef0 \
    --instance-type g4dn.xlarge --count 1 --tag-specifications \
    "ResourceType=instance,Tags=[{Key=spillway:daemon,Value=$did}]"
orphan=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["Instances"][0]["InstanceId"])' "$T/orphan.json" 2>/dev/null)
spw admin instances -o json >"$T/inst.json"
json_check "$T/inst.json" "
o = [i for i in d['instances'] if i.get('cloud_id') == '$orphan']
assert o and o[0]['orphan'], d['instances']"
ok $? "instances -o json lists $orphan, which carries the daemon's tag, as an orphan"
spw admin instances --release-orphans >"$T/rel.out" 2>&1
oterm() { case $(fake_ec2_py "[i['state'] for i in d['instances'] if i['id'] == '$orphan'][0]") in shutting-down | terminated) return 0 ;; esac; return 1; }
wait_until 20 oterm
ok $? "--release-orphans terminates it: $(head -1 "$T/rel.out")"

# An orphan made while the daemon is down (its record lost, say) is
# released by the sweep at start.
kill9_daemon "$DPID"
awscli_run "$T/orphan2.json" --endpoint-url "$FAKE_EC2_URL" --output json ec2 run-instances \
    --image-id ami-0123456789abcdef0 --instance-type g4dn.xlarge --count 1 --tag-specifications \
    "ResourceType=instance,Tags=[{Key=spillway:daemon,Value=$did}]"
orphan2=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["Instances"][0]["InstanceId"])' "$T/orphan2.json" 2>/dev/null)
start_daemon "$T/serve.yaml" "$T/state"
o2term() { case $(fake_ec2_py "[i['state'] for i in d['instances'] if i['id'] == '$orphan2'][0]") in shutting-down | terminated) ;; *) return 1 ;; esac &&
    grep -q "released instance .*an orphan" "$DLOG"; }
wait_until 30 o2term
ok $? "an orphan made while the daemon was down ($orphan2) is released by the sweep at start" || diag "$(grep -i orphan "$DLOG")" "$(spw admin instances -o json)" "$(fake_ec2_py "[(i['id'], i['state'], i['tags']) for i in d['instances'] if i['id'] == '$orphan2']")"

# ---- an account-wide refusal --------------------------------------------------
# No idle instance of the earlier sections may take the next job (it would
# run there and ask no RunInstances): wait until every one has ended.
none_live() { [ "$(fake_ec2_py "len([i for i in d['instances'] if i['state'] in ('pending', 'running')])")" = 0 ]; }
wait_until 30 none_live || diag "instances still live: $(fake_ec2_py "[(i['id'], i['state']) for i in d['instances'] if i['state'] in ('pending', 'running')]")"
fake_ec2_post _fake/inject '{"action": "RunInstances", "code": "AuthFailure", "count": "always"}' >/dev/null
before=$(fake_ec2_py "len([c for c in d['calls'] if c['action'] == 'RunInstances'])")
e=$(submit ml --gpus 1 --name denied -- true)
refused() { http GET /healthz none && grep -q "AuthFailure" "$T/http.body"; }
wait_until 30 refused
ok $? "AuthFailure: /healthz names the account and why: $(head -c 200 "$T/http.body")"
sleep 2   # several loop turns: nothing more may be asked
after=$(fake_ec2_py "len([c for c in d['calls'] if c['action'] == 'RunInstances'])")
[ $((after - before)) -le 1 ] && [ "$(state_of "$e")" != running ]
ok $? "and no further launch is asked ($((after - before)) RunInstances after the refusal; job $(state_of "$e"))"
stop_daemon "$DPID"
ok $? "the daemon stops"

# ---- the kill -9 storm of tests/daemon/storm-lib on this account -------------
# Every job bursts to an instance bought from the fake (a 4-GPU type
# added to the catalog), the daemon killed -9 and restarted between;
# afterwards no launch token bought twice, nothing left running.  Every
# job boots a namespace host, so it is short by default (3 rounds, 6 jobs);
# STORM_ROUNDS and STORM_JOBS make it longer, SPILLWAY_AWS_STORM=0 skips it.
if [ "${SPILLWAY_AWS_STORM:-1}" != 1 ]; then
    diag "the kill -9 storm on the aws account was left out (SPILLWAY_AWS_STORM=0)"
    done_testing
    exit $?
fi
fake_ec2_post _fake/inject/clear '{}' >/dev/null
echo "aws,us-east-1,us-east-1a,g4dn.12xlarge,T4,4,3.912,1.174" >>"$T/offers.csv"
storm_t0=$(date +%s)
STORM_WHAT="an aws account (the fake EC2), each job on an instance bought for it"
STORM_HOSTS="i-[0-9a-f]*" STORM_ROUNDS=${STORM_ROUNDS:-3} STORM_JOBS=${STORM_JOBS:-2} STORM_WAIT_S=120
# shellcheck source=tests/daemon/storm-lib
. "$ROOT/tests/daemon/storm-lib"
diag "RunInstances: $(fake_ec2_py "len([c for c in d['calls'] if c['action'] == 'RunInstances'])") calls for $(fake_ec2_py "len({c['params'].get('ClientToken') for c in d['calls'] if c['action'] == 'RunInstances'})") tokens (a token asked again after a restart buys nothing more)"
fake_ec2_py "__import__('collections').Counter(i['tags'].get('spillway:token') for i in d['instances'] if i['tags'].get('spillway:token')).most_common(1)[0][1]" >"$T/per_token"
[ "$(cat "$T/per_token")" = 1 ]
ok $? "no launch token bought twice: $(fake_ec2_py "len([i for i in d['instances'] if i['tags'].get('spillway:token')])") instances, at most $(cat "$T/per_token") per token"
wait_until 60 none_live
ok $? "none leaked: with every job ended, EC2 shows no instance pending or running" || diag "$(fake_ec2_py "[(i['id'], i['state'], i['tags'].get('spillway:job')) for i in d['instances'] if i['state'] in ('pending', 'running')]")"
diag "the storm took $(($(date +%s) - storm_t0)) s"
stop_daemon "$DPID"
done_testing
