"""Helpers for tally's end-to-end tests: run tally, collect workloads, read JSON reports.

Each test is a script run by CTest in its own process; it exits non-zero (with a message naming
what differed) on failure, or SKIP (77, registered as CTest's SKIP_RETURN_CODE) through skip()
when the machine cannot run it. Environment: TALLY (the executable), WL (workload binaries), SRC.

Tolerances. The machine running the tests is shared and loaded (ctest -j, other builds), so a
check on a measured time must say which way load can move it:
- close_to(actual, expected, rel): symmetric, for quantities that load cannot bias (a sum of
  parts against its total, a share of one run's samples, a count the program fixes).
- bounded(actual, expected, below, above): one-sided physics. A wait of S seconds can only come
  out longer under load (below small, above loose or None); CPU time sampled by a profiling
  timer can be missed but not invented. Each caller states why its two margins are what they are.
- at_least / at_most: the one-bound cases of bounded().
Compare with the run's own truth (the program printing its own CLOCK_THREAD_CPUTIME_ID or
CLOCK_MONOTONIC measurements, the getrusage the experiment records), never with a separate bare
run made at another moment under another load.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

TALLY = os.environ.get("TALLY", "build/tally")
WL = os.environ.get("WL", "build/tests")
SRC = os.environ.get("SRC", ".")

failures = []

# exit status of a test that could not run here (CTest SKIP_RETURN_CODE, tests/CMakeLists.txt)
SKIP = 77


def workdir(name):
    d = tempfile.mkdtemp(prefix="tally-e2e-%s-" % name)
    return d


def run(args, expect=None, timeout=240, env=None, input=None):
    """Runs a command; returns CompletedProcess. expect: required exit status."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env,
                       input=input)
    if expect is not None and p.returncode != expect:
        fail("%s exited %d, expected %d\nstdout: %s\nstderr: %s" %
             (" ".join(args), p.returncode, expect, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def collect(d, args, opts=(), expect=0, name="exp"):
    """tally collect -d d -o name opts args; returns the experiment path."""
    run([TALLY, "collect", "-d", d, "-o", name] + list(opts) + list(args), expect=expect)
    return os.path.join(d, name + ".tally")


def child_of(pid, wait=5.0):
    """The first child process of pid (e.g. the program tally collect started), or None."""
    import time
    end = time.time() + wait
    while time.time() < end:
        try:
            kids = open("/proc/%d/task/%d/children" % (pid, pid)).read().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.02)
    return None


def proc_cpu(pid):
    """CPU seconds (user + system, all threads) process pid has used so far, or None if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_cpu(pid, secs, timeout=60.0):
    """Waits until process pid has used secs of CPU time; True if it did. Use it, not a sleep,
    before signalling a program that must have done some work first: under load a fixed sleep
    may find it still starting."""
    import time
    end = time.time() + timeout
    while time.time() < end:
        c = proc_cpu(pid)
        if c is None:
            return False
        if c >= secs:
            return True
        time.sleep(0.01)
    return False


def wait_caught(pid, sig, timeout=60.0):
    """Waits until process pid catches signal sig (its SigCgt in /proc), e.g. until the collector
    has installed its handler for a collect -y or -l signal; True if it does."""
    import time
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open("/proc/%d/status" % pid) as f:
                cgt = [l for l in f if l.startswith("SigCgt:")]
        except OSError:
            return False
        if cgt and int(cgt[0].split()[1], 16) >> (int(sig) - 1) & 1:
            return True
        time.sleep(0.01)
    return False


def print_json(exp, *cmds):
    """tally print --json cmds exp; returns the list of JSON documents."""
    exps = exp if isinstance(exp, list) else [exp]
    p = run([TALLY, "print", "--json"] + list(cmds) + exps, expect=0)
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def rows_by_name(doc):
    return {r["name"]: r for r in doc["rows"]}


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def close_to(actual, expected, rel, what):
    ok = abs(actual - expected) <= rel * abs(expected)
    check(ok, "%s: got %.4f, expected %.4f within %.0f%%" % (what, actual, expected, rel * 100))
    return ok


def bounded(actual, expected, below, above, what):
    """expected*(1-below) <= actual <= expected*(1+above); above=None: no upper bound.

    For one-sided physics: e.g. a measured sleep of S is bounded(t, S, 0.02, None) or, with a
    loose upper bound, bounded(t, S, 0.02, 1.0). The message names both bounds."""
    lo = expected * (1 - below)
    hi = None if above is None else expected * (1 + above)
    ok = actual >= lo and (hi is None or actual <= hi)
    check(ok, "%s: got %.4f, expected %.4f in [%.4f, %s] (-%.0f%%, %s)" %
          (what, actual, expected, lo, "inf" if hi is None else "%.4f" % hi, below * 100,
           "unbounded" if above is None else "+%.0f%%" % (above * 100)))
    return ok


def at_least(actual, expected, below, what):
    """actual >= expected*(1-below): e.g. a recorded wait is never much shorter than the wait."""
    return bounded(actual, expected, below, None, what)


def at_most(actual, bound, above, what):
    """actual <= bound*(1+above): e.g. sampled CPU time never exceeds the CPU the run used."""
    ok = actual <= bound * (1 + above)
    check(ok, "%s: got %.4f, expected at most %.4f (+%.0f%%)" % (what, actual, bound, above * 100))
    return ok


def skip(reason):
    """Ends the test as skipped (exit SKIP) with the reason on stdout, unless a check already
    failed (then it fails: a skip must never hide a failure)."""
    if failures:
        print("%d check(s) failed before skip (%s)" % (len(failures), reason), file=sys.stderr)
        sys.exit(1)
    print("SKIP: " + reason)
    sys.exit(SKIP)


def log_records(exp, kind=None):
    """The records of an experiment's log as (kind, dict) pairs."""
    out = []
    with open(os.path.join(exp, "log")) as f:
        for line in f.read().splitlines()[1:]:
            parts = line.split(" ")
            fields = {}
            for p in parts[1:]:
                if "=" in p:
                    k, v = p.split("=", 1)
                    fields[k] = v
            if kind is None or parts[0] == kind:
                out.append((parts[0], fields))
    return out


def done(d=None):
    if d and not failures:
        shutil.rmtree(d, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("ok")
    sys.exit(0)
