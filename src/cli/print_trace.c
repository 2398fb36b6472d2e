/*
 * print_trace.c - the views of traced calls: -leaks and -allocs (each distinct allocating stack,
 * largest first), -heap (the peak of each process's heap and the stacks live at it, temporary
 * allocations), -sync_objects (what threads waited on), -io_files (I/O by file); and the tracing
 * settings of -header and totals of -overview. The engine and analyzer/traces.c compute; this file formats. See print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/traces.h"
#include "print.h"

/* ---- settings ----------------------------------------------------------------------------- */

void pr_trace_settings(const exp_process_t *p)
{
    if (p->sync_on && p->sync_calibrated)
        esc_printf("                      sync waits of %.3f us or more (calibrated: 6 x %llu ns, an "
               "uncontended lock)\n", (double)p->sync_ns * 1e-3,
               (unsigned long long)p->sync_calibration);
    else if (p->sync_on && p->sync_ns)
        esc_printf("                      sync waits of %.3f us or more\n", (double)p->sync_ns * 1e-3);
    else if (p->sync_on)
        esc_printf("                      every sync wait (threshold 0)\n");
    if (p->heap_on)
        esc_printf("                      heap tracing\n");
    if (p->io_on)
        esc_printf("                      I/O tracing\n");
}

void pr_trace_overview(pstate_t *ps, const uint64_t *t)
{
    if (t[ENG_M_SYNCN])
        esc_printf("  Sync waits:      %.3f s in %llu waits\n", pr_scaled(ps->ses->eng, ENG_M_SYNC, t[ENG_M_SYNC]),
               (unsigned long long)t[ENG_M_SYNCN]);
    if (t[ENG_M_HEAPALLOCCNT])
        esc_printf("  Heap:            %llu allocations (%llu bytes), %llu leaks (%llu bytes)\n",
               (unsigned long long)t[ENG_M_HEAPALLOCCNT],
               (unsigned long long)t[ENG_M_HEAPALLOCBYTES],
               (unsigned long long)t[ENG_M_HEAPLEAKCNT],
               (unsigned long long)t[ENG_M_HEAPLEAKBYTES]);
    if (t[ENG_M_IOREADCNT] + t[ENG_M_IOWRITECNT] + t[ENG_M_IOOTHERCNT] + t[ENG_M_IOERRORCNT])
        esc_printf("  I/O:             %llu bytes read in %llu calls (%.3f s), %llu written in %llu "
               "(%.3f s), %llu other calls (%.3f s), %llu failed (%.3f s)\n",
               (unsigned long long)t[ENG_M_IOREADBYTES], (unsigned long long)t[ENG_M_IOREADCNT],
               pr_scaled(ps->ses->eng, ENG_M_IOREADTIME, t[ENG_M_IOREADTIME]),
               (unsigned long long)t[ENG_M_IOWRITEBYTES], (unsigned long long)t[ENG_M_IOWRITECNT],
               pr_scaled(ps->ses->eng, ENG_M_IOWRITETIME, t[ENG_M_IOWRITETIME]),
               (unsigned long long)t[ENG_M_IOOTHERCNT],
               pr_scaled(ps->ses->eng, ENG_M_IOOTHERTIME, t[ENG_M_IOOTHERTIME]),
               (unsigned long long)t[ENG_M_IOERRORCNT],
               pr_scaled(ps->ses->eng, ENG_M_IOERRORTIME, t[ENG_M_IOERRORTIME]));
}

/* ---- stacks ------------------------------------------------------------------------------- */

/* Prints the frames of a stack, leaf first, as "function + 0xOFFSET" (text) or a JSON array. */
static void print_stack(pstate_t *ps, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                        const uint32_t *fns, uint32_t n)
{
    const exp_process_t *p = ps->ses->exps[exp]->procs[proc];
    if (ps->json)
        esc_printf("[");
    for (uint32_t i = 0; i < n; i++) {
        const sym_func_t *f = sym_func(ps->ses->sym, fns[i]);
        const exp_object_t *o = exp_object_at(p, pcs[i], EXP_T_NEVER);
        uint64_t addr = o ? pcs[i] - o->bias : pcs[i];
        uint64_t off = f->size && addr >= f->addr ? addr - f->addr : 0;
        const char *name = eng_object_name(ps->ses->eng, ENG_KIND_FUNCTION, fns[i], ps->namefmt);
        if (ps->json) {
            esc_printf("%s{\"function\":", i ? "," : "");
            pr_json_str(stdout, name);
            esc_printf(",\"offset\":%llu,\"pc\":\"0x%llx\"}", (unsigned long long)off,
                   (unsigned long long)pcs[i]);
        } else {
            esc_printf("  %s + 0x%08llX\n", name, (unsigned long long)off);
        }
    }
    if (ps->json)
        esc_printf("]");
}

/* ---- -leaks and -allocs --------------------------------------------------------------------- */

typedef struct heap_row {
    uint32_t exp, proc, stack_n;
    const uint64_t *pcs;
    const uint32_t *fns;
    uint64_t count, bytes;
} heap_row_t;

typedef struct heap_rows {
    heap_row_t *rows;
    size_t n, cap;
    int cnt, bytes; /* the metrics listed */
} heap_rows_t;

static int collect_row(void *ctx, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                       const uint32_t *fns, uint32_t n, const uint64_t *v)
{
    heap_rows_t *r = ctx;
    if (!v[r->cnt])
        return 0;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        heap_row_t *nr = realloc(r->rows, r->cap * sizeof *nr);
        if (!nr)
            return TALLY_ENOMEM;
        r->rows = nr;
    }
    r->rows[r->n++] = (heap_row_t){ exp, proc, n, pcs, fns, v[r->cnt], v[r->bytes] };
    return 0;
}

static int cmp_heap_rows(const void *a, const void *b)
{
    const heap_row_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->count > y->count ? -1 : x->count < y->count;
}

/* -leaks (leaks != 0) or -allocs: the distinct stacks with their instances and bytes. */
static int heap_stacks(pstate_t *ps, int leaks)
{
    heap_rows_t r = { .cnt = leaks ? ENG_M_HEAPLEAKCNT : ENG_M_HEAPALLOCCNT,
                      .bytes = leaks ? ENG_M_HEAPLEAKBYTES : ENG_M_HEAPALLOCBYTES };
    tally_err_t err = { 0 };
    if (eng_foreach_stack(ps->ses->eng, collect_row, &r, &err) < 0) {
        free(r.rows);
        return pr_report(&err);
    }
    qsort(r.rows, r.n, sizeof *r.rows, cmp_heap_rows);
    uint64_t instances = 0, bytes = 0;
    for (size_t i = 0; i < r.n; i++) {
        instances += r.rows[i].count;
        bytes += r.rows[i].bytes;
    }
    size_t shown = ps->limit > 0 && (size_t)ps->limit < r.n ? (size_t)ps->limit : r.n;
    const char *what = leaks ? "Leak" : "Allocation", *bw = leaks ? "Leaked" : "Allocated";
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"%s\",\"distinct\":%zu,\"instances\":%llu,\"bytes\":%llu,\"entries\":[",
               leaks ? "leaks" : "allocs", r.n, (unsigned long long)instances,
               (unsigned long long)bytes);
    } else if (!eng_has_metric(ps->ses->eng, ENG_M_HEAPALLOCCNT)) {
        esc_printf("No heap data: collect with -H on (tally collect -H on ...).\n\n");
    } else {
        esc_printf("Summary Results: Distinct %ss = %zu, Total Instances = %llu, Total Bytes %s = "
               "%llu\n\n", what, r.n, (unsigned long long)instances, bw,
               (unsigned long long)bytes);
    }
    for (size_t i = 0; i < shown; i++) {
        const heap_row_t *h = &r.rows[i];
        if (ps->json) {
            esc_printf("%s{\"instances\":%llu,\"bytes\":%llu,\"stack\":", i ? "," : "",
                   (unsigned long long)h->count, (unsigned long long)h->bytes);
        } else {
            esc_printf("%s #%zu, Instances = %llu, Bytes %s = %llu\n", what, i + 1,
                   (unsigned long long)h->count, bw, (unsigned long long)h->bytes);
        }
        print_stack(ps, h->exp, h->proc, h->pcs, h->fns, h->stack_n);
        esc_printf(ps->json ? "}" : "\n");
    }
    if (ps->json)
        esc_printf("]}\n");
    free(r.rows);
    return 0;
}

int view_leaks(pstate_t *ps) { return heap_stacks(ps, 1); }
int view_allocs(pstate_t *ps) { return heap_stacks(ps, 0); }

/* ---- -heap ---------------------------------------------------------------------------------- */

static double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0; }

int view_heap(pstate_t *ps)
{
    tally_err_t err = { 0 };
    tr_heap_t h;
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    if (tr_heap(ps->ses->eng, ps->ses->exps, ps->ses->nexps, &h, &err))
        return pr_report(&err);
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"heap\",\"processes\":[");
    } else if (!h.nprocs)
        esc_printf("No heap data: collect with -H on (tally collect -H on ...).\n\n");
    for (size_t i = 0; i < h.nprocs; i++) {
        const tr_heap_proc_t *p = &h.procs[i];
        const exp_process_t *pr = ps->ses->exps[p->exp]->procs[p->proc];
        double at = p->peak_t > pr->t_start ? (double)(p->peak_t - pr->t_start) * 1e-9 : 0;
        size_t shown = ps->limit > 0 && (size_t)ps->limit < p->nat_peak ? (size_t)ps->limit
                                                                         : p->nat_peak;
        if (ps->json) {
            esc_printf("%s{\"process\":", i ? "," : "");
            pr_json_str(stdout, *pr->name ? pr->name : "");
            esc_printf(",\"pid\":%u,\"allocations\":%llu,\"bytes_allocated\":%llu,\"frees\":%llu,"
                   "\"temporary\":%llu,\"peak_bytes\":%llu,\"peak_blocks\":%llu,\"peak_time\":",
                   pr->pid, (unsigned long long)p->allocs, (unsigned long long)p->alloc_bytes,
                   (unsigned long long)p->frees, (unsigned long long)p->temporary,
                   (unsigned long long)p->peak_bytes, (unsigned long long)p->peak_blocks);
            pr_json_num(stdout, at);
            esc_printf(",\"leaked_bytes\":%llu,\"leaked_blocks\":%llu,\"at_peak\":[",
                   (unsigned long long)p->end_bytes, (unsigned long long)p->end_blocks);
        } else {
            esc_printf("Heap of %s (pid %u)\n", *pr->name ? pr->name : "the root process", pr->pid);
            esc_printf("  Allocations:       %llu (%llu bytes), %llu freed\n",
                   (unsigned long long)p->allocs, (unsigned long long)p->alloc_bytes,
                   (unsigned long long)p->frees);
            esc_printf("  Temporary:         %llu (%.1f%% of the allocations: freed before their "
                   "thread allocated again)\n", (unsigned long long)p->temporary,
                   pct(p->temporary, p->allocs));
            esc_printf("  Peak:              %llu bytes in %llu blocks, %.6f s after the start\n",
                   (unsigned long long)p->peak_bytes, (unsigned long long)p->peak_blocks, at);
            esc_printf("  Leaked at the end: %llu bytes in %llu blocks\n\n",
                   (unsigned long long)p->end_bytes, (unsigned long long)p->end_blocks);
            if (shown)
                esc_printf("  Live at the peak, by allocating stack:\n\n");
        }
        for (size_t k = 0; k < shown; k++) {
            const tr_stack_row_t *r = &p->at_peak[k];
            uint32_t n, pn, flags, proc;
            const uint32_t *fns = eng_stack_functions(ps->ses->eng, r->exp, r->stack, &n, &err);
            if (!fns) {
                tr_free_heap(&h);
                return pr_report(&err);
            }
            const uint64_t *pcs = exp_stacks_get(eng_stacks(ps->ses->eng, r->exp), r->stack, &pn,
                                                 &flags, &proc);
            if (ps->json)
                esc_printf("%s{\"blocks\":%llu,\"bytes\":%llu,\"stack\":", k ? "," : "",
                       (unsigned long long)r->count, (unsigned long long)r->bytes);
            else
                esc_printf("  Stack #%zu, Blocks = %llu, Bytes = %llu (%.1f%% of the peak)\n", k + 1,
                       (unsigned long long)r->count, (unsigned long long)r->bytes,
                       pct(r->bytes, p->peak_bytes));
            print_stack(ps, r->exp, r->proc, pcs, fns, n < pn ? n : pn);
            esc_printf(ps->json ? "}" : "\n");
        }
        if (ps->json)
            esc_printf("]}");
    }
    if (ps->json)
        esc_printf("]}\n");
    tr_free_heap(&h);
    return 0;
}

/* ---- -sync_objects ------------------------------------------------------------------------ */

static const char *sync_kind(uint32_t call)
{
    switch (call) {
    case EXP_SYNC_MUTEX_LOCK:
    case EXP_SYNC_MUTEX_TIMEDLOCK: return "mutex";
    case EXP_SYNC_RWLOCK_RDLOCK:
    case EXP_SYNC_RWLOCK_TIMEDRDLOCK:
    case EXP_SYNC_RWLOCK_WRLOCK:
    case EXP_SYNC_RWLOCK_TIMEDWRLOCK: return "rwlock";
    case EXP_SYNC_COND_WAIT:
    case EXP_SYNC_COND_TIMEDWAIT: return "condition";
    case EXP_SYNC_SEM_WAIT:
    case EXP_SYNC_SEM_TIMEDWAIT: return "semaphore";
    case EXP_SYNC_JOIN: return "thread";
    case EXP_SYNC_BARRIER_WAIT: return "barrier";
    case EXP_SYNC_SPIN_LOCK: return "spinlock";
    default: return "?";
    }
}

int view_sync_objects(pstate_t *ps)
{
    tally_err_t err = { 0 };
    tr_sync_row_t *rows;
    size_t n;
    sym_vars_t *vars = sym_vars_new(ps->ses->sym);
    if (!vars || tr_sync_objects(ps->ses->eng, ps->ses->exps, ps->ses->nexps, ps->ses->sym, vars, &rows, &n, &err)) {
        sym_vars_free(vars);
        return vars ? pr_report(&err) : 1;
    }
    uint64_t total = 0, count = 0;
    for (size_t i = 0; i < n; i++) {
        total += rows[i].wait;
        count += rows[i].count;
    }
    size_t shown = ps->limit > 0 && (size_t)ps->limit < n ? (size_t)ps->limit : n;
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"sync_objects\",\"wait\":");
        pr_json_num(stdout, (double)total * 1e-9);
        esc_printf(",\"count\":%llu,\"objects\":[", (unsigned long long)count);
    } else {
        esc_printf("Synchronization objects sorted by wait time (%zu objects, %.3f s in %llu "
               "waits)\n\n", n, (double)total * 1e-9, (unsigned long long)count);
        esc_printf("%10s %7s %9s  %-10s %-18s %s\n", "Wait sec.", "%", "Waits", "Kind", "Address",
               "Name");
    }
    for (size_t i = 0; i < shown; i++) {
        const tr_sync_row_t *r = &rows[i];
        char name[512];
        if (!r->name)
            snprintf(name, sizeof name, "%s", r->call == EXP_SYNC_JOIN ? "<thread>" : "<unknown>");
        else if (r->offset)
            snprintf(name, sizeof name, "%s+%llu", r->name, (unsigned long long)r->offset);
        else
            snprintf(name, sizeof name, "%s", r->name);
        if (ps->json) {
            esc_printf("%s{\"name\":", i ? "," : "");
            pr_json_str(stdout, name);
            esc_printf(",\"kind\":\"%s\",\"address\":\"0x%llx\",\"wait\":", sync_kind(r->call),
                   (unsigned long long)r->addr);
            pr_json_num(stdout, (double)r->wait * 1e-9);
            esc_printf(",\"count\":%llu,\"pid\":%u}", (unsigned long long)r->count,
                   ps->ses->exps[r->exp]->procs[r->proc]->pid);
        } else {
            char pc[32];
            pr_fmt_percent(pc, sizeof pc, r->wait, total);
            esc_printf("%10.3f %7s %9llu  %-10s 0x%-16llx %s\n", (double)r->wait * 1e-9, pc,
                   (unsigned long long)r->count, sync_kind(r->call),
                   (unsigned long long)r->addr, name);
        }
    }
    esc_printf(ps->json ? "]}\n" : "\n");
    free(rows);
    sym_vars_free(vars);
    return 0;
}

/* ---- -io_files ------------------------------------------------------------------------------ */

int view_io_files(pstate_t *ps)
{
    static const char *const kinds[TR_IO_NKINDS] = { "read", "write", "other", "error" };
    tally_err_t err = { 0 };
    tr_file_row_t *rows;
    size_t n;
    if (tr_io_files(ps->ses->eng, ps->ses->exps, ps->ses->nexps, &rows, &n, &err))
        return pr_report(&err);
    size_t shown = ps->limit > 0 && (size_t)ps->limit < n ? (size_t)ps->limit : n;
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"io_files\",\"files\":[");
    } else {
        esc_printf("Files sorted by I/O time\n\n");
        esc_printf("%10s %12s %8s %10s %12s %8s %10s %8s %10s %8s  %s\n", "Read sec.", "Read bytes",
               "Reads", "Write sec.", "Write bytes", "Writes", "Other sec.", "Others",
               "Error sec.", "Errors", "File");
    }
    for (size_t i = 0; i < shown; i++) {
        const tr_file_row_t *r = &rows[i];
        if (ps->json) {
            esc_printf("%s{\"name\":", i ? "," : "");
            pr_json_str(stdout, r->name);
            for (int k = 0; k < TR_IO_NKINDS; k++) {
                esc_printf(",\"%s_time\":", kinds[k]);
                pr_json_num(stdout, (double)r->ns[k] * 1e-9);
                esc_printf(",\"%s_count\":%llu", kinds[k], (unsigned long long)r->count[k]);
                if (k < TR_IO_OTHER)
                    esc_printf(",\"%s_bytes\":%llu", kinds[k], (unsigned long long)r->bytes[k]);
            }
            esc_printf("}");
        } else {
            esc_printf("%10.6f %12llu %8llu %10.6f %12llu %8llu %10.6f %8llu %10.6f %8llu  %s\n",
                   (double)r->ns[TR_IO_READ] * 1e-9, (unsigned long long)r->bytes[TR_IO_READ],
                   (unsigned long long)r->count[TR_IO_READ], (double)r->ns[TR_IO_WRITE] * 1e-9,
                   (unsigned long long)r->bytes[TR_IO_WRITE],
                   (unsigned long long)r->count[TR_IO_WRITE], (double)r->ns[TR_IO_OTHER] * 1e-9,
                   (unsigned long long)r->count[TR_IO_OTHER], (double)r->ns[TR_IO_ERROR] * 1e-9,
                   (unsigned long long)r->count[TR_IO_ERROR], r->name);
        }
    }
    esc_printf(ps->json ? "]}\n" : "\n");
    tr_free_files(rows, n);
    return 0;
}
