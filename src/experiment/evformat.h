/*
 * evformat.h - on-disk constants of the "events" file (docs/FORMAT.md). These never change
 * meaning once released: add new record types, never renumber. Depends on nothing.
 */
#ifndef TALLY_EXPERIMENT_EVFORMAT_H
#define TALLY_EXPERIMENT_EVFORMAT_H

#include <stdint.h>

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
    EXP_REC_SYNC = 4,       /* a synchronization wait (sync tracing) */
    EXP_REC_HEAP_ALLOC = 5, /* an allocation (heap tracing) */
    EXP_REC_HEAP_FREE = 6,  /* a deallocation: free, realloc's old block, munmap */
    EXP_REC_IO = 7,         /* an I/O call (I/O tracing) */
    EXP_REC_TRACE = 8,      /* a traced call of a kind declared in the log (collector API) */
    EXP_REC_COUNTER = 9,    /* a counter overflow sample (collect -h): `counter` of the log */
    EXP_REC_MAP_ALLOC = 10, /* a block of the allocation map (dataspace without heap tracing) */
    EXP_REC_MAP_FREE = 11,  /* the end of a block of the allocation map */
    EXP_REC_HEAP_PACK = 12, /* HEAP_ALLOC and HEAP_FREE records packed without type or length */
    EXP_REC_BLOCK = 13,     /* a profiled block entered or exited (--block-trace=on) */
    /* 14..15 are free for more tracing records; thread states and CPUs: */
    EXP_REC_STATE = 16, /* a thread-state sample of another thread, written by the sampler */
    EXP_REC_CPU = 17,   /* the stream's thread now runs on this CPU */
    /* 18..23 are free for counter records; dataspace: */
    EXP_REC_MEMREF = 24, /* the memory reference behind a clock or counter sample */
    EXP_REC_TLS_BLOCK = 25, /* where the stream's thread's dynamic TLS block of an object is */
};

enum exp_stack_flags {
    EXP_STACK_TRUNCATED = 1,   /* cut at the maximum depth */
    EXP_STACK_UNWIND_FAIL = 2, /* the unwinder stopped before the outermost frame */
    EXP_STACK_NO_ROOM = 4,     /* not unwound: too little stack left in the signal handler */
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

/* SYNC: the call that waited. */
enum exp_sync_call {
    EXP_SYNC_MUTEX_LOCK = 0,
    EXP_SYNC_MUTEX_TIMEDLOCK = 1, /* also pthread_mutex_clocklock */
    EXP_SYNC_RWLOCK_RDLOCK = 2,
    EXP_SYNC_RWLOCK_TIMEDRDLOCK = 3,
    EXP_SYNC_RWLOCK_WRLOCK = 4,
    EXP_SYNC_RWLOCK_TIMEDWRLOCK = 5,
    EXP_SYNC_COND_WAIT = 6,
    EXP_SYNC_COND_TIMEDWAIT = 7, /* also pthread_cond_clockwait */
    EXP_SYNC_SEM_WAIT = 8,
    EXP_SYNC_SEM_TIMEDWAIT = 9, /* also sem_clockwait */
    EXP_SYNC_JOIN = 10,         /* pthread_join, pthread_timedjoin_np, pthread_clockjoin_np */
    EXP_SYNC_BARRIER_WAIT = 11,
    EXP_SYNC_SPIN_LOCK = 12,
    EXP_SYNC_NCALLS = 13,
};

/* HEAP_ALLOC / HEAP_FREE: the call that allocated or freed. */
enum exp_heap_call {
    EXP_HEAP_MALLOC = 0, /* HEAP_FREE: free */
    EXP_HEAP_CALLOC = 1,
    EXP_HEAP_REALLOC = 2, /* a realloc is a HEAP_FREE of the old block and a HEAP_ALLOC */
    EXP_HEAP_REALLOCARRAY = 3,
    EXP_HEAP_MEMALIGN = 4,
    EXP_HEAP_POSIX_MEMALIGN = 5,
    EXP_HEAP_ALIGNED_ALLOC = 6,
    EXP_HEAP_VALLOC = 7,
    EXP_HEAP_PVALLOC = 8,
    EXP_HEAP_MMAP = 9,    /* HEAP_FREE: munmap, with the length unmapped */
    EXP_HEAP_MREMAP = 10, /* HEAP_FREE of the old mapping and HEAP_ALLOC of the new one */
    EXP_HEAP_NCALLS = 11,
};

/* HEAP_PACK: the kind of a packed record, the low 2 bits of its first byte; the upper 6 bits are
 * its dt, or EXP_PACK_DT_LONG: dt follows as a number. */
enum exp_pack_kind {
    EXP_PACK_ALLOC = 0,      /* a HEAP_ALLOC by malloc: address, stack id, size */
    EXP_PACK_FREE = 1,       /* a HEAP_FREE by free: address */
    EXP_PACK_ALLOC_CALL = 2, /* a HEAP_ALLOC: address, stack id, size, call */
    EXP_PACK_FREE_CALL = 3,  /* a HEAP_FREE: address, call, size */
};
#define EXP_PACK_DT_LONG 63
/* A HEAP_PACK's length is 4 bytes of LEB128 (at most EXP_PACK_MAX, the writer packs into chunks
 * no larger); EXP_PACK_OPEN while it is open, the last record of its chunk, which it fills up
 * to the chunk's used bytes (its length is written when something else is written after it, or
 * the chunk ends: a process killed before leaves it open). */
#define EXP_PACK_MAX ((1u << 27) - 1)
#define EXP_PACK_OPEN ((1u << 28) - 1)

/* MAP_ALLOC / MAP_FREE: what the allocation map of this collector keeps (collector/heapmap.h):
 * every block of at least EXP_MAP_LARGE bytes and every mapping, and one smaller block in
 * EXP_MAP_SAMPLE, chosen by its address. */
#define EXP_MAP_LARGE 4096
#define EXP_MAP_SAMPLE 64

/* IO: the call. The number says what it does: 1-31 read data, 32-63 write data, 64-127 other. */
enum exp_io_call {
    EXP_IO_READ = 1,
    EXP_IO_PREAD = 2,
    EXP_IO_READV = 3,
    EXP_IO_PREADV = 4,
    EXP_IO_FREAD = 5,
    EXP_IO_FGETS = 6,
    EXP_IO_GETLINE = 7, /* getline, getdelim */
    EXP_IO_WRITE = 32,
    EXP_IO_PWRITE = 33,
    EXP_IO_WRITEV = 34,
    EXP_IO_PWRITEV = 35,
    EXP_IO_FWRITE = 36,
    EXP_IO_FPUTS = 37, /* fputs, puts */
    EXP_IO_FPRINTF = 38, /* fprintf, printf, vfprintf, vprintf, dprintf, and their _chk forms */
    EXP_IO_OPEN = 64, /* open, openat, creat (and 64-bit forms): the record names the file */
    EXP_IO_CLOSE = 65,
    EXP_IO_FSYNC = 66, /* fsync, fdatasync */
    EXP_IO_LSEEK = 67,
    EXP_IO_FOPEN = 68, /* fopen, freopen, fdopen: the record names the file */
    EXP_IO_FCLOSE = 69,
    EXP_IO_FFLUSH = 70,
    EXP_IO_FSEEK = 71, /* fseek, fseeko, rewind */
    EXP_IO_NCALLS = 128,
};

/* TRACE: a traced call of a record kind declared in the log (`kind` record: id, name, metrics);
 * the record carries one value per metric of its kind, in the declared order. */
#define EXP_KIND_MAXVALUES 16 /* metrics (values) of one declared record kind */
#define EXP_KIND_MAXID 65535  /* largest declared kind id */
#define EXP_BLOCK_MAXID 65535 /* largest profiled block id (`block` records of the log) */

/* COUNTER: u dt, u stack, u counter (the `id` of a `counter` record of the log), u value (events
 * the sample stands for: the interval), then optionally u flags (EXP_CTR_*), u pc, u ea and, with
 * EXP_CTR_REGS, u n and n register values: a memory reference that readers accept (the collector
 * writes a `+` counter's as a MEMREF record after the COUNTER, which the data views read):
 *   pc, ea  with EXP_CTR_EXACT: the sampled instruction address and data address the kernel gave
 *           (PERF_SAMPLE_IP / PERF_SAMPLE_ADDR: page faults, data breakpoints, precise events);
 *           without it, pc is the interrupted PC and ea 0;
 *   regs    the general registers of the interrupted context (the signal's ucontext), in the
 *           order of glibc's x86-64 gregs: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip
 *           (EXP_CTR_NREGS values), for backtracking from pc to the memory-referencing
 *           instruction and computing its address. */
enum exp_counter_flags {
    EXP_CTR_EXACT = 1, /* pc and ea are the hardware's sample (PERF_SAMPLE_IP, PERF_SAMPLE_ADDR) */
    EXP_CTR_REGS = 2,  /* the registers of the interrupted context follow */
};
#define EXP_CTR_NREGS 17
#define EXP_CTR_MAX 64 /* counters of one process (`counter` ids 0..63) */

/* CLOCK and STATE records may end with a runtime state: 0 (EXP_RSTATE_NONE, or absent) outside
 * any runtime, else 1 + the id of a declared kind whose first metric takes the time on a CPU or
 * waiting for one (states USER, SYSTEM, WAIT) and whose second (its first when it has one) the
 * time blocked (LOCK, IO, SLEEP): e.g. OpenMP Work and Wait. */
#define EXP_RSTATE_NONE 0

#define EXP_IO_NAME_MAX 1024 /* longest file name an IO record carries */

/* MEMREF: what the record knows of the sample's memory reference (its flags field). */
enum exp_mref_flags {
    EXP_MREF_EA = 1,      /* the effective address is given (the hardware's sampled data address,
                             a page fault's address, a data breakpoint's address) */
    EXP_MREF_TRIGGER = 2, /* pc is the memory-referencing instruction itself; without it pc is the
                             interrupted PC (after skid) and the analyzer backtracks from it */
    EXP_MREF_REGS = 4,    /* the general registers at pc follow */
    EXP_MREF_FLAGS = 7,
};

/* MEMREF: register numbers of the register mask: the DWARF numbers of x86-64 (0 rax, 1 rdx,
 * 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8..15 r8..r15), and 16 for the fs base (thread-local
 * storage). */
#define EXP_MREF_NREGS 17
#define EXP_MREF_REG_FSBASE 16

/* A MEMREF record decoded (the reader) or to encode (the writer). */
typedef struct exp_memref {
    uint32_t source; /* 0: clock profiling; n: the n-th hardware counter of the log */
    uint32_t flags;  /* EXP_MREF_* */
    uint64_t pc;     /* the trigger (EXP_MREF_TRIGGER) or the interrupted PC */
    uint64_t ea;     /* with EXP_MREF_EA */
    uint32_t regmask; /* with EXP_MREF_REGS: the registers given, bit i for register i */
    uint32_t reason;  /* without EA and REGS: why not (EXP_DUNK_*), else 0 */
    uint64_t regs[EXP_MREF_NREGS]; /* by register number, where regmask has its bit */
} exp_memref_t;

/* The reasons a memory reference has no data object: seed 002's subtypes of <Unknown>, with its
 * numbers. A MEMREF record that has neither an address nor registers gives one; the analyzer
 * classifies every other failure into them too. */
enum exp_dunk_reason {
    EXP_DUNK_NO_DEBUG = 1,       /* the module of the trigger PC has no DWARF */
    EXP_DUNK_BAD_TARGET = 2,     /* backtracking found no valid branch target (undecodable) */
    EXP_DUNK_BRANCH_TARGET = 3,  /* backtracking traversed a branch target */
    EXP_DUNK_NO_DESCRIPTOR = 4,  /* no data object describes the instruction's operand */
    EXP_DUNK_NOT_MEMREF = 5,     /* the instruction does not reference memory */
    EXP_DUNK_UNDETERMINABLE = 6, /* not determinable from the debug information */
    EXP_DUNK_JUMP_CALL = 7,      /* backtracking was stopped by a jump or call */
    EXP_DUNK_OUT_OF_RANGE = 8,   /* backtracking did not find the trigger PC within its range */
    EXP_DUNK_REG_CHANGED = 9,    /* a register of the address changed after the trigger */
    EXP_DUNK_NO_VA = 10,         /* the instruction did not specify a valid virtual address */
    EXP_DUNK_NREASONS = 11,
};

#define EXP_IO_IS_READ(call) ((call) >= 1 && (call) < 32)
#define EXP_IO_IS_WRITE(call) ((call) >= 32 && (call) < 64)

#endif
