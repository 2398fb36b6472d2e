/*
 * faulter.c - the counter benchmark's page-fault workload: maps R times (argument 2, default 50)
 * M MiB (argument 1, default 16) of fresh anonymous memory, writes one byte of each page and
 * unmaps it: R * M * 256 minor page faults, each one a sample of `-h page-faults,1`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
    long mib = argc > 1 ? atol(argv[1]) : 16, rounds = argc > 2 ? atol(argv[2]) : 50;
    size_t len = (size_t)mib << 20;
    long faults = 0;
    for (long r = 0; r < rounds; r++) {
        volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                -1, 0);
        if (p == MAP_FAILED)
            return 1;
        madvise((void *)p, len, MADV_NOHUGEPAGE);
        for (size_t o = 0; o < len; o += 4096, faults++)
            p[o] = 1;
        munmap((void *)p, len);
    }
    printf("faults %ld\n", faults);
    return 0;
}
