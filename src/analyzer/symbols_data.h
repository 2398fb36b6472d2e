/*
 * symbols_data.h - the data object a memory-referencing instruction references, from DWARF (seed
 * 002's data objects, in tally's terms). Part of the symbols module (the only libdw user).
 *
 * Given the trigger instruction's ELF address in a load object and its memory operand
 * (backtrack.h), with what is known of the address, it names the object:
 *
 *   - a RIP-relative or absolute operand, or any known address inside the object's data: the
 *     global or static variable (DW_OP_addr locations, every unit, functions' statics too);
 *   - a base register that a variable of pointer type lives in at that PC (its location list):
 *     the pointed-to type (perf's data-type profiling); an offset beyond the type is an element of
 *     an array the pointer walks (offset modulo the size);
 *   - a run-time address inside the sample's own frame (at or above its stack pointer less the
 *     red zone, below the CFA, both from the registers recorded at the sample's PC and the
 *     call-frame information): the local variable or parameter whose DW_OP_fbreg location
 *     covers it, else the frame itself, `{stack:FUNCTION}` (kind SYM_DATA_STACK: spill slots,
 *     saved registers, padding);
 *   - a base register rsp or rbp: the local variable or parameter at that frame offset (its
 *     DW_OP_fbreg location, the frame base being the CFA of the call-frame information); with
 *     an index register whose value is not known, the displacement alone locates the variable
 *     (an array: every element has the same descriptor);
 *   - an fs-relative operand without registers (%fs:disp, local-exec) with its address known:
 *     the executable's thread-local variable at that offset from the thread pointer (x86-64's static TLS: the block of the executable ends
 *     at the thread pointer, its size rounded up to its alignment);
 *   - a known run-time address and no variable in the base register (an induction pointer the
 *     compiler made): the pointer variable in a register at the PC whose value is nearest below
 *     the address (within 256 MiB) anchors it, as an element of the array it points to.
 *
 * then walks its type down to the member at the offset, nested to a scalar. Names are seed
 * 002's descriptors: one level `{TYPE NAME}` per step, joined by '.', where TYPE joins qualifiers
 * with '+' (`const+pointer+int`, `array+long_int`), structures, unions and classes are
 * `structure:TAG`, `union:TAG`, `class:TAG` (`-` when anonymous), spaces become '_', NAME is the
 * variable or member (`-` when unnamed: array elements, the object a pointer points to). The
 * first level of an aggregate reached through a pointer, or of a variable of structure type, is
 * the aggregate alone: `{structure:node}`. Each prefix of the chain (up to a '.') is an aggregate
 * containing the object.
 *
 * When nothing can be named, reason says why, in seed 002's numbers (EXP_DUNK_*): 1 the object
 * has no DWARF for the PC, 4 no variable's location describes the base register at the PC, 6
 * an address no variable covers (a spill slot, a constant pool, a library's thread-local), etc.
 *
 * Owned by the caller: sym_data_t (holds per object the table of static variables, read on first
 * use), which must not outlive its sym_ctx_t. Not thread-safe. Out of memory degrades to a
 * reason, never an abort.
 */
#ifndef TALLY_ANALYZER_SYMBOLS_DATA_H
#define TALLY_ANALYZER_SYMBOLS_DATA_H

#include <stdint.h>

#include "analyzer/backtrack.h"
#include "analyzer/symbols.h"

#define SYM_DREF_MAX 512   /* longest descriptor chain kept (longer ones are cut at a level) */
#define SYM_DREF_LEVELS 8  /* deepest nesting named */

enum sym_dkind {
    SYM_DATA_STATIC = 1, /* a global or static variable */
    SYM_DATA_LOCAL = 2,  /* a local variable or parameter in the frame */
    SYM_DATA_POINTEE = 3, /* what a pointer variable points to (heap, or anything else) */
    SYM_DATA_TLS = 4,     /* a thread-local variable (of the executable, or of a library) */
    SYM_DATA_STACK = 5,   /* a slot of the sample's own frame no variable covers */
    SYM_DATA_HEAP = 6,    /* a heap block, named by its allocation site (report_data.h) */
};

typedef struct sym_dref {
    int reason;                 /* 0: named; else EXP_DUNK_* and nothing else is set */
    int kind;                   /* enum sym_dkind */
    int scalar;                 /* a scalar variable of its own (no aggregate contains it) */
    char desc[SYM_DREF_MAX];    /* the descriptor chain */
    uint16_t end[SYM_DREF_LEVELS]; /* desc[0..end[i]) is level i's chain; end[nlevels-1] is all */
    int nlevels;
    char var[128];              /* the variable: "garr", or the pointer's ("p"), "" if none */
    int has_agg;                /* level agg_level is an aggregate type: agg names its DIE */
    int agg_level;              /* 0; 1 under a heap block's level (report_data.c) */
    uint64_t agg;               /* (for sym_data_layout) */
    uint64_t var_offset;        /* the offset into the variable or pointee */
    int anchored;               /* the pointee of a nearby pointer variable (a guess: the
                                   operand's own register holds no variable) */
} sym_dref_t;

/* What is known of the reference. */
typedef struct sym_dquery {
    uint64_t pc;       /* the trigger's ELF address */
    bt_operand_t op;
    int has_off;       /* off: the address minus the base register's value (disp + index*scale) */
    int64_t off;
    int has_addr;      /* addr: the address as an ELF address of this object (static data) */
    uint64_t addr;
    int has_ea;        /* ea: the run-time address, and the registers at the sample's PC */
    uint64_t ea;
    uint64_t sample_pc; /* the sample's ELF address (where regs were taken) */
    const uint64_t *regs;
    uint32_t regmask;
    int has_tp;        /* tp: the thread pointer (fs base) of the sample's thread */
    uint64_t tp;
} sym_dquery_t;

typedef struct sym_data sym_data_t;

sym_data_t *sym_data_new(sym_ctx_t *s);
void sym_data_free(sym_data_t *d);
/* Names the object of q in object obj into *out. */
void sym_data_at(sym_data_t *d, uint32_t obj, const sym_dquery_t *q, sym_dref_t *out);
/* The static variable of object obj at ELF address addr, if DWARF describes one, into *out
 * (reason 6 when none). */
void sym_data_static(sym_data_t *d, uint32_t obj, uint64_t addr, sym_dref_t *out);

/* The thread-local variable at offset off of object obj's TLS block (its PT_TLS segment; the
 * DWARF locations DW_OP_const*u/addr then DW_OP_form_tls_address or GNU_push_tls_address), for
 * a run-time address the caller placed in the block of a thread: 1 when off is inside the
 * block (out names the variable, kind SYM_DATA_TLS, or reason 6 when none covers it), 0 when
 * the object has no block or off is beyond it. */
int sym_data_tls(sym_data_t *d, uint32_t obj, uint64_t off, sym_dref_t *out);

/* Callers' frames (an address in the stack above the sample's own frame): the walk starts from
 * sym_data_cfa, the CFA of the sample's frame (q's registers at its sample_pc), 1 when known.
 * Then, frame by frame, sym_data_caller_frame takes the caller's ELF address pc (its return
 * address less one) in object obj and its stack pointer sp (the callee's CFA): it sets *cfa to
 * the caller's CFA, and when ea is below it, names the caller's local whose fbreg, rsp- or
 * rbp-relative location covers ea, else {stack:FUNCTION}, and returns 1; 0 when ea is above
 * the frame (go on with the next caller), -1 when the frame cannot be placed.
 * The frame pointer: *rbp_ok says whether *rbp is the frame's rbp (the sample's register, when
 * no frame below changed it). A frame whose CFA is rbp-based (a frame-pointer frame) is placed
 * only then; and the next caller's rbp stays known only when the frame leaves rbp alone (its
 * call-frame information says "same value": a frame that saves rbp keeps the caller's on the
 * stack, which is not recorded), so *rbp_ok is updated for the next caller. sym_data_rbp_kept
 * says the same of the sample's own frame (ELF address pc of object obj): 1 when it leaves the
 * caller's rbp in the register. */
int sym_data_cfa(sym_data_t *d, uint32_t obj, const sym_dquery_t *q, uint64_t *cfa);
int sym_data_rbp_kept(sym_data_t *d, uint32_t obj, uint64_t pc);
int sym_data_caller_frame(sym_data_t *d, uint32_t obj, uint64_t pc, uint64_t sp, uint64_t ea,
                          uint64_t *rbp, int *rbp_ok, uint64_t *cfa, sym_dref_t *out);

/* Heap blocks typed by the code that allocated them: the type that a pointer variable living in
 * register reg (DWARF number) at ELF address pc points to, when one of the scopes at pc has one
 * (the variable that receives malloc's result in rax at its return address): 1 and *type, a
 * handle for sym_data_typed; else 0. */
int sym_data_ptr_in_reg(sym_data_t *d, uint32_t obj, uint64_t pc, int reg, uint64_t *type);
/* Names the byte at off of an array of objects of that type (as a pointer's pointee, kind
 * SYM_DATA_POINTEE: the element at off modulo the size, down to the member); reason 6 when the
 * type cannot be read. */
void sym_data_typed(sym_data_t *d, uint32_t obj, uint64_t type, uint64_t off, sym_dref_t *out);

/* A member of an aggregate type: its level descriptor (as in the chains), offset and size. */
typedef struct sym_member {
    char desc[256];
    uint64_t offset, size;
} sym_member_t;

/* The members of the aggregate agg (sym_dref_t.agg) of object obj, in offset order, and its
 * size: 0, or -1 (no memory, or not an aggregate). *members is the caller's to free. */
int sym_data_layout(sym_data_t *d, uint32_t obj, uint64_t agg, sym_member_t **members, size_t *n,
                    uint64_t *size);

#endif
