#!/usr/bin/env python3
"""Analysis of large MPI jobs: time and peak memory of `tally print -functions` and
`-rank_list` over generated jobs of R ranks with E clock events each.

  bench/mpi_analysis.py [--build build] [--ranks 64,256,1024] [--events 10000,100000]
                        [--threads 4] [--stacks 500] [--dir DIR]

Each job is written by bench_gen_experiment DIR.tally E THREADS STACKS R (bench/gen_experiment.c:
what `mpirun tally collect -M on` leaves, a `job` record and R sub-experiments _r<rank>.tally,
every rank's events spread over its threads and picking from the same STACKS stacks of libc's
functions, skewed as a real profile). The stacks are few enough that 10k events of a rank
already use them all, so 10k and 100k events a rank differ only in events: the peak memory
(GNU time's maximum resident set size) must not grow with them. Time is wall-clock on a shared
machine (take the ratios); memory is not disturbed by load.
"""
import argparse
import os
import re
import shutil
import subprocess
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--ranks", default="64,256,1024")
ap.add_argument("--events", default="10000,100000")
ap.add_argument("--threads", type=int, default=4)
ap.add_argument("--stacks", type=int, default=500)
ap.add_argument("--dir", default=None)
args = ap.parse_args()
build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
gen = os.path.join(build, "bench_gen_experiment")
d = args.dir or tempfile.mkdtemp(prefix="tally-bench-mpi-analysis-")
os.makedirs(d, exist_ok=True)


def timed(cmd):
    p = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + cmd, capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(cmd), p.stderr[-2000:]))
    m = re.search(r"TIME ([\d.]+) (\d+)", p.stderr)
    return float(m.group(1)), int(m.group(2)) / 1024.0


print("| ranks | events a rank | events | experiment | view | wall | peak RSS |")
print("|---|---|---|---|---|---|---|")
for r in [int(x) for x in args.ranks.split(",")]:
    for e in [int(x) for x in args.events.split(",")]:
        exp = os.path.join(d, "job_%d_%d.tally" % (r, e))
        shutil.rmtree(exp, ignore_errors=True)
        subprocess.run([gen, exp, str(e), str(args.threads), str(args.stacks), str(r)],
                       check=True, stdout=subprocess.DEVNULL)
        size = subprocess.run(["du", "-sm", exp], capture_output=True, text=True).stdout.split()[0]
        for view in (["-functions", "-limit", "20"], ["-rank_list"]):
            wall, rss = timed([tally, "print"] + view + [exp])
            print("| %d | %d | %d | %s MB | %s | %.1f s | %.0f MB |"
                  % (r, e, r * e, size, view[0], wall, rss), flush=True)
        shutil.rmtree(exp, ignore_errors=True)
if not args.dir:
    shutil.rmtree(d, ignore_errors=True)
