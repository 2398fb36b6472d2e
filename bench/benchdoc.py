"""benchdoc.py - what the benchmark scripts share about docs/BENCHMARKS.md: the line that says
where a result was measured, and replacing a script's section between its markers
(`<!-- NAME begin -->` ... `<!-- NAME end -->`; appended at the end when missing)."""
import os
import platform
import re
import subprocess
import time

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "BENCHMARKS.md")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def commit():
    """The short commit of the source tree, '+' when it has uncommitted changes."""
    top = os.path.dirname(DOC)
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=top,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=top, capture_output=True, text=True).stdout.strip()
        return head + ("+" if dirty else "") if head else "unknown"
    except OSError:
        return "unknown"


def measured_on(command):
    """'Command: `...` on HOST, N CPUs (MODEL), kernel K, commit C, DATE.'"""
    return "Command: `%s` on %s, %d CPUs (%s), kernel %s, commit %s, %s." % (
        command, platform.node() or "this machine", os.cpu_count(), cpu_model(),
        platform.release(), commit(), time.strftime("%Y-%m-%d"))


def write_section(name, text, path=DOC):
    """Replaces the section of script NAME (e.g. 'clock.py') in the document with text."""
    old = open(path).read() if os.path.exists(path) else "# Benchmarks\n\n"
    begin, end = "<!-- %s begin -->" % name, "<!-- %s end -->" % name
    block = begin + "\n" + text.rstrip("\n") + "\n\n" + end
    if begin in old:
        new = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda m: block, old, flags=re.S)
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(new)
