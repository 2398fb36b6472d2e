/*
 * omp.c - OpenMP Work and Wait: the states of ompstate.h, and the interposers of GCC's libgomp
 * entry points, which has no OMPT (see ompstate.h).
 *
 * What a GCC-compiled OpenMP program calls, and what each call means for the calling thread:
 *  - GOMP_parallel and its combined forms (loops, sections, reductions), the old pair
 *    GOMP_parallel_start/_end: the outlined function is wrapped: every thread of the team is in
 *    Work while it runs, and in Wait from its return on (the region's end barrier; a worker then
 *    waits idle in the runtime's pool for the next region). The encountering thread is in Work
 *    again when the region has ended.
 *  - waits: GOMP_barrier (and _cancel), GOMP_loop_end, GOMP_sections_end (and _cancel: their
 *    implicit barriers), GOMP_critical_start, GOMP_critical_name_start, GOMP_atomic_start (each
 *    waits for a lock), GOMP_ordered_start, GOMP_taskwait, GOMP_taskgroup_end, omp_set_lock,
 *    omp_set_nest_lock (and the Fortran omp_set_lock_, omp_set_nest_lock_): Wait during the
 *    call, then the state from before.
 *  - loop scheduling (GOMP_loop_*_start, _next), single, tasks and the rest are work the thread
 *    does in the runtime: Work, which the thread already is in; not interposed.
 * The main thread of a program linked with an OpenMP runtime is in Work from the start; a thread
 * whose first OpenMP call comes before any state (a program that loads the runtime later) is put
 * in Work by it.
 *
 * Every interposer passes straight through when the real function belongs to a runtime with
 * OMPT (libomp's GOMP_ compatibility layer: its OMPT callbacks, ompt.c, give exact states) and
 * when this process is not profiled.
 */
#define _GNU_SOURCE
#include "ompstate.h"
#include "realfn.h"
#include "trace.h"

#include <link.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "../../include/tally_collector_api.h"

/* ---- the states ------------------------------------------------------------------------------- */

int ompstate_ompt_active;

static const tally_collector_api_v1_t *api;
static int kind_work = -1, kind_wait = -1;
static int declared; /* 0 not yet, 1 under way, 2 done, 3 failed; atomic */

int ompstate_ready(void)
{
    int s = __atomic_load_n(&declared, __ATOMIC_ACQUIRE);
    if (__builtin_expect(s == 2, 1))
        return 1;
    if (s != 0 || __atomic_load_n(&coll_proc.init_state, __ATOMIC_ACQUIRE) != 2)
        return 0; /* failed, another thread is declaring (its states come next time), or the
                     collector is still starting (ompstate_process_start comes next) */
    int zero = 0;
    if (!__atomic_compare_exchange_n(&declared, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return __atomic_load_n(&declared, __ATOMIC_ACQUIRE) == 2;
    int saved = errno;
    const tally_collector_api_v1_t *a = tally_collector_api_v1();
    int ok = a && a->size > offsetof(tally_collector_api_v1_t, set_state) &&
             a->declare_metric("ompwork", "OpenMP Work", NULL, 1) == 0 &&
             a->declare_metric("ompwait", "OpenMP Wait", NULL, 1) == 0;
    if (ok) {
        static const char *const work[] = { "ompwork", "ompwait" }, *const wait[] = { "ompwait" };
        kind_work = a->declare_kind("omp_work", work, 2);
        kind_wait = a->declare_kind("omp_wait", wait, 1);
        ok = kind_work >= 0 && kind_wait >= 0;
    }
    if (ok)
        api = a;
    errno = saved;
    __atomic_store_n(&declared, ok ? 2 : 3, __ATOMIC_RELEASE);
    if (ok)
        ompstate_work(); /* the thread whose OpenMP activity came first */
    return ok;
}

int ompstate_set(int kind) { return api ? api->set_state(kind) : OMPSTATE_NONE; }
int ompstate_work(void) { return ompstate_set(kind_work); }
int ompstate_wait(void) { return ompstate_set(kind_wait); }

/* ---- libgomp's entry points ------------------------------------------------------------------ */

typedef void (*omp_fn_t)(void *);

static struct {
    int done; /* realfn.h */
    void (*parallel)(omp_fn_t, void *, unsigned, unsigned);
    void (*parallel_start)(omp_fn_t, void *, unsigned);
    void (*parallel_end)(void);
    void (*parallel_loop_static)(omp_fn_t, void *, unsigned, long, long, long, long, unsigned);
    void (*parallel_loop_dynamic)(omp_fn_t, void *, unsigned, long, long, long, long, unsigned);
    void (*parallel_loop_guided)(omp_fn_t, void *, unsigned, long, long, long, long, unsigned);
    void (*parallel_loop_nonmonotonic_dynamic)(omp_fn_t, void *, unsigned, long, long, long,
                                               long, unsigned);
    void (*parallel_loop_nonmonotonic_guided)(omp_fn_t, void *, unsigned, long, long, long, long,
                                              unsigned);
    void (*parallel_loop_runtime)(omp_fn_t, void *, unsigned, long, long, long, unsigned);
    void (*parallel_loop_nonmonotonic_runtime)(omp_fn_t, void *, unsigned, long, long, long,
                                               unsigned);
    void (*parallel_loop_maybe_nonmonotonic_runtime)(omp_fn_t, void *, unsigned, long, long,
                                                     long, unsigned);
    void (*parallel_sections)(omp_fn_t, void *, unsigned, unsigned, unsigned);
    unsigned (*parallel_reductions)(omp_fn_t, void *, unsigned, unsigned);
    void (*barrier)(void);
    bool (*barrier_cancel)(void);
    void (*loop_end)(void);
    bool (*loop_end_cancel)(void);
    void (*sections_end)(void);
    bool (*sections_end_cancel)(void);
    void (*critical_start)(void);
    void (*critical_name_start)(void **);
    void (*atomic_start)(void);
    void (*ordered_start)(void);
    void (*taskwait)(void);
    void (*taskgroup_end)(void);
    void (*set_lock)(void *);
    void (*set_nest_lock)(void *);
    void (*set_lock_f)(void *);
    void (*set_nest_lock_f)(void *);
    void *kmpc_fork_call; /* present: the runtime is libomp, whose OMPT gives the states */
} real;

static const realfn_t real_fns[] = {
    REALFN(real.parallel, "GOMP_parallel"),
    REALFN(real.parallel_start, "GOMP_parallel_start"),
    REALFN(real.parallel_end, "GOMP_parallel_end"),
    REALFN(real.parallel_loop_static, "GOMP_parallel_loop_static"),
    REALFN(real.parallel_loop_dynamic, "GOMP_parallel_loop_dynamic"),
    REALFN(real.parallel_loop_guided, "GOMP_parallel_loop_guided"),
    REALFN(real.parallel_loop_nonmonotonic_dynamic, "GOMP_parallel_loop_nonmonotonic_dynamic"),
    REALFN(real.parallel_loop_nonmonotonic_guided, "GOMP_parallel_loop_nonmonotonic_guided"),
    REALFN(real.parallel_loop_runtime, "GOMP_parallel_loop_runtime"),
    REALFN(real.parallel_loop_nonmonotonic_runtime, "GOMP_parallel_loop_nonmonotonic_runtime"),
    REALFN(real.parallel_loop_maybe_nonmonotonic_runtime,
           "GOMP_parallel_loop_maybe_nonmonotonic_runtime"),
    REALFN(real.parallel_sections, "GOMP_parallel_sections"),
    REALFN(real.parallel_reductions, "GOMP_parallel_reductions"),
    REALFN(real.barrier, "GOMP_barrier"),
    REALFN(real.barrier_cancel, "GOMP_barrier_cancel"),
    REALFN(real.loop_end, "GOMP_loop_end"),
    REALFN(real.loop_end_cancel, "GOMP_loop_end_cancel"),
    REALFN(real.sections_end, "GOMP_sections_end"),
    REALFN(real.sections_end_cancel, "GOMP_sections_end_cancel"),
    REALFN(real.critical_start, "GOMP_critical_start"),
    REALFN(real.critical_name_start, "GOMP_critical_name_start"),
    REALFN(real.atomic_start, "GOMP_atomic_start"),
    REALFN(real.ordered_start, "GOMP_ordered_start"),
    REALFN(real.taskwait, "GOMP_taskwait"),
    REALFN(real.taskgroup_end, "GOMP_taskgroup_end"),
    REALFN(real.set_lock, "omp_set_lock"),
    REALFN(real.set_nest_lock, "omp_set_nest_lock"),
    REALFN(real.set_lock_f, "omp_set_lock_"),
    REALFN(real.set_nest_lock_f, "omp_set_nest_lock_"),
    REALFN(real.kmpc_fork_call, "__kmpc_fork_call"),
};
static const realfn_table_t real_table = { real_fns, sizeof real_fns / sizeof *real_fns,
                                           &real.done, 0 };

/* A function the program calls that no runtime behind the collector defines: what the loader
 * would have said for an undefined symbol. */
static __attribute__((noreturn)) void missing(const char *name)
{
    static const char a[] = "tally collector: symbol lookup error: undefined symbol: ";
    (void)!write(2, a, sizeof a - 1);
    (void)!write(2, name, strlen(name));
    (void)!write(2, "\n", 1);
    _exit(127);
}

/* (looked up at the collector's start, ompstate_process_start; a call before it looks up inside
 * the collector's guard: dlsym's allocations are not the program's) */
#define REAL(f, name)                                                                            \
    do {                                                                                         \
        if (__builtin_expect(__atomic_load_n(&real.done, __ATOMIC_ACQUIRE) != 2, 0)) {           \
            trace_thr.guard++;                                                                   \
            realfn_ready(&real_table);                                                           \
            trace_thr.guard--;                                                                   \
        }                                                                                        \
        if (!real.f)                                                                             \
            missing(name);                                                                       \
    } while (0)

/* dl_iterate_phdr's callback: is this object an OpenMP runtime (libgomp, libomp)? */
static int omp_runtime_object(struct dl_phdr_info *info, size_t size, void *found)
{
    (void)size;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name ? info->dlpi_name : "";
    if (!strncmp(base, "libgomp.so", 10) || !strncmp(base, "libomp.so", 9) ||
        !strncmp(base, "libomp-", 7) || !strncmp(base, "libiomp5.so", 11))
        *(int *)found = 1;
    return *(int *)found;
}

void ompstate_process_start(void)
{
    /* only a process with an OpenMP runtime loaded looks its entry points up now (some thirty
     * dlsym calls, whose allocations and page faults would otherwise be every process's, counted
     * by a page-fault counter as nobody's); one that loads a runtime later looks them up at its
     * first call (REAL) */
    int found = 0;
    dl_iterate_phdr(omp_runtime_object, &found);
    if (!found)
        return;
    realfn_ready(&real_table);
    /* libgomp or libomp among the program's libraries: an OpenMP program, whose main thread is
     * in Work from the start (the serial part is work too) */
    if (real.parallel || real.kmpc_fork_call)
        ompstate_ready();
}

/* States are ours to set: a profiled process, a runtime without OMPT behind the entry point. */
static int ours(void)
{
    if (__atomic_load_n(&ompstate_ompt_active, __ATOMIC_RELAXED) || real.kmpc_fork_call)
        return 0;
    int saved = errno; /* (a barrier costs no system call: a vfork child, which shares our
                          memory, calls no OpenMP function before its exec or _exit) */
    int ok = __atomic_load_n(&coll_proc.init_state, __ATOMIC_ACQUIRE) == 2 && coll_proc.enabled &&
             ompstate_ready();
    errno = saved;
    return ok;
}

/* ---- parallel regions: the outlined function, wrapped ---------------------------------------- */

typedef struct wrap {
    omp_fn_t fn;
    void *data;
} wrap_t;

/* Runs in every thread of the team (the encountering thread too). */
static void run_wrapped(void *arg)
{
    const wrap_t *w = arg;
    ompstate_work();
    w->fn(w->data);
    ompstate_wait(); /* the region's end barrier, then (a worker) idle until the next region */
}

/* The region has ended in the thread that encountered it: back to its own work. */
static void region_ended(void) { ompstate_work(); }

COLL_EXPORT void GOMP_parallel(omp_fn_t fn, void *data, unsigned n, unsigned flags)
{
    REAL(parallel, "GOMP_parallel");
    if (!ours())
        return real.parallel(fn, data, n, flags);
    wrap_t w = { fn, data }; /* lives until every thread of the team has returned from fn */
    real.parallel(run_wrapped, &w, n, flags);
    region_ended();
}

#define PARALLEL_LOOP(field, sym)                                                                \
    COLL_EXPORT void sym(omp_fn_t fn, void *data, unsigned n, long start, long end, long incr,   \
                         long chunk, unsigned flags)                                             \
    {                                                                                            \
        REAL(field, #sym);                                                                       \
        if (!ours())                                                                             \
            return real.field(fn, data, n, start, end, incr, chunk, flags);                      \
        wrap_t w = { fn, data };                                                                 \
        real.field(run_wrapped, &w, n, start, end, incr, chunk, flags);                          \
        region_ended();                                                                          \
    }
PARALLEL_LOOP(parallel_loop_static, GOMP_parallel_loop_static)
PARALLEL_LOOP(parallel_loop_dynamic, GOMP_parallel_loop_dynamic)
PARALLEL_LOOP(parallel_loop_guided, GOMP_parallel_loop_guided)
PARALLEL_LOOP(parallel_loop_nonmonotonic_dynamic, GOMP_parallel_loop_nonmonotonic_dynamic)
PARALLEL_LOOP(parallel_loop_nonmonotonic_guided, GOMP_parallel_loop_nonmonotonic_guided)

#define PARALLEL_LOOP_RUNTIME(field, sym)                                                        \
    COLL_EXPORT void sym(omp_fn_t fn, void *data, unsigned n, long start, long end, long incr,   \
                         unsigned flags)                                                         \
    {                                                                                            \
        REAL(field, #sym);                                                                       \
        if (!ours())                                                                             \
            return real.field(fn, data, n, start, end, incr, flags);                             \
        wrap_t w = { fn, data };                                                                 \
        real.field(run_wrapped, &w, n, start, end, incr, flags);                                 \
        region_ended();                                                                          \
    }
PARALLEL_LOOP_RUNTIME(parallel_loop_runtime, GOMP_parallel_loop_runtime)
PARALLEL_LOOP_RUNTIME(parallel_loop_nonmonotonic_runtime, GOMP_parallel_loop_nonmonotonic_runtime)
PARALLEL_LOOP_RUNTIME(parallel_loop_maybe_nonmonotonic_runtime,
                      GOMP_parallel_loop_maybe_nonmonotonic_runtime)

COLL_EXPORT void GOMP_parallel_sections(omp_fn_t fn, void *data, unsigned n, unsigned count,
                                        unsigned flags)
{
    REAL(parallel_sections, "GOMP_parallel_sections");
    if (!ours())
        return real.parallel_sections(fn, data, n, count, flags);
    wrap_t w = { fn, data };
    real.parallel_sections(run_wrapped, &w, n, count, flags);
    region_ended();
}

COLL_EXPORT unsigned GOMP_parallel_reductions(omp_fn_t fn, void *data, unsigned n, unsigned flags)
{
    REAL(parallel_reductions, "GOMP_parallel_reductions");
    if (!ours())
        return real.parallel_reductions(fn, data, n, flags);
    wrap_t w = { fn, data };
    unsigned r = real.parallel_reductions(run_wrapped, &w, n, flags);
    region_ended();
    return r;
}

/* The old pair: the encountering thread calls fn itself between start and end, so the wrapper
 * must live until GOMP_parallel_end: a small stack of them per thread (regions nest). A region
 * nested deeper than it runs unwrapped (its threads keep their states). */
#define WRAP_DEPTH 16
static __thread struct {
    wrap_t w[WRAP_DEPTH];
    unsigned depth; /* regions started, wrapped or not */
} old_regions __attribute__((tls_model("initial-exec")));

COLL_EXPORT void GOMP_parallel_start(omp_fn_t fn, void *data, unsigned n)
{
    REAL(parallel_start, "GOMP_parallel_start");
    unsigned depth = old_regions.depth++; /* (every start, so that every end matches one) */
    if (!ours() || depth >= WRAP_DEPTH)
        return real.parallel_start(fn, data, n);
    wrap_t *w = &old_regions.w[depth];
    *w = (wrap_t){ fn, data };
    real.parallel_start(run_wrapped, w, n);
}

COLL_EXPORT void GOMP_parallel_end(void)
{
    REAL(parallel_end, "GOMP_parallel_end");
    if (old_regions.depth)
        old_regions.depth--;
    real.parallel_end();
    if (ours())
        region_ended();
}

/* ---- waits ------------------------------------------------------------------------------------ */

#define WAIT_VOID(field, sym)                                                                    \
    COLL_EXPORT void sym(void)                                                                   \
    {                                                                                            \
        REAL(field, #sym);                                                                       \
        if (!ours())                                                                             \
            return real.field();                                                                 \
        int prev = ompstate_wait();                                                              \
        real.field();                                                                            \
        ompstate_set(prev);                                                                      \
    }
#define WAIT_BOOL(field, sym)                                                                    \
    COLL_EXPORT bool sym(void)                                                                   \
    {                                                                                            \
        REAL(field, #sym);                                                                       \
        if (!ours())                                                                             \
            return real.field();                                                                 \
        int prev = ompstate_wait();                                                              \
        bool r = real.field();                                                                   \
        ompstate_set(prev);                                                                      \
        return r;                                                                                \
    }
#define WAIT_PTR(field, sym, type)                                                               \
    COLL_EXPORT void sym(type p)                                                                 \
    {                                                                                            \
        REAL(field, #sym);                                                                       \
        if (!ours())                                                                             \
            return real.field(p);                                                                \
        int prev = ompstate_wait();                                                              \
        real.field(p);                                                                           \
        ompstate_set(prev);                                                                      \
    }

WAIT_VOID(barrier, GOMP_barrier)
WAIT_BOOL(barrier_cancel, GOMP_barrier_cancel)
WAIT_VOID(loop_end, GOMP_loop_end)
WAIT_BOOL(loop_end_cancel, GOMP_loop_end_cancel)
WAIT_VOID(sections_end, GOMP_sections_end)
WAIT_BOOL(sections_end_cancel, GOMP_sections_end_cancel)
WAIT_VOID(critical_start, GOMP_critical_start)
WAIT_PTR(critical_name_start, GOMP_critical_name_start, void **)
WAIT_VOID(atomic_start, GOMP_atomic_start)
WAIT_VOID(ordered_start, GOMP_ordered_start)
WAIT_VOID(taskwait, GOMP_taskwait)
WAIT_VOID(taskgroup_end, GOMP_taskgroup_end)
WAIT_PTR(set_lock, omp_set_lock, void *)
WAIT_PTR(set_nest_lock, omp_set_nest_lock, void *)
WAIT_PTR(set_lock_f, omp_set_lock_, void *)
WAIT_PTR(set_nest_lock_f, omp_set_nest_lock_, void *)
