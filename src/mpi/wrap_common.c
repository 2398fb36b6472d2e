/*
 * wrap_common.c - what the generated wrappers of one MPI implementation share (wrap.h): the
 * collector API and the declarations, bytes of a message, the table of requests whose
 * completion is a receive (or whose start is a send), the collectives' bytes, and the wrappers
 * of the request functions (start, wait, test and their variants; C and Fortran), written by
 * hand because each completes requests in its own way.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "experiment/logrec.h"
#include "wrap.h"
#include "slots.h"

const tally_collector_api_v1_t *tw_api_table;
int tw_kind = -1;
int tw_sync_kind = -1;
int tw_msg_kind = -1;
__thread int tw_comm_nest;
int tw_state_kind[2] = {-1, -1};
const void *const *tw_public_table;
static int api_looked;

static const char *const metric_names[TW_NV] = {
    "mpitime", "mpisends", "mpibytessent", "mpireceives", "mpibytesrecv", "mpiother",
    "mpicollsent", "mpicollrecv",
};

/* The collector API, looked up at the first call (the collector may start after us); the
 * declarations are retried until they succeed (before the collector started they cannot). */
const tally_collector_api_v1_t *tw_api(void)
{
    if (__builtin_expect(tw_kind >= 0, 1))
        return tw_api_table;
    if (!__atomic_load_n(&api_looked, __ATOMIC_ACQUIRE)) {
        typedef const tally_collector_api_v1_t *(*get_fn)(void);
        get_fn get = (get_fn)dlsym(RTLD_DEFAULT, TALLY_COLLECTOR_API_V1_SYMBOL);
        const tally_collector_api_v1_t *a = get ? get() : NULL;
        if (a && (a->version != TALLY_COLLECTOR_API_VERSION || a->size < sizeof *a))
            a = NULL;
        tw_api_table = a;
        __atomic_store_n(&api_looked, 1, __ATOMIC_RELEASE);
    }
    const tally_collector_api_v1_t *a = tw_api_table;
    if (!a)
        return NULL;
    int saved = errno;
    a->declare_metric("mpitime", "MPI Time", NULL, 1);
    a->declare_metric("mpisends", "MPI Sends", "count", 0);
    a->declare_metric("mpibytessent", "MPI Bytes Sent", "bytes", 0);
    a->declare_metric("mpireceives", "MPI Receives", "count", 0);
    a->declare_metric("mpibytesrecv", "MPI Bytes Received", "bytes", 0);
    a->declare_metric("mpiother", "Other MPI Events", "count", 0);
    a->declare_metric("mpicollsent", "MPI Collective Bytes Sent", "bytes", 0);
    a->declare_metric("mpicollrecv", "MPI Collective Bytes Received", "bytes", 0);
    int k = a->declare_kind("mpi_call", metric_names, TW_NV);
    /* mpi_sync carries its communicator's id and mpi_msg a message's attributes (wrap.h): a
     * collector without attributes gets neither */
    if (k >= 0 && a->size > offsetof(tally_collector_api_v1_t, declare_kind_attrs)) {
        static const char *const sync_attrs[] = { "comm" };
        static const char *const msg_attrs[TW_MSG_NV] = { "dir", "peer", "tag", "comm", "post",
                                                          "wait" };
        int ks = a->declare_kind_attrs("mpi_sync", metric_names, TW_NV, sync_attrs, 1);
        int km = a->declare_kind_attrs("mpi_msg", NULL, 0, msg_attrs, TW_MSG_NV);
        tw_sync_kind = ks >= 0 ? ks : -1;
        tw_msg_kind = km >= 0 ? km : -1;
    }
    /* MPI Work and MPI Wait: runtime states for clock profiling (blocked time in MPI Work is
     * waiting too, hence mpiwait second) */
    static const char *const work[] = {"mpiwork", "mpiwait"}, *const wait[] = {"mpiwait"};
    if (k >= 0 && a->declare_metric("mpiwork", "MPI Work", NULL, 1) == 0 &&
        a->declare_metric("mpiwait", "MPI Wait", NULL, 1) == 0) {
        int kw = a->declare_kind("mpi_work", work, 2), kt = a->declare_kind("mpi_wait", wait, 1);
        if (kw >= 0 && kt >= 0) {
            tw_state_kind[TW_WORK] = kw;
            tw_state_kind[TW_WAIT] = kt;
        }
    }
    errno = saved;
    if (k >= 0)
        __atomic_store_n(&tw_kind, k, __ATOMIC_RELEASE);
    return k >= 0 ? a : NULL;
}

/* MPI_Init may be where the process learns it is a rank: nothing to do yet (the collector read
 * the rank from the launcher's environment when the process started). */
void tw_after_init(void)
{
}

uint64_t tw_bytes(int count, MPI_Datatype type)
{
    int size = 0;
    if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS ||
        size <= 0)
        return 0;
    return (uint64_t)count * (uint64_t)size;
}

/* ---- messages to each peer (the communication matrix) ------------------------------------------
 * Counted per world rank of the destination with atomic adds, written as `note` records
 * (name=mpi_peer) when the program calls MPI_Finalize. */

static struct {
    int size;         /* world size; 0: not known yet, -1: no table (no memory, MPI not up) */
    uint64_t *msgs, *bytes;
    MPI_Group world;
} peers;

static void peers_init(void)
{
    int size = 0, initialized = 0;
    if (PMPI_Initialized(&initialized) != MPI_SUCCESS || !initialized ||
        PMPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS || size <= 0 ||
        PMPI_Comm_group(MPI_COMM_WORLD, &peers.world) != MPI_SUCCESS) {
        return;
    }
    uint64_t *m = calloc((size_t)size, sizeof *m), *b = calloc((size_t)size, sizeof *b);
    if (!m || !b) {
        free(m);
        free(b);
        __atomic_store_n(&peers.size, -1, __ATOMIC_RELEASE);
        return;
    }
    peers.msgs = m;
    peers.bytes = b;
    __atomic_store_n(&peers.size, size, __ATOMIC_RELEASE);
}

static pthread_once_t peers_once = PTHREAD_ONCE_INIT;

/* The world rank of rank r of comm (the remote group's for an intercommunicator), or -1. */
int tw_world_rank(int r, MPI_Comm comm)
{
    if (r < 0 || comm == MPI_COMM_NULL)
        return -1;
    if (comm == MPI_COMM_WORLD)
        return r;
    pthread_once(&peers_once, peers_init);
    if (__atomic_load_n(&peers.size, __ATOMIC_ACQUIRE) <= 0)
        return -1;
    int inter = 0, w = -1;
    MPI_Group g;
    PMPI_Comm_test_inter(comm, &inter);
    if ((inter ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g)) != MPI_SUCCESS)
        return -1;
    if (PMPI_Group_translate_ranks(g, 1, &r, peers.world, &w) != MPI_SUCCESS ||
        w == MPI_UNDEFINED)
        w = -1;
    PMPI_Group_free(&g);
    return w;
}

void tw_peer_add(int world, uint64_t bytes)
{
    pthread_once(&peers_once, peers_init);
    if (world < 0 || world >= __atomic_load_n(&peers.size, __ATOMIC_ACQUIRE))
        return;
    __atomic_add_fetch(&peers.msgs[world], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&peers.bytes[world], bytes, __ATOMIC_RELAXED);
}

/* Before MPI_Finalize: one note per peer this process sent to. */
void tw_before_finalize(void)
{
    typedef int (*note_fn)(const char *, const char *const *, const uint64_t *, uint32_t);
    note_fn note = (note_fn)dlsym(RTLD_DEFAULT, TALLY_COLLECTOR_NOTE_V1_SYMBOL);
    int size = __atomic_load_n(&peers.size, __ATOMIC_ACQUIRE);
    static const char *const keys[] = { EXP_KEY_TO, EXP_KEY_MSGS, EXP_KEY_BYTES };
    for (int i = 0; note && i < size; i++) {
        uint64_t m = __atomic_exchange_n(&peers.msgs[i], 0, __ATOMIC_RELAXED);
        uint64_t b = __atomic_exchange_n(&peers.bytes[i], 0, __ATOMIC_RELAXED);
        uint64_t v[3] = { (uint64_t)i, m, b };
        if (m)
            note(EXP_NOTE_MPI_PEER, keys, v, 3);
    }
}

/* ---- messages (mpi_msg records, wrap.h) ------------------------------------------------------ */

/* Adds a message to the call's record (no memory: the message is left out, its counts stay). */
static void msg_add(tw_call_t *c, uint64_t dir, int peer, int tag, uint64_t comm, uint64_t post)
{
    if (tw_msg_kind < 0 || peer < 0)
        return;
    if (c->nmsgs == c->capmsgs) {
        uint32_t cap = c->capmsgs * 2;
        tw_msg_t *m = malloc(cap * sizeof *m);
        if (!m)
            return;
        memcpy(m, c->msgs, c->nmsgs * sizeof *m);
        if (c->msgs != c->msgbuf)
            free(c->msgs);
        c->msgs = m;
        c->capmsgs = cap;
    }
    tw_msg_t *m = &c->msgs[c->nmsgs++];
    m->v[TW_MSG_DIR] = dir;
    m->v[TW_MSG_PEER] = (uint64_t)peer;
    m->v[TW_MSG_TAG] = (uint64_t)(uint32_t)tag;
    m->v[TW_MSG_COMM] = comm;
    m->v[TW_MSG_POST] = post;
    m->v[TW_MSG_WAIT] = c->t0;
}

void tw_emit_msgs(tw_call_t *c, uint64_t t1, const uint64_t *pcs, uint32_t n)
{
    for (uint32_t i = 0; i < c->nmsgs; i++)
        c->api->emit(tw_msg_kind, t1, pcs, n, c->msgs[i].v, TW_MSG_NV, 0);
    if (c->msgs != c->msgbuf)
        free(c->msgs);
    c->msgs = c->msgbuf;
    c->nmsgs = 0;
}

void tw_sent(tw_call_t *c, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    if (dest == MPI_PROC_NULL)
        return;
    uint64_t b = tw_bytes(count, type);
    c->v[TW_SENDS]++;
    c->v[TW_BSENT] += b;
    int w = tw_world_rank(dest, comm);
    tw_peer_add(w, b);
    msg_add(c, TW_MSG_SEND, w, tag, tw_comm_id(comm), c->t0);
}

/* A receive completed: st's source (a rank of comm; peer: its world rank when already known,
 * else -1), posted at post (ns). */
static void received(tw_call_t *c, const MPI_Status *st, int peer, uint64_t comm_id,
                     MPI_Comm comm, uint64_t post)
{
    if (!st || st->MPI_SOURCE == MPI_PROC_NULL)
        return;
    int n = 0;
    c->v[TW_RECVS]++;
    if (PMPI_Get_count(st, MPI_BYTE, &n) == MPI_SUCCESS && n > 0)
        c->v[TW_BRECV] += (uint64_t)n;
    if (tw_msg_kind < 0)
        return;
    if (peer < 0)
        peer = tw_world_rank(st->MPI_SOURCE, comm);
    msg_add(c, TW_MSG_RECV, peer, st->MPI_TAG, comm_id, post);
}

void tw_received(tw_call_t *c, const MPI_Status *st, MPI_Comm comm)
{
    received(c, st, -1, tw_comm_id(comm), comm, c->t0);
}

/* ---- communicators' job-wide ids (wrap.h, tw_comm_made) --------------------------------------
 * Kept as an attribute of the communicator (a keyval of our own, not copied by MPI_Comm_dup,
 * freed with it); MPI_COMM_WORLD's is static. */

typedef struct tw_comm_info {
    uint64_t id;
    uint64_t made; /* communicators created from this one */
} tw_comm_info_t;

static tw_comm_info_t world_info;
static int comm_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

static int comm_info_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    free(value);
    return MPI_SUCCESS;
}

static void keyval_init(void)
{
    int kv = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_info_delete, &kv, NULL) ==
        MPI_SUCCESS)
        comm_keyval = kv;
}

static tw_comm_info_t *comm_info(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD)
        return &world_info;
    if (comm == MPI_COMM_NULL)
        return NULL;
    pthread_once(&keyval_once, keyval_init);
    if (comm_keyval == MPI_KEYVAL_INVALID)
        return NULL;
    void *v = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, comm_keyval, &v, &flag) != MPI_SUCCESS || !flag)
        return NULL;
    return v;
}

uint64_t tw_comm_id(MPI_Comm comm)
{
    const tw_comm_info_t *i = comm_info(comm);
    return i ? i->id : TW_COMM_UNKNOWN;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ x >> 31;
}

void tw_comm_made(int rc, MPI_Comm parent, MPI_Comm newcomm)
{
    if (rc != MPI_SUCCESS || tw_comm_nest || !tw_api())
        return;
    int saved = errno;
    tw_comm_info_t *p = comm_info(parent);
    if (!p) {
        errno = saved;
        return;
    }
    uint64_t k = __atomic_add_fetch(&p->made, 1, __ATOMIC_RELAXED);
    int inter = 0, size = 0, rank = -1;
    tw_comm_info_t *n = NULL;
    if (newcomm != MPI_COMM_NULL && PMPI_Comm_test_inter(newcomm, &inter) == MPI_SUCCESS &&
        !inter && !comm_info(newcomm) && comm_keyval != MPI_KEYVAL_INVALID &&
        PMPI_Comm_size(newcomm, &size) == MPI_SUCCESS &&
        PMPI_Comm_rank(newcomm, &rank) == MPI_SUCCESS && (n = calloc(1, sizeof *n))) {
        int first = tw_world_rank(0, newcomm);
        uint64_t id = mix64(mix64(p->id ^ mix64(k)) + (uint64_t)(uint32_t)first);
        n->id = id == 0 || id == TW_COMM_UNKNOWN ? 2 : id;
        if (first < 0 || PMPI_Comm_set_attr(newcomm, comm_keyval, n) != MPI_SUCCESS) {
            free(n);
            n = NULL;
        }
    }
    typedef int (*note_fn)(const char *, const char *const *, const uint64_t *, uint32_t);
    static note_fn note;
    if (n && !note)
        note = (note_fn)dlsym(RTLD_DEFAULT, TALLY_COLLECTOR_NOTE_V1_SYMBOL);
    if (n && note) {
        static const char *const keys[] = { EXP_KEY_ID, EXP_KEY_SIZE, EXP_KEY_RANK };
        uint64_t v[3] = { n->id, (uint64_t)size, (uint64_t)rank };
        note(EXP_NOTE_MPI_COMM, keys, v, 3);
    }
    errno = saved;
}

/* ---- requests -------------------------------------------------------------------------------- */

/* Open addressing keyed by the handle's bits (a pointer in Open MPI, an int in MPICH), grown
 * when half full; deleted slots are tombstones. Under a spinlock: MPI_THREAD_MULTIPLE. */
typedef struct tw_req {
    uint64_t key; /* 0: empty, 1: deleted, else the handle's bits | 1 << 63 */
    unsigned flags;
    int peer;     /* the destination or source, as a world rank (-1: unknown, any source) */
    int tag;      /* a send's tag */
    uint64_t bytes;
    uint64_t comm_id; /* tw_comm_id */
    uint64_t post;    /* a receive: when it was posted (MPI_Irecv, MPI_Start) */
    MPI_Comm comm;    /* a receive from any source: to translate the status's */
} tw_req_t;

static struct {
    int lock;
    tw_req_t *slot;
    size_t cap, used;
} reqs;

static void lock(void)
{
    while (__atomic_exchange_n(&reqs.lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&reqs.lock, __ATOMIC_RELAXED))
            __builtin_ia32_pause();
}

static void unlock(void)
{
    __atomic_store_n(&reqs.lock, 0, __ATOMIC_RELEASE);
}

static uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k | (1ull << 63);
}

static size_t req_hash(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

/* The slot of key, or NULL. Locked. */
static tw_req_t *req_find(uint64_t k)
{
    if (!reqs.cap)
        return NULL;
    for (size_t i = req_hash(k, reqs.cap), n = 0; n < reqs.cap; i = (i + 1) & (reqs.cap - 1), n++) {
        if (reqs.slot[i].key == k)
            return &reqs.slot[i];
        if (reqs.slot[i].key == 0)
            return NULL;
    }
    return NULL;
}

static int req_grow(void)
{
    size_t cap = reqs.cap ? reqs.cap * 2 : 1024;
    tw_req_t *s = calloc(cap, sizeof *s);
    if (!s)
        return -1;
    size_t used = 0;
    for (size_t i = 0; i < reqs.cap; i++) {
        if (reqs.slot[i].key <= 1)
            continue;
        size_t j = req_hash(reqs.slot[i].key, cap);
        while (s[j].key)
            j = (j + 1) & (cap - 1);
        s[j] = reqs.slot[i];
        used++;
    }
    free(reqs.slot);
    reqs.slot = s;
    reqs.cap = cap;
    reqs.used = used;
    return 0;
}

void tw_req_add(tw_call_t *c, MPI_Request r, unsigned flags, uint64_t bytes, int peer, int tag,
                MPI_Comm comm)
{
    if (r == MPI_REQUEST_NULL || peer == MPI_PROC_NULL)
        return;
    peer = peer == MPI_ANY_SOURCE ? -1 : tw_world_rank(peer, comm);
    uint64_t comm_id = tw_comm_id(comm), k = req_key(r);
    lock();
    tw_req_t *e = req_find(k);
    if (!e) {
        if ((reqs.used + 1) * 2 > reqs.cap && req_grow() != 0) {
            unlock();
            return; /* no memory: this request's completion will count as another event */
        }
        size_t j = req_hash(k, reqs.cap);
        while (reqs.slot[j].key > 1)
            j = (j + 1) & (reqs.cap - 1);
        if (reqs.slot[j].key == 0)
            reqs.used++;
        e = &reqs.slot[j];
        e->key = k;
    }
    e->flags = flags;
    e->bytes = bytes;
    e->peer = peer;
    e->tag = tag;
    e->comm_id = comm_id;
    e->post = c->t0;
    e->comm = comm;
    unlock();
}

/* A request was started (MPI_Start): a persistent send counts now. */
static void req_started(tw_call_t *c, MPI_Request r)
{
    int peer = -1, tag = 0;
    uint64_t bytes = 0, comm_id = TW_COMM_UNKNOWN;
    lock();
    tw_req_t *e = req_find(req_key(r));
    if (e) {
        e->flags |= TW_REQ_ACTIVE;
        e->post = c->t0;
        if (e->flags & TW_REQ_SEND) {
            c->v[TW_SENDS]++;
            c->v[TW_BSENT] += e->bytes;
            peer = e->peer;
            bytes = e->bytes;
            tag = e->tag;
            comm_id = e->comm_id;
        }
    }
    unlock();
    if (peer >= 0) {
        tw_peer_add(peer, bytes);
        msg_add(c, TW_MSG_SEND, peer, tag, comm_id, c->t0);
    }
}

/* A request completed with status st: an active receive counts now. */
static void req_completed(tw_call_t *c, MPI_Request r, const MPI_Status *st)
{
    if (r == MPI_REQUEST_NULL)
        return;
    int recv = 0;
    tw_req_t copy;
    lock();
    tw_req_t *e = req_find(req_key(r));
    if (e && (e->flags & TW_REQ_ACTIVE)) {
        recv = (e->flags & TW_REQ_RECV) != 0;
        copy = *e;
        if (e->flags & TW_REQ_PERSISTENT)
            e->flags &= ~TW_REQ_ACTIVE;
        else
            e->key = 1;
    }
    unlock();
    if (recv) {
        int cancelled = 0;
        if (PMPI_Test_cancelled(st, &cancelled) == MPI_SUCCESS && !cancelled)
            received(c, st, copy.peer, copy.comm_id, copy.comm, copy.post);
    }
}

static void req_freed(MPI_Request r)
{
    if (r == MPI_REQUEST_NULL)
        return;
    lock();
    tw_req_t *e = req_find(req_key(r));
    if (e)
        e->key = 1;
    unlock();
}

static void other_unless_p2p(tw_call_t *c)
{
    if (!c->v[TW_SENDS] && !c->v[TW_RECVS])
        c->v[TW_OTHER] = 1;
}

/* ---- the request functions, C ---------------------------------------------------------------- */

#define TW_SMALL 32

TW_WRAPPER int tallyw_MPI_Start(MPI_Request *request)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WORK))
        return PMPI_Start(request);
    MPI_Request h = *request;
    int rc = PMPI_Start(request);
    int saved = errno;
    if (rc == MPI_SUCCESS)
        req_started(&c, h);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Start));
    tw_leave(&c);
    errno = saved;
    return rc;
}

TW_WRAPPER int tallyw_MPI_Startall(int count, MPI_Request *array_of_requests)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WORK))
        return PMPI_Startall(count, array_of_requests);
    int rc = PMPI_Startall(count, array_of_requests);
    int saved = errno;
    if (rc == MPI_SUCCESS)
        for (int i = 0; i < count; i++)
            req_started(&c, array_of_requests[i]);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Startall));
    tw_leave(&c);
    errno = saved;
    return rc;
}

TW_WRAPPER int tallyw_MPI_Request_free(MPI_Request *request)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WORK))
        return PMPI_Request_free(request);
    MPI_Request h = *request;
    int rc = PMPI_Request_free(request);
    int saved = errno;
    if (rc == MPI_SUCCESS)
        req_freed(h);
    c.v[TW_OTHER] = 1;
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Request_free));
    tw_leave(&c);
    errno = saved;
    return rc;
}

TW_WRAPPER int tallyw_MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WAIT))
        return PMPI_Wait(request, status);
    MPI_Status st;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &st : status;
    MPI_Request h = *request;
    int rc = PMPI_Wait(request, s);
    int saved = errno;
    if (rc == MPI_SUCCESS)
        req_completed(&c, h, s);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Wait));
    tw_leave(&c);
    errno = saved;
    return rc;
}

TW_WRAPPER int tallyw_MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WORK))
        return PMPI_Test(request, flag, status);
    MPI_Status st;
    MPI_Status *s = status == MPI_STATUS_IGNORE ? &st : status;
    MPI_Request h = *request;
    int rc = PMPI_Test(request, flag, s);
    int saved = errno;
    if (rc == MPI_SUCCESS && *flag)
        req_completed(&c, h, s);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Test));
    tw_leave(&c);
    errno = saved;
    return rc;
}

/* Copies of the handles before a call that completes some of them, and statuses to use when
 * the program ignores them. */
typedef struct tw_many {
    MPI_Request hbuf[TW_SMALL], *h;
    MPI_Status sbuf[TW_SMALL], *s;
    int ok;
} tw_many_t;

static void many_init(tw_many_t *m, int n, const MPI_Request *r, MPI_Status *statuses)
{
    m->h = n <= TW_SMALL ? m->hbuf : malloc((size_t)n * sizeof *m->h);
    m->s = statuses;
    if (statuses == MPI_STATUSES_IGNORE)
        m->s = n <= TW_SMALL ? m->sbuf : malloc((size_t)n * sizeof *m->s);
    m->ok = m->h && m->s && n >= 0;
    if (m->ok)
        for (int i = 0; i < n; i++)
            m->h[i] = r[i];
    if (!m->ok && m->s != statuses) { /* no memory: the call runs as the program made it */
        if (m->s != m->sbuf)
            free(m->s);
        m->s = statuses;
    }
}

static void many_done(tw_many_t *m, MPI_Status *statuses)
{
    if (m->h && m->h != m->hbuf)
        free(m->h);
    if (m->s != statuses && m->s != m->sbuf)
        free(m->s);
}

/* all completed (rc MPI_SUCCESS), or those whose status says so (MPI_ERR_IN_STATUS) */
static void many_all(tw_call_t *c, tw_many_t *m, int n, int rc)
{
    if (!m->ok || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
        return;
    for (int i = 0; i < n; i++)
        if (rc == MPI_SUCCESS || m->s[i].MPI_ERROR == MPI_SUCCESS)
            req_completed(c, m->h[i], &m->s[i]);
}

TW_WRAPPER int tallyw_MPI_Waitall(int count, MPI_Request *array_of_requests,
                                  MPI_Status *array_of_statuses)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WAIT))
        return PMPI_Waitall(count, array_of_requests, array_of_statuses);
    tw_many_t m;
    many_init(&m, count, array_of_requests, array_of_statuses);
    int rc = PMPI_Waitall(count, array_of_requests, m.s);
    int saved = errno;
    many_all(&c, &m, count, rc);
    many_done(&m, array_of_statuses);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Waitall));
    tw_leave(&c);
    errno = saved;
    return rc;
}

TW_WRAPPER int tallyw_MPI_Testall(int count, MPI_Request *array_of_requests, int *flag,
                                  MPI_Status *array_of_statuses)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WORK))
        return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    tw_many_t m;
    many_init(&m, count, array_of_requests, array_of_statuses);
    int rc = PMPI_Testall(count, array_of_requests, flag, m.s);
    int saved = errno;
    if (*flag || rc == MPI_ERR_IN_STATUS)
        many_all(&c, &m, count, rc);
    many_done(&m, array_of_statuses);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Testall));
    tw_leave(&c);
    errno = saved;
    return rc;
}

TW_WRAPPER int tallyw_MPI_Waitany(int count, MPI_Request *array_of_requests, int *indx,
                                  MPI_Status *status)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WAIT))
        return PMPI_Waitany(count, array_of_requests, indx, status);
    tw_many_t m;
    many_init(&m, count, array_of_requests, MPI_STATUSES_IGNORE);
    MPI_Status st, *s = status == MPI_STATUS_IGNORE ? &st : status;
    int rc = PMPI_Waitany(count, array_of_requests, indx, s);
    int saved = errno;
    if (m.ok && rc == MPI_SUCCESS && *indx != MPI_UNDEFINED && *indx >= 0 && *indx < count)
        req_completed(&c, m.h[*indx], s);
    many_done(&m, MPI_STATUSES_IGNORE);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Waitany));
    tw_leave(&c);
    errno = saved;
    return rc;
}

TW_WRAPPER int tallyw_MPI_Testany(int count, MPI_Request *array_of_requests, int *indx,
                                  int *flag, MPI_Status *status)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WORK))
        return PMPI_Testany(count, array_of_requests, indx, flag, status);
    tw_many_t m;
    many_init(&m, count, array_of_requests, MPI_STATUSES_IGNORE);
    MPI_Status st, *s = status == MPI_STATUS_IGNORE ? &st : status;
    int rc = PMPI_Testany(count, array_of_requests, indx, flag, s);
    int saved = errno;
    if (m.ok && rc == MPI_SUCCESS && *flag && *indx != MPI_UNDEFINED && *indx >= 0 &&
        *indx < count)
        req_completed(&c, m.h[*indx], s);
    many_done(&m, MPI_STATUSES_IGNORE);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Testany));
    tw_leave(&c);
    errno = saved;
    return rc;
}

static void many_some(tw_call_t *c, tw_many_t *m, int n, int rc, int outcount,
                      const int *indices)
{
    if (!m->ok || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || outcount == MPI_UNDEFINED)
        return;
    for (int j = 0; j < outcount && j < n; j++)
        if (indices[j] >= 0 && indices[j] < n &&
            (rc == MPI_SUCCESS || m->s[j].MPI_ERROR == MPI_SUCCESS))
            req_completed(c, m->h[indices[j]], &m->s[j]);
}

TW_WRAPPER int tallyw_MPI_Waitsome(int incount, MPI_Request *array_of_requests, int *outcount,
                                   int *array_of_indices, MPI_Status *array_of_statuses)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WAIT))
        return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    tw_many_t m;
    many_init(&m, incount, array_of_requests, array_of_statuses);
    int rc = PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices, m.s);
    int saved = errno;
    many_some(&c, &m, incount, rc, *outcount, array_of_indices);
    many_done(&m, array_of_statuses);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Waitsome));
    tw_leave(&c);
    errno = saved;
    return rc;
}

TW_WRAPPER int tallyw_MPI_Testsome(int incount, MPI_Request *array_of_requests, int *outcount,
                                   int *array_of_indices, MPI_Status *array_of_statuses)
{
    tw_call_t c;
    if (!tw_begin(&c, TW_WORK))
        return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    tw_many_t m;
    many_init(&m, incount, array_of_requests, array_of_statuses);
    int rc = PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices, m.s);
    int saved = errno;
    many_some(&c, &m, incount, rc, *outcount, array_of_indices);
    many_done(&m, array_of_statuses);
    other_unless_p2p(&c);
    TW_EMIT(&c, TW_PUBLIC(TW_SLOT_MPI_Testsome));
    tw_leave(&c);
    errno = saved;
    return rc;
}

/* ---- the request functions, Fortran ---------------------------------------------------------
 * Every argument by reference; handles are MPI_Fint, converted with the implementation's f2c
 * functions; indices are 1-based; a status is TW_F_STATUS_INTS... of MPI_Fint (the
 * implementation's MPI_STATUS_SIZE); flags are LOGICAL (nonzero: true). */

#define F_STATUS_N (sizeof(MPI_Status) / sizeof(MPI_Fint))

const void *tw_f08_status_ignore, *tw_f08_statuses_ignore;
static const void *f08_in_place;

void *tw_fortran_real(const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    size_t n = strlen(name);
    if (f || strncmp(name, "pmpi_", 5) ||
        !((n > 5 && !strcmp(name + n - 5, "_f08_")) || (n > 7 && !strcmp(name + n - 7, "_f08ts_"))))
        return f;
    /* no PMPI name: the implementation's own definition of mpi_x_f08(ts)_, the one after
     * libtally-mpi.so's entry (dispatch.c), which then calls the implementation's C functions
     * (their records are the API's nested calls: they count once, here) */
    void *(*next)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "tally_mpi_next");
    return next ? next(name + 1) : NULL;
}

const void *tw_cdesc_addr(const void *desc)
{
    const void *base = desc ? *(const void *const *)desc : NULL; /* CFI_cdesc_t: base_addr first */
    if (f08_in_place && base == f08_in_place)
        return MPI_IN_PLACE;
    return base;
}

typedef void (*f1_t)(void *, void *);
typedef void (*f2_t)(void *, void *, void *);
typedef void (*f3_t)(void *, void *, void *, void *);
typedef void (*f4_t)(void *, void *, void *, void *, void *);
typedef void (*f5_t)(void *, void *, void *, void *, void *, void *);

#define FREAL(type, name)                                                                        \
    static type real;                                                                            \
    if (!real)                                                                                   \
    real = (type)tw_fortran_real(name)

static MPI_Request f_req(const void *p)
{
    return PMPI_Request_f2c(*(const MPI_Fint *)p);
}

static int f_int(const void *p)
{
    return (int)*(const MPI_Fint *)p;
}

/* one Fortran status, as C */
static void f_completed(tw_call_t *c, MPI_Request h, MPI_Fint *fst)
{
    MPI_Status st;
    if (PMPI_Status_f2c(fst, &st) == MPI_SUCCESS)
        req_completed(c, h, &st);
}

/* Fortran copies: C handles of the requests and a status array to use when ignored */
typedef struct tw_fmany {
    MPI_Request hbuf[TW_SMALL], *h;
    MPI_Fint sbuf[TW_SMALL * (F_STATUS_N + 1)], *s;
    int ok;
} tw_fmany_t;

static void fmany_init(tw_fmany_t *m, int n, const MPI_Fint *reqs, MPI_Fint *statuses)
{
    m->h = n <= TW_SMALL ? m->hbuf : malloc((size_t)n * sizeof *m->h);
    m->s = statuses;
    if (TW_F_STATUSES_IGNORED(statuses))
        m->s = n <= TW_SMALL ? m->sbuf : malloc((size_t)n * F_STATUS_N * sizeof *m->s);
    m->ok = m->h && m->s && n >= 0;
    if (m->ok)
        for (int i = 0; i < n; i++)
            m->h[i] = PMPI_Request_f2c(reqs[i]);
    if (!m->ok && m->s != statuses) {
        if (m->s != m->sbuf)
            free(m->s);
        m->s = statuses;
    }
}

static void fmany_done(tw_fmany_t *m, MPI_Fint *statuses)
{
    if (m->h && m->h != m->hbuf)
        free(m->h);
    if (m->s != statuses && m->s != m->sbuf)
        free(m->s);
}

static void fmany_all(tw_call_t *c, tw_fmany_t *m, int n, int rc)
{
    if (!m->ok || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS))
        return;
    for (int i = 0; i < n; i++) {
        MPI_Status st;
        if (PMPI_Status_f2c(m->s + (size_t)i * F_STATUS_N, &st) != MPI_SUCCESS)
            continue;
        if (rc == MPI_SUCCESS || st.MPI_ERROR == MPI_SUCCESS)
            req_completed(c, m->h[i], &st);
    }
}

static void fmany_some(tw_call_t *c, tw_fmany_t *m, int n, int rc, int outcount,
                       const MPI_Fint *indices)
{
    if (!m->ok || (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || outcount == MPI_UNDEFINED)
        return;
    for (int j = 0; j < outcount && j < n; j++) {
        int i = (int)indices[j] - 1;
        MPI_Status st;
        if (i < 0 || i >= n || PMPI_Status_f2c(m->s + (size_t)j * F_STATUS_N, &st) != MPI_SUCCESS)
            continue;
        if (rc == MPI_SUCCESS || st.MPI_ERROR == MPI_SUCCESS)
            req_completed(c, m->h[i], &st);
    }
}

/* The wrappers of both Fortran bindings (wrap_fortran.inc). An absent optional ierror (mpi_f08)
 * is a null pointer: the wrapper passes one of its own, which the program does not see, as
 * when it is absent. */
#define F_IERR(ierr)                                                                             \
    MPI_Fint tw_ierr_own = MPI_SUCCESS;                                                          \
    if (!(ierr))                                                                                 \
    (ierr) = &tw_ierr_own

#define FW(n) tallyw_f_##n##_
#define FR(s) s "_"
#define FS(n) (TW_SLOT_##n + TW_NFUNCS)
#include "wrap_fortran.inc"
#undef FW
#undef FR
#undef FS
#define FW(n) tallyw_f08_##n##_f08_
#define FR(s) s "_f08_"
#define FS(n) (TW_SLOT_##n + 2 * TW_NFUNCS)
#include "wrap_fortran.inc"
#undef FW
#undef FR
#undef FS

/* ---- collectives: the bytes of the buffer arguments ------------------------------------------
 * Sent: what this rank's send buffer holds; received: what its receive buffer gets, as the
 * arguments say (a root's receive side of a gather counts every rank's part). MPI_IN_PLACE
 * sends nothing. Intracommunicators; on an intercommunicator the group size is the local one. */

static int comm_size(MPI_Comm comm)
{
    int n = 0;
    return PMPI_Comm_size(comm, &n) == MPI_SUCCESS ? n : 0;
}

static int comm_rank(MPI_Comm comm)
{
    int r = -1;
    return PMPI_Comm_rank(comm, &r) == MPI_SUCCESS ? r : -1;
}

static uint64_t sum_bytes(const int *counts, int n, MPI_Datatype type)
{
    uint64_t s = 0;
    for (int i = 0; counts && i < n; i++)
        s += tw_bytes(counts[i], type);
    return s;
}

#define IN_PLACE(b) ((const void *)(b) == (const void *)MPI_IN_PLACE)

void tw_coll_Allgather(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    tw_sync_comm(c, comm);
    if (!IN_PLACE(sendbuf))
        c->v[TW_CSENT] += tw_bytes(sendcount, sendtype);
    c->v[TW_CRECV] += tw_bytes(recvcount, recvtype) * (uint64_t)comm_size(comm);
}

void tw_coll_Allgatherv(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, const int *recvcounts, const int *displs,
                        MPI_Datatype recvtype, MPI_Comm comm)
{
    tw_sync_comm(c, comm);
    if (!IN_PLACE(sendbuf))
        c->v[TW_CSENT] += tw_bytes(sendcount, sendtype);
    c->v[TW_CRECV] += sum_bytes(recvcounts, comm_size(comm), recvtype);
}

void tw_coll_Allreduce(tw_call_t *c, const void *sendbuf, void *recvbuf, int count,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    tw_sync_comm(c, comm);
    c->v[TW_CSENT] += tw_bytes(count, datatype);
    c->v[TW_CRECV] += tw_bytes(count, datatype);
}

void tw_coll_Alltoall(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                      void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    tw_sync_comm(c, comm);
    uint64_t n = (uint64_t)comm_size(comm);
    if (!IN_PLACE(sendbuf))
        c->v[TW_CSENT] += tw_bytes(sendcount, sendtype) * n;
    c->v[TW_CRECV] += tw_bytes(recvcount, recvtype) * n;
}

void tw_coll_Alltoallv(tw_call_t *c, const void *sendbuf, const int *sendcounts,
                       const int *sdispls, MPI_Datatype sendtype, void *recvbuf,
                       const int *recvcounts, const int *rdispls, MPI_Datatype recvtype,
                       MPI_Comm comm)
{
    tw_sync_comm(c, comm);
    int n = comm_size(comm);
    if (!IN_PLACE(sendbuf))
        c->v[TW_CSENT] += sum_bytes(sendcounts, n, sendtype);
    c->v[TW_CRECV] += sum_bytes(recvcounts, n, recvtype);
}

void tw_coll_Alltoallw(tw_call_t *c, const void *sendbuf, const int *sendcounts,
                       const int *sdispls, const MPI_Datatype *sendtypes, void *recvbuf,
                       const int *recvcounts, const int *rdispls, const MPI_Datatype *recvtypes,
                       MPI_Comm comm)
{
    tw_sync_comm(c, comm);
    int n = comm_size(comm);
    for (int i = 0; i < n; i++) {
        if (!IN_PLACE(sendbuf) && sendcounts && sendtypes)
            c->v[TW_CSENT] += tw_bytes(sendcounts[i], sendtypes[i]);
        if (recvcounts && recvtypes)
            c->v[TW_CRECV] += tw_bytes(recvcounts[i], recvtypes[i]);
    }
}

void tw_sync_comm(tw_call_t *c, MPI_Comm comm)
{
    if (tw_sync_kind < 0)
        return;
    uint64_t id = tw_comm_id(comm);
    if (id != TW_COMM_UNKNOWN) {
        c->kind = tw_sync_kind;
        c->v[TW_NV] = id;
    }
}

void tw_coll_Barrier(tw_call_t *c, MPI_Comm comm)
{
    tw_sync_comm(c, comm);
}

void tw_coll_Bcast(tw_call_t *c, void *buffer, int count, MPI_Datatype datatype, int root,
                   MPI_Comm comm)
{
    if (comm_rank(comm) == root)
        c->v[TW_CSENT] += tw_bytes(count, datatype);
    else
        c->v[TW_CRECV] += tw_bytes(count, datatype);
}

void tw_coll_Gather(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (!IN_PLACE(sendbuf))
        c->v[TW_CSENT] += tw_bytes(sendcount, sendtype);
    if (comm_rank(comm) == root)
        c->v[TW_CRECV] += tw_bytes(recvcount, recvtype) * (uint64_t)comm_size(comm);
}

void tw_coll_Gatherv(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, const int *recvcounts, const int *displs,
                     MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (!IN_PLACE(sendbuf))
        c->v[TW_CSENT] += tw_bytes(sendcount, sendtype);
    if (comm_rank(comm) == root)
        c->v[TW_CRECV] += sum_bytes(recvcounts, comm_size(comm), recvtype);
}

void tw_coll_Reduce(tw_call_t *c, const void *sendbuf, void *recvbuf, int count,
                    MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    c->v[TW_CSENT] += tw_bytes(count, datatype);
    if (comm_rank(comm) == root)
        c->v[TW_CRECV] += tw_bytes(count, datatype);
}

void tw_coll_Reduce_scatter(tw_call_t *c, const void *sendbuf, void *recvbuf,
                            const int *recvcounts, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm)
{
    tw_sync_comm(c, comm);
    int r = comm_rank(comm);
    c->v[TW_CSENT] += sum_bytes(recvcounts, comm_size(comm), datatype);
    if (recvcounts && r >= 0)
        c->v[TW_CRECV] += tw_bytes(recvcounts[r], datatype);
}

void tw_coll_Scan(tw_call_t *c, const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    c->v[TW_CSENT] += tw_bytes(count, datatype);
    c->v[TW_CRECV] += tw_bytes(count, datatype);
}

void tw_coll_Scatter(tw_call_t *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                     MPI_Comm comm)
{
    if (comm_rank(comm) == root)
        c->v[TW_CSENT] += tw_bytes(sendcount, sendtype) * (uint64_t)comm_size(comm);
    if (!IN_PLACE(recvbuf))
        c->v[TW_CRECV] += tw_bytes(recvcount, recvtype);
}

void tw_coll_Scatterv(tw_call_t *c, const void *sendbuf, const int *sendcounts,
                      const int *displs, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (comm_rank(comm) == root)
        c->v[TW_CSENT] += sum_bytes(sendcounts, comm_size(comm), sendtype);
    if (!IN_PLACE(recvbuf))
        c->v[TW_CRECV] += tw_bytes(recvcount, recvtype);
}

/* ---- the entry point of libtally-mpi.so -------------------------------------------------------- */

/* Called once by dispatch.c: public (the exported entries, for the leaf of every stack) and the
 * wrapper of each slot (NULL: the slot keeps the implementation's own function). */
__attribute__((visibility("default"))) int tallyw_bind(const void *const *public, unsigned nslots,
                                                       void **entries)
{
    if (nslots != 4 * TW_NFUNCS)
        return -1;
    tw_public_table = public;
    /* mpi_f08's MPI_STATUS(ES)_IGNORE and MPI_IN_PLACE, where the implementation has them (MPICH;
     * Open MPI's mpi_f08 passes mpif.h's) */
    const void *const *p = dlsym(RTLD_DEFAULT, "MPI_F08_STATUS_IGNORE");
    tw_f08_status_ignore = p ? *p : NULL;
    p = dlsym(RTLD_DEFAULT, "MPI_F08_STATUSES_IGNORE");
    tw_f08_statuses_ignore = p ? *p : NULL;
    f08_in_place = dlsym(RTLD_DEFAULT, "MPIR_F08_MPI_IN_PLACE");
    for (unsigned i = 0; i < nslots; i++)
        entries[i] = tw_entry_generated(i);
    return 0;
}
