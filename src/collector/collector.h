/*
 * collector.h - the process context of libtally-collector.so and the log records it writes.
 *
 * The collector is preloaded into the target (LD_PRELOAD) by `tally collect`. Its interface with
 * the driver is one environment variable, TALLY_SETTINGS (experiment/settings.h and the table
 * settings.def: the experiment directory, the root's pid and start, every setting), decoded once
 * at process initialization into coll_proc.set. The collector never changes the program's
 * environment (environ, its strings): a new image gets its TALLY_SETTINGS (this process's
 * directory and pid as its parent) in a new environment array built by the interposed exec and
 * spawn calls for that call only, and a fork child keeps its state in the collector's memory.
 * An image started by libc without the interposers (system(), popen()) inherits the variable
 * its parent image started with.
 *
 * Modules: collector.c (process lifecycle, log records, descendants); the async-signal-safe
 * core: threads.c (the profiled threads: lifecycle, per-thread context, registry), signals.c
 * (the profiling and fatal-signal handlers, the program's view of the signals the collector
 * owns), source.h/source.c (the sampling-source interface and what sources share), clock.c
 * (clock profiling, the first source) and perfev.c (perf_event_open: events of a thread, their
 * ring and signal routing); unwind.c (libunwind behind one hook), maps.c (load objects),
 * interpose.c (the exported interposers; realfn.c finds the real functions behind every
 * interposer), sampler.c (the sampler thread: periodic sample
 * packets and thread states; the -l/-y signals; the collector API), trace.c (the tracing core:
 * settings, per-thread trace streams, records) with its interposers sync.c, heap.c and
 * iotrace.c, fastunwind.c (their stacks), api.c (the versioned collector API for separate
 * libraries, include/tally_collector_api.h: declarations, TRACE records, runtime states), and
 * omp.c, ompt.c (OpenMP Work and Wait: libgomp's entry points, an OMPT tool; ompstate.h).
 *
 * There is exactly one coll_proc_t, `coll_proc`: signal handlers and interposers have no other way
 * to reach the collector's state. Its settings are written once during initialization (or in a
 * fork child, which has one thread) and only read afterwards; the counters are updated with
 * atomics. Functions below marked AS-safe may be called from signal handlers.
 */
#ifndef TALLY_COLLECTOR_COLLECTOR_H
#define TALLY_COLLECTOR_COLLECTOR_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/monotime.h"
#include "experiment/evwriter.h"
#include "experiment/logfile.h"
#include "experiment/settings.h"

#define COLL_HIDDEN __attribute__((visibility("hidden")))
#define COLL_EXPORT __attribute__((visibility("default")))

enum coll_source { COLL_SRC_NONE = 0, COLL_SRC_PERF = 1, COLL_SRC_TIMER = 2 };

typedef struct coll_stats {
    uint64_t samples, unwind_failures, dropped_busy, dropped_disk, truncated_stacks, stacks;
    uint64_t profiled_ns; /* thread CPU time covered by profiling (inside the duration window) */
    uint64_t ring_lost;   /* samples the kernel could not put in a thread's ring */
    uint64_t unwind_no_room; /* samples not unwound: too little stack left (the PC only) */
} coll_stats_t;

typedef struct coll_proc {
    /* state: 0 not initialized, 1 initializing, 2 ready (enabled or not) */
    int init_state;
    int enabled;          /* 0: run the program unprofiled, touch nothing */
    pid_t pid;            /* the process this context describes (a vfork/_Fork child differs) */
    /* settings: as decoded from TALLY_SETTINGS (re-exported to new images, logged), and the
     * values in use derived from them */
    exp_settings_t set;
    int strip_env;        /* not profiled here: new images get the environment without tally */
    int is_descendant;    /* this image writes a descendant experiment (_x<n>.tally) */
    uint64_t interval_ns; /* 0: clock profiling off */
    int follow;
    uint64_t root_t0;          /* CLOCK_MONOTONIC start of the root process */
    uint64_t win_lo, win_hi;   /* absolute window of recording; win_hi = UINT64_MAX: no end */
    int has_window;
    uint32_t max_depth;
    int sig;                   /* profiling signal */
    int source;                /* enum coll_source */
    int split_by_rusage;       /* user/system from RUSAGE_THREAD deltas, not from the sample */
    int force_timer;
    char dir[PATH_MAX];        /* this process's experiment directory */
    char self_path[PATH_MAX];  /* path of libtally-collector.so */
    char mpi_path[PATH_MAX];   /* -M on: libtally-mpi.so beside it, which new images preload too */
    uint64_t mpi_rank1;        /* -M on: this image's MPI rank + 1 (launcher's environment), 0: none */
    /* files */
    int log_fd;
    int ev_ok;
    exp_evfile_t evfile;
    uint64_t t_start;
    uint32_t sample_id;        /* next id of a `sample` record */
    /* sample packets and thread states (sampler.c) */
    uint64_t sample_ns;        /* periodic sample packets, 0 = off (default 1 s) */
    uint64_t state_ns;         /* thread-state sampling period, 0 = off */
    int sample_sig, pause_sig; /* -l and -y signals, 0 = none */
    int paused;                /* atomic: collection paused (-y, tally_collector_pause) */
    uint64_t own_rchar;        /* atomic: bytes the collector itself read (/proc), not the program's */
    /* counters (atomic) */
    coll_stats_t st;
    /* ending */
    int final;                 /* atomic: set once the end of the image was logged */
} coll_proc_t;

extern coll_proc_t coll_proc COLL_HIDDEN;

/* Initializes the process once (constructor, or lazily from an interposer that runs earlier).
 * Safe to call from any thread at any time outside signal handlers; returns coll_proc.enabled. */
int coll_ensure_init(void) COLL_HIDDEN;

/* Logs the end of this image: thread-ends, stats, warnings, sample end, end. how is "exit"
 * (status), "signal" (sig) or "exec". Only the first call per image writes (an exec that fails
 * re-arms it with coll_unfinalize). AS-safe. */
void coll_finalize(const char *how, int status, int sig) COLL_HIDDEN;
void coll_unfinalize(void) COLL_HIDDEN;
/* exit() or a return from main: rescans the load objects and finalizes with status. */
void coll_exiting(int status) COLL_HIDDEN;

/* The fork child half (pthread_atfork child handler): a new experiment _f<n>.tally, or stop. */
void coll_after_fork_child(void) COLL_HIDDEN;

/* Writes a `sample` packet (reason: start, end, periodic, signal, api; label may be NULL). AS-safe. */
void coll_log_sample(coll_proc_t *p, const char *reason, const char *label) COLL_HIDDEN;

/* Appends a finished log line to this image's log; AS-safe. */
void coll_log_write(exp_line_t *l) COLL_HIDDEN;
/* Writes `warning what=<text>`; AS-safe. */
void coll_warn(const char *what) COLL_HIDDEN;

/* CLOCK_MONOTONIC now, in ns; AS-safe. */
static inline uint64_t coll_now(void)
{
    return mono_ns();
}
/* Moves fd to a high number (close-on-exec), out of the range the program uses: from 900 up, or,
 * when RLIMIT_NOFILE is lower, the highest free number below it. Passes a negative fd through. */
int coll_high_fd(int fd) COLL_HIDDEN;
/* Around the collector's open + coll_high_fd in normal context: raises the program's soft
 * RLIMIT_NOFILE to the hard limit meanwhile (when it is below the collector's numbers), so that
 * the collector never takes a number the program could get. Not for signal handlers. */
void coll_fd_room_enter(void) COLL_HIDDEN;
void coll_fd_room_leave(void) COLL_HIDDEN;
/* Is fd one of the collector's (from coll_high_fd)? Closing it: coll_close. Before the program's
 * dup2/dup3 onto fd: coll_fd_evacuate moves the log and events descriptors away. */
int coll_fd_owned(int fd) COLL_HIDDEN;
int coll_close(int fd) COLL_HIDDEN;
void coll_fd_evacuate(int fd) COLL_HIDDEN;

#endif
