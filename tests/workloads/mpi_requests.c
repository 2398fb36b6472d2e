/*
 * mpi_requests.c - the request paths of the MPI wrappers, and results that must not change
 * (tests/e2e/mpi.py): usage mpi_requests P [abort]
 *   persistent: MPI_Send_init / MPI_Recv_init around the ring, P x (MPI_Startall, MPI_Waitall
 *   with the statuses ignored): P sends and P receives of 64 bytes
 *   MPI_Irecv + MPI_Isend, completed by MPI_Testsome until both are done (statuses given)
 *   MPI_Irecv + MPI_Isend, completed by MPI_Waitany twice (status ignored)
 *   two threads (MPI_THREAD_MULTIPLE) each MPI_Sendrecv P times of 8 bytes around the ring
 *   an erroneous call under MPI_ERRORS_RETURN (MPI_Send to a rank that does not exist): the
 *   error class it returns is printed
 *   with "abort": rank 0 calls MPI_Abort(MPI_COMM_WORLD, 3) after all that
 * Each rank prints "rank R provided T errclass E bad B"; exit 1 when data differ.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, p_count;

static void *sendrecv_thread(void *arg)
{
    int tag = 100 + (int)(long)arg, next = (rank + 1) % size, prev = (rank + size - 1) % size;
    long bad = 0;
    for (int i = 0; i < p_count; i++) {
        double out = rank * 1000 + i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_DOUBLE, next, tag, &in, 1, MPI_DOUBLE, prev, tag,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad += in != prev * 1000 + i;
    }
    return (void *)bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mpi_requests P [abort]\n");
        return 2;
    }
    p_count = atoi(argv[1]);
    int provided = -1, bad = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    char out[64], in[64];
    MPI_Request pr[2];
    MPI_Send_init(out, 64, MPI_CHAR, next, 1, MPI_COMM_WORLD, &pr[0]);
    MPI_Recv_init(in, 64, MPI_CHAR, prev, 1, MPI_COMM_WORLD, &pr[1]);
    for (int i = 0; i < p_count; i++) {
        memset(out, 'a' + (rank + i) % 26, sizeof out);
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        bad += in[63] != 'a' + (prev + i) % 26;
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);

    int x = rank, y = -1, outcount = 0, idx[2], done = 0;
    MPI_Request r[2];
    MPI_Status st[2];
    MPI_Irecv(&y, 1, MPI_INT, prev, 2, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&x, 1, MPI_INT, next, 2, MPI_COMM_WORLD, &r[1]);
    while (done < 2) {
        MPI_Testsome(2, r, &outcount, idx, st);
        if (outcount != MPI_UNDEFINED)
            done += outcount;
    }
    bad += y != prev;

    MPI_Irecv(&y, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&x, 1, MPI_INT, next, 3, MPI_COMM_WORLD, &r[1]);
    int which;
    MPI_Waitany(2, r, &which, MPI_STATUS_IGNORE);
    MPI_Waitany(2, r, &which, MPI_STATUS_IGNORE);
    bad += y != prev;

    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, sendrecv_thread, (void *)t);
    for (int t = 0; t < 2; t++) {
        void *b;
        pthread_join(th[t], &b);
        bad += (int)(long)b;
    }

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Send(&x, 1, MPI_INT, size + 5, 4, MPI_COMM_WORLD), cls = -1;
    MPI_Error_class(rc, &cls);
    printf("rank %d provided %d errclass %d bad %d\n", rank, provided, cls, bad);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 2 && !strcmp(argv[2], "abort") && rank == 0)
        MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Finalize();
    return bad ? 1 : 0;
}
