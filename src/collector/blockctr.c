/*
 * blockctr.c - counters of profiled blocks (see blockctr.h).
 */
#define _GNU_SOURCE
#include "blockctr.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static struct perf_event_attr attrs[BCTR_MAX];
static unsigned nattrs;

static const char *number(const char *s, uint64_t *v)
{
    if (*s < '0' || *s > '9')
        return NULL;
    uint64_t x = 0;
    while (*s >= '0' && *s <= '9')
        x = x * 10 + (uint64_t)(*s++ - '0');
    *v = x;
    return s;
}

int bctr_decode(const char *setting)
{
    nattrs = 0;
    const char *s = setting;
    while (*s) {
        uint64_t f[4];
        for (int k = 0; k < 4; k++) {
            if (!(s = number(s, &f[k])) || (k < 3 && *s++ != ':'))
                return nattrs = 0, -1;
        }
        if (nattrs == BCTR_MAX || (*s && *s != ';'))
            return nattrs = 0, -1;
        struct perf_event_attr *a = &attrs[nattrs++];
        memset(a, 0, sizeof *a);
        a->size = sizeof *a;
        a->type = (uint32_t)f[0];
        a->config = f[1];
        a->config1 = f[2];
        a->config2 = f[3];
        a->read_format = PERF_FORMAT_GROUP;
        a->exclude_hv = 1;
        if (*s)
            s++;
    }
    return (int)nattrs;
}

int bctr_open(bctr_thread_t *t)
{
    t->n = 0;
    for (unsigned i = 0; i < nattrs; i++) {
        struct perf_event_attr a = attrs[i];
        int r = perfev_open_count(&t->ev[i], &a, i ? t->ev[0].fd : -1);
        if (r == -EACCES || r == -EPERM) { /* perf_event_paranoid: the user's side only */
            a.exclude_kernel = 1;
            r = perfev_open_count(&t->ev[i], &a, i ? t->ev[0].fd : -1);
        }
        if (r < 0) {
            bctr_close(t, 0);
            for (unsigned k = i; k < nattrs; k++)
                t->ev[k] = (perfev_t)PERFEV_NONE;
            return r;
        }
        t->n = i + 1;
    }
    return 0;
}

void bctr_read(const bctr_thread_t *t, uint64_t *v)
{
    uint64_t buf[1 + BCTR_MAX];
    int ok = t->n && read(t->ev[0].fd, buf, sizeof buf) >= (ssize_t)((1 + t->n) * sizeof *buf) &&
             buf[0] == t->n;
    for (unsigned i = 0; i < nattrs; i++)
        v[i] = ok ? buf[1 + i] : 0;
}

void bctr_close(bctr_thread_t *t, int forget)
{
    for (unsigned i = t->n; i-- > 0;)
        if (!forget)
            perfev_close(&t->ev[i]);
    for (unsigned i = 0; i < BCTR_MAX; i++)
        t->ev[i] = (perfev_t)PERFEV_NONE;
    t->n = 0;
}
