/*
 * dstls.c - page faults inside a shared library's thread-local array, in several threads
 * (tests/e2e/dataspace_tls.py).
 *
 *   wl_dstls N T   the main thread, then T threads one after the other, each call
 *                  dstls_touch(N) of libwl_dstls_lib.so: N fresh pages of that thread's
 *                  instance of tls_pages, so N * (T + 1) page faults in the library's TLS.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

long dstls_touch(long n);

static long pages;

static void *worker(void *arg)
{
    (void)arg;
    return (void *)(dstls_touch(pages) < 0 ? 1L : 0L);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: wl_dstls PAGES THREADS\n");
        return 2;
    }
    pages = atol(argv[1]);
    long threads = atol(argv[2]);
    dstls_touch(0); /* the library's code pages, once, before the faults that count */
    if (dstls_touch(pages) < 0)
        return 1;
    for (long t = 0; t < threads; t++) {
        pthread_t th;
        void *rc;
        if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, &rc) || rc)
            return 1;
    }
    printf("touched %ld pages in %ld threads\n", pages, threads + 1);
    return 0;
}
