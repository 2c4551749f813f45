/*
 * test_shutdown_timeout.c - sf_shutdown_timeout: pending tasks run until the
 * deadline, the rest are discarded (exactly those, each at most once, their
 * getters see ECANCELED, the stats count them), running ones end first,
 * tasks queued after the deadline are discarded unless their maker runs them,
 * and the errors.
 *
 * That no task starts after the deadline is checked by order, not time:
 * the runtime's first discard happens after its deadline, and a watcher
 * counts the tasks started by then (discard_watch). The times asserted are
 * the API's own: the deadline is waited for (lower bounds, which no load
 * can break), and the call returns within the deadline and one task, with
 * SLACK_MS more for a loaded machine or a sanitizer.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTASKS 20
#define TASK_MS 100
#define SLACK_MS 2000.0 /* scheduling noise allowed on top of any bound */

static atomic_int runs[NTASKS + 8];
static atomic_int ran;

static void *sleeper(void *arg)
{
    long i = (long)arg;
    atomic_fetch_add(&runs[i], 1);
    atomic_fetch_add(&ran, 1);
    tu_sleep_ms(TASK_MS);
    return arg;
}

static void *noop(void *arg) { return arg; }

static void reset(void)
{
    for (int i = 0; i < NTASKS + 8; i++)
        atomic_store(&runs[i], 0);
    atomic_store(&ran, 0);
}

/* Waits for the runtime's first discard (the stats' cancelled count, which
 * here only the deadline makes grow) and notes how many sleepers had
 * started by then; the deadline is a hang guard. A thread that discarded a
 * task is past the deadline and starts none after it. */
static atomic_int discard_seen;
static atomic_int ran_at_discard;

static void *discard_watch(void *arg)
{
    (void)arg;
    sf_stats s;
    double give_up = tu_now_ms() + 30000.0;
    while (sf_stats_read(&s) == 0 && s.cancelled == 0 && tu_now_ms() < give_up)
        tu_sleep_ms(1);
    atomic_store(&ran_at_discard, atomic_load(&ran));
    atomic_store(&discard_seen, s.cancelled > 0);
    return NULL;
}

static void watch_start(pthread_t *t)
{
    atomic_store(&discard_seen, 0);
    atomic_store(&ran_at_discard, -1);
    ck_assert_int_eq(pthread_create(t, NULL, discard_watch, NULL), 0);
}

/* Queues NTASKS sleepers (f[0] oldest) and submits them with a get of a
 * newer task that returns at once: the worker starts taking the oldest. */
static void queue_and_submit(sf_future **f)
{
    for (long i = 0; i < NTASKS; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(sleeper, (void *)i));
    sf_future *q = sf_do(noop, (void *)99L);
    ck_assert_int_eq((long)sf_get(q), 99);
    sf_release(q);
}

/* Submits what this thread queued, with a get of a task that returns at once. */
static void queue_and_submit_none(void)
{
    sf_future *q = sf_do(noop, (void *)98L);
    ck_assert_int_eq((long)sf_get(q), 98);
    sf_release(q);
}

static void assert_at_most_once(void)
{
    for (int i = 0; i < NTASKS + 8; i++)
        ck_assert_int_le(atomic_load(&runs[i]), 1);
}

/* A task that holds one thread until another has discarded a task: only
 * the other could go on taking tasks past the deadline. */
static atomic_int long_over;

static void *long_until_a_discard(void *arg)
{
    tu_wait_flag(&discard_seen, 30000); /* the deadline is the hang guard */
    atomic_store(&long_over, 1);
    return arg;
}

/* The count returned is exactly the tasks that did not run; the time is the
 * deadline plus at most one task; nothing runs after the return; the stats
 * table counts the discarded tasks as cancelled. _i 0: both threads run
 * sleepers; 1: the worker is held (the oldest task) until the drain here
 * has discarded a task, and the drain starts none after that. */
START_TEST(returns_the_tasks_that_did_not_run)
{
    tu_env_threads(2);
    setenv("SF_STATS", "1", 1);
    reset();
    atomic_store(&long_over, 0);
    ck_assert_int_eq(sf_init(NULL), 0);
    if (_i == 1) /* kept past the shutdown: freed by it */
        ck_assert_ptr_nonnull(sf_do(long_until_a_discard, NULL));
    sf_future *f[NTASKS];
    queue_and_submit(f);
    pthread_t w;
    if (_i == 1)
        watch_start(&w);
    struct tu_capture c;
    tu_capture_begin(&c);
    double t0 = tu_now_ms();
    long d = sf_shutdown_timeout(0.25);
    double ms = tu_now_ms() - t0;
    char *out = tu_capture_end(&c);
    if (_i == 1)
        ck_assert_int_eq(pthread_join(w, NULL), 0);
    int r = atomic_load(&ran);
    ck_assert_int_eq(d + r, NTASKS);
    /* Two threads and 100 ms tasks: some ran, most could not by 0.25 s. */
    ck_assert_int_ge(r, 1);
    ck_assert_int_ge(d, 1);
    assert_at_most_once();
    /* Tasks were left at the deadline, so it was waited for; then at most
     * the one task each thread had started. */
    ck_assert_double_ge(ms, 250.0 - 1.0);
    ck_assert_double_lt(ms, 250.0 + TASK_MS + SLACK_MS);
    if (_i == 1) { /* no task started here after the deadline */
        ck_assert_int_eq(atomic_load(&discard_seen), 1);
        ck_assert_int_eq(r, atomic_load(&ran_at_discard));
        ck_assert_int_eq(atomic_load(&long_over), 1);
    }
    char want[64];
    snprintf(want, sizeof want, ", %ld cancelled\n", d);
    ck_assert_msg(strstr(out, want) != NULL, "table: %s", out);
    free(out);
    tu_sleep_ms(2 * TASK_MS);
    ck_assert_int_eq(atomic_load(&ran), r); /* nothing ran after the return */
}
END_TEST

/* Batch tasks are served eagerly by the worker; past the deadline neither
 * the worker nor the drain starts one: the open batch's rest is discarded
 * and counted, each task at most once (their handles, like every future,
 * end with the runtime). */
START_TEST(batch_tasks_are_discarded_at_the_deadline)
{
    tu_env_threads(2);
    reset();
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    for (long i = 0; i < NTASKS; i++) /* handles kept: freed by the shutdown */
        ck_assert_ptr_nonnull(sf_batch_do(b, sleeper, (void *)i));
    long d = sf_shutdown_timeout(0.25);
    int r = atomic_load(&ran);
    ck_assert_int_eq(d + r, NTASKS);
    /* The worker starts one at once; 100 ms tasks, 0.25 s, two threads:
     * most cannot have started. */
    ck_assert_int_ge(r, 1);
    ck_assert_int_ge(d, NTASKS / 2);
    assert_at_most_once();
}
END_TEST

/* The shutdown thread is busy with the holder until the worker has
 * discarded a task, so only the worker could go on taking tasks: it must
 * not start one after the deadline (it discards what it claims instead). */
START_TEST(workers_stop_taking_at_the_deadline)
{
    tu_env_threads(2);
    reset();
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&long_over, 0);
    for (long i = 0; i < NTASKS; i++) /* kept past the shutdown: freed by it */
        ck_assert_ptr_nonnull(sf_do(sleeper, (void *)i));
    /* the newest: the drain here runs it first */
    ck_assert_ptr_nonnull(sf_do(long_until_a_discard, NULL));
    queue_and_submit_none();
    pthread_t w;
    watch_start(&w);
    double t0 = tu_now_ms();
    long d = sf_shutdown_timeout(0.25);
    double ms = tu_now_ms() - t0;
    ck_assert_int_eq(pthread_join(w, NULL), 0);
    int r = atomic_load(&ran); /* sleepers only: the worker's */
    ck_assert_int_eq(d + r, NTASKS);
    ck_assert_int_ge(r, 1);
    assert_at_most_once();
    /* The worker discarded a task while this thread ran the holder (a
     * worker that went on taking would run them all and discard none), and
     * started none after that discard; the call returned once the holder
     * had ended. */
    ck_assert_int_eq(atomic_load(&discard_seen), 1);
    ck_assert_int_eq(r, atomic_load(&ran_at_discard));
    ck_assert_int_eq(atomic_load(&long_over), 1);
    ck_assert_double_ge(ms, 250.0 - 1.0);
}
END_TEST

/* A long task that holds the shutdown open until a getter on another thread
 * has seen its discarded future. */
static atomic_int long_started, getter_done, shutdown_called;
static _Atomic(sf_future *) watched;
static int getter_rc, getter_errno;
static void *getter_value;

static void *long_task(void *arg)
{
    atomic_store(&long_started, 1);
    tu_wait_flag(&getter_done, 30000);
    return arg;
}

/*
 * The getter polls sf_is_done (which never registers a thread) until the
 * shutdown has discarded the future, then gets it: it must see ECANCELED,
 * before the shutdown returns (long_task waits for it) - so its future is
 * still valid. sf_is_done starts polling only after the call began, and
 * the deadline is 0.25 s later.
 */
static void *getter(void *arg)
{
    (void)arg;
    tu_wait_flag(&shutdown_called, 30000);
    sf_future *f = atomic_load(&watched);
    for (double t0 = tu_now_ms(); sf_is_done(f) != 1 && tu_now_ms() - t0 < 20000;)
        tu_sleep_ms(1);
    getter_rc = sf_wait(f, NULL);
    errno = 0;
    getter_value = sf_get(f);
    getter_errno = errno;
    atomic_store(&getter_done, 1);
    return NULL;
}

START_TEST(a_getter_of_a_discarded_task_sees_ecanceled)
{
    tu_env_threads(2);
    reset();
    atomic_store(&long_started, 0);
    atomic_store(&getter_done, 0);
    atomic_store(&shutdown_called, 0);
    getter_rc = getter_errno = -1;
    getter_value = (void *)1;
    ck_assert_int_eq(sf_init(NULL), 0);
    /* The oldest, so the worker takes it first and is busy with it. */
    sf_future *l = sf_do(long_task, (void *)5L);
    sf_future *f[NTASKS];
    queue_and_submit(f);
    ck_assert_int_eq(tu_wait_flag(&long_started, 10000), 1);
    /* The drain runs the newest first: the oldest sleeper is discarded. */
    atomic_store(&watched, f[0]);
    pthread_t g;
    ck_assert_int_eq(pthread_create(&g, NULL, getter, NULL), 0);
    atomic_store(&shutdown_called, 1);
    long d = sf_shutdown_timeout(0.25);
    pthread_join(g, NULL);
    (void)l;
    ck_assert_int_eq(getter_rc, ECANCELED);
    ck_assert_ptr_null(getter_value);
    ck_assert_int_eq(getter_errno, ECANCELED);
    ck_assert_int_eq(atomic_load(&runs[0]), 0);
    ck_assert_int_eq(d + atomic_load(&ran), NTASKS);
    assert_at_most_once();
}
END_TEST

START_TEST(zero_seconds_discards_everything_pending)
{
    tu_env_threads(2);
    reset();
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f[NTASKS];
    if (_i == 0) {
        /* Never submitted: nothing ran, everything goes. */
        for (long i = 0; i < NTASKS; i++)
            f[i] = sf_do(sleeper, (void *)i);
        double t0 = tu_now_ms();
        ck_assert_int_eq(sf_shutdown_timeout(0), NTASKS);
        ck_assert_double_lt(tu_now_ms() - t0, SLACK_MS);
        ck_assert_int_eq(atomic_load(&ran), 0);
    } else {
        /* Submitted, one running on the worker: it ends, the rest go. */
        queue_and_submit(f);
        for (double t0 = tu_now_ms(); atomic_load(&ran) == 0 && tu_now_ms() - t0 < 10000;)
            tu_sleep_ms(1);
        ck_assert_int_eq(atomic_load(&ran), 1);
        double t0 = tu_now_ms();
        ck_assert_int_eq(sf_shutdown_timeout(0.0), NTASKS - 1);
        ck_assert_double_lt(tu_now_ms() - t0, TASK_MS + SLACK_MS);
        ck_assert_int_eq(atomic_load(&ran), 1);
    }
    assert_at_most_once();
}
END_TEST

/* A deadline far enough is sf_shutdown: everything runs, once. */
START_TEST(a_generous_deadline_discards_nothing)
{
    static const double seconds[] = {60.0, 1e300, INFINITY};
    tu_env_threads(2);
    reset();
    ck_assert_int_eq(sf_init(NULL), 0);
    for (long i = 0; i < 6; i++)
        sf_do(sleeper, (void *)i); /* kept past the shutdown: freed by it */
    ck_assert_int_eq(sf_shutdown_timeout(seconds[_i]), 0);
    ck_assert_int_eq(atomic_load(&ran), 6);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(atomic_load(&runs[i]), 1);
}
END_TEST

/* A task still running at the deadline queues children and gets them: each
 * either ran (its maker's own get claimed it first) or was discarded (the
 * get saw ECANCELED), never both, and the return counts the discarded. */
#define CHILDREN 5
static int child_rc[CHILDREN];
static atomic_int parent_started;

static void *parent(void *arg)
{
    atomic_store(&parent_started, 1);
    tu_sleep_ms(300); /* past the 0.1 s deadline */
    sf_future *c[CHILDREN];
    for (long i = 0; i < CHILDREN; i++)
        c[i] = sf_do(sleeper, (void *)(NTASKS + i));
    tu_sleep_ms(50); /* the shutdown thread may discard them meanwhile */
    for (int i = CHILDREN - 1; i >= 0; i--) {
        child_rc[i] = sf_wait(c[i], NULL);
        sf_release(c[i]);
    }
    return arg;
}

START_TEST(tasks_queued_after_the_deadline)
{
    tu_env_threads(2);
    reset();
    atomic_store(&parent_started, 0);
    for (int i = 0; i < CHILDREN; i++)
        child_rc[i] = -1;
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_do(parent, NULL);
    sf_future *q = sf_do(noop, NULL);
    sf_get(q); /* submits p; the worker takes it */
    sf_release(q);
    ck_assert_int_eq(tu_wait_flag(&parent_started, 10000), 1);
    long d = sf_shutdown_timeout(0.1);
    (void)p;
    int discarded = 0;
    for (int i = 0; i < CHILDREN; i++) {
        int r = atomic_load(&runs[NTASKS + i]);
        ck_assert_msg((child_rc[i] == 0 && r == 1) || (child_rc[i] == ECANCELED && r == 0),
                      "child %d: rc %d, ran %d times", i, child_rc[i], r);
        discarded += child_rc[i] == ECANCELED;
    }
    ck_assert_int_eq(d, discarded);
}
END_TEST

static atomic_long inner_rc, inner_errno;

static void *calls_shutdown_timeout(void *arg)
{
    errno = 0;
    atomic_store(&inner_rc, sf_shutdown_timeout(1.0));
    atomic_store(&inner_errno, errno);
    return arg;
}

START_TEST(errors)
{
    tu_env_threads(2);
    /* Not running: nothing to discard. */
    ck_assert_int_eq(sf_shutdown_timeout(1.0), 0);
    ck_assert_int_eq(sf_init(NULL), 0);
    static const double bad[] = {-1.0, -1e-9, NAN, -INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        ck_assert_int_eq(sf_shutdown_timeout(bad[i]), -1);
        ck_assert_int_eq(errno, EINVAL);
    }
    /* Still running after EINVAL; inside a task: one line, EDEADLK. */
    sf_future *f = sf_do(calls_shutdown_timeout, (void *)4L);
    struct tu_capture c;
    tu_capture_begin(&c);
    long r = (long)sf_get(f);
    char *out = tu_capture_end(&c);
    ck_assert_int_eq(r, 4);
    sf_release(f);
    ck_assert_int_eq(atomic_load(&inner_rc), -1);
    ck_assert_int_eq(atomic_load(&inner_errno), EDEADLK);
    ck_assert_str_eq(out, "libsf: sf_shutdown_timeout() called from inside a task; ignored\n");
    free(out);
    tu_stats_quiet();
    ck_assert_int_eq(sf_shutdown_timeout(0), 0);
    ck_assert_int_eq(sf_shutdown_timeout(0), 0); /* stopped already */
    /* A new runtime after it, as after sf_shutdown. */
    ck_assert_int_eq((long)tu_fib((void *)10L), tu_fib_exact(10));
    sf_shutdown();
}
END_TEST

/* ---- promises nobody can set (runtime/api/promise.c) ---- */

static const int thread_counts[] = {1, 2, 4};

static atomic_int waiter_started, waiter_done, computer_done, done_when_waiter_ended;
static int waiter_err;
static void *waiter_result;

/* Gets promise arg; its value: 1000 + the errno its get saw (0: set). */
static void *waits_on_promise(void *arg)
{
    atomic_store(&waiter_started, 1);
    errno = 0;
    void *r = sf_get(arg);
    waiter_err = errno;
    waiter_result = r;
    /* Was the computing task over when this wait ended? */
    atomic_store(&done_when_waiter_ended, atomic_load(&computer_done));
    atomic_store(&waiter_done, 1);
    return (void *)(intptr_t)(1000 + (r == NULL ? waiter_err : 0));
}

/* Computes (no wait) for 1 s: while it runs, nothing is stuck. */
static void *computes(void *arg)
{
    tu_spin_us(1e6);
    atomic_store(&computer_done, 1);
    return arg;
}

struct plain_get {
    sf_future *f;
    void *result;
    pthread_t thread;
};

/* Isolated: the waiting task then helps with nothing - not with the task
 * that computes, which would keep its fiber from going on. */
static void *plain_get_main(void *arg)
{
    struct plain_get *g = arg;
    g->result = sf_get_isolated(g->f);
    return NULL;
}

static void promise_reset(void)
{
    atomic_store(&waiter_started, 0);
    atomic_store(&waiter_done, 0);
    atomic_store(&computer_done, 0);
    atomic_store(&done_when_waiter_ended, -1);
    waiter_err = 0;
    waiter_result = (void *)1;
}

/* A task waiting on an unset promise, the only one left: cancelled well
 * before a generous deadline (the runtime is stuck), nothing discarded. */
START_TEST(an_unset_promise_is_cancelled_before_the_deadline)
{
    tu_env_threads(thread_counts[_i]);
    promise_reset();
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(sf_do(waits_on_promise, p)); /* the drain runs it */
    double t0 = tu_now_ms();
    ck_assert_int_eq(sf_shutdown_timeout(30.0), 0);
    double ms = tu_now_ms() - t0;
    ck_assert_msg(ms < 30000.0, "returned after %.0f ms: at the deadline, not before", ms);
    ck_assert_int_eq(atomic_load(&waiter_done), 1);
    ck_assert_ptr_null(waiter_result);
    ck_assert_int_eq(waiter_err, ECANCELED);
}
END_TEST

/* A task waits on an unset promise while another computes for 1 s past the
 * 0.2 s deadline: the runtime is not stuck, so only the deadline cancels
 * the promise - while the computing task still runs - and the call
 * returns once that task has ended. */
START_TEST(an_unset_promise_is_cancelled_at_the_deadline_at_the_latest)
{
    tu_env_threads(thread_counts[_i]);
    promise_reset();
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    sf_future *w = sf_do(waits_on_promise, p);
    ck_assert_ptr_nonnull(w);
    /* Started by a plain thread's isolated get, at every thread count: a
     * call in flight at the shutdown. */
    static struct plain_get g;
    g.f = w;
    g.result = NULL;
    ck_assert_int_eq(pthread_create(&g.thread, NULL, plain_get_main, &g), 0);
    ck_assert_int_eq(tu_wait_flag(&waiter_started, 10000), 1);
    ck_assert_ptr_nonnull(sf_do(computes, NULL)); /* the drain starts it */
    ck_assert_int_eq(sf_shutdown_timeout(0.2), 0);
    ck_assert_int_eq(pthread_join(g.thread, NULL), 0);
    ck_assert_int_eq(atomic_load(&computer_done), 1);
    ck_assert_int_eq(atomic_load(&waiter_done), 1);
    ck_assert_int_eq(atomic_load(&done_when_waiter_ended), 0);
    ck_assert_ptr_null(waiter_result);
    ck_assert_int_eq(waiter_err, ECANCELED);
    ck_assert_ptr_eq(g.result, (void *)(intptr_t)(1000 + ECANCELED));
}
END_TEST

static Suite *shutdown_timeout_suite(void)
{
    Suite *s = suite_create("shutdown_timeout");
    TCase *tc = tcase_create("shutdown_timeout");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, returns_the_tasks_that_did_not_run, 0, 2);
    tcase_add_test(tc, a_getter_of_a_discarded_task_sees_ecanceled);
    tcase_add_test(tc, workers_stop_taking_at_the_deadline);
    tcase_add_test(tc, batch_tasks_are_discarded_at_the_deadline);
    tcase_add_loop_test(tc, zero_seconds_discards_everything_pending, 0, 2);
    tcase_add_loop_test(tc, a_generous_deadline_discards_nothing, 0, 3);
    tcase_add_test(tc, tasks_queued_after_the_deadline);
    tcase_add_test(tc, errors);
    int n = (int)(sizeof thread_counts / sizeof thread_counts[0]);
    tcase_add_loop_test(tc, an_unset_promise_is_cancelled_before_the_deadline, 0, n);
    tcase_add_loop_test(tc, an_unset_promise_is_cancelled_at_the_deadline_at_the_latest, 0, n);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(shutdown_timeout_suite)
