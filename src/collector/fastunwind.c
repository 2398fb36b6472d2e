/*
 * fastunwind.c - cached call-frame-information unwinding for the tracing interposers; see
 * fastunwind.h. Sections: encoded values, load objects, CFI (finding the FDE, running the CFA
 * program into a rule), the rule cache, the walk.
 */
#define _GNU_SOURCE
#include "fastunwind.h"

#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "base/ehframe.h"
#include "base/spinlock.h"
#include "experiment/evformat.h"

extern void *__libc_stack_end; /* the main thread's stack pointer at process start (ld.so) */

/* A rule, packed in 64 bits: how to find the caller's frame from a frame. */
#define R_OFF_MASK 0xffffffffull  /* CFA offset (int32) */
#define R_BPOFF_SHIFT 32          /* where rbp was saved, CFA + 8 * int8 */
#define R_CFA_BP (1ull << 40)     /* the CFA is rbp-based (else rsp-based) */
#define R_BP_SAVED (1ull << 41)   /* rbp was saved in the frame */
#define R_CFA_DEREF (1ull << 42)  /* CFA = *(base + offset) (a realigned frame) */
#define R_END (1ull << 43)        /* the return address is undefined: the outermost frame */
#define R_FAIL (1ull << 44)       /* no CFI, or a rule this unwinder does not follow */
#define R_VALID (1ull << 45)
#define R_BP_AT_BP (1ull << 46)   /* rbp was saved at the old rbp + 8 * int8, not at the CFA */
#define R_GEN_SHIFT 48

enum { DW_RBP = 6, DW_RSP = 7, DW_RA = 16 };

uint32_t fu_gen = 1; /* atomic: bumped by fu_forget */

/* ---- encoded values (base/ehframe.h) --------------------------------------------------------- */

/* LEB128 numbers of CFA instructions: a truncated or overlong one reads as 0 and ends the
 * instructions (*p at end). */
static uint64_t uleb(const uint8_t **p, const uint8_t *end)
{
    uint64_t v;
    if (leb128_get(p, end, &v) == 0)
        return v;
    *p = end;
    return 0;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end)
{
    int64_t v;
    if (leb128_get_sleb(p, end, &v) == 0)
        return v;
    *p = end;
    return 0;
}

/* ---- load objects ----------------------------------------------------------------------------- */

typedef struct fu_obj {
    uint64_t lo, hi;    /* an executable segment */
    const uint8_t *hdr; /* its object's .eh_frame_hdr, or NULL */
    size_t hdr_size;
    uint32_t gen;
} fu_obj_t;

#define MAX_OBJS 4096
static fu_obj_t *objs;   /* append-only; a full table is replaced (the old one is kept) */
static uint32_t nobjs;   /* atomic: published entries */
static int objs_lock;    /* spinlock for appending */

static const fu_obj_t *obj_find(uint64_t pc, uint32_t gen)
{
    fu_obj_t *t = __atomic_load_n(&objs, __ATOMIC_ACQUIRE);
    uint32_t n = __atomic_load_n(&nobjs, __ATOMIC_ACQUIRE);
    for (uint32_t i = n; t && i-- > 0;)
        if (t[i].gen == gen && pc >= t[i].lo && pc < t[i].hi)
            return &t[i];
    return NULL;
}

typedef struct scan {
    fu_obj_t *found; /* scratch of MAX_OBJS entries */
    uint32_t n;
    uint32_t gen;
} scan_t;

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    scan_t *s = arg;
    (void)size;
    const uint8_t *hdr = NULL;
    size_t hdr_size = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) {
            hdr = (const uint8_t *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            hdr_size = info->dlpi_phdr[i].p_memsz;
        }
    for (int i = 0; i < info->dlpi_phnum && s->n < MAX_OBJS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        s->found[s->n++] = (fu_obj_t){ lo, lo + ph->p_memsz, hdr, hdr_size, s->gen };
    }
    return 0;
}

/* Adds the executable segments dl_iterate_phdr knows and this table does not. */
static void objs_refresh(uint32_t gen)
{
    scan_t s = { NULL, 0, gen };
    s.found = mmap(NULL, MAX_OBJS * sizeof *s.found, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s.found == MAP_FAILED)
        return;
    dl_iterate_phdr(scan_cb, &s); /* the loader's lock; none of ours is held */
    spin_lock(&objs_lock);
    if (!objs || nobjs + s.n > MAX_OBJS) {
        /* a new table with the current entries; the old one stays mapped for its readers */
        fu_obj_t *t = mmap(NULL, MAX_OBJS * sizeof *t, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t != MAP_FAILED) {
            uint32_t k = 0;
            for (uint32_t i = 0; objs && i < nobjs; i++)
                if (objs[i].gen == gen)
                    t[k++] = objs[i];
            __atomic_store_n(&nobjs, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&objs, t, __ATOMIC_RELEASE);
            __atomic_store_n(&nobjs, k, __ATOMIC_RELEASE);
        }
    }
    for (uint32_t i = 0; objs && i < s.n && nobjs < MAX_OBJS; i++) {
        int known = 0;
        for (uint32_t j = 0; j < nobjs && !known; j++)
            known = objs[j].gen == gen && objs[j].lo == s.found[i].lo;
        if (!known) {
            objs[nobjs] = s.found[i];
            __atomic_store_n(&nobjs, nobjs + 1, __ATOMIC_RELEASE);
        }
    }
    spin_unlock(&objs_lock);
    munmap(s.found, MAX_OBJS * sizeof *s.found);
}

/* ---- CFI: the FDE of a pc, its CFA program as a rule ------------------------------------------ */

/* The FDE covering pc, from the object's .eh_frame_hdr search table (hdr_size bytes): returns
 * its instructions and sets *end, *pc_begin and its CIE, or returns NULL. The FDEs and CIEs are
 * read in the loaded object, bounded by their own lengths. */
static const uint8_t *fde_find(const uint8_t *hdr, size_t hdr_size, uint64_t pc,
                               const uint8_t **fde_end, uint64_t *pc_begin, eh_cie_t *ci)
{
    if (!hdr)
        return NULL;
    uint64_t base = (uint64_t)(uintptr_t)hdr, eh_frame, count;
    long table_off = eh_hdr_parse(hdr, hdr_size, base, 8, &eh_frame, &count);
    if (table_off < 0)
        return NULL;
    const int32_t *table = (const int32_t *)(hdr + table_off);
    size_t lo = 0, hi = count;
    while (hi - lo > 1) { /* last entry with initial location <= pc */
        size_t mid = (lo + hi) / 2;
        if (base + (uint64_t)(int64_t)table[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if (base + (uint64_t)(int64_t)table[2 * lo] > pc)
        return NULL;
    const uint8_t *fde = (const uint8_t *)(uintptr_t)(base + (uint64_t)(int64_t)table[2 * lo + 1]);
    const uint8_t *q, *end;
    uint32_t back;
    if (eh_fde_head(fde, SIZE_MAX, &back, &q, &end) ||
        eh_cie_parse(fde + 4 - back, SIZE_MAX, 8, ci))
        return NULL;
    uint64_t begin, range;
    if (eh_fde_range(&q, end, ci, 8, (uint64_t)(uintptr_t)q, &begin, &range))
        return NULL;
    if (pc < begin || pc >= begin + range)
        return NULL;
    *fde_end = end;
    *pc_begin = begin;
    return q;
}

typedef struct cfa_state {
    int cfa_reg;      /* DW_RSP or DW_RBP; -1 unsupported */
    int64_t cfa_off;
    int cfa_deref;
    int bp_saved;     /* rbp saved at CFA + bp_off (bp_at_bp: at the old rbp + bp_off) */
    int bp_at_bp;
    int64_t bp_off;
    int bp_bad;       /* rbp recovered in a way not followed */
    int ra_undef;
    int ra_bad;
} cfa_state_t;

/* A register saved at CFA + off: what the walk needs of rbp and the return address. */
static void saved_at(cfa_state_t *st, uint64_t reg, int64_t off)
{
    if (reg == DW_RBP) {
        st->bp_saved = 1;
        st->bp_at_bp = 0;
        st->bp_bad = 0;
        st->bp_off = off;
    } else if (reg == DW_RA) {
        st->ra_undef = 0;
        st->ra_bad = off != -8;
    }
}

/* A register back to its rule at the start of the function (DW_CFA_restore). */
static void restore_reg(cfa_state_t *st, const cfa_state_t *initial, uint64_t reg)
{
    if (reg == DW_RBP) {
        st->bp_saved = initial->bp_saved;
        st->bp_at_bp = initial->bp_at_bp;
        st->bp_off = initial->bp_off;
        st->bp_bad = initial->bp_bad;
    } else if (reg == DW_RA) {
        st->ra_undef = initial->ra_undef;
        st->ra_bad = initial->ra_bad;
    }
}

/* Runs CFA instructions [p, end) from loc until the location passes target. Returns -1 on an
 * instruction it cannot follow for rsp, rbp or the return address. */
static int run_cfa(const uint8_t *p, const uint8_t *end, uint64_t *loc, uint64_t target,
                   uint64_t code_align, int64_t data_align, uint8_t enc, cfa_state_t *st,
                   const cfa_state_t *initial)
{
    cfa_state_t stack[8];
    int depth = 0;
    while (p < end) {
        uint8_t op = *p++;
        uint64_t delta = 0, reg, off;
        int advance = 0;
        switch (op & 0xc0) {
        case 0x40:
            delta = (uint64_t)(op & 0x3f) * code_align;
            advance = 1;
            break;
        case 0x80:
            reg = op & 0x3f;
            off = uleb(&p, end);
            saved_at(st, reg, (int64_t)off * data_align);
            continue;
        case 0xc0:
            restore_reg(st, initial, op & 0x3f);
            continue;
        default:
            break;
        }
        if (!advance) {
            switch (op) {
            case 0x00: /* nop */
                continue;
            case 0x01: { /* set_loc */
                uint64_t nl;
                if (eh_read_encoded(&p, end, enc, 8, (uint64_t)(uintptr_t)p, 0, &nl))
                    return -1;
                if (nl > target)
                    return 0;
                *loc = nl;
                continue;
            }
            case 0x02: /* advance_loc1, advance_loc2, advance_loc4 */
            case 0x03:
            case 0x04: {
                uint64_t d;
                if (eh_read_fixed(&p, end, op == 0x02 ? 1 : op == 0x03 ? 2 : 4, 0, &d))
                    return -1;
                delta = d * code_align;
                advance = 1;
                break;
            }
            case 0x05: /* offset_extended */
            case 0x11: /* offset_extended_sf */
            case 0x2f: { /* GNU_negative_offset_extended */
                reg = uleb(&p, end);
                int64_t o = op == 0x11 ? sleb(&p, end) * data_align
                            : op == 0x05 ? (int64_t)uleb(&p, end) * data_align
                                         : -(int64_t)uleb(&p, end) * data_align;
                saved_at(st, reg, o);
                continue;
            }
            case 0x06: /* restore_extended */
                restore_reg(st, initial, uleb(&p, end));
                continue;
            case 0x07: /* undefined */
            case 0x08: /* same_value */
                reg = uleb(&p, end);
                if (reg == DW_RBP) {
                    st->bp_saved = 0;
                    st->bp_bad = op == 0x07;
                } else if (reg == DW_RA) {
                    st->ra_undef = op == 0x07;
                    st->ra_bad = op == 0x08;
                }
                continue;
            case 0x09: /* register */
                reg = uleb(&p, end);
                uleb(&p, end);
                if (reg == DW_RBP)
                    st->bp_bad = 1;
                else if (reg == DW_RA)
                    st->ra_bad = 1;
                continue;
            case 0x0a: /* remember_state */
                if (depth == 8)
                    return -1;
                stack[depth++] = *st;
                continue;
            case 0x0b: /* restore_state */
                if (depth == 0)
                    return -1;
                *st = stack[--depth];
                continue;
            case 0x0c: /* def_cfa */
                reg = uleb(&p, end);
                st->cfa_off = (int64_t)uleb(&p, end);
                st->cfa_reg = reg == DW_RSP || reg == DW_RBP ? (int)reg : -1;
                st->cfa_deref = 0;
                continue;
            case 0x12: /* def_cfa_sf */
                reg = uleb(&p, end);
                st->cfa_off = sleb(&p, end) * data_align;
                st->cfa_reg = reg == DW_RSP || reg == DW_RBP ? (int)reg : -1;
                st->cfa_deref = 0;
                continue;
            case 0x0d: /* def_cfa_register */
                reg = uleb(&p, end);
                st->cfa_reg = reg == DW_RSP || reg == DW_RBP ? (int)reg : -1;
                continue;
            case 0x0e: /* def_cfa_offset */
                st->cfa_off = (int64_t)uleb(&p, end);
                continue;
            case 0x13: /* def_cfa_offset_sf */
                st->cfa_off = sleb(&p, end) * data_align;
                continue;
            case 0x0f: { /* def_cfa_expression: only DW_OP_breg6/7 N; DW_OP_deref (realignment) */
                uint64_t n = uleb(&p, end);
                const uint8_t *e = p, *eend = p + n;
                p = eend;
                st->cfa_reg = -1;
                if (n >= 3 && (e[0] == 0x76 || e[0] == 0x77)) {
                    int r = e[0] == 0x76 ? DW_RBP : DW_RSP;
                    e++;
                    int64_t o = sleb(&e, eend);
                    if (e + 1 == eend && *e == 0x06) {
                        st->cfa_reg = r;
                        st->cfa_off = o;
                        st->cfa_deref = 1;
                    }
                }
                continue;
            }
            case 0x10: /* expression: only rbp saved at DW_OP_breg6 N (a realigned frame) */
            case 0x16: { /* val_expression */
                reg = uleb(&p, end);
                uint64_t n = uleb(&p, end);
                const uint8_t *e = p, *eend = p + n;
                p = eend;
                if (reg == DW_RBP && op == 0x10 && n >= 2 && e[0] == 0x76) {
                    e++;
                    int64_t o = sleb(&e, eend);
                    st->bp_bad = e != eend;
                    st->bp_saved = 1;
                    st->bp_at_bp = 1;
                    st->bp_off = o;
                } else if (reg == DW_RBP) {
                    st->bp_bad = 1;
                } else if (reg == DW_RA) {
                    st->ra_bad = 1;
                }
                continue;
            }
            case 0x14: /* val_offset */
            case 0x15: /* val_offset_sf */
                reg = uleb(&p, end);
                if (op == 0x14)
                    uleb(&p, end);
                else
                    sleb(&p, end);
                if (reg == DW_RBP)
                    st->bp_bad = 1;
                else if (reg == DW_RA)
                    st->ra_bad = 1;
                continue;
            case 0x2e: /* GNU_args_size */
                uleb(&p, end);
                continue;
            default:
                return -1;
            }
        }
        if (*loc + delta > target)
            return 0;
        *loc += delta;
    }
    return 0;
}

/* The rule for a code address pc (a return address minus one), or R_FAIL. */
static uint64_t rule_compute(uint64_t pc, uint32_t gen)
{
    const fu_obj_t *o = obj_find(pc, gen);
    if (!o) {
        objs_refresh(gen);
        o = obj_find(pc, gen);
    }
    if (!o || !o->hdr)
        return R_FAIL;
    const uint8_t *fde_end;
    uint64_t begin;
    eh_cie_t ci;
    const uint8_t *q = fde_find(o->hdr, o->hdr_size, pc, &fde_end, &begin, &ci);
    if (!q || ci.ra_col != DW_RA || ci.signal_frame)
        return R_FAIL;
    cfa_state_t st = { .cfa_reg = DW_RSP, .cfa_off = 8 }, initial;
    uint64_t loc = begin;
    if (run_cfa(ci.insns, ci.end, &loc, UINT64_MAX, ci.code_align, ci.data_align, ci.fde_enc, &st,
                &st) < 0)
        return R_FAIL;
    initial = st;
    loc = begin;
    if (run_cfa(q, fde_end, &loc, pc, ci.code_align, ci.data_align, ci.fde_enc, &st, &initial) < 0)
        return R_FAIL;
    if (st.ra_undef)
        return R_VALID | R_END;
    if (st.cfa_reg < 0 || st.ra_bad || st.bp_bad || st.cfa_off > INT32_MAX ||
        st.cfa_off < INT32_MIN || (st.bp_saved && (st.bp_off % 8 || st.bp_off < -1024 ||
                                                   st.bp_off > 1016)))
        return R_FAIL;
    uint64_t r = R_VALID | ((uint64_t)(uint32_t)(int32_t)st.cfa_off & R_OFF_MASK);
    if (st.cfa_reg == DW_RBP)
        r |= R_CFA_BP;
    if (st.cfa_deref)
        r |= R_CFA_DEREF;
    if (st.bp_saved)
        r |= R_BP_SAVED | (uint64_t)(uint8_t)(int8_t)(st.bp_off / 8) << R_BPOFF_SHIFT;
    if (st.bp_saved && st.bp_at_bp)
        r |= R_BP_AT_BP;
    return r;
}

/* ---- the rule cache --------------------------------------------------------------------------- */

#define CACHE_BITS 18
#define CACHE_SIZE (1u << CACHE_BITS)
#define CACHE_PROBES 16
#define KEY_BUSY (1ull << 63) /* an entry being written */

typedef struct centry {
    uint64_t key; /* pc; 0 empty */
    uint64_t rule;
} centry_t;

static centry_t *cache;
static int cache_failed;

static centry_t *cache_get(void)
{
    centry_t *c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    if (c || cache_failed)
        return c;
    void *m = mmap(NULL, CACHE_SIZE * sizeof(centry_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        cache_failed = 1;
        return NULL;
    }
    centry_t *expected = NULL;
    if (!__atomic_compare_exchange_n(&cache, &expected, (centry_t *)m, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        munmap(m, CACHE_SIZE * sizeof(centry_t));
        return expected;
    }
    return m;
}

/* The rule of pc from the cache c (NULL: none), computed and inserted on a miss. */
static uint64_t rule_of(centry_t *c, uint64_t pc, uint32_t gen)
{
    uint64_t want_gen = (uint64_t)(gen & 0xffff) << R_GEN_SHIFT;
    centry_t *slot = NULL;
    if (c) {
        uint32_t h = (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS));
        for (uint32_t i = 0; i < CACHE_PROBES; i++) {
            centry_t *e = &c[(h + i) & (CACHE_SIZE - 1)];
            uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
            if (k == pc) {
                uint64_t r = __atomic_load_n(&e->rule, __ATOMIC_ACQUIRE);
                if (__atomic_load_n(&e->key, __ATOMIC_ACQUIRE) == pc &&
                    (r & (0xffffull << R_GEN_SHIFT)) == want_gen)
                    return r;
                slot = e; /* stale: recompute into the same entry */
                break;
            }
            if (k == 0) {
                slot = e;
                break;
            }
        }
    }
    uint64_t r = rule_compute(pc, gen) | want_gen;
    if (slot) {
        uint64_t k = __atomic_load_n(&slot->key, __ATOMIC_ACQUIRE);
        if ((k == 0 || k == pc) &&
            __atomic_compare_exchange_n(&slot->key, &k, pc | KEY_BUSY, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            __atomic_store_n(&slot->rule, r, __ATOMIC_RELEASE);
            __atomic_store_n(&slot->key, pc, __ATOMIC_RELEASE);
        }
    }
    return r;
}

/* A small per-thread copy of the rules used last (direct-mapped, one cache line per four):
 * hot call paths then never leave the L1 cache. */
#define L0_SIZE 256
static __thread centry_t l0[L0_SIZE] __attribute__((tls_model("initial-exec")));

static inline __attribute__((always_inline)) uint64_t rule_fast(uint64_t pc, uint64_t want_gen)
{
    const centry_t *e = &l0[(pc ^ (pc >> 8)) & (L0_SIZE - 1)];
    if (e->key == pc && (e->rule & (0xffffull << R_GEN_SHIFT)) == want_gen)
        return e->rule;
    return 0;
}

static inline void rule_keep(uint64_t pc, uint64_t rule)
{
    centry_t *e = &l0[(pc ^ (pc >> 8)) & (L0_SIZE - 1)];
    e->key = pc;
    e->rule = rule;
}

void fu_after_fork(void)
{
    objs_lock = 0;
}

void fu_forget(void)
{
    __atomic_add_fetch(&fu_gen, 1, __ATOMIC_ACQ_REL);
}

/* ---- the walk --------------------------------------------------------------------------------- */

uint64_t fu_stack_hi(int is_main_thread)
{
    if (is_main_thread)
        return (uint64_t)(uintptr_t)__libc_stack_end;
    return (uint64_t)pthread_self(); /* the descriptor sits above the thread's stack */
}

/* Reads a stack cell, noting it for memoization. */
static inline uint64_t cell(fu_cells_t *cells, uint64_t addr)
{
    uint64_t v = *(const uint64_t *)(uintptr_t)addr;
    if (cells) {
        if (cells->n < cells->max) {
            cells->addr[cells->n] = addr;
            cells->val[cells->n++] = v;
        } else {
            cells->ok = 0;
        }
    }
    return v;
}

uint32_t fu_unwind(fu_regs_t r, uint64_t stack_hi, uint64_t *out, uint32_t max,
                   uint32_t *flags, fu_cells_t *cells, const fu_splice_t *splice)
{
    uint32_t n = 0, gen = __atomic_load_n(&fu_gen, __ATOMIC_RELAXED);
    uint64_t want_gen = (uint64_t)(gen & 0xffff) << R_GEN_SHIFT;
    centry_t *c = cache_get();
    uint64_t ip = r.ip, sp = r.sp, bp = r.bp;
    int bp0 = 1;          /* bp still holds the register value the walk started with */
    uint64_t bp_at = 0;   /* where bp was last read from: a cell only once a rule uses bp */
    if (cells) {
        cells->n = 0;
        cells->ok = 1;
        cells->uses_bp = 0;
    }
    *flags = 0;
    while (ip) {
        if (splice && ip == splice->ip && splice->to.sp > sp) {
            ip = splice->to.ip;
            sp = splice->to.sp;
            bp = splice->to.bp;
            bp0 = 0;
            bp_at = 0;
            if (cells)
                cells->ok = 0;
            continue;
        }
        if (n == max) {
            *flags |= EXP_STACK_TRUNCATED;
            break;
        }
        out[n++] = ip;
        uint64_t rule = rule_fast(ip - 1, want_gen);
        if (__builtin_expect(!rule, 0)) {
            rule = rule_of(c, ip - 1, gen);
            rule_keep(ip - 1, rule);
        }
        if (rule & (R_END | R_FAIL)) {
            if (rule & R_FAIL)
                *flags |= EXP_STACK_UNWIND_FAIL;
            break;
        }
        if (cells && (rule & (R_CFA_BP | R_BP_AT_BP))) {
            if (bp0)
                cells->uses_bp = 1;
            else if (bp_at)
                cell(cells, bp_at);
            bp_at = 0;
        }
        uint64_t cfa = ((rule & R_CFA_BP) ? bp : sp) + (uint64_t)(int64_t)(int32_t)(rule & R_OFF_MASK);
        if (__builtin_expect(rule & R_CFA_DEREF, 0)) {
            if (cfa < sp || cfa + 8 > stack_hi) {
                *flags |= EXP_STACK_UNWIND_FAIL;
                break;
            }
            cfa = cell(cells, cfa);
        }
        if (cfa < sp + 8 || cfa > stack_hi) {
            *flags |= EXP_STACK_UNWIND_FAIL;
            break;
        }
        uint64_t ra = cell(cells, cfa - 8);
        if (rule & R_BP_SAVED) {
            uint64_t at = ((rule & R_BP_AT_BP) ? bp : cfa) +
                          (uint64_t)(int64_t)(int8_t)(rule >> R_BPOFF_SHIFT) * 8;
            if (at < sp || at + 8 > stack_hi) {
                *flags |= EXP_STACK_UNWIND_FAIL;
                break;
            }
            bp = *(const uint64_t *)(uintptr_t)at;
            bp_at = at;
            bp0 = 0;
        }
        sp = cfa;
        ip = ra;
    }
    return n;
}
