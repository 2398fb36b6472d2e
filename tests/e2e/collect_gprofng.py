"""tally collect takes gprofng's `collect app` options with gprofng's meaning: -o PATH (a name
ending in .er kept as given), -O (replace an experiment), -C (comments shown by -header), -a
keywords, -t with s/m suffixes, -p with ms/us, -y SIG[,r] (start paused unless ,r), -F =REGEX
(follow only the descendant programs whose name matches), -s ...,n, --verbose, --version; every
one in --help. Bad values are refused with exit 2 and a message naming the option."""
import os
import signal
import subprocess
from common import *

d = workdir("collect_gprofng")
cpu = os.path.join(WL, "wl_cpu_single")


def settings(exp):
    recs = log_records(exp, "settings")
    return recs[0][1] if recs else {}


def all_logs(exp):
    out = []
    for root, _, files in os.walk(exp):
        if "log" in files:
            out.append(os.path.join(root, "log"))
    return out


# ---- -o / -O: a path, .er kept -------------------------------------------------------------
er = os.path.join(d, "sub", "deeper", "test.1.er")
p = run([TALLY, "collect", "-o", er, "/bin/true"], expect=0)
check(os.path.isfile(os.path.join(er, "log")), "-o /abs/dir/test.1.er: %s missing: %r" %
      (er, p.stderr))
# relative: to the current directory, or to -d
p = subprocess.run([os.path.abspath(TALLY), "collect", "-o", "rel/x.er", "/bin/true"], cwd=d,
                   capture_output=True, text=True, timeout=120)
check(p.returncode == 0 and os.path.isfile(os.path.join(d, "rel", "x.er", "log")),
      "-o rel/x.er: %r" % p.stderr)
p = run([TALLY, "collect", "-d", os.path.join(d, "dd"), "-o", "rel/y.er", "/bin/true"], expect=0)
check(os.path.isfile(os.path.join(d, "dd", "rel", "y.er", "log")), "-d D -o rel/y.er: %r" %
      p.stderr)
p = run([TALLY, "collect", "-d", d, "-o", "plain", "/bin/true"], expect=0)
check(os.path.isdir(os.path.join(d, "plain.tally")), "-o plain: no plain.tally")
# an existing experiment is kept by -o, replaced by -O
p = run([TALLY, "collect", "-o", er, "/bin/true"], expect=1)
check("already exists" in p.stderr and "-O" in p.stderr, "-o over an experiment: %r" % p.stderr)
with open(os.path.join(er, "marker"), "w") as f:
    f.write("old")
p = run([TALLY, "collect", "-O", er, "/bin/true"], expect=0)
check(os.path.isfile(os.path.join(er, "log")) and
      not os.path.exists(os.path.join(er, "marker")), "-O did not replace %s" % er)
# -O never removes what is not an experiment
notexp = os.path.join(d, "precious.er")
os.makedirs(notexp)
with open(os.path.join(notexp, "data"), "w") as f:
    f.write("keep")
p = run([TALLY, "collect", "-O", notexp, "/bin/true"], expect=1)
check("not an experiment" in p.stderr and os.path.isfile(os.path.join(notexp, "data")),
      "-O over a non-experiment: %r" % p.stderr)
for bad in ("", "dir/", "/"):
    p = run([TALLY, "collect", "-o", bad, "/bin/true"], expect=2)
    check("-o" in p.stderr, "-o %r: %r" % (bad, p.stderr))

# ---- -C: comments in the experiment, shown by -header ------------------------------------
exp = os.path.join(d, "c.er")
run([TALLY, "collect", "-o", exp, "-C", "first run", "-C", "second, with = and spaces",
     "/bin/true"], expect=0)
p = run([TALLY, "print", "-header", exp], expect=0)
check("Comment:          first run" in p.stdout and
      "Comment:          second, with = and spaces" in p.stdout, "-header comments: %r" %
      p.stdout[:800])
h = print_json(exp, "-header")[0]
check(h["experiments"][0]["processes"][0]["comments"] ==
      ["first run", "second, with = and spaces"], "-header JSON comments: %r" % h)
p = run([TALLY, "collect", "-o", os.path.join(d, "c11.er")] + ["-C", "x"] * 11 + ["/bin/true"],
        expect=2)
check("up to 10" in p.stderr, "11 comments: %r" % p.stderr)

# ---- -a: gprofng's archive keywords --------------------------------------------------------
for kw, archived in (("off", False), ("on", True), ("ldobjects", True), ("usedldobjects", True),
                     ("src", True), ("usedsrc", True)):
    exp = os.path.join(d, "a_%s.er" % kw)
    run([TALLY, "collect", "-o", exp, "-a", kw, "/bin/true"], expect=0)
    check(os.path.isdir(os.path.join(exp, "archive")) == archived,
          "-a %s: archive/ %s" % (kw, "missing" if archived else "present"))
p = run([TALLY, "collect", "-a", "everything", "/bin/true"], expect=2)
check("-a" in p.stderr and "usedsrc" in p.stderr, "bad -a: %r" % p.stderr)

# ---- -t and -p: gprofng's suffixes ---------------------------------------------------------
for opt, val, key, want in (("-t", "2m", "duration", "0-120000000000"),
                            ("-t", "10s-1m", "duration", "10000000000-60000000000"),
                            ("-t", "1.5", "duration", "0-1500000000"),
                            ("-p", "5ms", "clock", "5000000"),
                            ("-p", "500us", "clock", "500000"),
                            ("-p", "2", "clock", "2000000")):
    exp = os.path.join(d, "tp_%s.er" % val.replace(".", "_"))
    run([TALLY, "collect", "-o", exp, "-a", "off", opt, val, "/bin/true"], expect=0)
    check(settings(exp).get(key) == want, "%s %s: %s=%r, expected %s" %
          (opt, val, key, settings(exp).get(key), want))
for opt, val in (("-t", "5x"), ("-t", "m"), ("-t", "1m-10s"), ("-p", "5s"), ("-p", "ms")):
    p = run([TALLY, "collect", opt, val, "/bin/true"], expect=2)
    check(opt in p.stderr, "%s %s: %r" % (opt, val, p.stderr))

# ---- -s ...,n ------------------------------------------------------------------------------
for val, want in (("all,n", "0"), ("100,n", "100000"), ("calibrate", None), ("on,n", None)):
    exp = os.path.join(d, "s_%s.er" % val.replace(",", "_"))
    run([TALLY, "collect", "-o", exp, "-a", "off", "-s", val, "/bin/true"], expect=0)
    s = settings(exp)
    if want is None:
        check(s.get("sync_calibrated") == "1", "-s %s: not calibrated: %r" % (val, s))
    else:
        check(s.get("sync") == want, "-s %s: sync=%r, expected %s" % (val, s.get("sync"), want))
p = run([TALLY, "collect", "-s", "100,j", "/bin/true"], expect=2)
check("native" in p.stderr, "-s 100,j: %r" % p.stderr)
p = run([TALLY, "collect", "-s", "100,x", "/bin/true"], expect=2)
check("-s" in p.stderr, "-s 100,x: %r" % p.stderr)

# ---- -F =REGEX: only the descendant programs whose name matches ----------------------------
script = "/bin/true; /bin/echo hello; exit 0"
exp = os.path.join(d, "f.er")
p = run([TALLY, "collect", "-o", exp, "-a", "off", "-F", "=e.ho", "sh", "-c", script], expect=0)
check(p.stdout == "hello\n", "-F =REGEX changed the program's output: %r" % p.stdout)
exes = sorted(os.path.basename(dict(log_records(os.path.dirname(l), "start"))
                               .get("start", {}).get("exe", "?")) for l in all_logs(exp))
check("echo" in exes and "true" not in exes, "-F =e.ho recorded %r" % exes)
check(settings(exp).get("follow_regex") == "e.ho", "-F =REGEX not logged: %r" % settings(exp))
exp = os.path.join(d, "fall.er")
run([TALLY, "collect", "-o", exp, "-a", "off", "-F", "all", "sh", "-c", script], expect=0)
exes = sorted(os.path.basename(dict(log_records(os.path.dirname(l), "start"))
                               .get("start", {}).get("exe", "?")) for l in all_logs(exp))
check("echo" in exes and "true" in exes, "-F all recorded %r" % exes)
# anchored: "ech" is not the whole of "echo"
exp = os.path.join(d, "fpart.er")
run([TALLY, "collect", "-o", exp, "-a", "off", "-F", "=ech", "sh", "-c", script], expect=0)
exes = [os.path.basename(dict(log_records(os.path.dirname(l), "start")).get("start", {})
                         .get("exe", "?")) for l in all_logs(exp)]
check("echo" not in exes, "-F =ech matched echo: %r" % exes)
for bad in ("=(", "="):
    p = run([TALLY, "collect", "-F", bad, "/bin/true"], expect=2)
    check("regular expression" in p.stderr, "-F %s: %r" % (bad, p.stderr))

# ---- -y SIG: starts paused, SIG resumes; -y SIG,r starts recording --------------------------
exp = os.path.join(d, "ypaused.er")
col = subprocess.Popen([TALLY, "collect", "-o", exp, "-a", "off", "-y", "USR2", cpu, "1.5"],
                       stderr=subprocess.PIPE)
child = child_of(col.pid)
if check(child is not None, "-y: no child") and \
        check(wait_caught(child, signal.SIGUSR2), "-y: the collector never caught SIGUSR2") and \
        check(wait_cpu(child, 0.3), "-y: the program did not run"):
    os.kill(child, signal.SIGUSR2)  # resume
col.communicate(timeout=120)
check(col.returncode == 0, "-y run exited %d" % col.returncode)
recs = log_records(exp)
pr = [(k, f.get("by")) for k, f in recs if k in ("pause", "resume")]
if check(pr == [("pause", "start"), ("resume", "signal")], "-y: pause records %r" % pr):
    t0 = int([f for k, f in recs if k == "start"][0]["t"])
    tr = int([f for k, f in recs if k == "resume"][0]["t"]) - t0
    before = print_json(exp, "-filters", "TSTAMP < %d" % (tr - 20_000_000), "-metrics",
                        "i.totalcpu:name", "-functions")[-1]["rows"]
    after = print_json(exp, "-metrics", "i.totalcpu:name", "-functions")[-1]["rows"]
    check(not before or before[0]["i.totalcpu"] == 0,
          "-y: %r recorded before the signal resumed" % before[:1])
    check(after and after[0]["i.totalcpu"] > 0, "-y: nothing recorded after the resume")
exp = os.path.join(d, "yr.er")
run([TALLY, "collect", "-o", exp, "-a", "off", "-y", "USR2,r", cpu, "0.2"], expect=0)
check(not [k for k, _ in log_records(exp) if k == "pause"], "-y USR2,r started paused")
check(settings(exp).get("start_paused") == "off", "-y USR2,r: %r" % settings(exp))
p = run([TALLY, "collect", "-y", "USR2,q", "/bin/true"], expect=2)
check("-y" in p.stderr and ",r" in p.stderr, "-y USR2,q: %r" % p.stderr)

# ---- --max-depth: a stack cut at the limit has a <Truncated-stack> frame at its root ----------
exp = os.path.join(d, "deep.er")
run([TALLY, "collect", "-o", exp, "-a", "off", "--max-depth=16",
     os.path.join(WL, "wl_deep_recursion"), "200", "0.3"], expect=0)
rows = rows_by_name(print_json(exp, "-metrics", "i.totalcpu:name", "-functions")[-1])
total = rows.get("<Total>", {}).get("i.totalcpu", 0)
# Every sample taken inside the 200-deep recursion is cut; a sample taken while the program
# starts or exits (the dynamic linker, libc) has a short stack and is not, so compare with the
# recursion's own time, not with the total.
trunc = rows.get("<Truncated-stack>", {}).get("i.totalcpu", 0)
deep = max(rows.get(f, {}).get("i.totalcpu", 0) for f in ("bottom", "recurse"))
check(total > 0 and deep >= 0.5 * total and trunc >= deep and trunc <= total,
      "deep stacks: <Truncated-stack> row %r, recursion %r, total %r"
      % (rows.get("<Truncated-stack>"), deep, total))
p = run([TALLY, "print", "-calltree", exp], expect=0)
tree = [l.split()[-1] for l in p.stdout.splitlines() if "+-" in l]
check(tree[:1] == ["+-<Truncated-stack>"], "calltree root: %r" % tree[:3])
# a stack within the limit has none
exp = os.path.join(d, "shallow.er")
run([TALLY, "collect", "-o", exp, "-a", "off", os.path.join(WL, "wl_deep_recursion"), "20", "0.2"],
    expect=0)
rows = rows_by_name(print_json(exp, "-metrics", "i.totalcpu:name", "-functions")[-1])
check("<Truncated-stack>" not in rows and "main" in rows, "shallow stacks: %r" % sorted(rows))

# ---- --verbose, --version, --help ----------------------------------------------------------
exp = os.path.join(d, "v.er")
p = run([TALLY, "collect", "--verbose", "-o", exp, "-C", "noted", "/bin/true"], expect=0)
check("comment:      noted" in p.stderr and "clock:" in p.stderr and
      os.path.isdir(exp), "--verbose: %r" % p.stderr)
for v in ("--version", "-V"):
    p = run([TALLY, "collect", v], expect=0)
    check(p.stdout.startswith("tally collect ") and p.stdout.strip().split()[-1][0].isdigit(),
          "%s: %r" % (v, p.stdout))
p = run([TALLY, "collect", "--help"], expect=0)
for opt in ("-o, --output=PATH", "-O, --overwrite", "-C, --comment", "-a KEYWORD", "usedsrc",
            "=REGEX", "SIG[,r]", "[,n]", "--verbose", "--version", "500us", "2m"):
    check(opt in p.stdout, "--help does not mention %r" % opt)

done(d)
