/*
 * thread_cost_keys.c - a library of wl_thread_cost (thread_cost.c) whose constructor creates
 * WL_THREAD_COST_KEYS thread-specific keys and keeps them. A library the program is linked with
 * is initialized before one preloaded with LD_PRELOAD, so the keys exist when a collector starts.
 */
#include <pthread.h>
#include <stdlib.h>

__attribute__((constructor)) static void make_keys(void)
{
    const char *k = getenv("WL_THREAD_COST_KEYS");
    int n = k ? atoi(k) : 0;
    for (int i = 0; i < n; i++) {
        pthread_key_t key;
        if (pthread_key_create(&key, NULL) != 0)
            exit(3);
    }
}

/* referenced by the program, so that the linker keeps the library */
__attribute__((visibility("default"))) int thread_cost_keys_linked(void)
{
    return 1;
}
