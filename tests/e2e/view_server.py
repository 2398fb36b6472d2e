"""`tally view`'s server without a browser: its API answers exactly what `tally print --json`
prints, settings do not leak from one request to the next, and it is safe by default (loopback,
Host checked, no path reaches a file, no command that reads other files, bounded requests,
methods), with clear errors for bad command lines."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa: E402,F401
from viewserver import Server  # noqa: E402

d = workdir("view_server")
example = os.path.join(os.path.dirname(TALLY), "example")
exp = collect(d, [example, "2"], name="ex")
# a second experiment and a file outside both that a request must never reach
exp2 = collect(d, [example, "1"], name="ex2")
secret = os.path.join(d, "secret.txt")
with open(secret, "w") as f:
    f.write("SECRET-CONTENT\n")


def print_doc(*cmds, e=exp):
    p = run([TALLY, "print", "--json"] + list(cmds) + [e], expect=0)
    return p.stdout.strip()


sv = Server(TALLY, [exp, exp2])
try:
    check(sv.line.startswith("tally view: serving 2 experiments on http://127.0.0.1:"),
          "the URL line: %r" % sv.line)

    # -- the API is print --json, byte for byte --
    cases = [
        ({"view": "functions"}, ["-functions"]),
        ({"view": "overview"}, ["-overview"]),
        ({"view": "calltree"}, ["-calltree"]),
        ({"view": "timeline"}, ["-timeline"]),
        ({"view": "csingle", "arg": "C"}, ["-csingle", "C"]),
        ({"view": "source", "arg": "E"}, ["-source", "E"]),
        ({"view": "disasm", "arg": "E"}, ["-disasm", "E"]),
        ({"view": "functions", "metrics": "e.user:i.%totalcpu:name", "sort": "i.totalcpu",
          "limit": "4"}, ["-metrics", "e.user:i.%totalcpu:name", "-sort", "i.totalcpu",
                          "-limit", "4", "-functions"]),
        ({"view": "functions", "filters": "TSTAMP >= 100ms && TSTAMP < 600ms"},
         ["-filters", "TSTAMP >= 100ms && TSTAMP < 600ms", "-functions"]),
    ]
    from urllib.parse import urlencode
    for params, cmds in cases:
        st, _, body = sv.get("/api/view?" + urlencode(dict(exp=0, **params)))
        check(st == 200, "%s: status %d %s" % (params, st, body[:200]))
        check(body.decode().strip() == print_doc(*cmds),
              "%s: the API differs from tally print --json %s:\n%s\n%s" %
              (params, " ".join(cmds), body[:300], print_doc(*cmds)[:300]))
    st, _, body = sv.get("/api/view?exp=1&view=functions")
    check(body.decode().strip() == print_doc("-functions", e=exp2),
          "exp=1 is the second experiment")
    # settings are the request's only: the next request sees the defaults again
    st, _, body = sv.get("/api/view?exp=0&view=functions")
    check(body.decode().strip() == print_doc("-functions"), "a filter leaked into the next request")

    # -- every print command that writes a JSON report is served: print's command list is read,
    # and each command is either one of /api/info's views or one of these, none of which writes
    # a report (a new view of print that the server does not serve fails here) --
    NOT_VIEWS = {"object_show", "object_hide", "object_api", "objects_default", "inlines",
                 "setpath", "addpath", "pathmap", "metrics", "cmetrics", "sort", "limit", "name",
                 "thread_select", "sample_select", "cpu_select", "filters", "rank_select",
                 "script", "outfile", "appendfile", "object_list", "version", "help", "quit",
                 "exit", "object_select", "compat", "kind", "printmode", "viewmode", "compare",
                 "dmetrics", "en_desc", "describe", "dsort"}
    listed = re.findall(r"^  -(\S+)", run([TALLY, "print", "-help", exp], expect=0).stdout, re.M)
    st, _, body = sv.get("/api/info")
    served = set(json.loads(body)["views"])
    check(len(listed) > 40, "print -help lists %d commands" % len(listed))
    for name in listed:
        if name in served:
            continue
        check(name in NOT_VIEWS, "print's -%s is not served by tally view (nor known here as a "
              "command without a report)" % name)
        out = run([TALLY, "print", "--json", "-" + name, "x", exp]).stdout.strip()
        check(not out.startswith('{"view"'), "-%s writes a report that is not served: %s" %
              (name, out[:100]))
    for name in ("blocks", "callstack", "callstack_history", "mpi_matrix"):
        check(name in served, "%s is not served" % name)
    st, _, body = sv.get("/api/view?exp=0&view=blocks")
    check(st == 200 and body.decode().strip() == print_doc("-blocks"),
          "blocks: %d %s" % (st, body[:200]))

    # -- errors are print's messages, as JSON --
    st, doc = sv.api(exp=0, view="csingle", arg="nosuch")
    check(st == 400 and "no function named 'nosuch'" in doc.get("error", ""),
          "an unknown function: %d %s" % (st, doc))
    st, doc = sv.api(exp=0, view="functions", filters="TSTAMP >")
    check(st == 400 and "filter" in doc.get("error", "").lower() or "expected" in doc.get("error", ""),
          "a bad filter: %d %s" % (st, doc))
    for bad in ("9", "-1", "x", ""):
        st, doc = sv.api(exp=bad, view="functions")
        check(st == 400 and "exp" in doc.get("error", ""), "exp=%r: %d %s" % (bad, st, doc))
    st, doc = sv.api(exp=0, view="source")
    check(st == 400 and "needs an argument" in doc.get("error", ""), "source without arg: %s" % doc)
    st, doc = sv.api(exp=0)
    check(st == 400, "no view: %d" % st)

    # -- nothing outside the experiments --
    # commands that read other files are not views
    for view, arg in (("script", secret), ("setpath", d), ("addpath", d),
                      ("pathmap", "/ %s" % d), ("metrics", "e.user"), ("help", ""), ("quit", "")):
        st, _, body = sv.get("/api/view?" + urlencode({"exp": 0, "view": view, "arg": arg}))
        check(st == 400 and b"SECRET" not in body and b"not one" in body,
              "view=%s must be refused: %d %s" % (view, st, body[:200]))
    # a source file is one among the lines with data, never a path opened as given
    for arg in (secret, "../../../../../../" + secret, "/etc/passwd", "secret.txt"):
        st, _, body = sv.get("/api/view?" + urlencode({"exp": 0, "view": "source", "arg": arg}))
        check(st == 400 and b"SECRET" not in body and b"root:" not in body,
              "source %s: %d %s" % (arg, st, body[:200]))
    # path traversal on the pages: the assets are a fixed table
    for path in ("/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                 "/..%2f..%2f..%2fetc%2fpasswd", "/static/../../etc/passwd",
                 "//etc/passwd", "/index.html/../../etc/passwd", "/app.js%00.html",
                 "/" + secret, "/.." + secret, "/api/../../" + secret):
        st, _, body = sv.get(path)
        check(st in (400, 404) and b"root:" not in body and b"SECRET" not in body,
              "GET %s: %d %s" % (path, st, body[:120]))
    st, h, body = sv.get("/")
    check(st == 200 and b"<title>tally view</title>" in body and
          h.get("content-type", "").startswith("text/html"), "GET /: %d" % st)
    check("default-src 'self'" in h.get("content-security-policy", ""), "CSP: %s" % h)
    st, h, body = sv.get("/app.js")
    check(st == 200 and h.get("content-type", "").startswith("text/javascript"), "app.js: %d" % st)

    # -- only requests addressed to this server (DNS rebinding) --
    for host in ("evil.example:%d" % sv.port, "127.0.0.1:1", "127.0.0.1.evil.example:%d" % sv.port):
        st, _, body = sv.get("/api/info", host=host)
        check(st == 403, "Host %s: %d" % (host, st))
    for host in ("localhost:%d" % sv.port, "127.0.0.1:%d" % sv.port):
        st, _, _ = sv.get("/api/info", host=host)
        check(st == 200, "Host %s: %d" % (host, st))

    # -- methods and sizes --
    st, _, _ = sv.get("/api/info", method="POST", body=b"x=1")
    check(st in (405, 413), "POST with a body: %d" % st)
    st, _, _ = sv.get("/api/info", method="DELETE")
    check(st == 405, "DELETE: %d" % st)
    st, _, body = sv.get("/api/view?exp=0&view=functions&filters=" + "x" * 5000)
    check(st == 413 and b"4096" in body, "a 5000-byte argument: %d %s" % (st, body[:100]))
    st, _, _ = sv.get("/api/view?exp=0&view=functions&filters=" + "x" * 40000)
    check(400 <= st < 500, "a 40 kB URL: %d" % st)
    st, _, _ = sv.get("/", extra="X-Big: %s\r\n" % ("y" * 40000))
    check(400 <= st < 500, "a 40 kB header: %d" % st)
    st, _, _ = sv.get("/api/info")
    check(st == 200, "the server still answers after the refusals: %d" % st)
finally:
    rc = sv.stop()
check(rc == 0, "^C ends tally view with status 0, got %s" % rc)

# -- the command line --
p = run([TALLY, "view", "-h"], expect=0)
for opt in ("--port", "--bind", "--open"):
    check(opt in p.stdout, "-h names %s" % opt)
p = run([TALLY, "view"], expect=2)
check("no experiment given" in p.stderr, "no experiment: %s" % p.stderr)
for bad in (["--port", "0"], ["--port", "x"], ["--port", "70000"], ["--port"]):
    p = run([TALLY, "view"] + bad + [exp], expect=2)
    check("--port" in p.stderr, "%s: %s" % (bad, p.stderr))
p = run([TALLY, "view", "--bind", "not-an-address", exp], expect=2)
check("--bind 'not-an-address'" in p.stderr, "bad --bind: %s" % p.stderr)
p = run([TALLY, "view", "--frobnicate", exp], expect=2)
check("unknown option '--frobnicate'" in p.stderr, "unknown option: %s" % p.stderr)
p = run([TALLY, "view", os.path.join(d, "none.tally")])
check(p.returncode != 0 and "none.tally" in p.stderr, "a missing experiment: %s" % p.stderr)
# a port in use
busy = Server(TALLY, [exp])
try:
    p = run([TALLY, "view", "--port", str(busy.port), exp], expect=1)
    check("port %d" % busy.port in p.stderr and "--port" in p.stderr, "port in use: %s" % p.stderr)
finally:
    busy.stop()
# another address needs --bind and says so
other = subprocess.Popen([TALLY, "view", "--bind", "0.0.0.0", exp], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
line = other.stdout.readline()
other.send_signal(2)
out, err = other.communicate(timeout=20)
check("warning: listening on 0.0.0.0, not on loopback" in err, "--bind warning: %r" % err)
check(re.search(r"http://127\.0\.0\.1:\d+/", line) is not None, "--bind 0.0.0.0 URL: %r" % line)

done(d)
