/*
 * leb128.h - LEB128 varints: unsigned and zig-zag signed (the events format, docs/FORMAT.md,
 * "events"), and reading DWARF's two's-complement signed ones (call-frame information,
 * base/ehframe.h).
 *
 * Header-only, depends on nothing, async-signal-safe (pure functions on caller buffers).
 */
#ifndef TALLY_BASE_LEB128_H
#define TALLY_BASE_LEB128_H

#include <stddef.h>
#include <stdint.h>

#define LEB128_MAX 10 /* bytes of the longest encoding of a 64-bit value */

/* Writes v at p (room for LEB128_MAX bytes); returns the bytes written. */
static inline size_t leb128_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        p[n++] = b | (v ? 0x80 : 0);
    } while (v);
    return n;
}

static inline size_t leb128_put_signed(uint8_t *p, int64_t v)
{
    return leb128_put(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* Reads a value from [*p, end); advances *p. Returns 0 on success, -1 if truncated or too long. */
static inline int leb128_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    const uint8_t *q = *p;
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (q >= end)
            return -1;
        uint8_t b = *q++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *v = r;
            return 0;
        }
    }
    return -1;
}

static inline int leb128_get_signed(const uint8_t **p, const uint8_t *end, int64_t *v)
{
    uint64_t u;
    if (leb128_get(p, end, &u))
        return -1;
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* Reads a two's-complement signed value (DWARF's SLEB128) from [*p, end); advances *p. Returns 0
 * on success, -1 if truncated or too long. */
static inline int leb128_get_sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
    const uint8_t *q = *p;
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 70;) {
        if (q >= end)
            return -1;
        uint8_t b = *q++;
        if (shift < 64)
            r |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                r |= ~(uint64_t)0 << shift;
            *p = q;
            *v = (int64_t)r;
            return 0;
        }
    }
    return -1;
}

#endif
