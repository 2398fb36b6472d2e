/*
 * trace_io.c - known I/O, to files in the directory argv[1], each kind in a function of its own
 * (the e2e test checks the bytes and counts by file and by function exactly):
 *   write_raw     data.bin: open, 10 x write 1000, pwrite 500, lseek, writev 300 + 200, fsync,
 *                 close -> 12 writes, 11000 bytes; 4 other (open, lseek, fsync, close)
 *   read_raw      data.bin: open, read 4096 until 0 (3 reads of data, 1 at the end), pread 100,
 *                 readv 2 x 50, lseek, close -> 6 reads, 11200 bytes; 3 other (open, lseek, close)
 *   write_stdio   text.txt: fopen, fwrite 5 x 100, fputc (not traced), fprintf "%05d\n" x 20
 *                 (6 bytes each), fputs "end\n", fflush, fclose -> 26 writes, 624 bytes; 3 other
 *   read_stdio    text.txt: fopen, fread 500, fgetc (not traced), fgets x 21 lines (+1 at the end
 *                 of the file), fclose -> 23 reads, 624 bytes; 2 other
 *   failures      read(-1), open of missing.txt, write to a read-only descriptor of data.bin (and
 *                 its open and close) -> 3 errors, 2 other
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static char path_bin[4096], path_txt[4096], path_missing[4096];

__attribute__((noinline)) static void write_raw(void)
{
    char buf[1000];
    memset(buf, 'a', sizeof buf);
    int fd = open(path_bin, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 10; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            exit(2);
    if (pwrite(fd, buf, 500, 10000) != 500)
        exit(2);
    struct iovec v[2] = { { buf, 300 }, { buf, 200 } };
    lseek(fd, 10500, SEEK_SET);
    if (writev(fd, v, 2) != 500)
        exit(2);
    fsync(fd);
    close(fd);
}

__attribute__((noinline)) static void read_raw(void)
{
    char buf[4096];
    int fd = open(path_bin, O_RDONLY);
    long total = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        total += r;
    total += pread(fd, buf, 100, 0);
    struct iovec v[2] = { { buf, 50 }, { buf + 50, 50 } };
    lseek(fd, 0, SEEK_SET);
    total += readv(fd, v, 2);
    close(fd);
    if (total != 11200)
        exit(3);
}

__attribute__((noinline)) static void write_stdio(void)
{
    char buf[100];
    memset(buf, 'b', sizeof buf);
    FILE *f = fopen(path_txt, "w");
    for (int i = 0; i < 5; i++)
        fwrite(buf, 1, 100, f);
    fputc('\n', f); /* one-character calls are not traced */
    for (int i = 0; i < 20; i++)
        fprintf(f, "%05d\n", i);
    fputs("end\n", f);
    fflush(f);
    fclose(f);
}

__attribute__((noinline)) static void read_stdio(void)
{
    char buf[600];
    FILE *f = fopen(path_txt, "r");
    size_t n = fread(buf, 1, 500, f);
    int c = fgetc(f); /* the newline: not traced */
    int lines = 0;
    while (fgets(buf, sizeof buf, f))
        lines++;
    fclose(f);
    if (n != 500 || c != '\n' || lines != 21)
        exit(4);
}

__attribute__((noinline)) static void failures(void)
{
    char c;
    if (read(-1, &c, 1) != -1 || open(path_missing, O_RDONLY) != -1)
        exit(5);
    int fd = open(path_bin, O_RDONLY);
    if (write(fd, "x", 1) != -1)
        exit(5);
    close(fd);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    snprintf(path_bin, sizeof path_bin, "%s/data.bin", dir);
    snprintf(path_txt, sizeof path_txt, "%s/text.txt", dir);
    snprintf(path_missing, sizeof path_missing, "%s/missing.txt", dir);
    write_raw();
    read_raw();
    write_stdio();
    read_stdio();
    failures();
    return 0;
}
