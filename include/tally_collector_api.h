/*
 * tally_collector_api.h - the collector API, version 1: the door through which a shared library
 * of its own (an MPI wrapper library, an instrumentation runtime) records traced calls in the
 * experiment of the program `tally collect` profiles, without reaching the collector's internals.
 *
 * Finding it. libtally-collector.so exports one function, tally_collector_api_v1(), which returns
 * a pointer to a constant table of functions (or NULL when this process is not profiled). A
 * library finds it at run time, so that it also runs, unchanged, where tally is not loaded:
 *
 *     typedef const tally_collector_api_v1_t *(*get_fn)(void);
 *     get_fn get = (get_fn)dlsym(RTLD_DEFAULT, TALLY_COLLECTOR_API_V1_SYMBOL);
 *     const tally_collector_api_v1_t *api = get ? get() : NULL;
 *
 * Look it up when the first call is traced, not in a constructor (the collector may start after
 * the library's constructors). The table never changes and lives as long as the process.
 * Versioning: a later version adds fields at the end of the table and says so in `size`; a field
 * is there when its offset is below `size`. An incompatible change would be a new function,
 * tally_collector_api_v2(), beside this one.
 *
 * Declaring. What a library records is declared first, in the log of the experiment (docs/
 * FORMAT.md, `metric` and `kind` records): metrics (name, title, unit, whether values are ns of
 * time) and record kinds (a name and the metrics each record of the kind carries, in order). The
 * analyzer shows declared metrics in every view beside its own, with exclusive, inclusive and
 * attributed values. Declarations are per process: the collector writes them again in the
 * experiment of every fork child; a new program image (exec) declares again.
 *
 * Recording a call:
 *
 *     if (api && api->enter()) {                 // not inside the collector or another record
 *         uint64_t t0 = api->now();
 *         ... the real call ...
 *         uint64_t pcs[128], v[2] = { api->now() - t0, bytes };
 *         uint32_t n = api->stack_caller((const void *)MPI_Send, pcs, 128);
 *         api->emit(kind, api->now(), pcs, n, v, 2, 0);
 *         api->leave();
 *     }
 *
 * Reentrancy: enter() returns 1 when the calling thread may record (it takes the thread's guard
 * of the API: a nested enter() says 0, and nothing the collector does while recording is
 * recorded; calls the library makes between enter and leave that tally traces, such as
 * malloc under -H on, are traced as any call of the program is), 0 when it must pass straight
 * through (inside the collector, inside another enter, before the collector started or after
 * the image ended). Call leave() once after every enter() that returned 1, before returning
 * to the program.
 * Runtime states (set_state, below) say what a thread inside a runtime is doing (working,
 * waiting) so that clock profiling splits its time: declare a kind whose metrics are the state's
 * time metrics, set the state on entering and leaving.
 * Errors are negative errno values; nothing here changes errno, prints, or exits.
 * Thread safety: every function may be called from any thread. Async-signal-safety: enter,
 * leave, now, stack_context and emit with TALLY_EMIT_SIGNAL are as safe in a signal handler as
 * the collector's own profiling handler (libunwind's local unwinder); declare_* are not.
 */
#ifndef TALLY_COLLECTOR_API_H
#define TALLY_COLLECTOR_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TALLY_COLLECTOR_API_V1_SYMBOL "tally_collector_api_v1"
#define TALLY_COLLECTOR_API_VERSION 1

#define TALLY_API_MAX_VALUES 16   /* metrics of one record kind, values of one record */
#define TALLY_API_MAX_KINDS 256   /* record kinds one process may declare */
#define TALLY_API_MAX_METRICS 256 /* metrics one process may declare */

enum tally_emit_flags {
    TALLY_EMIT_SIGNAL = 1, /* called from a signal handler: a thread that has not recorded
                              anything yet (outside a handler) cannot start here (-EAGAIN) */
};

typedef struct tally_collector_api_v1 {
    uint32_t version; /* TALLY_COLLECTOR_API_VERSION */
    uint32_t size;    /* the size of this table in the collector that answered */

    /* The reentrancy guard (above). */
    int (*enter)(void);
    void (*leave)(void);

    /* The time of records: CLOCK_MONOTONIC nanoseconds. */
    uint64_t (*now)(void);

    /* Declares a metric: name (1 to 63 of a-z, 0-9, _, -, starting with a letter; the name of one
     * of tally's own metrics, e.g. "sync", adds the values to that metric), title (what views call it; NULL: the name), unit (NULL:
     * "count"; ignored when time), time (1: values are ns, shown as seconds); title and unit
     * are printable text (no control characters), cut at 127 and 31 bytes. Declaring the
     * same metric again is 0; the same name with other properties is -EEXIST. -EINVAL: a bad
     * name, title or unit; -ENOSPC: too many metrics. Call outside signal handlers. */
    int (*declare_metric)(const char *name, const char *title, const char *unit, int time);

    /* Declares a record kind: name (as a metric's) and the names of its n metrics (declared
     * before; 1 to TALLY_API_MAX_VALUES). Returns its id (>= 0), the same id for the same
     * declaration made again; -EEXIST for the name with other metrics, -EINVAL, -ENOENT (a
     * metric not declared), -ENOSPC. Call outside signal handlers. */
    int (*declare_kind)(const char *name, const char *const *metrics, uint32_t n);

    /* The stack of the calling function's caller: fn (the library's entry point, the leaf,
     * which names the call: e.g. the address of its MPI_Send) then the return addresses of the
     * code that called the function that calls stack_caller, outermost last. The function that
     * calls this must keep a frame pointer (-fno-omit-frame-pointer). Writes at most max
     * frames into pcs; returns their number (0: no stack could be taken). */
    uint32_t (*stack_caller)(const void *fn, uint64_t *pcs, uint32_t max);

    /* The stack at a signal: the interrupted instruction, then its callers, from the ucontext_t
     * a SA_SIGINFO handler was given. At most max (and at most 256) frames; returns their
     * number. */
    uint32_t (*stack_context)(const void *ucontext, uint64_t *pcs, uint32_t max);

    /* Writes a record of kind (from declare_kind) at time t (now()) with the stack pcs[0..n)
     * (leaf first) and nvalues values, one per metric of the kind in the declared order (fewer
     * leave the others 0). Must be called between enter() and leave(). Returns 0, -EINVAL (an
     * undeclared kind, too many values), -EAGAIN (not recording now: paused, outside the -t
     * window, see TALLY_EMIT_SIGNAL) or -EIO (the record could not be written; counted). */
    int (*emit)(int kind, uint64_t t, const uint64_t *pcs, uint32_t n, const uint64_t *values,
                uint32_t nvalues, uint32_t flags);

    /* ---- added later: present when size > offsetof(tally_collector_api_v1_t, set_state) ---- */

    /* Runtime states for clock profiling (OpenMP Work and Wait, MPI Work and Wait). Sets the
     * calling thread's runtime state to kind, a kind declared with one or two time metrics
     * (declare_kind), or to none (-1), and returns the previous state (-1: none). From then on
     * the thread's clock samples and thread states carry the state, and the analyzer adds
     * their time to the kind's first metric while the thread runs or waits for a CPU, and to
     * its second (its first when it has one) while the thread is blocked (a lock, I/O, a
     * sleep: blocked time inside a runtime is waiting). One word per thread, so a runtime
     * entered inside another saves the previous state and gives it back on leaving. A bad kind
     * is -EINVAL and changes nothing. Needs no enter(); any thread, any time, AS-safe; costs a
     * store. */
    int (*set_state)(int kind);

    /* ---- added later: present when size > offsetof(tally_collector_api_v1_t,
     * declare_kind_attrs) ---- */

    /* Declares a record kind as declare_kind does, whose records carry after the values of its
     * n metrics the values of nattrs attributes: numbers that are not metrics (a peer, a tag, a
     * time), which no view sums and analyses read by name. Attribute names as a metric's,
     * distinct from each other; n may be 0 when nattrs is not; n + nattrs at most
     * TALLY_API_MAX_VALUES. emit takes up to n + nattrs values (the metrics' first). Returns as
     * declare_kind (-EEXIST: the name declared with other metrics or attributes). */
    int (*declare_kind_attrs)(const char *name, const char *const *metrics, uint32_t n,
                              const char *const *attrs, uint32_t nattrs);
} tally_collector_api_v1_t;

/* Exported by libtally-collector.so; NULL when this process is not being profiled. */
const tally_collector_api_v1_t *tally_collector_api_v1(void);

/* Also exported (find it with dlsym like the table): writes a `note` record into this process's
 * log: name and n (at most TALLY_API_MAX_VALUES) pairs of a key and a number, for what is not a
 * metric of a stack (e.g. the MPI wrappers' messages and bytes to each peer rank). Names and
 * keys as a metric's; "t" and "name" are the record's own. 0, -EINVAL, -EAGAIN (not profiled).
 * Call outside signal handlers. */
#define TALLY_COLLECTOR_NOTE_V1_SYMBOL "tally_collector_note_v1"
int tally_collector_note_v1(const char *name, const char *const *keys, const uint64_t *values,
                            uint32_t n);

#ifdef __cplusplus
}
#endif

#endif
