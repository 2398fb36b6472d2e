/*
 * mpi_pingpong.c - what MPI tracing adds to an MPI call (bench/mpi.py): ranks 0 and 1 bounce an
 * 8-byte message back and forth, in blocks of B round trips that alternate between the PMPI_
 * functions (never traced: the wrappers are MPI_Send and MPI_Recv) and the MPI_ functions (traced
 * under tally collect -M on), R blocks of each. One run measures both, under the same load; rank
 * 0 prints the fastest block of each (the least disturbed: the machine is shared) and the
 * difference per MPI call (a round trip puts 4 calls on its critical path: a send and a receive
 * on each rank). With one rank it bounces the message off itself with MPI_Sendrecv (one call a
 * round trip), which no scheduling of another process disturbs.
 * usage: mpi_pingpong [B R]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int b = argc > 1 ? atoi(argv[1]) : 2000, r = argc > 2 ? atoi(argv[2]) : 15;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char back[8];
    double *t[2] = { calloc((size_t)r, sizeof(double)), calloc((size_t)r, sizeof(double)) };
    char msg[8] = "pingpong";
    for (int k = 0; k < 2 * r; k++) {
        int traced = k & 1;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (int i = 0; i < b; i++) {
            if (size == 1) {
                if (traced)
                    MPI_Sendrecv(msg, 8, MPI_CHAR, 0, 0, back, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE);
                else
                    PMPI_Sendrecv(msg, 8, MPI_CHAR, 0, 0, back, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD,
                                  MPI_STATUS_IGNORE);
            } else if (rank == 0) {
                if (traced) {
                    MPI_Send(msg, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(msg, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    PMPI_Send(msg, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                    PMPI_Recv(msg, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
            } else if (rank == 1) {
                if (traced) {
                    MPI_Recv(msg, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(msg, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
                } else {
                    PMPI_Recv(msg, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    PMPI_Send(msg, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
                }
            }
        }
        t[traced][k / 2] = (now() - t0) / b;
    }
    if (rank == 0) {
        qsort(t[0], (size_t)r, sizeof(double), cmp);
        qsort(t[1], (size_t)r, sizeof(double), cmp);
        double bare = t[0][0], traced = t[1][0];
        int calls = size == 1 ? 1 : 4;
        printf("ranks %d round_trip_pmpi_ns %.1f round_trip_mpi_ns %.1f per_call_ns %.1f\n", size,
               bare, traced, (traced - bare) / calls);
    }
    MPI_Finalize();
    return 0;
}
