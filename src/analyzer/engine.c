/*
 * engine.c - the metric engine (see engine.h for the contract and the rules).
 *
 * Sections: metric table; threads and selection; aggregation (the event scan); profiled
 * blocks (their kind's stacks); frame mapping (stack -> object ids); the rules (eng_apply) and
 * tables; call tree.
 */
#define _GNU_SOURCE
#include "analyzer/engine.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/blockstacks.h"
#include "analyzer/filter.h"
#include "analyzer/heapmatch.h"
#include "base/grow.h"
#include "base/satadd.h"
#include "base/u64map.h"

/* ---- metric table --------------------------------------------------------------------------- */

const eng_metric_def_t eng_builtin_metrics[ENG_NBUILTIN] = {
    [ENG_M_TOTALCPU] = { "totalcpu", "Total CPU Time", "s", 1e-9, "clock", 1 },
    [ENG_M_USER] = { "user", "User CPU Time", "s", 1e-9, "clock", 1 },
    [ENG_M_SYSTEM] = { "system", "System CPU Time", "s", 1e-9, "clock", 1 },
    [ENG_M_WAIT] = { "wait", "Wait CPU Time", "s", 1e-9, "states", 1 },
    [ENG_M_LOCK] = { "lock", "User Lock Time", "s", 1e-9, "states", 1 },
    [ENG_M_IO] = { "iowait", "I/O Wait Time", "s", 1e-9, "states", 1 },
    [ENG_M_SLEEP] = { "sleep", "Sleep Time", "s", 1e-9, "states", 1 },
    [ENG_M_TOTAL] = { "total", "Total Thread Time", "s", 1e-9, "states", 1 },
    [ENG_M_SYNC] = { "sync", "Sync Wait Time", "s", 1e-9, "sync", 1 },
    [ENG_M_SYNCN] = { "syncn", "Sync Wait Count", "count", 1, "sync", 0 },
    [ENG_M_HEAPALLOCCNT] = { "heapalloccnt", "Allocations", "count", 1, "heap", 0 },
    [ENG_M_HEAPALLOCBYTES] = { "heapallocbytes", "Bytes Allocated", "bytes", 1, "heap", 0 },
    [ENG_M_HEAPLEAKCNT] = { "heapleakcnt", "Leaks", "count", 1, "heap", 0 },
    [ENG_M_HEAPLEAKBYTES] = { "heapleakbytes", "Bytes Leaked", "bytes", 1, "heap", 0 },
    [ENG_M_IOREADTIME] = { "ioreadtime", "Read Time", "s", 1e-9, "io", 1 },
    [ENG_M_IOREADBYTES] = { "ioreadbytes", "Read Bytes", "bytes", 1, "io", 0 },
    [ENG_M_IOREADCNT] = { "ioreadcnt", "Read Count", "count", 1, "io", 0 },
    [ENG_M_IOWRITETIME] = { "iowritetime", "Write Time", "s", 1e-9, "io", 1 },
    [ENG_M_IOWRITEBYTES] = { "iowritebytes", "Write Bytes", "bytes", 1, "io", 0 },
    [ENG_M_IOWRITECNT] = { "iowritecnt", "Write Count", "count", 1, "io", 0 },
    [ENG_M_IOOTHERTIME] = { "ioothertime", "Other I/O Time", "s", 1e-9, "io", 1 },
    [ENG_M_IOOTHERCNT] = { "ioothercnt", "Other I/O Count", "count", 1, "io", 0 },
    [ENG_M_IOERRORTIME] = { "ioerrortime", "I/O Error Time", "s", 1e-9, "io", 1 },
    [ENG_M_IOERRORCNT] = { "ioerrorcnt", "I/O Error Count", "count", 1, "io", 0 },
};

int eng_metric_set(exp_experiment_t **exps, size_t nexps, eng_metric_def_t **defs, int *n,
                   tally_err_t *err)
{
    size_t cap = ENG_NBUILTIN;
    for (size_t x = 0; x < nexps; x++)
        for (size_t p = 0; p < exps[x]->nprocs; p++)
            cap += exps[x]->procs[p]->nmetrics;
    if (cap > ENG_MAX_METRICS)
        cap = ENG_MAX_METRICS;
    eng_metric_def_t *d = malloc(cap * sizeof *d);
    if (!d)
        return tally_errf(err, TALLY_ENOMEM, "out of memory building the metric set");
    memcpy(d, eng_builtin_metrics, sizeof eng_builtin_metrics);
    int k = ENG_NBUILTIN;
    for (size_t x = 0; x < nexps; x++) {
        for (size_t p = 0; p < exps[x]->nprocs; p++) {
            const exp_process_t *pr = exps[x]->procs[p];
            for (size_t i = 0; i < pr->nmetrics && (size_t)k < cap; i++) {
                const exp_metric_t *m = &pr->metrics[i];
                int seen = 0;
                for (int j = 0; j < k && !seen; j++)
                    seen = !strcmp(d[j].name, m->name);
                if (seen)
                    continue;
                const char *event = "trace";
                for (size_t j = 0; j < pr->nkinds; j++)
                    for (uint32_t q = 0; q < pr->kinds[j].nmetrics; q++)
                        if (pr->kinds[j].metric[q] == i && !strcmp(event, "trace"))
                            event = pr->kinds[j].name;
                for (size_t j = 0; j < pr->ncounters; j++)
                    if (pr->counters[j].metric == i)
                        event = "counter";
                if (m->hz) /* cycles, shown as time at the CPUs' frequency */
                    d[k++] = (eng_metric_def_t){ m->name, m->title, "s", 1.0 / (double)m->hz,
                                                 event, 0 };
                else
                    d[k++] = (eng_metric_def_t){ m->name, m->title, m->unit,
                                                 m->time ? 1e-9 : 1, event, m->time };
            }
        }
    }
    *defs = d;
    *n = k;
    return 0;
}

/* The metric vector of one event is sparse: at most EV_MAXVALS metrics are non-zero. */
#define EV_MAXVALS (EXP_KIND_MAXVALUES > 8 ? EXP_KIND_MAXVALUES : 8)
typedef struct evvals {
    int n;
    uint16_t m[EV_MAXVALS];
    uint64_t v[EV_MAXVALS];
} evvals_t;

static inline void put(evvals_t *e, int metric, uint64_t value)
{
    e->m[e->n] = (uint16_t)metric;
    e->v[e->n++] = value;
}

/* ---- record contributors ---------------------------------------------------------------------- */

/* What one event of a record type adds to its metric vector. kmap: the declared kinds of each
 * process of the event's experiment, as metric indices of the engine (for TRACE). */
typedef struct kind_map kind_map_t;
typedef void (*contributor_fn)(const exp_event_t *ev, const kind_map_t *kmap, evvals_t *e);

/* A declared kind of one process: the engine's index of each of its metrics. */
typedef struct kind_slot {
    uint32_t n; /* 0: no such kind */
    uint16_t m[EXP_KIND_MAXVALUES];
} kind_slot_t;
struct kind_map {
    kind_slot_t *slot; /* by kind id */
    uint32_t nslots;
    int32_t counter[EXP_CTR_MAX]; /* by counter id: the engine's metric index, -1: none */
};

/* The time of a clock event inside a runtime (its runtime state: 1 + a declared kind's id) adds
 * to the kind's first metric, or, when the thread was blocked, to its second (its first when it
 * has only one): e.g. OpenMP Work and Wait, where blocked time inside the runtime is a wait. */
static void contribute_rstate(const exp_event_t *ev, const kind_map_t *kmap, evvals_t *e,
                              int blocked)
{
    if (!kmap)
        return;
    kmap += ev->proc;
    uint32_t kind = ev->rstate - 1;
    if (kind >= kmap->nslots || !kmap->slot[kind].n)
        return;
    const kind_slot_t *k = &kmap->slot[kind];
    put(e, k->m[blocked && k->n > 1 ? 1 : 0], ev->weight);
}

static inline __attribute__((always_inline)) void contribute_clock(const exp_event_t *ev,
                                                                  const kind_map_t *kmap, evvals_t *e)
{
    static const int state_metric[EXP_STATE_COUNT] = {
        [EXP_STATE_USER] = ENG_M_USER, [EXP_STATE_SYSTEM] = ENG_M_SYSTEM,
        [EXP_STATE_WAIT] = ENG_M_WAIT, [EXP_STATE_LOCK] = ENG_M_LOCK,
        [EXP_STATE_IO] = ENG_M_IO,     [EXP_STATE_SLEEP] = ENG_M_SLEEP,
    };
    int m = ev->state < EXP_STATE_COUNT ? state_metric[ev->state] : ENG_M_SLEEP;
    put(e, m, ev->weight);
    put(e, ENG_M_TOTAL, ev->weight);
    if (m == ENG_M_USER || m == ENG_M_SYSTEM)
        put(e, ENG_M_TOTALCPU, ev->weight);
    if (__builtin_expect(ev->rstate != EXP_RSTATE_NONE, 0))
        contribute_rstate(ev, kmap, e, m == ENG_M_LOCK || m == ENG_M_IO || m == ENG_M_SLEEP);
}

static void contribute_sync(const exp_event_t *ev, const kind_map_t *kmap, evvals_t *e)
{
    (void)kmap;
    put(e, ENG_M_SYNC, ev->weight);
    put(e, ENG_M_SYNCN, 1);
}

/* (leaks come from matching frees to allocations at the end of each process: add_leak) */
static void contribute_heap_alloc(const exp_event_t *ev, const kind_map_t *kmap, evvals_t *e)
{
    (void)kmap;
    put(e, ENG_M_HEAPALLOCCNT, 1);
    put(e, ENG_M_HEAPALLOCBYTES, ev->size);
}

static void contribute_io(const exp_event_t *ev, const kind_map_t *kmap, evvals_t *e)
{
    (void)kmap;
    if (ev->err) {
        put(e, ENG_M_IOERRORTIME, ev->weight);
        put(e, ENG_M_IOERRORCNT, 1);
    } else if (EXP_IO_IS_READ(ev->call)) {
        put(e, ENG_M_IOREADTIME, ev->weight);
        put(e, ENG_M_IOREADBYTES, ev->size);
        put(e, ENG_M_IOREADCNT, 1);
    } else if (EXP_IO_IS_WRITE(ev->call)) {
        put(e, ENG_M_IOWRITETIME, ev->weight);
        put(e, ENG_M_IOWRITEBYTES, ev->size);
        put(e, ENG_M_IOWRITECNT, 1);
    } else {
        put(e, ENG_M_IOOTHERTIME, ev->weight);
        put(e, ENG_M_IOOTHERCNT, 1);
    }
}

/* A traced call of a declared kind: its values, in the order the kind declared its metrics. A
 * record of a kind its log does not declare carries nothing the engine can name. */
static void contribute_trace(const exp_event_t *ev, const kind_map_t *kmap, evvals_t *e)
{
    if (!kmap)
        return;
    kmap += ev->proc;
    if (ev->call >= kmap->nslots)
        return;
    const kind_slot_t *k = &kmap->slot[ev->call];
    uint32_t n = ev->nvalues < k->n ? ev->nvalues : k->n;
    for (uint32_t i = 0; i < n; i++)
        if (ev->values[i])
            put(e, k->m[i], ev->values[i]);
}

/* A counter's sample: the events it stands for, as the counter's metric. */
static void contribute_counter(const exp_event_t *ev, const kind_map_t *kmap, evvals_t *e)
{
    if (!kmap || ev->call >= EXP_CTR_MAX || !ev->nvalues)
        return;
    int32_t m = kmap[ev->proc].counter[ev->call];
    if (m >= 0 && ev->values[0])
        put(e, m, ev->values[0]);
}

/* Record type -> contributor. LOST is counted by the scan statistics and a HEAP_FREE ends a
 * block (the leaks of the aggregation): they carry no metric. STATE records arrive as CLOCK. */
static const contributor_fn contributors[256] = {
    [EXP_REC_CLOCK] = contribute_clock,
    [EXP_REC_SYNC] = contribute_sync,
    [EXP_REC_HEAP_ALLOC] = contribute_heap_alloc,
    [EXP_REC_IO] = contribute_io,
    [EXP_REC_TRACE] = contribute_trace,
    [EXP_REC_COUNTER] = contribute_counter,
};

/* The non-zero metrics of one event. Returns their number (0: the event carries no metric). */
static inline int event_values(const exp_event_t *ev, const kind_map_t *kmap, evvals_t *e)
{
    e->n = 0;
    contributor_fn fn = ev->type < 256 ? contributors[ev->type] : NULL;
    if (fn == contribute_clock) /* the table's entry for most events, called directly (inlined) */
        contribute_clock(ev, kmap, e);
    else if (fn)
        fn(ev, kmap, e);
    return e->n;
}

/* ---- the engine ----------------------------------------------------------------------------- */

typedef struct exp_input {
    exp_experiment_t *e;
    exp_stacks_t *stacks;
    uint64_t *vec;     /* [stack * nmetrics] */
    size_t cap;        /* stacks vec has room for */
    /* frame mapping: function ids of the frames of stacks 0..nresolved-1 */
    uint32_t *fids;
    uint32_t *fobj;  /* per frame: its sym object (UINT32_MAX: none) ... */
    uint64_t *faddr; /* ... and the address looked up (a return address minus one) */
    size_t *foff; /* [nresolved + 1] */
    size_t nresolved, fids_cap;
    u64map_t pcs;     /* (proc, pc, leaf) -> function id, in mapping generation 0 ... */
    u64map_t *gpcs;   /* ... and in generation g > 0: gpcs[g - 1] (exp_stacks_gen) */
    size_t ngpcs;
    u64map_t objects; /* (proc, object id) -> sym object */
    u64map_t leaf_real; /* (proc, gen, interposer pc) -> 1 + index in real_pcs (0: none) */
    uint64_t *real_pcs;
    size_t nreal_pcs, real_cap;
    uint8_t **match;  /* filter: [2 * term + leaf][stack]: 0 unknown, 1 no, 2 yes */
    size_t match_cap;
    kind_map_t *kmap; /* by process: its declared record kinds */
} exp_input_t;

struct eng {
    unsigned scan_threads; /* eng_set_scan_threads */
    unsigned scan_workers; /* how many the last aggregation used */
    int saturated; /* a sum of the last aggregation reached UINT64_MAX (sat_add_to) */
    uint32_t *sobj;   /* eng_stack_objects: its answer */
    size_t sobj_cap;
    uint64_t nselected; /* events of the last aggregation that passed the selection */
    eng_metric_def_t *metrics; /* the metric set (eng_metric_set) */
    int nmetrics;
    uint64_t *thread_vals; /* [threads_cap * nmetrics]: the threads' vectors */
    exp_input_t *in;
    size_t nin;
    sym_ctx_t *sym;
    eng_thread_t *threads;
    size_t nthreads, threads_cap;
    u64map_t thread_index; /* (exp, proc, tid) -> index */
    uint8_t *selected;     /* by index */
    char *selection;
    int select_all;
    uint64_t *total; /* [nmetrics] */
    exp_scan_stats_t stats;
    int aggregated;
    eng_table_t table;
    int table_kind, table_valid;
    eng_tree_t tree;
    int tree_kind, tree_valid;
    uint32_t *stamp;
    size_t stamp_cap;
    uint32_t serial;
    /* selection beyond threads */
    uint8_t *sample_sel, *cpu_sel; /* by number; NULL = all */
    size_t nsample_sel, ncpu_sel;
    char *sample_text, *cpu_text;
    flt_t *filter;
    uint64_t run_start;
    /* instructions (ENG_KIND_PC) and source lines (ENG_KIND_LINE), numbered as first seen */
    u64map_t pc_ids;      /* obj << 44 | addr -> pc id */
    uint32_t *pc_obj;
    uint64_t *pc_addr;
    uint32_t *pc_line;    /* pc id -> line id, UINT32_MAX until looked up */
    size_t npcs, pcs_cap;
    u64map_t line_ids;    /* file << 32 | line -> line id (file UINT32_MAX: no line information,
                             line is the function; bit 63: compiler-generated code of function
                             line in the file) */
    uint32_t *line_file, *line_no, *line_func;
    size_t nlines, lines_cap;
    char **files;
    size_t nfiles;
    char namebuf[4096];
    uint8_t *obj_mode; /* by sym object: enum eng_object_mode */
    size_t nobj_mode;
    int inlines;          /* inlined functions are frames of their own */
    int machine_view;     /* tally's own collector frames shown as recorded (viewmode machine) */
    uint8_t *inl_obj;     /* by sym object: 0 not known yet, 1 expand its inlines, 2 do not */
    size_t ninl_obj;
    u64map_t inl_map;     /* obj << 44 | addr -> 1 + offset in inl_seq of count, then count
                             pairs (inlined function, line id of its call site or UINT32_MAX) */
    uint32_t *inl_seq;
    size_t ninl_seq, inl_cap;
    uint32_t *xids, *xfrm; /* eng_map_stack's result */
    size_t xids_cap, xfrm_cap;
    /* eng_split_threads: every (thread, stack) pair's vector, summed by the aggregation */
    int split, split_done;
    u64map_t pair_index; /* thread index << 32 | stack -> pair */
    uint64_t *pair_key;  /* [pair] */
    uint64_t *pair_vec;  /* [pair * pair_w]: only the metrics some event gave a value (a clock
                            profile's few among all of them), so the rows of many pairs stay in
                            cache while events add to them in random order */
    int16_t *pair_col;   /* [nmetrics]: a metric's column in a pair row, -1: none yet */
    int pair_w;          /* the columns in use */
    uint64_t *pair_full; /* [nmetrics]: a row widened for eng_foreach_thread_stack's callback */
    size_t npairs, pairs_cap;
    uint64_t pair_last_key;
    uint32_t pair_last;
    /* profiled blocks (ENG_KIND_BLOCK): their call paths as stacks, each one's vector summed by
     * the aggregation under the selection, and the block metrics' indices */
    bstk_t *blocks;
    uint64_t *bvec; /* [stack * nmetrics] */
    int bm_calls, bm_q[BSTK_QMAX];
    uint8_t *leafonly; /* [nmetrics]: the block calls */
    char bm_names[BSTK_QMAX + 1][BSTK_QNAME + 2], bm_titles[BSTK_QMAX + 1][BSTK_QNAME + 16];
    /* a part of a job's aggregation (eng_set_share): the processes scanned, per experiment (a
     * copy of it narrowed to the share; NULL: all), no blocks when partial, the merging hook */
    exp_experiment_t *share;
    uint32_t *share_lo, *share_hi;
    int partial;
    eng_reduce_fn reduce;
    void *reduce_ctx;
    size_t nrec_threads; /* the threads of the logs' thread records, numbered first */
};

/* Parses a number list "all" | "3" | "1,3-5" into sel[0..max] (allocated); NULL sel = all. */
static int parse_list(const char *list, const char *what, size_t max, uint8_t **sel, size_t *n,
                      tally_err_t *err)
{
    *sel = NULL;
    *n = 0;
    if (!strcmp(list, "all"))
        return 0;
    uint8_t *s = calloc(max + 1, 1);
    if (!s)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    const char *p = list;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long lo = strtoul(p, &end, 10), hi;
        if (end == p || errno)
            goto bad;
        p = end;
        hi = lo;
        if (*p == '-') {
            hi = strtoul(++p, &end, 10);
            if (end == p || errno)
                goto bad;
            p = end;
        }
        if (hi < lo || hi > max) {
            free(s);
            return tally_errf(err, TALLY_EUSAGE, "%s selection '%s': the largest %s number is "
                              "%zu", what, list, what, max);
        }
        for (unsigned long i = lo; i <= hi; i++)
            s[i] = 1;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    *sel = s;
    *n = max + 1;
    return 0;
bad:
    free(s);
    return tally_errf(err, TALLY_EUSAGE, "%s selection '%s' is not a list such as 'all', '2' or "
                      "'1,3-5'", what, list);
}

/* Replaces a selection (*sel, *nsel, *text) by the list parsed against max. */
static int set_selection(eng_t *g, const char *list, const char *what, size_t max, uint8_t **sel,
                         size_t *nsel, char **text, tally_err_t *err)
{
    uint8_t *ns;
    size_t n;
    int rc = parse_list(list, what, max, &ns, &n, err);
    if (rc)
        return rc;
    char *nt = strdup(list);
    if (!nt) {
        free(ns);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    free(*sel);
    free(*text);
    *sel = ns;
    *nsel = n;
    *text = nt;
    g->aggregated = g->table_valid = g->tree_valid = 0; /* the next view scans again */
    return 0;
}

int eng_select_samples(eng_t *g, const char *list, tally_err_t *err)
{
    size_t max = 0;
    for (size_t x = 0; x < g->nin; x++)
        for (size_t p = 0; p < g->in[x].e->nprocs; p++)
            if (g->in[x].e->procs[p]->nsamples > max)
                max = g->in[x].e->procs[p]->nsamples;
    return set_selection(g, list, "sample", max, &g->sample_sel, &g->nsample_sel,
                         &g->sample_text, err);
}

int eng_select_cpus(eng_t *g, const char *list, tally_err_t *err)
{
    return set_selection(g, list, "CPU", 4095, &g->cpu_sel, &g->ncpu_sel, &g->cpu_text, err);
}

int eng_set_filter(eng_t *g, const char *expr, tally_err_t *err)
{
    flt_t *f = NULL;
    if (*expr && strcmp(expr, "none")) {
        int rc = flt_parse(expr, &f, err);
        if (rc)
            return rc;
    }
    flt_free(g->filter);
    g->filter = f;
    for (size_t x = 0; x < g->nin; x++) {
        for (size_t i = 0; i < g->in[x].match_cap; i++)
            free(g->in[x].match[i]);
        free(g->in[x].match);
        g->in[x].match = NULL;
        g->in[x].match_cap = 0;
    }
    g->aggregated = g->table_valid = g->tree_valid = 0; /* the next view scans again */
    return 0;
}

const char *eng_sample_selection(const eng_t *g) { return g->sample_text ? g->sample_text : "all"; }
const char *eng_cpu_selection(const eng_t *g) { return g->cpu_text ? g->cpu_text : "all"; }
const char *eng_filter(const eng_t *g) { return g->filter ? flt_text(g->filter) : "none"; }
uint64_t eng_run_start(const eng_t *g) { return g->run_start; }

uint32_t eng_sample_of(const eng_t *g, uint32_t exp, uint32_t proc, uint64_t t)
{
    const exp_process_t *p = g->in[exp].e->procs[proc];
    size_t lo = 0, hi = p->nsamples; /* the number of packets at or before t */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->samples[mid].t <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

static uint64_t thread_key(uint32_t exp, uint32_t proc, uint32_t tid)
{
    return (uint64_t)exp << 48 | (uint64_t)proc << 32 | tid;
}

static int thread_add(eng_t *g, uint32_t exp, uint32_t proc, uint32_t tid,
                      const exp_thread_t *info, uint32_t *index)
{
    int found;
    uint32_t *slot = u64map_slot(&g->thread_index, thread_key(exp, proc, tid), &found);
    if (!slot)
        return TALLY_ENOMEM;
    if (found) {
        *index = *slot;
        return 0;
    }
    if (g->nthreads == g->threads_cap) {
        size_t c1 = g->threads_cap, c2 = c1, c3 = c1; /* three arrays, one capacity */
        if (GROW(g->threads, g->nthreads, c1) || GROW(g->selected, g->nthreads, c2) ||
            GROW_W(g->thread_vals, g->nthreads, c3, (size_t)g->nmetrics))
            return TALLY_ENOMEM;
        g->threads_cap = c1;
        for (size_t i = 0; i < g->nthreads; i++)
            g->threads[i].value = g->thread_vals + i * (size_t)g->nmetrics;
    }
    eng_thread_t *t = &g->threads[g->nthreads];
    memset(t, 0, sizeof *t);
    t->value = g->thread_vals + g->nthreads * (size_t)g->nmetrics;
    memset(t->value, 0, (size_t)g->nmetrics * sizeof *t->value);
    t->number = (uint32_t)g->nthreads + 1;
    t->exp = exp;
    t->proc = proc;
    t->tid = tid;
    t->info = info;
    g->selected[g->nthreads] = (uint8_t)g->select_all;
    *slot = *index = (uint32_t)g->nthreads++;
    return 0;
}

/* The declared record kinds of every process of in, as the engine's metric indices. */
static int kind_maps(eng_t *g, exp_input_t *in)
{
    in->kmap = calloc(in->e->nprocs ? in->e->nprocs : 1, sizeof *in->kmap);
    if (!in->kmap)
        return TALLY_ENOMEM;
    for (size_t p = 0; p < in->e->nprocs; p++) {
        const exp_process_t *pr = in->e->procs[p];
        for (uint32_t c = 0; c < EXP_CTR_MAX; c++)
            in->kmap[p].counter[c] = -1;
        for (size_t c = 0; c < pr->ncounters; c++)
            in->kmap[p].counter[pr->counters[c].id] =
                eng_metric_find(g, pr->metrics[pr->counters[c].metric].name);
        uint32_t n = 0;
        for (size_t k = 0; k < pr->nkinds; k++)
            if (pr->kinds[k].id + 1 > n)
                n = pr->kinds[k].id + 1;
        if (!n)
            continue;
        kind_slot_t *slot = calloc(n, sizeof *slot);
        if (!slot)
            return TALLY_ENOMEM;
        in->kmap[p].slot = slot;
        in->kmap[p].nslots = n;
        for (size_t k = 0; k < pr->nkinds; k++) {
            const exp_kind_t *kd = &pr->kinds[k];
            kind_slot_t *s = &slot[kd->id];
            for (uint32_t i = 0; i < kd->nmetrics; i++) {
                int m = eng_metric_find(g, pr->metrics[kd->metric[i]].name);
                s->m[i] = (uint16_t)(m < 0 ? 0 : m);
                if (m < 0) /* beyond ENG_MAX_METRICS: the kind's later values are not shown */
                    break;
                s->n = i + 1;
            }
        }
    }
    return 0;
}

int eng_nmetrics(const eng_t *g) { return g->nmetrics; }
const eng_metric_def_t *eng_metric(const eng_t *g, int m) { return &g->metrics[m]; }

int eng_metric_find(const eng_t *g, const char *name)
{
    for (int m = 0; m < g->nmetrics; m++)
        if (!strcmp(g->metrics[m].name, name))
            return m;
    return -1;
}

/* Appends the metrics of profiled blocks to g's set when some process recorded blocks: the
 * calls, then one per quantity (names and titles kept in g). */
static int block_metrics(eng_t *g)
{
    g->bm_calls = -1;
    for (int q = 0; q < BSTK_QMAX; q++)
        g->bm_q[q] = -1;
    if (!g->blocks->any)
        return 0;
    const bstk_t *b = g->blocks;
    int want = 1 + (int)b->nq;
    if (g->nmetrics + want > ENG_MAX_METRICS)
        return 0; /* (no room: blocks are shown by -blocks only) */
    eng_metric_def_t *d = realloc(g->metrics, (size_t)(g->nmetrics + want) * sizeof *d);
    if (!d)
        return TALLY_ENOMEM;
    g->metrics = d;
    if (!(g->leafonly = calloc((size_t)(g->nmetrics + want), 1)))
        return TALLY_ENOMEM;
    g->leafonly[g->nmetrics] = 1;
    g->bm_calls = g->nmetrics;
    d[g->nmetrics++] = (eng_metric_def_t){ "bcalls", "Block Calls", "count", 1, "blocks", 0 };
    for (unsigned q = 0; q < b->nq; q++) {
        int wall = !strcmp(b->qname[q], "wall"), cpu = !strcmp(b->qname[q], "cpu");
        snprintf(g->bm_names[q], sizeof g->bm_names[q], "b%s", b->qname[q]);
        snprintf(g->bm_titles[q], sizeof g->bm_titles[q], "Block %s",
                 wall ? "Wall Time" : cpu ? "CPU Time" : b->qname[q]);
        for (char *c = g->bm_titles[q]; *c; c++) /* (words, for the columns' titles) */
            if (*c == '-' || *c == '_')
                *c = ' ';
        g->bm_q[q] = g->nmetrics;
        d[g->nmetrics++] = (eng_metric_def_t){ g->bm_names[q], g->bm_titles[q],
                                               wall || cpu ? "s" : "count", wall || cpu ? 1e-9 : 1,
                                               "blocks", wall || cpu };
    }
    return 0;
}

int eng_block_metric(const eng_t *g, int q)
{
    if (q < 0)
        return g->bm_calls;
    return q < BSTK_QMAX ? g->bm_q[q] : -1;
}

int eng_is_block_metric(const eng_t *g, int m)
{
    if (m < 0 || g->bm_calls < 0)
        return 0;
    return m == g->bm_calls || (m > g->bm_calls && m <= g->bm_calls + (int)g->blocks->nq);
}

eng_t *eng_new(exp_experiment_t **exps, size_t nexps, sym_ctx_t *sym)
{
    eng_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->in = calloc(nexps ? nexps : 1, sizeof *g->in);
    g->selection = strdup("all");
    if (!g->in || !g->selection) {
        eng_free(g);
        return NULL;
    }
    g->nin = nexps;
    g->sym = sym;
    tally_err_t err;
    if (bstk_build(exps, nexps, &g->blocks, &err) ||
        eng_metric_set(exps, nexps, &g->metrics, &g->nmetrics, &err) || block_metrics(g) ||
        !(g->total = calloc((size_t)g->nmetrics, sizeof *g->total))) {
        eng_free(g);
        return NULL;
    }
    g->select_all = 1;
    g->inlines = 1;
    eng_set_scan_threads(g, 0);
    g->run_start = UINT64_MAX;
    for (size_t x = 0; x < nexps; x++)
        for (size_t p = 0; p < exps[x]->nprocs; p++)
            if (exps[x]->procs[p]->t_start && exps[x]->procs[p]->t_start < g->run_start)
                g->run_start = exps[x]->procs[p]->t_start;
    if (g->run_start == UINT64_MAX)
        g->run_start = 0;
    for (size_t x = 0; x < nexps; x++) {
        g->in[x].e = exps[x];
        g->in[x].stacks = exp_stacks_new();
        if (!g->in[x].stacks || kind_maps(g, &g->in[x])) {
            eng_free(g);
            return NULL;
        }
        for (size_t p = 0; p < exps[x]->nprocs; p++) {
            const exp_process_t *pr = exps[x]->procs[p];
            for (size_t t = 0; t < pr->nthreads; t++) {
                uint32_t idx;
                if (thread_add(g, (uint32_t)x, (uint32_t)p, pr->threads[t].tid, &pr->threads[t],
                               &idx)) {
                    eng_free(g);
                    return NULL;
                }
            }
        }
    }
    g->nrec_threads = g->nthreads;
    return g;
}

void eng_free(eng_t *g)
{
    if (!g)
        return;
    for (size_t x = 0; x < g->nin; x++) {
        exp_input_t *in = &g->in[x];
        exp_stacks_free(in->stacks);
        free(in->vec);
        free(in->fids);
        free(in->fobj);
        free(in->faddr);
        free(in->foff);
        u64map_free(&in->pcs);
        for (size_t i = 0; i < in->ngpcs; i++)
            u64map_free(&in->gpcs[i]);
        free(in->gpcs);
        u64map_free(&in->objects);
        u64map_free(&in->leaf_real);
        free(in->real_pcs);
        for (size_t i = 0; i < in->match_cap; i++)
            free(in->match[i]);
        free(in->match);
        for (size_t p = 0; in->kmap && p < in->e->nprocs; p++)
            free(in->kmap[p].slot);
        free(in->kmap);
    }
    free(g->metrics);
    bstk_free(g->blocks);
    free(g->bvec);
    free(g->leafonly);
    free(g->total);
    free(g->thread_vals);
    free(g->obj_mode);
    u64map_free(&g->inl_map);
    free(g->inl_seq);
    free(g->xids);
    free(g->xfrm);
    u64map_free(&g->pair_index);
    free(g->pair_key);
    free(g->pair_vec);
    free(g->pair_col);
    free(g->pair_full);
    free(g->inl_obj);
    u64map_free(&g->pc_ids);
    free(g->pc_obj);
    free(g->pc_addr);
    free(g->pc_line);
    u64map_free(&g->line_ids);
    free(g->line_file);
    free(g->line_no);
    free(g->line_func);
    for (size_t i = 0; i < g->nfiles; i++)
        free(g->files[i]);
    free(g->files);
    free(g->sobj);
    free(g->sample_sel);
    free(g->cpu_sel);
    free(g->sample_text);
    free(g->cpu_text);
    flt_free(g->filter);
    free(g->in);
    free(g->threads);
    free(g->selected);
    free(g->selection);
    u64map_free(&g->thread_index);
    eng_table_release(&g->table);
    free(g->tree.nodes);
    free(g->tree.values);
    free(g->stamp);
    free(g->share);
    free(g->share_lo);
    free(g->share_hi);
    free(g);
}

/* ---- threads and selection ------------------------------------------------------------------ */

size_t eng_nthreads(const eng_t *g) { return g->nthreads; }
const eng_thread_t *eng_thread(const eng_t *g, size_t i) { return &g->threads[i]; }
const char *eng_thread_selection(const eng_t *g) { return g->selection; }

int eng_select_threads(eng_t *g, const char *list, tally_err_t *err)
{
    uint8_t *sel = calloc(g->threads_cap ? g->threads_cap : 1, 1);
    char *copy = strdup(list);
    if (!sel || !copy) {
        free(sel);
        free(copy);
        return tally_errf(err, TALLY_ENOMEM, "out of memory selecting threads");
    }
    int all = !strcmp(list, "all");
    if (all) {
        memset(sel, 1, g->nthreads);
    } else {
        const char *p = list;
        while (*p) {
            char *end;
            errno = 0;
            unsigned long lo = strtoul(p, &end, 10), hi = lo;
            if (end == p || errno)
                goto bad;
            p = end;
            if (*p == '-') {
                p++;
                hi = strtoul(p, &end, 10);
                if (end == p || errno)
                    goto bad;
                p = end;
            }
            if (lo < 1 || hi < lo || hi > g->nthreads) {
                free(sel);
                free(copy);
                return tally_errf(err, TALLY_EUSAGE,
                                  "thread selection '%s': threads are numbered 1 to %zu "
                                  "(see -thread_list)", list, g->nthreads);
            }
            for (unsigned long i = lo; i <= hi; i++)
                sel[i - 1] = 1;
            if (*p == ',')
                p++;
            else if (*p)
                goto bad;
        }
    }
    free(g->selected);
    g->selected = sel;
    free(g->selection);
    g->selection = copy;
    g->select_all = all;
    g->aggregated = g->table_valid = g->tree_valid = 0; /* the next view scans again */
    return 0;
bad:
    free(sel);
    free(copy);
    return tally_errf(err, TALLY_EUSAGE,
                      "thread selection '%s' is not a list such as 'all', '2' or '1,3-5'", list);
}

int eng_thread_selected(const eng_t *g, size_t i)
{
    return i < g->nthreads && (g->select_all || (g->selected && g->selected[i]));
}

/* ---- aggregation ---------------------------------------------------------------------------- */

typedef struct scan_ctx {
    eng_t *g;
    uint32_t exp;
    int err;
    uint64_t last_key; /* one-entry cache of the thread lookup */
    uint32_t last_index;
    eng_event_fn fn; /* eng_foreach_event: called instead of aggregating */
    void *fn_ctx;
    hm_t *heap;         /* the live blocks of process heap_proc (leaks) */
    uint32_t heap_proc;
    uint64_t *vbuf; /* eng_foreach_event: the event's vector [nmetrics] */
} scan_ctx_t;

static int resolve_stacks(eng_t *g, tally_err_t *err);

typedef struct match_ctx {
    eng_t *g;
    exp_input_t *in;
    uint32_t stack;
} match_ctx_t;

/* Filter callback: does stack (leaf only, or any frame) hold a function matching the pattern? */
static int stack_match(void *ctx, uint32_t term, int leaf)
{
    match_ctx_t *m = ctx;
    exp_input_t *in = m->in;
    size_t k = 2 * (size_t)term + (size_t)leaf;
    size_t need = exp_stacks_count(in->stacks);
    if (!in->match) {
        in->match = calloc(2 * flt_npatterns(m->g->filter), sizeof *in->match);
        if (!in->match)
            return 0;
        in->match_cap = 2 * flt_npatterns(m->g->filter);
    }
    /* each array holds one byte per stack; its size lives in its first 8 bytes */
    uint8_t *a = in->match[k];
    size_t have = a ? *(size_t *)a : 0;
    if (m->stack >= have) {
        size_t ncap = need > 2 * have ? need + 64 : 2 * have + 64;
        uint8_t *na = realloc(a, sizeof(size_t) + ncap);
        if (!na)
            return 0;
        memset(na + sizeof(size_t) + have, 0, ncap - have);
        *(size_t *)na = ncap;
        in->match[k] = a = na;
    }
    uint8_t *cell = a + sizeof(size_t) + m->stack;
    if (*cell)
        return *cell == 2;
    tally_err_t err;
    if (m->stack >= in->nresolved && resolve_stacks(m->g, &err))
        return 0;
    const char *pat = flt_pattern(m->g->filter, term);
    size_t f0 = in->foff[m->stack], f1 = in->foff[m->stack + 1];
    if (leaf && f1 > f0 + 1)
        f1 = f0 + 1;
    int yes = 0;
    for (size_t i = f0; i < f1 && !yes; i++) {
        const sym_func_t *fn = sym_func(m->g->sym, in->fids[i]);
        yes = !fnmatch(pat, fn->name, 0) || !fnmatch(pat, fn->long_name, 0);
    }
    *cell = yes ? 2 : 1;
    return yes;
}

/* The selection beyond threads: samples, CPUs, the filter. */
static int passes(eng_t *g, scan_ctx_t *c, const exp_event_t *ev, uint32_t index)
{
    uint32_t sample = 0;
    if (g->sample_sel || g->filter)
        sample = eng_sample_of(g, c->exp, ev->proc, ev->t);
    if (g->sample_sel && (sample >= g->nsample_sel || !g->sample_sel[sample]))
        return 0;
    if (g->cpu_sel && (ev->cpu >= g->ncpu_sel || !g->cpu_sel[ev->cpu]))
        return 0;
    if (!g->filter)
        return 1;
    flt_event_t fe;
    fe.v[FLT_THRID] = index + 1;
    fe.v[FLT_TID] = ev->tid;
    fe.v[FLT_PID] = g->in[c->exp].e->procs[ev->proc]->pid;
    fe.v[FLT_EXPID] = c->exp + 1;
    fe.v[FLT_CPUID] = ev->cpu;
    fe.v[FLT_SAMPLE] = sample;
    fe.v[FLT_TSTAMP] = ev->t > g->run_start ? ev->t - g->run_start : 0;
    fe.v[FLT_STATE] = ev->state;
    match_ctx_t mc = { g, &g->in[c->exp], ev->stack };
    return flt_eval(g->filter, &fe, stack_match, &mc);
}

static int grow_stack_arrays(exp_input_t *in, size_t need, size_t nm)
{
    if (need <= in->cap)
        return 0;
    return GROW_W_ZERO(in->vec, need - 1, in->cap, nm);
}

/* ---- leaks: the blocks of a process still allocated when its events end ----------------------- */

enum { LEAK_SELECTED = 1 }; /* hm_info_t.flags: the allocation passed the selection */

static void add_leak(void *ctx, const hm_block_t *b)
{
    scan_ctx_t *c = ctx;
    eng_t *g = c->g;
    eng_thread_t *t = &g->threads[b->info.thread];
    t->value[ENG_M_HEAPLEAKCNT]++;
    g->saturated |= sat_add_to(&t->value[ENG_M_HEAPLEAKBYTES], b->size);
    exp_input_t *in = &g->in[c->exp];
    if (!(b->info.flags & LEAK_SELECTED) || b->info.stack >= in->cap)
        return;
    uint64_t *sv = in->vec + (size_t)b->info.stack * (size_t)g->nmetrics;
    sv[ENG_M_HEAPLEAKCNT]++;
    g->saturated |= sat_add_to(&sv[ENG_M_HEAPLEAKBYTES], b->size);
    g->total[ENG_M_HEAPLEAKCNT]++;
    g->saturated |= sat_add_to(&g->total[ENG_M_HEAPLEAKBYTES], b->size);
}

/* The blocks of the process scanned so far are its leaks. */
static void leaks_flush(scan_ctx_t *c)
{
    if (c->heap && hm_count(c->heap)) {
        hm_foreach(c->heap, add_leak, c);
        hm_clear(c->heap);
    }
}

/* A HEAP_ALLOC (thread index, selected or not) or HEAP_FREE of the aggregation. */
static int heap_event(scan_ctx_t *c, const exp_event_t *ev, uint32_t index, int selected)
{
    if (!c->heap && !(c->heap = hm_new()))
        return TALLY_ENOMEM;
    if (ev->proc != c->heap_proc) {
        leaks_flush(c);
        c->heap_proc = ev->proc;
    }
    int mapped = ev->call == EXP_HEAP_MMAP || ev->call == EXP_HEAP_MREMAP;
    if (ev->type == EXP_REC_HEAP_FREE) {
        hm_release(c->heap, ev->addr, ev->size, mapped, NULL, NULL);
        return 0;
    }
    hm_info_t info = { .stack = ev->stack, .thread = index, .t = ev->t,
                       .flags = selected ? LEAK_SELECTED : 0 };
    return hm_alloc(c->heap, ev->addr, ev->size, mapped, &info, NULL, NULL);
}

/* eng_split_threads: a column for metric m in every pair row (rows widen by one, moved in
 * place from the last; the new column zero). At most once per metric in an aggregation. */
static int pair_widen(eng_t *g, int m)
{
    if (!g->pair_col) {
        g->pair_col = malloc((size_t)g->nmetrics * sizeof *g->pair_col);
        if (!g->pair_col)
            return TALLY_ENOMEM;
        for (int k = 0; k < g->nmetrics; k++)
            g->pair_col[k] = -1;
    }
    size_t w = (size_t)g->pair_w, nw = w + 1;
    if (g->pairs_cap) {
        uint64_t *nv = realloc(g->pair_vec, g->pairs_cap * nw * sizeof *nv);
        if (!nv)
            return TALLY_ENOMEM;
        g->pair_vec = nv;
        for (size_t i = g->npairs; i-- > 0;) {
            memmove(nv + i * nw, nv + i * w, w * sizeof *nv);
            nv[i * nw + w] = 0;
        }
    }
    g->pair_col[m] = (int16_t)w;
    g->pair_w = (int)nw;
    return 0;
}

/* eng_split_threads: adds an event's values to its (thread, stack) pair. */
static int pair_add(eng_t *g, uint32_t thread, uint32_t stack, const evvals_t *e)
{
    for (int k = 0; k < e->n; k++)
        if (e->v[k] && (!g->pair_col || g->pair_col[e->m[k]] < 0) && pair_widen(g, e->m[k]))
            return TALLY_ENOMEM;
    size_t w = (size_t)g->pair_w;
    uint64_t key = (uint64_t)thread << 32 | stack;
    if (key != g->pair_last_key) { /* (a thread often repeats its stack: one compare) */
        int found;
        uint32_t *slot = u64map_slot(&g->pair_index, key, &found);
        if (!slot)
            return TALLY_ENOMEM;
        if (!found) {
            if (g->npairs == g->pairs_cap) {
                size_t ncap = g->pairs_cap ? g->pairs_cap * 2 : 1024;
                uint64_t *nk = realloc(g->pair_key, ncap * sizeof *nk);
                if (nk)
                    g->pair_key = nk;
                uint64_t *nv = realloc(g->pair_vec, ncap * (w ? w : 1) * sizeof *nv);
                if (nv)
                    g->pair_vec = nv;
                if (!nk || !nv)
                    return TALLY_ENOMEM;
                g->pairs_cap = ncap;
            }
            *slot = (uint32_t)g->npairs;
            g->pair_key[g->npairs] = key;
            memset(g->pair_vec + g->npairs * w, 0, w * sizeof *g->pair_vec);
            g->npairs++;
        }
        g->pair_last_key = key;
        g->pair_last = *slot;
    }
    uint64_t *pv = g->pair_vec + (size_t)g->pair_last * w;
    for (int k = 0; k < e->n; k++)
        if (e->v[k])
            g->saturated |= sat_add_to(&pv[g->pair_col[e->m[k]]], e->v[k]);
    return 0;
}

static int on_event(void *ctx, const exp_event_t *ev)
{
    scan_ctx_t *c = ctx;
    eng_t *g = c->g;
    evvals_t e;
    if (ev->type == EXP_REC_HEAP_FREE && !c->fn) /* every thread's frees, selected or not */
        return (c->err = heap_event(c, ev, 0, 0)) != 0;
    if (!event_values(ev, g->in[c->exp].kmap, &e))
        return 0;
    uint64_t key = thread_key(c->exp, ev->proc, ev->tid);
    uint32_t index;
    if (key == c->last_key) {
        index = c->last_index;
    } else {
        const uint32_t *found = u64map_get(&g->thread_index, key);
        if (found) {
            index = *found;
        } else if ((c->err = thread_add(g, c->exp, ev->proc, ev->tid, NULL, &index))) {
            return 1;
        }
        c->last_key = key;
        c->last_index = index;
    }
    if (c->fn) { /* eng_foreach_event */
        if (!g->selected[index] || !passes(g, c, ev, index))
            return 0;
        exp_input_t *in = &g->in[c->exp];
        tally_err_t err;
        if (ev->stack >= in->nresolved && resolve_stacks(g, &err))
            return 1;
        size_t f0 = in->foff[ev->stack], f1 = in->foff[ev->stack + 1];
        uint32_t leaf = f1 > f0 ? in->fids[f0] : sym_func_unknown(g->sym);
        uint64_t *v = c->vbuf;
        memset(v, 0, (size_t)g->nmetrics * sizeof *v);
        for (int k = 0; k < e.n; k++)
            sat_add_to(&v[e.m[k]], e.v[k]);
        return c->fn(c->fn_ctx, ev, v, leaf, index);
    }
    eng_thread_t *t = &g->threads[index];
    t->events++;
    for (int k = 0; k < e.n; k++)
        g->saturated |= sat_add_to(&t->value[e.m[k]], e.v[k]);
    exp_input_t *in = &g->in[c->exp];
    if (ev->stack >= in->cap &&
        (c->err = grow_stack_arrays(in, (size_t)ev->stack + 1, (size_t)g->nmetrics)))
        return 1;
    int selected = g->selected[index] && passes(g, c, ev, index);
    if (ev->type == EXP_REC_HEAP_ALLOC && (c->err = heap_event(c, ev, index, selected)))
        return 1;
    if (!selected)
        return 0;
    g->nselected++;
    uint64_t *sv = in->vec + (size_t)ev->stack * (size_t)g->nmetrics;
    for (int k = 0; k < e.n; k++) {
        g->saturated |= sat_add_to(&sv[e.m[k]], e.v[k]);
        g->saturated |= sat_add_to(&g->total[e.m[k]], e.v[k]);
    }
    if (g->split && e.n && (c->err = pair_add(g, index, ev->stack, &e)))
        return 1;
    return 0;
}

/* ---- the parallel aggregation: without a selection and without heap events, a sum ------------ */

void eng_set_scan_threads(eng_t *g, unsigned n)
{
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus;
    }
    g->scan_threads = n > 64 ? 64 : n;
}

unsigned eng_scan_workers(const eng_t *g) { return g->scan_workers; }

/* A thread as one worker saw it: its sums and its first event (in the serial scan's order). */
typedef struct pthread_sum {
    uint32_t proc, tid, stream;
    uint64_t t, ord; /* the first event: its time, its place in its stream */
    uint64_t events;
} pthread_sum_t;

/* A clock event without a runtime state (most events of a profile) adds its weight to one of the
 * state metrics, to Total Thread Time and, for user and system time, to Total CPU Time: a worker
 * sums such events by state only, and par_merge turns the sums into the metrics. A stack's user
 * and system time are 16 bytes (cpu), its other states 32 more elsewhere (off), where its full
 * vector spans 4 cache lines: the rows of all the stacks stay in the cache while events add to
 * them in random order. Every other event adds its values to the full vectors. The sums are the
 * same: every one saturates at UINT64_MAX, and a sum of saturated partial sums is the saturated
 * sum. */
#define PCLK 8 /* a thread's row of weights by state: EXP_STATE_COUNT, rounded up */
_Static_assert(EXP_STATE_COUNT <= PCLK && EXP_STATE_USER == 0 && EXP_STATE_SYSTEM == 1 &&
                   EXP_STATE_COUNT == 6, "the clock rows hold every state");

typedef struct pwork {
    uint64_t *cpu; /* [provisional stack * 2]: plain clock weights in states USER, SYSTEM */
    uint64_t *off; /* [provisional stack * 4]: in WAIT, LOCK, IO, SLEEP */
    size_t clk_cap;
    uint64_t *vec; /* [provisional stack * nmetrics]: the other events' values (NULL: none yet) */
    size_t cap;
    u64map_t thr; /* proc << 32 | tid -> index in th */
    pthread_sum_t *th;
    uint64_t *thval; /* [index * nmetrics] */
    uint64_t *thclk; /* [index * PCLK] */
    size_t nth, thcap;
    uint64_t last_key; /* the thread of the last event with a metric: its key, its index, */
    uint32_t last;
    uint64_t *last_clk, *last_events; /* its clock row and its events (on_event_par) */
    uint32_t cur_proc, cur_stream; /* the stream being read and its events so far */
    uint64_t ord;
    int saturated, err;
} pwork_t;

typedef struct par_ctx {
    eng_t *g;
    const kind_map_t *kmap;
    pwork_t *w;
} par_ctx_t;

static int par_thread(pwork_t *w, size_t nm, const exp_event_t *ev, uint64_t key, uint32_t *index)
{
    int found;
    uint32_t *slot = u64map_slot(&w->thr, key, &found);
    if (!slot)
        return TALLY_ENOMEM;
    if (found) {
        pthread_sum_t *th = &w->th[*slot];
        if (ev->t < th->t || (ev->t == th->t && (ev->stream < th->stream ||
                                                (ev->stream == th->stream && w->ord < th->ord)))) {
            th->t = ev->t;
            th->stream = ev->stream;
            th->ord = w->ord;
        }
        *index = *slot;
        return 0;
    }
    if (w->nth == w->thcap) {
        size_t ncap = w->thcap ? 2 * w->thcap : 16;
        pthread_sum_t *nt = realloc(w->th, ncap * sizeof *nt);
        if (nt)
            w->th = nt;
        uint64_t *nv = realloc(w->thval, ncap * nm * sizeof *nv);
        if (nv)
            w->thval = nv;
        uint64_t *nc = realloc(w->thclk, ncap * PCLK * sizeof *nc);
        if (nc)
            w->thclk = nc;
        if (!nt || !nv || !nc)
            return TALLY_ENOMEM;
        w->thcap = ncap;
    }
    w->th[w->nth] = (pthread_sum_t){ ev->proc, ev->tid, ev->stream, ev->t, w->ord, 0 };
    memset(w->thval + w->nth * nm, 0, nm * sizeof *w->thval);
    memset(w->thclk + w->nth * PCLK, 0, PCLK * sizeof *w->thclk);
    *slot = *index = (uint32_t)w->nth++;
    return 0;
}

/* Adds a plain clock event's weight in state s (< EXP_STATE_COUNT) to stack's row: 1 when the
 * sum saturated. */
static inline int par_stack_clock(pwork_t *w, uint32_t stack, uint32_t s, uint64_t weight)
{
    if (__builtin_expect(s <= EXP_STATE_SYSTEM, 1))
        return sat_add_to(&w->cpu[(size_t)stack * 2 + s], weight);
    return sat_add_to(&w->off[(size_t)stack * 4 + s - 2], weight);
}

/* Room in a worker's rows of width wd for provisional stack id: 0 or TALLY_ENOMEM. */
static int par_rows(uint64_t **rows, size_t *cap, uint32_t id, size_t wd)
{
    size_t ncap = *cap ? *cap : 1024;
    while (ncap <= id)
        ncap *= 2;
    uint64_t *v = realloc(*rows, ncap * wd * sizeof *v);
    if (!v)
        return TALLY_ENOMEM;
    memset(v + *cap * wd, 0, (ncap - *cap) * wd * sizeof *v);
    *rows = v;
    *cap = ncap;
    return 0;
}

/* on_event_par for any event: the first of a stream or a thread, an event of another kind than
 * a plain clock event, a stack beyond the rows. */
static __attribute__((noinline)) int on_event_par_any(par_ctx_t *pc, pwork_t *w,
                                                     const exp_event_t *ev)
{
    size_t nm = (size_t)pc->g->nmetrics;
    if (ev->proc != w->cur_proc || ev->stream != w->cur_stream) { /* a worker reads whole streams */
        w->cur_proc = ev->proc;
        w->cur_stream = ev->stream;
        w->ord = 0;
    }
    w->ord++;
    if (ev->type == EXP_REC_HEAP_ALLOC || ev->type == EXP_REC_HEAP_FREE)
        return EXP_SCAN_NEED_ORDER; /* leaks: frees matched to allocations in time order */
    int plain = ev->type == EXP_REC_CLOCK && ev->rstate == EXP_RSTATE_NONE;
    evvals_t e;
    if (!plain && !event_values(ev, pc->kmap, &e))
        return 0;
    uint64_t key = (uint64_t)ev->proc << 32 | ev->tid;
    uint32_t index;
    if (key == w->last_key) {
        index = w->last;
    } else {
        if ((w->err = par_thread(w, nm, ev, key, &index)))
            return 1;
        w->last_key = key;
        w->last = index;
    }
    w->th[index].events++;
    w->last_clk = w->thclk + (size_t)index * PCLK; /* (par_thread may have moved them) */
    w->last_events = &w->th[index].events;
    if (plain) {
        uint32_t s = ev->state < EXP_STATE_COUNT ? ev->state : EXP_STATE_SLEEP; /* as
                                                                   contribute_clock counts it */
        if (ev->stack >= w->clk_cap) {
            size_t cap = w->clk_cap;
            if ((w->err = par_rows(&w->cpu, &cap, ev->stack, 2)) ||
                (w->err = par_rows(&w->off, &w->clk_cap, ev->stack, 4)))
                return 1;
        }
        w->saturated |= sat_add_to(&w->thclk[(size_t)index * PCLK + s], ev->weight);
        w->saturated |= par_stack_clock(w, ev->stack, s, ev->weight);
        return 0;
    }
    uint64_t *tv = w->thval + (size_t)index * nm;
    if (ev->stack >= w->cap && (w->err = par_rows(&w->vec, &w->cap, ev->stack, nm)))
        return 1;
    uint64_t *sv = w->vec + (size_t)ev->stack * nm;
    for (int k = 0; k < e.n; k++) {
        w->saturated |= sat_add_to(&tv[e.m[k]], e.v[k]);
        w->saturated |= sat_add_to(&sv[e.m[k]], e.v[k]);
    }
    return 0;
}

/* The parallel scan's callback. Most events are plain clock events of the thread and stream of
 * the event before, with a stack the rows already have: they take this path (the first lines of
 * on_event_par_any, which does the same for them). */
static int on_event_par(void *ctx, unsigned worker, const exp_event_t *ev)
{
    par_ctx_t *pc = ctx;
    pwork_t *w = &pc->w[worker];
    if (__builtin_expect(ev->type == EXP_REC_CLOCK && ev->rstate == EXP_RSTATE_NONE &&
                             ev->stream == w->cur_stream && ev->proc == w->cur_proc &&
                             ((uint64_t)ev->proc << 32 | ev->tid) == w->last_key &&
                             ev->stack < w->clk_cap, 1)) {
        w->ord++;
        (*w->last_events)++;
        uint32_t s = ev->state < EXP_STATE_COUNT ? ev->state : EXP_STATE_SLEEP;
        w->saturated |= sat_add_to(&w->last_clk[s], ev->weight);
        w->saturated |= par_stack_clock(w, ev->stack, s, ev->weight);
        return 0;
    }
    return on_event_par_any(pc, w, ev);
}

/* Adds the plain clock weights by state clk[PCLK] to the metrics of vector v (and of the totals
 * when tot is not NULL), as contribute_clock adds each event's. */
static int par_clock_add(uint64_t *v, uint64_t *tot, const uint64_t *clk)
{
    static const int state_metric[EXP_STATE_COUNT] = {
        [EXP_STATE_USER] = ENG_M_USER, [EXP_STATE_SYSTEM] = ENG_M_SYSTEM,
        [EXP_STATE_WAIT] = ENG_M_WAIT, [EXP_STATE_LOCK] = ENG_M_LOCK,
        [EXP_STATE_IO] = ENG_M_IO,     [EXP_STATE_SLEEP] = ENG_M_SLEEP,
    };
    int sat = 0;
    for (int s = 0; s < EXP_STATE_COUNT; s++) {
        uint64_t x = clk[s];
        if (!x)
            continue;
        int m = state_metric[s], cpu = m == ENG_M_USER || m == ENG_M_SYSTEM;
        sat |= sat_add_to(&v[m], x);
        sat |= sat_add_to(&v[ENG_M_TOTAL], x);
        if (cpu)
            sat |= sat_add_to(&v[ENG_M_TOTALCPU], x);
        if (tot) {
            sat |= sat_add_to(&tot[m], x);
            sat |= sat_add_to(&tot[ENG_M_TOTAL], x);
            if (cpu)
                sat |= sat_add_to(&tot[ENG_M_TOTALCPU], x);
        }
    }
    return sat;
}

typedef struct pfirst {
    uint32_t proc, tid, stream;
    uint64_t t, ord;
} pfirst_t;

static int cmp_first(const void *a, const void *b)
{
    const pfirst_t *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* Adds what the workers summed: threads first seen in the serial scan's order, then the sums. */
static int par_merge(eng_t *g, uint32_t exp, pwork_t *ws, unsigned nw, uint32_t **remap)
{
    size_t nm = (size_t)g->nmetrics, nfirst = 0;
    exp_input_t *in = &g->in[exp];
    for (unsigned w = 0; w < nw; w++)
        nfirst += ws[w].nth;
    pfirst_t *first = malloc((nfirst ? nfirst : 1) * sizeof *first);
    if (!first)
        return TALLY_ENOMEM;
    size_t k = 0;
    for (unsigned w = 0; w < nw; w++)
        for (size_t i = 0; i < ws[w].nth; i++) {
            const pthread_sum_t *th = &ws[w].th[i];
            first[k++] = (pfirst_t){ th->proc, th->tid, th->stream, th->t, th->ord };
        }
    qsort(first, nfirst, sizeof *first, cmp_first);
    int rc = 0;
    for (size_t i = 0; i < nfirst && !rc; i++) {
        uint32_t index;
        rc = thread_add(g, exp, first[i].proc, first[i].tid, NULL, &index);
    }
    free(first);
    size_t nstacks = exp_stacks_count(in->stacks);
    if (rc || (rc = grow_stack_arrays(in, nstacks, nm)))
        return rc;
    for (unsigned w = 0; w < nw; w++) {
        pwork_t *pw = &ws[w];
        g->saturated |= pw->saturated;
        for (size_t i = 0; i < pw->nth; i++) {
            const pthread_sum_t *th = &pw->th[i];
            const uint32_t *index = u64map_get(&g->thread_index, thread_key(exp, th->proc, th->tid));
            eng_thread_t *t = &g->threads[*index];
            const uint64_t *v = pw->thval + i * nm;
            t->events += th->events;
            g->nselected += th->events;
            for (size_t m = 0; m < nm; m++)
                if (v[m])
                    g->saturated |= sat_add_to(&t->value[m], v[m]);
            g->saturated |= par_clock_add(t->value, NULL, pw->thclk + i * PCLK);
        }
        for (size_t s = 0; s < pw->clk_cap; s++) {
            const uint64_t c[EXP_STATE_COUNT] = { pw->cpu[2 * s], pw->cpu[2 * s + 1],
                                                  pw->off[4 * s], pw->off[4 * s + 1],
                                                  pw->off[4 * s + 2], pw->off[4 * s + 3] };
            int any = 0;
            for (int k = 0; k < EXP_STATE_COUNT; k++)
                any |= c[k] != 0;
            if (any) /* (rows past the worker's stacks are zero: its remap ends with them) */
                g->saturated |= par_clock_add(in->vec + (size_t)remap[w][s] * nm, g->total, c);
        }
        for (size_t s = 0; s < pw->cap; s++) {
            const uint64_t *v = pw->vec + s * nm;
            uint64_t *sv = NULL;
            for (size_t m = 0; m < nm; m++) {
                if (!v[m])
                    continue;
                if (!sv)
                    sv = in->vec + (size_t)remap[w][s] * nm;
                g->saturated |= sat_add_to(&sv[m], v[m]);
                g->saturated |= sat_add_to(&g->total[m], v[m]);
            }
        }
    }
    return 0;
}

/* Aggregates experiment x with the parallel scan: 0 done, EXP_SCAN_NEED_ORDER (nothing changed:
 * the serial scan is needed), or an error. */
static int aggregate_parallel(eng_t *g, uint32_t x, const exp_experiment_t *scan_e,
                              exp_scan_stats_t *st, tally_err_t *err)
{
    unsigned nw = g->scan_threads;
    exp_input_t *in = &g->in[x];
    pwork_t *ws = calloc(nw, sizeof *ws);
    uint32_t **remap = calloc(nw, sizeof *remap);
    if (!ws || !remap) {
        free(ws);
        free(remap);
        return tally_errf(err, TALLY_ENOMEM, "out of memory aggregating '%s'", in->e->path);
    }
    for (unsigned w = 0; w < nw; w++) {
        ws[w].last_key = UINT64_MAX;
        ws[w].cur_proc = UINT32_MAX;
    }
    par_ctx_t pc = { g, in->kmap, ws };
    int rc = exp_scan_parallel(scan_e, in->stacks, nw, on_event_par, &pc, remap, st, err);
    for (unsigned w = 0; w < nw && rc == 1; w++)
        if (ws[w].err)
            rc = tally_errf(err, ws[w].err, "out of memory aggregating '%s'", in->e->path);
    if (rc == 0 && (rc = par_merge(g, x, ws, nw, remap)))
        rc = tally_errf(err, rc, "out of memory aggregating '%s'", in->e->path);
    for (unsigned w = 0; w < nw; w++) {
        free(ws[w].vec);
        free(ws[w].cpu);
        free(ws[w].off);
        u64map_free(&ws[w].thr);
        free(ws[w].th);
        free(ws[w].thval);
        free(ws[w].thclk);
        free(remap[w]);
    }
    free(ws);
    free(remap);
    return rc;
}

/* ---- profiled blocks: their kind's stacks ------------------------------------------------------ */

typedef struct bmatch {
    const eng_t *g;
    size_t stack;
} bmatch_t;

/* Filter callback for a block stack: does its leaf (or some frame) have a matching name? */
static int block_match(void *ctx, uint32_t term, int leaf)
{
    const bmatch_t *m = ctx;
    const bstk_t *b = m->g->blocks;
    const char *pat = flt_pattern(m->g->filter, term);
    for (long k = (long)m->stack; k >= 0; k = b->stacks[k].parent) {
        if (!fnmatch(pat, b->names[b->stacks[k].block], 0))
            return 1;
        if (leaf)
            break;
    }
    return 0;
}

/* A selection that cannot apply to the block kind: block paths are sums over each thread's run,
 * not events in time. */
static int block_selection_error(const eng_t *g, tally_err_t *err)
{
    const char *what = g->sample_sel ? "a sample selection (-sample_select)"
                       : g->cpu_sel  ? "a CPU selection (-cpu_select)"
                       : g->filter && (flt_uses(g->filter, FLT_TSTAMP) ||
                                       flt_uses(g->filter, FLT_SAMPLE) ||
                                       flt_uses(g->filter, FLT_CPUID) ||
                                       flt_uses(g->filter, FLT_STATE))
                           ? "a filter on TSTAMP, SAMPLE, CPUID or STATE"
                           : NULL;
    if (!what)
        return 0;
    return tally_errf(err, TALLY_EUSAGE, "profiled blocks are measured over each thread's whole "
                      "run, so %s does not apply to them: select threads (-thread_select, or a "
                      "filter on THRID, TID, PID, EXPID or block names), or see how blocks "
                      "change over time with -callstack_history", what);
}

/* Sums each block stack's calls and quantities into its vector (when it passes the selection),
 * its thread's and the totals. */
static int aggregate_blocks(eng_t *g)
{
    const bstk_t *b = g->blocks;
    size_t nm = (size_t)g->nmetrics;
    if (!b->nstacks || g->bm_calls < 0)
        return 0;
    if (!g->bvec && !(g->bvec = malloc(b->nstacks * nm * sizeof *g->bvec)))
        return TALLY_ENOMEM;
    memset(g->bvec, 0, b->nstacks * nm * sizeof *g->bvec);
    /* a sample or CPU selection, or a filter on time: nothing of the blocks is selected (their
     * views say why, block_selection_error) */
    int none = block_selection_error(g, &(tally_err_t){ 0 }) != 0;
    for (size_t s = 0; s < b->nstacks; s++) {
        const bstk_stack_t *st = &b->stacks[s];
        uint32_t index;
        if (thread_add(g, st->exp, st->proc, st->tid, NULL, &index))
            return TALLY_ENOMEM;
        uint64_t v[1 + BSTK_QMAX];
        int m[1 + BSTK_QMAX], n = 0;
        m[n] = g->bm_calls, v[n++] = st->calls;
        for (unsigned q = 0; q < b->nq; q++)
            if (g->bm_q[q] >= 0)
                m[n] = g->bm_q[q], v[n++] = st->excl[q];
        eng_thread_t *t = &g->threads[index];
        for (int k = 0; k < n; k++)
            g->saturated |= sat_add_to(&t->value[m[k]], v[k]);
        if (none || !g->selected[index])
            continue;
        if (g->filter) {
            flt_event_t fe = { { 0 } };
            fe.v[FLT_THRID] = index + 1;
            fe.v[FLT_TID] = st->tid;
            fe.v[FLT_PID] = g->in[st->exp].e->procs[st->proc]->pid;
            fe.v[FLT_EXPID] = st->exp + 1;
            bmatch_t bm = { g, s };
            if (!flt_eval(g->filter, &fe, block_match, &bm))
                continue;
        }
        uint64_t *sv = g->bvec + s * nm;
        for (int k = 0; k < n; k++) {
            sv[m[k]] = v[k];
            g->saturated |= sat_add_to(&g->total[m[k]], v[k]);
        }
    }
    return 0;
}

static int aggregate_scan(eng_t *g, tally_err_t *err)
{
    size_t nm = (size_t)g->nmetrics;
    memset(g->total, 0, nm * sizeof *g->total);
    memset(&g->stats, 0, sizeof g->stats);
    g->saturated = 0;
    g->nselected = 0;
    g->scan_workers = 1;
    for (size_t i = 0; i < g->nthreads; i++) {
        g->threads[i].events = 0;
        memset(g->threads[i].value, 0, nm * sizeof *g->threads[i].value);
    }
    g->table_valid = g->tree_valid = 0;
    u64map_free(&g->pair_index);
    g->npairs = 0;
    g->pair_last_key = UINT64_MAX;
    g->pair_w = 0;
    for (int k = 0; g->pair_col && k < g->nmetrics; k++)
        g->pair_col[k] = -1;
    g->split_done = 0;
    for (size_t x = 0; x < g->nin; x++) {
        exp_input_t *in = &g->in[x];
        if (in->vec)
            memset(in->vec, 0, in->cap * nm * sizeof *in->vec);
        const exp_experiment_t *scan_e = g->share ? &g->share[x] : in->e;
        if (!scan_e->nprocs)
            continue;
        exp_scan_stats_t st;
        int rc = EXP_SCAN_NEED_ORDER;
        if (g->scan_threads > 1 && !eng_selecting(g) && !g->split) { /* split: pairs numbered as met */
            rc = aggregate_parallel(g, (uint32_t)x, scan_e, &st, err);
            if (rc && rc != EXP_SCAN_NEED_ORDER)
                return rc < 0 ? rc : tally_errf(err, TALLY_ENOMEM, "out of memory aggregating "
                                                "'%s'", in->e->path);
            if (rc == 0)
                g->scan_workers = g->scan_threads;
        }
        if (rc == EXP_SCAN_NEED_ORDER) {
            scan_ctx_t c = { .g = g, .exp = (uint32_t)x, .last_key = UINT64_MAX };
            rc = exp_scan(scan_e, in->stacks, on_event, &c, &st, err);
            if (!c.err)
                leaks_flush(&c);
            hm_free(c.heap);
            if (c.err)
                return tally_errf(err, c.err, "out of memory aggregating '%s'", in->e->path);
            if (rc < 0)
                return rc;
        }
        g->stats.chunks += st.chunks;
        g->stats.unused_chunks += st.unused_chunks;
        g->stats.bad_chunks += st.bad_chunks;
        g->stats.records += st.records;
        g->stats.unknown_records += st.unknown_records;
        g->stats.bad_records += st.bad_records;
        g->stats.seq_gaps += st.seq_gaps;
        g->stats.events += st.events;
        for (int r = 0; r < EXP_LOST_NREASONS; r++)
            sat_add_to(&g->stats.lost[r], st.lost[r]);
    }
    return 0;
}

int eng_aggregate(eng_t *g, tally_err_t *err)
{
    int rc;
    if (g->reduce && (rc = g->reduce(g->reduce_ctx, g, ENG_REDUCE_START, err)))
        return rc;
    if ((rc = aggregate_scan(g, err))) {
        if (g->reduce) /* the others' partials are drained all the same */
            g->reduce(g->reduce_ctx, g, ENG_REDUCE_ABANDON, &(tally_err_t){ 0 });
        return rc;
    }
    if (g->reduce && (rc = g->reduce(g->reduce_ctx, g, ENG_REDUCE_MERGE, err)))
        return rc;
    if (!g->partial && aggregate_blocks(g))
        return tally_errf(err, TALLY_ENOMEM, "out of memory aggregating the profiled blocks");
    g->aggregated = 1;
    g->split_done = g->split;
    return 0;
}

void eng_split_threads(eng_t *g, int on) { g->split = on; }

static uint64_t *sort_pair_keys;
static int cmp_pair(const void *a, const void *b)
{
    uint64_t ka = sort_pair_keys[*(const uint32_t *)a], kb = sort_pair_keys[*(const uint32_t *)b];
    return ka < kb ? -1 : ka > kb;
}

int eng_foreach_thread_stack(eng_t *g, int kind, eng_pair_fn fn, void *ctx, tally_err_t *err)
{
    if (kind == ENG_KIND_BLOCK)
        return tally_errf(err, TALLY_EUSAGE, "profiled blocks are not frames of events");
    int rc;
    if (!g->aggregated || !g->split_done) {
        g->split = 1;
        if ((rc = eng_aggregate(g, err)))
            return rc;
    }
    uint32_t *order = malloc((g->npairs ? g->npairs : 1) * sizeof *order);
    if (!g->pair_full)
        g->pair_full = malloc((size_t)g->nmetrics * sizeof *g->pair_full);
    if (!order || !g->pair_full) {
        free(order);
        return tally_errf(err, TALLY_ENOMEM, "out of memory ordering the stacks of each thread");
    }
    for (size_t i = 0; i < g->npairs; i++)
        order[i] = (uint32_t)i;
    sort_pair_keys = g->pair_key; /* by thread, then stack */
    qsort(order, g->npairs, sizeof *order, cmp_pair);
    rc = 0;
    for (size_t i = 0; !rc && i < g->npairs; i++) {
        uint64_t key = g->pair_key[order[i]];
        const eng_thread_t *t = &g->threads[key >> 32];
        eng_mapped_t m;
        if ((rc = eng_map_stack(g, t->exp, (uint32_t)key, kind, &m, err)))
            break;
        const uint64_t *row = g->pair_vec + (size_t)order[i] * (size_t)g->pair_w;
        for (int k = 0; k < g->nmetrics; k++)
            g->pair_full[k] = g->pair_col && g->pair_col[k] >= 0 ? row[g->pair_col[k]] : 0;
        rc = fn(ctx, t, &m, g->pair_full);
    }
    free(order);
    return rc;
}

int eng_foreach_event(eng_t *g, eng_event_fn fn, void *ctx, tally_err_t *err)
{
    if (!g->aggregated) {
        int rc = eng_aggregate(g, err);
        if (rc)
            return rc;
    }
    uint64_t *vbuf = malloc((size_t)g->nmetrics * sizeof *vbuf);
    if (!vbuf)
        return tally_errf(err, TALLY_ENOMEM, "out of memory scanning events");
    int rc = 0;
    for (size_t x = 0; x < g->nin && !rc; x++) {
        scan_ctx_t c = { .g = g, .exp = (uint32_t)x, .last_key = UINT64_MAX, .fn = fn,
                         .fn_ctx = ctx, .vbuf = vbuf };
        exp_scan_stats_t st;
        rc = exp_scan(g->in[x].e, g->in[x].stacks, on_event, &c, &st, err);
        if (c.err)
            rc = tally_errf(err, c.err, "out of memory scanning '%s'", g->in[x].e->path);
        else if (rc > 0)
            rc = 0; /* (as before: a callback's stop ends this experiment's scan only) */
    }
    free(vbuf);
    return rc;
}

int eng_event_selected(eng_t *g, uint32_t exp, const exp_event_t *ev)
{
    const uint32_t *index = u64map_get(&g->thread_index, thread_key(exp, ev->proc, ev->tid));
    if (!index)
        return !eng_selecting(g);
    scan_ctx_t c = { .g = g, .exp = exp, .last_key = UINT64_MAX };
    return g->selected[*index] && passes(g, &c, ev, *index);
}

const exp_scan_stats_t *eng_scan_stats(const eng_t *g) { return &g->stats; }

int eng_selecting(const eng_t *g)
{
    return !g->select_all || g->sample_sel || g->cpu_sel || g->filter;
}

int eng_sample_selected(const eng_t *g, uint32_t k)
{
    return !g->sample_sel || (k < g->nsample_sel && g->sample_sel[k]);
}

uint64_t eng_selected_events(const eng_t *g) { return g->aggregated ? g->nselected : 0; }
const uint64_t *eng_total(const eng_t *g) { return g->total; }
int eng_saturated(const eng_t *g)
{
    return g->saturated || (g->table_valid && g->table.saturated) ||
           (g->tree_valid && g->tree.saturated);
}
int eng_has_metric(const eng_t *g, int metric) { return g->total[metric] != 0; }

/* ---- frame mapping -------------------------------------------------------------------------- */

/* The object of process proc that holds pc in mapping generation gen (the generation of the
 * stack: exp_stacks_gen), so a library loaded where another one was unloaded is itself. */
static const exp_object_t *frame_object(exp_input_t *in, uint32_t proc, uint32_t gen, uint64_t pc)
{
    return exp_object_in(in->e->procs[proc], pc, gen);
}

/* The sym object and the address to look up (a return address minus one) of a frame. */
static uint32_t frame_location(eng_t *g, exp_input_t *in, uint32_t proc, uint32_t gen,
                               uint64_t pc, int leaf, uint64_t *addr, int *err)
{
    const exp_object_t *o = frame_object(in, proc, gen, pc);
    if (!o) {
        *addr = pc;
        return UINT32_MAX;
    }
    int found;
    uint32_t *os = u64map_slot(&in->objects, (uint64_t)proc << 32 | o->id, &found);
    if (!os) {
        *err = TALLY_ENOMEM;
        return UINT32_MAX;
    }
    if (!found)
        *os = sym_object_add(g->sym, o->path, o->buildid);
    /* the collector's interposers are tally's, not the program's: as callers they are left
     * out (the program's frame calls libc's function directly) */
    const char *base = strrchr(o->path, '/');
    if (*os != UINT32_MAX && eng_object_mode(g, *os) != ENG_OBJ_DROP &&
        !strcmp(base ? base + 1 : o->path, "libtally-collector.so"))
        eng_set_object_mode(g, *os, ENG_OBJ_DROP);
    *addr = pc - o->bias;
    if (!leaf && *addr > 0)
        (*addr)--; /* a return address: the call is the instruction before it */
    return *os;
}

/* The map of (proc, pc, leaf) to function ids of mapping generation gen; NULL on no memory. */
static u64map_t *pc_map(exp_input_t *in, uint32_t gen)
{
    if (gen == 0)
        return &in->pcs;
    if (gen > in->ngpcs && GROW_ZERO(in->gpcs, gen - 1, in->ngpcs)) /* zeroed: empty maps */
        return NULL;
    return &in->gpcs[gen - 1];
}

static uint32_t frame_function(eng_t *g, exp_input_t *in, uint32_t proc, uint32_t gen,
                               uint64_t pc, int leaf, int *err)
{
    uint64_t key = (uint64_t)proc << 49 ^ (pc << 1 | (uint64_t)leaf);
    int found;
    u64map_t *map = pc_map(in, gen);
    uint32_t *slot = map ? u64map_slot(map, key, &found) : NULL;
    if (!slot) {
        *err = TALLY_ENOMEM;
        return 0;
    }
    if (found)
        return *slot;
    const exp_object_t *o = frame_object(in, proc, gen, pc);
    uint32_t f;
    if (!o) {
        f = sym_func_unknown(g->sym);
    } else {
        uint64_t okey = (uint64_t)proc << 32 | o->id;
        uint32_t *os = u64map_slot(&in->objects, okey, &found);
        if (!os) {
            *err = TALLY_ENOMEM;
            return 0;
        }
        if (!found)
            *os = sym_object_add(g->sym, o->path, o->buildid);
        uint64_t addr = pc - o->bias;
        if (!leaf && addr > 0)
            addr--; /* a return address: the call is the instruction before it */
        f = sym_func_at(g->sym, *os, addr);
    }
    /* the slot may have moved if the object lookup grew the map: look it up again */
    slot = u64map_slot(map, key, &found);
    if (!slot) {
        *err = TALLY_ENOMEM;
        return 0;
    }
    *slot = f;
    return f;
}

static int is_collector(const exp_object_t *o)
{
    const char *base = strrchr(o->path, '/');
    return !strcmp(base ? base + 1 : o->path, "libtally-collector.so");
}

/* A traced call's leaf is the collector's interposer of the function the program called (its
 * entry: named as the program called it). It stands for the real function, the one the
 * interposer calls: the same name bound in the first other object of the process that exports
 * it, as the loader's RTLD_NEXT finds it. Returns that function's pc, or pc itself when the leaf
 * is not in the collector or no object exports the name (then the interposer's own name shows).
 * Once per (process, generation, pc). */
static uint64_t real_leaf(eng_t *g, exp_input_t *in, uint32_t proc, uint32_t gen, uint64_t pc,
                          int *err)
{
    const exp_object_t *o = frame_object(in, proc, gen, pc);
    if (!o || !is_collector(o))
        return pc;
    uint64_t key = ((uint64_t)proc << 49) ^ ((uint64_t)gen << 40) ^ pc;
    int found;
    uint32_t *slot = u64map_slot(&in->leaf_real, key, &found);
    if (!slot) {
        *err = TALLY_ENOMEM;
        return pc;
    }
    if (found)
        return *slot ? in->real_pcs[*slot - 1] : pc;
    *slot = 0;
    uint64_t real = pc;
    uint32_t so = sym_object_add(g->sym, o->path, o->buildid);
    uint32_t f = so == UINT32_MAX ? UINT32_MAX : sym_func_at(g->sym, so, pc - o->bias);
    const sym_func_t *fn = f == UINT32_MAX ? NULL : sym_func(g->sym, f);
    const exp_process_t *p = in->e->procs[proc];
    for (size_t i = 0; fn && fn->mangled && i < p->nobjects; i++) {
        const exp_object_t *x = &p->objects[i];
        if (x == o || is_collector(x) || gen < x->gen_lo || gen >= x->gen_hi ||
            !strcmp(x->path, "[vdso]"))
            continue;
        uint32_t xs = sym_object_add(g->sym, x->path, x->buildid);
        uint64_t addr;
        if (xs == UINT32_MAX || sym_dynsym_addr(g->sym, xs, fn->mangled, &addr) != 0)
            continue;
        real = addr + x->bias;
        /* the real function is shown under the name the program called it by */
        uint32_t rf = sym_func_at(g->sym, xs, addr);
        if (rf != UINT32_MAX && sym_func_call_name(g->sym, rf, fn->mangled) == TALLY_ENOMEM) {
            *err = TALLY_ENOMEM;
            return pc;
        }
        break;
    }
    if (real != pc) {
        if (GROW(in->real_pcs, in->nreal_pcs, in->real_cap)) {
            *err = TALLY_ENOMEM;
            return pc;
        }
        in->real_pcs[in->nreal_pcs++] = real;
        /* the slot may have moved when sym_object_add grew nothing here, but look it up again */
        slot = u64map_slot(&in->leaf_real, key, &found);
        if (!slot) {
            *err = TALLY_ENOMEM;
            return pc;
        }
        *slot = (uint32_t)in->nreal_pcs;
    }
    return real;
}

/* Maps the frames of every stack not mapped yet to function ids. */
static int resolve_stacks(eng_t *g, tally_err_t *err)
{
    for (size_t x = 0; x < g->nin; x++) {
        exp_input_t *in = &g->in[x];
        size_t n = exp_stacks_count(in->stacks);
        if (n == in->nresolved)
            continue;
        size_t *foff = realloc(in->foff, (n + 1) * sizeof *foff);
        if (!foff)
            return tally_errf(err, TALLY_ENOMEM, "out of memory mapping stacks");
        in->foff = foff;
        if (in->nresolved == 0)
            foff[0] = 0;
        for (size_t s = in->nresolved; s < n; s++) {
            uint32_t nf, flags, proc;
            const uint64_t *pcs = exp_stacks_get(in->stacks, (uint32_t)s, &nf, &flags, &proc);
            /* a stack cut at the depth limit gets a <Truncated-stack> frame at its root, as
             * er_print shows it: the cut frames' time is not taken for the outermost caller's */
            uint32_t cut = nf && (flags & EXP_STACK_TRUNCATED) ? 1 : 0;
            size_t need = foff[s] + nf + cut;
            if (need > in->fids_cap || !in->fids) { /* never NULL: fids + foff[s] is used */
                size_t c1 = in->fids_cap, c2 = c1, c3 = c1; /* three arrays, one capacity */
                size_t last = need ? need - 1 : 0;
                if (GROW(in->fids, last, c1) || GROW(in->fobj, last, c2) ||
                    GROW(in->faddr, last, c3))
                    return tally_errf(err, TALLY_ENOMEM, "out of memory mapping stacks");
                in->fids_cap = c1;
            }
            uint32_t gen = exp_stacks_gen(in->stacks, (uint32_t)s);
            int e = 0;
            for (uint32_t i = 0; i < nf; i++) {
                size_t k = foff[s] + i;
                uint64_t pc = i == 0 ? real_leaf(g, in, proc, gen, pcs[i], &e) : pcs[i];
                in->fids[k] = frame_function(g, in, proc, gen, pc, i == 0, &e);
                in->fobj[k] = frame_location(g, in, proc, gen, pc, i == 0, &in->faddr[k], &e);
            }
            if (cut) {
                in->fids[foff[s] + nf] = sym_func_truncated(g->sym);
                in->fobj[foff[s] + nf] = UINT32_MAX;
                in->faddr[foff[s] + nf] = 0;
            }
            if (e)
                return tally_errf(err, e, "out of memory mapping stacks");
            foff[s + 1] = need;
        }
        in->nresolved = n;
    }
    return 0;
}

size_t eng_nobjects(eng_t *g, int kind)
{
    switch (kind) {
    case ENG_KIND_FUNCTION: return sym_nfuncs(g->sym);
    case ENG_KIND_PC: return g->npcs;
    case ENG_KIND_LINE: return g->nlines;
    case ENG_KIND_BLOCK: return g->blocks->nnames;
    default: return sym_nobjects(g->sym) + 1;
    }
}

/* ---- instructions and lines ------------------------------------------------------------------ */

/* The id of instruction (obj, addr); UINT32_MAX on no memory. */
static uint32_t pc_id(eng_t *g, uint32_t obj, uint64_t addr)
{
    int found;
    uint32_t *slot = u64map_slot(&g->pc_ids, (uint64_t)(obj & 0xfffff) << 44 | (addr & ((1ULL << 44) - 1)),
                                 &found);
    if (!slot)
        return UINT32_MAX;
    if (found)
        return *slot;
    size_t c1 = g->pcs_cap, c2 = c1, c3 = c1; /* three arrays, one capacity */
    if (GROW(g->pc_obj, g->npcs, c1) || GROW(g->pc_addr, g->npcs, c2) ||
        GROW(g->pc_line, g->npcs, c3))
        return UINT32_MAX;
    g->pcs_cap = c1;
    g->pc_obj[g->npcs] = obj;
    g->pc_addr[g->npcs] = addr;
    g->pc_line[g->npcs] = UINT32_MAX;
    *slot = (uint32_t)g->npcs;
    return (uint32_t)g->npcs++;
}

static uint32_t file_id(eng_t *g, const char *file)
{
    for (size_t i = g->nfiles; i-- > 0;)
        if (!strcmp(g->files[i], file))
            return (uint32_t)i;
    char **nf = realloc(g->files, (g->nfiles + 1) * sizeof *nf);
    if (!nf)
        return UINT32_MAX - 1;
    g->files = nf;
    g->files[g->nfiles] = strdup(file);
    if (!g->files[g->nfiles])
        return UINT32_MAX - 1;
    return (uint32_t)g->nfiles++;
}

/* The id of the line keyed (fid, line) (see line_ids), first seen in function f; UINT32_MAX on no
 * memory. */
static uint32_t line_key_id(eng_t *g, uint32_t fid, uint32_t line, uint32_t f, int generated)
{
    int found;
    uint64_t key = (uint64_t)fid << 32 | (generated ? f : line);
    uint32_t *slot = u64map_slot(&g->line_ids, key | (uint64_t)(generated != 0) << 63, &found);
    if (!slot)
        return UINT32_MAX;
    if (!found) {
        size_t c1 = g->lines_cap, c2 = c1, c3 = c1; /* three arrays, one capacity */
        if (GROW(g->line_file, g->nlines, c1) || GROW(g->line_no, g->nlines, c2) ||
            GROW(g->line_func, g->nlines, c3))
            return UINT32_MAX;
        g->lines_cap = c1;
        g->line_file[g->nlines] = fid;
        g->line_no[g->nlines] = line;
        g->line_func[g->nlines] = f;
        *slot = (uint32_t)g->nlines++;
    }
    return *slot;
}

/* The id of the source line of instruction pc (function f); UINT32_MAX on no memory. */
static uint32_t line_id(eng_t *g, uint32_t pc, uint32_t f)
{
    if (g->pc_line[pc] != UINT32_MAX)
        return g->pc_line[pc];
    const char *file;
    uint32_t line = 0, fid = UINT32_MAX, id;
    int r = g->pc_obj[pc] == UINT32_MAX
                ? -1
                : sym_line_at(g->sym, g->pc_obj[pc], g->pc_addr[pc], &file, &line);
    if (r >= 0 && (fid = file_id(g, file)) == UINT32_MAX - 1)
        return UINT32_MAX;
    if (r < 0) /* no line information: one line per function */
        id = line_key_id(g, UINT32_MAX, f, f, 0);
    else
        id = line_key_id(g, fid, line, f, r == 1);
    if (id != UINT32_MAX)
        g->pc_line[pc] = id;
    return id;
}

int eng_pc_info(eng_t *g, uint32_t id, uint32_t *obj, uint64_t *addr)
{
    if (id >= g->npcs)
        return -1;
    *obj = g->pc_obj[id];
    *addr = g->pc_addr[id];
    return 0;
}

int eng_line_info(eng_t *g, uint32_t id, const char **file, uint32_t *line, uint32_t *func)
{
    if (id >= g->nlines)
        return -1;
    *file = g->line_file[id] == UINT32_MAX ? NULL : g->files[g->line_file[id]];
    *line = g->line_file[id] == UINT32_MAX ? 0 : g->line_no[id]; /* 0: compiler-generated */
    *func = g->line_func[id];
    return 0;
}

uint32_t eng_pc_function(eng_t *g, uint32_t id)
{
    return g->pc_obj[id] == UINT32_MAX ? sym_func_unknown(g->sym)
                                       : sym_func_at(g->sym, g->pc_obj[id], g->pc_addr[id]);
}

uint32_t eng_function_object(eng_t *g, uint32_t id)
{
    return sym_func(g->sym, id)->object;
}

uint64_t eng_function_addr(eng_t *g, uint32_t id) { return sym_func(g->sym, id)->addr; }

const char *eng_object_name(eng_t *g, int kind, uint32_t id, int fmt)
{
    if (kind == ENG_KIND_BLOCK)
        return id < g->blocks->nnames ? g->blocks->names[id] : "<Unknown>";
    if (kind == ENG_KIND_PC) { /* "func + 0x1a" */
        uint32_t f = eng_pc_function(g, id);
        const sym_func_t *fn = sym_func(g->sym, f);
        const char *nm = fmt == 1 ? fn->long_name : fmt == 2 ? fn->mangled : fn->name;
        snprintf(g->namebuf, sizeof g->namebuf, "%s + 0x%llx", nm,
                 (unsigned long long)(g->pc_addr[id] - (fn->addr <= g->pc_addr[id] ? fn->addr : 0)));
        return g->namebuf;
    }
    if (kind == ENG_KIND_LINE) { /* "line 12 in \"file.c\"" */
        const sym_func_t *fn = sym_func(g->sym, g->line_func[id]);
        const char *nm = fmt == 1 ? fn->long_name : fmt == 2 ? fn->mangled : fn->name;
        if (g->line_file[id] == UINT32_MAX) {
            snprintf(g->namebuf, sizeof g->namebuf, "%s, instructions without line numbers", nm);
        } else if (!g->line_no[id]) {
            snprintf(g->namebuf, sizeof g->namebuf, "%s, compiler-generated code", nm);
        } else {
            /* not the function's name: a line of an inlined helper serves many functions */
            const char *file = g->files[g->line_file[id]], *base = strrchr(file, '/');
            snprintf(g->namebuf, sizeof g->namebuf, "line %u in \"%s\"", g->line_no[id],
                     base ? base + 1 : file);
        }
        return g->namebuf;
    }
    if (kind == ENG_KIND_FUNCTION) {
        const sym_func_t *f = sym_func(g->sym, id);
        return fmt == 1 ? f->long_name : fmt == 2 ? f->mangled : f->name;
    }
    if (id >= sym_nobjects(g->sym))
        return "<Unknown>";
    const sym_object_t *o = sym_object(g->sym, id);
    return fmt == 0 ? o->name : o->path;
}

void eng_set_object_mode(eng_t *g, uint32_t obj, int mode)
{
    _Static_assert(ENG_OBJ_SHOW == 0, "objects not set yet are shown: zeroed");
    if (obj >= g->nobj_mode && GROW_ZERO(g->obj_mode, obj, g->nobj_mode))
        return;
    g->obj_mode[obj] = (uint8_t)mode;
    g->table_valid = g->tree_valid = 0;
}

void eng_set_inlines(eng_t *g, int on)
{
    g->inlines = on;
    g->table_valid = g->tree_valid = 0;
}

int eng_inlines(const eng_t *g) { return g->inlines; }

void eng_set_machine_view(eng_t *g, int on)
{
    g->machine_view = on;
    g->table_valid = g->tree_valid = 0;
}

/* Are inlined functions of object obj expanded? Those of the program and its own libraries, not
 * those of the system's libraries (/lib, /usr/lib): reading libc's debug information costs a
 * fifth of a second and its inlined internals are not what a profile of a program is about. */
static int expand_inlines(eng_t *g, uint32_t obj)
{
    if (obj >= g->ninl_obj && GROW_ZERO(g->inl_obj, obj, g->ninl_obj))
        return 0;
    if (!g->inl_obj[obj]) {
        const char *path = sym_object(g->sym, obj)->path;
        int sys = !strncmp(path, "/lib/", 5) || !strncmp(path, "/lib64/", 7) ||
                  !strncmp(path, "/usr/lib/", 9) || !strncmp(path, "/usr/lib64/", 11) ||
                  path[0] == '[';
        g->inl_obj[obj] = sys ? 2 : 1;
    }
    return g->inl_obj[obj] == 1;
}

/* The functions inlined at (obj, addr) of containing function f, innermost first: *seq points at
 * n pairs (function, line id of its call site or UINT32_MAX), cached. -1 on no memory. */
static int inline_seq(eng_t *g, uint32_t obj, uint64_t addr, uint32_t f, const uint32_t **seq)
{
    if (!expand_inlines(g, obj))
        return 0;
    uint64_t key = (uint64_t)(obj & 0xfffff) << 44 | (addr & ((1ULL << 44) - 1));
    int found;
    uint32_t *slot = u64map_slot(&g->inl_map, key, &found);
    if (!slot)
        return -1;
    if (!found) {
        *slot = 0; /* (not cached yet: a failure below leaves it so) */
        sym_inline_t buf[64];
        uint32_t pairs[128];
        int n = sym_inlines_at(g->sym, obj, addr, buf, 64);
        for (int j = 0; j < n; j++) {
            uint32_t fid = buf[j].call_file ? file_id(g, buf[j].call_file) : UINT32_MAX;
            uint32_t around = j + 1 < n ? buf[j + 1].func : f;
            pairs[2 * j] = buf[j].func;
            pairs[2 * j + 1] = fid < UINT32_MAX - 1
                                   ? line_key_id(g, fid, buf[j].call_line, around, 0)
                                   : UINT32_MAX;
        }
        size_t need = g->ninl_seq + 1 + 2 * (size_t)n;
        if (need > g->inl_cap && GROW(g->inl_seq, need - 1, g->inl_cap))
            return -1;
        slot = (uint32_t *)u64map_get(&g->inl_map, key);
        *slot = (uint32_t)g->ninl_seq + 1;
        g->inl_seq[g->ninl_seq++] = (uint32_t)n;
        if (n)
            memcpy(g->inl_seq + g->ninl_seq, pairs, 2 * (size_t)n * sizeof *pairs);
        g->ninl_seq += 2 * (size_t)n;
    } else if (!*slot) {
        return -1;
    }
    *seq = g->inl_seq + *slot;
    return (int)g->inl_seq[*slot - 1];
}

void eng_reset_object_modes(eng_t *g)
{
    for (size_t i = 0; i < g->nobj_mode; i++)
        if (g->obj_mode[i] != ENG_OBJ_DROP)
            g->obj_mode[i] = ENG_OBJ_SHOW;
    g->table_valid = g->tree_valid = 0;
}

int eng_object_mode(const eng_t *g, uint32_t obj)
{
    return obj < g->nobj_mode ? g->obj_mode[obj] : ENG_OBJ_SHOW;
}

static int inline_seq(eng_t *g, uint32_t obj, uint64_t addr, uint32_t f, const uint32_t **seq);
static uint32_t map_stack(eng_t *g, exp_input_t *in, int kind, size_t s, uint32_t **ids,
                          size_t *cap);
static uint32_t map_stack_frames(eng_t *g, exp_input_t *in, int kind, size_t s, uint32_t **ids,
                                 size_t *cap, uint32_t **frm, size_t *frm_cap);

/* The object of kind for frame k of experiment input in. */
static uint32_t kind_frame(eng_t *g, exp_input_t *in, int kind, size_t k)
{
    uint32_t f = in->fids[k];
    if (kind == ENG_KIND_FUNCTION)
        return f;
    if (kind == ENG_KIND_PC || kind == ENG_KIND_LINE) {
        uint32_t pc = pc_id(g, in->fobj[k], in->faddr[k]);
        if (pc == UINT32_MAX || kind == ENG_KIND_PC)
            return pc;
        return line_id(g, pc, f);
    }
    uint32_t o = sym_func(g->sym, f)->object;
    return o == UINT32_MAX ? (uint32_t)sym_nobjects(g->sym) : o;
}

/* ---- the rules ------------------------------------------------------------------------------ */

struct eng_edgeset {
    u64map_t callers, callees; /* (x, y) -> index into vals */
    uint64_t *vals;            /* [index * nm] */
    uint64_t *keys;            /* [index]: x << 32 | y, with the top bit set for callees */
    size_t n, cap;
    size_t nm; /* the vectors' width */
    int saturated;
};

eng_edgeset_t *eng_edgeset_new(int nmetrics)
{
    eng_edgeset_t *es = calloc(1, sizeof *es);
    if (es)
        es->nm = (size_t)nmetrics;
    return es;
}

void eng_edgeset_free(eng_edgeset_t *es)
{
    if (!es)
        return;
    u64map_free(&es->callers);
    u64map_free(&es->callees);
    free(es->vals);
    free(es->keys);
    free(es);
}

static int edge_add(eng_edgeset_t *es, int callee, uint32_t x, uint32_t y, const uint64_t *v)
{
    uint64_t key = (uint64_t)x << 32 | y;
    int found;
    uint32_t *slot = u64map_slot(callee ? &es->callees : &es->callers, key, &found);
    if (!slot)
        return TALLY_ENOMEM;
    if (!found) {
        if (es->n == es->cap) {
            size_t c1 = es->cap, c2 = c1; /* two arrays, one capacity */
            if (GROW_W(es->vals, es->n, c1, es->nm) || GROW(es->keys, es->n, c2))
                return TALLY_ENOMEM;
            es->cap = c1;
        }
        *slot = (uint32_t)es->n;
        memset(es->vals + es->n * es->nm, 0, es->nm * sizeof *es->vals);
        es->keys[es->n] = key | (callee ? 1ULL << 63 : 0);
        es->n++;
    }
    uint64_t *dst = es->vals + (size_t)*slot * es->nm;
    for (size_t m = 0; m < es->nm; m++)
        es->saturated |= sat_add_to(&dst[m], v[m]);
    return 0;
}

int eng_apply(eng_table_t *t, const uint32_t *ids, uint32_t n, const uint64_t *v, uint32_t *stamp,
              uint32_t serial, eng_edgeset_t *es)
{
    if (n == 0)
        return 0;
    size_t nm = (size_t)t->nmetrics;
    uint64_t *ex = t->excl + (size_t)ids[0] * nm;
    for (size_t m = 0; m < nm; m++)
        t->saturated |= sat_add_to(&ex[m], v[m]);
    /* above the leaf, the vector without the metrics of the leaf only */
    uint64_t *vm = NULL;
    const uint64_t *vabove = v;
    if (t->leafonly && n > 1) {
        int any = 0;
        for (size_t m = 0; m < nm && !any; m++)
            any = t->leafonly[m] && v[m];
        if (any) {
            if (!(vm = malloc(nm * sizeof *vm)))
                return TALLY_ENOMEM;
            for (size_t m = 0; m < nm; m++)
                vm[m] = t->leafonly[m] ? 0 : v[m];
            vabove = vm;
        }
    }
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        uint32_t x = ids[i];
        if (stamp[x] == serial)
            continue; /* not the innermost occurrence: already counted for this event */
        stamp[x] = serial;
        t->present[x] = 1;
        const uint64_t *vx = i ? vabove : v;
        uint64_t *in = t->incl + (size_t)x * nm;
        for (size_t m = 0; m < nm; m++)
            t->saturated |= sat_add_to(&in[m], vx[m]);
        if (!es)
            continue;
        if (i + 1 < n) {
            if (edge_add(es, 0, x, ids[i + 1], vx))
                rc = TALLY_ENOMEM;
        } else {
            uint64_t *o = t->outermost + (size_t)x * nm;
            for (size_t m = 0; m < nm; m++)
                t->saturated |= sat_add_to(&o[m], vx[m]);
        }
        /* the callee edge into the leaf carries the leaf's own metrics too */
        if (i > 0 && edge_add(es, 1, x, ids[i - 1], i == 1 ? v : vabove))
            rc = TALLY_ENOMEM;
    }
    free(vm);
    return rc;
}

int eng_table_alloc(eng_table_t *t, int kind, size_t nobjects, int nmetrics, int edges)
{
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->nmetrics = nmetrics;
    t->nobjects = nobjects;
    size_t n = nobjects ? nobjects : 1, nm = (size_t)nmetrics;
    t->present = calloc(n, 1);
    t->excl = calloc(n * nm, sizeof *t->excl);
    t->incl = calloc(n * nm, sizeof *t->incl);
    t->outermost = edges ? calloc(n * nm, sizeof *t->outermost) : NULL;
    if (!t->present || !t->excl || !t->incl || (edges && !t->outermost)) {
        eng_table_release(t);
        return TALLY_ENOMEM;
    }
    return 0;
}

void eng_table_release(eng_table_t *t)
{
    free(t->present);
    free(t->excl);
    free(t->incl);
    free(t->outermost);
    free(t->callers);
    free(t->callees);
    free(t->caller_start);
    free(t->callee_start);
    free(t->edge_values);
    memset(t, 0, sizeof *t);
}

static const uint64_t *sort_keys;
static int cmp_edge_index(const void *a, const void *b)
{
    uint64_t ka = sort_keys[*(const uint32_t *)a], kb = sort_keys[*(const uint32_t *)b];
    return ka < kb ? -1 : ka > kb;
}

int eng_edges_finish(eng_table_t *t, eng_edgeset_t *es)
{
    size_t n = t->nobjects;
    t->saturated |= es->saturated;
    uint32_t *order = malloc((es->n ? es->n : 1) * sizeof *order);
    t->caller_start = calloc(n + 1, sizeof *t->caller_start);
    t->callee_start = calloc(n + 1, sizeof *t->callee_start);
    t->callers = malloc((es->callers.n ? es->callers.n : 1) * sizeof *t->callers);
    t->callees = malloc((es->callees.n ? es->callees.n : 1) * sizeof *t->callees);
    t->edge_values = malloc((es->n ? es->n : 1) * es->nm * sizeof *t->edge_values);
    if (!order || !t->caller_start || !t->callee_start || !t->callers || !t->callees ||
        !t->edge_values) {
        free(order);
        return TALLY_ENOMEM;
    }
    for (size_t i = 0; i < es->n; i++)
        order[i] = (uint32_t)i;
    sort_keys = es->keys; /* callers first (top bit clear), each side by x then y */
    if (es->n)
        qsort(order, es->n, sizeof *order, cmp_edge_index);
    size_t nc = 0, ne = 0;
    for (size_t i = 0; i < es->n; i++) {
        uint64_t key = es->keys[order[i]];
        int callee = (int)(key >> 63);
        uint32_t x = (uint32_t)(key >> 32) & 0x7fffffffu, y = (uint32_t)key;
        eng_edge_t *e = callee ? &t->callees[ne++] : &t->callers[nc++];
        e->other = y;
        uint64_t *ev = t->edge_values + i * es->nm;
        memcpy(ev, es->vals + (size_t)order[i] * es->nm, es->nm * sizeof *ev);
        e->value = ev;
        (callee ? t->callee_start : t->caller_start)[x + 1]++;
    }
    for (size_t x = 0; x < n; x++) {
        t->caller_start[x + 1] += t->caller_start[x];
        t->callee_start[x + 1] += t->callee_start[x];
    }
    free(order);
    t->has_edges = 1;
    return 0;
}

static int ensure_stamp(eng_t *g, size_t n)
{
    if (n <= g->stamp_cap)
        return 0;
    return GROW_ZERO(g->stamp, n - 1, g->stamp_cap);
}

/* Calls fn for every stack with a non-zero vector, with its frames mapped to objects of kind. */
typedef int (*stack_fn)(eng_t *g, void *ctx, const uint32_t *ids, uint32_t n, const uint64_t *v);

/* The block kind's stacks: each thread's call paths of blocks. */
static int for_each_block_stack(eng_t *g, stack_fn fn, void *ctx, tally_err_t *err)
{
    const bstk_t *b = g->blocks;
    if (!g->bvec)
        return 0;
    uint32_t *ids = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t s = 0; s < b->nstacks && !rc; s++) {
        const uint64_t *v = g->bvec + s * (size_t)g->nmetrics;
        int any = 0;
        for (int m = 0; m < g->nmetrics; m++)
            any |= v[m] != 0;
        if (!any)
            continue;
        if (b->stacks[s].depth > cap) {
            free(ids);
            cap = b->stacks[s].depth * 2;
            if (!(ids = malloc(cap * sizeof *ids)))
                return tally_errf(err, TALLY_ENOMEM, "out of memory mapping frames");
        }
        bstk_frames(b, s, ids);
        if ((rc = fn(g, ctx, ids, b->stacks[s].depth, v)))
            rc = tally_errf(err, rc, "out of memory computing metrics");
    }
    free(ids);
    return rc;
}

static int for_each_stack(eng_t *g, int kind, stack_fn fn, void *ctx, tally_err_t *err)
{
    if (!g->aggregated) {
        int rc = eng_aggregate(g, err);
        if (rc)
            return rc;
    }
    if (kind == ENG_KIND_BLOCK)
        return for_each_block_stack(g, fn, ctx, err);
    int rc = resolve_stacks(g, err);
    if (rc)
        return rc;
    uint32_t *ids = NULL;
    size_t ids_cap = 0;
    for (size_t x = 0; x < g->nin; x++) {
        exp_input_t *in = &g->in[x];
        size_t n = in->nresolved < in->cap ? in->nresolved : in->cap;
        for (size_t s = 0; s < n; s++) {
            const uint64_t *v = in->vec + s * (size_t)g->nmetrics;
            int any = 0;
            for (int m = 0; m < g->nmetrics; m++)
                any |= v[m] != 0;
            if (!any)
                continue;
            uint32_t nf = map_stack(g, in, kind, s, &ids, &ids_cap);
            if (nf == UINT32_MAX) {
                free(ids);
                return tally_errf(err, TALLY_ENOMEM, "out of memory mapping frames");
            }
            if ((rc = fn(g, ctx, ids, nf, v))) {
                free(ids);
                return tally_errf(err, rc, "out of memory computing metrics");
            }
        }
    }
    free(ids);
    return 0;
}

int eng_foreach_stack(eng_t *g, eng_stack_fn fn, void *ctx, tally_err_t *err)
{
    if (!g->aggregated) {
        int rc = eng_aggregate(g, err);
        if (rc)
            return rc;
    }
    int rc = resolve_stacks(g, err);
    if (rc)
        return rc;
    for (size_t x = 0; x < g->nin; x++) {
        exp_input_t *in = &g->in[x];
        size_t n = in->nresolved < in->cap ? in->nresolved : in->cap;
        for (size_t s = 0; s < n; s++) {
            const uint64_t *v = in->vec + s * (size_t)g->nmetrics;
            int any = 0;
            for (int m = 0; m < g->nmetrics; m++)
                any |= v[m] != 0;
            if (!any)
                continue;
            uint32_t nf, flags, proc;
            const uint64_t *pcs = exp_stacks_get(in->stacks, (uint32_t)s, &nf, &flags, &proc);
            if ((rc = fn(ctx, (uint32_t)x, proc, pcs, in->fids + in->foff[s], nf, v)))
                return rc;
        }
    }
    return 0;
}

int eng_map_stack(eng_t *g, uint32_t exp, uint32_t stack, int kind, eng_mapped_t *out,
                  tally_err_t *err)
{
    if (kind == ENG_KIND_BLOCK)
        return tally_errf(err, TALLY_EUSAGE, "profiled blocks are not frames of events");
    if (exp >= g->nin)
        return tally_errf(err, TALLY_EUSAGE, "no experiment %u in the engine", exp);
    exp_input_t *in = &g->in[exp];
    int rc;
    if (stack >= in->nresolved && (rc = resolve_stacks(g, err)))
        return rc;
    if (stack >= in->nresolved)
        return tally_errf(err, TALLY_EUSAGE, "no stack %u in experiment %u", stack, exp);
    uint32_t n = map_stack_frames(g, in, kind, stack, &g->xids, &g->xids_cap, &g->xfrm,
                                  &g->xfrm_cap);
    if (n == UINT32_MAX)
        return tally_errf(err, TALLY_ENOMEM, "out of memory mapping frames");
    uint32_t flags;
    out->exp = exp;
    out->stack = stack;
    out->pcs = exp_stacks_get(in->stacks, stack, &out->npcs, &flags, &out->proc);
    size_t base = in->foff[stack];
    out->npcs = (uint32_t)(in->foff[stack + 1] - base);
    out->fobj = in->fobj + base;
    out->faddr = in->faddr + base;
    out->ids = g->xids;
    out->frame = g->xfrm;
    out->n = n;
    return 0;
}

int eng_foreach_mapped_stack(eng_t *g, int kind, eng_mapped_fn fn, void *ctx, tally_err_t *err)
{
    if (kind == ENG_KIND_BLOCK)
        return tally_errf(err, TALLY_EUSAGE, "profiled blocks are not frames of events");
    int rc;
    if (!g->aggregated && (rc = eng_aggregate(g, err)))
        return rc;
    if ((rc = resolve_stacks(g, err)))
        return rc;
    for (size_t x = 0; x < g->nin; x++) {
        exp_input_t *in = &g->in[x];
        size_t n = in->nresolved < in->cap ? in->nresolved : in->cap;
        for (size_t s = 0; s < n; s++) {
            const uint64_t *v = in->vec + s * (size_t)g->nmetrics;
            int any = 0;
            for (int m = 0; m < g->nmetrics; m++)
                any |= v[m] != 0;
            if (!any)
                continue;
            eng_mapped_t ms;
            if ((rc = eng_map_stack(g, (uint32_t)x, (uint32_t)s, kind, &ms, err)))
                return rc;
            if ((rc = fn(ctx, &ms, v)))
                return rc;
        }
    }
    return 0;
}

exp_stacks_t *eng_stacks(eng_t *g, uint32_t exp) { return g->in[exp].stacks; }

const uint32_t *eng_stack_functions(eng_t *g, uint32_t exp, uint32_t stack, uint32_t *n,
                                    tally_err_t *err)
{
    exp_input_t *in = &g->in[exp];
    if (stack >= in->nresolved && resolve_stacks(g, err))
        return NULL;
    *n = (uint32_t)(in->foff[stack + 1] - in->foff[stack]);
    return in->fids + in->foff[stack];
}

const uint32_t *eng_stack_objects(eng_t *g, uint32_t exp, uint32_t stack, int kind, uint32_t *n,
                                  tally_err_t *err)
{
    if (kind == ENG_KIND_BLOCK) {
        tally_errf(err, TALLY_EUSAGE, "profiled blocks are not frames of events");
        return NULL;
    }
    exp_input_t *in = &g->in[exp];
    if (stack >= in->nresolved && resolve_stacks(g, err))
        return NULL;
    if (stack >= in->nresolved) {
        tally_errf(err, TALLY_ECORRUPT, "stack %u of '%s' is not known", stack, in->e->path);
        return NULL;
    }
    uint32_t k = map_stack(g, in, kind, stack, &g->sobj, &g->sobj_cap);
    if (k == UINT32_MAX) {
        tally_errf(err, TALLY_ENOMEM, "out of memory mapping a stack");
        return NULL;
    }
    static const uint32_t none[1];
    *n = k;
    return k ? g->sobj : none;
}

static int push_id(uint32_t **ids, size_t *cap, uint32_t n, uint32_t id)
{
    if (GROW(*ids, n, *cap))
        return -1;
    (*ids)[n] = id;
    return 0;
}

/* push_id, and the frame it comes from into *frm when frm is not NULL. */
static int push_frame(uint32_t **ids, size_t *cap, uint32_t **frm, size_t *frm_cap, uint32_t n,
                      uint32_t id, uint32_t frame)
{
    return push_id(ids, cap, n, id) || (frm && push_id(frm, frm_cap, n, frame)) ? -1 : 0;
}

/* The objects of kind for the frames of stack s (leaf first) into *ids: for functions, frames of
 * hidden and API-only objects folded, and inlined functions (when shown) as frames of their own
 * inside their containing function. Returns the count, UINT32_MAX on no memory. */
static uint32_t map_stack(eng_t *g, exp_input_t *in, int kind, size_t s, uint32_t **ids,
                          size_t *cap)
{
    return map_stack_frames(g, in, kind, s, ids, cap, NULL, NULL);
}

/* map_stack, and when frm is not NULL the frame (index in the stack) each id comes from into
 * *frm (a run of folded frames: its first). */
static uint32_t map_stack_frames(eng_t *g, exp_input_t *in, int kind, size_t s, uint32_t **ids,
                                 size_t *cap, uint32_t **frm, size_t *frm_cap)
{
    size_t base = in->foff[s];
    uint32_t nf = (uint32_t)(in->foff[s + 1] - base), n = 0;
    for (uint32_t i = 0; i < nf; i++) {
        uint32_t obj = in->fobj[base + i];
        int mode = obj == UINT32_MAX ? ENG_OBJ_SHOW : eng_object_mode(g, obj);
        if (mode == ENG_OBJ_DROP && g->machine_view)
            mode = ENG_OBJ_SHOW;
        if (mode == ENG_OBJ_DROP && i > 0)
            continue; /* (as the leaf it stays: a traced call is named by its interposer) */
        if (mode == ENG_OBJ_DROP || kind != ENG_KIND_FUNCTION)
            mode = ENG_OBJ_SHOW;
        if (mode != ENG_OBJ_SHOW) { /* a run of frames in a hidden or API-only object: one */
            uint32_t j = i + 1;
            while (j < nf && in->fobj[base + j] == obj)
                j++;
            uint32_t id = mode == ENG_OBJ_HIDE ? sym_func_whole(g->sym, obj)
                                               : in->fids[base + j - 1];
            if (push_frame(ids, cap, frm, frm_cap, n++, id, i))
                return UINT32_MAX;
            i = j - 1;
            continue;
        }
        uint32_t id = kind_frame(g, in, kind, base + i);
        if (id == UINT32_MAX)
            return UINT32_MAX;
        const uint32_t *seq;
        int k = 0;
        if ((kind == ENG_KIND_FUNCTION || kind == ENG_KIND_LINE) && g->inlines &&
            obj != UINT32_MAX &&
            (k = inline_seq(g, obj, in->faddr[base + i], in->fids[base + i], &seq)) < 0)
            return UINT32_MAX;
        if (kind == ENG_KIND_LINE) { /* the line, then the lines its inlined code was called at */
            if (push_frame(ids, cap, frm, frm_cap, n++, id, i))
                return UINT32_MAX;
            for (int j = 0; j < k; j++)
                if (seq[2 * j + 1] != UINT32_MAX &&
                    push_frame(ids, cap, frm, frm_cap, n++, seq[2 * j + 1], i))
                    return UINT32_MAX;
            continue;
        }
        for (int j = 0; j < k; j++) /* the inlined functions inside their containing one */
            if (push_frame(ids, cap, frm, frm_cap, n++, seq[2 * j], i))
                return UINT32_MAX;
        if (push_frame(ids, cap, frm, frm_cap, n++, id, i))
            return UINT32_MAX;
    }
    return n;
}


typedef struct table_ctx {
    eng_table_t *t;
    eng_edgeset_t *es;
} table_ctx_t;

static int table_stack(eng_t *g, void *ctx, const uint32_t *ids, uint32_t n, const uint64_t *v)
{
    table_ctx_t *c = ctx;
    if (++g->serial == 0) { /* wrapped: clear the stamps */
        memset(g->stamp, 0, g->stamp_cap * sizeof *g->stamp);
        g->serial = 1;
    }
    return eng_apply(c->t, ids, n, v, g->stamp, g->serial, c->es);
}

static int no_op_stack(eng_t *g, void *ctx, const uint32_t *ids, uint32_t n, const uint64_t *v)
{
    (void)g, (void)ctx, (void)ids, (void)n, (void)v;
    return 0;
}

/* Kinds whose ids are made as frames are mapped (instructions, lines) are mapped once before
 * tables are sized. */
static int premap(eng_t *g, int kind, tally_err_t *err)
{
    if (kind == ENG_KIND_LOADOBJECT || kind == ENG_KIND_BLOCK)
        return 0; /* (functions for hidden objects and inlined code are made as frames are mapped) */
    return for_each_stack(g, kind, no_op_stack, NULL, err);
}

const eng_table_t *eng_compute(eng_t *g, int kind, int edges, tally_err_t *err)
{
    if (g->table_valid && g->table_kind == kind && (!edges || g->table.has_edges))
        return &g->table;
    int rc;
    if (kind == ENG_KIND_BLOCK && block_selection_error(g, err))
        return NULL;
    if (!g->aggregated && (rc = eng_aggregate(g, err)))
        return NULL;
    if ((rc = resolve_stacks(g, err)) || (rc = premap(g, kind, err)))
        return NULL;
    eng_table_release(&g->table);
    g->table_valid = 0;
    size_t n = eng_nobjects(g, kind);
    if (eng_table_alloc(&g->table, kind, n, g->nmetrics, edges) || ensure_stamp(g, n)) {
        tally_errf(err, TALLY_ENOMEM, "out of memory computing metrics");
        return NULL;
    }
    g->table.leafonly = g->leafonly;
    table_ctx_t c = { &g->table, edges ? eng_edgeset_new(g->nmetrics) : NULL };
    if (edges && !c.es) {
        tally_errf(err, TALLY_ENOMEM, "out of memory computing metrics");
        return NULL;
    }
    rc = for_each_stack(g, kind, table_stack, &c, err);
    if (!rc && edges && eng_edges_finish(&g->table, c.es))
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory computing metrics");
    eng_edgeset_free(c.es);
    if (rc)
        return NULL;
    g->table_kind = kind;
    g->table_valid = 1;
    return &g->table;
}

/* ---- call tree ------------------------------------------------------------------------------ */

typedef struct tree_ctx {
    eng_tree_t *tree;
    size_t cap;
    u64map_t children; /* (parent, object) -> node */
} tree_ctx_t;

/* A node's vectors while the tree grows: incl at values + 2 * k * nm, excl after it (the
 * nodes' pointers are set when the tree is complete, as the arrays move while it grows). */
static uint64_t *node_incl(eng_tree_t *tr, uint32_t k)
{
    return tr->values + 2 * (size_t)k * (size_t)tr->nmetrics;
}

static int tree_stack(eng_t *g, void *ctx, const uint32_t *ids, uint32_t n, const uint64_t *v)
{
    tree_ctx_t *c = ctx;
    eng_tree_t *tr = c->tree;
    size_t nm = (size_t)g->nmetrics;
    uint32_t node = 0;
    uint64_t *in = node_incl(tr, 0);
    for (size_t m = 0; m < nm; m++)
        tr->saturated |= sat_add_to(&in[m], v[m]);
    for (uint32_t i = n; i-- > 0;) {
        int found;
        uint32_t *slot = u64map_slot(&c->children, (uint64_t)node << 32 | ids[i], &found);
        if (!slot)
            return TALLY_ENOMEM;
        if (!found) {
            if (tr->nnodes == c->cap) {
                size_t c1 = c->cap, c2 = c1; /* nodes and their vectors, one capacity */
                if (GROW(tr->nodes, tr->nnodes, c1) ||
                    GROW_W(tr->values, tr->nnodes, c2, 2 * (size_t)nm))
                    return TALLY_ENOMEM;
                c->cap = c1;
            }
            uint32_t k = (uint32_t)tr->nnodes++;
            eng_node_t *nd = &tr->nodes[k];
            memset(nd, 0, sizeof *nd);
            memset(node_incl(tr, k), 0, 2 * nm * sizeof *tr->values);
            nd->object = ids[i];
            nd->parent = node;
            nd->first_child = UINT32_MAX;
            nd->next_sibling = tr->nodes[node].first_child;
            tr->nodes[node].first_child = k;
            *slot = k;
        }
        node = *slot;
        in = node_incl(tr, node);
        for (size_t m = 0; m < nm; m++)
            if (!i || !g->leafonly || !g->leafonly[m]) /* (the leaf only's: at the leaf) */
                tr->saturated |= sat_add_to(&in[m], v[m]);
    }
    if (n) {
        uint64_t *ex = node_incl(tr, node) + nm;
        for (size_t m = 0; m < nm; m++)
            tr->saturated |= sat_add_to(&ex[m], v[m]);
    }
    return 0;
}

const eng_tree_t *eng_calltree(eng_t *g, int kind, tally_err_t *err)
{
    if (kind == ENG_KIND_BLOCK && block_selection_error(g, err))
        return NULL;
    if (g->tree_valid && g->tree_kind == kind)
        return &g->tree;
    free(g->tree.nodes);
    free(g->tree.values);
    memset(&g->tree, 0, sizeof g->tree);
    size_t nm = (size_t)g->nmetrics;
    tree_ctx_t c = { .tree = &g->tree, .cap = 1024 };
    g->tree.nmetrics = g->nmetrics;
    g->tree.nodes = malloc(c.cap * sizeof *g->tree.nodes);
    g->tree.values = malloc(2 * c.cap * nm * sizeof *g->tree.values);
    if (!g->tree.nodes || !g->tree.values) {
        tally_errf(err, TALLY_ENOMEM, "out of memory building the call tree");
        return NULL;
    }
    memset(&g->tree.nodes[0], 0, sizeof g->tree.nodes[0]);
    memset(g->tree.values, 0, 2 * nm * sizeof *g->tree.values);
    g->tree.nodes[0].object = g->tree.nodes[0].parent = UINT32_MAX;
    g->tree.nodes[0].first_child = g->tree.nodes[0].next_sibling = UINT32_MAX;
    g->tree.nnodes = 1;
    int rc = for_each_stack(g, kind, tree_stack, &c, err);
    u64map_free(&c.children);
    if (rc)
        return NULL;
    for (size_t k = 0; k < g->tree.nnodes; k++) {
        g->tree.nodes[k].incl = node_incl(&g->tree, (uint32_t)k);
        g->tree.nodes[k].excl = g->tree.nodes[k].incl + nm;
    }
    g->tree_kind = kind;
    g->tree_valid = 1;
    return &g->tree;
}

/* ---- the aggregation as a part of a job's ------------------------------------------------------ */

int eng_set_share(eng_t *g, const uint32_t *lo, const uint32_t *hi, tally_err_t *err)
{
    free(g->share);
    free(g->share_lo);
    free(g->share_hi);
    g->share = NULL;
    g->share_lo = g->share_hi = NULL;
    g->aggregated = g->table_valid = g->tree_valid = 0;
    if (!lo)
        return 0;
    size_t n = g->nin ? g->nin : 1;
    g->share = calloc(n, sizeof *g->share);
    g->share_lo = calloc(n, sizeof *g->share_lo);
    g->share_hi = calloc(n, sizeof *g->share_hi);
    if (!g->share || !g->share_lo || !g->share_hi)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    for (size_t x = 0; x < g->nin; x++) {
        const exp_experiment_t *e = g->in[x].e;
        uint32_t l = lo[x] < e->nprocs ? lo[x] : (uint32_t)e->nprocs;
        uint32_t h = hi[x] < e->nprocs ? hi[x] : (uint32_t)e->nprocs;
        if (h < l)
            h = l;
        g->share[x] = *e; /* the same processes, a range of them: their indices stay */
        g->share[x].procs = e->procs + l;
        g->share[x].nprocs = h - l;
        g->share_lo[x] = l;
        g->share_hi[x] = h;
    }
    return 0;
}

void eng_set_partial(eng_t *g, int on) { g->partial = on; }

void eng_set_reduce(eng_t *g, eng_reduce_fn fn, void *ctx)
{
    g->reduce = fn;
    g->reduce_ctx = ctx;
}

/* A growing byte buffer of the encodings below; fixed-width fields, native byte order (the
 * processes of one job run one build of tally). */
typedef struct pbuf {
    uint8_t *b;
    size_t n, cap;
    int nomem;
} pbuf_t;

static void pb_put(pbuf_t *p, const void *v, size_t n)
{
    if (p->nomem)
        return;
    if (p->n + n > p->cap) {
        size_t c = p->cap ? p->cap : 4096;
        while (c < p->n + n)
            c *= 2;
        uint8_t *nb = realloc(p->b, c);
        if (!nb) {
            p->nomem = 1;
            return;
        }
        p->b = nb;
        p->cap = c;
    }
    memcpy(p->b + p->n, v, n);
    p->n += n;
}
static void pb_u8(pbuf_t *p, uint8_t v) { pb_put(p, &v, 1); }
static void pb_u32(pbuf_t *p, uint32_t v) { pb_put(p, &v, 4); }
static void pb_u64(pbuf_t *p, uint64_t v) { pb_put(p, &v, 8); }
static void pb_str(pbuf_t *p, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    pb_u32(p, (uint32_t)n);
    pb_put(p, s ? s : "", n);
}
/* A vector: its non-zero entries as (metric, value). */
static void pb_vec(pbuf_t *p, const uint64_t *v, int nm)
{
    uint32_t k = 0;
    for (int m = 0; v && m < nm; m++)
        k += v[m] != 0;
    pb_u32(p, k);
    for (int m = 0; v && m < nm; m++)
        if (v[m]) {
            pb_u32(p, (uint32_t)m);
            pb_u64(p, v[m]);
        }
}

/* Reading one: each get fails (returns 0) past the end, and sets bad. */
typedef struct pget {
    const uint8_t *b;
    size_t n, at;
    int bad;
} pget_t;

static int pg_get(pget_t *g, void *v, size_t n)
{
    if (g->bad || g->n - g->at < n) {
        g->bad = 1;
        memset(v, 0, n);
        return 0;
    }
    memcpy(v, g->b + g->at, n);
    g->at += n;
    return 1;
}
static uint32_t pg_u32(pget_t *g)
{
    uint32_t v;
    pg_get(g, &v, 4);
    return v;
}
static uint64_t pg_u64(pget_t *g)
{
    uint64_t v;
    pg_get(g, &v, 8);
    return v;
}
/* A string into a malloc'd copy (NULL when bad or out of memory: *nomem says which). */
static char *pg_str(pget_t *g, int *nomem)
{
    uint32_t n = pg_u32(g);
    if (g->bad || g->n - g->at < n) {
        g->bad = 1;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        *nomem = 1;
        return NULL;
    }
    memcpy(s, g->b + g->at, n);
    s[n] = 0;
    g->at += n;
    return s;
}

int eng_request_write(eng_t *g, uint8_t **buf, size_t *n, tally_err_t *err)
{
    pbuf_t p = { 0 };
    pb_u32(&p, (uint32_t)g->nin);
    pb_u32(&p, (uint32_t)g->select_all);
    pb_u32(&p, (uint32_t)g->split);
    pb_u64(&p, (uint64_t)g->nrec_threads);
    pb_u64(&p, (uint64_t)g->nthreads);
    for (size_t i = g->nrec_threads; i < g->nthreads; i++) {
        pb_u32(&p, g->threads[i].exp);
        pb_u32(&p, g->threads[i].proc);
        pb_u32(&p, g->threads[i].tid);
    }
    for (size_t i = 0; i < g->nthreads; i++)
        pb_u8(&p, g->selected[i]);
    pb_str(&p, g->selection);
    pb_str(&p, g->sample_text ? g->sample_text : "all");
    pb_str(&p, g->cpu_text ? g->cpu_text : "all");
    pb_str(&p, g->filter ? flt_text(g->filter) : "");
    if (p.nomem) {
        free(p.b);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    *buf = p.b;
    *n = p.n;
    return 0;
}

int eng_request_apply(eng_t *g, const uint8_t *buf, size_t n, tally_err_t *err)
{
    pget_t q = { buf, n, 0, 0 };
    uint32_t nin = pg_u32(&q), all = pg_u32(&q), split = pg_u32(&q);
    uint64_t nrec = pg_u64(&q), nth = pg_u64(&q);
    if (q.bad || nin != g->nin || nrec != g->nrec_threads || nth < nrec ||
        nth > (n - q.at) / 12 + nrec)
        return tally_errf(err, TALLY_ECORRUPT, "the analysis processes do not read the same "
                          "experiments (%u and %zu experiments, %llu and %zu threads of the logs)",
                          nin, g->nin, (unsigned long long)nrec, g->nrec_threads);
    /* the threads numbered beyond the logs', in the merging engine's order */
    for (size_t i = g->nrec_threads; i < g->nthreads; i++)
        u64map_remove(&g->thread_index,
                      thread_key(g->threads[i].exp, g->threads[i].proc, g->threads[i].tid));
    g->nthreads = g->nrec_threads;
    for (uint64_t i = nrec; i < nth; i++) {
        uint32_t exp = pg_u32(&q), proc = pg_u32(&q), tid = pg_u32(&q), index;
        if (q.bad || exp >= g->nin || proc >= g->in[exp].e->nprocs)
            return tally_errf(err, TALLY_ECORRUPT, "a damaged request from the first analysis "
                              "process");
        if (thread_add(g, exp, proc, tid, NULL, &index))
            return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    if (g->nthreads != nth)
        return tally_errf(err, TALLY_ECORRUPT, "a damaged request from the first analysis "
                          "process (a thread twice)");
    for (size_t i = 0; i < g->nthreads; i++) {
        uint8_t v = 0;
        pg_get(&q, &v, 1);
        g->selected[i] = v;
    }
    int nomem = 0;
    char *sel = pg_str(&q, &nomem), *samples = pg_str(&q, &nomem), *cpus = pg_str(&q, &nomem),
         *filter = pg_str(&q, &nomem);
    int rc = 0;
    if (nomem)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
    else if (q.bad || !sel || !samples || !cpus || !filter)
        rc = tally_errf(err, TALLY_ECORRUPT, "a damaged request from the first analysis process");
    if (!rc) {
        free(g->selection);
        g->selection = sel;
        sel = NULL;
        g->select_all = (int)all;
        g->split = (int)split;
        if (!strcmp(samples, "all")) {
            free(g->sample_sel);
            free(g->sample_text);
            g->sample_sel = NULL;
            g->sample_text = NULL;
        } else {
            rc = eng_select_samples(g, samples, err);
        }
    }
    if (!rc) {
        if (!strcmp(cpus, "all")) {
            free(g->cpu_sel);
            free(g->cpu_text);
            g->cpu_sel = NULL;
            g->cpu_text = NULL;
        } else {
            rc = eng_select_cpus(g, cpus, err);
        }
    }
    if (!rc)
        rc = eng_set_filter(g, filter, err);
    free(sel);
    free(samples);
    free(cpus);
    free(filter);
    g->aggregated = g->table_valid = g->tree_valid = 0;
    return rc;
}

/* Partial records: a type byte, then its fields. */
enum { PR_THREAD = 'T', PR_STACK = 'S', PR_PAIR = 'P', PR_TOTAL = 'Z', PR_END = 'E' };

typedef struct pwrite {
    pbuf_t p;
    eng_put_fn put;
    void *ctx;
    int rc;
} pwrite_t;

/* Ends a record: the chunk goes when the next record might not fit. */
static void pw_record_end(pwrite_t *w, size_t start)
{
    if (w->p.nomem || w->rc)
        return;
    if (w->p.n >= ENG_PARTIAL_CHUNK) { /* this record made it too long: send what was before */
        if (start && (w->rc = w->put(w->ctx, w->p.b, start)))
            return;
        memmove(w->p.b, w->p.b + start, w->p.n - start);
        w->p.n -= start;
        if (w->p.n > ENG_PARTIAL_CHUNK) /* a record longer than a chunk: impossible */
            w->p.nomem = 1;
    }
}

int eng_partial_write(eng_t *g, eng_put_fn put, void *ctx, tally_err_t *err)
{
    pwrite_t w = { { 0 }, put, ctx, 0 };
    int nm = g->nmetrics;
    for (size_t i = 0; i < g->nthreads && !w.rc && !w.p.nomem; i++) {
        const eng_thread_t *t = &g->threads[i];
        int any = t->events != 0;
        for (int m = 0; !any && m < nm; m++)
            any = t->value[m] != 0;
        if (!any)
            continue;
        size_t start = w.p.n;
        pb_u8(&w.p, PR_THREAD);
        pb_u32(&w.p, t->exp);
        pb_u32(&w.p, t->proc);
        pb_u32(&w.p, t->tid);
        pb_u64(&w.p, t->events);
        pb_vec(&w.p, t->value, nm);
        pw_record_end(&w, start);
    }
    for (size_t x = 0; x < g->nin && !w.rc && !w.p.nomem; x++) {
        exp_input_t *in = &g->in[x];
        size_t ns = exp_stacks_count(in->stacks);
        uint32_t lo = g->share ? g->share_lo[x] : 0;
        uint32_t hi = g->share ? g->share_hi[x] : (uint32_t)in->e->nprocs;
        for (size_t s = 0; s < ns && !w.rc && !w.p.nomem; s++) {
            uint32_t nf, flags, proc;
            const uint64_t *pcs = exp_stacks_get(in->stacks, (uint32_t)s, &nf, &flags, &proc);
            if (proc < lo || proc >= hi)
                continue;
            size_t start = w.p.n;
            pb_u8(&w.p, PR_STACK);
            pb_u32(&w.p, (uint32_t)x);
            pb_u32(&w.p, (uint32_t)s);
            pb_u32(&w.p, proc);
            pb_u32(&w.p, exp_stacks_gen(in->stacks, (uint32_t)s));
            pb_u32(&w.p, flags);
            pb_u32(&w.p, nf);
            pb_put(&w.p, pcs, (size_t)nf * sizeof *pcs);
            pb_vec(&w.p, s < in->cap ? in->vec + s * (size_t)nm : NULL, nm);
            pw_record_end(&w, start);
        }
    }
    for (size_t i = 0; g->split_done && i < g->npairs && !w.rc && !w.p.nomem; i++) {
        uint64_t key = g->pair_key[i];
        const eng_thread_t *t = &g->threads[key >> 32];
        const uint64_t *row = g->pair_vec + i * (size_t)g->pair_w;
        size_t start = w.p.n;
        pb_u8(&w.p, PR_PAIR);
        pb_u32(&w.p, t->exp);
        pb_u32(&w.p, t->proc);
        pb_u32(&w.p, t->tid);
        pb_u32(&w.p, (uint32_t)key);
        uint32_t k = 0;
        for (int m = 0; m < nm; m++)
            k += g->pair_col && g->pair_col[m] >= 0 && row[g->pair_col[m]] != 0;
        pb_u32(&w.p, k);
        for (int m = 0; m < nm; m++)
            if (g->pair_col && g->pair_col[m] >= 0 && row[g->pair_col[m]]) {
                pb_u32(&w.p, (uint32_t)m);
                pb_u64(&w.p, row[g->pair_col[m]]);
            }
        pw_record_end(&w, start);
    }
    if (!w.rc && !w.p.nomem) {
        size_t start = w.p.n;
        pb_u8(&w.p, PR_TOTAL);
        pb_u64(&w.p, g->nselected);
        pb_u32(&w.p, (uint32_t)g->saturated);
        const exp_scan_stats_t *st = &g->stats;
        uint64_t f[] = { st->chunks, st->unused_chunks, st->bad_chunks, st->records,
                         st->unknown_records, st->bad_records, st->seq_gaps, st->events };
        pb_put(&w.p, f, sizeof f);
        pb_put(&w.p, st->lost, sizeof st->lost);
        pb_vec(&w.p, g->total, nm);
        pb_u8(&w.p, PR_END);
        pw_record_end(&w, start);
    }
    if (!w.rc && !w.p.nomem && w.p.n)
        w.rc = put(ctx, w.p.b, w.p.n);
    free(w.p.b);
    if (w.p.nomem)
        return tally_errf(err, TALLY_ENOMEM, "out of memory writing a partial result");
    if (w.rc)
        return tally_errf(err, w.rc < 0 ? w.rc : TALLY_EIO, "the partial result could not be "
                          "sent");
    return 0;
}

struct eng_merge {
    eng_t *g;
    u64map_t sid; /* experiment << 32 | the partial's stack id -> this engine's */
    uint64_t *pcs;
    size_t pcs_cap;
    int done;
};

eng_merge_t *eng_merge_new(eng_t *g)
{
    eng_merge_t *m = calloc(1, sizeof *m);
    if (m)
        m->g = g;
    return m;
}

void eng_merge_free(eng_merge_t *m)
{
    if (!m)
        return;
    u64map_free(&m->sid);
    free(m->pcs);
    free(m);
}

/* Reads a sparse vector and adds it to v (NULL: only checked); pair: to the pair instead. */
static int merge_vec(eng_t *g, pget_t *q, uint64_t *v, uint32_t pair_thread, uint32_t pair_stack,
                     int pair)
{
    uint32_t k = pg_u32(q);
    evvals_t e = { 0 };
    for (uint32_t i = 0; i < k && !q->bad; i++) {
        uint32_t m = pg_u32(q);
        uint64_t val = pg_u64(q);
        if (q->bad || m >= (uint32_t)g->nmetrics) {
            q->bad = 1;
            break;
        }
        if (v)
            g->saturated |= sat_add_to(&v[m], val);
        if (pair) {
            put(&e, (int)m, val);
            if (e.n == EV_MAXVALS || i + 1 == k) {
                if (pair_add(g, pair_thread, pair_stack, &e))
                    return TALLY_ENOMEM;
                e.n = 0;
            }
        }
    }
    return 0;
}

int eng_merge_chunk(eng_merge_t *mg, const void *buf, size_t n, int *done, tally_err_t *err)
{
    eng_t *g = mg->g;
    pget_t q = { buf, n, 0, 0 };
    size_t nm = (size_t)g->nmetrics;
    int rc = 0;
    *done = 0;
    while (!rc && !q.bad && q.at < q.n && !mg->done) {
        uint8_t type = 0;
        pg_get(&q, &type, 1);
        if (type == PR_THREAD) {
            uint32_t exp = pg_u32(&q), proc = pg_u32(&q), tid = pg_u32(&q), index;
            uint64_t events = pg_u64(&q);
            if (q.bad || exp >= g->nin || proc >= g->in[exp].e->nprocs) {
                q.bad = 1;
                break;
            }
            if ((rc = thread_add(g, exp, proc, tid, NULL, &index)))
                break;
            g->threads[index].events += events;
            rc = merge_vec(g, &q, g->threads[index].value, 0, 0, 0);
        } else if (type == PR_STACK) {
            uint32_t exp = pg_u32(&q), sid = pg_u32(&q), proc = pg_u32(&q), gen = pg_u32(&q),
                     flags = pg_u32(&q), nf = pg_u32(&q);
            if (q.bad || exp >= g->nin || proc >= g->in[exp].e->nprocs ||
                nf > (q.n - q.at) / 8) {
                q.bad = 1;
                break;
            }
            if (nf > mg->pcs_cap) {
                uint64_t *np = realloc(mg->pcs, (size_t)nf * sizeof *np);
                if (!np) {
                    rc = TALLY_ENOMEM;
                    break;
                }
                mg->pcs = np;
                mg->pcs_cap = nf;
            }
            pg_get(&q, mg->pcs, (size_t)nf * 8);
            exp_input_t *in = &g->in[exp];
            int64_t id = exp_stacks_intern_gen(in->stacks, proc, gen, mg->pcs, nf, flags);
            if (id < 0 || u64map_put(&mg->sid, (uint64_t)exp << 32 | sid, (uint32_t)id) ||
                grow_stack_arrays(in, (size_t)id + 1, nm)) {
                rc = TALLY_ENOMEM;
                break;
            }
            rc = merge_vec(g, &q, in->vec + (size_t)id * nm, 0, 0, 0);
        } else if (type == PR_PAIR) {
            uint32_t exp = pg_u32(&q), proc = pg_u32(&q), tid = pg_u32(&q), sid = pg_u32(&q);
            const uint32_t *id = u64map_get(&mg->sid, (uint64_t)exp << 32 | sid);
            uint32_t index;
            if (q.bad || exp >= g->nin || proc >= g->in[exp].e->nprocs || !id) {
                q.bad = 1;
                break;
            }
            if ((rc = thread_add(g, exp, proc, tid, NULL, &index)))
                break;
            rc = merge_vec(g, &q, NULL, index, *id, 1);
        } else if (type == PR_TOTAL) {
            g->nselected += pg_u64(&q);
            g->saturated |= (int)pg_u32(&q);
            uint64_t f[8], lost[EXP_LOST_NREASONS];
            pg_get(&q, f, sizeof f);
            pg_get(&q, lost, sizeof lost);
            exp_scan_stats_t *st = &g->stats;
            st->chunks += f[0];
            st->unused_chunks += f[1];
            st->bad_chunks += f[2];
            st->records += f[3];
            st->unknown_records += f[4];
            st->bad_records += f[5];
            st->seq_gaps += f[6];
            st->events += f[7];
            for (int r = 0; r < EXP_LOST_NREASONS; r++)
                sat_add_to(&st->lost[r], lost[r]);
            rc = merge_vec(g, &q, g->total, 0, 0, 0);
        } else if (type == PR_END) {
            mg->done = 1;
        } else {
            q.bad = 1;
        }
    }
    if (rc)
        return tally_errf(err, rc, "out of memory merging a partial result");
    if (q.bad || (mg->done && q.at < q.n))
        return tally_errf(err, TALLY_ECORRUPT, "a damaged partial result (at byte %zu of a "
                          "chunk of %zu)", q.at, q.n);
    *done = mg->done;
    return 0;
}
