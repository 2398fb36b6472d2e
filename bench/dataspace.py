#!/usr/bin/env python3
"""Dataspace benchmark: how many of the memory references of -O2 -g programs profiled with
`collect -p +hi` are attributed to a named data object, and what `+` adds to each sample.

  bench/dataspace.py [--build build] [--seconds 2] [--write]

Attribution: each program is collected once with -p +hi and `tally print --json -data_objects`
gives the samples of <Total>, of each <Unknown> reason and of the named objects. A sample is a
memory reference when backtracking found a memory-referencing trigger for it (every reason but
2, 3, 5, 7 and 8); named / memory references is the rate the goal is about, named / all samples
is given too. Without -H, the allocation map of dataspace collection names the heap blocks it
keeps (every one of at least 4 KiB, 1 in 64 smaller ones) by their allocation site; each program
again with heap tracing (-H on), which names every heap block so. Programs: tests/workloads/dataspace.c (list: a linked-list walk; mixed: globals, a
global structure, a heap array of structures, a stack array) and bench/ds_kernels.c (a chained
hash table, a matrix product over heap rows, a binary tree search, a histogram of globals).

Exact sources: the page-fault workload (globals, a heap member named through the allocation
map, stack arrays of the function and of its caller) and a data breakpoint on a structure's member: the share of the
program's events named, and of the breakpoint's backtracked to the store it watches.

Cost: bench_mref_cost times, on this machine, what the profiling handler does more for each
sample with `+` (the registers from the ucontext and the MEMREF record written into a real
events file), next to the CLOCK record every sample writes anyway; best of 5 rounds.
With --write the Markdown section replaces the one in docs/BENCHMARKS.md.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdoc  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--seconds", type=float, default=2.0)
ap.add_argument("--write", action="store_true")
args = ap.parse_args()
build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
tmp = tempfile.mkdtemp(prefix="tally-bench-dataspace-")
lines = []


def out(s=""):
    print(s)
    lines.append(s)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    if p.returncode != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return p.stdout


NOT_MEMREF = {2, 3, 5, 7, 8}  # no memory-referencing trigger was found
PROGRAMS = [("dataspace list", [os.path.join(build, "tests", "wl_dataspace"), "list"], []),
            ("dataspace mixed", [os.path.join(build, "tests", "wl_dataspace"), "mixed"], []),
            ("ds_kernels", [os.path.join(build, "bench_ds_kernels")], [])]
# with heap tracing, heap blocks are named by their allocation site (and typed by it)
HEAPED = [(label + ", -H on", prog, ["-H", "on"]) for label, prog, _ in PROGRAMS]

out(benchdoc.measured_on("python3 bench/dataspace.py --seconds %g --write" % args.seconds))
out()
out("| program | samples | memory references | named | named / memory refs | named / all | "
    "unknown, by reason |")
out("|---|---:|---:|---:|---:|---:|---|")
tot_mem = tot_named = 0
heap_mem = heap_named = 0
for i, (label, prog, opts) in enumerate(PROGRAMS + HEAPED):
    name = "ds%d" % i
    run([tally, "collect", "-o", name, "-p", "+hi"] + opts + prog + [str(args.seconds)])
    doc = json.loads(run([tally, "print", "--json", "-data_objects",
                          os.path.join(tmp, name + ".tally")]).splitlines()[-1])
    rows = {r["name"]: r for r in doc["objects"]}
    total = rows["<Total>"]["samples"]
    unknown = rows.get("<Unknown>", {}).get("samples", 0)
    reasons = [(r["reason"], r["name"][len("<Unknown>."):], r["samples"]) for r in doc["objects"]
               if r["kind"] == "unknown_reason"]
    not_mem = sum(n for k, _, n in reasons if k in NOT_MEMREF)
    named = total - unknown
    mem = total - not_mem
    if opts:
        heap_mem += mem
        heap_named += named
    else:
        tot_mem += mem
        tot_named += named
    why = "; ".join("%d %s" % (n, t) for _, t, n in sorted(reasons, key=lambda x: -x[2])) or "none"
    out("| %s | %d | %d | %d | %.1f%% | %.1f%% | %s |" % (
        label, total, mem, named, 100.0 * named / mem if mem else 0,
        100.0 * named / total if total else 0, why))
out()
out("Over the three programs, without -H (heap blocks named through the allocation map): %d of %d "
    "memory-referencing samples named (%.1f%%; the goal is 95%%, "
    "perf's data-type profiling reports about 76%% on its own tests)." %
    (tot_named, tot_mem, 100.0 * tot_named / tot_mem if tot_mem else 0))
out()
out("With heap tracing (`-H on`, heap blocks named by allocation site): %d of %d (%.1f%%)." %
    (heap_named, heap_mem, 100.0 * heap_named / heap_mem if heap_mem else 0))
out()

# Exact sources: page faults (the faulting instruction and address) and data breakpoints (the
# address; the PC after the access, backtracked to the store). The page-fault program touches
# two global arrays, one member of heap structures (the allocation map), its own stack array and a
# caller's; the share is over the faults of those touch_* functions (the rest are the runtime's
# own: dynamic loader, libc's start-up, the collector). The breakpoint watches a structure's
# member written just before its neighbour.
out("| exact source | events | named | named share | trigger right |")
out("|---|---:|---:|---:|---:|")
wlc = os.path.join(build, "tests", "wl_counters")
run([tally, "collect", "-o", "pf", "-h", "+page-faults,1", wlc, "faults", "300", "200",
     "150", "100", "200"])
pf = os.path.join(tmp, "pf.tally")
objs = json.loads(run([tally, "print", "--json", "-filters", 'LEAF IN FNAME("touch_*")',
                       "-data_objects", pf]).splitlines()[-1])["objects"]
rows = {r["name"]: r for r in objs}
ev = rows["<Total>"]["samples"]
named = ev - rows.get("<Unknown>", {}).get("samples", 0)
out("| page faults (`+page-faults,1`, no -H): globals, heap member, stack arrays | %d | %d | "
    "%.1f%% | exact PC |" % (ev, named, 100.0 * named / ev if ev else 0))
run([tally, "collect", "-o", "bp", "-h", "+mem:bp_pair+8/8:w", wlc, "members", "5000"])
bp = os.path.join(tmp, "bp.tally")
objs = json.loads(run([tally, "print", "--json", "-data_objects", bp]).splitlines()[-1])["objects"]
rows = {r["name"]: r for r in objs}
ev = rows["<Total>"]["samples"]
member = "{structure:pair}.{long_int b}"
single = json.loads(run([tally, "print", "--json", "-data_single", member,
                         bp]).splitlines()[-1]) if member in rows else {"triggers": []}
dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", wlc], capture_output=True,
                     text=True).stdout
stores = {int(ln.split(":")[0], 16) for ln in dis.splitlines() if ln.strip().endswith("<bp_pair+0x8>")}
right = sum(t["samples"] for t in single["triggers"] if int(t["pc"], 16) in stores)
named = rows.get(member, {}).get("samples", 0)
out("| data breakpoint (`+mem:bp_pair+8/8:w`) on a member | %d | %d | %.1f%% | %.1f%% |" % (
    ev, named, 100.0 * named / ev if ev else 0, 100.0 * right / ev if ev else 0))
out()
cost = run([os.path.join(build, "bench_mref_cost"), tmp])
vals = dict(line.split() for line in cost.splitlines())
out("What `+` adds per sample in the handler: %s ns (the registers from the ucontext and a MEMREF "
    "record of about 110 bytes written into the events file), next to %s ns for the CLOCK record "
    "every sample writes (goal: under 1 us). The time goes mostly to the record's bytes (the "
    "chunk's pages are reserved and touched as they fill), not to taking the registers." %
    (vals.get("mref_ns", "?"), vals.get("clock_record_ns", "?")))
shutil.rmtree(tmp, ignore_errors=True)
if args.write:
    benchdoc.write_section("dataspace.py", "## Dataspace profiling: attribution and cost (issue 11)\n\n"
                           + "\n".join(lines))
