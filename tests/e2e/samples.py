"""Sample packets, selections over time and thread states, on a program whose phases differ
(tests/workloads/phases.c: CPU, then sleeping, then blocked in I/O, then blocked on a lock, each S
seconds, each announced with tally_sample("label")): each phase shows in the right samples and
states with the right functions; -l and -y/tally_pause work; filters and CPU selection; errors.

The waits are checked one-sided: a phase that waits S waits at least S, and a tool can record no
more of it than the wall time the program itself measured for the phase (phases.c prints it;
under load it is longer than S). Recorded, a wait may come out shorter by LATE (below)."""
import os
import json
import re
import signal
import subprocess
import time
from common import *

d = workdir("samples")
S = 0.4
# The sampler charges a thread's off-CPU time at its looks, only to a thread still asleep at the
# look: the end of a wait, from the sampler's last look before it to the thread running again, is
# not charged to it. That is one look period (10 ms) plus the sampler's own lateness, which under
# load (scripts/stress-test, load average 11) reached 46 ms: twice that allowed per wait, in
# seconds, whatever S is (and a thread late to start waiting is inside it too).
LATE = 0.1
wlp = os.path.join(WL, "wl_phases")

# a program built with include/tally.h runs unchanged without tally
p = run([wlp, "0.05"], expect=0)
check("phases done" in p.stdout, "bare run: %r" % p.stdout)

p = run([TALLY, "collect", "-d", d, "-o", "ph", "-S", "0.1", "-l", "SIGUSR1", wlp, str(S), "raise"],
        expect=0)
exp = os.path.join(d, "ph.tally")
m = re.search(r"^walls (.*)$", p.stderr, re.M)
check(m, "phases did not print its walls: %r" % p.stderr[-500:])
walls = {k: int(v) / 1e9 for k, v in (f.split("=") for f in m.group(1).split())} if m else {}
WALL_SLEEP, WALL_IO, WALL_LOCK = (walls.get(k, 0.0) for k in ("sleep_ns", "io_ns", "lock_ns"))


def waited(actual, wall, what):
    """A wait of S seconds in a phase that took wall seconds by the program's own clock."""
    # no more than the wall, but for one look: a look that finds the thread blocked charges it
    # the off-CPU time since the previous look, and when that look fell in the previous wait
    # (another state, just before the phase) its tail is charged to this one (seen: 44 ms
    # under load average 16). So at most LATE above the wall, in seconds, and 2% for rounding.
    return bounded(actual, S, LATE / S, None, what) and \
        at_most(actual, wall + LATE, 0.02, what + " vs wall (+ one late look)")



docs = print_json(exp, "-sample_list", "-overview")
samples = docs[0]["samples"]
labels = {s["label"]: s["number"] for s in samples if s["label"]}
check(all(l in labels for l in ("cpu", "sleep", "io", "lock", "done")),
      "sample labels: %r" % sorted(labels))
reasons = [s["reason"] for s in samples]
check(reasons[0] == "start" and reasons[-1] == "end", "first/last packets: %r" % reasons)
check("signal" in reasons, "no packet for the -l signal: %r" % reasons)
check(reasons.count("periodic") >= 8, "periodic packets every 0.1 s: %d" % reasons.count("periodic"))
# the cpu sample's kernel figures show the CPU work
cpu_rows = [s for s in samples if labels["cpu"] <= s["number"] < labels["sleep"]]
# cpu_phase computes until its thread's own CPU clock says S: the process used at least that (2%:
# the clocks' granularity), and the collector's sampler and handlers add a little (10%)
bounded(sum(s.get("utime", 0) + s.get("stime", 0) for s in cpu_rows), S, 0.02, 0.1,
        "CPU time of the cpu phase from the packets")

ov = docs[1]
waited(ov["lock"], WALL_LOCK, "overview: User Lock Time (the main thread waits S on the mutex)")
waited(ov["iowait"], WALL_IO, "overview: I/O Wait Time (the main thread waits S on the pipe)")
# sleeping: the main thread S, the writer and the holder threads S each, within the three phases
# three naps, each may come out LATE short
bounded(ov["sleep"], 3 * S, LATE / S, None, "overview: Sleep Time")
at_most(ov["sleep"], WALL_SLEEP + WALL_IO + WALL_LOCK, 0.02, "overview: Sleep Time vs walls")
# CPU time does not depend on load: cpu_phase's S and a little more
close_to(ov["totalcpu"], S, 0.1, "overview: Total CPU Time")
check(ov["total"] >= ov["totalcpu"] + ov["lock"] + ov["iowait"] + ov["sleep"] - 1e-6,
      "Total Thread Time is the sum of the states")


def phase(first, last, metric):
    """Functions of samples first..last-1 (by label; last None: to the end), with the inclusive
    metric."""
    end = labels[last] - 1 if last else samples[-1]["number"]
    sel = "%d-%d" % (labels[first], end)
    d2 = print_json(exp, "-sample_select", sel, "-metrics", "i.%s:name" % metric, "-functions")
    return {r["name"]: r["i." + metric] for r in d2[-1]["rows"]}


f = phase("cpu", "sleep", "totalcpu")
close_to(f.get("cpu_phase", 0), S, 0.1, "cpu samples: cpu_phase")
check("sleep_phase" not in f and "lock_phase" not in f, "cpu samples show other phases: %r" % f)
# A wait is charged at the sampler's looks, so part of it may be charged after the next label,
# in the next phase's samples (by up to LATE). So a phase holds most of its wait in its own
# samples (half: a wait in the wrong phase would leave it ~nothing), and all of it (less LATE)
# with the next phase's samples.
for name, nxt, after, metric, func, wall in (
        ("sleep", "io", "lock", "sleep", "sleep_phase", WALL_SLEEP),
        ("io", "lock", "done", "iowait", "io_phase", WALL_IO),
        ("lock", "done", None, "lock", "lock_phase", WALL_LOCK),
        ("lock", "done", None, "lock", "pthread_mutex_lock", WALL_LOCK)):
    f = phase(name, nxt, metric)
    at_least(f.get(func, 0), S, 0.5, "%s samples: %s's %s (most of it)" % (name, func, metric))
    if name == "sleep":
        check(f.get("cpu_phase", 0) == 0, "sleep samples: cpu_phase %r" % f.get("cpu_phase"))
    f = phase(name, after, metric)
    waited(f.get(func, 0), wall, "%s and %s samples: %s's %s" % (name, nxt, func, metric))

# filters: the same answers by expression
d2 = print_json(exp, "-filters", 'FNAME("io_phase") SOME IN STACK', "-metrics",
                "i.iowait:i.totalcpu:name", "-functions")
rows = rows_by_name(d2[-1])
waited(rows["<Total>"]["i.iowait"], WALL_IO, "filter io_phase: I/O wait")
check(rows["<Total>"]["i.totalcpu"] < 0.05 * S, "filter io_phase: CPU %r" % rows["<Total>"])
d2 = print_json(exp, "-filters", "TSTAMP < 1ms", "-metrics", "i.totalcpu:name", "-functions")
check(d2[-1]["rows"][0]["i.totalcpu"] < 0.01, "TSTAMP < 1ms keeps ~nothing: %r" % d2[-1]["rows"][0])
d2 = print_json(exp, "-cpu_select", "all", "-metrics", "e.totalcpu:name", "-functions")
total_all = d2[-1]["rows"][0]["e.totalcpu"]
parts = 0.0
for cpu in range(os.cpu_count() or 1):
    d2 = print_json(exp, "-cpu_select", str(cpu), "-metrics", "e.totalcpu:name", "-functions")
    parts += d2[-1]["rows"][0]["e.totalcpu"]
close_to(parts, total_all, 0.02, "CPU selections add up to the total CPU time")

# the timeline: the main thread computes first (a letter), sleeps ('.'), then I/O ('%'), lock ('=')
d2 = print_json(exp, "-timeline")
tl = d2[0]
main_row = tl["threads"][0]["cells"]
legend = tl["legend"]
# under load the main thread also waits for a CPU in its CPU phase, even more than it runs: a
# cell in which it ran still shows the function it ran ('^' only where it did not run at all),
# so its first function mark is cpu_phase however loaded the machine
letters = [c for c in main_row if c in legend and c not in "^=%."]
first = legend.get(letters[0], "") if letters else ""
check(first == "cpu_phase", "timeline starts in %r: %r (Wait CPU %.3f s, CPU %.3f s)" %
      (first, main_row, ov.get("wait", 0), ov["totalcpu"]))
check(set(main_row[:main_row.index(".")] if "." in main_row else "") <= set(letters) | set(" ^"),
      "timeline of the main thread: states before its sleep: %r" % main_row)
states = "".join(c for c in main_row if c in ".%=")
order = "".join(c for i, c in enumerate(states) if i == 0 or c != states[i - 1])
check(order == ".%=", "timeline of the main thread: sleep, I/O, lock in that order: %r" % main_row)

# a run in which no function wins a cell (it only sleeps; also a busy program under heavy load,
# whose cells all show '^'): the JSON legend has the states only, and is still JSON
slept = collect(d, ["sleep", "0.3"], name="slept")
p = run([TALLY, "print", "--json", "-timeline", slept], expect=0)
try:
    legend = json.loads(p.stdout)["legend"]
    check(sorted(legend) == sorted("^=%."), "timeline of a sleep: legend %r" % legend)
except ValueError as e:
    fail("timeline of a sleep: not JSON (%s): %r" % (e, p.stdout[:200]))

# text views answer too
p = run([TALLY, "print", "-sample_select", str(labels["lock"]), "-sample_info", "-sample_select", "all", "-timeline", exp], expect=0)
check("Context switches" in p.stdout and "|" in p.stdout, "text views: %r" % p.stdout[:400])

# A thread blocked inside one of the collector's interposers (pthread_mutex_lock under -s on,
# read under -i on: they keep a frame pointer, which the sampler's unwind of a blocked thread
# cannot go through) still has its callers in its thread states: the interposer publishes its
# caller's registers and the sampler continues from them. (Without -s and -i the same holds in a
# Debug build, where the interposers' untraced calls are not tail calls.)
p = run([TALLY, "collect", "-d", d, "-o", "traced", "-s", "on", "-i", "on", wlp, str(S)], expect=0)
m = re.search(r"^walls (.*)$", p.stderr, re.M)
if check(m, "phases (traced) did not print its walls: %r" % p.stderr[-500:]):
    w2 = {k: int(v) / 1e9 for k, v in (f.split("=") for f in m.group(1).split())}
    d2 = print_json(os.path.join(d, "traced.tally"), "-metrics", "i.lock:i.iowait:name",
                    "-functions")
    rows = rows_by_name(d2[-1])
    waited(rows.get("lock_phase", {}).get("i.lock", 0), w2["lock_ns"],
           "-s on: lock_phase's lock (its frames above the interposer)")
    waited(rows.get("io_phase", {}).get("i.iowait", 0), w2["io_ns"],
           "-i on: io_phase's iowait (its frames above the interposer)")
    waited(rows.get("main", {}).get("i.lock", 0), w2["lock_ns"], "-s on: main's lock")

# pause: tally_pause()/tally_resume() around a first cpu phase: only one phase is recorded
exp2 = collect(d, [wlp, str(S), "pause"], name="paused")
d2 = print_json(exp2, "-metrics", "i.totalcpu:name", "-functions")
close_to(rows_by_name(d2[-1])["cpu_phase"]["i.totalcpu"], S, 0.15,
         "paused: cpu_phase recorded once, not twice")
check(any(k == "pause" for k, _ in log_records(exp2)), "no pause record in the log")

# -y SIG,r: starts recording, a signal pauses and the next resumes
exp3 = os.path.join(d, "ysig.tally")
col = subprocess.Popen([TALLY, "collect", "-d", d, "-o", "ysig", "-y", "USR2,r",
                        os.path.join(WL, "wl_cpu_single"), "2"], stderr=subprocess.PIPE)
child = child_of(col.pid)
# not a fixed sleep: under load the program may still be starting, and SIGUSR2 before the
# collector's handler is in place kills it. Once the handler is in, 0.1 s of CPU before the pause
# (so there is something before it), then 0.8 s paused: the program's 2 s of CPU are not over yet
if check(child is not None, "-y: no child") and \
        check(wait_caught(child, signal.SIGUSR2), "-y: the collector never caught SIGUSR2") and \
        check(wait_cpu(child, 0.1), "-y: the program did not run"):
    os.kill(child, signal.SIGUSR2)  # pause
    time.sleep(0.8)
    os.kill(child, signal.SIGUSR2)  # resume
col.communicate(timeout=60)
check(col.returncode == 0, "-y run exited %d" % col.returncode)
recs = log_records(exp3)
kinds = [k for k, _ in recs if k in ("pause", "resume")]
if check(kinds == ["pause", "resume"], "-y log records: %r" % kinds):
    t0 = int([f for k, f in recs if k == "start"][0]["t"])
    tp = int([f for k, f in recs if k == "pause"][0]["t"]) - t0
    tr = int([f for k, f in recs if k == "resume"][0]["t"]) - t0
    inside = print_json(exp3, "-filters", "TSTAMP > %d && TSTAMP < %d" % (tp + 20_000_000,
                                                                        tr - 20_000_000),
                        "-metrics", "i.totalcpu:name", "-functions")[-1]["rows"][0]["i.totalcpu"]
    before = print_json(exp3, "-filters", "TSTAMP < %d" % tp, "-metrics", "i.totalcpu:name",
                        "-functions")[-1]["rows"][0]["i.totalcpu"]
    check(inside == 0, "-y: %.3f s recorded while paused" % inside)
    check(before > 0, "-y: nothing recorded before the pause")

# errors
p = run([TALLY, "print", "-filters", "THRID ==", "-functions", exp], expect=1)
check("at 9" in p.stderr and "expected a number" in p.stderr, "bad filter: %r" % p.stderr)
p = run([TALLY, "print", "-sample_select", "999", "-functions", exp], expect=1)
check("largest sample number" in p.stderr, "bad sample selection: %r" % p.stderr)
p = run([TALLY, "collect", "-l", "SIGNOPE", "/bin/true"], expect=2)
check("bad signal" in p.stderr, "bad -l: %r" % p.stderr)
p = run([TALLY, "collect", "-S", "fast", "/bin/true"], expect=2)
check("-S" in p.stderr, "bad -S: %r" % p.stderr)
done(d)
