/*
 * memo_callers.c - four callers of one allocating function at the same stack depth, taking
 * turns in a pseudo-random order, for tests/e2e/heap_memo.py: the allocation's call site (its
 * return address and stack pointer) is the same for the four, only the stack cells above it
 * tell their stacks apart, and heap tracing's memo of walks must keep the four.
 *
 * Usage: wl_memo_callers N. Makes N allocations of 32 bytes through alloc_site, each freed at
 * once; caller k of allocation i is (r >> 16) % 4, r = r * 1103515245 + 12345 from r = 1 (the
 * test computes the same counts).
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void *alloc_site(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

/* Four callers, one body: the same frame, so alloc_site runs at the same stack pointer. */
#define VIA(name)                                                                                  \
    __attribute__((noinline)) void name(void)                                                      \
    {                                                                                              \
        void *p = alloc_site(32);                                                                  \
        __asm__ volatile("" : : "r"(p) : "memory");                                                \
        free(p);                                                                                   \
    }
VIA(via_0)
VIA(via_1)
VIA(via_2)
VIA(via_3)

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    void (*const via[4])(void) = { via_0, via_1, via_2, via_3 };
    unsigned r = 1;
    for (long i = 0; i < n; i++) {
        r = r * 1103515245u + 12345u;
        via[(r >> 16) % 4]();
    }
    printf("memo_callers %ld\n", n);
    return 0;
}
