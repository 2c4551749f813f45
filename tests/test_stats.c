/*
 * test_stats.c - statistics: per-thread rows (sf_stats_read_threads) sum
 * exactly to the totals (sf_stats_read), workers' rows show what they took,
 * queued and asleep say what is pending and who sleeps now, busy time
 * counts nested tasks once and leaves out a task's sleeps in gets, CPU time
 * is read from live threads' clocks and kept for exited ones, timeouts and
 * promises land in the row of the thread that waited or made them, and
 * SF_STATS / sf_config.stats print the table at shutdown.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ROWS 64

static int read_rows(sf_thread_stats *rows)
{
    int n = sf_stats_read_threads(rows, MAX_ROWS);
    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, MAX_ROWS);
    ck_assert_int_eq(sf_stats_read_threads(NULL, 0), n);
    for (int i = 0; i < n; i++) {
        const sf_thread_stats *r = &rows[i];
        if (i > 0)
            ck_assert_int_gt(r->id, rows[i - 1].id);
        ck_assert_uint_eq(r->executed,
                          r->run_inline + r->run_pool + r->run_stolen + r->run_drained);
        ck_assert_uint_le(r->steals_failed, r->steals_tried);
        ck_assert_uint_eq(r->avg_task_ns, r->executed ? r->busy_ns / r->executed : 0);
        if (!r->is_worker)
            ck_assert_uint_eq(r->idle_sleeps, 0);
    }
    return n;
}

/* Rows of a quiet runtime sum to the totals, field by field. */
static void assert_rows_sum(const sf_stats *s, const sf_thread_stats *rows, int n)
{
    sf_thread_stats t;
    memset(&t, 0, sizeof t);
    int workers = 0;
    for (int i = 0; i < n; i++) {
        workers += rows[i].is_worker;
        t.created += rows[i].created;
        t.run_inline += rows[i].run_inline;
        t.run_pool += rows[i].run_pool;
        t.run_stolen += rows[i].run_stolen;
        t.run_drained += rows[i].run_drained;
        t.discarded += rows[i].discarded;
        t.cancelled += rows[i].cancelled;
        t.gets_blocked += rows[i].gets_blocked;
        t.sleeps += rows[i].sleeps;
        t.fresh_stacks += rows[i].fresh_stacks;
        t.asleep += rows[i].asleep;
        if (!rows[i].is_worker)
            ck_assert_uint_eq(rows[i].run_pool, 0);
    }
    ck_assert_int_eq(workers, s->workers);
    ck_assert_uint_eq(t.created, s->created);
    ck_assert_uint_eq(t.run_inline, s->run_inline);
    ck_assert_uint_eq(t.run_pool, s->run_pool);
    ck_assert_uint_eq(t.run_stolen, s->run_stolen);
    ck_assert_uint_eq(t.run_drained, 0); /* only a shutdown drains */
    ck_assert_uint_eq(t.discarded, s->discarded);
    ck_assert_uint_eq(t.cancelled, s->cancelled);
    ck_assert_uint_eq(t.gets_blocked, s->gets_blocked);
    ck_assert_uint_eq(t.sleeps, s->sleeps);
    ck_assert_uint_eq(t.fresh_stacks, s->fresh_stacks);
    ck_assert_int_eq(t.asleep, s->asleep);
}

static void *noop(void *arg) { return arg; }

static void *fib_on_thread(void *arg)
{
    return tu_fib(arg);
}

/* fib on the main thread and on a foreign one, tasks discarded and
 * cancelled, a batch waited on: every row adds up to the totals, and each
 * kind of count lands in the row of the thread that did it. */
START_TEST(rows_sum_to_totals)
{
    int threads = _i == 0 ? 1 : 2;
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq((long)tu_fib((void *)18L), tu_fib_exact(18));
    ck_assert_int_eq((long)tu_run_on_thread(fib_on_thread, (void *)16L, 0), tu_fib_exact(16));
    for (int i = 0; i < 7; i++)
        sf_release(sf_do(noop, NULL)); /* discarded */
    for (int i = 0; i < 5; i++) {
        sf_future *f = sf_do(noop, NULL);
        ck_assert_int_eq(sf_cancel(f), 0);
        sf_release(f);
    }
    /* 9 batch tasks: made by the main thread, run by its wait or by the
     * worker, released after. */
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    sf_future *bf[9];
    for (int i = 0; i < 9; i++)
        ck_assert_ptr_nonnull(bf[i] = sf_batch_do(b, noop, NULL));
    ck_assert_int_eq(sf_batch_wait(b), 0);
    for (int i = 0; i < 9; i++)
        sf_release(bf[i]);
    sf_batch_close(b);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, tu_fib_tasks(18) + tu_fib_tasks(16) + 12 + 9);
    ck_assert_uint_eq(s.discarded, 7);
    ck_assert_uint_eq(s.cancelled, 5);
    ck_assert_uint_eq(s.queued, 0);
    ck_assert_int_eq(s.asleep, 0);
    sf_thread_stats rows[MAX_ROWS];
    int n = read_rows(rows);
    assert_rows_sum(&s, rows, n);
    /* The main thread (id 0) and the foreign one each have a row; the
     * foreign one made its tasks, and its row says so. */
    ck_assert_int_eq(n, threads - 1 + 2);
    ck_assert_int_eq(rows[0].id, 0);
    ck_assert_int_eq(rows[0].is_worker, 0);
    ck_assert_uint_eq(rows[0].discarded, 7);
    ck_assert_uint_eq(rows[0].cancelled, 5);
    const sf_thread_stats *foreign = &rows[n - 1];
    ck_assert_int_eq(foreign->is_worker, 0);
    ck_assert_uint_gt(foreign->created, 0);
    /* With a worker, which rows ran what is the schedule's choice (the
     * worker may even have run every task a thread made): exact only
     * without one. */
    if (threads == 1) {
        ck_assert_uint_gt(rows[0].busy_ns, 0);
        ck_assert_uint_gt(foreign->busy_ns, 0);
        /* No worker: each thread made and ran its own tree, inline. */
        ck_assert_uint_eq(rows[0].created, tu_fib_tasks(18) + 12 + 9);
        ck_assert_uint_eq(foreign->created, tu_fib_tasks(16));
        ck_assert_uint_eq(rows[0].run_inline, tu_fib_tasks(18));
        ck_assert_uint_eq(rows[0].run_stolen, 9); /* the wait ran the batch */
        ck_assert_uint_eq(foreign->run_inline, tu_fib_tasks(16));
    }
    sf_shutdown();
}
END_TEST

/* Two tasks that each wait until both have started: while the main thread
 * runs one (its get's own), the other can only start on the worker. */
static atomic_int started;

static void *rendezvous(void *arg)
{
    atomic_fetch_add(&started, 1);
    double t0 = tu_now_ms();
    /* The deadline only keeps a broken runtime from hanging the test. */
    while (atomic_load(&started) < 2 && tu_now_ms() - t0 < 60000)
        tu_sleep_ms(1);
    return arg;
}

START_TEST(worker_rows_show_pool_executions)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&started, 0);
    double t0 = tu_now_ms(); /* CLOCK_MONOTONIC, the runtime's clock */
    sf_future *a = sf_do(rendezvous, (void *)1L);
    sf_future *b = sf_do(rendezvous, (void *)2L);
    ck_assert_int_eq((long)sf_get(b), 2); /* runs b here; the worker takes a */
    ck_assert_int_eq(atomic_load(&started), 2);
    ck_assert_int_eq((long)sf_get(a), 1);
    sf_release(a);
    sf_release(b);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.run_pool, 1);
    ck_assert_uint_eq(s.run_inline, 1);
    sf_thread_stats rows[MAX_ROWS];
    int n = read_rows(rows);
    ck_assert_int_eq(n, 2);
    /* The worker adds its busy time after it publishes a's result, which
     * the get above may see first: wait until the worker is quiet (a hang
     * guard only). */
    int w = rows[0].is_worker ? 0 : 1;
    for (double t1 = tu_now_ms(); rows[w].busy_ns == 0 && tu_now_ms() - t1 < 30000;) {
        tu_sleep_ms(1);
        n = read_rows(rows);
    }
    assert_rows_sum(&s, rows, n);
    const sf_thread_stats *me = rows[0].is_worker ? &rows[1] : &rows[0];
    const sf_thread_stats *worker = rows[0].is_worker ? &rows[0] : &rows[1];
    ck_assert_int_eq(worker->is_worker, 1);
    ck_assert_uint_eq(worker->executed, 1);
    ck_assert_uint_eq(worker->run_pool, 1);
    ck_assert_uint_eq(worker->created, 0);
    ck_assert_uint_ge(worker->steals_tried, 1); /* it found a by a scan */
    ck_assert_uint_eq(me->executed, 1);
    ck_assert_uint_eq(me->run_inline, 1);
    ck_assert_uint_eq(me->created, 2);
    /* Both ran a task that waited for the other's start: busy at least
     * while the later one waited, and no longer than since the tasks were
     * made. */
    double since_ns = (tu_now_ms() - t0) * 1e6;
    ck_assert_uint_gt(worker->busy_ns, 0);
    ck_assert_uint_gt(me->busy_ns, 0);
    ck_assert_double_le((double)worker->busy_ns, since_ns);
    ck_assert_double_le((double)me->busy_ns, since_ns);
    sf_shutdown();
}
END_TEST

START_TEST(queued_counts_pending_tasks)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f[10];
    for (int i = 0; i < 10; i++)
        f[i] = sf_do(noop, (void *)(long)i);
    sf_stats s = tu_stats_pending(10);
    ck_assert_uint_eq(s.queued, 10);
    for (int i = 0; i < 3; i++)
        sf_release(f[i]);
    ck_assert_uint_eq(tu_stats_pending(7).queued, 7);
    ck_assert_int_eq(sf_cancel(f[3]), 0);
    ck_assert_int_eq(sf_cancel(f[4]), 0);
    ck_assert_uint_eq(tu_stats_pending(5).queued, 5);
    ck_assert_int_eq((long)sf_get(f[6]), 6); /* not the newest: runs just that one */
    ck_assert_uint_eq(tu_stats_pending(4).queued, 4);
    for (int i = 3; i < 10; i++)
        sf_release(f[i]);
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.queued, 0);
    ck_assert_uint_eq(s.discarded, 3 + 4);
    ck_assert_uint_eq(s.cancelled, 2);
    sf_shutdown();
}
END_TEST

/* A task that blocks until told to go, and a getter of it on another thread,
 * which finds it running, has nothing to help with and sleeps. */
static atomic_int go, blocker_started, getter_done;
static _Atomic(sf_future *) blocked_future;

static void *blocker(void *arg)
{
    atomic_store(&blocker_started, 1);
    tu_wait_flag(&go, 20000);
    return arg;
}

static void *owner_thread(void *arg)
{
    (void)arg;
    sf_future *f = sf_do(blocker, (void *)7L);
    atomic_store(&blocked_future, f);
    long r = (long)sf_get(f);
    tu_wait_flag(&getter_done, 20000); /* the other getter still uses f */
    sf_release(f);
    return (void *)r;
}

static void *getter_thread(void *arg)
{
    (void)arg;
    while (atomic_load(&blocked_future) == NULL || !atomic_load(&blocker_started))
        tu_sleep_ms(1);
    long r = (long)sf_get(atomic_load(&blocked_future));
    atomic_store(&getter_done, 1);
    return (void *)r;
}

START_TEST(asleep_counts_a_thread_asleep_in_a_get)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&go, 0);
    atomic_store(&blocker_started, 0);
    atomic_store(&getter_done, 0);
    atomic_store(&blocked_future, NULL);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_int_eq(s.asleep, 0);
    pthread_t owner, getter;
    ck_assert_int_eq(pthread_create(&owner, NULL, owner_thread, NULL), 0);
    ck_assert_int_eq(pthread_create(&getter, NULL, getter_thread, NULL), 0);
    /* The getter sleeps in naps and is awake a moment between them: poll. */
    int seen = 0;
    sf_thread_stats rows[MAX_ROWS];
    int n = 0;
    for (double t0 = tu_now_ms(); !seen && tu_now_ms() - t0 < 15000;) {
        ck_assert_int_eq(sf_stats_read(&s), 0);
        ck_assert_int_le(s.asleep, 1); /* the owner runs its task, awake */
        if (s.asleep == 1) {
            n = sf_stats_read_threads(rows, MAX_ROWS);
            int rows_asleep = 0;
            for (int i = 0; i < n; i++)
                rows_asleep += rows[i].asleep;
            seen = rows_asleep == 1; /* the same sleeper, unless it woke meanwhile */
        } else {
            tu_sleep_ms(1);
        }
    }
    ck_assert_msg(seen, "no thread was seen asleep in its get");
    ck_assert_uint_eq(s.queued, 0); /* the one task runs */
    atomic_store(&go, 1);
    void *r1, *r2;
    pthread_join(owner, &r1);
    pthread_join(getter, &r2);
    ck_assert_int_eq((long)r1, 7);
    ck_assert_int_eq((long)r2, 7);
    s = tu_stats_quiet();
    ck_assert_int_eq(s.asleep, 0);
    ck_assert_uint_ge(s.sleeps, 1);
    ck_assert_uint_eq(s.gets_blocked, 1);
    n = read_rows(rows);
    assert_rows_sum(&s, rows, n);
    /* Rows: the main thread made nothing and ran nothing (no row), the owner
     * ran the task, the getter blocked and slept. */
    ck_assert_int_eq(n, 2);
    ck_assert_uint_eq(rows[0].run_inline, 1);
    ck_assert_uint_eq(rows[1].gets_blocked, 1);
    ck_assert_uint_ge(rows[1].sleeps, 1);
    ck_assert_uint_eq(rows[1].executed, 0);
    sf_shutdown();
}
END_TEST

/* Busy time covers an outermost task and what nests in it once. */
static void *sleepy_child(void *arg)
{
    tu_sleep_ms(100);
    return arg;
}

static void *sleepy_parent(void *arg)
{
    sf_future *c = sf_do(sleepy_child, arg);
    void *r = sf_get(c);
    sf_release(c);
    return r;
}

START_TEST(busy_time_counts_nested_tasks_once)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    /* The runtime's clock (CLOCK_MONOTONIC) read around the whole get,
     * which runs the parent and, nested in it, the child. */
    double t0 = tu_now_ms();
    sf_future *f = sf_do(sleepy_parent, (void *)3L);
    ck_assert_int_eq((long)sf_get(f), 3);
    double outer_ns = (tu_now_ms() - t0) * 1e6;
    sf_release(f);
    sf_thread_stats rows[MAX_ROWS];
    ck_assert_int_eq(read_rows(rows), 1);
    ck_assert_uint_eq(rows[0].executed, 2);
    /* 100 ms asleep in the child, nested in the parent: counted once, busy
     * time lies within the get that ran both; counted twice, it would
     * exceed it by the child's 100 ms. Bounds by order, not by speed: a
     * loaded machine stretches the get and the busy time alike. */
    ck_assert_uint_ge(rows[0].busy_ns, 100000000ull);
    ck_assert_msg((double)rows[0].busy_ns <= outer_ns, "busy %llu ns within a get of %.0f ns",
                  (unsigned long long)rows[0].busy_ns, outer_ns);
    ck_assert_uint_eq(rows[0].avg_task_ns, rows[0].busy_ns / 2);
    sf_shutdown();
}
END_TEST

/* The row of thread id, which the caller knows is there. */
static const sf_thread_stats *row_of_id(const sf_thread_stats *rows, int n, int id)
{
    for (int i = 0; i < n; i++)
        if (rows[i].id == id)
            return &rows[i];
    ck_abort_msg("no row for thread %d", id);
    return NULL;
}

/* A plain thread (no libsf call before it) sets a promise after ms. */
struct late_set {
    sf_future *p;
    long ms;
    pthread_t t;
};

static void *late_setter(void *arg)
{
    struct late_set *l = arg;
    tu_sleep_ms(l->ms);
    ck_assert_int_eq(sf_promise_set(l->p, (void *)7L), 0);
    return NULL;
}

static void *get_promise(void *p) { return sf_get(p); }

/* A task asleep ~300 ms in a get of a promise that a plain thread sets:
 * the sleep is its thread's asleep_ns, its busy time leaves the sleep out
 * (it was counted whole), and its CPU time is small. Bounds by order, not
 * by speed: the busy and the asleep time add up to no more than the get
 * that ran the task (counted whole, the busy time alone would fill it), and
 * the CPU time stays under half the sleep. How much of the task is awake
 * is the machine's: a loaded one stretches the get's spinning and
 * yielding, which is busy time, before it sleeps. */
START_TEST(sleep_in_a_get_is_not_busy)
{
    tu_env_threads(_i + 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    int me = sf_thread_index();
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    double t0 = tu_now_ms();
    struct late_set l = {p, 300, 0};
    ck_assert_int_eq(pthread_create(&l.t, NULL, late_setter, &l), 0);
    /* Plain code's get claims its task before it submits: it runs here. */
    sf_future *f = sf_do(get_promise, p);
    ck_assert_ptr_eq(sf_get(f), (void *)7L);
    double get_ns = (tu_now_ms() - t0) * 1e6;
    pthread_join(l.t, NULL);
    sf_release(f);
    sf_release(p);
    sf_thread_stats rows[MAX_ROWS];
    int n = read_rows(rows);
    const sf_thread_stats *r = row_of_id(rows, n, me);
    ck_assert_uint_eq(r->executed, 1);
    ck_assert_uint_ge(r->sleeps, 1);
    /* The setter waited 300 ms from before the task began. */
    ck_assert_msg(r->asleep_ns >= 150000000ull, "asleep %llu ns of a 300 ms wait",
                  (unsigned long long)r->asleep_ns);
    ck_assert_msg((double)(r->busy_ns + r->asleep_ns) <= get_ns,
                  "busy %llu + asleep %llu ns within a get of %.0f ns",
                  (unsigned long long)r->busy_ns, (unsigned long long)r->asleep_ns, get_ns);
    ck_assert_uint_gt(r->cpu_ns, 0);
    ck_assert_msg(r->cpu_ns < r->asleep_ns / 2, "CPU %llu ns while asleep %llu ns",
                  (unsigned long long)r->cpu_ns, (unsigned long long)r->asleep_ns);
    /* A worker idle all along sleeps for want of work, in no wait. */
    for (int i = 0; i < n; i++)
        if (rows[i].is_worker)
            ck_assert_uint_eq(rows[i].asleep_ns, 0);
    sf_shutdown();
}
END_TEST

/* Spends ms of its thread's CPU time. */
static void burn_cpu(long ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static void *burn_task(void *arg)
{
    burn_cpu((long)arg);
    return arg;
}

/* A thread of the program: 3 promises, 3 timed waits that time out on one
 * of them, and a task that burns 30 ms of CPU; its index, then it exits. */
static void *timeouts_thread(void *arg)
{
    (void)arg;
    sf_future *q[3];
    for (int k = 0; k < 3; k++)
        ck_assert_ptr_nonnull(q[k] = sf_promise());
    void *v;
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(sf_wait_for(q[0], &v, 0.01), ETIMEDOUT);
    sf_future *f = sf_do(burn_task, (void *)30L);
    ck_assert_ptr_eq(sf_get(f), (void *)30L);
    sf_release(f);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(sf_promise_set(q[k], NULL), 0);
        sf_release(q[k]);
    }
    return (void *)(long)sf_thread_index();
}

/* Timeouts and promises, exact, each in the row of the thread that waited
 * or made them - an exited thread's row too, which keeps its CPU time. */
START_TEST(timeouts_and_promises_by_thread)
{
    tu_env_threads(_i + 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    int me = sf_thread_index();
    /* The main thread: 2 promises; one sf_wait_any and one
     * sf_batch_wait_for that time out (a batch task waits for b). */
    sf_future *a = sf_promise(), *b = sf_promise();
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    int which = -1;
    ck_assert_int_eq(sf_wait_any(&a, 1, 0.01, &which), ETIMEDOUT);
    sf_batch *bt = sf_batch_new();
    ck_assert_ptr_nonnull(bt);
    sf_future *bf = sf_batch_do(bt, get_promise, b);
    ck_assert_ptr_nonnull(bf);
    errno = 0;
    ck_assert_int_eq(sf_batch_wait_for(bt, 0.01), -1);
    ck_assert_int_eq(errno, ETIMEDOUT);
    ck_assert_int_eq(sf_promise_set(b, (void *)3L), 0);
    ck_assert_int_eq(sf_batch_wait(bt), 0);
    ck_assert_ptr_eq(sf_get(bf), (void *)3L);
    sf_release(bf);
    sf_batch_close(bt);
    ck_assert_int_eq(sf_promise_set(a, NULL), 0);
    sf_release(a);
    sf_release(b);
    /* A thread of the program, gone when the rows are read. */
    pthread_t t;
    void *id;
    ck_assert_int_eq(pthread_create(&t, NULL, timeouts_thread, NULL), 0);
    ck_assert_int_eq(pthread_join(t, &id), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.timeouts, 5);
    ck_assert_uint_eq(s.promises, 5);
    sf_thread_stats rows[MAX_ROWS];
    int n = read_rows(rows);
    const sf_thread_stats *m = row_of_id(rows, n, me);
    ck_assert_uint_eq(m->timeouts, 2);
    ck_assert_uint_eq(m->promises, 2);
    const sf_thread_stats *o = row_of_id(rows, n, (int)(long)id);
    ck_assert_int_eq(o->is_worker, 0);
    ck_assert_uint_eq(o->timeouts, 3);
    ck_assert_uint_eq(o->promises, 3);
    /* Its 30 ms of CPU, kept at its exit. */
    ck_assert_msg(o->cpu_ns >= 30000000ull, "an exited thread's CPU time: %llu ns",
                  (unsigned long long)o->cpu_ns);
    for (int i = 0; i < n; i++)
        if (rows[i].is_worker) {
            ck_assert_uint_eq(rows[i].timeouts, 0);
            ck_assert_uint_eq(rows[i].promises, 0);
        }
    /* The main thread's clock, read live: 30 ms more after a burn. */
    uint64_t before = m->cpu_ns;
    burn_cpu(30);
    n = read_rows(rows);
    m = row_of_id(rows, n, me);
    ck_assert_msg(m->cpu_ns >= before + 30000000ull, "CPU %llu ns, then %llu ns",
                  (unsigned long long)before, (unsigned long long)m->cpu_ns);
    sf_shutdown();
}
END_TEST

/* The table: one header line, the column line, a row per thread, a total. */
static void check_table(const char *out, int threads, int nrows, uint64_t created)
{
    char want[200];
    snprintf(want, sizeof want,
             "libsf stats: %d thread%s (%d pool worker%s), %llu tasks created, %llu run, "
             "0 discarded, 0 cancelled\n",
             threads, threads == 1 ? "" : "s", threads - 1, threads - 1 == 1 ? "" : "s",
             (unsigned long long)created, (unsigned long long)created);
    const char *h = strstr(out, "libsf stats: ");
    ck_assert_msg(h != NULL, "no table in: %s", out);
    ck_assert_int_eq(tu_count_prefixed(out, "libsf stats: "), 1);
    ck_assert_msg(strncmp(h, want, strlen(want)) == 0, "header: %s\nwanted: %s", h, want);
    const char *line = h + strlen(want);
    ck_assert_msg(strncmp(line, "thread kind ", 12) == 0, "columns: %s", line);
    size_t width = strcspn(line, "\n");
    /* The time columns end the line, with the two counts. */
    static const char cols[] = " busy_ms    avg_ns  asleep_ms     cpu_ms timeouts promises\n";
    const char *at = strstr(line, cols);
    ck_assert_msg(at != NULL && at + strlen(cols) == line + width + 1, "columns: %.*s",
                  (int)width, line);
    int rows = 0, workers = 0, total = 0;
    uint64_t total_executed = 0, sum_executed = 0;
    for (line += width + 1; *line != '\0'; line += strcspn(line, "\n") + 1) {
        size_t len = strcspn(line, "\n");
        if (len == 0)
            break;
        ck_assert_uint_eq(len, width); /* aligned: every line as wide */
        char who[16], kind[16];
        unsigned long long executed;
        if (sscanf(line, "%15s %15s %llu", who, kind, &executed) == 3 &&
            strcmp(who, "total") != 0) {
            rows++;
            workers += strcmp(kind, "worker") == 0;
            sum_executed += executed;
        } else {
            ck_assert_int_eq(sscanf(line, " total %llu", &executed), 1);
            total++;
            total_executed = executed;
            /* The last two columns: one timed-out wait, one promise (the
             * caller's). */
            unsigned long long timeouts, promises;
            const char *end = line + len;
            const char *p2 = end;
            while (p2 > line && p2[-1] != ' ')
                p2--;
            const char *p1 = p2;
            while (p1 > line && p1[-1] == ' ')
                p1--;
            while (p1 > line && p1[-1] != ' ')
                p1--;
            ck_assert_int_eq(sscanf(p1, "%llu %llu", &timeouts, &promises), 2);
            ck_assert_uint_eq(timeouts, 1);
            ck_assert_uint_eq(promises, 1);
        }
    }
    ck_assert_int_eq(rows, nrows);
    ck_assert_int_eq(workers, threads - 1);
    ck_assert_int_eq(total, 1);
    ck_assert_uint_eq(total_executed, created);
    ck_assert_uint_eq(sum_executed, created);
}

static void run_fib_and_shutdown(int threads, int expect_table)
{
    ck_assert_int_eq((long)tu_fib((void *)15L), tu_fib_exact(15));
    /* A promise, and a timed wait on it that times out (the table's last
     * two columns); then it is kept, got and released. */
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    void *v;
    ck_assert_int_eq(sf_wait_for(p, &v, 0.001), ETIMEDOUT);
    ck_assert_int_eq(sf_promise_set(p, (void *)5L), 0);
    ck_assert_ptr_eq(sf_get(p), (void *)5L);
    sf_release(p);
    int nrows = sf_stats_read_threads(NULL, 0);
    ck_assert_int_eq(nrows, threads); /* main thread and the workers */
    struct tu_capture c;
    tu_capture_begin(&c);
    sf_shutdown();
    char *out = tu_capture_end(&c);
    if (expect_table)
        check_table(out, threads, nrows, tu_fib_tasks(15));
    else
        ck_assert_msg(out[0] == '\0', "unexpected output: %s", out);
    free(out);
}

static const char *const on_values[] = {"1", "true", "YES", "On"};
static const char *const off_values[] = {"0", "FALSE", "no", "off"};

START_TEST(sf_stats_prints_the_table_at_shutdown)
{
    int threads = _i % 2 + 1;
    tu_env_threads(threads);
    setenv("SF_STATS", on_values[_i], 1);
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_int_eq(sf_init(NULL), 0);
    char *out = tu_capture_end(&c);
    ck_assert_str_eq(out, "");
    free(out);
    run_fib_and_shutdown(threads, 1);
}
END_TEST

START_TEST(stats_off_prints_nothing)
{
    tu_env_threads(2);
    if (_i < 4)
        setenv("SF_STATS", off_values[_i], 1);
    else
        unsetenv("SF_STATS");
    ck_assert_int_eq(sf_init(NULL), 0);
    run_fib_and_shutdown(2, 0);
}
END_TEST

START_TEST(bad_sf_stats_value_says_so_once)
{
    tu_env_threads(2);
    setenv("SF_STATS", "sometimes", 1);
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_int_eq(sf_init(NULL), 0);
    char *out = tu_capture_end(&c);
    ck_assert_int_eq(tu_count_lines(out), 1);
    ck_assert_ptr_nonnull(strstr(out, "SF_STATS='sometimes'"));
    ck_assert_ptr_nonnull(strstr(out, "statistics stay off"));
    free(out);
    run_fib_and_shutdown(2, 0);
}
END_TEST

START_TEST(config_stats_wins_over_the_environment)
{
    tu_env_threads(2);
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    /* On in the config, a bad value in the environment: not even read. */
    setenv("SF_STATS", _i == 0 ? "bogus" : "0", 1);
    cfg.stats = SF_STATS_ON;
    if (_i == 2) {
        setenv("SF_STATS", "1", 1);
        cfg.stats = SF_STATS_OFF;
    }
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_int_eq(sf_init(&cfg), 0);
    char *out = tu_capture_end(&c);
    ck_assert_str_eq(out, "");
    free(out);
    run_fib_and_shutdown(2, cfg.stats == SF_STATS_ON);
}
END_TEST

START_TEST(errors)
{
    tu_env_threads(2);
    sf_thread_stats rows[4];
    errno = 0;
    ck_assert_int_eq(sf_stats_read_threads(rows, 4), -1); /* not running */
    ck_assert_int_eq(errno, ESRCH);
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.stats = SF_STATS_OFF + 1;
    errno = 0;
    ck_assert_int_eq(sf_init(&cfg), -1);
    ck_assert_int_eq(errno, EINVAL);
    cfg.stats = -1;
    ck_assert_int_eq(sf_init(&cfg), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(sf_init(NULL), 0);
    errno = 0;
    ck_assert_int_eq(sf_stats_read_threads(NULL, 1), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_stats_read_threads(rows, -1), -1);
    ck_assert_int_eq(errno, EINVAL);
    /* Fewer rows than threads: fills max, returns how many there are. */
    ck_assert_int_eq(sf_stats_read_threads(rows, 0), 1); /* the worker */
    memset(rows, 0xa5, sizeof rows);
    ck_assert_int_eq((long)tu_fib((void *)10L), tu_fib_exact(10));
    ck_assert_int_eq(sf_stats_read_threads(rows, 1), 2);
    ck_assert_int_eq(rows[0].id, 0);
    ck_assert_int_eq(rows[1].id, (int)0xa5a5a5a5); /* untouched */
    sf_shutdown();
    errno = 0;
    ck_assert_int_eq(sf_stats_read_threads(rows, 4), -1);
    ck_assert_int_eq(errno, ESRCH);
}
END_TEST

static Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("stats");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, rows_sum_to_totals, 0, 2);
    tcase_add_test(tc, worker_rows_show_pool_executions);
    tcase_add_test(tc, queued_counts_pending_tasks);
    tcase_add_test(tc, asleep_counts_a_thread_asleep_in_a_get);
    tcase_add_test(tc, busy_time_counts_nested_tasks_once);
    tcase_add_loop_test(tc, sleep_in_a_get_is_not_busy, 0, 2);
    tcase_add_loop_test(tc, timeouts_and_promises_by_thread, 0, 2);
    tcase_add_loop_test(tc, sf_stats_prints_the_table_at_shutdown, 0, 4);
    tcase_add_loop_test(tc, stats_off_prints_nothing, 0, 5);
    tcase_add_test(tc, bad_sf_stats_value_says_so_once);
    tcase_add_loop_test(tc, config_stats_wins_over_the_environment, 0, 3);
    tcase_add_test(tc, errors);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(stats_suite)
