#!/usr/bin/env python3
"""tally export --format=speedscope and --format=chrome imported by speedscope itself, in headless
chromium (tests/e2e/cdp.py): the pinned npm package's offline page (tests/node/node_modules/
speedscope/dist/release/index.html) is opened with #localProfilePath naming a script that hands
it the file (the way speedscope's own command line opens a local file), speedscope's importer
builds its profiles, and the test reads them from the page's component tree: each profile's name
and weight must be tally's.

- speedscope: one sampled profile per thread with data, named "NAME (pid P, tid T)" from
  print -thread_list, whose total weight (ns) is the thread's total of the metric (print
  -thread_select N); and one evented profile per thread with traced calls, "NAME (pid P, tid T):
  traced calls", whose non-idle weight is the thread's sync wait time.
- chrome: speedscope's Trace Event importer makes an evented profile per track, named by the
  track's thread_name and its pid and tid; the samples' track's non-idle weight (the time covered
  by its outermost slices, in us) is the thread's total of the metric, to the nanosecond, and its
  span can only be longer. The traced calls' track (sync waits under -s all) weighs the thread's
  sync wait time.

Skips (77) only when chromium is missing; speedscope's package missing is a failure (scripts/
bootstrap installs it).
"""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import *  # noqa: E402,F401
from cdp import Browser, CDPError, find_chromium  # noqa: E402

PAGE = os.path.join(os.path.abspath(SRC), "tests", "node", "node_modules", "speedscope", "dist", "release",
                    "index.html")

# speedscope's profile group, found in its (preact) component tree: the application component
# is given it as props.profileGroup; each entry's profile is speedscope's Profile object.
FIND = r"""
(() => {
  const seen = new Set();
  const todo = Array.from(document.querySelectorAll("*")).map(e => e.__k).filter(Boolean);
  while (todo.length) {
    const v = todo.pop();
    if (!v || typeof v !== "object" || seen.has(v)) continue;
    seen.add(v);
    const g = v.props && v.props.profileGroup;
    if (g && g.profiles && g.profiles.length)
      return {name: g.name, profiles: g.profiles.map(p => ({
        name: p.profile.getName(), total: p.profile.getTotalWeight(),
        nonidle: p.profile.getTotalNonIdleWeight(), unit: p.profile.getWeightUnit()}))};
    if (Array.isArray(v.__k)) for (const c of v.__k) todo.push(c);
  }
  return null;
})()
"""


def import_in_speedscope(b, path, n):
    """speedscope's profiles of the file at path: [{name, total, nonidle, unit}]"""
    js = path + ".js"
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    with open(js, "w") as f:
        f.write("speedscope.loadFileFromBase64(%s, %s);\n" %
                (json.dumps(os.path.basename(path)), json.dumps(data)))
    b.goto("about:blank")
    # the query makes each import a page load of its own (a new hash alone would not reload)
    b.goto("file://%s?import=%d#localProfilePath=%s" % (PAGE, n, js))
    try:
        g = b.wait(FIND, 60)
    except CDPError as e:
        fail("%s: speedscope imported no profile (%s); the page says %r; errors %s" %
             (path, str(e)[:60], b.eval("document.body.innerText")[:500], b.errors()))
        return []
    check(g["name"] in (os.path.basename(path),) or g["name"].startswith("/"),
          "%s: speedscope's group name %r" % (path, g["name"]))
    return g["profiles"]


def same(ns, printed):
    """tally's ns, as print --json prints seconds (9 significant digits), is print's number"""
    return float("%.9g" % (ns * 1e-9)) == printed


def threads_of(exp, metric):
    """[(number, pid, tid, name, total of metric in s)] of the threads with data"""
    out = []
    for t in print_json(exp, "-thread_list")[0]["threads"]:
        doc = print_json(exp, "-thread_select", str(t["number"]), "-metrics", "i." + metric,
                         "-functions")[0]
        tot = [r for r in doc["rows"] if r["name"] == "<Total>"][0]["i." + metric]
        out.append((t["number"], t["pid"], t["tid"], t["name"], tot))
    return out


def export(exp, fmt, out, *opts):
    run([TALLY, "export", "--format=" + fmt, "-o", out] + list(opts) + [exp], expect=0)


def main():
    if not find_chromium():
        skip("chromium is not installed (scripts/bootstrap installs it)")
    if not check(os.path.exists(PAGE), "%s is missing: scripts/bootstrap runs npm ci in "
                 "tests/node" % PAGE):
        done()
    d = workdir("export-browser")
    rec = collect(d, [os.path.join(WL, "wl_recursion"), "0.15"], name="rec")
    syn = collect(d, [os.path.join(WL, "wl_trace_sync"), "1000"], opts=["-s", "all"], name="syn")
    b = Browser()
    n = 0
    compared = 0
    try:
        # clock: the metric comes from clock samples, which the chrome export lays out as slices
        # (sync waits are traced events: their slices are on the traced calls' tracks)
        for exp, metric, clock in ((rec, "totalcpu", 1), (rec, "user", 1), (syn, "sync", 0)):
            threads = threads_of(exp, metric)
            with_data = [t for t in threads if t[4]]
            check(with_data, "%s: no thread with %s" % (exp, metric))
            sync = {t[0]: t[4] for t in threads_of(exp, "sync")} if exp == syn else {}
            # every clock and state record on the thread's states track: its total thread time
            states = {t[0]: t[4] for t in threads_of(exp, "total")}

            # speedscope's own format: a sampled profile per thread
            out = os.path.join(d, "%s-%s.speedscope.json" % (os.path.basename(exp), metric))
            export(exp, "speedscope", out, "-metrics", metric)
            n += 1
            got = {p["name"]: p for p in import_in_speedscope(b, out, n)}
            want = {"%s (pid %d, tid %d)" % (name, pid, tid): tot
                    for _, pid, tid, name, tot in with_data}
            # and an evented profile of each thread's traced calls (the sync waits), whatever
            # the metric: its non-idle weight is the thread's sync wait time
            evented = {"%s (pid %d, tid %d): traced calls" % (name, pid, tid): sync[num]
                       for num, pid, tid, name, _ in threads if sync.get(num)}
            check(bool(evented) == (exp == syn), "%s: traced calls of threads %r" %
                  (exp, sorted(evented)))
            check(sorted(got) == sorted(list(want) + list(evented)),
                  "speedscope %s: profiles %r, tally's threads %r and traced calls %r"
                  % (metric, sorted(got), sorted(want), sorted(evented)))
            for name, tot in want.items():
                p = got.get(name)
                if p is None:
                    continue
                compared += 1
                check(p["unit"] == "nanoseconds" and p["total"] == int(p["total"]) and
                      same(p["total"], tot), "speedscope %s %s: speedscope weighs %r %s, tally "
                      "%r s" % (metric, name, p["total"], p["unit"], tot))
            for name, tot in evented.items():
                p = got.get(name)
                if p is None:
                    continue
                compared += 1
                check(p["unit"] == "nanoseconds" and same(p["nonidle"], tot) and
                      p["total"] >= p["nonidle"], "speedscope %s %s: speedscope weighs %r %s "
                      "(span %r), tally %r s" % (metric, name, p["nonidle"], p["unit"],
                                                 p["total"], tot))

            # Chrome's Trace Event format, through speedscope's importer of it
            out = os.path.join(d, "%s-%s.trace.json" % (os.path.basename(exp), metric))
            export(exp, "chrome", out, "-metrics", metric)
            n += 1
            got = {p["name"]: p for p in import_in_speedscope(b, out, n)}
            want = {"%s (%d) (pid %d, tid %d)" % (name, tid, pid, tid): tot
                    for _, pid, tid, name, tot in with_data if clock}
            for num, pid, tid, name, _ in threads:
                if sync.get(num):
                    want["%s (%d) traced calls (pid %d, tid %d)" %
                         (name, tid, pid, 1000000000 + num)] = sync[num]
                # (given samples, speedscope shows them, not the traceEvents' slices)
                if states.get(num) and not clock:
                    want["%s (%d) states (pid %d, tid %d)" %
                         (name, tid, pid, 1500000000 + num)] = states[num]
            check(sorted(got) == sorted(want), "chrome %s: speedscope's profiles %r, tally's "
                  "tracks %r" % (metric, sorted(got), sorted(want)))
            for name, tot in want.items():
                p = got.get(name)
                if p is None:
                    continue
                compared += 1
                ns = round(p["nonidle"] * 1000)
                check(p["unit"] == "microseconds" and abs(p["nonidle"] * 1000 - ns) < 0.01 and
                      same(ns, tot), "chrome %s %s: speedscope weighs %r %s, tally %r s" %
                      (metric, name, p["nonidle"], p["unit"], tot))
                check(p["total"] >= p["nonidle"], "chrome %s %s: span %r under its weight %r"
                      % (metric, name, p["total"], p["nonidle"]))
        check(not b.errors(), "speedscope's page: %s" % b.errors())
    finally:
        b.close()
    check(compared >= 8, "only %d profiles compared" % compared)
    done(d)


main()
