/*
 * perfev.c - perf_event_open for the collector's sampling sources; see perfev.h.
 */
#define _GNU_SOURCE
#include "perfev.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"

/* The process's open events, for a fork child: a row is claimed (CAS on used) by the thread that
 * opens the event and freed by perfev_close. */
#define PERFEV_TABLE 16384

typedef struct row {
    int used; /* 0 free, 1 claimed; CAS */
    int fd;
    void *ring;
    size_t ring_len;
} row_t;

static row_t table[PERFEV_TABLE];

static int open_event_on(const struct perf_event_attr *attr, pid_t pid, int cpu)
{
    struct perf_event_attr a = *attr;
    a.size = sizeof a;
    return (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int open_event(const struct perf_event_attr *attr)
{
    return open_event_on(attr, 0, -1);
}

int perfev_probe(const struct perf_event_attr *attr)
{
    int fd = open_event(attr);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

static int row_claim(int fd, void *ring, size_t len)
{
    for (int i = 0; i < PERFEV_TABLE; i++) {
        int zero = 0;
        if (table[i].used == 0 &&
            __atomic_compare_exchange_n(&table[i].used, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            table[i].fd = fd;
            table[i].ring = ring;
            table[i].ring_len = len;
            return i;
        }
    }
    return -1;
}

int perfev_open_thread(perfev_t *ev, const struct perf_event_attr *attr, unsigned data_pages,
                       pid_t tid, int sig)
{
    ev->fd = -1;
    ev->ring = NULL;
    ev->ring_len = 0;
    ev->entry = -1;
    coll_fd_room_enter();
    int fd = coll_high_fd(open_event(attr));
    int e = errno;
    coll_fd_room_leave();
    if (fd < 0)
        return -e;
    size_t len = data_pages ? (1 + data_pages) * (size_t)sysconf(_SC_PAGESIZE) : 0;
    void *ring = len ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;
    struct f_owner_ex owner = { F_OWNER_TID, tid };
    if (ring == MAP_FAILED || fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETSIG, sig) < 0 || fcntl(fd, F_SETOWN_EX, &owner) < 0) {
        e = errno;
        if (ring && ring != MAP_FAILED)
            munmap(ring, len);
        coll_close(fd);
        return -e;
    }
    ev->fd = fd;
    ev->ring = ring;
    ev->ring_len = len;
    ev->entry = row_claim(fd, ring, len);
    return 0;
}

int perfev_open_count(perfev_t *ev, const struct perf_event_attr *attr, int leader)
{
    *ev = (perfev_t)PERFEV_NONE;
    struct perf_event_attr a = *attr;
    a.size = sizeof a;
    coll_fd_room_enter();
    int fd = coll_high_fd(
        (int)syscall(SYS_perf_event_open, &a, 0, -1, leader, PERF_FLAG_FD_CLOEXEC));
    int e = errno;
    coll_fd_room_leave();
    if (fd < 0)
        return -e;
    ev->fd = fd;
    ev->entry = row_claim(fd, NULL, 0);
    return 0;
}

int perfev_open_cpu(perfev_t *ev, const struct perf_event_attr *attr, int cpu)
{
    *ev = (perfev_t)PERFEV_NONE;
    coll_fd_room_enter();
    int fd = coll_high_fd(open_event_on(attr, -1, cpu));
    int e = errno;
    coll_fd_room_leave();
    if (fd < 0)
        return -e;
    ev->fd = fd;
    ev->entry = row_claim(fd, NULL, 0);
    return 0;
}

void perfev_arm(const perfev_t *ev, int n)
{
    ioctl(ev->fd, PERF_EVENT_IOC_REFRESH, n);
}

void perfev_close(perfev_t *ev)
{
    if (ev->fd < 0)
        return;
    if (ev->entry >= 0 && ev->entry < PERFEV_TABLE) {
        row_t *r = &table[ev->entry];
        r->fd = -1;
        r->ring = NULL;
        __atomic_store_n(&r->used, 0, __ATOMIC_RELEASE);
    }
    ioctl(ev->fd, PERF_EVENT_IOC_DISABLE, 0);
    if (ev->ring)
        munmap(ev->ring, ev->ring_len);
    if (coll_fd_owned(ev->fd)) /* (not if the program took the number over) */
        coll_close(ev->fd);
    ev->fd = -1;
    ev->ring = NULL;
    ev->entry = -1;
}

void perfev_after_fork_child(void)
{
    for (int i = 0; i < PERFEV_TABLE; i++) {
        row_t *r = &table[i];
        if (!r->used)
            continue;
        if (r->ring)
            munmap(r->ring, r->ring_len);
        if (r->fd >= 0 && coll_fd_owned(r->fd))
            coll_close(r->fd);
        r->fd = -1;
        r->ring = NULL;
        r->ring_len = 0;
        r->used = 0;
    }
}
