/*
 * blocks.c - profiled blocks in the collector (contract in blocks.h).
 *
 * Sections: state; naming functions (symbol tables); the registry; per-thread state; the entry
 * points; log records; settings, ends and forks.
 *
 * Cost (bench/blocks.py, docs/BENCHMARKS.md): an entry and exit is two clock reads (the TSC,
 * trace_now), a lookup in a per-thread cache of the block's id, and the statistics update.
 */
#define _GNU_SOURCE
#include "blocks.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/spinlock.h"
#include "blockctr.h"
#include "blockstat.h"
#include "experiment/blocksel.h"
#include "threads.h"
#include "trace.h"
#include "tracefast.h"
#include "experiment/logrec.h"

/* ---- state --------------------------------------------------------------------------------- */

#define BLK_MAX 65536     /* blocks one process may name */
#define BLK_HASH (2 * BLK_MAX)
#define BLK_THREADS 4096  /* threads whose profile the end of the image can find */
#define BLK_SWITCHES 1024 /* names and groups switched on or off at run time */
#define BLK_CACHE 1024    /* per-thread cache of block ids (direct mapped) */
#define BLK_LINE_MAX (60 * 1024) /* rows of a profile are cut into lines of about this size */

enum { Q_WALL = 0, Q_CPU = 1, Q_CTR = 2 }; /* Q_CTR + k: the k-th block counter (blockctr.h) */

typedef struct blk_def {
    const char *name, *group;
    uint64_t addr; /* a function's entry (-finstrument-functions), 0 for a named block */
} blk_def_t;

static struct {
    int on;    /* blocks are recorded in this image */
    int trace; /* and their timeline: a BLOCK record at each entry and exit (block_trace) */
    int final; /* the image is ending: nothing more is recorded */
    unsigned nq;
    int q[BS_MAXQ];
    int has_sel;
    blocksel_t sel;
    int lock;
    blk_def_t *defs;
    uint32_t ndefs;
    uint32_t *hname, *haddr; /* id + 1, open addressing */
    uint8_t *active;         /* per id: recorded now (selective file and switches) */
    char *arena;             /* names */
    size_t arena_used, arena_cap;
    struct { const char *name; int on; } sw[BLK_SWITCHES];
    unsigned nsw;
    struct blk_thr *threads[BLK_THREADS];
    int membarrier_ok;
    uint32_t warned_full;
    unsigned nctr;     /* counters among the quantities */
    int warned_ctr;
} B;

/* ---- naming functions: the symbol table of the object a function is in ---------------------- */

typedef struct symtab {
    uint64_t bias;
    char path[256];
    const char *strs;
    const Elf64_Sym *syms;
    uint64_t *sorted; /* (value << 24 | index) would not fit: pairs value, index */
    size_t n;
} symtab_t;

static symtab_t symtabs[32];
static unsigned nsymtabs;

static int cmp_pair(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Loads the function symbols of the ELF file path (.symtab, else .dynsym) sorted by value. */
static int symtab_load(symtab_t *s, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    void *m = MAP_FAILED;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof(Elf64_Ehdr))
        m = mmap(0, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    size_t size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff > size || eh->e_shnum > (size - eh->e_shoff) / sizeof(Elf64_Shdr))
        goto bad;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)((const char *)m + eh->e_shoff);
    const Elf64_Shdr *sym = NULL;
    for (unsigned pass = 0; pass < 2 && !sym; pass++)
        for (unsigned i = 0; i < eh->e_shnum; i++)
            if (sh[i].sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB))
                sym = &sh[i];
    if (!sym || sym->sh_link >= eh->e_shnum || sym->sh_offset > size ||
        sym->sh_size > size - sym->sh_offset || sh[sym->sh_link].sh_offset > size ||
        sh[sym->sh_link].sh_size > size - sh[sym->sh_link].sh_offset)
        goto bad;
    s->syms = (const Elf64_Sym *)((const char *)m + sym->sh_offset);
    s->strs = (const char *)m + sh[sym->sh_link].sh_offset;
    size_t nsyms = sym->sh_size / sizeof(Elf64_Sym), strsz = sh[sym->sh_link].sh_size;
    size_t len = (nsyms * 16 + 4095) & ~(size_t)4095;
    s->sorted = mmap(0, len ? len : 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (s->sorted == MAP_FAILED)
        goto bad;
    s->n = 0;
    for (size_t i = 0; i < nsyms; i++)
        if (ELF64_ST_TYPE(s->syms[i].st_info) == STT_FUNC && s->syms[i].st_value &&
            s->syms[i].st_name < strsz && memchr(s->strs + s->syms[i].st_name, 0,
                                                  strsz - s->syms[i].st_name)) {
            s->sorted[2 * s->n] = s->syms[i].st_value;
            s->sorted[2 * s->n + 1] = i;
            s->n++;
        }
    qsort(s->sorted, s->n, 16, cmp_pair);
    return 0;
bad:
    munmap(m, size);
    return -1;
}

/* The name of the function that starts at fn, into out; 0 or -1. */
static int function_name(uint64_t fn, char *out, size_t cap)
{
    Dl_info di;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)fn, &di, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return -1;
    const char *path = lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
    symtab_t *s = NULL;
    for (unsigned i = 0; i < nsymtabs; i++)
        if (symtabs[i].bias == lm->l_addr && !strcmp(symtabs[i].path, path))
            s = &symtabs[i];
    if (!s && nsymtabs < sizeof symtabs / sizeof *symtabs && strlen(path) < sizeof s->path) {
        s = &symtabs[nsymtabs];
        memset(s, 0, sizeof *s);
        if (symtab_load(s, path) == 0) {
            s->bias = lm->l_addr;
            memcpy(s->path, path, strlen(path) + 1);
            nsymtabs++;
        } else {
            s = NULL;
        }
    }
    const char *name = NULL;
    if (s) {
        uint64_t v = fn - s->bias;
        size_t lo = 0, hi = s->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->sorted[2 * mid] < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < s->n && s->sorted[2 * lo] == v)
            name = s->strs + s->syms[s->sorted[2 * lo + 1]].st_name;
    }
    if (!name && di.dli_sname && (uint64_t)di.dli_saddr == fn)
        name = di.dli_sname;
    if (!name)
        return -1;
    size_t n = strlen(name);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, name, n);
    out[n] = 0;
    return 0;
}

/* ---- the registry ------------------------------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static uint32_t hash_u64(uint64_t v)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdull;
    v ^= v >> 33;
    return (uint32_t)v;
}

static const char *intern(const char *s)
{
    size_t n = strlen(s) + 1;
    if (n > 4096)
        n = 4096;
    if (B.arena_used + n > B.arena_cap) {
        size_t cap = 1 << 20;
        char *a = mmap(0, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a == MAP_FAILED)
            return NULL;
        B.arena = a, B.arena_used = 0, B.arena_cap = cap;
    }
    char *r = B.arena + B.arena_used;
    memcpy(r, s, n - 1);
    r[n - 1] = 0;
    B.arena_used += n;
    return r;
}

/* Is the block with this name and group recorded now (selective file, then the switches)? */
static int compute_active(const blk_def_t *d)
{
    if (B.has_sel && !blocksel_active(&B.sel, d->name))
        return 0;
    for (unsigned i = B.nsw; i-- > 0;)
        if (!strcmp(B.sw[i].name, d->name) || !strcmp(B.sw[i].name, d->group))
            return B.sw[i].on;
    return 1;
}

static void log_block(uint32_t id)
{
    char buf[9000];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_BLOCK);
    exp_line_u64(&l, EXP_KEY_ID, id);
    exp_line_str(&l, EXP_KEY_NAME, B.defs[id].name);
    exp_line_str(&l, EXP_KEY_GROUP, B.defs[id].group);
    if (B.defs[id].addr)
        exp_line_hex(&l, EXP_KEY_ADDR, B.defs[id].addr);
    exp_line_u64(&l, EXP_KEY_ACTIVE, B.active[id]);
    coll_log_write(&l);
}

/* Finds or adds a block under the lock; UINT32_MAX when the registry is full. */
static uint32_t define_locked(const char *name, const char *group, uint64_t addr)
{
    uint32_t *tab = addr ? B.haddr : B.hname;
    uint32_t h = addr ? hash_u64(addr) : hash_str(name);
    for (uint32_t i = h % BLK_HASH;; i = (i + 1) % BLK_HASH) {
        uint32_t e = tab[i];
        if (!e)
            break;
        blk_def_t *d = &B.defs[e - 1];
        if (addr ? d->addr == addr : (!d->addr && !strcmp(d->name, name)))
            return e - 1;
    }
    if (B.ndefs >= BLK_MAX) {
        if (!B.warned_full++)
            coll_warn("more than 65536 profiled blocks: the others are not recorded");
        return UINT32_MAX;
    }
    blk_def_t *d = &B.defs[B.ndefs];
    d->name = intern(name);
    d->group = intern(group);
    d->addr = addr;
    if (!d->name || !d->group)
        return UINT32_MAX;
    uint32_t id = B.ndefs++;
    for (uint32_t i = h % BLK_HASH;; i = (i + 1) % BLK_HASH)
        if (!tab[i]) {
            tab[i] = id + 1;
            break;
        }
    B.active[id] = (uint8_t)compute_active(d);
    log_block(id);
    return id;
}

static uint32_t define_name(const char *name, const char *group)
{
    spin_lock(&B.lock);
    uint32_t id = define_locked(name, group, 0);
    spin_unlock(&B.lock);
    return id;
}

static uint32_t define_function(uint64_t fn)
{
    spin_lock(&B.lock);
    uint32_t h = hash_u64(fn);
    for (uint32_t i = h % BLK_HASH; B.haddr[i]; i = (i + 1) % BLK_HASH)
        if (B.defs[B.haddr[i] - 1].addr == fn) {
            uint32_t id = B.haddr[i] - 1;
            spin_unlock(&B.lock);
            return id;
        }
    spin_unlock(&B.lock);
    /* named outside the lock: dladdr takes the loader's lock, which a thread running an
     * instrumented constructor inside dlopen holds while it waits for ours */
    char name[4096];
    if (function_name(fn, name, sizeof name)) {
        static const char hex[] = "0123456789abcdef";
        char *p = name;
        memcpy(p, "<function>@0x", 13);
        p += 13;
        for (int sh = 60; sh >= 0; sh -= 4)
            if ((fn >> sh) || sh == 0 || p > name + 13)
                *p++ = hex[(fn >> sh) & 15];
        *p = 0;
    }
    spin_lock(&B.lock);
    uint32_t id = define_locked(name, "functions", fn);
    spin_unlock(&B.lock);
    return id;
}

/* ---- per-thread state ------------------------------------------------------------------------ */

typedef struct blk_thr {
    int busy;  /* the thread is inside the collector's block code */
    int state; /* 0 not started, 1 recording, 2 ended */
    pid_t tid;
    int slot;
    uint32_t monitors; /* monitor points taken */
    bs_thread_t bs;
    bctr_thread_t ctr; /* the thread's block counters, when some quantity is one */
    struct { uintptr_t key; uint32_t id; } cache[BLK_CACHE];
    bs_row_t *rows;
    size_t rows_cap; /* bytes */
    char *line;
    size_t line_cap;
} blk_thr_t;

static __thread blk_thr_t blk_thr __attribute__((tls_model("initial-exec")));

static int ready(void);

static int thr_start(blk_thr_t *t)
{
    if (ready() || bs_init(&t->bs, B.nq))
        return -1;
    if (B.nctr && bctr_open(&t->ctr) < 0 && !__atomic_exchange_n(&B.warned_ctr, 1, __ATOMIC_RELAXED))
        coll_warn("blocks: a thread's counters could not be opened (perf_event_open): its counter "
                  "quantities are 0");
    t->tid = (pid_t)syscall(SYS_gettid);
    t->slot = -1;
    if (B.trace) /* before the first entry's time is read: its record is not clamped later */
        trace_block_stream_ready();
    for (int i = 0; i < BLK_THREADS; i++)
        if (__atomic_compare_exchange_n(&B.threads[i], &(blk_thr_t *){ NULL }, t, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            t->slot = i;
            break;
        }
    t->state = 1;
    return 0;
}

/* Enters the calling thread's block code; NULL when nothing may be recorded now. */
static inline blk_thr_t *thr_enter(void)
{
    blk_thr_t *t = &blk_thr;
    if (__builtin_expect(!B.on || t->busy, 0))
        return NULL;
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&B.final, __ATOMIC_RELAXED) || t->state != 1, 0)) {
        if (t->state == 0 && !B.final && coll_proc.enabled && getpid() == coll_proc.pid &&
            thr_start(t) == 0)
            return t;
        __atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
        return NULL;
    }
    return t;
}

static inline void thr_leave(blk_thr_t *t)
{
    __atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
}

/* The quantities of thread t now (its counters one read of its group, errno kept). */
static inline void read_now(const blk_thr_t *t, uint64_t *now)
{
    if (__builtin_expect(B.nq == 1 && B.q[0] == Q_WALL, 1)) {
        now[0] = trace_now();
        return;
    }
    uint64_t cv[BCTR_MAX];
    if (B.nctr) {
        int e = errno;
        bctr_read(&t->ctr, cv);
        errno = e;
    }
    for (unsigned q = 0; q < B.nq; q++)
        now[q] = B.q[q] == Q_WALL ? trace_now() : B.q[q] == Q_CPU ? threads_cpu_ns()
                                                                  : cv[B.q[q] - Q_CTR];
}

/* The time of a record whose quantities are now: the wall clock's (trace_now) */
static inline uint64_t stamp(const uint64_t *now)
{
    for (unsigned q = 0; q < B.nq; q++)
        if (B.q[q] == Q_WALL)
            return now[q];
    return trace_now();
}

static inline uint32_t lookup(blk_thr_t *t, uintptr_t key, const char *name, const char *group,
                              uint64_t fn)
{
    unsigned c = (unsigned)((key >> 4) ^ (key >> 14)) & (BLK_CACHE - 1);
    if (t->cache[c].key == key) {
        uint32_t id = t->cache[c].id - 1;
        if (!name || !strcmp(B.defs[id].name, name))
            return id;
    }
    uint32_t id = name ? define_name(name, group) : define_function(fn);
    if (id != UINT32_MAX) {
        t->cache[c].key = key;
        t->cache[c].id = id + 1;
    }
    return id;
}

/* ---- the entry points ---------------------------------------------------------------------- */

static void block_enter(uintptr_t key, const char *name, const char *group, uint64_t fn)
{
    blk_thr_t *t = thr_enter();
    if (!t)
        return;
    uint32_t id = lookup(t, key, name, group, fn);
    if (id != UINT32_MAX && B.active[id]) {
        uint64_t now[BS_MAXQ];
        read_now(t, now);
        if (bs_enter(&t->bs, id, now) == 0 && __builtin_expect(B.trace, 0))
            trace_block_inline(stamp(now), id, 0);
    }
    thr_leave(t);
}

static void block_exit(uintptr_t key, const char *name, uint64_t fn)
{
    blk_thr_t *t = thr_enter();
    if (!t)
        return;
    uint32_t id = lookup(t, key, name, "default", fn);
    if (id != UINT32_MAX && bs_on_stack(&t->bs, id)) {
        uint64_t now[BS_MAXQ];
        read_now(t, now);
        bs_exit(&t->bs, id, now);
        if (__builtin_expect(B.trace, 0))
            trace_block_inline(stamp(now), id, 1);
    }
    thr_leave(t);
}

COLL_EXPORT void tally_collector_block_start(const char *name, const char *group)
{
    if (name)
        block_enter((uintptr_t)name, name, group && *group ? group : "default", 0);
}

COLL_EXPORT void tally_collector_block_stop(const char *name)
{
    if (name)
        block_exit((uintptr_t)name, name, 0);
}

COLL_EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    block_enter((uintptr_t)fn, NULL, NULL, (uint64_t)fn);
}

COLL_EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    block_exit((uintptr_t)fn, NULL, (uint64_t)fn);
}

COLL_EXPORT void tally_collector_block_enable(const char *name_or_group, int on)
{
    if (!name_or_group || !B.on || ready())
        return;
    blk_thr_t *t = &blk_thr;
    t->busy++;
    spin_lock(&B.lock);
    unsigned i;
    for (i = 0; i < B.nsw && strcmp(B.sw[i].name, name_or_group); i++)
        ;
    if (i < B.nsw) { /* the latest switch of a name decides: move it last */
        const char *n = B.sw[i].name;
        memmove(&B.sw[i], &B.sw[i + 1], (B.nsw - i - 1) * sizeof B.sw[0]);
        B.sw[B.nsw - 1].name = n;
        B.sw[B.nsw - 1].on = on;
    } else if (B.nsw < BLK_SWITCHES && (B.sw[B.nsw].name = intern(name_or_group))) {
        B.sw[B.nsw++].on = on;
    }
    for (uint32_t id = 0; id < B.ndefs; id++)
        __atomic_store_n(&B.active[id], (uint8_t)compute_active(&B.defs[id]), __ATOMIC_RELAXED);
    spin_unlock(&B.lock);
    t->busy--;
}

/* ---- log records ----------------------------------------------------------------------------- */

/* v in decimal at p; returns the length. Two digits a step (a monitor point with 100 blocks
 * formats 700 numbers: exp_fmt_u64's digit a step was a fifth of its time). */
static size_t put_u64(char *p, uint64_t v)
{
    static const char d2[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                             "34353637383940414243444546474849505152535455565758596061626364656667"
                             "6869707172737475767778798081828384858687888990919293949596979899";
    char tmp[24], *e = tmp + sizeof tmp, *q = e;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        q -= 2;
        memcpy(q, d2 + 2 * r, 2);
    }
    if (v >= 10) {
        q -= 2;
        memcpy(q, d2 + 2 * v, 2);
    } else {
        *--q = (char)('0' + v);
    }
    size_t n = (size_t)(e - q);
    memcpy(p, q, n);
    return n;
}

/* Makes room for cap bytes of t->line; 0 or -1. */
static int line_room(blk_thr_t *t, size_t cap)
{
    if (cap <= t->line_cap)
        return 0;
    cap = (cap + 65535) & ~(size_t)65535;
    char *l = mmap(0, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (l == MAP_FAILED)
        return -1;
    if (t->line)
        munmap(t->line, t->line_cap);
    t->line = l;
    t->line_cap = cap;
    return 0;
}

/* Writes the line whose header is in l (built at the start of t->line, shorter than the offset
 * of the rows) followed by rows=<rows[0..n)> (built further on in t->line). */
static void write_rows(blk_thr_t *t, exp_line_t *l, const char *rows, size_t n)
{
    memcpy(t->line + l->len, " rows=", 6);
    memmove(t->line + l->len + 6, rows, n);
    l->len += 6 + n;
    l->cap = t->line_cap;
    coll_log_write(l);
}

#define ROWS_OFF 1024

static void log_rows_line(blk_thr_t *t, const char *kind, uint64_t now, const char *key,
                          uint64_t val, const char *rows, size_t n)
{
    exp_line_t l;
    exp_line_begin(&l, t->line, ROWS_OFF, kind);
    exp_line_u64(&l, EXP_KEY_T, now);
    exp_line_u64(&l, EXP_KEY_TID, (uint64_t)t->tid);
    exp_line_u64(&l, key, val);
    write_rows(t, &l, rows, n);
}

COLL_EXPORT void tally_collector_monitor(const char *label)
{
    blk_thr_t *t = thr_enter();
    if (!t)
        return;
    uint64_t now[BS_MAXQ];
    read_now(t, now);
    size_t d = t->bs.depth, need = (d + 1) * sizeof(bs_row_t);
    if (need > t->rows_cap) {
        size_t cap = (need + 65535) & ~(size_t)65535;
        bs_row_t *r = mmap(0, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (r == MAP_FAILED)
            goto out;
        if (t->rows)
            munmap(t->rows, t->rows_cap);
        t->rows = r, t->rows_cap = cap;
    }
    size_t lab = label ? strlen(label) * 3 : 0;
    if (line_room(t, 512 + lab + (d + 1) * (22 * (3 + 4 * B.nq))))
        goto out;
    bs_callstack(&t->bs, now, t->rows);
    /* rows after the line's header: built at the end of the buffer, then copied in */
    char *rows = t->line + 512 + lab, *p = rows;
    for (size_t i = 0; i < d; i++) {
        const bs_row_t *r = &t->rows[i];
        if (i)
            *p++ = ';';
        p += put_u64(p, r->block);
        *p++ = ',', p += put_u64(p, r->calls);
        *p++ = ',', p += put_u64(p, r->subrs);
        for (unsigned q = 0; q < B.nq; q++) {
            *p++ = ',', p += put_u64(p, r->excl[q]);
            *p++ = ',', p += put_u64(p, r->incl[q]);
            *p++ = ',', p += put_u64(p, r->iexcl[q]);
            *p++ = ',', p += put_u64(p, r->iincl[q]);
        }
    }
    t->monitors++;
    exp_line_t l;
    exp_line_begin(&l, t->line, 512 + lab, EXP_LOG_CALLSTACK);
    exp_line_u64(&l, EXP_KEY_T, stamp(now));
    exp_line_u64(&l, EXP_KEY_TID, (uint64_t)t->tid);
    exp_line_u64(&l, EXP_KEY_N, t->monitors);
    if (label)
        exp_line_str(&l, EXP_KEY_LABEL, label);
    for (unsigned q = 0; q < B.nq; q++)
        if (B.q[q] == Q_CPU) {
            exp_line_u64(&l, EXP_KEY_AT_CPU, now[q]);
            break;
        }
    write_rows(t, &l, rows, (size_t)(p - rows));
out:
    thr_leave(t);
}

/* Logs the whole profile of t (every open instance ended at now): block-profile lines (per
 * block: id, calls, subrs, then excl and incl per quantity) and block-paths lines (per call-path
 * node from 1: parent, block, calls, subrs, excl and incl per quantity). */
static void log_profile(blk_thr_t *t, const uint64_t *now)
{
    bs_end_all(&t->bs, now);
    uint64_t at = stamp(now);
    size_t row_max = 22 * (4 + 2 * BS_MAXQ);
    if (line_room(t, ROWS_OFF + BLK_LINE_MAX + 2 * row_max))
        return;
    char *rows = t->line + ROWS_OFF, *p = rows;
    uint64_t part = 0;
    char first_line = 1;
    for (uint32_t id = 0; id < B.ndefs && id < t->bs.nblocks; id++) {
        const bs_stat_t *b = &t->bs.blocks[id];
        if (!b->calls)
            continue;
        if (p != rows)
            *p++ = ';';
        p += put_u64(p, id);
        *p++ = ',', p += put_u64(p, b->calls);
        *p++ = ',', p += put_u64(p, b->subrs);
        for (unsigned q = 0; q < B.nq; q++) {
            *p++ = ',', p += put_u64(p, b->excl[q]);
            *p++ = ',', p += put_u64(p, b->incl[q]);
        }
        if ((size_t)(p - rows) > BLK_LINE_MAX) {
            log_rows_line(t, EXP_LOG_BLOCK_PROFILE, at, EXP_KEY_PART, part++, rows, (size_t)(p - rows));
            p = rows;
            first_line = 0;
        }
    }
    if (p != rows || first_line)
        log_rows_line(t, EXP_LOG_BLOCK_PROFILE, at, EXP_KEY_PART, part++, rows, (size_t)(p - rows));
    p = rows;
    uint64_t first = 1;
    for (size_t i = 1; i < t->bs.nnodes; i++) {
        const bs_node_t *n = &t->bs.nodes[i];
        if (p != rows)
            *p++ = ';';
        p += put_u64(p, n->parent);
        *p++ = ',', p += put_u64(p, n->block);
        *p++ = ',', p += put_u64(p, n->calls);
        *p++ = ',', p += put_u64(p, n->subrs);
        for (unsigned q = 0; q < B.nq; q++) {
            *p++ = ',', p += put_u64(p, n->excl[q]);
            *p++ = ',', p += put_u64(p, n->incl[q]);
        }
        if ((size_t)(p - rows) > BLK_LINE_MAX || i + 1 == t->bs.nnodes) {
            log_rows_line(t, EXP_LOG_BLOCK_PATHS, at, EXP_KEY_FIRST, first, rows, (size_t)(p - rows));
            p = rows;
            first = i + 1;
        }
    }
    if (t->bs.unmatched || t->bs.lost) {
        char buf[256];
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_BLOCK_THREAD);
        exp_line_u64(&l, EXP_KEY_TID, (uint64_t)t->tid);
        exp_line_u64(&l, EXP_KEY_UNMATCHED, t->bs.unmatched);
        exp_line_u64(&l, EXP_KEY_LOST, t->bs.lost);
        coll_log_write(&l);
    }
}

/* ---- settings, ends and forks ---------------------------------------------------------------- */

static void *map_zero(size_t n)
{
    void *m = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

void blocks_settings(coll_proc_t *p)
{
    const char *b = p->set.blocks.s, *m = p->set.block_metrics.s;
    B.on = 0;
    if (!strcmp(b, "off"))
        return;
    B.nq = 0;
    B.nctr = 0;
    if (!*m)
        m = "wall";
    while (*m && B.nq < BS_MAXQ) {
        const char *e = strchr(m, ',');
        size_t n = e ? (size_t)(e - m) : strlen(m);
        if (n == 4 && !memcmp(m, "wall", 4))
            B.q[B.nq++] = Q_WALL;
        else if (n == 3 && !memcmp(m, "cpu", 3))
            B.q[B.nq++] = Q_CPU;
        else if (B.nctr < BCTR_MAX) /* a counter: its encoding is in block_counters */
            B.q[B.nq++] = Q_CTR + (int)B.nctr++;
        else {
            coll_warn("blocks: too many counters in block_metrics: blocks are off");
            return;
        }
        m += n + (e != NULL);
    }
    if (B.nctr && bctr_decode(p->set.block_counters.s) != (int)B.nctr) {
        coll_warn("blocks: block_counters does not give each counter of block_metrics: blocks "
                  "are off");
        return;
    }
    if (*b) {
        int fd = open(b, O_RDONLY | O_CLOEXEC);
        struct stat st;
        char *text = NULL;
        if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size < (64 << 20) &&
            (text = map_zero((size_t)st.st_size + 1)) != NULL) {
            size_t got = 0;
            ssize_t r;
            while (got < (size_t)st.st_size &&
                   (r = read(fd, text + got, (size_t)st.st_size - got)) > 0)
                got += (size_t)r;
            unsigned line;
            const char *why;
            if (blocksel_parse(&B.sel, text, got, &line, &why)) {
                coll_warn("blocks: the selective file cannot be parsed: blocks are off");
                text = NULL;
            }
        } else {
            coll_warn("blocks: the selective file cannot be read: blocks are off");
        }
        if (fd >= 0)
            close(fd);
        if (!text)
            return;
        B.has_sel = 1;
    }
    B.trace = p->set.block_trace;
    B.on = 1;
}

/* The registry, the end's membarrier and trace_now's TSC clock, made ready by the first block a
 * process meets (normal context): a process without blocks pays nothing, and no profiled process
 * spends more before its sampling starts. 0, or -1 (blocks are then off, with a warning). */
static int ready(void)
{
    static int state; /* 0 not yet, 1 being made ready, 2 ready, 3 failed */
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == 2)
        return 0;
    if (s == 0 && __atomic_compare_exchange_n(&state, &s, 1, 0, __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE)) {
        B.defs = map_zero(BLK_MAX * sizeof *B.defs);
        B.hname = map_zero(BLK_HASH * sizeof *B.hname);
        B.haddr = map_zero(BLK_HASH * sizeof *B.haddr);
        B.active = map_zero(BLK_MAX);
        if (!B.defs || !B.hname || !B.haddr || !B.active) {
            coll_warn("blocks: no memory for the registry: blocks are off");
            B.on = 0;
            __atomic_store_n(&state, 3, __ATOMIC_RELEASE);
            return -1;
        }
        B.membarrier_ok =
            syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
        trace_api_ready(); /* starts trace_now's TSC clock (else every read is clock_gettime) */
        __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
        return 0;
    }
    while ((s = __atomic_load_n(&state, __ATOMIC_ACQUIRE)) == 1)
        sched_yield();
    return s == 2 ? 0 : -1;
}

void blocks_log_all(void)
{
    for (uint32_t id = 0; id < B.ndefs; id++)
        log_block(id);
}

void blocks_thread_exit(void)
{
    blk_thr_t *t = &blk_thr;
    if (t->state != 1 || t->busy)
        return;
    t->busy = 1;
    if (!__atomic_load_n(&B.final, __ATOMIC_ACQUIRE)) {
        uint64_t now[BS_MAXQ];
        read_now(t, now);
        log_profile(t, now);
    }
    if (t->slot >= 0)
        __atomic_store_n(&B.threads[t->slot], NULL, __ATOMIC_RELEASE);
    t->state = 2;
    bs_free(&t->bs);
    bctr_close(&t->ctr, 0);
    if (t->rows)
        munmap(t->rows, t->rows_cap);
    if (t->line)
        munmap(t->line, t->line_cap);
    t->rows = NULL, t->line = NULL, t->rows_cap = t->line_cap = 0;
    t->busy = 0;
}

void blocks_end_image(void)
{
    if (!B.on || __atomic_exchange_n(&B.final, 1, __ATOMIC_ACQ_REL))
        return;
    /* every thread sees `final` before it next records; one inside its block code is waited for */
    if (B.membarrier_ok)
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0);
    else
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    uint64_t now[BS_MAXQ];
    blk_thr_t *self = &blk_thr;
    read_now(self, now);
    for (int i = 0; i < BLK_THREADS; i++) {
        blk_thr_t *t = __atomic_load_n(&B.threads[i], __ATOMIC_ACQUIRE);
        if (!t || t->state != 1)
            continue;
        if (t != self)
            for (int spin = 0; spin < 1000 && __atomic_load_n(&t->busy, __ATOMIC_ACQUIRE); spin++) {
                struct timespec ts = { 0, 10000 };
                nanosleep(&ts, NULL);
            }
        if (__atomic_load_n(&t->busy, __ATOMIC_ACQUIRE))
            continue; /* interrupted inside its own block code (a fatal signal): not consistent */
        uint64_t tnow[BS_MAXQ];
        for (unsigned q = 0; q < B.nq; q++)
            tnow[q] = now[q]; /* another thread's CPU clock is not read: its open blocks end
                                 with the wall clock only (CPU quantities stop at its last exit) */
        if (t != self)
            for (unsigned q = 0; q < B.nq; q++)
                if (B.q[q] == Q_CPU)
                    tnow[q] = 0; /* clamped to each instance's start: adds nothing */
        if (t != self && B.nctr) { /* its counters can be read from here */
            uint64_t cv[BCTR_MAX];
            bctr_read(&t->ctr, cv);
            for (unsigned q = 0; q < B.nq; q++)
                if (B.q[q] >= Q_CTR)
                    tnow[q] = cv[B.q[q] - Q_CTR];
        }
        log_profile(t, tnow);
    }
}

void blocks_after_fork_child(void)
{
    if (!B.on)
        return;
    B.lock = 0;
    blk_thr_t *self = &blk_thr;
    for (int i = 0; i < BLK_THREADS; i++)
        if (B.threads[i] != self)
            B.threads[i] = NULL;
    blocks_log_all();
    if (self->state == 1) {
        if (B.nctr) { /* the parent's events were dropped (perfev_after_fork_child): new ones */
            bctr_close(&self->ctr, 1);
            bctr_open(&self->ctr);
        }
        if (!B.trace) { /* else at blocks_after_fork_trace, once the child's stream is ready */
            uint64_t now[BS_MAXQ];
            read_now(self, now);
            bs_restart(&self->bs, now);
        }
        self->tid = (pid_t)syscall(SYS_gettid);
        self->monitors = 0;
    }
    self->busy = 0;
}

void blocks_after_fork_trace(void)
{
    blk_thr_t *self = &blk_thr;
    if (!B.on || !B.trace || self->state != 1 || self->busy)
        return;
    self->busy = 1;
    trace_block_stream_ready(); /* first: a new stream starts at its first record's time */
    uint64_t now[BS_MAXQ];
    read_now(self, now);
    bs_restart(&self->bs, now);
    uint64_t at = stamp(now);
    for (size_t i = 0; i < self->bs.depth; i++) /* the child's timeline starts with them open */
        trace_block(at, self->bs.stack[i].block, 0);
    self->busy = 0;
}
