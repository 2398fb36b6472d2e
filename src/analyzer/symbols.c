/*
 * symbols.c - load objects, function symbols and source lines (see symbols.h).
 *
 * Sections, top-down: memory (out of memory degrades, never aborts); names (demangling,
 * shortening); ELF helpers (build-id, sections); debug files (by build-id, by .gnu_debuglink);
 * symbol tables; call-frame ranges (.eh_frame_hdr and .eh_frame); reading an object; functions
 * and lookups; lines (libdw); the context.
 */
#define _GNU_SOURCE
#include "analyzer/symbols.h"
#include "base/ehframe.h"
#include "base/err.h"
#include "base/fsafe.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* from libstdc++ (tally_analyzer links stdc++): demangles C++ (Itanium ABI) names */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define DEBUG_ROOT "/usr/lib/debug"
#define FBLOCK_BITS 12 /* functions are stored in blocks of 4096: pointers to them stay valid */
#define FBLOCK (1u << FBLOCK_BITS)

/* ---- data ----------------------------------------------------------------------------------- */

typedef struct fsym {
    uint64_t size;
    uint32_t name; /* offset into the object's strings */
    uint32_t func; /* function id, UINT32_MAX until first looked up */
} fsym_t;

typedef struct cu_range {
    uint64_t lo, hi;
    Dwarf_Die cu;
} cu_range_t;

/* The inlined subroutines of one compilation unit, each address range on its own, sorted by start:
 * read in one walk of the unit's DIEs the first time an address in it is asked for (what
 * dwarf_getscopes would do for every address). */
typedef struct inl_range {
    uint64_t lo, hi;
    const char *name, *call_file; /* owned by the Dwarf */
    const char *link;             /* the linkage (mangled) name, NULL when the DWARF has none */
    uint32_t call_line, depth;
    uint32_t func; /* its function id, UINT32_MAX until first used */
} inl_range_t;

typedef struct cu_inlines {
    Dwarf_Off cu;    /* the unit's DIE offset */
    inl_range_t *r;  /* sorted by lo */
    uint64_t *maxhi; /* maxhi[i]: the highest end of r[0..i] */
    size_t n;
} cu_inlines_t;

typedef struct object {
    sym_object_t pub;
    char *path, *name, *buildid;
    char *message;   /* owned, or NULL: pub.message is then "" or a static sentence */
    char *debugfile; /* owned, or NULL */
    int loaded, unreadable;
    /* functions: addrs[] (sorted, for the binary search) and syms[] side by side */
    uint64_t *addrs;
    fsym_t *syms;
    size_t nsyms;
    char *strings;
    /* call-frame ranges [fde_lo, fde_hi), sorted by start */
    uint64_t *fde_lo, *fde_hi;
    size_t nfde;
    uint32_t unknown_func; /* `<unknown> (lib)`, UINT32_MAX until needed */
    /* line information */
    int dwarf_tried;
    Dwarf *dw;
    Elf *dw_elf;
    int dw_fd;
    cu_range_t *cus;
    size_t ncus;
    void *image; /* the copy of the vDSO */
    uint32_t whole_func; /* `<libname>`: the object as one function (hidden), or UINT32_MAX */
    char **inl_names;    /* inlined functions seen (linkage name, else name), their function ids */
    uint32_t *inl_funcs;
    size_t ninl;
    uint32_t *by_name;   /* indices of syms[] sorted by name (for inlined copies), made on use */
    int by_name_tried;
    cu_inlines_t *cuinl; /* units whose inlined subroutines have been read */
    size_t ncuinl;
    char *archived; /* an archived copy of the binary with the recorded build-id, or NULL */
    const char *arch_dir; /* the archive directory it is in (the context's string), or NULL */
    const char *file; /* the file read: path, or archived when path is gone or changed */
} object_t;

typedef struct func {
    sym_func_t pub;
    char *own[3]; /* the strings this function owns (NULL or distinct pointers) */
} func_t;

typedef struct statkey {
    uint32_t obj;
    uint32_t func; /* UINT32_MAX: empty slot */
    uint64_t start;
} statkey_t;

struct sym_ctx {
    object_t **objs;
    size_t nobjs, objs_cap;
    func_t **fblocks; /* function id -> fblocks[id >> FBLOCK_BITS][id & (FBLOCK - 1)] */
    size_t nfuncs, nfblocks, fblocks_cap;
    statkey_t *stat; /* open addressing: (object, start of a made-up range) -> function */
    size_t stat_cap, nstat;
    uint32_t unknown; /* `<Unknown>`, UINT32_MAX until needed */
    uint32_t truncated; /* `<Truncated-stack>`, UINT32_MAX until needed */
    char **archives;  /* directories of archived binaries, named by build-id */
    size_t narchives;
};

static const char msg_nomem[] = "tally ran out of memory reading this object: its functions are "
                                "shown as one entry";

/* ---- names ---------------------------------------------------------------------------------- */

/* The demangled form of a C++ name (malloc'd), or NULL if it is not one (or no memory). */
static char *demangle(const char *mangled)
{
    if (strncmp(mangled, "_Z", 2))
        return NULL;
    int status = -1;
    char *dm = __cxa_demangle(mangled, NULL, NULL, &status);
    if (status != 0) {
        free(dm);
        return NULL;
    }
    return dm;
}

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Where the name proper starts in "RET name<args>" (a demangled template function has its return
 * type first): after the last space outside brackets and before any `operator`, else 0. */
static size_t skip_return_type(const char *s, size_t n)
{
    size_t sp = 0;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '<' || c == '(' || c == '[' || c == '{')
            depth++;
        else if (c == '>' || c == ')' || c == ']' || c == '}')
            depth--;
        else if (depth == 0 && c == ' ')
            sp = i + 1;
        else if (depth == 0 && c == 'o' && n - i >= 8 && !strncmp(s + i, "operator", 8) &&
                 (i == 0 || !is_ident(s[i - 1])) && (i + 8 == n || !is_ident(s[i + 8])))
            break; /* "operator<" etc.: its brackets are not brackets */
    }
    return sp;
}

/* The short name: the demangled name without its parameter list, trailing qualifiers and (for
 * template functions) return type; `[clone ...]` suffixes are kept. "void ns::f<int>(int) const
 * [clone .cold]" -> "ns::f<int> [clone .cold]". A name without a parameter list is returned whole.
 * malloc'd; NULL when out of memory. */
static char *short_name(const char *longname)
{
    size_t len = strlen(longname);
    /* set the clone suffixes aside: "f() [clone .isra.0] [clone .cold]" */
    size_t end = len;
    while (end > 0 && longname[end - 1] == ']') {
        const char *c = NULL;
        for (const char *p = longname; (p = strstr(p, " [clone ")) && p < longname + end; p++)
            c = p;
        if (!c)
            break;
        end = (size_t)(c - longname);
    }
    /* back over qualifiers (" const", " &&", " noexcept") to the parameter list's ')' */
    size_t p = end;
    while (p > 0 && longname[p - 1] != ')') {
        char c = longname[p - 1];
        if (!is_ident(c) && c != ' ' && c != '&')
            break;
        p--;
    }
    size_t base = end;
    if (p > 0 && longname[p - 1] == ')') {
        int depth = 0;
        size_t q = p;
        while (q > 0) {
            q--;
            if (longname[q] == ')')
                depth++;
            else if (longname[q] == '(' && --depth == 0)
                break;
        }
        if (depth == 0 && q > 0)
            base = q;
    }
    size_t start = 0;
    if (base < end && base > 0 && longname[base - 1] == '>')
        start = skip_return_type(longname, base);
    char *out = malloc(base - start + (len - end) + 1);
    if (!out)
        return NULL;
    memcpy(out, longname + start, base - start);
    memcpy(out + (base - start), longname + end, len - end);
    out[base - start + len - end] = 0;
    return out;
}

/* ---- ELF helpers ---------------------------------------------------------------------------- */

static void hex_id(const unsigned char *id, size_t n, char *buf)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t k = 0; k < n; k++) {
        buf[2 * k] = digits[id[k] >> 4];
        buf[2 * k + 1] = digits[id[k] & 15];
    }
    buf[2 * n] = 0;
}

/* Finds the GNU build-id note in note data d; writes it in hex to buf. */
static int note_buildid(Elf_Data *d, char *buf)
{
    size_t off = 0, name_off, desc_off;
    GElf_Nhdr nh;
    while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            !memcmp((char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz <= 64 &&
            nh.n_descsz > 0) {
            hex_id((const unsigned char *)d->d_buf + desc_off, nh.n_descsz, buf);
            return 1;
        }
    }
    return 0;
}

/* The build-id of an ELF image in lower-case hex, or "" (buf >= 129 bytes). */
static void elf_buildid(Elf *elf, char *buf)
{
    buf[0] = 0;
    size_t nph;
    if (elf_getphdrnum(elf, &nph) == 0) {
        for (size_t i = 0; i < nph; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE &&
                note_buildid(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
                                                  ELF_T_NHDR), buf))
                return;
        }
    }
    Elf_Scn *scn = NULL; /* debug files: the notes are sections (their segments are empty) */
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
            note_buildid(elf_getdata(scn, NULL), buf))
            return;
    }
}

/* Whether elf's byte order is this host's (the call-frame and debuglink readers need it). */
static int native_order(Elf *elf)
{
    const char *ident = elf_getident(elf, NULL);
    int le = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
    return ident && ident[EI_DATA] == (le ? ELFDATA2LSB : ELFDATA2MSB);
}

/* The section named name, with its header in *sh; NULL if none. */
static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx))
        return NULL;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        const char *nm;
        if (gelf_getshdr(scn, sh) && (nm = elf_strptr(elf, shstrndx, sh->sh_name)) &&
            !strcmp(nm, name))
            return scn;
    }
    return NULL;
}

/* ---- debug files ---------------------------------------------------------------------------- */

/* The CRC-32 that .gnu_debuglink records (the IEEE polynomial, as zlib's crc32). */
static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t table[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc ^ 0xffffffffu;
}

typedef struct debugfile {
    int fd;
    Elf *elf;
    char path[PATH_MAX];
} debugfile_t;

/* Opens a file of object o for reading. A file in the object's archive directory is opened as a
 * regular file inside it, no symbolic link followed (the archive comes with the experiment, so
 * it is not trusted to point anywhere); any other path as a regular file, links followed (a file
 * of this system), without ever blocking on a FIFO. Returns a descriptor or a negative errno
 * (fsafe.h: -ELOOP, -FS_ENOTREG, ...). */
static int open_file(const object_t *o, const char *path)
{
    size_t n = o && o->arch_dir ? strlen(o->arch_dir) : 0;
    if (n && !strncmp(path, o->arch_dir, n) && path[n] == '/') {
        int d = fs_open_dir(o->arch_dir);
        if (d < 0)
            return d;
        int fd = fs_open_read_at(d, path + n + 1, 0);
        close(d);
        return fd;
    }
    return fs_open_read(path, 0);
}

/* Opens path as the debug file of object o with build-id id (hex, or "" and then crc must
 * match) and file identity st; 0 on success. */
static int try_debugfile(debugfile_t *df, const object_t *o, const char *path, const char *id,
                         uint32_t crc, const struct stat *st)
{
    int fd = open_file(o, path);
    if (fd < 0)
        return -1;
    struct stat dst;
    if (fstat(fd, &dst) || !S_ISREG(dst.st_mode) ||
        (st && dst.st_dev == st->st_dev && dst.st_ino == st->st_ino)) {
        close(fd);
        return -1;
    }
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int ok = elf && elf_kind(elf) == ELF_K_ELF;
    if (ok && *id) {
        char did[129];
        elf_buildid(elf, did);
        ok = !strcmp(did, id);
    } else if (ok) {
        void *m = dst.st_size ? mmap(NULL, (size_t)dst.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                              : MAP_FAILED;
        ok = m != MAP_FAILED && crc32_of(m, (size_t)dst.st_size) == crc;
        if (m != MAP_FAILED)
            munmap(m, (size_t)dst.st_size);
    }
    if (!ok) {
        if (elf)
            elf_end(elf);
        close(fd);
        return -1;
    }
    df->fd = fd;
    df->elf = elf;
    snprintf(df->path, sizeof df->path, "%s", path);
    return 0;
}

/* Finds the separate debug file of the object at path (ELF elf, build-id id, file identity st;
 * path NULL for an image in memory): DEBUG_ROOT/.build-id/xx/rest.debug, then the
 * .gnu_debuglink name in the object's directory, its .debug/ subdirectory and
 * DEBUG_ROOT/<directory>/ (for the path as recorded and as resolved). A candidate must have the
 * object's build-id, or if the object has none, the CRC that .gnu_debuglink records. */
static int find_debugfile(debugfile_t *df, const object_t *o, const char *path, Elf *elf,
                          const char *id, const struct stat *st)
{
    char cand[PATH_MAX];
    const char *archived = o ? o->archived : NULL;
    if (strlen(id) >= 4 && fs_buildid_ok(id)) {
        snprintf(cand, sizeof cand, DEBUG_ROOT "/.build-id/%.2s/%s.debug", id, id + 2);
        if (!try_debugfile(df, o, cand, id, 0, st))
            return 0;
        /* archived beside the binary's copy: ARCHIVE/<build-id>.debug */
        if (archived && snprintf(cand, sizeof cand, "%s.debug", archived) < (int)sizeof cand &&
            !try_debugfile(df, o, cand, id, 0, st))
            return 0;
    }
    if (!path)
        return -1;
    GElf_Shdr sh;
    Elf_Scn *scn = find_section(elf, ".gnu_debuglink", &sh);
    Elf_Data *d = scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
    if (!d || d->d_size < 8)
        return -1;
    const char *link = d->d_buf;
    size_t nl = strnlen(link, d->d_size);
    size_t crc_off = (nl + 4) & ~(size_t)3;
    if (nl == 0 || nl >= d->d_size || crc_off + 4 > d->d_size || strchr(link, '/'))
        return -1;
    uint32_t crc;
    memcpy(&crc, (const char *)d->d_buf + crc_off, 4);
    if (!native_order(elf))
        crc = __builtin_bswap32(crc);
    char dirs[2][PATH_MAX];
    int ndirs = 0;
    const char *slash = strrchr(path, '/');
    snprintf(dirs[ndirs++], PATH_MAX, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    char real[PATH_MAX];
    if (realpath(path, real) && (slash = strrchr(real, '/'))) {
        snprintf(dirs[ndirs], PATH_MAX, "%.*s", (int)(slash - real), real);
        if (strcmp(dirs[ndirs], dirs[0]))
            ndirs++;
    }
    for (int i = 0; i < ndirs; i++) {
        static const char *const fmts[] = { "%s/%s", "%s/.debug/%s", DEBUG_ROOT "%s/%s" };
        for (int f = 0; f < 3; f++) {
            if (f == 2 && dirs[i][0] != '/')
                continue;
            if (snprintf(cand, sizeof cand, fmts[f], dirs[i], link) >= (int)sizeof cand)
                continue;
            if (!try_debugfile(df, o, cand, id, crc, st))
                return 0;
        }
    }
    return -1;
}

/* ---- symbol tables -------------------------------------------------------------------------- */

typedef struct rawsym {
    uint64_t addr, size;
    uint32_t name, len; /* name offset into the strings, length */
    int rank;           /* alias preference: lower wins (see cmp_rawsym) */
} rawsym_t;

typedef struct symtab_build {
    rawsym_t *syms;
    size_t n, cap;
    char *strs;
    size_t slen, scap;
    int nomem;
} symtab_build_t;

static int cmp_rawsym(const void *a, const void *b, void *strs)
{
    const rawsym_t *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    /* aliases at one address, the preferred first: global, then weak, then local; then fewer
     * leading underscores ("malloc" before "__libc_malloc"); then the shorter; then by bytes */
    if (x->rank != y->rank)
        return x->rank - y->rank;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return strcmp((const char *)strs + x->name, (const char *)strs + y->name);
}

/* Adds the first l bytes of nm as a symbol. */
static int add_rawsym_n(symtab_build_t *b, uint64_t addr, uint64_t size, const char *nm, size_t l,
                        int bind)
{
    if (!l)
        return 0;
    if (b->slen + l + 1 > b->scap) {
        size_t ncap = (b->scap ? b->scap * 2 : 65536) + l + 1;
        char *n = realloc(b->strs, ncap);
        if (!n)
            return -1;
        b->strs = n;
        b->scap = ncap;
    }
    if (b->n == b->cap || b->slen + l + 1 > UINT32_MAX) {
        size_t ncap = b->cap ? b->cap * 2 : 1024;
        rawsym_t *n = b->slen + l + 1 > UINT32_MAX ? NULL : realloc(b->syms, ncap * sizeof *n);
        if (!n)
            return -1;
        b->syms = n;
        b->cap = ncap;
    }
    memcpy(b->strs + b->slen, nm, l);
    b->strs[b->slen + l] = 0;
    size_t under = 0;
    while (under < l && nm[under] == '_')
        under++;
    int rank = (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2) * 64 + (int)(under > 63 ? 63 : under);
    b->syms[b->n++] = (rawsym_t){ addr, size, (uint32_t)b->slen, (uint32_t)l, rank };
    b->slen += l + 1;
    return 0;
}

static int add_rawsym(symtab_build_t *b, uint64_t addr, uint64_t size, const char *nm, int bind)
{
    return add_rawsym_n(b, addr, size, nm, strcspn(nm, "@"), bind); /* "memcpy@@GLIBC_2.14" */
}

/* Adds the function symbols (STT_FUNC, STT_GNU_IFUNC, defined, non-zero) of elf's symbol table of
 * type SHT_SYMTAB or SHT_DYNSYM; returns how many. */
static size_t read_symtab(symtab_build_t *b, Elf *elf, Elf64_Word type)
{
    GElf_Ehdr eh;
    int arm = gelf_getehdr(elf, &eh) && eh.e_machine == EM_ARM;
    size_t added = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn)) && !b->nomem) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d)
            continue;
        size_t count = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < count; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(d, (int)i, &sym))
                continue;
            int t = GELF_ST_TYPE(sym.st_info);
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
                sym.st_shndx == SHN_ABS || !sym.st_value)
                continue;
            const char *nm = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (!nm || !*nm)
                continue;
            uint64_t addr = arm ? sym.st_value & ~(uint64_t)1 : sym.st_value; /* Thumb bit */
            if (add_rawsym(b, addr, sym.st_size, nm, GELF_ST_BIND(sym.st_info))) {
                b->nomem = 1;
                break;
            }
            added++;
        }
    }
    return added;
}

/* ---- PLT stubs ------------------------------------------------------------------------------ */

typedef struct gotname {
    uint64_t slot;    /* address of a GOT slot */
    const char *name; /* the symbol a relocation resolves it to */
} gotname_t;

static int cmp_gotname(const void *a, const void *b)
{
    const gotname_t *x = a, *y = b;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The GOT slots that JUMP_SLOT and GLOB_DAT relocations name, sorted; *n of them (0: none). */
static gotname_t *got_names(Elf *elf, size_t *n)
{
    gotname_t *v = NULL;
    size_t cap = 0;
    *n = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh, symsh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
            continue;
        Elf_Scn *symscn = elf_getscn(elf, sh.sh_link);
        Elf_Data *d = elf_getdata(scn, NULL), *sd = symscn ? elf_getdata(symscn, NULL) : NULL;
        if (!d || !sd || !gelf_getshdr(symscn, &symsh))
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Rela r;
            GElf_Sym sym;
            const char *nm;
            if (!gelf_getrela(d, (int)i, &r) ||
                (GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT &&
                 GELF_R_TYPE(r.r_info) != R_X86_64_GLOB_DAT) ||
                !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym) ||
                !(nm = elf_strptr(elf, symsh.sh_link, sym.st_name)) || !*nm)
                continue;
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                gotname_t *nv = realloc(v, cap * sizeof *nv);
                if (!nv)
                    break;
                v = nv;
            }
            v[(*n)++] = (gotname_t){ r.r_offset, nm };
        }
    }
    if (v)
        qsort(v, *n, sizeof *v, cmp_gotname);
    return v;
}

/* Names the stubs of the procedure linkage table "func@plt", as objdump and perf do: a stub of
 * .plt, .plt.sec or .plt.got jumps through a GOT slot (jmp *disp(%rip)) that a relocation names.
 * x86-64 only; a stub without such a jump (the lazy half of an IBT .plt) stays unnamed. */
static void read_plt(symtab_build_t *b, Elf *elf)
{
    GElf_Ehdr eh;
    size_t shstrndx, ngot;
    if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx))
        return;
    gotname_t *got = got_names(elf, &ngot);
    Elf_Scn *scn = NULL;
    while (got && (scn = elf_nextscn(elf, scn)) && !b->nomem) {
        GElf_Shdr sh;
        const char *sn;
        Elf_Data *d;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
            !(sn = elf_strptr(elf, shstrndx, sh.sh_name)) || strncmp(sn, ".plt", 4) ||
            (sn[4] && strcmp(sn + 4, ".sec") && strcmp(sn + 4, ".got")) ||
            !(d = elf_getdata(scn, NULL)) || !d->d_buf)
            continue;
        size_t es = sh.sh_entsize >= 8 ? sh.sh_entsize : 16;
        for (size_t off = sn[4] ? 0 : es; off + es <= d->d_size; off += es) { /* .plt: after PLT0 */
            const unsigned char *p = (const unsigned char *)d->d_buf + off;
            for (size_t k = 0; k + 6 <= es; k++) {
                if (p[k] != 0xff || p[k + 1] != 0x25)
                    continue;
                int32_t disp;
                memcpy(&disp, p + k + 2, 4);
                gotname_t key = { sh.sh_addr + off + k + 6 + (uint64_t)(int64_t)disp, NULL };
                const gotname_t *g = bsearch(&key, got, ngot, sizeof *got, cmp_gotname);
                char nm[256];
                if (g && snprintf(nm, sizeof nm, "%s@plt", g->name) < (int)sizeof nm &&
                    add_rawsym_n(b, sh.sh_addr + off, es, nm, strlen(nm), STB_LOCAL))
                    b->nomem = 1;
                break;
            }
        }
    }
    free(got);
}

/* ---- call-frame ranges ---------------------------------------------------------------------- */

/* Reads every FDE's range [initial location, + range length) through .eh_frame_hdr's sorted
 * search table and the FDEs in .eh_frame. */
static int read_cfi(object_t *o, Elf *elf)
{
    GElf_Shdr hsh, esh;
    Elf_Scn *hscn = find_section(elf, ".eh_frame_hdr", &hsh);
    if (!hscn || hsh.sh_type == SHT_NOBITS)
        return 0;
    Elf_Data *hd = elf_getdata(hscn, NULL);
    if (!hd || hd->d_size < 12)
        return 0;
    const unsigned char *h = hd->d_buf;
    int ptrsize = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
    if (!native_order(elf))
        return 0;
    uint64_t ehf_ptr, count;
    long table_l = eh_hdr_parse(h, hd->d_size, hsh.sh_addr, ptrsize, &ehf_ptr, &count);
    if (table_l < 0)
        return 0;
    size_t table = (size_t)table_l;
    /* the section that holds the FDEs (normally .eh_frame) */
    Elf_Scn *escn = NULL;
    Elf_Data *ed = NULL;
    while ((escn = elf_nextscn(elf, escn))) {
        if (gelf_getshdr(escn, &esh) && esh.sh_type != SHT_NOBITS &&
            ehf_ptr >= esh.sh_addr && ehf_ptr < esh.sh_addr + esh.sh_size) {
            ed = elf_getdata(escn, NULL);
            break;
        }
    }
    if (!ed)
        return 0;
    o->fde_lo = malloc((size_t)count * sizeof *o->fde_lo);
    o->fde_hi = malloc((size_t)count * sizeof *o->fde_hi);
    if (!o->fde_lo || !o->fde_hi)
        return -1;
    const unsigned char *ehf = ed->d_buf;
    size_t esize = ed->d_size, n = 0;
    size_t cie_off = SIZE_MAX;
    int cie_ok = 0;
    eh_cie_t ci;
    for (uint64_t i = 0; i < count; i++) {
        int32_t loc, fde;
        memcpy(&loc, h + table + (size_t)i * 8, 4);
        memcpy(&fde, h + table + (size_t)i * 8 + 4, 4);
        uint64_t start = hsh.sh_addr + (uint64_t)(int64_t)loc;
        uint64_t foff = hsh.sh_addr + (uint64_t)(int64_t)fde - esh.sh_addr;
        const unsigned char *q, *fend;
        uint32_t back;
        if (foff >= esize || eh_fde_head(ehf + foff, esize - foff, &back, &q, &fend) ||
            back > foff + 4)
            continue;
        size_t coff = foff + 4 - back;
        if (coff != cie_off) { /* consecutive FDEs nearly always share their CIE */
            cie_off = coff;
            cie_ok = eh_cie_parse(ehf + coff, esize - coff, ptrsize, &ci) == 0;
        }
        if (!cie_ok)
            continue;
        uint64_t pc_begin, pc_range;
        if (eh_fde_range(&q, fend, &ci, ptrsize, esh.sh_addr + (uint64_t)(q - ehf), &pc_begin,
                         &pc_range) ||
            (int64_t)pc_range <= 0)
            continue;
        if (n && start < o->fde_hi[n - 1]) { /* the table is sorted: a broken one is not used */
            n = 0;
            break;
        }
        o->fde_lo[n] = start;
        o->fde_hi[n] = start + pc_range;
        n++;
    }
    o->nfde = n;
    return 0;
}

/* ---- reading an object ---------------------------------------------------------------------- */

static void set_message(object_t *o, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_message(object_t *o, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(o->message);
    if (vasprintf(&o->message, fmt, ap) < 0)
        o->message = NULL;
    va_end(ap);
    o->pub.status = status;
    o->pub.message = o->message ? o->message : msg_nomem;
}

/* A copy of this process's vDSO image (the running kernel's; NULL if there is none). */
static void *vdso_image(size_t *size)
{
    const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!base || memcmp(base, ELFMAG, SELFMAG))
        return NULL;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    size_t end = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > end)
            end = ph[i].p_offset + ph[i].p_filesz;
    if (end > (1u << 20))
        return NULL;
    void *copy = malloc(end);
    if (copy)
        memcpy(copy, base, end);
    *size = end;
    return copy;
}

typedef struct range {
    uint64_t lo, hi;
} range_t;

/* The end of the executable section that holds addr, or UINT64_MAX. */
static uint64_t section_end(const range_t *secs, size_t nsecs, uint64_t addr)
{
    for (size_t i = 0; i < nsecs; i++)
        if (addr >= secs[i].lo && addr < secs[i].hi)
            return secs[i].hi;
    return UINT64_MAX;
}

/* Index of the last element of sorted v[0..n) that is <= x, or n when there is none. */
static size_t last_le(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : n;
}

/* Sorts the raw symbols and keeps one per address (the preferred alias, the largest size);
 * returns how many. */
static size_t sort_unique(symtab_build_t *b)
{
    if (b->n) /* b->syms is NULL when there are none */
        qsort_r(b->syms, b->n, sizeof *b->syms, cmp_rawsym, b->strs);
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (k && b->syms[k - 1].addr == b->syms[i].addr) {
            if (b->syms[i].size > b->syms[k - 1].size)
                b->syms[k - 1].size = b->syms[i].size;
            continue;
        }
        b->syms[k++] = b->syms[i];
    }
    return b->n = k;
}

/* Sorts the raw function symbols, keeps one per address and gives zero-sized ones a size: up to
 * the next symbol or call-frame range start, within their section (or their FDE's length when one
 * starts there). Moves the result into o. */
static int finish_table(object_t *o, symtab_build_t *b, const range_t *secs, size_t nsecs)
{
    size_t k = sort_unique(b);
    o->addrs = malloc((k ? k : 1) * sizeof *o->addrs);
    o->syms = malloc((k ? k : 1) * sizeof *o->syms);
    if (!o->addrs || !o->syms)
        return -1;
    for (size_t i = 0; i < k; i++) {
        rawsym_t *r = &b->syms[i];
        uint64_t size = r->size;
        if (!size) {
            size_t f = last_le(o->fde_lo, o->nfde, r->addr);
            if (f < o->nfde && o->fde_lo[f] == r->addr) {
                size = o->fde_hi[f] - r->addr;
            } else {
                uint64_t end = i + 1 < k ? b->syms[i + 1].addr : UINT64_MAX;
                size_t nf = f < o->nfde ? f + 1 : 0;
                if (nf < o->nfde && o->fde_lo[nf] < end)
                    end = o->fde_lo[nf];
                uint64_t se = section_end(secs, nsecs, r->addr);
                if (se < end)
                    end = se;
                size = end != UINT64_MAX ? end - r->addr : 0;
            }
        }
        o->addrs[i] = r->addr;
        o->syms[i] = (fsym_t){ size, r->name, UINT32_MAX };
    }
    o->nsyms = k;
    o->strings = b->strs;
    b->strs = NULL;
    return 0;
}

/* Reads the object: its ELF image, build-id check, symbol tables, call-frame ranges. Sets status
 * and message; never fails (an object it cannot read is `unreadable`). */
static void load_object(object_t *o)
{
    o->loaded = 1;
    o->pub.status = SYM_OBJ_OK;
    int vdso = !strcmp(o->path, "[vdso]");
    Elf *elf = NULL;
    int fd = -1;
    struct stat st;
    if (vdso) {
        size_t size = 0;
        o->image = vdso_image(&size);
        if (o->image)
            elf = elf_memory(o->image, size);
        if (!elf) {
            o->unreadable = 1;
            set_message(o, SYM_OBJ_UNREADABLE, "this process has no vDSO to read (the system's "
                        "or a tool's choice): its functions are shown as one entry, "
                        "'<unknown> (%s)'", o->name);
            return;
        }
    } else {
        o->file = o->path;
        fd = open_file(o, o->path);
        if (o->archived) { /* use the archived copy when the file is gone or is another build */
            char id0[129] = "";
            Elf *e0 = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
            if (e0 && elf_kind(e0) == ELF_K_ELF)
                elf_buildid(e0, id0);
            if (e0)
                elf_end(e0);
            if (strcmp(id0, o->buildid)) {
                int afd = open_file(o, o->archived);
                if (afd >= 0) {
                    if (fd >= 0)
                        close(fd);
                    fd = afd;
                    o->file = o->archived;
                    set_message(o, SYM_OBJ_OK, "'%s' %s since it was profiled: the copy "
                                "archived in the experiment is used", o->path,
                                *id0 ? "has changed" : "is gone");
                }
            }
        }
        if (fd < 0 || fstat(fd, &st)) {
            int e = fd < 0 ? -fd : errno;
            o->unreadable = 1;
            if (e == ENOENT || e == ENOTDIR)
                set_message(o, SYM_OBJ_MISSING, "'%s' no longer exists: its functions are "
                            "shown as one entry, '<unknown> (%s)'; analyse where it was profiled, "
                            "or put the file back", o->path, o->name);
            else
                set_message(o, SYM_OBJ_UNREADABLE, "'%s' cannot be read (%s): its functions "
                            "are shown as one entry, '<unknown> (%s)'", o->path, fs_strerror(-e),
                            o->name);
            if (fd >= 0)
                close(fd);
            return;
        }
        elf = S_ISREG(st.st_mode) ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
        if (!elf || elf_kind(elf) != ELF_K_ELF || !elf_getident(elf, NULL)) {
            o->unreadable = 1;
            set_message(o, SYM_OBJ_UNREADABLE, "'%s' is not an ELF file: its functions are "
                        "shown as one entry, '<unknown> (%s)'", o->path, o->name);
            if (elf)
                elf_end(elf);
            close(fd);
            return;
        }
    }
    char id[129];
    elf_buildid(elf, id);
    if (*o->buildid && strcmp(id, o->buildid)) {
        if (vdso)
            set_message(o, SYM_OBJ_CHANGED, "the vDSO of this kernel is not the one profiled "
                        "(build-id %.12s... recorded, %.12s%s here): its function names may be "
                        "wrong; analyse on the system where it was profiled", o->buildid,
                        *id ? id : "none", *id ? "..." : "");
        else
            set_message(o, SYM_OBJ_CHANGED, "'%s' has changed since it was profiled (build-id "
                        "%.12s... recorded, %.12s%s on disk): its function names may be wrong; "
                        "re-run the collection or supply the original binary", o->path,
                        o->buildid, *id ? id : "none", *id ? "..." : "");
    }
    symtab_build_t b = { 0 };
    debugfile_t df = { .fd = -1 };
    if (!find_debugfile(&df, o, vdso ? NULL : o->file, elf, id, vdso ? NULL : &st)) {
        o->debugfile = strdup(df.path);
        o->pub.debugfile = o->debugfile ? o->debugfile : "";
        read_symtab(&b, df.elf, SHT_SYMTAB);
    }
    if (!b.n)
        read_symtab(&b, elf, SHT_SYMTAB);
    if (!b.n)
        read_symtab(&b, elf, SHT_DYNSYM);
    size_t nreal = b.n;
    if (!vdso)
        read_plt(&b, elf);
    /* executable sections, to bound zero-sized symbols */
    range_t secs[32];
    size_t nsecs = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn)) && nsecs < 32) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && (sh.sh_flags & SHF_ALLOC))
            secs[nsecs++] = (range_t){ sh.sh_addr, sh.sh_addr + sh.sh_size };
    }
    int bad = b.nomem || read_cfi(o, elf) || finish_table(o, &b, secs, nsecs);
    free(b.syms);
    free(b.strs);
    if (df.elf)
        elf_end(df.elf);
    if (df.fd >= 0)
        close(df.fd);
    elf_end(elf);
    if (fd >= 0)
        close(fd);
    if (bad) {
        o->unreadable = 1;
        o->pub.status = SYM_OBJ_UNREADABLE;
        free(o->message);
        o->message = NULL;
        o->pub.message = msg_nomem;
        return;
    }
    if (!nreal && o->pub.status == SYM_OBJ_OK)
        set_message(o, SYM_OBJ_NOSYMS, "'%s' has no symbol table: its code is shown as "
                    "address ranges, '<static>@0x... (%s)'", o->path, o->name);
}

/* ---- functions ------------------------------------------------------------------------------ */

static func_t *func_slot(const sym_ctx_t *s, uint32_t id)
{
    return &s->fblocks[id >> FBLOCK_BITS][id & (FBLOCK - 1)];
}

/* A new function id, or UINT32_MAX when out of memory. One slot is always kept free for
 * `<Unknown>` (reserve = 0 takes it), so the fallback of every failure can be made. The function
 * takes the strings in own[] (freed by sym_free, also on failure). */
static uint32_t new_func(sym_ctx_t *s, int reserve, uint32_t obj, uint64_t addr, uint64_t size,
                         const char *name, const char *long_name, const char *mangled,
                         char *own0, char *own1)
{
    if (s->nfuncs + (size_t)reserve >= s->nfblocks * FBLOCK) {
        func_t *blk = s->nfuncs < UINT32_MAX - FBLOCK ? malloc(FBLOCK * sizeof *blk) : NULL;
        if (blk && s->nfblocks == s->fblocks_cap) {
            size_t ncap = s->fblocks_cap * 2;
            func_t **nb = realloc(s->fblocks, ncap * sizeof *nb);
            if (nb) {
                s->fblocks = nb;
                s->fblocks_cap = ncap;
            } else {
                free(blk);
                blk = NULL;
            }
        }
        if (!blk) {
            free(own0);
            free(own1);
            return UINT32_MAX;
        }
        s->fblocks[s->nfblocks++] = blk;
    }
    uint32_t id = (uint32_t)s->nfuncs++;
    func_t *f = func_slot(s, id);
    f->pub = (sym_func_t){ name, long_name, mangled, obj, addr, size };
    f->own[0] = own0;
    f->own[1] = own1;
    f->own[2] = NULL;
    return id;
}

uint32_t sym_func_unknown(sym_ctx_t *s)
{
    if (s->unknown == UINT32_MAX)
        s->unknown = new_func(s, 0, UINT32_MAX, 0, 0, "<Unknown>", "<Unknown>", "<Unknown>",
                              NULL, NULL);
    return s->unknown;
}

uint32_t sym_func_truncated(sym_ctx_t *s)
{
    if (s->truncated == UINT32_MAX)
        s->truncated = new_func(s, 0, UINT32_MAX, 0, 0, "<Truncated-stack>",
                                "<Truncated-stack>", "<Truncated-stack>", NULL, NULL);
    return s->truncated == UINT32_MAX ? sym_func_unknown(s) : s->truncated;
}

/* A function with a made-up name (printf-style), or `<Unknown>` when out of memory. */
static uint32_t made_up_func(sym_ctx_t *s, uint32_t obj, uint64_t addr, uint64_t size,
                             const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static uint32_t made_up_func(sym_ctx_t *s, uint32_t obj, uint64_t addr, uint64_t size,
                             const char *fmt, ...)
{
    char *name;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&name, fmt, ap);
    va_end(ap);
    uint32_t f = r < 0 ? UINT32_MAX : new_func(s, 1, obj, addr, size, name, name, name, name, NULL);
    return f == UINT32_MAX ? sym_func_unknown(s) : f;
}

/* The function of symbol i of object obj, made on first use. */
static uint32_t symbol_func(sym_ctx_t *s, uint32_t obj, size_t i)
{
    object_t *o = s->objs[obj];
    fsym_t *sym = &o->syms[i];
    if (sym->func != UINT32_MAX)
        return sym->func;
    const char *mangled = o->strings + sym->name;
    char *dm = demangle(mangled);
    char *sh = dm ? short_name(dm) : NULL;
    const char *long_name = dm ? dm : mangled;
    uint32_t f = new_func(s, 1, obj, o->addrs[i], sym->size, sh ? sh : long_name, long_name,
                          mangled, dm, sh);
    if (f == UINT32_MAX)
        return sym_func_unknown(s); /* not remembered: a later lookup may do better */
    sym->func = f;
    return f;
}

/* The function of the made-up range [start, end) of object obj: one per (obj, start). */
static uint32_t static_func(sym_ctx_t *s, uint32_t obj, uint64_t start, uint64_t end)
{
    if ((s->nstat + 1) * 2 > s->stat_cap) {
        size_t ncap = s->stat_cap ? s->stat_cap * 2 : 256;
        statkey_t *nt = malloc(ncap * sizeof *nt);
        if (!nt)
            return sym_func_unknown(s);
        for (size_t i = 0; i < ncap; i++)
            nt[i].func = UINT32_MAX;
        for (size_t i = 0; i < s->stat_cap; i++) {
            if (s->stat[i].func == UINT32_MAX)
                continue;
            size_t j = (s->stat[i].start * 0x9e3779b97f4a7c15ULL ^ s->stat[i].obj) & (ncap - 1);
            while (nt[j].func != UINT32_MAX)
                j = (j + 1) & (ncap - 1);
            nt[j] = s->stat[i];
        }
        free(s->stat);
        s->stat = nt;
        s->stat_cap = ncap;
    }
    size_t j = (start * 0x9e3779b97f4a7c15ULL ^ obj) & (s->stat_cap - 1);
    while (s->stat[j].func != UINT32_MAX) {
        if (s->stat[j].obj == obj && s->stat[j].start == start)
            return s->stat[j].func;
        j = (j + 1) & (s->stat_cap - 1);
    }
    uint32_t f = made_up_func(s, obj, start, end != UINT64_MAX ? end - start : 0,
                              "<static>@0x%llx (%s)", (unsigned long long)start,
                              s->objs[obj]->name);
    if (f != s->unknown) {
        s->stat[j] = (statkey_t){ obj, f, start };
        s->nstat++;
    }
    return f;
}

uint32_t sym_func_at(sym_ctx_t *s, uint32_t obj, uint64_t addr)
{
    if (obj >= s->nobjs)
        return sym_func_unknown(s);
    object_t *o = s->objs[obj];
    if (!o->loaded)
        load_object(o);
    if (o->unreadable) {
        if (o->unknown_func == UINT32_MAX) {
            uint32_t f = made_up_func(s, obj, 0, 0, "<unknown> (%s)", o->name);
            if (f == s->unknown)
                return f;
            o->unknown_func = f;
        }
        return o->unknown_func;
    }
    /* the last symbol starting at or before addr, or one that encloses it just before */
    size_t i = last_le(o->addrs, o->nsyms, addr);
    if (i < o->nsyms) {
        if (addr - o->addrs[i] < (o->syms[i].size ? o->syms[i].size : 1))
            return symbol_func(s, obj, i);
        for (size_t j = i, k = 0; j-- > 0 && k < 4; k++) /* a symbol nested in a bigger one */
            if (addr - o->addrs[j] < o->syms[j].size)
                return symbol_func(s, obj, j);
    }
    /* no symbol covers addr: the call-frame range that holds it, else the gap between the
     * neighbouring symbols and call-frame ranges */
    uint64_t start = i < o->nsyms ? o->addrs[i] + (o->syms[i].size ? o->syms[i].size : 1) : 0;
    uint64_t end = i < o->nsyms ? (i + 1 < o->nsyms ? o->addrs[i + 1] : UINT64_MAX)
                                : (o->nsyms ? o->addrs[0] : UINT64_MAX);
    size_t f = last_le(o->fde_lo, o->nfde, addr);
    if (f < o->nfde && addr < o->fde_hi[f]) {
        if (o->fde_lo[f] > start)
            start = o->fde_lo[f];
        if (o->fde_hi[f] < end)
            end = o->fde_hi[f];
    } else {
        if (f < o->nfde && o->fde_hi[f] > start)
            start = o->fde_hi[f];
        size_t nf = f < o->nfde ? f + 1 : 0;
        if (nf < o->nfde && o->fde_lo[nf] < end)
            end = o->fde_lo[nf];
    }
    return static_func(s, obj, start, end);
}

size_t sym_nfuncs(const sym_ctx_t *s) { return s->nfuncs; }

const sym_func_t *sym_func(const sym_ctx_t *s, uint32_t id)
{
    return &func_slot(s, id)->pub;
}

/* ---- lines ---------------------------------------------------------------------------------- */

static int cmp_cu(const void *a, const void *b)
{
    const cu_range_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The address ranges of every compilation unit of dw, sorted (so a lookup needs no
 * .debug_aranges, which not every compiler writes). */
static int read_cu_ranges(object_t *o, Dwarf *dw)
{
    size_t cap = 0;
    Dwarf_CU *cu = NULL;
    Dwarf_Half version;
    uint8_t unit_type;
    Dwarf_Die cudie, subdie;
    while (dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, &subdie) == 0) {
        if (unit_type == DW_UT_type || unit_type == DW_UT_split_type)
            continue;
        ptrdiff_t off = 0;
        Dwarf_Addr base, lo, hi;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
            if (lo == 0 || hi <= lo || lo == (Dwarf_Addr)-1) /* discarded code */
                continue;
            if (o->ncus == cap) {
                cap = cap ? cap * 2 : 64;
                cu_range_t *n = realloc(o->cus, cap * sizeof *n);
                if (!n)
                    return -1;
                o->cus = n;
            }
            o->cus[o->ncus++] = (cu_range_t){ lo, hi, cudie };
        }
    }
    if (o->ncus)
        qsort(o->cus, o->ncus, sizeof *o->cus, cmp_cu);
    return 0;
}

/* Opens the DWARF of the object: its separate debug file, else the file itself. */
static void open_dwarf(object_t *o)
{
    o->dwarf_tried = 1;
    const char *candidates[2] = { o->debugfile,
                                  strcmp(o->path, "[vdso]") ? (o->file ? o->file : o->path) : NULL };
    for (int i = 0; i < 2 && !o->dw; i++) {
        if (!candidates[i])
            continue;
        int fd = open_file(o, candidates[i]);
        if (fd < 0)
            continue;
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        Dwarf *dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
        if (dw && !read_cu_ranges(o, dw) && o->ncus) {
            o->dw = dw;
            o->dw_elf = elf;
            o->dw_fd = fd;
            return;
        }
        free(o->cus);
        o->cus = NULL;
        o->ncus = 0;
        if (dw)
            dwarf_end(dw);
        if (elf)
            elf_end(elf);
        close(fd);
    }
}

/* The compilation unit of object obj that holds addr, or NULL (no DWARF); reads the object and
 * its DWARF on first use. */
static Dwarf_Die *cu_at(sym_ctx_t *s, uint32_t obj, uint64_t addr)
{
    if (obj >= s->nobjs)
        return NULL;
    object_t *o = s->objs[obj];
    if (!o->loaded)
        load_object(o);
    if (o->unreadable)
        return NULL;
    if (!o->dwarf_tried)
        open_dwarf(o);
    if (!o->dw)
        return NULL;
    size_t lo = 0, hi = o->ncus;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->cus[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++) /* ranges rarely overlap: look back a bit */
        if (addr < o->cus[i].hi)
            return &o->cus[i].cu;
    return NULL;
}

void *sym_dwarf_cu(sym_ctx_t *s, uint32_t obj, uint64_t addr)
{
    return cu_at(s, obj, addr);
}

struct Dwarf *sym_dwarf(sym_ctx_t *s, uint32_t obj, struct Elf **elf)
{
    if (obj >= s->nobjs)
        return NULL;
    object_t *o = s->objs[obj];
    if (!o->loaded)
        load_object(o);
    if (o->unreadable)
        return NULL;
    if (!o->dwarf_tried)
        open_dwarf(o);
    if (elf)
        *elf = o->dw ? o->dw_elf : NULL;
    return o->dw;
}

int sym_line_at(sym_ctx_t *s, uint32_t obj, uint64_t addr, const char **file, uint32_t *line)
{
    Dwarf_Die *cu = cu_at(s, obj, addr);
    Dwarf_Line *l = cu ? dwarf_getsrc_die(cu, addr) : NULL;
    int ln;
    const char *f = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
    if (!f || dwarf_lineno(l, &ln) || ln < 0)
        return -1;
    *file = f;
    *line = (uint32_t)ln;
    return ln == 0; /* line 0: code the compiler made that no source line stands for */
}

/* ---- the context ---------------------------------------------------------------------------- */

sym_ctx_t *sym_new(void)
{
    elf_version(EV_CURRENT);
    sym_ctx_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->unknown = UINT32_MAX;
    s->truncated = UINT32_MAX;
    s->fblocks_cap = 8;
    s->fblocks = malloc(s->fblocks_cap * sizeof *s->fblocks);
    func_t *blk = malloc(FBLOCK * sizeof *blk);
    if (!s->fblocks || !blk) {
        free(s->fblocks);
        free(blk);
        free(s);
        return NULL;
    }
    s->fblocks[s->nfblocks++] = blk;
    return s;
}

uint32_t sym_object_add(sym_ctx_t *s, const char *path, const char *buildid)
{
    if (!buildid)
        buildid = "";
    for (size_t i = 0; i < s->nobjs; i++)
        if (!strcmp(s->objs[i]->path, path) && !strcmp(s->objs[i]->buildid, buildid))
            return (uint32_t)i;
    if (s->nobjs >= UINT32_MAX - 1)
        return UINT32_MAX;
    if (s->nobjs == s->objs_cap) {
        size_t ncap = s->objs_cap ? s->objs_cap * 2 : 16;
        object_t **n = realloc(s->objs, ncap * sizeof *n);
        if (!n)
            return UINT32_MAX;
        s->objs = n;
        s->objs_cap = ncap;
    }
    object_t *o = calloc(1, sizeof *o);
    const char *b = strrchr(path, '/');
    if (o) {
        o->path = strdup(path);
        o->name = strdup(b ? b + 1 : path);
        o->buildid = strdup(buildid);
    }
    if (!o || !o->path || !o->name || !o->buildid) {
        if (o) {
            free(o->path);
            free(o->name);
            free(o->buildid);
        }
        free(o);
        return UINT32_MAX;
    }
    o->unknown_func = UINT32_MAX;
    o->whole_func = UINT32_MAX;
    o->dw_fd = -1;
    o->pub = (sym_object_t){ o->path, o->name, o->buildid, SYM_OBJ_UNREAD, "", "" };
    /* a build-id names the archived copy: only a real one (hex digits) is used as a name */
    for (size_t i = 0; i < s->narchives && fs_buildid_ok(buildid) && !o->archived; i++) {
        char ap[PATH_MAX];
        snprintf(ap, sizeof ap, "%s/%s", s->archives[i], buildid);
        o->arch_dir = s->archives[i];
        int fd = open_file(o, ap);
        if (fd >= 0) {
            close(fd);
            o->archived = strdup(ap);
        } else {
            o->arch_dir = NULL;
        }
    }
    s->objs[s->nobjs] = o;
    return (uint32_t)s->nobjs++;
}

size_t sym_nobjects(const sym_ctx_t *s) { return s->nobjs; }

int sym_object_read(const sym_ctx_t *s, uint32_t obj)
{
    return obj < s->nobjs && s->objs[obj]->loaded;
}

const sym_object_t *sym_object(sym_ctx_t *s, uint32_t obj)
{
    object_t *o = s->objs[obj];
    if (!o->loaded)
        load_object(o);
    return &o->pub;
}

void sym_free(sym_ctx_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nobjs; i++) {
        object_t *o = s->objs[i];
        free(o->path);
        free(o->name);
        free(o->buildid);
        free(o->message);
        free(o->debugfile);
        free(o->addrs);
        free(o->syms);
        free(o->strings);
        free(o->fde_lo);
        free(o->fde_hi);
        free(o->cus);
        if (o->dw)
            dwarf_end(o->dw);
        if (o->dw_elf)
            elf_end(o->dw_elf);
        if (o->dw_fd >= 0)
            close(o->dw_fd);
        free(o->image);
        free(o->archived);
        for (size_t k = 0; k < o->ninl; k++)
            free(o->inl_names[k]);
        free(o->inl_names);
        free(o->inl_funcs);
        free(o->by_name);
        for (size_t k = 0; k < o->ncuinl; k++) {
            free(o->cuinl[k].r);
            free(o->cuinl[k].maxhi);
        }
        free(o->cuinl);
        free(o);
    }
    for (size_t i = 0; i < s->narchives; i++)
        free(s->archives[i]);
    free(s->archives);
    for (size_t id = 0; id < s->nfuncs; id++) {
        func_t *f = func_slot(s, (uint32_t)id);
        for (int k = 0; k < 3; k++)
            free(f->own[k]);
    }
    for (size_t b = 0; b < s->nfblocks; b++)
        free(s->fblocks[b]);
    free(s->objs);
    free(s->fblocks);
    free(s->stat);
    free(s);
}

/* ---- code bytes ------------------------------------------------------------------------------ */

/* Copies from an ELF image's loadable segments. */
static long read_segments(Elf *elf, uint64_t addr, void *buf, size_t len)
{
    size_t nph;
    if (elf_getphdrnum(elf, &nph))
        return -1;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || addr < ph.p_vaddr ||
            addr >= ph.p_vaddr + ph.p_filesz)
            continue;
        size_t avail = (size_t)(ph.p_vaddr + ph.p_filesz - addr);
        if (len > avail)
            len = avail;
        Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)(ph.p_offset + (addr - ph.p_vaddr)), len,
                                           ELF_T_BYTE);
        if (!d || !d->d_buf)
            return -1;
        memcpy(buf, d->d_buf, len);
        return (long)len;
    }
    return -1;
}

long sym_read_code(sym_ctx_t *s, uint32_t obj, uint64_t addr, void *buf, size_t len)
{
    if (obj >= s->nobjs)
        return -1;
    object_t *o = s->objs[obj];
    if (!strcmp(o->path, "[vdso]")) {
        size_t size;
        void *img = vdso_image(&size);
        Elf *elf = img ? elf_memory(img, size) : NULL;
        long n = elf ? read_segments(elf, addr, buf, len) : -1;
        if (elf)
            elf_end(elf);
        free(img);
        return n;
    }
    if (!o->loaded)
        sym_object(s, obj); /* decides which file holds the code */
    int fd = open_file(o, o->file ? o->file : o->path);
    if (fd < 0)
        return -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    long n = elf && elf_kind(elf) == ELF_K_ELF ? read_segments(elf, addr, buf, len) : -1;
    if (elf)
        elf_end(elf);
    close(fd);
    return n;
}

/* The address (object-relative) of the function the dynamic linker would bind `name` to in elf:
 * a defined function of .dynsym with that name, its default version first (a hidden version,
 * versym bit 15, only when there is no other). */
static int dynsym_lookup(Elf *elf, const char *name, uint64_t *addr)
{
    GElf_Shdr sh;
    Elf_Scn *scn = NULL, *vscn = NULL;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        if (!gelf_getshdr(scn, &sh))
            return -1;
        if (sh.sh_type == SHT_GNU_versym)
            vscn = scn;
    }
    scn = NULL;
    int found = 0;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        Elf_Data *vd = vscn ? elf_getdata(vscn, NULL) : NULL;
        size_t n = d ? d->d_size / sh.sh_entsize : 0;
        for (size_t i = 0; i < n; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
                (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
                 GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
                continue;
            const char *nm = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (!nm || strcmp(nm, name) != 0)
                continue;
            GElf_Versym v = 0;
            int hidden = vd && gelf_getversym(vd, (int)i, &v) && (v & 0x8000);
            if (!found || !hidden) {
                *addr = sym.st_value;
                found = hidden ? 1 : 2;
            }
            if (found == 2)
                return 0;
        }
    }
    return found ? 0 : -1;
}

int sym_dynsym_addr(sym_ctx_t *s, uint32_t obj, const char *name, uint64_t *addr)
{
    if (obj >= s->nobjs)
        return -1;
    object_t *o = s->objs[obj];
    if (!strcmp(o->path, "[vdso]"))
        return -1;
    if (!o->loaded)
        sym_object(s, obj); /* decides which file holds the code */
    int fd = open_file(o, o->file ? o->file : o->path);
    if (fd < 0)
        return -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int rc = elf && elf_kind(elf) == ELF_K_ELF ? dynsym_lookup(elf, name, addr) : -1;
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

int sym_func_call_name(sym_ctx_t *s, uint32_t id, const char *name)
{
    if (id >= s->nfuncs)
        return -1;
    func_t *f = func_slot(s, id);
    if (f->own[2] || !strcmp(f->pub.mangled, name))
        return 0; /* named already: the first name the program called it by stays */
    char *n = strdup(name);
    if (!n)
        return TALLY_ENOMEM;
    f->own[2] = n;
    f->pub.name = f->pub.long_name = f->pub.mangled = n;
    return 0;
}

int sym_fd_buildid(int fd, char out[129])
{
    out[0] = 0;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int ok = elf && elf_kind(elf) == ELF_K_ELF;
    if (ok)
        elf_buildid(elf, out);
    if (elf)
        elf_end(elf);
    return ok ? 0 : -1;
}

int sym_add_archive(sym_ctx_t *s, const char *dir)
{
    char **n = realloc(s->archives, (s->narchives + 1) * sizeof *n);
    if (!n)
        return -1;
    s->archives = n;
    if (!(s->archives[s->narchives] = strdup(dir)))
        return -1;
    s->narchives++;
    return 0;
}

uint32_t sym_func_whole(sym_ctx_t *s, uint32_t obj)
{
    if (obj >= s->nobjs)
        return sym_func_unknown(s);
    object_t *o = s->objs[obj];
    if (o->whole_func == UINT32_MAX)
        o->whole_func = made_up_func(s, obj, 0, 0, "<%s>", o->name);
    return o->whole_func;
}

/* ---- inlined functions ----------------------------------------------------------------------- */

/* Symbol indices by name (qsort_r's context: the object). */
static int cmp_sym_name(const void *a, const void *b, void *ctx)
{
    const object_t *o = ctx;
    return strcmp(o->strings + o->syms[*(const uint32_t *)a].name,
                  o->strings + o->syms[*(const uint32_t *)b].name);
}

/* The symbol of object o named exactly name, when there is exactly one such function (aliases at
 * one address count as one); -1 when there is none, several (static functions of one name in
 * several units) or no memory. */
static long symbol_named(object_t *o, const char *name)
{
    if (!o->by_name_tried) {
        o->by_name_tried = 1;
        if (o->nsyms && o->nsyms < UINT32_MAX && (o->by_name = malloc(o->nsyms * sizeof *o->by_name))) {
            for (size_t i = 0; i < o->nsyms; i++)
                o->by_name[i] = (uint32_t)i;
            qsort_r(o->by_name, o->nsyms, sizeof *o->by_name, cmp_sym_name, o);
        }
    }
    if (!o->by_name)
        return -1;
    size_t lo = 0, hi = o->nsyms;
    while (lo < hi) { /* the first not below name */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(o->strings + o->syms[o->by_name[mid]].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    long found = -1;
    for (size_t k = lo; k < o->nsyms && !strcmp(o->strings + o->syms[o->by_name[k]].name, name);
         k++) {
        uint32_t i = o->by_name[k];
        if (found >= 0 && o->addrs[found] != o->addrs[i])
            return -1;
        found = i;
    }
    return found;
}

/* The function of inlined function name (linkage name link, or NULL) in object obj, one per
 * function and object: its out-of-line copy's when the object has one of that exact (linkage)
 * name, so the copies of a function are one function in every view; else one made up for it. */
static uint32_t inline_func(sym_ctx_t *s, uint32_t obj, const char *name, const char *link)
{
    object_t *o = s->objs[obj];
    const char *key = link ? link : name;
    for (size_t i = 0; i < o->ninl; i++)
        if (!strcmp(o->inl_names[i], key))
            return o->inl_funcs[i];
    char **nn = realloc(o->inl_names, (o->ninl + 1) * sizeof *nn);
    if (nn)
        o->inl_names = nn;
    uint32_t *nf = realloc(o->inl_funcs, (o->ninl + 1) * sizeof *nf);
    if (nf)
        o->inl_funcs = nf;
    if (!nn || !nf || !(o->inl_names[o->ninl] = strdup(key)))
        return UINT32_MAX;
    long sym = symbol_named(o, key);
    uint32_t f = sym >= 0 ? symbol_func(s, obj, (size_t)sym) : made_up_func(s, obj, 0, 0, "%s", name);
    o->inl_funcs[o->ninl++] = f;
    return f;
}

typedef struct inl_build {
    inl_range_t *r;
    size_t n, cap;
    Dwarf_Files *files;
    size_t nfiles;
    int nomem;
} inl_build_t;

/* Adds the inlined subroutines below die (depth first) to b. */
static void walk_inlines(Dwarf_Die *die, inl_build_t *b, uint32_t depth)
{
    Dwarf_Die child;
    if (depth > 256 || dwarf_child(die, &child))
        return;
    do {
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_inlined_subroutine) {
            Dwarf_Attribute a;
            Dwarf_Word fno = 0, lno = 0;
            const char *name = dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_name, &a));
            const char *link =
                dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_linkage_name, &a));
            if (!link)
                link = dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_MIPS_linkage_name, &a));
            const char *cf = NULL;
            if (b->files && !dwarf_formudata(dwarf_attr(&child, DW_AT_call_file, &a), &fno) &&
                fno < b->nfiles)
                cf = dwarf_filesrc(b->files, fno, NULL, NULL);
            if (!cf || dwarf_formudata(dwarf_attr(&child, DW_AT_call_line, &a), &lno))
                lno = 0;
            ptrdiff_t off = 0;
            Dwarf_Addr base, lo, hi;
            while (name && (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
                if (hi <= lo)
                    continue;
                if (b->n == b->cap) {
                    size_t ncap = b->cap ? b->cap * 2 : 256;
                    inl_range_t *nr = realloc(b->r, ncap * sizeof *nr);
                    if (!nr) {
                        b->nomem = 1;
                        return;
                    }
                    b->r = nr;
                    b->cap = ncap;
                }
                b->r[b->n++] = (inl_range_t){ lo, hi, name, lno ? cf : NULL, link,
                                              (uint32_t)lno, depth, UINT32_MAX };
            }
        }
        if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram ||
            tag == DW_TAG_lexical_block || tag == DW_TAG_namespace)
            walk_inlines(&child, b, depth + (tag == DW_TAG_inlined_subroutine));
    } while (!b->nomem && dwarf_siblingof(&child, &child) == 0);
}

static int cmp_inl_range(const void *a, const void *b)
{
    const inl_range_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The inlined subroutines of unit cu of o, read on first use; NULL on no memory. */
static cu_inlines_t *cu_inlines(object_t *o, Dwarf_Die *cu)
{
    Dwarf_Off off = dwarf_dieoffset(cu);
    for (size_t i = 0; i < o->ncuinl; i++)
        if (o->cuinl[i].cu == off)
            return &o->cuinl[i];
    cu_inlines_t *nc = realloc(o->cuinl, (o->ncuinl + 1) * sizeof *nc);
    if (!nc)
        return NULL;
    o->cuinl = nc;
    /* DW_AT_call_file indexes the unit's file table: libdw's list starts with entry 0 in DWARF 5
     * and with a stand-in for it in DWARF 4, so the index is the same in both */
    inl_build_t b = { 0 };
    if (dwarf_getsrcfiles(cu, &b.files, &b.nfiles))
        b.files = NULL;
    walk_inlines(cu, &b, 0);
    uint64_t *maxhi = b.n ? malloc(b.n * sizeof *maxhi) : NULL;
    if (b.nomem || (b.n && !maxhi)) {
        free(b.r);
        free(maxhi);
        return NULL;
    }
    if (b.n)
        qsort(b.r, b.n, sizeof *b.r, cmp_inl_range);
    for (size_t i = 0; i < b.n; i++)
        maxhi[i] = i && maxhi[i - 1] > b.r[i].hi ? maxhi[i - 1] : b.r[i].hi;
    o->cuinl[o->ncuinl] = (cu_inlines_t){ off, b.r, maxhi, b.n };
    return &o->cuinl[o->ncuinl++];
}

int sym_inlines_at(sym_ctx_t *s, uint32_t obj, uint64_t addr, sym_inline_t *out, int max)
{
    Dwarf_Die *cu = max > 0 ? cu_at(s, obj, addr) : NULL;
    cu_inlines_t *ci = cu ? cu_inlines(s->objs[obj], cu) : NULL;
    if (!ci || !ci->n)
        return 0;
    size_t lo = 0, hi = ci->n;
    while (lo < hi) { /* after the last range that starts at or before addr */
        size_t mid = lo + (hi - lo) / 2;
        if (ci->r[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    inl_range_t *hold[64];
    int n = 0;
    for (size_t k = lo; k-- > 0 && ci->maxhi[k] > addr && n < 64;) /* none earlier holds addr */
        if (addr < ci->r[k].hi)
            hold[n++] = &ci->r[k];
    for (int a = 1; a < n; a++) /* innermost (deepest) first */
        for (int b = a; b > 0 && hold[b]->depth > hold[b - 1]->depth; b--) {
            inl_range_t *t = hold[b];
            hold[b] = hold[b - 1];
            hold[b - 1] = t;
        }
    int m = 0;
    for (int a = 0; a < n && m < max; a++) {
        if (hold[a]->func == UINT32_MAX)
            hold[a]->func = inline_func(s, obj, hold[a]->name, hold[a]->link);
        if (hold[a]->func != UINT32_MAX)
            out[m++] = (sym_inline_t){ hold[a]->func, hold[a]->call_file, hold[a]->call_line };
    }
    return m;
}

int sym_inline_sites(sym_ctx_t *s, uint32_t obj, uint64_t addr, sym_site_fn fn, void *ctx)
{
    Dwarf_Die *cu = cu_at(s, obj, addr);
    cu_inlines_t *ci = cu ? cu_inlines(s->objs[obj], cu) : NULL;
    if (!ci)
        return -1;
    const sym_func_t *f = sym_func(s, sym_func_at(s, obj, addr));
    for (size_t k = 0; k < ci->n; k++) /* the inlined code that starts inside the function */
        if (ci->r[k].lo >= f->addr && ci->r[k].lo < f->addr + f->size && ci->r[k].call_file)
            fn(ctx, ci->r[k].call_file, ci->r[k].call_line);
    return 0;
}
