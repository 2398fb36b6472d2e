/*
 * settings.h - the collector's settings: one table (settings.def) and what it generates.
 *
 * The settings travel from `tally collect` to the collector in every process it follows as ONE
 * environment variable, TALLY_SETTINGS (beside LD_PRELOAD), and end up in each experiment's log
 * as its `settings` record, which the reader parses back. Every one of those steps is generated
 * from settings.def: the structure (exp_settings_t), the defaults, the encoding of the variable
 * and its decoding (with validation), the log fields and their parsing. The driver encodes, the
 * collector decodes at start and encodes again for every new image it starts (exec, spawn), the
 * reader parses the record: a setting cannot be forgotten on one of those paths.
 *
 * The variable: comma-separated key=value pairs, keys from the table's env column, values with
 * '%', ',' and bytes outside '!'..'~' percent-encoded; only values that differ from the default
 * are written, so the variable stays small (what tally adds to the environment counts against
 * the kernel's limit on arguments and environment, E2BIG). Example:
 *   TALLY_SETTINGS=d=/home/me/app.1.tally,r=4242,o=4242,t0=81234567890,p=1000000
 *
 * Types: PATH (a string up to EXP_SETTINGS_PATH_MAX - 1 bytes), U64 (decimal in [min, max]),
 * CLOCK and PERIOD (ns: 0 = off, else in [min, max]; the log says `off` / `0`), BOOL (on/off),
 * SIG (a signal number in [min, max]), SIGOPT (0 = none, else in [min, max]; not logged when 0),
 * WINDOW (`a-b` or `a-` ns after the root's start; the log says `all` when there is none), SYNC
 * (off, on = calibrate, or a threshold in ns; `all` = 0; the log has the threshold in use).
 *
 * Everything here is async-signal-safe (no malloc, no stdio, no locks, no locale): the collector
 * decodes in its constructor and encodes in a vfork child. Depends on libc and logfile.h.
 */
#ifndef TALLY_EXPERIMENT_SETTINGS_H
#define TALLY_EXPERIMENT_SETTINGS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "experiment/logfile.h"

#define EXP_SETTINGS_ENV "TALLY_SETTINGS"
#define EXP_SETTINGS_PATH_MAX 4096
/* The longest encoded value (every value percent-encoded), without the name and its '='. */
#define EXP_SETTINGS_ENC_MAX (3 * EXP_SETTINGS_PATH_MAX + 1024)

/* The flags of a counter in the `counters` setting (written by src/cli/hwc.c, read by
 * src/collector/counters.c). */
enum exp_counter_set_flags {
    EXP_CSET_DATA = 1,    /* '+': record the sampled instruction and data address */
    EXP_CSET_NPR = 2,     /* not program related (an uncore PMU's event) */
    EXP_CSET_BP_EXE = 4,  /* breakpoint address relative to the main program's load bias */
    EXP_CSET_CYCLES = 8,  /* counts CPU cycles: shown as time at the CPUs' frequency (hz) */
    EXP_CSET_TIME = 16,   /* counts ns (task-clock): shown as time */
    EXP_CSET_PRECISE = 32 | 64, /* precise_ip to ask for (0-3, these two bits): the sample's IP
                                   and data address are the hardware's (Intel PEBS) */
    EXP_CSET_IBS = 128,   /* an AMD IBS op event: its sample's IP and data address are the op's */
};
#define EXP_CSET_PRECISE_SHIFT 5

enum exp_sync_mode { EXP_SYNC_OFF = 0, EXP_SYNC_CALIBRATE = 1, EXP_SYNC_THRESHOLD = 2 };

typedef struct { char s[EXP_SETTINGS_PATH_MAX]; } exp_set_PATH_t;
typedef uint64_t exp_set_U64_t, exp_set_CLOCK_t, exp_set_PERIOD_t;
typedef int exp_set_BOOL_t, exp_set_SIG_t, exp_set_SIGOPT_t;
typedef struct {
    int on;          /* 0: record the whole run */
    uint64_t lo, hi; /* ns after the root's start; hi = UINT64_MAX: no end */
} exp_set_WINDOW_t;
typedef struct {
    int mode;    /* enum exp_sync_mode */
    uint64_t ns; /* the threshold (THRESHOLD; for CALIBRATE once calibrated) */
} exp_set_SYNC_t;

typedef struct exp_settings {
#define X(field, type, env, log, dflt, lo, hi) exp_set_##type##_t field;
#include "experiment/settings.def"
#undef X
} exp_settings_t;

/* Every field at its default. */
void exp_settings_default(exp_settings_t *s);

/* Writes the value of TALLY_SETTINGS for s (only the fields that differ from their default) into
 * buf, NUL-terminated. Returns its length, or -1 when it does not fit in cap. */
long exp_settings_encode(const exp_settings_t *s, char *buf, size_t cap);

/* Sets s to the defaults, then to the values in v (a TALLY_SETTINGS value). Returns 0, or -1
 * with a sentence naming the key and what is wrong with it in why[cap] (s is then partly set). */
int exp_settings_decode(const char *v, exp_settings_t *s, char *why, size_t cap);

/* The value of TALLY_SETTINGS in envp (NULL-terminated), or NULL. */
const char *exp_settings_find(char *const *envp);

/* Appends the logged fields of s (those with a log key) to a `settings` line. */
void exp_settings_log(const exp_settings_t *s, exp_line_t *l);

/* Sets s from a `settings` record: get(ctx, key) returns a field's value or NULL. Absent fields
 * keep their default (an older experiment). Returns the number of values that could not be
 * parsed (left at their default); *bad (if not NULL) gets the key of the first. */
int exp_settings_from_log(exp_settings_t *s, const char *(*get)(void *ctx, const char *key),
                          void *ctx, const char **bad);

#endif
