/*
 * fib - computes fib(n) with one libsf task per call and compares it with plain
 * recursion.
 *
 * Fibonacci is the worst case for a task runtime: each task adds two numbers,
 * so the run time is almost all scheduling overhead. That makes it a fair
 * smoke test (1.3 million tasks for fib(30), nested gets everywhere, every way
 * a task can run) and an honest measure of what one task costs. The value is
 * checked against a loop, and the counters against the number of calls.
 *
 *     usage: fib [n]        n in 0..45, default 30
 *     SF_THREADS=2 ./fib 30
 *
 * Exit status: 0 right answer, 1 wrong answer or runtime failure, 2 bad usage.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sf.h"

#define DEFAULT_N 30
/* fib(46) no longer fits a 32-bit intptr_t, and fib(45) already makes 1.8
 * billion tasks: minutes, not seconds. */
#define MAX_N 45

/* The shape from sf.h: queue the n-1 branch, compute n-2 here meanwhile, then
 * get. Values travel in the void * itself, so no task allocates. */
static void *fib_task(void *arg)
{
    intptr_t n = (intptr_t)arg;
    if (n < 2)
        return arg;
    sf_future *a = sf_do(fib_task, (void *)(n - 1));
    if (!a) {
        /* No memory for a future: the work can still be done right here, and
         * a sample should not fail where a real program would degrade. */
        return (void *)((intptr_t)fib_task((void *)(n - 1)) +
                        (intptr_t)fib_task((void *)(n - 2)));
    }
    intptr_t b = (intptr_t)fib_task((void *)(n - 2));
    intptr_t r = (intptr_t)sf_get(a) + b;
    sf_release(a);
    return (void *)r;
}

/* The same recursion without tasks: the baseline the overhead is measured
 * against. */
/* noinline and the empty asm keep gcc -O2 from inlining and loop-converting
 * the recursion (which makes it about 3x faster than the calls it stands
 * for); the comparison is with the same calls, minus the tasks. */
__attribute__((noinline)) static long fib_plain(int n)
{
    if (n < 2)
        return n;
    long a = fib_plain(n - 1);
    __asm__ volatile("" : "+r"(a));
    long b = fib_plain(n - 2);
    __asm__ volatile("" : "+r"(b));
    return a + b;
}

static long fib_loop(int n)
{
    long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long t = a + b;
        a = b;
        b = t;
    }
    return a;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void usage_error(const char *why)
{
    fprintf(stderr, "fib: %s; usage: fib [n] (n: 0..%d, default %d)\n", why, MAX_N, DEFAULT_N);
    exit(2);
}

static int parse_n(const char *s)
{
    int n = 0;
    if (!*s)
        usage_error("n is empty");
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            usage_error("n must be a number");
        n = n * 10 + (*p - '0');
        if (n > MAX_N)
            usage_error("n is too large");
    }
    return n;
}

int main(int argc, char **argv)
{
    int n = DEFAULT_N;
    if (argc > 2)
        usage_error("too many arguments");
    if (argc == 2)
        n = parse_n(argv[1]);

    /* Starting the runtime explicitly keeps the pool's start-up out of the
     * timing and reports a bad configuration before any work is done. */
    if (sf_init(NULL) < 0) {
        fprintf(stderr, "fib: sf_init: %s\n", strerror(errno));
        return 1;
    }

    double t0 = now_ms();
    long got = (long)(intptr_t)fib_task((void *)(intptr_t)n);
    double t_sf = now_ms() - t0;

    sf_stats st;
    int have_stats = sf_stats_read(&st) == 0;

    /* volatile: so the compiler cannot fold the baseline into a constant */
    volatile int vn = n;
    t0 = now_ms();
    long plain = fib_plain(vn);
    double t_plain = now_ms() - t0;

    long want = fib_loop(n);
    printf("fib(%d) = %ld\n", n, got);
    printf("libsf: %10.3f ms", t_sf);
    if (have_stats)
        printf(" (%d thread%s: %d pool worker%s and this one)", st.threads,
               st.threads == 1 ? "" : "s", st.workers, st.workers == 1 ? "" : "s");
    printf("\nplain: %10.3f ms (the same recursion without tasks", t_plain);
    if (t_plain > 0.0)
        printf("; libsf takes %.1fx as long", t_sf / t_plain);
    printf(")\n");
    if (have_stats) {
        printf("tasks: created %" PRIu64 ", run_inline %" PRIu64 ", run_pool %" PRIu64
               ", run_stolen %" PRIu64 "\n",
               st.created, st.run_inline, st.run_pool, st.run_stolen);
        /* every call with n >= 2 makes one task: fib(n+1) - 1 of them, and
         * every task runs exactly once since none is released unstarted */
        uint64_t tasks = (uint64_t)fib_loop(n + 1) - 1;
        uint64_t ran = st.run_inline + st.run_pool + st.run_stolen;
        if (st.created != tasks || ran != tasks || st.discarded != 0)
            fprintf(stderr, "fib: warning: counters do not add up: %" PRIu64 " tasks, "
                    "created %" PRIu64 ", run %" PRIu64 ", discarded %" PRIu64 "\n",
                    tasks, st.created, ran, st.discarded);
    } else {
        fprintf(stderr, "fib: sf_stats_read: %s\n", strerror(errno));
    }

    sf_shutdown();

    if (got != want || plain != want) {
        fprintf(stderr, "fib: WRONG: fib(%d) is %ld; libsf said %ld, plain recursion %ld\n",
                n, want, got, plain);
        return 1;
    }
    return 0;
}
