"""Dataspace profiling of a shared library's thread-locals.

wl_dstls makes N pages of libwl_dstls_lib.so's __thread array tls_pages fresh again in each of
its threads (the main thread and two more) and writes one byte of each: with +page-faults,1 every
fault has its exact address and the registers (the thread pointer among them). The library reaches
the array through __tls_get_addr's result, so only the address tells it is thread-local data: it
lies in the library's static TLS block of the faulting thread (the load record's tls, under that
thread's thread pointer). Each of the N * 3 faults must be named {array+char tls_pages}, of scope
thread-local, exactly; the log records where each object's static TLS block lies."""
import os
from common import *

d = workdir("dataspace_tls")
prog = os.path.join(WL, "wl_dstls")
N, THREADS = 20, 2

exp = collect(d, [prog, str(N), str(THREADS)], ["-h", "+page-faults,1"], name="tls")
loads = {os.path.basename(f["path"]): f for _, f in log_records(exp, "load")}
lib = loads.get("libwl_dstls_lib.so", {})
check(int(lib.get("tls", "0"), 16) > 0, "the library's load record has no tls offset: %r" % lib)
check("tls" not in loads.get("[vdso]", {}), "the vDSO has a tls offset: %r" % loads.get("[vdso]"))

doc = print_json(exp, "-data_objects")[-1]
rows = {r["name"]: r for r in doc["objects"]}
want = N * (THREADS + 1)
for name in ("{array+char tls_pages}", "{array+char tls_pages}.{char -}"):
    got = rows.get(name, {}).get("samples")
    check(got == want, "%s: %r faults, want exactly %d (%d pages in %d threads)" %
          (name, got, want, N, THREADS + 1))
r = rows.get("{array+char tls_pages}", {})
check(r.get("scope") == "thread-local" and r.get("via") == "tls_pages",
      "tls_pages: scope %r via %r" % (r.get("scope"), r.get("via")))
single = print_json(exp, "-data_single", "{array+char tls_pages}.{char -}")[-1]
trig = single.get("triggers", [])
check(trig and all(t["function"].startswith("dstls_touch+") for t in trig),
      "the faults' trigger is not in dstls_touch: %r" % trig)
done(d)
