/*
 * blockctr.h - counters as quantities of profiled blocks (`--block-metrics=page-faults,...`):
 * each thread that enters a block opens one group of counting events (perf_event, no sampling,
 * no signal) for itself, and every entry and exit reads the whole group with one read(2).
 *
 * The counters come in the `block_counters` setting, which `tally collect` writes after checking
 * that each one opens: `type:config:config1:config2` per counter, separated by ';', in the order
 * of the counter quantities of `block_metrics`.
 *
 * Contexts: bctr_decode and bctr_open run in normal context (the first block a thread meets);
 * bctr_read is async-signal-safe (one system call) and may read another thread's group (the end
 * of the image). Depends on perfev.h.
 */
#ifndef TALLY_COLLECTOR_BLOCKCTR_H
#define TALLY_COLLECTOR_BLOCKCTR_H

#include <stdint.h>

#include "collector.h"
#include "perfev.h"

#define BCTR_MAX 4

/* A thread's group: ev[0] leads. n 0: not open (or no counters). */
typedef struct bctr_thread {
    perfev_t ev[BCTR_MAX];
    unsigned n;
} bctr_thread_t;

/* Parses the setting into the process's counters; the number of counters, or -1 (malformed). */
int bctr_decode(const char *setting) COLL_HIDDEN;
/* Opens the process's counters for the calling thread into t; 0 or -errno (then t has none). */
int bctr_open(bctr_thread_t *t) COLL_HIDDEN;
/* The group's counts into v[0..n) (0 when t has none or the read fails). AS-safe. */
void bctr_read(const bctr_thread_t *t, uint64_t *v) COLL_HIDDEN;
/* Closes t's events (a fork child's inherited ones were dropped already: t is only forgotten). */
void bctr_close(bctr_thread_t *t, int forget) COLL_HIDDEN;

#endif
