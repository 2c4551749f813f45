/*
 * test_shutdown.c - sf_shutdown runs every task still pending (nothing queued
 * is lost), never runs a released one, refuses to run inside a task, and
 * leaves a runtime that the next call starts afresh.
 */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const int thread_counts[] = {1, 2, 4};

static atomic_int counter;
#define NTASKS 100
static atomic_int runs[NTASKS];

static void *inc(void *arg)
{
    atomic_fetch_add(&counter, 1);
    return arg;
}

static void *inc_indexed(void *arg)
{
    atomic_fetch_add(&runs[(long)arg], 1);
    atomic_fetch_add(&counter, 1);
    return arg;
}

START_TEST(drains_pending)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (long i = 0; i < NTASKS; i++)
        ck_assert_ptr_nonnull(sf_do(inc, (void *)i)); /* handles die with the runtime */
    tu_sleep_ms(10);
    ck_assert_int_eq(atomic_load(&counter), 0); /* nobody got them: still queued */
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), NTASKS);
}
END_TEST

START_TEST(released_not_drained)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (long i = 0; i < NTASKS; i++) {
        sf_future *f = sf_do(inc_indexed, (void *)i);
        ck_assert_ptr_nonnull(f);
        if (i % 2 == 0)
            sf_release(f);
    }
    sf_stats s = tu_stats_pending(NTASKS / 2);
    ck_assert_uint_eq(s.discarded, NTASKS / 2);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), NTASKS / 2);
    for (long i = 0; i < NTASKS; i++)
        ck_assert_msg(atomic_load(&runs[i]) == (i % 2 == 0 ? 0 : 1), "task %ld ran %d times", i,
                      atomic_load(&runs[i]));
}
END_TEST

/* Tasks started during the drain queue more tasks; those run too. */
static void *spawner(void *arg)
{
    atomic_fetch_add(&counter, 1);
    for (int i = 0; i < 10; i++)
        if (sf_do(inc, NULL) == NULL)
            atomic_fetch_add(&counter, 1000000);
    return arg;
}

START_TEST(drains_tasks_queued_while_draining)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (int i = 0; i < 10; i++)
        ck_assert_ptr_nonnull(sf_do(spawner, NULL));
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 10 + 10 * 10);
}
END_TEST

/* Tasks queued by a thread that has exited are drained too. */
static void *queue_and_exit(void *arg)
{
    for (int i = 0; i < 10; i++)
        if (sf_do(inc, NULL) == NULL)
            atomic_fetch_add(&counter, 1000000);
    return arg;
}

START_TEST(drains_tasks_of_exited_thread)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    tu_run_on_thread(queue_and_exit, NULL, 0);
    tu_run_on_thread(queue_and_exit, NULL, 0);
    ck_assert_int_eq(atomic_load(&counter), 0);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 20);
}
END_TEST

/* Submitted tasks a worker may be running when shutdown starts: all finish. */
static void *slow_inc(void *arg)
{
    tu_sleep_ms(2);
    atomic_fetch_add(&counter, 1);
    return arg;
}

START_TEST(drains_with_busy_workers)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *last = NULL;
    for (int i = 0; i < 50; i++)
        last = sf_do(slow_inc, NULL);
    ck_assert_ptr_null(sf_get(last)); /* submits all 50 */
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 50);
}
END_TEST

/* Called from inside a task: one line on stderr, and nothing happens. */
static void *shutdown_inside(void *arg)
{
    sf_shutdown();
    return arg;
}

START_TEST(shutdown_inside_task_refused)
{
    tu_env_threads(1); /* no worker: `pending` stays pending until we get it */
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *pending = sf_do(inc, NULL);
    sf_future *f = sf_do(shutdown_inside, (void *)42);
    struct tu_capture c;
    tu_capture_begin(&c);
    void *v = sf_get(f);
    char *out = tu_capture_end(&c);
    ck_assert_ptr_eq(v, (void *)42);
    ck_assert_msg(tu_count_lines(out) == 1 && strncmp(out, "libsf: ", 7) == 0,
                  "want one libsf: line on stderr, got \"%s\"", out);
    free(out);
    /* Still running, the other future still valid and pending. */
    sf_stats s = tu_stats_pending(1);
    ck_assert_uint_eq(s.created, 2);
    ck_assert_int_eq(sf_is_done(pending), 0);
    ck_assert_ptr_null(sf_get(pending));
    ck_assert_int_eq(atomic_load(&counter), 1);
    sf_release(pending);
    sf_release(f);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 1);
}
END_TEST

/* After shutdown the runtime is down; the next sf_do starts a fresh one,
 * reading the environment again. */
START_TEST(restart_after_shutdown)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(tu_fib, (void *)10L);
    ck_assert_ptr_eq(sf_get(f), (void *)55L);
    sf_release(f);
    int before = tu_os_threads();
    sf_shutdown();
    ck_assert_int_eq(tu_os_threads(), before - 1); /* the worker was joined */
    sf_stats s;
    errno = 0;
    ck_assert_int_eq(sf_stats_read(&s), -1);
    ck_assert_int_eq(errno, ESRCH);

    tu_env_threads(3);
    f = sf_do(tu_fib, (void *)12L);
    ck_assert_ptr_nonnull(f);
    s = tu_stats_pending(1);
    ck_assert_int_eq(s.threads, 3);
    ck_assert_uint_eq(s.created, 1);
    ck_assert_ptr_eq(sf_get(f), (void *)144L);
    sf_release(f);
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 1 + tu_fib_tasks(12));
    sf_shutdown();
    ck_assert_int_eq(tu_os_threads(), before - 1);
}
END_TEST

static Suite *shutdown_suite(void)
{
    Suite *s = suite_create("shutdown");
    int n = (int)(sizeof thread_counts / sizeof thread_counts[0]);
    TCase *tc = tcase_create("shutdown");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, drains_pending, 0, n);
    tcase_add_loop_test(tc, released_not_drained, 0, n);
    tcase_add_loop_test(tc, drains_tasks_queued_while_draining, 0, n);
    tcase_add_loop_test(tc, drains_tasks_of_exited_thread, 0, n);
    tcase_add_loop_test(tc, drains_with_busy_workers, 0, n);
    tcase_add_test(tc, shutdown_inside_task_refused);
    tcase_add_test(tc, restart_after_shutdown);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(shutdown_suite)
