/*
 * report_er.c - er_print's heap and I/O report models (report_er.h): size distributions and I/O
 * call stacks.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "analyzer/heapmatch.h"
#include "analyzer/report_er.h"
#include "base/grow.h"
#include "experiment/evformat.h"

static const struct {
    uint64_t upper;
    const char *name;
} ranges[REP_NSIZES] = {
    { 1ull << 10, "0KB - 1KB" },         { 8ull << 10, "1KB - 8KB" },
    { 32ull << 10, "8KB - 32KB" },       { 128ull << 10, "32KB - 128KB" },
    { 256ull << 10, "128KB - 256KB" },   { 512ull << 10, "256KB - 512KB" },
    { 1000ull << 10, "512KB - 1000KB" }, { 10ull << 20, "1000KB - 10MB" },
    { 100ull << 20, "10MB - 100MB" },    { 1ull << 30, "100MB - 1GB" },
    { 10ull << 30, "1GB - 10GB" },       { UINT64_MAX, "over 10GB" },
};

const char *rep_size_range(int i) { return i >= 0 && i < REP_NSIZES ? ranges[i].name : "?"; }

int rep_size_index(uint64_t bytes)
{
    int i = 0;
    while (i < REP_NSIZES - 1 && bytes > ranges[i].upper)
        i++;
    return i;
}

static void add_size(rep_sizes_t *z, uint64_t bytes, uint64_t ns)
{
    z->count[rep_size_index(bytes)]++;
    if (!z->n || bytes < z->min)
        z->min = bytes;
    if (bytes > z->max)
        z->max = bytes;
    z->n++;
    z->bytes += bytes;
    z->ns += ns;
    if (ns > z->max_ns)
        z->max_ns = ns;
}

/* ---- heap ------------------------------------------------------------------------------------ */

typedef struct heap_sizes {
    rep_sizes_t *allocs, *leaks;
    hm_t *hm;
    uint32_t proc;
    int started, err;
} heap_sizes_t;

static void leaked(void *ctx, const hm_block_t *b)
{
    heap_sizes_t *h = ctx;
    add_size(h->leaks, b->size, 0);
}

static int heap_size_cb(void *ctx, const exp_event_t *ev)
{
    heap_sizes_t *h = ctx;
    if (ev->type != EXP_REC_HEAP_ALLOC && ev->type != EXP_REC_HEAP_FREE)
        return 0;
    if (!h->started || ev->proc != h->proc) { /* the blocks of a process are its own */
        if (h->started)
            hm_foreach(h->hm, leaked, h);
        hm_clear(h->hm);
        h->proc = ev->proc;
        h->started = 1;
    }
    int mapped = ev->call == EXP_HEAP_MMAP || ev->call == EXP_HEAP_MREMAP;
    if (ev->type == EXP_REC_HEAP_FREE) {
        hm_release(h->hm, ev->addr, ev->size, mapped, NULL, NULL);
        return 0;
    }
    hm_info_t info = { .stack = ev->stack, .thread = ev->tid, .t = ev->t };
    if (hm_alloc(h->hm, ev->addr, ev->size, mapped, &info, NULL, NULL))
        return h->err = TALLY_ENOMEM;
    add_size(h->allocs, ev->size, 0);
    return 0;
}

int rep_heap_sizes(ses_t *s, rep_sizes_t *allocs, rep_sizes_t *leaks, tally_err_t *err)
{
    memset(allocs, 0, sizeof *allocs);
    memset(leaks, 0, sizeof *leaks);
    heap_sizes_t h = { allocs, leaks, hm_new(), 0, 0, 0 };
    if (!h.hm)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t x = 0; x < s->nexps && !rc; x++) {
        h.started = 0;
        hm_clear(h.hm);
        rc = exp_scan(s->exps[x], eng_stacks(s->eng, (uint32_t)x), heap_size_cb, &h, NULL, err);
        if (h.err)
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
        else if (!rc && h.started)
            hm_foreach(h.hm, leaked, &h);
    }
    hm_free(h.hm);
    return rc < 0 ? rc : rc ? TALLY_ENOMEM : 0;
}

/* ---- I/O ------------------------------------------------------------------------------------- */

typedef struct io_sizes {
    ses_t *s;
    uint32_t exp;
    rep_sizes_t *kinds;
} io_sizes_t;

static int io_size_cb(void *ctx, const exp_event_t *ev)
{
    io_sizes_t *c = ctx;
    if (ev->type != EXP_REC_IO || !eng_event_selected(c->s->eng, c->exp, ev))
        return 0;
    int k = ev->err ? TR_IO_ERROR : EXP_IO_IS_READ(ev->call) ? TR_IO_READ
            : EXP_IO_IS_WRITE(ev->call) ? TR_IO_WRITE : TR_IO_OTHER;
    add_size(&c->kinds[k], ev->size, ev->weight);
    return 0;
}

int rep_io_sizes(ses_t *s, rep_sizes_t kinds[TR_IO_NKINDS], tally_err_t *err)
{
    memset(kinds, 0, TR_IO_NKINDS * sizeof *kinds);
    io_sizes_t c = { s, 0, kinds };
    int rc = 0;
    for (size_t x = 0; x < s->nexps && !rc; x++) {
        c.exp = (uint32_t)x;
        rc = exp_scan(s->exps[x], eng_stacks(s->eng, (uint32_t)x), io_size_cb, &c, NULL, err);
    }
    return rc < 0 ? rc : rc ? TALLY_ENOMEM : 0;
}

typedef struct io_stacks {
    rep_vstack_t *rows;
    size_t n, cap;
} io_stacks_t;

static uint64_t io_time(const uint64_t *v)
{
    return v[ENG_M_IOREADTIME] + v[ENG_M_IOWRITETIME] + v[ENG_M_IOOTHERTIME] + v[ENG_M_IOERRORTIME];
}

static int io_stack_cb(void *ctx, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                       const uint32_t *fns, uint32_t n, const uint64_t *v)
{
    io_stacks_t *c = ctx;
    if (!(v[ENG_M_IOREADCNT] + v[ENG_M_IOWRITECNT] + v[ENG_M_IOOTHERCNT] + v[ENG_M_IOERRORCNT]))
        return 0;
    if (GROW(c->rows, c->n, c->cap))
        return TALLY_ENOMEM;
    c->rows[c->n++] = (rep_vstack_t){ exp, proc, n, pcs, fns, v };
    return 0;
}

static int cmp_io(const void *a, const void *b)
{
    uint64_t x = io_time(((const rep_vstack_t *)a)->v), y = io_time(((const rep_vstack_t *)b)->v);
    return x > y ? -1 : x < y;
}

int rep_io_stacks(ses_t *s, rep_vstack_t **rows, size_t *n, tally_err_t *err)
{
    io_stacks_t c = { 0 };
    tally_err_t e2 = { 0 };
    if (eng_aggregate(s->eng, err))
        return err->code ? err->code : TALLY_ENOMEM;
    int rc = eng_foreach_stack(s->eng, io_stack_cb, &c, &e2);
    if (rc < 0) {
        free(c.rows);
        if (e2.code) {
            *err = e2;
            return rc;
        }
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    if (c.n)
        qsort(c.rows, c.n, sizeof *c.rows, cmp_io);
    *rows = c.rows;
    *n = c.n;
    return 0;
}
