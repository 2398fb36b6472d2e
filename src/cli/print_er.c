/*
 * print_er.c - er_print's layouts where tally's own differ, for scripts that parse er_print's
 * output: the switch `-compat er_print|on|off` (on the command line also --compat=er_print),
 * and what it changes: -limit counts the <Total> row, -callers-callees and -csingle in
 * er_print's form (a <Total> block first, "Attributed" titles, percentages of the focus
 * function's inclusive value, csingle's Callers / Stack Fragment / Callees sections), -pcs and
 * -lines rows named "f + 0x000000D3, line 45 in "file.c"" and "f, line 45 in "file.c"", -calltree
 * with "+-" rows and "|" guides, -fsingle as a summary block (print_summary.c), -metric_list,
 * -object_list, the thread, sample and experiment lists in er_print's tables (printed again by
 * the selection commands), a script's comments and the limit's confirmation on stderr.
 * Also er_print's commands about load objects and metrics that tally had under other meanings:
 * -objects (the load objects and their status), -object_select, -cmetric_list. See print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

int set_compat(pstate_t *ps, const char *a)
{
    if (!strcmp(a, "er_print") || !strcmp(a, "on"))
        ps->compat = 1;
    else if (!strcmp(a, "off") || !strcmp(a, "tally") || !strcmp(a, "none"))
        ps->compat = 0;
    else {
        esc_fprintf(stderr, "tally: -compat '%s': use er_print (or on: er_print's layouts for "
                            "scripts that parse them) or off (tally's)\n", a);
        return 2;
    }
    return 0;
}

size_t pr_limit_rows(const pstate_t *ps, size_t n)
{
    if (ps->limit <= 0)
        return n;
    size_t keep = (size_t)ps->limit - (ps->compat ? 1 : 0); /* er_print counts <Total> */
    return n < keep ? n : keep;
}

/* The function id's name in the state's name format. */
static const char *fname(pstate_t *ps, uint32_t f)
{
    const sym_func_t *fn = sym_func(ps->ses->sym, f);
    return ps->namefmt == 1 ? fn->long_name : ps->namefmt == 2 ? fn->mangled : fn->name;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

char *pr_er_row_name(pstate_t *ps, int kind, uint32_t id)
{
    char *out = NULL;
    eng_t *g = ps->ses->eng;
    if (kind == ENG_KIND_PC) {
        uint32_t obj;
        uint64_t addr;
        if (eng_pc_info(g, id, &obj, &addr))
            return NULL;
        uint32_t f = eng_pc_function(g, id);
        const sym_func_t *fn = sym_func(ps->ses->sym, f);
        uint64_t off = addr - (fn->addr <= addr ? fn->addr : 0);
        const char *file = NULL;
        uint32_t line = 0;
        if (obj != UINT32_MAX && sym_line_at(ps->ses->sym, obj, addr, &file, &line) == 0 && file &&
            line)
            return asprintf(&out, "%s + 0x%08llX, line %u in \"%s\"", fname(ps, f),
                            (unsigned long long)off, line, base_name(file)) < 0 ? NULL : out;
        return asprintf(&out, "%s + 0x%08llX", fname(ps, f), (unsigned long long)off) < 0 ? NULL
                                                                                         : out;
    }
    if (kind == ENG_KIND_LINE) {
        const char *file;
        uint32_t line, f;
        if (eng_line_info(g, id, &file, &line, &f))
            return NULL;
        int r;
        if (!file)
            r = asprintf(&out, "<Function: %s, instructions without line numbers>", fname(ps, f));
        else if (!line)
            r = asprintf(&out, "<Function: %s, compiler-generated code>",
                         fname(ps, f));
        else
            r = asprintf(&out, "%s, line %u in \"%s\"", fname(ps, f), line, base_name(file));
        return r < 0 ? NULL : out;
    }
    return NULL;
}

/* ---- callers-callees ------------------------------------------------------------------------- */

/* csingle's section titles, written between the rows of one table */
typedef struct sections {
    size_t ncallers, ncallees;
} sections_t;

static void section_hook(pstate_t *ps, void *ctx, size_t r)
{
    const sections_t *s = ctx;
    sink_t *o = &ps->out;
    size_t focus = s->ncallers, end = s->ncallers + 1 + s->ncallees;
    if (r == 0 && s->ncallers)
        sink_printf(o, "============== Callers\n");
    if (r == focus && s->ncallers)
        sink_printf(o, "\n============== Stack Fragment\n");
    else if (r == focus)
        sink_printf(o, "============== No Callers\n\n============== Stack Fragment\n");
    if (r == focus + 1 && r < end)
        sink_printf(o, "\n============== Callees\n");
    if (r == end && s->ncallees)
        sink_printf(o, "\n");
    else if (r == end)
        sink_printf(o, "\n============== No Callees\n\n");
}

/* One function's block: its callers, itself (its exclusive value as its share), its callees;
 * percentages of its inclusive value. */
static int cc_block(pstate_t *ps, const rep_cc_entry_t *e, int sections)
{
    size_t n = e->ncallers + 1 + e->ncallees;
    row_t *all = malloc(n * sizeof *all);
    if (!all)
        return 1;
    if (e->ncallers)
        memcpy(all, e->callers, e->ncallers * sizeof *all);
    all[e->ncallers] = (row_t){ e->name, { NULL, NULL, e->excl }, sections ? 0 : '*', e->id };
    if (e->ncallees)
        memcpy(all + e->ncallers + 1, e->callees, e->ncallees * sizeof *all);
    sections_t s = { e->ncallers, e->ncallees };
    pr_table_text_ex(ps, &ps->cmetrics, all, n, e->incl, sections ? section_hook : NULL, &s);
    if (!sections)
        sink_printf(&ps->out, "\n");
    free(all);
    return 0;
}

/* The <Total> block: no callers, <Total> itself (nothing exclusive), the roots of the stacks. */
static int cc_total_block(pstate_t *ps)
{
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_tree_t t;
    if (rep_calltree(ps->ses, &o, &t, &err))
        return pr_report(&err);
    size_t nroots = t.kid_start[1] - t.kid_start[0];
    uint64_t *zero = calloc((size_t)eng_nmetrics(ps->ses->eng), sizeof *zero);
    rep_cc_entry_t e = { 0, "<Total>", zero, t.total, NULL, NULL, 0, nroots };
    e.callees = calloc(nroots + 1, sizeof *e.callees);
    int rc = 1;
    if (zero && e.callees) {
        for (size_t i = 0; i < nroots; i++) {
            uint32_t k = t.kids[t.kid_start[0] + i];
            e.callees[i] = (row_t){ rep_tree_name(&t, k), { NULL, NULL, t.tr->nodes[k].incl }, 0, k };
        }
        pr_sort_rows(ps, e.callees, nroots, 1);
        rc = cc_block(ps, &e, 0);
    }
    free(e.callees);
    free(zero);
    rep_tree_free(&t);
    return rc;
}

int pr_cc_er(pstate_t *ps, const char *single)
{
    char st[160] = "Name";
    if (ps->sort_metric >= 0)
        snprintf(st, sizeof st, "Attributed %s", eng_metric(ps->ses->eng, ps->sort_metric)->title);
    int rc = 0;
    if (!single) { /* er_print says the function list's order first, then the attributed one */
        char fs[160];
        sink_printf(&ps->out, "Functions sorted by metric: %s\n", pr_sort_title(ps, fs, sizeof fs));
    }
    sink_printf(&ps->out, "Callers and callees sorted by metric: %s\n\n", st);
    if (!single && (rc = cc_total_block(ps)) != 0)
        return rc;
    if (!single && ps->limit == 1) /* the limit is reached by <Total> */
        return 0;
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    if (!single && o.limit > 0)
        o.limit--;
    rep_cc_t cc;
    if (rep_callers_callees(ps->ses, &o, single, &cc, &err))
        return pr_report(&err);
    for (size_t i = 0; i < cc.n && !rc; i++)
        rc = cc_block(ps, &cc.entries[i], single != NULL);
    rep_cc_free(&cc);
    return rc;
}

/* ---- load objects ---------------------------------------------------------------------------- */

/* -objects: every load object of the data, as er_print lists them (" <name> (path)"), with what
 * is wrong with it on the next line (its file changed, missing, without symbols). */
int view_objects_er(pstate_t *ps, const char *a)
{
    if (!pr_table(ps, ENG_KIND_LOADOBJECT, 0)) /* every object of the data is known */
        return 1;
    size_t n = sym_nobjects(ps->ses->sym);
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "objects");
        json_key(&j, "objects");
        json_arr_begin(&j);
    }
    for (size_t o = 0; o < n; o++) {
        if (eng_object_mode(ps->ses->eng, (uint32_t)o) == ENG_OBJ_DROP)
            continue; /* tally's own collector */
        const sym_object_t *so = sym_object(ps->ses->sym, (uint32_t)o);
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, so->name);
            json_key(&j, "path");
            json_str(&j, so->path);
            json_key(&j, "message");
            json_str(&j, so->message ? so->message : "");
            json_obj_end(&j);
            continue;
        }
        sink_printf(&ps->out, " <%s> (%s)\n", so->name, so->path);
        if (so->message && *so->message)
            sink_printf(&ps->out, "    %s\n", so->message);
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(&ps->out, "\n");
    }
    return 0;
}

/* Does NAME (a base name, a path, or er_print's "<name>") name object so? */
static int names_object(const char *want, size_t len, const sym_object_t *so)
{
    if (len > 2 && want[0] == '<' && want[len - 1] == '>') {
        want++;
        len -= 2;
    }
    return (strlen(so->name) == len && !strncmp(want, so->name, len)) ||
           (strlen(so->path) == len && !strncmp(want, so->path, len));
}

/* -object_select obj1,obj2: the functions of these load objects are shown, every other object
 * is one entry <name> (er_print's object_select). */
int set_object_select(pstate_t *ps, const char *a)
{
    if (!pr_table(ps, ENG_KIND_LOADOBJECT, 0))
        return 1;
    size_t n = sym_nobjects(ps->ses->sym);
    /* every name must be an object: check before changing anything */
    for (const char *p = a; *p;) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (size_t o = 0; o < n && !found; o++)
            found = names_object(p, len, sym_object(ps->ses->sym, (uint32_t)o));
        if (!found) {
            esc_fprintf(stderr, "tally: -object_select: no load object named '%.*s' in the data "
                                "(see -object_list)\n", (int)len, p);
            return 1;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    for (size_t o = 0; o < n; o++) {
        const sym_object_t *so = sym_object(ps->ses->sym, (uint32_t)o);
        if (eng_object_mode(ps->ses->eng, (uint32_t)o) == ENG_OBJ_DROP)
            continue;
        int sel = 0;
        for (const char *p = a; *p && !sel;) {
            size_t len = strcspn(p, ",");
            sel = names_object(p, len, so);
            p += len;
            if (*p == ',')
                p++;
        }
        eng_set_object_mode(ps->ses->eng, (uint32_t)o, sel ? ENG_OBJ_SHOW : ENG_OBJ_HIDE);
    }
    return 0;
}

/* -cmetric_list: the callers-callees metrics and their order, in er_print's two lines. */
int view_cmetric_list(pstate_t *ps, const char *a)
{
    if (ps->json)
        return view_metric_list(ps);
    char st[160] = "Name";
    if (ps->sort_metric >= 0)
        snprintf(st, sizeof st, "Attributed %s ( a.%s )",
                 eng_metric(ps->ses->eng, ps->sort_metric)->title,
                 eng_metric(ps->ses->eng, ps->sort_metric)->name);
    sink_printf(&ps->out, "Current caller-callee metrics: %s\nCurrent caller-callee sort Metric: %s\n",
                ps->cmetrics.text, st);
    return 0;
}

/* -object_list as er_print's table: each object's mode, "<name>", its number, its path. */
int pr_object_list_er(pstate_t *ps)
{
    static const char *const mode[] = { "show", "hide", "api ", "none" };
    size_t n = sym_nobjects(ps->ses->sym);
    int w = 11, pw = 4;
    for (size_t o = 0; o < n; o++) {
        const sym_object_t *so = sym_object(ps->ses->sym, (uint32_t)o);
        if ((int)strlen(so->name) + 2 > w)
            w = (int)strlen(so->name) + 2;
        if ((int)strlen(so->path) > pw)
            pw = (int)strlen(so->path);
    }
    char eq[512];
    memset(eq, '=', sizeof eq);
    sink_printf(&ps->out, "Sel  %-*s Index %-*s \n", w, "Load Object", pw, "Path");
    sink_printf(&ps->out, "==== %.*s ===== %.*s \n", w < 500 ? w : 500, eq, pw < 500 ? pw : 500, eq);
    for (size_t o = 0; o < n; o++) {
        int m = eng_object_mode(ps->ses->eng, (uint32_t)o);
        if (m == ENG_OBJ_DROP)
            continue;
        const sym_object_t *so = sym_object(ps->ses->sym, (uint32_t)o);
        sink_printf(&ps->out, "%s <%s>%*s %-5zu %s \n", mode[m & 3], so->name,
                    (int)(w - strlen(so->name) - 2), "", o, so->path);
    }
    return 0;
}

/* er_print's lists of threads (LWPs), samples and experiments ("Exp Sel Total" tables), which its
 * selection commands print after selecting; CPUs: -cpu_list. */
int pr_list_er(pstate_t *ps, int what)
{
    eng_t *g = ps->ses->eng;
    if (what == 'C')
        return view_cpu_list(ps, "");
    if (what == 'E') {
        sink_printf(&ps->out, "ID Sel  PID Experiment \n== === ==== ========== \n");
        for (size_t x = 0; x < ps->ses->nexps; x++)
            sink_printf(&ps->out, "%2zu yes %4u %s \n", x + 1, ps->ses->exps[x]->procs[0]->pid,
                        ps->ses->exps[x]->path);
        return 0;
    }
    sink_printf(&ps->out, "Exp Sel Total \n=== === ===== \n");
    for (size_t x = 0; x < ps->ses->nexps; x++) {
        size_t n = 0;
        if (what == 'T') {
            for (size_t i = 0; i < eng_nthreads(g); i++)
                n += eng_thread(g, i)->exp == x;
        } else { /* samples: those of the experiment's first process, as numbered by selections */
            n = ps->ses->exps[x]->procs[0]->nsamples;
        }
        sink_printf(&ps->out, "%3zu %3s %5zu \n", x + 1,
                    what == 'T' ? eng_thread_selection(g) : eng_sample_selection(g), n);
    }
    return 0;
}

/* -metric_list as er_print's: the current metrics and sort, then each metric the data has as
 * "Title: spec" lines (exclusive and inclusive), then the columns that are no metric. */
int pr_metric_list_er(pstate_t *ps)
{
    eng_t *g = ps->ses->eng;
    tally_err_t err = { 0 };
    if (eng_aggregate(g, &err))
        return pr_report(&err);
    int w = (int)strlen("PC Address");
    for (int m = 0; m < eng_nmetrics(g); m++)
        if (eng_has_metric(g, m) && (int)strlen(eng_metric(g, m)->title) + 10 > w)
            w = (int)strlen(eng_metric(g, m)->title) + 10;
    sink_printf(&ps->out, "Current metrics: %s\n", ps->metrics.text);
    if (ps->sort_metric < 0) {
        sink_printf(&ps->out, "Current Sort Metric: Name ( name )\n");
    } else {
        int pct = 0;
        for (int c = 0; c < ps->metrics.ncols; c++)
            if (ps->metrics.cols[c].flavor == ps->sort_flavor &&
                ps->metrics.cols[c].metric == ps->sort_metric)
                pct = ps->metrics.cols[c].percent;
        char st[160];
        sink_printf(&ps->out, "Current Sort Metric: %s ( %c.%s%s )\n", pr_sort_title(ps, st, sizeof st),
                    pr_flavor_char(ps->sort_flavor), pct ? "%" : "", eng_metric(g, ps->sort_metric)->name);
    }
    sink_printf(&ps->out, "Available metrics:\n");
    for (int m = 0; m < eng_nmetrics(g); m++) {
        if (!eng_has_metric(g, m))
            continue;
        const eng_metric_def_t *d = eng_metric(g, m);
        int pct = !strcmp(d->unit, "s"); /* er_print offers times as percentages too */
        for (int k = 0; k < 2; k++) {
            char label[256];
            snprintf(label, sizeof label, "%s %s", k ? "Inclusive" : "Exclusive", d->title);
            sink_printf(&ps->out, "%*s: %c.%s%s\n", w, label, k ? 'i' : 'e', pct ? "%" : "", d->name);
        }
    }
    sink_printf(&ps->out, "%*s: size\n%*s: address\n%*s: name\n\n", w, "Size", w, "PC Address", w,
                "Name");
    return 0;
}

/* ---- the call tree ----------------------------------------------------------------------------- */

/* -calltree as er_print's: the attributed column's three header lines, then each node in depth
 * first order (limited, <Total> counted) as "+-name", indented two columns a level, with "|" under
 * a node whose later siblings are still to come. */
#define ER_TREE_DEPTH_MAX 64
int pr_calltree_er(pstate_t *ps)
{
    tally_err_t err = { 0 };
    rep_opts_t o = pr_opts(ps);
    rep_tree_t t;
    if (rep_calltree(ps->ses, &o, &t, &err))
        return pr_report(&err);
    eng_t *g = ps->ses->eng;
    char spec[160];
    snprintf(spec, sizeof spec, "a.%%%s:name", eng_metric(g, t.metric)->name);
    mspec_t ms;
    pr_parse_mspec(g, spec, &ms, FL_A, &err);
    sink_printf(&ps->out, "Functions Call Tree. Metric: Attributed %s\n\n", eng_metric(g, t.metric)->title);
    typedef struct level {
        uint32_t node;
        size_t next;
    } level_t;
    size_t cap = 0, n = 0, max = ps->limit > 0 ? (size_t)ps->limit : SIZE_MAX;
    row_t *rows = NULL;
    char **names = NULL;
    level_t *lv = calloc(ER_TREE_DEPTH_MAX + 1, sizeof *lv);
    char more[ER_TREE_DEPTH_MAX + 1] = { 0 }; /* the node at depth d has later siblings */
    int rc = lv ? 0 : 1;
    /* depth first without recursion; levels deeper than ER_TREE_DEPTH_MAX are not entered */
    size_t depth = 0;
    uint32_t k = 0;
    while (!rc && n < max) {
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 256;
            row_t *r = realloc(rows, nc * sizeof *r);
            char **nm = r ? realloc(names, nc * sizeof *nm) : NULL;
            if (r)
                rows = r;
            if (!nm) {
                rc = 1;
                break;
            }
            names = nm;
            cap = nc;
        }
        char prefix[4 * ER_TREE_DEPTH_MAX + 8];
        size_t pl = 0;
        for (size_t d = 0; d < depth; d++)
            pl += (size_t)snprintf(prefix + pl, sizeof prefix - pl, "%s",
                                   d > 0 && more[d] ? "|  " : "  ");
        prefix[pl] = 0;
        if (asprintf(&names[n], "%s+-%s", prefix, rep_tree_name(&t, k)) < 0) {
            rc = 1;
            break;
        }
        rows[n] = (row_t){ names[n], { NULL, NULL, t.tr->nodes[k].incl }, 0, k };
        n++;
        lv[depth] = (level_t){ k, t.kid_start[k] };
        depth++;
        if (depth > ER_TREE_DEPTH_MAX) /* its children are not shown */
            lv[depth - 1].next = t.kid_start[k + 1];
        while (depth && lv[depth - 1].next == t.kid_start[lv[depth - 1].node + 1])
            depth--;
        if (!depth)
            break;
        level_t *p = &lv[depth - 1];
        k = t.kids[p->next++];
        more[depth] = p->next < t.kid_start[p->node + 1];
    }
    if (!rc)
        pr_table_text(ps, &ms, rows, n, t.total);
    sink_printf(&ps->out, "\n");
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(rows);
    free(lv);
    rep_tree_free(&t);
    if (rc)
        esc_fprintf(stderr, "tally: out of memory printing the call tree\n");
    return rc;
}
