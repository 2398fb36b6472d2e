"""Lines, instructions, annotated source and disassembly on the Figure 2-1 program
(examples/example.c, where each function's work is a macro expanded on its own line) and on a
program with a hot inlined helper (wl_inlined): the hot line is found, a function's line metrics
sum to its exclusive time, the hottest instruction lies in a worker, source lines without code
are shown as such, calls are named; inlined functions as frames; archives; sources that moved;
clear errors."""
import os
from common import *

d = workdir("source")
example = os.path.join(os.path.dirname(TALLY), "example")
exp = collect(d, [example, "5"], opts=["-p", "hi"])

docs = print_json(exp, "-inlines", "off", "-metrics", "e.totalcpu:i.totalcpu:name", "-functions",
                  "-lines", "-pcs")
funcs, lines, pcs = rows_by_name(docs[0]), docs[1]["rows"], docs[2]["rows"]
total = funcs["<Total>"]["e.totalcpu"]
check(docs[1]["view"] == "lines" and docs[2]["view"] == "pcs", "views: %r" %
      [x["view"] for x in docs])
close_to(sum(r["e.totalcpu"] for r in lines[1:]), total, 0.001, "lines' exclusive sum to the total")
close_to(sum(r["e.totalcpu"] for r in pcs[1:]), total, 0.001, "pcs' exclusive sum to the total")
hot = lines[1]["name"]
src_lines = open(os.path.join(SRC, "examples", "example.c")).read().splitlines()
e_line = 1 + next(i for i, l in enumerate(src_lines) if l.startswith("FN void E("))
loop_line = 1 + next(i for i, l in enumerate(src_lines) if l.startswith("FN void C("))
check(hot == 'line %d in "example.c"' % e_line, "hottest line %r, expected E's at %d" %
      (hot, e_line))
check(pcs[1]["name"].split(" + ")[0] in ("E", "G", "B", "C", "F", "main"),
      "hottest instruction %r is not in a worker" % pcs[1]["name"])

# -source C: C's own lines sum to C's exclusive; lines without code carry no metric
src = print_json(exp, "-inlines", "off", "-source", "C")[0]
check(src["function"] == "C", "source of %r" % src.get("function"))
code_sum = sum(l["e.totalcpu"] for l in src["lines"])
close_to(code_sum, funcs["C"]["e.totalcpu"], 0.02, "C's lines sum to C's exclusive")
by_no = {l["line"]: l for l in src["lines"]}
check(by_no.get(loop_line, {}).get("hot"), "the loop line is not marked hot in -source C")
check(any(not l["code"] for l in src["lines"]), "no line without code in -source C")
check(by_no[loop_line]["text"].startswith("FN void C("), "source text: %r" %
      by_no[loop_line]["text"])

# -disasm F: instructions with metrics in F's range, the call to G named
dis = print_json(exp, "-inlines", "off", "-disasm", "F")[0]
ins = dis["instructions"]
check(len(ins) > 10, "disasm F: %d instructions" % len(ins))
close_to(sum(i["e.totalcpu"] for i in ins), funcs["F"]["e.totalcpu"], 0.02,
         "F's instructions sum to F's exclusive")
calls = [i["call"] for i in ins if i["call"]]
check("G" in calls, "the call to G is not named: %r" % calls)
check(any(i["target"] for i in ins), "no branch target marked in F's loop")

# a function in a shared library: libc's clock_gettime, which the example calls all the time
dl = print_json(exp, "-disasm", "clock_gettime")[0]
check(len(dl["instructions"]) > 5, "disasm of libc's clock_gettime: %d instructions" %
      len(dl["instructions"]))
check(any(i["e.totalcpu"] > 0 or i["i.totalcpu"] > 0 for i in dl["instructions"]),
      "no metrics on libc's clock_gettime instructions")

# text forms
p = run([TALLY, "print", "-source", "C", "-disasm", "C", exp], expect=0)
check("##" in p.stdout and "<Function: C>" in p.stdout and "[" in p.stdout,
      "text source/disasm: %r" % p.stdout[:500])
p = run([TALLY, "print", "-source", "example.c", exp], expect=0)
check("FN void C(double arg)" in p.stdout, "-source FILE: %r" % p.stdout[:300])

# sources that moved: -pathmap and -setpath find them again
srcdir = os.path.join(d, "tree", "src")
os.makedirs(srcdir)
with open(os.path.join(srcdir, "moved.c"), "w") as fp:
    fp.write("#include <stdlib.h>\nvolatile double sink;\n"
             "__attribute__((noinline)) void hot(long n) {\n"
             "    for (long i = 0; i < n; i++) sink += (double)i; /* the hot line */\n}\n"
             "int main(int c, char **v) { hot(c > 1 ? atol(v[1]) : 300000000); return 0; }\n")
binary = os.path.join(d, "moved")
run(["cc", "-O1", "-g", "-o", binary, os.path.join(srcdir, "moved.c")], expect=0)
mexp = collect(d, [binary], name="moved")
os.rename(os.path.join(d, "tree"), os.path.join(d, "newtree"))
p = run([TALLY, "print", "-source", "hot", mexp], expect=0)
check("cannot be found" in p.stdout, "moved source not reported: %r" % p.stdout[:300])
newsrc = os.path.join(d, "newtree", "src")
for opts in (["-pathmap", "%s %s" % (srcdir, newsrc)], ["-setpath", newsrc]):
    p = run([TALLY, "print"] + opts + ["-source", "hot", mexp], expect=0)
    check("the hot line" in p.stdout and "##" in p.stdout,
          "%s: source not found: %r" % (opts[0], p.stdout[:300]))
p = run([TALLY, "print", mexp], input="pathmap %s %s\nsource hot\n" % (srcdir, newsrc), expect=0)
check("the hot line" in p.stdout, "pathmap in the prompt: %r" % p.stdout[:300])

# an experiment whose program was rebuilt, then deleted, still analyses from its archive
prog = os.path.join(d, "prog")
shutil.copy(os.path.join(WL, "wl_cpu_single"), prog)
aexp = collect(d, [prog, "0.3"], name="archived")
check(os.path.exists(os.path.join(aexp, "archive", "index")), "collect did not archive")
before = print_json(aexp, "-metrics", "e.totalcpu:name", "-functions")[0]["rows"]
shutil.copy(os.path.join(WL, "wl_recursion"), prog)  # rebuilt: another program, same path
p = run([TALLY, "print", "-header", aexp], expect=0)
check("the copy archived in the experiment is used" in p.stdout, "rebuilt: %r" % p.stdout[-500:])
after = print_json(aexp, "-metrics", "e.totalcpu:name", "-functions")[0]["rows"]
check([r["name"] for r in after] == [r["name"] for r in before],
      "rebuilt: functions differ: %r vs %r" % (after[:4], before[:4]))
os.unlink(prog)
gone = print_json(aexp, "-metrics", "e.totalcpu:name", "-functions")[0]["rows"]
check([r["name"] for r in gone] == [r["name"] for r in before], "deleted: %r" % gone[:4])
hot = [r["name"] for r in before if r["name"].startswith("hot_loop")][0]
dis = print_json(aexp, "-disasm", hot)[0]
check(len(dis["instructions"]) > 3, "deleted: no disassembly from the archive")
p = run([TALLY, "archive", aexp], expect=0)
check("already there" in p.stdout, "archive again: %r" % p.stdout)
p = run([TALLY, "archive", "-s", exp], expect=0)
check("source file" in p.stdout, "archive -s: %r" % p.stdout)
check(os.path.exists(os.path.join(exp, "archive", "src") + os.path.join(SRC, "examples", "example.c")
                     .replace("//", "/")) or "0 not found" in p.stdout, "sources archived: %r" %
      p.stdout)
p = run([TALLY, "archive", os.path.join(d, "nothing")], expect=1)
p = run([TALLY, "collect", "-A", "maybe", "/bin/true"], expect=2)
check("-A" in p.stderr, "bad -A: %r" % p.stderr)

# inlined functions: frames of their own by default, folded with -inlines off
iexp = collect(d, [os.path.join(WL, "wl_inlined"), "0.6"], opts=["-p", "hi"], name="inl")
f = rows_by_name(print_json(iexp, "-metrics", "e.totalcpu:i.totalcpu:name", "-functions")[0])
check("mix" in f, "inlined helper mix is not a function: %r" % sorted(f)[:10])
if "mix" in f:
    close_to(f["mix"]["e.totalcpu"], f["<Total>"]["e.totalcpu"], 0.05, "mix holds the work")
    ilines = print_json(iexp, "-lines")[0]["rows"]
    isrc = open(os.path.join(SRC, "tests", "workloads", "inlined.c")).read().splitlines()
    hot_no = 1 + next(i for i, l in enumerate(isrc) if "the hot line" in l)
    check(ilines[1]["name"] == 'line %d in "inlined.c"' % hot_no,
          "inlined helper's hot line: %r, expected %d" % (ilines[1]["name"], hot_no))
    cc = print_json(iexp, "-csingle", "mix")[0]["entries"][0]
    callers = {r["name"]: r["a.totalcpu"] for r in cc["callers"]}
    close_to(callers.get("outer_a", 0), 2 * callers.get("outer_b", 0), 0.15,
             "mix's callers: outer_a twice outer_b")
folded = rows_by_name(print_json(iexp, "-inlines", "off", "-metrics", "e.totalcpu:name",
                                 "-functions")[0])
check("mix" not in folded, "-inlines off still shows mix")
close_to(folded.get("outer_a", {}).get("e.totalcpu", 0) + folded.get("outer_b", {}).get(
    "e.totalcpu", 0), f["<Total>"]["e.totalcpu"], 0.05, "folded: the callers' own time")
tree = print_json(iexp, "-calltree")[0]["tree"]


def names(node):
    yield node["name"]
    for k in node.get("children", []):
        yield from names(k)


check("mix" in set(names(tree)), "calltree without the inlined frame")

# errors
p = run([TALLY, "print", "-source", "nosuchfunc", exp], expect=1)
check("no function named" in p.stderr, "unknown function: %r" % p.stderr)
p = run([TALLY, "print", "-disasm", "__vdso_clock_gettime", exp], expect=0)
done(d)
