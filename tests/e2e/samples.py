"""Sample packets, selections over time and thread states, on a program whose phases differ
(tests/workloads/phases.c: CPU, then sleeping, then blocked in I/O, then blocked on a lock, each S
seconds, each announced with tally_sample("label")): each phase shows in the right samples and
states with the right functions; -l and -y/tally_pause work; filters and CPU selection; errors."""
import os
import subprocess
import time
from common import *

d = workdir("samples")
S = 0.4
wlp = os.path.join(WL, "wl_phases")

# a program built with include/tally.h runs unchanged without tally
p = run([wlp, "0.05"], expect=0)
check("phases done" in p.stdout, "bare run: %r" % p.stdout)

exp = collect(d, [wlp, str(S), "raise"], opts=["-S", "0.1", "-l", "SIGUSR1"], name="ph")
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
check(abs(sum(s.get("utime", 0) + s.get("stime", 0) for s in cpu_rows) - S) < 0.1 * S,
      "CPU time of the cpu phase from the packets: %r" % cpu_rows)

ov = docs[1]
close_to(ov["lock"], S, 0.1, "overview: User Lock Time (the main thread waits S on the mutex)")
close_to(ov["iowait"], S, 0.1, "overview: I/O Wait Time (the main thread waits S on the pipe)")
# sleeping: the main thread S, the writer and the holder threads S each
close_to(ov["sleep"], 3 * S, 0.1, "overview: Sleep Time")
close_to(ov["totalcpu"], S, 0.1, "overview: Total CPU Time")
check(ov["total"] >= ov["totalcpu"] + ov["lock"] + ov["iowait"] + ov["sleep"] - 1e-6,
      "Total Thread Time is the sum of the states")


def phase(first, last, metric):
    """Functions of samples first..last-1 (by label), with the inclusive metric."""
    sel = "%d-%d" % (labels[first], labels[last] - 1)
    d2 = print_json(exp, "-sample_select", sel, "-metrics", "i.%s:name" % metric, "-functions")
    return {r["name"]: r["i." + metric] for r in d2[-1]["rows"]}


f = phase("cpu", "sleep", "totalcpu")
close_to(f.get("cpu_phase", 0), S, 0.1, "cpu samples: cpu_phase")
check("sleep_phase" not in f and "lock_phase" not in f, "cpu samples show other phases: %r" % f)
f = phase("sleep", "io", "sleep")
close_to(f.get("sleep_phase", 0), S, 0.1, "sleep samples: sleep_phase sleeps S")
check(f.get("cpu_phase", 0) == 0, "sleep samples: cpu_phase %r" % f.get("cpu_phase"))
f = phase("io", "lock", "iowait")
close_to(f.get("io_phase", 0), S, 0.1, "io samples: io_phase waits S for I/O")
f = phase("lock", "done", "lock")
close_to(f.get("lock_phase", 0), S, 0.1, "lock samples: lock_phase waits S on the mutex")
close_to(f.get("pthread_mutex_lock", 0), S, 0.1, "lock samples: inside pthread_mutex_lock")

# filters: the same answers by expression
d2 = print_json(exp, "-filters", 'FNAME("io_phase") SOME IN STACK', "-metrics",
                "i.iowait:i.totalcpu:name", "-functions")
rows = rows_by_name(d2[-1])
close_to(rows["<Total>"]["i.iowait"], S, 0.1, "filter io_phase: I/O wait")
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
# under load the main thread also waits for a CPU ('^') in some cells of its CPU phase
letters = [c for c in main_row if c.isalnum()]
first = legend.get(letters[0], "") if letters else ""
check(first == "cpu_phase", "timeline starts in %r: %r" % (first, main_row))
states = "".join(c for c in main_row if c in ".%=")
order = "".join(c for i, c in enumerate(states) if i == 0 or c != states[i - 1])
check(order == ".%=", "timeline of the main thread: sleep, I/O, lock in that order: %r" % main_row)

# text views answer too
p = run([TALLY, "print", "-sample_detail", str(labels["lock"]), "-timeline", exp], expect=0)
check("Context switches" in p.stdout and "|" in p.stdout, "text views: %r" % p.stdout[:400])

# pause: tally_pause()/tally_resume() around a first cpu phase: only one phase is recorded
exp2 = collect(d, [wlp, str(S), "pause"], name="paused")
d2 = print_json(exp2, "-metrics", "i.totalcpu:name", "-functions")
close_to(rows_by_name(d2[-1])["cpu_phase"]["i.totalcpu"], S, 0.15,
         "paused: cpu_phase recorded once, not twice")
check(any(k == "pause" for k, _ in log_records(exp2)), "no pause record in the log")

# -y: a signal pauses and the next resumes
exp3 = os.path.join(d, "ysig.tally")
col = subprocess.Popen([TALLY, "collect", "-d", d, "-o", "ysig", "-y", "USR2",
                        os.path.join(WL, "wl_cpu_single"), "2"], stderr=subprocess.PIPE)
child = child_of(col.pid)
if check(child is not None, "-y: no child"):
    time.sleep(0.5)
    os.kill(child, 12)  # SIGUSR2: pause
    time.sleep(0.8)
    os.kill(child, 12)  # resume
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

# a program that enters a user namespace (single-threaded only) behaves as without tally
bare = run([os.path.join(WL, "wl_userns")])
if bare.returncode == 0:
    p = run([TALLY, "collect", "-d", d, "-o", "userns", os.path.join(WL, "wl_userns")])
    check(p.returncode == 0 and "unshare ok" in p.stdout, "unshare under tally: %r" % p.stdout)
else:
    print("note: user namespaces are not available here (%s); unshare not checked" %
          bare.stdout.strip())

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
