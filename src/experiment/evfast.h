/*
 * evfast.h - the heap records' fast path, encoded in place, inline, into the stream's current
 * chunk, for the heap tracing interposers, which write one record per malloc and per free:
 * HEAP_ALLOC and HEAP_FREE as packed records (a HEAP_PACK record, docs/FORMAT.md: one byte of
 * kind and time, then the fields; no type, no length), and the allocation map's MAP_ALLOC and
 * MAP_FREE in the layouts of HEAP_ALLOC and HEAP_FREE; and the BLOCK records of the timeline of
 * profiled blocks, two per call of an instrumented function.
 *
 * The common case only: the chunk has room for the longest record (EXP_FAST_MAX bytes: the
 * stream's fast_end, which evwriter.c keeps at 0 while there is no chunk or a LOST record is
 * pending), time does not go back, and no write of the same stream is interrupted. Otherwise
 * the functions return -1 having written nothing, and the caller uses exp_stream_alloc/free
 * (evwriter.h), which start a chunk, write pending LOST records, clamp the time and count losses
 * (and write a HEAP_ALLOC or HEAP_FREE record, after which the next packed record opens a new
 * HEAP_PACK).
 *
 * Numbers are encoded without a branch on their value up to 28 bits (sizes and address deltas of
 * random widths cost no mispredicted branch); an encoding may store up to 3 bytes past its end,
 * inside the EXP_FAST_MAX bytes of room.
 *
 * Async-signal-safe (no calls); a stream belongs to one thread, and a signal handler that
 * writes into the stream the fast path is writing finds it busy (evwriter.h). Depends on
 * evwriter.h.
 */
#ifndef TALLY_EXPERIMENT_EVFAST_H
#define TALLY_EXPERIMENT_EVFAST_H

#include <stdint.h>

#include "evwriter.h"

/* The room the fast path needs: a HEAP_PACK header (type, 4 bytes of length), then the longest
 * packed record (1 + 10 + 10 + 5 + 10 + 5 bytes; a HEAP_ALLOC record is shorter), then the 3
 * bytes an encoding may store past its end. */
#define EXP_FAST_MAX 64

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "evfast.h stores little-endian words"
#endif

static inline void exp_fast_store32(uint8_t *p, uint32_t v) { __builtin_memcpy(p, &v, 4); }

/* An unsigned LEB128 value at p; returns the byte after it. One to three bytes (times, sizes,
 * stack ids, most address deltas) without a loop. */
static inline __attribute__((always_inline)) uint8_t *exp_fast_u(uint8_t *p, uint64_t v)
{
    if (__builtin_expect(v < 0x80, 1)) {
        p[0] = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    if (v < 0x200000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7 | 0x80);
        p[2] = (uint8_t)(v >> 14);
        return p + 3;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* The same without a branch on the value's width up to 2^28, in one 4-byte store (up to 3 bytes
 * past its end): for the numbers of random widths (address deltas), whose branches the
 * processor would mispredict. */
static inline __attribute__((always_inline)) uint8_t *exp_fast_u_flat(uint8_t *p, uint64_t v)
{
    if (__builtin_expect(v < (1u << 28), 1)) {
        uint32_t x = (uint32_t)v;
        uint32_t n = ((32 - (uint32_t)__builtin_clz(x | 1)) * 37 + 6 * 37) >> 8; /* bits / 7 */
        uint32_t b = (x & 0x7f) | (x << 1 & 0x7f00) | (x << 2 & 0x7f0000) | (x << 3 & 0x7f000000);
        exp_fast_store32(p, b | 0x808080u >> (32 - 8 * n));
        return p + n;
    }
    return exp_fast_u(p, v);
}

/* The zig-zag form of a signed delta (the `s` numbers of docs/FORMAT.md). */
static inline uint64_t exp_fast_zz(uint64_t d) { return d << 1 ^ (uint64_t)((int64_t)d >> 63); }

/* The 4-byte LEB128 form of x (below 2^28). */
static inline uint32_t exp_fast_leb4(uint32_t x)
{
    return (x & 0x7f) | (x << 1 & 0x7f00) | (x << 2 & 0x7f0000) | (x << 3 & 0x7f000000) | 0x808080u;
}

/* Ends the stream's open HEAP_PACK, if any (before another record is written after it, or its
 * chunk ends): its length is written. */
static inline void exp_pack_close(exp_stream_t *s)
{
    if (s->pack) {
        exp_fast_store32(s->chunk + s->pack + 1, exp_fast_leb4(s->pos - (s->pack + 5)));
        s->pack = 0;
    }
}

/* Starts a record at time t of address addr: NULL when the fast path cannot write it, else
 * where its fields go (after type, length, dt and the address delta). The stream is taken
 * (busy) before its position is read, so that a signal handler's write into the same stream
 * either comes first, whole, or finds it busy. The fields are then read into locals: the byte
 * stores could alias them. */
static inline __attribute__((always_inline)) uint8_t *exp_fast_begin(exp_stream_t *s, uint64_t t,
                                                                      uint64_t addr)
{
    if (__builtin_expect(s->busy, 0))
        return 0;
    s->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint32_t pos = s->pos;
    uint64_t last_t = s->last_t, last_addr = s->last_addr;
    if (__builtin_expect(pos > s->fast_end || t < last_t, 0)) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        s->busy = 0;
        return 0;
    }
    exp_pack_close(s);
    s->last_t = t;
    s->last_addr = addr;
    uint8_t *p = exp_fast_u(s->chunk + pos + 2, t - last_t);
    return exp_fast_u(p, exp_fast_zz(addr - last_addr));
}

/* Ends the record begun at the stream's pos with type, its fields ending at end. */
static inline __attribute__((always_inline)) void exp_fast_end(exp_stream_t *s, uint8_t type, uint8_t *end)
{
    uint8_t *chunk = s->chunk;
    uint32_t pos = s->pos, n = (uint32_t)(end - (chunk + pos));
    chunk[pos] = type;
    chunk[pos + 1] = (uint8_t)(n - 2); /* under 128: one byte */
    s->pos = pos + n;
    s->records++;
    __atomic_store_n((uint32_t *)(chunk + 12), pos + n - EXP_CHUNK_HEADER_SIZE, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    s->busy = 0;
}

/* A record of HEAP_ALLOC's layout (HEAP_ALLOC, MAP_ALLOC) of the given type: size bytes at addr
 * by call (EXP_HEAP_*), on stack id stack. 0, or -1: not written. */
static inline __attribute__((always_inline)) int exp_fast_alloc_rec(exp_stream_t *s, uint8_t type,
                                                                    uint64_t t, uint32_t stack,
                                                                    uint64_t addr, uint64_t size,
                                                                    uint32_t call)
{
    uint8_t *p = exp_fast_begin(s, t, addr);
    if (!p)
        return -1;
    p = exp_fast_u(p, stack);
    p = exp_fast_u(p, size);
    if (call != EXP_HEAP_MALLOC)
        p = exp_fast_u(p, call);
    exp_fast_end(s, type, p);
    return 0;
}

/* A record of HEAP_FREE's layout (HEAP_FREE, MAP_FREE): the block at addr freed by call; size:
 * the length unmapped, else 0. */
static inline __attribute__((always_inline)) int exp_fast_free_rec(exp_stream_t *s, uint8_t type,
                                                                   uint64_t t, uint64_t addr,
                                                                   uint64_t size, uint32_t call)
{
    uint8_t *p = exp_fast_begin(s, t, addr);
    if (!p)
        return -1;
    if (call != EXP_HEAP_MALLOC || size) {
        p = exp_fast_u(p, call);
        p = exp_fast_u(p, size);
    }
    exp_fast_end(s, type, p);
    return 0;
}

/* ---- packed records -------------------------------------------------------------------------- */

/* Starts a packed record of kind (EXP_PACK_*) at time t of address addr, opening a HEAP_PACK
 * record when none is open: NULL when the fast path cannot write it, else where its fields go
 * (after the kind and time byte, the long time and the address delta). As exp_fast_begin. */
static inline __attribute__((always_inline)) uint8_t *exp_pack_begin(exp_stream_t *s, uint32_t kind,
                                                                     uint64_t t, uint64_t addr)
{
    if (__builtin_expect(s->busy, 0))
        return 0;
    s->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint32_t pos = s->pos;
    uint64_t last_t = s->last_t, last_addr = s->last_addr;
    if (__builtin_expect(pos > s->fast_end || t < last_t, 0)) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        s->busy = 0;
        return 0;
    }
    uint8_t *chunk = s->chunk;
    if (__builtin_expect(!s->pack, 0)) { /* open: its length is written when it is closed */
        chunk[pos] = EXP_REC_HEAP_PACK;
        exp_fast_store32(chunk + pos + 1, exp_fast_leb4(EXP_PACK_OPEN));
        s->pack = pos;
        s->pos = pos += 5;
    }
    s->last_t = t;
    s->last_addr = addr;
    uint8_t *p = chunk + pos;
    uint64_t dt = t - last_t;
    if (__builtin_expect(dt < EXP_PACK_DT_LONG, 1)) { /* the time in the first byte */
        *p++ = (uint8_t)(kind | (uint32_t)dt << 2);
    } else {
        *p++ = (uint8_t)(kind | EXP_PACK_DT_LONG << 2);
        p = exp_fast_u(p, dt);
    }
    return exp_fast_u(p, exp_fast_zz(addr - last_addr));
}

/* Ends the packed record begun at the stream's pos, its fields ending at end: the chunk's used
 * bytes cover it (the open HEAP_PACK reaches them). */
static inline __attribute__((always_inline)) void exp_pack_end(exp_stream_t *s, uint8_t *end)
{
    uint8_t *chunk = s->chunk;
    uint32_t pos = (uint32_t)(end - chunk);
    s->pos = pos;
    s->records++;
    __atomic_store_n((uint32_t *)(chunk + 12), pos - EXP_CHUNK_HEADER_SIZE, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    s->busy = 0;
}

/* HEAP_ALLOC, packed: size bytes at addr by call (EXP_HEAP_*), on stack id stack. 0, or -1: not
 * written. */
static inline __attribute__((always_inline)) int exp_stream_alloc_fast(exp_stream_t *s, uint64_t t,
                                                                       uint32_t stack, uint64_t addr,
                                                                       uint64_t size, uint32_t call)
{
    uint8_t *p = exp_pack_begin(s, call == EXP_HEAP_MALLOC ? EXP_PACK_ALLOC : EXP_PACK_ALLOC_CALL,
                                t, addr);
    if (!p)
        return -1;
    p = exp_fast_u(p, stack);
    p = exp_fast_u(p, size);
    if (call != EXP_HEAP_MALLOC)
        p = exp_fast_u(p, call);
    exp_pack_end(s, p);
    return 0;
}

/* HEAP_FREE, packed: the block at addr freed by call; size: the length unmapped, else 0. */
static inline __attribute__((always_inline)) int exp_stream_free_fast(exp_stream_t *s, uint64_t t,
                                                                      uint64_t addr, uint64_t size,
                                                                      uint32_t call)
{
    int plain = call == EXP_HEAP_MALLOC && !size;
    uint8_t *p = exp_pack_begin(s, plain ? EXP_PACK_FREE : EXP_PACK_FREE_CALL, t, addr);
    if (!p)
        return -1;
    if (!plain) {
        p = exp_fast_u(p, call);
        p = exp_fast_u(p, size);
    }
    exp_pack_end(s, p);
    return 0;
}

/* A BLOCK record (the timeline of profiled blocks): block entered (exit 0) or exited (exit 1) at
 * t. 0, or -1: not written (then exp_stream_block, evwriter.h). */
static inline __attribute__((always_inline)) int exp_fast_block(exp_stream_t *s, uint64_t t,
                                                                uint32_t block, int exit)
{
    if (__builtin_expect(s->busy || block > EXP_BLOCK_MAXID, 0))
        return -1;
    s->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint32_t pos = s->pos;
    uint64_t last_t = s->last_t;
    /* (a new stream has no chunk yet, and pos 0: its first record is the slow path's) */
    if (__builtin_expect(pos > s->fast_end || !s->chunk || t < last_t, 0)) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        s->busy = 0;
        return -1;
    }
    exp_pack_close(s);
    s->last_t = t;
    uint8_t *p = exp_fast_u(s->chunk + pos + 2, t - last_t);
    p = exp_fast_u(p, (uint64_t)block << 1 | (exit != 0));
    exp_fast_end(s, EXP_REC_BLOCK, p);
    return 0;
}

#endif
