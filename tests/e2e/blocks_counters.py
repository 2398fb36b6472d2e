#!/usr/bin/env python3
"""Counters as quantities of profiled blocks (`tally collect --block-metrics=...`): a block that
writes to N fresh pages takes at least N page faults in its exclusive count (one-sided: the
kernel may count more, never fewer), and its caller's inclusive count holds it exactly
(inclusive = exclusive + the callee's inclusive); several quantities at once (wall, cpu,
page-faults, context-switches); counters in threads the program creates (each sleep is a
context switch) and in a fork child; the same numbers in `-kind blocks`; errors for a counter
that cannot open here (a hardware one on a machine without a PMU), an unknown one, a repeated
one and too many.
"""
import os

from common import *

prog = os.path.join(WL, "wl_blocks")
d = workdir("blocks_counters")
N = 300


def collect_run(name, args, metrics, expect=0):
    p = run([TALLY, "collect", "-d", d, "-o", name, "--block-metrics=" + metrics] + args,
            expect=expect)
    return os.path.join(d, name + ".tally"), p


# ---- a block that takes N page faults --------------------------------------------------------
run([prog, "faults", str(N)], expect=0)  # without tally, as ever
exp, _ = collect_run("faults", [prog, "faults", str(N)], "wall,page-faults,context-switches,cpu")
bl, tree = print_json(exp, "-blocks", "-kind", "blocks", "-calltree")
check(bl["quantities"] == ["wall", "page-faults", "context-switches", "cpu"],
      "quantities: %r" % bl["quantities"])
tot = {x["name"]: x for x in bl["total"]}
check(set(tot) == {"main", "touch"}, "blocks: %r" % sorted(tot))
if set(tot) == {"main", "touch"}:
    m, t = tot["main"], tot["touch"]
    at_least(t["excl_page-faults"], N, 0, "touch's exclusive page faults (%d pages)" % N)
    check(m["incl_page-faults"] == m["excl_page-faults"] + t["incl_page-faults"],
          "main's inclusive page faults hold touch's: %r %r" % (m, t))
    check(m["incl_page-faults"] >= t["incl_page-faults"] >= N, "main >= touch >= N: %r" % m)
    check(t["incl_cpu"] > 0 and t["incl"] >= t["incl_cpu"] * 0.5,
          "touch's wall and CPU time are measured alongside: %r" % t)
    kids = tree["tree"]["children"]
    check([k["name"] for k in kids] == ["main"], "tree: %r" % kids)
    if kids and kids[0]["children"]:
        tn = kids[0]["children"][0]
        check(tn["name"] == "touch" and tn["e.bpage-faults"] == t["excl_page-faults"] and
              kids[0]["i.bpage-faults"] == m["incl_page-faults"],
              "-kind blocks has the same counts: %r" % kids[0])

# ---- threads and a fork child: each thread counts its own --------------------------------------
exp, _ = collect_run("threads", [prog, "threads"], "context-switches")
bl, = print_json(exp, "-blocks")
for th in bl["threads"]:
    for b in th["blocks"]:
        if b["name"] == "step":  # each call sleeps 10 ms: at least one context switch
            at_least(b["excl"], b["calls"], 0, "step's context switches in thread %d" % th["tid"])
steps = [b for th in bl["threads"] for b in th["blocks"] if b["name"] == "step"]
check(sum(b["calls"] for b in steps) == 3, "step in both workers: %r" % steps)
exp, _ = collect_run("fork", [prog, "fork"], "wall,context-switches")
bl, = print_json(exp, "-blocks")
child = [b for th in bl["threads"] for b in th["blocks"] if b["name"] == "child"]
check(len(child) == 1, "the fork child's block: %r" % bl["threads"])
if child:
    at_least(child[0]["excl_context-switches"], 1, 0, "the child's context switches (it sleeps)")

# ---- errors -----------------------------------------------------------------------------------
exp, p = collect_run("cycles", [prog, "faults", "5"], "wall,cycles", expect=None)
if p.returncode == 2:  # no PMU (this machine): said, nothing run
    check("counter 'cycles' cannot be counted here" in p.stderr and "PMU" in p.stderr,
          "a hardware counter without a PMU: %r" % p.stderr)
else:  # a machine with a PMU counts it
    check(p.returncode == 0, "cycles with a PMU: %r" % p.stderr)
    bl, = print_json(exp, "-blocks")
    check(bl["quantities"] == ["wall", "cycles"], "cycles counted: %r" % bl["quantities"])
for bad, words in (("wall,nosuch-counter", "nosuch-counter"), ("wall,wall", "at most once"),
                   ("wall,cpu,page-faults,minor-faults,major-faults", "at most 4"),
                   ("wall,", "at most once")):
    _, p = collect_run("bad", [prog, "faults", "5"], bad, expect=2)
    check(words in p.stderr, "--block-metrics=%s: %r" % (bad, p.stderr))

done(d)
