"""A program that enters a user namespace (unshare(CLONE_NEWUSER) needs a single-threaded
process, so the collector's sampler thread must step aside) behaves as without tally. Skipped
(exit 77) where the machine does not allow unprivileged user namespaces."""
import os
from common import *

prog = os.path.join(WL, "wl_userns")
bare = run([prog])
if bare.returncode != 0:
    skip("user namespaces are not available here (%s)" % bare.stdout.strip())
d = workdir("userns")
p = run([TALLY, "collect", "-d", d, "-o", "userns", prog])
check(p.returncode == 0 and "unshare ok" in p.stdout,
      "unshare under tally: status %d, %r %r" % (p.returncode, p.stdout, p.stderr[-500:]))
check(os.path.exists(os.path.join(d, "userns.tally", "log")), "no experiment")
done(d)
