/*
 * dsdtls_lib.c - thread-locals of a library loaded by dlopen, without static TLS (each thread's
 * block is allocated by the dynamic linker on the thread's first use), for dataspace profiling
 * (tests/e2e/dataspace_dtls.py, with tests/workloads/dsdtls.c). Built -O2 -g -fPIC: the
 * variables are reached through __tls_get_addr's result.
 *
 *   dtls_touch(n)   makes the calling thread's pages of dtls_pages fresh (MADV_DONTNEED) and
 *                   writes the first byte of n of them: n page faults, each inside the thread's
 *                   own dynamic block of this library.
 */
#include <sys/mman.h>

#define PAGE 4096
#define NPAGES 64

__thread char dtls_pages[NPAGES * PAGE] __attribute__((aligned(PAGE)));
__thread long dtls_calls;

__attribute__((noinline)) long dtls_touch(long n)
{
    if (n > NPAGES)
        n = NPAGES;
    if (madvise(dtls_pages, sizeof dtls_pages, MADV_DONTNEED))
        return -1;
    for (long i = 0; i < n; i++)
        ((volatile char *)dtls_pages)[i * PAGE] = 1;
    return ++dtls_calls;
}
