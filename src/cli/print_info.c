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
#include "experiment/logrec.h"

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

void pr_end_text(const exp_process_t *p, char *buf, size_t n) { rep_end_text(p, buf, n); }

/* ---- -header --------------------------------------------------------------------------------- */

/* A counter of counter overflow profiling, with what its counter-stats record says. */
static void counter_json(json_t *j, const exp_process_t *p, const exp_counter_t *c)
{
    json_obj_begin(j);
    json_key(j, "name");
    json_str(j, c->name);
    json_key(j, "metric");
    json_str(j, p->metrics[c->metric].name);
    json_key(j, "interval");
    json_u64(j, c->interval);
    if (c->has_stats) {
        const char *keys[] = { "samples", "events", "counted", "enabled_ns", "running_ns",
                               "throttled", "lost", "dropped" };
        const uint64_t v[] = { c->samples, c->events, c->counted, c->enabled, c->running,
                               c->throttled, c->lost, c->dropped };
        for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
            json_key(j, keys[k]);
            json_u64(j, v[k]);
        }
    }
    json_obj_end(j);
}

static void counter_text(sink_t *o, const exp_counter_t *c)
{
    sink_printf(o, "    Counter:          %s%s, every %llu events", c->data ? "+" : "", c->name,
                (unsigned long long)c->interval);
    if (!c->has_stats) {
        sink_printf(o, " (no statistics: the process ended before writing them)\n");
        return;
    }
    sink_printf(o, ": %llu samples for %llu events; the kernel counted %llu\n",
                (unsigned long long)c->samples, (unsigned long long)c->events,
                (unsigned long long)c->counted);
    if (c->running < c->enabled)
        sink_printf(o, "                      multiplexed: counting %.1f%% of its enabled time "
                    "(its samples cover that share of the run)\n",
                    100.0 * (double)c->running / (double)c->enabled);
    if (c->throttled || c->lost || c->dropped)
        sink_printf(o, "                      throttled %llu times, %llu samples lost by the "
                    "kernel, %llu not written\n", (unsigned long long)c->throttled,
                    (unsigned long long)c->lost, (unsigned long long)c->dropped);
}

static void header_json(pstate_t *ps, const rep_header_t *h, size_t only)
{
    json_t j;
    pr_json_begin(ps, &j);
    json_key(&j, "view");
    json_str(&j, "header");
    json_key(&j, "experiments");
    json_arr_begin(&j);
    for (size_t x = 0; x < h->nexps; x++) {
        const exp_experiment_t *e = h->exps[x].e;
        if (only != SIZE_MAX && x != only)
            continue;
        json_obj_begin(&j);
        json_key(&j, "path");
        json_str(&j, e->path);
        json_key(&j, "processes");
        json_arr_begin(&j);
        for (size_t i = 0; i < e->nprocs; i++) {
            const rep_hproc_t *hp = &h->exps[x].procs[i];
            const exp_process_t *p = hp->p;
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, p->name);
            json_key(&j, "pid");
            json_u64(&j, p->pid);
            json_key(&j, "exe");
            json_str(&j, p->exe ? p->exe : "");
            json_key(&j, "host");
            json_str(&j, p->host ? p->host : "");
            json_key(&j, "clock_interval_ns");
            json_u64(&j, p->clock_ns);
            json_key(&j, "sync_threshold_ns");
            if (p->sync_on) {
                json_u64(&j, p->sync_ns);
                json_key(&j, "sync_calibration_ns");
                json_u64(&j, p->sync_calibration);
            } else {
                json_null(&j);
            }
            json_key(&j, "heap_tracing");
            json_bool(&j, p->heap_on);
            json_key(&j, "io_tracing");
            json_bool(&j, p->io_on);
            json_key(&j, "threads");
            json_u64(&j, p->nthreads);
            json_key(&j, "ended");
            json_str(&j, hp->ended);
            json_key(&j, "end_how");
            json_str(&j, p->has_end ? p->end_how : "");
            if (p->has_stats) {
                const char *keys[] = { "samples", "expected", "unwind_failures", "dropped_busy",
                                       "dropped_disk" };
                const uint64_t v[] = { p->st_samples, p->st_expected, p->st_unwind_failures,
                                       p->st_dropped_busy, p->st_dropped_disk };
                for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
                    json_key(&j, keys[k]);
                    json_u64(&j, v[k]);
                }
            }
            if (p->has_stats && p->st_has_sampler_cpu) {
                json_key(&j, "sampler_cpu_ns");
                json_u64(&j, p->st_sampler_cpu);
            }
            json_key(&j, "comments");
            json_arr_begin(&j);
            for (size_t r = 0; r < p->nrecords; r++) {
                const char *text = exp_record_get(&p->records[r], EXP_KEY_TEXT);
                if (!strcmp(p->records[r].kind, EXP_LOG_COMMENT))
                    json_str(&j, text ? text : "");
            }
            json_arr_end(&j);
            json_key(&j, "counters");
            json_arr_begin(&j);
            for (size_t c = 0; c < p->ncounters; c++)
                counter_json(&j, p, &p->counters[c]);
            json_arr_end(&j);
            json_key(&j, "warnings");
            json_arr_begin(&j);
            for (size_t w = 0; w < p->nwarnings; w++)
                json_str(&j, p->warnings[w]);
            json_arr_end(&j);
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_key(&j, "events");
    json_u64(&j, h->stats->events);
    json_key(&j, "binaries");
    json_arr_begin(&j);
    for (size_t b = 0; b < h->nbinaries; b++) {
        json_obj_begin(&j);
        json_key(&j, "path");
        json_str(&j, h->binaries[b].path);
        json_key(&j, "message");
        json_str(&j, h->binaries[b].message);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_obj_end(&j);
    json_end_doc(&j);
}

static void header_text_process(pstate_t *ps, const rep_hproc_t *hp, size_t i)
{
    sink_t *o = &ps->out;
    const exp_process_t *p = hp->p;
    char buf[256];
    if (p->is_job) { /* mpirun tally collect -M on: only the ranks below are processes */
        /* (Hydra names no job) */
        int named = p->mpi_job && *p->mpi_job;
        sink_printf(o, "  MPI job: launcher %s%s%s, %llu ranks, each in _r<rank>.tally\n",
                    p->mpi_launcher && *p->mpi_launcher ? p->mpi_launcher : "?",
                    named ? ", job " : "", named ? p->mpi_job : "",
                    (unsigned long long)p->mpi_size);
        return;
    }
    if (i)
        sink_printf(o, "  Descendant %s (pid %u)\n", p->name, p->pid);
    else
        sink_printf(o, "  Root process (pid %u)\n", p->pid);
    sink_printf(o, "    Target command:   ");
    for (uint32_t a = 0; a < p->argc; a++)
        sink_printf(o, "%s%s", a ? " " : "", p->argv[a]);
    sink_printf(o, "\n");
    if (p->exe)
        sink_printf(o, "    Executable:       %s\n", p->exe);
    for (size_t r = 0; r < p->nrecords; r++) /* collect -C */
        if (!strcmp(p->records[r].kind, EXP_LOG_COMMENT))
            sink_printf(o, "    Comment:          %s\n", exp_record_get(&p->records[r], EXP_KEY_TEXT)
                        ? exp_record_get(&p->records[r], EXP_KEY_TEXT) : "");
    sink_printf(o, "    Host:             %s, %s, %s, %u CPUs\n", p->host ? p->host : "?",
                p->kernel ? p->kernel : "?", p->arch ? p->arch : "?", p->ncpus);
    sink_printf(o, "    Started:          %s\n", pr_fmt_time(p->real_start, buf, sizeof buf));
    if (hp->duration_known)
        sink_printf(o, "    Duration:         %.3f s\n", hp->duration);
    else
        sink_printf(o, "    Duration:         unknown (no start record and no events)\n");
    if (p->clock_ns)
        sink_printf(o, "    Data collected:   clock profiling, interval %.3f ms (%s)\n",
                    (double)p->clock_ns * 1e-6, p->clock_source ? p->clock_source : "?");
    else
        sink_printf(o, "    Data collected:   no clock profiling\n");
    for (size_t r = 0; r < p->nrecords; r++) {
        if (strcmp(p->records[r].kind, EXP_LOG_SETTINGS))
            continue;
        /* as logged (settings.def's log keys): 0 when the record does not say */
        uint64_t st = exp_record_u64(&p->records[r], "states", 0);
        uint64_t sp = exp_record_u64(&p->records[r], "sample", 0);
        if (st)
            sink_printf(o, "                      thread states every %.0f ms\n", (double)st * 1e-6);
        sink_printf(o, "                      sample packets: %zu", p->nsamples);
        if (sp)
            sink_printf(o, " (every %.3f s)", (double)sp * 1e-9);
        sink_printf(o, "\n");
        if (p->npauses)
            sink_printf(o, "                      paused and resumed %zu times\n",
                        (p->npauses + 1) / 2);
    }
    pr_trace_settings(ps, p);
    for (size_t c = 0; c < p->ncounters; c++)
        counter_text(o, &p->counters[c]);
    sink_printf(o, "    Threads:          %zu\n", p->nthreads);
    sink_printf(o, "    Ended:            %s\n", hp->ended);
    if (p->has_stats) {
        sink_printf(o, "    Clock samples:    %llu recorded of %llu expected (%.1f%%)\n",
                    (unsigned long long)p->st_samples, (unsigned long long)p->st_expected,
                    p->st_expected ? 100.0 * (double)p->st_samples / (double)p->st_expected
                                   : 100.0);
        sink_printf(o, "    Unwind failures:  %llu; stacks cut at the depth limit: %llu\n",
                    (unsigned long long)p->st_unwind_failures,
                    (unsigned long long)p->st_truncated_stacks);
        sink_printf(o, "    Dropped events:   %llu (signal during a write), %llu (disk full)\n",
                    (unsigned long long)p->st_dropped_busy, (unsigned long long)p->st_dropped_disk);
        if (p->st_has_sampler_cpu) {
            const exp_sample_t *last = p->nsamples ? &p->samples[p->nsamples - 1] : NULL;
            double all = last ? (double)(last->utime + last->stime) * 1e-9 : 0;
            sink_printf(o, "    Collector CPU:    %.3f s in tally's sampler thread",
                        (double)p->st_sampler_cpu * 1e-9);
            if (all > 0)
                sink_printf(o, " (%.1f%% of the process's %.3f s by getrusage)",
                            100.0 * (double)p->st_sampler_cpu * 1e-9 / all, all);
            sink_printf(o, ":\n                      counted by getrusage, left out of the "
                           "profile; the clock handler's own cost\n                      is "
                           "inside the profiled threads' time\n");
        }
    } else {
        sink_printf(o, "    Statistics:       none (the process ended before writing them)\n");
        if (hp->counted_known)
            sink_printf(o, "    Clock samples:    %llu recorded (counted in the events)\n",
                        (unsigned long long)hp->counted);
    }
    for (size_t w = 0; w < p->nwarnings; w++)
        sink_printf(o, "    Warning:          %s\n", p->warnings[w]);
}

int view_header(pstate_t *ps, const char *exp_id)
{
    tally_err_t err = { 0 };
    size_t only;
    if (pr_exp_id(ps, "header", exp_id, &only))
        return 1;
    rep_header_t h;
    if (rep_header(ps->ses, &h, &err))
        return pr_report(&err);
    if (ps->json) {
        header_json(ps, &h, only);
        rep_header_free(&h);
        return 0;
    }
    sink_t *o = &ps->out;
    for (size_t x = 0; x < h.nexps; x++) {
        if (only != SIZE_MAX && x != only)
            continue;
        sink_printf(o, "Experiment: %s\n", h.exps[x].e->path);
        for (size_t i = 0; i < h.exps[x].e->nprocs; i++)
            header_text_process(ps, &h.exps[x].procs[i], i);
    }
    const exp_scan_stats_t *st = h.stats;
    sink_printf(o, "Events read: %llu", (unsigned long long)st->events);
    if (h.lost)
        sink_printf(o, ", %llu lost while recording", (unsigned long long)h.lost);
    if (st->bad_chunks || st->bad_records || st->seq_gaps)
        sink_printf(o, ", damage: %llu bad chunks, %llu bad records, %llu gaps",
                    (unsigned long long)st->bad_chunks, (unsigned long long)st->bad_records,
                    (unsigned long long)st->seq_gaps);
    sink_printf(o, "\n");
    for (size_t b = 0; b < h.nbinaries; b++)
        sink_printf(o, "Binary: %s\n", h.binaries[b].message);
    sink_printf(o, "\n");
    rep_header_free(&h);
    return 0;
}

/* ---- -overview ------------------------------------------------------------------------------- */

int view_overview(pstate_t *ps)
{
    tally_err_t err = { 0 };
    rep_overview_t ov;
    if (rep_overview(ps->ses, &ov, &err))
        return pr_report(&err);
    const uint64_t *total = ov.total;
    const rep_trust_t *tr = &ov.trust;
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "overview");
        json_key(&j, "duration");
        json_num(&j, ov.duration);
        json_key(&j, "processes");
        json_u64(&j, ov.nprocs);
        json_key(&j, "threads");
        json_u64(&j, ov.nthreads);
        json_key(&j, "ended");
        json_str(&j, ov.ended);
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            json_key(&j, eng_metric(ps->ses->eng, m)->name);
            json_num(&j, pr_scaled(ps->ses->eng, m, total[m]));
        }
        const char *keys[] = { "samples", "expected", "unwind_failures", "dropped" };
        const uint64_t v[] = { tr->samples, tr->expected, tr->unwind, tr->busy + tr->disk };
        for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
            json_key(&j, keys[k]);
            json_u64(&j, v[k]);
        }
        json_obj_end(&j);
        json_end_doc(&j);
        return 0;
    }
    sink_t *o = &ps->out;
    double dur = ov.duration;
    sink_printf(o, "Overview\n\n");
    sink_printf(o, "  Duration:        %.3f s, %zu process%s, %zu thread%s\n", dur, ov.nprocs,
                ov.nprocs == 1 ? "" : "es", ov.nthreads, ov.nthreads == 1 ? "" : "s");
    sink_printf(o, "  Run:             %s\n", ov.ended);
    double tot = pr_scaled(ps->ses->eng, ENG_M_TOTALCPU, total[ENG_M_TOTALCPU]);
    sink_printf(o, "  Total CPU Time:  %.3f s", tot);
    if (dur > 0)
        sink_printf(o, " (%.2f CPUs busy on average)", tot / dur);
    sink_printf(o, "\n");
    for (int m = ENG_M_USER; m <= ENG_M_SYSTEM; m++)
        sink_printf(o, "    %-16s %8.3f s  %6.2f%%\n", eng_metric(ps->ses->eng, m)->title, pr_scaled(ps->ses->eng, m, total[m]),
                    total[ENG_M_TOTALCPU]
                        ? 100.0 * (double)total[m] / (double)total[ENG_M_TOTALCPU]
                        : 0.0);
    pr_trace_overview(ps, total);
    sink_printf(o, "  Data quality:    %llu samples recorded of %llu expected",
                (unsigned long long)tr->samples, (unsigned long long)tr->expected);
    if (tr->expected)
        sink_printf(o, " (%.1f%%)", 100.0 * (double)tr->samples / (double)tr->expected);
    sink_printf(o, ", %llu unwind failures, %llu events dropped\n", (unsigned long long)tr->unwind,
                (unsigned long long)(tr->busy + tr->disk));
    if (tr->nostats)
        sink_printf(o, "                   %llu process%s ended without statistics (see -header)\n",
                    (unsigned long long)tr->nostats, tr->nostats == 1 ? "" : "es");
    pr_overview_states(ps);
    sink_printf(o, "\n");
    return 0;
}

/* ---- -thread_list ---------------------------------------------------------------------------- */

int view_thread_list(pstate_t *ps)
{
    tally_err_t err = { 0 };
    rep_threads_t th;
    if (rep_threads(ps->ses, &th, &err))
        return pr_report(&err);
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "thread_list");
        json_key(&j, "selection");
        json_str(&j, th.selection);
        json_key(&j, "threads");
        json_arr_begin(&j);
    } else {
        sink_printf(o, "Threads (selected: %s)\n\n", th.selection);
        sink_printf(o, "%6s  %8s  %8s  %-16s %-15s %9s %10s %10s  %s\n", "Thread", "TID", "PID",
                    "Name", "Created by", "Events", "CPU sec.", "Wall sec.", "Process");
    }
    for (size_t i = 0; i < th.n; i++) {
        const rep_thread_t *r = &th.threads[i];
        double cpu = pr_scaled(ps->ses->eng, ENG_M_TOTALCPU, r->t->value[ENG_M_TOTALCPU]);
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "number");
            json_u64(&j, r->t->number);
            json_key(&j, "tid");
            json_u64(&j, r->t->tid);
            json_key(&j, "pid");
            json_u64(&j, r->p->pid);
            json_key(&j, "name");
            json_str(&j, r->name);
            json_key(&j, "how");
            json_str(&j, r->how);
            json_key(&j, "events");
            json_u64(&j, r->t->events);
            json_key(&j, "totalcpu");
            json_num(&j, cpu);
            json_key(&j, "wall");
            json_num(&j, r->wall);
            json_key(&j, "process");
            json_str(&j, r->process);
            json_obj_end(&j);
        } else {
            sink_printf(o, "%6u  %8u  %8u  %-16s %-15s %9llu %10.3f %10.3f  %s\n", r->t->number,
                        r->t->tid, r->p->pid, r->name, r->how, (unsigned long long)r->t->events,
                        cpu, r->wall, r->process);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "\n");
    }
    rep_threads_free(&th);
    return 0;
}

/* ---- -metric_list ---------------------------------------------------------------------------- */

int view_metric_list(pstate_t *ps)
{
    tally_err_t err = { 0 };
    if (eng_aggregate(ps->ses->eng, &err))
        return pr_report(&err);
    sink_t *o = &ps->out;
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "metric_list");
        json_key(&j, "available");
        json_arr_begin(&j);
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            if (!eng_has_metric(ps->ses->eng, m))
                continue;
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, eng_metric(ps->ses->eng, m)->name);
            json_key(&j, "title");
            json_str(&j, eng_metric(ps->ses->eng, m)->title);
            json_key(&j, "unit");
            json_str(&j, eng_metric(ps->ses->eng, m)->unit);
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_key(&j, "metrics");
        json_str(&j, ps->metrics.text);
        json_key(&j, "cmetrics");
        json_str(&j, ps->cmetrics.text);
        json_obj_end(&j);
        json_end_doc(&j);
        return 0;
    }
    sink_printf(o, "Current metrics: %s\nCurrent callers-callees metrics: %s\n", ps->metrics.text,
                ps->cmetrics.text);
    char st[160];
    sink_printf(o, "Current sort: %s\n\nAvailable metrics:\n", pr_sort_title(ps, st, sizeof st));
    for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++)
        if (eng_has_metric(ps->ses->eng, m))
            sink_printf(o, "  %-10s %s (%s); flavors e (exclusive), i (inclusive), a (attributed)\n",
                        eng_metric(ps->ses->eng, m)->name, eng_metric(ps->ses->eng, m)->title, eng_metric(ps->ses->eng, m)->unit);
    sink_printf(o, "\nSpec: [e|i|a][.|%%|+|!]NAME joined by ':', 'name' for the name column; e.g.\n"
                   "  e.%%totalcpu:i.%%totalcpu:e.user:e.system:name\n\n");
    return 0;
}
