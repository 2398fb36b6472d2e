"""Synchronization wait tracing (collect -s) on a program whose threads wait known times on a
mutex (200 ms), a condition variable (300 ms), a semaphore (250 ms) and a join (150 ms): each wait
matches the program's own measurement of it, attributed to its function and object; a million
uncontended locks record nothing at the calibrated threshold, and every call with -s all; the
threshold is shown."""
import os
import re
from common import *

d = workdir("trace_sync")
prog = os.path.join(WL, "wl_trace_sync")
KNOWN = {"wait_mutex": 0.200, "wait_cond": 0.300, "wait_sem": 0.250, "join_worker": 0.150}
OBJECTS = {"lock_m": ("mutex", "wait_mutex"), "cond_c": ("condition", "wait_cond"),
           "sem_s": ("semaphore", "wait_sem")}


def collect_waits(name, args, opts):
    """Collects the program; returns the experiment and the waits it measured itself (seconds)."""
    p = run([TALLY, "collect", "-d", d, "-o", name] + opts + [prog] + args, expect=0)
    m = re.search(r"^waited (.*)$", p.stderr, re.M)
    check(m, "%s: the program did not print its waits: %r" % (name, p.stderr[-500:]))
    waited = {k: int(v) / 1e9 for k, v in (f.split("=") for f in m.group(1).split())} if m else {}
    return os.path.join(d, name + ".tally"), waited


def wait_matches(recorded, measured, what):
    """The known times are not the truth: under load a wait comes out longer (late wake-ups) or a
    little shorter (a waiter preempted between announcing its wait and starting it). The program
    times each waiting call itself, just around it, and the tracer times it inside that: the
    recorded wait is never longer (0.1% for the reports' rounding) and shorter only by the
    interposer's entry and exit (microseconds) and a preemption landing in those instants (a time
    slice under load, a few ms: 5% of these 150-300 ms waits)."""
    if measured is None:
        return fail("%s: no measurement of the program's own" % what)
    return bounded(recorded, measured, 0.05, 0.001, what + " (against the program's own %.4f s)"
                   % measured)


def funcs(exp, metrics="i.sync:i.syncn:e.sync:e.syncn:name"):
    docs = print_json(exp, "-metrics", metrics, "-functions")
    return rows_by_name(docs[-1])


# ---- -s on: the calibrated threshold ------------------------------------------------------------
exp, waited = collect_waits("on", [], ["-s", "on", "-p", "off"])
f = funcs(exp)
for fn, secs in KNOWN.items():
    if check(fn in f, "-s on: %s missing from -functions" % fn):
        wait_matches(f[fn]["i.sync"], waited.get(fn), "-s on: %s wait" % fn)
        check(f[fn]["i.syncn"] == 1, "-s on: %s: %r waits, expected 1" % (fn, f[fn]["i.syncn"]))
check("uncontended" not in f or f["uncontended"]["i.syncn"] == 0,
      "-s on: the uncontended locks were recorded: %r" % f.get("uncontended"))
# the waits are exclusive to the traced calls, under their own names
for leaf in ("pthread_mutex_lock", "pthread_cond_wait", "sem_wait", "pthread_join"):
    names = [n for n in f if n == leaf or n.startswith(leaf + " (")]
    check(any(f[n]["e.syncn"] > 0 for n in names), "-s on: no exclusive wait in %s: %r" %
          (leaf, {n: f[n] for n in names}))
# attributed: wait_cond's callee is the traced pthread_cond_wait, with the whole wait
docs = print_json(exp, "-csingle", "wait_cond")
callees = {r["name"]: r for r in docs[0]["entries"][0]["callees"]}
waits = [r["a.sync"] for n, r in callees.items() if n.startswith("pthread_cond_wait")]
check(waits and abs(max(waits) - f["wait_cond"]["i.sync"]) < 1e-6,
      "-csingle wait_cond: callees %r" % callees)
# the objects, by the variables they are
docs = print_json(exp, "-sync_objects")
objs = {o["name"]: o for o in docs[0]["objects"]}
for name, (kind, waiter) in OBJECTS.items():
    if check(name in objs, "-sync_objects: %s missing: %r" % (name, list(objs))):
        check(objs[name]["kind"] == kind, "-sync_objects: %s is a %s" % (name, objs[name]["kind"]))
        wait_matches(objs[name]["wait"], waited.get(waiter), "-sync_objects: %s wait" % name)
check(not any(o["name"] == "free_m" for o in docs[0]["objects"]),
      "-sync_objects: the uncontended mutex is listed")
# the header shows the calibrated threshold; it is 6 times the calibration
settings = log_records(exp, "settings")[0][1]
cal, thr = int(settings.get("sync_calibration", 0)), int(settings.get("sync", 0))
check(settings.get("sync_calibrated") == "1" and cal > 0 and thr == 6 * cal,
      "settings: calibrated threshold %r" % settings)
p = run([TALLY, "print", "-header", exp], expect=0)
check("calibrated: 6 x %d ns" % cal in p.stdout, "-header does not show the calibration: %r" %
      p.stdout[-600:])
hdr = print_json(exp, "-header")[0]["experiments"][0]["processes"][0]
check(hdr.get("sync_threshold_ns") == thr, "-header json: threshold %r" % hdr)
# the default metrics follow the data: clock off, sync on -> sync first, sorted by it
docs = print_json(exp, "-functions")
check(docs[0]["metrics"][0]["name"] == "i.sync", "default metrics: %r" % docs[0]["metrics"])

# ---- -s all: every call, the uncontended ones too -----------------------------------------------
exp, waited = collect_waits("all", ["10000"], ["-s", "all", "-p", "off"])
f = funcs(exp)
check(f.get("uncontended", {}).get("i.syncn") == 10000,
      "-s all: uncontended calls recorded: %r" % f.get("uncontended"))
for fn, secs in KNOWN.items():
    if check(fn in f, "-s all: %s missing" % fn):
        wait_matches(f[fn]["i.sync"], waited.get(fn), "-s all: %s wait" % fn)

# ---- -s <us>: a threshold of 100 ms keeps only the long waits -----------------------------------
exp = collect(d, [prog, "1000"], opts=["-s", "100000", "-p", "off"], name="thr")
f = funcs(exp)
check(f["<Total>"]["i.syncn"] == 4, "-s 100000: %r waits, expected the 4 long ones" %
      f["<Total>"]["i.syncn"])
check(log_records(exp, "settings")[0][1].get("sync") == "100000000", "-s 100000: threshold")

# ---- -s off: nothing ----------------------------------------------------------------------------
exp = collect(d, [prog, "1000"], opts=["-s", "off", "-p", "off"], name="off")
check(log_records(exp, "settings")[0][1].get("sync") == "off", "-s off: settings")
docs = print_json(exp, "-metrics", "i.syncn:name", "-functions")
check(docs[0]["rows"][0].get("i.syncn", 0) == 0, "-s off: waits recorded")
done(d)
