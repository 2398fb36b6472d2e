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
#include "base/u64map.h"
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
            const uint64_t lost[] = { p->st_dropped_busy, p->st_dropped_disk, p->st_ring_lost,
                                      p->st_dropped_heap, p->st_dropped_io, p->st_dropped_sync,
                                      p->st_dropped_traced, p->st_dropped_api };
            for (size_t k = 0; k < sizeof lost / sizeof *lost; k++)
                r->dropped = sat_add(r->dropped, lost[k]);
            for (size_t c = 0; c < p->ncounters; c++)
                r->dropped = sat_add(sat_add(r->dropped, p->counters[c].lost),
                                     p->counters[c].dropped);
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
    uint64_t *ls_by_rank;   /* [nranks] or NULL: receivers' wait for this rank's late sends */
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
    return (size_t)u64map_hash(h); /* keyed: an experiment cannot choose colliding keys */
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

/* ---- late arrival and late senders: waits charged to the rank that caused them ---------------
 * Late arrival. The wrappers record the barrier and the all-to-all collectives over an
 * intracommunicator with a job-wide id as kind mpi_sync (wrap.h), the id as its attribute comm
 * (0, or absent in older experiments: MPI_COMM_WORLD): the n-th such record of a communicator
 * on each of its members is the same collective (MPI orders a communicator's collectives alike
 * on all its members). Its members are the ranks whose `note name=mpi_comm` names its id (each
 * member writes one when the communicator is made; MPI_COMM_WORLD: every rank). One scan of
 * the events keeps per collective (not per rank) the latest entry (end - mpitime), the sum of
 * the entries, how many members were seen, the function and the last member's stack; a
 * collective all its members took part in then charges n x latest - sum (each member's wait
 * for the last) to the last member's call site. Memory: 40 bytes a collective, and per
 * communicator a counter per rank.
 * Late senders (Scalasca's Late Sender). The wrappers record every message sent and received
 * as kind mpi_msg (wrap.h: the peer's world rank, tag, communicator id, when it was posted,
 * and when the call that completed it started). MPI's non-overtaking rule pairs the k-th send
 * from rank a to rank b on (communicator, tag), by start, with the k-th receive of those by
 * posting time; a receive whose completing call started (wait) before its send started waited
 * min(send start, its end) - wait for the sender, charged to the send's call site and rank.
 * Memory: 56 bytes a message while the view is computed.
 * Both compare times of different ranks: CLOCK_MONOTONIC is one clock on one host; ranks on
 * several hosts differ by their clocks' offsets, and the model says how much of the charged
 * time compared ranks of different hosts (late_cross). A rank whose records come from several
 * threads is taken in time order of each thread's records, threads in scan order. */

typedef struct late_inst {
    uint64_t max_enter, sum_enter;
    uint32_t n, fn;           /* ranks seen; the leaf function (UINT32_MAX - 1: they differ) */
    uint32_t last_ri, last_exp, last_stack, pad;
} late_inst_t;

typedef struct late_comm {
    uint64_t id;
    uint64_t size;      /* members, from the notes (MPI_COMM_WORLD: the ranks) */
    const char *host;   /* the host of its first member seen */
    int multihost;      /* members on more than one host */
    uint32_t *seq;      /* [nranks]: its mpi_sync records seen per rank; NULL before one */
    late_inst_t *inst;
    size_t ninst, cap;
} late_comm_t;

typedef struct late_msg {
    uint64_t comm, post, wait, end;
    uint32_t from, to, tag, exp, stack, pad; /* from, to: indices into the ranks */
} late_msg_t;

typedef struct late_kinds {
    int64_t sync, msg; /* the kinds' ids in this process, -1: none */
    int sync_comm;     /* the index of mpi_sync's attribute comm, -1: none */
    int sync_time;     /* the index of its metric mpitime */
    int a[6];          /* mpi_msg's attributes dir, peer, tag, comm, post, wait */
} late_kinds_t;

typedef struct late_ctx {
    ses_t *s;
    uint32_t exp; /* the experiment scanned */
    tally_err_t *err;
    uint64_t *ranks;
    size_t nranks;
    const char **host;      /* [nranks]: each rank's host ("" unknown) */
    late_comm_t *comms;     /* by id */
    size_t ncomms;
    late_msg_t *sends, *recvs;
    size_t nsends, nrecvs, capsends, caprecvs;
    uint64_t unknown;       /* collectives and messages of a communicator without an id */
    uint32_t cache_exp, cache_proc;
    int cache_set;
    late_kinds_t cache;
} late_ctx_t;

static const late_kinds_t *kinds_of(late_ctx_t *c, uint32_t exp, uint32_t proc)
{
    if (c->cache_set && c->cache_exp == exp && c->cache_proc == proc)
        return &c->cache;
    static const char *const names[6] = { "dir", "peer", "tag", "comm", "post", "wait" };
    late_kinds_t *k = &c->cache;
    memset(k, 0, sizeof *k);
    k->sync = k->msg = -1;
    k->sync_comm = -1;
    const exp_experiment_t *e = c->s->exps[exp];
    for (size_t i = 0; proc < e->nprocs && i < e->procs[proc]->nkinds; i++) {
        const exp_kind_t *kd = &e->procs[proc]->kinds[i];
        if (!strcmp(kd->name, "mpi_sync")) {
            const exp_process_t *p = e->procs[proc];
            for (uint32_t m = 0; m < kd->nmetrics; m++)
                if (kd->metric[m] < p->nmetrics && !strcmp(p->metrics[kd->metric[m]].name, "mpitime"))
                    k->sync = kd->id, k->sync_time = (int)m;
            k->sync_comm = exp_kind_attr(kd, "comm");
        } else if (!strcmp(kd->name, "mpi_msg")) {
            int ok = 1;
            for (int a = 0; a < 6; a++)
                ok &= (k->a[a] = exp_kind_attr(kd, names[a])) >= 0;
            if (ok)
                k->msg = kd->id;
        }
    }
    c->cache_exp = exp;
    c->cache_proc = proc;
    c->cache_set = 1;
    return k;
}

static late_comm_t *comm_find(late_ctx_t *c, uint64_t id)
{
    size_t lo = 0, hi = c->ncomms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->comms[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->ncomms && c->comms[lo].id == id ? &c->comms[lo] : NULL;
}

static int cmp_comms(const void *a, const void *b)
{
    const late_comm_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* host[nr]: each rank's host (its first process's start record; "" unknown); returns the
 * number of distinct hosts. */
static size_t rank_hosts(ses_t *s, const uint64_t *ranks, size_t nr, const char **host)
{
    for (size_t e = 0; e < s->nexps; e++)
        for (size_t i = 0; i < s->exps[e]->nprocs; i++) {
            const exp_process_t *p = s->exps[e]->procs[i];
            uint64_t r1 = exp_mpi_rank_of(s->exps[e], (uint32_t)i);
            size_t ri = r1 ? rank_index(ranks, nr, r1 - 1) : nr;
            if (ri < nr && !host[ri] && p->host)
                host[ri] = p->host;
        }
    size_t n = 0;
    for (size_t i = 0; i < nr; i++) {
        if (!host[i])
            host[i] = "";
        size_t j = 0;
        while (j < i && strcmp(host[j], host[i]))
            j++;
        n += j == i;
    }
    return n;
}

/* Each rank's host, the number of hosts, and the communicators from the notes. */
static int late_setup(late_ctx_t *c, size_t *nhosts)
{
    if (!(c->host = calloc(c->nranks, sizeof *c->host)))
        return TALLY_ENOMEM;
    *nhosts = rank_hosts(c->s, c->ranks, c->nranks, c->host);
    size_t cap = 0;
    for (size_t e = 0; e < c->s->nexps; e++)
        for (size_t i = 0; i < c->s->exps[e]->nprocs; i++) {
            const exp_process_t *p = c->s->exps[e]->procs[i];
            uint64_t r1 = exp_mpi_rank_of(c->s->exps[e], (uint32_t)i);
            size_t ri = r1 ? rank_index(c->ranks, c->nranks, r1 - 1) : c->nranks;
            if (ri == c->nranks)
                continue;
            for (size_t k = 0; k < p->nrecords; k++) {
                const exp_record_t *r = &p->records[k];
                const char *name = exp_record_get(r, EXP_KEY_NAME);
                if (strcmp(r->kind, EXP_LOG_NOTE) || !name || strcmp(name, EXP_NOTE_MPI_COMM))
                    continue;
                if (GROW(c->comms, c->ncomms, cap))
                    return TALLY_ENOMEM;
                c->comms[c->ncomms++] = (late_comm_t){
                    .id = exp_record_u64(r, EXP_KEY_ID, 0),
                    .size = exp_record_u64(r, EXP_KEY_SIZE, 0),
                    .host = p->host ? p->host : "" };
            }
        }
    if (GROW(c->comms, c->ncomms, cap))
        return TALLY_ENOMEM;
    c->comms[c->ncomms++] = (late_comm_t){ .id = 0, .size = c->nranks, .host = c->host[0],
                                           .multihost = *nhosts > 1 };
    qsort(c->comms, c->ncomms, sizeof *c->comms, cmp_comms);
    /* one per id: the members' notes agree on its size; hosts differ or not */
    size_t k = 0;
    for (size_t i = 0; i < c->ncomms; i++) {
        if (k && c->comms[k - 1].id == c->comms[i].id) {
            if (strcmp(c->comms[k - 1].host, c->comms[i].host))
                c->comms[k - 1].multihost = 1;
            continue;
        }
        c->comms[k++] = c->comms[i];
    }
    c->ncomms = k;
    return 0;
}

static int late_collective(late_ctx_t *c, const late_kinds_t *pk, const exp_event_t *ev,
                           size_t ri, uint32_t exp)
{
    uint32_t nfn = 0;
    const uint32_t *fns = eng_stack_functions(c->s->eng, exp, ev->stack, &nfn, c->err);
    if (!fns)
        return TALLY_ENOMEM;
    uint32_t leaf_fn = nfn ? fns[0] : UINT32_MAX;
    uint64_t mtime = (uint32_t)pk->sync_time < ev->nvalues ? ev->values[pk->sync_time] : 0;
    uint64_t id = pk->sync_comm >= 0 && (uint32_t)pk->sync_comm < ev->nvalues
                      ? ev->values[pk->sync_comm] : 0;
    late_comm_t *cm = comm_find(c, id);
    if (!cm) {
        c->unknown++;
        return 0;
    }
    if (!cm->seq && !(cm->seq = calloc(c->nranks, sizeof *cm->seq)))
        return TALLY_ENOMEM;
    uint64_t q = cm->seq[ri]++;
    while (cm->ninst <= q) {
        if (GROW(cm->inst, cm->ninst, cm->cap))
            return TALLY_ENOMEM;
        memset(&cm->inst[cm->ninst], 0, sizeof *cm->inst);
        cm->ninst++;
    }
    late_inst_t *in = &cm->inst[q];
    uint64_t enter = ev->t > mtime ? ev->t - mtime : 0;
    if (!in->n) {
        in->fn = leaf_fn;
    } else if (in->fn != leaf_fn) {
        in->fn = UINT32_MAX - 1;
    }
    if (!in->n || enter > in->max_enter) {
        in->max_enter = enter;
        in->last_ri = (uint32_t)ri;
        in->last_exp = exp;
        in->last_stack = ev->stack;
    }
    in->sum_enter += enter;
    in->n++;
    return 0;
}

static int late_message(late_ctx_t *c, const late_kinds_t *pk, const exp_event_t *ev, size_t ri,
                        uint32_t exp)
{
    uint64_t a[6];
    for (int i = 0; i < 6; i++)
        a[i] = (uint32_t)pk->a[i] < ev->nvalues ? ev->values[pk->a[i]] : 0;
    /* dir, peer, tag, comm, post, wait */
    size_t peer = a[1] < UINT32_MAX ? rank_index(c->ranks, c->nranks, a[1]) : c->nranks;
    if ((a[0] != 1 && a[0] != 2) || a[3] == UINT64_MAX || peer == c->nranks) {
        c->unknown++;
        return 0;
    }
    late_msg_t m = { .comm = a[3], .post = a[4], .wait = a[5], .end = ev->t,
                     .tag = (uint32_t)a[2], .exp = exp, .stack = ev->stack };
    if (a[0] == 1) {
        m.from = (uint32_t)ri;
        m.to = (uint32_t)peer;
        if (GROW(c->sends, c->nsends, c->capsends))
            return TALLY_ENOMEM;
        c->sends[c->nsends++] = m;
    } else {
        m.from = (uint32_t)peer;
        m.to = (uint32_t)ri;
        if (GROW(c->recvs, c->nrecvs, c->caprecvs))
            return TALLY_ENOMEM;
        c->recvs[c->nrecvs++] = m;
    }
    return 0;
}

/* (an own scan: mpi_msg records carry no metric, so the engine's scan of events skips them) */
static int late_event(void *ctx, const exp_event_t *ev)
{
    late_ctx_t *c = ctx;
    if (ev->type != EXP_REC_TRACE)
        return 0;
    const late_kinds_t *pk = kinds_of(c, c->exp, ev->proc);
    if ((pk->sync < 0 || ev->call != (uint64_t)pk->sync) &&
        (pk->msg < 0 || ev->call != (uint64_t)pk->msg))
        return 0;
    if (!eng_event_selected(c->s->eng, c->exp, ev))
        return 0;
    uint64_t r1 = exp_mpi_rank_of(c->s->exps[c->exp], ev->proc);
    size_t ri = r1 ? rank_index(c->ranks, c->nranks, r1 - 1) : c->nranks;
    if (ri == c->nranks)
        return 0;
    int rc = pk->sync >= 0 && ev->call == (uint64_t)pk->sync
                 ? late_collective(c, pk, ev, ri, c->exp)
                 : late_message(c, pk, ev, ri, c->exp);
    return rc ? -1 : 0;
}

/* The call-site key of the MPI record (exp, stack), as -mpi_callsites' rows; NULL with *skip
 * set when the stack has no caller, NULL without it when out of memory. */
static imb_key_t *site_key(imb_ctx_t *ic, uint32_t exp, uint32_t stack, int *skip,
                           tally_err_t *err)
{
    *skip = 0;
    exp_stacks_t *st = eng_stacks(ic->s->eng, exp);
    uint32_t npc = 0, nfn = 0, flags = 0, proc = 0;
    const uint64_t *pcs = st && stack != EXP_NO_STACK
                              ? exp_stacks_get(st, stack, &npc, &flags, &proc) : NULL;
    const uint32_t *fns = pcs ? eng_stack_functions(ic->s->eng, exp, stack, &nfn, err) : NULL;
    if (pcs && !fns)
        return NULL;
    if (!pcs || npc < 2 || nfn < 2) {
        *skip = 1;
        return NULL;
    }
    rep_frame_t fr;
    rep_frames(ic->s, 0, exp, proc, pcs + 1, fns + 1, 1, &fr);
    imb_key_t *k = key_get(ic, fns[0], (uint64_t)fns[1] << 32 ^ (fr.offset & 0xffffffffu));
    if (k && !k->caller_pc) {
        k->exp = exp;
        k->proc = proc;
        k->caller_fn = fns[1];
        k->caller_pc = pcs[1];
    }
    return k;
}

static int charge(uint64_t **by_rank, size_t nranks, size_t ri, uint64_t ns)
{
    if (!*by_rank && !(*by_rank = calloc(nranks, sizeof **by_rank)))
        return TALLY_ENOMEM;
    (*by_rank)[ri] = sat_add((*by_rank)[ri], ns);
    return 0;
}

/* Charges each complete collective's wait to the last member's call site in ic. */
static int late_charge(imb_ctx_t *ic, late_ctx_t *c, rep_imb_t *out, tally_err_t *err)
{
    for (size_t k = 0; k < c->ncomms; k++) {
        late_comm_t *cm = &c->comms[k];
        for (size_t i = 0; i < cm->ninst; i++) {
            late_inst_t *in = &cm->inst[i];
            int skip = 0;
            imb_key_t *key = NULL;
            if (in->n != cm->size || in->fn == UINT32_MAX - 1 ||
                in->last_stack == EXP_NO_STACK ||
                (!(key = site_key(ic, in->last_exp, in->last_stack, &skip, err)) && skip)) {
                out->late_skipped++;
                continue;
            }
            if (!key)
                return TALLY_ENOMEM;
            uint64_t caused = in->n * in->max_enter - in->sum_enter;
            if (charge(&key->late_by_rank, c->nranks, in->last_ri, caused))
                return TALLY_ENOMEM;
            if (cm->multihost)
                out->late_cross = sat_add(out->late_cross, caused);
            out->late_matched++;
        }
    }
    return 0;
}

static int cmp_msgs(const void *a, const void *b)
{
    const late_msg_t *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    if (x->to != y->to)
        return x->to < y->to ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    if (x->post != y->post)
        return x->post < y->post ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int same_channel(const late_msg_t *x, const late_msg_t *y)
{
    return x->comm == y->comm && x->from == y->from && x->to == y->to && x->tag == y->tag;
}

/* Pairs sends and receives channel by channel and charges late senders. */
static int late_senders(imb_ctx_t *ic, late_ctx_t *c, rep_imb_t *out, tally_err_t *err)
{
    if (c->nsends)
        qsort(c->sends, c->nsends, sizeof *c->sends, cmp_msgs);
    if (c->nrecvs)
        qsort(c->recvs, c->nrecvs, sizeof *c->recvs, cmp_msgs);
    size_t i = 0, j = 0;
    while (i < c->nsends || j < c->nrecvs) {
        int d = i == c->nsends ? 1 : j == c->nrecvs ? -1 : 0;
        if (!d && !same_channel(&c->sends[i], &c->recvs[j])) {
            late_msg_t a = c->sends[i], b = c->recvs[j];
            a.post = b.post = 0;
            a.end = b.end = 0;
            d = cmp_msgs(&a, &b);
        }
        if (d < 0) {
            out->ls_unmatched++;
            i++;
            continue;
        }
        if (d > 0) {
            out->ls_unmatched++;
            j++;
            continue;
        }
        const late_msg_t *s = &c->sends[i++], *r = &c->recvs[j++];
        out->ls_matched++;
        if (s->post <= r->wait)
            continue;
        uint64_t late = (s->post < r->end ? s->post : r->end) - r->wait;
        if (!late)
            continue;
        int skip = 0;
        imb_key_t *key = site_key(ic, s->exp, s->stack, &skip, err);
        if (!key && skip)
            continue;
        if (!key || charge(&key->ls_by_rank, c->nranks, s->from, late))
            return TALLY_ENOMEM;
        out->ls_waits++;
        if (strcmp(c->host[s->from], c->host[s->to]))
            out->late_cross = sat_add(out->late_cross, late);
    }
    return 0;
}

static int late_scan(imb_ctx_t *ic, rep_imb_t *out, tally_err_t *err)
{
    late_ctx_t c = { .s = ic->s, .err = err, .ranks = ic->ranks, .nranks = ic->nranks };
    size_t nhosts = 0;
    int rc = late_setup(&c, &nhosts);
    out->nhosts = nhosts;
    if (!rc)
        rc = eng_aggregate(ic->s->eng, err);
    for (size_t x = 0; !rc && x < ic->s->nexps; x++) {
        exp_scan_stats_t st;
        c.exp = (uint32_t)x;
        c.cache_set = 0;
        rc = exp_scan(ic->s->exps[x], eng_stacks(ic->s->eng, (uint32_t)x), late_event, &c, &st,
                      err);
        if (rc == -1 || rc > 0) /* the callback's stop: out of memory */
            rc = TALLY_ENOMEM;
    }
    if (!rc)
        rc = late_charge(ic, &c, out, err);
    if (!rc)
        rc = late_senders(ic, &c, out, err);
    out->late_unknown = c.unknown;
    for (size_t i = 0; i < c.ncomms; i++) {
        free(c.comms[i].seq);
        free(c.comms[i].inst);
    }
    free(c.comms);
    free(c.sends);
    free(c.recvs);
    free(c.host);
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
        for (size_t j = 0; k->ls_by_rank && j < c.nranks; j++) {
            r->late_send = sat_add(r->late_send, k->ls_by_rank[j]);
            if (k->ls_by_rank[j] > r->late_send_max) {
                r->late_send_max = k->ls_by_rank[j];
                r->late_send_rank = c.ranks[j];
            }
        }
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
        free(c.keys[i].ls_by_rank);
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
    const char **host = calloc(c.nranks, sizeof *host);
    if (!host) {
        free(c.ranks);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    out->nhosts = rank_hosts(s, c.ranks, c.nranks, host);
    free(host);
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
