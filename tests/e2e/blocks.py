#!/usr/bin/env python3
"""Profiled blocks (spec 004): the seed's example with each microsecond 10 ms of real time
(wl_blocks seed), its performance callstack at the monitor point (Table 1's columns) and the
whole-run profile; a block excluded by a selective file (absent, its time in the enclosing
block's exclusive); run-time disable and enable of a block and of a group; threads with
independent callstacks; TAU's macros (include/tau/TAU.h); a -finstrument-functions program with
a selective file (exclude list with a wildcard, include list) and two quantities (wall, cpu);
--blocks=off; errors.

Calls and subrs are exact. Times are compared with the program's own CLOCK_MONOTONIC marks
(within 5%: both measure the same span) and, one-sided, with the nominal sleeps (a sleep only
comes out longer).
"""
import os

from common import *

prog = os.path.join(WL, "wl_blocks")
fprog = os.path.join(WL, "wl_blocks_finstr")
d = workdir("blocks")
TOL = 0.05


def marks(stdout):
    """`at NAME SECONDS` lines: a list of (name, seconds) in order."""
    out = []
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "at":
            out.append((f[1], float(f[2])))
    return out


def collect_run(name, args, opts=()):
    p = run([TALLY, "collect", "-d", d, "-o", name] + list(opts) + args, expect=0)
    return os.path.join(d, name + ".tally"), p.stdout


def near(actual, truth, what, nominal=None):
    """within TOL of the program's own measurement (plus 2 ms for the clock reads around it),
    and never below the nominal sleep"""
    ok = check(abs(actual - truth) <= TOL * truth + 0.002,
               "%s: got %.4f s, the program measured %.4f s (within 5%%)" % (what, actual, truth))
    if nominal is not None:
        ok &= at_least(actual, nominal, 0.005, what + " against the nominal sleep")
    return ok


def rows_of(doc):
    return [r["name"] for r in doc["rows"]]


# ---- without tally the program runs as ever --------------------------------------------------
p = run([prog, "seed"], expect=0)
check("at }main" in p.stdout, "bare run: %r" % p.stdout)

# ---- the seed's example ------------------------------------------------------------------------
exp, out = collect_run("seed", [prog, "seed"])
m = marks(out)
at = {}
for name, t in m:
    at.setdefault(name, []).append(t)
mon = at["monitor"][0]
(cs,) = print_json(exp, "-callstack", "1")
check(len(cs["callstacks"]) == 1, "one monitor point: %r" % cs)
c = cs["callstacks"][0]
check(rows_of(c) == ["main", "bar", "foo"], "callstack outermost first: %r" % rows_of(c))
check(c["label"] == "seed" and c["n"] == 1, "label and number: %r" % c)
r = rows_by_name(c)
# Table 1: main 1 2, bar 1 1, foo 2 0 (calls, subrs)
for name, calls, subrs in (("main", 1, 2), ("bar", 1, 1), ("foo", 2, 0)):
    check(r[name]["calls"] == calls and r[name]["subrs"] == subrs,
          "%s calls/subrs: %r, expected %d %d" % (name, r[name], calls, subrs))
main0, foo1, foo1e, bar0, foo2 = (at["main{"][0], at["foo{"][0], at["}foo"][0], at["bar{"][0],
                                  at["foo{"][1])
# 10 ms a microsecond: main excl 10 (0-5, 10-15), incl 25; bar 5, 10; foo 10, 10, instance 5, 5
near(r["main"]["incl"], mon - main0, "main incl", 0.25)
near(r["main"]["inst_incl"], mon - main0, "main inst_incl", 0.25)
near(r["main"]["excl"], (foo1 - main0) + (bar0 - foo1e), "main excl", 0.10)
near(r["main"]["inst_excl"], (foo1 - main0) + (bar0 - foo1e), "main inst_excl", 0.10)
near(r["bar"]["excl"], foo2 - bar0, "bar excl", 0.05)
near(r["bar"]["incl"], mon - bar0, "bar incl", 0.10)
near(r["bar"]["inst_incl"], mon - bar0, "bar inst_incl", 0.10)
near(r["foo"]["excl"], (foo1e - foo1) + (mon - foo2), "foo excl", 0.10)
near(r["foo"]["incl"], (foo1e - foo1) + (mon - foo2), "foo incl", 0.10)
near(r["foo"]["inst_excl"], mon - foo2, "foo inst_excl", 0.05)
near(r["foo"]["inst_incl"], mon - foo2, "foo inst_incl", 0.05)
# the whole run: main ends at }main; foo's second instance at the second }foo
(bl,) = print_json(exp, "-blocks")
tot = {x["name"]: x for x in bl["total"]}
check(set(tot) == {"main", "foo", "bar"}, "blocks: %r" % sorted(tot))
check(tot["main"]["calls"] == 1 and tot["main"]["subrs"] == 2, "main: %r" % tot["main"])
check(tot["foo"]["calls"] == 2 and tot["foo"]["subrs"] == 0, "foo: %r" % tot["foo"])
near(tot["main"]["incl"], at["}main"][0] - main0, "main incl, whole run", 0.35)
near(tot["foo"]["incl"], (foo1e - foo1) + (at["}foo"][1] - foo2), "foo incl, whole run", 0.15)
paths = bl["threads"][0]["paths"]
check([(x["depth"], x["name"]) for x in paths] == [(0, "main"), (1, "bar"), (2, "foo"),
                                                   (1, "foo")],
      "call paths: %r" % [(x["depth"], x["name"]) for x in paths])
# text views name Table 1's columns
p = run([TALLY, "print", "-callstack", exp], expect=0)
for col in ("Calls", "Subrs", "Excl. (s)", "Incl. (s)", "Inst. Excl. (s)", "Inst. Incl. (s)"):
    check(col in p.stdout, "-callstack column %r: %s" % (col, p.stdout))
(h,) = print_json(exp, "-callstack_history", "foo")
check([x["name"] for x in h["history"]] == ["foo"] and h["history"][0]["d_calls"] == 2,
      "history of foo: %r" % h)
p = run([TALLY, "print", "-callstack", "2", exp], expect=1)
check("at most 1" in p.stderr, "-callstack 2 of 1: %r" % p.stderr)
p = run([TALLY, "print", "-callstack=x", exp], expect=2)
check("monitor point number" in p.stderr, "-callstack x: %r" % p.stderr)
p = run([TALLY, "print", "-callstack_history", "nosuch", exp], expect=1)
check("no profiled block is called 'nosuch'" in p.stderr, "history of nosuch: %r" % p.stderr)

# ---- a block excluded by a selective file: absent, its time its caller's exclusive ----------
sel = os.path.join(d, "nobar.sel")
with open(sel, "w") as f:
    f.write("# bar is not profiled\nBEGIN_EXCLUDE_LIST\nvoid bar(void)\nEND_EXCLUDE_LIST\n")
exp, out = collect_run("nobar", [prog, "seed"], ["--blocks=" + sel])
at = {}
for name, t in marks(out):
    at.setdefault(name, []).append(t)
(cs,) = print_json(exp, "-callstack")
c = cs["callstacks"][0]
check(rows_of(c) == ["main", "foo"], "without bar: %r" % rows_of(c))
r = rows_by_name(c)
check(r["main"]["calls"] == 1 and r["main"]["subrs"] == 2, "main subrs without bar: %r" % r)
main_excl = (at["foo{"][0] - at["main{"][0]) + (at["foo{"][1] - at["}foo"][0])
near(r["main"]["excl"], main_excl, "main excl with bar's time", 0.15)
(bl,) = print_json(exp, "-blocks")
check("bar" not in {x["name"] for x in bl["total"]}, "bar excluded: %r" % bl["total"])

# ---- run-time disable and enable -------------------------------------------------------------
exp, out = collect_run("switch", [prog, "switch"])
at = {n: t for n, t in marks(out)}
(bl,) = print_json(exp, "-blocks")
tot = {x["name"]: x for x in bl["total"]}
check(tot.get("io", {}).get("calls") == 1, "io profiled once (enabled again): %r" % tot)
check(tot.get("g1", {}).get("calls") == 1, "g1 once (its group enabled again): %r" % tot)
check(tot["main"]["subrs"] == 2, "main's subrs: the enabled io and g1: %r" % tot["main"])
near(tot["io"]["incl"], at["}io"] - at["io{"], "io incl", 0.02)
near(tot["main"]["excl"], (at["off-done"] - at["main{"]) + (at["io{"] - at["off-done"]) +
     (at["g1{"] - at["}io"]) + (at["}main"] - at["}g1"]), "main excl with disabled io", 0.03)
(cs,) = print_json(exp, "-callstack")
check(rows_of(cs["callstacks"][0]) == ["main", "g1"], "switch callstack: %r" % cs)

# ---- threads: independent callstacks ------------------------------------------------------------
exp, out = collect_run("threads", [prog, "threads"])
(cs,) = print_json(exp, "-callstack", "all")
by_label = {}
for c in cs["callstacks"]:
    by_label.setdefault(c["label"], []).append(c)
check(len(by_label.get("worker0", [])) == 1 and len(by_label.get("worker1", [])) == 2,
      "monitor points per thread: %r" % {k: len(v) for k, v in by_label.items()})
w1 = sorted(by_label.get("worker1", []), key=lambda c: c["n"])
if len(w1) == 2:
    check([rows_of(c) for c in w1] == [["worker1", "step"]] * 2, "worker1 stacks: %r" % w1)
    check([c["rows"][1]["calls"] for c in w1] == [1, 2], "worker1 step calls: %r" % w1)
    check(w1[0]["tid"] == w1[1]["tid"], "one thread: %r" % w1)
j = by_label.get("joined", [{}])[0]
check(rows_of(j) == ["main"] and j["rows"][0]["subrs"] == 0,
      "the main thread's callstack has none of the workers' blocks: %r" % j)
(h,) = print_json(exp, "-callstack_history", "step")
w1h = [x for x in h["history"] if x["label"] == "worker1"]
check([(x["n"], x["calls"], x["d_calls"]) for x in w1h] == [(1, 1, 1), (2, 2, 1)],
      "history of step in worker1: %r" % w1h)
if len(w1h) == 2:
    near(w1h[1]["d_excl"], w1h[1]["excl"] - w1h[0]["excl"], "history's change of excl")
    check(w1h[1]["d_incl"] > 0.009, "step's inclusive grew by a 10 ms sleep: %r" % w1h)
(bl,) = print_json(exp, "-blocks")
check(len(bl["threads"]) == 3, "three threads with blocks: %r" % len(bl["threads"]))
tot = {x["name"]: x for x in bl["total"]}
check(tot.get("step", {}).get("calls") == 3, "step summed over threads: %r" % tot)

# ---- TAU's macros ----------------------------------------------------------------------------
exp, out = collect_run("tau", [prog, "tau"])
(cs,) = print_json(exp, "-callstack")
c = cs["callstacks"][0]
check(rows_of(c) == ["main int (int, char **)", "bar void (void)", "foo"],
      "TAU timers named 'name type': %r" % rows_of(c))
check(c["rows"][2]["calls"] == 2 and c["rows"][0]["subrs"] == 2, "TAU calls/subrs: %r" % c)
(bl,) = print_json(exp, "-blocks")
groups = {x["name"]: x["group"] for x in bl["total"]}
check("hidden" not in groups, "TAU_DISABLE_GROUP(TAU_USER) hides TAU_START blocks: %r" % groups)
check(groups.get("bar void (void)") == "TAU_USER" and
      groups.get("main int (int, char **)") == "TAU_DEFAULT", "TAU groups: %r" % groups)

# ---- -finstrument-functions with a selective file, two quantities ---------------------------
sel = os.path.join(d, "finstr.sel")
with open(sel, "w") as f:
    f.write("BEGIN_EXCLUDE_LIST\nvoid helper(void)\nvoid skip_#(int)\nEND_EXCLUDE_LIST\n")
exp, out = collect_run("finstr", [fprog], ["--blocks=" + sel, "--block-metrics=wall,cpu"])
truth = {}
for line in out.splitlines():
    f = line.split()
    if len(f) == 3:
        truth[f[0] + " " + f[1]] = float(f[2])
(bl,) = print_json(exp, "-blocks")
check(bl["quantities"] == ["wall", "cpu"], "quantities: %r" % bl["quantities"])
tot = {x["name"]: x for x in bl["total"]}
for absent in ("helper", "skip_a", "skip_b"):
    check(absent not in tot, "%s excluded: %r" % (absent, sorted(tot)))
for present in ("main", "work", "leaf", "spin"):
    check(present in tot, "%s profiled: %r" % (present, sorted(tot)))
if "leaf" in tot and "work" in tot:
    check(tot["leaf"]["calls"] == 3, "leaf calls: %r" % tot["leaf"])
    # helper and skip_a are not blocks: the three leaf calls are work's, directly
    paths = bl["threads"][0]["paths"]
    under_work = [x for x in paths if x["name"] == "leaf" and paths[x["parent"]]["name"] == "work"]
    check(len(under_work) == 1 and under_work[0]["calls"] == 3, "leaf under work: %r" % paths)
    check(tot["work"]["subrs"] == 4, "work's subrs (leaf x3, spin): %r" % tot["work"])
    near(tot["work"]["incl"], truth["span work"], "work incl", 0.04)
    at_least(tot["leaf"]["incl"], 0.04, 0.005, "leaf incl: four 10 ms sleeps")
    at_most(tot["leaf"]["incl"], tot["work"]["incl"], 0.0, "leaf incl within work's")
    # thread CPU time: the spin measured by the program, and a sleep takes next to none
    near(tot["spin"]["incl_cpu"], truth["cpu spin"], "spin CPU incl", 0.05)
    check(tot["leaf"]["incl_cpu"] < 0.1 * tot["leaf"]["incl"],
          "leaf sleeps: CPU %.4f s of %.4f s" % (tot["leaf"]["incl_cpu"], tot["leaf"]["incl"]))
# an include list: only the blocks it names
sel2 = os.path.join(d, "only.sel")
with open(sel2, "w") as f:
    f.write("BEGIN_INCLUDE_LIST\nint main(void)\nwork\nEND_INCLUDE_LIST\n")
exp, out = collect_run("only", [fprog], ["--blocks=" + sel2])
(bl,) = print_json(exp, "-blocks")
check(sorted(x["name"] for x in bl["total"]) == ["main", "work"],
      "include list: %r" % [x["name"] for x in bl["total"]])

# ---- fork: the child keeps the open blocks, each one call from the fork --------------------
exp, out = collect_run("fork", [prog, "fork"])
(cs,) = print_json(os.path.join(exp, "_f1.tally"), "-callstack")
c = cs["callstacks"][0] if cs["callstacks"] else {"rows": []}
check(rows_of(c) == ["main", "child"], "the child's callstack: %r" % c)
if rows_of(c) == ["main", "child"]:
    check(c["rows"][0]["calls"] == 1 and c["rows"][0]["subrs"] == 1, "child's main: %r" % c)
    # main's instance in the child starts at the fork: the child's 20 ms, not the parent's 10 before
    # (against the run's own truth, the child block's instance in the same child, not a nominal
    # 20 ms that load can stretch: counted from the parent's start, main would hold the parent's
    # 10 ms sleep more than child does, and a sleep only comes out longer)
    gap = c["rows"][0]["inst_incl"] - c["rows"][1]["inst_incl"]
    check(0 <= gap < 0.010, "main in the child since the fork: %.4f s more than child's %.4f s "
          "(the parent's 10 ms before the fork must not count)" % (gap, c["rows"][1]["inst_incl"]))
    at_least(c["rows"][1]["inst_incl"], 0.02, 0.005, "child's 20 ms sleep")
(cs,) = print_json(exp, "-callstack")
c = [x for x in cs["callstacks"] if x["label"] == "parent"]
check(len(c) == 1 and rows_of(c[0]) == ["main"] and c[0]["rows"][0]["subrs"] == 0,
      "the parent's callstack has none of the child's blocks: %r" % cs)

# ---- records that do not parse are skipped with a note ---------------------------------------
exp, out = collect_run("hostile", [prog, "seed"])
with open(os.path.join(exp, "log"), "a") as f:
    f.write("callstack t=1 tid=1 n=9 rows=0,1,2\n")              # too few numbers
    f.write("callstack t=1 tid=1 n=9 rows=77,1,0,1,1,1,1\n")     # an undeclared block
    f.write("block-paths t=1 tid=5 first=1 rows=3,0,1,0,1,1\n")  # a parent after its child
    f.write("block-profile t=1 tid=5 part=0 rows=0,99999999999999999999999,0,1,1\n")
    f.write("block id=70000 name=x\n")
p = run([TALLY, "print", "-callstack", exp], expect=0)
check(p.stderr.count("record skipped") == 5, "five notes: %r" % p.stderr)
check("line 30: block-paths record skipped" in p.stderr, "notes name the line: %r" % p.stderr)
check("monitor point 1 \"seed\"" in p.stdout and "point 9" not in p.stdout,
      "the good records still shown: %r" % p.stdout)

# ---- --blocks=off and errors ---------------------------------------------------------------------
exp, out = collect_run("off", [prog, "seed"], ["--blocks=off"])
check(not log_records(exp, "block"), "--blocks=off: no block records")
p = run([TALLY, "print", "-blocks", exp], expect=0)
check("no profiled blocks were recorded" in p.stdout, "-blocks without blocks: %r" % p.stdout)
bad = os.path.join(d, "bad.sel")
with open(bad, "w") as f:
    f.write("BEGIN_EXCLUDE_LIST\nfoo\nBEGIN_FILE_INCLUDE_LIST\n")
p = run([TALLY, "collect", "-d", d, "--blocks=" + bad, prog, "seed"], expect=2)
check("bad.sel:3:" in p.stderr and "END_EXCLUDE_LIST" in p.stderr, "bad file: %r" % p.stderr)
with open(bad, "w") as f:
    f.write("BEGIN_FILE_EXCLUDE_LIST\nfoo.c\nEND_FILE_EXCLUDE_LIST\n")
p = run([TALLY, "collect", "-d", d, "--blocks=" + bad, prog, "seed"], expect=2)
check("bad.sel:1:" in p.stderr and "source files" in p.stderr, "file lists: %r" % p.stderr)
p = run([TALLY, "collect", "-d", d, "--block-metrics=wall,wall", prog, "seed"], expect=2)
check("--block-metrics=wall,wall" in p.stderr, "bad quantities: %r" % p.stderr)
p = run([TALLY, "collect", "-d", d, "--block-metrics=nosuch", prog, "seed"], expect=2)
check("unknown counter 'nosuch'" in p.stderr, "unknown quantity: %r" % p.stderr)

done(d)
