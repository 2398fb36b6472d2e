"""-header says how much CPU tally's collector used itself (its sampler thread), which the
program's getrusage counts and the profile leaves out: the recorded CPU plus the collector's
accounts for the getrusage total. Compared with the run's own getrusage (the end sample)."""
import os
from common import *

d = workdir("collector_cpu")
exp = os.path.join(d, "cpu.er")
# -S 0.01: a sample packet every 10 ms, so the sampler has work to show
run([TALLY, "collect", "-o", exp, "-a", "off", "-S", "0.01", os.path.join(WL, "wl_cpu_single"),
     "1"], expect=0)
stats = log_records(exp, "stats")
samples = log_records(exp, "sample")
if check(stats and "sampler_cpu" in stats[-1][1], "no sampler_cpu in the stats record: %r" % stats):
    sampler = int(stats[-1][1]["sampler_cpu"]) / 1e9
    end = samples[-1][1]
    rusage = (int(end["utime"]) + int(end["stime"])) / 1e9
    recorded = rows_by_name(print_json(exp, "-metrics", "e.totalcpu:name", "-functions")[-1])[
        "<Total>"]["e.totalcpu"]
    check(sampler > 0, "sampler CPU %r" % sampler)
    # sampled CPU can be missed, never invented: recorded + collector within getrusage (20 ms for
    # the rounding of getrusage's ticks); and they account for it but for the process's start
    # before the collector ran and its last partial interval (0.1 s on 1 s)
    at_most(recorded + sampler, rusage + 0.02, 0, "recorded %.3f + collector %.3f vs getrusage %.3f"
            % (recorded, sampler, rusage))
    at_least(recorded + sampler, rusage - 0.1, 0, "recorded %.3f + collector %.3f vs getrusage %.3f"
             % (recorded, sampler, rusage))
    h = print_json(exp, "-header")[0]["experiments"][0]["processes"][0]
    check(h.get("sampler_cpu_ns") == int(stats[-1][1]["sampler_cpu"]), "-header JSON: %r" % h)
    p = run([TALLY, "print", "-header", exp], expect=0)
    check("Collector CPU:    %.3f s in tally's sampler thread" % sampler in p.stdout and
          "getrusage" in p.stdout, "-header text: %r" % p.stdout)
done(d)
