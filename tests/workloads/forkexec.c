/*
 * forkexec.c - every way a process makes processes: fork (child works, exits 5), fork + exec of
 * itself, vfork + exec, posix_spawn, system(), popen(). Each new image ("leaf") works 0.1 s of CPU
 * and exits 0. Usage: wl_forkexec [leaf]. Prints the exit statuses it saw:
 * "fork=5 forkexec=0 vfork=0 spawn=0 system=0 popen=0 errno=ok".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static volatile double sink;

__attribute__((noinline)) static void work(double secs)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    double t0 = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, t;
    do {
        for (int i = 0; i < 100000; i++)
            sink += (double)(i & 3);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    } while (t - t0 < secs);
}

static int status_of(pid_t pid)
{
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    if (argc > 1 && !strcmp(argv[1], "leaf")) {
        work(0.1);
        return 0;
    }
    work(0.1);
    char *leaf_argv[] = { self, "leaf", NULL };

    pid_t p = fork();
    if (p == 0) {
        work(0.1);
        exit(5);
    }
    int r_fork = status_of(p);

    p = fork();
    if (p == 0) {
        execv(self, leaf_argv);
        _exit(127);
    }
    int r_forkexec = status_of(p);

    p = vfork();
    if (p == 0) {
        execv(self, leaf_argv);
        _exit(127);
    }
    int r_vfork = status_of(p);

    pid_t sp;
    int r_spawn = posix_spawn(&sp, self, NULL, NULL, leaf_argv, environ) ? -1 : status_of(sp);

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' leaf", self);
    int s = system(cmd);
    int r_system = WIFEXITED(s) ? WEXITSTATUS(s) : -1;

    FILE *f = popen(cmd, "r");
    int r_popen = -1;
    if (f) {
        s = pclose(f);
        r_popen = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    }

    errno = 0;
    execl("/nonexistent/program", "x", (char *)NULL); /* fails: the process goes on */
    int e_ok = errno == ENOENT;
    work(0.05);
    printf("fork=%d forkexec=%d vfork=%d spawn=%d system=%d popen=%d errno=%s\n", r_fork,
           r_forkexec, r_vfork, r_spawn, r_system, r_popen, e_ok ? "ok" : "BAD");
    return 0;
}
