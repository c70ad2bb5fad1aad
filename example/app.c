/* A program with a hot loop nest and a helper called from it: the input of the guide's third
 * workflow (DCPI samples on executed basic blocks). Built with `gcc -O1 -g -o app app.c`. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static long mix(long x) {
    for (int i = 0; i < 8; i++)
        x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3000000, sum = 0;
    for (long i = 0; i < n; i++) {
        if (i % 3 == 0)
            sum += mix(i);
        else
            sum ^= i;
    }
    printf("%ld\n", sum);
    return 0;
}
