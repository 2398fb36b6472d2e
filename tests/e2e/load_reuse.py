"""A library unloaded with dlclose and another one loaded at the same addresses: each one's
functions and object get their own time. wl_reuse runs reuse_a_work in libwl_reuse_a.so, closes
it, then reuse_b_work in libwl_reuse_b.so (same size, so the loader maps it where A was) and
prints the CPU time each really took: the truth the profile is compared with. Skipped (77) when
the loader put B elsewhere three times: then there is no reuse to test (skip() in common.py)."""
import re
from common import *

LIB_A = os.path.join(WL, "libwl_reuse_a.so")
LIB_B = os.path.join(WL, "libwl_reuse_b.so")
d = workdir("load_reuse")

exp = truth = None
for attempt in range(3):
    p = run([TALLY, "collect", "-d", d, "-o", "reuse%d" % attempt, os.path.join(WL, "wl_reuse"),
             LIB_A, "0.4", LIB_B, "0.8"], expect=0)
    m = re.search(r"a=([\d.]+) b=([\d.]+) same=(\d)", p.stdout)
    if not check(m, "wl_reuse said: %r %r" % (p.stdout, p.stderr)):
        done()
    e = os.path.join(d, "reuse%d.tally" % attempt)
    loads = {os.path.basename(f["path"]): f for k, f in log_records(e, "load")
             if "reuse" in f["path"]}
    a, b = loads.get("libwl_reuse_a.so"), loads.get("libwl_reuse_b.so")
    if m.group(3) == "1" and a and b and int(a["lo"], 16) < int(b["hi"], 16) and \
            int(b["lo"], 16) < int(a["hi"], 16):
        exp, truth = e, (float(m.group(1)), float(m.group(2)))
        check(a["buildid"] != b["buildid"], "the two libraries have one build-id")
        check(any(f.get("id") == a["id"] for k, f in log_records(e, "unload")),
              "A's unload is not recorded")
        break
if not exp:
    skip("the loader never mapped libwl_reuse_b.so where libwl_reuse_a.so was")

funcs = rows_by_name(print_json(exp, "-metrics", "e.totalcpu:name", "-functions")[0])
objs = rows_by_name(print_json(exp, "-metrics", "e.totalcpu:name", "-load_objects")[0])
ta, tb = truth
# Sampled CPU time is compared with what each function measured itself (its own thread CPU
# clock): samples can be missed under load but not invented, and the function's time includes
# its clock_gettime calls (the vDSO's), so 25% below, 10% above. Before generations B's time
# was A's: reuse_a_work ~ ta + tb, reuse_b_work absent.
for name, t in (("reuse_a_work", ta), ("reuse_b_work", tb)):
    got = funcs.get(name, {}).get("e.totalcpu", 0.0)
    bounded(got, t, 0.25, 0.10, "%s exclusive CPU" % name)
for name, t in (("libwl_reuse_a.so", ta), ("libwl_reuse_b.so", tb)):
    got = objs.get(name, {}).get("e.totalcpu", 0.0)
    bounded(got, t, 0.25, 0.10, "%s exclusive CPU" % name)
check(not any(n.startswith("<static>@") or n.startswith("<unknown>") for n in funcs
              if funcs[n].get("e.totalcpu", 0) > 0.05),
      "unnamed code with time: %r" % sorted(funcs))
done(d)
