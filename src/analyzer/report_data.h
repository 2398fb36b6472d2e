/*
 * report_data.h - the dataspace report model: the memory references of the samples (MEMREF
 * records, docs/FORMAT.md) attributed to data objects (-data_objects, -data_single,
 * -data_layout), to memory objects (cache lines and pages) and to the cache lines that several
 * threads share at different offsets with writes (false sharing). One computation
 * (rep_data) makes every view's rows; the front ends format them.
 *
 * For each MEMREF of the selection (threads, samples, CPUs, filter: eng_event_selected): its PC's
 * function is decoded and backtracked to the trigger (backtrack.h: at the PC for clock samples,
 * before it for skid, none for precise events), its effective address computed (or taken from
 * the hardware), and its data object named from DWARF (symbols_data.h). The sample's weight goes
 * to the object, to every aggregate containing it (each prefix of its descriptor chain), to
 * <Scalars> for a scalar variable of its own, to <Unknown> and <Unknown>.(reason) when it has
 * none, and to <Total>, which is listed first. An object is named even when its address is not
 * known (a pointer variable's type and the operand's offset suffice); memory objects need the
 * address, and count the samples without one by reason.
 *
 * Weights are kept per source (0: clock profiling, ns of user CPU time; n: the n-th counter,
 * events), with the number of samples. Ownership: the model owns everything (rep_data_free).
 * Errors: negative TALLY_E* with a message (no memory, capstone unusable). Depends on the
 * session, engine, symbols (symbols_data), backtrack.
 */
#ifndef TALLY_ANALYZER_REPORT_DATA_H
#define TALLY_ANALYZER_REPORT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/session.h"
#include "base/err.h"
#include "experiment/evformat.h"

#define REP_DS_SOURCES 8 /* source 0: clock; 1..7: counters (more are counted as the 7th) */
#define REP_DS_LINE 64
#define REP_DS_PAGE 4096
#define REP_DS_TRIGGERS 4 /* trigger instructions kept per object */

typedef struct rep_dsv {
    uint64_t w[REP_DS_SOURCES]; /* weight by source */
    uint64_t n;                 /* samples */
} rep_dsv_t;

enum rep_dobj_kind {
    REP_DOBJ_TOTAL = 0,
    REP_DOBJ_SCALARS,
    REP_DOBJ_UNKNOWN,
    REP_DOBJ_REASON,    /* <Unknown>.(reason) */
    REP_DOBJ_AGGREGATE, /* a prefix of some object's chain */
    REP_DOBJ_OBJECT,    /* an object samples were attributed to (it may also be an aggregate) */
};

typedef struct rep_dobj {
    char *name;
    int kind;       /* enum rep_dobj_kind */
    int reason;     /* REP_DOBJ_REASON: EXP_DUNK_* */
    int scalar;     /* a scalar variable of its own */
    int scope;      /* sym_dkind of the samples that named it last (static, local, pointee) */
    char *via;      /* the variable it was reached through (the pointer, the variable), or "" */
    uint32_t agg_obj; /* for the first level of an aggregate: its type (sym_data_layout) */
    uint64_t agg;
    int has_agg;
    rep_dsv_t v;
    rep_dsv_t v_noaddr; /* of v: samples whose address was not known */
    /* the instructions that referenced it (the first REP_DS_TRIGGERS seen): symbols' object
     * and ELF address of each, with its samples */
    uint32_t trig_obj[REP_DS_TRIGGERS];
    uint64_t trig_pc[REP_DS_TRIGGERS];
    uint64_t trig_n[REP_DS_TRIGGERS];
    uint32_t seq;       /* the order it was first seen in */
} rep_dobj_t;

/* A cache line or a page of one process. */
typedef struct rep_mobj {
    uint32_t exp, proc;
    uint64_t addr;
    rep_dsv_t v;
    uint64_t reads, writes;         /* samples */
    uint32_t tids[8], ntids;        /* threads (the first 8), nthreads: all */
    uint32_t nthreads;
    uint64_t touched[8], written[8]; /* lines: bytes touched and written, per thread above */
    int false_sharing;              /* lines: two threads, disjoint bytes, a write */
    int32_t top;                    /* the data object with the most samples here, -1 none */
    uint32_t top_n[4];
    int32_t top_obj[4];
} rep_mobj_t;

typedef struct rep_data {
    uint32_t sources;  /* bit s: source s had samples */
    uint64_t memrefs;  /* MEMREF records selected */
    rep_dobj_t *objs;  /* <Total> first, then by weight of the first source present, name */
    size_t nobjs;
    rep_mobj_t *lines, *pages; /* by weight */
    size_t nlines, npages;
    rep_dsv_t noaddr[EXP_DUNK_NREASONS]; /* samples without an address, by reason (0: none) */
    uint64_t heap_untraced; /* references left <Unknown> (reasons 4 and 6: the instruction was
                               understood) with an address, in processes without heap tracing
                               (-H on would have looked for their heap block) */
    uint64_t heap_mapped;   /* of which in processes that kept the allocation map (the block
                               was not one the map keeps) */
} rep_data_t;

/* The reason's label in views: "<Unknown>.(...)" minus the prefix. */
const char *rep_data_reason(int reason);

int rep_data(ses_t *s, rep_data_t *out, tally_err_t *err);
void rep_data_free(rep_data_t *d);
/* The object named name (exactly), or -1. */
long rep_data_find(const rep_data_t *d, const char *name);

/* -data_layout: each structure type with samples, its members at their offsets and sizes with
 * their metrics, and the holes and padding between. */
typedef struct rep_layout_row {
    char *desc;            /* the member's level descriptor; NULL for a hole or tail padding */
    uint64_t offset, size;
    const rep_dsv_t *v;    /* the member's object's metrics, NULL when none */
} rep_layout_row_t;

typedef struct rep_layout {
    const rep_dobj_t *agg; /* the structure's row */
    uint64_t size;
    rep_layout_row_t *rows;
    size_t nrows;
} rep_layout_t;

int rep_data_layouts(ses_t *s, const rep_data_t *d, rep_layout_t **out, size_t *n,
                     tally_err_t *err);
void rep_data_layouts_free(rep_layout_t *l, size_t n);

#endif
