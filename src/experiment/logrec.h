/*
 * logrec.h - the names in the experiment's text log (docs/FORMAT.md): its magic, the kinds of its
 * records and the keys of their fields. The one place the writers (the collector, the driver's
 * `end` and `warning`) and the reader take them from, as evformat.h is for the binary events.
 *
 * These strings are the format: once released, a name never changes meaning and is never reused
 * for something else; a new record or key is added here and in docs/FORMAT.md. The keys of the
 * `settings` record that come from the settings table are in settings.def; the values written
 * (how a process ended, why a sample was taken) are described in docs/FORMAT.md.
 *
 * Header-only (string literals, usable in async-signal-safe code). Depends on nothing.
 * tests/unit/test_logrec.c writes a log with every record and key below and checks that the
 * reader gives back every value.
 */
#ifndef TALLY_EXPERIMENT_LOGREC_H
#define TALLY_EXPERIMENT_LOGREC_H

/* The first line: the magic, then "version=N" (the version written). */
#define EXP_LOG_MAGIC "tally-experiment"
#define EXP_LOG_FIRST_LINE EXP_LOG_MAGIC " version=1"

/* ---- record kinds ------------------------------------------------------------------------- */

#define EXP_LOG_START "start"           /* the process began (first record) */
#define EXP_LOG_CMDLINE "cmdline"       /* its arguments */
#define EXP_LOG_ENV "env"               /* one environment variable of interest */
#define EXP_LOG_SETTINGS "settings"     /* what is collected (settings.def, and the keys below) */
#define EXP_LOG_THREAD "thread"         /* a thread started */
#define EXP_LOG_THREAD_END "thread-end" /* a thread ended (or was still alive at the end) */
#define EXP_LOG_LOAD "load"             /* a load object was mapped */
#define EXP_LOG_UNLOAD "unload"         /* ... and unmapped */
#define EXP_LOG_SAMPLE "sample"         /* a sample packet */
#define EXP_LOG_PAUSE "pause"           /* collection paused (-y, tally_pause) */
#define EXP_LOG_RESUME "resume"         /* ... and resumed */
#define EXP_LOG_DESCENDANT "descendant" /* a descendant's experiment was created */
#define EXP_LOG_METRIC "metric"         /* a metric declared at run time */
#define EXP_LOG_KIND "kind"             /* a record kind declared at run time, with its metrics */
#define EXP_LOG_WARNING "warning"       /* something the user should know */
#define EXP_LOG_STATS "stats"           /* the collector's counts at the end */
#define EXP_LOG_END "end"               /* the process ended (last record) */

/* ---- keys --------------------------------------------------------------------------------- */

/* shared by several records */
#define EXP_KEY_T "t"       /* CLOCK_MONOTONIC ns of the event */
#define EXP_KEY_TID "tid"   /* thread, process: tid */
#define EXP_KEY_PID "pid"   /* start, descendant */
#define EXP_KEY_ID "id"     /* load, unload, sample, kind */
#define EXP_KEY_NAME "name" /* thread, metric, kind, end (the signal's name) */
#define EXP_KEY_HOW "how"   /* thread (how it was created), end (how the process ended) */
#define EXP_KEY_STACK_LO "stack_lo" /* thread: its stack's lowest address (above the guard) */
#define EXP_KEY_STACK_HI "stack_hi" /* thread: its stack's highest address + 1 */
#define EXP_KEY_PATH "path" /* load */
#define EXP_KEY_BY "by"     /* pause, resume, warning: who */

/* start */
#define EXP_KEY_REAL "real" /* CLOCK_REALTIME ns at t */
#define EXP_KEY_PPID "ppid"
#define EXP_KEY_HOST "host"
#define EXP_KEY_KERNEL "kernel"
#define EXP_KEY_ARCH "arch"
#define EXP_KEY_NCPUS "ncpus"
#define EXP_KEY_EXE "exe"
#define EXP_KEY_CWD "cwd"

/* cmdline, env */
#define EXP_KEY_ARGV "argv"
#define EXP_KEY_VALUE "value"

/* settings (beyond settings.def) */
#define EXP_KEY_CLOCK_SOURCE "clock_source"
#define EXP_KEY_STATE_SPLIT "state_split"
#define EXP_KEY_SYNC_CALIBRATED "sync_calibrated"
#define EXP_KEY_SYNC_CALIBRATION "sync_calibration"

/* thread-end */
#define EXP_KEY_CPU "cpu"
#define EXP_KEY_USER "user"
#define EXP_KEY_SYSTEM "system"
#define EXP_KEY_SAMPLES "samples" /* also stats */
#define EXP_KEY_ALIVE "alive"

/* load */
#define EXP_KEY_BUILDID "buildid"
#define EXP_KEY_BIAS "bias"
#define EXP_KEY_LO "lo"
#define EXP_KEY_HI "hi"
#define EXP_KEY_TLS "tls" /* load: how far below the thread pointer the static TLS block starts */

/* sample */
#define EXP_KEY_REASON "reason"
#define EXP_KEY_LABEL "label"
#define EXP_KEY_UTIME "utime"
#define EXP_KEY_STIME "stime"
#define EXP_KEY_MINFLT "minflt"
#define EXP_KEY_MAJFLT "majflt"
#define EXP_KEY_INBLOCK "inblock"
#define EXP_KEY_OUBLOCK "oublock"
#define EXP_KEY_NVCSW "nvcsw"
#define EXP_KEY_NIVCSW "nivcsw"
#define EXP_KEY_MAXRSS "maxrss"
#define EXP_KEY_RSS "rss"
#define EXP_KEY_RCHAR "rchar"
#define EXP_KEY_WCHAR "wchar"

/* descendant */
#define EXP_KEY_KIND "kind"
#define EXP_KEY_DIR "dir"

/* metric, kind */
#define EXP_KEY_TITLE "title"
#define EXP_KEY_UNIT "unit"
#define EXP_KEY_AGGREGATE "aggregate"
#define EXP_KEY_TIME "time"
#define EXP_KEY_METRICS "metrics"
#define EXP_KEY_ATTRS "attrs"

/* warning */
#define EXP_KEY_WHAT "what"

/* stats */
#define EXP_KEY_EXPECTED "expected"
#define EXP_KEY_UNWIND_FAILURES "unwind_failures"
#define EXP_KEY_DROPPED_BUSY "dropped_busy"
#define EXP_KEY_DROPPED_DISK "dropped_disk"
#define EXP_KEY_TRUNCATED_STACKS "truncated_stacks"
#define EXP_KEY_STACKS "stacks"
#define EXP_KEY_PROFILED_NS "profiled_ns"
#define EXP_KEY_RING_LOST "ring_lost"
#define EXP_KEY_UNWIND_NO_ROOM "unwind_no_room"
#define EXP_KEY_DISK_FULL "disk_full"
#define EXP_KEY_SAMPLER_CPU "sampler_cpu" /* stats: ns of CPU of the collector's sampler */
#define EXP_KEY_STATES_LOOKS "states_looks"         /* stats: looks at the thread states */
#define EXP_KEY_STATES_UNWINDS "states_unwinds"     /* stats: blocked stacks unwound */
#define EXP_KEY_STATES_REUSED "states_reused"       /* stats: blocked stacks kept, checked */
#define EXP_KEY_STATES_STRETCHED "states_stretched" /* stats: looks delayed by their cost */
#define EXP_KEY_STATES_PERIOD_MAX "states_period_max" /* stats: the longest period then, ns */
#define EXP_KEY_TRACE_DROPPED "trace_dropped"
#define EXP_KEY_TRACE_DROPPED_HEAP "trace_dropped_heap"
#define EXP_KEY_TRACE_DROPPED_IO "trace_dropped_io"
#define EXP_KEY_TRACE_DROPPED_SYNC "trace_dropped_sync"
#define EXP_KEY_TRACE_DROPPED_API "trace_dropped_api"
#define EXP_KEY_TRACE_DROPPED_BLOCKS "trace_dropped_blocks"
#define EXP_KEY_TRACE_TRUNCATED_STACKS "trace_truncated_stacks"
#define EXP_KEY_TRACE_UNWIND_FAILURES "trace_unwind_failures"
#define EXP_KEY_TRACE_WALKS "trace_walks"

/* end */
#define EXP_KEY_STATUS "status"
#define EXP_KEY_SIGNAL "signal"

/* ---- records of the capabilities added later --------------------------------------------- */

/* the driver */
#define EXP_LOG_COMMENT "comment" /* -C: a comment, key text */
#define EXP_KEY_TEXT "text"
#define EXP_LOG_JOB "job" /* an MPI job's root experiment: launcher, job, size (below) */

/* MPI: a rank's process (rank, size, launcher, job); its wrapper library's notes */
#define EXP_LOG_MPI "mpi"
#define EXP_KEY_RANK "rank"
#define EXP_KEY_SIZE "size"
#define EXP_KEY_LAUNCHER "launcher"
#define EXP_KEY_JOB "job"
#define EXP_LOG_NOTE "note" /* the collector API's note: t, name, then the plug-in's own keys */
#define EXP_NOTE_MPI_PEER "mpi_peer" /* the MPI wrappers' note per peer: to, msgs, bytes */
#define EXP_NOTE_MPI_COMM "mpi_comm" /* the MPI wrappers' note per communicator a rank is in: id, size, rank */
#define EXP_KEY_TO "to"
#define EXP_KEY_MSGS "msgs"
#define EXP_KEY_BYTES "bytes"

/* counters: each counter (counter), its counts at the end (counter-stats); its metric is a
 * `metric` record with hz */
#define EXP_LOG_COUNTER "counter"
#define EXP_LOG_COUNTER_STATS "counter-stats"
#define EXP_KEY_HZ "hz"
#define EXP_KEY_METRIC "metric"
#define EXP_KEY_TYPE "type"
#define EXP_KEY_CONFIG "config"
#define EXP_KEY_CONFIG1 "config1"
#define EXP_KEY_CONFIG2 "config2"
#define EXP_KEY_BP_ADDR "bp_addr"
#define EXP_KEY_BP_LEN "bp_len"
#define EXP_KEY_BP_TYPE "bp_type"
#define EXP_KEY_INTERVAL "interval"
#define EXP_KEY_DATA "data"
#define EXP_KEY_PRECISE "precise" /* COUNTER: the precise_ip its samples were taken with */
#define EXP_KEY_SAMPLED "sampled" /* COUNTER: how its data addresses are had (counters.c) */
#define EXP_KEY_KERNEL "kernel"
#define EXP_KEY_PROGRAM "program"
#define EXP_KEY_EVENTS "events"
#define EXP_KEY_COUNTED "counted"
#define EXP_KEY_ENABLED "enabled"
#define EXP_KEY_RUNNING "running"
#define EXP_KEY_THROTTLED "throttled"
#define EXP_KEY_LOST "lost" /* also block-thread */
#define EXP_KEY_DROPPED "dropped"
#define EXP_KEY_COLLECTOR "collector"

/* profiled blocks: each block (block), monitor points (callstack), each thread's profile and
 * call paths at its end (block-profile, block-paths: rows in parts), its counts (block-thread) */
#define EXP_LOG_BLOCK "block"
#define EXP_LOG_CALLSTACK "callstack"
#define EXP_LOG_BLOCK_PROFILE "block-profile"
#define EXP_LOG_BLOCK_PATHS "block-paths"
#define EXP_LOG_BLOCK_THREAD "block-thread"
#define EXP_KEY_GROUP "group"
#define EXP_KEY_ADDR "addr"
#define EXP_KEY_ACTIVE "active"
#define EXP_KEY_N "n"
#define EXP_KEY_AT_CPU "at_cpu"
#define EXP_KEY_ROWS "rows"
#define EXP_KEY_PART "part"
#define EXP_KEY_FIRST "first"
#define EXP_KEY_UNMATCHED "unmatched"

#endif
