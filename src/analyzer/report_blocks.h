/*
 * report_blocks.h - the report models of profiled blocks (spec 004; included by report.h):
 * performance callstacks at monitor points, their history, and the whole-run profile of blocks
 * per thread and summed, with the call paths of blocks. Built from the log records the collector
 * writes (`block`, `callstack`, `block-profile`, `block-paths`, `block-thread`: docs/FORMAT.md),
 * for every process of every experiment of the session.
 *
 * Quantities: the run's `block_metrics` setting (wall, the default, cpu, counters); times are
 * in ns, counters are counts (qtime). A view formats; exporters (TAU's profile.N.C.T files among them) read the same model.
 *
 * Records that do not parse (a row of the wrong width, an undeclared block, a path whose parent
 * comes after it) are skipped, each with a note (notes[]) naming the process and log line, for
 * the front end to show. Ownership: the model owns everything; strings point into the
 * experiments' logs (valid while the session is open). Not thread-safe. Errors: TALLY_ENOMEM.
 */
#ifndef TALLY_ANALYZER_REPORT_BLOCKS_H
#define TALLY_ANALYZER_REPORT_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/session.h"
#include "base/err.h"

#define REP_BQ_MAX 4

/* A block's statistics (the instance values only at a monitor point). */
typedef struct rep_bvals {
    uint64_t calls, subrs;
    uint64_t excl[REP_BQ_MAX], incl[REP_BQ_MAX], iexcl[REP_BQ_MAX], iincl[REP_BQ_MAX];
} rep_bvals_t;

typedef struct rep_brow {
    const char *name, *group;
    rep_bvals_t v;
} rep_brow_t;

/* A monitor point: a thread's performance callstack, rows outermost first. */
typedef struct rep_bmon {
    const exp_process_t *p;
    uint32_t tid;
    uint64_t n;     /* the thread's monitor points are numbered 1, 2, ... */
    uint64_t t;     /* ns since the process started */
    const char *label; /* "" when none */
    rep_brow_t *rows;
    size_t nrows;
} rep_bmon_t;

/* A node of a thread's tree of call paths (a path is the chain of parents). */
typedef struct rep_bpath {
    long parent; /* index in the thread's paths, -1 for a path of one block */
    unsigned depth;
    const char *name;
    rep_bvals_t v; /* calls, subrs, excl, incl of the block along this path */
} rep_bpath_t;

/* A thread's whole-run profile (every instance still open at its end ended then). */
typedef struct rep_bthread {
    const exp_process_t *p;
    uint32_t tid;
    rep_brow_t *rows; /* blocks by inclusive time (first quantity), descending */
    size_t nrows;
    rep_bpath_t *paths; /* depth first: each node before its children, children by inclusive */
    size_t npaths;
    uint64_t unmatched, lost;
    uint64_t t_end; /* when its open instances were ended (the block-profile's t, the events'
                       clock; 0: no block-profile record) */
} rep_bthread_t;

typedef struct rep_blocks {
    unsigned nq;
    const char *qname[REP_BQ_MAX]; /* "wall", "cpu", or a counter's name ("page-faults") */
    int qtime[REP_BQ_MAX];         /* the quantity is a time in ns (wall, cpu); else a count */
    char qbuf[REP_BQ_MAX][64];     /* (the names' storage) */
    rep_bmon_t *mons; /* by process, thread, then number */
    size_t nmons;
    rep_bthread_t *threads;
    size_t nthreads;
    rep_brow_t *total; /* summed over threads and processes by name, by inclusive time */
    size_t ntotal;
    char **notes;
    size_t nnotes;
} rep_blocks_t;

int rep_blocks(const ses_t *s, rep_blocks_t *out, tally_err_t *err);
void rep_blocks_free(rep_blocks_t *b);

/* The history of one block across the monitor points (block NULL: of every block): for each
 * monitor point at which it is on the callstack, its row and the change since the previous such
 * point of the same thread (the first: since the start). */
typedef struct rep_bhist {
    const rep_bmon_t *mon;
    const rep_brow_t *row;
    uint64_t dcalls;
    int64_t dexcl[REP_BQ_MAX], dincl[REP_BQ_MAX];
} rep_bhist_t;
int rep_blocks_history(const rep_blocks_t *b, const char *block, rep_bhist_t **out, size_t *n,
                       tally_err_t *err);

#endif
