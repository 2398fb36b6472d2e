#!/usr/bin/env python3
"""Runtime states (the collector API's set_state, as OpenMP and MPI use it) against the
thread-state sampler's looks (tests/workloads/rstate_phases.c): a thread sleeps in state phase_a
for the first 7 ms of every 10 ms step and in phase_b for the other 3, on an absolute grid like
the sampler's own, so a look made at the same point of every step finds the thread in the same
state every time. The time of each look's period is shared by the thread's time in each state
(the slot keeps it), not all charged to the state found at the look: each state's metric is the
thread's own measured share of the time within 10 points (charging the state at the look gives
100% or 0% on a quiet machine)."""
import os
import re

from common import *

d = workdir("rstate-split")
prog = os.path.join(WL, "wl_rstate_phases")
p = run([TALLY, "collect", "-d", d, "-o", "r.tally", "-p", "on", prog, "150", "7"], expect=0)
m = re.search(r"phases a_ns (\d+) b_ns (\d+)", p.stdout)
if check(m is not None, "the workload's line: %r" % p.stdout):
    a, b = int(m.group(1)) / 1e9, int(m.group(2)) / 1e9
    doc = print_json(os.path.join(d, "r.tally"), "-metrics", "e.phasea:e.phaseb:e.total",
                     "-functions")[0]
    tot = {r["name"]: r for r in doc["rows"]}["<Total>"]
    ga, gb = tot["e.phasea"], tot["e.phaseb"]
    print("phase_a %.3f s (measured %.3f), phase_b %.3f s (measured %.3f)" % (ga, a, gb, b))
    check(ga + gb >= 0.8 * (a + b), "the states hold %.3f s of the thread's %.3f s in them"
          % (ga + gb, a + b))
    if ga + gb > 0:
        check(abs(ga / (ga + gb) - a / (a + b)) <= 0.10,
              "phase_a's share %.2f, the thread's own %.2f (phase_b's %.3f s, measured %.3f s)"
              % (ga / (ga + gb), a / (a + b), gb, b))
done(d)
