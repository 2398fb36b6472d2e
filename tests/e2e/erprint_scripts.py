"""gprofng-style scripts run unchanged by `tally print --compat=er_print -script`: the shape of
what tally prints (section titles, column headers, setting confirmations, row-name forms, the
keys of summary and statistics blocks; not numbers, not which functions) must be the shape of
what er_print prints for the same script on the same program. The er_print outputs are in
tests/e2e/erprint/*.out (how they were made: tests/e2e/erprint/README.md)."""
import os
import re
from common import *

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "erprint")
d = workdir("erprint")
example = os.path.join(os.path.dirname(os.path.abspath(TALLY)), "example")
iodir = os.path.join(d, "iod")
os.makedirs(iodir)
exps = {
    "example": collect(d, [example, "5"], name="ex"),
    "heap": collect(d, [os.path.join(WL, "wl_trace_heap")], opts=["-H", "on"], name="he"),
    "io": collect(d, [os.path.join(WL, "wl_trace_io"), iodir], opts=["-i", "on"], name="io"),
}
SCRIPTS = [("functions", "example"), ("callers", "example"), ("info", "example"),
           ("lists", "example"),
           ("heap", "heap"), ("io", "io")]

NUM = r"(?:\d+\.\d*|\d*\.\d+|\d+)"
LIST_ROW = r"^\d+ +(all|[\d,-]+) +\d+$"  # "Exp Sel Total" tables
FREE_KEYS = {"Source File", "Object File", "Load Object", "Mangled Name", "Aliases",
             "Start Label", "End Label", "Experiment", "Current caller-callee sort Metric"}


def name_form(n):
    """The form of a row's or block's name: what a parser would match, without the names."""
    n = n.strip()
    for pat, form in ((r"^<Total>$", "<Total>"),
                      (r"^<Function: .*, instructions without line numbers>$",
                       "<Function: F, instructions without line numbers>"),
                      (r"^.+ \+ 0x[0-9A-F]{8}, line \d+ in \".+\"$", "F + 0xH, line N in \"S\""),
                      (r"^.+ \+ 0x[0-9A-F]{8}$", "F + 0xH"),
                      (r"^.+, line \d+ in \".+\"$", "F, line N in \"S\""),
                      (r"^.+ \(IOVFD=\d+, FD=\d+\)$", "FILE (IOVFD=N, FD=N)"),
                      (r"^CPU \d+$", "CPU N"), (r"^Process \d+, Thread \d+$", "Process N, Thread N"),
                      (r"^Sample \d+$", "Sample N"),
                      (r"^Second of execution \d+$", "Second of execution N")):
        if re.match(pat, n):
            return form
    return "NAME"


def values(v):
    v = re.sub(r"0x[0-9a-fA-F]+", "H", v)
    v = re.sub(NUM, "N", v)
    v = re.sub(r"\(\s*N\s*%\)", "(N%)", v)
    return re.sub(r"\s+", " ", v).strip()


def shape(text):
    out, header = [], None

    def flush():
        nonlocal header
        if header is not None:
            # a table's column headers: their words (er_print wraps "Time" of I/O metrics onto
            # the unit's line where tally folds it, so it is left out), in any line
            words = sorted(w for w in " ".join(header).split() if w != "Time")
            out.append("HEADER " + " ".join(words))
            header = None

    lines = text.splitlines()
    for k, raw in enumerate(lines):
        line = raw.strip()
        nxt = lines[k + 1] if k + 1 < len(lines) else ""
        if not line:
            flush()
            continue
        if header is not None and not re.match(r"^(%s\s+)+\**\S" % NUM, line) and \
                not line.startswith("=="):
            header.append(line)
            continue
        m = re.match(r"^((?:%s\s+)+)(\*?)(.*)$" % NUM, line)
        if m and not re.match(LIST_ROW, line):  # a table row (not a row of a list's table)
            flush()
            out.append("ROW %s%s" % (m.group(2), name_form(m.group(3))))
            continue
        flush()
        if re.search(r"(^|\s)Name$", line) and not line.startswith("Current"):
            header = [line]
        elif re.match(r"^=+( =+)*$", line):
            out.append("RULE=")
        elif re.match(r"^-+$", line):
            out.append("RULE-")
        elif raw.startswith("  ") and re.match(r"^.+ \+ 0x[0-9A-F]{8}(, line \d+ in \".+\")?$", line):
            out.append("FRAME")
        elif re.match(r"^  \S+ \t\(", raw):
            out.append("INDEX TYPE")
        elif re.match(r"^ <.*> \(.*\)$", raw):
            out.append("OBJECT")
        elif re.match(r"^(show|hide|api)\s+<.*>\s+\d+\s+\S", line):
            out.append("OBJECT LIST ROW")
        elif re.match(LIST_ROW, line):
            out.append("LIST ROW")
        elif re.match(r"^\d+ yes +\d+ \S+$", line):
            out.append("EXPERIMENT ROW")
        elif re.match(r"^(\d+[KMG]B - \d+[KMG]B|over \d+GB)\s+\d+$", line):
            out.append("SIZE RANGE")
        elif re.match(r"^(Exclusive|Inclusive) .+: [ei]\.%?\S+$", line):
            out.append("AVAILABLE METRIC")  # which: the data's
        elif re.match(r"^(Write|Read|Other I/O|I/O Error) Time=", line):
            out.append("I/O LINE")
        elif ":" in line and not line.startswith("Current metrics") and \
                not line.startswith("Current Sort") and not line.startswith("Current caller-callee metrics"):
            key, _, v = line.partition(":")
            out.append("%s: %s" % (key.strip(), "*" if key.strip() in FREE_KEYS else values(v)))
        elif not raw.startswith((" ", "\t")) and nxt.startswith("\t"):
            out.append("BLOCK " + name_form(line))
        else:
            out.append(values(line))
    flush()
    # how many functions, frames, objects, ranges (and which are callers or callees): the data's,
    # not the layout's; a run of rows is the forms of its rows, each once
    collapsed, run = [], []
    for s in out + [""]:
        if s.startswith("ROW "):
            if s not in run:
                run.append(s)
            continue
        collapsed += run
        run = []
        if s and (not collapsed or collapsed[-1] != s):
            collapsed.append(s)
    return collapsed


for script, data in SCRIPTS:
    path = os.path.join(HERE, script + ".er")
    want = open(os.path.join(HERE, script + ".out")).read()
    p = run([TALLY, "print", "--compat=er_print", "-script", path, exps[data]], expect=0)
    got_s, want_s = shape(p.stdout), shape(want)
    if got_s != want_s:
        import difflib
        diff = "\n".join(difflib.unified_diff(want_s, got_s, "er_print " + script,
                                              "tally " + script, lineterm="", n=2))
        fail("%s: the shape differs from er_print's:\n%s\n--- tally printed:\n%s" %
             (script, diff, p.stdout[:3000]))
    # er_print writes a script's comments and the limit's confirmation on stderr
    check(not re.search(r"^(#|Print limit set)", p.stdout, flags=re.M) and
          "Print limit set to" in p.stderr + "Print limit set to" * ("limit" not in open(path).read()),
          "%s: comments and 'Print limit set to' belong on stderr:\n%s" % (script, p.stderr[:500]))

# -limit 4 counts <Total>, as er_print's: the function list has four rows, as in functions.out
want = open(os.path.join(HERE, "functions.out")).read()
p = run([TALLY, "print", "--compat=er_print", "-script", os.path.join(HERE, "functions.er"),
         exps["example"]], expect=0)


def rows_of_first_table(text):
    block = text[text.index("Functions sorted by metric"):].split("\n\n")[1]
    return [l for l in block.splitlines() if re.match(r"^\s*(%s\s+)+\S" % NUM, l)]


check(len(rows_of_first_table(p.stdout)) == len(rows_of_first_table(want)) == 4,
      "-limit 4 with compat: %r" % rows_of_first_table(p.stdout))
# without the switch, tally's own: -limit counts functions, <Total> comes on top
p = run([TALLY, "print", "-limit", "4", "-functions", exps["example"]], expect=0)
check(len(rows_of_first_table(p.stdout)) == 5, "-limit 4: %r" % rows_of_first_table(p.stdout))
done(d)
