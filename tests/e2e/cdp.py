"""A small client of the Chrome DevTools protocol over a pipe, for the tests and the benchmark of
`tally view` (tests/e2e/view_browser.py, bench/view.py).

Debian's headless `chromium` is started with --remote-debugging-pipe: the protocol's JSON
messages, each ended by a NUL byte, go in on the browser's descriptor 3 and come out on its
descriptor 4. No websocket, no package, nothing downloaded. One page (target), driven
synchronously: send a command, read messages until its answer; the events read meanwhile are
kept (JavaScript exceptions and console errors are what the tests look at).
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class CDPError(Exception):
    pass


class Browser:
    def __init__(self, width=1400, height=900):
        exe = find_chromium()
        if not exe:
            raise CDPError("no chromium")
        self.profile = tempfile.mkdtemp(prefix="tally-cdp-")
        to_r, to_w = os.pipe()      # we write commands; the browser reads them on fd 3
        from_r, from_w = os.pipe()  # the browser writes on fd 4; we read

        def child():
            a = os.dup(to_r)
            b = os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [exe, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
                "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking",
                "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height),
                "about:blank"]
        # close_fds=False: the descriptors dup2'ed to 3 and 4 must survive; every other one of
        # this process is close-on-exec (Python's default)
        self.proc = subprocess.Popen(args, preexec_fn=child, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.w = os.fdopen(to_w, "wb", buffering=0)
        self.r = os.fdopen(from_r, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        tid = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": tid, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def _read(self, timeout):
        import select
        while b"\0" not in self.buf:
            ready, _, _ = select.select([self.r], [], [], timeout)
            if not ready:
                raise CDPError("the browser did not answer in %.0f s" % timeout)
            chunk = self.r.read(1 << 16)
            if not chunk:
                raise CDPError("the browser closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, timeout=60):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            m["sessionId"] = self.session
        self.w.write(json.dumps(m).encode() + b"\0")
        while True:
            msg = self._read(timeout)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise CDPError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def eval(self, expr, timeout=60):
        """The value of a JavaScript expression (awaited when it is a promise)."""
        r = self.call("Runtime.evaluate", {"expression": expr, "awaitPromise": True,
                                           "returnByValue": True}, timeout)
        if "exceptionDetails" in r:
            raise CDPError("%s: %s" % (expr[:80], r["exceptionDetails"].get("exception", {})
                                       .get("description", r["exceptionDetails"])))
        return r["result"].get("value")

    def wait(self, expr, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.05)
        raise CDPError("waited %.0f s for %s" % (timeout, expr))

    def goto(self, url):
        self.call("Page.navigate", {"url": url})

    def mouse(self, kind, x, y, buttons=1):
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                               "buttons": buttons, "clickCount": 1})

    def click(self, x, y):
        self.mouse("mouseMoved", x, y, 0)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y, 0)

    def drag(self, x0, y, x1, steps=5):
        self.mouse("mouseMoved", x0, y, 0)
        self.mouse("mousePressed", x0, y)
        for k in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * k / steps, y)
        self.mouse("mouseReleased", x1, y, 0)

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def errors(self):
        """JavaScript exceptions and console or log errors seen so far (as strings)."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append("exception: %s" % p["exceptionDetails"].get("exception", {})
                           .get("description", p["exceptionDetails"].get("text")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append("console.error: %s" % [a.get("value") for a in p.get("args", [])])
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append("log: %s" % p["entry"].get("text"))
        return out

    def close(self):
        self.session = None  # Browser.close is the browser's, not the page's
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def chromium_version():
    exe = find_chromium()
    if not exe:
        return "none"
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.split()
    return next((w for w in out if w[:1].isdigit()), "unknown")
