/*
 * test_logrec.c - the log's record kinds and keys (src/experiment/logrec.h): a log holding every
 * record the collector and the driver write, each with every key they give it, written through
 * the writer (logfile.h) with the names of logrec.h, read back by the reader: every value comes
 * back where the reader keeps it, and the reader finds nothing it does not know. A kind or key
 * spelt differently by the two sides fails here.
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

#include "experiment/logfile.h"
#include "experiment/logrec.h"
#include "experiment/reader.h"
#include "experiment/settings.h"

static char dir[256];

static void put(int fd, exp_line_t *l) { assert_int_equal(exp_line_write(l, fd), 0); }

/* Every record with every key, in the order a run writes them. */
static void write_log(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-logrec-%d.tally", getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    char path[512], buf[4096];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_START);
    exp_line_u64(&l, EXP_KEY_T, 1000);
    exp_line_u64(&l, EXP_KEY_REAL, 1700000000000000000ull);
    exp_line_u64(&l, EXP_KEY_PID, 42);
    exp_line_u64(&l, EXP_KEY_PPID, 41);
    exp_line_str(&l, EXP_KEY_HOST, "host a");
    exp_line_str(&l, EXP_KEY_KERNEL, "6.1.0");
    exp_line_str(&l, EXP_KEY_ARCH, "x86_64");
    exp_line_u64(&l, EXP_KEY_NCPUS, 2);
    exp_line_str(&l, EXP_KEY_EXE, "/bin/prog");
    exp_line_str(&l, EXP_KEY_CWD, "/work dir");
    put(fd, &l);

    char *const argv[] = { "/bin/prog", "an arg", NULL };
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_CMDLINE);
    exp_line_argv(&l, EXP_KEY_ARGV, argv, 2);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_ENV);
    exp_line_str(&l, EXP_KEY_NAME, "LD_PRELOAD");
    exp_line_str(&l, EXP_KEY_VALUE, "libx.so");
    put(fd, &l);

    exp_settings_t s;
    exp_settings_default(&s);
    s.clock_ns = 5000000;
    s.sync.mode = EXP_SYNC_CALIBRATE;
    s.sync.ns = 777;
    s.heap = 1;
    s.io = 1;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_SETTINGS);
    exp_settings_log(&s, &l);
    exp_line_str(&l, EXP_KEY_CLOCK_SOURCE, "task-clock");
    exp_line_str(&l, EXP_KEY_STATE_SPLIT, "rusage");
    exp_line_u64(&l, EXP_KEY_SYNC_CALIBRATED, 1);
    exp_line_u64(&l, EXP_KEY_SYNC_CALIBRATION, 123);
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_THREAD);
    exp_line_u64(&l, EXP_KEY_T, 1100);
    exp_line_u64(&l, EXP_KEY_TID, 42);
    exp_line_str(&l, EXP_KEY_NAME, "main thread");
    exp_line_str(&l, EXP_KEY_HOW, "main");
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_LOAD);
    exp_line_u64(&l, EXP_KEY_T, 1200);
    exp_line_u64(&l, EXP_KEY_ID, 3);
    exp_line_str(&l, EXP_KEY_PATH, "/lib/libz.so");
    exp_line_str(&l, EXP_KEY_BUILDID, "ABCDEF0123");
    exp_line_hex(&l, EXP_KEY_BIAS, 0x7f0000000000);
    exp_line_hex(&l, EXP_KEY_LO, 0x7f0000001000);
    exp_line_hex(&l, EXP_KEY_HI, 0x7f0000009000);
    exp_line_hex(&l, EXP_KEY_TLS, 0x1f0);
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_METRIC);
    exp_line_str(&l, EXP_KEY_NAME, "msgbytes");
    exp_line_str(&l, EXP_KEY_TITLE, "Message Bytes");
    exp_line_str(&l, EXP_KEY_UNIT, "bytes");
    exp_line_str(&l, EXP_KEY_AGGREGATE, "sum");
    exp_line_u64(&l, EXP_KEY_TIME, 0);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_KIND);
    exp_line_u64(&l, EXP_KEY_ID, 7);
    exp_line_str(&l, EXP_KEY_NAME, "msg_send");
    exp_line_str(&l, EXP_KEY_METRICS, "msgbytes");
    put(fd, &l);

    static const uint64_t sample_vals[] = { 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22 };
    static const char *const sample_keys[] = {
        EXP_KEY_UTIME,   EXP_KEY_STIME, EXP_KEY_MINFLT, EXP_KEY_MAJFLT, EXP_KEY_INBLOCK,
        EXP_KEY_OUBLOCK, EXP_KEY_NVCSW, EXP_KEY_NIVCSW, EXP_KEY_MAXRSS, EXP_KEY_RSS,
        EXP_KEY_RCHAR,   EXP_KEY_WCHAR,
    };
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_SAMPLE);
    exp_line_u64(&l, EXP_KEY_T, 1300);
    exp_line_u64(&l, EXP_KEY_ID, 1);
    exp_line_str(&l, EXP_KEY_REASON, "label");
    exp_line_str(&l, EXP_KEY_LABEL, "phase one");
    for (size_t i = 0; i < sizeof sample_keys / sizeof *sample_keys; i++)
        exp_line_u64(&l, sample_keys[i], sample_vals[i]);
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_PAUSE);
    exp_line_u64(&l, EXP_KEY_T, 1400);
    exp_line_str(&l, EXP_KEY_BY, "signal");
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_RESUME);
    exp_line_u64(&l, EXP_KEY_T, 1500);
    exp_line_str(&l, EXP_KEY_BY, "signal");
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_WARNING);
    exp_line_str(&l, EXP_KEY_WHAT, "a warning, with spaces");
    exp_line_str(&l, EXP_KEY_BY, "tally-collect");
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_UNLOAD);
    exp_line_u64(&l, EXP_KEY_T, 1600);
    exp_line_u64(&l, EXP_KEY_ID, 3);
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_THREAD_END);
    exp_line_u64(&l, EXP_KEY_T, 1700);
    exp_line_u64(&l, EXP_KEY_TID, 42);
    exp_line_u64(&l, EXP_KEY_CPU, 900);
    exp_line_u64(&l, EXP_KEY_USER, 600);
    exp_line_u64(&l, EXP_KEY_SYSTEM, 300);
    exp_line_u64(&l, EXP_KEY_SAMPLES, 9);
    exp_line_str(&l, EXP_KEY_ALIVE, "1");
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_STATS);
    exp_line_u64(&l, EXP_KEY_SAMPLES, 31);
    exp_line_u64(&l, EXP_KEY_EXPECTED, 32);
    exp_line_u64(&l, EXP_KEY_UNWIND_FAILURES, 33);
    exp_line_u64(&l, EXP_KEY_DROPPED_BUSY, 34);
    exp_line_u64(&l, EXP_KEY_DROPPED_DISK, 35);
    exp_line_u64(&l, EXP_KEY_TRUNCATED_STACKS, 36);
    exp_line_u64(&l, EXP_KEY_STACKS, 37);
    exp_line_u64(&l, EXP_KEY_PROFILED_NS, 38);
    exp_line_u64(&l, EXP_KEY_RING_LOST, 39);
    exp_line_u64(&l, EXP_KEY_UNWIND_NO_ROOM, 40);
    exp_line_u64(&l, EXP_KEY_DISK_FULL, 0);
    exp_line_u64(&l, EXP_KEY_TRACE_DROPPED, 41 + 42 + 43 + 44);
    exp_line_u64(&l, EXP_KEY_TRACE_DROPPED_HEAP, 41);
    exp_line_u64(&l, EXP_KEY_TRACE_DROPPED_IO, 42);
    exp_line_u64(&l, EXP_KEY_TRACE_DROPPED_SYNC, 43);
    exp_line_u64(&l, EXP_KEY_TRACE_DROPPED_API, 44);
    exp_line_u64(&l, EXP_KEY_TRACE_TRUNCATED_STACKS, 45);
    exp_line_u64(&l, EXP_KEY_TRACE_UNWIND_FAILURES, 46);
    exp_line_u64(&l, EXP_KEY_TRACE_WALKS, 47);
    put(fd, &l);

    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_END);
    exp_line_u64(&l, EXP_KEY_T, 9000);
    exp_line_str(&l, EXP_KEY_HOW, "signal");
    exp_line_u64(&l, EXP_KEY_SIGNAL, 15);
    exp_line_str(&l, EXP_KEY_NAME, "SIGTERM");
    exp_line_u64(&l, EXP_KEY_STATUS, 0);
    put(fd, &l);
    close(fd);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static void test_every_record_round_trips(void **state)
{
    (void)state;
    write_log();
    exp_experiment_t *e = NULL;
    tally_err_t err = { 0 };
    assert_int_equal(exp_open(dir, &e, &err), 0);
    assert_int_equal(e->nprocs, 1);
    const exp_process_t *p = e->procs[0];
    for (size_t i = 0; i < p->nwarnings; i++)
        print_message("reader: %s\n", p->warnings[i]);
    assert_int_equal(p->ndamage, 0);
    /* the warning record is the only warning: nothing unknown, nothing refused */
    assert_int_equal(p->nwarnings, 1);
    assert_string_equal(p->warnings[0], "a warning, with spaces");

    /* start */
    assert_true(p->has_start);
    assert_int_equal(p->t_start, 1000);
    assert_int_equal(p->real_start, 1700000000000000000ull);
    assert_int_equal(p->pid, 42);
    assert_int_equal(p->ppid, 41);
    assert_string_equal(p->host, "host a");
    assert_string_equal(p->kernel, "6.1.0");
    assert_string_equal(p->arch, "x86_64");
    assert_int_equal(p->ncpus, 2);
    assert_string_equal(p->exe, "/bin/prog");
    assert_string_equal(p->cwd, "/work dir");
    /* cmdline */
    assert_int_equal(p->argc, 2);
    assert_string_equal(p->argv[0], "/bin/prog");
    assert_string_equal(p->argv[1], "an arg");
    /* settings */
    assert_true(p->has_settings);
    assert_int_equal(p->clock_ns, 5000000);
    assert_int_equal(p->settings.clock_ns, 5000000);
    assert_true(p->heap_on && p->io_on && p->sync_on);
    assert_string_equal(p->clock_source, "task-clock");
    assert_true(p->sync_calibrated);
    assert_int_equal(p->sync_calibration, 123);
    /* thread, thread-end */
    assert_int_equal(p->nthreads, 1);
    assert_int_equal(p->threads[0].tid, 42);
    assert_string_equal(p->threads[0].name, "main thread");
    assert_string_equal(p->threads[0].how, "main");
    assert_int_equal(p->threads[0].t_start, 1100);
    assert_int_equal(p->threads[0].t_end, 1700);
    assert_int_equal(p->threads[0].cpu, 900);
    assert_int_equal(p->threads[0].user, 600);
    assert_int_equal(p->threads[0].system, 300);
    assert_int_equal(p->threads[0].samples, 9);
    /* load, unload */
    assert_int_equal(p->nobjects, 1);
    assert_int_equal(p->objects[0].id, 3);
    assert_string_equal(p->objects[0].path, "/lib/libz.so");
    assert_string_equal(p->objects[0].buildid, "abcdef0123");
    assert_int_equal(p->objects[0].bias, 0x7f0000000000);
    assert_int_equal(p->objects[0].lo, 0x7f0000001000);
    assert_int_equal(p->objects[0].hi, 0x7f0000009000);
    assert_int_equal(p->objects[0].tls_below, 0x1f0);
    assert_int_equal(p->objects[0].t_load, 1200);
    assert_int_equal(p->objects[0].t_unload, 1600);
    /* metric, kind */
    assert_int_equal(p->nmetrics, 1);
    assert_string_equal(p->metrics[0].name, "msgbytes");
    assert_string_equal(p->metrics[0].title, "Message Bytes");
    assert_string_equal(p->metrics[0].unit, "bytes");
    assert_int_equal(p->metrics[0].time, 0);
    assert_int_equal(p->nkinds, 1);
    assert_int_equal(p->kinds[0].id, 7);
    assert_string_equal(p->kinds[0].name, "msg_send");
    assert_int_equal(p->kinds[0].nmetrics, 1);
    /* sample */
    assert_int_equal(p->nsamples, 1);
    const exp_sample_t *s = &p->samples[0];
    assert_int_equal(s->id, 1);
    assert_int_equal(s->t, 1300);
    assert_string_equal(s->reason, "label");
    assert_string_equal(s->label, "phase one");
    const uint64_t got[] = { s->utime,   s->stime, s->minflt, s->majflt, s->inblock, s->oublock,
                             s->nvcsw,   s->nivcsw, s->maxrss, s->rss,   s->rchar,   s->wchar };
    for (size_t i = 0; i < sizeof got / sizeof *got; i++)
        assert_int_equal(got[i], 11 + i);
    /* pause, resume */
    assert_int_equal(p->npauses, 2);
    assert_int_equal(p->pauses[0].t, 1400);
    assert_int_equal(p->pauses[0].paused, 1);
    assert_int_equal(p->pauses[1].t, 1500);
    assert_int_equal(p->pauses[1].paused, 0);
    /* stats */
    assert_true(p->has_stats);
    assert_int_equal(p->st_samples, 31);
    assert_int_equal(p->st_expected, 32);
    assert_int_equal(p->st_unwind_failures, 33);
    assert_int_equal(p->st_dropped_busy, 34);
    assert_int_equal(p->st_dropped_disk, 35);
    assert_int_equal(p->st_truncated_stacks, 36);
    assert_int_equal(p->st_unwind_no_room, 40);
    assert_int_equal(p->st_ring_lost, 39);
    assert_int_equal(p->st_dropped_heap, 41);
    assert_int_equal(p->st_dropped_io, 42);
    assert_int_equal(p->st_dropped_sync, 43);
    assert_true(p->st_disk_full); /* dropped_disk > 0 says so too */
    /* end */
    assert_true(p->has_end);
    assert_int_equal(p->t_end, 9000);
    assert_string_equal(p->end_how, "signal");
    assert_int_equal(p->end_signal, 15);
    assert_string_equal(p->end_signame, "SIGTERM");
    /* every field of every record is kept as written, under the key written */
    const exp_record_t *env = NULL;
    for (size_t i = 0; i < p->nrecords; i++)
        if (!strcmp(p->records[i].kind, EXP_LOG_ENV))
            env = &p->records[i];
    assert_non_null(env);
    assert_string_equal(exp_record_get(env, EXP_KEY_NAME), "LD_PRELOAD");
    assert_string_equal(exp_record_get(env, EXP_KEY_VALUE), "libx.so");
    exp_close(e);
}

/* The records of the capabilities added later that the reader interprets (a counter and its
 * statistics, a rank's `mpi` record, a comment), and those kept for the report models (blocks,
 * notes) as the writers write them: every value back under the key written. */
static void test_later_records_round_trip(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tally-test-logrec2-%d.tally", getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    char path[512], buf[4096];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_START);
    exp_line_u64(&l, EXP_KEY_T, 1000);
    exp_line_u64(&l, EXP_KEY_PID, 7);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_COMMENT);
    exp_line_str(&l, EXP_KEY_TEXT, "first try");
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_MPI);
    exp_line_u64(&l, EXP_KEY_RANK, 3);
    exp_line_u64(&l, EXP_KEY_SIZE, 4);
    exp_line_str(&l, EXP_KEY_LAUNCHER, "openmpi");
    exp_line_str(&l, EXP_KEY_JOB, "job42");
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_METRIC);
    exp_line_u64(&l, EXP_KEY_T, 1100);
    exp_line_str(&l, EXP_KEY_NAME, "pagefaults");
    exp_line_str(&l, EXP_KEY_TITLE, "page-faults");
    exp_line_str(&l, EXP_KEY_UNIT, "events");
    exp_line_str(&l, EXP_KEY_AGGREGATE, "sum");
    exp_line_u64(&l, EXP_KEY_TIME, 0);
    exp_line_u64(&l, EXP_KEY_HZ, 0);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_COUNTER);
    exp_line_u64(&l, EXP_KEY_T, 1100);
    exp_line_u64(&l, EXP_KEY_ID, 2);
    exp_line_str(&l, EXP_KEY_NAME, "page-faults");
    exp_line_str(&l, EXP_KEY_METRIC, "pagefaults");
    exp_line_u64(&l, EXP_KEY_TYPE, 1);
    exp_line_hex(&l, EXP_KEY_CONFIG, 2);
    exp_line_hex(&l, EXP_KEY_CONFIG1, 0);
    exp_line_hex(&l, EXP_KEY_CONFIG2, 0);
    exp_line_hex(&l, EXP_KEY_BP_ADDR, 0x1000);
    exp_line_u64(&l, EXP_KEY_BP_LEN, 8);
    exp_line_u64(&l, EXP_KEY_BP_TYPE, 2);
    exp_line_u64(&l, EXP_KEY_INTERVAL, 17);
    exp_line_u64(&l, EXP_KEY_DATA, 1);
    exp_line_u64(&l, EXP_KEY_KERNEL, 0);
    exp_line_u64(&l, EXP_KEY_PROGRAM, 0);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_COUNTER_STATS);
    exp_line_u64(&l, EXP_KEY_ID, 2);
    const char *const keys[] = { EXP_KEY_SAMPLES, EXP_KEY_EVENTS, EXP_KEY_COUNTED,
                                 EXP_KEY_ENABLED, EXP_KEY_RUNNING, EXP_KEY_THROTTLED,
                                 EXP_KEY_LOST, EXP_KEY_DROPPED, EXP_KEY_COLLECTOR };
    for (unsigned i = 0; i < sizeof keys / sizeof *keys; i++)
        exp_line_u64(&l, keys[i], 100 + i);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_BLOCK);
    exp_line_u64(&l, EXP_KEY_ID, 0);
    exp_line_str(&l, EXP_KEY_NAME, "solve");
    exp_line_str(&l, EXP_KEY_GROUP, "TAU_USER");
    exp_line_hex(&l, EXP_KEY_ADDR, 0x4000);
    exp_line_u64(&l, EXP_KEY_ACTIVE, 1);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_NOTE);
    exp_line_u64(&l, EXP_KEY_T, 1200);
    exp_line_str(&l, EXP_KEY_NAME, EXP_NOTE_MPI_PEER);
    exp_line_u64(&l, EXP_KEY_TO, 1);
    exp_line_u64(&l, EXP_KEY_MSGS, 5);
    exp_line_u64(&l, EXP_KEY_BYTES, 640);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_BLOCK_THREAD);
    exp_line_u64(&l, EXP_KEY_TID, 7);
    exp_line_u64(&l, EXP_KEY_UNMATCHED, 1);
    exp_line_u64(&l, EXP_KEY_LOST, 2);
    put(fd, &l);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_END);
    exp_line_u64(&l, EXP_KEY_T, 9000);
    exp_line_str(&l, EXP_KEY_HOW, "exit");
    exp_line_u64(&l, EXP_KEY_STATUS, 0);
    put(fd, &l);
    close(fd);

    exp_experiment_t *e = NULL;
    tally_err_t err = { 0 };
    assert_int_equal(exp_open(dir, &e, &err), 0);
    const exp_process_t *p = e->procs[0];
    assert_int_equal(p->nwarnings, 0);
    assert_int_equal(p->mpi_rank1, 4);
    assert_int_equal(p->mpi_size, 4);
    assert_string_equal(p->mpi_launcher, "openmpi");
    assert_string_equal(p->mpi_job, "job42");
    assert_int_equal(p->ncounters, 1);
    const exp_counter_t *c = &p->counters[0];
    assert_int_equal(c->id, 2);
    assert_string_equal(c->name, "page-faults");
    assert_string_equal(p->metrics[c->metric].name, "pagefaults");
    assert_int_equal(c->interval, 17);
    assert_int_equal(c->data, 1);
    assert_int_equal(c->has_stats, 1);
    const uint64_t got[] = { c->samples, c->events, c->counted, c->enabled, c->running,
                             c->throttled, c->lost, c->dropped };
    for (unsigned i = 0; i < sizeof got / sizeof *got; i++)
        assert_int_equal(got[i], 100 + i);
    /* the records the report models read: kept with every key */
    int seen = 0;
    for (size_t i = 0; i < p->nrecords; i++) {
        const exp_record_t *r = &p->records[i];
        if (!strcmp(r->kind, EXP_LOG_COMMENT)) {
            assert_string_equal(exp_record_get(r, EXP_KEY_TEXT), "first try");
            seen |= 1;
        } else if (!strcmp(r->kind, EXP_LOG_BLOCK)) {
            assert_string_equal(exp_record_get(r, EXP_KEY_GROUP), "TAU_USER");
            assert_int_equal(exp_record_u64(r, EXP_KEY_ACTIVE, 0), 1);
            seen |= 2;
        } else if (!strcmp(r->kind, EXP_LOG_NOTE)) {
            assert_string_equal(exp_record_get(r, EXP_KEY_NAME), EXP_NOTE_MPI_PEER);
            assert_int_equal(exp_record_u64(r, EXP_KEY_BYTES, 0), 640);
            seen |= 4;
        } else if (!strcmp(r->kind, EXP_LOG_BLOCK_THREAD)) {
            assert_int_equal(exp_record_u64(r, EXP_KEY_UNMATCHED, 0), 1);
            seen |= 8;
        }
    }
    assert_int_equal(seen, 15);
    exp_close(e);
}

/* The first line is the magic and a version the reader takes. */
static void test_first_line(void **state)
{
    (void)state;
    assert_int_equal(strncmp(EXP_LOG_FIRST_LINE, EXP_LOG_MAGIC " version=", 25), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_every_record_round_trips, teardown),
        cmocka_unit_test_teardown(test_later_records_round_trip, teardown),
        cmocka_unit_test(test_first_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
