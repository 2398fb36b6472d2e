/*
 * report_stacks.c - stacks as the exporters write them: per distinct stack, per (thread, stack),
 * and per event in time order, their frames mapped to functions by the engine (eng_map_stack),
 * so that what an exporter writes adds up to the function table. See report.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "analyzer/report.h"

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
    rep_stack_fn fn;
    void *ctx;
    const int *metrics; /* a pair whose listed values are all 0 is left out */
    int nmetrics;
} pair_ctx_t;

static int pair_stack(void *ctx, const eng_thread_t *t, const eng_mapped_t *m, const uint64_t *v)
{
    pair_ctx_t *c = ctx;
    int any = !c->metrics;
    for (int k = 0; k < c->nmetrics && !any; k++)
        any = v[c->metrics[k]] != 0;
    if (!any)
        return 0;
    rep_stack_t st = { m, t, v };
    return c->fn(c->ctx, &st);
}

int rep_stacks(ses_t *s, int per_thread_too, const int *metrics, int nmetrics, rep_stack_fn fn,
               void *ctx, tally_err_t *err)
{
    if (per_thread_too) {
        pair_ctx_t c = { fn, ctx, metrics, nmetrics };
        return eng_foreach_thread_stack(s->eng, ENG_KIND_FUNCTION, pair_stack, &c, err);
    }
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
