#!/usr/bin/env python3
"""Analyzer benchmark: time and peak memory of `tally print -functions` and `-callers-callees` on
an experiment of 10 million events, side by side, in the same run, with `gprofng display text
-functions` and `perf report` on the largest experiments they can record here, as time and bytes
per event.

  bench/print.py [--build build] [--events 10000000] [--reps 3] [--write]

The tally experiment is written by bench_gen_experiment (the format's own writer; libc's functions
play the program, 5000 distinct stacks 5 to 40 deep, 8 threads). gprofng: its clock profiling
records almost nothing on this machine, so its anchor is a heap-tracing experiment of
bench_allocs (every malloc and free is an event: 1 million). perf: `perf record -F 20000 -g` on
bench_deep30 (as many samples as the kernel gives in 5 s on 2 threads). Peak memory is the
maximum resident set of the command (wait4). With --write the Markdown section replaces the one in
docs/BENCHMARKS.md.
"""
import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--events", type=int, default=10_000_000)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--write", action="store_true")
args = ap.parse_args()

build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
tmp = tempfile.mkdtemp(prefix="tally-bench-print-")


def measure(cmd):
    """(wall seconds, peak RSS bytes) of cmd, its output discarded."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), err[-2000:]))
    return wall, ru.ru_maxrss * 1024


def best(cmd):
    runs = [measure(cmd) for _ in range(args.reps)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def check_output(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, check=True).stdout


rows = []

# tally: the generated experiment
exp = os.path.join(tmp, "gen.tally")
t0 = time.perf_counter()
check_output([os.path.join(build, "bench_gen_experiment"), exp, str(args.events)])
gen_s = time.perf_counter() - t0
events = args.events
for view in ("-functions", "-callers-callees"):
    wall, rss = best([tally, "print", "-limit", "20", view, exp])
    rows.append(("tally print %s" % view, events, wall, rss))

# gprofng: heap tracing of bench_allocs (one event per malloc and per free)
pairs = 500_000
er = os.path.join(tmp, "allocs.er")
check_output(["gprofng", "collect", "app", "-p", "off", "-H", "on", "-o", er,
              os.path.join(build, "bench_allocs"), str(pairs)])
wall, rss = best(["gprofng", "display", "text", "-functions", er])
rows.append(("gprofng display text -functions (heap trace)", 2 * pairs, wall, rss))

# perf: as many samples as -F 20000 gives on deep30, 5 s, 2 threads
data = os.path.join(tmp, "deep30.data")
subprocess.run(["perf", "record", "-q", "-F", "20000", "-g", "-o", data,
                os.path.join(build, "bench_deep30"), "5", "2"], capture_output=True, cwd=tmp,
               check=True)
stats = check_output(["perf", "report", "-i", data, "--stats"])
m = re.search(r"SAMPLE events:\s+(\d+)", stats)
samples = int(m.group(1)) if m else 0
wall, rss = best(["perf", "report", "--stdio", "-i", data])
rows.append(("perf report --stdio (-g)", samples, wall, rss))
wall, rss = best(["perf", "report", "--stdio", "--no-children", "-g", "none", "-i", data])
rows.append(("perf report --stdio, no call graph", samples, wall, rss))
shutil.rmtree(tmp, ignore_errors=True)

lines = []
out = lines.append
out("## Analyzer: time and memory per event (issue 3)")
out("")
out("Command: `python3 bench/print.py --events %d --reps %d --write` on %s, %d CPUs, kernel %s, %s. "
    "Median wall time of %d runs; peak resident memory." %
    (args.events, args.reps, platform.node() or "this machine", os.cpu_count(),
     platform.release(), time.strftime("%Y-%m-%d"), args.reps))
out("")
out("| command | events | wall (s) | peak memory (MB) | ns per event | bytes per event |")
out("|---|---|---|---|---|---|")
for name, n, wall, rss in rows:
    out("| %s | %d | %.3f | %.1f | %.0f | %.1f |" % (name, n, wall, rss / 1e6, wall * 1e9 / n,
                                                   rss / n))
out("")
out("Goal: 10 million events, `-functions` in under 1 s and under 200 MB. The tally experiment "
    "was generated in %.1f s. The events file is mapped, so its pages count in tally's "
    "resident memory; what tally allocates grows with the distinct stacks, not the events." % gen_s)
out("")

text = "\n".join(lines) + "\n"
print(text)
if args.write:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "BENCHMARKS.md")
    old = open(path).read() if os.path.exists(path) else "# Benchmarks\n\n"
    begin, end = "<!-- print.py begin -->", "<!-- print.py end -->"
    block = begin + "\n" + text + end
    if begin in old:
        new = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda m: block, old, flags=re.S)
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    open(path, "w").write(new)
