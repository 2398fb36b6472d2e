/*
 * dsstack.c - page faults in stack arrays that the faulting function does not own, for
 * dataspace profiling of stacks (tests/e2e/dataspace_stack.py).
 *
 *   wl_dsstack fp N      in a new thread, fp_owner (a frame-pointer frame: its CFA is
 *                        rbp-based) makes N pages of its array fp_pages fresh and passes it to
 *                        touch_pages, a leaf that leaves rbp alone, which touches each page once
 *   wl_dsstack other N   in a new thread (the owner), other_owner makes N pages of its array
 *                        other_pages fresh and hands it to a second thread, which touches each
 *                        page once while the owner waits in pthread_join
 * Each touch is one page fault whose address is in a stack array of another frame (fp) or of
 * another thread's stack (other). Prints the number of pages touched.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE 4096
#define MAXP 64

static long npages;

/* Makes the whole pages of [p, p + len) fresh: their first touch faults. */
static void fresh(volatile char *p, size_t len)
{
    uintptr_t lo = ((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(PAGE - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Touches the first byte of the first n whole pages of p: a leaf, built without a frame pointer. */
__attribute__((noinline)) long touch_pages(volatile char *p, long n)
{
    uintptr_t a = ((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    long i = 0;
    for (; i < n; i++, a += PAGE)
        p[a - (uintptr_t)p] = 1;
    return i;
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static long fp_owner(long n)
{
    volatile char fp_pages[(MAXP + 1) * PAGE];
    fresh(fp_pages, sizeof fp_pages);
    long r = touch_pages(fp_pages, n);
    fp_pages[0] = 0;
    return r;
}

static void *fp_thread(void *arg)
{
    (void)arg;
    return (void *)fp_owner(npages);
}

struct job {
    volatile char *buf;
    long n, done;
};

static void *toucher(void *arg)
{
    struct job *j = arg;
    j->done = touch_pages(j->buf, j->n);
    return NULL;
}

__attribute__((noinline)) static long other_owner(long n)
{
    volatile char other_pages[(MAXP + 1) * PAGE];
    fresh(other_pages, sizeof other_pages);
    struct job j = { other_pages, n, 0 };
    pthread_t th;
    if (pthread_create(&th, NULL, toucher, &j) || pthread_join(th, NULL))
        return -1;
    other_pages[0] = 0;
    return j.done;
}

static void *other_thread(void *arg)
{
    (void)arg;
    return (void *)other_owner(npages);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "fp") && strcmp(argv[1], "other"))) {
        fprintf(stderr, "usage: wl_dsstack fp|other PAGES\n");
        return 2;
    }
    npages = atol(argv[2]);
    if (npages < 1 || npages > MAXP) {
        fprintf(stderr, "wl_dsstack: PAGES from 1 to %d\n", MAXP);
        return 2;
    }
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, (MAXP + 64) * PAGE * 2);
    pthread_t th;
    void *rc;
    if (pthread_create(&th, &a, strcmp(argv[1], "fp") ? other_thread : fp_thread, NULL) ||
        pthread_join(th, &rc))
        return 1;
    printf("touched %ld pages\n", (long)rc);
    return (long)rc == npages ? 0 : 1;
}
