"""`tally view`'s MPI page in headless chromium (tests/e2e/cdp.py): a ring job (tests/workloads/
mpi_ring.c, 4 ranks, under the first MPI implementation installed) recorded with
`tally collect -M on mpirun ...`, its page opened and clicked through (the matrix switched from
bytes to messages, a cell of the MPI timeline hovered), and what it shows compared with
`tally print --json`: the rank list, imbalance by function and by call site, the communication
matrix as a heat map (every cell, shaded by its share of the largest), the MPI timeline (a row
per rank). No JavaScript error is allowed. Exits 77 (skipped) without chromium or MPI.

  view_mpi.py [SCREENSHOT_DIR]   also saves a screenshot of the page there (docs/view-mpi.png)
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *  # noqa: E402,F401
import cdp  # noqa: E402
from viewpage import Pages, f3, shown  # noqa: E402
from viewserver import Server  # noqa: E402

if not cdp.find_chromium():
    skip("no chromium (scripts/bootstrap installs it)")
IMPLS = [("mpicc.openmpi", ["mpirun.openmpi", "--oversubscribe", "-np", "4"]),
         ("mpicc.mpich", ["mpirun.mpich", "-np", "4"])]
impl = next((i for i in IMPLS if shutil.which(i[0]) and shutil.which(i[1][0])), None)
if not impl:
    skip("no MPI implementation (scripts/bootstrap installs Open MPI and MPICH)")
shots = sys.argv[1] if len(sys.argv) > 1 else None

env = dict(os.environ)
env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"  # Open MPI refuses root without these (CI runs as root)
env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
d = workdir("view_mpi")
prog = os.path.join(d, "ring")
run([impl[0], "-O2", "-g", "-o", prog, os.path.join(SRC, "tests/workloads/mpi_ring.c")], expect=0)
run([TALLY, "collect", "-M", "on", "-d", d, "-o", "job"] + impl[1] + [prog, "10", "1000", "16",
                                                                        "120"],
    expect=0, env=env, timeout=200)
EXP = os.path.join(d, "job.tally")


def pj(*cmds):
    return print_json(EXP, *cmds)[-1]


sv = Server(TALLY, [EXP])
b = cdp.Browser()
P = Pages(b, sv, shots)
try:
    P.open("mpi", "exp=0")
    ranks = pj("-rank_list")["ranks"]
    check(len(ranks) == 4, "print lists %d ranks" % len(ranks))
    rows = P.rows("table.ranks")
    check([r["name"] for r in rows] == [str(r["rank"]) for r in ranks],
          "ranks shown %s" % [r["name"] for r in rows])
    for r, w in zip(rows, ranks):
        for k in ("threads", "mpisends", "mpibytessent", "mpireceives", "mpibytesrecv",
                  "mpiother", "mpicollsent", "mpicollrecv", "dropped"):
            check(r["k"].get(k) == str(w[k]), "rank %d %s: shown %s, print %s" %
                  (w["rank"], k, r["k"].get(k), w[k]))
        for k in ("mpitime", "totalcpu"):
            check(r["k"].get(k) == f3(w[k]), "rank %d %s: shown %s, print %s" %
                  (w["rank"], k, r["k"].get(k), w[k]))
    for view, sel in (("-mpi_imbalance", "table.imbalance"), ("-mpi_callsites", "table.callsites")):
        want = pj("-limit", "30", view)["rows"]
        got = P.rows(sel)
        check([r["name"] for r in got] == [w["name"] for w in want],
              "%s: %s, print %s" % (view, [r["name"] for r in got][:5],
                                    [w["name"] for w in want][:5]))
        for r, w in zip(got, want):
            for k in ("min", "mean", "max"):
                check(r["k"].get(k) == f3(w[k]), "%s %s %s: shown %s, print %s" %
                      (view, w["name"], k, r["k"].get(k), w[k]))
    check(any(r["name"].startswith("MPI_Barrier from main") for r in P.rows("table.callsites")),
          "no MPI_Barrier call site")

    # the matrix: every cell of the 4 x 4 heat map, by bytes and then by messages
    mx = pj("-mpi_matrix")
    pairs = {(p["from"], p["to"]): p for p in mx["pairs"]}
    check(len(pairs) == 4 and all(p["msgs"] == 20 and p["bytes"] == 20000 for p in pairs.values()),
          "the ring's matrix: %s" % mx["pairs"])

    def cells():
        return b.eval("""Object.fromEntries([...document.querySelectorAll('table.matrix td.heat')]
            .map(td => [td.dataset.from + ',' + td.dataset.to,
                        [td.textContent, getComputedStyle(td).backgroundColor]]))""")

    for by in ("bytes", "msgs"):
        if by == "msgs":
            b.eval("(() => { const s = document.querySelector('#mpi-by'); s.value = 'msgs'; "
                   "window.tally.ready = false; s.dispatchEvent(new Event('change')); })()")
            P.wait_ready("mpi")
        c = cells()
        check(len(c) == mx["ranks"] ** 2, "%d matrix cells for %d ranks" % (len(c), mx["ranks"]))
        most = max(p[by] for p in pairs.values())
        for f in range(mx["ranks"]):
            for t in range(mx["ranks"]):
                p = pairs.get((f, t))
                text, bg = c.get("%d,%d" % (f, t), [None, None])
                check(text == (str(p[by]) if p else ""), "matrix %d->%d by %s: shown %r, print "
                      "%s" % (f, t, by, text, p))
                # shaded by its share of the largest: the ring's cells alike and dark, the rest
                # clear
                alpha = float(bg.split(",")[3].rstrip(")")) if bg.count(",") == 3 else 1.0
                want = 0.9 * p[by] / most if p else 0.0
                check(abs(alpha - want) < 0.01, "matrix %d->%d shade %s, want alpha %.2f" %
                      (f, t, bg, want))
    P.shot("mpi")

    # the MPI timeline: a row per rank; hovering a cell tells its MPI time as print has it
    tl = pj("-mpi_timeline")
    m = b.eval("(() => { const t = window.tally.mpiTimeline; return {ranks: t.model.ranks.map("
               "r => r.rank), columns: t.model.columns}; })()")
    check(m["ranks"] == [r["rank"] for r in tl["ranks"]] and m["columns"] == tl["columns"],
          "timeline model %s, print %s ranks" % (m, len(tl["ranks"])))
    r0 = tl["ranks"][1]
    col = max(range(tl["columns"]), key=lambda k: r0["cells"][k]["mpi"])
    xy = b.eval("(() => { const t = window.tally.mpiTimeline, c = t.canvas; c.scrollIntoView();"
                " const r = c.getBoundingClientRect(); return [r.left + t.left + (%d + 0.5) * t.cw,"
                " r.top + 2 + 1.5 * t.rowH]; })()" % col)
    b.mouse("mouseMoved", xy[0], xy[1], 0)
    tip = P.text("#tip")
    cell = r0["cells"][col]
    check(tip is not None and ("rank %d," % r0["rank"]) in tip and
          ("%s s in MPI (%s)" % (f3(cell["mpi"]), cell["function"])) in tip,
          "hovering rank %d column %d: %r, print %s" % (r0["rank"], col, tip, cell))
    P.shot("mpi-timeline")

    errs = b.errors()
    check(not errs, "errors in the page: %s" % errs)
finally:
    b.close()
    rc = sv.stop()
check(rc == 0, "tally view exit status %s" % rc)
done(d)
