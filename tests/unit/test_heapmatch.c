/*
 * test_heapmatch.c - matching frees to allocations: exact addresses, a missed free (a new block at
 * a live address), unknown frees, mappings unmapped whole, by head, tail, middle or several at
 * once, and a random run against a plain model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/heapmatch.h"

typedef struct ended {
    uint64_t n, bytes, stacks;
} ended_t;

static void on_end(void *ctx, const hm_block_t *b)
{
    ended_t *e = ctx;
    e->n++;
    e->bytes += b->size;
    e->stacks += b->info.stack;
}

static hm_info_t info(uint32_t stack)
{
    hm_info_t i = { .stack = stack };
    return i;
}

static void test_heap_blocks(void **state)
{
    hm_t *h = hm_new();
    ended_t e = { 0 };
    hm_info_t a = info(1), b = info(2);
    assert_int_equal(hm_alloc(h, 0x1000, 100, 0, &a, on_end, &e), 0);
    assert_int_equal(hm_alloc(h, 0x2000, 200, 0, &b, on_end, &e), 0);
    assert_int_equal(hm_count(h), 2);
    assert_int_equal(hm_bytes(h), 300);
    assert_int_equal(hm_release(h, 0x1000, 0, 0, on_end, &e), 100);
    assert_int_equal(e.n, 1);
    assert_int_equal(e.stacks, 1);
    /* a free of an address never allocated (before tracing began): ignored */
    assert_int_equal(hm_release(h, 0x9000, 0, 0, on_end, &e), 0);
    assert_int_equal(e.n, 1);
    /* a new block where one is live: the old one ended without its free */
    hm_info_t c = info(7);
    assert_int_equal(hm_alloc(h, 0x2000, 50, 0, &c, on_end, &e), 0);
    assert_int_equal(e.n, 2);
    assert_int_equal(e.stacks, 3);
    assert_int_equal(hm_count(h), 1);
    assert_int_equal(hm_bytes(h), 50);
    /* a heap free does not end a mapping at the same address, nor the reverse */
    assert_int_equal(hm_alloc(h, 0x5000, 4096, 1, &a, on_end, &e), 0);
    assert_int_equal(hm_release(h, 0x5000, 0, 0, on_end, &e), 0);
    assert_int_equal(hm_release(h, 0x2000, 50, 1, on_end, &e), 0);
    assert_int_equal(hm_count(h), 2);
    hm_clear(h);
    assert_int_equal(hm_count(h), 0);
    assert_int_equal(hm_bytes(h), 0);
    hm_free(h);
}

static void test_mappings(void **state)
{
    hm_t *h = hm_new();
    ended_t e = { 0 };
    hm_info_t a = info(1);
    /* whole */
    hm_alloc(h, 0x100000, 0x4000, 1, &a, on_end, &e);
    assert_int_equal(hm_release(h, 0x100000, 0x4000, 1, on_end, &e), 0x4000);
    assert_int_equal(e.n, 1);
    /* head, then tail, then the rest */
    hm_alloc(h, 0x200000, 0x4000, 1, &a, on_end, &e);
    assert_int_equal(hm_release(h, 0x200000, 0x1000, 1, on_end, &e), 0x1000);
    assert_int_equal(hm_bytes(h), 0x3000);
    assert_int_equal(hm_release(h, 0x203000, 0x1000, 1, on_end, &e), 0x1000);
    assert_int_equal(hm_bytes(h), 0x2000);
    assert_int_equal(e.n, 1);
    assert_int_equal(hm_release(h, 0x201000, 0x2000, 1, on_end, &e), 0x2000);
    assert_int_equal(e.n, 2);
    assert_int_equal(hm_count(h), 0);
    /* a hole in the middle, then one range over both sides and a neighbour */
    hm_alloc(h, 0x300000, 0x3000, 1, &a, on_end, &e);
    hm_alloc(h, 0x303000, 0x1000, 1, &a, on_end, &e);
    assert_int_equal(hm_release(h, 0x301000, 0x1000, 1, on_end, &e), 0x1000);
    assert_int_equal(hm_bytes(h), 0x3000);
    assert_int_equal(hm_release(h, 0x300000, 0x4000, 1, on_end, &e), 0x3000);
    assert_int_equal(e.n, 4);
    assert_int_equal(hm_count(h), 0);
    assert_int_equal(hm_bytes(h), 0);
    hm_free(h);
}

/* Many blocks with clustered addresses (long probe runs), freed in random order, checked
 * against a plain array. */
static void test_random(void **state)
{
    enum { N = 60000 };
    hm_t *h = hm_new();
    uint64_t *live = calloc(N, sizeof *live); /* size of block i, 0 = not live */
    ended_t e = { 0 };
    srand(42);
    uint64_t bytes = 0, count = 0;
    for (int step = 0; step < 400000; step++) {
        int i = rand() % N;
        uint64_t addr = 0x7f0000000000ull + (uint64_t)i * 16;
        if (live[i]) {
            assert_int_equal(hm_release(h, addr, 0, 0, on_end, &e), live[i]);
            bytes -= live[i];
            count--;
            live[i] = 0;
        } else {
            hm_info_t in = info((uint32_t)i);
            live[i] = 1 + (uint64_t)(rand() % 1000);
            assert_int_equal(hm_alloc(h, addr, live[i], 0, &in, on_end, &e), 0);
            bytes += live[i];
            count++;
        }
        if (step % 50000 == 0) {
            assert_int_equal(hm_count(h), count);
            assert_int_equal(hm_bytes(h), bytes);
        }
    }
    assert_int_equal(hm_count(h), count);
    assert_int_equal(hm_bytes(h), bytes);
    ended_t all = { 0 };
    hm_foreach(h, on_end, &all);
    assert_int_equal(all.n, count);
    assert_int_equal(all.bytes, bytes);
    free(live);
    hm_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_blocks),
        cmocka_unit_test(test_mappings),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
