/*
 * ompt.c - OpenMP Work and Wait from OMPT (OpenMP 5.0 tools interface), for runtimes that have
 * it: LLVM's libomp, which also runs GCC-built programs (see ompstate.h).
 *
 * The collector exports ompt_start_tool, which an OMPT runtime calls when it starts; the tool's
 * initialize registers the callbacks below, each of which sets the calling thread's state:
 *   thread_begin          Work (an OpenMP thread starts)
 *   implicit_task         begin: Work; end: Wait (a worker is idle in the runtime until its next
 *                         region; the encountering thread goes on at parallel_end)
 *   parallel_end          Work (the encountering thread after the region)
 *   sync_region_wait      begin: Wait (barriers, taskwait, taskgroup, reductions); end: Work
 *   mutex_acquire         Wait (locks, critical, atomic, ordered: until acquired)
 *   mutex_acquired        Work
 * A worker's end needs no state (it exits); the initial thread's (the runtime shutting down at
 * exit) leaves the thread in Work: what runs after it is the program's serial code.
 * A thread waits inside a barrier spinning (KMP_BLOCKTIME) then asleep: both are Wait.
 *
 * Only one OMPT tool can run: when the user names one (OMP_TOOL_LIBRARIES) or turns tools off
 * (OMP_TOOL=disabled), the collector's steps aside (returns NULL) and the program gets no
 * OpenMP states. The types below are OpenMP 5.0's (the ABI of every OMPT runtime); only what the
 * tool uses is declared, so the collector builds without an OpenMP tools header.
 */
#define _GNU_SOURCE
#include "ompstate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- OpenMP 5.0 OMPT, what this tool uses ---------------------------------------------------- */

typedef union ompt_data {
    uint64_t value;
    void *ptr;
} ompt_data_t;
typedef void (*ompt_interface_fn_t)(void);
typedef ompt_interface_fn_t (*ompt_function_lookup_t)(const char *name);
typedef void (*ompt_callback_t)(void);
typedef int (*ompt_set_callback_t)(int event, ompt_callback_t cb);
typedef int (*ompt_initialize_t)(ompt_function_lookup_t lookup, int initial_device_num,
                                 ompt_data_t *tool_data);
typedef void (*ompt_finalize_t)(ompt_data_t *tool_data);
typedef struct ompt_start_tool_result {
    ompt_initialize_t initialize;
    ompt_finalize_t finalize;
    ompt_data_t tool_data;
} ompt_start_tool_result_t;

enum { /* ompt_callbacks_t */
    OMPT_CB_THREAD_BEGIN = 1,
    OMPT_CB_PARALLEL_END = 4,
    OMPT_CB_IMPLICIT_TASK = 7,
    OMPT_CB_SYNC_REGION_WAIT = 16,
    OMPT_CB_MUTEX_ACQUIRE = 26,
    OMPT_CB_MUTEX_ACQUIRED = 27,
};
enum { OMPT_SCOPE_BEGIN = 1, OMPT_SCOPE_END = 2, OMPT_SCOPE_BEGINEND = 3 };
enum { OMPT_SET_NEVER = 1 }; /* ompt_set_result_t: above this, the callback will be made */
enum { OMPT_TASK_INITIAL = 1 }; /* implicit_task flags: the initial task of a thread */

/* ---- callbacks -------------------------------------------------------------------------------- */

static void on_thread_begin(int type, ompt_data_t *thread_data)
{
    (void)type, (void)thread_data;
    ompstate_work();
}

static void on_parallel_end(ompt_data_t *parallel_data, ompt_data_t *task_data, int flags,
                            const void *codeptr)
{
    (void)parallel_data, (void)task_data, (void)flags, (void)codeptr;
    ompstate_work();
}

static void on_implicit_task(int endpoint, ompt_data_t *parallel_data, ompt_data_t *task_data,
                             unsigned actual, unsigned index, int flags)
{
    (void)parallel_data, (void)task_data, (void)actual, (void)index;
    if (endpoint == OMPT_SCOPE_BEGIN)
        ompstate_work();
    else if (endpoint == OMPT_SCOPE_END && !(flags & OMPT_TASK_INITIAL))
        ompstate_wait();
}

static void on_sync_region_wait(int kind, int endpoint, ompt_data_t *parallel_data,
                                ompt_data_t *task_data, const void *codeptr)
{
    (void)kind, (void)parallel_data, (void)task_data, (void)codeptr;
    if (endpoint == OMPT_SCOPE_BEGIN)
        ompstate_wait();
    else if (endpoint == OMPT_SCOPE_END)
        ompstate_work();
}

static void on_mutex_acquire(int kind, unsigned hint, unsigned impl, uint64_t wait_id,
                             const void *codeptr)
{
    (void)kind, (void)hint, (void)impl, (void)wait_id, (void)codeptr;
    ompstate_wait();
}

static void on_mutex_acquired(int kind, uint64_t wait_id, const void *codeptr)
{
    (void)kind, (void)wait_id, (void)codeptr;
    ompstate_work();
}

/* ---- the tool --------------------------------------------------------------------------------- */

static int tool_initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *tool_data)
{
    (void)device, (void)tool_data;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (!set || !ompstate_ready())
        return 0; /* 0: the runtime runs without the tool */
    static const struct {
        int event;
        ompt_callback_t cb;
    } cbs[] = {
        { OMPT_CB_THREAD_BEGIN, (ompt_callback_t)on_thread_begin },
        { OMPT_CB_PARALLEL_END, (ompt_callback_t)on_parallel_end },
        { OMPT_CB_IMPLICIT_TASK, (ompt_callback_t)on_implicit_task },
        { OMPT_CB_SYNC_REGION_WAIT, (ompt_callback_t)on_sync_region_wait },
        { OMPT_CB_MUTEX_ACQUIRE, (ompt_callback_t)on_mutex_acquire },
        { OMPT_CB_MUTEX_ACQUIRED, (ompt_callback_t)on_mutex_acquired },
    };
    int waits = 0;
    for (size_t i = 0; i < sizeof cbs / sizeof *cbs; i++) {
        int r = set(cbs[i].event, cbs[i].cb);
        if (cbs[i].event == OMPT_CB_SYNC_REGION_WAIT)
            waits = r > OMPT_SET_NEVER;
    }
    if (!waits)
        coll_warn("the OpenMP runtime does not report its waits (OMPT sync_region_wait): OpenMP "
                  "Wait misses barriers");
    __atomic_store_n(&ompstate_ompt_active, 1, __ATOMIC_RELEASE);
    return 1;
}

static void tool_finalize(ompt_data_t *tool_data) { (void)tool_data; }

COLL_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version,
                                                      const char *runtime_version)
{
    (void)omp_version, (void)runtime_version;
    static ompt_start_tool_result_t result = { tool_initialize, tool_finalize, { 0 } };
    const char *tool = getenv("OMP_TOOL"), *libs = getenv("OMP_TOOL_LIBRARIES");
    if ((tool && !strcmp(tool, "disabled")) || (libs && *libs))
        return NULL; /* the user's tool (or none) */
    if (!coll_ensure_init())
        return NULL;
    return &result;
}
