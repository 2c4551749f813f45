/*
 * test_foreign.c - threads the program made itself (not pool workers) use
 * libsf at once: sf_do/sf_get from many of them, exact results.
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#define NFOREIGN 8

struct job {
    long n;
    long result;
};

static void *fib_job(void *arg)
{
    struct job *j = arg;
    j->result = (long)tu_fib((void *)j->n);
    return NULL;
}

static void run_wave(int n_threads, long n)
{
    pthread_t tid[NFOREIGN];
    struct job job[NFOREIGN];
    for (int i = 0; i < n_threads; i++) {
        job[i].n = n;
        job[i].result = -1;
        ck_assert_int_eq(pthread_create(&tid[i], NULL, fib_job, &job[i]), 0);
    }
    for (int i = 0; i < n_threads; i++) {
        ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
        ck_assert_msg(job[i].result == tu_fib_exact((int)n), "thread %d: fib(%ld) = %ld, want %ld",
                      i, n, job[i].result, tu_fib_exact((int)n));
    }
}

/* 8 pthreads run fib(20) at once over one pool worker (SF_THREADS=2); a
 * second wave reuses what the first left behind. */
START_TEST(eight_threads_fib20)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(tu_fib_exact(20), 6765);
    run_wave(NFOREIGN, 20);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, 2);
    ck_assert_uint_eq(s.created, NFOREIGN * tu_fib_tasks(20));
    ck_assert_uint_eq(s.discarded, 0);
    run_wave(NFOREIGN, 20);
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2 * NFOREIGN * tu_fib_tasks(20));
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}
END_TEST

/* Same with no pool worker at all: every thread runs its own tasks. */
START_TEST(eight_threads_fib18_one_thread)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    run_wave(NFOREIGN, 18);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, NFOREIGN * tu_fib_tasks(18));
    ck_assert_uint_eq(s.run_pool, 0);
    sf_shutdown();
}
END_TEST

/* No sf_init: the foreign threads' first calls race to start the runtime;
 * exactly one runtime starts, from the environment. */
START_TEST(concurrent_implicit_start)
{
    tu_env_threads(2);
    int before = tu_os_threads();
    run_wave(NFOREIGN, 16);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, 2);
    ck_assert_int_eq(s.workers, 1);
    ck_assert_uint_eq(s.created, NFOREIGN * tu_fib_tasks(16));
    /* One pool: one worker thread beside main. */
    tu_assert_os_threads(before + 1);
    sf_shutdown();
}
END_TEST

/* Futures queued by a thread that then exits without getting them can be got
 * by another thread, and each runs once. */
#define NLEFT 16
static sf_future *left[NLEFT];
static atomic_int left_runs[NLEFT];

static void *left_task(void *arg)
{
    long i = (long)arg;
    atomic_fetch_add(&left_runs[i], 1);
    return (void *)(i * i + 7);
}

static void *make_and_exit(void *arg)
{
    (void)arg;
    for (long i = 0; i < NLEFT; i++)
        left[i] = sf_do(left_task, (void *)i);
    return NULL;
}

START_TEST(futures_of_an_exited_thread)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    tu_run_on_thread(make_and_exit, NULL, 0);
    for (long i = 0; i < NLEFT; i++)
        ck_assert_ptr_nonnull(left[i]);
    for (long i = NLEFT - 1; i >= 0; i -= 2) /* every other one, newest first */
        ck_assert_ptr_eq(sf_get(left[i]), (void *)(i * i + 7));
    for (long i = 0; i < NLEFT; i++)
        ck_assert_ptr_eq(sf_get(left[i]), (void *)(i * i + 7));
    for (long i = 0; i < NLEFT; i++) {
        ck_assert_int_eq(atomic_load(&left_runs[i]), 1);
        sf_release(left[i]);
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, NLEFT);
    ck_assert_uint_eq(s.discarded, 0);
    /* A new thread after the exited one still works. */
    run_wave(2, 12);
    sf_shutdown();
    for (long i = 0; i < NLEFT; i++)
        ck_assert_int_eq(atomic_load(&left_runs[i]), 1);
}
END_TEST

/* Many foreign threads alive at once, each with its own registration: more
 * than the registry's first two chunks (1,024 ids each) hold. Fewer under
 * the sanitizers, which pay per live thread: ThreadSanitizer allows about
 * 8,000 and keeps over a megabyte for each (its state in the thread's TLS),
 * so there just over one chunk's worth. */
#if defined(__SANITIZE_THREAD__)
#define NLIVE 1100
#elif TU_SANITIZED
#define NLIVE 2000
#else
#define NLIVE 3000
#endif
static pthread_barrier_t live_barrier;
static _Atomic long live_ok;

static void *square(void *arg) { return (void *)((long)arg * (long)arg); }

static void *live_thread(void *arg)
{
    long i = (long)arg;
    sf_future *a = sf_do(square, (void *)i);
    ck_assert_ptr_nonnull(a);
    long ra = (long)sf_get(a);
    sf_release(a);
    pthread_barrier_wait(&live_barrier); /* every thread is registered and alive */
    sf_future *b = sf_do(square, (void *)(i + 1));
    ck_assert_ptr_nonnull(b);
    long rb = (long)sf_get(b);
    sf_release(b);
    if (ra == i * i && rb == (i + 1) * (i + 1))
        atomic_fetch_add(&live_ok, 1);
    return NULL;
}

START_TEST(many_live_threads)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    static pthread_t t[NLIVE];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    ck_assert_int_eq(pthread_barrier_init(&live_barrier, NULL, NLIVE), 0);
    for (long i = 0; i < NLIVE; i++)
        ck_assert_int_eq(pthread_create(&t[i], &attr, live_thread, (void *)i), 0);
    for (long i = 0; i < NLIVE; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&live_ok), NLIVE);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2 * NLIVE);
    /* The dead threads' structs are adopted: a second wave works too. */
    atomic_store(&live_ok, 0);
    for (long i = 0; i < NLIVE; i++)
        ck_assert_int_eq(pthread_create(&t[i], &attr, live_thread, (void *)i), 0);
    for (long i = 0; i < NLIVE; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&live_ok), NLIVE);
    pthread_barrier_destroy(&live_barrier);
    pthread_attr_destroy(&attr);
    sf_shutdown();
}
END_TEST

static Suite *foreign_suite(void)
{
    Suite *s = suite_create("foreign");
    TCase *tc = tcase_create("foreign");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, eight_threads_fib20);
    tcase_add_test(tc, eight_threads_fib18_one_thread);
    tcase_add_test(tc, concurrent_implicit_start);
    tcase_add_test(tc, futures_of_an_exited_thread);
    tcase_add_test(tc, many_live_threads);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(foreign_suite)
