"""Bad input gets a clear message and a non-zero status, never a crash."""
import os
import stat
from common import *

d = workdir("errors")

p = run([TALLY, "collect", "-d", d, "./no-such-program"], expect=1)
check("no such file" in p.stderr, "missing program: %r" % p.stderr)
p = run([TALLY, "collect", "-d", d, "no-such-program-in-path"], expect=1)
check("not found in PATH" in p.stderr, "program not in PATH: %r" % p.stderr)

nx = os.path.join(d, "notexec")
open(nx, "w").write("hello\n")
p = run([TALLY, "collect", "-d", d, nx], expect=1)
check("not executable" in p.stderr, "non-executable: %r" % p.stderr)
p = run([TALLY, "collect", "-d", d, d], expect=1)
check("directory" in p.stderr, "directory as program: %r" % p.stderr)

bad = os.path.join(d, "badexec")
open(bad, "w").write("\x7fELF garbage")
os.chmod(bad, 0o755)
p = run([TALLY, "collect", "-d", d, "-o", "bad", bad], expect=1)
check("cannot run" in p.stderr, "exec failure: %r" % p.stderr)
check(not os.path.exists(os.path.join(d, "bad.tally")), "failed exec left an experiment")

# an experiment path that leaves no room for the files inside it (PATH_MAX) is refused, not cut
deep = os.path.join(d, *(["d" * 250] * 16))
os.makedirs(deep)
for args in (["-o", "x" * 200], []):
    p = run([TALLY, "collect", "-d", deep] + args + ["/bin/true"], expect=1)
    check("too long" in p.stderr and "shorter -d or -o" in p.stderr,
          "long experiment path %r: %r" % (args, p.stderr[-300:]))
    check(os.listdir(deep) == [], "long experiment path %r left %r" % (args, os.listdir(deep)))

p = run([TALLY, "collect", "--bogus", "/bin/true"], expect=2)
check("unknown option" in p.stderr, "unknown option: %r" % p.stderr)
p = run([TALLY, "collect", "-p", "fast", "/bin/true"], expect=2)
check("bad clock" in p.stderr, "bad -p: %r" % p.stderr)
p = run([TALLY, "collect", "-F", "maybe", "/bin/true"], expect=2)
check("-F" in p.stderr, "bad -F: %r" % p.stderr)
p = run([TALLY, "collect", "-t", "x", "/bin/true"], expect=2)
check("duration" in p.stderr, "bad -t: %r" % p.stderr)
p = run([TALLY, "collect", "-p"], expect=2)
check("needs a value" in p.stderr, "missing value: %r" % p.stderr)
p = run([TALLY, "frobnicate"], expect=2)
check("not a tally command" in p.stderr, "unknown command: %r" % p.stderr)

# an existing -o name is refused, not overwritten
run([TALLY, "collect", "-d", d, "-o", "twice", "/bin/true"], expect=0)
p = run([TALLY, "collect", "-d", d, "-o", "twice", "/bin/true"], expect=1)
check("already exists" in p.stderr, "existing experiment: %r" % p.stderr)

# no arguments: usage plus what clock profiling can do here
p = run([TALLY, "collect"], expect=0)
check("Clock profiling on this system" in p.stdout and "range" in p.stdout,
      "collect without arguments: %r" % p.stdout)
# dry run creates nothing
p = run([TALLY, "collect", "-n", "-d", os.path.join(d, "dry"), "/bin/true"], expect=0)
check("would run" in p.stdout and not os.path.exists(os.path.join(d, "dry")),
      "dry run: %r" % p.stdout)

# every command answers -h; collect's -h is counter profiling as in gprofng: alone, it lists the
# counters, and --help is the help
for cmd in ("print", "check", "archive"):
    p = run([TALLY, cmd, "-h"], expect=0)
    check("usage" in p.stdout.lower(), "tally %s -h: %r" % (cmd, p.stdout[:200]))
p = run([TALLY, "collect", "--help"], expect=0)
check("usage" in p.stdout.lower(), "tally collect --help: %r" % p.stdout[:200])
p = run([TALLY, "collect", "-h"], expect=0)
check(p.stdout.startswith("Well known HW counters available for profiling:"),
      "tally collect -h: %r" % p.stdout[:200])

# not an experiment
p = run([TALLY, "print", "-functions", d], expect=1)
check("not an experiment" in p.stderr, "print on a non-experiment: %r" % p.stderr)
p = run([TALLY, "check", d], expect=1)
check("not an experiment" in p.stderr, "check on a non-experiment: %r" % p.stderr)
p = run([TALLY, "print", "-functions", os.path.join(d, "nothing-here")], expect=1)
check(p.stderr.strip() != "", "print on a missing path said nothing")

# exit status of the program is passed through
run([TALLY, "collect", "-d", d, "/bin/sh", "-c", "exit 7"], expect=7)
done(d)
