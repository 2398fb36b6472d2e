/*
 * report_trace.c - the models of the views of traced calls: stacks as frames, heap stacks, sync
 * object kinds and names. See report.h (and analyzer/traces.h for the heap over time, sync
 * objects and files).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/report.h"
#include "base/grow.h"

void rep_frames(ses_t *s, int namefmt, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                const uint32_t *fns, uint32_t n, rep_frame_t *frames)
{
    const exp_process_t *p = s->exps[exp]->procs[proc];
    for (uint32_t i = 0; i < n; i++) {
        const sym_func_t *f = sym_func(s->sym, fns[i]);
        const exp_object_t *o = exp_object_at(p, pcs[i], EXP_T_NEVER);
        uint64_t addr = o ? pcs[i] - o->bias : pcs[i];
        frames[i] = (rep_frame_t){
            eng_object_name(s->eng, ENG_KIND_FUNCTION, fns[i], namefmt),
            f->size && addr >= f->addr ? addr - f->addr : 0, pcs[i]
        };
    }
}

typedef struct heap_ctx {
    rep_heap_stacks_t *h;
    size_t cap;
    int cnt, bytes; /* the metrics listed */
} heap_ctx_t;

static int collect_row(void *ctx, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                       const uint32_t *fns, uint32_t n, const uint64_t *v)
{
    heap_ctx_t *c = ctx;
    if (!v[c->cnt])
        return 0;
    if (GROW(c->h->rows, c->h->n, c->cap))
        return TALLY_ENOMEM;
    c->h->rows[c->h->n++] = (rep_heap_row_t){ exp, proc, n, pcs, fns, v[c->cnt], v[c->bytes] };
    return 0;
}

static int cmp_heap_rows(const void *a, const void *b)
{
    const rep_heap_row_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->count > y->count ? -1 : x->count < y->count;
}

int rep_heap_stacks(ses_t *s, int leaks, rep_heap_stacks_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    heap_ctx_t c = { .h = out,
                     .cnt = leaks ? ENG_M_HEAPLEAKCNT : ENG_M_HEAPALLOCCNT,
                     .bytes = leaks ? ENG_M_HEAPLEAKBYTES : ENG_M_HEAPALLOCBYTES };
    int rc = eng_foreach_stack(s->eng, collect_row, &c, err);
    if (rc < 0) {
        if (!err->code)
            tally_errf(err, rc, "out of memory");
        rep_heap_stacks_free(out);
        return rc;
    }
    if (out->n)
        qsort(out->rows, out->n, sizeof *out->rows, cmp_heap_rows);
    for (size_t i = 0; i < out->n; i++) {
        out->instances += out->rows[i].count;
        out->bytes += out->rows[i].bytes;
    }
    return 0;
}

void rep_heap_stacks_free(rep_heap_stacks_t *h)
{
    free(h->rows);
    memset(h, 0, sizeof *h);
}

const char *rep_sync_kind(uint32_t call)
{
    switch (call) {
    case EXP_SYNC_MUTEX_LOCK:
    case EXP_SYNC_MUTEX_TIMEDLOCK: return "mutex";
    case EXP_SYNC_RWLOCK_RDLOCK:
    case EXP_SYNC_RWLOCK_TIMEDRDLOCK:
    case EXP_SYNC_RWLOCK_WRLOCK:
    case EXP_SYNC_RWLOCK_TIMEDWRLOCK: return "rwlock";
    case EXP_SYNC_COND_WAIT:
    case EXP_SYNC_COND_TIMEDWAIT: return "condition";
    case EXP_SYNC_SEM_WAIT:
    case EXP_SYNC_SEM_TIMEDWAIT: return "semaphore";
    case EXP_SYNC_JOIN: return "thread";
    case EXP_SYNC_BARRIER_WAIT: return "barrier";
    case EXP_SYNC_SPIN_LOCK: return "spinlock";
    default: return "?";
    }
}

void rep_sync_name(const char *var, uint64_t offset, uint32_t call, char *buf, size_t n)
{
    if (!var)
        snprintf(buf, n, "%s", call == EXP_SYNC_JOIN ? "<thread>" : "<unknown>");
    else if (offset)
        snprintf(buf, n, "%s+%llu", var, (unsigned long long)offset);
    else
        snprintf(buf, n, "%s", var);
}
