/*
 * test_combined.c - the entry points of the runtime used together, the way
 * programs mix them: parallel loops whose bodies get futures another thread
 * queued (handed over, so their owner starts pushing publicly), batches
 * whose tasks run loops and fork-join trees, loops that add to batches, and
 * dozens of threads of the program doing all of it at once. Every value is
 * checked exactly, every task runs exactly once, and the statistics add up
 * once the runtime is quiet, at SF_THREADS 1, 2 and 4.
 */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const int thread_counts[] = {1, 2, 4};

#define HANDED 1500

static sf_future *handed[HANDED];
static atomic_int handed_runs[HANDED];
static long handed_got[HANDED];
static int handed_errno[HANDED];

/* fib(10 + i % 8), counting its runs. */
static void *handed_task(void *arg)
{
    long i = (long)arg;
    atomic_fetch_add(&handed_runs[i], 1);
    return tu_fib((void *)(10 + i % 8));
}

static void get_handed(long i, void *ctx)
{
    (void)ctx;
    errno = 0;
    /* Plain gets and isolated ones, side by side. */
    handed_got[i] = (long)(i % 2 == 0 ? sf_get(handed[i]) : sf_get_isolated(handed[i]));
    handed_errno[i] = errno;
}

/* The caller queues futures and never gets them; a loop's bodies get them,
 * on whichever thread runs each index: the first such get of a private
 * future hands it over. Newest first, oldest first and by a stride, to meet
 * the queue from every side. Getting futures made outside the loop is
 * handing them to siblings; before loops had closed regions (get.c,
 * Isolation) this failed with EDEADLK in 7 of 20 runs under ASan at
 * SF_THREADS=4 (a worker, helping inside a handed task, ran a participant
 * whose body waited for a handed task below it), and a nested fib then
 * summed a NULL. */
START_TEST(loop_bodies_get_futures_the_caller_queued)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (int round = 0; round < 3; round++) {
        for (long i = 0; i < HANDED; i++) {
            atomic_store(&handed_runs[i], 0);
            handed_got[i] = -1;
            ck_assert_ptr_nonnull(handed[i] = sf_do(handed_task, (void *)i));
        }
        if (round == 0) {
            ck_assert_int_eq(sf_for(0, HANDED, get_handed, NULL), 0);
        } else if (round == 1) {
            for (long i = HANDED - 1; i >= 0; i -= 100) /* a few got here first */
                get_handed(i, NULL);
            ck_assert_int_eq(sf_for(0, HANDED, get_handed, NULL), 0);
        } else {
            ck_assert_int_eq(sf_for(HANDED / 2, HANDED, get_handed, NULL), 0);
            ck_assert_int_eq(sf_for(0, HANDED / 2, get_handed, NULL), 0);
        }
        for (long i = 0; i < HANDED; i++) {
            ck_assert_msg(handed_got[i] == tu_fib_exact(10 + (int)(i % 8)),
                          "round %d, future %ld: got %ld (errno %d: %s), want %ld", round, i,
                          handed_got[i], handed_errno[i], strerror(handed_errno[i]),
                          tu_fib_exact(10 + (int)(i % 8)));
            ck_assert_int_eq(atomic_load(&handed_runs[i]), 1);
            sf_release(handed[i]);
        }
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.discarded, 0);
    ck_assert_uint_eq(s.queued, 0);
    sf_shutdown();
}
END_TEST

/* ---- batches whose tasks run loops and trees ---- */

#define JOBS 120
#define JOB_WIDTH 64

struct job {
    long id;
    long sum[JOB_WIDTH];
};
static struct job jobs[2][JOBS];
static atomic_int job_runs[2][JOBS];

static void job_body(long i, void *ctx)
{
    struct job *j = ctx;
    sf_future *f = sf_do(tu_fib, (void *)(6 + (j->id + i) % 9));
    j->sum[i] = (long)sf_get(f) + i;
    sf_release(f);
}

static void *job_task(void *arg)
{
    struct job *j = arg;
    atomic_fetch_add(&job_runs[j - jobs[0] >= JOBS][j->id], 1);
    if (sf_for(0, JOB_WIDTH, job_body, j) != 0)
        return (void *)-1;
    long t = 0;
    for (int i = 0; i < JOB_WIDTH; i++)
        t += j->sum[i];
    return (void *)t;
}

static long job_expect(long id)
{
    long t = 0;
    for (long i = 0; i < JOB_WIDTH; i++)
        t += tu_fib_exact((int)(6 + (id + i) % 9)) + i;
    return t;
}

/* One batch of jobs from this thread: added, waited for, each got. */
static void *run_batch(void *arg)
{
    int which = (int)(long)arg;
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    sf_future *f[JOBS];
    for (long i = 0; i < JOBS; i++) {
        jobs[which][i].id = i;
        atomic_store(&job_runs[which][i], 0);
        ck_assert_ptr_nonnull(f[i] = sf_batch_do(b, job_task, &jobs[which][i]));
    }
    ck_assert_int_eq(sf_batch_wait(b), 0);
    for (long i = 0; i < JOBS; i++) {
        ck_assert_int_eq(sf_is_done(f[i]), 1);
        ck_assert_int_eq((long)sf_get(f[i]), job_expect(i));
        ck_assert_int_eq(atomic_load(&job_runs[which][i]), 1);
        sf_release(f[i]);
    }
    sf_batch_close(b);
    return NULL;
}

/* Two batches at once, from two threads: their tasks run parallel loops
 * whose bodies fork and join; the waits help. */
START_TEST(batch_tasks_run_loops_of_trees)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, run_batch, (void *)1L), 0);
    run_batch((void *)0L);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}
END_TEST

/* ---- a loop that adds to a batch ---- */

#define ADDS 3000
static sf_batch *shared_batch;
static sf_future *added[ADDS];

static void *square(void *arg)
{
    long x = (long)arg;
    return (void *)(x * x);
}

static void add_one(long i, void *ctx)
{
    (void)ctx;
    added[i] = sf_batch_do(shared_batch, square, (void *)i);
}

/* The adds come from every participant of a loop, so from several threads
 * at once, into one batch; some are got before the wait, the rest after. */
START_TEST(loop_bodies_add_to_one_batch)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_ptr_nonnull(shared_batch = sf_batch_new());
    ck_assert_int_eq(sf_for(0, ADDS, add_one, NULL), 0);
    for (long i = 0; i < ADDS; i += 7)
        ck_assert_int_eq((long)sf_get(added[i]), i * i);
    ck_assert_int_eq(sf_batch_wait(shared_batch), 0);
    for (long i = 0; i < ADDS; i++) {
        ck_assert_ptr_nonnull(added[i]);
        ck_assert_int_eq((long)sf_get(added[i]), i * i);
        sf_release(added[i]);
    }
    sf_batch_close(shared_batch);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}
END_TEST

/* ---- many threads of the program, each mixing everything ---- */

#define MIXERS 48
#define MIX_N 200

static void mix_body(long i, void *ctx)
{
    long *out = ctx;
    out[i] = (long)tu_fib((void *)(i % 12));
}

static void *mixer(void *arg)
{
    long id = (long)arg;
    long out[MIX_N];
    /* A loop with fork-join in its bodies. */
    if (sf_for(0, MIX_N, mix_body, out) != 0)
        return (void *)1;
    for (long i = 0; i < MIX_N; i++)
        if (out[i] != tu_fib_exact((int)(i % 12)))
            return (void *)2;
    /* A small batch of its own, got without a wait. */
    sf_batch *b = sf_batch_new();
    if (b == NULL)
        return (void *)3;
    sf_future *f[8];
    for (long i = 0; i < 8; i++)
        if ((f[i] = sf_batch_do(b, square, (void *)(id + i))) == NULL)
            return (void *)4;
    sf_batch_close(b);
    for (long i = 0; i < 8; i++) {
        if ((long)sf_get(f[i]) != (id + i) * (id + i))
            return (void *)5;
        sf_release(f[i]);
    }
    /* A tree, and a future left to the next mixer's thread to release. */
    sf_future *g = sf_do(tu_fib, (void *)15L);
    if (g == NULL || (long)sf_get(g) != tu_fib_exact(15))
        return (void *)6;
    sf_release(g);
    return NULL;
}

/* 48 threads of the program at once, each with a parallel loop of
 * fork-join bodies, a batch it closes before getting its tasks, and a tree. */
START_TEST(many_threads_mix_everything)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t t[MIXERS];
    for (long i = 0; i < MIXERS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, mixer, (void *)i), 0);
    for (int i = 0; i < MIXERS; i++) {
        void *r;
        ck_assert_int_eq(pthread_join(t[i], &r), 0);
        ck_assert_msg(r == NULL, "mixer %d failed at step %ld", i, (long)r);
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}
END_TEST

static Suite *combined_suite(void)
{
    Suite *s = suite_create("combined");
    TCase *tc = tcase_create("combined");
    tcase_set_timeout(tc, TU_SANITIZED ? 600 : 120);
    int n = (int)(sizeof thread_counts / sizeof thread_counts[0]);
    tcase_add_loop_test(tc, loop_bodies_get_futures_the_caller_queued, 0, n);
    tcase_add_loop_test(tc, batch_tasks_run_loops_of_trees, 0, n);
    tcase_add_loop_test(tc, loop_bodies_add_to_one_batch, 0, n);
    tcase_add_loop_test(tc, many_threads_mix_everything, 0, n);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(combined_suite)
