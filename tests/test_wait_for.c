/*
 * test_wait_for.c - waits with a deadline: sf_wait_for, sf_batch_wait_for,
 * sf_wait_any (sf.h, Timed waits; docs/waiting.md). Each case runs at
 * SF_THREADS 1, 2 and 3 (the loop index). A task "running elsewhere" runs
 * on a plain pthread that got it, so that it is elsewhere at any SF_THREADS;
 * it spins until the test lets it go. Deadlines are checked for "not
 * before"; upper bounds are generous (seconds), as only returning matters.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SFTRACE_BIN
#error "SFTRACE_BIN, the path of the built tools/sftrace/sftrace, comes from tests/local.mk"
#endif

static int threads_of(int i) { return 1 + i % 3; }

/* ---- a task held on another thread until let go ------------------------- */

struct held {
    atomic_int started, go;
    sf_future *f;
    pthread_t getter;
};

static void *held_task(void *arg)
{
    struct held *h = arg;
    atomic_store(&h->started, 1);
    while (!atomic_load(&h->go))
        tu_sleep_ms(1);
    return (void *)(intptr_t)42;
}

static void *getter_main(void *arg)
{
    struct held *h = arg;
    void *r = NULL;
    ck_assert_int_eq(sf_wait(h->f, &r), 0);
    ck_assert_ptr_eq(r, (void *)(intptr_t)42);
    return NULL;
}

/* f runs held_task on a new pthread; returns once it has started. */
static void hold(struct held *h)
{
    atomic_store(&h->started, 0);
    atomic_store(&h->go, 0);
    h->f = sf_do(held_task, h);
    ck_assert_ptr_nonnull(h->f);
    ck_assert_int_eq(pthread_create(&h->getter, NULL, getter_main, h), 0);
    ck_assert(tu_wait_flag(&h->started, 10000));
}

static void let_go(struct held *h)
{
    atomic_store(&h->go, 1);
    ck_assert_int_eq(pthread_join(h->getter, NULL), 0);
}

static uint64_t timeouts(void)
{
    sf_stats st;
    ck_assert_int_eq(sf_stats_read(&st), 0);
    return st.timeouts;
}

static uint64_t runs(void)
{
    sf_stats st;
    ck_assert_int_eq(sf_stats_read(&st), 0);
    return st.run_inline + st.run_pool + st.run_stolen;
}

static void *ret_arg(void *arg) { return arg; }

/* ---- sf_wait_for -------------------------------------------------------- */

/* A task running elsewhere: ETIMEDOUT, not before the deadline; the task goes
 * on and a later wait gets its result. */
START_TEST(timed_wait_of_a_running_task_times_out)
{
    tu_env_threads(threads_of(_i));
    struct held h;
    hold(&h);
    void *r = (void *)1;
    double t0 = tu_now_ms();
    ck_assert_int_eq(sf_wait_for(h.f, &r, 0.05), ETIMEDOUT);
    double waited = tu_now_ms() - t0;
    ck_assert_msg(waited >= 50.0, "timed out after %.3f ms, before its 50 ms deadline", waited);
    ck_assert_ptr_eq(r, (void *)1); /* untouched */
    ck_assert_int_eq(sf_is_done(h.f), 0);
    ck_assert_uint_eq(timeouts(), 1);
    let_go(&h);
    ck_assert_int_eq(sf_wait_for(h.f, &r, INFINITY), 0);
    ck_assert_ptr_eq(r, (void *)(intptr_t)42);
    sf_release(h.f);
    sf_shutdown();
}
END_TEST

/* 0 polls: a running task gives ETIMEDOUT at once, a done one its result. */
START_TEST(zero_seconds_polls)
{
    tu_env_threads(threads_of(_i));
    struct held h;
    hold(&h);
    ck_assert_int_eq(sf_wait_for(h.f, NULL, 0), ETIMEDOUT);
    ck_assert_int_eq(sf_wait_for(h.f, NULL, 0.0), ETIMEDOUT);
    let_go(&h);
    void *r = NULL;
    ck_assert_int_eq(sf_wait_for(h.f, &r, 0), 0);
    ck_assert_ptr_eq(r, (void *)(intptr_t)42);
    ck_assert_uint_eq(timeouts(), 2);
    sf_release(h.f);
    sf_shutdown();
}
END_TEST

/* A task nobody started is run by the timed wait, whatever its deadline: at
 * SF_THREADS=1 by the caller, inline (nobody else can). */
START_TEST(not_started_own_task_is_run_by_the_wait)
{
    int n = threads_of(_i);
    tu_env_threads(n);
    sf_future *f = sf_do(ret_arg, (void *)7);
    sf_future *g = sf_do(ret_arg, (void *)8);
    ck_assert_ptr_nonnull(f);
    void *r = NULL;
    /* With workers, one may take f after the wait's submit and before its
     * claim: then the poll gives ETIMEDOUT, and a wait without deadline the
     * result. */
    int rc = sf_wait_for(f, &r, 0);
    if (n == 1)
        ck_assert_int_eq(rc, 0);
    else if (rc == ETIMEDOUT)
        rc = sf_wait_for(f, &r, INFINITY);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_eq(r, (void *)7);
    ck_assert_int_eq(sf_wait_for(g, &r, 60.0), 0);
    ck_assert_ptr_eq(r, (void *)8);
    sf_stats st;
    ck_assert_int_eq(sf_stats_read(&st), 0);
    if (n == 1) {
        ck_assert_uint_eq(st.run_inline, 2);
        ck_assert_uint_eq(st.timeouts, 0);
    }
    sf_release(f);
    sf_release(g);
    sf_shutdown();
}
END_TEST

static void *failing(void *arg)
{
    (void)arg;
    sf_fail(42, "failed on purpose");
    return NULL;
}

/* A failed task gives its code, a cancelled one ECANCELED. */
START_TEST(failed_and_cancelled_give_their_code)
{
    tu_env_threads(threads_of(_i));
    sf_future *f = sf_do(failing, NULL);
    void *r = (void *)1;
    ck_assert_int_eq(sf_wait_for(f, &r, 10.0), 42);
    ck_assert_ptr_eq(r, (void *)1);
    ck_assert_str_eq(sf_error_message(f), "failed on purpose");
    ck_assert_int_eq(sf_wait_for(f, &r, 0), 42); /* again, done: the same */
    sf_release(f);
    sf_future *c = sf_do(ret_arg, NULL);
    ck_assert_int_eq(sf_cancel(c), 0);
    ck_assert_int_eq(sf_wait_for(c, &r, INFINITY), ECANCELED);
    sf_release(c);
    sf_shutdown();
}
END_TEST

START_TEST(wait_for_einval)
{
    tu_env_threads(threads_of(_i));
    sf_future *f = sf_do(ret_arg, NULL);
    ck_assert_int_eq(sf_wait_for(NULL, NULL, 1.0), EINVAL);
    ck_assert_int_eq(sf_wait_for(f, NULL, -1.0), EINVAL);
    ck_assert_int_eq(sf_wait_for(f, NULL, -0.001), EINVAL);
    ck_assert_int_eq(sf_wait_for(f, NULL, NAN), EINVAL);
    ck_assert_int_eq(sf_is_done(f), 0); /* nothing ran */
    ck_assert_int_eq(sf_wait_for(f, NULL, 1e300), 0); /* huge: no deadline */
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* A task that waits, timed, for its own future: it encloses the wait. */
static sf_future *self_f;
static void *waits_for_itself(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)sf_wait_for(self_f, NULL, 0.5);
}

START_TEST(timed_wait_for_its_own_task_is_edeadlk)
{
    tu_env_threads(threads_of(_i));
    self_f = sf_do(waits_for_itself, NULL);
    void *r = NULL;
    ck_assert_int_eq(sf_wait_for(self_f, &r, INFINITY), 0);
    ck_assert_int_eq((int)(intptr_t)r, EDEADLK);
    sf_release(self_f);
    sf_shutdown();
}
END_TEST

/* Timed waits inside tasks, nested: a tree, each level waiting for its
 * children with a deadline far off, and with wait-any. */
static void *tree(void *arg)
{
    intptr_t n = (intptr_t)arg;
    if (n < 2)
        return (void *)n;
    sf_future *a = sf_do(tree, (void *)(n - 1)), *b = sf_do(tree, (void *)(n - 2));
    sf_future *const fs[2] = {a, b};
    int which = -1;
    ck_assert_int_eq(sf_wait_any(fs, 2, 60.0, &which), 0);
    ck_assert(which == 0 || which == 1);
    void *x = NULL, *y = NULL;
    ck_assert_int_eq(sf_wait_for(a, &x, 60.0), 0);
    ck_assert_int_eq(sf_wait_for(b, &y, INFINITY), 0);
    sf_release(a);
    sf_release(b);
    return (void *)((intptr_t)x + (intptr_t)y);
}

START_TEST(nested_timed_waits_in_tasks_complete)
{
    tu_env_threads(threads_of(_i));
    sf_future *f = sf_do(tree, (void *)(intptr_t)16);
    void *r = NULL;
    ck_assert_int_eq(sf_wait_for(f, &r, INFINITY), 0);
    ck_assert_int_eq((intptr_t)r, 987);
    sf_release(f);
    sf_stats st;
    ck_assert_int_eq(sf_stats_read(&st), 0);
    ck_assert_uint_eq(st.timeouts, 0);
    sf_shutdown();
}
END_TEST

/* f runs on a fiber of this thread parked beneath the timed wait (at
 * SF_THREADS=1: main's get of Z helps with f on a fiber, f's get of Y parks
 * it and helps with h on another, and h waits for f - the stats show the
 * two parks). f cannot go on while
 * Y runs: the wait times out; once Y is done the wait resumes f's fiber
 * (yielding) and gets f's result. With workers, f and h may run elsewhere:
 * the same outcomes. */
static struct held parked_y, parked_z;
static sf_future *parked_f;
static atomic_int parked_f_started;

static void *parked_f_fn(void *arg)
{
    (void)arg;
    atomic_store(&parked_f_started, 1);
    return (void *)((intptr_t)sf_get(parked_y.f) + 1);
}

static void *parked_h_fn(void *arg)
{
    (void)arg;
    /* With workers, h may start first: f must be running, or the timed wait
     * would run f itself, below it, and f waits for Y, which only h lets go. */
    ck_assert(tu_wait_flag(&parked_f_started, 10000));
    int rc1 = sf_wait_for(parked_f, NULL, 0.05);
    atomic_store(&parked_y.go, 1);
    void *r = NULL;
    int rc2 = sf_wait_for(parked_f, &r, INFINITY);
    atomic_store(&parked_z.go, 1);
    return (void *)(intptr_t)(rc1 * 1000 + rc2 * 100 + (intptr_t)r);
}

START_TEST(timed_wait_for_a_task_parked_beneath_it)
{
    tu_env_threads(threads_of(_i));
    atomic_store(&parked_f_started, 0);
    hold(&parked_y);
    hold(&parked_z);
    sf_future *h = sf_do(parked_h_fn, NULL);
    parked_f = sf_do(parked_f_fn, NULL); /* the newest: helped first */
    ck_assert_ptr_eq(sf_get(parked_z.f), (void *)(intptr_t)42);
    ck_assert_ptr_eq(sf_get(h), (void *)(intptr_t)(ETIMEDOUT * 1000 + 43));
    ck_assert_ptr_eq(sf_get(parked_f), (void *)(intptr_t)43);
    if (threads_of(_i) == 1) { /* the setup above: two parks, f beneath h */
        sf_stats st;
        ck_assert_int_eq(sf_stats_read(&st), 0);
        ck_assert_uint_ge(st.parks, 2);
        ck_assert_uint_eq(st.timeouts, 1);
    }
    ck_assert_int_eq(pthread_join(parked_y.getter, NULL), 0);
    ck_assert_int_eq(pthread_join(parked_z.getter, NULL), 0);
    sf_release(h);
    sf_release(parked_f);
    sf_release(parked_y.f);
    sf_release(parked_z.f);
    sf_shutdown();
}
END_TEST

/* ---- sf_batch_wait_for -------------------------------------------------- */

static atomic_int batch_ran;
static void *counted(void *arg)
{
    atomic_fetch_add(&batch_ran, 1);
    return arg;
}

static void *batch_waiter(void *arg)
{
    ck_assert_int_eq(sf_batch_wait(arg), 0);
    return NULL;
}

START_TEST(batch_wait_for_times_out_and_succeeds)
{
    int n = threads_of(_i);
    tu_env_threads(n);
    atomic_store(&batch_ran, 0);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    /* Deadline passed at once: no task starts in the wait. */
    sf_future *fs[8];
    for (int i = 0; i < 8; i++)
        ck_assert_ptr_nonnull(fs[i] = sf_batch_do(b, counted, NULL));
    errno = 0;
    int rc = sf_batch_wait_for(b, 0);
    if (n == 1) { /* no worker: nobody ran them */
        ck_assert_int_eq(rc, -1);
        ck_assert_int_eq(errno, ETIMEDOUT);
        ck_assert_int_eq(atomic_load(&batch_ran), 0);
    }
    ck_assert_int_eq(sf_batch_wait_for(b, 30.0), 0);
    ck_assert_int_eq(atomic_load(&batch_ran), 8);
    for (int i = 0; i < 8; i++)
        sf_release(fs[i]);
    /* A task running elsewhere: times out, not before the deadline. */
    struct held h;
    atomic_store(&h.started, 0);
    atomic_store(&h.go, 0);
    sf_future *t = sf_batch_do(b, held_task, &h);
    pthread_t p;
    ck_assert_int_eq(pthread_create(&p, NULL, batch_waiter, b), 0);
    ck_assert(tu_wait_flag(&h.started, 10000));
    double t0 = tu_now_ms();
    errno = 0;
    ck_assert_int_eq(sf_batch_wait_for(b, 0.05), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    double waited = tu_now_ms() - t0;
    ck_assert_msg(waited >= 50.0, "timed out after %.3f ms", waited);
    atomic_store(&h.go, 1);
    ck_assert_int_eq(sf_batch_wait_for(b, INFINITY), 0);
    ck_assert_int_eq(pthread_join(p, NULL), 0);
    ck_assert_int_eq(sf_is_done(t), 1);
    sf_release(t);
    errno = 0;
    ck_assert_int_eq(sf_batch_wait_for(NULL, 1.0), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_batch_wait_for(b, -1.0), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_batch_wait_for(b, NAN), -1);
    ck_assert_int_eq(errno, EINVAL);
    sf_batch_close(b);
    sf_shutdown();
}
END_TEST

/* ---- sf_wait_any -------------------------------------------------------- */

/* A done future: returns at once, running nothing (the pending one stays
 * pending: not even submitted). */
START_TEST(wait_any_of_a_done_future_runs_nothing)
{
    tu_env_threads(threads_of(_i));
    sf_future *d = sf_do(ret_arg, (void *)3);
    ck_assert_ptr_eq(sf_get(d), (void *)3);
    sf_future *p = sf_do(ret_arg, NULL);
    sf_future *const fs[3] = {p, d, p};
    uint64_t before = runs();
    int which = -1;
    ck_assert_int_eq(sf_wait_any(fs, 3, INFINITY, &which), 0);
    ck_assert_int_eq(which, 1);
    ck_assert_int_eq(sf_wait_any(fs, 3, 0, &which), 0);
    ck_assert_int_eq(which, 1);
    ck_assert_uint_eq(runs(), before);
    ck_assert_int_eq(sf_is_done(p), 0);
    sf_release(p);
    sf_release(d);
    sf_shutdown();
}
END_TEST

struct later {
    struct held *h;
    long ms;
};

static void *let_go_later(void *arg)
{
    struct later *l = arg;
    tu_sleep_ms(l->ms);
    atomic_store(&l->h->go, 1);
    return NULL;
}

/* Two tasks running elsewhere; the second completes, from another thread:
 * the wait wakes and names it. */
START_TEST(wait_any_wakes_on_a_completion)
{
    tu_env_threads(threads_of(_i));
    struct held a, b;
    hold(&a);
    hold(&b);
    struct later l = {&b, 30};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, let_go_later, &l), 0);
    sf_future *const fs[2] = {a.f, b.f};
    int which = -1;
    ck_assert_int_eq(sf_wait_any(fs, 2, 60.0, &which), 0);
    ck_assert_int_eq(which, 1);
    ck_assert_int_eq(sf_is_done(b.f), 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(pthread_join(b.getter, NULL), 0);
    let_go(&a);
    ck_assert_int_eq(sf_wait_any(fs, 2, 60.0, &which), 0);
    ck_assert_int_eq(which, 0); /* the lowest among those done */
    ck_assert_uint_eq(timeouts(), 0);
    sf_release(a.f);
    sf_release(b.f);
    sf_shutdown();
}
END_TEST

/* More futures not done than futex_waitv takes (128): the fallback's naps
 * on the first still see a completion of the last (entries may repeat). */
START_TEST(wait_any_of_many_futures_wakes)
{
    tu_env_threads(threads_of(_i));
    struct held a, b;
    hold(&a);
    hold(&b);
    enum { MANY = 200 };
    sf_future *fs[MANY];
    for (int i = 0; i < MANY - 1; i++)
        fs[i] = a.f;
    fs[MANY - 1] = b.f;
    struct later l = {&b, 20};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, let_go_later, &l), 0);
    int which = -1;
    ck_assert_int_eq(sf_wait_any((sf_future *const *)fs, MANY, 60.0, &which), 0);
    ck_assert_int_eq(which, MANY - 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(pthread_join(b.getter, NULL), 0);
    let_go(&a);
    sf_release(a.f);
    sf_release(b.f);
    sf_shutdown();
}
END_TEST

START_TEST(wait_any_times_out)
{
    tu_env_threads(threads_of(_i));
    struct held a, b;
    hold(&a);
    hold(&b);
    sf_future *const fs[2] = {a.f, b.f};
    int which = -7;
    double t0 = tu_now_ms();
    ck_assert_int_eq(sf_wait_any(fs, 2, 0.05, &which), ETIMEDOUT);
    double waited = tu_now_ms() - t0;
    ck_assert_msg(waited >= 50.0, "timed out after %.3f ms", waited);
    ck_assert_int_eq(which, -7);
    ck_assert_int_eq(sf_wait_any(fs, 2, 0, &which), ETIMEDOUT);
    ck_assert_uint_eq(timeouts(), 2);
    let_go(&a);
    let_go(&b);
    sf_release(a.f);
    sf_release(b.f);
    sf_shutdown();
}
END_TEST

/* Nothing done, one not started: the wait runs it (at one thread, inline). */
START_TEST(wait_any_runs_a_task_nobody_started)
{
    int n = threads_of(_i);
    tu_env_threads(n);
    struct held a;
    hold(&a);
    sf_future *p = sf_do(ret_arg, (void *)5);
    sf_future *const fs[2] = {a.f, p};
    sf_stats st0, st1;
    ck_assert_int_eq(sf_stats_read(&st0), 0);
    int which = -1;
    ck_assert_int_eq(sf_wait_any(fs, 2, INFINITY, &which), 0);
    ck_assert_int_eq(which, 1);
    ck_assert_ptr_eq(sf_get(p), (void *)5);
    ck_assert_int_eq(sf_stats_read(&st1), 0);
    if (n == 1)
        ck_assert_uint_eq(st1.run_inline, st0.run_inline + 1);
    let_go(&a);
    sf_release(a.f);
    sf_release(p);
    sf_shutdown();
}
END_TEST

START_TEST(wait_any_einval)
{
    tu_env_threads(threads_of(_i));
    sf_future *f = sf_do(ret_arg, NULL);
    sf_future *const fs[2] = {f, NULL};
    int which = -1;
    ck_assert_int_eq(sf_wait_any(NULL, 1, 1.0, &which), EINVAL);
    ck_assert_int_eq(sf_wait_any(fs, 0, 1.0, &which), EINVAL);
    ck_assert_int_eq(sf_wait_any(fs, -1, 1.0, &which), EINVAL);
    ck_assert_int_eq(sf_wait_any(fs, 2, 1.0, &which), EINVAL);
    ck_assert_int_eq(sf_wait_any(fs, 1, 1.0, NULL), EINVAL);
    ck_assert_int_eq(sf_wait_any(fs, 1, -1.0, &which), EINVAL);
    ck_assert_int_eq(sf_wait_any(fs, 1, NAN, &which), EINVAL);
    ck_assert_int_eq(which, -1);
    ck_assert_int_eq(sf_is_done(f), 0);
#ifndef SF_DEBUG /* there a use after release is reported and aborts (test_debug) */
    /* A released future (FREE: type-stable memory, nothing reused it). */
    sf_future *d = sf_do(ret_arg, NULL);
    ck_assert_ptr_null(sf_get(d));
    sf_release(d);
    sf_future *const gone[1] = {d};
    ck_assert_int_eq(sf_wait_any(gone, 1, 1.0, &which), EINVAL);
    ck_assert_int_eq(sf_wait_for(d, NULL, 1.0), EINVAL);
#endif
    ck_assert_int_eq(sf_wait_any(fs, 1, INFINITY, &which), 0);
    ck_assert_int_eq(which, 0);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* ---- the trace ---------------------------------------------------------- */

/* A program whose timed waits time out (sf_wait_for, sf_wait_any) and
 * succeed, traced; mode "1" (text) or "chrome". */
static char *traced_timeouts(const char *mode, int threads, char *path, size_t size)
{
    tu_env_threads(threads);
    tu_tmp_path(path, size, "wait-for-trace");
    setenv("SF_TRACE", mode, 1);
    setenv("SF_TRACE_FILE", path, 1);
    struct held h;
    hold(&h);
    ck_assert_int_eq(sf_wait_for(h.f, NULL, 0.01), ETIMEDOUT);
    sf_future *const fs[1] = {h.f};
    int which;
    ck_assert_int_eq(sf_wait_any(fs, 1, 0.01, &which), ETIMEDOUT);
    let_go(&h);
    void *r = NULL;
    ck_assert_int_eq(sf_wait_for(h.f, &r, INFINITY), 0);
    sf_future *g = sf_do(ret_arg, (void *)1);
    ck_assert_int_eq(sf_wait_for(g, &r, 60.0), 0);
    sf_release(g);
    sf_release(h.f);
    sf_shutdown();
    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    return text;
}

START_TEST(text_trace_shows_timeouts_and_passes_check)
{
    char path[256];
    char *text = traced_timeouts("1", threads_of(_i), path, sizeof path);
    ck_assert_uint_eq(tu_count_lines(text) > 0, 1);
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, "\tTimeout\t")) != NULL; p++)
        n++;
    ck_assert_uint_eq(n, 2);
    tu_sftrace_check(SFTRACE_BIN, "--counts", path);
    free(text);
    unlink(path);
}
END_TEST

START_TEST(chrome_trace_shows_timeouts)
{
    char path[256];
    char *text = traced_timeouts("chrome", threads_of(_i), path, sizeof path);
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, "\"name\":\"timeout\"")) != NULL; p++)
        n++;
    ck_assert_uint_eq(n, 2);
    free(text);
    unlink(path);
}
END_TEST

static Suite *wait_for_suite(void)
{
    Suite *s = suite_create("wait_for");
    TCase *tc = tcase_create("wait_for");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, timed_wait_of_a_running_task_times_out, 0, 3);
    tcase_add_loop_test(tc, zero_seconds_polls, 0, 3);
    tcase_add_loop_test(tc, not_started_own_task_is_run_by_the_wait, 0, 3);
    tcase_add_loop_test(tc, failed_and_cancelled_give_their_code, 0, 3);
    tcase_add_loop_test(tc, wait_for_einval, 0, 3);
    tcase_add_loop_test(tc, timed_wait_for_its_own_task_is_edeadlk, 0, 3);
    tcase_add_loop_test(tc, nested_timed_waits_in_tasks_complete, 0, 3);
    tcase_add_loop_test(tc, timed_wait_for_a_task_parked_beneath_it, 0, 3);
    suite_add_tcase(s, tc);
    TCase *tb = tcase_create("batch_wait_for");
    tcase_set_timeout(tb, 60);
    tcase_add_loop_test(tb, batch_wait_for_times_out_and_succeeds, 0, 3);
    suite_add_tcase(s, tb);
    TCase *ta = tcase_create("wait_any");
    tcase_set_timeout(ta, 60);
    tcase_add_loop_test(ta, wait_any_of_a_done_future_runs_nothing, 0, 3);
    tcase_add_loop_test(ta, wait_any_wakes_on_a_completion, 0, 3);
    tcase_add_loop_test(ta, wait_any_of_many_futures_wakes, 0, 3);
    tcase_add_loop_test(ta, wait_any_times_out, 0, 3);
    tcase_add_loop_test(ta, wait_any_runs_a_task_nobody_started, 0, 3);
    tcase_add_loop_test(ta, wait_any_einval, 0, 3);
    suite_add_tcase(s, ta);
    TCase *tt = tcase_create("trace");
    tcase_set_timeout(tt, 60);
    tcase_add_loop_test(tt, text_trace_shows_timeouts_and_passes_check, 0, 3);
    tcase_add_loop_test(tt, chrome_trace_shows_timeouts, 0, 3);
    suite_add_tcase(s, tt);
    return s;
}

TU_MAIN(wait_for_suite)
