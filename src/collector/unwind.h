/*
 * unwind.h - call stacks for the profiling signal handler: libunwind behind one hook.
 *
 * unwind_stack() runs unw_backtrace from inside the handler, then drops the handler's own frames:
 * everything up to the frame whose address equals the interrupted PC taken from the ucontext.
 * If that frame is not found, the stack is just the PC, flagged EXP_STACK_UNWIND_FAIL. libunwind's
 * per-thread caching (UNW_CACHE_PER_THREAD) is selected once, and unwind_prime() runs one unwind in
 * normal context when a thread starts, so the first unwind in a handler allocates nothing.
 *
 * The hook (unwind_set_backtrace) lets a test replace unw_backtrace.
 *
 * Async-signal-safety: unwind_stack is AS-safe as far as libunwind's local unwinder is (it calls
 * dl_iterate_phdr, which is why the profiling signal is blocked around dlopen/dlclose/dlmopen).
 * Buffers belong to the caller. Depends on libunwind only.
 */
#ifndef TALLY_COLLECTOR_UNWIND_H
#define TALLY_COLLECTOR_UNWIND_H

#include <stdint.h>
#include <ucontext.h>

typedef int (*unwind_backtrace_fn)(void **buffer, int size);

void unwind_init(void);
void unwind_prime(void);
void unwind_set_backtrace(unwind_backtrace_fn fn);

/* Frames slack reserved in scratch for the handler's own frames. */
#define UNWIND_SKIP_MAX 48

/* Writes up to max frames (leaf first: the interrupted PC, then return addresses) into out.
 * scratch holds max + UNWIND_SKIP_MAX pointers. Sets *flags (EXP_STACK_*); returns the count. */
uint32_t unwind_stack(const ucontext_t *uc, void **scratch, uint64_t *out, uint32_t max,
                      uint32_t *flags);

#endif
