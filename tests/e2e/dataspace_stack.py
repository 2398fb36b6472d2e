"""Dataspace profiling of stack addresses the sample's own frame does not hold.

wl_dsstack fp N: fp_owner, a frame-pointer frame (its CFA is rbp + 16), passes its stack array
fp_pages to touch_pages, a leaf that leaves rbp alone, which touches N fresh pages of it: each
page fault's address is above the leaf's frame, in a caller whose frame is placed from the
sample's rbp. Every one of the N faults must be named {volatile+array+volatile+char fp_pages},
scope local, exactly.

wl_dsstack other N: a thread hands its stack array to a second thread, which touches N fresh
pages of it while the owner waits in pthread_join: each address is in another thread's stack
(the `thread` records give each thread's stack bounds). Every one of the N faults must be under
<Stack>, in the owning thread's row with its reason, exactly."""
import os
from common import *

d = workdir("dataspace_stack")
prog = os.path.join(WL, "wl_dsstack")
N = 40

exp = collect(d, [prog, "fp", str(N)], ["-h", "+page-faults,1"], name="fp")
rows = {r["name"]: r for r in print_json(exp, "-data_objects")[-1]["objects"]}
arr = "{volatile+array+volatile+char fp_pages}"
for name in (arr, arr + ".{volatile+char -}"):
    got = rows.get(name, {}).get("samples")
    check(got == N, "%s: %r faults, want exactly %d (a frame-pointer caller's array)" %
          (name, got, N))
check(rows.get(arr, {}).get("scope") == "local", "fp_pages: scope %r" % rows.get(arr))
single = print_json(exp, "-data_single", arr + ".{volatile+char -}")[-1]
check(single.get("triggers") and all(t["function"].startswith("touch_pages+")
                                     for t in single["triggers"]),
      "the faults' trigger is not in touch_pages: %r" % single.get("triggers"))

exp = collect(d, [prog, "other", str(N)], ["-h", "+page-faults,1"], name="other")
threads = [f for _, f in log_records(exp, "thread")]
check(len(threads) == 3 and all(int(f.get("stack_hi", "0"), 16) > int(f.get("stack_lo", "0"), 16)
                                for f in threads),
      "thread records without their stack bounds: %r" % threads)
owner = threads[1]["tid"] if len(threads) == 3 else "?"
rows = {r["name"]: r for r in print_json(exp, "-data_objects")[-1]["objects"]}
row = "<Stack>.(thread %s, another thread's stack: its frames at the time are not recorded)" % owner
got = rows.get(row, {}).get("samples")
check(got == N, "%s: %r faults, want exactly %d; stack rows: %r" %
      (row, got, N, [(n, r["samples"]) for n, r in rows.items() if "Stack" in n]))
check(rows.get(row, {}).get("scope") == "stack", "the owner's row: scope %r" % rows.get(row))
inner = sum(r["samples"] for n, r in rows.items() if n.startswith("<Stack>.") and n.count(".(") == 1
            and n.endswith(")"))
check(rows.get("<Stack>", {}).get("samples") == inner,
      "<Stack> %r is not the sum of its threads' rows %d" % (rows.get("<Stack>"), inner))
done(d)
