/*
 * report_mpi.c - report models of MPI jobs (report_mpi.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/report.h"
#include "analyzer/report_mpi.h"
#include "base/grow.h"
#include "base/satadd.h"
#include "experiment/logrec.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    sat_add_to(&a, b);
    return a;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int rep_mpi_rank_numbers(ses_t *s, uint64_t **ranks, size_t *n, tally_err_t *err)
{
    size_t cap = 0;
    *ranks = NULL;
    *n = 0;
    for (size_t e = 0; e < s->nexps; e++)
        for (size_t i = 0; i < s->exps[e]->nprocs; i++)
            if (s->exps[e]->procs[i]->mpi_rank1) {
                if (GROW(*ranks, *n, cap)) {
                    free(*ranks);
                    *ranks = NULL;
                    *n = 0;
                    return tally_errf(err, TALLY_ENOMEM, "out of memory");
                }
                (*ranks)[(*n)++] = s->exps[e]->procs[i]->mpi_rank1 - 1;
            }
    if (*n)
        qsort(*ranks, *n, sizeof **ranks, cmp_u64);
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (!k || (*ranks)[k - 1] != (*ranks)[i])
            (*ranks)[k++] = (*ranks)[i];
    *n = k;
    return 0;
}

/* The index of rank in ranks[n] (sorted), or n. */
static size_t rank_index(const uint64_t *ranks, size_t n, uint64_t rank)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ranks[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ranks[lo] == rank ? lo : n;
}

static int no_ranks(tally_err_t *err)
{
    return tally_errf(err, TALLY_EUSAGE, "no MPI ranks in the experiment: record the job with "
                      "'tally collect -M on mpirun ...' or 'mpirun ... tally collect -M on ...'");
}

int rep_mpi_select_ranks(ses_t *s, const char *list, tally_err_t *err)
{
    uint64_t *ranks;
    size_t nr;
    int rc = rep_mpi_rank_numbers(s, &ranks, &nr, err);
    if (rc)
        return rc;
    if (!nr) {
        free(ranks);
        return no_ranks(err);
    }
    if (!strcmp(list, "all")) {
        free(ranks);
        return eng_select_threads(s->eng, "all", err);
    }
    uint8_t *want = calloc(nr, 1);
    if (!want) {
        free(ranks);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    const char *p = list;
    rc = 0;
    while (!rc && *p) {
        char *end;
        errno = 0;
        unsigned long long lo = strtoull(p, &end, 10), hi = lo;
        if (end == p || errno || *p == '-') {
            rc = -1;
            break;
        }
        p = end;
        if (*p == '-') {
            const char *q = p + 1;
            hi = strtoull(q, &end, 10);
            if (end == q || errno || *q == '-' || hi < lo) {
                rc = -1;
                break;
            }
            p = end;
        }
        size_t found = 0;
        for (size_t i = 0; i < nr; i++)
            if (ranks[i] >= lo && ranks[i] <= hi) {
                want[i] = 1;
                found++;
            }
        if (!found) {
            rc = tally_errf(err, TALLY_EUSAGE, "rank selection '%s': the job has no rank%s "
                            "%llu%s%.0llu; its ranks are %llu to %llu (see -rank_list)", list,
                            lo == hi ? "" : "s", lo, lo == hi ? "" : " to ", lo == hi ? 0 : hi,
                            (unsigned long long)ranks[0], (unsigned long long)ranks[nr - 1]);
            break;
        }
        if (*p == ',')
            p++;
        else if (*p)
            rc = -1;
    }
    if (rc == -1)
        rc = tally_errf(err, TALLY_EUSAGE, "bad rank selection '%s': use all, a rank, or a list "
                        "such as 0,2-5", list);
    /* the threads of the ranks wanted, as a thread selection */
    char *sel = NULL;
    size_t len = 0, cap = 0;
    size_t nt = eng_nthreads(s->eng);
    for (size_t t = 0; !rc && t < nt; t++) {
        const eng_thread_t *th = eng_thread(s->eng, t);
        uint64_t r1 = exp_mpi_rank_of(s->exps[th->exp], th->proc);
        if (!r1 || !want[rank_index(ranks, nr, r1 - 1)])
            continue;
        char num[24];
        int k = snprintf(num, sizeof num, "%s%u", len ? "," : "", th->number);
        while (len + (size_t)k + 1 > cap) {
            cap = cap ? 2 * cap : 256;
            char *g = realloc(sel, cap);
            if (!g) {
                rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
                break;
            }
            sel = g;
        }
        if (!rc) {
            memcpy(sel + len, num, (size_t)k + 1);
            len += (size_t)k;
        }
    }
    if (!rc && !len)
        rc = tally_errf(err, TALLY_EUSAGE, "rank selection '%s': those ranks recorded no "
                        "threads", list);
    if (!rc)
        rc = eng_select_threads(s->eng, sel, err);
    free(sel);
    free(want);
    free(ranks);
    return rc;
}

int rep_mpi_ranks(ses_t *s, rep_ranks_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    uint64_t *ranks;
    size_t nr;
    int rc = rep_mpi_rank_numbers(s, &ranks, &nr, err);
    if (rc)
        return rc;
    if (!nr) {
        free(ranks);
        return no_ranks(err);
    }
    if ((rc = eng_aggregate(s->eng, err))) {
        free(ranks);
        return rc;
    }
    int nm = eng_nmetrics(s->eng);
    out->ranks = calloc(nr, sizeof *out->ranks);
    out->values = calloc(nr * (size_t)nm, sizeof *out->values);
    if (!out->ranks || !out->values) {
        free(ranks);
        rep_mpi_ranks_free(out);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    out->n = nr;
    for (size_t i = 0; i < nr; i++) {
        out->ranks[i].rank = ranks[i];
        out->ranks[i].value = out->values + i * (size_t)nm;
        out->ranks[i].host = "";
    }
    for (size_t e = 0; e < s->nexps; e++)
        for (size_t i = 0; i < s->exps[e]->nprocs; i++) {
            const exp_process_t *p = s->exps[e]->procs[i];
            uint64_t r1 = exp_mpi_rank_of(s->exps[e], (uint32_t)i);
            if (!r1)
                continue;
            rep_rank_t *r = &out->ranks[rank_index(ranks, nr, r1 - 1)];
            if (!r->nprocs++ && p->host)
                r->host = p->host;
            r->dropped += p->st_dropped_busy + p->st_dropped_disk + p->st_dropped_heap +
                          p->st_dropped_io + p->st_dropped_sync + p->st_dropped_traced +
                          p->st_dropped_api;
        }
    size_t nt = eng_nthreads(s->eng);
    for (size_t t = 0; t < nt; t++) {
        const eng_thread_t *th = eng_thread(s->eng, t);
        uint64_t r1 = exp_mpi_rank_of(s->exps[th->exp], th->proc);
        if (!r1)
            continue;
        size_t k = rank_index(ranks, nr, r1 - 1);
        rep_rank_t *r = &out->ranks[k];
        r->nthreads++;
        uint64_t *v = out->values + k * (size_t)nm;
        for (int m = 0; th->value && eng_thread_selected(s->eng, t) && m < nm; m++)
            v[m] = sat_add(v[m], th->value[m]);
    }
    free(ranks);
    return 0;
}

void rep_mpi_ranks_free(rep_ranks_t *r)
{
    free(r->ranks);
    free(r->values);
    memset(r, 0, sizeof *r);
}

/* ---- imbalance ---------------------------------------------------------------------------- */

typedef struct imb_key {
    uint64_t a, b; /* function: (fn, 0); call site: (MPI function, the caller's pc) */
    uint32_t exp, proc, caller_fn; /* where the call site was first seen */
    uint64_t caller_pc;
    uint64_t *by_rank; /* [nranks] */
    uint64_t *late_by_rank; /* [nranks] or NULL: wait of the others this rank caused here */
} imb_key_t;

typedef struct imb_ctx {
    ses_t *s;
    int metric, callsites;
    const int *mpi_metrics;
    int nmpi;
    uint64_t *ranks;
    size_t nranks;
    imb_key_t *keys;
    size_t nkeys, cap;
    size_t *slot; /* open addressing over keys: index + 1, 0 empty */
    size_t nslot;
    uint32_t *stamp; /* per function: the last stack that counted it (inclusive once) */
    size_t nstamp;
    uint32_t serial;
} imb_ctx_t;

static size_t key_hash(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;
    return (size_t)(h ^ h >> 31);
}

static imb_key_t *key_get(imb_ctx_t *c, uint64_t a, uint64_t b)
{
    if ((c->nkeys + 1) * 2 > c->nslot) {
        size_t ns = c->nslot ? 2 * c->nslot : 1024;
        size_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return NULL;
        for (size_t i = 0; i < c->nkeys; i++) {
            size_t h = key_hash(c->keys[i].a, c->keys[i].b) & (ns - 1);
            while (sl[h])
                h = (h + 1) & (ns - 1);
            sl[h] = i + 1;
        }
        free(c->slot);
        c->slot = sl;
        c->nslot = ns;
    }
    size_t h = key_hash(a, b) & (c->nslot - 1);
    while (c->slot[h]) {
        imb_key_t *k = &c->keys[c->slot[h] - 1];
        if (k->a == a && k->b == b)
            return k;
        h = (h + 1) & (c->nslot - 1);
    }
    if (GROW(c->keys, c->nkeys, c->cap))
        return NULL;
    imb_key_t *k = &c->keys[c->nkeys];
    memset(k, 0, sizeof *k);
    k->a = a;
    k->b = b;
    if (!(k->by_rank = calloc(c->nranks, sizeof *k->by_rank)))
        return NULL;
    c->slot[h] = ++c->nkeys;
    return k;
}

static int imb_stack(void *ctx, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                     const uint32_t *fns, uint32_t n, const uint64_t *v)
{
    imb_ctx_t *c = ctx;
    if (!v[c->metric] || !n)
        return 0;
    uint64_t r1 = exp_mpi_rank_of(c->s->exps[exp], proc);
    if (!r1)
        return 0;
    size_t ri = rank_index(c->ranks, c->nranks, r1 - 1);
    if (ri == c->nranks)
        return 0;
    if (c->callsites) {
        int is_mpi = 0;
        for (int i = 0; i < c->nmpi && !is_mpi; i++)
            is_mpi = v[c->mpi_metrics[i]] != 0;
        if (!is_mpi || n < 2)
            return 0;
        /* the call site by (caller function, offset): addresses differ between processes */
        rep_frame_t fr;
        rep_frames(c->s, 0, exp, proc, pcs + 1, fns + 1, 1, &fr);
        imb_key_t *k = key_get(c, fns[0], (uint64_t)fns[1] << 32 ^ (fr.offset & 0xffffffffu));
        if (!k)
            return TALLY_ENOMEM;
        if (!k->caller_pc) {
            k->exp = exp;
            k->proc = proc;
            k->caller_fn = fns[1];
            k->caller_pc = pcs[1];
        }
        k->by_rank[ri] = sat_add(k->by_rank[ri], v[c->metric]);
        return 0;
    }
    c->serial++;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t f = fns[i];
        if (f >= c->nstamp) {
            size_t ns = c->nstamp ? c->nstamp : 1024;
            while (ns <= f)
                ns *= 2;
            uint32_t *st = realloc(c->stamp, ns * sizeof *st);
            if (!st)
                return TALLY_ENOMEM;
            memset(st + c->nstamp, 0, (ns - c->nstamp) * sizeof *st);
            c->stamp = st;
            c->nstamp = ns;
        }
        if (c->stamp[f] == c->serial)
            continue; /* recursion: once per stack */
        c->stamp[f] = c->serial;
        imb_key_t *k = key_get(c, f, 0);
        if (!k)
            return TALLY_ENOMEM;
        k->by_rank[ri] = sat_add(k->by_rank[ri], v[c->metric]);
    }
    return 0;
}

/* ---- late arrival: the ranks' wait at a world collective charged to the rank that came last --
 * The wrappers record the barrier and the all-to-all collectives over MPI_COMM_WORLD as kind
 * mpi_sync (wrap.h): the n-th such record of every rank is the same collective (MPI orders a
 * communicator's collectives alike on all its ranks). One scan of the events keeps per
 * collective (not per rank) the latest entry (end - mpitime), the sum of the entries, how many
 * ranks were seen, the function, and the last rank's stack; a collective all ranks took part in
 * then charges n x latest - sum (each rank's wait for the last) to the last rank's call site.
 * Memory: 40 bytes a world collective of one rank, never ranks x calls. The entries are on one
 * clock: ranks of one host (CLOCK_MONOTONIC); ranks on several hosts differ by their clocks'
 * offsets. A rank whose mpi_sync records come from several threads is taken in scan order. */

typedef struct late_inst {
    uint64_t max_enter, sum_enter;
    uint32_t n, fn;           /* ranks seen; the leaf function (UINT32_MAX - 1: they differ) */
    uint32_t last_ri, last_exp, last_stack, pad;
} late_inst_t;

typedef struct late_ctx {
    ses_t *s;
    int mtime;
    uint64_t *ranks;
    size_t nranks;
    uint64_t *seq;  /* [nranks]: mpi_sync records seen */
    late_inst_t *inst;
    size_t ninst, cap;
    uint32_t cache_exp, cache_proc;
    int64_t cache_kind; /* the mpi_sync kind id of (cache_exp, cache_proc); -1 none, -2 unset */
} late_ctx_t;

static int64_t sync_kind_of(late_ctx_t *c, uint32_t exp, uint32_t proc)
{
    if (c->cache_kind != -2 && c->cache_exp == exp && c->cache_proc == proc)
        return c->cache_kind;
    const exp_experiment_t *e = c->s->exps[exp];
    int64_t k = -1;
    if (proc < e->nprocs)
        for (size_t i = 0; i < e->procs[proc]->nkinds && k < 0; i++)
            if (!strcmp(e->procs[proc]->kinds[i].name, "mpi_sync"))
                k = e->procs[proc]->kinds[i].id;
    c->cache_exp = exp;
    c->cache_proc = proc;
    c->cache_kind = k;
    return k;
}

static int late_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf_fn,
                      uint32_t thread_index)
{
    late_ctx_t *c = ctx;
    if (ev->type != EXP_REC_TRACE)
        return 0;
    const eng_thread_t *th = eng_thread(c->s->eng, thread_index);
    int64_t k = sync_kind_of(c, th->exp, ev->proc);
    if (k < 0 || ev->call != (uint64_t)k)
        return 0;
    uint64_t r1 = exp_mpi_rank_of(c->s->exps[th->exp], th->proc);
    size_t ri = r1 ? rank_index(c->ranks, c->nranks, r1 - 1) : c->nranks;
    if (ri == c->nranks)
        return 0;
    uint64_t q = c->seq[ri]++;
    if (q >= c->ninst) {
        while (c->ninst <= q) {
            if (GROW(c->inst, c->ninst, c->cap))
                return TALLY_ENOMEM;
            memset(&c->inst[c->ninst], 0, sizeof *c->inst);
            c->ninst++;
        }
    }
    late_inst_t *in = &c->inst[q];
    uint64_t enter = ev->t > v[c->mtime] ? ev->t - v[c->mtime] : 0;
    if (!in->n) {
        in->fn = leaf_fn;
    } else if (in->fn != leaf_fn) {
        in->fn = UINT32_MAX - 1;
    }
    if (!in->n || enter > in->max_enter) {
        in->max_enter = enter;
        in->last_ri = (uint32_t)ri;
        in->last_exp = th->exp;
        in->last_stack = ev->stack;
    }
    in->sum_enter += enter;
    in->n++;
    return 0;
}

/* Charges each complete world collective's wait to the last rank's call site in c (the keys
 * of -mpi_callsites); *matched and *skipped count the collectives. */
static int late_charge(imb_ctx_t *ic, late_ctx_t *c, uint64_t *matched, uint64_t *skipped,
                       tally_err_t *err)
{
    exp_stacks_t *st = NULL;
    uint32_t st_exp = UINT32_MAX;
    for (size_t i = 0; i < c->ninst; i++) {
        late_inst_t *in = &c->inst[i];
        if (in->n != c->nranks || in->fn == UINT32_MAX - 1 || in->last_stack == EXP_NO_STACK) {
            ++*skipped;
            continue;
        }
        if (in->last_exp != st_exp) {
            st = eng_stacks(c->s->eng, in->last_exp);
            st_exp = in->last_exp;
        }
        uint32_t npc = 0, nfn = 0, flags = 0, proc = 0;
        const uint64_t *pcs = st ? exp_stacks_get(st, in->last_stack, &npc, &flags, &proc) : NULL;
        const uint32_t *fns = eng_stack_functions(c->s->eng, in->last_exp, in->last_stack, &nfn,
                                                  err);
        if (!fns)
            return TALLY_ENOMEM;
        if (!pcs || npc < 2 || nfn < 2) {
            ++*skipped;
            continue;
        }
        rep_frame_t fr;
        rep_frames(c->s, 0, in->last_exp, proc, pcs + 1, fns + 1, 1, &fr);
        imb_key_t *k = key_get(ic, fns[0], (uint64_t)fns[1] << 32 ^ (fr.offset & 0xffffffffu));
        if (!k)
            return TALLY_ENOMEM;
        if (!k->caller_pc) {
            k->exp = in->last_exp;
            k->proc = proc;
            k->caller_fn = fns[1];
            k->caller_pc = pcs[1];
        }
        if (!k->late_by_rank && !(k->late_by_rank = calloc(c->nranks, sizeof *k->late_by_rank)))
            return TALLY_ENOMEM;
        uint64_t caused = in->n * in->max_enter - in->sum_enter;
        k->late_by_rank[in->last_ri] = sat_add(k->late_by_rank[in->last_ri], caused);
        ++*matched;
    }
    return 0;
}

static int late_scan(imb_ctx_t *ic, rep_imb_t *out, tally_err_t *err)
{
    late_ctx_t c = { .s = ic->s, .mtime = eng_metric_find(ic->s->eng, "mpitime"),
                     .ranks = ic->ranks, .nranks = ic->nranks, .cache_kind = -2 };
    if (c.mtime < 0)
        return 0;
    if (!(c.seq = calloc(c.nranks, sizeof *c.seq)))
        return TALLY_ENOMEM;
    int rc = eng_foreach_event(ic->s->eng, late_event, &c, err);
    if (!rc)
        rc = late_charge(ic, &c, &out->late_matched, &out->late_skipped, err);
    free(c.seq);
    free(c.inst);
    return rc;
}

static int cmp_rows(const void *a, const void *b)
{
    const rep_imb_row_t *x = a, *y = b;
    if (x->max != y->max)
        return x->max < y->max ? 1 : -1;
    return strcmp(x->name, y->name);
}

int rep_mpi_imbalance(ses_t *s, int metric, int callsites, rep_imb_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->metric = metric;
    imb_ctx_t c = { .s = s, .metric = metric, .callsites = callsites };
    int rc = rep_mpi_rank_numbers(s, &c.ranks, &c.nranks, err);
    if (rc)
        return rc;
    if (!c.nranks) {
        free(c.ranks);
        return no_ranks(err);
    }
    static const char *const names[] = { "mpitime", "mpisends", "mpireceives", "mpiother" };
    int mm[4], nmm = 0;
    for (int i = 0; i < 4; i++)
        if ((mm[nmm] = eng_metric_find(s->eng, names[i])) >= 0)
            nmm++;
    c.mpi_metrics = mm;
    c.nmpi = nmm;
    if (callsites && !nmm) {
        free(c.ranks);
        return tally_errf(err, TALLY_EUSAGE, "no MPI calls were recorded (collect with -M on)");
    }
    rc = eng_foreach_stack(s->eng, imb_stack, &c, err);
    if (!rc && callsites)
        rc = late_scan(&c, out, err);
    if (rc == TALLY_ENOMEM)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
    if (!rc && !(out->rows = calloc(c.nkeys + 1, sizeof *out->rows)))
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < c.nkeys; i++) {
        imb_key_t *k = &c.keys[i];
        rep_imb_row_t *r = &out->rows[out->n];
        r->min = UINT64_MAX;
        for (size_t j = 0; j < c.nranks; j++) {
            uint64_t x = k->by_rank[j];
            r->sum = sat_add(r->sum, x);
            if (j == 0 || x > r->max) {
                r->max = x;
                r->max_rank = c.ranks[j];
            }
            if (x < r->min) {
                r->min = x;
                r->min_rank = c.ranks[j];
            }
        }
        r->mean = (double)r->sum / (double)c.nranks;
        for (size_t j = 0; k->late_by_rank && j < c.nranks; j++) {
            r->late = sat_add(r->late, k->late_by_rank[j]);
            if (k->late_by_rank[j] > r->late_max) {
                r->late_max = k->late_by_rank[j];
                r->late_rank = c.ranks[j];
            }
        }
        const char *fname = eng_object_name(s->eng, ENG_KIND_FUNCTION, (uint32_t)k->a, 0);
        char *nm = NULL;
        if (callsites) {
            rep_frame_t fr;
            uint64_t pc = k->caller_pc;
            uint32_t fn = k->caller_fn;
            rep_frames(s, 0, k->exp, k->proc, &pc, &fn, 1, &fr);
            if (asprintf(&nm, "%s from %s + 0x%llx", fname, fr.name,
                         (unsigned long long)fr.offset) < 0)
                nm = NULL;
        } else {
            nm = strdup(fname);
        }
        if (!nm) {
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
            break;
        }
        r->name = nm;
        out->n++;
    }
    for (size_t i = 0; i < c.nkeys; i++) {
        free(c.keys[i].by_rank);
        free(c.keys[i].late_by_rank);
    }
    free(c.keys);
    free(c.slot);
    free(c.stamp);
    out->nranks = c.nranks;
    free(c.ranks);
    if (rc) {
        rep_mpi_imbalance_free(out);
        return rc;
    }
    if (out->n)
        qsort(out->rows, out->n, sizeof *out->rows, cmp_rows);
    return 0;
}

void rep_mpi_imbalance_free(rep_imb_t *m)
{
    for (size_t i = 0; i < m->n; i++)
        free((char *)m->rows[i].name);
    free(m->rows);
    memset(m, 0, sizeof *m);
}

/* ---- the communication matrix ------------------------------------------------------------- */

static int cmp_pairs(const void *a, const void *b)
{
    const rep_mpi_pair_t *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return x->to < y->to ? -1 : x->to > y->to;
}

int rep_mpi_matrix(ses_t *s, rep_mpi_matrix_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    uint64_t *ranks;
    size_t nr, cap = 0;
    int rc = rep_mpi_rank_numbers(s, &ranks, &nr, err);
    if (rc)
        return rc;
    free(ranks);
    if (!nr)
        return no_ranks(err);
    out->nranks = nr;
    for (size_t e = 0; e < s->nexps; e++)
        for (size_t i = 0; i < s->exps[e]->nprocs; i++) {
            const exp_process_t *p = s->exps[e]->procs[i];
            uint64_t r1 = exp_mpi_rank_of(s->exps[e], (uint32_t)i);
            int any = 0;
            for (size_t k = 0; r1 && k < p->nrecords; k++) {
                const exp_record_t *r = &p->records[k];
                const char *name = exp_record_get(r, EXP_KEY_NAME);
                if (strcmp(r->kind, EXP_LOG_NOTE) || !name || strcmp(name, EXP_NOTE_MPI_PEER))
                    continue;
                uint64_t to = exp_record_u64(r, EXP_KEY_TO, UINT64_MAX);
                uint64_t msgs = exp_record_u64(r, EXP_KEY_MSGS, 0);
                any = 1;
                if (to == UINT64_MAX || !msgs)
                    continue;
                if (GROW(out->pairs, out->n, cap)) {
                    rep_mpi_matrix_free(out);
                    return tally_errf(err, TALLY_ENOMEM, "out of memory");
                }
                out->pairs[out->n++] = (rep_mpi_pair_t){ r1 - 1, to, msgs,
                                                         exp_record_u64(r, EXP_KEY_BYTES, 0) };
            }
            out->nnotes += any;
        }
    if (out->n)
        qsort(out->pairs, out->n, sizeof *out->pairs, cmp_pairs);
    /* one row per pair: a rank's processes (fork children) may each have sent */
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (k && out->pairs[k - 1].from == out->pairs[i].from &&
            out->pairs[k - 1].to == out->pairs[i].to) {
            out->pairs[k - 1].msgs = sat_add(out->pairs[k - 1].msgs, out->pairs[i].msgs);
            out->pairs[k - 1].bytes = sat_add(out->pairs[k - 1].bytes, out->pairs[i].bytes);
        } else {
            out->pairs[k++] = out->pairs[i];
        }
    }
    out->n = k;
    return 0;
}

void rep_mpi_matrix_free(rep_mpi_matrix_t *m)
{
    free(m->pairs);
    memset(m, 0, sizeof *m);
}

/* ---- MPI calls over time -------------------------------------------------------------------- */

#define TL_FNS 4 /* functions tracked per cell: the one with the most wins */

typedef struct mtl_ctx {
    ses_t *s;
    int mtime;
    uint64_t t0, t1;
    double cell;
    uint64_t *ranks;
    size_t nranks;
    uint64_t *ns;  /* [rank][col][TL_FNS] */
    uint32_t *fn;  /* same */
} mtl_ctx_t;

static void mtl_add(mtl_ctx_t *c, size_t ri, int col, uint32_t fn, uint64_t ns)
{
    size_t base = (ri * REP_MPI_TL_COLS + (size_t)col) * TL_FNS;
    int k, low = 0;
    for (k = 0; k < TL_FNS; k++) {
        if (c->fn[base + k] == fn || c->ns[base + k] == 0) {
            c->fn[base + k] = fn;
            c->ns[base + k] += ns;
            return;
        }
        if (c->ns[base + k] < c->ns[base + low])
            low = k;
    }
    /* full: the smallest gives way (an approximation only of which function wins) */
    c->fn[base + low] = fn;
    c->ns[base + low] += ns;
}

static int mtl_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf_fn,
                     uint32_t thread_index)
{
    mtl_ctx_t *c = ctx;
    if (ev->type != EXP_REC_TRACE || !v[c->mtime])
        return 0;
    const eng_thread_t *th = eng_thread(c->s->eng, thread_index);
    uint64_t r1 = exp_mpi_rank_of(c->s->exps[th->exp], th->proc);
    size_t ri = r1 ? rank_index(c->ranks, c->nranks, r1 - 1) : c->nranks;
    if (ri == c->nranks)
        return 0;
    uint64_t end = ev->t, start = end > v[c->mtime] ? end - v[c->mtime] : 0;
    if (start < c->t0)
        start = c->t0;
    if (end > c->t1)
        end = c->t1;
    while (start < end) {
        int col = (int)((double)(start - c->t0) / c->cell);
        if (col >= REP_MPI_TL_COLS)
            col = REP_MPI_TL_COLS - 1;
        uint64_t col_end = c->t0 + (uint64_t)((double)(col + 1) * c->cell);
        if (col_end <= start)
            col_end = start + 1;
        uint64_t piece_end = end < col_end ? end : col_end;
        mtl_add(c, ri, col, leaf_fn, piece_end - start);
        start = piece_end;
    }
    return 0;
}

int rep_mpi_timeline(ses_t *s, rep_mpi_timeline_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    mtl_ctx_t c = { .s = s, .mtime = eng_metric_find(s->eng, "mpitime") };
    int rc = rep_mpi_rank_numbers(s, &c.ranks, &c.nranks, err);
    if (rc)
        return rc;
    if (!c.nranks) {
        free(c.ranks);
        return no_ranks(err);
    }
    if (c.mtime < 0) {
        free(c.ranks);
        return tally_errf(err, TALLY_EUSAGE, "no MPI calls were recorded (collect with -M on)");
    }
    rep_run_span(s, &c.t0, &c.t1);
    out->rows = calloc(c.nranks, sizeof *out->rows);
    size_t cells = c.nranks * REP_MPI_TL_COLS * TL_FNS;
    c.ns = calloc(cells, sizeof *c.ns);
    c.fn = calloc(cells, sizeof *c.fn);
    if (!out->rows || !c.ns || !c.fn) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
        goto done;
    }
    out->n = c.nranks;
    for (size_t r = 0; r < c.nranks; r++) {
        out->rows[r].rank = c.ranks[r];
        for (int k = 0; k < REP_MPI_TL_COLS; k++)
            out->rows[r].fn[k] = UINT32_MAX;
    }
    if (c.t1 <= c.t0)
        goto done;
    out->span = (double)(c.t1 - c.t0) * 1e-9;
    c.cell = out->cell_ns = (double)(c.t1 - c.t0) / REP_MPI_TL_COLS;
    if ((rc = eng_foreach_event(s->eng, mtl_event, &c, err)))
        goto done;
    for (size_t r = 0; r < c.nranks; r++)
        for (int k = 0; k < REP_MPI_TL_COLS; k++) {
            size_t base = (r * REP_MPI_TL_COLS + (size_t)k) * TL_FNS;
            uint64_t best = 0;
            for (int f = 0; f < TL_FNS; f++) {
                out->rows[r].ns[k] += c.ns[base + f];
                if (c.ns[base + f] > best) {
                    best = c.ns[base + f];
                    out->rows[r].fn[k] = c.fn[base + f];
                }
            }
        }
done:
    free(c.ns);
    free(c.fn);
    free(c.ranks);
    if (rc)
        rep_mpi_timeline_free(out);
    return rc;
}

void rep_mpi_timeline_free(rep_mpi_timeline_t *t)
{
    free(t->rows);
    memset(t, 0, sizeof *t);
}
