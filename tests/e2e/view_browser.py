"""`tally view` in headless chromium, driven through the DevTools protocol (tests/e2e/cdp.py):
every page opened, clicked through as a user would (sort, search, a function's callers, its
source and disassembly, flame graph zoom and search, icicle, sandwich, a time range dragged on the
timeline and seen in the tables, heap, sync, I/O, two experiments compared, the generic page),
and the numbers shown compared with `tally print --json` on the same experiments. No JavaScript
error or refused resource is allowed. Exits 77 (skipped) without chromium.

  view_browser.py [SCREENSHOT_DIR]   also saves a screenshot of each page there (docs/view-*.png)
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa: E402,F401
import cdp  # noqa: E402
from viewserver import Server  # noqa: E402

if not cdp.find_chromium():
    skip("no chromium (scripts/bootstrap installs it)")
shots = sys.argv[1] if len(sys.argv) > 1 else None

d = workdir("view_browser")
example = os.path.join(os.path.dirname(TALLY), "example")
A = collect(d, [example, "3"], name="a")
B = collect(d, [example, "5"], name="b")
H = collect(d, [os.path.join(WL, "wl_trace_heap")], opts=["-H", "on"], name="heap")
Y = collect(d, [os.path.join(WL, "wl_trace_sync")], opts=["-s", "on"], name="sync")
I = collect(d, [os.path.join(WL, "wl_trace_io")], opts=["-i", "on"], name="io")
R = collect(d, [os.path.join(WL, "wl_deep_recursion"), "40", "0.2"], name="rec")
EXPS = [A, B, H, Y, I, R]


def pj(exp, *cmds):
    return print_json(exp, *cmds)[-1]


def f3(v):
    return "%.3f" % v


sv = Server(TALLY, EXPS)
b = cdp.Browser()


def page(name, query=""):
    """Opens #/name?query and waits until it is drawn."""
    b.eval("window.tally && (window.tally.ready = false)")
    b.goto(sv.url + "#/%s?%s" % (name, query))
    wait_ready(name)


def wait_ready(name):
    b.wait("window.tally && window.tally.ready && window.tally.page === %r" % name, timeout=60)


def shot(name):
    if shots:
        b.screenshot(os.path.join(shots, "view-%s.png" % name))


def center(sel):
    """Client coordinates of the middle of the first element matching sel, scrolled into view."""
    return b.eval("(() => { const e = document.querySelector(%r); if (!e) return null; "
                  "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
                  "return [r.left + Math.min(r.width / 2, 20), r.top + r.height / 2]; })()" % sel)


def click(sel, then=None):
    xy = center(sel)
    if not check(xy is not None, "nothing matches %s to click" % sel):
        return
    b.eval("window.tally.ready = false")
    b.click(*xy)
    if then:
        wait_ready(then)


def type_into(sel, text):
    b.eval("document.querySelector(%r).focus()" % sel)
    b.call("Input.insertText", {"text": text})


def table(sel):
    """The rows of a table as {name: {data-m: text}} (and their order)."""
    return b.eval("""(() => { const out = []; for (const tr of document.querySelectorAll(%r + ' tbody tr')) {
        const o = {name: tr.dataset.name, cells: {}};
        for (const td of tr.querySelectorAll('td[data-m]')) o.cells[td.dataset.m] = td.textContent;
        out.push(o); } return out; })()""" % sel)


def same_table(shown, doc, what, keys=None):
    """The shown rows are print's, in its order, each value as printed to 3 decimals."""
    rows = doc["rows"]
    check([r["name"] for r in shown] == [r["name"] for r in rows][:len(shown)] and len(shown) == len(rows),
          "%s: rows %s, print has %s" % (what, [r["name"] for r in shown][:8], [r["name"] for r in rows][:8]))
    for s, r in zip(shown, rows):
        for m in keys or [x["name"] for x in doc["metrics"]]:
            check(s["cells"].get(m) == f3(r[m]), "%s: %s %s shown %s, print %s" %
                  (what, r["name"], m, s["cells"].get(m), f3(r[m])))


def text(sel):
    return b.eval("(() => { const e = document.querySelector(%r); return e ? e.textContent : null; })()" % sel)


try:
    # -- overview --
    page("overview", "exp=0")
    ov = pj(A, "-overview")
    for k in ("totalcpu", "user", "system", "wait", "duration"):
        shown = text('[data-k="overview.%s"]' % k)
        check(shown is not None and shown.split()[0] == f3(ov[k]),
              "overview %s: shown %r, print %s" % (k, shown, f3(ov[k])))
    for k in ("samples", "expected", "unwind_failures", "dropped"):
        check(text('[data-k="overview.%s"]' % k) == str(ov[k]), "overview %s" % k)
    ns = b.eval("document.querySelectorAll('table.samples tbody tr').length")
    check(ns == len(pj(A, "-sample_list")["samples"]), "overview: %s sample rows" % ns)
    shot("overview")

    # -- functions: the table, sorting by a column, searching --
    page("functions", "exp=0")
    same_table(table("table.metrics"), pj(A, "-functions"), "functions")
    shot("functions")
    click('th[data-m="i.totalcpu"]', then="functions")
    same_table(table("table.metrics"), pj(A, "-sort", "i.totalcpu", "-functions"),
               "functions sorted by i.totalcpu")
    type_into("#search", "c")
    names = [r["name"] for r in table("table.metrics")]
    check(names[0] == "<Total>" and len(names) > 2 and all("c" in n.lower() for n in names[1:]),
          "search 'c' shows %s" % names)
    b.eval("const s = document.querySelector('#search'); s.value = ''; "
           "s.dispatchEvent(new Event('input')); window.tally.state.search = ''")

    # -- a function's callers and callees, reached by clicking its name --
    click('table.metrics tr[data-name="C"] td.name a', then="callers")
    check(b.eval("location.hash").find("fn=C") > 0, "clicking C: %s" % b.eval("location.hash"))
    cs = pj(A, "-csingle", "C")["entries"][0]
    for part in ("callers", "callees"):
        shown = table("table.%s" % part)
        want = cs[part]
        check(sorted(r["name"] for r in shown) == sorted(r["name"] for r in want),
              "%s of C: %s" % (part, shown))
        for s in shown:
            w = [r for r in want if r["name"] == s["name"]][0]
            check(s["cells"]["a.totalcpu"] == f3(w["a.totalcpu"]), "%s %s" % (part, s["name"]))
    shot("callers")

    # -- its source and disassembly --
    click('a[href="#"]:first-of-type', then="source")
    src = pj(A, "-source", "C")
    hot = [l for l in src["lines"] if l.get("hot")]
    shown_hot = b.eval("[...document.querySelectorAll('table.listing tr.hot')].map(tr => "
                       "[...tr.querySelectorAll('td')].map(td => td.textContent))")
    check(len(hot) > 0 and len(shown_hot) == len(hot), "hot lines: %s shown, %d in print" %
          (shown_hot, len(hot)))
    for s, l in zip(shown_hot, hot):
        check(s[0] == f3(l["e.totalcpu"]) and s[2] == str(l["line"]),
              "hot line %s: shown %s, print %s" % (l["line"], s, f3(l["e.totalcpu"])))
    shot("source")
    click('main a[href="#"]', then="disasm")
    dis = pj(A, "-disasm", "C")
    check(text('[data-k="disasm.e.totalcpu"]') == f3(dis["e.totalcpu"]) + " s",
          "disasm of C: %s" % text('[data-k="disasm.e.totalcpu"]'))
    n = b.eval("document.querySelectorAll('table.listing tbody tr').length")
    check(n == len(dis["instructions"]), "disasm: %s instructions shown" % n)
    shot("disasm")

    # -- flame graph: zoom into E, search F, icicle --
    page("flame", "exp=0")
    tree = pj(A, "-calltree")["tree"]
    values = {}

    def walk(t):
        values.setdefault(t["name"], []).append(t["i.totalcpu"])
        for c in t.get("children", []):
            walk(c)
    walk(tree)
    shot("flame")
    e = b.eval("window.tally.flame.find('E')")
    check(e is not None, "the flame graph draws E")
    if e:
        width = b.eval("window.tally.flame.canvas.getBoundingClientRect().width")
        check(e["w"] < width * 0.9, "E is narrower than the graph before zooming")
        b.click(e["x"], e["y"])
        b.wait("window.tally.flame.nodes[window.tally.flame.zoom].n === 'E'")
        z = b.eval("window.tally.flame.find('E')")
        check(abs(z["w"] - width) < 2, "zoomed E fills the width: %s of %s" % (z["w"], width))
        info = text("#flame-info")
        check(any(info.startswith("i.totalcpu: %s s shown (E)" % f3(v)) for v in values["E"]),
              "zoomed info %r, print's E nodes %s" % (info, values["E"]))
        shot("flame-zoom")
        click("#flame-reset")
    type_into("#flame-search", "F")
    info = text("#flame-info")
    fi = rows_by_name(pj(A, "-functions"))["F"]["i.totalcpu"]
    check('"F" matches %s s' % f3(fi) in info, "search F: %r, print F inclusive %s" % (info, f3(fi)))
    b.eval("window.tally.state.search = ''")
    click("#flame-mode", then="flame")
    check(b.eval("document.querySelector('canvas.flame').classList.contains('icicle')"),
          "the icicle")
    shot("icicle")
    b.eval("window.tally.state.flameMode = 'flame'")

    # -- a zoom's canvas calls, counted on a recursion (many frames of one function): a fill
    # style per colour, not per frame (bench/view.py times it on 1,000,000 samples) --
    page("flame", "exp=5")
    b.eval("""(() => { const P = CanvasRenderingContext2D.prototype, c = window.__calls = {};
        for (const m of ['fillRect', 'rect', 'fill', 'fillText']) { const o = P[m];
          P[m] = function (...a) { c[m] = (c[m] || 0) + 1; return o.apply(this, a); }; }
        const d = Object.getOwnPropertyDescriptor(P, 'fillStyle');
        Object.defineProperty(P, 'fillStyle', { configurable: true, get: d.get,
          set(v) { c.fillStyle = (c.fillStyle || 0) + 1; d.set.call(this, v); } }); })()""")
    # (the frame scrolled to the middle of the window: a deep stack's canvas is taller than it)
    xy = b.eval("(() => { const f = window.tally.flame;"
                " const r = f.rects.filter(r => f.nodes[r.i].d === 2).sort((a, b) => b.w - a.w)[0];"
                " window.scrollBy(0, f.canvas.getBoundingClientRect().top + r.y - innerHeight / 2);"
                " const c = f.canvas.getBoundingClientRect();"
                " return [c.left + r.x + r.w / 2, c.top + r.y + r.h / 2]; })()")
    n0 = b.eval("window.tally.timings.length")
    b.click(*xy)
    b.wait("window.tally.timings.length > %d" % n0)
    calls = b.eval("window.__calls")
    frames = b.eval("window.tally.flame.rects.length")
    colours = b.eval("new Set(window.tally.flame.rects.map(r => "
                     "window.tally.flame.nodes[r.i].n)).size")
    check(frames > colours + 10, "the recursion draws %d frames of %d functions" %
          (frames, colours))
    thin = b.eval("window.tally.flame.thin")
    check(calls.get("fillStyle", 0) <= colours + 3 and
          calls.get("fillRect", 0) + calls.get("rect", 0) == frames + (thin or 0),
          "a zoom drawing %d frames of %d functions made canvas calls %s (a fill style per "
          "colour expected)" % (frames, colours, calls))

    # -- sandwich --
    page("sandwich", "exp=0&fn=C")
    ci = rows_by_name(pj(A, "-functions"))["C"]["i.totalcpu"]
    check(text("main h2") == "Sandwich of C: %s s inclusive" % f3(ci), "sandwich: %r" % text("main h2"))
    check(b.eval("window.tally.sandwich.down.find('E') !== null && "
                 "window.tally.sandwich.up.find('B') !== null"), "sandwich: E below C, B above")
    shot("sandwich")

    # -- timeline: drag a time range, the table follows, and so do the other pages --
    page("timeline", "exp=0")
    tl = b.eval("(() => { const t = window.tally.timeline, r = t.canvas.getBoundingClientRect(); "
                "t.canvas.scrollIntoView(); const r2 = t.canvas.getBoundingClientRect(); "
                "return {x: r2.left + t.left, w: t.plotW, y: r2.top + 10}; })()")
    whole = table("#range-functions table")
    b.drag(tl["x"] + 0.25 * tl["w"], tl["y"], tl["x"] + 0.6 * tl["w"])
    b.wait("document.querySelector('#range-functions h3').textContent.startsWith('Functions from')")
    st = b.eval("window.tally.state")
    # the range is in ns, snapped to the columns of the time_functions model: the table the page
    # sums from that model is print's under exactly this filter
    flt = "TSTAMP >= %d && TSTAMP < %d" % (st["t0"], st["t1"])
    ranged = pj(A, "-filters", flt, "-limit", "30", "-functions")
    shown = table("#range-functions table")
    same_table(shown, ranged, "functions of the range " + flt)
    check(shown[0]["cells"] != whole[0]["cells"], "the range changed <Total>: %s" % shown[0])
    check(b.eval("window.tally.timings.some(t => t.what === 'range')"), "range timing recorded")
    shot("timeline")
    click('#tabs a[data-page="functions"]', then="functions")
    # (the sort chosen above stays)
    same_table(table("table.metrics"), pj(A, "-filters", flt, "-sort", "i.totalcpu", "-functions"),
               "the functions page keeps the range")
    click("#range-clear", then="functions")
    same_table(table("table.metrics"), pj(A, "-sort", "i.totalcpu", "-functions"),
               "functions after clearing the range")

    # -- traced data --
    page("heap", "exp=2")
    hp = pj(H, "-heap_peak")["processes"][0]
    for k in ("allocations", "bytes_allocated", "peak_bytes", "leaked_bytes", "leaked_blocks"):
        check(text('[data-k="heap.%s"]' % k) == str(hp[k]), "heap %s: %s vs %s" %
              (k, text('[data-k="heap.%s"]' % k), hp[k]))
    lk = pj(H, "-leaks")
    check(b.eval("document.querySelectorAll('table.leaks tbody tr').length") == len(lk["entries"]),
          "leak rows")
    shot("heap")
    page("sync", "exp=3")
    sy = pj(Y, "-sync_objects")
    check(text("main h2") == "Sync objects: %s s waited in %d waits" % (f3(sy["wait"]), sy["count"]),
          "sync: %r" % text("main h2"))
    names = b.eval("[...document.querySelectorAll('table.sync tbody tr td:first-child')].map(t => t.textContent)")
    check(names == [o["name"] for o in sy["objects"]], "sync objects %s" % names)
    shot("sync")
    page("io", "exp=4")
    io = pj(I, "-io_files")
    names = b.eval("[...document.querySelectorAll('table.io tbody tr td:first-child')].map(t => t.textContent)")
    check(names == [f["name"] for f in io["files"]], "I/O files %s" % names)
    shot("io")

    # -- two experiments side by side --
    page("compare", "exp=0&b=1")
    ta = pj(A, "-functions")["rows"][0]["e.totalcpu"]
    tb = pj(B, "-functions")["rows"][0]["e.totalcpu"]
    tot = b.eval("[...document.querySelectorAll('table.compare tr[data-name=\"<Total>\"] td')].map(t => t.textContent)")
    d3 = tb - ta
    check(tot[:3] == [f3(ta), f3(tb), ("+" if d3 > 0 else "") + f3(d3)],
          "compare <Total>: %s, print %s %s" % (tot, f3(ta), f3(tb)))
    check(b.eval("document.querySelectorAll('table.compare tbody tr').length") > 5, "compare rows")
    shot("compare")

    def same_compare(m):
        """Every function of A or B: its exclusive and inclusive m in each and B - A, the
        largest exclusive difference first (<Total> on top)."""
        spec = ["-metrics", "e.%s:i.%s:name" % (m, m), "-functions"]
        ra, rb = rows_by_name(pj(A, *spec)), rows_by_name(pj(B, *spec))
        want = []
        for n in set(ra) | set(rb):
            ae, be = ra.get(n, {}).get("e." + m), rb.get(n, {}).get("e." + m)
            ai, bi = ra.get(n, {}).get("i." + m), rb.get(n, {}).get("i." + m)
            want.append((n, ae, be, (be or 0) - (ae or 0), ai, bi, (bi or 0) - (ai or 0)))
        want.sort(key=lambda w: (w[0] != "<Total>", -abs(w[3])))

        def t(v, sign=False):
            return "" if v is None else ("+" if sign and v > 0 else "") + f3(v)
        got = b.eval("[...document.querySelectorAll('table.compare tbody tr')].map(tr => "
                     "[tr.dataset.name, ...[...tr.querySelectorAll('td')].slice(0, 6)"
                     ".map(td => td.textContent)])")
        check(sorted(g[0] for g in got) == sorted(w[0] for w in want),
              "compare %s: functions %s, print %s" % (m, sorted(g[0] for g in got)[:8],
                                                      sorted(w[0] for w in want)[:8]))
        byname = {g[0]: g[1:] for g in got}
        for w in want:
            cells = [t(w[1]), t(w[2]), t(w[3], True), t(w[4]), t(w[5]), t(w[6], True)]
            check(byname.get(w[0]) == cells, "compare %s, %s: shown %s, print %s" %
                  (m, w[0], byname.get(w[0]), cells))
        diffs = [abs(w[3]) for w in want[1:]]
        order = [g[0] for g in got[1:]]
        shown_d = [abs((rb.get(n, {}).get("e." + m) or 0) - (ra.get(n, {}).get("e." + m) or 0))
                   for n in order]
        check(got[0][0] == "<Total>" and shown_d == sorted(diffs, reverse=True),
              "compare %s: not the largest difference first: %s" % (m, order[:6]))
    same_compare("totalcpu")
    # another metric, chosen in the page
    b.eval("(() => { const s = document.querySelector('#cmp-metric'); s.value = 'user'; "
           "window.tally.ready = false; s.dispatchEvent(new Event('change')); })()")
    wait_ready("compare")
    same_compare("user")

    # -- every other view through the generic page --
    page("raw", "exp=0&v=load_objects")
    objs = pj(A, "-load_objects")
    same_table(table("table.metrics"), objs, "objects on the generic page")
    shot("raw")

    errs = b.errors()
    check(not errs, "errors in the page: %s" % errs)
finally:
    b.close()
    rc = sv.stop()
check(rc == 0, "tally view exit status %s" % rc)
done(d)
