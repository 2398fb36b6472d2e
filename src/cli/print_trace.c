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

void pr_trace_settings(pstate_t *ps, const exp_process_t *p)
{
    if (p->sync_on && p->sync_calibrated)
        sink_printf(&ps->out, "                      sync waits of %.3f us or more (calibrated: 6 x %llu ns, an "
               "uncontended lock)\n", (double)p->sync_ns * 1e-3,
               (unsigned long long)p->sync_calibration);
    else if (p->sync_on && p->sync_ns)
        sink_printf(&ps->out, "                      sync waits of %.3f us or more\n", (double)p->sync_ns * 1e-3);
    else if (p->sync_on)
        sink_printf(&ps->out, "                      every sync wait (threshold 0)\n");
    if (p->heap_on)
        sink_printf(&ps->out, "                      heap tracing\n");
    if (p->io_on)
        sink_printf(&ps->out, "                      I/O tracing\n");
}

void pr_trace_overview(pstate_t *ps, const uint64_t *t)
{
    if (t[ENG_M_SYNCN])
        sink_printf(&ps->out, "  Sync waits:      %.3f s in %llu waits\n", pr_scaled(ps->ses->eng, ENG_M_SYNC, t[ENG_M_SYNC]),
               (unsigned long long)t[ENG_M_SYNCN]);
    if (t[ENG_M_HEAPALLOCCNT])
        sink_printf(&ps->out, "  Heap:            %llu allocations (%llu bytes), %llu leaks (%llu bytes)\n",
               (unsigned long long)t[ENG_M_HEAPALLOCCNT],
               (unsigned long long)t[ENG_M_HEAPALLOCBYTES],
               (unsigned long long)t[ENG_M_HEAPLEAKCNT],
               (unsigned long long)t[ENG_M_HEAPLEAKBYTES]);
    if (t[ENG_M_IOREADCNT] + t[ENG_M_IOWRITECNT] + t[ENG_M_IOOTHERCNT] + t[ENG_M_IOERRORCNT])
        sink_printf(&ps->out, "  I/O:             %llu bytes read in %llu calls (%.3f s), %llu written in %llu "
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

/* A stack, leaf first: "function + 0xOFFSET" lines (text) or a JSON array (j != NULL).
 * Returns 0, or 1 when memory ran out. */
int pr_print_stack(pstate_t *ps, json_t *j, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                   const uint32_t *fns, uint32_t n)
{
    rep_frame_t *fr = malloc(((size_t)n + 1) * sizeof *fr);
    if (!fr)
        return 1;
    rep_frames(ps->ses, ps->namefmt, exp, proc, pcs, fns, n, fr);
    if (j)
        json_arr_begin(j);
    for (uint32_t i = 0; i < n; i++) {
        if (j) {
            json_obj_begin(j);
            json_key(j, "function");
            json_str(j, fr[i].name);
            json_key(j, "offset");
            json_u64(j, fr[i].offset);
            json_key(j, "pc");
            json_strf(j, "0x%llx", (unsigned long long)fr[i].pc);
            json_obj_end(j);
        } else {
            sink_printf(&ps->out, "  %s + 0x%08llX\n", fr[i].name,
                        (unsigned long long)fr[i].offset);
        }
    }
    if (j)
        json_arr_end(j);
    free(fr);
    return 0;
}

/* ---- -leaks and -allocs --------------------------------------------------------------------- */

/* -leaks (leaks != 0) or -allocs: the distinct stacks with their instances and bytes. */
static int heap_stacks(pstate_t *ps, int leaks)
{
    tally_err_t err = { 0 };
    rep_heap_stacks_t h;
    if (rep_heap_stacks(ps->ses, leaks, &h, &err))
        return pr_report(&err);
    size_t shown = ps->limit > 0 && (size_t)ps->limit < h.n ? (size_t)ps->limit : h.n;
    const char *what = leaks ? "Leak" : "Allocation", *bw = leaks ? "Leaked" : "Allocated";
    sink_t *o = &ps->out;
    json_t j, *jp = ps->json ? &j : NULL;
    if (jp) {
        pr_json_begin(ps, jp);
        json_key(jp, "view");
        json_str(jp, leaks ? "leaks" : "allocs");
        json_key(jp, "distinct");
        json_u64(jp, h.n);
        json_key(jp, "instances");
        json_u64(jp, h.instances);
        json_key(jp, "bytes");
        json_u64(jp, h.bytes);
        json_key(jp, "entries");
        json_arr_begin(jp);
    } else if (!eng_has_metric(ps->ses->eng, ENG_M_HEAPALLOCCNT)) {
        sink_printf(o, "No heap data: collect with -H on (tally collect -H on ...).\n\n");
    } else {
        sink_printf(o, "Summary Results: Distinct %ss = %zu, Total Instances = %llu, Total Bytes "
                       "%s = %llu\n\n", what, h.n, (unsigned long long)h.instances, bw,
                    (unsigned long long)h.bytes);
    }
    int rc = 0;
    for (size_t i = 0; i < shown && !rc; i++) {
        const rep_heap_row_t *r = &h.rows[i];
        if (jp) {
            json_obj_begin(jp);
            json_key(jp, "instances");
            json_u64(jp, r->count);
            json_key(jp, "bytes");
            json_u64(jp, r->bytes);
            json_key(jp, "stack");
        } else {
            sink_printf(o, "%s #%zu, Instances = %llu, Bytes %s = %llu\n", what, i + 1,
                        (unsigned long long)r->count, bw, (unsigned long long)r->bytes);
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
    rep_heap_stacks_free(&h);
    if (rc)
        esc_fprintf(stderr, "tally: out of memory\n");
    return rc;
}

int view_leaks(pstate_t *ps) { return heap_stacks(ps, 1); }
int view_allocs(pstate_t *ps) { return heap_stacks(ps, 0); }

/* ---- -heap ---------------------------------------------------------------------------------- */

static double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0; }

/* One process of -heap: its figures and the stacks live at its peak. */
static int heap_process(pstate_t *ps, json_t *jp, const tr_heap_proc_t *p)
{
    sink_t *o = &ps->out;
    const exp_process_t *pr = ps->ses->exps[p->exp]->procs[p->proc];
    double at = p->peak_t > pr->t_start ? (double)(p->peak_t - pr->t_start) * 1e-9 : 0;
    size_t shown = ps->limit > 0 && (size_t)ps->limit < p->nat_peak ? (size_t)ps->limit
                                                                     : p->nat_peak;
    if (jp) {
        json_obj_begin(jp);
        json_key(jp, "process");
        json_str(jp, pr->name);
        json_key(jp, "pid");
        json_u64(jp, pr->pid);
        const char *keys[] = { "allocations", "bytes_allocated", "frees", "temporary",
                               "peak_bytes", "peak_blocks" };
        const uint64_t v[] = { p->allocs, p->alloc_bytes, p->frees, p->temporary, p->peak_bytes,
                               p->peak_blocks };
        for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
            json_key(jp, keys[k]);
            json_u64(jp, v[k]);
        }
        json_key(jp, "peak_time");
        json_num(jp, at);
        json_key(jp, "leaked_bytes");
        json_u64(jp, p->end_bytes);
        json_key(jp, "leaked_blocks");
        json_u64(jp, p->end_blocks);
        json_key(jp, "at_peak");
        json_arr_begin(jp);
    } else {
        sink_printf(o, "Heap of %s (pid %u)\n", *pr->name ? pr->name : "the root process", pr->pid);
        sink_printf(o, "  Allocations:       %llu (%llu bytes), %llu freed\n",
                    (unsigned long long)p->allocs, (unsigned long long)p->alloc_bytes,
                    (unsigned long long)p->frees);
        sink_printf(o, "  Temporary:         %llu (%.1f%% of the allocations: freed before their "
                       "thread allocated again)\n", (unsigned long long)p->temporary,
                    pct(p->temporary, p->allocs));
        sink_printf(o, "  Peak:              %llu bytes in %llu blocks, %.6f s after the start\n",
                    (unsigned long long)p->peak_bytes, (unsigned long long)p->peak_blocks, at);
        sink_printf(o, "  Leaked at the end: %llu bytes in %llu blocks\n\n",
                    (unsigned long long)p->end_bytes, (unsigned long long)p->end_blocks);
        if (shown)
            sink_printf(o, "  Live at the peak, by allocating stack:\n\n");
    }
    for (size_t k = 0; k < shown; k++) {
        const tr_stack_row_t *r = &p->at_peak[k];
        uint32_t n, pn, flags, proc;
        tally_err_t err = { 0 };
        const uint32_t *fns = eng_stack_functions(ps->ses->eng, r->exp, r->stack, &n, &err);
        if (!fns)
            return pr_report(&err);
        const uint64_t *pcs = exp_stacks_get(eng_stacks(ps->ses->eng, r->exp), r->stack, &pn,
                                             &flags, &proc);
        if (jp) {
            json_obj_begin(jp);
            json_key(jp, "blocks");
            json_u64(jp, r->count);
            json_key(jp, "bytes");
            json_u64(jp, r->bytes);
            json_key(jp, "stack");
        } else {
            sink_printf(o, "  Stack #%zu, Blocks = %llu, Bytes = %llu (%.1f%% of the peak)\n",
                        k + 1, (unsigned long long)r->count, (unsigned long long)r->bytes,
                        pct(r->bytes, p->peak_bytes));
        }
        if (pr_print_stack(ps, jp, r->exp, r->proc, pcs, fns, n < pn ? n : pn)) {
            esc_fprintf(stderr, "tally: out of memory\n");
            return 1;
        }
        if (jp)
            json_obj_end(jp);
        else
            sink_printf(o, "\n");
    }
    if (jp) {
        json_arr_end(jp);
        json_obj_end(jp);
    }
    return 0;
}

int view_heap(pstate_t *ps)
{
    tally_err_t err = { 0 };
    tr_heap_t h;
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    if (tr_heap(ps->ses->eng, ps->ses->exps, ps->ses->nexps, &h, &err))
        return pr_report(&err);
    json_t j, *jp = ps->json ? &j : NULL;
    if (jp) {
        pr_json_begin(ps, jp);
        json_key(jp, "view");
        json_str(jp, "heap");
        json_key(jp, "processes");
        json_arr_begin(jp);
    } else if (!h.nprocs) {
        sink_printf(&ps->out, "No heap data: collect with -H on (tally collect -H on ...).\n\n");
    }
    int rc = 0;
    for (size_t i = 0; i < h.nprocs && !rc; i++)
        rc = heap_process(ps, jp, &h.procs[i]);
    if (jp && !rc) {
        json_arr_end(jp);
        json_obj_end(jp);
        json_end_doc(jp);
    }
    tr_free_heap(&h);
    return rc;
}

/* ---- -sync_objects ------------------------------------------------------------------------ */

int view_sync_objects(pstate_t *ps)
{
    tally_err_t err = { 0 };
    tr_sync_row_t *rows;
    size_t n;
    sym_vars_t *vars = sym_vars_new(ps->ses->sym);
    if (!vars || tr_sync_objects(ps->ses->eng, ps->ses->exps, ps->ses->nexps, ps->ses->sym, vars,
                                 &rows, &n, &err)) {
        sym_vars_free(vars);
        return vars ? pr_report(&err) : 1;
    }
    uint64_t total = 0, count = 0;
    for (size_t i = 0; i < n; i++) {
        total += rows[i].wait;
        count += rows[i].count;
    }
    size_t shown = ps->limit > 0 && (size_t)ps->limit < n ? (size_t)ps->limit : n;
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "sync_objects");
        json_key(&j, "wait");
        json_num(&j, (double)total * 1e-9);
        json_key(&j, "count");
        json_u64(&j, count);
        json_key(&j, "objects");
        json_arr_begin(&j);
    } else {
        sink_printf(o, "Synchronization objects sorted by wait time (%zu objects, %.3f s in %llu "
                       "waits)\n\n", n, (double)total * 1e-9, (unsigned long long)count);
        sink_printf(o, "%10s %7s %9s  %-10s %-18s %s\n", "Wait sec.", "%", "Waits", "Kind",
                    "Address", "Name");
    }
    for (size_t i = 0; i < shown; i++) {
        const tr_sync_row_t *r = &rows[i];
        char name[512];
        rep_sync_name(r->name, r->offset, r->call, name, sizeof name);
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, name);
            json_key(&j, "kind");
            json_str(&j, rep_sync_kind(r->call));
            json_key(&j, "address");
            json_strf(&j, "0x%llx", (unsigned long long)r->addr);
            json_key(&j, "wait");
            json_num(&j, (double)r->wait * 1e-9);
            json_key(&j, "count");
            json_u64(&j, r->count);
            json_key(&j, "pid");
            json_u64(&j, ps->ses->exps[r->exp]->procs[r->proc]->pid);
            json_obj_end(&j);
        } else {
            char pc[32];
            pr_fmt_percent(pc, sizeof pc, r->wait, total);
            sink_printf(o, "%10.3f %7s %9llu  %-10s 0x%-16llx %s\n", (double)r->wait * 1e-9, pc,
                        (unsigned long long)r->count, rep_sync_kind(r->call),
                        (unsigned long long)r->addr, name);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "\n");
    }
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
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "io_files");
        json_key(&j, "files");
        json_arr_begin(&j);
    } else {
        sink_printf(o, "Files sorted by I/O time\n\n");
        sink_printf(o, "%10s %12s %8s %10s %12s %8s %10s %8s %10s %8s  %s\n", "Read sec.",
                    "Read bytes", "Reads", "Write sec.", "Write bytes", "Writes", "Other sec.",
                    "Others", "Error sec.", "Errors", "File");
    }
    for (size_t i = 0; i < shown; i++) {
        const tr_file_row_t *r = &rows[i];
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, r->name);
            for (int k = 0; k < TR_IO_NKINDS; k++) {
                json_keyf(&j, "%s_time", kinds[k]);
                json_num(&j, (double)r->ns[k] * 1e-9);
                json_keyf(&j, "%s_count", kinds[k]);
                json_u64(&j, r->count[k]);
                if (k < TR_IO_OTHER) {
                    json_keyf(&j, "%s_bytes", kinds[k]);
                    json_u64(&j, r->bytes[k]);
                }
            }
            json_obj_end(&j);
        } else {
            sink_printf(o, "%10.6f %12llu %8llu %10.6f %12llu %8llu %10.6f %8llu %10.6f %8llu  %s\n",
                        (double)r->ns[TR_IO_READ] * 1e-9, (unsigned long long)r->bytes[TR_IO_READ],
                        (unsigned long long)r->count[TR_IO_READ], (double)r->ns[TR_IO_WRITE] * 1e-9,
                        (unsigned long long)r->bytes[TR_IO_WRITE],
                        (unsigned long long)r->count[TR_IO_WRITE],
                        (double)r->ns[TR_IO_OTHER] * 1e-9, (unsigned long long)r->count[TR_IO_OTHER],
                        (double)r->ns[TR_IO_ERROR] * 1e-9, (unsigned long long)r->count[TR_IO_ERROR],
                        r->name);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "\n");
    }
    tr_free_files(rows, n);
    return 0;
}
