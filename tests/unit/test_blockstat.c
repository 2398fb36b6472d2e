/*
 * test_blockstat.c - the statistics of profiled blocks (spec 004) on a virtual clock: Table 1 from
 * the seed's entries and exits, recursion, exits that do not match, blocks not on the stack,
 * several quantities, call paths, the end of a thread, a fork child's restart, and a random run
 * against a plain model that recomputes everything from the event list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collector/blockstat.h"

enum { MAIN = 1, FOO = 2, BAR = 3 };

static void at(uint64_t *now, uint64_t t)
{
    now[0] = t;
}

static void check_row(const bs_row_t *r, uint32_t block, uint64_t calls, uint64_t subrs,
                      uint64_t excl, uint64_t incl, uint64_t iexcl, uint64_t iincl)
{
    assert_int_equal(r->block, block);
    assert_int_equal(r->calls, calls);
    assert_int_equal(r->subrs, subrs);
    assert_int_equal(r->excl[0], excl);
    assert_int_equal(r->incl[0], incl);
    assert_int_equal(r->iexcl[0], iexcl);
    assert_int_equal(r->iincl[0], iincl);
}

/* The seed's example: main { 0, foo { 5 } 10, bar { 15, foo { 20, TAU_MONITOR() 25. Table 1 of
 * the seed prints main's exclusive time as 5; its own timeline and definitions give 10: main's
 * inclusive 25 less the inclusive time of the blocks it called (foo 5, bar 10), or, counted
 * directly, main alone from 0 to 5 and from 10 to 15. Every other value is Table 1's. */
static void test_table1(void **state)
{
    (void)state;
    bs_thread_t t;
    uint64_t now[1];
    bs_row_t rows[8];
    assert_int_equal(bs_init(&t, 1), 0);
    at(now, 0), bs_enter(&t, MAIN, now);
    at(now, 5), bs_enter(&t, FOO, now);
    at(now, 10), assert_int_equal(bs_exit(&t, FOO, now), 0);
    at(now, 15), bs_enter(&t, BAR, now);
    at(now, 20), bs_enter(&t, FOO, now);
    at(now, 25);
    assert_int_equal(bs_callstack(&t, now, rows), 3);
    check_row(&rows[0], MAIN, 1, 2, 10, 25, 10, 25);
    check_row(&rows[1], BAR, 1, 1, 5, 10, 5, 10);
    check_row(&rows[2], FOO, 2, 0, 10, 10, 5, 5);
    /* a monitor point changes nothing: later exits account as if there had been none */
    at(now, 30), bs_exit(&t, FOO, now);
    at(now, 32), bs_exit(&t, BAR, now);
    at(now, 40), bs_exit(&t, MAIN, now);
    assert_int_equal(t.depth, 0);
    assert_int_equal(t.blocks[MAIN].excl[0], 5 + 5 + 8);
    assert_int_equal(t.blocks[MAIN].incl[0], 40);
    assert_int_equal(t.blocks[FOO].excl[0], 15);
    assert_int_equal(t.blocks[FOO].incl[0], 15);
    assert_int_equal(t.blocks[BAR].excl[0], 7);
    assert_int_equal(t.blocks[BAR].incl[0], 17);
    /* call paths: main, main/foo, main/bar, main/bar/foo */
    assert_int_equal(t.nnodes, 5);
    uint64_t foo_paths = 0;
    for (size_t i = 1; i < t.nnodes; i++) {
        bs_node_t *n = &t.nodes[i];
        if (n->block == FOO) {
            foo_paths++;
            uint32_t up = t.nodes[n->parent].block;
            assert_int_equal(n->calls, 1);
            assert_int_equal(n->incl[0], up == MAIN ? 5 : 10);
        }
        if (n->block == MAIN) {
            assert_int_equal(n->parent, 0);
            assert_int_equal(n->subrs, 2);
        }
    }
    assert_int_equal(foo_paths, 2);
    assert_int_equal(t.unmatched, 0);
    bs_free(&t);
}

/* Recursion: a block's inclusive counts the outermost instance only; exclusive every instance. */
static void test_recursion(void **state)
{
    (void)state;
    bs_thread_t t;
    uint64_t now[1];
    bs_row_t rows[8];
    assert_int_equal(bs_init(&t, 1), 0);
    at(now, 0), bs_enter(&t, MAIN, now);
    at(now, 10), bs_enter(&t, FOO, now);
    at(now, 20), bs_enter(&t, FOO, now);
    at(now, 30), bs_enter(&t, FOO, now);
    at(now, 35);
    assert_int_equal(bs_callstack(&t, now, rows), 4);
    check_row(&rows[0], MAIN, 1, 1, 10, 35, 10, 35);
    check_row(&rows[1], FOO, 3, 2, 25, 25, 10, 25);
    check_row(&rows[2], FOO, 3, 2, 25, 25, 10, 15);
    check_row(&rows[3], FOO, 3, 2, 25, 25, 5, 5);
    at(now, 40), bs_exit(&t, FOO, now);
    at(now, 45), bs_exit(&t, FOO, now);
    at(now, 50), bs_exit(&t, FOO, now);
    assert_int_equal(t.blocks[FOO].incl[0], 40);
    assert_int_equal(t.blocks[FOO].excl[0], 40);
    at(now, 60), bs_exit(&t, MAIN, now);
    assert_int_equal(t.blocks[MAIN].excl[0], 20);
    bs_free(&t);
}

/* An exit of a deeper block ends the ones above (counted); an exit of a block not on the stack
 * is ignored; a block never entered (disabled) leaves its time to the enclosing block. */
static void test_unmatched(void **state)
{
    (void)state;
    bs_thread_t t;
    uint64_t now[1];
    assert_int_equal(bs_init(&t, 1), 0);
    at(now, 0), bs_enter(&t, MAIN, now);
    at(now, 1), bs_enter(&t, BAR, now);
    at(now, 2), bs_enter(&t, FOO, now);
    at(now, 4), assert_int_equal(bs_exit(&t, 7, now), 1); /* never entered: ignored */
    assert_int_equal(t.depth, 3);
    at(now, 6), assert_int_equal(bs_exit(&t, BAR, now), 0); /* ends foo too */
    assert_int_equal(t.depth, 1);
    assert_int_equal(t.unmatched, 1);
    assert_int_equal(t.blocks[FOO].incl[0], 4);
    assert_int_equal(t.blocks[BAR].excl[0], 1);
    assert_int_equal(bs_exit(&t, FOO, now), 1);
    at(now, 10), bs_end_all(&t, now);
    assert_int_equal(t.depth, 0);
    assert_int_equal(t.blocks[MAIN].incl[0], 10);
    assert_int_equal(t.blocks[MAIN].excl[0], 5);
    bs_free(&t);
}

/* Two quantities at once (wall and CPU time): each accounted on its own. */
static void test_quantities(void **state)
{
    (void)state;
    bs_thread_t t;
    bs_row_t rows[4];
    assert_int_equal(bs_init(&t, 2), 0);
    assert_int_equal(bs_init(&(bs_thread_t){ 0 }, 0), -22);
    uint64_t a[2] = { 0, 0 }, b[2] = { 100, 3 }, c[2] = { 300, 5 }, d[2] = { 400, 9 };
    bs_enter(&t, MAIN, a);
    bs_enter(&t, FOO, b);
    assert_int_equal(bs_callstack(&t, c, rows), 2);
    assert_int_equal(rows[0].excl[0], 100);
    assert_int_equal(rows[0].excl[1], 3);
    assert_int_equal(rows[1].iincl[0], 200);
    assert_int_equal(rows[1].iincl[1], 2);
    bs_exit(&t, FOO, c);
    bs_exit(&t, MAIN, d);
    assert_int_equal(t.blocks[MAIN].excl[1], 7);
    assert_int_equal(t.blocks[MAIN].incl[1], 9);
    assert_int_equal(t.blocks[FOO].incl[1], 2);
    bs_free(&t);
}

/* A fork child keeps the stack, each open instance a call starting now, other statistics gone. */
static void test_restart(void **state)
{
    (void)state;
    bs_thread_t t;
    uint64_t now[1];
    bs_row_t rows[4];
    assert_int_equal(bs_init(&t, 1), 0);
    at(now, 0), bs_enter(&t, MAIN, now);
    at(now, 1), bs_enter(&t, FOO, now);
    at(now, 2), bs_exit(&t, FOO, now);
    at(now, 3), bs_enter(&t, BAR, now);
    at(now, 10), bs_restart(&t, now);
    at(now, 14);
    assert_int_equal(bs_callstack(&t, now, rows), 2);
    check_row(&rows[0], MAIN, 1, 1, 0, 4, 0, 4);
    check_row(&rows[1], BAR, 1, 0, 4, 4, 4, 4);
    assert_int_equal(t.blocks[FOO].calls, 0);
    bs_enter(&t, FOO, now);
    bs_exit(&t, FOO, now);
    assert_int_equal(t.nnodes, 4); /* main, main/bar, main/bar/foo */
    bs_free(&t);
}

/* Random nested runs against a model that recomputes each block's statistics from the events. */
typedef struct ev {
    int enter;
    uint32_t block;
    uint64_t t;
} ev_t;

static void test_random(void **state)
{
    (void)state;
    srand(13);
    for (int round = 0; round < 200; round++) {
        enum { NB = 6, NE = 400 };
        ev_t ev[NE];
        size_t nev = 0;
        uint32_t stk[NE];
        size_t d = 0;
        uint64_t clock = 0;
        while (nev < NE - 1 - d) {
            clock += (uint64_t)(rand() % 7);
            if (d && (rand() % 3 == 0 || nev + d + 2 >= NE - 1))
                ev[nev++] = (ev_t){ 0, stk[--d], clock };
            else {
                stk[d++] = (uint32_t)(rand() % NB);
                ev[nev++] = (ev_t){ 1, stk[d - 1], clock };
            }
        }
        uint64_t tmon = clock + 3;
        bs_thread_t t;
        assert_int_equal(bs_init(&t, 1), 0);
        for (size_t i = 0; i < nev; i++) {
            uint64_t now[1] = { ev[i].t };
            if (ev[i].enter)
                assert_int_equal(bs_enter(&t, ev[i].block, now), 0);
            else
                assert_int_equal(bs_exit(&t, ev[i].block, now), 0);
        }
        bs_row_t rows[NE];
        uint64_t now[1] = { tmon };
        size_t nr = bs_callstack(&t, now, rows);
        assert_int_equal(nr, d);
        /* the model: close the open instances at tmon and recompute from scratch */
        uint64_t calls[NB] = { 0 }, subrs[NB] = { 0 }, excl[NB] = { 0 }, incl[NB] = { 0 };
        struct { uint32_t b; uint64_t s, child; } ms[NE];
        size_t md = 0;
        for (size_t i = 0; i <= nev + d; i++) {
            int enter;
            uint32_t b;
            uint64_t tt;
            if (i < nev)
                enter = ev[i].enter, b = ev[i].block, tt = ev[i].t;
            else if (md)
                enter = 0, b = ms[md - 1].b, tt = tmon;
            else
                break;
            if (enter) {
                calls[b]++;
                if (md)
                    subrs[ms[md - 1].b]++;
                ms[md].b = b, ms[md].s = tt, ms[md].child = 0, md++;
            } else {
                md--;
                uint64_t in = tt - ms[md].s;
                excl[b] += in - ms[md].child;
                int outer = 1;
                for (size_t k = 0; k < md; k++)
                    outer &= ms[k].b != b;
                if (outer)
                    incl[b] += in;
                if (md)
                    ms[md - 1].child += in;
            }
        }
        for (size_t i = 0; i < nr; i++) {
            uint32_t b = rows[i].block;
            assert_int_equal(b, stk[i]);
            assert_int_equal(rows[i].calls, calls[b]);
            assert_int_equal(rows[i].subrs, subrs[b]);
            assert_int_equal(rows[i].excl[0], excl[b]);
            assert_int_equal(rows[i].incl[0], incl[b]);
        }
        /* ending everything gives the model's totals for every block, and the call paths add up */
        bs_end_all(&t, now);
        uint64_t path_excl = 0;
        for (size_t i = 1; i < t.nnodes; i++)
            path_excl += t.nodes[i].excl[0];
        uint64_t total = 0;
        for (uint32_t b = 0; b < NB; b++) {
            assert_int_equal(t.blocks[b].calls, calls[b]);
            assert_int_equal(t.blocks[b].excl[0], excl[b]);
            assert_int_equal(t.blocks[b].incl[0], incl[b]);
            total += excl[b];
        }
        assert_int_equal(path_excl, total);
        bs_free(&t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table1),     cmocka_unit_test(test_recursion),
        cmocka_unit_test(test_unmatched),  cmocka_unit_test(test_quantities),
        cmocka_unit_test(test_restart),    cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
