/*
 * switch_sf.c - the cost of a fiber switch (runtime/platform/fiber.h): a round trip
 * from the thread's own context into a made one and back (two switches).
 *
 *   tools/bench/switch_sf [N]   N round trips per rep (default 10,000,000),
 *                               5 reps; prints the best rep in ns per round
 *                               trip, and which switch the build has.
 *
 * Instructions: count the program at two N and divide the difference, which
 * leaves the set-up out, e.g. with callgrind (tools/bench/README.md):
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null switch_sf 1000000
 * System calls: strace -c -f switch_sf 1000000 shows the same calls as
 * switch_sf 1 (none per switch with the assembly; one per switch with
 * ucontext, whose swapcontext sets the signal mask).
 */
#include "platform/fiber.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static struct sf__ctx main_ctx, fib;

static void echo(void *arg)
{
    (void)arg;
    for (;;)
        sf__ctx_switch(&fib, &main_ctx);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000L;
    struct sf__stack s;
    if (n < 1 || sf__stack_alloc(&s, 64 * 1024) != 0) {
        fprintf(stderr, "usage: switch_sf [round trips > 0]\n");
        return 2;
    }
    sf__ctx_init_thread(&main_ctx, 0, 0);
    sf__ctx_make(&fib, &s, echo, NULL);
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++)
            sf__ctx_switch(&main_ctx, &fib);
        double ns = (now_ns() - t0) / (double)n;
        if (rep == 0 || ns < best)
            best = ns;
    }
    printf("%s switch: %.2f ns per round trip (two switches), best of 5 reps of %ld\n",
           sf__fiber_impl, best, n);
    sf__ctx_destroy(&fib);
    sf__stack_free(&s);
    return 0;
}
