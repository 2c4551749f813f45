/*
 * bench_tbb.cpp - the workloads on oneTBB: tbb::task_group (run + wait) for
 * every recursive workload, tbb::parallel_for (grain 1, simple_partitioner)
 * for the uneven batch. Threads: global_control(max_allowed_parallelism, N),
 * N counting the calling thread. See common.h for the command line.
 */
#include "workloads.h"

#include <atomic>
#include <utility>
#include <vector>

#if __has_include(<oneapi/tbb/task_group.h>)
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/version.h>
#else
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/partitioner.h>
#include <tbb/task_group.h>
#include <tbb/tbb_stddef.h>
#endif

static bench_params P;

/* ---- fib: run(fib(n-1)); fib(n-2) directly; wait ------------------------- */

__attribute__((noinline)) static long fib(long n)
{
    if (n < 2)
        return n;
    long a = 0;
    tbb::task_group g;
    g.run([&a, n] { a = fib(n - 1); });
    long b = fib(n - 2);
    g.wait();
    return a + b;
}

/* ---- tput ------------------------------------------------------------------ */

static uint64_t tput_child(uint64_t v)
{
    bench_spin(v, P.iters);
    return v;
}

static bench_out run_tput()
{
    std::vector<uint64_t> part((size_t)P.outer);
    tbb::task_group outer;
    for (long i = 0; i < P.outer; i++) {
        outer.run([i, &part] {
            std::vector<uint64_t> res((size_t)P.inner);
            tbb::task_group inner;
            for (long j = 0; j < P.inner; j++)
                inner.run([i, j, &res] {
                    res[(size_t)j] = tput_child((uint64_t)(i * P.inner + j + 1));
                });
            inner.wait();
            uint64_t s = 0;
            for (uint64_t r : res)
                s += r;
            part[(size_t)i] = s;
        });
    }
    outer.wait();
    uint64_t sum = 0;
    for (uint64_t s : part)
        sum += s;
    return bench_value(sum);
}

/* ---- pfor: parallel_for, auto_partitioner (part 0) or simple (part 1) ------ */

static bench_out run_pfor()
{
    std::vector<uint64_t> res((size_t)P.items);
    auto body = [&res](const tbb::blocked_range<long> &r) {
        for (long i = r.begin(); i != r.end(); ++i) {
            bench_spin((uint64_t)(i + 1), bench_pfor_iters(&P, i));
            res[(size_t)i] = (uint64_t)(i + 1);
        }
    };
    if (P.part == 0)
        tbb::parallel_for(tbb::blocked_range<long>(0, P.items), body, tbb::auto_partitioner());
    else
        tbb::parallel_for(tbb::blocked_range<long>(0, P.items, 1), body,
                          tbb::simple_partitioner());
    uint64_t sum = 0;
    for (uint64_t r : res)
        sum += r;
    return bench_value(sum);
}

/* ---- uneven: parallel_for, one item per chunk ------------------------------ */

static bench_out run_uneven()
{
    std::vector<uint64_t> res((size_t)P.items);
    tbb::parallel_for(
        tbb::blocked_range<long>(0, P.items, 1),
        [&res](const tbb::blocked_range<long> &r) {
            for (long i = r.begin(); i != r.end(); ++i) {
                bench_spin((uint64_t)(i + 1), bench_uneven_iters(&P, i));
                res[(size_t)i] = (uint64_t)(i + 1);
            }
        },
        tbb::simple_partitioner());
    uint64_t sum = 0;
    for (uint64_t r : res)
        sum += r;
    return bench_value(sum);
}

/* ---- nqueens ---------------------------------------------------------------- */

static uint64_t nqueens(uint64_t s)
{
    unsigned n = (unsigned)P.n;
    unsigned row = NQ_ROW(s), cols = NQ_COLS(s), d1 = NQ_D1(s), d2 = NQ_D2(s);
    if (row == n)
        return NQ_RES(1, 1);
    unsigned mask = (1u << n) - 1;
    unsigned avail = ~(cols | d1 | d2) & mask;
    uint64_t res[16];
    int k = 0;
    tbb::task_group g;
    while (avail) {
        unsigned bit = avail & -avail;
        avail &= avail - 1;
        uint64_t child = NQ_PACK(row + 1, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1);
        uint64_t *slot = &res[k++];
        g.run([slot, child] { *slot = nqueens(child); });
    }
    g.wait();
    uint64_t sol = 0, nodes = 1;
    for (int i = 0; i < k; i++) {
        sol += NQ_SOL(res[i]);
        nodes += NQ_NODES(res[i]);
    }
    return NQ_RES(sol, nodes);
}

/* ---- meh ---------------------------------------------------------------------- */

static long chain(long d)
{
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return 1;
    long r = 0;
    tbb::task_group g;
    g.run([&r, d] { r = chain(d + 1); });
    g.wait();
    return r + 1;
}

static uint64_t tree(long d)
{
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return 1;
    uint64_t res[64];
    tbb::task_group g;
    for (long i = 0; i < P.fanout; i++) {
        uint64_t *slot = &res[i];
        g.run([slot, d] { *slot = tree(d + 1); });
    }
    g.wait();
    uint64_t sum = 1;
    for (long i = 0; i < P.fanout; i++)
        sum += res[i];
    return sum;
}

/* ---- UTS: every node runs all its children in one task_group, waits ------- */

static uint64_t uts(uint64_t node)
{
    if (P.work)
        bench_spin(node, P.work);
    int k = uts_children(node, bench_in.uts_kind, P.b0, P.q_ppm, P.depth);
    uint64_t buf[UTS_MAX_CHILDREN];
    std::vector<uint64_t> big;
    uint64_t *res = buf;
    if (k > UTS_MAX_CHILDREN) { /* the T3 root */
        big.resize((size_t)k);
        res = big.data();
    }
    tbb::task_group g;
    for (int i = 0; i < k; i++) {
        uint64_t *slot = &res[i];
        uint64_t child = uts_child_node(node, i);
        g.run([slot, child] { *slot = uts(child); });
    }
    g.wait();
    uint64_t n = 1;
    for (int i = 0; i < k; i++)
        n += res[i];
    return n;
}

/* ---- cilksort ------------------------------------------------------------------- */

/* Each returns the tasks it made (directly and below). */
static uint64_t cmerge(const sort_elem *a, long na, const sort_elem *b, long nb, sort_elem *dst)
{
    if (na < nb) {
        std::swap(a, b);
        std::swap(na, nb);
    }
    if (na == 0)
        return 0;
    if (na + nb < SORT_MERGE_CUTOFF) {
        sort_merge_seq(a, na, b, nb, dst);
        return 0;
    }
    long ma = na / 2, lb = sort_lower_bound(b, nb, a[ma]);
    dst[ma + lb] = a[ma];
    uint64_t r0 = 0, r1 = 0;
    tbb::task_group g;
    g.run([&] { r0 = cmerge(a, ma, b, lb, dst); });
    g.run([&] { r1 = cmerge(a + ma + 1, na - ma - 1, b + lb, nb - lb, dst + ma + lb + 1); });
    g.wait();
    return 2 + r0 + r1;
}

static uint64_t csort(sort_elem *a, sort_elem *tmp, long n)
{
    if (n < SORT_QUICK_CUTOFF) {
        sort_seq(a, n);
        return 0;
    }
    long q = n / 4;
    uint64_t r[6] = {0, 0, 0, 0, 0, 0};
    tbb::task_group g;
    g.run([&] { r[0] = csort(a, tmp, q); });
    g.run([&] { r[1] = csort(a + q, tmp + q, q); });
    g.run([&] { r[2] = csort(a + 2 * q, tmp + 2 * q, q); });
    g.run([&] { r[3] = csort(a + 3 * q, tmp + 3 * q, n - 3 * q); });
    g.wait();
    g.run([&] { r[4] = cmerge(a, q, a + q, q, tmp); });
    g.run([&] { r[5] = cmerge(a + 2 * q, q, a + 3 * q, n - 3 * q, tmp + 2 * q); });
    g.wait();
    uint64_t t = 6 + r[0] + r[1] + r[2] + r[3] + r[4] + r[5];
    return t + cmerge(tmp, 2 * q, tmp + 2 * q, n - 2 * q, a);
}

/* ---- matmul: two phases of 4 quadrant products -------------------------------------- */

static void matmul(double *c, const double *a, const double *b, long n)
{
    if (n <= MM_BASE) {
        mm_base(c, a, b, n, MM_LD(P.size));
        return;
    }
    for (int phase = 0; phase < 2; phase++) {
        tbb::task_group g;
        for (int q = 0; q < 4; q++) {
            double *cq;
            const double *aq, *bq;
            mm_quadrant(c, a, b, n, MM_LD(P.size), phase, q, &cq, &aq, &bq);
            g.run([cq, aq, bq, n] { matmul(cq, aq, bq, n / 2); });
        }
        g.wait();
    }
}

/* ---- knapsack: "take" and "skip" as tasks, a shared best (CAS-max) ----------------- */

/* The instance workloads.h made. */
static const ks_item *const ks_items = bench_in.ks_items;
/* Relaxed: a monotone pruning hint; the final read follows every wait. */
static std::atomic<long> ks_best{0};

static void ks_improve(long v)
{
    long b = ks_best.load(std::memory_order_relaxed);
    while (v > b && !ks_best.compare_exchange_weak(b, v, std::memory_order_relaxed))
        ;
}

/* Returns the tasks made below this node. */
static uint64_t knapsack(long i, long c, long v)
{
    ks_improve(v);
    if (i == P.items || ks_bound(ks_items, i, c, v) <= ks_best.load(std::memory_order_relaxed))
        return 0;
    const ks_item *it = &ks_items[i];
    uint64_t rt = 0, rs = 0;
    bool take = it->weight <= c;
    /*
     * "skip" is run first so that wait(), which takes the newest task of the
     * group first, visits "take" first, as the sequential program and libsf
     * (sf_get of take) do: spawned the other way round, a lone oneTBB thread
     * searches "skip" first, finds good values late and visits ~4 x the nodes.
     */
    tbb::task_group g;
    g.run([&] { rs = 1 + knapsack(i + 1, c, v); });
    if (take)
        g.run([&] { rt = 1 + knapsack(i + 1, c - it->weight, v + it->value); });
    g.wait();
    return rt + rs;
}

/* ---- pi: [lo, hi) halved down to single indices, both halves tasks ------------------ */

/* left + right, the halving tree's order (classic.h). */
static double pi(long lo, long hi)
{
    if (hi - lo == 1)
        return pi_term(lo, P.n);
    long m = lo + (hi - lo) / 2;
    double l = 0, r = 0;
    tbb::task_group g;
    g.run([&l, lo, m] { l = pi(lo, m); });
    g.run([&r, m, hi] { r = pi(m, hi); });
    g.wait();
    return l + r;
}

template <class F> static uint64_t as_task(F f)
{
    uint64_t r = 0;
    tbb::task_group g;
    g.run([&r, &f] { r = f(); });
    g.wait();
    return r;
}

/* ---- the runs (workloads.h) ------------------------------------------------ */

static bench_out run_fib() { return bench_value((uint64_t)fib(P.n)); }
static bench_out run_nqueens() { return bench_value(nqueens(NQ_PACK(0, 0, 0, 0))); }
/* chain and tree: the root is a task too, as in the other programs. */
static bench_out run_chain() { return bench_value(as_task([] { return (uint64_t)chain(1); })); }
static bench_out run_tree() { return bench_value(as_task([] { return tree(0); })); }
static bench_out run_uts() { return bench_value(uts(bench_in.uts_root)); }
static bench_out run_cilksort() { return {0, csort(bench_in.sort_a, bench_in.sort_tmp, P.size)}; }

static bench_out run_matmul()
{
    matmul(bench_in.mm_c, bench_in.mm_a, bench_in.mm_b, P.size);
    return bench_value(0);
}

static bench_out run_knapsack()
{
    ks_best.store(0, std::memory_order_relaxed);
    uint64_t tasks = knapsack(0, bench_in.ks_cap, 0);
    return {(uint64_t)ks_best.load(std::memory_order_relaxed), tasks};
}

static bench_out run_pi() { return bench_value(pi_bits(pi(0, P.n))); }

/* ---- reduce: parallel_deterministic_reduce over the chunks ---------------- */

/* blocked_range(0, chunks, 1) splits [c0, c1) at c0 + (c1 - c0) / 2 while it
 * holds more than one chunk, and the deterministic reduce joins left with
 * right: the tree of workloads.h, each leaf one chunk from the identity. */
static bench_out run_reduce()
{
    tbb::blocked_range<long> chunks(0, bench_red_chunks(&P), 1);
    if (P.shape == 0) {
        double s = tbb::parallel_deterministic_reduce(
            chunks, 0.0,
            [](const tbb::blocked_range<long> &r, double v) {
                for (long c = r.begin(); c != r.end(); ++c) {
                    long lo, hi;
                    bench_red_chunk(&P, c, &lo, &hi);
                    v = bench_red_sum(lo, hi, v);
                }
                return v;
            },
            [](double a, double b) { return a + b; });
        return bench_value(bench_red_sum_value(s));
    }
    bench_hist empty;
    memset(&empty, 0, sizeof empty);
    bench_hist h = tbb::parallel_deterministic_reduce(
        chunks, empty,
        [](const tbb::blocked_range<long> &r, bench_hist v) {
            for (long c = r.begin(); c != r.end(); ++c) {
                long lo, hi;
                bench_red_chunk(&P, c, &lo, &hi);
                bench_red_count(lo, hi, &v);
            }
            return v;
        },
        [](bench_hist a, const bench_hist &b) {
            bench_red_hist_join(&a, &b);
            return a;
        });
    return bench_value(bench_red_hist_value(&h));
}

static const bench_run_entry runs[] = {
    {"fib", run_fib},           {"tput", run_tput},       {"uneven", run_uneven},
    {"pfor", run_pfor},         {"nqueens", run_nqueens}, {"chain", run_chain},
    {"tree", run_tree},         {"uts-t1", run_uts},      {"uts-t3", run_uts},
    {"cilksort", run_cilksort}, {"matmul", run_matmul},   {"knapsack", run_knapsack},
    {"pi", run_pi},             {"reduce", run_reduce},
};

int main(int argc, char **argv)
{
    bench_parse(argc, argv, &P);
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, (size_t)P.threads);
    tbb::global_control stack(tbb::global_control::thread_stack_size, (size_t)64 << 20);

    /* Warm up: start the workers. */
    {
        std::atomic<long> sink{0};
        tbb::parallel_for(0L, 2000L * P.threads, [&sink](long i) {
            sink.fetch_add((long)(bench_spin((uint64_t)i, 2000) & 1), std::memory_order_relaxed);
        });
        if (fib(20) != (long)bench_fib_expect(20))
            return 2;
    }
    bench_result r = bench_run(argv[0], &P, runs, sizeof runs / sizeof runs[0]);
    return bench_report("onetbb", &P, r.seconds, r.tasks, r.got, r.want, "");
}
