/*
 * report_source.c - the models of annotated source and disassembly: the function or file asked
 * for, the metrics of its lines and instructions from the engine's line and instruction tables
 * (ENG_KIND_LINE, ENG_KIND_PC), the code bytes from the binary (sym_read_code), the instructions
 * from capstone, the source text from the file the debug information names. See report.h.
 *
 * Sections: source files; the function asked for; -source; -disasm.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/report.h"
#include "base/fsafe.h"
#include "base/grow.h"

/* ---- source files ---------------------------------------------------------------------------- */

/* Sources are read whole: a bigger file (or one that keeps growing) is not shown. */
#define SOURCE_MAX ((uint64_t)64 << 20)

static void notef(rep_note_fn note, void *ctx, const char *fmt, ...)
{
    if (!note)
        return;
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    note(ctx, msg);
}

/* One candidate for a source file: a regular file of at most SOURCE_MAX bytes (never a FIFO or a
 * device); NULL when there is none, with a note when there is one that is refused. */
static FILE *open_candidate(int fd, const char *shown, rep_note_fn note, void *ctx)
{
    if (fd < 0) {
        if (fd != -ENOENT && fd != -ENOTDIR)
            notef(note, ctx, "source '%s' is not shown: %s%s", shown, fs_strerror(fd),
                  fd == -EFBIG ? " (over 64 MiB)" : "");
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (!f)
        close(fd);
    return f;
}

/* The copy archived in an experiment (the text that was profiled, even if the file changed since;
 * a regular file inside EXP/archive/src, no symbolic link followed), as recorded, then the
 * session's candidates (path maps, search directories). */
static FILE *open_source(const ses_t *s, const char *path, rep_note_fn note, void *ctx)
{
    FILE *f;
    char buf[8192];
    for (size_t i = 0; i < s->nexps && path[0] == '/'; i++) { /* archived with tally archive -s */
        snprintf(buf, sizeof buf, "%s/archive", s->exps[i]->path);
        int d = fs_open_dir(buf);
        if (d < 0)
            continue;
        snprintf(buf, sizeof buf, "src%s", path);
        int fd = fs_name_ok(buf) ? fs_open_read_at(d, buf, SOURCE_MAX) : -ENOENT;
        close(d);
        snprintf(buf, sizeof buf, "%s/archive/src%s", s->exps[i]->path, path);
        if ((f = open_candidate(fd, buf, note, ctx)))
            return f;
    }
    if ((f = open_candidate(fs_open_read(path, SOURCE_MAX), path, note, ctx)))
        return f;
    for (size_t i = 0; !ses_source_candidate(s, path, i, buf, sizeof buf); i++)
        if ((f = open_candidate(fs_open_read(buf, SOURCE_MAX), buf, note, ctx)))
            return f;
    return NULL;
}

char **rep_read_source(const ses_t *s, const char *path, rep_note_fn note, void *ctx, size_t *n)
{
    FILE *f = open_source(s, path, note, ctx);
    *n = 0;
    if (!f)
        return NULL;
    char **lines = NULL, *buf = NULL;
    size_t cap = 0, bcap = 0;
    uint64_t total = 0;
    ssize_t len;
    while ((len = getline(&buf, &bcap, f)) >= 0) {
        if ((total += (uint64_t)len) > SOURCE_MAX) { /* it grew since it was opened */
            notef(note, ctx, "source '%s' is shown up to 64 MiB only", path);
            break;
        }
        if (len && buf[len - 1] == '\n')
            buf[--len] = 0;
        if (len && buf[len - 1] == '\r') /* CRLF */
            buf[--len] = 0;
        if (GROW(lines, *n, cap))
            break;
        lines[(*n)++] = strdup(buf);
    }
    free(buf);
    fclose(f);
    return lines;
}

void rep_free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

int rep_is_hot(const rep_annot_t *a, int hot_metric, uint64_t max)
{
    return a && a->ex && max && a->ex[hot_metric] >= REP_HOT_SHARE * (double)max;
}

const uint64_t *rep_annot_ex(const rep_annot_t *a, const uint64_t *zeros)
{
    return a->ex ? a->ex : zeros;
}

const uint64_t *rep_annot_in(const rep_annot_t *a, const uint64_t *zeros)
{
    return a->ex ? a->in : zeros;
}

/* Allocates a's vectors (zeros) if it has none; 0 or -1 when memory ran out. */
static int annot_alloc(rep_annot_t *a, int nm)
{
    if (a->ex)
        return 0;
    a->ex = calloc(2 * (size_t)nm, sizeof *a->ex);
    a->in = a->ex ? a->ex + nm : NULL;
    return a->ex ? 0 : -1;
}

static void annots_free(rep_annot_t *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++)
        free(a[i].ex);
}

/* Adds object id of t to a (exclusive too unless incl_only); -1 when memory ran out. */
static int annot_add(rep_annot_t *a, const eng_table_t *t, size_t id, int incl_only)
{
    size_t nm = (size_t)t->nmetrics;
    if (annot_alloc(a, t->nmetrics))
        return -1;
    for (size_t m = 0; m < nm; m++) {
        if (!incl_only)
            a->ex[m] += t->excl[id * nm + m];
        a->in[m] += t->incl[id * nm + m];
    }
    a->code = 1;
    return 0;
}

static int compute_failed(tally_err_t *err) { return err->code ? err->code : TALLY_ENOMEM; }

/* ---- the function asked for ------------------------------------------------------------------ */

typedef struct target {
    uint32_t func, obj;
    uint64_t addr, size;
    const sym_func_t *f;
} target_t;

static int find_target(ses_t *s, const rep_opts_t *o, const char *name, target_t *t,
                       tally_err_t *err)
{
    const eng_table_t *ft = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
    if (!ft)
        return compute_failed(err);
    rep_names_t nm;
    int rc = rep_names_build(s->eng, ft, o->namefmt, &nm, err);
    if (rc)
        return rc;
    long id = rep_find_function(s->eng, ft, &nm, name, err);
    rep_names_free(&nm);
    if (id < 0)
        return (int)id;
    t->func = (uint32_t)id;
    t->f = sym_func(s->sym, t->func);
    t->obj = t->f->object;
    t->addr = t->f->addr;
    t->size = t->f->size;
    if (t->obj != UINT32_MAX && !t->size && !t->addr && t->f->name[0] != '<')
        return tally_errf(err, TALLY_ENOTFOUND, "'%s' is only inlined: its lines are in the "
                          "listings of the functions it is inlined into (see -callers-callees), "
                          "or -source FILE", name);
    if (t->obj == UINT32_MAX || !t->size)
        return tally_errf(err, TALLY_ENOTFOUND, "'%s' has no known code range (no symbol size): "
                          "nothing to annotate", name);
    return 0;
}

/* The function's instructions (capstone, with details when detail != 0). */
static int disassemble(ses_t *s, const target_t *t, csh *cs, int detail, cs_insn **out, size_t *n,
                       tally_err_t *err)
{
    *out = NULL;
    *n = 0;
    /* read a piece at a time: the size is the symbol table's word, and a damaged one can claim
     * far more than the binary holds (the buffer only grows as far as there is code) */
    enum { PIECE = 1 << 20 };
    uint8_t *code = NULL;
    size_t got = 0;
    while (got < t->size) {
        size_t want = t->size - got < PIECE ? t->size - got : PIECE;
        uint8_t *grown = realloc(code, got + want);
        if (!grown) {
            free(code);
            return tally_errf(err, TALLY_ENOMEM, "out of memory");
        }
        code = grown;
        long r = sym_read_code(s->sym, t->obj, t->addr + got, code + got, want);
        if (r > 0)
            got += (size_t)r;
        if (r < (long)want)
            break;
    }
    if (got != t->size) {
        const sym_object_t *o = sym_object(s->sym, t->obj);
        free(code);
        return tally_errf(err, TALLY_EIO, "cannot read the code of '%s' from '%s' (%s)",
                          t->f->name, o->path,
                          *o->message ? o->message : "the binary does not hold it");
    }
    int rc = 0;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, cs) != CS_ERR_OK) {
        rc = tally_errf(err, TALLY_EUNSUPPORTED, "capstone cannot disassemble x86-64 here");
    } else {
        if (detail)
            cs_option(*cs, CS_OPT_DETAIL, CS_OPT_ON);
        *n = cs_disasm(*cs, code, t->size, t->addr, 0, out);
        if (!*n) {
            cs_close(cs);
            rc = tally_errf(err, TALLY_ECORRUPT, "capstone cannot decode '%s'", t->f->name);
        }
    }
    free(code);
    return rc;
}

/* ---- -source ----------------------------------------------------------------------------------- */

static void widen(rep_source_t *v, uint32_t line)
{
    if (line < v->lo)
        v->lo = line;
    if (line > v->hi)
        v->hi = line;
}

/* The row of code at an address of the function: its line, or one of the groups. */
static rep_annot_t *code_row(rep_source_t *v, int r, const char *file, uint32_t line)
{
    if (r < 0)
        return &v->nolines;
    if (r == 1)
        return &v->generated;
    if (!strcmp(file, v->file))
        return line <= v->limit ? &v->lv[line] : &v->other[REP_MAX_OTHER];
    for (size_t i = 0; i < v->nother; i++)
        if (!strcmp(v->other_file[i], file))
            return &v->other[i];
    if (v->nother == REP_MAX_OTHER)
        return &v->other[REP_MAX_OTHER];
    v->other_file[v->nother] = file;
    return &v->other[v->nother++];
}

static void mark_site(void *ctx, const char *file, uint32_t line)
{
    rep_source_t *v = ctx;
    if (!strcmp(file, v->file) && line <= v->limit) {
        v->lv[line].code = 1;
        widen(v, line);
    }
}

/* Fills v for function t: which lines have code (its instructions, and the lines code was inlined
 * at), and the metrics of its instructions by line (inclusive also on the lines their inlined
 * code was called at, when inlines are shown). */
static int function_lines(ses_t *s, int hm, const target_t *t, rep_source_t *v, cs_insn *insn,
                          size_t n, tally_err_t *err)
{
    for (size_t i = 0; i < n; i++) {
        const char *f;
        uint32_t line;
        int r = sym_line_at(s->sym, t->obj, insn[i].address, &f, &line);
        code_row(v, r, f, line)->code = 1;
        if (r == 0 && !strcmp(f, v->file))
            widen(v, line);
    }
    sym_inline_sites(s->sym, t->obj, t->addr, mark_site, v);
    const eng_table_t *pt = eng_compute(s->eng, ENG_KIND_PC, 0, err);
    if (!pt)
        return compute_failed(err);
    for (size_t id = 0; id < pt->nobjects; id++) {
        uint32_t obj, line;
        uint64_t addr;
        const char *f;
        if (!pt->present[id] || eng_pc_info(s->eng, (uint32_t)id, &obj, &addr) ||
            obj != t->obj || addr < t->addr || addr >= t->addr + t->size)
            continue;
        int r = sym_line_at(s->sym, obj, addr, &f, &line);
        annot_add(code_row(v, r, f, line), pt, id, 0);
        annot_add(&v->total, pt, id, 0);
        sym_inline_t inl[64];
        int k = eng_inlines(s->eng) ? sym_inlines_at(s->sym, obj, addr, inl, 64) : 0;
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
    for (uint32_t l = 0; l <= v->limit; l++)
        if (v->lv[l].ex && v->lv[l].ex[hm] > v->max)
            v->max = v->lv[l].ex[hm];
    return 0;
}

/* Fills v with every function's metrics on the lines of v->file. */
static int file_lines(ses_t *s, int hm, rep_source_t *v, tally_err_t *err)
{
    const eng_table_t *lt = eng_compute(s->eng, ENG_KIND_LINE, 0, err);
    if (!lt)
        return compute_failed(err);
    for (size_t id = 0; id < lt->nobjects; id++) {
        const char *f;
        uint32_t line, fn;
        if (!lt->present[id] || eng_line_info(s->eng, (uint32_t)id, &f, &line, &fn) || !f ||
            strcmp(f, v->file) || line > v->limit)
            continue;
        rep_annot_t *a = line ? &v->lv[line] : &v->generated;
        annot_add(a, lt, id, 0);
        if (line)
            widen(v, line);
        if (a->ex && a->ex[hm] > v->max)
            v->max = a->ex[hm];
    }
    return 0;
}

/* The file named arg (full path or base name) among the lines with data, or NULL. */
static const char *find_file(ses_t *s, const char *arg, uint32_t *maxline, tally_err_t *err)
{
    const eng_table_t *lt = eng_compute(s->eng, ENG_KIND_LINE, 0, err);
    const char *file = NULL;
    *maxline = 0;
    for (size_t id = 0; lt && id < lt->nobjects; id++) {
        const char *f, *base;
        uint32_t line, fn;
        if (!lt->present[id] || eng_line_info(s->eng, (uint32_t)id, &f, &line, &fn) || !f ||
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

int rep_source(ses_t *s, const rep_opts_t *o, int hm, const char *arg, rep_note_fn note,
               void *ctx, rep_source_t *v, tally_err_t *err)
{
    memset(v, 0, sizeof *v);
    v->lo = UINT32_MAX;
    target_t t = { 0 };
    uint32_t maxline = 0;
    rep_annot_t fn_incl = { 0 };
    csh cs;
    cs_insn *insn = NULL;
    size_t n = 0;
    int rc = 0;
    tally_err_t ferr = { 0 }; /* a failed line table: the argument is tried as a function */
    const char *f = find_file(s, arg, &maxline, &ferr);
    if (f) {
        if (!(v->file = strdup(f)))
            return tally_errf(err, TALLY_ENOMEM, "out of memory");
    } else { /* a function: its file is its first instruction's with a line */
        if ((rc = find_target(s, o, arg, &t, err)) ||
            (rc = disassemble(s, &t, &cs, 0, &insn, &n, err)))
            return rc;
        v->is_function = 1;
        v->function = t.f->name;
        v->object_name = sym_object(s->sym, t.obj)->name;
        v->object_path = sym_object(s->sym, t.obj)->path;
        const eng_table_t *ft = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
        if (!ft) {
            rc = compute_failed(err);
            goto out;
        }
        annot_add(&fn_incl, ft, t.func, 0);
        for (size_t i = 0; i < n; i++) {
            uint32_t line;
            if (sym_line_at(s->sym, t.obj, insn[i].address, &f, &line) == 0) {
                if (!v->file && !(v->file = strdup(f))) {
                    rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
                    goto out;
                }
                if (!strcmp(f, v->file) && line > maxline)
                    maxline = line;
            }
        }
        if (!v->file) {
            rc = tally_errf(err, TALLY_ENOTFOUND, "'%s' has no line information (compiled "
                            "without -g?); try -disasm %s", arg, arg);
            goto out;
        }
    }
    v->src = rep_read_source(s, v->file, note, ctx, &v->nsrc);
    v->limit = (uint32_t)(v->nsrc > maxline ? v->nsrc : maxline);
    if (!(v->lv = calloc((size_t)v->limit + 1, sizeof *v->lv))) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
        goto out;
    }
    if (v->is_function) {
        if ((rc = function_lines(s, hm, &t, v, insn, n, err)))
            goto out;
        int nm = eng_nmetrics(s->eng);
        if (annot_alloc(&v->total, nm)) {
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
            goto out;
        }
        if (fn_incl.in) /* (exclusive: its own instructions') */
            memcpy(v->total.in, fn_incl.in, (size_t)nm * sizeof *v->total.in);
        v->total.code = 1;
        v->lo = v->lo > 3 && v->lo != UINT32_MAX ? v->lo - 3 : 1;
    } else {
        if ((rc = file_lines(s, hm, v, err)))
            goto out;
        if (v->src) { /* the whole file */
            v->lo = 1;
            v->hi = (uint32_t)v->nsrc;
        }
    }
    if (v->lo > v->hi) /* no line of the file has code */
        v->lo = 1, v->hi = 0;
    if (!(v->zeros = calloc((size_t)eng_nmetrics(s->eng), sizeof *v->zeros)))
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
out:
    annots_free(&fn_incl, 1);
    if (insn) {
        cs_free(insn, n);
        cs_close(&cs);
    }
    if (rc)
        rep_source_free(v);
    return rc;
}

void rep_source_free(rep_source_t *v)
{
    annots_free(v->lv, v->lv ? (size_t)v->limit + 1 : 0);
    annots_free(&v->generated, 1);
    annots_free(&v->nolines, 1);
    annots_free(v->other, REP_MAX_OTHER + 1);
    annots_free(&v->total, 1);
    free(v->zeros);
    free(v->lv);
    rep_free_lines(v->src, v->nsrc);
    free(v->file);
    memset(v, 0, sizeof *v);
}

/* ---- -disasm ----------------------------------------------------------------------------------- */

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

typedef struct disasm_priv {
    csh cs;
    cs_insn *insn;
    size_t n;
} disasm_priv_t;

int rep_disasm(ses_t *s, const rep_opts_t *o, int hm, const char *name, rep_disasm_t *d,
               tally_err_t *err)
{
    memset(d, 0, sizeof *d);
    target_t t;
    int rc = find_target(s, o, name, &t, err);
    if (rc)
        return rc;
    const eng_table_t *ft = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
    if (!ft)
        return compute_failed(err);
    disasm_priv_t *p = calloc(1, sizeof *p);
    if (!p)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    d->priv = p;
    if ((rc = disassemble(s, &t, &p->cs, 1, &p->insn, &p->n, err))) {
        free(p);
        d->priv = NULL;
        return rc;
    }
    size_t n = p->n;
    cs_insn *insn = p->insn;
    d->function = t.f->name;
    d->object_name = sym_object(s->sym, t.obj)->name;
    d->object_path = sym_object(s->sym, t.obj)->path;
    d->addr = t.addr;
    d->size = t.size;
    d->n = n;
    const eng_table_t *pt = NULL;
    if (!(d->insns = calloc(n + 1, sizeof *d->insns))) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
        goto out;
    }
    if (!(pt = eng_compute(s->eng, ENG_KIND_PC, 0, err))) {
        rc = compute_failed(err);
        goto out;
    }
    /* metrics per instruction: an id's address is a leaf's pc or a call's return address minus
     * one, both inside the instruction */
    for (size_t id = 0; id < pt->nobjects; id++) {
        uint32_t obj;
        uint64_t addr;
        size_t i;
        if (!pt->present[id] || eng_pc_info(s->eng, (uint32_t)id, &obj, &addr) ||
            obj != t.obj || (i = insn_at(insn, n, addr)) == n)
            continue;
        annot_add(&d->insns[i].a, pt, id, 0);
        annot_add(&d->fn, pt, id, 0);
        if (d->insns[i].a.ex && d->insns[i].a.ex[hm] > d->max)
            d->max = d->insns[i].a.ex[hm];
    }
    int nm = eng_nmetrics(s->eng);
    if (annot_alloc(&d->fn, nm) || !(d->zeros = calloc((size_t)nm, sizeof *d->zeros))) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
        goto out;
    }
    if ((ft = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err)))
        memcpy(d->fn.in, ft->incl + (size_t)t.func * (size_t)ft->nmetrics,
               (size_t)nm * sizeof *d->fn.in);
    d->fn.code = 1;
    for (size_t i = 0; i < n; i++) { /* branch targets inside the function */
        uint64_t to = branch_target(p->cs, &insn[i]);
        size_t j = insn_at(insn, n, to);
        if (j < n && insn[j].address == to)
            d->insns[j].target = 1;
    }
    for (size_t i = 0; i < n; i++) {
        rep_insn_t *r = &d->insns[i];
        r->address = insn[i].address;
        r->mnemonic = insn[i].mnemonic;
        r->op_str = insn[i].op_str;
        r->line_kind = sym_line_at(s->sym, t.obj, insn[i].address, &r->file, &r->line);
        uint64_t to = branch_target(p->cs, &insn[i]);
        if (to && (to < t.addr || to >= t.addr + t.size))
            snprintf(r->callee, sizeof r->callee, "%s",
                     sym_func(s->sym, sym_func_at(s->sym, t.obj, to))->name);
        r->a.code = 1;
    }
out:
    if (rc)
        rep_disasm_free(d);
    return rc;
}

void rep_disasm_free(rep_disasm_t *d)
{
    disasm_priv_t *p = d->priv;
    if (p) {
        cs_free(p->insn, p->n);
        cs_close(&p->cs);
        free(p);
    }
    for (size_t i = 0; d->insns && i < d->n; i++)
        free(d->insns[i].a.ex);
    free(d->insns);
    free(d->fn.ex);
    free(d->zeros);
    memset(d, 0, sizeof *d);
}
