#!/usr/bin/env python3
"""Short threaded runs: what `tally collect -p on` costs a program that runs about a second, and
where (issue 17: `-p on` under 1% of the program's CPU in every benchmark).

  bench/short_runs.py [--build build] [--reps 7] [--scale 1,4] [--write]

Program: zstd -T2 -12 (a compressor with threads) on the generated text of bench/clock.py (27 MB,
0.85 s of wall time on a quiet machine here), and on that text repeated --scale times. Ways, run
interleaved (drifts in the machine's load hit every way alike): the bare program; the default
collection (`-p on`: clock profiling, sample packets every second, thread states); clock
profiling alone (`-p on -S off --states=off`). CPU time is that of the whole command (the tally
driver's included), from getrusage of the children: the median and the least of the runs (on a
shared machine noise only adds), each over the bare program's.

Where a short run's cost goes, from the default collection's experiments: the sampler thread
(`sampler_cpu` of the stats record), the program's process up to its end sample packet
(utime + stime: the program with the collector inside it), and the tally driver (the rest: its
start, the archive, the summary). Also the fixed cost: `tally collect -p on /bin/true`.
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
ap.add_argument("--reps", type=int, default=7)
ap.add_argument("--scale", default="1,4", help="sizes of the input, in copies of the 27 MB text")
ap.add_argument("--write", action="store_true")
args = ap.parse_args()

build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
zstd = shutil.which("zstd")
if not zstd:
    sys.exit("short_runs.py: zstd is not installed here (apt-get install zstd)")
tmp = tempfile.mkdtemp(prefix="tally-bench-short-")

text = os.path.join(tmp, "corpus1")
with open(text, "wb") as f:  # the text of bench/clock.py
    for i in range(600000):
        f.write(b"%d line %x of the corpus, %s\n" % (i, i * 2654435761 % 4294967296,
                                                        b"abcdefgh"[i % 8:] * (i % 5)))


def corpus(k):
    path = os.path.join(tmp, "corpus%d" % k)
    if not os.path.exists(path):
        with open(path, "wb") as out, open(text, "rb") as src:
            body = src.read()
            for _ in range(k):
                out.write(body)
    return path


WAYS = [
    ("bare", None),
    ("tally -p on (default: samples, states)", ["-p", "on"]),
    ("tally -p on -S off --states=off", ["-p", "on", "-S", "off", "--states=off"]),
]


def run(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def records(exp, kind):
    out = []
    try:
        with open(os.path.join(exp, "log")) as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] == kind:
                    out.append(dict(kv.split("=", 1) for kv in parts[1:] if "=" in kv))
    except OSError:
        pass
    return out


def split(exp, cpu):
    """(sampler s, program process s, driver s) of a default collection's experiment."""
    st = records(exp, "stats")
    sampler = int(st[-1].get("sampler_cpu", 0)) / 1e9 if st else 0.0
    end = [r for r in records(exp, "sample") if r.get("reason") == "end"]
    proc = (int(end[-1]["utime"]) + int(end[-1]["stime"])) / 1e9 if end else 0.0
    return sampler, proc, cpu - proc


load_before = os.getloadavg()[0]
lines = []
out = lines.append
out("## Short threaded runs: what `-p on` costs a second of zstd (issue 17)")
out("")
out(benchdoc.measured_on("python3 bench/short_runs.py --reps %d --scale %s --write" %
                         (args.reps, args.scale)))
out("")
goals = []
n = 0
for k in [int(x) for x in args.scale.split(",")]:
    prog = [zstd, "-q", "-f", "-T2", "-12", corpus(k), "-o", os.path.join(tmp, "out.zst")]
    walls = {w: [] for w, _ in WAYS}
    cpus = {w: [] for w, _ in WAYS}
    parts = []
    for rep in range(args.reps):
        for w, opts in WAYS:
            exp = None
            cmd = prog
            if opts is not None:
                n += 1
                exp = os.path.join(tmp, "e%d.tally" % n)
                cmd = [tally, "collect", "-o", "e%d" % n] + opts + prog
            wall, cpu = run(cmd)
            walls[w].append(wall)
            cpus[w].append(cpu)
            if exp:
                if opts == ["-p", "on"]:
                    parts.append(split(exp, cpu))
                shutil.rmtree(exp, ignore_errors=True)
    base, base_min = statistics.median(cpus["bare"]), min(cpus["bare"])
    out("### zstd -T2 -12 on %d MB (%d cop%s of the text), %d runs" %
        (os.path.getsize(corpus(k)) >> 20, k, "y" if k == 1 else "ies", args.reps))
    out("")
    out("| how | median wall (s) | median CPU (s) | CPU vs bare | least CPU (s) | least vs bare |")
    out("|---|---|---|---|---|---|")
    for w, _ in WAYS:
        c, m = statistics.median(cpus[w]), min(cpus[w])
        out("| %s | %.3f | %.3f | %+.1f%% | %.3f | %+.1f%% |" %
            (w, statistics.median(walls[w]), c, (c / base - 1) * 100, m, (m / base_min - 1) * 100))
    out("")
    sam = statistics.median(p[0] for p in parts)
    drv = statistics.median(p[2] for p in parts)
    out("- Default collection, medians: the sampler thread %.1f ms of CPU (%.2f%% of the bare "
        "program's), the tally driver %.1f ms (%.2f%%: its start, the archive, the summary)." %
        (sam * 1e3, sam / base * 100, drv * 1e3, drv / base * 100))
    out("")
    on = statistics.median(cpus["tally -p on (default: samples, states)"]) / base - 1
    goals.append((k, on))
fixed = [run([tally, "collect", "-O", "t", "-p", "on", "/bin/true"])[1] for _ in range(args.reps)]
bare_true = [run(["/bin/true"])[1] for _ in range(args.reps)]
end = [r for r in records(os.path.join(tmp, "t.tally"), "sample") if r.get("reason") == "end"]
out("Fixed cost: `tally collect -p on /bin/true` %.1f ms of CPU (median; bare %.1f ms), of which "
    "the /bin/true process %.1f ms with %s page faults (its end sample packet, last run)." %
    (statistics.median(fixed) * 1e3, statistics.median(bare_true) * 1e3,
     (int(end[-1]["utime"]) + int(end[-1]["stime"])) / 1e6 if end else 0.0,
     end[-1].get("minflt", "?") if end else "?"))
out("")
out("Goal (issue 17): `-p on` under 1% of the program's CPU: " +
    "; ".join("%d MB %+.1f%% (%s)" % ((os.path.getsize(corpus(k)) >> 20), v * 100,
                                      "met" if v < 0.01 else "**missed**") for k, v in goals) +
    ". Load average (1 min) %.1f before the run and %.1f after, on %d CPUs." %
    (load_before, os.getloadavg()[0], os.cpu_count() or 0))
out("")
shutil.rmtree(tmp, ignore_errors=True)

text_out = "\n".join(lines) + "\n"
print(text_out)
if args.write:
    benchdoc.write_section("short_runs.py", text_out)
