/*
 * backtrack.h - from the PC of a sample to the memory-referencing instruction behind it (the
 * trigger) and its effective address, on x86-64 code (seed 001/003's backtracking, docs/FORMAT.md
 * MEMREF).
 *
 * The caller gives the code of the function around the PC (its bytes and ELF address: the
 * function is decoded from its start, so instruction boundaries and the branch targets inside it
 * are known), the PC, how the PC relates to the trigger, and the registers recorded with the
 * sample. The search walks back instruction by instruction from the PC, at most BT_MAX_INSNS:
 *
 *   BT_AT_PC      a clock sample: the interrupted instruction itself, when it references memory
 *                 (it has not executed: it is where the thread waited), else backtrack from it
 *   BT_BEFORE_PC  skid: the trigger executed before the PC (counter overflows, data breakpoints)
 *   BT_EXACT      the PC is the trigger (precise events): no search
 *
 * and stops, with seed 002's reason (EXP_DUNK_*), at an instruction it cannot step over: a jump,
 * call or return (7), a branch target it would have to step back through (3: control may have
 * come from elsewhere), the range (8); bytes that do not decode, or a PC that is not an
 * instruction boundary, are 2 (no valid branch target). lea and nop name memory operands without
 * referencing memory and are not triggers.
 *
 * The effective address is computed from the recorded registers when each register the operand
 * uses holds, at the PC, what it held at the trigger: unchanged in between, or changed only by
 * adding or subtracting a constant (add, sub, inc, dec, lea k(r), r), which is undone. Otherwise
 * the address is unknown (ea_reason 9, a register changed after the trigger; 10 when a register
 * it needs was not recorded) while the trigger and its operand are still known: the data object
 * can still be named from the type of the variable in the base register. RIP-relative operands
 * need no register and give the ELF address (ea_elf).
 *
 * Pure: no I/O, no globals; the caller owns the capstone handle (x86-64, detail on) and every
 * buffer. Not thread-safe per handle.
 *
 * Depends on: capstone, experiment/evformat.h (the reasons and register numbers).
 */
#ifndef TALLY_ANALYZER_BACKTRACK_H
#define TALLY_ANALYZER_BACKTRACK_H

#include <capstone/capstone.h>
#include <stddef.h>
#include <stdint.h>

#include "experiment/evformat.h"

#define BT_MAX_INSNS 16 /* instructions searched back from the PC */
#define BT_REG_NONE (-1)
#define BT_REG_RIP 32 /* a RIP-relative operand's base */

enum bt_mode { BT_AT_PC = 0, BT_BEFORE_PC = 1, BT_EXACT = 2 };

/* A memory operand: base + index * scale + disp, in DWARF register numbers. */
typedef struct bt_operand {
    int base, index; /* BT_REG_NONE, 0..15, BT_REG_RIP (base only) */
    int scale;
    int64_t disp;
    int fs, gs;     /* segment override (fs: thread-local storage) */
    uint32_t size;  /* bytes accessed */
    int write;      /* the instruction writes the operand */
} bt_operand_t;

typedef struct bt_result {
    int reason;          /* 0: the trigger was found; else EXP_DUNK_* and nothing else is valid */
    uint64_t trigger;    /* its ELF address */
    uint32_t distance;   /* instructions between it and the PC (0: the PC itself) */
    bt_operand_t op;
    int ea_ok;           /* ea: the run-time effective address */
    uint64_t ea;
    int ea_reason;       /* !ea_ok: EXP_DUNK_REG_CHANGED, EXP_DUNK_NO_VA */
    int ea_static;       /* RIP-relative: ea_elf is the ELF address it references */
    uint64_t ea_elf;
    uint64_t base_value; /* ea_ok and op.base a register: its value at the trigger */
    int base_ok;
} bt_result_t;

/* A function decoded once for many samples: its instructions as far as they decode, and which
 * are targets of a branch inside it. */
typedef struct bt_func {
    cs_insn *insn;
    size_t n;
    uint8_t *target; /* [n]: 1 when a jump or call inside the function goes there */
} bt_func_t;

/* Opens the capstone handle backtracking needs; 0 or -1. */
int bt_open(csh *cs);
/* Decodes code[0..len), the function at ELF address lo, into f (bt_func_free frees). 0, or -1
 * when out of memory (f is then empty). A function that does not decode has n 0. */
int bt_func_decode(csh cs, const uint8_t *code, size_t len, uint64_t lo, bt_func_t *f);
void bt_func_free(bt_func_t *f);

/* Backtracks from ELF address pc of f. regs and regmask: the recorded registers (EXP_MREF_*
 * numbering; regmask 0: none). The result is in *out (out->reason). */
void bt_find(csh cs, const bt_func_t *f, uint64_t pc, int mode, const uint64_t *regs,
             uint32_t regmask, bt_result_t *out);

/* The DWARF number of a capstone x86 register (any width: eax and al are rax, 0), or -1. */
int bt_dwarf_reg(unsigned csreg);

#endif
