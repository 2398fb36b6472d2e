/*
 * report_er.h - the models of er_print's heap and I/O reports that tally's other views do not
 * have: the size distributions of -heapstat and -iostat (er_print's size ranges), and the I/O
 * call stacks of -iocallstack.
 *
 * Heap distributions describe whole processes (as analyzer/traces.h's heap analyses: a block
 * may be freed by another thread, so no selection applies); I/O distributions and stacks count
 * the selected events. Ownership: rows belong to the caller (free()); the vectors and frames
 * they point to are the engine's, valid until it computes again. Errors: negative TALLY_E*
 * codes with a message. Not thread-safe.
 *
 * Depends on: engine, heapmatch, traces (the I/O kinds), the experiment reader.
 */
#ifndef TALLY_ANALYZER_REPORT_ER_H
#define TALLY_ANALYZER_REPORT_ER_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/session.h"
#include "analyzer/traces.h"
#include "base/err.h"

/* er_print's size ranges: "0KB - 1KB", "1KB - 8KB", ..., "100MB - 1GB", then "1GB - 10GB" and
 * "over 10GB"; a size is in the first range whose upper bound it does not exceed. */
#define REP_NSIZES 12
const char *rep_size_range(int i);
int rep_size_index(uint64_t bytes);

typedef struct rep_sizes {
    uint64_t count[REP_NSIZES]; /* by range */
    uint64_t n, bytes, min, max; /* calls (or blocks) and their bytes; min/max 0 when n is 0 */
    uint64_t ns, max_ns;         /* I/O: the time of the calls and of the longest */
} rep_sizes_t;

/* Every allocation of every process with heap data, and the blocks never freed. */
int rep_heap_sizes(ses_t *s, rep_sizes_t *allocs, rep_sizes_t *leaks, tally_err_t *err);
/* The selected I/O calls by kind (TR_IO_READ, _WRITE, _OTHER, _ERROR). */
int rep_io_sizes(ses_t *s, rep_sizes_t kinds[TR_IO_NKINDS], tally_err_t *err);

/* A stack with its metric vector (-iocallstack). */
typedef struct rep_vstack {
    uint32_t exp, proc, n;
    const uint64_t *pcs;
    const uint32_t *fns;
    const uint64_t *v; /* [eng_nmetrics] */
} rep_vstack_t;
/* The stacks of the selected I/O calls, the most I/O time first. */
int rep_io_stacks(ses_t *s, rep_vstack_t **rows, size_t *n, tally_err_t *err);

#endif
