/*
 * test_blockkind.c - profiled blocks as an object kind of the engine (ENG_KIND_BLOCK,
 * analyzer/blockstacks.c) on an experiment written here: two threads' call paths of blocks with
 * two quantities (wall, cpu) in a virtual clock. Thread 1 is the seed's example (spec 004: main
 * { 0, foo { 5 } 10, bar { 15, foo { 20 .. 30 } 30 } 35), thread 2 a recursion (main { rec {
 * rec } }). Checked exactly: the block table (calls, exclusive, inclusive, the recursion counted
 * once), callers-callees (attributed time and the calls made along each edge), the call tree
 * per path, a thread selection, filters on threads and block names, the selections that cannot
 * apply (samples, CPUs, time) refused with a message, a malformed paths line skipped, and the
 * function kind untouched by the block metrics.
 */
#define _GNU_SOURCE
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
#include "experiment/logfile.h"

static char dir[256];

static void line(int fd, const char *kind, const char *k1, uint64_t v1, const char *k2,
                 const char *s2, const char *k3, const char *s3)
{
    char buf[4096];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, kind);
    if (k1)
        exp_line_u64(&l, k1, v1);
    if (k2)
        exp_line_str(&l, k2, s2);
    if (k3)
        exp_line_str(&l, k3, s3);
    assert_int_equal(exp_line_write(&l, fd), 0);
}

static void paths(int fd, uint32_t tid, uint64_t first, const char *rows)
{
    char buf[4096];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "block-paths");
    exp_line_u64(&l, "t", 50000);
    exp_line_u64(&l, "tid", tid);
    exp_line_u64(&l, "first", first);
    exp_line_str(&l, "rows", rows);
    assert_int_equal(exp_line_write(&l, fd), 0);
}

static void write_experiment(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-blockkind-%d.tally", getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    line(fd, "start", "t", 1000, NULL, NULL, NULL, NULL);
    line(fd, "settings", NULL, 0, "block_metrics", "wall,cpu", NULL, NULL);
    line(fd, "sample", "t", 1000, "reason", "start", NULL, NULL);
    line(fd, "block", "id", 0, "name", "main", "group", "default");
    line(fd, "block", "id", 1, "name", "foo", "group", "default");
    line(fd, "block", "id", 2, "name", "bar", "group", "default");
    line(fd, "block", "id", 3, "name", "rec", "group", "default");
    /* parent,id,calls,subrs, then wall excl,incl and cpu excl,incl; cpu is wall / 5 */
    paths(fd, 101, 1, "0,0,1,2,15,35,3,7;1,1,1,0,5,5,1,1");
    paths(fd, 101, 3, "1,2,1,1,5,15,1,3;3,1,1,0,10,10,2,2"); /* the rest, a second line */
    paths(fd, 102, 1, "0,0,1,1,3,10,0,2;1,3,1,1,2,7,0,1;2,3,1,0,5,5,1,1");
    paths(fd, 103, 1, "0,0,1,0,9,9"); /* malformed (one quantity short): skipped */
    line(fd, "sample", "t", 60000, "reason", "end", NULL, NULL);
    line(fd, "end", "t", 60000, "how", "exit", NULL, NULL);
    close(fd);
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
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

typedef struct want {
    const char *name;
    uint64_t calls, excl, incl, cexcl;
} want_t;

static long id_of(eng_t *g, const eng_table_t *t, const char *name)
{
    for (size_t id = 0; id < t->nobjects; id++)
        if (t->present[id] && !strcmp(eng_object_name(g, ENG_KIND_BLOCK, (uint32_t)id, 0), name))
            return (long)id;
    return -1;
}

/* The table has exactly the blocks of want, with these values. */
static void check_table(ses_t *s, const want_t *w, size_t n)
{
    eng_t *g = s->eng;
    tally_err_t err = { 0 };
    const eng_table_t *t = eng_compute(g, ENG_KIND_BLOCK, 0, &err);
    assert_non_null(t);
    int mc = eng_block_metric(g, -1), mw = eng_block_metric(g, 0), mu = eng_block_metric(g, 1);
    size_t present = 0;
    for (size_t id = 0; id < t->nobjects; id++)
        present += t->present[id] != 0;
    assert_int_equal(present, n);
    for (size_t i = 0; i < n; i++) {
        long id = id_of(g, t, w[i].name);
        assert_true(id >= 0);
        const uint64_t *ex = t->excl + (size_t)id * (size_t)t->nmetrics;
        const uint64_t *in = t->incl + (size_t)id * (size_t)t->nmetrics;
        assert_int_equal(ex[mc], w[i].calls);
        assert_int_equal(in[mc], w[i].calls); /* the calls are the block's own */
        assert_int_equal(ex[mw], w[i].excl);
        assert_int_equal(in[mw], w[i].incl);
        assert_int_equal(ex[mu], w[i].cexcl);
        assert_int_equal(ex[ENG_M_TOTALCPU], 0);
    }
}

static void test_metrics(void **state)
{
    ses_t *s = *state;
    eng_t *g = s->eng;
    assert_string_equal(eng_metric(g, eng_block_metric(g, -1))->name, "bcalls");
    assert_string_equal(eng_metric(g, eng_block_metric(g, 0))->name, "bwall");
    assert_string_equal(eng_metric(g, eng_block_metric(g, 1))->name, "bcpu");
    assert_int_equal(eng_block_metric(g, 2), -1);
    assert_true(eng_is_block_metric(g, eng_block_metric(g, 1)));
    assert_false(eng_is_block_metric(g, ENG_M_TOTALCPU));
}

static void test_table(void **state)
{
    /* main: 15 + 3 exclusive, 35 + 10 inclusive; rec: 2 + 5 exclusive, inclusive 7 (its
     * recursive instance not counted again); foo in main and in bar */
    const want_t w[] = { { "main", 2, 18, 45, 3 }, { "foo", 2, 15, 15, 3 },
                         { "bar", 1, 5, 15, 1 },   { "rec", 2, 7, 7, 1 } };
    check_table(*state, w, 4);
    const uint64_t *tot = eng_total(((ses_t *)*state)->eng);
    assert_int_equal(tot[eng_block_metric(((ses_t *)*state)->eng, 0)], 45);
    assert_int_equal(tot[eng_block_metric(((ses_t *)*state)->eng, -1)], 7);
}

static const rep_opts_t blocks_by_incl = { 0, REP_FL_I, -1, 0, ENG_KIND_BLOCK };

/* Attributed (wall, calls) of the caller or callee other of entry e. */
static void edge(const rep_cc_entry_t *e, int callee, const char *other, uint64_t wall,
                 uint64_t calls, int mw, int mc)
{
    const rep_row_t *r = callee ? e->callees : e->callers;
    size_t n = callee ? e->ncallees : e->ncallers;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(r[i].name, other)) {
            assert_int_equal(r[i].v[2][mw], wall);
            assert_int_equal(r[i].v[2][mc], calls);
            return;
        }
    fail_msg("%s has no %s %s", e->name, callee ? "callee" : "caller", other);
}

static void test_callers_callees(void **state)
{
    ses_t *s = *state;
    int mw = eng_block_metric(s->eng, 0), mc = eng_block_metric(s->eng, -1);
    rep_opts_t o = blocks_by_incl;
    o.sort_metric = mw;
    tally_err_t err = { 0 };
    rep_cc_t cc;
    assert_int_equal(rep_callers_callees(s, &o, NULL, &cc, &err), 0);
    assert_int_equal(cc.n, 4);
    assert_string_equal(cc.entries[0].name, "main"); /* by inclusive wall */
    const rep_cc_entry_t *e = &cc.entries[0];
    assert_int_equal(e->ncallers, 0);
    assert_int_equal(e->ncallees, 3);
    edge(e, 1, "bar", 15, 1, mw, mc);
    edge(e, 1, "rec", 7, 1, mw, mc);
    edge(e, 1, "foo", 5, 1, mw, mc);
    rep_cc_free(&cc);

    assert_int_equal(rep_callers_callees(s, &o, "foo", &cc, &err), 0);
    assert_int_equal(cc.n, 1);
    e = &cc.entries[0];
    assert_int_equal(e->ncallers, 2);
    edge(e, 0, "bar", 10, 1, mw, mc);
    edge(e, 0, "main", 5, 1, mw, mc);
    assert_int_equal(e->ncallees, 0);
    rep_cc_free(&cc);

    assert_int_equal(rep_callers_callees(s, &o, "bar", &cc, &err), 0);
    e = &cc.entries[0];
    assert_int_equal(e->ncallers, 1);
    edge(e, 0, "main", 15, 1, mw, mc); /* bar's whole time, and bar's one call */
    edge(e, 1, "foo", 10, 1, mw, mc);
    rep_cc_free(&cc);

    /* a recursion: rec's callers are main (its outer instance) and rec (the inner one) */
    assert_int_equal(rep_callers_callees(s, &o, "rec", &cc, &err), 0);
    e = &cc.entries[0];
    assert_int_equal(e->ncallers, 2);
    edge(e, 0, "main", 2, 1, mw, mc);
    edge(e, 0, "rec", 5, 1, mw, mc);
    rep_cc_free(&cc);

    assert_int_equal(rep_callers_callees(s, &o, "baz", &cc, &err), TALLY_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no profiled block named 'baz'"));
}

/* The node reached from the root by the names of path (outermost first), or -1. */
static long node_at(const rep_tree_t *t, const char *const *path, size_t n)
{
    uint32_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t next = UINT32_MAX;
        for (size_t c = t->kid_start[k]; c < t->kid_start[k + 1]; c++)
            if (!strcmp(rep_tree_name(t, t->kids[c]), path[i]))
                next = t->kids[c];
        if (next == UINT32_MAX)
            return -1;
        k = next;
    }
    return k;
}

static void test_calltree(void **state)
{
    ses_t *s = *state;
    int mw = eng_block_metric(s->eng, 0), mc = eng_block_metric(s->eng, -1);
    rep_opts_t o = blocks_by_incl;
    tally_err_t err = { 0 };
    rep_tree_t t;
    assert_int_equal(rep_calltree(s, &o, &t, &err), 0);
    assert_int_equal(t.metric, mw); /* by the first quantity when no sort metric is set */
    static const struct {
        const char *path[3];
        size_t n;
        uint64_t calls, excl, incl;
    } w[] = {
        { { "main" }, 1, 2, 18, 45 },
        { { "main", "foo" }, 2, 1, 5, 5 },
        { { "main", "bar" }, 2, 1, 5, 15 },
        { { "main", "bar", "foo" }, 3, 1, 10, 10 },
        { { "main", "rec" }, 2, 1, 2, 7 },
        { { "main", "rec", "rec" }, 3, 1, 5, 5 },
    };
    for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
        long k = node_at(&t, w[i].path, w[i].n);
        assert_true(k > 0);
        const eng_node_t *nd = &t.tr->nodes[k];
        assert_int_equal(nd->incl[mc], w[i].calls);
        assert_int_equal(nd->excl[mc], w[i].calls);
        assert_int_equal(nd->excl[mw], w[i].excl);
        assert_int_equal(nd->incl[mw], w[i].incl);
    }
    assert_int_equal(t.tr->nnodes, 7); /* <Total> and the six paths */
    assert_int_equal(t.tr->nodes[0].incl[mw], 45);
    assert_int_equal(t.tr->nodes[0].incl[mc], 7);
    rep_tree_free(&t);
}

static void test_selection(void **state)
{
    ses_t *s = *state;
    eng_t *g = s->eng;
    tally_err_t err = { 0 };
    /* threads are numbered 101, 102 in order (103's paths were malformed, it has none) */
    assert_int_equal(eng_select_threads(g, "2", &err), 0);
    assert_int_equal(eng_aggregate(g, &err), 0);
    const want_t t2[] = { { "main", 1, 3, 10, 0 }, { "rec", 2, 7, 7, 1 } };
    check_table(s, t2, 2);
    assert_int_equal(eng_select_threads(g, "all", &err), 0);

    assert_int_equal(eng_set_filter(g, "THRID == 1", &err), 0);
    assert_int_equal(eng_aggregate(g, &err), 0);
    const want_t t1[] = { { "main", 1, 15, 35, 3 }, { "foo", 2, 15, 15, 3 },
                          { "bar", 1, 5, 15, 1 } };
    check_table(s, t1, 3);

    /* block names: the paths through bar (main is on them, with none of its own time) */
    assert_int_equal(eng_set_filter(g, "FNAME(\"ba*\") SOME IN STACK", &err), 0);
    assert_int_equal(eng_aggregate(g, &err), 0);
    const want_t fb[] = { { "main", 0, 0, 15, 0 }, { "bar", 1, 5, 15, 1 },
                          { "foo", 1, 10, 10, 2 } };
    check_table(s, fb, 3);
    assert_int_equal(eng_set_filter(g, "LEAF IN FNAME(\"rec\") && TID == 102", &err), 0);
    assert_int_equal(eng_aggregate(g, &err), 0);
    const want_t lr[] = { { "main", 0, 0, 7, 0 }, { "rec", 2, 7, 7, 1 } };
    check_table(s, lr, 2);

    /* what cannot apply to whole-run sums is refused, with what to do instead */
    assert_int_equal(eng_set_filter(g, "TSTAMP > 1s", &err), 0);
    assert_null(eng_compute(g, ENG_KIND_BLOCK, 0, &err));
    assert_int_equal(err.code, TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "a filter on TSTAMP"));
    assert_non_null(strstr(err.msg, "-thread_select"));
    assert_null(eng_calltree(g, ENG_KIND_BLOCK, &err));
    assert_int_equal(eng_set_filter(g, "none", &err), 0);
    assert_int_equal(eng_select_samples(g, "1", &err), 0);
    assert_null(eng_compute(g, ENG_KIND_BLOCK, 0, &err));
    assert_non_null(strstr(err.msg, "a sample selection (-sample_select)"));
    assert_int_equal(eng_select_samples(g, "all", &err), 0);
    assert_int_equal(eng_select_cpus(g, "0", &err), 0);
    assert_null(eng_compute(g, ENG_KIND_BLOCK, 0, &err));
    assert_non_null(strstr(err.msg, "a CPU selection (-cpu_select)"));
    assert_int_equal(eng_select_cpus(g, "all", &err), 0);
    assert_int_equal(eng_aggregate(g, &err), 0);
    const want_t all[] = { { "main", 2, 18, 45, 3 }, { "foo", 2, 15, 15, 3 },
                           { "bar", 1, 5, 15, 1 },   { "rec", 2, 7, 7, 1 } };
    check_table(s, all, 4);
}

/* The function kind knows nothing of blocks: no rows, and the block kind is not a frame kind. */
static void test_function_kind(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    const eng_table_t *t = eng_compute(s->eng, ENG_KIND_FUNCTION, 1, &err);
    assert_non_null(t);
    for (size_t id = 0; id < t->nobjects; id++)
        assert_false(t->present[id]);
    eng_mapped_t m;
    assert_int_equal(eng_map_stack(s->eng, 0, 0, ENG_KIND_BLOCK, &m, &err), TALLY_EUSAGE);
}

/* Two experiments in one session: blocks are named by name across them, and an id the second
 * one never declared is not named by the first one's declarations (its paths are skipped). */
static void test_two_experiments(void **state)
{
    (void)state;
    char second[300];
    snprintf(second, sizeof second, "%s.2", dir);
    assert_int_equal(mkdir(second, 0755), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/log", second);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    line(fd, "start", "t", 1000, NULL, NULL, NULL, NULL);
    line(fd, "settings", NULL, 0, "block_metrics", "wall,cpu", NULL, NULL);
    line(fd, "block", "id", 5, "name", "solo", "group", "default");
    line(fd, "block", "id", 6, "name", "main", "group", "default");
    paths(fd, 201, 1, "0,2,1,0,1,1,0,0");                   /* id 2: not declared here */
    paths(fd, 202, 1, "0,6,1,1,1,5,0,0;1,5,1,0,4,4,1,1"); /* main { solo } */
    line(fd, "end", "t", 60000, "how", "exit", NULL, NULL);
    close(fd);
    ses_t *s = ses_new();
    tally_err_t err = { 0 };
    assert_int_equal(ses_open(s, dir, &err), 0);
    assert_int_equal(ses_open(s, second, &err), 0);
    assert_int_equal(ses_start(s, &err), 0);
    const want_t w[] = { { "main", 3, 19, 50, 3 }, { "foo", 2, 15, 15, 3 },
                         { "bar", 1, 5, 15, 1 },   { "rec", 2, 7, 7, 1 },
                         { "solo", 1, 4, 4, 1 } };
    check_table(s, w, 5);
    ses_free(s);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", second);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_callers_callees),
        cmocka_unit_test(test_calltree),
        cmocka_unit_test(test_selection),
        cmocka_unit_test(test_function_kind),
        cmocka_unit_test(test_two_experiments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
