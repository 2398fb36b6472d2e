"""Strings from an experiment never reach the terminal raw. A program whose function names (C and
C++ mangled), sample label, binary path, source file name and text, and I/O file name hold ESC
sequences, newlines, Unicode bidi overrides, C1 controls and invalid UTF-8 is collected; its log
gets a hostile host and warning. Every view, `check`, `archive` and `collect` itself must print no control
byte but newline and tab, no C1 control or bidi mark, only valid UTF-8, the hostile strings shown
escaped; every --json document must parse and give back the original strings (invalid UTF-8 as
surrogateescape, PEP 383). Also: no output call in src/cli bypasses src/base/esc."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from common import TALLY, SRC, workdir, fail, check, done

CC = os.environ.get("CC") or shutil.which("cc") or "gcc"

# ---- the class is closed: src/cli prints through esc_printf/esc_fprintf/esc_json only ----------

RAW = re.compile(r"(?<![A-Za-z0-9_])(printf|fprintf|vprintf|vfprintf|dprintf|puts|fputs|putchar|"
                 r"fputc|putc|fwrite|write|perror|psignal)\s*\(")
for path in sorted(glob.glob(os.path.join(SRC, "src", "cli", "*.c"))):
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        code = line.split("//")[0]
        if re.match(r"\s*#\s*include\s*<err\.h>", code):  # err(), warn(): raw
            fail("%s:%d: <err.h> prints without escaping; use esc_fprintf (src/base/esc.h)" %
                 (os.path.relpath(path, SRC), no))
        for m in RAW.finditer(code):
            rest = code[m.end():]
            # a lone character or string literal is no experiment string
            if m.group(1) in ("fputc", "putc", "putchar") and re.match(r"\s*'", rest):
                continue
            if m.group(1) in ("fputs", "puts") and re.match(r'\s*"[^"]*"\s*[,)]', rest):
                continue
            if m.group(1) == "write" and not re.match(r"\s*(1|2|STD(OUT|ERR)_FILENO)\s*,", rest):
                continue  # a file or a pipe, not the terminal
            fail("%s:%d: %s() prints without escaping; use esc_printf/esc_fprintf/esc_json "
                 "(src/base/esc.h): %s" % (os.path.relpath(path, SRC), no, m.group(1),
                                             line.strip()))

# ---- a hostile program -------------------------------------------------------------------------

d = workdir("escapes")


def pad(b, n=33, fill=b"z"):
    assert len(b) <= n, b
    return b + fill * (n - len(b))


def mangled(ident, n=33):  # _Z<len><ident>v: a C++ function f(), n bytes long
    k = n - 3 - 2
    return b"_Z%d" % k + pad(ident, k, b"q") + b"v"


NAMES = {
    b"PLACEHOLDER_NAME_ESC_0123456789ab": pad(b"esc\x1b[31mred\x1b]0;pwned\x07"),
    b"PLACEHOLDER_NAME_NL_0123456789abc": pad(b"nl\nFAKE 99.99 line\r"),
    b"PLACEHOLDER_NAME_BIDI_0123456789a": pad(b"bidi\xe2\x80\xaeevil\xe2\x81\xa6\xc2\x9b" b"31m"),
    b"PLACEHOLDER_NAME_BADUTF8_01234567": pad(b"bad\xff\xfe\xc0\xafutf8\xe2\x82"),
    b"PLACEHOLDER_NAME_CXX_0123456789ab": mangled(b"dm\x1b[35mcxx\xe2\x80\xae"),
    b"PLACEHOLDER_NAME_LEAK_0123456789a": pad(b"leak\x1b[7mrev\x1b[0m"),
}
LABEL = b"label \x1b[31mred\x1b[0m \n fake \xe2\x80\xae rev \xc2\x9b bad \xff end"
HOST = b"\x1b[31mhost\nfake\xe2\x80\xae\xff"
WARNING = b"\x1b]0;title\x07warn\nline\xe2\x80\xae\xc2\x85\xff"
SRCNAME = b"src\x1b[36m\xe2\x80\xae\xfe.c"
SRCLINE = b"    /* source \x1b[31mred\x1b]0;title\x07 \xe2\x80\xae rev \xc2\x9b \xff */"
TABLINE = b"\tPLACEHOLDER_NAME_BIDI_0123456789a(); /* indented with a tab */"  # as it is, in JSON
PROG = b"wl\x1b[32m\xe2\x80\xae\xff\nbin"
IOFILE = b"io\x1b[31m\xe2\x80\xae\xff\nfile"

db = os.fsencode(d)
src = open(os.path.join(SRC, "tests", "workloads", "escapes.c"), "rb").read()
check(b"/* HOSTILE COMMENT */" in src, "workload: no marker for the hostile comment")
src = src.replace(b"    /* HOSTILE COMMENT */", SRCLINE)
with open(os.path.join(db, SRCNAME), "wb") as f:
    f.write(src)
built = os.path.join(db, b"built")
cp = subprocess.run([CC, "-O1", "-g", "-fno-inline", "-I", os.path.join(SRC, "include"),
                     SRCNAME, b"-o", built, b"-ldl"], cwd=db, capture_output=True)
if cp.returncode:
    fail("cannot build the workload: %s" % cp.stderr.decode(errors="replace"))
    done(d)
binary = open(built, "rb").read()
for ph, name in NAMES.items():
    assert len(ph) == len(name) == 33
    if not check(ph in binary, "placeholder %s not in the binary" % ph):
        continue
    binary = binary.replace(ph, name)
prog = os.path.join(db, PROG)
with open(prog, "wb") as f:
    f.write(binary)
os.chmod(prog, 0o755)

# the program runs as it would without tally
plain = subprocess.run([prog, os.path.join(db, b"plain.out"), b"0.01"], capture_output=True)
check(plain.returncode == 0 and plain.stdout == b"" and plain.stderr == b"",
      "the patched program fails on its own: %r" % (plain,))


def clean(what, out):
    """out (bytes) holds nothing a terminal would act on."""
    bad = sorted({c for c in out if (c < 0x20 and c not in (9, 10)) or c == 0x7f})
    if bad:
        i = min(out.index(bytes([c])) for c in bad)
        return check(False, "%s: raw control bytes %s near %r" %
                     (what, ["0x%02x" % c for c in bad], out[max(0, i - 40):i + 40]))
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as e:
        return check(False, "%s: invalid UTF-8 (%s) near %r" %
                     (what, e, out[max(0, e.start - 40):e.start + 40]))
    hidden = [c for c in text if 0x80 <= ord(c) <= 0x9f or ord(c) in (0x61c, 0x200e, 0x200f)
              or 0x2028 <= ord(c) <= 0x202e or 0x2066 <= ord(c) <= 0x2069]
    return check(not hidden, "%s: raw C1 or bidi characters %r" % (what, hidden))


def tally(args, expect=0, cwd=None):
    p = subprocess.run([os.fsencode(TALLY)] + [os.fsencode(a) if isinstance(a, str) else a
                                               for a in args],
                       capture_output=True, cwd=cwd, timeout=240)
    what = "tally " + " ".join(os.fsdecode(a) if isinstance(a, bytes) else a
                               for a in args[:-1])
    check(p.returncode == expect, "%s: exit %d, expected %d; stderr %r" %
          (what, p.returncode, expect, p.stderr[-600:]))
    clean(what + " (stdout)", p.stdout)
    clean(what + " (stderr)", p.stderr)
    return p


p = tally(["collect", "-H", "on", "-i", "on", "-A", "off", "-o", "exp", prog, IOFILE], cwd=db)
exp = os.path.join(d, "exp.tally")
check(os.path.exists(os.path.join(db, IOFILE)), "the program did not write its file")

# a hostile host and warning in the log (percent-encoded as the collector writes them)


def pct(b):
    return "".join(chr(c) if (0x30 <= c <= 0x39 or 0x41 <= c <= 0x5a or 0x61 <= c <= 0x7a)
                   else "%%%02X" % c for c in b).encode()


log = open(os.path.join(exp, "log"), "rb").read()
log, n = re.subn(rb" host=[^ \n]*", b" host=" + pct(HOST), log, count=1)
check(n == 1, "no host in the log")
log += b"warning what=" + pct(WARNING) + b"\n"
open(os.path.join(exp, "log"), "wb").write(log)

# tally archive names the binaries and sources it copies (hostile paths) and what it cannot copy
p = tally(["archive", "-s", exp])
check(os.path.isdir(os.path.join(exp, "archive")), "tally archive -s made no archive")

# ---- every view, as text -------------------------------------------------------------------

ESC_NAME = NAMES[b"PLACEHOLDER_NAME_ESC_0123456789ab"]
VIEWS = [["-functions"], ["-callers-callees"], ["-calltree"], ["-objects"], ["-load_objects"], ["-lines"],
         ["-pcs"], ["-source", "main"], ["-disasm", "main"], ["-overview"], ["-sample_list"],
         ["-sample_select", "2", "-sample_detail"], ["-sample_select", "2", "-sample_info"], ["-header"], ["-io_files"], ["-leaks"], ["-allocs"], ["-heap"], ["-heap_peak"],
         ["-thread_list"], ["-timeline"], ["-experiment_list"], ["-source", ESC_NAME],
         ["-disasm", ESC_NAME], ["-csingle", ESC_NAME], ["-fsingle", ESC_NAME],
         ["-name", "mangled", "-functions"], ["-name", "long", "-calltree"],
         ["-source", SRCNAME]]
text = {}
for v in VIEWS:
    p = tally(["print"] + v + [exp])
    text[" ".join(os.fsdecode(a) for a in v)] = p.stdout + p.stderr

EXPECT = {  # view: escaped forms that must be shown
    "-functions": [b"esc\\x1b[31mred\\x1b]0;pwned\\x07", b"nl\\nFAKE 99.99 line\\r",
                   b"bidi\\u202eevil\\u2066\\u009b31m", b"bad\\xff\\xfe\\xc0\\xafutf8\\xe2\\x82",
                   b"dm\\x1b[35mcxx\\u202e"],
    "-callers-callees": [b"esc\\x1b[31mred"],
    "-calltree": [b"nl\\nFAKE"],
    "-load_objects": [b"wl\\x1b[32m\\u202e\\xff\\nbin"],
    "-objects": [b"wl\\x1b[32m\\u202e\\xff\\nbin"],
    "-lines": [b"src\\x1b[36m\\u202e\\xfe.c"],
    "-source main": [b"/* source \\x1b[31mred\\x1b]0;title\\x07 \\u202e rev \\u009b \\xff */",
                     b"        PLACEHOLDER_NAME_BIDI_0123456789a(); /* indented with a tab */"],
    "-disasm main": [b"bad\\xff\\xfe"],
    "-sample_list": [b"label \\x1b[31mred\\x1b[0m \\n fake \\u202e rev \\u009b bad \\xff end"],
    "-header": [b"\\x1b[31mhost\\nfake\\u202e\\xff",
                b"\\x1b]0;title\\x07warn\\nline\\u202e\\u0085\\xff"],
    "-io_files": [b"io\\x1b[31m\\u202e\\xff\\nfile"],
    "-leaks": [b"leak\\x1b[7mrev\\x1b[0m"],
    "-name mangled -functions": [b"_Z28dm\\x1b[35mcxx\\u202e"],
}
for view, forms in EXPECT.items():
    for form in forms:
        check(form in text[view], "%s: %r not shown; output:\n%s" %
              (view, form, text[view][:3000].decode("utf-8", "replace")))

p = tally(["check", exp])
check(b"warning: \\x1b]0;title\\x07warn\\nline" in p.stdout, "check: the warning not shown "
      "escaped: %r" % p.stdout[-1500:])
# names typed by the user that are not in the data are echoed escaped in the error
tally(["print", "-fsingle", b"nope\x1b[31m\xe2\x80\xae", exp], expect=1)

# ---- every view, as JSON: valid, and the original strings come back ------------------------


def strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from strings(v)


def raw(s):
    return s.encode("utf-8", "surrogateescape")


found = set()
for v in VIEWS:
    p = tally(["print", "--json"] + v + [exp])
    what = "print --json " + " ".join(os.fsdecode(a) for a in v)
    for line in p.stdout.splitlines():
        try:
            doc = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            fail("%s: not valid JSON: %s: %r" % (what, e, line[:300]))
            continue
        for s in strings(doc):
            found.add(raw(s))

WANT = [n for ph, n in NAMES.items() if b"CXX" not in ph] + [LABEL, HOST, WARNING, SRCLINE,
                                                              TABLINE]
for w in WANT:
    check(any(w in s for s in found), "--json: %r never given back" % w)
check(any(s.endswith(IOFILE) for s in found), "--json: the I/O file's path not given")
check(any(PROG in s for s in found), "--json: the program's path not given")
check(any(b"dm\x1b[35mcxx\xe2\x80\xae" in s and not s.startswith(b"_Z") for s in found),
      "--json: the demangled name not given")

done(d)
