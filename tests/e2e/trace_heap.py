"""Heap tracing (collect -H on) on a program with known allocations, frees, reallocs, aligned
allocations, mappings, leaks and a thread whose blocks another thread frees: counts and bytes per
function exact, each leak attributed to its call site, the peak and the temporary allocations; and
programs that fork, exec, dlopen and start threads behave the same under every tracer."""
import os
from common import *

d = workdir("trace_heap")
prog = os.path.join(WL, "wl_trace_heap")

# function: (allocations, bytes, leaks, bytes leaked)
KNOWN = {
    "freed_mallocs": (100, 100000, 0, 0),
    "leaky_mallocs": (10, 1230, 10, 1230),
    "callocs": (5, 1000, 3, 600),
    "reallocs": (5, 1150, 1, 500),
    "array_allocs": (1, 80, 0, 0),
    "aligned_allocs": (6, 2636, 1, 512),
    "mappings": (2, 24576, 1, 12288),
    "thread_allocs": (27, 1819, 7, 539),
}
# the leaks by call site: (allocating function, caller) -> (instances, bytes)
LEAKS = {
    ("malloc", "leaky_mallocs"): (10, 1230),
    ("calloc", "callocs"): (3, 600),
    ("realloc", "reallocs"): (1, 500),
    ("aligned_alloc", "aligned_allocs"): (1, 512),
    ("mmap", "mappings"): (1, 12288),
    ("malloc", "thread_allocs"): (7, 539),
}

def check_functions(exp, what):
    """The exact counts and bytes of every function of KNOWN."""
    docs = print_json(exp, "-metrics",
                      "i.heapalloccnt:i.heapallocbytes:i.heapleakcnt:i.heapleakbytes:name",
                      "-functions")
    f = rows_by_name(docs[0])
    for fn, want in KNOWN.items():
        if not check(fn in f, "%s: %s missing from -functions" % (what, fn)):
            continue
        got = (f[fn]["i.heapalloccnt"], f[fn]["i.heapallocbytes"], f[fn]["i.heapleakcnt"],
               f[fn]["i.heapleakbytes"])
        check(got == want, "%s: %s: (allocs, bytes, leaks, bytes leaked) %r, expected %r" %
              (what, fn, got, want))


exp = collect(d, [prog], opts=["-H", "on", "-p", "off"], name="heap")
check_functions(exp, "glibc malloc")

# -leaks: each leak at its call site, exactly; nothing from the functions that freed everything
docs = print_json(exp, "-leaks")
found = {}
for e in docs[0]["entries"]:
    st = [fr["function"] for fr in e["stack"]]
    if len(st) >= 2 and st[1] in KNOWN:
        key = (st[0], st[1])
        n, b = found.get(key, (0, 0))
        found[key] = (n + e["instances"], b + e["bytes"])
check(found == LEAKS, "-leaks by call site: %r, expected %r" % (found, LEAKS))
check(docs[0]["instances"] >= sum(n for n, _ in LEAKS.values()), "-leaks: total instances")
p = run([TALLY, "print", "-leaks", exp], expect=0)
check(p.stdout.startswith("Summary Results: Distinct Leaks = "), "-leaks text: %r" %
      p.stdout[:200])

# -allocs: the largest allocating stack first
docs = print_json(exp, "-allocs")
entries = docs[0]["entries"]
check(entries and [fr["function"] for fr in entries[0]["stack"][:2]] == ["malloc", "freed_mallocs"]
      and entries[0]["instances"] == 100 and entries[0]["bytes"] == 100000,
      "-allocs: first entry %r" % (entries[:1],))
check(all(entries[i]["bytes"] >= entries[i + 1]["bytes"] for i in range(len(entries) - 1)),
      "-allocs: not largest first")

# -heap: the peak is the 100 blocks of freed_mallocs; temporaries counted
docs = print_json(exp, "-heap_peak")
h = docs[0]["processes"][0]
check(h["peak_bytes"] >= 100000 and h["peak_bytes"] < 110000, "-heap: peak %r" % h["peak_bytes"])
top = h["at_peak"][0] if h["at_peak"] else None
check(top and [fr["function"] for fr in top["stack"][:2]] == ["malloc", "freed_mallocs"] and
      top["blocks"] == 100 and top["bytes"] == 100000, "-heap: at the peak %r" % (top,))
# freed right after allocation: the last of freed_mallocs, the four reallocated or freed blocks
# of reallocs, array_allocs', the last aligned one, the first mapping
check(h["temporary"] >= 8, "-heap: temporary allocations %r" % h["temporary"])
check(h["leaked_bytes"] >= sum(b for _, b in LEAKS.values()), "-heap: leaked bytes")

# a thread selection does not change which blocks leak, only whose leaks are shown
docs = print_json(exp, "-thread_list")
threads = docs[0]["threads"]
worker = [t["number"] for t in threads if t["how"] == "pthread_create"]
if check(len(worker) == 1, "threads: %r" % threads):
    docs = print_json(exp, "-thread_select", str(worker[0]), "-metrics",
                      "i.heapleakcnt:i.heapalloccnt:name", "-functions")
    g = rows_by_name(docs[-1])
    check(g.get("thread_allocs", {}).get("i.heapleakcnt") == 7 and "freed_mallocs" not in g,
          "thread selection: %r" % g.get("thread_allocs"))

# default metrics with heap data and no clock data: the heap ones, sorted by bytes leaked
docs = print_json(exp, "-functions")
check([m["name"] for m in docs[0]["metrics"]][:2] == ["i.heapleakbytes", "i.heapleakcnt"],
      "default metrics: %r" % docs[0]["metrics"])

# ---- the program's own allocator: the malloc it uses is the one traced ---------------------------
own = collect(d, [os.path.join(WL, "wl_trace_heap_own")], opts=["-H", "on", "-p", "off"],
              name="own")
p = run([os.path.join(WL, "wl_trace_heap_own")], expect=0)
check("own allocator: used" in p.stdout, "the own allocator was not used: %r" % p.stdout)
check_functions(own, "own allocator")
# heap tracing off (any collection): every function of the malloc family is a tail call to the
# real one, no frame of the collector's between the program and its allocator
for opts in (["-p", "on"], ["-p", "hi", "-s", "on", "-i", "on"]):
    p = run([TALLY, "collect", "-d", d, "-O", "direct"] + opts +
            [os.path.join(WL, "wl_trace_heap_own"), "direct"], expect=0)
    check("direct calls: all" in p.stdout,
          "with %s, the collector's wrappers stay between the program and its allocator: %r" %
          (" ".join(opts), p.stdout))
# jemalloc and tcmalloc preloaded after the collector (scripts/bootstrap installs them)
for lib in ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
            "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"):
    if not os.path.exists(lib):
        print("note: %s is not installed: not tested" % lib)
        continue
    env = dict(os.environ, LD_PRELOAD=lib)
    name = os.path.basename(lib).split(".")[0]
    run([TALLY, "collect", "-d", d, "-o", name, "-H", "on", "-p", "off", prog], expect=0, env=env)
    e = os.path.join(d, name + ".tally")
    check(any(f.get("path") == lib for _, f in log_records(e, "load")), "%s not loaded" % lib)
    check_functions(e, name)

# ---- programs that fork, exec, dlopen and start threads: unchanged under every tracer ----------
for name, args in (("forkexec", []), ("dlopen_lib", ["2", "20"]), ("threads4", ["0.2"])):
    cmd = [os.path.join(WL, "wl_" + name)] + args
    bare = run(cmd, timeout=60)
    p = run([TALLY, "collect", "-d", d, "-o", name, "-H", "on", "-s", "all", "-i", "on"] + cmd,
            timeout=60)
    check(p.returncode == bare.returncode, "%s: exit %d under tracing, %d bare" %
          (name, p.returncode, bare.returncode))
    check(p.stdout == bare.stdout, "%s: output differs under tracing: %r vs %r" %
          (name, p.stdout[-300:], bare.stdout[-300:]))
    e = os.path.join(d, name + ".tally")
    for _, st in log_records(e, "stats"):
        check(int(st.get("trace_dropped", 0)) == 0, "%s: traced events dropped %r" % (name, st))
        check(int(st.get("trace_unwind_failures", 0)) == 0, "%s: unwind failures %r" % (name, st))
    docs = print_json(e, "-heap_peak")
    check(len(docs[0]["processes"]) >= 1, "%s: no heap data" % name)
done(d)
