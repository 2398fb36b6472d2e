/*
 * ds_kernels.c - memory-bound kernels of ordinary C, for the attribution rate of dataspace
 * profiling on -O2 -g code (bench/dataspace.py): a chained hash table of structures (insert and
 * look up), a matrix product over heap rows, a binary search tree walk, and a histogram of a
 * global array into a static one. Usage: ds_kernels SECONDS (CPU time, shared by the kernels).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct entry {
    uint64_t key;
    uint32_t hits;
    struct entry *next;
};

struct table {
    struct entry **buckets;
    size_t nbuckets;
    size_t count;
};

struct tnode {
    long key;
    struct tnode *left, *right;
    int depth;
};

#define NH 200000
uint32_t samples_in[1 << 20];
static uint64_t histogram[256];

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

__attribute__((noinline)) static void table_insert(struct table *t, struct entry *e)
{
    size_t b = (e->key * 0x9e3779b97f4a7c15ull) % t->nbuckets;
    e->next = t->buckets[b];
    t->buckets[b] = e;
    t->count++;
}

__attribute__((noinline)) static struct entry *table_find(const struct table *t, uint64_t key)
{
    size_t b = (key * 0x9e3779b97f4a7c15ull) % t->nbuckets;
    for (struct entry *e = t->buckets[b]; e; e = e->next)
        if (e->key == key)
            return e;
    return NULL;
}

__attribute__((noinline)) static void matmul(double **c, double **a, double **b, int n)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            double aik = a[i][k];
            for (int j = 0; j < n; j++)
                c[i][j] += aik * b[k][j];
        }
}

static struct tnode *tree_add(struct tnode *root, struct tnode *n)
{
    struct tnode **at = &root;
    while (*at)
        at = n->key < (*at)->key ? &(*at)->left : &(*at)->right;
    *at = n;
    return root;
}

__attribute__((noinline)) static long tree_search(const struct tnode *root, long key)
{
    long steps = 0;
    while (root && root->key != key) {
        root = key < root->key ? root->left : root->right;
        steps++;
    }
    return steps;
}

__attribute__((noinline)) static void histo(int rounds)
{
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < sizeof samples_in / sizeof samples_in[0]; i++)
            histogram[samples_in[i] & 255]++;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2;
    uint64_t x = 12345;
    struct table t = { calloc(NH / 2, sizeof(struct entry *)), NH / 2, 0 };
    struct entry *es = calloc(NH, sizeof *es);
    struct tnode *ns = calloc(NH, sizeof *ns);
    enum { N = 160 };
    double **a = malloc(N * sizeof *a), **b = malloc(N * sizeof *b), **c = malloc(N * sizeof *c);
    if (!t.buckets || !es || !ns || !a || !b || !c)
        return 1;
    for (int i = 0; i < N; i++) {
        a[i] = calloc(N, sizeof **a), b[i] = calloc(N, sizeof **b), c[i] = calloc(N, sizeof **c);
        if (!a[i] || !b[i] || !c[i])
            return 1;
        for (int j = 0; j < N; j++)
            a[i][j] = i + j, b[i][j] = i - j;
    }
    for (size_t i = 0; i < sizeof samples_in / sizeof samples_in[0]; i++)
        samples_in[i] = (uint32_t)rnd(&x);
    struct tnode *root = NULL;
    for (int i = 0; i < NH; i++) {
        es[i].key = rnd(&x);
        table_insert(&t, &es[i]);
        ns[i].key = (long)(rnd(&x) >> 1);
        root = tree_add(root, &ns[i]);
    }
    long found = 0, steps = 0;
    double t0 = cpu_seconds();
    while (cpu_seconds() - t0 < seconds) {
        for (int i = 0; i < NH; i += 3) {
            struct entry *e = table_find(&t, es[i].key);
            if (e)
                e->hits++, found++;
            steps += tree_search(root, ns[(i * 7) % NH].key);
        }
        matmul(c, a, b, N);
        histo(2);
    }
    printf("%ld %ld %g %llu\n", found, steps, c[1][1], (unsigned long long)histogram[7]);
    return 0;
}
