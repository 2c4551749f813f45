/*
 * test_memory.c - memory comes back: after a burst of pending futures is
 * released, the futures' slabs and the queue's grown ring are given back to
 * the system (runtime/future/future.c, runtime/queue/pending.h), measured as the
 * process's resident set. The memory is reused by the next burst, and
 * futures handed out from discarded slabs work as any other.
 *
 * The same holds for futures handed between threads in a pipeline, which
 * come back to their producers recycled (handed_over_futures_keep_memory_flat).
 *
 * Sizes: a burst of 1 M futures (38 MiB with its ring) and pipelines of 2 M
 * items, enough to tell memory that comes back from memory that stays.
 * SF_MEMORY_SCALE=N multiplies both; tools/soak runs N=10 (10 M futures, 20
 * M items). Under a sanitizer the resident set is not the runtime's to judge
 * (shadow memory of discarded pages stays resident): there the runs are
 * smaller and only their results are checked.
 */
#include "testutil.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024.0 * 1024.0)

static long scale = 1; /* SF_MEMORY_SCALE */
static long burst_n, pipe_items;

static double rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    long size, resident;
    ck_assert_int_eq(fscanf(f, "%ld %ld", &size, &resident), 2);
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / MIB;
}

static void *plus_one(void *arg) { return (void *)((long)arg + 1); }

/* Makes burst_n pending futures, releases them oldest first (none runs),
 * and returns the resident set at the peak. */
static double burst(sf_future **f)
{
    for (long i = 0; i < burst_n; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(plus_one, (void *)i));
    double peak = rss_mib();
    for (long i = 0; i < burst_n; i++)
        sf_release(f[i]);
    return peak;
}

static const int thread_counts[] = {1, 2};

START_TEST(released_burst_gives_memory_back)
{
    tu_env_threads(thread_counts[_i]);
    sf_future **f = malloc((size_t)burst_n * sizeof *f);
    ck_assert_ptr_nonnull(f);
    /* The handles array is the test's: make it resident before measuring
     * (non-zero, or the compiler makes the loop a calloc). */
    for (long i = 0; i < burst_n; i++)
        f[i] = (sf_future *)(i + 1);
    sf_future *w = sf_do(tu_fib, (void *)15L); /* the runtime starts, warm */
    ck_assert_ptr_eq(sf_get(w), (void *)tu_fib_exact(15));
    sf_release(w);
    double before = rss_mib();
    /* Two rounds at one thread: the second reuses what the first gave back. */
    int rounds = _i == 0 ? 2 : 1;
    for (int round = 0; round < rounds; round++) {
        double peak = burst(f);
        /* The releases themselves give the memory back (the releasing
         * thread discards each slab its spills complete, and trims and
         * shrinks its own ring): nothing to wait for. */
        double after = rss_mib();
        fprintf(stderr, "round %d, %ld futures: RSS before %.1f MiB, peak %.1f, after release %.1f\n",
                round, burst_n, before, peak, after);
#if !TU_SANITIZED
        /* Futures of sizeof(sf_task) bytes and a ring of 8-byte slots at the
         * peak; after, what threads keep on their free lists (SF__SPILL_AT
         * futures, 1 MiB, each), partly used slabs and the smallest ring,
         * whatever the burst's size. */
        double made = (double)burst_n * (double)sizeof(sf_task) / MIB;
        ck_assert_msg(peak - before >= 0.9 * made, "peak %.1f MiB, before %.1f", peak, before);
        ck_assert_msg(after <= before + 8, "after %.1f MiB, before %.1f", after, before);
#endif
        /* Futures from discarded slabs work: exact results. */
        sf_future *g = sf_do(tu_fib, (void *)20L);
        ck_assert_ptr_eq(sf_get(g), (void *)tu_fib_exact(20));
        sf_release(g);
    }
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_uint_eq(s.discarded, (uint64_t)rounds * (uint64_t)burst_n);
    free(f);
    sf_shutdown();
}
END_TEST

/*
 * Handed-over futures (issue: a producer's queue grew without bound). A
 * pipeline of threads: stage 0 queues sf_do(inc, i) and hands each future
 * on through a ring; every middle stage wraps the future it takes in a
 * task of its own, sf_do(get_and_release, f), and hands that on; the test's
 * thread gets the last stage's futures in order. Nobody but the last
 * stage ever gets anything, so the producers' queues trim only when their
 * rings fill, and their futures come back to them recycled through the
 * global stash (pending.h, Stale slots). The resident set stays flat, and
 * every item comes out exact.
 */
#define PIPE_RING 1024

struct hand_ring {
    sf_future *slot[PIPE_RING];
    _Alignas(64) atomic_long head;
    _Alignas(64) atomic_long tail;
};

struct pipe {
    struct hand_ring ring[3]; /* ring[k]: stage k to stage k + 1 */
    int stages;               /* producing stages, before the getter */
    bool isolated;
    pthread_t tid[3];
};

static void hand_put(struct hand_ring *r, sf_future *f)
{
    long t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    while (t - atomic_load_explicit(&r->head, memory_order_acquire) >= PIPE_RING)
        sched_yield();
    r->slot[t % PIPE_RING] = f;
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
}

static sf_future *hand_take(struct hand_ring *r)
{
    long h = atomic_load_explicit(&r->head, memory_order_relaxed);
    while (atomic_load_explicit(&r->tail, memory_order_acquire) == h)
        sched_yield();
    sf_future *f = r->slot[h % PIPE_RING];
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return f;
}

static bool pipe_isolated;

static void *pipe_get(sf_future *f)
{
    return pipe_isolated ? sf_get_isolated(f) : sf_get(f);
}

/* A middle stage's task: doubles what the handed future gives. */
static void *get_and_release(void *arg)
{
    sf_future *f = arg;
    long v = (long)pipe_get(f);
    sf_release(f);
    return (void *)(2 * v);
}

struct stage {
    struct pipe *p;
    int k;
};

static void *stage_main(void *arg)
{
    struct stage *st = arg;
    struct pipe *p = st->p;
    for (long i = 0; i < pipe_items; i++) {
        sf_future *f = st->k == 0 ? sf_do(plus_one, (void *)i)
                                  : sf_do(get_and_release, hand_take(&p->ring[st->k - 1]));
        if (f == NULL)
            abort(); /* no memory: the test's thread would wait for ever */
        hand_put(&p->ring[st->k], f);
    }
    return NULL;
}

/* {threads, producing stages, isolated gets} */
static const int pipe_cases[][3] = {{2, 2, 0}, {2, 2, 1}, {4, 2, 0}, {4, 2, 1}, {4, 3, 1}};

START_TEST(handed_over_futures_keep_memory_flat)
{
    tu_env_threads(pipe_cases[_i][0]);
    static struct pipe p;
    memset(&p, 0, sizeof p);
    p.stages = pipe_cases[_i][1];
    pipe_isolated = pipe_cases[_i][2];
    struct stage st[3];
    for (int k = 0; k < p.stages; k++) {
        st[k] = (struct stage){&p, k};
        ck_assert_int_eq(pthread_create(&p.tid[k], NULL, stage_main, &st[k]), 0);
    }
    double warm = 0;
    long wrong = 0;
    for (long i = 0; i < pipe_items; i++) {
        sf_future *f = hand_take(&p.ring[p.stages - 1]);
        long v = (long)pipe_get(f);
        sf_release(f);
        /* i + 1 from stage 0, doubled by each middle stage */
        if (v != (i + 1) << (p.stages - 1))
            wrong++;
        if (i == pipe_items / 10)
            warm = rss_mib();
    }
    for (int k = 0; k < p.stages; k++)
        pthread_join(p.tid[k], NULL);
    double end = rss_mib();
    fprintf(stderr, "pipeline of %d stages, %ld items, %s gets at %d threads: RSS %.1f MiB "
                    "at a tenth, %.1f at the end\n",
            p.stages + 1, pipe_items, pipe_isolated ? "isolated" : "plain", pipe_cases[_i][0],
            warm, end);
    ck_assert_int_eq(wrong, 0);
#if !TU_SANITIZED
    /* 8 bytes an item would be 13.7 MiB over the last nine tenths of 2 M. */
    ck_assert_msg(end - warm <= 4, "RSS %.1f MiB at a tenth, %.1f at the end", warm, end);
#endif
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, (uint64_t)p.stages * (uint64_t)pipe_items);
    sf_shutdown();
}
END_TEST

/* SF_MEMORY_SCALE, read before any test forks. */
static void read_scale(void)
{
    const char *v = getenv("SF_MEMORY_SCALE");
    if (v != NULL && *v != '\0') {
        char *end;
        errno = 0;
        scale = strtol(v, &end, 10);
        if (errno != 0 || *end != '\0' || scale < 1 || scale > 1000) {
            fprintf(stderr, "test_memory: SF_MEMORY_SCALE=%s: want a whole number, 1 to 1000\n", v);
            exit(2);
        }
    }
    burst_n = scale * (TU_SANITIZED ? 200000L : 1000000L);
    pipe_items = scale * (TU_SANITIZED ? 100000L : 2000000L);
}

static Suite *memory_suite(void)
{
    read_scale();
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("memory");
    tcase_set_timeout(tc, 120 * (double)scale);
    tcase_add_loop_test(tc, released_burst_gives_memory_back, 0,
                        (int)(sizeof thread_counts / sizeof thread_counts[0]));
    tcase_add_loop_test(tc, handed_over_futures_keep_memory_flat, 0,
                        (int)(sizeof pipe_cases / sizeof pipe_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(memory_suite)
