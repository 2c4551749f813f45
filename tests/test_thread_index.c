/*
 * test_thread_index.c - sf_thread_index() and sf_thread_count(): an index
 * per live thread that uses libsf, unique, stable, reused after exit.
 *
 *   unique      with the pool busy on one task per worker, then with 8
 *               threads of the program looping over nested fork-join at
 *               once (a barrier holds them all alive): no two live threads
 *               ever report one index, every index is below the count, and
 *               the indices are exactly 0 .. count - 1;
 *   stable      the same index before and after nested gets, and across a
 *               park: a task whose get parks it, while its thread runs
 *               another task on a second fiber, goes on with its index;
 *   reuse       1,000 short-lived threads, 10 alive at once, each with its
 *               own index: the count stays at the pool plus 10;
 *   first call  either call starts the runtime and registers the caller as
 *               sf_do() would; a later runtime numbers threads afresh.
 */
#include "testutil.h"

#include <errno.h>

#define MAXI 64
#define NFOREIGN 8
#define WAIT_MS 10000

/* Which live thread holds each index: the address of its own `tok`, set by
 * the first thread that reports the index and never cleared (every thread
 * of a case stays alive until the checks end). */
static _Thread_local char tok;
static _Atomic(void *) owner[MAXI];
static atomic_int bad_index = -1; /* an index two threads reported, or one out of range */
static atomic_int moved;          /* a thread's index changed under it */

/* The calling thread reports idx as its own. */
static void note(int idx)
{
    int count = sf_thread_count();
    if (idx < 0 || idx >= MAXI || idx >= count) {
        atomic_store(&bad_index, idx);
        return;
    }
    void *want = NULL;
    if (!atomic_compare_exchange_strong(&owner[idx], &want, (void *)&tok) && want != &tok)
        atomic_store(&bad_index, idx);
}

static void reset_owners(void)
{
    for (int i = 0; i < MAXI; i++)
        atomic_store(&owner[i], NULL);
    atomic_store(&bad_index, -1);
    atomic_store(&moved, 0);
}

static int owned(void)
{
    int n = 0;
    for (int i = 0; i < MAXI; i++)
        n += atomic_load(&owner[i]) != NULL;
    return n;
}

/* fib(n), each task reporting its thread's index before and after its gets. */
static void *fib_noting(void *arg)
{
    long n = (long)arg;
    int i0 = sf_thread_index();
    note(i0);
    if (n < 2)
        return arg;
    sf_future *a = sf_do(fib_noting, (void *)(n - 1));
    sf_future *b = sf_do(fib_noting, (void *)(n - 2));
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    long x = (long)sf_get(b) + (long)sf_get(a);
    sf_release(a);
    sf_release(b);
    if (sf_thread_index() != i0)
        atomic_store(&moved, 1);
    return (void *)x;
}

/* One task per thread of the pool: each holds its thread until all have
 * started, so each ran on a different thread. */
static atomic_int arrived;
static void *hold_until_all(void *arg)
{
    note(sf_thread_index());
    atomic_fetch_add(&arrived, 1);
    return tu_wait_count(&arrived, (int)(long)arg, WAIT_MS) ? (void *)1L : NULL;
}

static pthread_barrier_t all_alive, all_checked;
static int foreign_idx[NFOREIGN];

static void fib_rounds(void)
{
    for (int r = 0; r < 20; r++)
        ck_assert_int_eq((long)fib_noting((void *)14L), tu_fib_exact(14));
}

static void *foreign_main(void *arg)
{
    long k = (long)arg;
    pthread_barrier_wait(&all_alive);
    int i = sf_thread_index();
    foreign_idx[k] = i;
    note(i);
    fib_rounds();
    if (sf_thread_index() != i)
        atomic_store(&moved, 1);
    pthread_barrier_wait(&all_checked); /* nobody exits while others check */
    return NULL;
}

/* SF_THREADS=4: the starter is 0 and the 3 workers 1 .. 3, registered when
 * sf_init returns; 8 threads of the program then take 4 .. 11, and all 12
 * run tasks at once without sharing an index. */
START_TEST(unique_among_live_threads_workers_included)
{
    tu_env_threads(4);
    reset_owners();
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(sf_thread_count(), 4);
    ck_assert_int_eq(sf_thread_index(), 0);
    /* A task on every thread of the pool. */
    sf_future *f[4];
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(hold_until_all, (void *)4L));
    for (int i = 3; i >= 0; i--) {
        ck_assert_ptr_eq(sf_get(f[i]), (void *)1L);
        sf_release(f[i]);
    }
    ck_assert_int_eq(atomic_load(&bad_index), -1);
    ck_assert_int_eq(owned(), 4); /* 0 .. 3: four threads, four indices */
    /* 8 threads of the program beside them, all alive at once. */
    ck_assert_int_eq(pthread_barrier_init(&all_alive, NULL, NFOREIGN + 1), 0);
    ck_assert_int_eq(pthread_barrier_init(&all_checked, NULL, NFOREIGN + 1), 0);
    pthread_t t[NFOREIGN];
    for (long k = 0; k < NFOREIGN; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, foreign_main, (void *)k), 0);
    pthread_barrier_wait(&all_alive);
    fib_rounds();
    pthread_barrier_wait(&all_checked);
    for (int k = 0; k < NFOREIGN; k++)
        pthread_join(t[k], NULL);
    ck_assert_msg(atomic_load(&bad_index) == -1,
                  "index %d was reported by two live threads, or is out of range",
                  atomic_load(&bad_index));
    ck_assert_int_eq(atomic_load(&moved), 0);
    ck_assert_int_eq(sf_thread_count(), 4 + NFOREIGN);
    ck_assert_int_eq(owned(), 4 + NFOREIGN); /* exactly 0 .. 11 */
    int seen = 0;
    for (int k = 0; k < NFOREIGN; k++) {
        ck_assert_int_ge(foreign_idx[k], 4);
        ck_assert_int_lt(foreign_idx[k], 4 + NFOREIGN);
        seen |= 1 << foreign_idx[k];
    }
    ck_assert_int_eq(seen, 0xff0);
    sf_shutdown();
}
END_TEST

/*
 * A park, deterministic at SF_THREADS=2: G runs on the worker and holds it
 * until H has started. W, run by the main thread's get, makes H and gets G:
 * G runs elsewhere, so W's get helps with H, the only pending task of W's
 * region, on another fiber, W's parked beneath it. H runs on W's thread; W
 * resumes there once G is done, with the index it had.
 */
static atomic_int g_running, h_started;
static int w_before = -2, w_after = -2, h_idx = -2, g_before = -2, g_after = -2;
static sf_future *g_future, *h_future;

static void *g_task(void *arg)
{
    g_before = sf_thread_index();
    atomic_store(&g_running, 1);
    int ok = tu_wait_flag(&h_started, WAIT_MS);
    g_after = sf_thread_index();
    return ok ? arg : NULL;
}

static void *h_task(void *arg)
{
    h_idx = sf_thread_index();
    atomic_store(&h_started, 1);
    return arg;
}

static void *w_task(void *arg)
{
    w_before = sf_thread_index();
    if ((h_future = sf_do(h_task, (void *)8L)) == NULL)
        return NULL;
    void *v = sf_get(g_future);
    w_after = sf_thread_index();
    return v == (void *)7L ? arg : NULL;
}

START_TEST(stable_across_a_park)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    g_future = sf_do(g_task, (void *)7L);
    ck_assert_ptr_nonnull(g_future);
    /* A get submits G; the idle worker takes it. */
    sf_future *kick = sf_do(tu_fib, (void *)1L);
    ck_assert_ptr_nonnull(kick);
    ck_assert_ptr_eq(sf_get(kick), (void *)1L);
    sf_release(kick);
    ck_assert_int_eq(tu_wait_flag(&g_running, WAIT_MS), 1);
    sf_future *w = sf_do(w_task, (void *)9L);
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_eq(sf_get(w), (void *)9L);
    ck_assert_ptr_nonnull(h_future);
    ck_assert_ptr_eq(sf_get(h_future), (void *)8L);
    ck_assert_ptr_eq(sf_get(g_future), (void *)7L);
    sf_release(w);
    sf_release(h_future);
    sf_release(g_future);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_ge(s.parks, 1);
    ck_assert_int_eq(w_before, 0);
    ck_assert_int_eq(w_after, 0);
    ck_assert_int_eq(h_idx, 0); /* helped on W's thread */
    ck_assert_int_eq(g_before, 1);
    ck_assert_int_eq(g_after, 1);
    sf_shutdown();
}
END_TEST

/* 1,000 threads, in 100 waves of 10 alive at once: each wave reuses the
 * indices the last one left, so the count stays 2 + 10 (SF_THREADS=2). */
#define WAVE 10
static pthread_barrier_t wave_alive, wave_checked;
static int wave_idx[WAVE];

static void *short_lived(void *arg)
{
    long k = (long)arg;
    int i = sf_thread_index();
    wave_idx[k] = i;
    note(i);
    ck_assert_int_eq((long)fib_noting((void *)8L), tu_fib_exact(8));
    pthread_barrier_wait(&wave_alive);   /* all 10 have their index */
    pthread_barrier_wait(&wave_checked); /* ... and the main thread checked them */
    return NULL;
}

START_TEST(indices_of_exited_threads_are_reused)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(pthread_barrier_init(&wave_alive, NULL, WAVE + 1), 0);
    ck_assert_int_eq(pthread_barrier_init(&wave_checked, NULL, WAVE + 1), 0);
    for (int wave = 0; wave < 100; wave++) {
        reset_owners();
        note(sf_thread_index()); /* the main thread and ... */
        pthread_t t[WAVE];
        for (long k = 0; k < WAVE; k++)
            ck_assert_int_eq(pthread_create(&t[k], NULL, short_lived, (void *)k), 0);
        pthread_barrier_wait(&wave_alive);
        ck_assert_msg(atomic_load(&bad_index) == -1, "wave %d: index %d reported twice", wave,
                      atomic_load(&bad_index));
        int seen = 0;
        for (int k = 0; k < WAVE; k++) {
            ck_assert_int_ge(wave_idx[k], 2); /* 0: main, 1: the worker */
            ck_assert_int_lt(wave_idx[k], 2 + WAVE);
            seen |= 1 << wave_idx[k];
        }
        ck_assert_int_eq(seen, ((1 << WAVE) - 1) << 2);
        pthread_barrier_wait(&wave_checked);
        for (int k = 0; k < WAVE; k++)
            pthread_join(t[k], NULL);
        ck_assert_int_eq(sf_thread_count(), 2 + WAVE);
    }
    ck_assert_int_eq(atomic_load(&moved), 0);
    pthread_barrier_destroy(&wave_alive);
    pthread_barrier_destroy(&wave_checked);
    sf_shutdown();
}
END_TEST

static void *index_of_new_thread(void *arg)
{
    (void)arg;
    int i = sf_thread_index();
    int n = sf_thread_count();
    return (void *)(long)(i * 1000 + n);
}

/* Either call starts the runtime (SF_THREADS=3: the caller 0, the workers 1
 * and 2) and registers its caller; after sf_shutdown a new runtime numbers
 * threads afresh, and a thread that exited leaves its index to the next. */
START_TEST(first_call_starts_and_registers)
{
    tu_env_threads(3);
    ck_assert_int_eq(sf_thread_count(), 3);
    ck_assert_int_eq(sf_thread_index(), 0);
    ck_assert_int_eq((long)tu_run_on_thread(index_of_new_thread, NULL, 0), 3 * 1000 + 4);
    ck_assert_int_eq(sf_thread_count(), 4);
    sf_shutdown();
    /* A new runtime, started by another thread: it is 0 there, then exits
     * and the main thread takes its index. */
    ck_assert_int_eq((long)tu_run_on_thread(index_of_new_thread, NULL, 0), 0 * 1000 + 3);
    ck_assert_int_eq(sf_thread_index(), 0);
    ck_assert_int_eq(sf_thread_count(), 3);
    sf_shutdown();
    errno = 0;
    ck_assert_int_eq(sf_thread_index(), 0); /* starts a third runtime */
    ck_assert_int_eq(errno, 0);
    sf_shutdown();
}
END_TEST

static Suite *thread_index_suite(void)
{
    Suite *s = suite_create("thread_index");
    TCase *tc = tcase_create("thread_index");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, unique_among_live_threads_workers_included);
    tcase_add_test(tc, stable_across_a_park);
    tcase_add_test(tc, indices_of_exited_threads_are_reused);
    tcase_add_test(tc, first_call_starts_and_registers);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(thread_index_suite)
