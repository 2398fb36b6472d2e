/*
 * evwriter.h - writes the binary "events" file of an experiment (docs/FORMAT.md).
 *
 * One exp_evfile_t per process; one exp_stream_t per thread. A stream claims fixed-size chunks
 * of the file, reserves their disk space by writing zeros and writes records into a shared file
 * mapping, so what was written survives a crash or SIGKILL of the process. Chunks are claimed,
 * reserved and mapped in windows of consecutive chunks (one chunk at first, twice as many each
 * time up to EXP_WINDOW_BYTES): the system calls and the page cache's work per byte are then
 * those of large writes; a window's chunks not started when the stream ends stay zero (unused). Call stacks are
 * deduplicated per stream: exp_stream_stack returns a small id and writes the frames only the first
 * time it sees them.
 *
 * Async-signal-safety: every exp_stream_* function is async-signal-safe (system calls only: mmap,
 * munmap, mremap, madvise, pwritev; no malloc, no locks, no stdio). A stream belongs to one
 * thread; when a signal handler interrupts a write of the same stream, the nested call returns
 * -1 and the loss is counted (lost[EXP_LOST_BUSY]) and later written as a LOST record.
 * exp_evfile_create/close are for normal context only. The file's chunk counter is atomic, so
 * any number of streams may share one file.
 *
 * Depends on: src/base (leb128). Errors: functions return 0, or -1 when the record was not
 * written (and counted as lost).
 */
#ifndef TALLY_EXPERIMENT_EVWRITER_H
#define TALLY_EXPERIMENT_EVWRITER_H

#include <stddef.h>
#include <stdint.h>

#include "evformat.h"

/* The most a stream reserves and maps at once (or one chunk, if larger). */
#define EXP_WINDOW_BYTES (1u << 20)

typedef struct exp_evfile {
    int fd;
    uint32_t chunk_size;
    uint32_t next_chunk;  /* atomic: index of the next chunk to claim */
    uint32_t next_stream; /* atomic: number of the next stream */
    int disk_full;       /* atomic: set once a chunk could not be reserved */
} exp_evfile_t;

struct exp_stack_slot;

typedef struct exp_stream {
    exp_evfile_t *file;
    uint32_t tid;
    uint32_t stream; /* unique within the file (tids can be reused by later threads) */
    uint32_t seq;    /* seq of the current chunk */
    uint8_t *chunk; /* current chunk mapping, or NULL */
    uint8_t *win;   /* the window: consecutive chunks reserved and mapped at once, chunk is one
                     * of them; NULL: none */
    uint32_t win_len, win_next; /* chunks in the window; the next one to start */
    uint32_t win_grow;          /* chunks in the next window (doubling up to EXP_WINDOW_BYTES) */
    uint32_t pos;   /* offset of the next record in the chunk */
    uint32_t fast_end; /* the heap records' fast path (evfast.h) writes while pos <= fast_end:
                        * chunk_size - EXP_FAST_MAX with a chunk and no LOST record pending,
                        * else 0 */
    uint32_t pack;     /* the chunk's open HEAP_PACK record (the offset of its type byte), to
                        * which packed heap records are added while nothing else is written
                        * after it; 0: none */
    uint64_t last_t;
    uint64_t last_addr; /* of the chunk's previous heap record (their addresses are deltas) */
    /* stack dedup (open addressing, power-of-two size) and the frames it refers to */
    struct exp_stack_slot *slots;
    uint32_t nslots, nstacks;
    uint64_t *frames;
    size_t frames_cap, frames_used; /* in frames */
    uint8_t *scratch;               /* encoding buffer for STACK records (chunk_size bytes) */
    uint64_t lost[EXP_LOST_NREASONS];    /* counted since the stream began */
    uint64_t pending[EXP_LOST_NREASONS]; /* not yet written as LOST records */
    uint64_t records;                    /* records written */
    volatile int busy;
} exp_stream_t;

/* Gives back the disk space of the unused ends of the chunks of events file name in dirfd,
 * once its process has ended (never while one writes to it): each chunk's pages past its header
 * and its `used` bytes are punched out (fallocate: the file's size is unchanged and reads there
 * give zeros, which a reader never touches). Returns the bytes given
 * back, or -errno (-EOPNOTSUPP: the file system cannot; -EINVAL: not an events file). Opens
 * without following a symbolic link. Normal context only. */
long long exp_evfile_trim(int dirfd, const char *name);

/* Creates path (must not exist), writes the file header. Returns 0 or -errno. */
int exp_evfile_create(exp_evfile_t *f, const char *path, uint32_t pid, uint64_t now_ns,
                      uint32_t chunk_size);
/* Adopts an already open descriptor (e.g. moved to a high number); writes the header. */
int exp_evfile_init_fd(exp_evfile_t *f, int fd, uint32_t pid, uint64_t now_ns, uint32_t chunk_size);
void exp_evfile_close(exp_evfile_t *f);

/* Prepares a stream for thread tid. Allocates nothing until the first record. */
void exp_stream_init(exp_stream_t *s, exp_evfile_t *f, uint32_t tid);
/* Returns the stream id of a stack (n frames, leaf first), writing a STACK record if it is new. */
int exp_stream_stack(exp_stream_t *s, const uint64_t *pcs, uint32_t n, uint32_t flags,
                     uint32_t *id);
/* Writes a CLOCK record: at time t, on stack id, in state, standing for weight ns. */
int exp_stream_clock(exp_stream_t *s, uint64_t t, uint32_t stack, uint32_t state, uint64_t weight);
/* Writes a MEMREF record: the memory reference m behind the sample (stack id, weight) just
 * written at time t (the same t: its dt is 0). -EINVAL for flags or registers out of range. */
int exp_stream_memref(exp_stream_t *s, uint64_t t, uint32_t stack, uint64_t weight,
                      const exp_memref_t *m);
/* Writes a STATE record: thread tid (not the stream's) spent weight ns in state (EXP_STATE_*) up to
 * time t, at stack id of this stream. */
int exp_stream_state(exp_stream_t *s, uint64_t t, uint32_t tid, uint32_t stack, uint32_t state,
                     uint64_t weight);
/* The same with a runtime state (EXP_RSTATE_NONE, or 1 + the id of a declared kind: the thread
 * was inside a runtime in that state, see docs/FORMAT.md); 0 writes the records above. */
int exp_stream_clock_rs(exp_stream_t *s, uint64_t t, uint32_t stack, uint32_t state,
                        uint64_t weight, uint32_t rstate);
int exp_stream_state_rs(exp_stream_t *s, uint64_t t, uint32_t tid, uint32_t stack, uint32_t state,
                        uint64_t weight, uint32_t rstate);
/* Writes a CPU record: from time t the stream's thread runs on cpu. */
int exp_stream_cpu(exp_stream_t *s, uint64_t t, uint32_t cpu);
/* Writes a BLOCK record: profiled block id block (a `block` record of the log, at most
 * EXP_BLOCK_MAXID) entered (exit 0) or exited (exit 1) at t. -EINVAL when block is out of range. */
int exp_stream_block(exp_stream_t *s, uint64_t t, uint32_t block, int exit);
/* Writes a SYNC record: a wait of wait ns on object (address) in call (EXP_SYNC_*), ended at t. */
int exp_stream_sync(exp_stream_t *s, uint64_t t, uint32_t stack, uint64_t wait, uint64_t object,
                    uint32_t call);
/* Writes a HEAP_ALLOC record: size bytes at addr by call (EXP_HEAP_*). */
int exp_stream_alloc(exp_stream_t *s, uint64_t t, uint32_t stack, uint64_t addr, uint64_t size,
                     uint32_t call);
/* Writes a HEAP_FREE record: the block at addr freed by call; size: the length munmap'ed, else 0. */
int exp_stream_free(exp_stream_t *s, uint64_t t, uint64_t addr, uint64_t size, uint32_t call);
/* Writes a TLS_BLOCK record: the stream's thread's TLS block of the object of load record id
 * starts at addr. */
int exp_stream_tls_block(exp_stream_t *s, uint64_t t, uint32_t id, uint64_t addr);
/* MAP_ALLOC and MAP_FREE: the same records for the allocation map (docs/FORMAT.md). */
int exp_stream_map_alloc(exp_stream_t *s, uint64_t t, uint32_t stack, uint64_t addr,
                         uint64_t size, uint32_t call);
int exp_stream_map_free(exp_stream_t *s, uint64_t t, uint64_t addr, uint64_t size, uint32_t call);
/* Writes an IO record: call (EXP_IO_*) took ns, moved bytes on fd (-1: none) and failed with err
 * (0: it did not); name (namelen bytes, at most EXP_IO_NAME_MAX kept) names the file, or NULL. */
int exp_stream_io(exp_stream_t *s, uint64_t t, uint32_t stack, uint32_t call, uint64_t ns,
                  uint64_t bytes, int64_t fd, uint32_t err, const char *name, size_t namelen);
/* Writes a TRACE record: a traced call of the record kind declared in the log with id kind
 * (at most EXP_KIND_MAXID), on stack, with n values (at most EXP_KIND_MAXVALUES), one for each
 * metric of the kind in the order declared. -EINVAL when kind or n is out of range. */
int exp_stream_trace(exp_stream_t *s, uint64_t t, uint32_t kind, uint32_t stack,
                     const uint64_t *values, uint32_t n);
/* Counts count lost events for reason; they are written as a LOST record at the next chance. */
/* COUNTER: a counter's sample (see evformat.h). With data != NULL the memory-reference part is
 * written: data[0] flags (EXP_CTR_*), data[1] pc, data[2] ea, then with EXP_CTR_REGS the
 * EXP_CTR_NREGS registers from data[3]. */
int exp_stream_counter(exp_stream_t *s, uint64_t t, uint32_t stack, uint32_t counter,
                       uint64_t value, const uint64_t *data);
void exp_stream_lost(exp_stream_t *s, uint64_t count, uint32_t reason);
/* Writes pending LOST records, unmaps the chunk and frees the dedup tables. The stream may be
 * used again afterwards (it then starts a new chunk and forgets its stacks). */
void exp_stream_finish(exp_stream_t *s, uint64_t t);
/* For a forked child: forget the parent's mappings without unmapping shared file state twice. */
void exp_stream_forget(exp_stream_t *s);

#endif
