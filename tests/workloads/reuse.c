/*
 * reuse.c - dlopen a library, run in it, dlclose it, then dlopen another library of the same size
 * (which the loader usually maps at the same addresses) and run in it: each library's time must
 * be its own in the analysis (tests/e2e/load_reuse.py, load_relative.py). The libraries are given
 * as paths, relative ones resolved by the loader against the current directory.
 * Usage: wl_reuse LIB_A SECONDS_A LIB_B SECONDS_B. Prints "a=<cpu s> b=<cpu s> same=<0|1>": the CPU
 * time spent in each library's function, and whether B's function sits at A's address.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static double run(const char *lib, const char *fn, double seconds, void **addr)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
        exit(2);
    }
    double (*work)(double) = (double (*)(double))dlsym(h, fn);
    if (!work) {
        fprintf(stderr, "dlsym %s: %s\n", fn, dlerror());
        exit(2);
    }
    *addr = (void *)work;
    double spent = work(seconds);
    dlclose(h);
    return spent;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: wl_reuse LIB_A SECONDS_A LIB_B SECONDS_B\n");
        return 2;
    }
    void *pa, *pb;
    double a = run(argv[1], "reuse_a_work", atof(argv[2]), &pa);
    double b = run(argv[3], "reuse_b_work", atof(argv[4]), &pb);
    printf("a=%.6f b=%.6f same=%d\n", a, b, pa == pb);
    return 0;
}
