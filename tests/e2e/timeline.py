"""-timeline marks: the legend's marks cannot be mistaken for function names (digits, then
punctuation; never a letter), and a thread that ran while mostly waiting for a CPU shows the
function it ran, not only '^'. The load is made, not hoped for: the four busy workers of
wl_threads4 share one CPU (the whole run pinned to it), so each waits at least three times as long
as it runs."""
import os
import re
from common import *

d = workdir("timeline")
exp = os.path.join(d, "pinned.er")
cpu0 = min(os.sched_getaffinity(0))
p = subprocess.run([TALLY, "collect", "-o", exp, "-a", "off", os.path.join(WL, "wl_threads4"),
                    "0.3"], capture_output=True, text=True, timeout=240,
                   preexec_fn=lambda: os.sched_setaffinity(0, {cpu0}))
check(p.returncode == 0, "pinned run: %d %r" % (p.returncode, p.stderr[-500:]))
tl = print_json(exp, "-timeline")[0]
legend = tl["legend"]
marks = [k for k in legend if k not in "^=%."]
check(marks and all(not k.isalpha() for k in marks), "legend marks %r" % marks)
check(set(marks) <= set("123456789#@&$+~!?:;<>*"), "legend marks %r" % marks)
names = {k: v for k, v in legend.items() if k in marks}
ov = print_json(exp, "-metrics", "e.totalcpu:e.wait:name", "-functions")[-1]
total = rows_by_name(ov)["<Total>"]
# the run's own figures say the workers mostly waited
at_least(total.get("e.wait", 0), total["e.totalcpu"], 0.5,
         "pinned workers' Wait CPU against their CPU")
workers = ("work_new", "work_old", "work_detached", "work_ctor")
for w in workers:
    rows = [r["cells"] for r in tl["threads"]
            if any(names.get(c) == w for c in r["cells"])]
    check(rows, "no timeline row shows %s (it ran, waiting for a CPU): %r %r" %
          (w, [r["cells"] for r in tl["threads"]], names))
p = run([TALLY, "print", "-timeline", exp], expect=0)
legend_lines = re.findall(r"^  (\S)  (.+)$", p.stdout, re.M)
check(legend_lines and all(not m.isalpha() for m, _ in legend_lines),
      "text legend: %r" % legend_lines)
done(d)
