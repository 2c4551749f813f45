/*
 * test_help.c - a get whose task runs on another thread helps instead of
 * sleeping: it runs pending work, so work that the running task waits for
 * gets done even when no pool worker is free. A get in plain code (main,
 * a thread of the program's) helps only with the work of what it waits
 * for - its task and that task's descendants - and never runs an unrelated
 * task; while that call lasts, so does every get on its thread, in the
 * tasks the call runs too. Elsewhere a get inside a task helps with any
 * pending work, its thread's own first, then other threads'
 * (docs/waiting.md).
 *
 * Each helping scenario is built so that the only way to finish is for a
 * blocked get to run a pending task. Tasks wait for flags with a deadline
 * (WAIT_MS) and return a wrong value when it passes, so a runtime that does
 * not help fails the test instead of hanging; the tcase timeout is the
 * watchdog beyond that. Both are for a runtime that would otherwise hang,
 * not bounds on speed: a correct runtime sets every flag within
 * milliseconds, and they are generous so that a loaded machine or a
 * sanitizer's slowdown cannot reach them.
 */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 30000L

static atomic_int a_started, flag, b_runs, hog_started, hog_release;
static pthread_t a_thread, b_thread, hog_thread;

/* a: waits until b has run. */
static void *wait_for_flag(void *arg)
{
    a_thread = pthread_self();
    atomic_store(&a_started, 1);
    return tu_wait_flag(&flag, WAIT_MS) ? arg : (void *)-1L;
}

/* b: what a waits for. */
static void *set_flag(void *arg)
{
    b_thread = pthread_self();
    atomic_fetch_add(&b_runs, 1);
    atomic_store(&flag, 1);
    return arg;
}

static void *hog(void *arg)
{
    hog_thread = pthread_self();
    atomic_store(&hog_started, 1);
    return tu_wait_flag(&hog_release, WAIT_MS) ? arg : (void *)-1L;
}

static void *wait_hog_started(void *arg)
{
    return tu_wait_flag(&hog_started, WAIT_MS) ? arg : (void *)-1L;
}

/* Runs until some get has slept (sf_stats' sleeps; the deadline is the
 * hang guard), then ends: the sleep comes before the task's end. */
static atomic_int a_ended;
static void *slow_until_a_sleep(void *arg)
{
    a_thread = pthread_self();
    atomic_store(&a_started, 1);
    sf_stats s;
    double give_up = tu_now_ms() + (double)WAIT_MS;
    while (sf_stats_read(&s) == 0 && s.sleeps == 0 && tu_now_ms() < give_up)
        tu_sleep_ms(1);
    atomic_store(&a_ended, 1);
    return arg;
}

struct getter {
    sf_future *f;
    int wait_started; /* get only once a_started is set */
    void *val;
    pthread_t self;
    int a_ended_first; /* a_ended was set when the get returned */
};

static void *foreign_get(void *arg)
{
    struct getter *g = arg;
    g->self = pthread_self();
    if (g->wait_started && !tu_wait_flag(&a_started, WAIT_MS)) {
        g->val = (void *)-2L;
        return NULL;
    }
    g->val = sf_get(g->f);
    g->a_ended_first = atomic_load(&a_ended);
    return NULL;
}

/* SF_THREADS=1, so no worker exists. Main's get runs the root task, which
 * makes a and b; a foreign thread runs a (it got it first); the root then
 * gets a, which runs elsewhere: the root's get must run b, its own pending
 * task (made in the region of main's get, so within what main's thread may
 * help with), while it waits, or a never finishes. */
struct own_pending {
    sf_future *a, *b;
    struct getter g;
    pthread_t tid;
};

static void *own_pending_root(void *arg)
{
    struct own_pending *o = arg;
    o->a = sf_do(wait_for_flag, (void *)111L);
    o->b = sf_do(set_flag, (void *)222L);
    if (o->a == NULL || o->b == NULL)
        return (void *)-3L;
    o->g = (struct getter){.f = o->a, .wait_started = 0};
    if (pthread_create(&o->tid, NULL, foreign_get, &o->g) != 0)
        return (void *)-4L;
    if (!tu_wait_flag(&a_started, WAIT_MS))
        return (void *)-5L; /* the foreign get never started a */
    return sf_get(o->a);
}

START_TEST(blocked_get_runs_own_pending)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    struct own_pending o = {0};
    sf_future *root = sf_do(own_pending_root, &o);
    ck_assert_ptr_nonnull(root);
    void *v = sf_get(root);
    ck_assert_msg((long)v != -3 && (long)v != -4,
                  "setup: the root's sf_do or pthread_create failed");
    ck_assert_msg((long)v != -5, "setup: the foreign get never started a");
    ck_assert_int_eq(pthread_join(o.tid, NULL), 0);
    ck_assert_ptr_eq(v, (void *)111L);
    ck_assert_ptr_eq(o.g.val, (void *)111L);
    ck_assert(pthread_equal(a_thread, o.g.self));
    ck_assert_int_eq(atomic_load(&b_runs), 1);
    ck_assert(pthread_equal(b_thread, pthread_self()));
    ck_assert_int_eq(sf_is_done(o.b), 1);
    ck_assert_ptr_eq(sf_get(o.b), (void *)222L);

    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 3);
    ck_assert_uint_eq(s.run_inline, 2);  /* the root, by main's get; a, by the foreign get */
    ck_assert_uint_eq(s.run_stolen, 1);  /* b, by the root's blocked get */
    ck_assert_uint_eq(s.run_pool, 0);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.gets_blocked, 1); /* the root's get of a */
    sf_release(o.a);
    sf_release(o.b);
    sf_release(root);
    sf_shutdown();
}
END_TEST

/* SF_THREADS=1. The same pending b, but main's get of a is plain code's:
 * a runs on a foreign thread (which got it first) until some get has
 * slept. b, which main queued, is unrelated to a, so main's get must not
 * run it: it finds nothing to help with and sleeps, a ends, and the get
 * returns a's value with b still pending - run afterwards by its own get. */
START_TEST(blocked_plain_get_runs_no_unrelated_task)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *a = sf_do(slow_until_a_sleep, (void *)111L);
    sf_future *b = sf_do(set_flag, (void *)222L);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    struct getter g = {.f = a, .wait_started = 0};
    pthread_t tid;
    ck_assert_int_eq(pthread_create(&tid, NULL, foreign_get, &g), 0);
    ck_assert_msg(tu_wait_flag(&a_started, WAIT_MS), "the foreign get never started a");
    void *v = sf_get(a);
    int b_ran_during_get = atomic_load(&b_runs), b_done_after_get = sf_is_done(b);
    ck_assert_int_eq(pthread_join(tid, NULL), 0);
    ck_assert_ptr_eq(v, (void *)111L);
    ck_assert_ptr_eq(g.val, (void *)111L);
    ck_assert(pthread_equal(a_thread, g.self));
    ck_assert_msg(b_ran_during_get == 0 && b_done_after_get == 0,
                  "plain code's get of a ran b, a task unrelated to a");
    ck_assert_ptr_eq(sf_get(b), (void *)222L);
    ck_assert_int_eq(atomic_load(&b_runs), 1);
    ck_assert(pthread_equal(b_thread, pthread_self()));

    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2);
    ck_assert_uint_eq(s.run_inline, 2); /* a, by the foreign get; b, by its own get */
    ck_assert_uint_eq(s.run_stolen, 0);
    ck_assert_uint_eq(s.run_pool, 0);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.gets_blocked, 1); /* main's get of a */
    ck_assert_uint_ge(s.sleeps, 1);
    sf_release(a);
    sf_release(b);
    sf_shutdown();
}
END_TEST

/* The scenario where only stealing from another thread can finish: main gets
 * a and runs it itself (a is main's own pending task); a makes b and waits
 * for it, b still pending in main's queue (never submitted). A foreign
 * thread then gets a: a runs elsewhere (on main), so that get must run
 * other threads' pending work - b, a's child, which plain code's get of a
 * may help with - instead of sleeping. Nobody else can: main is inside a,
 * and no pool worker is free (none at SF_THREADS=1; busy with a hog at
 * SF_THREADS=2). */
static sf_future *b_made;

static void *make_b_then_wait(void *arg)
{
    a_thread = pthread_self();
    b_made = sf_do(set_flag, (void *)222L);
    if (b_made == NULL)
        return (void *)-3L;
    atomic_store(&a_started, 1);
    return tu_wait_flag(&flag, WAIT_MS) ? arg : (void *)-1L;
}

static void steal_scenario(int with_busy_worker)
{
    uint64_t extra_created = 0, extra_inline = 0, extra_pool = 0;
    sf_future *h = NULL;
    if (with_busy_worker) {
        /* Occupy the only worker: get x, which waits until the worker took
         * the older submitted task h. */
        tu_sleep_ms(20); /* let the worker go idle */
        h = sf_do(hog, (void *)333L);
        sf_future *x = sf_do(wait_hog_started, (void *)444L);
        ck_assert_ptr_eq(sf_get(x), (void *)444L);
        ck_assert_msg(atomic_load(&hog_started),
                      "setup: the idle worker never took the submitted task");
        ck_assert(!pthread_equal(hog_thread, pthread_self()));
        sf_release(x);
        extra_created = 2;
        extra_inline = 1;
        extra_pool = 1;
    }
    sf_future *a = sf_do(make_b_then_wait, (void *)111L);
    ck_assert_ptr_nonnull(a);
    struct getter g = {.f = a, .wait_started = 1};
    pthread_t tid;
    ck_assert_int_eq(pthread_create(&tid, NULL, foreign_get, &g), 0);
    void *v = sf_get(a); /* runs a here: a is pending in this thread */
    ck_assert_int_eq(pthread_join(tid, NULL), 0);
    ck_assert(pthread_equal(a_thread, pthread_self()));
    sf_future *b = b_made;
    ck_assert_msg(v != (void *)-3L, "a could not make b");
    ck_assert_msg(atomic_load(&b_runs) == 1,
                  "b (pending in main's queue) never ran while a foreign get of a waited");
    ck_assert_msg(v == (void *)111L, "a timed out waiting for b: got %p", v);
    ck_assert_ptr_eq(g.val, (void *)111L);
    ck_assert(pthread_equal(b_thread, g.self));
    ck_assert_ptr_eq(sf_get(b), (void *)222L);
    if (h != NULL) {
        atomic_store(&hog_release, 1);
        ck_assert_ptr_eq(sf_get(h), (void *)333L);
        sf_release(h);
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2 + extra_created);
    ck_assert_uint_eq(s.run_inline, 1 + extra_inline); /* a (and x) */
    ck_assert_uint_eq(s.run_stolen, 1);                /* b, by the foreign get */
    ck_assert_uint_eq(s.run_pool, extra_pool);         /* the hog */
    ck_assert_uint_eq(s.discarded, 0);
    sf_release(a);
    sf_release(b);
    sf_shutdown();
}

START_TEST(blocked_get_steals_from_other_thread)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    steal_scenario(0);
}
END_TEST

START_TEST(blocked_get_steals_while_worker_busy)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    steal_scenario(1);
}
END_TEST

/* With nothing to run, a blocked get sleeps, and returns once its task has
 * ended: the task ends only after the sleep is counted, and the get sees
 * its end. (Whether the runner's wake or the nap's timeout ends the sleep
 * is a matter of time, not asserted.) */
START_TEST(blocked_get_sleeps_and_wakes)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *a = sf_do(slow_until_a_sleep, (void *)555L);
    struct getter g = {.f = a, .wait_started = 1};
    pthread_t tid;
    ck_assert_int_eq(pthread_create(&tid, NULL, foreign_get, &g), 0);
    ck_assert_ptr_eq(sf_get(a), (void *)555L);
    ck_assert_int_eq(pthread_join(tid, NULL), 0);
    ck_assert_ptr_eq(g.val, (void *)555L);
    ck_assert(pthread_equal(a_thread, pthread_self()));
    ck_assert(g.a_ended_first);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 1);
    ck_assert_uint_eq(s.run_inline, 1);
    ck_assert_uint_eq(s.gets_blocked, 1);
    ck_assert_uint_ge(s.sleeps, 1);
    sf_release(a);
    sf_shutdown();
}
END_TEST

/*
 * Helping must stay bounded. A root task, run by main's get, makes many
 * independent tasks that each get one shared future that runs for a while
 * on another thread, and gets them: the first blocked get helps by running
 * the next pending task (one of the root's, within what main's thread may
 * help with), which blocks on the same future and helps in turn - each on a
 * fiber of its own, the one below parked. The program nests three deep;
 * helping that stacked each task on the last would nest once per task and
 * overflow an 8 MiB stack at about 29,000 tasks. A thread parks at most 64
 * fibers; beyond, a get sleeps. Every task must finish, once, with the
 * shared value.
 */
/* All past the 29,000 at which stacking would overflow. */
static const long nest_counts[] = {50000, TU_SANITIZED ? 100000 : 200000};
static sf_future *shared;
static atomic_int shared_started, shared_go;
static atomic_long nest_done;

/* Runs until 100 ms after every task is queued, time for the gets to nest
 * up to the cap while it runs (how deep they get asserts nothing). */
static void *shared_body(void *arg)
{
    atomic_store(&shared_started, 1);
    tu_wait_flag(&shared_go, 60000);
    tu_sleep_ms(100);
    return arg;
}

static void *gets_shared(void *arg)
{
    (void)arg;
    void *v = sf_get(shared);
    atomic_fetch_add(&nest_done, 1);
    return v;
}

/* The root: makes n tasks that get the shared future, lets it end, and
 * gets them oldest first. Returns how many could not be made or gave
 * another value: 0. */
static void *gets_all_shared(void *arg)
{
    long n = (long)arg, wrong = 0;
    sf_future **fs = malloc((size_t)n * sizeof *fs);
    if (fs == NULL)
        return (void *)n;
    for (long i = 0; i < n; i++)
        wrong += (fs[i] = sf_do(gets_shared, NULL)) == NULL;
    atomic_store(&shared_go, 1);
    for (long i = 0; i < n; i++) {
        if (fs[i] == NULL)
            continue;
        wrong += sf_get(fs[i]) != (void *)0x5a;
        sf_release(fs[i]);
    }
    free(fs);
    return (void *)wrong;
}

static void *foreign_runner(void *arg)
{
    (void)arg;
    return sf_get(shared); /* claims it and runs it on this non-libsf thread */
}

static void helping_stays_on_the_stack(int threads, long n)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    shared = sf_do(shared_body, (void *)0x5a);
    ck_assert_ptr_nonnull(shared);
    pthread_t runner;
    if (threads == 1) { /* no worker: a foreign thread runs it */
        ck_assert_int_eq(pthread_create(&runner, NULL, foreign_runner, NULL), 0);
    } else { /* submit it; the idle worker takes it */
        sf_future *kick = sf_do(tu_fib, (void *)1L);
        ck_assert_ptr_eq(sf_get(kick), (void *)1L);
        sf_release(kick);
    }
    ck_assert_msg(tu_wait_flag(&shared_started, WAIT_MS), "nobody started the shared task");
    sf_future *root = sf_do(gets_all_shared, (void *)n);
    ck_assert_ptr_nonnull(root);
    ck_assert_ptr_eq(sf_get(root), (void *)0L); /* tasks made, each with the shared value */
    sf_release(root);
    ck_assert_int_eq(atomic_load(&nest_done), n);
    if (threads == 1)
        ck_assert_int_eq(pthread_join(runner, NULL), 0);
    ck_assert_ptr_eq(sf_get(shared), (void *)0x5a);
    sf_release(shared);
    sf_stats st = tu_stats_quiet();
    ck_assert_uint_eq(st.created, (uint64_t)n + 2 + (threads > 1)); /* + shared, root (kick) */
    sf_shutdown();
}

START_TEST(helping_stays_bounded_1_thread)
{
    helping_stays_on_the_stack(1, nest_counts[_i]);
}
END_TEST

START_TEST(helping_stays_bounded_2_threads)
{
    helping_stays_on_the_stack(2, nest_counts[_i]);
}
END_TEST

static Suite *help_suite(void)
{
    Suite *s = suite_create("help");
    TCase *tc = tcase_create("help");
    tcase_set_timeout(tc, 120); /* the watchdog: fail, don't hang */
    tcase_add_test(tc, blocked_get_runs_own_pending);
    tcase_add_test(tc, blocked_plain_get_runs_no_unrelated_task);
    tcase_add_test(tc, blocked_get_steals_from_other_thread);
    tcase_add_test(tc, blocked_get_steals_while_worker_busy);
    tcase_add_test(tc, blocked_get_sleeps_and_wakes);
    suite_add_tcase(s, tc);
    TCase *deep = tcase_create("deep");
    tcase_set_timeout(deep, TU_SANITIZED ? 300 : 120);
    tcase_add_loop_test(deep, helping_stays_bounded_1_thread, 0, 2);
    tcase_add_loop_test(deep, helping_stays_bounded_2_threads, 0, 2);
    suite_add_tcase(s, deep);
    return s;
}

TU_MAIN(help_suite)
