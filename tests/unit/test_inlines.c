/*
 * test_inlines.c - inline expansion in the engine (eng_set_inlines), on a synthetic experiment
 * made of this program's own code (selfexp.h): in_caller() inlines in_helper(), which inlines
 * in_inner(); a sample in the inner code is in_inner <- in_helper <- in_caller <- in_top with
 * inlines shown, and in_caller <- in_top with them folded. Checked: -functions rows and their
 * exclusive/inclusive values, callers-callees of the middle inlined function, the call tree, and
 * the line kind (the inner line, then the lines each level was inlined at; with inlines folded,
 * the inner line only), both ways. A function both inlined and out of line (in_both) is one
 * function, whichever copy a sample is in.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analyzer/report.h"
#include "analyzer/session.h"
#include "analyzer/symbols.h"
#include "selfexp.h"

/* The code the stacks are made of (never called with these stacks; only addresses are used). */
static inline __attribute__((always_inline)) int in_inner(int x) { return x * x + 11; }
static inline __attribute__((always_inline)) int in_helper(int x) { return in_inner(x) * x; }
__attribute__((noinline, used)) int in_other(int x) { return x ^ 0x5a; }
__attribute__((noinline, used)) int in_caller(int x)
{
    int y = in_helper(x);
    int z = in_other(x); /* a call: code of in_caller's own, on a line of its own */
    return y + z;
}
/* A function inlined in one place and out of line too (its address is taken): one function. */
static inline __attribute__((always_inline)) int in_both(int x) { return x * 7 - 2; }
int (*volatile in_both_ptr)(int) = in_both;
__attribute__((noinline, used)) int in_caller2(int x)
{
    int y = in_both(x);
    return in_other(y) + 5;
}
/* Two static functions called twin in this program (the other in inlines_twin.c). */
__attribute__((noinline, used)) static int twin(int x) { return x * 3 + 1; }
void *inlines_twin_addr(void);
__attribute__((noinline, used)) int in_top(int x) { return in_caller(x) + in_caller2(x) + 1; }

#define MS 1000000ull
static char dir[256];
static uint32_t inner_line, helper_site, caller_site; /* lines: in in_inner, and the call sites */
static uint64_t both_inlined; /* a runtime PC of in_caller2 in the inlined copy of in_both */

/* A runtime PC of in_caller where the inner code runs (*inl) and one of in_caller's own (*own). */
static void find_pcs(uint64_t *inl, uint64_t *own)
{
    Dl_info di;
    assert_true(dladdr((void *)in_caller, &di) != 0);
    const Elf64_Ehdr *eh = di.dli_fbase;
    uint64_t bias = eh->e_type == ET_DYN ? (uint64_t)(uintptr_t)di.dli_fbase : 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    sym_ctx_t *s = sym_new();
    assert_non_null(s);
    uint32_t obj = sym_object_add(s, exe, NULL);
    uint64_t a = (uint64_t)(uintptr_t)in_caller - bias;
    const sym_func_t *f = sym_func(s, sym_func_at(s, obj, a));
    assert_non_null(f);
    assert_string_equal(f->name, "in_caller");
    *inl = *own = 0;
    for (uint64_t x = a + 1; x < a + f->size && !*inl; x++) { /* the inner code */
        sym_inline_t in[4];
        const char *file;
        uint32_t line;
        if (sym_inlines_at(s, obj, x, in, 4) == 2 && sym_line_at(s, obj, x, &file, &line) == 0) {
            assert_string_equal(sym_func(s, in[0].func)->name, "in_inner");
            assert_string_equal(sym_func(s, in[1].func)->name, "in_helper");
            *inl = x + bias;
            inner_line = line;
            helper_site = in[0].call_line; /* in_inner was inlined at, in in_helper */
            caller_site = in[1].call_line; /* in_helper was inlined at, in in_caller */
        }
    }
    for (uint64_t x = a + 1; x < a + f->size && !*own; x++) { /* in_caller's own, elsewhere */
        sym_inline_t in[4];
        const char *file;
        uint32_t line;
        if (sym_inlines_at(s, obj, x, in, 4) == 0 && sym_line_at(s, obj, x, &file, &line) == 0 &&
            line != 0 && line != caller_site)
            *own = x + bias;
    }
    /* in_both inlined in in_caller2: the same function as its out-of-line copy */
    uint32_t both = sym_func_at(s, obj, (uint64_t)(uintptr_t)in_both_ptr - bias);
    assert_string_equal(sym_func(s, both)->name, "in_both");
    uint64_t a2 = (uint64_t)(uintptr_t)in_caller2 - bias;
    const sym_func_t *f2 = sym_func(s, sym_func_at(s, obj, a2));
    assert_string_equal(f2->name, "in_caller2");
    both_inlined = 0;
    for (uint64_t x = a2 + 1; x < a2 + f2->size && !both_inlined; x++) {
        sym_inline_t in[4];
        if (sym_inlines_at(s, obj, x, in, 4) == 1) {
            assert_int_equal(in[0].func, both);
            both_inlined = x + bias;
        }
    }
    assert_true(both_inlined != 0);
    sym_free(s);
    assert_true(*inl && *own);
    assert_true(inner_line && helper_site && caller_site);
    assert_true(inner_line != helper_site && helper_site != caller_site);
}

static int setup(void **state)
{
    uint64_t X, Y, T = selfexp_pc_in((void *)in_top);
    find_pcs(&X, &Y);
    snprintf(dir, sizeof dir, "/tmp/tally-test-inlines-%d.tally", getpid());
    /* leaf first: the inner code 3 ms, in_caller's own code 1 ms, in_top's own 2 ms; in_both
     * out of line 1 ms and inlined in in_caller2 2 ms */
    const uint64_t B = selfexp_pc_in((void *)in_both_ptr), C2 = selfexp_pc_in((void *)in_caller2);
    const selfexp_stack_t stacks[] = { { { X, T }, 2, 3 * MS },         { { Y, T }, 2, 1 * MS },
                                       { { T }, 1, 2 * MS },            { { B, T }, 2, 1 * MS },
                                       { { both_inlined, T }, 2, 2 * MS } };
    (void)C2;
    /* the two twins, 1 ms each, as leaves under nothing */
    const selfexp_stack_t twins[] = { { { selfexp_pc_in((void *)twin) }, 1, 1 * MS },
                                      { { selfexp_pc_in(inlines_twin_addr()) }, 1, 1 * MS } };
    selfexp_stack_t all[7];
    memcpy(all, stacks, sizeof stacks);
    memcpy(all + 5, twins, sizeof twins);
    selfexp_write(dir, all, 7);
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

static const rep_opts_t by_name = { 0, REP_FL_E, -1, 0, ENG_KIND_FUNCTION };

static const rep_row_t *row(const rep_table_t *rt, const char *name)
{
    for (size_t i = 0; i < rt->n; i++)
        if (!strcmp(rt->rows[i].name, name))
            return &rt->rows[i];
    return NULL;
}

static void expect(const rep_table_t *rt, const char *name, uint64_t excl, uint64_t incl)
{
    const rep_row_t *r = row(rt, name);
    if (!r)
        fail_msg("no row for %s", name);
    assert_int_equal(rep_row_value(r, REP_FL_E, ENG_M_TOTALCPU), excl);
    assert_int_equal(rep_row_value(r, REP_FL_I, ENG_M_TOTALCPU), incl);
}

static void test_functions(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_table_t rt;
    eng_set_inlines(s->eng, 1);
    assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &by_name, &rt, &err), 0);
    assert_int_equal(rt.total[ENG_M_TOTALCPU], 11 * MS);
    assert_int_equal(rt.n, 8);
    expect(&rt, "in_inner", 3 * MS, 3 * MS);
    expect(&rt, "in_helper", 0, 3 * MS);
    expect(&rt, "in_caller", 1 * MS, 4 * MS);
    expect(&rt, "in_top", 2 * MS, 9 * MS);
    expect(&rt, "in_both", 3 * MS, 3 * MS); /* one row: out of line and inlined */
    expect(&rt, "in_caller2", 0, 2 * MS);
    rep_table_free(&rt);

    eng_set_inlines(s->eng, 0); /* folded into the function they were inlined into */
    assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &by_name, &rt, &err), 0);
    assert_int_equal(rt.total[ENG_M_TOTALCPU], 11 * MS);
    assert_int_equal(rt.n, 6);
    expect(&rt, "in_caller", 4 * MS, 4 * MS);
    expect(&rt, "in_top", 2 * MS, 9 * MS);
    expect(&rt, "in_both", 1 * MS, 1 * MS); /* its out-of-line copy only */
    expect(&rt, "in_caller2", 2 * MS, 2 * MS);
    assert_null(row(&rt, "in_inner"));
    rep_table_free(&rt);
    eng_set_inlines(s->eng, 1);
}

/* Two functions of one name in one object: told apart by their addresses, each reachable by its
 * display name, the bare name ambiguous with a message that says how to name one. */
static void test_twins(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_table_t rt;
    assert_int_equal(rep_table(s, ENG_KIND_FUNCTION, &by_name, &rt, &err), 0);
    const char *names[2] = { NULL, NULL };
    int n = 0;
    for (size_t i = 0; i < rt.n; i++)
        if (!strncmp(rt.rows[i].name, "twin (", 6) && n < 2)
            names[n++] = rt.rows[i].name;
    assert_int_equal(n, 2);
    assert_string_not_equal(names[0], names[1]);
    assert_non_null(strstr(names[0], ", 0x"));
    long a = rep_find_function(s->eng, rt.t, &rt.names, names[0], &err);
    long b = rep_find_function(s->eng, rt.t, &rt.names, names[1], &err);
    assert_true(a >= 0 && b >= 0 && a != b);
    assert_int_equal(rep_find_function(s->eng, rt.t, &rt.names, "twin", &err), TALLY_EUSAGE);
    assert_non_null(strstr(err.msg, "ambiguous"));
    assert_null(strstr(err.msg, "load objects"));
    rep_table_free(&rt);
}

static void test_callers_callees(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_cc_t cc;
    assert_int_equal(rep_callers_callees(s, &by_name, "in_helper", &cc, &err), 0);
    assert_int_equal(cc.n, 1);
    const rep_cc_entry_t *e = &cc.entries[0];
    assert_int_equal(e->ncallers, 1);
    assert_string_equal(e->callers[0].name, "in_caller");
    assert_int_equal(rep_row_value(&e->callers[0], REP_FL_A, ENG_M_TOTALCPU), 3 * MS);
    assert_int_equal(e->ncallees, 1);
    assert_string_equal(e->callees[0].name, "in_inner");
    assert_int_equal(rep_row_value(&e->callees[0], REP_FL_A, ENG_M_TOTALCPU), 3 * MS);
    rep_cc_free(&cc);
    /* folded: in_caller's callers-callees has no inlined callee, and in_helper is not there */
    eng_set_inlines(s->eng, 0);
    assert_int_equal(rep_callers_callees(s, &by_name, "in_caller", &cc, &err), 0);
    assert_int_equal(cc.entries[0].ncallees, 0);
    assert_int_equal(cc.entries[0].ncallers, 1);
    rep_cc_free(&cc);
    assert_int_equal(rep_callers_callees(s, &by_name, "in_helper", &cc, &err), TALLY_ENOTFOUND);
    eng_set_inlines(s->eng, 1);
}

/* The chain of single children from <Total>, by name, into names (at most max). */
static int chain(const rep_tree_t *t, const char **names, uint64_t *incl, int max)
{
    int n = 0;
    uint32_t node = 0;
    while (n < max && t->kid_start[node + 1] - t->kid_start[node] >= 1) {
        /* the heaviest child first */
        node = t->kids[t->kid_start[node]];
        names[n] = rep_tree_name(t, node);
        incl[n++] = t->tr->nodes[node].incl[ENG_M_TOTALCPU];
    }
    return n;
}

static void test_calltree(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    rep_tree_t t;
    const rep_opts_t by_excl = { 0, REP_FL_E, ENG_M_TOTALCPU, 0, ENG_KIND_FUNCTION };
    const char *names[8];
    uint64_t incl[8];
    assert_int_equal(rep_calltree(s, &by_excl, &t, &err), 0);
    int n = chain(&t, names, incl, 8);
    assert_int_equal(n, 4);
    const char *want[] = { "in_top", "in_caller", "in_helper", "in_inner" };
    const uint64_t wincl[] = { 9 * MS, 4 * MS, 3 * MS, 3 * MS };
    for (int i = 0; i < 4; i++) {
        assert_string_equal(names[i], want[i]);
        assert_int_equal(incl[i], wincl[i]);
    }
    rep_tree_free(&t);
    eng_set_inlines(s->eng, 0);
    assert_int_equal(rep_calltree(s, &by_excl, &t, &err), 0);
    n = chain(&t, names, incl, 8);
    assert_int_equal(n, 2);
    assert_string_equal(names[1], "in_caller");
    assert_int_equal(incl[1], 4 * MS);
    rep_tree_free(&t);
    eng_set_inlines(s->eng, 1);
}

/* The line kind: a sample in the inner code is on the inner line (exclusive) and, inclusive, on
 * the line in in_helper where in_inner was inlined and the line in in_caller where in_helper
 * was. */
static void test_lines(void **state)
{
    ses_t *s = *state;
    tally_err_t err = { 0 };
    for (int on = 1; on >= 0; on--) {
        eng_set_inlines(s->eng, on);
        const eng_table_t *t = eng_compute(s->eng, ENG_KIND_LINE, 0, &err);
        assert_non_null(t);
        uint64_t e_inner = 0, i_inner = 0, i_helper = 0, i_caller = 0, e_sum = 0;
        for (uint32_t id = 0; id < t->nobjects; id++) {
            if (!t->present[id])
                continue;
            const char *file;
            uint32_t line, func;
            assert_int_equal(eng_line_info(s->eng, id, &file, &line, &func), 0);
            uint64_t e = t->excl[(size_t)id * t->nmetrics + ENG_M_TOTALCPU];
            uint64_t i = t->incl[(size_t)id * t->nmetrics + ENG_M_TOTALCPU];
            e_sum += e;
            if (!file || !strstr(file, "test_inlines.c"))
                continue;
            if (line == inner_line) {
                e_inner += e;
                i_inner += i;
            }
            if (line == helper_site)
                i_helper += i;
            if (line == caller_site)
                i_caller += i;
        }
        assert_int_equal(e_sum, 11 * MS); /* every sample on exactly one line */
        assert_int_equal(e_inner, 3 * MS); /* the innermost line, either way */
        assert_int_equal(i_inner, 3 * MS);
        if (on) {
            assert_int_equal(i_helper, 3 * MS);
            assert_int_equal(i_caller, 3 * MS);
        } else { /* folded: the call sites get nothing from the inlined code */
            assert_int_equal(i_helper, 0);
            assert_int_equal(i_caller, 0);
        }
    }
    eng_set_inlines(s->eng, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_twins),
        cmocka_unit_test(test_callers_callees),
        cmocka_unit_test(test_calltree),
        cmocka_unit_test(test_lines),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
