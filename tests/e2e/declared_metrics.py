#!/usr/bin/env python3
"""Metrics decided at run time: an experiment whose log declares metrics the analyzer has never
heard of (`metric` records), and a record kind that carries them (`kind`), with TRACE records of
that kind (docs/FORMAT.md). Every view must show them with the right exclusive, inclusive and
attributed values, text and --json, and misuse is told clearly.

The experiment is made here, byte by byte: its stacks are addresses of wl_cpu_single's functions
(nm gives them), so they resolve to names. The call structure is made up:
    main -> hot_loop                       3 calls of 2 ms and 100 bytes each
    main -> hot_loop -> cold_loop          1 call of 5 ms and 7 bytes
plus a TRACE record of a kind the log does not declare (ignored), one with fewer values than its
kind declares (the rest are 0), and one whose kind declaration is refused (a metric not declared).
"""
import os
import re
import struct
import subprocess

from common import *


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sleb(v):
    return uleb((v << 1) if v >= 0 else ((-v) << 1) - 1)


def rec(typ, payload):
    return bytes([typ]) + uleb(len(payload)) + payload


def stack_rec(sid, pcs):
    body = uleb(sid) + uleb(0) + uleb(len(pcs))
    prev = None
    for pc in pcs:
        body += uleb(pc) if prev is None else sleb(pc - prev)
        prev = pc
    return rec(1, body)


def trace_rec(dt, kind, sid, values):
    return rec(8, uleb(dt) + uleb(kind) + uleb(sid) + uleb(len(values)) +
               b"".join(uleb(v) for v in values))


def events_file(body, csize=65536, hsize=4096, t0=1000000000):
    head = b"TALLYEVT" + struct.pack("<IIIIQ", 1, hsize, csize, 7, t0)
    out = bytearray(head.ljust(hsize, b"\0"))
    ch = struct.pack("<IIIIQII", 0x314b4354, 7, 0, len(body), t0, 1, 0) + body
    out += ch.ljust(csize, b"\0")
    return bytes(out)


prog = os.path.join(WL, "wl_cpu_single")
try:
    nm = subprocess.run(["nm", prog], capture_output=True, text=True, check=True).stdout
except (OSError, subprocess.CalledProcessError) as e:
    skip("nm cannot read %s: %s" % (prog, e))
sym = {}
for line in nm.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tT":
        sym[parts[2]] = int(parts[0], 16)
# the compiler may rename them (hot_loop.constprop.0): the names tally shows are the symbols'
full = {}
for f in ("main", "hot_loop", "cold_loop"):
    found = sorted(n for n in sym if n.split(".")[0] == f)
    if not found:
        fail("nm found no %s in %s" % (f, prog))
        done()
    full[f] = found[0]
MAIN, HOT, COLD = full["main"], full["hot_loop"], full["cold_loop"]
BIAS = 0x555555554000
size = os.path.getsize(prog)
pc = {f: BIAS + sym[full[f]] for f in ("main", "hot_loop", "cold_loop")}

d = workdir("declared")
# a title as long as a title may be (127 bytes): shown whole in the text views' headers
LONG_TITLE = " ".join(["Words"] * 20) + " Overall"
assert len(LONG_TITLE) == 127
exp = os.path.join(d, "declared.tally")
os.mkdir(exp)
log = ("tally-experiment version=1\n"
       "start t=1000000000 real=1795483321802436511 pid=7 ppid=1 host=h kernel=k arch=x86_64"
       " ncpus=2 exe=%s cwd=/\n"
       "settings clock=0 clock_source=none\n"
       "thread t=1000000100 tid=7 name=prog how=main\n"
       "load t=1000000000 id=1 path=%s buildid= bias=0x%x lo=0x%x hi=0x%x\n"
       "metric name=msgtime title=Message%%20Time unit=s aggregate=sum time=1\n"
       "metric name=msgbytes title=Message%%20Bytes unit=bytes aggregate=sum time=0\n"
       "metric name=badagg title=Bad aggregate=max\n"
       "metric name=badtitle title=A%%1B[31mred unit=count\n"
       "metric name=longt title=%s unit=count aggregate=sum time=0\n"
       "kind id=3 name=msg_send metrics=msgtime,msgbytes\n"
       "kind id=4 name=broken metrics=msgtime,undeclared\n"
       "end t=2000000000 how=exit status=0\n") % (prog, prog, BIAS, BIAS, BIAS + size,
                                                   "%20".join(LONG_TITLE.split()))
with open(os.path.join(exp, "log"), "w") as f:
    f.write(log)
body = stack_rec(0, [pc["hot_loop"] + 4, pc["main"] + 10])
body += stack_rec(1, [pc["cold_loop"] + 4, pc["hot_loop"] + 9, pc["main"] + 10])
for _ in range(3):
    body += trace_rec(1000, 3, 0, [2000000, 100])
body += trace_rec(1000, 3, 1, [5000000, 7])
body += trace_rec(1000, 3, 1, [0])          # fewer values: msgbytes 0
body += trace_rec(1000, 9, 0, [123, 456])   # a kind nobody declared: no metric
body += trace_rec(1000, 4, 0, [777])        # a refused kind: no metric
with open(os.path.join(exp, "events"), "wb") as f:
    f.write(events_file(body))

# the reader accepts it whole: nothing unknown, nothing damaged
p = run([TALLY, "check", exp])
check(p.returncode == 0, "tally check refused the experiment: %s %s" % (p.stdout, p.stderr))
check("badagg" in p.stdout + p.stderr and "aggregation" in p.stdout + p.stderr,
      "check does not tell why metric badagg is refused:\n%s%s" % (p.stdout, p.stderr))
check("badtitle" in p.stdout + p.stderr and "control characters" in p.stdout + p.stderr,
      "check does not tell why metric badtitle is refused:\n%s%s" % (p.stdout, p.stderr))
check("broken" in p.stdout + p.stderr,
      "check does not tell that kind 'broken' is refused:\n%s%s" % (p.stdout, p.stderr))

# ---- -functions: exclusive and inclusive, JSON ---------------------------------------------
doc = print_json(exp, "-functions")[0]
names = [m["name"] for m in doc["metrics"]]
for m in ("e.msgtime", "i.msgtime", "e.msgbytes", "i.msgbytes"):
    check(m in names, "-functions metrics lack %s: %r" % (m, names))
titles = {m["name"]: m["title"] for m in doc["metrics"]}
check(titles.get("e.msgbytes") == "Exclusive Message Bytes",
      "title of e.msgbytes: %r" % titles.get("e.msgbytes"))
units = {m["name"]: m["unit"] for m in doc["metrics"]}
check(units.get("i.msgtime") == "s" and units.get("i.msgbytes") == "bytes",
      "units: %r" % units)
r = rows_by_name(doc)
expect = {  # function: (e.msgtime s, i.msgtime s, e.msgbytes, i.msgbytes)
    "<Total>": (0.011, 0.011, 307, 307),
    MAIN: (0, 0.011, 0, 307),
    HOT: (0.006, 0.011, 300, 307),
    COLD: (0.005, 0.005, 7, 7),
}
for fn, (et, it, eb, ib) in expect.items():
    check(fn in r, "-functions has no row %s: %r" % (fn, sorted(r)))
    if fn not in r:
        continue
    got = (r[fn].get("e.msgtime"), r[fn].get("i.msgtime"), r[fn].get("e.msgbytes"),
           r[fn].get("i.msgbytes"))
    check(all(abs(a - b) < 1e-9 for a, b in zip(got, (et, it, eb, ib))),
          "-functions %s: got %r, want %r" % (fn, got, (et, it, eb, ib)))
check(doc["rows"][1]["name"] == HOT if doc["rows"][0]["name"] == "<Total>" else True,
      "rows not sorted by the first declared metric: %r" % [x["name"] for x in doc["rows"]])

# ---- -callers-callees: attributed -------------------------------------------------------------
doc = print_json(exp, "-callers-callees")[0]
entries = {e["function"]: e for e in doc["entries"]} if "entries" in doc else None
check(entries is not None, "-callers-callees JSON has no functions: %r" % list(doc))
if entries:
    hot = entries.get(HOT)
    check(hot is not None, "-callers-callees has no hot_loop")
    if hot:
        callers = {c["name"]: c for c in hot["callers"]}
        callees = {c["name"]: c for c in hot["callees"]}
        check(callers.get(MAIN, {}).get("a.msgbytes") == 307,
              "hot_loop's caller main: %r" % callers)
        check(abs(callers.get(MAIN, {}).get("a.msgtime", 0) - 0.011) < 1e-9,
              "hot_loop's caller main time: %r" % callers)
        check(callees.get(COLD, {}).get("a.msgbytes") == 7,
              "hot_loop's callee cold_loop: %r" % callees)
        check(hot["self"].get("e.msgbytes") == 300 and hot["self"].get("i.msgbytes") == 307,
              "hot_loop's self: %r" % hot["self"])

# ---- -calltree ---------------------------------------------------------------------------------
doc = print_json(exp, "-sort", "i.msgbytes", "-calltree")[-1]
check(doc.get("metric") == "i.msgbytes", "calltree metric: %r" % doc.get("metric"))
tree = doc["tree"]
check(tree.get("i.msgbytes") == 307, "calltree <Total>: %r" % tree)
path = [MAIN, HOT, COLD]
node = tree
for fn, want in zip(path, (307, 307, 7)):
    kids = {k["name"]: k for k in node.get("children", [])}
    check(fn in kids, "calltree: no %s under %s" % (fn, node["name"]))
    if fn not in kids:
        break
    node = kids[fn]
    check(node.get("i.msgbytes") == want, "calltree %s: %r" % (fn, node))
check(node.get("e.msgbytes") == 7, "calltree leaf cold_loop exclusive: %r" % node)

p = run([TALLY, "print", "-metrics", "e.longt:name", "-functions", exp], expect=0)
lines = p.stdout.split("\n")
at = next((i for i, l in enumerate(lines) if l.startswith("Excl. ")), len(lines))
head = lines[at:at + 3]  # the three lines of the column headers
check(len(head) == 3 and head[0].startswith("Excl. " + LONG_TITLE.rsplit(" ", 1)[0] + " ") and
      head[1].startswith("Overall ") and head[2].rstrip().endswith("count"),
      "a 127-byte title is cut in the text header:\n%s" % p.stdout[:600])

# ---- the other views that show every metric ----------------------------------------------------
doc = print_json(exp, "-fsingle", HOT)[0]
txt = json.dumps(doc)
check('"e.msgbytes": 300' in txt and '"i.msgbytes": 307' in txt, "-fsingle: %s" % txt)
doc = print_json(exp, "-overview")[0]
txt = json.dumps(doc)
check('"msgbytes": 307' in txt, "-overview totals lack msgbytes: %s" % txt)
doc = print_json(exp, "-metric_list")[0]
txt = json.dumps(doc)
check("msgbytes" in txt and "Message Bytes" in txt and "badagg" not in txt and
      "badtitle" not in txt,
      "-metric_list: %s" % txt)
doc = print_json(exp, "-load_objects")[0]
r = rows_by_name(doc)
check(any(v.get("i.msgbytes") == 307 for k, v in r.items() if k != "<Total>"),
      "-objects: %r" % r)

# ---- text ---------------------------------------------------------------------------------------
p = run([TALLY, "print", "-metrics", "e.msgbytes:i.msgtime:name", "-sort", "e.msgbytes",
         "-functions", exp], expect=0)
check("Excl. Message" in p.stdout and "Incl. Message" in p.stdout,
      "text headers of declared metrics:\n%s" % p.stdout)
rows = {}
for line in p.stdout.splitlines():
    m = re.match(r"\s*(\d+)\s+([\d.]+)\s+(\S+)\s*$", line)
    if m:
        rows[m.group(3)] = (int(m.group(1)), m.group(2))
check(rows.get(HOT) == (300, "0.011") and rows.get(COLD) == (7, "0.005"),
      "text -functions rows: %r\n%s" % (rows, p.stdout))
p = run([TALLY, "print", "-callers-callees", exp], expect=0)
check("Attr. Message" in p.stdout, "text callers-callees headers:\n%s" % p.stdout)

# a misspelt declared metric: the error names it and suggests the right one
p = run([TALLY, "print", "-metrics", "e.msgbyte", "-functions", exp])
check(p.returncode != 0 and "did you mean: msgbytes" in p.stderr, "misspelt metric: %d %s" % (p.returncode,
                                                                                 p.stderr))

# two experiments: the union of their metrics, each with its own values
import shutil
exp2 = os.path.join(d, "declared2.tally")
shutil.copytree(exp, exp2)
doc = print_json([exp, exp2], "-functions")[0]
r = rows_by_name(doc)
check(r.get(HOT, {}).get("e.msgbytes") == 600, "two experiments: %r" % r.get(HOT))

done(d)
