/*
 * symbols.h - program addresses to names: load object, function, source file:line. The only user
 * of elfutils (libelf, libdw) in tally.
 *
 * A sym_ctx_t holds every load object seen in the experiments being analysed, keyed by (path,
 * build-id): the same library in two processes or two experiments is one object. Each object is
 * read lazily, on its first lookup, into a sorted table of function symbols (STT_FUNC and
 * STT_GNU_IFUNC; version suffixes such as "@@GLIBC_2.2.5" dropped), so a lookup is a binary search
 * with no allocation once the function has an id. The table comes from the .symtab of the
 * object's separate debug file if there is one (/usr/lib/debug/.build-id/xx/rest.debug
 * by the file's build-id, else the .gnu_debuglink name next to the file, in its .debug/ or under
 * /usr/lib/debug/<dir>/, checked by build-id or CRC), else the file's own .symtab, else its
 * .dynsym, plus the stubs of the procedure linkage table named "func@plt" (by the relocation of the
 * GOT slot each jumps through). Aliases at one address are one function, named by the first of: a global, then weak,
 * then local symbol; fewer leading underscores; the shorter name; byte order ("malloc" rather than
 * "__libc_malloc"). A symbol of size 0 extends to the next symbol or call-frame range start (or
 * over its own call-frame range), within its section. Addresses are ELF virtual addresses of the
 * object's file (pc - load bias); the caller subtracts the bias and, for return addresses, 1.
 * "[vdso]" is read from this process's own vDSO (it matches when the build-ids agree).
 *
 * Functions get dense ids from 0, in order of first lookup, stable for the life of the context.
 * An address no symbol covers still gets a function that aggregates sensibly: the call-frame
 * range (an FDE of .eh_frame, found through .eh_frame_hdr) that holds it, or else the gap between
 * the neighbouring symbols and call-frame ranges, becomes one function named
 * `<static>@0xSTART (<libname>)`, START being the range's first address; every address of that
 * range gets the same id. All addresses of an object that cannot be read (missing, unreadable,
 * not ELF) share one function, `<unknown> (<libname>)`, so metrics still add up per object.
 *
 * The object's status tells whether the file on disk is the one that was profiled: when the
 * recorded build-id differs from the file's, or the file is missing or unreadable, status says so
 * and message is a sentence for the user. A changed file is still read (best effort: its names
 * may be wrong); the others fall back as above.
 *
 * Names: `mangled` is the symbol as in the ELF file (or the made-up name); `long_name` demangles
 * C++ names (__cxa_demangle); `name` drops the parameter list, trailing qualifiers and, for a
 * template function, the return type, keeping any "[clone .cold]": "void ns::f<int>(int) const"
 * -> "ns::f<int>". Made-up names are the same in all three.
 *
 * Ownership: every string and every sym_object_t / sym_func_t pointer returned is owned by the
 * context and stays valid until sym_free. Not thread-safe. Errors: nothing is printed and nothing
 * exits. sym_new returns NULL on no memory; sym_object_add returns UINT32_MAX on no memory, and
 * lookups of that (or any unknown) object index give `<Unknown>`; lookups never fail: out of
 * memory they degrade to `<Unknown>` or an unreadable object.
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

/* The index of the object (path, buildid); registers it (without reading it) the first time.
 * buildid is lower-case hex or "" (or NULL) when none was recorded. UINT32_MAX: no memory. */
uint32_t sym_object_add(sym_ctx_t *s, const char *path, const char *buildid);
size_t sym_nobjects(const sym_ctx_t *s);
/* Reads the object if not yet read (so status is known) and returns it; obj must be an index
 * sym_object_add returned. */
const sym_object_t *sym_object(sym_ctx_t *s, uint32_t obj);
/* Whether the object has been read (by a lookup or sym_object): its status is known. */
int sym_object_read(const sym_ctx_t *s, uint32_t obj);

/* The function of object obj that holds ELF address addr (see the header comment for fallbacks).
 * O(log n); the first lookup of an object reads it. */
uint32_t sym_func_at(sym_ctx_t *s, uint32_t obj, uint64_t addr);
/* The function for a pc in no known object: one `<Unknown>` function (object UINT32_MAX). */
uint32_t sym_func_unknown(sym_ctx_t *s);
/* The frame at the root of a stack cut at the depth limit: one `<Truncated-stack>` function
 * (object UINT32_MAX), as er_print names it. */
uint32_t sym_func_truncated(sym_ctx_t *s);
size_t sym_nfuncs(const sym_ctx_t *s);
const sym_func_t *sym_func(const sym_ctx_t *s, uint32_t id);

/* Source file and line of ELF address addr of object obj (DWARF 4 and 5, from the separate debug
 * file if there is one, else the file; the innermost line, so inlined code is on the lines it came
 * from). Returns 0 and sets *file (absolute or as compiled) and *line; 1 with *line 0 for code
 * the compiler generated that no source line stands for (DWARF line 0); -1 when there is no line
 * information. The first call per object reads its DWARF; a lookup is a binary search over the
 * sorted compilation units, then over the unit's sorted line table (libdw's, read once per unit). */
int sym_line_at(sym_ctx_t *s, uint32_t obj, uint64_t addr, const char **file, uint32_t *line);

/* Copies len bytes of object obj's code at ELF address addr (from its loadable segments) into buf.
 * Returns the number of bytes copied (short at the end of a segment), or -1 when the object cannot
 * be read. For disassembly. */
long sym_read_code(sym_ctx_t *s, uint32_t obj, uint64_t addr, void *buf, size_t len);

/* Adds a directory of archived binaries (an experiment's archive/, files named by build-id, their
 * separate debug files by build-id and ".debug"): objects registered afterwards whose file is gone
 * or changed are read from their archived copy (status OK, with a message saying so), and an
 * archived debug file serves when the system has none for the build-id. The directory comes with
 * an experiment and is not trusted: its files are opened only as regular files inside it, no
 * symbolic link followed (dir itself included), and only for build-ids of hex digits. Files of
 * the system are opened without blocking (a FIFO at a recorded path is unreadable, not a hang).
 * Returns 0 or -1 on no memory. */
int sym_add_archive(sym_ctx_t *s, const char *dir);

/* The GNU build-id of the ELF file open on fd, lower-case hex into out ("" if it has none);
 * -1 when it is not an ELF file. For checking a copy before it is kept. */
int sym_fd_buildid(int fd, char out[129]);

/* A function standing for the whole object, named `<libname>` (for objects shown as one entry). */
uint32_t sym_func_whole(sym_ctx_t *s, uint32_t obj);
/* The object-relative address of the function named `name` that the dynamic linker binds to in
 * object obj (a defined function of its dynamic symbol table, the default version): 0, or -1
 * when obj exports no such function or cannot be read. */
int sym_dynsym_addr(sym_ctx_t *s, uint32_t obj, const char *name, uint64_t *addr);
/* Names function id as the program called it (an alias at its address, e.g. "fwrite" for the
 * symbol table's preferred "_IO_fwrite"), from then on in every view; the first such name stays.
 * 0, -1 (no such function) or TALLY_ENOMEM. */
int sym_func_call_name(sym_ctx_t *s, uint32_t id, const char *name);

/* The functions inlined at ELF address addr of object obj, innermost first (DWARF inlined
 * subroutines; one function per name and object, whatever copy), each with the source line it was
 * inlined at (its call site, in the function around it: the next entry, or the containing
 * function after the last; call_file NULL and call_line 0 when the DWARF does not say). Up to max
 * into out; returns their number, 0 when the code there is not inlined or there is no DWARF. */
typedef struct sym_inline {
    uint32_t func;
    const char *call_file;
    uint32_t call_line;
} sym_inline_t;
int sym_inlines_at(sym_ctx_t *s, uint32_t obj, uint64_t addr, sym_inline_t *out, int max);
/* Calls fn with the call site (file, line) of every inlined subroutine, at any depth, in the
 * function that holds ELF address addr of object obj (once per address range of each): the lines
 * that have code through inlining. Returns 0, or -1 when there is no DWARF for addr. */
typedef void (*sym_site_fn)(void *ctx, const char *file, uint32_t line);
int sym_inline_sites(sym_ctx_t *s, uint32_t obj, uint64_t addr, sym_site_fn fn, void *ctx);

/* For the other files of the symbols module that read more of the DWARF (symbols_data.c): the
 * compilation unit of object obj holding ELF address addr (NULL: no DWARF there), and the
 * object's DWARF with the ELF file it is in (NULL: none). Owned by the context. */
struct Dwarf;
struct Elf;
void *sym_dwarf_cu(sym_ctx_t *s, uint32_t obj, uint64_t addr); /* a Dwarf_Die * */
struct Dwarf *sym_dwarf(sym_ctx_t *s, uint32_t obj, struct Elf **elf);

#endif
