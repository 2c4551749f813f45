/*
 * test_task.c - tasks in caller storage (sf_task_do, sf_task_get,
 * sf_task_error_message): exact results at 1 to 4 threads, laziness, the
 * maker-only rule, failures through both lives of a local future (run by
 * its maker, or promoted and run elsewhere), helping, deep chains, loops,
 * batches, many threads, and the trace.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *tfib(void *arg)
{
    long n = (long)arg;
    if (n < 2)
        return (void *)n;
    sf_task a;
    ck_assert_int_eq(sf_task_do(&a, tfib, (void *)(n - 1)), 0);
    long b = (long)tfib((void *)(n - 2));
    return (void *)((long)sf_task_get(&a) + b);
}

/* tfib(n) and tu_fib(n) make the same tasks. */
static void fib_at(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (int n = 0; n <= 25; n += 5)
        ck_assert_int_eq((long)tfib((void *)(long)n), tu_fib_exact(n));
    sf_stats s = tu_stats_quiet();
    uint64_t made = 0;
    for (int n = 0; n <= 25; n += 5)
        made += tu_fib_tasks(n);
    ck_assert_uint_eq(s.created, made);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, made);
    ck_assert_uint_eq(s.discarded + s.cancelled, 0);
    /* The workers ask, the owner promotes, they run some: within a few
     * rounds even on a loaded machine, where a worker may sleep through
     * one fib(25). */
    for (int round = 0; threads > 1 && s.run_pool + s.run_stolen == 0 && round < 200; round++) {
        ck_assert_int_eq((long)tfib((void *)25L), tu_fib_exact(25));
        s = tu_stats_quiet();
    }
    if (threads > 1)
        ck_assert_uint_gt(s.run_pool + s.run_stolen, 0);
    sf_shutdown();
}

START_TEST(fib_1) { fib_at(1); }
END_TEST
START_TEST(fib_2) { fib_at(2); }
END_TEST
START_TEST(fib_4) { fib_at(4); }
END_TEST

static atomic_int ran;

static void *count(void *arg)
{
    atomic_fetch_add(&ran, 1);
    return arg;
}

/* Lazy: an idle worker never starts a task no get submitted. */
START_TEST(do_only_queues)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_task t;
    ck_assert_int_eq(sf_task_do(&t, count, (void *)0x77), 0);
    tu_sleep_ms(50);
    ck_assert_int_eq(atomic_load(&ran), 0);
    ck_assert_ptr_eq(sf_task_get(&t), (void *)0x77);
    ck_assert_int_eq(atomic_load(&ran), 1);
    /* Further gets return the same; the task ran once. */
    ck_assert_ptr_eq(sf_task_get(&t), (void *)0x77);
    ck_assert_int_eq(atomic_load(&ran), 1);
    /* The storage is reusable once got. */
    for (long i = 0; i < 1000; i++) {
        ck_assert_int_eq(sf_task_do(&t, count, (void *)i), 0);
        ck_assert_ptr_eq(sf_task_get(&t), (void *)i);
    }
    ck_assert_int_eq(atomic_load(&ran), 1001);
    sf_shutdown();
}
END_TEST

static sf_task shared;

static void *noop(void *arg) { return arg; }

static void *get_shared(void *arg)
{
    if (arg != NULL) { /* register this thread first */
        sf_future *f = sf_do(noop, NULL);
        sf_get(f);
        sf_release(f);
    }
    errno = 0;
    void *r = sf_task_get(&shared);
    return r == NULL && errno == EPERM ? (void *)1 : NULL;
}

static void *get_self(void *arg)
{
    errno = 0;
    void *r = sf_task_get(arg);
    return r == NULL ? (void *)(long)errno : NULL;
}

START_TEST(errors)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    errno = 0;
    ck_assert_ptr_null(sf_task_get(NULL));
    ck_assert_int_eq(errno, EINVAL);
    sf_task zero;
    memset(&zero, 0, sizeof zero);
    errno = 0;
    ck_assert_ptr_null(sf_task_get(&zero));
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_task_do(NULL, count, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_task_do(&zero, NULL, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    /* Another thread - registered or not - may not get it, and its
     * attempt changes nothing: the task is still ours, pending. */
    ck_assert_int_eq(sf_task_do(&shared, count, (void *)5), 0);
    ck_assert_ptr_eq(tu_run_on_thread(get_shared, NULL, 0), (void *)1);
    ck_assert_ptr_eq(tu_run_on_thread(get_shared, (void *)1, 0), (void *)1);
    ck_assert_int_eq(atomic_load(&ran), 0);
    ck_assert_ptr_eq(sf_task_get(&shared), (void *)5);
    ck_assert_ptr_null(sf_task_error_message());
    /* Got again: the same result, nothing runs twice. */
    ck_assert_ptr_eq(sf_task_get(&shared), (void *)5);
    ck_assert_int_eq(atomic_load(&ran), 1);
    sf_shutdown();
    /* A task that gets itself: EDEADLK, and it still completes. At one
     * thread, so that it runs on its maker (on a worker its get would be
     * another thread's: EPERM). */
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_task self;
    ck_assert_int_eq(sf_task_do(&self, get_self, &self), 0);
    ck_assert_ptr_eq(sf_task_get(&self), (void *)(long)EDEADLK);
    sf_shutdown();
}
END_TEST

static void *fail_with(void *arg)
{
    long code = (long)arg;
    sf_fail((int)code, "code %ld", code);
    return (void *)1;
}

static void *fail_quietly(void *arg)
{
    sf_fail((int)(long)arg, NULL);
    return NULL;
}

/* Failures reach the maker's get, with their message, whichever life the
 * local future had: at 1 thread every one runs in place; at 4, many are
 * promoted and run by workers (counted). */
static void failures_at(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    enum { N = 64 };
    for (int round = 0; round < 50; round++) {
        sf_task t[N];
        for (long i = 0; i < N; i++)
            ck_assert_int_eq(sf_task_do(&t[i], i % 2 ? fail_with : count, (void *)(i + 1)), 0);
        sf_future *kick = sf_do(count, NULL); /* a get that publishes while workers idle */
        sf_get(kick);
        sf_release(kick);
        for (long i = 0; i < N; i++) {
            errno = 0;
            void *r = sf_task_get(&t[i]);
            if (i % 2) {
                char want[32];
                snprintf(want, sizeof want, "code %ld", i + 1);
                ck_assert_ptr_null(r);
                ck_assert_int_eq(errno, (int)(i + 1));
                ck_assert_str_eq(sf_task_error_message(), want);
                /* Got again: the code again; the message stays the thread's. */
                errno = 0;
                ck_assert_ptr_null(sf_task_get(&t[i]));
                ck_assert_int_eq(errno, (int)(i + 1));
                ck_assert_str_eq(sf_task_error_message(), want);
            } else {
                ck_assert_ptr_eq(r, (void *)(i + 1));
            }
        }
    }
    sf_task q;
    ck_assert_int_eq(sf_task_do(&q, fail_quietly, (void *)(long)EIO), 0);
    errno = 0;
    ck_assert_ptr_null(sf_task_get(&q));
    ck_assert_int_eq(errno, EIO);
    ck_assert_ptr_null(sf_task_error_message());
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 50 * (N + 1) + 1);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, s.created);
    if (threads > 1)
        ck_assert_uint_gt(s.run_pool, 0);
    sf_shutdown();
}

START_TEST(failures_1) { failures_at(1); }
END_TEST
START_TEST(failures_4) { failures_at(4); }
END_TEST

/* Gets in any order: each claim drops or clears its slot wherever it is
 * (the index kept in the future), so 20,000 tasks of one frame got in a
 * shuffled order come back exact, and the queue ends empty. */
enum { ANY_N = 20000 };
static int any_order_of[ANY_N];

static void *any_order_body(void *arg)
{
    sf_task *t = malloc(ANY_N * sizeof *t);
    ck_assert_ptr_nonnull(t);
    for (long i = 0; i < ANY_N; i++)
        ck_assert_int_eq(sf_task_do(&t[i], noop, (void *)(i + 1)), 0);
    for (int i = 0; i < ANY_N; i++)
        ck_assert_ptr_eq(sf_task_get(&t[any_order_of[i]]), (void *)(long)(any_order_of[i] + 1));
    free(t);
    return arg;
}

START_TEST(any_order)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (int i = 0; i < ANY_N; i++)
        any_order_of[i] = i;
    unsigned x = 12345;
    for (int i = ANY_N - 1; i > 0; i--) {
        x = x * 1103515245u + 12345u;
        int j = (int)((x >> 8) % (unsigned)(i + 1)), k = any_order_of[i];
        any_order_of[i] = any_order_of[j];
        any_order_of[j] = k;
    }
    /* From a thread running no task (every get off the fast path), and
     * from a task (the fast path). */
    any_order_body(NULL);
    sf_future *f = sf_do(any_order_body, (void *)7);
    ck_assert_ptr_eq(sf_get(f), (void *)7);
    sf_release(f);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2 * ANY_N + 1);
    ck_assert_uint_eq(s.run_inline, 2 * ANY_N + 1);
    ck_assert_uint_eq(s.queued, 0);
    sf_shutdown();
}
END_TEST

/* A UTS-like tree: every node makes its children in its frame - of both
 * kinds, in turn - and gets them in order; the count is exact. */
static void *node(void *arg)
{
    long d = (long)arg;
    if (d == 0)
        return (void *)1L;
    enum { K = 5 };
    sf_task t[K];
    sf_future *f[K];
    for (int i = 0; i < K; i++) {
        if (i % 2)
            ck_assert_ptr_nonnull(f[i] = sf_do(node, (void *)(d - 1)));
        else
            ck_assert_int_eq(sf_task_do(&t[i], node, (void *)(d - 1)), 0);
    }
    long n = 1;
    for (int i = 0; i < K; i++) {
        if (i % 2) {
            n += (long)sf_get(f[i]);
            sf_release(f[i]);
        } else {
            n += (long)sf_task_get(&t[i]);
        }
    }
    return (void *)n;
}

static long tree_nodes(int d) { return d == 0 ? 1 : 1 + 5 * tree_nodes(d - 1); }

START_TEST(mixed_tree)
{
    tu_env_threads(4);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (int r = 0; r < 5; r++)
        ck_assert_int_eq((long)node((void *)7L), tree_nodes(7));
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 5 * (tree_nodes(7) - 1));
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, s.created);
    sf_shutdown();
}
END_TEST

/* The same with tasks in caller storage only, got in the order made: each
 * get of one that is not the newest fills its slot with the newest
 * (pending.c, sf__pending_trim_local_slow), while workers ask for the
 * queue to be published and promote what they find, wherever it was moved.
 * Every node counted once, at 1, 2 and 4 threads. */
static void *local_node(void *arg)
{
    long d = (long)arg;
    if (d == 0) {
        /* 2 us of work: long enough that idle workers come asking. */
        double end = tu_now_ms() + 0.002;
        while (tu_now_ms() < end)
            ;
        return (void *)1L;
    }
    enum { K = 6 };
    sf_task t[K];
    for (int i = 0; i < K; i++)
        ck_assert_int_eq(sf_task_do(&t[i], local_node, (void *)(d - 1)), 0);
    long n = 1;
    for (int i = 0; i < K; i++)
        n += (long)sf_task_get(&t[i]);
    return (void *)n;
}

static long local_tree_nodes(int d) { return d == 0 ? 1 : 1 + 6 * local_tree_nodes(d - 1); }

static void local_tree_at(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (int r = 0; r < 3; r++) {
        sf_future *f = sf_do(local_node, (void *)5L);
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq((long)sf_get(f), local_tree_nodes(5));
        sf_release(f);
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 3 * local_tree_nodes(5));
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, s.created);
    sf_shutdown();
}

START_TEST(local_tree_in_order_1) { local_tree_at(1); }
END_TEST

START_TEST(local_tree_in_order_2) { local_tree_at(2); }
END_TEST

START_TEST(local_tree_in_order_4) { local_tree_at(4); }
END_TEST

/* Helping: the maker, a task blocked on a future running elsewhere, runs
 * its own pending local task - which is what that future waits for. A
 * plain thread makes f and runs it (its get claimed it); a root task, run
 * by main's get, makes local task t and gets f: f runs on the other thread,
 * so the root's get helps, and its first find is its own newest task, t,
 * which lets f finish. SF_THREADS=1: no worker, only helping can run t. */
static atomic_int flag;

static void *wait_flag(void *arg) { return tu_wait_flag(&flag, 10000) ? arg : (void *)-1L; }

static void *set_flag(void *arg)
{
    atomic_store(&flag, 1);
    return arg;
}

static sf_future *other;

static void *run_other(void *arg)
{
    sf_future *f = sf_do(wait_flag, (void *)0x55);
    __atomic_store_n(&other, f, __ATOMIC_RELEASE);
    return sf_get(f) == (void *)0x55 ? arg : (void *)-1L; /* runs it here: waits until the flag */
}

struct helping {
    void *other_val, *t_val;
    int other_done_before, other_done_after;
};

static void *helping_root(void *arg)
{
    struct helping *h = arg;
    sf_task t;
    if (sf_task_do(&t, set_flag, (void *)0x66) != 0)
        return (void *)-1L;
    h->other_done_before = sf_is_done(other);
    h->other_val = sf_get(other);
    h->other_done_after = sf_is_done(other);
    h->t_val = sf_task_get(&t);
    return (void *)1L;
}

START_TEST(helping_runs_local_tasks)
{
    tu_env_threads(1); /* no worker: only helping can run the local task */
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, run_other, NULL), 0);
    while (__atomic_load_n(&other, __ATOMIC_ACQUIRE) == NULL)
        tu_sleep_ms(1);
    struct helping h = {0};
    sf_future *root = sf_do(helping_root, &h);
    ck_assert_ptr_nonnull(root);
    ck_assert_ptr_eq(sf_get(root), (void *)1L);
    void *tv = (void *)-2L;
    pthread_join(th, &tv);
    ck_assert_ptr_null(tv);
    ck_assert_int_eq(h.other_done_before, 0); /* f waits for the flag only t sets */
    ck_assert_ptr_eq(h.other_val, (void *)0x55);
    ck_assert_int_eq(h.other_done_after, 1);
    ck_assert_ptr_eq(h.t_val, (void *)0x66);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 3);
    ck_assert_uint_eq(s.run_stolen, 1); /* t, by the root's get */
    sf_release(other);
    sf_release(root);
    sf_shutdown();
}
END_TEST

/* Deep chains: each level's task in its frame; past the red line the maker
 * moves it into a libsf future and gets it on a fresh stack. */
static void *chain(void *arg)
{
    long d = (long)arg;
    if (d == 0)
        return (void *)0L;
    sf_task t;
    ck_assert_int_eq(sf_task_do(&t, chain, (void *)(d - 1)), 0);
    return (void *)((long)sf_task_get(&t) + 1);
}

/* Deep enough to pass the red line of an 8 MiB stack in every build.  Under
 * ThreadSanitizer a thread nests at most 1,024 tasks before it continues on a
 * fresh stack (runtime/registry/registry.h), and each level costs it memory: 5,000
 * levels switch stacks four times.  AddressSanitizer's frames are not on the
 * thread's stack, so it needs the full depth.  TU_DEEP_CHAIN overrides. */
#if defined(__SANITIZE_THREAD__)
#define DEEP_CHAIN 5000L
#define DEEP_CHAIN_STACKS 3u /* fresh stacks at least */
#else
#define DEEP_CHAIN 100000L
#define DEEP_CHAIN_STACKS 1u
#endif
static long deep_chain_depth(void)
{
    const char *e = getenv("TU_DEEP_CHAIN");
    return e ? atol(e) : DEEP_CHAIN;
}

START_TEST(deep_chain)
{
    long depth = deep_chain_depth();
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq((long)chain((void *)depth), depth);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, (unsigned long)depth);
    ck_assert_uint_ge(s.fresh_stacks, DEEP_CHAIN_STACKS);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, (unsigned long)depth);
    sf_shutdown();
}
END_TEST

/* Loops and batches run bodies that use tasks in their frames. */
static atomic_long loop_sum;

static void body(long i, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&loop_sum, (long)tfib((void *)(i % 15)));
}

static void *batch_task(void *arg) { return tfib(arg); }

START_TEST(loops_and_batches)
{
    tu_env_threads(4);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(sf_for(0, 300, body, NULL), 0);
    long want = 0;
    for (long i = 0; i < 300; i++)
        want += tu_fib_exact((int)(i % 15));
    ck_assert_int_eq(atomic_load(&loop_sum), want);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    sf_future *f[40];
    for (long i = 0; i < 40; i++)
        ck_assert_ptr_nonnull(f[i] = sf_batch_do(b, batch_task, (void *)(i % 20)));
    ck_assert_int_eq(sf_batch_wait(b), 0);
    for (long i = 0; i < 40; i++) {
        ck_assert_int_eq((long)sf_get(f[i]), tu_fib_exact((int)(i % 20)));
        sf_release(f[i]);
    }
    sf_batch_close(b);
    sf_shutdown();
}
END_TEST

/* Many threads at once, each its own tasks, on 4 runtime threads. */
static void *thread_fib(void *arg)
{
    long sum = 0;
    for (int r = 0; r < 5; r++)
        sum += (long)tfib(arg);
    return (void *)sum;
}

START_TEST(many_threads)
{
    tu_env_threads(4);
    ck_assert_int_eq(sf_init(NULL), 0);
    enum { T = 64 };
    pthread_t th[T];
    for (long i = 0; i < T; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, thread_fib, (void *)(10 + i % 8)), 0);
    for (long i = 0; i < T; i++) {
        void *r;
        pthread_join(th[i], &r);
        ck_assert_int_eq((long)r, 5 * tu_fib_exact((int)(10 + i % 8)));
    }
    sf_shutdown();
}
END_TEST

/* Traced, the same results; every task's life is in the trace. */
START_TEST(traced)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "task-trace");
    tu_env_threads(2);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq((long)tfib((void *)15L), tu_fib_exact(15));
    sf_task t;
    ck_assert_int_eq(sf_task_do(&t, fail_with, (void *)(long)EIO), 0);
    errno = 0;
    ck_assert_ptr_null(sf_task_get(&t));
    ck_assert_int_eq(errno, EIO);
    ck_assert_str_eq(sf_task_error_message(), "code 5");
    sf_stats s = tu_stats_quiet();
    sf_shutdown();
    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    /* One Do line per task made, one FDone per task run (trace_format.h). */
    uint64_t dos = 0, dones = 0;
    for (const char *p = text; (p = strstr(p, "\tDo\t")) != NULL; p++)
        dos++;
    for (const char *p = text; (p = strstr(p, "\tFDone\t")) != NULL; p++)
        dones++;
    ck_assert_uint_eq(dos, s.created);
    ck_assert_uint_eq(dones, s.created);
    free(text);
    /* Gets of tasks promoted to futures (a worker asked) included. */
    tu_sftrace_check(SFTRACE_BIN, NULL, path);
    unlink(path);
}
END_TEST

static Suite *task_suite(void)
{
    Suite *s = suite_create("task");
    TCase *tc = tcase_create("task");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fib_1);
    tcase_add_test(tc, fib_2);
    tcase_add_test(tc, fib_4);
    tcase_add_test(tc, do_only_queues);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, failures_1);
    tcase_add_test(tc, failures_4);
    tcase_add_test(tc, any_order);
    tcase_add_test(tc, mixed_tree);
    tcase_add_test(tc, local_tree_in_order_1);
    tcase_add_test(tc, local_tree_in_order_2);
    tcase_add_test(tc, local_tree_in_order_4);
    tcase_add_test(tc, helping_runs_local_tasks);
    tcase_add_test(tc, loops_and_batches);
    tcase_add_test(tc, many_threads);
    tcase_add_test(tc, traced);
    suite_add_tcase(s, tc);
    /* Its own case: a sanitizer makes each fresh stack slow. */
    TCase *deep_tc = tcase_create("deep");
    tcase_set_timeout(deep_tc, 120);
    tcase_add_test(deep_tc, deep_chain);
    suite_add_tcase(s, deep_tc);
    return s;
}

TU_MAIN(task_suite)
