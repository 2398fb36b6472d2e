/*
 * blockstat.h - the statistics of profiled blocks of one thread (spec 004, performance
 * callstacks): the thread's stack of active block instances, each block's calls, subrs,
 * exclusive and inclusive quantities over all its instances, the tree of call paths of blocks,
 * and the performance callstack at a monitor point (instance exclusive and inclusive since each
 * instance started).
 *
 * Pure: the quantities are given by the caller at every entry and exit (`now`: one value per
 * quantity, e.g. wall-clock ns and thread CPU ns), so a unit test drives it with a virtual clock.
 * Memory grows with mmap/mremap (no malloc: the collector calls this from interposed code).
 *
 * Definitions (spec 004):
 *   calls  instances entered, including the ones on the stack now;
 *   subrs  profiled blocks entered directly from an instance of this block;
 *   excl   time in instances of the block less the time in the profiled blocks they called;
 *   incl   time in instances of the block; an instance inside another instance of the same block
 *          (recursion) is not added again, so incl is the time the block was on the stack;
 *   instance excl / incl of an instance on the stack: the same, for that instance since it started.
 * A block that is not active (never entered: disabled) is absent, and its time is in the
 * exclusive time of the enclosing active block. At a monitor point or at the end of the thread,
 * the statistics are those the thread would have if every open instance ended now.
 *
 * Exits that do not match the innermost instance: an exit of a block deeper on the stack ends
 * the instances above it too (a longjmp, an exception, a missing stop; counted in `unmatched`);
 * an exit of a block not on the stack (entered while disabled) is ignored.
 *
 * Not thread-safe: one bs_thread_t per thread. Not async-signal-safe (mremap may be called).
 * Errors: -ENOMEM when memory cannot grow (the entry is not recorded; `lost` counts it).
 */
#ifndef TALLY_COLLECTOR_BLOCKSTAT_H
#define TALLY_COLLECTOR_BLOCKSTAT_H

#include <stddef.h>
#include <stdint.h>

#define BS_MAXQ 4 /* quantities profiled at once */

typedef struct bs_stat {
    uint64_t calls, subrs;
    uint64_t excl[BS_MAXQ], incl[BS_MAXQ];
    uint32_t active; /* instances on the stack now */
    uint32_t mark;   /* scratch of bs_callstack */
} bs_stat_t;

/* A node of the call-path tree: the path is the chain of parents (node 0 is the root, no block). */
typedef struct bs_node {
    uint32_t parent, block, first_child, next_sibling;
    uint64_t calls, subrs;
    uint64_t excl[BS_MAXQ], incl[BS_MAXQ];
} bs_node_t;

typedef struct bs_frame {
    uint32_t block, node;
    uint64_t start[BS_MAXQ], child[BS_MAXQ]; /* child: inclusive of the ended child instances */
} bs_frame_t;

typedef struct bs_thread {
    unsigned nq;
    bs_stat_t *blocks; /* indexed by block id */
    size_t nblocks;    /* ids below this have room (zeroed when never entered) */
    bs_node_t *nodes;  /* nodes[0] is the root */
    size_t nnodes, cap_nodes;
    bs_frame_t *stack;
    size_t depth, cap_stack;
    uint64_t unmatched, lost;
} bs_thread_t;

/* One row of a performance callstack, outermost first. */
typedef struct bs_row {
    uint32_t block;
    uint64_t calls, subrs;
    uint64_t excl[BS_MAXQ], incl[BS_MAXQ], iexcl[BS_MAXQ], iincl[BS_MAXQ];
} bs_row_t;

/* Starts t with nq quantities (1..BS_MAXQ). 0 or -EINVAL. */
int bs_init(bs_thread_t *t, unsigned nq);
/* Frees everything t holds. */
void bs_free(bs_thread_t *t);
/* Forgets the statistics but keeps the stack: each open instance starts again at now, as one call
 * (a fork child's view of the blocks it inherited). */
void bs_restart(bs_thread_t *t, const uint64_t *now);

int bs_enter(bs_thread_t *t, uint32_t block, const uint64_t *now);
/* 0, or 1 when the block was not on the stack (ignored). */
int bs_exit(bs_thread_t *t, uint32_t block, const uint64_t *now);

/* Is block on the stack now? */
static inline int bs_on_stack(const bs_thread_t *t, uint32_t block)
{
    return block < t->nblocks && t->blocks[block].active > 0;
}

/* The performance callstack at now into rows[0..t->depth) (outermost first); returns the depth. */
size_t bs_callstack(bs_thread_t *t, const uint64_t *now, bs_row_t *rows);

/* Ends every open instance at now (the end of the thread's profile). */
void bs_end_all(bs_thread_t *t, const uint64_t *now);

#endif
