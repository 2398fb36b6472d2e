/*
 * print_format.c - the formatting shared by every view of `tally print`: values and percentages,
 * JSON, display names, suggestions for misspelt names, metric specs, and aligned text tables.
 * See print.h.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/satadd.h"
#include "experiment/logfile.h"
#include "print.h"

/* ---- formatting helpers --------------------------------------------------------------------- */

double pr_scaled(const eng_t *g, int metric, uint64_t raw)
{
    return (double)raw * eng_metric(g, metric)->scale;
}

const char *pr_flavor_word(int fl, int abbrev)
{
    switch (fl) {
    case FL_E: return abbrev ? "Excl." : "Exclusive";
    case FL_I: return abbrev ? "Incl." : "Inclusive";
    default: return abbrev ? "Attr." : "Attributed";
    }
}

char pr_flavor_char(int fl) { return fl == FL_E ? 'e' : fl == FL_I ? 'i' : 'a'; }

/* Formats a value of metric in its unit for a text table. */
void pr_fmt_value(char *buf, size_t n, const eng_metric_def_t *d, uint64_t raw)
{
    if (!strcmp(d->unit, "s")) {
        if (raw == 0)
            snprintf(buf, n, "0.");
        else
            snprintf(buf, n, "%.3f", (double)raw * d->scale);
    } else {
        snprintf(buf, n, "%llu", (unsigned long long)raw);
    }
}

void pr_fmt_percent(char *buf, size_t n, uint64_t raw, uint64_t total)
{
    if (total == 0)
        snprintf(buf, n, "0.");
    else if (raw == 0)
        snprintf(buf, n, "0.");
    else
        snprintf(buf, n, "%.2f", 100.0 * (double)raw / (double)total);
}

void pr_names_build(pstate_t *ps, names_t *nm, const eng_table_t *t)
{
    tally_err_t err = { 0 };
    if (rep_names_build(ps->ses->eng, t, ps->namefmt, nm, &err)) {
        cli_report(&err);
        exit(1);
    }
}

void pr_names_free(names_t *nm) { rep_names_free(nm); }

void pr_suggest(char *buf, size_t n, const char *want, const char **cands, size_t ncands)
{
    rep_suggest(buf, n, want, cands, ncands);
}

rep_opts_t pr_opts(const pstate_t *ps)
{
    return (rep_opts_t){ ps->namefmt, ps->sort_flavor, ps->sort_metric, ps->limit, ps->kind };
}

/* ---- metric specs --------------------------------------------------------------------------- */

int pr_parse_mspec(const eng_t *g, const char *text, mspec_t *ms, int allowed, tally_err_t *err)
{
    mspec_t m = { .ncols = 0, .name_pos = -1 };
    snprintf(m.text, sizeof m.text, "%s", text);
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    for (char *item = strtok_r(copy, ":", &save); item; item = strtok_r(NULL, ":", &save)) {
        if (!strcmp(item, "name")) {
            m.name_pos = m.ncols;
            continue;
        }
        const char *p = item;
        int fl = 0, vis_value = 0, vis_pct = 0, hidden = 0;
        while (*p == 'e' || *p == 'i' || *p == 'a') {
            if (!strchr(".%+!", p[1]) && eng_metric_find(g, p) >= 0)
                break; /* a metric name that starts with e/i/a */
            fl |= *p == 'e' ? FL_E : *p == 'i' ? FL_I : FL_A;
            p++;
        }
        while (*p && strchr(".%+!", *p)) {
            if (*p == '.')
                vis_value = 1;
            else if (*p == '%')
                vis_pct = 1;
            else if (*p == '+')
                vis_value = vis_pct = 1;
            else
                hidden = 1;
            p++;
        }
        int metric = eng_metric_find(g, p);
        if (metric < 0) {
            tally_errf(err, TALLY_EUSAGE, "unknown metric '%s' in '%s'", p, text);
            const char *cands[ENG_MAX_METRICS];
            int nc = eng_nmetrics(g);
            for (int i = 0; i < nc; i++)
                cands[i] = eng_metric(g, i)->name;
            pr_suggest(err->msg, sizeof err->msg, p, cands, (size_t)nc);
            size_t len = strlen(err->msg);
            snprintf(err->msg + len, sizeof err->msg - len, " (see -metric_list)");
            free(copy);
            return TALLY_EUSAGE;
        }
        if (!fl)
            fl = allowed == FL_A ? FL_A : FL_E | FL_I;
        if (fl & ~allowed) {
            int rc = tally_errf(err, TALLY_EUSAGE,
                              "metric '%s': flavor %s here; use %s", item,
                              allowed == FL_A ? "must be attributed (a)" : "must be e or i",
                              allowed == FL_A ? "a.name" : "e.name or i.name");
            free(copy); /* after the message: it quotes the spec */
            return rc;
        }
        if (hidden)
            continue;
        if (!vis_value && !vis_pct)
            vis_value = 1;
        for (int f = FL_E; f <= FL_A; f <<= 1) {
            if (!(fl & f))
                continue;
            if (m.ncols == MAXCOLS) {
                int rc = tally_errf(err, TALLY_EUSAGE, "too many metrics in '%s'", text);
                free(copy); /* after the message: it quotes the spec */
                return rc;
            }
            m.cols[m.ncols++] = (mcol_t){ f, metric, vis_value, vis_pct, eng_metric(g, metric) };
        }
    }
    free(copy);
    if (m.name_pos < 0)
        m.name_pos = m.ncols;
    *ms = m;
    return 0;
}

/* ---- tables --------------------------------------------------------------------------------- */


static int pr_fl_index(int fl) { return fl == FL_E ? 0 : fl == FL_I ? 1 : 2; }

uint64_t pr_row_value(const row_t *r, int fl, int metric) { return rep_row_value(r, fl, metric); }

/* A column's three header lines: a flavor word and a metric's title (up to EXP_DECL_TITLE_MAX
 * bytes, declared by the experiment), padded to the column's width. */
typedef struct col_text {
    char h1[EXP_DECL_TITLE_MAX + 64], h2[EXP_DECL_TITLE_MAX + 64], h3[EXP_DECL_TITLE_MAX + 64];
    int width;
} col_text_t;

static void pr_col_headers(const mcol_t *c, col_text_t *t)
{
    /* "Excl. Total CPU Time" -> "Excl. Total" / "CPU" / " sec.      %" */
    const eng_metric_def_t *d = c->def;
    char title[128];
    snprintf(title, sizeof title, "%s", d->title);
    size_t tl = strlen(title);
    if (tl > 5 && !strcmp(title + tl - 5, " Time"))
        title[tl - 5] = 0;
    char *last = strrchr(title, ' ');
    const char *second = "";
    if (last) {
        *last = 0;
        second = last + 1;
    }
    snprintf(t->h1, sizeof t->h1, "%s %s", pr_flavor_word(c->flavor, 1), title);
    snprintf(t->h2, sizeof t->h2, "%s", second);
    const char *unit = !strcmp(d->unit, "s") ? "sec." : d->unit;
    int vw = c->value ? 10 : 0, pw = c->percent ? 7 : 0;
    int w = vw + pw;
    if ((int)strlen(t->h1) + 1 > w)
        w = (int)strlen(t->h1) + 1;
    t->width = w;
    if (c->value && c->percent)
        snprintf(t->h3, sizeof t->h3, "%*s%*s", w - pw, unit, pw, "%");
    else if (c->value)
        snprintf(t->h3, sizeof t->h3, "%*s", w, unit);
    else
        snprintf(t->h3, sizeof t->h3, "%*s", w, "%");
}

void pr_table_text(pstate_t *ps, const mspec_t *ms, const row_t *rows, size_t n,
                             const uint64_t *total)
{
    pr_table_text_ex(ps, ms, rows, n, total, NULL, NULL);
}

void pr_table_text_ex(pstate_t *ps, const mspec_t *ms, const row_t *rows, size_t n,
                      const uint64_t *total, pr_row_hook hook, void *ctx)
{
    if (ps->printmode != PR_PM_TEXT) {
        pr_table_other(ps, ms, rows, n, total);
        return;
    }
    col_text_t ct[MAXCOLS];
    for (int c = 0; c < ms->ncols; c++)
        pr_col_headers(&ms->cols[c], &ct[c]);
    /* The name column is as wide as its longest name when metric columns follow it (er_print
     * allows "name" anywhere in -metrics); last, it is left ragged. */
    int namew = 0;
    if (ms->name_pos < ms->ncols) {
        namew = 4;
        for (size_t r = 0; r < n; r++) {
            size_t l = strlen(rows[r].name) + 1;
            if ((int)l > namew)
                namew = l > 200 ? 200 : (int)l;
        }
        namew += 1;
    }
    for (int line = 0; line < 3; line++) {
        for (int c = 0; c <= ms->ncols; c++) {
            if (c == ms->name_pos)
                sink_printf(&ps->out, "  %-*s", namew, line == 0 ? "Name" : "");
            if (c == ms->ncols)
                break;
            const char *h = line == 0 ? ct[c].h1 : line == 1 ? ct[c].h2 : ct[c].h3;
            if (line == 2)
                sink_printf(&ps->out, "%s", h);
            else
                sink_printf(&ps->out, "%-*s", ct[c].width, h);
        }
        sink_printf(&ps->out, "\n");
    }
    for (size_t r = 0; r < n; r++) {
        if (hook)
            hook(ps, ctx, r);
        for (int c = 0; c <= ms->ncols; c++) {
            if (c == ms->name_pos)
                sink_printf(&ps->out, "  %c%-*s", rows[r].mark ? rows[r].mark : ' ',
                            namew > 0 ? namew - 1 : 0, rows[r].name);
            if (c == ms->ncols)
                break;
            const mcol_t *mc = &ms->cols[c];
            char vb[64] = "", pb[32] = "";
            uint64_t raw = pr_row_value(&rows[r], mc->flavor, mc->metric);
            if (!rows[r].v[pr_fl_index(mc->flavor)]) {
                sink_printf(&ps->out, "%*s", ct[c].width, "");
                continue;
            }
            if (mc->value)
                pr_fmt_value(vb, sizeof vb, mc->def, raw);
            if (mc->percent)
                pr_fmt_percent(pb, sizeof pb, raw, total[mc->metric]);
            if (mc->value && mc->percent)
                sink_printf(&ps->out, "%*s%7s", ct[c].width - 7, vb, pb);
            else
                sink_printf(&ps->out, "%*s", ct[c].width, mc->value ? vb : pb);
        }
        sink_printf(&ps->out, "\n");
    }
    if (hook)
        hook(ps, ctx, n);
}

void pr_jmetrics(json_t *j, const mspec_t *ms)
{
    json_key(j, "metrics");
    json_arr_begin(j);
    for (int c = 0; c < ms->ncols; c++) {
        const mcol_t *mc = &ms->cols[c];
        const eng_metric_def_t *d = mc->def;
        json_obj_begin(j);
        json_key(j, "name");
        json_strf(j, "%c.%s", pr_flavor_char(mc->flavor), d->name);
        json_key(j, "title");
        json_strf(j, "%s %s", pr_flavor_word(mc->flavor, 0), d->title);
        json_key(j, "unit");
        json_str(j, d->unit);
        json_obj_end(j);
    }
    json_arr_end(j);
}

void pr_jrow(json_t *j, const mspec_t *ms, const row_t *r, const uint64_t *total)
{
    json_obj_begin(j);
    json_key(j, "name");
    json_str(j, r->name);
    pr_jvalues(j, ms, r, total);
    json_obj_end(j);
}

void pr_jvalues(json_t *j, const mspec_t *ms, const row_t *r, const uint64_t *total)
{
    for (int c = 0; c < ms->ncols; c++) {
        const mcol_t *mc = &ms->cols[c];
        if (!r->v[pr_fl_index(mc->flavor)])
            continue;
        uint64_t raw = pr_row_value(r, mc->flavor, mc->metric);
        json_keyf(j, "%c.%s", pr_flavor_char(mc->flavor), mc->def->name);
        json_num(j, (double)raw * mc->def->scale);
        if (mc->percent) {
            json_keyf(j, "%c.%%%s", pr_flavor_char(mc->flavor), mc->def->name);
            json_num(j, total[mc->metric] ? 100.0 * (double)raw / (double)total[mc->metric] : 0);
        }
    }
}

void pr_jall_metrics(pstate_t *ps, json_t *j, const uint64_t *ex, const uint64_t *in,
                     int incl_first)
{
    for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
        /* the metrics of the kind shown: block metrics for blocks, the others for functions */
        if (!eng_has_metric(ps->ses->eng, m) ||
            eng_is_block_metric(ps->ses->eng, m) != (ps->kind == ENG_KIND_BLOCK))
            continue;
        for (int k = 0; k < 2; k++) {
            int incl = incl_first ? k == 0 : k == 1;
            json_keyf(j, "%c.%s", incl ? 'i' : 'e', eng_metric(ps->ses->eng, m)->name);
            json_num(j, pr_scaled(ps->ses->eng, m, (incl ? in : ex)[m]));
        }
    }
}

void pr_sort_rows(pstate_t *ps, row_t *rows, size_t n, int attributed)
{
    rep_sort_rows(rows, n, attributed ? FL_A : ps->sort_flavor, ps->sort_metric);
}

const char *pr_sort_title(pstate_t *ps, char *buf, size_t n)
{
    if (ps->sort_metric < 0)
        snprintf(buf, n, "Name");
    else
        snprintf(buf, n, "%s %s", pr_flavor_word(ps->sort_flavor, 0),
                 eng_metric(ps->ses->eng, ps->sort_metric)->title);
    return buf;
}

int pr_exp_id(pstate_t *ps, const char *cmd, const char *arg, size_t *x)
{
    *x = SIZE_MAX;
    if (!*arg || !strcmp(arg, "all"))
        return 0;
    char *end;
    unsigned long long k = strtoull(arg, &end, 10);
    if (*end || arg[0] == '-' || k < 1 || k > ps->ses->nexps) {
        esc_fprintf(stderr, "tally: -%s '%s': experiments are numbered 1 to %zu in the order "
                            "given (see -experiment_list), or 'all'\n",
                    cmd, arg, ps->ses->nexps);
        return 1;
    }
    *x = (size_t)k - 1;
    return 0;
}

/* ---- what was lost while recording ------------------------------------------------------------ */

int pr_lost(const pstate_t *ps, int data, pr_lost_t *l)
{
    memset(l, 0, sizeof *l);
    for (size_t e = 0; e < ps->ses->nexps; e++)
        for (size_t i = 0; i < ps->ses->exps[e]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[e]->procs[i];
            if (data & PR_DATA_CLOCK) { /* (the kernel's full ring too) */
                sat_add_to(&l->clock, p->st_dropped_disk);
                sat_add_to(&l->clock, p->st_dropped_busy);
                sat_add_to(&l->clock, p->st_ring_lost);
                for (size_t c = 0; c < p->ncounters; c++) {
                    sat_add_to(&l->counter, p->counters[c].lost);
                    sat_add_to(&l->counter, p->counters[c].dropped);
                }
            }
            if (data & PR_DATA_HEAP)
                sat_add_to(&l->heap, p->st_dropped_heap);
            if (data & PR_DATA_IO)
                sat_add_to(&l->io, p->st_dropped_io);
            if (data & PR_DATA_SYNC)
                sat_add_to(&l->sync, p->st_dropped_sync);
            if (data != PR_DATA_CLOCK) {
                sat_add_to(&l->traced, p->st_dropped_traced);
                sat_add_to(&l->traced, p->st_dropped_api);
            }
            l->disk_full |= p->st_disk_full;
        }
    return (l->clock | l->heap | l->io | l->sync | l->traced | l->counter) != 0;
}

/* The counters of the loaded experiments that the PMU multiplexed (running below enabled) or the
 * kernel throttled, one warning each, by name: their samples cover part of the run only. */
static void counter_share_text(pstate_t *ps)
{
    const char *seen[64];
    size_t nseen = 0;
    for (size_t e = 0; e < ps->ses->nexps; e++)
        for (size_t i = 0; i < ps->ses->exps[e]->nprocs; i++) {
            const exp_process_t *p0 = ps->ses->exps[e]->procs[i];
            for (size_t c = 0; c < p0->ncounters; c++) {
                const char *name = p0->counters[c].name;
                int dup = 0;
                for (size_t k = 0; k < nseen && !dup; k++)
                    dup = !strcmp(seen[k], name);
                if (dup || nseen == sizeof seen / sizeof *seen)
                    continue;
                seen[nseen++] = name;
                uint64_t en = 0, run = 0, thr = 0; /* over every process with this counter */
                for (size_t e2 = 0; e2 < ps->ses->nexps; e2++)
                    for (size_t j = 0; j < ps->ses->exps[e2]->nprocs; j++) {
                        const exp_process_t *q = ps->ses->exps[e2]->procs[j];
                        for (size_t k = 0; k < q->ncounters; k++)
                            if (q->counters[k].has_stats && !strcmp(q->counters[k].name, name)) {
                                sat_add_to(&en, q->counters[k].enabled);
                                sat_add_to(&run, q->counters[k].running);
                                sat_add_to(&thr, q->counters[k].throttled);
                            }
                    }
                if (run >= en && !thr)
                    continue;
                sink_printf(&ps->out, "Warning: counter %s", name);
                if (run < en)
                    sink_printf(&ps->out, " counted %.1f%% of its enabled time (multiplexed: the "
                                "PMU had fewer counters than asked for)",
                                100.0 * (double)run / (double)en);
                if (thr)
                    sink_printf(&ps->out, "%s throttled %llu times by the kernel (overflows "
                                "missed)", run < en ? "," : " was", (unsigned long long)thr);
                sink_printf(&ps->out, "; its figures below cover only the time it counted\n\n");
            }
        }
}

void pr_incomplete_text(pstate_t *ps)
{
    pr_lost_t l;
    if (!ps->json && (ps->data & PR_DATA_CLOCK))
        counter_share_text(ps);
    if (ps->json || !ps->data || !pr_lost(ps, ps->data, &l))
        return;
    static const char *const what[] = { "clock samples", "heap records", "I/O records",
                                        "sync records", "traced records", "counter samples" };
    const uint64_t n[] = { l.clock, l.heap, l.io, l.sync, l.traced, l.counter };
    sink_printf(&ps->out, "Warning: incomplete data: ");
    int first = 1;
    for (size_t k = 0; k < sizeof n / sizeof *n; k++) {
        if (!n[k])
            continue;
        sink_printf(&ps->out, "%s%llu %s", first ? "" : ", ", (unsigned long long)n[k], what[k]);
        first = 0;
    }
    sink_printf(&ps->out, " were lost while recording%s; the figures below do not include them\n\n",
           l.disk_full ? " (the disk was full)" : "");
}

void pr_json_begin(pstate_t *ps, json_t *j)
{
    json_init(j, &ps->out);
    json_obj_begin(j);
    pr_lost_t l;
    if (!ps->data || !pr_lost(ps, ps->data, &l))
        return;
    json_key(j, "incomplete");
    json_obj_begin(j);
    static const char *const keys[] = { "clock", "heap", "io", "sync", "traced", "counter" };
    const uint64_t n[] = { l.clock, l.heap, l.io, l.sync, l.traced, l.counter };
    for (size_t k = 0; k < sizeof n / sizeof *n; k++) {
        json_key(j, keys[k]);
        json_u64(j, n[k]);
    }
    json_key(j, "disk_full");
    json_bool(j, l.disk_full);
    json_obj_end(j);
}
