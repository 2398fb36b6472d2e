/*
 * data_fixture.c - variables of known types for test_symbols_data: each descriptor form of seed
 * 002 (scalars, qualifiers, typedefs, spaces in type names, structures nested to a scalar,
 * arrays, unions, anonymous aggregates), a structure with a hole and tail padding, and
 * thread-locals (the library's TLS block).
 */
typedef unsigned long my_size;

struct inner {
    short s;
    double d;
};

struct outer {
    int a;
    struct inner in;
    long arr[4];
    char tail;
};

union number {
    int i;
    float f;
};

int gi = 1;
unsigned int gu = 2;
const int gc = 3;
int *const gcp = &gi;
const int *gpc = &gc;
my_size gsz = 4;
struct outer gouter = { 1, { 2, 3.0 }, { 4, 5, 6, 7 }, 'x' };
union number gun = { 5 };
struct {
    int x;
    int y;
} ganon = { 1, 2 };

__thread long tl_first = 1;
__thread struct inner tl_inner;

/* keeps them all in the library */
long data_fixture_sum(void)
{
    return gi + (long)gu + gc + *gcp + *gpc + (long)gsz + gouter.a + gun.i + ganon.y + tl_first +
           tl_inner.s;
}
