#!/bin/sh
# slow_clients.sh: 300 slow connections (one header line every few
# seconds, with no token) from one address, 127.0.0.2, do not starve other
# clients: requests from 127.0.0.1 keep answering within a second while they
# are open; past daemon.max_connections_per_ip the oldest of them are cut;
# a request whose headers are not in within daemon.request_timeout_s is cut
# although it keeps sending; headers over daemon.max_header_bytes get 431.
# Slow clients of an address do not lock out its other clients: with 40
# slow connections from each of 4 addresses (past both the per-address cap
# and max_connections), requests from those same addresses answer 200
# while the slow ones are open (the oldest incomplete connection is cut for
# a new one).
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
plan 8

mkconfig "$T/serve.yaml" 1 never
printf '  request_timeout_s: 4\n  max_connections_per_ip: 32\n  max_header_bytes: 8192\n' \
    >>"$T/serve.yaml"
printf '  max_connections: 100\n' >>"$T/serve.yaml"
start_daemon "$T/serve.yaml" "$T/state"
ok $? "serve starts with request_timeout_s 4, 32 connections per address, 100 in all"
port=${URL##*:}

# spw_request(PORT, TOKEN, SRC): one GET /v1/jobs from address SRC on a new
# connection: (seconds, status line); spw_slow(SRC, N, PORT): N slow ones.
cat >"$T/spwreq.py" <<'PY'
import socket, time
def spw_request(port, token, src="127.0.0.1", timeout=10):
    t = time.monotonic()
    c = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(src, 0))
    c.sendall(("GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
               "Connection: close\r\n\r\n" % token).encode())
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    c.close()
    return time.monotonic() - t, data.split(b"\r\n", 1)[0].decode()
def spw_slow(src, n, port):
    """n connections from src that sent the first lines of a request only"""
    out = []
    for i in range(n):
        s = socket.socket()
        s.settimeout(5)
        s.bind((src, 0))
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            out.append(s)
        except OSError:
            s.close()
    return out
PY
cat >"$T/slow.py" <<'PY'
import socket, sys, time
sys.path.insert(0, sys.argv[3])
from spwreq import spw_request, spw_slow
port, token = int(sys.argv[1]), sys.argv[2]
t0 = time.monotonic()
slow = spw_slow("127.0.0.2", 300, port)
print("opened", len(slow), "in %.2f s" % (time.monotonic() - t0))
time.sleep(0.5)

def request():
    return spw_request(port, token)

def drip():
    for s in slow:
        try:
            s.setblocking(True)
            s.settimeout(0.1)
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            pass

worst = 0
for k in range(10):
    dt, status = request()
    worst = max(worst, dt)
    if "200" not in status:
        print("BAD status", status)
    if k % 3 == 0:
        drip()
    time.sleep(0.2)
print("worst %.3f" % worst)

def closed(s):
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True

# The ones past the per-address cap were closed at once; the others must
# be cut by the deadline (4 s after they opened) although they keep sending.
print("open_before_deadline", sum(not closed(s) for s in slow))
end = time.monotonic() + 10
still = len(slow)
while time.monotonic() < end:
    still = sum(not closed(s) for s in slow)
    if still == 0:
        break
    drip()
    time.sleep(0.5)
print("open_after_deadline", still, "at %.1f s" % (time.monotonic() - t0))
for s in slow:
    s.close()
PY
python3 "$T/slow.py" "$port" "$ML_TOKEN" "$T" >"$T/slow.out" 2>&1
sed 's/^/# /' "$T/slow.out" >&2
worst=$(sed -n 's/^worst //p' "$T/slow.out")
[ -n "$worst" ] && ! grep -q BAD "$T/slow.out" &&
    python3 -c "import sys; sys.exit(0 if float('$worst') < 1.0 else 1)"
ok $? "with 300 slow connections open, 10 requests from 127.0.0.1 all answer 200 in < 1 s (worst $worst s)"
kept=$(sed -n 's/^open_before_deadline //p' "$T/slow.out")
[ -n "$kept" ] && [ "$kept" -le 32 ]
ok $? "at most 32 slow connections from 127.0.0.2 are kept ($kept)"
after=$(sed -n 's/^open_after_deadline \([0-9]*\).*/\1/p' "$T/slow.out")
[ "$after" = 0 ]
ok $? "every slow connection is cut once its request is late (request_timeout_s)"

# The same addresses: 40 slow connections from each of 127.0.0.3-6 (160:
# past 32 per address and 100 in all), then 5 requests from each of them.
cat >"$T/same.py" <<'PY'
import socket, sys, time
sys.path.insert(0, sys.argv[3])
from spwreq import spw_request, spw_slow
port, token = int(sys.argv[1]), sys.argv[2]
addrs = ["127.0.0.%d" % i for i in range(3, 7)]
slow = []
t0 = time.monotonic()
for a in addrs:
    slow += spw_slow(a, 40, port)
opened = time.monotonic() - t0
good = tries = 0
for k in range(5):
    for a in addrs:
        tries += 1
        try:
            status = spw_request(port, token, a, 3)[1]
            if " 200 " in status + " ":
                good += 1
            else:
                print("BAD", a, status)
        except OSError as e:
            print("BAD", a, e)
probed = time.monotonic() - t0
def alive(s):
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
print("opened in %.2f s, probed by %.2f s" % (opened, probed))
print("good", good, "of", tries)
print("slow_open", sum(alive(s) for s in slow))
print("in_time", 1 if probed < 3.5 else 0)
for s in slow:
    s.close()
PY
python3 "$T/same.py" "$port" "$ML_TOKEN" "$T" >"$T/same.out" 2>&1
sed 's/^/# /' "$T/same.out" >&2
grep -q "^good 20 of 20$" "$T/same.out" && grep -q "^in_time 1$" "$T/same.out"
ok $? "with 160 slow connections from 127.0.0.3-6 open, 20 requests from those addresses all answer 200"
held=$(sed -n 's/^slow_open //p' "$T/same.out")
[ -n "$held" ] && [ "$held" -le 100 ]
ok $? "no more than max_connections of them were held ($held)"

cat >"$T/big.py" <<'PY'
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
c.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
print(c.recv(200).split(b"\r\n", 1)[0].decode())
PY
python3 "$T/big.py" "$port" >"$T/big.out" 2>&1
contains "$T/big.out" "431"
ok $? "headers over max_header_bytes are answered 431" || diag "$(cat "$T/big.out")"
http GET /healthz none
[ "$code" = 200 ]
ok $? "the daemon is fine afterwards"
done_testing
