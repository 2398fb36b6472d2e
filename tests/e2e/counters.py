"""Counter overflow profiling (collect -h) with the counters this machine really has.

The machine has no hardware PMU, so what is checked for real is what the kernel counts itself:
- the lists: `tally collect -h` and `tally collect` print the seed's two lists, in its format,
  and say plainly when there is no PMU; `--help` is collect's help;
- page faults are exact: wl_counters touches known numbers of fresh pages in two global arrays,
  one member of a heap array of structures and a stack array, each in its own function; with
  page-faults,1 every fault is a sample and each function's count is exactly its pages (the
  collector's own faults, in its handlers and in its code, are counted apart, in no view);
- context switches: the main thread's count in pingpong against the thread's own getrusage
  (one-sided: the counter does not count while the collector's handler runs, getrusage does);
- a data breakpoint on a global written N times gives N events in the function that writes;
- several counters with clock profiling in one run; counter metrics in every view and --json;
- the log: metric and counter declarations, counter-stats (samples, what the kernel counted,
  enabled = running for software events);
- errors: an unknown counter, a hardware counter where there is no PMU, a bad interval, the same
  counter twice, a breakpoint on a symbol the program does not have.
"""
import json
import os
import re
import sys
from urllib.parse import unquote

sys.path.insert(0, os.path.dirname(__file__))
from common import *  # noqa

WLC = os.path.join(WL, "wl_counters")


def leb(b, i):
    v = sh = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << sh
        sh += 7
        if not c & 0x80:
            return v, i


def counter_refs(exp):
    """(flags, pc, ea) of every MEMREF record (type 24) of a counter (source >= 1)."""
    import struct
    with open(os.path.join(exp, "events"), "rb") as f:
        data = f.read()
    hsize, csize = struct.unpack_from("<II", data, 12)
    out = []
    k = 0
    while hsize + (k + 1) * csize <= len(data):
        off = hsize + k * csize
        k += 1
        magic, _, _, used = struct.unpack_from("<IIII", data, off)
        if magic == 0:
            continue
        p, end = off + 32, off + 32 + used
        while p < end:
            typ = data[p]
            ln, q = leb(data, p + 1)
            p, rend = q + ln, q + ln
            if typ != 24:
                continue
            v = []
            while q < rend:
                x, q = leb(data, q)
                v.append(x)
            if v[1] >= 1:  # dt, source, stack, weight, flags, pc, ea (flag 1), ...
                out.append((v[4], v[5], v[6] if v[4] & 1 else None))
    return out
d = workdir("counters")

# ---- the lists ------------------------------------------------------------------------------
p = run([TALLY, "collect", "-h"], expect=0)
lists = p.stdout
check(lists.startswith("Well known HW counters available for profiling:\n"),
      "collect -h does not start with the well-known list:\n%s" % lists[:400])
check("\nRaw HW counters available for profiling:\n" in lists,
      "collect -h has no raw list:\n%s" % lists[:800])
check(lists.index("Well known") < lists.index("Raw HW"), "the lists are out of order")
nopmu = "(none: this machine has no hardware performance counters" in lists
if nopmu:
    check("\n  (none: no hardware PMU here" in lists, "the raw list does not say there is no PMU")
    check("\ncycles," not in lists, "cycles listed without a PMU")
else:  # a machine with a PMU: the seed's line format
    check(re.search(r"\ncycles,\d+ \('CPU Cycles', alias for \S+; CPU-cycles\)\n", lists),
          "no cycles line in the seed's format:\n%s" % lists[:800])
for sw in ("page-faults", "minor-faults", "major-faults", "context-switches", "cpu-migrations",
           "alignment-faults", "task-clock"):
    check(re.search(r"\n%s,\d+ \('[^']+', alias for PERF_COUNT_SW_\w+; \w+\)\n" % sw, lists),
          "software event %s missing from the lists" % sw)
check("\nmem:<address|symbol>" in lists, "the breakpoint syntax is not listed")

p = run([TALLY, "collect"], expect=0)
check("Well known HW counters available for profiling:" in p.stdout and
      "Raw HW counters available for profiling:" in p.stdout and "usage:" in p.stdout,
      "collect without arguments lacks the usage or the lists:\n%s" % p.stdout[:600])
p = run([TALLY, "collect", "--help"], expect=0)
check("usage: tally collect" in p.stdout and "-h, --counters" in p.stdout and
      "Raw HW counters" not in p.stdout, "collect --help:\n%s" % p.stdout[:600])
# both ways of asking for dataspace data are in the help: '+' before a counter, and before
# the clock's interval
check("--clock=[+]on|" in p.stdout and "'+' (+on, +hi)" in p.stdout,
      "collect --help does not say how to ask clock profiling for dataspace data:\n%s" %
      p.stdout[:600])

# ---- errors ---------------------------------------------------------------------------------
def refused(opts, words):
    p = run([TALLY, "collect", "-d", d, "-o", "bad"] + opts + [WLC, "writes", "1"])
    check(p.returncode == 2, "%s: exit %d, expected 2" % (" ".join(opts), p.returncode))
    for w in words:
        check(w in p.stderr, "%s: the message lacks %r:\n%s" % (" ".join(opts), w, p.stderr))
    check(not os.path.exists(os.path.join(d, "bad.tally")),
          "%s: an experiment was created" % " ".join(opts))

refused(["-h", "no-such-counter"], ["unknown counter 'no-such-counter'", "tally collect -h"])
refused(["-h", "page-faults,0"], ["bad interval '0'"])
refused(["-h", "page-faults", "-h", "faults"], ["given twice", "'page-faults' is the same event"])
refused(["-h", "mem:no_such_global"], ["no symbol 'no_such_global'"])
refused(["-h", "7"], ["follows no counter"])
if nopmu:
    refused(["-h", "cycles"], ["'cycles' cannot be counted here", "no hardware PMU"])

# ---- page faults, exact ---------------------------------------------------------------------
N = {"touch_global1": 300, "touch_global2": 200, "touch_heap": 150, "touch_stack": 100}
exp = collect(d, [WLC, "faults", "300", "200", "150", "100", "200"], ["-h", "+page-faults,1"],
              name="faults")
doc = print_json(exp, "-metrics", "e.page-faults:i.page-faults", "-functions")[0]
names = [m["name"] for m in doc["metrics"]]
check("e.page-faults" in names and "i.page-faults" in names, "metrics: %r" % names)
r = rows_by_name(doc)
for fn, n in N.items():
    got = r.get(fn, {}).get("e.page-faults")
    check(got == n, "page faults in %s: got %r, want exactly %d" % (fn, got, n))
total = r["<Total>"]["e.page-faults"]
stats = [f for _, f in log_records(exp, "counter-stats")]
check(len(stats) == 1, "counter-stats records: %r" % stats)
if stats:
    s = stats[0]
    check(int(s["samples"]) == total, "counter-stats samples %s, <Total> %s" % (s["samples"], total))
    check(int(s["counted"]) == int(s["samples"]) + int(s.get("collector", 0)),
          "the kernel counted %s faults, %s written + %s the collector's" %
          (s["counted"], s["samples"], s.get("collector")))
    check(s["enabled"] == s["running"], "a software event was multiplexed: %r" % s)
decl = [f for _, f in log_records(exp, "counter")]
check(len(decl) == 1 and decl[0]["name"] == "page-faults" and decl[0]["data"] == "1" and
      decl[0]["interval"] == "1", "counter record: %r" % decl)
met = [f for _, f in log_records(exp, "metric") if f["name"] == "page-faults"]
check(len(met) == 1 and met[0].get("unit") == "events", "metric record: %r" % met)

# the memory reference of +page-faults (MEMREF records), decoded here from the events file
# (docs/FORMAT.md) by a decoder independent of the reader: every fault in touch_global1 has its
# exact faulting PC (inside touch_global1) and data address, one for each touched page of g1
syms = {}
for ln in run(["nm", "-S", WLC], expect=0).stdout.splitlines():
    f = ln.split()
    if len(f) == 4:
        syms[f[3]] = (int(f[0], 16), int(f[1], 16))
bias = int([f for _, f in log_records(exp, "load") if f["path"] == WLC][0]["bias"], 16)
refs = counter_refs(exp)
lo, size = syms["touch_global1"]
glo = syms["g1"][0] + bias
got = sorted(ea for fl, pc, ea in refs if lo + bias <= pc < lo + bias + size)
# flags: the address, the trigger, and the registers at it (the thread was still there)
check(all(fl == 7 for fl, pc, ea in refs if lo + bias <= pc < lo + bias + size),
      "faults in touch_global1 without the address, trigger and registers flags: %r" %
      sorted(set(fl for fl, pc, ea in refs if lo + bias <= pc < lo + bias + size)))
check(got == [glo + 4096 * (i + 1) for i in range(300)],
      "data addresses of the faults in touch_global1: %d, first %r, want g1 + 4096 * 1..300" %
      (len(got), [hex(x) for x in got[:3]]))
check(len(refs) == total, "MEMREF records of the counter: %d for %d samples" %
      (len(refs), total))

# the collector's own page faults are not the program's: those its profiling handlers take (a
# fresh page of the stack table, of the unwinder's cache, of a ring: clock profiling at 1 ms
# here) and those of its own code in the program's threads (the allocation map of '+' data, in
# every malloc) are counted apart (counter-stats collector=), never charged to a function of
# libtally-collector.so or of the unwinder it calls, nor to its data structures; the program's
# own counts stay exact
oexp = collect(d, [WLC, "faults", "300", "200", "150", "100", "200"],
               ["-p", "hi", "-h", "+page-faults,1"], name="faults_own")
ro = rows_by_name(print_json(oexp, "-metrics", "e.page-faults", "-functions")[0])
for fn, n in N.items():
    check(ro.get(fn, {}).get("e.page-faults") == n, "with -p hi, page faults in %s: got %r, "
          "want exactly %d" % (fn, ro.get(fn, {}).get("e.page-faults"), n))
# (and build/workers: three threads whose first samples unwind through libunwind's fresh caches)
wexp = collect(d, [os.path.join(os.path.dirname(os.path.abspath(TALLY)), "workers")],
               ["-p", "hi", "-h", "page-faults,1"], name="faults_own_workers")
for e in (oexp, wexp):
    lobj = print_json(e, "-metrics", "e.page-faults", "-load_objects")[0]["rows"]
    mine = [(o["name"], o.get("e.page-faults")) for o in lobj
            if re.search(r"libtally-collector\.so|libunwind", o["name"]) and o.get("e.page-faults")]
    check(not mine, "%s: the collector's own page faults are charged to its objects: %r" %
          (os.path.basename(e), mine))
ost = [f for _, f in log_records(oexp, "counter-stats")]
check(len(ost) == 1 and int(ost[0]["counted"]) == int(ost[0]["samples"]) +
      int(ost[0].get("collector", 0)) and int(ost[0]["samples"]) == ro["<Total>"]["e.page-faults"],
      "counter-stats of the collector's own faults: %r, <Total> %r" % (ost, ro.get("<Total>")))

# the data views read those records: the faults of the two global arrays and of the stack array
# (a local of touch_stack's realigned frame, rsp-relative), per data object, exactly
p = run([TALLY, "print", "-data_objects", exp], expect=0)
for name, n in (("g1", 300), ("g2", 200), ("a", 100)):
    check(re.search(r"\n +%d +[0-9.]+%% +%d +\{array\+char %s\}\n" % (n, n, name), p.stdout),
          "-data_objects: %s does not have its %d faults:\n%s" % (name, n, p.stdout[:1500]))
check(re.search(r"\npage-faults +Samples +Name\n", p.stdout),
      "-data_objects: the counter's column is not titled page-faults:\n%s" % p.stdout[:300])
rows = {o["name"]: o for o in print_json(exp, "-data_objects")[-1]["objects"]}
# the counter's metric is named as in every other view, in JSON too (e.page-faults)
check(rows.get("{array+char g1}", {}).get("e.page-faults") == 300,
      "-data_objects --json: {array+char g1} is %r, want e.page-faults 300" %
      rows.get("{array+char g1}"))
p = run([TALLY, "print", "-data_layout", exp], expect=0)
check(re.match(r"page-faults +Samples +Offset +Size +Member\n", p.stdout),
      "-data_layout: no column titles:\n%s" % p.stdout[:300])
check(rows.get("{array+char a}", {}).get("scope") == "local",
      "the stack array's scope: %r" % rows.get("{array+char a}"))
# a caller's stack array touched by the function it calls (touch_through writes 200 pages of
# touch_caller_stack's b; its first page may already be there, holding the call's return
# address): every fault of touch_through is b's, found by walking up to the caller's frame
through = r.get("touch_through", {}).get("e.page-faults", 0)
check(through >= 199, "page faults in touch_through: %r, want 199 or 200" % through)
got = rows.get("{array+char b}", {})
check(got.get("samples") == through and got.get("scope") == "local",
      "{array+char b}: %r, want touch_through's %d faults, scope local" % (got, through))
# without heap tracing and without the allocation map (--heap-map=off) the heap structures'
# faults have no object, and the view says why and what would name them
nexp = collect(d, [WLC, "faults", "30", "20", "150", "10"],
               ["--heap-map=off", "-h", "+page-faults,1"], name="faults_nomap")
p = run([TALLY, "print", "-data_objects", nexp], expect=0)
nrows = {o["name"]: o for o in print_json(nexp, "-data_objects")[-1]["objects"]}
check(not any(n.startswith("{heap:") for n in nrows), "heap blocks named without -H nor the map")
check(re.search(r"\(\d+ <Unknown> references have an address: heap blocks are named by their "
                r"allocation site only when the heap is traced, collect -H on\)", p.stdout),
      "-data_objects without -H does not say how heap blocks get named:\n%s" % p.stdout[-600:])

# with heap tracing, each fault in a heap structure's member is joined to the block that holds
# it: named by its allocation site (main, where the mmap's result is stored into a struct rec *),
# typed by that site's pointer variable, down to the member; exactly one per structure
site_line = [i + 1 for i, ln in enumerate(open(os.path.join(SRC, "tests", "workloads",
                                                                 "counters.c")))
             if "struct rec *r = mmap(" in ln]
check(len(site_line) == 1, "the allocation line of the heap structures is not in counters.c")
block = "{heap:main@counters.c:%d}" % (site_line[0] if site_line else 0)
member = block + ".{structure:rec}.{long_int member}"
# without -H the allocation map names them the same way (every mapping is in it)
for name in (block, member):
    got = rows.get(name, {}).get("samples")
    check(got == N["touch_heap"], "the allocation map: %s has %r faults, want exactly %d" %
          (name, got, N["touch_heap"]))
hexp = collect(d, [WLC, "faults", "30", "20", "150", "10"], ["-H", "on", "-h", "+page-faults,1"],
               name="faults_heap")
rows = {o["name"]: o for o in print_json(hexp, "-data_objects")[-1]["objects"]}
for name, n in ((block, 150), (block + ".{structure:rec}", 150), (member, 150),
                ("{array+char g1}", 30), ("{array+char a}", 10)):
    got = rows.get(name, {}).get("samples")
    check(got == n, "-H on: %s has %r faults, want exactly %d; heap rows: %r" %
          (name, got, n, [x for x in rows if x.startswith("{heap")]))
check(rows.get(member, {}).get("scope") == "heap", "the member's scope: %r" % rows.get(member))
single = print_json(hexp, "-data_single", member)[-1]
check(single["containers"] == [block, block + ".{structure:rec}"],
      "-data_single containers of the heap member: %r" % single["containers"])
lay = print_json(hexp, "-data_layout")[-1]
rec = [s for s in lay["structures"] if s["name"] == block + ".{structure:rec}"]
if check(rec, "-data_layout has no layout of the heap block's struct rec: %r" %
         [s["name"] for s in lay["structures"]]):
    m = [(x["name"], x["offset"], x["size"], x.get("samples")) for x in rec[0]["members"]]
    check(m[-1][:3] == ("{long_int member}", 4088, 8) and m[-1][3] == 150,
          "layout of the heap block's struct rec: %r" % (m,))

# -header says what each counter sampled and counted, and multiplexing and throttling when a
# counter-stats record says so (appended here: software events are never multiplexed)
p = run([TALLY, "print", "-header", exp], expect=0)
check(re.search(r"Counter: +\+page-faults, every 1 events: %d samples" % total, p.stdout),
      "-header has no counter line:\n%s" % p.stdout)
h = print_json(exp, "-header")[0]["experiments"][0]["processes"][0]["counters"]
check(len(h) == 1 and h[0]["name"] == "page-faults" and h[0]["samples"] == total,
      "-header --json counters: %r" % h)
with open(os.path.join(exp, "log"), "a") as f:
    f.write("counter-stats id=0 samples=%d events=%d counted=%d enabled=1000 running=250 "
            "throttled=3 lost=4 dropped=0\n" % (total, total, total))
p = run([TALLY, "print", "-header", exp], expect=0)
check("multiplexed: counting 25.0% of its enabled time" in p.stdout and
      "throttled 3 times, 4 samples lost" in p.stdout,
      "-header does not show multiplexing and throttling:\n%s" % p.stdout)
# and every view of the samples says so at its top, as it says what was lost: a multiplexed or
# throttled counter's figures cover part of the run only, its lost samples are not in them
p = run([TALLY, "print", "-metrics", "e.page-faults:name", "-functions", exp], expect=0)
check("Warning: counter page-faults counted 25.0% of its enabled time (multiplexed" in p.stdout
      and "throttled 3 times" in p.stdout and
      "Warning: incomplete data: 4 counter samples were lost" in p.stdout,
      "-functions hides the counter's multiplexing, throttling or losses:\n%s" % p.stdout[:800])
check(print_json(exp, "-functions")[0].get("incomplete", {}).get("counter") == 4,
      "-functions --json: 'incomplete' lacks the 4 lost counter samples")

# every view shows the counter's metric
for view in (["-lines"], ["-pcs"], ["-load_objects"], ["-callers-callees"], ["-calltree"],
             ["-disasm", "touch_heap"], ["-source", "touch_heap"]):
    docs = print_json(exp, "-metrics", "e.page-faults:i.page-faults", *view)
    txt = json.dumps(docs)
    check("page-faults" in txt, "%s --json has no page-faults metric" % view[0])
p = run([TALLY, "print", "-metrics", "e.page-faults", "-lines", exp], expect=0)
check("page-faults" in p.stdout, "-lines text has no page-faults column:\n%s" % p.stdout[:500])

# ---- context switches -----------------------------------------------------------------------
# the program's own truth is printed on its stdout, which collect passes through
p = run([TALLY, "collect", "-d", d, "-o", "switches", "-p", "hi", "-h", "context-switches,1",
         WLC, "switches", "3000"], expect=0)
m = re.search(r"switches (\d+) (\d+)", p.stdout)
check(m is not None, "wl_counters switches printed no truth: %r" % p.stdout)
if m:
    truth = int(m.group(1)) + int(m.group(2))
    check(truth >= 3000, "pingpong switched only %d times for 3000 rounds" % truth)
    doc = print_json(os.path.join(d, "switches.tally"), "-metrics", "i.context-switches",
                     "-functions")[0]
    r = rows_by_name(doc)
    got = r.get("pingpong", {}).get("i.context-switches", 0)
    # one-sided: the counter is off while the collector's handler runs; getrusage counts all.
    # A thread that only passes a token spends most of its CPU time in the handler (one per
    # switch), so under load most of its preemptions (involuntary switches) come inside it,
    # uncounted (1,361 of a run's 1,615); the voluntary ones, blocked in read, are all outside.
    voluntary, involuntary = int(m.group(1)), int(m.group(2))
    bounded(got, voluntary, 0.05, None, "context switches in pingpong against getrusage's "
            "voluntary ones (%d involuntary besides)" % involuntary)
    check(got <= truth, "context switches in pingpong: %d, more than getrusage's %d" % (got, truth))
    check(r.get("<Total>", {}).get("i.context-switches", 0) >= got,
          "total below pingpong's: %r" % r.get("<Total>"))

# ---- a data breakpoint ----------------------------------------------------------------------
exp = collect(d, [WLC, "writes", "5000"], ["-h", "mem:bp_target:w"], name="bp")
doc = print_json(exp, "-functions")[0]
r = rows_by_name(doc)
key = "e.mem_bp_target_w"
check(key in [m["name"] for m in doc["metrics"]], "metrics: %r" % doc["metrics"])
check(r.get("write_loop", {}).get(key) == 5000,
      "breakpoint events in write_loop: %r, want 5000" % r.get("write_loop"))
check(r.get("<Total>", {}).get(key) == 5000, "breakpoint events: %r" % r.get("<Total>"))
# two experiments whose first counter differs (page-faults, this breakpoint) share the data
# views' first counter column: it is not named after either
doc = print_json([os.path.join(d, "faults_nomap.tally"), exp], "-data_objects")[-1]
check("e.counter1" in doc["objects"][0] and "e.page-faults" not in doc["objects"][0],
      "-data_objects of two experiments with different counters: %r" % doc["objects"][0])

# dataspace data from breakpoints (the goal: at least 99% backtracked to the trigger):
# the kernel gives the watched address and the PC after the store; backtracking must step back
# to the store itself. A breakpoint on a scalar global, and one on a structure's member written
# just before its neighbour (the PC is then the neighbour's store): the trigger found must be
# the store to the watched variable, as objdump shows it, for at least 99% of the events, and
# the data object the variable or the member.
def stores_to(fn, target):
    """ELF addresses of fn's instructions objdump annotates with <target>."""
    lo, size = syms[fn]
    out = run(["objdump", "-d", "--no-show-raw-insn", "--start-address=%#x" % lo,
               "--stop-address=%#x" % (lo + size), WLC], expect=0).stdout
    return [int(ln.split(":")[0], 16) for ln in out.splitlines()
            if ln.strip().endswith("<%s>" % target) and ":" in ln]


for what, args, bp, fn, target, obj in (
        ("scalar", ["writes", "5000"], "+mem:bp_target:w", "write_loop", "bp_target",
         "{volatile+long_int bp_target}"),
        ("member", ["members", "5000"], "+mem:bp_pair+8/8:w", "write_member", "bp_pair+0x8",
         "{structure:pair}.{long_int b}")):
    exp = collect(d, [WLC] + args, ["-h", bp], name="bpdata_" + what)
    want = stores_to(fn, target)
    check(len(want) == 1, "%s: objdump shows %r stores to %s in %s" % (what, want, target, fn))
    single = print_json(exp, "-data_single", obj)[-1]
    total = print_json(exp, "-data_objects")[-1]["objects"][0]["samples"]
    trig = [(int(t["pc"], 16), t["samples"]) for t in single["triggers"]]
    right = sum(n for pc, n in trig if pc in want)
    check(total == 5000, "%s: %d breakpoint events, want 5000" % (what, total))
    at_least(right / max(total, 1), 0.99, 0,
             "%s: share of breakpoint events backtracked to the store at %r (triggers %r)" %
             (what, [hex(x) for x in want], [(hex(p), n) for p, n in trig]))
    check(single["samples"] == total, "%s: %s has %d of %d events" %
          (what, obj, single["samples"], total))

# a breakpoint on a symbol is the profiled program's: set again when the program executes itself
# (a new image of the same file), not in another program it executes, which says so
exp = collect(d, [WLC, "writes", "300", "200"], ["-h", "mem:bp_target:w"], name="bpexec")
r = rows_by_name(print_json(exp, "-functions")[0])
check(r.get("write_loop", {}).get(key) == 500,
      "breakpoint events of the program and its exec of itself: %r, want 500" %
      r.get("write_loop"))
exp = collect(d, [WLC, "writes", "300", "true"], ["-h", "mem:bp_target:w"], name="bpother")
r = rows_by_name(print_json(exp, "-functions")[0])
check(r.get("write_loop", {}).get(key) == 300,
      "breakpoint events before exec of another program: %r" % r.get("write_loop"))
sub = [os.path.join(exp, x) for x in os.listdir(exp) if x.startswith("_x")]
check(len(sub) == 1, "the exec'd program has no experiment: %r" % os.listdir(exp))
if sub:
    w = [f.get("what", "") for _, f in log_records(sub[0], "warning")]
    check(any("not%20set%20in%20this%20program" in x for x in w),
          "no warning in the other program's experiment: %r" % w)

# a counter's metric is named as the user gave it, in an alias's other spelling too (cs,
# faults): -metrics takes that name, and the columns show it
exp = collect(d, [WLC, "writes", "10"], ["-h", "cs", "-h", "faults,1"], name="spelled")
doc = print_json(exp, "-metrics", "e.cs:e.faults:name", "-functions")[0]
check([m["name"] for m in doc["metrics"]][:2] == ["e.cs", "e.faults"] and
      rows_by_name(doc).get("<Total>", {}).get("e.faults", 0) > 0,
      "-h cs -h faults: metrics %r, total %r" % (doc["metrics"], rows_by_name(doc).get("<Total>")))

# ---- several counters, with clock profiling -------------------------------------------------
exp = collect(d, [WLC, "faults", "50", "50", "50", "50"],
              ["-p", "hi", "-h", "+page-faults,1,+minor-faults,hi", "-h", "+context-switches"],
              name="several")
doc = print_json(exp, "-functions")[0]
names = [m["name"] for m in doc["metrics"]]
for m in ("e.totalcpu", "e.page-faults", "e.minor-faults", "e.context-switches"):
    check(m in names, "several counters: no %s in %r" % (m, names))
r = rows_by_name(doc)
check(r.get("touch_global1", {}).get("e.page-faults") == 50,
      "page-faults beside other counters: %r" % r.get("touch_global1"))
mf = r.get("<Total>", {}).get("e.minor-faults", 0)
check(mf % 1 == 0 and mf > 0, "minor-faults,hi: %r" % mf)
check(len(log_records(exp, "counter")) == 3, "three counter records expected")
# each '+' counter is a column of the data views, named as the user gave it
drows = {o["name"]: o for o in print_json(exp, "-data_objects")[-1]["objects"]}
g1 = drows.get("{array+char g1}", {})
check(g1.get("e.page-faults") == 50 and "e.minor-faults" in g1,
      "-data_objects of several counters: %r" % g1)

# ---- a not-program-related counter ----------------------------------------------------------
# No uncore PMU here: the collector is given a software event marked not program related (flag
# 2 of the counters setting, as src/cli/hwc.c encodes an uncore event) directly, as tally
# collect would start it. It counts every CPU and shows under collector_not_program_related.
LIB = os.path.join(os.path.dirname(os.path.abspath(TALLY)), "libtally-collector.so")
exp = os.path.join(d, "npr.tally")
os.makedirs(exp)
env = dict(os.environ)
env.update({"T_SETTINGS": "d=%s,p=0,h=1:3:0:0:0:0:0:1:2:0:0:0:cs-all:cs-all" % exp,
            "T_PRELOAD": LIB})
script = ('export TALLY_SETTINGS="$T_SETTINGS,r=$$,o=$$" LD_PRELOAD="$T_PRELOAD"; '
          'unset T_SETTINGS T_PRELOAD; exec "$@"')
p = run(["sh", "-c", script, "sh", WLC, "switches", "500"], env=env, expect=0)
decl = [f for _, f in log_records(exp, "counter")]
warn = [f.get("what", "") for _, f in log_records(exp, "warning")]
if decl:
    check(decl[0].get("program") == "0", "counter record of cs-all: %r" % decl)
    doc = print_json(exp, "-metrics", "e.cs-all:i.cs-all", "-functions")[0]
    r = rows_by_name(doc)
    npr = r.get("collector_not_program_related", {})
    check(npr.get("e.cs-all", 0) >= 1000 and npr.get("e.cs-all") == r["<Total>"]["e.cs-all"],
          "system-wide switches not all under collector_not_program_related: %r" % r)
    check(r.get("pingpong", {}).get("i.cs-all", 0) == 0, "the program has cs-all: %r" % r)
else:  # system-wide counting not permitted: said, not silent
    check(any("cannot count on any CPU" in w for w in warn),
          "cs-all not collected and no warning says why: %r" % warn)

# ---- precise sampling refused: the collector falls back and says so -------------------------
# No PMU here: the collector is given page faults with precise_ip 1 asked (flags 1 '+' and 32,
# as src/cli/hwc.c encodes a PEBS event's level) directly. The kernel accepts precise_ip on a
# software event; TALLY_TEST_REFUSE_PRECISE=1 makes the collector's probe refuse it as a kernel
# without PEBS refuses it on a hardware event (EOPNOTSUPP).
for refuse in ("0", "1"):
    exp = os.path.join(d, "precise%s.tally" % refuse)
    os.makedirs(exp)
    env = dict(os.environ)
    env.update({"T_SETTINGS": "d=%s,p=0,h=1:2:0:0:0:0:0:10:33:0:0:0:page-faults:page-faults" % exp,
                "T_PRELOAD": LIB, "TALLY_TEST_REFUSE_PRECISE": refuse})
    p = run(["sh", "-c", script, "sh", WLC, "faults", "30", "20", "15", "10"], env=env, expect=0)
    decl = [f for _, f in log_records(exp, "counter")]
    warn = [unquote(f.get("what", "")) for _, f in log_records(exp, "warning")]
    check(len(decl) == 1 and decl[0].get("data") == "1", "precise%s: counter records %r" %
          (refuse, decl))
    refused_w = [w for w in warn if "refuses precise sampling" in w]
    if refuse == "1":
        check(decl[0].get("precise") == "0" and refused_w,
              "precise sampling refused: not lowered to 0 with a warning: %r %r" % (decl, warn))
    else:
        check(decl[0].get("precise") == "1" and not refused_w,
              "precise sampling accepted: %r %r" % (decl, warn))
    # a page fault's sample is the instruction and its address either way
    check(decl[0].get("sampled") == "exact", "page faults not sampled exact: %r" % decl)

# ---- an option's value that looks like the program ------------------------------------------
p = run([TALLY, "collect", "-d", d, "-o", "swallow", "-h", WLC])
check(p.returncode == 2 and "'-h' takes a counter list" in p.stderr and
      "no program is left to run" in p.stderr and
      ("did you mean 'tally collect -h <counters> %s'" % WLC) in p.stderr and
      "no program to run;" not in p.stderr, "-h PROGRAM:\n%s" % p.stderr)
p = run([TALLY, "collect", "-d", d, "-o", "swallow", "-h", WLC, "faults", "1"])
check(p.returncode == 2 and "'-h' takes a counter list" in p.stderr and
      ("did you mean 'tally collect -h <counters> %s ...'" % WLC) in p.stderr,
      "-h PROGRAM ARGS:\n%s" % p.stderr)
check(not os.path.exists(os.path.join(d, "swallow.tally")), "-h PROGRAM made an experiment")

done(d)
