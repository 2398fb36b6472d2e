"""Known hot lines and instructions (wl_hotlines: a loop nest whose division line does most of
the work, and lib_work in a shared library with a hot line of its own), built with DWARF 5 and
with DWARF 4: the hot line and the hot instruction are found in both, a function's listing adds
up to its exclusive time, and the lines inlined code was called at (wl_inlined) carry its
inclusive time."""
import os
import subprocess
from common import *

d = workdir("lines")


def line_of(path, marker):
    return 1 + next(i for i, l in enumerate(open(path).read().splitlines()) if marker in l)


src_main = os.path.join(SRC, "tests", "workloads", "hotlines.c")
src_lib = os.path.join(SRC, "tests", "workloads", "hotlib.c")
HOT = line_of(src_main, "/* the hot line */")
LIB_HOT = line_of(src_lib, "the library's hot line")
M = ["-metrics", "e.totalcpu:i.totalcpu:name"]


def dwarf_version(binary):
    out = subprocess.run(["readelf", "--debug-dump=info", binary], capture_output=True,
                         text=True).stdout
    for l in out.splitlines():
        if "Version:" in l:
            return int(l.split()[-1])
    return 0


def check_listing(exp, func, hot_line, excl, what):
    """-source and -disasm of func: the hot line and the hottest instruction are hot_line, the
    rows add up to the function's exclusive time."""
    src = print_json(exp, "-inlines", "off", *M, "-source", func)[0]
    by_no = {l["line"]: l for l in src["lines"]}
    rows = sum(l["e.totalcpu"] for l in src["lines"]) + sum(g["e.totalcpu"] for g in
                                                           src["groups"])
    close_to(rows, src["e.totalcpu"], 0.001, "%s: -source %s rows sum to its total" % (what, func))
    close_to(src["e.totalcpu"], excl, 0.01, "%s: -source %s total is its exclusive" % (what, func))
    hot = by_no.get(hot_line, {})
    check(hot.get("hot") and hot.get("code"), "%s: line %d not marked hot in -source %s: %r" %
          (what, hot_line, func, hot))
    best = max(src["lines"], key=lambda l: l["e.totalcpu"])
    check(best["line"] == hot_line, "%s: hottest line of %s is %d, expected %d" %
          (what, func, best["line"], hot_line))
    check(hot.get("e.totalcpu", 0) >= 0.6 * excl, "%s: line %d has %.3f of %s's %.3f s" %
          (what, hot_line, hot.get("e.totalcpu", 0), func, excl))
    check(any(not l["code"] for l in src["lines"]), "%s: no line without code in -source %s" %
          (what, func))
    dis = print_json(exp, *M, "-disasm", func)[0]
    ins = dis["instructions"]
    close_to(sum(i["e.totalcpu"] for i in ins), excl, 0.01,
             "%s: %s's instructions sum to its exclusive" % (what, func))
    top = max(ins, key=lambda i: i["e.totalcpu"])
    check(top["line"] == hot_line and top["hot"], "%s: hottest instruction of %s %r is on line %d, "
          "expected %d" % (what, func, top["text"], top["line"], hot_line))
    return src


for v in ("", "_dw4"):
    what = "DWARF %s" % ("4" if v else "5")
    binary = os.path.join(WL, "wl_hotlines" + v)
    lib = os.path.join(WL, "libwl_hotlib%s.so" % v)
    want = 4 if v else 5
    check(dwarf_version(binary) == want and dwarf_version(lib) == want,
          "%s: the workload has DWARF %d and %d" % (what, dwarf_version(binary),
                                                    dwarf_version(lib)))
    exp = collect(d, [binary, "0.6"], opts=["-p", "hi"], name="hot" + v)
    docs = print_json(exp, "-inlines", "off", *M, "-functions", "-lines", "-pcs")
    funcs, lines, pcs = rows_by_name(docs[0]), docs[1]["rows"], docs[2]["rows"]
    total = funcs["<Total>"]["e.totalcpu"]
    close_to(sum(r["e.totalcpu"] for r in lines[1:]), total, 0.001,
             "%s: lines' exclusive sum to the total" % what)
    close_to(sum(r["e.totalcpu"] for r in pcs[1:]), total, 0.001,
             "%s: instructions' exclusive sum to the total" % what)
    main_lines = [r for r in lines[1:] if r["name"].endswith('in "hotlines.c"')]
    lib_lines = [r for r in lines[1:] if r["name"].endswith('in "hotlib.c"')]
    check(main_lines and main_lines[0]["name"] == 'line %d in "hotlines.c"' % HOT,
          "%s: hottest line of hotlines.c: %r, expected %d" % (what, main_lines[:2], HOT))
    check(lib_lines and lib_lines[0]["name"] == 'line %d in "hotlib.c"' % LIB_HOT,
          "%s: hottest line of hotlib.c: %r, expected %d" % (what, lib_lines[:2], LIB_HOT))
    check(pcs[1]["name"].split(" + ")[0] in ("nest", "lib_work"),
          "%s: hottest instruction %r" % (what, pcs[1]["name"]))
    close_to(funcs["nest"]["e.totalcpu"], total * 0.6, 0.15, "%s: nest's share" % what)
    check_listing(exp, "nest", HOT, funcs["nest"]["e.totalcpu"], what)
    check_listing(exp, "lib_work", LIB_HOT, funcs["lib_work"]["e.totalcpu"], what)
    # the library's file as a whole, text form
    p = run([TALLY, "print", "-source", "hotlib.c", exp], expect=0)
    check("##" in p.stdout and "the library's hot line" in p.stdout and "Source file:" in
          p.stdout, "%s: -source hotlib.c: %r" % (what, p.stdout[:400]))

# inlined code: the line it was called at carries its inclusive time
iexp = collect(d, [os.path.join(WL, "wl_inlined"), "0.6"], opts=["-p", "hi"], name="inl")
isrc = os.path.join(SRC, "tests", "workloads", "inlined.c")
text = open(isrc).read().splitlines()
outer_a = line_of(isrc, "FN void outer_a(")
call = outer_a + next(i for i, l in enumerate(text[outer_a:]) if "mix(x, 200000)" in l) + 1
mix_line = line_of(isrc, "/* the hot line */")
f = rows_by_name(print_json(iexp, *M, "-functions")[0])
src = print_json(iexp, *M, "-source", "outer_a")[0]
by_no = {l["line"]: l for l in src["lines"]}
check(by_no[call]["code"], "the call of mix in outer_a has no code: %r" % by_no[call])
close_to(by_no[call]["i.totalcpu"], f["outer_a"]["i.totalcpu"], 0.05,
         "the call of mix at line %d: outer_a's inclusive time" % call)
check(by_no[mix_line]["hot"], "mix's hot line not hot in outer_a's listing")
rows = {r["name"]: r for r in print_json(iexp, *M, "-lines")[0]["rows"]}
close_to(rows.get('line %d in "inlined.c"' % call, {}).get("i.totalcpu", 0),
         f["outer_a"]["i.totalcpu"], 0.05, "-lines: the call site's inclusive time")
folded = {r["name"]: r for r in print_json(iexp, "-inlines", "off", *M, "-lines")[0]["rows"]}
check(folded.get('line %d in "inlined.c"' % call, {}).get("i.totalcpu", 0) == 0,
      "-inlines off: the call site still has inclusive time")
p = run([TALLY, "print", "-source", "mix", iexp], expect=1)
check("only inlined" in p.stderr, "-source of an inlined function: %r" % p.stderr)
done(d)
