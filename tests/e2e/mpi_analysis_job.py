#!/usr/bin/env python3
"""The analysis as an MPI job: `mpirun -np K tally print ... EXP` prints byte for byte what
`tally print ... EXP` prints, for K = 1, 2 and 3 analysis processes, under Open MPI and MPICH
(each one skipped when its mpirun is missing; the test skips when both are).

The experiments are generated (bench_gen_experiment: what `mpirun tally collect -M on` leaves, a
`job` record and a sub-experiment _r<rank>.tally per rank, each with threads and their events
over the same stacks): one of 9 ranks, one of 4, so that shares cut through experiments when both
are given. Compared: -functions, -calltree, -callers-callees, -rank_list, -thread_list, the same
with --json, and views after selections that the other analysis processes must apply as rank 0
does (-thread_select, -rank_select, -filters on THRID and TID, a -sample_select that fails), over
one experiment and over two. With TALLY_JOB_STATS every analysis process must have had a share of
the processes and the others must have sent partial results: the work was split, not done by
rank 0 alone. Failures reach rank 0 and end the job (no hang): an analysis process given other
experiments, or one that cannot open its experiment (MPMD launches, Open MPI).
"""
import os
import re
import shutil
import subprocess

from common import *

BUILD = os.path.dirname(os.path.abspath(TALLY))
GEN = os.path.join(BUILD, "bench_gen_experiment")

env = dict(os.environ)
env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
env.pop("TALLY_JOB_STATS", None)

LAUNCHERS = {
    "openmpi": lambda k: ["mpirun.openmpi", "--oversubscribe", "-np", str(k)],
    "mpich": lambda k: ["mpirun.mpich", "-np", str(k)],
}
available = {n: f for n, f in LAUNCHERS.items()
             if shutil.which(f(1)[0])}
if not available:
    skip("neither mpirun.openmpi nor mpirun.mpich is installed")
if not os.path.exists(GEN):
    fail("%s is missing (built with tally)" % GEN)
    done()

d = workdir("mpi_analysis_job")
a = os.path.join(d, "a.tally")
b = os.path.join(d, "b.tally")
run([GEN, a, "3000", "3", "80", "9"], expect=0)
run([GEN, b, "2000", "2", "40", "4"], expect=0)

CASES = [
    ("views", ["-functions", "-calltree", "-callers-callees", "-rank_list", "-thread_list"], [a]),
    ("json", ["--json", "-functions", "-calltree", "-callers-callees", "-rank_list"], [a]),
    ("selections", ["-thread_select", "2-9,14", "-functions", "-rank_select", "1,3-5",
                    "-callers-callees", "-rank_list", "-thread_select", "all",
                    "-filters", "THRID > 4 && TID != 5243", "-calltree", "-filters", "none",
                    "-sample_select", "7", "-functions"], [a]),
    ("two", ["-functions", "-callers-callees", "-thread_list", "-limit", "30", "-calltree"],
     [a, b]),
]

for name, cmd, exps in CASES:
    base = run([TALLY, "print"] + cmd + exps, env=env)
    if name != "selections" and base.returncode != 0:
        fail("%s: tally print exited %d: %s" % (name, base.returncode, base.stderr[-1000:]))
    if name == "selections" and "sample selection" not in base.stderr:
        fail("selections: the failing -sample_select said nothing: %s" % base.stderr[-500:])
    if len(base.stdout) < 2000:
        fail("%s: tally print printed too little to compare:\n%s" % (name, base.stdout))
    for impl, launcher in available.items():
        for k in (1, 2, 3):
            p = run(launcher(k) + [TALLY, "print"] + cmd + exps, env=env, timeout=280)
            what = "%s, %s, %d analysis processes" % (name, impl, k)
            if p.returncode != base.returncode:
                fail("%s: exit status %d, alone %d: %s" % (what, p.returncode, base.returncode,
                                                           p.stderr[-1500:]))
            if p.stdout != base.stdout:
                la, lb = base.stdout.splitlines(), p.stdout.splitlines()
                first = next((i for i in range(min(len(la), len(lb))) if la[i] != lb[i]),
                             min(len(la), len(lb)))
                fail("%s: the output differs from tally print's at line %d:\nalone: %r\njob:   %r"
                     % (what, first + 1, la[first] if first < len(la) else None,
                        lb[first] if first < len(lb) else None))
            if base.returncode == 0 and p.stderr != base.stderr:
                fail("%s: stderr differs:\nalone: %s\njob: %s" % (what, base.stderr[-800:],
                                                                  p.stderr[-800:]))

# the work was split: every analysis process had processes to scan, the others sent results
for impl, launcher in available.items():
    for k in (2, 3):
        p = run(launcher(k) + ["env", "TALLY_JOB_STATS=1", TALLY, "print", "-functions",
                               "-rank_list", a, b], env=env, expect=0, timeout=280)
        lines = [l for l in p.stderr.splitlines() if l.startswith("tally: analysis process ")]
        if len(lines) != k:
            fail("%s, %d processes: TALLY_JOB_STATS gave %d lines: %s" % (impl, k, len(lines),
                                                                        p.stderr[-1000:]))
        total = 0
        for r, l in enumerate(lines):
            counts = [int(x) for x in re.findall(r"(\d+) process(?:es)? of ", l)]
            total += sum(counts)
            if not sum(counts):
                fail("%s, %d processes: analysis process %d had no share: %s" % (impl, k, r, l))
            if r and "bytes sent in 2 aggregations" not in l:
                fail("%s, %d processes: analysis process %d sent nothing: %s" % (impl, k, r, l))
            if r and int(l.split(" bytes sent")[0].rsplit(" ", 1)[1]) < 1000:
                fail("%s, %d processes: analysis process %d sent too little: %s" % (impl, k, r, l))
        if total != 10 + 5:  # every process once: the roots and the ranks of both jobs
            fail("%s, %d processes: the shares hold %d processes, not 15: %s"
                 % (impl, k, total, p.stderr[-1000:]))

# failures end the job with rank 0's error, never a hang (MPMD: Open MPI's colon syntax)
if "openmpi" in available:
    mr = ["mpirun.openmpi", "--oversubscribe"]
    p = run(mr + ["-np", "1", TALLY, "print", "-functions", a, ":", "-np", "1", TALLY, "print",
                  "-functions", b], env=env, timeout=120)
    if p.returncode == 0 or "does not read the same experiments" not in p.stderr:
        fail("other experiments on process 1: exit %d, stderr %s" % (p.returncode,
                                                                     p.stderr[-1500:]))
    missing = os.path.join(d, "missing.tally")
    p = run(mr + ["-np", "1", TALLY, "print", "-functions", a, ":", "-np", "1", TALLY, "print",
                  "-functions", missing], env=env, timeout=120)
    if p.returncode == 0 or "analysis process 1 of 2" not in p.stderr or \
            "missing.tally" not in p.stderr:
        fail("a missing experiment on process 1: exit %d, stderr %s" % (p.returncode,
                                                                        p.stderr[-1500:]))

shutil.rmtree(d, ignore_errors=True)
done()
