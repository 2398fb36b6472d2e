// symbols_fixture_cxx.cpp - C++ names for test_symbols (dlopened): a member of a class template,
// a function template (its demangled name has a return type), operator(), an operator template
// a function in an anonymous namespace.
namespace fixns {

template <class T> struct Widget {
    T v;
    T get(int k) const;
};
template <class T> __attribute__((noinline)) T Widget<T>::get(int k) const { return v + (T)k; }
template struct Widget<int>;

template <class T> __attribute__((noinline)) T twice(T x) { return x + x; }
template int twice<int>(int);

struct Adder {
    int n;
    int operator()(int x) const;
};
__attribute__((noinline)) int Adder::operator()(int x) const { return x + n; }

template <class T> __attribute__((noinline)) bool operator<<(const Widget<T> &w, int k)
{
    return w.v < k;
}
template bool operator<< <int>(const Widget<int> &, int);

} // namespace fixns

namespace {
__attribute__((noinline)) int hidden(int x) { return x - 1; }
} // namespace

extern "C" void *cxxfix_hidden_addr(void) { return (void *)hidden; }

// A function whose unlikely branch gcc -O2 moves to "fixns::split(int) [clone .cold]": the branch
// records a return address inside that part.
extern "C" {
void *cxxfix_cold_ra;
__attribute__((noinline, cold)) void cxxfix_record(void) { cxxfix_cold_ra = __builtin_return_address(0); }
}
namespace fixns {
__attribute__((noinline)) int split(int x)
{
    if (__builtin_expect(x == 12345, 0)) {
        cxxfix_record();
        return x * 3;
    }
    return x + 1;
}
} // namespace fixns
extern "C" int cxxfix_split(int x) { return fixns::split(x); }
