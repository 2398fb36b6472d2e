/*
 * dstls_lib.c - a shared library's thread-local data, for dataspace profiling of library TLS
 * (tests/e2e/dataspace_tls.py, with tests/workloads/dstls.c). Built -O2 -g -fPIC: the variables
 * are reached through __tls_get_addr's result, not through %fs.
 *
 *   dstls_touch(n)   makes the calling thread's pages of tls_pages fresh again (MADV_DONTNEED:
 *                    the dynamic linker zeroed them when it made the thread's TLS block) and
 *                    writes the first byte of n of them: n page faults, each inside the
 *                    thread's own block of this library.
 */
#include <sys/mman.h>

#define PAGE 4096
#define NPAGES 64

__thread char tls_pages[NPAGES * PAGE] __attribute__((aligned(PAGE)));
__thread long tls_calls;

__attribute__((noinline)) long dstls_touch(long n)
{
    if (n > NPAGES)
        n = NPAGES;
    if (madvise(tls_pages, sizeof tls_pages, MADV_DONTNEED))
        return -1;
    for (long i = 0; i < n; i++)
        ((volatile char *)tls_pages)[i * PAGE] = 1;
    return ++tls_calls;
}
