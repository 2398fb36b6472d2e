"""er_print habits that must work in tally print: optional [exp_id] arguments (-header,
-sample_detail), 'name' anywhere in -metrics with the columns still aligned, and a selection or
filter that matches nothing saying so."""
import os
import re
from common import *

d = workdir("print-compat")
example = os.path.join(os.path.dirname(os.path.abspath(TALLY)), "example")
exp = collect(d, [example, "2"], opts=["-S", "0.1"])

# -header and -sample_detail take an optional experiment id, and do not swallow the experiment
p = run([TALLY, "print", "-header", exp], expect=0)
check("Experiment: " + exp in p.stdout, "-header EXP: %r" % p.stdout[:300])
p = run([TALLY, "print", "-header", "1", exp], expect=0)
check("Experiment: " + exp in p.stdout, "-header 1 EXP: %r" % p.stdout[:300])
p = run([TALLY, "print", "-header", "2", exp], expect=1)
check("numbered 1 to 1" in p.stderr, "-header 2 with one experiment: %r" % p.stderr)
p = run([TALLY, "print", "-sample_info", exp], expect=0)
n = len(re.findall(r"^Sample \d+ of ", p.stdout, flags=re.M))
check(n >= 2, "-sample_info EXP shows every sample: %d in %r" % (n, p.stdout[:400]))
p = run([TALLY, "print", "-sample_select", "2", "-sample_info", "all", exp], expect=0)
check(re.findall(r"^Sample (\d+) of ", p.stdout, flags=re.M) == ["2"],
      "-sample_select 2 -sample_info all shows sample 2 only: %r" % p.stdout[:400])
j = print_json(exp, "-sample_select", "1", "-sample_info")[-1]
check([s["number"] for s in j["samples"]] == [1], "--json -sample_info: %r" % j)
# er_print's -sample_detail: the statistics of the selection, then each selected sample's
p = run([TALLY, "print", "-sample_detail", exp], expect=0)
n = len(re.findall(r"^ +Sample Number: \d+$", p.stdout, flags=re.M))
check("Aggregated statistics for selected samples" in p.stdout and n >= 2,
      "-sample_detail EXP shows every sample: %d in %r" % (n, p.stdout[:400]))
p = run([TALLY, "print", "-sample_select", "2", "-sample_detail", "all", exp], expect=0)
check(re.findall(r"^ +Sample Number: (\d+)$", p.stdout, flags=re.M) == ["2"],
      "-sample_select 2 -sample_detail all shows sample 2 only: %r" % p.stdout[:400])
j = print_json(exp, "-sample_select", "1", "-sample_detail")[-1]
check([s["number"] for s in j["experiments"][0]["samples"]] == [1], "--json -sample_detail: %r" % j)

# 'name' first, in the middle, last: the numbers of one column line up under their header
for spec in ("name:e.%totalcpu:i.totalcpu", "e.%totalcpu:name:i.totalcpu", "e.totalcpu:i.totalcpu:name"):
    p = run([TALLY, "print", "-metrics", spec, "-functions", exp], expect=0)
    lines = p.stdout.splitlines()
    rows = [l for l in lines if re.search(r"\s(<Total>|main|[A-G])(\s|$)", l)]
    ends = set()
    for l in rows:
        # where the last number of the row ends: the inclusive column's right edge
        last = list(re.finditer(r"\d+\.\d+", l))[-1]
        ends.add(last.end())
    check(len(rows) >= 8 and len(ends) == 1,
          "-metrics %s: the inclusive column is ragged (%s):\n%s" % (spec, sorted(ends), p.stdout))

# a selection or filter that matches nothing says so (and one that matches says nothing)
p = run([TALLY, "print", "-filters", 'FNAME("no_such_function") SOME IN STACK', "-functions", exp],
        expect=0)
check("matches none of the" in p.stderr and "filter" in p.stderr,
      "an empty filter should be said: %r" % p.stderr)
p = run([TALLY, "print", "-filters", 'FNAME("C") SOME IN STACK', "-functions", exp], expect=0)
check("matches none" not in p.stderr, "a filter that matches warned: %r" % p.stderr)
p = run([TALLY, "print", "-sample_select", "1", "-filters", "TSTAMP > 1000s", "-functions", exp],
        expect=0)
check(p.stderr.count("matches none of the") == 1, "said once: %r" % p.stderr)

# -overview's per-sample table counts the descendants too (a shell whose child does the work)
sh = collect(d, ["/bin/sh", "-c", "%s 2; true" % example], opts=["-S", "0.2"], name="sh")
p = run([TALLY, "print", "-overview", sh], expect=0)
rows = re.findall(r"^\s+\d+ \S*\s+([0-9.]+)\s+[0-9.]+\s+[0-9.]+", p.stdout, flags=re.M)
user = sum(float(x) for x in rows)
check(user > 0.1, "-overview per sample: the child's user CPU should be counted (%.3f s): %s"
      % (user, p.stdout[-1500:]))

# er_print's language: unique prefixes, aliases, an ambiguous prefix refused with its candidates
p = run([TALLY, "print", "-func", "-limit", "3", exp], expect=0)
check("Functions sorted by metric" in p.stdout, "-func is -functions: %r" % p.stdout[:200])
for alias, shows in (("-gprof", "Callers and callees"), ("-ctree", "Call Tree"),
                     ("-exp_list", exp), ("-lwp_list", "Thread")):
    p = run([TALLY, "print", alias, exp], expect=0)
    check(shows.lower() in p.stdout.lower(), "%s: %r" % (alias, p.stdout[:300]))
p = run([TALLY, "print", "-c", exp], expect=2)
check("ambiguous command '-c'" in p.stderr and "-calltree" in p.stderr, "-c: %r" % p.stderr)
# a failing command is reported and the others run (exit 1); settings are confirmed
p = run([TALLY, "print", "-limit", "2", "-source", "no_such_function", "-functions", exp], expect=1)
check("Print limit set to 2" in p.stdout and "Functions sorted by metric" in p.stdout and
      "no_such_function" in p.stderr, "carry on after a failing command: %r %r" % (p.stdout[:300], p.stderr))
# a script: comments echoed, unknown and failing commands reported with their line, the rest runs;
# outfile and appendfile
out = os.path.join(d, "out.txt")
script = os.path.join(d, "s.er")
open(script, "w").write("# first comment\nfunc\nnosuchcmd\nsource no_such_function\noutfile %s\n"
                        "version\nappendfile %s\nobject_list\noutfile -\nexp_list\n" % (out, out))
p = run([TALLY, "print", "-script", script, exp], expect=2)
check(p.stdout.startswith("# first comment\n") and "Functions sorted" in p.stdout and exp in p.stdout,
      "script output: %r" % p.stdout[:300])
check("s.er:3: unknown command 'nosuchcmd'" in p.stderr and "no_such_function" in p.stderr,
      "script errors with lines: %r" % p.stderr)
o = open(out).read()
check(o.startswith("tally ") and "Load Object" in o and "example" in o and "Functions sorted" not in o,
      "outfile/appendfile: %r" % o)

# a gprofng experiment is named as one (its files, made here: gprofng need not be installed)
er = os.path.join(d, "test.1.er")
os.mkdir(er)
for f in ("log.xml", "map.xml", "overview"):
    open(os.path.join(er, f), "w").write("<experiment/>\n" if f.endswith(".xml") else "")
p = run([TALLY, "print", "-functions", er], expect=1)
check("is a gprofng experiment" in p.stderr and "gprofng display text" in p.stderr,
      "a gprofng experiment should be named: %r" % p.stderr)

# the collector's own interposers are not the program's functions: a traced call's time and
# counts belong to the real function it called (one row per name), and the collector's library is
# not a load object of the profile. (Clock profiling is off here: a clock sample taken while the
# collector itself works in a program thread, e.g. unwinding for a traced call, is charged to the
# collector's function, which is the cost tally added, and that would list its library.)
workers = os.path.join(os.path.dirname(os.path.abspath(TALLY)), "workers")
# (-s all: every lock call is recorded, so the check does not depend on the threads contending,
# which on 2 loaded CPUs they may not)
wexp = collect(d, [workers, "0.5"], opts=["-p", "off", "-s", "all", "-H", "on", "-i", "on"],
               name="w")
for view in (["-functions"], ["-objects"], ["-load_objects"], ["-calltree"], ["-leaks"],
             ["-callers-callees"]):
    p = run([TALLY, "print"] + view + [wexp], expect=0)
    check("libtally-collector" not in p.stdout, "%s shows the collector: %r" % (view, p.stdout[:1500]))
doc = print_json(wexp, "-metrics", "e.sync:e.syncn:e.heapalloccnt:e.iowritetime:name",
                 "-functions")[-1]
names = [r["name"] for r in doc["rows"]]
check(len(names) == len(set(names)), "one row per function name: %r" %
      sorted(n for n in names if names.count(n) > 1))
rows = {r["name"]: r for r in doc["rows"]}
check(rows.get("pthread_mutex_lock", {}).get("e.syncn", 0) >= 3 * 3,
      "sync wait on pthread_mutex_lock (libc's): %r" % rows.get("pthread_mutex_lock"))
check(rows.get("malloc", {}).get("e.heapalloccnt", 0) >= 64 * 3 * 3,
      "allocations in malloc: %r" % rows.get("malloc"))
check(rows.get("fwrite", {}).get("e.iowritetime", 0) > 0, "writes in fwrite: %r" % rows.get("fwrite"))
done(d)
