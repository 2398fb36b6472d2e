/*
 * engine.h - the metric engine: exclusive, inclusive and attributed (caller/callee) metrics of any
 * object kind, from the events of one or more experiments (DESIGN.md section 3).
 *
 * Data flow: eng_new takes opened experiments and a symbol context. eng_aggregate scans every
 * event once, applies the selection (threads), and adds each event's metric vector to the vector
 * of its call stack: memory is per distinct stack, never per event. eng_compute then maps the
 * frames of each distinct stack to objects of a kind (function, load object, ...) and applies the
 * rules once per stack:
 *   exclusive  the leaf frame's object;
 *   inclusive  every object on the stack, once per stack however often it recurs;
 *   attributed for each object X, its innermost (leaf-most) occurrence: the frame above it gets
 *              the vector as a caller of X, the frame below it (if any) as a callee of X.
 * Metrics are decided at run time (below): each record type contributes to an event's metric
 * vector through one entry of the contributor table (engine.c); a record kind declared in the
 * log (a traced call) contributes its values to the metrics it declared. Adding an object kind
 * is one case in kind_frame. The algorithm does not change.
 *
 * Ownership: the engine borrows the experiments and the symbol context (they must outlive it);
 * results (eng_table_t, eng_tree_t) belong to the engine until the next eng_compute/eng_aggregate
 * or eng_free. Not thread-safe. Errors: negative TALLY_E* codes with a message in *err.
 */
#ifndef TALLY_ANALYZER_ENGINE_H
#define TALLY_ANALYZER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/symbols.h"
#include "base/err.h"
#include "experiment/reader.h"

/* ---- metrics -------------------------------------------------------------------------------- */

/* An engine's metrics are decided at run time, per engine: the builtin metrics first, always at
 * these indices (what the collector's own record types contribute), then the metrics the opened
 * experiments declare in their logs (`metric` records, docs/FORMAT.md), the union over all of
 * them in order of first declaration. Every vector (per stack, per thread, per object, per edge,
 * per node, the totals) has eng_nmetrics(g) entries. */
enum eng_metric {
    ENG_M_TOTALCPU, /* user + system CPU time, ns */
    ENG_M_USER,
    ENG_M_SYSTEM,
    ENG_M_WAIT,  /* Wait CPU Time: runnable, waiting for a CPU */
    ENG_M_LOCK,  /* User Lock Time: blocked on a futex */
    ENG_M_IO,    /* I/O Wait Time: blocked in I/O */
    ENG_M_SLEEP, /* Sleep Time: any other sleep */
    ENG_M_TOTAL, /* Total Thread Time: the sum of the states, the thread's wall time */
    /* tracing: sync waits (ns, count); heap (counts, bytes; leaks come from matching frees to
     * allocations at the end of each process, not from one event); I/O by kind (ns, bytes,
     * counts; a failed call counts as an error only) */
    ENG_M_SYNC,
    ENG_M_SYNCN,
    ENG_M_HEAPALLOCCNT,
    ENG_M_HEAPALLOCBYTES,
    ENG_M_HEAPLEAKCNT,
    ENG_M_HEAPLEAKBYTES,
    ENG_M_IOREADTIME,
    ENG_M_IOREADBYTES,
    ENG_M_IOREADCNT,
    ENG_M_IOWRITETIME,
    ENG_M_IOWRITEBYTES,
    ENG_M_IOWRITECNT,
    ENG_M_IOOTHERTIME,
    ENG_M_IOOTHERCNT,
    ENG_M_IOERRORTIME,
    ENG_M_IOERRORCNT,
    ENG_NBUILTIN, /* the first declared metric's index */
};

#define ENG_MAX_METRICS 1024 /* builtin and declared together; more declarations are ignored */

typedef struct eng_metric_def {
    const char *name;  /* er_print name: "totalcpu" */
    const char *title; /* "Total CPU Time" (flavor words are added by the caller) */
    const char *unit;  /* "s", "count", "bytes", or a declared unit */
    double scale;      /* multiply the raw sum by this to get the unit (1e-9: ns -> s) */
    const char *event; /* the kind of data it needs: "clock", or the declaring record kind */
    int time;          /* 1: raw values are ns shown as seconds (unit "s") */
} eng_metric_def_t;

/* The builtin metrics (indices ENG_M_*): the same in every engine. */
extern const eng_metric_def_t eng_builtin_metrics[ENG_NBUILTIN];

typedef struct eng eng_t;
/* The number of metrics of g (the width of every vector), and metric m (0 <= m < that). */
int eng_nmetrics(const eng_t *g);
const eng_metric_def_t *eng_metric(const eng_t *g, int m);
/* Index of the metric of g named name, or -1. */
int eng_metric_find(const eng_t *g, const char *name);

/* The metrics of profiled blocks (declared when some process recorded blocks): q -1 for the
 * calls (`bcalls`), else the q-th quantity (`bwall`, `bcpu`, `b<counter>`); -1 when there is no
 * such metric. Their values exist only in the block kind's stacks. */
int eng_block_metric(const eng_t *g, int q);
/* Is metric m one of the block metrics? */
int eng_is_block_metric(const eng_t *g, int m);

/* Builds the metric set of the experiments: the builtin metrics, then each metric declared by a
 * process of exps (union by name; a later declaration with the name of an earlier one is that
 * metric). *defs is allocated (the strings point into the experiments); *n its length. Pure. */
int eng_metric_set(exp_experiment_t **exps, size_t nexps, eng_metric_def_t **defs, int *n,
                   tally_err_t *err);

/* ---- object kinds --------------------------------------------------------------------------- */

enum eng_kind {
    ENG_KIND_FUNCTION,   /* ids: sym function ids */
    ENG_KIND_LOADOBJECT, /* ids: sym object ids; sym_nobjects() is <Unknown> */
    ENG_KIND_PC,         /* instructions: ids numbered as first seen (eng_pc_info) */
    ENG_KIND_LINE,       /* source lines: ids numbered as first seen (eng_line_info); code
                            without line information, and code the compiler generated (line
                            0), is one line per function; with inlines shown, a frame in
                            inlined code is its line, then the lines it was inlined at */
    ENG_KIND_BLOCK,      /* profiled blocks (spec 004): ids numbered by name as first met
                            (blockstacks.h). Their stacks are not the events' but each thread's
                            call paths of blocks, with the block metrics (eng_block_metric);
                            selected by thread and by a filter on THRID, TID, PID, EXPID and
                            block names; a sample or CPU selection, or a filter on time, is an
                            error for this kind (the paths are whole-run sums) */
    ENG_NKINDS,
};

typedef struct eng eng_t;
/* Instruction id: its object (UINT32_MAX: none) and ELF address; -1 if no such id. */
int eng_pc_info(eng_t *g, uint32_t id, uint32_t *obj, uint64_t *addr);
uint32_t eng_pc_function(eng_t *g, uint32_t id);
/* Line id: its file (NULL when the function has no line information), line (0 for the
 * compiler-generated code of function *func) and the function that first showed it; -1 if no such
 * id. */
int eng_line_info(eng_t *g, uint32_t id, const char **file, uint32_t *line, uint32_t *func);

/* ---- the engine ----------------------------------------------------------------------------- */

typedef struct eng eng_t;

/* One thread of the analysed experiments, numbered from 1 across all of them (-thread_list). */
typedef struct eng_thread {
    uint32_t number;
    uint32_t exp, proc, tid;
    const exp_thread_t *info; /* NULL when the thread has events but no thread record */
    uint64_t events;          /* events of this thread seen by the last aggregation */
    uint64_t *value;          /* [eng_nmetrics] */
} eng_thread_t;

eng_t *eng_new(exp_experiment_t **exps, size_t nexps, sym_ctx_t *sym);
void eng_free(eng_t *g);

/* Threads (known after the first eng_aggregate; the records alone before it). */
size_t eng_nthreads(const eng_t *g);
const eng_thread_t *eng_thread(const eng_t *g, size_t i);
/* Selects the threads by number list "1,3-5", "all". Error on bad syntax or a number not in
 * 1..nthreads. Takes effect at the next eng_aggregate. */
int eng_select_threads(eng_t *g, const char *list, tally_err_t *err);
const char *eng_thread_selection(const eng_t *g); /* as given, "all" by default */
/* Is thread i (0-based index of eng_thread) in the thread selection? */
int eng_thread_selected(const eng_t *g, size_t i);

/* Selects sample periods by number list ("3-7,9", "all"): sample k is the period from the k-th
 * sample packet of a process to the next (numbers as in -sample_list). Takes effect at the next
 * eng_aggregate. */
int eng_select_samples(eng_t *g, const char *list, tally_err_t *err);
const char *eng_sample_selection(const eng_t *g);
/* Is sample number k (1-based, as in -sample_list) in the sample selection? */
int eng_sample_selected(const eng_t *g, uint32_t k);
/* Selects CPUs by number list ("0,2-3", "all"); events of unknown CPU are kept only by "all". */
int eng_select_cpus(eng_t *g, const char *list, tally_err_t *err);
const char *eng_cpu_selection(const eng_t *g);
/* Sets the filter expression (see filter.h); "" or "none" removes it. */
int eng_set_filter(eng_t *g, const char *expr, tally_err_t *err);
const char *eng_filter(const eng_t *g); /* "none" when there is none */
/* The sample number (1-based) of time t in process proc of experiment exp; 0 before the first. */
uint32_t eng_sample_of(const eng_t *g, uint32_t exp, uint32_t proc, uint64_t t);
/* The start of the run: the earliest process start over all experiments (TSTAMP 0). */
uint64_t eng_run_start(const eng_t *g);

/* Calls fn for every selected event after an aggregation, with its metric vector and the function
 * of its leaf frame (for timelines). */
typedef int (*eng_event_fn)(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf_fn,
                            uint32_t thread_index);
int eng_foreach_event(eng_t *g, eng_event_fn fn, void *ctx, tally_err_t *err);
/* Does event ev of experiment exp pass the current selection (threads, samples, CPUs, filter)?
 * For scans of one's own that must see every event (frees, file opens) but count selected ones. */
int eng_event_selected(eng_t *g, uint32_t exp, const exp_event_t *ev);
/* Calls fn for every stack with a non-zero vector after an aggregation: its experiment, process,
 * frames (leaf first) with their function ids, and its vector (e.g. -leaks, -allocs). */
typedef int (*eng_stack_fn)(void *ctx, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                            const uint32_t *fns, uint32_t n, const uint64_t *v);
int eng_foreach_stack(eng_t *g, eng_stack_fn fn, void *ctx, tally_err_t *err);
/* One stack with its frames mapped to the objects of a kind exactly as every table and tree maps
 * them (inlined functions as frames of their own when shown, hidden objects folded, the
 * collector's frames dropped but as the leaf): ids[0..n) leaf first, frame[i] the raw frame
 * ids[i] comes from (0..npcs), and per raw frame its PC, its sym object (UINT32_MAX: none) and
 * the ELF address looked up (a return address minus one). For exporters that write stacks. */
typedef struct eng_mapped {
    uint32_t exp, proc, stack;
    const uint32_t *ids, *frame;
    uint32_t n;
    const uint64_t *pcs, *faddr;
    const uint32_t *fobj;
    uint32_t npcs;
} eng_mapped_t;
/* Maps stack id of experiment exp (an event's ev->stack in eng_foreach_event); the arrays are the
 * engine's, valid until the next call, eng_compute, eng_calltree or eng_aggregate. */
int eng_map_stack(eng_t *g, uint32_t exp, uint32_t stack, int kind, eng_mapped_t *out,
                  tally_err_t *err);
/* Calls fn for every stack with a non-zero vector after an aggregation, mapped to kind, with its
 * vector; a non-zero return of fn stops and is returned. */
typedef int (*eng_mapped_fn)(void *ctx, const eng_mapped_t *m, const uint64_t *v);
int eng_foreach_mapped_stack(eng_t *g, int kind, eng_mapped_fn fn, void *ctx, tally_err_t *err);
/* Splitting by thread: with on, each aggregation also sums the vector of every (thread, stack)
 * pair it sees (memory per distinct pair, eng_nmetrics words each), for
 * eng_foreach_thread_stack. Takes effect at the next eng_aggregate. */
void eng_split_threads(eng_t *g, int on);
/* Calls fn for every (thread, stack) pair of the last aggregation, by thread then stack, the
 * stack mapped to kind, with the pair's vector (aggregates again, split, when the last
 * aggregation was not). */
typedef int (*eng_pair_fn)(void *ctx, const eng_thread_t *t, const eng_mapped_t *m,
                           const uint64_t *v);
int eng_foreach_thread_stack(eng_t *g, int kind, eng_pair_fn fn, void *ctx, tally_err_t *err);
/* The engine's interned stacks of experiment exp: a scan of one's own through them (exp_scan)
 * gets the engine's stack ids. */
exp_stacks_t *eng_stacks(eng_t *g, uint32_t exp);
/* The function ids of the frames (leaf first) of stack id of experiment exp; NULL on error. */
const uint32_t *eng_stack_functions(eng_t *g, uint32_t exp, uint32_t stack, uint32_t *n,
                                    tally_err_t *err);

/* The ids of the objects of kind for the frames of stack id of experiment exp (leaf first), as
 * the tables map them (object modes, inlines): a stack's exclusive values go to ids[0], its
 * inclusive ones once to each distinct id (eng_apply). Valid until the next call or change of
 * the object modes; NULL on error. */
const uint32_t *eng_stack_objects(eng_t *g, uint32_t exp, uint32_t stack, int kind, uint32_t *n,
                                  tally_err_t *err);

/* How the functions of a load object are shown (er_print's -object_show/-object_hide/
 * -object_api): each function (the default), the whole object as one function `<libname>`, or
 * only the functions through which the object is entered from outside (its API). Takes effect at
 * the next table. */
enum eng_object_mode { ENG_OBJ_SHOW, ENG_OBJ_HIDE, ENG_OBJ_API,
                       ENG_OBJ_DROP /* tally's own collector: left out but as the leaf */ };
void eng_set_object_mode(eng_t *g, uint32_t obj, int mode);
void eng_reset_object_modes(eng_t *g);
/* Inlined functions as frames of their own (on, the default) or folded into the function they
 * were inlined into (off), for the function kind: tables, callers-callees, call tree; and for the
 * line kind, the lines inlined code was called at (their inclusive metrics). */
void eng_set_inlines(eng_t *g, int on);
int eng_inlines(const eng_t *g);
/* er_print's viewmode machine (on): the frames of tally's own collector (ENG_OBJ_DROP) are shown
 * as recorded, as callers too; off (user, expert: the default) leaves them out. Takes effect at
 * the next table. */
void eng_set_machine_view(eng_t *g, int on);
int eng_object_mode(const eng_t *g, uint32_t obj);

/* Scans every event (again) under the current selection. */
int eng_aggregate(eng_t *g, tally_err_t *err);
/* Threads of the aggregation: with no selection beyond all threads, no eng_split_threads and no
 * heap events, the streams are read by n threads at once (exp_scan_parallel), with the serial
 * scan's results (the same stacks and ids, threads in the same order, the same sums). 0: as many
 * as CPUs online,
 * at most 8 (the default); 1: the serial scan. eng_scan_workers: how many the last aggregation
 * used (1 when it was the serial scan). */
void eng_set_scan_threads(eng_t *g, unsigned n);
unsigned eng_scan_workers(const eng_t *g);
/* Scan totals of the last aggregation: events, and lost records by reason. */
const exp_scan_stats_t *eng_scan_stats(const eng_t *g);
/* Does a selection leave events out (threads, samples or CPUs other than all, or a filter)? */
int eng_selecting(const eng_t *g);
/* The events of the last aggregation that passed the selection (0 before any). */
uint64_t eng_selected_events(const eng_t *g);
/* Totals of the last aggregation over the selection. */
const uint64_t *eng_total(const eng_t *g);
/* True when a sum of the last aggregation, table or call tree reached UINT64_MAX and stayed there
 * (sums saturate rather than wrap around): the front end says so. */
int eng_saturated(const eng_t *g);
/* True when some event of the last aggregation had a metric != 0 (for -metric_list). */
int eng_has_metric(const eng_t *g, int metric);

/* ---- results -------------------------------------------------------------------------------- */

typedef struct eng_edge {
    uint32_t other;        /* the caller or callee object */
    const uint64_t *value; /* [nmetrics], owned by the table */
} eng_edge_t;

typedef struct eng_table {
    int kind;
    int nmetrics;         /* the width of every vector below */
    size_t nobjects;      /* ids 0..nobjects-1; those with present[id] != 0 occur in the data */
    uint8_t *present;
    uint64_t *excl, *incl; /* [id * nmetrics + metric] */
    /* attributed (when computed): callers of id are callers[caller_start[id] .. caller_start[id+1]) */
    int has_edges;
    eng_edge_t *callers, *callees;
    size_t *caller_start, *callee_start;
    uint64_t *edge_values; /* the edges' vectors */
    uint64_t *outermost; /* [id * nmetrics]: events where id was the outermost frame */
    /* [nmetrics] or NULL: metrics of the leaf only (the block calls: a path's calls are its
     * leaf's). Such a metric is added to the leaf's exclusive and inclusive, its caller edge,
     * and the callee edge into it, never to the frames above: the inclusive calls of a block
     * are its own, and an edge's are the calls made along it. */
    const uint8_t *leafonly;
    int saturated;       /* some sum reached UINT64_MAX (sums saturate, never wrap) */
} eng_table_t;

/* Computes the table of kind; with edges != 0 also the attributed metrics. */
const eng_table_t *eng_compute(eng_t *g, int kind, int edges, tally_err_t *err);

/* Call tree of kind: node 0 is <Total>; children linked by first_child/next_sibling. A metric
 * of the leaf only (eng_table_t) is in the inclusive of the node it is the leaf of, and of
 * <Total>. */
typedef struct eng_node {
    uint32_t object, parent, first_child, next_sibling; /* UINT32_MAX = none */
    uint64_t *incl, *excl; /* [nmetrics] each, owned by the tree */
} eng_node_t;

typedef struct eng_tree {
    eng_node_t *nodes;
    size_t nnodes;
    int nmetrics;
    uint64_t *values; /* the nodes' vectors: node k's incl at 2 * k * nmetrics, then its excl */
    int saturated; /* some sum reached UINT64_MAX */
} eng_tree_t;

const eng_tree_t *eng_calltree(eng_t *g, int kind, tally_err_t *err);

/* Number of objects of kind known so far, and their names (fmt: 0 short, 1 long, 2 mangled). */
size_t eng_nobjects(eng_t *g, int kind);
const char *eng_object_name(eng_t *g, int kind, uint32_t id, int fmt);
/* The load object index of a function id (UINT32_MAX for <Unknown>). */
uint32_t eng_function_object(eng_t *g, uint32_t id);
/* Its address in its object's file (0 when it has none: made up, e.g. inlined only). */
uint64_t eng_function_addr(eng_t *g, uint32_t id);

/* ---- building blocks, for tests and generators ---------------------------------------------- */

/* Applies the rules to one stack of object ids (leaf first) with vector v into table t, which must
 * have been allocated for the ids used. stamp: scratch array of t->nobjects, serial: a number
 * different for every call. Edges are added to the hash tables of ec (NULL: no edges). */
typedef struct eng_edgeset eng_edgeset_t;
eng_edgeset_t *eng_edgeset_new(int nmetrics);
void eng_edgeset_free(eng_edgeset_t *es);
int eng_apply(eng_table_t *t, const uint32_t *ids, uint32_t n, const uint64_t *v, uint32_t *stamp,
              uint32_t serial, eng_edgeset_t *es);
/* Converts the edge sets into t's sorted caller/callee arrays. */
int eng_edges_finish(eng_table_t *t, eng_edgeset_t *es);
int eng_table_alloc(eng_table_t *t, int kind, size_t nobjects, int nmetrics, int edges);
void eng_table_release(eng_table_t *t);

/* ---- the aggregation as a part of a job's (the analysis run as an MPI job, jobscan.h) -------- */

/* Several engines over the same experiments, each in its own process, aggregate together: each
 * scans a share of the processes (eng_set_share), the others' partial results (eng_partial_write)
 * are merged into one of them (eng_merge_*), which then holds exactly what its own scan of every
 * process would have given: the same stack ids (a partial's stacks are interned in the order the
 * serial scan meets them when the shares are contiguous and merged in order), threads numbered
 * alike, the same sums. Shares are ranges of process indices, per experiment. */

/* Scans processes lo[x] to hi[x] - 1 of experiment x from now on (lo, hi: one per experiment;
 * NULL: every process again). */
int eng_set_share(eng_t *g, const uint32_t *lo, const uint32_t *hi, tally_err_t *err);
/* A part of a job's aggregation (on): leaves the profiled blocks (read from the logs, not the
 * events) to the engine that merges. */
void eng_set_partial(eng_t *g, int on);
/* The merging engine's hook, called by eng_aggregate: ENG_REDUCE_START before its own scan,
 * ENG_REDUCE_MERGE after it (merge the others' partials), ENG_REDUCE_ABANDON when its own scan
 * failed (the others' partials are to be drained and dropped). */
enum { ENG_REDUCE_START, ENG_REDUCE_MERGE, ENG_REDUCE_ABANDON };
typedef int (*eng_reduce_fn)(void *ctx, eng_t *g, int phase, tally_err_t *err);
void eng_set_reduce(eng_t *g, eng_reduce_fn fn, void *ctx);

/* What the merging engine asks of the others before an aggregation: its selections (threads,
 * samples, CPUs, filter), the threads it numbered beyond the logs' (so that thread numbers and
 * THRID agree) and whether to split by thread. A malloc'd buffer of *n bytes. */
int eng_request_write(eng_t *g, uint8_t **buf, size_t *n, tally_err_t *err);
/* Applies a request to an engine (takes effect at the next eng_aggregate). */
int eng_request_apply(eng_t *g, const uint8_t *buf, size_t n, tally_err_t *err);

/* The last aggregation of this engine's share, as chunks of at most ENG_PARTIAL_CHUNK bytes
 * given to put in order (a non-zero return of put stops and is returned): the threads' sums,
 * every stack of the share's processes in id order with its vector, the (thread, stack) pairs
 * when split, the totals and the scan statistics. */
#define ENG_PARTIAL_CHUNK (1u << 20)
typedef int (*eng_put_fn)(void *ctx, const void *buf, size_t n);
int eng_partial_write(eng_t *g, eng_put_fn put, void *ctx, tally_err_t *err);
/* Merging partials into g after its own scan (ENG_REDUCE_MERGE): one eng_merge_t a partial, fed
 * its chunks in order; *done is set by the last one. */
typedef struct eng_merge eng_merge_t;
eng_merge_t *eng_merge_new(eng_t *g);
int eng_merge_chunk(eng_merge_t *m, const void *buf, size_t n, int *done, tally_err_t *err);
void eng_merge_free(eng_merge_t *m);

#endif
