#!/usr/bin/env python3
"""Profiled blocks as an object kind of their own (`tally print -kind blocks`): the call tree,
callers-callees and the block list of the seed's example (spec 004, wl_blocks seed, each
microsecond 10 ms of real time), and a thread selection and a filter on the two-worker program.

Calls are exact. Each path's exclusive and inclusive time is the collector's own (the call
paths -blocks prints, to the nanosecond); against the program's CLOCK_MONOTONIC marks within 5%
plus 2 ms (both measure the same span). Selections that cannot apply to whole-run sums
(samples, time) are refused with a message naming what to do.
"""
import os

from common import *

prog = os.path.join(WL, "wl_blocks")
d = workdir("blocks_kind")
NS = 1.5e-9  # one nanosecond, as two formattings of the same integer may differ in the last bit


def marks(stdout):
    at = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "at":
            at.setdefault(f[1], []).append(float(f[2]))
    return at


def near(actual, truth, what):
    return check(abs(actual - truth) <= 0.05 * truth + 0.002,
                 "%s: got %.4f s, the program measured %.4f s (within 5%%)" % (what, actual, truth))


def same(actual, expected, what):
    return check(abs(actual - expected) <= NS,
                 "%s: got %r, the collector's path has %r" % (what, actual, expected))


def tree_paths(node, prefix=()):
    """{(names from the root): node} of a -calltree JSON tree (the root <Total> left out)."""
    out = {}
    for c in node["children"]:
        p = prefix + (c["name"],)
        check(p not in out, "path %r once in the tree" % (p,))
        out[p] = c
        out.update(tree_paths(c, p))
    return out


def block_paths(th):
    """{(names from the root): path} of one thread's -blocks call paths."""
    out, names = {}, []
    for x in th["paths"]:
        names[x["depth"]:] = [x["name"]]
        out[tuple(names)] = x
    return out


# ---- the seed's example --------------------------------------------------------------------
exp = os.path.join(d, "seed.tally")
p = run([TALLY, "collect", "-d", d, "-o", "seed", prog, "seed"], expect=0)
at = marks(p.stdout)
bl, tree, cc, fl = print_json(exp, "-blocks", "-kind", "blocks", "-calltree", "-callers-callees",
                              "-functions")
check(tree["view"] == "calltree" and tree.get("kind") == "blocks", "tree: %r" % tree.get("view"))
truth = block_paths(bl["threads"][0])
paths = tree_paths(tree["tree"])
check(set(paths) == set(truth) == {("main",), ("main", "bar"), ("main", "bar", "foo"),
                                   ("main", "foo")},
      "the tree's paths are the collector's: %r, %r" % (sorted(paths), sorted(truth)))
for path in set(paths) & set(truth):
    n, t = paths[path], truth[path]
    what = "/".join(path)
    check(n["e.bcalls"] == n["i.bcalls"] == t["calls"] == 1, "%s calls: %r" % (what, n))
    same(n["e.bwall"], t["excl"], what + " exclusive")
    same(n["i.bwall"], t["incl"], what + " inclusive")
main0, bar0, mainz = at["main{"][0], at["bar{"][0], at["}main"][0]
(foo1, foo2), (foo1e, foo2e) = at["foo{"], at["}foo"]
if len(paths) == 4:
    near(paths[("main",)]["i.bwall"], mainz - main0, "main inclusive")
    near(paths[("main",)]["e.bwall"], (foo1 - main0) + (bar0 - foo1e) + (mainz - at["}bar"][0]),
         "main exclusive")
    near(paths[("main", "foo")]["i.bwall"], foo1e - foo1, "main/foo inclusive")
    near(paths[("main", "bar")]["i.bwall"], at["}bar"][0] - bar0, "main/bar inclusive")
    near(paths[("main", "bar")]["e.bwall"], foo2 - bar0, "main/bar exclusive")
    near(paths[("main", "bar", "foo")]["i.bwall"], foo2e - foo2, "main/bar/foo inclusive")
check(tree["tree"]["i.bcalls"] == 4, "<Total> calls: %r" % tree["tree"])

# callers-callees: attributed time and the calls made along each edge
ent = {e["function"]: e for e in cc["entries"]}
check(set(ent) == {"main", "bar", "foo"}, "callers-callees entries: %r" % sorted(ent))


def edges(e, side):
    return {x["name"]: (x["a.bcalls"], x["a.bwall"]) for x in e[side]}


if set(ent) == {"main", "bar", "foo"} and len(truth) == 4:
    m, b, f = ent["main"], ent["bar"], ent["foo"]
    check(edges(m, "callers") == {}, "main has no callers: %r" % m["callers"])
    me = edges(m, "callees")
    check(set(me) == {"bar", "foo"} and me["bar"][0] == 1 and me["foo"][0] == 1,
          "main's callees, one call each: %r" % me)
    same(me["bar"][1], truth[("main", "bar")]["incl"], "main -> bar")
    same(me["foo"][1], truth[("main", "foo")]["incl"], "main -> foo")
    fe = edges(f, "callers")
    check(set(fe) == {"bar", "main"} and fe["bar"][0] == 1 and fe["main"][0] == 1,
          "foo's callers, one call each: %r" % fe)
    same(fe["bar"][1], truth[("main", "bar", "foo")]["incl"], "bar -> foo")
    same(fe["main"][1], truth[("main", "foo")]["incl"], "main -> foo (foo's callers)")
    check(f["self"]["e.bcalls"] == 2 and f["self"]["i.bcalls"] == 2, "foo itself: %r" % f["self"])
    check(edges(b, "callers") == {"main": (1, me["bar"][1])}, "bar's caller: %r" % b["callers"])

# the block list: each block's totals are -blocks' totals
rows = {r["name"]: r for r in fl["rows"]}
check(fl.get("kind") == "blocks" and set(rows) == {"<Total>", "main", "bar", "foo"},
      "-functions of blocks: %r" % sorted(rows))
for t in bl["total"]:
    r = rows.get(t["name"], {})
    check(r.get("e.bcalls") == t["calls"], "%s calls: %r %r" % (t["name"], r, t))
    same(r.get("e.bwall", -1), t["excl"], t["name"] + " exclusive, all threads")
    same(r.get("i.bwall", -1), t["incl"], t["name"] + " inclusive, all threads")

p = run([TALLY, "print", "-kind", "blocks", "-calltree", "-kind", "functions", "-metric_list",
         exp], expect=0)
check("Profiled Blocks Call Tree" in p.stdout and "+-foo" in p.stdout, "text tree: %s" % p.stdout)
check("Current metrics: e.%totalcpu" in p.stdout, "-kind functions restores the function "
      "metrics: %s" % p.stdout)

# ---- threads: a thread selection and a filter --------------------------------------------------
exp = os.path.join(d, "threads.tally")
run([TALLY, "collect", "-d", d, "-o", "threads", prog, "threads"], expect=0)
bl, tl = print_json(exp, "-blocks", "-thread_list")
w1 = [t for t in bl["threads"] if "worker1" in {b["name"] for b in t["blocks"]}]
check(len(w1) == 1, "one thread runs worker1: %r" % bl["threads"])
if w1:
    w1 = w1[0]
    num = [t["number"] for t in tl["threads"] if t["tid"] == w1["tid"]]
    check(len(num) == 1, "worker1's thread in -thread_list: %r" % tl)
    want = {b["name"]: b for b in w1["blocks"]}
    check(set(want) == {"worker1", "step"} and want["step"]["calls"] == 2, "worker1: %r" % want)
    for sel in (["-thread_select", str(num[0] if num else 0)],
                ["-filters", "TID == %d" % w1["tid"]]):
        (fl,) = print_json(exp, "-kind", "blocks", *sel, "-functions")
        rows = {r["name"]: r for r in fl["rows"] if r["name"] != "<Total>"}
        check(set(rows) == set(want), "%s: blocks %r, the thread has %r" % (sel, sorted(rows),
                                                                          sorted(want)))
        for name in set(rows) & set(want):
            check(rows[name]["e.bcalls"] == want[name]["calls"], "%s %s calls" % (sel, name))
            same(rows[name]["e.bwall"], want[name]["excl"], "%s %s exclusive" % (sel, name))
            same(rows[name]["i.bwall"], want[name]["incl"], "%s %s inclusive" % (sel, name))
# a filter on block names: the paths through step (workers' own time not in them)
(fl,) = print_json(exp, "-kind", "blocks", "-filters", 'LEAF IN FNAME("step")', "-functions")
rows = {r["name"]: r for r in fl["rows"] if r["name"] != "<Total>"}
check(rows.get("step", {}).get("e.bcalls") == 3, "step in both workers: %r" % rows)
check(all(rows[n]["e.bwall"] == 0 for n in rows if n != "step"),
      "only step's own time: %r" % rows)

p = run([TALLY, "print", "-kind", "blocks", "-thread_select", "1", "-functions", exp], expect=0)
check("matches none" not in p.stderr, "no word of events for a view of block paths: %r" % p.stderr)

# ---- what does not apply, and errors -----------------------------------------------------------
p = run([TALLY, "print", "-kind", "blocks", "-filters", "TSTAMP > 0", "-functions", exp], expect=1)
check("measured over each thread's whole run" in p.stderr and "-thread_select" in p.stderr,
      "a filter on time: %r" % p.stderr)
p = run([TALLY, "print", "-kind", "bogus", exp], expect=2)
check("use functions" in p.stderr and "blocks" in p.stderr, "-kind bogus: %r" % p.stderr)
p = run([TALLY, "print", "-kind", "blocks", "-fsingle", "step", exp], expect=2)
check("-csingle step" in p.stderr, "-fsingle of a block: %r" % p.stderr)
off = os.path.join(d, "off.tally")
run([TALLY, "collect", "-d", d, "-o", "off", "--blocks=off", prog, "seed"], expect=0)
p = run([TALLY, "print", "-kind", "blocks", off], expect=1)
check("no profiled blocks were recorded" in p.stderr, "-kind blocks without blocks: %r" % p.stderr)

done(d)
