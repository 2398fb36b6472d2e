#!/usr/bin/env python3
"""The analysis of a job of many ranks holds what it keeps (stacks, ranks, functions), not the
events: the peak resident set of `tally print -functions` and `-rank_list` over a generated job
of 32 ranks must not grow when every rank has 15 times the events (4,000 against 60,000 clock
events a rank, the same 300 stacks, all used by both: bench_gen_experiment, bench/
gen_experiment.c). Resident memory counts the pages of the mapped event files too: the scan
that reads several processes at once maps them all before it reads any, and the pages their
chunk headers faulted in stayed resident for all of them (the whole events of a job of small
ranks). Allowed growth: an eighth of the events added, in bytes (a few chunks per stream and
worker in flight); before the fix it was all of them. Peak RSS is the kernel's count for the
process (ru_maxrss), not a timing: load does not move it.
"""
import os
import subprocess
import sys

from common import *

RANKS, SMALL, BIG, THREADS, STACKS = 32, 4000, 60000, 4, 300
gen = os.path.join(os.path.dirname(os.path.abspath(TALLY)), "bench_gen_experiment")
check(os.path.exists(gen), "%s was not built" % gen)
d = workdir("analysis-memory")

PEAK = ("import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def peak_kb(args):
    out = run([sys.executable, "-c", PEAK] + args, expect=0).stdout.split()
    check(out[0] == "0", "%s exited %s" % (" ".join(args), out[0]))
    return int(out[1])


def events_bytes(exp):
    return sum(os.path.getsize(os.path.join(root, "events"))
               for root, _, files in os.walk(exp) if "events" in files)


exps = {}
for n in (SMALL, BIG):
    exps[n] = os.path.join(d, "job%d.tally" % n)
    run([gen, exps[n], str(n), str(THREADS), str(STACKS), str(RANKS)], expect=0)
added = events_bytes(exps[BIG]) - events_bytes(exps[SMALL])
check(added > 8 << 20, "the larger job adds only %d bytes of events" % added)
for view in ("-functions", "-rank_list"):
    kb = {n: peak_kb([TALLY, "print", view, exps[n]]) for n in (SMALL, BIG)}
    grew = (kb[BIG] - kb[SMALL]) * 1024
    print("%s: peak RSS %d KB with %d events a rank, %d KB with %d (%d bytes of events added)"
          % (view, kb[SMALL], SMALL, kb[BIG], BIG, added))
    check(grew <= added / 8, "%s: the peak resident set grew by %d KB with %d KB more events "
          "(allowed %d KB)" % (view, grew // 1024, added // 1024, added // 8 // 1024))
# the same job either way: every rank there, every event counted
doc = print_json(exps[BIG], "-rank_list")[0]
check([r["rank"] for r in doc["ranks"]] == list(range(RANKS)), "-rank_list ranks %s"
      % [r["rank"] for r in doc["ranks"]])
done(d)
