/*
 * test_for.c - parallel loops (sf_for, sf_for_range): every index exactly
 * once for empty, one-element, odd, extreme and huge ranges; stealing
 * spreads skewed work; loops nest and compose with futures at any
 * SF_THREADS; a body's sf_fail() fails its loop and stops it, and goes no
 * further; misuse is EINVAL.
 *
 * "Exactly once" is checked two ways. A counter per index (atomic adds)
 * for ranges that fit in memory. For huge ranges, each thread records the
 * runs of consecutive indices it executed (a part's indices run in
 * increasing order on one thread, docs/loops.md), and the runs of all threads,
 * sorted, must tile [from, to) with no gap and no overlap: exact, and cheap
 * enough for 2^31 - 1 indices.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
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

/* 2^27 - 1 indices, one body call each: many grains, many steals, and
 * counts past any 16-bit or 24-bit field (the loop's offsets and counts
 * are unsigned long; extreme_ends_of_long covers 2^64 - 1 indices in
 * sub-ranges). Under the sanitizers, whose instrumentation of the
 * recorder's thread-local access makes a call ~20 x dearer, 2^23 - 1 (the
 * same code paths, a 16th of the calls). */
START_TEST(huge_range_runs_each_index_once)
{
    tu_env_threads(2);
    long n = TU_SANITIZED ? (1L << 23) - 1 : (1L << 27) - 1;
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

/* ---- failures: a loop is a failure scope --------------------------------- */

static const int fail_threads[] = {1, 2, 4};
#define NFAIL (int)(sizeof fail_threads / sizeof fail_threads[0])

#define FAIL_N 10000
#define FAIL_AT 4321

/* What a failing loop's bodies saw. */
struct failing {
    _Atomic unsigned char hits[FAIL_N];
    atomic_int ran;     /* bodies started */
    atomic_int ok;      /* their sf_fail() calls that returned 0 */
    atomic_int already; /* ... that returned -1/EALREADY */
    atomic_int other;   /* ... that returned anything else */
    atomic_long winner; /* the index whose sf_fail() returned 0 */
    int threads;
    int gen; /* which loop: a new one's memory may be a freed one's */
};

static struct failing *failing_new(int threads)
{
    static int gens;
    struct failing *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    atomic_init(&c->winner, -1);
    c->threads = threads;
    c->gen = ++gens;
    return c;
}

/* sf_fail(code, "index %ld", i) from body i, counted. */
static void fail_counted(struct failing *c, int code, long i)
{
    errno = 0;
    int rc = sf_fail(code, "index %ld", i);
    if (rc == 0) {
        atomic_fetch_add(&c->ok, 1);
        atomic_store(&c->winner, i);
    } else if (rc == -1 && errno == EALREADY) {
        atomic_fetch_add(&c->already, 1);
    } else {
        atomic_fetch_add(&c->other, 1);
    }
}

static void fail_at_body(long i, void *ctx)
{
    struct failing *c = ctx;
    atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
    if (i == FAIL_AT)
        fail_counted(c, 42, i);
}

/* Stops at FAIL_AT, as a body that fails returns. */
static void fail_at_range_body(long lo, long hi, void *ctx)
{
    struct failing *c = ctx;
    for (long i = lo; i < hi; i++) {
        atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
        if (i == FAIL_AT) {
            fail_counted(c, 42, i);
            return;
        }
    }
}

/* The loop returned -1 with errno `code` and msg (sf_task_error_message()
 * on its caller's thread) is "index <winner>": exactly one sf_fail()
 * returned 0, and no other returned anything but EALREADY. */
static void check_failed(struct failing *c, int rc, int err, int code, const char *msg)
{
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(err, code);
    ck_assert_int_eq(atomic_load(&c->ok), 1);
    ck_assert_int_eq(atomic_load(&c->other), 0);
    char want[32];
    snprintf(want, sizeof want, "index %ld", atomic_load(&c->winner));
    ck_assert_ptr_nonnull(msg);
    ck_assert_str_eq(msg, want);
}

/* Index FAIL_AT ran once and failed the loop, no index ran twice, and at 1
 * thread exactly the indices up to FAIL_AT ran. */
static void check_fail_at(struct failing *c, int rc, int err, const char *msg)
{
    check_failed(c, rc, err, 42, msg);
    ck_assert_int_eq(atomic_load(&c->winner), FAIL_AT);
    ck_assert_int_eq(atomic_load(&c->already), 0);
    ck_assert_int_eq(c->hits[FAIL_AT], 1);
    for (long i = 0; i < FAIL_N; i++) {
        if (c->hits[i] > 1)
            ck_abort_msg("index %ld ran %d times", i, c->hits[i]);
        if (c->threads == 1 && c->hits[i] != (i <= FAIL_AT))
            ck_abort_msg("at 1 thread index %ld ran %d times", i, c->hits[i]);
    }
}

START_TEST(a_failing_body_fails_the_loop)
{
    int threads = fail_threads[_i];
    tu_env_threads(threads);
    for (int rep = 0; rep < 3; rep++) {
        struct failing *c = failing_new(threads);
        errno = 0;
        int rc = sf_for(0, FAIL_N, fail_at_body, c);
        check_fail_at(c, rc, errno, sf_task_error_message());
        free(c);
    }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

START_TEST(a_failing_range_body_fails_the_loop)
{
    int threads = fail_threads[_i];
    tu_env_threads(threads);
    static const long grains[] = {1, 7, 0};
    for (size_t k = 0; k < sizeof grains / sizeof grains[0]; k++) {
        struct failing *c = failing_new(threads);
        errno = 0;
        int rc = sf_for_range(0, FAIL_N, grains[k], fail_at_range_body, c);
        check_fail_at(c, rc, errno, sf_task_error_message());
        free(c);
    }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* The EARLY_AT-th body to start fails (index EARLY_AT - 1 at 1 thread);
 * every body burns about 20 us, so by then the workers have usually
 * started their parts. Each participant reads the stop flag before its
 * next grain, so only bodies already running, or begun before the flag
 * reached their thread, run after it: a few, far from half of the loop.
 * (A body counted in the order of starts, not a fixed index: the caller
 * could be descheduled before its first index while the workers run
 * theirs.) */
#define EARLY_AT 100
static _Thread_local int early_seen; /* the gen of the loop this thread last ran a body of */
static atomic_int early_threads;      /* threads that ran bodies */

static void early_stop_body(long i, void *ctx)
{
    struct failing *c = ctx;
    if (early_seen != c->gen) {
        early_seen = c->gen;
        atomic_fetch_add(&early_threads, 1);
    }
    atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
    if (atomic_fetch_add(&c->ran, 1) == EARLY_AT - 1) {
        fail_counted(c, EIO, i);
        return;
    }
    burn_cpu_ms(0.02);
}

static void early_stop_range_body(long lo, long hi, void *ctx)
{
    for (long i = lo; i < hi; i++)
        early_stop_body(i, ctx);
}

static void check_early_stop(struct failing *c, int rc, int err)
{
    check_failed(c, rc, err, EIO, sf_task_error_message());
    int ran = atomic_load(&c->ran);
    printf("# early stop at %d threads: %d of %d bodies ran, on %d threads; the %dth failed\n",
           c->threads, ran, FAIL_N, atomic_exchange(&early_threads, 0), EARLY_AT);
    ck_assert_int_ge(ran, EARLY_AT);
    ck_assert_int_lt(ran, FAIL_N / 2);
    for (long i = 0; i < FAIL_N; i++) {
        if (c->hits[i] > 1)
            ck_abort_msg("index %ld ran %d times", i, c->hits[i]);
        if (c->threads == 1 && c->hits[i] != (i < EARLY_AT))
            ck_abort_msg("at 1 thread index %ld ran %d times", i, c->hits[i]);
    }
}

START_TEST(a_failure_stops_the_loop_early)
{
    int threads = fail_threads[_i];
    tu_env_threads(threads);
    struct failing *c = failing_new(threads);
    errno = 0;
    int rc = sf_for(0, FAIL_N, early_stop_body, c);
    check_early_stop(c, rc, errno);
    free(c);
    c = failing_new(threads);
    errno = 0;
    rc = sf_for_range(0, FAIL_N, 1, early_stop_range_body, c);
    check_early_stop(c, rc, errno);
    free(c);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* Every body fails, with code 1000 + i. With more than one thread the
 * first two bodies to start wait for each other first (the first one
 * spins, so the second runs on another thread), so at least two call
 * sf_fail(). */
static void everyone_fails_body(long i, void *ctx)
{
    struct failing *c = ctx;
    atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
    if (atomic_fetch_add(&c->ran, 1) < 2 && c->threads > 1)
        while (atomic_load(&c->ran) < 2)
            sched_yield();
    fail_counted(c, 1000 + (int)i, i);
}

START_TEST(the_first_failure_stands)
{
    int threads = fail_threads[_i];
    tu_env_threads(threads);
    for (int rep = 0; rep < 3; rep++) {
        struct failing *c = failing_new(threads);
        errno = 0;
        int rc = sf_for(0, FAIL_N, everyone_fails_body, c);
        int err = errno;
        int ran = atomic_load(&c->ran);
        check_failed(c, rc, err, 1000 + (int)atomic_load(&c->winner), sf_task_error_message());
        ck_assert_int_eq(atomic_load(&c->already), ran - 1);
        if (threads == 1)
            ck_assert_int_eq(ran, 1);
        else
            ck_assert_int_ge(ran, 2);
        for (long i = 0; i < FAIL_N; i++)
            if (c->hits[i] > 1)
                ck_abort_msg("index %ld ran %d times", i, c->hits[i]);
        free(c);
    }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* ---- what a failure does not reach ---------------------------------------- */

static void *fail_code_task(void *arg)
{
    long code = (long)arg;
    sf_fail((int)code, "task %ld", code);
    return (void *)1;
}

static sf_future *failed_before; /* made before the loop; fails with 77 */

/* Every body makes a task that fails, as a future and in caller storage,
 * and gets it; and gets a failing future made before the loop, whose
 * first get runs it in some body. Each get sees its task's failure; none
 * is the loop's. */
static void gets_failures_body(long i, void *ctx)
{
    struct failing *c = ctx;
    atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
    long code = 1 + i % 50;
    char want[32];
    snprintf(want, sizeof want, "task %ld", code);
    sf_future *f = sf_do(fail_code_task, (void *)code);
    if (f == NULL)
        ck_abort_msg("sf_do: %s", strerror(errno));
    const char *m;
    if (sf_wait(f, NULL) != code || (m = sf_error_message(f)) == NULL || strcmp(m, want) != 0)
        atomic_fetch_add(&c->other, 1);
    sf_release(f);
    sf_task t;
    if (sf_task_do(&t, fail_code_task, (void *)code) != 0)
        ck_abort_msg("sf_task_do: %s", strerror(errno));
    errno = 0;
    if (sf_task_get(&t) != NULL || errno != code || (m = sf_task_error_message()) == NULL ||
        strcmp(m, want) != 0)
        atomic_fetch_add(&c->other, 1);
    if (sf_wait(failed_before, NULL) != 77)
        atomic_fetch_add(&c->other, 1);
}

START_TEST(failures_of_tasks_a_body_gets_stay_theirs)
{
    int threads = fail_threads[_i];
    tu_env_threads(threads);
    failed_before = sf_do(fail_code_task, (void *)77);
    ck_assert_ptr_nonnull(failed_before);
    struct failing *c = failing_new(threads);
    ck_assert_int_eq(sf_for(0, 2000, gets_failures_body, c), 0);
    ck_assert_int_eq(atomic_load(&c->other), 0);
    for (long i = 0; i < 2000; i++)
        if (c->hits[i] != 1)
            ck_abort_msg("index %ld ran %d times", i, c->hits[i]);
    ck_assert_str_eq(sf_error_message(failed_before), "task 77");
    sf_release(failed_before);
    free(c);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

struct loop_in_task {
    struct failing *c;
    int rc, err;
    char *msg; /* sf_task_error_message() after the loop, in the task */
};

static void *failing_loop_task(void *arg)
{
    struct loop_in_task *t = arg;
    errno = 0;
    t->rc = sf_for(0, FAIL_N, fail_at_body, t->c);
    t->err = errno;
    const char *m = sf_task_error_message();
    t->msg = m != NULL ? strdup(m) : NULL;
    return (void *)7;
}

#define NEST_OUTER 16
#define NEST_INNER 1000
#define NEST_FAILING_OUTER 5 /* the outer index that fails in its turn */

struct nest {
    atomic_int bad;      /* outer bodies whose inner loop did not end as it should */
    atomic_int outer_ok; /* outer bodies' own sf_fail() calls that returned 0 */
    int outer_fails;     /* outer body NEST_FAILING_OUTER calls sf_fail() */
};

struct nest_inner {
    struct nest *n;
    long i;
};

static struct nest_inner nest_inner[NEST_OUTER];

/* Inner index 500 of outer index i fails with 30 + i. */
static void nest_inner_body(long j, void *ctx)
{
    struct nest_inner *in = ctx;
    if (j == 500 && sf_fail(30 + (int)in->i, "inner %ld", in->i) != 0)
        atomic_fetch_add(&in->n->bad, 1);
}

static void nest_outer_body(long i, void *ctx)
{
    struct nest *n = ctx;
    nest_inner[i] = (struct nest_inner){n, i};
    errno = 0;
    int rc = sf_for(0, NEST_INNER, nest_inner_body, &nest_inner[i]);
    char want[32];
    snprintf(want, sizeof want, "inner %ld", i);
    const char *m = sf_task_error_message();
    if (rc != -1 || errno != 30 + i || m == NULL || strcmp(m, want) != 0)
        atomic_fetch_add(&n->bad, 1);
    if (n->outer_fails && i == NEST_FAILING_OUTER && sf_fail(99, "outer %ld", i) == 0)
        atomic_fetch_add(&n->outer_ok, 1);
}

/* A failing loop inside a task: sf_for returns the failure in the task,
 * and the task, which does not call sf_fail() itself, ends well. Nested
 * loops: an inner loop's failure is its sf_for's, in the outer body; the
 * outer loop fails only when an outer body calls sf_fail(). */
START_TEST(a_failure_goes_no_further_than_its_loop)
{
    int threads = fail_threads[_i];
    tu_env_threads(threads);
    struct loop_in_task t[2];
    sf_future *f[2];
    for (int k = 0; k < 2; k++) {
        t[k] = (struct loop_in_task){.c = failing_new(threads)};
        f[k] = sf_do(failing_loop_task, &t[k]);
        ck_assert_ptr_nonnull(f[k]);
    }
    for (int k = 0; k < 2; k++) {
        void *r = NULL;
        ck_assert_int_eq(sf_wait(f[k], &r), 0);
        ck_assert_ptr_eq(r, (void *)7);
        ck_assert_ptr_null(sf_error_message(f[k]));
        sf_release(f[k]);
        check_fail_at(t[k].c, t[k].rc, t[k].err, t[k].msg);
        free(t[k].msg);
        free(t[k].c);
    }
    /* The same in a task in caller storage. */
    t[0] = (struct loop_in_task){.c = failing_new(threads)};
    sf_task tt;
    ck_assert_int_eq(sf_task_do(&tt, failing_loop_task, &t[0]), 0);
    errno = 0;
    ck_assert_ptr_eq(sf_task_get(&tt), (void *)7);
    check_fail_at(t[0].c, t[0].rc, t[0].err, t[0].msg);
    free(t[0].msg);
    free(t[0].c);

    struct nest n = {.outer_fails = 0};
    ck_assert_int_eq(sf_for(0, NEST_OUTER, nest_outer_body, &n), 0);
    ck_assert_int_eq(atomic_load(&n.bad), 0);
    n = (struct nest){.outer_fails = 1};
    errno = 0;
    ck_assert_int_eq(sf_for(0, NEST_OUTER, nest_outer_body, &n), -1);
    ck_assert_int_eq(errno, 99);
    ck_assert_str_eq(sf_task_error_message(), "outer 5");
    ck_assert_int_eq(atomic_load(&n.outer_ok), 1);
    ck_assert_int_eq(atomic_load(&n.bad), 0);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

static void *fail_quietly_task(void *arg)
{
    sf_fail((int)(long)arg, NULL);
    return NULL;
}

static void fail_quietly_body(long i, void *ctx)
{
    (void)ctx;
    if (i == 3)
        sf_fail(7, NULL);
}

/* A loop that does not fail leaves this thread's message alone; one that
 * fails with no message leaves none. */
START_TEST(the_message_is_the_last_failures)
{
    tu_env_threads(fail_threads[_i]);
    sf_task t;
    ck_assert_int_eq(sf_task_do(&t, fail_code_task, (void *)5), 0);
    ck_assert_ptr_null(sf_task_get(&t));
    const char *m = sf_task_error_message();
    ck_assert_str_eq(m, "task 5");
    check_counted_for(0, 10000);
    ck_assert_ptr_eq(sf_task_error_message(), m);
    ck_assert_str_eq(m, "task 5");
    /* A failing loop's message, then a loop that does not fail. */
    struct failing *c = failing_new(fail_threads[_i]);
    errno = 0;
    int rc = sf_for(0, FAIL_N, fail_at_body, c);
    check_fail_at(c, rc, errno, sf_task_error_message());
    free(c);
    m = sf_task_error_message();
    check_counted_for(-5000, 5000);
    ck_assert_ptr_eq(sf_task_error_message(), m);
    ck_assert_str_eq(m, "index 4321");
    /* No message: none, after a loop or a task. */
    errno = 0;
    ck_assert_int_eq(sf_for(0, 100, fail_quietly_body, NULL), -1);
    ck_assert_int_eq(errno, 7);
    ck_assert_ptr_null(sf_task_error_message());
    ck_assert_int_eq(sf_task_do(&t, fail_code_task, (void *)6), 0);
    ck_assert_ptr_null(sf_task_get(&t));
    ck_assert_str_eq(sf_task_error_message(), "task 6");
    ck_assert_int_eq(sf_task_do(&t, fail_quietly_task, (void *)8), 0);
    errno = 0;
    ck_assert_ptr_null(sf_task_get(&t));
    ck_assert_int_eq(errno, 8);
    ck_assert_ptr_null(sf_task_error_message());
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

static void *fail_outside(void *arg)
{
    (void)arg;
    errno = 0;
    if (sf_fail(EIO, "not in a task") != -1 || errno != EINVAL)
        return (void *)1;
    return NULL;
}

/* Outside any task and loop sf_fail is still -1/EINVAL: before the
 * runtime starts, on a thread that ran a loop once it returned, on a
 * thread with no registration. */
START_TEST(sf_fail_outside_tasks_and_loops_is_einval)
{
    tu_env_threads(fail_threads[_i]);
    ck_assert_ptr_null(fail_outside(NULL));
    check_counted_for(0, 1000);
    ck_assert_ptr_null(fail_outside(NULL));
    struct failing *c = failing_new(fail_threads[_i]);
    errno = 0;
    int rc = sf_for(0, FAIL_N, fail_at_body, c);
    check_fail_at(c, rc, errno, sf_task_error_message());
    free(c);
    ck_assert_ptr_null(fail_outside(NULL));
    ck_assert_ptr_null(tu_run_on_thread(fail_outside, NULL, 0));
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
    tcase_add_loop_test(tc, a_failing_body_fails_the_loop, 0, NFAIL);
    tcase_add_loop_test(tc, a_failing_range_body_fails_the_loop, 0, NFAIL);
    tcase_add_loop_test(tc, a_failure_stops_the_loop_early, 0, NFAIL);
    tcase_add_loop_test(tc, the_first_failure_stands, 0, NFAIL);
    tcase_add_loop_test(tc, failures_of_tasks_a_body_gets_stay_theirs, 0, NFAIL);
    tcase_add_loop_test(tc, a_failure_goes_no_further_than_its_loop, 0, NFAIL);
    tcase_add_loop_test(tc, the_message_is_the_last_failures, 0, NFAIL);
    tcase_add_loop_test(tc, sf_fail_outside_tasks_and_loops_is_einval, 0, NFAIL);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(for_suite)
