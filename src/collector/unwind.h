/*
 * unwind.h - call stacks for the profiling signal handler: libunwind behind one hook.
 *
 * unwind_stack() runs unw_backtrace from inside the handler, then drops the handler's own frames:
 * everything up to the frame whose address equals the interrupted PC taken from the ucontext.
 * If that frame is not found, the stack is just the PC, flagged EXP_STACK_UNWIND_FAIL. libunwind's
 * per-thread caching (UNW_CACHE_PER_THREAD) is selected once.
 *
 * A thread's first unw_backtrace creates its trace cache: 256 KiB mapped and written (64 pages
 * faulted in, about 150 us of system time), a key's value set (pthread_setspecific), and the
 * mapping given back at the thread's exit. Done in a handler that is safe (mmap, libunwind's own
 * pool, a lock held with every signal blocked) as long as pthread_setspecific does not allocate,
 * which glibc guarantees for the first 32 keys. unwind_prime() (normal context, when a thread
 * starts, profiling signal blocked) runs the process's first unwind and finds the key it creates:
 * when that key is one of the first 32, unwind_prime_needed() says no for every later thread,
 * which then pays for its cache at its first sample (a thread never sampled never pays);
 * otherwise (the key's index is unknown or higher) every thread is primed as it starts. A fork
 * child keeps the parent's answer (same keys).
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
int unwind_prime_needed(void);
void unwind_prime(void);
void unwind_set_backtrace(unwind_backtrace_fn fn);

/* Frames slack reserved in scratch for the handler's own frames. */
#define UNWIND_SKIP_MAX 48

/* Writes up to max frames (leaf first: the interrupted PC, then return addresses) into out.
 * scratch holds max + UNWIND_SKIP_MAX pointers. Sets *flags (EXP_STACK_*); returns the count. */
uint32_t unwind_stack(const ucontext_t *uc, void **scratch, uint64_t *out, uint32_t max,
                      uint32_t *flags);

#endif
