/*
 * realfn.h - the real functions behind the collector's interposers: one way to find them.
 *
 * Each interposing module (interpose.c, sync.c, heap.c, iotrace.c) keeps its real functions in a
 * struct of pointers and describes it once with a table of {where the pointer goes, its symbol};
 * realfn_resolve looks every symbol up with dlsym(RTLD_NEXT) and then marks the table done
 * (*state = 2, with release). The fast path of an interposer is realfn_ready (one acquire load).
 *
 * Two kinds of table:
 *  - shared (exclusive = 0): every caller that finds the table not done looks it all up itself
 *    (the stores are idempotent), so no caller ever waits or goes without: a lookup nested in
 *    another (dlsym calling an interposed function) or racing with one on another thread (which
 *    may hold the loader's lock) both complete.
 *  - exclusive (exclusive = 1, the allocator's): one caller looks up (*state = 1 meanwhile);
 *    any other, the looking-up thread's own nested calls included (dlsym allocates), gets -1 and
 *    must do without the real functions (the allocator serves them from its bootstrap arena).
 *
 * Normal context (dlsym); realfn_ready is AS-safe. errno is preserved.
 */
#ifndef TALLY_COLLECTOR_REALFN_H
#define TALLY_COLLECTOR_REALFN_H

#include <stddef.h>

/* One real function: the address of its pointer, its symbol. */
typedef struct realfn {
    void *slot;
    const char *name;
} realfn_t;

/* REALFN(s.field, "symbol"): an entry for the pointer s.field. */
#define REALFN(ptr, sym) { (void *)&(ptr), sym }

typedef struct realfn_table {
    const realfn_t *fns;
    size_t n;
    int *state;    /* 0 not looked up, 1 being looked up (exclusive), 2 done; atomic */
    int exclusive;
} realfn_table_t;

/* 0 when the table is done (looked up now, or before); -1 only for an exclusive table whose
 * lookup is under way elsewhere or in a caller of this call. */
int realfn_resolve(const realfn_table_t *t) __attribute__((visibility("hidden")));

static inline int realfn_ready(const realfn_table_t *t)
{
    return __builtin_expect(__atomic_load_n(t->state, __ATOMIC_ACQUIRE) == 2, 1) ? 0
                                                                                : realfn_resolve(t);
}

#endif
