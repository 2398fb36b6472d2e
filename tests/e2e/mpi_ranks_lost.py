#!/usr/bin/env python3
"""No event of a job is dropped silently: each rank says how many it lost. A generated job of 4
ranks (bench_gen_experiment, the experiment `mpirun tally collect -M on` leaves) whose ranks'
logs then say, as a collector's would, that records were lost: rank 1 traced records of the
collector API (MPI calls), rank 2 clock samples the kernel's ring could not hold and one the
writer was busy for, rank 3 a counter's lost and dropped samples. -rank_list (text and --json)
gives each rank its own count, every kind summed, and rank 0 none; a count too large to add
saturates instead of wrapping. The job's own directory, which has no process, is shown as such
by `tally check` and `-header` (whose job name is left out when the launcher gave none).
"""
import os

from common import *

RANKS = 4
gen = os.path.join(os.path.dirname(os.path.abspath(TALLY)), "bench_gen_experiment")
check(os.path.exists(gen), "%s was not built" % gen)
d = workdir("mpi-ranks-lost")
exp = os.path.join(d, "job.tally")
run([gen, exp, "2000", "2", "20", str(RANKS)], expect=0)


def add_to_stats(rank, fields):
    """Appends fields to the stats record of the rank's log (a collector writes them there)."""
    path = os.path.join(exp, "_r%d.tally" % rank, "log")
    lines = open(path).read().split("\n")
    n = [i for i, l in enumerate(lines) if l.startswith("stats ")]
    if not check(len(n) == 1, "rank %d: %d stats records" % (rank, len(n))):
        return
    for k, v in fields.items():
        if (" %s=" % k) in lines[n[0]]:
            lines[n[0]] = " ".join(w for w in lines[n[0]].split(" ")
                                   if not w.startswith(k + "="))
        lines[n[0]] += " %s=%d" % (k, v)
    open(path, "w").write("\n".join(lines))


def append(rank, text):
    with open(os.path.join(exp, "_r%d.tally" % rank, "log"), "a") as f:
        f.write(text)


def ranks_json():
    return {r["rank"]: r["dropped"] for r in print_json(exp, "-rank_list")[0]["ranks"]}


add_to_stats(1, {"trace_dropped_api": 7})
add_to_stats(2, {"ring_lost": 5, "dropped_busy": 1})
append(3, "metric name=ctr unit=events\n"
          "counter id=0 name=page-faults metric=ctr interval=1 data=0\n"
          "counter-stats id=0 samples=0 events=0 counted=0 enabled=1 running=1 throttled=0 "
          "lost=11 dropped=2\n")
want = {0: 0, 1: 7, 2: 6, 3: 13}
got = ranks_json()
check(got == want, "-rank_list --json dropped per rank %s, wanted %s" % (got, want))
text = run([TALLY, "print", "-rank_list", exp], expect=0).stdout
for line in text.splitlines():
    f = line.split()
    if len(f) == 11 and f[0].isdigit():
        check(int(f[9]) == want.get(int(f[0])), "-rank_list text, rank %s: Dropped %s, wanted %s"
              % (f[0], f[9], want.get(int(f[0]))))
        want.pop(int(f[0]), None)
check(not want, "-rank_list text lacks ranks %s:\n%s" % (sorted(want), text))
# every view's warning of incomplete data counts the same clock samples (the full ring's too)
text = run([TALLY, "print", "-functions", exp], expect=0).stdout
check("Warning: incomplete data: 6 clock samples" in text,
      "-functions does not say that 6 clock samples were lost:\n%s" % text[:400])

# sums saturate
add_to_stats(1, {"trace_dropped_api": 2**64 - 2, "dropped_disk": 9})
got = ranks_json()
check(got.get(1) == 2**64 - 1, "rank 1's dropped %s, wanted the saturated %d" % (got.get(1), 2**64 - 1))

# the job's directory is no process: check counts the ranks and says what the directory is;
# -header names the job only when the launcher did (Hydra names none)
p = run([TALLY, "check", exp], expect=0)
check(("job.tally: %d processes\n" % RANKS) in p.stdout and
      ("(root): the directory of an MPI job (%d ranks), no process of its own" % RANKS)
      in p.stdout and "without a record" not in p.stdout and " pid 0" not in p.stdout,
      "tally check on the job:\n%s" % p.stdout)
h = run([TALLY, "print", "-header", exp], expect=0).stdout
check("MPI job: launcher openmpi, job 1, %d ranks" % RANKS in h, "-header (Open MPI):\n%s" % h[:600])
top = os.path.join(exp, "log")
lines = open(top).read().split("\n")
open(top, "w").write("\n".join(" ".join(w for w in l.replace("launcher=openmpi",
                                                               "launcher=hydra").split(" ")
                                          if not w.startswith("job=")) if l.startswith("job ")
                                 else l for l in lines))
h = run([TALLY, "print", "-header", exp], expect=0).stdout
check("MPI job: launcher hydra, %d ranks" % RANKS in h, "-header (Hydra: no job named):\n%s"
      % h[:600])
done(d)
