/* test_report_er.c - er_print's size ranges of -heapstat and -iostat (analyzer/report_er.h):
 * each size falls in the range er_print 2.40 counted it in (measured with gprofng on a program
 * allocating these sizes), and the ranges cover every size without a gap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/report_er.h"

static void test_sizes_as_er_print(void **state)
{
    (void)state;
    static const struct {
        uint64_t bytes;
        const char *range;
    } seen[] = {
        { 1, "0KB - 1KB" },          { 100, "0KB - 1KB" },          { 2000, "1KB - 8KB" },
        { 4096, "1KB - 8KB" },       { 16384, "8KB - 32KB" },       { 20000, "8KB - 32KB" },
        { 40000, "32KB - 128KB" },   { 100000, "32KB - 128KB" },    { 200000, "128KB - 256KB" },
        { 600000, "512KB - 1000KB" }, { 1000000, "512KB - 1000KB" }, { 3000000, "1000KB - 10MB" },
        { 10000000, "1000KB - 10MB" }, { 40000000, "10MB - 100MB" }, { 100000000, "10MB - 100MB" },
        { 300000000, "100MB - 1GB" },
    };
    for (size_t i = 0; i < sizeof seen / sizeof *seen; i++)
        assert_string_equal(rep_size_range(rep_size_index(seen[i].bytes)), seen[i].range);
}

static void test_ranges_cover(void **state)
{
    (void)state;
    /* each bound is in its range and the next byte in the next one; the last has no end */
    static const uint64_t bounds[] = { 1024, 8192, 32768, 131072, 262144, 524288, 1024000,
                                       10485760, 104857600, 1073741824, 10737418240ull };
    for (int i = 0; i < (int)(sizeof bounds / sizeof *bounds); i++) {
        assert_int_equal(rep_size_index(bounds[i]), i);
        assert_int_equal(rep_size_index(bounds[i] + 1), i + 1);
    }
    assert_int_equal(rep_size_index(0), 0);
    assert_int_equal(rep_size_index(UINT64_MAX), REP_NSIZES - 1);
    assert_string_equal(rep_size_range(REP_NSIZES - 1), "over 10GB");
    assert_string_equal(rep_size_range(-1), "?");
    assert_string_equal(rep_size_range(REP_NSIZES), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_as_er_print),
        cmocka_unit_test(test_ranges_cover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
