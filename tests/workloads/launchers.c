/*
 * launchers.c - every exec and spawn call the collector interposes, and the loader's dlopen,
 * dlmopen and dlclose: fork + execl, execlp, execv, execvp, execvpe (with its own environment),
 * execle (with its own environment), fexecve; posix_spawn and posix_spawnp; then the plugin
 * (argv[1]) loaded with dlopen and dlmopen (LM_ID_BASE), its function called, and closed. Each
 * new image prints its name and what it sees of LAUNCHER (its environment's, or the inherited),
 * so the output is the same with and without tally. Usage: wl_launchers PLUGIN.so [leaf NAME].
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int status_of(pid_t pid)
{
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    if (argc > 3 && !strcmp(argv[2], "leaf")) {
        const char *v = getenv("LAUNCHER");
        printf("%s: LAUNCHER=%s\n", argv[3], v ? v : "(none)");
        return 0;
    }
    if (argc < 2)
        return 2;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    const char *base = strrchr(self, '/') + 1;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", (int)(base - self - 1), self);
    /* the p variants search PATH: the program's own directory first */
    char path[8192];
    snprintf(path, sizeof path, "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin");
    setenv("PATH", path, 1);
    setenv("LAUNCHER", "inherited", 1);
    const char *plugin = argv[1];
    char *own_env[] = { "LAUNCHER=own", NULL };
    const char *names[] = { "execl", "execlp", "execv", "execvp", "execvpe", "execle", "fexecve" };
    int rc = 0;
    for (int k = 0; k < 7; k++) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            char *av[] = { (char *)base, (char *)plugin, "leaf", (char *)names[k], NULL };
            char *avs[] = { self, (char *)plugin, "leaf", (char *)names[k], NULL };
            switch (k) {
            case 0: execl(self, self, plugin, "leaf", names[k], (char *)NULL); break;
            case 1: execlp(base, base, plugin, "leaf", names[k], (char *)NULL); break;
            case 2: execv(self, avs); break;
            case 3: execvp(base, av); break;
            case 4: execvpe(base, av, own_env); break;
            case 5: execle(self, self, plugin, "leaf", names[k], (char *)NULL, own_env); break;
            default: {
                int fd = open(self, O_RDONLY | O_CLOEXEC);
                fexecve(fd, avs, own_env);
            }
            }
            _exit(127);
        }
        int s = status_of(p);
        if (s)
            printf("%s: status %d\n", names[k], s);
        rc |= s;
    }
    pid_t sp;
    char *sp_argv[] = { self, (char *)plugin, "leaf", "posix_spawn", NULL };
    fflush(stdout);
    int s = posix_spawn(&sp, self, NULL, NULL, sp_argv, own_env) ? -1 : status_of(sp);
    char *spp_argv[] = { (char *)base, (char *)plugin, "leaf", "posix_spawnp", NULL };
    fflush(stdout);
    int sp2 = posix_spawnp(&sp, base, NULL, NULL, spp_argv, environ) ? -1 : status_of(sp);
    printf("spawn=%d spawnp=%d\n", s, sp2);
    void *h1 = dlopen(plugin, RTLD_NOW);
    void *h2 = dlmopen(LM_ID_BASE, plugin, RTLD_NOW);
    double (*work)(long) = h1 ? (double (*)(long))dlsym(h1, "plugin_work") : NULL;
    printf("dlopen=%s dlmopen=%s same=%d work=%.1f\n", h1 ? "ok" : dlerror(), h2 ? "ok" : "failed",
           h1 == h2, work ? work(8) : -1.0);
    int c2 = h2 ? dlclose(h2) : -1, c1 = h1 ? dlclose(h1) : -1;
    printf("dlclose=%d,%d status=%d\n", c2, c1, rc | s | sp2);
    return 0;
}
