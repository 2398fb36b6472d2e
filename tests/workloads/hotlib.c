/*
 * hotlib.c - the shared library of wl_hotlines: lib_work() spends its time on one line.
 */
double lib_work(long n)
{
    double s = 1;
    for (long i = 1; i < n; i++)
        s = s * 0.9999999 + 1.0 / (double)i; /* the library's hot line */
    return s;
}
