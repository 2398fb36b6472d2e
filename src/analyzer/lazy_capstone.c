/*
 * lazy_capstone.c - capstone's functions that tally calls, forwarded to the library loaded at the
 * first call (base/lazylib.h): only the commands that disassemble load it. Without it cs_open
 * fails with CS_ERR_MEM (callers already handle a failing cs_open: no disassembly) and
 * lazy_capstone_why() says why.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>

#include "analyzer/lazyload.h"
#include "base/lazylib.h"


static const char *const names[] = { "cs_open", "cs_close", "cs_option", "cs_disasm", "cs_free",
                                     "cs_insn_group", "cs_regs_access" };
static struct {
    cs_err (*open)(cs_arch, cs_mode, csh *);
    cs_err (*close)(csh *);
    cs_err (*option)(csh, cs_opt_type, size_t);
    size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
    void (*free)(cs_insn *, size_t);
    bool (*insn_group)(csh, const cs_insn *, unsigned int);
    cs_err (*regs_access)(csh, const cs_insn *, cs_regs, uint8_t *, cs_regs, uint8_t *);
} fn;
static lazylib_t lib = LAZYLIB(TALLY_SONAME_CAPSTONE, names, &fn);

const char *lazy_capstone_why(void)
{
    return lib.why;
}

cs_err cs_open(cs_arch arch, cs_mode mode, csh *handle)
{
    return lazylib_get(&lib) ? CS_ERR_MEM : fn.open(arch, mode, handle);
}

/* (the others are called only with a handle cs_open gave: the library is loaded) */
cs_err cs_close(csh *handle)
{
    return lazylib_get(&lib) ? CS_ERR_HANDLE : fn.close(handle);
}

cs_err cs_option(csh handle, cs_opt_type type, size_t value)
{
    return lazylib_get(&lib) ? CS_ERR_HANDLE : fn.option(handle, type, value);
}

size_t cs_disasm(csh handle, const uint8_t *code, size_t size, uint64_t address, size_t count,
                 cs_insn **insn)
{
    return lazylib_get(&lib) ? 0 : fn.disasm(handle, code, size, address, count, insn);
}

void cs_free(cs_insn *insn, size_t count)
{
    if (!lazylib_get(&lib))
        fn.free(insn, count);
}

bool cs_insn_group(csh handle, const cs_insn *insn, unsigned int group_id)
{
    return !lazylib_get(&lib) && fn.insn_group(handle, insn, group_id);
}

cs_err cs_regs_access(csh handle, const cs_insn *insn, cs_regs regs_read, uint8_t *nread,
                      cs_regs regs_write, uint8_t *nwrite)
{
    return lazylib_get(&lib) ? CS_ERR_HANDLE
                             : fn.regs_access(handle, insn, regs_read, nread, regs_write, nwrite);
}
