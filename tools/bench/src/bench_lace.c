/*
 * bench_lace.c - the fork-join workloads on Lace (github.com/trolando/lace,
 * v1.4.2), runtime "lace": fib, nqueens, uts-t1, uts-t3, knapsack and pi,
 * the shapes of Lace's own benchmarks, which bench_sflight.c shares. A
 * program of ours against Lace's public macros (TASK_n, SPAWN, CALL, SYNC,
 * RUN); built only when configure's LACE_DIR names a Lace build
 * (tools/bench/local.mk). See common.h for the command line.
 *
 * Threads: lace_start(N, ...) starts N workers, which steal (spinning) from
 * then until lace_stop(), Lace's default; the main thread only hands each
 * run to them (RUN) and sleeps until it is done. Worker stacks are 64 MiB,
 * as for every runtime here.
 */
#include "workloads.h"

#include <lace.h>

#include <stdatomic.h>
#include <stdint.h>

#ifndef LACE_VERSION
#define LACE_VERSION "unknown"
#endif
#ifndef LACE_COMMIT
#define LACE_COMMIT "unknown"
#endif

/* Each worker's deque, in tasks: the deepest UTS-T3 path keeps ~7 pending
 * tasks a level over ~1,900 levels, beside the root's 4,000. */
#define LACE_DEQUE 100000

static struct bench_params P;

/* ---- fib: SPAWN(fib, n-1); b = CALL(fib, n-2); a = SYNC(fib) ------------- */
/*
 * As bench_seq's fib: not inlined (declared noinline between Lace's
 * TASK_DECL and TASK_IMPL, which TASK_1 is), and both results through an
 * empty asm, so that gcc can neither inline the recursion nor turn the
 * SYNC's inline call of fib(n-1) into a loop (it does without: a SYNC
 * names its task's function, so the call is direct).
 */
TASK_DECL_1(uint64_t, fib, long)
__attribute__((noinline)) uint64_t fib_CALL(WorkerP *, Task *, long);
TASK_IMPL_1(uint64_t, fib, long, n)
{
    if (n < 2)
        return (uint64_t)n;
    SPAWN(fib, n - 1);
    uint64_t b = CALL(fib, n - 2);
    __asm__ volatile("" : "+r"(b));
    uint64_t a = SYNC(fib);
    __asm__ volatile("" : "+r"(a));
    return a + b;
}

/* ---- nqueens: every valid placement spawned, then all synced ------------- */

TASK_1(uint64_t, nqueens, uint64_t, s)
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
        SPAWN(nqueens, NQ_PACK(row + 1, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1));
        k++;
    }
    uint64_t sol = 0, nodes = 1;
    while (k-- > 0) {
        uint64_t r = SYNC(nqueens);
        sol += NQ_SOL(r);
        nodes += NQ_NODES(r);
    }
    return NQ_RES(sol, nodes);
}

/* ---- UTS: every child spawned, then all synced --------------------------- */

TASK_1(uint64_t, uts, uint64_t, node)
{
    if (P.work)
        bench_spin(node, P.work);
    int k = uts_children(node, bench_in.uts_kind, P.b0, P.q_ppm, P.depth);
    for (int i = 0; i < k; i++)
        SPAWN(uts, uts_child_node(node, i));
    uint64_t n = 1;
    for (int i = 0; i < k; i++)
        n += SYNC(uts);
    return n;
}

/* ---- knapsack: SPAWN "skip", CALL "take", SYNC (knapsack-lace.c) --------- */

static const struct ks_item *const ks_items = bench_in.ks_items;
/* The best value found so far: relaxed, a monotone pruning hint (as in
 * bench_sf.c); read after RUN returned. */
static _Atomic long ks_best;

static void ks_improve(long v)
{
    long b = atomic_load_explicit(&ks_best, memory_order_relaxed);
    while (v > b && !atomic_compare_exchange_weak_explicit(&ks_best, &b, v, memory_order_relaxed,
                                                           memory_order_relaxed))
        ;
}

/* Returns the tasks made below this node; "take" runs first, as in the
 * sequential order. */
TASK_3(uint64_t, knapsack, long, i, long, c, long, v)
{
    ks_improve(v);
    if (i == P.items || ks_bound(ks_items, i, c, v) <= atomic_load_explicit(&ks_best, memory_order_relaxed))
        return 0;
    const struct ks_item *it = &ks_items[i];
    if (it->weight > c) /* nothing to take: skip is the only child */
        return 1 + CALL(knapsack, i + 1, c, v);
    SPAWN(knapsack, i + 1, c, v);
    uint64_t t = 1 + CALL(knapsack, i + 1, c - it->weight, v + it->value);
    return t + 1 + SYNC(knapsack);
}

/* ---- pi: [lo, hi) halved; SPAWN the left half, CALL the right, SYNC ------- */

/* The sum of the range: left + right, the halving tree's order (classic.h). */
TASK_2(double, pi, long, lo, long, hi)
{
    if (hi - lo == 1)
        return pi_term(lo, P.n);
    long m = lo + (hi - lo) / 2;
    SPAWN(pi, lo, m);
    double right = CALL(pi, m, hi);
    double left = SYNC(pi);
    return left + right;
}

/* ---- the runs (workloads.h): one RUN each --------------------------------- */

static struct bench_out run_fib(void) { return bench_value(RUN(fib, P.n)); }

static struct bench_out run_nqueens(void) { return bench_value(RUN(nqueens, NQ_PACK(0, 0, 0, 0))); }

static struct bench_out run_uts(void) { return bench_value(RUN(uts, bench_in.uts_root)); }

static struct bench_out run_knapsack(void)
{
    atomic_store_explicit(&ks_best, 0, memory_order_relaxed);
    uint64_t tasks = RUN(knapsack, 0, bench_in.ks_cap, 0);
    struct bench_out o = {(uint64_t)atomic_load_explicit(&ks_best, memory_order_relaxed), tasks};
    return o;
}

static struct bench_out run_pi(void) { return bench_value(pi_bits(RUN(pi, 0, P.n))); }

static const struct bench_run_entry runs[] = {
    {"fib", run_fib},         {"nqueens", run_nqueens},   {"uts-t1", run_uts},
    {"uts-t3", run_uts},      {"knapsack", run_knapsack}, {"pi", run_pi},
};

int main(int argc, char **argv)
{
    bench_parse(argc, argv, &P);
    lace_set_stacksize((size_t)64 << 20);
    lace_start((unsigned)P.threads, LACE_DEQUE);
    /* Warm up: every worker started and touched its stack. */
    if (RUN(fib, 20) != bench_fib_expect(20)) {
        fprintf(stderr, "lace: warm-up fib(20) is wrong\n");
        return 2;
    }
    bench_wait_start();
    struct bench_result r = bench_run(argv[0], &P, runs, sizeof runs / sizeof runs[0]);
    char extra[160];
    snprintf(extra, sizeof extra, "lace_version=%s\tlace_commit=%s\tlace_workers=%u", LACE_VERSION,
             LACE_COMMIT, lace_workers());
    int rc = bench_report("lace", &P, r.seconds, r.tasks, r.got, r.want, extra);
    lace_stop();
    return rc;
}
