"""Heap blocks named without heap tracing: the allocation map of dataspace profiling.

wl_dsheap allocates N 64 KiB slabs in make_slabs and touches every whole page of each slab's
array once (each page made fresh first), frees them, allocates N again in remake_slabs (at the
same addresses) and touches them the same way; it prints how many pages each round touched.
With +page-faults,1 and no -H, the collector keeps the allocation map (every block of at least
4096 bytes, and a sample of smaller ones), so each fault is named by the block's allocation site
at the time of the fault, down to the member, exactly: a block freed and allocated again at the
same address by another function takes the new site's name (the map records the frees too).
--heap-map=off leaves them <Unknown> with the hint that -H on names them; -H on names them the
same way from the heap trace. The map's records are not heap tracing: no heap view sees them."""
import os
import re
from common import *

d = workdir("dataspace_heapmap")
prog = os.path.join(WL, "wl_dsheap")
N = 16
LINES = {}
for i, ln in enumerate(open(os.path.join(SRC, "tests", "workloads", "dsheap.c"))):
    if "struct slab *s = malloc(" in ln:
        LINES["make_slabs" if not LINES else "remake_slabs"] = i + 1
check(len(LINES) == 2, "the allocation lines of dsheap.c: %r" % LINES)


def touched(p):
    m = re.search(r"touched (\d+) (\d+) pages", p.stdout)
    check(m, "wl_dsheap's output: %r" % p.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def run_one(name, opts):
    exp = os.path.join(d, name + ".tally")
    p = run([TALLY, "collect", "-d", d, "-o", name] + opts + [prog, str(N)], expect=0)
    return exp, touched(p)


def rows_of(exp):
    doc = print_json(exp, "-data_objects")[-1]
    return doc, {r["name"]: r for r in doc["objects"]}


def named(rows, counts, how):
    for fn, n in zip(("make_slabs", "remake_slabs"), counts):
        block = "{heap:%s@dsheap.c:%d}" % (fn, LINES.get(fn, 0))
        member = block + ".{structure:slab}.{array+double v}"
        for name in (block, block + ".{structure:slab}", member, member + ".{double -}"):
            got = rows.get(name, {}).get("samples")
            check(got == n, "%s: %s has %r faults, want exactly %d (heap rows: %r)" %
                  (how, name, got, n, sorted(x for x in rows if x.startswith("{heap"))))
        check(rows.get(member, {}).get("scope") == "heap",
              "%s: the member's scope: %r" % (how, rows.get(member)))


# the map: every slab's faults named by the site that allocated the slab at that time
exp, counts = run_one("map", ["-h", "+page-faults,1"])
check(counts[0] > 10 * N and counts[1] == counts[0], "pages touched: %r" % (counts,))
settings = dict(log_records(exp, "settings")[0][1])
check(settings.get("heap") == "off" and settings.get("heap_map") == "on",
      "the settings record: heap %r heap_map %r" % (settings.get("heap"), settings.get("heap_map")))
doc, rows = rows_of(exp)
named(rows, counts, "the allocation map")
# no heap metrics: the map's records are not a heap trace
p = run([TALLY, "print", "-heap", exp], expect=0)
check("No heap data" in p.stdout, "-heap shows the map's blocks:\n%s" % p.stdout[:800])
p = run([TALLY, "check", exp], expect=0)

# without the map (the behaviour before it): not named, and the view says what would name them
exp, counts = run_one("nomap", ["--heap-map=off", "-h", "+page-faults,1"])
doc, rows = rows_of(exp)
check(not any(x.startswith("{heap:") for x in rows), "heap blocks named with --heap-map=off")
# (typed through the referencing code's pointer, as pointees of no block)
pointee = rows.get("{structure:slab}.{array+double v}", {})
check(pointee.get("samples") == sum(counts) and pointee.get("scope") == "pointee",
      "--heap-map=off: the slabs' faults: %r, want %d pointee" % (pointee, sum(counts)))
check(dict(log_records(exp, "settings")[0][1]).get("heap_map") == "off",
      "--heap-map=off is not in the settings record")

# with heap tracing: the same names from the trace (and no map: heap_map is off)
exp, counts = run_one("traced", ["-H", "on", "-h", "+page-faults,1"])
check(dict(log_records(exp, "settings")[0][1]).get("heap_map") == "off",
      "-H on also kept the allocation map")
doc, rows = rows_of(exp)
named(rows, counts, "-H on")

# clock profiling asks for the map too (-p +on); counters without '+' do not
exp, _ = run_one("clock", ["-p", "+on"])
check(dict(log_records(exp, "settings")[0][1]).get("heap_map") == "on", "-p +on: no map")
exp, _ = run_one("plain", ["-h", "page-faults,1"])
check(dict(log_records(exp, "settings")[0][1]).get("heap_map") == "off",
      "a counter without '+' kept the map")
p = run([TALLY, "collect", "-d", d, "-o", "bad", "--heap-map=maybe", prog, "1"])
check(p.returncode == 2 and "--heap-map=maybe" in p.stderr, "--heap-map=maybe: exit %d, %r" %
      (p.returncode, p.stderr))
done(d)
