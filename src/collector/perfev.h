/*
 * perfev.h - the collector's one door to perf_event_open: opening an event for a thread, its ring,
 * routing its overflow signal to that thread, re-arming it, reading the records of its ring,
 * closing it, and dropping a parent's events in a fork child.
 *
 * Every sampling source that uses the kernel's performance events goes through here (clock.c's
 * task-clock today; hardware counters tomorrow, several events per thread, with whatever
 * sample_type they need: the ring reader hands out whole records and leaves their body to the
 * source).
 *
 * An event of a thread (perfev_open_thread):
 *  - is opened for the calling thread on any CPU, close-on-exec, its descriptor moved to the
 *    collector's high numbers (coll_high_fd, with the program's RLIMIT_NOFILE raised meanwhile);
 *  - gets a ring of 1 + data_pages pages (data_pages a power of two) when data_pages > 0;
 *  - signals its overflows to that thread only: O_ASYNC, F_SETSIG = the given signal (so the
 *    siginfo carries si_fd and POLL_IN/POLL_HUP), F_SETOWN_EX F_OWNER_TID;
 *  - is recorded in a process-wide table (16384 events), so that a fork child can drop every
 *    event of its parent's threads (perfev_after_fork_child) without disabling them for the
 *    parent. An event opened while the table is full works, but a fork child keeps its
 *    descriptor and ring mapped (the event goes on counting for the parent's thread only).
 * It starts disabled; perfev_arm enables it for n more overflows (PERF_EVENT_IOC_REFRESH).
 *
 * Contexts: perfev_probe, perfev_open_thread and perfev_after_fork_child run in normal context;
 * perfev_arm, perfev_close and the ring reader are async-signal-safe (system calls and plain
 * memory only). The ring reader (perfev_ring_begin/next/end) is inline for the profiling
 * handler; perfev_ring_next is pure and is tested on crafted ring contents (tests/unit).
 *
 * Depends on: collector.h (descriptor placement), <linux/perf_event.h>.
 */
#ifndef TALLY_COLLECTOR_PERFEV_H
#define TALLY_COLLECTOR_PERFEV_H

#include <linux/perf_event.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* An open event: fd < 0 when none. ring is NULL without a ring. */
typedef struct perfev {
    int fd;
    struct perf_event_mmap_page *ring;
    size_t ring_len;  /* bytes mapped: the control page and the data pages */
    int entry;        /* its row in the process's table, -1: none */
} perfev_t;

#define PERFEV_NONE { -1, NULL, 0, -1 }

/* Opens attr for the calling thread and closes it again: can this process use it? 0 or -errno.
 * Normal context. */
int perfev_probe(const struct perf_event_attr *attr);

/* Opens attr for thread tid (the calling thread) as described above into *ev. 0 or -errno (then
 * *ev holds no event). Normal context. */
int perfev_open_thread(perfev_t *ev, const struct perf_event_attr *attr, unsigned data_pages,
                       pid_t tid, int sig);

/* Opens attr counting on one CPU for every process (pid -1: a not-program-related counter),
 * without a ring or a signal, enabled at once; recorded in the table like a thread's event, so
 * that a fork child drops it. 0 or -errno. Normal context. */
int perfev_open_cpu(perfev_t *ev, const struct perf_event_attr *attr, int cpu);

/* Enables the event for n more overflows (after the n-th it disables itself). AS-safe. */
/* Opens attr counting for the calling thread in the group of leader (-1: it leads a group of
 * its own), enabled at once, without a ring or a signal; recorded in the table like a sampling
 * event (a fork child drops it). For counts read with read(2) (profiled blocks). 0 or -errno.
 * Normal context. */
int perfev_open_count(perfev_t *ev, const struct perf_event_attr *attr, int leader);

void perfev_arm(const perfev_t *ev, int n);

/* Disables, unmaps and closes (a descriptor the program took over is left to it). AS-safe. */
void perfev_close(perfev_t *ev);

/* In a fork child: unmaps and closes every event the parent's threads had, without disabling
 * them (the parent keeps counting). The calling thread's perfev_t must be forgotten by its
 * owner. Normal context (the child has one thread). */
void perfev_after_fork_child(void);

/* Is this delivery of the routed signal an overflow of ev? AS-safe. */
static inline int perfev_is_signal_of(const perfev_t *ev, const siginfo_t *si)
{
    return ev->fd >= 0 && (si->si_code == POLL_IN || si->si_code == POLL_HUP) && si->si_fd == ev->fd;
}

/* Could this delivery come from any perf event (one closed since, one of another thread)? */
static inline int perfev_looks_like_signal(const siginfo_t *si)
{
    return si->si_code == POLL_IN || si->si_code == POLL_HUP;
}

/* ---- reading a ring -------------------------------------------------------------------------- */

/* Bytes of a record copied out of the ring (its header included); a longer record is skipped
 * whole but only its first PERFEV_REC_MAX bytes are copied. */
#define PERFEV_REC_MAX 256

/* One record as read from the ring. */
typedef struct perfev_rec {
    struct perf_event_header h; /* type, misc, size (of the whole record, header included) */
    uint8_t b[PERFEV_REC_MAX];  /* the record from its start (header included), up to h.size */
} perfev_rec_t;

/* A position in a ring's data area: records from tail up to head. */
typedef struct perfev_cursor {
    const uint8_t *data; /* the data area (size bytes, a power of two) */
    uint64_t size;
    uint64_t tail, head; /* free-running offsets, as the kernel counts them */
    int bad;             /* a malformed record stopped the reading */
} perfev_cursor_t;

/* The next record at c->tail into *r (advancing c->tail): 1, or 0 at the end of the data (or at a
 * malformed record: size below a header's or past head, which sets c->bad). Pure. */
static inline int perfev_ring_next(perfev_cursor_t *c, perfev_rec_t *r)
{
    if (c->bad || c->tail + sizeof(struct perf_event_header) > c->head)
        return 0;
    uint64_t mask = c->size - 1;
    for (size_t i = 0; i < sizeof r->h; i++)
        r->b[i] = c->data[(c->tail + i) & mask];
    memcpy(&r->h, r->b, sizeof r->h);
    if (r->h.size < sizeof r->h || c->tail + r->h.size > c->head) {
        c->bad = 1;
        return 0;
    }
    size_t n = r->h.size < PERFEV_REC_MAX ? r->h.size : PERFEV_REC_MAX;
    for (size_t i = sizeof r->h; i < n; i++)
        r->b[i] = c->data[(c->tail + i) & mask];
    c->tail += r->h.size;
    return 1;
}

/* The u64 at byte offset off of a record (0 if the record is shorter). Pure. */
static inline uint64_t perfev_rec_u64(const perfev_rec_t *r, size_t off)
{
    uint64_t v = 0;
    if (off + 8 <= r->h.size && off + 8 <= PERFEV_REC_MAX)
        memcpy(&v, r->b + off, 8);
    return v;
}

/* The samples lost by the kernel that a PERF_RECORD_LOST record reports (after the header: id,
 * lost). */
static inline uint64_t perfev_rec_lost(const perfev_rec_t *r)
{
    return perfev_rec_u64(r, sizeof(struct perf_event_header) + 8);
}

/* Starts reading ev's ring: the records the kernel has published. AS-safe. */
static inline void perfev_ring_begin(const perfev_t *ev, size_t page_size, perfev_cursor_t *c)
{
    struct perf_event_mmap_page *mp = ev->ring;
    c->data = (const uint8_t *)mp + page_size;
    c->size = ev->ring_len - page_size;
    c->head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
    c->tail = mp->data_tail;
    c->bad = 0;
}

/* Gives the space read back to the kernel: everything up to the head seen at the beginning (a
 * malformed record's rest included). AS-safe. */
static inline void perfev_ring_end(const perfev_t *ev, const perfev_cursor_t *c)
{
    __atomic_store_n(&ev->ring->data_tail, c->head, __ATOMIC_RELEASE);
}

#endif
