"""A library loaded by a relative path (dlopen("./libwl_reuse_a.so") run from its directory) is
found again when the experiment is analysed from another directory: the path is resolved against
the working directory recorded with the load, not tally's, and no 'gone' note appears."""
from common import *

d = workdir("load_relative")
exp = os.path.join(d, "rel.tally")
p = subprocess.run([os.path.abspath(TALLY), "collect", "-d", d, "-o", "rel", "-A", "off",
                    os.path.abspath(os.path.join(WL, "wl_reuse")), "./libwl_reuse_a.so", "0.3",
                    "./libwl_reuse_b.so", "0.3"], cwd=WL, capture_output=True, text=True,
                   timeout=240)
check(p.returncode == 0, "collect from %s: %r %r" % (WL, p.stdout, p.stderr))
loads = [f for k, f in log_records(exp, "load") if "reuse_a" in f["path"]]
check(loads and loads[0]["path"] == "./libwl_reuse_a.so" and
      loads[0].get("cwd") == os.path.abspath(WL),
      "the load record keeps the relative path and its directory: %r" % loads)
elsewhere = os.path.join(d, "elsewhere")
os.makedirs(elsewhere)
p = subprocess.run([os.path.abspath(TALLY), "print", "--json", "-metrics", "e.totalcpu:name",
                    "-functions", exp], cwd=elsewhere, capture_output=True, text=True, timeout=240)
check(p.returncode == 0, "print from elsewhere: %r" % p.stderr)
check("gone" not in p.stderr and "no longer exists" not in p.stderr,
      "print from elsewhere says the library is gone: %r" % p.stderr)
funcs = rows_by_name(json.loads(p.stdout.splitlines()[0])) if p.returncode == 0 else {}
for name in ("reuse_a_work", "reuse_b_work"):
    check(funcs.get(name, {}).get("e.totalcpu", 0) > 0.1,
          "%s has no time from elsewhere: %r" % (name, sorted(funcs)[:20]))
# an experiment whose loads have no cwd of their own (older collectors) uses the start's
log = os.path.join(exp, "log")
text = open(log).read()
import re
open(log, "w").write(re.sub(r" cwd=\S+(?= buildid=)", "", text))
p = subprocess.run([os.path.abspath(TALLY), "print", "-functions", exp], cwd=elsewhere,
                   capture_output=True, text=True, timeout=240)
check(p.returncode == 0 and "reuse_a_work" in p.stdout and "gone" not in p.stderr and
      "no longer exists" not in p.stderr, "without cwd in the load records: %r %r" %
      (p.stdout[-500:], p.stderr))
done(d)
