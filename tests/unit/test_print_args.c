/*
 * test_print_args.c - `tally print`'s option parsers without running a view: the command line
 * (pr_parse_args: commands, abbreviations, arguments needed or optional, experiments, --json,
 * usage errors with status 2) and metric specs (pr_parse_mspec: flavors, visibility, the name
 * column's place, hidden metrics, unknown metrics with suggestions, flavors a view refuses), the
 * latter against the metrics of a synthetic experiment (selfexp.h).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/print.h"
#include "selfexp.h"

static char dir[256];

/* Parses the words given (argv[0] is "print"). */
static int parse(pr_args_t *pa, ...)
{
    static char *argv[64];
    int argc = 0;
    argv[argc++] = "print";
    va_list ap;
    va_start(ap, pa);
    for (char *w; (w = va_arg(ap, char *)) != NULL;)
        argv[argc++] = w;
    va_end(ap);
    argv[argc] = NULL;
    return pr_parse_args(argc, argv, pa);
}
#define PARSE(pa, ...) parse(pa, __VA_ARGS__, (char *)NULL)

static void step_is(const pr_args_t *pa, size_t i, const char *name, const char *arg)
{
    assert_true(i < pa->nsteps);
    assert_string_equal(pa->steps[i].name, name);
    assert_string_equal(pa->steps[i].arg, arg);
}

static void test_commands(void **state)
{
    (void)state;
    pr_args_t pa;
    assert_int_equal(PARSE(&pa, "-functions", "a.tally"), 0);
    assert_int_equal(pa.nsteps, 1);
    step_is(&pa, 0, "functions", "");
    assert_int_equal(pa.npaths, 1);
    assert_string_equal(pa.paths[0], "a.tally");
    assert_int_equal(pa.json, 0);
    pr_args_free(&pa);
    /* order kept; abbreviations, two dashes, -cmd=ARG, arguments from the next word;
     * experiments anywhere */
    assert_int_equal(PARSE(&pa, "--json", "a.tally", "-limit=5", "-func", "--metrics",
                           "e.totalcpu:name", "b.tally", "-csingle", "main"), 0);
    assert_int_equal(pa.json, 1);
    assert_int_equal(pa.nsteps, 4);
    step_is(&pa, 0, "limit", "5");
    step_is(&pa, 1, "functions", "");
    step_is(&pa, 2, "metrics", "e.totalcpu:name");
    step_is(&pa, 3, "csingle", "main");
    assert_int_equal(pa.npaths, 2);
    assert_string_equal(pa.paths[1], "b.tally");
    pr_args_free(&pa);
    /* --norc; -en_desc's argument is kept for loading, and the step still runs */
    assert_int_equal(PARSE(&pa, "a.tally", "-functions", "--norc", "-en_desc", "=^cc1$"), 0);
    assert_int_equal(pa.norc, 1);
    assert_non_null(pa.en_desc);
    assert_string_equal(pa.en_desc, "=^cc1$");
    assert_int_equal(pa.nsteps, 2);
    step_is(&pa, 1, "en_desc", "=^cc1$");
    pr_args_free(&pa);
    assert_int_equal(PARSE(&pa, "-en_desc=off", "a.tally"), 0);
    assert_string_equal(pa.en_desc, "off");
    assert_int_equal(pa.norc, 0);
    pr_args_free(&pa);
    /* -h anywhere */
    assert_int_equal(PARSE(&pa, "-functions", "-h"), 0);
    assert_int_equal(pa.help, 1);
    pr_args_free(&pa);
    /* a lone dash is an experiment name, not a command */
    assert_int_equal(PARSE(&pa, "-"), 0);
    assert_int_equal(pa.npaths, 1);
    pr_args_free(&pa);
}

/* Optional arguments (er_print's `-header [EXP_ID]`): the next word only when it is a number or
 * "all" and no existing path; an optional name only when it is no path and no option. */
static void test_optional(void **state)
{
    (void)state;
    pr_args_t pa;
    assert_int_equal(PARSE(&pa, "-header", "1", "x.tally"), 0);
    step_is(&pa, 0, "header", "1");
    assert_int_equal(pa.npaths, 1);
    pr_args_free(&pa);
    assert_int_equal(PARSE(&pa, "-header", "x.tally"), 0);
    step_is(&pa, 0, "header", "");
    assert_string_equal(pa.paths[0], "x.tally");
    pr_args_free(&pa);
    assert_int_equal(PARSE(&pa, "-sample_detail", "all", "x.tally"), 0);
    step_is(&pa, 0, "sample_detail", "all");
    pr_args_free(&pa);
    /* an experiment directory named 1 wins over the number */
    char cwd[4096], tmp[] = "/tmp/tally-test-print-args-XXXXXX";
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_non_null(mkdtemp(tmp));
    assert_int_equal(chdir(tmp), 0);
    assert_int_equal(mkdir("1", 0755), 0);
    assert_int_equal(PARSE(&pa, "-header", "1"), 0);
    step_is(&pa, 0, "header", "");
    assert_int_equal(pa.npaths, 1);
    assert_string_equal(pa.paths[0], "1");
    pr_args_free(&pa);
    assert_int_equal(PARSE(&pa, "-callstack_history", "1"), 0); /* a path: not the name */
    step_is(&pa, 0, "callstack_history", "");
    pr_args_free(&pa);
    assert_int_equal(PARSE(&pa, "-callstack_history", "solve", "1"), 0);
    step_is(&pa, 0, "callstack_history", "solve");
    pr_args_free(&pa);
    assert_int_equal(PARSE(&pa, "-callstack_history", "-functions", "1"), 0);
    step_is(&pa, 0, "callstack_history", "");
    step_is(&pa, 1, "functions", "");
    pr_args_free(&pa);
    assert_int_equal(rmdir("1"), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rmdir(tmp), 0);
}

static void test_usage_errors(void **state)
{
    (void)state;
    pr_args_t pa;
    assert_int_equal(PARSE(&pa, "-nosuchcommand", "x.tally"), 2);
    pr_args_free(&pa);
    assert_int_equal(PARSE(&pa, "-c", "x.tally"), 2); /* ambiguous: calltree, csingle, ... */
    pr_args_free(&pa);
    assert_int_equal(PARSE(&pa, "x.tally", "-csingle"), 2); /* its argument is missing */
    pr_args_free(&pa);
}

/* ---- metric specs, against a synthetic experiment's metrics ---------------------------------- */

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-print-args-%d.tally", getpid());
    const selfexp_stack_t st[] = { { { selfexp_pc_in((void *)test_commands) }, 1, 1000000 } };
    selfexp_write(dir, st, 1);
    ses_t *s = ses_new();
    tally_err_t err = { 0 };
    assert_int_equal(ses_open(s, dir, &err), 0);
    assert_int_equal(ses_start(s, &err), 0);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    ses_free(*state);
    return selfexp_remove(dir);
}

static void col_is(const mspec_t *m, int i, int fl, const char *metric, int value, int pct)
{
    assert_true(i < m->ncols);
    assert_int_equal(m->cols[i].flavor, fl);
    assert_string_equal(m->cols[i].def->name, metric);
    assert_int_equal(m->cols[i].value, value);
    assert_int_equal(m->cols[i].percent, pct);
}

static void test_mspec(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    mspec_t m;
    const int EI = FL_E | FL_I;
    assert_int_equal(pr_parse_mspec(s->eng, "e.totalcpu:i.%totalcpu:i%user:name", &m, EI, &err),
                     0);
    assert_int_equal(m.ncols, 3);
    col_is(&m, 0, FL_E, "totalcpu", 1, 0); /* . the value */
    col_is(&m, 1, FL_I, "totalcpu", 1, 1); /* .% the value and the percentage */
    col_is(&m, 2, FL_I, "user", 0, 1);     /* % the percentage only */
    assert_int_equal(m.name_pos, 3);
    /* the name first; a metric without a flavor is e and i; + is value and percent */
    assert_int_equal(pr_parse_mspec(s->eng, "name:+user", &m, EI, &err), 0);
    assert_int_equal(m.name_pos, 0);
    assert_int_equal(m.ncols, 2);
    col_is(&m, 0, FL_E, "user", 1, 1);
    col_is(&m, 1, FL_I, "user", 1, 1);
    /* no name: it goes last; ei. is both flavors; ! hides */
    assert_int_equal(pr_parse_mspec(s->eng, "ei.system:e!user", &m, EI, &err), 0);
    assert_int_equal(m.ncols, 2);
    assert_int_equal(m.name_pos, 2);
    col_is(&m, 0, FL_E, "system", 1, 0);
    col_is(&m, 1, FL_I, "system", 1, 0);
    /* callers-callees wants attributed metrics: e and i refused, a default */
    assert_int_equal(pr_parse_mspec(s->eng, "a.totalcpu:name", &m, FL_A, &err), 0);
    col_is(&m, 0, FL_A, "totalcpu", 1, 0);
    assert_int_equal(pr_parse_mspec(s->eng, "totalcpu", &m, FL_A, &err), 0);
    col_is(&m, 0, FL_A, "totalcpu", 1, 0);
    assert_int_equal(pr_parse_mspec(s->eng, "e.totalcpu", &m, FL_A, &err), TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "must be attributed"));
    assert_int_equal(pr_parse_mspec(s->eng, "a.totalcpu", &m, EI, &err), TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "must be e or i"));
    /* an unknown metric is named, with the nearest ones and where to look */
    assert_int_equal(pr_parse_mspec(s->eng, "e.totlcpu:name", &m, EI, &err), TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "unknown metric 'totlcpu'"));
    assert_non_null(strstr(err.msg, "did you mean: totalcpu"));
    assert_non_null(strstr(err.msg, "-metric_list"));
    /* more columns than a table has: refused, not truncated */
    char many[4096] = "";
    for (int i = 0; i < MAXCOLS / 2 + 1; i++)
        strcat(many, i ? ":totalcpu" : "totalcpu");
    assert_int_equal(pr_parse_mspec(s->eng, many, &m, EI, &err), TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "too many metrics"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_optional),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_mspec),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
