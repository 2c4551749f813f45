/*
 * test_lazy.c - sf_do() only queues; sf_get() submits and runs; a future
 * released before it started never runs; sf_is_done() reports without running.
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>

static atomic_int ran_a, ran_b;
static pthread_t thread_a, thread_b;

static void *task_a(void *arg)
{
    thread_a = pthread_self();
    atomic_fetch_add(&ran_a, 1);
    return arg;
}

static void *task_b(void *arg)
{
    thread_b = pthread_self();
    atomic_fetch_add(&ran_b, 1);
    return arg;
}

/* SF_THREADS=2: the idle worker must not start a task nobody got. */
START_TEST(do_only_queues)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(task_a, (void *)0x1234);
    ck_assert_ptr_nonnull(f);
    tu_sleep_ms(50);
    ck_assert_int_eq(atomic_load(&ran_a), 0);
    ck_assert_int_eq(sf_is_done(f), 0);

    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_eq(s.created, 1);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen + s.discarded, 0);

    ck_assert_ptr_eq(sf_get(f), (void *)0x1234);
    ck_assert_int_eq(atomic_load(&ran_a), 1);
    ck_assert_int_eq(sf_is_done(f), 1);
    /* Every get returns the same value; the task runs once. */
    ck_assert_ptr_eq(sf_get(f), (void *)0x1234);
    ck_assert_ptr_eq(sf_get(f), (void *)0x1234);
    ck_assert_int_eq(atomic_load(&ran_a), 1);

    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 1);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, 1);
    ck_assert_uint_eq(s.discarded, 0);
    sf_release(f);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&ran_a), 1);
}
END_TEST

/* sf_do() without sf_init() starts the runtime from the environment, and
 * still only queues. */
START_TEST(do_starts_runtime_lazily)
{
    tu_env_threads(2);
    sf_stats s;
    errno = 0;
    ck_assert_int_eq(sf_stats_read(&s), -1);
    ck_assert_int_eq(errno, ESRCH);
    sf_future *f = sf_do(task_a, (void *)77);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_int_eq(s.threads, 2);
    ck_assert_int_eq(s.workers, 1);
    ck_assert_uint_eq(s.created, 1);
    tu_sleep_ms(50);
    ck_assert_int_eq(atomic_load(&ran_a), 0);
    ck_assert_ptr_eq(sf_get(f), (void *)77);
    ck_assert_int_eq(atomic_load(&ran_a), 1);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* Released before any get: never runs, not even at shutdown. */
START_TEST(release_before_get_never_runs)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(task_a, (void *)1);
    ck_assert_ptr_nonnull(f);
    tu_sleep_ms(20);
    sf_release(f);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 1);
    ck_assert_uint_eq(s.discarded, 1);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, 0);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&ran_a), 0);
}
END_TEST

/* SF_THREADS=1: get(B) submits A and B but runs only B (no worker exists to
 * take A); get(A) then runs A. */
START_TEST(get_runs_only_its_task)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *a = sf_do(task_a, (void *)10);
    sf_future *b = sf_do(task_b, (void *)20);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_eq(sf_get(b), (void *)20);
    ck_assert_int_eq(atomic_load(&ran_b), 1);
    ck_assert_int_eq(atomic_load(&ran_a), 0);
    ck_assert_int_eq(sf_is_done(a), 0);
    ck_assert_int_eq(sf_is_done(b), 1);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_eq(s.created, 2);
    ck_assert_uint_eq(s.run_inline, 1);
    ck_assert_uint_eq(s.run_pool + s.run_stolen + s.discarded, 0);

    ck_assert_ptr_eq(sf_get(a), (void *)10);
    ck_assert_int_eq(atomic_load(&ran_a), 1);
    ck_assert_int_eq(atomic_load(&ran_b), 1);
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2);
    ck_assert_uint_eq(s.run_inline, 2);
    ck_assert_uint_eq(s.run_pool + s.run_stolen + s.discarded, 0);
    sf_release(a);
    sf_release(b);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&ran_a), 1);
    ck_assert_int_eq(atomic_load(&ran_b), 1);
}
END_TEST

/* SF_THREADS=1: a task submitted by a get of another one and then released is
 * discarded, never run. */
START_TEST(submitted_then_released_never_runs)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *a = sf_do(task_a, (void *)10);
    sf_future *b = sf_do(task_b, (void *)20);
    ck_assert_ptr_eq(sf_get(b), (void *)20);
    sf_release(a);
    sf_release(b);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2);
    ck_assert_uint_eq(s.run_inline, 1);
    ck_assert_uint_eq(s.discarded, 1);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&ran_a), 0);
    ck_assert_int_eq(atomic_load(&ran_b), 1);
}
END_TEST

static void *fib_noting(void *arg)
{
    tu_threads_note();
    long n = (long)arg;
    if (n < 2)
        return (void *)n;
    sf_future *a = sf_do(fib_noting, (void *)(n - 1));
    sf_future *b = sf_do(fib_noting, (void *)(n - 2));
    long r = (long)sf_get(b) + (long)sf_get(a);
    sf_release(a);
    sf_release(b);
    return (void *)r;
}

/* SF_THREADS=1: no worker thread exists and every task runs in the caller. */
START_TEST(one_thread_runs_in_caller)
{
    tu_env_threads(1);
    int os_before = tu_os_threads();
    ck_assert_int_eq(sf_init(NULL), 0);
    tu_assert_os_threads(os_before);
    tu_threads_reset();
    sf_future *f = sf_do(fib_noting, (void *)15L);
    ck_assert_ptr_eq(sf_get(f), (void *)610L);
    sf_release(f);
    ck_assert_int_eq(tu_threads_count(), 1);
    ck_assert(tu_threads_contains(pthread_self()));
    tu_assert_os_threads(os_before);

    sf_future *a = sf_do(task_a, NULL);
    ck_assert_ptr_eq(sf_get(a), NULL);
    ck_assert(pthread_equal(thread_a, pthread_self()));
    sf_release(a);

    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, 1);
    ck_assert_int_eq(s.workers, 0);
    ck_assert_int_eq(s.peak_busy, 0);
    /* fib_noting(n) makes two futures per call with n >= 2: 2 * (fib(16) - 1)
     * below the root, the root and task_a. */
    ck_assert_uint_eq(s.created, 2 * tu_fib_tasks(15) + 2);
    ck_assert_uint_eq(s.run_inline, s.created);
    ck_assert_uint_eq(s.run_pool, 0);
    ck_assert_uint_eq(s.run_stolen, 0);
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}
END_TEST

/* sf_is_done: 0 before the get, 1 after; polling it never runs the task. */
START_TEST(is_done_before_and_after)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(task_a, (void *)5);
    ck_assert_ptr_nonnull(f);
    double end = tu_now_ms() + 50;
    long polls = 0;
    while (tu_now_ms() < end) {
        ck_assert_int_eq(sf_is_done(f), 0);
        polls++;
    }
    ck_assert_int_gt(polls, 0);
    ck_assert_int_eq(atomic_load(&ran_a), 0);
    ck_assert_ptr_eq(sf_get(f), (void *)5);
    ck_assert_int_eq(sf_is_done(f), 1);
    ck_assert_int_eq(sf_is_done(f), 1);
    ck_assert_int_eq(atomic_load(&ran_a), 1);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* Futures are recycled after release: many do/get/release rounds each give
 * their own exact value. */
static void *identity(void *arg) { return arg; }

START_TEST(recycled_futures_keep_values)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    enum { N = 100000 };
    for (long i = 0; i < N; i++) {
        sf_future *f = sf_do(identity, (void *)(i * 3 + 1));
        ck_assert_ptr_nonnull(f);
        void *v = sf_get(f);
        if (v != (void *)(i * 3 + 1))
            ck_abort_msg("round %ld: got %p, want %p", i, v, (void *)(i * 3 + 1));
        sf_release(f);
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, N);
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}
END_TEST

/* Counts its runs, per index. */
#define HANDED 64
static atomic_int runs_of[HANDED];
static void *counted(void *arg)
{
    atomic_fetch_add(&runs_of[(long)arg], 1);
    return (void *)((long)arg + 1000);
}

static sf_future *handed[HANDED];

/* Another thread's gets of the main thread's futures, by handle. */
static void *get_handed(void *arg)
{
    long n = (long)arg;
    for (long i = n - 1; i >= 0; i--) /* newest first: not the queue's order */
        if (sf_get(handed[i]) != (void *)(i + 1000))
            return (void *)1;
    return NULL;
}

/* A future got by its handle on another thread makes its owner push
 * publicly from then on (pending.h, Handed-over futures): public is not
 * submitted, so the idle worker still starts none of them; each runs once,
 * in the getting thread, and the owner's own fork-join goes on. */
START_TEST(handed_over_futures_stay_lazy)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (int i = 0; i < HANDED; i++)
        atomic_store(&runs_of[i], 0);
    /* The first hand-over: a private task, taken through the gate. */
    ck_assert_ptr_nonnull(handed[0] = sf_do(counted, (void *)0L));
    ck_assert_ptr_null(tu_run_on_thread(get_handed, (void *)1L, 0));
    /* Pushed publicly now; nobody gets them for 50 ms. */
    for (long i = 1; i < HANDED; i++)
        ck_assert_ptr_nonnull(handed[i] = sf_do(counted, (void *)i));
    tu_sleep_ms(50);
    for (int i = 1; i < HANDED; i++)
        ck_assert_int_eq(atomic_load(&runs_of[i]), 0);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_eq(s.run_pool, 0);
    /* The other thread gets them all (the first again: done already). */
    ck_assert_ptr_null(tu_run_on_thread(get_handed, (void *)(long)HANDED, 0));
    for (int i = 0; i < HANDED; i++) {
        ck_assert_int_eq(atomic_load(&runs_of[i]), 1);
        ck_assert_ptr_eq(sf_get(handed[i]), (void *)(i + 1000L));
        sf_release(handed[i]);
    }
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.run_pool, 0);
    /* The owner's own tasks, public now, claimed by CAS. */
    ck_assert_int_eq((long)tu_fib((void *)16L), tu_fib_exact(16));
    sf_shutdown();
}
END_TEST

static Suite *lazy_suite(void)
{
    Suite *s = suite_create("lazy");
    TCase *tc = tcase_create("lazy");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, do_only_queues);
    tcase_add_test(tc, do_starts_runtime_lazily);
    tcase_add_test(tc, release_before_get_never_runs);
    tcase_add_test(tc, get_runs_only_its_task);
    tcase_add_test(tc, submitted_then_released_never_runs);
    tcase_add_test(tc, one_thread_runs_in_caller);
    tcase_add_test(tc, is_done_before_and_after);
    tcase_add_test(tc, recycled_futures_keep_values);
    tcase_add_test(tc, handed_over_futures_stay_lazy);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(lazy_suite)
