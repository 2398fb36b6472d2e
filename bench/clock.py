#!/usr/bin/env python3
"""Clock-profiling benchmark: overhead, accuracy and experiment size of `tally collect`, side by
side with gprofng and perf on the same program in the same run.

  bench/clock.py [--build build] [--reps 5] [--seconds 4]

Workload: bench/deep30.c (CPU-bound leaves under 30-deep stacks, built without frame pointers).
Overhead: median wall time of each way of running it over the bare program's median.
Accuracy: CPU time tally recorded (<Total> of -functions) over the CPU time the kernel
accounted to the program (its getrusage at exit), single- and multi-threaded.
Prints a Markdown section; with --write, replaces it in docs/BENCHMARKS.md.
"""
import argparse
import json
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
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--seconds", type=float, default=4.0)
ap.add_argument("--write", action="store_true")
args = ap.parse_args()

build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
deep30 = os.path.join(build, "bench_deep30")
tmp = tempfile.mkdtemp(prefix="tally-bench-clock-")


def run(cmd, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    m = re.search(r"rusage user_ns=(\d+) system_ns=(\d+)", p.stderr)
    cpu = (int(m.group(1)) + int(m.group(2))) / 1e9 if m else None
    return wall, cpu, p


def tally_total(exp):
    p = subprocess.run([tally, "print", "--json", "-metrics", "e.totalcpu:i.totalcpu:name",
                        "-functions", exp], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("tally print failed: " + p.stderr)
    doc = json.loads(p.stdout.splitlines()[0])
    total = doc["rows"][0]
    return total.get("i.totalcpu", total.get("e.totalcpu"))


def events_stats(exp):
    """(file bytes, used record bytes, samples) of an experiment's events file(s)."""
    p = subprocess.run([tally, "check", exp], capture_output=True, text=True)
    m = re.search(r"events: (\d+) in (\d+) chunks \((\d+) unused\)", p.stdout)
    samples = int(m.group(1)) if m else 0
    size = os.path.getsize(os.path.join(exp, "events"))
    return size, samples


counter = [0]


def exp_name():
    counter[0] += 1
    return "e%d" % counter[0]


def way(name, threads):
    w = str(args.seconds)
    t = str(threads)
    if name == "bare":
        return [deep30, w, t]
    if name == "tally -p on":
        return [tally, "collect", "-o", exp_name(), deep30, w, t]
    if name == "tally -p hi":
        return [tally, "collect", "-p", "hi", "-o", exp_name(), deep30, w, t]
    if name == "gprofng -p on":
        return ["gprofng", "collect", "app", "-p", "on", "-o", exp_name() + ".er", deep30, w, t]
    if name == "gprofng -p hi":
        return ["gprofng", "collect", "app", "-p", "hi", "-o", exp_name() + ".er", deep30, w, t]
    if name == "perf record -g":
        return ["perf", "record", "-q", "-g", "-o", exp_name() + ".data", deep30, w, t]
    if name == "perf record -g -F 1000":
        return ["perf", "record", "-q", "-g", "-F", "1000", "-o", exp_name() + ".data", deep30, w,
                t]
    raise ValueError(name)


ways = ["bare", "tally -p on", "tally -p hi", "gprofng -p on", "gprofng -p hi", "perf record -g",
        "perf record -g -F 1000"]
lines = []
out = lines.append
out("## Clock profiling: overhead, accuracy, size (issue 2)")
out("")
out("Command: `python3 bench/clock.py --reps %d --seconds %g --write` on %s, %d CPUs, kernel %s, "
    "%s." % (args.reps, args.seconds, platform.node() or "this machine", os.cpu_count(),
             platform.release(), time.strftime("%Y-%m-%d")))
out("")
for threads in (1, 2):
    walls = {w: [] for w in ways}
    acc = {w: [] for w in ways if w.startswith("tally")}
    sizes = []
    for rep in range(args.reps):
        for w in ways:  # interleaved, so drifts in machine load hit every way alike
            cmd = way(w, threads)
            wall, cpu, _ = run(cmd)
            walls[w].append(wall)
            if w.startswith("tally"):
                exp = os.path.join(tmp, cmd[cmd.index("-o") + 1] + ".tally")
                acc[w].append(tally_total(exp) / cpu)
                if w == "tally -p hi":
                    sizes.append(events_stats(exp))
                shutil.rmtree(exp)
    base = statistics.median(walls["bare"])
    out("### deep30, %d thread%s, %g s of CPU per thread, median of %d runs" %
        (threads, "" if threads == 1 else "s", args.seconds, args.reps))
    out("")
    out("| how | median wall (s) | overhead vs bare | recorded CPU / getrusage CPU |")
    out("|---|---|---|---|")
    for w in ways:
        m = statistics.median(walls[w])
        a = ("%.4f (min %.4f, max %.4f)" % (statistics.median(acc[w]), min(acc[w]), max(acc[w]))
             if w in acc else "")
        out("| %s | %.3f | %+.1f%% | %s |" % (w, m, (m / base - 1) * 100, a))
    size, samples = sizes[-1]
    out("")
    out("Experiment size at -p hi: events file %d bytes for %d samples = %.1f bytes per sample "
        "(including the 4 KiB header and the unused tail of the last 64 KiB chunk of each "
        "thread)." % (size, samples, size / max(samples, 1)))
    out("")

# Long run with few distinct stacks: bytes per sample at the limit.
cmd = [tally, "collect", "-p", "0.1", "-o", "long", deep30, str(args.seconds * 3), "1"]
run(cmd)
size, samples = events_stats(os.path.join(tmp, "long.tally"))
out("Long run (`tally collect -p 0.1 deep30 %g 1`): %d samples, events file %d bytes = %.2f "
    "bytes per sample." % (args.seconds * 3, samples, size, size / max(samples, 1)))
out("")
shutil.rmtree(tmp, ignore_errors=True)

text = "\n".join(lines) + "\n"
print(text)
if args.write:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "BENCHMARKS.md")
    old = open(path).read() if os.path.exists(path) else "# Benchmarks\n\n"
    begin, end = "<!-- clock.py begin -->", "<!-- clock.py end -->"
    block = begin + "\n" + text + end
    if begin in old:
        new = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda m: block, old, flags=re.S)
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    open(path, "w").write(new)
