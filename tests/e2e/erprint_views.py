"""er_print's commands in tally print show tally's data, and agree with tally's own views of it:
-fsummary/-lsummary/-psummary, -statistics and -sample_detail, -indxobj and -cpu_list,
-objects/-object_select/-object_list, -cmetric_list, -heap/-heapstat, -ioactivity/-iodetail/
-iocallstack/-iostat; -compat er_print's callers-callees and -csingle sums; bad arguments."""
import os
import re
from common import *

d = workdir("erprint-views")
example = os.path.join(os.path.dirname(os.path.abspath(TALLY)), "example")
exp = collect(d, [example, "3"], opts=["-S", "0.2"], name="ex")


def one(*cmds, e=None):
    return print_json(e or exp, *cmds)[-1]


funcs = rows_by_name(one("-functions"))
total = funcs["<Total>"]["e.totalcpu"]
check(total > 0.5, "the example recorded %.3f s" % total)

# -fsummary: <Total> then the rows of -functions, with the same values
fs = one("-fsummary")
check([r["name"] for r in fs["rows"]] == [r["name"] for r in one("-functions")["rows"]],
      "-fsummary rows: %r" % [r["name"] for r in fs["rows"]])
e = next(r for r in fs["rows"] if r["name"] == "E")
check(e["e.totalcpu"] == funcs["E"]["e.totalcpu"] and e["size"] > 0 and
      e["source_file"].endswith("example.c") and e["load_object"].endswith("example"),
      "-fsummary E: %r" % e)
p = run([TALLY, "print", "-limit", "2", "-fsummary", exp], expect=0)
check(len(re.findall(r"^\tExclusive Total CPU Time: ", p.stdout, flags=re.M)) == 3,
      "-limit 2 -fsummary: <Total> and two functions:\n%s" % p.stdout[:1500])
for view, kind in (("-lsummary", "-lines"), ("-psummary", "-pcs")):
    s, t = one(view), one(kind)
    check([(r["name"], r["e.totalcpu"]) for r in s["rows"]] ==
          [(r["name"], r["e.totalcpu"]) for r in t["rows"]], "%s differs from %s" % (view, kind))

# -compat er_print: -lines and -pcs named as er_print names them; -csingle sums to the focus
p = run([TALLY, "print", "--compat=er_print", "-lines", "-pcs", exp], expect=0)
check(re.search(r"^\s+\S+\s+\S+\s+\S+\s+\S+\s+E, line \d+ in \"example.c\"$", p.stdout, flags=re.M) and
      re.search(r"^\s+\S+\s+\S+\s+\S+\s+\S+\s+E \+ 0x[0-9A-F]{8}, line \d+ in \"example.c\"$",
                p.stdout, flags=re.M), "compat -lines/-pcs names:\n%s" % p.stdout)
p = run([TALLY, "print", "--compat=er_print", "-metrics", "e.totalcpu:i.totalcpu:name",
         "-cmetrics", "a.totalcpu:name", "-csingle", "C", exp], expect=0)
secs = {}
cur = None
for l in p.stdout.splitlines():
    m = re.match(r"^=+ (\w+(?: \w+)?)$", l)
    if m:
        cur = m.group(1)
        continue
    m = re.match(r"^\s*([0-9.]+)\s+(\S+)$", l)
    if cur and m:
        secs.setdefault(cur, []).append(float(m.group(1)) if m.group(1) != "0." else 0.0)
ci = funcs["C"]["i.totalcpu"]
check(set(secs) == {"Callers", "Stack Fragment", "Callees"}, "csingle sections: %r" % secs)
check(abs(sum(secs.get("Callers", [])) - ci) < 0.0025 and
      abs(sum(secs.get("Stack Fragment", [])) + sum(secs.get("Callees", [])) - ci) < 0.0025,
      "csingle C: callers and fragment+callees each sum to C's inclusive %.3f: %r" % (ci, secs))

# -statistics: the thread time in the states is the recorded one; a sample selection narrows it
st = one("-statistics")["experiments"][0]
check(abs(st["e.totalcpu"] - total) < 1e-6 and st["start_label"] == "Total",
      "-statistics: %r against %.3f" % (st, total))
sel = one("-sample_select", "2", "-statistics")["experiments"][0]
f2 = rows_by_name(one("-sample_select", "2", "-functions"))["<Total>"]["e.totalcpu"]
check(abs(sel["e.totalcpu"] - f2) < 1e-6 and sel["e.totalcpu"] < total,
      "-sample_select 2 -statistics: %r against %.3f" % (sel, f2))
p = run([TALLY, "print", "-statistics", exp], expect=0)
for key in ("Start Label", "Duration (sec.)", "Total Thread Time (sec.)", "User CPU", "Sleep",
            "Minor Page Faults", "Characters of I/O"):
    check(re.search(r"^ +%s: " % re.escape(key), p.stdout, flags=re.M), "-statistics: no %s" % key)
p = run([TALLY, "print", "-statistics", "2", exp], expect=1)
check("numbered 1 to 1" in p.stderr, "-statistics 2 of one experiment: %r" % p.stderr)

# -indxobj: every type adds up to the total; unknown types are refused with the list
for t in ("Threads", "CPUs", "Samples", "Seconds", "Processes", "Experiment_IDs"):
    rows = one("-indxobj", t)["rows"]
    check(rows[0]["name"] == "<Total>" and abs(rows[0]["e.totalcpu"] - total) < 1e-6 and
          abs(sum(r["e.totalcpu"] for r in rows[1:]) - total) < 1e-6 and len(rows) > 1,
          "-indxobj %s: %r" % (t, rows[:5]))
check(len(one("-indxobj", "Samples")["rows"]) >= 3, "the 0.2 s samples of a 1 s run")
p = run([TALLY, "print", "-indxobj", "Bogus", exp], expect=1)
check("Threads, CPUs" in p.stderr, "-indxobj Bogus: %r" % p.stderr)
p = run([TALLY, "print", "-indxobj_list", exp], expect=0)
check("Index Object Types Available" in p.stdout and "Seconds" in p.stdout, p.stdout)
cl = one("-cpu_list")["experiments"]
cpus = [r for r in one("-indxobj", "CPUs")["rows"][1:] if "unknown" not in r["name"]]
check(cl[0]["cpus"] >= max(1, len(cpus)), "-cpu_list: %r, CPUs with time: %r" % (cl, cpus))

# load objects: -objects lists them, -object_select shows the functions of those named only
objs = one("-objects")["objects"]
check(any(o["name"] == "example" for o in objs) and
      not any("libtally-collector" in o["name"] for o in objs), "-objects: %r" % objs)
p = run([TALLY, "print", "-objects", exp], expect=0)
check(re.search(r"^ <example> \(.*/example\)$", p.stdout, flags=re.M), "-objects text:\n" + p.stdout)
names = set(rows_by_name(one("-object_select", "example", "-functions")))
check("E" in names and any(n.startswith("<libc") for n in names) and
      "__libc_start_call_main" not in names, "-object_select example: %r" % sorted(names))
p = run([TALLY, "print", "-object_select", "<example>,nosuch.so", "-functions", exp], expect=1)
check("no load object named 'nosuch.so'" in p.stderr, "-object_select nosuch: %r" % p.stderr)
p = run([TALLY, "print", "--compat=er_print", "-object_select", "example", "-object_list", exp],
        expect=0)
check(re.search(r"^show <example> +\d+ +\S+", p.stdout, flags=re.M) and
      re.search(r"^hide <libc.so.6> ", p.stdout, flags=re.M), "-object_list (compat):\n" + p.stdout)
p = run([TALLY, "print", "-cmetrics", "a.totalcpu:name", "-cmetric_list", "-gmetric_list", exp],
        expect=0)
check(p.stdout.count("Current caller-callee metrics: a.totalcpu:name") == 2, p.stdout)
# the switch
p = run([TALLY, "print", "-compat", "maybe", exp], expect=2)
check("er_print" in p.stderr, "-compat maybe: %r" % p.stderr)

# ---- heap --------------------------------------------------------------------------------------
he = collect(d, [os.path.join(WL, "wl_trace_heap")], opts=["-H", "on"], name="he")
al, lk = one("-allocs", e=he), one("-leaks", e=he)
h = one("-heap", e=he)
check((h["instances"], h["bytes"], h["leaked_instances"], h["leaked_bytes"]) ==
      (al["instances"], al["bytes"], lk["instances"], lk["bytes"]), "-heap totals: %r" % h)
check(sum(s["leaked_bytes"] for s in h["stacks"]) == lk["bytes"] and
      sum(s["bytes"] for s in h["stacks"]) == al["bytes"], "-heap stacks add up")
# the workload's leaks (trace_heap.c): 10 x 123, 3 x 200, 500, 512, 12288 (mmap), 7 x 77, ...
hs = one("-heapstat", e=he)
check(hs["allocations"]["calls"] == al["instances"] and hs["allocations"]["bytes"] == al["bytes"],
      "-heapstat allocations: %r against %r" % (hs["allocations"], (al["instances"], al["bytes"])))
check(hs["leaks"]["calls"] == lk["instances"] and hs["leaks"]["bytes"] == lk["bytes"] and
      hs["leaks"]["largest"] == 12288 and hs["leaks"]["ranges"].get("8KB - 32KB") == 1,
      "-heapstat leaks: %r against %r" % (hs["leaks"], (lk["instances"], lk["bytes"])))
check(hs["peak"]["bytes"] >= 100000, "-heapstat peak: %r" % hs["peak"])
p = run([TALLY, "print", "-heapstat", exp], expect=0)
check("No heap data" in p.stdout, "-heapstat without heap data: %r" % p.stdout)

# ---- I/O ---------------------------------------------------------------------------------------
iod = os.path.join(d, "iod")
os.makedirs(iod)
io = collect(d, [os.path.join(WL, "wl_trace_io"), iod], opts=["-i", "on"], name="io")
files = one("-io_files", e=io)
act = rows_by_name(one("-ioactivity", e=io))
det = one("-iodetail", e=io)["rows"]
for m in ("e.ioreadtime", "e.iowritetime", "e.ioothertime", "e.ioerrortime"):
    check(abs(act["<Total>"][m] - sum(r[m] for r in det[1:])) < 1e-9,
          "-iodetail's rows add up to the total of %s" % m)
bins = [r["name"] for r in det if "data.bin (IOVFD=" in r["name"]]
check(len(bins) >= 3, "data.bin is opened three times (write, read, failures): %r" % bins)
# trace_io.c: 12 + 26 writes (11000 + 624 bytes), 6 + 23 reads (11200 + 624 bytes), 3 errors
ios = one("-iostat", e=io)
check((ios["write"]["calls"], ios["write"]["bytes"]) == (38, 11624) and
      (ios["read"]["calls"], ios["read"]["bytes"]) == (29, 11824) and ios["error"]["calls"] == 3,
      "-iostat: %r" % ios)
cs = one("-iocallstack", e=io)
check(sum(s["write_count"] for s in cs["stacks"]) == 38 and
      sum(s["read_bytes"] for s in cs["stacks"]) == 11824 and
      cs["total"]["error_count"] == 3, "-iocallstack: %r" % cs["total"])
p = run([TALLY, "print", "-iostat", "-ioactivity", exp], expect=0)
check(p.stdout.count("No I/O data") == 2, "-iostat without I/O data: %r" % p.stdout)
done(d)
