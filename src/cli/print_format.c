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

#include "print.h"

/* ---- formatting helpers --------------------------------------------------------------------- */

double pr_scaled(const eng_t *g, int metric, uint64_t raw)
{
    return (double)raw * eng_metric(g, metric)->scale;
}

void pr_json_str(FILE *out, const char *s) { esc_json(out, s); }

void pr_json_num(FILE *out, double v)
{
    if (!isfinite(v))
        fputs("null", out);
    else if (v == floor(v) && fabs(v) < 1e15)
        esc_fprintf(out, "%.0f", v);
    else
        esc_fprintf(out, "%.9g", v);
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

/* Display names: the name in the chosen format, with " (<object>)" added when two objects listed
 * share a name, so every row names one thing. */

static int cmp_name_ptr(const void *a, const void *b)
{
    const char *const *x = *(const char *const **)a, *const *y = *(const char *const **)b;
    return strcmp(*x, *y);
}

void pr_names_build(pstate_t *ps, names_t *nm, const eng_table_t *t)
{
    nm->n = t->nobjects;
    nm->name = calloc(nm->n + 1, sizeof *nm->name);
    nm->owned = calloc(nm->n + 1, sizeof *nm->owned);
    const char ***order = malloc((nm->n + 1) * sizeof *order);
    if (!nm->name || !nm->owned || !order) {
        esc_fprintf(stderr, "tally: out of memory\n");
        exit(1);
    }
    size_t k = 0;
    for (size_t id = 0; id < nm->n; id++) {
        if (!t->present[id])
            continue;
        nm->name[id] = eng_object_name(ps->ses->eng, t->kind, (uint32_t)id, ps->namefmt);
        if (t->kind == ENG_KIND_PC || t->kind == ENG_KIND_LINE) { /* made in one buffer */
            nm->owned[id] = strdup(nm->name[id]);
            if (!nm->owned[id]) {
                esc_fprintf(stderr, "tally: out of memory\n");
                exit(1);
            }
            nm->name[id] = nm->owned[id];
        }
        order[k++] = &nm->name[id];
    }
    if (t->kind == ENG_KIND_FUNCTION) {
        qsort(order, k, sizeof *order, cmp_name_ptr);
        for (size_t i = 0; i < k;) {
            size_t j = i + 1;
            while (j < k && !strcmp(*order[i], *order[j]))
                j++;
            if (j - i > 1) {
                for (size_t m = i; m < j; m++) {
                    size_t id = (size_t)(order[m] - nm->name);
                    uint32_t o = eng_function_object(ps->ses->eng, (uint32_t)id);
                    const char *on = o == UINT32_MAX ? "<Unknown>"
                                                     : eng_object_name(ps->ses->eng, ENG_KIND_LOADOBJECT,
                                                                       o, 0);
                    if (asprintf(&nm->owned[id], "%s (%s)", nm->name[id], on) < 0)
                        exit(1);
                }
                for (size_t m = i; m < j; m++) {
                    size_t id = (size_t)(order[m] - nm->name);
                    nm->name[id] = nm->owned[id];
                }
            }
            i = j;
        }
    }
    free(order);
}

void pr_names_free(names_t *nm)
{
    for (size_t i = 0; i < nm->n; i++)
        free(nm->owned[i]);
    free(nm->owned);
    free(nm->name);
}

static int pr_levenshtein(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    int d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) !=
                                       tolower((unsigned char)b[j - 1]));
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = c < del ? (c < ins ? c : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

/* Appends up to 3 nearest candidates to buf ("; did you mean: a, b?"). */
void pr_suggest(char *buf, size_t n, const char *want, const char **cands, size_t ncands)
{
    int best[3] = { 99, 99, 99 };
    const char *bestc[3] = { 0 };
    for (size_t i = 0; i < ncands; i++) {
        if (!cands[i])
            continue;
        int d = pr_levenshtein(want, cands[i]);
        const char *dot = strchr(cands[i], '.');
        if (dot && dot > cands[i] && dot - cands[i] < 64) { /* gcc clones: "f.constprop.0" */
            char base[64];
            memcpy(base, cands[i], (size_t)(dot - cands[i]));
            base[dot - cands[i]] = 0;
            int db = pr_levenshtein(want, base);
            d = db < d ? db : d;
        }
        if (strstr(cands[i], want) || strstr(want, cands[i]))
            d = d < 2 ? d : 2;
        for (int k = 0; k < 3; k++) {
            if (d < best[k]) {
                for (int m = 2; m > k; m--) {
                    best[m] = best[m - 1];
                    bestc[m] = bestc[m - 1];
                }
                best[k] = d;
                bestc[k] = cands[i];
                break;
            }
        }
    }
    size_t len = strlen(buf);
    int limit = (int)strlen(want) / 2 + 2;
    int any = 0;
    for (int k = 0; k < 3; k++) {
        if (!bestc[k] || best[k] > limit)
            continue;
        len += snprintf(buf + len, len < n ? n - len : 0, "%s%s", any ? ", " : "; did you mean: ",
                        bestc[k]);
        any = 1;
    }
    if (any && len < n)
        snprintf(buf + len, n - len, "?");
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
            free(copy);
            return tally_errf(err, TALLY_EUSAGE,
                              "metric '%s': flavor %s here; use %s", item,
                              allowed == FL_A ? "must be attributed (a)" : "must be e or i",
                              allowed == FL_A ? "a.name" : "e.name or i.name");
        }
        if (hidden)
            continue;
        if (!vis_value && !vis_pct)
            vis_value = 1;
        for (int f = FL_E; f <= FL_A; f <<= 1) {
            if (!(fl & f))
                continue;
            if (m.ncols == MAXCOLS) {
                free(copy);
                return tally_errf(err, TALLY_EUSAGE, "too many metrics in '%s'", text);
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

uint64_t pr_row_value(const row_t *r, int fl, int metric)
{
    const uint64_t *v = r->v[pr_fl_index(fl)];
    return v ? v[metric] : 0;
}

typedef struct col_text {
    char h1[64], h2[64], h3[64];
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
    col_text_t ct[MAXCOLS];
    for (int c = 0; c < ms->ncols; c++)
        pr_col_headers(&ms->cols[c], &ct[c]);
    for (int line = 0; line < 3; line++) {
        for (int c = 0; c <= ms->ncols; c++) {
            if (c == ms->name_pos)
                esc_printf("  %s", line == 0 ? "Name" : "");
            if (c == ms->ncols)
                break;
            const char *h = line == 0 ? ct[c].h1 : line == 1 ? ct[c].h2 : ct[c].h3;
            if (line == 2)
                esc_printf("%s", h);
            else
                esc_printf("%-*s", ct[c].width, h);
        }
        esc_printf("\n");
    }
    for (size_t r = 0; r < n; r++) {
        for (int c = 0; c <= ms->ncols; c++) {
            if (c == ms->name_pos)
                esc_printf("  %c%s", rows[r].mark ? rows[r].mark : ' ', rows[r].name);
            if (c == ms->ncols)
                break;
            const mcol_t *mc = &ms->cols[c];
            char vb[64] = "", pb[32] = "";
            uint64_t raw = pr_row_value(&rows[r], mc->flavor, mc->metric);
            if (!rows[r].v[pr_fl_index(mc->flavor)]) {
                esc_printf("%*s", ct[c].width, "");
                continue;
            }
            if (mc->value)
                pr_fmt_value(vb, sizeof vb, mc->def, raw);
            if (mc->percent)
                pr_fmt_percent(pb, sizeof pb, raw, total[mc->metric]);
            if (mc->value && mc->percent)
                esc_printf("%*s%7s", ct[c].width - 7, vb, pb);
            else
                esc_printf("%*s", ct[c].width, mc->value ? vb : pb);
        }
        esc_printf("\n");
    }
}

void pr_json_metrics(pstate_t *ps, const mspec_t *ms)
{
    esc_printf("\"metrics\":[");
    for (int c = 0; c < ms->ncols; c++) {
        const mcol_t *mc = &ms->cols[c];
        const eng_metric_def_t *d = mc->def;
        char title[256];
        snprintf(title, sizeof title, "%s %s", pr_flavor_word(mc->flavor, 0), d->title);
        esc_printf("%s{\"name\":\"%c.%s\",\"title\":", c ? "," : "", pr_flavor_char(mc->flavor),
               d->name);
        pr_json_str(stdout, title);
        esc_printf(",\"unit\":");
        pr_json_str(stdout, d->unit);
        esc_printf("}");
    }
    esc_printf("]");
}

void pr_json_row(const mspec_t *ms, const row_t *r, const uint64_t *total)
{
    esc_printf("{\"name\":");
    pr_json_str(stdout, r->name);
    pr_json_values(ms, r, total);
    esc_printf("}");
}

void pr_json_values(const mspec_t *ms, const row_t *r, const uint64_t *total)
{
    for (int c = 0; c < ms->ncols; c++) {
        const mcol_t *mc = &ms->cols[c];
        if (!r->v[pr_fl_index(mc->flavor)])
            continue;
        uint64_t raw = pr_row_value(r, mc->flavor, mc->metric);
        esc_printf(",\"%c.%s\":", pr_flavor_char(mc->flavor), mc->def->name);
        pr_json_num(stdout, (double)raw * mc->def->scale);
        if (mc->percent) {
            esc_printf(",\"%c.%%%s\":", pr_flavor_char(mc->flavor), mc->def->name);
            pr_json_num(stdout, total[mc->metric] ? 100.0 * (double)raw / (double)total[mc->metric]
                                               : 0);
        }
    }
}

/* Sorting rows by the sort metric (descending), then by name. */
static int g_sort_fl, g_sort_metric;
static int cmp_rows(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    if (g_sort_metric >= 0) {
        uint64_t vx = pr_row_value(x, g_sort_fl, g_sort_metric);
        uint64_t vy = pr_row_value(y, g_sort_fl, g_sort_metric);
        if (vx != vy)
            return vx > vy ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

void pr_sort_rows(pstate_t *ps, row_t *rows, size_t n, int attributed)
{
    g_sort_fl = attributed ? FL_A : ps->sort_flavor;
    g_sort_metric = ps->sort_metric;
    qsort(rows, n, sizeof *rows, cmp_rows);
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

/* ---- what was lost while recording ------------------------------------------------------------ */

int pr_lost(const pstate_t *ps, int data, pr_lost_t *l)
{
    memset(l, 0, sizeof *l);
    for (size_t e = 0; e < ps->ses->nexps; e++)
        for (size_t i = 0; i < ps->ses->exps[e]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[e]->procs[i];
            if (data & PR_DATA_CLOCK)
                l->clock += p->st_dropped_disk + p->st_dropped_busy;
            if (data & PR_DATA_HEAP)
                l->heap += p->st_dropped_heap;
            if (data & PR_DATA_IO)
                l->io += p->st_dropped_io;
            if (data & PR_DATA_SYNC)
                l->sync += p->st_dropped_sync;
            if (data != PR_DATA_CLOCK)
                l->traced += p->st_dropped_traced;
            l->disk_full |= p->st_disk_full;
        }
    return l->clock + l->heap + l->io + l->sync + l->traced != 0;
}

void pr_incomplete_text(const pstate_t *ps)
{
    pr_lost_t l;
    if (ps->json || !ps->data || !pr_lost(ps, ps->data, &l))
        return;
    static const char *const what[] = { "clock samples", "heap records", "I/O records",
                                        "sync records", "traced records" };
    const uint64_t n[] = { l.clock, l.heap, l.io, l.sync, l.traced };
    esc_printf("Warning: incomplete data: ");
    int first = 1;
    for (size_t k = 0; k < sizeof n / sizeof *n; k++) {
        if (!n[k])
            continue;
        esc_printf("%s%llu %s", first ? "" : ", ", (unsigned long long)n[k], what[k]);
        first = 0;
    }
    esc_printf(" were lost while recording%s; the figures below do not include them\n\n",
           l.disk_full ? " (the disk was full)" : "");
}

void pr_json_open(const pstate_t *ps)
{
    pr_lost_t l;
    if (!ps->data || !pr_lost(ps, ps->data, &l)) {
        esc_printf("{");
        return;
    }
    esc_printf("{\"incomplete\":{\"clock\":%llu,\"heap\":%llu,\"io\":%llu,\"sync\":%llu,"
           "\"traced\":%llu,\"disk_full\":%s},",
           (unsigned long long)l.clock, (unsigned long long)l.heap, (unsigned long long)l.io,
           (unsigned long long)l.sync, (unsigned long long)l.traced, l.disk_full ? "true" : "false");
}
