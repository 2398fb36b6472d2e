/* static_hello.c - a statically linked program (no program interpreter): prints "hello". */
#include <stdio.h>

int main(void)
{
    printf("hello\n");
    return 0;
}
