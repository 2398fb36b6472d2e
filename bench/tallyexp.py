"""tallyexp.py - a small, independent reader of tally experiments (docs/FORMAT.md) for the
benchmark scripts: it lets them check what an experiment holds without `tally print`, and
cross-check `tally print` against a second implementation of the format.

  summary(dir) -> dict with, over the root process and every descendant (_f*/_x*.tally):
    processes, clock_ns (sum of CLOCK weights), clock_user_ns, clock_system_ns, clock_samples,
    state_ns, records (count by type), chunks, stream_count, events_bytes (size), events_disk
    (allocated on disk), log_bytes,
    thread_cpu_ns / thread_user_ns / thread_system_ns (sums of `thread-end` records),
    stats_samples (sum of `stats samples=`), ends (the `how` of each process's last `end`).

Only what the benchmarks need is decoded: record types and lengths everywhere, the payload of
CLOCK records. Raises ValueError with the file and offset on anything malformed.
"""
import os
import re
import struct

REC_NAMES = {1: "STACK", 2: "CLOCK", 3: "LOST", 4: "SYNC", 5: "HEAP_ALLOC", 6: "HEAP_FREE",
             7: "IO", 12: "HEAP_PACK", 16: "STATE", 17: "CPU"}
PACK_OPEN = (1 << 28) - 1  # the length of a HEAP_PACK still open: it reaches the used bytes
CHUNK_MAGIC = 0x314B4354  # "TCK1"


def _uleb(buf, pos, end, where):
    val = shift = 0
    while True:
        if pos >= end:
            raise ValueError("%s: truncated LEB128 number" % where)
        b = buf[pos]
        pos += 1
        val |= (b & 0x7F) << shift
        if b < 0x80:
            return val, pos
        shift += 7


def _pct_decode(s):
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), s)


def read_log(path):
    """[(kind, {key: value})] of a log file, values percent-decoded (cmdline: argv as a list)."""
    with open(path, "rb") as f:
        data = f.read().decode("utf-8", errors="replace")
    lines = data.split("\n")
    if not lines or lines[0] != "tally-experiment version=1":
        raise ValueError("%s: not a tally log (first line %r)" % (path, lines[0][:40]))
    recs = []
    for line in lines[1:-1]:  # a last line without a newline is incomplete
        kind, _, rest = line.partition(" ")
        if kind == "cmdline":
            recs.append((kind, {"argv": [_pct_decode(a) for a in rest[5:].split(" ")]}))
            continue
        fields = {}
        for kv in rest.split(" "):
            k, _, v = kv.partition("=")
            if k:
                fields[k] = _pct_decode(v)
        recs.append((kind, fields))
    return recs


def decode_events(path, acc):
    """Adds the records of one events file to acc (see summary)."""
    with open(path, "rb") as f:
        m = f.read()
        acc["events_disk"] += os.fstat(f.fileno()).st_blocks * 512
    acc["events_bytes"] += len(m)
    if len(m) == 0:
        return
    if len(m) < 64 or m[:8] != b"TALLYEVT":
        raise ValueError("%s: not a tally events file" % path)
    version, hsize, csize = struct.unpack_from("<III", m, 8)
    if version > 1:
        raise ValueError("%s: events version %d is newer than this reader" % (path, version))
    streams = set()
    for off in range(hsize, len(m), csize):
        acc["chunks"] += 1
        if off + 32 > len(m):
            raise ValueError("%s: chunk at offset %d is cut short" % (path, off))
        magic, _tid, _seq, used, _t0, stream = struct.unpack_from("<IIIIQI", m, off)
        if magic == 0:
            acc["unused_chunks"] += 1
            continue
        if magic != CHUNK_MAGIC:
            raise ValueError("%s: bad chunk magic at offset %d" % (path, off))
        streams.add(stream)
        pos, end = off + 32, off + 32 + min(used, csize - 32)
        while pos < end:
            where = "%s offset %d" % (path, pos)
            rtype = m[pos]
            length, p = _uleb(m, pos + 1, end, where)
            pend = end if rtype == 12 and length == PACK_OPEN else p + length
            if pend > end:
                raise ValueError("%s: record of type %d runs past the chunk" % (where, rtype))
            name = REC_NAMES.get(rtype, "unknown")
            acc["records"][name] = acc["records"].get(name, 0) + 1
            if rtype == 2:  # CLOCK: dt, stack id, state, weight
                _dt, p = _uleb(m, p, pend, where)
                _sid, p = _uleb(m, p, pend, where)
                state, p = _uleb(m, p, pend, where)
                weight, p = _uleb(m, p, pend, where)
                acc["clock_samples"] += 1
                acc["clock_ns"] += weight
                acc["clock_system_ns" if state == 1 else "clock_user_ns"] += weight
            elif rtype == 16:  # STATE: dt, tid, stack id, state, weight
                vals = []
                for _ in range(5):
                    v, p = _uleb(m, p, pend, where)
                    vals.append(v)
                acc["state_ns"] += vals[4]
            pos = pend
    acc["stream_count"] += len(streams)


def _process(d, acc):
    acc["processes"] += 1
    log = os.path.join(d, "log")
    acc["log_bytes"] += os.path.getsize(log)
    how = "none"
    for kind, f in read_log(log):
        if kind == "thread-end":
            acc["thread_cpu_ns"] += int(f.get("cpu", 0))
            acc["thread_user_ns"] += int(f.get("user", 0))
            acc["thread_system_ns"] += int(f.get("system", 0))
        elif kind == "stats":
            acc["stats_samples"] += int(f.get("samples", 0))
        elif kind == "end":
            how = f.get("how", "?")
    acc["ends"].append(how)
    ev = os.path.join(d, "events")
    if os.path.exists(ev):
        decode_events(ev, acc)
    subs = [n for n in os.listdir(d) if re.fullmatch(r"_[fx]\d+\.tally", n)]
    for n in sorted(subs, key=lambda n: (n[1], int(n[2:-6]))):
        _process(os.path.join(d, n), acc)


def summary(d):
    acc = dict(processes=0, clock_ns=0, clock_user_ns=0, clock_system_ns=0, clock_samples=0,
               state_ns=0, records={}, chunks=0, unused_chunks=0, stream_count=0,
               events_bytes=0, events_disk=0, log_bytes=0, thread_cpu_ns=0, thread_user_ns=0,
               thread_system_ns=0, stats_samples=0, ends=[])
    _process(d, acc)
    return acc


if __name__ == "__main__":
    import json
    import sys
    for d in sys.argv[1:]:
        print(json.dumps(summary(d)))
