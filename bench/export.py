#!/usr/bin/env python3
"""Export benchmark: time and peak memory of `tally export` in every format on an experiment of
10 million events, and once more on an experiment of about 1 GB (--big-events, 100 million
events: the memory goal), beside `perf script` piped into a folding of its stacks (what
stackcollapse-perf.pl does, here in awk: flamegraph.pl's scripts are not packaged) on a
perf.data of about the big experiment's size, in the same run.

  bench/export.py [--build build] [--events 10000000] [--reps 3] [--big-events 100000000]
                  [--write]

The tally experiment is bench_gen_experiment's (as bench/print.py: libc's functions play the
program, 5000 distinct stacks 5 to 40 deep, 8 threads), cached in the temporary directory under
a digest of the generator's and the format writer's sources. Each export writes to a file in a scratch directory (its size is
reported; the chrome trace, whose samples name their stacks, goes to /dev/null). Each
command runs --reps times: median wall and CPU time, largest peak resident set (wait4's
ru_maxrss). With --write the Markdown section replaces the one in docs/BENCHMARKS.md.
"""
import argparse
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdoc  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--events", type=int, default=10_000_000)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--big-events", type=int, default=100_000_000,
                help="events of the ~1 GB experiment, each format exported once (0: none)")
ap.add_argument("--perf-mb", type=float, default=0,
                help="size of the perf.data to record (default: the big experiment's, else 30)")
ap.add_argument("--write", action="store_true")
args = ap.parse_args()

build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
gen = os.path.join(build, "bench_gen_experiment")
for f in (tally, gen, os.path.join(build, "bench_deep30")):
    if not os.path.exists(f):
        sys.exit("export.py: %s is missing: build first" % f)
tmp = tempfile.mkdtemp(prefix="tally-bench-export-")


class Failed(Exception):
    pass


def measure(cmd, shell=False):
    """(wall s, CPU s, peak RSS bytes) of cmd (its children included when shell)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp,
                         shell=shell)
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.stderr.close()
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise Failed("exit %d: %s" % (rc, (err.strip().splitlines() or ["no message"])[-1][:200]))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024


def check_output(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    if p.returncode != 0:
        raise Failed("%s: exit %d: %s" % (os.path.basename(cmd[0]), p.returncode,
                                          p.stderr.strip()[-300:]))
    return p.stdout


rows = []  # (name, events, input bytes, (wall, cpu, rss), output bytes), or a message for res


def row(name, events, insize, cmd, out=None, shell=False, reps=None):
    try:
        runs = [measure(cmd, shell) for _ in range(reps or args.reps)]
        res = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
               max(r[2] for r in runs))
        rows.append((name, events, insize, res, os.path.getsize(out) if out else 0))
        if out and out != os.devnull:
            os.unlink(out)
    except Failed as e:
        rows.append((name, events, insize, str(e), 0))
    print("measured: %s" % name, file=sys.stderr)


def generator_key():
    """A digest of the sources the generated experiments depend on (the generator and the
    format's writer): the cache's name, so any build of the same sources shares it and a cache
    is never rewritten in place while another run reads it."""
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    h = hashlib.sha1()
    for f in ("bench/gen_experiment.c", "src/experiment/evformat.h",
              "src/experiment/evwriter.c", "src/experiment/evwriter.h",
              "src/experiment/logfile.c", "src/experiment/logfile.h",
              "src/experiment/logrec.h"):
        with open(os.path.join(top, f), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:10]


def experiment(n):
    """The generator's experiment of n events (cached by generator_key), its event count as
    tally check reads it, and the size of its files."""
    path = os.path.join(tempfile.gettempdir(), "tally-bench-gen-%d-%s.tally" % (n, gen_key))
    if not os.path.exists(os.path.join(path, "complete")):
        part = path + ".part%d" % os.getpid()
        shutil.rmtree(part, ignore_errors=True)
        check_output([gen, part, str(n)])
        open(os.path.join(part, "complete"), "w").close()
        try:
            os.rename(part, path)
        except OSError:  # another run made it meanwhile
            shutil.rmtree(part, ignore_errors=True)
    m = re.search(r"events: (\d+) in (\d+) chunks", check_output([tally, "check", path]))
    size = sum(os.path.getsize(os.path.join(path, f)) for f in ("log", "events"))
    return path, int(m.group(1)) if m else n, size


notes = []
gen_key = generator_key()
exp, events, size = experiment(args.events)

FORMATS = ("pprof", "callgrind", "folded", "speedscope")
for fmt in FORMATS:
    out = os.path.join(tmp, "out." + fmt)
    row("tally export --format=%s" % fmt, events, size,
        [tally, "export", "--format=" + fmt, "-o", out, exp], out)
# chrome: its samples (and their stacks) can be 50 times the experiment's size: to /dev/null
row("tally export --format=chrome (to /dev/null)", events, size,
    [tally, "export", "--format=chrome", "-o", os.devnull, exp])

# the memory goal: an experiment of about 1 GB, every format once (chrome to /dev/null)
big_rows = []
if args.big_events:
    big, big_events, big_size = experiment(args.big_events)
    first = len(rows)
    for fmt in FORMATS + ("chrome",):
        out = os.devnull if fmt == "chrome" else os.path.join(tmp, "big." + fmt)
        row("tally export --format=%s%s" % (fmt, " (to /dev/null)" if fmt == "chrome" else ""),
            big_events, big_size, [tally, "export", "--format=" + fmt, "-o", out, big], out,
            reps=1)
    big_rows = rows[first:]

# perf: perf script piped into a folding of its stacks (stackcollapse-perf.pl's job, in awk),
# on a perf.data of about the big experiment's size (perf record --max-size stops it there)
perf_mb = args.perf_mb or (big_size / 1e6 if args.big_events else 30)
data = os.path.join(tmp, "deep30.data")
fold = (r"""awk 'BEGIN{RS=""; FS="\n"} {s=""; for(i=NF;i>1;i--){split($i,a," "); """
        r"""s=s (s==""?"":";") a[2]} c[s]++} END{for(k in c) print k, c[k]}'""")
try:
    # about 5 MB of perf.data per second of CPU at 50 kHz here: run long enough (perf ends the
    # workload when the size is reached)
    p = subprocess.run(["perf", "record", "-q", "-F", "50000", "-g",
                        "--max-size=%dM" % perf_mb, "-o", data,
                        os.path.join(build, "bench_deep30"),
                        "%.0f" % max(3, perf_mb / 5 / 2 * 1.3), "2"],
                       capture_output=True, text=True, cwd=tmp)
    # reaching --max-size, perf stops the session and ends by SIGTERM: the data is whole
    if p.returncode != 0 and "size limit reached" not in p.stderr:
        raise Failed("perf: exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    m = re.search(r"SAMPLE events:\s+(\d+)", check_output(["perf", "report", "-i", data,
                                                           "--stats"]))
    samples = int(m.group(1)) if m else 0
    out = os.path.join(tmp, "perf.folded")
    row("perf script \\| fold (awk)", samples, os.path.getsize(data),
        "perf script -i %s | %s > %s" % (data, fold, out), out, shell=True, reps=1)
except Failed as e:
    rows.append(("perf script \\| fold (awk)", 0, 0, "perf could not record here: %s" % e, 0))
shutil.rmtree(tmp, ignore_errors=True)

lines = []
out = lines.append
out("## Export: time and memory (issue 14)")
out("")
out(benchdoc.measured_on("python3 bench/export.py --events %d --reps %d --big-events %d%s "
                         "--write" % (args.events, args.reps, args.big_events,
                                      " --perf-mb %g" % args.perf_mb if args.perf_mb else "")) +
    " Median wall and CPU time of %d runs (the ~1 GB experiment's exports and the perf "
    "pipeline: one run each); largest peak resident memory (for the perf pipeline: the largest "
    "of its processes)." % args.reps)
out("")
out("| command | events | input (MB) | wall (s) | CPU (s) | peak memory (MB) | "
    "ns per event (CPU) | output (MB) |")
out("|---|---|---|---|---|---|---|---|")
for name, n, isize, res, osize in rows:
    if isinstance(res, str):
        out("| %s | %d | %.0f | failed: %s | | | | |" % (name, n, isize / 1e6,
                                                       res.replace("|", "\\|")))
    else:
        wall, cpu, rss = res
        out("| %s | %d | %.0f | %.3f | %.3f | %.1f | %.0f | %s |" % (
            name, n, isize / 1e6, wall, cpu, rss / 1e6, cpu * 1e9 / max(n, 1),
            "%.1f" % (osize / 1e6) if osize else "(/dev/null)"))
out("")
ok = [r for r in rows[:len(FORMATS) + 1] if not isinstance(r[3], str)]
load = os.getloadavg()[0]


def verdict(i, what):
    slow = [r[0] for r in ok if r[3][i] >= 2.0 or r[3][2] >= 200e6]
    if args.events != 10_000_000:
        return "not measured (this run had %d events)" % args.events
    if len(ok) != len(FORMATS) + 1:
        return "not measured: an export failed"
    return "met by every format" if not slow else \
        "**missed** by %s" % ", ".join(s.replace("tally export --format=", "") for s in slow)


out("Goal: 10 million events exported in under 2 s and under 200 MB: by wall time %s; by CPU "
    "time %s (the load average was %.1f on %d CPUs at the end of the run: wall time is mostly "
    "waiting for a CPU).%s The events file is mapped: its pages count in tally's resident "
    "memory while a scan holds them (the reader drops those it has passed)." % (
        verdict(0, "wall"), verdict(1, "CPU"), load, os.cpu_count(),
        "".join(" " + n for n in notes)))
out("")
if big_rows:
    fat = [r[0] for r in big_rows if isinstance(r[3], str) or r[3][2] >= 200e6]
    out("Goal: a 1 GB experiment exported in under 200 MB of memory: %s (the experiment of %d "
        "events takes %.0f MB)." % (
            "met by every format" if not fat else "**missed** by %s" % ", ".join(fat),
            big_rows[0][1], big_rows[0][2] / 1e6))
    out("")
text = "\n".join(lines) + "\n"
print(text)
if args.write:
    benchdoc.write_section("export.py", text)
