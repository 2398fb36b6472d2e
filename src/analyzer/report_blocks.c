/*
 * report_blocks.c - the report models of profiled blocks (contract in report_blocks.h).
 *
 * Sections: one process's records; the sums; the history.
 */
#include "analyzer/report_blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/blockstacks.h"
#include "base/grow.h"
#include "base/u64map.h"
#include "experiment/logrec.h"

/* ---- one process's records -------------------------------------------------------------------- */

typedef struct pdefs {
    const char **name, **group; /* by block id, NULL when not declared */
    size_t n;
} pdefs_t;

typedef struct ctx {
    rep_blocks_t *b;
    const exp_process_t *p;
    pdefs_t *d;
    unsigned nq;
    rep_brow_t *rows;
    size_t nrows, cap;
    rep_bpath_t *paths;
    size_t npaths, cap_paths;
    uint64_t first;
    int oom;
} ctx_t;

static const char *def_name(const pdefs_t *d, uint64_t id)
{
    return id < d->n ? d->name[id] : NULL;
}

/* A row of a monitor point (per quantity: excl, incl, instance excl, instance incl: stride 4) or
 * of the whole-run profile (excl, incl: stride 2), after id, calls, subrs. */
static int add_row(ctx_t *c, const uint64_t *x, unsigned stride)
{
    const char *name = def_name(c->d, x[0]);
    if (!name)
        return -1;
    if (GROW(c->rows, c->nrows, c->cap)) {
        c->oom = 1;
        return -1;
    }
    rep_brow_t *r = &c->rows[c->nrows++];
    memset(r, 0, sizeof *r);
    r->name = name;
    r->group = c->d->group[x[0]];
    r->v.calls = x[1];
    r->v.subrs = x[2];
    for (unsigned q = 0; q < c->nq; q++) {
        r->v.excl[q] = x[3 + stride * q];
        r->v.incl[q] = x[4 + stride * q];
        if (stride == 4) {
            r->v.iexcl[q] = x[5 + stride * q];
            r->v.iincl[q] = x[6 + stride * q];
        }
    }
    return 0;
}

static int add_mon_row(void *v, const uint64_t *x) { return add_row(v, x, 4); }
static int add_prof_row(void *v, const uint64_t *x) { return add_row(v, x, 2); }

static int add_path_row(void *v, const uint64_t *x)
{
    ctx_t *c = v;
    const char *name = def_name(c->d, x[1]);
    /* node numbers start at 1 (0 is the root); a parent is always created before its child */
    if (!name || c->npaths + 1 != c->first || x[0] >= c->first)
        return -1;
    if (GROW(c->paths, c->npaths, c->cap_paths)) {
        c->oom = 1;
        return -1;
    }
    rep_bpath_t *r = &c->paths[c->npaths++];
    memset(r, 0, sizeof *r);
    r->parent = (long)x[0] - 1;
    r->depth = r->parent < 0 ? 0 : c->paths[r->parent].depth + 1;
    r->name = name;
    r->v.calls = x[2];
    r->v.subrs = x[3];
    for (unsigned q = 0; q < c->nq; q++) {
        r->v.excl[q] = x[4 + 2 * q];
        r->v.incl[q] = x[5 + 2 * q];
    }
    c->first++;
    return 0;
}

static int note(rep_blocks_t *b, const exp_process_t *p, const exp_record_t *r, const char *what)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s/log line %u: %s record skipped: %s", p->dir, r->line, r->kind,
             what);
    char *s = strdup(buf);
    if (!s || GROW(b->notes, b->nnotes, (size_t){ b->nnotes }) ) {
        free(s);
        return TALLY_ENOMEM;
    }
    b->notes[b->nnotes++] = s;
    return 0;
}

static int by_incl(const void *a, const void *b)
{
    const rep_brow_t *x = a, *y = b;
    if (x->v.incl[0] != y->v.incl[0])
        return x->v.incl[0] < y->v.incl[0] ? 1 : -1;
    return strcmp(x->name, y->name);
}

static rep_bthread_t *thread_of(rep_blocks_t *b, const exp_process_t *p, uint32_t tid,
                                size_t *cap)
{
    for (size_t i = 0; i < b->nthreads; i++)
        if (b->threads[i].p == p && b->threads[i].tid == tid)
            return &b->threads[i];
    if (GROW(b->threads, b->nthreads, *cap))
        return NULL;
    rep_bthread_t *t = &b->threads[b->nthreads++];
    memset(t, 0, sizeof *t);
    t->p = p;
    t->tid = tid;
    return t;
}

/* Orders a thread's paths depth first, children by inclusive time, and re-links parents. */
static int order_paths(rep_bthread_t *t)
{
    size_t n = t->npaths;
    if (!n)
        return 0;
    size_t *order = malloc(n * sizeof *order), *stack = malloc(n * sizeof *stack);
    size_t *kids = calloc(n + 1, sizeof *kids), *start = calloc(n + 2, sizeof *start);
    size_t *pos = malloc(n * sizeof *pos);
    rep_bpath_t *out = malloc(n * sizeof *out);
    int rc = TALLY_ENOMEM;
    if (!order || !stack || !kids || !start || !pos || !out)
        goto done;
    /* children lists: bucket by parent (parent + 1, 0 for the roots) */
    for (size_t i = 0; i < n; i++)
        start[(size_t)(t->paths[i].parent + 1) + 1]++;
    for (size_t i = 1; i <= n + 1; i++)
        start[i] += start[i - 1];
    size_t *fill = kids; /* reused as a cursor per bucket */
    memset(fill, 0, (n + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        size_t bkt = (size_t)(t->paths[i].parent + 1);
        order[start[bkt] + fill[bkt]++] = i;
    }
    for (size_t bkt = 0; bkt <= n; bkt++) { /* children by inclusive, descending (insertion) */
        for (size_t a = start[bkt] + 1; a < start[bkt + 1]; a++) {
            size_t x = order[a], k = a;
            while (k > start[bkt] && t->paths[order[k - 1]].v.incl[0] < t->paths[x].v.incl[0]) {
                order[k] = order[k - 1];
                k--;
            }
            order[k] = x;
        }
    }
    /* depth first without recursion: push children in reverse */
    size_t sp = 0, m = 0;
    for (size_t a = start[1]; a-- > start[0];)
        stack[sp++] = order[a];
    while (sp) {
        size_t i = stack[--sp];
        pos[i] = m;
        out[m] = t->paths[i];
        out[m].parent = t->paths[i].parent < 0 ? -1 : (long)pos[t->paths[i].parent];
        m++;
        for (size_t a = start[i + 2]; a-- > start[i + 1];)
            stack[sp++] = order[a];
    }
    memcpy(t->paths, out, m * sizeof *out);
    t->npaths = m;
    rc = 0;
done:
    free(order), free(stack), free(kids), free(start), free(pos), free(out);
    return rc;
}

static int quantities(rep_blocks_t *b, const exp_process_t *p)
{
    if (b->nq)
        return 0;
    char qn[REP_BQ_MAX][BSTK_QNAME];
    b->nq = bstk_quantities(p->settings.block_metrics.s, qn, REP_BQ_MAX);
    for (unsigned q = 0; q < b->nq; q++) {
        snprintf(b->qbuf[q], sizeof b->qbuf[q], "%s", qn[q]);
        b->qname[q] = b->qbuf[q];
        b->qtime[q] = !strcmp(qn[q], "wall") || !strcmp(qn[q], "cpu");
    }
    return 0;
}

static int one_process(rep_blocks_t *b, const exp_process_t *p, size_t *cap_mons,
                       size_t *cap_threads)
{
    pdefs_t d = { 0 };
    size_t cap = 0;
    int rc = 0;
    quantities(b, p);
    ctx_t c = { .b = b, .p = p, .d = &d, .nq = b->nq };
    for (size_t i = 0; i < p->nrecords && !rc; i++) {
        const exp_record_t *r = &p->records[i];
        if (strcmp(r->kind, EXP_LOG_BLOCK))
            continue;
        uint64_t id = exp_record_u64(r, EXP_KEY_ID, UINT64_MAX);
        const char *name = exp_record_get(r, EXP_KEY_NAME);
        if (id >= 65536 || !name) {
            rc = note(b, p, r, "no id below 65536 or no name");
            continue;
        }
        if (id >= d.n) {
            size_t ncap = cap;
            if (GROW(d.name, id, ncap) || (ncap != cap && !(d.group = realloc(d.group, ncap * sizeof *d.group)))) {
                rc = TALLY_ENOMEM;
                break;
            }
            for (size_t k = cap; k < ncap; k++)
                d.name[k] = NULL, d.group[k] = NULL;
            cap = ncap;
            d.n = id + 1 > d.n ? id + 1 : d.n;
        }
        const char *g = exp_record_get(r, EXP_KEY_GROUP);
        d.name[id] = name;
        d.group[id] = g ? g : "";
    }
    for (size_t i = 0; i < p->nrecords && !rc; i++) {
        const exp_record_t *r = &p->records[i];
        int mon = !strcmp(r->kind, EXP_LOG_CALLSTACK), prof = !strcmp(r->kind, EXP_LOG_BLOCK_PROFILE),
            paths = !strcmp(r->kind, EXP_LOG_BLOCK_PATHS), thr = !strcmp(r->kind, EXP_LOG_BLOCK_THREAD);
        if (!mon && !prof && !paths && !thr)
            continue;
        uint32_t tid = (uint32_t)exp_record_u64(r, EXP_KEY_TID, 0);
        if (thr) {
            rep_bthread_t *t = thread_of(b, p, tid, cap_threads);
            if (!t)
                return TALLY_ENOMEM;
            t->unmatched += exp_record_u64(r, EXP_KEY_UNMATCHED, 0);
            t->lost += exp_record_u64(r, EXP_KEY_LOST, 0);
            continue;
        }
        const char *rows = exp_record_get(r, EXP_KEY_ROWS);
        c.rows = NULL, c.nrows = c.cap = 0;
        if (mon) {
            if (!rows || bstk_parse_rows(rows, 3 + 4 * b->nq, add_mon_row, &c)) {
                free(c.rows);
                rc = c.oom ? TALLY_ENOMEM : note(b, p, r, "malformed rows");
                continue;
            }
            if (GROW(b->mons, b->nmons, *cap_mons)) {
                free(c.rows);
                return TALLY_ENOMEM;
            }
            rep_bmon_t *m = &b->mons[b->nmons++];
            m->p = p;
            m->tid = tid;
            m->n = exp_record_u64(r, EXP_KEY_N, 0);
            uint64_t t = exp_record_u64(r, EXP_KEY_T, 0);
            m->t = p->t_start && t >= p->t_start ? t - p->t_start : 0;
            const char *lab = exp_record_get(r, EXP_KEY_LABEL);
            m->label = lab ? lab : "";
            m->rows = c.rows;
            m->nrows = c.nrows;
            continue;
        }
        rep_bthread_t *t = thread_of(b, p, tid, cap_threads);
        if (!t) {
            free(c.rows);
            return TALLY_ENOMEM;
        }
        if (prof) {
            t->t_end = exp_record_u64(r, EXP_KEY_T, t->t_end);
            c.rows = t->rows, c.nrows = t->nrows, c.cap = t->nrows;
            size_t before = c.nrows;
            int bad = !rows || bstk_parse_rows(rows, 3 + 2 * b->nq, add_prof_row, &c);
            t->rows = c.rows;
            t->nrows = bad ? before : c.nrows;
            if (bad)
                rc = c.oom ? TALLY_ENOMEM : note(b, p, r, "malformed rows");
        } else {
            c.paths = t->paths, c.npaths = t->npaths, c.cap_paths = t->npaths;
            c.first = exp_record_u64(r, EXP_KEY_FIRST, 0);
            size_t before = c.npaths;
            int bad = !rows || bstk_parse_rows(rows, 4 + 2 * b->nq, add_path_row, &c);
            t->paths = c.paths;
            t->npaths = bad ? before : c.npaths;
            if (bad)
                rc = c.oom ? TALLY_ENOMEM : note(b, p, r, "malformed rows or paths out of order");
        }
    }
    free(d.name);
    free(d.group);
    return rc;
}

/* ---- the sums ---------------------------------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    const rep_brow_t *x = *(const rep_brow_t *const *)a, *y = *(const rep_brow_t *const *)b;
    return strcmp(x->name, y->name);
}

/* Sorts each thread's rows and paths, and sums the rows of every thread by name (sorted, then
 * runs merged: a program with 10000 functions in 100 threads stays fast). */
static int sum_threads(rep_blocks_t *b)
{
    size_t all = 0;
    for (size_t i = 0; i < b->nthreads; i++) {
        rep_bthread_t *t = &b->threads[i];
        if (t->nrows > 1) /* a thread with only block-thread or block-paths records has none */
            qsort(t->rows, t->nrows, sizeof *t->rows, by_incl);
        if (order_paths(t))
            return TALLY_ENOMEM;
        all += t->nrows;
    }
    if (!all)
        return 0;
    const rep_brow_t **v = malloc(all * sizeof *v);
    b->total = calloc(all, sizeof *b->total);
    if (!v || !b->total) {
        free(v);
        return TALLY_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < b->nthreads; i++)
        for (size_t j = 0; j < b->threads[i].nrows; j++)
            v[k++] = &b->threads[i].rows[j];
    qsort(v, all, sizeof *v, by_name);
    for (size_t i = 0; i < all; i++) {
        const rep_brow_t *r = v[i];
        if (!b->ntotal || strcmp(b->total[b->ntotal - 1].name, r->name)) {
            b->total[b->ntotal].name = r->name;
            b->total[b->ntotal].group = r->group;
            b->ntotal++;
        }
        rep_bvals_t *t = &b->total[b->ntotal - 1].v;
        t->calls += r->v.calls;
        t->subrs += r->v.subrs;
        for (unsigned q = 0; q < b->nq; q++) {
            t->excl[q] += r->v.excl[q];
            t->incl[q] += r->v.incl[q];
        }
    }
    free(v);
    if (b->ntotal > 1)
        qsort(b->total, b->ntotal, sizeof *b->total, by_incl);
    return 0;
}

int rep_blocks(const ses_t *s, rep_blocks_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    size_t cap_mons = 0, cap_threads = 0;
    int rc = 0;
    for (size_t e = 0; e < s->nexps && !rc; e++)
        for (size_t i = 0; i < s->exps[e]->nprocs && !rc; i++)
            rc = one_process(out, s->exps[e]->procs[i], &cap_mons, &cap_threads);
    if (!rc)
        rc = sum_threads(out);
    if (!out->nq) {
        out->qname[0] = "wall";
        out->qtime[0] = 1;
        out->nq = 1;
    }
    if (rc) {
        rep_blocks_free(out);
        return tally_errf(err, rc, "out of memory reading the profiled blocks");
    }
    return 0;
}

void rep_blocks_free(rep_blocks_t *b)
{
    for (size_t i = 0; i < b->nmons; i++)
        free(b->mons[i].rows);
    for (size_t i = 0; i < b->nthreads; i++) {
        free(b->threads[i].rows);
        free(b->threads[i].paths);
    }
    for (size_t i = 0; i < b->nnotes; i++)
        free(b->notes[i]);
    free(b->mons);
    free(b->threads);
    free(b->total);
    free(b->notes);
    memset(b, 0, sizeof *b);
}

/* ---- the history ------------------------------------------------------------------------------ */

static uint64_t hist_key(const rep_bmon_t *m, const char *name)
{
    uint64_t h = (uint64_t)(uintptr_t)m->p * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)m->tid + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
    h ^= (uint64_t)(uintptr_t)name * 0x94d049bb133111ebull;
    return h >> 1;
}

int rep_blocks_history(const rep_blocks_t *b, const char *block, rep_bhist_t **out, size_t *n,
                       tally_err_t *err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int found = 0;
    u64map_t last = { 0 }; /* (process, thread, block) -> its latest entry */
    /* monitor points are in log order per process, so per thread in time order; a block's name
     * is one string per process (its `block` record's), so pointers tell blocks apart */
    for (size_t i = 0; i < b->nmons; i++) {
        const rep_bmon_t *m = &b->mons[i];
        for (size_t k = 0; k < m->nrows; k++) {
            const rep_brow_t *r = &m->rows[k];
            if (block && strcmp(r->name, block))
                continue;
            int dup = 0; /* a recursive block: its first (outermost) row */
            for (size_t j = 0; j < k && !dup; j++)
                dup = m->rows[j].name == r->name;
            if (dup)
                continue;
            found = 1;
            int had;
            uint32_t *slot = NULL;
            if (GROW(*out, *n, cap) || !(slot = u64map_slot(&last, hist_key(m, r->name), &had))) {
                free(*out);
                *out = NULL;
                *n = 0;
                u64map_free(&last);
                return tally_errf(err, TALLY_ENOMEM, "out of memory");
            }
            const rep_bhist_t *prev = NULL;
            if (had) {
                prev = &(*out)[*slot];
                if (prev->mon->p != m->p || prev->mon->tid != m->tid || prev->row->name != r->name)
                    prev = NULL; /* another block's key collided: search */
            }
            if (had && !prev)
                for (size_t j = *n; j-- > 0;)
                    if ((*out)[j].mon->p == m->p && (*out)[j].mon->tid == m->tid &&
                        (*out)[j].row->name == r->name) {
                        prev = &(*out)[j];
                        break;
                    }
            rep_bhist_t *h = &(*out)[(*n)++];
            memset(h, 0, sizeof *h);
            h->mon = m;
            h->row = r;
            *slot = (uint32_t)(*n - 1);
            h->dcalls = r->v.calls - (prev ? prev->row->v.calls : 0);
            for (unsigned q = 0; q < b->nq; q++) {
                h->dexcl[q] = (int64_t)(r->v.excl[q] - (prev ? prev->row->v.excl[q] : 0));
                h->dincl[q] = (int64_t)(r->v.incl[q] - (prev ? prev->row->v.incl[q] : 0));
            }
        }
    }
    u64map_free(&last);
    if (block && !found) {
        int known = 0;
        for (size_t i = 0; i < b->ntotal && !known; i++)
            known = !strcmp(b->total[i].name, block);
        return tally_errf(err, TALLY_ENOTFOUND,
                          known ? "block '%s' is on no callstack taken at a monitor point"
                                : "no profiled block is called '%s' (see -blocks)",
                          block);
    }
    return 0;
}
