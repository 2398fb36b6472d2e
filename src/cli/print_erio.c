/*
 * print_erio.c - er_print's heap and I/O reports: -heap (allocations and leaks per allocating
 * stack, <Total> first), -heapstat (the process with the highest peak, allocations and leaks by
 * size range), -ioactivity (I/O times by file), -iodetail (by descriptor opened), -iocallstack
 * (I/O per calling stack), -iostat (calls by kind and size range). Models: analyzer/traces.h,
 * analyzer/report_er.h. See print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/report_er.h"
#include "analyzer/traces.h"
#include "base/u64map.h"
#include "print.h"

#define DASHES "-------------------------------------------------------"

static int no_heap(pstate_t *ps)
{
    if (eng_has_metric(ps->ses->eng, ENG_M_HEAPALLOCCNT))
        return 0;
    if (!ps->json)
        sink_printf(&ps->out, "No heap data: collect with -H on (tally collect -H on ...).\n\n");
    return 1;
}

static int no_io(pstate_t *ps)
{
    eng_t *g = ps->ses->eng;
    if (eng_has_metric(g, ENG_M_IOREADCNT) || eng_has_metric(g, ENG_M_IOWRITECNT) ||
        eng_has_metric(g, ENG_M_IOOTHERCNT) || eng_has_metric(g, ENG_M_IOERRORCNT))
        return 0;
    if (!ps->json)
        sink_printf(&ps->out, "No I/O data: collect with -i on (tally collect -i on ...).\n\n");
    return 1;
}

/* ---- -heap ------------------------------------------------------------------------------------ */

typedef struct heap_order {
    const rep_heap_row_t *r, *leak; /* an allocating stack and its leaks (NULL: none) */
} heap_order_t;

static int cmp_order(const void *a, const void *b)
{
    const heap_order_t *x = a, *y = b;
    uint64_t lx = x->leak ? x->leak->bytes : 0, ly = y->leak ? y->leak->bytes : 0;
    if (lx != ly)
        return lx > ly ? -1 : 1;
    if (x->r->bytes != y->r->bytes)
        return x->r->bytes > y->r->bytes ? -1 : 1;
    return x->r->count > y->r->count ? -1 : x->r->count < y->r->count;
}

int view_heap_er(pstate_t *ps, const char *a)
{
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    tally_err_t err = { 0 };
    rep_heap_stacks_t al, lk;
    if (rep_heap_stacks(ps->ses, 0, &al, &err))
        return pr_report(&err);
    if (rep_heap_stacks(ps->ses, 1, &lk, &err)) {
        rep_heap_stacks_free(&al);
        return pr_report(&err);
    }
    /* the leaks of each allocating stack: the same stack (the engine's frames) */
    u64map_t leak_of = { 0 };
    int rc = 0;
    for (size_t i = 0; i < lk.n && !rc; i++)
        rc = u64map_put(&leak_of, (uint64_t)(uintptr_t)lk.rows[i].pcs, (uint32_t)i);
    json_t j, *jp = ps->json ? &j : NULL;
    sink_t *o = &ps->out;
    if (jp) {
        pr_json_begin(ps, jp);
        json_key(jp, "view");
        json_str(jp, "heap");
        json_key(jp, "instances");
        json_u64(jp, al.instances);
        json_key(jp, "bytes");
        json_u64(jp, al.bytes);
        json_key(jp, "leaked_instances");
        json_u64(jp, lk.instances);
        json_key(jp, "leaked_bytes");
        json_u64(jp, lk.bytes);
        json_key(jp, "stacks");
        json_arr_begin(jp);
    } else if (!rc && !no_heap(ps)) {
        sink_printf(o, "<Total>\nInstances = %llu  Bytes Allocated = %llu\n",
                    (unsigned long long)al.instances, (unsigned long long)al.bytes);
        if (lk.instances)
            sink_printf(o, "Instances = %llu  Bytes Leaked = %llu\n",
                        (unsigned long long)lk.instances, (unsigned long long)lk.bytes);
        sink_printf(o, "\n");
    }
    /* as er_print: the stacks that leak most first, then those that allocate most */
    heap_order_t *ord = calloc(al.n + 1, sizeof *ord);
    if (!ord)
        rc = 1;
    for (size_t i = 0; ord && i < al.n; i++) {
        const uint32_t *li = u64map_get(&leak_of, (uint64_t)(uintptr_t)al.rows[i].pcs);
        ord[i] = (heap_order_t){ &al.rows[i], li ? &lk.rows[*li] : NULL };
    }
    if (ord && al.n)
        qsort(ord, al.n, sizeof *ord, cmp_order);
    size_t shown = pr_limit_rows(ps, al.n);
    for (size_t i = 0; i < shown && !rc; i++) {
        const rep_heap_row_t *r = ord[i].r, *l = ord[i].leak;
        if (jp) {
            json_obj_begin(jp);
            json_key(jp, "instances");
            json_u64(jp, r->count);
            json_key(jp, "bytes");
            json_u64(jp, r->bytes);
            json_key(jp, "leaked_instances");
            json_u64(jp, l ? l->count : 0);
            json_key(jp, "leaked_bytes");
            json_u64(jp, l ? l->bytes : 0);
            json_key(jp, "stack");
        } else {
            sink_printf(o, "Stack 0x%08zx\nInstances = %llu  Bytes Allocated = %llu\n", i + 1,
                        (unsigned long long)r->count, (unsigned long long)r->bytes);
            if (l)
                sink_printf(o, "Instances = %llu  Bytes Leaked = %llu\n",
                            (unsigned long long)l->count, (unsigned long long)l->bytes);
        }
        rc = pr_print_stack(ps, jp, r->exp, r->proc, r->pcs, r->fns, r->n);
        if (jp)
            json_obj_end(jp);
        else
            sink_printf(o, "\n");
    }
    if (jp) {
        json_arr_end(jp);
        json_obj_end(jp);
        json_end_doc(jp);
    }
    free(ord);
    u64map_free(&leak_of);
    rep_heap_stacks_free(&al);
    rep_heap_stacks_free(&lk);
    if (rc)
        esc_fprintf(stderr, "tally: out of memory\n");
    return rc ? 1 : 0;
}

/* ---- -heapstat -------------------------------------------------------------------------------- */

static void ranges_text(pstate_t *ps, const char *head, const rep_sizes_t *z)
{
    sink_printf(&ps->out, "%s\n" DASHES "\n", head);
    for (int i = 0; i < REP_NSIZES; i++)
        if (z->count[i])
            sink_printf(&ps->out, "  %-32s%llu\n", rep_size_range(i),
                        (unsigned long long)z->count[i]);
    sink_printf(&ps->out, "\n");
}

static void ranges_json(json_t *j, const char *key, const rep_sizes_t *z)
{
    json_key(j, key);
    json_obj_begin(j);
    json_key(j, "ranges");
    json_obj_begin(j);
    for (int i = 0; i < REP_NSIZES; i++)
        if (z->count[i]) {
            json_key(j, rep_size_range(i));
            json_u64(j, z->count[i]);
        }
    json_obj_end(j);
    const char *k[] = { "calls", "bytes", "smallest", "largest", "ns", "longest_ns" };
    const uint64_t v[] = { z->n, z->bytes, z->min, z->max, z->ns, z->max_ns };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        json_key(j, k[i]);
        json_u64(j, v[i]);
    }
    json_obj_end(j);
}

int view_heapstat(pstate_t *ps, const char *a)
{
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    if (no_heap(ps) && !ps->json)
        return 0;
    tally_err_t err = { 0 };
    tr_heap_t h;
    if (tr_heap(ps->ses->eng, ps->ses->exps, ps->ses->nexps, &h, &err))
        return pr_report(&err);
    rep_sizes_t al, lk;
    if (rep_heap_sizes(ps->ses, &al, &lk, &err)) {
        tr_free_heap(&h);
        return pr_report(&err);
    }
    const tr_heap_proc_t *peak = NULL;
    for (size_t i = 0; i < h.nprocs; i++)
        if (!peak || h.procs[i].peak_bytes > peak->peak_bytes)
            peak = &h.procs[i];
    const exp_process_t *pp = peak ? ps->ses->exps[peak->exp]->procs[peak->proc] : NULL;
    uint64_t t0 = eng_run_start(ps->ses->eng);
    double tpeak = peak && peak->peak_t > t0 ? (double)(peak->peak_t - t0) * 1e-9 : 0;
    sink_t *o = &ps->out;
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "heapstat");
        if (peak) {
            json_key(&j, "peak");
            json_obj_begin(&j);
            json_key(&j, "bytes");
            json_u64(&j, peak->peak_bytes);
            json_key(&j, "experiment");
            json_u64(&j, peak->exp + 1);
            json_key(&j, "pid");
            json_u64(&j, pp->pid);
            json_key(&j, "time");
            json_num(&j, tpeak);
            json_obj_end(&j);
        }
        ranges_json(&j, "allocations", &al);
        ranges_json(&j, "leaks", &lk);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        if (peak)
            sink_printf(o, "\nProcess With Highest Peak Memory Usage\n" DASHES "\n"
                           "%-34s%llu\n%-34s%u\n%-34s%u\n%-34s%.3f (secs.)\n\n",
                        "Heap size bytes", (unsigned long long)peak->peak_bytes, "Experiment Id",
                        peak->exp + 1, "Process Id", pp->pid, "Time of peak", tpeak);
        sink_printf(o, "Memory Allocations Statistics\n");
        ranges_text(ps, "Allocation Size Range             Allocations          ", &al);
        sink_printf(o, "%-34s%llu\n%-34s%llu\n%-34s%llu\n%-34s%llu\n\n",
                    "Smallest allocation bytes", (unsigned long long)al.min,
                    "Largest allocation bytes", (unsigned long long)al.max, "Total allocations",
                    (unsigned long long)al.n, "Total bytes", (unsigned long long)al.bytes);
        if (lk.n) {
            sink_printf(o, "Memory Leaks Statistics\n");
            ranges_text(ps, "Leak Size Range                   Leaks              ", &lk);
            sink_printf(o, "%-34s%llu\n%-34s%llu\n%-34s%llu \n%-34s%llu\n\n",
                        "Smallest leaked bytes", (unsigned long long)lk.min,
                        "Largest leaked bytes", (unsigned long long)lk.max, "Total leaked",
                        (unsigned long long)lk.n, "Total bytes", (unsigned long long)lk.bytes);
        }
    }
    tr_free_heap(&h);
    return 0;
}

/* ---- -ioactivity, -iodetail ------------------------------------------------------------------- */

static int io_table(pstate_t *ps, int by_fd)
{
    eng_t *g = ps->ses->eng;
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    if (no_io(ps) && !ps->json)
        return 0;
    tally_err_t err = { 0 };
    tr_file_row_t *fr;
    size_t n;
    if ((by_fd ? tr_io_descriptors : tr_io_files)(g, ps->ses->exps, ps->ses->nexps, &fr, &n, &err))
        return pr_report(&err);
    mspec_t ms;
    pr_parse_mspec(g, "e.ioreadtime:e.iowritetime:e.ioothertime:e.ioerrortime:name", &ms, FL_E,
                   &err);
    int nm = eng_nmetrics(g);
    uint64_t *v = calloc((n + 1) * (size_t)nm, sizeof *v);
    row_t *rows = calloc(n + 1, sizeof *rows);
    int rc = 0;
    if (!v || !rows) {
        esc_fprintf(stderr, "tally: out of memory\n");
        rc = 1;
    } else {
        static const int t[TR_IO_NKINDS] = { ENG_M_IOREADTIME, ENG_M_IOWRITETIME,
                                             ENG_M_IOOTHERTIME, ENG_M_IOERRORTIME };
        static const int c[TR_IO_NKINDS] = { ENG_M_IOREADCNT, ENG_M_IOWRITECNT, ENG_M_IOOTHERCNT,
                                             ENG_M_IOERRORCNT };
        uint64_t *total = v;
        rows[0] = (row_t){ "<Total>", { total, total, NULL }, 0, 0 };
        for (size_t i = 0; i < n; i++) {
            uint64_t *rv = v + (i + 1) * (size_t)nm;
            for (int k = 0; k < TR_IO_NKINDS; k++) {
                rv[t[k]] = fr[i].ns[k];
                rv[c[k]] = fr[i].count[k];
                total[t[k]] += fr[i].ns[k];
                total[c[k]] += fr[i].count[k];
            }
            rv[ENG_M_IOREADBYTES] = fr[i].bytes[TR_IO_READ];
            rv[ENG_M_IOWRITEBYTES] = fr[i].bytes[TR_IO_WRITE];
            total[ENG_M_IOREADBYTES] += fr[i].bytes[TR_IO_READ];
            total[ENG_M_IOWRITEBYTES] += fr[i].bytes[TR_IO_WRITE];
            rows[i + 1] = (row_t){ fr[i].name, { rv, rv, NULL }, 0, (uint32_t)i };
        }
        size_t shown = pr_limit_rows(ps, n);
        if (ps->json) {
            json_t j;
            pr_json_begin(ps, &j);
            json_key(&j, "view");
            json_str(&j, by_fd ? "iodetail" : "ioactivity");
            pr_jmetrics(&j, &ms);
            json_key(&j, "rows");
            json_arr_begin(&j);
            for (size_t i = 0; i <= shown; i++)
                pr_jrow(&j, &ms, &rows[i], total);
            json_arr_end(&j);
            json_obj_end(&j);
            json_end_doc(&j);
        } else {
            pr_table_text(ps, &ms, rows, shown + 1, total);
            sink_printf(&ps->out, "\n");
        }
    }
    free(rows);
    free(v);
    tr_free_files(fr, n);
    return rc;
}

int view_ioactivity(pstate_t *ps, const char *a) { return io_table(ps, 0); }
int view_iodetail(pstate_t *ps, const char *a) { return io_table(ps, 1); }

/* ---- -iocallstack ----------------------------------------------------------------------------- */

/* The lines of a vector's I/O: a kind's line when it had calls (every kind: all != 0). */
static void io_lines(pstate_t *ps, const uint64_t *v, int all)
{
    sink_t *o = &ps->out;
    if (all || v[ENG_M_IOWRITECNT])
        sink_printf(o, "Write Time=%.6f (secs.)  Write Bytes=%llu  Write Count=%llu\n",
                    (double)v[ENG_M_IOWRITETIME] * 1e-9, (unsigned long long)v[ENG_M_IOWRITEBYTES],
                    (unsigned long long)v[ENG_M_IOWRITECNT]);
    if (all || v[ENG_M_IOREADCNT])
        sink_printf(o, "Read Time=%.6f (secs.)  Read Bytes=%llu  Read Count=%llu\n",
                    (double)v[ENG_M_IOREADTIME] * 1e-9, (unsigned long long)v[ENG_M_IOREADBYTES],
                    (unsigned long long)v[ENG_M_IOREADCNT]);
    if (all || v[ENG_M_IOOTHERCNT])
        sink_printf(o, "Other I/O Time=%.6f (secs.)  Other I/O Count=%llu\n",
                    (double)v[ENG_M_IOOTHERTIME] * 1e-9, (unsigned long long)v[ENG_M_IOOTHERCNT]);
    if (all || v[ENG_M_IOERRORCNT])
        sink_printf(o, "I/O Error Time=%.6f (secs.)  I/O Error Count=%llu\n",
                    (double)v[ENG_M_IOERRORTIME] * 1e-9, (unsigned long long)v[ENG_M_IOERRORCNT]);
}

static void io_json(json_t *j, const uint64_t *v)
{
    static const int m[] = { ENG_M_IOREADTIME,  ENG_M_IOREADBYTES,  ENG_M_IOREADCNT,
                             ENG_M_IOWRITETIME, ENG_M_IOWRITEBYTES, ENG_M_IOWRITECNT,
                             ENG_M_IOOTHERTIME, ENG_M_IOOTHERCNT,   ENG_M_IOERRORTIME,
                             ENG_M_IOERRORCNT };
    static const char *const k[] = { "read_ns",  "read_bytes",  "read_count",  "write_ns",
                                      "write_bytes", "write_count", "other_ns", "other_count",
                                      "error_ns", "error_count" };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
        json_key(j, k[i]);
        json_u64(j, v[m[i]]);
    }
}

int view_iocallstack(pstate_t *ps, const char *a)
{
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    if (no_io(ps) && !ps->json)
        return 0;
    tally_err_t err = { 0 };
    rep_vstack_t *rows = NULL;
    size_t n = 0;
    if (rep_io_stacks(ps->ses, &rows, &n, &err))
        return pr_report(&err);
    const uint64_t *total = eng_total(ps->ses->eng);
    json_t j, *jp = ps->json ? &j : NULL;
    if (jp) {
        pr_json_begin(ps, jp);
        json_key(jp, "view");
        json_str(jp, "iocallstack");
        json_key(jp, "total");
        json_obj_begin(jp);
        io_json(jp, total);
        json_obj_end(jp);
        json_key(jp, "stacks");
        json_arr_begin(jp);
    } else {
        sink_printf(&ps->out, "<Total>\n");
        io_lines(ps, total, 1);
        sink_printf(&ps->out, "\n");
    }
    size_t shown = pr_limit_rows(ps, n);
    int rc = 0;
    for (size_t i = 0; i < shown && !rc; i++) {
        if (jp) {
            json_obj_begin(jp);
            io_json(jp, rows[i].v);
            json_key(jp, "stack");
        } else {
            sink_printf(&ps->out, "Stack 0x%08zx\n", i + 1);
            io_lines(ps, rows[i].v, 0);
        }
        rc = pr_print_stack(ps, jp, rows[i].exp, rows[i].proc, rows[i].pcs, rows[i].fns, rows[i].n);
        if (jp)
            json_obj_end(jp);
        else
            sink_printf(&ps->out, "\n");
    }
    if (jp) {
        json_arr_end(jp);
        json_obj_end(jp);
        json_end_doc(jp);
    }
    free(rows);
    if (rc)
        esc_fprintf(stderr, "tally: out of memory\n");
    return rc ? 1 : 0;
}

/* ---- -iostat ---------------------------------------------------------------------------------- */

int view_iostat(pstate_t *ps, const char *a)
{
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    if (no_io(ps) && !ps->json)
        return 0;
    tally_err_t err = { 0 };
    rep_sizes_t k[TR_IO_NKINDS];
    if (rep_io_sizes(ps->ses, k, &err))
        return pr_report(&err);
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "iostat");
        ranges_json(&j, "write", &k[TR_IO_WRITE]);
        ranges_json(&j, "read", &k[TR_IO_READ]);
        ranges_json(&j, "other", &k[TR_IO_OTHER]);
        ranges_json(&j, "error", &k[TR_IO_ERROR]);
        json_obj_end(&j);
        json_end_doc(&j);
        return 0;
    }
    sink_t *o = &ps->out;
    const rep_sizes_t *w = &k[TR_IO_WRITE], *r = &k[TR_IO_READ];
    if (w->n) {
        sink_printf(o, "Write Statistics\n");
        ranges_text(ps, "I/O Size Range                    Write Calls          ", w);
        sink_printf(o, "%-34s%.6f (secs.)\n%-34s%llu\n%-34s%llu\n%-34s%.6f (secs.)\n%-34s%llu\n"
                       "%-34s%llu\n\n", "Longest write", (double)w->max_ns * 1e-9,
                    "Smallest write bytes", (unsigned long long)w->min, "Largest write bytes",
                    (unsigned long long)w->max, "Total time", (double)w->ns * 1e-9, "Total calls",
                    (unsigned long long)w->n, "Total bytes", (unsigned long long)w->bytes);
    }
    if (r->n) {
        sink_printf(o, "Read Statistics\n");
        ranges_text(ps, "I/O Size Range                    Read Calls         ", r);
        sink_printf(o, "%-34s%.6f (secs.)\n%-34s%llu\n%-34s%llu\n%-34s%.6f (secs.)\n%-34s%llu\n"
                       "%-34s%llu\n\n", "Longest time", (double)r->max_ns * 1e-9,
                    "Smallest read bytes", (unsigned long long)r->min, "Largest read bytes",
                    (unsigned long long)r->max, "Total time", (double)r->ns * 1e-9, "Total calls",
                    (unsigned long long)r->n, "Total bytes", (unsigned long long)r->bytes);
    }
    static const char *const titles[2] = { "Other I/O Statistics", "I/O Error Statistics" };
    for (int i = 0; i < 2; i++) {
        const rep_sizes_t *z = &k[i ? TR_IO_ERROR : TR_IO_OTHER];
        if (z->n)
            sink_printf(o, "%s\n" DASHES "\n%-34s%.6f (secs.)\n%-34s%llu \n\n", titles[i],
                        "Total time", (double)z->ns * 1e-9, "Total calls",
                        (unsigned long long)z->n);
    }
    return 0;
}
