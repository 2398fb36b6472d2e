/*
 * faults.c - programs that must behave exactly the same with and without tally (tests/e2e/faults.py).
 *
 *   faults altstack            a signal handler that runs on an 8 KiB alternate stack and computes
 *                              for a while there (the profiling signal lands on that stack)
 *   faults altdepth            the same on a painted 64 KiB alternate stack: prints how many bytes
 *                              of it were ever used (the handler, the kernel's frames, a collector)
 *   faults fds [limit]         optionally sets RLIMIT_NOFILE to limit, prints the descriptors open()
 *                              returns until it fails, closes them; a fork child computes and does
 *                              the same
 *   faults sigmask             blocks every signal and prints how many it reads back as blocked,
 *                              through sigprocmask, pthread_sigmask, sigaction's sa_mask and a
 *                              handler's mask; and what sigsuspend(NULL) returns
 *   faults stdio n             n rounds of fopen/fprintf/fclose and fopen/fread/fclose
 *   faults heap n              n malloc/free pairs (for runs on a full disk)
 *   faults die sig             computes a little, then kills itself with signal sig
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void __attribute__((noinline)) spin(double seconds)
{
    double end = cpu_now() + seconds;
    double x = 1.0;
    while (cpu_now() < end)
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* ---- altstack ------------------------------------------------------------------------------- */

static void on_usr1(int sig)
{
    (void)sig;
    spin(0.15);
}

static size_t alt_setup(size_t size, unsigned char **base)
{
    /* a guard page below the stack, so an overflow faults instead of writing elsewhere */
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *m = mmap(NULL, size + (size_t)pg, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        exit(2);
    mprotect(m, (size_t)pg, PROT_NONE);
    *base = m + pg;
    memset(*base, 0xa5, size);
    stack_t ss = { .ss_sp = *base, .ss_flags = 0, .ss_size = size };
    if (sigaltstack(&ss, NULL) < 0)
        exit(2);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    return size;
}

static int altstack(size_t size, int report)
{
    unsigned char *base;
    spin(0.001); /* the program's own first calls are bound before its handler runs */
    alt_setup(size, &base);
    for (int i = 0; i < 4; i++)
        raise(SIGUSR1);
    if (report) {
        size_t untouched = 0;
        while (untouched < size && base[untouched] == 0xa5)
            untouched++;
        printf("altstack used %zu of %zu bytes\n", size - untouched, size);
    } else {
        printf("altstack ok\n");
    }
    return 0;
}

/* ---- fds ------------------------------------------------------------------------------------ */

static void open_all(const char *who)
{
    int fds[200], n = 0; /* the first 200: far below the numbers a collector keeps */
    printf("%s:", who);
    while (n < 200) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0)
            break;
        fds[n++] = fd;
        printf(" %d", fd);
    }
    printf("\n");
    fflush(stdout);
    while (n > 0)
        close(fds[--n]);
}

static int fds(int limit)
{
    if (limit > 0) {
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = (rlim_t)limit;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
            perror("setrlimit");
            return 2;
        }
    }
    open_all("parent");
    pid_t pid = fork();
    if (pid == 0) {
        spin(0.2);
        open_all("child");
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}

/* ---- sigmask -------------------------------------------------------------------------------- */

static int count(const sigset_t *s)
{
    int n = 0;
    for (int i = 1; i < NSIG; i++)
        n += sigismember(s, i) == 1;
    return n;
}

static int in_handler;

static void on_usr2(int sig)
{
    (void)sig;
    sigset_t cur;
    pthread_sigmask(SIG_SETMASK, NULL, &cur);
    in_handler = count(&cur);
}

static int mask_readback(void)
{
    sigset_t all, old, cur;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    sigprocmask(SIG_SETMASK, NULL, &cur);
    printf("sigprocmask: %d blocked\n", count(&cur));
    sigprocmask(SIG_SETMASK, &old, &cur);
    printf("sigprocmask old set: %d blocked\n", count(&cur));
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_sigmask(SIG_UNBLOCK, &old, &cur);
    printf("pthread_sigmask: %d blocked\n", count(&cur));
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    struct sigaction sa, back;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2;
    sigfillset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    sigaction(SIGUSR2, NULL, &back);
    printf("sigaction sa_mask: %d\n", count(&back.sa_mask));
    raise(SIGUSR2);
    printf("in a handler with a full sa_mask: %d blocked\n", in_handler);
    /* a NULL mask (glibc declares it nonnull): the kernel's EFAULT */
    const sigset_t *volatile none = NULL;
    errno = 0;
    int r = sigsuspend(none);
    printf("sigsuspend(NULL): %d %s\n", r, strerror(errno));
    spin(0.05); /* still profiled */
    return 0;
}

/* ---- stdio, heap ---------------------------------------------------------------------------- */

static int stdio_rounds(int n)
{
    char path[] = "/tmp/tally-faults-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 2;
    close(fd);
    char buf[256];
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(path, "w");
        fprintf(f, "round %d\n", i);
        fclose(f);
        f = fopen(path, "r");
        if (!fread(buf, 1, sizeof buf, f))
            return 3;
        fclose(f);
    }
    unlink(path);
    return 0;
}

static int heap_pairs(long n)
{
    for (long i = 0; i < n; i++) {
        void *p = malloc(16 + (size_t)(i % 64));
        sink += (double)(uintptr_t)p;
        free(p);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *m = argv[1];
    if (!strcmp(m, "altstack"))
        return altstack(8192, 0);
    if (!strcmp(m, "altdepth"))
        return altstack(65536, 1);
    if (!strcmp(m, "fds"))
        return fds(argc > 2 ? atoi(argv[2]) : 0);
    if (!strcmp(m, "sigmask"))
        return mask_readback();
    if (!strcmp(m, "stdio"))
        return stdio_rounds(argc > 2 ? atoi(argv[2]) : 100);
    if (!strcmp(m, "heap"))
        return heap_pairs(argc > 2 ? atol(argv[2]) : 1000000);
    if (!strcmp(m, "die")) {
        spin(0.05);
        kill(getpid(), argc > 2 ? atoi(argv[2]) : SIGTERM);
        return 0;
    }
    return 2;
}
