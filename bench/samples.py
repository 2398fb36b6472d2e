#!/usr/bin/env python3
"""Sampling benchmark: what periodic sample packets and thread-state sampling cost, at the default
settings, against the bare program and against clock profiling alone, in the same run.

  bench/samples.py [--build build] [--reps 5] [--seconds 3] [--write]

Workloads: bench_deep30 with 2 threads (CPU-bound: states cost a /proc read per thread per 10 ms)
and bench_sleepers (64 threads that mostly sleep, wake every millisecond and work a little: the
case where state sampling has the most threads to look at and the stacks of blocked threads to
unwind; and 1,000 such threads waking every 20 ms, which keep about one CPU busy). Overhead is the median wall time over the bare program's median; the sampler's own CPU
time is the collected run's CPU time (getrusage of the children) minus the clock-only run's.
With --write the Markdown section replaces the one in docs/BENCHMARKS.md.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdoc  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--seconds", type=float, default=3.0)
ap.add_argument("--write", action="store_true")
args = ap.parse_args()

build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
tmp = tempfile.mkdtemp(prefix="tally-bench-samples-")


def run(cmd):
    """Runs cmd; returns (wall seconds, CPU seconds of the process tree)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


counter = [0]


def stats_of(exp):
    """The stats record of an experiment's log, as a dict (empty if none)."""
    try:
        with open(os.path.join(exp, "log")) as f:
            lines = [l.split() for l in f if l.startswith("stats ")]
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in lines[-1][1:] if "=" in kv) if lines else {}


def collect(opts, prog):
    counter[0] += 1
    name = "e%d" % counter[0]
    return [tally, "collect", "-o", name] + opts + prog, os.path.join(tmp, name + ".tally")


WAYS = [
    ("bare", None),
    ("clock only (-p on -S off --states=off)", ["-p", "on", "-S", "off", "--states=off"]),
    ("default (-p on, samples every 1 s, states)", []),
    ("states and samples only (-p off)", ["-p", "off"]),
    ("samples every 0.1 s, states off (-p off -S 0.1 --states=off)",
     ["-p", "off", "-S", "0.1", "--states=off"]),
]

programs = [
    ("deep30, 2 CPU-bound threads", [os.path.join(build, "bench_deep30"), str(args.seconds), "2"]),
    ("sleepers, 64 threads waking every ms", [os.path.join(build, "bench_sleepers"),
                                               str(args.seconds), "64"]),
    ("sleepers, 1000 threads waking every 20 ms", [os.path.join(build, "bench_sleepers"),
                                                   str(args.seconds), "1000", "20"]),
]

load_before = os.getloadavg()[0]
lines = []
out = lines.append
out("## Sample packets and thread states: overhead (issue 6)")
out("")
out(benchdoc.measured_on("python3 bench/samples.py --reps %d --seconds %g --write" %
                         (args.reps, args.seconds)))
out("")
for title, prog in programs:
    walls = {w: [] for w, _ in WAYS}
    cpus = {w: [] for w, _ in WAYS}
    sampler = {w: [] for w, _ in WAYS}  # (sampler CPU s, looks, stretched, longest period s)
    for rep in range(args.reps):
        for w, opts in WAYS:  # interleaved: drifts in machine load hit every way alike
            if opts is None:
                cmd, exp = prog, None
            else:
                cmd, exp = collect(opts, prog)
            wall, cpu = run(cmd)
            walls[w].append(wall)
            cpus[w].append(cpu)
            if exp:
                st = stats_of(exp)
                sampler[w].append((int(st.get("sampler_cpu", 0)) / 1e9,
                                   int(st.get("states_looks", 0)),
                                   int(st.get("states_stretched", 0)),
                                   int(st.get("states_period_max", 0)) / 1e9))
                shutil.rmtree(exp, ignore_errors=True)
    base = statistics.median(walls["bare"])
    base_cpu = statistics.median(cpus["bare"])
    out("### %s, %g s, median of %d runs" % (title, args.seconds, args.reps))
    out("")
    out("| how | median wall (s) | overhead vs bare | CPU time (s) | CPU vs bare |")
    out("|---|---|---|---|---|")
    for w, _ in WAYS:
        m = statistics.median(walls[w])
        c = statistics.median(cpus[w])
        out("| %s | %.3f | %+.1f%% | %.3f | %+.1f%% |" % (w, m, (m / base - 1) * 100, c,
                                                          (c / base_cpu - 1) * 100))
    out("")
    for w, _ in WAYS:
        runs = sampler[w]
        if not runs or not any(r[1] for r in runs):
            continue
        sc = statistics.median(r[0] for r in runs)
        looks = statistics.median(r[1] for r in runs)
        stretched = sum(1 for r in runs if r[2])
        longest = max(r[3] for r in runs)
        out("- %s: the sampler thread used %.3f s of CPU (median; %.2f%% of the bare program's "
            "CPU time) in %d looks at the thread states; %s." %
            (w, sc, sc / base_cpu * 100, looks,
             "looks were made less often than every 10 ms to stay within the sampler's budget "
             "in %d of %d runs (longest period %.0f ms; the collector warned)" %
             (stretched, len(runs), longest * 1e3) if stretched else
             "never made less often than every 10 ms for their cost"))
    out("")
out("Load average (1 min) %.1f before the run and %.1f after, on %d CPUs." %
    (load_before, os.getloadavg()[0], os.cpu_count() or 0))
out("")
shutil.rmtree(tmp, ignore_errors=True)

text = "\n".join(lines) + "\n"
print(text)
if args.write:
    benchdoc.write_section("samples.py", text)
