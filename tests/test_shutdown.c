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

/*
 * Tasks that sf_shutdown runs, and workers' last tasks, may call sf_init and
 * sf_shutdown. Before the fix, sf_shutdown drained and joined while holding
 * the lifecycle lock, so such a call blocked on that lock for ever: each test
 * below hung (and fails by its timeout if that comes back).
 */
static const char inside_line[] = "libsf: sf_shutdown() called from inside a task; ignored\n";
static atomic_int init_rc, init_errno, ran_on_worker, task_started, go;
static pthread_t main_thread;

/* The nested calls, with what they answered. */
static void *call_shutdown_and_init(void *arg)
{
    sf_shutdown(); /* refused: one line */
    errno = 0;
    atomic_store(&init_rc, sf_init(NULL));
    atomic_store(&init_errno, errno);
    atomic_store(&ran_on_worker, !pthread_equal(pthread_self(), main_thread));
    atomic_fetch_add(&counter, 1);
    return arg;
}

/* What the nested calls answered, on the thread expected, and the one line
 * on stderr (err, freed here). */
static void check_nested_calls(char *err, int on_worker)
{
    ck_assert_str_eq(err, inside_line);
    free(err);
    ck_assert_int_eq(atomic_load(&init_rc), -1);
    ck_assert_int_eq(atomic_load(&init_errno), EBUSY);
    ck_assert_int_eq(atomic_load(&ran_on_worker), on_worker);
}

/* SF_THREADS=1: the task is never got, so the drain of sf_shutdown runs it,
 * in this thread. */
START_TEST(drained_task_calls_shutdown_and_init)
{
    tu_env_threads(1);
    main_thread = pthread_self();
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_ptr_nonnull(sf_do(call_shutdown_and_init, NULL));
    struct tu_capture c;
    tu_capture_begin(&c);
    sf_shutdown();
    check_nested_calls(tu_capture_end(&c), 0);
    ck_assert_int_eq(atomic_load(&counter), 1);
    /* Down for real: stats say so, and a new runtime starts. */
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), -1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_shutdown();
}
END_TEST

/* The same from a pool worker: the task is submitted (by a get of a later
 * task) and an idle worker takes it; this thread never gets it. */
static void *worker_calls(void *arg)
{
    call_shutdown_and_init(arg);
    atomic_store(&task_started, 1);
    return arg;
}

START_TEST(worker_task_calls_shutdown_and_init)
{
    tu_env_threads(2);
    main_thread = pthread_self();
    ck_assert_int_eq(sf_init(NULL), 0);
    struct tu_capture c;
    tu_capture_begin(&c);
    sf_future *a = sf_do(worker_calls, NULL);
    sf_future *b = sf_do(inc, NULL);
    ck_assert_ptr_null(sf_get(b)); /* runs b here, submits a */
    int seen = tu_wait_flag(&task_started, 10000);
    char *err = tu_capture_end(&c);
    ck_assert_msg(seen, "no worker took the submitted task in 10 s");
    check_nested_calls(err, 1);
    sf_release(a);
    sf_release(b);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 2);
}
END_TEST

/* A worker's task calls them while this thread is inside sf_shutdown, which
 * waits for that very task (drain, then join). */
static void *worker_calls_during_shutdown(void *arg)
{
    atomic_store(&task_started, 1);
    tu_wait_flag(&go, 10000);
    tu_sleep_ms(50); /* the main thread is in sf_shutdown by now */
    return call_shutdown_and_init(arg);
}

START_TEST(worker_task_calls_them_during_shutdown)
{
    tu_env_threads(2);
    main_thread = pthread_self();
    ck_assert_int_eq(sf_init(NULL), 0);
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_ptr_nonnull(sf_do(worker_calls_during_shutdown, NULL));
    sf_future *b = sf_do(inc, NULL);
    ck_assert_ptr_null(sf_get(b));
    sf_release(b);
    int seen = tu_wait_flag(&task_started, 10000);
    atomic_store(&go, 1);
    sf_shutdown();
    char *err = tu_capture_end(&c);
    ck_assert_msg(seen, "no worker took the submitted task in 10 s");
    check_nested_calls(err, 1);
    ck_assert_int_eq(atomic_load(&counter), 2);
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
    tu_assert_os_threads(before - 1); /* the worker was joined */
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
    tu_assert_os_threads(before - 1);
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
    tcase_add_test(tc, drained_task_calls_shutdown_and_init);
    tcase_add_test(tc, worker_task_calls_shutdown_and_init);
    tcase_add_test(tc, worker_task_calls_them_during_shutdown);
    tcase_add_test(tc, restart_after_shutdown);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(shutdown_suite)
