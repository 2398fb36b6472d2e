/*
 * fsafe.h - opening files named by untrusted data (an experiment's records, its archive, DWARF
 * file names) without following symbolic links out of a directory, without blocking on a FIFO
 * and without reading a device.
 *
 * The rule it serves: nothing taken from an experiment can make tally write outside the
 * experiment's directory, and what tally reads from the experiment's archive is a regular file
 * inside it. So names inside a directory are relative paths of plain components (fs_name_ok: no
 * empty component, no "." or "..", not absolute), walked one component at a time with openat and
 * O_NOFOLLOW (a symbolic link anywhere below the directory is refused, not followed); files are
 * created exclusively (O_CREAT|O_EXCL), never opened for writing through a link; files read are
 * opened with O_NONBLOCK (a FIFO never blocks) and must be regular files.
 *
 * Errors: functions return a descriptor or 0 on success, else a negative errno: -EINVAL for a
 * name fs_name_ok refuses, -ELOOP for a symbolic link met, -FS_ENOTREG for something that is not
 * a regular file (a FIFO, a device, a directory), -EFBIG for a file over the caller's limit;
 * fs_strerror names them. Nothing is printed. Thread-safe (no state). Depends on libc only.
 */
#ifndef TALLY_BASE_FSAFE_H
#define TALLY_BASE_FSAFE_H

#include <stdint.h>

#define FS_ENOTREG 10000 /* returned negated: not a regular file */

/* 1 when rel is a relative path of plain components: not empty, not absolute, no empty, "."
 * or ".." component (so it cannot name anything outside the directory it is taken under). */
int fs_name_ok(const char *rel);
/* 1 when s is a build-id as the format allows it: 2 to 128 hexadecimal digits, an even number. */
int fs_buildid_ok(const char *s);

/* Opens the directory path for use as a base: its last component must not be a symbolic link.
 * Returns a descriptor (O_DIRECTORY|O_CLOEXEC) or a negative errno. */
int fs_open_dir(const char *path);
/* Creates (if needed) and opens the directory rel under dirfd, one component at a time
 * (mkdirat, then openat O_DIRECTORY|O_NOFOLLOW). Returns a descriptor or a negative errno. */
int fs_mkdirs_at(int dirfd, const char *rel);
/* Opens rel under dirfd for reading: every component without following a link, the last one a
 * regular file of at most max bytes (0: no limit). Returns a descriptor (blocking again) or a
 * negative errno. */
int fs_open_read_at(int dirfd, const char *rel, uint64_t max);
/* Opens the file path (links followed: a path on the system) for reading without blocking on a
 * FIFO: a regular file of at most max bytes (0: no limit). Returns a descriptor or -errno. */
int fs_open_read(const char *path, uint64_t max);
/* Creates name (one component) under dirfd exclusively, for writing (and reading back). A file already there
 * (a temporary left behind, or a link planted there) is removed first, never followed; *replaced
 * says whether that happened and *was_link whether it was a symbolic link (both may be NULL).
 * Returns a descriptor or a negative errno. */
int fs_create_at(int dirfd, const char *name, int *replaced, int *was_link);
/* Opens name (one component) under dirfd for appending, creating it if needed: a regular file
 * with one link, never through a symbolic link. Returns a descriptor or a negative errno. */
int fs_append_at(int dirfd, const char *name);
/* Copies everything from descriptor in to descriptor out (at most max bytes, 0: no limit;
 * -EFBIG beyond); *bytes (may be NULL) grows by what was copied. Returns 0 or a negative errno. */
int fs_copy_fd(int in, int out, uint64_t max, uint64_t *bytes);

/* A message for a negative code of these functions (strerror for plain errno values). */
const char *fs_strerror(int neg);

#endif
