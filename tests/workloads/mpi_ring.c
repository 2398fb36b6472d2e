/*
 * mpi_ring.c - an MPI program with known traffic (tests/e2e/mpi.py): usage mpi_ring N S K MS
 *   ring 1: N times MPI_Isend of S bytes to the next rank, MPI_Recv from the previous, MPI_Wait
 *   ring 2: N times MPI_Irecv from the previous, MPI_Send to the next, MPI_Wait (status ignored)
 *   MPI_Allreduce of K doubles
 *   imbalance: rank 0 computes 3 x MS milliseconds of its thread's CPU time, the others MS,
 *   then MPI_Barrier
 * Each rank prints "rank R size N barrier_ns B" (the time it spent in MPI_Barrier, on its own
 * clock) and checks the data it received (exit 1 otherwise).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static volatile double sink;

__attribute__((noinline)) static void compute(double ms)
{
    double end = cpu_ms() + ms, x = 0;
    while (cpu_ms() < end)
        for (int i = 0; i < 1000; i++)
            x += i * 1e-9;
    sink = x;
}

__attribute__((noinline)) static int ring1(int n, int s, int rank, int size, char *out, char *in)
{
    int bad = 0, next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < n; i++) {
        MPI_Request r;
        MPI_Status st;
        memset(out, (rank + i) & 0xff, (size_t)s);
        MPI_Isend(out, s, MPI_BYTE, next, 1, MPI_COMM_WORLD, &r);
        MPI_Recv(in, s, MPI_BYTE, prev, 1, MPI_COMM_WORLD, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        bad += s > 0 && (unsigned char)in[s - 1] != ((prev + i) & 0xff);
    }
    return bad;
}

__attribute__((noinline)) static int ring2(int n, int s, int rank, int size, char *out, char *in)
{
    int bad = 0, next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < n; i++) {
        MPI_Request r;
        memset(out, (rank + 2 * i) & 0xff, (size_t)s);
        MPI_Irecv(in, s, MPI_BYTE, prev, 2, MPI_COMM_WORLD, &r);
        MPI_Send(out, s, MPI_BYTE, next, 2, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        bad += s > 0 && (unsigned char)in[0] != ((prev + 2 * i) & 0xff);
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: mpi_ring N S K MS\n");
        return 2;
    }
    int n = atoi(argv[1]), s = atoi(argv[2]), k = atoi(argv[3]);
    double ms = atof(argv[4]);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *out = malloc((size_t)s + 1), *in = malloc((size_t)s + 1);
    int bad = ring1(n, s, rank, size, out, in) + ring2(n, s, rank, size, out, in);
    double *a = malloc(sizeof(double) * (size_t)k), *b = malloc(sizeof(double) * (size_t)k);
    for (int i = 0; i < k; i++)
        a[i] = rank + i;
    MPI_Allreduce(a, b, k, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < k; i++)
        bad += b[i] != (double)size * (size - 1) / 2 + (double)size * i;
    compute(rank == 0 ? 3 * ms : ms);
    long long t0 = mono_ns();
    MPI_Barrier(MPI_COMM_WORLD);
    long long waited = mono_ns() - t0;
    printf("rank %d size %d barrier_ns %lld bad %d\n", rank, size, waited, bad);
    fflush(stdout);
    MPI_Finalize();
    return bad ? 1 : 0;
}
