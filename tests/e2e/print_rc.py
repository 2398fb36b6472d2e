"""Settings files as gprofng reads them: .gprofng.rc (or .er.rc) in the current directory, then
$HOME, then $GPROFNG_SYSCONFDIR/gprofng.rc; a setting read first (nearest the user) wins, dmetrics
and dsort accumulate with er_print's merging rules; unknown lines are warnings naming file and
line; nothing in a settings file can make tally write a file; --norc reads none."""
import os
import re
from common import *

d = workdir("print-rc")
cpu = os.path.join(WL, "wl_cpu_single")
exp = collect(d, [cpu, "0.3"], name="exp")
cwd, home, sysd = (os.path.join(d, n) for n in ("cwd", "home", "sys"))
for p in (cwd, home, sysd):
    os.makedirs(p)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def tally_print(*cmds, expect=0, files=True):
    env = dict(os.environ, HOME=home, GPROFNG_SYSCONFDIR=sysd)
    args = [TALLY, "print"] + list(cmds) + [exp]
    p = subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=240)
    if p.returncode != expect:
        fail("%s exited %d\n%s\n%s" % (args, p.returncode, p.stdout[-1500:], p.stderr[-1500:]))
    return p


def metrics(p):
    """The metric names (e.NAME, i.NAME) of a --json view, and its sort."""
    docs = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return [m["name"] for m in docs[-1]["metrics"]]


import json
import subprocess

# ---- the system file alone: er_print's defaults file gives tally's defaults ----------------------
write(os.path.join(sysd, "gprofng.rc"), """# a system file as gprofng installs it (excerpt)
scc all
dmetrics i.heapleakbytes:e!heapleakbytes
dmetrics i!total:e!.total
dmetrics ei%.totalcpu
dmetrics i!.user:e!.user
dmetrics i!system:e!.system
dmetrics ie!.any
dmetrics !size:!address:name
dsort ei.any:name
limit 0
viewmode user
compare off
en_desc on
addpath $expts:.
""")
p = tally_print("--json", "-functions")
check(metrics(p) == ["e.totalcpu", "i.totalcpu"], "system file: metrics %r" % metrics(p))
check(p.stderr == "", "system file: no warning for the lines er_print's own file has: %r" % p.stderr)

# ---- home adds to dmetrics (its entries first), and sets limit; the current directory wins -------
write(os.path.join(home, ".gprofng.rc"), "dmetrics e.user\nlimit 2\ndsort e.user\n")
p = tally_print("--json", "-functions")
check(metrics(p) == ["e.user", "e.totalcpu", "i.totalcpu"],
      "home + system: e.user first, then the system's: %r" % metrics(p))
doc = json.loads(p.stdout.splitlines()[-1])
check(len(doc["rows"]) == 3, "home limit 2: <Total> and 2 rows, got %d" % len(doc["rows"]))
p = tally_print("-functions")
check("sorted by metric: Exclusive User CPU Time" in p.stdout, "home dsort e.user: %r" % p.stdout[:200])

# the current directory's file is read first: its settings win, its dmetrics entries come first
write(os.path.join(cwd, ".gprofng.rc"),
      "# local\ndmetrics i!totalcpu\nlimit 1\nprintmode ;\nfunctions\noutfile %s\nscript x\n"
      "bogus_setting 3\n" % os.path.join(d, "written-by-rc"))
p = tally_print("--json", "-functions")
check(metrics(p) == ["e.user", "e.totalcpu"],
      "cwd hides i.totalcpu (first entry for it wins): %r" % metrics(p))
doc = json.loads(p.stdout.splitlines()[-1])
check(len(doc["rows"]) == 2, "cwd limit 1 wins over home's 2: %d rows" % len(doc["rows"]))
for line, word in ((5, "functions"), (6, "outfile"), (7, "script"), (8, "bogus_setting")):
    check(re.search(r"warning: .*\.gprofng\.rc:%d: '%s' is not a setting" % (line, word), p.stderr),
          "unknown line %d (%s) is a warning naming file and line: %r" % (line, word, p.stderr))
check(not os.path.exists(os.path.join(d, "written-by-rc")),
      "a settings file cannot open an output file")
p = tally_print("-functions")
check('"Exclusive";"Exclusive"' in p.stdout, "cwd printmode ; applies: %r" % p.stdout[:300])
check("printmode is set" not in p.stdout + p.stderr and "Print limit" not in p.stdout,
      "settings read from files are not confirmed on stdout: %r" % p.stdout[:300])

# .er.rc is read where there is no .gprofng.rc
os.remove(os.path.join(cwd, ".gprofng.rc"))
write(os.path.join(cwd, ".er.rc"), "limit 1\n")
doc = json.loads(tally_print("--json", "-functions").stdout.splitlines()[-1])
check(len(doc["rows"]) == 2, ".er.rc limit 1: %d rows" % len(doc["rows"]))

# --norc: none is read
p = tally_print("--norc", "--json", "-functions")
doc = json.loads(p.stdout.splitlines()[-1])
check(metrics(p) == ["e.totalcpu", "i.totalcpu"] and len(doc["rows"]) > 3,
      "--norc: tally's defaults: %r, %d rows" % (metrics(p), len(doc["rows"])))

# ---- dmetrics and dsort as commands ---------------------------------------------------------------
p = tally_print("--norc", "-dmetrics", "e%user:i.totalcpu:ie!.any:name", "-dsort", "i.totalcpu",
                "-functions")
check("Current metrics: e%user:i.totalcpu:name" in p.stdout,
      "-dmetrics confirms the metrics: %r" % p.stdout[:400])
check("sorted by metric: Inclusive Total CPU Time" in p.stdout, "-dsort: %r" % p.stdout[:500])
p = tally_print("--norc", "-dmetrics", "ie!.any:e.user", "-functions", expect=1)
check("shows none of the metrics" in p.stderr, "-dmetrics hiding all: %r" % p.stderr)

# er_print's "hwc" names every counter's metric: gprofng's system file shows counters as e.%
cexp = collect(d, [cpu, "0.2"], opts=["-h", "page-faults,1"], name="ctr")
p = subprocess.run([TALLY, "print", "--norc", "--json", "-functions", cexp], capture_output=True,
                   text=True, cwd=d, timeout=240)
names = metrics(p)
write(os.path.join(d, "gprofng.rc"), "dmetrics ei%.totalcpu\ndmetrics i!hwc:e%.hwc\n"
      "dmetrics ie!.any\ndmetrics name\n")
q = subprocess.run([TALLY, "print", "--json", "-functions", cexp], capture_output=True,
                   text=True, cwd=d, env=dict(os.environ, HOME=sysd, GPROFNG_SYSCONFDIR=d),
                   timeout=240)
ctr = [n for n in names if n.startswith("e.") and n != "e.totalcpu"]
check(ctr and metrics(q) == ["e.totalcpu", "i.totalcpu"] + ctr[:1],
      "dmetrics hwc: the counter's metric shown exclusive (%r of %r): %r"
      % (ctr, names, metrics(q)))
os.remove(os.path.join(d, "gprofng.rc"))

# the real system file of this machine, if gprofng is installed: defaults as tally's own
if os.path.exists("/etc/gprofng.rc"):
    env = dict(os.environ, HOME=home, GPROFNG_SYSCONFDIR="/etc")
    os.remove(os.path.join(cwd, ".er.rc"))
    os.remove(os.path.join(home, ".gprofng.rc"))
    q = subprocess.run([TALLY, "print", "--json", "-functions", exp], capture_output=True,
                       text=True, cwd=cwd, env=env, timeout=240)
    check(q.returncode == 0 and metrics(q) == ["e.totalcpu", "i.totalcpu"] and q.stderr == "",
          "/etc/gprofng.rc: %r %r" % (q.stdout[:300], q.stderr))
done(d)
