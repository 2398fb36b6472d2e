/*
 * reader.h - reads an experiment directory (docs/FORMAT.md): the log of the root process and of
 * every descendant, and their event streams. The one reader used by print, view, export and check.
 *
 * exp_open parses every log into an exp_experiment_t (owned by the caller, freed by exp_close).
 * exp_scan streams every event of every process to a callback, process after process, each
 * process's events in time order (the threads' streams merged by time, ties in stream order, so
 * that a block freed by another thread than the one that allocated it is seen freed after it
 * was allocated), interning call stacks into an exp_stacks_t so that equal stacks of one
 * process get one global id. Nothing is kept per event: a scan of 10 million events needs memory
 * only for the distinct stacks.
 *
 * Errors: functions return 0 or a negative TALLY_E* code with a message in *err naming the file
 * and the offset; running out of memory is TALLY_ENOMEM, never an abort. Damage that can be
 * survived (a truncated last line, a chunk cut short by a crash, unknown record types) is not an
 * error: it is counted in exp_scan_stats_t (events) or listed in the process's `damage` (log,
 * directory tree), each with a code and a file offset, and the rest is read. Not thread-safe per
 * object; separate objects are independent.
 *
 * Hostile input: experiments may come from someone else, so every size, count and id read from
 * a file is bounded by what that file can hold, only regular files are read (a FIFO, a device or
 * a symbolic link in place of `log` or `events` is an error naming it), descendant directories
 * are never reached through symbolic links and the walk is iterative and bounded (depth
 * EXP_MAX_DEPTH, each directory once), and nothing recurses over data.
 *
 * Depends on: src/base, evformat.h, logfile.h (decoding).
 */
#ifndef TALLY_EXPERIMENT_READER_H
#define TALLY_EXPERIMENT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "../base/err.h"
#include "evformat.h"
#include "settings.h"

#define EXP_T_NEVER UINT64_MAX
#define EXP_MAX_DEPTH 256            /* deepest descendant experiment read (_f1.tally/_f1.tally/...) */
#define EXP_LOG_LINE_MAX (32u << 20) /* longest log line read: a cmdline of 10 MiB of arguments */

/* Damage found while reading the log or the tree of an experiment (not events: see
 * exp_scan_stats_t). Each is also described in the process's warnings. */
typedef struct exp_damage {
    int code;        /* TALLY_ECORRUPT (bad data), TALLY_EIO (unreadable), TALLY_ENOTEXP */
    const char *file; /* "log", "events", or the descendant's directory name (static strings or
                         strings owned by the process) */
    uint64_t offset;  /* byte offset in that file, UINT64_MAX when not about a position */
} exp_damage_t;

typedef struct exp_field {
    char *key, *val; /* val percent-decoded */
} exp_field_t;

/* One log line, kept as read: every record, so views such as -header can show everything. The
 * strings of records and of the structures below point into the process's copy of its log
 * (exp_process_t.text) or to a static empty string: they live as long as the process. */
typedef struct exp_record {
    char *kind;
    exp_field_t *fields;
    uint32_t nfields;
    uint32_t line; /* 1-based line number in the log */
} exp_record_t;

const char *exp_record_get(const exp_record_t *r, const char *key); /* NULL if absent */
uint64_t exp_record_u64(const exp_record_t *r, const char *key, uint64_t dflt); /* dec or 0x */

typedef struct exp_object {
    uint32_t id;
    char *path, *buildid; /* buildid: lower-case hex, "" if unknown */
    uint64_t bias, lo, hi;
    uint64_t tls_below; /* its static TLS block starts this far below each thread's thread
                           pointer (x86-64); 0: no TLS, or not static */
    uint64_t t_load, t_unload; /* t_unload = EXP_T_NEVER while loaded */
    uint32_t gen_lo, gen_hi; /* the mapping generations it is in force in: [gen_lo, gen_hi),
                                gen_hi UINT32_MAX when no later object displaced it */
} exp_object_t;

typedef struct exp_thread {
    uint32_t tid;
    char *name, *how;
    uint64_t t_start, t_end; /* t_end = EXP_T_NEVER when no thread-end was recorded */
    uint64_t stack_lo, stack_hi; /* its stack (0, 0: not recorded) */
    uint64_t cpu, user, system, samples; /* from thread-end; 0 when absent */
} exp_thread_t;

typedef struct exp_sample {
    uint32_t id;
    uint64_t t;
    char *reason, *label;
    uint64_t utime, stime, minflt, majflt, inblock, oublock, nvcsw, nivcsw, maxrss;
    uint64_t rss, rchar, wchar; /* KiB resident; bytes read and written by system calls */
} exp_sample_t;

/* A metric declared by the log (a `metric` record): values of it come in TRACE records of a
 * declared kind. Names are 1 to 63 characters of [a-z0-9_-] starting with a letter; the only
 * aggregation this reader knows is `sum` (a declaration of another is refused with a warning). */
typedef struct exp_metric {
    char *name, *title, *unit;
    int time;    /* 1: values are ns of time (shown as seconds) */
    uint64_t hz; /* not 0: values are CPU cycles at this frequency (shown as seconds) */
} exp_metric_t;

/* A counter of counter overflow profiling (a `counter` record): COUNTER records of this id carry
 * values of metric (an index into exp_process_t.metrics); the `counter-stats` record at the
 * image's end says what was sampled and counted. */
typedef struct exp_counter {
    uint32_t id; /* 0 .. EXP_CTR_MAX-1, unique in the log */
    char *name;  /* as the user gave it */
    uint32_t metric;
    uint64_t interval;
    int data; /* a `+` counter: its records carry the memory-reference part */
    int has_stats;
    uint64_t samples, events, counted, enabled, running, throttled, lost, dropped;
} exp_counter_t;

/* A record kind declared by the log (a `kind` record): a TRACE record of this id carries one
 * value for each of metric[0..nmetrics) (indices into exp_process_t.metrics), in this order. */
typedef struct exp_kind {
    uint32_t id;
    char *name;
    uint32_t nmetrics;
    uint32_t metric[EXP_KIND_MAXVALUES];
    /* attributes: values after the metrics' that are not metrics (the `kind` record's attrs) */
    uint32_t nattrs;
    char *attrs; /* their names, comma-separated ("" when none) */
} exp_kind_t;

/* The index in a TRACE record's values of attribute name of kind k (nmetrics + its position),
 * or -1 when the kind has no such attribute. */
int exp_kind_attr(const exp_kind_t *k, const char *name);

typedef struct exp_pause {
    uint64_t t;
    int paused; /* 1: collection paused at t, 0: resumed */
} exp_pause_t;

typedef struct exp_process {
    char *dir;  /* directory of this process's experiment */
    char *name; /* relative to the root: "" for the root, "_f1.tally", "_f1.tally/_x1.tally" */
    uint32_t index; /* position in exp_experiment_t.procs */
    int32_t parent; /* index of the parent process, -1 for the root */
    exp_record_t *records;
    size_t nrecords;
    /* from start / cmdline / settings */
    uint32_t pid, ppid, ncpus;
    char *host, *kernel, *arch, *exe, *cwd;
    char **argv; /* one allocation with the strings */
    uint32_t argc;
    /* t_start: the start record's time; without one (a program the collector could not enter),
     * the earliest time of the other records or of the event chunks; 0 when nothing says.
     * t_end: the last time of any record. Durations exist only when t_start != 0. Of repeated
     * start and settings records the first is used (a warning says so); of end records the
     * last (the collector and tally collect may both write one). */
    int has_start;
    uint64_t t_start, real_start, t_end;
    exp_settings_t settings; /* the `settings` record (settings.def; defaults when absent) */
    int has_settings;
    uint64_t clock_ns; /* 0 when clock profiling was off (settings.clock_ns) */
    char *clock_source;
    /* tracing (settings): sync_on with its threshold (ns; calibrated: 6 x sync_calibration) */
    int sync_on, sync_calibrated, heap_on, io_on;
    uint64_t sync_ns, sync_calibration;
    exp_thread_t *threads;
    size_t nthreads;
    exp_object_t *objects; /* in log order; path absolute when a relative one was recorded
                              with a working directory (see exp_open) */
    size_t nobjects;
    uint64_t *gen_t; /* mapping generations: gen_t[g] is the time generation g starts */
    uint32_t ngens;  /* at least 1; more only when a load reused the addresses of an earlier one */
    exp_sample_t *samples; /* in time order */
    size_t nsamples;
    exp_pause_t *pauses;
    size_t npauses;
    exp_metric_t *metrics; /* declared metrics, in log order, names unique */
    size_t nmetrics;
    exp_kind_t *kinds; /* declared record kinds, in log order, ids unique */
    size_t nkinds;
    exp_counter_t *counters; /* counters of counter overflow profiling, in log order */
    size_t ncounters;
    /* how the process ended: has_end = 0 when no end record was written */
    int has_end;
    char *end_how, *end_signame;
    int end_status, end_signal;
    /* collector statistics: has_stats = 0 when the process died before writing them */
    int has_stats;
    uint64_t st_samples, st_expected, st_unwind_failures, st_dropped_busy, st_dropped_disk,
        st_truncated_stacks;
    uint64_t st_unwind_no_room;   /* clock samples that kept only their PC (no stack room) */
    uint64_t st_ring_lost;        /* clock samples the kernel could not queue (ring full) */
    uint64_t st_dropped_heap, st_dropped_io, st_dropped_sync; /* traced records not written */
    uint64_t st_dropped_traced;   /* traced records not written, of no known kind (older logs) */
    uint64_t st_dropped_api;      /* records of libraries (collector API: MPI calls) not written */
    int st_disk_full;             /* the events file ran out of disk space */
    int st_has_sampler_cpu;       /* the stats record says what the collector's sampler used */
    uint64_t st_sampler_cpu;      /* ns of CPU of the collector's sampler thread(s) */
    /* MPI (-M on): the `mpi` record of a rank's first image: mpi_rank1 = rank + 1 (0: none;
     * descendants of a rank have none of their own, see exp_mpi_rank_of), mpi_size (0: not
     * said); is_job: the `job` record of a directory that holds the ranks of one job (made by
     * `mpirun tally collect`: no process of its own) */
    uint64_t mpi_rank1, mpi_size;
    int is_job;
    char *mpi_launcher, *mpi_job; /* of the mpi or job record; NULL when absent */
    char **warnings; /* warning records and problems found while reading */
    size_t nwarnings;
    exp_damage_t *damage; /* problems found while reading (also in warnings) */
    size_t ndamage;
    char *text;          /* the log's contents, which the strings above point into */
    exp_field_t *fields; /* the fields of all records, back to back */
    char **notes; /* the problems of the records themselves (a refused build-id) that a front
                     end should tell the user: pointers into warnings */
    size_t nnotes;
    char **owned; /* strings made while reading (resolved paths), freed with the process */
    size_t nowned;
} exp_process_t;

typedef struct exp_experiment {
    char *path;
    exp_process_t **procs; /* procs[0] is the root */
    size_t nprocs;
} exp_experiment_t;

/* Opens the experiment at path and every descendant. Load records are checked as they are read:
 * a build-id that is not 2 to 128 hex digits (an even number) is refused with a warning and a
 * note (the object has none: a build-id names files in the archive); a relative path is resolved
 * against the working directory recorded with it (the load record's cwd, else the start
 * record's), for reading only. */
int exp_open(const char *path, exp_experiment_t **out, tally_err_t *err);
void exp_close(exp_experiment_t *e);
/* The MPI rank process proc of e belongs to (its own, or its nearest ancestor's): rank + 1, or 0
 * when it is not part of a rank. */
uint64_t exp_mpi_rank_of(const exp_experiment_t *e, uint32_t proc);
/* The object of process p that contained pc at time t, or NULL. */
const exp_object_t *exp_object_at(const exp_process_t *p, uint64_t pc, uint64_t t);

/* Mapping generations. A process whose code addresses were reused (a library unloaded with
 * dlclose and another loaded at its addresses) has one generation per such load, numbered from
 * 0 in time order; within a generation an address belongs to at most one object. exp_scan
 * interns the stacks of different generations as different stacks (exp_stacks_gen), so that
 * everything keyed by (process, generation, pc) is right for every event. */
uint32_t exp_generation_at(const exp_process_t *p, uint64_t t);
/* The object of process p in force in generation gen that contains pc; else the object covering
 * pc in the nearest generation (a guess); NULL when no object covers pc. */
const exp_object_t *exp_object_in(const exp_process_t *p, uint64_t pc, uint32_t gen);

/* ---- events -------------------------------------------------------------------------------- */

typedef struct exp_stacks exp_stacks_t; /* interned stacks; ids dense from 0 */

exp_stacks_t *exp_stacks_new(void);
void exp_stacks_free(exp_stacks_t *s);
size_t exp_stacks_count(const exp_stacks_t *s);
/* Frames (leaf first) of stack id; *n frames, *flags (EXP_STACK_*), *proc (process index). */
const uint64_t *exp_stacks_get(const exp_stacks_t *s, uint32_t id, uint32_t *n, uint32_t *flags,
                               uint32_t *proc);
/* The mapping generation of stack id (0 in most processes). */
uint32_t exp_stacks_gen(const exp_stacks_t *s, uint32_t id);
/* Interns a stack directly (used by tests and generators); returns its id or -1 on no memory.
 * pcs must not point into s. exp_stacks_intern interns in generation 0. */
int64_t exp_stacks_intern(exp_stacks_t *s, uint32_t proc, const uint64_t *pcs, uint32_t n,
                          uint32_t flags);
int64_t exp_stacks_intern_gen(exp_stacks_t *s, uint32_t proc, uint32_t gen, const uint64_t *pcs,
                              uint32_t n, uint32_t flags);

#define EXP_NO_STACK UINT32_MAX /* exp_event_t.stack of an event without a stack */

typedef struct exp_event {
    uint32_t type; /* EXP_REC_CLOCK, _LOST, _SYNC, _HEAP_ALLOC, _HEAP_FREE, _IO, _TRACE, _MEMREF,
                      _COUNTER */
    uint32_t proc; /* process index */
    uint32_t stream; /* the stream it was read from (its chunks' stream number) */
    uint32_t tid;
    uint64_t t;
    uint32_t stack;  /* global stack id (CLOCK, SYNC, HEAP_ALLOC, IO, TRACE), else EXP_NO_STACK */
    uint32_t state;  /* EXP_STATE_* (CLOCK; STATE records are delivered as CLOCK events) */
    uint32_t rstate; /* CLOCK: the runtime state (EXP_RSTATE_NONE, or 1 + a declared kind's id) */
    uint32_t cpu;    /* the CPU the thread last ran on (from CPU records), UINT32_MAX unknown */
    uint64_t weight; /* ns: CPU time (CLOCK), wait (SYNC), duration (IO) */
    uint64_t count;  /* LOST */
    uint32_t reason; /* LOST */
    uint32_t call;   /* EXP_SYNC_*, EXP_HEAP_*, EXP_IO_*; TRACE: the declared kind's id; BLOCK:
                        the block's id (a `block` record of the process's log) */
    uint32_t bexit;  /* BLOCK: 1 when the block was exited, 0 when it was entered */
    uint64_t addr;   /* the synchronization object (SYNC), the block (HEAP_*) */
    uint64_t size;   /* bytes: allocated (HEAP_ALLOC), unmapped (HEAP_FREE by munmap, else 0),
                        transferred (IO) */
    int64_t fd;      /* IO: the descriptor, -1 if none */
    uint32_t err;    /* IO: errno of a failed call, 0 if it succeeded */
    const char *name; /* IO: the file's name if the record carries one (namelen bytes, not
                         NUL-terminated, valid during the callback only), else NULL */
    uint32_t namelen;
    /* TRACE: the values of the kind's metrics (valid during the callback only); a record may
     * carry fewer than the kind declares (the others are 0), never more */
    uint32_t nvalues;
    const uint64_t *values;
    /* MEMREF: the memory reference (valid during the callback only); stack and weight are the
     * sample's, call is its source (0: clock, n: the n-th counter) */
    const exp_memref_t *mref;
    /* COUNTER: call is the counter's id, values[0] the events the sample stands for; a `+`
     * counter's memory reference (evformat.h): dflags (EXP_CTR_*, 0: none), pc, addr (the data
     * address, 0 when not known) and, with EXP_CTR_REGS, regs[EXP_CTR_NREGS] (valid during the
     * callback only) */
    uint32_t dflags;
    uint64_t pc;
    const uint64_t *regs;
} exp_event_t;

typedef struct exp_scan_stats {
    uint64_t chunks, unused_chunks, bad_chunks, records, unknown_records, bad_records, seq_gaps;
    uint64_t events, lost[EXP_LOST_NREASONS]; /* lost: saturated at UINT64_MAX */
    /* The first damage seen: its process index and offset in that process's events file
     * (UINT64_MAX when there was none), and what it was. */
    uint32_t bad_proc;
    uint64_t bad_offset;
    const char *bad_what;
} exp_scan_stats_t;

/* Calls cb for every event; cb returns 0 to go on, anything else stops the scan (returned). */
typedef int (*exp_event_cb)(void *ctx, const exp_event_t *ev);
int exp_scan(const exp_experiment_t *e, exp_stacks_t *stacks, exp_event_cb cb, void *ctx,
             exp_scan_stats_t *st, tally_err_t *err);

/* The scan in parallel, for a consumer that sums: nworkers threads (this one included) decode
 * whole streams of every process at once, without the merge, so the callback sees each
 * stream's events in order but the streams interleaved, and is called from several threads at
 * once with the worker's index (0 to nworkers - 1). An event's stack is then the worker's
 * provisional id; at the end, remap[w] (malloc'd, nworkers entries given by the caller, freed by
 * the caller) maps worker w's ids to ids of `stacks`, interned in the order exp_scan would have
 * interned them, so the ids, the stacks and the statistics are exp_scan's. Within a process the
 * serial scan's order of two events is (t, stream, order in the stream): a consumer that needs
 * the first of something can find it from the events.
 * Returns 0; EXP_SCAN_NEED_ORDER when only exp_scan gives the right answer (damage, whose first
 * place is the merge's to say; time going back within a stream; several mapping generations; or
 * the callback returned EXP_SCAN_NEED_ORDER): nothing was added to stacks, the caller discards
 * what the callback summed and calls exp_scan; another non-zero value the callback returned; or
 * a negative error. */
#define EXP_SCAN_NEED_ORDER 0x4f524452
typedef int (*exp_pscan_cb)(void *ctx, unsigned worker, const exp_event_t *ev);
int exp_scan_parallel(const exp_experiment_t *e, exp_stacks_t *stacks, unsigned nworkers,
                      exp_pscan_cb cb, void *ctx, uint32_t **remap, exp_scan_stats_t *st,
                      tally_err_t *err);

/* Counts the clock samples (CLOCK records; not thread states) of every process into
 * counts[e->nprocs] by a scan: what a process that died before writing its statistics record
 * (SIGKILL) recorded. 0 or an error as exp_scan. */
int exp_count_samples(const exp_experiment_t *e, uint64_t *counts, tally_err_t *err);

#endif
