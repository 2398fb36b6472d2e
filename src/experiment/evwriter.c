/*
 * evwriter.c - the events file writer. See evwriter.h for the contract; docs/FORMAT.md for the
 * layout. Sections: file, chunks, records, stacks.
 */
#define _GNU_SOURCE
#include "evwriter.h"
#include "evfast.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../base/leb128.h"

struct exp_stack_slot {
    uint64_t hash;
    uint64_t off; /* index of the first frame in frames */
    uint32_t n;   /* frames; 0 = empty slot */
    uint32_t id;
    uint32_t flags;
    uint32_t pad;
};

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Where the inline heap writer (evfast.h) may write: only into a chunk, with nothing pending.
 * Called wherever the chunk or the pending counts change. */
static void fast_update(exp_stream_t *s)
{
    uint64_t pending = 0;
    for (int r = 1; r < EXP_LOST_NREASONS; r++)
        pending |= s->pending[r];
    s->fast_end = s->chunk && !pending && s->file->chunk_size <= EXP_PACK_MAX
                      ? s->file->chunk_size - EXP_FAST_MAX
                      : 0;
}

/* ---- file ------------------------------------------------------------------------------------ */

int exp_evfile_init_fd(exp_evfile_t *f, int fd, uint32_t pid, uint64_t now_ns, uint32_t chunk_size)
{
    uint8_t h[EXP_EV_HEADER_BYTES] = { 0 };
    if (chunk_size < 4096 || (chunk_size & 4095))
        chunk_size = EXP_CHUNK_SIZE_DEFAULT;
    memcpy(h, EXP_EV_MAGIC, 8);
    put_le32(h + 8, EXP_FORMAT_VERSION);
    put_le32(h + 12, EXP_EV_HEADER_SIZE);
    put_le32(h + 16, chunk_size);
    put_le32(h + 20, pid);
    put_le64(h + 24, now_ns);
    if (pwrite(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
        ftruncate(fd, EXP_EV_HEADER_SIZE) < 0)
        return errno ? -errno : -EIO;
    f->fd = fd;
    f->chunk_size = chunk_size;
    f->next_chunk = 0;
    f->next_stream = 0;
    f->disk_full = 0;
    return 0;
}

int exp_evfile_create(exp_evfile_t *f, const char *path, uint32_t pid, uint64_t now_ns,
                      uint32_t chunk_size)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = exp_evfile_init_fd(f, fd, pid, now_ns, chunk_size);
    if (rc)
        close(fd);
    return rc;
}

void exp_evfile_close(exp_evfile_t *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* ---- chunks ---------------------------------------------------------------------------------- */

static const uint8_t zero_page[4096];

/* Reserves the disk blocks of [off, off+len) by writing zeros: the pages are then in the page
 * cache, so mapping them costs no read (fallocate's unwritten extents are read, as zeros, through
 * readahead on every first touch: measured 8 ns more per heap-traced malloc/free pair). A full disk
 * is a failed write. Returns the bytes reserved from off (len, or fewer when the disk is full). */
static size_t reserve(int fd, off_t off, size_t len)
{
    struct iovec v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (struct iovec){ (void *)zero_page, sizeof zero_page };
    size_t done = 0;
    while (done < len) {
        size_t n = (len - done) / sizeof zero_page < 64 ? (len - done) / sizeof zero_page : 64;
        /* the system call, not libc's pwritev (a cancellation point: a malloc of a thread
         * with a pending cancellation was cancelled when its record opened a chunk); the
         * offset in two halves, as the kernel takes it (the high one unused on 64-bit) */
        ssize_t w = syscall(SYS_pwritev, fd, v, (int)n, (unsigned long)off,
                            (unsigned long)((uint64_t)off >> 32));
        if (w <= 0)
            break;
        off += w;
        done += (size_t)w;
    }
    return done;
}

static void window_release(exp_stream_t *s)
{
    if (s->win)
        munmap(s->win, (size_t)s->win_len * s->file->chunk_size);
    s->win = NULL;
    s->win_len = s->win_next = 0;
}

/* Ends the current chunk (its pack closed); its window stays mapped until its last chunk is
 * done. */
static void chunk_release(exp_stream_t *s)
{
    if (s->chunk) {
        exp_pack_close(s);
        s->chunk = NULL;
        s->seq++;
    }
    s->fast_end = 0;
    s->pack = 0;
}

/* A new window of consecutive chunks: claimed with one atomic add, reserved (as far as the disk
 * allows: a window cut short keeps its whole chunks), mapped and populated with one system call
 * each. On a mapping of many small chunks, each of these costs about twice as much per byte
 * (64 KiB: about 640 ns per KiB in all; 1 MiB: about 330). */
static int window_claim(exp_stream_t *s)
{
    exp_evfile_t *f = s->file;
    size_t cs = f->chunk_size;
    uint32_t most = EXP_WINDOW_BYTES / cs ? EXP_WINDOW_BYTES / cs : 1;
    uint32_t n = s->win_grow ? s->win_grow : 1;
    if (n > most)
        n = most;
    window_release(s);
    uint32_t idx = __atomic_fetch_add(&f->next_chunk, n, __ATOMIC_RELAXED);
    off_t off = EXP_EV_HEADER_SIZE + (off_t)idx * (off_t)cs;
    n = (uint32_t)(reserve(f->fd, off, n * cs) / cs);
    if (!n) {
        __atomic_store_n(&f->disk_full, 1, __ATOMIC_RELAXED);
        return -1;
    }
    void *m = mmap(NULL, n * cs, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, off);
    if (m == MAP_FAILED)
        return -1;
    /* one system call maps every page writable, instead of one page fault per page (Linux
     * 5.14; older kernels refuse it and the pages fault in as they are written) */
    madvise(m, n * cs, 23 /* MADV_POPULATE_WRITE */);
    s->win = m;
    s->win_len = n;
    s->win_next = 0;
    s->win_grow = n * 2 < most ? n * 2 : most;
    return 0;
}

static int chunk_claim(exp_stream_t *s, uint64_t t)
{
    exp_evfile_t *f = s->file;
    if (__atomic_load_n(&f->disk_full, __ATOMIC_RELAXED) || f->fd < 0)
        return -1;
    if (s->win_next >= s->win_len && window_claim(s))
        return -1;
    s->chunk = s->win + (size_t)s->win_next++ * f->chunk_size;
    s->pos = EXP_CHUNK_HEADER_SIZE;
    s->last_t = t;
    s->last_addr = 0;
    s->pack = 0;
    put_le32(s->chunk + 4, s->tid);
    put_le32(s->chunk + 8, s->seq);
    put_le32(s->chunk + 12, 0);
    put_le64(s->chunk + 16, t);
    put_le32(s->chunk + 24, s->stream);
    __atomic_store_n((uint32_t *)s->chunk, EXP_CHUNK_MAGIC, __ATOMIC_RELEASE);
    fast_update(s);
    return 0;
}

/* Makes room for len bytes in the current chunk, starting a new one if needed. */
static int room(exp_stream_t *s, size_t len, uint64_t t)
{
    if (s->chunk && s->pos + len <= s->file->chunk_size)
        return 0;
    if (len > s->file->chunk_size - EXP_CHUNK_HEADER_SIZE)
        return -1;
    chunk_release(s);
    return chunk_claim(s, t);
}

static void commit(exp_stream_t *s, size_t len)
{
    s->pos += (uint32_t)len;
    s->records++;
    __atomic_store_n((uint32_t *)(s->chunk + 12), s->pos - EXP_CHUNK_HEADER_SIZE, __ATOMIC_RELEASE);
}

/* ---- records --------------------------------------------------------------------------------- */

/* Writes one record (type, payload). A timed record's payload is preceded by its dt and, with
 * has_addr, by its address as a delta from the chunk's previous one: both depend on the chunk,
 * which is only known once there is room, so they are encoded here. */
static int put_record_at(exp_stream_t *s, uint8_t type, const uint8_t *payload, size_t plen,
                         int timed, uint64_t t, int has_addr, uint64_t addr)
{
    uint8_t pre[2 * LEB128_MAX];
    size_t prelen = 0;
    if (!timed) /* a chunk opened by an untimed record starts at the stream's last time, not 0 */
        t = s->last_t;
    for (int attempt = 0; attempt < 2; attempt++) {
        uint64_t base = s->chunk ? s->last_t : t;
        prelen = timed ? leb128_put(pre, t > base ? t - base : 0) : 0;
        if (has_addr)
            prelen += leb128_put_signed(pre + prelen,
                                        (int64_t)(addr - (s->chunk ? s->last_addr : 0)));
        size_t total = 1 + LEB128_MAX + prelen + plen;
        if (s->chunk && s->pos + total <= s->file->chunk_size)
            break;
        if (attempt == 1 || room(s, total, t))
            return -1;
    }
    if (!s->chunk)
        return -1;
    exp_pack_close(s); /* packed records go into a new HEAP_PACK after this one */
    uint8_t *p = s->chunk + s->pos;
    size_t n = 0;
    p[n++] = type;
    n += leb128_put(p + n, prelen + plen);
    for (size_t i = 0; i < prelen; i++) /* short: a loop is cheaper than calls to memcpy */
        p[n++] = pre[i];
    if (plen > 32) {
        memcpy(p + n, payload, plen);
        n += plen;
    } else {
        for (size_t i = 0; i < plen; i++)
            p[n++] = payload[i];
    }
    if (timed && t > s->last_t)
        s->last_t = t;
    if (has_addr)
        s->last_addr = addr;
    commit(s, n);
    return 0;
}

static int put_record(exp_stream_t *s, uint8_t type, const uint8_t *payload, size_t plen,
                      int timed, uint64_t t)
{
    return put_record_at(s, type, payload, plen, timed, t, 0, 0);
}

static void flush_lost(exp_stream_t *s, uint64_t t)
{
    for (uint32_t r = 1; r < EXP_LOST_NREASONS; r++) {
        if (!s->pending[r])
            continue;
        uint8_t b[2 * LEB128_MAX];
        size_t n = leb128_put(b, s->pending[r]);
        n += leb128_put(b + n, r);
        if (put_record(s, EXP_REC_LOST, b, n, 1, t) == 0)
            s->pending[r] = 0;
    }
    fast_update(s);
}

void exp_stream_lost(exp_stream_t *s, uint64_t count, uint32_t reason)
{
    if (reason >= EXP_LOST_NREASONS)
        reason = EXP_LOST_NOSTACK;
    s->lost[reason] += count;
    s->pending[reason] += count;
    s->fast_end = 0;
}

static int enter(exp_stream_t *s)
{
    if (s->busy) {
        s->lost[EXP_LOST_BUSY]++;
        s->pending[EXP_LOST_BUSY]++;
        s->fast_end = 0;
        return -1;
    }
    s->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return 0;
}

static void leave(exp_stream_t *s)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    s->busy = 0;
}

/* Writes one timed event record (payload after its dt and, with has_addr, its address delta);
 * pending LOST records go first; a failure is counted as lost. */
static int put_event_bytes(exp_stream_t *s, uint8_t type, uint64_t t, const uint8_t *payload,
                           size_t plen, int has_addr, uint64_t addr)
{
    if (enter(s))
        return -1;
    for (uint32_t r = 1; r < EXP_LOST_NREASONS; r++)
        if (s->pending[r] && r != EXP_LOST_DISK) {
            flush_lost(s, t);
            break;
        }
    int rc = put_record_at(s, type, payload, plen, 1, t, has_addr, addr);
    if (rc) {
        uint32_t why = s->file->disk_full ? EXP_LOST_DISK : EXP_LOST_BUSY;
        s->lost[why]++;
        if (why != EXP_LOST_DISK) {
            s->pending[why]++;
            s->fast_end = 0;
        }
    }
    leave(s);
    return rc;
}

/* Writes a timed event record of n LEB128 values; a failure is counted as lost. */
static int put_event(exp_stream_t *s, uint8_t type, uint64_t t, const uint64_t *v, int n)
{
    uint8_t b[5 * LEB128_MAX];
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += leb128_put(b + len, v[i]);
    return put_event_bytes(s, type, t, b, len, 0, 0);
}

int exp_stream_clock(exp_stream_t *s, uint64_t t, uint32_t stack, uint32_t state, uint64_t weight)
{
    return exp_stream_clock_rs(s, t, stack, state, weight, 0);
}

int exp_stream_clock_rs(exp_stream_t *s, uint64_t t, uint32_t stack, uint32_t state,
                        uint64_t weight, uint32_t rstate)
{
    const uint64_t v[4] = { stack, state, weight, rstate };
    return put_event(s, EXP_REC_CLOCK, t, v, rstate ? 4 : 3); /* (the field is optional) */
}

int exp_stream_memref(exp_stream_t *s, uint64_t t, uint32_t stack, uint64_t weight,
                      const exp_memref_t *m)
{
    if (m->flags & ~(uint32_t)EXP_MREF_FLAGS || m->regmask >> EXP_MREF_NREGS)
        return -EINVAL;
    uint8_t b[(8 + EXP_MREF_NREGS) * LEB128_MAX];
    size_t len = leb128_put(b, m->source);
    len += leb128_put(b + len, stack);
    len += leb128_put(b + len, weight);
    len += leb128_put(b + len, m->flags);
    len += leb128_put(b + len, m->pc);
    if (m->flags & EXP_MREF_EA)
        len += leb128_put(b + len, m->ea);
    if (m->flags & EXP_MREF_REGS) {
        len += leb128_put(b + len, m->regmask);
        for (uint32_t r = 0; r < EXP_MREF_NREGS; r++)
            if (m->regmask >> r & 1)
                len += leb128_put(b + len, m->regs[r]);
    }
    if (!(m->flags & (EXP_MREF_EA | EXP_MREF_REGS)))
        len += leb128_put(b + len, m->reason);
    return put_event_bytes(s, EXP_REC_MEMREF, t, b, len, 0, 0);
}

int exp_stream_counter(exp_stream_t *s, uint64_t t, uint32_t stack, uint32_t counter,
                       uint64_t value, const uint64_t *data)
{
    uint8_t b[(4 + 4 + EXP_CTR_NREGS) * LEB128_MAX];
    size_t len = 0;
    len += leb128_put(b + len, stack);
    len += leb128_put(b + len, counter);
    len += leb128_put(b + len, value);
    if (data) {
        for (int i = 0; i < 3; i++)
            len += leb128_put(b + len, data[i]);
        if (data[0] & EXP_CTR_REGS) {
            len += leb128_put(b + len, EXP_CTR_NREGS);
            for (int i = 0; i < EXP_CTR_NREGS; i++)
                len += leb128_put(b + len, data[3 + i]);
        }
    }
    return put_event_bytes(s, EXP_REC_COUNTER, t, b, len, 0, 0);
}

int exp_stream_state(exp_stream_t *s, uint64_t t, uint32_t tid, uint32_t stack, uint32_t state,
                     uint64_t weight)
{
    return exp_stream_state_rs(s, t, tid, stack, state, weight, 0);
}

int exp_stream_state_rs(exp_stream_t *s, uint64_t t, uint32_t tid, uint32_t stack, uint32_t state,
                        uint64_t weight, uint32_t rstate)
{
    const uint64_t v[5] = { tid, stack, state, weight, rstate };
    return put_event(s, EXP_REC_STATE, t, v, rstate ? 5 : 4);
}

int exp_stream_cpu(exp_stream_t *s, uint64_t t, uint32_t cpu)
{
    const uint64_t v[1] = { cpu };
    return put_event(s, EXP_REC_CPU, t, v, 1);
}

int exp_stream_trace(exp_stream_t *s, uint64_t t, uint32_t kind, uint32_t stack,
                     const uint64_t *values, uint32_t n)
{
    if (n > EXP_KIND_MAXVALUES || kind > EXP_KIND_MAXID)
        return -EINVAL;
    uint64_t v[3 + EXP_KIND_MAXVALUES] = { kind, stack, n };
    for (uint32_t i = 0; i < n; i++)
        v[3 + i] = values[i];
    uint8_t b[(3 + EXP_KIND_MAXVALUES) * LEB128_MAX];
    size_t len = 0;
    for (uint32_t i = 0; i < 3 + n; i++)
        len += leb128_put(b + len, v[i]);
    return put_event_bytes(s, EXP_REC_TRACE, t, b, len, 0, 0);
}

int exp_stream_block(exp_stream_t *s, uint64_t t, uint32_t block, int exit)
{
    if (block > EXP_BLOCK_MAXID)
        return -EINVAL;
    const uint64_t v[1] = { (uint64_t)block << 1 | (exit != 0) };
    return put_event(s, EXP_REC_BLOCK, t, v, 1);
}

int exp_stream_sync(exp_stream_t *s, uint64_t t, uint32_t stack, uint64_t wait, uint64_t object,
                    uint32_t call)
{
    const uint64_t v[4] = { stack, wait, object, call };
    return put_event(s, EXP_REC_SYNC, t, v, 4);
}

static int alloc_rec(exp_stream_t *s, uint8_t type, uint64_t t, uint32_t stack, uint64_t addr,
                     uint64_t size, uint32_t call)
{
    if (type == EXP_REC_HEAP_ALLOC ? exp_stream_alloc_fast(s, t, stack, addr, size, call) == 0
                                   : exp_fast_alloc_rec(s, type, t, stack, addr, size, call) == 0)
        return 0;
    uint8_t b[3 * LEB128_MAX];
    size_t n = leb128_put(b, stack);
    n += leb128_put(b + n, size);
    if (call != EXP_HEAP_MALLOC)
        n += leb128_put(b + n, call);
    return put_event_bytes(s, type, t, b, n, 1, addr);
}

static int free_rec(exp_stream_t *s, uint8_t type, uint64_t t, uint64_t addr, uint64_t size, uint32_t call)
{
    if (type == EXP_REC_HEAP_FREE ? exp_stream_free_fast(s, t, addr, size, call) == 0
                                  : exp_fast_free_rec(s, type, t, addr, size, call) == 0)
        return 0;
    uint8_t b[2 * LEB128_MAX];
    size_t n = 0;
    if (call != EXP_HEAP_MALLOC || size) {
        n += leb128_put(b + n, call);
        n += leb128_put(b + n, size);
    }
    return put_event_bytes(s, type, t, b, n, 1, addr);
}

int exp_stream_alloc(exp_stream_t *s, uint64_t t, uint32_t stack, uint64_t addr, uint64_t size,
                     uint32_t call)
{
    return alloc_rec(s, EXP_REC_HEAP_ALLOC, t, stack, addr, size, call);
}

int exp_stream_free(exp_stream_t *s, uint64_t t, uint64_t addr, uint64_t size, uint32_t call)
{
    return free_rec(s, EXP_REC_HEAP_FREE, t, addr, size, call);
}

int exp_stream_tls_block(exp_stream_t *s, uint64_t t, uint32_t id, uint64_t addr)
{
    const uint64_t v[2] = { id, addr };
    return put_event(s, EXP_REC_TLS_BLOCK, t, v, 2);
}

int exp_stream_map_alloc(exp_stream_t *s, uint64_t t, uint32_t stack, uint64_t addr,
                         uint64_t size, uint32_t call)
{
    return alloc_rec(s, EXP_REC_MAP_ALLOC, t, stack, addr, size, call);
}

int exp_stream_map_free(exp_stream_t *s, uint64_t t, uint64_t addr, uint64_t size, uint32_t call)
{
    return free_rec(s, EXP_REC_MAP_FREE, t, addr, size, call);
}

int exp_stream_io(exp_stream_t *s, uint64_t t, uint32_t stack, uint32_t call, uint64_t ns,
                  uint64_t bytes, int64_t fd, uint32_t err, const char *name, size_t namelen)
{
    uint8_t b[7 * LEB128_MAX + EXP_IO_NAME_MAX];
    size_t n = leb128_put(b, stack);
    n += leb128_put(b + n, call);
    n += leb128_put(b + n, ns);
    n += leb128_put(b + n, bytes);
    n += leb128_put_signed(b + n, fd);
    n += leb128_put(b + n, err);
    if (name) {
        if (namelen > EXP_IO_NAME_MAX)
            namelen = EXP_IO_NAME_MAX;
        n += leb128_put(b + n, namelen);
        memcpy(b + n, name, namelen);
        n += namelen;
    }
    return put_event_bytes(s, EXP_REC_IO, t, b, n, 0, 0);
}

/* ---- stacks ---------------------------------------------------------------------------------- */

static void *map_anon(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int same_frames(const uint64_t *a, const uint64_t *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static uint64_t hash_frames(const uint64_t *pcs, uint32_t n, uint32_t flags)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n ^ ((uint64_t)flags << 32);
    for (uint32_t i = 0; i < n; i++) {
        h ^= pcs[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h | 1;
}

static int table_grow(exp_stream_t *s)
{
    uint32_t nn = s->nslots ? s->nslots * 2 : 4096;
    struct exp_stack_slot *ns = map_anon((size_t)nn * sizeof *ns);
    if (!ns)
        return -1;
    for (uint32_t i = 0; i < s->nslots; i++) {
        struct exp_stack_slot *o = &s->slots[i];
        if (!o->n)
            continue;
        uint32_t j = (uint32_t)o->hash & (nn - 1);
        while (ns[j].n)
            j = (j + 1) & (nn - 1);
        ns[j] = *o;
    }
    if (s->slots)
        munmap(s->slots, (size_t)s->nslots * sizeof *s->slots);
    s->slots = ns;
    s->nslots = nn;
    return 0;
}

static int frames_reserve(exp_stream_t *s, size_t n)
{
    if (s->frames_used + n <= s->frames_cap)
        return 0;
    size_t cap = s->frames_cap ? s->frames_cap : 32768;
    while (cap < s->frames_used + n)
        cap *= 2;
    void *p = s->frames ? mremap(s->frames, s->frames_cap * 8, cap * 8, MREMAP_MAYMOVE)
                        : map_anon(cap * 8);
    if (!p || p == MAP_FAILED)
        return -1;
    s->frames = p;
    s->frames_cap = cap;
    return 0;
}

int exp_stream_stack(exp_stream_t *s, const uint64_t *pcs, uint32_t n, uint32_t flags,
                     uint32_t *id)
{
    if (enter(s))
        return -1;
    int rc = -1;
    uint64_t h = hash_frames(pcs, n, flags);
    if ((s->nstacks + 1) * 2 > s->nslots && table_grow(s))
        goto out;
    uint32_t j = (uint32_t)h & (s->nslots - 1);
    for (; s->slots[j].n || s->slots[j].hash; j = (j + 1) & (s->nslots - 1)) {
        struct exp_stack_slot *e = &s->slots[j];
        if (e->hash == h && e->n == n && e->flags == flags &&
            same_frames(s->frames + e->off, pcs, n)) {
            *id = e->id;
            rc = 0;
            goto out;
        }
    }
    /* new stack: encode, write, then remember (only once it is on disk) */
    if (!s->scratch && !(s->scratch = map_anon(s->file->chunk_size)))
        goto out;
    size_t cap = s->file->chunk_size - EXP_CHUNK_HEADER_SIZE - 1 - LEB128_MAX;
    uint8_t *b = s->scratch;
    uint32_t keep = n;
    size_t len;
    for (;;) {
        len = leb128_put(b, s->nstacks);
        len += leb128_put(b + len, flags | (keep < n ? EXP_STACK_TRUNCATED : 0));
        len += leb128_put(b + len, keep);
        for (uint32_t i = 0; i < keep && len + LEB128_MAX <= cap; i++)
            len += i ? leb128_put_signed(b + len, (int64_t)(pcs[i] - pcs[i - 1]))
                     : leb128_put(b + len, pcs[0]);
        if (len + 3 * LEB128_MAX <= cap)
            break;
        keep = keep / 2; /* a stack that does not fit a chunk is cut (never happens below 4096) */
    }
    if (put_record(s, EXP_REC_STACK, b, len, 0, 0))
        goto out;
    if (frames_reserve(s, n) == 0) {
        struct exp_stack_slot *e = &s->slots[j];
        e->hash = h;
        e->n = n ? n : 0;
        e->off = s->frames_used;
        e->id = s->nstacks;
        e->flags = flags;
        memcpy(s->frames + s->frames_used, pcs, (size_t)n * 8);
        s->frames_used += n;
        if (!n)
            e->n = 0; /* an empty stack is found by its hash alone */
    }
    *id = s->nstacks++;
    rc = 0;
out:
    leave(s);
    return rc;
}

/* ---- lifetime -------------------------------------------------------------------------------- */

void exp_stream_init(exp_stream_t *s, exp_evfile_t *f, uint32_t tid)
{
    memset(s, 0, sizeof *s);
    s->file = f;
    s->tid = tid;
    s->stream = __atomic_fetch_add(&f->next_stream, 1, __ATOMIC_RELAXED);
}

static void unmap_tables(exp_stream_t *s)
{
    if (s->slots)
        munmap(s->slots, (size_t)s->nslots * sizeof *s->slots);
    if (s->frames)
        munmap(s->frames, s->frames_cap * 8);
    if (s->scratch)
        munmap(s->scratch, s->file->chunk_size);
    s->slots = NULL;
    s->frames = NULL;
    s->scratch = NULL;
    s->nslots = s->nstacks = 0;
    s->frames_cap = s->frames_used = 0;
}

void exp_stream_finish(exp_stream_t *s, uint64_t t)
{
    if (enter(s))
        return;
    flush_lost(s, t);
    chunk_release(s);
    window_release(s);
    unmap_tables(s);
    leave(s);
}

void exp_stream_forget(exp_stream_t *s)
{
    window_release(s);
    s->chunk = NULL;
    s->fast_end = 0;
    s->pack = 0;
    unmap_tables(s);
}

/* ---- giving back the unused ends of chunks -------------------------------------------------- */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

long long exp_evfile_trim(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    uint8_t h[64];
    long long rc = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        goto out;
    }
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, EXP_EV_MAGIC, 8)) {
        rc = -EINVAL;
        goto out;
    }
    uint32_t hsize = le32(h + 12), csize = le32(h + 16);
    if (hsize != EXP_EV_HEADER_SIZE || !csize || csize % 4096 || csize > (1u << 30)) {
        rc = -EINVAL;
        goto out;
    }
    for (off_t off = hsize; off < st.st_size; off += csize) {
        uint8_t c[EXP_CHUNK_HEADER_SIZE];
        if (pread(fd, c, sizeof c, off) != (ssize_t)sizeof c)
            break;
        uint32_t used = le32(c) == EXP_CHUNK_MAGIC ? le32(c + 12) : 0;
        /* the pages a reader touches stay: the chunk's header and its records (a hole read on
         * a full tmpfs needs a page, and the mapping would fault) */
        uint64_t keep = EXP_CHUNK_HEADER_SIZE + (uint64_t)used;
        keep = (keep + 4095) / 4096 * 4096;
        uint64_t end = (uint64_t)(st.st_size - off) < csize ? (uint64_t)(st.st_size - off) : csize;
        if (keep >= end)
            continue;
        if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off + (off_t)keep,
                      (off_t)(end - keep)) != 0) {
            rc = -errno;
            goto out;
        }
        rc += (long long)(end - keep);
    }
out:
    close(fd);
    return rc;
}
