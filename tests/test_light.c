/*
 * test_light.c - light tasks (sf.h, Light tasks: sf_light, sf_spawn,
 * sf_sync; docs/light.md): exact results of fib, nqueens, a hashed tree
 * and a loop of 100,000 spawns, each light task run exactly once; more
 * than 2^20 spawns outstanding on one deque, and tasks past its room that
 * spawn; steals by idle workers (still after a storm of shares) and by a
 * blocked get, with consistent statistics, but not of a loop body's run
 * by a get outside the loop; light tasks that park in gets, one whose
 * wait leaves the rest to steal, a cycle of gets through a run; runs
 * nested in light tasks, in tasks and on 16 plain threads; failures,
 * cancellation, the ABI check, the trace; typed tasks (SF_LIGHT_TASK):
 * exact values of one to six parameters, structs and void, mixed with
 * sf_spawn() tasks, stolen, past the room, failing, cancelled and parked;
 * misuse in the debug build (an abort naming it, a sync of the wrong kind
 * too) and in a release build (no work lost).
 *
 * Each case runs at SF_THREADS 1, 2 and 4 unless it needs another thread
 * (2 and 4; 2 where the one worker must be busy) or one schedule (the
 * debug build's misuse children: 1, or 1 and 2). Tasks report a wrong
 * value through EXPECT, which the test asserts on at the end: an
 * assertion on a worker would not name the case.
 * A wait for another thread has a deadline (WAIT_MS) and counts as a
 * failure past it; the tcase timeout is the watchdog beyond that.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SFTRACE_BIN
#error "SFTRACE_BIN, the path of the built tools/sftrace/sftrace, comes from tests/local.mk"
#endif

#ifdef SF_DEBUG
#define DEBUG_BUILD 1
#else
#define DEBUG_BUILD 0
#endif

/* Sanitizers, and the debug build (every spawn and sync in the library),
 * are slower: smaller sizes there. */
#define SMALL (TU_SANITIZED || DEBUG_BUILD)

#define WAIT_MS 10000L

static const int threads_of[] = {1, 2, 4};

static void start(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
}

/* ---- checks made in tasks ---- */

static atomic_int bad, bad_line;

#define EXPECT(c)                                                                                  \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            int z_ = 0;                                                                            \
            atomic_compare_exchange_strong(&bad_line, &z_, __LINE__);                              \
            atomic_fetch_add(&bad, 1);                                                             \
        }                                                                                          \
    } while (0)

static void assert_no_bad(void)
{
    ck_assert_msg(atomic_load(&bad) == 0, "%d checks failed in tasks, the first at line %d",
                  atomic_load(&bad), atomic_load(&bad_line));
}

static void *wait_flag_task(void *arg)
{
    return tu_wait_flag(arg, WAIT_MS) ? (void *)1L : (void *)-1L;
}

/* ---- the programs ---- */

/* Run counters. Relaxed, both: a count, read only after the sync of its
 * task, which orders the task's writes before it (a sync waits as a get
 * does: sf.h, Memory). */
static void ran(atomic_int *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }
static int runs_of(atomic_int *c) { return atomic_load_explicit(c, memory_order_relaxed); }

/* fib: spawns fib(n - 1), calls fib(n - 2), syncs. Each task counts its
 * runs in its argument, which the spawner checks after the sync. */
struct fib_arg {
    long n;
    atomic_int runs;
};

static void *lfib(sf_worker *w, void *p)
{
    struct fib_arg *a = p;
    ran(&a->runs);
    if (a->n < 2)
        return (void *)a->n;
    struct fib_arg x = {a->n - 1, 0}, y = {a->n - 2, 0};
    sf_spawn(w, lfib, &x);
    long b = (long)lfib(w, &y);
    long c = (long)sf_sync(w);
    EXPECT(runs_of(&x.runs) == 1);
    return (void *)(b + c);
}

/* sf_light(lfib) of n: its value, the root run once. */
static long light_fib(long n)
{
    struct fib_arg a = {n, 0};
    long r = (long)sf_light(lfib, &a);
    EXPECT(atomic_load(&a.runs) == 1);
    return r;
}

/* nqueens: a task per placed queen, a spawn per free column of the next
 * row. */
struct nq_arg {
    int n, row;
    uint32_t cols, d1, d2;
    atomic_int runs;
};

static void *lnq(sf_worker *w, void *p)
{
    struct nq_arg *a = p;
    ran(&a->runs);
    if (a->row == a->n)
        return (void *)1L;
    struct nq_arg kids[32];
    int k = 0;
    for (int c = 0; c < a->n; c++) {
        uint32_t bc = 1u << c, b1 = 1u << (a->row + c), b2 = 1u << (a->row - c + a->n);
        if ((a->cols & bc) || (a->d1 & b1) || (a->d2 & b2))
            continue;
        kids[k] = (struct nq_arg){a->n, a->row + 1, a->cols | bc, a->d1 | b1, a->d2 | b2, 0};
        sf_spawn(w, lnq, &kids[k]);
        k++;
    }
    long sum = 0;
    while (k-- > 0) {
        sum += (long)sf_sync(w);
        EXPECT(runs_of(&kids[k].runs) == 1);
    }
    return (void *)sum;
}

static long light_nqueens(int n)
{
    struct nq_arg a = {n, 0, 0, 0, 0, 0};
    long r = (long)sf_light(lnq, &a);
    EXPECT(atomic_load(&a.runs) == 1);
    return r;
}

/* Tasks lnq spawns for n queens: the partial placements of 1..n rows. */
static long nq_nodes(int n, int row, uint32_t cols, uint32_t d1, uint32_t d2)
{
    long k = 0;
    for (int c = 0; row < n && c < n; c++) {
        uint32_t bc = 1u << c, b1 = 1u << (row + c), b2 = 1u << (row - c + n);
        if (!(cols & bc) && !(d1 & b1) && !(d2 & b2))
            k += 1 + nq_nodes(n, row + 1, cols | bc, d1 | b1, d2 | b2);
    }
    return k;
}

static long nqueens_exact(int n)
{
    static const long known[] = {1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200};
    return known[n];
}

/* A tree shaped by a hash (as UTS): a node of hash h at depth d below
 * max has h % 5 children, the root 4; child i's hash mixes h and i. */
static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static int uts_max_depth;

static int uts_kids(uint64_t h, int depth)
{
    if (depth == 0)
        return 4;
    return depth >= uts_max_depth ? 0 : (int)(h % 5);
}

static long uts_count(uint64_t h, int depth)
{
    long n = 1;
    for (int i = 0, k = uts_kids(h, depth); i < k; i++)
        n += uts_count(mix(h ^ (uint64_t)(i + 1)), depth + 1);
    return n;
}

struct uts_arg {
    uint64_t h;
    int depth;
    atomic_int runs;
};

static void *luts(sf_worker *w, void *p)
{
    struct uts_arg *a = p;
    ran(&a->runs);
    struct uts_arg kids[4];
    int k = uts_kids(a->h, a->depth);
    for (int i = 0; i < k; i++) {
        kids[i] = (struct uts_arg){mix(a->h ^ (uint64_t)(i + 1)), a->depth + 1, 0};
        sf_spawn(w, luts, &kids[i]);
    }
    long n = 1;
    while (k-- > 0) {
        n += (long)sf_sync(w);
        EXPECT(runs_of(&kids[k].runs) == 1);
    }
    return (void *)n;
}

/* A loop: n spawns of distinct values, then n syncs, each of which must
 * return the newest value not synced yet. */
static atomic_int *loop_runs;

static long loop_value(long i) { return 3 * i + 1; }

static void *loop_task(sf_worker *w, void *p)
{
    (void)w;
    long i = (long)p;
    ran(&loop_runs[i]);
    return (void *)loop_value(i);
}

static void *loop_root(sf_worker *w, void *p)
{
    long n = (long)p;
    for (long i = 0; i < n; i++)
        sf_spawn(w, loop_task, (void *)i);
    long sum = 0, wrong = 0;
    for (long i = n - 1; i >= 0; i--) {
        long v = (long)sf_sync(w);
        wrong += v != loop_value(i);
        sum += v;
    }
    EXPECT(wrong == 0);
    return (void *)sum;
}

/* Runs loop_root over n and checks its sum and every task's one run. */
static void loop_exact(long n)
{
    loop_runs = calloc((size_t)n, sizeof *loop_runs);
    ck_assert_ptr_nonnull(loop_runs);
    long sum = (long)sf_light(loop_root, (void *)n);
    ck_assert_int_eq(sum, 3 * (n * (n - 1) / 2) + n);
    long not_once = 0;
    for (long i = 0; i < n; i++)
        not_once += runs_of(&loop_runs[i]) != 1;
    ck_assert_int_eq(not_once, 0);
    free(loop_runs);
    loop_runs = NULL;
}

/* ---- exactness ---- */

START_TEST(fib_exact)
{
    start(threads_of[_i]);
    static const long ns[] = {0, 1, 2, 3, 10, 15, 20, 28};
    int k = sizeof ns / sizeof ns[0] - (SMALL ? 1 : 0);
    for (int j = 0; j < k; j++)
        ck_assert_int_eq(light_fib(ns[j]), tu_fib_exact((int)ns[j]));
    assert_no_bad();
    /* No task of sf_do's made, none stolen at 1 thread. */
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.run_inline + s.discarded + s.cancelled, 0);
    if (threads_of[_i] == 1)
        ck_assert_uint_eq(s.created, 0);
    sf_shutdown();
}
END_TEST

START_TEST(nqueens_exact_counts)
{
    start(threads_of[_i]);
    int top = SMALL ? 8 : 11;
    for (int n = 1; n <= top; n++)
        ck_assert_int_eq(light_nqueens(n), nqueens_exact(n));
    assert_no_bad();
    sf_shutdown();
}
END_TEST

START_TEST(tree_exact)
{
    start(threads_of[_i]);
    uts_max_depth = SMALL ? 13 : 18;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        long want = uts_count(seed, 0);
        ck_assert_int_gt(want, 1000); /* a tree worth the name */
        struct uts_arg a = {seed, 0, 0};
        ck_assert_int_eq((long)sf_light(luts, &a), want);
        ck_assert_int_eq(atomic_load(&a.runs), 1);
    }
    assert_no_bad();
    sf_shutdown();
}
END_TEST

START_TEST(loop_of_spawns_lifo)
{
    start(threads_of[_i]);
    loop_exact(100000);
    loop_exact(1);
    assert_no_bad();
    /* A run that spawns nothing. */
    ck_assert_int_eq((long)sf_light(loop_root, (void *)0L), 0);
    sf_shutdown();
}
END_TEST

/* More than the 2^20 slots of a deque outstanding at once: the spawns past
 * the room run at once, and the syncs still return every value newest
 * first. */
START_TEST(overflow_past_the_deque)
{
    start(threads_of[_i]);
    loop_exact((1L << 20) + 5000);
    assert_no_bad();
    /* The deque works as before after an overflow. */
    loop_exact(1000);
    ck_assert_int_eq(light_fib(20), 6765);
    assert_no_bad();
    sf_shutdown();
}
END_TEST

/* Past the room, tasks that spawn and sync themselves, and one that makes
 * a light run of its own: all run at their spawn, their spawns too. ROOM
 * is a deque's room (docs/light.md); another one changes only the mix. */
enum { ROOM = 1 << 18 };

static void *ov_fib(sf_worker *w, void *p)
{
    (void)w;
    long k = (long)p;
    if (k % 10 == 3)
        return (void *)(light_fib(12) + 1000000); /* a nested run */
    struct fib_arg a = {12, 0};
    long v = (long)lfib(w, &a); /* spawns and syncs past the room */
    EXPECT(atomic_load(&a.runs) == 1);
    return (void *)v;
}

static void *ov_root(sf_worker *w, void *p)
{
    long fill = (long)p;
    for (long i = 0; i < fill; i++)
        sf_spawn(w, loop_task, (void *)i);
    for (long k = 0; k < 100; k++)
        sf_spawn(w, ov_fib, (void *)k);
    long sum = 0;
    for (long k = 99; k >= 0; k--) {
        long v = (long)sf_sync(w);
        EXPECT(v == 144 + (k % 10 == 3 ? 1000000 : 0));
        sum += v;
    }
    long wrong = 0;
    for (long i = fill - 1; i >= 0; i--)
        wrong += (long)sf_sync(w) != loop_value(i);
    EXPECT(wrong == 0);
    return (void *)sum;
}

START_TEST(overflow_tasks_that_spawn)
{
    start(threads_of[_i]);
    /* The last tasks of the fill and all 100 are past the room. */
    long fill = ROOM - 50;
    loop_runs = calloc((size_t)fill, sizeof *loop_runs);
    ck_assert_ptr_nonnull(loop_runs);
    ck_assert_int_eq((long)sf_light(ov_root, (void *)fill), 100 * 144 + 10 * 1000000);
    long not_once = 0;
    for (long i = 0; i < fill; i++)
        not_once += atomic_load(&loop_runs[i]) != 1;
    ck_assert_int_eq(not_once, 0);
    free(loop_runs);
    loop_runs = NULL;
    assert_no_bad();
    sf_shutdown();
}
END_TEST

/* ---- where tasks run ---- */

/* A binary tree of depth d whose 2^d leaves spin leaf_us; leaf id records
 * its runs and its thread. */
struct tree_arg {
    int depth;
    long id;
    atomic_int runs;
};

enum { MAX_INDEX = 64 };
static atomic_int *leaf_runs, *leaf_where;
static atomic_int on_thread[MAX_INDEX]; /* leaves run on each thread index */
static double leaf_us;
/* The leaf a round runs first (the newest spawns are synced first), if
 * patient_ms > 0, waits that long for a leaf on thread patient_index.
 * Meanwhile it spawns and syncs a task now and then: a deque shares when
 * a spawn finds a thief's ask, so the round's older spawns, not synced
 * yet, are then there to be stolen. */
static long patient_id = -1, patient_ms;
static int patient_index;

static long leaf_sum(int depth)
{
    long n = 1L << depth;
    return n * (n + 1) / 2;
}

static void *patient_step(sf_worker *w, void *p)
{
    (void)w;
    return p;
}

static void *ltree(sf_worker *w, void *p)
{
    struct tree_arg *a = p;
    ran(&a->runs);
    if (a->depth == 0) {
        atomic_fetch_add(&leaf_runs[a->id], 1);
        int ix = sf_thread_index();
        EXPECT(ix >= 0 && ix < MAX_INDEX);
        if (ix >= 0 && ix < MAX_INDEX) {
            atomic_store(&leaf_where[a->id], ix + 1);
            atomic_fetch_add(&on_thread[ix], 1);
        }
        if (leaf_us > 0)
            tu_spin_us(leaf_us);
        if (a->id == patient_id && patient_ms > 0) {
            double end = tu_now_ms() + (double)patient_ms;
            while (atomic_load(&on_thread[patient_index]) == 0 && tu_now_ms() < end) {
                sf_spawn(w, patient_step, (void *)7L);
                EXPECT(sf_sync(w) == (void *)7L);
                tu_spin_us(200);
            }
        }
        return (void *)(a->id + 1);
    }
    struct tree_arg l = {a->depth - 1, 2 * a->id, 0}, r = {a->depth - 1, 2 * a->id + 1, 0};
    sf_spawn(w, ltree, &l);
    sf_spawn(w, ltree, &r);
    long y = (long)sf_sync(w);
    long x = (long)sf_sync(w);
    EXPECT(atomic_load(&l.runs) == 1 && atomic_load(&r.runs) == 1);
    return (void *)(x + y);
}

static void leaves_alloc(int depth)
{
    leaf_runs = calloc((size_t)1 << depth, sizeof *leaf_runs);
    leaf_where = calloc((size_t)1 << depth, sizeof *leaf_where);
    ck_assert(leaf_runs != NULL && leaf_where != NULL);
    for (int i = 0; i < MAX_INDEX; i++)
        atomic_store(&on_thread[i], 0);
}

static void leaves_free(void)
{
    free(leaf_runs);
    free(leaf_where);
    leaf_runs = leaf_where = NULL;
}

/* Rounds of the tree (every leaf once each round) until a leaf ran on
 * thread index `want` (-1: any but `root`), or max_ms: a root of a run. */
struct rounds {
    int depth;
    int want, root;
    long max_ms;     /* how long to go on (0: WAIT_MS) */
    long rounds, spawns;
    int seen;
};

static int rounds_seen(const struct rounds *r)
{
    if (r->want >= 0)
        return atomic_load(&on_thread[r->want]) > 0;
    for (int i = 0; i < MAX_INDEX; i++)
        if (i != r->root && atomic_load(&on_thread[i]) > 0)
            return 1;
    return 0;
}

static void *rounds_root(sf_worker *w, void *p)
{
    struct rounds *r = p;
    long n = 1L << r->depth;
    double end = tu_now_ms() + (r->max_ms > 0 ? (double)r->max_ms : (double)WAIT_MS);
    do {
        for (long i = 0; i < n; i++)
            /* Relaxed: the spawns below publish it (a share's release). */
            atomic_store_explicit(&leaf_runs[i], 0, memory_order_relaxed);
        struct tree_arg a = {r->depth, 0, 0};
        EXPECT((long)ltree(w, &a) == leaf_sum(r->depth));
        long not_once = 0;
        for (long i = 0; i < n; i++)
            not_once += runs_of(&leaf_runs[i]) != 1;
        EXPECT(not_once == 0);
        r->rounds++;
        r->spawns += 2 * n - 2;
        r->seen = rounds_seen(r);
    } while (!r->seen && tu_now_ms() < end);
    return (void *)1L;
}

/* Idle workers steal: some leaves run on a thread other than the root's,
 * and the statistics count each steal as a task, run by the pool or a
 * helping get. At 1 thread all run on the root's thread, and none is
 * counted. */
START_TEST(steal_by_idle_workers)
{
    int threads = threads_of[_i];
    start(threads);
    int depth = SMALL ? 7 : 9;
    leaves_alloc(depth);
    leaf_us = 100;
    struct rounds r = {.depth = depth, .want = -1, .root = sf_thread_index()};
    if (threads == 1) {
        /* One round, all here. */
        struct tree_arg a = {depth, 0, 0};
        ck_assert_int_eq((long)sf_light(ltree, &a), leaf_sum(depth));
        ck_assert_int_eq(atomic_load(&on_thread[r.root]), 1L << depth);
        r.spawns = (2L << depth) - 2;
    } else {
        ck_assert_ptr_eq(sf_light(rounds_root, &r), (void *)1L);
        ck_assert_msg(r.seen, "no light task ran off the root's thread in %ld rounds (%.0f s)",
                      r.rounds, WAIT_MS / 1e3);
    }
    assert_no_bad();
    long elsewhere = 0;
    for (int i = 0; i < MAX_INDEX; i++)
        if (i != r.root)
            elsewhere += atomic_load(&on_thread[i]);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.run_inline + s.discarded + s.cancelled + s.queued, 0);
    ck_assert_uint_eq(s.created, s.run_pool + s.run_stolen);
    ck_assert_uint_le(s.created, (uint64_t)r.spawns);
    if (threads == 1)
        ck_assert_uint_eq(s.created, 0);
    else
        ck_assert_uint_ge(s.created, 1); /* a leaf ran elsewhere: someone stole */
    ck_assert_int_eq(elsewhere > 0, threads > 1);
    /* Per thread: the rows add up to the totals. */
    sf_thread_stats rows[8];
    int n = sf_stats_read_threads(rows, 8);
    ck_assert_int_le(n, 8); /* a row per thread that made or ran a task */
    uint64_t created = 0, executed = 0;
    for (int i = 0; i < n; i++) {
        created += rows[i].created;
        executed += rows[i].executed;
        ck_assert_uint_eq(rows[i].executed, rows[i].run_inline + rows[i].run_pool +
                                                rows[i].run_stolen + rows[i].run_drained);
    }
    ck_assert_uint_eq(created, s.created);
    ck_assert_uint_eq(executed, s.created);
    leaves_free();
    sf_shutdown();
}
END_TEST

/* Many shares, each answering an ask, and idle workers asking all the
 * while: the asks keep working, so light tasks are still stolen after. */
static void *share_storm(sf_worker *w, void *p)
{
    double ms = *(double *)p, end = tu_now_ms() + ms;
    long n = 0, wrong = 0;
    while (tu_now_ms() < end) {
        for (int k = 0; k < 64; k++, n++) {
            sf_spawn(w, patient_step, (void *)(n + 1));
            sf_spawn(w, patient_step, (void *)(n + 2));
            wrong += sf_sync(w) != (void *)(n + 2);
            wrong += sf_sync(w) != (void *)(n + 1);
        }
    }
    EXPECT(wrong == 0);
    return (void *)n;
}

START_TEST(steals_go_on_after_a_storm_of_shares)
{
    int threads = _i == 0 ? 2 : 4;
    start(threads);
    int depth = SMALL ? 6 : 8;
    leaves_alloc(depth);
    leaf_us = 20;
    double ms = SMALL ? 500 : 1000;
    for (int storm = 0; storm < 3; storm++) {
        ck_assert_int_gt((long)sf_light(share_storm, &ms), 0);
        /* A leaf runs off this thread within WAIT_MS, the round's first
         * leaf spawning now and then. */
        for (int i = 0; i < MAX_INDEX; i++)
            atomic_store(&on_thread[i], 0);
        struct rounds r = {.depth = depth, .want = -1, .root = sf_thread_index()};
        patient_id = (1L << depth) - 1;
        patient_ms = 50;
        patient_index = r.root == 0 ? 1 : 0;
        ck_assert_ptr_eq(sf_light(rounds_root, &r), (void *)1L);
        ck_assert_msg(r.seen, "storm %d: no light task stolen in %ld rounds (%.0f s) after it",
                      storm, r.rounds, WAIT_MS / 1e3);
    }
    assert_no_bad();
    tu_stats_quiet();
    leaves_free();
    sf_shutdown();
}
END_TEST

/* A blocked get steals light tasks. At 2 threads, task T runs on the one
 * worker and gets a promise that this thread sets only after its light
 * run; the run goes on until a leaf ran on T's thread, which only T's
 * blocked get can have run. */
static sf_future *help_p;
static atomic_int help_t_index = -1, help_t_started;

static void *help_t(void *arg)
{
    (void)arg;
    atomic_store(&help_t_index, sf_thread_index());
    atomic_store(&help_t_started, 1);
    return sf_get(help_p);
}

/* At 2 threads: T on the one worker, blocked in its get of help_p. */
static sf_future *start_t_on_the_worker(void)
{
    help_p = sf_promise();
    ck_assert_ptr_nonnull(help_p);
    /* The get of x submits T, which the idle worker takes while x waits. */
    tu_sleep_ms(20);
    sf_future *t = sf_do(help_t, NULL);
    sf_future *x = sf_do(wait_flag_task, &help_t_started);
    ck_assert(t != NULL && x != NULL);
    ck_assert_ptr_eq(sf_get(x), (void *)1L);
    sf_release(x);
    int ti = atomic_load(&help_t_index);
    ck_assert_msg(ti >= 0 && ti != sf_thread_index(), "setup: T ran on this thread (%d)", ti);
    tu_sleep_ms(5); /* T is in its get */
    return t;
}

START_TEST(blocked_get_steals)
{
    start(2);
    int depth = SMALL ? 6 : 8;
    leaves_alloc(depth);
    leaf_us = 100;
    sf_future *t = start_t_on_the_worker();
    int ti = atomic_load(&help_t_index);
    int me = sf_thread_index();
    patient_id = (1L << depth) - 1;
    patient_index = ti;
    patient_ms = 50;
    struct rounds r = {.depth = depth, .want = ti, .root = me};
    ck_assert_ptr_eq(sf_light(rounds_root, &r), (void *)1L);
    ck_assert_int_eq(sf_is_done(t), 0); /* T was blocked all along */
    ck_assert_int_eq(sf_promise_set(help_p, (void *)77L), 0);
    ck_assert_ptr_eq(sf_get(t), (void *)77L);
    ck_assert_msg(r.seen, "no light task ran on T's thread in %ld rounds", r.rounds);
    assert_no_bad();
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_ge(s.run_stolen, 1); /* a helping get's */
    ck_assert_uint_ge(s.gets_blocked, 1);
    sf_release(t);
    sf_release(help_p);
    leaves_free();
    sf_shutdown();
}
END_TEST

/* A loop's body that makes a light run: its light tasks are the loop's
 * work, which a get outside the loop never runs while it waits
 * (docs/loops.md); idle workers may. At 2 threads T's blocked get is the
 * only other thread, so no leaf may run on T's thread. */
static void closed_body(long i, void *ctx)
{
    if (i == 0)
        EXPECT(sf_light(rounds_root, ctx) == (void *)1L);
}

START_TEST(loop_body_run_is_the_loops_work)
{
    start(2);
    int depth = 6;
    leaves_alloc(depth);
    leaf_us = 100;
    sf_future *t = start_t_on_the_worker();
    int ti = atomic_load(&help_t_index);
    /* Each round waits up to 50 ms with its older spawns shared. */
    patient_id = (1L << depth) - 1;
    patient_index = ti;
    patient_ms = 50;
    struct rounds r = {.depth = depth, .want = ti, .root = sf_thread_index(), .max_ms = 300};
    /* Two indices: a loop of two parts (one alone is run as plain code). */
    ck_assert_int_eq(sf_for(0, 2, closed_body, &r), 0);
    ck_assert_int_eq(sf_is_done(t), 0);
    ck_assert_int_eq(sf_promise_set(help_p, (void *)77L), 0);
    ck_assert_ptr_eq(sf_get(t), (void *)77L);
    assert_no_bad();
    ck_assert_msg(atomic_load(&on_thread[ti]) == 0,
                  "%d leaves of a loop body's light run ran in T's get, outside the loop",
                  atomic_load(&on_thread[ti]));
    sf_release(t);
    sf_release(help_p);
    leaves_free();
    sf_shutdown();
}
END_TEST

/* A light task that gets a future running elsewhere: a task run by a
 * plain thread, and a promise that thread sets after it. The get waits
 * (parking where it is in a task) while the run's other tasks go on;
 * with _i >= 3 the run is inside a task. */
static _Atomic(sf_future *) pk_x;
static sf_future *pk_p;
static atomic_int pk_x_started;

static void *pk_x_fn(void *arg)
{
    (void)arg;
    atomic_store(&pk_x_started, 1);
    tu_sleep_ms(30);
    return (void *)1000L;
}

static void *pk_feeder(void *arg)
{
    (void)arg;
    sf_future *x = sf_do(pk_x_fn, NULL);
    EXPECT(x != NULL);
    atomic_store(&pk_x, x);
    EXPECT(sf_get(x) == (void *)1000L); /* runs it here */
    tu_sleep_ms(20);
    EXPECT(sf_promise_set(pk_p, (void *)2000L) == 0);
    return NULL;
}

static void *pk_tree(sf_worker *w, void *p)
{
    struct tree_arg *a = p;
    ran(&a->runs);
    if (a->depth == 0) {
        long v = a->id + 1;
        if (a->id == 0) {
            EXPECT(tu_wait_flag(&pk_x_started, WAIT_MS));
            EXPECT(sf_get(atomic_load(&pk_x)) == (void *)1000L);
            v += 1000;
        } else if (a->id == 37) {
            EXPECT(sf_get(pk_p) == (void *)2000L);
            v += 2000;
        } else {
            tu_spin_us(20);
        }
        return (void *)v;
    }
    struct tree_arg l = {a->depth - 1, 2 * a->id, 0}, r = {a->depth - 1, 2 * a->id + 1, 0};
    sf_spawn(w, pk_tree, &l);
    sf_spawn(w, pk_tree, &r);
    long y = (long)sf_sync(w);
    long x = (long)sf_sync(w);
    EXPECT(atomic_load(&l.runs) == 1 && atomic_load(&r.runs) == 1);
    return (void *)(x + y);
}

static void *pk_run(void *arg)
{
    (void)arg;
    struct tree_arg a = {6, 0, 0};
    return sf_light(pk_tree, &a);
}

START_TEST(light_task_parks_in_a_get)
{
    start(threads_of[_i % 3]);
    pk_p = sf_promise();
    ck_assert_ptr_nonnull(pk_p);
    pthread_t feeder;
    ck_assert_int_eq(pthread_create(&feeder, NULL, pk_feeder, NULL), 0);
    long r;
    if (_i < 3) {
        r = (long)pk_run(NULL);
    } else {
        sf_future *f = sf_do(pk_run, NULL);
        ck_assert_ptr_nonnull(f);
        r = (long)sf_get(f);
        sf_release(f);
    }
    ck_assert_int_eq(pthread_join(feeder, NULL), 0);
    ck_assert_int_eq(r, leaf_sum(6) + 3000);
    assert_no_bad();
    sf_release(atomic_load(&pk_x));
    sf_release(pk_p);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* Many light tasks each parked in a get of its own promise, which a plain
 * thread sets in a shuffled order: fibers past the 63 that have a bit of
 * their own in a thread's mask hold deques too (light.c). */
enum { MP_N = 200 };
static sf_future *mp_p[MP_N];

static void *mp_feeder(void *arg)
{
    (void)arg;
    tu_sleep_ms(20);
    for (int k = 0; k < MP_N; k++) {
        int j = (k * 67) % MP_N; /* 67 is prime to 200: a permutation */
        EXPECT(sf_promise_set(mp_p[j], (void *)(long)(j + 1)) == 0);
        if (k % 16 == 0)
            tu_sleep_ms(1);
    }
    return NULL;
}

static void *mp_leaf(sf_worker *w, void *p)
{
    (void)w;
    long k = (long)p;
    tu_spin_us(20);
    return sf_get(mp_p[k]);
}

static void *mp_root(sf_worker *w, void *p)
{
    (void)p;
    for (long k = 0; k < MP_N; k++)
        sf_spawn(w, mp_leaf, (void *)k);
    long sum = 0;
    for (long k = MP_N - 1; k >= 0; k--) {
        long v = (long)sf_sync(w);
        EXPECT(v == k + 1);
        sum += v;
    }
    return (void *)sum;
}

static void *mp_task(void *p) { return sf_light(mp_root, p); }

START_TEST(many_light_tasks_parked)
{
    start(threads_of[_i]);
    for (int k = 0; k < MP_N; k++)
        ck_assert_ptr_nonnull(mp_p[k] = sf_promise());
    pthread_t feeder;
    ck_assert_int_eq(pthread_create(&feeder, NULL, mp_feeder, NULL), 0);
    sf_future *f = sf_do(mp_task, NULL);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq((long)sf_get(f), (long)MP_N * (MP_N + 1) / 2);
    ck_assert_int_eq(pthread_join(feeder, NULL), 0);
    sf_release(f);
    for (int k = 0; k < MP_N; k++)
        sf_release(mp_p[k]);
    assert_no_bad();
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.promises, MP_N);
    sf_shutdown();
}
END_TEST

/* A light task that gets the task its run is in: a cycle of gets, which
 * the get that closes it reports (EDEADLK), here or in the sync that
 * waits for it; nothing hangs. */
static sf_future *cy_f;
static atomic_int cy_leaf_err = -1;

static void *cy_leaf(sf_worker *w, void *p)
{
    (void)w;
    errno = 0;
    void *r = sf_get(cy_f);
    atomic_store(&cy_leaf_err, r == NULL ? errno : 0);
    return p;
}

static void *cy_root(sf_worker *w, void *p)
{
    (void)p;
    sf_spawn(w, cy_leaf, (void *)5L);
    return sf_sync(w);
}

static void *cy_task(void *p)
{
    (void)p;
    errno = 0;
    void *r = sf_light(cy_root, NULL);
    int err = errno;
    /* Either the leaf's get closed the cycle, or the sync's did. */
    if (r != NULL)
        EXPECT(r == (void *)5L && atomic_load(&cy_leaf_err) == EDEADLK);
    else
        EXPECT(err == EDEADLK);
    return (void *)9L;
}

START_TEST(a_cycle_through_the_run_is_reported)
{
    start(threads_of[_i]);
    cy_f = sf_do(cy_task, NULL);
    ck_assert_ptr_nonnull(cy_f);
    ck_assert_ptr_eq(sf_get(cy_f), (void *)9L);
    assert_no_bad();
    sf_release(cy_f);
    sf_shutdown();
}
END_TEST

/* While a light task waits in a get, the tasks its run spawned before it,
 * not synced yet, are there for idle workers: the get parks its stack and
 * the others run elsewhere. The promise the waiting task gets is set only
 * once a leaf ran off the run's thread (or after PS_WAIT_MS: a failure). */
#define PS_WAIT_MS 2000L /* idle workers ask within a wake's time */
static sf_future *ps_p;
static int ps_root_index;
static atomic_int ps_set_after_seen = -1;

static int ps_seen_elsewhere(void)
{
    for (int i = 0; i < MAX_INDEX; i++)
        if (i != ps_root_index && atomic_load(&on_thread[i]) > 0)
            return 1;
    return 0;
}

static void *ps_feeder(void *arg)
{
    (void)arg;
    double end = tu_now_ms() + PS_WAIT_MS;
    while (!ps_seen_elsewhere() && tu_now_ms() < end)
        tu_sleep_ms(1);
    atomic_store(&ps_set_after_seen, ps_seen_elsewhere());
    EXPECT(sf_promise_set(ps_p, (void *)100L) == 0);
    return NULL;
}

static void *ps_waiter(sf_worker *w, void *p)
{
    (void)w;
    (void)p;
    return sf_get(ps_p);
}

static void *ps_root(sf_worker *w, void *p)
{
    (void)p;
    struct tree_arg a[6];
    for (int k = 0; k < 6; k++) {
        a[k] = (struct tree_arg){4, k, 0}; /* 6 trees of 16 leaves */
        sf_spawn(w, ltree, &a[k]);
    }
    sf_spawn(w, ps_waiter, NULL);
    long sum = (long)sf_sync(w);
    for (int k = 5; k >= 0; k--) {
        sum += (long)sf_sync(w);
        EXPECT(atomic_load(&a[k].runs) == 1);
    }
    return (void *)sum;
}

static void *ps_task(void *p) { return sf_light(ps_root, p); }

START_TEST(a_parked_light_task_leaves_the_rest_to_steal)
{
    start(threads_of[1 + _i]);
    leaves_alloc(7); /* tree k's leaves are ids 16k .. 16k + 15 */
    leaf_us = 100;
    ps_root_index = sf_thread_index();
    ps_p = sf_promise();
    ck_assert_ptr_nonnull(ps_p);
    pthread_t feeder;
    ck_assert_int_eq(pthread_create(&feeder, NULL, ps_feeder, NULL), 0);
    sf_future *f = sf_do(ps_task, NULL);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq((long)sf_get(f), 100 + 96 * 97 / 2);
    ck_assert_int_eq(pthread_join(feeder, NULL), 0);
    ck_assert_msg(atomic_load(&ps_set_after_seen) == 1,
                  "no light task of the run ran elsewhere in %.0f s while one waited in a get",
                  PS_WAIT_MS / 1e3);
    for (int i = 0; i < 96; i++)
        ck_assert_int_eq(atomic_load(&leaf_runs[i]), 1);
    assert_no_bad();
    sf_release(f);
    sf_release(ps_p);
    leaves_free();
    sf_shutdown();
}
END_TEST

/* ---- nested runs ---- */

/* Light tasks that each run a light run of their own; one inner run
 * fails, and only it. */
static void *inner_fail(sf_worker *w, void *p)
{
    (void)w;
    (void)p;
    EXPECT(sf_fail(55, "inner %d", 5) == 0);
    return (void *)1L;
}

static void *nest_task(sf_worker *w, void *p)
{
    (void)w;
    long k = (long)p;
    if (k == 3) {
        errno = 0;
        EXPECT(sf_light(inner_fail, NULL) == NULL);
        EXPECT(errno == 55);
        const char *m = sf_task_error_message();
        EXPECT(m != NULL && strcmp(m, "inner 5") == 0);
        EXPECT(sf_cancelled() == 0); /* the outer run did not fail */
        return (void *)0L;
    }
    long n = 12 + k % 5;
    long v = light_fib(n);
    EXPECT(v == tu_fib_exact((int)n));
    return (void *)v;
}

static void *nest_root(sf_worker *w, void *p)
{
    (void)p;
    for (long k = 0; k < 16; k++)
        sf_spawn(w, nest_task, (void *)k);
    long sum = 0;
    for (int k = 0; k < 16; k++)
        sum += (long)sf_sync(w);
    return (void *)sum;
}

static long nest_exact(void)
{
    long sum = 0;
    for (int k = 0; k < 16; k++)
        if (k != 3)
            sum += tu_fib_exact(12 + k % 5);
    return sum;
}

START_TEST(nested_in_a_light_task)
{
    start(threads_of[_i]);
    for (int round = 0; round < 3; round++) {
        errno = 0;
        ck_assert_int_eq((long)sf_light(nest_root, NULL), nest_exact());
    }
    assert_no_bad();
    sf_shutdown();
}
END_TEST

/* sf_light inside sf_do tasks, several at once. */
static void *fib_run_task(void *p)
{
    long n = (long)p;
    long v = light_fib(n);
    long q = light_nqueens(6);
    return (void *)(v * 10 + q);
}

START_TEST(nested_in_tasks)
{
    start(threads_of[_i]);
    enum { N = 12 };
    sf_future *f[N];
    for (long k = 0; k < N; k++)
        ck_assert_ptr_nonnull(f[k] = sf_do(fib_run_task, (void *)(14 + k % 6)));
    for (int k = N - 1; k >= 0; k--) {
        ck_assert_int_eq((long)sf_get(f[k]), tu_fib_exact(14 + k % 6) * 10 + 4);
        sf_release(f[k]);
    }
    /* A task that makes its run inside a get of another. */
    sf_future *g = sf_do(fib_run_task, (void *)20L);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq((long)sf_get(g), 6765 * 10 + 4);
    sf_release(g);
    assert_no_bad();
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* 16 plain threads, each with its own runs, at once. */
static pthread_barrier_t plain_barrier;

static void *plain_thread(void *p)
{
    long k = (long)p;
    pthread_barrier_wait(&plain_barrier);
    long n = (SMALL ? 14 : 20) + k % 3;
    for (int round = 0; round < 3; round++) {
        EXPECT(light_fib(n) == tu_fib_exact((int)n));
        EXPECT(light_nqueens(7) == 40);
    }
    return NULL;
}

START_TEST(runs_on_sixteen_plain_threads)
{
    start(threads_of[_i]);
    enum { N = 16 };
    pthread_t t[N];
    ck_assert_int_eq(pthread_barrier_init(&plain_barrier, NULL, N), 0);
    for (long k = 0; k < N; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, plain_thread, (void *)k), 0);
    for (int k = 0; k < N; k++)
        ck_assert_int_eq(pthread_join(t[k], NULL), 0);
    pthread_barrier_destroy(&plain_barrier);
    assert_no_bad();
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* ---- failures ---- */

static void *saw_not_cancelled(sf_worker *w, void *p)
{
    (void)w;
    EXPECT(sf_cancelled() == 0);
    return p;
}

static void *fails_42(sf_worker *w, void *p)
{
    (void)w;
    EXPECT(sf_fail(42, "light failed %d", 7) == 0);
    return p;
}

static void *after_failure(sf_worker *w, void *p)
{
    (void)w;
    EXPECT(sf_cancelled() == 1);
    errno = 0;
    EXPECT(sf_fail(43, "second %d", 8) == -1); /* the first stands */
    EXPECT(errno == EALREADY);
    return p;
}

/* One after the other: a task that sees no failure, one that fails, one
 * that sees it. Each sync returns what its task returned. */
static void *fail_root(sf_worker *w, void *p)
{
    (void)p;
    sf_spawn(w, saw_not_cancelled, (void *)1L);
    EXPECT(sf_sync(w) == (void *)1L);
    sf_spawn(w, fails_42, (void *)2L);
    EXPECT(sf_sync(w) == (void *)2L);
    sf_spawn(w, after_failure, (void *)3L);
    EXPECT(sf_sync(w) == (void *)3L);
    return (void *)9L;
}

static void check_failed_42(void *r, int err)
{
    ck_assert_ptr_null(r);
    ck_assert_int_eq(err, 42);
    const char *m = sf_task_error_message();
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m, "light failed 7");
}

/* In a task: the run fails, not the task around it. */
static void *fail_in_task(void *p)
{
    (void)p;
    errno = 0;
    void *r = sf_light(fail_root, NULL);
    EXPECT(r == NULL && errno == 42);
    const char *m = sf_task_error_message();
    EXPECT(m != NULL && strcmp(m, "light failed 7") == 0);
    EXPECT(sf_cancelled() == 0);
    return (void *)5L;
}

/* A tree whose leaves 5 and 40 fail with their own codes; every leaf that
 * starts once a failure is known sees sf_cancelled(). */
static atomic_int ft_failed, ft_won, ft_won_code, ft_lost;

static void *ft_tree(sf_worker *w, void *p)
{
    struct tree_arg *a = p;
    ran(&a->runs);
    if (a->depth == 0) {
        int known = atomic_load(&ft_failed);
        if (known)
            EXPECT(sf_cancelled() == 1);
        if (a->id == 5 || a->id == 40) {
            int code = a->id == 5 ? 61 : 62;
            if (sf_fail(code, "leaf %ld", a->id) == 0) {
                atomic_fetch_add(&ft_won, 1);
                atomic_store(&ft_won_code, code);
            } else {
                EXPECT(errno == EALREADY);
                atomic_fetch_add(&ft_lost, 1);
            }
            atomic_store(&ft_failed, 1);
            EXPECT(sf_cancelled() == 1);
        }
        tu_spin_us(10);
        return (void *)(a->id + 1);
    }
    struct tree_arg l = {a->depth - 1, 2 * a->id, 0}, r = {a->depth - 1, 2 * a->id + 1, 0};
    sf_spawn(w, ft_tree, &l);
    sf_spawn(w, ft_tree, &r);
    long y = (long)sf_sync(w);
    long x = (long)sf_sync(w);
    EXPECT(atomic_load(&l.runs) == 1 && atomic_load(&r.runs) == 1);
    return (void *)(x + y);
}

START_TEST(failure_fails_the_run)
{
    start(threads_of[_i]);
    /* From plain code. */
    errno = 0;
    void *r = sf_light(fail_root, NULL);
    check_failed_42(r, errno);
    /* The runtime and the next run are as before. */
    errno = 0;
    ck_assert_int_eq(light_fib(15), 610);
    /* In a task, which does not fail. */
    sf_future *f = sf_do(fail_in_task, NULL);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)5L);
    sf_release(f);
    /* A tree, two failures: one stands, the other is told so. */
    struct tree_arg a = {6, 0, 0};
    errno = 0;
    r = sf_light(ft_tree, &a);
    int err = errno;
    ck_assert_ptr_null(r);
    ck_assert_int_eq(atomic_load(&ft_won), 1);
    ck_assert_int_eq(atomic_load(&ft_lost), 1);
    ck_assert_int_eq(err, atomic_load(&ft_won_code));
    char want[32];
    snprintf(want, sizeof want, "leaf %d", atomic_load(&ft_won_code) == 61 ? 5 : 40);
    ck_assert_str_eq(sf_task_error_message(), want);
    ck_assert_int_eq(atomic_load(&a.runs), 1);
    assert_no_bad();
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* ---- cancellation ---- */

/* Leaves that poll sf_cancelled() until it says 1 (or WAIT_MS). */
enum { CN_DEPTH = 8, CN_LEAVES = 1 << CN_DEPTH };
static atomic_int cn_started, cn_saw, cn_timeouts;
static sf_future *cn_f;
static atomic_int cn_run_err;
static _Atomic(void *) cn_run_val;

static void *cn_tree(sf_worker *w, void *p)
{
    struct tree_arg *a = p;
    ran(&a->runs);
    if (a->depth == 0) {
        atomic_fetch_add(&cn_started, 1);
        EXPECT(atomic_fetch_add(&leaf_runs[a->id], 1) == 0);
        double end = tu_now_ms() + WAIT_MS;
        while (!sf_cancelled()) {
            if (tu_now_ms() > end) {
                atomic_fetch_add(&cn_timeouts, 1);
                return (void *)0L;
            }
            tu_spin_us(20);
        }
        atomic_fetch_add(&cn_saw, 1);
        tu_spin_us(100); /* a last step: the pool has time to steal */
        return (void *)(a->id + 1);
    }
    struct tree_arg l = {a->depth - 1, 2 * a->id, 0}, r = {a->depth - 1, 2 * a->id + 1, 0};
    sf_spawn(w, cn_tree, &l);
    sf_spawn(w, cn_tree, &r);
    long y = (long)sf_sync(w);
    long x = (long)sf_sync(w);
    EXPECT(atomic_load(&l.runs) == 1 && atomic_load(&r.runs) == 1);
    return (void *)(x + y);
}

static void *cn_task(void *p)
{
    (void)p;
    struct tree_arg a = {CN_DEPTH, 0, 0};
    errno = 0;
    void *r = sf_light(cn_tree, &a);
    atomic_store(&cn_run_err, errno);
    atomic_store(&cn_run_val, r);
    EXPECT(atomic_load(&a.runs) == 1);
    /* It asks, so it ends cancelled (docs/failures.md). */
    EXPECT(sf_cancelled() == 1);
    return (void *)8L;
}

static void *cn_canceller(void *p)
{
    (void)p;
    EXPECT(tu_wait_count(&cn_started, 1, WAIT_MS));
    EXPECT(sf_cancel(cn_f) == 0);
    return NULL;
}

/* Leaves that never poll: nothing is cancelled, the value is exact. */
static void *quiet_task(void *p)
{
    struct tree_arg a = {(int)(long)p, 0, 0};
    return sf_light(ltree, &a);
}

START_TEST(cancel_the_task_around_the_run)
{
    start(threads_of[_i]);
    leaves_alloc(CN_DEPTH);
    cn_f = sf_do(cn_task, NULL);
    ck_assert_ptr_nonnull(cn_f);
    pthread_t c;
    ck_assert_int_eq(pthread_create(&c, NULL, cn_canceller, NULL), 0);
    errno = 0;
    ck_assert_ptr_null(sf_get(cn_f));
    ck_assert_int_eq(errno, ECANCELED);
    ck_assert_int_eq(pthread_join(c, NULL), 0);
    ck_assert_ptr_null(atomic_load(&cn_run_val));
    ck_assert_int_eq(atomic_load(&cn_run_err), ECANCELED);
    ck_assert_int_eq(atomic_load(&cn_timeouts), 0);
    ck_assert_int_ge(atomic_load(&cn_saw), 1);
    ck_assert_int_eq(atomic_load(&cn_saw), atomic_load(&cn_started));
    /* Every light task ran, once: a sync returns what its task returned
     * (sf.h), so a task stolen after the cancel runs too, and hears it. */
    int never = 0;
    for (int i = 0; i < CN_LEAVES; i++)
        never += atomic_load(&leaf_runs[i]) == 0;
    sf_stats s = tu_stats_quiet();
    ck_assert_msg(never == 0, "%d of %d leaves never ran (sf_stats: %llu tasks cancelled)", never,
                  CN_LEAVES, (unsigned long long)s.cancelled);
    ck_assert_int_eq(atomic_load(&cn_started), CN_LEAVES);
    assert_no_bad();
    sf_release(cn_f);
    leaves_free();

    /* Nothing cancelled: leaves that never poll, an exact value. */
    leaves_alloc(8);
    leaf_us = 0;
    sf_future *q = sf_do(quiet_task, (void *)8L);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq((long)sf_get(q), leaf_sum(8));
    sf_release(q);
    long not_once = 0;
    for (int i = 0; i < 256; i++)
        not_once += atomic_load(&leaf_runs[i]) != 1;
    ck_assert_int_eq(not_once, 0);
    assert_no_bad();
    leaves_free();
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* ---- bad input ---- */

static void *never(sf_worker *w, void *p)
{
    (void)w;
    (void)p;
    EXPECT(0);
    return NULL;
}

START_TEST(abi_and_einval)
{
    start(threads_of[_i]);
    errno = 0;
    ck_assert_ptr_null(sf_light_run(SF_LIGHT_ABI + 1, never, NULL));
    ck_assert_int_eq(errno, ENOTSUP);
    errno = 0;
    ck_assert_ptr_null(sf_light_run(SF_LIGHT_ABI - 1, never, NULL));
    ck_assert_int_eq(errno, ENOTSUP);
    errno = 0;
    ck_assert_ptr_null(sf_light_run(SF_LIGHT_ABI, NULL, NULL));
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_ptr_null(sf_light(NULL, NULL));
    ck_assert_int_eq(errno, EINVAL);
    /* The runtime is as before. */
    ck_assert_int_eq(light_fib(10), 55);
    assert_no_bad();
    sf_shutdown();
}
END_TEST

/* ---- typed light tasks (SF_LIGHT_TASK) ---- */

/* fib: one parameter, a long value. */
SF_LIGHT_TASK(long, tfib, long, n);
static long tfib(sf_worker *w, long n)
{
    if (n < 2)
        return n;
    SF_SPAWN(w, tfib, n - 1);
    long b = tfib(w, n - 2);
    return SF_SYNC(w, tfib) + b;
}

/* Six parameters of six types, a struct value: each node checks that its
 * arguments arrived whole, and returns its subtree's sum and size. The
 * sums are of multiples of 1/8 below 2^40: exact in any order. */
struct tsum {
    double sum;
    long nodes;
};
static const char tmix_name[] = "tmix";

SF_LIGHT_TASK(struct tsum, tmix, int, depth, char, tag, uint16_t, low, double, x, uint64_t, h,
              const char *, name);
static struct tsum tmix(sf_worker *w, int depth, char tag, uint16_t low, double x, uint64_t h,
                        const char *name)
{
    EXPECT(tag == (char)('a' + depth % 26));
    EXPECT(low == (uint16_t)h);
    EXPECT(x == (double)(h % 1000) / 8);
    EXPECT(name == tmix_name);
    struct tsum r = {x, 1};
    if (depth == 0)
        return r;
    for (int i = 0; i < 3; i++) {
        uint64_t k = mix(h ^ (uint64_t)(i + 1));
        SF_SPAWN(w, tmix, depth - 1, (char)('a' + (depth - 1) % 26), (uint16_t)k,
                 (double)(k % 1000) / 8, k, tmix_name);
    }
    for (int i = 0; i < 3; i++) {
        struct tsum c = SF_SYNC(w, tmix);
        r.sum += c.sum;
        r.nodes += c.nodes;
    }
    return r;
}

static double tmix_expect(int depth, uint64_t h)
{
    double s = (double)(h % 1000) / 8;
    for (int i = 0; depth > 0 && i < 3; i++)
        s += tmix_expect(depth - 1, mix(h ^ (uint64_t)(i + 1)));
    return s;
}

/* A void task over a struct: adds every index of its range. */
struct trange {
    long lo, hi;
};
static atomic_long trange_sum;

SF_LIGHT_VOID_TASK(tvoid, struct trange, r);
static void tvoid(sf_worker *w, struct trange r)
{
    if (r.hi - r.lo == 1) {
        atomic_fetch_add_explicit(&trange_sum, r.lo, memory_order_relaxed);
        return;
    }
    long m = r.lo + (r.hi - r.lo) / 2;
    SF_SPAWN(w, tvoid, (struct trange){r.lo, m});
    tvoid(w, (struct trange){m, r.hi});
    SF_SYNC(w, tvoid);
}

/* Typed and sf_spawn() tasks on one deque, synced newest first, each
 * with its own kind of sync. */
static void *tleaf(sf_worker *w, void *p)
{
    (void)w;
    return p;
}

static void *tmixed_root(sf_worker *w, void *p)
{
    long n = (long)p, wrong = 0;
    for (long i = 0; i < n; i++) {
        if (i % 3 == 0)
            sf_spawn(w, tleaf, (void *)i);
        else
            SF_SPAWN(w, tfib, 10 + i % 5);
    }
    for (long i = n - 1; i >= 0; i--) {
        if (i % 3 == 0)
            wrong += sf_sync(w) != (void *)i;
        else
            wrong += SF_SYNC(w, tfib) != tu_fib_exact((int)(10 + i % 5));
    }
    EXPECT(wrong == 0);
    return (void *)1L;
}

START_TEST(typed_exact)
{
    start(threads_of[_i]);
    long f = -1;
    ck_assert_int_eq(SF_LIGHT_RUN(tfib, SMALL ? 18 : 24, &f), 0);
    ck_assert_int_eq(f, SMALL ? 2584 : 46368);
    struct tsum s = {0, 0};
    int depth = SMALL ? 6 : 8;
    ck_assert_int_eq(SF_LIGHT_RUN(tmix, depth, (char)('a' + depth), (uint16_t)77, 77.0 / 8,
                                  UINT64_C(77), tmix_name, &s),
                     0);
    long nodes = 1, level = 1;
    for (int d = 0; d < depth; d++)
        nodes += level *= 3;
    ck_assert_int_eq(s.nodes, nodes);
    ck_assert(s.sum == tmix_expect(depth, 77));
    atomic_store(&trange_sum, 0);
    ck_assert_int_eq(SF_LIGHT_RUN(tvoid, (struct trange){0, 10000}), 0);
    ck_assert_int_eq(atomic_load(&trange_sum), 10000L * 9999 / 2);
    ck_assert_ptr_eq(sf_light(tmixed_root, (void *)3000L), (void *)1L);
    assert_no_bad();
    sf_shutdown();
}
END_TEST

/* Idle workers steal typed tasks: a tree of leaves that spin, until one
 * ran off the root's thread; the stolen ones' values come back whole. */
static atomic_int tsteal_elsewhere;
static int tsteal_root_index;

SF_LIGHT_TASK(double, tsteal, int, depth, long, id);
static double tsteal(sf_worker *w, int depth, long id)
{
    if (depth == 0) {
        if (sf_thread_index() != tsteal_root_index)
            atomic_store(&tsteal_elsewhere, 1);
        tu_spin_us(50);
        return (double)id / 4;
    }
    SF_SPAWN(w, tsteal, depth - 1, 2 * id);
    double b = tsteal(w, depth - 1, 2 * id + 1);
    return SF_SYNC(w, tsteal) + b;
}

START_TEST(typed_steal_by_idle_workers)
{
    start(_i == 0 ? 2 : 4);
    tsteal_root_index = sf_thread_index();
    atomic_store(&tsteal_elsewhere, 0);
    double end = tu_now_ms() + WAIT_MS;
    long rounds = 0;
    int depth = 7; /* 128 leaves, ids 0..127: their sum / 4 */
    do {
        double v = -1;
        ck_assert_int_eq(SF_LIGHT_RUN(tsteal, depth, 0L, &v), 0);
        ck_assert(v == 127.0 * 128 / 2 / 4);
        rounds++;
    } while (!atomic_load(&tsteal_elsewhere) && tu_now_ms() < end);
    ck_assert_msg(atomic_load(&tsteal_elsewhere), "no typed task ran off the root's thread in %ld "
                  "rounds", rounds);
    sf_stats st = tu_stats_quiet();
    ck_assert_uint_ge(st.created, 1); /* a future per steal */
    assert_no_bad();
    sf_shutdown();
}
END_TEST

/* Past the deque's room: typed tasks run at their spawn and their values
 * are kept for the syncs, newest first - five parameters, a double. */
SF_LIGHT_TASK(double, tover, long, i, int, a, int, b, short, c, long, d);
static double tover(sf_worker *w, long i, int a, int b, short c, long d)
{
    EXPECT(a == (int)(i * 7) && b == -(int)i && c == (short)(i & 0x7fff) && d == ~i);
    if (i % 100000 == 7) /* one that spawns, past the room */
        return (double)tfib(w, 12) + (double)i / 2;
    return (double)i / 2;
}

static void *tover_root(sf_worker *w, void *p)
{
    long n = (long)p, wrong = 0;
    for (long i = 0; i < n; i++)
        SF_SPAWN(w, tover, i, (int)(i * 7), -(int)i, (short)(i & 0x7fff), ~i);
    for (long i = n - 1; i >= 0; i--)
        wrong += SF_SYNC(w, tover) != (double)i / 2 + (i % 100000 == 7 ? 144 : 0);
    EXPECT(wrong == 0);
    return (void *)1L;
}

START_TEST(typed_overflow_past_the_deque)
{
    start(threads_of[_i]);
    ck_assert_ptr_eq(sf_light(tover_root, (void *)(long)(ROOM + 5000)), (void *)1L);
    long f = -1;
    ck_assert_int_eq(SF_LIGHT_RUN(tfib, 15, &f), 0);
    ck_assert_int_eq(f, 610);
    assert_no_bad();
    sf_shutdown();
}
END_TEST

/* A typed task's sf_fail() fails the run; the tasks after it see
 * sf_cancelled(), and the run's code and message come out of
 * SF_LIGHT_RUN. A typed task that waits in a get (parks, at 1 thread)
 * for a promise a plain thread sets. */
static atomic_int tfail_after;

SF_LIGHT_TASK(int, tfail, int, k);
static int tfail(sf_worker *w, int k)
{
    (void)w;
    if (k == 13) {
        sf_fail(EDOM, "typed task %d failed", k);
        return -1;
    }
    if (k < 13 && sf_cancelled()) /* synced after 13: LIFO */
        atomic_fetch_add(&tfail_after, 1);
    return k;
}

static void *tfail_root(sf_worker *w, void *p)
{
    (void)p;
    for (int k = 0; k < 32; k++)
        SF_SPAWN(w, tfail, k);
    for (int k = 31; k >= 0; k--)
        (void)SF_SYNC(w, tfail);
    return (void *)1L;
}

static sf_future *tpark_p;

SF_LIGHT_TASK(long, tpark, long, k);
static long tpark(sf_worker *w, long k)
{
    if (k == 0)
        return (long)sf_get(tpark_p);
    SF_SPAWN(w, tpark, k - 1);
    tu_spin_us(20);
    return SF_SYNC(w, tpark) + k;
}

static void *tpark_feeder(void *arg)
{
    (void)arg;
    tu_sleep_ms(20);
    EXPECT(sf_promise_set(tpark_p, (void *)1000L) == 0);
    return NULL;
}

START_TEST(typed_fail_cancel_park)
{
    start(threads_of[_i]);
    atomic_store(&tfail_after, 0);
    errno = 0;
    ck_assert_ptr_null(sf_light(tfail_root, NULL));
    ck_assert_int_eq(errno, EDOM);
    ck_assert_str_eq(sf_task_error_message(), "typed task 13 failed");
    if (threads_of[_i] == 1) /* no thief: 0..12 all run after 13 failed */
        ck_assert_int_eq(atomic_load(&tfail_after), 13);
    int v = -1;
    errno = 0;
    ck_assert_int_eq(SF_LIGHT_RUN(tfail, 13, &v), -1);
    ck_assert_int_eq(errno, EDOM);
    tpark_p = sf_promise();
    ck_assert_ptr_nonnull(tpark_p);
    pthread_t feeder;
    ck_assert_int_eq(pthread_create(&feeder, NULL, tpark_feeder, NULL), 0);
    long r = -1;
    ck_assert_int_eq(SF_LIGHT_RUN(tpark, 50L, &r), 0);
    ck_assert_int_eq(pthread_join(feeder, NULL), 0);
    ck_assert_int_eq(r, 1000 + 50 * 51 / 2);
    sf_release(tpark_p);
    assert_no_bad();
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* ---- the trace ---- */

static size_t count_substr(const char *s, const char *sub)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, sub)) != NULL; p += strlen(sub))
        n++;
    return n;
}

START_TEST(trace_a_start_per_light_task)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "light-trace");
    tu_env_threads(threads_of[_i]);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(light_fib(10), 55);
    loop_exact(100);
    ck_assert_int_eq(light_nqueens(5), 10);
    long f = -1;
    ck_assert_int_eq(SF_LIGHT_RUN(tfib, 10, &f), 0); /* typed tasks too */
    ck_assert_int_eq(f, 55);
    assert_no_bad();
    sf_shutdown();
    tu_sftrace_check(SFTRACE_BIN, NULL, path);
    char *t = tu_read_file(path);
    ck_assert_ptr_nonnull(t);
    /* fib(10) spawns fib(11) - 1; nqueens(5) a task per partial placement. */
    size_t want = 2 * (size_t)tu_fib_tasks(10) + 100 + (size_t)nq_nodes(5, 0, 0, 0, 0);
    ck_assert_uint_eq(count_substr(t, "\tFStart\t"), want);
    ck_assert_uint_eq(count_substr(t, "\tFDone\t"), want);
    free(t);
    unlink(path);
    /* Slices are named by their tasks' functions: a typed task by the run
     * its macro made (docs/trace-format.md, Task names). */
    setenv("SF_TRACE", "chrome", 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    long g = -1;
    ck_assert_int_eq(SF_LIGHT_RUN(tfib, 6, &g), 0);
    ck_assert_int_eq(g, 8);
    sf_shutdown();
    t = tu_read_file(path);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(count_substr(t, "\"name\":\"tfib_sf_run_\""), (size_t)tu_fib_tasks(6));
    free(t);
    unlink(path);
}
END_TEST

/* ---- misuse ---- */

static int misuse_threads;

static void misuse_start(void)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%d", misuse_threads);
    setenv("SF_THREADS", buf, 1);
}

static void *leaf_value(sf_worker *w, void *p)
{
    (void)w;
    return p;
}

/* A sync with nothing spawned. */
static void *m_sync_nothing_root(sf_worker *w, void *p)
{
    (void)p;
    return sf_sync(w);
}
static void m_sync_nothing(void)
{
    misuse_start();
    (void)sf_light(m_sync_nothing_root, NULL);
    _exit(7);
}

/* A light task that syncs with nothing spawned by it, while its spawner
 * has a task not synced: caught at that sync, before it runs the
 * spawner's task in the wrong function (else exit 7). */
static void *m_sync_other(sf_worker *w, void *p)
{
    (void)p;
    (void)sf_sync(w);
    _exit(7);
}
static void *m_sync_other_root(sf_worker *w, void *p)
{
    (void)p;
    sf_spawn(w, leaf_value, (void *)1L);
    sf_spawn(w, m_sync_other, NULL);
    (void)sf_sync(w);
    (void)sf_sync(w);
    return NULL;
}
static void m_sync_not_own(void)
{
    misuse_start();
    (void)sf_light(m_sync_other_root, NULL);
    _exit(8);
}

/* Another thread's worker: its spawn in a run of its own, a sync by a
 * plain thread. */
static sf_worker *m_main_w;

static void *m_foreign_spawn_root(sf_worker *w, void *p)
{
    (void)w;
    (void)p;
    sf_spawn(m_main_w, leaf_value, (void *)1L);
    return NULL;
}
static void *m_foreign_spawner(void *p)
{
    (void)p;
    (void)sf_light(m_foreign_spawn_root, NULL);
    return NULL;
}
static void *m_foreign_syncer(void *p)
{
    (void)p;
    (void)sf_sync(m_main_w);
    return NULL;
}
static void *m_foreign_root(sf_worker *w, void *p)
{
    m_main_w = w;
    sf_spawn(w, leaf_value, (void *)1L);
    pthread_t t;
    if (pthread_create(&t, NULL, (void *(*)(void *))p, NULL) == 0)
        pthread_join(t, NULL);
    return sf_sync(w);
}
static void m_spawn_foreign(void)
{
    misuse_start();
    (void)sf_light(m_foreign_root, (void *)m_foreign_spawner);
    _exit(7);
}
static void m_sync_foreign(void)
{
    misuse_start();
    (void)sf_light(m_foreign_root, (void *)m_foreign_syncer);
    _exit(7);
}

/* A light task that returns with a spawn not synced: caught at its
 * return, before its spawner's sync returns (else exit 7). */
static void *m_leaves_one(sf_worker *w, void *p)
{
    sf_spawn(w, leaf_value, p);
    return p;
}
static void *m_task_unsynced_root(sf_worker *w, void *p)
{
    (void)p;
    sf_spawn(w, m_leaves_one, (void *)1L);
    (void)sf_sync(w);
    _exit(7);
}
static void m_task_unsynced(void)
{
    misuse_start();
    (void)sf_light(m_task_unsynced_root, NULL);
    _exit(8);
}

/* A sync of another kind than the newest spawn's: sf_sync() of a typed
 * task, SF_SYNC() of an sf_spawn() one. */
static void *m_kind_root(sf_worker *w, void *p)
{
    if (p == NULL) {
        SF_SPAWN(w, tfib, 3L);
        (void)sf_sync(w);
    } else {
        sf_spawn(w, leaf_value, p);
        (void)SF_SYNC(w, tfib);
    }
    _exit(7);
}
static void m_kind_untyped_sync(void)
{
    misuse_start();
    (void)sf_light(m_kind_root, NULL);
    _exit(8);
}
static void m_kind_typed_sync(void)
{
    misuse_start();
    (void)sf_light(m_kind_root, (void *)1L);
    _exit(8);
}

/* sf_light's fn returns with 3 spawns not synced. */
static void *m_root_unsynced_root(sf_worker *w, void *p)
{
    for (long k = 0; k < 3; k++)
        sf_spawn(w, leaf_value, (void *)k);
    return p;
}
static void m_root_unsynced(void)
{
    misuse_start();
    (void)sf_light(m_root_unsynced_root, NULL);
    _exit(7);
}

START_TEST(debug_build_aborts_on_misuse)
{
    if (!DEBUG_BUILD) {
        printf("# skipped: misuse aborts in the debug build only (--enable-debug)\n");
        fflush(stdout);
        return;
    }
    misuse_threads = _i == 0 ? 1 : 2;
    tu_expect_abort(m_sync_nothing, (const char *const[]){"sf_sync(", "no light task", NULL});
    tu_expect_abort(m_spawn_foreign,
                    (const char *const[]){"sf_spawn(", "not this stack's worker", NULL});
    tu_expect_abort(m_sync_foreign,
                    (const char *const[]){"sf_sync(", "not this stack's worker", NULL});
    tu_expect_abort(m_root_unsynced,
                    (const char *const[]){"sf_light(", "3 light tasks not synced", NULL});
    tu_expect_abort(m_kind_untyped_sync,
                    (const char *const[]){"sf_sync(", "not of the kind", "sf_spawn's", NULL});
    tu_expect_abort(m_kind_typed_sync,
                    (const char *const[]){"sf_sync(", "not of the kind", "a typed task", NULL});
}
END_TEST

/* Misuses inside a run, where the spawner would go on past them: named
 * where they happen, in the light task (at 1 thread: no thief runs it,
 * each runs inline in its spawner's sync). */
START_TEST(debug_build_light_task_returns_unsynced)
{
    if (!DEBUG_BUILD) {
        printf("# skipped: misuse aborts in the debug build only (--enable-debug)\n");
        fflush(stdout);
        return;
    }
    misuse_threads = 1;
    tu_expect_abort(m_task_unsynced, (const char *const[]){"light task", "not synced", NULL});
}
END_TEST

START_TEST(debug_build_sync_of_a_task_that_spawned_nothing)
{
    if (!DEBUG_BUILD) {
        printf("# skipped: misuse aborts in the debug build only (--enable-debug)\n");
        fflush(stdout);
        return;
    }
    misuse_threads = 1;
    tu_expect_abort(m_sync_not_own, (const char *const[]){"sf_sync(", NULL});
}
END_TEST

/* A release build loses no work to these misuses: the tasks not synced
 * still run, once each, and the run returns its value. */
static atomic_int rel_runs[8];

static void *rel_leaf(sf_worker *w, void *p)
{
    (void)w;
    atomic_fetch_add(&rel_runs[(long)p], 1);
    tu_spin_us(50);
    return p;
}
static void *rel_leaves_two(sf_worker *w, void *p)
{
    (void)p;
    atomic_fetch_add(&rel_runs[4], 1);
    sf_spawn(w, rel_leaf, (void *)5L);
    sf_spawn(w, rel_leaf, (void *)6L);
    return (void *)40L;
}
static void *rel_root(sf_worker *w, void *p)
{
    (void)p;
    /* A task that leaves two, synced. */
    sf_spawn(w, rel_leaves_two, NULL);
    EXPECT(sf_sync(w) == (void *)40L);
    /* Four left here. */
    for (long k = 0; k < 4; k++)
        sf_spawn(w, rel_leaf, (void *)k);
    return (void *)11L;
}

/* A sync with nothing to sync: NULL with errno EINVAL (docs/light.md). */
static void *rel_sync_nothing(sf_worker *w, void *p)
{
    errno = 0;
    EXPECT(sf_sync(w) == NULL);
    EXPECT(errno == EINVAL);
    /* The deque is as before. */
    sf_spawn(w, leaf_value, (void *)3L);
    EXPECT(sf_sync(w) == (void *)3L);
    errno = 0;
    EXPECT(sf_sync(w) == NULL);
    EXPECT(errno == EINVAL);
    return p;
}

START_TEST(release_build_loses_no_work)
{
    if (DEBUG_BUILD) {
        printf("# skipped: the debug build aborts on these misuses\n");
        fflush(stdout);
        return;
    }
    start(threads_of[_i]);
    for (int round = 0; round < 20; round++) {
        for (int k = 0; k < 8; k++)
            atomic_store(&rel_runs[k], 0);
        errno = 0;
        ck_assert_ptr_eq(sf_light(rel_root, NULL), (void *)11L);
        for (int k = 0; k < 7; k++)
            ck_assert_msg(atomic_load(&rel_runs[k]) == 1, "round %d: task %d ran %d times",
                          round, k, atomic_load(&rel_runs[k]));
    }
    ck_assert_ptr_eq(sf_light(rel_sync_nothing, (void *)12L), (void *)12L);
    /* The deque is as before. */
    loop_exact(1000);
    ck_assert_int_eq(light_fib(18), 2584);
    assert_no_bad();
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

static Suite *light_suite(void)
{
    Suite *s = suite_create("light");
    TCase *tc = tcase_create("light");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, fib_exact, 0, 3);
    tcase_add_loop_test(tc, nqueens_exact_counts, 0, 3);
    tcase_add_loop_test(tc, tree_exact, 0, 3);
    tcase_add_loop_test(tc, loop_of_spawns_lifo, 0, 3);
    tcase_add_loop_test(tc, overflow_past_the_deque, 0, 3);
    tcase_add_loop_test(tc, overflow_tasks_that_spawn, 0, 3);
    tcase_add_loop_test(tc, steal_by_idle_workers, 0, 3);
    tcase_add_loop_test(tc, steals_go_on_after_a_storm_of_shares, 0, 2);
    tcase_add_test(tc, blocked_get_steals);
    tcase_add_test(tc, loop_body_run_is_the_loops_work);
    tcase_add_loop_test(tc, light_task_parks_in_a_get, 0, 6);
    tcase_add_loop_test(tc, many_light_tasks_parked, 0, 3);
    tcase_add_loop_test(tc, a_parked_light_task_leaves_the_rest_to_steal, 0, 2);
    tcase_add_loop_test(tc, a_cycle_through_the_run_is_reported, 0, 3);
    tcase_add_loop_test(tc, nested_in_a_light_task, 0, 3);
    tcase_add_loop_test(tc, nested_in_tasks, 0, 3);
    tcase_add_loop_test(tc, runs_on_sixteen_plain_threads, 0, 3);
    tcase_add_loop_test(tc, failure_fails_the_run, 0, 3);
    tcase_add_loop_test(tc, cancel_the_task_around_the_run, 0, 3);
    tcase_add_loop_test(tc, abi_and_einval, 0, 3);
    tcase_add_loop_test(tc, typed_exact, 0, 3);
    tcase_add_loop_test(tc, typed_steal_by_idle_workers, 0, 2);
    tcase_add_loop_test(tc, typed_overflow_past_the_deque, 0, 3);
    tcase_add_loop_test(tc, typed_fail_cancel_park, 0, 3);
    tcase_add_loop_test(tc, trace_a_start_per_light_task, 0, 3);
    tcase_add_loop_test(tc, debug_build_aborts_on_misuse, 0, 2);
    tcase_add_test(tc, debug_build_light_task_returns_unsynced);
    tcase_add_test(tc, debug_build_sync_of_a_task_that_spawned_nothing);
    tcase_add_loop_test(tc, release_build_loses_no_work, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(light_suite)
