"""What `tally collect` itself does around a short program, counted rather than timed (issue 17:
its start and its archive were 11 ms of a 1 s run's CPU). Under strace, the driver process of
`tally collect -p on /bin/true`:
- opens none of the libraries it loads at their first use (capstone, libpfm4, libmicrohttpd with
  GnuTLS, libstdc++): a collection needs none of them;
- looks for no debug file: the archive references the system's libraries and tally's own by path
  and build-id, and reads only their build-id notes, not their symbol tables (it read every
  library's symbols and its separate debug file, libc6-dbg's 4 MB for libc);
and the experiment still references every load object but the vDSO by build-id."""
import re
import shutil
from common import *

if not shutil.which("strace"):
    skip("strace is not installed (scripts/bootstrap installs it)")
d = workdir("collect_cost")
trace = os.path.join(d, "trace")
exp = os.path.join(d, "true.tally")
p = run(["strace", "-f", "-qq", "-e", "trace=open,openat", "-o", trace,
         TALLY, "collect", "-o", exp, "-p", "on", "/bin/true"], expect=0)
m = re.search(r"(\d+) librar(?:y|ies) of the system's and tally's own referenced", p.stderr)
check(m, "collect's archive summary: %r" % p.stderr)
lines = open(trace).read().splitlines()
driver = lines[0].split()[0] if lines else ""
opened = [re.search(r'"([^"]*)"', l).group(1) for l in lines
          if l.split()[0] == driver and re.search(r'"([^"]*)"', l)]
check(opened, "no file opened by the driver in the trace: %r" % lines[:5])
for lib in ("libcapstone", "libpfm", "libmicrohttpd", "libgnutls", "libstdc++"):
    check(not [f for f in opened if lib in os.path.basename(f)],
          "the driver opened %s: %r" % (lib, [f for f in opened if lib in f]))
debug = [f for f in opened if f.endswith(".debug") or "/usr/lib/debug/" in f]
check(not debug, "the driver looked for debug files: %r" % debug[:8])
loads = [f for _, f in log_records(exp, "load") if f.get("path") != "[vdso]"]
check(m and int(m.group(1)) == len(loads),
      "%s referenced for %d load objects: %r" % (m.group(1) if m else "none", len(loads),
                                                 [f.get("path") for f in loads]))
done(d)
