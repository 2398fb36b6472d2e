/*
 * api_plugin.c - a separate library that records calls of its own through the collector API
 * (include/tally_collector_api.h), as an MPI wrapper library would: plug_send(bytes) "sends a
 * message" (spins about 50 us) and records a msg_send record with its duration (msgtime, ns) and
 * its size (msgbytes); plug_signal_record(uc) records a sig_seen record (sigcount 1) with the
 * stack of a signal context; plug_busy(ms) burns CPU in a runtime state of its own (plugbusy).
 * Without tally (no tally_collector_api_v1) it works and records
 * nothing. plug_selftest() checks the API's answers to misuse and prints them on stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "tally_collector_api.h"

static const tally_collector_api_v1_t *api;
static int looked, kind_send = -1, kind_sig = -1;

static void setup(void)
{
    if (looked)
        return;
    looked = 1;
    typedef const tally_collector_api_v1_t *(*get_fn)(void);
    get_fn get = (get_fn)dlsym(RTLD_DEFAULT, TALLY_COLLECTOR_API_V1_SYMBOL);
    api = get ? get() : NULL;
    if (!api || api->version != 1 || api->size < sizeof *api) {
        api = NULL;
        return;
    }
    api->declare_metric("msgtime", "Message Time", NULL, 1);
    api->declare_metric("msgbytes", "Message Bytes", "bytes", 0);
    api->declare_metric("sigcount", "Signals Seen", "count", 0);
    static const char *const send_metrics[] = { "msgtime", "msgbytes" };
    static const char *const sig_metrics[] = { "sigcount" };
    kind_send = api->declare_kind("msg_send", send_metrics, 2);
    kind_sig = api->declare_kind("sig_seen", sig_metrics, 1);
}

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void work(void)
{
    uint64_t end = mono() + 50000;
    while (mono() < end)
        ;
}

#define PLUG_EXPORT __attribute__((visibility("default")))

PLUG_EXPORT __attribute__((noinline)) void plug_send(uint64_t bytes)
{
    setup();
    if (!api || !api->enter()) {
        work();
        return;
    }
    uint64_t t0 = api->now();
    work();
    uint64_t t1 = api->now();
    uint64_t pcs[256], v[2] = { t1 - t0, bytes };
    uint32_t n = api->stack_caller((const void *)plug_send, pcs, 256);
    api->emit(kind_send, t1, pcs, n, v, 2, 0);
    api->leave();
}

/* From a SA_SIGINFO handler: uc is its third argument. */
PLUG_EXPORT void plug_signal_record(void *uc)
{
    if (!api || kind_sig < 0 || !api->enter())
        return;
    uint64_t pcs[64], one = 1;
    uint32_t n = api->stack_context(uc, pcs, 64);
    api->emit(kind_sig, api->now(), pcs, n, &one, 1, TALLY_EMIT_SIGNAL);
    api->leave();
}

/* Runtime states: burns ms of CPU time in the state of kind plug_busy (metric plugbusy), as a
 * runtime marks a thread working inside it, then gives the previous state back. */
PLUG_EXPORT __attribute__((noinline)) void plug_busy(unsigned ms)
{
    setup();
    int kind = -1, prev = -1;
    if (api) {
        static const char *const busy[] = { "plugbusy" };
        api->declare_metric("plugbusy", "Plugin Busy", NULL, 1);
        kind = api->declare_kind("plug_busy", busy, 1);
        prev = api->set_state(kind);
    }
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    uint64_t end = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + ms * 1000000ull;
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    while ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec < end);
    if (api) {
        int back = api->set_state(prev);
        fprintf(stderr, "selftest-state: bad=%d unknown=%d none_before=%d back=%d\n",
                api->set_state(-2), api->set_state(999), prev, back == kind);
    }
}

/* Misuse gets errors, never a record. */
PLUG_EXPORT void plug_selftest(void)
{
    setup();
    if (!api) {
        fprintf(stderr, "selftest: no collector\n");
        return;
    }
    static const char *const bad[] = { "undeclared" };
    static const char *const send_metrics[] = { "msgtime", "msgbytes" };
    static const char *const other[] = { "msgbytes" };
    uint64_t v = 1, pc = (uint64_t)(uintptr_t)plug_send;
    fprintf(stderr, "selftest: badname=%d redeclare_same=%d redeclare_other=%d "
            "kind_undeclared=%d kind_same=%d kind_other=%d emit_outside=%d emit_badkind=%d\n",
            api->declare_metric("Bad-Name", NULL, NULL, 0),
            api->declare_metric("msgbytes", "Message Bytes", "bytes", 0),
            api->declare_metric("msgbytes", "Other", "bytes", 0),
            api->declare_kind("broken", bad, 1),
            api->declare_kind("msg_send", send_metrics, 2) == kind_send,
            api->declare_kind("msg_send", other, 1),
            api->emit(kind_send, api->now(), &pc, 1, &v, 1, 0),
            api->enter() ? (api->emit(999, api->now(), &pc, 1, &v, 1, 0) +
                            (api->leave(), 0)) : 1);
    /* attributes: values after the metrics that no view sums */
    static const char *const attrs[] = { "peer", "tag" }, *const dup[] = { "peer", "peer" };
    static const char *const badattr[] = { "Peer" }, *const other_attrs[] = { "peer" };
    static const char *const many[16] = { "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8",
                                          "a9", "b0", "b1", "b2", "b3", "b4", "b5" };
    int ka = api->declare_kind_attrs("msg_attr", send_metrics, 2, attrs, 2);
    int emit_ok = -1, emit_over = -1;
    uint64_t vals[5] = { 0, 0, 123456789, 7, 1 };
    if (api->enter()) {
        emit_ok = api->emit(ka, api->now(), &pc, 1, vals, 4, 0);
        emit_over = api->emit(ka, api->now(), &pc, 1, vals, 5, 0);
        api->leave();
    }
    fprintf(stderr, "selftest-attrs: ok=%d same=%d dup=%d badname=%d too_many=%d none=%d "
            "only_attrs=%d other=%d emit=%d emit_over=%d\n", ka >= 0,
            api->declare_kind_attrs("msg_attr", send_metrics, 2, attrs, 2) == ka,
            api->declare_kind_attrs("attr_dup", send_metrics, 2, dup, 2),
            api->declare_kind_attrs("attr_bad", send_metrics, 2, badattr, 1),
            api->declare_kind_attrs("attr_many", send_metrics, 2, many, 15),
            api->declare_kind_attrs("attr_none", NULL, 0, NULL, 0),
            api->declare_kind_attrs("attr_only", NULL, 0, many, 16) >= 0,
            api->declare_kind_attrs("msg_attr", send_metrics, 2, other_attrs, 1), emit_ok,
            emit_over);
}
