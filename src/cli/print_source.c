/*
 * print_source.c - annotated source and disassembly: -source FUNC|FILE and -disasm FUNC, and where
 * sources are looked for (-setpath, -addpath, -pathmap). The models (analyzer/report.h,
 * report_source.c) find the function or file, the metrics of its lines and instructions and the
 * source text; this file formats them in the columns of -metrics (exclusive and inclusive). See
 * print.h.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "print.h"

/* ---- shared: rows of a listing ------------------------------------------------------------------ */

/* The metric that decides what is hot: the sort metric, else the first column's. */
static int hot_metric(const pstate_t *ps)
{
    if (ps->sort_metric >= 0)
        return ps->sort_metric;
    return ps->metrics.ncols ? ps->metrics.cols[0].metric : ENG_M_TOTALCPU;
}

/* A note of a model (a source refused or cut), shown at once on stderr. */
static void show_note(void *ctx, const char *msg)
{
    (void)ctx;
    esc_fprintf(stderr, "tally: note: %s\n", msg);
}

/* A listing: rows of text with or without metric columns, printed as one table. */
typedef struct listing {
    row_t *rows;
    size_t n, cap;
    const uint64_t *zeros; /* the values of rows with code but no data (the model's) */
} listing_t;

static void listing_add(listing_t *l, const rep_annot_t *a, const char *fmt, ...)
{
    if (GROW(l->rows, l->n, l->cap))
        return;
    char *name = NULL;
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(&name, fmt, ap);
    va_end(ap);
    if (rc < 0)
        return;
    int code = a && a->code;
    l->rows[l->n++] = (row_t){ name,
                               { code ? rep_annot_ex(a, l->zeros) : NULL,
                                 code ? rep_annot_in(a, l->zeros) : NULL, NULL },
                               0, 0 };
}

static void listing_print(pstate_t *ps, listing_t *l)
{
    pr_table_text(ps, &ps->metrics, l->rows, l->n, eng_total(ps->ses->eng));
    for (size_t i = 0; i < l->n; i++)
        free((char *)l->rows[i].name);
    free(l->rows);
    sink_printf(&ps->out, "\n");
}

/* ,"e.totalcpu":..,"i.totalcpu":.. of an annotation (zeros when it has no code). */
static void json_values(pstate_t *ps, json_t *j, const rep_annot_t *a, const uint64_t *zeros)
{
    row_t r = { "", { rep_annot_ex(a, zeros), rep_annot_in(a, zeros), NULL }, 0, 0 };
    pr_jvalues(j, &ps->metrics, &r, eng_total(ps->ses->eng));
}

/* ---- where sources are: -setpath, -addpath, -pathmap ---------------------------------------- */

/* -setpath DIR[:DIR...]: the directories searched for sources ("." is the current directory). */
int set_setpath(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    return ses_set_paths(ps->ses, arg, &err) ? pr_report(&err) : 0;
}

int set_addpath(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    return ses_add_paths(ps->ses, arg, &err) ? pr_report(&err) : 0;
}

/* -pathmap OLD NEW: a source recorded under OLD is looked for under NEW. */
int set_pathmap(pstate_t *ps, const char *arg)
{
    const char *sp = strchr(arg, ' ');
    if (!sp || !sp[1]) {
        esc_fprintf(stderr, "tally: -pathmap needs two paths: OLD NEW (in a script or the prompt: "
                        "'pathmap /old/tree /new/tree'; on the command line quote them)\n");
        return 2;
    }
    char *from = strndup(arg, (size_t)(sp - arg));
    if (!from)
        return 1;
    while (sp[1] == ' ')
        sp++;
    tally_err_t err = { 0 };
    int rc = ses_add_pathmap(ps->ses, from, sp + 1, &err) ? pr_report(&err) : 0;
    free(from);
    return rc;
}

/* A copy of a source line with its tabs turned into spaces (stops every 8 columns, a column per
 * character of UTF-8), for text: the listing shows the rest of its control bytes escaped (esc.h);
 * JSON gives the line as it is. Never NULL ("" for a line that is not there). */
static char *expand_tabs(char **lines, size_t nlines, size_t lineno)
{
    const char *s = lines && lineno >= 1 && lineno <= nlines && lines[lineno - 1]
                        ? lines[lineno - 1] : "";
    size_t len = strlen(s);
    size_t tabs = 0;
    for (size_t i = 0; i < len; i++)
        tabs += s[i] == '\t';
    char *out = malloc(len + tabs * 7 + 1);
    if (!out) {
        esc_fprintf(stderr, "tally: out of memory\n");
        exit(1);
    }
    size_t o = 0, col = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\t') {
            do
                out[o++] = ' ';
            while (++col % 8);
        } else {
            out[o++] = (char)c;
            col += (c & 0xc0) != 0x80;
        }
    }
    out[o] = 0;
    return out;
}

/* ---- -source ---------------------------------------------------------------------------------- */

static void source_json(pstate_t *ps, const rep_source_t *v, int hm)
{
    json_t j;
    pr_json_begin(ps, &j);
    json_key(&j, "view");
    json_str(&j, "source");
    json_key(&j, "file");
    json_str(&j, v->file);
    pr_jmetrics(&j, &ps->metrics);
    json_key(&j, "lines");
    json_arr_begin(&j);
    for (uint32_t l = v->lo; l <= v->hi; l++) {
        const rep_annot_t *a = &v->lv[l];
        json_obj_begin(&j);
        json_key(&j, "line");
        json_u64(&j, l);
        json_key(&j, "code");
        json_bool(&j, a->code);
        json_key(&j, "hot");
        json_bool(&j, rep_is_hot(a, hm, v->max));
        json_key(&j, "text");
        json_str(&j, v->src && l <= v->nsrc ? v->src[l - 1] : "");
        json_values(ps, &j, a, v->zeros);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_key(&j, "groups");
    json_arr_begin(&j);
    const char *names[REP_MAX_OTHER + 3] = { "compiler-generated code", "instructions without "
                                             "line numbers" };
    const rep_annot_t *groups[REP_MAX_OTHER + 3] = { &v->generated, &v->nolines };
    size_t ng = 2;
    for (size_t i = 0; i <= v->nother; i++, ng++) {
        names[ng] = i < v->nother ? v->other_file[i] : "other source files";
        groups[ng] = &v->other[i];
    }
    for (size_t i = 0; i < ng; i++) {
        if (!groups[i]->code)
            continue;
        json_obj_begin(&j);
        json_key(&j, "name");
        json_str(&j, names[i]);
        json_values(ps, &j, groups[i], v->zeros);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    if (v->is_function) {
        json_key(&j, "function");
        json_str(&j, v->function);
        json_key(&j, "object");
        json_str(&j, v->object_name);
        json_values(ps, &j, &v->total, v->zeros);
    }
    json_obj_end(&j);
    json_end_doc(&j);
}

static void source_text(pstate_t *ps, const rep_source_t *v, int hm)
{
    sink_t *o = &ps->out;
    sink_printf(o, "Source file: %s\n", v->file);
    if (v->is_function)
        sink_printf(o, "Object file: %s\n", v->object_path);
    if (!v->src)
        sink_printf(o, "(the file cannot be found here: lines with code by number only; see "
                       "-setpath, -addpath and -pathmap)\n");
    sink_printf(o, "## marks the hottest lines; lines without metrics have no code\n\n");
    listing_t l = { .zeros = v->zeros };
    for (uint32_t n = v->lo; n <= v->hi; n++) {
        const rep_annot_t *a = &v->lv[n];
        if (v->src || a->code) {
            char *text = expand_tabs(v->src, v->nsrc, n);
            listing_add(&l, a, "%s%6u. %s", rep_is_hot(a, hm, v->max) ? "##" : "  ", n, text);
            free(text);
        }
    }
    const char *fn = v->is_function ? v->function : NULL;
    const char *base = strrchr(v->file, '/');
    if (v->generated.code) {
        if (fn)
            listing_add(&l, &v->generated, "  <Function: %s, compiler-generated code>", fn);
        else
            listing_add(&l, &v->generated, "  <compiler-generated code in %s>",
                        base ? base + 1 : v->file);
    }
    if (v->nolines.code)
        listing_add(&l, &v->nolines, "  <Function: %s, instructions without line numbers>", fn);
    for (size_t i = 0; i <= v->nother; i++)
        if (v->other[i].code)
            listing_add(&l, &v->other[i], "  <Function: %s, instructions from %s>", fn,
                        i < v->nother ? v->other_file[i] : "other source files");
    if (fn)
        listing_add(&l, &v->total, "  <Function: %s>", fn);
    listing_print(ps, &l);
}

int view_source(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_source_t v;
    int hm = hot_metric(ps);
    if (rep_source(ps->ses, &o, hm, arg, show_note, NULL, &v, &err))
        return pr_report(&err);
    if (ps->json)
        source_json(ps, &v, hm);
    else
        source_text(ps, &v, hm);
    rep_source_free(&v);
    return 0;
}

/* ---- -disasm ---------------------------------------------------------------------------------- */

static void disasm_json(pstate_t *ps, const rep_disasm_t *d, int hm)
{
    json_t j;
    pr_json_begin(ps, &j);
    json_key(&j, "view");
    json_str(&j, "disasm");
    json_key(&j, "function");
    json_str(&j, d->function);
    json_key(&j, "object");
    json_str(&j, d->object_name);
    pr_jmetrics(&j, &ps->metrics);
    json_values(ps, &j, &d->fn, d->zeros);
    json_key(&j, "instructions");
    json_arr_begin(&j);
    for (size_t i = 0; i < d->n; i++) {
        const rep_insn_t *r = &d->insns[i];
        json_obj_begin(&j);
        json_key(&j, "address");
        json_strf(&j, "0x%llx", (unsigned long long)r->address);
        json_key(&j, "text");
        char text[256];
        snprintf(text, sizeof text, "%s %s", r->mnemonic, r->op_str);
        json_str(&j, text);
        json_key(&j, "line");
        json_u64(&j, r->line_kind == 0 ? r->line : 0);
        json_key(&j, "file");
        json_str(&j, r->line_kind >= 0 ? r->file : "");
        json_key(&j, "target");
        json_bool(&j, r->target);
        json_key(&j, "hot");
        json_bool(&j, rep_is_hot(&r->a, hm, d->max));
        json_key(&j, "call");
        json_str(&j, r->callee);
        json_values(ps, &j, &r->a, d->zeros);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_obj_end(&j);
    json_end_doc(&j);
}

static void disasm_text(pstate_t *ps, const rep_disasm_t *d, int hm)
{
    sink_printf(&ps->out, "Disassembly of %s (%s, 0x%llx, %llu bytes)\n## marks the hottest "
                          "instructions, > branch targets; <file:line> the source they come from\n\n",
                d->function, d->object_path, (unsigned long long)d->addr,
                (unsigned long long)d->size);
    listing_t l = { .zeros = d->zeros };
    const char *last_file = NULL;
    uint32_t last_line = 0;
    size_t nsrc = 0;
    char **src = NULL;
    for (size_t i = 0; i < d->n; i++) {
        const rep_insn_t *r = &d->insns[i];
        const char *file = r->file;
        if (r->line_kind >= 0 && (r->line != last_line || !last_file || strcmp(file, last_file))) {
            if (!last_file || strcmp(file, last_file)) {
                rep_free_lines(src, nsrc);
                src = rep_read_source(ps->ses, file, show_note, NULL, &nsrc);
            }
            const char *b = strrchr(file, '/');
            if (r->line_kind == 1)
                listing_add(&l, NULL, "%20s<%s: compiler-generated code>", "", b ? b + 1 : file);
            else {
                char *text = expand_tabs(src, nsrc, r->line);
                listing_add(&l, NULL, "%20s<%s:%u> %s", "", b ? b + 1 : file, r->line, text);
                free(text);
            }
            last_file = file;
            last_line = r->line;
        }
        listing_add(&l, &r->a, "%s%c [%6llx] %-7s %s%s%s%s",
                    rep_is_hot(&r->a, hm, d->max) ? "##" : "  ", r->target ? '>' : ' ',
                    (unsigned long long)r->address, r->mnemonic, r->op_str,
                    *r->callee ? "  <" : "", r->callee, *r->callee ? ">" : "");
    }
    listing_add(&l, &d->fn, "  <Function: %s>", d->function);
    listing_print(ps, &l);
    rep_free_lines(src, nsrc);
}

int view_disasm(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_disasm_t d;
    int hm = hot_metric(ps);
    if (rep_disasm(ps->ses, &o, hm, arg, &d, &err))
        return pr_report(&err);
    if (ps->json)
        disasm_json(ps, &d, hm);
    else
        disasm_text(ps, &d, hm);
    rep_disasm_free(&d);
    return 0;
}

/* ---- binaries that are not the ones profiled -------------------------------------------------- */

void pr_binary_notes(pstate_t *ps)
{
    for (size_t o = 0; ps->ses->sym && o < sym_nobjects(ps->ses->sym); o++) {
        if (!sym_object_read(ps->ses->sym, (uint32_t)o))
            continue; /* not needed by what was shown */
        const sym_object_t *so = sym_object(ps->ses->sym, (uint32_t)o);
        if (*so->message && so->status != SYM_OBJ_NOSYMS)
            esc_fprintf(stderr, "tally: note: %s\n", so->message);
    }
}

