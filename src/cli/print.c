/*
 * print.c - `tally print [options] EXPERIMENT...`: reports in the er_print command language.
 *
 * Commands come from the command line (`-functions`), from a script (`-script FILE`, one command
 * per line, the dash optional) or, when none is given, from an interactive prompt on stdin. They
 * run in order against one metric engine over all the experiments named (several experiments,
 * and every descendant process of each, are aggregated as one run). Setting commands (-metrics,
 * -sort, -limit, -name, -thread_select, -cmetrics) change the state the views that follow use.
 * With --json every view prints one JSON document on one line.
 *
 * Sections: state and options; formatting helpers (values, JSON, names); metric specs;
 * views; command table and dispatch; main.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/engine.h"
#include "analyzer/symbols.h"
#include "cli.h"
#include "experiment/reader.h"

/* ---- state ---------------------------------------------------------------------------------- */

enum { FL_E = 1, FL_I = 2, FL_A = 4 };

typedef struct mcol {
    int flavor; /* one of FL_* */
    int metric; /* ENG_M_* */
    int value, percent;
} mcol_t;

#define MAXCOLS 64

typedef struct mspec {
    mcol_t cols[MAXCOLS];
    int ncols;
    int name_pos; /* index among cols where the name column goes (ncols = last) */
    char text[512];
} mspec_t;

typedef struct pstate {
    exp_experiment_t **exps;
    size_t nexps;
    sym_ctx_t *sym;
    eng_t *eng;
    int json;
    mspec_t metrics, cmetrics;
    int sort_flavor, sort_metric; /* sort_metric -1: by name */
    long limit;                   /* 0: no limit */
    int namefmt;                  /* 0 short, 1 long, 2 mangled */
    int depth;                    /* -script nesting */
    int quit;
} pstate_t;

/* ---- formatting helpers --------------------------------------------------------------------- */

static double scaled(int metric, uint64_t raw) { return (double)raw * eng_metrics[metric].scale; }

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void json_num(FILE *out, double v)
{
    if (!isfinite(v))
        fputs("null", out);
    else if (v == floor(v) && fabs(v) < 1e15)
        fprintf(out, "%.0f", v);
    else
        fprintf(out, "%.9g", v);
}

static const char *flavor_word(int fl, int abbrev)
{
    switch (fl) {
    case FL_E: return abbrev ? "Excl." : "Exclusive";
    case FL_I: return abbrev ? "Incl." : "Inclusive";
    default: return abbrev ? "Attr." : "Attributed";
    }
}

static char flavor_char(int fl) { return fl == FL_E ? 'e' : fl == FL_I ? 'i' : 'a'; }

/* Formats a value of metric in its unit for a text table. */
static void fmt_value(char *buf, size_t n, int metric, uint64_t raw)
{
    if (!strcmp(eng_metrics[metric].unit, "s")) {
        if (raw == 0)
            snprintf(buf, n, "0.");
        else
            snprintf(buf, n, "%.3f", scaled(metric, raw));
    } else {
        snprintf(buf, n, "%llu", (unsigned long long)raw);
    }
}

static void fmt_percent(char *buf, size_t n, uint64_t raw, uint64_t total)
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
typedef struct names {
    const char **name; /* by id; NULL = not listed */
    char **owned;
    size_t n;
} names_t;

static int cmp_name_ptr(const void *a, const void *b)
{
    const char *const *x = *(const char *const **)a, *const *y = *(const char *const **)b;
    return strcmp(*x, *y);
}

static void names_build(pstate_t *ps, names_t *nm, const eng_table_t *t)
{
    nm->n = t->nobjects;
    nm->name = calloc(nm->n + 1, sizeof *nm->name);
    nm->owned = calloc(nm->n + 1, sizeof *nm->owned);
    const char ***order = malloc((nm->n + 1) * sizeof *order);
    if (!nm->name || !nm->owned || !order) {
        fprintf(stderr, "tally: out of memory\n");
        exit(1);
    }
    size_t k = 0;
    for (size_t id = 0; id < nm->n; id++) {
        if (!t->present[id])
            continue;
        nm->name[id] = eng_object_name(ps->eng, t->kind, (uint32_t)id, ps->namefmt);
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
                    uint32_t o = eng_function_object(ps->eng, (uint32_t)id);
                    const char *on = o == UINT32_MAX ? "<Unknown>"
                                                     : eng_object_name(ps->eng, ENG_KIND_LOADOBJECT,
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

static void names_free(names_t *nm)
{
    for (size_t i = 0; i < nm->n; i++)
        free(nm->owned[i]);
    free(nm->owned);
    free(nm->name);
}

static int levenshtein(const char *a, const char *b)
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
static void suggest(char *buf, size_t n, const char *want, const char **cands, size_t ncands)
{
    int best[3] = { 99, 99, 99 };
    const char *bestc[3] = { 0 };
    for (size_t i = 0; i < ncands; i++) {
        if (!cands[i])
            continue;
        int d = levenshtein(want, cands[i]);
        const char *dot = strchr(cands[i], '.');
        if (dot && dot > cands[i] && dot - cands[i] < 64) { /* gcc clones: "f.constprop.0" */
            char base[64];
            memcpy(base, cands[i], (size_t)(dot - cands[i]));
            base[dot - cands[i]] = 0;
            int db = levenshtein(want, base);
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

static int parse_mspec(const char *text, mspec_t *ms, int allowed, tally_err_t *err)
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
            if (!strchr(".%+!", p[1]) && eng_metric_find(p) >= 0)
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
        int metric = eng_metric_find(p);
        if (metric < 0) {
            tally_errf(err, TALLY_EUSAGE, "unknown metric '%s' in '%s'", p, text);
            const char *cands[ENG_NMETRICS];
            for (int i = 0; i < ENG_NMETRICS; i++)
                cands[i] = eng_metrics[i].name;
            suggest(err->msg, sizeof err->msg, p, cands, ENG_NMETRICS);
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
            m.cols[m.ncols++] = (mcol_t){ f, metric, vis_value, vis_pct };
        }
    }
    free(copy);
    if (m.name_pos < 0)
        m.name_pos = m.ncols;
    *ms = m;
    return 0;
}

/* ---- tables --------------------------------------------------------------------------------- */

typedef struct row {
    const char *name;
    const uint64_t *v[3]; /* by flavor index 0 e, 1 i, 2 a; NULL = not available */
    int mark;             /* '*' for the focus of callers-callees */
} row_t;

static int fl_index(int fl) { return fl == FL_E ? 0 : fl == FL_I ? 1 : 2; }

static uint64_t row_value(const row_t *r, int fl, int metric)
{
    const uint64_t *v = r->v[fl_index(fl)];
    return v ? v[metric] : 0;
}

typedef struct col_text {
    char h1[64], h2[64], h3[64];
    int width;
} col_text_t;

static void col_headers(const mcol_t *c, col_text_t *t)
{
    /* "Excl. Total CPU Time" -> "Excl. Total" / "CPU" / " sec.      %" */
    const eng_metric_def_t *d = &eng_metrics[c->metric];
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
    snprintf(t->h1, sizeof t->h1, "%s %s", flavor_word(c->flavor, 1), title);
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

static void print_table_text(pstate_t *ps, const mspec_t *ms, const row_t *rows, size_t n,
                             const uint64_t *total)
{
    col_text_t ct[MAXCOLS];
    for (int c = 0; c < ms->ncols; c++)
        col_headers(&ms->cols[c], &ct[c]);
    for (int line = 0; line < 3; line++) {
        for (int c = 0; c <= ms->ncols; c++) {
            if (c == ms->name_pos)
                printf("  %s", line == 0 ? "Name" : "");
            if (c == ms->ncols)
                break;
            const char *h = line == 0 ? ct[c].h1 : line == 1 ? ct[c].h2 : ct[c].h3;
            if (line == 2)
                printf("%s", h);
            else
                printf("%-*s", ct[c].width, h);
        }
        printf("\n");
    }
    for (size_t r = 0; r < n; r++) {
        for (int c = 0; c <= ms->ncols; c++) {
            if (c == ms->name_pos)
                printf("  %c%s", rows[r].mark ? rows[r].mark : ' ', rows[r].name);
            if (c == ms->ncols)
                break;
            const mcol_t *mc = &ms->cols[c];
            char vb[64] = "", pb[32] = "";
            uint64_t raw = row_value(&rows[r], mc->flavor, mc->metric);
            if (!rows[r].v[fl_index(mc->flavor)]) {
                printf("%*s", ct[c].width, "");
                continue;
            }
            if (mc->value)
                fmt_value(vb, sizeof vb, mc->metric, raw);
            if (mc->percent)
                fmt_percent(pb, sizeof pb, raw, total[mc->metric]);
            if (mc->value && mc->percent)
                printf("%*s%7s", ct[c].width - 7, vb, pb);
            else
                printf("%*s", ct[c].width, mc->value ? vb : pb);
        }
        printf("\n");
    }
}

static void json_metrics(pstate_t *ps, const mspec_t *ms)
{
    printf("\"metrics\":[");
    for (int c = 0; c < ms->ncols; c++) {
        const mcol_t *mc = &ms->cols[c];
        const eng_metric_def_t *d = &eng_metrics[mc->metric];
        printf("%s{\"name\":\"%c.%s\",\"title\":\"%s %s\",\"unit\":\"%s\"}", c ? "," : "",
               flavor_char(mc->flavor), d->name, flavor_word(mc->flavor, 0), d->title, d->unit);
    }
    printf("]");
}

static void json_row(const mspec_t *ms, const row_t *r, const uint64_t *total)
{
    printf("{\"name\":");
    json_str(stdout, r->name);
    for (int c = 0; c < ms->ncols; c++) {
        const mcol_t *mc = &ms->cols[c];
        if (!r->v[fl_index(mc->flavor)])
            continue;
        uint64_t raw = row_value(r, mc->flavor, mc->metric);
        printf(",\"%c.%s\":", flavor_char(mc->flavor), eng_metrics[mc->metric].name);
        json_num(stdout, scaled(mc->metric, raw));
        if (mc->percent) {
            printf(",\"%c.%%%s\":", flavor_char(mc->flavor), eng_metrics[mc->metric].name);
            json_num(stdout, total[mc->metric] ? 100.0 * (double)raw / (double)total[mc->metric]
                                               : 0);
        }
    }
    printf("}");
}

/* Sorting rows by the sort metric (descending), then by name. */
static int g_sort_fl, g_sort_metric;
static int cmp_rows(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    if (g_sort_metric >= 0) {
        uint64_t vx = row_value(x, g_sort_fl, g_sort_metric);
        uint64_t vy = row_value(y, g_sort_fl, g_sort_metric);
        if (vx != vy)
            return vx > vy ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

static void sort_rows(pstate_t *ps, row_t *rows, size_t n, int attributed)
{
    g_sort_fl = attributed ? FL_A : ps->sort_flavor;
    g_sort_metric = ps->sort_metric;
    qsort(rows, n, sizeof *rows, cmp_rows);
}

static const char *sort_title(pstate_t *ps, char *buf, size_t n)
{
    if (ps->sort_metric < 0)
        snprintf(buf, n, "Name");
    else
        snprintf(buf, n, "%s %s", flavor_word(ps->sort_flavor, 0),
                 eng_metrics[ps->sort_metric].title);
    return buf;
}

/* ---- views ---------------------------------------------------------------------------------- */

static int report(tally_err_t *err)
{
    cli_report(err);
    return 1;
}

static const eng_table_t *table(pstate_t *ps, int kind, int edges)
{
    tally_err_t err = { 0 };
    const eng_table_t *t = eng_compute(ps->eng, kind, edges, &err);
    if (!t)
        report(&err);
    return t;
}

static int view_list(pstate_t *ps, int kind)
{
    const eng_table_t *t = table(ps, kind, 0);
    if (!t)
        return 1;
    const uint64_t *total = eng_total(ps->eng);
    names_t nm;
    names_build(ps, &nm, t);
    size_t n = 0;
    row_t *rows = malloc((t->nobjects + 1) * sizeof *rows);
    if (!rows)
        return 1;
    for (size_t id = 0; id < t->nobjects; id++)
        if (t->present[id])
            rows[n++] = (row_t){ nm.name[id],
                                 { t->excl + id * ENG_NMETRICS, t->incl + id * ENG_NMETRICS, NULL },
                                 0 };
    sort_rows(ps, rows, n, 0);
    if (ps->limit > 0 && (size_t)ps->limit < n)
        n = (size_t)ps->limit;
    row_t totrow = { "<Total>", { total, total, NULL }, 0 };
    const char *view = kind == ENG_KIND_FUNCTION ? "functions" : "objects";
    if (ps->json) {
        printf("{\"view\":\"%s\",", view);
        json_metrics(ps, &ps->metrics);
        printf(",\"rows\":[");
        json_row(&ps->metrics, &totrow, total);
        for (size_t i = 0; i < n; i++) {
            printf(",");
            json_row(&ps->metrics, &rows[i], total);
        }
        printf("]}\n");
    } else {
        char st[160];
        printf("%s sorted by metric: %s\n\n",
               kind == ENG_KIND_FUNCTION ? "Functions" : "Load Objects",
               sort_title(ps, st, sizeof st));
        row_t *all = malloc((n + 1) * sizeof *all);
        if (!all)
            return 1;
        all[0] = totrow;
        memcpy(all + 1, rows, n * sizeof *rows);
        print_table_text(ps, &ps->metrics, all, n + 1, total);
        free(all);
        printf("\n");
    }
    free(rows);
    names_free(&nm);
    return 0;
}

/* The id of the function named name among those present, or -1 with an error printed. */
static long find_function(pstate_t *ps, const eng_table_t *t, const names_t *nm, const char *name)
{
    long found = -1;
    int ambiguous = 0;
    for (size_t id = 0; id < t->nobjects; id++) {
        if (!t->present[id])
            continue;
        const char *alts[4] = { nm->name[id], eng_object_name(ps->eng, t->kind, (uint32_t)id, 0),
                                eng_object_name(ps->eng, t->kind, (uint32_t)id, 1),
                                eng_object_name(ps->eng, t->kind, (uint32_t)id, 2) };
        for (int a = 0; a < 4; a++) {
            if (!strcmp(alts[a], name)) {
                if (found >= 0 && found != (long)id && a > 0)
                    ambiguous = 1;
                else if (a == 0 || found < 0)
                    found = (long)id;
                break;
            }
        }
        if (found == (long)id && !strcmp(nm->name[id], name))
            return found; /* the display name is unique */
    }
    if (found >= 0 && ambiguous) {
        fprintf(stderr, "tally: function name '%s' is ambiguous: it is defined in several load "
                        "objects; name one as 'NAME (object)' as -functions lists them\n", name);
        return -1;
    }
    if (found < 0) {
        /* gcc's clones keep the name before a dot: "hot.constprop.0", "f.part.0", "g.cold" */
        size_t len = strlen(name);
        int matches = 0;
        for (size_t id = 0; id < t->nobjects; id++)
            if (t->present[id] && !strncmp(nm->name[id], name, len) && nm->name[id][len] == '.') {
                if (!matches++)
                    found = (long)id;
            }
        if (matches == 1)
            return found;
        found = -1;
    }
    if (found < 0) {
        tally_err_t err = { 0 };
        tally_errf(&err, TALLY_ENOTFOUND, "no function named '%s' in the data", name);
        suggest(err.msg, sizeof err.msg, name, nm->name, nm->n);
        cli_report(&err);
    }
    return found;
}

static void cc_entry(pstate_t *ps, const eng_table_t *t, const names_t *nm, uint32_t x,
                     int first)
{
    const uint64_t *total = eng_total(ps->eng);
    size_t c0 = t->caller_start[x], c1 = t->caller_start[x + 1];
    size_t e0 = t->callee_start[x], e1 = t->callee_start[x + 1];
    row_t *callers = malloc((c1 - c0 + 1) * sizeof *callers);
    row_t *callees = malloc((e1 - e0 + 1) * sizeof *callees);
    if (!callers || !callees)
        exit(1);
    for (size_t i = c0; i < c1; i++)
        callers[i - c0] = (row_t){ nm->name[t->callers[i].other], { NULL, NULL,
                                   t->callers[i].value }, 0 };
    for (size_t i = e0; i < e1; i++)
        callees[i - e0] = (row_t){ nm->name[t->callees[i].other], { NULL, NULL,
                                   t->callees[i].value }, 0 };
    sort_rows(ps, callers, c1 - c0, 1);
    sort_rows(ps, callees, e1 - e0, 1);
    const uint64_t *ex = t->excl + (size_t)x * ENG_NMETRICS, *in = t->incl + (size_t)x * ENG_NMETRICS;
    if (ps->json) {
        printf("%s{\"function\":", first ? "" : ",");
        json_str(stdout, nm->name[x]);
        printf(",\"callers\":[");
        for (size_t i = 0; i < c1 - c0; i++) {
            printf(i ? "," : "");
            json_row(&ps->cmetrics, &callers[i], total);
        }
        printf("],\"self\":{\"name\":");
        json_str(stdout, nm->name[x]);
        for (int m = 0; m < ENG_NMETRICS; m++) {
            if (!eng_has_metric(ps->eng, m))
                continue;
            printf(",\"e.%s\":", eng_metrics[m].name);
            json_num(stdout, scaled(m, ex[m]));
            printf(",\"i.%s\":", eng_metrics[m].name);
            json_num(stdout, scaled(m, in[m]));
        }
        printf("},\"callees\":[");
        for (size_t i = 0; i < e1 - e0; i++) {
            printf(i ? "," : "");
            json_row(&ps->cmetrics, &callees[i], total);
        }
        printf("]}");
    } else {
        /* er_print's layout: callers above, the focus marked '*' with its exclusive as its
         * attributed share, callees below; each block's values sum to the focus's inclusive */
        size_t n = (c1 - c0) + 1 + (e1 - e0);
        row_t *all = malloc(n * sizeof *all);
        if (!all)
            exit(1);
        memcpy(all, callers, (c1 - c0) * sizeof *all);
        all[c1 - c0] = (row_t){ nm->name[x], { NULL, NULL, ex }, '*' };
        memcpy(all + (c1 - c0) + 1, callees, (e1 - e0) * sizeof *all);
        print_table_text(ps, &ps->cmetrics, all, n, total);
        printf("\n");
        free(all);
    }
    free(callers);
    free(callees);
}

static int view_callers_callees(pstate_t *ps, const char *single)
{
    const eng_table_t *t = table(ps, ENG_KIND_FUNCTION, 1);
    if (!t)
        return 1;
    names_t nm;
    names_build(ps, &nm, t);
    row_t *rows = malloc((t->nobjects + 1) * sizeof *rows);
    uint32_t *ids = malloc((t->nobjects + 1) * sizeof *ids);
    if (!rows || !ids)
        return 1;
    size_t n = 0;
    if (single) {
        long id = find_function(ps, t, &nm, single);
        if (id < 0) {
            names_free(&nm);
            free(rows);
            free(ids);
            return 1;
        }
        ids[n++] = (uint32_t)id;
    } else {
        for (size_t id = 0; id < t->nobjects; id++)
            if (t->present[id])
                rows[n++] = (row_t){ nm.name[id], { t->excl + id * ENG_NMETRICS,
                                     t->incl + id * ENG_NMETRICS, NULL }, (int)id };
        sort_rows(ps, rows, n, 0);
        if (ps->limit > 0 && (size_t)ps->limit < n)
            n = (size_t)ps->limit;
        for (size_t i = 0; i < n; i++)
            ids[i] = (uint32_t)rows[i].mark;
    }
    char st[160];
    if (ps->json) {
        printf("{\"view\":\"%s\",", single ? "csingle" : "callers-callees");
        json_metrics(ps, &ps->cmetrics);
        printf(",\"entries\":[");
    } else {
        printf("Callers and callees sorted by metric: %s\n\n", sort_title(ps, st, sizeof st));
    }
    for (size_t i = 0; i < n; i++)
        cc_entry(ps, t, &nm, ids[i], i == 0);
    if (ps->json)
        printf("]}\n");
    names_free(&nm);
    free(rows);
    free(ids);
    return 0;
}

typedef struct tree_print {
    pstate_t *ps;
    const eng_tree_t *tr;
    names_t nm;
    int metric;
    const uint64_t *total;
} tree_print_t;

static int g_tree_metric;
static const eng_node_t *g_tree_nodes;
static int cmp_nodes(const void *a, const void *b)
{
    const eng_node_t *x = &g_tree_nodes[*(const uint32_t *)a], *y = &g_tree_nodes[*(const uint32_t *)b];
    uint64_t vx = x->incl[g_tree_metric], vy = y->incl[g_tree_metric];
    return vx > vy ? -1 : vx < vy;
}

static void tree_node(tree_print_t *tp, uint32_t k, int depth, int *first)
{
    const eng_node_t *nd = &tp->tr->nodes[k];
    const char *name = k == 0 ? "<Total>" : tp->nm.name[nd->object];
    if (tp->ps->json) {
        printf("%s{\"name\":", *first ? "" : ",");
        *first = 0;
        json_str(stdout, name);
        for (int m = 0; m < ENG_NMETRICS; m++) {
            if (!eng_has_metric(tp->ps->eng, m))
                continue;
            printf(",\"i.%s\":", eng_metrics[m].name);
            json_num(stdout, scaled(m, nd->incl[m]));
            printf(",\"e.%s\":", eng_metrics[m].name);
            json_num(stdout, scaled(m, nd->excl[m]));
        }
        printf(",\"children\":[");
    } else {
        char vb[64], pb[32];
        fmt_value(vb, sizeof vb, tp->metric, nd->incl[tp->metric]);
        fmt_percent(pb, sizeof pb, nd->incl[tp->metric], tp->total[tp->metric]);
        printf("%10s %7s   %*s%s%s\n", vb, pb, depth * 2, "", depth ? "+-" : "", name);
    }
    size_t nc = 0;
    for (uint32_t c = nd->first_child; c != UINT32_MAX; c = tp->tr->nodes[c].next_sibling)
        nc++;
    uint32_t *kids = malloc((nc + 1) * sizeof *kids);
    if (!kids)
        exit(1);
    nc = 0;
    for (uint32_t c = nd->first_child; c != UINT32_MAX; c = tp->tr->nodes[c].next_sibling)
        kids[nc++] = c;
    g_tree_metric = tp->metric;
    g_tree_nodes = tp->tr->nodes;
    qsort(kids, nc, sizeof *kids, cmp_nodes);
    int kfirst = 1;
    for (size_t i = 0; i < nc; i++)
        tree_node(tp, kids[i], depth + 1, &kfirst);
    free(kids);
    if (tp->ps->json)
        printf("]}");
}

static int view_calltree(pstate_t *ps)
{
    const eng_table_t *t = table(ps, ENG_KIND_FUNCTION, 0);
    if (!t)
        return 1;
    tally_err_t err = { 0 };
    const eng_tree_t *tr = eng_calltree(ps->eng, ENG_KIND_FUNCTION, &err);
    if (!tr)
        return report(&err);
    tree_print_t tp = { .ps = ps, .tr = tr, .total = eng_total(ps->eng) };
    tp.metric = ps->sort_metric >= 0 ? ps->sort_metric : ENG_M_TOTALCPU;
    names_build(ps, &tp.nm, t);
    int first = 1;
    if (ps->json) {
        printf("{\"view\":\"calltree\",\"metric\":\"i.%s\",\"tree\":", eng_metrics[tp.metric].name);
        tree_node(&tp, 0, 0, &first);
        printf("}\n");
    } else {
        printf("Functions Call Tree. Metric: Attributed %s\n\n", eng_metrics[tp.metric].title);
        printf("%10s %7s   %s\n", "sec.", "%", "Name");
        tree_node(&tp, 0, 0, &first);
        printf("\n");
    }
    names_free(&tp.nm);
    return 0;
}

static int view_fsingle(pstate_t *ps, const char *name)
{
    const eng_table_t *t = table(ps, ENG_KIND_FUNCTION, 0);
    if (!t)
        return 1;
    names_t nm;
    names_build(ps, &nm, t);
    long id = find_function(ps, t, &nm, name);
    if (id < 0) {
        names_free(&nm);
        return 1;
    }
    const uint64_t *total = eng_total(ps->eng);
    const sym_func_t *f = sym_func(ps->sym, (uint32_t)id);
    const sym_object_t *o = f->object == UINT32_MAX ? NULL : sym_object(ps->sym, f->object);
    const char *file = NULL;
    uint32_t line = 0;
    if (o && f->size && sym_line_at(ps->sym, f->object, f->addr, &file, &line))
        file = NULL;
    const uint64_t *ex = t->excl + (size_t)id * ENG_NMETRICS, *in = t->incl + (size_t)id * ENG_NMETRICS;
    if (ps->json) {
        printf("{\"view\":\"fsingle\",\"name\":");
        json_str(stdout, nm.name[id]);
        for (int m = 0; m < ENG_NMETRICS; m++) {
            if (!eng_has_metric(ps->eng, m))
                continue;
            printf(",\"e.%s\":", eng_metrics[m].name);
            json_num(stdout, scaled(m, ex[m]));
            printf(",\"i.%s\":", eng_metrics[m].name);
            json_num(stdout, scaled(m, in[m]));
        }
        printf(",\"size\":%llu,\"address\":\"0x%llx\",\"source_file\":",
               (unsigned long long)f->size, (unsigned long long)f->addr);
        json_str(stdout, file ? file : "");
        printf(",\"line\":%u,\"load_object\":", line);
        json_str(stdout, o ? o->path : "<Unknown>");
        printf(",\"mangled_name\":");
        json_str(stdout, f->mangled);
        printf("}\n");
    } else {
        printf("%s\n", nm.name[id]);
        for (int m = 0; m < ENG_NMETRICS; m++) {
            if (!eng_has_metric(ps->eng, m))
                continue;
            char vb[64], pb[32];
            for (int k = 0; k < 2; k++) {
                const uint64_t *v = k ? in : ex;
                fmt_value(vb, sizeof vb, m, v[m]);
                fmt_percent(pb, sizeof pb, v[m], total[m]);
                char label[128];
                snprintf(label, sizeof label, "%s %s", flavor_word(k ? FL_I : FL_E, 0),
                         eng_metrics[m].title);
                printf("  %32s:  %10s (%6s%%)\n", label, vb, pb);
            }
        }
        printf("  %32s:  %llu\n", "Size", (unsigned long long)f->size);
        printf("  %32s:  0x%llx\n", "Address", (unsigned long long)f->addr);
        if (file)
            printf("  %32s:  %s:%u\n", "Source File", file, line);
        else
            printf("  %32s:  (unknown)\n", "Source File");
        printf("  %32s:  %s\n", "Load Object", o ? o->path : "<Unknown>");
        printf("  %32s:  %s\n\n", "Mangled Name", f->mangled);
    }
    names_free(&nm);
    return 0;
}

static const char *fmt_time(uint64_t real_ns, char *buf, size_t n)
{
    time_t s = (time_t)(real_ns / 1000000000u);
    struct tm tm;
    if (!real_ns || !localtime_r(&s, &tm))
        snprintf(buf, n, "(unknown)");
    else
        strftime(buf, n, "%a %b %e %H:%M:%S %Y", &tm);
    return buf;
}

static void end_text(const exp_process_t *p, char *buf, size_t n)
{
    if (!p->has_end)
        snprintf(buf, n, "ended without a record (killed, e.g. by SIGKILL, or still running)");
    else if (!strcmp(p->end_how, "exit"))
        snprintf(buf, n, "exited with status %d", p->end_status);
    else if (!strcmp(p->end_how, "signal") || !strcmp(p->end_how, "killed"))
        snprintf(buf, n, "killed by signal %d (%s)", p->end_signal,
                 p->end_signame ? p->end_signame : "?");
    else if (!strcmp(p->end_how, "exec"))
        snprintf(buf, n, "replaced its image by exec");
    else
        snprintf(buf, n, "ended: %s", p->end_how);
}

/* Trustworthiness of the data: expected vs recorded, unwind failures, drops, binaries. */
typedef struct trust {
    uint64_t samples, expected, unwind, busy, disk, truncated, nostats;
} trust_t;

static void trust_sum(pstate_t *ps, trust_t *tr)
{
    memset(tr, 0, sizeof *tr);
    for (size_t x = 0; x < ps->nexps; x++)
        for (size_t i = 0; i < ps->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->exps[x]->procs[i];
            if (!p->has_stats) {
                tr->nostats++;
                continue;
            }
            tr->samples += p->st_samples;
            tr->expected += p->st_expected;
            tr->unwind += p->st_unwind_failures;
            tr->busy += p->st_dropped_busy;
            tr->disk += p->st_dropped_disk;
            tr->truncated += p->st_truncated_stacks;
        }
}

static int view_header(pstate_t *ps)
{
    /* the binaries' state is known once their frames were looked up */
    if (!table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    const exp_scan_stats_t *st = eng_scan_stats(ps->eng);
    if (ps->json) {
        printf("{\"view\":\"header\",\"experiments\":[");
        for (size_t x = 0; x < ps->nexps; x++) {
            printf("%s{\"path\":", x ? "," : "");
            json_str(stdout, ps->exps[x]->path);
            printf(",\"processes\":[");
            for (size_t i = 0; i < ps->exps[x]->nprocs; i++) {
                const exp_process_t *p = ps->exps[x]->procs[i];
                char end[256];
                end_text(p, end, sizeof end);
                printf("%s{\"name\":", i ? "," : "");
                json_str(stdout, *p->name ? p->name : "");
                printf(",\"pid\":%u,\"exe\":", p->pid);
                json_str(stdout, p->exe ? p->exe : "");
                printf(",\"host\":");
                json_str(stdout, p->host ? p->host : "");
                printf(",\"clock_interval_ns\":%llu,\"threads\":%zu,\"ended\":",
                       (unsigned long long)p->clock_ns, p->nthreads);
                json_str(stdout, end);
                printf(",\"end_how\":");
                json_str(stdout, p->has_end ? p->end_how : "");
                if (p->has_stats)
                    printf(",\"samples\":%llu,\"expected\":%llu,\"unwind_failures\":%llu,"
                           "\"dropped_busy\":%llu,\"dropped_disk\":%llu",
                           (unsigned long long)p->st_samples, (unsigned long long)p->st_expected,
                           (unsigned long long)p->st_unwind_failures,
                           (unsigned long long)p->st_dropped_busy,
                           (unsigned long long)p->st_dropped_disk);
                printf(",\"warnings\":[");
                for (size_t w = 0; w < p->nwarnings; w++) {
                    printf(w ? "," : "");
                    json_str(stdout, p->warnings[w]);
                }
                printf("]}");
            }
            printf("]}");
        }
        printf("],\"events\":%llu,\"binaries\":[", (unsigned long long)st->events);
        int first = 1;
        for (size_t o = 0; o < sym_nobjects(ps->sym); o++) {
            const sym_object_t *so = sym_object(ps->sym, (uint32_t)o);
            if (!*so->message)
                continue;
            printf("%s{\"path\":", first ? "" : ",");
            first = 0;
            json_str(stdout, so->path);
            printf(",\"message\":");
            json_str(stdout, so->message);
            printf("}");
        }
        printf("]}\n");
        return 0;
    }
    for (size_t x = 0; x < ps->nexps; x++) {
        const exp_experiment_t *e = ps->exps[x];
        printf("Experiment: %s\n", e->path);
        for (size_t i = 0; i < e->nprocs; i++) {
            const exp_process_t *p = e->procs[i];
            char buf[256];
            if (i)
                printf("  Descendant %s (pid %u)\n", p->name, p->pid);
            else
                printf("  Root process (pid %u)\n", p->pid);
            printf("    Target command:   ");
            for (uint32_t a = 0; a < p->argc; a++)
                printf("%s%s", a ? " " : "", p->argv[a]);
            printf("\n");
            if (p->exe)
                printf("    Executable:       %s\n", p->exe);
            printf("    Host:             %s, %s, %s, %u CPUs\n", p->host ? p->host : "?",
                   p->kernel ? p->kernel : "?", p->arch ? p->arch : "?", p->ncpus);
            printf("    Started:          %s\n", fmt_time(p->real_start, buf, sizeof buf));
            printf("    Duration:         %.3f s\n",
                   p->t_end > p->t_start ? (double)(p->t_end - p->t_start) * 1e-9 : 0.0);
            if (p->clock_ns)
                printf("    Data collected:   clock profiling, interval %.3f ms (%s)\n",
                       (double)p->clock_ns * 1e-6, p->clock_source ? p->clock_source : "?");
            else
                printf("    Data collected:   no clock profiling\n");
            printf("    Threads:          %zu\n", p->nthreads);
            end_text(p, buf, sizeof buf);
            printf("    Ended:            %s\n", buf);
            if (p->has_stats) {
                printf("    Samples:          %llu recorded of %llu expected (%.1f%%)\n",
                       (unsigned long long)p->st_samples, (unsigned long long)p->st_expected,
                       p->st_expected ? 100.0 * (double)p->st_samples / (double)p->st_expected
                                      : 100.0);
                printf("    Unwind failures:  %llu; stacks cut at the depth limit: %llu\n",
                       (unsigned long long)p->st_unwind_failures,
                       (unsigned long long)p->st_truncated_stacks);
                printf("    Dropped events:   %llu (signal during a write), %llu (disk full)\n",
                       (unsigned long long)p->st_dropped_busy,
                       (unsigned long long)p->st_dropped_disk);
            } else {
                printf("    Statistics:       none (the process ended before writing them)\n");
            }
            for (size_t w = 0; w < p->nwarnings; w++)
                printf("    Warning:          %s\n", p->warnings[w]);
        }
    }
    printf("Events read: %llu", (unsigned long long)st->events);
    uint64_t lost = 0;
    for (int r = 0; r < EXP_LOST_NREASONS; r++)
        lost += st->lost[r];
    if (lost)
        printf(", %llu lost while recording", (unsigned long long)lost);
    if (st->bad_chunks || st->bad_records || st->seq_gaps)
        printf(", damage: %llu bad chunks, %llu bad records, %llu gaps",
               (unsigned long long)st->bad_chunks, (unsigned long long)st->bad_records,
               (unsigned long long)st->seq_gaps);
    printf("\n");
    for (size_t o = 0; o < sym_nobjects(ps->sym); o++) {
        const sym_object_t *so = sym_object(ps->sym, (uint32_t)o);
        if (*so->message)
            printf("Binary: %s\n", so->message);
    }
    printf("\n");
    return 0;
}

static int view_overview(pstate_t *ps)
{
    if (!table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    const uint64_t *total = eng_total(ps->eng);
    trust_t tr;
    trust_sum(ps, &tr);
    uint64_t t0 = UINT64_MAX, t1 = 0;
    size_t nprocs = 0;
    for (size_t x = 0; x < ps->nexps; x++)
        for (size_t i = 0; i < ps->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->exps[x]->procs[i];
            nprocs++;
            if (p->t_start < t0)
                t0 = p->t_start;
            if (p->t_end > t1 && p->t_end != EXP_T_NEVER)
                t1 = p->t_end;
        }
    double dur = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0;
    const exp_process_t *root = ps->exps[0]->procs[0];
    char end[256];
    end_text(root, end, sizeof end);
    if (ps->json) {
        printf("{\"view\":\"overview\",\"duration\":");
        json_num(stdout, dur);
        printf(",\"processes\":%zu,\"threads\":%zu,\"ended\":", nprocs, eng_nthreads(ps->eng));
        json_str(stdout, end);
        for (int m = 0; m < ENG_NMETRICS; m++) {
            printf(",\"%s\":", eng_metrics[m].name);
            json_num(stdout, scaled(m, total[m]));
        }
        printf(",\"samples\":%llu,\"expected\":%llu,\"unwind_failures\":%llu,\"dropped\":%llu}\n",
               (unsigned long long)tr.samples, (unsigned long long)tr.expected,
               (unsigned long long)tr.unwind, (unsigned long long)(tr.busy + tr.disk));
        return 0;
    }
    printf("Overview\n\n");
    printf("  Duration:        %.3f s, %zu process%s, %zu thread%s\n", dur, nprocs,
           nprocs == 1 ? "" : "es", eng_nthreads(ps->eng), eng_nthreads(ps->eng) == 1 ? "" : "s");
    printf("  Run:             %s\n", end);
    double tot = scaled(ENG_M_TOTALCPU, total[ENG_M_TOTALCPU]);
    printf("  Total CPU Time:  %.3f s", tot);
    if (dur > 0)
        printf(" (%.2f CPUs busy on average)", tot / dur);
    printf("\n");
    for (int m = ENG_M_USER; m <= ENG_M_SYSTEM; m++)
        printf("    %-16s %8.3f s  %6.2f%%\n", eng_metrics[m].title, scaled(m, total[m]),
               total[ENG_M_TOTALCPU] ? 100.0 * (double)total[m] / (double)total[ENG_M_TOTALCPU]
                                     : 0.0);
    printf("  Data quality:    %llu samples recorded of %llu expected",
           (unsigned long long)tr.samples, (unsigned long long)tr.expected);
    if (tr.expected)
        printf(" (%.1f%%)", 100.0 * (double)tr.samples / (double)tr.expected);
    printf(", %llu unwind failures, %llu events dropped\n", (unsigned long long)tr.unwind,
           (unsigned long long)(tr.busy + tr.disk));
    if (tr.nostats)
        printf("                   %llu process%s ended without statistics (see -header)\n",
               (unsigned long long)tr.nostats, tr.nostats == 1 ? "" : "es");
    printf("\n");
    return 0;
}

static int view_thread_list(pstate_t *ps)
{
    tally_err_t err = { 0 };
    if (eng_aggregate(ps->eng, &err))
        return report(&err);
    size_t n = eng_nthreads(ps->eng);
    /* which threads are selected: aggregate counted events of all, values only for selected */
    if (ps->json) {
        printf("{\"view\":\"thread_list\",\"selection\":");
        json_str(stdout, eng_thread_selection(ps->eng));
        printf(",\"threads\":[");
    } else {
        printf("Threads (selected: %s)\n\n", eng_thread_selection(ps->eng));
        printf("%6s  %8s  %8s  %-16s %-15s %9s %10s  %s\n", "Thread", "TID", "PID", "Name", "Created by",
               "Events", "CPU sec.", "Process");
    }
    for (size_t i = 0; i < n; i++) {
        const eng_thread_t *t = eng_thread(ps->eng, i);
        const exp_process_t *p = ps->exps[t->exp]->procs[t->proc];
        const char *name = t->info && t->info->name ? t->info->name : "";
        const char *how = t->info && t->info->how ? t->info->how : "";
        if (ps->json) {
            printf("%s{\"number\":%u,\"tid\":%u,\"pid\":%u,\"name\":", i ? "," : "", t->number,
                   t->tid, p->pid);
            json_str(stdout, name);
            printf(",\"how\":");
            json_str(stdout, how);
            printf(",\"events\":%llu,\"totalcpu\":", (unsigned long long)t->events);
            json_num(stdout, scaled(ENG_M_TOTALCPU, t->value[ENG_M_TOTALCPU]));
            printf(",\"process\":");
            json_str(stdout, *p->name ? p->name : "(root)");
            printf("}");
        } else {
            printf("%6u  %8u  %8u  %-16s %-15s %9llu %10.3f  %s\n", t->number, t->tid, p->pid,
                   name, how, (unsigned long long)t->events,
                   scaled(ENG_M_TOTALCPU, t->value[ENG_M_TOTALCPU]),
                   *p->name ? p->name : "(root)");
        }
    }
    if (ps->json)
        printf("]}\n");
    else
        printf("\n");
    return 0;
}

static int view_metric_list(pstate_t *ps)
{
    tally_err_t err = { 0 };
    if (eng_aggregate(ps->eng, &err))
        return report(&err);
    if (ps->json) {
        printf("{\"view\":\"metric_list\",\"available\":[");
        int first = 1;
        for (int m = 0; m < ENG_NMETRICS; m++) {
            if (!eng_has_metric(ps->eng, m))
                continue;
            printf("%s{\"name\":\"%s\",\"title\":\"%s\",\"unit\":\"%s\"}", first ? "" : ",",
                   eng_metrics[m].name, eng_metrics[m].title, eng_metrics[m].unit);
            first = 0;
        }
        printf("],\"metrics\":");
        json_str(stdout, ps->metrics.text);
        printf(",\"cmetrics\":");
        json_str(stdout, ps->cmetrics.text);
        printf("}\n");
        return 0;
    }
    printf("Current metrics: %s\nCurrent callers-callees metrics: %s\n", ps->metrics.text,
           ps->cmetrics.text);
    char st[160];
    printf("Current sort: %s\n\nAvailable metrics:\n", sort_title(ps, st, sizeof st));
    for (int m = 0; m < ENG_NMETRICS; m++)
        if (eng_has_metric(ps->eng, m))
            printf("  %-10s %s (%s); flavors e (exclusive), i (inclusive), a (attributed)\n",
                   eng_metrics[m].name, eng_metrics[m].title, eng_metrics[m].unit);
    printf("\nSpec: [e|i|a][.|%%|+|!]NAME joined by ':', 'name' for the name column; e.g.\n"
           "  e.%%totalcpu:i.%%totalcpu:e.user:e.system:name\n\n");
    return 0;
}

/* ---- commands ------------------------------------------------------------------------------- */

static int run_script(pstate_t *ps, const char *path);
static int run_line(pstate_t *ps, char *line, const char *where);

static int c_functions(pstate_t *ps, const char *a) { return view_list(ps, ENG_KIND_FUNCTION); }
static int c_objects(pstate_t *ps, const char *a) { return view_list(ps, ENG_KIND_LOADOBJECT); }
static int c_cc(pstate_t *ps, const char *a) { return view_callers_callees(ps, NULL); }
static int c_csingle(pstate_t *ps, const char *a) { return view_callers_callees(ps, a); }
static int c_calltree(pstate_t *ps, const char *a) { return view_calltree(ps); }
static int c_fsingle(pstate_t *ps, const char *a) { return view_fsingle(ps, a); }
static int c_header(pstate_t *ps, const char *a) { return view_header(ps); }
static int c_overview(pstate_t *ps, const char *a) { return view_overview(ps); }
static int c_thread_list(pstate_t *ps, const char *a) { return view_thread_list(ps); }
static int c_metric_list(pstate_t *ps, const char *a) { return view_metric_list(ps); }
static int c_script(pstate_t *ps, const char *a) { return run_script(ps, a); }
static int c_quit(pstate_t *ps, const char *a)
{
    ps->quit = 1;
    return 0;
}

static void set_sort_from(pstate_t *ps, const mspec_t *ms)
{
    for (int c = 0; c < ms->ncols; c++)
        if (ms->cols[c].flavor == ps->sort_flavor && ms->cols[c].metric == ps->sort_metric)
            return;
    if (ms->ncols && ps->sort_metric >= 0) {
        ps->sort_flavor = ms->cols[0].flavor;
        ps->sort_metric = ms->cols[0].metric;
    }
}

static int c_metrics(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    mspec_t ms;
    if (parse_mspec(a, &ms, FL_E | FL_I, &err))
        return report(&err);
    ps->metrics = ms;
    set_sort_from(ps, &ms);
    return 0;
}

static int c_cmetrics(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    mspec_t ms;
    if (parse_mspec(a, &ms, FL_A, &err))
        return report(&err);
    ps->cmetrics = ms;
    return 0;
}

static int c_sort(pstate_t *ps, const char *a)
{
    if (!strcmp(a, "name")) {
        ps->sort_metric = -1;
        return 0;
    }
    tally_err_t err = { 0 };
    mspec_t ms;
    if (parse_mspec(a, &ms, FL_E | FL_I, &err))
        return report(&err);
    if (ms.ncols == 0) {
        fprintf(stderr, "tally: -sort needs one metric such as e.totalcpu or name\n");
        return 1;
    }
    ps->sort_flavor = ms.cols[0].flavor;
    ps->sort_metric = ms.cols[0].metric;
    return 0;
}

static int c_limit(pstate_t *ps, const char *a)
{
    char *end;
    errno = 0;
    long n = strtol(a, &end, 10);
    if (end == a || *end || n < 0 || errno) {
        fprintf(stderr, "tally: -limit '%s': give a number of rows (0 for all)\n", a);
        return 1;
    }
    ps->limit = n;
    return 0;
}

static int c_name(pstate_t *ps, const char *a)
{
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%s", a);
    char *colon = strchr(fmt, ':'); /* er_print's ":soname" suffix is accepted and ignored */
    if (colon)
        *colon = 0;
    if (!strcmp(fmt, "short"))
        ps->namefmt = 0;
    else if (!strcmp(fmt, "long"))
        ps->namefmt = 1;
    else if (!strcmp(fmt, "mangled"))
        ps->namefmt = 2;
    else {
        fprintf(stderr, "tally: -name '%s': use short, long or mangled\n", a);
        return 1;
    }
    return 0;
}

static int c_thread_select(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    if (eng_select_threads(ps->eng, a, &err))
        return report(&err);
    return 0;
}

static int c_experiment_list(pstate_t *ps, const char *a)
{
    if (ps->json) {
        printf("{\"view\":\"experiment_list\",\"experiments\":[");
        for (size_t x = 0; x < ps->nexps; x++) {
            printf(x ? "," : "");
            json_str(stdout, ps->exps[x]->path);
        }
        printf("]}\n");
        return 0;
    }
    for (size_t x = 0; x < ps->nexps; x++)
        printf("%zu  %s  (%zu process%s)\n", x + 1, ps->exps[x]->path, ps->exps[x]->nprocs,
               ps->exps[x]->nprocs == 1 ? "" : "es");
    printf("\n");
    return 0;
}

static int c_help(pstate_t *ps, const char *a);

static const struct pcmd {
    const char *name;
    int nargs;
    int (*fn)(pstate_t *, const char *);
    const char *arg, *help;
} pcmds[] = {
    { "functions", 0, c_functions, "", "functions with their metrics, <Total> first" },
    { "callers-callees", 0, c_cc, "", "each function with its callers and callees (attributed)" },
    { "csingle", 1, c_csingle, "NAME", "callers and callees of one function" },
    { "calltree", 0, c_calltree, "", "the call tree with inclusive metrics" },
    { "fsingle", 1, c_fsingle, "NAME", "one function's metrics, size, address, file, object" },
    { "objects", 0, c_objects, "", "load objects with their metrics" },
    { "metrics", 1, c_metrics, "SPEC", "metrics shown, e.g. e.%totalcpu:i.%totalcpu:name" },
    { "cmetrics", 1, c_cmetrics, "SPEC", "metrics of callers-callees, e.g. a.%totalcpu:name" },
    { "metric_list", 0, c_metric_list, "", "metrics available and the current settings" },
    { "sort", 1, c_sort, "METRIC", "sort by a metric (e.totalcpu, i.user, ...) or name" },
    { "limit", 1, c_limit, "N", "show at most N rows (0: all)" },
    { "name", 1, c_name, "short|long|mangled", "how function names are shown" },
    { "header", 0, c_header, "", "what was collected, how the run ended, data quality" },
    { "overview", 0, c_overview, "", "totals of the run and how trustworthy they are" },
    { "thread_list", 0, c_thread_list, "", "threads, numbered for -thread_select" },
    { "thread_select", 1, c_thread_select, "LIST", "analyse only threads LIST: all, 2, 1,3-5" },
    { "experiment_list", 0, c_experiment_list, "", "the experiments loaded" },
    { "script", 1, c_script, "FILE", "run the commands in FILE, one per line" },
    { "help", 0, c_help, "", "this list" },
    { "quit", 0, c_quit, "", "leave the interactive prompt (also: exit)" },
    { "exit", 0, c_quit, "", NULL },
};
#define NPCMDS (sizeof pcmds / sizeof pcmds[0])

static void list_commands(FILE *out)
{
    for (size_t i = 0; i < NPCMDS; i++) {
        if (!pcmds[i].help)
            continue;
        char left[64];
        snprintf(left, sizeof left, "-%s %s", pcmds[i].name, pcmds[i].arg);
        fprintf(out, "  %-30s %s\n", left, pcmds[i].help);
    }
}

static int c_help(pstate_t *ps, const char *a)
{
    printf("Commands (on the command line with a leading '-', in scripts and at the prompt "
           "with or without it):\n");
    list_commands(stdout);
    printf("\n");
    return 0;
}

static const struct pcmd *find_cmd(const char *name)
{
    while (*name == '-')
        name++;
    for (size_t i = 0; i < NPCMDS; i++)
        if (!strcmp(pcmds[i].name, name))
            return &pcmds[i];
    return NULL;
}

static void unknown_cmd(const char *name, const char *where)
{
    tally_err_t err = { 0 };
    tally_errf(&err, TALLY_EUSAGE, "%s%sunknown command '%s'", where ? where : "",
               where ? ": " : "", name);
    const char *cands[NPCMDS];
    for (size_t i = 0; i < NPCMDS; i++)
        cands[i] = pcmds[i].name;
    const char *bare = name;
    while (*bare == '-')
        bare++;
    suggest(err.msg, sizeof err.msg, bare, cands, NPCMDS);
    size_t len = strlen(err.msg);
    snprintf(err.msg + len, sizeof err.msg - len, " (see 'tally print -h')");
    cli_report(&err);
}

/* One command line of a script or the prompt: "cmd [arg]". */
static int run_line(pstate_t *ps, char *line, const char *where)
{
    char *p = line;
    while (isspace((unsigned char)*p))
        p++;
    char *end = p + strlen(p);
    while (end > p && isspace((unsigned char)end[-1]))
        *--end = 0;
    if (!*p || *p == '#')
        return 0;
    char *arg = p;
    while (*arg && !isspace((unsigned char)*arg))
        arg++;
    if (*arg) {
        *arg++ = 0;
        while (isspace((unsigned char)*arg))
            arg++;
    }
    const struct pcmd *c = find_cmd(p);
    if (!c) {
        unknown_cmd(p, where);
        return 2;
    }
    if (c->nargs && !*arg) {
        fprintf(stderr, "tally: %s%s-%s needs an argument: %s\n", where ? where : "",
                where ? ": " : "", c->name, c->arg);
        return 2;
    }
    int rc = c->fn(ps, arg);
    fflush(stdout);
    return rc;
}

static int run_script(pstate_t *ps, const char *path)
{
    if (ps->depth > 8) {
        fprintf(stderr, "tally: -script '%s': scripts nested too deeply (a script runs itself?)\n",
                path);
        return 1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "tally: cannot read script '%s': %s\n", path, strerror(errno));
        return 1;
    }
    ps->depth++;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, lineno = 0;
    while (!ps->quit && getline(&line, &cap, f) >= 0) {
        char where[512];
        snprintf(where, sizeof where, "%s:%d", path, ++lineno);
        int r = run_line(ps, line, where);
        if (r) {
            rc = r;
            break;
        }
    }
    free(line);
    fclose(f);
    ps->depth--;
    return rc;
}

static void interactive(pstate_t *ps)
{
    int tty = isatty(0);
    if (tty)
        printf("tally print: %zu experiment%s loaded; 'help' lists the commands, 'quit' "
               "leaves.\n", ps->nexps, ps->nexps == 1 ? "" : "s");
    char *line = NULL;
    size_t cap = 0;
    while (!ps->quit) {
        if (tty) {
            printf("(tally) ");
            fflush(stdout);
        }
        if (getline(&line, &cap, stdin) < 0)
            break;
        run_line(ps, line, NULL); /* an error is reported; the prompt goes on */
    }
    free(line);
    if (tty)
        printf("\n");
}

/* ---- main ----------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tally print [--json] [-COMMAND [ARG]]... EXPERIMENT...\n\n"
            "Reports on one or more experiments in the er_print command language. Commands run\n"
            "in order; with none, commands are read from stdin (an interactive prompt on a\n"
            "terminal). Several experiments, and every descendant process, count as one run.\n\n"
            "options:\n"
            "  --json                         one JSON document per command, one per line\n"
            "  -h, --help                     this help\n\n"
            "commands:\n");
    list_commands(out);
    fprintf(out, "\nMetric names: totalcpu, user, system (flavors e. i. a., visibility . %% +).\n"
                 "See 'man tally-print'.\n");
}

int cmd_print(int argc, char **argv)
{
    typedef struct { const struct pcmd *c; const char *arg; } step_t;
    step_t *steps = calloc((size_t)argc, sizeof *steps);
    const char **paths = calloc((size_t)argc, sizeof *paths);
    if (!steps || !paths)
        return 1;
    size_t nsteps = 0, npaths = 0;
    int json = 0, rc = 0;
    pstate_t ps = { .sort_flavor = FL_E, .sort_metric = ENG_M_TOTALCPU };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = 0;
            goto out;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            paths[npaths++] = a;
            continue;
        }
        char name[128];
        snprintf(name, sizeof name, "%s", a);
        char *eq = strchr(name, '='); /* --limit=5 */
        const char *arg = NULL;
        if (eq) {
            *eq = 0;
            arg = a + (eq - name) + 1;
        }
        const struct pcmd *c = find_cmd(name);
        if (!c) {
            unknown_cmd(a, NULL);
            rc = 2;
            goto out;
        }
        if (c->nargs && !arg) {
            if (i + 1 >= argc) {
                cli_error("print", "-%s needs an argument: %s", c->name, c->arg);
                rc = 2;
                goto out;
            }
            arg = argv[++i];
        }
        steps[nsteps++] = (step_t){ c, arg ? arg : "" };
    }
    if (!npaths) {
        cli_error("print", "no experiment given; usage: tally print -functions EXPERIMENT");
        rc = 2;
        goto out;
    }
    ps.json = json;
    tally_err_t err = { 0 };
    parse_mspec("e.%totalcpu:i.%totalcpu:name", &ps.metrics, FL_E | FL_I, &err);
    parse_mspec("a.%totalcpu:name", &ps.cmetrics, FL_A, &err);
    ps.exps = calloc(npaths, sizeof *ps.exps);
    if (!ps.exps) {
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < npaths && !rc; i++) {
        if (exp_open(paths[i], &ps.exps[i], &err))
            rc = cli_report(&err);
        else
            ps.nexps++;
    }
    if (!rc) {
        ps.sym = sym_new();
        ps.eng = ps.sym ? eng_new(ps.exps, ps.nexps, ps.sym) : NULL;
        if (!ps.eng) {
            fprintf(stderr, "tally: out of memory\n");
            rc = 1;
        }
    }
    if (!rc) {
        if (nsteps == 0) {
            interactive(&ps);
        } else {
            for (size_t i = 0; i < nsteps && !ps.quit; i++) {
                int r = steps[i].c->fn(&ps, steps[i].arg);
                fflush(stdout);
                if (r) {
                    rc = r == 2 ? 2 : 1;
                    break;
                }
            }
        }
    }
out:
    eng_free(ps.eng);
    sym_free(ps.sym);
    for (size_t i = 0; i < ps.nexps; i++)
        exp_close(ps.exps[i]);
    free(ps.exps);
    free(steps);
    free(paths);
    return rc;
}
