/*
 * test_blocksel.c - selective files in TAU's syntax: wildcards, routine names taken from
 * signatures, exclude and include lists, comments, and every refusal with its line and sentence.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "experiment/blocksel.h"

static blocksel_t sel;

static int parse(const char *text, unsigned *line, const char **why)
{
    static char buf[4096];
    size_t n = strlen(text);
    memcpy(buf, text, n);
    return blocksel_parse(&sel, buf, n, line, why);
}

static void test_match(void **state)
{
    (void)state;
    assert_true(blocksel_match("sort_#", "sort_5elements"));
    assert_true(blocksel_match("sort_*", "sort_"));
    assert_true(blocksel_match("#", ""));
    assert_true(blocksel_match("a?c", "abc"));
    assert_false(blocksel_match("a?c", "ac"));
    assert_true(blocksel_match("#_loop#", "outer_loop_2"));
    assert_false(blocksel_match("main", "main2"));
    assert_true(blocksel_match("*a*b*c", "xxaxxbxxc"));
    assert_false(blocksel_match("*a*b*c", "xxaxxcxxb"));
}

static void test_lists(void **state)
{
    (void)state;
    unsigned line = 0;
    const char *why = NULL;
    assert_int_equal(parse("# a comment\n\nBEGIN_EXCLUDE_LIST\nvoid quicksort(int *, int, int)\n"
                           "  sort_#  \r\nloop 1\nEND_EXCLUDE_LIST\n", &line, &why), 0);
    assert_int_equal(sel.nexclude, 3);
    assert_false(blocksel_active(&sel, "quicksort"));
    assert_false(blocksel_active(&sel, "sort_5elements"));
    assert_false(blocksel_active(&sel, "loop 1")); /* a named block: the whole entry */
    assert_true(blocksel_active(&sel, "main"));
    assert_true(blocksel_active(&sel, "void quicksort"));
    assert_int_equal(parse("BEGIN_INCLUDE_LIST\nint main(int, char **)\nstd::vector<int>::push_#(int const&)\n"
                           "END_INCLUDE_LIST\nBEGIN_EXCLUDE_LIST\nmain\nEND_EXCLUDE_LIST\n",
                           &line, &why), 0);
    assert_false(blocksel_active(&sel, "main")); /* excluded wins */
    assert_true(blocksel_active(&sel, "std::vector<int>::push_back"));
    assert_false(blocksel_active(&sel, "helper"));
    assert_int_equal(parse("BEGIN_INCLUDE_LIST\nEND_INCLUDE_LIST\n", &line, &why), 0);
    assert_false(blocksel_active(&sel, "main")); /* an empty include list selects nothing */
    assert_int_equal(parse("", &line, &why), 0);
    assert_true(blocksel_active(&sel, "anything"));
}

static void refused(const char *text, unsigned want_line, const char *want)
{
    unsigned line = 0;
    const char *why = NULL;
    assert_int_equal(parse(text, &line, &why), -1);
    assert_int_equal(line, want_line);
    assert_non_null(strstr(why, want));
}

static void test_refusals(void **state)
{
    (void)state;
    refused("main\n", 1, "expected BEGIN_EXCLUDE_LIST or BEGIN_INCLUDE_LIST");
    refused("BEGIN_EXCLUDE_LIST\nfoo\n", 2, "the exclude list is not ended");
    refused("BEGIN_INCLUDE_LIST\nfoo\nBEGIN_EXCLUDE_LIST\n", 3, "the include list is not ended");
    refused("\nBEGIN_FILE_INCLUDE_LIST\nfoo.c\nEND_FILE_INCLUDE_LIST\n", 2, "source files");
    refused("BEGIN_INSTRUMENT_SECTION\nloops file=\"a.c\" routine=\"#\"\nEND_INSTRUMENT_SECTION\n",
            1, "tally_start/tally_stop");
    static char nul[] = "BEGIN_EXCLUDE_LIST\0\n";
    unsigned line;
    const char *why;
    assert_int_equal(blocksel_parse(&sel, nul, sizeof nul - 1, &line, &why), -1);
    assert_non_null(strstr(why, "NUL"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
