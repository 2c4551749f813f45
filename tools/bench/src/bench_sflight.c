/*
 * bench_sflight.c - the fork-join workloads on libsf's light tasks (sf.h,
 * Light tasks), runtime "libsf-light": each run is one light run,
 * SF_LIGHT_RUN from the main thread, and every task below it a typed light
 * task (SF_LIGHT_TASK, the arguments by value in the deque, as Lace's
 * TASK_n) spawned by SF_SPAWN and synced by SF_SYNC in the function that
 * spawned it. Threads: sf_config.threads = N, as bench_sf. See common.h for
 * the command line; it runs fib, nqueens, uts-t1, uts-t3, knapsack and pi.
 *
 * The shapes are Lace's (bench_lace.c runs the same ones), where they differ
 * from bench_sf's: syncs are LIFO, so a node that spawns k children syncs
 * them newest first; fib, knapsack and pi spawn one half and call the other.
 * The inputs, checks and task counts are workloads.h's: a task is a node of
 * the recursion but the root, spawned or called.
 */
#include "workloads.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sf.h"

static struct bench_params P;

/* ---- fib: SF_SPAWN(fib, n-1); b = fib(n-2); a = SF_SYNC(fib) ------------ */
/* As bench_seq's and bench_lace's fib: not inlined, both results through an
 * empty asm, so that gcc can neither inline the recursion nor turn the
 * sync's call of fib(n-1) into a loop. */

SF_LIGHT_TASK(uint64_t, fib, long, n);
__attribute__((noinline)) static uint64_t fib(sf_worker *w, long n)
{
    if (n < 2)
        return (uint64_t)n;
    SF_SPAWN(w, fib, n - 1);
    uint64_t b = fib(w, n - 2);
    __asm__ volatile("" : "+r"(b));
    uint64_t a = SF_SYNC(w, fib);
    __asm__ volatile("" : "+r"(a));
    return a + b;
}

/* ---- nqueens: every valid placement spawned, then all synced (LIFO) ------ */

SF_LIGHT_TASK(uint64_t, nqueens, uint64_t, s);
static uint64_t nqueens(sf_worker *w, uint64_t s)
{
    unsigned n = (unsigned)P.n;
    unsigned row = NQ_ROW(s), cols = NQ_COLS(s), d1 = NQ_D1(s), d2 = NQ_D2(s);
    if (row == n)
        return NQ_RES(1, 1);
    unsigned mask = (1u << n) - 1;
    unsigned avail = ~(cols | d1 | d2) & mask;
    int k = 0;
    while (avail) {
        unsigned bit = avail & -avail;
        avail &= avail - 1;
        SF_SPAWN(w, nqueens, NQ_PACK(row + 1, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1));
        k++;
    }
    uint64_t sol = 0, nodes = 1;
    while (k-- > 0) {
        uint64_t r = SF_SYNC(w, nqueens);
        sol += NQ_SOL(r);
        nodes += NQ_NODES(r);
    }
    return NQ_RES(sol, nodes);
}

/* ---- UTS: every child spawned, then all synced (LIFO) -------------------- */

SF_LIGHT_TASK(uint64_t, uts, uint64_t, node);
static uint64_t uts(sf_worker *w, uint64_t node)
{
    if (P.work)
        bench_spin(node, P.work);
    int k = uts_children(node, bench_in.uts_kind, P.b0, P.q_ppm, P.depth);
    for (int i = 0; i < k; i++)
        SF_SPAWN(w, uts, uts_child_node(node, i));
    uint64_t n = 1;
    for (int i = 0; i < k; i++)
        n += SF_SYNC(w, uts);
    return n;
}

/* ---- knapsack: spawn "skip", call "take", sync (Lace's shape) ------------ */

/* The instance workloads.h made. */
static const struct ks_item *const ks_items = bench_in.ks_items;
/*
 * The best value found so far. Relaxed everywhere, as in bench_sf: a pruning
 * hint, monotone (CAS-max), a stale read only prunes less; the final value is
 * read after SF_LIGHT_RUN returned, and every sync of a stolen task orders the
 * task's writes before the syncing code.
 */
static _Atomic long ks_best;

static void ks_improve(long v)
{
    long b = atomic_load_explicit(&ks_best, memory_order_relaxed);
    while (v > b && !atomic_compare_exchange_weak_explicit(&ks_best, &b, v, memory_order_relaxed,
                                                           memory_order_relaxed))
        ;
}

/* Returns the tasks made below node (i, c, v) - the next item, the room
 * left, the value so far - which a typed light task keeps by value in the
 * deque, as Lace's TASK_3 does. "take" runs first, as in the sequential
 * order: it is called while "skip" waits on the deque. */
SF_LIGHT_TASK(uint64_t, knapsack, long, i, long, c, long, v);
static uint64_t knapsack(sf_worker *w, long i, long c, long v)
{
    ks_improve(v);
    if (i == P.items ||
        ks_bound(ks_items, i, c, v) <= atomic_load_explicit(&ks_best, memory_order_relaxed))
        return 0;
    const struct ks_item *it = &ks_items[i];
    if (it->weight > c) /* nothing to take: skip is the only child */
        return 1 + knapsack(w, i + 1, c, v);
    SF_SPAWN(w, knapsack, i + 1, c, v);
    uint64_t t = 1 + knapsack(w, i + 1, c - it->weight, v + it->value);
    return t + 1 + SF_SYNC(w, knapsack);
}

/* ---- pi: [lo, hi) halved; spawn the left half, call the right, sync ------- */

/* The sum of the range: left + right, the halving tree's order (classic.h). */
SF_LIGHT_TASK(double, pi, long, lo, long, hi);
static double pi(sf_worker *w, long lo, long hi)
{
    if (hi - lo == 1)
        return pi_term(lo, P.n);
    long m = lo + (hi - lo) / 2;
    SF_SPAWN(w, pi, lo, m);
    double right = pi(w, m, hi);
    double left = SF_SYNC(w, pi);
    return left + right;
}

/* ---- the runs (workloads.h): one light run each -------------------------- */

/* A run that failed: SF_LIGHT_RUN fails as sf_light() does. */
static void run_failed(void)
{
    fprintf(stderr, "libsf-light: SF_LIGHT_RUN failed: %s%s%s\n", strerror(errno),
            sf_task_error_message() ? ": " : "",
            sf_task_error_message() ? sf_task_error_message() : "");
    exit(3);
}

static struct bench_out run_fib(void)
{
    uint64_t v;
    if (SF_LIGHT_RUN(fib, P.n, &v) != 0)
        run_failed();
    return bench_value(v);
}

static struct bench_out run_nqueens(void)
{
    uint64_t v;
    if (SF_LIGHT_RUN(nqueens, NQ_PACK(0, 0, 0, 0), &v) != 0)
        run_failed();
    return bench_value(v);
}

static struct bench_out run_uts(void)
{
    uint64_t v;
    if (SF_LIGHT_RUN(uts, bench_in.uts_root, &v) != 0)
        run_failed();
    return bench_value(v);
}

static struct bench_out run_knapsack(void)
{
    atomic_store_explicit(&ks_best, 0, memory_order_relaxed);
    uint64_t tasks;
    if (SF_LIGHT_RUN(knapsack, 0, bench_in.ks_cap, 0, &tasks) != 0)
        run_failed();
    struct bench_out o = {(uint64_t)atomic_load_explicit(&ks_best, memory_order_relaxed), tasks};
    return o;
}

static struct bench_out run_pi(void)
{
    double sum;
    if (SF_LIGHT_RUN(pi, 0, P.n, &sum) != 0)
        run_failed();
    return bench_value(pi_bits(sum));
}

static const struct bench_run_entry runs[] = {
    {"fib", run_fib},         {"nqueens", run_nqueens},   {"uts-t1", run_uts},
    {"uts-t3", run_uts},      {"knapsack", run_knapsack}, {"pi", run_pi},
};

int main(int argc, char **argv)
{
    bench_parse(argc, argv, &P);

    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = P.threads;
    cfg.trace = SF_TRACE_FROM_ENV; /* the harness sets SF_TRACE=0 */
    cfg.stack_size = (size_t)64 << 20; /* same worker stacks as the peers */
    if (sf_init(&cfg) != 0) {
        fprintf(stderr, "libsf-light: sf_init failed: %s\n", strerror(errno));
        return 3;
    }
    /* Warm up: let every worker start and touch its stack, and this thread
     * make its deque. */
    uint64_t warm;
    if (SF_LIGHT_RUN(fib, 20, &warm) != 0 || warm != bench_fib_expect(20)) {
        fprintf(stderr, "libsf-light: warm-up fib(20) is wrong\n");
        return 2;
    }
    bench_wait_start();
    sf_stats s0, s1;
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    sf_stats_read(&s0);
    struct bench_result r = bench_run(argv[0], &P, runs, sizeof runs / sizeof runs[0]);
    sf_stats_read(&s1);
    /* Light tasks count in sf_stats only when stolen: a future per steal. */
    char extra[256];
    snprintf(extra, sizeof extra,
             "sf_created=%llu\tsf_stolen=%llu\tsf_blocked=%llu\tsf_sleeps=%llu\tsf_parks=%llu\t"
             "sf_workers=%d",
             (unsigned long long)(s1.created - s0.created),
             (unsigned long long)(s1.run_stolen - s0.run_stolen),
             (unsigned long long)(s1.gets_blocked - s0.gets_blocked),
             (unsigned long long)(s1.sleeps - s0.sleeps),
             (unsigned long long)(s1.parks - s0.parks), s1.workers);
    int rc = bench_report("libsf-light", &P, r.seconds, r.tasks, r.got, r.want, extra);
    sf_shutdown();
    return rc;
}
