/*
 * dlopen_lib.c - threads that dlopen, call and dlclose a plugin in a loop while being sampled:
 * the case where libunwind deadlocks unless the profiling signal is blocked around the loader.
 * The plugin is opened by its bare name, found only through this executable's RUNPATH ($ORIGIN),
 * so the loader must see this program as the caller. Usage: wl_dlopen_lib [threads] [iterations]
 * (default 4 and 200). Prints "dlopen ok N" or what failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int iterations = 200;
static volatile double sink;
static int failures;

static void *loop(void *arg)
{
    (void)arg;
    for (int i = 0; i < iterations; i++) {
        void *h = dlopen("libwl_plugin.so", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        double (*work)(long) = (double (*)(long))dlsym(h, "plugin_work");
        if (work)
            sink += work(200000);
        dlclose(h);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        iterations = atoi(argv[2]);
    pthread_t t[64];
    if (nthreads > 64)
        nthreads = 64;
    for (int i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, loop, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    if (failures) {
        printf("dlopen failed %d\n", failures);
        return 1;
    }
    printf("dlopen ok %d\n", nthreads * iterations);
    return 0;
}
