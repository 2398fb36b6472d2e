/*
 * print_info.c - the views about the run rather than its metrics: -header, -overview,
 * -thread_list, -metric_list. See print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "print.h"

/* ---- run information ----------------------------------------------------------------------- */

const char *pr_fmt_time(uint64_t real_ns, char *buf, size_t n)
{
    time_t s = (time_t)(real_ns / 1000000000u);
    struct tm tm;
    if (!real_ns || !localtime_r(&s, &tm))
        snprintf(buf, n, "(unknown)");
    else
        strftime(buf, n, "%a %b %e %H:%M:%S %Y", &tm);
    return buf;
}

void pr_end_text(const exp_process_t *p, char *buf, size_t n)
{
    if (!p->has_end)
        snprintf(buf, n, "ended without a record (killed, e.g. by SIGKILL, or still running)");
    else if (!strcmp(p->end_how, "exit"))
        snprintf(buf, n, "exited with status %d", p->end_status);
    else if (!strcmp(p->end_how, "signal") || !strcmp(p->end_how, "killed"))
        snprintf(buf, n, "killed by signal %d (%s)", p->end_signal,
                 p->end_signame ? p->end_signame : "?");
    else if (!strcmp(p->end_how, "exec"))
        snprintf(buf, n, "replaced its image by exec");
    else
        snprintf(buf, n, "ended: %s", p->end_how);
}

/* Trustworthiness of the data: expected vs recorded, unwind failures, drops, binaries. */
typedef struct trust {
    uint64_t samples, expected, unwind, busy, disk, truncated, nostats;
} trust_t;

static void pr_trust_sum(pstate_t *ps, trust_t *tr)
{
    memset(tr, 0, sizeof *tr);
    for (size_t x = 0; x < ps->ses->nexps; x++)
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[x]->procs[i];
            if (!p->has_stats) {
                tr->nostats++;
                continue;
            }
            tr->samples += p->st_samples;
            tr->expected += p->st_expected;
            tr->unwind += p->st_unwind_failures;
            tr->busy += p->st_dropped_busy;
            tr->disk += p->st_dropped_disk;
            tr->truncated += p->st_truncated_stacks;
        }
}

int view_header(pstate_t *ps)
{
    /* the binaries' state is known once their frames were looked up */
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    const exp_scan_stats_t *st = eng_scan_stats(ps->ses->eng);
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"header\",\"experiments\":[");
        for (size_t x = 0; x < ps->ses->nexps; x++) {
            esc_printf("%s{\"path\":", x ? "," : "");
            pr_json_str(stdout, ps->ses->exps[x]->path);
            esc_printf(",\"processes\":[");
            for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
                const exp_process_t *p = ps->ses->exps[x]->procs[i];
                char end[256];
                pr_end_text(p, end, sizeof end);
                esc_printf("%s{\"name\":", i ? "," : "");
                pr_json_str(stdout, *p->name ? p->name : "");
                esc_printf(",\"pid\":%u,\"exe\":", p->pid);
                pr_json_str(stdout, p->exe ? p->exe : "");
                esc_printf(",\"host\":");
                pr_json_str(stdout, p->host ? p->host : "");
                esc_printf(",\"clock_interval_ns\":%llu,\"sync_threshold_ns\":",
                       (unsigned long long)p->clock_ns);
                if (p->sync_on)
                    esc_printf("%llu,\"sync_calibration_ns\":%llu", (unsigned long long)p->sync_ns,
                           (unsigned long long)p->sync_calibration);
                else
                    esc_printf("null");
                esc_printf(",\"heap_tracing\":%s,\"io_tracing\":%s,\"threads\":%zu,\"ended\":",
                       p->heap_on ? "true" : "false", p->io_on ? "true" : "false", p->nthreads);
                pr_json_str(stdout, end);
                esc_printf(",\"end_how\":");
                pr_json_str(stdout, p->has_end ? p->end_how : "");
                if (p->has_stats)
                    esc_printf(",\"samples\":%llu,\"expected\":%llu,\"unwind_failures\":%llu,"
                           "\"dropped_busy\":%llu,\"dropped_disk\":%llu",
                           (unsigned long long)p->st_samples, (unsigned long long)p->st_expected,
                           (unsigned long long)p->st_unwind_failures,
                           (unsigned long long)p->st_dropped_busy,
                           (unsigned long long)p->st_dropped_disk);
                esc_printf(",\"warnings\":[");
                for (size_t w = 0; w < p->nwarnings; w++) {
                    esc_printf(w ? "," : "");
                    pr_json_str(stdout, p->warnings[w]);
                }
                esc_printf("]}");
            }
            esc_printf("]}");
        }
        esc_printf("],\"events\":%llu,\"binaries\":[", (unsigned long long)st->events);
        int first = 1;
        for (size_t o = 0; o < sym_nobjects(ps->ses->sym); o++) {
            const sym_object_t *so = sym_object(ps->ses->sym, (uint32_t)o);
            if (!*so->message)
                continue;
            esc_printf("%s{\"path\":", first ? "" : ",");
            first = 0;
            pr_json_str(stdout, so->path);
            esc_printf(",\"message\":");
            pr_json_str(stdout, so->message);
            esc_printf("}");
        }
        esc_printf("]}\n");
        return 0;
    }
    for (size_t x = 0; x < ps->ses->nexps; x++) {
        const exp_experiment_t *e = ps->ses->exps[x];
        uint64_t *counted = NULL; /* samples in the events, for processes without statistics */
        int count_failed = 0;
        esc_printf("Experiment: %s\n", e->path);
        for (size_t i = 0; i < e->nprocs; i++) {
            const exp_process_t *p = e->procs[i];
            char buf[256];
            if (i)
                esc_printf("  Descendant %s (pid %u)\n", p->name, p->pid);
            else
                esc_printf("  Root process (pid %u)\n", p->pid);
            esc_printf("    Target command:   ");
            for (uint32_t a = 0; a < p->argc; a++)
                esc_printf("%s%s", a ? " " : "", p->argv[a]);
            esc_printf("\n");
            if (p->exe)
                esc_printf("    Executable:       %s\n", p->exe);
            esc_printf("    Host:             %s, %s, %s, %u CPUs\n", p->host ? p->host : "?",
                   p->kernel ? p->kernel : "?", p->arch ? p->arch : "?", p->ncpus);
            esc_printf("    Started:          %s\n", pr_fmt_time(p->real_start, buf, sizeof buf));
            if (p->t_start) /* (0: nothing in the experiment says when it started) */
                esc_printf("    Duration:         %.3f s\n",
                       p->t_end > p->t_start ? (double)(p->t_end - p->t_start) * 1e-9 : 0.0);
            else
                esc_printf("    Duration:         unknown (no start record and no events)\n");
            if (p->clock_ns)
                esc_printf("    Data collected:   clock profiling, interval %.3f ms (%s)\n",
                       (double)p->clock_ns * 1e-6, p->clock_source ? p->clock_source : "?");
            else
                esc_printf("    Data collected:   no clock profiling\n");
            for (size_t r = 0; r < p->nrecords; r++) {
                if (strcmp(p->records[r].kind, "settings"))
                    continue;
                uint64_t st = exp_record_u64(&p->records[r], "states", 0);
                uint64_t sp = exp_record_u64(&p->records[r], "sample", 0);
                if (st)
                    esc_printf("                      thread states every %.0f ms\n", (double)st * 1e-6);
                esc_printf("                      sample packets: %zu", p->nsamples);
                if (sp)
                    esc_printf(" (every %.3f s)", (double)sp * 1e-9);
                esc_printf("\n");
                if (p->npauses)
                    esc_printf("                      paused and resumed %zu times\n",
                           (p->npauses + 1) / 2);
            }
            pr_trace_settings(p);
            esc_printf("    Threads:          %zu\n", p->nthreads);
            pr_end_text(p, buf, sizeof buf);
            esc_printf("    Ended:            %s\n", buf);
            if (p->has_stats) {
                esc_printf("    Clock samples:    %llu recorded of %llu expected (%.1f%%)\n",
                       (unsigned long long)p->st_samples, (unsigned long long)p->st_expected,
                       p->st_expected ? 100.0 * (double)p->st_samples / (double)p->st_expected
                                      : 100.0);
                esc_printf("    Unwind failures:  %llu; stacks cut at the depth limit: %llu\n",
                       (unsigned long long)p->st_unwind_failures,
                       (unsigned long long)p->st_truncated_stacks);
                esc_printf("    Dropped events:   %llu (signal during a write), %llu (disk full)\n",
                       (unsigned long long)p->st_dropped_busy,
                       (unsigned long long)p->st_dropped_disk);
            } else {
                esc_printf("    Statistics:       none (the process ended before writing them)\n");
                if (!counted && !count_failed) {
                    counted = calloc(ps->ses->exps[x]->nprocs, sizeof *counted);
                    tally_err_t err = { 0 };
                    if (!counted || exp_count_samples(ps->ses->exps[x], counted, &err))
                        count_failed = 1;
                }
                if (counted && !count_failed)
                    esc_printf("    Clock samples:    %llu recorded (counted in the events)\n",
                           (unsigned long long)counted[i]);
            }
            for (size_t w = 0; w < p->nwarnings; w++)
                esc_printf("    Warning:          %s\n", p->warnings[w]);
        }
        free(counted);
    }
    esc_printf("Events read: %llu", (unsigned long long)st->events);
    uint64_t lost = 0;
    for (int r = 0; r < EXP_LOST_NREASONS; r++)
        lost += st->lost[r];
    if (lost)
        esc_printf(", %llu lost while recording", (unsigned long long)lost);
    if (st->bad_chunks || st->bad_records || st->seq_gaps)
        esc_printf(", damage: %llu bad chunks, %llu bad records, %llu gaps",
               (unsigned long long)st->bad_chunks, (unsigned long long)st->bad_records,
               (unsigned long long)st->seq_gaps);
    esc_printf("\n");
    for (size_t o = 0; o < sym_nobjects(ps->ses->sym); o++) {
        const sym_object_t *so = sym_object(ps->ses->sym, (uint32_t)o);
        if (*so->message)
            esc_printf("Binary: %s\n", so->message);
    }
    esc_printf("\n");
    return 0;
}

int view_overview(pstate_t *ps)
{
    if (!pr_table(ps, ENG_KIND_FUNCTION, 0))
        return 1;
    const uint64_t *total = eng_total(ps->ses->eng);
    trust_t tr;
    pr_trust_sum(ps, &tr);
    uint64_t t0 = UINT64_MAX, t1 = 0;
    size_t nprocs = 0;
    for (size_t x = 0; x < ps->ses->nexps; x++)
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[x]->procs[i];
            nprocs++;
            if (p->t_start && p->t_start < t0) /* (0: unknown) */
                t0 = p->t_start;
            if (p->t_end > t1 && p->t_end != EXP_T_NEVER)
                t1 = p->t_end;
        }
    double dur = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0;
    const exp_process_t *root = ps->ses->exps[0]->procs[0];
    char end[256];
    pr_end_text(root, end, sizeof end);
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"overview\",\"duration\":");
        pr_json_num(stdout, dur);
        esc_printf(",\"processes\":%zu,\"threads\":%zu,\"ended\":", nprocs, eng_nthreads(ps->ses->eng));
        pr_json_str(stdout, end);
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            esc_printf(",\"%s\":", eng_metric(ps->ses->eng, m)->name);
            pr_json_num(stdout, pr_scaled(ps->ses->eng, m, total[m]));
        }
        esc_printf(",\"samples\":%llu,\"expected\":%llu,\"unwind_failures\":%llu,\"dropped\":%llu}\n",
               (unsigned long long)tr.samples, (unsigned long long)tr.expected,
               (unsigned long long)tr.unwind, (unsigned long long)(tr.busy + tr.disk));
        return 0;
    }
    esc_printf("Overview\n\n");
    esc_printf("  Duration:        %.3f s, %zu process%s, %zu thread%s\n", dur, nprocs,
           nprocs == 1 ? "" : "es", eng_nthreads(ps->ses->eng), eng_nthreads(ps->ses->eng) == 1 ? "" : "s");
    esc_printf("  Run:             %s\n", end);
    double tot = pr_scaled(ps->ses->eng, ENG_M_TOTALCPU, total[ENG_M_TOTALCPU]);
    esc_printf("  Total CPU Time:  %.3f s", tot);
    if (dur > 0)
        esc_printf(" (%.2f CPUs busy on average)", tot / dur);
    esc_printf("\n");
    for (int m = ENG_M_USER; m <= ENG_M_SYSTEM; m++)
        esc_printf("    %-16s %8.3f s  %6.2f%%\n", eng_metric(ps->ses->eng, m)->title, pr_scaled(ps->ses->eng, m, total[m]),
               total[ENG_M_TOTALCPU] ? 100.0 * (double)total[m] / (double)total[ENG_M_TOTALCPU]
                                     : 0.0);
    pr_trace_overview(ps, total);
    esc_printf("  Data quality:    %llu samples recorded of %llu expected",
           (unsigned long long)tr.samples, (unsigned long long)tr.expected);
    if (tr.expected)
        esc_printf(" (%.1f%%)", 100.0 * (double)tr.samples / (double)tr.expected);
    esc_printf(", %llu unwind failures, %llu events dropped\n", (unsigned long long)tr.unwind,
           (unsigned long long)(tr.busy + tr.disk));
    if (tr.nostats)
        esc_printf("                   %llu process%s ended without statistics (see -header)\n",
               (unsigned long long)tr.nostats, tr.nostats == 1 ? "" : "es");
    pr_overview_states(ps);
    esc_printf("\n");
    return 0;
}

int view_thread_list(pstate_t *ps)
{
    tally_err_t err = { 0 };
    if (eng_aggregate(ps->ses->eng, &err))
        return pr_report(&err);
    size_t n = eng_nthreads(ps->ses->eng);
    /* which threads are selected: aggregate counted events of all, values only for selected */
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"thread_list\",\"selection\":");
        pr_json_str(stdout, eng_thread_selection(ps->ses->eng));
        esc_printf(",\"threads\":[");
    } else {
        esc_printf("Threads (selected: %s)\n\n", eng_thread_selection(ps->ses->eng));
        esc_printf("%6s  %8s  %8s  %-16s %-15s %9s %10s %10s  %s\n", "Thread", "TID", "PID", "Name",
               "Created by", "Events", "CPU sec.", "Wall sec.", "Process");
    }
    for (size_t i = 0; i < n; i++) {
        const eng_thread_t *t = eng_thread(ps->ses->eng, i);
        const exp_process_t *p = ps->ses->exps[t->exp]->procs[t->proc];
        const char *name = t->info && t->info->name ? t->info->name : "";
        const char *how = t->info && t->info->how ? t->info->how : "";
        /* wall time: from the thread's start to its end (or the end of its process) */
        uint64_t t0 = t->info ? t->info->t_start : p->t_start;
        uint64_t t1 = t->info && t->info->t_end != EXP_T_NEVER ? t->info->t_end : p->t_end;
        double wall = t0 && t1 > t0 && t1 != EXP_T_NEVER ? (double)(t1 - t0) * 1e-9 : 0.0;
        if (ps->json) {
            esc_printf("%s{\"number\":%u,\"tid\":%u,\"pid\":%u,\"name\":", i ? "," : "", t->number,
                   t->tid, p->pid);
            pr_json_str(stdout, name);
            esc_printf(",\"how\":");
            pr_json_str(stdout, how);
            esc_printf(",\"events\":%llu,\"totalcpu\":", (unsigned long long)t->events);
            pr_json_num(stdout, pr_scaled(ps->ses->eng, ENG_M_TOTALCPU, t->value[ENG_M_TOTALCPU]));
            esc_printf(",\"wall\":");
            pr_json_num(stdout, wall);
            esc_printf(",\"process\":");
            pr_json_str(stdout, *p->name ? p->name : "(root)");
            esc_printf("}");
        } else {
            esc_printf("%6u  %8u  %8u  %-16s %-15s %9llu %10.3f %10.3f  %s\n", t->number, t->tid,
                   p->pid, name, how, (unsigned long long)t->events,
                   pr_scaled(ps->ses->eng, ENG_M_TOTALCPU, t->value[ENG_M_TOTALCPU]), wall,
                   *p->name ? p->name : "(root)");
        }
    }
    if (ps->json)
        esc_printf("]}\n");
    else
        esc_printf("\n");
    return 0;
}

int view_metric_list(pstate_t *ps)
{
    tally_err_t err = { 0 };
    if (eng_aggregate(ps->ses->eng, &err))
        return pr_report(&err);
    if (ps->json) {
        pr_json_open(ps);
        esc_printf("\"view\":\"metric_list\",\"available\":[");
        int first = 1;
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            if (!eng_has_metric(ps->ses->eng, m))
                continue;
            esc_printf("%s{\"name\":\"%s\",\"title\":\"%s\",\"unit\":\"%s\"}", first ? "" : ",",
                   eng_metric(ps->ses->eng, m)->name, eng_metric(ps->ses->eng, m)->title, eng_metric(ps->ses->eng, m)->unit);
            first = 0;
        }
        esc_printf("],\"metrics\":");
        pr_json_str(stdout, ps->metrics.text);
        esc_printf(",\"cmetrics\":");
        pr_json_str(stdout, ps->cmetrics.text);
        esc_printf("}\n");
        return 0;
    }
    esc_printf("Current metrics: %s\nCurrent callers-callees metrics: %s\n", ps->metrics.text,
           ps->cmetrics.text);
    char st[160];
    esc_printf("Current sort: %s\n\nAvailable metrics:\n", pr_sort_title(ps, st, sizeof st));
    for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++)
        if (eng_has_metric(ps->ses->eng, m))
            esc_printf("  %-10s %s (%s); flavors e (exclusive), i (inclusive), a (attributed)\n",
                   eng_metric(ps->ses->eng, m)->name, eng_metric(ps->ses->eng, m)->title, eng_metric(ps->ses->eng, m)->unit);
    esc_printf("\nSpec: [e|i|a][.|%%|+|!]NAME joined by ':', 'name' for the name column; e.g.\n"
           "  e.%%totalcpu:i.%%totalcpu:e.user:e.system:name\n\n");
    return 0;
}
