"""Heap tracing's memo of walks keeps the stacks of several callers of one allocating function:
wl_memo_callers calls alloc_site from four callers at the same stack depth (the same return
address and stack pointer at malloc; their stacks differ above), in a pseudo-random order. Each
caller's allocations are exact, and the call stacks are walked a few times in all (the stats
record's trace_walks), not at most calls: with two ways per memo set, four such stacks were
walked again at about half of the calls."""
import os
from common import *

d = workdir("heap_memo")
N = 40000
prog = os.path.join(WL, "wl_memo_callers")

want = [0, 0, 0, 0]
r = 1
for i in range(N):
    r = (r * 1103515245 + 12345) & 0xffffffff
    want[(r >> 16) % 4] += 1

exp = collect(d, [prog, str(N)], opts=["-H", "on", "-p", "off", "-S", "off", "--states=off"],
              name="memo")
docs = print_json(exp, "-metrics", "i.heapalloccnt:name", "-functions")
f = rows_by_name(docs[0])
for k in range(4):
    fn = "via_%d" % k
    got = f[fn]["i.heapalloccnt"] if fn in f else None
    check(got == want[k], "%s: %r allocations, expected %d" % (fn, got, want[k]))
site = [f[fn]["i.heapalloccnt"] for fn in f if fn.startswith("alloc_site")]  # (.constprop)
check(site == [N], "alloc_site: %r allocations, expected %d" % (site, N))

stats = [st for _, st in log_records(exp, "stats")]
check(len(stats) == 1, "one stats record expected, found %d" % len(stats))
for st in stats:
    walks = int(st.get("trace_walks", -1))
    # the four stacks, and the program's few other allocations (its start, printf)
    check(0 <= walks <= 40, "trace_walks=%d for %d allocations from four stacks at one call "
          "site: the memo does not keep them" % (walks, N))
    check(int(st.get("trace_dropped", 0)) == 0, "traced events dropped: %r" % st)
done(d)
