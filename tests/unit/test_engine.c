/*
 * test_engine.c - the metric rules (DESIGN.md section 3) on hand-written weighted stacks:
 * Figure 2-1 of the metric specification exactly, direct and mutual recursion, and the invariants
 * of attributed metrics on random stacks checked against a brute-force count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/engine.h"

enum { MAIN, A, B, C, E, F, G, NF };

typedef struct fixture {
    eng_table_t t;
    eng_edgeset_t *es;
    uint32_t stamp[256];
    uint32_t serial;
} fixture_t;

static void fx_init(fixture_t *fx, size_t nobjects)
{
    memset(fx, 0, sizeof *fx);
    assert_int_equal(eng_table_alloc(&fx->t, ENG_KIND_FUNCTION, nobjects, ENG_NBUILTIN, 1), 0);
    fx->es = eng_edgeset_new(ENG_NBUILTIN);
    assert_non_null(fx->es);
}

/* Adds a stack (leaf first) with weight w (in the user metric and totalcpu). */
static void add(fixture_t *fx, uint64_t w, uint32_t n, const uint32_t *ids)
{
    uint64_t v[ENG_NBUILTIN] = { 0 };
    v[ENG_M_TOTALCPU] = v[ENG_M_USER] = w;
    assert_int_equal(eng_apply(&fx->t, ids, n, v, fx->stamp, ++fx->serial, fx->es), 0);
}

#define ADD(fx, w, ...)                                                                          \
    do {                                                                                         \
        const uint32_t ids_[] = { __VA_ARGS__ };                                                 \
        add(fx, w, sizeof ids_ / sizeof ids_[0], ids_);                                          \
    } while (0)

static void fx_finish(fixture_t *fx)
{
    assert_int_equal(eng_edges_finish(&fx->t, fx->es), 0);
    eng_edgeset_free(fx->es);
    fx->es = NULL;
}

static void fx_free(fixture_t *fx) { eng_table_release(&fx->t); }

static uint64_t excl(fixture_t *fx, uint32_t x) { return fx->t.excl[x * ENG_NBUILTIN]; }
static uint64_t incl(fixture_t *fx, uint32_t x) { return fx->t.incl[x * ENG_NBUILTIN]; }

/* Attributed value of y as a caller (callee=0) or callee (callee=1) of x; 0 if not an edge. */
static uint64_t attr(fixture_t *fx, uint32_t x, uint32_t y, int callee)
{
    const eng_table_t *t = &fx->t;
    const size_t *start = callee ? t->callee_start : t->caller_start;
    const eng_edge_t *edges = callee ? t->callees : t->callers;
    for (size_t i = start[x]; i < start[x + 1]; i++)
        if (edges[i].other == y)
            return edges[i].value[ENG_M_TOTALCPU];
    return 0;
}

static uint64_t attr_sum(fixture_t *fx, uint32_t x, int callee)
{
    const eng_table_t *t = &fx->t;
    const size_t *start = callee ? t->callee_start : t->caller_start;
    const eng_edge_t *edges = callee ? t->callees : t->callers;
    uint64_t s = 0;
    for (size_t i = start[x]; i < start[x + 1]; i++)
        s += edges[i].value[ENG_M_TOTALCPU];
    return s;
}

/* Figure 2-1, in quarter units so every value is whole: main 32 inclusive (2 exclusive), A 10
 * (0), B 20 (5), C 25 (5) with A->C 10 and B->C 15, E 10 (10), F 10 (2.5), G 7.5 (7.5). */
static void figure21(void **state)
{
    fixture_t fx;
    fx_init(&fx, NF);
    ADD(&fx, 8, MAIN);
    /* A -> C(10): C does 20% itself, 40% in E, 40% in F, which does 25% itself, 75% in G */
    ADD(&fx, 8, C, A, MAIN);
    ADD(&fx, 16, E, C, A, MAIN);
    ADD(&fx, 4, F, C, A, MAIN);
    ADD(&fx, 12, G, F, C, A, MAIN);
    /* B: C(7.5), 5 units itself, C(7.5) */
    for (int twice = 0; twice < 2; twice++) {
        ADD(&fx, 6, C, B, MAIN);
        ADD(&fx, 12, E, C, B, MAIN);
        ADD(&fx, 3, F, C, B, MAIN);
        ADD(&fx, 9, G, F, C, B, MAIN);
    }
    ADD(&fx, 20, B, MAIN);
    fx_finish(&fx);

    const uint64_t ex[NF] = { [MAIN] = 8, [A] = 0, [B] = 20, [C] = 20, [E] = 40, [F] = 10, [G] = 30 };
    const uint64_t in[NF] = { [MAIN] = 128, [A] = 40, [B] = 80, [C] = 100, [E] = 40, [F] = 40,
                              [G] = 30 };
    for (int x = 0; x < NF; x++) {
        assert_int_equal(excl(&fx, x), ex[x]);
        assert_int_equal(incl(&fx, x), in[x]);
    }
    /* callers (caller-attributed) */
    assert_int_equal(attr(&fx, C, A, 0), 40);
    assert_int_equal(attr(&fx, C, B, 0), 60);
    assert_int_equal(attr(&fx, A, MAIN, 0), 40);
    assert_int_equal(attr(&fx, B, MAIN, 0), 80);
    assert_int_equal(attr(&fx, E, C, 0), 40);
    assert_int_equal(attr(&fx, F, C, 0), 40);
    assert_int_equal(attr(&fx, G, F, 0), 30);
    assert_int_equal(attr_sum(&fx, MAIN, 0), 0); /* the root has no caller */
    assert_int_equal(fx.t.outermost[MAIN * ENG_NBUILTIN], 128);
    /* callees (callee-attributed) */
    assert_int_equal(attr(&fx, MAIN, A, 1), 40);
    assert_int_equal(attr(&fx, MAIN, B, 1), 80);
    assert_int_equal(attr(&fx, A, C, 1), 40);
    assert_int_equal(attr(&fx, B, C, 1), 60);
    assert_int_equal(attr(&fx, C, E, 1), 40);
    assert_int_equal(attr(&fx, C, F, 1), 40);
    assert_int_equal(attr(&fx, F, G, 1), 30);
    assert_int_equal(attr_sum(&fx, E, 1), 0);
    assert_int_equal(attr_sum(&fx, G, 1), 0);
    /* the user metric went the same way, the system metric stayed zero */
    assert_int_equal(fx.t.incl[C * ENG_NBUILTIN + ENG_M_USER], 100);
    assert_int_equal(fx.t.incl[C * ENG_NBUILTIN + ENG_M_SYSTEM], 0);
    fx_free(&fx);
}

/* main -> f -> f -> f -> f, all work in the last call: f's inclusive counts once; f's callers
 * show f itself with the full amount, main lists f as a callee with the full amount. */
static void direct_recursion(void **state)
{
    enum { M, R, N };
    fixture_t fx;
    fx_init(&fx, N);
    ADD(&fx, 100, R, R, R, R, M);
    ADD(&fx, 7, M);
    fx_finish(&fx);
    assert_int_equal(incl(&fx, R), 100);
    assert_int_equal(excl(&fx, R), 100);
    assert_int_equal(incl(&fx, M), 107);
    assert_int_equal(attr(&fx, R, R, 0), 100);
    assert_int_equal(attr(&fx, R, M, 0), 0);
    assert_int_equal(attr(&fx, M, R, 1), 100);
    assert_int_equal(attr_sum(&fx, R, 1), 0);
    fx_free(&fx);
}

/* main -> a -> b -> a -> b -> a with the work in the last a. */
static void mutual_recursion(void **state)
{
    enum { M, X, Y, N };
    fixture_t fx;
    fx_init(&fx, N);
    ADD(&fx, 6, X, Y, X, Y, X, M);
    ADD(&fx, 4, Y, X, M); /* b's own work, called from the first a */
    fx_finish(&fx);
    assert_int_equal(incl(&fx, X), 10);
    assert_int_equal(excl(&fx, X), 6);
    assert_int_equal(incl(&fx, Y), 10);
    assert_int_equal(excl(&fx, Y), 4);
    assert_int_equal(attr(&fx, X, Y, 0), 6); /* innermost a is called by b */
    assert_int_equal(attr(&fx, X, M, 0), 4);
    assert_int_equal(attr(&fx, Y, X, 0), 10);
    assert_int_equal(attr(&fx, Y, X, 1), 6);
    assert_int_equal(attr(&fx, X, Y, 1), 4);
    assert_int_equal(attr(&fx, M, X, 1), 10);
    fx_free(&fx);
}

/* Random stacks: callers (plus outermost occurrences) sum to inclusive, callees plus exclusive sum
 * to inclusive, and inclusive equals a brute-force count of the stacks holding the object. */
static void random_invariants(void **state)
{
    enum { NOBJ = 40, NSTACKS = 3000 };
    fixture_t fx;
    fx_init(&fx, NOBJ);
    uint64_t brute[NOBJ] = { 0 }, total = 0;
    srand(12345);
    for (int s = 0; s < NSTACKS; s++) {
        uint32_t ids[64];
        uint32_t n = 1 + (uint32_t)(rand() % 60);
        for (uint32_t i = 0; i < n; i++)
            ids[i] = (uint32_t)(rand() % (rand() % 3 ? 8 : NOBJ)); /* much recursion */
        uint64_t w = 1 + (uint64_t)(rand() % 1000);
        add(&fx, w, n, ids);
        total += w;
        int seen[NOBJ] = { 0 };
        for (uint32_t i = 0; i < n; i++)
            if (!seen[ids[i]]++)
                brute[ids[i]] += w;
    }
    fx_finish(&fx);
    uint64_t excl_sum = 0;
    for (uint32_t x = 0; x < NOBJ; x++) {
        excl_sum += excl(&fx, x);
        assert_int_equal(incl(&fx, x), brute[x]);
        assert_int_equal(attr_sum(&fx, x, 0) + fx.t.outermost[x * ENG_NBUILTIN], incl(&fx, x));
        assert_int_equal(attr_sum(&fx, x, 1) + excl(&fx, x), incl(&fx, x));
        assert_true(excl(&fx, x) <= incl(&fx, x));
        assert_true(incl(&fx, x) <= total);
    }
    assert_int_equal(excl_sum, total);
    fx_free(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(figure21),
        cmocka_unit_test(direct_recursion),
        cmocka_unit_test(mutual_recursion),
        cmocka_unit_test(random_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
