/*
 * test_batch.c - fair batches (sf_batch_new, sf_batch_do, sf_batch_wait,
 * sf_batch_close): exact results, batch futures as ordinary futures
 * (get, wait, release, cancel, nesting), eager submission, laziness of the
 * adder's plain tasks kept, fairness between batches measured in the order
 * the pool starts tasks, accounting, self-freeing, shutdown, errors.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Busy work of about `us` microseconds (a task-length for the fairness
 * tests), without sleeping: a sleeping task would give its core away and
 * blur the order. */
static void *square(void *arg)
{
    long i = (long)arg;
    return (void *)(i * i);
}

/* ---- basics ------------------------------------------------------------ */

static void results_exact(int threads)
{
    tu_env_threads(threads);
    enum { N = 2000 };
    static sf_future *f[N];
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    for (long i = 0; i < N; i++)
        ck_assert_ptr_nonnull(f[i] = sf_batch_do(b, square, (void *)i));
    ck_assert_int_eq(sf_batch_wait(b), 0);
    /* Waiting means done: accounted after DONE (batch.h). */
    for (long i = 0; i < N; i++)
        ck_assert_int_eq(sf_is_done(f[i]), 1);
    for (long i = 0; i < N; i++) {
        ck_assert_ptr_eq(sf_get(f[i]), (void *)(i * i));
        sf_release(f[i]);
    }
    sf_batch_close(b);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, N);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, N);
    if (threads == 1)
        ck_assert_uint_eq(s.run_pool, 0);
    sf_shutdown();
}

START_TEST(results_exact_1) { results_exact(1); }
END_TEST
START_TEST(results_exact_2) { results_exact(2); }
END_TEST
START_TEST(results_exact_4) { results_exact(4); }
END_TEST

static pthread_t main_thread;
static atomic_int ran_elsewhere, ran_total;

static void *note_thread(void *arg)
{
    if (!pthread_equal(pthread_self(), main_thread))
        atomic_fetch_add(&ran_elsewhere, 1);
    atomic_fetch_add(&ran_total, 1);
    return arg;
}

/* SF_THREADS=1: no worker, so the waiting thread runs every task. */
START_TEST(wait_helps_alone)
{
    tu_env_threads(1);
    main_thread = pthread_self();
    sf_batch *b = sf_batch_new();
    sf_future *f[100];
    for (long i = 0; i < 100; i++)
        f[i] = sf_batch_do(b, note_thread, (void *)i);
    tu_sleep_ms(20);
    ck_assert_int_eq(atomic_load(&ran_total), 0); /* nobody to run them */
    ck_assert_int_eq(sf_batch_wait(b), 0);
    ck_assert_int_eq(atomic_load(&ran_total), 100);
    ck_assert_int_eq(atomic_load(&ran_elsewhere), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.run_stolen, 100); /* a wait's help counts as helping */
    for (int i = 0; i < 100; i++)
        sf_release(f[i]);
    sf_batch_close(b);
    sf_shutdown();
}
END_TEST

static atomic_int gate;

static void *gated(void *arg)
{
    while (!atomic_load(&gate))
        tu_sleep_ms(1);
    atomic_fetch_add(&ran_total, 1);
    return arg;
}

/* A batch future is an ordinary future: get runs it directly if it has not
 * started, sf_wait, sf_cancel and sf_release before the start (both never
 * run it, and the batch's wait does not wait for them). */
START_TEST(futures_are_ordinary)
{
    tu_env_threads(1); /* nothing runs unless we make it */
    atomic_store(&gate, 1);
    sf_batch *b = sf_batch_new();
    sf_future *g = sf_batch_do(b, square, (void *)7);
    sf_future *w = sf_batch_do(b, square, (void *)8);
    sf_future *c = sf_batch_do(b, gated, (void *)1);
    sf_future *d = sf_batch_do(b, gated, (void *)2);
    sf_future *k = sf_batch_do(b, gated, (void *)3);
    ck_assert_ptr_eq(sf_get(g), (void *)49); /* claimed and run here */
    ck_assert_int_eq(sf_is_done(g), 1);
    void *r = NULL;
    ck_assert_int_eq(sf_wait(w, &r), 0);
    ck_assert_ptr_eq(r, (void *)64);
    ck_assert_int_eq(sf_cancel(c), 0);
    ck_assert_int_eq(sf_is_done(c), 1);
    errno = 0;
    ck_assert_ptr_null(sf_get(c));
    ck_assert_int_eq(errno, ECANCELED);
    sf_release(d); /* discarded: never runs */
    ck_assert_int_eq(sf_batch_wait(b), 0);
    ck_assert_int_eq(atomic_load(&ran_total), 1); /* k only */
    ck_assert_ptr_eq(sf_get(k), (void *)3);
    ck_assert_int_eq(sf_cancel(k), 1); /* done already */
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 5);
    ck_assert_uint_eq(s.discarded, 1);
    ck_assert_uint_eq(s.cancelled, 1);
    sf_release(g);
    sf_release(w);
    sf_release(c);
    sf_release(k);
    sf_batch_close(b);
    sf_shutdown();
}
END_TEST

/* Every task discarded or cancelled: the wait returns at once. */
START_TEST(wait_never_hangs_on_unrun_tasks)
{
    tu_env_threads(2);
    atomic_store(&gate, 0);
    sf_batch *b = sf_batch_new();
    enum { N = 300 };
    sf_future *f[N];
    /* The first may start on the worker (held at the gate); the others are
     * taken one after another once it is let go. */
    for (long i = 0; i < N; i++)
        f[i] = sf_batch_do(b, gated, (void *)i);
    int unrun = 0;
    for (int i = 0; i < N; i++) {
        int rc = i % 2 ? sf_cancel(f[i]) : (sf_release(f[i]), 0);
        (void)rc;
    }
    atomic_store(&gate, 1);
    ck_assert_int_eq(sf_batch_wait(b), 0);
    unrun = N - atomic_load(&ran_total);
    ck_assert_int_ge(unrun, N - 1); /* at most the one held at the gate ran */
    for (int i = 1; i < N; i += 2) {
        ck_assert_int_eq(sf_is_done(f[i]), 1);
        sf_release(f[i]);
    }
    sf_batch_close(b);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* Tasks that nest plain sf_do/sf_get, and tasks that add to other batches. */
static sf_batch *other;
static sf_future *added[64];

static void *fib_task(void *arg)
{
    long i = (long)arg, n = 10 + i % 12;
    long r = (long)tu_fib((void *)n);
    /* And one more into the other batch, kept for the test to get. */
    added[i] = sf_batch_do(other, square, (void *)i);
    return (void *)r;
}

static void nested(int threads)
{
    tu_env_threads(threads);
    sf_batch *b = sf_batch_new();
    other = sf_batch_new();
    sf_future *f[64];
    for (long i = 0; i < 64; i++)
        f[i] = sf_batch_do(b, fib_task, (void *)i);
    ck_assert_int_eq(sf_batch_wait(b), 0);
    ck_assert_int_eq(sf_batch_wait(other), 0);
    for (long i = 0; i < 64; i++) {
        ck_assert_int_eq((long)sf_get(f[i]), tu_fib_exact(10 + i % 12));
        sf_release(f[i]);
        ck_assert_ptr_nonnull(added[i]);
        ck_assert_int_eq(sf_is_done(added[i]), 1);
        ck_assert_ptr_eq(sf_get(added[i]), (void *)(i * i));
        sf_release(added[i]);
    }
    sf_batch_close(other);
    sf_batch_close(b);
    tu_stats_quiet();
    sf_shutdown();
}

START_TEST(nested_1) { nested(1); }
END_TEST
START_TEST(nested_4) { nested(4); }
END_TEST

/* Many batches from several threads at once; gets race with the pool for
 * the same futures: each task runs exactly once. */
enum { ADDERS = 4, BATCHES_EACH = 50, TASKS_EACH = 40 };
static atomic_int runs[ADDERS * BATCHES_EACH * TASKS_EACH];

static void *count_run(void *arg)
{
    atomic_fetch_add(&runs[(long)arg], 1);
    return arg;
}

static void *adder(void *arg)
{
    long a = (long)arg;
    for (long k = 0; k < BATCHES_EACH; k++) {
        sf_batch *b = sf_batch_new();
        ck_assert_ptr_nonnull(b);
        sf_future *f[TASKS_EACH];
        for (long t = 0; t < TASKS_EACH; t++) {
            long id = (a * BATCHES_EACH + k) * TASKS_EACH + t;
            f[t] = sf_batch_do(b, count_run, (void *)id);
        }
        /* Half the batches: get every future (racing the pool); the rest
         * are waited for. */
        if (k % 2)
            ck_assert_int_eq(sf_batch_wait(b), 0);
        for (long t = 0; t < TASKS_EACH; t++) {
            long id = (a * BATCHES_EACH + k) * TASKS_EACH + t;
            ck_assert_ptr_eq(sf_get(f[t]), (void *)id);
            sf_release(f[t]);
        }
        sf_batch_close(b);
    }
    return NULL;
}

static void many_batches(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t t[ADDERS];
    for (long i = 0; i < ADDERS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, adder, (void *)i), 0);
    for (int i = 0; i < ADDERS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < ADDERS * BATCHES_EACH * TASKS_EACH; i++)
        ck_assert_int_eq(atomic_load(&runs[i]), 1);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, ADDERS * BATCHES_EACH * TASKS_EACH);
    sf_shutdown();
}

START_TEST(many_batches_2) { many_batches(2); }
END_TEST
START_TEST(many_batches_4) { many_batches(4); }
END_TEST

/* One batch shared by hostile threads: several add to it at once, its
 * tasks add children to it (two levels), several threads wait on it at once
 * while others get its futures. Every task runs exactly once and every wait
 * returns with every future done. */
enum { SH_ADDERS = 4, SH_ROOTS = 300, SH_ALL = SH_ADDERS * SH_ROOTS * 3 };
static sf_batch *shared;
static sf_future *sh_f[SH_ALL];
static atomic_int sh_runs[SH_ALL], sh_next, sh_waits_ok;

static void *sh_task(void *arg)
{
    long id = (long)arg;
    atomic_fetch_add(&sh_runs[id], 1);
    if (id < SH_ADDERS * SH_ROOTS) /* a root: two children */
        for (int k = 0; k < 2; k++) {
            long c = atomic_fetch_add(&sh_next, 1);
            sh_f[c] = sf_batch_do(shared, sh_task, (void *)c);
        }
    return arg;
}

static void *sh_adder(void *arg)
{
    long a = (long)arg;
    for (long i = 0; i < SH_ROOTS; i++) {
        long id = a * SH_ROOTS + i;
        sh_f[id] = sf_batch_do(shared, sh_task, (void *)id);
        if (i % 50 == 49) /* get one of ours now and then, racing the pool */
            ck_assert_ptr_eq(sf_get(sh_f[id - 7]), (void *)(id - 7));
    }
    return NULL;
}

static void *sh_waiter(void *arg)
{
    (void)arg;
    if (sf_batch_wait(shared) == 0)
        atomic_fetch_add(&sh_waits_ok, 1);
    return NULL;
}

static void shared_batch(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    shared = sf_batch_new();
    atomic_store(&sh_next, SH_ADDERS * SH_ROOTS);
    pthread_t t[SH_ADDERS], w[3];
    for (long i = 0; i < SH_ADDERS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, sh_adder, (void *)i), 0);
    for (int i = 0; i < SH_ADDERS; i++)
        pthread_join(t[i], NULL);
    /* Every root is added; waits from now on cover every child too. */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_create(&w[i], NULL, sh_waiter, NULL), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(w[i], NULL);
    ck_assert_int_eq(atomic_load(&sh_waits_ok), 3);
    ck_assert_int_eq(atomic_load(&sh_next), SH_ALL);
    for (int i = 0; i < SH_ALL; i++) {
        ck_assert_int_eq(atomic_load(&sh_runs[i]), 1);
        ck_assert_int_eq(sf_is_done(sh_f[i]), 1);
        sf_release(sh_f[i]);
    }
    sf_batch_close(shared);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, SH_ALL);
    sf_shutdown();
}

START_TEST(shared_batch_1) { shared_batch(1); }
END_TEST
START_TEST(shared_batch_4) { shared_batch(4); }
END_TEST

/* A closed batch frees itself, slot included: far more batches than may be
 * open at once come and go. And the limit of open batches is EAGAIN. */
START_TEST(close_frees)
{
    tu_env_threads(2);
    for (long i = 0; i < 40000; i++) {
        sf_batch *b = sf_batch_new();
        ck_assert_ptr_nonnull(b);
        if (i % 1000 == 0) { /* some close with a task still to run */
            sf_future *f = sf_batch_do(b, square, (void *)i);
            sf_batch_close(b);
            ck_assert_ptr_eq(sf_get(f), (void *)(i * i));
            sf_release(f);
        } else {
            sf_batch_close(b);
        }
    }
    enum { MAXB = 16384 };
    sf_batch **open = malloc(MAXB * sizeof *open);
    for (int i = 0; i < MAXB; i++)
        ck_assert_ptr_nonnull(open[i] = sf_batch_new());
    errno = 0;
    ck_assert_ptr_null(sf_batch_new());
    ck_assert_int_eq(errno, EAGAIN);
    sf_batch_close(open[123]);
    ck_assert_ptr_nonnull(open[123] = sf_batch_new());
    for (int i = 0; i < MAXB; i += 2)
        sf_batch_close(open[i]);
    free(open);
    sf_shutdown(); /* frees the odd ones, never closed (ASan: no leak) */
}
END_TEST

/* ---- eager, and the adder's plain tasks stay lazy ---------------------- */

static atomic_int batch_ran, plain_ran;
static pthread_t batch_thread;

static void *batch_task(void *arg)
{
    batch_thread = pthread_self();
    atomic_store(&batch_ran, 1);
    return arg;
}

static void *plain_task(void *arg)
{
    atomic_store(&plain_ran, 1);
    return arg;
}

START_TEST(eager_and_lazy)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_do(plain_task, (void *)1); /* lazy: nobody got it */
    sf_batch *b = sf_batch_new();
    sf_future *f = sf_batch_do(b, batch_task, (void *)2);
    /* Eager: the worker starts it with nobody calling get or wait. */
    ck_assert_int_eq(tu_wait_flag(&batch_ran, 10000), 1);
    ck_assert(!pthread_equal(batch_thread, pthread_self()));
    /* The add neither submitted nor published our plain task: the idle
     * worker leaves it alone. */
    for (int i = 0; i < 5; i++) {
        sf_future *g = sf_batch_do(b, square, (void *)3);
        for (int ms = 0; ms < 10000 && sf_is_done(g) != 1; ms++)
            tu_sleep_ms(1);
        ck_assert_int_eq(sf_is_done(g), 1); /* ran on the worker, no get */
        sf_release(g);
    }
    tu_sleep_ms(30);
    ck_assert_int_eq(atomic_load(&plain_ran), 0);
    ck_assert_int_eq(sf_is_done(p), 0);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_eq(s.run_pool, 6);
    ck_assert_ptr_eq(sf_get(p), (void *)1);
    ck_assert_ptr_eq(sf_get(f), (void *)2);
    sf_release(p);
    sf_release(f);
    sf_batch_close(b);
    sf_shutdown();
}
END_TEST

/* ---- fairness ---------------------------------------------------------- */

/* Under ThreadSanitizer a task-length is longer, and sizes shrink. */
#define TASK_US (TU_SANITIZED ? 200.0 : 50.0)

enum { BIG = TU_SANITIZED ? 2000 : 10000, SMALL = 10 };
static atomic_long big_started;
static atomic_long small_started_at[SMALL];
static atomic_int small_finished;

static void *big_task(void *arg)
{
    atomic_fetch_add(&big_started, 1);
    tu_spin_us(TASK_US);
    return arg;
}

static void *small_task(void *arg)
{
    atomic_store(&small_started_at[(long)arg], atomic_load(&big_started));
    tu_spin_us(TASK_US);
    atomic_fetch_add(&small_finished, 1);
    return arg;
}

/* A small batch added while a big one runs gets its turns at once, though
 * nobody waits on it: between its last add and its last task's start only
 * about one big task per small one starts on each worker (round-robin), not
 * the thousands queued before it. Counted in starts, not time: a worker
 * descheduled mid-task (a loaded machine) delays a completion while the
 * others go on with the big batch, but it cannot move a start out of its
 * turn. The main thread only polls (sf_is_done, sleeping), so the pool
 * alone runs both. */
static void small_beside_big(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_batch *big = sf_batch_new(), *small = sf_batch_new();
    sf_future **bf = malloc(BIG * sizeof *bf);
    for (long i = 0; i < BIG; i++)
        bf[i] = sf_batch_do(big, big_task, (void *)i);
    while (atomic_load(&big_started) < 100)
        tu_sleep_ms(1);
    sf_future *sf[SMALL];
    for (long i = 0; i < SMALL; i++)
        sf[i] = sf_batch_do(small, small_task, (void *)i);
    long at_add = atomic_load(&big_started);
    for (int i = 0; i < SMALL; i++)
        while (sf_is_done(sf[i]) != 1)
            tu_sleep_ms(1);
    long last = 0;
    for (int i = 0; i < SMALL; i++)
        if (atomic_load(&small_started_at[i]) > last)
            last = atomic_load(&small_started_at[i]);
    long between = last - at_add;
    fprintf(stderr, "test_batch: SF_THREADS=%d: %ld big tasks started between the small "
                    "batch's last add and its last start (%d big queued)\n",
            threads, between, BIG);
    /* Round-robin: about one big start per small task per worker; a handful
     * more for takes in flight. FIFO would give thousands. */
    ck_assert_int_le(between, 3 * SMALL * (threads - 1) + 10);
    ck_assert_int_lt(atomic_load(&big_started), BIG / 2); /* the big one was still running */
    /* Cancel the rest of the big batch: the wait must not wait for them. */
    for (long i = 0; i < BIG; i++)
        sf_cancel(bf[i]);
    ck_assert_int_eq(sf_batch_wait(big), 0);
    for (long i = 0; i < BIG; i++)
        sf_release(bf[i]);
    for (int i = 0; i < SMALL; i++)
        sf_release(sf[i]);
    free(bf);
    sf_batch_close(big);
    sf_batch_close(small);
    tu_stats_quiet();
    sf_shutdown();
}

START_TEST(small_beside_big_2) { small_beside_big(2); }
END_TEST
START_TEST(small_beside_big_3) { small_beside_big(3); }
END_TEST

/* Two equal batches: in every window of 100 starts while both have tasks
 * left, each gets 40-60 of them. */
enum { EQ = TU_SANITIZED ? 600 : 3000, WINDOW = 100 };
static atomic_int order_at;
static signed char order[2 * EQ];
static atomic_int go;

static void *which_task(void *arg)
{
    while (!atomic_load(&go))
        ;
    int k = atomic_fetch_add(&order_at, 1);
    order[k] = (signed char)(long)arg;
    tu_spin_us(TASK_US / 5);
    return arg;
}

static void equal_shares(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_batch *b[2] = {sf_batch_new(), sf_batch_new()};
    sf_future **f = malloc(2 * EQ * sizeof *f);
    /* Held at the gate until both are full, so both have tasks from the
     * first recorded start on. */
    for (long i = 0; i < 2 * EQ; i++)
        f[i] = sf_batch_do(b[i % 2], which_task, (void *)(i % 2));
    atomic_store(&go, 1);
    for (int i = 0; i < 2 * EQ; i++)
        while (sf_is_done(f[i]) != 1)
            tu_sleep_ms(1);
    ck_assert_int_eq(atomic_load(&order_at), 2 * EQ);
    /* Both have tasks left up to the last start of the first to finish. */
    int last[2] = {-1, -1};
    for (int i = 0; i < 2 * EQ; i++)
        last[(int)order[i]] = i;
    int end = last[0] < last[1] ? last[0] : last[1];
    int lo = WINDOW, hi = 0, windows = 0;
    for (int k = 0; k + WINDOW <= end + 1; k++) {
        int a = 0;
        for (int i = k; i < k + WINDOW; i++)
            a += order[i] == 0;
        lo = a < lo ? a : lo;
        hi = a > hi ? a : hi;
        windows++;
    }
    fprintf(stderr, "test_batch: SF_THREADS=%d: %d windows of %d starts while both had "
                    "tasks: batch A got %d to %d of each\n",
            threads, windows, WINDOW, lo, hi);
    ck_assert_int_ge(windows, EQ); /* nearly the whole run is checked */
    ck_assert_int_ge(lo, 40);
    ck_assert_int_le(hi, 60);
    for (int i = 0; i < 2 * EQ; i++)
        sf_release(f[i]);
    free(f);
    sf_batch_close(b[0]);
    sf_batch_close(b[1]);
    sf_shutdown();
}

START_TEST(equal_shares_2) { equal_shares(2); }
END_TEST
START_TEST(equal_shares_3) { equal_shares(3); }
END_TEST

/* ---- shutdown ---------------------------------------------------------- */

START_TEST(shutdown_drains_batches)
{
    tu_env_threads(1); /* no worker: only the drain can run them */
    atomic_store(&gate, 1);
    sf_batch *open = sf_batch_new(), *closed = sf_batch_new();
    for (long i = 0; i < 100; i++) {
        ck_assert_ptr_nonnull(sf_batch_do(open, gated, (void *)i));
        ck_assert_ptr_nonnull(sf_batch_do(closed, gated, (void *)i));
    }
    sf_batch_close(closed);
    ck_assert_int_eq(atomic_load(&ran_total), 0);
    sf_shutdown(); /* the futures were never released: shutdown frees them */
    ck_assert_int_eq(atomic_load(&ran_total), 200);
}
END_TEST

/* ---- errors ------------------------------------------------------------ */

static sf_batch *self_batch;
static atomic_int errs[4];
static atomic_int closed_now;

static void *inner_waits(void *arg)
{
    (void)arg;
    errno = 0;
    int rc = sf_batch_wait(self_batch);
    atomic_store(&errs[1], rc == -1 ? errno : 0);
    return NULL;
}

static void *waits_for_itself(void *arg)
{
    (void)arg;
    errno = 0;
    int rc = sf_batch_wait(self_batch);
    atomic_store(&errs[0], rc == -1 ? errno : 0);
    /* Below a get, in a plain task: still a task of self_batch below us. */
    sf_future *g = sf_do(inner_waits, NULL);
    sf_get(g);
    sf_release(g);
    /* Another batch is fine. */
    sf_batch *o = sf_batch_new();
    sf_future *h = sf_batch_do(o, square, (void *)5);
    atomic_store(&errs[2], sf_batch_wait(o) == 0 && sf_get(h) == (void *)25 ? 0 : -1);
    sf_release(h);
    sf_batch_close(o);
    return NULL;
}

static void *adds_after_close(void *arg)
{
    (void)arg;
    while (!atomic_load(&closed_now))
        tu_sleep_ms(1);
    errno = 0;
    sf_future *f = sf_batch_do(self_batch, square, (void *)1);
    atomic_store(&errs[3], f == NULL ? errno : 0);
    return NULL;
}

START_TEST(errors)
{
    tu_env_threads(2);
    /* Before sf_init: starts the runtime like sf_do. */
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), -1);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_int_eq(s.threads, 2);

    errno = 0;
    ck_assert_ptr_null(sf_batch_do(NULL, square, NULL));
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_ptr_null(sf_batch_do(b, NULL, NULL));
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_batch_wait(NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    sf_batch_close(NULL); /* ignored */

    /* An add after close, by a task of the batch still running: EPIPE. */
    self_batch = b;
    sf_future *t = sf_batch_do(b, adds_after_close, NULL);
    sf_batch_close(b);
    atomic_store(&closed_now, 1);
    sf_get(t);
    ck_assert_int_eq(atomic_load(&errs[3]), EPIPE);
    sf_release(t);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/*
 * A wait from inside a task of the same batch: EDEADLK, not a hang - at its
 * top, and below a get of a plain task it made. One thread: that plain task
 * must run nested in the batch's task, and at two threads a blocked getter
 * (this thread, in its get of the batch task running on the worker) may
 * take it first; waiting for the batch there is a cycle through two
 * threads, which sf_batch_wait does not detect (docs/batches.md) - the program's
 * deadlock, not the one this test is about.
 */
START_TEST(wait_from_its_own_task)
{
    tu_env_threads(1);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    self_batch = b;
    sf_future *f = sf_batch_do(b, waits_for_itself, NULL);
    sf_get(f);
    ck_assert_int_eq(atomic_load(&errs[0]), EDEADLK);
    ck_assert_int_eq(atomic_load(&errs[1]), EDEADLK);
    ck_assert_int_eq(atomic_load(&errs[2]), 0);
    sf_release(f);
    sf_batch_close(b);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* ---- failures and fork ------------------------------------------------- */

static void *fails(void *arg)
{
    sf_fail(EIO, "batch task %ld failed", (long)arg);
    return NULL;
}

static atomic_int unhandled, fail_started;

static void on_unhandled(int code, const char *message, void *ctx)
{
    (void)ctx;
    if (code == EIO && message != NULL && strncmp(message, "batch task ", 11) == 0)
        atomic_fetch_add(&unhandled, 1);
}

static void *gated_fails(void *arg)
{
    atomic_store(&fail_started, 1);
    while (!atomic_load(&gate))
        tu_sleep_ms(1);
    return fails(arg);
}

/* A batch task fails as any task: its getter sees the code and message; one
 * released unseen after it failed, and one released while it ran (the
 * runner frees it), reach the unhandled-failure hook; the waits return. */
START_TEST(failures)
{
    tu_env_threads(2);
    sf_on_unhandled(on_unhandled, NULL);
    atomic_store(&gate, 0);
    sf_batch *b = sf_batch_new();
    /* Released while it runs on the worker, held at the gate. */
    sf_future *h = sf_batch_do(b, gated_fails, (void *)3);
    ck_assert_int_eq(tu_wait_flag(&fail_started, 10000), 1);
    sf_release(h);
    sf_future *f = sf_batch_do(b, fails, (void *)1);
    ck_assert_int_eq(sf_wait(f, NULL), EIO); /* the worker is busy: runs here */
    ck_assert_str_eq(sf_error_message(f), "batch task 1 failed");
    sf_future *g = sf_batch_do(b, fails, (void *)2);
    ck_assert_int_eq(atomic_load(&unhandled), 0);
    atomic_store(&gate, 1);
    ck_assert_int_eq(sf_batch_wait(b), 0);
    ck_assert_int_eq(sf_is_done(g), 1);
    ck_assert_int_eq(atomic_load(&unhandled), 1); /* h, by its runner */
    sf_release(g); /* failed, never seen */
    ck_assert_int_eq(atomic_load(&unhandled), 2);
    sf_release(f);
    sf_batch_close(b);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&unhandled), 2);
}
END_TEST

/* fork() with a batch open and tasks pending: the child starts afresh (its
 * own batches work), the parent's batch goes on. */
START_TEST(fork_with_open_batch)
{
    tu_env_threads(2);
    atomic_store(&gate, 0);
    sf_batch *b = sf_batch_new();
    sf_future *f[20];
    for (long i = 0; i < 20; i++)
        f[i] = sf_batch_do(b, gated, (void *)i); /* the worker holds the first */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* ThreadSanitizer lets a child of a multi-threaded parent start no
         * thread: the child's runtime then has no worker. */
        if (TU_SANITIZED)
            tu_env_threads(1);
        atomic_store(&gate, 1);
        sf_batch *c = sf_batch_new();
        sf_future *h[10];
        for (long i = 0; i < 10; i++)
            h[i] = sf_batch_do(c, square, (void *)i);
        int ok = sf_batch_wait(c) == 0;
        for (long i = 0; i < 10; i++)
            ok = ok && sf_get(h[i]) == (void *)(i * i);
        sf_shutdown();
        _exit(ok ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    atomic_store(&gate, 1);
    ck_assert_int_eq(sf_batch_wait(b), 0);
    for (long i = 0; i < 20; i++) {
        ck_assert_ptr_eq(sf_get(f[i]), (void *)i);
        sf_release(f[i]);
    }
    sf_batch_close(b);
    sf_shutdown();
}
END_TEST

/* ---- the trace --------------------------------------------------------- */

/* Occurrences of `what` in text. */
static int count_lines(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

/* Batch tasks in a trace: named 131071.N, a Do by the adder, a Take by a
 * worker naming thread 131071, FStart with how pool, wait, inline; and
 * sftrace --check finds the trace consistent. */
START_TEST(traced)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "batch-trace");
    tu_env_threads(2);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_batch *b = sf_batch_new();
    sf_future *first = sf_batch_do(b, batch_task, (void *)1); /* the worker takes it */
    ck_assert_int_eq(tu_wait_flag(&batch_ran, 10000), 1);
    sf_future *f[50];
    for (long i = 0; i < 50; i++)
        f[i] = sf_batch_do(b, square, (void *)i);
    ck_assert_ptr_eq(sf_get(f[49]), (void *)(49L * 49)); /* inline, or done by then */
    ck_assert_int_eq(sf_batch_wait(b), 0);
    for (int i = 0; i < 50; i++)
        sf_release(f[i]);
    sf_release(first);
    sf_batch_close(b);
    sf_shutdown();
    char *t = tu_read_file(path);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(count_lines(t, "\tDo\t131071."), 51);
    ck_assert_int_eq(count_lines(t, "\tFDone\t131071."), 51);
    ck_assert_int_ge(count_lines(t, "\tTake\t131071.0\t131071\n"), 1);
    ck_assert_int_ge(count_lines(t, "\tpool\n"), 1);
    free(t);

    tu_sftrace_check(SFTRACE_BIN, NULL, path);
    unlink(path);
}
END_TEST

static Suite *batch_suite(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("batch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, results_exact_1);
    tcase_add_test(tc, results_exact_2);
    tcase_add_test(tc, results_exact_4);
    tcase_add_test(tc, wait_helps_alone);
    tcase_add_test(tc, futures_are_ordinary);
    tcase_add_test(tc, wait_never_hangs_on_unrun_tasks);
    tcase_add_test(tc, nested_1);
    tcase_add_test(tc, nested_4);
    tcase_add_test(tc, many_batches_2);
    tcase_add_test(tc, many_batches_4);
    tcase_add_test(tc, shared_batch_1);
    tcase_add_test(tc, shared_batch_4);
    tcase_add_test(tc, close_frees);
    tcase_add_test(tc, eager_and_lazy);
    tcase_add_test(tc, small_beside_big_2);
    tcase_add_test(tc, small_beside_big_3);
    tcase_add_test(tc, equal_shares_2);
    tcase_add_test(tc, equal_shares_3);
    tcase_add_test(tc, shutdown_drains_batches);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, wait_from_its_own_task);
    tcase_add_test(tc, traced);
    tcase_add_test(tc, failures);
    tcase_add_test(tc, fork_with_open_batch);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(batch_suite)
