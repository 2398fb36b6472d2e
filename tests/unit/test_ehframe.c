/*
 * test_ehframe.c - the call-frame reader shared by the collector's unwinder and the symbol reader
 * (base/ehframe.h): LEB128 (long, negative, truncated), every DW_EH_PE format and application
 * it knows and the ones it refuses, .eh_frame_hdr headers (good, wrong version, a count past the
 * data), CIEs built here (zR, zPLR with a personality, zRS signal frames, the old "eh", and the
 * refusals: unknown augmentation, version 2, 64-bit length, a length past the data, no NUL), FDE
 * heads and ranges with augmentation data, and this test's own .eh_frame_hdr: the FDE found for a
 * function of this file covers it.
 */
#define _GNU_SOURCE
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/ehframe.h"

/* DWARF's LEB128 through base/leb128.h (the unsigned reader is the format's; the signed one is
 * two's complement, not the format's zig-zag). */
static void test_leb128(void **state)
{
    (void)state;
    const uint8_t u[] = { 0xe5, 0x8e, 0x26 }; /* 624485 */
    const uint8_t *p = u;
    uint64_t v;
    assert_int_equal(leb128_get(&p, u + sizeof u, &v), 0);
    assert_int_equal(v, 624485);
    assert_ptr_equal(p, u + 3);
    const uint8_t s[] = { 0xc0, 0xbb, 0x78 }; /* -123456 */
    int64_t sv;
    p = s;
    assert_int_equal(leb128_get_sleb(&p, s + sizeof s, &sv), 0);
    assert_int_equal(sv, -123456);
    assert_ptr_equal(p, s + 3);
    const uint8_t m8[] = { 0x78 }; /* -8 */
    p = m8;
    assert_int_equal(leb128_get_sleb(&p, m8 + 1, &sv), 0);
    assert_int_equal(sv, -8);
    const uint8_t p63[] = { 0x3f }; /* 63: bit 6 clear, positive */
    p = p63;
    assert_int_equal(leb128_get_sleb(&p, p63 + 1, &sv), 0);
    assert_int_equal(sv, 63);
    const uint8_t min[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f };
    p = min; /* INT64_MIN: ten bytes */
    assert_int_equal(leb128_get_sleb(&p, min + sizeof min, &sv), 0);
    assert_true(sv == INT64_MIN);
    /* truncated: -1, *p unchanged */
    p = u;
    assert_int_equal(leb128_get(&p, u + 2, &v), -1);
    assert_ptr_equal(p, u);
    p = s;
    assert_int_equal(leb128_get_sleb(&p, s + 2, &sv), -1);
    assert_ptr_equal(p, s);
    /* longer than ten bytes: refused */
    uint8_t lng[12];
    memset(lng, 0xff, sizeof lng);
    lng[11] = 0x01;
    p = lng;
    assert_int_equal(leb128_get(&p, lng + sizeof lng, &v), -1);
    assert_int_equal(leb128_get_sleb(&p, lng + sizeof lng, &sv), -1);
}

static void test_encoded(void **state)
{
    (void)state;
    uint8_t b[16] = { 0 };
    uint64_t v;
    const uint8_t *p;
    int32_t neg = -16;
    memcpy(b, &neg, 4);
    p = b; /* sdata4 */
    assert_int_equal(eh_read_encoded(&p, b + 4, 0x0b, 8, 0, 0, &v), 0);
    assert_true((int64_t)v == -16);
    assert_ptr_equal(p, b + 4);
    p = b; /* udata4 */
    assert_int_equal(eh_read_encoded(&p, b + 4, 0x03, 8, 0, 0, &v), 0);
    assert_true(v == 0xfffffff0u);
    p = b; /* pcrel sdata4: relative to the field's address */
    assert_int_equal(eh_read_encoded(&p, b + 4, 0x1b, 8, 0x401000, 0, &v), 0);
    assert_true(v == 0x401000 - 16);
    p = b; /* datarel sdata4 */
    assert_int_equal(eh_read_encoded(&p, b + 4, 0x3b, 8, 0, 0x500000, &v), 0);
    assert_true(v == 0x500000 - 16);
    uint64_t abs = 0x1122334455667788u;
    memcpy(b, &abs, 8);
    p = b; /* absptr, 8 and 4 bytes */
    assert_int_equal(eh_read_encoded(&p, b + 8, 0x00, 8, 0, 0, &v), 0);
    assert_true(v == abs);
    p = b;
    assert_int_equal(eh_read_encoded(&p, b + 8, 0x00, 4, 0, 0, &v), 0);
    assert_true(v == 0x55667788u);
    uint16_t h = 0x8001;
    memcpy(b, &h, 2);
    p = b; /* sdata2, udata2 */
    assert_int_equal(eh_read_encoded(&p, b + 2, 0x0a, 8, 0, 0, &v), 0);
    assert_true((int64_t)v == (int16_t)0x8001);
    p = b;
    assert_int_equal(eh_read_encoded(&p, b + 2, 0x02, 8, 0, 0, &v), 0);
    assert_true(v == 0x8001);
    const uint8_t sl[] = { 0x7f }; /* sleb128: -1 */
    p = sl;
    assert_int_equal(eh_read_encoded(&p, sl + 1, 0x09, 8, 0, 0, &v), 0);
    assert_true((int64_t)v == -1);
    /* refused, *p unchanged: omit, textrel, an unknown format, too few bytes */
    p = b;
    assert_int_equal(eh_read_encoded(&p, b + 8, EH_PE_OMIT, 8, 0, 0, &v), -1);
    assert_int_equal(eh_read_encoded(&p, b + 8, 0x23, 8, 0, 0, &v), -1);
    assert_int_equal(eh_read_encoded(&p, b + 8, 0x05, 8, 0, 0, &v), -1);
    assert_int_equal(eh_read_encoded(&p, b + 3, 0x03, 8, 0, 0, &v), -1);
    assert_ptr_equal(p, b);
    /* fixed sizes */
    const uint8_t one[] = { 0x80 };
    p = one;
    assert_int_equal(eh_read_fixed(&p, one + 1, 1, 0, &v), 0);
    assert_true(v == 0x80);
    p = one;
    assert_int_equal(eh_read_fixed(&p, one + 1, 1, 1, &v), 0);
    assert_true((int64_t)v == -128);
    p = one;
    assert_int_equal(eh_read_fixed(&p, one + 1, 2, 0, &v), -1);
}

/* ---- crafted CIEs and FDEs -------------------------------------------------------------------- */

typedef struct buf {
    uint8_t b[256];
    size_t n;
} buf_t;

static void put(buf_t *b, const void *p, size_t n)
{
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

static void put8(buf_t *b, uint8_t v) { put(b, &v, 1); }
static void put32(buf_t *b, uint32_t v) { put(b, &v, 4); }

/* A CIE at the start of b: version, augmentation, code 1, data -8, RA 16, then aug data. */
static size_t make_cie(buf_t *b, uint8_t version, const char *aug, const uint8_t *augdata,
                       size_t augn)
{
    size_t at = b->n;
    put32(b, 0); /* length, patched */
    put32(b, 0); /* CIE id */
    put8(b, version);
    put(b, aug, strlen(aug) + 1);
    if (aug[0] == 'e' && aug[1] == 'h') {
        uint64_t eh = 0;
        put(b, &eh, 8);
    }
    put8(b, 1);    /* code alignment */
    put8(b, 0x78); /* data alignment -8 */
    if (version == 1)
        put8(b, 16);
    else
        put8(b, 16); /* uleb 16 */
    if (strchr(aug, 'z')) {
        put8(b, (uint8_t)augn);
        put(b, augdata, augn);
    }
    put8(b, 0x0c); /* def_cfa rsp+8: the initial instructions */
    put8(b, 7);
    put8(b, 8);
    uint32_t len = (uint32_t)(b->n - at - 4);
    memcpy(b->b + at, &len, 4);
    return at;
}

static void test_cie(void **state)
{
    (void)state;
    eh_cie_t ci;
    buf_t b = { .n = 0 };
    const uint8_t r[] = { 0x1b };
    make_cie(&b, 1, "zR", r, 1);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), 0);
    assert_int_equal(ci.code_align, 1);
    assert_int_equal(ci.data_align, -8);
    assert_int_equal(ci.ra_col, 16);
    assert_int_equal(ci.fde_enc, 0x1b);
    assert_int_equal(ci.zaug, 1);
    assert_int_equal(ci.signal_frame, 0);
    assert_ptr_equal(ci.end, b.b + b.n);
    assert_int_equal(ci.end - ci.insns, 3);
    assert_int_equal(ci.insns[0], 0x0c);

    /* a personality (pcrel sdata4 after its encoding), an LSDA encoding, then R */
    b.n = 0;
    const uint8_t plr[] = { 0x9b, 1, 2, 3, 4, 0x1b, 0x1b };
    make_cie(&b, 1, "zPLR", plr, sizeof plr);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), 0);
    assert_int_equal(ci.fde_enc, 0x1b);
    assert_int_equal(ci.insns[0], 0x0c);

    /* S after R, with the augmentation data ending at R: still a signal frame */
    b.n = 0;
    make_cie(&b, 1, "zRS", r, 1);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), 0);
    assert_int_equal(ci.signal_frame, 1);

    /* version 3 (RA column as uleb), no augmentation: absptr FDEs */
    b.n = 0;
    make_cie(&b, 3, "", NULL, 0);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), 0);
    assert_int_equal(ci.fde_enc, 0x00);
    assert_int_equal(ci.zaug, 0);
    assert_int_equal(ci.insns[0], 0x0c);

    /* the old "eh": a pointer before the alignments */
    b.n = 0;
    make_cie(&b, 1, "eh", NULL, 0);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), 0);
    assert_int_equal(ci.data_align, -8);

    /* refusals */
    b.n = 0;
    make_cie(&b, 1, "zX", r, 1);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), -1);
    b.n = 0;
    make_cie(&b, 2, "zR", r, 1);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), -1);
    b.n = 0;
    make_cie(&b, 1, "zR", r, 1);
    assert_int_equal(eh_cie_parse(b.b, b.n - 1, 8, &ci), -1); /* its length runs past the data */
    uint32_t big = 0xffffffffu;
    memcpy(b.b, &big, 4);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), -1); /* 64-bit DWARF */
    b.n = 0;
    make_cie(&b, 1, "zR", r, 1);
    b.b[4] = 1; /* an FDE's CIE pointer, not a CIE id */
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), -1);
    /* an augmentation string without its NUL inside the CIE */
    b.n = 0;
    put32(&b, 7);
    put32(&b, 0);
    put8(&b, 1);
    put(&b, "zRx", 3);
    assert_int_equal(eh_cie_parse(b.b, b.n, 8, &ci), -1);
}

static void test_fde(void **state)
{
    (void)state;
    buf_t b = { .n = 0 };
    const uint8_t r[] = { 0x1b };
    size_t cie = make_cie(&b, 1, "zR", r, 1);
    size_t fde = b.n;
    put32(&b, 0);                             /* length, patched */
    put32(&b, (uint32_t)(fde + 4 - cie));     /* back to the CIE */
    put32(&b, (uint32_t)-0x100);              /* pc_begin: pcrel sdata4 */
    put32(&b, 0x40);                          /* pc_range */
    put8(&b, 2);                              /* augmentation data: 2 bytes */
    put8(&b, 0xaa);
    put8(&b, 0xbb);
    put8(&b, 0x41);                           /* advance_loc 1 */
    uint32_t len = (uint32_t)(b.n - fde - 4);
    memcpy(b.b + fde, &len, 4);
    const uint8_t *body, *end;
    uint32_t back;
    assert_int_equal(eh_fde_head(b.b + fde, b.n - fde, &back, &body, &end), 0);
    assert_int_equal(back, fde + 4 - cie);
    assert_ptr_equal(body, b.b + fde + 8);
    assert_ptr_equal(end, b.b + b.n);
    eh_cie_t ci;
    assert_int_equal(eh_cie_parse(b.b + fde + 4 - back, b.n, 8, &ci), 0);
    uint64_t begin, range;
    const uint8_t *q = body;
    assert_int_equal(eh_fde_range(&q, end, &ci, 8, 0x10000, &begin, &range), 0);
    assert_true(begin == 0x10000 - 0x100);
    assert_true(range == 0x40);
    assert_ptr_equal(q, end - 1); /* past the augmentation data: the instructions */
    assert_int_equal(*q, 0x41);
    /* the FDE cut short, a zero CIE pointer, a length past the data */
    q = body;
    assert_int_equal(eh_fde_range(&q, body + 6, &ci, 8, 0, &begin, &range), -1);
    assert_int_equal(eh_fde_head(b.b + cie, b.n, &back, &body, &end), -1);
    assert_int_equal(eh_fde_head(b.b + fde, b.n - fde - 1, &back, &body, &end), -1);
}

static void test_hdr(void **state)
{
    (void)state;
    buf_t b = { .n = 0 };
    put8(&b, 1);
    put8(&b, 0x1b); /* eh_frame_ptr: pcrel sdata4 */
    put8(&b, 0x03); /* fde_count: udata4 */
    put8(&b, 0x3b); /* table: datarel sdata4 */
    put32(&b, (uint32_t)-0x200);
    put32(&b, 2);
    put32(&b, 0x10);
    put32(&b, 0x20);
    put32(&b, 0x30);
    put32(&b, 0x40);
    uint64_t ehf, count;
    assert_int_equal(eh_hdr_parse(b.b, b.n, 0x8000, 8, &ehf, &count), 12);
    assert_true(ehf == 0x8000 + 4 - 0x200);
    assert_int_equal(count, 2);
    assert_int_equal(eh_hdr_parse(b.b, b.n - 1, 0x8000, 8, &ehf, &count), -1); /* count > data */
    b.b[0] = 2;
    assert_int_equal(eh_hdr_parse(b.b, b.n, 0x8000, 8, &ehf, &count), -1);
    b.b[0] = 1;
    b.b[3] = 0x03;
    assert_int_equal(eh_hdr_parse(b.b, b.n, 0x8000, 8, &ehf, &count), -1);
}

/* ---- this process's own call-frame information ------------------------------------------------ */

typedef struct own {
    uint64_t pc;
    const uint8_t *hdr;
    size_t hdr_size;
} own_t;

static int find_own(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    own_t *o = arg;
    const uint8_t *hdr = NULL;
    size_t hs = 0;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_EH_FRAME) {
            hdr = (const uint8_t *)lo;
            hs = ph->p_memsz;
        } else if (ph->p_type == PT_LOAD && o->pc >= lo && o->pc < lo + ph->p_memsz) {
            mine = 1;
        }
    }
    if (mine) {
        o->hdr = hdr;
        o->hdr_size = hs;
        return 1;
    }
    return 0;
}

static void test_own_object(void **state)
{
    (void)state;
    own_t o = { (uint64_t)(uintptr_t)&test_hdr + 4, NULL, 0 };
    dl_iterate_phdr(find_own, &o);
    assert_non_null(o.hdr);
    uint64_t base = (uint64_t)(uintptr_t)o.hdr, ehf, count;
    long t = eh_hdr_parse(o.hdr, o.hdr_size, base, 8, &ehf, &count);
    assert_true(t > 0);
    const int32_t *table = (const int32_t *)(o.hdr + t);
    int found = 0;
    for (uint64_t i = 0; i < count && !found; i++) {
        const uint8_t *fde = (const uint8_t *)(uintptr_t)(base + (uint64_t)(int64_t)table[2 * i + 1]);
        const uint8_t *body, *end;
        uint32_t back;
        eh_cie_t ci;
        uint64_t begin, range;
        if (eh_fde_head(fde, SIZE_MAX, &back, &body, &end) ||
            eh_cie_parse(fde + 4 - back, SIZE_MAX, 8, &ci) ||
            eh_fde_range(&body, end, &ci, 8, (uint64_t)(uintptr_t)body, &begin, &range))
            continue;
        /* the table's initial location is the FDE's own */
        assert_true(begin == base + (uint64_t)(int64_t)table[2 * i]);
        if (o.pc >= begin && o.pc < begin + range) {
            found = 1;
            assert_int_equal(ci.ra_col, 16);
            assert_int_equal(ci.code_align, 1);
            assert_int_equal(ci.data_align, -8);
        }
    }
    assert_true(found);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leb128), cmocka_unit_test(test_encoded),
        cmocka_unit_test(test_cie),    cmocka_unit_test(test_fde),
        cmocka_unit_test(test_hdr),    cmocka_unit_test(test_own_object),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
