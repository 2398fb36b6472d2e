/*
 * u64map.h - a hash table from 64-bit keys to 32-bit values (open addressing, linear probing):
 * indexes of stacks, threads, addresses, names. Removal shifts the following entries back, so
 * tables that lose as many keys as they gain (live heap blocks) need no tombstones.
 *
 * Keys are hashed with a random seed of the process (u64map_seed), so an experiment cannot
 * choose keys that collide. A zeroed u64map_t is an empty table; u64map_free releases it. Not
 * thread-safe. Errors: the functions that grow the table return NULL / TALLY_ENOMEM when memory
 * runs out. Depends on libc.
 */
#ifndef TALLY_BASE_U64MAP_H
#define TALLY_BASE_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct u64map {
    uint64_t *keys; /* key + 1; 0 = empty */
    uint32_t *vals;
    size_t cap, n;
} u64map_t;

/* The value slot of key: *found says whether key was there already (else it is added, its value
 * to be set by the caller). NULL on no memory. */
uint32_t *u64map_slot(u64map_t *m, uint64_t key, int *found);
/* The value of key, or NULL. */
const uint32_t *u64map_get(const u64map_t *m, uint64_t key);
/* Sets key to val (added if absent). 0 or TALLY_ENOMEM. */
int u64map_put(u64map_t *m, uint64_t key, uint32_t val);
/* Removes key if present; returns whether it was. */
int u64map_remove(u64map_t *m, uint64_t key);
void u64map_free(u64map_t *m);
/* The process's secret hash seed (random, the same for every table of the process): tables of
 * keys an experiment chooses (u64map, the stack table) mix it into their hash, so that no
 * experiment can make its keys collide. Thread-safe. */
uint64_t u64map_seed(void);
/* A hash of k keyed by that seed (a full mix: every bit of k reaches every bit), for the other
 * tables whose keys come from experiments. */
uint64_t u64map_hash(uint64_t k);

#endif
