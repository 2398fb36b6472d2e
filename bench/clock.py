#!/usr/bin/env python3
"""Clock-profiling benchmark: overhead, accuracy and experiment size of `tally collect`, side by
side with gprofng and perf on the same program in the same run.

  bench/clock.py [--build build] [--reps 5] [--seconds 4] [--write]

Workloads: bench/deep30.c (CPU-bound leaves under 30-deep stacks, built without frame pointers),
1 and 2 threads; and two real programs, overhead only: python3 running a pure-Python loop (an
interpreter) and zstd -T2 compressing a generated 30 MB text (a compressor with threads). The
anchor for -p hi is `perf record -e cpu-clock -F 1000` without call stacks (issue 17). Every way of running it is run --reps times, interleaved, so drifts in the load
of the machine hit every way alike; a run during which other work on the machine used more than
--max-foreign of a CPU (/proc/stat's busy time less the run's own CPU time) is done again, up to
--tries times, and the section says how many were.

Overhead: median wall time of each way over the bare program's median; also the CPU time of the
whole command (the tool's own processes included) over the bare program's: on a shared machine
the CPU time is the steadier of the two. Each tool's start and stop cost is measured on /bin/true.
Accuracy: the CPU time each tool recorded over the CPU time the kernel accounted to the program
(deep30 prints its getrusage at exit). tally: the sum of the weights of the CLOCK records of every
process, decoded here from the events files (bench/tallyexp.py), so the number does not depend
on the analyzer; `thread-end` records of the log give a second number; where `tally print`
works, its <Total> is checked against the decoded sum. gprofng: <Total> of
`gprofng display text -functions`. perf: the sum of the sample periods (`perf script -F period`,
ns of cpu-clock).
Size: bytes of the experiment (events file, and events plus log) per clock sample.
Prints a Markdown section; with --write, replaces it in docs/BENCHMARKS.md.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdoc  # noqa: E402
import tallyexp  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--seconds", type=float, default=4.0)
ap.add_argument("--max-foreign", type=float, default=0.05,
                help="a run during which other work used more than this share of a CPU is redone")
ap.add_argument("--tries", type=int, default=3, help="at most this many tries of one run")
ap.add_argument("--write", action="store_true")
args = ap.parse_args()

build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
deep30 = os.path.join(build, "bench_deep30")
for f in (tally, deep30, os.path.join(build, "libtally-collector.so")):
    if not os.path.exists(f):
        sys.exit("clock.py: %s is missing: build first (cmake -S . -B build && make -C build)" % f)
tmp = tempfile.mkdtemp(prefix="tally-bench-clock-")
GOAL_ACC, GOAL_ON, GOAL_HI, GOAL_SIZE = 0.03, 0.02, 0.05, 16.0


def run(cmd):
    """(wall s, exit code, stdout, stderr) of cmd run in the scratch directory."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    return wall, p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def children_cpu():
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def machine_busy():
    """CPU seconds all CPUs of the machine have been busy (stolen time included), /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq ...
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def timed(cmd):
    """(wall s, CPU s of the command, CPU s the program reported, foreign load): the foreign
    load is the CPU time the rest of the machine used meanwhile, in CPUs (0.1: a tenth of one)."""
    b0, c0 = machine_busy(), children_cpu()
    wall, rc, out, err = run(cmd)
    cpu = children_cpu() - c0
    foreign = max(0.0, machine_busy() - b0 - cpu) / wall
    if rc != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), err[-2000:]))
    m = re.search(r"rusage user_ns=(\d+) system_ns=(\d+)", err)
    prog = (int(m.group(1)) + int(m.group(2))) / 1e9 if m else None
    return wall, cpu, prog, foreign


quiet = {"redone": 0, "kept_busy": 0, "worst": 0.0}


def quiet_run(w, prog):
    """Runs way w of prog until no other work disturbed it (at most --tries times): (command,
    wall, CPU, program CPU)."""
    for attempt in range(args.tries):
        cmd = way(w, prog)
        wall, cpu, prog_cpu, foreign = timed(cmd)
        if foreign <= args.max_foreign or attempt == args.tries - 1:
            quiet["kept_busy"] += foreign > args.max_foreign
            quiet["worst"] = max(quiet["worst"], foreign)
            return cmd, wall, cpu, prog_cpu
        quiet["redone"] += 1
        if w != "bare":
            remove(output_of(cmd))
        time.sleep(1)


def tally_print_total(exp):
    """<Total> CPU seconds by `tally print`, or None when it does not work (yet)."""
    try:
        p = subprocess.run([tally, "print", "--json", "-metrics", "e.totalcpu:i.totalcpu:name",
                            "-functions", exp], capture_output=True, text=True, timeout=60)
        doc = json.loads(p.stdout.splitlines()[0])
        total = doc["rows"][0]
        return float(total.get("i.totalcpu", total.get("e.totalcpu")))
    except Exception:
        return None


def gprofng_total(er):
    """(<Total> CPU seconds gprofng recorded, the display command's complaint if any)."""
    p = subprocess.run(["gprofng", "display", "text", "-functions", er], capture_output=True,
                       text=True, cwd=tmp)
    m = re.search(r"^\s*([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+<Total>", p.stdout, re.M)
    return float(m.group(1)) if m else 0.0


def perf_total(data):
    """(CPU seconds, samples) perf recorded: the sum of the cpu-clock sample periods (ns)."""
    p = subprocess.run(["perf", "script", "-F", "period", "-i", data], capture_output=True,
                       text=True, cwd=tmp)
    periods = [int(x) for x in p.stdout.split()]
    return sum(periods) / 1e9, len(periods)


counter = [0]


def exp_name():
    counter[0] += 1
    return "e%d" % counter[0]


def way(name, prog):
    if name == "bare":
        return prog
    if name == "tally -p on":
        return [tally, "collect", "-o", exp_name()] + prog
    if name == "tally -p hi":
        return [tally, "collect", "-p", "hi", "-o", exp_name()] + prog
    if name == "gprofng -p on":
        return ["gprofng", "collect", "app", "-p", "on", "-o", exp_name() + ".er"] + prog
    if name == "gprofng -p hi":
        return ["gprofng", "collect", "app", "-p", "hi", "-o", exp_name() + ".er"] + prog
    if name == "perf record -g":
        return ["perf", "record", "-q", "-g", "-o", exp_name() + ".data"] + prog
    if name == "perf record -g -F 1000":
        return ["perf", "record", "-q", "-g", "-F", "1000", "-o", exp_name() + ".data"] + prog
    if name == "perf record -F 1000 (no stacks)":
        # the floor for -p hi: a software clock event at 1 kHz, no call stacks (issue 17)
        return ["perf", "record", "-q", "-e", "cpu-clock", "-F", "1000", "-o",
                exp_name() + ".data"] + prog
    raise ValueError(name)


def remove(path):
    shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.unlink(path)


def output_of(cmd):
    """The experiment a command writes (its -o, with tally's suffix)."""
    path = os.path.join(tmp, cmd[cmd.index("-o") + 1])
    return path + ".tally" if cmd[0] == tally else path


def recorded(w, cmd, prog_cpu, acc):
    """Records what the tool of way w recorded in acc[w] and removes its experiment."""
    path = output_of(cmd)
    r = acc.setdefault(w, {"ratio": [], "samples": [], "te": [], "print": [], "size": []})
    if w.startswith("tally"):
        s = tallyexp.summary(path)
        r["ratio"].append(s["clock_ns"] / 1e9 / prog_cpu)
        r["te"].append(s["thread_cpu_ns"] / 1e9 / prog_cpu)
        r["samples"].append(s["clock_samples"])
        r["size"].append((s["events_disk"], s["log_bytes"], s["clock_samples"]))
        pt = tally_print_total(path)
        r["print"].append(None if pt is None else pt - s["clock_ns"] / 1e9)
    elif w.startswith("gprofng"):
        r["ratio"].append(gprofng_total(path) / prog_cpu)
    elif w.startswith("perf"):
        cpu, n = perf_total(path)
        r["ratio"].append(cpu / prog_cpu)
        r["samples"].append(n)
    remove(path)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(x):
    return "%+.1f%%" % (x * 100)


def verdict(ok):
    return "met" if ok else "**missed**"


ways = ["bare", "tally -p on", "tally -p hi", "gprofng -p on", "gprofng -p hi", "perf record -g",
        "perf record -g -F 1000", "perf record -F 1000 (no stacks)"]
load_before = os.getloadavg()[0]
started = time.perf_counter()

# The fixed cost of each tool: start and stop around /bin/true.
fixed = {}
for rep in range(args.reps):
    for w in ways:
        cmd = way(w, ["/bin/true"])
        fixed.setdefault(w, []).append(timed(cmd)[0])
        if w != "bare":
            remove(output_of(cmd))
fixed = {w: med(v) for w, v in fixed.items()}

lines = []
out = lines.append
out("## Clock profiling: overhead, accuracy, size (issue 2)")
out("")
out(benchdoc.measured_on("python3 bench/clock.py --reps %d --seconds %g --write" %
                         (args.reps, args.seconds)))
out("")
out("Columns: *overhead* is the median wall time over the bare program's; *CPU overhead* is "
    "the median CPU time of the whole command (the tool's own processes included) over the bare "
    "program's, the steadier of the two on a shared machine; *recorded CPU* is the "
    "CPU time the tool recorded over the CPU time the kernel accounted to the program "
    "(getrusage at its exit), median (min-max) of the runs.")
out("")
goals = []
for threads in (1, 2):
    prog = [deep30, str(args.seconds), str(threads)]
    walls = {w: [] for w in ways}
    cpus = {w: [] for w in ways}
    acc = {}
    for rep in range(args.reps):
        for w in ways:  # interleaved, so drifts in machine load hit every way alike
            cmd, wall, cpu, prog_cpu = quiet_run(w, prog)
            walls[w].append(wall)
            cpus[w].append(cpu)
            if w != "bare":
                recorded(w, cmd, prog_cpu, acc)
    base, base_cpu = med(walls["bare"]), med(cpus["bare"])
    out("### deep30, %d thread%s, %g s of CPU per thread, median of %d runs" %
        (threads, "" if threads == 1 else "s", args.seconds, args.reps))
    out("")
    out("| how | wall (s) | overhead | CPU overhead | recorded CPU | samples |")
    out("|---|---|---|---|---|---|")
    ovh, covh = {}, {}
    for w in ways:
        m = med(walls[w])
        ovh[w] = m / base - 1
        covh[w] = med(cpus[w]) / base_cpu - 1
        a, n = "", ""
        if w in acc:
            rs = acc[w]["ratio"]
            a = "%.4f (%.4f-%.4f)" % (med(rs), min(rs), max(rs))
            if acc[w]["samples"]:
                n = "%d" % med(acc[w]["samples"])
        out("| %s | %.3f | %s | %s | %s | %s |" % (w, m, pct(ovh[w]), pct(covh[w]), a, n))
    out("")
    for w in ("tally -p on", "tally -p hi"):
        r = acc[w]
        te = r["te"]
        diffs = [d for d in r["print"] if d is not None]
        note = ("`tally print` <Total> agrees with the decoded sum within %.3f ms in %d of %d "
                "runs" % (max(abs(d) for d in diffs) * 1e3, len(diffs), len(r["print"]))
                if diffs else "`tally print` did not give a total in this run (not checked)")
        out("- %s: the `thread-end` records sum to %.4f of getrusage (the threads' own CPU "
            "clocks; the program's getrusage also counts the collector's sampler thread); %s." %
            (w, med(te), note))
        goals.append((threads, "recorded CPU within 3%% of getrusage at %s" % w[6:],
                      "%.4f (%.4f-%.4f)" % (med(r["ratio"]), min(r["ratio"]), max(r["ratio"])),
                      all(abs(x - 1) <= GOAL_ACC for x in r["ratio"])))
    for w, limit in (("tally -p on", GOAL_ON), ("tally -p hi", GOAL_HI)):
        for what, o in (("wall", ovh[w]), ("CPU", covh[w])):
            goals.append((threads, "%s overhead under %d%% at %s" % (what, limit * 100, w[6:]),
                          "%+.2f%%" % (o * 100), o < limit))
    goals.append((threads, "CPU overhead at -p hi within one point of perf -F 1000 without "
                  "stacks", "%s vs %s" % (pct(covh["tally -p hi"]),
                                          pct(covh["perf record -F 1000 (no stacks)"])),
                  covh["tally -p hi"] - covh["perf record -F 1000 (no stacks)"] <= 0.01))
    goals.append((threads, "CPU overhead under 1% at -p on (issue 17)", pct(covh["tally -p on"]),
                  covh["tally -p on"] < 0.01))
    ev, lg, n = acc["tally -p hi"]["size"][-1]
    out("- Experiment size at -p hi (last run): events file %d bytes on disk + log %d bytes "
        "for %d clock samples = %.1f bytes per sample (the 4 KiB header and each stream's last "
        "chunk up to its last page included: tally collect gives the chunks' unused ends back "
        "to the disk; thread-state records are in the same file)." %
        (ev, lg, n, (ev + lg) / max(n, 1)))
    out("")

# Real programs: an interpreter and a compressor with threads; overhead only (their CPU time is
# the command's, from getrusage of the children).
real_ways = ["bare", "tally -p on", "tally -p hi", "perf record -F 1000 (no stacks)"]
data = os.path.join(tmp, "corpus")
with open(data, "wb") as f:  # compressible but not trivial: 48 MB of varied text
    for i in range(600000):
        f.write(b"%d line %x of the corpus, %s\n" % (i, i * 2654435761 % 4294967296,
                                                        b"abcdefgh"[i % 8:] * (i % 5)))
real = [
    ("python3", "python3, a pure-Python loop (interpreter)",
     ["/usr/bin/python3", "-c",
      "import time\nt=time.process_time()+%g\nd={}\ni=0\n"
      "while time.process_time()<t:\n    d[i%%1000]=str(i)*3\n    i+=1\n" % args.seconds]),
    ("zstd", "zstd -T2 -12 (compressor, 2 threads)",
     ["zstd", "-q", "-f", "-T2", "-12", data, "-o", os.path.join(tmp, "corpus.zst")]),
]
for short, title, prog in real:
    if not os.path.exists(prog[0]) and not shutil.which(prog[0]):
        out("- %s: not installed here, not measured." % title)
        continue
    walls = {w: [] for w in real_ways}
    cpus = {w: [] for w in real_ways}
    for rep in range(args.reps):
        for w in real_ways:
            cmd, wall, cpu, _ = quiet_run(w, prog)
            walls[w].append(wall)
            cpus[w].append(cpu)
            if w != "bare":
                remove(output_of(cmd))
    base, base_cpu = med(walls["bare"]), med(cpus["bare"])
    out("### %s, median of %d runs" % (title, args.reps))
    out("")
    out("| how | wall (s) | overhead | CPU (s) | CPU overhead |")
    out("|---|---|---|---|---|")
    for w in real_ways:
        out("| %s | %.3f | %s | %.3f | %s |" % (w, med(walls[w]), pct(med(walls[w]) / base - 1),
                                               med(cpus[w]), pct(med(cpus[w]) / base_cpu - 1)))
        if w == "tally -p on":
            goals.append((0, "%s: CPU overhead under 1%% at -p on" % short,
                          pct(med(cpus[w]) / base_cpu - 1), med(cpus[w]) / base_cpu - 1 < 0.01))
    hi = med(cpus["tally -p hi"]) / base_cpu - 1
    floor = med(cpus["perf record -F 1000 (no stacks)"]) / base_cpu - 1
    goals.append((0, "%s: -p hi within one point of perf -F 1000 without stacks" % short, "%s vs %s" % (pct(hi), pct(floor)), hi - floor <= 0.01))
    out("")

# Long run with few distinct stacks: bytes per sample at the limit.
secs = args.seconds * 3
for states in ("on", "off"):
    cmd = [tally, "collect", "-p", "0.1", "--states=" + states, "-o", "long" + states, deep30,
           str(secs), "1"]
    timed(cmd)
    s = tallyexp.summary(output_of(cmd))
    n = max(s["clock_samples"], 1)
    per = (s["events_disk"] + s["log_bytes"]) / n
    out("- Long run (`tally collect -p 0.1 --states=%s deep30 %g 1`): %d clock samples, %d "
        "stack records, events file %d bytes on disk (%.2f per sample; its size %d bytes), "
        "with the log %.2f bytes per sample." % (states, secs, s["clock_samples"],
                                                 s["records"].get("STACK", 0), s["events_disk"],
                                                 s["events_disk"] / n, s["events_bytes"], per))
    goals.append((1, "under 16 bytes per sample, long run, states %s" % states, "%.2f" % per,
                  per < GOAL_SIZE))
    shutil.rmtree(output_of(cmd), ignore_errors=True)
out("")
out("Start and stop cost (wall time of `TOOL /bin/true`, median): %s. perf record notices the "
    "end of its program late (`perf record sleep 1` takes about 2.2 s): its wall overhead is "
    "mostly that wait; its CPU overhead is its own work." %
    ", ".join("%s %.3f s" % (w, fixed[w]) for w in ways))
out("")
out("Goals (issue 2):")
out("")
out("| threads | goal | measured | |")
out("|---|---|---|---|")
for threads, goal, value, ok in goals:
    out("| %s | %s | %s | %s |" % (threads or "", goal, value, verdict(ok)))
out("")
out("Other work on the machine: a run during which it used more than %.2f of a CPU was redone "
    "(%d runs redone; %d kept after %d tries; the busiest kept run shared the machine with "
    "%.2f of a CPU). Load average %.2f before the run, %.2f after; the run took %.0f s." %
    (args.max_foreign, quiet["redone"], quiet["kept_busy"], args.tries, quiet["worst"],
     load_before, os.getloadavg()[0], time.perf_counter() - started))
out("")
shutil.rmtree(tmp, ignore_errors=True)

text = "\n".join(lines) + "\n"
print(text)
if args.write:
    benchdoc.write_section("clock.py", text)
