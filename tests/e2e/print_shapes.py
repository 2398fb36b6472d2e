"""A gprofng-style script (expected/print_shapes.script: printmode with a delimiter, compare ratio,
viewmode) runs unchanged in tally print, and its output has the shape er_print's has: the same
confirmation lines, titles, header lines and fields per line. The shape of er_print's output is
kept in expected/print_shapes.gprofng (gprofng 2.40 on the same workload); where gprofng is
installed, the test also collects with it and checks the kept file still matches it."""
import csv
import io
import os
import re
import shutil
import subprocess
from common import *

here = os.path.join(SRC, "tests", "e2e", "expected")
script = os.path.join(here, "print_shapes.script")
d = workdir("print-shapes")
cpu = os.path.join(WL, "wl_cpu_single")
NUM = re.compile(r"^(x|>?\d[\d.]*|[+-][\d.]+|\d+\.)$")


def shape(text, exps):
    """The output as a list of (kind, detail), consecutive rows of one width as one entry."""
    out = []
    for line in text.splitlines():
        for k, e in enumerate(exps):
            line = line.replace(e, "EXP%d" % (k + 1))
        s = line.strip()
        if not s:
            item = ("blank",)
        elif s.startswith('"'):
            f = next(csv.reader(io.StringIO(s)))
            if all(NUM.match(v) for v in f[:-1]) and f[:-1]:
                item = ("csv-row", len(f))
            else:  # (er_print writes a percent sign as %% in these header fields)
                item = ("csv-head", tuple(v.replace("%%", "%") for v in f))
        elif NUM.match(s.split()[0]):
            toks = s.split()
            n = 0
            while n < len(toks) and NUM.match(toks[n]):
                n += 1
            item = ("row", n)
        elif all(t.startswith("EXP") for t in s.split()):
            item = ("experiments", tuple(s.split()))
        elif s.split()[0] in ("sec.", "%"):
            item = ("units", tuple(s.split()))
        elif s.split()[0] in ("Excl.", "Incl.", "Attr.", "CPU"):
            item = ("head", sum(t in ("Excl.", "Incl.", "Attr.") for t in s.split()))
        else:
            item = ("text", s)
        if not out or out[-1] != item or item[0] not in ("row", "csv-row"):
            out.append(item)
    return out


small = collect(d, [cpu, "0.3"], name="small")
large = collect(d, [cpu, "0.6"], name="large")
p = run([TALLY, "print", "--norc", "-script", script, small, large], expect=0)
got = shape(p.stdout, ["small.tally", "large.tally"])
# er_print confirms printmode and viewmode on stderr (stdout stays the tables a script parses)
CONFIRM = ["printmode is set to `,'", "printmode is set to `text'", "Viewmode set to machine"]
check([l for l in p.stderr.splitlines() if l] == CONFIRM, "confirmations: %r" % p.stderr)
want = shape(open(os.path.join(here, "print_shapes.gprofng")).read(), [])
check(got == want, "tally print's shape differs from er_print's:\n%s" %
      "\n".join("%-60r %r" % (a, b) for a, b in
                zip(got + [None] * (len(want) - len(got)), want + [None] * (len(got) - len(want)))))

if shutil.which("gprofng") is None:
    print("gprofng is not installed: compared with the kept output only")
else:
    # the kept file is still what gprofng prints
    gexps = []
    for name, secs in (("a.er", "0.3"), ("b.er", "0.6")):
        subprocess.run(["gprofng", "collect", "app", "-o", name, cpu, secs], cwd=d,
                       capture_output=True, timeout=240)
        gexps.append(name)
    if all(os.path.isdir(os.path.join(d, e)) for e in gexps):
        env = dict(os.environ)
        env.pop("GPROFNG_SYSCONFDIR", None)
        g = subprocess.run(["gprofng", "display", "text", "-script", script] + gexps, cwd=d,
                           capture_output=True, text=True, timeout=240, env=env)
        live = shape(g.stdout, gexps)
        check(live == want, "expected/print_shapes.gprofng no longer matches gprofng:\n%s" %
              g.stdout)
        check([l for l in g.stderr.splitlines() if l] == CONFIRM,
              "gprofng's confirmations on stderr: %r" % g.stderr)
    else:
        print("gprofng collect made no experiment here: compared with the kept output only")
done(d)
