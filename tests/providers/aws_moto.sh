#!/bin/sh
# aws_moto.sh: the aws provider against moto's EC2 emulator (moto_server, a
# stateful EC2 nobody here wrote: its XML answers come from its own
# templates), on loopback: launch, READY, spot, list() by tag, release.
# moto implements no ClientToken idempotency and checks no signature, so
# those are tests/providers/aws.sh's (against tests/fake/ec2.py).  Skipped
# where moto_server is not installed.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${SPW_AWS_TEST_BIN:-$ROOT/build/tests/providers/aws_e2e}
command -v moto_server >/dev/null 2>&1 && moto_server --help >/dev/null 2>&1 || {
    echo "1..0 # SKIP moto_server is not installed (pip install 'moto[server]')"
    exit 0
}
[ -x "$BIN" ] || { echo "Bail out! $BIN is not built (make tests)"; exit 1; }
T=$(mktemp -d /tmp/spw-moto-XXXXXX)
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
moto_server -H 127.0.0.1 -p "$port" >"$T/moto.log" 2>&1 &
moto=$!
trap 'kill "$moto" 2>/dev/null; wait "$moto" 2>/dev/null; rm -rf "$T"' EXIT
# Waits for moto to answer.
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/"; do
    i=$((i + 1))
    [ $i -lt 300 ] && kill -0 "$moto" 2>/dev/null || {
        echo "Bail out! moto_server did not start: $(tail -5 "$T/moto.log")"; exit 1; }
    sleep 0.1
done
SPW_MOTO_EC2_URL=http://127.0.0.1:$port AWS_ACCESS_KEY_ID=AKIDMOTO AWS_SECRET_ACCESS_KEY=moto \
    AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent \
    AWS_PROFILE= AWS_SESSION_TOKEN= AWS_ENDPOINT_URL= AWS_ENDPOINT_URL_EC2= \
    "$BIN"
