#!/usr/bin/env python3
"""Profiled blocks benchmark: what an instrumented entry and exit costs under tally (a
-finstrument-functions build, every function a block; and tally_start/tally_stop from tally.h)
next to uftrace (`uftrace record` of the -pg build) and gprof (the -pg build's mcount and its
sampling), on one call-heavy program (bench/calls.c: a loop calling a five-instruction leaf), in
one run; what the timeline of blocks adds (--block-trace=on: a BLOCK record at each entry and
exit, and the bytes of events file per call); what the other quantities of blocks add (--block-metrics=wall,cpu: the thread's CPU
clock; wall,page-faults: a counter, one read(2) of the thread's counter group per entry and per
exit, run with a tenth of the calls); and what a monitor point with 100 blocks on the stack
costs.

  bench/blocks.py [--build build] [--reps 5] [--calls 10000000] [--write]

The program times its own loop, on CLOCK_MONOTONIC and on its thread's CPU clock (the steadier
number on this shared machine: waiting for a CPU is not in it), so the tools' start and end are
not in it. Every way is run --reps times, interleaved, and the best run kept. The cost of a
tool per call is its time per call less the same build's bare time (for tally's
-finstrument-functions build, less that build's bare run with libc's empty hooks, so the hook
call itself is not counted as tally's). With --write, the Markdown section replaces the one in
docs/BENCHMARKS.md.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdoc  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--calls", type=int, default=10000000)
ap.add_argument("--monitors", type=int, default=5000)
ap.add_argument("--write", action="store_true")
args = ap.parse_args()

build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
exe = {k: os.path.join(build, "bench_calls" + k) for k in ("", "_finstr", "_pg", "_api")}
for f in [tally] + list(exe.values()):
    if not os.path.exists(f):
        sys.exit("%s is missing: build first (cmake --build %s)" % (f, args.build))
have_uftrace = shutil.which("uftrace") is not None
tmp = tempfile.mkdtemp(prefix="tally-bench-blocks-")
n = [0]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    if p.returncode:
        sys.exit("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p.stdout


def out_dir():
    n[0] += 1
    return "r%d" % n[0]


def loop(cmd):
    """(wall ns, cpu ns) per call"""
    m = re.search(r"ns_per_call ([\d.]+) cpu_ns_per_call ([\d.]+)", run(cmd))
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp, exist_ok=True)
    return float(m.group(1)), float(m.group(2))


N = str(args.calls)
N10 = str(max(args.calls // 10, 1000))
ways = [
    ("bare", "plain -O2 build", lambda: [exe[""], "loop", N]),
    ("bare_finstr", "-finstrument-functions build, bare (libc's empty hooks)",
     lambda: [exe["_finstr"], "loop", N]),
    ("bare_api", "tally_start/tally_stop build, bare (not collected)",
     lambda: [exe["_api"], "loop", N]),
    ("gprof", "-pg build, bare: gprof's mcount and profil sampling",
     lambda: [exe["_pg"], "loop", N]),
    ("tally_finstr", "tally collect -p off, -finstrument-functions build",
     lambda: [tally, "collect", "-p", "off", "-A", "off", "-d", tmp, "-o", out_dir(), exe["_finstr"],
              "loop", N]),
    ("tally_api", "tally collect -p off, tally_start/tally_stop build",
     lambda: [tally, "collect", "-p", "off", "-A", "off", "-d", tmp, "-o", out_dir(), exe["_api"], "loop",
              N]),
    ("tally_finstr_trace", "tally collect -p off --block-trace=on, -finstrument-functions build",
     lambda: [tally, "collect", "-p", "off", "-A", "off", "--block-trace=on", "-d", tmp, "-o",
              out_dir(), exe["_finstr"], "loop", N]),
    ("tally_finstr_cpu", "tally collect -p off --block-metrics=wall,cpu, -finstrument-functions build",
     lambda: [tally, "collect", "-p", "off", "-A", "off", "--block-metrics=wall,cpu", "-d", tmp,
              "-o", out_dir(), exe["_finstr"], "loop", N10]),
    ("tally_finstr_ctr",
     "tally collect -p off --block-metrics=wall,page-faults, -finstrument-functions build",
     lambda: [tally, "collect", "-p", "off", "-A", "off", "--block-metrics=wall,page-faults",
              "-d", tmp, "-o", out_dir(), exe["_finstr"], "loop", N10]),
]
if have_uftrace:
    ways.append(("uftrace", "uftrace record, -pg build",
                 lambda: ["uftrace", "record", "-d", os.path.join(tmp, out_dir()), exe["_pg"], "loop", N]))
    ways.append(("uftrace_finstr", "uftrace record, -finstrument-functions build",
                 lambda: ["uftrace", "record", "-d", os.path.join(tmp, out_dir()), exe["_finstr"], "loop", N]))

best = {}
for rep in range(args.reps):
    for key, _, cmd in ways:
        w, c = loop(cmd())
        b = best.get(key)
        best[key] = (min(w, b[0]) if b else w, min(c, b[1]) if b else c)
tsc = min(float(re.search(r"ns_per_tsc ([\d.]+)", run([exe[""], "tsc", "10000000"])).group(1))
          for _ in range(args.reps))
mon = []
for rep in range(args.reps):
    o = run([tally, "collect", "-p", "off", "-A", "off", "-d", tmp, "-o", out_dir(), exe["_api"], "monitor",
             str(args.monitors), "100"])
    m = re.search(r"ns_per_monitor ([\d.]+) cpu_ns_per_monitor ([\d.]+)", o)
    mon.append((float(m.group(1)), float(m.group(2))))
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp, exist_ok=True)
shutil.rmtree(tmp, ignore_errors=True)
mon_wall, mon_cpu = min(x[0] for x in mon), min(x[1] for x in mon)
# the events file the timeline writes: its blocks (du: the trimmed file's disk use) per call
os.makedirs(tmp, exist_ok=True)
run([tally, "collect", "-p", "off", "-A", "off", "--block-trace=on", "-d", tmp, "-o", "size",
     exe["_finstr"], "loop", N])
ev_bytes = int(subprocess.run(["du", "-B1", "-s", os.path.join(tmp, "size.tally", "events")],
                              capture_output=True, text=True).stdout.split()[0])
shutil.rmtree(tmp, ignore_errors=True)

base = {"bare": "bare", "bare_finstr": "bare", "bare_api": "bare", "gprof": "bare",
        "tally_finstr": "bare_finstr", "tally_api": "bare_api", "uftrace": "bare",
        "tally_finstr_cpu": "bare_finstr", "tally_finstr_ctr": "bare_finstr",
        "tally_finstr_trace": "bare_finstr",
        "uftrace_finstr": "bare_finstr"}
lines = []
lines.append("## Profiled blocks: entry and exit, monitor points (issue 13)")
lines.append("")
lines.append(benchdoc.measured_on("python3 bench/blocks.py --reps %d --calls %d --write"
                                  % (args.reps, args.calls)))
lines.append("")
lines.append("bench/calls.c calls a five-instruction leaf %d times; every way of running it is "
             "repeated %d times, interleaved, best run kept. Time per call on the thread's CPU "
             "clock (wall clock in parentheses: this shared machine's load is in it); the tool's "
             "cost is the time per call less the same build's bare run." % (args.calls, args.reps))
lines.append("")
lines.append("| way | ns per call, CPU (wall) | tool's cost per entry + exit, CPU |")
lines.append("|---|---|---|")
for key, title, _ in ways:
    w, c = best[key]
    bw, bc = best[base[key]]
    cost = "" if key.startswith("bare") else "%.1f ns" % (c - bc)
    lines.append("| %s | %.1f (%.1f) | %s |" % (title, c, w, cost))
lines.append("")
lines.append("A TSC read (`rdtsc`, what each entry and each exit needs for wall-clock time) costs "
             "%.1f ns on this virtual machine by itself. An entry and an exit under tally: %.1f ns "
             "(-finstrument-functions) and %.1f ns (tally_start/tally_stop, which also look the "
             "collector up through tally.h and compare the block's name), of which two TSC reads "
             "are %.1f ns." % (tsc, best["tally_finstr"][1] - best["bare_finstr"][1],
                               best["tally_api"][1] - best["bare_api"][1], 2 * tsc))
lines.append("")
lines.append("The timeline of blocks (--block-trace=on: a BLOCK record of the thread's tracing "
             "stream at each entry and exit, with the time the statistics used): %.1f ns per "
             "entry + exit, %.1f ns more than the profile alone; its events file took %.1f MB "
             "of disk for %s calls (%.1f bytes a call, an entry and an exit). Off by default."
             % (best["tally_finstr_trace"][1] - best["bare_finstr"][1],
                best["tally_finstr_trace"][1] - best["tally_finstr"][1], ev_bytes / 1e6, N,
                ev_bytes / float(N)))
lines.append("")
lines.append("Other quantities, on the -finstrument-functions build (%s calls): wall and the "
             "thread's CPU clock (a clock_gettime at each entry and exit) %.1f ns; wall and a "
             "counter (page-faults: one read(2) of the thread's counter group at each entry and "
             "exit, whatever the number of counters) %.1f ns per entry + exit."
             % (N10, best["tally_finstr_cpu"][1] - best["bare_finstr"][1],
                best["tally_finstr_ctr"][1] - best["bare_finstr"][1]))
lines.append("")
lines.append("A monitor point with 100 blocks on the stack (the performance callstack computed "
             "and logged as one line of about 3.7 KB): %.1f us of the thread's CPU time, %.1f us "
             "wall clock (best of %d runs of %d monitor points)."
             % (mon_cpu / 1e3, mon_wall / 1e3, args.reps, args.monitors))
lines.append("")
fin, api = (best["tally_finstr"][1] - best["bare_finstr"][1], best["tally_api"][1] -
            best["bare_api"][1])
lines.append("Goals (issue 13), in the thread's CPU time (the wall clock of this shared machine is "
             "mostly waiting for a CPU): an entry and an exit at most 60 ns: %s (%.1f and %.1f ns%s); "
             "a monitor point with 100 blocks under 10 us: %s (%.1f us)."
             % ("met" if max(fin, api) <= 60 else "missed", fin, api,
                "; uftrace %.1f ns" % (best["uftrace"][1] - best["bare"][1]) if have_uftrace else "",
                "met" if mon_cpu < 10000 else "missed", mon_cpu / 1e3))
text = "\n".join(lines) + "\n"
print(text)
if args.write:
    benchdoc.write_section("blocks.py", text)
