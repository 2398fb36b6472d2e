/*
 * print_summary.c - er_print's summary listings: -fsummary, -lsummary and -psummary print, for
 * <Total> and each row of -functions, -lines or -pcs (sorted and limited as those are), a block
 * with every metric of -metrics (value and percentage of the total), then the row's size, address
 * ("OBJ:0xADDR", OBJ the load object's number in -object_list order), source file, the file its
 * symbols were read from, load object and mangled name, in er_print's layout. See print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

typedef struct summary {
    uint64_t size, addr;
    uint32_t objnum;
    const char *file, *objfile, *object, *mangled;
} summary_t;

/* What a row of kind (ENG_KIND_FUNCTION, _LINE, _PC) is, from the symbols. */
static void describe(pstate_t *ps, int kind, uint32_t id, summary_t *s)
{
    sym_ctx_t *sym = ps->ses->sym;
    uint32_t f = UINT32_MAX, obj = UINT32_MAX;
    uint64_t addr = 0;
    const char *file = NULL;
    uint32_t line = 0;
    if (kind == ENG_KIND_FUNCTION) {
        f = id;
    } else if (kind == ENG_KIND_LINE) {
        eng_line_info(ps->ses->eng, id, &file, &line, &f);
    } else if (kind == ENG_KIND_PC && eng_pc_info(ps->ses->eng, id, &obj, &addr) == 0) {
        f = eng_pc_function(ps->ses->eng, id);
        if (obj != UINT32_MAX && sym_line_at(sym, obj, addr, &file, &line) != 0)
            file = NULL;
    }
    *s = (summary_t){ 0, 0, 0, NULL, NULL, "<Unknown>", "" };
    if (f == UINT32_MAX)
        return;
    const sym_func_t *fn = sym_func(sym, f);
    /* as er_print: only a name that differs from the function's (C++) */
    s->mangled = fn->mangled && strcmp(fn->mangled, fn->name) ? fn->mangled : "";
    if (kind == ENG_KIND_FUNCTION) {
        s->size = fn->size;
        s->addr = fn->addr;
        if (fn->object < sym_nobjects(sym) && sym_line_at(sym, fn->object, fn->addr, &file, &line))
            file = NULL;
    } else {
        /* a line: the address of its function (er_print: of the line's first instruction) */
        s->addr = kind == ENG_KIND_PC ? addr : fn->addr;
    }
    s->file = file;
    if (fn->object < sym_nobjects(sym)) {
        const sym_object_t *so = sym_object(sym, fn->object);
        s->object = so->path;
        s->objfile = so->debugfile && *so->debugfile ? so->debugfile : so->path;
        s->objnum = fn->object;
    }
}

/* The label column's width: the longest metric title or fixed label. */
static int label_width(pstate_t *ps)
{
    int w = (int)strlen("Mangled Name");
    for (int c = 0; c < ps->metrics.ncols; c++) {
        const mcol_t *mc = &ps->metrics.cols[c];
        int l = (int)(strlen(pr_flavor_word(mc->flavor, 0)) + 1 + strlen(mc->def->title));
        if (l > w)
            w = l;
    }
    return w;
}

static void block_text(pstate_t *ps, const row_t *r, const uint64_t *total, const summary_t *s,
                       int is_total, int w)
{
    sink_t *o = &ps->out;
    sink_printf(o, "%s\n", r->name);
    for (int c = 0; c < ps->metrics.ncols; c++) {
        const mcol_t *mc = &ps->metrics.cols[c];
        uint64_t raw = pr_row_value(r, mc->flavor, mc->metric);
        char label[256], vb[64];
        snprintf(label, sizeof label, "%s %s", pr_flavor_word(mc->flavor, 0), mc->def->title);
        pr_fmt_value(vb, sizeof vb, mc->def, raw);
        double pct = total[mc->metric] ? 100.0 * (double)raw / (double)total[mc->metric] : 0.0;
        sink_printf(o, "\t%*s: %s (%5.1f%%)\n", w, label, vb, pct);
    }
    sink_printf(o, "\t%*s: %5llu\n", w, "Size", (unsigned long long)s->size);
    if (is_total)
        sink_printf(o, "\t%*s: 0:0x00000000\n", w, "PC Address");
    else
        sink_printf(o, "\t%*s: %u:0x%08llx\n", w, "PC Address", s->objnum,
                    (unsigned long long)s->addr);
    sink_printf(o, "\t%*s: %s\n", w, "Source File", s->file ? s->file : "(unknown)");
    sink_printf(o, "\t%*s: %s\n", w, "Object File", s->objfile ? s->objfile : "(unknown)");
    sink_printf(o, "\t%*s: %s\n", w, "Load Object", is_total ? "<Total>" : s->object);
    sink_printf(o, "\t%*s:%s%s\n", w, "Mangled Name", *s->mangled ? " " : "", s->mangled);
    sink_printf(o, "\t%*s:\n", w, "Aliases");
}

static void block_json(pstate_t *ps, json_t *j, const row_t *r, const uint64_t *total,
                       const summary_t *s, int is_total)
{
    json_obj_begin(j);
    json_key(j, "name");
    json_str(j, r->name);
    pr_jvalues(j, &ps->metrics, r, total);
    json_key(j, "size");
    json_u64(j, s->size);
    json_key(j, "address");
    json_strf(j, "0x%llx", (unsigned long long)s->addr);
    json_key(j, "source_file");
    json_str(j, s->file ? s->file : "");
    json_key(j, "object_file");
    json_str(j, s->objfile ? s->objfile : "");
    json_key(j, "load_object");
    json_str(j, is_total ? "<Total>" : s->object);
    json_key(j, "mangled_name");
    json_str(j, s->mangled);
    json_obj_end(j);
}

static int summary(pstate_t *ps, int kind)
{
    static const char *const views[ENG_NKINDS] = { "fsummary", "", "psummary", "lsummary" };
    /* er_print titles the line and instruction summaries "Objects" */
    static const char *const titles[ENG_NKINDS] = { "Functions", "", "PCs", "Lines" };
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_table_t rt;
    if (rep_table(ps->ses, kind, &o, &rt, &err))
        return pr_report(&err);
    rt.n = pr_limit_rows(ps, rt.n);
    summary_t none = { 0, 0, 0, NULL, NULL, "<Total>", "" };
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, views[kind]);
        pr_jmetrics(&j, &ps->metrics);
        json_key(&j, "rows");
        json_arr_begin(&j);
        block_json(ps, &j, &rt.total_row, rt.total, &none, 1);
    } else {
        char st[160];
        sink_printf(&ps->out, "%s sorted by metric: %s\n\n",
                    ps->compat && kind != ENG_KIND_FUNCTION ? "Objects" : titles[kind],
                    pr_sort_title(ps, st, sizeof st));
        block_text(ps, &rt.total_row, rt.total, &none, 1, label_width(ps));
    }
    for (size_t i = 0; i < rt.n; i++) {
        summary_t s;
        describe(ps, kind, rt.rows[i].id, &s);
        row_t r = rt.rows[i];
        char *er = ps->compat && !ps->json ? pr_er_row_name(ps, kind, r.id) : NULL;
        if (er)
            r.name = er;
        if (ps->json) {
            block_json(ps, &j, &r, rt.total, &s, 0);
        } else {
            sink_printf(&ps->out, "\n");
            block_text(ps, &r, rt.total, &s, 0, label_width(ps));
        }
        free(er);
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(&ps->out, "\n");
    }
    rep_table_free(&rt);
    return 0;
}

int view_fsummary(pstate_t *ps, const char *a) { return summary(ps, ENG_KIND_FUNCTION); }
int view_lsummary(pstate_t *ps, const char *a) { return summary(ps, ENG_KIND_LINE); }
int view_psummary(pstate_t *ps, const char *a) { return summary(ps, ENG_KIND_PC); }

/* -fsingle as er_print's (-compat): the function's summary block, as -fsummary's. */
int pr_fsingle_er(pstate_t *ps, const char *name)
{
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_func_t f;
    if (rep_function(ps->ses, &o, name, &f, &err))
        return pr_report(&err);
    summary_t s;
    describe(ps, ENG_KIND_FUNCTION, f.id, &s);
    row_t r = { f.name, { f.excl, f.incl, NULL }, 0, f.id };
    block_text(ps, &r, f.total, &s, 0, label_width(ps));
    rep_func_free(&f);
    return 0;
}
