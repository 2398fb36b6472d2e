/*
 * test_fastunwind.c - the tracing interposers' unwinder against libunwind: the same return
 * addresses through frames of every shape gcc emits at -O2 without frame pointers (rsp-based,
 * rbp-based for alloca, realigned with a DRAP register, recursion, libc's qsort calling back),
 * a clean end at _start, the depth limit, a bound that cuts the walk, memoized walks (the same
 * cells from the same site; another caller at the same stack pointer differs), and threads.
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <alloca.h>
#include <libunwind.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/fastunwind.h"
#include "experiment/evformat.h"

#define MAXF 256

typedef struct capture {
    uint64_t fu[MAXF];
    uint32_t nfu, flags;
    fu_regs_t regs;          /* of the last take() */
    fu_cells_t *cells;       /* when set: the cells of the walk */
    int same;                /* with memo: was fu_same true against memo_regs? */
    fu_cells_t *memo;
    fu_regs_t memo_regs;
    void *lu[MAXF + 1];
    int nlu;
    uint32_t max;
    uint64_t hi;
} capture_t;

static capture_t cap;
static volatile int sink;

static uint64_t stack_hi(void)
{
    return fu_stack_hi(syscall(SYS_gettid) == getpid());
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static void take(void)
{
    cap.regs = FU_REGS();
    if (cap.memo)
        cap.same = fu_same(cap.regs, cap.memo_regs, cap.memo);
    cap.nfu = fu_unwind(cap.regs, cap.hi, cap.fu, cap.max, &cap.flags, cap.cells, NULL);
    cap.nlu = unw_backtrace(cap.lu, MAXF + 1);
    sink++;
}

/* Frames of different shapes. */
__attribute__((noinline)) static int plain(int n)
{
    volatile int keep = n; /* lives across the call: real recursion, not a loop */
    if (n > 0)
        return plain(n - 1) + keep;
    take();
    return keep;
}

__attribute__((noinline)) static int with_alloca(int n)
{
    volatile char *b = alloca((size_t)n * 16 + 8);
    b[0] = (char)n;
    int r = plain(3);
    return r + b[0];
}

typedef float v8 __attribute__((vector_size(32)));
__attribute__((noinline, target("avx"))) static int realigned(int n)
{
    v8 buf[4] __attribute__((aligned(64)));
    for (int i = 0; i < 4; i++)
        buf[i] = (v8){ (float)n, 0, 0, 0, 0, 0, 0, (float)i };
    volatile char *dyn = alloca((size_t)n + 1); /* with the realignment: a DRAP frame */
    dyn[0] = 1;
    __asm__ volatile("" : : "r"(buf), "r"(dyn) : "memory");
    int r = with_alloca(n);
    return r + (int)buf[1][7];
}

__attribute__((noinline)) static int big_frame(int n)
{
    volatile char big[70000];
    big[n] = 1;
    int r = realigned(n);
    return r + big[n];
}

static int cmp_cb(const void *a, const void *b)
{
    static int once;
    if (!once++)
        big_frame(5);
    return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static int via_qsort(void)
{
    int v[4] = { 3, 1, 2, 0 };
    qsort(v, 4, sizeof *v, cmp_cb);
    return v[0];
}

static void check_same(const char *what)
{
    (void)what;
    /* libunwind's first frame is take() itself; ours starts at take's return address */
    assert_true(cap.nlu >= 2);
    uint32_t n = cap.nfu;
    assert_true(n >= 5);
    for (uint32_t i = 0; i < n && (int)i + 1 < cap.nlu; i++)
        assert_int_equal(cap.fu[i], (uint64_t)cap.lu[i + 1]);
    if (!(cap.flags & (EXP_STACK_TRUNCATED | EXP_STACK_UNWIND_FAIL)))
        assert_int_equal(n, (uint32_t)cap.nlu - 1); /* a clean end where libunwind ends */
}

static void test_shapes(void **state)
{
    cap.max = MAXF;
    cap.hi = stack_hi();
    plain(10);
    check_same("plain");
    assert_int_equal(cap.flags, 0);
    big_frame(7);
    check_same("mixed");
    assert_int_equal(cap.flags, 0);
    via_qsort();
    check_same("qsort");
    /* deep recursion, again and again: later walks come from the rule cache; after fu_forget
     * the rules are computed again */
    for (int i = 0; i < 3; i++) {
        if (i == 2)
            fu_forget();
        plain(40);
        check_same("recursion");
        assert_int_equal(cap.flags, 0);
        assert_true(cap.nfu > 40);
    }
}

static void test_limits(void **state)
{
    cap.max = 6;
    cap.hi = stack_hi();
    plain(20);
    assert_int_equal(cap.nfu, 6);
    assert_true(cap.flags & EXP_STACK_TRUNCATED);
    /* a bound just above the current frames stops the walk without reading beyond it */
    cap.max = MAXF;
    cap.hi = (uint64_t)__builtin_frame_address(0);
    plain(3);
    assert_true(cap.flags & EXP_STACK_UNWIND_FAIL);
    assert_true(cap.nfu >= 4 && cap.nfu < 10);
}

/* Two callers of the same shape: take() runs at the same stack pointer from both, with one stack
 * cell different (plain's return address into one or the other). */
__attribute__((noinline)) static int outer_a(void)
{
    return plain(4) + 1;
}

__attribute__((noinline)) static int outer_b(void)
{
    return plain(4) + 2;
}

static void test_memo(void **state)
{
    static uint64_t addr[64], val[64];
    fu_cells_t cells = { 0, 64, 0, 0, addr, val };
    cap.max = MAXF;
    cap.hi = stack_hi();
    fu_cells_t *as_cells[2] = { &cells, NULL }, *as_memo[2] = { NULL, &cells };
    volatile int twice = 2; /* not unrolled: one call instruction, the same return address */
    for (int i = 0; i < twice; i++) { /* the same call site twice: the same stack and cells */
        cap.cells = as_cells[i];
        cap.memo = as_memo[i];
        outer_a();
        if (!cap.memo_regs.ip)
            cap.memo_regs = cap.regs;
    }
    assert_true(cells.ok && cells.n >= 5);
    assert_true(cap.same);
    uint64_t first[MAXF];
    memcpy(first, cap.fu, sizeof first);
    outer_b(); /* same ip and sp, another caller: a cell differs */
    if (cap.regs.sp == cap.memo_regs.sp) {
        assert_false(cap.same);
        assert_true(memcmp(first, cap.fu, cap.nfu * sizeof *first) != 0);
    }
    cap.memo = NULL;
    cap.cells = NULL;
}

static void *thread_fn(void *arg)
{
    cap.max = MAXF;
    cap.hi = stack_hi();
    big_frame(3);
    check_same("thread");
    assert_int_equal(cap.flags, 0);
    return arg;
}

static void test_thread(void **state)
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_fn, NULL), 0);
    pthread_join(t, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_memo),
        cmocka_unit_test(test_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
