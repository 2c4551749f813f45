/*
 * test_release.c - sf_release: a future released before its task started is
 * discarded (the task never runs), by any thread; one released while its task
 * runs lets the task finish; one released after its get is simply freed.
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>

/* Waits for flags that a correct runtime sets within milliseconds: the
 * deadline only turns a hang into a failure, and the tcase timeout is the
 * watchdog beyond it; both generous for a loaded machine or a sanitizer. */
#define WAIT_MS 30000L
#define N 1000

static atomic_int runs[N];

static void *counted(void *arg)
{
    atomic_fetch_add(&runs[(long)arg], 1);
    return (void *)((long)arg + 1);
}

static void assert_runs(long from, long to, int want)
{
    for (long i = from; i < to; i++)
        if (atomic_load(&runs[i]) != want)
            ck_abort_msg("task %ld ran %d times, want %d", i, atomic_load(&runs[i]), want);
}

/* Many released before any get: none runs, all are counted as discarded. */
START_TEST(release_many_before_start)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f[N];
    for (long i = 0; i < N; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(counted, (void *)i));
    for (long i = N - 1; i >= 0; i -= 2) /* newest first, then the rest oldest first */
        sf_release(f[i]);
    for (long i = 0; i < N; i += 2)
        sf_release(f[i]);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, N);
    ck_assert_uint_eq(s.discarded, N);
    sf_shutdown();
    assert_runs(0, N, 0);
}
END_TEST

/* Released by a thread that did not make them: still discarded. */
static sf_future *shared[N];

static void *release_all(void *arg)
{
    (void)arg;
    for (long i = 0; i < N; i++)
        sf_release(shared[i]);
    return NULL;
}

START_TEST(release_by_other_thread)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (long i = 0; i < N; i++)
        ck_assert_ptr_nonnull(shared[i] = sf_do(counted, (void *)i));
    tu_run_on_thread(release_all, NULL, 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, N);
    ck_assert_uint_eq(s.discarded, N);
    /* The making thread goes on working. */
    sf_future *g = sf_do(tu_fib, (void *)14L);
    ck_assert_ptr_eq(sf_get(g), (void *)377L);
    sf_release(g);
    sf_shutdown();
    assert_runs(0, N, 0);
}
END_TEST

/* Half got, half released, interleaved: exactly the got ones ran. */
START_TEST(release_some_get_others)
{
    tu_env_threads(1); /* no worker can take the submitted ones */
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f[N];
    for (long i = 0; i < N; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(counted, (void *)i));
    for (long i = 0; i < N; i++) {
        if (i % 3 == 0) {
            ck_assert_ptr_eq(sf_get(f[i]), (void *)(i + 1));
            sf_release(f[i]);
        } else {
            sf_release(f[i]);
        }
    }
    sf_stats s = tu_stats_quiet();
    uint64_t got = (N + 2) / 3;
    ck_assert_uint_eq(s.created, N);
    ck_assert_uint_eq(s.run_inline, got);
    ck_assert_uint_eq(s.discarded, N - got);
    sf_shutdown();
    for (long i = 0; i < N; i++)
        ck_assert_int_eq(atomic_load(&runs[i]), i % 3 == 0 ? 1 : 0);
}
END_TEST

/*
 * Released while its task runs: the task still finishes (once). Built at
 * SF_THREADS=1 so the schedule is fixed: a root task, run by main's get,
 * makes a and b; a foreign thread runs a (its get claimed it first), the
 * root's get of a helps by running b, a task of the root's region, and
 * while b runs a third thread, holding b's handle, releases it.
 */
static atomic_int a_started, b_started, b_may_finish, a_may_finish, b_finished, a_published;

static void *task_a(void *arg)
{
    atomic_store(&a_started, 1);
    return tu_wait_flag(&a_may_finish, WAIT_MS) ? arg : (void *)-1L;
}

static void *task_b(void *arg)
{
    atomic_store(&b_started, 1);
    void *r = tu_wait_flag(&b_may_finish, WAIT_MS) ? arg : (void *)-1L;
    atomic_fetch_add(&b_finished, 1);
    return r;
}

static sf_future *a_f, *b_f;
static void *foreign_val = (void *)-2L;

/* The foreign thread: gets a once the root made it. */
static void *get_a(void *arg)
{
    (void)arg;
    if (tu_wait_flag(&a_published, WAIT_MS))
        foreign_val = sf_get(a_f);
    return NULL;
}

static void *release_b_while_running(void *arg)
{
    (void)arg;
    if (!tu_wait_flag(&b_started, WAIT_MS))
        return (void *)-1L;
    sf_release(b_f); /* b is running (on main): orphaned, freed when it ends */
    atomic_store(&b_may_finish, 1);
    tu_wait_flag(&b_finished, WAIT_MS);
    atomic_store(&a_may_finish, 1);
    return NULL;
}

/* The root: its get of a gives a's value; -3 if a's get never started it. */
static void *release_root(void *arg)
{
    (void)arg;
    a_f = sf_do(task_a, (void *)11L);
    b_f = sf_do(task_b, (void *)22L);
    if (a_f == NULL || b_f == NULL)
        return (void *)-1L;
    atomic_store(&a_published, 1);
    if (!tu_wait_flag(&a_started, WAIT_MS))
        return (void *)-3L;
    return sf_get(a_f); /* a runs elsewhere: this thread runs b meanwhile */
}

START_TEST(release_while_running)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t ga, rel;
    ck_assert_int_eq(pthread_create(&ga, NULL, get_a, NULL), 0);
    ck_assert_int_eq(pthread_create(&rel, NULL, release_b_while_running, NULL), 0);
    sf_future *root = sf_do(release_root, NULL);
    ck_assert_ptr_nonnull(root);
    void *v = sf_get(root);
    void *rv;
    ck_assert_int_eq(pthread_join(rel, &rv), 0);
    ck_assert_int_eq(pthread_join(ga, NULL), 0);
    ck_assert_msg(v != (void *)-3L, "the foreign get never ran a");
    ck_assert_ptr_null(rv);
    ck_assert_ptr_eq(v, (void *)11L);
    ck_assert_ptr_eq(foreign_val, (void *)11L);
    ck_assert_int_eq(atomic_load(&b_finished), 1);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 3);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.run_inline, 2); /* the root by main, a by the foreign get */
    ck_assert_uint_eq(s.run_stolen, 1); /* b, by the root's get */
    sf_release(a_f);
    sf_release(root);
    /* Memory of the orphan was recycled properly: new work is exact. */
    for (long i = 0; i < 100; i++) {
        sf_future *f = sf_do(counted, (void *)i);
        ck_assert_ptr_eq(sf_get(f), (void *)(i + 1));
        sf_release(f);
    }
    assert_runs(0, 100, 1);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&b_finished), 1);
}
END_TEST

static Suite *release_suite(void)
{
    Suite *s = suite_create("release");
    TCase *tc = tcase_create("release");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, release_many_before_start);
    tcase_add_test(tc, release_by_other_thread);
    tcase_add_test(tc, release_some_get_others);
    tcase_add_test(tc, release_while_running);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(release_suite)
