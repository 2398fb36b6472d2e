"""End-to-end test of libtally-collector.so on its own: workloads run with LD_PRELOAD and the
TALLY_SETTINGS variable exactly as `tally collect` starts them (the collector's contract, see
src/experiment/settings.h), and the experiment is checked against what the kernel accounted.

The events file is decoded here by a small independent decoder of docs/FORMAT.md, so this test
also checks the writer against the spec rather than against our own reader.
"""
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import WL, TALLY, check, close_to, done, fail, log_records, workdir  # noqa: E402

LIB = os.environ.get("TALLY_COLLECTOR",
                     os.path.join(os.path.dirname(os.path.abspath(TALLY)), "libtally-collector.so"))


def wl(name):
    return os.path.join(WL, "wl_" + name)


def run_collected(exp, argv, clock_ns=10_000_000, extra=None, timeout=120, mkdir=True):
    """Runs argv with the collector as the root of experiment exp; returns CompletedProcess.
    extra: more settings, {key in TALLY_SETTINGS (settings.def): value}."""
    if mkdir:
        os.makedirs(exp, exist_ok=True)
    env = dict(os.environ)
    settings = {"d": exp.replace("%", "%25").replace(",", "%2C"), "p": str(clock_ns)}
    settings.update(extra or {})
    env.update({"T_SETTINGS": ",".join("%s=%s" % kv for kv in settings.items()),
                "T_PRELOAD": LIB})
    # exec keeps the shell's pid, which is the root pid the collector compares with; the shell
    # itself must not be preloaded
    script = ('export TALLY_SETTINGS="$T_SETTINGS,r=$$,o=$$" LD_PRELOAD="$T_PRELOAD"; '
              'unset T_SETTINGS T_PRELOAD; exec "$@"')
    return subprocess.run(["sh", "-c", script, "sh"] + argv, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_bare(argv, timeout=120):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def leb(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def decode_events(exp):
    """{tid: {"weight": ns, "user": ns, "system": ns, "n": events, "times": [ns]}}, stacks
    [(flags, frames)] of the threads' own streams (not the sampler thread's, chunk tid 0, whose
    thread-state records refer to other threads' stacks)."""
    with open(os.path.join(exp, "events"), "rb") as f:
        data = f.read()
    if data[:8] != b"TALLYEVT":
        fail("%s/events: bad magic" % exp)
        return {}, []
    hsize, csize = struct.unpack_from("<II", data, 12)
    threads, stacks = {}, []
    k = 0
    while hsize + (k + 1) * csize <= len(data):
        off = hsize + k * csize
        k += 1
        magic, tid, seq, used = struct.unpack_from("<IIII", data, off)
        if magic == 0:
            continue
        check(magic == 0x314B4354, "%s: chunk %d has a bad magic" % (exp, k - 1))
        p, end = off + 32, off + 32 + used
        th = threads.setdefault(tid, {"weight": 0, "user": 0, "system": 0, "n": 0, "times": []})
        t = struct.unpack_from("<Q", data, off + 16)[0]
        while p < end:
            typ = data[p]
            ln, q = leb(data, p + 1)
            p = q + ln
            if typ != 1 and ln:  # every timed record starts with its time delta
                dt, _ = leb(data, q)
                t += dt
            if typ == 1:  # STACK
                _, q = leb(data, q)
                flags, q = leb(data, q)
                n, q = leb(data, q)
                frames = []
                for j in range(n):
                    v, q = leb(data, q)
                    if j:
                        v = frames[-1] + ((v >> 1) ^ -(v & 1))
                    frames.append(v)
                if tid != 0:
                    stacks.append((flags, frames))
            elif typ == 2:  # CLOCK
                _, q = leb(data, q)
                _, q = leb(data, q)
                state, q = leb(data, q)
                w, q = leb(data, q)
                th["weight"] += w
                th["user" if state == 0 else "system"] += w
                th["n"] += 1
                th["times"].append(t)
        check(p == end, "%s: chunk %d: records do not end at `used`" % (exp, k - 1))
    return threads, stacks


def last(exp, kind):
    recs = log_records(exp, kind)
    return recs[-1][1] if recs else None


def thread_ends(exp):
    return {int(f["tid"]): f for _, f in log_records(exp, "thread-end")}


def check_accuracy(exp, what, rel=0.03, min_cpu_ns=0):
    threads, _ = decode_events(exp)
    ends = thread_ends(exp)
    settings = last(exp, "settings")
    period = int(settings["clock"]) if settings and settings.get("clock", "").isdigit() else 0
    for tid, f in ends.items():
        cpu = int(f["cpu"])
        if cpu < min_cpu_ns:
            continue
        rec = threads.get(tid, {"weight": 0})["weight"]
        # the thread's CPU clock also counts what ran before the collector could start (the
        # loader, and for an exec'ed image the time since fork in the image before, where the
        # fork child set up its own experiment): a few ms that no profiler of this kind can see
        # in that image, so allow 10 ms besides the 3%; and a thread's last period, cut short by
        # its end, expires no timer: the record can be short by one more period, never long
        slack = max(rel * cpu, 10_000_000)
        short = max(rel * cpu, 10_000_000 + period)
        check(cpu - short <= rec <= cpu + slack,
              "%s: tid %d recorded CPU %d ns vs its CPU clock %d ns (more than %d ns short or "
              "%d ns long)" % (what, tid, rec, cpu, short, slack))


def objects(exp):
    return [(int(f["lo"], 16), int(f["hi"], 16), f["path"]) for _, f in log_records(exp, "load")]


def obj_of(objs, pc):
    for lo, hi, path in objs:
        if lo <= pc < hi:
            return path
    return None


# ---- single thread: accuracy, stack completeness ---------------------------------------------

def test_cpu_single(d):
    for clock in (10_000_000, 1_000_000):
        exp = os.path.join(d, "single-%d" % clock)
        p = run_collected(exp, [wl("cpu_single"), "1"], clock)
        check(p.returncode == 0 and "done" in p.stdout, "cpu_single under the collector failed")
        check_accuracy(exp, "cpu_single clock=%d" % clock)
        st = last(exp, "stats")
        # 1 ms: a perf event fires after each ms of the thread's CPU; 10 ms: a CPU-time timer,
        # checked at the scheduler ticks the thread is running at: under load, preempted
        # between ticks, its expiries come late and two late ones are one signal (84 of 99 seen
        # under ctest -j2, the weights still exact): what is checked is that it never stalls
        least = 0.9 if clock < 10_000_000 else 0.6
        check(st and int(st["samples"]) > least * int(st["expected"]),
              "cpu_single clock=%d: samples %s of expected %s" %
              (clock, st and st["samples"], st and st["expected"]))
        check(st and st["unwind_failures"] == "0", "cpu_single: unwind failures")
        end = last(exp, "end")
        check(end and end["how"] == "exit" and end["status"] == "0", "cpu_single: end record")
        settings = last(exp, "settings")
        check(settings and settings["clock"] == str(clock), "cpu_single: settings clock")
        # every stack is complete: its outermost frame is in the program (_start)
        _, stacks = decode_events(exp)
        objs = objects(exp)
        exe = os.path.realpath(wl("cpu_single"))
        bad = [s for s in stacks if not s[1] or obj_of(objs, s[1][-1]) != exe]
        check(not bad, "cpu_single: %d of %d stacks do not end in the program" %
              (len(bad), len(stacks)))


# ---- threads: every way of creating one ------------------------------------------------------

def test_threads(d):
    # 1 ms: a task-clock perf event per thread (CPU-time timers fire on scheduler ticks, 4 ms
    # here); forced: the timers; 10 ms (-p on): the timers, which cost a thread nothing when it
    # is switched in or out, where a perf event costs every switch
    for source, clock in (("task-clock", 1_000_000), ("timer", 1_000_000),
                          ("timer-10ms", 10_000_000)):
        exp = os.path.join(d, "threads-%s" % source)
        extra = {"T": "on"} if source == "timer" else {}
        p = run_collected(exp, [wl("threads4"), "0.5"], clock, extra)
        check(p.returncode == 0, "threads4 failed: %s" % p.stderr)
        hows = [f["how"] for _, f in log_records(exp, "thread")]
        check(hows.count("main") == 1 and hows.count("pthread_create") == 5,
              "threads4 (%s): thread records %s" % (source, hows))
        check(len(thread_ends(exp)) == 6, "threads4: 6 thread-end records")
        check_accuracy(exp, "threads4 (%s)" % source, 0.03, min_cpu_ns=50_000_000)
        s = last(exp, "settings")
        check(s["clock_source"] == ("task-clock" if source == "task-clock" else "cputime-timer"),
              "threads4 (%s): clock_source %s" % (source, s["clock_source"]))


# ---- the program's own signals and timers ----------------------------------------------------

def test_own_signals(d):
    exp = os.path.join(d, "sigprof")
    p = run_collected(exp, [wl("own_sigprof"), "1"], 1_000_000)
    got = dict(f.split("=", 1) for f in p.stdout.split() if "=" in f)
    # what the program reports of its signals is fixed: all 3 raised SIGRTMAX-4 reach its own
    # handler, errno survives every signal, it sees its own handler, its mask is its own
    fixed = {"rt": "3", "errno": "ok", "view": "ok", "mask": "ok"}
    check(p.returncode == 0 and {k: got.get(k) for k in fixed} == fixed,
          "own_sigprof under the collector: status %d, %r" % (p.returncode, p.stdout))
    if "ticks" in got and "unblocked_us" in got:
        ticks, cpu_ms = int(got["ticks"]), float(got["unblocked_us"]) / 1000
        # The tick count is not compared with a bare run's (another moment, another load: 91
        # against 157 was seen at ctest -j2) nor with a nominal rate: ITIMER_PROF is checked on
        # the kernel's ticks, and its SIGPROF waits pending while the thread waits for a CPU
        # (expiries meanwhile merge into it), so under load the count collapses by itself (11 in
        # 500 ms of CPU was seen at load average 11). It is bounded by the program's own CPU time
        # with SIGPROF unblocked: at most one tick per 1 ms interval of it, plus the one left
        # pending by the blocked stretch and one for the instants between its measurement and
        # the block (more = ticks invented or doubled); at least one (none = the timer lost).
        check(1 <= ticks <= cpu_ms + 2,
              "own_sigprof: %d ticks in %.1f ms of CPU time with SIGPROF unblocked "
              "(expected 1 to %.0f)" % (ticks, cpu_ms, cpu_ms + 2))


def test_endings(d):
    cases = {"segv": ("signal", "SIGSEGV"), "abort": ("signal", "SIGABRT"),
             "handler": ("signal", "SIGSEGV"), "recover": ("exit", "3"), "_exit": ("exit", "7")}
    for mode, (how, what) in cases.items():
        bare = run_bare([wl("crash"), mode, "0.2"])
        exp = os.path.join(d, "crash-" + mode)
        p = run_collected(exp, [wl("crash"), mode, "0.2"], 1_000_000)
        check(p.returncode == bare.returncode and p.stdout == bare.stdout,
              "crash %s: status %d vs bare %d" % (mode, p.returncode, bare.returncode))
        end = last(exp, "end")
        ok = end and end["how"] == how and \
            (end.get("name") == what if how == "signal" else end.get("status") == what)
        check(ok, "crash %s: end record %s" % (mode, end))
        check(last(exp, "stats") is not None, "crash %s: no stats record" % mode)
        threads, _ = decode_events(exp)
        check(sum(t["weight"] for t in threads.values()) > 150_000_000,
              "crash %s: the events before the end were not kept" % mode)


# ---- processes -------------------------------------------------------------------------------

def test_processes(d):
    bare = run_bare([wl("forkexec")])
    exp = os.path.join(d, "forkexec")
    p = run_collected(exp, [wl("forkexec")], 1_000_000)
    check(p.returncode == 0 and p.stdout == bare.stdout,
          "forkexec: %r vs bare %r" % (p.stdout, bare.stdout))
    kinds = sorted(f["kind"] for _, f in log_records(exp, "descendant"))
    check(kinds == ["fork", "fork", "spawn", "spawn", "spawn", "spawn"],
          "forkexec: descendants %s" % kinds)
    for sub in ("_f1.tally", "_f2.tally/_x1.tally", "_x1.tally", "_x2.tally"):
        e = os.path.join(exp, sub)
        end = last(e, "end") if os.path.exists(os.path.join(e, "log")) else None
        check(end is not None and end["how"] == "exit", "forkexec: %s has no exit end" % sub)
        if end:
            check_accuracy(e, "forkexec " + sub, 0.03)
    check(last(os.path.join(exp, "_f1.tally"), "end")["status"] == "5", "fork child status")
    check(last(os.path.join(exp, "_f2.tally"), "end")["how"] == "exec", "fork+exec: end how=exec")
    check(any("exec failed" in f.get("what", "").replace("%20", " ")
              for _, f in log_records(exp, "warning")), "forkexec: no warning for failed exec")
    # follow off: nothing below the root, and the program still behaves
    exp = os.path.join(d, "forkexec-nofollow")
    p = run_collected(exp, [wl("forkexec")], 1_000_000, {"F": "off"})
    check(p.stdout == bare.stdout, "forkexec follow=off: output differs")
    check(sorted(os.listdir(exp)) == ["events", "log"], "follow=off: descendants were recorded")


# ---- dlopen while sampled --------------------------------------------------------------------

def test_dlopen(d):
    for i in range(20):
        exp = os.path.join(d, "dlopen-%d" % i)
        try:
            p = run_collected(exp, [wl("dlopen_lib"), "4", "500"], 1_000_000, timeout=60)
        except subprocess.TimeoutExpired:
            fail("dlopen_lib hung (run %d)" % i)
            return
        if not check(p.returncode == 0 and "dlopen ok" in p.stdout,
                     "dlopen_lib run %d: %s %s" % (i, p.stdout, p.stderr)):
            return
    paths = [f["path"] for _, f in log_records(exp, "load")]
    check(any(x.endswith("libwl_plugin.so") for x in paths), "dlopen: no load of the plugin")


# ---- deep recursion, duration, disk ----------------------------------------------------------

def test_limits(d):
    exp = os.path.join(d, "deep")
    p = run_collected(exp, [wl("deep_recursion"), "10000", "0.3"], 1_000_000)
    check(p.returncode == 0 and "ok" in p.stdout, "deep_recursion failed")
    st = last(exp, "stats")
    check(st and int(st["truncated_stacks"]) > 0, "deep_recursion: no truncated stacks")
    _, stacks = decode_events(exp)
    check(max(len(s[1]) for s in stacks) == 1024, "deep_recursion: max depth not 1024")

    exp = os.path.join(d, "window")
    run_collected(exp, [wl("cpu_single"), "1"], 1_000_000,
                  {"t": "300000000-600000000"})
    threads, _ = decode_events(exp)
    total = sum(t["weight"] for t in threads.values())
    # the window is wall time: a program that has a CPU to itself records 0.3 s, one that shares
    # it less (under load, any share: 5% of a CPU was seen), never more (3%: a sample's weight
    # ends in the window but began before it); and nothing outside the window. The least is one
    # 1 ms sample: the scheduler runs every runnable task within its period (tens of ms, however
    # loaded), so a 0.3 s window cannot pass without the program running in it
    check(0 < total <= 0.3e9 * 1.03, "duration window 0.3-0.6 s: %d ns recorded" % total)
    t0 = int(last(exp, "start")["t"])
    times = [t for th in threads.values() for t in th["times"]]
    check(times and min(times) >= t0 + 0.3e9 and max(times) <= t0 + 0.6e9 + 2e6,
          "duration window: events from %.3f to %.3f s" %
          ((min(times) - t0) / 1e9, (max(times) - t0) / 1e9) if times else "no events")

    blocker = os.path.join(d, "not-a-directory")
    open(blocker, "w").close()
    p = run_collected(os.path.join(blocker, "exp"), [wl("forkexec")], 1_000_000, mkdir=False)
    lines = [x for x in p.stderr.splitlines() if x.startswith("tally collector:")]
    check(p.returncode == 0 and "fork=5" in p.stdout and len(lines) == 1,
          "unwritable experiment: status %d, stderr %r" % (p.returncode, p.stderr))


def main():
    if not os.path.exists(LIB):
        # part of every build: its absence is a broken build, not a reason to skip
        print("FAIL: %s not found: build the tally-collector target (or set TALLY_COLLECTOR)"
              % LIB, file=sys.stderr)
        sys.exit(1)
    d = workdir("collector")
    for t in (test_cpu_single, test_threads, test_own_signals, test_endings, test_processes,
              test_dlopen, test_limits):
        t(d)
    done(d)


if __name__ == "__main__":
    main()
