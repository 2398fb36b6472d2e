/*
 * test_collect_args.c - `tally collect`'s option parser (collect_parse_args, src/cli/collect.h),
 * without running anything: the defaults, every option in its short and long form, where the
 * program's own arguments begin, the help, and bad values refused with status 2.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/collect.h"

#define MS 1000000ull

/* Parses the words given (argv[0] is "collect"); returns the status, *o and *prog as parsed. */
static int parse(struct collect_opts *o, int *prog, ...)
{
    static char *argv[64];
    int argc = 0;
    argv[argc++] = "collect";
    va_list ap;
    va_start(ap, prog);
    for (char *w; (w = va_arg(ap, char *)) != NULL;)
        argv[argc++] = w;
    va_end(ap);
    argv[argc] = NULL;
    return collect_parse_args(argc, argv, o, prog);
}
#define PARSE(o, prog, ...) parse(o, prog, __VA_ARGS__, (char *)NULL)

static void test_defaults(void **state)
{
    (void)state;
    struct collect_opts o;
    int prog;
    assert_int_equal(PARSE(&o, &prog, "./app", "-p", "x"), 0);
    assert_int_equal(prog, 1); /* the program's own -p is its own */
    assert_int_equal(o.clock_ns, 10 * MS);
    assert_int_equal(o.follow, 1);
    assert_int_equal(o.has_duration, 0);
    assert_null(o.output);
    assert_null(o.directory);
    assert_int_equal(o.dry_run, 0);
    assert_int_equal(o.max_depth, 1024);
    assert_int_equal(o.sample_ns, 1000 * MS);
    assert_int_equal(o.states, 1);
    assert_int_equal(o.sample_sig, 0);
    assert_int_equal(o.pause_sig, 0);
    assert_null(o.sync);
    assert_int_equal(o.heap, 0);
    assert_int_equal(o.io, 0);
    assert_int_equal(o.archive, 1);
}

static void test_every_option(void **state)
{
    (void)state;
    struct collect_opts o;
    int prog;
    assert_int_equal(PARSE(&o, &prog, "-p", "hi", "-F", "off", "-t", "2-10", "-o", "run",
                           "-d", "out/dir", "-n", "--max-depth=64", "-S", "0.5", "-l", "SIGUSR1",
                           "-y", "USR2", "--states=off", "-s", "100", "-H", "on", "-i", "on",
                           "-A", "src", "./app", "arg"),
                     0);
    assert_int_equal(prog, 28);
    assert_int_equal(o.clock_ns, 1 * MS);
    assert_int_equal(o.follow, 0);
    assert_int_equal(o.has_duration, 1);
    assert_int_equal(o.dur_start, 2000 * MS);
    assert_int_equal(o.dur_end, 10000 * MS);
    assert_string_equal(o.output, "run");
    assert_string_equal(o.directory, "out/dir");
    assert_int_equal(o.dry_run, 1);
    assert_int_equal(o.max_depth, 64);
    assert_int_equal(o.sample_ns, 500 * MS);
    assert_int_equal(o.sample_sig, SIGUSR1);
    assert_int_equal(o.pause_sig, SIGUSR2);
    assert_int_equal(o.states, 0);
    assert_non_null(o.sync);
    assert_string_equal(o.sync, "100000"); /* 100 us, in ns */
    assert_ptr_equal(o.sync, o.sync_ns);  /* in the caller's copy, not the parser's */
    assert_int_equal(o.heap, 1);
    assert_int_equal(o.io, 1);
    assert_int_equal(o.archive, 2);

    /* long forms, and the other values */
    assert_int_equal(PARSE(&o, &prog, "--clock=lo", "--follow=on", "--duration=5", "--output=x",
                           "--directory=d", "--dry-run", "--samples=off", "--sync=all",
                           "--heap=off", "--io=off", "--archive=off", "--sample-signal=10",
                           "--pause-signal=SIGUSR2", "prog"),
                     0);
    assert_int_equal(prog, 14);
    assert_int_equal(o.clock_ns, 100 * MS);
    assert_int_equal(o.follow, 1);
    assert_int_equal(o.dur_start, 0);
    assert_int_equal(o.dur_end, 5000 * MS);
    assert_int_equal(o.dry_run, 1);
    assert_int_equal(o.sample_ns, 0);
    assert_string_equal(o.sync, "all");
    assert_int_equal(o.archive, 0);
    assert_int_equal(o.sample_sig, 10);
    assert_int_equal(o.pause_sig, SIGUSR2);
    assert_int_equal(PARSE(&o, &prog, "-p", "off", "-s", "on", "prog"), 0);
    assert_int_equal(o.clock_ns, 0);
    assert_string_equal(o.sync, "on");
    assert_int_equal(PARSE(&o, &prog, "-p", "2.5", "-s", "off", "prog"), 0);
    assert_int_equal(o.clock_ns, 2500000);
    assert_null(o.sync);
}

static void test_help(void **state)
{
    (void)state;
    struct collect_opts o;
    int prog;
    char *none[] = { "collect", NULL };
    /* no arguments: the help and the counter lists; -h alone: the lists (gprofng's collect) */
    assert_int_equal(collect_parse_args(1, none, &o, &prog), COLLECT_HELP_ALL);
    assert_int_equal(PARSE(&o, &prog, "-h"), COLLECT_LISTS);
    assert_int_equal(PARSE(&o, &prog, "-p", "hi", "--help", "prog"), COLLECT_HELP);
    /* -h with a counter, -M, --blocks are options like the others */
    assert_int_equal(PARSE(&o, &prog, "-h", "page-faults,1", "-h", "context-switches", "-M", "on",
                           "--blocks=off", "prog"), 0);
    assert_int_equal(o.ncounter_args, 2);
    assert_string_equal(o.counter_args[1], "context-switches");
    assert_int_equal(o.mpi, 1);
    assert_string_equal(o.blocks, "off");
}

static void test_refused(void **state)
{
    (void)state;
    struct collect_opts o;
    int prog;
    /* each refused with status 2 (and a message on stderr) */
    assert_int_equal(PARSE(&o, &prog, "-p", "fast", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-p", "0.001", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-F", "maybe", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-t", "x", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-t", "10-2", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-o", "a/", "prog"), 2); /* a path needs a name */
    assert_int_equal(PARSE(&o, &prog, "-o", "", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "--max-depth=0", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "--max-depth=65537", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-S", "0.0001", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-l", "SIGNOPE", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-l", "SIGSEGV", "prog"), 2); /* tally's own */
    assert_int_equal(PARSE(&o, &prog, "-l", "USR1", "-y", "USR1", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "--states=maybe", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-s", "sometimes", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-H", "2", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-A", "binaries", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "--bogus", "prog"), 2);
    assert_int_equal(PARSE(&o, &prog, "-p"), 2);                 /* needs a value */
    assert_int_equal(PARSE(&o, &prog, "-p", "hi"), 2);           /* no program */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_option),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
