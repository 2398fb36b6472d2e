/*
 * print_modes.c - er_print's display modes and settings files for `tally print` (see print.h):
 *
 *   printmode text|html|C   how tables are written: aligned text (the default), an html table,
 *                           or values separated by the one character C, every field quoted
 *   viewmode user|expert|machine
 *                           machine shows the frames of tally's own collector (its interposers)
 *                           as recorded; user and expert leave them out (tally reconstructs no
 *                           Java or OpenMP stacks, so these two are the same)
 *   compare on|off|delta|ratio
 *                           with two or more experiments, each one's metrics side by side (rows
 *                           matched by name and load object), or as the difference from / ratio
 *                           to the first experiment (the base)
 *   dmetrics SPEC, dsort SPEC
 *                           default metrics and sort, with the merging rules of settings files
 *   en_desc on|off|=REGEX   which descendant processes are read (before the experiments load)
 *   describe                the keywords filters can use, and their values in each experiment
 *
 * Settings files: .gprofng.rc (or .er.rc) in the current directory, then in $HOME, then the
 * system's gprofng.rc ($GPROFNG_SYSCONFDIR, default /etc), read in that order as gprofng reads
 * them: a setting from a file read earlier is kept (so the current directory's wins), dmetrics,
 * dsort and addpath accumulate. Only settings are read from them (no view, no script, no output
 * file): a settings file in a directory someone else controls cannot make tally write anywhere.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "print.h"

/* ---- printmode, viewmode, compare ----------------------------------------------------------- */

int pr_comparing(const pstate_t *ps)
{
    return ps->compare != PR_CMP_OFF && ps->ses && ps->ses->nexps >= 2;
}

static void pm_name(const pstate_t *ps, char *buf, size_t n)
{
    if (ps->printmode == PR_PM_TEXT)
        snprintf(buf, n, "text");
    else if (ps->printmode == PR_PM_HTML)
        snprintf(buf, n, "html");
    else
        snprintf(buf, n, "%c", ps->delim);
}

int c_printmode(pstate_t *ps, const char *a)
{
    if (!strcmp(a, "text")) {
        ps->printmode = PR_PM_TEXT;
    } else if (!strcmp(a, "html")) {
        ps->printmode = PR_PM_HTML;
    } else if (strlen(a) == 1 && isprint((unsigned char)*a) && *a != '"' && !isalnum((unsigned char)*a)) {
        ps->printmode = PR_PM_DELIM;
        ps->delim = *a;
    } else {
        esc_fprintf(stderr, "tally: -printmode '%s': use text, html or one punctuation character "
                            "that separates the values (such as , or ;)\n", a);
        return 2;
    }
    if (!ps->json && !ps->quiet) { /* on stderr, as er_print: the output stays one table */
        char m[8];
        pm_name(ps, m, sizeof m);
        fflush(ps->out.f);
        esc_fprintf(stderr, "printmode is set to `%s'\n\n", m);
    }
    return 0;
}

int c_viewmode(pstate_t *ps, const char *a)
{
    static const char *const names[] = { "user", "expert", "machine" };
    int m = -1;
    for (int i = 0; i < 3; i++)
        if (!strcmp(a, names[i]))
            m = i;
    if (m < 0) {
        esc_fprintf(stderr, "tally: -viewmode '%s': use user, expert (both leave tally's own "
                            "collector frames out) or machine (stacks as recorded)\n", a);
        return 2;
    }
    ps->viewmode = m;
    if (ps->ses && ps->ses->eng)
        eng_set_machine_view(ps->ses->eng, m == PR_VM_MACHINE);
    if (!ps->json && !ps->quiet) { /* (on stderr, as er_print) */
        fflush(ps->out.f);
        esc_fprintf(stderr, "Viewmode set to %s\n", names[m]);
    }
    return 0;
}

int c_compare(pstate_t *ps, const char *a)
{
    static const char *const names[] = { "off", "on", "delta", "ratio" };
    int m = -1;
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(a, names[i]))
            m = i;
    if (!strcmp(a, "0"))
        m = PR_CMP_OFF;
    if (!strcmp(a, "1"))
        m = PR_CMP_ON;
    if (m < 0) {
        esc_fprintf(stderr, "tally: -compare '%s': use on (each experiment's metrics side by "
                            "side), delta or ratio (against the first experiment), or off\n", a);
        return 2;
    }
    ps->compare = m;
    if (m != PR_CMP_OFF && ps->ses && ps->ses->nexps < 2 && !ps->quiet)
        esc_fprintf(stderr, "tally: note: -compare %s needs two or more experiments; with one, "
                            "views are as with compare off\n", names[m]);
    return 0;
}

/* ---- titles and tables in html or delimited form -------------------------------------------- */

void pr_view_title(pstate_t *ps, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->title, sizeof ps->title, fmt, ap);
    va_end(ap);
    if (ps->printmode == PR_PM_TEXT)
        sink_printf(&ps->out, "%s\n\n", ps->title);
}

/* A table as cells: columns (a metric of one experiment: a value and/or a percentage) and the
 * name column, formatted as text, html or delimiter-separated values. */
typedef struct gcol {
    char hx[256];        /* the experiment (compare) or "" */
    char word[16];       /* "Exclusive" */
    char title[96];      /* "Total CPU Time" */
    char ab1[128], ab2[96]; /* text headers: "Excl. Total" / "CPU" */
    char unit[32];       /* "sec.", "count", "delta", "ratio" */
    int has_v, has_p, sort;
} gcol_t;

typedef struct grid {
    gcol_t *cols;
    int ncols, name_pos;
    size_t nrows;
    char (*v)[48];  /* nrows * ncols values */
    char (*p)[16];  /* nrows * ncols percentages */
    const char **names;
    char *marks;
} grid_t;

static int grid_alloc(grid_t *g, int ncols, size_t nrows)
{
    memset(g, 0, sizeof *g);
    g->ncols = ncols;
    g->nrows = nrows;
    g->cols = calloc((size_t)ncols + 1, sizeof *g->cols);
    g->v = calloc(nrows * (size_t)ncols + 1, sizeof *g->v);
    g->p = calloc(nrows * (size_t)ncols + 1, sizeof *g->p);
    g->names = calloc(nrows + 1, sizeof *g->names);
    g->marks = calloc(nrows + 1, 1);
    return g->cols && g->v && g->p && g->names && g->marks ? 0 : -1;
}

static void grid_free(grid_t *g)
{
    free(g->cols);
    free(g->v);
    free(g->p);
    free(g->names);
    free(g->marks);
}

static void col_head(gcol_t *c, const pstate_t *ps, const mcol_t *mc)
{
    const eng_metric_def_t *d = mc->def;
    snprintf(c->word, sizeof c->word, "%s", pr_flavor_word(mc->flavor, 0));
    snprintf(c->title, sizeof c->title, "%s", d->title);
    char t[96];
    snprintf(t, sizeof t, "%s", d->title);
    size_t tl = strlen(t);
    if (tl > 5 && !strcmp(t + tl - 5, " Time"))
        t[tl - 5] = 0;
    char *last = strrchr(t, ' ');
    const char *second = "";
    if (last) {
        *last = 0;
        second = last + 1;
    }
    snprintf(c->ab1, sizeof c->ab1, "%s %s", pr_flavor_word(mc->flavor, 1), t);
    snprintf(c->ab2, sizeof c->ab2, "%s", second);
    snprintf(c->unit, sizeof c->unit, "%s", !strcmp(d->unit, "s") ? "sec." : d->unit);
    c->has_v = mc->value;
    c->has_p = mc->percent;
    c->sort = mc->flavor == ps->sort_flavor && mc->metric == ps->sort_metric;
}

/* The column headers of a comparison: each metric column, then each experiment (er_print's
 * order), named by the experiment, the later ones as delta or ratio when compare says so; the
 * sort mark on the first experiment's column (sorted) or on none. */
static void compare_heads(grid_t *g, const pstate_t *ps, const mspec_t *ms, size_t nx, int sorted)
{
    g->name_pos = ms->name_pos * (int)nx;
    for (int c = 0; c < ms->ncols; c++)
        for (size_t x = 0; x < nx; x++) {
            gcol_t *gc = &g->cols[c * (int)nx + (int)x];
            col_head(gc, ps, &ms->cols[c]);
            const char *path = ps->ses->exps[x]->path, *base = strrchr(path, '/');
            snprintf(gc->hx, sizeof gc->hx, "%s", base && base[1] ? base + 1 : path);
            if (x > 0 && ps->compare == PR_CMP_DELTA)
                snprintf(gc->unit, sizeof gc->unit, "delta");
            if (x > 0 && ps->compare == PR_CMP_RATIO)
                snprintf(gc->unit, sizeof gc->unit, "ratio");
            gc->sort = sorted && gc->sort && x == 0;
        }
}

static void html_text(char *dst, size_t n, const char *s)
{
    size_t o = 0;
    for (; *s && o + 8 < n; s++) {
        const char *r = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;"
                      : *s == '"' ? "&quot;" : NULL;
        if (r) {
            o += (size_t)snprintf(dst + o, n - o, "%s", r);
        } else {
            dst[o++] = *s;
        }
    }
    dst[o] = 0;
}

/* A field of delimiter-separated output: quoted, a quote doubled. */
static void delim_field(pstate_t *ps, int first, const char *s)
{
    char buf[1024];
    size_t o = 0;
    for (; *s && o + 3 < sizeof buf; s++) {
        if (*s == '"')
            buf[o++] = '"';
        buf[o++] = *s;
    }
    buf[o] = 0;
    if (!first)
        sink_printf(&ps->out, "%c", ps->delim);
    sink_printf(&ps->out, "\"%s\"", buf);
}

static const char *trim(const char *s)
{
    while (*s == ' ')
        s++;
    return s;
}

static void grid_delim(pstate_t *ps, const grid_t *g, int compare)
{
    for (int line = 0; line < 4; line++) {
        int first = 1;
        for (int c = 0; c <= g->ncols; c++) {
            if (c == g->name_pos) {
                delim_field(ps, first, line == 1 ? "Name" : line == 3 ? "   " : "");
                first = 0;
            }
            if (c == g->ncols)
                break;
            const gcol_t *gc = &g->cols[c];
            char u[48];
            for (int part = 0; part < 2; part++) {
                if (!(part ? gc->has_p : gc->has_v))
                    continue;
                const char *h = line == 0 ? (compare ? gc->hx : "") : line == 1 ? gc->word
                              : line == 2 ? gc->title : u;
                snprintf(u, sizeof u, "%s  %s", gc->sort ? "V" : " ", part ? "%" : gc->unit);
                if (line == 3 && !part)
                    snprintf(u, sizeof u, "%s  (%s)", gc->sort ? "V" : " ", gc->unit);
                delim_field(ps, first, h);
                first = 0;
            }
        }
        sink_printf(&ps->out, "\n");
    }
    for (size_t r = 0; r < g->nrows; r++) {
        int first = 1;
        for (int c = 0; c <= g->ncols; c++) {
            if (c == g->name_pos) {
                delim_field(ps, first, g->names[r]);
                first = 0;
            }
            if (c == g->ncols)
                break;
            const gcol_t *gc = &g->cols[c];
            if (gc->has_v) {
                delim_field(ps, first, trim(g->v[r * (size_t)g->ncols + (size_t)c]));
                first = 0;
            }
            if (gc->has_p) {
                delim_field(ps, first, trim(g->p[r * (size_t)g->ncols + (size_t)c]));
                first = 0;
            }
        }
        sink_printf(&ps->out, "\n");
    }
}

static void grid_html(pstate_t *ps, const grid_t *g, int compare)
{
    char t[sizeof ps->title * 6];
    html_text(t, sizeof t, ps->title);
    sink_printf(&ps->out, "<html><title>%s</title>\n<center><h3>%s</h3></center>\n"
                          "<center><table border=1 cellspacing=2>\n", t, t);
    char h[1024], h2[512];
    if (compare) {
        sink_printf(&ps->out, "<tr>");
        for (int c = 0; c <= g->ncols; c++) {
            if (c == g->name_pos)
                sink_printf(&ps->out, "<th>&nbsp;</th>");
            if (c == g->ncols)
                break;
            html_text(h, sizeof h, g->cols[c].hx);
            sink_printf(&ps->out, "<th colspan=%d>%s</th>", g->cols[c].has_v + g->cols[c].has_p, h);
        }
        sink_printf(&ps->out, "</tr>\n");
    }
    sink_printf(&ps->out, "<tr>");
    for (int c = 0; c <= g->ncols; c++) {
        if (c == g->name_pos)
            sink_printf(&ps->out, "<th align=left>Name</th>");
        if (c == g->ncols)
            break;
        html_text(h, sizeof h, g->cols[c].word);
        html_text(h2, sizeof h2, g->cols[c].title);
        sink_printf(&ps->out, "<th colspan=%d>%s%s<br>%s</th>", g->cols[c].has_v + g->cols[c].has_p,
                    g->cols[c].sort ? "&nabla;&nbsp;" : "", h, h2);
    }
    sink_printf(&ps->out, "</tr>\n<tr>");
    for (int c = 0; c <= g->ncols; c++) {
        if (c == g->name_pos)
            sink_printf(&ps->out, "<th>&nbsp;</th>");
        if (c == g->ncols)
            break;
        html_text(h, sizeof h, g->cols[c].unit);
        if (g->cols[c].has_v)
            sink_printf(&ps->out, "<th>(%s)</th>", h);
        if (g->cols[c].has_p)
            sink_printf(&ps->out, "<th>(%%)</th>");
    }
    sink_printf(&ps->out, "</tr>\n");
    for (size_t r = 0; r < g->nrows; r++) {
        sink_printf(&ps->out, "<tr>");
        for (int c = 0; c <= g->ncols; c++) {
            if (c == g->name_pos) {
                html_text(h, sizeof h, g->names[r]);
                sink_printf(&ps->out, "<td align=left>%s%s</td>", g->marks[r] ? "*" : "", h);
            }
            if (c == g->ncols)
                break;
            size_t k = r * (size_t)g->ncols + (size_t)c;
            if (g->cols[c].has_v) {
                html_text(h, sizeof h, trim(g->v[k]));
                sink_printf(&ps->out, "<td align=right><tt>%s</tt></td>", h);
            }
            if (g->cols[c].has_p)
                sink_printf(&ps->out, "<td align=right>%s</td>", trim(g->p[k]));
        }
        sink_printf(&ps->out, "</tr>\n");
    }
    sink_printf(&ps->out, "</table></center></html>\n");
}

/* Aligned text, er_print's layout (with compare: the experiment above each of its columns). */
static void grid_text(pstate_t *ps, const grid_t *g, int compare)
{
    int *w = calloc((size_t)g->ncols + 1, sizeof *w), *vw = calloc((size_t)g->ncols + 1, sizeof *vw);
    if (!w || !vw) {
        free(w);
        free(vw);
        return;
    }
    int namew = 4;
    for (size_t r = 0; r < g->nrows; r++)
        if ((int)strlen(g->names[r]) > namew)
            namew = strlen(g->names[r]) > 200 ? 200 : (int)strlen(g->names[r]);
    namew += 2;
    for (int c = 0; c < g->ncols; c++) {
        const gcol_t *gc = &g->cols[c];
        int v = gc->has_v ? (int)strlen(gc->unit) : 0, p = gc->has_p ? 6 : 0;
        for (size_t r = 0; r < g->nrows; r++) {
            size_t k = r * (size_t)g->ncols + (size_t)c;
            if (gc->has_v && (int)strlen(g->v[k]) > v)
                v = (int)strlen(g->v[k]);
        }
        vw[c] = v;
        int width = v + (gc->has_v && gc->has_p ? 1 : 0) + p;
        int hl = (int)strlen(gc->ab1);
        if ((int)strlen(gc->ab2) > hl)
            hl = (int)strlen(gc->ab2);
        if (compare && (int)strlen(gc->hx) > hl)
            hl = (int)strlen(gc->hx) > 40 ? 40 : (int)strlen(gc->hx);
        w[c] = (width > hl ? width : hl) + 2;
    }
    for (int line = compare ? 0 : 1; line < 4; line++) {
        for (int c = 0; c <= g->ncols; c++) {
            if (c == g->name_pos)
                sink_printf(&ps->out, " %-*s", c == g->ncols ? 0 : namew, line == 1 ? "Name" : "");
            if (c == g->ncols)
                break;
            const gcol_t *gc = &g->cols[c];
            if (line == 3) {
                char u[64];
                if (gc->has_v && gc->has_p)
                    snprintf(u, sizeof u, "%*s %6s", vw[c], gc->unit, "%");
                else
                    snprintf(u, sizeof u, "%*s", gc->has_v ? vw[c] : 6, gc->has_v ? gc->unit : "%");
                sink_printf(&ps->out, "%-*s", w[c], u);
            } else {
                const char *h = line == 0 ? gc->hx : line == 1 ? gc->ab1 : gc->ab2;
                sink_printf(&ps->out, "%-*.*s", w[c], w[c] - 1, h);
            }
        }
        sink_printf(&ps->out, "\n");
    }
    for (size_t r = 0; r < g->nrows; r++) {
        for (int c = 0; c <= g->ncols; c++) {
            if (c == g->name_pos)
                sink_printf(&ps->out, "%c%-*s", g->marks[r] ? g->marks[r] : ' ',
                            c == g->ncols ? 0 : namew, g->names[r]);
            if (c == g->ncols)
                break;
            const gcol_t *gc = &g->cols[c];
            size_t k = r * (size_t)g->ncols + (size_t)c;
            char cell[96];
            if (gc->has_v && gc->has_p)
                snprintf(cell, sizeof cell, "%*s %6s", vw[c], g->v[k], g->p[k]);
            else
                snprintf(cell, sizeof cell, "%*s", gc->has_v ? vw[c] : 6, gc->has_v ? g->v[k] : g->p[k]);
            sink_printf(&ps->out, "%-*s", w[c], cell);
        }
        sink_printf(&ps->out, "\n");
    }
    free(w);
    free(vw);
}

static void grid_out(pstate_t *ps, const grid_t *g, int compare)
{
    if (ps->printmode == PR_PM_HTML)
        grid_html(ps, g, compare);
    else if (ps->printmode == PR_PM_DELIM)
        grid_delim(ps, g, compare);
    else
        grid_text(ps, g, compare);
}

void pr_table_other(pstate_t *ps, const mspec_t *ms, const row_t *rows, size_t n,
                    const uint64_t *total)
{
    grid_t g;
    if (grid_alloc(&g, ms->ncols, n)) {
        grid_free(&g);
        esc_fprintf(stderr, "tally: out of memory formatting a table\n");
        return;
    }
    g.name_pos = ms->name_pos;
    for (int c = 0; c < ms->ncols; c++)
        col_head(&g.cols[c], ps, &ms->cols[c]);
    for (size_t r = 0; r < n; r++) {
        g.names[r] = rows[r].name;
        g.marks[r] = (char)rows[r].mark;
        for (int c = 0; c < ms->ncols; c++) {
            const mcol_t *mc = &ms->cols[c];
            size_t k = r * (size_t)ms->ncols + (size_t)c;
            int fi = mc->flavor == FL_E ? 0 : mc->flavor == FL_I ? 1 : 2;
            if (!rows[r].v[fi])
                continue;
            uint64_t raw = pr_row_value(&rows[r], mc->flavor, mc->metric);
            pr_fmt_value(g.v[k], sizeof g.v[k], mc->def, raw);
            pr_fmt_percent(g.p[k], sizeof g.p[k], raw, total[mc->metric]);
        }
    }
    grid_out(ps, &g, 0);
    grid_free(&g);
}

/* ---- compare -------------------------------------------------------------------------------- */

/* One row of a compared table: its name, its key (name and load object) and, per experiment,
 * its exclusive and inclusive vectors (NULL where the experiment has no such row). */
typedef struct crow {
    char *name, *key;
    uint64_t hash; /* of key */
    uint64_t **ex, **in;
} crow_t;

typedef struct ctab {
    crow_t *rows;
    size_t n, cap;
    size_t nexps;
    int nmetrics;
    uint64_t **total; /* per experiment */
} ctab_t;

/* The load object a row belongs to (its function's), for matching across experiments. */
static const char *row_object(pstate_t *ps, int kind, uint32_t id)
{
    eng_t *g = ps->ses->eng;
    uint32_t obj = UINT32_MAX, fn = UINT32_MAX;
    if (kind == ENG_KIND_FUNCTION) {
        fn = id;
    } else if (kind == ENG_KIND_PC) {
        uint64_t addr;
        eng_pc_info(g, id, &obj, &addr);
    } else if (kind == ENG_KIND_LINE) {
        const char *file;
        uint32_t line;
        if (eng_line_info(g, id, &file, &line, &fn) != 0)
            fn = UINT32_MAX;
    }
    if (fn != UINT32_MAX)
        obj = eng_function_object(g, fn);
    if (obj == UINT32_MAX || obj >= sym_nobjects(ps->ses->sym))
        return "";
    return sym_object(ps->ses->sym, obj)->name;
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static crow_t *ctab_row(ctab_t *t, const char *name, const char *key)
{
    uint64_t h = fnv(key);
    for (size_t i = 0; i < t->n; i++) /* (a few thousand rows: a scan of hashes is enough) */
        if (t->rows[i].hash == h && !strcmp(t->rows[i].key, key))
            return &t->rows[i];
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        crow_t *r = realloc(t->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        t->rows = r;
        t->cap = cap;
    }
    crow_t *r = &t->rows[t->n];
    *r = (crow_t){ strdup(name), strdup(key), h, calloc(t->nexps, sizeof(uint64_t *)),
                   calloc(t->nexps, sizeof(uint64_t *)) };
    if (!r->name || !r->key || !r->ex || !r->in) {
        free(r->name);
        free(r->key);
        free(r->ex);
        free(r->in);
        return NULL;
    }
    t->n++;
    return r;
}

static uint64_t *vdup(const uint64_t *v, int n)
{
    uint64_t *d = malloc((size_t)n * sizeof *d);
    if (d)
        memcpy(d, v, (size_t)n * sizeof *d);
    return d;
}

static void ctab_free(ctab_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        for (size_t x = 0; x < t->nexps; x++) {
            free(t->rows[i].ex[x]);
            free(t->rows[i].in[x]);
        }
        free(t->rows[i].ex);
        free(t->rows[i].in);
        free(t->rows[i].name);
        free(t->rows[i].key);
    }
    free(t->rows);
    if (t->total)
        for (size_t x = 0; x < t->nexps; x++)
            free(t->total[x]);
    free(t->total);
}

static int byname(const void *a, const void *b)
{
    return strcmp((*(crow_t *const *)a)->name, (*(crow_t *const *)b)->name);
}

/* Rows of one name in different load objects (main of two programs): "name (object)". */
static int ctab_names(ctab_t *t, tally_err_t *err)
{
    crow_t **by = malloc((t->n + 1) * sizeof *by);
    if (!by)
        return tally_errf(err, TALLY_ENOMEM, "out of memory comparing experiments");
    for (size_t i = 0; i < t->n; i++)
        by[i] = &t->rows[i];
    qsort(by, t->n, sizeof *by, byname);
    char *dup = calloc(t->n + 1, 1);
    for (size_t i = 0; dup && i + 1 < t->n; i++)
        if (!strcmp(by[i]->name, by[i + 1]->name))
            dup[i] = dup[i + 1] = 1;
    for (size_t i = 0; dup && i < t->n; i++) {
        char *nm = NULL;
        if (dup[i] && asprintf(&nm, "%s (%s)", by[i]->name, strchr(by[i]->key, 1) + 1) >= 0) {
            free(by[i]->name);
            by[i]->name = nm;
        }
    }
    int rc = dup ? 0 : tally_errf(err, TALLY_ENOMEM, "out of memory comparing experiments");
    free(dup);
    free(by);
    return rc;
}

/* Each experiment's table of kind, through a filter that keeps only its events (with the
 * user's filter, if any); the filter is restored afterwards. */
static int ctab_build(pstate_t *ps, int kind, ctab_t *t, tally_err_t *err)
{
    eng_t *g = ps->ses->eng;
    char *user = strdup(eng_filter(g));
    if (!user)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    int has_user = strcmp(user, "none") != 0 && *user;
    *t = (ctab_t){ .nexps = ps->ses->nexps, .nmetrics = eng_nmetrics(g) };
    t->total = calloc(t->nexps, sizeof *t->total);
    int rc = t->total ? 0 : tally_errf(err, TALLY_ENOMEM, "out of memory");
    rep_opts_t o = pr_opts(ps);
    o.limit = 0;
    for (size_t x = 0; x < t->nexps && !rc; x++) {
        size_t len = strlen(user) + 64;
        char *expr = malloc(len);
        if (!expr) {
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
            break;
        }
        if (has_user)
            snprintf(expr, len, "(%s) && EXPID == %zu", user, x + 1);
        else
            snprintf(expr, len, "EXPID == %zu", x + 1);
        rc = eng_set_filter(g, expr, err);
        free(expr);
        rep_table_t rt;
        if (!rc)
            rc = rep_table(ps->ses, kind, &o, &rt, err);
        if (rc)
            break;
        t->total[x] = vdup(rt.total, t->nmetrics);
        for (size_t i = 0; i < rt.n && t->total[x]; i++) {
            char key[1024];
            snprintf(key, sizeof key, "%s\x01%s", rt.rows[i].name, row_object(ps, kind, rt.rows[i].id));
            crow_t *r = ctab_row(t, rt.rows[i].name, key);
            if (!r || !(r->ex[x] = vdup(rt.rows[i].v[0], t->nmetrics)) ||
                !(r->in[x] = vdup(rt.rows[i].v[1], t->nmetrics))) {
                rc = tally_errf(err, TALLY_ENOMEM, "out of memory comparing experiments");
                break;
            }
        }
        if (!t->total[x] && !rc)
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory comparing experiments");
        rep_table_free(&rt);
    }
    tally_err_t e2 = { 0 };
    eng_set_filter(g, has_user ? user : "", &e2);
    free(user);
    if (!rc)
        rc = ctab_names(t, err);
    return rc;
}

static uint64_t cval(const crow_t *r, size_t x, int fl, int m)
{
    const uint64_t *v = fl == FL_E ? r->ex[x] : r->in[x];
    return v ? v[m] : 0;
}

static int sort_flavor_g, sort_metric_g;
static int crow_cmp(const void *a, const void *b)
{
    const crow_t *x = a, *y = b;
    if (sort_metric_g >= 0) {
        uint64_t vx = cval(x, 0, sort_flavor_g, sort_metric_g);
        uint64_t vy = cval(y, 0, sort_flavor_g, sort_metric_g);
        if (vx != vy)
            return vx > vy ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

/* A compared value: as is (on), its difference from the base's (delta), its ratio to it. */
static void cmp_value(pstate_t *ps, char *buf, size_t n, const eng_metric_def_t *d, uint64_t base,
                      uint64_t v, size_t x)
{
    if (x == 0 || ps->compare == PR_CMP_ON) {
        pr_fmt_value(buf, n, d, v);
    } else if (ps->compare == PR_CMP_DELTA) {
        char a[40];
        pr_fmt_value(a, sizeof a, d, v >= base ? v - base : base - v);
        snprintf(buf, n, "%s%s", v >= base ? "+" : "-", a);
    } else if (base == 0) {
        snprintf(buf, n, v == 0 ? "x 1.000" : "x >99.999");
    } else {
        double r = (double)v / (double)base;
        if (r > 99.999)
            snprintf(buf, n, "x >99.999");
        else
            snprintf(buf, n, "x %.3f", r);
    }
}

int view_compare_list(pstate_t *ps, int kind)
{
    tally_err_t err = { 0 };
    ctab_t t;
    if (ctab_build(ps, kind, &t, &err)) {
        ctab_free(&t);
        return pr_report(&err);
    }
    sort_flavor_g = ps->sort_flavor;
    sort_metric_g = ps->sort_metric;
    if (t.n)
        qsort(t.rows, t.n, sizeof *t.rows, crow_cmp);
    size_t n = t.n;
    if (ps->limit > 0 && (size_t)ps->limit < n)
        n = (size_t)ps->limit;
    const mspec_t *ms = &ps->metrics;
    size_t nx = t.nexps;
    int ncols = ms->ncols * (int)nx;
    static const char *const titles[ENG_NKINDS] = { "Functions", "Load Objects", "Instructions",
                                                    "Source Lines" };
    static const char *const views[ENG_NKINDS] = { "functions", "objects", "pcs", "lines" };
    static const char *const modes[] = { "off", "on", "delta", "ratio" };
    int rc = 0;
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, views[kind]);
        json_key(&j, "compare");
        json_str(&j, modes[ps->compare]);
        json_key(&j, "experiments");
        json_arr_begin(&j);
        for (size_t x = 0; x < nx; x++)
            json_str(&j, ps->ses->exps[x]->path);
        json_arr_end(&j);
        pr_jmetrics(&j, ms);
        json_key(&j, "rows");
        json_arr_begin(&j);
        for (size_t i = 0; i <= n; i++) {
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, i == 0 ? "<Total>" : t.rows[i - 1].name);
            json_key(&j, "values");
            json_arr_begin(&j);
            for (size_t x = 0; x < nx; x++) {
                json_obj_begin(&j);
                for (int c = 0; c < ms->ncols; c++) {
                    const mcol_t *mc = &ms->cols[c];
                    uint64_t v = i == 0 ? t.total[x][mc->metric]
                                        : cval(&t.rows[i - 1], x, mc->flavor, mc->metric);
                    json_keyf(&j, "%c.%s", pr_flavor_char(mc->flavor), mc->def->name);
                    json_num(&j, pr_scaled(ps->ses->eng, mc->metric, v));
                }
                json_obj_end(&j);
            }
            json_arr_end(&j);
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
        ctab_free(&t);
        return 0;
    }
    char st[160];
    pr_view_title(ps, "%s sorted by metric: %s", titles[kind], pr_sort_title(ps, st, sizeof st));
    grid_t g;
    if (grid_alloc(&g, ncols, n + 1)) {
        grid_free(&g);
        ctab_free(&t);
        esc_fprintf(stderr, "tally: out of memory formatting a table\n");
        return 1;
    }
    compare_heads(&g, ps, ms, nx, 1);
    for (size_t r = 0; r <= n; r++) {
        g.names[r] = r == 0 ? "<Total>" : t.rows[r - 1].name;
        for (int c = 0; c < ms->ncols; c++) {
            const mcol_t *mc = &ms->cols[c];
            uint64_t base = r == 0 ? t.total[0][mc->metric] : cval(&t.rows[r - 1], 0, mc->flavor, mc->metric);
            for (size_t x = 0; x < nx; x++) {
                size_t k = r * (size_t)ncols + (size_t)(c * (int)nx + (int)x);
                uint64_t v = r == 0 ? t.total[x][mc->metric]
                                    : cval(&t.rows[r - 1], x, mc->flavor, mc->metric);
                cmp_value(ps, g.v[k], sizeof g.v[k], mc->def, base, v, x);
                pr_fmt_percent(g.p[k], sizeof g.p[k], v, t.total[x][mc->metric]);
            }
        }
    }
    grid_out(ps, &g, 1);
    if (ps->printmode == PR_PM_TEXT)
        sink_printf(&ps->out, "\n");
    grid_free(&g);
    ctab_free(&t);
    return rc;
}

/* ---- dmetrics and dsort --------------------------------------------------------------------- */

/* Does the data have metric m (its kind of data was recorded)? */
static int metric_present(pstate_t *ps, int m)
{
    if (m >= ENG_NBUILTIN)
        return 1;
    const char *ev = eng_metric(ps->ses->eng, m)->event;
    for (size_t x = 0; x < ps->ses->nexps; x++)
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[x]->procs[i];
            if (((!strcmp(ev, "clock") || !strcmp(ev, "states")) && p->clock_ns) ||
                (!strcmp(ev, "sync") && p->sync_on) || (!strcmp(ev, "heap") && p->heap_on) ||
                (!strcmp(ev, "io") && p->io_on))
                return 1;
        }
    return 0;
}

/* One entry of a metric list: flavors [eiad]*, visibility [.%+!]*, a name. */
typedef struct mentry {
    int fl; /* FL_E | FL_I (a and d are accepted, and apply to no function-list column) */
    int value, percent, hidden;
    char name[96];
} mentry_t;

static int parse_entry(const char *s, mentry_t *e)
{
    memset(e, 0, sizeof *e);
    for (; *s && strchr("eiad", *s); s++)
        e->fl |= *s == 'e' ? FL_E : *s == 'i' ? FL_I : 0;
    for (; *s && strchr(".%+!", *s); s++) {
        e->value |= *s == '.' || *s == '+';
        e->percent |= *s == '%';
        e->hidden |= *s == '!';
    }
    if (!*s || strlen(s) >= sizeof e->name)
        return -1;
    snprintf(e->name, sizeof e->name, "%s", s);
    if (!e->value && !e->percent)
        e->value = 1;
    return 0;
}

/* Is name the metric of a counter (-h) of the loaded experiments? er_print's "hwc" names them
 * all in dmetrics and dsort. */
static int counter_metric(const pstate_t *ps, const char *name)
{
    for (size_t x = 0; x < ps->ses->nexps; x++) {
        const exp_experiment_t *e = ps->ses->exps[x];
        for (size_t i = 0; i < e->nprocs; i++) {
            const exp_process_t *p = e->procs[i];
            for (size_t c = 0; c < p->ncounters; c++)
                if (p->counters[c].metric < p->nmetrics &&
                    !strcmp(p->metrics[p->counters[c].metric].name, name))
                    return 1;
        }
    }
    return 0;
}

/* The metric spec (for -metrics) that the default-metrics list spec gives on this data, by the
 * rules of er_print's dmetrics: entries in order, each (flavor, metric) placed by the first entry
 * that names it ("any" and "all": every metric of the data; "hwc": every counter's), hidden ones
 * ('!') placed but not
 * shown; name where the first "name" entry is, else last. Also the attributed list for
 * callers-callees (each metric's first visibility). Returns the number of columns shown. */
static int dmetrics_spec(pstate_t *ps, const char *spec, char *out, size_t n, char *cout, size_t cn)
{
    int nm = eng_nmetrics(ps->ses->eng);
    unsigned char *placed = calloc((size_t)nm * 2 + 1, 1), *cplaced = calloc((size_t)nm + 1, 1);
    char *copy = strdup(spec);
    size_t o = 0, co = 0;
    int shown = 0, name_done = 0;
    out[0] = cout[0] = 0;
    char *save = NULL;
    for (char *t = copy && placed && cplaced ? strtok_r(copy, ":", &save) : NULL; t;
         t = strtok_r(NULL, ":", &save)) {
        mentry_t e;
        if (parse_entry(t, &e))
            continue;
        if (!strcmp(e.name, "name")) {
            if (!e.hidden && !name_done && o + 8 < n) {
                o += (size_t)snprintf(out + o, n - o, "name:");
                co += (size_t)snprintf(cout + co, cn - co, "name:");
                name_done = 1;
            }
            continue;
        }
        int any = !strcmp(e.name, "any") || !strcmp(e.name, "all");
        int hwc = !strcmp(e.name, "hwc");
        for (int f = FL_E; f <= FL_I; f <<= 1) {
            if (!(e.fl & f))
                continue;
            for (int m = 0; m < nm; m++) {
                const eng_metric_def_t *d = eng_metric(ps->ses->eng, m);
                int named = any || !strcmp(e.name, d->name) || (hwc && counter_metric(ps, d->name));
                if (!named || !metric_present(ps, m))
                    continue;
                unsigned char *pl = &placed[(size_t)m * 2 + (f == FL_I)];
                if (*pl)
                    continue;
                *pl = 1;
                if (e.hidden || o + strlen(d->name) + 8 >= n)
                    continue;
                o += (size_t)snprintf(out + o, n - o, "%c%s%s%s:", f == FL_E ? 'e' : 'i',
                                      e.value ? "." : "", e.percent ? "%" : "", d->name);
                shown++;
                if (!cplaced[m] && co + strlen(d->name) + 8 < cn) {
                    cplaced[m] = 1;
                    co += (size_t)snprintf(cout + co, cn - co, "a%s%s%s:", e.value ? "." : "",
                                           e.percent ? "%" : "", d->name);
                }
            }
        }
    }
    if (!name_done) {
        snprintf(out + o, n - o, "name");
        snprintf(cout + co, cn - co, "name");
    } else {
        if (o)
            out[o - 1] = 0;
        if (co)
            cout[co - 1] = 0;
    }
    free(copy);
    free(placed);
    free(cplaced);
    return shown;
}

/* The sort of a dsort list: its first entry (not hidden) whose flavor and metric are shown. */
static int dsort_apply(pstate_t *ps, const char *spec)
{
    char *copy = strdup(spec ? spec : "");
    char *save = NULL;
    int done = 0;
    for (char *t = copy ? strtok_r(copy, ":", &save) : NULL; t && !done;
         t = strtok_r(NULL, ":", &save)) {
        mentry_t e;
        if (parse_entry(t, &e) || e.hidden)
            continue;
        if (!strcmp(e.name, "name")) {
            ps->sort_metric = -1;
            done = 1;
            break;
        }
        int any = !strcmp(e.name, "any") || !strcmp(e.name, "all");
        int hwc = !strcmp(e.name, "hwc");
        for (int f = FL_E; f <= FL_I && !done; f <<= 1) {
            if (!(e.fl & f))
                continue;
            for (int c = 0; c < ps->metrics.ncols && !done; c++) {
                const mcol_t *mc = &ps->metrics.cols[c];
                if (mc->flavor == f && (any || !strcmp(mc->def->name, e.name) ||
                                        (hwc && counter_metric(ps, mc->def->name)))) {
                    ps->sort_flavor = f;
                    ps->sort_metric = mc->metric;
                    done = 1;
                }
            }
        }
    }
    free(copy);
    return done;
}

static int apply_dmetrics(pstate_t *ps, const char *spec, const char *where)
{
    char m[2048], cm[2048];
    if (dmetrics_spec(ps, spec, m, sizeof m, cm, sizeof cm) == 0) {
        esc_fprintf(stderr, "tally: %s%sdmetrics '%s' shows none of the metrics this data has "
                            "(see -metric_list): the metrics are left as they were\n",
                    where ? where : "", where ? ": " : "", spec);
        return 1;
    }
    int q = ps->quiet;
    ps->quiet = 1;
    int rc = pr_run(ps, "cmetrics", cm);
    if (!rc)
        rc = pr_run(ps, "metrics", m);
    if (!rc) /* er_print's fallback sort: the first exclusive metric shown, else inclusive */
        dsort_apply(ps, "ei.any:name");
    ps->quiet = q;
    if (!rc && !q) /* (the sort is in the list: it stays) */
        rc = pr_run(ps, "metrics", m);
    return rc;
}

int c_dmetrics(pstate_t *ps, const char *a) { return apply_dmetrics(ps, a, NULL); }

int c_dsort(pstate_t *ps, const char *a)
{
    if (!dsort_apply(ps, a)) {
        esc_fprintf(stderr, "tally: -dsort '%s': none of its metrics is shown (see -metrics); "
                            "the sort is left as it was\n", a);
        return 1;
    }
    if (ps->sort_metric < 0)
        return pr_run(ps, "sort", "name");
    char s[160];
    snprintf(s, sizeof s, "%c.%s", pr_flavor_char(ps->sort_flavor),
             eng_metric(ps->ses->eng, ps->sort_metric)->name);
    return pr_run(ps, "sort", s);
}

/* ---- settings files ------------------------------------------------------------------------- */

/* The settings a file may hold and how several files combine: accumulated (dmetrics, dsort,
 * addpath, pathmap, object_*), or kept from the first file that sets them. */
static const struct rcset {
    const char *name;
    int accumulate; /* 1: every file's entries count */
    int ignored;    /* 1: accepted, no effect in tally (compiler commentary, tabs, ...) */
} rcsets[] = {
    { "dmetrics", 1, 0 },  { "dsort", 1, 0 },     { "addpath", 1, 0 },  { "pathmap", 1, 0 },
    { "setpath", 0, 0 },   { "object_show", 1, 0 }, { "object_hide", 1, 0 },
    { "object_api", 1, 0 }, { "name", 0, 0 },     { "viewmode", 0, 0 }, { "compare", 0, 0 },
    { "printmode", 0, 0 }, { "limit", 0, 0 },     { "en_desc", 0, 1 },  { "scc", 0, 1 },
    { "sthresh", 0, 1 },   { "dcc", 0, 1 },       { "dthresh", 0, 1 },  { "cc", 0, 1 },
    { "tlmode", 0, 1 },    { "tldata", 0, 1 },    { "tabs", 0, 1 },     { "rtabs", 0, 1 },
    { "preload_libdirs", 0, 1 }, { "mobj_define", 1, 1 }, { "indxobj_define", 1, 1 },
    { "machinemodel", 0, 1 }, { "ignore_no_xhwcprof", 0, 1 }, { "ignore_fs_warn", 0, 1 },
};
#define NRCSETS (sizeof rcsets / sizeof *rcsets)

typedef struct rcline {
    const struct rcset *set;
    char *arg, *where;
} rcline_t;

typedef struct rcread {
    rcline_t *lines;
    size_t n, cap;
    int seen[NRCSETS];
    char *dmetrics, *dsort;
} rcread_t;

static char *join(char *a, const char *b)
{
    char *r = NULL;
    if (asprintf(&r, "%s%s%s", a ? a : "", a ? ":" : "", b) < 0)
        r = NULL;
    free(a);
    return r;
}

/* dmetrics of a later file go before the "name" a list ends with (as er_print merges them). */
static char *join_dmetrics(char *a, const char *b)
{
    if (!a)
        return strdup(b);
    size_t l = strlen(a);
    if (l >= 5 && !strcmp(a + l - 5, ":name")) {
        a[l - 5] = 0;
        char *r = NULL;
        if (asprintf(&r, "%s:%s:name", a, b) < 0)
            r = NULL;
        free(a);
        return r;
    }
    return join(a, b);
}

static void rc_file(rcread_t *rd, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        char *end = p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1]))
            *--end = 0;
        if (!*p || *p == '#')
            continue;
        char *arg = p;
        while (*arg && !isspace((unsigned char)*arg))
            arg++;
        if (*arg) {
            *arg++ = 0;
            while (isspace((unsigned char)*arg))
                arg++;
        }
        char *hash = strstr(arg, " #"); /* a comment after the argument */
        if (hash) {
            *hash = 0;
            for (end = arg + strlen(arg); end > arg && isspace((unsigned char)end[-1]);)
                *--end = 0;
        }
        if (strlen(arg) >= 2 && arg[0] == '"' && arg[strlen(arg) - 1] == '"') {
            arg[strlen(arg) - 1] = 0;
            arg++;
        }
        size_t k = 0;
        while (k < NRCSETS && strcmp(rcsets[k].name, p))
            k++;
        if (k == NRCSETS) {
            esc_fprintf(stderr, "tally: warning: %s:%d: '%s' is not a setting of a settings file "
                                "(views, scripts and output files are not read from one): "
                                "ignored\n", path, lineno, p);
            continue;
        }
        if (!*arg) {
            esc_fprintf(stderr, "tally: warning: %s:%d: %s needs an argument: ignored\n", path,
                        lineno, p);
            continue;
        }
        if (rcsets[k].ignored)
            continue;
        if (!strcmp(p, "dmetrics")) {
            rd->dmetrics = join_dmetrics(rd->dmetrics, arg);
            continue;
        }
        if (!strcmp(p, "dsort")) {
            rd->dsort = join(rd->dsort, arg);
            continue;
        }
        if (!rcsets[k].accumulate && rd->seen[k])
            continue; /* a file read before (nearer the user) set it */
        rd->seen[k] = 1;
        if (rd->n == rd->cap) {
            size_t nc = rd->cap ? 2 * rd->cap : 16;
            rcline_t *l = realloc(rd->lines, nc * sizeof *l);
            if (!l)
                break;
            rd->lines = l;
            rd->cap = nc;
        }
        char *where = NULL;
        if (asprintf(&where, "%s:%d", path, lineno) < 0)
            break;
        rd->lines[rd->n++] = (rcline_t){ &rcsets[k], strdup(arg), where };
    }
    free(line);
    fclose(f);
}

/* addpath's $expts: the directories of the experiments. */
static void addpath_expts(pstate_t *ps, const char *arg, const char *where)
{
    char *out = NULL;
    char *copy = strdup(arg), *save = NULL;
    for (char *t = copy ? strtok_r(copy, ":", &save) : NULL; t; t = strtok_r(NULL, ":", &save)) {
        if (!strcmp(t, "$expts"))
            for (size_t x = 0; x < ps->ses->nexps; x++)
                out = join(out, ps->ses->exps[x]->path);
        else
            out = join(out, t);
    }
    if (out && pr_run(ps, "addpath", out) != 0)
        esc_fprintf(stderr, "tally: warning: %s: addpath '%s' was not applied\n", where, arg);
    free(out);
    free(copy);
}

void pr_read_rc(pstate_t *ps)
{
    if (ps->norc)
        return;
    rcread_t rd = { 0 };
    /* nearest first: a setting already read is kept */
    const char *names[] = { ".gprofng.rc", ".er.rc" };
    char cwdrc[PATH_MAX] = "", path[PATH_MAX];
    for (int k = 0; k < 2; k++)
        if (access(names[k], R_OK) == 0) {
            snprintf(cwdrc, sizeof cwdrc, "%s", names[k]);
            rc_file(&rd, names[k]);
            break;
        }
    const char *home = getenv("HOME");
    for (int k = 0; home && *home && k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", home, names[k]);
        if (access(path, R_OK) != 0)
            continue;
        char *a = realpath(path, NULL), *b = *cwdrc ? realpath(cwdrc, NULL) : NULL;
        int same = a && b && !strcmp(a, b);
        free(a);
        free(b);
        if (!same)
            rc_file(&rd, path);
        break;
    }
    const char *sys = getenv("GPROFNG_SYSCONFDIR");
    snprintf(path, sizeof path, "%s/gprofng.rc", sys && *sys ? sys : "/etc");
    rc_file(&rd, path);

    int q = ps->quiet;
    ps->quiet = 1;
    for (size_t i = 0; i < rd.n; i++) {
        const rcline_t *l = &rd.lines[i];
        if (!strcmp(l->set->name, "addpath")) {
            addpath_expts(ps, l->arg, l->where);
        } else if (pr_run(ps, l->set->name, l->arg) != 0) {
            esc_fprintf(stderr, "tally: warning: %s: %s '%s' was not applied\n", l->where,
                        l->set->name, l->arg);
        }
    }
    if (rd.dmetrics)
        apply_dmetrics(ps, rd.dmetrics, "settings files");
    if (rd.dsort)
        dsort_apply(ps, rd.dsort);
    ps->quiet = q;
    for (size_t i = 0; i < rd.n; i++) {
        free(rd.lines[i].arg);
        free(rd.lines[i].where);
    }
    free(rd.lines);
    free(rd.dmetrics);
    free(rd.dsort);
}

/* ---- compare: callers-callees --------------------------------------------------------------- */

/* A focus function of the compared callers-callees: its callers and callees (attributed values
 * in the ex slot of their rows) and its own exclusive values, per experiment. */
typedef struct centry {
    char *key;
    ctab_t callers, callees, self;
} centry_t;

static int add_rows(pstate_t *ps, ctab_t *t, size_t x, const rep_row_t *rows, size_t n, int fi,
                    tally_err_t *err)
{
    for (size_t i = 0; i < n; i++) {
        char key[1024];
        snprintf(key, sizeof key, "%s\x01%s", rows[i].name,
                 row_object(ps, ENG_KIND_FUNCTION, rows[i].id));
        crow_t *r = ctab_row(t, rows[i].name, key);
        if (!r || !rows[i].v[fi] || !(r->ex[x] = vdup(rows[i].v[fi], t->nmetrics)))
            return tally_errf(err, TALLY_ENOMEM, "out of memory comparing experiments");
    }
    return 0;
}

static void cc_grid_out(pstate_t *ps, centry_t *e, uint64_t **total)
{
    const mspec_t *ms = &ps->cmetrics;
    size_t nx = e->self.nexps;
    int ncols = ms->ncols * (int)nx;
    sort_flavor_g = FL_E; /* (attributed values are kept in the ex slot) */
    sort_metric_g = ps->sort_metric;
    if (e->callers.n)
        qsort(e->callers.rows, e->callers.n, sizeof(crow_t), crow_cmp);
    if (e->callees.n)
        qsort(e->callees.rows, e->callees.n, sizeof(crow_t), crow_cmp);
    size_t n = e->callers.n + 1 + e->callees.n;
    grid_t g;
    if (grid_alloc(&g, ncols, n)) {
        grid_free(&g);
        return;
    }
    compare_heads(&g, ps, ms, nx, 0);
    for (size_t r = 0; r < n; r++) {
        const crow_t *row = r < e->callers.n ? &e->callers.rows[r]
                          : r == e->callers.n ? &e->self.rows[0]
                                              : &e->callees.rows[r - e->callers.n - 1];
        g.names[r] = row->name;
        g.marks[r] = r == e->callers.n ? '*' : 0;
        for (int c = 0; c < ms->ncols; c++) {
            const mcol_t *mc = &ms->cols[c];
            uint64_t base = cval(row, 0, FL_E, mc->metric);
            for (size_t x = 0; x < nx; x++) {
                size_t k = r * (size_t)ncols + (size_t)(c * (int)nx + (int)x);
                uint64_t v = cval(row, x, FL_E, mc->metric);
                cmp_value(ps, g.v[k], sizeof g.v[k], mc->def, base, v, x);
                pr_fmt_percent(g.p[k], sizeof g.p[k], v, total[x] ? total[x][mc->metric] : 0);
            }
        }
    }
    grid_out(ps, &g, 1);
    if (ps->printmode == PR_PM_TEXT)
        sink_printf(&ps->out, "\n");
    grid_free(&g);
}

int view_compare_cc(pstate_t *ps, const char *single)
{
    tally_err_t err = { 0 };
    eng_t *g = ps->ses->eng;
    size_t nx = ps->ses->nexps;
    char *user = strdup(eng_filter(g));
    if (!user)
        return pr_report(&(tally_err_t){ TALLY_ENOMEM, "out of memory" });
    int has_user = strcmp(user, "none") != 0 && *user;
    centry_t *es = NULL;
    size_t n = 0, cap = 0;
    uint64_t **total = calloc(nx, sizeof *total);
    int rc = total ? 0 : tally_errf(&err, TALLY_ENOMEM, "out of memory"), found = 0;
    rep_opts_t o = pr_opts(ps);
    o.limit = 0;
    tally_err_t first_miss = { 0 };
    for (size_t x = 0; x < nx && !rc; x++) {
        char expr[4096];
        if (has_user)
            snprintf(expr, sizeof expr, "(%s) && EXPID == %zu", user, x + 1);
        else
            snprintf(expr, sizeof expr, "EXPID == %zu", x + 1);
        if ((rc = eng_set_filter(g, expr, &err)))
            break;
        rep_cc_t cc;
        tally_err_t e1 = { 0 };
        if (rep_callers_callees(ps->ses, &o, single, &cc, &e1)) {
            if (!single || e1.code == TALLY_ENOMEM) {
                err = e1;
                rc = e1.code ? e1.code : 1;
                break;
            }
            if (!first_miss.code)
                first_miss = e1; /* not in this experiment: its columns are empty */
            continue;
        }
        found = 1;
        total[x] = vdup(cc.total, eng_nmetrics(g));
        for (size_t i = 0; i < cc.n && !rc; i++) {
            const rep_cc_entry_t *ce = &cc.entries[i];
            char key[1024];
            snprintf(key, sizeof key, "%s\x01%s", ce->name, row_object(ps, ENG_KIND_FUNCTION, ce->id));
            size_t k = 0;
            while (k < n && strcmp(es[k].key, key))
                k++;
            if (k == n) {
                if (n == cap) {
                    size_t nc = cap ? 2 * cap : 32;
                    centry_t *ne = realloc(es, nc * sizeof *ne);
                    if (!ne) {
                        rc = tally_errf(&err, TALLY_ENOMEM, "out of memory");
                        break;
                    }
                    es = ne;
                    cap = nc;
                }
                es[n] = (centry_t){ .key = strdup(key) };
                int m = eng_nmetrics(g);
                es[n].callers = es[n].callees = es[n].self = (ctab_t){ .nexps = nx, .nmetrics = m };
                n++;
            }
            centry_t *e = &es[k];
            rep_row_t self = { ce->name, { NULL, NULL, ce->excl }, '*', ce->id };
            if (add_rows(ps, &e->callers, x, ce->callers, ce->ncallers, 2, &err) ||
                add_rows(ps, &e->callees, x, ce->callees, ce->ncallees, 2, &err) ||
                add_rows(ps, &e->self, x, &self, 1, 2, &err))
                rc = err.code;
        }
        rep_cc_free(&cc);
    }
    tally_err_t e2 = { 0 };
    eng_set_filter(g, has_user ? user : "", &e2);
    free(user);
    if (!rc && !found)
        err = first_miss, rc = 1;
    for (size_t k = 0; !rc && k < n; k++)
        if (ctab_names(&es[k].callers, &err) || ctab_names(&es[k].callees, &err))
            rc = 1;
    if (!rc && ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, single ? "csingle" : "callers-callees");
        json_key(&j, "compare");
        json_str(&j, ps->compare == PR_CMP_DELTA ? "delta" : ps->compare == PR_CMP_RATIO ? "ratio" : "on");
        pr_jmetrics(&j, &ps->cmetrics);
        json_key(&j, "entries");
        json_arr_begin(&j);
        for (size_t k = 0; k < n; k++) {
            json_obj_begin(&j);
            json_key(&j, "function");
            json_str(&j, es[k].self.rows[0].name);
            static const char *const part[] = { "callers", "self", "callees" };
            const ctab_t *tabs[] = { &es[k].callers, &es[k].self, &es[k].callees };
            for (int p = 0; p < 3; p++) {
                json_key(&j, part[p]);
                json_arr_begin(&j);
                for (size_t r = 0; r < tabs[p]->n; r++) {
                    json_obj_begin(&j);
                    json_key(&j, "name");
                    json_str(&j, tabs[p]->rows[r].name);
                    json_key(&j, "values");
                    json_arr_begin(&j);
                    for (size_t x = 0; x < nx; x++) {
                        json_obj_begin(&j);
                        for (int c = 0; c < ps->cmetrics.ncols; c++) {
                            const mcol_t *mc = &ps->cmetrics.cols[c];
                            json_keyf(&j, "a.%s", mc->def->name);
                            json_num(&j, pr_scaled(g, mc->metric,
                                                   cval(&tabs[p]->rows[r], x, FL_E, mc->metric)));
                        }
                        json_obj_end(&j);
                    }
                    json_arr_end(&j);
                    json_obj_end(&j);
                }
                json_arr_end(&j);
            }
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else if (!rc) {
        char st[160];
        pr_view_title(ps, "Callers and callees sorted by metric: %s", pr_sort_title(ps, st, sizeof st));
        size_t lim = ps->limit > 0 && !single && (size_t)ps->limit < n ? (size_t)ps->limit : n;
        for (size_t k = 0; k < lim; k++)
            cc_grid_out(ps, &es[k], total);
    }
    for (size_t k = 0; k < n; k++) {
        free(es[k].key);
        ctab_free(&es[k].callers);
        ctab_free(&es[k].callees);
        ctab_free(&es[k].self);
    }
    free(es);
    for (size_t x = 0; total && x < nx; x++)
        free(total[x]);
    free(total);
    return rc ? pr_report(&err) : 0;
}

/* ---- en_desc and describe ------------------------------------------------------------------- */

typedef struct desc_match {
    regex_t re;
    int none;
} desc_match_t;

static int keep_desc(void *ctx, const exp_process_t *p)
{
    desc_match_t *m = ctx;
    if (m->none)
        return 0;
    /* the program's path or name, as run (argv[0]: "sh") or as found (exe: /usr/bin/dash) */
    const char *names[2] = { p->exe, p->argc && p->argv ? p->argv[0] : NULL };
    for (int k = 0; k < 2; k++) {
        if (!names[k])
            continue;
        const char *base = strrchr(names[k], '/');
        if (regexec(&m->re, names[k], 0, NULL, 0) == 0 ||
            (base && regexec(&m->re, base + 1, 0, NULL, 0) == 0))
            return 1;
    }
    return 0;
}

/* on, off or =REGEX: 0 with *m ready (*all: every process), or 1 after saying what is wrong. */
static int en_desc_parse(const char *a, desc_match_t *m, int *all, const char *where)
{
    memset(m, 0, sizeof *m);
    *all = !*a || !strcmp(a, "on");
    if (*all)
        return 0;
    if (!strcmp(a, "off")) {
        m->none = 1;
        return 0;
    }
    if (*a == '=' && a[1] && regcomp(&m->re, a + 1, REG_EXTENDED | REG_NOSUB) == 0)
        return 0;
    esc_fprintf(stderr, "tally: %s%sen_desc '%s': use on (every descendant process), off (the "
                        "programs started only) or =REGEX (descendants whose program matches, "
                        "e.g. =cc1)\n", where ? where : "", where ? ": " : "", a);
    return 1;
}

int c_en_desc(pstate_t *ps, const char *a)
{
    desc_match_t m;
    int all;
    if (en_desc_parse(a, &m, &all, NULL))
        return 2;
    if (!all && !m.none)
        regfree(&m.re);
    const char *now = *ps->en_desc ? ps->en_desc : "on";
    if (strcmp(now, a)) {
        esc_fprintf(stderr, "tally: -en_desc %s: the processes are chosen as the experiments load "
                            "(en_desc is now %s): give -en_desc on the command line, where it "
                            "is applied first, or in a settings file\n", a, now);
        return 1;
    }
    return 0;
}

/* A settings file's en_desc (the nearest file's), for loading: from the files pr_read_rc reads. */
static void rc_en_desc(pstate_t *ps, char *out, size_t n, char *where, size_t wn)
{
    const char *home = getenv("HOME"), *sys = getenv("GPROFNG_SYSCONFDIR");
    char paths[5][PATH_MAX];
    int np = 0;
    if (access(".gprofng.rc", R_OK) == 0)
        snprintf(paths[np++], PATH_MAX, ".gprofng.rc");
    else
        snprintf(paths[np++], PATH_MAX, ".er.rc");
    if (home && *home) {
        snprintf(paths[np], PATH_MAX, "%s/.gprofng.rc", home);
        if (access(paths[np], R_OK) != 0)
            snprintf(paths[np], PATH_MAX, "%s/.er.rc", home);
        np++;
    }
    snprintf(paths[np++], PATH_MAX, "%s/gprofng.rc", sys && *sys ? sys : "/etc");
    (void)ps;
    for (int k = 0; k < np; k++) {
        FILE *f = fopen(paths[k], "r");
        if (!f)
            continue;
        char *line = NULL;
        size_t cap = 0;
        int lineno = 0, found = 0;
        while (!found && getline(&line, &cap, f) >= 0) {
            lineno++;
            char cmd[32], arg[256];
            if (sscanf(line, " %31s %255s", cmd, arg) == 2 && !strcmp(cmd, "en_desc")) {
                snprintf(out, n, "%s", arg);
                snprintf(where, wn, "%.4000s:%d", paths[k], lineno);
                found = 1;
            }
        }
        free(line);
        fclose(f);
        if (found)
            return;
    }
}

int pr_apply_en_desc(pstate_t *ps)
{
    char where[PATH_MAX + 32] = "";
    if (!*ps->en_desc && !ps->norc)
        rc_en_desc(ps, ps->en_desc, sizeof ps->en_desc, where, sizeof where);
    desc_match_t m;
    int all;
    if (en_desc_parse(ps->en_desc, &m, &all, *where ? where : NULL)) {
        if (*where) { /* a settings file's mistake is a warning */
            snprintf(ps->en_desc, sizeof ps->en_desc, "on");
            return 0;
        }
        return 2;
    }
    if (all)
        return 0;
    tally_err_t err = { 0 };
    int rc = ses_keep_processes(ps->ses, keep_desc, &m, &err);
    if (!m.none)
        regfree(&m.re);
    return rc ? cli_report(&err) : 0;
}

int c_describe(pstate_t *ps, const char *a)
{
    (void)a;
    static const char *const keys[][2] = {
        { "EXPID", "Experiment id: its number in the order given (see -experiment_list)" },
        { "PID", "Process id" },
        { "TID", "Thread id (the kernel's)" },
        { "THRID", "Thread number (see -thread_list)" },
        { "CPUID", "CPU the event was recorded on" },
        { "SAMPLE", "Sample number (see -sample_list)" },
        { "TSTAMP", "Time of the event (see -filters in tally-print(1))" },
        { "STATE", "Thread state: running, waiting for a CPU, sleeping, ..." },
    };
    sink_printf(&ps->out, "------ Global Definitions ------\n\nFilter keywords (-filters)\n");
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        sink_printf(&ps->out, "   %-21s %s\n", keys[k][0], keys[k][1]);
    for (size_t x = 0; x < ps->ses->nexps; x++) {
        const exp_experiment_t *e = ps->ses->exps[x];
        sink_printf(&ps->out, "\n------ %s [EXPID==%zu] ------\n\nProcesses\n", e->path, x + 1);
        for (size_t i = 0; i < e->nprocs; i++) {
            const exp_process_t *p = e->procs[i];
            const char *exe = p->exe ? p->exe : "?";
            sink_printf(&ps->out, "   PID %-17u %s%s%s\n", p->pid, exe, *p->name ? "  " : "",
                        p->name);
        }
        uint32_t nthreads = 0;
        for (size_t t = 0; t < eng_nthreads(ps->ses->eng); t++)
            nthreads += eng_thread(ps->ses->eng, t)->exp == x;
        sink_printf(&ps->out, "\nThreads\n   THRID                 %s\n",
                    nthreads ? "" : "(none)");
        for (size_t t = 0; t < eng_nthreads(ps->ses->eng); t++) {
            const eng_thread_t *th = eng_thread(ps->ses->eng, t);
            if (th->exp == x)
                sink_printf(&ps->out, "                         (%u) -> TID %u, PID %u\n",
                            th->number, th->tid,
                            th->proc < e->nprocs ? e->procs[th->proc]->pid : 0);
        }
    }
    sink_printf(&ps->out, "\n");
    return 0;
}
