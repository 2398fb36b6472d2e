/*
 * print_views.c - the metric views of `tally print`: -functions, -objects, -pcs, -lines,
 * -callers-callees, -csingle, -calltree, -fsingle. Each asks for its report model
 * (analyzer/report.h) and formats it as text or JSON to the state's sink. See print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "print.h"

/* ---- shared ---------------------------------------------------------------------------------- */

int pr_report(tally_err_t *err)
{
    cli_report(err);
    return 1;
}

const eng_table_t *pr_table(pstate_t *ps, int kind, int edges)
{
    tally_err_t err = { 0 };
    const eng_table_t *t = eng_compute(ps->ses->eng, kind, edges, &err);
    if (!t)
        pr_report(&err);
    return t;
}

long pr_find_function(pstate_t *ps, const eng_table_t *t, const names_t *nm, const char *name)
{
    tally_err_t err = { 0 };
    long id = rep_find_function(ps->ses->eng, t, nm, name, &err);
    if (id < 0)
        pr_report(&err);
    return id < 0 ? -1 : id;
}

/* ---- tables ---------------------------------------------------------------------------------- */

int view_list(pstate_t *ps, int kind)
{
    if (pr_comparing(ps))
        return view_compare_list(ps, kind);
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_table_t rt;
    if (rep_table(ps->ses, kind, &o, &rt, &err))
        return pr_report(&err);
    static const char *const views[ENG_NKINDS] = { "functions", "objects", "pcs", "lines",
                                                   "functions" };
    static const char *const titles[ENG_NKINDS] = { "Functions", "Load Objects", "Instructions",
                                                    "Source Lines", "Profiled Blocks" };
    static const char *const er_titles[ENG_NKINDS] = { "Functions", "Load Objects", "PCs",
                                                       "Lines", "Profiled Blocks" };
    int rc = 0;
    if (!ps->json)
        rt.n = pr_limit_rows(ps, rt.n); /* er_print's -limit counts <Total> (-compat) */
    char **er_names = NULL; /* er_print's names of instructions and lines (-compat) */
    if (!ps->json && ps->compat && (kind == ENG_KIND_PC || kind == ENG_KIND_LINE) &&
        (er_names = calloc(rt.n + 1, sizeof *er_names)) != NULL)
        for (size_t i = 0; i < rt.n; i++)
            if ((er_names[i] = pr_er_row_name(ps, kind, rt.rows[i].id)) != NULL)
                rt.rows[i].name = er_names[i];
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, views[kind]);
        if (kind == ENG_KIND_BLOCK) {
            json_key(&j, "kind");
            json_str(&j, "blocks");
        }
        pr_jmetrics(&j, &ps->metrics);
        json_key(&j, "rows");
        json_arr_begin(&j);
        pr_jrow(&j, &ps->metrics, &rt.total_row, rt.total);
        for (size_t i = 0; i < rt.n; i++)
            pr_jrow(&j, &ps->metrics, &rt.rows[i], rt.total);
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        char st[160];
        pr_view_title(ps, "%s sorted by metric: %s", (ps->compat ? er_titles : titles)[kind],
                      pr_sort_title(ps, st, sizeof st));
        row_t *all = malloc((rt.n + 1) * sizeof *all);
        if (all) {
            all[0] = rt.total_row;
            if (rt.n) /* rt.rows may be NULL when there are none */
                memcpy(all + 1, rt.rows, rt.n * sizeof *all);
            pr_table_text(ps, &ps->metrics, all, rt.n + 1, rt.total);
            free(all);
            if (ps->printmode == PR_PM_TEXT)
                sink_printf(&ps->out, "\n");
        } else {
            rc = 1;
        }
    }
    if (er_names)
        for (size_t i = 0; i < rt.n; i++)
            free(er_names[i]);
    free(er_names);
    rep_table_free(&rt);
    return rc;
}

/* ---- callers-callees ------------------------------------------------------------------------- */

static void cc_json(pstate_t *ps, json_t *j, const rep_cc_t *cc, const rep_cc_entry_t *e)
{
    json_obj_begin(j);
    json_key(j, "function");
    json_str(j, e->name);
    json_key(j, "callers");
    json_arr_begin(j);
    for (size_t i = 0; i < e->ncallers; i++)
        pr_jrow(j, &ps->cmetrics, &e->callers[i], cc->total);
    json_arr_end(j);
    json_key(j, "self");
    json_obj_begin(j);
    json_key(j, "name");
    json_str(j, e->name);
    pr_jall_metrics(ps, j, e->excl, e->incl, 0);
    json_obj_end(j);
    json_key(j, "callees");
    json_arr_begin(j);
    for (size_t i = 0; i < e->ncallees; i++)
        pr_jrow(j, &ps->cmetrics, &e->callees[i], cc->total);
    json_arr_end(j);
    json_obj_end(j);
}

/* er_print's layout: callers above, the focus marked '*' with its exclusive as its attributed
 * share, callees below; each block's values sum to the focus's inclusive. */
static int cc_text(pstate_t *ps, const rep_cc_t *cc, const rep_cc_entry_t *e)
{
    size_t n = e->ncallers + 1 + e->ncallees;
    row_t *all = malloc(n * sizeof *all);
    if (!all)
        return 1;
    if (e->ncallers)
        memcpy(all, e->callers, e->ncallers * sizeof *all);
    all[e->ncallers] = (row_t){ e->name, { NULL, NULL, e->excl }, '*', e->id };
    if (e->ncallees)
        memcpy(all + e->ncallers + 1, e->callees, e->ncallees * sizeof *all);
    pr_table_text(ps, &ps->cmetrics, all, n, cc->total);
    if (ps->printmode == PR_PM_TEXT)
        sink_printf(&ps->out, "\n");
    free(all);
    return 0;
}

int view_callers_callees(pstate_t *ps, const char *single)
{
    if (pr_comparing(ps))
        return view_compare_cc(ps, single);
    if (ps->compat && !ps->json)
        return pr_cc_er(ps, single);
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_cc_t cc;
    if (rep_callers_callees(ps->ses, &o, single, &cc, &err))
        return pr_report(&err);
    int rc = 0;
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, single ? "csingle" : "callers-callees");
        if (ps->kind == ENG_KIND_BLOCK) {
            json_key(&j, "kind");
            json_str(&j, "blocks");
        }
        pr_jmetrics(&j, &ps->cmetrics);
        json_key(&j, "entries");
        json_arr_begin(&j);
        for (size_t i = 0; i < cc.n; i++)
            cc_json(ps, &j, &cc, &cc.entries[i]);
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        char st[160];
        pr_view_title(ps, "Callers and callees sorted by metric: %s", pr_sort_title(ps, st, sizeof st));
        for (size_t i = 0; i < cc.n && !rc; i++)
            rc = cc_text(ps, &cc, &cc.entries[i]);
    }
    rep_cc_free(&cc);
    return rc;
}

/* ---- call tree ------------------------------------------------------------------------------- */

/* Deeper levels of the text tree are not indented further (a stack of 100,000 frames would
 * otherwise print 10^10 spaces): their depth is written instead. */
#define TREE_INDENT_MAX 64

/* Node k: its text line, or its JSON object up to its children. */
static void tree_node_open(pstate_t *ps, json_t *j, const rep_tree_t *t, uint32_t k, size_t depth)
{
    const eng_node_t *nd = &t->tr->nodes[k];
    const char *name = rep_tree_name(t, k);
    if (j) {
        json_obj_begin(j);
        json_key(j, "name");
        json_str(j, name);
        pr_jall_metrics(ps, j, nd->excl, nd->incl, 1);
        json_key(j, "children");
        json_arr_begin(j);
    } else {
        char vb[64], pb[32];
        pr_fmt_value(vb, sizeof vb, eng_metric(ps->ses->eng, t->metric), nd->incl[t->metric]);
        pr_fmt_percent(pb, sizeof pb, nd->incl[t->metric], t->total[t->metric]);
        int indent = (int)(depth < TREE_INDENT_MAX ? depth : TREE_INDENT_MAX) * 2;
        if (depth > TREE_INDENT_MAX)
            sink_printf(&ps->out, "%10s %7s   %*s+-[%zu] %s\n", vb, pb, indent, "", depth, name);
        else
            sink_printf(&ps->out, "%10s %7s   %*s%s%s\n", vb, pb, indent, "",
                        depth ? "+-" : "", name);
    }
}

/* Formats the tree depth first without recursion (a stack may have any number of frames): the
 * path from the root is a stack of (node, next child to visit). Returns 0, or 1 when memory ran
 * out. */
static int tree_format(pstate_t *ps, json_t *j, const rep_tree_t *t)
{
    typedef struct level {
        uint32_t node;
        size_t next; /* index into t->kids */
    } level_t;
    level_t *lv = NULL;
    size_t depth = 0, cap = 0;
    uint32_t k = 0;
    for (;;) {
        tree_node_open(ps, j, t, k, depth);
        if (GROW(lv, depth, cap)) {
            free(lv);
            return 1;
        }
        lv[depth++] = (level_t){ k, t->kid_start[k] };
        /* the next node: the next child of the deepest level that has one left */
        while (depth && lv[depth - 1].next == t->kid_start[lv[depth - 1].node + 1]) {
            depth--;
            if (j) {
                json_arr_end(j);
                json_obj_end(j);
            }
        }
        if (!depth)
            break;
        k = t->kids[lv[depth - 1].next++];
    }
    free(lv);
    return 0;
}

int view_calltree(pstate_t *ps)
{
    if (ps->compat && !ps->json)
        return pr_calltree_er(ps);
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_tree_t t;
    if (rep_calltree(ps->ses, &o, &t, &err))
        return pr_report(&err);
    int rc;
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "calltree");
        if (ps->kind == ENG_KIND_BLOCK) {
            json_key(&j, "kind");
            json_str(&j, "blocks");
        }
        json_key(&j, "metric");
        json_strf(&j, "i.%s", eng_metric(ps->ses->eng, t.metric)->name);
        json_key(&j, "tree");
        rc = tree_format(ps, &j, &t);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(&ps->out, "%s Call Tree. Metric: Attributed %s\n\n",
                    ps->kind == ENG_KIND_BLOCK ? "Profiled Blocks" : "Functions",
                    eng_metric(ps->ses->eng, t.metric)->title);
        const char *unit = eng_metric(ps->ses->eng, t.metric)->unit;
        sink_printf(&ps->out, "%10s %7s   %s\n", !strcmp(unit, "s") ? "sec." : unit, "%", "Name");
        rc = tree_format(ps, NULL, &t);
        sink_printf(&ps->out, "\n");
    }
    rep_tree_free(&t);
    if (rc)
        esc_fprintf(stderr, "tally: out of memory printing the call tree\n");
    return rc;
}

/* ---- one function ---------------------------------------------------------------------------- */

int view_fsingle(pstate_t *ps, const char *name)
{
    tally_err_t err = { 0 };
    if (ps->kind == ENG_KIND_BLOCK) {
        esc_fprintf(stderr, "tally: -fsingle shows a function of the program (size, address, "
                    "file): with -kind blocks, see a block with -csingle %s\n", name);
        return 2;
    }
    if (ps->compat && !ps->json)
        return pr_fsingle_er(ps, name);
    rep_opts_t o = pr_opts(ps);
    rep_func_t f;
    if (rep_function(ps->ses, &o, name, &f, &err))
        return pr_report(&err);
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "fsingle");
        json_key(&j, "name");
        json_str(&j, f.name);
        pr_jall_metrics(ps, &j, f.excl, f.incl, 0);
        json_key(&j, "size");
        json_u64(&j, f.size);
        json_key(&j, "address");
        json_strf(&j, "0x%llx", (unsigned long long)f.addr);
        json_key(&j, "source_file");
        json_str(&j, f.file ? f.file : "");
        json_key(&j, "line");
        json_u64(&j, f.line);
        json_key(&j, "load_object");
        json_str(&j, f.object);
        json_key(&j, "mangled_name");
        json_str(&j, f.mangled);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(&ps->out, "%s\n", f.name);
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            if (!eng_has_metric(ps->ses->eng, m))
                continue;
            char vb[64], pb[32];
            for (int k = 0; k < 2; k++) {
                const uint64_t *v = k ? f.incl : f.excl;
                pr_fmt_value(vb, sizeof vb, eng_metric(ps->ses->eng, m), v[m]);
                pr_fmt_percent(pb, sizeof pb, v[m], f.total[m]);
                char label[128];
                snprintf(label, sizeof label, "%s %s", pr_flavor_word(k ? FL_I : FL_E, 0),
                         eng_metric(ps->ses->eng, m)->title);
                sink_printf(&ps->out, "  %32s:  %10s (%6s%%)\n", label, vb, pb);
            }
        }
        sink_printf(&ps->out, "  %32s:  %llu\n", "Size", (unsigned long long)f.size);
        sink_printf(&ps->out, "  %32s:  0x%llx\n", "Address", (unsigned long long)f.addr);
        if (f.file)
            sink_printf(&ps->out, "  %32s:  %s:%u\n", "Source File", f.file, f.line);
        else
            sink_printf(&ps->out, "  %32s:  (unknown)\n", "Source File");
        sink_printf(&ps->out, "  %32s:  %s\n", "Load Object", f.object);
        sink_printf(&ps->out, "  %32s:  %s\n\n", "Mangled Name", f.mangled);
    }
    rep_func_free(&f);
    return 0;
}
