/*
 * test_memory.c - memory comes back: after a burst of pending futures is
 * released, the futures' slabs and the queue's grown ring are given back to
 * the system (runtime/future.c, runtime/pending.h), measured as the
 * process's resident set. The memory is reused by the next burst, and
 * futures handed out from discarded slabs work as any other.
 *
 * Under a sanitizer the resident set is not the runtime's to judge (shadow
 * memory of discarded pages stays resident): there the bursts are smaller
 * and only their results are checked.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BURST (TU_SANITIZED ? 1000000L : 10000000L)
#define MIB (1024.0 * 1024.0)

static double rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    long size, resident;
    ck_assert_int_eq(fscanf(f, "%ld %ld", &size, &resident), 2);
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / MIB;
}

static void *plus_one(void *arg) { return (void *)((long)arg + 1); }

/* Makes BURST pending futures, releases them oldest first (none runs), and
 * returns the resident set at the peak. */
static double burst(sf_future **f)
{
    for (long i = 0; i < BURST; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(plus_one, (void *)i));
    double peak = rss_mib();
    for (long i = 0; i < BURST; i++)
        sf_release(f[i]);
    return peak;
}

/* Waits up to a second for the resident set to fall to `limit`. */
static double rss_within_a_second(double limit)
{
    double now = rss_mib();
    for (int i = 0; i < 100 && now > limit; i++) {
        tu_sleep_ms(10);
        now = rss_mib();
    }
    return now;
}

static const int thread_counts[] = {1, 2};

START_TEST(released_burst_gives_memory_back)
{
    tu_env_threads(thread_counts[_i]);
    sf_future **f = malloc(BURST * sizeof *f);
    ck_assert_ptr_nonnull(f);
    /* The handles array is the test's: make it resident before measuring
     * (non-zero, or the compiler makes the loop a calloc). */
    for (long i = 0; i < BURST; i++)
        f[i] = (sf_future *)(i + 1);
    sf_future *w = sf_do(tu_fib, (void *)15L); /* the runtime starts, warm */
    ck_assert_ptr_eq(sf_get(w), (void *)tu_fib_exact(15));
    sf_release(w);
    double before = rss_mib();
    /* Two rounds at one thread: the second reuses what the first gave back. */
    int rounds = _i == 0 ? 2 : 1;
    for (int round = 0; round < rounds; round++) {
        double peak = burst(f);
        double after = rss_within_a_second(before + 16);
        fprintf(stderr, "round %d: RSS before %.1f MiB, peak %.1f, a second after release %.1f\n",
                round, before, peak, after);
#if !TU_SANITIZED
        /* 10 M futures of 32 bytes, and a ring of 16 M slots of 8 */
        ck_assert_msg(peak - before >= 300, "peak %.1f MiB, before %.1f", peak, before);
        ck_assert_msg(after <= before + 16, "after %.1f MiB, before %.1f", after, before);
#endif
        /* Futures from discarded slabs work: exact results. */
        sf_future *g = sf_do(tu_fib, (void *)20L);
        ck_assert_ptr_eq(sf_get(g), (void *)tu_fib_exact(20));
        sf_release(g);
    }
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_eq(s.discarded, (uint64_t)rounds * (uint64_t)BURST);
    free(f);
    sf_shutdown();
}
END_TEST

static Suite *memory_suite(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("memory");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, released_burst_gives_memory_back, 0,
                        (int)(sizeof thread_counts / sizeof thread_counts[0]));
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(memory_suite)
