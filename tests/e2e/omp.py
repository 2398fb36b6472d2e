"""OpenMP Work and Wait (src/collector/omp.c, ompt.c): a parallel loop with a deliberately
imbalanced static schedule (tests/workloads/omp_imbalance.c), under one OpenMP runtime.

Usage: omp.py gomp | libomp. gomp: built with gcc -fopenmp (libgomp: the GOMP_ interposers).
libomp: built with clang -fopenmp, and the same gcc-compiled program linked with libomp (its
GOMP_ entry points), both through OMPT. A runtime or compiler the machine lacks is a skip.

Truth is the run's own: each thread measures, on CLOCK_MONOTONIC, the wall time of its own
iterations (its work) and of the whole loop with its implicit barrier; the wait at the barrier is
the difference. Checked per thread:
- Work + Wait is the thread's time (Total Thread Time, every state of the thread) within 2%: every
  moment of an OpenMP program's thread is in one of the two, the main thread's serial part too;
- inside imbalanced_loop, OpenMP Wait is the thread's measured wait within 5% of the loop's time
  plus 50 ms (a sample, or a sampler period, on either side of each barrier);
- inside imbalanced_loop, Work + Wait is the loop's measured time within 10% (time is charged to
  the function on the thread's stack at a sample or a look, which can be either side of the
  loop's edges: on 2 CPUs under a load of 10, a thread runs in slices of a few ms between waits
  of tens of ms, and 5% was exceeded once in six runs);
- the thread with the least work waits most: the imbalance is seen;
- before the loop, every thread enters one contended `critical` section (critical_phase), and
  one contended omp_set_lock (lock_phase), holding it for half a unit: the thread's OpenMP Wait
  is at least all its measured waits (loop, critical, lock) less 15% and 50 ms, less what the
  thread spent of its critical and lock waits waiting for a CPU (it got in, and became Work, at a
  moment its own clock cannot place within that run delay); with libgomp,
  OpenMP Wait in each function is the thread's measured wait to get in, within 5% of the
  function's time plus 50 ms (libomp: see main()).
"""
import json
import os
import sys

from common import (TALLY, WL, check, close_to, done, fail, log_records, print_json, run, skip,
                    workdir)

THREADS, UNIT_MS, REPS = 3, 150, 2


def one(d, binary, name, env, per_function_locks):
    p = run([TALLY, "collect", "-d", d, "-o", name, binary, str(THREADS), str(UNIT_MS), str(REPS)],
            expect=0, timeout=280, env=env)
    exp = os.path.join(d, name + ".tally")
    truth, contended, delays = {}, {}, {}
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) == 14 and f[0] == "thread":
            truth[int(f[3])] = (int(f[1]), int(f[5]) * 1e-9, int(f[7]) * 1e-9)
            contended[int(f[3])] = {"critical_phase": int(f[9]) * 1e-9,
                                    "lock_phase": int(f[11]) * 1e-9}
            delays[int(f[3])] = int(f[13]) * 1e-9
    if not check(len(truth) == THREADS, "%s: the workload printed %d threads: %r" %
                 (name, len(truth), p.stdout)):
        return
    names = {f.get("name") for k, f in log_records(exp, "metric")}
    check({"ompwork", "ompwait"} <= names, "%s: metrics declared: %s" % (name, sorted(names)))
    threads = print_json(exp, "-thread_list")[0]["threads"]
    number = {t["tid"]: t["number"] for t in threads}
    waits = {}
    for tid, (k, work, loop) in sorted(truth.items(), key=lambda x: x[1][0]):
        if not check(tid in number, "%s: thread %d (tid %d) not in -thread_list" % (name, k, tid)):
            continue
        doc = print_json(exp, "-thread_select", str(number[tid]), "-metrics",
                         "i.ompwork:i.ompwait:i.total", "-functions")[0]
        rows = {r["name"]: r for r in doc["rows"]}
        tot, lp = rows["<Total>"], rows.get("imbalanced_loop")
        what = "%s thread %d" % (name, k)
        close_to(tot["i.ompwork"] + tot["i.ompwait"], tot["i.total"], 0.02,
                 what + ": Work + Wait against the thread's time")
        if not check(lp is not None, what + ": imbalanced_loop has no row"):
            continue
        expected_wait = loop - work
        got = lp["i.ompwait"]
        check(abs(got - expected_wait) <= 0.05 * loop + 0.05,
              "%s: OpenMP Wait in imbalanced_loop %.3f s, the thread measured %.3f s of %.3f s "
              "(allowed: 5%% of the loop + 50 ms)" % (what, got, expected_wait, loop))
        close_to(lp["i.ompwork"] + lp["i.ompwait"], loop, 0.10,
                 what + ": Work + Wait in imbalanced_loop against the loop's time")
        waits[k] = (got, expected_wait)
        # the waits the thread measured are all in its OpenMP Wait, which also has its idle time
        # and the ends of its regions: one-sided
        measured_all = expected_wait + sum(contended[tid].values())
        # (15%, not 5%: the thread-state sampler charges the end of a sleep when it next finds
        # the thread asleep, and what is carried when the thread ends is not charged
        # (docs/ARCHITECTURE.md, thread states); before the carry, the end was lost and 5%
        # failed once in a full loaded run, 0.390 s against a bound of 0.391 s)
        check(tot["i.ompwait"] >= (measured_all - delays[tid]) * 0.85 - 0.05,
              "%s: OpenMP Wait %.3f s, the thread measured %.3f s of waits (loop, critical, "
              "lock; %.3f s of the last two waiting for a CPU)"
              % (what, tot["i.ompwait"], measured_all, delays[tid]))
        for fn, measured in contended[tid].items() if per_function_locks else ():
            row = rows.get(fn)
            if not check(row is not None, "%s: %s has no row" % (what, fn)):
                continue
            check(abs(row["i.ompwait"] - measured) <= 0.05 * row["i.total"] + 0.05,
                  "%s: OpenMP Wait in %s %.3f s, the thread waited %.3f s to get in (allowed: "
                  "5%% of the function's %.3f s + 50 ms)" % (what, fn, row["i.ompwait"],
                                                            measured, row["i.total"]))
            print("%s: %s wait %.3f (measured %.3f)" % (what, fn, row["i.ompwait"], measured))
        print("%s: work+wait %.3f of %.3f s; wait %.3f (measured waits %.3f, %.3f s of it for a "
              "CPU); in the loop: wait %.3f (measured %.3f), work+wait %.3f (measured %.3f)"
              % (what, tot["i.ompwork"] + tot["i.ompwait"], tot["i.total"], tot["i.ompwait"],
                 measured_all, delays[tid], got, expected_wait, lp["i.ompwork"] + got, loop))
    if len(waits) == THREADS:
        # thread 0 has one unit of work, the last THREADS units: it waits most
        check(waits[0][1] > 0.3 * truth_loop(truth) and waits[0][0] > waits[THREADS - 1][0],
              "%s: the imbalance is not seen: %r" % (name, waits))
    # every view and --json names the metrics; the timeline shows the states
    text = run([TALLY, "print", "-metrics", "e.ompwork:e.ompwait", "-functions", exp],
               expect=0).stdout
    head = text.split("sec.")[0]  # (a column's title is folded over two lines)
    check(head.count("Excl. OpenMP") == 2 and "Work" in head and "Wait" in head,
          "%s: -functions text:\n%s" % (name, text[:1500]))
    listed = run([TALLY, "print", "-metric_list", exp], expect=0).stdout
    check(all(any(l.split()[:1] == [m] for l in listed.splitlines()) for m in ("ompwork", "ompwait")),
          "%s: -metric_list does not list ompwork and ompwait:\n%s" % (name, listed))
    tl = print_json(exp, "-timeline")[0]
    check(any("states" in r and any(c in r["states"] for c in "12") for r in tl.get("threads", [])),
          "%s: the timeline shows no runtime states: %s" % (name, json.dumps(tl)[:1500]))


def truth_loop(truth):
    return max(loop for _, _, loop in truth.values())


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "gomp"
    d = workdir("omp-" + which)
    binaries = {"gomp": ["omp_gomp"], "libomp": ["omp_clang", "omp_gcc_libomp"]}[which]
    # libomp's waiting threads spin with sched_yield (barriers for KMP_BLOCKTIME, 200 ms, locks
    # and critical sections until they get in): on 2 loaded CPUs such a thread is runnable for
    # seconds and seldom runs long enough for a clock sample, and the Wait CPU the sampler sees
    # is charged, with its state, to the stack of the thread's last sample, which is stale (a
    # function the thread has left). Barriers sleep at once here (KMP_BLOCKTIME=0: blocked
    # threads are unwound where they sleep), and lock and critical waits are checked per
    # thread, not per function. libgomp's waiters spin briefly, then sleep.
    env = dict(os.environ)
    if which == "libomp":
        env["KMP_BLOCKTIME"] = "0"
    ran = 0
    for b in binaries:
        path = os.path.join(WL, "wl_" + b)
        if not os.path.exists(path):
            print("no %s (the compiler or the OpenMP runtime is missing)" % path)
            continue
        one(d, path, b, env, which == "gomp")
        ran += 1
    if not ran:
        skip("no %s workload was built" % which)
    done(d)


main()
