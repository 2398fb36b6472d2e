"""What the collector costs a program per thread it starts (tests/workloads/thread_cost.c).

1. Threads that are never sampled pay for no unwinding: libunwind's trace cache of a thread
   (256 KiB mapped and written at its first unwind) is made at the thread's first sample, not when
   it starts. Counted as the program's own minor page faults per thread (the difference between
   two thread counts, so that what a process pays once cancels out), under clock profiling,
   against the bare program: a few pages a thread, not the 64 of the cache. Nor does a thread
   map memory of its own: its alternate signal stack and buffers come from a pool (the
   process's mappings while all threads are alive, per thread, against the bare program).
2. When the thread-specific key of that cache may be one whose first value makes glibc allocate
   (the program made 40 keys before the collector started), a first unwind inside a signal
   handler is not safe: every thread is then set up as it starts, as before (its page faults
   show the cache).
3. Either way, threads whose first unwind happens in the handler get complete stacks: every
   sample of 20 threads that each spin 40 ms of CPU has spin() on its stack, none failed.
4. What a process pays once: a run of one thread faults in a few hundred pages in all, not
   the thousands of the collector's tables (its thread registry, the sampler's tracks) walked or
   cleared whole (the page faults of the process's `end` sample packet: after the collector's
   own end).
5. Threads that install an alternate signal stack of their own, and cancelled threads, leave
   nothing behind when they end: 3,000 of them, one after the other, grow the address space
   as much as without tally (within 16 MiB). A pending cancellation acts only at the program's
   own cancellation points, never at the collector's (tests/workloads/thread_churn.c).

Page faults are counted, not timed: the verdicts do not depend on the machine's load."""
import os
import re
from common import *

d = workdir("thread_cost")
wl = os.path.join(WL, "wl_thread_cost")
CLOCK = ["-p", "on", "-S", "off", "--states=off"]


def measure(threads, keys=0, collect=True):
    """(page faults, mappings) of a run of wl_thread_cost."""
    env = dict(os.environ, WL_THREAD_COST_KEYS=str(keys))
    cmd = [wl, str(threads), "0"]
    if collect:
        cmd = [TALLY, "collect", "-d", d, "-O", "f"] + CLOCK + cmd
    p = run(cmd, expect=0, env=env)
    m = re.search(r"^minflt=(\d+) maps=(\d+) threads=(\d+)$", p.stdout, re.M)
    check(m is not None, "thread_cost printed no counts: %r" % p.stdout[-300:])
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def per_thread(keys=0, collect=True):
    """The least page faults and mappings per thread of three runs each at 100 and 400
    threads."""
    lo = [measure(100, keys, collect) for _ in range(3)]
    hi = [measure(400, keys, collect) for _ in range(3)]
    return tuple((min(h[i] for h in hi) - min(l[i] for l in lo)) / 300.0 for i in (0, 1))


(bare, bare_maps), (lazy, maps), (eager, _) = per_thread(collect=False), per_thread(), \
    per_thread(keys=40)
print("page faults per thread: bare %.1f, collected %.1f, collected with 40 keys made first %.1f;"
      " mappings per thread: bare %.2f, collected %.2f" % (bare, lazy, eager, bare_maps, maps))
# ---- 1 ------------------------------------------------------------------------------------------
check(lazy - bare < 16,
      "the collector costs %.1f page faults per thread never sampled (bare %.1f, collected %.1f): "
      "a thread's unwinding cache should be made at its first sample" % (lazy - bare, bare, lazy))
# a thread's alternate stack and buffers come from a pool, mapped many at a time: not a mapping
# (and an unmapping at its end) of its own (0.02 a thread here; 0.49 when each thread mapped its
# own two regions, which the kernel often merged into one, or with a neighbour)
check(maps - bare_maps < 0.2,
      "the collector maps %.2f regions per thread (bare %.2f, collected %.2f): a thread's memory "
      "should come from a pool" % (maps - bare_maps, bare_maps, maps))
# ---- 2 ------------------------------------------------------------------------------------------
check(eager - lazy > 32,
      "with 40 keys made before the collector started, threads were not set up as they start "
      "(%.1f page faults per thread against %.1f): a first unwind in a handler could allocate"
      % (eager, lazy))

# ---- 3 ------------------------------------------------------------------------------------------
for keys in (0, 40):
    name = "spin%d" % keys
    run([TALLY, "collect", "-d", d, "-o", name] + CLOCK + [wl, "20", "40"], expect=0,
        env=dict(os.environ, WL_THREAD_COST_KEYS=str(keys)))
    exp = os.path.join(d, name + ".tally")
    st = log_records(exp, "stats")
    st = st[-1][1] if st else {}
    check(int(st.get("samples", 0)) >= 20, "%s: only %s samples" % (name, st.get("samples")))
    check(st.get("unwind_failures") == "0", "%s: unwind failures (stats %r)" % (name, st))
    rows = rows_by_name(print_json(exp, "-functions")[-1])
    total = rows["<Total>"]["i.totalcpu"]
    spin = rows.get("spin", {}).get("i.totalcpu", 0.0)
    # the threads' start before spin() and their end after it take a few samples' worth at most
    at_least(spin, total, 0.05, "%s: spin()'s inclusive CPU against <Total>" % name)

# ---- 4 ------------------------------------------------------------------------------------------
for opts in (CLOCK, []):
    run([TALLY, "collect", "-d", d, "-O", "one"] + opts + [wl, "1", "0"], expect=0)
    end = [f for k, f in log_records(os.path.join(d, "one.tally"), "sample")
           if f.get("reason") == "end"]
    flt = int(end[-1].get("minflt", 0)) if end else -1
    # (/bin/true alone: about 50; the collector's libraries, files and thread: about 250 more;
    # before, 2,900 with the registry's 9 MB walked at the end)
    check(0 < flt < 1000, "a one-thread run under tally collect %s faulted in %d pages (end sample "
          "%r)" % (" ".join(opts) or "(default)", flt, end[-1] if end else None))

# ---- 5 ------------------------------------------------------------------------------------------
# threads that install an alternate signal stack of their own (and some cancelled): a thread's
# kit, whose alternate stack the program replaced, goes back to the pool once the thread ended.
# The address space after 3,000 such threads, less that after the first 200, against the bare
# program's (it kept 84 KiB per thread: 250 MB after 3,000 threads). Cancellation acts where the
# program's code has a cancellation point, never inside the collector's: a thread cancelled at
# once runs its start routine (none of 300 did: the collector's log write at its start acted
# on the cancellation), a thread that only allocates and frees is never cancelled (heap
# tracing's chunk reservation, a pwritev, acted on it inside malloc).
churn = os.path.join(WL, "wl_thread_churn")


def churn_run(cmd, what):
    # one malloc arena: glibc reserves 64 MiB of address space for each arena that contention
    # between threads makes it create, whenever that happens (66 MB of noise between two sizes)
    p = run(cmd + [churn, "3000"], expect=0, env=dict(os.environ, MALLOC_ARENA_MAX="1"))
    m = re.search(r"threads=3000 vmsize_first_kb=(\d+) vmsize_last_kb=(\d+)", p.stdout)
    check(m is not None, "%s: thread_churn printed no sizes: %r" % (what, p.stdout[-300:]))
    check("waiters=300 ran=300" in p.stdout, "%s: cancelled threads did not all run their start "
          "routine: %r" % (what, p.stdout[-300:]))
    check("allocator returned" in p.stdout, "%s: a thread without a cancellation point was "
          "cancelled: %r" % (what, p.stdout[-300:]))
    return int(m.group(2)) - int(m.group(1)) if m else 0


bare_growth = churn_run([], "bare")
for opts in (CLOCK, [], ["-H", "on", "-i", "on", "-s", "all"]):
    what = "tally collect %s" % (" ".join(opts) or "(default)")
    grown = churn_run([TALLY, "collect", "-d", d, "-O", "churn"] + opts, what)
    check(grown - bare_growth < 16384, "%s: 3,000 threads with alternate stacks of their own grew "
          "the address space by %d KiB (bare %d KiB): their kits were not reused" %
          (what, grown, bare_growth))

done(d)
