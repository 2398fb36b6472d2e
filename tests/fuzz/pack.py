#!/usr/bin/env python3
"""pack.py [--views LIST] [--binary FILE]... EXPERIMENT OUT: packs an experiment
directory into one input of the fuzz harness (see fuzz_experiment.c): every file but archive/,
each as "@@ <path>\\n" + contents (the chunks of events files each at its offset,
"@@ <path>@<offset>\\n", without the zeros that end them). The paths of the load records are
moved under /nonexistent, so that no input reads the system's binaries (their debug information
costs far more than the views); a --binary FILE goes into the input's archive/ under its build-id,
the copy the symbol tables are then read from. LIST (comma-separated) goes into the "views" file:
what the harness runs on the input (text, json, check, commands of `tally print` such as
"functions" or "source main"; at most 8 commands)."""
import os
import re
import sys

DEFAULT_VIEWS = "text,json,check,functions,callers-callees,calltree,header,overview,thread_list,timeline"


def nowhere(log):
    """The log with each load record's path moved under /nonexistent ([vdso] stays)."""
    return re.sub(rb"^(load .*? path=)(/)", rb"\1/nonexistent/", log, flags=re.M)


def build_id(path):
    """The GNU build-id note of an ELF file, in hex."""
    with open(path, "rb") as fh:
        data = fh.read()
    i = data.find(b"\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00")
    if i < 0:
        sys.exit("%s: no GNU build-id note" % path)
    return data[i + 16:i + 36].hex()


def pack(exp, views=DEFAULT_VIEWS, binaries=()):
    parts = []
    for root, dirs, files in os.walk(exp):
        dirs[:] = sorted(d for d in dirs if d != "archive")
        for f in sorted(files):
            path = os.path.join(root, f)
            rel = os.path.relpath(path, exp)
            with open(path, "rb") as fh:
                data = fh.read()
            if f == "log":
                data = nowhere(data)
            if f != "events":
                parts.append(b"@@ " + rel.encode() + b"\n" + data)
                continue
            # the header, then each chunk without its unused end, at its offset (the harness
            # leaves zeros between them and pads the last chunk)
            hs = int.from_bytes(data[12:16], "little") or 4096
            cs = int.from_bytes(data[16:20], "little") or 65536
            parts.append(b"@@ " + rel.encode() + b"\n" + data[:hs].rstrip(b"\0"))
            for off in range(hs, len(data), cs):
                chunk = data[off:off + cs].rstrip(b"\0")
                if chunk:
                    parts.append(b"@@ %s@%d\n" % (rel.encode(), off) + chunk)
    for b in binaries:
        with open(b, "rb") as fh:
            parts.append(b"@@ archive/" + build_id(b).encode() + b"\n" + fh.read())
    if views:
        parts.append(b"@@ views\n" + "\n".join(views.split(",")).encode())
    return b"\n".join(parts)


if __name__ == "__main__":
    args, views, binaries = sys.argv[1:], DEFAULT_VIEWS, []
    while args and args[0] in ("--views", "--binary") and len(args) > 1:
        if args[0] == "--views":
            views = args[1]
        else:
            binaries.append(args[1])
        args = args[2:]
    if len(args) != 2:
        sys.exit(__doc__)
    with open(args[1], "wb") as fh:
        fh.write(pack(args[0], views, binaries))
