/*
 * ctrmref.h - what a counter's sample says of its memory reference: the decision of the counters'
 * profiling handler (counters.c) between the hardware's own instruction and data address and
 * backtracking from the interrupted context (docs/ARCHITECTURE.md, dataspace).
 *
 * A counter's samples are of one kind:
 *  - CTRM_EXACT: the sample's IP is the memory-referencing instruction itself and its ADDR the
 *    address it referenced: page faults, Intel PEBS at precise_ip 2 or 3, AMD IBS op;
 *  - CTRM_AFTER: ADDR is the address, the IP the instruction after the reference: data
 *    breakpoints (a trap after the access), Intel PEBS at precise_ip 1 (the next IP);
 *  - CTRM_BACKTRACK: the IP is wherever the overflow interrupt landed (skid) and there is no
 *    address: every other counter.
 * The kernel writes ADDR 0 when it has none (an op that did not reference memory, an address the
 * hardware did not validate); a sample of the kernel (not the program's user mode) is backtracked
 * from the program's interrupted context.
 *
 * Contexts: pure, async-signal-safe (the profiling handler; tested in tests/unit/test_perfev.c).
 */
#ifndef TALLY_COLLECTOR_CTRMREF_H
#define TALLY_COLLECTOR_CTRMREF_H

#include <linux/perf_event.h>
#include <stdint.h>

#include "experiment/evformat.h"

enum ctrm_kind { CTRM_BACKTRACK = 0, CTRM_AFTER = 1, CTRM_EXACT = 2 };

/* The kind of a counter's samples: type and config its event's, ibs: an IBS op counter,
 * precise: the precise_ip it is opened with. */
static inline enum ctrm_kind ctrm_kind(uint32_t type, uint64_t config, int ibs, unsigned precise)
{
    int fault = type == PERF_TYPE_SOFTWARE && (config == PERF_COUNT_SW_PAGE_FAULTS ||
                                               config == PERF_COUNT_SW_PAGE_FAULTS_MIN ||
                                               config == PERF_COUNT_SW_PAGE_FAULTS_MAJ);
    if (fault || ibs || precise >= 2)
        return CTRM_EXACT;
    if (type == PERF_TYPE_BREAKPOINT || precise == 1)
        return CTRM_AFTER;
    return CTRM_BACKTRACK;
}

/* The MEMREF flags a sample takes with the sample's IP as its pc: EXP_MREF_EA and (CTRM_EXACT)
 * EXP_MREF_TRIGGER; or -1: backtrack from the interrupted context instead. user: the sample is
 * of user mode. addr: the sample's ADDR. */
static inline int ctrm_flags(enum ctrm_kind kind, int user, uint64_t addr)
{
    if (!user || kind == CTRM_BACKTRACK)
        return -1;
    if (kind == CTRM_EXACT)
        return (addr ? EXP_MREF_EA : 0) | EXP_MREF_TRIGGER;
    return addr ? EXP_MREF_EA : -1;
}

#endif
