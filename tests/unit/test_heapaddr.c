/*
 * test_heapaddr.c - live heap blocks by address (heapaddr.h): a block is found from any address
 * inside it and not outside, frees end it, a new block over a live one ends that one, munmap
 * trims a mapping's head or tail or splits it (offsets still from the allocation's start), malloc
 * blocks win over the mapping they were carved from, and a long random run against a plain model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/heapaddr.h"

static void test_blocks(void **state)
{
    (void)state;
    ha_t *h = ha_new();
    assert_non_null(h);
    assert_int_equal(ha_alloc(h, 0x1000, 100, 0, 7), 0);
    assert_int_equal(ha_alloc(h, 0x2000, 16, 0, 8), 0);
    assert_null(ha_find(h, 0xfff));
    const ha_block_t *b = ha_find(h, 0x1000);
    assert_non_null(b);
    assert_int_equal(b->tag, 7);
    assert_int_equal(ha_find(h, 0x1063)->tag, 7);
    assert_null(ha_find(h, 0x1064));
    assert_int_equal(ha_find(h, 0x200f)->tag, 8);
    /* a free of an address that starts no block changes nothing */
    ha_release(h, 0x1010, 0, 0);
    assert_int_equal(ha_find(h, 0x1010)->tag, 7);
    ha_release(h, 0x1000, 0, 0);
    assert_null(ha_find(h, 0x1010));
    /* a block over a live one (its free was missed) replaces it */
    assert_int_equal(ha_alloc(h, 0x1ff0, 64, 0, 9), 0);
    assert_int_equal(ha_find(h, 0x2000)->tag, 9);
    assert_int_equal(ha_find(h, 0x1ff0)->base, 0x1ff0);
    /* a zero-sized block still holds its first byte */
    assert_int_equal(ha_alloc(h, 0x5000, 0, 0, 10), 0);
    assert_int_equal(ha_find(h, 0x5000)->tag, 10);
    assert_null(ha_find(h, 0x5001));
    ha_clear(h);
    assert_null(ha_find(h, 0x2000));
    assert_int_equal(ha_alloc(h, 0x2000, 16, 0, 1), 0);
    assert_int_equal(ha_find(h, 0x2000)->tag, 1);
    ha_free(h);
}

static void test_mappings(void **state)
{
    (void)state;
    ha_t *h = ha_new();
    assert_int_equal(ha_alloc(h, 0x10000, 0x10000, 1, 1), 0);
    /* a malloc block carved out of the mapping (a program's own allocator) is the object */
    assert_int_equal(ha_alloc(h, 0x11000, 0x100, 0, 2), 0);
    assert_int_equal(ha_find(h, 0x11010)->tag, 2);
    assert_int_equal(ha_find(h, 0x11100)->tag, 1);
    /* munmap of the head, of the tail, of the middle */
    ha_release(h, 0x10000, 0x1000, 1);
    assert_null(ha_find(h, 0x10fff));
    const ha_block_t *b = ha_find(h, 0x12000);
    assert_int_equal(b->lo, 0x11000);
    assert_int_equal(b->base, 0x10000); /* offsets stay from the allocation's start */
    assert_int_equal(b->size, 0x10000);
    ha_release(h, 0x1f000, 0x1000, 1);
    assert_null(ha_find(h, 0x1f000));
    assert_int_equal(ha_find(h, 0x1efff)->tag, 1);
    ha_release(h, 0x14000, 0x2000, 1);
    assert_null(ha_find(h, 0x14000));
    assert_null(ha_find(h, 0x15fff));
    assert_int_equal(ha_find(h, 0x13fff)->hi, 0x14000);
    b = ha_find(h, 0x16000);
    assert_int_equal(b->lo, 0x16000);
    assert_int_equal(b->hi, 0x1f000);
    assert_int_equal(b->base, 0x10000);
    /* one munmap across several mappings */
    assert_int_equal(ha_alloc(h, 0x30000, 0x1000, 1, 3), 0);
    ha_release(h, 0x0, 0x100000, 1);
    assert_null(ha_find(h, 0x16000));
    assert_null(ha_find(h, 0x30000));
    assert_int_equal(ha_find(h, 0x11000)->tag, 2); /* the malloc block is not a mapping */
    /* a new mapping over part of a live one (MAP_FIXED) */
    assert_int_equal(ha_alloc(h, 0x40000, 0x4000, 1, 4), 0);
    assert_int_equal(ha_alloc(h, 0x41000, 0x1000, 1, 5), 0);
    assert_int_equal(ha_find(h, 0x40fff)->tag, 4);
    assert_int_equal(ha_find(h, 0x41000)->tag, 5);
    assert_int_equal(ha_find(h, 0x42000)->tag, 4);
    ha_free(h);
}

/* A plain model: one tag per page of a small space, for mappings only (the malloc side of the
 * model is the same code with exact-address frees). */
#define PAGES 512
static void test_random(void **state)
{
    (void)state;
    ha_t *h = ha_new();
    static uint32_t model[PAGES]; /* 0: free, else the tag */
    uint64_t x = 12345;
    for (uint32_t step = 1; step < 200000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t p = (uint32_t)(x % PAGES), n = 1 + (uint32_t)(x >> 20) % 16;
        if (p + n > PAGES)
            n = PAGES - p;
        if (x >> 60 & 1) {
            assert_int_equal(ha_alloc(h, (uint64_t)p * 4096, (uint64_t)n * 4096, 1, step), 0);
            for (uint32_t i = 0; i < n; i++)
                model[p + i] = step;
        } else {
            ha_release(h, (uint64_t)p * 4096, (uint64_t)n * 4096, 1);
            for (uint32_t i = 0; i < n; i++)
                model[p + i] = 0;
        }
        uint32_t q = (uint32_t)(x >> 40) % PAGES;
        const ha_block_t *b = ha_find(h, (uint64_t)q * 4096 + 17);
        if (!model[q]) {
            assert_null(b);
        } else {
            assert_non_null(b);
            assert_int_equal(b->tag, model[q]);
        }
    }
    ha_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_mappings),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
