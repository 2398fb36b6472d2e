"""tally export FORMAT: the export read back by its own tool, compared row by row with
`tally print --json` on the same experiments (every function, exclusive and inclusive, every
metric the format carries, to the last unit both can show).

Usage: export.py pprof|callgrind|folded|chrome|speedscope|cli. Experiments: wl_recursion (direct
and mutual recursion: inclusive counted once per stack) and wl_trace_sync under -s all (several
threads, sync wait times and counts). A format whose reader is missing here skips (77);
scripts/bootstrap installs them all (golang-go, valgrind, node with tests/node's packages).

Units: the exports carry raw units (ns, bytes, counts); print --json gives times in seconds
(raw * 1e-9, with 9 significant digits), so a time is equal when the export's ns, printed the
way print prints it, is print's number. Counts and bytes are compared exactly.
"""
import collections
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import *  # noqa: E402,F401

FORMAT = sys.argv[1] if len(sys.argv) > 1 else "folded"
NODE_MODULES = os.path.join(SRC, "tests", "node", "node_modules")


def need(tool):
    path = shutil.which(tool)
    if not path:
        skip("%s is not installed (scripts/bootstrap installs it)" % tool)
    return path


def export(exps, fmt, out, *opts, expect=0):
    return run([TALLY, "export", "--format=" + fmt, "-o", out] + list(opts) + list(exps),
               expect=expect)


def expected(exps, metric, *opts):
    """{function: (exclusive, inclusive)} of metric from print --json, and the metric's unit."""
    doc = print_json(exps, *opts, "-limit", "0", "-metrics", "e.%s:i.%s" % (metric, metric),
                     "-functions")[0]
    unit = [m["unit"] for m in doc["metrics"] if m["name"] == "e." + metric][0]
    rows = {}
    for r in doc["rows"]:
        if r["name"] != "<Total>":
            rows[r["name"]] = (r["e." + metric], r["i." + metric])
    return rows, unit


def same(raw, printed, unit):
    """Is the export's raw value (ns, bytes, count) what print --json printed?"""
    if unit == "s":  # as print makes it: raw * 1e-9 as a double, 9 significant digits
        return float("%.9g" % (raw * 1e-9)) == printed
    return raw == printed


compared = [0]  # functions with data compared, over the whole test


def compare(what, got, exps, metric, *opts):
    """got: {function: (exclusive, inclusive)} read back from an export."""
    want, unit = expected(exps, metric, *opts)
    check(want, "%s: print shows no function for %s" % (what, metric))
    nonzero = 0
    for name in sorted(set(want) | set(got)):
        g = got.get(name, (0, 0))
        w = want.get(name)
        if w is None:
            if g != (0, 0):
                fail("%s %s: %r is in the export (%r) but not in print -functions" %
                     (what, metric, name, g))
            continue
        nonzero += w != (0, 0)
        for k, flavor in ((0, "exclusive"), (1, "inclusive")):
            check(same(g[k], w[k], unit), "%s %s %s of %r: export %d, print %r (%s)" %
                  (what, flavor, metric, name, g[k], w[k], unit))
    compared[0] += nonzero
    return nonzero


def per_stack(stacks):
    """{function: (exclusive, inclusive)} from [(frames leaf first, value)]."""
    out = collections.defaultdict(lambda: [0, 0])
    for frames, v in stacks:
        if not frames:
            continue
        out[frames[0]][0] += v
        for f in set(frames):
            out[f][1] += v
    return {k: tuple(v) for k, v in out.items()}


# ---- pprof: go tool pprof -top and -traces ----------------------------------------------------

def pprof_top(path, metric, unit):
    args = ["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=1000000",
            "-sample_index=" + metric]
    if unit == "s":
        args.append("-unit=ns")
    elif unit == "bytes":
        args.append("-unit=B")
    p = run(args + [path], expect=0, env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp")))
    rows, started = {}, False
    num = r"(-?[0-9.e+]+)(?:ns|B)?"
    for line in p.stdout.splitlines():
        if line.strip().startswith("flat"):
            started = True
            continue
        m = started and re.match(r"^\s*%s\s+\S+\s+\S+\s+%s\s+\S+\s+(.*)$" % (num, num), line)
        if m:
            # pprof shows a function met only as an inlined frame as "name (inline)"
            name = re.sub(r" \(inline\)$", "", m.group(3))
            old = rows.get(name, (0, 0))
            rows[name] = (old[0] + int(float(m.group(1))), old[1] + int(float(m.group(2))))
    return rows


def pprof_traces(path, metric):
    """[(labels, value)] of go tool pprof -traces."""
    p = run(["go", "tool", "pprof", "-traces", "-sample_index=" + metric, "-unit=ns", path],
            expect=0, env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp")))
    out, labels = [], {}
    for line in p.stdout.splitlines():
        if line.startswith("-----"):
            labels = {}
            continue
        m = re.match(r"^\s+(\w+):\s+(.*)$", line)
        if m and not re.match(r"^\s+-?[0-9]", line):
            labels[m.group(1)] = m.group(2).strip()
            continue
        m = re.match(r"^\s*(-?[0-9.e+]+)(ns)?\s+\S", line)
        if m:
            out.append((dict(labels), int(float(m.group(1)))))
    return out


def check_pprof_inlines(d):
    """wl_inlined (mix inlined into outer_a and outer_b): pprof reads the locations' inline
    chains, every function of them with its source file and line, and the mappings with the
    build ids the experiment's log recorded."""
    exp = collect(d, [os.path.join(WL, "wl_inlined"), "0.3"], name="inl")
    out = os.path.join(d, "inl.pb.gz")
    export([exp], "pprof", out)
    compare("pprof -top (inlined)", pprof_top(out, "totalcpu", "s"), [exp], "totalcpu")
    env = dict(os.environ, HOME=os.environ.get("HOME", "/tmp"))
    p = run(["go", "tool", "pprof", "-traces", "-lines", out], expect=0, env=env)
    src = "tests/workloads/inlined.c"
    seen = collections.defaultdict(set)  # function -> {(file, line, inline)}
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*(?:-?[0-9.]+\w*\s+)?(mix|outer_a|outer_b|main) (\S*):(\d+)"
                     r"( \(inline\))?$", line)
        if m:
            seen[m.group(1)].add((m.group(2), int(m.group(3)), bool(m.group(4))))
    check({"mix", "outer_a", "outer_b", "main"} <= set(seen),
          "pprof -traces -lines: not every function of wl_inlined: %r" % dict(seen))
    for fn, where in seen.items():
        for file, ln, _ in where:
            check(file.endswith(src) and ln > 0,
                  "pprof -traces -lines: %s at %r:%d, not a line of %s" % (fn, file, ln, src))
    check(any(inl for _, _, inl in seen["mix"]), "pprof: mix is never an inlined frame: %r" %
          seen["mix"])
    # the mappings: each object's path and build id as the log's load records have them
    loads = {}
    with open(os.path.join(exp, "log"), errors="replace") as f:
        for line in f:
            m = re.match(r"^load .*? path=(\S+) buildid=([0-9a-f]+)", line)
            if m:
                loads[m.group(1)] = m.group(2)
    p = run(["go", "tool", "pprof", "-raw", out], expect=0, env=env)
    maps = re.findall(r"^\d+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+) ([0-9a-f]+) ",
                      p.stdout.split("\nMappings\n", 1)[-1], flags=re.M)
    check(maps, "pprof -raw: no mapping with a build id:\n%s" % p.stdout[-2000:])
    for path, bid in maps:
        check(loads.get(path) == bid, "pprof mapping %s: build id %s, the log's %r" %
              (path, bid, loads.get(path)))


def check_pprof_period(out, exp):
    """Every sample carries the clock interval of the log's settings as the numeric label
    period, in nanoseconds (-raw prints it exactly; -tags shows its distribution)."""
    interval = None
    with open(os.path.join(exp, "log"), errors="replace") as f:
        for line in f:
            m = re.match(r"^settings .*?\bclock=(\S+)", line)
            if m:
                interval = m.group(1)
                break
    check(interval and interval.isdigit(), "log: settings clock=%r" % interval)
    env = dict(os.environ, HOME=os.environ.get("HOME", "/tmp"))
    raw = run(["go", "tool", "pprof", "-raw", out], expect=0, env=env).stdout
    body = raw.split("\nSamples:\n", 1)[-1].split("\nLocations\n", 1)[0]
    samples = re.findall(r"^\s+(?:-?\d+\s+)*-?\d+: [\d ]+$", body, flags=re.M)
    periods = re.findall(r"\bperiod:\[(\d+) (\w+)\]", body)
    check(samples and len(periods) == len(samples),
          "pprof -raw: %d samples, %d period labels:\n%s" % (len(samples), len(periods),
                                                            body[:2000]))
    check(all(p == (interval, "nanoseconds") for p in periods),
          "pprof -raw: period labels %r, the clock interval %s ns" % (set(periods), interval))
    # -tags: "period: Total ..." then one value, the interval, for 100% of the samples' weight
    tags = run(["go", "tool", "pprof", "-tags", out], expect=0, env=env).stdout
    section = tags.split(" period: Total", 1)[-1].split("\n\n", 1)[0].strip().splitlines()
    ms = "%gms" % (int(interval) / 1e6)
    check(" period: Total" in tags and len(section) == 2 and
          re.search(r"\(\s*100%\): " + re.escape(ms) + "$", section[1]),
          "pprof -tags: not one period of %s for every sample:\n%s" % (ms, tags[:2000]))


def test_pprof(d, exps):
    need("go")
    for exp in exps:
        out = os.path.join(d, "p.pb.gz")
        export([exp], "pprof", out)
        with gzip.open(out) as f:
            check(len(f.read()) > 0, "pprof: empty profile")
        metrics = [m["name"] for m in print_json(exp, "-metric_list")[0]["available"]]
        check(metrics, "pprof: no metric with data in %s" % exp)
        for metric in metrics:
            unit = expected([exp], metric)[1]
            compare("pprof -top", pprof_top(out, metric, unit), [exp], metric)
        # -traces: every sample carries its thread; the values add up per thread
        threads = print_json(exp, "-thread_list")[0]["threads"]
        tids = {str(t["tid"]) for t in threads}
        traces = pprof_traces(out, metrics[0])
        check(traces, "pprof -traces: no sample")
        by_tid = collections.Counter()
        for labels, v in traces:
            check(labels.get("tid") in tids and "thread" in labels,
                  "pprof -traces: a sample without its thread's labels: %r" % labels)
            by_tid[labels.get("tid")] += v
        check_pprof_period(out, exp)
        if metrics[0] == "totalcpu":  # each thread's samples add up to its -thread_list value
            for t in threads:
                check(same(by_tid[str(t["tid"])], t["totalcpu"], "s"),
                      "pprof -traces: thread %d: %d ns, -thread_list %r s" %
                      (t["tid"], by_tid[str(t["tid"])], t["totalcpu"]))
    check_pprof_inlines(d)
    # a selection is the session's: thread 1 only
    out = os.path.join(d, "sel.pb.gz")
    export([exps[1]], "pprof", out, "-thread_select", "1")
    compare("pprof -top -thread_select 1", pprof_top(out, "sync", "s"), [exps[1]], "sync",
            "-thread_select", "1")


# ---- callgrind: callgrind_annotate, and a reader here per line and per instruction -------------

def annotate(path, metric, inclusive):
    """{function: value} of callgrind_annotate's function table. A function whose code is in
    several files (fi=: its inlined code with -inlines off) is a row per file; its exclusive
    cost is their sum, its inclusive cost the row its callers called (the other rows hold only
    what their own lines did and called: never more)."""
    p = run(["callgrind_annotate", "--threshold=100", "--auto=no", "--show=" + metric,
             "--sort=" + metric, "--inclusive=" + ("yes" if inclusive else "no"), path],
            expect=0)
    rows, started = {}, False
    for line in p.stdout.splitlines():
        if "file:function" in line:
            started = True
            continue
        # (the object in brackets may hold brackets: "__vdso_clock_gettime [[vdso]]")
        m = started and re.match(r"^\s*([0-9,]+|\.)\s+(?:\([^)]*\)\s+)?([^:]*):(.*?)"
                                 r"(?: \[.+\])?$", line)
        if m:
            v = 0 if m.group(1) == "." else int(m.group(1).replace(",", ""))
            old = rows.get(m.group(3), 0)
            rows[m.group(3)] = max(old, v) if inclusive else old + v
    return rows


annotated = [0]  # source lines callgrind_annotate showed with a cost


def annotate_source(path, metric):
    """callgrind_annotate --auto=yes: {(source file, line): self cost} of the files it found,
    and {(source file, line, callee): cost} of its call rows ("=> file:fn (1x)")."""
    p = run(["callgrind_annotate", "--threshold=100", "--auto=yes", "--show=" + metric,
             "--sort=" + metric, "--inclusive=no", path], expect=0)
    own, calls = {}, {}
    src, lineno = None, None
    for line in p.stdout.splitlines():
        m = re.match(r"^-- (?:Auto-annotated|User-annotated) source: (.*)$", line)
        if m:
            src, lineno = m.group(1).strip(), 1
            continue
        if src is None:
            continue
        if line.startswith("-----") or line.startswith("The following files"):
            if line.startswith("The following"):
                src = None
            continue
        m = re.match(r"^-- line (\d+) -+$", line)
        if m:
            lineno = int(m.group(1))
            continue
        # (a call of no cost, "0", is padded to the column's width: more than two spaces)
        m = re.match(r"^\s*([0-9,]+|\.)(?: \([ 0-9.]+%\))?\s+=> (.*):([^:]*) \(\d+x\)$", line)
        if m:
            v = 0 if m.group(1) == "." else int(m.group(1).replace(",", ""))
            key = (src, lineno - 1, m.group(3))
            calls[key] = calls.get(key, 0) + v
            continue
        m = re.match(r"^\s*([0-9,]+|\.)(?: \([ 0-9.]+%\))? ", line)
        if m and lineno is not None:
            if m.group(1) != ".":
                own[(src, lineno)] = int(m.group(1).replace(",", ""))
            lineno += 1
    return own, calls


def read_callgrind(path):
    """The file as a reader of the format sees it (name compression, fi=/fe=, positions "instr
    line", calls): self and call costs per (file, line, function) and per (object, address,
    function), and per (caller, callee) the calls' costs. <Total>'s own lines are left out."""
    tabs = {"fl": {}, "fn": {}, "ob": {}}
    ns = {"fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl", "fn": "fn", "cfn": "fn",
          "ob": "ob", "cob": "ob"}

    def name(key, val):
        m = re.match(r"^\((\d+)\)(?: (.*))?$", val)
        if not m:
            return val
        if m.group(2) is not None:
            tabs[ns[key]][m.group(1)] = m.group(2)
        check(m.group(1) in tabs[ns[key]], "callgrind: %s=(%s) before its name" % (key, m.group(1)))
        return tabs[ns[key]].get(m.group(1))

    zero = None
    lines = collections.defaultdict(lambda: [zero, zero])
    addrs = collections.defaultdict(lambda: [zero, zero])
    edges = collections.defaultdict(lambda: zero)
    events = positions = None
    ob = cur = fn = cob = cfn = None
    call = None

    def add(a, b):
        return b if a is None else [x + y for x, y in zip(a, b)]
    with open(path) as f:
        for raw in f:
            s = raw.rstrip("\n")
            if not s or s.startswith("#"):
                continue
            m = re.match(r"^(\w+):\s*(.*)$", s)
            if m:
                if m.group(1) == "events":
                    events = m.group(2).split()
                elif m.group(1) == "positions":
                    positions = m.group(2).split()
                continue
            m = re.match(r"^(\w+)=(.*)$", s)
            if m:
                k, v = m.groups()
                if k == "calls":
                    check(re.match(r"^1 0x[0-9a-f]+ \d+$", v), "callgrind: calls=%s" % v)
                    call = cfn
                    continue
                check(k in ns, "callgrind: unknown line %r" % s)
                nv = name(k, v)
                if k == "ob":
                    ob = nv
                elif k in ("fl", "fi", "fe"):
                    cur = nv
                elif k == "fn":
                    fn, cob = nv, ob
                elif k == "cob":
                    cob = nv
                elif k == "cfn":
                    cfn = nv
                continue
            check(positions == ["instr", "line"], "callgrind: positions %r" % positions)
            parts = s.split()
            addr, line = int(parts[0], 0), int(parts[1])
            cost = [int(x) for x in parts[2:]]
            check(len(cost) == len(events), "callgrind: %d costs for %d events in %r" %
                  (len(cost), len(events), s))
            if call is not None:
                edges[(fn, call)] = add(edges[(fn, call)], cost)
            if fn != "<Total>":
                k = 1 if call is not None else 0
                lines[(cur, line, fn)][k] = add(lines[(cur, line, fn)][k], cost)
                addrs[(ob, addr, fn)][k] = add(addrs[(ob, addr, fn)][k], cost)
            call = None
    return events, lines, addrs, edges


def position_value(pair, e):
    """(self, self + calls) of event e at a position."""
    own = pair[0][e] if pair[0] else 0
    return own, own + (pair[1][e] if pair[1] else 0)


def recursive_functions(exp):
    """Functions met twice on one path of the call tree."""
    rec = set()

    def walk(node, path):
        name = node["name"]
        if name in path:
            rec.add(name)
        for ch in node.get("children", []):
            walk(ch, path | {name})
    walk(print_json(exp, "-calltree")[0]["tree"], set())
    return rec


def compare_positions(what, got, exps, metric, view, opts, loose):
    """got: {row name: (self, self + calls)}; print's rows of view (-lines, -pcs) must be equal
    to the last unit, but the inclusive values of the rows in loose, which may fall short: their
    own cost plus what they called when recursion puts them on a stack twice (see
    tally-export(1)) counts the call into a recursive function once, at its innermost call."""
    doc = print_json(exps, *opts, "-limit", "0", "-metrics", "e.%s:i.%s" % (metric, metric),
                     view)[0]
    unit = [m["unit"] for m in doc["metrics"] if m["name"] == "e." + metric][0]
    want = collections.defaultdict(lambda: [0, 0])
    for r in doc["rows"]:
        if r["name"] != "<Total>":
            name = re.sub(r", (instructions without line numbers|compiler-generated code)$",
                          ", line 0", r["name"])
            want[name][0] += r["e." + metric]
            want[name][1] += r["i." + metric]
    check(want, "%s: print %s shows no row" % (what, view))
    n = 0
    for name in sorted(set(want) | set(got)):
        g = got.get(name, (0, 0))
        w = want.get(name)
        if w is None:
            check(g == (0, 0), "%s %s: %r is in the export (%r) but not in print %s" %
                  (what, metric, name, g, view))
            continue
        n += w != [0, 0]
        # (rows of one name, e.g. two files of one base name, are summed on both sides: only
        # times' sums can then differ in print's last digit)
        check(same(g[0], w[0], unit), "%s exclusive %s of %r: export %d, print %r" %
              (what, metric, name, g[0], w[0]))
        if name in loose:
            # (at print's precision: 9 significant digits of seconds)
            check(float("%.9g" % (g[1] * 1e-9)) <= w[1] if unit == "s" else g[1] <= w[1],
                  "%s inclusive %s of %r (a call into recursion): export %d > print %r" %
                  (what, metric, name, g[1], w[1]))
        else:
            check(same(g[1], w[1], unit), "%s inclusive %s of %r: export %d, print %r" %
                  (what, metric, name, g[1], w[1]))
    compared[0] += n
    return n


def check_callgrind(d, exp, out, opts=()):
    """Every function, call edge, line and instruction of the export against print."""
    metrics = [m["name"] for m in print_json(exp, "-metric_list")[0]["available"]]
    check(metrics, "callgrind: no metric with data in %s" % exp)
    events, lines, addrs, edges = read_callgrind(out)
    check(events == metrics, "callgrind: events %r, print's metrics %r" % (events, metrics))
    rec = recursive_functions(exp)
    # positions calling into a recursive function, or into code inlined at them (-inlines off:
    # there is no call, so a line inlined code was called at has no inclusive cost)
    inline_only = set()
    if "-inlines" in opts:
        on = {r["name"] for r in print_json(exp, "-limit", "0", "-functions")[0]["rows"]}
        off = {r["name"] for r in print_json(exp, "-inlines", "off", "-limit", "0",
                                             "-functions")[0]["rows"]}
        inline_only = on - off
    fs = {r["name"]: r for r in print_json(exp, "-limit", "0", "-fsummary")[0]["rows"]}
    for e, metric in enumerate(metrics):
        ex, inc = annotate(out, metric, False), annotate(out, metric, True)
        got = {k: (ex.get(k, 0), inc.get(k, 0)) for k in set(ex) | set(inc)}
        # <Total> pays for the outermost frames (it has no cost of its own); its inclusive
        # cost leaves out events without a stack, which print's <Total> counts
        total = got.pop("<Total>", (0, 0))
        check(total[0] == 0, "callgrind_annotate <Total> has a cost of its own: %r" % (total,))
        compare("callgrind_annotate", got, [exp], metric, *opts)
        # the calls: each caller's share of a callee is print's attributed caller edge
        cc = print_json(exp, *opts, "-limit", "0", "-cmetrics", "a." + metric,
                        "-callers-callees")[0]
        unit = expected([exp], metric, *opts)[1]
        want = {}
        for ent in cc["entries"]:
            for c in ent["callers"]:
                want[(c["name"], ent["function"])] = c["a." + metric]
        for key in sorted(set(want) | {k for k in edges if k[0] != "<Total>"}):
            g = edges[key][e] if edges.get(key) else 0
            check(same(g, want.get(key, 0), unit), "callgrind call %s -> %s, %s: export %d, "
                  "print -callers-callees %r" % (key[0], key[1], metric, g, want.get(key, 0)))
        # lines: (file, line, function) -> print's row name
        by_line, loose = collections.defaultdict(lambda: [0, 0]), set()
        for (file, line, fn), pair in lines.items():
            name = ('line %d in "%s"' % (line, os.path.basename(file)) if line
                    else "%s, line 0" % fn)
            own, incl = position_value(pair, e)
            by_line[name][0] += own
            by_line[name][1] += incl
        # which lines call into recursion: from the file's call lines (every call is written,
        # those paid for at another occurrence at no cost)
        for (file, line, fn, callee) in call_sites(out):
            name = ('line %d in "%s"' % (line, os.path.basename(file)) if line
                    else "%s, line 0" % fn)
            if callee in rec:
                loose.add(name)
        if inline_only:  # the lines inlined code was called at, from the export with inlines
            on_out = out + ".on"
            export([exp], "callgrind", on_out)
            for (file, line, fn, callee) in call_sites(on_out):
                if callee in inline_only:
                    loose.add('line %d in "%s"' % (line, os.path.basename(file)))
        compare_positions("callgrind lines", {k: tuple(v) for k, v in by_line.items()}, [exp],
                          metric, "-lines", opts, loose)
        # instructions: (object, address) -> "function + 0xoffset" by -fsummary's addresses
        starts = sorted((int(r["address"], 16), r["load_object"], n) for n, r in fs.items()
                        if n != "<Total>" and r.get("size"))
        # an instruction of inlined code is a position of each function of its inline chain
        # (the inlined function's own cost and calls, its caller's call into it): its own cost
        # is their sum, its inclusive cost the largest view (the outermost function's)
        by_pc, loose_pc = {}, set()
        for (ob, addr, fn), pair in addrs.items():
            cand = [(a, n) for a, o, n in starts if o == ob and a <= addr]
            if not check(cand, "callgrind: address %#x of %s in no function" % (addr, ob)):
                continue
            a, n = cand[-1]
            name = "%s + %#x" % (n, addr - a)
            old = by_pc.get(name, (0, 0))
            own, incl = position_value(pair, e)
            by_pc[name] = (old[0] + own, max(old[1], incl))
        for (ob, addr, callee) in call_addrs(out):
            if callee in rec:
                cand = [(a, n) for a, o, n in starts if o == ob and a <= addr]
                if cand:
                    loose_pc.add("%s + %#x" % (cand[-1][1], addr - cand[-1][0]))
        compare_positions("callgrind instructions", by_pc, [exp], metric, "-pcs", opts,
                          loose_pc)
        # callgrind_annotate's own reading of the source files it finds, line by line
        own, calls = annotate_source(out, metric)
        annotated[0] += sum(1 for v in own.values() if v)
        mine = collections.defaultdict(int)
        for (file, line, fn), pair in lines.items():
            mine[(file, line)] += pair[0][e] if pair[0] else 0
        for (file, line), v in own.items():
            check(v == mine.get((file, line), 0), "callgrind_annotate %s:%d %s: %d, the file "
                  "says %d" % (file, line, metric, v, mine.get((file, line), 0)))
        for (file, line, callee), v in calls.items():
            w = sum(pair[1][e] for (f2, l2, fn), pair in lines.items()
                    if f2 == file and l2 == line and pair[1])
            check(v <= w, "callgrind_annotate %s:%d => %s: %d" % (file, line, callee, v))


def call_sites(path):
    """(file, line, function, callee) of every call line of a callgrind file."""
    out = []
    tabs = {"fl": {}, "fn": {}}
    cur = fn = cfn = None
    pending = False
    with open(path) as f:
        for raw in f:
            s = raw.rstrip("\n")
            m = re.match(r"^(fl|fi|fe|cfi|cfl|fn|cfn)=\((\d+)\)(?: (.*))?$", s)
            if m:
                t = "fn" if m.group(1) in ("fn", "cfn") else "fl"
                if m.group(3) is not None:
                    tabs[t][m.group(2)] = m.group(3)
                v = tabs[t][m.group(2)]
                if m.group(1) in ("fl", "fi", "fe"):
                    cur = v
                elif m.group(1) == "fn":
                    fn = v
                elif m.group(1) == "cfn":
                    cfn = v
                continue
            if s.startswith("calls="):
                pending = True
                continue
            if pending and re.match(r"^0x[0-9a-f]+ \d+", s):
                out.append((cur, int(s.split()[1]), fn, cfn))
                pending = False
    return out


def call_addrs(path):
    """(object, address, callee) of every call line of a callgrind file."""
    out = []
    tabs = {"ob": {}, "fn": {}}
    ob = cfn = None
    pending = False
    with open(path) as f:
        for raw in f:
            s = raw.rstrip("\n")
            m = re.match(r"^(ob|cob|cfn|fn)=\((\d+)\)(?: (.*))?$", s)
            if m:
                t = "ob" if m.group(1) in ("ob", "cob") else "fn"
                if m.group(3) is not None:
                    tabs[t][m.group(2)] = m.group(3)
                if m.group(1) == "ob":
                    ob = tabs[t][m.group(2)]
                elif m.group(1) == "cfn":
                    cfn = tabs[t][m.group(2)]
                continue
            if s.startswith("calls="):
                pending = True
                continue
            if pending and s.startswith("0x"):
                out.append((ob, int(s.split()[0], 16), cfn))
                pending = False
    return out


def test_callgrind(d, exps):
    need("callgrind_annotate")
    inl = collect(d, [os.path.join(WL, "wl_export_inl"), "0.3"], name="inl")
    for exp in exps + [inl]:
        out = os.path.join(d, "callgrind.out")
        export([exp], "callgrind", out)
        check_callgrind(d, exp, out)
    # inlined code as the code of the function it is in: its lines in another file (fi=/fe=)
    out = os.path.join(d, "callgrind-off.out")
    export([inl], "callgrind", out, "-inlines", "off")
    with open(out) as f:
        text = f.read()
    check(re.search(r"^fi=\(\d+\) .*export_inl\.h$", text, re.M),
          "callgrind -inlines off: no fi= line for the header's inlined code")
    check_callgrind(d, inl, out, ("-inlines", "off"))
    check(annotated[0] >= 10, "callgrind_annotate --auto=yes showed %d lines with a cost in "
          "the workloads' sources" % annotated[0])


# ---- folded: a reader here -------------------------------------------------------------------

def read_folded(path):
    stacks = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(.+) ([0-9]+)$", line)
            if not check(m, "folded: a malformed line %r" % line):
                continue
            frames = m.group(1).split(";")
            check(all(frames), "folded: an empty frame in %r" % line)
            stacks.append((frames[::-1], int(m.group(2))))
    return stacks


def test_folded(d, exps):
    for exp in exps:
        metrics = [m["name"] for m in print_json(exp, "-metric_list")[0]["available"]]
        for metric in metrics:
            out = os.path.join(d, "stacks.folded")
            export([exp], "folded", out, "-metrics", metric)
            compare("folded", per_stack(read_folded(out)), [exp], metric)
    # both experiments as one run, as print aggregates them
    out = os.path.join(d, "both.folded")
    export(exps, "folded", out, "-metrics", "totalcpu")
    compare("folded (two experiments)", per_stack(read_folded(out)), exps, "totalcpu")


# ---- chrome: a strict nesting and schema checker -----------------------------------------------

def ns_of(ts, what):
    check(isinstance(ts, (int, float)) and ts >= 0, "chrome: bad ts %r in %s" % (ts, what))
    return round(ts * 1000)


def check_chrome(path):
    """Checks the trace strictly; returns {function: (self ns, total ns)} of its samples: each
    sample weighs the time to its thread's next record (as speedscope's importer weighs it), an
    idle record (no "sf") weighs nothing, and every thread's samples end with one."""
    with open(path) as f:
        doc = json.load(f)
    check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
          "chrome: no traceEvents array")
    open_ = collections.defaultdict(list)   # (pid, tid) -> [[name, start]]
    last = collections.defaultdict(int)     # (pid, tid) -> last ts of B/E
    xend = collections.defaultdict(list)    # (pid, tid) -> ends of enclosing X slices
    named = set()
    for ev in doc["traceEvents"]:
        ph = ev.get("ph")
        if not check(ph in ("B", "E", "X", "i", "M", "C"), "chrome: unknown phase in %r" % ev):
            continue
        check(isinstance(ev.get("pid"), int) and isinstance(ev.get("tid"), int),
              "chrome: pid/tid not integers in %r" % ev)
        check(isinstance(ev.get("name"), str) and ev["name"], "chrome: no name in %r" % ev)
        key = (ev["pid"], ev["tid"])
        if ph == "M":
            check(ev["name"] == "thread_name" and isinstance(ev.get("args", {}).get("name"), str),
                  "chrome: bad metadata %r" % ev)
            named.add(key)
            continue
        t = ns_of(ev.get("ts"), ev)
        if ph in ("B", "E"):
            check(key in named, "chrome: a slice on an unnamed thread %r" % (key,))
            check(t >= last[key], "chrome: time goes back on %r at %r" % (key, ev))
            last[key] = t
            if ph == "B":
                open_[key].append([ev["name"], t])
            else:
                check(open_[key] and open_[key][-1][0] == ev["name"],
                      "chrome: E %r does not close the innermost open slice on %r (%r)" %
                      (ev["name"], key, open_[key][-1:] if open_[key] else None))
                if open_[key]:
                    open_[key].pop()
        elif ph == "X":
            dur = ns_of(ev.get("dur"), ev)
            stack = xend[key]
            while stack and stack[-1] <= t:
                stack.pop()
            check(not stack or t + dur <= stack[-1],
                  "chrome: X slice %r overlaps the one before it on %r" % (ev, key))
            stack.append(t + dur)
        elif ph == "i":
            check(ev.get("s") in ("t", "p", "g"), "chrome: instant without scope %r" % ev)
        elif ph == "C":
            check(isinstance(ev.get("args"), dict) and ev["args"], "chrome: empty counter")
    for key, stack in open_.items():
        check(not stack, "chrome: slices left open on %r: %r" % (key, stack))
    # the samples and their stacks
    samples, frames = doc.get("samples"), doc.get("stackFrames")
    check((samples is None) == (frames is None), "chrome: samples without stackFrames or back")
    if samples is None:
        return {}
    check(isinstance(samples, list) and samples and isinstance(frames, dict),
          "chrome: samples %r, stackFrames %r" % (type(samples), type(frames)))
    for k, fr in frames.items():
        check(isinstance(fr.get("name"), str) and fr["name"] and
              ("parent" not in fr or str(fr["parent"]) in frames and int(fr["parent"]) < int(k)),
              "chrome: stack frame %s: %r" % (k, fr))

    def stack_of(sf):
        out, k = [], str(sf)
        while k is not None:
            if not check(k in frames, "chrome: sample names stack frame %r, not there" % k):
                break
            out.append(frames[k]["name"])
            k = str(frames[k]["parent"]) if "parent" in frames[k] else None
        return out  # leaf first
    by_thread = collections.defaultdict(list)
    for r in samples:
        key = (r.get("pid"), r.get("tid"))
        check(key in named, "chrome: a sample on an unnamed thread %r" % (key,))
        by_thread[key].append((ns_of(r.get("ts"), r), r.get("sf")))
    stacks = []
    for key, recs in by_thread.items():
        check(recs[-1][1] is None, "chrome: the samples of %r do not end with an idle record" %
              (key,))
        for (t, sf), (nt, _) in zip(recs, recs[1:]):
            check(nt >= t, "chrome: time goes back in the samples of %r at %r" % (key, nt))
            if sf is not None:
                check(nt > t, "chrome: a sample of no weight on %r at %r" % (key, t))
                stacks.append((stack_of(sf), nt - t))
    return per_stack(stacks)


def as_printed(ns):
    """nanoseconds as print --json writes seconds (base/json: integral, else %.9g)"""
    s = ns / 1e9
    return float("%.0f" % s) if s == int(s) else float("%.9g" % s)


def check_chrome_blocks(d, prog, name, nthreads, expect):
    """Profiled blocks with their timeline (collect --block-trace=on) as slices on a track per
    thread, strictly nested (check_chrome), against print --json -blocks per thread and block:
    slices equal calls, and the slices of a block not inside a slice of the same block (an
    instance in a recursion counts once) add up to its inclusive time, to print's last digit.
    wl_blocks timeline has a recursion, a longjmp past two stops, a thread that returns with
    blocks open, a fork whose child exits with blocks open, and main open at exit;
    wl_blocks_finstr every function a block (-finstrument-functions)."""
    exp = collect(d, prog, opts=["--block-trace=on"], name=name)
    out = os.path.join(d, "trace-%s.json" % name)
    export([exp], "chrome", out)
    check_chrome(out)
    with open(out) as f:
        evs = json.load(f)["traceEvents"]
    tracks = {}  # (pid, track tid) -> the thread's tid
    for e in evs:
        if e["ph"] == "M":
            m = re.search(r"\(tid (\d+)\) profiled blocks$", e["args"]["name"])
            if m:
                tracks[(e["pid"], e["tid"])] = int(m.group(1))
    got = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    opened = collections.defaultdict(list)
    for e in evs:
        key = (e["pid"], e["tid"])
        if key not in tracks or e["ph"] not in ("B", "E"):
            continue
        thr = (e["pid"], tracks[key])
        if e["ph"] == "B":
            check(e.get("cat") == "block", "chrome: block slice without its category: %r" % e)
            opened[key].append((e["name"], ns_of(e["ts"], e)))
            got[thr][e["name"]][0] += 1
        elif opened[key]:
            name, t0 = opened[key].pop()
            if name not in [n for n, _ in opened[key]]:  # the outermost instance of the block
                got[thr][name][1] += ns_of(e["ts"], e) - t0
    (bl,) = print_json(exp, "-blocks")
    want = {(t["pid"], t["tid"]): {b["name"]: b for b in t["blocks"]} for t in bl["threads"]}
    check(len(want) == nthreads and set(got) == set(want),
          "chrome block tracks of threads %r, print's threads with blocks %r" %
          (sorted(got), sorted(want)))
    names = set()
    for thr, blocks in want.items():
        check(set(got[thr]) == set(blocks), "chrome blocks of %r: %r, print %r" %
              (thr, sorted(got[thr]), sorted(blocks)))
        for name, b in blocks.items():
            calls, incl = got[thr].get(name, (0, 0))
            names.add(name)
            check(calls == b["calls"], "chrome %r %s: %d slices, print's calls %d" %
                  (thr, name, calls, b["calls"]))
            check(as_printed(incl) == b["incl"], "chrome %r %s: slices %d ns, print's "
                  "inclusive %r s" % (thr, name, incl, b["incl"]))
    check(expect <= names, "chrome: blocks %r, expected %r among them" % (sorted(names), expect))


STATES = {"user": "User CPU", "system": "System CPU", "wait": "Wait CPU", "lock": "User Lock",
          "iowait": "I/O Wait", "sleep": "Sleep"}


def check_chrome_states(exp, out):
    """Each thread's states track: slices named by the state (args.metric: its metric), nested
    strictly (check_chrome ran), whose durations add up per thread and state to print's
    exclusive <Total> of the state's metric for that thread alone (-thread_select)."""
    with open(out) as f:
        evs = json.load(f)["traceEvents"]
    tracks = {}
    for e in evs:
        if e["ph"] == "M":
            m = re.search(r" states$", e["args"]["name"])
            if m:
                tracks[(e["pid"], e["tid"])] = e["tid"] - 1500000000
    got = collections.defaultdict(lambda: collections.defaultdict(int))
    opened = {}
    for e in evs:
        key = (e["pid"], e["tid"])
        if key not in tracks or e["ph"] not in ("B", "E"):
            continue
        if e["ph"] == "B":
            metric = e.get("args", {}).get("metric")
            check(e.get("cat") == "state" and STATES.get(metric) == e["name"],
                  "chrome: state slice %r" % e)
            opened[key] = (metric, ns_of(e["ts"], e))
        else:
            metric, t0 = opened.pop(key)
            got[tracks[key]][metric] += ns_of(e["ts"], e) - t0
    threads = print_json(exp, "-thread_list")[0]["threads"]
    check(set(got) <= {t["number"] for t in threads} and got,
          "chrome: states tracks of threads %r, print's %r" %
          (sorted(got), [t["number"] for t in threads]))
    metrics = ":".join("e." + m for m in STATES)
    for t in threads:
        (total,) = [r for r in print_json(exp, "-metrics", metrics, "-thread_select",
                                          str(t["number"]), "-functions")[0]["rows"]
                    if r["name"] == "<Total>"]
        for m in STATES:
            check(same(got[t["number"]].get(m, 0), total["e." + m], "s"),
                  "chrome states of thread %d: %s %d ns, print %r s" %
                  (t["number"], STATES[m], got[t["number"]].get(m, 0), total["e." + m]))
    return got


def test_chrome(d, exps):
    check_chrome_blocks(d, [os.path.join(WL, "wl_blocks"), "timeline"], "btl", 3,
                        {"main", "rec", "outer", "inner", "tiny", "tworker", "left_open", "child"})
    check_chrome_blocks(d, [os.path.join(WL, "wl_blocks_finstr")], "bfi", 1,
                        {"main", "work", "helper", "leaf", "spin", "skip_a", "skip_b"})
    # without the timeline, no block slices (the profile alone has no times)
    plain = collect(d, [os.path.join(WL, "wl_blocks"), "timeline"], name="bpl")
    out = os.path.join(d, "trace-blocks-plain.json")
    export([plain], "chrome", out)
    with open(out) as f:
        cats = {e.get("cat") for e in json.load(f)["traceEvents"]}
    check("block" not in cats, "chrome: block slices without --block-trace")
    rec, syn = exps
    for metric in ("totalcpu", "user"):  # samples laid out by a time metric
        out = os.path.join(d, "trace-%s.json" % metric)
        export([rec], "chrome", out, "-metrics", metric)
        compare("chrome", check_chrome(out), [rec], metric)
        states = check_chrome_states(rec, out)
        check(any(v.get("user") for v in states.values()),
              "chrome: no User CPU slices for wl_recursion: %r" % dict(states))
    # traced calls on their own tracks: every sync wait a slice, nested strictly
    out = os.path.join(d, "trace-sync.json")
    export([syn], "chrome", out)
    check_chrome(out)
    states = check_chrome_states(syn, out)
    check(sum(v.get("lock", 0) for v in states.values()) > 0,
          "chrome: no User Lock slices for wl_trace_sync: %r" % dict(states))
    with open(out) as f:
        evs = json.load(f)["traceEvents"]
    syncs = [e for e in evs if e.get("cat") == "sync" and e["ph"] in ("B", "i")]  # i: 0 ns
    # B/E pairs, not X: a reader's float ts + dur would overlap a call with the next one
    check(not [e for e in evs if e["ph"] == "X"], "chrome: an X event (ts + dur in a reader's "
          "floating point can overlap the next slice)")
    waits = print_json(syn, "-metrics", "i.syncn", "-functions")[0]["rows"][0]["i.syncn"]
    check(len(syncs) == waits, "chrome: %d sync slices for %d waits" % (len(syncs), waits))
    # a metric that is no time cannot be laid out in time
    p = export([syn], "chrome", os.path.join(d, "x.json"), "-metrics", "syncn", expect=2)
    check("must be a time" in p.stderr, "chrome -metrics syncn: %r" % p.stderr)
    # traced calls of the collector API (a library's kinds, as MPI's calls): slices named by
    # their kind, lasting their kind's time metric; per leaf function print's exclusive time
    api = collect(d, [os.path.join(WL, "wl_api_prog")], name="api")
    out = os.path.join(d, "trace-api.json")
    export([api], "chrome", out)
    check_chrome(out)
    with open(out) as f:
        evs = json.load(f)["traceEvents"]
    opened, got = collections.defaultdict(list), collections.defaultdict(int)
    for e in evs:
        key = (e["pid"], e["tid"])
        if e["ph"] == "B":
            opened[key].append(e)
        elif e["ph"] == "E" and opened[key]:
            b = opened[key].pop()
            if b.get("cat") == "traced":
                got[b["args"]["function"]] += ns_of(e["ts"], e) - ns_of(b["ts"], b)
    kinds = collections.Counter(e["name"] for e in evs if e.get("cat") == "traced")
    check(kinds.get("msg_send") == 63 and kinds.get("sig_seen") == 5,  # (wl_api_prog's calls)
          "chrome: the collector API's traced calls by kind: %r" % kinds)
    want = expected([api], "msgtime")[0]
    for fn, (excl, _) in want.items():
        check(same(got.get(fn, 0), excl, "s"), "chrome msg_send slices of %r: %d ns, print's "
              "exclusive msgtime %r" % (fn, got.get(fn, 0), excl))
    check(set(got) <= set(want) and sum(got.values()) > 0,
          "chrome msg_send slices: %r, print %r" % (dict(got), want))
    # counters of counter overflow profiling: a counter track per counter and thread, the events
    # counted so far, never going back; data without a metric of time has no samples (the
    # default metric, page-faults, is no time: not refused when no metric was asked for)
    ctr = collect(d, [os.path.join(WL, "wl_counters"), "faults", "20", "10", "5", "5", "2"],
                  opts=["-h", "page-faults,1"], name="ctr")
    out = os.path.join(d, "trace-ctr.json")
    export([ctr], "chrome", out)
    check_chrome(out)
    with open(out) as f:
        doc = json.load(f)
    last = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "C" and "page-faults" in e["args"]:
            v = e["args"]["page-faults"]
            check(isinstance(v, int) and v >= last.get(e["name"], 1),
                  "chrome counter track %r: %r after %r" % (e["name"], v, last.get(e["name"])))
            last[e["name"]] = v
    total = print_json(ctr, "-metrics", "e.page-faults", "-functions")[0]["rows"][0]
    check(last and sum(last.values()) == total["e.page-faults"] >= 42,
          "chrome page-faults tracks end at %r, print's <Total> %r" % (last, total))
    check("samples" not in doc, "chrome: samples without a metric of time")


# ---- speedscope: ajv against speedscope's schema ------------------------------------------------

def read_evented(prof, frames, what):
    """Checks an evented profile strictly (O/C events nested, "at" never going back, inside
    startValue..endValue); returns {function: (self, total)} (a frame open twice at once, in
    recursion, counts once in its total)."""
    open_, last = [], prof["startValue"]
    self_ = collections.defaultdict(int)
    total = collections.defaultdict(int)
    for ev in prof["events"]:
        at = ev["at"]
        check(isinstance(at, int) and at >= last and at <= prof["endValue"],
              "%s: at %r after %r (start %r, end %r)" % (what, at, last, prof["startValue"],
                                                          prof["endValue"]))
        if open_:
            self_[frames[open_[-1][0]]] += at - last
        last = at
        if ev["type"] == "O":
            open_.append((ev["frame"], at))
        elif check(ev["type"] == "C" and open_ and open_[-1][0] == ev["frame"],
                   "%s: %r does not close the innermost open frame (%r)" %
                   (what, ev, open_[-1:] if open_ else None)):
            f, since = open_.pop()
            if frames[f] not in [frames[o[0]] for o in open_]:
                total[frames[f]] += at - since
    check(not open_, "%s: frames left open: %r" % (what, open_))
    check(last == prof["endValue"], "%s: endValue %r, last event at %r" %
          (what, prof["endValue"], last))
    return {k: (self_[k], total[k]) for k in set(self_) | set(total)}


def test_speedscope(d, exps):
    need("node")
    if not os.path.isdir(os.path.join(NODE_MODULES, "speedscope")):
        skip("tests/node/node_modules has no speedscope (scripts/bootstrap runs npm ci there)")
    schema = os.path.join(os.path.dirname(__file__), "speedscope_schema.js")
    heap = collect(d, [os.path.join(WL, "wl_trace_heap")], opts=["-H", "on", "-p", "off"],
                   name="heap")
    # traced calls of the collector API: their kind's time (wl_api_prog's msg_send: msgtime)
    api = collect(d, [os.path.join(WL, "wl_api_prog")], name="api")
    # the traced data of each experiment: (profile name's end, the metric its values are)
    traced = {exps[1]: ("traced calls", "sync"), heap: ("heap allocations", "heapallocbytes"),
              api: ("traced calls", "msgtime")}
    evented_compared = 0
    for exp in exps + [heap, api]:
        metrics = [m["name"] for m in print_json(exp, "-metric_list")[0]["available"]]
        for metric in metrics[:3]:
            out = os.path.join(d, "profile.speedscope.json")
            export([exp], "speedscope", out, "-metrics", metric)
            p = run(["node", schema, NODE_MODULES, out])
            if p.returncode == SKIP:
                skip(p.stderr.strip())
            check(p.returncode == 0, "speedscope schema: %s" % p.stderr[-3000:])
            with open(out) as f:
                doc = json.load(f)
            frames = [fr["name"] for fr in doc["shared"]["frames"]]
            stacks = []
            evented = collections.defaultdict(lambda: [0, 0])
            kinds = set()
            for prof in doc["profiles"]:
                if prof["type"] == "evented":  # traced data, whatever the metric asked
                    kind = prof["name"].rsplit(": ", 1)[-1]
                    kinds.add(kind)
                    check(prof["unit"] == ("bytes" if kind == "heap allocations"
                                           else "nanoseconds"),
                          "speedscope: evented %r in %r" % (prof["name"], prof["unit"]))
                    for fn, (s_, t_) in read_evented(prof, frames, prof["name"]).items():
                        evented[(kind, fn)][0] += s_
                        evented[(kind, fn)][1] += t_
                    continue
                check(prof["type"] == "sampled", "speedscope: a profile of type %r" % prof["type"])
                check(len(prof["samples"]) == len(prof["weights"]), "speedscope: samples/weights")
                check(prof["endValue"] == sum(prof["weights"]), "speedscope: endValue")
                for s, w in zip(prof["samples"], prof["weights"]):
                    stacks.append(([frames[i] for i in s][::-1], w))
            if stacks or exp not in (heap, api):
                compare("speedscope", per_stack(stacks), [exp], metric)
            # the evented profiles: each thread's traced time (bytes) per function is print's
            want_kind = traced.get(exp)
            check(kinds == ({want_kind[0]} if want_kind else set()),
                  "speedscope: evented profiles %r in %s" % (sorted(kinds), exp))
            if want_kind:
                got = {fn: tuple(v) for (k, fn), v in evented.items() if k == want_kind[0]}
                evented_compared += compare("speedscope evented", got, [exp], want_kind[1])
    check(evented_compared >= 6, "speedscope: only %d functions of evented profiles compared" %
          evented_compared)


# ---- the command line ------------------------------------------------------------------------

def test_cli(d, exps):
    p = run([TALLY, "export", "-h"], expect=0)
    formats = ("pprof", "callgrind", "folded", "chrome", "speedscope", "tau")
    for fmt in formats:
        check(fmt in p.stdout, "export -h does not name %s" % fmt)
    # tally --help's line for export and tally(1)'s paragraph name every format too
    line = [ln for ln in run([TALLY, "--help"], expect=0).stdout.splitlines()
            if ln.split()[:1] == ["export"]]
    with open(os.path.join(SRC, "man", "tally.1")) as f:
        para = f.read().split(".B export\n", 1)[-1].split(".TP", 1)[0].split(".SH", 1)[0]
    for fmt in formats:
        check(line and fmt in line[0], "tally --help's export line does not name %s: %r" %
              (fmt, line))
        check(fmt in para.lower().replace("chrome trace", "chrome"),
              "man/tally.1's export paragraph does not name %s: %r" % (fmt, para))
    cases = [
        ([], 2, "no format given"),
        (["--format=svg", exps[0]], 2, "unknown format 'svg'"),
        (["--format=folded"], 2, "no experiment given"),
        (["--format=folded", "-metrics", "nosuch", exps[0]], 2, "no metric named 'nosuch'"),
        (["--format=folded", "-thread_select", "99", exps[0]], 2, None),
        (["--format=folded", "-filters", "((", exps[0]], 2, None),
        (["--format=folded", "-object_hide", "nosuch.so", exps[0]], 2, "no load object"),
        (["--format=folded", "-bogus", exps[0]], 2, "unknown option"),
        (["--format=folded", os.path.join(d, "missing.tally")], 1, None),
        (["--format=folded", "-o", os.path.join(d, "no", "such", "dir"), exps[0]], 1,
         "cannot write"),
    ]
    for args, code, text in cases:
        p = run([TALLY, "export"] + args)
        check(p.returncode == code, "export %s: exit %d, expected %d (%s)" %
              (args, p.returncode, code, p.stderr.strip()))
        check(p.stderr.strip(), "export %s: no message" % args)
        if text:
            check(text in p.stderr, "export %s: %r does not say %r" % (args, p.stderr, text))
    check_failed_output(d, exps[1])
    # standard output when no -o; the same bytes as -o
    p = run([TALLY, "export", "--format=folded", exps[0]], expect=0)
    out = os.path.join(d, "o.folded")
    export([exps[0]], "folded", out)
    with open(out) as f:
        check(f.read() == p.stdout, "export to stdout differs from -o")
    # -o - is standard output too (no file named "-"), in every streaming format, byte for byte
    for fmt in ("folded", "callgrind", "chrome", "speedscope", "pprof"):
        out = os.path.join(d, "o." + fmt)
        export([exps[1]], fmt, out)
        p = subprocess.run([TALLY, "export", "--format=" + fmt, "-o", "-", exps[1]], cwd=d,
                           capture_output=True, timeout=240)
        check(p.returncode == 0, "export --format=%s -o -: exit %d (%r)" %
              (fmt, p.returncode, p.stderr))
        check(not os.path.lexists(os.path.join(d, "-")),
              "export --format=%s -o - wrote a file named '-'" % fmt)
        with open(out, "rb") as f:
            want = f.read()
        if fmt == "pprof":  # the gzip header carries no name or time: compare the profiles
            want, got = gzip.decompress(want), gzip.decompress(p.stdout)
        else:
            got = p.stdout
        check(got == want, "export --format=%s -o - differs from -o FILE" % fmt)
    p = subprocess.run([TALLY, "export", "--format=tau", "-o", "-", exps[0]], cwd=d,
                       capture_output=True, text=True, timeout=240)
    check(p.returncode == 2 and "directory" in p.stderr and
          not os.path.lexists(os.path.join(d, "-")),
          "export --format=tau -o -: %r" % p.stderr)
    # a failed export removes the half-written file it made, and nothing else: not a symbolic
    # link named by -o, not a FIFO or a device (run as root, it removed /dev/full itself).
    # Writing to /dev/full fails with ENOSPC.
    link = os.path.join(d, "full-link")
    os.symlink("/dev/full", link)
    for fmt in ("folded", "chrome", "speedscope"):
        p = run([TALLY, "export", "--format=" + fmt, "-o", link, exps[1]])
        check(p.returncode == 1 and "writing" in p.stderr,
              "export --format=%s -o link-to-/dev/full: exit %d (%r)" % (fmt, p.returncode, p.stderr))
        check(os.path.islink(link), "export --format=%s -o link: a failed export removed the "
              "symbolic link named by -o" % fmt)
    # binary to a terminal is refused (nothing written); text formats go to it
    for fmt, opts, code in (("pprof", [], 2), ("pprof", ["-o", "-"], 2),
                            ("folded", ["-o", "-"], 0), ("chrome", [], 0)):
        code_got, text, err = on_tty([TALLY, "export", "--format=" + fmt] + opts + [exps[0]])
        check(code_got == code, "export --format=%s %s to a terminal: exit %d, expected %d (%r)"
              % (fmt, opts, code_got, code, err))
        if code:
            check("terminal" in err and "-o FILE" in err and not text,
                  "export --format=%s to a terminal: stderr %r, %d bytes on the terminal" %
                  (fmt, err, len(text)))
        else:
            check(len(text) > 0, "export --format=%s to a terminal wrote nothing" % fmt)
    # -object_hide: libc as one frame <libc.so.6>, its functions gone; values still add up
    out = os.path.join(d, "hide.folded")
    export([exps[0]], "folded", out, "-object_hide", "libc.so.6")
    got = per_stack(read_folded(out))
    check("<libc.so.6>" in got and "__libc_start_main" not in got,
          "-object_hide libc.so.6 did not fold libc: %r" % sorted(got))
    compare("folded -object_hide", got, [exps[0]], "totalcpu", "-object_hide", "libc.so.6")


def check_failed_output(d, exp):
    """An export that fails once its output is open (chrome of a metric that is no time) removes
    a regular file -o named, but never what is not one (a FIFO, as /dev/null is a device: it
    removed them), nor a link: the file behind a link is emptied, the link stays."""
    import stat
    bad = ["--format=chrome", "-metrics", "syncn"]
    plain = os.path.join(d, "fail.json")
    p = run([TALLY, "export"] + bad + ["-o", plain, exp], expect=2)
    check(not os.path.lexists(plain), "a failed export left its file: %r" % p.stderr)
    fifo = os.path.join(d, "fail.fifo")
    os.mkfifo(fifo)
    rd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that the export's open does not wait
    try:
        run([TALLY, "export"] + bad + ["-o", fifo, exp], expect=2)
        check(os.path.lexists(fifo) and stat.S_ISFIFO(os.lstat(fifo).st_mode),
              "a failed export removed the FIFO -o named")
    finally:
        os.close(rd)
    target, link = os.path.join(d, "fail.target"), os.path.join(d, "fail.link")
    with open(target, "w") as f:
        f.write("old contents\n")
    os.symlink(target, link)
    run([TALLY, "export"] + bad + ["-o", link, exp], expect=2)
    check(os.path.islink(link) and os.path.exists(target) and os.path.getsize(target) == 0,
          "a failed export through a link: link %s, target %s" %
          (os.path.lexists(link), os.path.exists(target) and os.path.getsize(target)))


def on_tty(args):
    """Runs args with standard output a terminal (a pseudo-terminal read here); returns the
    exit status, what reached the terminal and standard error."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    text = b""
    while True:  # drain the terminal while the command writes (its buffer is small)
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed it
            break
        if not chunk:
            break
        text += chunk
    err = p.stderr.read().decode(errors="replace")
    code = p.wait(timeout=240)
    os.close(master)
    return code, text, err


def main():
    d = workdir("export-" + FORMAT)
    rec = collect(d, [os.path.join(WL, "wl_recursion"), "0.15"], name="rec")
    syn = collect(d, [os.path.join(WL, "wl_trace_sync"), "1000"], opts=["-s", "all"], name="syn")
    tests = {"pprof": test_pprof, "callgrind": test_callgrind, "folded": test_folded,
             "chrome": test_chrome, "speedscope": test_speedscope, "cli": test_cli}
    tests[FORMAT](d, [rec, syn])
    check(compared[0] >= 10 or FORMAT == "cli", "only %d rows with data compared" % compared[0])
    done(d)


main()
