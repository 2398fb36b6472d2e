"""Thread states with many mostly idle threads (tests/workloads/idle_threads.c).

1. Blocked stacks are reused only when they are the same: each thread alternates between two
   functions that sleep at the same depth (same pc and sp where it blocks, different return
   addresses above), waking every millisecond. Each function's Sleep Time has its share of the
   thread's sleep by the program's own clock, and the sampler reused walks (stats states_reused).
2. Many threads: the sampler keeps its looks within its budget by looking less often, and says so
   (a warning that tally collect prints, the stats record's states_stretched and
   states_period_max); no thread is charged more sleep than its wall time, and the threads
   together most of it.

Times are compared with the run's own truth (the program prints each thread's wall time in its
loop and in each function), one-sided where load can only move them one way."""
import os
import re
from common import *

d = workdir("states_scale")
wl = os.path.join(WL, "wl_idle_threads")


def truth(stderr):
    """{tid: (wall, a, b)} in seconds, as the program measured them."""
    out = {}
    for m in re.finditer(r"^thread tid=(\d+) wall_ns=(\d+) a_ns=(\d+) b_ns=(\d+)$", stderr, re.M):
        out[int(m.group(1))] = tuple(int(m.group(i)) / 1e9 for i in (2, 3, 4))
    return out


def stats(exp):
    recs = log_records(exp, "stats")
    return recs[-1][1] if recs else {}


# ---- 1: alternating stacks at the same pc and sp -------------------------------------------------
p = run([TALLY, "collect", "-d", d, "-o", "alt", "-p", "off", "-S", "off", wl, "8", "1.5", "1"],
        expect=0)
exp = os.path.join(d, "alt.tally")
t = truth(p.stderr)
check(len(t) == 8, "idle_threads printed %d threads: %r" % (len(t), p.stderr[-500:]))
a_true = sum(v[1] for v in t.values())
b_true = sum(v[2] for v in t.values())
rows = rows_by_name(print_json(exp, "-metrics", "i.sleep:name", "-functions")[-1])
a = rows.get("nap_a", {}).get("i.sleep", 0.0)
b = rows.get("nap_b", {}).get("i.sleep", 0.0)
# each function is half of the naps: a look finds a thread in either with even odds, so each
# gets about half of the sleep charged; a reused stack that was not the same would give one of
# them (nearly) everything
check(a + b > 0.5 * (a_true + b_true),
      "Sleep Time of nap_a + nap_b %.3f s, the program slept %.3f s in them" %
      (a + b, a_true + b_true))
share, share_true = a / max(a + b, 1e-9), a_true / max(a_true + b_true, 1e-9)
check(abs(share - share_true) < 0.2,
      "nap_a's share of the sleep: %.2f recorded, %.2f by the program's clock (nap_a %.3f s, "
      "nap_b %.3f s)" % (share, share_true, a, b))
st = stats(exp)
check("states_reused" in st and int(st["states_reused"]) > 0,
      "no blocked stack was reused (stats %r)" % st)
check(int(st.get("states_unwinds", 0)) > 0, "no blocked stack was unwound (stats %r)" % st)

# ---- 2: many threads: looks within budget, said, and still exact --------------------------------
N, SECS = 300, 3.0
p = run([TALLY, "collect", "-d", d, "-o", "many", "-p", "off", "-S", "off", wl, str(N), str(SECS),
         "20"], expect=0)
exp = os.path.join(d, "many.tally")
t = truth(p.stderr)
check(len(t) == N, "idle_threads printed %d threads of %d" % (len(t), N))
st = stats(exp)
stretched = int(st.get("states_stretched", 0))
period = int(st.get("states_period_max", 0)) / 1e9
check(stretched > 0 and period > 0.01,
      "%d threads: the looks were not made less often (stats %r)" % (N, st))
# the budget applies from the second look that can be measured (threads seen before): the looks
# made at the state period are the first two, not the sixteen of a window of measurements
looks = int(st.get("states_looks", 0))
check(looks - stretched <= 6,
      "%d threads: %d of %d looks were made before the sampler kept to its budget (stats %r)"
      % (N, looks - stretched, looks, st))
check("looked at less often" in p.stderr,
      "tally collect did not say that states were looked at less often: %r" % p.stderr[-800:])
docs = print_json(exp, "-thread_list", "-metrics", "e.sleep:name", "-functions")
threads = {th["tid"]: th for th in docs[0]["threads"]} if docs and "threads" in docs[0] else {}
# all threads: their sleep is at most their wall time in the loop (and a little for each start
# and end, outside the loop). It is less by the known loss (docs/ARCHITECTURE.md): a thread
# found running at a look (here: woken, waiting for a CPU) is not charged the off-CPU time since
# the previous look, the first look at a new thread only takes its baselines, and the end of its
# last period is not looked at; with looks a second apart and the machine loaded, that was 36% of
# the sleep (ctest -j3 at load average 20), so half of it is the bound: a look that charged
# nothing, or only a period's worth, would be far below
total_sleep = rows_by_name(docs[-1])["<Total>"]["e.sleep"]
wall = sum(v[0] for v in t.values())
at_most(total_sleep, wall + N * 0.05, 0.02, "%d threads: Sleep Time vs their walls" % N)
at_least(total_sleep, wall, 0.5, "%d threads: Sleep Time vs their walls" % N)
done(d)
