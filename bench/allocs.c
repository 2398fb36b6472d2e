/*
 * allocs.c - an allocation-heavy program for the analyzer benchmark's gprofng anchor (gprofng's
 * clock profiling records almost nothing on this machine, its heap tracing records every call):
 * N malloc/free pairs of varied sizes from a few call sites, 12 frames deep.
 * Usage: bench_allocs [pairs=500000].
 */
#include <stdlib.h>

static volatile unsigned long sink;

#define LEVEL(name, next)                                                                          \
    __attribute__((noinline)) static void name(long n, int site)                                   \
    {                                                                                              \
        next(n, site);                                                                             \
        sink++;                                                                                    \
    }

__attribute__((noinline)) static void leaf(long n, int site)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(16 + (size_t)((i * 7 + site) % 512));
        p[0] = (char)i;
        sink += (unsigned char)p[0];
        free(p);
    }
}

LEVEL(l1, leaf)
LEVEL(l2, l1)
LEVEL(l3, l2)
LEVEL(l4, l3)
LEVEL(l5, l4)
LEVEL(l6, l5)
LEVEL(l7, l6)
LEVEL(l8, l7)
LEVEL(l9, l8)
LEVEL(l10, l9)

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 500000;
    for (int site = 0; site < 4; site++)
        l10(pairs / 4, site);
    return 0;
}
