/*
 * test_cancel_tree.c - a cancellation reaches the cancelled task's whole
 * tree (cancel.h; docs/failures.md, Cancellation): the tasks it makes with
 * sf_do and sf_task_do, transitively, on every thread - running ones see
 * sf_cancelled() == 1, queued ones never start and their getters see
 * ECANCELED - and the bodies of its loops on every thread, which stop
 * handing out indices; a sibling tree, a batch's tasks and loops nobody
 * cancelled go on untouched.
 *
 * Bodies and tasks wait for the cancellation with a deadline (WAIT_MS) and
 * count a timeout, so a broken runtime fails instead of hanging. At
 * SF_THREADS 1, 2 and 4.
 */
#include "testutil.h"

#ifndef SFTRACE_BIN
#error "SFTRACE_BIN, the path of the built tools/sftrace/sftrace, comes from tests/local.mk"
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAIT_MS 10000L
#define SETTLE_MS 1000L
#define N 100000L

static const int thread_counts[] = {1, 2, 4};

/* ---- what the bodies saw ---- */

static atomic_int started, saw, timeouts, not_cancelled, after_cancel;
static atomic_int cancel_done;
#define MAX_SEEN 64
static pthread_t seen_on[MAX_SEEN], ran_on[MAX_SEEN];
static atomic_int nseen, nran;
static pthread_mutex_t note_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(pthread_t *set, atomic_int *n)
{
    pthread_mutex_lock(&note_lock);
    int k = atomic_load(n);
    for (int i = 0; i < k; i++)
        if (pthread_equal(set[i], pthread_self())) {
            pthread_mutex_unlock(&note_lock);
            return;
        }
    if (k < MAX_SEEN) {
        set[k] = pthread_self();
        atomic_store(n, k + 1);
    }
    pthread_mutex_unlock(&note_lock);
}

/* A task or loop body of the tree: notes where it ran and that it started,
 * then waits until it sees the cancellation (true: noted in saw/seen_on)
 * or WAIT_MS pass (false: counted in timeouts). */
static bool ran_then_saw_cancel(void)
{
    note(ran_on, &nran);
    atomic_fetch_add(&started, 1);
    double end = tu_now_ms() + (double)WAIT_MS;
    while (tu_now_ms() < end) {
        if (sf_cancelled()) {
            atomic_fetch_add(&saw, 1);
            note(seen_on, &nseen);
            return true;
        }
        tu_sleep_ms(1);
    }
    atomic_fetch_add(&timeouts, 1);
    return false;
}

/* Runs until it sees the cancellation (or WAIT_MS pass). */
static void polling_body(long i, void *ctx)
{
    (void)i;
    (void)ctx;
    if (atomic_load(&cancel_done))
        atomic_fetch_add(&after_cancel, 1);
    if (ran_then_saw_cancel() && sf_cancelled() != 1) /* it stays asked */
        atomic_fetch_add(&not_cancelled, 1);
}

/* An inner loop of one index per thread, in each outer body. */
static void outer_body(long i, void *ctx)
{
    (void)i;
    long width = (long)ctx;
    int rc = sf_for(0, width, polling_body, NULL);
    if (rc != -1 || errno != ECANCELED)
        atomic_fetch_add(&not_cancelled, 1);
}

struct loop_job {
    int nested, width;
    int rc, err;
};

/* The task that is cancelled: runs the loop and returns what it got; it
 * never asks sf_cancelled() itself, so it keeps its result. */
static void *runs_loop(void *arg)
{
    struct loop_job *j = arg;
    errno = 0;
    if (j->nested)
        j->rc = sf_for(0, N, outer_body, (void *)(long)j->width);
    else
        j->rc = sf_for(0, N, polling_body, NULL);
    j->err = errno;
    return (void *)7L;
}

struct canceller {
    sf_future *f;
    int want_started;
    int rc;
};

/* Waits until want_started bodies run (every thread busy; or SETTLE_MS,
 * since a thread blocked outside the loop's region may never join it),
 * then cancels f. */
static void *cancel_once_started(void *arg)
{
    struct canceller *c = arg;
    tu_wait_count(&started, c->want_started, SETTLE_MS);
    tu_sleep_ms(20); /* let every thread settle into its body */
    c->rc = sf_cancel(c->f);
    atomic_store(&cancel_done, 1);
    return NULL;
}

/*
 * A task running sf_for is cancelled while its bodies run: every body
 * running then, on every thread that ran one, sees sf_cancelled() == 1,
 * none times out, few start afterwards, and sf_for returns -1/ECANCELED.
 * _i: bit 0 nested (the bodies are those of a loop inside each body of the
 * task's loop), bits 1-2 the thread count.
 */
START_TEST(loop_bodies_on_every_thread_see_the_cancel)
{
    int nested = _i & 1, threads = thread_counts[_i >> 1];
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    struct loop_job j = {nested, threads, 0, 0};
    sf_future *f = sf_do(runs_loop, &j);
    ck_assert_ptr_nonnull(f);
    struct canceller c = {f, threads, 7};
    pthread_t ct;
    ck_assert_int_eq(pthread_create(&ct, NULL, cancel_once_started, &c), 0);
    void *r = NULL;
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_ptr_eq(r, (void *)7L);
    ck_assert_int_eq(pthread_join(ct, NULL), 0);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_int_eq(j.rc, -1);
    ck_assert_int_eq(j.err, ECANCELED);
    ck_assert_int_eq(atomic_load(&timeouts), 0);
    ck_assert_int_eq(atomic_load(&not_cancelled), 0);
    /* Every body saw it: those running at the cancel, and the few that
     * started after it (at most one grain per participant in flight, a few
     * loops' worth when nested). */
    ck_assert_int_eq(atomic_load(&saw), atomic_load(&started));
    ck_assert_int_le(atomic_load(&after_cancel), 4 * threads * (nested ? threads + 1 : 1));
    ck_assert_int_lt(atomic_load(&started), N / 2);
    /* On every thread that ran a body. */
    ck_assert_int_eq(atomic_load(&nseen), atomic_load(&nran));
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* ---- tasks made with sf_do and sf_task_do ---- */

/* A task made by the tree: 1 if it saw the cancellation (WAIT_MS at most). */
static void *waits_for_cancel(void *arg)
{
    (void)arg;
    return (void *)(long)ran_then_saw_cancel();
}

/* A task of the tree says it runs (`started`, which the canceller waits
 * for), then waits until it is cancelled (WAIT_MS at most). */
static void started_then_wait_for_cancel(void)
{
    atomic_fetch_add(&started, 1);
    double end = tu_now_ms() + (double)WAIT_MS;
    while (!sf_cancelled() && tu_now_ms() < end)
        tu_sleep_ms(1);
}

static atomic_int child_runs;
static void *counts_a_run(void *arg)
{
    atomic_fetch_add(&child_runs, 1);
    return arg;
}

#define KIDS 16
struct queued_job {
    int local; /* sf_task_do, else sf_do */
    int rcs[KIDS];
    int made, polled_after;
};

/*
 * The cancelled task: queues KIDS children, says so, waits until it is
 * cancelled, then gets them. None has started - this thread never got
 * before, so none was submitted - and none may: each get fails ECANCELED.
 */
static void *queues_then_gets(void *arg)
{
    struct queued_job *j = arg;
    sf_task t[KIDS];
    sf_future *f[KIDS];
    for (int k = 0; k < KIDS; k++) {
        if (j->local)
            j->made += sf_task_do(&t[k], counts_a_run, (void *)(long)(k + 1)) == 0;
        else
            j->made += (f[k] = sf_do(counts_a_run, (void *)(long)(k + 1))) != NULL;
    }
    started_then_wait_for_cancel();
    for (int k = 0; k < KIDS; k++) {
        errno = 0;
        void *r = j->local ? sf_task_get(&t[k]) : sf_get(f[k]);
        j->rcs[k] = r == NULL ? errno : -1;
        if (!j->local)
            sf_release(f[k]);
    }
    j->polled_after = sf_cancelled();
    return (void *)7L;
}

/* Waits for the future *arg on a thread of its own: one that claims a task
 * queued elsewhere and runs it in place, and helps with nothing else. */
static void *wait_here(void *arg)
{
    return (void *)(long)sf_wait(arg, NULL);
}

/*
 * Children queued by a task and not started when it is cancelled never run:
 * their gets see ECANCELED, the statistics count them cancelled. The task
 * runs on a thread that waits for it alone, and this thread waits without
 * libsf (a blocked get here would help, and might start a child before the
 * cancellation). _i: bit 0 sf_task_do (else sf_do), bits 1-2 the thread
 * count.
 */
START_TEST(queued_children_never_run)
{
    int local = _i & 1, threads = thread_counts[_i >> 1];
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&child_runs, 0);
    struct queued_job j = {.local = local};
    sf_future *f = sf_do(queues_then_gets, &j);
    ck_assert_ptr_nonnull(f);
    struct canceller c = {f, 1, 7};
    pthread_t ct;
    ck_assert_int_eq(pthread_create(&ct, NULL, cancel_once_started, &c), 0);
    /* It asked: it ends cancelled. */
    ck_assert_ptr_eq(tu_run_on_thread(wait_here, f, 0), (void *)(long)ECANCELED);
    ck_assert_int_eq(pthread_join(ct, NULL), 0);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_int_eq(j.made, KIDS);
    for (int k = 0; k < KIDS; k++)
        ck_assert_int_eq(j.rcs[k], ECANCELED);
    ck_assert_int_eq(j.polled_after, 1);
    ck_assert_int_eq(atomic_load(&child_runs), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.cancelled, KIDS);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/*
 * The tree: root (the task cancelled) makes and gets `child`, which makes
 * the grandchild G and a holder H and gets H first. At one thread H returns
 * at once and G runs inline, two gets below the root; at more, the get of
 * H submits G, a worker takes it, and H holds its thread until G has
 * started there. Either way G waits for the cancellation of the root. With
 * sf_task_do every task below the root is in caller storage, and G runs on
 * the worker as the future it was promoted to.
 */
static int tree_threads, tree_local;
static pthread_t child_thread, g_thread;
static atomic_int g_started;
static int child_saw = -1, child_g_err = -1;

static void *grandchild(void *arg)
{
    g_thread = pthread_self();
    atomic_store(&g_started, 1);
    return waits_for_cancel(arg);
}

static void *nothing(void *arg) { return arg; }

/* Holds its thread until G started elsewhere. Its gets answer the workers'
 * requests: a task in caller storage reaches another thread only when its
 * owner publishes it (docs/caller-storage.md). */
static void *holder(void *arg)
{
    (void)arg;
    double end = tu_now_ms() + (double)WAIT_MS;
    while (tree_threads > 1 && !atomic_load(&g_started) && tu_now_ms() < end) {
        sf_task t;
        ck_assert_int_eq(sf_task_do(&t, nothing, (void *)1L), 0);
        ck_assert_ptr_eq(sf_task_get(&t), (void *)1L);
        tu_sleep_ms(1);
    }
    return (void *)3L;
}

static void *child(void *arg)
{
    (void)arg;
    child_thread = pthread_self();
    void *g, *h;
    if (tree_local) {
        sf_task tg, th;
        ck_assert_int_eq(sf_task_do(&tg, grandchild, NULL), 0);
        ck_assert_int_eq(sf_task_do(&th, holder, NULL), 0);
        h = sf_task_get(&th);
        errno = 0;
        g = sf_task_get(&tg);
    } else {
        sf_future *fg = sf_do(grandchild, NULL), *fh = sf_do(holder, NULL);
        ck_assert(fg != NULL && fh != NULL);
        h = sf_get(fh);
        errno = 0;
        g = sf_get(fg);
        sf_release(fh);
        sf_release(fg);
    }
    ck_assert_ptr_eq(h, (void *)3L);
    /* G saw it, so G ended cancelled: its get fails. */
    child_g_err = g == NULL ? errno : 0;
    child_saw = sf_cancelled();
    return (void *)5L;
}

static int root_child_err = -1;
static void *root(void *arg)
{
    (void)arg;
    void *r;
    errno = 0;
    if (tree_local) {
        sf_task t;
        ck_assert_int_eq(sf_task_do(&t, child, NULL), 0);
        r = sf_task_get(&t);
    } else {
        sf_future *c = sf_do(child, NULL);
        ck_assert_ptr_nonnull(c);
        r = sf_get(c);
        sf_release(c);
    }
    /* The child asked, so it ended cancelled. */
    root_child_err = r == NULL ? errno : 0;
    return (void *)9L;
}

/* Cancels f once the grandchild runs. */
static void *cancel_once_g_started(void *arg)
{
    struct canceller *c = arg;
    if (!tu_wait_flag(&g_started, WAIT_MS))
        return NULL; /* c->rc stays 7: the test says so */
    tu_sleep_ms(20);
    c->rc = sf_cancel(c->f);
    return NULL;
}

/* _i: bit 0 sf_task_do (else sf_do), bits 1-2 the thread count. */
START_TEST(a_grandchild_two_gets_below_sees_it)
{
    tree_local = _i & 1;
    tree_threads = thread_counts[_i >> 1];
    tu_env_threads(tree_threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(root, NULL);
    ck_assert_ptr_nonnull(f);
    struct canceller c = {f, 1, 7};
    pthread_t ct;
    ck_assert_int_eq(pthread_create(&ct, NULL, cancel_once_g_started, &c), 0);
    void *r = NULL;
    /* The root never asks: it keeps its result. */
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_int_eq(pthread_join(ct, NULL), 0);
    ck_assert_msg(c.rc == 0, "setup: the grandchild never ran (sf_cancel gave %d)", c.rc);
    ck_assert_ptr_eq(r, (void *)9L);
    ck_assert_int_eq(root_child_err, ECANCELED);
    ck_assert_int_eq(atomic_load(&saw), 1);
    ck_assert_int_eq(atomic_load(&timeouts), 0);
    ck_assert_int_eq(child_g_err, ECANCELED);
    ck_assert_int_eq(child_saw, 1);
    if (tree_threads > 1)
        ck_assert_msg(!pthread_equal(g_thread, child_thread),
                      "setup: the grandchild ran on its parent's thread");
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* The same at two threads, traced: every child's Discard is in the trace,
 * and sftrace --check accepts it. */
START_TEST(queued_children_traced)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "cancel-tree-trace");
    tu_env_threads(2);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    struct queued_job j = {.local = _i};
    sf_future *f = sf_do(queues_then_gets, &j);
    struct canceller c = {f, 1, 7};
    pthread_t ct;
    ck_assert_int_eq(pthread_create(&ct, NULL, cancel_once_started, &c), 0);
    ck_assert_ptr_eq(tu_run_on_thread(wait_here, f, 0), (void *)(long)ECANCELED);
    ck_assert_int_eq(pthread_join(ct, NULL), 0);
    ck_assert_int_eq(atomic_load(&child_runs), 0);
    sf_release(f);
    sf_shutdown();
    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    int discards = 0;
    for (const char *p = text; (p = strstr(p, "\tDiscard\t")) != NULL; p++)
        discards++;
    ck_assert_int_eq(discards, KIDS);
    free(text);
    tu_sftrace_check(SFTRACE_BIN, NULL, path);
    unlink(path);
}
END_TEST

/* ---- what a cancellation does not reach ---- */

/* A batch task belongs to its batch: the task that added it being
 * cancelled does not reach it. It runs, and sees nothing for 300 ms. */
static void *batch_member(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    double end = tu_now_ms() + 300.0;
    while (tu_now_ms() < end) {
        if (sf_cancelled())
            return (void *)1L;
        tu_sleep_ms(1);
    }
    return (void *)2L;
}

struct batch_job {
    sf_batch *b;
    sf_future *member;
};

static void *adds_to_batch(void *arg)
{
    struct batch_job *j = arg;
    j->member = sf_batch_do(j->b, batch_member, NULL);
    ck_assert_ptr_nonnull(j->member);
    started_then_wait_for_cancel();
    return NULL;
}

START_TEST(a_batch_task_belongs_to_its_batch)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    struct batch_job j = {sf_batch_new(), NULL};
    ck_assert_ptr_nonnull(j.b);
    sf_future *f = sf_do(adds_to_batch, &j);
    struct canceller c = {f, 1, 7};
    pthread_t ct;
    ck_assert_int_eq(pthread_create(&ct, NULL, cancel_once_started, &c), 0);
    ck_assert_int_eq(sf_wait(f, NULL), ECANCELED);
    ck_assert_int_eq(pthread_join(ct, NULL), 0);
    ck_assert_int_eq(c.rc, 0);
    void *r = NULL;
    ck_assert_int_eq(sf_wait(j.member, &r), 0);
    ck_assert_ptr_eq(r, (void *)2L);
    sf_release(j.member);
    ck_assert_int_eq(sf_batch_wait(j.b), 0);
    sf_batch_close(j.b);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* ---- a handed future stays in its maker's tree ---- */

/*
 * The maker T hands its queued child C to another task U, which gets it
 * after T was cancelled (while T still runs): C never starts, U's get sees
 * ECANCELED. C belongs to T's tree, whoever gets it; U was not cancelled.
 */
static _Atomic(sf_future *) handed;
static atomic_int t_saw, u_done, handed_runs;
static int u_rc = -1, u_asked = -1;

static void *handed_child(void *arg)
{
    atomic_fetch_add(&handed_runs, 1);
    return arg;
}

static void *hands_over(void *arg)
{
    (void)arg;
    sf_future *c = sf_do(handed_child, (void *)1L);
    ck_assert_ptr_nonnull(c);
    atomic_store(&handed, c);
    started_then_wait_for_cancel();
    atomic_store(&t_saw, 1);
    /* Runs on until U is done: a maker that returned would cut the chain. */
    (void)tu_wait_flag(&u_done, WAIT_MS);
    return NULL;
}

static void *gets_handed(void *arg)
{
    (void)arg;
    ck_assert_msg(tu_wait_flag(&t_saw, WAIT_MS), "setup: the maker never saw its cancellation");
    sf_future *c = atomic_load(&handed);
    errno = 0;
    void *r = sf_get(c);
    u_rc = r == NULL ? errno : 0;
    u_asked = sf_cancelled();
    sf_release(c);
    atomic_store(&u_done, 1);
    return (void *)4L;
}

START_TEST(a_handed_future_stays_in_its_makers_tree)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *t = sf_do(hands_over, NULL), *u = sf_do(gets_handed, NULL);
    ck_assert(t != NULL && u != NULL);
    struct canceller c = {t, 1, 7};
    pthread_t ct, tt;
    ck_assert_int_eq(pthread_create(&ct, NULL, cancel_once_started, &c), 0);
    ck_assert_int_eq(pthread_create(&tt, NULL, wait_here, t), 0);
    ck_assert_ptr_eq(tu_run_on_thread(wait_here, u, 0), (void *)0L); /* U keeps its value */
    void *trc = NULL;
    ck_assert_int_eq(pthread_join(tt, &trc), 0);
    ck_assert_int_eq(pthread_join(ct, NULL), 0);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_ptr_eq(trc, (void *)(long)ECANCELED); /* T asked: it ends cancelled */
    ck_assert_int_eq(u_rc, ECANCELED);
    ck_assert_int_eq(u_asked, 0);
    ck_assert_int_eq(atomic_load(&handed_runs), 0);
    sf_release(t);
    sf_release(u);
    sf_shutdown();
}
END_TEST

/* ---- a link names one incarnation ---- */

/*
 * A task left running by a maker that returned: the maker's future is
 * released and recycled at once (free lists are last in, first out) into a
 * task that is then cancelled. The orphan's link names the maker's old
 * incarnation, so the cancellation of the new one never reaches it.
 */
static atomic_int orphan_started, orphan_stop, orphan_done;
static int orphan_saw = -1;
static sf_future *maker_future;

static void *orphan(void *arg)
{
    (void)arg;
    atomic_store(&orphan_started, 1);
    double end = tu_now_ms() + (double)WAIT_MS;
    while (!atomic_load(&orphan_stop) && tu_now_ms() < end) {
        if (sf_cancelled()) {
            orphan_saw = 1;
            atomic_store(&orphan_done, 1);
            return NULL;
        }
        tu_sleep_ms(1);
    }
    orphan_saw = 0;
    atomic_store(&orphan_done, 1);
    return NULL;
}

static void *nothing_here(void *arg) { return arg; }

/* Makes the orphan, lets a worker start it (a get submits it), and returns
 * without getting it. */
static void *maker(void *arg)
{
    (void)arg;
    sf_future *c = sf_do(orphan, NULL), *d = sf_do(nothing_here, (void *)1L);
    ck_assert(c != NULL && d != NULL);
    ck_assert_ptr_eq(sf_get(d), (void *)1L);
    sf_release(d);
    ck_assert_msg(tu_wait_flag(&orphan_started, WAIT_MS), "setup: no worker started the orphan");
    sf_release(c); /* running: its runner frees it */
    return (void *)2L;
}

static void *recycled(void *arg)
{
    (void)arg;
    started_then_wait_for_cancel();
    return NULL;
}

START_TEST(a_recycled_maker_does_not_reach_its_orphan)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    maker_future = sf_do(maker, NULL);
    ck_assert_ptr_eq(sf_get(maker_future), (void *)2L);
    sf_future *old = maker_future;
    sf_release(maker_future);
    sf_future *n = sf_do(recycled, NULL);
    ck_assert_ptr_nonnull(n);
#ifndef SF_DEBUG
    /* The release build hands the same memory out again at once (a debug
     * build quarantines released futures: the check below still holds). */
    ck_assert_msg(n == old, "setup: the maker's future was not recycled");
#else
    (void)old;
#endif
    struct canceller c = {n, 1, 7};
    pthread_t ct;
    ck_assert_int_eq(pthread_create(&ct, NULL, cancel_once_started, &c), 0);
    ck_assert_ptr_eq(tu_run_on_thread(wait_here, n, 0), (void *)(long)ECANCELED);
    ck_assert_int_eq(pthread_join(ct, NULL), 0);
    ck_assert_int_eq(c.rc, 0);
    tu_sleep_ms(200); /* the orphan polls meanwhile */
    atomic_store(&orphan_stop, 1);
    ck_assert_msg(tu_wait_flag(&orphan_done, WAIT_MS), "the orphan never ended");
    ck_assert_int_eq(orphan_saw, 0);
    sf_release(n);
    sf_shutdown();
}
END_TEST

/* ---- hostile: many trees, cancelled at random, on many threads ---- */

#define STORM_THREADS 6
#define STORM_ROUNDS 40

/* fib with a mix of sf_do and sf_task_do; a node that sees a cancellation
 * returns -1, and -1 propagates. */
static void *storm_fib(void *arg)
{
    long n = (long)arg;
    if (sf_cancelled())
        return (void *)-1L;
    if (n < 2)
        return (void *)n;
    long a, b;
    if (n & 1) {
        sf_task t;
        ck_assert_int_eq(sf_task_do(&t, storm_fib, (void *)(n - 1)), 0);
        b = (long)storm_fib((void *)(n - 2));
        errno = 0;
        void *r = sf_task_get(&t);
        a = r == NULL && errno == ECANCELED ? -1 : (long)r;
    } else {
        sf_future *f = sf_do(storm_fib, (void *)(n - 1));
        ck_assert_ptr_nonnull(f);
        b = (long)storm_fib((void *)(n - 2));
        errno = 0;
        void *r = sf_get(f);
        a = r == NULL && errno == ECANCELED ? -1 : (long)r;
        sf_release(f);
    }
    return (void *)(a < 0 || b < 0 ? -1L : a + b);
}

static atomic_long storm_exact, storm_cancelled, storm_wrong;
static int storm_eager; /* roots in a batch: workers start them at once */

static void *storm_thread(void *arg)
{
    unsigned seed = (unsigned)(long)arg;
    sf_batch *b = storm_eager ? sf_batch_new() : NULL;
    ck_assert(!storm_eager || b != NULL);
    for (int round = 0; round < STORM_ROUNDS; round++) {
        seed = seed * 1103515245u + 12345u;
        long n = 14 + (long)((seed >> 16) % 6);
        int cancel = (seed >> 8) % 2;
        sf_future *f = b != NULL ? sf_batch_do(b, storm_fib, (void *)n) : sf_do(storm_fib, (void *)n);
        ck_assert_ptr_nonnull(f);
        if (cancel) {
            /* Cancelled before it starts, or while it runs on another
             * thread's help, or after: any of them is right. */
            if ((seed >> 4) % 2)
                tu_spin_us((double)((seed >> 20) % 200));
            ck_assert_int_ge(sf_cancel(f), 0);
        }
        void *v = NULL;
        int rc = sf_wait(f, &v);
        if (rc == 0 && (long)v == tu_fib_exact((int)n))
            atomic_fetch_add(&storm_exact, 1);
        else if ((rc == ECANCELED || (rc == 0 && (long)v == -1L)) && cancel)
            atomic_fetch_add(&storm_cancelled, 1);
        else
            atomic_fetch_add(&storm_wrong, 1);
        sf_release(f);
    }
    if (b != NULL) {
        ck_assert_int_eq(sf_batch_wait(b), 0);
        sf_batch_close(b);
    }
    return NULL;
}

/*
 * Six threads of the program each make 40 trees (fib 14 to 19, sf_do and
 * sf_task_do mixed) and cancel half of them at random moments. No tree
 * that nobody cancelled sees a cancellation (its value is exact), none
 * gives a wrong value, and the statistics add up. _i: bit 0 the roots are
 * batch tasks, which workers start at once, so most cancellations reach
 * running trees (else the roots are lazy: a cancel before the wait finds
 * them queued); bits 1-2 the thread count.
 */
START_TEST(cancel_storm)
{
    storm_eager = _i & 1;
    tu_env_threads(thread_counts[_i >> 1]);
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t t[STORM_THREADS];
    for (long k = 0; k < STORM_THREADS; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, storm_thread, (void *)(k + 1)), 0);
    for (int k = 0; k < STORM_THREADS; k++)
        ck_assert_int_eq(pthread_join(t[k], NULL), 0);
    ck_assert_int_eq(atomic_load(&storm_wrong), 0);
    ck_assert_int_eq(atomic_load(&storm_exact) + atomic_load(&storm_cancelled),
                     STORM_THREADS * STORM_ROUNDS);
    ck_assert_int_ge(atomic_load(&storm_exact), STORM_THREADS * STORM_ROUNDS / 2);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, s.run_inline + s.run_pool + s.run_stolen + s.discarded +
                                     s.cancelled + s.queued);
    ck_assert_uint_eq(s.queued, 0);
    sf_shutdown();
}
END_TEST

/* ---- an unrelated tree ---- */

static atomic_long other_ran, other_saw;
static atomic_int other_started;

static void counting_body(long i, void *ctx)
{
    (void)i;
    (void)ctx;
    atomic_store(&other_started, 1);
    atomic_fetch_add(&other_ran, 1);
    if (sf_cancelled())
        atomic_fetch_add(&other_saw, 1);
    /* Slow enough that the cancel of the other task comes meanwhile. */
    if (!atomic_load(&cancel_done))
        tu_spin_us(2);
}

static void *runs_counting_loop(void *arg)
{
    int *rc = arg;
    *rc = sf_for(0, N, counting_body, NULL);
    return NULL;
}

struct getter {
    sf_future *f;
    int rc;
};

static void *wait_on_thread(void *arg)
{
    struct getter *g = arg;
    g->rc = sf_wait(g->f, NULL);
    return NULL;
}

/*
 * Two tasks run loops at once, one on a foreign thread; the first is
 * cancelled: its loop ends ECANCELED, the other's runs every index, and
 * none of its bodies sees sf_cancelled() == 1. _i: the thread count.
 */
START_TEST(cancel_does_not_leak_to_a_sibling_tree)
{
    int threads = thread_counts[_i];
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    int other_rc = 7;
    sf_future *b = sf_do(runs_counting_loop, &other_rc);
    ck_assert_ptr_nonnull(b);
    struct getter gb = {b, 7};
    pthread_t bt;
    ck_assert_int_eq(pthread_create(&bt, NULL, wait_on_thread, &gb), 0);
    ck_assert_msg(tu_wait_flag(&other_started, WAIT_MS), "setup: the other loop never started");
    struct loop_job j = {0, threads, 0, 0};
    sf_future *a = sf_do(runs_loop, &j);
    ck_assert_ptr_nonnull(a);
    struct canceller c = {a, 1, 7};
    pthread_t ct;
    ck_assert_int_eq(pthread_create(&ct, NULL, cancel_once_started, &c), 0);
    ck_assert_int_eq(sf_wait(a, NULL), 0);
    ck_assert_int_eq(pthread_join(ct, NULL), 0);
    ck_assert_int_eq(pthread_join(bt, NULL), 0);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_int_eq(j.rc, -1);
    ck_assert_int_eq(j.err, ECANCELED);
    ck_assert_int_eq(gb.rc, 0);
    ck_assert_int_eq(other_rc, 0);
    ck_assert_int_eq(atomic_load(&other_ran), N);
    ck_assert_int_eq(atomic_load(&other_saw), 0);
    ck_assert_int_eq(atomic_load(&timeouts), 0);
    sf_release(a);
    sf_release(b);
    sf_shutdown();
}
END_TEST

/* A loop of no task (the program's own thread) and a loop of a task that
 * nobody cancels: sf_cancelled() is 0 in every body, every index runs. */
static atomic_long quiet_ran, quiet_saw;
static void quiet_body(long i, void *ctx)
{
    (void)i;
    (void)ctx;
    atomic_fetch_add(&quiet_ran, 1);
    if (sf_cancelled())
        atomic_fetch_add(&quiet_saw, 1);
}

static void *runs_quiet_loop(void *arg)
{
    (void)arg;
    return (void *)(long)sf_for(0, 1000, quiet_body, NULL);
}

START_TEST(uncancelled_loops_run_whole)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(sf_for(0, 1000, quiet_body, NULL), 0);
    sf_future *f = sf_do(runs_quiet_loop, NULL);
    void *r = (void *)-7L;
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_ptr_eq(r, (void *)0L);
    sf_release(f);
    ck_assert_int_eq(atomic_load(&quiet_ran), 2000);
    ck_assert_int_eq(atomic_load(&quiet_saw), 0);
    sf_shutdown();
}
END_TEST

static Suite *cancel_tree_suite(void)
{
    Suite *s = suite_create("cancel_tree");
    TCase *tc = tcase_create("loops");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, loop_bodies_on_every_thread_see_the_cancel, 0, 6);
    tcase_add_loop_test(tc, cancel_does_not_leak_to_a_sibling_tree, 0, 3);
    tcase_add_loop_test(tc, uncancelled_loops_run_whole, 0, 3);
    suite_add_tcase(s, tc);
    tc = tcase_create("tasks");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, queued_children_never_run, 0, 6);
    tcase_add_loop_test(tc, queued_children_traced, 0, 2);
    tcase_add_loop_test(tc, a_grandchild_two_gets_below_sees_it, 0, 6);
    tcase_add_loop_test(tc, a_batch_task_belongs_to_its_batch, 0, 3);
    tcase_add_loop_test(tc, a_handed_future_stays_in_its_makers_tree, 0, 3);
    tcase_add_test(tc, a_recycled_maker_does_not_reach_its_orphan);
    tcase_add_loop_test(tc, cancel_storm, 0, 6);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(cancel_tree_suite)
