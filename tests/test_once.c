/*
 * test_once.c - every task runs exactly once, and every get returns its value,
 * however many threads get the same futures at once.
 */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const int thread_counts[] = {2, 4};

#define NGETTERS 8 /* pthreads of ours, main included */
#define NFUT 512
#define ROUNDS 20

static sf_future *futs[NFUT];
static atomic_int runs[NFUT];
static atomic_long bad_values;
static atomic_int nested;
static pthread_barrier_t start_bar, end_bar;

static long want(long i) { return i * 3 + 1000 + (atomic_load(&nested) ? 55 : 0); }

static void *once_task(void *arg)
{
    long i = (long)arg;
    atomic_fetch_add(&runs[i], 1);
    long extra = 0;
    if (atomic_load(&nested))
        extra = (long)tu_fib((void *)10L); /* 55, through sf_do/sf_get */
    else if (i % 7 == 0)
        for (volatile int k = 0; k < 2000; k++) /* some tasks take a while */
            ;
    return (void *)(i * 3 + 1000 + extra);
}

/* The order in which getter g visits the futures in a round. */
static long order(int g, int round, long k)
{
    switch ((g + round) % 4) {
    case 0: return k;
    case 1: return NFUT - 1 - k;
    case 2: return (k * (2 * g + 7)) % NFUT; /* odd stride: a permutation */
    default: return (k + (long)g * NFUT / NGETTERS) % NFUT;
    }
}

static void get_all(int g, int round)
{
    for (long k = 0; k < NFUT; k++) {
        long i = order(g, round, k);
        void *v = sf_get(futs[i]);
        if (v != (void *)want(i))
            atomic_fetch_add(&bad_values, 1);
        if ((k & 1) == 0 && sf_get(futs[i]) != (void *)want(i))
            atomic_fetch_add(&bad_values, 1);
    }
}

static void *getter(void *arg)
{
    int g = (int)(long)arg;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&start_bar);
        get_all(g, round);
        pthread_barrier_wait(&end_bar);
    }
    return NULL;
}

static void *noop(void *arg) { return arg; }

static void run_shared(int threads, int use_nested)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&nested, use_nested);
    pthread_t tid[NGETTERS];
    ck_assert_int_eq(pthread_barrier_init(&start_bar, NULL, NGETTERS), 0);
    ck_assert_int_eq(pthread_barrier_init(&end_bar, NULL, NGETTERS), 0);
    for (long g = 1; g < NGETTERS; g++)
        ck_assert_int_eq(pthread_create(&tid[g], NULL, getter, (void *)g), 0);
    uint64_t made = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (long i = 0; i < NFUT; i++) {
            atomic_store(&runs[i], 0);
            futs[i] = sf_do(once_task, (void *)i);
            ck_assert_ptr_nonnull(futs[i]);
        }
        made += NFUT;
        if (round % 2 == 1) {
            /* Submit them all first (a get submits every pending task of its
             * thread), so idle workers take some too. */
            sf_future *d = sf_do(noop, (void *)1);
            ck_assert_ptr_eq(sf_get(d), (void *)1);
            sf_release(d);
            made++;
        }
        pthread_barrier_wait(&start_bar);
        get_all(0, round);
        pthread_barrier_wait(&end_bar);
        for (long i = 0; i < NFUT; i++) {
            if (atomic_load(&runs[i]) != 1)
                ck_abort_msg("round %d: task %ld ran %d times", round, i,
                             atomic_load(&runs[i]));
            ck_assert_int_eq(sf_is_done(futs[i]), 1);
            ck_assert_ptr_eq(sf_get(futs[i]), (void *)want(i));
            sf_release(futs[i]);
        }
        ck_assert_int_eq(atomic_load(&bad_values), 0);
    }
    for (int g = 1; g < NGETTERS; g++)
        ck_assert_int_eq(pthread_join(tid[g], NULL), 0);
    pthread_barrier_destroy(&start_bar);
    pthread_barrier_destroy(&end_bar);
    ck_assert_int_eq(atomic_load(&bad_values), 0);

    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, threads);
    if (use_nested)
        made += (uint64_t)ROUNDS * NFUT * tu_fib_tasks(10);
    ck_assert_uint_eq(s.created, made);
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}

START_TEST(shared_futures_run_once)
{
    run_shared(thread_counts[_i], 0);
}
END_TEST

START_TEST(shared_nested_futures_run_once)
{
    run_shared(thread_counts[_i], 1);
}
END_TEST

static const long fib_exact[] = {6765, 10946, 17711, 28657, 46368, 75025}; /* fib(20..25) */

START_TEST(fib_20_to_25)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    uint64_t made = 0;
    for (int n = 20; n <= 25; n++) {
        ck_assert_int_eq(tu_fib_exact(n), fib_exact[n - 20]);
        sf_future *f = sf_do(tu_fib, (void *)(long)n);
        ck_assert_ptr_nonnull(f);
        void *r = sf_get(f);
        ck_assert_msg(r == (void *)fib_exact[n - 20], "fib(%d) = %ld, want %ld", n, (long)r,
                      fib_exact[n - 20]);
        sf_release(f);
        made += 1 + tu_fib_tasks(n);
        sf_stats s = tu_stats_quiet();
        ck_assert_uint_eq(s.created, made);
        ck_assert_uint_eq(s.discarded, 0);
        ck_assert_int_le(s.peak_busy, 1);
    }
    sf_shutdown();
}
END_TEST

/* Nested tasks, each counted: a private task that a blocked getter or an idle
 * worker takes from a busy owner must not also be run by its owner. Four
 * pthreads each compute fib(20) where every call (queued or direct) has its
 * own run counter. */
#define NCOUNTED 200000
struct counted_arg {
    long id, n;
};
static struct counted_arg cargs[NCOUNTED];
static atomic_int cruns[NCOUNTED];
static atomic_long cnext;

static struct counted_arg *new_arg(long n)
{
    long id = atomic_fetch_add(&cnext, 1);
    if (id >= NCOUNTED)
        return NULL;
    cargs[id].id = id;
    cargs[id].n = n;
    return &cargs[id];
}

static void *counted_fib(void *p)
{
    struct counted_arg *a = p;
    if (a == NULL)
        return (void *)-1000000L;
    atomic_fetch_add(&cruns[a->id], 1);
    long n = a->n;
    if (n < 2)
        return (void *)n;
    sf_future *f = sf_do(counted_fib, new_arg(n - 1));
    long b = (long)counted_fib(new_arg(n - 2));
    long r = (long)sf_get(f) + b;
    sf_release(f);
    return (void *)r;
}

static void *counted_root(void *arg)
{
    return counted_fib(new_arg((long)arg));
}

START_TEST(nested_counted_tasks_run_once)
{
    enum { NROOTS = 4 };
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t tid[NROOTS];
    for (int i = 0; i < NROOTS; i++)
        ck_assert_int_eq(pthread_create(&tid[i], NULL, counted_root, (void *)20L), 0);
    for (int i = 0; i < NROOTS; i++) {
        void *r;
        ck_assert_int_eq(pthread_join(tid[i], &r), 0);
        ck_assert_ptr_eq(r, (void *)6765L);
    }
    long n = atomic_load(&cnext);
    ck_assert_int_le(n, NCOUNTED);
    for (long i = 0; i < n; i++)
        if (atomic_load(&cruns[i]) != 1)
            ck_abort_msg("task %ld (fib(%ld)) ran %d times", i, cargs[i].n,
                         atomic_load(&cruns[i]));
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, NROOTS * tu_fib_tasks(20));
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}
END_TEST

static Suite *once_suite(void)
{
    Suite *s = suite_create("once");
    int n = (int)(sizeof thread_counts / sizeof thread_counts[0]);
    TCase *tc = tcase_create("once");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, shared_futures_run_once, 0, n);
    tcase_add_loop_test(tc, shared_nested_futures_run_once, 0, n);
    tcase_add_test(tc, fib_20_to_25);
    tcase_add_loop_test(tc, nested_counted_tasks_run_once, 0, n);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(once_suite)
