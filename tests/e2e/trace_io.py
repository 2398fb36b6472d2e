"""I/O tracing (collect -i on) on a program with known reads and writes through system calls and
stdio, and three failing calls: bytes and counts exact by file (-io_files) and by function, the
failures counted as errors only, and the program's own results unchanged."""
import os
import subprocess
from common import *

d = workdir("trace_io")
data = os.path.join(d, "files")
os.mkdir(data)
prog = os.path.join(WL, "wl_trace_io")

exp = collect(d, [prog, data], opts=["-i", "on", "-p", "off"], name="io")

# by file: (read bytes, reads, write bytes, writes, others, errors)
KNOWN_FILES = {
    os.path.join(data, "data.bin"): (11200, 6, 11000, 12, 9, 1),
    os.path.join(data, "text.txt"): (624, 23, 624, 26, 5, 0),
    os.path.join(data, "missing.txt"): (0, 0, 0, 0, 0, 1),
    "<no descriptor>": (0, 0, 0, 0, 0, 1),
}
docs = print_json(exp, "-io_files")
files = {r["name"]: r for r in docs[0]["files"]}
for name, want in KNOWN_FILES.items():
    if not check(name in files, "-io_files: %s missing: %r" % (name, list(files))):
        continue
    r = files[name]
    got = (r["read_bytes"], r["read_count"], r["write_bytes"], r["write_count"],
           r["other_count"], r["error_count"])
    check(got == want, "-io_files %s: (read B, reads, write B, writes, others, errors) %r, "
          "expected %r" % (name, got, want))
check(len(files) == len(KNOWN_FILES), "-io_files: unexpected files %r" % sorted(files))

# by function: (read bytes, reads, write bytes, writes, others, errors)
KNOWN_FUNCS = {
    "write_raw": (0, 0, 11000, 12, 4, 0),
    "read_raw": (11200, 6, 0, 0, 3, 0),
    "write_stdio": (0, 0, 624, 26, 3, 0),
    "read_stdio": (624, 23, 0, 0, 2, 0),
    "failures": (0, 0, 0, 0, 2, 3),
}
docs = print_json(exp, "-metrics", "i.ioreadbytes:i.ioreadcnt:i.iowritebytes:i.iowritecnt:"
                  "i.ioothercnt:i.ioerrorcnt:i.ioreadtime:i.ioerrortime:name", "-functions")
f = rows_by_name(docs[0])
for fn, want in KNOWN_FUNCS.items():
    if not check(fn in f, "%s missing from -functions" % fn):
        continue
    r = f[fn]
    got = (r["i.ioreadbytes"], r["i.ioreadcnt"], r["i.iowritebytes"], r["i.iowritecnt"],
           r["i.ioothercnt"], r["i.ioerrorcnt"])
    check(got == want, "%s: %r, expected %r" % (fn, got, want))
check(f["read_raw"]["i.ioreadtime"] > 0 and f["failures"]["i.ioerrortime"] > 0, "times are 0")
# the leaves are the calls the program made, under their own names
for leaf in ("write", "pwrite", "writev", "read", "pread", "readv", "open", "close", "fsync",
             "lseek", "fopen", "fwrite", "fprintf", "fflush", "fclose", "fread", "fgets"):
    check(leaf in f, "no %s among the functions: %r" % (leaf, sorted(f)[:40]))

# the default metrics with I/O data only
docs = print_json(exp, "-functions")
check([m["name"] for m in docs[0]["metrics"]][:1] == ["i.ioreadtime"],
      "default metrics: %r" % docs[0]["metrics"])

# descriptors the program did not open are named from /proc: its standard output here
out = os.path.join(d, "out.txt")
with open(out, "w") as o:
    rc = subprocess.run([TALLY, "collect", "-d", d, "-o", "stdout", "-i", "on", "-p", "off", "sh",
                         "-c", "echo hello"], stdout=o, stderr=subprocess.PIPE).returncode
check(rc == 0 and open(out).read() == "hello\n", "echo under -i on: %d %r" % (rc, open(out).read()))
docs = print_json(os.path.join(d, "stdout.tally"), "-io_files")
names = [r["name"] for r in docs[0]["files"]]
check(out in names, "stdout not named after its file: %r" % names)
done(d)
