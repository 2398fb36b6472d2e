/*
 * blockstacks.h - the call paths of profiled blocks (spec 004) as stacks for the metric engine,
 * which makes blocks an object kind of their own (ENG_KIND_BLOCK): each node of a thread's tree
 * of call paths (the `block-paths` records, docs/FORMAT.md) is one stack of block frames whose
 * vector is that path's calls and exclusive quantities. The engine's rules then give each block
 * its exclusive and inclusive quantities, its callers and callees and the call tree, exactly as
 * the collector measured them (a path's inclusive is its exclusive plus its children's
 * inclusive; a block recurring on a path counts once in its inclusive, as in the collector).
 *
 * Blocks are named across threads, processes and experiments by name (ids 0..nnames-1 in order
 * of first appearance); quantities are the union by name of every process's `block_metrics`
 * ("wall" when empty), in order of first appearance.
 *
 * Depends on the experiment reader only. Pure: no printing. Ownership: the set owns its arrays;
 * block names point into the experiments' logs (valid while they are open). Records that do not
 * parse are skipped (report_blocks.c, which reads the same records, names them to the user).
 * Not thread-safe. Errors: TALLY_ENOMEM.
 */
#ifndef TALLY_ANALYZER_BLOCKSTACKS_H
#define TALLY_ANALYZER_BLOCKSTACKS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "experiment/reader.h"

#define BSTK_QMAX 8   /* quantities of one process (wall, cpu, counters) */
#define BSTK_QNAME 64 /* a quantity's name, NUL included */

/* One node of a thread's tree of call paths. */
typedef struct bstk_stack {
    uint32_t exp, proc, tid;
    uint32_t block;  /* the leaf block's id (a name) */
    uint32_t depth;  /* frames: 1 for a path of one block */
    long parent;     /* index of the path without its leaf in the set's stacks, -1: none */
    uint64_t calls;  /* instances of the leaf block entered along this path */
    uint64_t excl[BSTK_QMAX]; /* by the set's quantity index */
} bstk_stack_t;

typedef struct bstk {
    unsigned nq;
    char qname[BSTK_QMAX][BSTK_QNAME]; /* "wall", "cpu", "page-faults", ... */
    const char **names;                /* by block id */
    size_t nnames;
    bstk_stack_t *stacks; /* each thread's paths, a parent before its children */
    size_t nstacks;
    int any;              /* some process recorded blocks (declared a block) */
} bstk_t;

/* Reads every process of exps. *out is allocated (bstk_free). */
int bstk_build(exp_experiment_t *const *exps, size_t nexps, bstk_t **out, tally_err_t *err);
void bstk_free(bstk_t *b);

/* The frames of stack s, leaf first, into ids (room for b->stacks[s].depth). */
void bstk_frames(const bstk_t *b, size_t s, uint32_t *ids);

/* The quantities of a `block_metrics` setting ("" is "wall"), in order, into names (at most max,
 * each cut to BSTK_QNAME - 1 characters); returns how many. */
unsigned bstk_quantities(const char *setting, char names[][BSTK_QNAME], unsigned max);

/* Parses "a,b,c;d,e,f" (the rows of the block records) into rows of exactly width numbers (at
 * most 64): calls each(ctx, nums) per row. Returns 0, or -1 on a malformed row or when each
 * returns non-zero. */
int bstk_parse_rows(const char *s, unsigned width, int (*each)(void *, const uint64_t *),
                    void *ctx);

#endif
