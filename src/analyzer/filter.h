/*
 * filter.h - the filter expressions of `tally print -filters`, in the spirit of er_print's:
 *
 *   expr    := or ;  or := and ('||' and)* ;  and := unary ('&&' unary)*
 *   unary   := '!' unary | '(' expr ')' | compare | stackterm
 *   compare := value ('=='|'!='|'<'|'<='|'>'|'>=') value
 *   value   := NUMBER | THRID | TID | LWP | PID | EXPID | CPUID | SAMPLE | TSTAMP | STATE
 *   stackterm := FNAME("glob") SOME IN STACK   (some frame's function matches)
 *              | LEAF IN FNAME("glob")          (the leaf frame's function matches)
 *
 * THRID is the thread number of -thread_list, TID (= LWP) the kernel thread id, SAMPLE the sample
 * number of -sample_list, TSTAMP the event's time in nanoseconds since the start of the run, CPUID
 * the CPU the thread last ran on, STATE the clock state (0 user, 1 system, 2 wait, 3 lock, 4 I/O,
 * 5 sleep). Numbers may have a suffix s, ms, us or ns (then they are times in ns). Keywords are
 * case-insensitive. Globs use fnmatch: FNAME("mat*").
 *
 * A pure module: parsing and evaluation only; the caller supplies the event's values and answers
 * the stack terms (pattern match over the frames) through a callback, so the engine can cache
 * them per stack. Errors name the position: "at 12: expected ')'". Not thread-safe per object.
 */
#ifndef TALLY_ANALYZER_FILTER_H
#define TALLY_ANALYZER_FILTER_H

#include <stdint.h>

#include "base/err.h"

typedef struct flt flt_t;

enum flt_key { FLT_THRID, FLT_TID, FLT_PID, FLT_EXPID, FLT_CPUID, FLT_SAMPLE, FLT_TSTAMP,
               FLT_STATE, FLT_NKEYS };

typedef struct flt_event {
    uint64_t v[FLT_NKEYS];
} flt_event_t;

/* Does the stack of the current event match pattern number term (leaf_only: its leaf frame)? */
typedef int (*flt_stack_fn)(void *ctx, uint32_t term, int leaf_only);

int flt_parse(const char *text, flt_t **out, tally_err_t *err);
void flt_free(flt_t *f);
/* 1 if the event passes. */
int flt_eval(const flt_t *f, const flt_event_t *ev, flt_stack_fn stack, void *ctx);
/* Does the expression read key (enum flt_key)? */
int flt_uses(const flt_t *f, int key);
/* The glob patterns of the stack terms, numbered from 0. */
uint32_t flt_npatterns(const flt_t *f);
const char *flt_pattern(const flt_t *f, uint32_t term);
const char *flt_text(const flt_t *f);

#endif
