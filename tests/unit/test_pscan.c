/* test_pscan.c - the parallel aggregation (exp_scan_parallel, eng_set_scan_threads) gives what the
 * serial scan gives: the same stack ids, threads in the same order, the same sums and statistics,
 * on an experiment with a descendant, streams of many chunks, events at equal times in different
 * streams, threads known only from their events, threads of two processes with the same ids,
 * clock events in every state, inside runtimes and not, sums that saturate; and it steps aside
 * (the serial scan runs) for heap events, damage and time going back in a stream. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "analyzer/engine.h"
#include "analyzer/symbols.h"
#include "experiment/evwriter.h"
#include "experiment/logfile.h"
#include "experiment/reader.h"

enum { HEAP = 1, DAMAGE = 2, BACKWARDS = 4 };

static uint64_t rng;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void line(int fd, exp_line_t *l) { assert_int_equal(exp_line_write(l, fd), 0); }

/* One process: log and events with nstreams streams; child: the name of a descendant to
 * announce, or NULL. */
static void write_process(const char *d, uint32_t pid, const char *child, int how)
{
    char path[600], buf[1024];
    assert_int_equal(mkdir(d, 0755), 0);
    snprintf(path, sizeof path, "%s/log", d);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "start");
    exp_line_u64(&l, "t", 1000);
    exp_line_u64(&l, "pid", pid);
    line(fd, &l);
    for (uint32_t th = 0; th < 2; th++) { /* the log names two of the four threads */
        exp_line_begin(&l, buf, sizeof buf, "thread");
        exp_line_u64(&l, "t", 1000);
        exp_line_u64(&l, "tid", pid + 3 - th);
        line(fd, &l);
    }
    /* runtime states: kind 0 has two metrics (blocked time goes to the second), kind 1 one */
    const char *metrics[] = { "rtwork", "rtwait" };
    for (int i = 0; i < 2; i++) {
        exp_line_begin(&l, buf, sizeof buf, "metric");
        exp_line_str(&l, "name", metrics[i]);
        exp_line_u64(&l, "time", 1);
        line(fd, &l);
    }
    const char *kinds[][2] = { { "rt_work", "rtwork,rtwait" }, { "rt_wait", "rtwait" } };
    for (int i = 0; i < 2; i++) {
        exp_line_begin(&l, buf, sizeof buf, "kind");
        exp_line_u64(&l, "id", (uint64_t)i);
        exp_line_str(&l, "name", kinds[i][0]);
        exp_line_str(&l, "metrics", kinds[i][1]);
        line(fd, &l);
    }
    if (child) {
        exp_line_begin(&l, buf, sizeof buf, "descendant");
        exp_line_u64(&l, "t", 1500);
        exp_line_str(&l, "kind", "fork");
        exp_line_str(&l, "dir", child);
        exp_line_u64(&l, "pid", pid + 100);
        line(fd, &l);
    }
    exp_line_begin(&l, buf, sizeof buf, "end");
    exp_line_u64(&l, "t", 10000000);
    exp_line_str(&l, "how", "exit");
    line(fd, &l);
    close(fd);

    snprintf(path, sizeof path, "%s/events", d);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, pid, 1000, 4096), 0);
    enum { NS = 4, NSTACKS = 300 };
    exp_stream_t s[NS];
    uint64_t t[NS];
    /* the second descendant's threads have the root's thread ids (another pid namespace):
     * threads are told apart by process too; every stream starts with a LOST record, which
     * has no metric */
    uint32_t tid0 = pid == 4200 ? 4000 : pid;
    for (int i = 0; i < NS; i++) {
        exp_stream_init(&s[i], &f, tid0 + (uint32_t)i);
        exp_stream_lost(&s[i], 2, EXP_LOST_BUSY);
        t[i] = 2000;
    }
    for (int e = 0; e < 20000; e++) {
        int i = (int)(next_rand() % NS);
        uint64_t pcs[12];
        uint32_t k = (uint32_t)(next_rand() % NSTACKS), n = 1 + k % 12, id;
        for (uint32_t j = 0; j < n; j++)
            pcs[j] = 0x401000 + 0x10 * (k * 7 + j * 3) % 0x900;
        assert_int_equal(exp_stream_stack(&s[i], pcs, n, 0, &id), 0);
        t[i] += next_rand() % 3; /* often the time of another stream's event */
        switch (next_rand() % 10) {
        case 0: /* a thread known only from the states another stream writes */
            assert_int_equal(exp_stream_state(&s[i], t[i], pid + 50 + (uint32_t)(next_rand() % 3),
                                              id, EXP_STATE_SLEEP, 1000 + k), 0);
            break;
        case 1:
            assert_int_equal(exp_stream_sync(&s[i], t[i], id, 300 + k, 0x601000,
                                             EXP_SYNC_MUTEX_LOCK), 0);
            break;
        case 2:
            assert_int_equal(exp_stream_io(&s[i], t[i], id, EXP_IO_READ, 50, 4096 + k, 3, 0,
                                           NULL, 0), 0);
            break;
        case 3: /* in a runtime (kind 0, 1, or one not declared), in any state */
            assert_int_equal(exp_stream_clock_rs(&s[i], t[i], id, (uint32_t)(k % EXP_STATE_COUNT),
                                                 2000 + k, 1 + (uint32_t)(next_rand() % 3) * 7 % 9),
                             0);
            break;
        case 4: /* a state this reader does not know: a sleep */
            assert_int_equal(exp_stream_clock(&s[i], t[i], id, 9 + k % 2, 3000 + k), 0);
            break;
        default:
            /* one stack of one thread of one process takes weights that saturate its sums */
            assert_int_equal(exp_stream_clock(&s[i], t[i], id, (uint32_t)(k % 2),
                                              pid == 4100 && i == 1 && k == 7 ? UINT64_MAX / 5
                                                                              : 1000000 + k), 0);
        }
        if ((how & HEAP) && e == 15000)
            assert_int_equal(exp_stream_alloc(&s[i], t[i], id, 0x7000, 64, EXP_HEAP_MALLOC), 0);
    }
    for (int i = 0; i < NS; i++)
        exp_stream_finish(&s[i], t[i] + 10);
    exp_evfile_close(&f);
    if (how & BACKWARDS) { /* the second chunk of a stream starts before the first one ended */
        int efd = open(path, O_RDWR);
        assert_true(efd >= 0);
        uint8_t h[32];
        int done = 0;
        for (off_t off = EXP_EV_HEADER_SIZE; !done && pread(efd, h, 32, off) == 32; off += 4096)
            if (h[8] == 1 && h[9] == 0) { /* seq 1 (little-endian) */
                uint8_t early[8] = { 1 };
                assert_int_equal(pwrite(efd, early, 8, off + 16), 8);
                done = 1;
            }
        assert_true(done);
        close(efd);
    }
    if (how & DAMAGE) { /* cut inside the records of the last chunk written (the chunks after
                         * it, reserved with it, were never started) */
        int efd = open(path, O_RDONLY);
        assert_true(efd >= 0);
        uint8_t h[32];
        off_t cut = 0;
        for (off_t off = EXP_EV_HEADER_SIZE; pread(efd, h, 32, off) == 32; off += 4096) {
            uint32_t magic, used;
            memcpy(&magic, h, 4);
            memcpy(&used, h + 12, 4);
            if (magic == EXP_CHUNK_MAGIC && used > 64)
                cut = off + 32 + used / 2;
        }
        close(efd);
        assert_true(cut > 0);
        assert_int_equal(truncate(path, cut), 0);
    }
}

typedef struct dump {
    char *buf;
    size_t len;
    FILE *f;
} dump_t;

static int dump_stack(void *ctx, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                      const uint32_t *fns, uint32_t n, const uint64_t *v)
{
    (void)fns;
    FILE *f = ctx;
    fprintf(f, "vec %u %u %u", exp, proc, n);
    for (uint32_t i = 0; i < n; i++)
        fprintf(f, " %llx", (unsigned long long)pcs[i]);
    for (int m = 0; m < ENG_NBUILTIN + 2; m++) /* (and the two declared metrics) */
        fprintf(f, " %llu", (unsigned long long)v[m]);
    fputc('\n', f);
    return 0;
}

/* Everything an aggregation with `threads` scan threads finds, as text; *workers: how many it
 * used. */
static char *aggregate(const char *d, unsigned threads, unsigned *workers)
{
    exp_experiment_t *e;
    tally_err_t err = { 0 };
    assert_int_equal(exp_open(d, &e, &err), 0);
    assert_int_equal(e->nprocs, 4);
    sym_ctx_t *sym = sym_new();
    assert_non_null(sym);
    eng_t *g = eng_new(&e, 1, sym);
    assert_non_null(g);
    eng_set_scan_threads(g, threads);
    dump_t dp = { 0 };
    FILE *f = open_memstream(&dp.buf, &dp.len);
    assert_non_null(f);
    for (int round = 0; round < 2; round++) { /* a second aggregation finds the stacks interned */
        assert_int_equal(eng_aggregate(g, &err), 0);
        *workers = eng_scan_workers(g);
        fprintf(f, "threads %zu\n", eng_nthreads(g));
        for (size_t i = 0; i < eng_nthreads(g); i++) {
            const eng_thread_t *t = eng_thread(g, i);
            fprintf(f, "thread %u %u %u %llu", t->number, t->proc, t->tid,
                    (unsigned long long)t->events);
            for (int m = 0; m < eng_nmetrics(g); m++)
                fprintf(f, " %llu", (unsigned long long)t->value[m]);
            fputc('\n', f);
        }
        fprintf(f, "total");
        for (int m = 0; m < eng_nmetrics(g); m++)
            fprintf(f, " %llu", (unsigned long long)eng_total(g)[m]);
        const exp_scan_stats_t *st = eng_scan_stats(g);
        fprintf(f, "\nselected %llu saturated %d\n", (unsigned long long)eng_selected_events(g),
                eng_saturated(g));
        fprintf(f, "stats %llu %llu %llu %llu %llu %llu %llu %llu %llu\n",
                (unsigned long long)st->chunks, (unsigned long long)st->unused_chunks,
                (unsigned long long)st->bad_chunks, (unsigned long long)st->records,
                (unsigned long long)st->unknown_records, (unsigned long long)st->bad_records,
                (unsigned long long)st->seq_gaps, (unsigned long long)st->events,
                (unsigned long long)st->lost[0]);
        exp_stacks_t *stacks = eng_stacks(g, 0);
        fprintf(f, "stacks %zu\n", exp_stacks_count(stacks));
        for (uint32_t id = 0; id < exp_stacks_count(stacks); id++) {
            uint32_t n, flags, proc;
            const uint64_t *pcs = exp_stacks_get(stacks, id, &n, &flags, &proc);
            fprintf(f, "stack %u %u %u %u:", id, proc, flags, n);
            for (uint32_t i = 0; i < n; i++)
                fprintf(f, " %llx", (unsigned long long)pcs[i]);
            fputc('\n', f);
        }
        assert_int_equal(eng_foreach_stack(g, dump_stack, f, &err), 0);
    }
    fclose(f);
    eng_free(g);
    sym_free(sym);
    exp_close(e);
    return dp.buf;
}

static void check(int how, unsigned want_workers)
{
    char d[] = "/tmp/tally-test-pscan-XXXXXX", root[64], child[96], cmd[128];
    assert_non_null(mkdtemp(d));
    snprintf(root, sizeof root, "%s/a.1.tally", d);
    rng = 88172645463325252ULL;
    write_process(root, 4000, "_f1.tally", how & ~(DAMAGE | BACKWARDS));
    for (int i = 1; i <= 3; i++) { /* the damage is in the last one read */
        snprintf(child, sizeof child, "%s/_f%d.tally", root, i);
        write_process(child, 4000 + 100 * (uint32_t)i, NULL, i == 3 ? how : how & ~(DAMAGE | BACKWARDS));
    }
    unsigned w1, w3, w8;
    char *serial = aggregate(root, 1, &w1);
    char *by_process = aggregate(root, 3, &w3); /* 4 processes, 3 threads: a job per process */
    char *by_stream = aggregate(root, 8, &w8);  /* 8 threads: a job per stream */
    assert_int_equal(w1, 1);
    assert_int_equal(w3, want_workers == 1 ? 1 : 3);
    assert_int_equal(w8, want_workers == 1 ? 1 : 8);
    assert_true(strlen(serial) > 10000);
    assert_non_null(strstr(serial, "saturated 1\n"));
    assert_string_equal(serial, by_process);
    assert_string_equal(serial, by_stream);
    free(serial);
    free(by_process);
    free(by_stream);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
}

static void test_parallel_equals_serial(void **state)
{
    (void)state;
    check(0, 3); /* (and 8) */
}

static void test_heap_events_scan_in_order(void **state)
{
    (void)state;
    check(HEAP, 1);
}

static void test_damage_scans_in_order(void **state)
{
    (void)state;
    check(DAMAGE, 1);
}

static void test_time_going_back_scans_in_order(void **state)
{
    (void)state;
    check(BACKWARDS, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parallel_equals_serial),
        cmocka_unit_test(test_heap_events_scan_in_order),
        cmocka_unit_test(test_damage_scans_in_order),
        cmocka_unit_test(test_time_going_back_scans_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
