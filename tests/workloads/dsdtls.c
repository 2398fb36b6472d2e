/*
 * dsdtls.c - page faults inside the thread-locals of a library loaded by dlopen, in several
 * threads (tests/e2e/dataspace_dtls.py).
 *
 *   wl_dsdtls LIB N T   dlopens LIB (libwl_dsdtls_lib.so), then the main thread and T threads
 *                       one after the other call its dtls_touch(N): N fresh pages of that
 *                       thread's instance of dtls_pages, so N * (T + 1) page faults in the
 *                       library's dynamic TLS blocks.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long (*touch)(long);
static long pages;

static void *worker(void *arg)
{
    (void)arg;
    touch(0); /* the thread's block is allocated (and zeroed) here: faults before the count */
    return (void *)(touch(pages) < 0 ? 1L : 0L);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: wl_dsdtls LIB PAGES THREADS\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h || !(touch = (long (*)(long))dlsym(h, "dtls_touch"))) {
        fprintf(stderr, "wl_dsdtls: %s\n", dlerror());
        return 2;
    }
    pages = atol(argv[2]);
    long threads = atol(argv[3]);
    touch(0); /* the library's code pages and the main thread's block, before the faults */
    if (touch(pages) < 0)
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
