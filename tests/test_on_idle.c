/*
 * test_on_idle.c - the idle hook (sf_on_idle): who calls it (idle workers,
 * gets and waits, timed ones included), one call at a time, its setting and
 * removal, and that it outlives a shutdown and a fork.
 *
 * The "outside world" is a plain pthread that raises a flag after a pause,
 * as a network card would complete a request; the hook sees the flag and
 * completes the promise that stands for the request, as libsf-mpi does.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* One request from outside: the promise, and the flag the outside raises. */
struct outside {
    sf_future *p;           /* completed by the hook, NULL once it is */
    void *value;
    atomic_int arrived;     /* raised by the outside thread */
    atomic_int calls;       /* calls of the hook */
    atomic_int inside;      /* calls running now */
    atomic_int overlaps;    /* calls that found another running */
    atomic_int on_main;     /* calls from the test's main thread */
    atomic_int completed;   /* promises the hook completed */
    atomic_int nested_rc;   /* what sf_on_idle() returned inside it, errno */
    atomic_int nested_err;
    int try_nested;
    double hold_us;         /* each call spins this long */
    pthread_t main_thread;
    pthread_t thread;
    long delay_ms;
};

static int poll_outside(void *ctx)
{
    struct outside *o = ctx;
    atomic_fetch_add(&o->calls, 1);
    if (atomic_fetch_add(&o->inside, 1) != 0)
        atomic_fetch_add(&o->overlaps, 1);
    if (pthread_equal(pthread_self(), o->main_thread))
        atomic_fetch_add(&o->on_main, 1);
    if (o->try_nested) {
        errno = 0;
        atomic_store(&o->nested_rc, sf_on_idle(NULL, NULL));
        atomic_store(&o->nested_err, errno);
    }
    if (o->hold_us > 0)
        tu_spin_us(o->hold_us);
    int r = -1;
    if (o->p != NULL) {
        r = 0;
        if (atomic_load(&o->arrived)) {
            /* Counted before the set: the set wakes the getter, which then
             * reads the count. */
            sf_future *p = o->p;
            o->p = NULL;
            atomic_fetch_add(&o->completed, 1);
            ck_assert_int_eq(sf_promise_set(p, o->value), 0);
            r = 1;
        }
    }
    atomic_fetch_sub(&o->inside, 1);
    return r;
}

static void *outside_main(void *arg)
{
    struct outside *o = arg;
    tu_sleep_ms(o->delay_ms);
    atomic_store(&o->arrived, 1);
    return NULL;
}

/* A request whose promise p the hook completes with value once the outside
 * raised its flag, delay_ms from now. */
static void outside_start(struct outside *o, sf_future *p, void *value, long delay_ms)
{
    o->p = p;
    o->value = value;
    o->delay_ms = delay_ms;
    o->main_thread = pthread_self();
    ck_assert_int_eq(pthread_create(&o->thread, NULL, outside_main, o), 0);
}

static void start(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
}

static void finish(struct outside *o)
{
    ck_assert_int_eq(pthread_join(o->thread, NULL), 0);
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
    sf_shutdown();
}

START_TEST(set_twice_is_ebusy_remove_then_set)
{
    static struct outside o, other;
    errno = 0;
    ck_assert_int_eq(sf_on_idle(poll_outside, &o), 0);
    ck_assert_int_eq(sf_on_idle(poll_outside, &other), -1);
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0); /* removing none is fine */
    ck_assert_int_eq(sf_on_idle(poll_outside, &other), 0);
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
}
END_TEST

/* A get of the promise, from plain code (_i 0) or from inside a task
 * (_i 1), at 1 thread (no worker: only the get can call the hook) and 3. */
static void *get_in_task(void *arg) { return sf_get(arg); }

START_TEST(a_get_calls_the_hook_until_its_promise_is_done)
{
    static int value = 42;
    for (int threads = 1; threads <= 3; threads += 2) {
        start(threads);
        struct outside o = {0};
        sf_future *p = sf_promise();
        ck_assert_ptr_nonnull(p);
        outside_start(&o, p, &value, 20);
        ck_assert_int_eq(sf_on_idle(poll_outside, &o), 0);
        void *got;
        if (_i == 0) {
            got = sf_get(p);
        } else {
            sf_future *t = sf_do(get_in_task, p);
            got = sf_get(t);
            sf_release(t);
        }
        ck_assert_ptr_eq(got, &value);
        ck_assert_int_eq(atomic_load(&o.completed), 1);
        ck_assert_int_ge(atomic_load(&o.calls), 2); /* before and after arrival */
        ck_assert_int_eq(atomic_load(&o.overlaps), 0);
        sf_release(p);
        finish(&o);
    }
}
END_TEST

/* Idle workers call it while the program does nothing with libsf: the
 * main thread sleeps, a worker completes the promise. */
START_TEST(idle_workers_call_the_hook)
{
    static int value = 7;
    start(2 + _i);
    struct outside o = {0};
    sf_future *p = sf_promise();
    outside_start(&o, p, &value, 30);
    ck_assert_int_eq(sf_on_idle(poll_outside, &o), 0);
    ck_assert(tu_wait_count(&o.completed, 1, 10000));
    ck_assert_int_eq(atomic_load(&o.on_main), 0); /* all by workers */
    ck_assert_int_eq(atomic_load(&o.overlaps), 0);
    void *got = NULL;
    ck_assert_int_eq(sf_wait_for(p, &got, 10.0), 0); /* set just after the count */
    ck_assert_ptr_eq(got, &value);
    sf_release(p);
    finish(&o);
}
END_TEST

/* Timed waits call it too (it is no task): sf_wait_for and sf_wait_any at
 * 1 thread, where nobody else would. */
START_TEST(timed_waits_call_the_hook)
{
    static int value = 9;
    start(1);
    struct outside o = {0};
    sf_future *p = sf_promise();
    outside_start(&o, p, &value, 20);
    ck_assert_int_eq(sf_on_idle(poll_outside, &o), 0);
    void *got = NULL;
    if (_i == 0) {
        ck_assert_int_eq(sf_wait_for(p, &got, 30.0), 0);
    } else {
        sf_future *never = sf_promise();
        sf_future *fs[2] = {never, p};
        int which = -1;
        ck_assert_int_eq(sf_wait_any(fs, 2, 30.0, &which), 0);
        ck_assert_int_eq(which, 1);
        ck_assert_int_eq(sf_wait_for(p, &got, 0), 0);
        ck_assert_int_eq(sf_cancel(never), 0);
        sf_release(never);
    }
    ck_assert_ptr_eq(got, &value);
    ck_assert_int_eq(atomic_load(&o.completed), 1);
    sf_release(p);
    finish(&o);
}
END_TEST

/* A batch wait calls it too. The batch's task runs on the one worker and
 * spins until the hook has run; the worker is busy, so only the wait can
 * call the hook: untimed (_i 0) and timed (_i 1). */
static atomic_int hook_ran, task_started;

static int poll_flag(void *ctx)
{
    struct outside *o = ctx;
    atomic_fetch_add(&o->calls, 1);
    if (pthread_equal(pthread_self(), o->main_thread))
        atomic_fetch_add(&o->on_main, 1);
    atomic_store(&hook_ran, 1);
    return 0;
}

static void *spin_until_the_hook_ran(void *arg)
{
    (void)arg;
    atomic_store(&task_started, 1);
    while (!atomic_load(&hook_ran))
        tu_spin_us(10);
    return (void *)1L;
}

START_TEST(a_batch_wait_calls_the_hook)
{
    start(2);
    struct outside o = {.main_thread = pthread_self()};
    atomic_store(&hook_ran, 0);
    atomic_store(&task_started, 0);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    sf_future *f = sf_batch_do(b, spin_until_the_hook_ran, NULL);
    ck_assert_ptr_nonnull(f);
    /* The worker runs the task: the wait cannot run it, nor the worker
     * call the hook. */
    ck_assert(tu_wait_flag(&task_started, 10000));
    ck_assert_int_eq(sf_on_idle(poll_flag, &o), 0);
    ck_assert_int_eq(_i == 0 ? sf_batch_wait(b) : sf_batch_wait_for(b, 30.0), 0);
    ck_assert_ptr_eq(sf_get(f), (void *)1L);
    ck_assert_int_gt(atomic_load(&o.on_main), 0);
    sf_release(f);
    sf_batch_close(b);
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
    sf_shutdown();
}
END_TEST

/* Many threads want it at once (idle workers and getters on several
 * plain threads): one call at a time, every promise completed. */
struct getter {
    sf_future *p;
    void *got;
    pthread_t thread;
};

static void *getter_main(void *arg)
{
    struct getter *g = arg;
    g->got = sf_get(g->p);
    return NULL;
}

START_TEST(one_call_at_a_time)
{
    static int value = 3;
    start(4);
    struct outside o = {.hold_us = 20};
    sf_future *p = sf_promise();
    struct getter g[4];
    for (int i = 0; i < 4; i++) {
        g[i].p = p;
        ck_assert_int_eq(pthread_create(&g[i].thread, NULL, getter_main, &g[i]), 0);
    }
    outside_start(&o, p, &value, 50);
    ck_assert_int_eq(sf_on_idle(poll_outside, &o), 0);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(g[i].thread, NULL), 0);
        ck_assert_ptr_eq(g[i].got, &value);
    }
    ck_assert_int_eq(atomic_load(&o.overlaps), 0);
    ck_assert_int_eq(atomic_load(&o.completed), 1);
    sf_release(p);
    finish(&o);
}
END_TEST

/* Inside the hook sf_on_idle() fails with EDEADLK (it would wait for
 * itself); the hook stays installed. */
START_TEST(set_from_the_hook_is_edeadlk)
{
    static int value = 5;
    start(1);
    struct outside o = {.try_nested = 1};
    sf_future *p = sf_promise();
    outside_start(&o, p, &value, 5);
    ck_assert_int_eq(sf_on_idle(poll_outside, &o), 0);
    ck_assert_ptr_eq(sf_get(p), &value);
    ck_assert_int_eq(atomic_load(&o.nested_rc), -1);
    ck_assert_int_eq(atomic_load(&o.nested_err), EDEADLK);
    errno = 0;
    ck_assert_int_eq(sf_on_idle(poll_outside, &o), -1); /* still installed */
    ck_assert_int_eq(errno, EBUSY);
    sf_release(p);
    finish(&o);
}
END_TEST

/* Removal returns once no call runs, and no call starts after: the
 * caller may free ctx. Workers keep calling a hook that waits (0). */
static int poll_waiting(void *ctx)
{
    struct outside *o = ctx;
    atomic_fetch_add(&o->calls, 1);
    atomic_fetch_add(&o->inside, 1);
    tu_spin_us(200);
    atomic_fetch_sub(&o->inside, 1);
    return 0;
}

START_TEST(removal_waits_for_the_call_under_way)
{
    start(3);
    struct outside *o = calloc(1, sizeof *o);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(sf_on_idle(poll_waiting, o), 0);
    for (int round = 0; round < 20; round++) {
        ck_assert(tu_wait_count(&o->calls, 5 * (round + 1), 10000));
        ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
        ck_assert_int_eq(atomic_load(&o->inside), 0);
        int calls = atomic_load(&o->calls);
        tu_sleep_ms(3);
        ck_assert_int_eq(atomic_load(&o->calls), calls); /* none started */
        ck_assert_int_eq(sf_on_idle(poll_waiting, o), 0);
    }
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
    free(o);
    sf_shutdown();
}
END_TEST

/* A hook that waits for outside events (returns 0) is called again within
 * 1 ms by a sleeping worker: over 500 ms of an idle pool, 40 calls at the
 * least even on a loaded machine, against the 5 that workers sleeping
 * their usual 100 ms would make. */
static int poll_counting(void *ctx)
{
    atomic_fetch_add(&((struct outside *)ctx)->calls, 1);
    return 0;
}

START_TEST(a_waiting_hook_is_called_every_millisecond)
{
    start(2);
    struct outside o = {0};
    tu_sleep_ms(50); /* the worker is asleep */
    ck_assert_int_eq(sf_on_idle(poll_counting, &o), 0);
    tu_sleep_ms(10);
    int before = atomic_load(&o.calls);
    tu_sleep_ms(500);
    ck_assert_int_ge(atomic_load(&o.calls) - before, 40);
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
    sf_shutdown();
}
END_TEST

/* The hook is the process's: installed before the runtime starts, it
 * stays across sf_shutdown() and serves the next runtime's workers. */
START_TEST(the_hook_outlives_a_shutdown)
{
    struct outside o = {0};
    ck_assert_int_eq(sf_on_idle(poll_waiting, &o), 0);
    start(2);
    ck_assert(tu_wait_count(&o.calls, 1, 10000));
    sf_shutdown();
    int calls = atomic_load(&o.calls);
    start(2);
    ck_assert(tu_wait_count(&o.calls, calls + 1, 10000)); /* the new runtime's worker */
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
    sf_shutdown();
}
END_TEST

/* A forked child keeps the hook and can remove it at once, even when a
 * worker of the parent was inside it at the fork. */
START_TEST(a_forked_child_keeps_the_hook)
{
    start(3);
    struct outside o = {0};
    ck_assert_int_eq(sf_on_idle(poll_waiting, &o), 0);
    for (int i = 0; i < 10; i++) {
        ck_assert(tu_wait_count(&o.calls, 3 * (i + 1), 10000));
        pid_t pid = fork();
        ck_assert_int_ne(pid, -1);
        if (pid == 0) {
            alarm(10); /* a hang fails the test instead of stalling it */
            int busy = sf_on_idle(poll_outside, &o) == -1 && errno == EBUSY;
            int removed = sf_on_idle(NULL, NULL) == 0;
            _exit(busy && removed ? 0 : 1);
        }
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
    }
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
    sf_shutdown();
}
END_TEST

static Suite *on_idle_suite(void)
{
    Suite *s = suite_create("on_idle");
    TCase *tc = tcase_create("on_idle");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, set_twice_is_ebusy_remove_then_set);
    tcase_add_loop_test(tc, a_get_calls_the_hook_until_its_promise_is_done, 0, 2);
    tcase_add_loop_test(tc, idle_workers_call_the_hook, 0, 2);
    tcase_add_loop_test(tc, timed_waits_call_the_hook, 0, 2);
    tcase_add_loop_test(tc, a_batch_wait_calls_the_hook, 0, 2);
    tcase_add_test(tc, one_call_at_a_time);
    tcase_add_test(tc, set_from_the_hook_is_edeadlk);
    tcase_add_test(tc, removal_waits_for_the_call_under_way);
    tcase_add_test(tc, a_waiting_hook_is_called_every_millisecond);
    tcase_add_test(tc, the_hook_outlives_a_shutdown);
    tcase_add_test(tc, a_forked_child_keeps_the_hook);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(on_idle_suite)
