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
 * (mpi_work) for the others; the previous state comes back when the call returns. Each
 * message a call sent or completed is also an mpi_msg record (tw_msg_t, below), barriers and
 * all-to-all collectives are kind mpi_sync with their communicator's job-wide id (tw_comm_made),
 * for the analysis' late senders and late arrival.
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

/* A point-to-point message a call started (a send) or completed (a receive), written after
 * the call's record as a record of kind mpi_msg (attributes only, no metrics, the call's
 * stack and time): dir (TW_MSG_SEND, TW_MSG_RECV), peer (the other side's world rank),
 * tag, comm (the communicator's job-wide id: 0 MPI_COMM_WORLD, TW_COMM_UNKNOWN when it has
 * none), post (ns: a send's start; when a receive was posted: its MPI_Recv, MPI_Irecv or
 * MPI_Start) and wait (ns: when the call that completed it started). The analysis pairs the
 * k-th send from a rank to another on (comm, tag) with the k-th receive of those by posting
 * order (MPI's non-overtaking rule) to find late senders. */
enum { TW_MSG_DIR, TW_MSG_PEER, TW_MSG_TAG, TW_MSG_COMM, TW_MSG_POST, TW_MSG_WAIT, TW_MSG_NV };
#define TW_MSG_SEND 1
#define TW_MSG_RECV 2
#define TW_COMM_UNKNOWN UINT64_MAX
#define TW_MSGS_INLINE 4

typedef struct tw_msg {
    uint64_t v[TW_MSG_NV];
} tw_msg_t;

/* The runtime state a call puts its thread in for clock profiling (kinds mpi_work and
 * mpi_wait, declared with mpi_call; functions.py, WAIT, says which calls wait). */
enum { TW_WORK, TW_WAIT };

typedef struct tw_call {
    const tally_collector_api_v1_t *api;
    int prev_state; /* the thread's state before the call (restored by tw_leave) */
    int state_set;  /* 1: tw_begin set a state */
    int kind;       /* the record's kind: tw_kind, or tw_sync_kind (tw_sync_comm) */
    uint64_t t0;
    uint64_t v[TW_NV + 1]; /* the metrics, then mpi_sync's attribute comm (0: MPI_COMM_WORLD) */
    uint32_t nmsgs, capmsgs;
    tw_msg_t *msgs; /* msgbuf, or allocated when more than TW_MSGS_INLINE */
    tw_msg_t msgbuf[TW_MSGS_INLINE];
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
extern int tw_msg_kind;  /* mpi_msg, or -1 */
extern __thread int tw_comm_nest; /* inside a Fortran wrapper that creates a communicator */
extern int tw_state_kind[2]; /* [TW_WORK], [TW_WAIT]: the kinds, or -1 */
extern const void *const *tw_public_table;

const tally_collector_api_v1_t *tw_api(void);
void tw_after_init(void);
uint64_t tw_bytes(int count, MPI_Datatype type);
void tw_sent(tw_call_t *c, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
void tw_received(tw_call_t *c, const MPI_Status *st, MPI_Comm comm);
void tw_req_add(tw_call_t *c, MPI_Request r, unsigned flags, uint64_t bytes, int peer, int tag,
                MPI_Comm comm);
/* The job-wide id of comm: 0 for MPI_COMM_WORLD, the id tw_comm_made gave it, or
 * TW_COMM_UNKNOWN (intercommunicators, and those made by calls tally does not trace). */
uint64_t tw_comm_id(MPI_Comm comm);
/* After a call that created newcomm from parent (collective over parent; rc its return code):
 * the k-th communicator created from a parent is the same on every member, so the new one's
 * id is a hash of the parent's id, k and the world rank of its rank 0, which every member
 * computes alone. Also writes a note (name mpi_comm: id, size, rank) saying this rank is
 * member `rank` of `size`. Every path of a creating wrapper calls it, recorded or not, so the
 * members count alike; a Fortran wrapper's inner C call leaves it to the Fortran one
 * (tw_comm_nest). Keeps errno. */
void tw_comm_made(int rc, MPI_Comm parent, MPI_Comm newcomm);
void tw_emit_msgs(tw_call_t *c, uint64_t t1, const uint64_t *pcs, uint32_t n);
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
    for (int k = 0; k <= TW_NV; k++)
        c->v[k] = 0;
    c->nmsgs = 0;
    c->capmsgs = TW_MSGS_INLINE;
    c->msgs = c->msgbuf;
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
        uint32_t tw_nv = TW_NV + 1;                                                              \
        while (tw_nv > 1 && (c)->v[tw_nv - 1] == 0)                                              \
            tw_nv--;                                                                             \
        (c)->api->emit((c)->kind, tw_t1, tw_pcs, tw_n, (c)->v, tw_nv, 0);                          \
        if ((c)->nmsgs)                                                                          \
            tw_emit_msgs((c), tw_t1, tw_pcs, tw_n);                                              \
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

/* A collective over an intracommunicator with an id (tw_comm_id) in which every member waits
 * for all the others (barrier and the all-to-all ones) is recorded as kind mpi_sync (the
 * metrics of mpi_call, then the attribute comm: the id): the n-th such record of a
 * communicator on each of its members is the same collective, which the analysis matches to
 * charge the members' wait to the one that arrived last. Called by the tw_coll_ functions of
 * those. */
void tw_sync_comm(tw_call_t *c, MPI_Comm comm);

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
