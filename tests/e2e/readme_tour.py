"""The README's tour, run as written: every `tally` line of its "A short tour" block, in order,
in a fresh directory where `build/` is this build and `tally` is on the PATH. Each command must
succeed, print something, warn about nothing (no selection that matches nothing, no missing
file), and the views the tour promises must show what it says they show."""
import os
import re
import shlex
from common import *

readme = open(os.path.join(SRC, "README.md")).read()
m = re.search(r"## A short tour\n.*?```sh\n(.*?)```", readme, flags=re.S)
if not check(m is not None, "README.md has no 'A short tour' section with a sh block"):
    done()

commands = []
for line in m.group(1).splitlines():
    words = shlex.split(line, comments=True)
    if words:
        commands.append(words)
check(len(commands) >= 15, "the tour has only %d commands" % len(commands))
check(all(w[0] == "tally" for w in commands),
      "every tour command should be a tally command: %r" % [w for w in commands if w[0] != "tally"])

d = workdir("tour")
build = os.path.dirname(os.path.abspath(TALLY))
os.symlink(build, os.path.join(d, "build"))
env = dict(os.environ)
env["PATH"] = build + os.pathsep + env.get("PATH", "")
env["TMPDIR"] = d

def run_view(words):
    """`tally view` serves until interrupted: start it, fetch the URL it prints, then ^C."""
    import signal
    import urllib.request
    p = subprocess.Popen(words, cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        line = p.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/\S*", line)
        if check(url is not None, "tour: '%s' printed no URL: %r" % (" ".join(words), line)):
            with urllib.request.urlopen(url.group(0), timeout=60) as r:
                page = r.read().decode("utf-8", "replace")
            check(r.status == 200 and "<html" in page.lower(),
                  "tour: '%s' served no page: %r" % (" ".join(words), page[:200]))
    finally:
        p.send_signal(signal.SIGINT)
        try:
            rc = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
    err = p.stderr.read()
    check(rc == 0, "tour: '%s' did not end cleanly on ^C (%d): %s" % (" ".join(words), rc, err[-500:]))


out = {}
for words in commands:
    if words[:2] == ["tally", "view"]:
        run_view(words)
        continue
    interactive = words[:2] == ["tally", "print"] and not any(w.startswith("-") for w in words[2:])
    p = subprocess.run(words, cwd=d, env=env, capture_output=True, text=True, timeout=240,
                       input="functions\nquit\n" if interactive else "")
    key = " ".join(words)
    out[key] = p.stdout
    if not check(p.returncode == 0, "tour: '%s' exited %d: %s" % (key, p.returncode, p.stderr[-800:])):
        continue
    check(p.stdout.strip() != "" or words[1] == "collect",
          "tour: '%s' printed nothing" % key)
    bad = [l for l in p.stderr.splitlines() if "warning" in l or "error" in l or "no longer" in l]
    check(not bad, "tour: '%s' warned: %s" % (key, bad))


def output(prefix):
    for k, v in out.items():
        if k.startswith(prefix):
            return v
    fail("tour: no command starting with '%s'" % prefix)
    return ""


def row(text, name):
    """The numbers of the first table row named name."""
    for l in text.splitlines():
        f = l.split()
        if f and f[-1] == name:
            return [float(x) for x in f[:-1] if re.fullmatch(r"[0-9.]+", x) and x != "."]
    return None


# what the tour says each view shows
cs = output("tally print -csingle C")
check("A" in cs.split() and "B" in cs.split() and "E" in cs.split() and "F" in cs.split(),
      "-csingle C should show callers A, B and callees E, F: %r" % cs[:800])
src = output("tally print -lines -source B")
check("spin(5)" in src and "C(7.5)" in src, "-source B should show B's lines: %r" % src[:600])
sel = output("tally print -thread_list -thread_select 2")
r = row(sel, "<Total>")
check(r is not None and r[0] > 0, "-thread_select 2 should show thread 2's CPU time: %r" % sel[-800:])
flt = output("tally print -filters")
r = row(flt, "update_totals")
check(r is not None and any(v > 0 for v in r), "the filter on update_totals should keep its time: %r"
      % flt[:800])
samples = output("tally print -overview -sample_list")
nsamples = len(re.findall(r"^\s+\d+ \(root\)", samples, flags=re.M))
check(nsamples >= 4, "workers should have at least 4 samples for -sample_select 2-3: %d" % nsamples)
check("phase 1 done" in samples, "the phases' sample packets should be listed: %r" % samples[-1200:])
tr = output("tally print -leaks -heap -sync_objects -io_files")
check("remember" in tr and "totals_lock" in tr and "workers." in tr,
      "tracing views should show remember's leaks, totals_lock and the workers files: %r" % tr[:1500])
data = output("tally print -data_objects -data_layout")
top = [l.split()[-1] for l in data.splitlines()[3:8] if l.split()]
check(top[:1] == ["<Total>"] and any(n.startswith("{heap:") for n in top[1:]) and
      re.search(r"^\s+[0-9.]+\s+[0-9.]+%\s+\d+\s+\+\d+\s+\d+\s+\{", data, flags=re.M),
      "the tour's data objects should name heap blocks and structure members first: %r" % data[:1500])
unk = row(data, "<Unknown>")
tot = row(data, "<Total>")
check(tot is not None and (unk is None or unk[-1] <= 0.25 * tot[-1]),
      "the tour's data objects are mostly <Unknown>: %r" % data[:1500])
done(d)
