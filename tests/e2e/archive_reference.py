"""tally collect's default archive copies only what would be lost: a binary the system manages
(root's, on a system path) is referenced by the path and build-id the log records, and its debug
file is found by build-id at analysis time; a binary of the user's (here the collector library
in a scratch directory) is copied; tally's own collector library is referenced too. collect says
what the archive cost. `tally archive` still makes the experiment self-contained. Goal: /bin/true
under 1 MB."""
import os
from common import *

d = workdir("archive_reference")


def size(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def archived(exp):
    a = os.path.join(exp, "archive")
    return set(os.listdir(a)) if os.path.isdir(a) else set()


exp = os.path.join(d, "true.er")
p = run([TALLY, "collect", "-o", exp, "/bin/true"], expect=0)
check("tally: archive: " in p.stderr and "referenced by build-id" in p.stderr and
      "copies them too" in p.stderr, "collect's archive summary: %r" % p.stderr)
loads = [f for _, f in log_records(exp, "load")]
# tally's own collector library comes with tally (its frames are left out of every view): it is
# referenced like a system library, not copied, so the whole experiment is well under 1 MB (it
# was 7.5 MB with libc and its debug file, 1.2 MB with the build tree's collector copied)
own = [f["buildid"] for f in loads if f.get("path", "").endswith("/libtally-collector.so")]
check(own and not [b for b in own if b in archived(exp)],
      "the collector library was copied: %r" % archived(exp))
total = size(exp)
check(total < 1_000_000, "/bin/true's experiment is %d bytes, not under 1 MB" % total)
libc = [f for f in loads if "/libc.so" in f.get("path", "")]
st = os.stat(libc[0]["path"]) if libc else None
system_libc = st is not None and st.st_uid == 0 and not st.st_mode & 0o022
if check(libc, "no libc load record: %r" % loads) and system_libc:
    check(libc[0]["buildid"] not in archived(exp), "libc was copied by default")
    check(libc[0]["buildid"] + ".debug" not in archived(exp), "libc's debug file was copied")
# the analysis of a referenced library works as before, with no note
p = run([TALLY, "print", "-load_objects", exp], expect=0)
check("changed" not in p.stderr and "gone" not in p.stderr, "notes on a fresh run: %r" % p.stderr)

# a program of the user's is copied
prog = os.path.join(d, "mine")
with open(os.path.join(WL, "wl_cpu_single"), "rb") as src, open(prog, "wb") as dst:
    dst.write(src.read())
os.chmod(prog, 0o755)
exp2 = os.path.join(d, "mine.er")
run([TALLY, "collect", "-o", exp2, prog, "0.1"], expect=0)
mine = [f for _, f in log_records(exp2, "load") if f.get("path") == prog]
check(mine and mine[0]["buildid"] in archived(exp2), "the user's program was not copied: %r" %
      archived(exp2))

# the chunks' unused ends are given back to the disk once the program has ended (where the file
# system can punch holes): the events file of a short run takes its used pages, not its chunks
import ctypes, errno
probe = os.path.join(d, "probe")
with open(probe, "wb") as f:
    f.write(b"\1" * 65536)
clib = ctypes.CDLL(None, use_errno=True)
fd = os.open(probe, os.O_RDWR)
punch = clib.fallocate(fd, 0x02 | 0x01, ctypes.c_long(4096), ctypes.c_long(61440)) == 0
os.close(fd)
ev = os.path.join(exp2, "events")
st = os.stat(ev)
if punch:
    check(st.st_blocks * 512 < st.st_size,
          "events file: %d bytes on disk for %d bytes: the chunks' ends were not given back"
          % (st.st_blocks * 512, st.st_size))
else:
    print("note: this file system cannot punch holes: the chunks' ends stay allocated")
p = run([TALLY, "check", exp2], expect=0)
check(" ok" in p.stdout and "unused" in p.stdout, "tally check after trimming: %r" % p.stdout)

# tally archive: self-contained on demand
p = run([TALLY, "archive", exp], expect=0)
if system_libc:
    check(libc[0]["buildid"] in archived(exp), "tally archive did not copy libc: %r" % p.stdout)
check("referenced" not in p.stdout, "tally archive only referenced: %r" % p.stdout)
check(own and own[0] in archived(exp), "tally archive did not copy the collector: %r" % archived(exp))
done(d)
