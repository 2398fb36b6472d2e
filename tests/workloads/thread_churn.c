/*
 * thread_churn.c - what threads that come and go see of the collector. Threads that each install an alternate signal stack of their own, started
 * and joined one after the other (a pattern of runtimes that catch stack overflows), and others
 * cancelled while they wait. Prints the process's address space (VmSize, KiB) after the first
 * FIRST threads and after all of them: what a thread leaves behind when it ends shows as the
 * difference; and how many of the cancelled threads ran their start routine (every one: it has
 * no cancellation point before its pause). Then a thread cancelled while it allocates and frees
 * memory (no cancellation point: malloc and free are none) must not be cancelled before it
 * returns. Usage: wl_thread_churn [THREADS]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIRST 200

static void *own_altstack(void *arg)
{
    (void)arg;
    size_t size = 32768;
    void *mem = malloc(size);
    stack_t ss = { .ss_sp = mem, .ss_size = size, .ss_flags = 0 }, old;
    if (!mem || sigaltstack(&ss, &old)) {
        perror("sigaltstack");
        exit(3);
    }
    volatile unsigned x = 0;
    for (unsigned i = 0; i < 20000; i++)
        x += i;
    /* the alternate stack stays the thread's until it ends (its memory is the program's to
     * free once the thread is gone: not here) */
    return mem;
}

static int waiters_ran; /* waiters whose start routine ran: all of them (cancellation acts only at
                           a cancellation point, and a waiter's first is pause) */

static void *waiter(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&waiters_ran, 1, __ATOMIC_RELAXED);
    for (;;)
        pause(); /* a cancellation point */
    return NULL;
}

static int stop;

static void *allocator(void *arg)
{
    (void)arg;
    unsigned long n = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) || n < 300000) {
        void *p = malloc(64 + n % 512);
        if (!p)
            exit(4);
        *(volatile char *)p = 1;
        free(p);
        n++;
    }
    return (void *)n;
}

static long vmsize_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7))
            kb = strtol(line + 7, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3000;
    long first = -1;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        void *mem;
        if (pthread_create(&t, NULL, i % 10 == 9 ? waiter : own_altstack, NULL)) {
            perror("pthread_create");
            return 2;
        }
        if (i % 10 == 9) {
            pthread_cancel(t);
            mem = NULL;
        }
        if (pthread_join(t, &mem)) {
            perror("pthread_join");
            return 2;
        }
        if (mem != PTHREAD_CANCELED)
            free(mem);
        if (i + 1 == FIRST)
            first = vmsize_kb();
    }
    printf("threads=%d vmsize_first_kb=%ld vmsize_last_kb=%ld\n", n, first, vmsize_kb());
    printf("waiters=%d ran=%d\n", n / 10, waiters_ran);
    pthread_t t;
    void *ret;
    if (pthread_create(&t, NULL, allocator, NULL)) {
        perror("pthread_create");
        return 2;
    }
    pthread_cancel(t); /* pending until a cancellation point: the allocator has none */
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    if (pthread_join(t, &ret)) {
        perror("pthread_join");
        return 2;
    }
    printf("allocator %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "returned");
    return 0;
}
