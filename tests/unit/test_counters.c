/*
 * test_counters.c - counter overflow profiling in the format, the reader and the engine, on an
 * experiment written here through the format's writer: `metric` (with `hz` for cycles) and
 * `counter` declarations (refused ones: an undeclared metric, an id declared twice, an id out of
 * range), `counter-stats`, COUNTER records without and with the memory reference (exact PC and
 * address; registers), a record of an undeclared counter; then the engine's metrics: names with
 * '-', cycles shown as time at hz, totals per counter, and the events as the scan delivers them.
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

static char dir[256];

static void line(int fd, exp_line_t *l) { assert_int_equal(exp_line_write(l, fd), 0); }

static void metric(int fd, const char *name, uint64_t hz)
{
    char buf[512];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "metric");
    exp_line_str(&l, "name", name);
    exp_line_str(&l, "unit", hz ? "cycles" : "events");
    if (hz)
        exp_line_u64(&l, "hz", hz);
    line(fd, &l);
}

static void counter(int fd, uint64_t id, const char *name, const char *metric_name, int data)
{
    char buf[512];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "counter");
    exp_line_u64(&l, "id", id);
    exp_line_str(&l, "name", name);
    exp_line_str(&l, "metric", metric_name);
    exp_line_u64(&l, "interval", 1000);
    exp_line_u64(&l, "data", (uint64_t)data);
    line(fd, &l);
}

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
    metric(fd, "page-faults", 0);
    metric(fd, "cycles", 2000000000);
    counter(fd, 0, "page-faults", "page-faults", 1);
    counter(fd, 3, "cycles", "cycles", 0);
    counter(fd, 4, "nothing", "no-such-metric", 0); /* refused: metric not declared */
    counter(fd, 3, "again", "cycles", 0);           /* refused: id declared before */
    counter(fd, 64, "far", "cycles", 0);            /* refused: id out of range */
    exp_line_begin(&l, buf, sizeof buf, "counter-stats");
    exp_line_u64(&l, "id", 0);
    exp_line_u64(&l, "samples", 3);
    exp_line_u64(&l, "counted", 3005);
    exp_line_u64(&l, "enabled", 100);
    exp_line_u64(&l, "running", 50);
    exp_line_u64(&l, "throttled", 2);
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
    uint64_t a[2] = { 0x401000, 0x402000 };
    uint32_t sa;
    assert_int_equal(exp_stream_stack(&s, a, 2, 0, &sa), 0);
    uint64_t t = 2000;
    assert_int_equal(exp_stream_counter(&s, t++, sa, 0, 1000, NULL), 0);
    const uint64_t exact[3] = { EXP_CTR_EXACT, 0x401003, 0x7f0000001000ull };
    assert_int_equal(exp_stream_counter(&s, t++, sa, 0, 1000, exact), 0);
    uint64_t regs[3 + EXP_CTR_NREGS] = { EXP_CTR_REGS, 0x401007, 0 };
    for (int i = 0; i < EXP_CTR_NREGS; i++)
        regs[3 + i] = 0x1000 + (uint64_t)i;
    assert_int_equal(exp_stream_counter(&s, t++, sa, 0, 1000, regs), 0);
    assert_int_equal(exp_stream_counter(&s, t++, sa, 3, 4000000, NULL), 0);
    assert_int_equal(exp_stream_counter(&s, t++, sa, 4, 77, NULL), 0); /* refused counter */
    assert_int_equal(exp_stream_counter(&s, t++, sa, 9, 77, NULL), 0); /* undeclared */
    exp_stream_finish(&s, 900000);
    exp_evfile_close(&f);
}

typedef struct seen {
    int n, exact, withregs;
    uint64_t regs_sum;
} seen_t;

static int on_raw(void *ctx, const exp_event_t *ev)
{
    seen_t *s = ctx;
    if (ev->type != EXP_REC_COUNTER)
        return 0;
    s->n++;
    if (ev->dflags & EXP_CTR_EXACT) {
        s->exact++;
        assert_int_equal(ev->pc, 0x401003);
        assert_int_equal(ev->addr, 0x7f0000001000ull);
        assert_null(ev->regs);
    }
    if (ev->dflags & EXP_CTR_REGS) {
        s->withregs++;
        assert_non_null(ev->regs);
        assert_int_equal(ev->pc, 0x401007);
        assert_int_equal(ev->addr, 0);
        for (int i = 0; i < EXP_CTR_NREGS; i++)
            s->regs_sum += ev->regs[i];
    }
    if (!ev->dflags)
        assert_int_equal(ev->pc, 0);
    assert_int_equal(ev->nvalues, 1);
    return 0;
}

static void test_counter_records(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tally-test-counters-%d.tally", getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    write_experiment();
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    const exp_process_t *p = e->procs[0];
    assert_int_equal(p->nmetrics, 2);
    assert_int_equal(p->metrics[1].hz, 2000000000);
    assert_int_equal(p->ncounters, 2);
    assert_int_equal(p->counters[0].id, 0);
    assert_string_equal(p->counters[0].name, "page-faults");
    assert_int_equal(p->counters[0].data, 1);
    assert_int_equal(p->counters[0].interval, 1000);
    assert_int_equal(p->counters[0].has_stats, 1);
    assert_int_equal(p->counters[0].counted, 3005);
    assert_int_equal(p->counters[0].running, 50);
    assert_int_equal(p->counters[0].throttled, 2);
    assert_int_equal(p->counters[1].id, 3);
    assert_int_equal(p->counters[1].has_stats, 0);
    int refused = 0;
    for (size_t i = 0; i < p->nwarnings; i++)
        refused += strstr(p->warnings[i], "counter '") != NULL;
    assert_int_equal(refused, 3);

    /* the scan: every record decodes, with its memory reference */
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    seen_t s = { 0 };
    assert_int_equal(exp_scan(e, stacks, on_raw, &s, &st, &err), 0);
    assert_int_equal(st.bad_records + st.unknown_records, 0);
    assert_int_equal(s.n, 6);
    assert_int_equal(s.exact, 1);
    assert_int_equal(s.withregs, 1);
    assert_int_equal(s.regs_sum, EXP_CTR_NREGS * 0x1000ull + EXP_CTR_NREGS * (EXP_CTR_NREGS - 1) / 2);
    exp_stacks_free(stacks);

    /* the engine: one metric per counter, cycles as time */
    sym_ctx_t *sym = sym_new();
    eng_t *g = eng_new(&e, 1, sym);
    assert_non_null(g);
    int pf = eng_metric_find(g, "page-faults"), cy = eng_metric_find(g, "cycles");
    assert_true(pf >= ENG_NBUILTIN && cy >= ENG_NBUILTIN);
    assert_string_equal(eng_metric(g, pf)->unit, "events");
    assert_string_equal(eng_metric(g, pf)->event, "counter");
    assert_string_equal(eng_metric(g, cy)->unit, "s");
    assert_true(eng_metric(g, cy)->scale > 0.49e-9 && eng_metric(g, cy)->scale < 0.51e-9);
    assert_int_equal(eng_aggregate(g, &err), 0);
    const uint64_t *tot = eng_total(g);
    assert_int_equal(tot[pf], 3000);    /* three samples of 1000 */
    assert_int_equal(tot[cy], 4000000); /* 2 ms at 2 GHz */
    assert_int_equal(tot[ENG_M_TOTALCPU], 0);
    eng_free(g);
    sym_free(sym);
    exp_close(e);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Metric names of counters: '-' is allowed after the first letter. */
static void test_names(void **state)
{
    (void)state;
    assert_true(exp_decl_name_ok("page-faults"));
    assert_true(exp_decl_name_ok("mem_count_w"));
    assert_false(exp_decl_name_ok("-faults"));
    assert_false(exp_decl_name_ok("Page-faults"));
    assert_false(exp_decl_name_ok("page faults"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_records),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
