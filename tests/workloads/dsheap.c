/*
 * dsheap.c - page faults inside heap blocks from malloc, for the allocation map of dataspace
 * profiling without heap tracing (tests/e2e/dataspace_heapmap.py).
 *
 *   wl_dsheap N   make_slabs allocates N slabs (struct slab, 64 KiB: below glibc's mmap
 *                 threshold, so they come from the heap) and touches the first word of each
 *                 whole page of each slab's array v (fill); then they are freed and
 *                 remake_slabs allocates N slabs again (the same addresses, in practice) and
 *                 touches them the same way. Before each touch the pages are made fresh again
 *                 (MADV_DONTNEED), so every touch is one page fault, inside a block of the
 *                 function that allocated it at that time. Prints the number of touches of each
 *                 round, and how many small blocks (struct item, 48 bytes) it kept alive.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define PAGE 4096
#define NV 8190

struct slab {
    long id;
    long used;
    double v[NV];
};

struct item {
    long key;
    struct item *next;
    char name[32];
};

static struct slab *slabs[256];

/* The first index of v on each whole page of the slab, made fresh, touched once: the faults. */
__attribute__((noinline)) static long fill(struct slab *s)
{
    uintptr_t lo = ((uintptr_t)&s->v[0] + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    uintptr_t hi = (uintptr_t)&s->v[NV] & ~(uintptr_t)(PAGE - 1);
    if (hi > lo && madvise((void *)lo, hi - lo, MADV_DONTNEED))
        return -1;
    long n = 0;
    for (uintptr_t a = lo; a + sizeof(double) <= hi; a += PAGE, n++)
        ((volatile double *)s->v)[(a - (uintptr_t)s->v) / sizeof(double)] = 1.0;
    return n;
}

__attribute__((noinline)) static long make_slabs(int n)
{
    long t = 0;
    for (int i = 0; i < n; i++) {
        struct slab *s = malloc(sizeof *s);
        if (!s)
            return -1;
        s->id = i;
        slabs[i] = s;
    }
    for (int i = 0; i < n; i++)
        t += fill(slabs[i]);
    return t;
}

__attribute__((noinline)) static long remake_slabs(int n)
{
    long t = 0;
    for (int i = 0; i < n; i++) {
        struct slab *s = malloc(sizeof *s);
        if (!s)
            return -1;
        s->id = -i;
        slabs[i] = s;
    }
    for (int i = 0; i < n; i++)
        t += fill(slabs[i]);
    return t;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 16;
    if (n < 1 || n > 256) {
        fprintf(stderr, "usage: wl_dsheap N (1 to 256 slabs)\n");
        return 2;
    }
    /* small blocks between the slabs' rounds: most are not in the map, and none is named */
    struct item *head = NULL;
    long items = 0;
    for (int i = 0; i < 4096; i++) {
        struct item *it = malloc(sizeof *it);
        if (!it)
            return 1;
        it->key = i;
        it->next = head;
        head = it;
        items++;
    }
    long a = make_slabs(n);
    for (int i = 0; i < n; i++)
        free(slabs[i]);
    long b = remake_slabs(n);
    for (int i = 0; i < n; i++)
        free(slabs[i]);
    while (head) {
        struct item *x = head->next;
        free(head);
        head = x;
    }
    printf("touched %ld %ld pages, %ld items\n", a, b, items);
    return a < 0 || b < 0;
}
