/*
 * test_for.c - parallel loops (sf_for, sf_for_range): every index exactly
 * once for empty, one-element, odd, extreme and huge ranges; stealing
 * spreads skewed work; loops nest and compose with futures at any
 * SF_THREADS; misuse is EINVAL.
 *
 * "Exactly once" is checked two ways. A counter per index (atomic adds)
 * for ranges that fit in memory. For huge ranges, each thread records the
 * runs of consecutive indices it executed (a part's indices run in
 * increasing order on one thread, sf.h), and the runs of all threads,
 * sorted, must tile [from, to) with no gap and no overlap: exact, and cheap
 * enough for 2^31 - 1 indices.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

/* ---- runs of consecutive indices, per thread ---------------------------- */

struct run {
    long lo, hi; /* [lo, hi) */
};

#define MAX_RECORDERS 64

struct recorder {
    int open;
    long lo, last; /* the open run is [lo, last] (inclusive: last may be LONG_MAX - 1) */
    struct run *runs;
    size_t n, cap;
};

static struct recorder recorders[MAX_RECORDERS];
static atomic_int nrecorders;
static atomic_int rec_gen = 1;
static _Thread_local int my_rec = -1, my_gen;

static struct recorder *recorder_self(void)
{
    int g = atomic_load(&rec_gen);
    if (my_gen != g) {
        my_gen = g;
        my_rec = atomic_fetch_add(&nrecorders, 1);
        ck_assert_int_lt(my_rec, MAX_RECORDERS);
    }
    return &recorders[my_rec];
}

static void push_run(struct recorder *r, long lo, long hi)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->runs = realloc(r->runs, r->cap * sizeof r->runs[0]);
        ck_assert_ptr_nonnull(r->runs);
    }
    r->runs[r->n++] = (struct run){lo, hi};
}

/* Index i ran on this thread. */
static inline void record(long i)
{
    struct recorder *r = recorder_self();
    if (r->open && r->last != LONG_MAX && i == r->last + 1) {
        r->last = i;
        return;
    }
    if (r->open)
        push_run(r, r->lo, r->last + 1);
    r->open = 1;
    r->lo = r->last = i;
}

static void record_body(long i, void *ctx)
{
    (void)ctx;
    record(i);
}

static long range_grain; /* the grain a range body may not exceed (0: any) */

static void record_range_body(long lo, long hi, void *ctx)
{
    (void)ctx;
    /* Plain tests, not ck_assert: Check records every assertion it passes,
     * and this runs up to millions of times. */
    if (lo >= hi)
        ck_abort_msg("an empty sub-range [%ld, %ld)", lo, hi);
    if (range_grain > 0 && (unsigned long)hi - (unsigned long)lo > (unsigned long)range_grain)
        ck_abort_msg("a sub-range of %lu indices, grain %ld", (unsigned long)hi - (unsigned long)lo,
                     range_grain);
    struct recorder *r = recorder_self();
    if (r->open && lo != LONG_MIN && r->last == lo - 1) {
        r->last = hi - 1;
        return;
    }
    if (r->open)
        push_run(r, r->lo, r->last + 1);
    r->open = 1;
    r->lo = lo;
    r->last = hi - 1;
}

static int by_lo(const void *a, const void *b)
{
    long x = ((const struct run *)a)->lo, y = ((const struct run *)b)->lo;
    return x < y ? -1 : x > y;
}

/* Asserts that the runs recorded since the last reset tile [from, to)
 * exactly (to - 1 is the last index, so that to == LONG_MAX works), and
 * starts a new generation. Returns how many threads ran indices. */
static size_t last_runs; /* runs the last check saw, merged per thread */

static int check_runs_and_reset(long from, long to)
{
    size_t total = 0;
    int threads = atomic_load(&nrecorders);
    for (int t = 0; t < threads; t++) {
        struct recorder *r = &recorders[t];
        if (r->open) {
            /* Closed as [lo, last + 1): last + 1 may be LONG_MAX, never more. */
            push_run(r, r->lo, r->last + 1);
            r->open = 0;
        }
        total += r->n;
    }
    struct run *all = malloc((total ? total : 1) * sizeof *all);
    ck_assert_ptr_nonnull(all);
    size_t k = 0;
    for (int t = 0; t < threads; t++) {
        memcpy(all + k, recorders[t].runs, recorders[t].n * sizeof *all);
        k += recorders[t].n;
        free(recorders[t].runs);
        memset(&recorders[t], 0, sizeof recorders[t]);
    }
    qsort(all, total, sizeof *all, by_lo);
    if (from == to) {
        ck_assert_uint_eq(total, 0);
    } else {
        ck_assert_uint_gt(total, 0);
        ck_assert_int_eq(all[0].lo, from);
        for (size_t i = 0; i + 1 < total; i++)
            ck_assert_msg(all[i].hi == all[i + 1].lo,
                          "run [%ld, %ld) then [%ld, %ld): %s", all[i].lo, all[i].hi,
                          all[i + 1].lo, all[i + 1].hi,
                          all[i].hi > all[i + 1].lo ? "an index ran twice" : "indices missed");
        ck_assert_int_eq(all[total - 1].hi, to);
    }
    free(all);
    last_runs = total;
    atomic_store(&nrecorders, 0);
    atomic_fetch_add(&rec_gen, 1);
    return threads;
}

/* ---- a counter per index ------------------------------------------------ */

struct counted {
    long from;
    _Atomic unsigned char *hits;
};

static void count_body(long i, void *ctx)
{
    struct counted *c = ctx;
    atomic_fetch_add_explicit(&c->hits[i - c->from], 1, memory_order_relaxed);
}

static void check_counted_for(long from, long to)
{
    size_t n = (size_t)(to - from);
    struct counted c = {from, calloc(n ? n : 1, 1)};
    ck_assert_ptr_nonnull(c.hits);
    ck_assert_int_eq(sf_for(from, to, count_body, &c), 0);
    for (size_t i = 0; i < n; i++)
        if (c.hits[i] != 1)
            ck_abort_msg("index %ld ran %d times", from + (long)i, c.hits[i]);
    free(c.hits);
}

static const int thread_counts[] = {1, 2, 3, 4};
#define NCOUNTS (int)(sizeof thread_counts / sizeof thread_counts[0])

/* ---- exactly once --------------------------------------------------------- */

START_TEST(empty_range_is_a_no_op)
{
    tu_env_threads(thread_counts[_i]);
    static const long at[] = {0, -7, LONG_MIN, LONG_MAX};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        ck_assert_int_eq(sf_for(at[k], at[k], record_body, NULL), 0);
        ck_assert_int_eq(sf_for_range(at[k], at[k], 0, record_range_body, NULL), 0);
        ck_assert_int_eq(check_runs_and_reset(at[k], at[k]), 0);
    }
    sf_shutdown();
}
END_TEST

START_TEST(one_element_and_odd_ranges_run_each_index_once)
{
    tu_env_threads(thread_counts[_i]);
    static const long r[][2] = {{0, 1},     {41, 42},      {-1, 0},      {-5, 6},
                                {0, 3},     {7, 1000003},  {-99999, 3},  {1, 64 * 4 + 1},
                                {0, 10007}, {100, 100 + 2 * 4 - 1}};
    for (size_t k = 0; k < sizeof r / sizeof r[0]; k++) {
        check_counted_for(r[k][0], r[k][1]);
        ck_assert_int_eq(sf_for(r[k][0], r[k][1], record_body, NULL), 0);
        check_runs_and_reset(r[k][0], r[k][1]);
    }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

START_TEST(extreme_ends_of_long)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_for(LONG_MAX - 5, LONG_MAX, record_body, NULL), 0);
    check_runs_and_reset(LONG_MAX - 5, LONG_MAX);
    ck_assert_int_eq(sf_for(LONG_MIN, LONG_MIN + 7, record_body, NULL), 0);
    check_runs_and_reset(LONG_MIN, LONG_MIN + 7);
    /* All of long but LONG_MAX: 2^64 - 1 indices, in sub-ranges. */
    range_grain = 0;
    ck_assert_int_eq(sf_for_range(LONG_MIN, LONG_MAX, 0, record_range_body, NULL), 0);
    check_runs_and_reset(LONG_MIN, LONG_MAX);
    sf_shutdown();
}
END_TEST

/* 2^31 - 1 indices, one body call each. Under the sanitizers, whose
 * instrumentation of the recorder's thread-local access makes a call ~20 x
 * dearer, 2^26 - 1 (the same code paths, a 32nd of the calls). */
START_TEST(huge_range_runs_each_index_once)
{
    tu_env_threads(2);
    long n = TU_SANITIZED ? (1L << 26) - 1 : (1L << 31) - 1;
    ck_assert_int_eq(sf_for(0, n, record_body, NULL), 0);
    int threads = check_runs_and_reset(0, n);
    ck_assert_int_ge(threads, 1);
    /* The same count in sub-ranges of a fixed grain. */
    range_grain = 4093;
    ck_assert_int_eq(sf_for_range(-n, 0, range_grain, record_range_body, NULL), 0);
    check_runs_and_reset(-n, 0);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

START_TEST(range_bodies_respect_the_grain)
{
    tu_env_threads(thread_counts[_i]);
    static const long grains[] = {1, 2, 3, 64, 1000, 999983, 0};
    for (size_t k = 0; k < sizeof grains / sizeof grains[0]; k++) {
        range_grain = grains[k];
        ck_assert_int_eq(sf_for_range(-12345, 1000000, grains[k], record_range_body, NULL), 0);
        check_runs_and_reset(-12345, 1000000);
        ck_assert_int_eq(sf_for_range(5, 6, grains[k], record_range_body, NULL), 0);
        check_runs_and_reset(5, 6);
    }
    sf_shutdown();
}
END_TEST

/* ---- stealing spreads skewed work ---------------------------------------- */

/* Burns `ms` of this thread's CPU time: the same amount of work on every
 * thread, however the system schedules it. */
static void burn_cpu_ms(double ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 1000; i++)
            __asm__ volatile("" ::: "memory");
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

#define SKEW_N 1000
#define SKEW_HEAVY 100 /* indices 0..99: all the work, in the caller's part */

struct skew {
    pthread_t who[SKEW_HEAVY];
};

static void skew_body(long i, void *ctx)
{
    struct skew *s = ctx;
    if (i < SKEW_HEAVY) {
        burn_cpu_ms(1.0);
        s->who[i] = pthread_self();
    }
}

/*
 * At SF_THREADS=2 the static split gives the caller [0, 500), with every
 * heavy index, and the worker [500, 1000), with none. Without stealing the
 * caller runs all 100 heavy indices; with it, the worker takes half of what
 * is left each time it runs dry, so each thread runs about half. Each must
 * have run at least 20 of them: a bound far from both 0 and 50, so that a
 * descheduled thread on a loaded machine cannot fail it, while no schedule
 * without stealing can pass it.
 */
START_TEST(stealing_spreads_skewed_work)
{
    tu_env_threads(2);
    struct skew s;
    memset(&s, 0, sizeof s);
    (void)sf_for(0, 1, skew_body, &s); /* start the runtime and its worker */
    memset(&s, 0, sizeof s);
    double t0 = tu_now_ms();
    ck_assert_int_eq(sf_for(0, SKEW_N, skew_body, &s), 0);
    double ms = tu_now_ms() - t0;
    pthread_t me = pthread_self();
    int mine = 0;
    for (int i = 0; i < SKEW_HEAVY; i++)
        mine += pthread_equal(s.who[i], me) != 0;
    printf("# skewed loop at 2 threads: caller ran %d of %d heavy indices, worker %d; "
           "%.1f ms for %d ms of work (ideal %d ms)\n",
           mine, SKEW_HEAVY, SKEW_HEAVY - mine, ms, SKEW_HEAVY, SKEW_HEAVY / 2);
    ck_assert_int_ge(mine, 20);
    ck_assert_int_ge(SKEW_HEAVY - mine, 20);
    sf_shutdown();
}
END_TEST

/* ---- composition ------------------------------------------------------------ */

#define OUTER 24
#define INNER 1000

static _Atomic unsigned char grid[OUTER][INNER];

static void inner_body(long j, void *ctx)
{
    long i = (long)(intptr_t)ctx;
    atomic_fetch_add_explicit(&grid[i][j], 1, memory_order_relaxed);
}

static void outer_body(long i, void *ctx)
{
    (void)ctx;
    if (sf_for(0, INNER, inner_body, (void *)(intptr_t)i) != 0)
        ck_abort_msg("an inner loop failed: %s", strerror(errno));
}

static void check_grid(void)
{
    for (int i = 0; i < OUTER; i++)
        for (int j = 0; j < INNER; j++) {
            if (grid[i][j] != 1)
                ck_abort_msg("grid[%d][%d] ran %d times", i, j, grid[i][j]);
            grid[i][j] = 0;
        }
}

START_TEST(nested_loops)
{
    tu_env_threads(thread_counts[_i]);
    for (int rep = 0; rep < 3; rep++) {
        ck_assert_int_eq(sf_for(0, OUTER, outer_body, NULL), 0);
        check_grid();
    }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

static void *loop_task(void *arg)
{
    (void)arg;
    ck_assert_int_eq(sf_for(0, OUTER, outer_body, NULL), 0);
    return (void *)7;
}

START_TEST(loop_inside_a_task)
{
    tu_env_threads(thread_counts[_i]);
    sf_future *f[4];
    for (int k = 0; k < 4; k++)
        f[k] = sf_do(loop_task, NULL);
    for (int k = 0; k < 4; k++) {
        ck_assert_ptr_eq(sf_get(f[k]), (void *)7);
        sf_release(f[k]);
    }
    for (int i = 0; i < OUTER; i++)
        for (int j = 0; j < INNER; j++) {
            if (grid[i][j] != 4)
                ck_abort_msg("grid[%d][%d] ran %d times, not 4", i, j, grid[i][j]);
            grid[i][j] = 0;
        }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

#define FIB_N 14

static void fib_body(long i, void *ctx)
{
    long *out = ctx;
    sf_future *f = sf_do(tu_fib, (void *)(intptr_t)(FIB_N + i % 3));
    if (f == NULL)
        ck_abort_msg("sf_do: %s", strerror(errno));
    out[i] = (long)sf_get(f);
    sf_release(f);
}

START_TEST(futures_inside_the_body)
{
    tu_env_threads(thread_counts[_i]);
    long out[200];
    ck_assert_int_eq(sf_for(0, 200, fib_body, out), 0);
    for (int i = 0; i < 200; i++)
        ck_assert_int_eq(out[i], tu_fib_exact(FIB_N + i % 3));
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* A loop whose body gets a future queued before the loop, by the caller:
 * sf_for submits like a get, and the future may run anywhere. */
static sf_future *shared_f;

static void get_shared_body(long i, void *ctx)
{
    long *out = ctx;
    out[i] = (long)sf_get(shared_f);
}

START_TEST(body_gets_a_future_made_before_the_loop)
{
    tu_env_threads(thread_counts[_i]);
    shared_f = sf_do(tu_fib, (void *)20);
    long out[64];
    ck_assert_int_eq(sf_for(0, 64, get_shared_body, out), 0);
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(out[i], tu_fib_exact(20));
    sf_release(shared_f);
    sf_shutdown();
}
END_TEST

static void *foreign_loops(void *arg)
{
    long base = (long)(intptr_t)arg;
    for (int rep = 0; rep < 5; rep++) {
        struct counted c = {base, calloc(50000, 1)};
        ck_assert_ptr_nonnull(c.hits);
        ck_assert_int_eq(sf_for(base, base + 50000, count_body, &c), 0);
        for (int i = 0; i < 50000; i++)
            if (c.hits[i] != 1)
                ck_abort_msg("index %ld ran %d times", base + i, c.hits[i]);
        free(c.hits);
    }
    return NULL;
}

START_TEST(loops_from_many_threads_at_once)
{
    tu_env_threads(thread_counts[_i]);
    pthread_t t[6];
    for (int k = 0; k < 6; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, foreign_loops, (void *)(intptr_t)(k * 100000)),
                         0);
    for (int k = 0; k < 6; k++)
        pthread_join(t[k], NULL);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* One thread: the caller runs every index itself, in order, and makes no
 * task. */
START_TEST(one_thread_runs_the_loop_in_order)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_for(-3, 100000, record_body, NULL), 0);
    ck_assert_int_eq(check_runs_and_reset(-3, 100000), 1);
    ck_assert_uint_eq(last_runs, 1); /* one thread, in increasing order */
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 0);
    sf_shutdown();
}
END_TEST

/* Participants are tasks of the caller: at 4 threads a loop makes 3. */
START_TEST(participants_are_counted_tasks)
{
    tu_env_threads(4);
    ck_assert_int_eq(sf_for(0, 1000, record_body, NULL), 0);
    check_runs_and_reset(0, 1000);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.workers, 3);
    ck_assert_uint_eq(s.created, 3);
    /* Two indices: two participants, so one task. */
    ck_assert_int_eq(sf_for(0, 2, record_body, NULL), 0);
    check_runs_and_reset(0, 2);
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 4);
    sf_shutdown();
}
END_TEST

/* ---- misuse ------------------------------------------------------------- */

START_TEST(misuse_is_einval_and_starts_nothing)
{
    tu_env_threads(2);
    errno = 0;
    ck_assert_int_eq(sf_for(0, 10, NULL, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_for(10, 9, record_body, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_for(LONG_MAX, LONG_MIN, record_body, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_for_range(0, 10, -1, record_range_body, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_for_range(0, 10, 0, NULL, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_for_range(1, 0, 1, record_range_body, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(check_runs_and_reset(0, 0), 0); /* no body ran */
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), -1); /* nothing started the runtime */
    ck_assert_int_eq(errno, ESRCH);
    /* The first loop starts it, from the environment. */
    ck_assert_int_eq(sf_for(0, 10, record_body, NULL), 0);
    check_runs_and_reset(0, 10);
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_int_eq(s.threads, 2);
    sf_shutdown();
}
END_TEST

static Suite *for_suite(void)
{
    Suite *s = suite_create("for");
    TCase *tc = tcase_create("for");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, empty_range_is_a_no_op, 0, NCOUNTS);
    tcase_add_loop_test(tc, one_element_and_odd_ranges_run_each_index_once, 0, NCOUNTS);
    tcase_add_loop_test(tc, extreme_ends_of_long, 0, NCOUNTS);
    tcase_add_test(tc, huge_range_runs_each_index_once);
    tcase_add_loop_test(tc, range_bodies_respect_the_grain, 0, NCOUNTS);
    tcase_add_test(tc, stealing_spreads_skewed_work);
    tcase_add_loop_test(tc, nested_loops, 0, NCOUNTS);
    tcase_add_loop_test(tc, loop_inside_a_task, 0, NCOUNTS);
    tcase_add_loop_test(tc, futures_inside_the_body, 0, NCOUNTS);
    tcase_add_loop_test(tc, body_gets_a_future_made_before_the_loop, 0, NCOUNTS);
    tcase_add_loop_test(tc, loops_from_many_threads_at_once, 0, NCOUNTS);
    tcase_add_test(tc, one_thread_runs_the_loop_in_order);
    tcase_add_test(tc, participants_are_counted_tasks);
    tcase_add_test(tc, misuse_is_einval_and_starts_nothing);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(for_suite)
