/*
 * source.c - the collector's sampling sources, and the services they share; see source.h.
 */
#define _GNU_SOURCE
#include "source.h"

#include <sched.h>

#include "clock.h"
#include "counters.h"
#include "unwind.h"

/* Bytes of stack the profiling handler may use below its own frame when it unwinds (libunwind's
 * cursor and context, the dynamic linker's first resolutions already done at the priming): the
 * deepest use measured here was 5.6 KiB below the handler's frame, at a first unwind that searches
 * the load objects (tests/e2e/faults.py, `faults altdepth`). With less room
 * than this left on the stack the handler is on, the sample keeps only the interrupted PC. */
#define UNWIND_ROOM (8 * 1024)

static const coll_source_ops_t *const all[] = { &clock_source, &counters_source };
#define NSOURCES (sizeof all / sizeof *all)

/* The sources that proc_init turned on (written once per image, before any thread samples). */
static const coll_source_ops_t *active[NSOURCES];
static unsigned nactive;

void sources_settings(coll_proc_t *p)
{
    for (unsigned i = 0; i < NSOURCES; i++)
        if (all[i]->settings)
            all[i]->settings(p);
}

int sources_proc_init(coll_proc_t *p)
{
    nactive = 0;
    for (unsigned i = 0; i < NSOURCES; i++)
        if (all[i]->proc_init(p) == 1)
            active[nactive++] = all[i];
    return (int)nactive;
}

int sources_active(void)
{
    return nactive > 0;
}

void sources_settings_in_use(const coll_proc_t *p, exp_settings_t *in_use)
{
    for (unsigned i = 0; i < NSOURCES; i++)
        if (all[i]->in_use)
            all[i]->in_use(p, in_use);
}

void sources_log_settings(const coll_proc_t *p, exp_line_t *l)
{
    for (unsigned i = 0; i < NSOURCES; i++)
        if (all[i]->log_settings)
            all[i]->log_settings(p, l);
}

void sources_log_decl(const coll_proc_t *p)
{
    for (unsigned i = 0; i < nactive; i++)
        if (active[i]->log_decl)
            active[i]->log_decl(p);
}

int sources_thread_start(coll_proc_t *p, coll_thread_t *t)
{
    int started = 0, rc = 0;
    for (unsigned i = 0; i < nactive; i++) {
        int r = active[i]->thread_start(p, t);
        if (r == 0)
            started++;
        else
            rc = r;
    }
    return started || !nactive ? 0 : rc;
}

void sources_thread_stop(coll_proc_t *p, coll_thread_t *t, uint64_t now, uint64_t cpu)
{
    for (unsigned i = 0; i < nactive; i++)
        active[i]->thread_stop(p, t, now, cpu);
}

void sources_fork_child(coll_proc_t *p)
{
    for (unsigned i = 0; i < nactive; i++)
        if (active[i]->fork_child)
            active[i]->fork_child(p);
}

int sources_overflow(coll_proc_t *p, coll_thread_t *t, const siginfo_t *si, const ucontext_t *uc)
{
    int looks = 0;
    for (unsigned i = 0; i < nactive; i++) {
        int m = active[i]->mine(t, si);
        if (m == 2) {
            for (unsigned k = 0; k < nactive; k++)
                if (active[k]->handler_edge)
                    active[k]->handler_edge(t, 1);
            active[i]->on_overflow(p, t, si, uc);
            for (unsigned k = 0; k < nactive; k++)
                if (active[k]->handler_edge)
                    active[k]->handler_edge(t, 0);
            return 2;
        }
        looks |= m;
    }
    return looks ? 1 : 0;
}

int source_stack(coll_proc_t *p, coll_thread_t *t, const ucontext_t *uc, uint64_t now,
                 uint32_t *id)
{
    uint32_t flags = 0, n;
    if (threads_stack_room(t) < UNWIND_ROOM) {
        t->pcs[0] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
        n = 1;
        flags = EXP_STACK_NO_ROOM;
        source_count(&p->st.unwind_no_room, 1);
    } else {
        n = unwind_stack(uc, t->scratch, t->pcs, p->max_depth, &flags);
    }
    if (flags & EXP_STACK_UNWIND_FAIL)
        source_count(&p->st.unwind_failures, 1);
    if (flags & EXP_STACK_TRUNCATED)
        source_count(&p->st.truncated_stacks, 1);
    uint32_t before = t->stream.nstacks;
    if (exp_stream_stack(&t->stream, t->pcs, n, flags, id)) {
        source_count(t->stream.file->disk_full ? &p->st.dropped_disk : &p->st.dropped_busy, 1);
        return -1;
    }
    source_count(&p->st.stacks, t->stream.nstacks - before);
    if (t->slot)
        threads_publish_stack(t->slot, t->pcs, n, flags);
    unsigned cpu_num;
    if (getcpu(&cpu_num, NULL) == 0 && cpu_num != t->cpu_num &&
        exp_stream_cpu(&t->stream, now, cpu_num) == 0)
        t->cpu_num = cpu_num;
    return 0;
}
