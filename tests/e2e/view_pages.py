"""`tally view`'s pages of data objects and structure layouts, profiled blocks and counters, in
headless chromium (tests/e2e/cdp.py): each page opened and clicked through as a user would (a
data object's details and its container, a monitor point after another, a block's history, a
counter chosen as the sort), and every number shown compared with `tally print --json` on the
same experiment. No JavaScript error or refused resource is allowed. Exits 77 (skipped) without
chromium. (MPI: view_mpi.py.)

  view_pages.py [SCREENSHOT_DIR]   also saves a screenshot of each page there (docs/view-*.png)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa: E402,F401
import cdp  # noqa: E402
from viewpage import Pages, f3, shown  # noqa: E402
from viewserver import Server  # noqa: E402

if not cdp.find_chromium():
    skip("no chromium (scripts/bootstrap installs it)")
shots = sys.argv[1] if len(sys.argv) > 1 else None

d = workdir("view_pages")
DS = collect(d, [os.path.join(WL, "wl_dataspace"), "list", "1"], opts=["-p", "+hi"], name="ds")
BL = collect(d, [os.path.join(WL, "wl_blocks"), "threads"], name="blocks")
CN = collect(d, [os.path.join(WL, "wl_counters"), "faults", "300", "200", "150", "100"],
             opts=["-h", "+page-faults,1"], name="counters")
EXPS = [DS, BL, CN]


def pj(exp, *cmds):
    return print_json(exp, *cmds)[-1]


def ds_value(row, k):
    return shown(row[k], "s" if k == "e.user" else "")


sv = Server(TALLY, EXPS)
b = cdp.Browser()
P = Pages(b, sv, shots)
try:
    # -- data objects: the table, a member's details, its structure, the layouts, cache lines --
    P.open("data", "exp=0")
    doc = pj(DS, "-data_objects")
    objs = doc["objects"]
    check(len(objs) > 3 and objs[0]["name"] == "<Total>", "print's data objects: %s" % objs[:2])
    keys = [k for k in objs[0] if k == "samples" or k.startswith("e.")]
    rows = P.rows("table.dobjs")
    check([r["name"] for r in rows] == [o["name"] for o in objs],
          "data objects shown %s, print %s" % ([r["name"] for r in rows][:6],
                                               [o["name"] for o in objs][:6]))
    for r, o in zip(rows, objs):
        for k in keys:
            check(r["k"].get(k) == ds_value(o, k), "data object %s %s: shown %s, print %s" %
                  (o["name"], k, r["k"].get(k), o[k]))
    P.shot("data")
    member = "{structure:node}.{pointer+structure:node next}"
    check(any(o["name"] == member for o in objs), "the list walk has no %s" % member)
    check(P.click('table.dobjs tr[data-name="%s"] td.name a' % member, then="data"),
          "no link on %s" % member)
    check("obj=" in b.eval("location.hash"), "the data object is in the URL: %s" %
          b.eval("location.hash"))
    one = pj(DS, "-data_single", member)
    check(P.text("#dobj h3") == member, "details of %r" % P.text("#dobj h3"))
    for k in ("kind", "scope", "via", "samples", "samples_without_address"):
        check(P.text('[data-k="dobj.%s"]' % k) == str(one[k]), "%s's %s: shown %s, print %s" %
              (member, k, P.text('[data-k="dobj.%s"]' % k), one[k]))
    check(P.text('[data-k="dobj.e.user"]') == f3(one["e.user"]) + " s",
          "%s's e.user: %s, print %s" % (member, P.text('[data-k="dobj.e.user"]'), one["e.user"]))
    check(P.texts("#dobj a.container") == [c + " " for c in one["containers"]],
          "containers %s, print %s" % (P.texts("#dobj a.container"), one["containers"]))
    P.shot("data-single")
    if one["containers"]:
        P.click("#dobj a.container", then="data")
        agg = pj(DS, "-data_single", one["containers"][0])
        check(P.text("#dobj h3") == one["containers"][0] and
              P.text('[data-k="dobj.samples"]') == str(agg["samples"]),
              "the container's details: %s %s, print %s" %
              (P.text("#dobj h3"), P.text('[data-k="dobj.samples"]'), agg["samples"]))
    lay = pj(DS, "-data_layout")["structures"]
    check(len(lay) >= 1, "no structure layout: %s" % lay)
    tables = b.eval("document.querySelectorAll('table.layout').length")
    check(tables == len(lay), "%s layouts shown, print has %d" % (tables, len(lay)))
    for i, s in enumerate(lay):
        got = b.eval("""[...document.querySelectorAll('table.layout')[%d].querySelectorAll('tbody tr')]
                        .map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))""" % i)
        want = [["+%d" % m["offset"], str(m["size"])] + [ds_value(m, k) for k in keys]
                for m in s["members"]]
        check([g[:2 + len(keys)] for g in got] == want and [g[-1] for g in got] ==
              [m["name"] for m in s["members"]],
              "layout of %s: shown %s, print %s" % (s["name"], got, want))
    lines = pj(DS, "-limit", "50", "-memobj", "cacheline")["objects"]
    got = [r["name"] for r in P.rows("table.lines")]
    check(got == [o["address"] for o in lines], "cache lines shown %s, print %s" %
          (got[:4], [o["address"] for o in lines][:4]))
    fs = pj(DS, "-false_sharing")["objects"]
    check(b.eval("document.querySelectorAll('table.fsharing tbody tr').length") == len(fs),
          "false sharing rows, print has %d" % len(fs))

    # an experiment without memory references says so, and how to record them
    P.open("data", "exp=1")
    check(pj(BL, "-data_objects")["memrefs"] == 0 and
          "tally collect -p +on" in (P.text("#no-data") or ""),
          "data objects of an experiment without them: %r" % P.text("#no-data"))

    # -- profiled blocks: the whole run, every monitor point, the history of one block --
    P.open("blocks", "exp=1")
    bl = pj(BL, "-blocks")
    cols = ["calls", "subrs", "excl", "incl"]

    def same_blocks(sel, want, what, keys=cols):
        got = P.rows(sel)
        check([r["name"] for r in got] == [w["name"] for w in want],
              "%s: blocks %s, print %s" % (what, [r["name"] for r in got],
                                           [w["name"] for w in want]))
        for r, w in zip(got, want):
            for k in keys:
                v = shown(w[k], "" if k.endswith("calls") or k == "subrs" else "s")
                check(r["k"].get(k) == v, "%s: %s %s shown %s, print %s" %
                      (what, w["name"], k, r["k"].get(k), w[k]))
    same_blocks("table.blocks-total", bl["total"], "blocks of the whole run")
    paths = b.eval("document.querySelectorAll('table.blocks-paths').length")
    check(paths == len(bl["threads"]) and paths >= 3, "call paths of %s threads shown, print "
          "has %d" % (paths, len(bl["threads"])))
    P.shot("blocks")
    cs = pj(BL, "-callstack", "all")["callstacks"]
    check(len(cs) >= 3, "monitor points: %d" % len(cs))
    inst = cols + ["inst_excl", "inst_incl"]
    same_blocks("table.callstack", cs[0]["rows"], "callstack at the first monitor point", inst)
    for k in range(1, len(cs)):   # the next button, to the last monitor point
        P.click("#mon-next", then="blocks")
        same_blocks("table.callstack", cs[k]["rows"], "callstack at monitor point %d of thread "
                    "%d" % (cs[k]["n"], cs[k]["tid"]), inst)
        check(b.eval("document.querySelector('#mon').selectedIndex") == k, "the selector follows")
    check(b.eval("document.querySelector('#mon-next').disabled"), "next at the last point")
    hist = pj(BL, "-callstack_history")["history"]
    same_blocks("table.history", hist, "callstack history", cols + ["d_calls", "d_excl"])
    check(P.click('table.history tr[data-name="step"] td.name a', then="blocks"),
          "no link on step")
    hs = pj(BL, "-callstack_history", "step")["history"]
    check(len(hs) < len(hist), "step's history is shorter than everything's")
    same_blocks("table.history", hs, "callstack history of step", cols + ["d_calls", "d_incl"])
    P.shot("blocks-history")
    P.click("#block-all", then="blocks")
    check(len(P.rows("table.history")) == len(hist), "back to every block's history")

    # -- counters: what each counted, and the functions by counter --
    P.open("counters", "exp=2")
    hc = pj(CN, "-header")["experiments"][0]["processes"][0]["counters"]
    got = b.eval("[...document.querySelectorAll('table.counters tbody tr')].map(tr => "
                 "[...tr.querySelectorAll('td')].map(td => td.textContent))")
    check(len(got) == len(hc) == 1 and got[0][1] == hc[0]["name"] and
          got[0][3] == str(hc[0]["samples"]) and got[0][4] == str(hc[0]["events"]) and
          got[0][5] == str(hc[0]["counted"]),
          "counters shown %s, print %s" % (got, hc))
    fn = pj(CN, "-metrics", "e.%page-faults:i.page-faults:name", "-sort", "e.page-faults",
            "-functions")
    rows = P.rows("table.metrics")
    check([r["name"] for r in rows] == [r["name"] for r in fn["rows"]],
          "functions by page faults: %s, print %s" % ([r["name"] for r in rows][:6],
                                                      [r["name"] for r in fn["rows"]][:6]))
    for r, w in zip(rows, fn["rows"]):
        for k in ("e.page-faults", "i.page-faults"):
            check(r["k"].get(k) == str(w[k]), "%s %s: shown %s, print %s" %
                  (w["name"], k, r["k"].get(k), w[k]))
    faults = {r["name"]: r["k"].get("e.page-faults") for r in rows}
    for f, n in (("touch_global1", 300), ("touch_global2", 200), ("touch_heap", 150),
                 ("touch_stack", 100)):
        check(faults.get(f) == str(n), "%s shows %s page faults, the program made %d" %
              (f, faults.get(f), n))
    P.shot("counters")
    # the functions page offers the counter among its metrics
    P.open("functions", "exp=2")
    b.wait("document.querySelector('#mlist option') !== null")
    check(b.eval("[...document.querySelectorAll('#mlist option')].some(o => "
                 "o.value.includes('page-faults'))"), "the metrics list lacks page-faults")

    errs = b.errors()
    check(not errs, "errors in the page: %s" % errs)
finally:
    b.close()
    rc = sv.stop()
check(rc == 0, "tally view exit status %s" % rc)
done(d)
