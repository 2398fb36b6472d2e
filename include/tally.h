/*
 * tally.h - the collector API for programs: sample points, pause and resume.
 *
 *   tally_sample("phase 2");   record a sample packet (time stamp, execution statistics) now,
 *                              with a label; samples cut the run into periods (-sample_select)
 *   tally_pause();             stop recording events (clock, states, tracing) until ...
 *   tally_resume();            ... recording goes on
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

#undef TALLY__RESOLVE
#ifdef __cplusplus
}
#endif

#endif
