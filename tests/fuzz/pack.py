#!/usr/bin/env python3
"""pack.py EXPERIMENT OUT [NAME...]: packs an experiment directory into one input of the fuzz
harness (see fuzz_experiment.c): every file but archive/, each as "@@ <path>\\n" + contents (the
chunks of events files each at its offset, "@@ <path>@<offset>\\n", without the zeros that end
them); NAMEs (function or file names) go into a "names" file the name-taking views are run with."""
import os
import sys


def pack(exp, names=()):
    parts = []
    for root, dirs, files in os.walk(exp):
        dirs[:] = sorted(d for d in dirs if d != "archive")
        for f in sorted(files):
            path = os.path.join(root, f)
            rel = os.path.relpath(path, exp)
            with open(path, "rb") as fh:
                data = fh.read()
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
    if names:
        parts.append(b"@@ names\n" + "\n".join(names).encode())
    return b"\n".join(parts)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: pack.py EXPERIMENT OUT [NAME...]")
    with open(sys.argv[2], "wb") as fh:
        fh.write(pack(sys.argv[1], sys.argv[3:]))
