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
        cmocka_unit_test(test_leb128),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
