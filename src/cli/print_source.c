/*
 * print_source.c - annotated source and disassembly: -source FUNC|FILE and -disasm FUNC, and where
 * sources are looked for (-setpath, -addpath, -pathmap). Metrics come from the engine's line and
 * instruction tables (ENG_KIND_LINE, ENG_KIND_PC) in the columns of -metrics (exclusive and
 * inclusive); the code bytes from the binary (sym_read_code), the instructions from capstone, the
 * source text from the file the debug information names. A function's listing accounts for all of
 * its code: the lines of its source file, then one row each for its compiler-generated code, its
 * code without line numbers and its code from other source files, so its rows add up to its
 * exclusive metrics. See print.h.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsafe.h"
#include "print.h"

#define HOT_SHARE 0.75 /* a line or instruction with this share of the hottest one is marked ## */

/* ---- shared: the function asked for, rows of a listing ---------------------------------------- */

typedef struct target {
    uint32_t func, obj;
    uint64_t addr, size;
    const sym_func_t *f;
} target_t;

static int find_target(pstate_t *ps, const char *name, target_t *t)
{
    const eng_table_t *ft = pr_table(ps, ENG_KIND_FUNCTION, 0);
    if (!ft)
        return 1;
    names_t nm;
    pr_names_build(ps, &nm, ft);
    long id = pr_find_function(ps, ft, &nm, name);
    pr_names_free(&nm);
    if (id < 0)
        return 1;
    t->func = (uint32_t)id;
    t->f = sym_func(ps->ses->sym, t->func);
    t->obj = t->f->object;
    t->addr = t->f->addr;
    t->size = t->f->size;
    if (t->obj != UINT32_MAX && !t->size && !t->addr && t->f->name[0] != '<') {
        esc_fprintf(stderr, "tally: '%s' is only inlined: its lines are in the listings of the "
                        "functions it is inlined into (see -callers-callees), or -source FILE\n",
                name);
        return 1;
    }
    if (t->obj == UINT32_MAX || !t->size) {
        esc_fprintf(stderr, "tally: '%s' has no known code range (no symbol size): nothing to "
                        "annotate\n", name);
        return 1;
    }
    return 0;
}

/* The function's instructions (capstone, with details when detail != 0); NULL after reporting. */
static cs_insn *disassemble(pstate_t *ps, const target_t *t, csh *cs, int detail, size_t *n)
{
    uint8_t *code = malloc(t->size);
    if (!code)
        return NULL;
    long got = sym_read_code(ps->ses->sym, t->obj, t->addr, code, t->size);
    if (got != (long)t->size) {
        const sym_object_t *o = sym_object(ps->ses->sym, t->obj);
        esc_fprintf(stderr, "tally: cannot read the code of '%s' from '%s' (%s)\n", t->f->name,
                o->path, *o->message ? o->message : "the binary does not hold it");
        free(code);
        return NULL;
    }
    cs_insn *insn = NULL;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, cs) != CS_ERR_OK) {
        esc_fprintf(stderr, "tally: capstone cannot disassemble x86-64 here\n");
    } else {
        if (detail)
            cs_option(*cs, CS_OPT_DETAIL, CS_OPT_ON);
        *n = cs_disasm(*cs, code, t->size, t->addr, 0, &insn);
        if (!*n) {
            esc_fprintf(stderr, "tally: capstone cannot decode '%s'\n", t->f->name);
            cs_close(cs);
        }
    }
    free(code);
    return *n ? insn : NULL;
}

/* Metrics of one row: a source line, an instruction, or a group of code. */
typedef struct annot {
    uint64_t *ex, *in; /* [nmetrics] each (one allocation at ex), NULL until values are added */
    int code;          /* has instructions (else its metric columns stay empty) */
} annot_t;

/* Allocates a's vectors (zeros) if it has none; 0 or 1 when memory ran out. */
static int annot_alloc(annot_t *a, int nm)
{
    if (a->ex)
        return 0;
    a->ex = calloc(2 * (size_t)nm, sizeof *a->ex);
    a->in = a->ex ? a->ex + nm : NULL;
    return !a->ex;
}

static void annot_add(annot_t *a, const eng_table_t *t, size_t id, int incl_only)
{
    size_t nm = (size_t)t->nmetrics;
    if (annot_alloc(a, t->nmetrics))
        return;
    for (size_t m = 0; m < nm; m++) {
        if (!incl_only)
            a->ex[m] += t->excl[id * nm + m];
        a->in[m] += t->incl[id * nm + m];
    }
    a->code = 1;
}

static void annots_free(annot_t *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++)
        free(a[i].ex);
}

/* The metric that decides what is hot: the sort metric, else the first column's. */
static int hot_metric(const pstate_t *ps)
{
    if (ps->sort_metric >= 0)
        return ps->sort_metric;
    return ps->metrics.ncols ? ps->metrics.cols[0].metric : ENG_M_TOTALCPU;
}

static int is_hot(const pstate_t *ps, const annot_t *a, uint64_t max)
{
    return a && a->ex && max && a->ex[hot_metric(ps)] >= HOT_SHARE * (double)max;
}

/* A listing: rows of text with or without metric columns, printed as one table. */
typedef struct listing {
    row_t *rows;
    size_t n, cap;
    uint64_t *zeros; /* the values of rows with code but no data */
    int nmetrics;
} listing_t;

static void listing_add(listing_t *l, const annot_t *a, const char *fmt, ...)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 256;
        row_t *nr = realloc(l->rows, ncap * sizeof *nr);
        if (!nr)
            return;
        l->rows = nr;
        l->cap = ncap;
    }
    char *name = NULL;
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(&name, fmt, ap);
    va_end(ap);
    if (rc < 0)
        return;
    int code = a && a->code;
    const uint64_t *ex = code ? a->ex : NULL, *in = code ? a->in : NULL;
    if (code && !ex) {
        if (!l->zeros)
            l->zeros = calloc((size_t)l->nmetrics, sizeof *l->zeros);
        ex = in = l->zeros;
    }
    l->rows[l->n++] = (row_t){ name, { ex, in, NULL }, 0 };
}

static void listing_print(pstate_t *ps, listing_t *l)
{
    pr_table_text(ps, &ps->metrics, l->rows, l->n, eng_total(ps->ses->eng));
    for (size_t i = 0; i < l->n; i++)
        free((char *)l->rows[i].name);
    free(l->rows);
    free(l->zeros);
    esc_printf("\n");
}

/* ,"e.totalcpu":..,"i.totalcpu":.. of an annotation (zeros when it has no code). */
static void json_values(pstate_t *ps, const annot_t *a)
{
    uint64_t *zeros = a->ex ? NULL : calloc((size_t)eng_nmetrics(ps->ses->eng), sizeof *zeros);
    row_t r = { "", { a->ex ? a->ex : zeros, a->ex ? a->in : zeros, NULL }, 0 };
    pr_json_values(&ps->metrics, &r, eng_total(ps->ses->eng));
    free(zeros);
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

/* Sources are read whole: a bigger file (or one that keeps growing) is not shown. */
#define SOURCE_MAX ((uint64_t)64 << 20)

/* Opens one candidate for a source file: a regular file of at most SOURCE_MAX bytes (never a FIFO
 * or a device); NULL when there is none, with a note when there is one that is refused. */
static FILE *open_candidate(int fd, const char *shown)
{
    if (fd < 0) {
        if (fd != -ENOENT && fd != -ENOTDIR)
            esc_fprintf(stderr, "tally: note: source '%s' is not shown: %s%s\n", shown,
                    fs_strerror(fd), fd == -EFBIG ? " (over 64 MiB)" : "");
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (!f)
        close(fd);
    return f;
}

/* Opens a source file the debug information names: the copy archived in an experiment (the text
 * that was profiled, even if the file changed since; a regular file inside EXP/archive/src, no
 * symbolic link followed), as recorded, through the path maps, then by its relative path and base
 * name in each search directory. */
static FILE *open_source(pstate_t *ps, const char *path)
{
    FILE *f;
    char buf[8192];
    for (size_t i = 0; i < ps->ses->nexps && path[0] == '/'; i++) { /* archived with tally archive -s */
        snprintf(buf, sizeof buf, "%s/archive", ps->ses->exps[i]->path);
        int d = fs_open_dir(buf);
        if (d < 0)
            continue;
        snprintf(buf, sizeof buf, "src%s", path);
        int fd = fs_name_ok(buf) ? fs_open_read_at(d, buf, SOURCE_MAX) : -ENOENT;
        close(d);
        snprintf(buf, sizeof buf, "%s/archive/src%s", ps->ses->exps[i]->path, path);
        if ((f = open_candidate(fd, buf)))
            return f;
    }
    if ((f = open_candidate(fs_open_read(path, SOURCE_MAX), path)))
        return f;
    for (size_t i = 0; !ses_source_candidate(ps->ses, path, i, buf, sizeof buf); i++)
        if ((f = open_candidate(fs_open_read(buf, SOURCE_MAX), buf)))
            return f;
    return NULL;
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

static char **read_lines(pstate_t *ps, const char *path, size_t *n)
{
    FILE *f = open_source(ps, path);
    *n = 0;
    if (!f)
        return NULL;
    char **lines = NULL, *buf = NULL;
    size_t cap = 0, bcap = 0;
    uint64_t total = 0;
    ssize_t len;
    while ((len = getline(&buf, &bcap, f)) >= 0) {
        if ((total += (uint64_t)len) > SOURCE_MAX) { /* it grew since it was opened */
            esc_fprintf(stderr, "tally: note: source '%s' is shown up to 64 MiB only\n", path);
            break;
        }
        if (len && buf[len - 1] == '\n')
            buf[--len] = 0;
        if (len && buf[len - 1] == '\r') /* CRLF */
            buf[--len] = 0;
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            char **nl = realloc(lines, cap * sizeof *nl);
            if (!nl)
                break;
            lines = nl;
        }
        lines[(*n)++] = strdup(buf);
    }
    free(buf);
    fclose(f);
    return lines;
}

static void free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}


/* ---- -source ---------------------------------------------------------------------------------- */

#define MAX_OTHER 8 /* other source files of a function's code with a row each; the rest share one */

typedef struct srcview {
    const char *file; /* the source file shown */
    annot_t *lv;      /* by line number, 0..limit */
    uint32_t limit, lo, hi;
    annot_t generated, nolines, other[MAX_OTHER + 1], total;
    const char *other_file[MAX_OTHER];
    size_t nother;
} srcview_t;

static void widen(srcview_t *v, uint32_t line)
{
    if (line < v->lo)
        v->lo = line;
    if (line > v->hi)
        v->hi = line;
}

/* The row of code at an address of the function: its line, or one of the groups. */
static annot_t *code_row(srcview_t *v, int r, const char *file, uint32_t line)
{
    if (r < 0)
        return &v->nolines;
    if (r == 1)
        return &v->generated;
    if (!strcmp(file, v->file))
        return line <= v->limit ? &v->lv[line] : &v->other[MAX_OTHER];
    for (size_t i = 0; i < v->nother; i++)
        if (!strcmp(v->other_file[i], file))
            return &v->other[i];
    if (v->nother == MAX_OTHER)
        return &v->other[MAX_OTHER];
    v->other_file[v->nother] = file;
    return &v->other[v->nother++];
}

static void mark_site(void *ctx, const char *file, uint32_t line)
{
    srcview_t *v = ctx;
    if (!strcmp(file, v->file) && line <= v->limit) {
        v->lv[line].code = 1;
        widen(v, line);
    }
}

/* Fills v for function t: which lines have code (its instructions, and the lines code was inlined
 * at), and the metrics of its instructions by line (inclusive also on the lines their inlined
 * code was called at, when inlines are shown). *max: the hottest row's hot metric. */
static int function_lines(pstate_t *ps, const target_t *t, srcview_t *v, cs_insn *insn, size_t n,
                          uint64_t *max)
{
    for (size_t i = 0; i < n; i++) {
        const char *f;
        uint32_t line;
        int r = sym_line_at(ps->ses->sym, t->obj, insn[i].address, &f, &line);
        code_row(v, r, f, line)->code = 1;
        if (r == 0 && !strcmp(f, v->file))
            widen(v, line);
    }
    sym_inline_sites(ps->ses->sym, t->obj, t->addr, mark_site, v);
    const eng_table_t *pt = pr_table(ps, ENG_KIND_PC, 0);
    if (!pt)
        return 1;
    for (size_t id = 0; id < pt->nobjects; id++) {
        uint32_t obj, line;
        uint64_t addr;
        const char *f;
        if (!pt->present[id] || eng_pc_info(ps->ses->eng, (uint32_t)id, &obj, &addr) ||
            obj != t->obj || addr < t->addr || addr >= t->addr + t->size)
            continue;
        int r = sym_line_at(ps->ses->sym, obj, addr, &f, &line);
        annot_add(code_row(v, r, f, line), pt, id, 0);
        annot_add(&v->total, pt, id, 0);
        sym_inline_t inl[64];
        int k = eng_inlines(ps->ses->eng) ? sym_inlines_at(ps->ses->sym, obj, addr, inl, 64) : 0;
        for (int j = 0; j < k; j++) { /* each line once per instruction */
            uint32_t cl = inl[j].call_line;
            int seen = r == 0 && cl == line && !strcmp(f, v->file);
            for (int q = 0; q < j && !seen; q++)
                seen = inl[q].call_line == cl && inl[q].call_file && inl[j].call_file &&
                       !strcmp(inl[q].call_file, inl[j].call_file);
            if (!seen && inl[j].call_file && !strcmp(inl[j].call_file, v->file) && cl <= v->limit)
                annot_add(&v->lv[cl], pt, id, 1);
        }
    }
    int hm = hot_metric(ps);
    for (uint32_t l = 0; l <= v->limit; l++)
        if (v->lv[l].ex && v->lv[l].ex[hm] > *max)
            *max = v->lv[l].ex[hm];
    return 0;
}

/* Fills v with every function's metrics on the lines of v->file. */
static int file_lines(pstate_t *ps, srcview_t *v, uint64_t *max)
{
    const eng_table_t *lt = pr_table(ps, ENG_KIND_LINE, 0);
    if (!lt)
        return 1;
    int hm = hot_metric(ps);
    for (size_t id = 0; id < lt->nobjects; id++) {
        const char *f;
        uint32_t line, fn;
        if (!lt->present[id] || eng_line_info(ps->ses->eng, (uint32_t)id, &f, &line, &fn) || !f ||
            strcmp(f, v->file) || line > v->limit)
            continue;
        annot_t *a = line ? &v->lv[line] : &v->generated;
        annot_add(a, lt, id, 0);
        if (line)
            widen(v, line);
        if (a->ex && a->ex[hm] > *max)
            *max = a->ex[hm];
    }
    return 0;
}

/* The file named arg (full path or base name) among the lines with data, or NULL. */
static const char *find_file(pstate_t *ps, const char *arg, uint32_t *maxline)
{
    const eng_table_t *lt = pr_table(ps, ENG_KIND_LINE, 0);
    const char *file = NULL;
    *maxline = 0;
    for (size_t id = 0; lt && id < lt->nobjects; id++) {
        const char *f, *base;
        uint32_t line, fn;
        if (!lt->present[id] || eng_line_info(ps->ses->eng, (uint32_t)id, &f, &line, &fn) || !f ||
            (file && strcmp(f, file)))
            continue;
        if (!file && strcmp(f, arg) && (!(base = strrchr(f, '/')) || strcmp(base + 1, arg)))
            continue;
        file = f;
        if (line > *maxline)
            *maxline = line;
    }
    return file;
}

static void source_json(pstate_t *ps, const srcview_t *v, char **src, size_t nsrc,
                        const target_t *t, uint64_t max)
{
    pr_json_open(ps);
    esc_printf("\"view\":\"source\",\"file\":");
    pr_json_str(stdout, v->file);
    esc_printf(",");
    pr_json_metrics(ps, &ps->metrics);
    esc_printf(",\"lines\":[");
    for (uint32_t l = v->lo; l <= v->hi; l++) {
        const annot_t *a = &v->lv[l];
        esc_printf("%s{\"line\":%u,\"code\":%s,\"hot\":%s,\"text\":", l > v->lo ? "," : "", l,
               a->code ? "true" : "false", is_hot(ps, a, max) ? "true" : "false");
        pr_json_str(stdout, src && l <= nsrc ? src[l - 1] : "");
        json_values(ps, a);
        esc_printf("}");
    }
    esc_printf("],\"groups\":[");
    const char *names[MAX_OTHER + 3] = { "compiler-generated code", "instructions without line "
                                         "numbers" };
    const annot_t *groups[MAX_OTHER + 3] = { &v->generated, &v->nolines };
    size_t ng = 2;
    for (size_t i = 0; i <= v->nother; i++, ng++) {
        names[ng] = i < v->nother ? v->other_file[i] : "other source files";
        groups[ng] = &v->other[i];
    }
    for (size_t i = 0, first = 1; i < ng; i++) {
        if (!groups[i]->code)
            continue;
        esc_printf("%s{\"name\":", first ? "" : ",");
        first = 0;
        pr_json_str(stdout, names[i]);
        json_values(ps, groups[i]);
        esc_printf("}");
    }
    esc_printf("]");
    if (t) {
        esc_printf(",\"function\":");
        pr_json_str(stdout, t->f->name);
        esc_printf(",\"object\":");
        pr_json_str(stdout, sym_object(ps->ses->sym, t->obj)->name);
        json_values(ps, &v->total);
    }
    esc_printf("}\n");
}

static void source_text(pstate_t *ps, const srcview_t *v, char **src, size_t nsrc,
                        const target_t *t, uint64_t max)
{
    esc_printf("Source file: %s\n", v->file);
    if (t)
        esc_printf("Object file: %s\n", sym_object(ps->ses->sym, t->obj)->path);
    if (!src)
        esc_printf("(the file cannot be found here: lines with code by number only; see -setpath, "
               "-addpath and -pathmap)\n");
    esc_printf("## marks the hottest lines; lines without metrics have no code\n\n");
    listing_t l = { .nmetrics = eng_nmetrics(ps->ses->eng) };
    for (uint32_t n = v->lo; n <= v->hi; n++) {
        const annot_t *a = &v->lv[n];
        if (src || a->code) {
            char *text = expand_tabs(src, nsrc, n);
            listing_add(&l, a, "%s%6u. %s", is_hot(ps, a, max) ? "##" : "  ", n, text);
            free(text);
        }
    }
    const char *fn = t ? t->f->name : NULL;
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
    if (t)
        listing_add(&l, &v->total, "  <Function: %s>", fn);
    listing_print(ps, &l);
}

int view_source(pstate_t *ps, const char *arg)
{
    srcview_t v = { .lo = UINT32_MAX };
    target_t t = { 0 }, *tp = NULL;
    uint32_t maxline = 0;
    annot_t fn_incl = { 0 };
    csh cs;
    cs_insn *insn = NULL;
    size_t n = 0;
    char *file = NULL;
    const char *f = find_file(ps, arg, &maxline);
    if (f) {
        file = strdup(f);
    } else { /* a function: its file is its first instruction's with a line */
        if (find_target(ps, arg, &t) || !(insn = disassemble(ps, &t, &cs, 0, &n)))
            return 1;
        tp = &t;
        const eng_table_t *ft = pr_table(ps, ENG_KIND_FUNCTION, 0);
        if (!ft) {
            cs_free(insn, n);
            cs_close(&cs);
            return 1;
        }
        annot_add(&fn_incl, ft, t.func, 0);
        for (size_t i = 0; i < n; i++) {
            uint32_t line;
            if (sym_line_at(ps->ses->sym, t.obj, insn[i].address, &f, &line) == 0) {
                if (!file)
                    file = strdup(f);
                if (!strcmp(f, file) && line > maxline)
                    maxline = line;
            }
        }
        if (!file) {
            esc_fprintf(stderr, "tally: '%s' has no line information (compiled without -g?); try "
                            "-disasm %s\n", arg, arg);
            cs_free(insn, n);
            cs_close(&cs);
            return 1;
        }
    }
    size_t nsrc;
    char **src = read_lines(ps, file, &nsrc);
    v.file = file;
    v.limit = (uint32_t)(nsrc > maxline ? nsrc : maxline);
    v.lv = calloc((size_t)v.limit + 1, sizeof *v.lv);
    uint64_t max = 0;
    int rc = !v.lv;
    if (!rc && tp) {
        rc = function_lines(ps, &t, &v, insn, n, &max);
        if (!annot_alloc(&v.total, eng_nmetrics(ps->ses->eng)) && fn_incl.in)
            memcpy(v.total.in, fn_incl.in, (size_t)eng_nmetrics(ps->ses->eng) * sizeof *v.total.in);
        /* (exclusive: its own instructions') */
        v.total.code = 1;
        v.lo = v.lo > 3 && v.lo != UINT32_MAX ? v.lo - 3 : 1;
    } else if (!rc) {
        rc = file_lines(ps, &v, &max);
        if (src) { /* the whole file */
            v.lo = 1;
            v.hi = (uint32_t)nsrc;
        }
    }
    if (!rc && v.lo > v.hi) /* no line of the file has code */
        v.lo = 1, v.hi = 0;
    if (!rc && ps->json)
        source_json(ps, &v, src, nsrc, tp, max);
    else if (!rc)
        source_text(ps, &v, src, nsrc, tp, max);
    if (insn) {
        cs_free(insn, n);
        cs_close(&cs);
    }
    annots_free(v.lv, v.lv ? (size_t)v.limit + 1 : 0);
    free(v.lv);
    annots_free(&v.generated, 1);
    annots_free(&v.nolines, 1);
    annots_free(v.other, MAX_OTHER + 1);
    annots_free(&v.total, 1);
    annots_free(&fn_incl, 1);
    free_lines(src, nsrc);
    free(file);
    return rc;
}

/* ---- -disasm ---------------------------------------------------------------------------------- */

/* Index of the instruction holding addr, or n. */
static size_t insn_at(const cs_insn *insn, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (insn[mid].address <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && addr < insn[lo - 1].address + insn[lo - 1].size ? lo - 1 : n;
}

/* A direct jump's or call's target address, or 0. */
static uint64_t branch_target(csh cs, const cs_insn *in)
{
    const cs_x86 *x = &in->detail->x86;
    if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM &&
        (cs_insn_group(cs, in, CS_GRP_JUMP) || cs_insn_group(cs, in, CS_GRP_CALL)))
        return (uint64_t)x->operands[0].imm;
    return 0;
}

int view_disasm(pstate_t *ps, const char *arg)
{
    target_t t;
    csh cs;
    size_t n = 0;
    cs_insn *insn;
    if (find_target(ps, arg, &t))
        return 1;
    const eng_table_t *ft = pr_table(ps, ENG_KIND_FUNCTION, 0);
    if (!ft || !(insn = disassemble(ps, &t, &cs, 1, &n)))
        return 1;
    annot_t *a = calloc(n + 1, sizeof *a); /* per instruction; [n]: the function */
    uint8_t *target = calloc(n + 1, 1);
    const eng_table_t *pt = a && target ? pr_table(ps, ENG_KIND_PC, 0) : NULL;
    if (!pt) {
        cs_free(insn, n);
        cs_close(&cs);
        free(a);
        free(target);
        return 1;
    }
    /* metrics per instruction: an id's address is a leaf's pc or a call's return address minus
     * one, both inside the instruction */
    int hm = hot_metric(ps);
    uint64_t max = 0;
    for (size_t id = 0; id < pt->nobjects; id++) {
        uint32_t obj;
        uint64_t addr;
        size_t i;
        if (!pt->present[id] || eng_pc_info(ps->ses->eng, (uint32_t)id, &obj, &addr) ||
            obj != t.obj || (i = insn_at(insn, n, addr)) == n)
            continue;
        annot_add(&a[i], pt, id, 0);
        annot_add(&a[n], pt, id, 0);
        if (a[i].ex && a[i].ex[hm] > max)
            max = a[i].ex[hm];
    }
    if ((ft = pr_table(ps, ENG_KIND_FUNCTION, 0)) && !annot_alloc(&a[n], ft->nmetrics))
        memcpy(a[n].in, ft->incl + (size_t)t.func * (size_t)ft->nmetrics,
               (size_t)ft->nmetrics * sizeof *a[n].in);
    a[n].code = 1;
    for (size_t i = 0; i < n; i++) { /* branch targets inside the function */
        size_t j = insn_at(insn, n, branch_target(cs, &insn[i]));
        if (j < n && insn[j].address == branch_target(cs, &insn[i]))
            target[j] = 1;
    }
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"disasm\",\"function\":");
        pr_json_str(stdout, t.f->name);
        esc_printf(",\"object\":");
        pr_json_str(stdout, sym_object(ps->ses->sym, t.obj)->name);
        esc_printf(",");
        pr_json_metrics(ps, &ps->metrics);
        json_values(ps, &a[n]);
        esc_printf(",\"instructions\":[");
    } else {
        esc_printf("Disassembly of %s (%s, 0x%llx, %llu bytes)\n## marks the hottest instructions, "
               "> branch targets; <file:line> the source they come from\n\n", t.f->name,
               sym_object(ps->ses->sym, t.obj)->path, (unsigned long long)t.addr,
               (unsigned long long)t.size);
    }
    listing_t l = { .nmetrics = eng_nmetrics(ps->ses->eng) };
    const char *last_file = NULL;
    uint32_t last_line = 0;
    size_t nsrc = 0;
    char **src = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *file = NULL;
        uint32_t line = 0;
        int r = sym_line_at(ps->ses->sym, t.obj, insn[i].address, &file, &line);
        char callee[512] = ""; /* a call's or jump's target outside the function, by name */
        uint64_t to = branch_target(cs, &insn[i]);
        if (to && (to < t.addr || to >= t.addr + t.size))
            snprintf(callee, sizeof callee, "%s",
                     sym_func(ps->ses->sym, sym_func_at(ps->ses->sym, t.obj, to))->name);
        a[i].code = 1;
        if (ps->json) {
            char text[256];
            snprintf(text, sizeof text, "%s %s", insn[i].mnemonic, insn[i].op_str);
            esc_printf("%s{\"address\":\"0x%llx\",\"text\":", i ? "," : "",
                       (unsigned long long)insn[i].address);
            pr_json_str(stdout, text);
            esc_printf(",\"line\":%u,\"file\":", r == 0 ? line : 0);
            pr_json_str(stdout, r >= 0 ? file : "");
            esc_printf(",\"target\":%s,\"hot\":%s,\"call\":", target[i] ? "true" : "false",
                   is_hot(ps, &a[i], max) ? "true" : "false");
            pr_json_str(stdout, callee);
            json_values(ps, &a[i]);
            esc_printf("}");
            continue;
        }
        if (r >= 0 && (line != last_line || !last_file || strcmp(file, last_file))) {
            if (!last_file || strcmp(file, last_file)) {
                free_lines(src, nsrc);
                src = read_lines(ps, file, &nsrc);
            }
            const char *b = strrchr(file, '/');
            if (r == 1)
                listing_add(&l, NULL, "%20s<%s: compiler-generated code>", "", b ? b + 1 : file);
            else {
                char *text = expand_tabs(src, nsrc, line);
                listing_add(&l, NULL, "%20s<%s:%u> %s", "", b ? b + 1 : file, line, text);
                free(text);
            }
            last_file = file;
            last_line = line;
        }
        listing_add(&l, &a[i], "%s%c [%6llx] %-7s %s%s%s%s", is_hot(ps, &a[i], max) ? "##" : "  ",
                    target[i] ? '>' : ' ', (unsigned long long)insn[i].address, insn[i].mnemonic,
                    insn[i].op_str, *callee ? "  <" : "", callee, *callee ? ">" : "");
    }
    if (ps->json) {
        esc_printf("]}\n");
    } else {
        listing_add(&l, &a[n], "  <Function: %s>", t.f->name);
        listing_print(ps, &l);
    }
    free_lines(src, nsrc);
    cs_free(insn, n);
    cs_close(&cs);
    annots_free(a, n + 1);
    free(a);
    free(target);
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

