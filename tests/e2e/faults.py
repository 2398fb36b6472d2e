"""Reliability: a program behaves exactly as without tally (its signal stacks, descriptors, signal
mask, the way it ends), tracers do not hide each other's events, and what could not be recorded
(a full disk) is said, with counts, at the top of every view it affects.

The disk-full cases mount a small tmpfs; where mounting is not permitted they are reported as
skipped (exit 77) after the other cases ran, never as passed."""
import os
import re
import shutil
import resource
import signal
import subprocess
from common import *

d = workdir("faults")
prog = os.path.join(WL, "wl_faults")
skipped = []


def plain(args, preexec=None):
    """The program's own output and status, without tally."""
    p = subprocess.run([prog] + args, capture_output=True, text=True, timeout=120,
                       preexec_fn=preexec)
    return p.returncode, p.stdout


def under_tally(name, args, opts=(), preexec=None, cwd=None):
    """tally collect's CompletedProcess, the program's stdout being tally's stdout."""
    exp = os.path.join(d, name + ".tally")
    p = subprocess.run([TALLY, "collect", "-d", d, "-o", name] + list(opts) + [prog] + args,
                       capture_output=True, text=True, timeout=240, preexec_fn=preexec, cwd=cwd)
    return p, exp


def log_records(exp, kind):
    """The fields of every `kind` record of exp's log, as dicts of strings."""
    out = []
    for line in open(os.path.join(exp, "log")):
        f = line.split()
        if f and f[0] == kind:
            out.append(dict(x.split("=", 1) for x in f[1:] if "=" in x))
    return out


# ---- a handler on a small alternate signal stack -------------------------------------------------
# 8 KiB is enough for the program alone; the profiling signal lands on that stack while the
# handler computes. The collector must not unwind there (no room), and say so.
rc, out = plain(["altstack"])
check(rc == 0 and out == "altstack ok\n", "altstack without tally: %d %r" % (rc, out))
for i in range(3):
    p, exp = under_tally("alt%d" % i, ["altstack"], opts=["-p", "hi", "-A", "off"])
    if not check(p.returncode == 0 and p.stdout == out,
                 "altstack under tally: exit %d, stdout %r (expected 0, %r)\n%s" %
                 (p.returncode, p.stdout, out, p.stderr[-1500:])):
        break
    st = log_records(exp, "stats")[0]
    check(int(st["unwind_no_room"]) > 0, "altstack: no sample counted as not unwound: %r" % st)
    check("too small to unwind" in p.stderr, "altstack: collect did not say so: %s" % p.stderr)

# ---- the program's view of its signal mask -------------------------------------------------------
rc, out = plain(["sigmask"])
check(rc == 0 and "sigprocmask: 6" in out and "sigsuspend(NULL): -1 Bad address" in out,
      "sigmask without tally: %d %r" % (rc, out))
p, _ = under_tally("sigmask", ["sigmask"], opts=["-p", "hi", "-A", "off"])
check(p.returncode == 0 and p.stdout == out,
      "sigmask: the program reads back another mask under tally:\n%s\nexpected:\n%s" %
      (p.stdout, out))

# ---- the program's descriptors ------------------------------------------------------------------
# The sequence of numbers open() returns is the same with and without tally: the first is 3, and
# with RLIMIT_NOFILE 16 (set by the program, or as the soft limit before tally starts) the program
# still opens 13 files; its fork child is profiled.
def soft_limit_16():
    resource.setrlimit(resource.RLIMIT_NOFILE, (16, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

for name, args, pre in (("fds", ["fds"], None), ("fds_limit", ["fds", "16"], None),
                        ("fds_limit_before", ["fds"], soft_limit_16)):
    rc, out = plain(args, pre)
    check(rc == 0 and out.startswith("parent: 3 4 "), "%s without tally: %d %r" % (name, rc, out))
    p, exp = under_tally(name, args, opts=["-A", "off"], preexec=pre)
    check(p.returncode == 0 and p.stdout == out,
          "%s: the program's descriptors differ under tally:\n%s\nexpected:\n%s\n%s" %
          (name, p.stdout, out, p.stderr[-1000:]))
    child = os.path.join(exp, "_f1.tally")
    st = log_records(child, "stats") if os.path.exists(os.path.join(child, "log")) else []
    check(st and int(st[0]["samples"]) > 0,
          "%s: the fork child was not profiled (stats %r)" % (name, st))

# ---- the driver ends as the program did ----------------------------------------------------------
# A shell loop interrupted by ^C must see the interrupt: tally dies of the program's signal (without
# a core file of its own), after recording the experiment.
for sig in (signal.SIGINT, signal.SIGSEGV, signal.SIGTERM):
    cwd = workdir("faults-die")
    p, exp = under_tally("die%d" % sig, ["die", str(int(sig))], opts=["-A", "off"], cwd=cwd)
    check(p.returncode == -sig, "program killed by %s: tally exited %d, expected to die of it" %
          (sig.name, p.returncode))
    ends = log_records(exp, "end")
    check(ends and ends[-1].get("signal") == str(int(sig)),
          "die %s: the experiment's end is %r" % (sig.name, ends))
    check(not [f for f in os.listdir(cwd) if f.startswith("core")],
          "die %s: a core file was left in %s" % (sig.name, cwd))

# ---- heap and I/O tracing together ---------------------------------------------------------------
# fopen's FILE and buffer are the program's allocations whether or not I/O is traced too.
def heap_total(exp):
    docs = print_json(exp, "-metrics", "i.heapalloccnt:name", "-functions")
    return rows_by_name(docs[0])["<Total>"]["i.heapalloccnt"]

exp_h = collect(d, [prog, "stdio", "50"], opts=["-H", "on", "-p", "off", "-A", "off"],
                name="stdio_h")
exp_hi = collect(d, [prog, "stdio", "50"], opts=["-H", "on", "-i", "on", "-p", "off", "-A", "off"],
                 name="stdio_hi")
n_h, n_hi = heap_total(exp_h), heap_total(exp_hi)
check(n_h >= 100, "stdio -H on: %d allocations, expected at least the 100 FILEs" % n_h)
check(n_h == n_hi, "stdio: %d allocations with -H on, %d with -H on -i on" % (n_h, n_hi))

# ---- a full disk -----------------------------------------------------------------------------------
def mount_tmpfs(size):
    mnt = workdir("faults-disk")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mnt],
                       capture_output=True, text=True)
    return mnt if r.returncode == 0 else None

def umount(mnt):
    subprocess.run(["umount", mnt], capture_output=True)

mnt = mount_tmpfs("2m")
if not mnt:
    skipped.append("disk-full cases: cannot mount a tmpfs here (needs root)")
else:
    try:
        # during the run: the heap records that found no room are counted, and every view of
        # them says so at its top (text) and in an "incomplete" field (JSON); so does the archive
        p = subprocess.run([TALLY, "collect", "-d", mnt, "-o", "full", "-H", "on", prog, "heap",
                            "3000000"], capture_output=True, text=True, timeout=240)
        exp = os.path.join(mnt, "full.tally")
        check(p.returncode == 0, "disk full during the run: exit %d\n%s" % (p.returncode, p.stderr))
        check(re.search(r"warning: \d+ heap records were lost: no disk space", p.stderr),
              "disk full during the run: collect did not count the lost heap records:\n" + p.stderr)
        # (collect gives the chunks' unused ends back to the disk after the run, so its archive
        # step may find room again: archiving into a disk that is full is checked on its own)
        with open(os.path.join(mnt, "fill"), "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        shutil.rmtree(os.path.join(exp, "archive"), ignore_errors=True)
        a = subprocess.run([TALLY, "archive", exp], capture_output=True, text=True, timeout=240)
        check(a.returncode != 0 and "cannot write the archive" in a.stderr,
              "disk full: tally archive did not say it could not write (exit %d):\n%s"
              % (a.returncode, a.stderr))
        for view in ("-heap", "-heap_peak", "-functions", "-leaks"):
            t = run([TALLY, "print", view, exp], expect=0).stdout
            # (other kinds may come first: clock samples, when the disk filled before the clock
            # stream's first chunk)
            check(re.match(r"Warning: incomplete data: (\d+ [a-z -]+, )*\d+ heap records.* were "
                           r"lost while recording \(the disk was full\)", t),
                  "disk full: %s does not say at its top that heap records were lost:\n%s" %
                  (view, t[:300]))
            doc = print_json(exp, view)[0]
            inc = doc.get("incomplete", {})
            check(inc.get("heap", 0) > 1000 and inc.get("disk_full") is True,
                  "disk full: %s JSON has no count of the lost heap records: %r" % (view, inc))
        t = run([TALLY, "print", "-io_files", exp], expect=0).stdout
        check("incomplete" not in t, "-io_files says I/O data is incomplete; none was traced")
    finally:
        umount(mnt)

    mnt = mount_tmpfs("1m")
    try:
        # before the start: one clear message, and no unreadable experiment left behind
        with open(os.path.join(mnt, "fill"), "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        p = subprocess.run([TALLY, "collect", "-d", mnt, "-o", "none", prog, "heap", "1000"],
                           capture_output=True, text=True, timeout=240)
        errs = [l for l in p.stderr.splitlines() if "recording experiment" not in l]
        check(p.returncode != 0, "disk full before the start: tally exited 0")
        check(len(errs) == 1 and "No space left on device" in errs[0],
              "disk full before the start: expected one message naming the full disk, got:\n" +
              p.stderr)
        exp = os.path.join(mnt, "none.tally")
        check(not os.path.exists(exp) or run([TALLY, "print", "-header", exp]).returncode == 0,
              "disk full before the start: an unreadable experiment was left: %r" %
              (os.listdir(exp) if os.path.exists(exp) else None))
    finally:
        umount(mnt)

if failures:
    sys.exit(1)
if skipped:
    skip("; ".join(skipped))
print("faults: all checks passed")
