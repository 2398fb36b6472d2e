/*
 * symbols_vars.h - the variables of load objects: which global or static variable holds a data
 * address (the synchronization objects of -sync_objects are named by them). Part of the symbols
 * module (the ELF reader beside symbols.c): it reads the data symbols (STT_OBJECT) of an
 * object's .symtab, of its separate debug file found by build-id, or of its .dynsym, lazily, the
 * first time an address of that object is asked for.
 *
 * A sym_vars_t belongs to its caller and refers to a sym_ctx_t (its objects, by index), which
 * must outlive it. Not thread-safe. Lookups never fail: NULL means no variable covers the
 * address (heap or stack memory, a stripped object without debug file, a missing file).
 */
#ifndef TALLY_ANALYZER_SYMBOLS_VARS_H
#define TALLY_ANALYZER_SYMBOLS_VARS_H

#include <stdint.h>

#include "analyzer/symbols.h"

typedef struct sym_vars sym_vars_t;

sym_vars_t *sym_vars_new(sym_ctx_t *s);
void sym_vars_free(sym_vars_t *v);
/* The variable of object obj (sym_object_add) holding ELF address addr, and addr's offset in it. */
const char *sym_var_at(sym_vars_t *v, uint32_t obj, uint64_t addr, uint64_t *offset);

#endif
