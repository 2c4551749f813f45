/*
 * test_after.c - continuations (sf_do_after): chains and diamonds of 10^6,
 * each run exactly once and never before its deps; continuations of
 * promises set by plain threads; waiting ones that use no CPU and leave the
 * pool free; cancellation, lineage, failures, released deps, and the race
 * with a dep that runs in its own get. Each case runs at SF_THREADS 1, 2
 * and 4 (the loop index picks).
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef SFTRACE_BIN
#error "SFTRACE_BIN, the path of the built tools/sftrace/sftrace, comes from tests/local.mk"
#endif

static const int threads_of[] = {1, 2, 4};

static void start(int i)
{
    tu_env_threads(threads_of[i]);
    ck_assert_int_eq(sf_init(NULL), 0);
}

/* Sanitizers are slower: fewer, still many. */
static long scale(long n) { return TU_SANITIZED ? n / 20 : n; }

static long max_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Chain: link k checks that link k-1 ran just before it. */
static atomic_long chain_next;

static void *chain_link(void *arg)
{
    long k = (long)(intptr_t)arg;
    long was = atomic_fetch_add_explicit(&chain_next, 1, memory_order_relaxed);
    ck_assert_int_eq(was, k);
    return (void *)(intptr_t)(k + 1);
}

/* One round: n links after an unset promise, none started early; set,
 * the last returns n. */
static void chain_round(long n)
{
    atomic_store(&chain_next, 0);
    sf_future *head = sf_promise();
    ck_assert_ptr_nonnull(head);
    sf_future *prev = head;
    for (long k = 0; k < n; k++) {
        sf_future *c = sf_do_after(&prev, 1, chain_link, (void *)(intptr_t)k);
        ck_assert_ptr_nonnull(c);
        if (prev != head)
            sf_release(prev); /* each link holds its dep itself */
        prev = c;
    }
    tu_sleep_ms(10);
    ck_assert_int_eq(atomic_load(&chain_next), 0);
    ck_assert_int_eq(sf_promise_set(head, NULL), 0);
    ck_assert_ptr_eq(sf_get(prev), (void *)(intptr_t)n);
    ck_assert_int_eq(atomic_load(&chain_next), n);
    sf_release(prev);
    sf_release(head);
}

START_TEST(chain_of_a_million)
{
    start(_i);
    long n = scale(1000000) / 2;
    chain_round(n);
    long rss1 = max_rss_kib();
    /* What a round held comes back: a second round needs no more. */
    chain_round(n);
    long grew = max_rss_kib() - rss1;
    /* A sanitizer's shadow memory grows with what it has seen: no measure. */
    if (!TU_SANITIZED)
        ck_assert_msg(grew < rss1 / 5 + 16 * 1024,
                      "max RSS grew %ld KiB in the second round (peak %ld KiB)", grew, rss1);
    sf_shutdown();
}
END_TEST

/* Diamonds: top -> (left, right) -> bottom, bottom the next top. Each
 * records its run; bottom checks both sides ran, each side its top. */
struct diamond {
    atomic_int runs[4]; /* top, left, right, bottom */
};
static struct diamond *dm;
static atomic_long diamonds_done;

static void *dm_top(void *arg)
{
    long k = (long)(intptr_t)arg;
    if (k > 0)
        ck_assert_int_eq(atomic_load(&dm[k - 1].runs[3]), 1);
    ck_assert_int_eq(atomic_fetch_add(&dm[k].runs[0], 1), 0);
    return NULL;
}
static void *dm_side(void *arg)
{
    long v = (long)(intptr_t)arg, k = v / 2;
    ck_assert_int_eq(atomic_load(&dm[k].runs[0]), 1);
    ck_assert_int_eq(atomic_fetch_add(&dm[k].runs[1 + v % 2], 1), 0);
    return NULL;
}
static void *dm_bottom(void *arg)
{
    long k = (long)(intptr_t)arg;
    ck_assert_int_eq(atomic_load(&dm[k].runs[1]), 1);
    ck_assert_int_eq(atomic_load(&dm[k].runs[2]), 1);
    ck_assert_int_eq(atomic_fetch_add(&dm[k].runs[3], 1), 0);
    atomic_fetch_add(&diamonds_done, 1);
    return NULL;
}

START_TEST(diamonds_of_a_million)
{
    start(_i);
    long n = scale(1000000) / 4; /* four continuations a diamond */
    dm = calloc((size_t)n, sizeof *dm);
    ck_assert_ptr_nonnull(dm);
    atomic_store(&diamonds_done, 0);
    sf_future *start_p = sf_promise();
    sf_future *prev = start_p;
    for (long k = 0; k < n; k++) {
        sf_future *top = sf_do_after(&prev, 1, dm_top, (void *)(intptr_t)k);
        sf_future *sides[2] = {sf_do_after(&top, 1, dm_side, (void *)(intptr_t)(2 * k)),
                               sf_do_after(&top, 1, dm_side, (void *)(intptr_t)(2 * k + 1))};
        sf_future *bottom = sf_do_after(sides, 2, dm_bottom, (void *)(intptr_t)k);
        ck_assert(top && sides[0] && sides[1] && bottom);
        sf_release(top);
        sf_release(sides[0]);
        sf_release(sides[1]);
        if (prev != start_p)
            sf_release(prev);
        prev = bottom;
        if (k == 1000) {
            ck_assert_int_eq(atomic_load(&diamonds_done), 0); /* none started early */
            ck_assert_int_eq(sf_promise_set(start_p, NULL), 0);
        }
    }
    if (n <= 1000)
        ck_assert_int_eq(sf_promise_set(start_p, NULL), 0);
    ck_assert_int_eq(sf_wait(prev, NULL), 0);
    ck_assert_int_eq(atomic_load(&diamonds_done), n);
    for (long k = 0; k < n; k++)
        for (int j = 0; j < 4; j++)
            ck_assert_int_eq(atomic_load(&dm[k].runs[j]), 1);
    sf_release(prev);
    sf_release(start_p);
    sf_shutdown();
    free(dm);
}
END_TEST

/* A plain thread, which never calls libsf otherwise, sets promises. */
struct feeder {
    sf_future **ps;
    int n;
    long delay_ms;
    pthread_t t;
};
static void *feeder_main(void *arg)
{
    struct feeder *f = arg;
    tu_sleep_ms(f->delay_ms);
    for (int i = 0; i < f->n; i++)
        ck_assert_int_eq(sf_promise_set(f->ps[i], (void *)(intptr_t)(i + 1)), 0);
    return NULL;
}

struct sum_arg {
    sf_future **deps;
    int n;
};
/* Gets every dep (done: returns at once) and sums their values. */
static void *sum_deps(void *arg)
{
    struct sum_arg *a = arg;
    long s = 0;
    for (int i = 0; i < a->n; i++) {
        ck_assert_int_eq(sf_is_done(a->deps[i]), 1);
        s += (long)(intptr_t)sf_get(a->deps[i]);
    }
    return (void *)(intptr_t)s;
}

START_TEST(promises_set_by_a_plain_thread)
{
    start(_i);
    enum { N = 64 };
    sf_future *ps[N];
    for (int i = 0; i < N; i++)
        ps[i] = sf_promise();
    struct sum_arg a = {ps, N};
    sf_future *c = sf_do_after(ps, N, sum_deps, &a);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sf_is_done(c), 0);
    struct feeder f = {ps, N, 30, 0};
    ck_assert_int_eq(pthread_create(&f.t, NULL, feeder_main, &f), 0);
    ck_assert_ptr_eq(sf_get(c), (void *)(intptr_t)(N * (N + 1) / 2));
    ck_assert_int_eq(pthread_join(f.t, NULL), 0);
    sf_release(c);
    for (int i = 0; i < N; i++)
        sf_release(ps[i]);
    sf_shutdown();
}
END_TEST

/* With workers, it runs without anyone's get. */
static atomic_int ran_alone;
static void *note_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran_alone, 1);
    return NULL;
}

START_TEST(runs_on_the_pool_without_a_get)
{
    start(_i);
    atomic_store(&ran_alone, 0);
    sf_future *p = sf_promise();
    sf_future *c = sf_do_after(&p, 1, note_run, NULL);
    sf_future *z = sf_do_after(NULL, 0, note_run, NULL); /* n 0: runnable at once */
    ck_assert(c != NULL && z != NULL);
    struct feeder f = {&p, 1, 10, 0};
    ck_assert_int_eq(pthread_create(&f.t, NULL, feeder_main, &f), 0);
    ck_assert_int_eq(pthread_join(f.t, NULL), 0);
    if (threads_of[_i] > 1) {
        ck_assert(tu_wait_count(&ran_alone, 2, 10000));
        ck_assert_int_eq(sf_is_done(c), 1);
        ck_assert_int_eq(sf_is_done(z), 1);
    }
    ck_assert_int_eq(sf_wait(c, NULL), 0);
    ck_assert_int_eq(sf_wait(z, NULL), 0);
    ck_assert_int_eq(atomic_load(&ran_alone), 2);
    sf_release(c);
    sf_release(z);
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* 1,000 continuations on an unset promise: no CPU, and the pool runs other
 * work meanwhile; set, each runs once. */
static atomic_int thousand_runs;
static void *count_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&thousand_runs, 1);
    return NULL;
}
static void *leaf(void *arg) { return (void *)((intptr_t)arg + 1); }
static void *fan(void *arg)
{
    (void)arg;
    sf_future *fs[64];
    for (int i = 0; i < 64; i++)
        fs[i] = sf_do(leaf, (void *)(intptr_t)i);
    long s = 0;
    for (int i = 0; i < 64; i++) {
        s += (long)(intptr_t)sf_get(fs[i]);
        sf_release(fs[i]);
    }
    return (void *)(intptr_t)s;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

START_TEST(thousand_waiting_use_no_cpu)
{
    start(_i);
    atomic_store(&thousand_runs, 0);
    sf_future *p = sf_promise();
    sf_future *cs[1000];
    for (int i = 0; i < 1000; i++) {
        cs[i] = sf_do_after(&p, 1, count_run, NULL);
        ck_assert_ptr_nonnull(cs[i]);
    }
    tu_sleep_ms(50); /* workers settle into sleep */
    double c0 = cpu_ms(), t0 = tu_now_ms();
    tu_sleep_ms(300);
    double used = cpu_ms() - c0, wall = tu_now_ms() - t0;
    /* Idle workers nap and rescan every 100 ms: a few ms at most. */
    ck_assert_msg(used < wall * 0.25, "%.1f ms of CPU in %.1f ms while 1,000 wait", used, wall);
    ck_assert_int_eq(atomic_load(&thousand_runs), 0);
    /* The pool is free: fork-join work runs to the end meanwhile. */
    for (int r = 0; r < 20; r++) {
        sf_future *f = sf_do(fan, NULL);
        ck_assert_ptr_eq(sf_get(f), (void *)(intptr_t)(64 * 65 / 2));
        sf_release(f);
    }
    ck_assert_int_eq(atomic_load(&thousand_runs), 0);
    struct feeder f = {&p, 1, 0, 0};
    ck_assert_int_eq(pthread_create(&f.t, NULL, feeder_main, &f), 0);
    ck_assert_int_eq(pthread_join(f.t, NULL), 0);
    ck_assert_int_eq(sf_wait_all(cs, 1000, 60.0), 0);
    ck_assert_int_eq(atomic_load(&thousand_runs), 1000);
    for (int i = 0; i < 1000; i++)
        sf_release(cs[i]);
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* Cancelled before it starts: it never runs, its getters see ECANCELED at
 * once, and continuations of it run (a cancelled dep is done). */
static atomic_int never;
static void *must_not_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&never, 1);
    return NULL;
}
static void *dep_cancelled(void *arg)
{
    sf_future *d = arg;
    errno = 0;
    ck_assert_ptr_null(sf_get(d));
    ck_assert_int_eq(errno, ECANCELED);
    return (void *)7;
}

START_TEST(cancel_before_start)
{
    start(_i);
    atomic_store(&never, 0);
    sf_future *p = sf_promise();
    sf_future *c = sf_do_after(&p, 1, must_not_run, NULL);
    sf_future *after_c = sf_do_after(&c, 1, dep_cancelled, c);
    ck_assert_int_eq(sf_cancel(c), 0);
    errno = 0;
    ck_assert_ptr_null(sf_get(c));
    ck_assert_int_eq(errno, ECANCELED);
    ck_assert_ptr_eq(sf_get(after_c), (void *)7);
    ck_assert_int_eq(sf_cancel(c), 1); /* done already */
    ck_assert_int_eq(sf_promise_set(p, NULL), 0);
    /* Its record is dropped once its dep is done; it still never runs. */
    sf_future *again = sf_do_after(&p, 1, leaf, (void *)1);
    ck_assert_ptr_eq(sf_get(again), (void *)2);
    ck_assert_int_eq(atomic_load(&never), 0);
    sf_release(again);
    sf_release(after_c);
    sf_release(c);
    sf_release(p);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&never), 0);
}
END_TEST

/* Its maker's cancellation reaches it: made by a task that is cancelled
 * while it waits, it completes ECANCELED unrun. */
static sf_future *lineage_p, *lineage_c, *lineage_block;
static atomic_int lineage_made;
static void *maker_task(void *arg)
{
    (void)arg;
    lineage_c = sf_do_after(&lineage_p, 1, must_not_run, NULL);
    atomic_store(&lineage_made, 1);
    (void)sf_get(lineage_block); /* stays running until cancelled */
    return NULL;
}

START_TEST(maker_cancel_reaches_it)
{
    start(_i);
    atomic_store(&never, 0);
    atomic_store(&lineage_made, 0);
    lineage_p = sf_promise();
    lineage_block = sf_promise();
    /* A continuation of nothing: it runs on the pool without a get. */
    sf_future *m = sf_do_after(NULL, 0, maker_task, NULL);
    /* Run the maker on a pool thread, or here if there is none. */
    if (threads_of[_i] == 1) {
        /* No worker: set the block from a plain thread after the cancel. */
        struct feeder f = {&lineage_block, 1, 200, 0};
        ck_assert_int_eq(pthread_create(&f.t, NULL, feeder_main, &f), 0);
        struct feeder g = {&lineage_p, 1, 100, 0};
        ck_assert_int_eq(pthread_create(&g.t, NULL, feeder_main, &g), 0);
        (void)sf_get(m);
        ck_assert_int_eq(pthread_join(f.t, NULL), 0);
        ck_assert_int_eq(pthread_join(g.t, NULL), 0);
        sf_release(m);
        sf_release(lineage_c);
        sf_release(lineage_p);
        sf_release(lineage_block);
        sf_shutdown();
        return;
    }
    ck_assert(tu_wait_flag(&lineage_made, 10000));
    ck_assert_int_eq(sf_cancel(m), 0);
    ck_assert_int_eq(sf_promise_set(lineage_p, NULL), 0);
    errno = 0;
    ck_assert_ptr_null(sf_get(lineage_c));
    ck_assert_int_eq(errno, ECANCELED);
    ck_assert_int_eq(atomic_load(&never), 0);
    ck_assert_int_eq(sf_promise_set(lineage_block, NULL), 0);
    (void)sf_wait(m, NULL);
    sf_release(m);
    sf_release(lineage_c);
    sf_release(lineage_p);
    sf_release(lineage_block);
    sf_shutdown();
}
END_TEST

/* Failures: as any task's. */
static void *fails(void *arg)
{
    (void)arg;
    sf_fail(EIO, "continuation %d failed", 3);
    return NULL;
}

START_TEST(failure_reaches_getter)
{
    start(_i);
    sf_future *p = sf_promise();
    sf_future *c = sf_do_after(&p, 1, fails, NULL);
    ck_assert_int_eq(sf_promise_fail(p, EPIPE, "upstream"), 0);
    errno = 0;
    ck_assert_ptr_null(sf_get(c));
    ck_assert_int_eq(errno, EIO);
    ck_assert_str_eq(sf_error_message(c), "continuation 3 failed");
    ck_assert_int_eq(sf_wait(p, NULL), EPIPE); /* seen: no unhandled report */
    sf_release(c);
    sf_release(p);
    sf_shutdown();
}
END_TEST

START_TEST(einval_cases)
{
    start(_i);
    sf_future *p = sf_promise();
    sf_future *deps[2] = {p, NULL};
    errno = 0;
    ck_assert_ptr_null(sf_do_after(&p, 1, NULL, NULL));
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_ptr_null(sf_do_after(NULL, 1, leaf, NULL));
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_ptr_null(sf_do_after(&p, -1, leaf, NULL));
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_ptr_null(sf_do_after(deps, 2, leaf, NULL));
    ck_assert_int_eq(errno, EINVAL);
    sf_future *none = sf_do_after(NULL, 0, leaf, (void *)41);
    ck_assert_ptr_eq(sf_get(none), (void *)42);
    sf_release(none);
    ck_assert_int_eq(sf_promise_set(p, NULL), 0);
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* Deps released right after the call still run: a pending sf_do task
 * (nobody gets it), a promise, another continuation. */
static atomic_int dep_ran;
static void *mark_dep(void *arg)
{
    atomic_fetch_add(&dep_ran, 1);
    return arg;
}
static void *after_released(void *arg)
{
    (void)arg;
    ck_assert_int_eq(atomic_load(&dep_ran), 2);
    return (void *)99;
}

START_TEST(deps_released_at_once)
{
    start(_i);
    atomic_store(&dep_ran, 0);
    for (int r = 0; r < 100; r++) {
        atomic_store(&dep_ran, 0);
        sf_future *d = sf_do(mark_dep, NULL); /* pending, never got */
        sf_future *p = sf_promise();
        sf_future *mid = sf_do_after(&p, 1, mark_dep, NULL);
        sf_future *deps[3] = {d, p, mid};
        sf_future *c = sf_do_after(deps, 3, after_released, NULL);
        ck_assert_ptr_nonnull(c);
        sf_release(d);
        sf_release(mid);
        ck_assert_int_eq(sf_promise_set(p, NULL), 0);
        sf_release(p);
        ck_assert_ptr_eq(sf_get(c), (void *)99);
        sf_release(c);
    }
    sf_shutdown();
}
END_TEST

/* A dep running in its own get (the fork-join path, completed by a plain
 * store) while another thread makes a continuation of it: the continuation
 * runs once, after it. */
struct race {
    sf_future *d, *c;
    atomic_int started, go;
    atomic_int after_ran, dep_done;
};
static void *race_dep(void *arg)
{
    struct race *r = arg;
    atomic_store(&r->started, 1);
    while (!atomic_load(&r->go))
        ;
    atomic_store(&r->dep_done, 1);
    return (void *)5;
}
static void *race_after(void *arg)
{
    struct race *r = arg;
    ck_assert_int_eq(atomic_load(&r->dep_done), 1);
    ck_assert_ptr_eq(sf_get(r->d), (void *)5);
    atomic_fetch_add(&r->after_ran, 1);
    return NULL;
}
static void *race_maker(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->started))
        ;
    r->c = sf_do_after(&r->d, 1, race_after, r);
    atomic_store(&r->go, 1);
    return NULL;
}
static void *race_root(void *arg)
{
    struct race *r = arg;
    r->d = sf_do(race_dep, r);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, race_maker, r), 0);
    ck_assert_ptr_eq(sf_get(r->d), (void *)5); /* runs it here */
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    return NULL;
}

START_TEST(watch_a_task_its_get_runs)
{
    start(_i);
    int rounds = TU_SANITIZED ? 50 : 300;
    for (int k = 0; k < rounds; k++) {
        struct race r = {0};
        sf_future *root = sf_do(race_root, &r);
        (void)sf_get(root);
        ck_assert_int_eq(sf_wait(r.c, NULL), 0);
        ck_assert_int_eq(atomic_load(&r.after_ran), 1);
        sf_release(r.c);
        sf_release(r.d);
        sf_release(root);
    }
    sf_shutdown();
}
END_TEST

/* sf_shutdown runs ready continuations, and cancels promises that only
 * continuations wait for (nothing could set them). */
static atomic_int shut_ran;
static void *shut_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&shut_ran, 1);
    return NULL;
}

START_TEST(shutdown_runs_and_cancels)
{
    start(_i);
    atomic_store(&shut_ran, 0);
    sf_future *p = sf_promise();
    sf_future *q = sf_promise();
    for (int i = 0; i < 10; i++) {
        sf_release(sf_do_after(&p, 1, shut_run, NULL));
        sf_release(sf_do_after(&q, 1, shut_run, NULL));
    }
    ck_assert_int_eq(sf_promise_set(p, NULL), 0);
    sf_release(p);
    sf_release(q); /* q: nobody will set it */
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&shut_ran), 20);
}
END_TEST

START_TEST(trace_passes_sftrace)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "after-trace");
    tu_env_threads(threads_of[_i]);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_promise();
    sf_future *d = sf_do(leaf, (void *)1);
    sf_future *deps[2] = {p, d};
    sf_future *c = sf_do_after(deps, 2, leaf, (void *)2);
    sf_future *x = sf_do_after(&p, 1, must_not_run, NULL);
    ck_assert_int_eq(sf_cancel(x), 0);
    ck_assert_int_eq(sf_promise_set(p, NULL), 0);
    ck_assert_ptr_eq(sf_get(c), (void *)3);
    sf_release(c);
    sf_release(x);
    sf_release(d);
    sf_release(p);
    sf_shutdown();
    tu_sftrace_check(SFTRACE_BIN, NULL, path);
    unlink(path);
}
END_TEST

static Suite *after_suite(void)
{
    Suite *s = suite_create("after");
    TCase *tc = tcase_create("after");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, chain_of_a_million, 0, 3);
    tcase_add_loop_test(tc, diamonds_of_a_million, 0, 3);
    tcase_add_loop_test(tc, promises_set_by_a_plain_thread, 0, 3);
    tcase_add_loop_test(tc, runs_on_the_pool_without_a_get, 0, 3);
    tcase_add_loop_test(tc, thousand_waiting_use_no_cpu, 0, 3);
    tcase_add_loop_test(tc, cancel_before_start, 0, 3);
    tcase_add_loop_test(tc, maker_cancel_reaches_it, 0, 3);
    tcase_add_loop_test(tc, failure_reaches_getter, 0, 3);
    tcase_add_loop_test(tc, einval_cases, 0, 3);
    tcase_add_loop_test(tc, deps_released_at_once, 0, 3);
    tcase_add_loop_test(tc, watch_a_task_its_get_runs, 0, 3);
    tcase_add_loop_test(tc, shutdown_runs_and_cancels, 0, 3);
    tcase_add_loop_test(tc, trace_passes_sftrace, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(after_suite)
