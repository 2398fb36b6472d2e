"""Meta-test: every command answers -h, has a man page, and every option its -h lists is
documented in that man page."""
import os
import re
from common import *

for cmd in ("collect", "print", "check", "archive", "view", "export"):
    p = run([TALLY, cmd, "-h"], expect=0)
    page = os.path.join(SRC, "man", "tally-%s.1" % cmd)
    if not check(os.path.exists(page), "no man page %s" % page):
        continue
    text = open(page).read().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
    text = text.replace("\\fI", "")
    opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*|-[a-zA-Z](?![\w-]))", p.stdout))
    # er_print-style commands (print) are single-dash words
    opts |= set(re.findall(r"^\s+(-[a-z][a-z_]+)", p.stdout, flags=re.M))
    for o in sorted(opts):
        check(re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w])", text) is not None,
              "tally %s -h lists %s but man/tally-%s.1 does not document it" % (cmd, o, cmd))
p = run([TALLY, "--help"], expect=0)
for cmd in re.findall(r"^  (\w+)\s", p.stdout, flags=re.M):
    check(os.path.exists(os.path.join(SRC, "man", "tally-%s.1" % cmd)),
          "command %s has no man page" % cmd)
done()
