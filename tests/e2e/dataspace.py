"""Dataspace profiling with clock samples (collect -p +hi) of optimized (-O2 -g) code:

- a linked-list walk: at least 90% of the walk's samples on the member it chases
  ({structure:node}.{pointer+structure:node next}), every other one in a named <Unknown> reason;
- globals, a global structure, a thread-local, a heap array of structures and a stack array,
  each named down to its member or element, at least 90% of all samples named;
- -data_layout gives each structure's members at their offsets and sizes with holes and padding;
  -data_single, -memobj and -false_sharing answer; -p +off is refused.

Verdicts depend on where samples land, never on how long anything took: each count is compared
with the run's own total of samples."""
import os
from common import *

d = workdir("dataspace")
prog = os.path.join(WL, "wl_dataspace")

REASONS = {"(module without DWARF debug information)",
           "(backtracking found no valid branch target: code not decodable)",
           "(backtracking traversed a branch target)",
           "(no variable describes the operand's register)",
           "(not a memory-referencing instruction)",
           "(not determinable from the debug information)",
           "(backtracking was stopped by a jump or call)",
           "(backtracking did not find the trigger within range)",
           "(a register changed after the trigger)",
           "(no valid virtual address)"}
NEXT = "{structure:node}.{pointer+structure:node next}"


def objects(exp, *pre):
    doc = print_json(exp, *(list(pre) + ["-data_objects"]))[-1]
    check(doc["view"] == "data_objects", "-data_objects: view is %r" % doc.get("view"))
    rows = {r["name"]: r for r in doc["objects"]}
    check(doc["objects"] and doc["objects"][0]["name"] == "<Total>", "<Total> is not listed first")
    return rows


# -p +off makes no sense: refused with a message naming the option
p = run([TALLY, "collect", "-d", d, "-p", "+off", prog, "list", "0"])
check(p.returncode == 2 and "-p +off" in p.stderr, "-p +off: exit %d, %r" % (p.returncode, p.stderr))

# ---- the linked-list walk ----
p = run([TALLY, "collect", "-d", d, "-o", "list", "-p", "+hi", prog, "list", "1.5"], expect=0)
check("walked" in p.stdout, "the program's own output changed under -p +hi: %r" % p.stdout)
lst = os.path.join(d, "list.tally")
rows = objects(lst, "-filters", 'LEAF IN FNAME("walk*")')
total = rows["<Total>"]["samples"]
if total < 100:
    skip("only %d clock samples in the walk: too few to judge attribution" % total)
# a sample whose address is known (the load's base register still held it) also names the heap
# block of the nodes, by its allocation site (the allocation map: the block is 16 MiB)
NODES = "{heap:main@dataspace.c:%d}" % [
    i + 1 for i, ln in enumerate(open(os.path.join(SRC, "tests", "workloads", "dataspace.c")))
    if "struct node *nodes = malloc(" in ln][0]
in_block = rows.get(NODES + ".{structure:node}." + NEXT, {}).get("samples", 0)
nxt = rows.get(NEXT, {}).get("samples", 0) + in_block
at_least(nxt / total, 0.90, 0, "share of the walk's samples on %s" % NEXT)
check(rows.get("{structure:node}", {}).get("samples", 0) + in_block == nxt,
      "the aggregate {structure:node} does not carry exactly its member's samples")
check(rows.get(NODES, {}).get("samples", 0) == in_block,
      "the nodes' heap block does not carry exactly its member's samples")
for name, r in rows.items():
    if name.startswith("<Unknown>."):
        check(name[len("<Unknown>."):] in REASONS, "unnamed <Unknown> reason %r" % name)
    elif name not in ("<Total>", "<Unknown>", NEXT, "{structure:node}", NODES,
                      NODES + ".{structure:node}", NODES + ".{structure:node}." + NEXT):
        check(r["samples"] == 0, "the walk's samples attributed to %s (%d)" % (name, r["samples"]))
unknown = rows.get("<Unknown>", {}).get("samples", 0)
check(nxt + unknown == total, "named %d + unknown %d != total %d" % (nxt, unknown, total))
reasons = sum(r["samples"] for n, r in rows.items() if n.startswith("<Unknown>."))
check(reasons == unknown, "<Unknown> %d != the sum of its reasons %d" % (unknown, reasons))

single = print_json(lst, "-data_single", NEXT)[-1]
check(single["containers"] == ["{structure:node}"] and single["scope"] == "pointee" and
      single["via"] == "p", "-data_single: %r" % single)

lay = print_json(lst, "-data_layout")[-1]
node = [s for s in lay["structures"] if s["name"] == "{structure:node}"]
if check(node, "-data_layout has no {structure:node}: %r" % lay):
    m = [(x["name"], x["offset"], x["size"]) for x in node[0]["members"]]
    check(node[0]["size"] == 64 and m == [("{array+char name}", 0, 40), ("{long_int count}", 40, 8),
                                          ("{pointer+structure:node next}", 48, 8),
                                          ("{long_int spare}", 56, 8)],
          "layout of struct node: %r" % (m,))

# ---- globals, a heap array of structures, a stack array ----
run([TALLY, "collect", "-d", d, "-o", "mixed", "-p", "+hi", prog, "mixed", "2"], expect=0)
mx = os.path.join(d, "mixed.tally")
rows = objects(mx)
total = rows["<Total>"]["samples"]
# the heap array is named by its allocation site without heap tracing: the allocation map keeps
# every block of 4096 bytes or more
CELLS = "{heap:main@dataspace.c:%d}" % [
    i + 1 for i, ln in enumerate(open(os.path.join(SRC, "tests", "workloads", "dataspace.c")))
    if "struct cell *cells = calloc(" in ln][0]
if total < 200:
    skip("only %d clock samples: too few to judge attribution" % total)
WANT = {"{structure:stats}.{long_int hits}": "static",       # gstat.hits
        "{structure:stats}.{long_int misses}": "static",     # gstat.misses
        "{array+long_int garr}.{long_int -}": "static",      # garr[i]
        "{long_int tls_count}": "thread-local",              # a __thread variable
        CELLS + ".{structure:cell}.{double weight}": "heap",  # cells[i].weight, on the heap
        "{volatile+array+volatile+int local}.{volatile+int -}": "local"}  # the stack array
for name, scope in WANT.items():
    r = rows.get(name)
    if check(r and r["samples"] > 0, "no samples on %s: %s" % (name, sorted(rows))):
        check(r["scope"] == scope, "%s: scope %r, expected %r" % (name, r["scope"], scope))
named = total - rows.get("<Unknown>", {}).get("samples", 0)
at_least(named / total, 0.90, 0, "share of the mixed program's samples named")
# <Scalars> is the sum of the scalar objects (the thread-local, and what is reached through the
# pointer v, among them), and of nothing else: no aggregate and no member of one is a scalar.
# (A sample may also land on another scalar, e.g. a local of code the clock cut into: it counts
# in <Scalars> too.)
scalars = {n: r["samples"] for n, r in rows.items() if r.get("scalar")}
for n in ("{const+long_int -}", "{long_int tls_count}"):
    if n in rows:
        check(rows[n].get("scalar") is True, "%s is not marked a scalar: %r" % (n, rows[n]))
for n in scalars:
    check(rows[n]["kind"] == "object" and "}.{" not in n and not n.startswith("{heap:"),
          "%s is marked a scalar: %r" % (n, rows[n]))
check(rows.get("<Scalars>", {}).get("samples", 0) == sum(scalars.values()),
      "<Scalars> (%r) is not the scalar objects' sum: %r" %
      (rows.get("<Scalars>", {}).get("samples", 0), scalars))

lay = print_json(mx, "-data_layout")[-1]
cell = [s for s in lay["structures"] if s["name"] == CELLS + ".{structure:cell}"]
if check(cell, "-data_layout has no %s.{structure:cell}" % CELLS):
    m = [(x["name"], x["offset"], x["size"]) for x in cell[0]["members"]]
    check(m == [("{int id}", 0, 4), ("<hole>", 4, 4), ("{double weight}", 8, 8),
                ("{array+char tag}", 16, 4), ("<padding>", 20, 4)],
          "layout of struct cell with its hole and padding: %r" % (m,))

lines = print_json(mx, "-memobj", "cacheline")[-1]
check(lines["objects"] and all(int(x["address"], 16) % 64 == 0 for x in lines["objects"]),
      "-memobj cacheline: addresses not line-aligned or none: %r" % lines["objects"][:3])
pages = print_json(mx, "-memobj", "page")[-1]
check(pages["objects"] and all(int(x["address"], 16) % 4096 == 0 for x in pages["objects"]),
      "-memobj page: addresses not page-aligned or none")
fs = print_json(mx, "-false_sharing")[-1]
check(fs["view"] == "false_sharing" and all(x["false_sharing"] for x in fs["objects"]),
      "-false_sharing lists a line that is not: %r" % fs)
p = run([TALLY, "print", "-data_single", "{no such}", mx])
check(p.returncode != 0 and "no data object" in p.stderr, "-data_single of an unknown name: %r"
      % p.stderr)
done(d)
