/*
 * export_speedscope.c - speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * the functions as shared frames, then one sampled profile per thread whose samples are the
 * thread's distinct stacks (root first) weighted by their value of the first metric asked (unit
 * "nanoseconds", "bytes" or "none"), so its left-heavy and sandwich views show the function
 * table's values. (The order of a thread's samples over time is the chrome export's.)
 *
 * Then, for traced data, evented profiles (open and close events of frames, strictly nested): per
 * thread with traced calls (sync waits, I/O calls, the collector API's traced kinds: MPI calls
 * among them) one in nanoseconds, each call laid out over time as the chrome export lays it out
 * (ending at its time stamp and lasting its duration: for a kind of the collector API its kind's
 * first metric of time, xp_traced_ns; never overlapping the call before it) with
 * its call stack open while it lasts; per thread with heap allocations one in bytes, each
 * allocation the interval of its size after the thread's allocations before it. A stack shared,
 * root first, with the previous call that ends where it begins stays open. So a frame's self and
 * total values there are the function's exclusive and inclusive traced time (and allocated
 * bytes) of that thread. Profiled blocks have no time (their paths are whole-run sums): they are
 * not events. Calls of 0 ns and allocations of 0 bytes are left out (nothing to show).
 *
 * Streaming: frames are written from the function table, then each thread's samples as they
 * come (rep_stacks gives them thread by thread); only the weights of the current thread are kept
 * to be written after its samples. Traced events come in time order, threads interleaved: each
 * thread's evented profile is made in a buffer of its own, spilled to a temporary file in chunks
 * when it grows (memory grows with the threads, not with the events), and written out at the
 * end. See export.h.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

#include "base/sink.h"
#include "export/export.h"

#define EV_SPILL 2048 /* a track's buffer goes to the spill file past this (small: a test spills) */

enum { EV_TIME, EV_HEAP, EV_NKINDS };

typedef struct ev_track { /* one evented profile of a thread, being made */
    char *buf;
    size_t len, cap;
    uint64_t *spill; /* (offset, length) pairs of its chunks in the spill file */
    size_t nspill, spill_cap;
    uint32_t *open; /* frame indices of the open frames, root first */
    size_t nopen, open_cap;
    uint64_t start, end; /* its first "at", and where its last interval ended */
    int any;
} ev_track_t;

typedef struct ss_ctx {
    ses_t *s;
    const xp_opts_t *o;
    sink_t out;
    rep_names_t names;
    uint32_t *frame_of; /* by function id: its index among the frames */
    size_t nfuncs;
    const eng_thread_t *cur; /* the thread whose profile is open */
    uint64_t *weights, total;
    size_t nw, wcap;
    int nprofiles;
    const char *unit;
    /* evented profiles: [thread index * EV_NKINDS + kind] */
    ev_track_t *tracks;
    size_t ntracks;
    FILE *spill;
    uint64_t spilled;
    uint32_t *ids; /* an event's frames, root first */
    size_t ids_cap;
    int oom; /* a failure while buffering: TALLY_ENOMEM or TALLY_EIO */
    xp_kinds_t kinds; /* the time metrics of the collector API's kinds */
    tally_err_t *err;
} ss_ctx_t;

static void end_profile(ss_ctx_t *c)
{
    if (!c->cur)
        return;
    sink_printf(&c->out, "],\"weights\":[");
    for (size_t i = 0; i < c->nw; i++)
        sink_printf(&c->out, "%s%llu", i ? "," : "", (unsigned long long)c->weights[i]);
    sink_printf(&c->out, "],\"startValue\":0,\"endValue\":%llu}", (unsigned long long)c->total);
    c->cur = NULL;
    c->nw = 0;
    c->total = 0;
}

static void begin_profile(ss_ctx_t *c, const eng_thread_t *t)
{
    char buf[300];
    const char *name = t->info && t->info->name && *t->info->name ? t->info->name : NULL;
    const exp_process_t *p = c->s->exps[t->exp]->procs[t->proc];
    if (name)
        snprintf(buf, sizeof buf, "%s (pid %u, tid %u)", name, p->pid, t->tid);
    else
        snprintf(buf, sizeof buf, "thread %u (pid %u, tid %u)", t->number, p->pid, t->tid);
    sink_printf(&c->out, "%s\n{\"type\":\"sampled\",\"name\":", c->nprofiles++ ? "," : "");
    sink_json_str(&c->out, buf);
    sink_printf(&c->out, ",\"unit\":\"%s\",\"samples\":[", c->unit);
    c->cur = t;
}

static int ss_stack(void *ctx, const rep_stack_t *st)
{
    ss_ctx_t *c = ctx;
    uint64_t v = st->v[c->o->metrics[0]];
    if (!v || !st->m->n)
        return 0;
    if (st->thread != c->cur) {
        end_profile(c);
        begin_profile(c, st->thread);
    }
    if (c->nw == c->wcap) {
        size_t ncap = c->wcap ? c->wcap * 2 : 1024;
        uint64_t *nw = realloc(c->weights, ncap * sizeof *nw);
        if (!nw)
            return TALLY_ENOMEM;
        c->weights = nw;
        c->wcap = ncap;
    }
    c->weights[c->nw] = v;
    sink_printf(&c->out, "%s[", c->nw++ ? "," : "");
    c->total += v;
    for (uint32_t i = st->m->n; i-- > 0;) {
        uint32_t id = st->m->ids[i];
        uint32_t f = id < c->nfuncs ? c->frame_of[id] : UINT32_MAX;
        if (f == UINT32_MAX)
            return TALLY_ENOTFOUND;
        sink_printf(&c->out, "%u%s", f, i ? "," : "");
    }
    sink_printf(&c->out, "]");
    return sink_error(&c->out) ? TALLY_EIO : 0;
}

/* Appends to track k's buffer (spilling it first when full). */
static void tk_printf(ss_ctx_t *c, ev_track_t *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tk_printf(ss_ctx_t *c, ev_track_t *k, const char *fmt, ...)
{
    if (k->len > EV_SPILL) {
        if (!c->spill && !(c->spill = tmpfile())) {
            c->oom = TALLY_EIO;
            return;
        }
        if (fwrite(k->buf, 1, k->len, c->spill) != k->len ||
            GROW(k->spill, k->nspill + 1, k->spill_cap)) {
            c->oom = TALLY_EIO;
            return;
        }
        k->spill[k->nspill++] = c->spilled;
        k->spill[k->nspill++] = k->len;
        c->spilled += k->len;
        k->len = 0;
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(k->buf ? k->buf + k->len : NULL, k->buf ? k->cap - k->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            c->oom = TALLY_EIO;
            return;
        }
        if (k->buf && k->len + (size_t)n < k->cap) {
            k->len += (size_t)n;
            return;
        }
        size_t ncap = k->cap ? k->cap * 2 : 4096;
        while (ncap <= k->len + (size_t)n)
            ncap *= 2;
        char *nb = realloc(k->buf, ncap);
        if (!nb) {
            c->oom = TALLY_ENOMEM;
            return;
        }
        k->buf = nb;
        k->cap = ncap;
    }
}

static void tk_event(ss_ctx_t *c, ev_track_t *k, char type, uint32_t frame, uint64_t at)
{
    tk_printf(c, k, "%s{\"type\":\"%c\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
              k->any++ ? "," : "", type, frame, at);
}

/* The interval [start, start + w) of a stack on track k: frames shared with the open ones stay
 * open when it begins where the last one ended. */
static int tk_interval(ss_ctx_t *c, ev_track_t *k, const uint32_t *frames, uint32_t n,
                       uint64_t start, uint64_t w)
{
    if (!k->any && !k->nopen)
        k->start = start;
    size_t same = 0;
    if (start == k->end)
        while (same < k->nopen && same < n && k->open[same] == frames[same])
            same++;
    while (k->nopen > same)
        tk_event(c, k, 'C', k->open[--k->nopen], k->end);
    if (n && GROW(k->open, n - 1, k->open_cap))
        return TALLY_ENOMEM;
    for (uint32_t i = (uint32_t)same; i < n; i++) {
        k->open[k->nopen++] = frames[i];
        tk_event(c, k, 'O', frames[i], start);
    }
    k->end = start + w;
    return c->oom;
}

static int ss_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf_fn,
                    uint32_t thread)
{
    (void)leaf_fn;
    ss_ctx_t *c = ctx;
    const eng_thread_t *th = eng_thread(c->s->eng, thread);
    int kind;
    uint64_t w;
    if (ev->type == EXP_REC_SYNC || ev->type == EXP_REC_IO || ev->type == EXP_REC_TRACE) {
        const char *kname;
        int rc = xp_traced_ns(c->s, &c->kinds, th, ev, v, &w, &kname);
        if (rc)
            return rc;
        kind = EV_TIME;
    } else if (ev->type == EXP_REC_HEAP_ALLOC) {
        kind = EV_HEAP;
        w = ev->size;
    } else {
        return 0;
    }
    if (!w || ev->stack == EXP_NO_STACK)
        return 0;
    /* (mapped here, not for every event: clock samples are most events and need no mapping) */
    eng_mapped_t mm;
    int rc = eng_map_stack(c->s->eng, th->exp, ev->stack, ENG_KIND_FUNCTION, &mm, c->err);
    if (rc)
        return rc;
    const eng_mapped_t *m = &mm;
    if (!m->n)
        return 0;
    size_t ti = th->number - 1, slot = ti * EV_NKINDS + (size_t)kind;
    if (slot >= c->ntracks) {
        size_t nn = c->ntracks ? c->ntracks : 16;
        while (nn <= slot)
            nn *= 2;
        ev_track_t *nt = realloc(c->tracks, nn * sizeof *nt);
        if (!nt)
            return TALLY_ENOMEM;
        memset(nt + c->ntracks, 0, (nn - c->ntracks) * sizeof *nt);
        c->tracks = nt;
        c->ntracks = nn;
    }
    ev_track_t *k = &c->tracks[slot];
    if (GROW(c->ids, m->n - 1, c->ids_cap))
        return TALLY_ENOMEM;
    for (uint32_t i = 0; i < m->n; i++) {
        uint32_t id = m->ids[m->n - 1 - i];
        uint32_t f = id < c->nfuncs ? c->frame_of[id] : UINT32_MAX;
        if (f == UINT32_MAX)
            return TALLY_ENOTFOUND;
        c->ids[i] = f;
    }
    uint64_t start;
    if (kind == EV_TIME) { /* ends at its time stamp, after the call before it */
        uint64_t t0 = eng_run_start(c->s->eng);
        uint64_t t = ev->t > t0 ? ev->t - t0 : 0;
        start = t > w ? t - w : 0;
        if (k->any && start < k->end)
            start = k->end;
    } else {
        start = k->end; /* bytes allocated before it */
    }
    return tk_interval(c, k, c->ids, m->n, start, w);
}

/* Whether the selection has traced data: a metric with data that is neither the clock's, the
 * thread states', a counter's nor the profiled blocks'. */
static int has_traced(ses_t *s)
{
    static const char *const untraced[] = { "clock", "states", "counter", "blocks" };
    for (int m = 0; m < eng_nmetrics(s->eng); m++) {
        const char *ev = eng_metric(s->eng, m)->event;
        int traced = ev && eng_has_metric(s->eng, m);
        for (size_t i = 0; traced && i < sizeof untraced / sizeof *untraced; i++)
            traced = strcmp(ev, untraced[i]) != 0;
        if (traced)
            return 1;
    }
    return 0;
}

/* Writes the evented profiles made, thread by thread, and frees them. */
static int write_evented(ss_ctx_t *c)
{
    static const char *const what[EV_NKINDS] = { "traced calls", "heap allocations" };
    static const char *const unit[EV_NKINDS] = { "nanoseconds", "bytes" };
    int rc = c->oom;
    char chunk[EV_SPILL];
    for (size_t slot = 0; slot < c->ntracks && !rc; slot++) {
        ev_track_t *k = &c->tracks[slot];
        if (!k->any)
            continue;
        if (c->spill && fseeko(c->spill, 0, SEEK_END)) { /* (a chunk read before moved it) */
            rc = TALLY_EIO;
            break;
        }
        while (k->nopen) /* the last interval ends */
            tk_event(c, k, 'C', k->open[--k->nopen], k->end);
        if ((rc = c->oom))
            break;
        const eng_thread_t *t = eng_thread(c->s->eng, slot / EV_NKINDS);
        char buf[340];
        const char *name = t->info && t->info->name && *t->info->name ? t->info->name : NULL;
        const exp_process_t *p = c->s->exps[t->exp]->procs[t->proc];
        if (name)
            snprintf(buf, sizeof buf, "%s (pid %u, tid %u): %s", name, p->pid, t->tid,
                     what[slot % EV_NKINDS]);
        else
            snprintf(buf, sizeof buf, "thread %u (pid %u, tid %u): %s", t->number, p->pid, t->tid,
                     what[slot % EV_NKINDS]);
        sink_printf(&c->out, "%s\n{\"type\":\"evented\",\"name\":", c->nprofiles++ ? "," : "");
        sink_json_str(&c->out, buf);
        sink_printf(&c->out, ",\"unit\":\"%s\",\"startValue\":%llu,\"endValue\":%llu,"
                    "\"events\":[", unit[slot % EV_NKINDS], (unsigned long long)k->start,
                    (unsigned long long)k->end);
        /* the chunks are JSON made here (numbers only): copied as they are */
        for (size_t i = 0; i < k->nspill && !rc; i += 2) {
            if (fseeko(c->spill, (off_t)k->spill[i], SEEK_SET)) {
                rc = TALLY_EIO;
                break;
            }
            for (uint64_t left = k->spill[i + 1]; left && !rc;) {
                size_t n = left < sizeof chunk ? (size_t)left : sizeof chunk;
                if (fread(chunk, 1, n, c->spill) != n || fwrite(chunk, 1, n, c->out.f) != n)
                    rc = TALLY_EIO;
                left -= n;
            }
        }
        if (!rc && k->len && fwrite(k->buf, 1, k->len, c->out.f) != k->len)
            rc = TALLY_EIO;
        sink_printf(&c->out, "]}");
        free(k->buf);
        free(k->spill);
        free(k->open);
        memset(k, 0, sizeof *k);
    }
    return rc;
}

static void free_tracks(ss_ctx_t *c)
{
    for (size_t i = 0; i < c->ntracks; i++) {
        free(c->tracks[i].buf);
        free(c->tracks[i].spill);
        free(c->tracks[i].open);
    }
    free(c->tracks);
    free(c->ids);
    if (c->spill)
        fclose(c->spill);
}

int xp_speedscope(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err)
{
    ss_ctx_t c = { .s = s, .o = o, .err = err };
    const eng_metric_def_t *d = eng_metric(s->eng, o->metrics[0]);
    c.unit = d->time ? "nanoseconds" : !strcmp(d->unit, "bytes") ? "bytes" : "none";
    const eng_table_t *t = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    int rc = rep_names_build(s->eng, t, o->namefmt, &c.names, err);
    if (rc)
        return rc;
    c.nfuncs = t->nobjects;
    c.frame_of = malloc((c.nfuncs ? c.nfuncs : 1) * sizeof *c.frame_of);
    if (!c.frame_of) {
        rep_names_free(&c.names);
        return tally_errf(err, TALLY_ENOMEM, "out of memory writing the speedscope export");
    }
    sink_file(&c.out, out);
    sink_printf(&c.out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                "\"exporter\":\"tally\",\"name\":");
    const exp_process_t *root = s->nexps && s->exps[0]->nprocs ? s->exps[0]->procs[0] : NULL;
    sink_json_str(&c.out, root && root->argc ? root->argv[0] : "tally");
    sink_printf(&c.out, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
    uint32_t nf = 0;
    for (size_t id = 0; id < c.nfuncs; id++) {
        c.frame_of[id] = UINT32_MAX;
        if (!t->present[id])
            continue;
        c.frame_of[id] = nf;
        sink_printf(&c.out, "%s\n{\"name\":", nf++ ? "," : "");
        sink_json_str(&c.out, xp_func_name(s, &c.names, o->namefmt, (uint32_t)id));
        const sym_func_t *f = sym_func(s->sym, (uint32_t)id);
        const char *file;
        uint32_t line;
        if (f->object != UINT32_MAX && sym_line_at(s->sym, f->object, f->addr, &file, &line) == 0) {
            sink_printf(&c.out, ",\"file\":");
            sink_json_str(&c.out, file);
            sink_printf(&c.out, ",\"line\":%u", line);
        }
        sink_printf(&c.out, "}");
    }
    sink_printf(&c.out, "]},\"profiles\":[");
    rc = rep_stacks(s, 1, o->metrics, 1, ss_stack, &c, err);
    if (!rc) {
        end_profile(&c);
        if (has_traced(s)) /* (a scan of every event, only for data that has such events) */
            rc = eng_foreach_event(s->eng, ss_event, &c, err);
    }
    if (!rc)
        rc = write_evented(&c);
    if (!rc)
        sink_printf(&c.out, "\n]}\n");
    if (rc == TALLY_ENOMEM && !err->code)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory writing the speedscope export");
    if (rc == TALLY_ENOTFOUND && !err->code)
        rc = tally_errf(err, TALLY_ENOTFOUND, "a stack names a function the table does not have");
    if ((rc == TALLY_EIO && !err->code) || (!rc && sink_error(&c.out)))
        rc = tally_errf(err, TALLY_EIO, "writing the speedscope export failed");
    free(c.frame_of);
    xp_kinds_free(&c.kinds);
    free(c.weights);
    free_tracks(&c);
    rep_names_free(&c.names);
    return rc;
}
