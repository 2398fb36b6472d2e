/*
 * test_jobmerge.c - the aggregation as a part of a job's (engine.h, the analysis as an MPI job):
 * engines over the same experiment, each scanning a share of its processes, the first merging the
 * others' partial results, give exactly what one engine scanning everything gives: the same
 * totals, scan statistics and selected events, the same thread numbers and sums, every stack with
 * the same id and vector, the same (thread, stack) pairs when split by thread, the same function
 * table. The others apply the first's selections from its request (threads by number, a filter on
 * THRID). The experiment is generated (bench_gen_experiment: a job of ranks), with enough stacks
 * that a partial result spans several chunks.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analyzer/engine.h"
#include "analyzer/session.h"

static char dir[256], exp_path[300];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tally-test-jobmerge-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(exp_path, sizeof exp_path, "%s/job.tally", dir);
    char cmd[1024];
    /* 7 ranks of 3 threads, 6000 events each over 4000 stacks: a partial of several ranks is
     * larger than a chunk (ENG_PARTIAL_CHUNK) */
    snprintf(cmd, sizeof cmd, "'%s' '%s' 6000 3 4000 7 >/dev/null", BENCH_GEN, exp_path);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static ses_t *open_ses(void)
{
    tally_err_t err = { 0 };
    ses_t *s = ses_new();
    assert_non_null(s);
    assert_int_equal(ses_open(s, exp_path, &err), 0);
    assert_int_equal(ses_start(s, &err), 0);
    return s;
}

/* The stacks of an engine, in id order as eng_foreach_stack gives them: a flat record. */
typedef struct flat {
    uint64_t *w;
    size_t n, cap;
} flat_t;

static void push(flat_t *f, uint64_t v)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 4096;
        f->w = realloc(f->w, f->cap * sizeof *f->w);
        assert_non_null(f->w);
    }
    f->w[f->n++] = v;
}

static int nm_global;

static int stack_cb(void *ctx, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                    const uint32_t *fns, uint32_t n, const uint64_t *v)
{
    flat_t *f = ctx;
    push(f, exp);
    push(f, proc);
    push(f, n);
    for (uint32_t i = 0; i < n; i++) {
        push(f, pcs[i]);
        push(f, fns[i]);
    }
    for (int m = 0; m < nm_global; m++)
        push(f, v[m]);
    return 0;
}

static int pair_cb(void *ctx, const eng_thread_t *t, const eng_mapped_t *m, const uint64_t *v)
{
    flat_t *f = ctx;
    push(f, t->number);
    push(f, m->stack);
    for (int k = 0; k < nm_global; k++)
        push(f, v[k]);
    return 0;
}

/* Everything the views read from an aggregation of g, flattened. */
static void snapshot(eng_t *g, flat_t *f, int pairs)
{
    tally_err_t err = { 0 };
    int nm = eng_nmetrics(g);
    nm_global = nm;
    push(f, eng_selected_events(g));
    const exp_scan_stats_t *st = eng_scan_stats(g);
    push(f, st->events);
    push(f, st->chunks);
    push(f, st->records);
    for (int m = 0; m < nm; m++)
        push(f, eng_total(g)[m]);
    push(f, eng_nthreads(g));
    for (size_t i = 0; i < eng_nthreads(g); i++) {
        const eng_thread_t *t = eng_thread(g, i);
        push(f, t->number);
        push(f, (uint64_t)t->exp << 48 | (uint64_t)t->proc << 32 | t->tid);
        push(f, t->events);
        for (int m = 0; m < nm; m++)
            push(f, t->value[m]);
    }
    assert_int_equal(eng_foreach_stack(g, stack_cb, f, &err), 0);
    if (pairs)
        assert_int_equal(eng_foreach_thread_stack(g, ENG_KIND_FUNCTION, pair_cb, f, &err), 0);
    const eng_table_t *t = eng_compute(g, ENG_KIND_FUNCTION, 1, &err);
    assert_non_null(t);
    push(f, t->nobjects);
    for (size_t i = 0; i < t->nobjects * (size_t)nm; i++) {
        push(f, t->excl[i]);
        push(f, t->incl[i]);
    }
}

typedef struct job {
    eng_t *others[3];
    int nothers;
    uint64_t chunks;
} job_t;

static int feed(void *ctx, const void *buf, size_t n)
{
    eng_merge_t *m = ((void **)ctx)[0];
    int *done = ((void **)ctx)[1];
    job_t *j = ((void **)ctx)[2];
    tally_err_t err = { 0 };
    assert_false(*done);
    assert_true(n <= ENG_PARTIAL_CHUNK + 65536);
    j->chunks++;
    return eng_merge_chunk(m, buf, n, done, &err);
}

/* The merging engine's hook: the others aggregate their shares (after its request) and their
 * partial results are merged, in order. */
static int reduce(void *ctx, eng_t *g, int phase, tally_err_t *err)
{
    job_t *j = ctx;
    if (phase == ENG_REDUCE_START) {
        uint8_t *req;
        size_t n;
        assert_int_equal(eng_request_write(g, &req, &n, err), 0);
        for (int k = 0; k < j->nothers; k++)
            assert_int_equal(eng_request_apply(j->others[k], req, n, err), 0);
        free(req);
        return 0;
    }
    assert_int_equal(phase, ENG_REDUCE_MERGE);
    for (int k = 0; k < j->nothers; k++) {
        assert_int_equal(eng_aggregate(j->others[k], err), 0);
        eng_merge_t *m = eng_merge_new(g);
        int done = 0;
        void *fctx[3] = { m, &done, j };
        assert_int_equal(eng_partial_write(j->others[k], feed, fctx, err), 0);
        assert_true(done);
        eng_merge_free(m);
    }
    return 0;
}

static void compare(const char *threads, const char *filter, int split)
{
    tally_err_t err = { 0 };
    ses_t *alone = open_ses(), *s[4];
    for (int k = 0; k < 4; k++)
        s[k] = open_ses();
    size_t np = alone->exps[0]->nprocs;
    assert_int_equal(np, 8); /* the job's root and 7 ranks */
    /* shares: the root and 2 ranks, none, 1 rank, the other 4 */
    uint32_t lo[4] = { 0, 3, 3, 4 }, hi[4] = { 3, 3, 4, 8 };
    job_t j = { { s[1]->eng, s[2]->eng, s[3]->eng }, 3, 0 };
    for (int k = 0; k < 4; k++)
        assert_int_equal(eng_set_share(s[k]->eng, &lo[k], &hi[k], &err), 0);
    for (int k = 1; k < 4; k++)
        eng_set_partial(s[k]->eng, 1);
    eng_set_reduce(s[0]->eng, reduce, &j);
    eng_t *engines[2] = { alone->eng, s[0]->eng };
    flat_t f[2] = { { 0 }, { 0 } };
    for (int e = 0; e < 2; e++) {
        eng_t *g = engines[e];
        assert_int_equal(eng_aggregate(g, &err), 0); /* the threads numbered: then selections */
        if (threads)
            assert_int_equal(eng_select_threads(g, threads, &err), 0);
        if (filter)
            assert_int_equal(eng_set_filter(g, filter, &err), 0);
        eng_split_threads(g, split);
        assert_int_equal(eng_aggregate(g, &err), 0);
        snapshot(g, &f[e], split);
    }
    assert_true(j.chunks > 3 * 2); /* some partial took several chunks */
    assert_true(f[0].n > 10000);
    assert_int_equal(f[0].n, f[1].n);
    size_t first = 0;
    while (first < f[0].n && f[0].w[first] == f[1].w[first])
        first++;
    if (first < f[0].n)
        fail_msg("the merged aggregation differs at word %zu of %zu: %llu, alone %llu", first,
                 f[0].n, (unsigned long long)f[1].w[first], (unsigned long long)f[0].w[first]);
    free(f[0].w);
    free(f[1].w);
    ses_free(alone);
    for (int k = 0; k < 4; k++)
        ses_free(s[k]);
}

static void test_all(void **state)
{
    (void)state;
    compare(NULL, NULL, 0);
}

static void test_selected(void **state)
{
    (void)state;
    compare("2-5,9,17-20", "THRID > 3 && THRID != 18", 0);
}

static void test_split(void **state)
{
    (void)state;
    compare("1-12", NULL, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all),
        cmocka_unit_test(test_selected),
        cmocka_unit_test(test_split),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
