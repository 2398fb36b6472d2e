/*
 * fastunwind.h - call stacks for the tracing interposers (heap, sync, I/O): the DWARF call-frame
 * information of .eh_frame, interpreted once per return address and cached, so that a stack costs
 * a few nanoseconds per frame instead of libunwind's set-up and stepping (a malloc wrapper takes
 * a stack on every call).
 *
 * The walk starts in the caller of an interposer: the interposer passes its return address, its
 * canonical frame address (the caller's stack pointer after the return) and the caller's frame
 * pointer register (fu_regs_t, filled by FU_REGS in a function built with frame pointers). Each
 * step looks up the rule of the return address (CFA = rsp or rbp + offset, or *(rbp + offset) for
 * realigned frames; where rbp was saved; the return address at CFA - 8), reads the caller's
 * return address and frame pointer, and moves up. The walk ends cleanly where the CFI says the
 * return address is undefined (_start, a thread's start), and stops with EXP_STACK_UNWIND_FAIL on
 * code without CFI, on rules it does not know (DW_CFA_register, most expressions) and on signal
 * frames. Every read is bounded by the thread's stack: between the current stack pointer and
 * stack_hi (the top of the main thread's stack, or a thread's descriptor, which sits above its
 * stack), so a wrong rule yields a short stack, never a fault.
 *
 * Caches: rules in one process-wide open-addressing table (lock-free: an entry is published by
 * writing its key last, and readers check the key again after reading the rule); load objects
 * (executable ranges, .eh_frame_hdr) in an append-only table filled from dl_iterate_phdr when an
 * address is in no known object. fu_forget() (after dlclose) ages both by a generation number,
 * since an address may then belong to another object. Neither table is freed while the process
 * lives.
 *
 * Context: normal context, any thread, no locks held while calling into the loader (a refresh
 * of the object table runs dl_iterate_phdr with only this module's spinlock free). Not for signal
 * handlers (the refresh calls dl_iterate_phdr). Allocates only with mmap. Depends on libc.
 */
#ifndef TALLY_COLLECTOR_FASTUNWIND_H
#define TALLY_COLLECTOR_FASTUNWIND_H

#include <stdint.h>

typedef struct fu_regs {
    uint64_t ip; /* a return address in the first frame to report */
    uint64_t sp; /* the stack pointer after returning there (the callee's CFA) */
    uint64_t bp; /* the frame pointer register at that point */
} fu_regs_t;

/* The registers of the caller of the function this is used in, which must keep a frame pointer
 * (built with -fno-omit-frame-pointer). */
#define FU_REGS()                                                                                  \
    ((fu_regs_t){ (uint64_t)__builtin_return_address(0),                                          \
                  (uint64_t)__builtin_frame_address(0) + 16,                                       \
                  *(const uint64_t *)__builtin_frame_address(0) })

/* The stack cells a walk read (return addresses, saved frame pointers), so that a caller can
 * tell that a later walk from the same registers would read the same values and give the same
 * frames (fu_same). */
typedef struct fu_cells {
    uint32_t n, max;  /* cells read; room for max (more: the walk is not memoized, ok = 0) */
    int ok;
    int uses_bp;      /* the walk used the frame pointer register it started with */
    uint64_t *addr, *val;
} fu_cells_t;

/* A place where the walk jumps: when it reaches the return address ip (the collector's dlopen
 * calls the loader through a gadget in the caller's object, see interpose.c), it goes on from
 * the registers to, the program's caller, skipping the collector's frames. ip 0: none. */
typedef struct fu_splice {
    uint64_t ip;
    fu_regs_t to;
} fu_splice_t;

/* Writes up to max return addresses (r.ip first) into out; *flags gets EXP_STACK_TRUNCATED when
 * max was reached, EXP_STACK_UNWIND_FAIL when the walk stopped before the outermost frame.
 * stack_hi: no frame lies at or above it. cells, if not NULL, gets the cells read (a walk that
 * used the splice is not memoizable). Returns the number of frames. */
uint32_t fu_unwind(fu_regs_t r, uint64_t stack_hi, uint64_t *out, uint32_t max,
                   uint32_t *flags, fu_cells_t *cells, const fu_splice_t *splice);

/* Would a walk from r give what the walk that read cells (from r0) gave? Only with the same
 * stack pointer, so every cell is still inside the stack. */
static inline int fu_same(fu_regs_t r, fu_regs_t r0, const fu_cells_t *cells)
{
    if (r.ip != r0.ip || r.sp != r0.sp || (cells->uses_bp && r.bp != r0.bp))
        return 0;
    for (uint32_t i = 0; i < cells->n; i++)
        if (*(const volatile uint64_t *)(uintptr_t)cells->addr[i] != cells->val[i])
            return 0;
    return 1;
}

/* The current generation of the caches (a memoized walk is valid only within one). */
extern uint32_t fu_gen __attribute__((visibility("hidden")));
static inline uint32_t fu_generation(void) { return __atomic_load_n(&fu_gen, __ATOMIC_RELAXED); }

/* Some object was unloaded: cached rules and objects are stale from now on. */
void fu_forget(void);
/* In a fork child: the object table's lock, which another thread of the parent may have held. */
void fu_after_fork(void);

/* The highest address the calling thread's frames may use (see the header comment). */
uint64_t fu_stack_hi(int is_main_thread);

#endif
