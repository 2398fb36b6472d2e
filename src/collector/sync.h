/*
 * sync.h - synchronization wait tracing: the interposers of the blocking pthread and semaphore
 * calls.
 *
 * Exported: pthread_mutex_lock, pthread_mutex_timedlock, pthread_mutex_clocklock,
 * pthread_rwlock_{rd,wr}lock, pthread_rwlock_timed{rd,wr}lock, pthread_rwlock_clock{rd,wr}lock,
 * pthread_cond_wait, pthread_cond_timedwait, pthread_cond_clockwait, sem_wait, sem_timedwait,
 * sem_clockwait, pthread_join, pthread_timedjoin_np, pthread_clockjoin_np, pthread_barrier_wait,
 * pthread_spin_lock.
 *
 * A call is timed around the real one and recorded (SYNC, trace.h) when its wait reaches the
 * threshold (trace_cfg.sync_threshold). Locks and semaphores first try the non-blocking form
 * (trylock, sem_trywait): when it succeeds the call did not wait, and nothing is timed or
 * recorded, so an uncontended lock costs one indirect call more than the real one. With the
 * threshold 0 (`-s all`) every call is timed and recorded, uncontended ones too. The object of
 * a record is the lock, condition variable, semaphore or barrier; for a join, the thread.
 *
 * sync_calibrate (trace.h) measures the mean time of an uncontended pthread_mutex_lock as the
 * interposer would time it (the clock reads included): the spec's calibrated threshold is 6 times
 * that mean. Depends on trace.h. Normal context; errno and the return value are the real call's.
 */
#ifndef TALLY_COLLECTOR_SYNC_H
#define TALLY_COLLECTOR_SYNC_H

#include "trace.h"

#endif
