/*
 * dsshare.c - cache lines shared by threads, for the false-sharing view of dataspace profiling
 * (tests/e2e/dataspace_share.py).
 *
 *   wl_dsshare N   the main thread writes fs_pair.a and both N times each (write_a), a second
 *                  thread fs_pair.b and both N times each (write_b), at the same time; then the
 *                  main thread writes solo N times. fs_pair, both and solo each start a cache
 *                  line of their own: fs_pair's is falsely shared (two threads, different bytes,
 *                  writes), both's is truly shared (the same bytes), solo's is one thread's.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct pair {
    long a;
    long b;
};

volatile struct pair fs_pair __attribute__((aligned(64)));
volatile long both __attribute__((aligned(64)));
volatile long solo __attribute__((aligned(64)));
static long rounds;

__attribute__((noinline)) static void write_a(void)
{
    for (long i = 0; i < rounds; i++) {
        fs_pair.a = i;
        both = i;
    }
}

__attribute__((noinline)) static void write_b(void)
{
    for (long i = 0; i < rounds; i++) {
        fs_pair.b = i;
        both = i;
    }
}

static void *second(void *arg)
{
    (void)arg;
    write_b();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: wl_dsshare N\n");
        return 2;
    }
    rounds = atol(argv[1]);
    pthread_t t;
    if (pthread_create(&t, NULL, second, NULL))
        return 2;
    write_a();
    pthread_join(t, NULL);
    for (long i = 0; i < rounds; i++)
        solo = i;
    printf("share %ld %ld %ld\n", (long)fs_pair.a, (long)fs_pair.b, (long)solo);
    return 0;
}
