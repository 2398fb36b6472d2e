/*
 * example.c - the program `scripts/demo` profiles, and the end-to-end test of the metric rules:
 * the call tree of Figure 2-1 of the metric specification.
 *
 *   main() { A(); do 2 units of work; B(); }
 *   A()    { C(10); }
 *   B()    { C(7.5); do 5 units of work; C(7.5); }
 *   C(arg) { do 20% of arg itself, 40% by calling E, 40% by calling F }
 *   F(arg) { do 25% itself, 75% by calling G }
 *
 * so: main 32 inclusive (2 exclusive), A 10 (0), B 20 (5), C 25 (5) of which 10 from A and 15
 * from B, E 10 (10), F 10 (2.5), G 7.5 (7.5). A unit is 0.1 s of CPU time by default;
 * `example N` scales it by N/10.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double unit_secs = 0.1;
static volatile double sink;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The work is done in each function itself (a macro, not an inline function, so that no
 * debugger or profiler sees it as a function of its own), so that it is that function's exclusive
 * time. It is measured in CPU time, not in loop iterations, so the shares stay exact when another
 * program competes for the core (an iteration then costs more CPU time). */
#define spin(units)                                                                              \
    do {                                                                                         \
        double x_ = 0, t0_ = cpu_now(), secs_ = (units) * unit_secs;                             \
        while (cpu_now() - t0_ < secs_)                                                          \
            for (int i_ = 0; i_ < 100000; i_++)                                                  \
                x_ += (double)i_ * 0.5;                                                          \
        sink += x_;                                                                              \
    } while (0)

#define FN __attribute__((noinline, noclone))

FN void G(double u) { spin(u); }
FN void E(double u) { spin(u); }
FN void F(double u) { spin(u * 0.25); G(u * 0.75); }
FN void C(double arg) { spin(arg * 0.2); E(arg * 0.4); F(arg * 0.4); }
FN void A(void) { C(10); }
FN void B(void) { C(7.5); spin(5); C(7.5); }

int main(int argc, char **argv)
{
    if (argc > 1)
        unit_secs *= atof(argv[1]) / 10.0;
    A();
    spin(2);
    B();
    printf("example: done (%g)\n", sink > 0 ? 1.0 : 0.0);
    return 0;
}
