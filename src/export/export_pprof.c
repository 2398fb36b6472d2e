/*
 * export_pprof.c - pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
 * gzipped, as `go tool pprof` reads it.
 *
 * One sample type per metric asked (its name, unit "nanoseconds", "bytes", "count" or the
 * declared one), one sample per (thread, stack) with the thread as labels ("thread": its name or
 * number, "tid": its id) and the clock profiling interval of its process as a numeric label
 * ("period", unit "nanoseconds"; absent when clock profiling was off), locations per (load object, address) with one line per function the
 * engine maps the frame to (inlined functions innermost first, with the lines they were called
 * at), functions with their display and symbol names, mappings per load object with its build
 * id. Addresses are ELF addresses of the object's file (what symbols look up), so a mapping
 * starts at 0. Everything has functions and lines already: pprof does not symbolize.
 *
 * Streaming: a profile is a sequence of fields, and the repeated ones may come in any order, so
 * a sample is written as soon as it comes, each string, function, location and mapping the
 * first time a sample needs it (tables of what was written grow with distinct ones only). The
 * protobuf encoding is written here (varints and length-delimited fields); zlib's deflate makes
 * the gzip stream. See export.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/u64map.h"
#include "export/export.h"

/* ---- protobuf encoding ---------------------------------------------------------------------- */

typedef struct pbuf {
    uint8_t *b;
    size_t n, cap;
    int oom;
} pbuf_t;

static void pb_room(pbuf_t *p, size_t more)
{
    if (p->n + more <= p->cap)
        return;
    size_t ncap = p->cap ? p->cap * 2 : 256;
    while (ncap < p->n + more)
        ncap *= 2;
    uint8_t *nb = realloc(p->b, ncap);
    if (!nb) {
        p->oom = 1;
        return;
    }
    p->b = nb;
    p->cap = ncap;
}

static void pb_varint(pbuf_t *p, uint64_t v)
{
    pb_room(p, 10);
    if (p->oom)
        return;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        p->b[p->n++] = byte | (v ? 0x80 : 0);
    } while (v);
}

static void pb_bytes_raw(pbuf_t *p, const void *d, size_t n)
{
    if (!n) /* (d may then be NULL: a buffer nothing was written to yet) */
        return;
    pb_room(p, n);
    if (p->oom)
        return;
    memcpy(p->b + p->n, d, n);
    p->n += n;
}

enum { WT_VARINT = 0, WT_LEN = 2 };

static void pb_uint(pbuf_t *p, int field, uint64_t v)
{
    if (!v)
        return; /* proto3: a zero is the default, left out */
    pb_varint(p, (uint64_t)field << 3 | WT_VARINT);
    pb_varint(p, v);
}

static void pb_len(pbuf_t *p, int field, const void *d, size_t n)
{
    pb_varint(p, (uint64_t)field << 3 | WT_LEN);
    pb_varint(p, n);
    pb_bytes_raw(p, d, n);
}

/* ---- gzip output ---------------------------------------------------------------------------- */

typedef struct gzout {
    z_stream z;
    FILE *f;
    int failed;
    uint8_t buf[65536];
} gzout_t;

static int gz_init(gzout_t *g, FILE *f)
{
    memset(&g->z, 0, sizeof g->z);
    g->f = f;
    g->failed = 0;
    /* windowBits 15 + 16: a gzip header and trailer */
    return deflateInit2(&g->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK ? 0 : -1;
}

static void gz_put(gzout_t *g, const void *d, size_t n, int flush)
{
    g->z.next_in = (Bytef *)d;
    g->z.avail_in = (uInt)n;
    do {
        g->z.next_out = g->buf;
        g->z.avail_out = sizeof g->buf;
        int rc = deflate(&g->z, flush);
        if (rc == Z_STREAM_ERROR) {
            g->failed = 1;
            return;
        }
        size_t have = sizeof g->buf - g->z.avail_out;
        if (have && fwrite(g->buf, 1, have, g->f) != have)
            g->failed = 1;
    } while (g->z.avail_out == 0 && !g->failed);
}

/* ---- the profile ---------------------------------------------------------------------------- */

enum { PF_SAMPLE_TYPE = 1, PF_SAMPLE = 2, PF_MAPPING = 3, PF_LOCATION = 4, PF_FUNCTION = 5,
       PF_STRING = 6, PF_TIME = 9, PF_DURATION = 10, PF_PERIOD_TYPE = 11, PF_PERIOD = 12,
       PF_DEFAULT_TYPE = 14 };

/* A location: a frame's (load object, address) with the functions the engine maps it to. */
typedef struct loc_key {
    uint64_t obj;  /* sym object, or (1 << 63 | exp << 32 | proc) for a PC in no object */
    uint64_t addr;
    uint32_t first, nids; /* the first function and how many */
} loc_key_t;

typedef struct pp_ctx {
    ses_t *s;
    const xp_opts_t *o;
    gzout_t gz;
    pbuf_t top, msg, sub, ids;
    rep_names_t names;
    u64map_t strings;   /* string pointer -> index in the string table */
    uint32_t nstrings;
    uint8_t *fn_done;   /* by function id + 1: written */
    size_t nfn;
    uint8_t *map_done;  /* by sym object: its mapping written */
    size_t nmap;
    loc_key_t *locs;    /* the locations written: id = index + 1 */
    uint32_t *lslots;   /* open-addressing index into locs (0: empty, else index + 1) */
    size_t nlocs, loc_cap, lslot_cap;
    uint64_t *locids;   /* a sample's location ids */
    size_t nlocids;
    char tname[64];
} pp_ctx_t;

/* Flushes the top-level fields gathered in c->top into the gzip stream. */
static void flush_top(pp_ctx_t *c, int final)
{
    if (c->top.n || final)
        gz_put(&c->gz, c->top.b, c->top.n, final ? Z_FINISH : Z_NO_FLUSH);
    c->top.n = 0;
}

/* The string table index of str (written the first time). Strings are keyed by pointer (the
 * session owns them for the whole export); an equal string under two pointers is two entries,
 * which the format allows. */
static uint64_t str_index(pp_ctx_t *c, const char *str)
{
    if (!str || !*str)
        return 0;
    int found;
    uint32_t *slot = u64map_slot(&c->strings, (uint64_t)(uintptr_t)str, &found);
    if (!slot) {
        c->top.oom = 1;
        return 0;
    }
    if (!found) {
        *slot = c->nstrings++;
        pb_len(&c->top, PF_STRING, str, strlen(str));
    }
    return *slot;
}

/* A transient string (a number made up for a label): always a new entry. */
static uint64_t str_new(pp_ctx_t *c, const char *str)
{
    pb_len(&c->top, PF_STRING, str, strlen(str));
    return c->nstrings++;
}

static int grow_flags(uint8_t **a, size_t *n, size_t want)
{
    if (want <= *n)
        return 0;
    size_t nn = *n ? *n : 256;
    while (nn < want)
        nn *= 2;
    uint8_t *na = realloc(*a, nn);
    if (!na)
        return -1;
    memset(na + *n, 0, nn - *n);
    *a = na;
    *n = nn;
    return 0;
}

static void write_mapping(pp_ctx_t *c, uint32_t obj)
{
    if (grow_flags(&c->map_done, &c->nmap, (size_t)obj + 1)) {
        c->top.oom = 1;
        return;
    }
    if (c->map_done[obj])
        return;
    c->map_done[obj] = 1;
    const sym_object_t *so = sym_object(c->s->sym, obj);
    uint64_t file = str_index(c, so->path), bid = str_index(c, so->buildid);
    pbuf_t *m = &c->msg;
    m->n = 0;
    pb_uint(m, 1, (uint64_t)obj + 1);
    pb_uint(m, 2, 0);
    pb_uint(m, 3, UINT64_MAX >> 1);
    pb_uint(m, 5, file);
    pb_uint(m, 6, bid);
    pb_uint(m, 7, 1); /* has_functions, has_filenames, has_line_numbers, has_inline_frames */
    pb_uint(m, 8, 1);
    pb_uint(m, 9, 1);
    pb_uint(m, 10, 1);
    pb_len(&c->top, PF_MAPPING, m->b, m->n);
}

static void write_function(pp_ctx_t *c, uint32_t id, const char *file)
{
    if (grow_flags(&c->fn_done, &c->nfn, (size_t)id + 1)) {
        c->top.oom = 1;
        return;
    }
    if (c->fn_done[id])
        return;
    c->fn_done[id] = 1;
    const sym_func_t *f = sym_func(c->s->sym, id);
    const char *dname = xp_func_name(c->s, &c->names, c->o->namefmt, id);
    uint64_t name = str_index(c, dname), fl = str_index(c, file);
    /* the symbol's name only when it differs: pprof demangles (and so shortens) a name equal to
     * its system name, and "<static>@0x4080 (lib)" would lose its brackets */
    uint64_t sys = f->mangled && strcmp(f->mangled, dname) ? str_index(c, f->mangled) : 0;
    pbuf_t *m = &c->msg;
    m->n = 0;
    pb_uint(m, 1, (uint64_t)id + 1);
    pb_uint(m, 2, name);
    pb_uint(m, 3, sys);
    pb_uint(m, 4, fl);
    pb_len(&c->top, PF_FUNCTION, m->b, m->n);
}

static uint64_t loc_hash(const loc_key_t *k)
{
    uint64_t h = k->obj * 0x9e3779b97f4a7c15ULL ^ k->addr * 0xc2b2ae3d27d4eb4fULL ^
                 ((uint64_t)k->first << 32 | k->nids) * 0x165667b19e3779f9ULL;
    return u64map_hash(h); /* keyed: addresses an experiment chooses cannot collide */
}

/* The id of location k, 0 when it is new (the caller writes it: id nlocs after this). */
static uint64_t loc_find(pp_ctx_t *c, const loc_key_t *k, int *is_new)
{
    *is_new = 0;
    if (2 * (c->nlocs + 1) > c->lslot_cap) { /* rehash at half full */
        size_t ncap = c->lslot_cap ? c->lslot_cap * 2 : 4096;
        uint32_t *ns = calloc(ncap, sizeof *ns);
        if (!ns) {
            c->top.oom = 1;
            return 0;
        }
        for (size_t i = 0; i < c->nlocs; i++) {
            size_t h = loc_hash(&c->locs[i]) & (ncap - 1);
            while (ns[h])
                h = (h + 1) & (ncap - 1);
            ns[h] = (uint32_t)i + 1;
        }
        free(c->lslots);
        c->lslots = ns;
        c->lslot_cap = ncap;
    }
    size_t h = loc_hash(k) & (c->lslot_cap - 1);
    for (; c->lslots[h]; h = (h + 1) & (c->lslot_cap - 1)) {
        const loc_key_t *o = &c->locs[c->lslots[h] - 1];
        if (o->obj == k->obj && o->addr == k->addr && o->first == k->first && o->nids == k->nids)
            return c->lslots[h];
    }
    if (c->nlocs == c->loc_cap) {
        size_t ncap = c->loc_cap ? c->loc_cap * 2 : 1024;
        loc_key_t *nl = realloc(c->locs, ncap * sizeof *nl);
        if (!nl) {
            c->top.oom = 1;
            return 0;
        }
        c->locs = nl;
        c->loc_cap = ncap;
    }
    c->locs[c->nlocs] = *k;
    c->lslots[h] = (uint32_t)++c->nlocs;
    *is_new = 1;
    return c->nlocs;
}

/* The location of raw frame f of m, whose functions are m->ids[i0 .. i1). */
static uint64_t location(pp_ctx_t *c, const eng_mapped_t *m, uint32_t f, uint32_t i0,
                         uint32_t i1)
{
    uint32_t obj = m->fobj[f];
    loc_key_t k = { obj, m->faddr[f], m->ids[i0], i1 - i0 };
    if (obj == UINT32_MAX) {
        k.obj = 1ULL << 63 | (uint64_t)m->exp << 32 | m->proc;
        k.addr = m->pcs[f];
    }
    int is_new;
    uint64_t id = loc_find(c, &k, &is_new);
    if (!is_new)
        return id;
    /* lines: the innermost function at the address's line, each next one at the line the one
     * inside it was inlined at */
    const char *file = NULL;
    uint32_t line = 0;
    sym_inline_t inl[64];
    int ninl = 0;
    if (obj != UINT32_MAX) {
        write_mapping(c, obj);
        if (sym_line_at(c->s->sym, obj, m->faddr[f], &file, &line) < 0)
            file = NULL, line = 0;
        if (i1 - i0 > 1)
            ninl = sym_inlines_at(c->s->sym, obj, m->faddr[f], inl, 64);
    }
    /* each function's file: the innermost one's is the address's, each next one's the file of
     * the call site inlined into it (pprof names a line's file by its function) */
    int chain = ninl == (int)(i1 - i0) - 1;
    for (uint32_t i = i0; i < i1; i++)
        write_function(c, m->ids[i], i == i0 ? file : chain ? inl[i - i0 - 1].call_file : NULL);
    pbuf_t *msg = &c->msg, *sub = &c->sub;
    msg->n = 0;
    pb_uint(msg, 1, id);
    pb_uint(msg, 2, obj != UINT32_MAX ? (uint64_t)obj + 1 : 0);
    pb_uint(msg, 3, k.addr);
    for (uint32_t i = i0; i < i1; i++) {
        uint32_t ln = i == i0 ? line : chain ? inl[i - i0 - 1].call_line : 0;
        sub->n = 0;
        pb_uint(sub, 1, (uint64_t)m->ids[i] + 1);
        pb_uint(sub, 2, ln);
        pb_len(msg, 4, sub->b, sub->n);
    }
    pb_len(&c->top, PF_LOCATION, msg->b, msg->n);
    return id;
}

static int pp_stack(void *ctx, const rep_stack_t *st)
{
    pp_ctx_t *c = ctx;
    const eng_mapped_t *m = st->m;
    int any = 0;
    for (int k = 0; k < c->o->nmetrics; k++)
        any |= st->v[c->o->metrics[k]] != 0;
    if (!any)
        return 0;
    /* the locations, leaf first: each run of ids from one raw frame is one location */
    c->ids.n = 0;
    for (uint32_t i = 0; i < m->n;) {
        uint32_t j = i + 1;
        while (j < m->n && m->frame[j] == m->frame[i])
            j++;
        pb_varint(&c->ids, location(c, m, m->frame[i], i, j));
        i = j;
    }
    /* the thread's labels */
    const eng_thread_t *t = st->thread;
    uint64_t tkey = str_index(c, "thread"), tidkey = str_index(c, "tid");
    uint64_t tname;
    if (t->info && t->info->name && *t->info->name) {
        tname = str_index(c, t->info->name);
    } else {
        snprintf(c->tname, sizeof c->tname, "thread %u", t->number);
        tname = str_new(c, c->tname);
    }
    pbuf_t *msg = &c->msg, *sub = &c->sub;
    msg->n = 0;
    pb_len(msg, 1, c->ids.b, c->ids.n);
    sub->n = 0;
    for (int k = 0; k < c->o->nmetrics; k++) {
        uint64_t v = st->v[c->o->metrics[k]];
        pb_varint(sub, v > INT64_MAX ? INT64_MAX : v);
    }
    pb_len(msg, 2, sub->b, sub->n);
    sub->n = 0;
    pb_uint(sub, 1, tkey);
    pb_uint(sub, 2, tname);
    pb_len(msg, 3, sub->b, sub->n);
    sub->n = 0;
    pb_uint(sub, 1, tidkey);
    pb_uint(sub, 3, t->tid);
    pb_len(msg, 3, sub->b, sub->n);
    /* the clock profiling interval of the thread's process (none when clock profiling was off) */
    const exp_process_t *proc = c->s->exps[t->exp]->procs[t->proc];
    if (proc->clock_ns) {
        sub->n = 0;
        pb_uint(sub, 1, str_index(c, "period"));
        pb_uint(sub, 3, proc->clock_ns);
        pb_uint(sub, 4, str_index(c, "nanoseconds"));
        pb_len(msg, 3, sub->b, sub->n);
    }
    pb_len(&c->top, PF_SAMPLE, msg->b, msg->n);
    if (c->top.oom || c->msg.oom || c->sub.oom || c->ids.oom)
        return TALLY_ENOMEM;
    if (c->top.n >= 1 << 16)
        flush_top(c, 0);
    return c->gz.failed ? TALLY_EIO : 0;
}

int xp_pprof(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err)
{
    pp_ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return tally_errf(err, TALLY_ENOMEM, "out of memory writing the pprof export");
    c->s = s;
    c->o = o;
    int rc = rep_stack_names(s, o->namefmt, &c->names, err);
    if (rc) {
        free(c);
        return rc;
    }
    if (gz_init(&c->gz, out)) {
        rep_names_free(&c->names);
        free(c);
        return tally_errf(err, TALLY_ENOMEM, "out of memory starting the gzip stream");
    }
    pb_len(&c->top, PF_STRING, "", 0); /* string 0 is "" */
    c->nstrings = 1;
    for (int k = 0; k < o->nmetrics; k++) {
        const eng_metric_def_t *d = eng_metric(s->eng, o->metrics[k]);
        uint64_t type = str_index(c, d->name), unit = str_index(c, xp_unit(d));
        c->msg.n = 0;
        pb_uint(&c->msg, 1, type);
        pb_uint(&c->msg, 2, unit);
        pb_len(&c->top, PF_SAMPLE_TYPE, c->msg.b, c->msg.n);
        if (k == 0) {
            pb_len(&c->top, PF_PERIOD_TYPE, c->msg.b, c->msg.n);
            pb_uint(&c->top, PF_DEFAULT_TYPE, type);
        }
    }
    uint64_t t0, t1;
    double span = rep_run_span(s, &t0, &t1);
    const exp_process_t *root = s->nexps && s->exps[0]->nprocs ? s->exps[0]->procs[0] : NULL;
    if (root && root->real_start)
        pb_uint(&c->top, PF_TIME, root->real_start);
    if (span > 0)
        pb_uint(&c->top, PF_DURATION, t1 - t0);
    if (root && root->clock_ns)
        pb_uint(&c->top, PF_PERIOD, root->clock_ns);
    rc = rep_stacks(s, 1, o->metrics, o->nmetrics, pp_stack, c, err);
    if (rc == TALLY_ENOMEM && !err->code)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory writing the pprof export");
    if (rc == TALLY_EIO && !err->code)
        rc = tally_errf(err, TALLY_EIO, "writing the pprof export failed");
    if (!rc) {
        flush_top(c, 1);
        if (c->top.oom)
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory writing the pprof export");
    }
    if (!rc && c->gz.failed)
        rc = tally_errf(err, TALLY_EIO, "writing the pprof export failed");
    deflateEnd(&c->gz.z);
    rep_names_free(&c->names);
    u64map_free(&c->strings);
    free(c->fn_done);
    free(c->map_done);
    free(c->locs);
    free(c->lslots);
    free(c->top.b);
    free(c->msg.b);
    free(c->sub.b);
    free(c->ids.b);
    free(c);
    return rc;
}
