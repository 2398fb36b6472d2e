/*
 * export_chrome.c - Chrome's Trace Event JSON (chrome://tracing, Perfetto's legacy importer,
 * speedscope): per thread over time, its clock samples as strictly nested slices, its traced
 * calls (sync waits, I/O, traced kinds of the collector API) as slices on a track of their own
 * beside it, heap calls as instant events there, sample packets as instant events of the process.
 *
 * Samples: each clock sample of a thread stands for its value of the first metric asked (a time
 * metric, ns) and is laid out as the interval that ends at its time stamp, started no earlier
 * than where the thread's previous sample ended (a sample never overlaps the one before it).
 * Frames that a sample shares, root first, with the sample just before it (ending where it
 * starts) stay open: one slice spans them. So a slice's duration is the sum of its samples'
 * values, and a reader's per-function self and total times are the function table's exclusive
 * and inclusive values, to the nanosecond (timestamps are microseconds with three decimals).
 * Traced calls are laid out the same way on their track (a call ends at its time stamp and lasts
 * its duration, never overlapping the previous one), so each track nests strictly. Slices are
 * written as B/E pairs, never as X events with a duration: a reader adds ts and dur in binary
 * floating point, and a call ending where the next begins would then end 1e-11 us after the
 * next one's start (speedscope's importer, seeing the two overlap, counted the wait of another
 * thread on the main thread's track); an E's time stamp is the exact decimal of the next B's.
 *
 * Streaming: events are written as they come (in time order within each process); what is kept
 * is per thread (its open frames). pid is the process's pid, tid the thread's id; the traced
 * track of a thread has tid 1000000000 + its number. See export.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/xbuf.h"

#define TRACED_TID 1000000000u

typedef struct ch_thread {
    uint32_t *open; /* function ids of the open slices, root first */
    uint32_t nopen, cap;
    uint64_t end;       /* where its last sample ended (ns since the run's start) */
    uint64_t trace_end; /* where its last traced call ended */
    int named;
    char pre[48];       /* ",\"pid\":P,\"tid\":T,\"ts\":" of its slices */
    size_t npre;
} ch_thread_t;

typedef struct ch_ctx {
    ses_t *s;
    const xp_opts_t *o;
    xbuf_t out;
    rep_names_t names;
    ch_thread_t *th; /* by thread index (number - 1) */
    size_t nth;
    uint64_t t0;
    int first;
    int metric;
    uint32_t *ids; /* a sample's ids, root first */
    size_t ids_cap;
    xb_names_t jname; /* by function id: its name as a JSON string, once needed */
    uint64_t ts_ns;   /* the last time stamp formatted, and its text */
    char ts[24];
    size_t nts;
} ch_ctx_t;

static void sep(ch_ctx_t *c)
{
    if (c->first)
        xb_char(&c->out, '\n');
    else
        xb_put(&c->out, ",\n", 2);
    c->first = 0;
}

/* A time stamp in ns since the run's start, as microseconds with three decimals. */
static void put_ts(ch_ctx_t *c, uint64_t ns)
{
    char d[24];
    xb_put(&c->out, d, xb_fmt_us3(d, ns));
}

static uint32_t pid_of(ch_ctx_t *c, const eng_thread_t *t)
{
    return c->s->exps[t->exp]->procs[t->proc]->pid;
}

/* Function id's name as a JSON string literal, escaped once and kept: a trace names the same
 * functions millions of times. */
static const char *json_name(ch_ctx_t *c, uint32_t id, size_t *len)
{
    const char *k = xb_names_get(&c->jname, id, len);
    if (k)
        return k;
    char *e = xb_escape(xp_func_name(c->s, &c->names, c->o->namefmt, id), 1, len);
    if (!e || xb_names_set(&c->jname, id, e, *len)) {
        c->out.error = 1;
        *len = 3;
        return "\"?\"";
    }
    return e;
}

/* A B or E event of function id on thread t's track at ns since the run's start: the thread's
 * fixed part made once, the time stamp once per time (a sample closes and opens its slices at one
 * time). */
static void be(ch_ctx_t *c, const eng_thread_t *t, ch_thread_t *ct, char ph, uint32_t id,
               uint64_t ns)
{
    size_t nlen;
    const char *name = json_name(c, id, &nlen);
    if (!ct->npre) {
        char *p = ct->pre;
        memcpy(p, "\",\"pid\":", 8);
        p += 8;
        p += xb_fmt_u64(p, pid_of(c, t));
        memcpy(p, ",\"tid\":", 7);
        p += 7;
        p += xb_fmt_u64(p, t->tid);
        memcpy(p, ",\"ts\":", 6);
        p += 6;
        ct->npre = (size_t)(p - ct->pre);
    }
    if (ns != c->ts_ns || !c->nts) {
        c->ts_ns = ns;
        c->nts = xb_fmt_us3(c->ts, ns);
    }
    if (c->first)
        xb_str(&c->out, "\n{\"ph\":\"");
    else
        xb_put(&c->out, ",\n{\"ph\":\"", sizeof ",\n{\"ph\":\"" - 1);
    c->first = 0;
    xb_char(&c->out, ph);
    xb_put(&c->out, ct->pre, ct->npre);
    xb_put(&c->out, c->ts, c->nts);
    xb_put(&c->out, ",\"name\":", 8);
    xb_put(&c->out, name, nlen);
    xb_char(&c->out, '}');
}

static void name_thread(ch_ctx_t *c, const eng_thread_t *t, ch_thread_t *ct)
{
    if (ct->named)
        return;
    ct->named = 1;
    char buf[300];
    const char *name = t->info && t->info->name && *t->info->name ? t->info->name : NULL;
    for (int traced = 0; traced < 2; traced++) {
        sep(c);
        xb_str(&c->out, "{\"ph\":\"M\",\"pid\":");
        xb_u64(&c->out, pid_of(c, t));
        xb_str(&c->out, ",\"tid\":");
        xb_u64(&c->out, traced ? TRACED_TID + t->number : t->tid);
        xb_str(&c->out, ",\"name\":\"thread_name\",\"args\":{\"name\":");
        snprintf(buf, sizeof buf, "%s%s%u%s", name ? name : "thread ", name ? " (" : "",
                 name ? t->tid : t->number, traced ? (name ? ") traced calls" : " traced calls")
                                                   : (name ? ")" : ""));
        xb_json(&c->out, buf);
        xb_str(&c->out, "}}");
    }
}

static ch_thread_t *thread_of(ch_ctx_t *c, const eng_thread_t *t)
{
    size_t i = t->number - 1;
    if (i >= c->nth) {
        size_t nn = c->nth ? c->nth * 2 : 64;
        while (nn <= i)
            nn *= 2;
        ch_thread_t *n = realloc(c->th, nn * sizeof *n);
        if (!n)
            return NULL;
        memset(n + c->nth, 0, (nn - c->nth) * sizeof *n);
        c->th = n;
        c->nth = nn;
    }
    return &c->th[i];
}

static void close_to(ch_ctx_t *c, const eng_thread_t *t, ch_thread_t *ct, uint32_t keep,
                     uint64_t at)
{
    while (ct->nopen > keep)
        be(c, t, ct, 'E', ct->open[--ct->nopen], at);
}

static const char *traced_name(ch_ctx_t *c, const exp_event_t *ev, char *buf, size_t n,
                               const char **cat)
{
    switch (ev->type) {
    case EXP_REC_SYNC:
        *cat = "sync";
        snprintf(buf, n, "%s wait", rep_sync_kind(ev->call));
        return buf;
    case EXP_REC_IO:
        *cat = "io";
        return "I/O";
    case EXP_REC_HEAP_ALLOC:
        *cat = "heap";
        return "allocation";
    default:
        *cat = "traced";
        return "traced call";
    }
}

static int ch_event(void *ctx, const rep_event_t *e)
{
    ch_ctx_t *c = ctx;
    const exp_event_t *ev = e->ev;
    ch_thread_t *ct = thread_of(c, e->thread);
    if (!ct)
        return TALLY_ENOMEM;
    name_thread(c, e->thread, ct);
    uint64_t t = ev->t > c->t0 ? ev->t - c->t0 : 0;
    const eng_mapped_t *m = e->m;
    if (ev->type == EXP_REC_CLOCK) {
        uint64_t w = e->v[c->metric];
        if (!w || !m || !m->n)
            return 0;
        uint64_t start = t > w ? t - w : 0;
        if (start < ct->end)
            start = ct->end;
        if (start > ct->end)
            close_to(c, e->thread, ct, 0, ct->end);
        if (m->n > c->ids_cap) {
            uint32_t *ni = realloc(c->ids, m->n * sizeof *ni);
            if (!ni)
                return TALLY_ENOMEM;
            c->ids = ni;
            c->ids_cap = m->n;
        }
        for (uint32_t i = 0; i < m->n; i++)
            c->ids[i] = m->ids[m->n - 1 - i];
        uint32_t same = 0;
        while (same < ct->nopen && same < m->n && ct->open[same] == c->ids[same])
            same++;
        close_to(c, e->thread, ct, same, start);
        if (m->n > ct->cap) {
            uint32_t *no = realloc(ct->open, m->n * sizeof *no);
            if (!no)
                return TALLY_ENOMEM;
            ct->open = no;
            ct->cap = m->n;
        }
        for (uint32_t i = same; i < m->n; i++) {
            ct->open[ct->nopen++] = c->ids[i];
            be(c, e->thread, ct, 'B', c->ids[i], start);
        }
        ct->end = start + w;
    } else if (ev->type == EXP_REC_SYNC || ev->type == EXP_REC_IO || ev->type == EXP_REC_TRACE ||
               ev->type == EXP_REC_HEAP_ALLOC) {
        char buf[64];
        const char *cat;
        const char *name = traced_name(c, ev, buf, sizeof buf, &cat);
        uint64_t w = ev->type == EXP_REC_HEAP_ALLOC ? 0 : ev->weight;
        uint64_t start = t > w ? t - w : 0;
        if (start < ct->trace_end)
            start = ct->trace_end;
        sep(c);
        xb_str(&c->out, w ? "{\"ph\":\"B\",\"cat\":\"" : "{\"ph\":\"i\",\"cat\":\"");
        xb_str(&c->out, cat);
        xb_str(&c->out, "\",\"pid\":");
        xb_u64(&c->out, pid_of(c, e->thread));
        xb_str(&c->out, ",\"tid\":");
        xb_u64(&c->out, TRACED_TID + e->thread->number);
        xb_str(&c->out, ",\"ts\":");
        put_ts(c, start);
        xb_str(&c->out, w ? ",\"name\":" : ",\"s\":\"t\",\"name\":");
        xb_json(&c->out, name);
        xb_str(&c->out, ",\"args\":{\"function\":");
        if (m && m->n) {
            size_t nlen;
            const char *fname = json_name(c, m->ids[0], &nlen);
            xb_put(&c->out, fname, nlen);
        } else {
            xb_str(&c->out, "\"<none>\"");
        }
        if (ev->type == EXP_REC_IO || ev->type == EXP_REC_HEAP_ALLOC) {
            xb_str(&c->out, ",\"bytes\":");
            xb_u64(&c->out, ev->size);
        }
        xb_str(&c->out, "}}");
        if (w) { /* its end written as a time stamp of its own: see the top */
            sep(c);
            xb_str(&c->out, "{\"ph\":\"E\",\"pid\":");
            xb_u64(&c->out, pid_of(c, e->thread));
            xb_str(&c->out, ",\"tid\":");
            xb_u64(&c->out, TRACED_TID + e->thread->number);
            xb_str(&c->out, ",\"ts\":");
            put_ts(c, start + w);
            xb_str(&c->out, ",\"name\":");
            xb_json(&c->out, name);
            xb_char(&c->out, '}');
        }
        ct->trace_end = start + w;
    }
    return xb_error(&c->out) ? TALLY_EIO : 0;
}

/* Sample packets: instant events of their process. */
static void packets(ch_ctx_t *c)
{
    for (size_t x = 0; x < c->s->nexps; x++) {
        const exp_experiment_t *e = c->s->exps[x];
        for (size_t p = 0; p < e->nprocs; p++) {
            const exp_process_t *pr = e->procs[p];
            for (size_t k = 0; k < pr->nsamples; k++) {
                const exp_sample_t *sp = &pr->samples[k];
                uint64_t t = sp->t > c->t0 ? sp->t - c->t0 : 0;
                sep(c);
                xb_str(&c->out, "{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"sample\",\"pid\":");
                xb_u64(&c->out, pr->pid);
                xb_str(&c->out, ",\"tid\":");
                xb_u64(&c->out, pr->pid);
                xb_str(&c->out, ",\"ts\":");
                put_ts(c, t);
                xb_str(&c->out, ",\"name\":");
                xb_json(&c->out, sp->label && *sp->label ? sp->label
                                 : sp->reason && *sp->reason ? sp->reason : "sample");
                xb_char(&c->out, '}');
                sep(c);
                xb_str(&c->out, "{\"ph\":\"C\",\"pid\":");
                xb_u64(&c->out, pr->pid);
                xb_str(&c->out, ",\"tid\":");
                xb_u64(&c->out, pr->pid);
                xb_str(&c->out, ",\"ts\":");
                put_ts(c, t);
                xb_str(&c->out, ",\"name\":\"memory\",\"args\":{\"rss_kb\":");
                xb_u64(&c->out, sp->rss);
                xb_str(&c->out, "}}");
            }
        }
    }
}

int xp_chrome(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err)
{
    ch_ctx_t c = { .s = s, .o = o, .first = 1, .metric = o->metrics[0] };
    if (!eng_metric(s->eng, c.metric)->time)
        return tally_errf(err, TALLY_EUSAGE, "the chrome export lays samples out in time: its "
                          "metric must be a time (totalcpu, user, ...), not '%s'",
                          eng_metric(s->eng, c.metric)->name);
    int rc = rep_stack_names(s, o->namefmt, &c.names, err);
    if (rc)
        return rc;
    c.t0 = eng_run_start(s->eng);
    if (xb_init(&c.out, out)) {
        rep_names_free(&c.names);
        return tally_errf(err, TALLY_ENOMEM, "out of memory writing the chrome export");
    }
    xb_str(&c.out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"tally\","
           "\"metric\":");
    xb_json(&c.out, eng_metric(s->eng, c.metric)->name);
    xb_str(&c.out, "},\"traceEvents\":[");
    rc = rep_events(s, ch_event, &c, err);
    if (!rc) {
        for (size_t i = 0; i < c.nth; i++) {
            if (!c.th[i].nopen)
                continue;
            const eng_thread_t *t = eng_thread(s->eng, i);
            close_to(&c, t, &c.th[i], 0, c.th[i].end);
        }
        packets(&c);
        xb_str(&c.out, "\n]}\n");
    }
    if (xb_finish(&c.out) && !rc)
        rc = TALLY_EIO;
    if (rc == TALLY_ENOMEM && !err->code)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory writing the chrome export");
    if (rc == TALLY_EIO && !err->code)
        rc = tally_errf(err, TALLY_EIO, "writing the chrome export failed");
    for (size_t i = 0; i < c.nth; i++)
        free(c.th[i].open);
    xb_names_free(&c.jname);
    free(c.th);
    free(c.ids);
    rep_names_free(&c.names);
    return rc;
}
