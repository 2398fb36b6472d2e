/*
 * trace_sync.c - threads that wait known times for each other, each in a function of its own:
 *   wait_mutex   blocks in pthread_mutex_lock on lock_m while main holds it 200 ms
 *   wait_cond    waits in pthread_cond_wait on cond_c until main signals it 300 ms later
 *   wait_sem     waits in sem_wait on sem_s until main posts it 250 ms later
 *   join_worker  main's pthread_join of a thread that sleeps 150 ms
 *   uncontended  N lock/unlock pairs of a mutex nobody else takes (argv[1], default 1000000)
 * Each waiter tells main (through a semaphore, which is posted before the wait starts) that it is
 * about to wait; main then sleeps the known time before releasing it. Each wait is also measured
 * by the program itself (CLOCK_MONOTONIC just around the waiting call) and printed on stderr:
 * "waited wait_mutex=NS wait_cond=NS wait_sem=NS join_worker=NS". Under load a wait comes out
 * longer than its known time (late wake-ups) or even a little shorter (a waiter preempted between
 * its announcement and its call): a tracer must match these, not the known times.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t lock_m = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cond_c = PTHREAD_COND_INITIALIZER;
sem_t sem_s;
pthread_mutex_t free_m = PTHREAD_MUTEX_INITIALIZER;
static sem_t ready;
static int go;
static volatile long sink;
static long waited_mutex, waited_cond, waited_sem, waited_join;

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts))
        ;
}

__attribute__((noinline)) static void *wait_mutex(void *arg)
{
    sem_post(&ready);
    long t0 = now_ns();
    pthread_mutex_lock(&lock_m);
    waited_mutex = now_ns() - t0;
    pthread_mutex_unlock(&lock_m);
    return arg;
}

__attribute__((noinline)) static void *wait_cond(void *arg)
{
    pthread_mutex_lock(&cond_lock);
    sem_post(&ready);
    long t0 = now_ns();
    while (!go)
        pthread_cond_wait(&cond_c, &cond_lock);
    waited_cond = now_ns() - t0;
    pthread_mutex_unlock(&cond_lock);
    return arg;
}

__attribute__((noinline)) static void *wait_sem(void *arg)
{
    sem_post(&ready);
    long t0 = now_ns();
    sem_wait(&sem_s);
    waited_sem = now_ns() - t0;
    return arg;
}

__attribute__((noinline)) static void *sleeper(void *arg)
{
    sleep_ms(150);
    return arg;
}

__attribute__((noinline)) static void join_worker(void)
{
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    long t0 = now_ns();
    pthread_join(t, NULL);
    waited_join = now_ns() - t0;
}

__attribute__((noinline)) static void uncontended(long n)
{
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&free_m);
        sink++;
        pthread_mutex_unlock(&free_m);
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    pthread_t t;
    sem_init(&ready, 0, 0);
    sem_init(&sem_s, 0, 0);

    pthread_mutex_lock(&lock_m);
    pthread_create(&t, NULL, wait_mutex, NULL);
    sem_wait(&ready);
    sleep_ms(200);
    pthread_mutex_unlock(&lock_m);
    pthread_join(t, NULL);

    pthread_create(&t, NULL, wait_cond, NULL);
    sem_wait(&ready);
    pthread_mutex_lock(&cond_lock); /* the waiter is inside pthread_cond_wait now */
    pthread_mutex_unlock(&cond_lock);
    sleep_ms(300);
    pthread_mutex_lock(&cond_lock);
    go = 1;
    pthread_cond_signal(&cond_c);
    pthread_mutex_unlock(&cond_lock);
    pthread_join(t, NULL);

    pthread_create(&t, NULL, wait_sem, NULL);
    sem_wait(&ready);
    sleep_ms(250);
    sem_post(&sem_s);
    pthread_join(t, NULL);

    join_worker();
    uncontended(n);
    fprintf(stderr, "waited wait_mutex=%ld wait_cond=%ld wait_sem=%ld join_worker=%ld\n",
            waited_mutex, waited_cond, waited_sem, waited_join);
    printf("waits done, %ld uncontended locks\n", sink);
    return 0;
}
