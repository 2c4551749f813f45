/*
 * bench_sflight.c - the fork-join workloads on libsf's light tasks (sf.h,
 * Light tasks), runtime "libsf-light": each run is one light run,
 * sf_light(root, ...) from the main thread, and every task below it an
 * sf_spawn() synced by sf_sync() in the function that spawned it. Threads:
 * sf_config.threads = N, as bench_sf. See common.h for the command line;
 * it runs fib, nqueens, uts-t1, uts-t3, knapsack and pi.
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

/* A value through a light task's void * and back. */
#define V(x) ((void *)(uintptr_t)(x))
#define U(p) ((uint64_t)(uintptr_t)(p))

/* ---- fib: sf_spawn(fib, n-1); b = fib(n-2); a = sf_sync() ---------------- */
/* Not inlined, both results through an empty asm: bench_seq's fib. */

__attribute__((noinline)) static void *fib(sf_worker *w, void *arg)
{
    long n = (long)(intptr_t)arg;
    if (n < 2)
        return arg;
    sf_spawn(w, fib, V(n - 1));
    uint64_t b = U(fib(w, V(n - 2)));
    __asm__ volatile("" : "+r"(b));
    uint64_t a = U(sf_sync(w));
    __asm__ volatile("" : "+r"(a));
    return V(a + b);
}

/* ---- nqueens: every valid placement spawned, then all synced (LIFO) ------ */

static void *nqueens(sf_worker *w, void *arg)
{
    uint64_t s = U(arg);
    unsigned n = (unsigned)P.n;
    unsigned row = NQ_ROW(s), cols = NQ_COLS(s), d1 = NQ_D1(s), d2 = NQ_D2(s);
    if (row == n)
        return V(NQ_RES(1, 1));
    unsigned mask = (1u << n) - 1;
    unsigned avail = ~(cols | d1 | d2) & mask;
    int k = 0;
    while (avail) {
        unsigned bit = avail & -avail;
        avail &= avail - 1;
        sf_spawn(w, nqueens,
                 V(NQ_PACK(row + 1, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1)));
        k++;
    }
    uint64_t sol = 0, nodes = 1;
    while (k-- > 0) {
        uint64_t r = U(sf_sync(w));
        sol += NQ_SOL(r);
        nodes += NQ_NODES(r);
    }
    return V(NQ_RES(sol, nodes));
}

/* ---- UTS: every child spawned, then all synced (LIFO) -------------------- */

static void *uts(sf_worker *w, void *arg)
{
    uint64_t node = U(arg);
    if (P.work)
        bench_spin(node, P.work);
    int k = uts_children(node, bench_in.uts_kind, P.b0, P.q_ppm, P.depth);
    for (int i = 0; i < k; i++)
        sf_spawn(w, uts, V(uts_child_node(node, i)));
    uint64_t n = 1;
    for (int i = 0; i < k; i++)
        n += U(sf_sync(w));
    return V(n);
}

/* ---- knapsack: spawn "skip", call "take", sync (Lace's shape) ------------ */

/* The instance workloads.h made. */
static const struct ks_item *const ks_items = bench_in.ks_items;
/*
 * The best value found so far. Relaxed everywhere, as in bench_sf: a pruning
 * hint, monotone (CAS-max), a stale read only prunes less; the final value is
 * read after sf_light() returned, and every sync of a stolen task orders the
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

struct ks_job {
    long i, c, v;
};

/* Returns the tasks made below this node. "take" runs first, as in the
 * sequential order: it is called while "skip" waits on the deque. A job
 * lives in its parent's frame until the parent's sync. */
static void *knapsack(sf_worker *w, void *arg)
{
    struct ks_job j = *(const struct ks_job *)arg;
    ks_improve(j.v);
    if (j.i == P.items ||
        ks_bound(ks_items, j.i, j.c, j.v) <= atomic_load_explicit(&ks_best, memory_order_relaxed))
        return V(0);
    const struct ks_item *it = &ks_items[j.i];
    struct ks_job skip = {j.i + 1, j.c, j.v};
    if (it->weight > j.c) /* nothing to take: skip is the only child */
        return V(1 + U(knapsack(w, &skip)));
    struct ks_job take = {j.i + 1, j.c - it->weight, j.v + it->value};
    sf_spawn(w, knapsack, &skip);
    uint64_t t = 1 + U(knapsack(w, &take));
    return V(t + 1 + U(sf_sync(w)));
}

/* ---- pi: [lo, hi) halved; spawn the left half, call the right, sync ------- */

/* Returns the bits of the range's sum: left + right, the halving tree's
 * order (classic.h). */
static void *pi(sf_worker *w, void *arg)
{
    uint64_t r = U(arg);
    long lo = PI_LO(r), hi = PI_HI(r);
    if (hi - lo == 1)
        return V(pi_bits(pi_term(lo, P.n)));
    long m = lo + (hi - lo) / 2;
    sf_spawn(w, pi, V(PI_RANGE(lo, m)));
    double right = pi_double(U(pi(w, V(PI_RANGE(m, hi)))));
    double left = pi_double(U(sf_sync(w)));
    return V(pi_bits(left + right));
}

/* ---- the runs (workloads.h): one light run each -------------------------- */

/* A light run's root: calls fn on the run's worker and keeps its value, so
 * that sf_light()'s NULL means only a failed run. */
struct root {
    sf_light_fn fn;
    void *arg, *value;
};

static void *root_fn(sf_worker *w, void *arg)
{
    struct root *r = arg;
    r->value = r->fn(w, r->arg);
    return r;
}

static uint64_t light(sf_light_fn fn, void *arg)
{
    struct root r = {fn, arg, NULL};
    if (sf_light(root_fn, &r) == NULL) {
        fprintf(stderr, "libsf-light: sf_light failed: %s%s%s\n", strerror(errno),
                sf_task_error_message() ? ": " : "",
                sf_task_error_message() ? sf_task_error_message() : "");
        exit(3);
    }
    return U(r.value);
}

static struct bench_out run_fib(void) { return bench_value(light(fib, V(P.n))); }

static struct bench_out run_nqueens(void)
{
    return bench_value(light(nqueens, V(NQ_PACK(0, 0, 0, 0))));
}

static struct bench_out run_uts(void) { return bench_value(light(uts, V(bench_in.uts_root))); }

static struct bench_out run_knapsack(void)
{
    atomic_store_explicit(&ks_best, 0, memory_order_relaxed);
    struct ks_job root = {0, bench_in.ks_cap, 0};
    uint64_t tasks = light(knapsack, &root);
    struct bench_out o = {(uint64_t)atomic_load_explicit(&ks_best, memory_order_relaxed), tasks};
    return o;
}

static struct bench_out run_pi(void) { return bench_value(light(pi, V(PI_RANGE(0, P.n)))); }

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
    if (light(fib, V(20)) != bench_fib_expect(20)) {
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
