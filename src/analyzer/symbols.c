/*
 * symbols.c - load objects, function symbols and source lines (see symbols.h).
 *
 * Sections: names (demangling, shortening); reading an object (ELF, build-id, debug file,
 * symbol table, call-frame table); lookups; lines; the context.
 */
#define _GNU_SOURCE
#include "analyzer/symbols.h"

#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/* from libstdc++: demangles C++ names */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* ---- names ---------------------------------------------------------------------------------- */

/* The name without its parameter list and trailing qualifiers: "ns::f<int>(int) const" ->
 * "ns::f<int>". Names without a final ')' are returned whole. */
static char *short_name(const char *longname)
{
    size_t n = strlen(longname);
    const char *end = longname + n;
    /* skip trailing qualifiers after the parameter list */
    const char *p = end;
    while (p > longname && p[-1] != ')') {
        if (p[-1] == '>' || p[-1] == ']')
            return strdup(longname); /* not a function signature we understand */
        p--;
    }
    if (p == longname)
        return strdup(longname);
    int depth = 0;
    const char *q = p;
    while (q > longname) {
        q--;
        if (*q == ')')
            depth++;
        else if (*q == '(' && --depth == 0)
            break;
    }
    if (depth != 0 || q == longname)
        return strdup(longname);
    return strndup(longname, (size_t)(q - longname));
}

/* ---- objects -------------------------------------------------------------------------------- */

typedef struct fsym {
    uint64_t addr, size;
    const char *name; /* into the object's string storage */
    int bind;
    uint32_t func; /* function id, UINT32_MAX until first looked up */
} fsym_t;

typedef struct object {
    sym_object_t pub;
    char *path, *name, *buildid, *message, *debugfile;
    int loaded;
    fsym_t *syms;
    size_t nsyms;
    char *strings; /* copies of the symbol names */
    uint64_t *cfi; /* sorted function starts from .eh_frame_hdr */
    size_t ncfi;
    uint32_t unknown_func; /* UINT32_MAX until needed */
    /* line information */
    int dwarf_tried;
    Dwarf *dw;
    Elf *dw_elf;
    int dw_fd;
    void *image; /* the vDSO copy */
} object_t;

typedef struct func {
    sym_func_t pub;
    char *name, *long_name, *mangled; /* owned (long_name/mangled may alias each other) */
} func_t;

typedef struct statkey {
    uint32_t obj;
    uint64_t start;
    uint32_t func;
} statkey_t;

struct sym_ctx {
    object_t *objs;
    size_t nobjs, objs_cap;
    func_t *funcs;
    size_t nfuncs, funcs_cap;
    statkey_t *stat; /* open addressing: <static> ranges -> function */
    size_t stat_cap, nstat;
    uint32_t unknown;
};

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d) {
        fputs("tally: out of memory\n", stderr);
        abort();
    }
    return d;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("tally: out of memory\n", stderr);
        abort();
    }
    return q;
}

sym_ctx_t *sym_new(void)
{
    elf_version(EV_CURRENT);
    sym_ctx_t *s = calloc(1, sizeof *s);
    if (s)
        s->unknown = UINT32_MAX;
    return s;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

uint32_t sym_object_add(sym_ctx_t *s, const char *path, const char *buildid)
{
    if (!buildid)
        buildid = "";
    for (size_t i = 0; i < s->nobjs; i++)
        if (!strcmp(s->objs[i].path, path) && !strcmp(s->objs[i].buildid, buildid))
            return (uint32_t)i;
    if (s->nobjs == s->objs_cap) {
        s->objs_cap = s->objs_cap ? s->objs_cap * 2 : 16;
        s->objs = xrealloc(s->objs, s->objs_cap * sizeof *s->objs);
    }
    object_t *o = &s->objs[s->nobjs];
    memset(o, 0, sizeof *o);
    o->path = xstrdup(path);
    o->name = xstrdup(base_name(path));
    o->buildid = xstrdup(buildid);
    o->message = xstrdup("");
    o->debugfile = xstrdup("");
    o->unknown_func = UINT32_MAX;
    o->dw_fd = -1;
    return (uint32_t)s->nobjs++;
}

size_t sym_nobjects(const sym_ctx_t *s) { return s->nobjs; }

/* The build-id of an ELF image in lower-case hex, or "" (buf >= 129 bytes). */
static void elf_buildid(Elf *elf, char *buf)
{
    buf[0] = 0;
    size_t nph;
    if (elf_getphdrnum(elf, &nph) == 0) {
        for (size_t i = 0; i < nph; i++) {
            GElf_Phdr ph;
            if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
                continue;
            Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
                                               ELF_T_NHDR);
            size_t off = 0, name_off, desc_off;
            GElf_Nhdr nh;
            while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
                if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                    !memcmp((char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz <= 64) {
                    const unsigned char *id = (const unsigned char *)d->d_buf + desc_off;
                    for (size_t k = 0; k < nh.n_descsz; k++)
                        sprintf(buf + 2 * k, "%02x", id[k]);
                    return;
                }
            }
        }
    }
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t off = 0, name_off, desc_off;
        GElf_Nhdr nh;
        while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz <= 64) {
                const unsigned char *id = (const unsigned char *)d->d_buf + desc_off;
                for (size_t k = 0; k < nh.n_descsz; k++)
                    sprintf(buf + 2 * k, "%02x", id[k]);
                return;
            }
        }
    }
}

static int cmp_fsym(const void *a, const void *b)
{
    const fsym_t *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    /* at one address: global before weak before local, then the name without '_' first */
    int rx = x->bind == STB_GLOBAL ? 0 : x->bind == STB_WEAK ? 1 : 2;
    int ry = y->bind == STB_GLOBAL ? 0 : y->bind == STB_WEAK ? 1 : 2;
    if (rx != ry)
        return rx - ry;
    int ux = x->name[0] == '_', uy = y->name[0] == '_';
    if (ux != uy)
        return ux - uy;
    return strcmp(x->name, y->name);
}

/* Adds the function symbols of the symbol table section of type (SHT_SYMTAB or SHT_DYNSYM). */
static size_t read_symtab(object_t *o, Elf *elf, Elf64_Word type, fsym_t **syms, size_t *n,
                          size_t *cap, char **strs, size_t *slen, size_t *scap)
{
    size_t added = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
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
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
                continue;
            const char *nm = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (!nm || !*nm)
                continue;
            size_t l = strcspn(nm, "@") ; /* "memcpy@@GLIBC_2.14" -> "memcpy" */
            if (*slen + l + 1 > *scap) {
                *scap = (*scap ? *scap * 2 : 65536) + l + 1;
                /* the names are re-pointed after the table is complete: store offsets now */
                *strs = xrealloc(*strs, *scap);
            }
            memcpy(*strs + *slen, nm, l);
            (*strs)[*slen + l] = 0;
            if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 1024;
                *syms = xrealloc(*syms, *cap * sizeof **syms);
            }
            (*syms)[(*n)++] = (fsym_t){ sym.st_value, sym.st_size, (const char *)(uintptr_t)*slen,
                                        GELF_ST_BIND(sym.st_info), UINT32_MAX };
            *slen += l + 1;
            added++;
        }
    }
    (void)o;
    return added;
}

/* Reads the function starts of .eh_frame_hdr's search table (call-frame information). */
static void read_cfi(object_t *o, Elf *elf)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx))
        return;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *nm = elf_strptr(elf, shstrndx, sh.sh_name);
        if (!nm || strcmp(nm, ".eh_frame_hdr") || sh.sh_type == SHT_NOBITS)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || d->d_size < 12)
            return;
        const unsigned char *h = d->d_buf;
        /* version 1; eh_frame_ptr and fde_count as udata4/sdata4 (or pcrel sdata4); the table
         * as datarel sdata4 pairs (0x3b): the layout every toolchain emits */
        if (h[0] != 1 || ((h[1] & 0x0f) != 0x03 && (h[1] & 0x0f) != 0x0b) ||
            ((h[2] & 0x0f) != 0x03 && (h[2] & 0x0f) != 0x0b) || h[3] != 0x3b)
            return;
        uint32_t count;
        memcpy(&count, h + 8, 4);
        if (12 + (size_t)count * 8 > d->d_size)
            return;
        o->cfi = xrealloc(NULL, count * sizeof *o->cfi);
        for (uint32_t i = 0; i < count; i++) {
            int32_t loc;
            memcpy(&loc, h + 12 + (size_t)i * 8, 4);
            o->cfi[i] = sh.sh_addr + (uint64_t)(int64_t)loc;
        }
        o->ncfi = count;
        return;
    }
}

/* Opens the separate debug file of a build-id, or -1. */
static int open_debugfile(const char *buildid, char *path, size_t n)
{
    if (strlen(buildid) < 4)
        return -1;
    snprintf(path, n, "/usr/lib/debug/.build-id/%.2s/%s.debug", buildid, buildid + 2);
    return open(path, O_RDONLY | O_CLOEXEC);
}

static void set_message(object_t *o, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_message(object_t *o, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(o->message);
    if (vasprintf(&o->message, fmt, ap) < 0)
        o->message = xstrdup("");
    va_end(ap);
    o->pub.status = status;
}

/* A copy of this process's vDSO image (the kernel's, the same for every process). */
static void *vdso_image(size_t *size)
{
    const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!base || memcmp(base, ELFMAG, SELFMAG))
        return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    size_t end = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_offset + ph[i].p_filesz > end)
            end = ph[i].p_offset + ph[i].p_filesz;
    if (end > (1u << 20))
        return NULL;
    void *copy = malloc(end);
    if (copy)
        memcpy(copy, base, end);
    *size = end;
    return copy;
}

static void load_object(object_t *o)
{
    if (o->loaded)
        return;
    o->loaded = 1;
    o->pub.status = SYM_OBJ_OK;
    Elf *elf = NULL;
    int fd = -1;
    if (!strcmp(o->path, "[vdso]")) {
        size_t size = 0;
        o->image = vdso_image(&size);
        if (o->image)
            elf = elf_memory(o->image, size);
        if (!elf) {
            set_message(o, SYM_OBJ_UNREADABLE, "the vDSO of this system cannot be read: its "
                                               "functions are shown as one entry");
            return;
        }
    } else {
        fd = open(o->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            set_message(o, errno == ENOENT ? SYM_OBJ_MISSING : SYM_OBJ_UNREADABLE,
                        errno == ENOENT
                            ? "'%s' no longer exists: its functions are shown as one entry; "
                              "analyse where it was profiled, or put it back"
                            : "'%s' cannot be read (%s): its functions are shown as one entry",
                        o->path, strerror(errno));
            return;
        }
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf || elf_kind(elf) != ELF_K_ELF) {
            set_message(o, SYM_OBJ_UNREADABLE,
                        "'%s' is not an ELF file: its functions are shown as one entry",
                        o->path);
            if (elf)
                elf_end(elf);
            close(fd);
            return;
        }
    }
    char id[129];
    elf_buildid(elf, id);
    if (*o->buildid && *id && strcmp(id, o->buildid)) {
        set_message(o, SYM_OBJ_CHANGED,
                    "'%s' has changed since it was profiled (build-id %.12s... recorded, "
                    "%.12s... on disk): its function names may be wrong; re-run the "
                    "collection or put the original binary back", o->path, o->buildid, id);
    }
    fsym_t *syms = NULL;
    size_t n = 0, cap = 0, slen = 0, scap = 0;
    char *strs = NULL;
    /* the separate debug file (by the file's own build-id) has the full .symtab */
    char dpath[512];
    int dfd = *id ? open_debugfile(id, dpath, sizeof dpath) : -1;
    Elf *delf = NULL;
    if (dfd >= 0) {
        delf = elf_begin(dfd, ELF_C_READ_MMAP, NULL);
        if (delf && read_symtab(o, delf, SHT_SYMTAB, &syms, &n, &cap, &strs, &slen, &scap)) {
            free(o->debugfile);
            o->debugfile = xstrdup(dpath);
        }
    }
    if (!n)
        read_symtab(o, elf, SHT_SYMTAB, &syms, &n, &cap, &strs, &slen, &scap);
    if (!n)
        read_symtab(o, elf, SHT_DYNSYM, &syms, &n, &cap, &strs, &slen, &scap);
    read_cfi(o, elf);
    if (delf)
        elf_end(delf);
    if (dfd >= 0)
        close(dfd);
    elf_end(elf);
    if (fd >= 0)
        close(fd);
    for (size_t i = 0; i < n; i++)
        syms[i].name = strs + (uintptr_t)syms[i].name;
    qsort(syms, n, sizeof *syms, cmp_fsym);
    /* one entry per address (the preferred alias first after sorting); zero sizes extend to the
     * next symbol */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && syms[k - 1].addr == syms[i].addr) {
            if (syms[i].size > syms[k - 1].size)
                syms[k - 1].size = syms[i].size;
            continue;
        }
        syms[k++] = syms[i];
    }
    for (size_t i = 0; i < k; i++)
        if (!syms[i].size && i + 1 < k)
            syms[i].size = syms[i + 1].addr - syms[i].addr;
    o->syms = syms;
    o->nsyms = k;
    o->strings = strs;
    if (!k && o->pub.status == SYM_OBJ_OK)
        set_message(o, SYM_OBJ_NOSYMS, "'%s' has no symbol table: its code is shown by address",
                    o->path);
}

const sym_object_t *sym_object(sym_ctx_t *s, uint32_t obj)
{
    object_t *o = &s->objs[obj];
    load_object(o);
    o->pub.path = o->path;
    o->pub.name = o->name;
    o->pub.buildid = o->buildid;
    o->pub.message = o->message;
    o->pub.debugfile = o->debugfile;
    return &o->pub;
}

/* ---- functions ------------------------------------------------------------------------------ */

static uint32_t new_func(sym_ctx_t *s, uint32_t obj, uint64_t addr, uint64_t size,
                         const char *mangled, char *display)
{
    if (s->nfuncs == s->funcs_cap) {
        s->funcs_cap = s->funcs_cap ? s->funcs_cap * 2 : 1024;
        s->funcs = xrealloc(s->funcs, s->funcs_cap * sizeof *s->funcs);
    }
    func_t *f = &s->funcs[s->nfuncs];
    memset(f, 0, sizeof *f);
    f->mangled = xstrdup(mangled);
    if (display) {
        f->long_name = display;
    } else {
        int status = -1;
        char *dm = !strncmp(mangled, "_Z", 2) ? __cxa_demangle(mangled, NULL, NULL, &status)
                                              : NULL;
        f->long_name = status == 0 && dm ? dm : xstrdup(mangled);
        if (status != 0)
            free(dm);
    }
    /* a made-up name ("<static>@0x10 (lib)") is not a signature: nothing to shorten */
    f->name = display ? xstrdup(display) : short_name(f->long_name);
    if (!f->name)
        f->name = xstrdup(f->long_name);
    f->pub = (sym_func_t){ f->name, f->long_name, f->mangled, obj, addr, size };
    return (uint32_t)s->nfuncs++;
}

size_t sym_nfuncs(const sym_ctx_t *s) { return s->nfuncs; }

const sym_func_t *sym_func(const sym_ctx_t *s, uint32_t id)
{
    /* pointers into funcs[] move when it grows: publish the current strings each time */
    func_t *f = &((sym_ctx_t *)s)->funcs[id];
    f->pub.name = f->name;
    f->pub.long_name = f->long_name;
    f->pub.mangled = f->mangled;
    return &f->pub;
}

uint32_t sym_func_unknown(sym_ctx_t *s)
{
    if (s->unknown == UINT32_MAX)
        s->unknown = new_func(s, UINT32_MAX, 0, 0, "<Unknown>", xstrdup("<Unknown>"));
    return s->unknown;
}

static uint32_t static_func(sym_ctx_t *s, uint32_t obj, uint64_t start, uint64_t end)
{
    if ((s->nstat + 1) * 2 > s->stat_cap) {
        size_t ncap = s->stat_cap ? s->stat_cap * 2 : 256;
        statkey_t *nt = xrealloc(NULL, ncap * sizeof *nt);
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
    char *name;
    if (asprintf(&name, "<static>@0x%llx (%s)", (unsigned long long)start, s->objs[obj].name) < 0)
        abort();
    uint32_t f = new_func(s, obj, start, end > start ? end - start : 0, name, name);
    s->stat[j] = (statkey_t){ obj, start, f };
    s->nstat++;
    return f;
}

uint32_t sym_func_at(sym_ctx_t *s, uint32_t obj, uint64_t addr)
{
    object_t *o = &s->objs[obj];
    load_object(o);
    if (o->pub.status == SYM_OBJ_MISSING || o->pub.status == SYM_OBJ_UNREADABLE) {
        if (o->unknown_func == UINT32_MAX) {
            char *name;
            if (asprintf(&name, "<unknown> (%s)", o->name) < 0)
                abort();
            o->unknown_func = new_func(s, obj, 0, 0, name, name);
        }
        return o->unknown_func;
    }
    /* the last symbol starting at or before addr */
    size_t lo = 0, hi = o->nsyms;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (o->syms[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    fsym_t *sym = lo ? &o->syms[lo - 1] : NULL;
    if (sym && addr < sym->addr + (sym->size ? sym->size : 1)) {
        if (sym->func == UINT32_MAX)
            sym->func = new_func(s, obj, sym->addr, sym->size, sym->name, NULL);
        return sym->func;
    }
    /* no symbol covers addr: the code range around it, from call-frame information or the gap
     * between the symbols */
    uint64_t start = sym ? sym->addr + sym->size : 0;
    uint64_t end = lo < o->nsyms ? o->syms[lo].addr : UINT64_MAX;
    if (o->ncfi) {
        size_t a = 0, b = o->ncfi;
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (o->cfi[mid] <= addr)
                a = mid + 1;
            else
                b = mid;
        }
        if (a && o->cfi[a - 1] > start)
            start = o->cfi[a - 1];
        if (a < o->ncfi && o->cfi[a] < end)
            end = o->cfi[a];
    }
    return static_func(s, obj, start, end);
}

/* ---- lines ---------------------------------------------------------------------------------- */

static void open_dwarf(object_t *o)
{
    o->dwarf_tried = 1;
    char dpath[512];
    const char *candidates[2] = { NULL, o->path };
    if (*o->debugfile)
        candidates[0] = o->debugfile;
    else if (*o->buildid) {
        int fd = open_debugfile(o->buildid, dpath, sizeof dpath);
        if (fd >= 0) {
            close(fd); /* reopened by path below */
            candidates[0] = dpath;
        }
    }
    for (int i = 0; i < 2 && !o->dw; i++) {
        if (!candidates[i] || !strcmp(candidates[i], "[vdso]"))
            continue;
        int fd = open(candidates[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        Dwarf *dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
        if (dw) {
            o->dw = dw;
            o->dw_elf = elf;
            o->dw_fd = fd;
        } else {
            if (elf)
                elf_end(elf);
            close(fd);
        }
    }
}

int sym_line_at(sym_ctx_t *s, uint32_t obj, uint64_t addr, const char **file, uint32_t *line)
{
    if (obj >= s->nobjs)
        return -1;
    object_t *o = &s->objs[obj];
    load_object(o);
    if (o->pub.status == SYM_OBJ_MISSING || o->pub.status == SYM_OBJ_UNREADABLE)
        return -1;
    if (!o->dwarf_tried)
        open_dwarf(o);
    if (!o->dw)
        return -1;
    Dwarf_Die cu;
    if (!dwarf_addrdie(o->dw, addr, &cu))
        return -1;
    Dwarf_Line *l = dwarf_getsrc_die(&cu, addr);
    int ln;
    const char *f = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
    if (!f || dwarf_lineno(l, &ln) || ln <= 0)
        return -1;
    *file = f;
    *line = (uint32_t)ln;
    return 0;
}

/* ---- the context ---------------------------------------------------------------------------- */

void sym_free(sym_ctx_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nobjs; i++) {
        object_t *o = &s->objs[i];
        free(o->path);
        free(o->name);
        free(o->buildid);
        free(o->message);
        free(o->debugfile);
        free(o->syms);
        free(o->strings);
        free(o->cfi);
        if (o->dw)
            dwarf_end(o->dw);
        if (o->dw_elf)
            elf_end(o->dw_elf);
        if (o->dw_fd >= 0)
            close(o->dw_fd);
        free(o->image);
    }
    for (size_t i = 0; i < s->nfuncs; i++) {
        func_t *f = &s->funcs[i];
        if (f->mangled != f->long_name)
            free(f->mangled);
        free(f->long_name);
        free(f->name);
    }
    free(s->objs);
    free(s->funcs);
    free(s->stat);
    free(s);
}
