#!/usr/bin/env python3
"""Late senders, late arrival on split communicators and ranks on several hosts
(-mpi_callsites), under Open MPI and MPICH (each skipped when not installed; the test is a skip
when neither is).

tests/workloads/mpi_late.c on 4 ranks: rank 0 computes, then sends to rank 1 waiting in MPI_Recv;
rank 2 computes, then MPI_Isend to rank 3 waiting in MPI_Wait on an MPI_Irecv; after an
MPI_Comm_split into halves {0,1}, {2,3}, each half's rank 1 computes and sends to its rank 0, and
the halves' barriers wait for their rank 0. The program measures the truth itself: each message
carries the sender's CLOCK_MONOTONIC time just before its send, so the receiver knows how late
the send started after it entered the receive, and it measures its own wait around the call.
Last, rank 0 computes and ranks 0 and 1 swap times with MPI_Sendrecv (rank 1's receive waits for
rank 0's send). Checked for each send call site: the wait charged to it (Late send) is at most the waits the
receivers measured around their calls (plus 2 ms: one-sided, the receive's wait inside the
wrapper lies inside the program's interval) and at least the truth less 50 ms and 10% (a rank
preempted between its timestamp and the wrapper's); the sending rank is named. The halves'
barriers: late arrival charged to the rank that entered last in each half (the program's entry
times), at most the waits the others measured. Every message paired, every collective matched
(two world barriers, the two halves' and the barrier on the node's ranks, from
MPI_Comm_split_type), none left out for an unknown communicator; each rank's log names the half
it is in (note mpi_comm: the same id within a half, different ids across) and the node's.

Several hosts: the same job as an MPMD run whose two halves run with a different host name each
(a preloaded uname() that answers the name in TALLY_TEST_HOST): -rank_list names each rank's
host, -mpi_callsites and -mpi_timeline say the ranks ran on 2 hosts with the warning that their
clocks are not synchronized, and counts as compared across hosts exactly the late arrival at the barriers of
the world and of the node's ranks (which spans both names; the halves, the messages are within
one host). The program's output is the same.

The Fortran binding (tests/workloads/mpi_split.f90: the same halves through mpi_comm_split, then
a barrier each half's rank 0 is late to): one note per rank and communicator, with the ids the C
program's halves got, and the halves' barriers matched and charged to a rank 0 of a half.
"""
import os
import re
import shutil

from common import *

IMPLS = {
    "openmpi": {"cc": "mpicc.openmpi", "fc": "mpif90.openmpi",
                "run": ["mpirun.openmpi", "--oversubscribe"]},
    "mpich": {"cc": "mpicc.mpich", "fc": "mpif90.mpich", "run": ["mpirun.mpich"]},
}
env = dict(os.environ)
env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
int uname(struct utsname *u)
{
    int (*real)(struct utsname *) = (int (*)(struct utsname *))dlsym(RTLD_NEXT, "uname");
    int rc = real(u);
    const char *h = getenv("TALLY_TEST_HOST");
    if (rc == 0 && h) {
        strncpy(u->nodename, h, sizeof u->nodename - 1);
        u->nodename[sizeof u->nodename - 1] = 0;
    }
    return rc;
}
"""


def program_lines(p, what):
    check(p.returncode == 0, "%s: exit status %d\n%s" % (what, p.returncode, p.stderr[-3000:]))
    late = {int(m.group(1)): (int(m.group(2)) * 1e-9, int(m.group(3)) * 1e-9)
            for m in re.finditer(r"^late (\d+) (-?\d+) (\d+)$", p.stdout, re.M)}
    barrier = {int(m.group(1)): (int(m.group(2)) * 1e-9, int(m.group(3)) * 1e-9)
               for m in re.finditer(r"^barrier (\d+) (\d+) (\d+)$", p.stdout, re.M)}
    sendrecv = {int(m.group(1)): (int(m.group(2)) * 1e-9, int(m.group(3)) * 1e-9)
                for m in re.finditer(r"^sendrecv (\d+) (-?\d+) (\d+)$", p.stdout, re.M)}
    check(sorted(late) == [0, 1, 2, 3] and sorted(barrier) == [0, 1, 2, 3] and
          sorted(sendrecv) == [0, 1], "%s: the program printed %s" % (what, p.stdout))
    late.update({"sendrecv": sendrecv.get(1, (0, 0))})
    return late, barrier


def row(doc, prefix, what):
    rows = [r for r in doc["rows"] if r["name"].startswith(prefix)]
    check(len(rows) == 1, "%s: rows named %s...: %s" % (what, prefix, [r["name"] for r in rows]))
    return rows[0] if rows else {}


def check_charge(got, truth, measured, what):
    """got: charged seconds; truth: the program's own; measured: the waits around the calls."""
    at_most(got, measured + 0.002, 0, what + " (at most the receivers' measured wait + 2 ms)")
    check(got >= truth - max(0.05, 0.1 * truth),
          "%s: charged %.4f s, the program's truth %.4f s (less 50 ms and 10%%)"
          % (what, got, truth))


def check_job(exp, late, barrier, what):
    doc = print_json(exp, "-mpi_callsites")[0]
    check(doc["late_collectives"] == 5 and doc["late_skipped"] == 0,
          "%s: collectives matched %s, left out %s" % (what, doc["late_collectives"],
                                                       doc["late_skipped"]))
    check(doc["messages_paired"] == 6 and doc["messages_unpaired"] == 0 and
          doc["unknown_communicator"] == 0,
          "%s: messages paired %s, unpaired %s, unknown communicator %s"
          % (what, doc["messages_paired"], doc["messages_unpaired"],
             doc["unknown_communicator"]))
    # late senders: rank 0 -> 1 (MPI_Send), rank 2 -> 3 (MPI_Isend), the halves' 1 -> 0
    r = row(doc, "MPI_Send from late_send_world", what)
    check(r.get("late_send_rank") == 0, "%s: late sender of MPI_Send (world) %s" % (what, r))
    check_charge(r.get("late_send", 0), late[1][0], late[1][1], what + ": rank 0's MPI_Send")
    r = row(doc, "MPI_Isend from late_isend_world", what)
    check(r.get("late_send_rank") == 2, "%s: late sender of MPI_Isend %s" % (what, r))
    check_charge(r.get("late_send", 0), late[3][0], late[3][1], what + ": rank 2's MPI_Isend")
    r = row(doc, "MPI_Send from send_half", what)
    check_charge(r.get("late_send", 0), late[0][0] + late[2][0], late[0][1] + late[2][1],
                 what + ": the halves' MPI_Send (ranks 1 and 3)")
    if abs(late[0][0] - late[2][0]) > 0.1:
        want = 1 if late[0][0] > late[2][0] else 3
        check(r.get("late_send_rank") == want, "%s: the halves' late sender %s, expected %d"
              % (what, r.get("late_send_rank"), want))
    # MPI_Sendrecv: rank 1's receive waited for rank 0's send
    r = row(doc, "MPI_Sendrecv from sendrecv_pair", what)
    check(r.get("late_send_rank") == 0, "%s: late sender of MPI_Sendrecv %s" % (what, r))
    check_charge(r.get("late_send", 0), late["sendrecv"][0], late["sendrecv"][1],
                 what + ": rank 0's MPI_Sendrecv")
    # the halves' barriers: each half's wait for the member that entered last
    r = row(doc, "MPI_Barrier from barrier_half", what)
    truth, measured, most = 0.0, 0.0, {}
    for a, b in ((0, 1), (2, 3)):
        last, first = (a, b) if barrier[a][0] >= barrier[b][0] else (b, a)
        truth += barrier[last][0] - barrier[first][0]
        measured += barrier[first][1]
        most[last] = barrier[last][0] - barrier[first][0]
    check_charge(r.get("late", 0), truth, measured, what + ": the halves' MPI_Barrier")
    ranked = sorted(most.items(), key=lambda kv: -kv[1])
    if ranked[0][1] - ranked[1][1] > 0.1:
        check(r.get("late_rank") == ranked[0][0], "%s: the halves' late rank %s, expected %d"
              % (what, r.get("late_rank"), ranked[0][0]))
    # each rank's log names its half and the node's communicator (all four)
    ids, nodes = {}, set()
    for root, dirs, files in os.walk(exp):
        m = re.match(r"_r(\d+)\.tally$", os.path.basename(root))
        if m and "log" in files:
            notes = [f for _, f in log_records(root, "note") if f.get("name") == "mpi_comm"]
            check(len(notes) == 2 and notes[1].get("size") == "4", "%s: rank %s's node note %s"
                  % (what, m.group(1), notes))
            nodes.update(f.get("id") for f in notes[1:])
            check(len(notes) >= 1 and notes[0].get("size") == "2" and
                  notes[0].get("rank") == str(int(m.group(1)) % 2),
                  "%s: rank %s's mpi_comm notes %s" % (what, m.group(1), notes))
            if notes:
                ids[int(m.group(1))] = notes[0].get("id")
    check(len(ids) == 4 and ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2],
          "%s: the halves' ids %s" % (what, ids))
    check(len(nodes) == 1 and not nodes & set(ids.values()), "%s: the node's ids %s" % (what, nodes))
    return doc, ids


ran = []
for impl, cfg in IMPLS.items():
    if not all(shutil.which(t) for t in (cfg["cc"], cfg["run"][0])):
        continue
    d = workdir("mpi-late-" + impl)
    prog = os.path.join(d, "mpi_late")
    run([cfg["cc"], "-O2", "-g", "-o", prog, os.path.join(SRC, "tests/workloads/mpi_late.c")],
        expect=0)
    what = impl
    p = run([TALLY, "collect", "-M", "on", "-d", d, "-o", "late"] + cfg["run"] +
            ["-np", "4", prog], env=env, timeout=200)
    late, barrier = program_lines(p, what)
    doc, ids = check_job(os.path.join(d, "late.tally"), late, barrier, what)
    check(doc["hosts"] == 1 and doc["late_cross_host"] == 0,
          "%s: hosts %s, late across hosts %s" % (what, doc["hosts"], doc["late_cross_host"]))
    text = run([TALLY, "print", "-mpi_callsites", os.path.join(d, "late.tally")], expect=0).stdout
    check("Late send" in text and "clocks are not" not in text,
          "%s: -mpi_callsites text %s" % (what, text[:1500]))
    # the header's counts as the JSON's: the waits among the paired messages, the unpaired
    said = re.search(r"\((\d+) of (\d+) paired messages waited for a late sender; (\d+) left\s+"
                     r"unpaired\)", text)
    check(said is not None and [int(x) for x in said.groups()] ==
          [doc["late_sender_waits"], doc["messages_paired"], doc["messages_unpaired"]],
          "%s: -mpi_callsites' header does not say the waits, paired and unpaired messages "
          "(%s, %s, %s): %s" % (what, doc["late_sender_waits"], doc["messages_paired"],
                                doc["messages_unpaired"], text[:600]))
    text = run([TALLY, "print", "-mpi_timeline", os.path.join(d, "late.tally")], expect=0).stdout
    check("clocks are not" not in text, "%s: -mpi_timeline text %s" % (what, text[:1500]))

    # two hosts: ranks 0, 1 on hosta, 2, 3 on hostb, each rank under its own tally collect
    shim = os.path.join(d, "fakehost.so")
    with open(os.path.join(d, "fakehost.c"), "w") as f:
        f.write(SHIM)
    run(["cc", "-shared", "-fPIC", "-o", shim, os.path.join(d, "fakehost.c"), "-ldl"], expect=0)
    hd = os.path.join(d, "hosts")
    os.makedirs(hd)
    ctx = lambda h: ["-np", "2", "env", "LD_PRELOAD=" + shim, "TALLY_TEST_HOST=" + h, TALLY,
                     "collect", "-M", "on", "-d", hd, "-o", "hosts", prog]
    p = run(cfg["run"] + ctx("hosta") + [":"] + ctx("hostb"), env=env, timeout=200)
    what = impl + " on two hosts"
    late, barrier = program_lines(p, what)
    exp = os.path.join(hd, "hosts.tally")
    ranks = print_json(exp, "-rank_list")[0]["ranks"]
    check([(k["rank"], k["host"]) for k in ranks] ==
          [(0, "hosta"), (1, "hosta"), (2, "hostb"), (3, "hostb")],
          "%s: -rank_list hosts %s" % (what, [(k["rank"], k["host"]) for k in ranks]))
    doc, _ = check_job(exp, late, barrier, what)
    world = sum(r["late"] for r in doc["rows"] if r["name"].startswith("MPI_Barrier from main"))
    check(doc["hosts"] == 2 and world > 0 and abs(doc["late_cross_host"] - world) < 1e-6,
          "%s: hosts %s, late across hosts %s, the world barriers' late %s"
          % (what, doc["hosts"], doc["late_cross_host"], world))
    text = run([TALLY, "print", "-mpi_callsites", exp], expect=0).stdout
    check("the ranks ran on 2 hosts, whose clocks are not" in text.replace("\n", " "),
          "%s: no warning in -mpi_callsites: %s" % (what, text[:1500]))
    text = run([TALLY, "print", "-mpi_timeline", exp], expect=0).stdout
    check("the ranks ran on 2 hosts, whose clocks are not" in text.replace("\n", " ") and
          print_json(exp, "-mpi_timeline")[0].get("hosts") == 2,
          "%s: no warning in -mpi_timeline: %s" % (what, text[:1500]))
    # the Fortran binding (MPICH's calls its C functions, Open MPI's does not): one id per
    # communicator made, the same as C's
    if shutil.which(cfg["fc"]):
        what = impl + " Fortran"
        fprog = os.path.join(d, "mpi_split")
        run([cfg["fc"], "-O2", "-g", "-o", fprog,
             os.path.join(SRC, "tests/workloads/mpi_split.f90")], expect=0)
        p = run([TALLY, "collect", "-M", "on", "-d", d, "-o", "split"] + cfg["run"] +
                ["-np", "4", fprog], env=env, timeout=200)
        check(p.returncode == 0 and p.stdout.count("split done") == 4,
              "%s: %d %s %s" % (what, p.returncode, p.stdout, p.stderr[-2000:]))
        fexp = os.path.join(d, "split.tally")
        fids = {}
        for root, dirs, files in os.walk(fexp):
            m = re.match(r"_r(\d+)\.tally$", os.path.basename(root))
            if m and "log" in files:
                notes = [f for _, f in log_records(root, "note") if f.get("name") == "mpi_comm"]
                check(len(notes) == 1 and notes[0].get("size") == "2",
                      "%s: rank %s's notes %s" % (what, m.group(1), notes))
                fids[int(m.group(1))] = notes[0].get("id") if notes else None
        check(fids == ids, "%s: the halves' ids %s, from C %s" % (what, fids, ids))
        doc = print_json(fexp, "-mpi_callsites")[0]
        bar = row(doc, "mpi_barrier_ from", what)
        check(doc["late_collectives"] == 2 and doc["late_skipped"] == 0 and
              doc["unknown_communicator"] == 0 and bar.get("late", 0) > 0 and
              bar.get("late_rank") in (0, 2), "%s: collectives %s, left out %s, unknown %s, %s"
              % (what, doc["late_collectives"], doc["late_skipped"],
                 doc["unknown_communicator"], bar))
    ran.append(impl)
    if not failures:
        shutil.rmtree(d, ignore_errors=True)

print("ran under: %s" % ", ".join(ran))
if not ran:
    skip("no MPI implementation (mpicc.openmpi, mpicc.mpich and their mpirun) is installed")
done()
