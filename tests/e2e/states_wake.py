"""Thread states of a thread that wakes often (tests/workloads/wake_sleep.c: 35 ms asleep, 3 ms
on a CPU, 100 times): the sampler looks every 10 ms, so a look often finds the thread running
again after a sleep the previous look saw. That sleep's end is charged to it once a later look
tells it apart from a wait for a CPU still going on (sampler.c): the time recorded in sleeper,
all states, is the loop's wall time by the program's own clock, at most 12% less (what is still
lost: the first look's period, the last one's, sleeps begun and ended between two looks (the
sampler is late under load) and periods that look busy within the run time's 5 ms slack; under
load average 12 it came out 4-9% short, and 17% short when those ends were dropped) and at
most 3% more."""
import os
from common import *

d = workdir("states-wake")
p = run([TALLY, "collect", "-d", d, "-o", "w", os.path.join(WL, "wl_wake_sleep")], expect=0)
exp = os.path.join(d, "w.tally")
loop = None
for line in p.stdout.splitlines():
    if line.startswith("loop_ns "):
        loop = int(line.split()[1]) * 1e-9
if check(loop is not None, "wake_sleep printed no loop time: %r" % p.stdout):
    doc = print_json(exp, "-metrics", "i.total:i.sleep:i.wait:i.totalcpu", "-functions")[0]
    rows = {r["name"]: r for r in doc["rows"]}
    s = rows.get("sleeper")
    if check(s is not None, "sleeper has no row"):
        print("sleeper: total %.3f (sleep %.3f, wait %.3f, cpu %.3f) of %.3f s" %
              (s["i.total"], s["i.sleep"], s["i.wait"], s["i.totalcpu"], loop))
        bounded(s["i.total"], loop, 0.12, 0.03, "all states of sleeper against the loop's wall time")
done(d)
