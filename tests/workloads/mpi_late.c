/* mpi_late.c - late senders and late arrival on split communicators, with the truth the program
 * measures itself (tests/e2e/mpi_late.py). Four ranks.
 *
 * Phase 1, MPI_COMM_WORLD, late senders: rank 0 computes D0 ms, then MPI_Send (tag 5) to rank 1,
 * which waits in MPI_Recv; rank 2 computes D2 ms, then MPI_Isend + MPI_Wait (tag 6) to rank 3,
 * which waits in MPI_Wait on an MPI_Irecv. Each message carries the sender's CLOCK_MONOTONIC time
 * just before its send call, so the receiver prints the truth: "late R L W" with L = send time -
 * its own time before the receiving (blocking) call, and W the time it measured around that call.
 * Then an MPI_Barrier over MPI_COMM_WORLD.
 *
 * Phase 2, MPI_Comm_split into halves {0,1} and {2,3}: in each half, local rank 1 computes (D1 ms
 * in half 0, D3 in half 1) and sends (tag 9, on the half) to local rank 0, which waits in MPI_Recv:
 * "late R L W" as above. Then local rank 0 computes (B0 ms in half 0, B1 in half 1) and both
 * enter MPI_Barrier on the half; each prints "barrier R E W": E its time before the call and W
 * the time it measured around it; the test takes the truth from the two members' E.
 * Then an MPI_Barrier on the ranks of the node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED). Last,
 * rank 0 computes 200 ms, then ranks 0 and 1 swap their times with MPI_Sendrecv: "sendrecv R L W"
 * as "late" above.
 *
 * usage: mpi_late [scale]  (scale multiplies every delay; default 1)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double scale = 1.0;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Busy for ms milliseconds of wall time. */
static void __attribute__((noinline)) compute(double ms)
{
    double end = now_ns() + ms * scale * 1e6;
    volatile double x = 1.0;
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
}

static void __attribute__((noinline)) late_send_world(int dest, int tag)
{
    double t = now_ns();
    MPI_Send(&t, 1, MPI_DOUBLE, dest, tag, MPI_COMM_WORLD);
}

static void __attribute__((noinline)) late_isend_world(int dest, int tag)
{
    MPI_Request r;
    double t = now_ns();
    MPI_Isend(&t, 1, MPI_DOUBLE, dest, tag, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void __attribute__((noinline)) recv_world(int rank, int src, int tag)
{
    double t, t0 = now_ns();
    MPI_Recv(&t, 1, MPI_DOUBLE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t1 = now_ns();
    printf("late %d %.0f %.0f\n", rank, t - t0, t1 - t0);
}

static void __attribute__((noinline)) irecv_world(int rank, int src, int tag)
{
    MPI_Request r;
    double t;
    MPI_Irecv(&t, 1, MPI_DOUBLE, src, tag, MPI_COMM_WORLD, &r);
    double t0 = now_ns();
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    double t1 = now_ns();
    printf("late %d %.0f %.0f\n", rank, t - t0, t1 - t0);
}

static void __attribute__((noinline)) send_half(MPI_Comm half)
{
    double t = now_ns();
    MPI_Send(&t, 1, MPI_DOUBLE, 0, 9, half);
}

static void __attribute__((noinline)) recv_half(int rank, MPI_Comm half)
{
    double t, t0 = now_ns();
    MPI_Recv(&t, 1, MPI_DOUBLE, 1, 9, half, MPI_STATUS_IGNORE);
    double t1 = now_ns();
    printf("late %d %.0f %.0f\n", rank, t - t0, t1 - t0);
}

/* Ranks 0 and 1 swap timestamps with MPI_Sendrecv, rank 0 after computing D ms: rank 1's receive
 * waits for rank 0's send ("sendrecv 1 L W"). */
static void __attribute__((noinline)) sendrecv_pair(int rank)
{
    double t, t0 = now_ns();
    MPI_Sendrecv(&t0, 1, MPI_DOUBLE, 1 - rank, 11, &t, 1, MPI_DOUBLE, 1 - rank, 11,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t1 = now_ns();
    printf("sendrecv %d %.0f %.0f\n", rank, t - t0, t1 - t0);
}

static void __attribute__((noinline)) barrier_half(int rank, MPI_Comm half)
{
    double t0 = now_ns();
    MPI_Barrier(half);
    double t1 = now_ns();
    printf("barrier %d %.0f %.0f\n", rank, t0, t1 - t0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1)
        scale = atof(argv[1]);
    if (size != 4) {
        if (!rank)
            fprintf(stderr, "mpi_late: run with 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    switch (rank) {
    case 0:
        compute(400);
        late_send_world(1, 5);
        break;
    case 1:
        recv_world(rank, 0, 5);
        break;
    case 2:
        compute(250);
        late_isend_world(3, 6);
        break;
    case 3:
        irecv_world(rank, 2, 6);
        break;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);
    int local;
    MPI_Comm_rank(half, &local);
    if (local == 1) {
        compute(rank / 2 ? 150 : 300);
        send_half(half);
    } else {
        recv_half(rank, half);
        compute(rank / 2 ? 100 : 200);
    }
    barrier_half(rank, half);
    MPI_Comm_free(&half);
    /* the ranks of this host (all four, whatever host name the test fakes) */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Barrier(node);
    MPI_Comm_free(&node);
    if (rank == 0)
        compute(200);
    if (rank < 2)
        sendrecv_pair(rank);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
