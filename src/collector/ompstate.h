/*
 * ompstate.h - OpenMP Work and Wait: the runtime states of an OpenMP program's threads, set by
 * the two ways the collector follows an OpenMP runtime.
 *
 * Metrics (declared in the log the first time a process shows OpenMP activity, through the
 * collector API like any library's): `ompwork` (OpenMP Work: the thread is doing work, serial or
 * parallel) and `ompwait` (OpenMP Wait: the thread waits inside the runtime for a barrier, a
 * lock, a critical section, an ordered section, a task, or for work while idle between parallel
 * regions, spinning or asleep). Two record kinds are the states (tally_collector_api.h,
 * set_state): `omp_work` (metrics ompwork,ompwait: its blocked time is a wait) and `omp_wait`
 * (ompwait). Clock samples and thread states carry the state, so Work + Wait is the thread's time
 * from its first OpenMP state on.
 *
 * Two sources of states, never both in one process:
 *  - ompt.c: an OMPT tool (ompt_start_tool, exported by the collector) for runtimes that have
 *    OMPT, LLVM's libomp (which also runs GCC-built programs): exact transitions from the
 *    runtime's callbacks (implicit tasks, sync-region waits, mutex waits, thread begin/end).
 *  - omp.c: interposers of GCC's libgomp entry points (GOMP_*, omp_set_lock), which has no
 *    OMPT: the outlined function of each parallel region is wrapped (work inside it, wait after
 *    it: the region's end barrier, then idle), barriers, critical sections, ordered sections,
 *    task waits, worksharing ends and locks wait. They pass straight through when the runtime
 *    behind them has OMPT (libomp's GOMP_ compatibility entry points).
 *
 * All functions are AS-safe once ompstate_ready() returned 1; ompstate_ready itself declares
 * (normal context, the first time).
 */
#ifndef TALLY_COLLECTOR_OMPSTATE_H
#define TALLY_COLLECTOR_OMPSTATE_H

#include "collector.h"

enum { OMPSTATE_NONE = -1 };

/* Declares the metrics and kinds once per image (normal context); 1 when states can be set, 0
 * when this process is not profiled or the declarations failed (then nothing is recorded). */
int ompstate_ready(void) COLL_HIDDEN;

/* When the collector has started in a process (normal context, inside the collector's guard):
 * looks up the runtime's entry points; an OpenMP program (libgomp or libomp loaded) declares at
 * once and puts the calling thread (main) in Work. */
void ompstate_process_start(void) COLL_HIDDEN;

/* Sets the calling thread's state; returns the previous one (a kind id, or OMPSTATE_NONE). Only
 * after ompstate_ready() returned 1. */
int ompstate_work(void) COLL_HIDDEN;
int ompstate_wait(void) COLL_HIDDEN;
int ompstate_set(int kind) COLL_HIDDEN;

/* 1 once an OMPT runtime initialized our tool: the GOMP_ interposers then pass through. */
extern int ompstate_ompt_active COLL_HIDDEN;

#endif
