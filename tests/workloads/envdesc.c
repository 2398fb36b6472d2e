/*
 * envdesc.c - every way a process makes processes, each new image given an environment of its
 * own: fork (the child compares its environ, array and strings, with the parent's), fork +
 * execle, posix_spawn, vfork + execve (each with an explicit environment without any tally
 * variable), and system() (the inherited environ). Each image prints what it sees of its
 * environment, leaving out LD_PRELOAD and TALLY_SETTINGS, so the output is the same with and
 * without tally. Usage: wl_envdesc [leaf NAME].
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void show(const char *who)
{
    printf("%s:", who);
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "TALLY_SETTINGS=", 15))
            printf(" [%s]", *e);
    printf("\n");
    fflush(stdout);
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
    if (argc > 2 && !strcmp(argv[1], "leaf")) {
        show(argv[2]);
        return 0;
    }
    show("root");
    /* the environ array and its strings, as the program sees them before any fork */
    size_t ne = 0;
    while (environ[ne])
        ne++;
    char **ptrs = malloc((ne + 1) * sizeof *ptrs), **copies = malloc((ne + 1) * sizeof *copies);
    for (size_t i = 0; i < ne; i++) {
        ptrs[i] = environ[i];
        copies[i] = strdup(environ[i]);
    }

    pid_t p = fork();
    if (p == 0) {
        size_t same = environ[ne] == NULL;
        for (size_t i = 0; i < ne && same; i++)
            same = environ[i] == ptrs[i] && !strcmp(environ[i], copies[i]);
        printf("fork child: environ %s\n", same ? "unchanged" : "CHANGED");
        fflush(stdout);
        _exit(0);
    }
    int r_fork = status_of(p);

    p = fork();
    if (p == 0) {
        execle(self, self, "leaf", "execle", (char *)NULL, (char *[]){ "ENVDESC=execle", "A=1", NULL });
        _exit(127);
    }
    int r_execle = status_of(p);

    pid_t sp;
    char *leaf_spawn[] = { self, "leaf", "posix_spawn", NULL };
    char *env_spawn[] = { "ENVDESC=posix_spawn", NULL };
    int r_spawn = posix_spawn(&sp, self, NULL, NULL, leaf_spawn, env_spawn) ? -1 : status_of(sp);

    char *leaf_vfork[] = { self, "leaf", "vfork", NULL };
    char *env_vfork[] = { "ENVDESC=vfork", "B=2", NULL };
    p = vfork();
    if (p == 0) {
        execve(self, leaf_vfork, env_vfork);
        _exit(127);
    }
    int r_vfork = status_of(p);

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' leaf system", self);
    int s = system(cmd);
    int r_system = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    printf("fork=%d execle=%d spawn=%d vfork=%d system=%d\n", r_fork, r_execle, r_spawn, r_vfork,
           r_system);
    return 0;
}
