/*
 * test_perfev.c - the perf ring reader of the collector (collector/perfev.h) on crafted ring
 * contents: sample and lost records in order with their bodies, a record and a header that wrap
 * around the end of the data area, free-running offsets past 2^32, a record longer than the copy
 * (skipped whole), a partial header at the head (left for later), malformed sizes (reading stops,
 * nothing is read past head), and begin/end on a mapped-page image (data_tail given back up to the
 * head seen). Then the counters' handler's decision on a sample read so (collector/ctrmref.h): a
 * precise sample (PEBS at precise_ip 2, IBS op, a page fault) is a MEMREF whose trigger is the
 * sampled IP and whose EA is the sampled ADDR; PEBS at precise_ip 1 and breakpoints give the EA
 * with the IP after the reference; other counters, samples of the kernel, are backtracked.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/ctrmref.h"
#include "collector/perfev.h"

#define DSIZE 256 /* data area of the crafted rings: a power of two */

/* Writes bytes at the free-running offset off of a ring's data area (wrapping). */
static void put(uint8_t *data, uint64_t off, const void *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        data[(off + i) & (DSIZE - 1)] = ((const uint8_t *)src)[i];
}

/* A PERF_RECORD_SAMPLE with PERF_SAMPLE_IP at off; returns its size. */
static uint64_t put_sample(uint8_t *data, uint64_t off, uint16_t misc, uint64_t ip)
{
    struct perf_event_header h = { PERF_RECORD_SAMPLE, misc, 16 };
    put(data, off, &h, sizeof h);
    put(data, off + 8, &ip, 8);
    return 16;
}

static uint64_t put_lost(uint8_t *data, uint64_t off, uint64_t id, uint64_t lost)
{
    struct perf_event_header h = { PERF_RECORD_LOST, 0, 24 };
    put(data, off, &h, sizeof h);
    put(data, off + 8, &id, 8);
    put(data, off + 16, &lost, 8);
    return 24;
}

static void cursor(perfev_cursor_t *c, const uint8_t *data, uint64_t tail, uint64_t head)
{
    c->data = data;
    c->size = DSIZE;
    c->tail = tail;
    c->head = head;
    c->bad = 0;
}

static void test_records_in_order(void **state)
{
    (void)state;
    uint8_t data[DSIZE];
    memset(data, 0xee, sizeof data);
    uint64_t off = 32;
    off += put_sample(data, off, PERF_RECORD_MISC_USER, 0x401000);
    off += put_lost(data, off, 7, 12345);
    off += put_sample(data, off, PERF_RECORD_MISC_KERNEL, 0xffffffff81000000u);
    perfev_cursor_t c;
    perfev_rec_t r;
    memset(&r, 0, sizeof r);
    cursor(&c, data, 32, off);
    assert_int_equal(perfev_ring_next(&c, &r), 1);
    assert_int_equal(r.h.type, PERF_RECORD_SAMPLE);
    assert_int_equal(r.h.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
    assert_int_equal(perfev_rec_u64(&r, 8), 0x401000);
    assert_int_equal(c.tail, 48);
    assert_int_equal(perfev_ring_next(&c, &r), 1);
    assert_int_equal(r.h.type, PERF_RECORD_LOST);
    assert_int_equal(perfev_rec_lost(&r), 12345);
    assert_int_equal(perfev_ring_next(&c, &r), 1);
    assert_int_equal(r.h.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL);
    assert_true(perfev_rec_u64(&r, 8) == 0xffffffff81000000u);
    assert_int_equal(perfev_ring_next(&c, &r), 0);
    assert_int_equal(c.tail, off);
    assert_int_equal(c.bad, 0);
    /* a field past the record's end reads as 0 */
    assert_int_equal(perfev_rec_u64(&r, 16), 0);
}

static void test_empty_ring(void **state)
{
    (void)state;
    uint8_t data[DSIZE] = { 0 };
    perfev_cursor_t c;
    perfev_rec_t r;
    memset(&r, 0, sizeof r);
    cursor(&c, data, 100, 100);
    assert_int_equal(perfev_ring_next(&c, &r), 0);
    assert_int_equal(c.bad, 0);
    assert_int_equal(c.tail, 100);
}

/* Offsets run free (the kernel never wraps them): a record that starts 8 bytes before the end of
 * the data area, and one whose header itself is split, read whole. */
static void test_wrap_around(void **state)
{
    (void)state;
    uint8_t data[DSIZE];
    memset(data, 0, sizeof data);
    uint64_t base = ((uint64_t)5 << 32) * DSIZE; /* far past 2^32, a multiple of the size */
    uint64_t t0 = base + DSIZE - 8;              /* the header fits, the body wraps */
    uint64_t off = t0 + put_sample(data, t0, PERF_RECORD_MISC_USER, 0x1122334455667788u);
    perfev_cursor_t c;
    perfev_rec_t r;
    memset(&r, 0, sizeof r);
    cursor(&c, data, t0, off);
    assert_int_equal(perfev_ring_next(&c, &r), 1);
    assert_true(perfev_rec_u64(&r, 8) == 0x1122334455667788u);
    assert_int_equal(perfev_ring_next(&c, &r), 0);
    assert_true(c.tail == off);

    /* a lost record whose header is split across the end */
    uint64_t t2 = base + 3 * DSIZE - 4;
    uint64_t end = t2 + put_lost(data, t2, 1, 99);
    cursor(&c, data, t2, end);
    assert_int_equal(perfev_ring_next(&c, &r), 1);
    assert_int_equal(r.h.type, PERF_RECORD_LOST);
    assert_int_equal(r.h.size, 24);
    assert_int_equal(perfev_rec_lost(&r), 99);
    assert_true(c.tail == end);
}

/* Fewer bytes than a header between tail and head: nothing to read yet, not an error. */
static void test_partial_header(void **state)
{
    (void)state;
    uint8_t data[DSIZE] = { 0 };
    put_sample(data, 0, PERF_RECORD_MISC_USER, 1);
    perfev_cursor_t c;
    perfev_rec_t r;
    memset(&r, 0, sizeof r);
    cursor(&c, data, 0, 6);
    assert_int_equal(perfev_ring_next(&c, &r), 0);
    assert_int_equal(c.bad, 0);
    assert_int_equal(c.tail, 0);
}

/* A size below a header's would never advance; one past head would read unpublished bytes:
 * both stop the reading and mark it bad, without moving past them. */
static void test_malformed_sizes(void **state)
{
    (void)state;
    uint8_t data[DSIZE] = { 0 };
    uint64_t off = put_sample(data, 0, PERF_RECORD_MISC_USER, 1);
    struct perf_event_header z = { PERF_RECORD_SAMPLE, 0, 0 };
    put(data, off, &z, sizeof z);
    put_sample(data, off + 8, PERF_RECORD_MISC_USER, 2);
    perfev_cursor_t c;
    perfev_rec_t r;
    memset(&r, 0, sizeof r);
    cursor(&c, data, 0, off + 24);
    assert_int_equal(perfev_ring_next(&c, &r), 1);
    assert_int_equal(perfev_ring_next(&c, &r), 0);
    assert_int_equal(c.bad, 1);
    assert_int_equal(c.tail, off);
    assert_int_equal(perfev_ring_next(&c, &r), 0); /* stays stopped */

    struct perf_event_header big = { PERF_RECORD_SAMPLE, 0, 40 };
    put(data, 0, &big, sizeof big);
    cursor(&c, data, 0, 32);
    assert_int_equal(perfev_ring_next(&c, &r), 0);
    assert_int_equal(c.bad, 1);
    assert_int_equal(c.tail, 0);
}

/* A record longer than the copy is skipped whole; its first bytes are there, the rest reads as
 * 0. */
static void test_long_record(void **state)
{
    (void)state;
    static uint8_t data[1024];
    memset(data, 0, sizeof data);
    uint16_t size = PERFEV_REC_MAX + 64;
    struct perf_event_header h = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, size };
    memcpy(data, &h, sizeof h);
    uint64_t first = 0xabcdef, beyond = 0x1234;
    memcpy(data + 8, &first, 8);
    memcpy(data + PERFEV_REC_MAX + 8, &beyond, 8);
    uint64_t next = size;
    struct perf_event_header h2 = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL, 16 };
    memcpy(data + next, &h2, sizeof h2);
    perfev_cursor_t c = { data, sizeof data, 0, next + 16, 0 };
    perfev_rec_t r;
    memset(&r, 0, sizeof r);
    assert_int_equal(perfev_ring_next(&c, &r), 1);
    assert_int_equal(r.h.size, size);
    assert_int_equal(perfev_rec_u64(&r, 8), first);
    assert_int_equal(perfev_rec_u64(&r, PERFEV_REC_MAX + 8), 0);
    assert_int_equal(perfev_ring_next(&c, &r), 1);
    assert_int_equal(r.h.misc, PERF_RECORD_MISC_KERNEL);
    assert_int_equal(perfev_ring_next(&c, &r), 0);
}

/* begin/end on an image of a mapped ring (control page, then the data pages): the reader takes
 * what the kernel published (data_head) from data_tail and gives everything up to that head back,
 * a malformed rest included. */
static void test_begin_end(void **state)
{
    (void)state;
    size_t page = 4096, len = 3 * page;
    uint8_t *m = aligned_alloc(page, len);
    assert_non_null(m);
    memset(m, 0, len);
    struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)m;
    uint8_t *data = m + page;
    uint64_t dsize = len - page;
    uint64_t tail = 3 * dsize - 16, off = tail;
    for (int i = 0; i < 3; i++) {
        struct perf_event_header h = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 16 };
        uint64_t ip = 0x1000 + (uint64_t)i;
        for (size_t k = 0; k < 8; k++)
            data[(off + k) % dsize] = ((uint8_t *)&h)[k];
        for (size_t k = 0; k < 8; k++)
            data[(off + 8 + k) % dsize] = ((uint8_t *)&ip)[k];
        off += 16;
    }
    struct perf_event_header bad = { PERF_RECORD_SAMPLE, 0, 2 };
    for (size_t k = 0; k < 8; k++)
        data[(off + k) % dsize] = ((uint8_t *)&bad)[k];
    mp->data_tail = tail;
    mp->data_head = off + 8;
    perfev_t ev = { 3, mp, len, -1 };
    perfev_cursor_t c;
    perfev_rec_t r;
    memset(&r, 0, sizeof r);
    perfev_ring_begin(&ev, page, &c);
    assert_int_equal(c.size, dsize);
    int n = 0;
    while (perfev_ring_next(&c, &r)) {
        assert_int_equal(perfev_rec_u64(&r, 8), 0x1000 + (uint64_t)n);
        n++;
    }
    assert_int_equal(n, 3);
    assert_int_equal(c.bad, 1);
    perfev_ring_end(&ev, &c);
    assert_true(mp->data_tail == off + 8);
    free(m);
}

/* A PERF_RECORD_SAMPLE with PERF_SAMPLE_IP | PERF_SAMPLE_ADDR at off; returns its size. */
static uint64_t put_sample_addr(uint8_t *data, uint64_t off, uint16_t misc, uint64_t ip,
                                uint64_t addr)
{
    struct perf_event_header h = { PERF_RECORD_SAMPLE, misc, 24 };
    put(data, off, &h, sizeof h);
    put(data, off + 8, &ip, 8);
    put(data, off + 16, &addr, 8);
    return 24;
}

/* The flags the handler gives the MEMREF of the next sample of the ring, read as it reads it
 * (the IP at 8, the ADDR at 16); *pc: the sampled IP. */
static int next_flags(perfev_cursor_t *c, enum ctrm_kind kind, uint64_t *pc, uint64_t *ea)
{
    perfev_rec_t r;
    memset(&r, 0, sizeof r);
    assert_int_equal(perfev_ring_next(c, &r), 1);
    *pc = perfev_rec_u64(&r, sizeof(struct perf_event_header));
    *ea = perfev_rec_u64(&r, sizeof(struct perf_event_header) + 8);
    int user = (r.h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
    return ctrm_flags(kind, user, *ea);
}

static void test_precise_sample_memref(void **state)
{
    (void)state;
    /* the kinds of the counters */
    const uint64_t loads = 0x81d0; /* MEM_INST_RETIRED.ALL_LOADS, a PEBS event */
    assert_int_equal(ctrm_kind(PERF_TYPE_RAW, loads, 0, 2), CTRM_EXACT);
    assert_int_equal(ctrm_kind(PERF_TYPE_RAW, loads, 0, 3), CTRM_EXACT);
    assert_int_equal(ctrm_kind(PERF_TYPE_RAW, loads, 0, 1), CTRM_AFTER);
    assert_int_equal(ctrm_kind(PERF_TYPE_RAW, loads, 0, 0), CTRM_BACKTRACK);
    assert_int_equal(ctrm_kind(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 0),
                     CTRM_BACKTRACK);
    assert_int_equal(ctrm_kind(11, 0, 1, 0), CTRM_EXACT); /* IBS op, a dynamic PMU type */
    assert_int_equal(ctrm_kind(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 0, 0),
                     CTRM_EXACT);
    assert_int_equal(ctrm_kind(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 0, 0),
                     CTRM_BACKTRACK);
    assert_int_equal(ctrm_kind(PERF_TYPE_BREAKPOINT, 0, 0, 0), CTRM_AFTER);

    /* samples as the kernel writes them, wrapping around the end of the ring */
    uint8_t data[DSIZE];
    memset(data, 0, sizeof data);
    uint64_t tail = (1ull << 33) + DSIZE - 20, off = tail;
    off += put_sample_addr(data, off, PERF_RECORD_MISC_USER, 0x401234, 0x7ffd1000);
    off += put_sample_addr(data, off, PERF_RECORD_MISC_USER, 0x401240, 0);
    off += put_sample_addr(data, off, PERF_RECORD_MISC_KERNEL, 0xffffffff81000000ull, 0x601000);
    perfev_cursor_t c;
    cursor(&c, data, tail, off);
    uint64_t pc, ea;
    /* precise: the trigger at the sampled IP, its EA the sampled address */
    int f = next_flags(&c, ctrm_kind(PERF_TYPE_RAW, loads, 0, 2), &pc, &ea);
    assert_int_equal(f, EXP_MREF_EA | EXP_MREF_TRIGGER);
    assert_true(pc == 0x401234 && ea == 0x7ffd1000);
    /* an op without a data address (IBS: not a load or store): the trigger, no EA, so the
     * analyzer says why (not a memory-referencing instruction) instead of backtracking */
    f = next_flags(&c, ctrm_kind(11, 0, 1, 0), &pc, &ea);
    assert_int_equal(f, EXP_MREF_TRIGGER);
    assert_true(pc == 0x401240);
    /* a sample of the kernel: backtracked from the program's interrupted context */
    f = next_flags(&c, ctrm_kind(PERF_TYPE_RAW, loads, 0, 2), &pc, &ea);
    assert_int_equal(f, -1);
    assert_int_equal(perfev_ring_next(&c, &(perfev_rec_t){ 0 }), 0);
    /* the same first sample for the other kinds */
    cursor(&c, data, tail, off);
    assert_int_equal(next_flags(&c, ctrm_kind(PERF_TYPE_RAW, loads, 0, 1), &pc, &ea),
                     EXP_MREF_EA);
    cursor(&c, data, tail, off);
    assert_int_equal(next_flags(&c, ctrm_kind(PERF_TYPE_RAW, loads, 0, 0), &pc, &ea), -1);
    cursor(&c, data, tail, off);
    assert_int_equal(next_flags(&c, ctrm_kind(PERF_TYPE_BREAKPOINT, 0, 0, 0), &pc, &ea),
                     EXP_MREF_EA);
    /* a breakpoint or precise_ip 1 sample without an address: backtracked */
    assert_int_equal(next_flags(&c, ctrm_kind(PERF_TYPE_RAW, loads, 0, 1), &pc, &ea), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_in_order), cmocka_unit_test(test_empty_ring),
        cmocka_unit_test(test_wrap_around),      cmocka_unit_test(test_partial_header),
        cmocka_unit_test(test_malformed_sizes),  cmocka_unit_test(test_long_record),
        cmocka_unit_test(test_begin_end),        cmocka_unit_test(test_precise_sample_memref),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
