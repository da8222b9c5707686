#!/bin/sh
# client_hostile.sh: the client's own HTTP/1.1 reader against a broken or
# hostile server (a real one on 127.0.0.1:0, written here): sizes that
# overflow, chunk sizes past any sane answer, a head that never ends.  Each
# answer must end the command with exit status 1 and a sentence, never a
# crash or an attempt to allocate what the server claims, but exit status 2
# (the daemon cannot be talked to) and a sentence; a well-formed chunked
# answer is still read.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # skip python3 is not installed (make deps-test)"
    exit 0
fi
plan 7

# The server answers each connection with the next canned answer from its
# directory (answer.1, answer.2, ...), then closes it.  It writes its port
# to $T/port and stops when $T/stop exists (or after 60 s).
mkdir -p "$T/answers"
python3 - "$T/answers" "$T/port" "$T/stop" >"$T/server.log" 2>&1 <<'EOF' &
import os, socket, sys, time
d, port_file, stop = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
s.settimeout(0.2)
open(port_file + ".tmp", "w").write("%d\n" % s.getsockname()[1])
os.rename(port_file + ".tmp", port_file)
n, end = 0, time.time() + 60
while not os.path.exists(stop) and time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    n += 1
    c.settimeout(2)
    try:
        c.recv(65536)   # the request; its content does not matter
        path = os.path.join(d, "answer.%d" % n)
        c.sendall(open(path, "rb").read() if os.path.exists(path) else b"")
    except OSError:
        pass
    c.close()
EOF
server=$!
got_port() { [ -s "$T/port" ]; }
i=0
while [ $i -lt 100 ] && ! got_port; do sleep 0.05; i=$((i + 1)); done
export SPILLWAY_URL="http://127.0.0.1:$(cat "$T/port")" SPILLWAY_TOKEN=t0ken
n=0
# answer TEXT: the next connection's answer (printf format, \r\n spelled out).
answer() {
    n=$((n + 1))
    # shellcheck disable=SC2059
    printf "$1" >"$T/answers/answer.$n"
}
# ask DESCRIPTION TEXT_IN_STDERR: one `spillway queue` against the next
# answer: exit status 2, as for any daemon that cannot be talked to.
ask() {
    run_spw "$T/out" "$T/err" queue
    [ "$rc" -eq 2 ] && contains "$T/err" "$2"
    ok $? "$1 (exit $rc)"
}

answer 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nxx\r\n0\r\n\r\n'
ask "a chunk of 2^64 - 1 bytes is refused, not added up" "over 1 GiB"
answer 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000\r\n'
ask "a chunk of 1 TiB is refused before reading it" "over 1 GiB"
answer 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'
ask "a chunk size that is not hexadecimal is refused" "a bad chunk size"
answer 'HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n{}'
ask "a Content-Length past 64 bits is refused" "a bad Content-Length"
answer 'HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n{}'
ask "a Content-Length of 1 TiB is refused before reading it" "at most 1073741824 are read"
python3 -c 'import sys; sys.stdout.write("HTTP/1.1 200 OK\r\nX-Pad: " + "a" * 300000 + "\r\n\r\n{}")' \
    >"$T/answers/answer.$((n + 1))"
n=$((n + 1))
ask "a head over 64 KiB is refused" "head is over 65536 bytes"
# A well-formed chunked error answer, in two chunks: read whole.
python3 -c '
import sys
a, b = "{\"error\": {\"status\":", " 401, \"message\": \"no such tok\"}}"
sys.stdout.write("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n%x;ext=1\r\n%s\r\n0\r\n\r\n"
                 % (len(a), a, len(b), b))' >"$T/answers/answer.$((n + 1))"
n=$((n + 1))
run_spw "$T/out" "$T/err" queue
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && contains "$T/err" "no such tok"
ok $? "a chunked answer in two chunks (one with an extension) is read whole (exit $rc)" ||
    diag "$(cat "$T/err")"

touch "$T/stop"
wait "$server"
done_testing
