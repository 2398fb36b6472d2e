"""Heap tracing's counts stay exact at volume: wl_heap_exact makes 9 N allocations of known sizes
through malloc, calloc, realloc, reallocarray, memalign, posix_memalign, aligned_alloc and valloc
(one thread's blocks freed by another) and frees them in a known pattern, so that the records
fill many chunks of the events file and most are written by the inline fast path. Every
function's allocations, bytes, leaks and bytes leaked are exact; two callers that call one
allocating function at the same stack pointer keep their own stacks; nothing is dropped."""
import os
from common import *

d = workdir("heap_exact")
N = 20000
prog = os.path.join(WL, "wl_heap_exact")


def SZ(i):
    return 1 + (i * 37) % 1000


def figures(sizes, leak_step, leak_size=None):
    """(allocations, bytes, leaks, bytes leaked) of N rounds; sizes(i): the sizes allocated in
    round i; leak_size(i): the size of the block round i keeps when i % leak_step == 0."""
    allocs = nbytes = leaks = leaked = 0
    for i in range(N):
        s = sizes(i)
        allocs += len(s)
        nbytes += sum(s)
        if i % leak_step == 0:
            leaks += 1
            leaked += leak_size(i) if leak_size else s[-1]
    return (allocs, nbytes, leaks, leaked)


via_a = figures(lambda i: [SZ(i)], 3)
via_b = figures(lambda i: [SZ(i)], 5)
KNOWN = {
    "via_a": via_a,
    "via_b": via_b,
    "alloc_site": tuple(a + b for a, b in zip(via_a, via_b)),
    "callocs": figures(lambda i: [2 * SZ(i)], 4),
    "realloc_pairs": figures(lambda i: [SZ(i), SZ(i) + 100], 2),
    "reallocarrays": figures(lambda i: [SZ(i), 2 * (SZ(i) + 10)], 6),
    "aligned": figures(lambda i: [SZ(i)], 7),
    "thread_allocs": figures(lambda i: [SZ(i)], 9),
}

exp = collect(d, [prog, str(N)], opts=["-H", "on", "-p", "off"], name="exact")
docs = print_json(exp, "-metrics",
                  "i.heapalloccnt:i.heapallocbytes:i.heapleakcnt:i.heapleakbytes:name",
                  "-functions")
f = rows_by_name(docs[0])
for fn, want in KNOWN.items():
    if not check(fn in f, "%s missing from -functions" % fn):
        continue
    got = (f[fn]["i.heapalloccnt"], f[fn]["i.heapallocbytes"], f[fn]["i.heapleakcnt"],
           f[fn]["i.heapleakbytes"])
    check(got == want, "%s: (allocs, bytes, leaks, bytes leaked) %r, expected %r" %
          (fn, got, want))

# the collector's own work at a thread's start (its stack bounds: pthread_getattr_np allocates)
# is not the program's
for fn in f:
    if fn.startswith("pthread_getattr_np"):
        check(f[fn]["i.heapalloccnt"] == 0, "%s: %d allocations charged to the program (the "
              "collector's thread start)" % (fn, f[fn]["i.heapalloccnt"]))

# each caller of alloc_site has its own stacks: its leaks are its own
docs = print_json(exp, "-leaks")
found = {}
for e in docs[0]["entries"]:
    st = [fr["function"] for fr in e["stack"]]
    if "alloc_site" in st[:2]:
        caller = st[st.index("alloc_site") + 1] if st.index("alloc_site") + 1 < len(st) else "?"
        n, b = found.get(caller, (0, 0))
        found[caller] = (n + e["instances"], b + e["bytes"])
want = {"via_a": via_a[2:], "via_b": via_b[2:]}
check(found == want, "-leaks of alloc_site by caller: %r, expected %r" % (found, want))

for _, st in log_records(exp, "stats"):
    check(int(st.get("trace_dropped", 0)) == 0, "traced events dropped: %r" % st)
    check(int(st.get("trace_unwind_failures", 0)) == 0, "unwind failures: %r" % st)
# the records span many chunks (64 KiB each by default), so chunk changes are exercised
ev = [os.path.join(exp, x) for x in os.listdir(exp) if x.startswith("events")]
check(sum(os.path.getsize(x) for x in ev) > 20 * 65536,
      "events files: %d bytes, expected records in more than 20 chunks" %
      sum(os.path.getsize(x) for x in ev))
done(d)
