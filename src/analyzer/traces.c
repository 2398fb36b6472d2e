/*
 * traces.c - analyses of traced calls; see traces.h. Sections: small helpers, the heap over time,
 * synchronization objects, files.
 */
#define _GNU_SOURCE
#include "analyzer/traces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/heapmatch.h"
#include "base/grow.h"
#include "base/u64map.h"

/* ---- small helpers ------------------------------------------------------------------------ */

static int nomem(tally_err_t *err) { return tally_errf(err, TALLY_ENOMEM, "out of memory"); }

/* ---- the heap over time ------------------------------------------------------------------- */

typedef struct heap_scan {
    int pass;            /* 1: counts and the peak; 2: the blocks live at the peak */
    uint32_t exp;
    tr_heap_t *out;
    size_t procs_cap;
    tr_heap_proc_t *cur; /* the process being scanned (pass 1: appended; pass 2: looked up) */
    size_t first;        /* out->procs index of this experiment's first process */
    uint32_t proc;
    hm_t *hm;
    u64map_t seq;        /* tid -> index into seqs: each thread's allocation count */
    uint64_t *seqs;
    size_t nseqs, seqs_cap;
    uint64_t events;     /* heap events of the process so far */
    int done;            /* pass 2: the peak's blocks were collected */
    u64map_t rows;       /* pass 2: stack -> index into cur->at_peak */
    size_t rows_cap;
    int err;
} heap_scan_t;

/* The allocation count of thread tid (created at 0). */
static uint64_t *thread_seq(heap_scan_t *h, uint32_t tid)
{
    int found;
    uint32_t *slot = u64map_slot(&h->seq, tid, &found);
    if (!slot)
        return NULL;
    if (!found) {
        if (GROW(h->seqs, h->nseqs, h->seqs_cap))
            return NULL;
        h->seqs[h->nseqs] = 0;
        *slot = (uint32_t)h->nseqs++;
    }
    return &h->seqs[*slot];
}

/* A block ended by a free: temporary when its thread allocated nothing since. */
static void block_freed(void *ctx, const hm_block_t *b)
{
    heap_scan_t *h = ctx;
    h->cur->frees++;
    uint64_t *seq = thread_seq(h, b->info.thread);
    if (seq && *seq == b->info.seq)
        h->cur->temporary++;
}

static void proc_begin(heap_scan_t *h, uint32_t proc)
{
    hm_clear(h->hm);
    u64map_free(&h->seq);
    h->nseqs = 0;
    h->events = 0;
    h->proc = proc;
    h->cur = NULL;
    if (h->pass == 1) {
        tr_heap_t *o = h->out;
        if (GROW(o->procs, o->nprocs, h->procs_cap)) {
            h->err = TALLY_ENOMEM;
            return;
        }
        h->cur = &o->procs[o->nprocs++];
        memset(h->cur, 0, sizeof *h->cur);
        h->cur->exp = h->exp;
        h->cur->proc = proc;
        return;
    }
    for (size_t i = h->first; i < h->out->nprocs; i++)
        if (h->out->procs[i].proc == proc && h->out->procs[i].exp == h->exp)
            h->cur = &h->out->procs[i];
    h->done = 0;
    u64map_free(&h->rows);
    h->rows_cap = 0;
}

static void proc_end(heap_scan_t *h)
{
    if (h->pass == 1 && h->cur) {
        h->cur->end_bytes = hm_bytes(h->hm);
        h->cur->end_blocks = hm_count(h->hm);
    }
}

/* Pass 2 at the peak: the live blocks, by stack. */
static void peak_block(void *ctx, const hm_block_t *b)
{
    heap_scan_t *h = ctx;
    tr_heap_proc_t *p = h->cur;
    int found;
    uint32_t *slot = u64map_slot(&h->rows, b->info.stack, &found);
    if (!slot) {
        h->err = TALLY_ENOMEM;
        return;
    }
    if (!found) {
        if (GROW(p->at_peak, p->nat_peak, h->rows_cap)) {
            h->err = TALLY_ENOMEM;
            return;
        }
        *slot = (uint32_t)p->nat_peak;
        p->at_peak[p->nat_peak++] = (tr_stack_row_t){ h->exp, h->proc, b->info.stack, 0, 0 };
    }
    p->at_peak[*slot].count++;
    p->at_peak[*slot].bytes += b->size;
}

static int heap_cb(void *ctx, const exp_event_t *ev)
{
    heap_scan_t *h = ctx;
    if (ev->type != EXP_REC_HEAP_ALLOC && ev->type != EXP_REC_HEAP_FREE)
        return 0;
    if (!h->cur || ev->proc != h->proc) {
        if (h->cur)
            proc_end(h);
        proc_begin(h, ev->proc);
        if (h->err)
            return 1;
    }
    if (!h->cur || h->done)
        return 0;
    tr_heap_proc_t *p = h->cur;
    int mapped = ev->call == EXP_HEAP_MMAP || ev->call == EXP_HEAP_MREMAP;
    if (ev->type == EXP_REC_HEAP_FREE) {
        hm_release(h->hm, ev->addr, ev->size, mapped, h->pass == 1 ? block_freed : NULL, h);
    } else {
        uint64_t *seq = thread_seq(h, ev->tid);
        if (!seq)
            return h->err = TALLY_ENOMEM;
        hm_info_t info = { .stack = ev->stack, .thread = ev->tid, .t = ev->t, .seq = ++*seq };
        if (hm_alloc(h->hm, ev->addr, ev->size, mapped, &info, NULL, NULL))
            return h->err = TALLY_ENOMEM;
        if (h->pass == 1) {
            p->allocs++;
            p->alloc_bytes += ev->size;
        }
    }
    h->events++;
    if (h->pass == 1 && hm_bytes(h->hm) > p->peak_bytes) {
        p->peak_bytes = hm_bytes(h->hm);
        p->peak_t = ev->t;
        p->peak_blocks = hm_count(h->hm);
        p->peak_event = h->events;
    } else if (h->pass == 2 && h->events == p->peak_event) {
        hm_foreach(h->hm, peak_block, h);
        h->done = 1;
    }
    return h->err != 0;
}

static int cmp_rows(const void *a, const void *b)
{
    const tr_stack_row_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->count > y->count ? -1 : x->count < y->count;
}

int tr_heap(eng_t *g, exp_experiment_t **exps, size_t nexps, tr_heap_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    heap_scan_t h = { .out = out };
    if (!(h.hm = hm_new()))
        return nomem(err);
    int rc = 0;
    for (size_t x = 0; x < nexps && !rc; x++) {
        h.exp = (uint32_t)x;
        h.first = out->nprocs;
        for (h.pass = 1; h.pass <= 2 && !rc; h.pass++) {
            h.cur = NULL;
            rc = exp_scan(exps[x], eng_stacks(g, (uint32_t)x), heap_cb, &h, NULL, err);
            if (h.cur)
                proc_end(&h);
            if (h.err)
                rc = nomem(err);
        }
    }
    for (size_t i = 0; i < out->nprocs; i++)
        if (out->procs[i].nat_peak)
            qsort(out->procs[i].at_peak, out->procs[i].nat_peak, sizeof *out->procs[i].at_peak,
              cmp_rows);
    hm_free(h.hm);
    u64map_free(&h.seq);
    u64map_free(&h.rows);
    free(h.seqs);
    if (rc < 0 || rc > 0) {
        tr_free_heap(out);
        return rc < 0 ? rc : nomem(err);
    }
    return 0;
}

void tr_free_heap(tr_heap_t *h)
{
    for (size_t i = 0; i < h->nprocs; i++)
        free(h->procs[i].at_peak);
    free(h->procs);
    memset(h, 0, sizeof *h);
}

/* ---- synchronization objects -------------------------------------------------------------- */

typedef struct sync_scan {
    eng_t *g;
    uint32_t exp;
    tr_sync_row_t *rows;
    size_t n, cap;
    u64map_t index; /* (proc, addr) -> row */
    int err;
} sync_scan_t;

static int sync_cb(void *ctx, const exp_event_t *ev)
{
    sync_scan_t *s = ctx;
    if (ev->type != EXP_REC_SYNC || !eng_event_selected(s->g, s->exp, ev))
        return 0;
    uint64_t key = ev->addr * 0x9e3779b97f4a7c15ull ^ ((uint64_t)s->exp << 48 | ev->proc);
    int found;
    uint32_t *slot = u64map_slot(&s->index, key, &found);
    if (!slot || (!found && GROW(s->rows, s->n, s->cap)))
        return s->err = TALLY_ENOMEM;
    if (!found) {
        *slot = (uint32_t)s->n;
        s->rows[s->n++] = (tr_sync_row_t){ s->exp, ev->proc, ev->addr, ev->call, 0, 0, NULL, 0 };
    }
    tr_sync_row_t *r = &s->rows[*slot];
    r->wait += ev->weight;
    r->count++;
    return 0;
}

static int cmp_sync(const void *a, const void *b)
{
    const tr_sync_row_t *x = a, *y = b;
    if (x->wait != y->wait)
        return x->wait > y->wait ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The variable of the process's objects that holds addr. */
static void name_object(sym_ctx_t *sym, sym_vars_t *vars, const exp_process_t *p,
                        tr_sync_row_t *r)
{
    for (size_t i = 0; i < p->nobjects && !r->name; i++) {
        const exp_object_t *o = &p->objects[i];
        if (r->addr < o->bias || !strcmp(o->path, "[vdso]"))
            continue;
        uint32_t so = sym_object_add(sym, o->path, o->buildid);
        r->name = sym_var_at(vars, so, r->addr - o->bias, &r->offset);
    }
}

int tr_sync_objects(eng_t *g, exp_experiment_t **exps, size_t nexps, sym_ctx_t *sym,
                    sym_vars_t *vars, tr_sync_row_t **rows, size_t *n, tally_err_t *err)
{
    int rc = 0;
    sync_scan_t s = { .g = g };
    for (size_t x = 0; x < nexps && !rc; x++) {
        s.exp = (uint32_t)x;
        rc = exp_scan(exps[x], eng_stacks(g, (uint32_t)x), sync_cb, &s, NULL, err);
        if (s.err)
            rc = nomem(err);
    }
    u64map_free(&s.index);
    if (rc) {
        free(s.rows);
        return rc < 0 ? rc : nomem(err);
    }
    for (size_t i = 0; i < s.n; i++)
        name_object(sym, vars, exps[s.rows[i].exp]->procs[s.rows[i].proc], &s.rows[i]);
    if (s.n)
        qsort(s.rows, s.n, sizeof *s.rows, cmp_sync);
    *rows = s.rows;
    *n = s.n;
    return 0;
}

/* ---- files ---------------------------------------------------------------------------------- */

typedef struct io_scan {
    eng_t *g;
    uint32_t exp, proc;
    int started;
    u64map_t fds;   /* fd -> row of its file */
    u64map_t names; /* hash of a name -> first row with that hash (rows chain by next) */
    tr_file_row_t *rows;
    uint32_t *next; /* next row with the same name hash */
    size_t n, cap, next_cap;
    int err;
    int by_fd;     /* a row per open descriptor (tr_io_descriptors) */
    uint32_t vfd;  /* descriptors opened so far (their numbers in the rows' names) */
} io_scan_t;

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* The row of file name (n bytes), created when new; UINT32_MAX on no memory. */
static uint32_t file_row(io_scan_t *s, const char *name, size_t n)
{
    uint64_t h = name_hash(name, n);
    const uint32_t *first = u64map_get(&s->names, h);
    for (uint32_t r = first ? *first : UINT32_MAX; r != UINT32_MAX; r = s->next[r])
        if (strlen(s->rows[r].name) == n && !memcmp(s->rows[r].name, name, n))
            return r;
    if (GROW(s->rows, s->n, s->cap) ||
        GROW(s->next, s->n, s->next_cap) ||
        !(s->rows[s->n].name = strndup(name, n)))
        return UINT32_MAX;
    tr_file_row_t *row = &s->rows[s->n];
    memset(row->ns, 0, sizeof row->ns);
    memset(row->count, 0, sizeof row->count);
    memset(row->bytes, 0, sizeof row->bytes);
    s->next[s->n] = first ? *first : UINT32_MAX;
    if (u64map_put(&s->names, h, (uint32_t)s->n))
        return UINT32_MAX;
    return (uint32_t)s->n++;
}

static int io_cb(void *ctx, const exp_event_t *ev)
{
    io_scan_t *s = ctx;
    if (ev->type != EXP_REC_IO)
        return 0;
    if (!s->started || ev->proc != s->proc) { /* descriptors are per process */
        u64map_free(&s->fds);
        s->proc = ev->proc;
        s->started = 1;
    }
    uint32_t row = UINT32_MAX;
    if (ev->name && s->by_fd && ev->fd >= 0 && !ev->err) { /* one descriptor of the file */
        char *nm = NULL;
        int len = asprintf(&nm, "%.*s (IOVFD=%u, FD=%lld)", (int)ev->namelen, ev->name, ++s->vfd,
                           (long long)ev->fd);
        if (len < 0 || (row = file_row(s, nm, (size_t)len)) == UINT32_MAX ||
            u64map_put(&s->fds, (uint64_t)ev->fd, row)) {
            free(len < 0 ? NULL : nm);
            return s->err = TALLY_ENOMEM;
        }
        free(nm);
    } else if (ev->name) { /* an open (that failed, when there is no descriptor), or a first use */
        if ((row = file_row(s, ev->name, ev->namelen)) == UINT32_MAX ||
            (ev->fd >= 0 && !ev->err && u64map_put(&s->fds, (uint64_t)ev->fd, row)))
            return s->err = TALLY_ENOMEM;
    } else if (ev->fd >= 0) {
        const uint32_t *r = u64map_get(&s->fds, (uint64_t)ev->fd);
        row = r ? *r : UINT32_MAX;
    }
    if (row == UINT32_MAX) { /* never named (or no descriptor: fflush(NULL)) */
        char nm[48];
        int len = ev->fd >= 0 ? snprintf(nm, sizeof nm, "<fd %lld>", (long long)ev->fd)
                              : snprintf(nm, sizeof nm, "<no descriptor>");
        if ((row = file_row(s, nm, (size_t)len)) == UINT32_MAX)
            return s->err = TALLY_ENOMEM;
    }
    if (!ev->err && (ev->call == EXP_IO_CLOSE || ev->call == EXP_IO_FCLOSE))
        u64map_remove(&s->fds, (uint64_t)ev->fd);
    if (!eng_event_selected(s->g, s->exp, ev))
        return 0;
    int k = ev->err ? TR_IO_ERROR : EXP_IO_IS_READ(ev->call) ? TR_IO_READ
            : EXP_IO_IS_WRITE(ev->call) ? TR_IO_WRITE : TR_IO_OTHER;
    tr_file_row_t *r = &s->rows[row];
    r->ns[k] += ev->weight;
    r->count[k]++;
    r->bytes[k] += ev->size;
    return 0;
}

static int cmp_files(const void *a, const void *b)
{
    const tr_file_row_t *x = a, *y = b;
    uint64_t tx = 0, ty = 0;
    for (int k = 0; k < TR_IO_NKINDS; k++) {
        tx += x->ns[k];
        ty += y->ns[k];
    }
    if (tx != ty)
        return tx > ty ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int io_rows(eng_t *g, exp_experiment_t **exps, size_t nexps, int by_fd,
                   tr_file_row_t **rows, size_t *n, tally_err_t *err);

int tr_io_files(eng_t *g, exp_experiment_t **exps, size_t nexps, tr_file_row_t **rows,
                size_t *n, tally_err_t *err)
{
    return io_rows(g, exps, nexps, 0, rows, n, err);
}

int tr_io_descriptors(eng_t *g, exp_experiment_t **exps, size_t nexps, tr_file_row_t **rows,
                      size_t *n, tally_err_t *err)
{
    return io_rows(g, exps, nexps, 1, rows, n, err);
}

static int io_rows(eng_t *g, exp_experiment_t **exps, size_t nexps, int by_fd,
                   tr_file_row_t **rows, size_t *n, tally_err_t *err)
{
    int rc = 0;
    io_scan_t s = { .g = g, .by_fd = by_fd };
    for (size_t x = 0; x < nexps && !rc; x++) {
        s.exp = (uint32_t)x;
        s.started = 0;
        rc = exp_scan(exps[x], eng_stacks(g, (uint32_t)x), io_cb, &s, NULL, err);
        if (s.err)
            rc = nomem(err);
    }
    u64map_free(&s.fds);
    u64map_free(&s.names);
    free(s.next);
    if (rc) {
        tr_free_files(s.rows, s.n);
        return rc < 0 ? rc : nomem(err);
    }
    /* files that only opened or only failed still show; names never used are dropped */
    size_t k = 0;
    for (size_t i = 0; i < s.n; i++) {
        uint64_t c = 0;
        for (int j = 0; j < TR_IO_NKINDS; j++)
            c += s.rows[i].count[j];
        if (c)
            s.rows[k++] = s.rows[i];
        else
            free(s.rows[i].name);
    }
    if (k)
        qsort(s.rows, k, sizeof *s.rows, cmp_files);
    *rows = s.rows;
    *n = k;
    return 0;
}

void tr_free_files(tr_file_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rows[i].name);
    free(rows);
}
