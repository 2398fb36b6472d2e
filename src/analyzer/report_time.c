/*
 * report_time.c - the models over time: per-sample metric totals, samples with their resource
 * deltas, the timeline. See report.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/report.h"

/* ---- per-sample metric totals ---------------------------------------------------------------- */

typedef struct bucket_ctx {
    eng_t *eng;
    rep_buckets_t *b;
} bucket_ctx_t;

static int bucket_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf,
                        uint32_t thread)
{
    bucket_ctx_t *c = ctx;
    (void)leaf;
    const eng_thread_t *t = eng_thread(c->eng, thread);
    if (t->exp != 0)
        return 0; /* another experiment is another run, on another time line */
    /* every process of the run (descendants too: a build's compilers) in the root's sample
     * periods, by time: the processes share the monotonic clock */
    uint32_t k = eng_sample_of(c->eng, 0, 0, ev->t);
    if (k >= c->b->n)
        k = (uint32_t)c->b->n - 1;
    size_t nm = (size_t)c->b->nmetrics;
    for (size_t m = 0; m < nm; m++)
        c->b->v[(size_t)k * nm + m] += v[m];
    return 0;
}

int rep_sample_totals(ses_t *s, rep_buckets_t *b, tally_err_t *err)
{
    b->n = 1;
    for (size_t x = 0; x < s->nexps; x++)
        for (size_t i = 0; i < s->exps[x]->nprocs; i++)
            if (s->exps[x]->procs[i]->nsamples + 1 > b->n)
                b->n = s->exps[x]->procs[i]->nsamples + 1;
    b->nmetrics = eng_nmetrics(s->eng);
    b->v = calloc(b->n * (size_t)b->nmetrics, sizeof *b->v);
    if (!b->v)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    bucket_ctx_t c = { s->eng, b };
    int rc = eng_foreach_event(s->eng, bucket_event, &c, err);
    if (rc) {
        rep_buckets_free(b);
        return rc;
    }
    return 0;
}

void rep_buckets_free(rep_buckets_t *b)
{
    free(b->v);
    b->v = NULL;
    b->n = 0;
}

/* ---- samples --------------------------------------------------------------------------------- */

static uint64_t delta(uint64_t a, uint64_t b) { return b > a ? b - a : 0; }

void rep_sample(ses_t *s, const rep_buckets_t *b, const exp_process_t *p, int is_root, size_t k,
                rep_sample_t *o)
{
    const exp_sample_t *a = &p->samples[k], *e = k + 1 < p->nsamples ? &p->samples[k + 1] : NULL;
    uint64_t t0 = eng_run_start(s->eng);
    memset(o, 0, sizeof *o);
    o->p = p;
    o->k = k;
    o->process = *p->name ? p->name : "(root)";
    o->reason = a->reason;
    o->label = a->label;
    o->start = a->t > t0 ? (double)(a->t - t0) * 1e-9 : 0.0;
    o->has_next = e != NULL;
    if (e) {
        o->length = (double)delta(a->t, e->t) * 1e-9;
        o->utime = (double)delta(a->utime, e->utime) * 1e-9;
        o->stime = (double)delta(a->stime, e->stime) * 1e-9;
        o->minflt = delta(a->minflt, e->minflt);
        o->majflt = delta(a->majflt, e->majflt);
        o->inblock = delta(a->inblock, e->inblock);
        o->oublock = delta(a->oublock, e->oublock);
        o->nvcsw = delta(a->nvcsw, e->nvcsw);
        o->nivcsw = delta(a->nivcsw, e->nivcsw);
        o->rchar = delta(a->rchar, e->rchar);
        o->wchar = delta(a->wchar, e->wchar);
    }
    o->rss_kb = e ? e->rss : a->rss;
    o->maxrss_kb = e ? e->maxrss : a->maxrss;
    /* The kernel updates the peak (getrusage) lazily, the current size (statm) not: a peak below
     * the size at the same moment is the lag, and the size is the peak so far. */
    if (o->maxrss_kb < o->rss_kb)
        o->maxrss_kb = o->rss_kb;
    o->v = is_root && b && k + 1 < b->n ? b->v + (k + 1) * (size_t)b->nmetrics : NULL;
}

/* ---- timeline -------------------------------------------------------------------------------- */

#define TL_STATES 4 /* wait, lock, I/O, sleep */
#define TL_SLOTS 4  /* functions tracked per cell (the hottest wins; a simple, bounded tally) */

typedef struct tl_ctx {
    uint64_t t0, t1;
    size_t nthreads;
    uint64_t *cpu;   /* [thread][col][slot]: CPU time of the hottest candidates */
    uint32_t *fn;    /* [thread][col][slot] function of each slot */
    uint64_t *state; /* [thread][col][TL_STATES] */
    /* runtime states: [thread][col][REP_TL_RSTATES] the time in each metric of rsm[] */
    uint64_t *rs;
    int nmetrics, rsm[REP_TL_RSTATES];
    size_t nrsm;
} tl_ctx_t;

/* A clock event in a runtime state adds its time to exactly one declared metric (the engine's
 * contribute_rstate): which one, as an index into tl->rsm (added when new), or -1. */
static int tl_rstate(tl_ctx_t *tl, const uint64_t *v)
{
    for (int m = ENG_NBUILTIN; m < tl->nmetrics; m++) {
        if (!v[m])
            continue;
        for (size_t i = 0; i < tl->nrsm; i++)
            if (tl->rsm[i] == m)
                return (int)i;
        if (tl->nrsm == REP_TL_RSTATES)
            return -1;
        tl->rsm[tl->nrsm] = m;
        return (int)tl->nrsm++;
    }
    return -1;
}

static int timeline_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf,
                          uint32_t thread)
{
    tl_ctx_t *tl = ctx;
    if (ev->t < tl->t0 || thread >= tl->nthreads)
        return 0;
    size_t col = (size_t)((double)(ev->t - tl->t0) / (double)(tl->t1 - tl->t0 + 1) * REP_TL_COLS);
    if (col >= REP_TL_COLS)
        col = REP_TL_COLS - 1;
    size_t cell = (size_t)thread * REP_TL_COLS + col;
    if (v[ENG_M_TOTALCPU]) {
        uint64_t *c = tl->cpu + cell * TL_SLOTS;
        uint32_t *f = tl->fn + cell * TL_SLOTS;
        size_t s, weakest = 0;
        for (s = 0; s < TL_SLOTS; s++) {
            if (c[s] && f[s] == leaf)
                break;
            if (c[s] < c[weakest])
                weakest = s;
        }
        if (s == TL_SLOTS) { /* replace the weakest slot (Misra-Gries style) */
            s = weakest;
            f[s] = leaf;
        }
        c[s] += v[ENG_M_TOTALCPU];
    }
    static const int sm[TL_STATES] = { ENG_M_WAIT, ENG_M_LOCK, ENG_M_IO, ENG_M_SLEEP };
    for (int i = 0; i < TL_STATES; i++)
        tl->state[cell * TL_STATES + i] += v[sm[i]];
    if (ev->type == EXP_REC_CLOCK && ev->rstate != EXP_RSTATE_NONE) {
        int r = tl_rstate(tl, v);
        if (r >= 0)
            tl->rs[cell * REP_TL_RSTATES + (size_t)r] += ev->weight;
    }
    return 0;
}

int rep_timeline(ses_t *s, int namefmt, rep_timeline_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    const eng_table_t *t = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    tl_ctx_t tl = { .nthreads = eng_nthreads(s->eng), .nmetrics = eng_nmetrics(s->eng) };
    rep_run_span(s, &tl.t0, &tl.t1);
    if (tl.t1 <= tl.t0 || !tl.nthreads) {
        out->empty = 1;
        return 0;
    }
    out->span = (double)(tl.t1 - tl.t0) * 1e-9;
    out->cell_ns = (double)(tl.t1 - tl.t0) / REP_TL_COLS;
    size_t cells = tl.nthreads * REP_TL_COLS;
    size_t nf = eng_nobjects(s->eng, ENG_KIND_FUNCTION);
    uint32_t *wins = NULL, *winner = NULL, *order = NULL;
    char *glyph = NULL, *letter = NULL;
    int rc = 0;
    tl.cpu = calloc(cells * TL_SLOTS, sizeof *tl.cpu);
    tl.fn = calloc(cells * TL_SLOTS, sizeof *tl.fn);
    tl.state = calloc(cells * TL_STATES, sizeof *tl.state);
    tl.rs = calloc(cells * REP_TL_RSTATES, sizeof *tl.rs);
    if (!tl.cpu || !tl.fn || !tl.state || !tl.rs)
        goto nomem;
    if ((rc = eng_foreach_event(s->eng, timeline_event, &tl, err)))
        goto out;
    if ((rc = rep_names_build(s->eng, t, namefmt, &out->names, err)))
        goto out;
    /* legend: the functions that win a cell, marked by how many cells they win */
    wins = calloc(nf + 1, sizeof *wins);
    winner = malloc(cells * sizeof *winner);
    glyph = malloc(cells);
    letter = calloc(nf + 1, 1);
    order = malloc((nf + 1) * sizeof *order);
    out->rows = calloc(tl.nthreads, sizeof *out->rows);
    if (!wins || !winner || !glyph || !letter || !order || !out->rows)
        goto nomem;
    for (size_t c = 0; c < cells; c++) {
        uint64_t *cp = tl.cpu + c * TL_SLOTS, best = 0, cpu = 0;
        winner[c] = UINT32_MAX;
        for (int k = 0; k < TL_SLOTS; k++) {
            cpu += cp[k];
            if (cp[k] > best) {
                best = cp[k];
                winner[c] = tl.fn[c * TL_SLOTS + k];
            }
        }
        uint64_t *st = tl.state + c * TL_STATES, off = 0;
        int top = 0;
        for (int i = 0; i < TL_STATES; i++) {
            off += st[i];
            if (st[i] > st[top])
                top = i;
        }
        /* Waiting for a CPU is wanting to run what it runs: a thread that ran in the cell and was
         * otherwise mostly runnable shows its function (under load it may wait more than it
         * runs); '^' is for a cell in which it waited for a CPU and did not run at all. */
        glyph[c] = ' ';
        if (cpu > 0 && cpu + st[0] >= off - st[0] && winner[c] != UINT32_MAX) {
            wins[winner[c]]++;
            glyph[c] = 0; /* a function mark, assigned below */
        } else if (off > 0 && (double)off > 0.05 * out->cell_ns) {
            glyph[c] = "^=%."[top];
            winner[c] = UINT32_MAX;
        } else {
            winner[c] = UINT32_MAX;
        }
    }
    size_t nl = 0;
    for (size_t f = 0; f < nf; f++)
        if (wins[f])
            order[nl++] = (uint32_t)f;
    for (size_t i = 0; i < nl; i++) /* most cells first */
        for (size_t j = i + 1; j < nl; j++)
            if (wins[order[j]] > wins[order[i]]) {
                uint32_t tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
            }
    /* marks no function name can be mistaken for (a name never is one digit or punctuation),
     * none of the states' (^ = % .), nor the row's border (|) */
    static const char letters[] = "123456789#@&$+~!?:;<>";
    for (size_t i = 0; i < nl; i++)
        letter[order[i]] = i < sizeof letters - 1 ? letters[i] : '*';
    if (!(out->legend = calloc(nl + 1, sizeof *out->legend)))
        goto nomem;
    for (size_t i = 0; i < nl; i++)
        out->legend[i] = (rep_tl_legend_t){
            letter[order[i]], order[i] < out->names.n && out->names.name[order[i]]
                                  ? out->names.name[order[i]]
                                  : eng_object_name(s->eng, ENG_KIND_FUNCTION, order[i], namefmt)
        };
    out->nlegend = nl;
    memcpy(out->rstates, tl.rsm, sizeof tl.rsm);
    out->nrstates = tl.nrsm;
    for (size_t th = 0; th < tl.nthreads; th++) {
        rep_tl_row_t *row = &out->rows[out->nrows];
        int any = 0;
        for (size_t col = 0; col < REP_TL_COLS; col++) {
            size_t c = th * REP_TL_COLS + col;
            row->cells[col] = glyph[c] ? glyph[c] : letter[winner[c]];
            any |= row->cells[col] != ' ';
            const uint64_t *rs = tl.rs + c * REP_TL_RSTATES;
            size_t top = 0;
            for (size_t i = 1; i < tl.nrsm; i++)
                if (rs[i] > rs[top])
                    top = i;
            row->rstates[col] = tl.nrsm && rs[top] ? (char)('1' + top) : ' ';
            row->has_rstates |= row->rstates[col] != ' ';
        }
        row->cells[REP_TL_COLS] = 0;
        row->rstates[REP_TL_COLS] = 0;
        any |= row->has_rstates;
        if (any) {
            row->t = eng_thread(s->eng, th);
            out->nrows++;
        }
    }
    goto out;
nomem:
    rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
out:
    free(wins);
    free(winner);
    free(glyph);
    free(letter);
    free(order);
    free(tl.cpu);
    free(tl.fn);
    free(tl.state);
    free(tl.rs);
    if (rc)
        rep_timeline_free(out);
    return rc;
}

void rep_timeline_free(rep_timeline_t *t)
{
    free(t->rows);
    free(t->legend);
    rep_names_free(&t->names);
    memset(t, 0, sizeof *t);
}
