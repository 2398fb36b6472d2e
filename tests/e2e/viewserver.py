"""Starting and stopping `tally view` for the tests and the benchmark (tests/e2e/view_*.py,
bench/view.py), and raw HTTP requests to it (bytes on a socket: no client library rewrites the
path, so "/../" reaches the server as written)."""
import json
import os
import re
import signal
import socket
import subprocess
import time


class Server:
    def __init__(self, tally, exps, extra=()):
        self.proc = subprocess.Popen([tally, "view"] + list(extra) + list(exps),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not m:
            self.proc.kill()
            err = self.proc.stderr.read()
            raise RuntimeError("tally view did not print its URL: %r %r" % (line, err))
        self.port = int(m.group(1))
        self.url = m.group(0)
        self.line = line

    def raw(self, request, timeout=60):
        """Sends request (bytes, a whole HTTP request) and returns (status, headers, body)."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
        headers = {}
        for h in lines[1:]:
            k, _, v = h.partition(":")
            headers[k.strip().lower()] = v.strip()
        return status, headers, body

    def get(self, path, host=None, method="GET", body=b"", extra=""):
        host = host or "127.0.0.1:%d" % self.port
        req = ("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s" % (method, path, host, extra))
        if body:
            req += "Content-Length: %d\r\n" % len(body)
        return self.raw(req.encode() + b"\r\n" + body)

    def api(self, **params):
        """The JSON document of /api/view with params, and the status."""
        from urllib.parse import urlencode
        st, _, body = self.get("/api/view?" + urlencode(params))
        return st, json.loads(body)

    def stop(self):
        """SIGINT, as ^C; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode
