/* dlopen_plugin.c - the shared library wl_dlopen_lib loads and unloads: one hot function. */
__attribute__((visibility("default"))) double plugin_work(long n)
{
    double x = 0;
    for (long i = 0; i < n; i++)
        x += (double)(i % 5) * 0.25;
    return x;
}
