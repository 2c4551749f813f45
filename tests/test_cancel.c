/*
 * test_cancel.c - sf_cancel and sf_cancelled (docs/failures.md):
 * a task cancelled before it started never runs and is done at once; one
 * cancelled while it runs is asked to stop, and its getters see ECANCELED
 * only if it saw the request; a done task is left as it is.
 *
 * "Never ran" is counted exactly, so the pending cases must be pending for
 * sure: at SF_THREADS=2 the only pool worker is first kept busy with a hog
 * task (as in test_help), so that nothing but this test's own calls can run
 * the task. Tasks wait for flags with a deadline (WAIT_MS) and report a
 * timeout as a wrong value, so a broken runtime fails instead of hanging;
 * the tcase timeout is the watchdog beyond that.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 10000L
/* What *result holds before an sf_wait() that must leave it alone. */
#define UNTOUCHED ((void *)0x5e5e5e)

static void start(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
}

/* ---- keeping the pool worker busy ---- */

static atomic_int hog_started, hog_release;
static pthread_t hog_thread;

static void *hog(void *arg)
{
    hog_thread = pthread_self();
    atomic_store(&hog_started, 1);
    return tu_wait_flag(&hog_release, 4 * WAIT_MS) ? arg : (void *)-1L;
}

static void *wait_hog_started(void *arg)
{
    return tu_wait_flag(&hog_started, WAIT_MS) ? arg : (void *)-1L;
}

/* At SF_THREADS=2, occupies the one worker until free_worker(): the get of
 * a newer task submits the hog, and the idle worker takes it (oldest
 * first) while this thread runs the newer one. Returns the hog, or NULL at
 * SF_THREADS=1. */
static sf_future *occupy_worker(int threads)
{
    if (threads < 2)
        return NULL;
    tu_sleep_ms(20); /* let the worker go idle */
    sf_future *h = sf_do(hog, (void *)333L);
    sf_future *x = sf_do(wait_hog_started, (void *)444L);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_eq(sf_get(x), (void *)444L);
    ck_assert_msg(atomic_load(&hog_started), "setup: the idle worker never took the hog");
    ck_assert_msg(!pthread_equal(hog_thread, pthread_self()), "setup: the hog ran here");
    sf_release(x);
    return h;
}

static void free_worker(sf_future *h)
{
    if (h == NULL)
        return;
    atomic_store(&hog_release, 1);
    ck_assert_ptr_eq(sf_get(h), (void *)333L);
    sf_release(h);
}

/* ---- tasks ---- */

static atomic_long runs;

static void *counted(void *arg)
{
    atomic_fetch_add(&runs, 1);
    return (void *)((long)arg + 1);
}

static void assert_works(void)
{
    sf_future *f = sf_do(tu_fib, (void *)15L);
    ck_assert_ptr_nonnull(f);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_ptr_eq(r, (void *)610L);
    sf_release(f);
}

/* The unhandled-failure hook, counting: cancellation is no failure. */
static atomic_int hook_calls;
static void counting_hook(int code, const char *message, void *ctx)
{
    (void)code;
    (void)message;
    (void)ctx;
    atomic_fetch_add(&hook_calls, 1);
}

/* ---- cancelling a pending task ---- */

struct cancel_job {
    sf_future *f;
    int rc, err;
};

static void *cancel_on_thread(void *arg)
{
    struct cancel_job *j = arg;
    errno = 0;
    j->rc = sf_cancel(j->f);
    j->err = errno;
    return NULL;
}

/*
 * Never got, then cancelled: sf_cancel is 0, the task never runs (not by
 * the gets, not by shutdown), it is done at once, and its getters see
 * ECANCELED. A second cancel finds it done (1). _i: bit 0 threads (1, 2),
 * bit 1 who cancels (this thread, a foreign one).
 */
START_TEST(cancel_pending_task)
{
    int threads = 1 + (_i & 1);
    start(threads);
    sf_on_unhandled(counting_hook, NULL);
    sf_future *h = occupy_worker(threads);
    sf_future *f = sf_do(counted, (void *)5L);
    sf_future *g = sf_do(counted, (void *)6L); /* newer: the fast path's task */
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(sf_is_done(f), 0);
    ck_assert_int_eq(sf_is_done(g), 0);
    if (_i & 2) {
        struct cancel_job jf = {f, 7, 0}, jg = {g, 7, 0};
        tu_run_on_thread(cancel_on_thread, &jf, 0);
        tu_run_on_thread(cancel_on_thread, &jg, 0);
        ck_assert_int_eq(jf.rc, 0);
        ck_assert_int_eq(jg.rc, 0);
    } else {
        ck_assert_int_eq(sf_cancel(f), 0);
        ck_assert_int_eq(sf_cancel(g), 0);
    }
    ck_assert_int_eq(sf_is_done(f), 1);
    ck_assert_int_eq(sf_is_done(g), 1);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(g, &r), ECANCELED);
    ck_assert_int_eq(sf_wait(f, &r), ECANCELED);
    ck_assert_ptr_eq(r, UNTOUCHED);
    errno = 0;
    ck_assert_ptr_null(sf_get(f));
    ck_assert_int_eq(errno, ECANCELED);
    errno = 0;
    ck_assert_ptr_null(sf_get(g));
    ck_assert_int_eq(errno, ECANCELED);
    ck_assert_int_eq(sf_wait(f, NULL), ECANCELED);
    ck_assert_ptr_null(sf_error_message(f)); /* no sf_fail message */
    ck_assert_int_eq(sf_cancel(f), 1);       /* already done */
    ck_assert_int_eq(sf_wait(f, &r), ECANCELED);
    ck_assert_int_eq(atomic_load(&runs), 0);
    /* Cancelled and never got, then released; cancelled and never released. */
    sf_future *k = sf_do(counted, (void *)7L);
    sf_future *m = sf_do(counted, (void *)8L);
    ck_assert_int_eq(sf_cancel(k), 0);
    ck_assert_int_eq(sf_cancel(m), 0);
    sf_release(k);
    /* Nothing runs k or m: not the get of the hog, not the shutdown. */
    free_worker(h);
    sf_release(f);
    assert_works();
    sf_shutdown(); /* g and m were never released: gone with the runtime */
    ck_assert_int_eq(atomic_load(&runs), 0);
    ck_assert_int_eq(atomic_load(&hook_calls), 0);
}
END_TEST

/*
 * A done task is left as it is: sf_cancel is 1, its result (or failure)
 * stays. _i: bit 0 threads, bit 1 the task failed.
 */
static void *fails(void *arg)
{
    (void)arg;
    sf_fail(EIO, "disk %d", 3);
    return (void *)42L;
}

START_TEST(cancel_done_task)
{
    start(1 + (_i & 1));
    int failed = (_i & 2) != 0;
    sf_future *f = sf_do(failed ? fails : counted, (void *)5L);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), failed ? EIO : 0);
    ck_assert_int_eq(sf_cancel(f), 1);
    ck_assert_int_eq(sf_cancel(f), 1);
    ck_assert_int_eq(sf_is_done(f), 1);
    r = UNTOUCHED;
    if (failed) {
        ck_assert_int_eq(sf_wait(f, &r), EIO);
        ck_assert_ptr_eq(r, UNTOUCHED);
        errno = 0;
        ck_assert_ptr_null(sf_get(f));
        ck_assert_int_eq(errno, EIO);
        ck_assert_str_eq(sf_error_message(f), "disk 3");
    } else {
        ck_assert_int_eq(sf_wait(f, &r), 0);
        ck_assert_ptr_eq(r, (void *)6L);
        ck_assert_ptr_eq(sf_get(f), (void *)6L);
        ck_assert_int_eq(atomic_load(&runs), 1);
    }
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* ---- cancelling a running task ---- */

/*
 * Running elsewhere, started by:
 *   RUN_FOREIGN: a foreign thread's get (SF_THREADS=1 or 2);
 *   RUN_WORKER:  the pool worker (SF_THREADS=2): this thread's get of a
 *                newer task submits it, and the idle worker takes it.
 */
enum { RUN_FOREIGN, RUN_WORKER };
static const struct {
    int threads, how;
} run_modes[] = {{1, RUN_FOREIGN}, {2, RUN_FOREIGN}, {2, RUN_WORKER}};

static atomic_int task_started, task_finish, task_ended;
static int first_poll, saw_cancel, polls_after;
static pthread_t task_thread;

/* Asks sf_cancelled() until it says 1, then stops. */
static void *polls(void *arg)
{
    task_thread = pthread_self();
    first_poll = sf_cancelled();
    atomic_store(&task_started, 1);
    double end = tu_now_ms() + (double)WAIT_MS;
    while (!sf_cancelled() && tu_now_ms() < end)
        tu_sleep_ms(1);
    saw_cancel = sf_cancelled();
    polls_after = sf_cancelled(); /* it stays asked */
    atomic_store(&task_ended, 1);
    return arg;
}

/* Never asks: waits for task_finish and returns its value. */
static void *does_not_poll(void *arg)
{
    task_thread = pthread_self();
    atomic_store(&task_started, 1);
    void *r = tu_wait_flag(&task_finish, WAIT_MS) ? arg : (void *)-1L;
    atomic_store(&task_ended, 1);
    return r;
}

struct getter {
    sf_future *f;
    void *val;
    int err;
};

static void *get_on_thread(void *arg)
{
    struct getter *g = arg;
    errno = 0;
    g->val = sf_get(g->f);
    g->err = errno;
    return NULL;
}

static struct getter runner;
static pthread_t runner_tid;

static void *wait_task_started(void *arg)
{
    return tu_wait_flag(&task_started, WAIT_MS) ? arg : (void *)-1L;
}

static sf_future *run_elsewhere(int how, void *(*fn)(void *), void *arg)
{
    if (how == RUN_WORKER)
        tu_sleep_ms(20); /* let the worker go idle */
    sf_future *f = sf_do(fn, arg);
    ck_assert_ptr_nonnull(f);
    if (how == RUN_FOREIGN) {
        runner = (struct getter){f, UNTOUCHED, 0};
        ck_assert_int_eq(pthread_create(&runner_tid, NULL, get_on_thread, &runner), 0);
    } else {
        sf_future *x = sf_do(wait_task_started, (void *)444L);
        ck_assert_ptr_nonnull(x);
        ck_assert_ptr_eq(sf_get(x), (void *)444L);
        sf_release(x);
    }
    ck_assert_msg(tu_wait_flag(&task_started, WAIT_MS), "setup: the task never started");
    ck_assert_msg(!pthread_equal(task_thread, pthread_self()), "setup: the task ran here");
    return f;
}

/* The foreign runner's get, once the task ended. */
static void join_runner(int how, void *want_val, int want_err)
{
    if (how != RUN_FOREIGN)
        return;
    ck_assert_int_eq(pthread_join(runner_tid, NULL), 0);
    ck_assert_ptr_eq(runner.val, want_val);
    ck_assert_int_eq(runner.err, want_err);
}

/* Cancelled while it runs, it sees sf_cancelled() == 1 and stops: sf_cancel
 * is 0, and every getter sees ECANCELED. */
START_TEST(cancel_running_task_that_polls)
{
    int how = run_modes[_i].how;
    start(run_modes[_i].threads);
    sf_on_unhandled(counting_hook, NULL);
    sf_future *f = run_elsewhere(how, polls, (void *)42L);
    ck_assert_int_eq(sf_is_done(f), 0);
    ck_assert_int_eq(sf_cancel(f), 0);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), ECANCELED);
    ck_assert_ptr_eq(r, UNTOUCHED);
    errno = 0;
    ck_assert_ptr_null(sf_get(f));
    ck_assert_int_eq(errno, ECANCELED);
    ck_assert_int_eq(first_poll, 0);
    ck_assert_int_eq(saw_cancel, 1);
    ck_assert_int_eq(polls_after, 1);
    ck_assert_int_eq(sf_is_done(f), 1);
    ck_assert_int_eq(sf_cancel(f), 1);
    join_runner(how, NULL, ECANCELED);
    sf_release(f);
    assert_works();
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&hook_calls), 0);
}
END_TEST

/* Cancelled while it runs, it never asks: sf_cancel is 0 (asked to stop),
 * and the task keeps its result. */
START_TEST(cancel_running_task_that_does_not_poll)
{
    int how = run_modes[_i].how;
    start(run_modes[_i].threads);
    sf_future *f = run_elsewhere(how, does_not_poll, (void *)42L);
    ck_assert_int_eq(sf_cancel(f), 0);
    atomic_store(&task_finish, 1);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_ptr_eq(r, (void *)42L);
    errno = 0;
    ck_assert_ptr_eq(sf_get(f), (void *)42L);
    ck_assert_int_eq(errno, 0);
    ck_assert_ptr_null(sf_error_message(f));
    ck_assert_int_eq(sf_cancel(f), 1);
    ck_assert_int_eq(sf_wait(f, &r), 0);
    join_runner(how, (void *)42L, 0);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/*
 * A cancellation reaches the tasks the cancelled task makes (cancel.h): a
 * child it makes and gets after seeing the request never starts - its get
 * sees ECANCELED - and back in the parent sf_cancelled() is 1 again. _i as
 * run_modes; test_cancel_tree has the rest of the tree.
 */
static int parent_poll_after = -1, child_rc = -1;
static void *child_val;
static atomic_int child_runs;

static void *reads_cancelled(void *arg)
{
    (void)arg;
    atomic_fetch_add(&child_runs, 1);
    return (void *)(100L + sf_cancelled());
}

static void *polls_then_makes_child(void *arg)
{
    task_thread = pthread_self();
    first_poll = sf_cancelled();
    atomic_store(&task_started, 1);
    double end = tu_now_ms() + (double)WAIT_MS;
    while (!sf_cancelled() && tu_now_ms() < end)
        tu_sleep_ms(1);
    saw_cancel = sf_cancelled();
    sf_future *c = sf_do(reads_cancelled, NULL);
    if (c == NULL)
        return (void *)-1L;
    child_val = UNTOUCHED;
    child_rc = sf_wait(c, &child_val);
    sf_release(c);
    parent_poll_after = sf_cancelled();
    return arg;
}

START_TEST(cancelled_reaches_children)
{
    int how = run_modes[_i].how;
    start(run_modes[_i].threads);
    atomic_store(&child_runs, 0);
    sf_future *f = run_elsewhere(how, polls_then_makes_child, (void *)42L);
    ck_assert_int_eq(sf_cancel(f), 0);
    ck_assert_int_eq(sf_wait(f, NULL), ECANCELED);
    ck_assert_int_eq(first_poll, 0);
    ck_assert_int_eq(saw_cancel, 1);
    ck_assert_int_eq(child_rc, ECANCELED);
    ck_assert_int_eq(atomic_load(&child_runs), 0);
    ck_assert_int_eq(parent_poll_after, 1);
    join_runner(how, NULL, ECANCELED);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* Outside a task sf_cancelled() is 0: before the runtime starts, in this
 * thread, in a foreign thread, after a cancelled task ended; inside a task
 * nobody cancelled it is 0 too. */
static void *cancelled_value(void *arg)
{
    (void)arg;
    return (void *)(long)sf_cancelled();
}

START_TEST(cancelled_outside_a_task)
{
    tu_env_threads(1 + _i);
    ck_assert_int_eq(sf_cancelled(), 0);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(sf_cancelled(), 0);
    ck_assert_ptr_eq(tu_run_on_thread(cancelled_value, NULL, 0), (void *)0L);
    sf_future *f = sf_do(cancelled_value, NULL);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_ptr_eq(r, (void *)0L);
    sf_release(f);
    sf_future *g = run_elsewhere(RUN_FOREIGN, polls, (void *)42L);
    ck_assert_int_eq(sf_cancel(g), 0);
    ck_assert_int_eq(sf_wait(g, NULL), ECANCELED);
    ck_assert_int_eq(sf_cancelled(), 0);
    join_runner(RUN_FOREIGN, NULL, ECANCELED);
    ck_assert_int_eq(sf_cancelled(), 0);
    sf_release(g);
    sf_shutdown();
    ck_assert_int_eq(sf_cancelled(), 0);
}
END_TEST

START_TEST(cancel_null)
{
    start(1 + _i);
    errno = 0;
    ck_assert_int_eq(sf_cancel(NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(NULL, &r), EINVAL);
    ck_assert_ptr_eq(r, UNTOUCHED);
    ck_assert_ptr_null(sf_error_message(NULL));
    assert_works();
    sf_shutdown();
}
END_TEST

/* A million pending futures cancelled, then released: none ever runs, and
 * the runtime goes on working. */
#define MILLION 1000000L

START_TEST(cancel_a_million_pending)
{
    int threads = 1 + _i;
    start(threads);
    sf_on_unhandled(counting_hook, NULL);
    sf_future *h = occupy_worker(threads);
    sf_future **fs = malloc((size_t)MILLION * sizeof *fs);
    ck_assert_ptr_nonnull(fs);
    for (long i = 0; i < MILLION; i++)
        if ((fs[i] = sf_do(counted, (void *)i)) == NULL)
            ck_abort_msg("sf_do %ld failed: %s", i, strerror(errno));
    long not_zero = 0, not_done = 0, not_cancelled = 0;
    for (long i = 0; i < MILLION; i++)
        not_zero += sf_cancel(fs[i]) != 0;
    for (long i = 0; i < MILLION; i++) {
        not_done += sf_is_done(fs[i]) != 1;
        if (i % 1000 == 0)
            not_cancelled += sf_wait(fs[i], NULL) != ECANCELED;
    }
    ck_assert_int_eq(not_zero, 0);
    ck_assert_int_eq(not_done, 0);
    ck_assert_int_eq(not_cancelled, 0);
    ck_assert_int_eq(atomic_load(&runs), 0);
    free_worker(h);
    /* Newest first, then the rest oldest first. */
    for (long i = MILLION - 1; i >= 0; i -= 2)
        sf_release(fs[i]);
    for (long i = 0; i < MILLION; i += 2)
        sf_release(fs[i]);
    free(fs);
    ck_assert_int_eq(atomic_load(&runs), 0);
    assert_works();
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&runs), 0);
    ck_assert_int_eq(atomic_load(&hook_calls), 0);
}
END_TEST

/*
 * The counters stay exact (sf.h, sf_stats_read): once the runtime is quiet,
 * created == run_inline + run_pool + run_stolen + discarded + (tasks still
 * pending or running). A task cancelled before it started is none of
 * pending, running or run, so it must be counted on the right somewhere
 * (discarded is the one that fits: it never ran). Checked with cancelled
 * futures still held, and after they are released. _i: threads (1, 2).
 */
#define NSTAT 10

START_TEST(cancelled_tasks_keep_the_stats_exact)
{
    int threads = 1 + _i;
    start(threads);
    sf_future *h = occupy_worker(threads);
    sf_future *f[NSTAT];
    for (long i = 0; i < NSTAT; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(counted, (void *)i));
    for (int i = 0; i < NSTAT; i++)
        ck_assert_int_eq(sf_cancel(f[i]), 0);
    free_worker(h);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, NSTAT + 2 * (threads > 1));
    for (int i = 0; i < NSTAT; i++)
        sf_release(f[i]);
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, NSTAT + 2 * (threads > 1));
    ck_assert_int_eq(atomic_load(&runs), 0);
    sf_shutdown();
}
END_TEST

/*
 * Cancellation is not a failure: no unhandled-failure report for a task
 * cancelled before it started and released unseen, one cancelled and never
 * released (at shutdown), or one cancelled while it ran, that saw it, and
 * was released with no get. That one, c, runs in a root task's region: the
 * root (run by this thread's get) makes c and a gate, a foreign thread runs
 * the gate, and the root's get of the gate helps by running c (or the
 * worker takes c) while another foreign thread cancels c once it started.
 * _i: bit 0 threads, bit 1 the hook (a counting one, the default one with
 * stderr captured).
 */
static atomic_int gate_started;

static void *gate_until_ended(void *arg)
{
    atomic_store(&gate_started, 1);
    return tu_wait_flag(&task_ended, WAIT_MS) ? arg : (void *)-1L;
}

static void *cancel_when_started(void *arg)
{
    struct cancel_job *j = arg;
    if (!tu_wait_flag(&task_started, WAIT_MS)) {
        j->rc = -2;
        return NULL;
    }
    return cancel_on_thread(j);
}

struct gate_root {
    sf_future *c, *gate;
    struct getter gg;
    struct cancel_job jc;
    pthread_t gt, ct;
};

/* The root: its get of the gate returns the gate's value; -3 to -5 for a
 * setup that failed. */
static void *gate_root(void *arg)
{
    struct gate_root *g = arg;
    g->c = sf_do(polls, (void *)3L);
    g->gate = sf_do(gate_until_ended, (void *)4L);
    if (g->c == NULL || g->gate == NULL)
        return (void *)-3L;
    g->gg = (struct getter){g->gate, UNTOUCHED, 0};
    g->jc = (struct cancel_job){g->c, 7, 0};
    if (pthread_create(&g->ct, NULL, cancel_when_started, &g->jc) != 0 ||
        pthread_create(&g->gt, NULL, get_on_thread, &g->gg) != 0)
        return (void *)-4L;
    if (!tu_wait_flag(&gate_started, WAIT_MS))
        return (void *)-5L;
    return sf_get(g->gate);
}

START_TEST(cancelled_is_not_unhandled)
{
    int threads = 1 + (_i & 1), default_hook = (_i & 2) != 0;
    struct tu_capture cap;
    if (default_hook)
        tu_capture_begin(&cap);
    start(threads);
    if (!default_hook)
        sf_on_unhandled(counting_hook, NULL);
    sf_future *h = occupy_worker(threads);
    sf_future *a = sf_do(counted, (void *)1L);
    sf_future *b = sf_do(counted, (void *)2L);
    ck_assert_int_eq(sf_cancel(a), 0);
    ck_assert_int_eq(sf_cancel(b), 0);
    sf_release(a); /* b: never released */
    free_worker(h);

    /* c runs with no get of it. */
    struct gate_root g = {0};
    sf_future *root = sf_do(gate_root, &g);
    ck_assert_ptr_nonnull(root);
    void *v = sf_get(root);
    ck_assert_msg((long)v != -3 && (long)v != -4, "setup: the root could not make its tasks");
    ck_assert_msg((long)v != -5, "setup: nobody ran the gate");
    ck_assert_ptr_eq(v, (void *)4L);
    ck_assert_int_eq(pthread_join(g.gt, NULL), 0);
    ck_assert_int_eq(pthread_join(g.ct, NULL), 0);
    ck_assert_ptr_eq(g.gg.val, (void *)4L);
    ck_assert_int_eq(g.jc.rc, 0);
    ck_assert_int_eq(saw_cancel, 1);
    double end = tu_now_ms() + (double)WAIT_MS;
    while (sf_is_done(g.c) != 1 && tu_now_ms() < end)
        tu_sleep_ms(1);
    ck_assert_int_eq(sf_is_done(g.c), 1);
    sf_release(g.c);
    sf_release(g.gate);
    sf_release(root);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&runs), 0);
    if (default_hook) {
        char *out = tu_capture_end(&cap);
        ck_assert_msg(tu_count_prefixed(out, "libsf: unhandled") == 0,
                      "a cancelled task was reported:\n%s", out);
        free(out);
    } else {
        ck_assert_int_eq(atomic_load(&hook_calls), 0);
    }
}
END_TEST

static Suite *cancel_suite(void)
{
    Suite *s = suite_create("cancel");
    TCase *tc = tcase_create("cancel");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, cancel_pending_task, 0, 4);
    tcase_add_loop_test(tc, cancel_done_task, 0, 4);
    tcase_add_loop_test(tc, cancel_running_task_that_polls, 0, 3);
    tcase_add_loop_test(tc, cancel_running_task_that_does_not_poll, 0, 3);
    tcase_add_loop_test(tc, cancelled_reaches_children, 0, 3);
    tcase_add_loop_test(tc, cancelled_outside_a_task, 0, 2);
    tcase_add_loop_test(tc, cancel_null, 0, 2);
    tcase_add_loop_test(tc, cancel_a_million_pending, 0, 2);
    tcase_add_loop_test(tc, cancelled_tasks_keep_the_stats_exact, 0, 2);
    suite_add_tcase(s, tc);
    TCase *un = tcase_create("unhandled");
    tcase_set_timeout(un, 60);
    tcase_add_loop_test(un, cancelled_is_not_unhandled, 0, 4);
    suite_add_tcase(s, un);
    return s;
}

TU_MAIN(cancel_suite)
