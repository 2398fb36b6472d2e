/*
 * unwind_remote.c - unwinding a blocked thread from a copy of its stack; see unwind_remote.h.
 * Uses libunwind's generic API (not UNW_LOCAL_ONLY: that build cannot take custom accessors),
 * loaded with dlopen on first use, so that processes never unwound this way (and every process's
 * start-up) do not pay for loading it.
 */
#define _GNU_SOURCE
#include "unwind_remote.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "experiment/evformat.h"

#define PAGE 4096
#define NPAGES 64 /* the stack is copied page by page, on demand, up to 256 KiB above sp */

typedef struct target {
    uint64_t pc, sp, bp;
    int has_bp;                /* bp is known (a published caller's) */
    uint64_t base;             /* sp rounded down to a page */
    uint8_t state[NPAGES];     /* 0 not read, 1 copied, 2 unreadable */
    uint8_t (*copy)[PAGE];
    unwind_memo_t *memo;       /* records the words read (NULL: no memo) */
    pid_t pid;                 /* this process (getpid is a system call) */
} target_t;

static uint8_t stack_copy[NPAGES][PAGE];

/* Other memory a walk reads (the call-frame tables of the load objects: libunwind reads them a
 * byte at a time, each byte as an aligned word), copied a page at a time for the walk: a first
 * walk read ~65 words one system call each, most of them several times. Forgotten when the walk
 * ends, so memory that changes (a dlclose) is never read stale. */
#define NCACHED 16
static struct {
    uint64_t page[NCACHED]; /* its address; 0: empty */
    uint8_t ok[NCACHED];    /* the whole page was copied (else: read it a word at a time) */
    uint8_t data[NCACHED][PAGE];
    unsigned next; /* the slot the next page goes to (round robin) */
} other;
static unw_addr_space_t space;
static int space_failed;

/* libunwind-generic, resolved at first use */
static struct {
    unw_accessors_t *(*get_accessors)(unw_addr_space_t);
    unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
    int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
    int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, int, unw_word_t *);
    unw_addr_space_t *local_space;
} lib;

static int load_generic(void)
{
    void *h = dlopen("libunwind-x86_64.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
#define SYM(field, name) *(void **)&lib.field = dlsym(h, "_Ux86_64_" name)
    SYM(get_accessors, "get_accessors");
    SYM(create_addr_space, "create_addr_space");
    SYM(set_caching_policy, "set_caching_policy");
    SYM(init_remote, "init_remote");
    SYM(step, "step");
    SYM(get_reg, "get_reg");
    SYM(local_space, "local_addr_space");
#undef SYM
    return lib.get_accessors && lib.create_addr_space && lib.set_caching_policy &&
                   lib.init_remote && lib.step && lib.get_reg && lib.local_space
               ? 0
               : -1;
}

static int read_word(pid_t pid, uint64_t addr, unw_word_t *val)
{
    struct iovec l = { val, sizeof *val }, r = { (void *)(uintptr_t)addr, sizeof *val };
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof *val ? 0 : -UNW_EINVAL;
}

/* A word outside the stack copy: from the page cache of the walk, the page copied on a miss; a
 * word across two pages, or of a page that cannot be copied whole, is read alone. */
static int read_other(pid_t pid, uint64_t addr, unw_word_t *val)
{
    uint64_t page = addr & ~(uint64_t)(PAGE - 1), off = addr - page;
    if (!page || off > PAGE - sizeof *val)
        return read_word(pid, addr, val);
    unsigned i;
    for (i = 0; i < NCACHED && other.page[i] != page; i++) {
    }
    if (i == NCACHED) {
        i = other.next++ % NCACHED;
        struct iovec l = { other.data[i], PAGE }, r = { (void *)(uintptr_t)page, PAGE };
        other.page[i] = page;
        other.ok[i] = process_vm_readv(pid, &l, 1, &r, 1, 0) == PAGE;
    }
    if (!other.ok[i])
        return read_word(pid, addr, val);
    memcpy(val, other.data[i] + off, sizeof *val);
    return 0;
}

static int read_mem(target_t *t, unw_word_t addr, unw_word_t *val);

/* Every word a walk reads, for the memo: a word read twice is kept once; when they do not fit the
 * memo is given up (n = UINT32_MAX until the walk ends). */
static void memo_note(target_t *t, uint64_t addr, uint64_t val)
{
    unwind_memo_t *m = t->memo;
    if (!m || m->n == UINT32_MAX)
        return;
    for (uint32_t i = m->n; i-- > 0;)
        if (m->addr[i] == addr)
            return;
    if (m->n == UNWIND_MEMO_WORDS) {
        m->n = UINT32_MAX;
        return;
    }
    m->addr[m->n] = addr;
    m->val[m->n++] = val;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    (void)as;
    target_t *t = arg;
    if (write)
        return -UNW_EINVAL;
    int rc = read_mem(t, addr, val);
    if (rc == 0)
        memo_note(t, addr, *val);
    else if (t->memo)
        t->memo->n = UINT32_MAX; /* a failed read is not a value to compare */
    return rc;
}

static int read_mem(target_t *t, unw_word_t addr, unw_word_t *val)
{
    uint64_t off = addr - t->base;
    if (addr >= t->base && off / PAGE < NPAGES && off % PAGE <= PAGE - sizeof *val) {
        size_t pg = (size_t)(off / PAGE);
        if (!t->state[pg]) {
            struct iovec l = { t->copy[pg], PAGE }, r = { (void *)(uintptr_t)(t->base + pg * PAGE),
                                                           PAGE };
            t->state[pg] = process_vm_readv(t->pid, &l, 1, &r, 1, 0) == PAGE ? 1 : 2;
        }
        if (t->state[pg] == 2)
            return -UNW_EINVAL;
        memcpy(val, t->copy[pg] + off % PAGE, sizeof *val);
        return 0;
    }
    return read_other(t->pid, addr, val);
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
                      void *arg)
{
    (void)as;
    target_t *t = arg;
    if (write)
        return -UNW_EINVAL;
    if (reg == UNW_X86_64_RIP)
        *val = t->pc;
    else if (reg == UNW_X86_64_RSP)
        *val = t->sp;
    else if (reg == UNW_X86_64_RBP && t->has_bp)
        *val = t->bp;
    else
        return -UNW_EBADREG;
    return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
                        void *arg)
{
    (void)as, (void)reg, (void)val, (void)write, (void)arg;
    return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
    (void)as, (void)c, (void)arg;
    return -UNW_EINVAL;
}

static int load_space(void)
{
    if (!space && !space_failed) {
        space_failed = 1;
        if (load_generic() == 0) {
            unw_accessors_t acc = *lib.get_accessors(*lib.local_space);
            acc.access_mem = access_mem;
            acc.access_reg = access_reg;
            acc.access_fpreg = access_fpreg;
            acc.resume = resume;
            acc.get_proc_name = NULL;
            space = lib.create_addr_space(&acc, 0);
            if (space) {
                lib.set_caching_policy(space, UNW_CACHE_GLOBAL);
                space_failed = 0;
            }
        }
    }
    return space ? 0 : -1;
}

/* Unwinds from t's registers into out[n..max): the first frame is t->pc. With stop_sp, a frame
 * whose stack pointer is at or above it is not taken and *cut is set. Returns the new n. */
static uint32_t walk(target_t *t, uint64_t *out, uint32_t n, uint32_t max, uint32_t *flags,
                     uint64_t stop_sp, int *cut)
{
    if (n == max) {
        *flags |= EXP_STACK_TRUNCATED;
        return n;
    }
    out[n++] = t->pc;
    unw_cursor_t cur;
    if (lib.init_remote(&cur, space, t) < 0) {
        *flags |= EXP_STACK_UNWIND_FAIL;
        return n;
    }
    for (;;) {
        int s = lib.step(&cur);
        if (s == 0)
            break; /* the outermost frame */
        if (s < 0) {
            *flags |= EXP_STACK_UNWIND_FAIL;
            break;
        }
        unw_word_t ip, sp;
        if (lib.get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
            break;
        if (stop_sp && (lib.get_reg(&cur, UNW_REG_SP, &sp) < 0 || sp >= stop_sp)) {
            *cut = 1;
            break;
        }
        if (n == max) {
            *flags |= EXP_STACK_TRUNCATED;
            break;
        }
        out[n++] = ip;
    }
    return n;
}

/* The published caller still stands where it was published: its return address is at sp - 8,
 * above the blocked thread's stack pointer and within the part of the stack that is copied. */
static int caller_valid(target_t *t, const fu_regs_t *c)
{
    if (!c || !c->ip || c->sp <= t->sp || c->sp - 8 < t->base || c->sp - t->base > NPAGES * PAGE)
        return 0;
    unw_word_t ra;
    return access_mem(space, c->sp - 8, &ra, 0, t) == 0 && ra == c->ip;
}

static uint32_t unwind_walks(target_t *t, const fu_regs_t *caller, uint64_t *out, uint32_t max,
                             uint32_t *flags, int *spliced);

uint32_t unwind_blocked(uint64_t pc, uint64_t sp, const fu_regs_t *caller, uint64_t *out,
                        uint32_t max, uint32_t *flags, int *spliced, unwind_memo_t *memo)
{
    *flags = 0;
    *spliced = 0;
    if (memo) {
        memset(memo, 0, offsetof(unwind_memo_t, addr));
        memo->pc = pc;
        memo->sp = sp;
        if (caller)
            memo->caller = *caller;
    }
    if (!max || !pc)
        return 0;
    if (load_space() < 0) {
        out[0] = pc;
        *flags = EXP_STACK_UNWIND_FAIL;
        return 1;
    }
    target_t t = { .pc = pc, .sp = sp, .base = sp & ~(uint64_t)(PAGE - 1), .copy = stack_copy,
                   .memo = memo, .pid = getpid() };
    memset(other.page, 0, sizeof other.page); /* (each walk reads memory anew) */
    uint32_t n = unwind_walks(&t, caller, out, max, flags, spliced);
    if (memo && (memo->n == UINT32_MAX || !n))
        memo->n = 0;
    else if (memo && !memo->n)
        memo->pc = 0; /* read nothing: a failed start, nothing to compare */
    return n;
}

static uint32_t unwind_walks(target_t *t0, const fu_regs_t *caller, uint64_t *out, uint32_t max,
                             uint32_t *flags, int *spliced)
{
    target_t t = *t0;
    if (!caller_valid(&t, caller))
        return walk(&t, out, 0, max, flags, 0, NULL);
    /* the frames below the caller from the kernel's registers (they end at the interposer's
     * frame, or where that walk failed: then a libc frame or two between is missing) ... */
    int cut = 0;
    uint32_t n = walk(&t, out, 0, max, flags, caller->sp, &cut);
    if (*flags & EXP_STACK_TRUNCATED)
        return n;
    /* ... and the caller's and above from the published registers */
    *flags = 0;
    t.pc = caller->ip;
    t.sp = caller->sp;
    t.bp = caller->bp;
    t.has_bp = 1;
    *spliced = 1;
    return walk(&t, out, n, max, flags, 0, NULL);
}

int unwind_memo_same(const unwind_memo_t *m, uint64_t pc, uint64_t sp, const fu_regs_t *caller)
{
    if (!m->pc || !m->n || m->n > UNWIND_MEMO_WORDS || m->pc != pc || m->sp != sp)
        return 0;
    fu_regs_t none = { 0 };
    const fu_regs_t *c = caller ? caller : &none;
    if (c->ip != m->caller.ip || c->sp != m->caller.sp || c->bp != m->caller.bp)
        return 0;
    uint64_t now[UNWIND_MEMO_WORDS];
    struct iovec l[UNWIND_MEMO_WORDS], r[UNWIND_MEMO_WORDS];
    for (uint32_t i = 0; i < m->n; i++) {
        l[i] = (struct iovec){ &now[i], sizeof now[i] };
        r[i] = (struct iovec){ (void *)(uintptr_t)m->addr[i], sizeof now[i] };
    }
    ssize_t want = (ssize_t)(m->n * sizeof now[0]);
    if (process_vm_readv(getpid(), l, m->n, r, m->n, 0) != want)
        return 0;
    return memcmp(now, m->val, m->n * sizeof now[0]) == 0;
}
