/*
 * api.c - the collector API, version 1 (include/tally_collector_api.h): the table of functions
 * libtally-collector.so exports to separate libraries, over the tracing core (trace.c).
 *
 * Declarations are kept in a process-wide registry (fixed arrays under a spinlock: no malloc, so
 * a library may declare from inside its allocator's wrapper) and written to the log as `metric`
 * and `kind` records when made; a fork child writes them all again into its own log
 * (api_log_declarations). Records go to the calling thread's stream of traced calls (trace.c), so
 * they merge with the interposers' records in time and share their guard, pause and window.
 * Depends on trace.h, unwind.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <ucontext.h>

#include "../../include/tally_collector_api.h"
#include "base/spinlock.h"
#include "experiment/logfile.h"
#include "threads.h"
#include "trace.h"
#include "unwind.h"
#include "experiment/logrec.h"

/* ---- the registry of declarations ------------------------------------------------------------- */

typedef struct api_metric {
    char name[64], title[128], unit[32];
    int time;
} api_metric_t;

typedef struct api_kind {
    char name[64];
    uint32_t n, nattrs;
    uint16_t metric[TALLY_API_MAX_VALUES]; /* indices into reg.metrics */
    char attrs[TALLY_API_MAX_VALUES * 64]; /* the attributes' names, comma-separated */
} api_kind_t;

static struct {
    int lock;
    api_metric_t metrics[TALLY_API_MAX_METRICS];
    uint32_t nmetrics;
    api_kind_t kinds[TALLY_API_MAX_KINDS]; /* the kind's id is its index */
    uint32_t nkinds;                       /* atomic for emit's check */
} reg;

static void copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

static void log_metric(const api_metric_t *m)
{
    char buf[512];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_METRIC);
    exp_line_u64(&l, EXP_KEY_T, coll_now());
    exp_line_str(&l, EXP_KEY_NAME, m->name);
    exp_line_str(&l, EXP_KEY_TITLE, m->title);
    exp_line_str(&l, EXP_KEY_UNIT, m->unit);
    exp_line_str(&l, EXP_KEY_AGGREGATE, "sum");
    exp_line_u64(&l, EXP_KEY_TIME, (uint64_t)m->time);
    coll_log_write(&l);
}

static void log_kind(uint32_t id)
{
    const api_kind_t *k = &reg.kinds[id];
    char buf[4096], list[TALLY_API_MAX_VALUES * 64];
    size_t len = 0;
    for (uint32_t i = 0; i < k->n; i++) {
        const char *nm = reg.metrics[k->metric[i]].name;
        size_t n = strlen(nm);
        if (i)
            list[len++] = ',';
        memcpy(list + len, nm, n);
        len += n;
    }
    list[len] = 0;
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_KIND);
    exp_line_u64(&l, EXP_KEY_T, coll_now());
    exp_line_u64(&l, EXP_KEY_ID, id);
    exp_line_str(&l, EXP_KEY_NAME, k->name);
    exp_line_str(&l, EXP_KEY_METRICS, list);
    if (k->nattrs)
        exp_line_str(&l, EXP_KEY_ATTRS, k->attrs);
    coll_log_write(&l);
}

void api_log_declarations(void)
{
    reg.lock = 0; /* a fork child has one thread: a lock another thread of the parent held is free */
    spin_lock(&reg.lock);
    for (uint32_t i = 0; i < reg.nmetrics; i++)
        log_metric(&reg.metrics[i]);
    for (uint32_t i = 0; i < reg.nkinds; i++)
        log_kind(i);
    spin_unlock(&reg.lock);
}

static long find_metric(const char *name)
{
    for (uint32_t i = 0; i < reg.nmetrics; i++)
        if (!strcmp(reg.metrics[i].name, name))
            return i;
    return -1;
}

static int declare_metric(const char *name, const char *title, const char *unit, int time)
{
    if (!exp_decl_name_ok(name) || !exp_decl_text_ok(title, EXP_DECL_TITLE_MAX) ||
        !exp_decl_text_ok(unit, EXP_DECL_UNIT_MAX))
        return -EINVAL;
    api_metric_t m = { .time = time != 0 };
    copy(m.name, sizeof m.name, name);
    copy(m.title, sizeof m.title, title && *title ? title : name);
    copy(m.unit, sizeof m.unit, m.time ? "s" : unit && *unit ? unit : "count");
    spin_lock(&reg.lock);
    long i = find_metric(name);
    int rc = 0;
    if (i >= 0) {
        const api_metric_t *o = &reg.metrics[i];
        rc = strcmp(o->title, m.title) || strcmp(o->unit, m.unit) || o->time != m.time
                 ? -EEXIST : 0;
    } else if (reg.nmetrics == TALLY_API_MAX_METRICS) {
        rc = -ENOSPC;
    } else {
        reg.metrics[reg.nmetrics] = m;
        log_metric(&reg.metrics[reg.nmetrics++]);
    }
    spin_unlock(&reg.lock);
    return rc;
}

static int declare_kind_attrs(const char *name, const char *const *metrics, uint32_t n,
                              const char *const *attrs, uint32_t nattrs)
{
    if (!exp_decl_name_ok(name) || (n && !metrics) || (nattrs && !attrs) || n + nattrs == 0 ||
        n > TALLY_API_MAX_VALUES || nattrs > TALLY_API_MAX_VALUES - n)
        return -EINVAL;
    api_kind_t k = { .n = n, .nattrs = nattrs };
    copy(k.name, sizeof k.name, name);
    size_t len = 0;
    for (uint32_t i = 0; i < nattrs; i++) {
        if (!exp_decl_name_ok(attrs[i]))
            return -EINVAL;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(attrs[i], attrs[j]))
                return -EINVAL;
        size_t an = strlen(attrs[i]); /* at most 63: exp_decl_name_ok */
        if (i)
            k.attrs[len++] = ',';
        memcpy(k.attrs + len, attrs[i], an);
        len += an;
    }
    k.attrs[len] = 0;
    spin_lock(&reg.lock);
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        long m = metrics[i] ? find_metric(metrics[i]) : -1;
        if (m < 0)
            rc = -ENOENT;
        else
            k.metric[i] = (uint16_t)m;
    }
    for (uint32_t i = 0; i < reg.nkinds && !rc; i++) {
        const api_kind_t *o = &reg.kinds[i];
        if (strcmp(o->name, k.name))
            continue;
        rc = o->n == k.n && !memcmp(o->metric, k.metric, n * sizeof *k.metric) &&
                     o->nattrs == k.nattrs && !strcmp(o->attrs, k.attrs)
                 ? (int)i + 1
                 : -EEXIST;
    }
    if (rc > 0) {
        rc--; /* declared before: its id */
    } else if (rc == 0 && reg.nkinds == TALLY_API_MAX_KINDS) {
        rc = -ENOSPC;
    } else if (rc == 0) {
        reg.kinds[reg.nkinds] = k;
        log_kind(reg.nkinds);
        rc = (int)reg.nkinds;
        __atomic_store_n(&reg.nkinds, reg.nkinds + 1, __ATOMIC_RELEASE);
    }
    spin_unlock(&reg.lock);
    return rc;
}

static int declare_kind(const char *name, const char *const *metrics, uint32_t n)
{
    if (n == 0)
        return -EINVAL;
    return declare_kind_attrs(name, metrics, n, NULL, 0);
}

/* ---- recording -------------------------------------------------------------------------------- */

/* The API is a kind of traced call of its own (TRACE_K_API): calls of other kinds made between
 * enter and leave (the allocations of the library's real call) are traced as the interposers'
 * are; a nested enter of the API passes through. */
static int enter(void)
{
    trace_thr_t *t = &trace_thr;
    if (!__atomic_load_n(&trace_api_on, __ATOMIC_ACQUIRE) || t->guard ||
        (t->busy & TRACE_K_API) || signals_in_core())
        return 0;
    t->guard++; /* (the set-up is the collector's work) */
    int ready = trace_api_ready();
    t->guard--;
    if (!ready)
        return 0;
    t->busy |= TRACE_K_API;
    return 1;
}

static void leave(void) { trace_thr.busy &= ~(unsigned)TRACE_K_API; }

static uint64_t now(void) { return trace_now(); }

/* Built with a frame pointer (CMakeLists.txt): FU_REGS gives the frame of our caller (the
 * library's function), whose return address leads to the code that called it. */
static uint32_t stack_caller(const void *fn, uint64_t *pcs, uint32_t max)
{
    if (!pcs || max == 0)
        return 0;
    fu_regs_t r = FU_REGS(); /* r.ip: a return address inside our caller */
    uint32_t n = trace_api_stack(&trace_thr, r, NULL, pcs, max);
    if (n && fn)
        pcs[0] = (uint64_t)(uintptr_t)fn; /* the call named by the library's entry point */
    return n;
}

#define CONTEXT_MAX 256

static uint32_t stack_context(const void *ucontext, uint64_t *pcs, uint32_t max)
{
    if (!ucontext || !pcs || max == 0)
        return 0;
    if (max > CONTEXT_MAX)
        max = CONTEXT_MAX;
    void *scratch[CONTEXT_MAX + UNWIND_SKIP_MAX];
    uint32_t flags = 0;
    return unwind_stack((const ucontext_t *)ucontext, scratch, pcs, max, &flags);
}

static int emit(int kind, uint64_t t, const uint64_t *pcs, uint32_t n, const uint64_t *values,
                uint32_t nvalues, uint32_t flags)
{
    if (!(trace_thr.busy & TRACE_K_API) || kind < 0 ||
        (uint32_t)kind >= __atomic_load_n(&reg.nkinds, __ATOMIC_ACQUIRE) ||
        nvalues > reg.kinds[kind].n + reg.kinds[kind].nattrs || (nvalues && !values) ||
        (n && !pcs))
        return -EINVAL;
    if (n > coll_proc.max_depth)
        n = coll_proc.max_depth;
    return trace_api_record(&trace_thr, t, (uint32_t)kind, pcs, n, values, nvalues,
                            (flags & TALLY_EMIT_SIGNAL) != 0);
}

/* The runtime state word of the calling thread (threads.c) holds 1 + the kind's id. */
static int set_state(int kind)
{
    if (kind < -1 || (kind >= 0 && (uint32_t)kind >= __atomic_load_n(&reg.nkinds, __ATOMIC_ACQUIRE)))
        return -EINVAL;
    return (int)threads_set_rstate((uint32_t)(kind + 1)) - 1;
}

static const tally_collector_api_v1_t api_v1 = {
    .version = TALLY_COLLECTOR_API_VERSION,
    .size = sizeof(tally_collector_api_v1_t),
    .enter = enter,
    .leave = leave,
    .now = now,
    .declare_metric = declare_metric,
    .declare_kind = declare_kind,
    .stack_caller = stack_caller,
    .stack_context = stack_context,
    .emit = emit,
    .set_state = set_state,
    .declare_kind_attrs = declare_kind_attrs,
};

/* A `note` record (tally_collector_note_v1): name, then the pairs; each name checked as a
 * declared metric's, "t" and "name" refused (the record's own fields). */
COLL_EXPORT int tally_collector_note_v1(const char *name, const char *const *keys,
                                        const uint64_t *values, uint32_t n)
{
    if (!coll_ensure_init())
        return -EAGAIN;
    if (!exp_decl_name_ok(name) || n > TALLY_API_MAX_VALUES || (n && (!keys || !values)))
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (!exp_decl_name_ok(keys[i]) || !strcmp(keys[i], "t") || !strcmp(keys[i], "name"))
            return -EINVAL;
    char buf[1024];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_NOTE);
    exp_line_u64(&l, EXP_KEY_T, coll_now());
    exp_line_str(&l, EXP_KEY_NAME, name);
    for (uint32_t i = 0; i < n; i++)
        exp_line_u64(&l, keys[i], values[i]);
    coll_log_write(&l);
    return 0;
}

COLL_EXPORT const tally_collector_api_v1_t *tally_collector_api_v1(void)
{
    return coll_ensure_init() ? &api_v1 : NULL;
}
