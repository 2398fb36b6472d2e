/*
 * maps.c - load objects via dl_iterate_phdr and their build-ids; see maps.h. Normal context only.
 */
#define _GNU_SOURCE
#include "maps.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "signals.h"
#include "experiment/logrec.h"

typedef struct obj {
    uint32_t id;
    int seen;
    uint64_t bias, lo, hi;
    char *path;
} obj_t;

static pthread_mutex_t maps_mu = PTHREAD_MUTEX_INITIALIZER;

/* The objects with dynamic TLS blocks, append only (a thread's bit i says entry i is noted):
 * written under maps_mu, entry then count (release); read by signal handlers. */
#define DYN_MAX 64
static struct dyn {
    uint32_t load_id;
    int live; /* atomic: 0 once unloaded */
    uint64_t modid;
} dyn[DYN_MAX];
static uint32_t ndyn;     /* atomic */
static uint32_t dyn_gen;  /* atomic: +1 when the table starts again (a fork child) */
static __thread struct {
    uint64_t noted;
    uint32_t gen;
} dyn_thr __attribute__((tls_model("initial-exec")));
static obj_t *objs;
static size_t nobjs, capobjs;
static uint32_t next_id;
static uint64_t last_scan_t; /* start of the previous rescan; 0 before the first */
static char exe_path[PATH_MAX];

/* Inside dl_iterate_phdr the dynamic linker's lock is held: nothing there may call malloc. A
 * thread that forks holds malloc's locks, and the clock signal's unwind in that thread takes the
 * dynamic linker's lock, so malloc under it deadlocks (seen: mpirun forking a rank while the
 * sampler's first dlopen rescanned). Room is made before the walk: objs' capacity, and a pool
 * for the paths of new objects, copied to their own strings after it; when either runs out, the
 * walk is done again with more. */
typedef struct scan {
    coll_proc_t *p;
    uint64_t t_load;
    uintptr_t vdso;
    int first; /* the scan at the start: every object's TLS block is static */
    char *pool; /* the paths of the objects found new by this walk */
    size_t pool_used, pool_cap;
    int full; /* objs or the pool had no room for one: walk again */
} scan_t;

/* Whether the object asks for static TLS (DF_STATIC_TLS: initial-exec accesses), which the
 * dynamic linker then gives it even when it is loaded by dlopen. */
static int static_tls(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_DYNAMIC)
            continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
             d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_STATIC_TLS))
                return 1;
    }
    return 0;
}

/* How far below the thread pointer the object's TLS block starts in every thread (x86-64's
 * static TLS), or 0 when it has none or its block is not static (allocated per thread on
 * first use). */
static uint64_t tls_below(const struct dl_phdr_info *info, int first)
{
    if (!info->dlpi_tls_data || !(first || static_tls(info)))
        return 0;
    uint64_t tp;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
    uint64_t at = (uint64_t)(uintptr_t)info->dlpi_tls_data;
    return at < tp ? tp - at : 0;
}

static void hex(char *out, const uint8_t *b, size_t n)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* The GNU build-id of an object, from its PT_NOTE segments in memory; "" if it has none. */
static void build_id(const struct dl_phdr_info *info, char *out, size_t cap)
{
    out[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *q = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = q + ph->p_memsz;
        while (q + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)q;
            const uint8_t *name = q + sizeof *nh;
            const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
            const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                nh->n_descsz * 2 + 1 <= cap) {
                hex(out, desc, nh->n_descsz);
                return;
            }
            q = next;
        }
    }
}

static void log_load(coll_proc_t *p, const obj_t *o, const char *bid, uint64_t t, uint64_t tls)
{
    char buf[PATH_MAX * 6 + 512]; /* path and cwd, each percent-encoded at worst */
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_LOAD);
    exp_line_u64(&l, EXP_KEY_T, t);
    exp_line_u64(&l, EXP_KEY_ID, o->id);
    exp_line_str(&l, EXP_KEY_PATH, o->path);
    char cwd[PATH_MAX];
    if (o->path[0] != '/' && o->path[0] != '[' && getcwd(cwd, sizeof cwd))
        exp_line_str(&l, EXP_KEY_CWD, cwd); /* dlopen("./x.so"): the directory it is relative to */
    exp_line_str(&l, EXP_KEY_BUILDID, bid);
    exp_line_hex(&l, EXP_KEY_BIAS, o->bias);
    exp_line_hex(&l, EXP_KEY_LO, o->lo);
    exp_line_hex(&l, EXP_KEY_HI, o->hi);
    if (tls)
        exp_line_hex(&l, EXP_KEY_TLS, tls);
    coll_log_write(&l);
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    scan_t *sc = arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (lo > hi)
        lo = hi = 0;
    const char *path = info->dlpi_name;
    if (sc->vdso && (uintptr_t)info->dlpi_phdr == sc->vdso + ((const ElfW(Ehdr) *)sc->vdso)->e_phoff)
        path = "[vdso]";
    else if (!path || !*path)
        path = exe_path;
    for (size_t i = 0; i < nobjs; i++)
        if (objs[i].bias == info->dlpi_addr && objs[i].lo == lo && !strcmp(objs[i].path, path)) {
            objs[i].seen = 1;
            return 0;
        }
    size_t len = strlen(path) + 1;
    if (nobjs == capobjs || sc->pool_used + len > sc->pool_cap) {
        sc->full = 1; /* no malloc here (above): the next walk has more room */
        return 0;
    }
    char *copy = memcpy(sc->pool + sc->pool_used, path, len);
    sc->pool_used += len;
    obj_t *o = &objs[nobjs++];
    o->id = next_id++;
    o->seen = 1;
    o->bias = info->dlpi_addr;
    o->lo = lo;
    o->hi = hi;
    o->path = copy;
    char bid[130];
    build_id(info, bid, sizeof bid);
    uint64_t tls = tls_below(info, sc->first);
    log_load(sc->p, o, bid, sc->t_load, tls);
    uint32_t n = __atomic_load_n(&ndyn, __ATOMIC_RELAXED);
    if (!tls && info->dlpi_tls_modid && n < DYN_MAX) { /* a dynamic TLS block per thread */
        dyn[n].load_id = o->id;
        dyn[n].modid = info->dlpi_tls_modid;
        __atomic_store_n(&dyn[n].live, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&ndyn, n + 1, __ATOMIC_RELEASE);
    }
    (void)size;
    return 0;
}

void maps_tls_note(exp_stream_t *s, uint64_t t)
{
    uint32_t n = __atomic_load_n(&ndyn, __ATOMIC_ACQUIRE);
    if (!n)
        return;
    uint32_t gen = __atomic_load_n(&dyn_gen, __ATOMIC_RELAXED);
    if (dyn_thr.gen != gen) {
        dyn_thr.gen = gen;
        dyn_thr.noted = 0;
    }
    const uint64_t *dtv;
    __asm__ volatile("mov %%fs:8, %0" : "=r"(dtv)); /* tcbhead_t.dtv: &slots[1] */
    if (!dtv)
        return;
    uint64_t slots = dtv[-2]; /* slots[0].counter: the number of module slots */
    for (uint32_t i = 0; i < n; i++) {
        if (dyn_thr.noted >> i & 1 || !__atomic_load_n(&dyn[i].live, __ATOMIC_RELAXED) ||
            dyn[i].modid > slots)
            continue;
        uint64_t block = dtv[2 * dyn[i].modid]; /* slot modid's pointer.val */
        if (!block || block == UINT64_MAX) /* not allocated (TLS_DTV_UNALLOCATED) */
            continue;
        if (exp_stream_tls_block(s, t, dyn[i].load_id, block) == 0)
            dyn_thr.noted |= 1ull << i;
    }
}

void maps_rescan(coll_proc_t *p)
{
    if (!p->enabled)
        return;
    pthread_mutex_lock(&maps_mu);
    uint64_t now = coll_now();
    if (!exe_path[0]) {
        ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
        exe_path[n > 0 ? n : 0] = 0;
    }
    scan_t sc = { p, last_scan_t ? last_scan_t : now, (uintptr_t)getauxval(AT_SYSINFO_EHDR),
                  !last_scan_t, NULL, 0, 0, 0 };
    last_scan_t = now;
    size_t room = 64, pool = 16384;
    for (int round = 0; round < 16; round++) {
        if (capobjs < nobjs + room) { /* room made before the walk, outside its lock */
            obj_t *no = realloc(objs, (nobjs + room) * sizeof *no);
            if (!no)
                break;
            objs = no;
            capobjs = nobjs + room;
        }
        char *np = realloc(sc.pool, pool);
        if (!np)
            break;
        sc.pool = np;
        sc.pool_cap = pool;
        sc.pool_used = 0;
        sc.full = 0;
        size_t before = nobjs;
        for (size_t i = 0; i < nobjs; i++)
            objs[i].seen = 0;
        sigset_t old;
        signals_block(p, &old);
        dl_iterate_phdr(scan_cb, &sc);
        signals_unblock(&old);
        for (size_t i = before; i < nobjs;) { /* the new objects' paths, out of the pool */
            char *own = strdup(objs[i].path);
            if (own)
                objs[i++].path = own;
            else /* no memory: forgotten, found again (and logged again) by the next rescan */
                objs[i] = objs[--nobjs];
        }
        if (!sc.full)
            break;
        room *= 2;
        pool *= 2;
    }
    free(sc.pool);
    size_t k = 0;
    for (size_t i = 0; i < nobjs; i++) {
        if (objs[i].seen) {
            objs[k++] = objs[i];
            continue;
        }
        char buf[128];
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_UNLOAD);
        exp_line_u64(&l, EXP_KEY_T, now);
        exp_line_u64(&l, EXP_KEY_ID, objs[i].id);
        coll_log_write(&l);
        for (uint32_t d = 0; d < ndyn; d++)
            if (dyn[d].load_id == objs[i].id)
                __atomic_store_n(&dyn[d].live, 0, __ATOMIC_RELAXED);
        free(objs[i].path);
    }
    nobjs = k;
    pthread_mutex_unlock(&maps_mu);
}

void maps_after_fork(void)
{
    pthread_mutex_init(&maps_mu, NULL);
    for (size_t i = 0; i < nobjs; i++)
        free(objs[i].path);
    nobjs = 0;
    next_id = 0;
    __atomic_store_n(&ndyn, 0, __ATOMIC_RELEASE);
    __atomic_add_fetch(&dyn_gen, 1, __ATOMIC_RELAXED);
    last_scan_t = 0;
}
