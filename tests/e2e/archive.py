"""An experiment outlives its program: a program with its own shared library, built here from
sources in a scratch tree and collected with -A src (binaries, their debug files and the sources
archived), analyses the same after the program and library are rebuilt from changed sources
(other build-ids, other line numbers: the archived copies are used and the user is told), after
the tree is deleted, and after the experiment is moved to another directory; without an archive
(-A off) the same deletion loses the functions, which says why the archive is there."""
import os
import json
import shutil
from common import *

d = workdir("archive")
tree = os.path.join(d, "tree")
os.makedirs(tree)
for f in ("hotlines.c", "hotlib.c"):
    shutil.copy(os.path.join(SRC, "tests", "workloads", f), tree)
prog, lib = os.path.join(tree, "prog"), os.path.join(tree, "libhot.so")


def build(extra_lines=0):
    if extra_lines:  # the sources change: every line moves down
        for f in ("hotlines.c", "hotlib.c"):
            p = os.path.join(tree, f)
            text = open(p).read()
            open(p, "w").write("/* changed */\n" * extra_lines + text)
    run(["cc", "-O2", "-g", "-shared", "-fPIC", "-o", lib, os.path.join(tree, "hotlib.c")],
        expect=0)
    run(["cc", "-O2", "-g", "-o", prog, os.path.join(tree, "hotlines.c"), lib,
         "-Wl,-rpath,$ORIGIN"], expect=0)


def views(exp):
    """What the analysis shows: functions, the hottest lines, nest's listing, lib_work's code."""
    p = run([TALLY, "print", "--json", "-metrics", "e.totalcpu:name", "-functions", "-lines",
             "-source", "nest", "-disasm", "lib_work", exp], expect=0)
    docs = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    funcs = [r["name"] for r in docs[0]["rows"] if r["e.totalcpu"] > 0.01]
    lines = [r["name"] for r in docs[1]["rows"][:4]]
    src = [(l["line"], l["text"], l["code"]) for l in docs[2]["lines"]]
    dis = [(i["address"], i["text"], i["line"]) for i in docs[3]["instructions"]]
    return (funcs, lines, src, dis), p.stderr


build()
exp = collect(d, [prog, "0.4"], opts=["-A", "src"], name="arch")
arch = os.path.join(exp, "archive")
index = open(os.path.join(arch, "index")).read()
check(prog in index and lib in index, "archive index: %r" % index)
check(os.path.exists(os.path.join(arch, "src") + os.path.join(tree, "hotlines.c")),
      "source not archived: %r" % os.listdir(arch))
before, err = views(exp)
check("nest" in before[0] and "lib_work" in before[0], "functions: %r" % before[0])
check(any("the hot line" in t for _, t, _ in before[2]), "nest's listing has no text: %r" %
      before[2][:3])
check(len(before[3]) > 5, "disassembly of lib_work: %r" % before[3][:3])
check("note:" not in err, "notes before anything changed: %r" % err)

build(extra_lines=3)
after, err = views(exp)
check(after == before, "rebuilt: the analysis changed:\n%r\n%r" % (after[:2], before[:2]))
check("has changed since it was profiled: the copy archived in the experiment is used" in err and
      "libhot.so" in err, "rebuilt: the user is not told: %r" % err)

shutil.rmtree(tree)
gone, err = views(exp)
check(gone == before, "deleted: the analysis changed:\n%r\n%r" % (gone[:2], before[:2]))
check("is gone since it was profiled" in err, "deleted: the user is not told: %r" % err)

moved = os.path.join(d, "elsewhere", "arch.tally")
os.makedirs(os.path.dirname(moved))
shutil.move(exp, moved)
again, err = views(moved)
check(again == before, "moved: the analysis changed:\n%r\n%r" % (again[:2], before[:2]))
p = run([TALLY, "archive", moved], expect=0)
check("already there" in p.stdout, "archive again: %r" % p.stdout)

# without an archive the same deletion loses the program's functions
os.makedirs(tree)
for f in ("hotlines.c", "hotlib.c"):
    shutil.copy(os.path.join(SRC, "tests", "workloads", f), tree)
build()
bare = collect(d, [prog, "0.2"], opts=["-A", "off"], name="bare")
check(not os.path.exists(os.path.join(bare, "archive")), "-A off archived")
shutil.rmtree(tree)
p = run([TALLY, "print", "-functions", bare], expect=0)
check("<unknown> (prog)" in p.stdout and "no longer exists" in p.stderr,
      "-A off, deleted: %r %r" % (p.stdout[-300:], p.stderr))
done(d)
