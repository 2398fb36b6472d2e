/*
 * evfast.h - the heap records' fast path: HEAP_ALLOC and HEAP_FREE, and the allocation map's
 * MAP_ALLOC and MAP_FREE of the same layouts (docs/FORMAT.md), encoded in
 * place, inline, into the stream's current chunk, for the heap tracing interposers, which write
 * one record per malloc and per free.
 *
 * The common case only: the chunk has room for the longest record (EXP_FAST_MAX bytes: the
 * stream's fast_end, which evwriter.c keeps at 0 while there is no chunk or a LOST record is
 * pending), time does not go back, and no write of the same stream is interrupted. Otherwise
 * the functions return -1 having written nothing, and the caller uses exp_stream_alloc/free
 * (evwriter.h), which start a chunk, write pending LOST records, clamp the time and count losses.
 * The bytes are those exp_stream_alloc/free would write.
 *
 * Async-signal-safe (no calls); a stream belongs to one thread, and a signal handler that
 * writes into the stream the fast path is writing finds it busy (evwriter.h). Depends on
 * evwriter.h.
 */
#ifndef TALLY_EXPERIMENT_EVFAST_H
#define TALLY_EXPERIMENT_EVFAST_H

#include <stdint.h>

#include "evwriter.h"

/* The longest fast record: type, length, then at most 10 + 10 + 5 + 10 + 5 bytes of fields. */
#define EXP_FAST_MAX 48

/* An unsigned LEB128 value at p; returns the byte after it. One to three bytes (times, sizes,
 * stack ids, most address deltas) without a loop. */
static inline uint8_t *exp_fast_u(uint8_t *p, uint64_t v)
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
    s->last_t = t;
    s->last_addr = addr;
    int64_t d = (int64_t)(addr - last_addr);
    uint8_t *p = exp_fast_u(s->chunk + pos + 2, t - last_t);
    return exp_fast_u(p, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
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

/* HEAP_ALLOC: size bytes at addr by call (EXP_HEAP_*), on stack id stack. 0, or -1: not written. */
static inline __attribute__((always_inline)) int exp_stream_alloc_fast(exp_stream_t *s, uint64_t t,
                                                                       uint32_t stack, uint64_t addr,
                                                                       uint64_t size, uint32_t call)
{
    return exp_fast_alloc_rec(s, EXP_REC_HEAP_ALLOC, t, stack, addr, size, call);
}

/* HEAP_FREE: the block at addr freed by call; size: the length unmapped, else 0. */
static inline __attribute__((always_inline)) int exp_stream_free_fast(exp_stream_t *s, uint64_t t,
                                                                      uint64_t addr, uint64_t size,
                                                                      uint32_t call)
{
    return exp_fast_free_rec(s, EXP_REC_HEAP_FREE, t, addr, size, call);
}

#endif
