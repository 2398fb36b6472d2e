/*
 * print_stats.c - er_print's statistics and index objects: -statistics [EXP_ID] (per experiment,
 * over the selected samples: span, thread time, the time in each state, the kernel's resource
 * counts), -sample_detail [EXP_ID] (those statistics, then the same block for each selected
 * sample of the experiment's first process), -cpu_list, -indxobj_list and -indxobj TYPE (the
 * exclusive metrics by thread, CPU, sample, second of execution, process or experiment).
 *
 * Where the figures come from: times in the states are the recorded clock samples of the
 * experiment's threads under the current selection (User Lock: tally's User Lock Time; Wait CPU:
 * its Wait CPU Time; Sleep: Sleep plus I/O Wait Time; Trap CPU, page-fault and Stopped times are
 * not measured on Linux and are 0, as er_print prints them); the counts are the kernel's
 * (getrusage deltas of the selected samples, every process of the experiment). See print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/u64map.h"
#include "print.h"

/* er_print's numbers: "0." for zero, else %.3f; percentages "  8.7" or "  0. " */
static void fmt_sec(char *b, size_t n, double v)
{
    if (v == 0)
        snprintf(b, n, " 0.   ");
    else
        snprintf(b, n, "%6.3f", v);
}

static void stat_line(sink_t *o, const char *label, double v, double total)
{
    char vb[32], pb[32];
    fmt_sec(vb, sizeof vb, v);
    if (v == 0 || total <= 0)
        snprintf(pb, sizeof pb, "  0. ");
    else
        snprintf(pb, sizeof pb, "%5.1f", 100.0 * v / total);
    sink_printf(o, "%50s: %s (%s%%)\n", label, vb, pb);
}

typedef struct stats {
    const char *start_label, *end_label;
    double start, end;
    const uint64_t *v; /* the engine's metrics over the span (NULL: only the kernel's) */
    double utime, stime;
    uint64_t minflt, majflt, inblock, oublock, nvcsw, nivcsw, chars;
} stats_t;

static void stats_text(pstate_t *ps, const stats_t *s)
{
    sink_t *o = &ps->out;
    eng_t *g = ps->ses->eng;
    char b[32];
    sink_printf(o, "%50s: %s\n", "Start Label", s->start_label);
    sink_printf(o, "%50s: %s\n", "End Label", s->end_label);
    fmt_sec(b, sizeof b, s->start);
    sink_printf(o, "%50s: %s\n", "Start Time (sec.)", b);
    fmt_sec(b, sizeof b, s->end);
    sink_printf(o, "%50s: %s\n", "End Time (sec.)", b);
    double dur = s->end > s->start ? s->end - s->start : 0;
    fmt_sec(b, sizeof b, dur);
    sink_printf(o, "%50s: %s\n", "Duration (sec.)", b);
    double user = s->utime, sys = s->stime, lock = 0, wait = 0, sleep = 0;
    double total = user + sys;
    if (s->v) {
        user = pr_scaled(g, ENG_M_USER, s->v[ENG_M_USER]);
        sys = pr_scaled(g, ENG_M_SYSTEM, s->v[ENG_M_SYSTEM]);
        lock = pr_scaled(g, ENG_M_LOCK, s->v[ENG_M_LOCK]);
        wait = pr_scaled(g, ENG_M_WAIT, s->v[ENG_M_WAIT]);
        sleep = pr_scaled(g, ENG_M_SLEEP, s->v[ENG_M_SLEEP]) + pr_scaled(g, ENG_M_IO, s->v[ENG_M_IO]);
        total = pr_scaled(g, ENG_M_TOTAL, s->v[ENG_M_TOTAL]);
    }
    fmt_sec(b, sizeof b, total);
    sink_printf(o, "%50s: %s\n", "Total Thread Time (sec.)", b);
    fmt_sec(b, sizeof b, dur > 0 ? total / dur : 0);
    sink_printf(o, "%50s: %s\n\n", "Average number of Threads", b);
    sink_printf(o, "%50s:\n", "Process Times (sec.)");
    stat_line(o, "User CPU", user, total);
    stat_line(o, "System CPU", sys, total);
    stat_line(o, "Trap CPU", 0, total);
    stat_line(o, "User Lock", lock, total);
    stat_line(o, "Data Page Fault", 0, total);
    stat_line(o, "Text Page Fault", 0, total);
    stat_line(o, "Kernel Page Fault", 0, total);
    stat_line(o, "Stopped", 0, total);
    stat_line(o, "Wait CPU", wait, total);
    stat_line(o, "Sleep", sleep, total);
    if (!s->v)
        sink_printf(o, "%50s  (the kernel's CPU times of the process: its thread states per "
                       "sample are known for the first experiment's samples only)\n", "");
}

static void counts_text(pstate_t *ps, const stats_t *s)
{
    sink_t *o = &ps->out;
    const struct {
        const char *label;
        uint64_t v;
    } c[] = {
        { "Minor Page Faults", s->minflt }, { "Major Page Faults", s->majflt },
        { "Process swaps", 0 }, { "Input blocks", s->inblock }, { "Output blocks", s->oublock },
        { "Messages sent", 0 }, { "Messages received", 0 }, { "Signals handled", 0 },
        { "Voluntary context switches", s->nvcsw }, { "Involuntary context switches", s->nivcsw },
        { "System calls", 0 }, { "Characters of I/O", s->chars },
    };
    sink_printf(o, "\n");
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        sink_printf(o, "%50s: %6llu\n", c[i].label, (unsigned long long)c[i].v);
}

static void stats_json(pstate_t *ps, json_t *j, const stats_t *s)
{
    eng_t *g = ps->ses->eng;
    json_key(j, "start_label");
    json_str(j, s->start_label);
    json_key(j, "end_label");
    json_str(j, s->end_label);
    json_key(j, "start");
    json_num(j, s->start);
    json_key(j, "end");
    json_num(j, s->end);
    if (s->v)
        pr_jall_metrics(ps, j, s->v, s->v, 0);
    json_key(j, "user_cpu_kernel");
    json_num(j, s->utime);
    json_key(j, "system_cpu_kernel");
    json_num(j, s->stime);
    const char *k[] = { "minor_faults", "major_faults", "input_blocks", "output_blocks",
                        "voluntary_switches", "involuntary_switches", "io_chars" };
    const uint64_t v[] = { s->minflt, s->majflt, s->inblock, s->oublock, s->nvcsw, s->nivcsw,
                           s->chars };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        json_key(j, k[i]);
        json_u64(j, v[i]);
    }
    (void)g;
}

/* The sample labels: the selected samples' first and last, or "Total" for every sample. */
static const char *sample_label(const rep_sample_t *r, int end)
{
    if (end)
        return r->has_next ? "periodic" : "end of run";
    return r->reason ? r->reason : r->k == 0 ? "start of run" : "periodic";
}

/* Adds sample r's kernel counts to s. */
static void add_counts(stats_t *s, const rep_sample_t *r)
{
    if (!r->has_next)
        return;
    s->utime += r->utime;
    s->stime += r->stime;
    s->minflt += r->minflt;
    s->majflt += r->majflt;
    s->inblock += r->inblock;
    s->oublock += r->oublock;
    s->nvcsw += r->nvcsw;
    s->nivcsw += r->nivcsw;
    s->chars += r->rchar + r->wchar;
}

/* ---- index objects -------------------------------------------------------------------------- */

enum { IX_THREADS, IX_CPUS, IX_SAMPLES, IX_SECONDS, IX_PROCESSES, IX_EXPERIMENTS, IX_N };
static const struct {
    const char *name, *expr;
} ixtypes[IX_N] = {
    { "Threads", "THRID" },     { "CPUs", "CPUID" },  { "Samples", "SAMPLE" },
    { "Seconds", "TSTAMP/1000000000" }, { "Processes", "PID" }, { "Experiment_IDs", "EXPID" },
};

int view_indxobj_list(pstate_t *ps, const char *a)
{
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "indxobj_list");
        json_key(&j, "types");
        json_arr_begin(&j);
        for (int i = 0; i < IX_N; i++)
            json_str(&j, ixtypes[i].name);
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
        return 0;
    }
    sink_printf(&ps->out, " Index Object Types Available:\n");
    for (int i = 0; i < IX_N; i++)
        sink_printf(&ps->out, "  %s \t(%s)\n", ixtypes[i].name, ixtypes[i].expr);
    return 0;
}

typedef struct ixrow {
    uint64_t key;
    uint64_t *v;
} ixrow_t;

typedef struct ixctx {
    eng_t *g;
    int type, nmetrics;
    uint64_t run_start;
    u64map_t map;
    ixrow_t *rows;
    size_t n, cap;
    int oom;
} ixctx_t;

/* The key of an event for the index object type: experiment in bits 40.., process 32..39 where
 * they matter, the object's number below. */
static uint64_t ix_key(ixctx_t *c, const rep_event_t *e)
{
    uint64_t exp = e->thread ? e->thread->exp : 0, proc = e->ev->proc & 0xff;
    switch (c->type) {
    case IX_THREADS: return e->thread ? ((uint64_t)e->thread->exp << 40) | e->thread->number : 0;
    case IX_CPUS: return (exp << 40) | e->ev->cpu;
    case IX_SAMPLES:
        return (exp << 40) | (proc << 32) | eng_sample_of(c->g, (uint32_t)exp, e->ev->proc, e->ev->t);
    case IX_SECONDS:
        return e->ev->t > c->run_start ? (e->ev->t - c->run_start) / 1000000000u : 0;
    case IX_PROCESSES: return (exp << 40) | (proc << 32);
    default: return exp << 40;
    }
}

static int ix_event(void *ctx, const rep_event_t *e)
{
    ixctx_t *c = ctx;
    int found;
    uint32_t *slot = u64map_slot(&c->map, ix_key(c, e), &found);
    if (!slot) {
        c->oom = 1;
        return 1;
    }
    if (!found) {
        if (c->n == c->cap) {
            size_t cap = c->cap ? 2 * c->cap : 64;
            ixrow_t *r = realloc(c->rows, cap * sizeof *r);
            if (!r) {
                c->oom = 1;
                return 1;
            }
            c->rows = r;
            c->cap = cap;
        }
        c->rows[c->n] = (ixrow_t){ ix_key(c, e), calloc((size_t)c->nmetrics, sizeof(uint64_t)) };
        if (!c->rows[c->n].v) {
            c->oom = 1;
            return 1;
        }
        *slot = (uint32_t)c->n++;
    }
    uint64_t *v = c->rows[*slot].v;
    for (int m = 0; m < c->nmetrics; m++)
        v[m] += e->v[m];
    return 0;
}

/* The values of every selected event by index object type (c->type); 0 or 1 after reporting. */
static int ix_collect(pstate_t *ps, ixctx_t *c)
{
    tally_err_t err = { 0 };
    int rc = 0;
    if (rep_events(ps->ses, ix_event, c, &err) && !c->oom)
        rc = pr_report(&err);
    if (c->oom) {
        esc_fprintf(stderr, "tally: out of memory collecting index objects\n");
        rc = 1;
    }
    return rc;
}

static void ix_free(ixctx_t *c)
{
    u64map_free(&c->map);
    for (size_t i = 0; i < c->n; i++)
        free(c->rows[i].v);
    free(c->rows);
}

/* Experiment x's statistics over the selected samples; v (nmetrics, zeroed) gets the engine's
 * sums over its threads. */
static void exp_stats(pstate_t *ps, const rep_buckets_t *b, size_t x, const ixctx_t *c,
                      uint64_t *v, stats_t *s)
{
    eng_t *g = ps->ses->eng;
    const exp_experiment_t *e = ps->ses->exps[x];
    int all = !strcmp(eng_sample_selection(g), "all");
    *s = (stats_t){ .start_label = all ? "Total" : NULL, .end_label = all ? "Total" : NULL,
                    .start = -1, .v = v };
    for (size_t i = 0; i < c->n; i++) /* the selected events of the experiment */
        if ((c->rows[i].key >> 40) == x)
            for (int m = 0; m < c->nmetrics; m++)
                v[m] += c->rows[i].v[m];
    for (size_t i = 0; i < e->nprocs; i++) {
        const exp_process_t *p = e->procs[i];
        for (size_t k = 0; k < p->nsamples; k++) {
            if (!eng_sample_selected(g, (uint32_t)(k + 1)))
                continue;
            rep_sample_t r;
            rep_sample(ps->ses, b, p, x == 0 && i == 0, k, &r);
            add_counts(s, &r);
            if (i != 0)
                continue;
            if (s->start < 0 || r.start < s->start) {
                s->start = r.start;
                if (!all)
                    s->start_label = sample_label(&r, 0);
            }
            if (r.start + r.length >= s->end) {
                s->end = r.start + r.length;
                if (!all)
                    s->end_label = sample_label(&r, 1);
            }
        }
    }
    if (s->start < 0)
        s->start = 0;
    if (!s->start_label)
        s->start_label = s->end_label = "(no sample selected)";
}

/* statistics (detail 0) and sample_detail (1) */
static int statistics(pstate_t *ps, const char *arg, int detail)
{
    const char *cmd = detail ? "sample_detail" : "statistics";
    size_t only;
    if (pr_exp_id(ps, cmd, arg, &only))
        return 1;
    tally_err_t err = { 0 };
    eng_t *g = ps->ses->eng;
    ixctx_t c = { .g = g, .type = IX_EXPERIMENTS, .nmetrics = eng_nmetrics(g),
                  .run_start = eng_run_start(g) };
    if (ix_collect(ps, &c)) {
        ix_free(&c);
        return 1;
    }
    rep_buckets_t b;
    if (rep_sample_totals(ps->ses, &b, &err)) {
        ix_free(&c);
        return pr_report(&err);
    }
    uint64_t *v = calloc((size_t)eng_nmetrics(ps->ses->eng), sizeof *v);
    if (!v) {
        rep_buckets_free(&b);
        ix_free(&c);
        return 1;
    }
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, cmd);
        json_key(&j, "experiments");
        json_arr_begin(&j);
    }
    for (size_t x = 0; x < ps->ses->nexps; x++) {
        if (only != SIZE_MAX && x != only)
            continue;
        memset(v, 0, (size_t)eng_nmetrics(ps->ses->eng) * sizeof *v);
        stats_t s;
        exp_stats(ps, &b, x, &c, v, &s);
        const exp_experiment_t *e = ps->ses->exps[x];
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "experiment");
            json_str(&j, e->path);
            stats_json(ps, &j, &s);
        } else {
            sink_printf(&ps->out, "Experiment: %s\n        Aggregated statistics for selected "
                                  "samples\n\n", e->path);
            stats_text(ps, &s);
            if (!detail)
                counts_text(ps, &s);
            sink_printf(&ps->out, "\n");
        }
        if (detail) { /* each selected sample of the experiment's first process */
            const exp_process_t *p = e->procs[0];
            if (ps->json) {
                json_key(&j, "samples");
                json_arr_begin(&j);
            } else {
                sink_printf(&ps->out, "\n%50s\n\n", "Individual samples");
            }
            for (size_t k = 0; k < p->nsamples; k++) {
                if (!eng_sample_selected(ps->ses->eng, (uint32_t)(k + 1)))
                    continue;
                rep_sample_t r;
                rep_sample(ps->ses, &b, p, x == 0, k, &r);
                stats_t one = { .start_label = sample_label(&r, 0), .end_label = sample_label(&r, 1),
                                .start = r.start, .end = r.start + r.length, .v = r.v };
                add_counts(&one, &r);
                if (ps->json) {
                    json_obj_begin(&j);
                    json_key(&j, "number");
                    json_u64(&j, k + 1);
                    stats_json(ps, &j, &one);
                    json_obj_end(&j);
                } else {
                    sink_printf(&ps->out, "%50s: %zu\n\n", "Sample Number", k + 1);
                    stats_text(ps, &one);
                    sink_printf(&ps->out, "\n");
                }
            }
            if (ps->json)
                json_arr_end(&j);
        }
        if (ps->json)
            json_obj_end(&j);
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    }
    free(v);
    rep_buckets_free(&b);
    ix_free(&c);
    return 0;
}

int view_statistics(pstate_t *ps, const char *a) { return statistics(ps, a, 0); }
int view_sample_detail_er(pstate_t *ps, const char *a) { return statistics(ps, a, 1); }

static char *ix_name(pstate_t *ps, int type, uint64_t key)
{
    char *out = NULL;
    unsigned exp = (unsigned)(key >> 40) + 1, proc = (unsigned)((key >> 32) & 0xff);
    uint32_t low = (uint32_t)key;
    int r = -1;
    switch (type) {
    case IX_THREADS: r = asprintf(&out, "Process %u, Thread %u", exp, low); break;
    case IX_CPUS:
        r = low == UINT32_MAX ? asprintf(&out, "CPU <unknown>") : asprintf(&out, "CPU %u", low);
        if (ps->ses->nexps > 1 && r >= 0) {
            char *o2 = NULL;
            r = asprintf(&o2, "%s (experiment %u)", out, exp);
            free(out);
            out = o2;
        }
        break;
    case IX_SAMPLES:
        if (ps->ses->nexps > 1 || proc)
            r = asprintf(&out, "Sample %u (%s, experiment %u)", low,
                         ps->ses->exps[exp - 1]->procs[proc]->name, exp);
        else
            r = asprintf(&out, "Sample %u", low);
        break;
    case IX_SECONDS: r = asprintf(&out, "Second of execution %llu", (unsigned long long)key); break;
    case IX_PROCESSES:
        r = asprintf(&out, "Process %u (pid %u, experiment %u)", proc + 1,
                     ps->ses->exps[exp - 1]->procs[proc]->pid, exp);
        break;
    default: r = asprintf(&out, "Experiment %u", exp); break;
    }
    return r < 0 ? NULL : out;
}

/* -indxobj TYPE: the current metrics' exclusive values by TYPE (er_print's index objects). */
int view_indxobj(pstate_t *ps, const char *a)
{
    int type = -1;
    for (int i = 0; i < IX_N; i++)
        if (!strcasecmp(a, ixtypes[i].name))
            type = i;
    if (type < 0) {
        esc_fprintf(stderr, "tally: -indxobj '%s': no such index object type; the types are "
                            "Threads, CPUs, Samples, Seconds, Processes, Experiment_IDs (see "
                            "-indxobj_list)\n", a);
        return 1;
    }
    eng_t *g = ps->ses->eng;
    ixctx_t c = { .g = g, .type = type, .nmetrics = eng_nmetrics(g), .run_start = eng_run_start(g) };
    int rc = ix_collect(ps, &c);
    /* the exclusive columns of -metrics (an index object's values are all exclusive) */
    mspec_t ms = ps->metrics;
    ms.ncols = 0;
    for (int k = 0; k < ps->metrics.ncols; k++)
        if (ps->metrics.cols[k].flavor == FL_E)
            ms.cols[ms.ncols++] = ps->metrics.cols[k];
    if (ms.name_pos > ms.ncols)
        ms.name_pos = ms.ncols;
    uint64_t *total = calloc((size_t)c.nmetrics, sizeof *total);
    row_t *rows = calloc(c.n + 1, sizeof *rows);
    char **names = calloc(c.n + 1, sizeof *names);
    if (!rc && (!total || !rows || !names)) {
        esc_fprintf(stderr, "tally: out of memory in -indxobj\n");
        rc = 1;
    }
    if (!rc) {
        for (size_t i = 0; i < c.n; i++) {
            for (int m = 0; m < c.nmetrics; m++)
                total[m] += c.rows[i].v[m];
            names[i] = ix_name(ps, type, c.rows[i].key);
            rows[i + 1] = (row_t){ names[i] ? names[i] : "?", { c.rows[i].v, c.rows[i].v, NULL },
                                   0, (uint32_t)i };
        }
        rows[0] = (row_t){ "<Total>", { total, total, NULL }, 0, 0 };
        /* objects with nothing in the columns shown (events of no metric there) are left out */
        size_t kept = 0;
        for (size_t i = 0; i < c.n; i++) {
            int any = 0;
            for (int k = 0; k < ms.ncols && !any; k++)
                any = rows[i + 1].v[0][ms.cols[k].metric] != 0;
            if (any || !ms.ncols)
                rows[1 + kept++] = rows[i + 1];
        }
        pr_sort_rows(ps, rows + 1, kept, 0);
        size_t n = pr_limit_rows(ps, kept);
        if (ps->json) {
            json_t j;
            pr_json_begin(ps, &j);
            json_key(&j, "view");
            json_str(&j, "indxobj");
            json_key(&j, "type");
            json_str(&j, ixtypes[type].name);
            pr_jmetrics(&j, &ms);
            json_key(&j, "rows");
            json_arr_begin(&j);
            for (size_t i = 0; i <= n; i++)
                pr_jrow(&j, &ms, &rows[i], total);
            json_arr_end(&j);
            json_obj_end(&j);
            json_end_doc(&j);
        } else {
            char st[160];
            sink_printf(&ps->out, "Objects sorted by metric: %s\n\n",
                        pr_sort_title(ps, st, sizeof st));
            pr_table_text(ps, &ms, rows, n + 1, total);
            sink_printf(&ps->out, "\n");
        }
    }
    for (size_t i = 0; names && i < c.n; i++)
        free(names[i]);
    free(names);
    free(rows);
    free(total);
    ix_free(&c);
    return rc;
}

/* -cpu_list: per experiment, the CPU selection and how many CPUs the selected events ran on
 * (er_print's table). */
int view_cpu_list(pstate_t *ps, const char *a)
{
    eng_t *g = ps->ses->eng;
    ixctx_t c = { .g = g, .type = IX_CPUS, .nmetrics = eng_nmetrics(g), .run_start = eng_run_start(g) };
    if (ix_collect(ps, &c)) {
        ix_free(&c);
        return 1;
    }
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "cpu_list");
        json_key(&j, "selection");
        json_str(&j, eng_cpu_selection(g));
        json_key(&j, "experiments");
        json_arr_begin(&j);
    } else {
        sink_printf(&ps->out, "Exp Sel Total \n=== === ===== \n");
    }
    for (size_t x = 0; x < ps->ses->nexps; x++) {
        size_t n = 0;
        for (size_t i = 0; i < c.n; i++)
            n += (c.rows[i].key >> 40) == x && (uint32_t)c.rows[i].key != UINT32_MAX;
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "experiment");
            json_u64(&j, x + 1);
            json_key(&j, "cpus");
            json_u64(&j, n);
            json_obj_end(&j);
        } else {
            sink_printf(&ps->out, "%3zu %3s %5zu \n", x + 1, eng_cpu_selection(g), n);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    }
    ix_free(&c);
    return 0;
}
