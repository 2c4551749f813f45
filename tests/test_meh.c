/*
 * test_meh.c - the soft cap and the "embrace of meh": nested gets far deeper
 * and wider than the pool complete with exact results, on at most SF_THREADS
 * threads, and the pool never grows.
 */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Nested gets on one thread's deep stack, with no fresh stack. Under
 * ThreadSanitizer a thread nests at most 1,024 tasks before it continues on
 * a fresh stack (runtime/registry/registry.h, for ThreadSanitizer's memory), so the
 * chain stays below that there. */
#if defined(__SANITIZE_THREAD__)
#define CHAIN_DEPTH 1000L
#else
#define CHAIN_DEPTH 10000L
#endif
#define FANOUT 8
#define TREE_DEPTH 5L
#define TREE_NODES 37449L /* 1 + 8 + 8^2 + ... + 8^5 */
/* Nesting lives on thread stacks: give every thread that nests plenty. */
#define BIG_STACK (64 * TU_MIB)

static const int thread_counts[] = {1, 2, 4};

static atomic_int os_threads_at_bottom = -1;

/* chain(k) makes chain(k-1) with sf_do and gets it: k nested gets. */
static void *chain(void *arg)
{
    tu_threads_note();
    long k = (long)arg;
    if (k <= 1) {
        atomic_store(&os_threads_at_bottom, tu_os_threads());
        return (void *)1L;
    }
    sf_future *c = sf_do(chain, (void *)(k - 1));
    if (c == NULL)
        return (void *)-1000000L;
    long r = (long)sf_get(c);
    sf_release(c);
    return (void *)(r + 1);
}

static void *chain_root(void *arg)
{
    sf_future *f = sf_do(chain, arg);
    if (f == NULL)
        return (void *)-1L;
    void *r = sf_get(f);
    sf_release(f);
    return r;
}

/* tree(d): 8 children of depth d-1, all queued before any is got. */
static void *tree(void *arg)
{
    tu_threads_note();
    long d = (long)arg;
    if (d == 0)
        return (void *)1L;
    sf_future *c[FANOUT];
    for (int i = 0; i < FANOUT; i++)
        c[i] = sf_do(tree, (void *)(d - 1));
    long sum = 1;
    for (int i = 0; i < FANOUT; i++) {
        sum += (long)sf_get(c[i]);
        sf_release(c[i]);
    }
    return (void *)sum;
}

static void start_with(int threads)
{
    tu_env_threads(threads);
    int before = tu_os_threads();
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.stack_size = BIG_STACK; /* threads from SF_THREADS */
    ck_assert_int_eq(sf_init(&cfg), 0);
    /* The pool has SF_THREADS - 1 workers, no more. */
    tu_assert_os_threads(before + threads - 1);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, threads);
    ck_assert_int_eq(s.workers, threads - 1);
}

static void check_stats(int threads, uint64_t created)
{
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, threads);
    ck_assert_int_eq(s.workers, threads - 1);
    ck_assert_int_le(s.peak_busy, s.workers);
    ck_assert_uint_eq(s.created, created);
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.fresh_stacks, 0); /* deep stacks: no red line reached */
    if (threads == 1) {
        ck_assert_uint_eq(s.run_pool, 0);
        ck_assert_int_eq(s.peak_busy, 0);
    }
}

START_TEST(chain_deep_on_one_stack)
{
    int threads = thread_counts[_i];
    start_with(threads);
    int base = tu_os_threads();
    tu_threads_reset();
    /* The chain's root runs on a thread of ours with a deep stack: the main
     * thread's stack is the system's. */
    void *r = tu_run_on_thread(chain_root, (void *)CHAIN_DEPTH, BIG_STACK);
    ck_assert_ptr_eq(r, (void *)CHAIN_DEPTH);
    /* Depth did not become threads: at the bottom the process had the pool
     * and our root thread, nothing more. */
    ck_assert_int_eq(atomic_load(&os_threads_at_bottom), base + 1);
    int ran_on = tu_threads_count();
    ck_assert_int_ge(ran_on, 1);
    ck_assert_int_le(ran_on, threads);
    check_stats(threads, CHAIN_DEPTH);
    tu_assert_os_threads(base);
    sf_shutdown();
}
END_TEST

START_TEST(tree_fanout8_depth5)
{
    int threads = thread_counts[_i];
    start_with(threads);
    int base = tu_os_threads();
    tu_threads_reset();
    sf_future *f = sf_do(tree, (void *)TREE_DEPTH);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)TREE_NODES);
    sf_release(f);
    int ran_on = tu_threads_count();
    ck_assert_int_ge(ran_on, 1);
    ck_assert_int_le(ran_on, threads);
    if (threads == 1) {
        ck_assert_int_eq(ran_on, 1);
        ck_assert(tu_threads_contains(pthread_self()));
    }
    check_stats(threads, TREE_NODES);
    tu_assert_os_threads(base);
    sf_shutdown();
}
END_TEST

/* Both in one runtime, tree after chain, still exact and within the cap. */
START_TEST(chain_then_tree)
{
    int threads = thread_counts[_i];
    start_with(threads);
    tu_threads_reset();
    ck_assert_ptr_eq(tu_run_on_thread(chain_root, (void *)CHAIN_DEPTH, BIG_STACK),
                     (void *)CHAIN_DEPTH);
    ck_assert_int_le(tu_threads_count(), threads);
    tu_threads_reset();
    sf_future *f = sf_do(tree, (void *)TREE_DEPTH);
    ck_assert_ptr_eq(sf_get(f), (void *)TREE_NODES);
    sf_release(f);
    ck_assert_int_le(tu_threads_count(), threads);
    check_stats(threads, CHAIN_DEPTH + TREE_NODES);
    sf_shutdown();
}
END_TEST

/* Far more threads than cores (1024 on the CI's 2; 256 under a sanitizer,
 * which pays per thread): the pool starts whole and never grows, fib stays
 * exact, and shutdown joins every worker. */
START_TEST(many_more_threads_than_cores)
{
    int threads = TU_SANITIZED ? 256 : 1024;
    tu_env_threads(1);
    int before = tu_os_threads();
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = threads;
    c.stack_size = 256 * 1024;
    ck_assert_int_eq(sf_init(&c), 0);
    tu_assert_os_threads(before + threads - 1);
    sf_future *f = sf_do(tu_fib, (void *)20L);
    ck_assert_ptr_eq(sf_get(f), (void *)tu_fib_exact(20));
    sf_release(f);
    tu_assert_os_threads(before + threads - 1); /* the pool never grew */
    sf_stats s = tu_stats_quiet(); /* also: peak_busy <= workers */
    ck_assert_int_eq(s.workers, threads - 1);
    ck_assert_uint_eq(s.created, 1 + tu_fib_tasks(20));
    sf_shutdown();
    tu_assert_os_threads(before);
}
END_TEST
/* Deep chains with the default settings, from the main thread, whose stack
 * is the system's (8 MiB here): a million nested gets need far more than
 * any one stack, so gets near the end of theirs continue on fresh ones. */
#define DEEP_NO_FUTURE (-1000000000L)
#define DEEP_GET_FAILED (-2000000000L)
static atomic_int deep_errno;

/* deep(k): k nested gets, returning k; a failure comes back up unchanged. */
static void *deep(void *arg)
{
    long k = (long)arg;
    if (k <= 1)
        return (void *)1L;
    sf_future *c = sf_do(deep, (void *)(k - 1));
    if (c == NULL)
        return (void *)DEEP_NO_FUTURE;
    errno = 0;
    long r = (long)sf_get(c);
    if (r == 0 && errno != 0) {
        atomic_store(&deep_errno, errno);
        sf_release(c); /* not started: discarded */
        return (void *)DEEP_GET_FAILED;
    }
    sf_release(c);
    return (void *)(r < 0 ? r : r + 1);
}

/* Sanitizers make each level of a chain several times dearer: they check
 * the smaller depth only. */
static const long deep_depths[] = {100000, TU_SANITIZED ? 100000 : 1000000};

START_TEST(chain_deep_default_stacks)
{
    long depth = deep_depths[_i / 2];
    int threads = 1 + _i % 2;
    tu_env_threads(threads);
    int before = tu_os_threads();
    sf_future *f = sf_do(deep, (void *)depth);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)depth);
    sf_release(f);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, (uint64_t)depth);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, (uint64_t)depth);
    /* The chain ran on more stacks than one: fresh ones below a red line,
     * or fibers its gets parked when a worker took a level (runtime/sched/park.c);
     * every one that parked went on. No thread is left behind. */
    ck_assert_uint_ge(s.fresh_stacks + s.parks, 1);
    ck_assert_uint_eq(s.parks, s.resumes);
    tu_assert_os_threads(before + threads - 1);
    sf_shutdown();
}
END_TEST

/* No fresh stack can be had (a stack bigger than the address space, for
 * workers, fibers and fresh threads alike): the chain goes on in place
 * until a sixteenth of the main thread's stack is left, then that get fails
 * with EAGAIN - no overflow, no crash. */
START_TEST(chain_deep_without_threads)
{
    tu_env_threads(1);
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 2;
    c.stack_size = (size_t)1 << 48;
    struct tu_capture cap;
    tu_capture_begin(&cap);
    ck_assert_int_eq(sf_init(&c), 0); /* with no worker, said in one line */
    free(tu_capture_end(&cap));
    sf_future *f = sf_do(deep, (void *)1000000L);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)DEEP_GET_FAILED);
    ck_assert_int_eq(atomic_load(&deep_errno), EAGAIN);
    sf_release(f);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_eq(s.fresh_stacks, 0);
    ck_assert_int_eq(s.workers, 0);
    sf_shutdown();
}
END_TEST

static Suite *meh_suite(void)
{
    Suite *s = suite_create("meh");
    int n = (int)(sizeof thread_counts / sizeof thread_counts[0]);
    TCase *tc = tcase_create("meh");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, chain_deep_on_one_stack, 0, n);
    tcase_add_loop_test(tc, tree_fanout8_depth5, 0, n);
    tcase_add_loop_test(tc, chain_then_tree, 0, n);
    tcase_add_test(tc, many_more_threads_than_cores);
    suite_add_tcase(s, tc);
    TCase *deep_tc = tcase_create("deep");
    tcase_set_timeout(deep_tc, 120);
    tcase_add_loop_test(deep_tc, chain_deep_default_stacks, 0, 4);
    tcase_add_test(deep_tc, chain_deep_without_threads);
    suite_add_tcase(s, deep_tc);
    return s;
}

TU_MAIN(meh_suite)
