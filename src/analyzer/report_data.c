/*
 * report_data.c - the dataspace report model; see report_data.h. Sections: rows by name, the
 * scan (one MEMREF at a time), memory objects, ordering, layouts.
 */
#define _GNU_SOURCE
#include "analyzer/report_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/backtrack.h"
#include "analyzer/heapaddr.h"
#include "analyzer/symbols_data.h"
#include "base/grow.h"
#include "base/satadd.h"
#include "base/u64map.h"

static const char *const reasons[EXP_DUNK_NREASONS] = {
    [0] = "",
    [EXP_DUNK_NO_DEBUG] = "(module without DWARF debug information)",
    [EXP_DUNK_BAD_TARGET] = "(backtracking found no valid branch target: code not decodable)",
    [EXP_DUNK_BRANCH_TARGET] = "(backtracking traversed a branch target)",
    [EXP_DUNK_NO_DESCRIPTOR] = "(no variable describes the operand's register)",
    [EXP_DUNK_NOT_MEMREF] = "(not a memory-referencing instruction)",
    [EXP_DUNK_UNDETERMINABLE] = "(not determinable from the debug information)",
    [EXP_DUNK_JUMP_CALL] = "(backtracking was stopped by a jump or call)",
    [EXP_DUNK_OUT_OF_RANGE] = "(backtracking did not find the trigger within range)",
    [EXP_DUNK_REG_CHANGED] = "(a register changed after the trigger)",
    [EXP_DUNK_NO_VA] = "(no valid virtual address)",
};

const char *rep_data_reason(int reason)
{
    return reason > 0 && reason < EXP_DUNK_NREASONS ? reasons[reason] : "(unknown reason)";
}

static int nomem(tally_err_t *err) { return tally_errf(err, TALLY_ENOMEM, "out of memory"); }

/* ---- rows by name ----------------------------------------------------------------------------- */

typedef struct fcache {
    bt_func_t f;
    int done;
} fcache_t;

/* The dynamic TLS blocks a thread may have (one per object loaded by dlopen with thread-locals
 * it touched): more in an experiment are not placed (each reference looks at its thread's). */
#define DTLS_PER_THREAD 256

typedef struct scan {
    ses_t *s;
    uint32_t exp;
    rep_data_t *d;
    size_t cap, lcap, pcap;
    u64map_t names;     /* hash of a name -> row (a collision chains through linear search) */
    u64map_t funcs;     /* function id -> fcache index */
    fcache_t *fc;
    size_t nfc, fccap;
    u64map_t lines, pages; /* (exp, proc, addr) hash -> row */
    csh cs;
    sym_data_t *sd;
    sym_dref_t dr; /* the current reference's object */
    uint32_t trig_obj; /* and its trigger instruction (symbols' object, ELF address) */
    uint64_t trig_pc;
    int err;
    /* heap tracing: the live blocks of process heap_proc, and the allocation sites by stack */
    ha_t *heap;
    uint32_t heap_proc;
    u64map_t sites; /* (exp, stack) -> site index */
    /* dynamic TLS blocks (TLS_BLOCK records) of the current experiment: thread, object, where;
     * found by (proc, tid, object) through dtls_at, and by thread through dtls_thr (each thread's
     * blocks, at most DTLS_PER_THREAD) */
    struct dtls {
        uint32_t proc, tid, id;
        uint64_t addr;
    } *dtls;
    size_t ndtls, dtlscap;
    u64map_t dtls_at, dtls_thr;
    struct dtls_thread {
        uint32_t proc, tid;
        uint32_t *blocks; /* indexes into dtls */
        size_t n, cap;
    } *dthr;
    size_t ndthr, dthrcap;
    /* the threads of process stk_proc that recorded their stack, by stack_lo then t_start */
    const exp_thread_t **stk;
    size_t nstk, stkcap;
    uint32_t stk_proc;
    struct site *site;
    size_t nsite, sitecap;
} scan_t;

/* An allocation site: its name as a data object, and the type its code gives the block. */
typedef struct site {
    char name[160];
    int has_type;
    uint32_t obj; /* the type's object (symbols) */
    uint64_t type;
} site_t;

static uint64_t hash_str(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h >> 1;
}

/* The row named name[0..n) (added with kind when new), or -1 on no memory. */
static long row(scan_t *c, const char *name, size_t n, int kind)
{
    rep_data_t *d = c->d;
    uint64_t h = hash_str(name, n);
    int found;
    for (uint64_t k = h;; k = (k + 1) & (UINT64_MAX >> 1)) {
        uint32_t *slot = u64map_slot(&c->names, k, &found);
        if (!slot)
            return -1;
        if (found) {
            rep_dobj_t *o = &d->objs[*slot];
            if (strlen(o->name) == n && !memcmp(o->name, name, n))
                return *slot;
            continue;
        }
        if (GROW(d->objs, d->nobjs, c->cap)) {
            u64map_remove(&c->names, k);
            return -1;
        }
        rep_dobj_t *o = &d->objs[d->nobjs];
        memset(o, 0, sizeof *o);
        o->name = strndup(name, n);
        o->via = strdup("");
        o->kind = kind;
        if (!o->name || !o->via) {
            free(o->name);
            free(o->via);
            u64map_remove(&c->names, k);
            return -1;
        }
        *slot = (uint32_t)d->nobjs;
        return (long)d->nobjs++;
    }
}

/* Sums saturate at 2^64-1 (docs/FORMAT.md): an experiment can claim any weight. */
static void add(rep_dsv_t *v, uint32_t src, uint64_t w)
{
    sat_add_to(&v->w[src], w);
    sat_add_to(&v->n, 1);
}

/* ---- memory objects ----------------------------------------------------------------------------- */

static rep_mobj_t *mobj(scan_t *c, u64map_t *m, rep_mobj_t **arr, size_t *n, size_t *cap,
                        uint32_t proc, uint64_t addr)
{
    uint64_t key = (addr * 0x9e3779b97f4a7c15ull ^ ((uint64_t)c->exp << 40 | proc)) >> 1;
    int found;
    uint32_t *slot = u64map_slot(m, key, &found);
    if (!slot)
        return NULL;
    if (!found) {
        if (GROW(*arr, *n, *cap)) {
            u64map_remove(m, key);
            return NULL;
        }
        rep_mobj_t *o = &(*arr)[*n];
        memset(o, 0, sizeof *o);
        o->exp = c->exp;
        o->proc = proc;
        o->addr = addr;
        o->top = -1;
        for (int i = 0; i < 4; i++)
            o->top_obj[i] = -1;
        *slot = (uint32_t)(*n)++;
    }
    return &(*arr)[*slot];
}

static void touch(rep_mobj_t *o, uint32_t src, uint64_t w, uint32_t tid, int write, long obj,
                  uint64_t ea, uint32_t size, int line)
{
    add(&o->v, src, w);
    if (write)
        o->writes++;
    else
        o->reads++;
    uint32_t t;
    for (t = 0; t < o->ntids && o->tids[t] != tid; t++)
        ;
    if (t == o->ntids) {
        o->nthreads++;
        if (o->ntids < 8)
            o->tids[o->ntids++] = tid;
        else
            t = 8;
    }
    if (line && t < 8) {
        uint64_t off = ea & (REP_DS_LINE - 1);
        uint64_t bits = 0;
        for (uint64_t b = off; b < off + (size ? size : 1) && b < 64; b++)
            bits |= 1ull << b;
        o->touched[t] |= bits;
        if (write)
            o->written[t] |= bits;
    }
    if (obj >= 0) {
        int k;
        for (k = 0; k < 4 && o->top_obj[k] != obj && o->top_obj[k] >= 0; k++)
            ;
        if (k < 4) {
            o->top_obj[k] = (int32_t)obj;
            o->top_n[k]++;
        }
    }
}

/* ---- the scan --------------------------------------------------------------------------------- */

/* The decoded function fn of object obj (NULL when its code cannot be read). */
static const bt_func_t *func_code(scan_t *c, uint32_t obj, uint32_t fn)
{
    int found;
    uint32_t *slot = u64map_slot(&c->funcs, fn, &found);
    if (!slot)
        return NULL;
    if (!found) {
        if (GROW(c->fc, c->nfc, c->fccap)) {
            u64map_remove(&c->funcs, fn);
            return NULL;
        }
        *slot = (uint32_t)c->nfc;
        fcache_t *f = &c->fc[c->nfc++];
        memset(f, 0, sizeof *f);
        const sym_func_t *sf = sym_func(c->s->sym, fn);
        if (sf && sf->size && sf->size <= (64u << 20)) {
            uint8_t *code = malloc(sf->size);
            if (code && sym_read_code(c->s->sym, obj, sf->addr, code, sf->size) == (long)sf->size)
                bt_func_decode(c->cs, code, sf->size, sf->addr, &f->f);
            free(code);
        }
        f->done = 1;
    }
    return c->fc[*slot].f.n ? &c->fc[*slot].f : NULL;
}

/* A key of a hashed lookup by several 32-bit values (a collision probes on: see row). */
static uint64_t key3(uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t h = 1469598103934665603ull;
    uint32_t v[3] = { a, b, c };
    for (int i = 0; i < 3; i++)
        h = (h ^ v[i]) * 1099511628211ull, h ^= h >> 29;
    return h & (UINT64_MAX >> 1);
}

/* The dynamic TLS blocks of thread tid of process proc (added when new), or NULL: no memory. */
static struct dtls_thread *dtls_thread(scan_t *c, uint32_t proc, uint32_t tid, int add)
{
    int found;
    for (uint64_t k = key3(proc, tid, UINT32_MAX);; k = (k + 1) & (UINT64_MAX >> 1)) {
        if (!add) {
            const uint32_t *v = u64map_get(&c->dtls_thr, k);
            if (!v)
                return NULL;
            if (c->dthr[*v].proc == proc && c->dthr[*v].tid == tid)
                return &c->dthr[*v];
            continue;
        }
        uint32_t *slot = u64map_slot(&c->dtls_thr, k, &found);
        if (!slot)
            return NULL;
        if (found) {
            if (c->dthr[*slot].proc == proc && c->dthr[*slot].tid == tid)
                return &c->dthr[*slot];
            continue;
        }
        if (GROW(c->dthr, c->ndthr, c->dthrcap)) {
            u64map_remove(&c->dtls_thr, k);
            return NULL;
        }
        *slot = (uint32_t)c->ndthr;
        struct dtls_thread *t = &c->dthr[c->ndthr++];
        t->proc = proc;
        t->tid = tid;
        t->blocks = NULL;
        t->n = t->cap = 0;
        return t;
    }
}

/* A thread's dynamic TLS block of an object (a TLS_BLOCK record), kept for the references after
 * it; a later one for the same thread and object replaces it. One hashed lookup a record. */
static int tls_block_event(scan_t *c, const exp_event_t *ev)
{
    int found;
    for (uint64_t k = key3(ev->proc, ev->tid, ev->call);; k = (k + 1) & (UINT64_MAX >> 1)) {
        uint32_t *slot = u64map_slot(&c->dtls_at, k, &found);
        if (!slot)
            return c->err = TALLY_ENOMEM;
        if (found) {
            struct dtls *x = &c->dtls[*slot];
            if (x->proc != ev->proc || x->tid != ev->tid || x->id != ev->call)
                continue;
            x->addr = ev->addr;
            return 0;
        }
        struct dtls_thread *t = dtls_thread(c, ev->proc, ev->tid, 1);
        if (!t || GROW(c->dtls, c->ndtls, c->dtlscap)) {
            u64map_remove(&c->dtls_at, k);
            return c->err = TALLY_ENOMEM;
        }
        if (t->n < DTLS_PER_THREAD) {
            if (GROW(t->blocks, t->n, t->cap)) {
                u64map_remove(&c->dtls_at, k);
                return c->err = TALLY_ENOMEM;
            }
            t->blocks[t->n++] = (uint32_t)c->ndtls;
        }
        *slot = (uint32_t)c->ndtls;
        c->dtls[c->ndtls++] = (struct dtls){ ev->proc, ev->tid, ev->call, ev->addr };
        return 0;
    }
}

/* An address inside one of the sample's thread's dynamic TLS blocks (objects loaded by dlopen
 * without static TLS) is that object's thread-local at the offset. The block is the one that
 * starts nearest below the address, among those of objects loaded at the sample's time (an
 * unloaded object's block may have been reused); at most a few are tried. */
static void dyn_tls_object(scan_t *c, const exp_event_t *ev, const exp_process_t *p, uint64_t ea,
                           sym_dref_t *dr)
{
    const struct dtls_thread *t = dtls_thread(c, ev->proc, ev->tid, 0);
    if (!t)
        return;
    uint64_t below = 0; /* with tried: the blocks tried so far start at or above it */
    for (int tries = 0; tries < 4; tries++) {
        const struct dtls *x = NULL;
        for (size_t i = 0; i < t->n; i++) {
            const struct dtls *y = &c->dtls[t->blocks[i]];
            if (y->addr <= ea && (!tries || y->addr < below) && (!x || y->addr > x->addr))
                x = y;
        }
        if (!x)
            return;
        below = x->addr;
        for (size_t k = 0; k < p->nobjects; k++) {
            const exp_object_t *o = &p->objects[k];
            if (o->id != x->id || ev->t < o->t_load || ev->t >= o->t_unload)
                continue;
            uint32_t obj = sym_object_add(c->s->sym, o->path, o->buildid);
            sym_dref_t y;
            if (obj != UINT32_MAX && sym_data_tls(c->sd, obj, ea - x->addr, &y)) {
                if (!y.reason || dr->reason)
                    *dr = y;
                return;
            }
        }
    }
}

/* An address inside the static TLS block of one of the process's objects (each starts its
 * load record's tls_below under the thread pointer tp of the sample's thread) is that object's
 * thread-local variable, whatever the instruction's operand looked like (a library's variables
 * are reached through __tls_get_addr's result, the executable's through %fs). */
static void tls_object(scan_t *c, const exp_process_t *p, uint64_t t, uint64_t tp, uint64_t ea,
                       sym_dref_t *dr)
{
    for (size_t i = 0; i < p->nobjects; i++) {
        const exp_object_t *o = &p->objects[i];
        if (!o->tls_below || o->tls_below > tp || ea < tp - o->tls_below || ea >= tp ||
            t < o->t_load || t >= o->t_unload)
            continue;
        uint32_t obj = sym_object_add(c->s->sym, o->path, o->buildid);
        sym_dref_t x;
        if (obj != UINT32_MAX && sym_data_tls(c->sd, obj, ea - (tp - o->tls_below), &x)) {
            if (!x.reason || dr->reason)
                *dr = x;
            return;
        }
    }
}

/* An address in the stack above the sample's own frame: the frame of the caller that holds it
 * (a local array passed down by pointer), found by walking the sample's stack up from the
 * sample's CFA while each caller's CFA is rsp-based, or rbp-based with rbp still the sample's
 * (symbols_data.h). */
static void caller_frame(scan_t *c, const exp_event_t *ev, const exp_process_t *p, uint32_t obj,
                         const sym_dquery_t *q, sym_dref_t *dr)
{
    uint32_t nf = 0, fl, sp;
    exp_stacks_t *st = eng_stacks(c->s->eng, c->exp);
    uint64_t cfa;
    if (!q->regs || !(q->regmask >> 7 & 1) || q->ea < q->regs[7] ||
        q->ea - q->regs[7] > (256u << 20) || ev->stack == EXP_NO_STACK)
        return;
    const uint64_t *pcs = exp_stacks_get(st, ev->stack, &nf, &fl, &sp);
    if (!pcs || nf < 2 || pcs[0] != ev->mref->pc || !sym_data_cfa(c->sd, obj, q, &cfa) ||
        q->ea < cfa)
        return;
    uint32_t gen = exp_stacks_gen(st, ev->stack);
    uint64_t rbp = q->regmask >> 6 & 1 ? q->regs[6] : 0;
    int rbp_ok = q->regmask >> 6 & 1 && sym_data_rbp_kept(c->sd, obj, q->sample_pc);
    for (uint32_t k = 1; k < nf && k < 256; k++) {
        const exp_object_t *o = exp_object_in(p, pcs[k], gen);
        uint32_t ko = o ? sym_object_add(c->s->sym, o->path, o->buildid) : UINT32_MAX;
        if (ko == UINT32_MAX || pcs[k] - o->bias == 0)
            return;
        sym_dref_t x;
        int rc = sym_data_caller_frame(c->sd, ko, pcs[k] - o->bias - 1, cfa, q->ea, &rbp, &rbp_ok,
                                       &cfa, &x);
        if (rc < 0)
            return;
        if (rc > 0) {
            *dr = x;
            return;
        }
    }
}

/* Classifies one memory reference: the reason it has no object (0: named into *dr), and what is
 * known of its address. */
static int classify(scan_t *c, const exp_event_t *ev, sym_dref_t *dr, int *ea_ok, uint64_t *ea,
                    int *ea_reason, int *write, uint32_t *size)
{
    const exp_memref_t *m = ev->mref;
    c->trig_obj = UINT32_MAX; /* no trigger found (yet) */
    exp_experiment_t *e = c->s->exps[c->exp];
    const exp_process_t *p = e->procs[ev->proc];
    uint32_t nf, fl, proc;
    exp_stacks_t *st = eng_stacks(c->s->eng, c->exp);
    uint32_t gen = 0;
    if (ev->stack != EXP_NO_STACK && exp_stacks_get(st, ev->stack, &nf, &fl, &proc))
        gen = exp_stacks_gen(st, ev->stack);
    *ea_ok = 0;
    *ea_reason = EXP_DUNK_NO_VA;
    *write = 0;
    *size = 0;
    if (m->flags & EXP_MREF_EA) {
        *ea_ok = 1;
        *ea = m->ea;
    }
    const exp_object_t *o = exp_object_in(p, m->pc, gen);
    if (!o)
        return EXP_DUNK_NO_DEBUG;
    uint32_t obj = sym_object_add(c->s->sym, o->path, o->buildid);
    if (obj == UINT32_MAX)
        return EXP_DUNK_NO_DEBUG;
    uint64_t pc = m->pc - o->bias;
    if (!sym_dwarf_cu(c->s->sym, obj, pc))
        return EXP_DUNK_NO_DEBUG;
    const bt_func_t *f = func_code(c, obj, sym_func_at(c->s->sym, obj, pc));
    if (!f)
        return EXP_DUNK_BAD_TARGET;
    int mode = m->flags & EXP_MREF_TRIGGER ? BT_EXACT : m->source == 0 ? BT_AT_PC : BT_BEFORE_PC;
    bt_result_t r;
    bt_find(c->cs, f, pc, mode, m->regs, m->flags & EXP_MREF_REGS ? m->regmask : 0, &r);
    if (r.reason)
        return r.reason;
    *write = r.op.write;
    *size = r.op.size;
    if (!*ea_ok && r.ea_ok) {
        *ea_ok = 1;
        *ea = r.ea;
    } else if (!*ea_ok && r.ea_static) {
        *ea_ok = 1;
        *ea = r.ea_elf + o->bias;
    } else if (!*ea_ok) {
        *ea_reason = r.ea_reason;
    }
    sym_dquery_t q;
    memset(&q, 0, sizeof q);
    q.pc = r.trigger;
    q.op = r.op;
    if (r.ea_ok && r.base_ok) {
        q.has_off = 1;
        q.off = (int64_t)(r.ea - r.base_value);
    } else if (r.op.index == BT_REG_NONE) {
        q.has_off = 1;
        q.off = r.op.disp;
    }
    if (*ea_ok) {
        q.has_ea = 1;
        q.ea = *ea;
        q.sample_pc = pc;
        q.regs = m->regs;
        q.regmask = m->flags & EXP_MREF_REGS ? m->regmask : 0;
    }
    if (m->flags & EXP_MREF_REGS && m->regmask >> EXP_MREF_REG_FSBASE & 1) {
        q.has_tp = 1;
        q.tp = m->regs[EXP_MREF_REG_FSBASE];
    }
    if (r.ea_static) {
        q.has_addr = 1;
        q.addr = r.ea_elf;
    } else if (*ea_ok && *ea >= o->bias) {
        q.has_addr = 1;
        q.addr = *ea - o->bias;
    }
    c->trig_obj = obj;
    c->trig_pc = r.trigger;
    sym_data_at(c->sd, obj, &q, dr);
    if (*ea_ok && (dr->reason || dr->kind == SYM_DATA_POINTEE))
        caller_frame(c, ev, p, obj, &q, dr);
    if (*ea_ok && q.has_tp)
        tls_object(c, p, ev->t, q.tp, *ea, dr);
    if (*ea_ok && c->ndtls && (dr->reason || dr->kind != SYM_DATA_TLS))
        dyn_tls_object(c, ev, p, *ea, dr);
    return dr->reason;
}

/* Counts the current reference's trigger instruction for object row o (its first four). */
static void count_trigger(scan_t *c, rep_dobj_t *o)
{
    if (c->trig_obj == UINT32_MAX)
        return;
    for (int k = 0; k < REP_DS_TRIGGERS; k++) {
        if (o->trig_n[k] && (o->trig_obj[k] != c->trig_obj || o->trig_pc[k] != c->trig_pc))
            continue;
        o->trig_obj[k] = c->trig_obj;
        o->trig_pc[k] = c->trig_pc;
        o->trig_n[k]++;
        return;
    }
}

/* ---- heap blocks ------------------------------------------------------------------------------ */

/* The live heap blocks of process proc (heap tracing), or NULL when it has none. */
static ha_t *heap_of(scan_t *c, uint32_t proc)
{
    if (!c->heap)
        return NULL;
    if (proc != c->heap_proc) {
        ha_clear(c->heap);
        c->heap_proc = proc;
    }
    return c->heap;
}

static int heap_event(scan_t *c, const exp_event_t *ev)
{
    if (!c->heap && !(c->heap = ha_new()))
        return c->err = TALLY_ENOMEM;
    ha_t *h = heap_of(c, ev->proc);
    int mapped = ev->call == EXP_HEAP_MMAP || ev->call == EXP_HEAP_MREMAP;
    if (ev->type == EXP_REC_HEAP_FREE || ev->type == EXP_REC_MAP_FREE)
        ha_release(h, ev->addr, ev->size, mapped);
    else if (ha_alloc(h, ev->addr, ev->size, mapped, ev->stack))
        return c->err = TALLY_ENOMEM;
    return 0;
}

/* The type of the block that the allocating code at return address ra (ELF, object obj) keeps
 * in a pointer variable. The result is in rax at ra; the variable's location list may start a
 * few instructions later (after the check against NULL or MAP_FAILED), in rax or in a register
 * the result was copied to. So, along the fall-through path from ra (at most 8 instructions, up
 * to a call, return or jump), at each instruction: a pointer variable living in a register that
 * still holds the result gives its pointee type. */
static int site_type(scan_t *c, uint32_t obj, uint64_t ra, uint64_t *type)
{
    if (sym_data_ptr_in_reg(c->sd, obj, ra, 0, type))
        return 1;
    const bt_func_t *f = func_code(c, obj, sym_func_at(c->s->sym, obj, ra));
    if (!f)
        return 0;
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->insn[mid].address < ra)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == f->n || f->insn[lo].address != ra)
        return 0;
    uint32_t held = 1; /* DWARF registers 0-15 holding the result: rax */
    for (size_t i = lo; i < f->n && i < lo + 8 && held; i++) {
        const cs_insn *in = &f->insn[i];
        if (i > lo)
            for (int r = 0; r < 16; r++)
                if (held >> r & 1 && sym_data_ptr_in_reg(c->sd, obj, in->address, r, type))
                    return 1;
        if (!in->detail)
            return 0;
        const cs_x86 *x = &in->detail->x86;
        if (cs_insn_group(c->cs, in, CS_GRP_CALL) || cs_insn_group(c->cs, in, CS_GRP_RET) ||
            in->id == X86_INS_JMP)
            return 0;
        /* a copy of a register holding it adds its destination; any other write drops one */
        int copy_to = -1;
        if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
            x->operands[1].type == X86_OP_REG && x->operands[0].size == 8) {
            int src = bt_dwarf_reg(x->operands[1].reg);
            if (src >= 0 && src < 16 && held >> src & 1)
                copy_to = bt_dwarf_reg(x->operands[0].reg);
        }
        cs_regs rd, wr;
        uint8_t nrd, nwr;
        if (cs_regs_access(c->cs, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
            return 0;
        for (int k = 0; k < nwr; k++) {
            int r = bt_dwarf_reg(wr[k]);
            if (r >= 0 && r < 16)
                held &= ~(1u << r);
        }
        if (copy_to >= 0 && copy_to < 16)
            held |= 1u << copy_to;
    }
    return 0;
}

/* The allocation site of the blocks allocated with stack (the caller of the traced function:
 * the stack's second frame), or NULL on no memory. */
static const site_t *site_of(scan_t *c, uint32_t proc, uint32_t stack)
{
    uint64_t key = ((uint64_t)c->exp << 32 | stack) & (UINT64_MAX >> 1);
    int found;
    uint32_t *slot = u64map_slot(&c->sites, key, &found);
    if (!slot)
        return NULL;
    if (found)
        return &c->site[*slot];
    if (GROW(c->site, c->nsite, c->sitecap)) {
        u64map_remove(&c->sites, key);
        return NULL;
    }
    *slot = (uint32_t)c->nsite;
    site_t *x = &c->site[c->nsite++];
    memset(x, 0, sizeof *x);
    uint32_t nf = 0, fl, sp;
    exp_stacks_t *st = eng_stacks(c->s->eng, c->exp);
    const uint64_t *pcs = stack != EXP_NO_STACK ? exp_stacks_get(st, stack, &nf, &fl, &sp) : NULL;
    const exp_object_t *o = NULL;
    uint64_t pc = 0;
    if (pcs && nf) {
        pc = nf >= 2 ? pcs[1] : pcs[0];
        o = exp_object_in(c->s->exps[c->exp]->procs[proc], pc, exp_stacks_gen(st, stack));
    }
    uint32_t obj = o ? sym_object_add(c->s->sym, o->path, o->buildid) : UINT32_MAX;
    if (obj == UINT32_MAX) {
        snprintf(x->name, sizeof x->name, "{heap:%s}", pcs && nf ? "<Unknown>" : "-");
        return x;
    }
    uint64_t ra = pc - o->bias, at = nf >= 2 && ra ? ra - 1 : ra; /* the call, not the return */
    const sym_func_t *f = sym_func(c->s->sym, sym_func_at(c->s->sym, obj, at));
    const char *file;
    uint32_t line;
    const char *fn = f && f->name ? f->name : "<Unknown>";
    int n;
    if (sym_line_at(c->s->sym, obj, at, &file, &line) == 0 && line) {
        const char *slash = strrchr(file, '/');
        n = snprintf(x->name, sizeof x->name, "{heap:%s@%s:%u}", fn, slash ? slash + 1 : file,
                     line);
    } else {
        n = snprintf(x->name, sizeof x->name, "{heap:%s+0x%llx}", fn,
                     (unsigned long long)(f ? at - f->addr : at));
    }
    for (int i = 0; i < n && i < (int)sizeof x->name; i++)
        if (x->name[i] == ' ')
            x->name[i] = '_';
    x->obj = obj;
    x->has_type = nf >= 2 && site_type(c, obj, ra, &x->type);
    return x;
}

/* Puts the level name before every level of dr: name.CHAIN (the deepest levels go when the
 * whole does not fit). */
static void prefix_level(sym_dref_t *dr, const char *name)
{
    size_t pre = strlen(name);
    if (pre + 1 >= sizeof dr->desc)
        pre = sizeof dr->desc - 2;
    int keep = dr->nlevels < SYM_DREF_LEVELS ? dr->nlevels : SYM_DREF_LEVELS - 1;
    size_t tail = keep ? dr->end[keep - 1] : 0;
    if (pre + 1 + tail >= sizeof dr->desc) { /* cut at a level that fits */
        while (keep > 0 && pre + 1 + dr->end[keep - 1] >= sizeof dr->desc)
            keep--;
        tail = keep ? dr->end[keep - 1] : 0;
    }
    memmove(dr->desc + pre + (keep ? 1 : 0), dr->desc, tail);
    memcpy(dr->desc, name, pre);
    if (keep)
        dr->desc[pre] = '.';
    dr->desc[pre + (keep ? 1 + tail : 0)] = 0;
    for (int i = keep; i > 0; i--)
        dr->end[i] = (uint16_t)(dr->end[i - 1] + pre + 1);
    dr->end[0] = (uint16_t)pre;
    dr->nlevels = keep + 1;
}

static int cmp_stack_lo(const void *a, const void *b)
{
    const exp_thread_t *x = *(const exp_thread_t *const *)a, *y = *(const exp_thread_t *const *)b;
    if (x->stack_lo != y->stack_lo)
        return x->stack_lo < y->stack_lo ? -1 : 1;
    return x->t_start < y->t_start ? -1 : x->t_start > y->t_start;
}

/* The thread of process p (index proc) whose stack holds ea at time t (its `thread` record's
 * bounds, while it lived), or NULL. The threads are sorted by stack once per process: a
 * reference looks at the stacks starting nearest below ea (the latest thread to start on each
 * before t: a stack is reused by the threads after the one that ended), a few at most. */
static const exp_thread_t *stack_owner(scan_t *c, const exp_process_t *p, uint32_t proc,
                                       uint64_t ea, uint64_t t)
{
    if (proc != c->stk_proc) {
        c->nstk = 0;
        c->stk_proc = proc;
        for (size_t i = 0; i < p->nthreads; i++)
            if (p->threads[i].stack_hi) {
                if (GROW(c->stk, c->nstk, c->stkcap)) {
                    c->err = TALLY_ENOMEM;
                    c->nstk = 0;
                    return NULL;
                }
                c->stk[c->nstk++] = &p->threads[i];
            }
        if (c->nstk > 1)
            qsort(c->stk, c->nstk, sizeof *c->stk, cmp_stack_lo);
    }
    size_t end = c->nstk; /* the entries before end start at or below ea */
    uint64_t key = ea;
    for (int tries = 0; tries < 16; tries++) {
        size_t lo = 0, hi = end;
        while (lo < hi) { /* the first entry starting above key */
            size_t mid = (lo + hi) / 2;
            if (c->stk[mid]->stack_lo <= key)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0)
            return NULL;
        uint64_t base = c->stk[lo - 1]->stack_lo;
        size_t first = 0, h2 = lo; /* the run of entries starting at base: [first, lo) */
        while (first < h2) {
            size_t mid = (first + h2) / 2;
            if (c->stk[mid]->stack_lo < base)
                first = mid + 1;
            else
                h2 = mid;
        }
        size_t a = first, b = lo; /* the last of them to start at or before t */
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (c->stk[mid]->t_start <= t)
                a = mid + 1;
            else
                b = mid;
        }
        if (a > first) {
            const exp_thread_t *th = c->stk[a - 1];
            if (ea < th->stack_hi && (th->t_end == EXP_T_NEVER || t <= th->t_end))
                return th;
        }
        if (base == 0)
            return NULL;
        end = first;
        key = base - 1;
    }
    return NULL;
}

/* The reference at ea is in the stack of thread owner, but in no frame the sample's stack
 * placed: <Stack>, then the owning thread with the reason, then what the referencing code's
 * pointer type says is at the address (when it said). */
static void stack_object(const exp_event_t *ev, const exp_thread_t *owner, uint64_t ea,
                         int reason, sym_dref_t *dr)
{
    if (reason || dr->kind != SYM_DATA_POINTEE) {
        memset(dr, 0, sizeof *dr);
        dr->nlevels = 0;
    }
    char name[160];
    if (owner->tid != ev->tid)
        snprintf(name, sizeof name, "(thread %u, another thread's stack: its frames at the "
                 "time are not recorded)", owner->tid);
    else
        snprintf(name, sizeof name, "(thread %u, the sample's own stack: in no frame its "
                 "call stack places)", owner->tid);
    prefix_level(dr, name);
    prefix_level(dr, "<Stack>");
    dr->agg_level = dr->has_agg ? 2 : 0;
    dr->kind = SYM_DATA_STACK;
    dr->reason = 0;
    dr->var_offset = owner->stack_hi - ea; /* below the top of the stack */
}

/* The reference at ea is inside heap block b: the block is the object (named by its allocation
 * site), and what is at the offset in it, typed by the code that referenced it (the type of the
 * pointer variable in the operand's register, already in *dr) or else by the code that
 * allocated it (which wins over a guess from a nearby pointer variable). *agg_obj: the object
 * whose DWARF holds the aggregate's type. Returns 0, or TALLY_ENOMEM. */
static int heap_object(scan_t *c, const exp_event_t *ev, const ha_block_t *b, uint64_t ea,
                       int reason, sym_dref_t *dr, uint32_t *agg_obj)
{
    const site_t *x = site_of(c, ev->proc, b->tag);
    if (!x)
        return TALLY_ENOMEM;
    if (reason || dr->kind != SYM_DATA_POINTEE || (dr->anchored && x->has_type)) {
        if (x->has_type)
            sym_data_typed(c->sd, x->obj, x->type, ea - b->base, dr);
        if (!x->has_type || dr->reason) {
            memset(dr, 0, sizeof *dr);
            dr->nlevels = 0;
        } else {
            *agg_obj = x->obj;
        }
    }
    prefix_level(dr, x->name); /* {heap:SITE}.CHAIN */
    dr->agg_level = dr->has_agg ? 1 : 0;
    dr->kind = SYM_DATA_HEAP;
    dr->scalar = 0;
    dr->reason = 0;
    dr->var_offset = ea - b->base;
    return 0;
}

static int memref_cb(void *ctx, const exp_event_t *ev)
{
    scan_t *c = ctx;
    if (c->err)
        return 0;
    if (ev->type == EXP_REC_HEAP_ALLOC || ev->type == EXP_REC_HEAP_FREE ||
        ev->type == EXP_REC_MAP_ALLOC || ev->type == EXP_REC_MAP_FREE) /* the allocation map */
        return heap_event(c, ev) ? c->err : 0;
    if (ev->type == EXP_REC_TLS_BLOCK)
        return tls_block_event(c, ev) ? c->err : 0;
    if (ev->type != EXP_REC_MEMREF || !ev->mref || !eng_event_selected(c->s->eng, c->exp, ev))
        return 0;
    rep_data_t *d = c->d;
    uint32_t src = ev->mref->source < REP_DS_SOURCES ? ev->mref->source : REP_DS_SOURCES - 1;
    uint64_t w = ev->weight;
    d->sources |= 1u << src;
    d->memrefs++;
    sym_dref_t *dr = &c->dr;
    int ea_ok, ea_reason, write;
    uint32_t size;
    uint64_t ea = 0;
    int reason = classify(c, ev, dr, &ea_ok, &ea, &ea_reason, &write, &size);
    uint32_t agg_obj = UINT32_MAX;
    const exp_process_t *p = c->s->exps[c->exp]->procs[ev->proc];
    /* an address inside a traced (or mapped) heap block that nothing surer named (a variable of
     * the frame, a static, a thread-local: an mmap'd region can be a stack) is the block's */
    if (ea_ok && (reason || dr->kind == SYM_DATA_POINTEE)) {
        ha_t *h = heap_of(c, ev->proc);
        const ha_block_t *b = h ? ha_find(h, ea) : NULL;
        const exp_thread_t *owner = b ? NULL : stack_owner(c, p, ev->proc, ea, ev->t);
        if (b) {
            if (heap_object(c, ev, b, ea, reason, dr, &agg_obj))
                return c->err = TALLY_ENOMEM;
            reason = 0;
        } else if (owner) {
            stack_object(ev, owner, ea, reason, dr);
            reason = 0;
        } else if ((reason == EXP_DUNK_NO_DESCRIPTOR || reason == EXP_DUNK_UNDETERMINABLE) &&
                   !p->heap_on) {
            d->heap_untraced++;
            if (p->settings.heap_map)
                d->heap_mapped++;
        }
    }
    add(&d->objs[0].v, src, w); /* <Total> */
    long leaf = -1;
    if (reason) {
        long u = row(c, "<Unknown>", 9, REP_DOBJ_UNKNOWN);
        char nm[160];
        int n = snprintf(nm, sizeof nm, "<Unknown>.%s", rep_data_reason(reason));
        long r = row(c, nm, (size_t)n, REP_DOBJ_REASON);
        if (u < 0 || r < 0)
            return c->err = TALLY_ENOMEM;
        d->objs[r].reason = reason;
        add(&d->objs[u].v, src, w);
        add(&d->objs[r].v, src, w);
    } else {
        for (int i = 0; i < dr->nlevels; i++) {
            int last = i == dr->nlevels - 1;
            long r = row(c, dr->desc, dr->end[i], last ? REP_DOBJ_OBJECT : REP_DOBJ_AGGREGATE);
            if (r < 0)
                return c->err = TALLY_ENOMEM;
            rep_dobj_t *o = &d->objs[r];
            if (last) {
                o->kind = REP_DOBJ_OBJECT, leaf = r;
                count_trigger(c, o);
            }
            if (i == dr->agg_level && dr->has_agg && !o->has_agg) {
                o->has_agg = 1;
                o->agg = dr->agg;
                const exp_object_t *eo = exp_object_at(p, ev->mref->pc, EXP_T_NEVER);
                o->agg_obj = agg_obj != UINT32_MAX ? agg_obj
                             : eo ? sym_object_add(c->s->sym, eo->path, eo->buildid)
                                  : UINT32_MAX;
            }
            if (dr->var[0] && strcmp(o->via, dr->var)) {
                char *v = strdup(dr->var);
                if (v)
                    free(o->via), o->via = v;
            }
            o->scope = dr->kind;
            o->scalar = last && dr->scalar;
            add(&o->v, src, w);
            if (!ea_ok)
                add(&o->v_noaddr, src, w);
        }
        if (dr->scalar) {
            long r = row(c, "<Scalars>", 9, REP_DOBJ_SCALARS);
            if (r < 0)
                return c->err = TALLY_ENOMEM;
            add(&d->objs[r].v, src, w);
        }
    }
    if (!ea_ok) {
        add(&d->noaddr[reason ? reason : ea_reason], src, w);
        return 0;
    }
    rep_mobj_t *l = mobj(c, &c->lines, &d->lines, &d->nlines, &c->lcap, ev->proc,
                         ea & ~(uint64_t)(REP_DS_LINE - 1));
    rep_mobj_t *pg = mobj(c, &c->pages, &d->pages, &d->npages, &c->pcap, ev->proc,
                          ea & ~(uint64_t)(REP_DS_PAGE - 1));
    if (!l || !pg)
        return c->err = TALLY_ENOMEM;
    touch(l, src, w, ev->tid, write, leaf, ea, size, 1);
    touch(pg, src, w, ev->tid, write, leaf, ea, size, 0);
    return 0;
}

/* ---- ordering --------------------------------------------------------------------------------- */

static uint32_t sort_src;

static int cmp_obj(const void *a, const void *b)
{
    const rep_dobj_t *x = a, *y = b;
    if (x->kind == REP_DOBJ_TOTAL || y->kind == REP_DOBJ_TOTAL)
        return (y->kind == REP_DOBJ_TOTAL) - (x->kind == REP_DOBJ_TOTAL);
    if (x->v.w[sort_src] != y->v.w[sort_src])
        return x->v.w[sort_src] > y->v.w[sort_src] ? -1 : 1;
    if (x->v.n != y->v.n)
        return x->v.n > y->v.n ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_mobj(const void *a, const void *b)
{
    const rep_mobj_t *x = a, *y = b;
    if (x->v.w[sort_src] != y->v.w[sort_src])
        return x->v.w[sort_src] > y->v.w[sort_src] ? -1 : 1;
    if (x->v.n != y->v.n)
        return x->v.n > y->v.n ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Decides false sharing and the top object of each line; renumbers objects after the sort. */
static void finish_mobjs(rep_mobj_t *m, size_t n, const uint32_t *newidx)
{
    for (size_t i = 0; i < n; i++) {
        rep_mobj_t *o = &m[i];
        uint32_t best = 0;
        for (int k = 0; k < 4; k++)
            if (o->top_obj[k] >= 0) {
                o->top_obj[k] = (int32_t)newidx[o->top_obj[k]];
                if (o->top_n[k] > best)
                    best = o->top_n[k], o->top = o->top_obj[k];
            }
        for (uint32_t a = 0; a < o->ntids; a++)
            for (uint32_t b = a + 1; b < o->ntids; b++)
                if (!(o->touched[a] & o->touched[b]) && (o->written[a] | o->written[b]))
                    o->false_sharing = 1;
    }
}

void rep_data_free(rep_data_t *d)
{
    for (size_t i = 0; i < d->nobjs; i++) {
        free(d->objs[i].name);
        free(d->objs[i].via);
    }
    free(d->objs);
    free(d->lines);
    free(d->pages);
    memset(d, 0, sizeof *d);
}

int rep_data(ses_t *s, rep_data_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    scan_t c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.d = out;
    if (bt_open(&c.cs))
        return tally_errf(err, TALLY_EUNSUPPORTED, "capstone cannot disassemble x86-64 here");
    int rc = 0;
    if (!(c.sd = sym_data_new(s->sym)) || row(&c, "<Total>", 7, REP_DOBJ_TOTAL) != 0)
        rc = nomem(err);
    for (size_t x = 0; x < s->nexps && !rc; x++) {
        c.exp = (uint32_t)x;
        c.heap_proc = UINT32_MAX;
        c.stk_proc = UINT32_MAX;
        for (size_t i = 0; i < c.ndthr; i++)
            free(c.dthr[i].blocks);
        c.ndtls = c.ndthr = 0;
        u64map_free(&c.dtls_at);
        u64map_free(&c.dtls_thr);
        rc = exp_scan(s->exps[x], eng_stacks(s->eng, c.exp), memref_cb, &c, NULL, err);
        if (c.err)
            rc = nomem(err);
    }
    ha_free(c.heap);
    free(c.dtls);
    for (size_t i = 0; i < c.ndthr; i++)
        free(c.dthr[i].blocks);
    free(c.dthr);
    u64map_free(&c.dtls_at);
    u64map_free(&c.dtls_thr);
    free(c.stk);
    u64map_free(&c.sites);
    free(c.site);
    for (size_t i = 0; i < c.nfc; i++)
        bt_func_free(&c.fc[i].f);
    free(c.fc);
    u64map_free(&c.funcs);
    u64map_free(&c.names);
    u64map_free(&c.lines);
    u64map_free(&c.pages);
    sym_data_free(c.sd);
    cs_close(&c.cs);
    if (rc) {
        rep_data_free(out);
        return rc < 0 ? rc : nomem(err);
    }
    sort_src = 0;
    while (sort_src < REP_DS_SOURCES - 1 && !(out->sources >> sort_src & 1))
        sort_src++;
    /* the memory objects refer to objects by index: renumber them after the sort */
    size_t n = out->nobjs;
    uint32_t *newidx = malloc((n ? n : 1) * sizeof *newidx);
    if (!newidx) {
        rep_data_free(out);
        return nomem(err);
    }
    for (size_t i = 0; i < n; i++)
        out->objs[i].seq = (uint32_t)i;
    if (n)
        qsort(out->objs, n, sizeof *out->objs, cmp_obj);
    for (size_t i = 0; i < n; i++)
        newidx[out->objs[i].seq] = (uint32_t)i;
    finish_mobjs(out->lines, out->nlines, newidx);
    finish_mobjs(out->pages, out->npages, newidx);
    if (out->nlines) /* (qsort's array may not be NULL, even for no elements) */
        qsort(out->lines, out->nlines, sizeof *out->lines, cmp_mobj);
    if (out->npages)
        qsort(out->pages, out->npages, sizeof *out->pages, cmp_mobj);
    free(newidx);
    return 0;
}

long rep_data_find(const rep_data_t *d, const char *name)
{
    for (size_t i = 0; i < d->nobjs; i++)
        if (!strcmp(d->objs[i].name, name))
            return (long)i;
    return -1;
}

/* ---- layouts ---------------------------------------------------------------------------------- */

void rep_data_layouts_free(rep_layout_t *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < l[i].nrows; k++)
            free(l[i].rows[k].desc);
        free(l[i].rows);
    }
    free(l);
}

static int push_row(rep_layout_t *L, size_t *cap, const char *desc, uint64_t off, uint64_t size,
                    const rep_dsv_t *v)
{
    if (GROW(L->rows, L->nrows, *cap))
        return -1;
    rep_layout_row_t *r = &L->rows[L->nrows];
    r->desc = desc ? strdup(desc) : NULL;
    if (desc && !r->desc)
        return -1;
    r->offset = off;
    r->size = size;
    r->v = v;
    L->nrows++;
    return 0;
}

int rep_data_layouts(ses_t *s, const rep_data_t *d, rep_layout_t **out, size_t *n,
                     tally_err_t *err)
{
    *out = NULL;
    *n = 0;
    sym_data_t *sd = sym_data_new(s->sym);
    size_t cap = 0;
    int rc = sd ? 0 : nomem(err);
    for (size_t i = 0; i < d->nobjs && !rc; i++) {
        const rep_dobj_t *o = &d->objs[i];
        const char *dot = strstr(o->name, "}.");
        if (!o->has_agg || o->agg_obj == UINT32_MAX ||
            (dot && (strncmp(o->name, "{heap:", 6) || strstr(dot + 2, "}."))))
            continue; /* an aggregate's own row: its first level, or the second in a block */
        sym_member_t *mem;
        size_t nm;
        uint64_t size;
        if (sym_data_layout(sd, o->agg_obj, o->agg, &mem, &nm, &size))
            continue;
        if (GROW(*out, *n, cap)) {
            free(mem);
            rc = nomem(err);
            break;
        }
        rep_layout_t *L = &(*out)[(*n)++];
        memset(L, 0, sizeof *L);
        L->agg = o;
        L->size = size;
        size_t rcap = 0;
        uint64_t at = 0;
        for (size_t k = 0; k < nm && !rc; k++) {
            if (mem[k].offset > at && push_row(L, &rcap, NULL, at, mem[k].offset - at, NULL))
                rc = nomem(err);
            char full[SYM_DREF_MAX + 300];
            snprintf(full, sizeof full, "%s.%s", o->name, mem[k].desc);
            long r = rep_data_find(d, full);
            if (!rc && push_row(L, &rcap, mem[k].desc, mem[k].offset, mem[k].size,
                                r >= 0 ? &d->objs[r].v : NULL))
                rc = nomem(err);
            if (mem[k].offset + mem[k].size > at)
                at = mem[k].offset + mem[k].size;
        }
        if (!rc && size > at && push_row(L, &rcap, NULL, at, size - at, NULL))
            rc = nomem(err);
        free(mem);
    }
    sym_data_free(sd);
    if (rc) {
        rep_data_layouts_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
