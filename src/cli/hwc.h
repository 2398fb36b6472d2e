/*
 * hwc.h - the counters of `tally collect -h`: their names, their perf_event encodings, the lists
 * that `tally collect -h` (alone) and `tally collect` (no arguments) print, and the form in which
 * the chosen counters travel to the collector (the `counters` setting, settings.def).
 *
 * A counter is named by (in this order of lookup):
 *  - a well-known alias (cycles, insts, branch-misses, l1d-load-misses, llc-load-misses, ...):
 *    the kernel's generic hardware and cache events, which it maps to each CPU's own;
 *  - a software event the kernel counts itself (task-clock, page-faults, minor-faults,
 *    major-faults, context-switches, cpu-migrations, alignment-faults): these work without a PMU;
 *  - a raw code, r<hex> or 0x<hex> (PERF_TYPE_RAW: the CPU's own event select and unit mask);
 *  - a hardware data breakpoint, mem:<address|symbol>[+<offset>][/<len>][:r|w|rw] (a symbol of
 *    the program's symbol table; len 1, 2, 4 or 8, default the symbol's size when it is one of
 *    those; access rw by default);
 *  - any event libpfm4 knows for this CPU, PMU::EVENT:UMASK (or EVENT.UMASK), encoded with
 *    pfm_get_os_event_encoding. Events of uncore PMUs do not count the program:
 *    "not-program-related".
 * A `+` before a name asks for dataspace data (the sampled instruction and data address). For a
 * `+` on a libpfm4 event whose unit mask is precise-capable (Intel PEBS: libpfm4's is_precise),
 * attr.precise_ip is set: 2 (the sampled IP is the instruction itself), else the highest of 2, 1
 * the kernel accepts; libpfm4's :precise=N asks for N (with `+` only). When the kernel accepts
 * none, the counter is sampled without it (its data addresses backtracked) and note[] says so.
 * ibs_op is AMD's IBS op PMU (its type from /sys/bus/event_source/devices/ibs_op/type): every
 * interval-th cycle an op is tagged and its IP and data address sampled.
 * An interval follows a name after a comma: on (the counter's default), hi (10 times as many
 * samples), lo (10 times fewer) or a decimal number of events.
 *
 * The lists follow the seed's format: "Well known HW counters available for profiling:" with
 * `alias,interval ('Description', alias for RAW; units)` lines, then "Raw HW counters available
 * for profiling:" with `name,interval (units)` lines; then what this tally adds: the software
 * events and the breakpoint syntax. A machine whose kernel exposes no hardware PMU gets both HW
 * lists replaced by a sentence saying so (and which CPU model libpfm4 sees). perf_event schedules
 * the registers itself, so lines carry no `[/{0|1}]` register field.
 *
 * Contexts: normal code of the driver (libpfm4 initializes lazily, once). Errors: hwc_parse
 * returns -1 with a sentence in why[]; nothing here exits. Depends on libpfm4, libelf.
 */
#ifndef TALLY_CLI_HWC_H
#define TALLY_CLI_HWC_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "experiment/settings.h"

#define HWC_MAX 16 /* counters of one run */

enum hwc_flags { /* the setting's flags (settings.h) */
    HWC_DATA = EXP_CSET_DATA,     /* '+': record the sampled instruction and data address */
    HWC_NPR = EXP_CSET_NPR,       /* not program related (an uncore PMU's event) */
    HWC_BP_EXE = EXP_CSET_BP_EXE, /* breakpoint address relative to the main program (PIE) */
    HWC_CYCLES = EXP_CSET_CYCLES, /* counts CPU cycles: shown as time at the CPUs' frequency */
    HWC_TIME = EXP_CSET_TIME,     /* counts ns (task-clock): shown as time */
    HWC_PRECISE = EXP_CSET_PRECISE, /* precise_ip (attr.precise_ip << EXP_CSET_PRECISE_SHIFT) */
    HWC_IBS = EXP_CSET_IBS,       /* AMD IBS op sampling */
};

typedef struct hwc_counter {
    char name[128];   /* as the user gave it, without '+' and the interval */
    char metric[64];  /* the metric's name: the name lower-cased, other characters as '_';
                         hwc_ before it when that is the name of one of tally's own metrics */
    char desc[128];   /* what it counts */
    char unit[32];    /* CPU-cycles, events, ns, ... */
    struct perf_event_attr attr; /* type, config, config1, config2, bp_* (no sampling fields) */
    uint64_t interval;           /* events per sample */
    unsigned flags;              /* enum hwc_flags */
    uint64_t prog_dev, prog_ino; /* a breakpoint on a symbol: the program file it is of */
    char note[256];   /* a warning for the user about this counter (precise sampling refused
                         here, so its data addresses are backtracked), or "" */
} hwc_counter_t;

typedef struct hwc_set {
    hwc_counter_t c[HWC_MAX];
    int n;
} hwc_set_t;

/* Adds the counters of one -h argument (counter[,interval][,counter[,interval]]...) to set.
 * program: the path of the program, for breakpoint symbols. 0, or -1 with why[cap] set. */
int hwc_parse(const char *arg, const char *program, hwc_set_t *set, char *why, size_t cap);

/* The value of the `counters` setting for set (see hwc_decode in the collector, counters.c):
 * counters separated by ';', each type:config:config1:config2:bp_type:bp_addr:bp_len:interval:
 * flags:hz:dev:ino:metric:name (numbers decimal; dev, ino: the program file of a breakpoint's
 * symbol, else 0). hz: the CPUs' frequency for cycle counters (0 if not
 * known). Returns the length, or -1 when it does not fit. */
long hwc_encode(const hwc_set_t *set, uint64_t hz, char *buf, size_t cap);

/* The harmonic mean of the CPUs' maximum frequencies in Hz (cpufreq, else /proc/cpuinfo's
 * "cpu MHz"), 0 if unknown. */
uint64_t hwc_cpu_hz(void);

/* Can this attr be opened for the calling thread? 0 or -errno. The lists and hwc_parse ask
 * through this pointer, which tests may replace. */
extern int (*hwc_probe)(const struct perf_event_attr *attr);

/* The file holding the IBS op PMU's perf type; tests may point it elsewhere. */
extern const char *hwc_ibs_op_type_path;

/* Prints the lists described above to out. */
void hwc_print_lists(FILE *out);

#endif
