/* test_session.c - the analysis session's source search (src/analyzer/session.c). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/session.h"

static void test_source_candidates(void **state)
{
    ses_t *s = ses_new();
    assert_non_null(s);
    tally_err_t err = { 0 };
    assert_int_equal(ses_add_paths(s, ".:/src", &err), 0);
    assert_int_equal(ses_add_pathmap(s, "/build/tree", "/home/me/tree", &err), 0);
    assert_int_equal(ses_add_pathmap(s, "/build/tre", "/never", &err), 0); /* not a prefix dir */
    char buf[256];
    const char *want[] = { "/home/me/tree/lib/a.c", "./a.c", "/src/a.c" };
    size_t i = 0;
    for (; !ses_source_candidate(s, "/build/tree/lib/a.c", i, buf, sizeof buf); i++) {
        assert_true(i < 3);
        assert_string_equal(buf, want[i]);
    }
    assert_int_equal(i, 3);
    /* a relative path: by itself under each directory, then by its base name */
    const char *rel[] = { "./lib/b.c", "./b.c", "/src/lib/b.c", "/src/b.c" };
    for (i = 0; !ses_source_candidate(s, "lib/b.c", i, buf, sizeof buf); i++) {
        assert_true(i < 4);
        assert_string_equal(buf, rel[i]);
    }
    assert_int_equal(i, 4);
    /* -setpath replaces the directories */
    assert_int_equal(ses_set_paths(s, "/only", &err), 0);
    assert_int_equal(ses_source_candidate(s, "/x/c.c", 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "/only/c.c");
    assert_int_equal(ses_source_candidate(s, "/x/c.c", 1, buf, sizeof buf), -1);
    ses_free(s);
}

static void test_open_missing(void **state)
{
    ses_t *s = ses_new();
    tally_err_t err = { 0 };
    assert_true(ses_open(s, "/nonexistent/app.1.tally", &err) < 0);
    assert_int_equal(s->nexps, 0);
    assert_true(strstr(err.msg, "/nonexistent/app.1.tally") != NULL);
    ses_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_candidates),
        cmocka_unit_test(test_open_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
