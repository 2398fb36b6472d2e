/*
 * symbols.h - program addresses to names: load object, function, source file:line. The only user
 * of elfutils (libelf, libdw) in tally.
 *
 * A sym_ctx_t holds every load object seen in the experiments being analysed, keyed by (path,
 * build-id): the same library in two processes or two experiments is one object. Each object is
 * read lazily, on its first lookup, into a sorted table of function symbols (.symtab of the file
 * or of its separate debug file found by build-id under /usr/lib/debug/.build-id, else .dynsym),
 * so a lookup is a binary search. Addresses are ELF virtual addresses of the object's file
 * (pc - load bias); the caller subtracts the bias and, for return addresses, 1.
 *
 * Functions get dense ids from 0, in order of first lookup, stable for the life of the context.
 * An address no symbol covers still gets a function that aggregates sensibly: the range between
 * the preceding function's end and the next symbol (or the call-frame-information range that holds
 * it) becomes one function named `<static>@0xADDR (<libname>)`, ADDR being the range's start. An
 * address in an object that cannot be read becomes `<libname>@0xADDR`-free: one function
 * `<unknown> (<libname>)` per object, so metrics still add up per object.
 *
 * The object's status tells whether the file on disk is the one that was profiled: when the
 * recorded build-id differs from the file's, or the file is missing or unreadable, status says so
 * and message is a sentence for the user; lookups then fall back as above.
 *
 * Ownership: every string returned is owned by the context and lives until sym_free. Not
 * thread-safe. Errors: sym_new returns NULL on no memory; lookups never fail (they degrade).
 */
#ifndef TALLY_ANALYZER_SYMBOLS_H
#define TALLY_ANALYZER_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct sym_ctx sym_ctx_t;

enum sym_obj_status {
    SYM_OBJ_UNREAD = 0, /* not looked at yet */
    SYM_OBJ_OK,         /* read; build-id matches (or none was recorded) */
    SYM_OBJ_NOSYMS,     /* read, but has no symbol table at all */
    SYM_OBJ_MISSING,    /* the file does not exist any more */
    SYM_OBJ_CHANGED,    /* the file's build-id differs from the recorded one */
    SYM_OBJ_UNREADABLE, /* not an ELF file, or cannot be opened */
};

typedef struct sym_object {
    const char *path;    /* as recorded ("[vdso]" for the vDSO) */
    const char *name;    /* base name: "libc.so.6" */
    const char *buildid; /* recorded build-id, "" if none */
    int status;          /* enum sym_obj_status */
    const char *message; /* for CHANGED/MISSING/UNREADABLE/NOSYMS: a sentence for the user; else "" */
    const char *debugfile; /* separate debug file used, or "" */
} sym_object_t;

typedef struct sym_func {
    const char *name;      /* demangled, without parameter list: "ns::f" (-name short) */
    const char *long_name; /* demangled with parameters: "ns::f(int)" (-name long) */
    const char *mangled;   /* the symbol as in the ELF file: "_ZN2ns1fEi" (-name mangled) */
    uint32_t object;       /* index of its load object */
    uint64_t addr, size;   /* ELF virtual address range in the object's file; size 0 if unknown */
} sym_func_t;

sym_ctx_t *sym_new(void);
void sym_free(sym_ctx_t *s);

/* The index of the object (path, buildid); registers it (without reading it) the first time. */
uint32_t sym_object_add(sym_ctx_t *s, const char *path, const char *buildid);
size_t sym_nobjects(const sym_ctx_t *s);
/* Reads the object if not yet read (so status is known) and returns it. */
const sym_object_t *sym_object(sym_ctx_t *s, uint32_t obj);

/* The function of object obj that holds ELF address addr (see the header comment for fallbacks). */
uint32_t sym_func_at(sym_ctx_t *s, uint32_t obj, uint64_t addr);
/* The function for a pc in no known object: one `<Unknown>` function (object UINT32_MAX). */
uint32_t sym_func_unknown(sym_ctx_t *s);
size_t sym_nfuncs(const sym_ctx_t *s);
const sym_func_t *sym_func(const sym_ctx_t *s, uint32_t id);

/* Source file and line of ELF address addr of object obj (DWARF 4 and 5). Returns 0 and sets *file
 * (absolute or as compiled) and *line, or -1 when there is no line information. */
int sym_line_at(sym_ctx_t *s, uint32_t obj, uint64_t addr, const char **file, uint32_t *line);

#endif
