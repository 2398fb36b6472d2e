#!/usr/bin/env python3
"""The collector API (include/tally_collector_api.h): a separate library (wl_api_plugin, linked
into wl_api_prog) finds tally_collector_api_v1 with dlsym, declares metrics and record kinds,
and records its calls with stacks and values; they appear, with their stacks and metrics, in
print -functions, -callers-callees, -calltree and --json, in the root process and in a fork
child (whose log gets the declarations again). Misuse of the API gets errors, and the program
runs unchanged without tally.

wl_api_prog: main -> producer -> plug_send(100) x40, main -> consumer -> plug_send(7) x20,
main -> signaler -> raise(SIGUSR1) x5 (the handler records sig_seen with the signal's stack),
fork child: main -> child_work -> plug_send(1000) x3.
"""
import os

from common import *

prog = os.path.join(WL, "wl_api_prog")

# without tally: the library finds no collector and the program runs as ever
p = run([prog, "selftest"], expect=0)
check("api_prog done 0" in p.stdout, "bare run: %r" % p.stdout)
check("selftest: no collector" in p.stderr, "bare run found a collector: %r" % p.stderr)

d = workdir("api")
exp = os.path.join(d, "api.tally")
p = run([TALLY, "collect", "-d", d, "-o", "api.tally", prog, "selftest"], expect=0)
check("api_prog done 0" in p.stdout, "profiled run: %r" % p.stdout)
# misuse: a bad name (EINVAL), another title for a declared metric (EEXIST), a kind of an
# undeclared metric (ENOENT), the same kind again (its id), a kind with other metrics (EEXIST),
# emit outside enter/leave and of an unknown kind (EINVAL)
check("selftest: badname=-22 redeclare_same=0 redeclare_other=-17 kind_undeclared=-2 "
      "kind_same=1 kind_other=-17 emit_outside=-22 emit_badkind=-22" in p.stderr,
      "API answers to misuse: %r" % p.stderr)

# attributes (declare_kind_attrs): a kind with metrics and attributes, the same again (its id),
# duplicate or bad names, more than 16 values, none at all (EINVAL), attributes only, the name
# with other attributes (EEXIST); emit takes metrics + attributes values, not one more; the
# record's attributes are no metric (<Total> below is unchanged) and the log names them
check("selftest-attrs: ok=1 same=1 dup=-22 badname=-22 too_many=-22 none=-22 only_attrs=1 "
      "other=-17 emit=0 emit_over=-22" in p.stderr, "API answers about attributes: %r" % p.stderr)
kinds = {f.get("name"): f for _, f in log_records(exp, "kind")}
check(kinds.get("msg_attr", {}).get("attrs") == "peer,tag" and
      kinds.get("msg_attr", {}).get("metrics") == "msgtime,msgbytes" and
      kinds.get("attr_only", {}).get("metrics") == "" and
      "attr_dup" not in kinds and "attr_many" not in kinds, "kinds with attributes: %r" % kinds)

# runtime states: bad kinds are EINVAL, the thread was in none before, and gets it back; the
# time of plug_busy (300 ms of CPU, and its waits for a CPU) is its metric, and no other's (but
# the waits for a CPU the sampler sees between entering the state and the first sample in it,
# charged to the last sample's stack, before plug_busy: 62 ms of 2.7 s at load average 15, so
# 50 ms and 5%)
check("selftest-state: bad=-22 unknown=-22 none_before=-1 back=1" in p.stderr,
      "set_state answers: %r" % p.stderr)
doc = print_json(exp, "-metrics", "i.plugbusy:i.total:i.totalcpu", "-functions")[0]
rows = {r["name"]: r for r in doc["rows"]}
busy = rows.get("plug_busy", {})
check(busy.get("i.plugbusy", 0) >= 0.9 * busy.get("i.total", 1) and
      busy.get("i.totalcpu", 0) >= 0.2, "plug_busy in its state: %r" % busy)
check(rows.get("<Total>", {}).get("i.plugbusy", 0) <= busy.get("i.total", 0) * 1.05 + 0.05,
      "plugbusy outside plug_busy: %r / %r" % (rows.get("<Total>"), busy))

# the declarations are in both logs
for sub in ("", "_f1.tally"):
    recs = log_records(os.path.join(exp, sub))
    kinds = {r[1].get("name"): r[1] for r in recs if r[0] == "kind"}
    metrics = {r[1].get("name"): r[1] for r in recs if r[0] == "metric"}
    check(kinds.get("msg_send", {}).get("metrics") == "msgtime,msgbytes",
          "%s: kind msg_send: %r" % (sub or "root", kinds))
    check(metrics.get("msgtime", {}).get("time") == "1" and
          metrics.get("msgbytes", {}).get("unit") == "bytes",
          "%s: metrics: %r" % (sub or "root", metrics))

p = run([TALLY, "check", exp], expect=0)
check("unknown" not in p.stdout or " 0 unknown" in p.stdout, "check: %s" % p.stdout)

# ---- -functions ---------------------------------------------------------------------------------
doc = print_json(exp, "-functions")[0]
r = rows_by_name(doc)
want = {  # function: (e.msgbytes, i.msgbytes)
    "<Total>": (7140, 7140),
    "main": (0, 7140),
    "producer": (0, 4000),
    "consumer": (0, 140),
    "child_work": (0, 3000),
    "plug_send": (7140, 7140),
}
for fn, (e, i) in want.items():
    got = r.get(fn, {})
    check((got.get("e.msgbytes"), got.get("i.msgbytes")) == (e, i),
          "-functions %s msgbytes: %r, want %r" % (fn, got, (e, i)))
# times are measured: each call spins 50 us, so at least that; inclusive holds exclusive
ps = r.get("plug_send", {})
at_least(ps.get("e.msgtime", 0), 63 * 50e-6, 0.0, "plug_send exclusive msgtime (63 calls)")
check(abs(r.get("main", {}).get("i.msgtime", -1) - ps.get("e.msgtime", 0)) < 1e-6,
      "main's inclusive msgtime is plug_send's exclusive: %r %r" % (r.get("main"), ps))
# the signal records: the stack of the interrupted code, under signaler
check(r.get("signaler", {}).get("i.sigcount") == 5, "signaler sigcount: %r" % r.get("signaler"))
check(r.get("<Total>", {}).get("i.sigcount") == 5, "total sigcount: %r" % r.get("<Total>"))

# ---- -callers-callees ---------------------------------------------------------------------------
doc = print_json(exp, "-callers-callees")[0]
entries = {e["function"]: e for e in doc["entries"]}
ent = entries.get("plug_send")
check(ent is not None, "-callers-callees has no plug_send")
if ent:
    callers = {c["name"]: c.get("a.msgbytes") for c in ent["callers"]}
    check(callers == {"producer": 4000, "consumer": 140, "child_work": 3000},
          "plug_send's callers: %r" % callers)
ent = entries.get("main")
if ent:
    callees = {c["name"]: c.get("a.msgbytes") for c in ent["callees"]}
    check(callees.get("producer") == 4000 and callees.get("child_work") == 3000,
          "main's callees: %r" % callees)

# ---- -calltree ----------------------------------------------------------------------------------
doc = print_json(exp, "-sort", "i.msgbytes", "-calltree")[-1]
check(doc.get("metric") == "i.msgbytes", "calltree metric %r" % doc.get("metric"))


def find(node, name):
    if node["name"] == name:
        return node
    for k in node.get("children", []):
        f = find(k, name)
        if f:
            return f
    return None


prod = find(doc["tree"], "producer")
check(prod is not None and prod.get("i.msgbytes") == 4000, "calltree producer: %r" % prod)
if prod:
    kids = {k["name"]: k for k in prod.get("children", [])}
    check(kids.get("plug_send", {}).get("e.msgbytes") == 4000, "calltree producer's kids %r" % kids)

# ---- text -----------------------------------------------------------------------------------------
p = run([TALLY, "print", "-metrics", "i.msgbytes:name", "-sort", "i.msgbytes", "-functions", exp],
        expect=0)
check("Incl. Message" in p.stdout and "bytes" in p.stdout, "text header:\n%s" % p.stdout)
check(any(l.split()[-1:] == ["producer"] and l.split()[0] == "4000" for l in p.stdout.splitlines()),
      "text row of producer:\n%s" % p.stdout)
p = run([TALLY, "print", "-sort", "i.msgbytes", "-calltree", exp], expect=0)
tree = p.stdout[p.stdout.find("Functions Call Tree"):].splitlines()
check(p.stdout.startswith("Current Sort Metric: Inclusive Message Bytes ( i.msgbytes )") and
      "Attributed Message Bytes" in p.stdout and len(tree) > 2 and "bytes" in tree[2],
      "text calltree:\n%s" % p.stdout[:400])

done(d)
