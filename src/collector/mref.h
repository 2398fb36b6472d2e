/*
 * mref.h - the memory reference of a sample from the signal's ucontext (dataspace profiling,
 * docs/FORMAT.md MEMREF): the interrupted PC, the 16 general registers in the record's (DWARF)
 * numbering and the fs base, for the analyzer to backtrack from. Copies only: about 20 loads.
 * Shared by the sources that ask for dataspace data (clock.c; counters without a sampled address).
 *
 * AS-safe, inline, no state. Depends on: experiment/evformat.h. x86-64 only.
 */
#ifndef TALLY_COLLECTOR_MREF_H
#define TALLY_COLLECTOR_MREF_H

#include <ucontext.h>

#include "experiment/evformat.h"

static inline void mref_from_ucontext(const ucontext_t *uc, uint32_t source, exp_memref_t *m)
{
    /* DWARF register numbers of x86-64 -> the ucontext's */
    static const unsigned char greg[16] = { REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                            REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                            REG_R12, REG_R13, REG_R14, REG_R15 };
    m->source = source;
    m->flags = EXP_MREF_REGS;
    m->pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    m->ea = 0;
    m->reason = 0;
    m->regmask = (1u << EXP_MREF_NREGS) - 1;
    for (int r = 0; r < 16; r++)
        m->regs[r] = (uint64_t)uc->uc_mcontext.gregs[greg[r]];
    uint64_t fs;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(fs)); /* the TCB's self pointer: the fs base */
    m->regs[EXP_MREF_REG_FSBASE] = fs;
}

#endif
