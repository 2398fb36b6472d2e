/*
 * selfexp.h - synthetic experiments for unit tests of the analysis: one process whose one load
 * object is the test program itself, so stacks can be made of the PCs of the test's own functions
 * and the symbol reader finds their names, lines and inlined code in the test's own DWARF.
 *
 * selfexp_write creates dir (which must not exist) with a log (start, settings with a 1 ms clock,
 * the load record of the test program, end) and an events file with one clock sample per stack,
 * of the given weight in ns, in the order given. PCs are leaf first. Fails the test on error.
 */
#ifndef TALLY_TEST_SELFEXP_H
#define TALLY_TEST_SELFEXP_H

#include <stdint.h>

typedef struct selfexp_stack {
    uint64_t pcs[8];
    uint32_t n;
    uint64_t weight;
} selfexp_stack_t;

void selfexp_write(const char *dir, const selfexp_stack_t *stacks, unsigned nstacks);
/* A PC inside f past its entry, as a return address would be. */
uint64_t selfexp_pc_in(void *f);
/* rm -rf dir; returns system()'s status. */
int selfexp_remove(const char *dir);

#endif
