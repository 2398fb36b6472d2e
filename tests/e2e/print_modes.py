"""er_print's display modes in tally print: compare on|delta|ratio over several experiments (rows
matched by name and load object, also across builds with different build ids), printmode
(delimiter-separated values and html), viewmode (machine shows tally's own collector frames)."""
import csv
import html.parser
import io
import os
import re
import shutil
from common import *

d = workdir("print-modes")
cpu = os.path.join(WL, "wl_cpu_single")
small = collect(d, [cpu, "0.3"], name="small")
large = collect(d, [cpu, "0.9"], name="large")
NORC = "--norc"


def own_total(exp):
    """<Total> exclusive CPU of one experiment alone, as -functions prints it (seconds)."""
    doc = print_json(exp, NORC, "-functions")[-1]
    return rows_by_name(doc)["<Total>"]["e.totalcpu"]


def table(out):
    """The rows of a text table: name -> list of the numbers before it."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^\s*((?:[x+-]?\s*[>]?[\d.]+\s+)+)\*?\s*(\S.*)$", line)
        if m:
            rows[m.group(2).strip()] = [v.strip() for v in
                                        re.findall(r"[x+-]?\s?>?\d[\d.]*|\d+\.", m.group(1))]
    return rows


t_small, t_large = own_total(small), own_total(large)

# ---- compare on: each experiment's metrics side by side, each with its own total ----------------
p = run([TALLY, "print", NORC, "-compare", "on", "-functions", small, large], expect=0)
lines = p.stdout.splitlines()
head = [l for l in lines if "small.tally" in l]
check(head and head[0].split() == ["small.tally", "large.tally", "small.tally", "large.tally"],
      "compare on: the experiment line above the columns: %r" % p.stdout[:600])
check(any(l.split()[:4] == ["Excl.", "Total", "Excl.", "Total"] for l in lines),
      "compare on: exclusive columns of both experiments side by side: %r" % p.stdout[:600])
rows = table(p.stdout)
tot = rows.get("<Total>")
check(tot is not None and len(tot) == 8, "compare on: <Total> has 4 columns x (value, %%): %r" % tot)
if tot:
    close_to(float(tot[0]), t_small, 0.002, "compare on: base <Total> = its own total")
    close_to(float(tot[2]), t_large, 0.002, "compare on: second <Total> = its own total")
hot = [n for n in rows if n.startswith("hot_loop")]
check(len(hot) == 1, "compare on: hot_loop is one row (matched by name and object): %r" % list(rows))

# ---- ratio: relative to the first experiment; close to the known work ratio ---------------------
p = run([TALLY, "print", NORC, "-compare", "ratio", "-functions", small, large], expect=0)
m = re.search(r"^\s*([\d.]+)\s+100\.00\s+x\s+([\d.]+)\s+100\.00.*<Total>", p.stdout, flags=re.M)
check(m is not None, "compare ratio: <Total> line: %r" % p.stdout[:800])
if m:
    ratio = float(m.group(2))
    close_to(ratio, t_large / t_small, 0.003, "compare ratio: <Total> = the two totals' ratio")
    # the program runs until it has used 0.3 s and 0.9 s of CPU: 3x the work, sampled
    bounded(ratio, 3.0, 0.3, 0.3, "compare ratio: 0.9 s against 0.3 s of CPU")
check(" ratio " in p.stdout or "ratio" in p.stdout.splitlines()[5],
      "compare ratio: the unit line names the ratio columns: %r" % p.stdout[:800])

# ---- delta: the difference from the base, signed -------------------------------------------------
p = run([TALLY, "print", NORC, "-compare", "delta", "-functions", small, large], expect=0)
m = re.search(r"^\s*([\d.]+)\s+100\.00\s+([+-][\d.]+)\s+100\.00.*<Total>", p.stdout, flags=re.M)
check(m is not None, "compare delta: <Total> line: %r" % p.stdout[:800])
if m:
    close_to(float(m.group(2)), t_large - t_small, 0.01, "compare delta: <Total> difference")
    check(m.group(2).startswith("+"), "compare delta: a larger run is +: %r" % m.group(2))

# callers-callees: the focus and its callees per experiment; hot_loop's attributed time from main
# is its exclusive time (main is its only caller) in each experiment
p = run([TALLY, "print", NORC, "-compare", "on", "-functions", "-csingle", "main", small, large],
        expect=0)
fn, cs = p.stdout.split("Callers and callees sorted by metric")
fr, cr = table(fn), table(cs)
hot = [n for n in cr if n.startswith("hot_loop")]
check(len(hot) == 1 and cr[hot[0]][0] == fr[hot[0]][0] and cr[hot[0]][2] == fr[hot[0]][2],
      "compare -csingle main: hot_loop's attributed = its exclusive in each experiment: %r %r" %
      (cr, fr))
check(re.search(r"^\s+\S+\s+\S+\s+\S+\s+\S+\s+\*main$", cs, flags=re.M),
      "compare -csingle main: the focus marked: %r" % cs)
j = print_json([small, large], NORC, "-compare", "ratio", "-csingle", "main")[-1]
check(j.get("compare") == "ratio" and len(j["entries"]) == 1 and
      len(j["entries"][0]["callees"][0]["values"]) == 2, "compare -csingle --json: %r" % str(j)[:400])

# --json: a value object per experiment
j = print_json([small, large], NORC, "-compare", "on", "-functions")[-1]
check(j.get("compare") == "on" and len(j["rows"][0]["values"]) == 2,
      "compare --json: values per experiment: %r" % str(j)[:400])

# compare with one experiment: as off, with a note
p = run([TALLY, "print", NORC, "-compare", "on", "-functions", small], expect=0)
check("needs two or more experiments" in p.stderr and "small.tally" not in p.stdout,
      "compare with one experiment: %r / %r" % (p.stderr, p.stdout[:300]))
run([TALLY, "print", NORC, "-compare", "sideways", "-functions", small], expect=2)

# ---- two builds of one program (different build ids), same name: rows still match ---------------
cc = os.environ.get("CC", "cc")
src = os.path.join(SRC, "tests", "workloads", "cpu_single.c")
builds = []
for k, flags in enumerate((["-O2", "-g"], ["-O2", "-g", "-fno-omit-frame-pointer"])):
    os.makedirs(os.path.join(d, "v%d" % k))
    exe = os.path.join(d, "v%d" % k, "app")
    if run([cc] + flags + ["-o", exe, src], timeout=120).returncode != 0:
        skip("no C compiler to build two versions of a program (%s)" % cc)
    builds.append(exe)
check(open(builds[0], "rb").read() != open(builds[1], "rb").read(), "the two builds differ")
ea = collect(d, [builds[0], "0.3"], name="build1")
eb = collect(d, [builds[1], "0.3"], name="build2")
p = run([TALLY, "print", NORC, "-compare", "on", "-functions", ea, eb], expect=0)
rows = table(p.stdout)
hot = [n for n in rows if n.startswith("hot_loop")]
check(len(hot) == 1 and float(rows[hot[0]][0]) > 0 and float(rows[hot[0]][2]) > 0,
      "two builds: hot_loop one row with time in both: %r" % {n: rows[n] for n in hot})

# ---- two different programs: a function of one only has zeros in the other's columns ------------
other = collect(d, [os.path.join(WL, "wl_recursion")], name="other")
p = run([TALLY, "print", NORC, "-compare", "on", "-functions", small, other], expect=0)
rows = table(p.stdout)
hot = [n for n in rows if n.startswith("hot_loop")]
check(len(hot) == 1 and float(rows[hot[0]][0]) > 0 and rows[hot[0]][2] == "0.",
      "two programs: hot_loop has no time in the other program: %r" % {n: rows[n] for n in hot})
ma, mb = rows.get("main (wl_cpu_single)"), rows.get("main (wl_recursion)")
check(ma and mb and float(ma[4]) > 0 and ma[6] == "0." and mb[4] == "0." and float(mb[6]) > 0,
      "two programs: main of each, told apart by its object, time in its own program only: "
      "%r %r" % (ma, mb))
p = run([TALLY, "print", NORC, "-compare", "on", "-objects", small, other], expect=0)
check("wl_cpu_single" in p.stdout and "wl_recursion" in p.stdout,
      "compare -objects: both programs: %r" % p.stdout[:600])

# ---- printmode: delimiter-separated values, er_print's four header lines, every field quoted ----
p = run([TALLY, "print", NORC, "-printmode", ",", "-functions", small], expect=0)
text = run([TALLY, "print", NORC, "-functions", small], expect=0).stdout
body = [p.stdout]
check(p.stderr == "printmode is set to `,'\n\n",
      "printmode ,: confirmed on stderr as er_print does: %r" % p.stderr)
recs = list(csv.reader(io.StringIO(body[-1])))
check(len(recs) >= 6 and all(len(r) == 5 for r in recs),
      "printmode ,: 5 fields a line (e value, e %%, i value, i %%, name): %r" % recs[:6])
check(recs[1] == ["Exclusive", "Exclusive", "Inclusive", "Inclusive", "Name"] and
      recs[2][0] == "Total CPU Time" and recs[3][0].startswith("V"),
      "printmode ,: header lines (flavor, metric, unit with the sort mark): %r" % recs[:4])
check(all(f.startswith('"') for f in body[-1].splitlines()[4].split(",")),
      "printmode ,: every field quoted: %r" % body[-1].splitlines()[4])
tr = table(text)
for r in recs[4:]:
    check(r[4] in tr and tr[r[4]][0] == r[0] and tr[r[4]][2] == r[2],
          "printmode ,: row %r as in the text table %r" % (r, tr.get(r[4])))
check("sorted by metric" not in body[-1], "printmode ,: no title line in the values")
p = run([TALLY, "print", NORC, "-printmode", ";", "-compare", "ratio", "-functions", small, large],
        expect=0)
recs = list(csv.reader(io.StringIO(p.stdout), delimiter=";"))
check(recs and recs[0][:4] == ["small.tally", "small.tally", "large.tally", "large.tally"] and
      all(len(r) == 9 for r in recs), "printmode ; with compare: %r" % recs[:5])
run([TALLY, "print", NORC, "-printmode", "xx", "-functions", small], expect=2)


class Table(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.cells, self.cell, self.tags = [], None, None, []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self.cells = []
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.cells.append(self.cell)
            self.cell = None
        elif tag == "tr":
            self.rows.append(self.cells)

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


p = run([TALLY, "print", NORC, "-printmode", "html", "-functions", small], expect=0)
h = Table()
h.feed(p.stdout)
names = [r[-1] for r in h.rows[2:]]
check(names and names[0] == "<Total>" and any(n.startswith("hot_loop") for n in names),
      "printmode html: a row per function, names unescaped by an html parser: %r" % names[:5])
check("&lt;Total&gt;" in p.stdout and "<title>Functions sorted by metric" in p.stdout,
      "printmode html: names escaped, title: %r" % p.stdout[:400])
check(len(h.rows) == len(tr) + 2, "printmode html: as many rows as the text table: %d vs %d" %
      (len(h.rows) - 2, len(tr)))

# ---- viewmode: machine shows tally's collector as recorded; user and expert leave it out --------
heap = collect(d, [os.path.join(WL, "wl_trace_heap")], opts=["-H", "on"], name="heap")
p = run([TALLY, "print", NORC, "-object_list", "-viewmode", "machine", "-object_list",
         "-viewmode", "expert", "-object_list", heap], expect=0)
parts = p.stdout.split("Functions Shown")
check(len(parts) == 4 and "libtally-collector.so" not in parts[1] and
      "libtally-collector.so" in parts[2] and "libtally-collector.so" not in parts[3],
      "viewmode: the collector in machine mode only: %r" % p.stdout)
check("Viewmode set to machine" in p.stderr, "viewmode confirms as er_print: %r" % p.stderr[:300])
run([TALLY, "print", NORC, "-viewmode", "kernel", "-functions", heap], expect=2)

# ---- en_desc: which descendant processes are read; describe: the filter keywords ----------------
fk = collect(d, [os.path.join(WL, "wl_forkexec")], name="forkexec")


def nprocs(*args, expect=0, cwd=None):
    p = subprocess.run([TALLY, "print"] + list(args) + ["-experiment_list", fk],
                       capture_output=True, text=True, cwd=cwd, timeout=240)
    check(p.returncode == expect, "%r: exit %d: %s" % (args, p.returncode, p.stderr))
    m = re.search(r"\((\d+) process", p.stdout)
    return int(m.group(1)) if m else None, p


import subprocess
everything, _ = nprocs(NORC)
check(everything and everything >= 5, "forkexec: descendants read by default: %r" % everything)
check(nprocs(NORC, "-en_desc", "on")[0] == everything, "en_desc on: every process")
check(nprocs(NORC, "-en_desc", "off")[0] == 1, "en_desc off: the program started only")
n_sh, _ = nprocs(NORC, "-en_desc", "=^sh$")
check(n_sh == 3, "en_desc =^sh$: the root and the two shells (argv[0] sh): %r" % n_sh)
p = run([TALLY, "print", NORC, "-en_desc", "off", "-functions", fk], expect=0)
q = run([TALLY, "print", NORC, "-functions", fk], expect=0)
check(float(table(p.stdout)["<Total>"][0]) < float(table(q.stdout)["<Total>"][0]),
      "en_desc off: less CPU than with the descendants: %r %r" % (p.stdout[:300], q.stdout[:300]))
nprocs(NORC, "-en_desc", "=(", expect=2)
rcdir = os.path.join(d, "rc")
os.makedirs(rcdir)
with open(os.path.join(rcdir, ".gprofng.rc"), "w") as f:
    f.write("en_desc off\n")
check(nprocs(cwd=rcdir)[0] == 1, "en_desc off in a settings file")
check(nprocs("-en_desc", "on", cwd=rcdir)[0] == everything, "the command line wins over the file")
script = os.path.join(d, "late")
with open(script, "w") as f:
    f.write("en_desc off\nexperiment_list\n")
p = run([TALLY, "print", NORC, "-script", script, fk], expect=1)
check("chosen as the experiments load" in p.stderr, "en_desc after loading: %r" % p.stderr)
p = run([TALLY, "print", NORC, "-describe", fk, small], expect=0)
for word in ("EXPID", "THRID", "CPUID", "SAMPLE", "TSTAMP", "[EXPID==1]", "[EXPID==2]",
             "wl_forkexec  _x1.tally"):
    check(word in p.stdout, "describe names %s: %r" % (word, p.stdout[:1500]))
done(d)
