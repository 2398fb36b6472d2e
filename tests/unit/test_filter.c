/*
 * test_filter.c - the filter language of -filters: parsing (and its errors, with the position),
 * comparisons with time units, boolean operators and precedence, stack terms through the callback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/filter.h"

/* The stack "holds" pattern terms whose bit is set in *ctx (leaf terms: bit + 16). */
static int stack_cb(void *ctx, uint32_t term, int leaf)
{
    unsigned bits = *(unsigned *)ctx;
    return (bits >> (term + (leaf ? 16 : 0))) & 1;
}

static int eval_on(const char *text, const flt_event_t *ev, unsigned bits)
{
    flt_t *f;
    tally_err_t err = { 0 };
    assert_int_equal(flt_parse(text, &f, &err), 0);
    int r = flt_eval(f, ev, stack_cb, &bits);
    flt_free(f);
    return r;
}

static void comparisons(void **state)
{
    flt_event_t ev = { { 0 } };
    ev.v[FLT_THRID] = 2;
    ev.v[FLT_TSTAMP] = 1500000000; /* 1.5 s */
    ev.v[FLT_SAMPLE] = 3;
    assert_true(eval_on("THRID == 2", &ev, 0));
    assert_false(eval_on("THRID != 2", &ev, 0));
    assert_true(eval_on("thrid>=2 && sample<4", &ev, 0));
    assert_true(eval_on("TSTAMP > 1s", &ev, 0));
    assert_false(eval_on("TSTAMP > 1500ms", &ev, 0));
    assert_true(eval_on("TSTAMP <= 1500000us", &ev, 0));
    assert_true(eval_on("THRID == 1 || SAMPLE == 3", &ev, 0));
    assert_false(eval_on("!(SAMPLE == 3)", &ev, 0));
    /* && binds tighter than || */
    assert_true(eval_on("THRID == 2 || THRID == 9 && SAMPLE == 0", &ev, 0));
    assert_false(eval_on("(THRID == 2 || THRID == 9) && SAMPLE == 0", &ev, 0));
    assert_true(eval_on("LWP == 0", &ev, 0)); /* LWP is TID */
}

static void stack_terms(void **state)
{
    flt_event_t ev = { { 0 } };
    flt_t *f;
    tally_err_t err = { 0 };
    assert_int_equal(flt_parse("FNAME(\"ma*\") SOME IN STACK && !(LEAF IN FNAME(\"x\"))", &f, &err),
                     0);
    assert_int_equal(flt_npatterns(f), 2);
    assert_string_equal(flt_pattern(f, 0), "ma*");
    assert_string_equal(flt_pattern(f, 1), "x");
    unsigned bits = 1; /* term 0 on the stack, term 1 not the leaf */
    assert_true(flt_eval(f, &ev, stack_cb, &bits));
    bits = 1 | (2u << 16); /* term 1 is the leaf */
    assert_false(flt_eval(f, &ev, stack_cb, &bits));
    bits = 0;
    assert_false(flt_eval(f, &ev, stack_cb, &bits));
    flt_free(f);
}

static void errors(void **state)
{
    const struct { const char *text, *msg; } bad[] = {
        { "THRID ==", "at 9: expected a number" },
        { "THRID = 2 &&", "at 13: expected a number" },
        { "(THRID == 2", "expected ')'" },
        { "FNAME(\"main\") IN STACK", "expected 'SOME'" },
        { "FNAME(main) SOME IN STACK", "expected '\"'" },
        { "THRID 2", "expected a comparison" },
        { "THRID == 2 SAMPLE == 3", "missing && or ||" },
        { "BOGUS == 1", "expected a number, a keyword" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        flt_t *f = NULL;
        tally_err_t err = { 0 };
        assert_int_equal(flt_parse(bad[i].text, &f, &err), TALLY_EUSAGE);
        assert_null(f);
        if (!strstr(err.msg, bad[i].msg))
            fail_msg("'%s': message '%s' lacks '%s'", bad[i].text, err.msg, bad[i].msg);
    }
}

/* Pathological input is refused, not a crash: deep nesting, huge expressions, huge numbers. */
static void limits(void **state)
{
    static char deep[100010];
    memset(deep, '!', 100000);
    strcpy(deep + 100000, "THRID==1");
    flt_t *f = NULL;
    tally_err_t err = { 0 };
    assert_int_equal(flt_parse(deep, &f, &err), TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "nested too deeply"));
    static char chain[700000];
    size_t n = 0;
    for (int i = 0; i < 60000; i++)
        n += (size_t)sprintf(chain + n, "%sTHRID==1", i ? "&&" : "");
    assert_int_equal(flt_parse(chain, &f, &err), TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "too long"));
    flt_event_t ev = { { 0 } };
    ev.v[FLT_TSTAMP] = 18446744073709551614ULL;
    assert_true(eval_on("TSTAMP < 18446744073709551615", &ev, 0)); /* exact, not rounded */
    assert_int_equal(flt_parse("TSTAMP < 1e30", &f, &err), TALLY_EUSAGE);
    assert_int_equal(flt_parse("TSTAMP < 99999999999999999999999", &f, &err), TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "too large"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(comparisons),
        cmocka_unit_test(stack_terms),
        cmocka_unit_test(errors),
        cmocka_unit_test(limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
