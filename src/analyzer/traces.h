/*
 * traces.h - the analyses of traced calls that go beyond per-stack metrics (those are the
 * engine's): the heap over time (its peak, the blocks live at the peak, temporary allocations),
 * the synchronization objects waited on, and the files of the I/O calls.
 *
 * Each function scans the events itself, through the engine (its stack ids, so stacks can be
 * named with eng_stack_functions; its selection, where it applies) and returns rows that belong to
 * the caller (tr_free_*). Heap analyses describe whole processes: a block may be freed by another
 * thread than the one that allocated it, so the thread and sample selections do not apply to
 * them (the engine's per-stack leaks do follow the selection). Sync objects and files count the
 * selected events only. Not thread-safe; errors are negative TALLY_E* codes with a message.
 *
 * Depends on: engine, symbols, heapmatch, the experiment reader.
 */
#ifndef TALLY_ANALYZER_TRACES_H
#define TALLY_ANALYZER_TRACES_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/engine.h"
#include "analyzer/symbols_vars.h"

/* ---- the heap over time ------------------------------------------------------------------- */

typedef struct tr_stack_row {
    uint32_t exp, proc, stack; /* the engine's stack id within experiment exp */
    uint64_t count, bytes;
} tr_stack_row_t;

typedef struct tr_heap_proc {
    uint32_t exp, proc;
    uint64_t allocs, alloc_bytes, frees;
    uint64_t temporary;            /* allocations freed before their thread allocated again */
    uint64_t peak_bytes, peak_t;   /* the most bytes live at once, and when (first time) */
    uint64_t peak_blocks;
    uint64_t peak_event;           /* the process's heap events up to the peak */
    uint64_t end_bytes, end_blocks; /* still live at the end: the leaks */
    tr_stack_row_t *at_peak;       /* the stacks of the blocks live at the peak, most bytes first */
    size_t nat_peak;
} tr_heap_proc_t;

typedef struct tr_heap {
    tr_heap_proc_t *procs; /* the processes with heap data */
    size_t nprocs;
} tr_heap_t;

int tr_heap(eng_t *g, exp_experiment_t **exps, size_t nexps, tr_heap_t *out, tally_err_t *err);
void tr_free_heap(tr_heap_t *h);

/* ---- synchronization objects -------------------------------------------------------------- */

typedef struct tr_sync_row {
    uint32_t exp, proc;
    uint64_t addr;      /* the object (a pthread_t for joins) */
    uint32_t call;      /* EXP_SYNC_* of its first recorded wait: what kind of object it is */
    uint64_t wait, count;
    const char *name;   /* the variable it is in, or NULL (heap, stack, unknown); owned by vars */
    uint64_t offset;    /* within that variable */
} tr_sync_row_t;

/* The objects of the selected SYNC events, most wait first, named by the variables of vars. */
int tr_sync_objects(eng_t *g, exp_experiment_t **exps, size_t nexps, sym_ctx_t *sym,
                    sym_vars_t *vars, tr_sync_row_t **rows, size_t *n, tally_err_t *err);

/* ---- files ---------------------------------------------------------------------------------- */

enum { TR_IO_READ, TR_IO_WRITE, TR_IO_OTHER, TR_IO_ERROR, TR_IO_NKINDS };

typedef struct tr_file_row {
    char *name; /* the file's name ("<fd N>" when it was never seen named) */
    uint64_t ns[TR_IO_NKINDS], count[TR_IO_NKINDS], bytes[TR_IO_NKINDS];
} tr_file_row_t;

/* The files of the selected IO events, most time first. */
int tr_io_files(eng_t *g, exp_experiment_t **exps, size_t nexps, tr_file_row_t **rows,
                size_t *n, tally_err_t *err);
/* The same with a row per descriptor opened: "name (IOVFD=k, FD=fd)", k counting the opens
 * of the scan (er_print's iodetail). */
int tr_io_descriptors(eng_t *g, exp_experiment_t **exps, size_t nexps, tr_file_row_t **rows,
                      size_t *n, tally_err_t *err);
void tr_free_files(tr_file_row_t *rows, size_t n);

#endif
