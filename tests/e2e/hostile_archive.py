"""Hostile experiments: nothing an experiment contains can make tally write outside it, and what
tally reads from its archive is a regular file inside it.

One real experiment (wl_reuse: a program and two libraries, -A off) is copied for each case and
made hostile: a symbolic link for archive/, for archive/<build-id>.tmp and for archive/index; a
load record with a relative path to an ELF shipped inside the experiment (with a planted .tmp
link to a victim in the current directory); source names with '..' (a program whose line table
says so); build-ids that are not hex; a FIFO, /dev/zero and an oversized file as archived
sources and binaries. Each case runs tally archive (-s) and tally print and checks: the tree
around the experiment is byte for byte what it was, stderr says what was refused, the exit status
is non-zero only where the archive cannot be written at all, and nothing hangs."""
import hashlib
import re
from common import *

wd = workdir("hostile")
victim = os.path.join(wd, "victim")
os.makedirs(os.path.join(victim, "dir"))
for name, text in (("authorized_keys", "ssh-ed25519 AAAA... user@host\n"),
                   ("index_target", "precious\n"), ("src.c", "int not_yours;\n")):
    open(os.path.join(victim, name), "w").write(text)

WL = os.path.abspath(WL)
LIB_A = os.path.join(WL, "libwl_reuse_a.so")
base = collect(wd, [os.path.join(WL, "wl_reuse"), LIB_A, "0.2",
                    os.path.join(WL, "libwl_reuse_b.so"), "0.2"], opts=["-A", "off"],
               name="base")
records = log_records(base, "load")
exe_id = [f["buildid"] for k, f in records if f["path"].endswith("/wl_reuse")][0]
lib_id = [f["buildid"] for k, f in records if f["path"] == LIB_A][0]


def snapshot(root, skip):
    """Every entry under root but skip: type, link target or content hash."""
    out = {}
    for d, dirs, files in os.walk(root):
        if os.path.abspath(d) == os.path.abspath(skip):
            dirs[:] = []
            continue
        dirs[:] = [x for x in dirs if os.path.join(d, x) != skip]
        for n in dirs + files:
            p = os.path.join(d, n)
            if p == skip:
                continue
            if os.path.islink(p):
                out[p] = ("link", os.readlink(p))
            elif os.path.isfile(p):
                out[p] = ("file", hashlib.sha256(open(p, "rb").read()).hexdigest())
            else:
                out[p] = ("dir",)
    return out


ncase = [0]


def case(name):
    """A fresh copy of the base experiment for one case: (its directory, the cwd to run in)."""
    ncase[0] += 1
    cwd = os.path.join(wd, "case%d-%s" % (ncase[0], name))
    os.makedirs(cwd)
    exp = os.path.join(cwd, "e.tally")
    shutil.copytree(base, exp, symlinks=True)
    return exp, cwd


def tally(cwd, args, expect, what, timeout=60):
    try:
        p = subprocess.run([os.path.abspath(TALLY)] + args, cwd=cwd, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("%s: tally %s hangs" % (what, " ".join(args)))
        return None
    if p.returncode < 0 or p.returncode >= 128:
        fail("%s: tally %s died (%d): %s" % (what, " ".join(args), p.returncode, p.stderr))
    elif p.returncode != expect:
        fail("%s: tally %s exited %d, expected %d\nstdout: %s\nstderr: %s" %
             (what, " ".join(args), p.returncode, expect, p.stdout[-1500:], p.stderr[-1500:]))
    return p


def unchanged(before, exp, what):
    after = snapshot(wd, exp)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    check(not changed, "%s: changed outside the experiment: %r" % (what, changed))


def says(p, words, what):
    if p is not None:
        check(all(w in p.stderr for w in words),
              "%s: stderr does not say %r: %r" % (what, words, p.stderr))


# 1. archive/ is a symbolic link to a directory outside: refused, the archive cannot be made
exp, cwd = case("archive-link")
os.symlink(os.path.join(victim, "dir"), os.path.join(exp, "archive"))
before = snapshot(wd, exp)
p = tally(cwd, ["archive", exp], 1, "archive/ link")
says(p, ["archive", "symbolic link"], "archive/ link")
p = tally(cwd, ["print", "-functions", exp], 0, "print, archive/ link")
says(p, ["archive", "is not used", "symbolic link"], "print, archive/ link")
unchanged(before, exp, "archive/ link")

# 2. archive/<build-id>.tmp planted as a link to a victim: removed, never written through
exp, cwd = case("tmp-link")
os.makedirs(os.path.join(exp, "archive"))
tmp = os.path.join(exp, "archive", exe_id + ".tmp")
os.symlink(os.path.join(victim, "authorized_keys"), tmp)
before = snapshot(wd, exp)
p = tally(cwd, ["archive", exp], 0, ".tmp link")
says(p, [exe_id + ".tmp", "symbolic link", "not followed"], ".tmp link")
copy = os.path.join(exp, "archive", exe_id)
check(os.path.isfile(copy) and not os.path.islink(copy) and not os.path.lexists(tmp),
      ".tmp link: the copy is not a regular file of its own")
unchanged(before, exp, ".tmp link")

# 3. archive/index is a link to a victim: no line appended, the archive cannot be made
exp, cwd = case("index-link")
os.makedirs(os.path.join(exp, "archive"))
os.symlink(os.path.join(victim, "index_target"), os.path.join(exp, "archive", "index"))
before = snapshot(wd, exp)
p = tally(cwd, ["archive", exp], 1, "index link")
says(p, ["archive/index", "symbolic link"], "index link")
unchanged(before, exp, "index link")
# a hard link to a victim is not appended to either
exp, cwd = case("index-hardlink")
os.makedirs(os.path.join(exp, "archive"))
os.link(os.path.join(victim, "index_target"), os.path.join(exp, "archive", "index"))
before = snapshot(wd, exp)
p = tally(cwd, ["archive", exp], 1, "index hard link")
says(p, ["archive/index", "hard links"], "index hard link")
check(open(os.path.join(victim, "index_target"), "rb").read() == b"precious\n",
      "index hard link: the victim was appended to")

# 4. a load record with a relative path to an ELF shipped inside the experiment, a victim in the
#    current directory and a planted .tmp link to it: the ELF may be read, the victim stays
exp, cwd = case("relative-elf")
shutil.copy(LIB_A, os.path.join(exp, "evil.so"))
open(os.path.join(cwd, "authorized_keys"), "w").write("ssh-ed25519 AAAA... victim\n")
os.makedirs(os.path.join(exp, "archive"))
os.symlink("../../authorized_keys", os.path.join(exp, "archive", lib_id + ".tmp"))
with open(os.path.join(exp, "log"), "a") as f:
    f.write("load t=1 id=900 path=e.tally/evil.so buildid=%s bias=0x0 lo=0x10 hi=0x20\n" % lib_id)
    f.write("load t=1 id=901 path=authorized_keys buildid=%s bias=0x0 lo=0x30 hi=0x40\n" %
            lib_id)
before = snapshot(wd, exp)
p = tally(cwd, ["archive", exp], 0, "relative ELF")
says(p, [lib_id + ".tmp", "symbolic link"], "relative ELF")
unchanged(before, exp, "relative ELF")
check(open(os.path.join(cwd, "authorized_keys"), "rb").read() == b"ssh-ed25519 AAAA... victim\n",
      "relative ELF: the victim in the current directory was replaced")

# 5. build-ids that are not hex: refused in the reader (warning naming the record), the object
#    has none; print and archive go on
exp, cwd = case("bad-buildid")
with open(os.path.join(exp, "log"), "a") as f:
    f.write("load t=1 id=902 path=/bin/ls buildid=../../../../bin/ls bias=0x0 lo=0x50 hi=0x60\n")
    f.write("load t=1 id=903 path=/bin/true buildid=abc bias=0x0 lo=0x70 hi=0x80\n")
    f.write("load t=1 id=904 path=/bin/cat buildid=%s bias=0x0 lo=0x90 hi=0xa0\n" % ("ab" * 65))
os.makedirs(os.path.join(exp, "archive"))
before = snapshot(wd, exp)
p = tally(cwd, ["archive", exp], 0, "bad build-id")
says(p, ["'/bin/ls' has a build-id that is not", "log line", "'/bin/true'", "'/bin/cat'"],
     "archive, bad build-id")
check(not any(os.path.islink(os.path.join(exp, "archive", n)) or ".." in n
              for n in os.listdir(os.path.join(exp, "archive"))), "bad build-id: archive names")
p = tally(cwd, ["print", "-functions", exp], 0, "print, bad build-id")
says(p, ["has a build-id that is not", "treated as having none"], "print, bad build-id")
p = tally(cwd, ["check", exp], 0, "check, bad build-id")
if p is not None:
    check("build-id that is not" in p.stdout + p.stderr, "check does not report the build-id")
unchanged(before, exp, "bad build-id")

# 6. source names with '..' (a program whose line table names "/../../../WD/victim/src.c"):
#    archive -s refuses them and creates nothing outside
srcdir = os.path.join(wd, "evilsrc")
os.makedirs(srcdir)
evil_name = "/../../.." + victim + "/src.c"
open(os.path.join(srcdir, "evil.c"), "w").write(
    '#line 1 "%s"\n#include <time.h>\nstatic volatile double x = 1;\n'
    'int main(void) {\n  clock_t end = clock() + CLOCKS_PER_SEC / 4;\n'
    '  while (clock() < end)\n    for (int i = 0; i < 100000; i++)\n'
    '      x = x * 1.0000001 + 1e-9;\n  return 0;\n}\n' % evil_name)
run(["cc", "-O1", "-g", "-o", os.path.join(srcdir, "evil"), os.path.join(srcdir, "evil.c")],
    expect=0)
ecwd = os.path.join(wd, "case-dotdot")
os.makedirs(ecwd)
eexp = collect(ecwd, [os.path.join(srcdir, "evil")], opts=["-A", "off"], name="e")
before = snapshot(wd, eexp)
p = tally(ecwd, ["archive", "-s", eexp], 0, "'..' source")
says(p, ["'..'", "not archived"], "'..' source")
unchanged(before, eexp, "'..' source")
# (other sources may be archived rightly: a clock sample in the collector's own code archives
# the collector's source file; what must not be there is the '..' one, under any name)
for root, dirs, files in os.walk(os.path.join(eexp, "archive")):
    rel = os.path.relpath(root, os.path.join(eexp, "archive"))
    check("src.c" not in files and "victim" not in rel.split(os.sep),
          "'..' source: archived under %s: %r" % (root, files))

# 7. a FIFO, /dev/zero and an oversized file as archived sources and binaries: refused without
#    blocking or reading without end; the sources on disk are shown instead
exp, cwd = case("fifo")
main_src = os.path.join(SRC, "tests", "workloads", "reuse.c")
lib_src = os.path.join(SRC, "tests", "workloads", "reuse_lib.c")
arch = os.path.join(exp, "archive")
os.makedirs(os.path.join(arch, "src") + os.path.dirname(main_src))
os.mkfifo(os.path.join(arch, "src") + main_src)
os.symlink("/dev/zero", os.path.join(arch, "src") + lib_src)
os.mkfifo(os.path.join(arch, exe_id))
os.symlink("/dev/zero", os.path.join(arch, lib_id))
os.symlink("/dev/zero", os.path.join(arch, lib_id + ".debug"))
os.mkfifo(os.path.join(cwd, "fifo.so"))  # a load object that is a FIFO on this system
with open(os.path.join(exp, "log"), "a") as f:
    f.write("load t=1 id=905 path=%s buildid=%s bias=0x0 lo=0xb0 hi=0xc0\n" %
            (os.path.join(cwd, "fifo.so"), "cd" * 20))
before = snapshot(wd, exp)
p = tally(cwd, ["print", "-source", "main", "-source", "reuse_a_work", exp], 0, "FIFO source")
if p is not None:
    says(p, ["not a regular file", "symbolic link"], "FIFO source")
    check("double a = run(argv[1]" in p.stdout, "FIFO source: the file on disk is not shown: %r" %
          p.stdout[:500])
big = os.path.join(arch, "src") + main_src
os.unlink(big)
with open(big, "wb") as f:
    f.truncate((64 << 20) + 1)
p = tally(cwd, ["print", "-source", "main", exp], 0, "oversized source")
says(p, ["too large", "64 MiB"], "oversized source")
p = tally(cwd, ["archive", exp], 0, "archive over a FIFO and links")
says(p, ["fifo.so", "not a regular file"], "archive, a FIFO as a load object")
unchanged(before, exp, "FIFO")
for n in (exe_id, lib_id):
    q = os.path.join(arch, n)
    check(os.path.isfile(q) and not os.path.islink(q), "%s: not replaced by a copy" % n)
done(wd)
