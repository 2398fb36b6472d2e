/*
 * export_chrome.c - Chrome's Trace Event JSON (chrome://tracing, Perfetto's legacy importer,
 * speedscope), in its JSON object form: per thread over time, its clock samples in "samples"
 * with their call stacks in "stackFrames", and in "traceEvents" its traced calls (sync waits,
 * I/O, traced kinds of the collector API) as slices on a track of their own beside it, heap calls
 * as instant events there, sample packets as instant events of the process. A traced call of the
 * collector API is named by its kind and lasts its kind's first metric of time (xp_traced_ns);
 * a kind without one is an instant event. Each counter of counter overflow profiling is a counter
 * track per thread: at each of its samples, the events counted so far.
 *
 * Samples: each clock sample of a thread stands for its value of the first metric asked (a time
 * metric, ns) and is laid out as the interval that ends at its time stamp, started no earlier
 * than where the thread's previous sample ended (a sample never overlaps the one before it). A
 * sample is one short record at the start of its interval naming its stack ("sf": a node of the
 * stackFrames tree, each node a function and its parent node, each distinct stack written once);
 * the next record of the thread is at the end of the interval: the next sample when it follows
 * at once, else an idle record (no "sf") there, and every thread's samples end with one. So a
 * sample's weight is the time to the thread's next record, as speedscope's importer weighs it,
 * and a reader's per-function self and total times are the function table's exclusive and
 * inclusive values, to the nanosecond (timestamps are microseconds with three decimals).
 * (speedscope, given samples, shows them and leaves the traceEvents' slices out: its own format,
 * export_speedscope.c, has the traced calls as evented profiles.)
 *
 * Traced calls are laid out the same way on their track (a call ends at its time stamp and lasts
 * its duration, never overlapping the previous one), so each track nests strictly. Slices are
 * written as B/E pairs, never as X events with a duration: a reader adds ts and dur in binary
 * floating point, and a call ending where the next begins would then end 1e-11 us after the
 * next one's start (speedscope's importer, seeing the two overlap, counted the wait of another
 * thread on the main thread's track); an E's time stamp is the exact decimal of the next B's.
 *
 * Thread states: every clock sample and state record of a thread is also a slice on its states
 * track (tid 1500000000 + its number), named by its state (User CPU, System CPU, Wait CPU, User
 * Lock, I/O Wait, Sleep; args.metric: the state's metric), laid out as the samples are (ending at
 * its time stamp, never overlapping the previous one), consecutive slices of one state merged: a
 * state's slices add up to the thread's value of its metric.
 *
 * Profiled blocks recorded with their timeline (BLOCK records, collect --block-trace=on) are
 * slices on a third track of their thread (tid 2000000000 + k, k counting the threads with
 * blocks), entered and exited at their records' times: an exit ends the innermost open instance
 * of its block and every slice inside it (a longjmp past stops: the collector's statistics end
 * them the same way), and the instances open at the end end where the thread's profile ended them
 * (its block-profile record's t), so a block's outermost slices add up to its inclusive time.
 * One more scan of the events, only when some process recorded the timeline.
 *
 * Streaming: samples are written as they come (in time order within each process); the
 * traceEvents, made beside them, go to a temporary file copied after them; what is kept is per
 * thread (where its last sample ended) and per distinct stack (its node). pid is the process's
 * pid, tid the thread's id; the traced track of a thread has tid 1000000000 + its number. See
 * export.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/u64map.h"
#include "export/export.h"
#include "export/xbuf.h"
#include "experiment/logrec.h"

#define TRACED_TID 1000000000u
#define BLOCKS_TID 2000000000u
#define STATES_TID 1500000000u

typedef struct ch_thread {
    uint64_t end;       /* where its last sample ended (ns since the run's start) */
    uint64_t nsamples;
    uint64_t trace_end; /* where its last traced call ended */
    int named, states_named;
    int st_metric;      /* the state slice not written yet (merged with the next one when it
                           continues it): its state's metric, -1 none */
    uint64_t st_start, st_end;
    char pre[48];       /* "{\"pid\":P,\"tid\":T,\"ts\":" of its samples */
    size_t npre;
} ch_thread_t;

typedef struct ch_ctx {
    ses_t *s;
    const xp_opts_t *o;
    xbuf_t out;  /* traceEvents: into the temporary file */
    xbuf_t smp;  /* the file: samples, then the rest */
    FILE *tmp;
    tally_err_t *err;
    rep_names_t names;
    ch_thread_t *th; /* by thread index (number - 1) */
    size_t nth;
    uint64_t t0;
    int first, sfirst;
    int metric;
    u64map_t stack_sf; /* (experiment, stack) -> its node + 1 (1: an empty stack) */
    u64map_t node_ix;  /* (parent node, function) -> node */
    uint32_t *node_parent, *node_fn; /* by node - 1 */
    size_t nnodes, nodes_cap;
    xb_names_t jname; /* by function id: its name as a JSON string, once needed */
    xp_kinds_t kinds; /* the time metrics of the collector API's kinds */
    u64map_t ctr_ix;  /* (thread index, counter id) -> its running count's index + 1 */
    uint64_t *ctr_sum;
    size_t nctr, ctr_cap;
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

/* A sample record of thread t at ns since the run's start: stack node sf (0: idle). The thread's
 * fixed part is made once, the time stamp once per time. */
static void sample(ch_ctx_t *c, const eng_thread_t *t, ch_thread_t *ct, uint32_t sf, uint64_t ns)
{
    if (!ct->npre) {
        char *p = ct->pre;
        memcpy(p, "{\"pid\":", 7);
        p += 7;
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
    if (c->sfirst) { /* the array opens at the first sample: none, no samples and stackFrames */
        xb_str(&c->smp, ",\"samples\":[\n");
        c->sfirst = 0;
    } else {
        xb_put(&c->smp, ",\n", 2);
    }
    xb_put(&c->smp, ct->pre, ct->npre);
    xb_put(&c->smp, c->ts, c->nts);
    if (sf) {
        char d[32];
        memcpy(d, ",\"sf\":", 6);
        size_t n = 6 + xb_fmt_u64(d + 6, sf);
        d[n++] = '}';
        xb_put(&c->smp, d, n);
    } else {
        xb_char(&c->smp, '}');
    }
}

/* The stackFrames node of stack of experiment exp (0: its mapped stack is empty), made with the
 * nodes of its frames, root first, when first met. */
static int stack_node(ch_ctx_t *c, uint32_t exp, uint32_t stack, uint32_t *sf)
{
    int found;
    uint32_t *slot = u64map_slot(&c->stack_sf, (uint64_t)exp << 32 | stack, &found);
    if (!slot)
        return TALLY_ENOMEM;
    if (found) {
        *sf = *slot - 1;
        return 0;
    }
    *slot = 1;
    eng_mapped_t m;
    int rc = eng_map_stack(c->s->eng, exp, stack, ENG_KIND_FUNCTION, &m, c->err);
    if (rc)
        return rc;
    uint32_t node = 0;
    for (uint32_t i = m.n; i-- > 0;) {
        uint32_t *ns = u64map_slot(&c->node_ix, (uint64_t)node << 32 | m.ids[i], &found);
        if (!ns)
            return TALLY_ENOMEM;
        if (!found) {
            size_t c1 = c->nodes_cap, c2 = c->nodes_cap;
            if (c->nnodes >= UINT32_MAX - 1 || GROW(c->node_parent, c->nnodes, c1) ||
                GROW(c->node_fn, c->nnodes, c2))
                return TALLY_ENOMEM;
            c->nodes_cap = c1 < c2 ? c1 : c2;
            c->node_parent[c->nnodes] = node;
            c->node_fn[c->nnodes] = m.ids[i];
            *ns = (uint32_t)++c->nnodes;
        }
        node = *ns;
    }
    /* (the slot may have moved as the map grew: set it again) */
    if (!(slot = u64map_slot(&c->stack_sf, (uint64_t)exp << 32 | stack, &found)))
        return TALLY_ENOMEM;
    *slot = node + 1;
    *sf = node;
    return 0;
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

/* The state metrics of the clock states (EXP_STATE_*), and the names of their slices. */
static const int state_metric[EXP_STATE_COUNT] = {
    [EXP_STATE_USER] = ENG_M_USER, [EXP_STATE_SYSTEM] = ENG_M_SYSTEM,
    [EXP_STATE_WAIT] = ENG_M_WAIT, [EXP_STATE_LOCK] = ENG_M_LOCK,
    [EXP_STATE_IO] = ENG_M_IO,     [EXP_STATE_SLEEP] = ENG_M_SLEEP,
};

static const char *state_name(int metric)
{
    switch (metric) {
    case ENG_M_USER: return "User CPU";
    case ENG_M_SYSTEM: return "System CPU";
    case ENG_M_WAIT: return "Wait CPU";
    case ENG_M_LOCK: return "User Lock";
    case ENG_M_IO: return "I/O Wait";
    default: return "Sleep";
    }
}

/* Writes thread t's pending state slice (B and E on its states track), if any. */
static void state_flush(ch_ctx_t *c, const eng_thread_t *t, ch_thread_t *ct)
{
    if (ct->st_metric < 0)
        return;
    if (!ct->states_named) {
        ct->states_named = 1;
        char buf[300];
        const char *name = t->info && t->info->name && *t->info->name ? t->info->name : NULL;
        if (name)
            snprintf(buf, sizeof buf, "%s (%u) states", name, t->tid);
        else
            snprintf(buf, sizeof buf, "thread %u states", t->number);
        sep(c);
        xb_str(&c->out, "{\"ph\":\"M\",\"pid\":");
        xb_u64(&c->out, pid_of(c, t));
        xb_str(&c->out, ",\"tid\":");
        xb_u64(&c->out, STATES_TID + t->number);
        xb_str(&c->out, ",\"name\":\"thread_name\",\"args\":{\"name\":");
        xb_json(&c->out, buf);
        xb_str(&c->out, "}}");
    }
    const char *name = state_name(ct->st_metric);
    for (int end = 0; end < 2; end++) {
        sep(c);
        xb_str(&c->out, end ? "{\"ph\":\"E\",\"pid\":" : "{\"ph\":\"B\",\"cat\":\"state\",\"pid\":");
        xb_u64(&c->out, pid_of(c, t));
        xb_str(&c->out, ",\"tid\":");
        xb_u64(&c->out, STATES_TID + t->number);
        xb_str(&c->out, ",\"ts\":");
        put_ts(c, end ? ct->st_end : ct->st_start);
        xb_str(&c->out, ",\"name\":");
        xb_json(&c->out, name);
        if (!end) {
            xb_str(&c->out, ",\"args\":{\"metric\":");
            xb_json(&c->out, eng_metric(c->s->eng, ct->st_metric)->name);
            xb_char(&c->out, '}');
        }
        xb_char(&c->out, '}');
    }
    ct->st_metric = -1;
}

/* A clock or state record of thread t at ns: the time of its state (value v of the state's
 * metric) laid out as the samples are (ending at its time stamp, never before the previous
 * one's end), merged with the previous slice when it continues it in the same state. */
static void state_slice(ch_ctx_t *c, const eng_thread_t *t, ch_thread_t *ct,
                        const exp_event_t *ev, const uint64_t *v, uint64_t ns)
{
    int m = ev->state < EXP_STATE_COUNT ? state_metric[ev->state] : ENG_M_SLEEP;
    uint64_t w = v[m];
    if (!w)
        return;
    uint64_t start = ns > w ? ns - w : 0;
    if (ct->st_end && start < ct->st_end)
        start = ct->st_end;
    if (ct->st_metric == m && start == ct->st_end) {
        ct->st_end = start + w;
        return;
    }
    state_flush(c, t, ct);
    ct->st_metric = m;
    ct->st_start = start;
    ct->st_end = start + w;
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
        for (size_t k = c->nth; k < nn; k++)
            n[k].st_metric = -1;
        c->th = n;
        c->nth = nn;
    }
    return &c->th[i];
}

static const char *traced_name(const exp_event_t *ev, const char *kind, char *buf, size_t n,
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
    default: /* a traced call of the collector API: its kind's name (mpi_call, ...) */
        *cat = "traced";
        return ev->type == EXP_REC_TRACE && kind ? kind : "traced call";
    }
}

/* A counter overflow sample of thread th (index thread) at t: the track of the counter and
 * thread, a counter event with the events counted so far. */
static int counter(ch_ctx_t *c, const eng_thread_t *th, uint32_t thread, const exp_event_t *ev,
                   uint64_t t)
{
    const exp_process_t *p = c->s->exps[th->exp]->procs[th->proc];
    const char *name = NULL;
    for (size_t i = 0; i < p->ncounters && !name; i++)
        if (p->counters[i].id == ev->call)
            name = p->counters[i].name;
    if (!name || !ev->nvalues || !ev->values[0])
        return 0;
    int found;
    uint32_t *slot = u64map_slot(&c->ctr_ix, (uint64_t)thread << 16 | (ev->call & 0xffff), &found);
    if (!slot)
        return TALLY_ENOMEM;
    if (!found) {
        if (GROW(c->ctr_sum, c->nctr, c->ctr_cap)) {
            u64map_remove(&c->ctr_ix, (uint64_t)thread << 16 | (ev->call & 0xffff));
            return TALLY_ENOMEM;
        }
        c->ctr_sum[c->nctr] = 0;
        *slot = (uint32_t)++c->nctr;
    }
    uint64_t *sum = &c->ctr_sum[*slot - 1];
    *sum = *sum + ev->values[0] < *sum ? UINT64_MAX : *sum + ev->values[0];
    char track[300];
    snprintf(track, sizeof track, "%s (tid %u)", name, th->tid);
    sep(c);
    xb_str(&c->out, "{\"ph\":\"C\",\"pid\":");
    xb_u64(&c->out, pid_of(c, th));
    xb_str(&c->out, ",\"tid\":");
    xb_u64(&c->out, th->tid);
    xb_str(&c->out, ",\"ts\":");
    put_ts(c, t);
    xb_str(&c->out, ",\"name\":");
    xb_json(&c->out, track);
    xb_str(&c->out, ",\"args\":{");
    xb_json(&c->out, name);
    xb_char(&c->out, ':');
    xb_u64(&c->out, *sum);
    xb_str(&c->out, "}}");
    return xb_error(&c->out) ? TALLY_EIO : 0;
}

static int ch_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf_fn,
                    uint32_t thread)
{
    (void)leaf_fn;
    ch_ctx_t *c = ctx;
    const eng_thread_t *th = eng_thread(c->s->eng, thread);
    ch_thread_t *ct = thread_of(c, th);
    if (!ct)
        return TALLY_ENOMEM;
    name_thread(c, th, ct);
    uint64_t t = ev->t > c->t0 ? ev->t - c->t0 : 0;
    int rc;
    if (ev->type == EXP_REC_COUNTER)
        return counter(c, th, thread, ev, t);
    if (ev->type == EXP_REC_CLOCK) {
        state_slice(c, th, ct, ev, v, t);
        uint64_t w = c->metric >= 0 ? v[c->metric] : 0;
        uint32_t sf;
        if (!w || ev->stack == EXP_NO_STACK)
            return 0;
        if ((rc = stack_node(c, th->exp, ev->stack, &sf)))
            return rc;
        if (!sf)
            return 0;
        uint64_t start = t > w ? t - w : 0;
        if (ct->nsamples && start < ct->end)
            start = ct->end;
        if (ct->nsamples && start > ct->end)
            sample(c, th, ct, 0, ct->end); /* idle from where the last one ended */
        sample(c, th, ct, sf, start);
        ct->end = start + w;
        ct->nsamples++;
    } else if (ev->type == EXP_REC_SYNC || ev->type == EXP_REC_IO || ev->type == EXP_REC_TRACE ||
               ev->type == EXP_REC_HEAP_ALLOC) {
        char buf[64];
        const char *cat, *kind;
        uint64_t w = 0; /* its time (a heap call has none: an instant) */
        if ((rc = xp_traced_ns(c->s, &c->kinds, th, ev, v, &w, &kind)))
            return rc;
        const char *name = traced_name(ev, kind, buf, sizeof buf, &cat);
        eng_mapped_t mm, *m = NULL;
        if (ev->stack != EXP_NO_STACK) {
            if ((rc = eng_map_stack(c->s->eng, th->exp, ev->stack, ENG_KIND_FUNCTION, &mm,
                                    c->err)))
                return rc;
            m = &mm;
        }
        uint64_t start = t > w ? t - w : 0;
        if (start < ct->trace_end)
            start = ct->trace_end;
        sep(c);
        xb_str(&c->out, w ? "{\"ph\":\"B\",\"cat\":\"" : "{\"ph\":\"i\",\"cat\":\"");
        xb_str(&c->out, cat);
        xb_str(&c->out, "\",\"pid\":");
        xb_u64(&c->out, pid_of(c, th));
        xb_str(&c->out, ",\"tid\":");
        xb_u64(&c->out, TRACED_TID + th->number);
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
            xb_u64(&c->out, pid_of(c, th));
            xb_str(&c->out, ",\"tid\":");
            xb_u64(&c->out, TRACED_TID + th->number);
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

/* ---- profiled blocks: the timeline of BLOCK records as slices ------------------------------- */

/* A thread with block records: its track and its open blocks (innermost last). */
typedef struct ch_bopen {
    uint32_t id;
    const char *name; /* (the experiment's log's) */
} ch_bopen_t;

typedef struct ch_bthr {
    uint32_t exp, proc, tid;
    ch_bopen_t *open;
    size_t depth, cap;
    uint64_t last;  /* the time of its last slice event */
    int selected;
} ch_bthr_t;

/* Block names of one process, by id (from its log's `block` records). */
typedef struct ch_bnames {
    const char **name;
    size_t n;
} ch_bnames_t;

typedef struct ch_blk {
    ch_ctx_t *c;
    uint32_t exp;
    u64map_t thr_ix; /* (exp, proc, tid) -> thread + 1 */
    ch_bthr_t *thr;
    size_t nthr, cap;
    ch_bnames_t *names; /* by process of the experiment being scanned */
    size_t nnames;
    u64map_t eng_ix; /* (exp, proc, tid) -> engine thread index + 1 */
    int all_threads;
    int oom;
} ch_blk_t;

static uint64_t bkey(uint32_t exp, uint32_t proc, uint32_t tid)
{
    return (uint64_t)exp << 48 | (uint64_t)proc << 32 | tid;
}

static const char *block_name(ch_blk_t *b, uint32_t proc, uint32_t id)
{
    return proc < b->nnames && id < b->names[proc].n ? b->names[proc].name[id] : NULL;
}

static int load_names(ch_blk_t *b, const exp_experiment_t *e)
{
    b->names = calloc(e->nprocs ? e->nprocs : 1, sizeof *b->names);
    if (!b->names)
        return TALLY_ENOMEM;
    b->nnames = e->nprocs;
    for (size_t p = 0; p < e->nprocs; p++) {
        const exp_process_t *pr = e->procs[p];
        size_t n = 0;
        for (size_t i = 0; i < pr->nrecords; i++)
            if (!strcmp(pr->records[i].kind, EXP_LOG_BLOCK)) {
                uint64_t id = exp_record_u64(&pr->records[i], EXP_KEY_ID, UINT64_MAX);
                if (id <= EXP_BLOCK_MAXID && id + 1 > n)
                    n = id + 1;
            }
        if (!n)
            continue;
        if (!(b->names[p].name = calloc(n, sizeof *b->names[p].name)))
            return TALLY_ENOMEM;
        b->names[p].n = n;
        for (size_t i = 0; i < pr->nrecords; i++)
            if (!strcmp(pr->records[i].kind, EXP_LOG_BLOCK)) {
                uint64_t id = exp_record_u64(&pr->records[i], EXP_KEY_ID, UINT64_MAX);
                const char *name = exp_record_get(&pr->records[i], EXP_KEY_NAME);
                if (id < n && name && *name)
                    b->names[p].name[id] = name;
            }
    }
    return 0;
}

static void names_free(ch_blk_t *b)
{
    for (size_t p = 0; p < b->nnames; p++)
        free(b->names[p].name);
    free(b->names);
    b->names = NULL;
    b->nnames = 0;
}

/* A slice event ('B' or 'E') of block name on the blocks track of thread k at ns. */
static void block_slice(ch_blk_t *b, size_t k, char ph, const char *name, uint64_t ns)
{
    ch_ctx_t *c = b->c;
    ch_bthr_t *t = &b->thr[k];
    if (ns < t->last)
        ns = t->last; /* (a stream's times never go back; a track's do not either) */
    t->last = ns;
    sep(c);
    xb_str(&c->out, ph == 'B' ? "{\"ph\":\"B\",\"cat\":\"block\",\"pid\":" : "{\"ph\":\"E\",\"pid\":");
    xb_u64(&c->out, c->s->exps[t->exp]->procs[t->proc]->pid);
    xb_str(&c->out, ",\"tid\":");
    xb_u64(&c->out, BLOCKS_TID + k);
    xb_str(&c->out, ",\"ts\":");
    put_ts(c, ns);
    xb_str(&c->out, ",\"name\":");
    xb_json(&c->out, name);
    xb_char(&c->out, '}');
}

/* The thread of a BLOCK event: found, or added (its track named) when first met. */
static ch_bthr_t *block_thread(ch_blk_t *b, const exp_event_t *ev, size_t *k)
{
    ch_ctx_t *c = b->c;
    int found;
    uint32_t *slot = u64map_slot(&b->thr_ix, bkey(b->exp, ev->proc, ev->tid), &found);
    if (!slot)
        return NULL;
    if (found) {
        *k = *slot - 1;
        return &b->thr[*k];
    }
    if (GROW(b->thr, b->nthr, b->cap)) {
        u64map_remove(&b->thr_ix, bkey(b->exp, ev->proc, ev->tid));
        return NULL;
    }
    *k = b->nthr++;
    *slot = (uint32_t)b->nthr;
    ch_bthr_t *t = &b->thr[*k];
    memset(t, 0, sizeof *t);
    t->exp = b->exp, t->proc = ev->proc, t->tid = ev->tid;
    const uint32_t *ix = u64map_get(&b->eng_ix, bkey(b->exp, ev->proc, ev->tid));
    const eng_thread_t *et = ix ? eng_thread(c->s->eng, *ix - 1) : NULL;
    /* a thread the engine has not met (no event with a metric) is in the selection of all */
    t->selected = et ? eng_thread_selected(c->s->eng, *ix - 1) : b->all_threads;
    if (t->selected) {
        char buf[300];
        const char *name = et && et->info && et->info->name && *et->info->name ? et->info->name
                                                                               : NULL;
        if (name)
            snprintf(buf, sizeof buf, "%s (tid %u) profiled blocks", name, ev->tid);
        else if (et)
            snprintf(buf, sizeof buf, "thread %u (tid %u) profiled blocks", et->number, ev->tid);
        else
            snprintf(buf, sizeof buf, "thread (tid %u) profiled blocks", ev->tid);
        sep(c);
        xb_str(&c->out, "{\"ph\":\"M\",\"pid\":");
        xb_u64(&c->out, c->s->exps[b->exp]->procs[ev->proc]->pid);
        xb_str(&c->out, ",\"tid\":");
        xb_u64(&c->out, BLOCKS_TID + *k);
        xb_str(&c->out, ",\"name\":\"thread_name\",\"args\":{\"name\":");
        xb_json(&c->out, buf);
        xb_str(&c->out, "}}");
    }
    return t;
}

/* A BLOCK event: an entry opens a slice; an exit closes the innermost open instance of its block
 * and every slice inside it (a longjmp, a missing stop: as the collector's statistics end them);
 * an exit of a block that is not open (its entry was not recorded) is left out. */
static int on_block(void *ctx, const exp_event_t *ev)
{
    ch_blk_t *b = ctx;
    if (ev->type != EXP_REC_BLOCK)
        return 0;
    ch_ctx_t *c = b->c;
    const char *name = block_name(b, ev->proc, ev->call);
    if (!name)
        return 0; /* no `block` record names it: damage, nothing to show */
    size_t k;
    ch_bthr_t *t = block_thread(b, ev, &k);
    if (!t) {
        b->oom = 1;
        return 1;
    }
    if (!t->selected)
        return 0;
    uint64_t ns = ev->t > c->t0 ? ev->t - c->t0 : 0;
    if (!ev->bexit) {
        if (GROW(t->open, t->depth, t->cap)) {
            b->oom = 1;
            return 1;
        }
        t->open[t->depth].id = ev->call;
        t->open[t->depth++].name = name;
        block_slice(b, k, 'B', name, ns);
    } else {
        size_t i = t->depth;
        while (i > 0 && t->open[i - 1].id != ev->call)
            i--;
        while (i > 0 && t->depth >= i) { /* the innermost first, down to the block's instance */
            t->depth--;
            block_slice(b, k, 'E', t->open[t->depth].name, ns);
        }
    }
    return xb_error(&c->out) ? 1 : 0;
}

/* Does an experiment of the session have the timeline of blocks? */
static int have_block_trace(const ses_t *s)
{
    for (size_t x = 0; x < s->nexps; x++)
        for (size_t p = 0; p < s->exps[x]->nprocs; p++)
            if (s->exps[x]->procs[p]->settings.block_trace)
                return 1;
    return 0;
}

/* The profiled blocks of every thread as slices on a track of its own (tid BLOCKS_TID + k),
 * nested as entered and exited; the instances still open at the end of the records are ended
 * where the thread's profile ended them (its block-profile record), else at its last record. */
static int blocks_pass(ch_ctx_t *c)
{
    ses_t *s = c->s;
    if (!have_block_trace(s))
        return 0;
    ch_blk_t b = { .c = c };
    b.all_threads = !strcmp(eng_thread_selection(s->eng), "all");
    int rc = 0;
    for (size_t i = 0; i < eng_nthreads(s->eng) && !rc; i++) {
        const eng_thread_t *t = eng_thread(s->eng, i);
        int found;
        uint32_t *slot = u64map_slot(&b.eng_ix, bkey(t->exp, t->proc, t->tid), &found);
        if (!slot)
            rc = TALLY_ENOMEM;
        else
            *slot = (uint32_t)i + 1;
    }
    for (size_t x = 0; x < s->nexps && !rc; x++) {
        b.exp = (uint32_t)x;
        if ((rc = load_names(&b, s->exps[x])))
            break;
        exp_scan_stats_t st;
        rc = exp_scan(s->exps[x], eng_stacks(s->eng, (uint32_t)x), on_block, &b, &st, c->err);
        if (b.oom)
            rc = TALLY_ENOMEM;
        else if (rc > 0)
            rc = xb_error(&c->out) ? TALLY_EIO : 0;
        names_free(&b);
    }
    rep_blocks_t model;
    memset(&model, 0, sizeof model);
    if (!rc && b.nthr)
        rc = rep_blocks(s, &model, c->err);
    for (size_t k = 0; k < b.nthr && !rc; k++) {
        ch_bthr_t *t = &b.thr[k];
        if (!t->depth)
            continue;
        const exp_process_t *p = s->exps[t->exp]->procs[t->proc];
        uint64_t end = 0;
        for (size_t i = 0; i < model.nthreads; i++)
            if (model.threads[i].p == p && model.threads[i].tid == t->tid)
                end = model.threads[i].t_end;
        end = end > c->t0 ? end - c->t0 : 0;
        while (t->depth) {
            t->depth--;
            block_slice(&b, k, 'E', t->open[t->depth].name, end);
        }
    }
    rep_blocks_free(&model);
    names_free(&b);
    for (size_t k = 0; k < b.nthr; k++)
        free(b.thr[k].open);
    free(b.thr);
    u64map_free(&b.thr_ix);
    u64map_free(&b.eng_ix);
    if (!rc && xb_error(&c->out))
        rc = TALLY_EIO;
    return rc;
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
    ch_ctx_t c = { .s = s, .o = o, .err = err, .first = 1, .sfirst = 1, .metric = o->metrics[0] };
    if (!eng_metric(s->eng, c.metric)->time && !o->metrics_given)
        c.metric = -1; /* no time in the data: no samples, the rest of the trace */
    else if (!eng_metric(s->eng, c.metric)->time)
        return tally_errf(err, TALLY_EUSAGE, "the chrome export lays samples out in time: its "
                          "metric must be a time (totalcpu, user, ...), not '%s'",
                          eng_metric(s->eng, c.metric)->name);
    int rc = rep_stack_names(s, o->namefmt, &c.names, err);
    if (rc)
        return rc;
    c.t0 = eng_run_start(s->eng);
    if (!(c.tmp = tmpfile())) {
        rep_names_free(&c.names);
        return tally_errf(err, TALLY_EIO, "the chrome export needs a temporary file: %s",
                          strerror(errno));
    }
    if (xb_init(&c.smp, out) || xb_init(&c.out, c.tmp)) {
        rc = TALLY_ENOMEM;
        goto done;
    }
    xb_str(&c.smp, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"tally\"");
    if (c.metric >= 0) {
        xb_str(&c.smp, ",\"metric\":");
        xb_json(&c.smp, eng_metric(s->eng, c.metric)->name);
    }
    xb_str(&c.smp, "}");
    rc = eng_foreach_event(s->eng, ch_event, &c, err);
    if (rc)
        goto done;
    for (size_t i = 0; i < c.nth; i++) { /* each thread's samples end with an idle record */
        if (c.th[i].nsamples)
            sample(&c, eng_thread(s->eng, i), &c.th[i], 0, c.th[i].end);
        if (i < eng_nthreads(s->eng))
            state_flush(&c, eng_thread(s->eng, i), &c.th[i]);
    }
    if (!c.sfirst)
        xb_str(&c.smp, "\n]");
    packets(&c);
    if ((rc = blocks_pass(&c)))
        goto done;
    /* the traceEvents made beside the samples */
    xb_str(&c.smp, ",\"traceEvents\":[");
    if (xb_finish(&c.out) || fflush(c.tmp) || fseeko(c.tmp, 0, SEEK_SET)) {
        rc = TALLY_EIO;
        goto done;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, c.tmp)) > 0)
        xb_put(&c.smp, buf, n);
    if (ferror(c.tmp)) {
        rc = TALLY_EIO;
        goto done;
    }
    xb_str(&c.smp, "\n]");
    if (!c.sfirst) { /* the stacks: node k is {name, parent} */
        xb_str(&c.smp, ",\"stackFrames\":{");
        for (size_t k = 0; k < c.nnodes; k++) {
            size_t nlen;
            const char *name = json_name(&c, c.node_fn[k], &nlen);
            xb_str(&c.smp, k ? ",\n\"" : "\n\"");
            xb_u64(&c.smp, k + 1);
            xb_str(&c.smp, "\":{\"name\":");
            xb_put(&c.smp, name, nlen);
            if (c.node_parent[k]) {
                xb_str(&c.smp, ",\"parent\":");
                xb_u64(&c.smp, c.node_parent[k]);
            }
            xb_char(&c.smp, '}');
        }
        xb_str(&c.smp, "\n}");
    }
    xb_str(&c.smp, "}\n");
done:
    if (xb_finish(&c.out) && !rc)
        rc = TALLY_EIO;
    if (xb_finish(&c.smp) && !rc)
        rc = TALLY_EIO;
    if (rc == TALLY_ENOMEM && !err->code)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory writing the chrome export");
    if (rc == TALLY_EIO && !err->code)
        rc = tally_errf(err, TALLY_EIO, "writing the chrome export failed");
    fclose(c.tmp);
    u64map_free(&c.stack_sf);
    u64map_free(&c.node_ix);
    free(c.node_parent);
    free(c.node_fn);
    xb_names_free(&c.jname);
    xp_kinds_free(&c.kinds);
    u64map_free(&c.ctr_ix);
    free(c.ctr_sum);
    free(c.th);
    rep_names_free(&c.names);
    return rc;
}
