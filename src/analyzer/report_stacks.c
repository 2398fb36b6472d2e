/*
 * report_stacks.c - stacks as the exporters write them: per distinct stack, per (thread, stack),
 * and per event in time order, their frames mapped to functions by the engine (eng_map_stack),
 * so that what an exporter writes adds up to the function table. See report.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "analyzer/report.h"
#include "base/satadd.h"
#include "base/u64map.h"

/* ---- names ---------------------------------------------------------------------------------- */

int rep_stack_names(ses_t *s, int namefmt, rep_names_t *nm, tally_err_t *err)
{
    const eng_table_t *t = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    return rep_names_build(s->eng, t, namefmt, nm, err);
}

/* ---- every distinct stack ------------------------------------------------------------------- */

typedef struct merged_ctx {
    rep_stack_fn fn;
    void *ctx;
} merged_ctx_t;

static int merged_stack(void *ctx, const eng_mapped_t *m, const uint64_t *v)
{
    merged_ctx_t *c = ctx;
    rep_stack_t st = { m, NULL, v };
    return c->fn(c->ctx, &st);
}

/* ---- every (thread, stack) pair ------------------------------------------------------------- */

typedef struct pair_ctx {
    eng_t *g;
    size_t nm;
    u64map_t index;  /* thread index << 32 | stack -> pair */
    uint64_t *keys;  /* [pair] */
    uint64_t *vals;  /* [pair * nm] */
    size_t n, cap;
    int err;
} pair_ctx_t;

static int add_pair(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf_fn,
                    uint32_t thread)
{
    (void)leaf_fn;
    pair_ctx_t *c = ctx;
    if (ev->stack == EXP_NO_STACK)
        return 0;
    int any = 0;
    for (size_t m = 0; m < c->nm; m++)
        any |= v[m] != 0;
    if (!any)
        return 0;
    int found;
    uint64_t key = (uint64_t)thread << 32 | ev->stack;
    uint32_t *slot = u64map_slot(&c->index, key, &found);
    if (!slot)
        return c->err = TALLY_ENOMEM;
    if (!found) {
        if (c->n == c->cap) {
            size_t ncap = c->cap ? c->cap * 2 : 1024;
            uint64_t *nk = realloc(c->keys, ncap * sizeof *nk);
            if (nk)
                c->keys = nk;
            uint64_t *nv = realloc(c->vals, ncap * c->nm * sizeof *nv);
            if (nv)
                c->vals = nv;
            if (!nk || !nv)
                return c->err = TALLY_ENOMEM;
            c->cap = ncap;
        }
        *slot = (uint32_t)c->n;
        c->keys[c->n] = key;
        memset(c->vals + c->n * c->nm, 0, c->nm * sizeof *c->vals);
        c->n++;
    }
    uint64_t *dst = c->vals + (size_t)*slot * c->nm;
    for (size_t m = 0; m < c->nm; m++)
        sat_add_to(&dst[m], v[m]);
    return 0;
}

static int cmp_key(const void *a, const void *b, void *keys)
{
    uint64_t ka = ((const uint64_t *)keys)[*(const uint32_t *)a];
    uint64_t kb = ((const uint64_t *)keys)[*(const uint32_t *)b];
    return ka < kb ? -1 : ka > kb;
}

static int per_thread(ses_t *s, rep_stack_fn fn, void *ctx, tally_err_t *err)
{
    pair_ctx_t c = { .g = s->eng, .nm = (size_t)eng_nmetrics(s->eng) };
    int rc = eng_foreach_event(s->eng, add_pair, &c, err);
    if (!rc && c.err)
        rc = tally_errf(err, c.err, "out of memory collecting the stacks of each thread");
    uint32_t *order = NULL;
    if (!rc && !(order = malloc((c.n ? c.n : 1) * sizeof *order)))
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory collecting the stacks of each thread");
    if (!rc) {
        for (size_t i = 0; i < c.n; i++)
            order[i] = (uint32_t)i;
        qsort_r(order, c.n, sizeof *order, cmp_key, c.keys);
        u64map_free(&c.index); /* (no longer needed: give its memory back before the writing) */
    }
    for (size_t i = 0; !rc && i < c.n; i++) {
        uint64_t key = c.keys[order[i]];
        const eng_thread_t *t = eng_thread(s->eng, (size_t)(key >> 32));
        eng_mapped_t m;
        if ((rc = eng_map_stack(s->eng, t->exp, (uint32_t)key, ENG_KIND_FUNCTION, &m, err)))
            break;
        rep_stack_t st = { &m, t, c.vals + (size_t)order[i] * c.nm };
        rc = fn(ctx, &st);
    }
    free(order);
    u64map_free(&c.index);
    free(c.keys);
    free(c.vals);
    return rc;
}

int rep_stacks(ses_t *s, int per_thread_too, rep_stack_fn fn, void *ctx, tally_err_t *err)
{
    if (per_thread_too)
        return per_thread(s, fn, ctx, err);
    merged_ctx_t c = { fn, ctx };
    return eng_foreach_mapped_stack(s->eng, ENG_KIND_FUNCTION, merged_stack, &c, err);
}

/* ---- every event ---------------------------------------------------------------------------- */

typedef struct event_ctx {
    ses_t *s;
    rep_event_fn fn;
    void *ctx;
    tally_err_t *err;
    int rc;
} event_ctx_t;

static int one_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf_fn,
                     uint32_t thread)
{
    (void)leaf_fn;
    event_ctx_t *c = ctx;
    const eng_thread_t *t = eng_thread(c->s->eng, thread);
    eng_mapped_t m;
    rep_event_t e = { ev, t, NULL, v };
    if (ev->stack != EXP_NO_STACK) {
        if ((c->rc = eng_map_stack(c->s->eng, t->exp, ev->stack, ENG_KIND_FUNCTION, &m, c->err)))
            return c->rc;
        e.m = &m;
    }
    return c->rc = c->fn(c->ctx, &e);
}

int rep_events(ses_t *s, rep_event_fn fn, void *ctx, tally_err_t *err)
{
    event_ctx_t c = { s, fn, ctx, err, 0 };
    int rc = eng_foreach_event(s->eng, one_event, &c, err);
    return c.rc ? c.rc : rc;
}
