/*
 * test_deadlock.c - a get that can never return fails with EDEADLK instead
 * of hanging (docs/failures.md): a task that gets its own
 * future, or a get that closes a cycle of gets, across threads (pool worker
 * or the program's own); the other gets of the cycle complete once that
 * task goes on. And never a false report: gets that wait a long time, or
 * many threads getting shared futures of an acyclic graph, all succeed.
 *
 * Futures a task needs, but cannot be given through its argument because
 * they are made after it (its own handle, the next task of a ring), go
 * through shared variables with a flag. Every wait for a flag has a
 * deadline (WAIT_MS) and a task that times out returns a wrong value, so a
 * runtime that detects nothing fails the test (the tcase timeout is the
 * watchdog beyond that) rather than hanging.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 20000L
/* What *result holds before an sf_wait() that must leave it alone. */
#define UNTOUCHED ((void *)0x5e5e5e)

static void start(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
}

static void *get_on_thread(void *arg) { return sf_get(arg); }

/* ---- a task that gets its own future ---- */

static sf_future *_Atomic self_f;
static atomic_int self_set;
static int self_rc = -1, self_errno = -1;
static void *self_val, *self_get_val;

static void *gets_itself(void *arg)
{
    if (!tu_wait_flag(&self_set, WAIT_MS))
        return (void *)-1L;
    sf_future *me = atomic_load(&self_f);
    self_val = UNTOUCHED;
    self_rc = sf_wait(me, &self_val);
    errno = 0;
    self_get_val = sf_get(me);
    self_errno = errno;
    return arg;
}

/* sf_wait is EDEADLK and leaves *result alone; sf_get is NULL/EDEADLK; the
 * task goes on and its getters get its value. _i: 0 SF_THREADS=1, 1
 * SF_THREADS=2 (got by this thread), 2 SF_THREADS=1 and the task run by a
 * foreign thread's get while this one waits too. */
START_TEST(task_gets_its_own_future)
{
    start(_i == 1 ? 2 : 1);
    sf_future *f = sf_do(gets_itself, (void *)7L);
    ck_assert_ptr_nonnull(f);
    atomic_store(&self_f, f);
    atomic_store(&self_set, 1);
    pthread_t t;
    if (_i == 2)
        ck_assert_int_eq(pthread_create(&t, NULL, get_on_thread, f), 0);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_ptr_eq(r, (void *)7L);
    ck_assert_int_eq(self_rc, EDEADLK);
    ck_assert_ptr_eq(self_val, UNTOUCHED);
    ck_assert_ptr_null(self_get_val);
    ck_assert_int_eq(self_errno, EDEADLK);
    if (_i == 2) {
        void *tv = NULL;
        ck_assert_int_eq(pthread_join(t, &tv), 0);
        ck_assert_ptr_eq(tv, (void *)7L);
    }
    ck_assert_ptr_eq(sf_get(f), (void *)7L);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/*
 * A cycle through nesting: P makes child C and gets it; C gets P. At
 * SF_THREADS=1 C runs inline in P's get, on P's stack, so C's get is the one
 * that can never return: EDEADLK, and P's get of C gives C's value. At
 * SF_THREADS=2 C may run on the worker while P's get waits: then it is a
 * two-task cycle, and exactly one of the two gets is EDEADLK. When it is
 * P's, P goes on and C's get returns P's value on the worker once P is done,
 * which may be after this thread's get of P returned: the test waits for
 * C's get to return (c_returned) before it looks.
 */
static sf_future *_Atomic parent_f;
static atomic_int parent_set, c_returned;
static int c_rc = -1, p_rc = -1;
static void *c_val, *p_val;

static void *child_gets_parent(void *arg)
{
    if (!tu_wait_flag(&parent_set, WAIT_MS))
        return (void *)-1L;
    c_val = UNTOUCHED;
    c_rc = sf_wait(atomic_load(&parent_f), &c_val);
    atomic_store(&c_returned, 1);
    return arg;
}

static void *parent_gets_child(void *arg)
{
    sf_future *c = sf_do(child_gets_parent, (void *)22L);
    if (c == NULL)
        return (void *)-1L;
    p_val = UNTOUCHED;
    p_rc = sf_wait(c, &p_val);
    sf_release(c);
    return arg;
}

START_TEST(cycle_through_a_child)
{
    start(1 + _i);
    sf_future *p = sf_do(parent_gets_child, (void *)11L);
    ck_assert_ptr_nonnull(p);
    atomic_store(&parent_f, p);
    atomic_store(&parent_set, 1);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(p, &r), 0);
    ck_assert_ptr_eq(r, (void *)11L);
    ck_assert_msg(tu_wait_flag(&c_returned, WAIT_MS),
                  "the child's get of the parent never returned");
    ck_assert_msg((c_rc == EDEADLK) + (p_rc == EDEADLK) == 1,
                  "want exactly one EDEADLK: child's get %d, parent's get %d", c_rc, p_rc);
    if (_i == 0)
        ck_assert_int_eq(c_rc, EDEADLK);
    if (c_rc == EDEADLK) {
        ck_assert_ptr_eq(c_val, UNTOUCHED);
        ck_assert_int_eq(p_rc, 0);
        ck_assert_ptr_eq(p_val, (void *)22L);
    } else {
        ck_assert_ptr_eq(p_val, UNTOUCHED);
        ck_assert_int_eq(c_rc, 0);
        ck_assert_ptr_eq(c_val, (void *)11L);
    }
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* ---- rings: task i gets task i+1, the last gets the first ---- */

#define MAXK 8
static int ring_k;
static sf_future *_Atomic ring[MAXK];
static atomic_int ring_published, ring_started, ring_done;
static int ring_rc[MAXK];
static void *ring_val[MAXK], *ring_outer[MAXK];
static pthread_t ring_thread_of[MAXK];

static void *ring_value(long i) { return (void *)(1000L + i); }

/* Once every task of the ring is published and running, gets the next. */
static void *ring_task(void *arg)
{
    long i = (long)arg;
    ring_thread_of[i] = pthread_self();
    atomic_fetch_add(&ring_started, 1);
    if (!tu_wait_count(&ring_published, ring_k, WAIT_MS) ||
        !tu_wait_count(&ring_started, ring_k, WAIT_MS))
        return (void *)-1L;
    ring_val[i] = UNTOUCHED;
    ring_rc[i] = sf_wait(atomic_load(&ring[(i + 1) % ring_k]), &ring_val[i]);
    return ring_value(i);
}

/* A foreign thread makes task i and gets it: it runs here. */
static void *ring_member(void *arg)
{
    long i = (long)arg;
    sf_future *f = sf_do(ring_task, (void *)i);
    atomic_store(&ring[i], f);
    atomic_fetch_add(&ring_published, 1);
    ring_outer[i] = f != NULL ? sf_get(f) : NULL;
    atomic_fetch_add(&ring_done, 1);
    return NULL;
}

/* Exactly one get of the ring is EDEADLK; every other one gives the next
 * task's value; the outer gets give each task's own value. */
static void assert_ring(void)
{
    int deadlocks = 0;
    for (int i = 0; i < ring_k; i++)
        deadlocks += ring_rc[i] == EDEADLK;
    if (deadlocks != 1) {
        char buf[256];
        size_t len = 0;
        for (int i = 0; i < ring_k; i++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, " %d", ring_rc[i]);
        ck_abort_msg("ring of %d: want exactly one EDEADLK (%d); the gets returned%s", ring_k,
                     EDEADLK, buf);
    }
    for (int i = 0; i < ring_k; i++) {
        if (ring_rc[i] == EDEADLK) {
            ck_assert_ptr_eq(ring_val[i], UNTOUCHED);
        } else {
            ck_assert_int_eq(ring_rc[i], 0);
            ck_assert_ptr_eq(ring_val[i], ring_value((i + 1) % ring_k));
        }
        ck_assert_ptr_eq(ring_outer[i], ring_value(i));
    }
}

/*
 * Rings of 2, 3 and 8 tasks, each run by a foreign thread of its own, at
 * SF_THREADS=1 and 2. _i: bit 0 threads, _i / 2 the ring size.
 */
static const int ring_sizes[] = {2, 3, 8};

START_TEST(cycle_across_foreign_threads)
{
    start(1 + (_i & 1));
    ring_k = ring_sizes[_i / 2];
    pthread_t t[MAXK];
    for (long i = 0; i < ring_k; i++) {
        ring_rc[i] = -1;
        ck_assert_int_eq(pthread_create(&t[i], NULL, ring_member, (void *)i), 0);
    }
    ck_assert_msg(tu_wait_count(&ring_done, ring_k, 3 * WAIT_MS),
                  "a ring of %d gets never resolved (%d of its members returned)", ring_k,
                  atomic_load(&ring_done));
    for (int i = 0; i < ring_k; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    assert_ring();
    for (int i = 0; i < ring_k; i++)
        sf_release(ring[i]);
    sf_shutdown();
}
END_TEST

/* The two-task cycle with the pool worker: SF_THREADS=2; this thread makes B,
 * then A, and gets A. The get submits both; the idle worker takes B (the
 * oldest) while this thread runs A. A gets B while B gets A. */
START_TEST(cycle_with_the_pool_worker)
{
    start(2);
    ring_k = 2;
    ring_rc[0] = ring_rc[1] = -1;
    tu_sleep_ms(20); /* let the worker go idle */
    sf_future *b = sf_do(ring_task, (void *)1L);
    sf_future *a = sf_do(ring_task, (void *)0L);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    atomic_store(&ring[0], a);
    atomic_store(&ring[1], b);
    atomic_store(&ring_published, 2);
    ring_outer[0] = sf_get(a);
    ring_outer[1] = sf_get(b);
    ck_assert_msg(!pthread_equal(ring_thread_of[0], ring_thread_of[1]),
                  "setup: A and B ran in one thread");
    assert_ring();
    sf_release(a);
    sf_release(b);
    sf_shutdown();
}
END_TEST

/* ---- no false reports ---- */

/*
 * A chain of gets that stands still for a long time without being a cycle:
 * five foreign threads run a task each; 0 gets 1, 1 gets 2, and 2 sleeps
 * 300 ms (no get); 3 and 4 get 2 too. Every get returns 0 with the
 * exact value. _i: threads (1, 2).
 */
static sf_future *_Atomic chain[5];
static atomic_int chain_published, chain_started, chain_done;
static int chain_rc[5];
static void *chain_val[5];

static void *chain_task(void *arg)
{
    long i = (long)arg;
    atomic_fetch_add(&chain_started, 1);
    /* Every task of the chain runs before any gets: no get finds one of
     * them pending, to run it nested in its own frame (docs/waiting.md). */
    if (!tu_wait_count(&chain_published, 5, WAIT_MS) || !tu_wait_count(&chain_started, 5, WAIT_MS))
        return (void *)-1L;
    if (i == 2) {
        tu_sleep_ms(300);
        return (void *)102L;
    }
    long next = i < 2 ? i + 1 : 2; /* 0 -> 1 -> 2; 3 -> 2; 4 -> 2 */
    chain_val[i] = UNTOUCHED;
    chain_rc[i] = sf_wait(atomic_load(&chain[next]), &chain_val[i]);
    return (void *)((long)chain_val[i] + 1);
}

static void *chain_member(void *arg)
{
    long i = (long)arg;
    sf_future *f = sf_do(chain_task, (void *)i);
    atomic_store(&chain[i], f);
    atomic_fetch_add(&chain_published, 1);
    void *v = f != NULL ? sf_get(f) : NULL;
    atomic_fetch_add(&chain_done, 1);
    return v;
}

START_TEST(long_wait_is_no_cycle)
{
    start(1 + _i);
    pthread_t t[5];
    for (long i = 0; i < 5; i++) {
        chain_rc[i] = -1;
        ck_assert_int_eq(pthread_create(&t[i], NULL, chain_member, (void *)i), 0);
    }
    ck_assert_msg(tu_wait_count(&chain_done, 5, 3 * WAIT_MS), "an acyclic chain of gets hung");
    static const long want[5] = {104, 103, 102, 103, 103};
    for (int i = 0; i < 5; i++) {
        void *v = NULL;
        ck_assert_int_eq(pthread_join(t[i], &v), 0);
        ck_assert_ptr_eq(v, (void *)want[i]);
        if (i != 2) {
            ck_assert_int_eq(chain_rc[i], 0);
            ck_assert_ptr_eq(chain_val[i], (void *)(want[i] - 1));
        }
    }
    for (int i = 0; i < 5; i++)
        sf_release(chain[i]);
    sf_shutdown();
}
END_TEST

/*
 * Many threads, shared futures, no cycle. Each round, thread 0 makes WIDTH
 * leaf tasks and WIDTH middle tasks; middle task j is given leaves j, j+1
 * and j+2 (mod WIDTH) by its maker and gets them, so neighbouring middle
 * tasks share leaves; then all NTHREADS threads get every task, middle and
 * leaf, in different orders (rotated, middles or leaves first), closing
 * diamonds: each thread waits for two middles that wait for the same leaf.
 * Tasks spin ~100 us, so gets find their tasks running elsewhere and wait
 * on each other's work all the time. No get may be EDEADLK, and every
 * value must be exact. _i: SF_THREADS 1, 2, 4.
 *
 * The graph has no cycle, so every wait here really does end (docs/waiting.md).
 */
#define NTHREADS 8
#define ROUNDS 20
#define WIDTH 8
#define FANIN 3
static sf_future *leaf[WIDTH], *mid[WIDTH];
static long leaf_want[WIDTH], mid_want[WIDTH];
static pthread_barrier_t round_barrier;
static atomic_int false_deadlocks, other_errors, wrong_values;

static void count_rc(int rc)
{
    if (rc == EDEADLK)
        atomic_fetch_add(&false_deadlocks, 1);
    else if (rc != 0)
        atomic_fetch_add(&other_errors, 1);
}

static void *leaf_task(void *arg)
{
    tu_spin_us(100);
    return (void *)leaf_want[(long)arg];
}

static void *mid_task(void *arg)
{
    long j = (long)arg;
    tu_spin_us(50);
    long sum = 1;
    for (int d = 0; d < FANIN; d++) {
        long k = (j + d) % WIDTH;
        void *r = UNTOUCHED;
        int rc = sf_wait(leaf[k], &r);
        count_rc(rc);
        if (rc == 0 && r != (void *)leaf_want[k])
            atomic_fetch_add(&wrong_values, 1);
        sum += rc == 0 ? (long)r : 0;
    }
    tu_spin_us(50);
    return (void *)sum;
}

static void make_round(int round)
{
    for (long j = 0; j < WIDTH; j++)
        leaf_want[j] = 1000L * round + j;
    for (long j = 0; j < WIDTH; j++) {
        mid_want[j] = 1;
        for (int d = 0; d < FANIN; d++)
            mid_want[j] += leaf_want[(j + d) % WIDTH];
    }
    for (long j = 0; j < WIDTH; j++)
        leaf[j] = sf_do(leaf_task, (void *)j);
    for (long j = 0; j < WIDTH; j++)
        mid[j] = sf_do(mid_task, (void *)j);
}

static void get_checked(sf_future *f, long want)
{
    if (f == NULL) {
        atomic_fetch_add(&other_errors, 1);
        return;
    }
    void *r = UNTOUCHED;
    int rc = sf_wait(f, &r);
    count_rc(rc);
    if (rc == 0 && r != (void *)want)
        atomic_fetch_add(&wrong_values, 1);
}

static void *graph_thread(void *arg)
{
    long t = (long)arg;
    for (int round = 0; round < ROUNDS; round++) {
        if (t == 0)
            make_round(round);
        pthread_barrier_wait(&round_barrier);
        int leaves_first = (t + round) % 2;
        for (int pass = 0; pass < 2; pass++)
            for (long k = 0; k < WIDTH; k++) {
                long j = (k + t) % WIDTH;
                if (pass == leaves_first)
                    get_checked(mid[j], mid_want[j]);
                else
                    get_checked(leaf[j], leaf_want[j]);
            }
        pthread_barrier_wait(&round_barrier);
        if (t == 0)
            for (int j = 0; j < WIDTH; j++) {
                sf_release(mid[j]);
                sf_release(leaf[j]);
            }
        pthread_barrier_wait(&round_barrier);
    }
    return NULL;
}

static const int graph_threads[] = {1, 2, 4};

START_TEST(shared_acyclic_gets_never_deadlock)
{
    start(graph_threads[_i]);
    ck_assert_int_eq(pthread_barrier_init(&round_barrier, NULL, NTHREADS), 0);
    pthread_t t[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, graph_thread, (void *)i), 0);
    for (int i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&round_barrier);
    ck_assert_int_eq(atomic_load(&false_deadlocks), 0);
    ck_assert_int_eq(atomic_load(&other_errors), 0);
    ck_assert_int_eq(atomic_load(&wrong_values), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, (uint64_t)ROUNDS * 2 * WIDTH);
    sf_shutdown();
}
END_TEST

/*
 * Futures handed to siblings never stall a get (docs/waiting.md). A root
 * task makes a lattice of LAT_LAYERS x LAT_WIDTH tasks: a task of layer
 * l > 0 is given two tasks of layer l - 1 by the root and gets them; the
 * root gets every task, top layer first. A thread blocked in a layer-1 task
 * may help by running a layer-2 task from the root's queue, and that task
 * may need the very layer-1 task that waits: run on top of it, that would
 * be a cycle of the runtime's making; parked, it is none. Every round's sum
 * is exact and no get fails. _i: SF_THREADS 1, 2 (tests/test_park has the
 * same shape across threads of the program).
 */
#define LAT_ROUNDS 1000
#define LAT_LAYERS 3
#define LAT_WIDTH 2
static atomic_int lat_deadlocks, lat_errors;

struct lat_node {
    sf_future *in[2];
};

static long lat_get(sf_future *f)
{
    void *r = UNTOUCHED;
    int rc = sf_wait(f, &r);
    if (rc == EDEADLK)
        atomic_fetch_add(&lat_deadlocks, 1);
    else if (rc != 0)
        atomic_fetch_add(&lat_errors, 1);
    return rc == 0 ? (long)r : 0;
}

/* 1 + its inputs: 1 in layer 0, 3 in layer 1, 7 in layer 2. */
static void *lat_task(void *arg)
{
    struct lat_node *n = arg;
    tu_spin_us(100);
    long v = 1;
    for (int d = 0; d < 2; d++)
        if (n->in[d] != NULL)
            v += lat_get(n->in[d]);
    tu_spin_us(50);
    return (void *)v;
}

static void *lat_root(void *arg)
{
    (void)arg;
    struct lat_node node[LAT_LAYERS][LAT_WIDTH];
    sf_future *f[LAT_LAYERS][LAT_WIDTH];
    for (int l = 0; l < LAT_LAYERS; l++)
        for (int j = 0; j < LAT_WIDTH; j++) {
            node[l][j].in[0] = l > 0 ? f[l - 1][j] : NULL;
            node[l][j].in[1] = l > 0 ? f[l - 1][(j + 1) % LAT_WIDTH] : NULL;
            f[l][j] = sf_do(lat_task, &node[l][j]);
            if (f[l][j] == NULL)
                return (void *)-1L;
        }
    long sum = 0;
    for (int l = LAT_LAYERS - 1; l >= 0; l--)
        for (int j = 0; j < LAT_WIDTH; j++)
            sum += lat_get(f[l][j]);
    for (int l = 0; l < LAT_LAYERS; l++)
        for (int j = 0; j < LAT_WIDTH; j++)
            sf_release(f[l][j]);
    return (void *)sum;
}

START_TEST(sibling_futures_never_stall)
{
    start(1 + _i);
    long wrong = 0;
    for (int round = 0; round < LAT_ROUNDS; round++) {
        sf_future *f = sf_do(lat_root, NULL);
        ck_assert_ptr_nonnull(f);
        void *r = UNTOUCHED;
        ck_assert_int_eq(sf_wait(f, &r), 0);
        /* two tasks per layer: 7 + 3 + 1 each */
        wrong += r != (void *)(2L * (7 + 3 + 1));
        sf_release(f);
    }
    ck_assert_int_eq(atomic_load(&lat_deadlocks), 0);
    ck_assert_int_eq(atomic_load(&lat_errors), 0);
    ck_assert_msg(wrong == 0, "%ld rounds had a wrong sum", wrong);
    sf_shutdown();
}
END_TEST

/* Tree-shaped fork-join - each task gets only the futures it made - never
 * stalls: none of its gets may be EDEADLK, at any thread count. */
static atomic_int tree_deadlocks;

static void *tree_task(void *arg)
{
    long d = (long)arg;
    tu_spin_us(20);
    if (d == 0)
        return (void *)1L;
    sf_future *a = sf_do(tree_task, (void *)(d - 1));
    sf_future *b = sf_do(tree_task, (void *)(d - 1));
    if (a == NULL || b == NULL)
        return (void *)-1000000L;
    long v = 1;
    sf_future *k[2] = {b, a};
    for (int i = 0; i < 2; i++) {
        void *r = UNTOUCHED;
        int rc = sf_wait(k[i], &r);
        if (rc == EDEADLK)
            atomic_fetch_add(&tree_deadlocks, 1);
        v += rc == 0 ? (long)r : -1000000L;
        sf_release(k[i]);
    }
    return (void *)v;
}

START_TEST(tree_fork_join_never_deadlocks)
{
    start(1 + _i);
    for (int round = 0; round < 20; round++) {
        sf_future *f = sf_do(tree_task, (void *)8L);
        ck_assert_ptr_nonnull(f);
        void *r = UNTOUCHED;
        ck_assert_int_eq(sf_wait(f, &r), 0);
        ck_assert_ptr_eq(r, (void *)511L); /* 2^9 - 1 nodes */
        sf_release(f);
    }
    ck_assert_int_eq(atomic_load(&tree_deadlocks), 0);
    sf_shutdown();
}
END_TEST

static Suite *deadlock_suite(void)
{
    Suite *s = suite_create("deadlock");
    TCase *tc = tcase_create("cycles");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, task_gets_its_own_future, 0, 3);
    tcase_add_loop_test(tc, cycle_through_a_child, 0, 2);
    tcase_add_loop_test(tc, cycle_across_foreign_threads, 0,
                        2 * (int)(sizeof ring_sizes / sizeof ring_sizes[0]));
    tcase_add_test(tc, cycle_with_the_pool_worker);
    suite_add_tcase(s, tc);
    TCase *no = tcase_create("no false reports");
    tcase_set_timeout(no, 60);
    tcase_add_loop_test(no, long_wait_is_no_cycle, 0, 2);
    tcase_add_loop_test(no, shared_acyclic_gets_never_deadlock, 0,
                        (int)(sizeof graph_threads / sizeof graph_threads[0]));
    tcase_add_loop_test(no, sibling_futures_never_stall, 0, 2);
    tcase_add_loop_test(no, tree_fork_join_never_deadlocks, 0, 3);
    suite_add_tcase(s, no);
    return s;
}

TU_MAIN(deadlock_suite)
