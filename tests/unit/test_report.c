/*
 * test_report.c - the report models (src/analyzer/report_table.c) on a synthetic experiment built
 * here: its one load object is this test program, its stacks are made of the PCs of three
 * functions below, with known weights. Checked: the rows of -functions (sorted, limited, named),
 * callers-callees, the call tree's order, one function's summary, finding a function by a
 * misspelt name, and the stacks the exporters write (per stack, per thread and stack, per event).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "analyzer/report.h"
#include "analyzer/session.h"
#include "experiment/evwriter.h"
#include "experiment/logfile.h"
#include "selfexp.h"

/* The functions the stacks are made of (never called: only their addresses are used). */
__attribute__((noinline, used)) int rp_leaf(int x) { return x * 3 + 1; }
__attribute__((noinline, used)) int rp_mid(int x) { return rp_leaf(x) + 2; }
__attribute__((noinline, used)) int rp_top(int x) { return rp_mid(x) + rp_leaf(x); }

static char dir[256];
#define MS 1000000ull

static void write_experiment(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-report-%d.tally", getpid());
    const uint64_t L = selfexp_pc_in((void *)rp_leaf), M = selfexp_pc_in((void *)rp_mid),
                   T = selfexp_pc_in((void *)rp_top);
    /* leaf first: leaf<-mid<-top 3 ms, mid<-top 2 ms, top 1 ms, leaf<-top 4 ms */
    const selfexp_stack_t stacks[] = { { { L, M, T }, 3, 3 * MS }, { { M, T }, 2, 2 * MS },
                                       { { T }, 1, 1 * MS }, { { L, T }, 2, 4 * MS } };
    selfexp_write(dir, stacks, sizeof stacks / sizeof *stacks);
}

static int setup(void **state)
{
    write_experiment();
    ses_t *s = ses_new();
    tally_err_t err = { 0 };
    assert_int_equal(ses_open(s, dir, &err), 0);
    assert_int_equal(ses_start(s, &err), 0);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    ses_free(*state);
    return selfexp_remove(dir);
}

static const rep_opts_t by_excl = { 0, REP_FL_E, ENG_M_TOTALCPU, 0, ENG_KIND_FUNCTION };

static void test_table(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_table_t rt;
    assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &by_excl, &rt, &err), 0);
    assert_int_equal(rt.total[ENG_M_TOTALCPU], 10 * MS);
    assert_string_equal(rt.total_row.name, "<Total>");
    assert_int_equal(rt.n, 3);
    const char *names[] = { "rp_leaf", "rp_mid", "rp_top" };
    const uint64_t ex[] = { 7 * MS, 2 * MS, 1 * MS }, in[] = { 7 * MS, 5 * MS, 10 * MS };
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(rt.rows[i].name, names[i]);
        assert_int_equal(rep_row_value(&rt.rows[i], REP_FL_E, ENG_M_TOTALCPU), ex[i]);
        assert_int_equal(rep_row_value(&rt.rows[i], REP_FL_I, ENG_M_TOTALCPU), in[i]);
        assert_int_equal(rep_row_value(&rt.rows[i], REP_FL_A, ENG_M_TOTALCPU), 0); /* none */
    }
    rep_table_free(&rt);
    /* by inclusive, limited to 2 */
    rep_opts_t o = { 0, REP_FL_I, ENG_M_TOTALCPU, 2, ENG_KIND_FUNCTION };
    assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &o, &rt, &err), 0);
    assert_int_equal(rt.n, 2);
    assert_string_equal(rt.rows[0].name, "rp_top");
    assert_string_equal(rt.rows[1].name, "rp_leaf");
    rep_table_free(&rt);
    /* by name */
    o = (rep_opts_t){ 0, REP_FL_E, -1, 0, ENG_KIND_FUNCTION };
    assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &o, &rt, &err), 0);
    assert_string_equal(rt.rows[0].name, "rp_leaf");
    assert_string_equal(rt.rows[2].name, "rp_top");
    rep_table_free(&rt);
    /* load objects: one, holding everything */
    assert_int_equal(rep_table(s, ENG_KIND_LOADOBJECT, &by_excl, &rt, &err), 0);
    assert_int_equal(rt.n, 1);
    assert_int_equal(rep_row_value(&rt.rows[0], REP_FL_E, ENG_M_TOTALCPU), 10 * MS);
    rep_table_free(&rt);
}

/* Object modes: the test program's object shown (its functions), hidden (one row for the object)
 * or by its API (only the functions it is entered by: rp_top, the root of every stack, takes
 * what its callees in the object had); back to showing every function afterwards. */
static void test_object_modes(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_table_t rt;
    assert_int_equal(eng_nobjects(s->eng, ENG_KIND_LOADOBJECT) >= 1, 1);
    uint32_t obj = eng_function_object(s->eng, 0);
    assert_true(obj != UINT32_MAX);
    for (int mode = ENG_OBJ_HIDE; mode <= ENG_OBJ_API; mode++) {
        eng_set_object_mode(s->eng, obj, mode);
        assert_int_equal(eng_object_mode(s->eng, obj), mode);
        assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &by_excl, &rt, &err), 0);
        assert_int_equal(rt.total[ENG_M_TOTALCPU], 10 * MS);
        assert_int_equal(rt.n, 1);
        if (mode == ENG_OBJ_HIDE)
            assert_non_null(strstr(rt.rows[0].name, "<")); /* <object name> */
        else
            assert_string_equal(rt.rows[0].name, "rp_top");
        assert_int_equal(rep_row_value(&rt.rows[0], REP_FL_E, ENG_M_TOTALCPU), 10 * MS);
        assert_int_equal(rep_row_value(&rt.rows[0], REP_FL_I, ENG_M_TOTALCPU), 10 * MS);
        rep_table_free(&rt);
    }
    eng_reset_object_modes(s->eng);
    assert_int_equal(eng_object_mode(s->eng, obj), ENG_OBJ_SHOW);
    assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &by_excl, &rt, &err), 0);
    assert_int_equal(rt.n, 3);
    rep_table_free(&rt);
}

static void test_callers_callees(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_cc_t cc;
    assert_int_equal(rep_callers_callees(s, &by_excl, "rp_mid", &cc, &err), 0);
    assert_int_equal(cc.n, 1);
    const rep_cc_entry_t *e = &cc.entries[0];
    assert_string_equal(e->name, "rp_mid");
    assert_int_equal(e->excl[ENG_M_TOTALCPU], 2 * MS);
    assert_int_equal(e->incl[ENG_M_TOTALCPU], 5 * MS);
    assert_int_equal(e->ncallers, 1);
    assert_string_equal(e->callers[0].name, "rp_top");
    assert_int_equal(rep_row_value(&e->callers[0], REP_FL_A, ENG_M_TOTALCPU), 5 * MS);
    assert_int_equal(e->ncallees, 1);
    assert_string_equal(e->callees[0].name, "rp_leaf");
    assert_int_equal(rep_row_value(&e->callees[0], REP_FL_A, ENG_M_TOTALCPU), 3 * MS);
    rep_cc_free(&cc);
    /* every function, callees of rp_top sorted by attributed value: mid 5, leaf 4 */
    assert_int_equal(rep_callers_callees(s, &by_excl, NULL, &cc, &err), 0);
    assert_int_equal(cc.n, 3);
    assert_string_equal(cc.entries[2].name, "rp_top");
    assert_int_equal(cc.entries[2].ncallers, 0);
    assert_int_equal(cc.entries[2].ncallees, 2);
    assert_string_equal(cc.entries[2].callees[0].name, "rp_mid");
    assert_string_equal(cc.entries[2].callees[1].name, "rp_leaf");
    rep_cc_free(&cc);
    /* a misspelt name: not found, with the suggestion */
    assert_int_equal(rep_callers_callees(s, &by_excl, "rp_mdi", &cc, &err), TALLY_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no function named 'rp_mdi'"));
    assert_non_null(strstr(err.msg, "did you mean: rp_mid"));
}

static void test_calltree(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_tree_t t;
    assert_int_equal(rep_calltree(s, &by_excl, &t, &err), 0);
    assert_int_equal(t.metric, ENG_M_TOTALCPU);
    assert_string_equal(rep_tree_name(&t, 0), "<Total>");
    /* <Total> -> rp_top -> { rp_mid -> rp_leaf, rp_leaf } */
    assert_int_equal(t.kid_start[1] - t.kid_start[0], 1);
    uint32_t top = t.kids[t.kid_start[0]];
    assert_string_equal(rep_tree_name(&t, top), "rp_top");
    assert_int_equal(t.tr->nodes[top].incl[ENG_M_TOTALCPU], 10 * MS);
    assert_int_equal(t.kid_start[top + 1] - t.kid_start[top], 2);
    uint32_t a = t.kids[t.kid_start[top]], b = t.kids[t.kid_start[top] + 1];
    assert_string_equal(rep_tree_name(&t, a), "rp_mid");
    assert_int_equal(t.tr->nodes[a].incl[ENG_M_TOTALCPU], 5 * MS);
    assert_string_equal(rep_tree_name(&t, b), "rp_leaf");
    assert_int_equal(t.tr->nodes[b].incl[ENG_M_TOTALCPU], 4 * MS);
    assert_int_equal(t.kid_start[b + 1] - t.kid_start[b], 0);
    rep_tree_free(&t);
}

static void test_function(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_func_t f;
    assert_int_equal(rep_function(s, &by_excl, "rp_top", &f, &err), 0);
    assert_string_equal(f.name, "rp_top");
    assert_int_equal(f.excl[ENG_M_TOTALCPU], 1 * MS);
    assert_int_equal(f.incl[ENG_M_TOTALCPU], 10 * MS);
    assert_true(f.size > 0);
    assert_non_null(f.file);
    assert_non_null(strstr(f.file, "test_report.c"));
    assert_true(f.line > 0);
    rep_func_free(&f);
}

static void test_run(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_overview_t ov;
    assert_int_equal(rep_overview(s, &ov, &err), 0);
    assert_int_equal(ov.nprocs, 1);
    assert_int_equal(ov.nthreads, 1);
    assert_string_equal(ov.ended, "exited with status 0");
    assert_int_equal(ov.total[ENG_M_TOTALCPU], 10 * MS);
    uint64_t t0, t1;
    double d = rep_run_span(s, &t0, &t1);
    assert_int_equal(t0, 1000);
    assert_int_equal(t1, 9000);
    assert_true(d == ov.duration);
    assert_true(d == (double)(t1 - t0) * 1e-9);
    rep_header_t h;
    assert_int_equal(rep_header(s, &h, &err), 0);
    assert_int_equal(h.nexps, 1);
    assert_int_equal(h.stats->events, 4);
    assert_int_equal(h.exps[0].e->nprocs, 1);
    assert_true(h.exps[0].procs[0].duration_known);
    assert_true(h.exps[0].procs[0].duration == d); /* one process: its span is the run's */
    /* no statistics record: the samples are counted in the events */
    assert_true(h.exps[0].procs[0].counted_known);
    assert_int_equal(h.exps[0].procs[0].counted, 4);
    rep_header_free(&h);
    rep_threads_t th;
    assert_int_equal(rep_threads(s, &th, &err), 0);
    assert_int_equal(th.n, 1);
    assert_string_equal(th.selection, "all");
    assert_string_equal(th.threads[0].process, "(root)");
    assert_int_equal(th.threads[0].t->value[ENG_M_TOTALCPU], 10 * MS);
    rep_threads_free(&th);
}

static void test_timeline(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_timeline_t tl;
    assert_int_equal(rep_timeline(s, 0, &tl, &err), 0);
    assert_false(tl.empty);
    assert_true(tl.span == 8000 * 1e-9); /* the run's span: 1000 to 9000 ns */
    assert_int_equal(tl.nrows, 1);
    /* events at 3000, 4000, 5000, 6000 ns: columns 15, 23, 31, 39 of 64; rp_leaf wins two */
    assert_int_equal(tl.nlegend, 3);
    /* marks no function name can be: 1 for the most cells, then 2, 3 */
    assert_int_equal(tl.legend[0].letter, '1');
    assert_string_equal(tl.legend[0].name, "rp_leaf");
    const char *c = tl.rows[0].cells;
    assert_int_equal(strlen(c), REP_TL_COLS);
    assert_int_equal(c[15], '1');
    assert_int_equal(c[39], '1');
    assert_true(c[23] == '2' || c[23] == '3');
    assert_true(c[31] == '2' || c[31] == '3');
    assert_int_equal(c[0], ' ');
    assert_int_equal(c[63], ' ');
    rep_timeline_free(&tl);
    /* per-sample totals: no sample packets, everything in sample 0 */
    rep_buckets_t b;
    assert_int_equal(rep_sample_totals(s, &b, &err), 0);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.v[ENG_M_TOTALCPU], 10 * MS);
    rep_buckets_free(&b);
}

/* Functions per time column: where each event falls, and that summing a range of columns gives
 * the function table under the filter of that range, for every function (report_range.c). */
static void test_time_functions(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_tfuncs_t tf;
    assert_int_equal(rep_time_functions(s, ENG_M_TOTALCPU, 0, &tf, &err), 0);
    assert_int_equal(tf.ncols, REP_TF_COLS);
    assert_int_equal(tf.col_ns, 8000 / REP_TF_COLS + 1); /* the span 8000 ns, the end inside */
    /* events at TSTAMP 2000, 3000, 4000, 5000 ns */
    const uint32_t cols[4] = { 2000 / tf.col_ns, 3000 / tf.col_ns, 4000 / tf.col_ns,
                               5000 / tf.col_ns };
    const uint64_t w[4] = { 3 * MS, 2 * MS, 1 * MS, 4 * MS };
    uint64_t sum = 0;
    for (uint32_t k = 0; k < tf.ncols; k++) {
        uint64_t want = 0;
        for (int e = 0; e < 4; e++)
            want += cols[e] == k ? w[e] : 0;
        assert_int_equal(tf.total[k], want);
        sum += tf.total[k];
    }
    assert_int_equal(sum, 10 * MS);
    for (size_t i = 1; i < tf.n; i++) /* sorted by column, then function */
        assert_true(tf.cells[i - 1].col < tf.cells[i].col ||
                    (tf.cells[i - 1].col == tf.cells[i].col &&
                     tf.cells[i - 1].fn < tf.cells[i].fn));
    /* ranges of columns against the table under the same time filter */
    const uint32_t ranges[][2] = { { 0, REP_TF_COLS }, { cols[1], cols[3] + 1 },
                                   { cols[0], cols[2] }, { cols[3], REP_TF_COLS } };
    for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
        uint32_t a = ranges[r][0], b = ranges[r][1];
        char flt[128];
        if (b >= tf.ncols)
            snprintf(flt, sizeof flt, "TSTAMP >= %llu", (unsigned long long)(a * tf.col_ns));
        else
            snprintf(flt, sizeof flt, "TSTAMP >= %llu && TSTAMP < %llu",
                     (unsigned long long)(a * tf.col_ns), (unsigned long long)(b * tf.col_ns));
        assert_int_equal(eng_set_filter(s->eng, flt, &err), 0);
        rep_table_t t;
        assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &by_excl, &t, &err), 0);
        size_t present = 0;
        for (size_t i = 0; i < t.n; i++) {
            uint64_t ex = 0, in = 0;
            int seen = 0;
            for (size_t c = 0; c < tf.n; c++)
                if (tf.cells[c].fn == t.rows[i].id && tf.cells[c].col >= a && tf.cells[c].col < b) {
                    ex += tf.cells[c].ex;
                    in += tf.cells[c].in;
                    seen = 1;
                }
            assert_int_equal(ex, rep_row_value(&t.rows[i], REP_FL_E, ENG_M_TOTALCPU));
            assert_int_equal(in, rep_row_value(&t.rows[i], REP_FL_I, ENG_M_TOTALCPU));
            present += seen;
        }
        /* and no function has cells in the range that the table does not list */
        size_t listed = 0;
        for (size_t f = 0; f < t.names.n; f++) {
            int any = 0;
            for (size_t c = 0; c < tf.n && !any; c++)
                any = tf.cells[c].fn == f && tf.cells[c].col >= a && tf.cells[c].col < b;
            listed += any;
        }
        assert_int_equal(present, listed);
        assert_int_equal(present, t.n);
        rep_table_free(&t);
    }
    assert_int_equal(eng_set_filter(s->eng, "", &err), 0);
    rep_tfuncs_free(&tf);
}

static void test_source_disasm(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_disasm_t d;
    assert_int_equal(rep_disasm(s, &by_excl, ENG_M_TOTALCPU, "rp_mid", &d, &err), 0);
    assert_string_equal(d.function, "rp_mid");
    assert_true(d.n > 0);
    assert_int_equal(d.fn.ex[ENG_M_TOTALCPU], 2 * MS);
    assert_int_equal(d.fn.in[ENG_M_TOTALCPU], 5 * MS);
    uint64_t sum = 0;
    int with = 0, calls_leaf = 0;
    for (size_t i = 0; i < d.n; i++) {
        uint64_t x = rep_annot_ex(&d.insns[i].a, d.zeros)[ENG_M_TOTALCPU];
        sum += x;
        with += x != 0;
        calls_leaf |= !strcmp(d.insns[i].callee, "rp_leaf");
    }
    assert_int_equal(sum, 2 * MS); /* all on the instruction holding the sampled PC */
    assert_int_equal(with, 1);
    assert_int_equal(d.max, 2 * MS);
    assert_true(calls_leaf);
    rep_disasm_free(&d);

    rep_source_t v;
    assert_int_equal(rep_source(s, &by_excl, ENG_M_TOTALCPU, "rp_mid", NULL, NULL, &v, &err), 0);
    assert_true(v.is_function);
    assert_non_null(strstr(v.file, "test_report.c"));
    assert_non_null(v.src); /* found where the debug information says */
    assert_true(v.lo <= v.hi);
    assert_int_equal(v.total.in[ENG_M_TOTALCPU], 5 * MS);
    /* the function's rows add up to its exclusive */
    uint64_t rows = rep_annot_ex(&v.generated, v.zeros)[ENG_M_TOTALCPU] +
                    rep_annot_ex(&v.nolines, v.zeros)[ENG_M_TOTALCPU];
    for (uint32_t l = 0; l <= v.limit; l++)
        rows += rep_annot_ex(&v.lv[l], v.zeros)[ENG_M_TOTALCPU];
    for (size_t i = 0; i <= REP_MAX_OTHER; i++)
        rows += rep_annot_ex(&v.other[i], v.zeros)[ENG_M_TOTALCPU];
    assert_int_equal(rows, 2 * MS);
    rep_source_free(&v);
    /* not a function nor a file with data */
    assert_int_equal(rep_source(s, &by_excl, ENG_M_TOTALCPU, "nosuch", NULL, NULL, &v, &err),
                     TALLY_ENOTFOUND);
}

/* What the stacks models give, summed per function as a reader of an export would. */
typedef struct sum_ctx {
    ses_t *s;
    uint64_t ex[3], in[3]; /* rp_leaf, rp_mid, rp_top */
    int calls, with_thread;
    uint64_t last_t;
} sum_ctx_t;

static int fn_index(ses_t *s, uint32_t id)
{
    const char *name = eng_object_name(s->eng, ENG_KIND_FUNCTION, id, 0);
    return !strcmp(name, "rp_leaf") ? 0 : !strcmp(name, "rp_mid") ? 1
         : !strcmp(name, "rp_top") ? 2 : -1;
}

static void sum_stack(sum_ctx_t *c, const eng_mapped_t *m, uint64_t v)
{
    int seen[3] = { 0 };
    assert_true(m->n >= 1);
    for (uint32_t i = 0; i < m->n; i++) {
        int k = fn_index(c->s, m->ids[i]);
        assert_true(k >= 0);
        assert_true(m->frame[i] < m->npcs); /* each id names the raw frame it comes from */
        if (i == 0)
            c->ex[k] += v;
        if (!seen[k]++)
            c->in[k] += v;
    }
}

static int on_stack(void *ctx, const rep_stack_t *st)
{
    sum_ctx_t *c = ctx;
    c->calls++;
    c->with_thread += st->thread != NULL && st->thread->tid == 42;
    sum_stack(c, st->m, st->v[ENG_M_TOTALCPU]);
    return 0;
}

static int on_event(void *ctx, const rep_event_t *e)
{
    sum_ctx_t *c = ctx;
    assert_non_null(e->m);
    assert_true(e->ev->t > c->last_t); /* in time order */
    c->last_t = e->ev->t;
    return on_stack(ctx, &(rep_stack_t){ e->m, e->thread, e->v });
}

static void test_stacks(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    const uint64_t ex[] = { 7 * MS, 2 * MS, 1 * MS }, in[] = { 7 * MS, 5 * MS, 10 * MS };
    for (int mode = 0; mode < 3; mode++) { /* merged, per thread, per event */
        sum_ctx_t c = { .s = s };
        int metric = ENG_M_TOTALCPU;
        int rc = mode == 2 ? rep_events(s, on_event, &c, &err)
                           : rep_stacks(s, mode, &metric, 1, on_stack, &c, &err);
        assert_int_equal(rc, 0);
        assert_int_equal(c.calls, 4);
        assert_int_equal(c.with_thread, mode ? 4 : 0);
        for (int k = 0; k < 3; k++) {
            assert_int_equal(c.ex[k], ex[k]);
            assert_int_equal(c.in[k], in[k]);
        }
    }
    rep_names_t nm;
    assert_int_equal(rep_stack_names(s, 0, &nm, &err), 0);
    int named = 0;
    for (size_t i = 0; i < nm.n; i++)
        named += nm.name[i] && fn_index(s, (uint32_t)i) >= 0;
    assert_int_equal(named, 3);
    rep_names_free(&nm);
}

static void test_end_text(void **state)
{
    exp_process_t p;
    memset(&p, 0, sizeof p);
    char buf[256];
    rep_end_text(&p, buf, sizeof buf);
    assert_non_null(strstr(buf, "ended without a record"));
    p.has_end = 1;
    p.end_how = (char *)"signal";
    p.end_signal = 9;
    p.end_signame = (char *)"SIGKILL";
    rep_end_text(&p, buf, sizeof buf);
    assert_string_equal(buf, "killed by signal 9 (SIGKILL)");
    p.end_how = (char *)"exec";
    rep_end_text(&p, buf, sizeof buf);
    assert_string_equal(buf, "replaced its image by exec");
}

static void test_suggest(void **state)
{
    char buf[128] = "no such thing";
    const char *c[] = { "alpha", NULL, "beta", "hot.constprop.0" };
    rep_suggest(buf, sizeof buf, "hot", c, 4);
    assert_string_equal(buf, "no such thing; did you mean: hot.constprop.0, beta?"); /* alpha: too far */
    strcpy(buf, "x");
    rep_suggest(buf, sizeof buf, "zzzzzzzz", c, 4);
    assert_string_equal(buf, "x");
}

static void test_sync_names(void **state)
{
    char buf[64];
    rep_sync_name("table_lock", 0, EXP_SYNC_MUTEX_LOCK, buf, sizeof buf);
    assert_string_equal(buf, "table_lock");
    rep_sync_name("locks", 40, EXP_SYNC_MUTEX_LOCK, buf, sizeof buf);
    assert_string_equal(buf, "locks+40");
    rep_sync_name(NULL, 0, EXP_SYNC_JOIN, buf, sizeof buf);
    assert_string_equal(buf, "<thread>");
    rep_sync_name(NULL, 0, EXP_SYNC_COND_WAIT, buf, sizeof buf);
    assert_string_equal(buf, "<unknown>");
    assert_string_equal(rep_sync_kind(EXP_SYNC_RWLOCK_TIMEDWRLOCK), "rwlock");
    assert_string_equal(rep_sync_kind(EXP_SYNC_JOIN), "thread");
    assert_string_equal(rep_sync_kind(9999), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_object_modes),
        cmocka_unit_test(test_callers_callees),
        cmocka_unit_test(test_calltree),
        cmocka_unit_test(test_function),
        cmocka_unit_test(test_run),
        cmocka_unit_test(test_timeline),
        cmocka_unit_test(test_time_functions),
        cmocka_unit_test(test_source_disasm),
        cmocka_unit_test(test_stacks),
        cmocka_unit_test(test_end_text),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_sync_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
