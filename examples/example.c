/*
 * example.c - the program `scripts/demo` profiles: the call tree of Figure 2-1 of the metric
 * specification (main -> A -> C, main -> B -> C twice; C -> E, C -> F -> G), with work in units
 * of about 0.1 s of CPU time each by default. Usage: example [seconds-per-unit x 10].
 */
#include <stdio.h>
#include <stdlib.h>

static double unit_iters = 2.5e7;
static volatile double sink;

__attribute__((noinline)) static void work(double units)
{
    double x = 0;
    long n = (long)(units * unit_iters);
    for (long i = 0; i < n; i++)
        x += (double)i * 0.5;
    sink += x;
}

__attribute__((noinline)) void G(double u) { work(u); }
__attribute__((noinline)) void E(double u) { work(u); }
__attribute__((noinline)) void F(double u) { work(u * 0.25); G(u * 0.75); }

/* 20% in C itself, 40% in E, 40% in F */
__attribute__((noinline)) void C(double arg)
{
    work(arg * 0.2);
    E(arg * 0.4);
    F(arg * 0.4);
}

__attribute__((noinline)) void A(void) { C(10); }

__attribute__((noinline)) void B(void)
{
    C(7.5);
    work(5);
    C(7.5);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        unit_iters *= atof(argv[1]) / 10.0;
    A();
    work(2);
    B();
    printf("example: done (%g)\n", sink > 0 ? 1.0 : 0.0);
    return 0;
}
