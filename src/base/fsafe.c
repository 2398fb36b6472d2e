/*
 * fsafe.c - see fsafe.h. Sections: names, directories, reading, writing.
 */
#define _GNU_SOURCE
#include "fsafe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- names ---------------------------------------------------------------------------------- */

int fs_name_ok(const char *rel)
{
    if (!rel || !*rel || *rel == '/')
        return 0;
    for (const char *p = rel;;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        if (!e)
            return 1;
        p = e + 1;
    }
}

int fs_buildid_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
              (s[n] >= 'A' && s[n] <= 'F')))
            return 0;
    return n >= 2 && n <= 128 && n % 2 == 0;
}

/* ---- directories ---------------------------------------------------------------------------- */

int fs_open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int e = errno;
    struct stat st;
    if ((e == ENOTDIR || e == ELOOP) && !lstat(path, &st))
        return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
    return -e;
}

/* Opens the directory component name under dirfd, creating it first when create is set. */
static int open_component(int dirfd, const char *name, int create)
{
    if (create && mkdirat(dirfd, name, 0755) && errno != EEXIST)
        return -errno;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int e = errno;
    struct stat st;
    if ((e == ENOTDIR || e == ELOOP) && !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
        return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
    return -e;
}

/* Walks the directories of rel under dirfd (all but the last component when last is set);
 * returns a descriptor of the directory reached and points *leaf at the last component. */
static int walk(int dirfd, const char *rel, int create, int last, const char **leaf)
{
    if (!fs_name_ok(rel))
        return -EINVAL;
    int cur = dup(dirfd);
    if (cur < 0)
        return -errno;
    char comp[NAME_MAX + 1];
    const char *p = rel;
    for (;;) {
        const char *e = strchr(p, '/');
        if (!e && last) {
            *leaf = p;
            return cur;
        }
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > NAME_MAX) {
            close(cur);
            return -ENAMETOOLONG;
        }
        memcpy(comp, p, n);
        comp[n] = 0;
        int next = open_component(cur, comp, create);
        close(cur);
        if (next < 0)
            return next;
        cur = next;
        if (!e) {
            *leaf = NULL;
            return cur;
        }
        p = e + 1;
    }
}

int fs_mkdirs_at(int dirfd, const char *rel)
{
    const char *leaf;
    return walk(dirfd, rel, 1, 0, &leaf);
}

/* ---- reading -------------------------------------------------------------------------------- */

/* Checks that fd (opened O_NONBLOCK) is a regular file within max bytes; makes it blocking.
 * Closes it and returns a negative code otherwise. */
static int regular(int fd, uint64_t max)
{
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st))
        rc = -errno;
    else if (!S_ISREG(st.st_mode))
        rc = -FS_ENOTREG;
    else if (max && (uint64_t)st.st_size > max)
        rc = -EFBIG;
    else {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        return fd;
    }
    close(fd);
    return rc;
}

int fs_open_read_at(int dirfd, const char *rel, uint64_t max)
{
    const char *leaf;
    int d = walk(dirfd, rel, 0, 1, &leaf);
    if (d < 0)
        return d;
    int fd = openat(d, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int e = errno;
    close(d);
    if (fd < 0)
        return -e;
    return regular(fd, max);
}

int fs_open_read(const char *path, uint64_t max)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    return regular(fd, max);
}

/* ---- writing -------------------------------------------------------------------------------- */

int fs_create_at(int dirfd, const char *name, int *replaced, int *was_link)
{
    if (replaced)
        *replaced = 0;
    if (was_link)
        *was_link = 0;
    if (!fs_name_ok(name) || strchr(name, '/'))
        return -EINVAL;
    for (int attempt = 0;; attempt++) {
        int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST || attempt)
            return -errno;
        struct stat st;
        if (!fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode) && was_link)
            *was_link = 1;
        if (unlinkat(dirfd, name, 0)) /* the entry itself, never what a link points to */
            return -errno;
        if (replaced)
            *replaced = 1;
    }
}

int fs_append_at(int dirfd, const char *name)
{
    if (!fs_name_ok(name) || strchr(name, '/'))
        return -EINVAL;
    int fd = openat(dirfd, name,
                    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                    0644);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if (!fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
            return S_ISLNK(st.st_mode) ? -ELOOP : -FS_ENOTREG; /* a FIFO without reader: ENXIO */
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        int rc = !S_ISREG(st.st_mode) ? -FS_ENOTREG : -EMLINK;
        close(fd);
        return rc;
    }
    return fd;
}

int fs_copy_fd(int in, int out, uint64_t max, uint64_t *bytes)
{
    char buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return 0;
        total += (uint64_t)n;
        if (max && total > max)
            return -EFBIG;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return w < 0 ? -errno : -ENOSPC;
            off += w;
        }
        if (bytes)
            *bytes += (uint64_t)n;
    }
}

const char *fs_strerror(int neg)
{
    switch (-neg) {
    case EINVAL: return "not a plain relative name (absolute, empty, or with '.' or '..')";
    case ELOOP: return "a symbolic link (not followed)";
    case FS_ENOTREG: return "not a regular file";
    case EFBIG: return "too large";
    case EMLINK: return "a file with other hard links (not written through)";
    default: return strerror(-neg);
    }
}
