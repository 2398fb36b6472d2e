/*
 * test_format.c - the experiment format: writer -> reader round trip across chunks, stack
 * deduplication, lost-event accounting, and the reader's answers to damaged input (truncated
 * events, bad magic, a newer version, a missing or cut log).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/leb128.h"
#include "experiment/evwriter.h"
#include "experiment/evfast.h"
#include "experiment/logfile.h"
#include "experiment/reader.h"

static char dir[256];

static void write_log(const char *d, int complete)
{
    char path[512], buf[1024];
    snprintf(path, sizeof path, "%s/log", d);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "start");
    exp_line_u64(&l, "t", 1000);
    exp_line_u64(&l, "pid", 42);
    exp_line_str(&l, "host", "test host");
    assert_int_equal(exp_line_write(&l, fd), 0);
    char *args[] = { "./prog", "a b", "x=y", "100%" };
    exp_line_begin(&l, buf, sizeof buf, "cmdline");
    exp_line_argv(&l, "argv", args, 4);
    assert_int_equal(exp_line_write(&l, fd), 0);
    exp_line_begin(&l, buf, sizeof buf, "load");
    exp_line_u64(&l, "t", 1000);
    exp_line_u64(&l, "id", 0);
    exp_line_str(&l, "path", "/bin/prog");
    exp_line_hex(&l, "lo", 0x400000);
    exp_line_hex(&l, "hi", 0x500000);
    assert_int_equal(exp_line_write(&l, fd), 0);
    exp_line_begin(&l, buf, sizeof buf, "end");
    exp_line_str(&l, "how", "exit");
    exp_line_u64(&l, "status", 3);
    assert_int_equal(exp_line_write(&l, fd), 0);
    if (!complete)
        assert_int_equal(write(fd, "thread tid=5", 12), 12);
    close(fd);
}

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-format-%d.tally", getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    return 0;
}

static int teardown(void **state)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

struct totals {
    uint64_t events, weight[2], lost;
    uint64_t per_stack_weight[64];
    uint64_t last_t[2];
    int order_ok;
};

static int count_cb(void *ctx, const exp_event_t *ev)
{
    struct totals *t = ctx;
    if (ev->type == EXP_REC_CLOCK) {
        t->events++;
        t->weight[ev->state] += ev->weight;
        if (ev->stack < 64)
            t->per_stack_weight[ev->stack] += ev->weight;
        int k = ev->tid == 100 ? 0 : 1;
        if (ev->t < t->last_t[k])
            t->order_ok = 0;
        t->last_t[k] = ev->t;
    } else if (ev->type == EXP_REC_LOST) {
        t->lost += ev->count;
    }
    return 0;
}

static int stack_cb(void *ctx, const exp_event_t *ev)
{
    struct {
        uint32_t stack[2], n;
    } *seen = ctx;
    if (ev->type == EXP_REC_CLOCK && seen->n < 2)
        seen->stack[seen->n++] = ev->stack;
    return 0;
}

/* Writes n events on two streams, 8 distinct stacks, so that many chunks are used. */
static void write_events(const char *d, int n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/events", d);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t s[2];
    exp_stream_init(&s[0], &f, 100);
    exp_stream_init(&s[1], &f, 101);
    for (int i = 0; i < n; i++) {
        exp_stream_t *st = &s[i & 1];
        uint64_t pcs[40];
        uint32_t depth = 5 + (i % 8) * 4;
        for (uint32_t j = 0; j < depth; j++)
            pcs[j] = 0x400000 + 0x100 * (i % 8) + 0x1000 * j;
        uint32_t id;
        assert_int_equal(exp_stream_stack(st, pcs, depth, 0, &id), 0);
        assert_true(id < 8);
        assert_int_equal(exp_stream_clock(st, 2000 + (uint64_t)i * 1000, id, (uint32_t)(i % 3 == 0),
                                          1000000), 0);
    }
    exp_stream_finish(&s[0], 5000000);
    exp_stream_finish(&s[1], 5000000);
    exp_evfile_close(&f);
}

static void test_round_trip(void **state)
{
    write_log(dir, 1);
    write_events(dir, 20000);
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    assert_int_equal(e->nprocs, 1);
    exp_process_t *p = e->procs[0];
    assert_int_equal(p->pid, 42);
    assert_string_equal(p->host, "test host");
    assert_int_equal(p->argc, 4);
    assert_string_equal(p->argv[1], "a b");
    assert_string_equal(p->argv[2], "x=y");
    assert_string_equal(p->argv[3], "100%");
    assert_int_equal(p->nobjects, 1);
    assert_int_equal(p->objects[0].hi, 0x500000);
    assert_true(p->has_end);
    assert_int_equal(p->end_status, 3);
    assert_int_equal(p->nwarnings, 0);

    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    struct totals t = { .order_ok = 1 };
    assert_int_equal(exp_scan(e, stacks, count_cb, &t, &st, &err), 0);
    assert_int_equal(t.events, 20000);
    assert_true(t.order_ok);
    assert_int_equal(t.weight[0] + t.weight[1], 20000ull * 1000000);
    assert_int_equal(t.weight[1], 6667ull * 1000000);
    /* the two streams share the 8 stacks: interned once each */
    assert_int_equal(exp_stacks_count(stacks), 8);
    assert_true(st.chunks > 10);
    assert_int_equal(st.bad_chunks + st.bad_records + st.seq_gaps + st.unknown_records, 0);
    for (uint32_t id = 0; id < 8; id++) {
        uint32_t n, flags, proc;
        const uint64_t *pcs = exp_stacks_get(stacks, id, &n, &flags, &proc);
        assert_true(n >= 5 && n <= 33 && (n - 5) % 4 == 0);
        uint64_t k = (pcs[0] - 0x400000) / 0x100;
        for (uint32_t j = 0; j < n; j++)
            assert_int_equal(pcs[j], 0x400000 + 0x100 * k + 0x1000 * j);
        assert_int_equal(t.per_stack_weight[id], 2500ull * 1000000);
    }
    exp_stacks_free(stacks);
    exp_close(e);
}

static void test_truncated_events(void **state)
{
    write_log(dir, 0);
    write_events(dir, 20000);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    /* cut in the middle of a chunk, as a copy interrupted by a full disk would */
    assert_int_equal(truncate(path, sb.st_size / 2 + 1000), 0);
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    /* the incomplete last log line is reported, not parsed */
    assert_int_equal(e->procs[0]->nwarnings, 1);
    assert_non_null(strstr(e->procs[0]->warnings[0], "incomplete"));
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    struct totals t = { .order_ok = 1 };
    assert_int_equal(exp_scan(e, stacks, count_cb, &t, &st, &err), 0);
    assert_true(t.events > 5000 && t.events < 15000);
    assert_true(st.bad_chunks >= 1);
    exp_stacks_free(stacks);
    exp_close(e);
}

static void test_corrupt(void **state)
{
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    /* no log */
    assert_int_equal(exp_open(dir, &e, &err), TALLY_ENOTEXP);
    assert_non_null(strstr(err.msg, "no log file"));
    /* not a directory */
    assert_int_equal(exp_open("/etc/passwd", &e, &err), TALLY_ENOTEXP);
    /* a newer version */
    char path[512];
    snprintf(path, sizeof path, "%s/log", dir);
    FILE *f = fopen(path, "w");
    fputs("tally-experiment version=99\nstart t=1\n", f);
    fclose(f);
    assert_int_equal(exp_open(dir, &e, &err), TALLY_EVERSION);
    assert_non_null(strstr(err.msg, "newer tally"));
    /* not our log */
    f = fopen(path, "w");
    fputs("hello\n", f);
    fclose(f);
    assert_int_equal(exp_open(dir, &e, &err), TALLY_ENOTEXP);
    unlink(path);
    /* bad magic in events */
    write_log(dir, 1);
    snprintf(path, sizeof path, "%s/events", dir);
    f = fopen(path, "w");
    for (int i = 0; i < 100; i++)
        fputs("garbage garbage garbage\n", f);
    fclose(f);
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    assert_int_equal(exp_scan(e, stacks, NULL, NULL, NULL, &err), TALLY_ECORRUPT);
    assert_non_null(strstr(err.msg, "bad magic"));
    exp_stacks_free(stacks);
    exp_close(e);
}

static void test_corrupt_records(void **state)
{
    write_log(dir, 1);
    write_events(dir, 3000);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    /* scribble over the records of the first chunk (keep its header) */
    int fd = open(path, O_WRONLY);
    char junk[2000];
    memset(junk, 0xff, sizeof junk);
    assert_int_equal(pwrite(fd, junk, sizeof junk, 4096 + 32 + 10), (ssize_t)sizeof junk);
    close(fd);
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    struct totals t = { .order_ok = 1 };
    assert_int_equal(exp_scan(e, stacks, count_cb, &t, &st, &err), 0);
    assert_true(st.bad_records >= 1);
    assert_true(t.events > 1000 && t.events < 3000);
    exp_stacks_free(stacks);
    exp_close(e);
}

static void test_busy_and_lost(void **state)
{
    write_log(dir, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 0, 0), 0);
    exp_stream_t s;
    exp_stream_init(&s, &f, 7);
    uint64_t pcs[2] = { 0x401000, 0x402000 };
    uint32_t id;
    assert_int_equal(exp_stream_stack(&s, pcs, 2, 0, &id), 0);
    s.busy = 1; /* as if a signal arrived in the middle of a write */
    assert_int_equal(exp_stream_clock(&s, 10, id, 0, 5), -1);
    assert_int_equal(exp_stream_clock(&s, 11, id, 0, 5), -1);
    s.busy = 0;
    assert_int_equal(s.lost[EXP_LOST_BUSY], 2);
    assert_int_equal(exp_stream_clock(&s, 12, id, 0, 5), 0);
    exp_stream_finish(&s, 20);
    exp_evfile_close(&f);
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    struct totals t = { .order_ok = 1 };
    assert_int_equal(exp_scan(e, stacks, count_cb, &t, &st, &err), 0);
    assert_int_equal(t.events, 1);
    assert_int_equal(t.lost, 2);
    assert_int_equal(st.lost[EXP_LOST_BUSY], 2);
    exp_stacks_free(stacks);
    exp_close(e);
}

/* Tracing records: heap, sync and I/O records of two threads, many small chunks; the reader
 * decodes every field and merges the threads by time (each free after its allocation). */
struct trace_check {
    uint64_t last_t, allocs, frees, alloc_bytes, syncs, sync_wait, ios, io_bytes, named;
    uint64_t live[4096]; /* allocated and not yet freed, by index */
    int order_ok, match_ok, fields_ok;
};

static int trace_cb(void *ctx, const exp_event_t *ev)
{
    struct trace_check *c = ctx;
    if (ev->t < c->last_t)
        c->order_ok = 0;
    c->last_t = ev->t;
    uint64_t i = (ev->addr - 0x7f0000000000ull) / 64;
    switch (ev->type) {
    case EXP_REC_HEAP_ALLOC:
        c->allocs++;
        c->alloc_bytes += ev->size;
        if (ev->tid != 100 || ev->stack == EXP_NO_STACK || ev->call != i % EXP_HEAP_NCALLS ||
            i >= 4096)
            c->fields_ok = 0;
        else
            c->live[i] = 1;
        break;
    case EXP_REC_HEAP_FREE:
        c->frees++;
        if (i >= 4096 || !c->live[i] || ev->tid != 101 || ev->stack != EXP_NO_STACK)
            c->match_ok = 0;
        else
            c->live[i] = 0;
        if (ev->call != (i % 2 ? EXP_HEAP_MMAP : EXP_HEAP_MALLOC) || ev->size != (i % 2) * 4096)
            c->fields_ok = 0;
        break;
    case EXP_REC_SYNC:
        c->syncs++;
        c->sync_wait += ev->weight;
        if (ev->addr != 0x601040 || ev->call != EXP_SYNC_COND_WAIT)
            c->fields_ok = 0;
        break;
    case EXP_REC_IO:
        c->ios++;
        c->io_bytes += ev->size;
        if (ev->name) {
            c->named++;
            if (ev->namelen != 9 || memcmp(ev->name, "/tmp/f.tx", 9) || ev->call != EXP_IO_OPEN)
                c->fields_ok = 0;
        } else if (ev->fd != 3 || ev->call != EXP_IO_WRITE || ev->err != (ev->size ? 0 : 28)) {
            c->fields_ok = 0;
        }
        break;
    }
    return 0;
}

static void test_tracing_records(void **state)
{
    write_log(dir, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t a, b;
    exp_stream_init(&a, &f, 100);
    exp_stream_init(&b, &f, 101);
    uint64_t pcs[3] = { 0x401000, 0x402000, 0x403000 };
    uint32_t id, idb; /* stack ids are per stream */
    assert_int_equal(exp_stream_stack(&a, pcs, 3, 0, &id), 0);
    assert_int_equal(exp_stream_stack(&b, pcs, 3, 0, &idb), 0);
    for (uint64_t i = 0; i < 4096; i++) {
        uint64_t addr = 0x7f0000000000ull + 64 * i, t = 10000 + 100 * i;
        assert_int_equal(exp_stream_alloc(&a, t, id, addr, i, (uint32_t)(i % EXP_HEAP_NCALLS)), 0);
        /* the other thread frees it a little later; its stream is written after a's */
        if (i % 4 != 3)
            assert_int_equal(exp_stream_free(&b, t + 50, addr, (i % 2) * 4096,
                                             i % 2 ? EXP_HEAP_MMAP : EXP_HEAP_MALLOC), 0);
        if (i % 64 == 0) {
            assert_int_equal(exp_stream_sync(&a, t + 1, id, 1234, 0x601040, EXP_SYNC_COND_WAIT), 0);
            assert_int_equal(exp_stream_io(&b, t + 60, idb, EXP_IO_OPEN, 10, 0, 3, 0, "/tmp/f.tx", 9),
                             0);
            assert_int_equal(exp_stream_io(&b, t + 70, idb, EXP_IO_WRITE, 20, i % 128 ? 0 : 512, 3,
                                           i % 128 ? 28 : 0, NULL, 0), 0);
        }
    }
    exp_stream_finish(&a, 1000000);
    exp_stream_finish(&b, 1000000);
    exp_evfile_close(&f);

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    static struct trace_check c;
    memset(&c, 0, sizeof c);
    c.order_ok = c.match_ok = c.fields_ok = 1;
    assert_int_equal(exp_scan(e, stacks, trace_cb, &c, &st, &err), 0);
    assert_true(st.chunks > 10);
    assert_int_equal(st.bad_chunks + st.bad_records + st.seq_gaps + st.unknown_records, 0);
    assert_true(c.order_ok);
    assert_true(c.match_ok);
    assert_true(c.fields_ok);
    assert_int_equal(c.allocs, 4096);
    assert_int_equal(c.alloc_bytes, 4095ull * 4096 / 2);
    assert_int_equal(c.frees, 3072);
    assert_int_equal(c.syncs, 64);
    assert_int_equal(c.sync_wait, 64 * 1234);
    assert_int_equal(c.ios, 128);
    assert_int_equal(c.named, 64);
    assert_int_equal(c.io_bytes, 32 * 512);
    uint64_t live = 0;
    for (int i = 0; i < 4096; i++)
        live += c.live[i];
    assert_int_equal(live, 1024);
    exp_stacks_free(stacks);
    exp_close(e);
}

/* Every field of every event, against what was written. The reader decodes the most frequent
 * CLOCK records by a path of their own, so they are mixed here with every other kind of record
 * (whose fields must not stay in the clock events after them, nor the clock's in theirs), with
 * values of every LEB128 length (that path reads fields of up to 4 bytes), states and runtime
 * states out of range, in 4 KiB chunks (whose last records take the general path), on two
 * streams, read by exp_scan and by exp_scan_parallel. */
enum { NWANT = 30000 };
struct want_ev {
    uint32_t type, tid, k, state, rstate, cpu, call, err, nvalues, namelen, got_stack;
    uint64_t t, weight, size, count, addr, values[3];
    int64_t fd;
    const char *name;
};
struct want_list {
    struct want_ev *w[2];
    size_t n[2], next[2];
    int bad; /* the first event that differs, + 1 */
    uint64_t seen;
};

static uint64_t fld_rng = 0x9e3779b97f4a7c15ull;
static uint64_t fld_rand(void)
{
    fld_rng ^= fld_rng << 13;
    fld_rng ^= fld_rng >> 7;
    fld_rng ^= fld_rng << 17;
    return fld_rng;
}

/* A value of a random length: 0 to maxbits bits. */
static uint64_t fld_value(unsigned maxbits)
{
    unsigned bits = (unsigned)(fld_rand() % (maxbits + 1));
    uint64_t v = fld_rand();
    return bits == 64 ? v : v & ((1ull << bits) - 1);
}

static int want_match(struct want_list *wl, const exp_event_t *ev)
{
    int s = ev->stream == 0 ? 0 : 1; /* (streams are numbered from 0, in creation order) */
    if (wl->next[s] >= wl->n[s])
        return 0;
    struct want_ev *w = &wl->w[s][wl->next[s]++];
    int ok = ev->type == w->type && ev->tid == w->tid && ev->t == w->t && ev->proc == 0 &&
             ev->state == w->state && ev->rstate == w->rstate && ev->cpu == w->cpu &&
             ev->weight == w->weight && ev->count == w->count && ev->call == w->call &&
             ev->err == w->err && ev->size == w->size && ev->fd == w->fd &&
             ev->nvalues == w->nvalues && ev->namelen == w->namelen && ev->addr == w->addr &&
             ev->reason == 0 && ev->mref == NULL && ev->dflags == 0 && ev->pc == 0 &&
             ev->regs == NULL && (ev->values != NULL) == (w->nvalues != 0) &&
             (ev->name != NULL) == (w->name != NULL);
    w->got_stack = ev->stack; /* (checked after the scan: the parallel scan's ids are
                                 provisional until it ends) */
    for (uint32_t i = 0; ok && i < w->nvalues; i++)
        ok = ev->values[i] == w->values[i];
    if (ok && w->name)
        ok = !memcmp(ev->name, w->name, w->namelen);
    return ok;
}

static int want_cb(void *ctx, const exp_event_t *ev)
{
    struct want_list *wl = ctx;
    wl->seen++;
    if (!want_match(wl, ev) && !wl->bad)
        wl->bad = (int)wl->seen;
    return 0;
}

static int want_pcb(void *ctx, unsigned worker, const exp_event_t *ev)
{
    (void)worker;
    return want_cb(ctx, ev);
}

static void test_event_fields_exact(void **state)
{
    write_log(dir, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t s[2];
    uint64_t t[2] = { 2000, 2000 };
    uint32_t cpu[2] = { UINT32_MAX, UINT32_MAX };
    struct want_list wl = { 0 };
    wl.w[0] = calloc(NWANT, sizeof(struct want_ev));
    wl.w[1] = calloc(NWANT, sizeof(struct want_ev));
    assert_non_null(wl.w[0]);
    assert_non_null(wl.w[1]);
    exp_stream_init(&s[0], &f, 100);
    exp_stream_init(&s[1], &f, 101);
    static const char *names[] = { "/tmp/a", "/var/log/some-much-longer-name.log" };
    for (int e = 0; e < NWANT; e++) {
        int i = (int)(fld_rand() % 2);
        uint32_t k = (uint32_t)(fld_rand() % 40), id;
        uint64_t pcs[5];
        for (uint32_t j = 0; j < 1 + k % 5; j++)
            pcs[j] = 0x401000 + 16 * (uint64_t)k + 0x1000 * j;
        assert_int_equal(exp_stream_stack(&s[i], pcs, 1 + k % 5, 0, &id), 0);
        t[i] += fld_value(40);
        struct want_ev w = { .type = EXP_REC_CLOCK, .tid = 100 + (uint32_t)i, .k = k, .t = t[i],
                             .cpu = cpu[i], .fd = -1, .count = 1 };
        uint64_t b = fld_value(64), r = fld_rand() % 4 ? 0 : fld_value(20);
        uint64_t st = fld_rand() % 8 ? fld_rand() % EXP_STATE_COUNT : fld_value(32);
        w.state = st < EXP_STATE_COUNT ? (uint32_t)st : UINT32_MAX;
        w.weight = b;
        w.rstate = r <= EXP_KIND_MAXID + 1u ? (uint32_t)r : EXP_RSTATE_NONE;
        switch (fld_rand() % 12) {
        case 0: /* another thread's state: a CLOCK event of that thread, on no known CPU */
            w.tid = 7000 + (uint32_t)(fld_rand() % 3);
            w.cpu = UINT32_MAX;
            assert_int_equal(exp_stream_state_rs(&s[i], t[i], w.tid, id, (uint32_t)st, b,
                                                 (uint32_t)r), 0);
            break;
        case 1: /* no event: the CPU of those after it */
            cpu[i] = (uint32_t)fld_value(32); /* (UINT32_MAX: unknown, as it reads) */
            assert_int_equal(exp_stream_cpu(&s[i], t[i], cpu[i]), 0);
            continue;
        case 2: {
            w.type = EXP_REC_IO;
            w.state = w.rstate = 0;
            w.count = 0;
            w.call = EXP_IO_READ;
            w.size = fld_value(40);
            w.fd = 3;
            if (fld_rand() % 2) {
                w.name = names[fld_rand() % 2];
                w.namelen = (uint32_t)strlen(w.name);
            }
            assert_int_equal(exp_stream_io(&s[i], t[i], id, w.call, b, w.size, 3, 0, w.name,
                                           w.namelen), 0);
            break;
        }
        case 3:
            w.type = EXP_REC_SYNC;
            w.state = w.rstate = 0;
            w.count = 0;
            w.call = EXP_SYNC_COND_WAIT;
            w.addr = fld_value(48);
            assert_int_equal(exp_stream_sync(&s[i], t[i], id, b, w.addr, w.call), 0);
            break;
        case 4:
            w.type = EXP_REC_TRACE;
            w.state = w.rstate = 0;
            w.weight = 0;
            w.call = 9;
            w.nvalues = 1 + (uint32_t)(fld_rand() % 3);
            for (uint32_t v = 0; v < w.nvalues; v++)
                w.values[v] = fld_value(64);
            assert_int_equal(exp_stream_trace(&s[i], t[i], 9, id, w.values, w.nvalues), 0);
            break;
        default:
            assert_int_equal(exp_stream_clock_rs(&s[i], t[i], id, (uint32_t)st, b, (uint32_t)r),
                             0);
        }
        wl.w[i][wl.n[i]++] = w;
    }
    exp_stream_finish(&s[0], t[0] + 1);
    exp_stream_finish(&s[1], t[1] + 1);
    exp_evfile_close(&f);

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_scan_stats_t st;
    for (int parallel = 0; parallel < 2; parallel++) {
        exp_stacks_t *stacks = exp_stacks_new();
        uint32_t *remap[1] = { NULL };
        wl.next[0] = wl.next[1] = 0;
        wl.bad = 0;
        wl.seen = 0;
        if (parallel)
            assert_int_equal(exp_scan_parallel(e, stacks, 1, want_pcb, &wl, remap, &st, &err), 0);
        else
            assert_int_equal(exp_scan(e, stacks, want_cb, &wl, &st, &err), 0);
        assert_int_equal(wl.bad, 0);
        assert_int_equal(wl.next[0], wl.n[0]);
        assert_int_equal(wl.next[1], wl.n[1]);
        for (int i = 0; i < 2; i++)
            for (size_t x = 0; x < wl.n[i]; x++) {
                const struct want_ev *w = &wl.w[i][x];
                uint32_t id = parallel ? remap[0][w->got_stack] : w->got_stack, n, flags, proc;
                const uint64_t *pcs = exp_stacks_get(stacks, id, &n, &flags, &proc);
                assert_int_equal(n, 1 + w->k % 5);
                assert_int_equal(pcs[0], 0x401000 + 16 * (uint64_t)w->k);
            }
        assert_int_equal(st.events, wl.n[0] + wl.n[1]);
        assert_true(st.chunks > 50);
        assert_int_equal(st.bad_chunks + st.bad_records + st.seq_gaps + st.unknown_records, 0);
        free(remap[0]);
        exp_stacks_free(stacks);
    }
    exp_close(e);
    free(wl.w[0]);
    free(wl.w[1]);
}

/* CLOCK records in encodings the writer does not make but a reader accepts (padded LEB128, a
 * runtime state of 0 given, bytes after the fields, a two-byte length, fields of 5 bytes) and
 * damaged ones (a field beyond the record, an undefined stack id): the same events and
 * statistics whichever path of the reader decodes them. */
struct odd_check {
    int n, ok;
    exp_stacks_t *stacks;
};

static int odd_cb(void *ctx, const exp_event_t *ev)
{
    static const struct {
        uint64_t t, weight;
        uint32_t state, rstate, nframes;
    } want[] = {
        { 5005, 1ull << 28, 1, 0, 1 },   /* padded, a 5-byte weight */
        { 5006, 7, 0, 0, 1 },            /* rstate 0 given, a byte after it */
        { 5007, 3, 2, 65536, 1 },        /* the largest runtime state */
        { 5008, 3, 5, 0, 1 },            /* beyond it: none */
        { 5020, 4, UINT32_MAX, 0, 1 },   /* after a malformed one (its time counts) */
        { 5021, 9, 0, 0, 0 },            /* an undefined stack: the empty stack */
        { 5022, 1, 0, 1, 1 },            /* a two-byte length */
        { 5022 + (1ull << 35), 1, 1, 0, 1 }, /* a 6-byte time */
    };
    struct odd_check *c = ctx;
    uint32_t n, flags, proc;
    exp_stacks_get(c->stacks, ev->stack, &n, &flags, &proc);
    if (c->n >= (int)(sizeof want / sizeof *want) || ev->type != EXP_REC_CLOCK ||
        ev->t != want[c->n].t || ev->weight != want[c->n].weight ||
        ev->state != want[c->n].state || ev->rstate != want[c->n].rstate ||
        n != want[c->n].nframes || ev->tid != 77 || ev->count != 1 || ev->fd != -1)
        c->ok = 0;
    c->n++;
    return 0;
}

static void test_clock_encodings(void **state)
{
    write_log(dir, 1);
    static const uint8_t recs[] = {
        1, 4, 0, 0, 1, 0x40,                               /* STACK 0: one frame, 0x40 */
        2, 12, 0x85, 0x00, 0x80, 0x80, 0x00, 0x81, 0x00,   /* CLOCK: dt 5, stack 0, state 1 */
        0x80, 0x80, 0x80, 0x80, 0x01,                      /*   weight 2^28 in 5 bytes */
        2, 6, 1, 0, 0, 7, 0, 0x55,                         /* rstate 0, then a byte more */
        2, 7, 1, 0, 2, 3, 0x80, 0x80, 0x04,                /* rstate 65536 */
        2, 7, 1, 0, 5, 3, 0x81, 0x80, 0x04,                /* rstate 65537: none */
        2, 3, 5, 0, 0,                                     /* malformed: no weight (dt 5) */
        2, 5, 7, 0, 0x87, 0x01, 4,                         /* state 135: unknown */
        2, 4, 1, 9, 0, 9,                                  /* stack 9: never defined */
        2, 0x88, 0x00, 1, 0, 0, 1, 1, 0, 0, 0,             /* length 8 in two bytes */
        2, 9, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 1, 1, /* dt 2^35 in 6 bytes */
    };
    uint8_t file[4096 + 4096] = { 0 };
    memcpy(file, EXP_EV_MAGIC, 8);
    uint32_t h[3] = { EXP_FORMAT_VERSION, EXP_EV_HEADER_SIZE, 4096 };
    memcpy(file + 8, h, sizeof h);
    uint8_t *ch = file + 4096;
    uint32_t magic = EXP_CHUNK_MAGIC, tid = 77, seq = 0, used = sizeof recs;
    uint64_t t0 = 5000;
    memcpy(ch, &magic, 4);
    memcpy(ch + 4, &tid, 4);
    memcpy(ch + 8, &seq, 4);
    memcpy(ch + 12, &used, 4);
    memcpy(ch + 16, &t0, 8);
    memcpy(ch + 32, recs, sizeof recs);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, file, sizeof file), (ssize_t)sizeof file);
    close(fd);

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    struct odd_check c = { 0, 1, exp_stacks_new() };
    exp_scan_stats_t st;
    assert_int_equal(exp_scan(e, c.stacks, odd_cb, &c, &st, &err), 0);
    assert_true(c.ok);
    assert_int_equal(c.n, 8);
    assert_int_equal(st.records, 10);
    assert_int_equal(st.events, 8);
    assert_int_equal(st.bad_records, 2); /* the malformed record, the undefined stack */
    exp_stacks_free(c.stacks);
    exp_close(e);
}

/* Heap records of every width through the inline fast path (evfast.h), packed into HEAP_PACK
 * records: 64-bit sizes, address deltas both ways, times in the kind byte (dt 0 to 62) and after
 * it (63 and more, up to 2^50), every call; CLOCK and MAP_ALLOC records in between (each closes
 * the pack: the next packed record opens another, on the same chains of time and address); a
 * loss while a write is busy turns the fast path off until the LOST record is written; time
 * going back is clamped by the slow path (a HEAP_ALLOC record). */
struct wide_check {
    uint64_t n, bad, lost, clocks, maps;
};

/* Round i: an allocation at wide_t(i), its free wide_fdt(i) ns later; round 500's time went back
 * (both its records are clamped to the time of the record before). */
static uint64_t wide_t(uint64_t i)
{
    return 1000 + i * 1000 + (i >= 100 ? 1ull << 40 : 0) + (i >= 200 ? 1ull << 50 : 0);
}
static uint64_t wide_fdt(uint64_t i)
{
    static const uint64_t dts[] = { 0, 1, 62, 63, 64, 127, 128, 500 };
    return dts[i % 8];
}
static uint64_t wide_addr(uint64_t i) { return i % 3 ? 0x7f0000000000ull - i * 4099 : i << 20; }
static uint64_t wide_size(uint64_t i) { return i % 5 ? i * 77 : ~0ull >> (i % 64); }
static uint32_t wide_call(uint64_t i) { return (uint32_t)(i % EXP_HEAP_NCALLS); }
static uint64_t wide_fsize(uint64_t i) { return i % 2 ? 0 : wide_size(i); }

static int wide_cb(void *ctx, const exp_event_t *ev)
{
    struct wide_check *c = ctx;
    if (ev->type == EXP_REC_LOST) {
        c->lost += ev->count;
        return 0;
    }
    if (ev->type == EXP_REC_CLOCK || ev->type == EXP_REC_MAP_ALLOC) {
        uint64_t i = c->n / 2; /* before round i's allocation */
        if (ev->t != (i == 500 ? wide_t(499) + wide_fdt(499) : wide_t(i)) ||
            (ev->type == EXP_REC_MAP_ALLOC && (ev->addr != (i << 12) + 8 || ev->size != i)))
            c->bad++;
        c->clocks += ev->type == EXP_REC_CLOCK;
        c->maps += ev->type == EXP_REC_MAP_ALLOC;
        return 0;
    }
    uint64_t k = c->n++, i = k / 2;
    int is_free = (int)(k % 2);
    uint64_t t = i == 500 ? wide_t(499) + wide_fdt(499) /* both clamped */
                          : wide_t(i) + (is_free ? wide_fdt(i) : 0);
    if (ev->t != t || ev->addr != wide_addr(i) || ev->call != wide_call(i) ||
        ev->type != (is_free ? EXP_REC_HEAP_FREE : EXP_REC_HEAP_ALLOC) ||
        ev->size != (is_free ? wide_fsize(i) : wide_size(i)))
        c->bad++;
    return 0;
}

/* Counts the records of the events file at path by type (the packed ones in counts[0]). */
static void count_types(const char *path, uint64_t counts[256])
{
    memset(counts, 0, 256 * sizeof *counts);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t m[1 << 22];
    size_t size = fread(m, 1, sizeof m, f);
    fclose(f);
    assert_true(size > 4096 && size < sizeof m);
    uint32_t csize;
    memcpy(&csize, m + 16, 4);
    for (size_t off = 4096; off + 32 <= size; off += csize) {
        uint32_t used;
        memcpy(&used, m + off + 12, 4);
        const uint8_t *p = m + off + 32, *end = p + used;
        while (p < end) {
            uint8_t type = *p++;
            uint64_t len;
            assert_int_equal(leb128_get(&p, end, &len), 0);
            assert_true(len <= (uint64_t)(end - p));
            counts[type]++;
            if (type == EXP_REC_HEAP_PACK) { /* kind and time, address, then 0 to 3 numbers */
                for (const uint8_t *q = p, *pend = p + len; q < pend; counts[0]++) {
                    uint8_t h = *q++;
                    uint64_t v;
                    int nums = 1 + ((h >> 2) == EXP_PACK_DT_LONG) +
                               ((h & 3) == EXP_PACK_ALLOC ? 2 : (h & 3) == EXP_PACK_FREE ? 0 : 3) -
                               ((h & 3) == EXP_PACK_FREE_CALL);
                    for (int k = 0; k < nums; k++)
                        assert_int_equal(leb128_get(&q, pend, &v), 0);
                }
            }
            p += len;
        }
    }
}

static void test_heap_fast_path(void **state)
{
    write_log(dir, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 0, 4096), 0);
    exp_stream_t s;
    exp_stream_init(&s, &f, 7);
    uint64_t pcs[2] = { 0x401000, 0x402000 };
    uint32_t id;
    assert_int_equal(exp_stream_stack(&s, pcs, 2, 0, &id), 0);
    uint64_t nclock = 0, nmap = 0;
    for (uint64_t i = 0; i < 4000; i++) {
        uint64_t t = i == 500 ? wide_t(499) - 5000 : wide_t(i);
        if (i == 300) { /* a signal's write is lost while this one is busy */
            s.busy = 1;
            assert_int_equal(exp_stream_clock(&s, t, id, 0, 1), -1);
            s.busy = 0;
            assert_int_equal(exp_stream_alloc_fast(&s, t, id, 0, 1, 0), -1); /* pending */
            assert_int_equal(exp_stream_free_fast(&s, t, 0, 0, 0), -1);
        }
        if (i % 97 == 1) {
            assert_int_equal(exp_stream_clock(&s, t, id, 0, 1), 0);
            nclock++;
        }
        if (i % 89 == 2) {
            assert_int_equal(exp_stream_map_alloc(&s, t, id, (i << 12) + 8, i, 0), 0);
            nmap++;
        }
        assert_int_equal(exp_stream_alloc(&s, t, id, wide_addr(i), wide_size(i), wide_call(i)), 0);
        assert_int_equal(s.pending[EXP_LOST_BUSY], 0); /* the LOST record went first */
        assert_int_equal(exp_stream_free(&s, t + wide_fdt(i), wide_addr(i), wide_fsize(i),
                                         wide_call(i)),
                         0);
    }
    assert_true(s.seq > 10); /* many chunks */
    exp_stream_finish(&s, ~0ull >> 2);
    exp_evfile_close(&f);

    uint64_t counts[256];
    count_types(path, counts);
    /* the records of the last EXP_FAST_MAX bytes of a chunk are HEAP_ALLOC and HEAP_FREE records
     * (the slow path: a few of at least 5 bytes), and so are a chunk's first, the allocation
     * after the loss and those around the time going back: every other one is packed */
    assert_true(counts[EXP_REC_HEAP_PACK] >= s.seq + nclock + nmap);
    assert_true(counts[0] >= 8000 - s.seq * (EXP_FAST_MAX / 5 + 1) - 4);
    assert_int_equal(counts[0] + counts[EXP_REC_HEAP_ALLOC] + counts[EXP_REC_HEAP_FREE], 8000);

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    struct wide_check c = { 0 };
    assert_int_equal(exp_scan(e, stacks, wide_cb, &c, &st, &err), 0);
    assert_int_equal(st.bad_chunks + st.bad_records + st.seq_gaps + st.unknown_records, 0);
    assert_int_equal(c.n, 8000);
    assert_int_equal(c.bad, 0);
    assert_int_equal(c.lost, 1); /* the fast path counts nothing: its caller goes on */
    assert_int_equal(c.clocks, nclock);
    assert_int_equal(c.maps, nmap);
    exp_stacks_free(stacks);
    exp_close(e);
    (void)state;
}

/* HEAP_PACK records as a reader finds them: each kind of packed record, times in the kind byte
 * and after it, address deltas both ways on the chain HEAP_ALLOC and HEAP_FREE share; a
 * malformed packed record is damage and ends its pack (the records after it are read); a pack
 * still open when its process ended reaches the chunk's used bytes; a closed pack longer than
 * its chunk cannot be framed. */
struct pack_check {
    int n, ok;
    exp_stacks_t *stacks;
};

static int pack_cb(void *ctx, const exp_event_t *ev)
{
    static const struct {
        uint8_t type;
        uint64_t t, addr, size;
        uint32_t call;
    } want[] = {
        { EXP_REC_HEAP_ALLOC, 5005, 0x1000, 32, 0 },
        { EXP_REC_HEAP_FREE, 5067, 0x1000, 0, 0 },
        { EXP_REC_HEAP_ALLOC, 5130, 0xff0, 200, 1 },
        { EXP_REC_HEAP_FREE, 5130 + (1ull << 35), 0x1000, 4096, 9 },
        { EXP_REC_HEAP_ALLOC, 5131 + (1ull << 35), 0x1010, 8, 0 },   /* HEAP_ALLOC */
        { EXP_REC_CLOCK, 5132 + (1ull << 35), 0, 0, 0 },              /* after the damage */
        { EXP_REC_HEAP_FREE, 5133 + (1ull << 35), 0x1010, 0, 0 },    /* the open pack */
        { EXP_REC_HEAP_FREE, 5134 + (1ull << 35), 0x1020, 0, 0 },
    };
    struct pack_check *c = ctx;
    if (c->n >= (int)(sizeof want / sizeof *want) || ev->type != want[c->n].type ||
        ev->t != want[c->n].t || ev->tid != 77 ||
        (ev->type != EXP_REC_CLOCK &&
         (ev->addr != want[c->n].addr || ev->size != want[c->n].size ||
          ev->call != want[c->n].call)))
        c->ok = 0;
    if (ev->type == EXP_REC_HEAP_ALLOC) {
        uint32_t n, flags, proc;
        exp_stacks_get(c->stacks, ev->stack, &n, &flags, &proc);
        if (n != 1)
            c->ok = 0;
    }
    c->n++;
    return 0;
}

static void put_chunk(uint8_t *ch, uint32_t tid, uint32_t stream, const uint8_t *recs,
                      uint32_t used)
{
    uint32_t magic = EXP_CHUNK_MAGIC, seq = 0;
    uint64_t t0 = 5000;
    memcpy(ch, &magic, 4);
    memcpy(ch + 4, &tid, 4);
    memcpy(ch + 8, &seq, 4);
    memcpy(ch + 12, &used, 4);
    memcpy(ch + 16, &t0, 8);
    memcpy(ch + 24, &stream, 4);
    memcpy(ch + 32, recs, used);
}

static void test_heap_pack_records(void **state)
{
    write_log(dir, 1);
    static const uint8_t recs[] = {
        1, 4, 0, 0, 1, 0x40,                       /* STACK 0: one frame */
        12, 0x99, 0x80, 0x80, 0x00,                /* HEAP_PACK of 25 bytes (length in 4) */
        0x14, 0x80, 0x40, 0, 32,                   /*   malloc: dt 5, +0x1000, stack 0, 32 */
        0xf9, 0,                                   /*   free: dt 62, +0 */
        0xfe, 63, 31, 0, 0xc8, 0x01, 1,            /*   calloc: dt 63, -16, stack 0, 200 */
        0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,  /*   munmap: dt 2^35, +16, */
        0x20, 9, 0x80, 0x20,                       /*     4096 bytes */
        5, 4, 1, 0x20, 0, 8,                       /* HEAP_ALLOC: dt 1, +16, stack 0, 8 */
        12, 4, 0x00, 0x80, 0x80, 0x80,             /* HEAP_PACK: a truncated address */
        2, 4, 1, 0, 0, 1,                          /* CLOCK: dt 1 */
        12, 0xff, 0xff, 0xff, 0x7f,                /* HEAP_PACK, open: */
        0x05, 0,                                   /*   free: dt 1, +0 */
        0x05, 0x20,                                /*   free: dt 1, +16 */
    };
    static const uint8_t cut[] = {
        12, 0x7f, 0x05, 0, 0x05, 0, /* HEAP_PACK of 127 bytes in a chunk of 6 */
    };
    uint8_t file[4096 + 2 * 4096] = { 0 };
    memcpy(file, EXP_EV_MAGIC, 8);
    uint32_t h[3] = { EXP_FORMAT_VERSION, EXP_EV_HEADER_SIZE, 4096 };
    memcpy(file + 8, h, sizeof h);
    put_chunk(file + 4096, 77, 0, recs, sizeof recs);
    put_chunk(file + 8192, 78, 1, cut, sizeof cut);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, file, sizeof file), (ssize_t)sizeof file);
    close(fd);

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    struct pack_check c = { 0, 1, exp_stacks_new() };
    exp_scan_stats_t st;
    assert_int_equal(exp_scan(e, c.stacks, pack_cb, &c, &st, &err), 0);
    assert_true(c.ok);
    assert_int_equal(c.n, 8);
    assert_int_equal(st.events, 8);
    assert_int_equal(st.bad_records, 2); /* the truncated record, the pack that cannot be framed */
    assert_int_equal(st.unknown_records, 0);
    exp_stacks_free(c.stacks);
    exp_close(e);
    (void)state;
}

/* MEMREF records round-trip in each of their forms, keep their sample's time (dt 0), and a
 * record with flags this reader does not know is damage, not an event. */
struct mref_check {
    int n, clocks, ok;
    uint64_t last_clock_t;
};

static int mref_cb(void *ctx, const exp_event_t *ev)
{
    struct mref_check *c = ctx;
    if (ev->type == EXP_REC_CLOCK) {
        c->clocks++;
        c->last_clock_t = ev->t;
        return 0;
    }
    if (ev->type != EXP_REC_MEMREF)
        return 0;
    const exp_memref_t *m = ev->mref;
    int k = c->n++;
    if (!m || ev->t != c->last_clock_t || ev->weight != 1000u + (uint64_t)k)
        c->ok = 0;
    else if (k == 0) /* registers */
        c->ok &= m->flags == EXP_MREF_REGS && m->pc == 0x401234 && m->regmask == 0x1ffff &&
                 m->regs[3] == 0x7ffd0000 + 3 && m->regs[EXP_MREF_REG_FSBASE] == 0x7ffd0010 &&
                 m->source == 0 && ev->call == 0;
    else if (k == 1) /* precise */
        c->ok &= m->flags == (EXP_MREF_EA | EXP_MREF_TRIGGER) && m->pc == 0x401240 &&
                 m->ea == 0xdeadbeef000ull && m->source == 2 && m->regmask == 0;
    else if (k == 2) /* nothing: a reason */
        c->ok &= m->flags == 0 && m->reason == EXP_DUNK_NO_VA && m->pc == 0x401250;
    return 0;
}

static void test_memref_records(void **state)
{
    write_log(dir, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t a;
    exp_stream_init(&a, &f, 100);
    uint64_t pcs[2] = { 0x401234, 0x402000 };
    uint32_t id;
    assert_int_equal(exp_stream_stack(&a, pcs, 2, 0, &id), 0);
    exp_memref_t m;
    memset(&m, 0, sizeof m);
    m.flags = EXP_MREF_REGS;
    m.pc = 0x401234;
    m.regmask = (1u << EXP_MREF_NREGS) - 1;
    for (int r = 0; r < EXP_MREF_NREGS; r++)
        m.regs[r] = 0x7ffd0000u + (uint64_t)r;
    assert_int_equal(exp_stream_clock(&a, 5000, id, 0, 1000), 0);
    assert_int_equal(exp_stream_memref(&a, 5000, id, 1000, &m), 0);
    memset(&m, 0, sizeof m);
    m.flags = EXP_MREF_EA | EXP_MREF_TRIGGER;
    m.pc = 0x401240;
    m.ea = 0xdeadbeef000ull;
    m.source = 2;
    assert_int_equal(exp_stream_clock(&a, 6000, id, 0, 1001), 0);
    assert_int_equal(exp_stream_memref(&a, 6000, id, 1001, &m), 0);
    memset(&m, 0, sizeof m);
    m.pc = 0x401250;
    m.reason = EXP_DUNK_NO_VA;
    assert_int_equal(exp_stream_clock(&a, 7000, id, 0, 1002), 0);
    assert_int_equal(exp_stream_memref(&a, 7000, id, 1002, &m), 0);
    m.flags = 8; /* refused by the writer */
    assert_int_equal(exp_stream_memref(&a, 7000, id, 1002, &m), -EINVAL);
    m.flags = EXP_MREF_REGS;
    m.regmask = 1u << EXP_MREF_NREGS;
    assert_int_equal(exp_stream_memref(&a, 7000, id, 1002, &m), -EINVAL);
    exp_stream_finish(&a, 1000000);
    exp_evfile_close(&f);

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    struct mref_check c = { .ok = 1 };
    assert_int_equal(exp_scan(e, stacks, mref_cb, &c, &st, &err), 0);
    assert_int_equal(st.bad_records + st.unknown_records, 0);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.clocks, 3);
    assert_true(c.ok);
    exp_stacks_free(stacks);
    exp_close(e);
}

struct block_check {
    int n;
    uint32_t id[8], exit[8];
    uint64_t t[8];
};

static int block_cb(void *ctx, const exp_event_t *ev)
{
    struct block_check *c = ctx;
    if (ev->type == EXP_REC_BLOCK && c->n < 8) {
        c->id[c->n] = ev->call;
        c->exit[c->n] = ev->bexit;
        c->t[c->n++] = ev->t;
        assert_int_equal(ev->stack, EXP_NO_STACK);
    }
    return 0;
}

/* BLOCK records (the timeline of profiled blocks): written and read back with their id, entry or
 * exit and time; an id above EXP_BLOCK_MAXID is refused by the writer and, forged into the file,
 * is a bad record for the reader (not an event). */
static void test_block_records(void **state)
{
    (void)state;
    write_log(dir, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t a;
    exp_stream_init(&a, &f, 100);
    assert_int_equal(exp_stream_block(&a, 5000, 3, 0), 0);
    assert_int_equal(exp_stream_block(&a, 5000, 0, 0), 0);
    assert_int_equal(exp_stream_block(&a, 6500, 0, 1), 0);
    assert_int_equal(exp_stream_block(&a, 7000, 3, 1), 0);
    assert_int_equal(exp_stream_block(&a, 7000, EXP_BLOCK_MAXID + 1, 0), -EINVAL);
    assert_int_equal(exp_stream_block(&a, 8000, EXP_BLOCK_MAXID, 1), 0);
    exp_stream_finish(&a, 1000000);
    exp_evfile_close(&f);

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    struct block_check c = { 0 };
    assert_int_equal(exp_scan(e, stacks, block_cb, &c, &st, &err), 0);
    assert_int_equal(st.bad_records + st.unknown_records, 0);
    assert_int_equal(c.n, 5);
    const uint32_t ids[5] = { 3, 0, 0, 3, EXP_BLOCK_MAXID }, exits[5] = { 0, 0, 1, 1, 1 };
    const uint64_t ts[5] = { 5000, 5000, 6500, 7000, 8000 };
    for (int i = 0; i < 5; i++) {
        assert_int_equal(c.id[i], ids[i]);
        assert_int_equal(c.exit[i], exits[i]);
        assert_int_equal(c.t[i], ts[i]);
    }
    exp_stacks_free(stacks);
    exp_close(e);

    /* the last record's id, 65535 << 1 | 1 (ff ff 07), forged to 131071 (ff ff 0f) */
    int fd = open(path, O_RDWR);
    uint8_t chunk[4096];
    assert_int_equal(pread(fd, chunk, sizeof chunk, 4096), (ssize_t)sizeof chunk);
    int at = -1;
    for (int i = 32; i + 2 < (int)sizeof chunk; i++)
        if (chunk[i] == 0xff && chunk[i + 1] == 0xff && chunk[i + 2] == 0x07)
            at = i + 2;
    assert_true(at > 0);
    assert_int_equal(pwrite(fd, "\x0f", 1, 4096 + at), 1);
    close(fd);
    assert_int_equal(exp_open(dir, &e, &err), 0);
    stacks = exp_stacks_new();
    memset(&c, 0, sizeof c);
    assert_int_equal(exp_scan(e, stacks, block_cb, &c, &st, &err), 0);
    assert_int_equal(st.bad_records, 1);
    assert_int_equal(c.n, 4);
    exp_stacks_free(stacks);
    exp_close(e);
}

/* Load records: a library unloaded and another one loaded at its addresses starts a mapping
 * generation, and the same stack before and after is two stacks; a relative path is resolved
 * against the recorded working directory; a build-id that is not hex is refused with a warning. */
static void test_load_records(void **state)
{
    (void)state;
    char path[512], buf[1024];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "start");
    exp_line_u64(&l, "t", 1000);
    exp_line_str(&l, "cwd", "/start/dir");
    assert_int_equal(exp_line_write(&l, fd), 0);
    static const struct {
        const char *kind, *path, *cwd, *bid;
        uint64_t t, id, lo;
    } recs[] = {
        { "load", "/lib/a.so", NULL, "aaaa", 1000, 1, 0x10000 },
        { "load", "./rel.so", "/where/it/was", "ABCD", 1000, 2, 0x30000 },
        { "load", "sub/old.so", NULL, "../../../../bin/ls", 1000, 3, 0x50000 },
        { "unload", NULL, NULL, NULL, 5000, 1, 0 },
        { "load", "/lib/b.so", NULL, "bbbb", 5000, 4, 0x10000 },
    };
    for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
        exp_line_begin(&l, buf, sizeof buf, recs[i].kind);
        exp_line_u64(&l, "t", recs[i].t);
        exp_line_u64(&l, "id", recs[i].id);
        if (recs[i].path) {
            exp_line_str(&l, "path", recs[i].path);
            if (recs[i].cwd)
                exp_line_str(&l, "cwd", recs[i].cwd);
            exp_line_str(&l, "buildid", recs[i].bid);
            exp_line_hex(&l, "lo", recs[i].lo);
            exp_line_hex(&l, "hi", recs[i].lo + 0x1000);
        }
        assert_int_equal(exp_line_write(&l, fd), 0);
    }
    close(fd);
    /* one stack at 0x10500 sampled in A's time and in B's */
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t s;
    exp_stream_init(&s, &f, 100);
    uint64_t pcs[2] = { 0x10500, 0x30100 };
    uint32_t id;
    assert_int_equal(exp_stream_stack(&s, pcs, 2, 0, &id), 0);
    assert_int_equal(exp_stream_clock(&s, 2000, id, 0, 1000), 0);
    assert_int_equal(exp_stream_clock(&s, 6000, id, 0, 3000), 0);
    exp_stream_finish(&s, 7000);
    exp_evfile_close(&f);

    exp_experiment_t *e;
    tally_err_t err = { 0 };
    assert_int_equal(exp_open(dir, &e, &err), 0);
    const exp_process_t *p = e->procs[0];
    assert_int_equal(p->nobjects, 4);
    assert_string_equal(p->objects[1].path, "/where/it/was/rel.so");
    assert_string_equal(p->objects[1].buildid, "abcd");
    assert_string_equal(p->objects[2].path, "/start/dir/sub/old.so");
    assert_string_equal(p->objects[2].buildid, "");
    assert_int_equal(p->nnotes, 1);
    assert_non_null(strstr(p->notes[0], "log line 5"));
    assert_non_null(strstr(p->notes[0], "not 2 to 128 hexadecimal digits"));
    assert_int_equal(p->ngens, 2);
    assert_int_equal(exp_generation_at(p, 4999), 0);
    assert_int_equal(exp_generation_at(p, 5000), 1);
    assert_string_equal(exp_object_in(p, 0x10500, 0)->path, "/lib/a.so");
    assert_string_equal(exp_object_in(p, 0x10500, 1)->path, "/lib/b.so");
    assert_string_equal(exp_object_in(p, 0x30100, 1)->path, "/where/it/was/rel.so");
    exp_stacks_t *st = exp_stacks_new();
    struct {
        uint32_t stack[2], n;
    } seen = { { 0, 0 }, 0 };
    assert_int_equal(exp_scan(e, st, stack_cb, &seen, NULL, &err), 0);
    assert_int_equal(seen.n, 2);
    assert_int_not_equal(seen.stack[0], seen.stack[1]);
    assert_int_equal(exp_stacks_gen(st, seen.stack[0]), 0);
    assert_int_equal(exp_stacks_gen(st, seen.stack[1]), 1);
    uint32_t n;
    const uint64_t *frames = exp_stacks_get(st, seen.stack[1], &n, NULL, NULL);
    assert_int_equal(n, 2);
    assert_int_equal(frames[0], 0x10500);
    exp_stacks_free(st);
    exp_close(e);
}

static void test_pct(void **state)
{
    char buf[256];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "k");
    exp_line_str(&l, "v", "a b=c%d\n");
    exp_line_hex(&l, "h", 0xdeadbeef);
    exp_line_i64(&l, "i", -5);
    buf[l.len] = 0;
    assert_string_equal(buf, "k v=a%20b%3Dc%25d%0A h=0xdeadbeef i=-5");
    char enc[] = "a%20b%3Dc%25d%0A";
    exp_pct_decode(enc);
    assert_string_equal(enc, "a b=c%d\n");
    /* a field that does not fit is cut and the line says so */
    char small[64];
    exp_line_begin(&l, small, sizeof small, "k");
    exp_line_str(&l, "v", "0123456789012345678901234567890123456789012345678901234567890");
    assert_true(l.cut);
}

/* ---- bounds on hostile input --------------------------------------------------------------- */

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static size_t put_uleb(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        p[n++] |= v ? 0x80 : 0;
    } while (v);
    return n;
}

/* One stream of one 4096-byte chunk: STACK id sid with one frame, then a CLOCK event on it. */
static void write_one_chunk(uint64_t sid)
{
    uint8_t file[8192] = "TALLYEVT", rec[64], *c = file + 4096;
    uint32_t hdr[4] = { 1, 4096, 4096, 7 };
    memcpy(file + 8, hdr, sizeof hdr);
    size_t n = 0, k;
    uint8_t body[32];
    k = put_uleb(body, sid);
    body[k++] = 0; /* flags */
    body[k++] = 1; /* one frame */
    k += put_uleb(body + k, 0x401000);
    rec[n++] = 1;
    rec[n++] = (uint8_t)k;
    memcpy(rec + n, body, k);
    n += k;
    k = put_uleb(body, 10);
    k += put_uleb(body + k, sid);
    body[k++] = 0;
    k += put_uleb(body + k, 1000000);
    rec[n++] = 2;
    rec[n++] = (uint8_t)k;
    memcpy(rec + n, body, k);
    n += k;
    uint32_t ch[8] = { 0x314b4354, 7, 0, (uint32_t)n, 1000, 0, 0, 0 };
    memcpy(c, ch, sizeof ch);
    memcpy(c + 32, rec, n);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    FILE *f = fopen(path, "w");
    assert_int_equal(fwrite(file, 1, sizeof file, f), sizeof file);
    fclose(f);
}

static int scan_one(exp_scan_stats_t *st, struct totals *t)
{
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    int rc = exp_scan(e, stacks, count_cb, t, st, &err);
    exp_stacks_free(stacks);
    exp_close(e);
    return rc;
}

/* A stream of one chunk holds at most (4096 - 32) / 5 STACK records: a larger id is refused
 * (as a bad record) before any table is sized by it. */
static void test_stack_id_bound(void **state)
{
    write_text("log", "tally-experiment version=1\nstart t=1000 pid=7\n");
    uint64_t limit = (4096 - 32) / 5 + 1;
    uint64_t ids[] = { limit - 1, limit, 1ull << 31, 1ull << 40 };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        write_one_chunk(ids[i]);
        exp_scan_stats_t st;
        struct totals t = { .order_ok = 1 };
        assert_int_equal(scan_one(&st, &t), 0);
        assert_int_equal(t.events, 1);
        assert_int_equal(st.bad_records, i == 0 ? 0 : 2); /* the stack, then its use */
        if (i) {
            assert_int_equal(st.bad_offset, 4096 + 32);
            assert_string_equal(st.bad_what, "a malformed stack record");
        }
    }
}

/* The cut chunk is read in place: a chunk size far beyond the file is no allocation. */
static void test_chunk_beyond_file(void **state)
{
    write_text("log", "tally-experiment version=1\nstart t=1000 pid=7\n");
    write_one_chunk(0);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    int fd = open(path, O_WRONLY);
    uint32_t big = 1u << 30;
    assert_int_equal(pwrite(fd, &big, 4, 16), 4);
    close(fd);
    exp_scan_stats_t st;
    struct totals t = { .order_ok = 1 };
    assert_int_equal(scan_one(&st, &t), 0);
    assert_int_equal(t.events, 1);
    assert_int_equal(st.bad_chunks, 1);
    assert_int_equal(st.bad_offset, 4096);
}

/* Repeated start and settings: the first is used, each repetition is damage with its line; a
 * thread id reused after its end is a new thread; damage has a code and an offset. */
static void test_log_records(void **state)
{
    write_text("log", "tally-experiment version=1\n"
                      "start t=1000 pid=7 host=first\n"
                      "settings clock=1000000\n"
                      "thread t=1001 tid=7 name=a\n"
                      "thread-end t=1002 tid=7\n"
                      "thread t=1003 tid=7 name=b\n"
                      "load t=1000 id=3 path=/x lo=0x1000 hi=0x2000\n"
                      "unload t=1500 id=3\n"
                      "start t=5 pid=99 host=second\n"
                      "settings clock=5\n"
                      "end t=2000 how=exit\n"
                      "thread t=3000 tid=9");
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    const exp_process_t *p = e->procs[0];
    assert_int_equal(p->pid, 7);
    assert_string_equal(p->host, "first");
    assert_int_equal(p->t_start, 1000);
    assert_int_equal(p->clock_ns, 1000000);
    assert_int_equal(p->nthreads, 2);
    assert_string_equal(p->threads[1].name, "b");
    assert_int_equal(p->threads[0].t_end, 1002);
    assert_int_equal(p->objects[0].t_unload, 1500);
    assert_int_equal(p->ndamage, 3);
    assert_int_equal(p->damage[0].code, TALLY_ECORRUPT);
    assert_string_equal(p->damage[0].file, "log");
    assert_int_equal(p->damage[0].offset, 288); /* the incomplete last line */
    assert_int_equal(p->damage[1].offset, UINT64_MAX);
    assert_non_null(strstr(p->warnings[1], "line 9: a second 'start' record"));
    assert_non_null(strstr(p->warnings[2], "line 10: a second 'settings' record"));
    exp_close(e);
    /* no start record: the earliest other record starts the process, never its end */
    write_text("log", "tally-experiment version=1\nend t=9000 how=exit\n");
    assert_int_equal(exp_open(dir, &e, &err), 0);
    assert_int_equal(e->procs[0]->t_start, 0);
    assert_int_equal(e->procs[0]->has_start, 0);
    exp_close(e);
}

/* Chunks come in windows: a stream claims, reserves and maps consecutive chunks together, one at
 * first and twice as many each time (up to EXP_WINDOW_BYTES), so two streams writing in turn
 * own runs of neighbouring chunks, not every other chunk; the chunks of a window a stream did not
 * start stay zero and are read as unused; every record is read. On a full disk a window is cut
 * to the whole chunks reserved, which are used before the records are counted as lost. */
struct window_chunk {
    uint32_t stream, seq, idx;
};

static int cmp_window_chunk(const void *a, const void *b)
{
    const struct window_chunk *x = a, *y = b;
    return x->stream != y->stream ? (x->stream > y->stream) - (x->stream < y->stream)
                                  : (x->seq > y->seq) - (x->seq < y->seq);
}

/* The chunks of path with a magic (into c, sorted by stream and seq); *unused: those without. */
static size_t window_chunks(const char *path, struct window_chunk *c, size_t max, size_t *unused)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    uint8_t h[32];
    size_t n = 0;
    *unused = 0;
    for (uint32_t i = 0; pread(fd, h, 32, EXP_EV_HEADER_SIZE + (off_t)i * 4096) == 32; i++) {
        uint32_t magic;
        memcpy(&magic, h, 4);
        if (!magic) {
            (*unused)++;
            continue;
        }
        assert_int_equal(magic, EXP_CHUNK_MAGIC);
        assert_true(n < max);
        memcpy(&c[n].stream, h + 24, 4);
        memcpy(&c[n].seq, h + 8, 4);
        c[n++].idx = i;
    }
    close(fd);
    qsort(c, n, sizeof *c, cmp_window_chunk);
    return n;
}

static int window_count_cb(void *ctx, const exp_event_t *ev)
{
    uint64_t *n = ctx;
    n[ev->type == EXP_REC_CLOCK ? 0 : ev->type == EXP_REC_LOST ? 1 : 2]++;
    return 0;
}

static void test_chunk_windows(void **state)
{
    write_log(dir, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t s[2];
    exp_stream_init(&s[0], &f, 100);
    exp_stream_init(&s[1], &f, 101);
    uint64_t pcs[1] = { 0x401000 }, n = 0;
    uint32_t id[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(exp_stream_stack(&s[k], pcs, 1, 0, &id[k]), 0);
    while (s[0].seq < 40 || s[1].seq < 40) { /* about 580 records a chunk */
        assert_int_equal(exp_stream_clock(&s[n & 1], 2000 + n, id[n & 1], 0, 1000), 0);
        n++;
    }
    exp_stream_finish(&s[0], 3000 + n);
    exp_stream_finish(&s[1], 3000 + n);
    exp_evfile_close(&f);

    static struct window_chunk c[1024];
    size_t unused, nc = window_chunks(path, c, 1024, &unused);
    assert_true(nc >= 82);
    /* windows of 1, 2, 4, 8, 16 and 32 chunks hold the first 63 of a stream: at most 6 runs
     * of neighbouring chunks each (every other chunk: 40 runs) */
    size_t breaks = 0;
    for (size_t i = 1; i < nc; i++) {
        if (c[i].stream != c[i - 1].stream)
            continue;
        assert_int_equal(c[i].seq, c[i - 1].seq + 1);
        breaks += c[i].idx != c[i - 1].idx + 1;
    }
    assert_true(breaks <= 2 * 5);
    assert_true(unused >= 2 * (63 - 41)); /* the windows' chunks never started */

    tally_err_t err = { 0 };
    exp_experiment_t *e;
    assert_int_equal(exp_open(dir, &e, &err), 0);
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    uint64_t got[3] = { 0 };
    assert_int_equal(exp_scan(e, stacks, window_count_cb, got, &st, &err), 0);
    assert_int_equal(got[0], n);
    assert_int_equal(got[1], 0);
    assert_int_equal(st.unused_chunks, unused);
    assert_int_equal(st.chunks, nc + unused);
    assert_int_equal(st.bad_chunks + st.bad_records + st.seq_gaps + st.unknown_records, 0);
    exp_stacks_free(stacks);
    exp_close(e);

    /* a disk that is full after 40 chunks and a half (a file size limit): the windows of 1,
     * 2, 4, 8 and 16 chunks, then 9 of the next 32 */
    char path2[600];
    snprintf(path2, sizeof path2, "%s/events.full", dir);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = EXP_EV_HEADER_SIZE + 40 * 4096 + 2048;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    assert_int_equal(exp_evfile_create(&f, path2, 42, 1000, 4096), 0);
    exp_stream_init(&s[0], &f, 100);
    assert_int_equal(exp_stream_stack(&s[0], pcs, 1, 0, &id[0]), 0);
    uint64_t written = 0, failed = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        if (exp_stream_clock(&s[0], 2000 + i, id[0], 0, 1000) == 0)
            written++;
        else
            failed++;
    }
    assert_int_equal(f.disk_full, 1);
    assert_int_equal(s[0].lost[EXP_LOST_DISK], failed);
    assert_true(failed > 0 && written > 40 * 500);
    exp_stream_finish(&s[0], 200000);
    exp_evfile_close(&f);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    nc = window_chunks(path2, c, 1024, &unused);
    assert_int_equal(nc, 40);
    assert_int_equal(unused, 1); /* the half chunk reserved when the disk became full */
    for (size_t i = 0; i < nc; i++)
        assert_int_equal(c[i].idx, i);
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_and_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tracing_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_fields_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clock_encodings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_fast_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heap_pack_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memref_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_block_records, setup, teardown),
        cmocka_unit_test(test_pct),
        cmocka_unit_test_setup_teardown(test_stack_id_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunk_beyond_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunk_windows, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
