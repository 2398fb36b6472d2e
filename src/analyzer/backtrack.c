/*
 * backtrack.c - from a sample's PC to its trigger instruction and effective address; see
 * backtrack.h. Sections: registers, decoding a function, the search, the address.
 */
#include "analyzer/backtrack.h"

#include <stdlib.h>
#include <string.h>

/* ---- registers ------------------------------------------------------------------------------ */

int bt_dwarf_reg(unsigned r)
{
    switch (r) {
    case X86_REG_RAX: case X86_REG_EAX: case X86_REG_AX: case X86_REG_AH: case X86_REG_AL:
        return 0;
    case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DH: case X86_REG_DL:
        return 1;
    case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CH: case X86_REG_CL:
        return 2;
    case X86_REG_RBX: case X86_REG_EBX: case X86_REG_BX: case X86_REG_BH: case X86_REG_BL:
        return 3;
    case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL:
        return 4;
    case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL:
        return 5;
    case X86_REG_RBP: case X86_REG_EBP: case X86_REG_BP: case X86_REG_BPL:
        return 6;
    case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL:
        return 7;
    case X86_REG_R8: case X86_REG_R8D: case X86_REG_R8W: case X86_REG_R8B: return 8;
    case X86_REG_R9: case X86_REG_R9D: case X86_REG_R9W: case X86_REG_R9B: return 9;
    case X86_REG_R10: case X86_REG_R10D: case X86_REG_R10W: case X86_REG_R10B: return 10;
    case X86_REG_R11: case X86_REG_R11D: case X86_REG_R11W: case X86_REG_R11B: return 11;
    case X86_REG_R12: case X86_REG_R12D: case X86_REG_R12W: case X86_REG_R12B: return 12;
    case X86_REG_R13: case X86_REG_R13D: case X86_REG_R13W: case X86_REG_R13B: return 13;
    case X86_REG_R14: case X86_REG_R14D: case X86_REG_R14W: case X86_REG_R14B: return 14;
    case X86_REG_R15: case X86_REG_R15D: case X86_REG_R15W: case X86_REG_R15B: return 15;
    case X86_REG_RIP: return BT_REG_RIP;
    default:
        return -1;
    }
}

/* Is r a full 64-bit general register (not a part of one)? */
static int is_reg64(unsigned r)
{
    switch (r) {
    case X86_REG_RAX: case X86_REG_RDX: case X86_REG_RCX: case X86_REG_RBX: case X86_REG_RSI:
    case X86_REG_RDI: case X86_REG_RBP: case X86_REG_RSP: case X86_REG_R8: case X86_REG_R9:
    case X86_REG_R10: case X86_REG_R11: case X86_REG_R12: case X86_REG_R13: case X86_REG_R14:
    case X86_REG_R15:
        return 1;
    default:
        return 0;
    }
}

/* ---- decoding a function -------------------------------------------------------------------- */

int bt_open(csh *cs)
{
    if (cs_open(CS_ARCH_X86, CS_MODE_64, cs) != CS_ERR_OK)
        return -1;
    cs_option(*cs, CS_OPT_DETAIL, CS_OPT_ON);
    return 0;
}

/* The index of the instruction at addr, or -1. */
static long insn_at(const bt_func_t *f, uint64_t addr)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->insn[mid].address < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->n && f->insn[lo].address == addr ? (long)lo : -1;
}

static int is_branch(csh cs, const cs_insn *in)
{
    return cs_insn_group(cs, in, CS_GRP_JUMP) || cs_insn_group(cs, in, CS_GRP_CALL) ||
           cs_insn_group(cs, in, CS_GRP_RET) || cs_insn_group(cs, in, CS_GRP_IRET) ||
           cs_insn_group(cs, in, CS_GRP_INT) || in->id == X86_INS_SYSCALL ||
           in->id == X86_INS_SYSENTER;
}

int bt_func_decode(csh cs, const uint8_t *code, size_t len, uint64_t lo, bt_func_t *f)
{
    memset(f, 0, sizeof *f);
    f->n = cs_disasm(cs, code, len, lo, 0, &f->insn);
    if (!f->n)
        return 0;
    f->target = calloc(f->n, 1);
    if (!f->target) {
        cs_free(f->insn, f->n);
        memset(f, 0, sizeof *f);
        return -1;
    }
    for (size_t i = 0; i < f->n; i++) {
        const cs_insn *in = &f->insn[i];
        if (!in->detail || !(cs_insn_group(cs, in, CS_GRP_JUMP) || cs_insn_group(cs, in, CS_GRP_CALL)))
            continue;
        const cs_x86 *x = &in->detail->x86;
        if (x->op_count >= 1 && x->operands[0].type == X86_OP_IMM) {
            long t = insn_at(f, (uint64_t)x->operands[0].imm);
            if (t >= 0)
                f->target[t] = 1;
        }
    }
    return 0;
}

void bt_func_free(bt_func_t *f)
{
    if (f->insn)
        cs_free(f->insn, f->n);
    free(f->target);
    memset(f, 0, sizeof *f);
}

/* ---- the search ------------------------------------------------------------------------------ */

/* The instruction's memory operand into *op when it references memory (lea and nop do not). */
static int memory_operand(const cs_insn *in, bt_operand_t *op)
{
    if (!in->detail || in->id == X86_INS_LEA || in->id == X86_INS_NOP)
        return 0;
    const cs_x86 *x = &in->detail->x86;
    for (int i = 0; i < x->op_count; i++) {
        const cs_x86_op *o = &x->operands[i];
        if (o->type != X86_OP_MEM)
            continue;
        memset(op, 0, sizeof *op);
        op->base = o->mem.base == X86_REG_INVALID ? BT_REG_NONE : bt_dwarf_reg(o->mem.base);
        op->index = o->mem.index == X86_REG_INVALID ? BT_REG_NONE : bt_dwarf_reg(o->mem.index);
        if ((o->mem.base != X86_REG_INVALID && op->base < 0) ||
            (o->mem.index != X86_REG_INVALID && (op->index < 0 || op->index == BT_REG_RIP)))
            return 0; /* an address in registers we do not know (32-bit forms are the same) */
        op->scale = o->mem.scale;
        op->disp = o->mem.disp;
        op->fs = o->mem.segment == X86_REG_FS;
        op->gs = o->mem.segment == X86_REG_GS;
        op->size = o->size;
        op->write = (o->access & CS_AC_WRITE) != 0;
        return 1;
    }
    return 0;
}

/* ---- the address ---------------------------------------------------------------------------- */

/* What instruction in did to register reg (DWARF number): 0 nothing, 1 added *delta to it,
 * 2 changed it in a way that cannot be undone. */
static int effect_on(csh cs, const cs_insn *in, int reg, int64_t *delta)
{
    cs_regs rd, wr;
    uint8_t nrd = 0, nwr = 0;
    if (cs_regs_access(cs, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
        return 2;
    int written = 0;
    for (int i = 0; i < nwr; i++)
        if (bt_dwarf_reg(wr[i]) == reg)
            written = 1;
    if (!written)
        return 0;
    const cs_x86 *x = &in->detail->x86;
    const cs_x86_op *o = x->operands;
    if ((in->id == X86_INS_ADD || in->id == X86_INS_SUB) && x->op_count == 2 &&
        o[0].type == X86_OP_REG && is_reg64(o[0].reg) && bt_dwarf_reg(o[0].reg) == reg &&
        o[1].type == X86_OP_IMM) {
        *delta = in->id == X86_INS_ADD ? o[1].imm : -o[1].imm;
        return 1;
    }
    if ((in->id == X86_INS_INC || in->id == X86_INS_DEC) && x->op_count == 1 &&
        o[0].type == X86_OP_REG && is_reg64(o[0].reg)) {
        *delta = in->id == X86_INS_INC ? 1 : -1;
        return 1;
    }
    if (in->id == X86_INS_LEA && x->op_count == 2 && o[0].type == X86_OP_REG &&
        is_reg64(o[0].reg) && o[1].type == X86_OP_MEM && o[1].mem.index == X86_REG_INVALID &&
        o[1].mem.segment == X86_REG_INVALID && bt_dwarf_reg(o[1].mem.base) == reg) {
        *delta = o[1].mem.disp;
        return 1;
    }
    if (reg == 7 && (in->id == X86_INS_PUSH || in->id == X86_INS_POP)) {
        int other = 0; /* pop %rsp changes rsp otherwise */
        if (in->id == X86_INS_POP && x->op_count == 1 && o[0].type == X86_OP_REG &&
            bt_dwarf_reg(o[0].reg) == 7)
            other = 1;
        if (!other) {
            *delta = in->id == X86_INS_PUSH ? -8 : 8;
            return 1;
        }
    }
    return 2;
}

/* The value register reg had at the trigger (insn[t]), from its value at the PC (insn[p]):
 * undoes what insn[t..p) did (nothing when t == p).
 * 0 and *v, or the reason it cannot. */
static int value_at_trigger(csh cs, const bt_func_t *f, long t, long p, int reg,
                            const uint64_t *regs, uint32_t regmask, uint64_t *v)
{
    if (reg < 0 || reg >= 16 || !(regmask >> reg & 1))
        return EXP_DUNK_NO_VA;
    uint64_t val = regs[reg];
    for (long k = p - 1; k >= t; k--) {
        int64_t d = 0;
        int e = effect_on(cs, &f->insn[k], reg, &d);
        if (e == 2)
            return EXP_DUNK_REG_CHANGED;
        val -= (uint64_t)d;
    }
    *v = val;
    return 0;
}

static void compute_ea(csh cs, const bt_func_t *f, long t, long p, const uint64_t *regs,
                       uint32_t regmask, bt_result_t *out)
{
    const bt_operand_t *op = &out->op;
    const cs_insn *in = &f->insn[t];
    if (op->base == BT_REG_RIP && op->index == BT_REG_NONE && !op->fs && !op->gs) {
        out->ea_static = 1;
        out->ea_elf = in->address + in->size + (uint64_t)op->disp;
    }
    uint64_t ea = (uint64_t)op->disp, b = 0, x = 0;
    int why = 0;
    if (op->base == BT_REG_RIP) {
        out->ea_reason = EXP_DUNK_NO_VA; /* needs the load bias: the caller adds it */
        return;
    }
    if (op->base != BT_REG_NONE && (why = value_at_trigger(cs, f, t, p, op->base, regs, regmask, &b))) {
        out->ea_reason = why;
        return;
    }
    if (op->index != BT_REG_NONE &&
        (why = value_at_trigger(cs, f, t, p, op->index, regs, regmask, &x))) {
        out->ea_reason = why;
        return;
    }
    if (op->gs) {
        out->ea_reason = EXP_DUNK_NO_VA;
        return;
    }
    if (op->fs) {
        if (!(regmask >> EXP_MREF_REG_FSBASE & 1)) {
            out->ea_reason = EXP_DUNK_NO_VA;
            return;
        }
        ea += regs[EXP_MREF_REG_FSBASE];
    }
    ea += b + x * (uint64_t)op->scale;
    out->ea = ea;
    out->ea_ok = 1;
    if (op->base != BT_REG_NONE) {
        out->base_value = b;
        out->base_ok = 1;
    }
}

void bt_find(csh cs, const bt_func_t *f, uint64_t pc, int mode, const uint64_t *regs,
             uint32_t regmask, bt_result_t *out)
{
    memset(out, 0, sizeof *out);
    long p = insn_at(f, pc);
    if (p < 0) {
        out->reason = EXP_DUNK_BAD_TARGET;
        return;
    }
    long t = -1;
    if (mode == BT_EXACT || mode == BT_AT_PC) {
        if (memory_operand(&f->insn[p], &out->op))
            t = p;
        else if (mode == BT_EXACT) {
            out->reason = EXP_DUNK_NOT_MEMREF;
            return;
        }
    }
    for (long k = p - 1; t < 0; k--) {
        if (k < 0 || p - k > BT_MAX_INSNS) {
            out->reason = EXP_DUNK_OUT_OF_RANGE;
            return;
        }
        if (f->target[k + 1]) { /* stepping back from k+1 to k: control may not have come so */
            out->reason = EXP_DUNK_BRANCH_TARGET;
            return;
        }
        if (is_branch(cs, &f->insn[k])) {
            out->reason = EXP_DUNK_JUMP_CALL;
            return;
        }
        if (memory_operand(&f->insn[k], &out->op))
            t = k;
    }
    out->trigger = f->insn[t].address;
    out->distance = (uint32_t)(p - t);
    /* a trigger before the PC executed (its own writes count); the interrupted instruction of
     * a clock sample did not, so the registers are its own */
    compute_ea(cs, f, t, p, regs, regmask, out);
}
