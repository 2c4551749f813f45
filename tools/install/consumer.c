/*
 * consumer - the program make installcheck builds against the installed
 * libsf (tools/install/installcheck), once through pkg-config and once
 * through CMake. It uses the calls a first program uses: nested sf_do and
 * sf_get, a loop, a failure read back, and prints one line that the check
 * compares exactly.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sf.h>

static void *fib(void *arg)
{
    intptr_t n = (intptr_t)arg;
    if (n < 2)
        return arg;
    sf_future *a = sf_do(fib, (void *)(n - 1));
    if (!a)
        return NULL;
    intptr_t b = (intptr_t)fib((void *)(n - 2));
    intptr_t r = (intptr_t)sf_get(a) + b;
    sf_release(a);
    return (void *)r;
}

static void square(long i, void *ctx)
{
    ((long *)ctx)[i] = i * i;
}

static void *fails(void *arg)
{
    (void)arg;
    sf_fail(ERANGE, "out of range");
    return NULL;
}

int main(void)
{
    long squares[100];
    long sum = 0;
    sf_future *f = sf_do(fib, (void *)(intptr_t)20);
    if (!f)
        return 1;
    intptr_t fib20 = (intptr_t)sf_get(f);
    sf_release(f);
    if (sf_for(0, 100, square, squares) != 0)
        return 1;
    for (int i = 0; i < 100; i++)
        sum += squares[i];
    f = sf_do(fails, NULL);
    void *v;
    int code = f ? sf_wait(f, &v) : -1;
    const char *msg = f ? sf_error_message(f) : "";
    printf("fib(20) = %ld, sum of squares = %ld, failure %s: %s\n", (long)fib20, sum,
           code == ERANGE ? "ERANGE" : "?", msg ? msg : "(none)");
    sf_release(f);
    sf_shutdown();
    return 0;
}
