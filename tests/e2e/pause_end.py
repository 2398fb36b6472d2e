#!/usr/bin/env python3
"""Threads that end while the collection is paused (tests/workloads/pause_end.c): nothing they
did while paused is recorded, not even the CPU time since their last clock sample, which a
thread's end charges to its last sampled stack when the collection is not paused. Each thread's
samples weigh the CPU time since its previous one, so what is recorded of each thread can only
be at most the CPU time it measured before its pause (before, its end added up to an interval:
the paused millisecond and the time since its last sample)."""
import os
import re

from common import *

d = workdir("pause-end")
p = run([TALLY, "collect", "-d", d, "-o", "p.tally", "-p", "on",
         os.path.join(WL, "wl_pause_end")], expect=0)
before = {int(t): int(n) / 1e9 for t, n in re.findall(r"tid (\d+) before_ns (\d+)", p.stdout)}
if check(len(before) == 5, "the workload's lines: %r" % p.stdout):
    exp = os.path.join(d, "p.tally")
    got = {t["tid"]: t["totalcpu"] for t in print_json(exp, "-thread_list")[0]["threads"]}
    for tid, b in sorted(before.items()):
        print("thread %d: %.4f s recorded, %.4f s measured before its pause" % (tid, got.get(tid, 0), b))
        # (at most: a sample's signal can come late, after the pause, and record nothing)
        check(got.get(tid, 0) <= b + 0.0005, "thread %d: %.4f s recorded, more than the %.4f s "
              "it measured before its pause" % (tid, got.get(tid, 0), b))
    # (the test is not empty: the threads computed 125 ms unpaused at 10 ms a sample)
    check(sum(got.get(tid, 0) for tid in before) > 0, "nothing recorded of the threads")
    rows = {r["name"]: r for r in print_json(exp, "-metrics", "i.totalcpu:name",
                                             "-functions")[0]["rows"]}
    check("while_paused" not in rows, "while_paused is recorded: %r" % rows.get("while_paused"))
done(d)
