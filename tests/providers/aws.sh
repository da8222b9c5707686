#!/bin/sh
# aws.sh: the aws provider end to end against the fake EC2 endpoint
# (tests/fake/ec2.py: every request checked against botocore's EC2 model and
# SigV4 signer), on loopback: tests/providers/aws_e2e.c drives the provider
# and prints the TAP.  Skipped where Debian's python3-botocore is missing.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
BIN=${SPW_AWS_TEST_BIN:-$ROOT/build/tests/providers/aws_e2e}
if ! $PY -c 'import botocore' 2>/dev/null; then
    echo "1..0 # SKIP Debian's python3-botocore is not installed (scripts/deps.sh test)"
    exit 0
fi
[ -x "$BIN" ] || { echo "Bail out! $BIN is not built (make tests)"; exit 1; }
T=$(mktemp -d /tmp/spw-aws-XXXXXX)
trap 'kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null; rm -rf "$T"' EXIT
$PY "$ROOT/tests/fake/ec2.py" --url-file "$T/url" --boot-delay-s 0.2 --shutdown-delay-s 0.2 \
    --imds-role spillway-test --log "$T/fake.log" 2>"$T/fake.err" &
fake=$!
# The fake writes its URL once it listens.
i=0
while [ ! -s "$T/url" ] && [ $i -lt 200 ] && kill -0 "$fake" 2>/dev/null; do
    sleep 0.05; i=$((i + 1))
done
[ -s "$T/url" ] || { echo "Bail out! the fake EC2 did not start: $(cat "$T/fake.err")"; exit 1; }
SPW_FAKE_EC2_URL=$(cat "$T/url") SPW_FAKE_IMDS=1 \
    AWS_ACCESS_KEY_ID=AKIDFAKEEC2TEST AWS_SECRET_ACCESS_KEY=fake-secret-key \
    AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent \
    AWS_PROFILE= AWS_SESSION_TOKEN= AWS_ENDPOINT_URL= AWS_ENDPOINT_URL_EC2= \
    "$BIN"
rc=$?
[ $rc = 0 ] || { echo "# the fake's stderr:"; sed 's/^/# /' "$T/fake.err" | tail -20; }
exit $rc
