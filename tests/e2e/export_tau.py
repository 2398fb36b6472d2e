#!/usr/bin/env python3
"""tally export --format=tau: TAU's profile.N.C.T files of the profiled blocks, parsed by a reader
of TAU's text profile format here and compared with `tally print --json -blocks`, per thread
and block: calls and subrs equal, exclusive and inclusive times (microseconds in the files,
written exactly from tally's nanoseconds) equal to print's seconds as print writes them; and
every call path of two blocks or more as TAU's callpath timer ("a => b => c", group
"TAU_CALLPATH | <the last block's group>"), with the values of print's path. Runs:
one thread (wl_blocks seed), three threads, a fork (two processes: two nodes), TAU's macros
(groups), two quantities (wall, cpu: MULTI__TIME and MULTI__CPU_TIME), a counter (page-faults:
counts in the files, MULTI__page-faults). Then the directory
rules (refuse to overwrite without --force; --force replaces every old profile file) and errors.
"""
import os
import re
from decimal import Decimal

from common import *

prog = os.path.join(WL, "wl_blocks")
fprog = os.path.join(WL, "wl_blocks_finstr")
d = workdir("export_tau")

HEAD = re.compile(r"^(\d+) templated_functions_MULTI_(\S+)$")
ROW = re.compile(r'^"([^"]*)" (\d+) (\d+) (\d+(?:\.\d{3})?) (\d+(?:\.\d{3})?) 0 GROUP="([^"]*)"$')  # counts: no point
ATTR = re.compile(r"<attribute><name>([^<]*)</name><value>([^<]*)</value></attribute>")


def read_profile(path):
    """A TAU text profile: (metric, metadata dict, {name: row}); rows carry calls, subrs, and
    excl/incl in integral nanoseconds. Checks the layout strictly."""
    with open(path) as f:
        lines = f.read().split("\n")
    m = HEAD.match(lines[0])
    check(m is not None, "%s: first line %r" % (path, lines[0]))
    if not m:
        return None, {}, {}
    n = int(m.group(1))
    check(lines[1].startswith("# Name Calls Subrs Excl Incl ProfileCalls #"),
          "%s: column line %r" % (path, lines[1]))
    meta = dict(ATTR.findall(lines[1]))
    rows = {}
    for line in lines[2:2 + n]:
        r = ROW.match(line)
        if not check(r is not None, "%s: function line %r" % (path, line)):
            continue
        rows[r.group(1)] = {
            "calls": int(r.group(2)), "subrs": int(r.group(3)),
            "excl": int(Decimal(r.group(4)) * 1000), "incl": int(Decimal(r.group(5)) * 1000),
            "group": r.group(6)}
    check(len(rows) == n, "%s: %d distinct functions, the header says %d" % (path, len(rows), n))
    check(lines[2 + n:] == ["0 aggregates", "0 userevents", ""],
          "%s: aggregates and userevents sections: %r" % (path, lines[2 + n:]))
    return m.group(2), meta, rows


def as_printed(ns):
    """nanoseconds as print --json writes seconds (base/json: integral, else %.9g)"""
    s = ns / 1e9
    return float("%.0f" % s) if s == int(s) else float("%.9g" % s)


def export_tau(exp, out, *opts, expect=0):
    return run([TALLY, "export", "--format=tau", "-o", out] + list(opts) + [exp], expect=expect)


def compare(name, exp, nthreads, nprocs, metrics=("TIME",)):
    """Exports exp and compares every file with print --json -blocks."""
    out = os.path.join(d, name + ".tau")
    export_tau(exp, out)
    (bl,) = print_json(exp, "-blocks")
    check(len(bl["threads"]) == nthreads, "%s: %d threads with blocks in print" %
          (name, len(bl["threads"])))
    qs = bl["quantities"]
    check(len(qs) == len(metrics), "%s: quantities %r" % (name, qs))
    by_thread = {(t["pid"], t["tid"]): t for t in bl["threads"]}
    for qi, metric in enumerate(metrics):
        qdir = out if len(metrics) == 1 else os.path.join(out, "MULTI__" + metric)
        files = sorted(f for f in os.listdir(qdir) if f.startswith("profile."))
        check(len(files) == nthreads, "%s: %d profile files for %d threads: %r" %
              (name, len(files), nthreads, files))
        nodes = {f.split(".")[1] for f in files}
        check(len(nodes) == nprocs, "%s: nodes %r for %d processes" % (name, nodes, nprocs))
        check(all(f.split(".")[2] == "0" for f in files), "%s: context 0: %r" % (name, files))
        seen = set()
        pid_node = {}
        npaths = 0
        for f in files:
            node, tnum = f.split(".")[1], f.split(".")[3]
            got_metric, meta, rows = read_profile(os.path.join(qdir, f))
            check(got_metric == metric, "%s/%s: metric %r, expected %r" % (name, f, got_metric,
                                                                           metric))
            key = (int(meta.get("pid", -1)), int(meta.get("tid", -1)))
            t = by_thread.get(key)
            if not check(t is not None, "%s/%s: thread %r not in print's %r" %
                         (name, f, key, sorted(by_thread))):
                continue
            seen.add(key)
            check(pid_node.setdefault(key[0], node) == node,
                  "%s/%s: one node per process" % (name, f))
            if key[0] == key[1]:
                check(tnum == "0", "%s/%s: the main thread is thread 0" % (name, f))
            flat = sorted(k for k in rows if " => " not in k)
            check(flat == sorted(b["name"] for b in t["blocks"]),
                  "%s/%s: blocks %r, print has %r" % (name, f, flat,
                                                      [b["name"] for b in t["blocks"]]))
            groups = {b["name"]: b["group"] or "TAU_DEFAULT" for b in t["blocks"]}
            want = []  # print's call paths as TAU names them, each with its block's group
            for p in t["paths"]:
                names, k = [p["name"]], p["parent"]
                while k >= 0:
                    names.insert(0, t["paths"][k]["name"])
                    k = t["paths"][k]["parent"]
                check(len(names) == p["depth"] + 1, "%s/%s: depth of %r" % (name, f, names))
                if len(names) > 1:
                    want.append(dict(p, name=" => ".join(names),
                                     group="TAU_CALLPATH | " + groups.get(p["name"], "?")))
            paths = sorted(k for k in rows if " => " in k)
            check(paths == sorted(b["name"] for b in want),
                  "%s/%s: call paths %r, print has %r" % (name, f, paths,
                                                          sorted(b["name"] for b in want)))
            npaths += len(want)
            sfx = "" if qi == 0 else "_" + qs[qi]
            for b in t["blocks"] + want:
                r = rows.get(b["name"])
                if r is None:
                    continue
                what = "%s/%s %s %s" % (name, f, b["name"], metric)
                check(r["calls"] == b["calls"] and r["subrs"] == b["subrs"],
                      "%s: calls/subrs %d/%d, print %d/%d" % (what, r["calls"], r["subrs"],
                                                              b["calls"], b["subrs"]))
                for k in ("excl", "incl"):
                    if metric in ("TIME", "CPU_TIME"):
                        check(as_printed(r[k]) == b[k + sfx],
                              "%s: %s %d ns, print says %r s" % (what, k, r[k], b[k + sfx]))
                    else:  # a counter: counts in the file and in print
                        check(r[k] == b[k + sfx] * 1000,
                              "%s: %s %r, print says %r" % (what, k, r[k] / 1000, b[k + sfx]))
                check(r["group"] == (b.get("group") or "TAU_DEFAULT"),
                      "%s: group %r, print %r" % (what, r["group"], b.get("group")))
        check(seen == set(by_thread), "%s: threads exported %r, print %r" %
              (name, sorted(seen), sorted(by_thread)))
        check(npaths > 0, "%s: no call path of two blocks to compare" % name)
    return out


def collect_run(name, args, opts=()):
    run([TALLY, "collect", "-d", d, "-o", name] + list(opts) + args, expect=0)
    return os.path.join(d, name + ".tally")


seed = collect_run("seed", [prog, "seed"])
out = compare("seed", seed, 1, 1)
compare("threads", collect_run("threads", [prog, "threads"]), 3, 1)
compare("fork", collect_run("fork", [prog, "fork"]), 2, 2)
tau = collect_run("tau", [prog, "tau"])
compare("tau", tau, 1, 1)
_, _, rows = read_profile(os.path.join(d, "tau.tau", "profile.0.0.0"))
check(rows.get("bar void (void)", {}).get("group") == "TAU_USER", "TAU's group kept: %r" % rows)
compare("finstr", collect_run("finstr", [fprog], ["--block-metrics=wall,cpu"]), 1, 1,
        ("TIME", "CPU_TIME"))
compare("counters", collect_run("counters", [prog, "faults", "50"],
                                ["--block-metrics=wall,page-faults"]), 1, 1, ("TIME", "page-faults"))

# ---- the directory: never overwritten unless told -------------------------------------------
before = open(os.path.join(out, "profile.0.0.0")).read()
p = export_tau(tau, out, expect=2)
check("--force" in p.stderr and "profile.0.0.0" in p.stderr,
      "refusal names the file and --force: %r" % p.stderr)
check(open(os.path.join(out, "profile.0.0.0")).read() == before, "refused: the file is as was")
with open(os.path.join(out, "profile.0.0.7"), "w") as f:  # an older run's extra thread
    f.write(before)
with open(os.path.join(out, "notes.txt"), "w") as f:
    f.write("mine\n")
export_tau(tau, out, "--force")
check(sorted(os.listdir(out)) == ["notes.txt", "profile.0.0.0"],
      "--force replaces every old profile file and nothing else: %r" % sorted(os.listdir(out)))
check("bar void (void)" in open(os.path.join(out, "profile.0.0.0")).read(), "--force rewrote")
# an earlier export with two metrics left MULTI__ directories, which TAU's tools would read
multi = os.path.join(d, "finstr.tau")
p = export_tau(seed, multi, expect=2)
check("MULTI__" in p.stderr and "--force" in p.stderr, "MULTI__ profiles refused: %r" % p.stderr)
export_tau(seed, multi, "--force")
check(sorted(os.listdir(multi)) == ["profile.0.0.0"],
      "--force removes the MULTI__ profiles: %r" % sorted(os.listdir(multi)))
# the default directory: the current one
cwd = os.path.join(d, "cwd")
os.mkdir(cwd)
p = subprocess.run([TALLY, "export", "--format=tau", os.path.abspath(seed)], cwd=cwd,
                   capture_output=True, text=True, timeout=240)
check(p.returncode == 0, "export into the current directory: %d %r" % (p.returncode, p.stderr))
check(os.listdir(cwd) == ["profile.0.0.0"], "default: the current directory: %r" %
      os.listdir(cwd))

# ---- errors --------------------------------------------------------------------------------
off = collect_run("off", [prog, "seed"], ["--blocks=off"])
p = export_tau(off, os.path.join(d, "off.tau"), expect=1)
check("no profiled blocks" in p.stderr, "no blocks: %r" % p.stderr)
p = run([TALLY, "export", "--format=tau", "-thread_select", "1", "-o", os.path.join(d, "x"),
         seed], expect=2)
check("do not apply" in p.stderr, "selection options refused: %r" % p.stderr)
p = run([TALLY, "export", "--format=folded", "--force", seed], expect=2)
check("--force" in p.stderr, "--force only with tau: %r" % p.stderr)
blocker = os.path.join(d, "afile")
open(blocker, "w").close()
p = export_tau(seed, blocker, expect=1)
check("afile" in p.stderr, "-o naming a file: %r" % p.stderr)

done(d)
