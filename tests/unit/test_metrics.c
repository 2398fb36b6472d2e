/*
 * test_metrics.c - metrics decided at run time: the metric set built from the experiments'
 * declarations (union, order, the builtin metrics first and unchanged), the rules at a run-time
 * vector width, and the record contributors and the call tree of a whole engine over an
 * experiment written here through the format's writer (CLOCK, STATE, SYNC, HEAP_ALLOC, IO and
 * TRACE records of declared and undeclared kinds).
 */
#include <errno.h>
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

#include "analyzer/engine.h"
#include "analyzer/symbols.h"
#include "experiment/evwriter.h"
#include "experiment/logfile.h"
#include "experiment/reader.h"

/* ---- the metric set --------------------------------------------------------------------------- */

static void test_metric_set(void **state)
{
    (void)state;
    exp_metric_t m1[] = { { "msgtime", "Message Time", "s", 1, 0 },
                          { "msgbytes", "Message Bytes", "bytes", 0, 0 } };
    exp_metric_t m2[] = { { "msgbytes", "Message Bytes", "bytes", 0, 0 },
                          { "flops", "Floating Point Operations", "count", 0, 0 },
                          { "sync", "Sync Wait Time", "s", 1, 0 } }; /* a builtin name: that metric */
    exp_kind_t k1[] = { { 3, "msg_send", 2, { 0, 1 }, 0, "" } };
    exp_process_t p1 = { .metrics = m1, .nmetrics = 2, .kinds = k1, .nkinds = 1 };
    exp_process_t p2 = { .metrics = m2, .nmetrics = 3 };
    exp_process_t p0 = { 0 }; /* an old experiment: no declarations */
    exp_process_t *procs1[] = { &p0, &p1 }, *procs2[] = { &p2 };
    exp_experiment_t e1 = { .procs = procs1, .nprocs = 2 }, e2 = { .procs = procs2, .nprocs = 1 };
    exp_experiment_t *exps[] = { &e1, &e2 };
    eng_metric_def_t *d;
    int n;
    tally_err_t err = { 0 };

    assert_int_equal(eng_metric_set(exps, 1, &d, &n, &err), 0);
    assert_int_equal(n, ENG_NBUILTIN + 2);
    for (int i = 0; i < ENG_NBUILTIN; i++) { /* the builtin metrics, unchanged, at ENG_M_* */
        assert_string_equal(d[i].name, eng_builtin_metrics[i].name);
        assert_string_equal(d[i].title, eng_builtin_metrics[i].title);
        assert_string_equal(d[i].unit, eng_builtin_metrics[i].unit);
    }
    assert_string_equal(d[ENG_M_TOTALCPU].name, "totalcpu");
    assert_string_equal(d[ENG_NBUILTIN].name, "msgtime");
    assert_true(d[ENG_NBUILTIN].time && d[ENG_NBUILTIN].scale == 1e-9);
    assert_string_equal(d[ENG_NBUILTIN].unit, "s");
    assert_string_equal(d[ENG_NBUILTIN].event, "msg_send"); /* the kind that carries it */
    assert_string_equal(d[ENG_NBUILTIN + 1].name, "msgbytes");
    assert_true(!d[ENG_NBUILTIN + 1].time && d[ENG_NBUILTIN + 1].scale == 1);
    free(d);

    /* the union over two experiments: each name once, in order of first declaration */
    assert_int_equal(eng_metric_set(exps, 2, &d, &n, &err), 0);
    assert_int_equal(n, ENG_NBUILTIN + 3);
    assert_string_equal(d[ENG_NBUILTIN + 2].name, "flops");
    assert_string_equal(d[ENG_NBUILTIN + 2].title, "Floating Point Operations");
    assert_string_equal(d[ENG_NBUILTIN + 2].event, "trace"); /* no kind declared it */
    free(d);

    /* no experiment at all: the builtin set */
    assert_int_equal(eng_metric_set(exps, 0, &d, &n, &err), 0);
    assert_int_equal(n, ENG_NBUILTIN);
    free(d);
}

/* ---- the rules at a run-time width -------------------------------------------------------------- */

static void test_wide_vectors(void **state)
{
    (void)state;
    const int nm = ENG_NBUILTIN + 5, last = nm - 1;
    eng_table_t t;
    assert_int_equal(eng_table_alloc(&t, ENG_KIND_FUNCTION, 4, nm, 1), 0);
    assert_int_equal(t.nmetrics, nm);
    eng_edgeset_t *es = eng_edgeset_new(nm);
    assert_non_null(es);
    uint32_t stamp[4] = { 0 }, serial = 0;
    uint64_t *v = calloc((size_t)nm, sizeof *v);
    /* 0 <- 1 <- 2 (leaf first: 0 is the leaf), value 5 in the last metric only */
    const uint32_t s1[] = { 0, 1, 2 }, s2[] = { 1, 2 };
    v[last] = 5;
    assert_int_equal(eng_apply(&t, s1, 3, v, stamp, ++serial, es), 0);
    v[last] = 7;
    assert_int_equal(eng_apply(&t, s2, 2, v, stamp, ++serial, es), 0);
    assert_int_equal(eng_edges_finish(&t, es), 0);
    eng_edgeset_free(es);
    assert_int_equal(t.excl[0 * nm + last], 5);
    assert_int_equal(t.excl[1 * nm + last], 7);
    assert_int_equal(t.incl[1 * nm + last], 12);
    assert_int_equal(t.incl[2 * nm + last], 12);
    assert_int_equal(t.outermost[2 * nm + last], 12);
    for (int m = 0; m < last; m++) /* nothing leaks into the other columns */
        assert_int_equal(t.incl[2 * nm + m], 0);
    /* callers of 0: 1 with 5; callers of 1: 2 with 12; callees of 2: 1 with 12 */
    assert_int_equal(t.caller_start[1] - t.caller_start[0], 1);
    assert_int_equal(t.callers[t.caller_start[0]].other, 1);
    assert_int_equal(t.callers[t.caller_start[0]].value[last], 5);
    assert_int_equal(t.callers[t.caller_start[1]].value[last], 12);
    assert_int_equal(t.callees[t.callee_start[2]].other, 1);
    assert_int_equal(t.callees[t.callee_start[2]].value[last], 12);
    assert_int_equal(t.callees[t.callee_start[2]].value[0], 0);
    free(v);
    eng_table_release(&t);
}

/* ---- an engine over a written experiment ------------------------------------------------------ */

static char dir[256];

static void line(int fd, exp_line_t *l) { assert_int_equal(exp_line_write(l, fd), 0); }

static void write_experiment(void)
{
    char path[512], buf[1024];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "start");
    exp_line_u64(&l, "t", 1000);
    exp_line_u64(&l, "pid", 42);
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "thread");
    exp_line_u64(&l, "t", 1000);
    exp_line_u64(&l, "tid", 100);
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "metric");
    exp_line_str(&l, "name", "msgtime");
    exp_line_str(&l, "title", "Message Time");
    exp_line_u64(&l, "time", 1);
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "metric");
    exp_line_str(&l, "name", "msgbytes");
    exp_line_str(&l, "unit", "bytes");
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "metric"); /* refused: its aggregation */
    exp_line_str(&l, "name", "peak");
    exp_line_str(&l, "aggregate", "max");
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "kind"); /* the values in the other order */
    exp_line_u64(&l, "id", 7);
    exp_line_str(&l, "name", "msg_send");
    exp_line_str(&l, "metrics", "msgbytes,msgtime");
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "kind"); /* refused: a metric not declared */
    exp_line_u64(&l, "id", 8);
    exp_line_str(&l, "name", "peaks");
    exp_line_str(&l, "metrics", "peak");
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "kind"); /* attributes after the metric */
    exp_line_u64(&l, "id", 10);
    exp_line_str(&l, "name", "msg_peer");
    exp_line_str(&l, "metrics", "msgbytes");
    exp_line_str(&l, "attrs", "peer,tag");
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "kind"); /* refused: an attribute's bad name */
    exp_line_u64(&l, "id", 11);
    exp_line_str(&l, "name", "bad_attr");
    exp_line_str(&l, "metrics", "msgbytes");
    exp_line_str(&l, "attrs", "peer,Tag");
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "kind"); /* refused: 17 values */
    exp_line_u64(&l, "id", 12);
    exp_line_str(&l, "name", "too_many");
    exp_line_str(&l, "metrics", "msgbytes");
    exp_line_str(&l, "attrs", "a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,b0,b1,b2,b3,b4,b5");
    line(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, "end");
    exp_line_u64(&l, "t", 1000000);
    exp_line_str(&l, "how", "exit");
    line(fd, &l);
    close(fd);

    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t s;
    exp_stream_init(&s, &f, 100);
    uint64_t a[3] = { 0x401000, 0x402000, 0x403000 }, b[2] = { 0x404000, 0x403000 };
    uint32_t sa, sb;
    assert_int_equal(exp_stream_stack(&s, a, 3, 0, &sa), 0);
    assert_int_equal(exp_stream_stack(&s, b, 2, 0, &sb), 0);
    uint64_t t = 2000;
    assert_int_equal(exp_stream_clock(&s, t++, sa, EXP_STATE_USER, 10), 0);
    assert_int_equal(exp_stream_clock(&s, t++, sb, EXP_STATE_SYSTEM, 20), 0);
    assert_int_equal(exp_stream_state(&s, t++, 100, sa, EXP_STATE_LOCK, 40), 0);
    assert_int_equal(exp_stream_sync(&s, t++, sa, 300, 0x601000, EXP_SYNC_MUTEX_LOCK), 0);
    assert_int_equal(exp_stream_alloc(&s, t++, sb, 0x7000, 64, EXP_HEAP_MALLOC), 0);
    assert_int_equal(exp_stream_io(&s, t++, sa, EXP_IO_READ, 50, 4096, 3, 0, NULL, 0), 0);
    assert_int_equal(exp_stream_io(&s, t++, sa, EXP_IO_WRITE, 60, 0, 3, 5, NULL, 0), 0);
    const uint64_t v1[2] = { 100, 2000 }, v2[1] = { 7 }, v3[1] = { 99 };
    for (int i = 0; i < 3; i++)
        assert_int_equal(exp_stream_trace(&s, t++, 7, sa, v1, 2), 0);
    assert_int_equal(exp_stream_trace(&s, t++, 7, sb, v2, 1), 0); /* fewer values */
    assert_int_equal(exp_stream_trace(&s, t++, 8, sb, v3, 1), 0); /* a refused kind */
    assert_int_equal(exp_stream_trace(&s, t++, 9, sb, v3, 1), 0); /* an undeclared kind */
    const uint64_t v4[3] = { 5, 123456, 9 }; /* msgbytes, then the attributes peer and tag */
    assert_int_equal(exp_stream_trace(&s, t++, 10, sb, v4, 3), 0);
    assert_int_equal(exp_stream_trace(&s, t++, 11, sb, v4, 3), 0); /* a refused kind */
    uint64_t many[EXP_KIND_MAXVALUES + 1] = { 0 };
    assert_int_equal(exp_stream_trace(&s, t++, 7, sb, many, EXP_KIND_MAXVALUES + 1), -EINVAL);
    exp_stream_finish(&s, 900000);
    exp_evfile_close(&f);
}

typedef struct ev_check {
    int nm, traces;
    uint64_t bytes;
    int msgbytes;
} ev_check_t;

static int on_event(void *ctx, const exp_event_t *ev, const uint64_t *v, uint32_t leaf,
                    uint32_t thread)
{
    (void)leaf, (void)thread;
    ev_check_t *c = ctx;
    if (ev->type == EXP_REC_TRACE) {
        c->traces++;
        c->bytes += v[c->msgbytes]; /* (msgbytes is the last of the nm metrics) */
    }
    return 0;
}

static void test_engine_contributors(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tally-test-metrics-%d.tally", getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    write_experiment();
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    assert_int_equal(e->procs[0]->nmetrics, 2);
    assert_int_equal(e->procs[0]->nkinds, 2);
    assert_true(e->procs[0]->nwarnings >= 4); /* the refused metric and kinds, with their lines */
    const exp_kind_t *ka = &e->procs[0]->kinds[1];
    assert_int_equal(ka->id, 10);
    assert_int_equal(ka->nmetrics, 1);
    assert_int_equal(ka->nattrs, 2);
    assert_int_equal(exp_kind_attr(ka, "peer"), 1);
    assert_int_equal(exp_kind_attr(ka, "tag"), 2);
    assert_int_equal(exp_kind_attr(ka, "pee"), -1);
    assert_int_equal(exp_kind_attr(&e->procs[0]->kinds[0], "peer"), -1);
    sym_ctx_t *sym = sym_new();
    assert_non_null(sym);
    eng_t *g = eng_new(&e, 1, sym);
    assert_non_null(g);
    int nm = eng_nmetrics(g);
    assert_int_equal(nm, ENG_NBUILTIN + 2);
    int mt = eng_metric_find(g, "msgtime"), mb = eng_metric_find(g, "msgbytes");
    assert_int_equal(mt, ENG_NBUILTIN);
    assert_int_equal(mb, ENG_NBUILTIN + 1);
    assert_int_equal(eng_metric_find(g, "peak"), -1);
    assert_string_equal(eng_metric(g, mb)->unit, "bytes");
    assert_string_equal(eng_metric(g, mt)->unit, "s");
    assert_int_equal(eng_aggregate(g, &err), 0);
    const exp_scan_stats_t *st = eng_scan_stats(g);
    assert_int_equal(st->unknown_records + st->bad_records, 0);
    const uint64_t *tot = eng_total(g);
    /* every record type's contribution */
    assert_int_equal(tot[ENG_M_USER], 10);
    assert_int_equal(tot[ENG_M_SYSTEM], 20);
    assert_int_equal(tot[ENG_M_TOTALCPU], 30);
    assert_int_equal(tot[ENG_M_LOCK], 40);
    assert_int_equal(tot[ENG_M_TOTAL], 70);
    assert_int_equal(tot[ENG_M_SYNC], 300);
    assert_int_equal(tot[ENG_M_SYNCN], 1);
    assert_int_equal(tot[ENG_M_HEAPALLOCCNT], 1);
    assert_int_equal(tot[ENG_M_HEAPALLOCBYTES], 64);
    assert_int_equal(tot[ENG_M_HEAPLEAKBYTES], 64); /* never freed */
    assert_int_equal(tot[ENG_M_IOREADBYTES], 4096);
    assert_int_equal(tot[ENG_M_IOREADTIME], 50);
    assert_int_equal(tot[ENG_M_IOERRORCNT], 1);
    assert_int_equal(tot[ENG_M_IOERRORTIME], 60);
    assert_int_equal(tot[ENG_M_IOWRITECNT], 0);
    /* TRACE: kind 7 declares msgbytes then msgtime; a record with one value has msgbytes only;
     * refused and undeclared kinds carry nothing */
    assert_int_equal(tot[mb], 3 * 100 + 7 + 5); /* attributes are no metric */
    assert_int_equal(tot[mt], 3 * 2000);
    assert_true(eng_has_metric(g, mb) && eng_has_metric(g, mt));
    assert_int_equal(eng_thread(g, 0)->value[mb], 312);
    /* each event's vector is nm wide */
    assert_int_equal(mb, nm - 1);
    ev_check_t c = { nm, 0, 0, mb };
    assert_int_equal(eng_foreach_event(g, on_event, &c, &err), 0);
    assert_int_equal(c.traces, 5); /* records of kinds that carry no metric are not events */
    assert_int_equal(c.bytes, 312);
    /* the call tree at the run-time width: every frame is <Unknown> (no load objects), so the
     * tree is a chain whose root holds every total */
    const eng_tree_t *tr = eng_calltree(g, ENG_KIND_FUNCTION, &err);
    assert_non_null(tr);
    assert_int_equal(tr->nmetrics, nm);
    assert_int_equal(tr->nodes[0].incl[mb], 312);
    assert_int_equal(tr->nodes[0].incl[mt], 6000);
    assert_int_equal(tr->nodes[0].incl[ENG_M_SYNC], 300);
    uint64_t excl_sum = 0;
    for (size_t k = 0; k < tr->nnodes; k++) {
        assert_true(tr->nodes[k].incl[mb] <= 312);
        excl_sum += tr->nodes[k].excl[mb];
    }
    assert_int_equal(excl_sum, 312);
    /* a table of functions: <Unknown> has it all, exclusive and inclusive */
    const eng_table_t *t = eng_compute(g, ENG_KIND_FUNCTION, 1, &err);
    assert_non_null(t);
    assert_int_equal(t->nmetrics, nm);
    uint64_t ex = 0;
    for (size_t id = 0; id < t->nobjects; id++)
        ex += t->excl[id * (size_t)nm + (size_t)mb];
    assert_int_equal(ex, 312);
    eng_free(g);
    sym_free(sym);
    exp_close(e);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- runtime states: clock time inside a runtime split by the state the thread was in -------- */

static void test_runtime_states(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tally-test-rstate-%d.tally", getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    char path[512], buf[1024];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "start");
    exp_line_u64(&l, "t", 1000);
    exp_line_u64(&l, "pid", 42);
    line(fd, &l);
    const char *metrics[] = { "ompwork", "ompwait" };
    for (int i = 0; i < 2; i++) {
        exp_line_begin(&l, buf, sizeof buf, "metric");
        exp_line_str(&l, "name", metrics[i]);
        exp_line_u64(&l, "time", 1);
        line(fd, &l);
    }
    /* kind 0: working (blocked time is a wait), kind 1: waiting */
    const char *kinds[][2] = { { "omp_work", "ompwork,ompwait" }, { "omp_wait", "ompwait" } };
    for (int i = 0; i < 2; i++) {
        exp_line_begin(&l, buf, sizeof buf, "kind");
        exp_line_u64(&l, "id", (uint64_t)i);
        exp_line_str(&l, "name", kinds[i][0]);
        exp_line_str(&l, "metrics", kinds[i][1]);
        line(fd, &l);
    }
    close(fd);
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t s;
    exp_stream_init(&s, &f, 100);
    uint64_t a[1] = { 0x401000 };
    uint32_t sa;
    assert_int_equal(exp_stream_stack(&s, a, 1, 0, &sa), 0);
    uint64_t t = 2000;
    assert_int_equal(exp_stream_clock_rs(&s, t++, sa, EXP_STATE_USER, 10, 1), 0);
    assert_int_equal(exp_stream_clock_rs(&s, t++, sa, EXP_STATE_SYSTEM, 20, 1), 0);
    assert_int_equal(exp_stream_state_rs(&s, t++, 100, sa, EXP_STATE_WAIT, 5, 1), 0);
    assert_int_equal(exp_stream_state_rs(&s, t++, 100, sa, EXP_STATE_LOCK, 40, 1), 0);
    assert_int_equal(exp_stream_clock_rs(&s, t++, sa, EXP_STATE_USER, 7, 2), 0);
    assert_int_equal(exp_stream_state_rs(&s, t++, 100, sa, EXP_STATE_SLEEP, 3, 2), 0);
    assert_int_equal(exp_stream_clock_rs(&s, t++, sa, EXP_STATE_USER, 100, 0), 0); /* outside */
    assert_int_equal(exp_stream_state(&s, t++, 100, sa, EXP_STATE_IO, 200), 0);
    assert_int_equal(exp_stream_clock_rs(&s, t++, sa, EXP_STATE_USER, 1000, 77), 0); /* no kind */
    exp_stream_finish(&s, 900000);
    exp_evfile_close(&f);

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    sym_ctx_t *sym = sym_new();
    eng_t *g = eng_new(&e, 1, sym);
    assert_non_null(g);
    int mw = eng_metric_find(g, "ompwork"), mx = eng_metric_find(g, "ompwait");
    assert_true(mw >= 0 && mx >= 0);
    assert_int_equal(eng_aggregate(g, &err), 0);
    const exp_scan_stats_t *st = eng_scan_stats(g);
    assert_int_equal(st->unknown_records + st->bad_records, 0);
    const uint64_t *tot = eng_total(g);
    assert_int_equal(tot[mw], 10 + 20 + 5);    /* on a CPU or waiting for one, working */
    assert_int_equal(tot[mx], 40 + 7 + 3);     /* blocked while working; waiting */
    assert_int_equal(tot[ENG_M_TOTAL], 1385); /* the states themselves are unchanged */
    assert_int_equal(tot[ENG_M_USER], 10 + 7 + 100 + 1000);
    assert_int_equal(tot[ENG_M_LOCK], 40);
    assert_int_equal(eng_thread(g, 0)->value[mx], 50);
    eng_free(g);
    sym_free(sym);
    exp_close(e);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metric_set),
        cmocka_unit_test(test_wide_vectors),
        cmocka_unit_test(test_engine_contributors),
        cmocka_unit_test(test_runtime_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
