/*
 * gen_experiment.c - writes a synthetic clock-profiling experiment of N events through the
 * format's own writer, for the analyzer benchmarks (bench/print.py, bench/mpi_analysis.py).
 *
 *   bench_gen_experiment DIR.tally [events=10000000] [threads=8] [stacks=5000] [ranks=0]
 *
 * With ranks R > 0 it writes an MPI job as `mpirun tally collect -M on` leaves one: DIR/log
 * holds the `job` record, and each rank is DIR/_r<rank>.tally, a process of its own (its `mpi`
 * record) with the events, threads and stacks given, all ranks sharing the program's stacks.
 *
 * The "program" is this machine's libc: its exported functions (.dynsym) play the functions of
 * the program, so every frame symbolizes for real. A call graph over ~2000 of them gives the
 * distinct stacks (depth 5 to 40, a tenth with recursion); events pick stacks with a skewed
 * (Zipf-like) distribution, as a real profile does, and are spread over the threads, each event
 * 1 ms of CPU time (5% system). The log holds what `tally collect` writes: start, cmdline,
 * settings, threads, the load object with its real build-id, stats and end.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "experiment/evwriter.h"
#include "experiment/logfile.h"

#define BIAS 0x7f3a00000000ULL
enum { MAXD = 48 }; /* frames of a stack at most */

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_gen_experiment: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* The path of the libc this program runs with. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
    if (strstr(info->dlpi_name, "libc.so"))
        snprintf(data, 4096, "%s", info->dlpi_name);
    return 0;
}

typedef struct funcs {
    uint64_t *addr; /* function start addresses in the ELF file */
    size_t n;
    uint64_t lo, hi;
    char buildid[129];
} funcs_t;

static void read_libc(const char *path, funcs_t *fs)
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        die(path);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    if (!elf)
        die("elf_begin");
    fs->addr = malloc(65536 * sizeof *fs->addr);
    fs->lo = UINT64_MAX;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        gelf_getshdr(scn, &sh);
        Elf_Data *d = elf_getdata(scn, NULL);
        if (sh.sh_type == SHT_DYNSYM) {
            for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && fs->n < 65536; i++) {
                GElf_Sym s;
                gelf_getsym(d, (int)i, &s);
                if (GELF_ST_TYPE(s.st_info) == STT_FUNC && s.st_size > 32 && s.st_shndx) {
                    fs->addr[fs->n++] = s.st_value;
                    if (s.st_value < fs->lo)
                        fs->lo = s.st_value;
                    if (s.st_value + s.st_size > fs->hi)
                        fs->hi = s.st_value + s.st_size;
                }
            }
        } else if (sh.sh_type == SHT_NOTE) {
            size_t off = 0, no, dof;
            GElf_Nhdr nh;
            while ((off = gelf_getnote(d, off, &nh, &no, &dof)) > 0)
                if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz <= 64)
                    for (size_t k = 0; k < nh.n_descsz; k++)
                        sprintf(fs->buildid + 2 * k, "%02x", ((unsigned char *)d->d_buf)[dof + k]);
        }
    }
    elf_end(elf);
    close(fd);
    if (fs->n < 100) {
        fprintf(stderr, "bench_gen_experiment: %s has too few functions\n", path);
        exit(1);
    }
}

static void logline(int fd, exp_line_t *l)
{
    if (exp_line_write(l, fd))
        die("writing the log");
}

/* One process's experiment in dir: nevents clock events over nthreads threads, picking from the
 * stacks; rank and size (size 0: not a rank) for its `mpi` record. */
static void write_process(const char *dir, uint64_t nevents, uint32_t nthreads, uint32_t nstacks,
                          uint64_t (*stacks)[MAXD], const uint32_t *depth, const funcs_t *fsp,
                          const char *libc, uint32_t rank, uint32_t size)
{
    funcs_t fs = *fsp;
    if (mkdir(dir, 0755))
        die(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/log", dir);
    int lfd = exp_log_create(path);
    if (lfd < 0) {
        errno = -lfd;
        die(path);
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t0 = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    char buf[8192];
    exp_line_t l;
    uint32_t pid = 4242 + rank * 1000;
    exp_line_begin(&l, buf, sizeof buf, "start");
    exp_line_u64(&l, "t", t0);
    exp_line_u64(&l, "real", (uint64_t)time(NULL) * 1000000000ULL);
    exp_line_u64(&l, "pid", pid);
    exp_line_u64(&l, "ppid", 1);
    exp_line_str(&l, "host", "bench");
    exp_line_str(&l, "kernel", "synthetic");
    exp_line_str(&l, "arch", "x86_64");
    exp_line_u64(&l, "ncpus", nthreads);
    exp_line_str(&l, "exe", libc);
    exp_line_str(&l, "cwd", "/");
    logline(lfd, &l);
    exp_line_begin(&l, buf, sizeof buf, "cmdline");
    char *args[] = { (char *)"synthetic-program", NULL };
    exp_line_argv(&l, "argv", args, 1);
    logline(lfd, &l);
    if (size) {
        exp_line_begin(&l, buf, sizeof buf, "mpi");
        exp_line_u64(&l, "rank", rank);
        exp_line_u64(&l, "size", size);
        exp_line_str(&l, "launcher", "openmpi");
        exp_line_u64(&l, "job", 1);
        logline(lfd, &l);
    }
    exp_line_begin(&l, buf, sizeof buf, "settings");
    exp_line_u64(&l, "clock", 1000000);
    exp_line_str(&l, "clock_source", "task-clock");
    exp_line_str(&l, "follow", "on");
    exp_line_str(&l, "duration", "all");
    exp_line_u64(&l, "max_depth", 256);
    logline(lfd, &l);
    exp_line_begin(&l, buf, sizeof buf, "load");
    exp_line_u64(&l, "t", t0);
    exp_line_u64(&l, "id", 1);
    exp_line_str(&l, "path", libc);
    exp_line_str(&l, "buildid", fs.buildid);
    exp_line_hex(&l, "bias", BIAS);
    exp_line_hex(&l, "lo", BIAS + fs.lo);
    exp_line_hex(&l, "hi", BIAS + fs.hi);
    logline(lfd, &l);
    for (uint32_t th = 0; th < nthreads; th++) {
        exp_line_begin(&l, buf, sizeof buf, "thread");
        exp_line_u64(&l, "t", t0);
        exp_line_u64(&l, "tid", pid + th);
        exp_line_str(&l, "name", th ? "worker" : "main");
        exp_line_str(&l, "how", th ? "pthread_create" : "main");
        logline(lfd, &l);
    }

    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t ef;
    if (exp_evfile_create(&ef, path, pid, t0, 0))
        die(path);
    exp_stream_t *st = calloc(nthreads, sizeof *st);
    uint64_t *tnow = malloc(nthreads * sizeof *tnow), *tcpu = calloc(nthreads, sizeof *tcpu);
    uint64_t *tsys = calloc(nthreads, sizeof *tsys), *tn = calloc(nthreads, sizeof *tn);
    for (uint32_t th = 0; th < nthreads; th++) {
        exp_stream_init(&st[th], &ef, pid + th);
        tnow[th] = t0;
    }
    for (uint64_t e = 0; e < nevents; e++) {
        uint32_t th = (uint32_t)(e % nthreads);
        /* skewed: the square of a uniform number picks low stack numbers far more often */
        double u = (double)(next_rand() >> 11) / 9007199254740992.0;
        uint32_t s = (uint32_t)(u * u * u * nstacks);
        uint32_t id;
        if (exp_stream_stack(&st[th], stacks[s], depth[s], 0, &id))
            die("writing a stack");
        uint64_t w = 900000 + next_rand() % 200000;
        int sys = next_rand() % 20 == 0;
        tnow[th] += w;
        tcpu[th] += w;
        tsys[th] += sys ? w : 0;
        tn[th]++;
        if (exp_stream_clock(&st[th], tnow[th], id, (uint32_t)sys, w))
            die("writing an event (disk full?)");
    }
    uint64_t tend = t0, cpu_all = 0;
    for (uint32_t th = 0; th < nthreads; th++) {
        exp_stream_finish(&st[th], tnow[th]);
        if (tnow[th] > tend)
            tend = tnow[th];
        cpu_all += tcpu[th];
        exp_line_begin(&l, buf, sizeof buf, "thread-end");
        exp_line_u64(&l, "t", tnow[th]);
        exp_line_u64(&l, "tid", pid + th);
        exp_line_u64(&l, "cpu", tcpu[th]);
        exp_line_u64(&l, "user", tcpu[th] - tsys[th]);
        exp_line_u64(&l, "system", tsys[th]);
        exp_line_u64(&l, "samples", tn[th]);
        logline(lfd, &l);
    }
    exp_evfile_close(&ef);
    exp_line_begin(&l, buf, sizeof buf, "stats");
    exp_line_u64(&l, "samples", nevents);
    exp_line_u64(&l, "expected", cpu_all / 1000000);
    exp_line_u64(&l, "unwind_failures", 0);
    exp_line_u64(&l, "dropped_busy", 0);
    exp_line_u64(&l, "dropped_disk", 0);
    exp_line_u64(&l, "truncated_stacks", 0);
    exp_line_u64(&l, "stacks", nstacks);
    exp_line_u64(&l, "profiled_ns", cpu_all);
    exp_line_u64(&l, "ring_lost", 0);
    logline(lfd, &l);
    exp_line_begin(&l, buf, sizeof buf, "end");
    exp_line_u64(&l, "t", tend);
    exp_line_str(&l, "how", "exit");
    exp_line_u64(&l, "status", 0);
    logline(lfd, &l);
    close(lfd);
    free(st);
    free(tnow);
    free(tcpu);
    free(tsys);
    free(tn);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: bench_gen_experiment DIR.tally [events] [threads] [stacks] [ranks]\n");
        return 2;
    }
    const char *dir = argv[1];
    uint64_t nevents = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000;
    uint32_t nthreads = argc > 3 ? (uint32_t)atoi(argv[3]) : 8;
    uint32_t nstacks = argc > 4 ? (uint32_t)atoi(argv[4]) : 5000;
    if (!nthreads || !nstacks)
        return 2;
    char libc[4096] = "";
    dl_iterate_phdr(find_libc, libc);
    funcs_t fs = { 0 };
    read_libc(libc, &fs);
    size_t nf = fs.n < 2000 ? fs.n : 2000;

    /* distinct stacks: leaf first, outermost frame fixed (the "main" of the program) */
    uint64_t(*stacks)[MAXD] = malloc(nstacks * sizeof *stacks);
    uint32_t *depth = malloc(nstacks * sizeof *depth);
    for (uint32_t s = 0; s < nstacks; s++) {
        uint32_t d = 5 + (uint32_t)(next_rand() % 36);
        uint32_t fn[MAXD];
        fn[d - 1] = 0; /* main */
        for (int i = (int)d - 2; i >= 0; i--) /* each frame's function depends on its caller */
            fn[i] = (uint32_t)((fn[i + 1] * 31 + 7 + next_rand() % 8) % nf);
        if (s % 10 == 0 && d > 8) { /* recursion: a run of one function */
            uint32_t at = 2 + (uint32_t)(next_rand() % (d - 6));
            for (uint32_t k = 0; k < 4; k++)
                fn[at + k] = fn[at];
        }
        for (uint32_t i = 0; i < d; i++) /* leaf: inside; callers: a return address */
            stacks[s][i] = BIAS + fs.addr[fn[i]] + (i == 0 ? 8 : 20);
        depth[s] = d;
    }

    uint32_t nranks = argc > 5 ? (uint32_t)atoi(argv[5]) : 0;
    if (!nranks) {
        write_process(dir, nevents, nthreads, nstacks, stacks, depth, &fs, libc, 0, 0);
    } else {
        if (mkdir(dir, 0755))
            die(dir);
        char path[4200], buf[512];
        snprintf(path, sizeof path, "%s/log", dir);
        int lfd = exp_log_create(path);
        if (lfd < 0) {
            errno = -lfd;
            die(path);
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, "job");
        exp_line_u64(&l, "t", (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
        exp_line_str(&l, "launcher", "openmpi");
        exp_line_u64(&l, "job", 1);
        exp_line_u64(&l, "size", nranks);
        logline(lfd, &l);
        close(lfd);
        for (uint32_t r = 0; r < nranks; r++) {
            snprintf(path, sizeof path, "%s/_r%u.tally", dir, r);
            write_process(path, nevents, nthreads, nstacks, stacks, depth, &fs, libc, r, nranks);
        }
    }
    printf("%s: %llu events, %u threads, %u distinct stacks over %zu functions of %s%s\n", dir,
           (unsigned long long)nevents, nthreads, nstacks, nf, libc,
           nranks ? " (each rank)" : "");
    return 0;
}
