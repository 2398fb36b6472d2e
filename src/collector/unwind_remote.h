/*
 * unwind_remote.h - the call stack of another thread of this process that is blocked in a system
 * call, for the sampler thread (sampler.c), without stopping or signalling that thread.
 *
 * The kernel says where the blocked thread's user code stands (/proc/self/task/<tid>/syscall: its
 * stack pointer and program counter). The thread's stack is copied with process_vm_readv, which
 * fails cleanly instead of faulting if the memory is gone, and unwound with libunwind's generic
 * (remote) unwinder through accessors that read the copy, other memory again through
 * process_vm_readv, and know only RIP and RSP. Frames whose unwinding needs another register the
 * kernel did not give (a frame-pointer-based frame deeper than the first) end the stack, flagged
 * EXP_STACK_UNWIND_FAIL. The thread may wake up meanwhile: the stack is then that of the moment
 * of the copy, still one the thread really had.
 *
 * A thread blocked inside one of the collector's interposers (built with frame pointers, so not
 * unwindable this way) has published its caller's registers (threads.h, COLL_BLOCKING): the
 * frames below the caller come from the kernel's (pc, sp), and the caller's and above from the
 * published (ip, sp, bp), the frame pointer included, so frame-pointer-based frames of the
 * program unwind too. The publication is used only while the return address it names is still
 * on the stack at sp - 8 (a thread that left the call by longjmp does not have it).
 *
 * A walk is a function of the registers it starts from and of the memory words it reads: a memo
 * (unwind_memo_t) keeps every word a walk read, with its address, so that when the thread is seen
 * blocked again at the same pc and sp with the same published caller, reading those words again
 * (one process_vm_readv) and finding them unchanged proves the walk would give the same stack,
 * without walking (unwind_memo_same). A thread that sleeps in one loop and wakes every millisecond
 * keeps its stack while its locals change.
 *
 * Not async-signal-safe (libunwind allocates its caches): sampler thread only. Not thread-safe.
 * Depends on: libunwind-generic.
 */
#ifndef TALLY_COLLECTOR_UNWIND_REMOTE_H
#define TALLY_COLLECTOR_UNWIND_REMOTE_H

#include <stdint.h>

#include "fastunwind.h"

#define UNWIND_MEMO_WORDS 48

/* The inputs of one walk: its registers and the words it read (n 0: nothing to reuse). */
typedef struct unwind_memo {
    uint64_t pc, sp;
    fu_regs_t caller; /* the published caller given (ip 0: none) */
    uint32_t n;
    uint64_t addr[UNWIND_MEMO_WORDS], val[UNWIND_MEMO_WORDS];
} unwind_memo_t;

/* Unwinds from (pc, sp) of a blocked thread: up to max frames into out (leaf first); sets *flags
 * (EXP_STACK_*). caller: the registers an interposer the thread is blocked in published (NULL:
 * none); *spliced is set to 1 when they were used. memo (NULL: none) receives the walk's inputs,
 * or n = 0 when they do not fit. Returns the number of frames, 0 when nothing could be read. */
uint32_t unwind_blocked(uint64_t pc, uint64_t sp, const fu_regs_t *caller, uint64_t *out,
                        uint32_t max, uint32_t *flags, int *spliced, unwind_memo_t *memo);

/* 1 when a walk from (pc, sp, caller) now would read what the memo's walk read: same registers,
 * same caller, and every word it read still holds the value it had. */
int unwind_memo_same(const unwind_memo_t *memo, uint64_t pc, uint64_t sp, const fu_regs_t *caller);

#endif
