/*
 * sync.c - synchronization wait tracing interposers; see sync.h. Built with frame pointers
 * (FU_REGS). Sections: real functions, recording, mutexes, rwlocks, condition variables,
 * semaphores, joins, barriers and spin locks, calibration.
 */
#define _GNU_SOURCE
#include "sync.h"
#include "realfn.h"
#include "threads.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#define RA() ((uint64_t)__builtin_return_address(0))

/* ---- real functions --------------------------------------------------------------------------- */

static struct {
    int done; /* realfn.h: 2 once looked up */
    int (*mutex_lock)(pthread_mutex_t *);
    int (*mutex_trylock)(pthread_mutex_t *);
    int (*mutex_unlock)(pthread_mutex_t *);
    int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*rdlock)(pthread_rwlock_t *);
    int (*tryrdlock)(pthread_rwlock_t *);
    int (*timedrdlock)(pthread_rwlock_t *, const struct timespec *);
    int (*clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*wrlock)(pthread_rwlock_t *);
    int (*trywrlock)(pthread_rwlock_t *);
    int (*timedwrlock)(pthread_rwlock_t *, const struct timespec *);
    int (*clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
    int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
                          const struct timespec *);
    int (*sem_wait)(sem_t *);
    int (*sem_trywait)(sem_t *);
    int (*sem_timedwait)(sem_t *, const struct timespec *);
    int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
    int (*join)(pthread_t, void **);
    int (*timedjoin)(pthread_t, void **, const struct timespec *);
    int (*clockjoin)(pthread_t, void **, clockid_t, const struct timespec *);
    int (*barrier_wait)(pthread_barrier_t *);
    int (*spin_lock)(pthread_spinlock_t *);
    int (*spin_trylock)(pthread_spinlock_t *);
} real;

static const realfn_t real_fns[] = {
    REALFN(real.mutex_lock, "pthread_mutex_lock"),
    REALFN(real.mutex_trylock, "pthread_mutex_trylock"),
    REALFN(real.mutex_unlock, "pthread_mutex_unlock"),
    REALFN(real.mutex_timedlock, "pthread_mutex_timedlock"),
    REALFN(real.mutex_clocklock, "pthread_mutex_clocklock"),
    REALFN(real.rdlock, "pthread_rwlock_rdlock"),
    REALFN(real.tryrdlock, "pthread_rwlock_tryrdlock"),
    REALFN(real.timedrdlock, "pthread_rwlock_timedrdlock"),
    REALFN(real.clockrdlock, "pthread_rwlock_clockrdlock"),
    REALFN(real.wrlock, "pthread_rwlock_wrlock"),
    REALFN(real.trywrlock, "pthread_rwlock_trywrlock"),
    REALFN(real.timedwrlock, "pthread_rwlock_timedwrlock"),
    REALFN(real.clockwrlock, "pthread_rwlock_clockwrlock"),
    REALFN(real.cond_wait, "pthread_cond_wait"),
    REALFN(real.cond_timedwait, "pthread_cond_timedwait"),
    REALFN(real.cond_clockwait, "pthread_cond_clockwait"),
    REALFN(real.sem_wait, "sem_wait"),
    REALFN(real.sem_trywait, "sem_trywait"),
    REALFN(real.sem_timedwait, "sem_timedwait"),
    REALFN(real.sem_clockwait, "sem_clockwait"),
    REALFN(real.join, "pthread_join"),
    REALFN(real.timedjoin, "pthread_timedjoin_np"),
    REALFN(real.clockjoin, "pthread_clockjoin_np"),
    REALFN(real.barrier_wait, "pthread_barrier_wait"),
    REALFN(real.spin_lock, "pthread_spin_lock"),
    REALFN(real.spin_trylock, "pthread_spin_trylock"),
};
static const realfn_table_t real_table = { real_fns, sizeof real_fns / sizeof *real_fns,
                                           &real.done, 0 };

static inline void resolve(void)
{
    realfn_ready(&real_table);
}

/* ---- recording -------------------------------------------------------------------------------- */

/* Records the wait that began at t0 when it reached the threshold. */
static void waited(trace_thr_t *t, fu_regs_t r, const void *fn, uint64_t t0, const void *obj,
                   uint32_t call)
{
    uint64_t now = trace_now(), w = now - t0;
    if (w >= trace_cfg.sync_threshold)
        trace_sync(t, r, fn, now, w, obj, call);
}

/* Locks: the non-blocking form first (nothing to record when it succeeds), unless every call is
 * recorded. try returns the real call's result; busy is its "would block" value. */
#define LOCK_BODY(obj, try_expr, busy, call_expr, fn, call_id)                                     \
    resolve();                                                                                     \
    trace_thr_t *t = trace_enter_core(TRACE_K_SYNC, trace_sync_on, RA());                                            \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    if (trace_cfg.sync_threshold) {                                                                \
        int tr = try_expr;                                                                         \
        if (tr != (busy)) {                                                                        \
            trace_leave(t, TRACE_K_SYNC);                                                                        \
            return tr;                                                                             \
        }                                                                                          \
    }                                                                                              \
    uint64_t t0 = trace_now();                                                                     \
    int rc = COLL_BLOCKING(call_expr);                                                             \
    waited(t, FU_REGS(), (const void *)fn, t0, obj, call_id);                                      \
    trace_leave(t, TRACE_K_SYNC);                                                                                \
    return rc

/* Calls that always wait: timed around the real call. */
#define WAIT_BODY(obj, call_expr, fn, call_id)                                                     \
    resolve();                                                                                     \
    trace_thr_t *t = trace_enter_core(TRACE_K_SYNC, trace_sync_on, RA());                                            \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    uint64_t t0 = trace_now();                                                                     \
    int rc = COLL_BLOCKING(call_expr);                                                             \
    waited(t, FU_REGS(), (const void *)fn, t0, obj, call_id);                                      \
    trace_leave(t, TRACE_K_SYNC);                                                                                \
    return rc

/* ---- mutexes ---------------------------------------------------------------------------------- */

COLL_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    LOCK_BODY(m, real.mutex_trylock(m), EBUSY, real.mutex_lock(m), pthread_mutex_lock, EXP_SYNC_MUTEX_LOCK);
}

COLL_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
    LOCK_BODY(m, real.mutex_trylock(m), EBUSY, real.mutex_timedlock(m, abs), pthread_mutex_timedlock, EXP_SYNC_MUTEX_TIMEDLOCK);
}

COLL_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c,
                                        const struct timespec *abs)
{
    LOCK_BODY(m, real.mutex_trylock(m), EBUSY, real.mutex_clocklock(m, c, abs), pthread_mutex_clocklock, EXP_SYNC_MUTEX_TIMEDLOCK);
}

/* ---- rwlocks ---------------------------------------------------------------------------------- */

COLL_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    LOCK_BODY(l, real.tryrdlock(l), EBUSY, real.rdlock(l), pthread_rwlock_rdlock, EXP_SYNC_RWLOCK_RDLOCK);
}

COLL_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abs)
{
    LOCK_BODY(l, real.tryrdlock(l), EBUSY, real.timedrdlock(l, abs), pthread_rwlock_timedrdlock, EXP_SYNC_RWLOCK_TIMEDRDLOCK);
}

COLL_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t c,
                                           const struct timespec *abs)
{
    LOCK_BODY(l, real.tryrdlock(l), EBUSY, real.clockrdlock(l, c, abs), pthread_rwlock_clockrdlock, EXP_SYNC_RWLOCK_TIMEDRDLOCK);
}

COLL_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    LOCK_BODY(l, real.trywrlock(l), EBUSY, real.wrlock(l), pthread_rwlock_wrlock, EXP_SYNC_RWLOCK_WRLOCK);
}

COLL_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abs)
{
    LOCK_BODY(l, real.trywrlock(l), EBUSY, real.timedwrlock(l, abs), pthread_rwlock_timedwrlock, EXP_SYNC_RWLOCK_TIMEDWRLOCK);
}

COLL_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t c,
                                           const struct timespec *abs)
{
    LOCK_BODY(l, real.trywrlock(l), EBUSY, real.clockwrlock(l, c, abs), pthread_rwlock_clockwrlock, EXP_SYNC_RWLOCK_TIMEDWRLOCK);
}

/* ---- condition variables ---------------------------------------------------------------------- */

COLL_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    WAIT_BODY(c, real.cond_wait(c, m), pthread_cond_wait, EXP_SYNC_COND_WAIT);
}

COLL_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                       const struct timespec *abs)
{
    WAIT_BODY(c, real.cond_timedwait(c, m, abs), pthread_cond_timedwait, EXP_SYNC_COND_TIMEDWAIT);
}

COLL_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                                       const struct timespec *abs)
{
    WAIT_BODY(c, real.cond_clockwait(c, m, clk, abs), pthread_cond_clockwait, EXP_SYNC_COND_TIMEDWAIT);
}

/* ---- semaphores: sem_trywait fails with errno EAGAIN, which the caller must not see ------------- */

static int sem_try(sem_t *s)
{
    int saved = errno;
    int rc = real.sem_trywait(s);
    int e = errno;
    errno = saved;
    return rc == 0 ? 0 : e == EAGAIN ? EAGAIN : -1;
}

COLL_EXPORT int sem_wait(sem_t *s)
{
    LOCK_BODY(s, sem_try(s) == 0 ? 0 : EAGAIN, EAGAIN, real.sem_wait(s), sem_wait, EXP_SYNC_SEM_WAIT);
}

COLL_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abs)
{
    LOCK_BODY(s, sem_try(s) == 0 ? 0 : EAGAIN, EAGAIN, real.sem_timedwait(s, abs), sem_timedwait, EXP_SYNC_SEM_TIMEDWAIT);
}

COLL_EXPORT int sem_clockwait(sem_t *s, clockid_t c, const struct timespec *abs)
{
    LOCK_BODY(s, sem_try(s) == 0 ? 0 : EAGAIN, EAGAIN, real.sem_clockwait(s, c, abs), sem_clockwait, EXP_SYNC_SEM_TIMEDWAIT);
}

/* ---- joins, barriers, spin locks -------------------------------------------------------------- */

COLL_EXPORT int pthread_join(pthread_t th, void **ret)
{
    WAIT_BODY((const void *)th, real.join(th, ret), pthread_join, EXP_SYNC_JOIN);
}

COLL_EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abs)
{
    WAIT_BODY((const void *)th, real.timedjoin(th, ret, abs), pthread_timedjoin_np, EXP_SYNC_JOIN);
}

COLL_EXPORT int pthread_clockjoin_np(pthread_t th, void **ret, clockid_t c,
                                     const struct timespec *abs)
{
    WAIT_BODY((const void *)th, real.clockjoin(th, ret, c, abs), pthread_clockjoin_np, EXP_SYNC_JOIN);
}

COLL_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    WAIT_BODY(b, real.barrier_wait(b), pthread_barrier_wait, EXP_SYNC_BARRIER_WAIT);
}

COLL_EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
    LOCK_BODY((const void *)l, real.spin_trylock(l), EBUSY, real.spin_lock(l), pthread_spin_lock, EXP_SYNC_SPIN_LOCK);
}

/* ---- calibration ------------------------------------------------------------------------------ */

uint64_t sync_calibrate(void)
{
    resolve();
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    uint64_t sum = 0;
    enum { WARM = 200, N = 2000 };
    for (int i = 0; i < WARM + N; i++) {
        uint64_t t0 = trace_now();
        real.mutex_lock(&m);
        uint64_t w = trace_now() - t0;
        real.mutex_unlock(&m);
        if (i >= WARM)
            sum += w;
    }
    uint64_t mean = (sum + N / 2) / N;
    return mean ? mean : 1;
}
