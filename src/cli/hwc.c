/*
 * hwc.c - counter names, encodings and lists for `tally collect -h`; see hwc.h.
 *
 * Sections: the tables (aliases, software events); probing; naming; breakpoints; parsing;
 * encoding for the collector; the CPUs' frequency; the lists.
 */
#define _GNU_SOURCE
#include "hwc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/hw_breakpoint.h>
#include <libelf.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "analyzer/engine.h"
#include "analyzer/lazyload.h"
#include "base/esc.h"

/* ---- the tables ------------------------------------------------------------------------------ */

/* Default intervals: on, the seed's default for raw counters, and hi / lo ten times more or fewer
 * samples. Primes, so that a sample does not keep landing on the same iteration of a loop. */
#define ON_CYCLES 10000019ull
#define ON_INSTS 10000019ull
#define ON_FREQ 100003ull  /* frequent events: branches, cache references */
#define ON_RARE 10007ull   /* rare events: misses */
#define ON_RAW 1000003ull

typedef struct known {
    const char *alias, *other; /* other: a second spelling, or NULL */
    uint32_t type;
    uint64_t config;
    const char *raw, *desc, *unit;
    uint64_t on;
    unsigned flags;
} known_t;

#define CACHE(c, op, res) \
    ((uint64_t)PERF_COUNT_HW_CACHE_##c | ((uint64_t)PERF_COUNT_HW_CACHE_OP_##op << 8) | \
     ((uint64_t)PERF_COUNT_HW_CACHE_RESULT_##res << 16))

static const known_t aliases[] = {
    { "cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
      "PERF_COUNT_HW_CPU_CYCLES", "CPU Cycles", "CPU-cycles", ON_CYCLES, HWC_CYCLES },
    { "insts", "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS,
      "PERF_COUNT_HW_INSTRUCTIONS", "Instructions Executed", "events", ON_INSTS, 0 },
    { "ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES,
      "PERF_COUNT_HW_REF_CPU_CYCLES", "Reference Cycles (constant rate)", "CPU-cycles",
      ON_CYCLES, HWC_CYCLES },
    { "branches", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
      "PERF_COUNT_HW_BRANCH_INSTRUCTIONS", "Branch Instructions", "events", ON_FREQ, 0 },
    { "branch-misses", "brm", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES,
      "PERF_COUNT_HW_BRANCH_MISSES", "Branch Mispredictions", "events", ON_RARE, 0 },
    { "cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES,
      "PERF_COUNT_HW_CACHE_REFERENCES", "Last-Level Cache References", "events", ON_FREQ, 0 },
    { "cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES,
      "PERF_COUNT_HW_CACHE_MISSES", "Last-Level Cache Misses", "events", ON_RARE, 0 },
    { "stalled-cycles-frontend", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
      "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND", "Front-End Stall Cycles", "CPU-cycles",
      ON_CYCLES, HWC_CYCLES },
    { "stalled-cycles-backend", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
      "PERF_COUNT_HW_STALLED_CYCLES_BACKEND", "Back-End Stall Cycles", "CPU-cycles", ON_CYCLES,
      HWC_CYCLES },
    { "l1d-load-misses", "dcm", PERF_TYPE_HW_CACHE, CACHE(L1D, READ, MISS),
      "PERF_COUNT_HW_CACHE_L1D:READ:MISS", "L1 D$ Load Misses", "load events", ON_RARE, 0 },
    { "l1d-loads", NULL, PERF_TYPE_HW_CACHE, CACHE(L1D, READ, ACCESS),
      "PERF_COUNT_HW_CACHE_L1D:READ:ACCESS", "L1 D$ Loads", "load events", ON_FREQ, 0 },
    { "l1i-load-misses", "icm", PERF_TYPE_HW_CACHE, CACHE(L1I, READ, MISS),
      "PERF_COUNT_HW_CACHE_L1I:READ:MISS", "L1 I$ Misses", "events", ON_RARE, 0 },
    { "llc-load-misses", "ecm", PERF_TYPE_HW_CACHE, CACHE(LL, READ, MISS),
      "PERF_COUNT_HW_CACHE_LL:READ:MISS", "Last-Level Cache Load Misses", "load events",
      ON_RARE, 0 },
    { "llc-store-misses", NULL, PERF_TYPE_HW_CACHE, CACHE(LL, WRITE, MISS),
      "PERF_COUNT_HW_CACHE_LL:WRITE:MISS", "Last-Level Cache Store Misses", "store events",
      ON_RARE, 0 },
    { "dtlb-load-misses", "dtlbm", PERF_TYPE_HW_CACHE, CACHE(DTLB, READ, MISS),
      "PERF_COUNT_HW_CACHE_DTLB:READ:MISS", "Data TLB Load Misses", "load events", ON_RARE, 0 },
    { "itlb-load-misses", "itlbm", PERF_TYPE_HW_CACHE, CACHE(ITLB, READ, MISS),
      "PERF_COUNT_HW_CACHE_ITLB:READ:MISS", "Instruction TLB Misses", "events", ON_RARE, 0 },
};

/* The kernel's software events: counted by the kernel, so they work without a PMU. */
static const known_t software[] = {
    { "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
      "PERF_COUNT_SW_TASK_CLOCK", "Task Clock (CPU time of the thread)", "ns", 10000000,
      HWC_TIME },
    { "page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
      "PERF_COUNT_SW_PAGE_FAULTS", "Page Faults", "events", 10, 0 },
    { "minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN,
      "PERF_COUNT_SW_PAGE_FAULTS_MIN", "Minor Page Faults (no I/O)", "events", 10, 0 },
    { "major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
      "PERF_COUNT_SW_PAGE_FAULTS_MAJ", "Major Page Faults (I/O)", "events", 1, 0 },
    { "context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
      "PERF_COUNT_SW_CONTEXT_SWITCHES", "Context Switches", "events", 1, 0 },
    { "cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS,
      "PERF_COUNT_SW_CPU_MIGRATIONS", "CPU Migrations", "events", 1, 0 },
    { "alignment-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS,
      "PERF_COUNT_SW_ALIGNMENT_FAULTS", "Alignment Faults", "events", 1, 0 },
};

/* Well-known aliases of a cache level the kernel has no generic event for: the CPU's own event,
 * the first candidate libpfm4 knows for this CPU (each candidate with what it counts there).
 * The codes: L2_RQSTS.DEMAND_DATA_RD_MISS is event 0x24 umask 0x21 on Intel since Haswell;
 * AMD's PMCx064 (core to L2 cacheable request access status) umask 0x08, LsRdBlkC, counts the
 * data cache's requests that miss the L2 on Zen 2 to Zen 4. */
typedef struct pfm_alias {
    const char *alias, *unit;
    uint64_t on;
    struct {
        const char *event, *desc;
    } cand[2];
} pfm_alias_t;

static const pfm_alias_t pfm_aliases[] = {
    { "l2-load-misses", "load events", ON_RARE,
      { { "L2_RQSTS:DEMAND_DATA_RD_MISS", "L2 Cache Data Load Misses" },
        { "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C",
          "L2 Cache Data Misses (loads, stores, prefetches)" } } },
};

#define NELEM(a) (sizeof(a) / sizeof *(a))

static int fail(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- probing --------------------------------------------------------------------------------- */

static int probe_real(const struct perf_event_attr *attr)
{
    struct perf_event_attr a = *attr;
    a.size = sizeof a;
    a.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

int (*hwc_probe)(const struct perf_event_attr *attr) = probe_real;

/* 0 when attr opens, with the kernel counted or (where that is not permitted) without. IBS
 * (ibs): no exclude_ flag at all, which its PMUs refuse (PERF_PMU_CAP_NO_EXCLUDE), as the
 * collector opens it. */
static int probe_pmu(struct perf_event_attr a, int ibs)
{
    if (ibs)
        return hwc_probe(&a);
    a.exclude_hv = 1;
    int rc = hwc_probe(&a);
    if (rc == -EACCES || rc == -EPERM) {
        a.exclude_kernel = 1;
        rc = hwc_probe(&a);
    }
    return rc;
}

static int probe_any(struct perf_event_attr a)
{
    return probe_pmu(a, 0);
}

static int pfm_ready(void)
{
    static int rc = -1;
    if (rc < 0)
        rc = pfm_initialize() == PFM_SUCCESS;
    return rc;
}

/* ---- naming ---------------------------------------------------------------------------------- */

/* The metric name of a counter: lower case, characters other than [a-z0-9_-] as '_', starting
 * with a letter, at most 63 characters. */
static void metric_name(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    if (!isalpha((unsigned char)*name) && n + 1 < cap)
        out[n++] = 'c';
    for (const char *s = name; *s && n + 1 < cap && n < 63; s++) {
        char c = (char)tolower((unsigned char)*s);
        out[n++] = (isalnum((unsigned char)c) || c == '-') ? c : '_';
    }
    while (n > 1 && out[n - 1] == '_')
        n--;
    out[n] = 0;
}

static const known_t *find_known(const known_t *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcasecmp(t[i].alias, name) || (t[i].other && !strcasecmp(t[i].other, name)))
            return &t[i];
    return NULL;
}

/* ---- breakpoints ----------------------------------------------------------------------------- */

/* The value and size of symbol sym in the ELF file path; *pie: the file is position independent
 * (addresses are relative to its load bias). 0, or -1 with why. */
static int elf_symbol(const char *path, const char *sym, uint64_t *value, uint64_t *size, int *pie,
                      char *why, size_t cap)
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(why, cap, "cannot read '%s' to find symbol '%s': %s", path, sym,
                    strerror(errno));
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    GElf_Ehdr eh;
    int found = 0;
    if (e && gelf_getehdr(e, &eh)) {
        *pie = eh.e_type == ET_DYN;
        for (int pass = 0; pass < 2 && !found; pass++) {
            Elf_Scn *scn = NULL;
            while (!found && (scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh;
                if (!gelf_getshdr(scn, &sh) ||
                    sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) || !sh.sh_entsize)
                    continue;
                Elf_Data *d = elf_getdata(scn, NULL);
                size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
                for (size_t i = 0; i < n; i++) {
                    GElf_Sym s;
                    if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
                        continue;
                    const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
                    if (nm && !strcmp(nm, sym) && GELF_ST_TYPE(s.st_info) != STT_TLS) {
                        *value = s.st_value;
                        *size = s.st_size;
                        found = 1;
                        break;
                    }
                }
            }
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    if (!found)
        return fail(why, cap, "no symbol '%s' in '%s' for the breakpoint (a global or static "
                    "variable of the program is needed; or give its address in hex)", sym, path);
    return 0;
}

/* mem:<address|symbol>[+<offset>][/<len>][:r|w|rw] */
static int parse_breakpoint(const char *spec, const char *program, hwc_counter_t *c, char *why,
                            size_t cap)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", spec + 4);
    unsigned bp_type = HW_BREAKPOINT_R | HW_BREAKPOINT_W;
    char *acc = strchr(buf, ':');
    if (acc) {
        *acc++ = 0;
        if (!strcmp(acc, "r"))
            bp_type = HW_BREAKPOINT_R;
        else if (!strcmp(acc, "w"))
            bp_type = HW_BREAKPOINT_W;
        else if (strcmp(acc, "rw") && strcmp(acc, "wr"))
            return fail(why, cap, "bad access '%s' in breakpoint '%s': use r, w or rw", acc, spec);
    }
    long len = 0;
    char *sl = strchr(buf, '/');
    if (sl) {
        *sl++ = 0;
        char *end;
        len = strtol(sl, &end, 10);
        if (*end || (len != 1 && len != 2 && len != 4 && len != 8))
            return fail(why, cap, "bad length '%s' in breakpoint '%s': a data breakpoint "
                        "watches 1, 2, 4 or 8 bytes", sl, spec);
    }
    uint64_t off = 0;
    char *plus = strchr(buf, '+');
    if (plus) {
        *plus++ = 0;
        char *end;
        errno = 0;
        off = strtoull(plus, &end, 0);
        if (errno || *end || !*plus)
            return fail(why, cap, "bad offset '%s' in breakpoint '%s'", plus, spec);
    }
    if (!*buf)
        return fail(why, cap, "breakpoint '%s' has no address: use mem:<address|symbol>", spec);
    uint64_t addr = 0, size = 0;
    int pie = 0;
    int is_hex_addr = buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');
    if (is_hex_addr) {
        char *end;
        errno = 0;
        addr = strtoull(buf, &end, 16);
        if (errno || *end)
            return fail(why, cap, "bad address '%s' in breakpoint '%s'", buf, spec);
    } else {
        if (!program)
            return fail(why, cap, "breakpoint '%s': a symbol needs the program", spec);
        if (elf_symbol(program, buf, &addr, &size, &pie, why, cap))
            return -1;
        if (!len) {
            if (off == 0 && (size == 1 || size == 2 || size == 4 || size == 8))
                len = (long)size;
            else
                return fail(why, cap, "breakpoint '%s': '%s' is %llu bytes and a data "
                            "breakpoint watches 1, 2, 4 or 8 aligned bytes; give the length, "
                            "e.g. mem:%s/8 (its first 8 bytes) or mem:%s+<offset>/<len>",
                            spec, buf, (unsigned long long)size, buf, buf);
        }
        addr += off;
    }
    if (!len)
        len = 8;
    if (addr % (uint64_t)len)
        return fail(why, cap, "breakpoint '%s': address 0x%llx is not aligned to its length %ld",
                    spec, (unsigned long long)addr, len);
    c->attr.type = PERF_TYPE_BREAKPOINT;
    c->attr.bp_type = bp_type;
    c->attr.bp_addr = addr;
    c->attr.bp_len = (uint64_t)len;
    if (pie)
        c->flags |= HWC_BP_EXE;
    struct stat st;
    if (!is_hex_addr && stat(program, &st) == 0) { /* the program whose symbol it is */
        c->prog_dev = (uint64_t)st.st_dev;
        c->prog_ino = (uint64_t)st.st_ino;
    }
    snprintf(c->desc, sizeof c->desc, "Data Breakpoint (%s)",
             bp_type == HW_BREAKPOINT_R ? "reads" : bp_type == HW_BREAKPOINT_W ? "writes"
                                                                             : "reads and writes");
    snprintf(c->unit, sizeof c->unit, "events");
    c->interval = 1;
    return 0;
}

/* ---- parsing --------------------------------------------------------------------------------- */

static int is_interval(const char *t)
{
    if (!strcmp(t, "on") || !strcmp(t, "hi") || !strcmp(t, "lo") || !strcmp(t, "high") ||
        !strcmp(t, "low"))
        return 1;
    if (!*t)
        return 0;
    for (const char *s = t; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static int set_interval(hwc_counter_t *c, const char *t, char *why, size_t cap)
{
    uint64_t on = c->interval;
    if (!strcmp(t, "on"))
        return 0;
    if (!strcmp(t, "hi") || !strcmp(t, "high")) {
        c->interval = on / 10 ? on / 10 : 1;
        return 0;
    }
    if (!strcmp(t, "lo") || !strcmp(t, "low")) {
        c->interval = on * 10;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(t, &end, 10);
    if (errno || *end || v == 0 || v > (1ull << 62))
        return fail(why, cap, "bad interval '%s' for counter '%s': use on, hi, lo or a number of "
                    "events from 1", t, c->name);
    c->interval = v;
    return 0;
}

/* Which PMU libpfm4 sees as this CPU's (for messages): "" when none. */
static void cpu_pmus(char *out, size_t cap)
{
    out[0] = 0;
    if (!pfm_ready())
        return;
    int i;
    size_t n = 0;
    pfm_for_all_pmus(i) {
        pfm_pmu_info_t pi;
        memset(&pi, 0, sizeof pi);
        pi.size = sizeof pi;
        if (pfm_get_pmu_info(i, &pi) != PFM_SUCCESS || !pi.is_present ||
            pi.pmu == PFM_PMU_PERF_EVENT || pi.pmu == PFM_PMU_PERF_EVENT_RAW)
            continue;
        int w = snprintf(out + n, cap - n, "%s%s", n ? ", " : "", pi.name);
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
    }
}

static int by_libpfm(const char *name, hwc_counter_t *c, char *why, size_t cap)
{
    if (!pfm_ready())
        return *lazy_pfm_why() ? fail(why, cap, "libpfm4 cannot be loaded: %s", lazy_pfm_why())
                               : fail(why, cap, "libpfm4 could not be initialized");
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    pfm_perf_encode_arg_t arg;
    memset(&arg, 0, sizeof arg);
    arg.attr = &a;
    arg.size = sizeof arg;
    char *fstr = NULL;
    arg.fstr = &fstr;
    int rc = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    if (rc != PFM_SUCCESS) {
        char pmus[256];
        cpu_pmus(pmus, sizeof pmus);
        return fail(why, cap, "unknown counter '%s': not a well-known alias, a software event, "
                    "a raw code (r<hex>), a breakpoint (mem:<address|symbol>) or an event "
                    "libpfm4 knows for this CPU%s%s%s (%s); 'tally collect -h' lists them",
                    name, *pmus ? " (" : "", pmus, *pmus ? ")" : "", pfm_strerror(rc));
    }
    /* libpfm4's modifiers that set fields tally does not pass on (only type and configs
     * travel to the collector, which sets the rest itself) are refused, not dropped: the
     * event would be counted otherwise than asked */
    if (a.precise_ip && !(c->flags & HWC_DATA))
        return free(fstr), fail(why, cap, "counter '%s': precise= asks for the hardware's "
                                "sampled instruction and data address; give it with '+' "
                                "(+%s)", name, name);
    const char *mod = a.sample_period || a.freq ? "period= or freq= (give the interval after "
                                                    "a comma: EVENT,INTERVAL)"
                      : a.exclude_user ? "k (kernel only: tally counts the program in user mode, "
                                         "and in the kernel where permitted)"
                      : a.exclusive || a.pinned ? "excl or pinned (not supported)"
                                                : NULL;
    if (mod) {
        free(fstr);
        return fail(why, cap, "counter '%s': tally does not take libpfm4's modifier %s; "
                    "give the event without it", name, mod);
    }
    c->attr.type = a.type;
    c->attr.config = a.config;
    c->attr.config1 = a.config1;
    c->attr.config2 = a.config2;
    c->attr.precise_ip = a.precise_ip;
    pfm_event_info_t ei;
    memset(&ei, 0, sizeof ei);
    ei.size = sizeof ei;
    pfm_pmu_info_t pi;
    memset(&pi, 0, sizeof pi);
    pi.size = sizeof pi;
    if (pfm_get_event_info(arg.idx, PFM_OS_PERF_EVENT, &ei) == PFM_SUCCESS &&
        pfm_get_pmu_info(ei.pmu, &pi) == PFM_SUCCESS && pi.type == PFM_PMU_TYPE_UNCORE)
        c->flags |= HWC_NPR;
    snprintf(c->desc, sizeof c->desc, "%s", fstr ? fstr : name);
    char *colon = strchr(c->desc, ':');
    if (colon && colon[1] == ':' && (colon = strchr(colon + 2, ':')) && (colon = strchr(colon + 1, ':')))
        *colon = 0; /* keep PMU::EVENT:UMASK, not the modifiers libpfm4 adds */
    int cyc = strcasestr(name, "cycles") != NULL || strcasestr(name, "cpu_clk") != NULL;
    snprintf(c->unit, sizeof c->unit, "%s", (c->flags & HWC_NPR) ? "not-program-related events"
                                            : cyc ? "CPU-cycles" : "events");
    if (cyc && !(c->flags & HWC_NPR))
        c->flags |= HWC_CYCLES;
    c->interval = ON_RAW;
    free(fstr);
    if ((c->flags & HWC_DATA) && !c->attr.precise_ip && !(c->flags & HWC_NPR) &&
        ei.is_precise) {
        /* the event has a precise-capable unit mask: is it the one asked for? libpfm4 checks
         * its umask's is_precise when it encodes precise= */
        char pname[300];
        struct perf_event_attr pa;
        memset(&pa, 0, sizeof pa);
        pfm_perf_encode_arg_t parg;
        memset(&parg, 0, sizeof parg);
        parg.attr = &pa;
        parg.size = sizeof parg;
        if ((size_t)snprintf(pname, sizeof pname, "%s:precise=2", name) < sizeof pname &&
            pfm_get_os_event_encoding(pname, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &parg) ==
                PFM_SUCCESS && pa.precise_ip == 2 && pa.config == c->attr.config)
            c->attr.precise_ip = 2;
    }
    c->flags = (c->flags & ~(unsigned)HWC_PRECISE) |
               ((unsigned)c->attr.precise_ip << EXP_CSET_PRECISE_SHIFT);
    return 0;
}

/* ---- AMD IBS --------------------------------------------------------------------------------- */

const char *hwc_ibs_op_type_path = "/sys/bus/event_source/devices/ibs_op/type";

#define ON_IBS 100000ull /* cycles between tagged ops: a multiple of 16, as IBS counts */

/* ibs_op: the IBS op PMU of AMD CPUs (the kernel's dynamic PMU type), config 0: an op is tagged
 * every interval cycles; its sample's IP is the op's, its ADDR the op's data address when it
 * accessed memory (Linux 6.1 and later fill it from IbsDcLinAd). */
static int by_ibs(hwc_counter_t *c, char *why, size_t cap)
{
    FILE *f = fopen(hwc_ibs_op_type_path, "r");
    unsigned type = 0;
    int ok = f && fscanf(f, "%u", &type) == 1;
    if (f)
        fclose(f);
    if (!ok)
        return fail(why, cap, "counter '%s' is AMD's IBS op sampling, which this kernel does not "
                    "expose (%s: %s; it needs an AMD CPU with IBS, Family 10h or later, and not "
                    "a virtual machine without it); other counters' data addresses are "
                    "backtracked, see 'tally collect -h'", c->name, hwc_ibs_op_type_path,
                    f ? "not a number" : strerror(errno));
    c->attr.type = type;
    c->attr.config = 0;
    c->flags |= HWC_IBS;
    snprintf(c->desc, sizeof c->desc, "IBS Op Sampling (an op tagged every interval cycles)");
    snprintf(c->unit, sizeof c->unit, "CPU-cycles");
    c->interval = ON_IBS;
    return 0;
}

/* A libpfm4-backed alias: the first candidate this CPU has. The counter is named as given; its
 * libpfm4 event (PMU::EVENT:UMASK) in event[cap] when not NULL. */
static int by_pfm_alias(const pfm_alias_t *k, const char *given, hwc_counter_t *c, char *event,
                        size_t ecap, char *why, size_t cap)
{
    for (size_t i = 0; i < NELEM(k->cand) && k->cand[i].event; i++) {
        hwc_counter_t t = *c;
        char w[512];
        if (by_libpfm(k->cand[i].event, &t, w, sizeof w))
            continue;
        if (event)
            snprintf(event, ecap, "%s", t.desc);
        snprintf(t.desc, sizeof t.desc, "%s", k->cand[i].desc);
        snprintf(t.unit, sizeof t.unit, "%s", k->unit);
        t.interval = k->on;
        t.flags &= ~(unsigned)HWC_CYCLES;
        *c = t;
        return 0;
    }
    if (!pfm_ready())
        return *lazy_pfm_why() ? fail(why, cap, "counter '%s' needs libpfm4, which cannot be "
                                      "loaded: %s", given, lazy_pfm_why())
                               : fail(why, cap, "counter '%s' needs libpfm4, which could not be "
                                      "initialized", given);
    char pmus[256];
    cpu_pmus(pmus, sizeof pmus);
    return fail(why, cap, "counter '%s' has no event on this CPU (%s): libpfm4 knows neither %s "
                "nor %s here; 'tally collect -h' lists the CPU's events", given,
                *pmus ? pmus : "not known to libpfm4", k->cand[0].event, k->cand[1].event);
}

static const pfm_alias_t *find_pfm_alias(const char *name)
{
    for (size_t i = 0; i < NELEM(pfm_aliases); i++)
        if (!strcasecmp(pfm_aliases[i].alias, name))
            return &pfm_aliases[i];
    return NULL;
}

static int parse_one(const char *tok, const char *program, hwc_counter_t *c, char *why, size_t cap)
{
    memset(c, 0, sizeof *c);
    if (*tok == '+') {
        c->flags |= HWC_DATA;
        tok++;
    }
    if (!*tok)
        return fail(why, cap, "a counter name is missing after '+'");
    if (strlen(tok) >= sizeof c->name || strchr(tok, ';'))
        return fail(why, cap, "bad counter name '%.40s...'", tok);
    snprintf(c->name, sizeof c->name, "%s", tok);
    /* gprofng's register field, alias/N (its lists' alias[/{0|1}]): taken and ignored, as
     * perf_event chooses the registers. Not for a breakpoint, whose /N is its length. */
    char *slash = strncmp(tok, "mem:", 4) ? strrchr(c->name, '/') : NULL;
    if (slash && slash > c->name && slash[1] && strspn(slash + 1, "0123456789") == strlen(slash + 1))
        *slash = 0;
    tok = c->name;
    const known_t *k = find_known(aliases, NELEM(aliases), tok);
    if (!k)
        k = find_known(software, NELEM(software), tok);
    if (k) {
        c->attr.type = k->type;
        c->attr.config = k->config;
        snprintf(c->desc, sizeof c->desc, "%s", k->desc);
        snprintf(c->unit, sizeof c->unit, "%s", k->unit);
        c->interval = k->on;
        c->flags |= k->flags;
        /* the name stays as given (instructions, cs): the metric is named after it */
    } else if (!strcasecmp(tok, "ibs_op")) {
        if (by_ibs(c, why, cap))
            return -1;
    } else if (find_pfm_alias(tok)) {
        if (by_pfm_alias(find_pfm_alias(tok), tok, c, NULL, 0, why, cap))
            return -1;
    } else if (!strncmp(tok, "mem:", 4)) {
        if (parse_breakpoint(tok, program, c, why, cap))
            return -1;
    } else if ((tok[0] == 'r' && tok[1]) || (tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X'))) {
        const char *hex = tok[0] == 'r' ? tok + 1 : tok + 2;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(hex, &end, 16);
        int ok = *hex && !errno && !*end;
        for (const char *s = hex; ok && *s; s++)
            ok = isxdigit((unsigned char)*s);
        if (!ok) {
            if (by_libpfm(tok, c, why, cap))
                return -1;
        } else {
            c->attr.type = PERF_TYPE_RAW;
            c->attr.config = v;
            snprintf(c->desc, sizeof c->desc, "Raw Event 0x%llx", v);
            snprintf(c->unit, sizeof c->unit, "events");
            c->interval = ON_RAW;
        }
    } else if (by_libpfm(tok, c, why, cap)) {
        return -1;
    }
    metric_name(c->name, c->metric, sizeof c->metric);
    for (int i = 0; i < ENG_NBUILTIN; i++)
        if (!strcmp(c->metric, eng_builtin_metrics[i].name)) {
            /* (a declared metric of a builtin's name adds to that metric) */
            char m[64];
            snprintf(m, sizeof m, "hwc_%.58s", c->metric);
            snprintf(c->metric, sizeof c->metric, "%s", m);
            break;
        }
    return 0;
}

/* Why a counter cannot be opened here, in words. */
static void no_open_why(const hwc_counter_t *c, int rc, char *why, size_t cap)
{
    int hw = c->attr.type == PERF_TYPE_HARDWARE || c->attr.type == PERF_TYPE_HW_CACHE ||
             c->attr.type == PERF_TYPE_RAW || c->attr.type > PERF_TYPE_BREAKPOINT;
    if (hw && (rc == -ENOENT || rc == -EOPNOTSUPP || rc == -ENODEV))
        fail(why, cap, "counter '%s' cannot be counted here: the kernel exposes no hardware "
             "PMU that has it (perf_event_open: %s; a virtual machine without a virtual PMU has "
             "none); software events such as page-faults or context-switches work, see "
             "'tally collect -h'", c->name, strerror(-rc));
    else if (rc == -EACCES || rc == -EPERM)
        fail(why, cap, "counter '%s' is not permitted here (perf_event_open: %s); lower "
             "/proc/sys/kernel/perf_event_paranoid or run with CAP_PERFMON", c->name,
             strerror(-rc));
    else
        fail(why, cap, "counter '%s' cannot be opened here (perf_event_open: %s)", c->name,
             strerror(-rc));
}

/* Do a and b count the same event (one spelling each, e.g. page-faults and faults)? */
static int same_event(const hwc_counter_t *a, const hwc_counter_t *b)
{
    return a->attr.type == b->attr.type && a->attr.config == b->attr.config &&
           a->attr.config1 == b->attr.config1 && a->attr.config2 == b->attr.config2 &&
           a->attr.bp_type == b->attr.bp_type && a->attr.bp_addr == b->attr.bp_addr &&
           a->attr.bp_len == b->attr.bp_len && a->prog_ino == b->prog_ino &&
           a->prog_dev == b->prog_dev;
}

int hwc_parse(const char *arg, const char *program, hwc_set_t *set, char *why, size_t cap)
{
    char *copy = strdup(arg), *save = NULL;
    if (!copy)
        return fail(why, cap, "out of memory");
    int rc = 0;
    hwc_counter_t *last = NULL;
    int start = set->n;
    if (!*arg)
        rc = fail(why, cap, "-h needs a counter; 'tally collect -h' lists them");
    for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        if (last && is_interval(t)) {
            rc = set_interval(last, t, why, cap);
            last = NULL;
            continue;
        }
        if (is_interval(t)) {
            rc = fail(why, cap, "interval '%s' in '-h %s' follows no counter", t, arg);
            break;
        }
        if (set->n >= HWC_MAX) {
            rc = fail(why, cap, "too many counters: at most %d", HWC_MAX);
            break;
        }
        hwc_counter_t *c = &set->c[set->n];
        if (parse_one(t, program, c, why, cap)) {
            rc = -1;
            break;
        }
        for (int i = 0; i < set->n && !rc; i++)
            if (same_event(&set->c[i], c))
                rc = !strcasecmp(set->c[i].name, c->name)
                         ? fail(why, cap, "counter '%s' is given twice", c->name)
                         : fail(why, cap, "counter '%s' is given twice ('%s' is the same event)",
                                c->name, set->c[i].name);
            else if (!strcmp(set->c[i].metric, c->metric))
                rc = fail(why, cap, "counters '%s' and '%s' would both be the metric '%s'; give "
                          "one of them otherwise", set->c[i].name, c->name, c->metric);
        if (rc)
            break;
        set->n++;
        last = c;
    }
    free(copy);
    for (int i = start; i < set->n && !rc; i++) {
        hwc_counter_t *c = &set->c[i];
        if (c->flags & HWC_NPR)
            continue; /* counted per CPU, not per thread: probed by the collector */
        if ((c->flags & HWC_IBS) && (c->interval < 16 || c->interval % 16)) {
            rc = fail(why, cap, "counter '%s': IBS counts cycles in units of 16: give an "
                      "interval that is a multiple of 16 (e.g. %llu)", c->name,
                      (unsigned long long)(c->interval < 16 ? 16 : c->interval / 16 * 16));
            break;
        }
        struct perf_event_attr a = c->attr;
        a.size = sizeof a;
        a.sample_period = c->interval;
        a.sample_type = PERF_SAMPLE_IP | ((c->flags & HWC_DATA) ? PERF_SAMPLE_ADDR : 0);
        int ibs = (c->flags & HWC_IBS) != 0;
        int p = probe_pmu(a, ibs);
        /* precise sampling the kernel refuses (EOPNOTSUPP: above what this PMU has; EINVAL:
         * not for this event): a lower level, else none, and the user told */
        unsigned want = a.precise_ip;
        while (a.precise_ip && (p == -EOPNOTSUPP || p == -EINVAL)) {
            a.precise_ip--;
            p = probe_pmu(a, ibs);
        }
        if (want && !p && a.precise_ip < want)
            snprintf(c->note, sizeof c->note, a.precise_ip
                     ? "counter '%s': the kernel refuses precise sampling level %u here; "
                       "level %u is used (the sampled IP may be the next instruction)"
                     : "counter '%s': the kernel refuses precise sampling here (level %u "
                       "asked); it is sampled without it and its data addresses are "
                       "backtracked from the interrupted instruction",
                     c->name, want, (unsigned)a.precise_ip);
        c->attr.precise_ip = a.precise_ip;
        c->flags = (c->flags & ~(unsigned)HWC_PRECISE) |
                   ((unsigned)a.precise_ip << EXP_CSET_PRECISE_SHIFT);
        if (p)
            no_open_why(c, p, why, cap), rc = -1;
    }
    if (rc)
        set->n = start;
    return rc;
}

/* ---- encoding for the collector -------------------------------------------------------------- */

long hwc_encode(const hwc_set_t *set, uint64_t hz, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < set->n; i++) {
        const hwc_counter_t *c = &set->c[i];
        int w = snprintf(buf + n, cap - n,
                         "%s%u:%llu:%llu:%llu:%u:%llu:%llu:%llu:%u:%llu:%llu:%llu:%s:%s",
                         i ? ";" : "", c->attr.type, (unsigned long long)c->attr.config,
                         (unsigned long long)c->attr.config1, (unsigned long long)c->attr.config2,
                         c->attr.bp_type, (unsigned long long)c->attr.bp_addr,
                         (unsigned long long)c->attr.bp_len, (unsigned long long)c->interval,
                         c->flags, (unsigned long long)((c->flags & HWC_CYCLES) ? hz : 0),
                         (unsigned long long)c->prog_dev, (unsigned long long)c->prog_ino,
                         c->metric, c->name);
        if (w < 0 || (size_t)w >= cap - n)
            return -1;
        n += (size_t)w;
    }
    return (long)n;
}

/* ---- the CPUs' frequency --------------------------------------------------------------------- */

uint64_t hwc_cpu_hz(void)
{
    double inv = 0;
    int n = 0;
    DIR *d = opendir("/sys/devices/system/cpu");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, "cpu", 3) || !isdigit((unsigned char)de->d_name[3]))
            continue;
        char path[320];
        if ((size_t)snprintf(path, sizeof path, "/sys/devices/system/cpu/%.255s/cpufreq/cpuinfo_max_freq",
                             de->d_name) >= sizeof path)
            continue;
        FILE *f = fopen(path, "r");
        unsigned long long khz = 0;
        if (f) {
            if (fscanf(f, "%llu", &khz) == 1 && khz) {
                inv += 1.0 / ((double)khz * 1e3);
                n++;
            }
            fclose(f);
        }
    }
    if (d)
        closedir(d);
    if (!n) {
        FILE *f = fopen("/proc/cpuinfo", "r");
        char line[256];
        while (f && fgets(line, sizeof line, f)) {
            double mhz;
            if (!strncmp(line, "cpu MHz", 7) && sscanf(strchr(line, ':') ? strchr(line, ':') + 1
                                                                         : line, "%lf", &mhz) == 1 &&
                mhz > 0) {
                inv += 1.0 / (mhz * 1e6);
                n++;
            }
        }
        if (f)
            fclose(f);
    }
    return n ? (uint64_t)((double)n / inv + 0.5) : 0;
}

/* ---- the lists ------------------------------------------------------------------------------- */

static void known_line(FILE *out, const known_t *k)
{
    esc_fprintf(out, "%s,%llu ('%s', alias for %s; %s)\n", k->alias, (unsigned long long)k->on,
            k->desc, k->raw, k->unit);
}

/* The raw list of one PMU: every event, with each of its unit masks. */
static void pmu_events(FILE *out, const pfm_pmu_info_t *pi)
{
    for (int idx = pi->first_event; idx != -1; idx = pfm_get_event_next(idx)) {
        pfm_event_info_t ei;
        memset(&ei, 0, sizeof ei);
        ei.size = sizeof ei;
        if (pfm_get_event_info(idx, PFM_OS_PERF_EVENT, &ei) != PFM_SUCCESS)
            continue;
        const char *unit = pi->type == PFM_PMU_TYPE_UNCORE ? "not-program-related events"
                           : strcasestr(ei.name, "cycles") || strcasestr(ei.name, "cpu_clk")
                               ? "CPU-cycles"
                               : "events";
        int umasks = 0;
        for (int a = 0; a < ei.nattrs; a++) {
            pfm_event_attr_info_t ai;
            memset(&ai, 0, sizeof ai);
            ai.size = sizeof ai;
            if (pfm_get_event_attr_info(idx, a, PFM_OS_PERF_EVENT, &ai) != PFM_SUCCESS ||
                ai.type != PFM_ATTR_UMASK)
                continue;
            umasks++;
            esc_fprintf(out, "%s::%s:%s,%llu (%s)\n", pi->name, ei.name, ai.name, ON_RAW, unit);
        }
        if (!umasks)
            esc_fprintf(out, "%s::%s,%llu (%s)\n", pi->name, ei.name, ON_RAW, unit);
    }
}

void hwc_print_lists(FILE *out)
{
    struct perf_event_attr cyc;
    memset(&cyc, 0, sizeof cyc);
    cyc.size = sizeof cyc;
    cyc.type = PERF_TYPE_HARDWARE;
    cyc.config = PERF_COUNT_HW_CPU_CYCLES;
    cyc.sample_period = ON_CYCLES;
    int pmu_rc = probe_any(cyc);
    char pmus[256];
    cpu_pmus(pmus, sizeof pmus);
    esc_fprintf(out, "Well known HW counters available for profiling:\n");
    if (pmu_rc) {
        esc_fprintf(out, "  (none: this machine has no hardware performance counters that the kernel "
                "exposes:\n   perf_event_open of CPU cycles fails with \"%s\"; a virtual machine "
                "without a\n   virtual PMU has none. %s%s%s)\n", strerror(-pmu_rc),
                *pmus ? "libpfm4 knows this CPU as " : "libpfm4 does not know this CPU",
                pmus, *pmus ? ", but its events cannot be opened" : "");
    } else {
        for (size_t i = 0; i < NELEM(aliases); i++) {
            struct perf_event_attr a;
            memset(&a, 0, sizeof a);
            a.size = sizeof a;
            a.type = aliases[i].type;
            a.config = aliases[i].config;
            a.sample_period = aliases[i].on;
            if (probe_any(a) == 0)
                known_line(out, &aliases[i]);
        }
        for (size_t i = 0; i < NELEM(pfm_aliases); i++) {
            hwc_counter_t c;
            char event[128], w[512];
            memset(&c, 0, sizeof c);
            if (by_pfm_alias(&pfm_aliases[i], pfm_aliases[i].alias, &c, event, sizeof event, w,
                             sizeof w))
                continue; /* the CPU has no such event */
            struct perf_event_attr a = c.attr;
            a.size = sizeof a;
            a.sample_period = c.interval;
            if (probe_any(a) == 0)
                esc_fprintf(out, "%s,%llu ('%s', alias for %s; %s)\n", pfm_aliases[i].alias,
                            (unsigned long long)c.interval, c.desc, event, c.unit);
        }
    }
    esc_fprintf(out, "Raw HW counters available for profiling:\n");
    if (pmu_rc) {
        esc_fprintf(out, "  (none: no hardware PMU here; raw codes r<hex> and libpfm4 names are "
                "accepted but cannot be opened)\n");
    } else if (!pfm_ready() && *lazy_pfm_why()) {
        esc_fprintf(out, "  (libpfm4 cannot be loaded: %s; give raw codes, r<hex>, e.g. r00c0)\n",
                    lazy_pfm_why());
    } else if (!pfm_ready() || !*pmus) {
        esc_fprintf(out, "  (libpfm4 does not know this CPU: give raw codes, r<hex>, e.g. r00c0)\n");
    } else {
        int i;
        pfm_for_all_pmus(i) {
            pfm_pmu_info_t pi;
            memset(&pi, 0, sizeof pi);
            pi.size = sizeof pi;
            if (pfm_get_pmu_info(i, &pi) != PFM_SUCCESS || !pi.is_present ||
                pi.pmu == PFM_PMU_PERF_EVENT || pi.pmu == PFM_PMU_PERF_EVENT_RAW)
                continue;
            pmu_events(out, &pi);
        }
    }
    esc_fprintf(out, "Software events available for profiling (counted by the kernel, no PMU needed):\n");
    for (size_t i = 0; i < NELEM(software); i++) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = software[i].type;
        a.config = software[i].config;
        a.sample_period = software[i].on;
        int rc = probe_any(a);
        if (rc == 0)
            known_line(out, &software[i]);
        else
            esc_fprintf(out, "  (%s: not available here: %s)\n", software[i].alias, strerror(-rc));
    }
    esc_fprintf(out, "Hardware data breakpoints:\n"
                 "mem:<address|symbol>[+<offset>][/<len>][:r|w|rw],1 ('Data Breakpoint'; events)\n"
                 "  e.g. mem:counter:w (every write of the global 'counter'), mem:0x601040/8\n"
                 "Intervals: on (the default shown), hi (10x more samples), lo (10x fewer) or a "
                 "number of events.\n"
                 "A '+' before a counter also records the instruction and data address of each "
                 "event: the hardware's for page faults, breakpoints, precise (PEBS) events and "
                 "ibs_op, else found by backtracking.\n");
    if (access(hwc_ibs_op_type_path, R_OK) == 0)
        esc_fprintf(out, "AMD IBS op sampling:\nibs_op,%llu ('IBS Op Sampling (an op tagged every "
                    "interval cycles)'; CPU-cycles)\n", ON_IBS);
}
