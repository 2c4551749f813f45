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

/* A task nobody started is never run by a wait with a deadline: the pool
 * takes it (a worker, at SF_THREADS 2 and 3), or, with no pool, it stays
 * pending and the wait times out; a wait with no deadline runs it here. */
START_TEST(not_started_own_task_is_left_to_the_pool)
{
    int n = threads_of(_i);
    tu_env_threads(n);
    sf_future *f = sf_do(ret_arg, (void *)7);
    sf_future *g = sf_do(ret_arg, (void *)8);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(g);
    void *r = NULL;
    sf_stats st;
    if (n == 1) {
        ck_assert_int_eq(sf_wait_for(f, &r, 0), ETIMEDOUT); /* a poll: nobody runs it */
        ck_assert_ptr_null(r);
        double t0 = tu_now_ms();
        ck_assert_int_eq(sf_wait_for(g, &r, 0.05), ETIMEDOUT);
        ck_assert(tu_now_ms() - t0 >= 50.0);
        ck_assert_int_eq(sf_is_done(f), 0);
        ck_assert_int_eq(sf_is_done(g), 0);
        ck_assert_int_eq(sf_stats_read(&st), 0);
        ck_assert_uint_eq(st.run_inline + st.run_pool + st.run_stolen, 0);
        ck_assert_uint_eq(st.timeouts, 2);
        ck_assert_int_eq(sf_wait_for(f, &r, INFINITY), 0); /* runs it here */
        ck_assert_ptr_eq(r, (void *)7);
        ck_assert_int_eq(sf_wait_for(g, &r, INFINITY), 0);
        ck_assert_ptr_eq(r, (void *)8);
        ck_assert_int_eq(sf_stats_read(&st), 0);
        ck_assert_uint_eq(st.run_inline, 2);
    } else {
        ck_assert_int_eq(sf_wait_for(f, &r, 60.0), 0);
        ck_assert_ptr_eq(r, (void *)7);
        ck_assert_int_eq(sf_wait_for(g, &r, 60.0), 0);
        ck_assert_ptr_eq(r, (void *)8);
        ck_assert_int_eq(sf_stats_read(&st), 0);
        ck_assert_uint_eq(st.run_inline, 0); /* both by workers */
        ck_assert_uint_eq(st.run_pool + st.run_stolen, 2);
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
    /* At SF_THREADS=1 only a wait without deadline runs it. */
    ck_assert_int_eq(sf_wait_for(f, &r, threads_of(_i) == 1 ? INFINITY : 10.0), 42);
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
    /* No deadline: these may run the children here (at SF_THREADS=1 only
     * they can); the timed waits after them find them done. */
    ck_assert_int_eq(sf_wait_any(fs, 2, INFINITY, &which), 0);
    ck_assert(which == 0 || which == 1);
    ck_assert_int_eq(sf_wait_all(fs, 2, INFINITY), 0);
    void *x = NULL, *y = NULL;
    ck_assert_int_eq(sf_wait_for(a, &x, 60.0), 0);
    ck_assert_int_eq(sf_wait_for(b, &y, 0), 0);
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
 * SF_THREADS=1: the root task's get of Z helps with f on a fiber, f's get
 * of Y parks it and helps with h on another, and h waits for f - the stats
 * show the two parks). f cannot go on while Y runs: the wait times out;
 * once Y is done a wait without deadline resumes f's fiber and gets f's
 * result. With workers, f and h may run elsewhere: the same outcomes. The
 * shape is a root task's: plain code's get helps only with its own task's
 * descendants. */
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
    /* With workers, h may start first: f must be running, or it would wait
     * for Y, which only h lets go. */
    ck_assert(tu_wait_flag(&parked_f_started, 10000));
    int rc1 = sf_wait_for(parked_f, NULL, 0.05);
    atomic_store(&parked_y.go, 1);
    void *r = NULL;
    int rc2 = sf_wait_for(parked_f, &r, INFINITY);
    atomic_store(&parked_z.go, 1);
    return (void *)(intptr_t)(rc1 * 1000 + rc2 * 100 + (intptr_t)r);
}

static void *parked_root(void *arg)
{
    (void)arg;
    sf_future *h = sf_do(parked_h_fn, NULL);
    parked_f = sf_do(parked_f_fn, NULL); /* the newest: helped first */
    ck_assert_ptr_eq(sf_get(parked_z.f), (void *)(intptr_t)42);
    ck_assert_ptr_eq(sf_get(h), (void *)(intptr_t)(ETIMEDOUT * 1000 + 43));
    ck_assert_ptr_eq(sf_get(parked_f), (void *)(intptr_t)43);
    sf_release(h);
    sf_release(parked_f);
    return (void *)1;
}

START_TEST(timed_wait_for_a_task_parked_beneath_it)
{
    tu_env_threads(threads_of(_i));
    atomic_store(&parked_f_started, 0);
    hold(&parked_y);
    hold(&parked_z);
    sf_future *root = sf_do(parked_root, NULL);
    ck_assert_ptr_eq(sf_get(root), (void *)1);
    sf_release(root);
    if (threads_of(_i) == 1) { /* the setup above: two parks, f beneath h */
        sf_stats st;
        ck_assert_int_eq(sf_stats_read(&st), 0);
        ck_assert_uint_ge(st.parks, 2);
        ck_assert_uint_eq(st.timeouts, 1);
    }
    ck_assert_int_eq(pthread_join(parked_y.getter, NULL), 0);
    ck_assert_int_eq(pthread_join(parked_z.getter, NULL), 0);
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
    /* With a deadline only the pool runs them; at SF_THREADS=1 only a wait
     * without one. */
    ck_assert_int_eq(sf_batch_wait_for(b, n == 1 ? INFINITY : 30.0), 0);
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

/* ---- timed waits never compute ----------------------------------------- */

/* The bound a timed wait keeps past its deadline (sf.h: one wake-up): 50 ms,
 * more under the sanitizers, which slow every step. */
#define LATE_MS (TU_SANITIZED ? 250.0 : 50.0)

static atomic_int spin_go;
static pthread_t ran_on;
static atomic_int ran_here;

static void *computes_2s(void *arg)
{
    if (pthread_equal(pthread_self(), ran_on))
        atomic_store(&ran_here, 1);
    double t0 = tu_now_ms();
    while (tu_now_ms() - t0 < 2000.0 && !atomic_load(&spin_go))
        tu_spin_us(100);
    return arg;
}

static void *gets_a_promise(void *arg)
{
    if (pthread_equal(pthread_self(), ran_on))
        atomic_store(&ran_here, 1);
    return sf_get(arg);
}

/* Each kind of timed wait, 0.2 s, of a task that computes for 2 s and of
 * one that waits for a promise nobody sets: ETIMEDOUT by the deadline plus
 * LATE_MS, neither task run on this thread - at SF_THREADS=1 neither runs
 * at all - and the shutdown after them returns. _i: SF_THREADS 1, 2, 4. */
START_TEST(timed_waits_never_compute)
{
    static const int threads[] = {1, 2, 4};
    tu_env_threads(threads[_i]);
    ran_on = pthread_self();
    atomic_store(&ran_here, 0);
    atomic_store(&spin_go, 0);
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    sf_future *c = sf_do(computes_2s, (void *)1);
    sf_future *w = sf_do(gets_a_promise, p);
    sf_future *const both[2] = {c, w};
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    sf_future *bc = sf_batch_do(b, computes_2s, (void *)2);
    for (int kind = 0; kind < 5; kind++) {
        int which = -1;
        double t0 = tu_now_ms();
        int rc = kind == 0   ? sf_wait_for(c, NULL, 0.2)
                 : kind == 1 ? sf_wait_for(w, NULL, 0.2)
                 : kind == 2 ? sf_wait_any(both, 2, 0.2, &which)
                 : kind == 3 ? sf_wait_all(both, 2, 0.2)
                             : (sf_batch_wait_for(b, 0.2) == 0 ? 0 : errno);
        double waited = tu_now_ms() - t0;
        ck_assert_msg(rc == ETIMEDOUT, "wait kind %d gave %d", kind, rc);
        ck_assert_msg(waited >= 200.0 && waited <= 200.0 + LATE_MS,
                      "wait kind %d at SF_THREADS=%d timed out after %.1f ms (0.2 s deadline)",
                      kind, threads[_i], waited);
        ck_assert_int_eq(which, -1);
    }
    ck_assert_int_eq(atomic_load(&ran_here), 0);
    ck_assert_int_eq(sf_is_done(c), 0);
    ck_assert_int_eq(sf_is_done(w), 0);
    sf_stats st;
    ck_assert_int_eq(sf_stats_read(&st), 0);
    ck_assert_uint_eq(st.timeouts, 5);
    if (threads[_i] == 1)
        ck_assert_uint_eq(st.run_inline + st.run_pool + st.run_stolen, 0);
    atomic_store(&spin_go, 1);
    sf_release(c);
    sf_release(w);
    sf_release(bc);
    sf_batch_close(b);
    /* p is still held: the shutdown cancels it (w's get ends), then frees
     * it with the runtime. */
    sf_shutdown();
}
END_TEST

/* sf_wait_all: 0 once all are done, whatever their outcome (left to the
 * caller); with no deadline it runs them here if nobody else does. */
START_TEST(wait_all_waits_for_every_one)
{
    tu_env_threads(threads_of(_i));
    sf_future *fs[4];
    fs[0] = sf_do(ret_arg, (void *)1);
    fs[1] = sf_do(failing, NULL);
    fs[2] = sf_do(ret_arg, (void *)3);
    fs[3] = sf_do(ret_arg, (void *)4);
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(fs[i]);
    ck_assert_int_eq(sf_wait_all(fs, 4, INFINITY), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(sf_is_done(fs[i]), 1);
    ck_assert_int_eq(sf_wait_all(fs, 4, 0), 0); /* all done: a poll succeeds */
    void *r = NULL;
    ck_assert_int_eq(sf_wait(fs[1], &r), 42); /* the failure is still the caller's */
    ck_assert_int_eq(sf_wait(fs[3], &r), 0);
    ck_assert_ptr_eq(r, (void *)4);
    ck_assert_int_eq(sf_wait_all(fs, 0, 1.0), 0);
    ck_assert_int_eq(sf_wait_all(NULL, 0, 1.0), 0);
    /* A task held elsewhere: ETIMEDOUT, not before the deadline. */
    struct held h;
    hold(&h);
    sf_future *two[2] = {fs[0], h.f};
    double t0 = tu_now_ms();
    ck_assert_int_eq(sf_wait_all(two, 2, 0.05), ETIMEDOUT);
    ck_assert(tu_now_ms() - t0 >= 50.0);
    let_go(&h);
    ck_assert_int_eq(sf_wait_all(two, 2, 60.0), 0);
    ck_assert_uint_eq(timeouts(), 1);
    sf_release(h.f);
    for (int i = 0; i < 4; i++)
        sf_release(fs[i]);
    sf_shutdown();
}
END_TEST

START_TEST(wait_all_einval)
{
    tu_env_threads(threads_of(_i));
    sf_future *f = sf_do(ret_arg, NULL);
    sf_future *const one[1] = {f};
    sf_future *const with_null[2] = {f, NULL};
    ck_assert_int_eq(sf_wait_all(NULL, 1, 1.0), EINVAL);
    ck_assert_int_eq(sf_wait_all(one, -1, 1.0), EINVAL);
    ck_assert_int_eq(sf_wait_all(with_null, 2, 1.0), EINVAL);
    ck_assert_int_eq(sf_wait_all(one, 1, -1.0), EINVAL);
    ck_assert_int_eq(sf_wait_all(one, 1, NAN), EINVAL);
    ck_assert_int_eq(sf_is_done(f), 0); /* nothing ran */
#ifndef SF_DEBUG /* there a use after release is reported and aborts (test_debug) */
    sf_future *d = sf_do(ret_arg, NULL);
    ck_assert_ptr_null(sf_get(d));
    sf_release(d);
    sf_future *const gone[1] = {d};
    ck_assert_int_eq(sf_wait_all(gone, 1, 1.0), EINVAL);
#endif
    ck_assert_int_eq(sf_wait_all(one, 1, INFINITY), 0);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* ---- waits on fibers of one thread never livelock ----------------------- */

/*
 * On one thread: A gets promise P1 and parks; its thread helps with C (the
 * newest), which gets promise P2 and parks; C's thread helps with B, which
 * waits for A. Then P2 is set, then P1 (0.1 s in). B's wait resumes C (P2
 * is done), and C waits for A: two waits on fibers above A's, both for A.
 * They must not pass the thread back and forth while A's fiber, whose
 * promise is set, waits: A goes on first, both waits return A's value, by
 * P1 plus a wake-up. The kinds: sf_wait_for with no deadline and with 1 s,
 * sf_wait_any with 1 s, sf_batch_wait_for with 1 s (A a batch task). The
 * shape runs in a root task, whose thread helps with its descendants.
 * _i: SF_THREADS 1, 2 or 4 (_i % 3), then the kind.
 */
enum { LL_FOR_INF, LL_FOR_1S, LL_ANY_1S, LL_BATCH_1S, LL_KINDS };
static int ll_kind;
static sf_future *ll_p1, *ll_p2, *ll_a;
static sf_batch *ll_batch;
static double ll_t0;

/* How B and C wait for A: 0 and A's value, or the error. */
static int ll_wait_a(void **r)
{
    int which = -1, rc;
    switch (ll_kind) {
    case LL_FOR_INF: return sf_wait_for(ll_a, r, INFINITY);
    case LL_FOR_1S: return sf_wait_for(ll_a, r, 1.0);
    case LL_ANY_1S:
        rc = sf_wait_any(&ll_a, 1, 1.0, &which);
        return rc != 0 ? rc : sf_wait(ll_a, r);
    default:
        rc = sf_batch_wait_for(ll_batch, 1.0) == 0 ? 0 : errno;
        return rc != 0 ? rc : sf_wait(ll_a, r);
    }
}

static void *ll_a_fn(void *arg)
{
    (void)arg;
    return (void *)((intptr_t)sf_get(ll_p1) + 1);
}

static void *ll_b_fn(void *arg)
{
    (void)arg;
    void *r = NULL;
    int rc = ll_wait_a(&r);
    return rc == 0 ? r : (void *)(intptr_t)-rc;
}

static void *ll_c_fn(void *arg)
{
    (void)arg;
    if (sf_get(ll_p2) != (void *)2)
        return (void *)-1L;
    void *r = NULL;
    int rc = ll_wait_a(&r);
    return rc == 0 ? r : (void *)(intptr_t)-rc;
}

static void *ll_setter(void *arg)
{
    (void)arg;
    tu_sleep_ms(50);
    ck_assert_int_eq(sf_promise_set(ll_p2, (void *)2), 0);
    tu_sleep_ms(50);
    ck_assert_int_eq(sf_promise_set(ll_p1, (void *)10), 0);
    return NULL;
}

static void *ll_root(void *arg)
{
    (void)arg;
    ll_a = ll_kind == LL_BATCH_1S ? sf_batch_do(ll_batch, ll_a_fn, NULL) : sf_do(ll_a_fn, NULL);
    sf_future *b = sf_do(ll_b_fn, NULL);
    sf_future *c = sf_do(ll_c_fn, NULL);
    void *av = sf_get(ll_a);
    void *bv = sf_get(b), *cv = sf_get(c);
    sf_release(b);
    sf_release(c);
    return (void *)(intptr_t)(av == (void *)11 && bv == (void *)11 && cv == (void *)11
                                  ? 1
                                  : -((intptr_t)bv * 1000 + (intptr_t)cv));
}

START_TEST(waits_on_fibers_of_one_thread_end)
{
    static const int ll_threads[] = {1, 2, 4};
    tu_env_threads(ll_threads[_i % 3]);
    ll_kind = _i / 3;
    ll_p1 = sf_promise();
    ll_p2 = sf_promise();
    ll_batch = sf_batch_new();
    ck_assert_ptr_nonnull(ll_batch);
    pthread_t t;
    ll_t0 = tu_now_ms();
    ck_assert_int_eq(pthread_create(&t, NULL, ll_setter, NULL), 0);
    sf_future *root = sf_do(ll_root, NULL);
    void *v = sf_get(root);
    double took = tu_now_ms() - ll_t0;
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(v == (void *)1, "kind %d, SF_THREADS=%d: B and C gave %ld", ll_kind,
                  ll_threads[_i % 3], (long)(intptr_t)v);
    ck_assert_msg(took < 100.0 + 500.0, "kind %d: took %.1f ms, P1 was set at 100 ms", ll_kind,
                  took);
    sf_release(root);
    sf_release(ll_a);
    sf_release(ll_p1);
    sf_release(ll_p2);
    sf_batch_close(ll_batch);
    sf_shutdown();
}
END_TEST

/* ---- the trace ---------------------------------------------------------- */

/* A program whose timed waits time out (sf_wait_for, sf_wait_any,
 * sf_wait_all) and succeed, traced; mode "1" (text) or "chrome". */
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
    /* Long enough to sleep: its sleeps belong to a get it traced. */
    ck_assert_int_eq(sf_wait_all(fs, 1, 0.05), ETIMEDOUT);
    let_go(&h);
    void *r = NULL;
    ck_assert_int_eq(sf_wait_for(h.f, &r, INFINITY), 0);
    sf_future *g = sf_do(ret_arg, (void *)1);
    ck_assert_int_eq(sf_wait_for(g, &r, threads == 1 ? INFINITY : 60.0), 0);
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
    ck_assert_uint_eq(n, 3);
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
    ck_assert_uint_eq(n, 3);
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
    tcase_add_loop_test(tc, not_started_own_task_is_left_to_the_pool, 0, 3);
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
    TCase *tn = tcase_create("never_compute");
    tcase_set_timeout(tn, 60);
    tcase_add_loop_test(tn, timed_waits_never_compute, 0, 3);
    tcase_add_loop_test(tn, wait_all_waits_for_every_one, 0, 3);
    tcase_add_loop_test(tn, wait_all_einval, 0, 3);
    tcase_add_loop_test(tn, waits_on_fibers_of_one_thread_end, 0, 3 * LL_KINDS);
    suite_add_tcase(s, tn);
    TCase *tt = tcase_create("trace");
    tcase_set_timeout(tt, 60);
    tcase_add_loop_test(tt, text_trace_shows_timeouts_and_passes_check, 0, 3);
    tcase_add_loop_test(tt, chrome_trace_shows_timeouts, 0, 3);
    suite_add_tcase(s, tt);
    return s;
}

TU_MAIN(wait_for_suite)
