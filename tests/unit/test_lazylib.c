/*
 * test_lazylib.c - libraries loaded at their first use (base/lazylib.h): a table resolves once,
 * from many threads at once; a missing library or symbol fails with a reason naming it, every
 * time; and the tally executable itself does not load at its start the libraries it now loads
 * lazily (its dynamic section names none of them).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/lazylib.h"

static const char *const libc_names[] = { "getpid", "strlen" };
static void *libc_fns[2];
static lazylib_t libc_lib = LAZYLIB("libc.so.6", libc_names, libc_fns);

static void *race(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)lazylib_get(&libc_lib);
}

static void test_resolves_once(void **state)
{
    (void)state;
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&th[i], NULL, race, NULL), 0);
    for (int i = 0; i < 8; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        assert_int_equal((intptr_t)rc, 0);
    }
    assert_ptr_equal(libc_fns[0], dlsym(RTLD_DEFAULT, "getpid"));
    size_t (*len)(const char *) = (size_t (*)(const char *))libc_fns[1];
    assert_int_equal(len("tally"), 5);
    assert_string_equal(libc_lib.why, "");
}

static void test_missing_library(void **state)
{
    (void)state;
    static const char *const names[] = { "nothing" };
    static void *fns[1];
    static lazylib_t l = LAZYLIB("libtally-no-such-library.so.9", names, fns);
    for (int i = 0; i < 2; i++) { /* and again: the failure is kept */
        assert_int_equal(lazylib_get(&l), -1);
        assert_non_null(strstr(l.why, "libtally-no-such-library.so.9"));
    }
}

static void test_missing_symbol(void **state)
{
    (void)state;
    static const char *const names[] = { "getpid", "tally_no_such_function" };
    static void *fns[2];
    static lazylib_t l = LAZYLIB("libc.so.6", names, fns);
    assert_int_equal(lazylib_get(&l), -1);
    assert_string_equal(l.why, "libc.so.6 has no tally_no_such_function");
}

/* The libraries every run of tally loaded before it did anything: none of them now. */
static void test_tally_needs_none(void **state)
{
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "readelf -d '%s'", TALLY_EXE);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[512];
    int needed = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "(NEEDED)"))
            continue;
        needed++;
        static const char *const lazy[] = { "libcapstone", "libpfm", "libmicrohttpd", "libstdc++",
                                            "libgnutls" };
        for (size_t i = 0; i < sizeof lazy / sizeof *lazy; i++)
            if (strstr(line, lazy[i]))
                fail_msg("tally loads %s at its start: %s", lazy[i], line);
    }
    assert_int_equal(pclose(f), 0);
    assert_true(needed > 0); /* (readelf ran and read the file) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolves_once),
        cmocka_unit_test(test_missing_library),
        cmocka_unit_test(test_missing_symbol),
        cmocka_unit_test(test_tally_needs_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
