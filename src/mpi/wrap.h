/*
 * wrap.h - the MPI wrappers of one MPI implementation (libtally-mpi-openmpi.so,
 * libtally-mpi-mpich.so): the same sources compiled against each implementation's mpi.h.
 *
 * Contract. libtally-mpi.so (dispatch.c) dlopens the library of the implementation the process
 * runs and asks tallyw_bind() for the wrapper of every slot (the traced names, C and gfortran's,
 * in the order of functions.py). A wrapper calls the implementation's PMPI_ function (Fortran:
 * its pmpi_x_) and records one TRACE record through the collector API
 * (include/tally_collector_api.h): kind `mpi_call`, values mpitime (ns in the call), mpisends,
 * mpibytessent, mpireceives, mpibytesrecv, mpiother, mpicollsent, mpicollrecv. The leaf of the
 * record's stack is the public entry the program called (MPI_Send in libtally-mpi.so), then the
 * program's frames. The program sees exactly what the implementation returned: return codes,
 * statuses, request handles, errno. Without tally (no collector API) every wrapper is a plain
 * call of the PMPI_ function. While a recorded call runs, its thread's runtime state (the
 * collector API's set_state) is MPI Wait (kind mpi_wait) for the calls that wait, MPI Work
 * (mpi_work) for the others; the previous state comes back when the call returns.
 *
 * Roles (functions.py): a send counts when started (persistent ones at each MPI_Start), a
 * receive when completed (MPI_Recv; MPI_Irecv and persistent receives at the Wait/Test that
 * completes them, from the status, which the wrapper supplies when the program passes
 * MPI_STATUS(ES)_IGNORE), bytes are count x MPI_Type_size for sends and MPI_Get_count(MPI_BYTE)
 * of the status for receives; every other call counts one mpiother; collectives add the bytes
 * of their buffer arguments (wrap_common.c, tw_coll_*). A send or receive that fails, or whose
 * peer is MPI_PROC_NULL, moves nothing: it is another event.
 * Thread safety: MPI_THREAD_MULTIPLE is fine: the request table has a lock; everything else is
 * per call.
 */
#ifndef TALLY_MPI_WRAP_H
#define TALLY_MPI_WRAP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

#include "tally_collector_api.h"

#define TW_WRAPPER __attribute__((visibility("hidden"), noinline))

enum { TW_TIME, TW_SENDS, TW_BSENT, TW_RECVS, TW_BRECV, TW_OTHER, TW_CSENT, TW_CRECV, TW_NV };

/* The runtime state a call puts its thread in for clock profiling (kinds mpi_work and
 * mpi_wait, declared with mpi_call; functions.py, WAIT, says which calls wait). */
enum { TW_WORK, TW_WAIT };

typedef struct tw_call {
    const tally_collector_api_v1_t *api;
    int prev_state; /* the thread's state before the call (restored by tw_leave) */
    int state_set;  /* 1: tw_begin set a state */
    int kind;       /* the record's kind: tw_kind, or tw_sync_kind (tw_sync_world) */
    uint64_t t0;
    uint64_t v[TW_NV];
} tw_call_t;

/* request table flags */
#define TW_REQ_SEND 1u
#define TW_REQ_RECV 2u
#define TW_REQ_PERSISTENT 4u
#define TW_REQ_ACTIVE 8u

/* Fortran status: as many MPI_Fint as an MPI_Status holds, and room to spare */
#define TW_F_STATUS_INTS (sizeof(MPI_Status) / sizeof(MPI_Fint) + 4)

extern const tally_collector_api_v1_t *tw_api_table;
extern int tw_kind;
extern int tw_sync_kind; /* mpi_sync, or -1 */
extern int tw_state_kind[2]; /* [TW_WORK], [TW_WAIT]: the kinds, or -1 */
extern const void *const *tw_public_table;

const tally_collector_api_v1_t *tw_api(void);
void tw_after_init(void);
uint64_t tw_bytes(int count, MPI_Datatype type);
void tw_sent(tw_call_t *c, int count, MPI_Datatype type, int dest, MPI_Comm comm);
void tw_received(tw_call_t *c, const MPI_Status *st, MPI_Comm comm);
void tw_req_add(MPI_Request r, unsigned flags, uint64_t bytes, int peer, MPI_Comm comm);
int tw_world_rank(int r, MPI_Comm comm);
void tw_peer_add(int world, uint64_t bytes);
void tw_before_finalize(void);
/* The implementation's function behind a Fortran wrapper: its PMPI name (pmpi_x_), or, for
 * mpi_f08 names it has no PMPI name of (MPICH's mpi_x_f08_ and mpi_x_f08ts_), the definition of
 * the public name next after libtally-mpi.so's entry; NULL: none. */
void *tw_fortran_real(const char *name);
void *tw_entry_generated(unsigned slot);
/* A Fortran status argument the program gave as MPI_STATUS_IGNORE (mpif.h's or mpi_f08's). */
extern const void *tw_f08_status_ignore, *tw_f08_statuses_ignore;
#define TW_F_STATUS_IGNORED(p)                                                                   \
    ((MPI_Fint *)(p) == MPI_F_STATUS_IGNORE ||                                                   \
     (tw_f08_status_ignore && (const void *)(p) == tw_f08_status_ignore))
#define TW_F_STATUSES_IGNORED(p)                                                                 \
    ((MPI_Fint *)(p) == MPI_F_STATUSES_IGNORE ||                                                 \
     (tw_f08_statuses_ignore && (const void *)(p) == tw_f08_statuses_ignore))
/* The buffer an mpi_f08 array descriptor (CFI_cdesc_t *, MPICH's mpi_x_f08ts_) describes: its
 * base address, MPI_IN_PLACE for mpi_f08's MPI_IN_PLACE. */
const void *tw_cdesc_addr(const void *desc);

#define TW_PUBLIC(i) (tw_public_table[i])

/* Starts recording a call that puts the thread in state (TW_WORK, TW_WAIT) until tw_leave:
 * the previous state (none, OpenMP's, an outer MPI call's) is saved and given back there. A
 * nested MPI call that is not recorded (the API's guard) leaves the outer call's state. */
static inline __attribute__((always_inline)) int tw_begin(tw_call_t *c, int state)
{
    c->api = tw_api();
    if (!c->api || tw_kind < 0 || !c->api->enter())
        return 0;
    int k = tw_state_kind[state];
    c->state_set = k >= 0;
    if (c->state_set)
        c->prev_state = c->api->set_state(k);
    for (int k = 0; k < TW_NV; k++)
        c->v[k] = 0;
    c->kind = tw_kind;
    c->t0 = c->api->now();
    return 1;
}

/* Records the call: must be expanded in the wrapper itself (its caller is the program). */
#define TW_EMIT(c, fn)                                                                           \
    do {                                                                                         \
        uint64_t tw_t1 = (c)->api->now(), tw_pcs[256];                                           \
        (c)->v[TW_TIME] = tw_t1 - (c)->t0;                                                       \
        uint32_t tw_n = (c)->api->stack_caller((fn), tw_pcs, 256);                               \
        uint32_t tw_nv = TW_NV;                                                                  \
        while (tw_nv > 1 && (c)->v[tw_nv - 1] == 0)                                              \
            tw_nv--;                                                                             \
        (c)->api->emit((c)->kind, tw_t1, tw_pcs, tw_n, (c)->v, tw_nv, 0);                          \
    } while (0)

/* A call that sent and received nothing (it failed, or its peer was MPI_PROC_NULL) is another
 * MPI event. */
static inline void tw_p2p_or_other(tw_call_t *c)
{
    if (!c->v[TW_SENDS] && !c->v[TW_RECVS])
        c->v[TW_OTHER] = 1;
}

static inline void tw_leave(tw_call_t *c)
{
    if (c->state_set)
        c->api->set_state(c->prev_state);
    c->api->leave();
}

/* A collective over MPI_COMM_WORLD in which every rank waits for all the others (barrier and
 * the all-to-all ones) is recorded as kind mpi_sync (the same metrics as mpi_call): the n-th
 * such record of every rank is the same collective, which the analysis matches to charge the
 * ranks' wait to the one that arrived last. Called by the tw_coll_ functions of those. */
void tw_sync_world(tw_call_t *c, MPI_Comm comm);

/* collectives: bytes of the buffer arguments (wrap_common.c) */
void tw_coll_Allgather(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
void tw_coll_Allgatherv(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, const int *recvcounts, const int *displs,
                        MPI_Datatype recvtype, MPI_Comm comm);
void tw_coll_Allreduce(tw_call_t *c, const void *sendbuf, void *recvbuf, int count,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
void tw_coll_Alltoall(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                      void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
void tw_coll_Alltoallv(tw_call_t *c, const void *sendbuf, const int *sendcounts,
                       const int *sdispls, MPI_Datatype sendtype, void *recvbuf,
                       const int *recvcounts, const int *rdispls, MPI_Datatype recvtype,
                       MPI_Comm comm);
void tw_coll_Alltoallw(tw_call_t *c, const void *sendbuf, const int *sendcounts,
                       const int *sdispls, const MPI_Datatype *sendtypes, void *recvbuf,
                       const int *recvcounts, const int *rdispls, const MPI_Datatype *recvtypes,
                       MPI_Comm comm);
void tw_coll_Barrier(tw_call_t *c, MPI_Comm comm);
void tw_coll_Bcast(tw_call_t *c, void *buffer, int count, MPI_Datatype datatype, int root,
                   MPI_Comm comm);
void tw_coll_Gather(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
void tw_coll_Gatherv(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, const int *recvcounts, const int *displs,
                     MPI_Datatype recvtype, int root, MPI_Comm comm);
void tw_coll_Reduce(tw_call_t *c, const void *sendbuf, void *recvbuf, int count,
                    MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
void tw_coll_Reduce_scatter(tw_call_t *c, const void *sendbuf, void *recvbuf,
                            const int *recvcounts, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm);
void tw_coll_Scan(tw_call_t *c, const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
void tw_coll_Scatter(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                     MPI_Comm comm);
void tw_coll_Scatterv(tw_call_t *c, const void *sendbuf, const int *sendcounts,
                      const int *displs, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm);

#endif
