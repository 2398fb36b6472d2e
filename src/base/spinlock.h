/*
 * spinlock.h - a lock of one int (0: free) for short sections where a mutex cannot be used: code
 * that runs before libc's threads are known, inside interposers of the locking functions, or in
 * a fork child where another thread may have held it (the child sets it to 0).
 *
 * The waiter spins with the CPU's pause hint and, after a few dozen tries, yields the CPU (the
 * holder may be descheduled, or making system calls). Not reentrant; not for signal handlers (a
 * handler that interrupts the holder would wait for ever). Header-only, depends on libc only.
 */
#ifndef TALLY_BASE_SPINLOCK_H
#define TALLY_BASE_SPINLOCK_H

#include <sched.h>

static inline void spin_lock(int *l)
{
    unsigned tries = 0;
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++tries < 64)
                __builtin_ia32_pause();
            else
                sched_yield();
        }
}

static inline void spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
