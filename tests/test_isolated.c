/*
 * test_isolated.c - sf_get_isolated: a get that helps only with its own
 * task's work. The scene: a foreign thread holds an unrelated task U,
 * submitted and pending; a get waits for a task that runs elsewhere. A get
 * in plain code (main) helps only with the work of what it waits for, so
 * it never runs U; an ordinary get inside a task on a pool worker helps
 * with anything, U included (the latency trade-off sf.h describes); an
 * isolated get never runs U, and still helps with the tasks its own task
 * made. U is never submitted (its thread makes no get until the end), so
 * no pool worker may start it (laziness): only a helping get can.
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>

/* Waits (with a bound, so a broken runtime fails instead of hanging) until
 * *flag is at least `want`. */
static void wait_for(atomic_int *flag, int want)
{
    for (int i = 0; atomic_load(flag) < want && i < 100000; i++)
        tu_sleep_ms(0 == i % 64 ? 1 : 0);
    ck_assert_int_ge(atomic_load(flag), want);
}

/* --- the unrelated task U, on a foreign thread --- */

static pthread_t main_thread, u_thread;
static atomic_int u_ran_on_main, u_runs, u_ready, u_collect;
static sf_future *u_future;

static void *unrelated(void *arg)
{
    u_thread = pthread_self();
    atomic_fetch_add(&u_runs, 1);
    if (pthread_equal(pthread_self(), main_thread))
        atomic_store(&u_ran_on_main, 1);
    return arg;
}

static void *trivial(void *arg) { return arg; }

/* Queues U and keeps it pending until told to collect it. */
static void *holder(void *arg)
{
    (void)arg;
    u_future = sf_do(unrelated, (void *)77L);
    ck_assert_ptr_nonnull(u_future);
    atomic_store(&u_ready, 1);
    wait_for(&u_collect, 1);
    ck_assert_ptr_eq(sf_get(u_future), (void *)77L);
    sf_release(u_future);
    return NULL;
}

static pthread_t start_holder(void)
{
    main_thread = pthread_self();
    pthread_t h;
    ck_assert_int_eq(pthread_create(&h, NULL, holder, NULL), 0);
    wait_for(&u_ready, 1);
    return h;
}

static void finish_holder(pthread_t h)
{
    atomic_store(&u_collect, 1);
    ck_assert_int_eq(pthread_join(h, NULL), 0);
    ck_assert_int_eq(atomic_load(&u_runs), 1);
}

/* --- case 1: the awaited task already runs on the pool worker --- */

static atomic_int slow_started, slow_release;

static void *slow(void *arg)
{
    atomic_store(&slow_started, 1);
    wait_for(&slow_release, 1);
    return arg;
}

static void *release_later(void *arg)
{
    tu_sleep_ms((long)arg);
    atomic_store(&slow_release, 1);
    return NULL;
}

/* Starts slow() on the worker (SF_THREADS=2: the only one) and a thread
 * that lets it finish after `ms`. */
static sf_future *slow_on_worker(pthread_t *releaser, long ms)
{
    sf_future *f = sf_do(slow, (void *)5L);
    ck_assert_ptr_nonnull(f);
    sf_future *t = sf_do(trivial, (void *)2L);
    ck_assert_ptr_eq(sf_get(t), (void *)2L); /* submits f: the idle worker takes it */
    sf_release(t);
    wait_for(&slow_started, 1);
    ck_assert_int_eq(pthread_create(releaser, NULL, release_later, (void *)ms), 0);
    return f;
}

START_TEST(plain_get_leaves_unrelated_work)
{
    tu_env_threads(2);
    pthread_t h = start_holder();
    pthread_t r;
    sf_future *f = slow_on_worker(&r, 300);
    ck_assert_ptr_eq(sf_get(f), (void *)5L);
    /* Plain code's get helps with f's work only: U is not f's. */
    ck_assert_int_eq(atomic_load(&u_runs), 0);
    ck_assert_int_eq(sf_is_done(u_future), 0);
    sf_release(f);
    pthread_join(r, NULL);
    finish_holder(h);
    sf_shutdown();
}
END_TEST

/* A task G on the pool worker gets F, which runs on this thread (its plain
 * get claimed F before it submitted G) until U has run: only G's get, an
 * ordinary get in a task that no plain-code wait confines, can run U. */
static pthread_t g_thread;

static void *until_u_ran(void *arg)
{
    for (int i = 0; atomic_load(&u_runs) < 1 && i < 100000; i++)
        tu_sleep_ms(0 == i % 64 ? 1 : 0);
    return atomic_load(&u_runs) >= 1 ? arg : (void *)-1L;
}

static sf_future *g_target;

static void *gets_target(void *arg)
{
    (void)arg;
    g_thread = pthread_self();
    return sf_get(g_target);
}

START_TEST(get_in_a_task_helps_with_unrelated_work)
{
    tu_env_threads(2);
    pthread_t h = start_holder();
    sf_future *f = sf_do(until_u_ran, (void *)5L);
    sf_future *g = sf_do(gets_target, NULL);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(g);
    g_target = f;
    ck_assert_ptr_eq(sf_get(f), (void *)5L); /* runs F here; the idle worker takes G */
    ck_assert_ptr_eq(sf_get(g), (void *)5L);
    /* While it waited for F, G's get ran U on the worker: the trade-off of
     * helping. */
    ck_assert_int_eq(atomic_load(&u_runs), 1);
    ck_assert(!pthread_equal(g_thread, pthread_self()));
    ck_assert(pthread_equal(u_thread, g_thread));
    sf_release(f);
    sf_release(g);
    finish_holder(h);
    sf_shutdown();
}
END_TEST

START_TEST(isolated_get_waits_without_unrelated_work)
{
    tu_env_threads(2);
    pthread_t h = start_holder();
    pthread_t r;
    sf_future *f = slow_on_worker(&r, 300);
    ck_assert_ptr_eq(sf_get_isolated(f), (void *)5L);
    ck_assert_int_eq(atomic_load(&u_runs), 0); /* the get did not run U */
    ck_assert_int_eq(sf_is_done(u_future), 0);
    sf_release(f);
    pthread_join(r, NULL);
    finish_holder(h);
    ck_assert_int_eq(atomic_load(&u_ran_on_main), 0);
    sf_shutdown();
}
END_TEST

/* --- case 2: the isolated get runs its task, which waits for its children --- */

#define KIDS 8
static atomic_int kids_done, kids_on_main;

static void *kid(void *arg)
{
    if (pthread_equal(pthread_self(), main_thread))
        atomic_fetch_add(&kids_on_main, 1);
    atomic_fetch_add(&kids_done, 1);
    return arg;
}

/* On the worker: waits until every kid ran, so its getter must help. */
static void *anchor(void *arg)
{
    atomic_store(&slow_started, 1);
    wait_for(&kids_done, KIDS);
    return arg;
}

/* Parent: hands `anchor` to the worker, makes KIDS kids, then gets the
 * anchor: blocked, its get helps - with the kids, never with U. */
static void *parent(void *arg)
{
    (void)arg;
    sf_future *a = sf_do(anchor, (void *)1000L);
    sf_future *t = sf_do(trivial, (void *)0L);
    if (a == NULL || t == NULL)
        return (void *)-1L;
    sf_get(t); /* submits the anchor: the idle worker takes it */
    sf_release(t);
    wait_for(&slow_started, 1);
    sf_future *k[KIDS];
    for (long i = 0; i < KIDS; i++)
        if ((k[i] = sf_do(kid, (void *)(i + 1))) == NULL)
            return (void *)-1L;
    long sum = (long)sf_get(a);
    sf_release(a);
    for (int i = 0; i < KIDS; i++) {
        sum += (long)sf_get(k[i]);
        sf_release(k[i]);
    }
    return (void *)sum;
}

#define PARENT_SUM (1000L + KIDS * (KIDS + 1) / 2)

START_TEST(isolated_get_helps_with_its_own_tasks)
{
    tu_env_threads(2);
    pthread_t h = start_holder();
    sf_future *p = sf_do(parent, NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_eq(sf_get_isolated(p), (void *)PARENT_SUM);
    /* The parent ran here and, blocked on the anchor, ran every kid here:
     * its gets helped within its region, never with U. */
    ck_assert_int_eq(atomic_load(&kids_on_main), KIDS);
    ck_assert_int_eq(atomic_load(&u_runs), 0);
    ck_assert_int_eq(sf_is_done(u_future), 0);
    sf_release(p);
    finish_holder(h);
    sf_shutdown();
}
END_TEST

/* --- the rest is sf_get --- */

static void *fib_isolated(void *arg)
{
    long n = (long)arg;
    if (n < 2)
        return arg;
    sf_future *a = sf_do(fib_isolated, (void *)(n - 1));
    sf_future *b = sf_do(tu_fib, (void *)(n - 2));
    long r = (long)sf_get_isolated(b) + (long)sf_get_isolated(a);
    sf_release(a);
    sf_release(b);
    return (void *)r;
}

static const int thread_counts[] = {1, 2, 4};

START_TEST(isolated_gets_nest_and_give_exact_results)
{
    tu_env_threads(thread_counts[_i]);
    sf_future *f = sf_do(fib_isolated, (void *)18L);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get_isolated(f), (void *)tu_fib_exact(18));
    ck_assert_ptr_eq(sf_get_isolated(f), (void *)tu_fib_exact(18)); /* done: same value */
    ck_assert_ptr_eq(sf_get(f), (void *)tu_fib_exact(18));
    sf_release(f);
    errno = 0;
    ck_assert_ptr_null(sf_get_isolated(NULL));
    ck_assert_int_eq(errno, EINVAL);
    sf_shutdown();
}
END_TEST

static Suite *isolated_suite(void)
{
    Suite *s = suite_create("isolated");
    TCase *tc = tcase_create("isolated");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, plain_get_leaves_unrelated_work);
    tcase_add_test(tc, get_in_a_task_helps_with_unrelated_work);
    tcase_add_test(tc, isolated_get_waits_without_unrelated_work);
    tcase_add_test(tc, isolated_get_helps_with_its_own_tasks);
    tcase_add_loop_test(tc, isolated_gets_nest_and_give_exact_results, 0,
                        (int)(sizeof thread_counts / sizeof thread_counts[0]));
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(isolated_suite)
