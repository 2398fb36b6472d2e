#!/usr/bin/env python3
"""Counter-profiling benchmark: what one counter sample costs, against one clock sample.

  bench/counters.py [--build build] [--reps 5] [--seconds 2] [--write]

Two workloads, each run --reps times in every way, interleaved (drifts in the machine's load hit
every way alike); the number is the median over runs of the CPU time of the whole command
(getrusage of the children: the program, the collector in it, tally itself) less the median of
the same command with no sampling source (`-p off`, no -h), divided by the samples written.
- bench_deep30 (CPU-bound, 30-deep stacks), 1 thread, --seconds (2) s: clock profiling at 1 ms (`-p 1`, a
  task-clock perf event) against the software counter task-clock sampled every 1 ms
  (`-p off -h task-clock,1000000`): the same event, the same rate, the same stacks; what differs
  is the source's handler.
- bench_faulter (minor page faults, 81920 of them): `-h page-faults,1` (a sample every fault)
  and `-h +page-faults,1` (also the faulting PC and data address): the cost of a counter sample
  where the event itself is cheap and frequent, and what `+` adds.
Samples: the `stats` record's `samples` (clock) and the `counter-stats` records' (counters).
Prints a Markdown section; with --write, replaces it in docs/BENCHMARKS.md.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdoc  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--write", action="store_true")
ap.add_argument("--seconds", default="2", help="CPU seconds of bench_deep30")
args = ap.parse_args()
build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
deep30 = os.path.join(build, "bench_deep30")
faulter = os.path.join(build, "bench_faulter")
for f in (tally, deep30, faulter):
    if not os.path.exists(f):
        sys.exit("counters.py: %s is missing: build first" % f)
tmp = tempfile.mkdtemp(prefix="tally-bench-counters-")


def cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def samples(exp):
    clock = ctr = 0
    with open(os.path.join(exp, "log")) as f:
        for line in f:
            kind, _, rest = line.partition(" ")
            fields = dict(p.split("=", 1) for p in rest.split() if "=" in p)
            if kind == "stats":
                clock += int(fields.get("samples", 0))
            elif kind == "counter-stats":
                ctr += int(fields.get("samples", 0))
    return clock, ctr


WAYS = [
    ("deep30", "tally -p off", ["-p", "off"], [deep30, args.seconds, "1"]),
    ("deep30", "tally -p 1 (clock, task-clock event)", ["-p", "1"], [deep30, args.seconds, "1"]),
    ("deep30", "tally -p off -h task-clock,1000000", ["-p", "off", "-h", "task-clock,1000000"],
     [deep30, args.seconds, "1"]),
    ("faulter", "tally -p off", ["-p", "off"], [faulter, "16", "20"]),
    ("faulter", "tally -p off -h page-faults,1", ["-p", "off", "-h", "page-faults,1"],
     [faulter, "16", "20"]),
    ("faulter", "tally -p off -h +page-faults,1", ["-p", "off", "-h", "+page-faults,1"],
     [faulter, "16", "20"]),
]
res = {i: [] for i in range(len(WAYS))}
for rep in range(args.reps):
    for i, (_, _, opts, prog) in enumerate(WAYS):
        exp = os.path.join(tmp, "e%d_%d.tally" % (i, rep))
        c0 = cpu()
        p = subprocess.run([tally, "collect", "-A", "off", "-S", "off", "-d", tmp, "-o",
                            os.path.basename(exp)] + opts + prog, capture_output=True, text=True)
        c1 = cpu()
        if p.returncode != 0:
            sys.exit("counters.py: %s failed: %s" % (" ".join(opts), p.stderr[-500:]))
        res[i].append((c1 - c0, samples(exp)))
        shutil.rmtree(exp, ignore_errors=True)

lines = [benchdoc.measured_on("python3 bench/counters.py --reps %d --seconds %s --write" % (args.reps, args.seconds)), ""]
lines.append("Per-sample cost: the median CPU time of the command less the median of the same "
             "workload under `tally -p off` (no sampling source), over the median number of "
             "samples written.")
lines.append("")
lines.append("| workload | how | CPU (s) | samples | cost per sample (us) |")
lines.append("|---|---|---|---|---|")
base = {}
cost = {}
for i, (wl, how, _, _) in enumerate(WAYS):
    c = statistics.median(r[0] for r in res[i])
    n = statistics.median(r[1][0] + r[1][1] for r in res[i])
    if how == "tally -p off":
        base[wl] = c
        lines.append("| %s | %s | %.3f | %d | |" % (wl, how, c, n))
        continue
    per = (c - base[wl]) / n * 1e6 if n else float("nan")
    cost[how] = per
    lines.append("| %s | %s | %.3f | %d | %.2f |" % (wl, how, c, n, per))
lines.append("")
clock = cost["tally -p 1 (clock, task-clock event)"]
ctr = cost["tally -p off -h task-clock,1000000"]
plus = cost["tally -p off -h +page-faults,1"] - cost["tally -p off -h page-faults,1"]
lines.append("- Goal, a counter sample costs no more than a clock sample: %.2f us against %.2f us "
             "(%s)." % (ctr, clock, "met" if ctr <= clock * 1.05 else "NOT met"))
lines.append("- Goal, `+` adds under 1 us per sample: %+.2f us (%s)." %
             (plus, "met" if plus < 1.0 else "NOT met"))
text = "## Counter overflow profiling: cost per sample (issue 11)\n\n" + "\n".join(lines) + "\n"
print(text)
if args.write:
    benchdoc.write_section("counters.py", text)
shutil.rmtree(tmp, ignore_errors=True)
