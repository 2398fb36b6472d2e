/*
 * symbols_vars.c - variables of load objects; see symbols_vars.h.
 */
#define _GNU_SOURCE
#include "analyzer/symbols_vars.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct var {
    uint64_t addr, size;
    char *name;
} var_t;

typedef struct obj_vars {
    int read;
    var_t *v;
    size_t n;
} obj_vars_t;

struct sym_vars {
    sym_ctx_t *sym;
    obj_vars_t *objs; /* by object index */
    size_t nobjs;
};

sym_vars_t *sym_vars_new(sym_ctx_t *s)
{
    sym_vars_t *v = calloc(1, sizeof *v);
    if (v)
        v->sym = s;
    return v;
}

void sym_vars_free(sym_vars_t *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->nobjs; i++) {
        for (size_t k = 0; k < v->objs[i].n; k++)
            free(v->objs[i].v[k].name);
        free(v->objs[i].v);
    }
    free(v->objs);
    free(v);
}

/* Adds the data symbols of the sections of type; returns how many. */
static size_t read_vars(obj_vars_t *o, Elf *elf, Elf64_Word type)
{
    size_t added = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        Elf_Data *d;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize ||
            !(d = elf_getdata(scn, NULL)))
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            const char *nm;
            if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
                sym.st_shndx == SHN_UNDEF || !sym.st_value ||
                !(nm = elf_strptr(elf, sh.sh_link, sym.st_name)) || !*nm)
                continue;
            var_t *nv = realloc(o->v, (o->n + 1) * sizeof *nv);
            if (!nv)
                return added;
            o->v = nv;
            o->v[o->n].addr = sym.st_value;
            o->v[o->n].size = sym.st_size;
            o->v[o->n].name = strndup(nm, strcspn(nm, "@"));
            if (o->v[o->n].name) {
                o->n++;
                added++;
            }
        }
    }
    return added;
}

/* Reads the variables of one file (NULL path: none); returns how many. */
static size_t read_file_vars(obj_vars_t *o, const char *path, int dynsym_too)
{
    if (!path || !*path)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t n = 0;
    if (elf) {
        n = read_vars(o, elf, SHT_SYMTAB);
        if (!n && dynsym_too)
            n = read_vars(o, elf, SHT_DYNSYM);
        elf_end(elf);
    }
    close(fd);
    return n;
}

static int cmp_var(const void *a, const void *b)
{
    const var_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static obj_vars_t *vars_of(sym_vars_t *v, uint32_t obj)
{
    if (obj >= v->nobjs) {
        obj_vars_t *no = realloc(v->objs, (obj + 1) * sizeof *no);
        if (!no)
            return NULL;
        memset(no + v->nobjs, 0, (obj + 1 - v->nobjs) * sizeof *no);
        v->objs = no;
        v->nobjs = obj + 1;
    }
    obj_vars_t *o = &v->objs[obj];
    if (!o->read) {
        o->read = 1;
        elf_version(EV_CURRENT);
        const sym_object_t *so = sym_object(v->sym, obj); /* reads it: finds its debug file */
        if (!read_file_vars(o, so->debugfile, 0) && strcmp(so->path, "[vdso]"))
            read_file_vars(o, so->path, 1);
        if (o->n)
            qsort(o->v, o->n, sizeof *o->v, cmp_var);
    }
    return o;
}

const char *sym_var_at(sym_vars_t *v, uint32_t obj, uint64_t addr, uint64_t *offset)
{
    obj_vars_t *o = vars_of(v, obj);
    if (!o)
        return NULL;
    size_t lo = 0, hi = o->n;
    while (lo < hi) { /* the first variable above addr */
        size_t mid = (lo + hi) / 2;
        if (o->v[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0 && lo - i <= 8;) { /* aliases at one address sort together */
        const var_t *x = &o->v[i];
        if (addr >= x->addr && (addr < x->addr + x->size || addr == x->addr)) {
            *offset = addr - x->addr;
            return x->name;
        }
    }
    return NULL;
}
