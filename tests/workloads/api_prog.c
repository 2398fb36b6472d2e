/*
 * api_prog.c - a program using a library that records through the collector API
 * (api_plugin.c): main -> producer -> plug_send(100) 40 times, main -> consumer -> plug_send(7)
 * 20 times, main -> signaler -> raise(SIGUSR1) 5 times (the handler records the signal's
 * stack), and a fork child: child_work -> plug_send(1000) 3 times. Usage: wl_api_prog [selftest]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void plug_send(uint64_t bytes);
void plug_signal_record(void *uc);
void plug_selftest(void);
void plug_busy(unsigned ms);

__attribute__((noinline)) static void producer(void)
{
    for (int i = 0; i < 40; i++)
        plug_send(100);
}

__attribute__((noinline)) static void consumer(void)
{
    for (int i = 0; i < 20; i++)
        plug_send(7);
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si;
    plug_signal_record(uc);
}

__attribute__((noinline)) static void signaler(void)
{
    for (int i = 0; i < 5; i++)
        raise(SIGUSR1);
}

__attribute__((noinline)) static void child_work(void)
{
    for (int i = 0; i < 3; i++)
        plug_send(1000);
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    producer();
    consumer();
    signaler();
    pid_t pid = fork();
    if (pid == 0) {
        child_work();
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (argc > 1 && !strcmp(argv[1], "selftest")) {
        plug_selftest();
        plug_busy(300);
    }
    printf("api_prog done %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
