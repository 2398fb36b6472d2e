#!/usr/bin/env python3
# gen_wrappers.py - writes the generated parts of tally's MPI tracing from functions.py:
#
#   tramp.S     libtally-mpi.so: for every traced name (C MPI_X, gfortran's mpi_x_, the mpi_f08
#               mpi_x_f08_ and MPICH's mpi_f08 mpi_x_f08ts_ of the functions with a choice buffer)
#               an
#               exported entry that jumps through a slot; the slots start at a stub that binds
#               them all on the first call (dispatch.c, tw_bind)
#   names.h     the names in slot order (dispatch.c)
#   wrappers.c  the wrappers of one MPI implementation (compiled once per implementation
#               against its mpi.h, with wrap_common.c): tallyw_entry(i) gives slot i's wrapper
#
# usage: gen_wrappers.py OUTDIR
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from functions import FUNCTIONS, waits  # noqa: E402

# roles whose C and Fortran wrappers are written by hand in wrap_common.c
HAND = {"start", "startall", "wait", "test", "waitall", "testall", "waitany", "testany",
        "waitsome", "testsome", "request_free"}


def parse(proto):
    m = re.match(r"\s*int\s+(\w+)\((.*)\)\s*$", proto)
    name, args = m.group(1), m.group(2).strip()
    out = []
    if args != "void":
        for a in args.split(","):
            a = a.strip()
            am = re.match(r"(.*?)(\w+)$", a)
            out.append((am.group(1).strip(), am.group(2)))
    return name, out


def fortran_nargs(name, args):
    if name == "MPI_Init":
        return 1
    if name == "MPI_Init_thread":
        return 3
    strings = sum(1 for t, _ in args if t in ("char *", "const char *"))
    return len(args) + 1 + strings


def fconv(t, a):
    """A C value of type t from the Fortran argument a (a pointer)."""
    if t == "int":
        return "(int)*(const MPI_Fint *)%s" % a
    if t == "MPI_Datatype":
        return "PMPI_Type_f2c(*(const MPI_Fint *)%s)" % a
    if t == "MPI_Comm":
        return "PMPI_Comm_f2c(*(const MPI_Fint *)%s)" % a
    if t in ("const int *", "int *"):
        return "(const int *)%s" % a
    if t in ("void *", "const void *"):
        return a
    return None


def has_buffer(args):
    """Does the function take a choice buffer (void *): MPICH's mpi_f08 binding of it is then
    mpi_x_f08ts_, whose buffers are Fortran array descriptors (CFI_cdesc_t *)."""
    return any(t in ("void *", "const void *") for t, _ in args)


# the Fortran bindings: (variant, suffix, slot base): mpif.h / use mpi, use mpi_f08 (Open MPI's
# for every function, MPICH's for those without a choice buffer), MPICH's use mpi_f08 of the
# functions with one (descriptors)
FVARIANTS = (("f", "_", 1), ("f08", "_f08_", 2), ("f08ts", "_f08ts_", 3))


def c_call_args(args):
    return ", ".join(n for _, n in args)


def metrics_code(role, name, get):
    """C statements adding the role's metrics to the record c; get(argname) -> C expression."""
    if role == "other":
        return "c.v[TW_OTHER] = 1;"
    if role == "abort":
        return "c.v[TW_OTHER] = 1;"
    if role == "init":
        return "c.v[TW_OTHER] = 1;"
    if role == "send":
        return ("if (rc == MPI_SUCCESS) tw_sent(&c, %s, %s, %s, %s, %s);\n        tw_p2p_or_other(&c);"
                % (get("count"), get("datatype"), get("dest"), get("tag"), get("comm")))
    if role == "send_init":
        return ("c.v[TW_OTHER] = 1;\n        if (rc == MPI_SUCCESS) tw_req_add(&c, %s, TW_REQ_SEND | TW_REQ_PERSISTENT, "
                "tw_bytes(%s, %s), %s, %s, %s);" % (get("*request"), get("count"), get("datatype"),
                                                    get("dest"), get("tag"), get("comm")))
    if role == "recv_init":
        return ("c.v[TW_OTHER] = 1;\n        if (rc == MPI_SUCCESS) tw_req_add(&c, %s, TW_REQ_RECV | TW_REQ_PERSISTENT, 0, "
                "%s, %s, %s);" % (get("*request"), get("source"), get("tag"), get("comm")))
    if role == "irecv":
        return ("c.v[TW_OTHER] = 1;\n        if (rc == MPI_SUCCESS) tw_req_add(&c, %s, TW_REQ_RECV | TW_REQ_ACTIVE, 0, %s, %s, %s);"
                % (get("*request"), get("source"), get("tag"), get("comm")))
    if role == "comm_new":
        return "c.v[TW_OTHER] = 1;"
    if role == "recv":
        return ("if (rc == MPI_SUCCESS) tw_received(&c, %s, %s);\n        tw_p2p_or_other(&c);"
                % (get("status"), get("comm")))
    if role == "sendrecv":
        return ("if (rc == MPI_SUCCESS) {\n            tw_sent(&c, %s, %s, %s, %s, %s);\n"
                "            tw_received(&c, %s, %s);\n        }\n        tw_p2p_or_other(&c);"
                % (get("sendcount"), get("sendtype"), get("dest"), get("sendtag"), get("comm"),
                   get("status"), get("comm")))
    if role == "sendrecv_replace":
        return ("if (rc == MPI_SUCCESS) {\n            tw_sent(&c, %s, %s, %s, %s, %s);\n"
                "            tw_received(&c, %s, %s);\n        }\n        tw_p2p_or_other(&c);"
                % (get("count"), get("datatype"), get("dest"), get("sendtag"), get("comm"),
                   get("status"), get("comm")))
    if role == "coll":
        return None  # per function, below
    raise SystemExit("unknown role " + role)


def comm_made(args, get):
    """The call of tw_comm_made for a comm_new function: (parent, new) from its first and last
    arguments."""
    return "if (rc == MPI_SUCCESS)\n            tw_comm_made(rc, %s, %s);" % (
        get(args[0][1]), get("*" + args[-1][1]))


def gen_c_rest(w, role, name, args, call, cget, i):
    if name == "MPI_Finalize":
        w("    tw_before_finalize();\n")
    w("    int rc = P%s(%s);\n" % (name, call))
    if role == "comm_new":
        w("    %s\n" % comm_made(args, cget))
    w("    int tw_saved = errno;\n")
    if role == "coll":
        w("    c.v[TW_OTHER] = 1;\n    if (rc == MPI_SUCCESS)\n        tw_coll_%s(&c, %s);\n"
          % (name[4:], call))
    else:
        w("    {\n        %s\n    }\n" % metrics_code(role, name, cget))
    if role == "init":
        w("    tw_after_init();\n")
    w("    TW_EMIT(&c, TW_PUBLIC(%d));\n" % i)
    w("    tw_leave(&c);\n    errno = tw_saved;\n    return rc;\n}\n\n")



def gen(outdir):
    from functions import WAIT
    unknown = WAIT - {parse(proto)[0] for proto, _ in FUNCTIONS}
    if unknown:
        raise SystemExit("functions.py: WAIT names untraced functions: %s" % sorted(unknown))
    names = []  # (symbol, index of function, is_fortran)
    for i, (proto, role) in enumerate(FUNCTIONS):
        name, _ = parse(proto)
        names.append((name, i, False))
    for _, suffix, _ in FVARIANTS:
        for i, (proto, role) in enumerate(FUNCTIONS):
            name, _ = parse(proto)
            names.append((name.lower() + suffix, i, True))

    with open(os.path.join(outdir, "names.h"), "w") as f:
        f.write("/* generated by src/mpi/gen_wrappers.py from functions.py: do not edit */\n")
        f.write("#define TW_NSLOTS %d\n#define TW_NFUNCS %d\n" % (len(names), len(FUNCTIONS)))
        f.write("static const char *const tw_slot_names[TW_NSLOTS] = {\n")
        for s, _, _ in names:
            f.write('    "%s",\n' % s)
        f.write("};\n")

    with open(os.path.join(outdir, "slots.h"), "w") as f:
        f.write("/* generated by src/mpi/gen_wrappers.py from functions.py: do not edit */\n")
        f.write("#define TW_NFUNCS %d\n" % len(FUNCTIONS))
        for i, (proto, role) in enumerate(FUNCTIONS):
            name, _ = parse(proto)
            f.write("#define TW_SLOT_%s %d\n" % (name, i))

    with open(os.path.join(outdir, "tramp.S"), "w") as f:
        f.write("/* generated by src/mpi/gen_wrappers.py from functions.py: do not edit */\n")
        f.write("    .section .note.GNU-stack,\"\",@progbits\n")
        f.write("    .data\n    .balign 8\n    .globl tw_slots\n    .hidden tw_slots\ntw_slots:\n")
        for k in range(len(names)):
            f.write("    .quad tw_lazy_%d\n" % k)
        f.write("    .globl tw_public\n    .hidden tw_public\ntw_public:\n")
        for s, _, _ in names:
            f.write("    .quad %s\n" % s)
        f.write("    .text\n")
        for k, (s, _, _) in enumerate(names):
            f.write("    .globl %s\n    .type %s,@function\n    .balign 16\n%s:\n" % (s, s, s))
            f.write("    jmp *tw_slots+%d(%%rip)\n    .size %s,.-%s\n" % (8 * k, s, s))
            f.write("tw_lazy_%d:\n    pushq $%d\n    jmp tw_lazy_common\n" % (k, k))
        f.write("""    .balign 16
tw_lazy_common:
    pushq %rdi
    pushq %rsi
    pushq %rdx
    pushq %rcx
    pushq %r8
    pushq %r9
    movq 48(%rsp), %rdi
    call tw_bind
    popq %r9
    popq %r8
    popq %rcx
    popq %rdx
    popq %rsi
    popq %rdi
    popq %r11
    leaq tw_slots(%rip), %rax
    jmp *(%rax,%r11,8)
""")

    with open(os.path.join(outdir, "wrappers.c"), "w") as f:
        w = f.write
        w("/* generated by src/mpi/gen_wrappers.py from functions.py: do not edit */\n")
        w('#include "wrap.h"\n\n')
        for i, (proto, role) in enumerate(FUNCTIONS):
            name, _ = parse(proto)
            if role in HAND:
                w("int tallyw_%s();\nvoid tallyw_f_%s_();\nvoid tallyw_f08_%s_f08_();\n"
                  % (name, name.lower(), name.lower()))
        w("\n")
        for i, (proto, role) in enumerate(FUNCTIONS):
            name, args = parse(proto)
            if role in HAND:
                continue
            params = ", ".join("%s %s" % (t, n) for t, n in args) or "void"
            call = c_call_args(args)

            def cget(a):
                if a.startswith("*"):
                    return "*" + a[1:]
                return a

            # ---- C ----
            w("TW_WRAPPER int tallyw_%s(%s)\n{\n" % (name, params))
            w("    tw_call_t c;\n")
            state = "TW_WAIT" if waits(name, role) else "TW_WORK"
            if role == "comm_new":
                w("    if (!tw_begin(&c, %s)) {\n        int rc = P%s(%s);\n        %s\n"
                  "        return rc;\n    }\n" % (state, name, call, comm_made(args, cget)))
            else:
                w("    if (!tw_begin(&c, %s))\n        return P%s(%s);\n" % (state, name, call))
            if role == "recv" or role.startswith("sendrecv"):
                w("    MPI_Status tw_st;\n    if (status == MPI_STATUS_IGNORE)\n        status = &tw_st;\n")
            if role == "abort":
                w("    c.v[TW_OTHER] = 1;\n    TW_EMIT(&c, TW_PUBLIC(%d));\n" % i)
                w("    int rc = P%s(%s);\n    tw_leave(&c);\n    return rc;\n}\n\n" % (name, call))
            else:
                gen_c_rest(w, role, name, args, call, cget, i)


            # ---- Fortran: mpif.h / use mpi (mpi_x_), use mpi_f08 (mpi_x_f08_: the same
            # arguments, but ierror is optional) and MPICH's mpi_x_f08ts_ (a choice buffer is
            # a CFI_cdesc_t *: passed on as it is, its base address for the collectives' bytes) ----
            for var, suffix, base in FVARIANTS:
                if var == "f08ts" and not has_buffer(args):
                    continue
                # gfortran: lower case, one underscore; every argument by reference, then the
                # hidden lengths of character arguments
                nf = fortran_nargs(name, args)
                fparams = ", ".join("void *a%d" % k for k in range(nf))
                fcall = ", ".join("a%d" % k for k in range(nf))
                fname = name.lower() + suffix
                ierr = "a%d" % (nf - 1 - sum(1 for t, _ in args if t in ("char *", "const char *"))) \
                    if name not in ("MPI_Init", "MPI_Init_thread") else "a%d" % (nf - 1)
                w("typedef void (*tw_f_%s_t)(%s);\n" % (fname, fparams))
                w("TW_WRAPPER void tallyw_%s_%s(%s)\n{\n" % (var, fname, fparams))
                w("    static tw_f_%s_t real;\n" % fname)
                w("    if (!real)\n        real = (tw_f_%s_t)tw_fortran_real(\"p%s\");\n" % (fname, fname))
                w("    MPI_Fint tw_ierr_own = MPI_SUCCESS;\n    if (!%s)\n        %s = &tw_ierr_own;\n"
                  % (ierr, ierr))
                w("    tw_call_t c;\n")
                pos = {n: k for k, (_, n) in enumerate(args)}
                if role == "comm_new":
                    # the C wrapper the binding may call leaves the new communicator to us
                    fcm = "if (*(const MPI_Fint *)%s == MPI_SUCCESS)\n" \
                          "        tw_comm_made(MPI_SUCCESS, PMPI_Comm_f2c(*(const MPI_Fint *)a0), " \
                          "PMPI_Comm_f2c(*(const MPI_Fint *)a%d));" % (ierr, pos[args[-1][1]])
                    w("    if (!tw_begin(&c, %s)) {\n        tw_comm_nest++;\n        real(%s);\n"
                      "        tw_comm_nest--;\n        %s\n        return;\n    }\n"
                      % (state, fcall, fcm))
                else:
                    w("    if (!tw_begin(&c, %s)) {\n        real(%s);\n        return;\n    }\n"
                      % (state, fcall))

                def fget(a, pos=pos, args=args):
                    deref = a.startswith("*")
                    a = a.lstrip("*")
                    k = pos[a]
                    t = args[k][0]
                    if deref and t == "MPI_Request *":
                        return "PMPI_Request_f2c(*(const MPI_Fint *)a%d)" % k
                    if t == "MPI_Status *":
                        return "tw_fst"
                    e = fconv(t, "a%d" % k)
                    if e is None:
                        raise SystemExit("%s: no Fortran conversion of %s" % (name, t))
                    return e

                if role == "recv" or role.startswith("sendrecv"):
                    k = pos["status"]
                    w("    MPI_Fint tw_fbuf[TW_F_STATUS_INTS];\n")
                    w("    if (TW_F_STATUS_IGNORED(a%d))\n        a%d = tw_fbuf;\n" % (k, k))
                if role == "abort":
                    w("    c.v[TW_OTHER] = 1;\n    TW_EMIT(&c, TW_PUBLIC(%d));\n" % (i + base * len(FUNCTIONS)))
                    w("    real(%s);\n    tw_leave(&c);\n}\n\n" % fcall)
                    continue
                if name == "MPI_Finalize":
                    w("    tw_before_finalize();\n")
                if role == "comm_new":
                    w("    tw_comm_nest++;\n    real(%s);\n    tw_comm_nest--;\n    %s\n"
                      % (fcall, fcm))
                else:
                    w("    real(%s);\n" % fcall)
                w("    int tw_saved = errno;\n")
                w("    int rc = *(const MPI_Fint *)%s;\n    (void)rc;\n" % ierr)
                if role == "recv" or role.startswith("sendrecv"):
                    w("    MPI_Status tw_fst_v, *tw_fst = &tw_fst_v;\n")
                    w("    if (rc == MPI_SUCCESS)\n        PMPI_Status_f2c((MPI_Fint *)a%d, tw_fst);\n"
                      % pos["status"])
                if role == "coll":
                    conv = []
                    ok = True
                    for k, (t, n) in enumerate(args):
                        e = fconv(t, "a%d" % k)
                        if var == "f08ts" and t in ("void *", "const void *"):
                            e = "tw_cdesc_addr(a%d)" % k
                        if e is None:
                            if t == "MPI_Op":
                                e = "MPI_OP_NULL"
                            else:
                                ok = False
                                break
                        conv.append(e)
                    w("    c.v[TW_OTHER] = 1;\n")
                    if ok:
                        w("    if (rc == MPI_SUCCESS)\n        tw_coll_%s(&c, %s);\n"
                          % (name[4:], ", ".join(conv)))
                else:
                    w("    {\n        %s\n    }\n" % metrics_code(role, name, fget))
                if role == "init":
                    w("    tw_after_init();\n")
                w("    TW_EMIT(&c, TW_PUBLIC(%d));\n" % (i + base * len(FUNCTIONS)))
                w("    tw_leave(&c);\n    errno = tw_saved;\n}\n\n")

        # the table: slot -> wrapper
        w("void *tw_entry_generated(unsigned slot)\n{\n    switch (slot) {\n")
        for i, (proto, role) in enumerate(FUNCTIONS):
            name, _ = parse(proto)
            w("    case %d: return (void *)tallyw_%s;\n" % (i, name))
            for var, suffix, base in FVARIANTS:
                if var == "f08ts" and (role in HAND or not has_buffer(parse(proto)[1])):
                    continue
                fname = name.lower() + suffix
                w("    case %d: return tw_fortran_real(\"p%s\") ? (void *)tallyw_%s_%s : NULL;\n"
                  % (i + base * len(FUNCTIONS), fname, var, fname))
        w("    }\n    return NULL;\n}\n")


if __name__ == "__main__":
    gen(sys.argv[1])
