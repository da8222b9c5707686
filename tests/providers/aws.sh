#!/bin/sh
# aws.sh: the aws provider end to end against the fake EC2 endpoint
# (tests/fake/ec2.py: every request checked against botocore's EC2 model and
# SigV4 signer), on loopback: tests/providers/aws_e2e.c drives the provider
# and prints the TAP.  Skipped where Debian's python3-botocore is missing.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${SPW_AWS_TEST_BIN:-$ROOT/build/tests/providers/aws_e2e}
if ! /usr/bin/python3 -c 'import botocore' 2>/dev/null; then
    echo "1..0 # SKIP Debian's python3-botocore is not installed (scripts/deps.sh test)"
    exit 0
fi
[ -x "$BIN" ] || { echo "Bail out! $BIN is not built (make tests)"; exit 1; }
T=$(mktemp -d /tmp/spw-aws-XXXXXX)
# shellcheck source=tests/fake/ec2-lib
. "$ROOT/tests/fake/ec2-lib"
trap 'fake_ec2_stop_all; rm -rf "$T"' EXIT
fake_ec2_start main --boot-delay-s 0.2 --shutdown-delay-s 0.2 --imds-role spillway-test ||
    { echo "Bail out! the fake EC2 did not start"; exit 1; }
SPW_FAKE_EC2_URL=$FAKE_EC2_URL SPW_FAKE_IMDS=1 \
    AWS_ACCESS_KEY_ID=$FAKE_EC2_AKID AWS_SECRET_ACCESS_KEY=$FAKE_EC2_SECRET \
    AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent \
    AWS_PROFILE= AWS_SESSION_TOKEN= AWS_ENDPOINT_URL= AWS_ENDPOINT_URL_EC2= \
    "$BIN"
rc=$?
[ $rc = 0 ] || { echo "# the fake's stderr:"; tail -20 "$FAKE_EC2_DIR/stderr" | sed 's/^/# /'; }
exit $rc
