/*
 * tally.h - the collector API for programs: sample points, pause and resume, profiled blocks.
 *
 *   tally_sample("phase 2");   record a sample packet (time stamp, execution statistics) now,
 *                              with a label; samples cut the run into periods (-sample_select)
 *   tally_pause();             stop recording events (clock, states, tracing) until ...
 *   tally_resume();            ... recording goes on
 *
 * Profiled blocks (instrumented profiling; `tally print -blocks`, `-callstack`):
 *
 *   tally_start("solve");      a profiled block begins: a routine or any range of statements;
 *   tally_stop("solve");       ... and ends. Blocks nest properly per thread, like calls.
 *   tally_start_group("io", "files")  the same, the block in a group (default: "default")
 *   tally_monitor("step 3");   log the calling thread's performance callstack now: for each
 *                              block on its stack, calls, subrs, exclusive and inclusive over
 *                              all its instances, and the instance's own since it started
 *   tally_block_disable("io"); a block, or every block of a group, stops being profiled (it
 *   tally_block_enable("io");  is not on the callstack and its time is its caller's) and again
 *
 * A block is named by its string's contents; the pointer is a hint (a string literal costs
 * least). With `tally collect --blocks=off` the calls do nothing; `--blocks=FILE` selects
 * blocks with a TAU selective instrumentation file.
 *
 * A program built with this header runs unchanged when it is not collected: each call looks the
 * collector up once (dlsym; it is only there under `tally collect`) and afterwards costs one
 * predictable branch. Nothing to link: the header is self-contained (on glibc older than 2.34, link
 * with -ldl). Thread-safe; the functions may be called from any thread, also before main.
 */
#ifndef TALLY_H
#define TALLY_H

#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The collector's entry point called name, or 0 when the program is not being collected. */
static inline void *tally__entry(const char *name)
{
    return dlsym((void *)0 /* RTLD_DEFAULT */, name);
}

#define TALLY__RESOLVE(var, name)                                                                \
    static int var##_done;                                                                       \
    static void *var;                                                                            \
    if (!__atomic_load_n(&var##_done, __ATOMIC_ACQUIRE)) {                                       \
        __atomic_store_n(&var, tally__entry(name), __ATOMIC_RELAXED);                            \
        __atomic_store_n(&var##_done, 1, __ATOMIC_RELEASE);                                      \
    }

static inline void tally_sample(const char *label)
{
    TALLY__RESOLVE(fn, "tally_collector_sample")
    if (__builtin_expect(fn != 0, 0))
        ((void (*)(const char *))fn)(label);
}

static inline void tally_pause(void)
{
    TALLY__RESOLVE(fn, "tally_collector_pause")
    if (__builtin_expect(fn != 0, 0))
        ((void (*)(void))fn)();
}

static inline void tally_resume(void)
{
    TALLY__RESOLVE(fn, "tally_collector_resume")
    if (__builtin_expect(fn != 0, 0))
        ((void (*)(void))fn)();
}

static inline void tally_start_group(const char *name, const char *group)
{
    TALLY__RESOLVE(fn, "tally_collector_block_start")
    if (__builtin_expect(fn != 0, 0))
        ((void (*)(const char *, const char *))fn)(name, group);
}

static inline void tally_start(const char *name)
{
    tally_start_group(name, 0);
}

static inline void tally_stop(const char *name)
{
    TALLY__RESOLVE(fn, "tally_collector_block_stop")
    if (__builtin_expect(fn != 0, 0))
        ((void (*)(const char *))fn)(name);
}

static inline void tally_monitor(const char *label)
{
    TALLY__RESOLVE(fn, "tally_collector_monitor")
    if (__builtin_expect(fn != 0, 0))
        ((void (*)(const char *))fn)(label);
}

static inline void tally__block_switch(const char *name_or_group, int on)
{
    TALLY__RESOLVE(fn, "tally_collector_block_enable")
    if (__builtin_expect(fn != 0, 0))
        ((void (*)(const char *, int))fn)(name_or_group, on);
}

static inline void tally_block_enable(const char *name_or_group)
{
    tally__block_switch(name_or_group, 1);
}

static inline void tally_block_disable(const char *name_or_group)
{
    tally__block_switch(name_or_group, 0);
}

#undef TALLY__RESOLVE
#ifdef __cplusplus
}
#endif

#endif
