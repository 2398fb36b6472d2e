/* test_grow.c - the one way arrays grow (src/base/grow.h) and LEB128 reading (src/base/leb128.h,
 * also used for DWARF's unsigned values by the symbols module). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/grow.h"
#include "base/leb128.h"

/* Vectors of a run-time width, zeroed when added; parallel arrays from copies of one capacity. */
static void test_grow_width_zero(void **state)
{
    (void)state;
    uint64_t *v = NULL;
    size_t cap = 0;
    const size_t w = 5;
    for (size_t n = 0; n < 100; n++) {
        assert_int_equal(GROW_W_ZERO(v, n, cap, w), 0);
        assert_true(cap > n);
        for (size_t k = 0; k < w; k++) {
            assert_int_equal(v[n * w + k], 0); /* added zeroed */
            v[n * w + k] = n * w + k + 1;
        }
    }
    for (size_t i = 0; i < 100 * w; i++)
        assert_int_equal(v[i], i + 1);
    size_t old = cap;
    assert_int_equal(GROW_W(v, 10, cap, w), 0); /* room already: nothing moves */
    assert_int_equal(cap, old);
    /* a width whose element size overflows is refused, the vector kept */
    assert_int_equal(GROW_W(v, cap, cap, SIZE_MAX / 4), TALLY_ENOMEM);
    assert_int_equal(cap, old);
    assert_int_equal(v[0], 1);
    free(v);
    /* GROW_ZERO to an index far beyond: everything up to it exists and is zero */
    unsigned char *b = NULL;
    cap = 0;
    assert_int_equal(GROW_ZERO(b, 1000, cap), 0);
    assert_true(cap > 1000);
    for (size_t i = 0; i < cap; i++)
        assert_int_equal(b[i], 0);
    free(b);
    /* two arrays, one capacity */
    int *x = NULL;
    double *y = NULL;
    size_t both = 0;
    for (size_t n = 0; n < 50; n++) {
        size_t c1 = both, c2 = both;
        assert_int_equal(GROW(x, n, c1) || GROW(y, n, c2), 0);
        assert_int_equal(c1, c2);
        both = c1;
        x[n] = (int)n;
        y[n] = (double)n;
    }
    assert_int_equal(x[49], 49);
    free(x);
    free(y);
}

static void test_grow(void **state)
{
    int *a = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(GROW(a, n, cap), 0);
        assert_true(cap > n);
        a[n++] = i;
    }
    for (int i = 0; i < 1000; i++)
        assert_int_equal(a[i], i);
    assert_int_equal(cap, 1024); /* 8, doubled */
    /* a size that cannot be: refused, the array kept */
    size_t big = SIZE_MAX / 2;
    assert_int_equal(base_grow((void **)&a, &cap, big, sizeof *a), TALLY_ENOMEM);
    assert_int_equal(cap, 1024);
    assert_int_equal(a[999], 999);
    free(a);
}

static void test_leb128(void **state)
{
    uint8_t buf[LEB128_MAX];
    const uint64_t vals[] = { 0, 1, 127, 128, 624485, UINT64_MAX };
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        size_t k = leb128_put(buf, vals[i]);
        const uint8_t *p = buf;
        uint64_t v;
        assert_int_equal(leb128_get(&p, buf + k, &v), 0);
        assert_true(v == vals[i]);
        assert_ptr_equal(p, buf + k);
        p = buf; /* cut short */
        assert_int_equal(leb128_get(&p, buf + k - 1, &v), -1);
        assert_ptr_equal(p, buf);
    }
    const uint8_t dwarf[] = { 0xe5, 0x8e, 0x26 }; /* DWARF's example: 624485 */
    const uint8_t *p = dwarf;
    uint64_t v;
    assert_int_equal(leb128_get(&p, dwarf + 3, &v), 0);
    assert_int_equal(v, 624485);
    const uint8_t eleven[11] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0 };
    p = eleven;
    assert_int_equal(leb128_get(&p, eleven + 11, &v), -1); /* longer than 64 bits can be */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_grow_width_zero),
        cmocka_unit_test(test_leb128),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
