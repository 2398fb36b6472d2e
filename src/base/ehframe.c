/*
 * ehframe.c - reading .eh_frame and .eh_frame_hdr; see ehframe.h.
 */
#include "ehframe.h"

#include <string.h>

int eh_read_fixed(const uint8_t **q, const uint8_t *end, size_t size, int is_signed, uint64_t *v)
{
    if (size == 0 || size > 8 || *q > end || (size_t)(end - *q) < size)
        return -1;
    uint64_t x = 0;
    memcpy(&x, *q, size);
    if (is_signed && size < 8 && (x >> (8 * size - 1)) & 1)
        x |= ~0ull << (8 * size);
    *q += size;
    *v = x;
    return 0;
}

int eh_read_encoded(const uint8_t **p, const uint8_t *end, unsigned enc, int ptrsize,
                    uint64_t field_addr, uint64_t datarel, uint64_t *out)
{
    if (enc == EH_PE_OMIT || *p > end)
        return -1;
    const uint8_t *q = *p;
    uint64_t v;
    int bad;
    switch (enc & 0x0f) {
    case 0x00: /* absptr */
        bad = eh_read_fixed(&q, end, (size_t)ptrsize, 0, &v);
        break;
    case 0x01: /* uleb128 */
        bad = leb128_get(&q, end, &v);
        break;
    case 0x09: { /* sleb128 */
        int64_t s;
        bad = leb128_get_sleb(&q, end, &s);
        v = (uint64_t)s;
        break;
    }
    case 0x02: /* udata2, sdata2 */
    case 0x0a:
        bad = eh_read_fixed(&q, end, 2, enc & 0x08, &v);
        break;
    case 0x03: /* udata4, sdata4 */
    case 0x0b:
        bad = eh_read_fixed(&q, end, 4, enc & 0x08, &v);
        break;
    case 0x04: /* udata8, sdata8 */
    case 0x0c:
        bad = eh_read_fixed(&q, end, 8, 0, &v);
        break;
    default:
        return -1;
    }
    if (bad)
        return -1;
    switch (enc & 0x70) {
    case 0x00:
        break;
    case 0x10: /* pcrel */
        v += field_addr;
        break;
    case 0x30: /* datarel */
        v += datarel;
        break;
    default:
        return -1;
    }
    *p = q;
    *out = v;
    return 0;
}

long eh_hdr_parse(const uint8_t *hdr, size_t size, uint64_t hdr_addr, int ptrsize,
                  uint64_t *eh_frame, uint64_t *count)
{
    if (size < 4 || hdr[0] != 1 || hdr[3] != 0x3b)
        return -1;
    const uint8_t *p = hdr + 4, *end = hdr + size;
    if (eh_read_encoded(&p, end, hdr[1], ptrsize, hdr_addr + 4, hdr_addr, eh_frame) ||
        eh_read_encoded(&p, end, hdr[2], ptrsize, hdr_addr + (uint64_t)(p - hdr), hdr_addr,
                        count))
        return -1;
    size_t table = (size_t)(p - hdr);
    if (*count == 0 || *count > (size - table) / 8)
        return -1;
    return (long)table;
}

int eh_cie_parse(const uint8_t *cie, size_t avail, int ptrsize, eh_cie_t *ci)
{
    if (avail < 9)
        return -1;
    uint32_t len, id;
    memcpy(&len, cie, 4);
    memcpy(&id, cie + 4, 4);
    if (len == 0 || len == 0xffffffffu || id != 0 || len > avail - 4)
        return -1;
    const uint8_t *c = cie + 8, *end = cie + 4 + len;
    if (c >= end)
        return -1;
    unsigned version = *c++;
    if (version != 1 && version != 3)
        return -1;
    const char *aug = (const char *)c;
    size_t al = strnlen(aug, (size_t)(end - c));
    if (al == (size_t)(end - c))
        return -1; /* no terminating NUL inside the CIE */
    c += al + 1;
    if (aug[0] == 'e' && aug[1] == 'h') { /* an old GCC's exception-table pointer */
        if ((size_t)(end - c) < (size_t)ptrsize)
            return -1;
        c += ptrsize;
        aug += 2;
    }
    if (leb128_get(&c, end, &ci->code_align) || leb128_get_sleb(&c, end, &ci->data_align))
        return -1;
    if (version == 1) {
        if (c >= end)
            return -1;
        ci->ra_col = *c++;
    } else if (leb128_get(&c, end, &ci->ra_col)) {
        return -1;
    }
    ci->fde_enc = 0x00; /* absptr */
    ci->zaug = aug[0] == 'z';
    ci->signal_frame = 0;
    if (ci->zaug) {
        uint64_t zl;
        if (leb128_get(&c, end, &zl) || zl > (uint64_t)(end - c))
            return -1;
        const uint8_t *zend = c + zl;
        for (const char *a = aug + 1; *a; a++) {
            if (*a == 'R') {
                if (c >= zend)
                    return -1;
                ci->fde_enc = *c++;
            } else if (*a == 'P') { /* the personality routine: skipped */
                uint64_t v;
                if (c >= zend)
                    return -1;
                unsigned penc = *c++;
                if (eh_read_encoded(&c, zend, penc & 0x0f, ptrsize, 0, 0, &v))
                    return -1;
            } else if (*a == 'L') { /* the LSDA's encoding: skipped */
                if (c >= zend)
                    return -1;
                c++;
            } else if (*a == 'S') {
                ci->signal_frame = 1;
            } else if (*a != 'B' && *a != 'G') {
                return -1;
            }
        }
        c = zend;
    }
    ci->insns = c;
    ci->end = end;
    return 0;
}

int eh_fde_head(const uint8_t *fde, size_t avail, uint32_t *cie_back, const uint8_t **body,
                const uint8_t **end)
{
    if (avail < 8)
        return -1;
    uint32_t len, back;
    memcpy(&len, fde, 4);
    memcpy(&back, fde + 4, 4);
    if (len == 0xffffffffu || len < 4 || len > avail - 4 || back == 0)
        return -1;
    *cie_back = back;
    *body = fde + 8;
    *end = fde + 4 + len;
    return 0;
}

int eh_fde_range(const uint8_t **p, const uint8_t *end, const eh_cie_t *ci, int ptrsize,
                 uint64_t body_addr, uint64_t *pc_begin, uint64_t *pc_range)
{
    const uint8_t *q = *p;
    if (eh_read_encoded(&q, end, ci->fde_enc, ptrsize, body_addr, 0, pc_begin) ||
        eh_read_encoded(&q, end, ci->fde_enc & 0x0f, ptrsize, 0, 0, pc_range))
        return -1;
    if (ci->zaug) {
        uint64_t zl;
        if (leb128_get(&q, end, &zl) || zl > (uint64_t)(end - q))
            return -1;
        q += zl;
    }
    *p = q;
    return 0;
}
