/*
 * jobscan.c - the analysis as an MPI job, MPI loaded at run time. See jobscan.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzer/jobscan.h"
#include "experiment/mpirank.h"

extern char **environ;

/* The few MPI functions used, for the two ABIs: Open MPI's handles are pointers to its objects,
 * MPICH's are ints (the constants of its mpi.h). */
typedef int (*init_thread_fn)(int *, char ***, int, int *);
typedef int (*finalize_fn)(void);
typedef int (*comm_int_fn_p)(void *, int *);
typedef int (*comm_int_fn_i)(int, int *);
typedef int (*send_fn_p)(const void *, int, void *, int, int, void *);
typedef int (*send_fn_i)(const void *, int, int, int, int, int);
typedef int (*recv_fn_p)(void *, int, void *, int, int, void *, void *);
typedef int (*recv_fn_i)(void *, int, int, int, int, int, void *);

#define MPICH_COMM_WORLD 0x44000000
#define MPICH_BYTE 0x4c00010d
#define THREAD_FUNNELED 1 /* the same in both */
#define TAG 31249         /* below the smallest MPI_TAG_UB an implementation may have */
#define MAX_MESSAGE ((uint64_t)1 << 30)

struct job {
    void *lib;
    int ompi; /* 1: Open MPI's ABI, 0: MPICH's */
    void *world, *byte; /* Open MPI */
    init_thread_fn init_thread;
    finalize_fn finalize;
    void *comm_rank, *comm_size, *send, *recv; /* by ABI */
    int rank, size;
    ses_t *ses;
    int stopped;       /* the others were told to stop */
    uint8_t *msg;      /* the last message received */
    size_t msg_cap;
    uint8_t *out;      /* a message being built */
    size_t out_cap;
    /* rank 0: the shares (lo, hi: [size * nexps]), what each process sent, the aggregations */
    uint32_t *lo, *hi;
    uint64_t *received;
    uint64_t aggregations;
};

int job_rank(const job_t *j) { return j->rank; }
int job_size(const job_t *j) { return j->size; }

/* ---- messages: a length, then that many bytes ------------------------------------------------- */

static int raw_send(job_t *j, const void *b, size_t n, int to)
{
    if (j->ompi)
        return ((send_fn_p)j->send)(b, (int)n, j->byte, to, TAG, j->world);
    return ((send_fn_i)j->send)(b, (int)n, MPICH_BYTE, to, TAG, MPICH_COMM_WORLD);
}

static int raw_recv(job_t *j, void *b, size_t n, int from)
{
    uint64_t status[16]; /* larger than either implementation's MPI_Status */
    if (j->ompi)
        return ((recv_fn_p)j->recv)(b, (int)n, j->byte, from, TAG, j->world, status);
    return ((recv_fn_i)j->recv)(b, (int)n, MPICH_BYTE, from, TAG, MPICH_COMM_WORLD, status);
}

/* Sends type, then n bytes of b, to rank to. */
static int msg_send(job_t *j, int to, char type, const void *b, size_t n, tally_err_t *err)
{
    if (n + 1 > j->out_cap) {
        uint8_t *o = realloc(j->out, n + 1);
        if (!o)
            return tally_errf(err, TALLY_ENOMEM, "out of memory");
        j->out = o;
        j->out_cap = n + 1;
    }
    j->out[0] = (uint8_t)type;
    if (n)
        memcpy(j->out + 1, b, n);
    uint64_t len = n + 1;
    if (raw_send(j, &len, sizeof len, to) || raw_send(j, j->out, len, to))
        return tally_errf(err, TALLY_EIO, "MPI_Send to analysis process %d failed", to);
    return 0;
}

/* Receives a message from rank from into j->msg: its type in *type, its bytes after the type. */
static int msg_recv(job_t *j, int from, char *type, size_t *n, tally_err_t *err)
{
    uint64_t len = 0;
    if (raw_recv(j, &len, sizeof len, from))
        return tally_errf(err, TALLY_EIO, "MPI_Recv from analysis process %d failed", from);
    if (len < 1 || len > MAX_MESSAGE)
        return tally_errf(err, TALLY_ECORRUPT, "analysis process %d sent a message of %llu bytes:"
                          " are all the processes of the job tally print of the same build?",
                          from, (unsigned long long)len);
    if (len > j->msg_cap) {
        uint8_t *m = realloc(j->msg, len);
        if (!m)
            return tally_errf(err, TALLY_ENOMEM, "out of memory");
        j->msg = m;
        j->msg_cap = len;
    }
    if (raw_recv(j, j->msg, len, from))
        return tally_errf(err, TALLY_EIO, "MPI_Recv from analysis process %d failed", from);
    *type = (char)j->msg[0];
    *n = len - 1;
    if (j->received)
        j->received[from] += len;
    return 0;
}

/* ---- starting ----------------------------------------------------------------------------------- */

static void *sym(job_t *j, const char *name, tally_err_t *err, int *rc)
{
    void *p = dlsym(j->lib, name);
    if (!p && !*rc)
        *rc = tally_errf(err, TALLY_EUNSUPPORTED, "the MPI library has no %s", name);
    return p;
}

int job_start(job_t **out, tally_err_t *err)
{
    *out = NULL;
    exp_mpi_rank_t r;
    if (!exp_mpi_rank(environ, &r) || r.size == 1)
        return 0; /* not launched as a job, or alone in it */
    const char *given = getenv("TALLY_MPI_LIB");
    const char *order[3] = { NULL, NULL, NULL };
    if (given && *given)
        order[0] = given;
    else if (!strcmp(r.launcher, "hydra"))
        order[0] = "libmpich.so.12", order[1] = "libmpi.so.40";
    else
        order[0] = "libmpi.so.40", order[1] = "libmpich.so.12";
    job_t *j = calloc(1, sizeof *j);
    if (!j)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    const char *why = NULL;
    for (int i = 0; i < 3 && order[i] && !j->lib; i++) {
        j->lib = dlopen(order[i], RTLD_NOW | RTLD_GLOBAL);
        if (!j->lib && !why)
            why = dlerror();
    }
    if (!j->lib) {
        int rc = tally_errf(err, TALLY_EUNSUPPORTED, "launched by %s as rank %llu, but no MPI "
                            "library could be loaded to run the analysis as a job (%s): install "
                            "the implementation's runtime library or name it in TALLY_MPI_LIB",
                            r.launcher, (unsigned long long)r.rank, why ? why : "?");
        free(j);
        return rc;
    }
    int rc = 0;
    j->world = dlsym(j->lib, "ompi_mpi_comm_world");
    j->ompi = j->world != NULL;
    if (j->ompi)
        j->byte = sym(j, "ompi_mpi_byte", err, &rc);
    j->init_thread = (init_thread_fn)sym(j, "MPI_Init_thread", err, &rc);
    j->finalize = (finalize_fn)sym(j, "MPI_Finalize", err, &rc);
    j->comm_rank = sym(j, "MPI_Comm_rank", err, &rc);
    j->comm_size = sym(j, "MPI_Comm_size", err, &rc);
    j->send = sym(j, "MPI_Send", err, &rc);
    j->recv = sym(j, "MPI_Recv", err, &rc);
    int provided = 0;
    if (!rc && j->init_thread(NULL, NULL, THREAD_FUNNELED, &provided))
        rc = tally_errf(err, TALLY_EUNSUPPORTED, "MPI_Init_thread failed");
    if (!rc) {
        int e1 = j->ompi ? ((comm_int_fn_p)j->comm_rank)(j->world, &j->rank)
                         : ((comm_int_fn_i)j->comm_rank)(MPICH_COMM_WORLD, &j->rank);
        int e2 = j->ompi ? ((comm_int_fn_p)j->comm_size)(j->world, &j->size)
                         : ((comm_int_fn_i)j->comm_size)(MPICH_COMM_WORLD, &j->size);
        if (e1 || e2)
            rc = tally_errf(err, TALLY_EUNSUPPORTED, "MPI_Comm_rank or MPI_Comm_size failed");
    }
    if (rc) {
        dlclose(j->lib);
        free(j);
        return rc;
    }
    if (j->size <= 1) { /* alone after all */
        job_end(j);
        return 0;
    }
    *out = j;
    return 0;
}

void job_end(job_t *j)
{
    if (!j)
        return;
    j->finalize();
    /* the library stays loaded: its threads and handlers may outlive MPI_Finalize */
    free(j->msg);
    free(j->out);
    free(j->lo);
    free(j->hi);
    free(j->received);
    free(j);
}

/* ---- shares ------------------------------------------------------------------------------------ */

/* The bytes of process p's events (at least 1, so that processes without events are spread too). */
static uint64_t weight(const exp_process_t *p)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/events", p->dir);
    return 1 + (stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0);
}

/* Every process of every experiment, in order, gets the rank whose part of the total bytes holds
 * its middle: contiguous ranges in the serial scan's order, rank 0 first. lo and hi: [size *
 * nexps], rank k's range of experiment x at k * nexps + x. */
static int shares(const ses_t *s, int size, uint32_t **plo, uint32_t **phi, tally_err_t *err)
{
    size_t nx = s->nexps ? s->nexps : 1, total_n = 0;
    for (size_t x = 0; x < s->nexps; x++)
        total_n += s->exps[x]->nprocs;
    uint64_t *w = malloc((total_n ? total_n : 1) * sizeof *w);
    uint32_t *lo = calloc((size_t)size * nx, sizeof *lo), *hi = calloc((size_t)size * nx, sizeof *hi);
    if (!w || !lo || !hi) {
        free(w);
        free(lo);
        free(hi);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    long double total = 0;
    size_t k = 0;
    for (size_t x = 0; x < s->nexps; x++)
        for (size_t p = 0; p < s->exps[x]->nprocs; p++)
            total += (long double)(w[k++] = weight(s->exps[x]->procs[p]));
    long double before = 0;
    k = 0;
    for (size_t x = 0; x < s->nexps; x++)
        for (size_t p = 0; p < s->exps[x]->nprocs; p++, k++) {
            long double mid = before + (long double)w[k] / 2;
            before += (long double)w[k];
            int r = (int)(mid * size / (total > 0 ? total : 1));
            if (r >= size)
                r = size - 1;
            for (int q = 0; q < size; q++) { /* lo: the processes before q's; hi: up to q's */
                lo[(size_t)q * nx + x] += r < q;
                hi[(size_t)q * nx + x] += r <= q;
            }
        }
    free(w);
    *plo = lo;
    *phi = hi;
    return 0;
}

/* What identifies the processes of experiment e: their number, then a hash of each one's pid,
 * start, threads and directory name (the paths may differ between hosts, not the names). */
static void identity(const exp_experiment_t *e, uint64_t out[2])
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t p = 0; p < e->nprocs; p++) {
        const exp_process_t *pr = e->procs[p];
        const char *base = strrchr(pr->dir, '/');
        uint64_t v[3] = { (uint64_t)pr->pid, pr->t_start, pr->nthreads };
        for (size_t i = 0; i < sizeof v; i++)
            h = (h ^ ((const uint8_t *)v)[i]) * 1099511628211ULL;
        for (const char *c = base ? base + 1 : pr->dir; *c; c++)
            h = (h ^ (uint8_t)*c) * 1099511628211ULL;
    }
    out[0] = e->nprocs;
    out[1] = h;
}

/* ---- rank 0 ----------------------------------------------------------------------------------- */

/* An error a process sent (its text after the type byte) as rank 0's error. */
static int remote_error(job_t *j, int from, size_t n, tally_err_t *err)
{
    return tally_errf(err, TALLY_EIO, "analysis process %d of %d: %.*s", from, j->size,
                      (int)(n < 1000 ? n : 1000), (const char *)j->msg + 1);
}

static int reduce(void *ctx, eng_t *g, int phase, tally_err_t *err)
{
    job_t *j = ctx;
    if (phase == ENG_REDUCE_START) {
        j->aggregations++;
        uint8_t *req = NULL;
        size_t n = 0;
        int rc = eng_request_write(g, &req, &n, err);
        for (int r = 1; !rc && r < j->size; r++)
            rc = msg_send(j, r, 'A', req, n, err);
        free(req);
        return rc;
    }
    int rc = 0;
    for (int r = 1; r < j->size; r++) {
        eng_merge_t *m = phase == ENG_REDUCE_MERGE && !rc ? eng_merge_new(g) : NULL;
        if (phase == ENG_REDUCE_MERGE && !rc && !m)
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
        for (;;) {
            char type;
            size_t n;
            int e = msg_recv(j, r, &type, &n, err);
            if (e) {
                eng_merge_free(m);
                return e; /* the transport broke: nothing more can be read */
            }
            if (type == 'X') {
                if (!rc)
                    rc = remote_error(j, r, n, err);
                break;
            }
            if (type != 'C' && type != 'L') {
                if (!rc)
                    rc = tally_errf(err, TALLY_ECORRUPT, "analysis process %d answered '%c' to an "
                                    "aggregation", r, type);
                break;
            }
            int done = 0;
            if (m && !rc) /* after an error, the rest is drained all the same */
                rc = eng_merge_chunk(m, j->msg + 1, n, &done, err);
            if (type == 'L') {
                if (m && !rc && !done)
                    rc = tally_errf(err, TALLY_ECORRUPT, "the partial result of analysis process "
                                    "%d ended early", r);
                break;
            }
        }
        eng_merge_free(m);
    }
    return rc;
}

/* The others' 'R' (ready: their experiments' identities) or 'X'; rank 0 then gives each its
 * share ('S') or, when something is wrong, tells them all to stop. */
int job_attach(job_t *j, ses_t *s, tally_err_t *err)
{
    int rc = 0;
    for (int r = 1; r < j->size; r++) {
        char type;
        size_t n;
        int e = msg_recv(j, r, &type, &n, err);
        if (e)
            return e;
        if (rc)
            continue;
        if (type == 'X') {
            rc = remote_error(j, r, n, err);
            continue;
        }
        int same = type == 'R' && s && n == 4 + 16 * s->nexps;
        uint32_t nx = 0;
        if (same)
            memcpy(&nx, j->msg + 1, 4);
        same = same && nx == s->nexps;
        for (size_t x = 0; same && x < s->nexps; x++) {
            uint64_t theirs[2], ours[2];
            memcpy(theirs, j->msg + 1 + 4 + 16 * x, 16);
            identity(s->exps[x], ours);
            same = theirs[0] == ours[0] && theirs[1] == ours[1];
        }
        if (!same && s)
            rc = tally_errf(err, TALLY_EUSAGE, "analysis process %d does not read the same "
                            "experiments as the first: give every process the same arguments, "
                            "on a file system they all see", r);
    }
    if (rc || !s) {
        tally_err_t ignore;
        job_finish(j, &ignore);
        return rc;
    }
    uint32_t *lo = NULL, *hi = NULL;
    if ((rc = shares(s, j->size, &lo, &hi, err)))
        return rc;
    size_t nx = s->nexps ? s->nexps : 1;
    uint8_t *b = malloc(4 + 8 * nx);
    if (!b)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
    for (int r = 1; !rc && r < j->size; r++) {
        uint32_t n32 = (uint32_t)s->nexps;
        memcpy(b, &n32, 4);
        memcpy(b + 4, lo + (size_t)r * nx, 4 * s->nexps);
        memcpy(b + 4 + 4 * s->nexps, hi + (size_t)r * nx, 4 * s->nexps);
        rc = msg_send(j, r, 'S', b, 4 + 8 * s->nexps, err);
    }
    free(b);
    if (!rc)
        rc = eng_set_share(s->eng, lo, hi, err);
    j->lo = lo;
    j->hi = hi;
    if (!rc && !(j->received = calloc((size_t)j->size, sizeof *j->received)))
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
    if (!rc) {
        j->ses = s;
        eng_set_reduce(s->eng, reduce, j);
    }
    return rc;
}

int job_finish(job_t *j, tally_err_t *err)
{
    if (j->stopped)
        return 0;
    j->stopped = 1;
    if (j->ses)
        eng_set_reduce(j->ses->eng, NULL, NULL);
    int rc = 0;
    for (int r = 1; r < j->size; r++) {
        int e = msg_send(j, r, 'Q', NULL, 0, err);
        if (e && !rc)
            rc = e;
    }
    return rc;
}

/* ---- the others -------------------------------------------------------------------------------- */

typedef struct sender {
    job_t *j;
    uint8_t *pend; /* the chunk before: sent as 'C' when another follows, else as 'L' */
    size_t n, cap;
    int have;
    tally_err_t *err;
} sender_t;

static int put_chunk(void *ctx, const void *buf, size_t n)
{
    sender_t *s = ctx;
    if (s->have) {
        int rc = msg_send(s->j, 0, 'C', s->pend, s->n, s->err);
        if (rc)
            return rc;
    }
    if (n > s->cap) {
        uint8_t *p = realloc(s->pend, n);
        if (!p)
            return TALLY_ENOMEM;
        s->pend = p;
        s->cap = n;
    }
    memcpy(s->pend, buf, n);
    s->n = n;
    s->have = 1;
    return 0;
}

static int send_error(job_t *j, const tally_err_t *e, tally_err_t *err)
{
    const char *m = e->msg[0] ? e->msg : "failed";
    return msg_send(j, 0, 'X', m, strlen(m), err);
}

int job_serve(job_t *j, ses_t *s, const char *open_error, tally_err_t *err)
{
    int rc;
    if (!s) {
        const char *m = open_error && *open_error ? open_error : "could not open the experiments";
        rc = msg_send(j, 0, 'X', m, strlen(m), err);
    } else {
        size_t n = 4 + 16 * s->nexps;
        uint8_t *b = malloc(n);
        if (!b)
            return tally_errf(err, TALLY_ENOMEM, "out of memory");
        uint32_t nx = (uint32_t)s->nexps;
        memcpy(b, &nx, 4);
        for (size_t x = 0; x < s->nexps; x++) {
            uint64_t id[2];
            identity(s->exps[x], id);
            memcpy(b + 4 + 16 * x, id, 16);
        }
        rc = msg_send(j, 0, 'R', b, n, err);
        free(b);
    }
    int shared = 0;
    while (!rc) {
        char type;
        size_t n;
        if ((rc = msg_recv(j, 0, &type, &n, err)))
            break;
        if (type == 'Q')
            break;
        tally_err_t e = { 0 };
        if (type == 'S' && s && n >= 4) {
            uint32_t nx;
            memcpy(&nx, j->msg + 1, 4);
            if (nx != s->nexps || n != 4 + 8 * (size_t)nx)
                return tally_errf(err, TALLY_ECORRUPT, "a damaged share from the first analysis "
                                  "process");
            uint32_t *lo = malloc(4 * (nx ? nx : 1)), *hi = malloc(4 * (nx ? nx : 1));
            if (!lo || !hi) {
                free(lo);
                free(hi);
                return tally_errf(err, TALLY_ENOMEM, "out of memory");
            }
            memcpy(lo, j->msg + 1 + 4, 4 * (size_t)nx);
            memcpy(hi, j->msg + 1 + 4 + 4 * (size_t)nx, 4 * (size_t)nx);
            rc = eng_set_share(s->eng, lo, hi, err);
            free(lo);
            free(hi);
            eng_set_partial(s->eng, 1);
            shared = 1;
            continue;
        }
        if (type != 'A')
            return tally_errf(err, TALLY_ECORRUPT, "the first analysis process sent '%c'", type);
        if (!s || !shared) {
            rc = msg_send(j, 0, 'X', "no experiment open", 18, err);
            continue;
        }
        /* the request is in j->msg: applied before the next message overwrites it */
        if (eng_request_apply(s->eng, j->msg + 1, n, &e) || eng_aggregate(s->eng, &e)) {
            rc = send_error(j, &e, err);
            continue;
        }
        sender_t sd = { j, NULL, 0, 0, 0, err };
        int w = eng_partial_write(s->eng, put_chunk, &sd, &e);
        if (w)
            rc = send_error(j, &e, err);
        else
            rc = msg_send(j, 0, 'L', sd.pend, sd.have ? sd.n : 0, err);
        free(sd.pend);
    }
    return rc;
}

int job_describe(const job_t *j, char *buf, size_t n)
{
    size_t k = 0;
    if (n)
        buf[0] = 0;
    if (!j->ses || !j->lo)
        return 0;
    size_t nx = j->ses->nexps ? j->ses->nexps : 1;
    for (int r = 0; r < j->size && k < n; r++) {
        k += (size_t)snprintf(buf + k, n - k, "analysis process %d:", r);
        for (size_t x = 0; x < j->ses->nexps && k < n; x++) {
            uint32_t lo = j->lo[(size_t)r * nx + x], hi = j->hi[(size_t)r * nx + x];
            k += (size_t)snprintf(buf + k, n - k, " %u process%s of %s", hi - lo,
                                  hi - lo == 1 ? "" : "es", j->ses->exps[x]->path);
        }
        if (k < n && r)
            k += (size_t)snprintf(buf + k, n - k, ", %llu bytes sent in %llu aggregations\n",
                                  (unsigned long long)j->received[r],
                                  (unsigned long long)j->aggregations);
        else if (k < n)
            k += (size_t)snprintf(buf + k, n - k, ", %llu aggregations\n",
                                  (unsigned long long)j->aggregations);
    }
    return 0;
}
