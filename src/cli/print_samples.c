/*
 * print_samples.c - the views over time: -sample_list, -sample_detail, the per-sample part of
 * -overview, -timeline; and the selections that go with them (-sample_select, -cpu_select,
 * -filters). Sample k of a process is the period from its k-th sample packet to the next. See
 * print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

/* ---- per-sample metric totals ---------------------------------------------------------------- */

typedef struct buckets {
    pstate_t *ps;
    size_t n;     /* sample numbers 0..n-1 */
    uint64_t *v;  /* [sample * eng_nmetrics + metric] */
} buckets_t;

static int bucket_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf,
                        uint32_t thread)
{
    buckets_t *b = ctx;
    (void)leaf, (void)thread;
    const eng_thread_t *t = eng_thread(b->ps->ses->eng, thread);
    if (t->exp != 0 || ev->proc != 0)
        return 0; /* sample numbers are per process: these totals are the root process's */
    uint32_t k = eng_sample_of(b->ps->ses->eng, t->exp, ev->proc, ev->t);
    if (k >= b->n)
        k = (uint32_t)b->n - 1;
    size_t nm = (size_t)eng_nmetrics(b->ps->ses->eng);
    for (size_t m = 0; m < nm; m++)
        b->v[(size_t)k * nm + m] += v[m];
    return 0;
}

/* The metric totals of every sample of the root process of the first experiment (under the
 * selection). */
static int sample_totals(pstate_t *ps, buckets_t *b)
{
    b->ps = ps;
    b->n = 1;
    for (size_t x = 0; x < ps->ses->nexps; x++)
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++)
            if (ps->ses->exps[x]->procs[i]->nsamples + 1 > b->n)
                b->n = ps->ses->exps[x]->procs[i]->nsamples + 1;
    b->v = calloc(b->n * eng_nmetrics(ps->ses->eng), sizeof *b->v);
    if (!b->v)
        return 1;
    tally_err_t err = { 0 };
    if (eng_foreach_event(ps->ses->eng, bucket_event, b, &err)) {
        free(b->v);
        return pr_report(&err);
    }
    return 0;
}

/* ---- -sample_list, -sample_detail ------------------------------------------------------------ */

static double secs_since(pstate_t *ps, uint64_t t)
{
    uint64_t t0 = eng_run_start(ps->ses->eng);
    return t > t0 ? (double)(t - t0) * 1e-9 : 0.0;
}

/* The packet after sample k of p (its end), or NULL for the last. */
static const exp_sample_t *next_packet(const exp_process_t *p, size_t k)
{
    return k + 1 < p->nsamples ? &p->samples[k + 1] : NULL;
}

static uint64_t delta(uint64_t a, uint64_t b) { return b > a ? b - a : 0; }

static void json_sample(pstate_t *ps, const exp_process_t *p, size_t k, const uint64_t *v)
{
    const exp_sample_t *s = &p->samples[k], *e = next_packet(p, k);
    esc_printf("{\"number\":%zu,\"process\":", k + 1);
    pr_json_str(stdout, *p->name ? p->name : "(root)");
    esc_printf(",\"start\":");
    pr_json_num(stdout, secs_since(ps, s->t));
    esc_printf(",\"duration\":");
    pr_json_num(stdout, e ? (double)delta(s->t, e->t) * 1e-9 : 0);
    esc_printf(",\"reason\":");
    pr_json_str(stdout, s->reason ? s->reason : "");
    esc_printf(",\"label\":");
    pr_json_str(stdout, s->label ? s->label : "");
    if (e)
        esc_printf(",\"utime\":%.9g,\"stime\":%.9g,\"minflt\":%llu,\"majflt\":%llu,\"inblock\":%llu,"
               "\"oublock\":%llu,\"nvcsw\":%llu,\"nivcsw\":%llu,\"rchar\":%llu,\"wchar\":%llu",
               (double)delta(s->utime, e->utime) * 1e-9, (double)delta(s->stime, e->stime) * 1e-9,
               (unsigned long long)delta(s->minflt, e->minflt),
               (unsigned long long)delta(s->majflt, e->majflt),
               (unsigned long long)delta(s->inblock, e->inblock),
               (unsigned long long)delta(s->oublock, e->oublock),
               (unsigned long long)delta(s->nvcsw, e->nvcsw),
               (unsigned long long)delta(s->nivcsw, e->nivcsw),
               (unsigned long long)delta(s->rchar, e->rchar),
               (unsigned long long)delta(s->wchar, e->wchar));
    esc_printf(",\"rss_kb\":%llu,\"maxrss_kb\":%llu", (unsigned long long)(e ? e->rss : s->rss),
           (unsigned long long)(e ? e->maxrss : s->maxrss));
    if (v)
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            if (!eng_has_metric(ps->ses->eng, m))
                continue;
            esc_printf(",\"%s\":", eng_metric(ps->ses->eng, m)->name);
            pr_json_num(stdout, pr_scaled(ps->ses->eng, m, v[m]));
        }
    esc_printf("}");
}

int view_sample_list(pstate_t *ps)
{
    buckets_t b;
    if (sample_totals(ps, &b))
        return 1;
    int first = 1;
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"sample_list\",\"selection\":");
        pr_json_str(stdout, eng_sample_selection(ps->ses->eng));
        esc_printf(",\"samples\":[");
    } else {
        esc_printf("Samples (selected: %s)\n\n%4s %-12s %9s %9s %9s %9s %9s %8s %8s  %s\n",
               eng_sample_selection(ps->ses->eng), "#", "Process", "Start s", "Length s", "User s",
               "System s", "Lock+I/O", "Faults", "RSS MB", "Reason / label");
    }
    for (size_t x = 0; x < ps->ses->nexps; x++)
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[x]->procs[i];
            for (size_t k = 0; k < p->nsamples; k++) {
                const exp_sample_t *s = &p->samples[k], *e = next_packet(p, k);
                const uint64_t *v = x == 0 && i == 0 && k + 1 < b.n ? b.v + (k + 1) * eng_nmetrics(ps->ses->eng)
                                                                    : NULL;
                if (ps->json) {
                    esc_printf(first ? "" : ",");
                    json_sample(ps, p, k, v);
                    first = 0;
                    continue;
                }
                esc_printf("%4zu %-12.12s %9.3f %9.3f %9.3f %9.3f %9.3f %8llu %8.1f  %s%s%s\n", k + 1,
                       *p->name ? p->name : "(root)", secs_since(ps, s->t),
                       e ? (double)delta(s->t, e->t) * 1e-9 : 0.0,
                       e ? (double)delta(s->utime, e->utime) * 1e-9 : 0.0,
                       e ? (double)delta(s->stime, e->stime) * 1e-9 : 0.0,
                       v ? pr_scaled(ps->ses->eng, ENG_M_LOCK, v[ENG_M_LOCK] + v[ENG_M_IO]) : 0.0,
                       e ? (unsigned long long)(delta(s->minflt, e->minflt) +
                                                delta(s->majflt, e->majflt))
                         : 0ULL,
                       (double)(e ? e->rss : s->rss) / 1024.0, s->reason ? s->reason : "",
                       s->label ? " " : "", s->label ? s->label : "");
            }
        }
    if (ps->json)
        esc_printf("]}\n");
    else
        esc_printf("\nSample k runs from its packet to the next; its states are summed over threads "
               "(Lock+I/O: User Lock and I/O Wait Time, root process only).\n\n");
    free(b.v);
    return 0;
}

int view_sample_detail(pstate_t *ps, const char *arg)
{
    char *end;
    long k = strtol(arg, &end, 10);
    const exp_process_t *root = ps->ses->exps[0]->procs[0];
    if (*end || k < 1 || (size_t)k > root->nsamples) {
        esc_fprintf(stderr, "tally: -sample_detail '%s': samples are numbered 1 to %zu (see "
                        "-sample_list)\n", arg, root->nsamples);
        return 1;
    }
    buckets_t b;
    if (sample_totals(ps, &b))
        return 1;
    const uint64_t *v = (size_t)k < b.n ? b.v + (size_t)k * eng_nmetrics(ps->ses->eng) : NULL;
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"sample_detail\",\"sample\":");
        json_sample(ps, root, (size_t)k - 1, v);
        esc_printf("}\n");
        free(b.v);
        return 0;
    }
    const exp_sample_t *s = &root->samples[k - 1], *e = next_packet(root, (size_t)k - 1);
    esc_printf("Sample %ld of the root process (pid %u)\n\n", k, root->pid);
    esc_printf("  %-28s %.3f s (packet: %s%s%s)\n", "Start", secs_since(ps, s->t),
           s->reason ? s->reason : "", s->label ? ", " : "", s->label ? s->label : "");
    if (!e) {
        esc_printf("  The last packet of the process: the sample is empty.\n\n");
        free(b.v);
        return 0;
    }
    esc_printf("  %-28s %.3f s\n", "Length", (double)delta(s->t, e->t) * 1e-9);
    esc_printf("  %-28s %.3f s\n", "User CPU (kernel)", (double)delta(s->utime, e->utime) * 1e-9);
    esc_printf("  %-28s %.3f s\n", "System CPU (kernel)", (double)delta(s->stime, e->stime) * 1e-9);
    esc_printf("  %-28s %llu minor, %llu major\n", "Page faults",
           (unsigned long long)delta(s->minflt, e->minflt),
           (unsigned long long)delta(s->majflt, e->majflt));
    esc_printf("  %-28s %llu in, %llu out\n", "Blocks", (unsigned long long)delta(s->inblock, e->inblock),
           (unsigned long long)delta(s->oublock, e->oublock));
    esc_printf("  %-28s %llu read, %llu written\n", "Bytes (system calls)",
           (unsigned long long)delta(s->rchar, e->rchar), (unsigned long long)delta(s->wchar, e->wchar));
    esc_printf("  %-28s %llu voluntary, %llu involuntary\n", "Context switches",
           (unsigned long long)delta(s->nvcsw, e->nvcsw), (unsigned long long)delta(s->nivcsw, e->nivcsw));
    esc_printf("  %-28s %.1f MB (peak so far %.1f MB)\n", "Resident set", (double)e->rss / 1024.0,
           (double)e->maxrss / 1024.0);
    if (v) {
        esc_printf("\n  Recorded in this sample (all threads):\n");
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++)
            if (eng_has_metric(ps->ses->eng, m))
                esc_printf("    %-26s %.3f %s\n", eng_metric(ps->ses->eng, m)->title, pr_scaled(ps->ses->eng, m, v[m]),
                       eng_metric(ps->ses->eng, m)->unit);
    }
    esc_printf("\n");
    free(b.v);
    return 0;
}

/* The states part of -overview (text): each state's share of the thread time, and per sample. */
void pr_overview_states(pstate_t *ps)
{
    const uint64_t *total = eng_total(ps->ses->eng);
    if (!total[ENG_M_TOTAL])
        return;
    static const int states[] = { ENG_M_USER, ENG_M_SYSTEM, ENG_M_WAIT, ENG_M_LOCK, ENG_M_IO,
                                  ENG_M_SLEEP };
    esc_printf("  Thread time:     %.3f s over all threads, by state:\n",
           pr_scaled(ps->ses->eng, ENG_M_TOTAL, total[ENG_M_TOTAL]));
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        int m = states[i];
        double share = 100.0 * (double)total[m] / (double)total[ENG_M_TOTAL];
        int bar = (int)(share / 2.5 + 0.5);
        esc_printf("    %-16s %8.3f s  %6.2f%%  %.*s\n", eng_metric(ps->ses->eng, m)->title, pr_scaled(ps->ses->eng, m, total[m]),
               share, bar, "########################################");
    }
    buckets_t b;
    if (sample_totals(ps, &b))
        return;
    esc_printf("\n  %4s %-10s %8s %8s %8s %8s %8s %8s  (seconds, all threads)\n", "#", "Label", "User",
           "System", "Wait", "Lock", "I/O", "Sleep");
    const exp_process_t *root = ps->ses->exps[0]->procs[0];
    for (size_t k = 1; k < b.n; k++) {
        const uint64_t *v = b.v + k * eng_nmetrics(ps->ses->eng);
        if (!v[ENG_M_TOTAL])
            continue;
        const char *label = k - 1 < root->nsamples && root->samples[k - 1].label
                                ? root->samples[k - 1].label
                                : "";
        esc_printf("  %4zu %-10.10s", k, label);
        for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
            esc_printf(" %8.3f", pr_scaled(ps->ses->eng, states[i], v[states[i]]));
        esc_printf("\n");
    }
    free(b.v);
}

/* ---- -timeline ------------------------------------------------------------------------------- */

#define TL_COLS 64
#define TL_STATES 4 /* wait, lock, I/O, sleep */

typedef struct timeline {
    pstate_t *ps;
    uint64_t t0, t1;
    size_t nthreads;
    uint64_t *cpu;     /* [thread][col][slot]: CPU time of the hottest candidates (see below) */
    uint32_t *fn;      /* [thread][col][slot] function of each slot */
    uint64_t *state;   /* [thread][col][TL_STATES] */
} timeline_t;

#define TL_SLOTS 4 /* functions tracked per cell (the hottest wins; a simple, bounded tally) */

static int timeline_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf,
                          uint32_t thread)
{
    timeline_t *tl = ctx;
    if (ev->t < tl->t0 || thread >= tl->nthreads)
        return 0;
    size_t col = (size_t)((double)(ev->t - tl->t0) / (double)(tl->t1 - tl->t0 + 1) * TL_COLS);
    if (col >= TL_COLS)
        col = TL_COLS - 1;
    size_t cell = (size_t)thread * TL_COLS + col;
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
    return 0;
}

int view_timeline(pstate_t *ps)
{
    const eng_table_t *t = pr_table(ps, ENG_KIND_FUNCTION, 0);
    if (!t)
        return 1;
    timeline_t tl = { .ps = ps, .t0 = UINT64_MAX, .t1 = 0, .nthreads = eng_nthreads(ps->ses->eng) };
    for (size_t x = 0; x < ps->ses->nexps; x++)
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[x]->procs[i];
            if (p->t_start && p->t_start < tl.t0)
                tl.t0 = p->t_start;
            if (p->t_end != EXP_T_NEVER && p->t_end > tl.t1)
                tl.t1 = p->t_end;
        }
    if (tl.t1 <= tl.t0 || !tl.nthreads) {
        esc_printf(ps->json ? "{\"view\":\"timeline\",\"threads\":[]}\n" : "No events.\n\n");
        return 0;
    }
    size_t cells = tl.nthreads * TL_COLS;
    tl.cpu = calloc(cells * TL_SLOTS, sizeof *tl.cpu);
    tl.fn = calloc(cells * TL_SLOTS, sizeof *tl.fn);
    tl.state = calloc(cells * TL_STATES, sizeof *tl.state);
    if (!tl.cpu || !tl.fn || !tl.state)
        return 1;
    tally_err_t err = { 0 };
    int rc = eng_foreach_event(ps->ses->eng, timeline_event, &tl, &err);
    if (rc) {
        free(tl.cpu);
        free(tl.fn);
        free(tl.state);
        return pr_report(&err);
    }
    names_t nm;
    pr_names_build(ps, &nm, t);
    /* legend: the functions that win a cell, lettered by how many cells they win */
    size_t nf = eng_nobjects(ps->ses->eng, ENG_KIND_FUNCTION);
    uint32_t *wins = calloc(nf + 1, sizeof *wins);
    uint32_t *winner = malloc(cells * sizeof *winner);
    char *glyph = malloc(cells);
    if (!wins || !winner || !glyph)
        return 1;
    double cell_ns = (double)(tl.t1 - tl.t0) / TL_COLS;
    for (size_t c = 0; c < cells; c++) {
        uint64_t *cp = tl.cpu + c * TL_SLOTS, best = 0, cpu = 0;
        winner[c] = UINT32_MAX;
        for (int s = 0; s < TL_SLOTS; s++) {
            cpu += cp[s];
            if (cp[s] > best) {
                best = cp[s];
                winner[c] = tl.fn[c * TL_SLOTS + s];
            }
        }
        uint64_t *st = tl.state + c * TL_STATES, off = 0;
        int top = 0;
        for (int i = 0; i < TL_STATES; i++) {
            off += st[i];
            if (st[i] > st[top])
                top = i;
        }
        glyph[c] = ' ';
        if (cpu >= off && cpu > 0 && winner[c] != UINT32_MAX) {
            wins[winner[c]]++;
            glyph[c] = 0; /* a function letter, assigned below */
        } else if (off > 0 && (double)off > 0.05 * cell_ns) {
            glyph[c] = "^=%."[top];
            winner[c] = UINT32_MAX;
        } else {
            winner[c] = UINT32_MAX;
        }
    }
    char *letter = calloc(nf + 1, 1);
    uint32_t *order = malloc((nf + 1) * sizeof *order);
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
    static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for (size_t i = 0; i < nl; i++)
        letter[order[i]] = i < sizeof letters - 1 ? letters[i] : '*';
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"timeline\",\"start\":0,\"end\":");
        pr_json_num(stdout, (double)(tl.t1 - tl.t0) * 1e-9);
        esc_printf(",\"columns\":%d,\"legend\":{", TL_COLS);
        for (size_t i = 0; i < nl; i++) {
            esc_printf("%s\"%c\":", i ? "," : "", letter[order[i]]);
            pr_json_str(stdout, order[i] < nm.n && nm.name[order[i]] ? nm.name[order[i]]
                                : eng_object_name(ps->ses->eng, ENG_KIND_FUNCTION, order[i], ps->namefmt));
        }
        /* no comma before the states when no function won a cell (a run that only waited) */
        esc_printf("%s\"^\":\"<Wait CPU>\",\"=\":\"<User Lock>\",\"%%\":\"<I/O Wait>\",\".\":\"<Sleep>\"}"
                   ",\"threads\":[", nl ? "," : "");
    } else {
        esc_printf("Timeline: %.3f s in %d columns of %.1f ms; each cell shows the function with the "
               "most CPU time,\nor the thread's main state when it mostly did not run "
               "(^ wait CPU, = lock, %% I/O, . sleep)\n\n", (double)(tl.t1 - tl.t0) * 1e-9, TL_COLS,
               cell_ns * 1e-6);
    }
    int firstrow = 1;
    for (size_t th = 0; th < tl.nthreads; th++) {
        char row[TL_COLS + 1];
        int any = 0;
        for (size_t col = 0; col < TL_COLS; col++) {
            size_t c = th * TL_COLS + col;
            row[col] = glyph[c] ? glyph[c] : letter[winner[c]];
            any |= row[col] != ' ';
        }
        row[TL_COLS] = 0;
        if (!any)
            continue;
        const eng_thread_t *et = eng_thread(ps->ses->eng, th);
        if (ps->json) {
            esc_printf("%s{\"thread\":%u,\"tid\":%u,\"cells\":", firstrow ? "" : ",", et->number,
                   et->tid);
            firstrow = 0;
            pr_json_str(stdout, row);
            esc_printf("}");
        } else {
            esc_printf("%4u %7u |%s|\n", et->number, et->tid, row);
        }
    }
    if (ps->json) {
        esc_printf("]}\n");
    } else {
        esc_printf("\n");
        for (size_t i = 0; i < nl; i++)
            esc_printf("  %c  %s\n", letter[order[i]],
                   order[i] < nm.n && nm.name[order[i]]
                       ? nm.name[order[i]]
                       : eng_object_name(ps->ses->eng, ENG_KIND_FUNCTION, order[i], ps->namefmt));
        esc_printf("\n");
    }
    pr_names_free(&nm);
    free(wins);
    free(winner);
    free(glyph);
    free(letter);
    free(order);
    free(tl.cpu);
    free(tl.fn);
    free(tl.state);
    return 0;
}

/* ---- selections ------------------------------------------------------------------------------ */

int set_sample_select(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    return eng_select_samples(ps->ses->eng, arg, &err) ? pr_report(&err) : 0;
}

int set_cpu_select(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    return eng_select_cpus(ps->ses->eng, arg, &err) ? pr_report(&err) : 0;
}

int set_filters(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    return eng_set_filter(ps->ses->eng, arg, &err) ? pr_report(&err) : 0;
}
