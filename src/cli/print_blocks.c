/*
 * print_blocks.c - the views of profiled blocks (spec 004): -callstack [N|all] (the performance
 * callstack at monitor points, Table 1's columns), -callstack_history [BLOCK] and -blocks (the
 * whole-run profile per thread and summed, and the call paths). They format the model of
 * analyzer/report_blocks.h; times are shown in seconds (JSON: seconds as numbers).
 */
#include <stdlib.h>
#include <string.h>

#include "print.h"

#define NO_BLOCKS                                                                                 \
    "no profiled blocks were recorded: the program calls no tally_start/tally_stop (include/"    \
    "tally.h), is not built with -finstrument-functions, or was collected with --blocks=off"

static int load(pstate_t *ps, rep_blocks_t *b)
{
    tally_err_t err = { 0 };
    if (rep_blocks(ps->ses, b, &err))
        return pr_report(&err);
    for (size_t i = 0; i < b->nnotes; i++)
        esc_fprintf(stderr, "tally: %s\n", b->notes[i]);
    return 0;
}

static double sec(uint64_t ns)
{
    return (double)ns / 1e9;
}

/* A value of quantity q as shown: seconds for a time, the count for a counter; and the digits
 * shown after the point. */
static double qv(const rep_blocks_t *b, unsigned q, double v)
{
    return b->qtime[q] ? v / 1e9 : v;
}
static int qp(const rep_blocks_t *b, unsigned q, int prec)
{
    return b->qtime[q] ? prec : 0;
}

/* "Excl. (s)" for one quantity, "Excl. cpu (s)" when there are several; a counter's has no
 * unit ("Excl. page-faults"). */
static void col_title(char *buf, size_t n, const rep_blocks_t *b, unsigned q, const char *what)
{
    if (b->nq == 1 && b->qtime[q])
        snprintf(buf, n, "%s (s)", what);
    else
        snprintf(buf, n, "%s %s%s", what, b->qname[q], b->qtime[q] ? " (s)" : "");
}

static int name_width(const rep_brow_t *rows, size_t n, int min)
{
    int w = min;
    for (size_t i = 0; i < n; i++) {
        int l = (int)strlen(rows[i].name);
        if (l > w)
            w = l;
    }
    return w > 60 ? 60 : w;
}

/* JSON members of a row: calls, subrs, then excl/incl (and inst_*) of the first quantity, and
 * of each further quantity with its name as suffix (excl_cpu, ...). */
static void jvals(json_t *j, const rep_blocks_t *b, const rep_bvals_t *v, int inst)
{
    json_key(j, "calls");
    json_u64(j, v->calls);
    json_key(j, "subrs");
    json_u64(j, v->subrs);
    for (unsigned q = 0; q < b->nq; q++) {
        const char *sfx = q ? "_" : "", *qn = q ? b->qname[q] : "";
        json_keyf(j, "excl%s%s", sfx, qn);
        json_num(j, qv(b, q, (double)v->excl[q]));
        json_keyf(j, "incl%s%s", sfx, qn);
        json_num(j, qv(b, q, (double)v->incl[q]));
        if (inst) {
            json_keyf(j, "inst_excl%s%s", sfx, qn);
            json_num(j, qv(b, q, (double)v->iexcl[q]));
            json_keyf(j, "inst_incl%s%s", sfx, qn);
            json_num(j, qv(b, q, (double)v->iincl[q]));
        }
    }
}

static void jquantities(json_t *j, const rep_blocks_t *b)
{
    json_key(j, "quantities");
    json_arr_begin(j);
    for (unsigned q = 0; q < b->nq; q++)
        json_str(j, b->qname[q]);
    json_arr_end(j);
}

/* ---- -callstack ------------------------------------------------------------------------------ */

static void callstack_text(pstate_t *ps, const rep_blocks_t *b, const rep_bmon_t *m)
{
    sink_t *o = &ps->out;
    sink_printf(o, "Performance callstack at monitor point %llu%s%s%s of thread %u (process %u), "
                   "%.6f s\n\n",
                (unsigned long long)m->n, m->label[0] ? " \"" : "", m->label,
                m->label[0] ? "\"" : "", m->tid, m->p->pid, sec(m->t));
    int w = name_width(m->rows, m->nrows, 20);
    sink_printf(o, "%-*s %8s %8s", w, "Block on callstack", "Calls", "Subrs");
    char t[64];
    for (unsigned q = 0; q < b->nq; q++) {
        col_title(t, sizeof t, b, q, "Excl.");
        sink_printf(o, " %14s", t);
        col_title(t, sizeof t, b, q, "Incl.");
        sink_printf(o, " %14s", t);
        col_title(t, sizeof t, b, q, "Inst. Excl.");
        sink_printf(o, " %18s", t);
        col_title(t, sizeof t, b, q, "Inst. Incl.");
        sink_printf(o, " %18s", t);
    }
    sink_printf(o, "\n");
    for (size_t i = 0; i < m->nrows; i++) {
        const rep_brow_t *r = &m->rows[i];
        sink_printf(o, "%-*s %8llu %8llu", w, r->name, (unsigned long long)r->v.calls,
                    (unsigned long long)r->v.subrs);
        for (unsigned q = 0; q < b->nq; q++)
            sink_printf(o, " %14.*f %14.*f %18.*f %18.*f", qp(b, q, 6),
                        qv(b, q, (double)r->v.excl[q]), qp(b, q, 6), qv(b, q, (double)r->v.incl[q]),
                        qp(b, q, 6), qv(b, q, (double)r->v.iexcl[q]), qp(b, q, 6),
                        qv(b, q, (double)r->v.iincl[q]));
        sink_printf(o, "\n");
    }
    sink_printf(o, "\n");
}

static void callstack_json(json_t *j, const rep_blocks_t *b, const rep_bmon_t *m)
{
    json_obj_begin(j);
    json_key(j, "n");
    json_u64(j, m->n);
    json_key(j, "label");
    json_str(j, m->label);
    json_key(j, "pid");
    json_u64(j, m->p->pid);
    json_key(j, "tid");
    json_u64(j, m->tid);
    json_key(j, "t");
    json_num(j, sec(m->t));
    json_key(j, "rows");
    json_arr_begin(j);
    for (size_t i = 0; i < m->nrows; i++) {
        json_obj_begin(j);
        json_key(j, "name");
        json_str(j, m->rows[i].name);
        jvals(j, b, &m->rows[i].v, 1);
        json_obj_end(j);
    }
    json_arr_end(j);
    json_obj_end(j);
}

int view_callstack(pstate_t *ps, const char *arg)
{
    unsigned long long want = 0; /* 0: all */
    if (arg && *arg && strcmp(arg, "all")) {
        char *end;
        want = strtoull(arg, &end, 10);
        if (*end || !want || arg[0] == '-') {
            esc_fprintf(stderr, "tally: -callstack '%s': give a monitor point number (1, 2, ...) "
                                "or all\n", arg);
            return 2;
        }
    }
    rep_blocks_t b;
    if (load(ps, &b))
        return 1;
    uint64_t most = 0;
    for (size_t i = 0; i < b.nmons; i++)
        most = b.mons[i].n > most ? b.mons[i].n : most;
    if (want && want > most) {
        if (most)
            esc_fprintf(stderr, "tally: -callstack %llu: no thread took that many monitor points "
                                "(at most %llu)\n", want, (unsigned long long)most);
        else
            esc_fprintf(stderr, "tally: -callstack: no monitor point was taken (the program "
                                "calls no tally_monitor or TAU_MONITOR)\n");
        rep_blocks_free(&b);
        return 1;
    }
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "callstack");
        jquantities(&j, &b);
        json_key(&j, "callstacks");
        json_arr_begin(&j);
    } else if (!b.nmons) {
        sink_printf(&ps->out, "No monitor points: %s.\n",
                    b.nthreads ? "the program calls no tally_monitor or TAU_MONITOR" : NO_BLOCKS);
    }
    for (size_t i = 0; i < b.nmons; i++) {
        if (want && b.mons[i].n != want)
            continue;
        if (ps->json)
            callstack_json(&j, &b, &b.mons[i]);
        else
            callstack_text(ps, &b, &b.mons[i]);
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    }
    rep_blocks_free(&b);
    return 0;
}

/* ---- -callstack_history -------------------------------------------------------------------- */

int view_callstack_history(pstate_t *ps, const char *arg)
{
    rep_blocks_t b;
    if (load(ps, &b))
        return 1;
    const char *block = arg && *arg ? arg : NULL;
    rep_bhist_t *h;
    size_t n;
    tally_err_t err = { 0 };
    if (rep_blocks_history(&b, block, &h, &n, &err)) {
        rep_blocks_free(&b);
        return pr_report(&err);
    }
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "callstack_history");
        jquantities(&j, &b);
        json_key(&j, "history");
        json_arr_begin(&j);
    } else {
        sink_printf(o, "Callstack trace history%s%s: each block's statistics at each monitor "
                       "point it is on the callstack, and the change since the previous one\n\n",
                    block ? " of " : "", block ? block : "");
        if (!b.nmons)
            sink_printf(o, "No monitor points.\n");
    }
    const rep_bmon_t *last = NULL;
    for (size_t i = 0; i < n; i++) {
        const rep_bhist_t *x = &h[i];
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, x->row->name);
            json_key(&j, "n");
            json_u64(&j, x->mon->n);
            json_key(&j, "label");
            json_str(&j, x->mon->label);
            json_key(&j, "pid");
            json_u64(&j, x->mon->p->pid);
            json_key(&j, "tid");
            json_u64(&j, x->mon->tid);
            json_key(&j, "t");
            json_num(&j, sec(x->mon->t));
            jvals(&j, &b, &x->row->v, 1);
            json_key(&j, "d_calls");
            json_u64(&j, x->dcalls);
            for (unsigned q = 0; q < b.nq; q++) {
                const char *sfx = q ? "_" : "", *qn = q ? b.qname[q] : "";
                json_keyf(&j, "d_excl%s%s", sfx, qn);
                json_num(&j, qv(&b, q, (double)x->dexcl[q]));
                json_keyf(&j, "d_incl%s%s", sfx, qn);
                json_num(&j, qv(&b, q, (double)x->dincl[q]));
            }
            json_obj_end(&j);
            continue;
        }
        if (x->mon != last) {
            sink_printf(o, "%smonitor point %llu%s%s%s, thread %u (process %u), %.6f s\n",
                        last ? "\n" : "", (unsigned long long)x->mon->n,
                        x->mon->label[0] ? " \"" : "", x->mon->label,
                        x->mon->label[0] ? "\"" : "", x->mon->tid, x->mon->p->pid,
                        sec(x->mon->t));
            sink_printf(o, "  %-24s %8s %8s %8s", "Block", "Calls", "+Calls", "Subrs");
            char t[64];
            for (unsigned q = 0; q < b.nq; q++) {
                col_title(t, sizeof t, &b, q, "Excl.");
                sink_printf(o, " %14s", t);
                col_title(t, sizeof t, &b, q, "+Excl.");
                sink_printf(o, " %14s", t);
                col_title(t, sizeof t, &b, q, "Incl.");
                sink_printf(o, " %14s", t);
                col_title(t, sizeof t, &b, q, "+Incl.");
                sink_printf(o, " %14s", t);
            }
            sink_printf(o, "\n");
            last = x->mon;
        }
        sink_printf(o, "  %-24s %8llu %8llu %8llu", x->row->name,
                    (unsigned long long)x->row->v.calls, (unsigned long long)x->dcalls,
                    (unsigned long long)x->row->v.subrs);
        for (unsigned q = 0; q < b.nq; q++)
            sink_printf(o, " %14.*f %+14.*f %14.*f %+14.*f", qp(&b, q, 6),
                        qv(&b, q, (double)x->row->v.excl[q]), qp(&b, q, 6),
                        qv(&b, q, (double)x->dexcl[q]), qp(&b, q, 6),
                        qv(&b, q, (double)x->row->v.incl[q]), qp(&b, q, 6),
                        qv(&b, q, (double)x->dincl[q]));
        sink_printf(o, "\n");
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "\n");
    }
    free(h);
    rep_blocks_free(&b);
    return 0;
}

/* ---- -blocks ----------------------------------------------------------------------------------- */

static void profile_text(pstate_t *ps, const rep_blocks_t *b, const rep_brow_t *rows, size_t n)
{
    sink_t *o = &ps->out;
    int w = name_width(rows, n, 16);
    char t[64];
    sink_printf(o, "%-*s %10s %10s", w, "Block", "Calls", "Subrs");
    for (unsigned q = 0; q < b->nq; q++) {
        col_title(t, sizeof t, b, q, "Excl.");
        sink_printf(o, " %14s", t);
        col_title(t, sizeof t, b, q, "Incl.");
        sink_printf(o, " %14s", t);
        col_title(t, sizeof t, b, q, "Incl./call");
        sink_printf(o, " %17s", t);
    }
    sink_printf(o, "\n");
    for (size_t i = 0; i < n; i++) {
        const rep_brow_t *r = &rows[i];
        sink_printf(o, "%-*s %10llu %10llu", w, r->name, (unsigned long long)r->v.calls,
                    (unsigned long long)r->v.subrs);
        for (unsigned q = 0; q < b->nq; q++)
            sink_printf(o, " %14.*f %14.*f %17.9f", qp(b, q, 6), qv(b, q, (double)r->v.excl[q]),
                        qp(b, q, 6), qv(b, q, (double)r->v.incl[q]),
                        r->v.calls ? qv(b, q, (double)r->v.incl[q]) / (double)r->v.calls : 0.0);
        sink_printf(o, "\n");
    }
}

static void jprofile(json_t *j, const rep_blocks_t *b, const rep_brow_t *rows, size_t n)
{
    json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        json_obj_begin(j);
        json_key(j, "name");
        json_str(j, rows[i].name);
        json_key(j, "group");
        json_str(j, rows[i].group);
        jvals(j, b, &rows[i].v, 0);
        json_obj_end(j);
    }
    json_arr_end(j);
}

int view_blocks(pstate_t *ps, const char *arg)
{
    (void)arg;
    rep_blocks_t b;
    if (load(ps, &b))
        return 1;
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "blocks");
        jquantities(&j, &b);
        json_key(&j, "total");
        jprofile(&j, &b, b.total, b.ntotal);
        json_key(&j, "threads");
        json_arr_begin(&j);
    } else if (!b.nthreads) {
        sink_printf(o, "%s.\n", NO_BLOCKS);
    } else {
        sink_printf(o, "Profiled blocks, all threads (%s)\n\n",
                    b.nq == 1 && !strcmp(b.qname[0], "wall") ? "wall-clock time"
                    : b.nq == 1 && !b.qtime[0]               ? "counts"
                                                             : "seconds and counts");
        profile_text(ps, &b, b.total, b.ntotal);
    }
    for (size_t i = 0; i < b.nthreads; i++) {
        const rep_bthread_t *t = &b.threads[i];
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "pid");
            json_u64(&j, t->p->pid);
            json_key(&j, "tid");
            json_u64(&j, t->tid);
            json_key(&j, "unmatched");
            json_u64(&j, t->unmatched);
            json_key(&j, "lost");
            json_u64(&j, t->lost);
            json_key(&j, "blocks");
            jprofile(&j, &b, t->rows, t->nrows);
            json_key(&j, "paths");
            json_arr_begin(&j);
            for (size_t k = 0; k < t->npaths; k++) {
                const rep_bpath_t *p = &t->paths[k];
                json_obj_begin(&j);
                json_key(&j, "name");
                json_str(&j, p->name);
                json_key(&j, "parent");
                json_i64(&j, p->parent);
                json_key(&j, "depth");
                json_u64(&j, p->depth);
                jvals(&j, &b, &p->v, 0);
                json_obj_end(&j);
            }
            json_arr_end(&j);
            json_obj_end(&j);
            continue;
        }
        sink_printf(o, "\nThread %u (process %u)\n\n", t->tid, t->p->pid);
        if (t->unmatched || t->lost)
            sink_printf(o, "(%llu exits ended blocks above them on the stack; %llu entries not "
                           "recorded for lack of memory)\n",
                        (unsigned long long)t->unmatched, (unsigned long long)t->lost);
        profile_text(ps, &b, t->rows, t->nrows);
        sink_printf(o, "\nCall paths of blocks (thread %u)\n\n%10s %10s", t->tid, "Calls",
                    "Subrs");
        char tt[64];
        for (unsigned q = 0; q < b.nq; q++) {
            col_title(tt, sizeof tt, &b, q, "Excl.");
            sink_printf(o, " %14s", tt);
            col_title(tt, sizeof tt, &b, q, "Incl.");
            sink_printf(o, " %14s", tt);
        }
        sink_printf(o, "  Path\n");
        for (size_t k = 0; k < t->npaths; k++) {
            const rep_bpath_t *p = &t->paths[k];
            sink_printf(o, "%10llu %10llu", (unsigned long long)p->v.calls,
                        (unsigned long long)p->v.subrs);
            for (unsigned q = 0; q < b.nq; q++)
                sink_printf(o, " %14.*f %14.*f", qp(&b, q, 6), qv(&b, q, (double)p->v.excl[q]),
                            qp(&b, q, 6), qv(&b, q, (double)p->v.incl[q]));
            sink_printf(o, "  %*s%s\n", (int)(p->depth > 40 ? 80 : 2 * p->depth), "", p->name);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "\n");
    }
    rep_blocks_free(&b);
    return 0;
}

/* ---- -kind functions|blocks ------------------------------------------------------------------- */

/* The metrics of the block kind: each quantity inclusive then exclusive, then the calls; the
 * callers-callees ones attributed; sorted by the first quantity's inclusive (outer blocks
 * first, as -blocks lists them). */
static int block_mspecs(pstate_t *ps, mspec_t *m, mspec_t *cm, tally_err_t *err)
{
    eng_t *g = ps->ses->eng;
    char a[512] = "", c[512] = "";
    size_t n = 0, cn = 0;
    for (int q = 0; eng_block_metric(g, q) >= 0 && n < 400 && cn < 400; q++) {
        const char *nm = eng_metric(g, eng_block_metric(g, q))->name;
        n += (size_t)snprintf(a + n, sizeof a - n, "i.%s:e.%s:", nm, nm);
        cn += (size_t)snprintf(c + cn, sizeof c - cn, "a.%s:", nm);
    }
    const char *calls = eng_metric(g, eng_block_metric(g, -1))->name;
    snprintf(a + n, sizeof a - n, "e.%s:name", calls);
    snprintf(c + cn, sizeof c - cn, "a.%s:name", calls);
    if (pr_parse_mspec(g, a, m, FL_E | FL_I, err) || pr_parse_mspec(g, c, cm, FL_A, err))
        return -1;
    return 0;
}

int set_kind(pstate_t *ps, const char *arg)
{
    int kind = !strcmp(arg, "functions") ? ENG_KIND_FUNCTION
               : !strcmp(arg, "blocks")  ? ENG_KIND_BLOCK
                                         : -1;
    if (kind < 0) {
        esc_fprintf(stderr, "tally: -kind '%s': use functions (the program's functions, from "
                    "samples and traces) or blocks (its profiled blocks)\n", arg);
        return 2;
    }
    if (kind == ps->kind)
        return 0;
    if (kind == ENG_KIND_BLOCK && eng_block_metric(ps->ses->eng, -1) < 0) {
        esc_fprintf(stderr, "tally: -kind blocks: %s\n", NO_BLOCKS);
        return 1;
    }
    /* each kind keeps its own metrics and sort: swap them */
    mspec_t m = ps->other_metrics, cm = ps->other_cmetrics;
    int sf = ps->other_sort_flavor, sm = ps->other_sort_metric;
    if (!ps->other_set) { /* the block kind's first time: its defaults */
        tally_err_t err = { 0 };
        if (block_mspecs(ps, &m, &cm, &err))
            return pr_report(&err);
        sf = m.cols[0].flavor;
        sm = m.cols[0].metric;
    }
    ps->other_metrics = ps->metrics, ps->other_cmetrics = ps->cmetrics;
    ps->other_sort_flavor = ps->sort_flavor, ps->other_sort_metric = ps->sort_metric;
    ps->other_set = 1;
    ps->metrics = m, ps->cmetrics = cm;
    ps->sort_flavor = sf, ps->sort_metric = sm;
    ps->kind = kind;
    return 0;
}
