"""Experiments made by someone else: the reader and the analyzer stay within bounded time and
memory and say clearly what is wrong, with a non-zero status, never a crash or a hang.

Each case is crafted from one small real experiment (collected here) or written byte by byte
(docs/FORMAT.md). tally runs under an address-space limit of 1 GiB and a timeout far above what a
bounded reader needs (hangs and quadratic work are what the timeout catches, not speed).
"""
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import time
from common import *

LIMIT = 1 << 30  # address space for tally: gigabyte tables abort or fail under it
TIMEOUT = 60


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def tally(args, timeout=TIMEOUT):
    """Runs tally under the memory limit; a timeout is a failure (returns None)."""
    try:
        return subprocess.run([TALLY] + args, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=limited)
    except subprocess.TimeoutExpired:
        fail("tally %s did not finish within %d s" % (" ".join(args), timeout))
        return None


def expect(p, status, pattern, what):
    """p exited with status (never a signal) and its output matches pattern."""
    if p is None:
        return False
    out = p.stdout + p.stderr
    ok = check(p.returncode >= 0, "%s: killed by signal %d\n%s" % (what, -p.returncode, out[-1500:]))
    ok = ok and check(p.returncode == status, "%s: exit %d, expected %d\n%s" %
                      (what, p.returncode, status, out[-1500:]))
    if pattern:
        ok = ok and check(re.search(pattern, out) is not None,
                          "%s: output does not match %r\n%s" % (what, pattern, out[-1500:]))
    return ok


# ---- crafting ---------------------------------------------------------------------------------

def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sleb(v):
    return uleb((v << 1) ^ (v >> 63) if v >= 0 else ((v << 1) ^ -1) & (2**64 - 1))


def rec(typ, payload):
    return bytes([typ]) + uleb(len(payload)) + payload


def stack_rec(sid, pcs, flags=0):
    body = uleb(sid) + uleb(flags) + uleb(len(pcs))
    prev = None
    for pc in pcs:
        body += uleb(pc) if prev is None else sleb(pc - prev)
        prev = pc
    return rec(1, body)


def clock_rec(dt, sid, weight, state=0):
    return rec(2, uleb(dt) + uleb(sid) + uleb(state) + uleb(weight))


def events_file(chunks, csize=4096, hsize=4096, version=1):
    """chunks: list of (tid, seq, stream, t0, records bytes)."""
    head = b"TALLYEVT" + struct.pack("<IIIIQ", version, hsize, csize, 1, 1000)
    out = bytearray(head.ljust(hsize, b"\0"))
    for tid, seq, stream, t0, body in chunks:
        assert len(body) <= csize - 32
        ch = struct.pack("<IIIIQII", 0x314b4354, tid, seq, len(body), t0, stream, 0) + body
        out += ch.ljust(csize, b"\0")
    return bytes(out)


def base_log(extra=""):
    return ("tally-experiment version=1\n"
            "start t=1000000000 real=1795483321802436511 pid=7 ppid=1 host=h kernel=k arch=x86_64"
            " ncpus=2 exe=/bin/prog cwd=/\n"
            "settings clock=10000000 clock_source=task-clock\n"
            "thread t=1000000100 tid=7 name=prog how=main\n" + extra +
            "end t=2000000000 how=exit status=0\n")


def crafted(name, log, events=None):
    """A one-process experiment with this log text and events bytes."""
    exp = os.path.join(d, name + ".tally")
    os.mkdir(exp)
    with open(os.path.join(exp, "log"), "w") as f:
        f.write(log)
    if events is not None:
        with open(os.path.join(exp, "events"), "wb") as f:
            f.write(events)
    return exp


d = workdir("hostile")
real = collect(d, [os.path.join(WL, "wl_cpu_single")], opts=["-A", "off"], name="real")


def copy_real(name):
    exp = os.path.join(d, name + ".tally")
    shutil.copytree(real, exp, symlinks=True)
    return exp


# ---- resources from a few bytes ---------------------------------------------------------------

# a stack id of 2^31 and 2^40: no table sized by the id
for sid in (1 << 31, 1 << 40):
    body = stack_rec(sid, [0x401000, 0x401100]) + clock_rec(10, sid, 1000000)
    exp = crafted("stackid%d" % sid.bit_length(), base_log(), events_file([(7, 0, 0, 1000, body)]))
    expect(tally(["check", exp]), 1, r"malformed stack record at offset 4128", "stack id %d: check" % sid)
    expect(tally(["print", "-functions", exp]), 0, r"<Total>", "stack id %d: print" % sid)

# a chunk size of 2^30 for a file of 8 KiB: nothing chunk-sized is allocated
body = stack_rec(0, [0x401000]) + clock_rec(10, 0, 1000000)
ev = bytearray(events_file([(7, 0, 0, 1000, body)]))
ev[16:20] = struct.pack("<I", 1 << 30)
exp = crafted("bigchunk", base_log(), bytes(ev))
expect(tally(["check", exp]), 1, r"chunk cut short by the end of the file at offset 4096",
       "chunk size 2^30: check")
expect(tally(["print", "-functions", exp]), 0, r"<Total>", "chunk size 2^30: print")
# ... nor anything sized by what such a chunk could hold: a stack id of 2^27 is more than the
# stack records 8 KiB can define (a table of a gigabyte before)
sid = 1 << 27
body = stack_rec(sid, [0x401000]) + clock_rec(10, sid, 1000000)
big = bytearray(events_file([(7, 0, 0, 1000, body)]))
big[16:20] = struct.pack("<I", 1 << 30)
exp = crafted("bigchunkid", base_log(), bytes(big))
expect(tally(["check", exp]), 1, r"1 bad chunks, 2 bad records",
       "chunk size 2^30, stack id 2^27: check")
expect(tally(["print", "-functions", exp]), 0, r"<Total>", "chunk size 2^30, stack id 2^27: print")
ev[16:20] = struct.pack("<I", 5000)  # not a multiple of 4096
exp = crafted("oddchunk", base_log(), bytes(ev))
expect(tally(["check", exp]), 1, r"bad chunk size 5000 at offset 16", "chunk size 5000")

# a CLOCK record whose one-byte length runs past the chunk's end (its fields are all there): the
# rest of the chunk cannot be framed, and check says so, as for any other record (the CLOCK
# path took it, dropped the four records after it and said nothing)
good = clock_rec(10, 0, 1000000)
liar = bytes([2, 100]) + uleb(10) + uleb(0) + uleb(0) + uleb(1000000)
body = stack_rec(0, [0x401000]) + good + liar + good * 4
exp = crafted("lenlie", base_log(), events_file([(7, 0, 0, 1000, body)]))
expect(tally(["check", exp]), 1, r"record that cannot be framed at offset %d" %
       (4128 + len(stack_rec(0, [0x401000]) + good)), "CLOCK length past the chunk: check")
expect(tally(["print", "-header", exp]), 0, r"damage: 0 bad chunks, 1 bad records",
       "CLOCK length past the chunk: print -header")

# log and events must be regular files: /dev/zero, a FIFO, a symbolic link, a directory
for what, make in (("zero", lambda p: os.symlink("/dev/zero", p)),
                   ("fifo", lambda p: os.mkfifo(p)),
                   ("dir", lambda p: os.mkdir(p))):
    exp = copy_real("log" + what)
    os.unlink(os.path.join(exp, "log"))
    make(os.path.join(exp, "log"))
    for cmd in (["check"], ["print", "-functions"]):
        expect(tally(cmd + [exp]), 1, r"log' is (a symbolic link|not a regular file)",
               "log as %s: %s" % (what, cmd[0]))
    exp = copy_real("events" + what)
    os.unlink(os.path.join(exp, "events"))
    make(os.path.join(exp, "events"))
    expect(tally(["check", exp]), 1, r"events' is (a symbolic link|not a regular file)",
           "events as %s: check" % what)
    expect(tally(["print", "-functions", exp]), 1, r"events' is (a symbolic link|not a regular file)",
           "events as %s: print" % what)

# a log line of 40 MiB: refused as longer than any tally writes, the rest read
exp = crafted("longline", base_log("warning what=" + "x" * (40 << 20) + "\n"))
expect(tally(["check", exp]), 1, r"a line of 41943053 bytes, longer than any tally writes",
       "long log line")

# descendants are not reached through symbolic links: one to the experiment itself
exp = copy_real("selflink")
os.symlink(".", os.path.join(exp, "_f1.tally"))
os.symlink(os.path.abspath(exp), os.path.join(exp, "_f2.tally"))
p = tally(["check", exp])
expect(p, 1, r"1 process\n", "descendant symlinks")
expect(p, 1, r"descendant _f1.tally is a symbolic link; not followed", "descendant symlink")

# descendants nested deeper than the reader goes: read up to the limit, then said
exp = copy_real("deep")
sub = exp
for i in range(300):
    sub = os.path.join(sub, "_f1.tally")
    try:
        os.mkdir(sub)
    except OSError:  # the path became too long for this system
        break
    shutil.copy(os.path.join(real, "log"), os.path.join(sub, "log"))
p = tally(["check", exp])
expect(p, 1, r"(more than 256 levels of descendants|not read: File name too long)", "deep descendants")

# a 150,000-frame stack: the call tree is built and printed without recursion
n = 150000
body = stack_rec(0, [0x401000 + 16 * i for i in range(n)]) + clock_rec(10, 0, 1000000)
csize = (len(body) + 32 + 4095) // 4096 * 4096
exp = crafted("deepstack", base_log(), events_file([(7, 0, 0, 1000, body)], csize=csize))
p = tally(["print", "-calltree", exp], timeout=240)
expect(p, 0, r"<Total>", "150,000 frames: -calltree")
if p is not None:
    check(len(p.stdout) < 64 << 20, "150,000 frames: -calltree wrote %d bytes" % len(p.stdout))
p = tally(["print", "--json", "-calltree", exp], timeout=240)
expect(p, 0, r'"view":"calltree"', "150,000 frames: --json -calltree")
expect(tally(["print", "-callers-callees", exp], timeout=240), 0, r"", "150,000 frames: -callers-callees")

# 400,000 thread records: one hashed lookup per record, not a scan of the threads so far
lines = "".join("thread t=%d tid=%d name=t how=pthread_create\n" % (1000000200 + i, 100 + i)
                for i in range(400000))
lines += "".join("thread-end t=%d tid=%d cpu=1 user=1 system=0 samples=0\n" % (1500000000 + i, 100 + i)
                 for i in range(400000))
exp = crafted("threads", base_log(lines))
expect(tally(["check", exp], timeout=120), 0, r"400001 threads", "400,000 threads: check")

# ---- the dataspace records: many of them cost linear time --------------------------------------

def chunked(records, tid=7, t0=1500000000):
    """records spread over 4 KiB chunks of one stream (seq 0, 1, ..., each starting at t0); a
    STACK record defining stack 0 starts the stream."""
    bodies, cur = [], stack_rec(0, [0x401000])
    for r in records:
        if len(cur) + len(r) > 4096 - 32:
            bodies.append(cur)
            cur = b""
        cur += r
    bodies.append(cur)
    return events_file([(tid, i, 0, t0 + 1000 * i, b) for i, b in enumerate(bodies)])


def memref_rec(ea, sid=0):  # a clock sample's reference at ea, pc 0x10 (in no object)
    return rec(24, uleb(0) + uleb(0) + uleb(sid) + uleb(1000) + uleb(1) + uleb(0x10) + uleb(ea))


ds_log = lambda extra="": base_log(extra).replace("clock_source=", "clock_dataspace=on clock_source=")

# 400,000 TLS_BLOCK records of one thread, each of another object: one hashed lookup a record
# (a linear search of the blocks so far made it quadratic)
n = 400000
recs = [rec(25, uleb(0) + uleb(i) + uleb(0x7f0000000000 + 64 * i)) for i in range(n)]
recs += [clock_rec(1, 0, 1000), memref_rec(0x7f0000000000 + 64 * 7 + 8)]
exp = crafted("tlsblocks", ds_log(), chunked(recs))
expect(tally(["print", "-data_objects", exp]), 0, r"<Total>", "400,000 TLS blocks: -data_objects")

# 400,000 threads with stacks and 400,000 references in none of them: each reference looks up
# the stacks by address, not every thread's
lines = "".join("thread t=%d tid=%d name=t how=pthread_create stack_lo=0x%x stack_hi=0x%x\n" %
                (1000000200 + i, 100 + i, 0x10000000 + 0x10000 * i, 0x10000000 + 0x10000 * i + 0x8000)
                for i in range(n))
recs = [clock_rec(1, 0, 1000) + memref_rec(0x9000000000 + 8 * i) for i in range(n)]
recs.append(clock_rec(1, 0, 1000) + memref_rec(0x10000000 + 0x10000 * 5 + 0x100))  # in thread 105's
exp = crafted("stacks", ds_log(lines), chunked(recs))
p = tally(["print", "-data_objects", exp], timeout=120)
expect(p, 0, r"<Stack>", "400,000 thread stacks: -data_objects")

# heap blocks whose addresses follow the order of the block table's priorities (its generator
# is public): with priorities an experiment can predict, a chain as deep as the blocks (its
# recursion overflowed the stack; quadratic time before that)
def xorshift_prios(count, seed=0x9e3779b97f4a7c15):
    out, r, m = [], seed, (1 << 64) - 1
    for _ in range(count):
        r ^= (r << 13) & m
        r ^= r >> 7
        r ^= (r << 17) & m
        out.append(r >> 32)
    return out

n = 300000
prio = xorshift_prios(n)
rank = sorted(range(n), key=lambda i: prio[i])
addr = [0] * n
for k, i in enumerate(rank):
    addr[i] = 0x100000000 + 64 * k
bodies, cur, prev = [], stack_rec(0, [0x401000]), 0
for i in range(n):
    r = rec(10, uleb(0) + sleb(addr[i] - prev) + uleb(0) + uleb(32))
    if len(cur) + len(r) > 4096 - 32:
        bodies.append(cur)
        cur, prev = b"", 0  # the address chain starts again in each chunk
        r = rec(10, uleb(0) + sleb(addr[i]) + uleb(0) + uleb(32))
    cur += r
    prev = addr[i]
bodies.append(cur + clock_rec(1, 0, 1000) + memref_rec(addr[5] + 8))
exp = crafted("heapchain", ds_log().replace("settings ", "settings heap_map=on "),
              events_file([(7, i, 0, 1500000000 + 1000 * i, b) for i, b in enumerate(bodies)]))
expect(tally(["print", "-data_objects", exp], timeout=120), 0, r"\{heap:",
       "300,000 heap blocks in priority order: -data_objects")

# ---- hashed lookups an experiment cannot flood -------------------------------------------------

# 500,000 sync objects whose addresses were chosen so that the hash of the lookup by address
# (u64map's mix, public) gives them all one slot: every lookup walked all of them (quadratic).
# Its hash is keyed by a secret of the process now.
M64 = (1 << 64) - 1


def unmix(y):  # the inverse of u64map's mix without a seed (MurmurHash3's finalizer)
    y ^= y >> 33
    y = y * pow(0xc4ceb9fe1a85ec53, -1, 1 << 64) & M64
    y ^= y >> 33
    y = y * pow(0xff51afd7ed558ccd, -1, 1 << 64) & M64
    y ^= y >> 33
    return y


n = 500000
cinv = pow(0x9e3779b97f4a7c15, -1, 1 << 64)
recs = []
for i in range(n):
    key = (unmix((i + 1) << 40) - 1) & M64  # u64map stores key + 1; traces.c's key is addr * C
    recs.append(rec(4, uleb(1) + uleb(0) + uleb(1000) + uleb(key * cinv & M64) + uleb(0)))
exp = crafted("syncflood", base_log().replace("settings ", "settings sync=0 "), chunked(recs))
expect(tally(["print", "-limit", "3", "-sync_objects", exp], timeout=120), 0, r"",
       "500,000 colliding sync objects: -sync_objects")

# 64-bit sums: weights that add up past 2^64 saturate, and a warning says so
big = (1 << 63) + 12345
body = stack_rec(0, [0x401000]) + clock_rec(10, 0, big) + clock_rec(10, 0, big)
exp = crafted("wrap", base_log(), events_file([(7, 0, 0, 1000, body)]))
p = tally(["print", "-functions", exp])
expect(p, 0, r"saturated", "wrapping sums: warning")
if p is not None:
    check("18446744073" in p.stdout, "wrapping sums: total not saturated:\n%s" % p.stdout)

# repeated start and settings records: the first is used, a warning says so
exp = crafted("dupstart", base_log().replace(
    "end t=", "start t=5 pid=99 host=other\nsettings clock=1\nend t="))
p = tally(["print", "-header", exp])
expect(p, 0, r"second 'start' record; the first one is used", "duplicate start")
expect(p, 0, r"Host: +h, k", "duplicate start: the first is used")
expect(p, 0, r"interval 10.000 ms", "duplicate settings: the first is used")

# ---- durations --------------------------------------------------------------------------------

# a program the collector could not enter (statically linked): only tally collect's end record
exp = crafted("static", "tally-experiment version=1\nwarning what=the%20collector%20did%20not%20start\n"
              "end t=2032000000000 how=exit status=0 by=tally-collect\n")
p = tally(["print", "-header", exp])
expect(p, 0, r"Duration: +unknown", "no start record: duration")
p = tally(["print", "--json", "-overview", exp])
if expect(p, 0, None, "no start record: overview"):
    check('"duration":0' in p.stdout or '"duration":null' in p.stdout,
          "no start record: overview duration %s" % p.stdout[:300])
# no start record but events: the earliest event chunk starts the process
log = ("tally-experiment version=1\nsettings clock=10000000 clock_source=task-clock\n"
       "end t=2000000000 how=exit status=0\n")
body = stack_rec(0, [0x401000]) + clock_rec(10, 0, 1000000)
exp = crafted("nostart", log, events_file([(7, 0, 0, 1500000000, body)]))
p = tally(["print", "-header", exp])
expect(p, 0, r"Duration: +0\.500 s", "no start record, events: duration")

# ---- the summary after SIGKILL: what was recorded, not "0 samples" ------------------------------

exp = os.path.join(d, "killed.tally")
drv = subprocess.Popen([TALLY, "collect", "-A", "off", "-d", d, "-o", "killed",
                        os.path.join(WL, "wl_cpu_single"), "30"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
prog = child_of(drv.pid)
deadline = time.time() + 60
while prog and time.time() < deadline:  # until the first clock records are in the events file
    try:
        if os.path.getsize(os.path.join(exp, "events")) > 4096 + 65536:
            break
    except OSError:
        pass
    time.sleep(0.05)
if check(prog is not None, "killed: no program started"):
    time.sleep(0.3)
    os.kill(prog, signal.SIGKILL)
out, err = drv.communicate(timeout=120)
m = re.search(r"killed\.tally: (\d+) samples", err)
if check(m is not None, "killed: no summary line: %r" % err[-800:]):
    check(int(m.group(1)) > 0, "killed: summary says %s samples: %r" % (m.group(1), err[-800:]))
    p = tally(["print", "-header", exp])
    expect(p, 0, r"Clock samples: +%s recorded" % m.group(1), "killed: -header samples")

# ---- the reader never aborts on exhausted memory ----------------------------------------------

lines = "".join("load t=%d id=%d path=/lib/x%d.so buildid= bias=0x0 lo=0x%x hi=0x%x\n" %
                (1000000200 + i, i, i, 0x1000 * i, 0x1000 * i + 0x800) for i in range(300000))
exp = crafted("oom", base_log(lines))
try:
    p = subprocess.run([TALLY, "check", exp], capture_output=True, text=True, timeout=TIMEOUT,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (80 << 20, 80 << 20)))
    out = p.stdout + p.stderr
    if p.returncode != 0:  # (with this much memory it may also just work)
        check(p.returncode == 1 and "out of memory" in out,
              "out of memory: exit %d\n%s" % (p.returncode, out[-800:]))
except subprocess.TimeoutExpired:
    fail("out of memory: check did not finish")

done(d)
