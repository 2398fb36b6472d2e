"""Memory objects and false sharing, from exact data addresses (data breakpoints).

wl_dsshare N: two threads write N times each to the two members of fs_pair (the same cache
line, different bytes) and to the global both (the same bytes); then one thread writes solo N
times. A breakpoint on each ('+': with its address) gives every write. -false_sharing must list
exactly fs_pair's line, with both threads and the bytes each wrote; -memobj cacheline must list
the three lines with their threads and writes, both's and solo's not as false sharing."""
import os
import re
from common import *

d = workdir("dataspace_share")
N = 1000
bps = "+mem:fs_pair/8:w,1,+mem:fs_pair+8/8:w,1,+mem:both:w,1,+mem:solo:w,1"
exp = collect(d, [os.path.join(WL, "wl_dsshare"), str(N)], ["-p", "off", "-h", bps])
tids = sorted(int(f["tid"]) for _, f in log_records(exp, "thread"))
check(len(tids) == 2, "two threads expected: %r" % tids)

fs = print_json(exp, "-false_sharing")[-1]["objects"]
if check(len(fs) == 1, "-false_sharing: want exactly fs_pair's line, got %r" % fs):
    x = fs[0]
    check(x["threads"] == 2 and x["writes"] == 2 * N and x["reads"] == 0 and x["false_sharing"],
          "fs_pair's line: %r" % x)
    check(x["data_object"] in ("{structure:pair}.{long_int a}", "{structure:pair}.{long_int b}"),
          "fs_pair's line: data object %r" % x["data_object"])
    got = sorted((t["thread"], t["touched"], t["written"]) for t in x.get("thread_bytes", []))
    check(sorted(t for t, _, _ in got) == tids and
          sorted((tb, wb) for _, tb, wb in got) == [("+0-7", "+0-7"), ("+8-15", "+8-15")],
          "fs_pair's line: the bytes of each thread %r" % got)
    # the text view says it too
    p = run([TALLY, "print", "-false_sharing", exp], expect=0)
    for t, tb, wb in got:
        check("thread %d: bytes %s, written %s\n" % (t, tb, wb) in p.stdout,
              "-false_sharing text: no line for thread %d:\n%s" % (t, p.stdout))

lines = print_json(exp, "-memobj", "cacheline")[-1]["objects"]
by_obj = {x["data_object"]: x for x in lines}
for name, threads, fshare in (("{volatile+long_int both}", 2, False),
                              ("{volatile+long_int solo}", 1, False)):
    x = by_obj.get(name)
    if check(x, "-memobj cacheline: no line of %s: %r" % (name, list(by_obj))):
        check(x["threads"] == threads and x["writes"] == threads * N and
              x["false_sharing"] == fshare, "%s's line: %r" % (name, x))
check(len(lines) == 3, "-memobj cacheline: want 3 lines, got %d" % len(lines))
check(all(int(x["address"], 16) % 64 == 0 for x in lines), "lines not aligned: %r" % lines)
done(d)
