/*
 * report_table.c - the models of the metric views: display names, sorted rows, tables,
 * callers-callees, the call tree, one function. See report.h.
 *
 * Sections: rows and sorting; names; suggestions and finding a function; tables;
 * callers-callees; call tree; one function.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/report.h"

/* ---- rows and sorting ------------------------------------------------------------------------ */

static int fl_index(int fl) { return fl == REP_FL_E ? 0 : fl == REP_FL_I ? 1 : 2; }

uint64_t rep_row_value(const rep_row_t *r, int fl, int metric)
{
    const uint64_t *v = r->v[fl_index(fl)];
    return v ? v[metric] : 0;
}

typedef struct sort_key {
    int flavor, metric;
} sort_key_t;

static int cmp_rows(const void *a, const void *b, void *arg)
{
    const rep_row_t *x = a, *y = b;
    const sort_key_t *k = arg;
    if (k->metric >= 0) {
        uint64_t vx = rep_row_value(x, k->flavor, k->metric);
        uint64_t vy = rep_row_value(y, k->flavor, k->metric);
        if (vx != vy)
            return vx > vy ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

void rep_sort_rows(rep_row_t *rows, size_t n, int flavor, int metric)
{
    sort_key_t k = { flavor, metric };
    if (n) /* rows may be NULL when there are none */
        qsort_r(rows, n, sizeof *rows, cmp_rows, &k);
}

/* ---- names ----------------------------------------------------------------------------------- */

static int cmp_name_ptr(const void *a, const void *b)
{
    const char *const *x = *(const char *const **)a, *const *y = *(const char *const **)b;
    return strcmp(*x, *y);
}

static int oom(tally_err_t *err) { return tally_errf(err, TALLY_ENOMEM, "out of memory"); }

int rep_names_build(eng_t *eng, const eng_table_t *t, int namefmt, rep_names_t *nm,
                    tally_err_t *err)
{
    nm->n = t->nobjects;
    nm->name = calloc(nm->n + 1, sizeof *nm->name);
    nm->owned = calloc(nm->n + 1, sizeof *nm->owned);
    const char ***order = malloc((nm->n + 1) * sizeof *order);
    if (!nm->name || !nm->owned || !order)
        goto nomem;
    size_t k = 0;
    for (size_t id = 0; id < nm->n; id++) {
        if (!t->present[id])
            continue;
        nm->name[id] = eng_object_name(eng, t->kind, (uint32_t)id, namefmt);
        if (t->kind == ENG_KIND_PC || t->kind == ENG_KIND_LINE) { /* made in one buffer */
            if (!(nm->owned[id] = strdup(nm->name[id])))
                goto nomem;
            nm->name[id] = nm->owned[id];
        }
        order[k++] = &nm->name[id];
    }
    if (t->kind == ENG_KIND_FUNCTION) {
        if (k)
            qsort(order, k, sizeof *order, cmp_name_ptr);
        for (size_t i = 0; i < k;) {
            size_t j = i + 1;
            while (j < k && !strcmp(*order[i], *order[j]))
                j++;
            if (j - i > 1) {
                for (size_t m = i; m < j; m++) {
                    size_t id = (size_t)(order[m] - nm->name);
                    uint32_t o = eng_function_object(eng, (uint32_t)id);
                    const char *on = o == UINT32_MAX
                                         ? "<Unknown>"
                                         : eng_object_name(eng, ENG_KIND_LOADOBJECT, o, 0);
                    int shared = 0; /* another function of this name in the same object */
                    for (size_t q = i; q < j && !shared; q++)
                        shared = q != m &&
                                 eng_function_object(eng, (uint32_t)(order[q] - nm->name)) == o;
                    uint64_t addr = eng_function_addr(eng, (uint32_t)id);
                    int r = !shared ? asprintf(&nm->owned[id], "%s (%s)", nm->name[id], on)
                            : addr  ? asprintf(&nm->owned[id], "%s (%s, 0x%" PRIx64 ")",
                                               nm->name[id], on, addr)
                                    : asprintf(&nm->owned[id], "%s (%s, inlined)", nm->name[id],
                                               on);
                    if (r < 0) {
                        nm->owned[id] = NULL;
                        goto nomem;
                    }
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
    return 0;
nomem:
    free(order);
    rep_names_free(nm);
    return oom(err);
}

void rep_names_free(rep_names_t *nm)
{
    for (size_t i = 0; nm->owned && i < nm->n; i++)
        free(nm->owned[i]);
    free(nm->owned);
    free(nm->name);
    *nm = (rep_names_t){ 0 };
}

/* ---- suggestions and finding a function ------------------------------------------------------ */

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

void rep_suggest(char *buf, size_t n, const char *want, const char *const *cands, size_t ncands)
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

long rep_find_function(eng_t *eng, const eng_table_t *t, const rep_names_t *nm, const char *name,
                       tally_err_t *err)
{
    long found = -1;
    int ambiguous = 0;
    for (size_t id = 0; id < t->nobjects; id++) {
        if (!t->present[id])
            continue;
        const char *alts[4] = { nm->name[id], eng_object_name(eng, t->kind, (uint32_t)id, 0),
                                eng_object_name(eng, t->kind, (uint32_t)id, 1),
                                eng_object_name(eng, t->kind, (uint32_t)id, 2) };
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
    if (found >= 0 && ambiguous)
        return tally_errf(err, TALLY_EUSAGE, "function name '%s' is ambiguous: several "
                          "functions have it; name one as -functions lists them, "
                          "'NAME (object)' or 'NAME (object, address)'", name);
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
    if (found >= 0)
        return found;
    tally_errf(err, TALLY_ENOTFOUND, "no %s named '%s' in the data",
               t->kind == ENG_KIND_BLOCK ? "profiled block" : "function", name);
    rep_suggest(err->msg, sizeof err->msg, name, nm->name, nm->n);
    return TALLY_ENOTFOUND;
}

/* ---- tables ---------------------------------------------------------------------------------- */

int rep_table(ses_t *s, int kind, const rep_opts_t *o, rep_table_t *out, tally_err_t *err)
{
    *out = (rep_table_t){ .kind = kind };
    const eng_table_t *t = eng_compute(s->eng, kind, 0, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    out->t = t;
    out->total = eng_total(s->eng);
    out->total_row = (rep_row_t){ "<Total>", { out->total, out->total, NULL }, 0, UINT32_MAX };
    int rc = rep_names_build(s->eng, t, o->namefmt, &out->names, err);
    if (rc)
        return rc;
    out->rows = malloc((t->nobjects + 1) * sizeof *out->rows);
    if (!out->rows) {
        rep_table_free(out);
        return oom(err);
    }
    size_t n = 0;
    for (size_t id = 0; id < t->nobjects; id++)
        if (t->present[id])
            out->rows[n++] = (rep_row_t){ out->names.name[id],
                                          { t->excl + id * (size_t)t->nmetrics,
                                            t->incl + id * (size_t)t->nmetrics, NULL },
                                          0, (uint32_t)id };
    rep_sort_rows(out->rows, n, o->sort_flavor, o->sort_metric);
    if (o->limit > 0 && (size_t)o->limit < n)
        n = (size_t)o->limit;
    out->n = n;
    return 0;
}

void rep_table_free(rep_table_t *rt)
{
    free(rt->rows);
    rep_names_free(&rt->names);
    rt->rows = NULL;
    rt->n = 0;
}

/* ---- callers-callees ------------------------------------------------------------------------- */

static int cc_entry(const eng_table_t *t, const rep_names_t *nm, const rep_opts_t *o, uint32_t x,
                    rep_cc_entry_t *e)
{
    size_t c0 = t->caller_start[x], c1 = t->caller_start[x + 1];
    size_t e0 = t->callee_start[x], e1 = t->callee_start[x + 1];
    *e = (rep_cc_entry_t){ .id = x, .name = nm->name[x],
                           .excl = t->excl + (size_t)x * (size_t)t->nmetrics,
                           .incl = t->incl + (size_t)x * (size_t)t->nmetrics,
                           .ncallers = c1 - c0, .ncallees = e1 - e0 };
    e->callers = malloc((c1 - c0 + 1) * sizeof *e->callers);
    e->callees = malloc((e1 - e0 + 1) * sizeof *e->callees);
    if (!e->callers || !e->callees)
        return -1;
    for (size_t i = c0; i < c1; i++)
        e->callers[i - c0] = (rep_row_t){ nm->name[t->callers[i].other],
                                          { NULL, NULL, t->callers[i].value }, 0,
                                          t->callers[i].other };
    for (size_t i = e0; i < e1; i++)
        e->callees[i - e0] = (rep_row_t){ nm->name[t->callees[i].other],
                                          { NULL, NULL, t->callees[i].value }, 0,
                                          t->callees[i].other };
    rep_sort_rows(e->callers, e->ncallers, REP_FL_A, o->sort_metric);
    rep_sort_rows(e->callees, e->ncallees, REP_FL_A, o->sort_metric);
    return 0;
}

int rep_callers_callees(ses_t *s, const rep_opts_t *o, const char *single, rep_cc_t *out,
                        tally_err_t *err)
{
    *out = (rep_cc_t){ 0 };
    const eng_table_t *t = eng_compute(s->eng, o->kind, 1, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    out->total = eng_total(s->eng);
    int rc = rep_names_build(s->eng, t, o->namefmt, &out->names, err);
    if (rc)
        return rc;
    uint32_t *ids = malloc((t->nobjects + 1) * sizeof *ids);
    rep_row_t *rows = single ? NULL : malloc((t->nobjects + 1) * sizeof *rows);
    size_t n = 0;
    if (!ids || (!single && !rows)) {
        rc = oom(err);
        goto out;
    }
    if (single) {
        long id = rep_find_function(s->eng, t, &out->names, single, err);
        if (id < 0) {
            rc = (int)id;
            goto out;
        }
        ids[n++] = (uint32_t)id;
    } else {
        for (size_t id = 0; id < t->nobjects; id++)
            if (t->present[id])
                rows[n++] = (rep_row_t){ out->names.name[id],
                                         { t->excl + id * (size_t)t->nmetrics,
                                           t->incl + id * (size_t)t->nmetrics, NULL },
                                         0, (uint32_t)id };
        rep_sort_rows(rows, n, o->sort_flavor, o->sort_metric);
        if (o->limit > 0 && (size_t)o->limit < n)
            n = (size_t)o->limit;
        for (size_t i = 0; i < n; i++)
            ids[i] = rows[i].id;
    }
    out->entries = calloc(n + 1, sizeof *out->entries);
    if (!out->entries) {
        rc = oom(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        out->n = i + 1;
        if (cc_entry(t, &out->names, o, ids[i], &out->entries[i])) {
            rc = oom(err);
            goto out;
        }
    }
out:
    free(ids);
    free(rows);
    if (rc)
        rep_cc_free(out);
    return rc;
}

void rep_cc_free(rep_cc_t *cc)
{
    for (size_t i = 0; i < cc->n; i++) {
        free(cc->entries[i].callers);
        free(cc->entries[i].callees);
    }
    free(cc->entries);
    rep_names_free(&cc->names);
    *cc = (rep_cc_t){ 0 };
}

/* ---- call tree ------------------------------------------------------------------------------- */

typedef struct tree_sort {
    const eng_node_t *nodes;
    int metric;
} tree_sort_t;

static int cmp_nodes(const void *a, const void *b, void *arg)
{
    const tree_sort_t *k = arg;
    const eng_node_t *x = &k->nodes[*(const uint32_t *)a], *y = &k->nodes[*(const uint32_t *)b];
    uint64_t vx = x->incl[k->metric], vy = y->incl[k->metric];
    return vx > vy ? -1 : vx < vy;
}

const char *rep_tree_name(const rep_tree_t *t, uint32_t k)
{
    return k == 0 ? "<Total>" : t->names.name[t->tr->nodes[k].object];
}

int rep_calltree(ses_t *s, const rep_opts_t *o, rep_tree_t *out, tally_err_t *err)
{
    *out = (rep_tree_t){ 0 };
    const eng_table_t *t = eng_compute(s->eng, o->kind, 0, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    const eng_tree_t *tr = eng_calltree(s->eng, o->kind, err);
    if (!tr)
        return err->code ? err->code : TALLY_ENOMEM;
    out->tr = tr;
    out->total = eng_total(s->eng);
    out->metric = o->sort_metric >= 0                                    ? o->sort_metric
                  : o->kind == ENG_KIND_BLOCK && eng_block_metric(s->eng, 0) >= 0
                      ? eng_block_metric(s->eng, 0)
                      : ENG_M_TOTALCPU;
    int rc = rep_names_build(s->eng, t, o->namefmt, &out->names, err);
    if (rc)
        return rc;
    out->kid_start = calloc(tr->nnodes + 1, sizeof *out->kid_start);
    out->kids = malloc((tr->nnodes + 1) * sizeof *out->kids);
    if (!out->kid_start || !out->kids) {
        rep_tree_free(out);
        return oom(err);
    }
    /* every node but the root is one parent's child: children laid out parent by parent */
    size_t at = 0;
    tree_sort_t key = { tr->nodes, out->metric };
    for (size_t k = 0; k < tr->nnodes; k++) {
        out->kid_start[k] = at;
        for (uint32_t c = tr->nodes[k].first_child; c != UINT32_MAX; c = tr->nodes[c].next_sibling)
            out->kids[at++] = c;
        if (at > out->kid_start[k]) /* a leaf: no children to sort */
            qsort_r(out->kids + out->kid_start[k], at - out->kid_start[k], sizeof *out->kids,
                    cmp_nodes, &key);
    }
    out->kid_start[tr->nnodes] = at;
    return 0;
}

void rep_tree_free(rep_tree_t *t)
{
    free(t->kids);
    free(t->kid_start);
    rep_names_free(&t->names);
    *t = (rep_tree_t){ 0 };
}

/* ---- one function ---------------------------------------------------------------------------- */

int rep_function(ses_t *s, const rep_opts_t *o, const char *name, rep_func_t *out,
                 tally_err_t *err)
{
    *out = (rep_func_t){ 0 };
    const eng_table_t *t = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    int rc = rep_names_build(s->eng, t, o->namefmt, &out->names, err);
    if (rc)
        return rc;
    long id = rep_find_function(s->eng, t, &out->names, name, err);
    if (id < 0) {
        rep_names_free(&out->names);
        return (int)id;
    }
    const sym_func_t *f = sym_func(s->sym, (uint32_t)id);
    const sym_object_t *ob = f->object == UINT32_MAX ? NULL : sym_object(s->sym, f->object);
    out->id = (uint32_t)id;
    out->name = out->names.name[id];
    out->excl = t->excl + (size_t)id * (size_t)t->nmetrics;
    out->incl = t->incl + (size_t)id * (size_t)t->nmetrics;
    out->total = eng_total(s->eng);
    out->size = f->size;
    out->addr = f->addr;
    if (ob && f->size && sym_line_at(s->sym, f->object, f->addr, &out->file, &out->line))
        out->file = NULL;
    out->object = ob ? ob->path : "<Unknown>";
    out->mangled = f->mangled;
    return 0;
}

void rep_func_free(rep_func_t *f) { rep_names_free(&f->names); }
