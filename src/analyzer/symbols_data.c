/*
 * symbols_data.c - data objects from DWARF; see symbols_data.h. Sections: descriptors of types,
 * walking a type to the member at an offset, static variables, the variables at a PC, naming.
 */
#define _GNU_SOURCE
#include "analyzer/symbols_data.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- descriptors of types --------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int cut; /* ran out of room */
} sbuf_t;

/* Appends s, its spaces as '_' (raw: as they are). */
static void put_as(sbuf_t *b, const char *s, int raw)
{
    for (; *s; s++) {
        if (b->n + 1 >= b->cap) {
            b->cut = 1;
            return;
        }
        b->p[b->n++] = *s == ' ' && !raw ? '_' : *s;
    }
    b->p[b->n] = 0;
}

static void put(sbuf_t *b, const char *s) { put_as(b, s, 0); }

/* The type a DIE's DW_AT_type names, or 0 (void). */
static int type_of(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, DW_AT_type, &a) && dwarf_formref_die(&a, out) ? 1 : 0;
}

/* The name of a DIE, through its abstract origin (the concrete copy of an inlined or cloned
 * function's variable has none of its own). */
static const char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, DW_AT_name, &a) ? dwarf_formstring(&a) : NULL;
}

/* Skips typedefs and qualifiers: the type that says what the bytes are. */
static int strip(Dwarf_Die *t, Dwarf_Die *out)
{
    Dwarf_Die cur = *t;
    for (int depth = 0; depth < 32; depth++) {
        int tag = dwarf_tag(&cur);
        if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
            tag != DW_TAG_restrict_type && tag != DW_TAG_atomic_type) {
            *out = cur;
            return 1;
        }
        Dwarf_Die next;
        if (!type_of(&cur, &next))
            return 0; /* const void */
        cur = next;
    }
    return 0;
}

/* TYPE of a descriptor: qualifiers joined by '+', aggregates as keyword:tag. */
static void type_desc(sbuf_t *b, Dwarf_Die *t, int has)
{
    Dwarf_Die cur;
    if (has)
        cur = *t;
    for (int depth = 0; depth < 16; depth++) {
        if (!has) {
            put(b, "void");
            return;
        }
        const char *name = dwarf_diename(&cur);
        switch (dwarf_tag(&cur)) {
        case DW_TAG_const_type: put(b, "const+"); break;
        case DW_TAG_volatile_type: put(b, "volatile+"); break;
        case DW_TAG_restrict_type: put(b, "restrict+"); break;
        case DW_TAG_atomic_type: put(b, "atomic+"); break;
        case DW_TAG_pointer_type: put(b, "pointer+"); break;
        case DW_TAG_reference_type: put(b, "reference+"); break;
        case DW_TAG_rvalue_reference_type: put(b, "rvalue_reference+"); break;
        case DW_TAG_array_type: put(b, "array+"); break;
        case DW_TAG_typedef:
            put(b, name ? name : "-");
            return;
        case DW_TAG_structure_type:
            put(b, "structure:");
            put(b, name ? name : "-");
            return;
        case DW_TAG_union_type:
            put(b, "union:");
            put(b, name ? name : "-");
            return;
        case DW_TAG_class_type:
            put(b, "class:");
            put(b, name ? name : "-");
            return;
        case DW_TAG_enumeration_type:
            put(b, "enumeration:");
            put(b, name ? name : "-");
            return;
        case DW_TAG_subroutine_type:
            put(b, "function");
            return;
        default:
            put(b, name ? name : "-");
            return;
        }
        has = type_of(&cur, &cur);
    }
}

/* One level: {TYPE NAME}. */
static void level(sbuf_t *b, Dwarf_Die *t, int has, const char *name)
{
    put(b, "{");
    type_desc(b, t, has);
    put_as(b, " ", 1);
    put(b, name && *name ? name : "-");
    put(b, "}");
}

static int is_aggregate_tag(int tag)
{
    return tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_class_type;
}

static uint64_t size_of(Dwarf_Die *t)
{
    Dwarf_Word sz;
    Dwarf_Die s;
    if (!strip(t, &s) || dwarf_aggregate_size(&s, &sz) != 0)
        return 0;
    return sz;
}

/* ---- walking a type to the member at an offset ------------------------------------------------- */

static void mark(sym_dref_t *out, sbuf_t *b)
{
    if (out->nlevels < SYM_DREF_LEVELS && !b->cut)
        out->end[out->nlevels++] = (uint16_t)b->n;
}

/* From the object of type t (its first level already written) down to the scalar at off. */
static void descend(sym_dref_t *out, sbuf_t *b, Dwarf_Die *t, uint64_t off)
{
    Dwarf_Die cur;
    if (!strip(t, &cur))
        return;
    for (int depth = 0; depth < SYM_DREF_LEVELS - 1 && !b->cut; depth++) {
        int tag = dwarf_tag(&cur);
        if (tag == DW_TAG_array_type) {
            Dwarf_Die elem, es;
            if (!type_of(&cur, &elem))
                return;
            uint64_t esz = size_of(&elem);
            if (!esz)
                return;
            off %= esz;
            put(b, ".");
            level(b, &elem, 1, NULL);
            mark(out, b);
            if (!strip(&elem, &es))
                return;
            cur = es;
            continue;
        }
        if (!is_aggregate_tag(tag))
            return;
        Dwarf_Die m;
        int found = 0;
        if (dwarf_child(&cur, &m) == 0) {
            do {
                if (dwarf_tag(&m) != DW_TAG_member)
                    continue;
                Dwarf_Attribute a;
                Dwarf_Word loc = 0;
                if (dwarf_attr(&m, DW_AT_data_member_location, &a) &&
                    dwarf_formudata(&a, &loc) != 0)
                    continue;
                Dwarf_Die mt;
                if (!type_of(&m, &mt))
                    continue;
                uint64_t msz = size_of(&mt);
                if (off >= loc && off < loc + (msz ? msz : 1)) {
                    put(b, ".");
                    level(b, &mt, 1, dwarf_diename(&m));
                    mark(out, b);
                    off -= loc;
                    if (!strip(&mt, &cur))
                        return;
                    found = 1;
                    break;
                }
            } while (dwarf_siblingof(&m, &m) == 0);
        }
        if (!found) { /* padding: the aggregate itself is the object */
            out->scalar = 0;
            return;
        }
    }
}

/* The first level of an object of type t named name, then the walk down to off. pointee: the
 * object a pointer points to (unnamed). */
static void name_object(sym_dref_t *out, Dwarf_Die *t, const char *name, uint64_t off, int kind)
{
    sbuf_t b = { out->desc, 0, sizeof out->desc, 0 };
    out->desc[0] = 0;
    out->nlevels = 0;
    out->kind = kind;
    out->var_offset = off;
    Dwarf_Die s;
    int stripped = strip(t, &s);
    int agg = stripped && is_aggregate_tag(dwarf_tag(&s));
    if (agg) { /* a whole aggregate is named by its type: {structure:foo_t} */
        out->has_agg = 1;
        out->agg = dwarf_dieoffset(&s);
        put(&b, "{");
        type_desc(&b, &s, 1);
        put(&b, "}");
    } else {
        level(&b, t, 1, kind == SYM_DATA_POINTEE ? NULL : name);
    }
    mark(out, &b);
    out->scalar = !agg && (!stripped || dwarf_tag(&s) != DW_TAG_array_type);
    descend(out, &b, t, off);
    if (out->nlevels > 1)
        out->scalar = 0;
    out->reason = 0;
}

/* ---- static variables ------------------------------------------------------------------------ */

typedef struct svar {
    uint64_t addr, size;
    Dwarf_Off die; /* the variable's DIE */
} svar_t;

typedef struct obj_data {
    int read;
    svar_t *v; /* static variables by address */
    size_t n;
    svar_t *tls; /* thread-local variables by offset in the object's TLS block */
    size_t ntls;
    uint64_t tls_size, tls_align; /* the PT_TLS segment (0: none) */
    Dwarf_CFI *cfi_dw, *cfi_elf;
} obj_data_t;

struct sym_data {
    sym_ctx_t *sym;
    obj_data_t *objs;
    size_t nobjs;
};

sym_data_t *sym_data_new(sym_ctx_t *s)
{
    sym_data_t *d = calloc(1, sizeof *d);
    if (d)
        d->sym = s;
    return d;
}

void sym_data_free(sym_data_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nobjs; i++) {
        free(d->objs[i].v);
        free(d->objs[i].tls);
        if (d->objs[i].cfi_elf)
            dwarf_cfi_end(d->objs[i].cfi_elf);
    }
    free(d->objs);
    free(d);
}

/* A DW_OP_addr location: the address. */
static int static_addr(Dwarf_Die *die, uint64_t *addr)
{
    Dwarf_Attribute a;
    Dwarf_Op *ops;
    size_t n;
    if (!dwarf_attr(die, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &n) != 0 || n != 1 ||
        ops[0].atom != DW_OP_addr)
        return 0;
    *addr = ops[0].number;
    return 1;
}

/* A thread-local location (the offset in the TLS block, then push_tls_address): the offset. */
static int tls_offset(Dwarf_Die *die, uint64_t *off)
{
    Dwarf_Attribute a;
    Dwarf_Op *ops;
    size_t n;
    if (!dwarf_attr(die, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &n) != 0 || n != 2 ||
        (ops[1].atom != DW_OP_GNU_push_tls_address && ops[1].atom != DW_OP_form_tls_address))
        return 0;
    switch (ops[0].atom) {
    case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u:
    case DW_OP_constu: case DW_OP_addr:
        *off = ops[0].number;
        return 1;
    default:
        return 0;
    }
}

static int grow_svar(svar_t **v, size_t n, size_t *cap)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    svar_t *nv = realloc(*v, nc * sizeof *nv);
    if (!nv)
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

static int cmp_svar(const void *a, const void *b)
{
    const svar_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Every variable with a static address, in every unit, at any depth. */
static void read_statics(obj_data_t *o, Dwarf *dw)
{
    size_t cap = 0, tcap = 0;
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        if (dwarf_offdie(dw, off + hsize, &cu)) {
            Dwarf_Die stack[64];
            int sp = 0;
            Dwarf_Die child;
            if (dwarf_child(&cu, &child) == 0)
                stack[sp++] = child;
            while (sp > 0) {
                Dwarf_Die die = stack[--sp];
                Dwarf_Die sib;
                if (dwarf_siblingof(&die, &sib) == 0 && sp < 64)
                    stack[sp++] = sib;
                int tag = dwarf_tag(&die);
                uint64_t addr;
                if (tag == DW_TAG_variable && static_addr(&die, &addr)) {
                    Dwarf_Die t;
                    uint64_t sz = type_of(&die, &t) ? size_of(&t) : 0;
                    if (grow_svar(&o->v, o->n, &cap))
                        return;
                    o->v[o->n++] = (svar_t){ addr, sz, dwarf_dieoffset(&die) };
                } else if (tag == DW_TAG_variable && tls_offset(&die, &addr)) {
                    Dwarf_Die t;
                    uint64_t sz = type_of(&die, &t) ? size_of(&t) : 0;
                    if (grow_svar(&o->tls, o->ntls, &tcap))
                        return;
                    o->tls[o->ntls++] = (svar_t){ addr, sz, dwarf_dieoffset(&die) };
                }
                if ((tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
                     tag == DW_TAG_namespace || tag == DW_TAG_inlined_subroutine) &&
                    dwarf_child(&die, &child) == 0 && sp < 64)
                    stack[sp++] = child;
            }
        }
        off = next;
    }
    if (o->n)
        qsort(o->v, o->n, sizeof *o->v, cmp_svar);
    if (o->ntls)
        qsort(o->tls, o->ntls, sizeof *o->tls, cmp_svar);
}

/* The PT_TLS segment of the object's file. */
static void read_tls_segment(obj_data_t *o, Elf *elf)
{
    size_t n;
    if (!elf || elf_getphdrnum(elf, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_TLS) {
            o->tls_size = ph.p_memsz;
            o->tls_align = ph.p_align ? ph.p_align : 1;
        }
    }
}

static obj_data_t *data_of(sym_data_t *d, uint32_t obj, Dwarf **dw, Elf **elf)
{
    *dw = sym_dwarf(d->sym, obj, elf);
    if (obj >= d->nobjs) {
        obj_data_t *no = realloc(d->objs, (obj + 1) * sizeof *no);
        if (!no)
            return NULL;
        memset(no + d->nobjs, 0, (obj + 1 - d->nobjs) * sizeof *no);
        d->objs = no;
        d->nobjs = obj + 1;
    }
    obj_data_t *o = &d->objs[obj];
    if (!o->read && *dw) {
        o->read = 1;
        read_statics(o, *dw);
        read_tls_segment(o, *elf);
        o->cfi_dw = dwarf_getcfi(*dw);
        o->cfi_elf = *elf ? dwarf_getcfi_elf(*elf) : NULL;
    }
    return o;
}

static void lookup(Dwarf *dw, const svar_t *tab, size_t n, uint64_t addr, int kind,
                   sym_dref_t *out);

void sym_data_static(sym_data_t *d, uint32_t obj, uint64_t addr, sym_dref_t *out)
{
    memset(out, 0, sizeof *out);
    out->reason = EXP_DUNK_UNDETERMINABLE;
    Dwarf *dw;
    Elf *elf;
    obj_data_t *o = data_of(d, obj, &dw, &elf);
    if (!dw) {
        out->reason = EXP_DUNK_NO_DEBUG;
        return;
    }
    if (o)
        lookup(dw, o->v, o->n, addr, SYM_DATA_STATIC, out);
}

/* The variable of table v[n] (sorted) covering addr into *out, of kind. */
static void lookup(Dwarf *dw, const svar_t *tab, size_t n, uint64_t addr, int kind, sym_dref_t *out)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first variable above addr */
        size_t mid = (lo + hi) / 2;
        if (tab[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0 && lo - i <= 8;) {
        const svar_t *v = &tab[i];
        if (addr < v->addr || addr >= v->addr + (v->size ? v->size : 1))
            continue;
        Dwarf_Die die, t;
        if (!dwarf_offdie(dw, v->die, &die) || !type_of(&die, &t))
            continue;
        const char *nm = die_name(&die);
        snprintf(out->var, sizeof out->var, "%s", nm ? nm : "");
        name_object(out, &t, nm, addr - v->addr, kind);
        return;
    }
}

/* ---- the variables at a PC ------------------------------------------------------------------- */

/* The CFA at pc as register + offset; 0 or -1. */
static int cfa_rule(obj_data_t *o, uint64_t pc, int *reg, int64_t *off)
{
    Dwarf_CFI *cfis[2] = { o->cfi_elf, o->cfi_dw };
    for (int i = 0; i < 2; i++) {
        Dwarf_Frame *fr;
        if (!cfis[i] || dwarf_cfi_addrframe(cfis[i], pc, &fr) != 0)
            continue;
        Dwarf_Op *ops;
        size_t n;
        int ok = dwarf_frame_cfa(fr, &ops, &n) == 0 && n == 1;
        if (ok && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg16) {
            *reg = ops[0].atom - DW_OP_breg0;
            *off = (int64_t)ops[0].number;
        } else if (ok && ops[0].atom == DW_OP_bregx) { /* libdw gives register + offset so */
            *reg = (int)ops[0].number;
            *off = (int64_t)ops[0].number2;
        } else {
            ok = 0;
        }
        free(fr);
        if (ok)
            return 0;
    }
    return -1;
}

/* The DIEs whose code holds pc, innermost first, the unit last (subprograms, lexical blocks,
 * inlined subroutines and the like, by their ranges, looked for inside namespaces and modules
 * too), into a malloc'd *scopes; their number, 0 when none holds pc, -1 on no memory. libdw's
 * dwarf_getscopes does this and more, but loses its array when the abstract origin of an inlined
 * subroutine at pc is not in the unit (a leak on every such address). Bounded: 256 levels. */
enum { SCOPES_MAX = 256 };

static int scope_tag(int tag)
{
    return tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
           tag == DW_TAG_inlined_subroutine || tag == DW_TAG_try_block ||
           tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt || tag == DW_TAG_common_block;
}

/* Appends to chain[*n..] the scopes below die that hold pc; 1 when one did. */
static int scopes_below(Dwarf_Die *die, uint64_t pc, Dwarf_Die *chain, int *n)
{
    Dwarf_Die c;
    if (*n >= SCOPES_MAX || dwarf_child(die, &c) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&c);
        if (scope_tag(tag) && dwarf_haspc(&c, pc) == 1) {
            chain[(*n)++] = c;
            scopes_below(&chain[*n - 1], pc, chain, n);
            return 1;
        }
        if (tag == DW_TAG_namespace || tag == DW_TAG_module) {
            int at = *n;
            chain[(*n)++] = c;
            if (scopes_below(&chain[at], pc, chain, n))
                return 1;
            *n = at;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
    return 0;
}

static int scopes_at(Dwarf_Die *cu, uint64_t pc, Dwarf_Die **scopes)
{
    Dwarf_Die chain[SCOPES_MAX];
    int n = 0;
    chain[n++] = *cu;
    scopes_below(cu, pc, chain, &n);
    *scopes = malloc((size_t)n * sizeof **scopes);
    if (!*scopes)
        return -1;
    int m = 0; /* the namespaces and modules on the way are no scopes of pc */
    for (int i = n - 1; i >= 0; i--)
        if (i == 0 || scope_tag(dwarf_tag(&chain[i])))
            (*scopes)[m++] = chain[i];
    return m > 1 ? m : 0;
}

/* Is the subprogram's frame base the CFA? */
static int frame_base_is_cfa(Dwarf_Die *scopes, int n)
{
    for (int i = 0; i < n; i++) {
        if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
            continue;
        Dwarf_Attribute a;
        Dwarf_Op *ops;
        size_t k;
        return dwarf_attr(&scopes[i], DW_AT_frame_base, &a) &&
               dwarf_getlocation(&a, &ops, &k) == 0 && k == 1 &&
               ops[0].atom == DW_OP_call_frame_cfa;
    }
    return 0;
}

/* The variable of the scopes at pc that the operand references into *out; 1 when found. */
static int scope_variable(obj_data_t *o, Dwarf_Die *scopes, int ns, const sym_dquery_t *q,
                          sym_dref_t *out)
{
    const bt_operand_t *op = &q->op;
    int cfa_reg = -1;
    int64_t cfa_off = 0;
    /* without the index's value, the displacement alone finds the variable (an array) */
    int64_t foff = q->has_off ? q->off : op->disp;
    int frame = (op->base == 6 || op->base == 7) && (q->has_off || op->index != BT_REG_NONE) &&
                frame_base_is_cfa(scopes, ns) && cfa_rule(o, q->pc, &cfa_reg, &cfa_off) == 0 &&
                cfa_reg == op->base;
    /* the anchor: a pointer variable in a register whose value is nearest below the address */
    Dwarf_Die anchor_t;
    const char *anchor_name = NULL;
    uint64_t anchor_dist = UINT64_MAX;
    for (int i = 0; i < ns; i++) {
        Dwarf_Die v;
        if (dwarf_child(&scopes[i], &v) != 0)
            continue;
        do {
            int tag = dwarf_tag(&v);
            if (tag != DW_TAG_variable && tag != DW_TAG_formal_parameter)
                continue;
            Dwarf_Attribute a;
            Dwarf_Op *ops;
            size_t n;
            if (!dwarf_attr_integrate(&v, DW_AT_location, &a) ||
                dwarf_getlocation_addr(&a, q->pc, &ops, &n, 1) != 1 || n < 1)
                continue;
            Dwarf_Die t;
            if (!type_of(&v, &t))
                continue;
            const char *nm = die_name(&v);
            int reg = -1;
            if (n == 1 && ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31)
                reg = ops[0].atom - DW_OP_reg0;
            else if (n == 1 && ops[0].atom == DW_OP_regx)
                reg = (int)ops[0].number;
            if (reg >= 0 && reg < 16 && reg != op->base && q->has_ea && q->regs &&
                (q->regmask >> reg & 1) && q->ea >= q->regs[reg] &&
                q->ea - q->regs[reg] < anchor_dist && q->ea - q->regs[reg] < (256u << 20)) {
                /* the value at the sample's PC is the variable's only if it is there too */
                Dwarf_Op *ops2;
                size_t n2;
                Dwarf_Die pt, pointee;
                if (dwarf_getlocation_addr(&a, q->sample_pc, &ops2, &n2, 1) == 1 && n2 == 1 &&
                    ops2[0].atom == ops[0].atom && strip(&t, &pt) &&
                    dwarf_tag(&pt) == DW_TAG_pointer_type && type_of(&pt, &pointee) &&
                    size_of(&pointee)) {
                    anchor_dist = q->ea - q->regs[reg];
                    anchor_t = pointee;
                    anchor_name = nm ? nm : "";
                }
            }
            if (reg >= 0 && reg == op->base) {
                /* the pointer the operand goes through */
                Dwarf_Die pt, pointee;
                if (!strip(&t, &pt) || dwarf_tag(&pt) != DW_TAG_pointer_type ||
                    !type_of(&pt, &pointee))
                    continue;
                uint64_t sz = size_of(&pointee);
                int64_t off = q->has_off ? q->off : op->disp;
                if (off < 0 && sz)
                    off = (int64_t)(sz - (uint64_t)(-off) % sz) % (int64_t)sz;
                uint64_t uoff = (uint64_t)off;
                if (sz && uoff >= sz)
                    uoff %= sz; /* an element of an array the pointer walks */
                snprintf(out->var, sizeof out->var, "%s", nm ? nm : "");
                name_object(out, &pointee, NULL, uoff, SYM_DATA_POINTEE);
                if (!q->has_off && op->index != BT_REG_NONE)
                    out->nlevels = 1, out->desc[out->end[0]] = 0; /* member unknown */
                return 1;
            }
            if (frame && n == 1 && ops[0].atom == DW_OP_fbreg) {
                int64_t start = cfa_off + (int64_t)ops[0].number;
                uint64_t sz = size_of(&t);
                if (foff >= start && (uint64_t)(foff - start) < (sz ? sz : 1)) {
                    snprintf(out->var, sizeof out->var, "%s", nm ? nm : "");
                    name_object(out, &t, nm, (uint64_t)(foff - start), SYM_DATA_LOCAL);
                    return 1;
                }
            }
        } while (dwarf_siblingof(&v, &v) == 0);
    }
    if (anchor_name) {
        uint64_t sz = size_of(&anchor_t);
        snprintf(out->var, sizeof out->var, "%s", anchor_name);
        name_object(out, &anchor_t, NULL, anchor_dist % sz, SYM_DATA_POINTEE);
        out->anchored = 1;
        return 1;
    }
    return 0;
}

/* The CFA of the sample's frame from the registers at the sample's PC: 1 and *cfa when known. */
static int sample_cfa(obj_data_t *o, const sym_dquery_t *q, uint64_t *cfa)
{
    int reg;
    int64_t off;
    if (!q->has_ea || !q->regs || !(q->regmask >> 7 & 1) || cfa_rule(o, q->sample_pc, &reg, &off))
        return 0;
    if (reg < 0 || reg >= 16 || !(q->regmask >> reg & 1))
        return 0;
    *cfa = q->regs[reg] + (uint64_t)off;
    return 1;
}

/* The name of the function the scopes belong to (the outermost subprogram), or "-". */
static const char *scopes_function(Dwarf_Die *scopes, int ns)
{
    for (int i = ns; i-- > 0;)
        if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
            const char *nm = die_name(&scopes[i]);
            return nm ? nm : "-";
        }
    return "-";
}

/* An address inside the sample's own frame (at or above the stack pointer, less the red zone,
 * below the CFA): the local variable or parameter whose DW_OP_fbreg location covers it, else
 * the frame itself, {stack:FUNCTION} (a spill slot, saved registers, padding). 1 when the
 * address is in the frame. */
static int frame_object(obj_data_t *o, Dwarf_Die *scopes, int ns, const sym_dquery_t *q,
                        sym_dref_t *out)
{
    uint64_t cfa;
    if (!sample_cfa(o, q, &cfa) || q->ea >= cfa || q->ea + 128 < q->regs[7])
        return 0;
    int fb_cfa = frame_base_is_cfa(scopes, ns);
    {
        for (int i = 0; i < ns; i++) {
            Dwarf_Die v;
            if (dwarf_child(&scopes[i], &v) != 0)
                continue;
            do {
                int tag = dwarf_tag(&v);
                if (tag != DW_TAG_variable && tag != DW_TAG_formal_parameter)
                    continue;
                Dwarf_Attribute a;
                Dwarf_Op *ops;
                size_t n;
                Dwarf_Die t;
                if (!dwarf_attr_integrate(&v, DW_AT_location, &a) ||
                    dwarf_getlocation_addr(&a, q->pc, &ops, &n, 1) != 1 || n != 1 ||
                    !type_of(&v, &t))
                    continue;
                /* the frame base (the CFA), or the stack or frame pointer as recorded at the
                 * sample (a realigned frame's variables are rsp- or rbp-relative; neither
                 * changes between a trigger and its sample in the same frame) */
                uint64_t at;
                if (ops[0].atom == DW_OP_fbreg && fb_cfa)
                    at = cfa;
                else if ((ops[0].atom == DW_OP_breg6 || ops[0].atom == DW_OP_breg7) &&
                         (q->regmask >> (ops[0].atom - DW_OP_breg0) & 1))
                    at = q->regs[ops[0].atom - DW_OP_breg0];
                else
                    continue;
                uint64_t start = at + (uint64_t)(int64_t)ops[0].number;
                uint64_t sz = size_of(&t);
                if (q->ea >= start && q->ea - start < (sz ? sz : 1)) {
                    const char *nm = die_name(&v);
                    snprintf(out->var, sizeof out->var, "%s", nm ? nm : "");
                    name_object(out, &t, nm, q->ea - start, SYM_DATA_LOCAL);
                    return 1;
                }
            } while (dwarf_siblingof(&v, &v) == 0);
        }
    }
    memset(out, 0, sizeof *out);
    sbuf_t b = { out->desc, 0, sizeof out->desc, 0 };
    put(&b, "{stack:");
    put(&b, scopes_function(scopes, ns));
    put(&b, "}");
    mark(out, &b);
    out->kind = SYM_DATA_STACK;
    out->var_offset = cfa - q->ea;
    return 1;
}

/* The variable of the scopes at pc whose frame location covers ea (frame base cfa, stack
 * pointer sp), else the frame itself: {stack:FUNCTION}. */
static void name_in_frame(Dwarf_Die *scopes, int ns, uint64_t pc, uint64_t cfa, uint64_t sp,
                          const uint64_t *rbp, uint64_t ea, sym_dref_t *out)
{
    int fb_cfa = frame_base_is_cfa(scopes, ns);
    for (int i = 0; i < ns; i++) {
        Dwarf_Die v;
        if (dwarf_child(&scopes[i], &v) != 0)
            continue;
        do {
            int tag = dwarf_tag(&v);
            if (tag != DW_TAG_variable && tag != DW_TAG_formal_parameter)
                continue;
            Dwarf_Attribute a;
            Dwarf_Op *ops;
            size_t n;
            Dwarf_Die t;
            if (!dwarf_attr_integrate(&v, DW_AT_location, &a) ||
                dwarf_getlocation_addr(&a, pc, &ops, &n, 1) != 1 || n != 1 || !type_of(&v, &t))
                continue;
            uint64_t at;
            if (ops[0].atom == DW_OP_fbreg && fb_cfa)
                at = cfa;
            else if (ops[0].atom == DW_OP_breg7)
                at = sp;
            else if (ops[0].atom == DW_OP_breg6 && rbp)
                at = *rbp;
            else
                continue;
            uint64_t start = at + (uint64_t)(int64_t)ops[0].number;
            uint64_t sz = size_of(&t);
            if (ea >= start && ea - start < (sz ? sz : 1)) {
                const char *nm = die_name(&v);
                snprintf(out->var, sizeof out->var, "%s", nm ? nm : "");
                name_object(out, &t, nm, ea - start, SYM_DATA_LOCAL);
                return;
            }
        } while (dwarf_siblingof(&v, &v) == 0);
    }
    memset(out, 0, sizeof *out);
    sbuf_t b = { out->desc, 0, sizeof out->desc, 0 };
    put(&b, "{stack:");
    put(&b, scopes_function(scopes, ns));
    put(&b, "}");
    mark(out, &b);
    out->kind = SYM_DATA_STACK;
    out->var_offset = cfa - ea;
}

/* Does the frame at pc leave rbp as its caller had it (call-frame information: same value)? */
static int rbp_same(obj_data_t *o, uint64_t pc)
{
    Dwarf_CFI *cfis[2] = { o->cfi_elf, o->cfi_dw };
    for (int i = 0; i < 2; i++) {
        Dwarf_Frame *fr;
        if (!cfis[i] || dwarf_cfi_addrframe(cfis[i], pc, &fr) != 0)
            continue;
        Dwarf_Op mem[3], *ops = NULL;
        size_t n = 1;
        int rc = dwarf_frame_register(fr, 6, mem, &ops, &n);
        free(fr);
        return rc == 0 && n == 0 && ops == NULL;
    }
    return 0;
}

int sym_data_rbp_kept(sym_data_t *d, uint32_t obj, uint64_t pc)
{
    Dwarf *dw;
    Elf *elf;
    obj_data_t *o = data_of(d, obj, &dw, &elf);
    return o && rbp_same(o, pc);
}

int sym_data_cfa(sym_data_t *d, uint32_t obj, const sym_dquery_t *q, uint64_t *cfa)
{
    Dwarf *dw;
    Elf *elf;
    obj_data_t *o = data_of(d, obj, &dw, &elf);
    return o && (o->cfi_elf || o->cfi_dw) && sample_cfa(o, q, cfa);
}

int sym_data_caller_frame(sym_data_t *d, uint32_t obj, uint64_t pc, uint64_t sp, uint64_t ea,
                          uint64_t *rbp, int *rbp_ok, uint64_t *cfa, sym_dref_t *out)
{
    memset(out, 0, sizeof *out);
    Dwarf *dw;
    Elf *elf;
    obj_data_t *o = data_of(d, obj, &dw, &elf);
    int reg;
    int64_t off;
    /* an rsp-based frame is placed from its callee's CFA; a frame-pointer frame from rbp, when
     * the frames below it left rbp alone */
    if (!o || cfa_rule(o, pc, &reg, &off) || !(reg == 7 || (reg == 6 && *rbp_ok)))
        return -1;
    *cfa = (reg == 7 ? sp : *rbp) + (uint64_t)off;
    int fp_ok = *rbp_ok;
    *rbp_ok = *rbp_ok && rbp_same(o, pc); /* for the next caller */
    if (*cfa < sp)
        return -1;
    if (ea >= *cfa)
        return 0;
    Dwarf_Die *cu = sym_dwarf_cu(d->sym, obj, pc);
    Dwarf_Die *scopes = NULL;
    int ns = cu ? scopes_at(cu, pc, &scopes) : 0;
    if (ns > 0) {
        name_in_frame(scopes, ns, pc, *cfa, sp, fp_ok ? rbp : NULL, ea, out);
    } else { /* no DWARF for the caller: its frame still is the object */
        sbuf_t b = { out->desc, 0, sizeof out->desc, 0 };
        put(&b, "{stack:-}");
        mark(out, &b);
        out->kind = SYM_DATA_STACK;
    }
    free(scopes);
    return 1;
}

/* ---- naming ---------------------------------------------------------------------------------- */

void sym_data_at(sym_data_t *d, uint32_t obj, const sym_dquery_t *q, sym_dref_t *out)
{
    memset(out, 0, sizeof *out);
    Dwarf *dw;
    Elf *elf;
    obj_data_t *o = data_of(d, obj, &dw, &elf);
    Dwarf_Die *cu = sym_dwarf_cu(d->sym, obj, q->pc);
    if (!dw || !cu || !o) {
        out->reason = EXP_DUNK_NO_DEBUG;
        return;
    }
    const bt_operand_t *op = &q->op;
    if ((op->base == BT_REG_RIP || op->base == BT_REG_NONE) && op->index == BT_REG_NONE &&
        !op->fs && !op->gs) {
        if (q->has_addr)
            sym_data_static(d, obj, q->addr, out);
        else
            out->reason = EXP_DUNK_NO_VA;
        return;
    }
    if (op->fs && op->base == BT_REG_NONE && op->index == BT_REG_NONE && q->has_ea && q->has_tp &&
        o->tls_size) {
        /* x86-64 static TLS, local-exec (%fs:disp, the form only the executable's own code
         * uses): the executable's block ends at the thread pointer */
        uint64_t blk = (o->tls_size + o->tls_align - 1) / o->tls_align * o->tls_align;
        uint64_t in = q->ea - q->tp + blk; /* wraps to the offset when ea is below tp */
        out->reason = EXP_DUNK_UNDETERMINABLE;
        if (in < o->tls_size && o->ntls)
            lookup(dw, o->tls, o->ntls, in, SYM_DATA_TLS, out);
        return;
    }
    if (op->fs || op->gs) { /* a thread-local whose address is not known, or of a library */
        out->reason = EXP_DUNK_UNDETERMINABLE;
        return;
    }
    Dwarf_Die *scopes = NULL;
    int ns = scopes_at(cu, q->pc, &scopes);
    int found = ns > 0 && (frame_object(o, scopes, ns, q, out) ||
                           scope_variable(o, scopes, ns, q, out));
    free(scopes);
    if (found)
        return;
    if (q->has_addr) { /* an address register that holds no variable: static data still is */
        sym_data_static(d, obj, q->addr, out);
        if (!out->reason)
            return;
    }
    memset(out, 0, sizeof *out);
    /* a frame slot no variable has is a compiler temporary (spill); any other register: the
     * DWARF describes no variable in it at this PC */
    out->reason = op->base == 6 || op->base == 7 ? EXP_DUNK_UNDETERMINABLE : EXP_DUNK_NO_DESCRIPTOR;
}

/* ---- thread-locals by their offset in the object's block ------------------------------------ */

int sym_data_tls(sym_data_t *d, uint32_t obj, uint64_t off, sym_dref_t *out)
{
    memset(out, 0, sizeof *out);
    Dwarf *dw;
    Elf *elf;
    obj_data_t *o = data_of(d, obj, &dw, &elf);
    if (!dw || !o || off >= o->tls_size)
        return 0;
    out->reason = EXP_DUNK_UNDETERMINABLE; /* in the block, but no variable covers it */
    lookup(dw, o->tls, o->ntls, off, SYM_DATA_TLS, out);
    return 1;
}

/* ---- heap blocks: the type from the allocating code ----------------------------------------- */

int sym_data_ptr_in_reg(sym_data_t *d, uint32_t obj, uint64_t pc, int reg, uint64_t *type)
{
    Dwarf *dw;
    Elf *elf;
    obj_data_t *o = data_of(d, obj, &dw, &elf);
    Dwarf_Die *cu = sym_dwarf_cu(d->sym, obj, pc);
    if (!dw || !cu || !o || reg < 0 || reg > 31)
        return 0;
    Dwarf_Die *scopes = NULL;
    int ns = scopes_at(cu, pc, &scopes);
    int found = 0;
    for (int i = 0; i < ns && !found; i++) {
        Dwarf_Die v;
        if (dwarf_child(&scopes[i], &v) != 0)
            continue;
        do {
            int tag = dwarf_tag(&v);
            if (tag != DW_TAG_variable && tag != DW_TAG_formal_parameter)
                continue;
            Dwarf_Attribute a;
            Dwarf_Op *ops;
            size_t n;
            Dwarf_Die t, pt, pointee;
            if (!dwarf_attr_integrate(&v, DW_AT_location, &a) ||
                dwarf_getlocation_addr(&a, pc, &ops, &n, 1) != 1 || n != 1 ||
                !((ops[0].atom == DW_OP_reg0 + (unsigned)reg) ||
                  (ops[0].atom == DW_OP_regx && ops[0].number == (Dwarf_Word)reg)))
                continue;
            if (!type_of(&v, &t) || !strip(&t, &pt) || dwarf_tag(&pt) != DW_TAG_pointer_type ||
                !type_of(&pt, &pointee) || !size_of(&pointee))
                continue;
            *type = dwarf_dieoffset(&pointee);
            found = 1;
            break;
        } while (dwarf_siblingof(&v, &v) == 0);
    }
    free(scopes);
    return found;
}

void sym_data_typed(sym_data_t *d, uint32_t obj, uint64_t type, uint64_t off, sym_dref_t *out)
{
    memset(out, 0, sizeof *out);
    out->reason = EXP_DUNK_UNDETERMINABLE;
    Dwarf *dw;
    Elf *elf;
    data_of(d, obj, &dw, &elf);
    Dwarf_Die t;
    if (!dw || !dwarf_offdie(dw, type, &t))
        return;
    uint64_t sz = size_of(&t);
    name_object(out, &t, NULL, sz ? off % sz : off, SYM_DATA_POINTEE);
}

/* ---- layouts ---------------------------------------------------------------------------------- */

static int cmp_member(const void *a, const void *b)
{
    const sym_member_t *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int sym_data_layout(sym_data_t *d, uint32_t obj, uint64_t agg, sym_member_t **members, size_t *n,
                    uint64_t *size)
{
    *members = NULL;
    *n = 0;
    Dwarf *dw;
    Elf *elf;
    data_of(d, obj, &dw, &elf);
    Dwarf_Die t, m;
    Dwarf_Word sz;
    if (!dw || !dwarf_offdie(dw, agg, &t) || !is_aggregate_tag(dwarf_tag(&t)) ||
        dwarf_aggregate_size(&t, &sz) != 0)
        return -1;
    *size = sz;
    size_t cap = 0;
    if (dwarf_child(&t, &m) != 0)
        return 0;
    do {
        if (dwarf_tag(&m) != DW_TAG_member)
            continue;
        Dwarf_Attribute a;
        Dwarf_Word loc = 0;
        if (dwarf_attr(&m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &loc) != 0)
            continue;
        Dwarf_Die mt;
        if (!type_of(&m, &mt))
            continue;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            sym_member_t *nm = realloc(*members, nc * sizeof *nm);
            if (!nm) {
                free(*members);
                *members = NULL;
                *n = 0;
                return -1;
            }
            *members = nm;
            cap = nc;
        }
        sym_member_t *x = &(*members)[(*n)++];
        sbuf_t b = { x->desc, 0, sizeof x->desc, 0 };
        x->desc[0] = 0;
        level(&b, &mt, 1, dwarf_diename(&m));
        x->offset = loc;
        x->size = size_of(&mt);
    } while (dwarf_siblingof(&m, &m) == 0);
    if (*n)
        qsort(*members, *n, sizeof **members, cmp_member);
    return 0;
}
