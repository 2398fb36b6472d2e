#!/usr/bin/env python3
"""Analysis of large MPI jobs: time and peak memory of `tally print -functions` and
`-rank_list` over generated jobs of R ranks with E clock events each, by one analysis process
and, with --procs, by the analysis as an MPI job (`mpirun -np K tally print`).

  bench/mpi_analysis.py [--build build] [--ranks 64,256,1024] [--events 10000,100000]
                        [--threads 4] [--stacks 500] [--procs 1] [--mpirun mpirun.openmpi]
                        [--dir DIR]

Each job is written by bench_gen_experiment DIR.tally E THREADS STACKS R (bench/gen_experiment.c:
what `mpirun tally collect -M on` leaves, a `job` record and R sub-experiments _r<rank>.tally,
every rank's events spread over its threads and picking from the same STACKS stacks of libc's
functions, skewed as a real profile). The stacks are few enough that 10k events of a rank
already use them all, so 10k and 100k events a rank differ only in events: the peak memory
(GNU time's maximum resident set size) must not grow with them. Time is wall-clock on a shared
machine (take the ratios); memory is not disturbed by load. With K analysis processes (--procs
1,2), each runs under GNU time inside mpirun: the wall time is mpirun's (its start included), the
peak RSS that of each analysis process (rank 0, which merges, first).
"""
import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--ranks", default="64,256,1024")
ap.add_argument("--events", default="10000,100000")
ap.add_argument("--threads", type=int, default=4)
ap.add_argument("--stacks", type=int, default=500)
ap.add_argument("--procs", default="1")
ap.add_argument("--mpirun", default="mpirun.openmpi")
ap.add_argument("--dir", default=None)
args = ap.parse_args()
build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
gen = os.path.join(build, "bench_gen_experiment")
d = args.dir or tempfile.mkdtemp(prefix="tally-bench-mpi-analysis-")
os.makedirs(d, exist_ok=True)


env = dict(os.environ)
env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"


def timed(cmd, procs):
    """Wall seconds and the peak RSS (MB) of each analysis process, rank 0 first."""
    inner = ["/usr/bin/time", "-f", "TIME %e %M"] + cmd
    if procs > 1:
        inner = [args.mpirun, "-np", str(procs)] + (
            ["--oversubscribe"] if "openmpi" in args.mpirun else []) + [
            "sh", "-c", 'exec "$@" 2>"$0.$OMPI_COMM_WORLD_RANK$PMI_RANK"', os.path.join(d, "rss")
        ] + inner
    t0 = time.monotonic()
    p = subprocess.run(inner, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(inner), p.stderr[-2000:]))
    if procs == 1:
        errs = [p.stderr]
    else:
        errs = [open(os.path.join(d, "rss.%d" % r)).read() for r in range(procs)]
    rss = [int(re.search(r"TIME ([\d.]+) (\d+)", e).group(2)) / 1024.0 for e in errs]
    return wall, rss


print("| ranks | events a rank | events | experiment | view | analysis processes | wall | "
      "peak RSS of each |")
print("|---|---|---|---|---|---|---|---|")
for r in [int(x) for x in args.ranks.split(",")]:
    for e in [int(x) for x in args.events.split(",")]:
        exp = os.path.join(d, "job_%d_%d.tally" % (r, e))
        shutil.rmtree(exp, ignore_errors=True)
        subprocess.run([gen, exp, str(e), str(args.threads), str(args.stacks), str(r)],
                       check=True, stdout=subprocess.DEVNULL)
        size = subprocess.run(["du", "-sm", exp], capture_output=True, text=True).stdout.split()[0]
        for view in (["-functions", "-limit", "20"], ["-rank_list"]):
            for k in [int(x) for x in args.procs.split(",")]:
                wall, rss = timed([tally, "print"] + view + [exp], k)
                print("| %d | %d | %d | %s MB | %s | %d | %.1f s | %s |"
                      % (r, e, r * e, size, view[0], k, wall,
                         ", ".join("%.0f MB" % x for x in rss)), flush=True)
        shutil.rmtree(exp, ignore_errors=True)
if not args.dir:
    shutil.rmtree(d, ignore_errors=True)
