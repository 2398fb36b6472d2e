/*
 * blocks.h - profiled blocks in the collector (spec 004): the entry points of include/tally.h
 * (tally_start/tally_stop, tally_monitor, tally_block_enable/disable), the hooks of programs
 * built with -finstrument-functions (__cyg_profile_func_enter/exit), selective profiling
 * (`--blocks=FILE`, experiment/blocksel.h), and the log records of blocks.
 *
 * Each thread keeps its own statistics (blockstat.h) in its TLS; nothing is shared on the hot
 * path but the read-only table of which blocks are active. Blocks are named once per process in
 * a registry (a spinlock, taken only the first time a thread meets a block) and logged as
 * `block` records; a monitor point logs the thread's `callstack`; a thread's end (and the end of
 * the image, for threads still running) logs its `block-profile` and `block-paths`. With the
 * timeline (`block_trace`), each entry and exit is also a BLOCK record of the thread's trace
 * stream (trace_block), at the time its statistics used.
 * docs/FORMAT.md describes the records.
 *
 * Threads: the entry points may be called from any thread. A thread's state is touched by that
 * thread only, inside its `busy` flag, and by the end of the image, which first stops every
 * thread's recording (membarrier, then waits for busy flags to clear, at most a few ms each).
 * Not async-signal-safe: an entry point called from a signal handler that interrupted the same
 * thread's recording is ignored (busy), otherwise it records normally.
 */
#ifndef TALLY_COLLECTOR_BLOCKS_H
#define TALLY_COLLECTOR_BLOCKS_H

#include "collector.h"

/* Reads the settings (blocks, block_metrics) and the selective file; normal context, once per
 * image. A file that cannot be read or parsed turns blocks off with a warning. */
void blocks_settings(coll_proc_t *p) COLL_HIDDEN;
/* Logs every block already named (a fork child's log) . */
void blocks_log_all(void) COLL_HIDDEN;
/* The calling thread ends: its profile is logged and its memory freed. */
void blocks_thread_exit(void) COLL_HIDDEN;
/* The image ends: stops recording, logs the profile of every thread. AS-safe. */
void blocks_end_image(void) COLL_HIDDEN;
/* A fork child: the forking thread keeps its stack (each open block one call from now), the
 * other threads are forgotten. */
void blocks_after_fork_child(void) COLL_HIDDEN;
/* A fork child, once tracing has started again: with the timeline of blocks (block_trace), the
 * forking thread's open instances start now, each written as entered now. */
void blocks_after_fork_trace(void) COLL_HIDDEN;

#endif
