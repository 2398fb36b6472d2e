/*
 * u64map.c - hash table from 64-bit keys to 32-bit values; see u64map.h.
 */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "err.h"

uint64_t u64map_seed(void)
{
    static uint64_t seed; /* atomic: set once */
    uint64_t v = __atomic_load_n(&seed, __ATOMIC_RELAXED);
    if (v)
        return v;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = ((uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&ts) *
                0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
    }
    v |= 1; /* never 0: 0 is "not set yet" */
    uint64_t unset = 0;
    if (!__atomic_compare_exchange_n(&seed, &unset, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        v = unset; /* another thread set it first */
    return v;
}

/* The slot a key starts probing at: keys come from experiments (addresses, ids), so the mix is
 * keyed by the process's secret seed; otherwise an experiment could choose keys that all start
 * at one slot, making every lookup walk all of them (quadratic time). */
static inline size_t mix64(uint64_t k)
{
    k ^= u64map_seed();
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return (size_t)k;
}

uint64_t u64map_hash(uint64_t k)
{
    return (uint64_t)mix64(k);
}

static int grow(u64map_t *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *nk = calloc(ncap, sizeof *nk);
    uint32_t *nv = malloc(ncap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return TALLY_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = mix64(m->keys[i]) & (ncap - 1);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

uint32_t *u64map_slot(u64map_t *m, uint64_t key, int *found)
{
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m))
        return NULL;
    uint64_t k = key + 1;
    size_t j = mix64(k) & (m->cap - 1);
    while (m->keys[j] && m->keys[j] != k)
        j = (j + 1) & (m->cap - 1);
    *found = m->keys[j] != 0;
    if (!*found) {
        m->keys[j] = k;
        m->n++;
    }
    return &m->vals[j];
}

/* The index of key's entry, or SIZE_MAX. */
static size_t find(const u64map_t *m, uint64_t key)
{
    if (!m->cap)
        return SIZE_MAX;
    uint64_t k = key + 1;
    for (size_t j = mix64(k) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
        if (m->keys[j] == k)
            return j;
    return SIZE_MAX;
}

const uint32_t *u64map_get(const u64map_t *m, uint64_t key)
{
    size_t j = find(m, key);
    return j == SIZE_MAX ? NULL : &m->vals[j];
}

int u64map_put(u64map_t *m, uint64_t key, uint32_t val)
{
    int found;
    uint32_t *slot = u64map_slot(m, key, &found);
    if (!slot)
        return TALLY_ENOMEM;
    *slot = val;
    return 0;
}

int u64map_remove(u64map_t *m, uint64_t key)
{
    size_t j = find(m, key);
    if (j == SIZE_MAX)
        return 0;
    size_t mask = m->cap - 1;
    m->keys[j] = 0;
    m->n--;
    for (size_t i = (j + 1) & mask; m->keys[i]; i = (i + 1) & mask) {
        size_t home = mix64(m->keys[i]) & mask;
        /* the entry at i may move back to j when j lies cyclically in [home, i) */
        if (((i - home) & mask) >= ((i - j) & mask)) {
            m->keys[j] = m->keys[i];
            m->vals[j] = m->vals[i];
            m->keys[i] = 0;
            j = i;
        }
    }
    return 1;
}

void u64map_free(u64map_t *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
