#!/usr/bin/env python3
"""Annotated source and disassembly benchmark: time to first output and to the end of
`tally print -source` / `-disasm` on a function in libc (with its separate debug file, libc6-dbg)
and on a large function of a large binary (python3.11's interpreter loop: 6.8 MB, with the 11 MB
debug file of python3.11-dbg), beside `gprofng display text -source/-disasm` and `perf annotate`
on the same programs, in one run.

  bench/source.py [--build build] [--reps 3] [--write]

Programs: bench_alloc_heavy (20 million malloc/free pairs: libc's _int_free is hot) and python3.11 running a
loop (_PyEval_EvalFrameDefault is hot). Each tool records its own experiment of the program; then
each command runs --reps times; the table gives medians. With --write the section replaces the
one in docs/BENCHMARKS.md.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdoc  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--write", action="store_true")
args = ap.parse_args()

build = os.path.abspath(args.build)
tally = os.path.join(build, "tally")
tmp = tempfile.mkdtemp(prefix="tally-bench-source-")
PY = "/usr/bin/python3.11"
PYLOOP = "s = 0\nfor i in range(3000000):\n    s += i * i\n"


def first_and_total(cmd):
    """(seconds to the first line of output, seconds to the end, lines) of cmd."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp)
    first = p.stdout.readline()
    t1 = time.perf_counter()
    rest = p.stdout.read()
    p.wait()
    t2 = time.perf_counter()
    lines = (1 if first else 0) + rest.count(b"\n")
    return t1 - t0, t2 - t0, lines, p.returncode


def quiet(cmd):
    subprocess.run(cmd, capture_output=True, cwd=tmp)


programs = {
    "libc": [os.path.join(build, "bench_alloc_heavy"), "20000000"],
    "python": [PY, "-c", PYLOOP],
}
funcs = {"libc": "_int_free", "python": "_PyEval_EvalFrameDefault"}

# one experiment per tool and program
for name, prog in programs.items():
    quiet([tally, "collect", "-p", "hi", "-o", "t_" + name] + prog)
    quiet(["gprofng", "collect", "app", "-p", "on", "-o", "g_%s.er" % name] + prog)
    quiet(["perf", "record", "-q", "-F", "5000", "-o", "p_%s.data" % name] + prog)

rows = []
for name in programs:
    f = funcs[name]
    t = os.path.join(tmp, "t_%s.tally" % name)
    g = os.path.join(tmp, "g_%s.er" % name)
    p = os.path.join(tmp, "p_%s.data" % name)
    cmds = [
        ("tally print -source %s" % f, [tally, "print", "-source", f, t]),
        ("tally print -disasm %s" % f, [tally, "print", "-disasm", f, t]),
        ("gprofng display text -source %s" % f, ["gprofng", "display", "text", "-source", f, g]),
        ("gprofng display text -disasm %s" % f, ["gprofng", "display", "text", "-disasm", f, g]),
        ("perf annotate --stdio %s" % f, ["perf", "annotate", "--stdio", "-i", p, f]),
    ]
    for title, cmd in cmds:
        runs = [first_and_total(cmd) for _ in range(args.reps)]
        rows.append((name, title, statistics.median(r[0] for r in runs),
                     statistics.median(r[1] for r in runs), runs[-1][2], runs[-1][3]))
shutil.rmtree(tmp, ignore_errors=True)

lines = ["## Annotated source and disassembly: time to first output (issue 4)", "",
         benchdoc.measured_on("python3 bench/source.py --reps %d --write" % args.reps), "",
         "| program | command | first output (s) | all output (s) | lines | exit |",
         "|---|---|---|---|---|---|"]
for name, title, first, total, n, rc in rows:
    lines.append("| %s | %s | %.3f | %.3f | %d | %d |" % (name, title, first, total, n, rc))
lines += ["", "libc: its `_int_free` with the separate debug file of libc6-dbg. python: "
          "`_PyEval_EvalFrameDefault`, about 12,700 instructions, with the separate debug file "
          "of python3.11-dbg (DWARF 5). Neither package ships the sources, so the source views "
          "show the lines with code by number, with their metrics, and no text. 'lines': lines "
          "of output; a non-zero exit is the tool's own answer. First output is the first line "
          "on stdout, so it includes all of the tool's reading before it prints. gprofng's 0 lines "
          "for libc are its answer 'No function or file with given name' (it does not read "
          "libc's separate debug file and names _int_free `<static>@0x...`); for python's "
          "-source it prints no line either.", ""]
text = "\n".join(lines) + "\n"
print(text)
if args.write:
    benchdoc.write_section("source.py", text)
