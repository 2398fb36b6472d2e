/*
 * test_hwc.c - the counters of `tally collect -h` (src/cli/hwc.c): names and their perf_event
 * encodings, intervals, errors, the form passed to the collector, and the lists.
 *
 * CTest runs this file once per CPU model, with libpfm4 forced to it (LIBPFM_FORCE_PMU: skl, icl,
 * amd64_fam19h_zen3, amd64_fam19h_zen4; libpfm4 reads it once, at its initialization, so one
 * process per model). The machine itself has no PMU, so perf_event_open is replaced by a probe
 * that accepts everything (a machine with a PMU) or refuses hardware events with ENOENT (this
 * machine, as the kernel answers here). The expected codes are the CPUs' documented event
 * selects and unit masks: MEM_LOAD_RETIRED.L1_MISS is event 0xd1 umask 0x08 on Skylake and Ice
 * Lake; RETIRED_INSTRUCTIONS 0xc0 and LS_DISPATCH.LD_DISPATCH 0x29 umask 0x01 on Zen 2, 3 and 4.
 * Precise sampling (PEBS: MEM_LOAD_RETIRED and INST_RETIRED have it, L2_RQSTS not) and IBS op are
 * checked by the attr the probe is given; the kernel refusing precise sampling by a probe that
 * answers EOPNOTSUPP above a level, as a kernel does above its PMU's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/hwc.h"

/* A global for the breakpoint-by-symbol test: 8 bytes, aligned. */
volatile long hwc_test_global = 1;

static const char *model;
static int intel, amd;

static int probe_pmu(const struct perf_event_attr *a) { (void)a; return 0; }
static int probe_nopmu(const struct perf_event_attr *a)
{
    return a->type == PERF_TYPE_SOFTWARE || a->type == PERF_TYPE_BREAKPOINT ? 0 : -ENOENT;
}

static char self[4096];

/* The last attr probed, and the highest precise_ip the fake kernel accepts (-1: any). */
static struct perf_event_attr probed;
static int max_precise = -1;
static int probe_precise(const struct perf_event_attr *a)
{
    probed = *a;
    /* (type 11: the IBS op PMU of ibs_op below, which refuses every exclude_ flag) */
    if (a->type == 11 && (a->exclude_hv || a->exclude_kernel || a->exclude_user))
        return -EINVAL;
    return max_precise >= 0 && a->precise_ip > (unsigned)max_precise ? -EOPNOTSUPP : 0;
}

static hwc_counter_t one(const char *arg);
static void expect_error(const char *arg, const char *part);

/* The flags field of the first counter of the encoded setting (type:config:...:flags:...). */
static unsigned encoded_flags(const hwc_counter_t *c)
{
    hwc_set_t s = { .n = 1 };
    s.c[0] = *c;
    char buf[1024];
    assert_true(hwc_encode(&s, 0, buf, sizeof buf) > 0);
    const char *p = buf;
    for (int i = 0; i < 8; i++)
        p = strchr(p, ':') + 1;
    return (unsigned)strtoul(p, NULL, 10);
}

static void precise_sampling(void **st)
{
    (void)st;
    hwc_probe = probe_precise;
    max_precise = -1;
    if (intel) {
        /* '+' on a PEBS event: precise_ip 2, with the data address sampled */
        hwc_counter_t c = one("+MEM_LOAD_RETIRED:L1_MISS");
        assert_int_equal(c.attr.config, 0x8d1);
        assert_int_equal(c.attr.precise_ip, 2);
        assert_int_equal(probed.precise_ip, 2);
        assert_true(probed.sample_type & PERF_SAMPLE_ADDR);
        assert_true(probed.sample_type & PERF_SAMPLE_IP);
        assert_int_equal((c.flags & HWC_PRECISE) >> EXP_CSET_PRECISE_SHIFT, 2);
        assert_int_equal(encoded_flags(&c), c.flags);
        assert_string_equal(c.note, "");
        c = one("+MEM_INST_RETIRED.ALL_LOADS,hi");
        assert_int_equal(c.attr.config, 0x81d0);
        assert_int_equal(c.attr.precise_ip, 2);
        /* without '+': no precise sampling, no data address */
        c = one("MEM_LOAD_RETIRED:L1_MISS");
        assert_int_equal(c.attr.precise_ip, 0);
        assert_false(probed.sample_type & PERF_SAMPLE_ADDR);
        assert_int_equal(c.flags & HWC_PRECISE, 0);
        /* a unit mask without PEBS, a generic event: backtracked */
        c = one("+L2_RQSTS:DEMAND_DATA_RD_MISS");
        assert_int_equal(c.attr.precise_ip, 0);
        assert_true(probed.sample_type & PERF_SAMPLE_ADDR);
        c = one("+l2-load-misses");
        assert_int_equal(c.attr.precise_ip, 0);
        c = one("+cycles");
        assert_int_equal(c.attr.precise_ip, 0);
        /* libpfm4's precise= with '+': as asked */
        c = one("+INST_RETIRED:ANY_P:precise=1");
        assert_int_equal(c.attr.precise_ip, 1);
        assert_int_equal((c.flags & HWC_PRECISE) >> EXP_CSET_PRECISE_SHIFT, 1);
        c = one("+MEM_LOAD_RETIRED:L1_MISS:precise=3");
        assert_int_equal(c.attr.precise_ip, 3);
        expect_error("+L2_RQSTS:DEMAND_DATA_RD_MISS:precise=1", "unknown counter");
        /* a kernel whose PMU has level 1 only: 1, said */
        max_precise = 1;
        c = one("+MEM_LOAD_RETIRED:L1_MISS");
        assert_int_equal(c.attr.precise_ip, 1);
        assert_int_equal((c.flags & HWC_PRECISE) >> EXP_CSET_PRECISE_SHIFT, 1);
        assert_non_null(strstr(c.note, "level 1 is used"));
        /* no precise sampling at all (no PEBS): the event without it, backtracked, said */
        max_precise = 0;
        c = one("+MEM_LOAD_RETIRED:L1_MISS");
        assert_int_equal(c.attr.precise_ip, 0);
        assert_int_equal(probed.precise_ip, 0);
        assert_true(probed.sample_type & PERF_SAMPLE_ADDR);
        assert_int_equal(c.flags & HWC_PRECISE, 0);
        assert_int_equal(encoded_flags(&c) & HWC_PRECISE, 0);
        assert_non_null(strstr(c.note, "refuses precise sampling"));
        assert_non_null(strstr(c.note, "backtracked"));
        c = one("+INST_RETIRED:ANY_P:precise=2");
        assert_int_equal(c.attr.precise_ip, 0);
        assert_non_null(strstr(c.note, "level 2 asked"));
        max_precise = -1;
    }
    if (amd) {
        /* no PEBS: libpfm4 marks no core event precise; backtracked */
        hwc_counter_t c = one("+LS_DISPATCH:LD_DISPATCH");
        assert_int_equal(c.attr.precise_ip, 0);
        assert_int_equal(c.flags & HWC_PRECISE, 0);
        assert_true(probed.sample_type & PERF_SAMPLE_ADDR);
        expect_error("+RETIRED_INSTRUCTIONS:precise=1", "unknown counter");
    }
}

/* ibs_op: AMD's IBS op PMU, its type read from sysfs (here a file the test writes), config 0 */
static void ibs_op(void **st)
{
    (void)st;
    hwc_probe = probe_precise;
    max_precise = -1;
    char dir[] = "/tmp/tally-ibs-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/type", dir);
    const char *real = hwc_ibs_op_type_path;
    hwc_ibs_op_type_path = path;
    /* absent, as on this machine and on any Intel CPU: refused, saying why */
    expect_error("+ibs_op", "does not expose");
    expect_error("ibs_op", path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("11\n", f);
    fclose(f);
    hwc_counter_t c = one("+ibs_op");
    assert_int_equal(c.attr.type, 11);
    assert_int_equal(c.attr.config, 0);
    assert_int_equal(c.attr.precise_ip, 0);
    assert_int_equal(c.interval, 100000);
    assert_true(c.flags & HWC_IBS);
    assert_true(c.flags & HWC_DATA);
    assert_int_equal(probed.type, 11);
    assert_int_equal(probed.exclude_hv, 0); /* probed as the collector opens it */
    assert_int_equal(probed.exclude_kernel, 0);
    assert_int_equal(probed.sample_period, 100000);
    assert_true(probed.sample_type & PERF_SAMPLE_ADDR);
    assert_int_equal(encoded_flags(&c), c.flags);
    assert_string_equal(c.metric, "ibs_op");
    c = one("+IBS_OP,hi");
    assert_int_equal(c.interval, 10000);
    c = one("+ibs_op,4096");
    assert_int_equal(c.interval, 4096);
    expect_error("+ibs_op,1000", "multiple of 16 (e.g. 992)");
    expect_error("+ibs_op,8", "multiple of 16 (e.g. 16)");
    f = fopen(path, "w");
    fputs("none\n", f);
    fclose(f);
    expect_error("+ibs_op", "not a number");
    unlink(path);
    rmdir(dir);
    hwc_ibs_op_type_path = real;
}

static int first_bias(struct dl_phdr_info *i, size_t sz, void *out)
{
    (void)sz;
    *(uint64_t *)out = i->dlpi_addr;
    return 1;
}

/* The load bias of the main program (the first object dl_iterate_phdr reports). */
static uint64_t main_bias(void)
{
    uint64_t b = 0;
    dl_iterate_phdr(first_bias, &b);
    return b;
}

static hwc_counter_t one(const char *arg)
{
    hwc_set_t s = { .n = 0 };
    char why[1024] = "";
    int rc = hwc_parse(arg, self, &s, why, sizeof why);
    if (rc)
        fail_msg("'%s': %s", arg, why);
    assert_int_equal(s.n, 1);
    return s.c[0];
}

static void expect_error(const char *arg, const char *part)
{
    hwc_set_t s = { .n = 0 };
    char why[1024] = "";
    assert_int_equal(hwc_parse(arg, self, &s, why, sizeof why), -1);
    assert_int_equal(s.n, 0);
    if (!strstr(why, part))
        fail_msg("'%s': message '%s' lacks '%s'", arg, why, part);
}

static void aliases_and_software(void **st)
{
    (void)st;
    hwc_probe = probe_pmu;
    hwc_counter_t c = one("cycles");
    assert_int_equal(c.attr.type, PERF_TYPE_HARDWARE);
    assert_int_equal(c.attr.config, PERF_COUNT_HW_CPU_CYCLES);
    assert_int_equal(c.interval, 10000019);
    assert_true(c.flags & HWC_CYCLES);
    assert_string_equal(c.metric, "cycles");
    c = one("instructions,hi"); /* a second spelling of insts: the metric is named as given */
    assert_int_equal(c.attr.config, PERF_COUNT_HW_INSTRUCTIONS);
    assert_string_equal(c.name, "instructions");
    assert_string_equal(c.metric, "instructions");
    assert_int_equal(c.interval, 1000001);
    c = one("insts");
    assert_string_equal(c.metric, "insts");
    c = one("+l1d-load-misses,lo");
    assert_int_equal(c.attr.type, PERF_TYPE_HW_CACHE);
    assert_int_equal(c.attr.config, PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                        (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
    assert_int_equal(c.interval, 100070);
    assert_true(c.flags & HWC_DATA);
    c = one("page-faults,1");
    assert_int_equal(c.attr.type, PERF_TYPE_SOFTWARE);
    assert_int_equal(c.attr.config, PERF_COUNT_SW_PAGE_FAULTS);
    assert_int_equal(c.interval, 1);
    assert_string_equal(c.metric, "page-faults");
    const char *given[][2] = { { "cs", "cs" }, { "faults", "faults" }, { "Migrations", "migrations" },
                               { "cpu-cycles", "cpu-cycles" } };
    for (int i = 0; i < 4; i++) {
        c = one(given[i][0]);
        assert_string_equal(c.name, given[i][0]);
        assert_string_equal(c.metric, given[i][1]);
    }
    /* gprofng's register field (alias/N) is taken and ignored: perf_event places counters */
    c = one("+cycles/1,hi");
    assert_int_equal(c.attr.type, PERF_TYPE_HARDWARE);
    assert_int_equal(c.attr.config, PERF_COUNT_HW_CPU_CYCLES);
    assert_string_equal(c.name, "cycles");
    assert_string_equal(c.metric, "cycles");
    assert_int_equal(c.interval, 1000001);
    c = one("r01a2/0");
    assert_int_equal(c.attr.config, 0x1a2);
    assert_string_equal(c.metric, "r01a2");
    expect_error("cycles/x", "unknown counter 'cycles/x'");
    c = one("task-clock");
    assert_true(c.flags & HWC_TIME);
    const char *sw[] = { "minor-faults", "major-faults", "context-switches", "cpu-migrations",
                         "alignment-faults" };
    const uint64_t cfg[] = { PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
                             PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_CPU_MIGRATIONS,
                             PERF_COUNT_SW_ALIGNMENT_FAULTS };
    for (int i = 0; i < 5; i++) {
        c = one(sw[i]);
        assert_int_equal(c.attr.type, PERF_TYPE_SOFTWARE);
        assert_int_equal(c.attr.config, cfg[i]);
        assert_string_equal(c.metric, sw[i]);
    }
}

static void raw_codes(void **st)
{
    (void)st;
    hwc_probe = probe_pmu;
    hwc_counter_t c = one("r01a2,5000");
    assert_int_equal(c.attr.type, PERF_TYPE_RAW);
    assert_int_equal(c.attr.config, 0x1a2);
    assert_int_equal(c.interval, 5000);
    assert_string_equal(c.metric, "r01a2");
    c = one("0xc0");
    assert_int_equal(c.attr.type, PERF_TYPE_RAW);
    assert_int_equal(c.attr.config, 0xc0);
    assert_int_equal(c.interval, 1000003);
    assert_string_equal(c.metric, "c0xc0");
}

/* Events of the forced model, as libpfm4 encodes them. */
static void libpfm_events(void **st)
{
    (void)st;
    hwc_probe = probe_pmu;
    if (intel) {
        hwc_counter_t c = one("MEM_LOAD_RETIRED.L1_MISS");
        assert_int_equal(c.attr.type, PERF_TYPE_RAW);
        assert_int_equal(c.attr.config, 0x8d1);
        assert_string_equal(c.metric, "mem_load_retired_l1_miss");
        c = one("+INST_RETIRED:ANY_P,hi");
        assert_int_equal(c.attr.config, 0xc0);
        assert_int_equal(c.interval, 100000);
        char full[128];
        snprintf(full, sizeof full, "%s::MEM_LOAD_RETIRED:L1_MISS", model);
        c = one(full);
        assert_int_equal(c.attr.config, 0x8d1);
        expect_error("RETIRED_INSTRUCTIONS", model); /* an AMD event: unknown, the CPU named */
        /* libpfm4's modifiers that would set fields tally does not pass on are refused, not
         * dropped; u (user mode, libpfm4's default here) is taken */
        expect_error("INST_RETIRED:ANY_P:precise=2", "give it with '+'");
        expect_error("MEM_LOAD_RETIRED:L1_MISS:period=5000", "modifier period=");
        expect_error("INST_RETIRED:ANY_P:k", "modifier k (kernel only");
        expect_error("INST_RETIRED:ANY_P:excl", "modifier excl");
        c = one("INST_RETIRED:ANY_P:u");
        assert_int_equal(c.attr.config, 0xc0);
        /* L2, which the kernel has no generic event for: L2_RQSTS.DEMAND_DATA_RD_MISS */
        c = one("+l2-load-misses,hi");
        assert_int_equal(c.attr.type, PERF_TYPE_RAW);
        assert_int_equal(c.attr.config, 0x2124);
        assert_string_equal(c.metric, "l2-load-misses");
        assert_string_equal(c.desc, "L2 Cache Data Load Misses");
        assert_int_equal(c.interval, 1000);
        assert_true(c.flags & HWC_DATA);
    }
    if (amd) {
        hwc_counter_t c = one("RETIRED_INSTRUCTIONS");
        assert_int_equal(c.attr.type, PERF_TYPE_RAW);
        assert_int_equal(c.attr.config, 0xc0);
        c = one("LS_DISPATCH:LD_DISPATCH,777");
        assert_int_equal(c.attr.config, 0x129);
        assert_int_equal(c.interval, 777);
        c = one("CYCLES_NOT_IN_HALT");
        assert_int_equal(c.attr.config, 0x76);
        assert_string_equal(c.unit, "CPU-cycles");
        assert_true(c.flags & HWC_CYCLES);
        expect_error("MEM_LOAD_RETIRED.L1_MISS", model); /* an Intel event */
        expect_error("RETIRED_INSTRUCTIONS:freq=1000", "modifier period= or freq=");
        expect_error("RETIRED_INSTRUCTIONS:k", "modifier k (kernel only");
        /* L2: PMCx064 umask 0x08 (LsRdBlkC), the data cache's requests that miss the L2 */
        c = one("L2-Load-Misses");
        assert_int_equal(c.attr.type, PERF_TYPE_RAW);
        assert_int_equal(c.attr.config, 0x864);
        assert_string_equal(c.metric, "l2-load-misses");
        assert_int_equal(c.interval, 10007);
    }
}

static void breakpoints(void **st)
{
    (void)st;
    hwc_probe = probe_nopmu;
    hwc_counter_t c = one("mem:0x601040/4:w");
    assert_int_equal(c.attr.type, PERF_TYPE_BREAKPOINT);
    assert_int_equal(c.attr.bp_addr, 0x601040);
    assert_int_equal(c.attr.bp_len, 4);
    assert_int_equal(c.attr.bp_type, 2 /* HW_BREAKPOINT_W */);
    assert_int_equal(c.interval, 1);
    c = one("mem:hwc_test_global");
    uint64_t bias = (c.flags & HWC_BP_EXE) ? main_bias() : 0;
    assert_int_equal(c.attr.bp_addr + bias, (uint64_t)(uintptr_t)&hwc_test_global);
    assert_int_equal(c.attr.bp_len, 8);
    assert_int_equal(c.attr.bp_type, 3 /* rw */);
    assert_string_equal(c.metric, "mem_hwc_test_global");
    struct stat sb; /* the program the symbol is of, so that only its images set it */
    assert_int_equal(stat(self, &sb), 0);
    assert_int_equal(c.prog_ino, (uint64_t)sb.st_ino);
    assert_int_equal(c.prog_dev, (uint64_t)sb.st_dev);
    expect_error("mem:hwc_test_global/3", "1, 2, 4 or 8"); /* a length, not a register */
    c = one("mem:hwc_test_global/4");
    assert_int_equal(c.attr.bp_len, 4);
    expect_error("mem:0x601041/4", "not aligned");
    expect_error("mem:no_such_symbol_here", "no symbol 'no_such_symbol_here'");
    expect_error("mem:0x601040:x", "use r, w or rw");
}

static void several_and_errors(void **st)
{
    (void)st;
    hwc_probe = probe_pmu;
    hwc_set_t s = { .n = 0 };
    char why[1024];
    assert_int_equal(hwc_parse("cycles,5,page-faults,+context-switches,hi", self, &s, why,
                               sizeof why), 0);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.c[0].interval, 5);
    assert_int_equal(s.c[1].interval, 10);
    assert_int_equal(s.c[2].interval, 1);
    assert_true(s.c[2].flags & HWC_DATA);
    /* a second -h adds to the set; the same counter twice is refused */
    assert_int_equal(hwc_parse("insts", self, &s, why, sizeof why), 0);
    assert_int_equal(s.n, 4);
    assert_int_equal(hwc_parse("cpu-cycles", self, &s, why, sizeof why), -1);
    assert_non_null(strstr(why, "counter 'cpu-cycles' is given twice ('cycles' is the same event)"));
    assert_int_equal(s.n, 4);
    assert_int_equal(hwc_parse("+CS", self, &s, why, sizeof why), -1); /* same event, any case */
    assert_non_null(strstr(why, "'context-switches' is the same event"));
    assert_int_equal(hwc_parse("r01a2,0x1a2", self, &s, why, sizeof why), -1);
    assert_non_null(strstr(why, "counter '0x1a2' is given twice ('r01a2' is the same event)"));
    assert_int_equal(s.n, 4);
    char enc[4096];
    assert_true(hwc_encode(&s, 2000000000, enc, sizeof enc) > 0);
    assert_string_equal(enc, "0:0:0:0:0:0:0:5:8:2000000000:0:0:cycles:cycles;"
                             "1:2:0:0:0:0:0:10:0:0:0:0:page-faults:page-faults;"
                             "1:3:0:0:0:0:0:1:1:0:0:0:context-switches:context-switches;"
                             "0:1:0:0:0:0:0:10000019:0:0:0:0:insts:insts");
    expect_error("", "needs a counter");
    expect_error("5", "follows no counter");
    expect_error("cycles,0", "bad interval '0'");
    expect_error("cycles,hi,lo", "follows no counter");
    expect_error("+", "missing after '+'");
    expect_error("no_such_counter_anywhere", "unknown counter 'no_such_counter_anywhere'");
    expect_error("rxyz", "unknown counter 'rxyz'");
    /* this machine: no PMU */
    hwc_probe = probe_nopmu;
    expect_error("cycles", "no hardware PMU");
    expect_error("r00c0", "no hardware PMU");
    expect_error("l2-load-misses", "no hardware PMU");
    hwc_counter_t c = one("page-faults");
    assert_int_equal(c.attr.type, PERF_TYPE_SOFTWARE);
}

static char *lists(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    hwc_print_lists(f);
    fclose(f);
    return buf;
}

static void has_line(const char *text, const char *line)
{
    char want[512];
    snprintf(want, sizeof want, "\n%s\n", line);
    if (!strstr(text, want))
        fail_msg("the lists lack the line '%s'", line);
}

static void list_with_pmu(void **st)
{
    (void)st;
    hwc_probe = probe_pmu;
    char *t = lists();
    static const char head[] = "Well known HW counters available for profiling:\n";
    assert_true(!strncmp(t, head, sizeof head - 1));
    has_line(t, "cycles,10000019 ('CPU Cycles', alias for PERF_COUNT_HW_CPU_CYCLES; CPU-cycles)");
    has_line(t, "insts,10000019 ('Instructions Executed', alias for PERF_COUNT_HW_INSTRUCTIONS; "
                "events)");
    has_line(t, "l1d-load-misses,10007 ('L1 D$ Load Misses', alias for "
                "PERF_COUNT_HW_CACHE_L1D:READ:MISS; load events)");
    has_line(t, "Raw HW counters available for profiling:");
    char line[256];
    snprintf(line, sizeof line, "l2-load-misses,10007 ('%s', alias for %s::%s; load events)",
             intel ? "L2 Cache Data Load Misses" : "L2 Cache Data Misses (loads, stores, prefetches)",
             model, intel ? "L2_RQSTS:DEMAND_DATA_RD_MISS"
                          : "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C");
    has_line(t, line);
    assert_true(strstr(t, "\nl2-load-misses,") < strstr(t, "Raw HW counters"));
    if (intel) {
        snprintf(line, sizeof line, "%s::MEM_LOAD_RETIRED:L1_MISS,1000003 (events)", model);
        has_line(t, line);
        snprintf(line, sizeof line, "%s::INST_RETIRED:ANY_P,1000003 (events)", model);
        has_line(t, line);
    }
    if (amd) {
        snprintf(line, sizeof line, "%s::LS_DISPATCH:LD_DISPATCH,1000003 (events)", model);
        has_line(t, line);
        snprintf(line, sizeof line, "%s::CYCLES_NOT_IN_HALT,1000003 (CPU-cycles)", model);
        has_line(t, line);
    }
    has_line(t, "page-faults,10 ('Page Faults', alias for PERF_COUNT_SW_PAGE_FAULTS; events)");
    /* the well-known list comes before the raw one */
    assert_true(strstr(t, "cycles,10000019") < strstr(t, "Raw HW counters"));
    assert_null(strstr(t, "(none"));
    free(t);
}

static void list_without_pmu(void **st)
{
    (void)st;
    hwc_probe = probe_nopmu;
    char *t = lists();
    assert_non_null(strstr(t, "Well known HW counters available for profiling:\n  (none: this "
                              "machine has no hardware performance counters"));
    assert_non_null(strstr(t, "No such file or directory"));
    char pm[128];
    snprintf(pm, sizeof pm, "libpfm4 knows this CPU as %s", model);
    assert_non_null(strstr(t, pm));
    assert_non_null(strstr(t, "Raw HW counters available for profiling:\n  (none: no hardware "
                              "PMU here"));
    assert_null(strstr(t, "\ncycles,"));
    assert_null(strstr(t, "\nl2-load-misses,"));
    has_line(t, "context-switches,1 ('Context Switches', alias for PERF_COUNT_SW_CONTEXT_SWITCHES; "
                "events)");
    assert_non_null(strstr(t, "\nmem:<address|symbol>"));
    free(t);
}

int main(void)
{
    model = getenv("LIBPFM_FORCE_PMU");
    if (!model || !*model) {
        fprintf(stderr, "test_hwc: set LIBPFM_FORCE_PMU (skl, icl, amd64_fam19h_zen3, ...)\n");
        return 77;
    }
    intel = !strcmp(model, "skl") || !strcmp(model, "icl");
    amd = !strncmp(model, "amd64_fam19h", 12) || !strncmp(model, "amd64_fam17h", 12);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aliases_and_software), cmocka_unit_test(raw_codes),
        cmocka_unit_test(libpfm_events),       cmocka_unit_test(breakpoints),
        cmocka_unit_test(several_and_errors),  cmocka_unit_test(list_with_pmu),
        cmocka_unit_test(list_without_pmu),     cmocka_unit_test(precise_sampling),
        cmocka_unit_test(ibs_op),
    };
    return cmocka_run_group_tests_name(model, tests, NULL, NULL);
}
