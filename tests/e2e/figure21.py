"""Figure 2-1 of the metric specification, as a real program (examples/example.c), collected at
1 ms and printed: every exclusive, inclusive and attributed value within 5% of the expected value
scaled to the measured total (or 1% of the total for the small ones, where one sample is 0.03%)."""
import os
from common import *

d = workdir("fig21")
example = os.path.join(os.path.dirname(TALLY), "example")
exp = collect(d, [example], opts=["-p", "hi"])

docs = print_json(exp, "-metrics", "e.totalcpu:i.totalcpu:name", "-functions",
                  "-callers-callees")
funcs = rows_by_name(docs[0])
total = funcs["<Total>"]["i.totalcpu"] if "i.totalcpu" in funcs["<Total>"] else funcs["<Total>"]["e.totalcpu"]
unit = total / 32.0
check(total > 2.0, "total CPU %.3f s is too small for this test" % total)

expected = {  # name: (exclusive units, inclusive units)
    "main": (2, 32), "A": (0, 10), "B": (5, 20), "C": (5, 25),
    "E": (10, 10), "F": (2.5, 10), "G": (7.5, 7.5),
}


def near(actual, units, what):
    exp_s = units * unit
    tol = max(0.05 * exp_s, 0.01 * total)
    check(abs(actual - exp_s) <= tol,
          "%s: %.3f s, expected %.3f s (%.1f units) +- %.3f" % (what, actual, exp_s, units, tol))


for name, (ex, inc) in expected.items():
    if not check(name in funcs, "function %s missing from -functions" % name):
        continue
    near(funcs[name]["e.totalcpu"], ex, name + " exclusive")
    near(funcs[name]["i.totalcpu"], inc, name + " inclusive")

cc = {entry["function"]: entry for entry in docs[1]["entries"]} if "entries" in docs[1] else \
     {entry["function"]: entry for entry in docs[1:]}


def attributed(entry, side):
    return {r["name"]: r["a.totalcpu"] for r in entry[side]}


if check("C" in cc, "C missing from -callers-callees"):
    callers = attributed(cc["C"], "callers")
    callees = attributed(cc["C"], "callees")
    near(callers.get("A", 0), 10, "C's caller A")
    near(callers.get("B", 0), 15, "C's caller B")
    near(callees.get("E", 0), 10, "C's callee E")
    near(callees.get("F", 0), 10, "C's callee F")
    near(sum(callers.values()), 25, "C's callers sum (= C inclusive)")
if check("main" in cc, "main missing from -callers-callees"):
    callees = attributed(cc["main"], "callees")
    near(callees.get("A", 0), 10, "main's callee A")
    near(callees.get("B", 0), 20, "main's callee B")
done(d)
