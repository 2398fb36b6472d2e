/*
 * TAU.h - TAU's basic profiling macros on top of tally's profiled blocks, so that a program
 * instrumented for TAU builds against tally unchanged: compile with -I<tally>/include/tau (this
 * file is found as <TAU.h>), nothing to link, and run it under `tally collect`. Without tally
 * the macros cost one predictable branch each (include/tally.h).
 *
 *   TAU_START("name") / TAU_STOP("name")              a block named by a string
 *   TAU_PROFILE_TIMER(t, "name", "type", group)       a timer variable: the block is named
 *   TAU_PROFILE_START(t) / TAU_PROFILE_STOP(t)        "name type" (as TAU names it), in group
 *   TAU_PROFILE(name, type, group)                    C++: a block for the enclosing scope
 *   TAU_ENABLE_GROUP(g), TAU_DISABLE_GROUP(g)         groups by their macro name (TAU_USER, ...)
 *   TAU_ENABLE_GROUP_NAME("g"), TAU_DISABLE_GROUP_NAME("g"), TAU_ENABLE_INSTRUMENTATION(), ...
 *   TAU_MONITOR()                                     the performance callstack now (spec 004)
 *   TAU_PROFILE_INIT, TAU_PROFILE_SET_NODE, TAU_PROFILE_SET_CONTEXT, TAU_PROFILE_EXIT, TAU_DB_DUMP
 *                                                     accepted and ignored (tally writes the
 *                                                     profile at the end of each thread)
 *
 * A group is named by the text of the group argument (TAU_PROFILE_TIMER(t, "f", "", TAU_USER)
 * puts block "f" in group "TAU_USER"). A timer's name is fixed by its first use, as in TAU.
 */
#ifndef TALLY_TAU_H
#define TALLY_TAU_H

#include <stdio.h>

#include "../tally.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TAU's group constants (bits), for code that passes them around; tally names groups by text. */
#define TAU_DEFAULT 0xffffffffu
#define TAU_MESSAGE 0x00000001u
#define TAU_PETE 0x00000002u
#define TAU_VIZ 0x00000004u
#define TAU_ASSIGN 0x00000008u
#define TAU_IO 0x00000010u
#define TAU_FIELD 0x00000020u
#define TAU_USER 0x00000040u
#define TAU_USER1 0x00000080u
#define TAU_USER2 0x00000100u
#define TAU_USER3 0x00000200u
#define TAU_USER4 0x00000400u

static inline void tally__tau_timer(char *var, size_t cap, const char *name, const char *type)
{
    if (var[0])
        return;
    if (type && type[0])
        snprintf(var, cap, "%s %s", name, type);
    else
        snprintf(var, cap, "%s", name);
}

#define TAU_PROFILE_TIMER(var, name, type, group)                                                \
    static char var[512];                                                                        \
    static const char *const var##_tally_group = #group;                                         \
    tally__tau_timer(var, sizeof var, (name), (type))
#define TAU_PROFILE_START(var) tally_start_group(var, var##_tally_group)
#define TAU_PROFILE_STOP(var) tally_stop(var)
#define TAU_START(name) tally_start_group((name), "TAU_USER")
#define TAU_STOP(name) tally_stop(name)
#define TAU_MONITOR() tally_monitor(0)
#define TAU_ENABLE_GROUP(group) tally_block_enable(#group)
#define TAU_DISABLE_GROUP(group) tally_block_disable(#group)
#define TAU_ENABLE_GROUP_NAME(name) tally_block_enable(name)
#define TAU_DISABLE_GROUP_NAME(name) tally_block_disable(name)
#define TAU_ENABLE_ALL_GROUPS() ((void)0)
#define TAU_PROFILE_INIT(argc, argv) ((void)0)
#define TAU_INIT(argc, argv) ((void)0)
#define TAU_PROFILE_SET_NODE(node) ((void)0)
#define TAU_PROFILE_SET_CONTEXT(context) ((void)0)
#define TAU_PROFILE_EXIT(msg) ((void)0)
#define TAU_DB_DUMP() ((void)0)

#ifdef __cplusplus
}

struct tally__tau_scope {
    const char *name;
    tally__tau_scope(const char *n, const char *g) : name(n) { tally_start_group(n, g); }
    ~tally__tau_scope() { tally_stop(name); }
};
#define TALLY__TAU_CAT2(a, b) a##b
#define TALLY__TAU_CAT(a, b) TALLY__TAU_CAT2(a, b)
#define TAU_PROFILE(name, type, group)                                                           \
    static char TALLY__TAU_CAT(tally__tau_n, __LINE__)[512];                                     \
    tally__tau_timer(TALLY__TAU_CAT(tally__tau_n, __LINE__), 512, (name), (type));               \
    tally__tau_scope TALLY__TAU_CAT(tally__tau_s, __LINE__)(                                     \
        TALLY__TAU_CAT(tally__tau_n, __LINE__), #group)
#endif

#endif
