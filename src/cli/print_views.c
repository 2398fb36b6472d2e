/*
 * print_views.c - the metric views of `tally print`: -functions, -objects, -callers-callees,
 * -csingle, -calltree, -fsingle. They ask the engine for a table and format it. See print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

/* ---- views ---------------------------------------------------------------------------------- */

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

int view_list(pstate_t *ps, int kind)
{
    const eng_table_t *t = pr_table(ps, kind, 0);
    if (!t)
        return 1;
    const uint64_t *total = eng_total(ps->ses->eng);
    names_t nm;
    pr_names_build(ps, &nm, t);
    size_t n = 0;
    row_t *rows = malloc((t->nobjects + 1) * sizeof *rows);
    if (!rows)
        return 1;
    for (size_t id = 0; id < t->nobjects; id++)
        if (t->present[id])
            rows[n++] = (row_t){ nm.name[id],
                                 { t->excl + id * eng_nmetrics(ps->ses->eng), t->incl + id * eng_nmetrics(ps->ses->eng), NULL },
                                 0 };
    pr_sort_rows(ps, rows, n, 0);
    if (ps->limit > 0 && (size_t)ps->limit < n)
        n = (size_t)ps->limit;
    row_t totrow = { "<Total>", { total, total, NULL }, 0 };
    static const char *const views[ENG_NKINDS] = { "functions", "objects", "pcs", "lines" };
    static const char *const titles[ENG_NKINDS] = { "Functions", "Load Objects", "Instructions",
                                                    "Source Lines" };
    const char *view = views[kind];
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"%s\",", view);
        pr_json_metrics(ps, &ps->metrics);
        esc_printf(",\"rows\":[");
        pr_json_row(&ps->metrics, &totrow, total);
        for (size_t i = 0; i < n; i++) {
            esc_printf(",");
            pr_json_row(&ps->metrics, &rows[i], total);
        }
        esc_printf("]}\n");
    } else {
        char st[160];
        esc_printf("%s sorted by metric: %s\n\n",
               titles[kind],
               pr_sort_title(ps, st, sizeof st));
        row_t *all = malloc((n + 1) * sizeof *all);
        if (!all)
            return 1;
        all[0] = totrow;
        memcpy(all + 1, rows, n * sizeof *rows);
        pr_table_text(ps, &ps->metrics, all, n + 1, total);
        free(all);
        esc_printf("\n");
    }
    free(rows);
    pr_names_free(&nm);
    return 0;
}

/* The id of the function named name among those present, or -1 with an error printed. */
long pr_find_function(pstate_t *ps, const eng_table_t *t, const names_t *nm, const char *name)
{
    long found = -1;
    int ambiguous = 0;
    for (size_t id = 0; id < t->nobjects; id++) {
        if (!t->present[id])
            continue;
        const char *alts[4] = { nm->name[id], eng_object_name(ps->ses->eng, t->kind, (uint32_t)id, 0),
                                eng_object_name(ps->ses->eng, t->kind, (uint32_t)id, 1),
                                eng_object_name(ps->ses->eng, t->kind, (uint32_t)id, 2) };
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
        esc_fprintf(stderr, "tally: function name '%s' is ambiguous: it is defined in several load "
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
        pr_suggest(err.msg, sizeof err.msg, name, nm->name, nm->n);
        cli_report(&err);
    }
    return found;
}

static void cc_entry(pstate_t *ps, const eng_table_t *t, const names_t *nm, uint32_t x,
                     int first)
{
    const uint64_t *total = eng_total(ps->ses->eng);
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
    pr_sort_rows(ps, callers, c1 - c0, 1);
    pr_sort_rows(ps, callees, e1 - e0, 1);
    const uint64_t *ex = t->excl + (size_t)x * eng_nmetrics(ps->ses->eng), *in = t->incl + (size_t)x * eng_nmetrics(ps->ses->eng);
    if (ps->json) {
        esc_printf("%s{\"function\":", first ? "" : ",");
        pr_json_str(stdout, nm->name[x]);
        esc_printf(",\"callers\":[");
        for (size_t i = 0; i < c1 - c0; i++) {
            esc_printf(i ? "," : "");
            pr_json_row(&ps->cmetrics, &callers[i], total);
        }
        esc_printf("],\"self\":{\"name\":");
        pr_json_str(stdout, nm->name[x]);
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            if (!eng_has_metric(ps->ses->eng, m))
                continue;
            esc_printf(",\"e.%s\":", eng_metric(ps->ses->eng, m)->name);
            pr_json_num(stdout, pr_scaled(ps->ses->eng, m, ex[m]));
            esc_printf(",\"i.%s\":", eng_metric(ps->ses->eng, m)->name);
            pr_json_num(stdout, pr_scaled(ps->ses->eng, m, in[m]));
        }
        esc_printf("},\"callees\":[");
        for (size_t i = 0; i < e1 - e0; i++) {
            esc_printf(i ? "," : "");
            pr_json_row(&ps->cmetrics, &callees[i], total);
        }
        esc_printf("]}");
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
        pr_table_text(ps, &ps->cmetrics, all, n, total);
        esc_printf("\n");
        free(all);
    }
    free(callers);
    free(callees);
}

int view_callers_callees(pstate_t *ps, const char *single)
{
    const eng_table_t *t = pr_table(ps, ENG_KIND_FUNCTION, 1);
    if (!t)
        return 1;
    names_t nm;
    pr_names_build(ps, &nm, t);
    row_t *rows = malloc((t->nobjects + 1) * sizeof *rows);
    uint32_t *ids = malloc((t->nobjects + 1) * sizeof *ids);
    if (!rows || !ids)
        return 1;
    size_t n = 0;
    if (single) {
        long id = pr_find_function(ps, t, &nm, single);
        if (id < 0) {
            pr_names_free(&nm);
            free(rows);
            free(ids);
            return 1;
        }
        ids[n++] = (uint32_t)id;
    } else {
        for (size_t id = 0; id < t->nobjects; id++)
            if (t->present[id])
                rows[n++] = (row_t){ nm.name[id], { t->excl + id * eng_nmetrics(ps->ses->eng),
                                     t->incl + id * eng_nmetrics(ps->ses->eng), NULL }, (int)id };
        pr_sort_rows(ps, rows, n, 0);
        if (ps->limit > 0 && (size_t)ps->limit < n)
            n = (size_t)ps->limit;
        for (size_t i = 0; i < n; i++)
            ids[i] = (uint32_t)rows[i].mark;
    }
    char st[160];
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"%s\",", single ? "csingle" : "callers-callees");
        pr_json_metrics(ps, &ps->cmetrics);
        esc_printf(",\"entries\":[");
    } else {
        esc_printf("Callers and callees sorted by metric: %s\n\n", pr_sort_title(ps, st, sizeof st));
    }
    for (size_t i = 0; i < n; i++)
        cc_entry(ps, t, &nm, ids[i], i == 0);
    if (ps->json)
        esc_printf("]}\n");
    pr_names_free(&nm);
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

/* Deeper levels of the text tree are not indented further (a stack of 100,000 frames would
 * otherwise print 10^10 spaces): their depth is written instead. */
#define TREE_INDENT_MAX 64

/* Prints node k (its line, or its JSON object up to its children). */
static void tree_node_open(tree_print_t *tp, uint32_t k, size_t depth, int first)
{
    const eng_node_t *nd = &tp->tr->nodes[k];
    const char *name = k == 0 ? "<Total>" : tp->nm.name[nd->object];
    if (tp->ps->json) {
        esc_printf("%s{\"name\":", first ? "" : ",");
        pr_json_str(stdout, name);
        for (int m = 0; m < eng_nmetrics(tp->ps->ses->eng); m++) {
            if (!eng_has_metric(tp->ps->ses->eng, m))
                continue;
            esc_printf(",\"i.%s\":", eng_metric(tp->ps->ses->eng, m)->name);
            pr_json_num(stdout, pr_scaled(tp->ps->ses->eng, m, nd->incl[m]));
            esc_printf(",\"e.%s\":", eng_metric(tp->ps->ses->eng, m)->name);
            pr_json_num(stdout, pr_scaled(tp->ps->ses->eng, m, nd->excl[m]));
        }
        esc_printf(",\"children\":[");
    } else {
        char vb[64], pb[32];
        pr_fmt_value(vb, sizeof vb, eng_metric(tp->ps->ses->eng, tp->metric), nd->incl[tp->metric]);
        pr_fmt_percent(pb, sizeof pb, nd->incl[tp->metric], tp->total[tp->metric]);
        int indent = (int)(depth < TREE_INDENT_MAX ? depth : TREE_INDENT_MAX) * 2;
        if (depth > TREE_INDENT_MAX)
            esc_printf("%10s %7s   %*s+-[%zu] %s\n", vb, pb, indent, "", depth, name);
        else
            esc_printf("%10s %7s   %*s%s%s\n", vb, pb, indent, "", depth ? "+-" : "", name);
    }
}

/* One node being printed: its children sorted, and the next one to print. */
typedef struct tree_level {
    uint32_t *kids;
    size_t n, next;
} tree_level_t;

/* Prints the tree depth first without recursion (a stack may have any number of frames).
 * Returns 0, or 1 when memory ran out. */
static int tree_print(tree_print_t *tp)
{
    tree_level_t *lv = NULL;
    size_t depth = 0, cap = 0;
    uint32_t k = 0;
    int first = 1, rc = 0;
    g_tree_metric = tp->metric;
    g_tree_nodes = tp->tr->nodes;
    for (;;) {
        /* enter node k at depth */
        tree_node_open(tp, k, depth, first);
        const eng_node_t *nd = &tp->tr->nodes[k];
        size_t nc = 0;
        for (uint32_t c = nd->first_child; c != UINT32_MAX; c = tp->tr->nodes[c].next_sibling)
            nc++;
        if (depth == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            tree_level_t *nl = realloc(lv, ncap * sizeof *nl);
            if (!nl) {
                rc = 1;
                break;
            }
            lv = nl;
            cap = ncap;
        }
        uint32_t *kids = malloc((nc + 1) * sizeof *kids);
        if (!kids) {
            rc = 1;
            break;
        }
        nc = 0;
        for (uint32_t c = nd->first_child; c != UINT32_MAX; c = tp->tr->nodes[c].next_sibling)
            kids[nc++] = c;
        qsort(kids, nc, sizeof *kids, cmp_nodes);
        lv[depth++] = (tree_level_t){ kids, nc, 0 };
        /* the next node: the next child of the deepest level that has one left */
        while (depth && lv[depth - 1].next == lv[depth - 1].n) {
            free(lv[--depth].kids);
            if (tp->ps->json)
                esc_printf("]}");
        }
        if (!depth)
            break;
        tree_level_t *top = &lv[depth - 1];
        first = top->next == 0;
        k = top->kids[top->next++];
    }
    while (depth)
        free(lv[--depth].kids);
    free(lv);
    return rc;
}

int view_calltree(pstate_t *ps)
{
    const eng_table_t *t = pr_table(ps, ENG_KIND_FUNCTION, 0);
    if (!t)
        return 1;
    tally_err_t err = { 0 };
    const eng_tree_t *tr = eng_calltree(ps->ses->eng, ENG_KIND_FUNCTION, &err);
    if (!tr)
        return pr_report(&err);
    tree_print_t tp = { .ps = ps, .tr = tr, .total = eng_total(ps->ses->eng) };
    tp.metric = ps->sort_metric >= 0 ? ps->sort_metric : ENG_M_TOTALCPU;
    pr_names_build(ps, &tp.nm, t);
    int rc;
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"calltree\",\"metric\":\"i.%s\",\"tree\":", eng_metric(ps->ses->eng, tp.metric)->name);
        rc = tree_print(&tp);
        esc_printf("}\n");
    } else {
        esc_printf("Functions Call Tree. Metric: Attributed %s\n\n", eng_metric(ps->ses->eng, tp.metric)->title);
        const char *unit = eng_metric(ps->ses->eng, tp.metric)->unit;
        esc_printf("%10s %7s   %s\n", !strcmp(unit, "s") ? "sec." : unit, "%", "Name");
        rc = tree_print(&tp);
        esc_printf("\n");
    }
    pr_names_free(&tp.nm);
    if (rc)
        esc_fprintf(stderr, "tally: out of memory printing the call tree\n");
    return rc;
}

int view_fsingle(pstate_t *ps, const char *name)
{
    const eng_table_t *t = pr_table(ps, ENG_KIND_FUNCTION, 0);
    if (!t)
        return 1;
    names_t nm;
    pr_names_build(ps, &nm, t);
    long id = pr_find_function(ps, t, &nm, name);
    if (id < 0) {
        pr_names_free(&nm);
        return 1;
    }
    const uint64_t *total = eng_total(ps->ses->eng);
    const sym_func_t *f = sym_func(ps->ses->sym, (uint32_t)id);
    const sym_object_t *o = f->object == UINT32_MAX ? NULL : sym_object(ps->ses->sym, f->object);
    const char *file = NULL;
    uint32_t line = 0;
    if (o && f->size && sym_line_at(ps->ses->sym, f->object, f->addr, &file, &line))
        file = NULL;
    const uint64_t *ex = t->excl + (size_t)id * eng_nmetrics(ps->ses->eng), *in = t->incl + (size_t)id * eng_nmetrics(ps->ses->eng);
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"fsingle\",\"name\":");
        pr_json_str(stdout, nm.name[id]);
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            if (!eng_has_metric(ps->ses->eng, m))
                continue;
            esc_printf(",\"e.%s\":", eng_metric(ps->ses->eng, m)->name);
            pr_json_num(stdout, pr_scaled(ps->ses->eng, m, ex[m]));
            esc_printf(",\"i.%s\":", eng_metric(ps->ses->eng, m)->name);
            pr_json_num(stdout, pr_scaled(ps->ses->eng, m, in[m]));
        }
        esc_printf(",\"size\":%llu,\"address\":\"0x%llx\",\"source_file\":",
               (unsigned long long)f->size, (unsigned long long)f->addr);
        pr_json_str(stdout, file ? file : "");
        esc_printf(",\"line\":%u,\"load_object\":", line);
        pr_json_str(stdout, o ? o->path : "<Unknown>");
        esc_printf(",\"mangled_name\":");
        pr_json_str(stdout, f->mangled);
        esc_printf("}\n");
    } else {
        esc_printf("%s\n", nm.name[id]);
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            if (!eng_has_metric(ps->ses->eng, m))
                continue;
            char vb[64], pb[32];
            for (int k = 0; k < 2; k++) {
                const uint64_t *v = k ? in : ex;
                pr_fmt_value(vb, sizeof vb, eng_metric(ps->ses->eng, m), v[m]);
                pr_fmt_percent(pb, sizeof pb, v[m], total[m]);
                char label[128];
                snprintf(label, sizeof label, "%s %s", pr_flavor_word(k ? FL_I : FL_E, 0),
                         eng_metric(ps->ses->eng, m)->title);
                esc_printf("  %32s:  %10s (%6s%%)\n", label, vb, pb);
            }
        }
        esc_printf("  %32s:  %llu\n", "Size", (unsigned long long)f->size);
        esc_printf("  %32s:  0x%llx\n", "Address", (unsigned long long)f->addr);
        if (file)
            esc_printf("  %32s:  %s:%u\n", "Source File", file, line);
        else
            esc_printf("  %32s:  (unknown)\n", "Source File");
        esc_printf("  %32s:  %s\n", "Load Object", o ? o->path : "<Unknown>");
        esc_printf("  %32s:  %s\n\n", "Mangled Name", f->mangled);
    }
    pr_names_free(&nm);
    return 0;
}
