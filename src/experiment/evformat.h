/*
 * evformat.h - on-disk constants of the "events" file (docs/FORMAT.md). These never change
 * meaning once released: add new record types, never renumber. Depends on nothing.
 */
#ifndef TALLY_EXPERIMENT_EVFORMAT_H
#define TALLY_EXPERIMENT_EVFORMAT_H

#define EXP_FORMAT_VERSION 1
#define EXP_EV_MAGIC "TALLYEVT"
#define EXP_EV_HEADER_SIZE 4096 /* where chunks begin: a page, so chunks can be mapped */
#define EXP_EV_HEADER_BYTES 64  /* the meaningful part of the header */
#define EXP_CHUNK_MAGIC 0x314b4354u /* "TCK1" little-endian */
#define EXP_CHUNK_HEADER_SIZE 32
#define EXP_CHUNK_SIZE_DEFAULT 65536u

enum exp_rec_type {
    EXP_REC_STACK = 1,
    EXP_REC_CLOCK = 2,
    EXP_REC_LOST = 3,
    /* 4..15 are used by the tracing records; thread states and CPUs: */
    EXP_REC_STATE = 16, /* a thread-state sample of another thread, written by the sampler */
    EXP_REC_CPU = 17,   /* the stream's thread now runs on this CPU */
};

enum exp_stack_flags {
    EXP_STACK_TRUNCATED = 1,   /* cut at the maximum depth */
    EXP_STACK_UNWIND_FAIL = 2, /* the unwinder stopped before the outermost frame */
};

enum exp_clock_state {
    EXP_STATE_USER = 0,
    EXP_STATE_SYSTEM = 1,
    EXP_STATE_WAIT = 2,  /* runnable, waiting for a CPU (schedstat run delay) */
    EXP_STATE_LOCK = 3,  /* blocked on a futex (mutex, condition, semaphore, join) */
    EXP_STATE_IO = 4,    /* blocked in I/O (read, write, poll, ..., or uninterruptible) */
    EXP_STATE_SLEEP = 5, /* any other sleep (nanosleep, wait, pause, ...) */
    EXP_STATE_COUNT = 6,
};

enum exp_lost_reason {
    EXP_LOST_BUSY = 1,    /* the thread's writer was busy (signal arrived inside a write) */
    EXP_LOST_DISK = 2,    /* no disk space for a new chunk */
    EXP_LOST_NOSTACK = 3, /* no stack could be taken */
    EXP_LOST_NREASONS = 4,
};

#endif
