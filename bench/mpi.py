#!/usr/bin/env python3
"""MPI tracing benchmark: the time -M on adds to an MPI call, under Open MPI and MPICH.

  bench/mpi.py [--build build] [--block 500] [--blocks 40]

bench/mpi_pingpong.c, compiled with each implementation's mpicc, runs under `tally collect -M on
mpirun` with 1 rank (MPI_Sendrecv of 8 bytes to itself: one call a round trip, nothing else to
wait for) and 2 ranks (an 8-byte ping-pong: 4 calls on a round trip's critical path). In one run
it alternates blocks of untraced PMPI_ calls and traced MPI_ calls and keeps the fastest block of
each (the least disturbed on a shared machine): the difference is what tracing adds per call
(the wrapper, two clock reads, the stack of the call, the record).
"""
import argparse
import os
import re
import shutil
import subprocess
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--block", type=int, default=500)
ap.add_argument("--blocks", type=int, default=40)
args = ap.parse_args()
tally = os.path.join(os.path.abspath(args.build), "tally")
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_pingpong.c")
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
impls = {"openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "--oversubscribe"]),
         "mpich": ("mpicc.mpich", ["mpirun.mpich"])}
d = tempfile.mkdtemp(prefix="tally-bench-mpi-")
print("| implementation | ranks | untraced round trip | traced round trip | added per call |")
print("|---|---|---|---|---|")
for impl, (cc, launcher) in impls.items():
    if not shutil.which(cc) or not shutil.which(launcher[0]):
        continue
    prog = os.path.join(d, "pp_" + impl)
    subprocess.run([cc, "-O2", "-o", prog, src], check=True)
    for np in (1, 2):
        p = subprocess.run([tally, "collect", "-M", "on", "-A", "off", "-d", d, "-o",
                            "%s%d" % (impl, np)] + launcher +
                           ["-np", str(np), prog, str(args.block), str(args.blocks)],
                           capture_output=True, text=True, env=env, check=True)
        m = re.search(r"round_trip_pmpi_ns ([\d.]+) round_trip_mpi_ns ([\d.]+) per_call_ns "
                      r"([-\d.]+)", p.stdout)
        print("| %s | %d | %s ns | %s ns | %s ns |" % (impl, np, m.group(1), m.group(2),
                                                       m.group(3)))
shutil.rmtree(d, ignore_errors=True)
