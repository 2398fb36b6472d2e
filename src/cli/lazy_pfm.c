/*
 * lazy_pfm.c - the libpfm4 functions hwc.c calls, forwarded to the library loaded at the first
 * call (base/lazylib.h): only collections with counters, and their lists, load it. Without it
 * pfm_initialize fails (hwc.c then knows no libpfm4 names and says why: lazy_pfm_why()).
 */
#define _GNU_SOURCE
#include <perfmon/pfmlib_perf_event.h>

#include "analyzer/lazyload.h"
#include "base/lazylib.h"


static const char *const names[] = { "pfm_initialize", "pfm_strerror", "pfm_get_pmu_info",
                                     "pfm_get_event_next", "pfm_get_event_info",
                                     "pfm_get_os_event_encoding", "pfm_get_event_attr_info" };
static struct {
    pfm_err_t (*initialize)(void);
    const char *(*strerror)(int);
    pfm_err_t (*get_pmu_info)(pfm_pmu_t, pfm_pmu_info_t *);
    int (*get_event_next)(int);
    pfm_err_t (*get_event_info)(int, pfm_os_t, pfm_event_info_t *);
    pfm_err_t (*get_os_event_encoding)(const char *, int, pfm_os_t, void *);
    pfm_err_t (*get_event_attr_info)(int, int, pfm_os_t, pfm_event_attr_info_t *);
} fn;
static lazylib_t lib = LAZYLIB(TALLY_SONAME_PFM, names, &fn);

const char *lazy_pfm_why(void)
{
    return lib.why;
}

pfm_err_t pfm_initialize(void)
{
    return lazylib_get(&lib) ? PFM_ERR_NOINIT : fn.initialize();
}

/* (the others are called only after pfm_initialize succeeded: the library is loaded) */
const char *pfm_strerror(int code)
{
    return lazylib_get(&lib) ? "libpfm4 is not loaded" : fn.strerror(code);
}

pfm_err_t pfm_get_pmu_info(pfm_pmu_t pmu, pfm_pmu_info_t *output)
{
    return lazylib_get(&lib) ? PFM_ERR_NOINIT : fn.get_pmu_info(pmu, output);
}

int pfm_get_event_next(int idx)
{
    return lazylib_get(&lib) ? -1 : fn.get_event_next(idx);
}

pfm_err_t pfm_get_event_info(int idx, pfm_os_t os, pfm_event_info_t *output)
{
    return lazylib_get(&lib) ? PFM_ERR_NOINIT : fn.get_event_info(idx, os, output);
}

pfm_err_t pfm_get_os_event_encoding(const char *str, int dfl_plm, pfm_os_t os, void *args)
{
    return lazylib_get(&lib) ? PFM_ERR_NOINIT : fn.get_os_event_encoding(str, dfl_plm, os, args);
}

pfm_err_t pfm_get_event_attr_info(int eidx, int aidx, pfm_os_t os, pfm_event_attr_info_t *output)
{
    return lazylib_get(&lib) ? PFM_ERR_NOINIT : fn.get_event_attr_info(eidx, aidx, os, output);
}
