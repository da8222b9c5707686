#!/usr/bin/env python3
"""browse.py: drives one headless Chromium through a list of steps over the
Chrome DevTools Protocol, with a small WebSocket client of its own (the
standard library only), for the browser tests in tests/ui/.

    browse.py STEPS.json RESULTS.json

STEPS.json is a list of steps, each an object with any of:
  "url":     navigate the page there
  "wait":    a JavaScript expression; poll it until it is truthy (10 s)
  "click":   a CSS selector; click the first match
  "extract": a JavaScript expression whose (JSON-able) value is recorded
  "shot":    a file path; save a PNG screenshot of the page there
  "name":    a label for the result
RESULTS.json gets {"steps": [{"name", "ok", "error", "value", "s" (seconds
the step took)}], "console":
[every console error or warning, uncaught exception and failed load, with
the step it happened in]}.  Chromium is started once, with a throwaway
profile, and stopped (by its PID) at the end; $CHROMIUM_FLAGS (words) are
added to its command line (tests/cli/deb.sh trusts its test certificate
with --ignore-certificate-errors-spki-list).  Exit status 0 when every
step ran (the checks are the caller's), 1 otherwise.
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

CHROMIUM = os.environ.get("CHROMIUM", "chromium")


class WebSocket:
    """A minimal RFC 6455 client: text frames, masked, no extensions."""

    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (path, host, port, key))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise IOError("the browser closed the connection during the handshake")
            head += chunk
        status, _, self.buf = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise IOError("WebSocket handshake refused: %r" % status[:80])

    def send(self, text):
        data = text.encode()
        hdr = bytearray([0x81])
        n = len(data)
        if n < 126:
            hdr.append(0x80 | n)
        elif n < 65536:
            hdr.append(0x80 | 126)
            hdr += struct.pack(">H", n)
        else:
            hdr.append(0x80 | 127)
            hdr += struct.pack(">Q", n)
        mask = os.urandom(4)
        hdr += mask
        self.sock.sendall(bytes(hdr) + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise IOError("the browser closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        """The next whole text message (continuation frames joined)."""
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            if b1 & 0x80:
                mask = self._read(4)
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self._read(n)))
            else:
                payload = self._read(n)
            op = b0 & 0x0F
            if op == 8:
                raise IOError("the browser closed the WebSocket")
            if op in (9, 10):  # ping, pong: CDP does not use them
                continue
            msg += payload
            if b0 & 0x80:
                return msg.decode()


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="spw-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--user-data-dir=" + self.profile,
             "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             "--window-size=1280,900"] + os.environ.get("CHROMIUM_FLAGS", "").split() +
            ["about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while True:
            if os.path.exists(port_file):
                lines = open(port_file).read().split("\n")
                if len(lines) >= 2 and lines[1]:
                    break
            if self.proc.poll() is not None or time.time() > deadline:
                raise IOError("chromium did not open its DevTools port")
            time.sleep(0.05)
        self.ws = WebSocket("127.0.0.1", int(lines[0]), lines[1])
        self.next_id = 0
        self.events = []
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(m)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})

    def call(self, method, params=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            r = json.loads(self.ws.recv())
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise IOError("%s: %s" % (method, r["error"].get("message")))
                return r.get("result", {})
            if "method" in r:
                self.events.append(r)

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise IOError("JavaScript error: %s" % (d.get("exception", {}).get("description")
                                                    or d.get("text")))
        return r["result"].get("value")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def console_problems(events, step):
    """Console errors and warnings, exceptions and failed loads in events."""
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            out.append({"step": step, "kind": "console." + p["type"], "text": text})
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append({"step": step, "kind": "exception",
                        "text": d.get("exception", {}).get("description") or d.get("text")})
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            en = p["entry"]
            out.append({"step": step, "kind": "log." + en["level"],
                        "text": "%s %s" % (en.get("text"), en.get("url", ""))})
    return out


def main():
    steps = json.load(open(sys.argv[1]))
    results, console, status = [], [], 0
    b = Browser()
    try:
        for i, st in enumerate(steps):
            name = st.get("name", "step %d" % (i + 1))
            res = {"name": name, "ok": True, "error": None, "value": None}
            t0 = time.time()
            try:
                if "url" in st:
                    b.call("Page.navigate", {"url": st["url"]})
                if "click" in st:
                    sel = json.dumps(st["click"])
                    if not b.evaluate("(() => { const e = document.querySelector(%s);"
                                      " if (!e) return false; e.click(); return true; })()" % sel):
                        raise IOError("nothing matches %s" % st["click"])
                if "wait" in st:
                    deadline = time.time() + st.get("timeout_s", 10)
                    while True:
                        try:
                            if b.evaluate(st["wait"]):
                                break
                        except IOError:
                            pass  # the page may be between documents
                        if time.time() > deadline:
                            raise IOError("timed out waiting for: %s" % st["wait"])
                        time.sleep(0.1)
                if "extract" in st:
                    res["value"] = b.evaluate(st["extract"])
                if "shot" in st:
                    png = base64.b64decode(b.call("Page.captureScreenshot",
                                                  {"format": "png", "captureBeyondViewport": False})["data"])
                    os.makedirs(os.path.dirname(os.path.abspath(st["shot"])), exist_ok=True)
                    with open(st["shot"], "wb") as f:
                        f.write(png)
            except IOError as e:
                res["ok"], res["error"] = False, str(e)
                status = 1
            # what came in during the step (a last round trip collects
            # the events already sent)
            try:
                b.evaluate("1")
            except IOError:
                pass
            res["s"] = round(time.time() - t0, 3)
            console += console_problems(b.events, name)
            b.events = []
            results.append(res)
    finally:
        b.close()
    with open(sys.argv[2], "w") as f:
        json.dump({"steps": results, "console": console}, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
