"""Dataspace profiling of the thread-locals of a library loaded by dlopen (dynamic TLS).

wl_dsdtls dlopens libwl_dsdtls_lib.so, a library without static TLS: the dynamic linker gives
each thread its block of the library's thread-locals on the thread's first use, at no fixed place
under the thread pointer (the load record has no tls offset). The main thread, then two more,
each make N pages of their own instance of dtls_pages fresh and write one byte of each: with
+page-faults,1 every fault has its exact address. The collector records, per thread, where its
block is (a TLS_BLOCK record, read from the thread's dynamic thread vector at its first sample
with a memory reference), so each of the N * 3 faults must be named {array+char dtls_pages}, of
scope thread-local, exactly, with the trigger in dtls_touch."""
import os
from common import *

d = workdir("dataspace_dtls")
prog = os.path.join(WL, "wl_dsdtls")
lib = os.path.join(WL, "libwl_dsdtls_lib.so")
N, THREADS = 20, 2

exp = collect(d, [prog, lib, str(N), str(THREADS)], ["-h", "+page-faults,1"], name="dtls")
loads = {os.path.basename(f["path"]): f for _, f in log_records(exp, "load")}
check("libwl_dsdtls_lib.so" in loads and "tls" not in loads["libwl_dsdtls_lib.so"],
      "the dlopen'ed library's load record: %r (it must have no static TLS block)" %
      loads.get("libwl_dsdtls_lib.so"))

rows = {r["name"]: r for r in print_json(exp, "-data_objects")[-1]["objects"]}
want = N * (THREADS + 1)
for name in ("{array+char dtls_pages}", "{array+char dtls_pages}.{char -}"):
    got = rows.get(name, {}).get("samples")
    check(got == want, "%s: %r faults, want exactly %d (%d pages in %d threads)" %
          (name, got, want, N, THREADS + 1))
r = rows.get("{array+char dtls_pages}", {})
check(r.get("scope") == "thread-local" and r.get("via") == "dtls_pages",
      "dtls_pages: scope %r via %r" % (r.get("scope"), r.get("via")))
single = print_json(exp, "-data_single", "{array+char dtls_pages}.{char -}")[-1]
trig = single.get("triggers", [])
check(trig and all(t["function"].startswith("dtls_touch+") for t in trig),
      "the faults' trigger is not in dtls_touch: %r" % trig)
p = run([TALLY, "check", exp], expect=0)
done(d)
