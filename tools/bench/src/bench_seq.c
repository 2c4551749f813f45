/*
 * bench_seq.c - the sequential baselines: the same work as the task versions,
 * with plain calls instead of tasks. Recursive functions are noinline and keep
 * their results opaque (empty volatile asm) so gcc -O2 cannot inline, unroll
 * or loop-convert the recursion. See common.h for the command line.
 */
#include "workloads.h"

static struct bench_params P;

/* fib: both recursive results pass through an asm barrier, so gcc can turn
 * neither call into a loop or an accumulator; ~1-2 ns per call. */
__attribute__((noinline)) static long seq_fib(long n)
{
    if (n < 2)
        return n;
    long a = seq_fib(n - 1);
    __asm__ volatile("" : "+r"(a));
    long b = seq_fib(n - 2);
    __asm__ volatile("" : "+r"(b));
    return a + b;
}

__attribute__((noinline)) static uint64_t seq_child(uint64_t v, long iters)
{
    bench_spin(v, iters);
    return v;
}

__attribute__((noinline)) static uint64_t seq_nqueens(uint64_t s, unsigned n)
{
    unsigned row = NQ_ROW(s), cols = NQ_COLS(s), d1 = NQ_D1(s), d2 = NQ_D2(s);
    if (row == n)
        return NQ_RES(1, 1);
    unsigned mask = (1u << n) - 1;
    unsigned avail = ~(cols | d1 | d2) & mask;
    uint64_t sol = 0, nodes = 1;
    while (avail) {
        unsigned bit = avail & -avail;
        avail &= avail - 1;
        uint64_t r = seq_nqueens(NQ_PACK(row + 1, cols | bit, ((d1 | bit) << 1) & mask,
                                         (d2 | bit) >> 1),
                                 n);
        sol += NQ_SOL(r);
        nodes += NQ_NODES(r);
    }
    return NQ_RES(sol, nodes);
}

__attribute__((noinline)) static long seq_chain(long d, long depth, long iters)
{
    bench_spin((uint64_t)d, iters);
    if (d >= depth)
        return 1;
    long r = seq_chain(d + 1, depth, iters);
    __asm__ volatile("" : "+r"(r));
    return r + 1;
}

__attribute__((noinline)) static uint64_t seq_tree(long d)
{
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return 1;
    uint64_t sum = 1;
    for (long i = 0; i < P.fanout; i++)
        sum += seq_tree(d + 1);
    return sum;
}

/* ---- the classic workloads: the task versions' recursions, plain calls ---- */

__attribute__((noinline)) static uint64_t seq_uts(uint64_t node)
{
    if (P.work)
        bench_spin(node, P.work);
    int k = uts_children(node, bench_in.uts_kind, P.b0, P.q_ppm, P.depth);
    uint64_t n = 1;
    for (int i = 0; i < k; i++)
        n += seq_uts(uts_child_node(node, i));
    return n;
}

/* Returns the tasks the parallel version makes: 2 per split merge. */
__attribute__((noinline)) static uint64_t seq_merge(const sort_elem *a, long na,
                                                    const sort_elem *b, long nb, sort_elem *dst)
{
    if (na < nb) {
        const sort_elem *t = a;
        a = b;
        b = t;
        long tn = na;
        na = nb;
        nb = tn;
    }
    if (na == 0)
        return 0;
    if (na + nb < SORT_MERGE_CUTOFF) {
        sort_merge_seq(a, na, b, nb, dst);
        return 0;
    }
    long ma = na / 2, lb = sort_lower_bound(b, nb, a[ma]);
    dst[ma + lb] = a[ma];
    uint64_t t = 2;
    t += seq_merge(a, ma, b, lb, dst);
    t += seq_merge(a + ma + 1, na - ma - 1, b + lb, nb - lb, dst + ma + lb + 1);
    return t;
}

/* Returns the tasks the parallel version makes: 4 sorts + 2 merges a split. */
__attribute__((noinline)) static uint64_t seq_cilksort(sort_elem *a, sort_elem *tmp, long n)
{
    if (n < SORT_QUICK_CUTOFF) {
        sort_seq(a, n);
        return 0;
    }
    long q = n / 4;
    uint64_t t = 6;
    t += seq_cilksort(a, tmp, q);
    t += seq_cilksort(a + q, tmp + q, q);
    t += seq_cilksort(a + 2 * q, tmp + 2 * q, q);
    t += seq_cilksort(a + 3 * q, tmp + 3 * q, n - 3 * q);
    t += seq_merge(a, q, a + q, q, tmp);
    t += seq_merge(a + 2 * q, q, a + 3 * q, n - 3 * q, tmp + 2 * q);
    t += seq_merge(tmp, 2 * q, tmp + 2 * q, n - 2 * q, a);
    return t;
}

__attribute__((noinline)) static void seq_matmul(double *c, const double *a, const double *b,
                                                 long n)
{
    if (n <= MM_BASE) {
        mm_base(c, a, b, n, MM_LD(P.size));
        return;
    }
    for (int phase = 0; phase < 2; phase++)
        for (int q = 0; q < 4; q++) {
            double *cq;
            const double *aq, *bq;
            mm_quadrant(c, a, b, n, MM_LD(P.size), phase, q, &cq, &aq, &bq);
            seq_matmul(cq, aq, bq, n / 2);
        }
}

/* The instance workloads.h made. */
static const struct ks_item *const ks_items = bench_in.ks_items;
static long ks_best;

/* Returns the nodes below this one (the tasks the parallel version makes). */
__attribute__((noinline)) static uint64_t seq_knapsack(long i, long c, long v)
{
    if (v > ks_best)
        ks_best = v;
    if (i == P.items || ks_bound(ks_items, i, c, v) <= ks_best)
        return 0;
    uint64_t t = 0;
    if (ks_items[i].weight <= c)
        t += 1 + seq_knapsack(i + 1, c - ks_items[i].weight, v + ks_items[i].value);
    t += 1 + seq_knapsack(i + 1, c, v);
    return t;
}

/* Both halves plain calls where the task versions make both tasks; left + right,
 * the halving tree's order (classic.h). */
__attribute__((noinline)) static double seq_pi(long lo, long hi)
{
    if (hi - lo == 1)
        return pi_term(lo, P.n);
    long m = lo + (hi - lo) / 2;
    double l = seq_pi(lo, m);
    return l + seq_pi(m, hi);
}

/* ---- the runs (workloads.h): the same work as the task versions' -------- */

static struct bench_out run_fib(void) { return bench_value((uint64_t)seq_fib(P.n)); }

static struct bench_out run_tput(void)
{
    uint64_t sum = 0;
    for (long i = 0; i < P.outer; i++) {
        uint64_t s = 0;
        for (long j = 0; j < P.inner; j++)
            s += seq_child((uint64_t)(i * P.inner + j + 1), P.iters);
        sum += s;
    }
    return bench_value(sum);
}

static struct bench_out run_items(long (*iters)(const struct bench_params *, long))
{
    uint64_t sum = 0;
    for (long i = 0; i < P.items; i++)
        sum += seq_child((uint64_t)(i + 1), iters(&P, i));
    return bench_value(sum);
}

static struct bench_out run_uneven(void) { return run_items(bench_uneven_iters); }

static struct bench_out run_pfor(void) { return run_items(bench_pfor_iters); }

static struct bench_out run_nqueens(void)
{
    return bench_value(seq_nqueens(NQ_PACK(0, 0, 0, 0), (unsigned)P.n));
}

static struct bench_out run_chain(void)
{
    return bench_value((uint64_t)seq_chain(1, P.depth, P.iters));
}

static struct bench_out run_tree(void) { return bench_value(seq_tree(0)); }

static struct bench_out run_uts(void) { return bench_value(seq_uts(bench_in.uts_root)); }

static struct bench_out run_cilksort(void)
{
    struct bench_out o = {0, seq_cilksort(bench_in.sort_a, bench_in.sort_tmp, P.size)};
    return o;
}

static struct bench_out run_matmul(void)
{
    seq_matmul(bench_in.mm_c, bench_in.mm_a, bench_in.mm_b, P.size);
    return bench_value(0);
}

static struct bench_out run_knapsack(void)
{
    ks_best = 0;
    uint64_t tasks = seq_knapsack(0, bench_in.ks_cap, 0);
    struct bench_out o = {(uint64_t)ks_best, tasks};
    return o;
}

static struct bench_out run_pi(void) { return bench_value(pi_bits(seq_pi(0, P.n))); }

/* The pipeline's work in one loop: stage 0's, then each passing stage's
 * transform, item by item; checked as the main thread of bench_sf's pipe
 * checks. */
static struct bench_out run_pipe(void)
{
    uint64_t good = 0;
    for (long i = 0; i < P.items; i++) {
        uint64_t v = seq_child(bench_pipe_first(i), P.iters);
        for (long k = 1; k < P.stages - 1; k++)
            v = bench_pipe_next(seq_child(v, P.iters));
        good += v == bench_pipe_expect(i, P.stages);
    }
    return bench_value(good);
}

/* reduce: the tree of workloads.h, in one thread. */
static struct bench_out run_reduce(void)
{
    long chunks = bench_red_chunks(&P);
    if (P.shape == 0)
        return bench_value(bench_red_sum_value(bench_red_sum_tree(&P, 0, chunks)));
    static struct bench_hist h;
    bench_red_hist_tree(&P, 0, chunks, &h);
    return bench_value(bench_red_hist_value(&h));
}

static const struct bench_run_entry runs[] = {
    {"fib", run_fib},         {"tput", run_tput},         {"uneven", run_uneven},
    {"pfor", run_pfor},       {"nqueens", run_nqueens},   {"chain", run_chain},
    {"tree", run_tree},       {"uts-t1", run_uts},        {"uts-t3", run_uts},
    {"cilksort", run_cilksort}, {"matmul", run_matmul},   {"knapsack", run_knapsack},
    {"pi", run_pi},           {"pipe", run_pipe},         {"reduce", run_reduce},
};

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "calib") == 0) {
        /* ns per bench_spin iteration and per seq_fib call (fib(30)). */
        long it = 50000000;
        double t0 = bench_now();
        uint64_t x = bench_spin(1, it);
        double t1 = bench_now();
        long calls = (long)(2 * bench_fib_expect(31) - 1);
        long f = seq_fib(30);
        double t2 = bench_now();
        printf("CALIB\tns_per_iter=%.4f\tns_per_fib_call=%.3f\tsink=%llu\n",
               (t1 - t0) * 1e9 / (double)it, (t2 - t1) * 1e9 / (double)calls,
               (unsigned long long)(x ^ (uint64_t)f) & 1);
        return 0;
    }
    bench_parse(argc, argv, &P);
    P.threads = 1;
    struct bench_result r = bench_run(argv[0], &P, runs, sizeof runs / sizeof runs[0]);
    char extra[64] = "";
    if (strcmp(P.workload, "fib") == 0) {
        double calls = 2.0 * (double)bench_fib_expect(P.n + 1) - 1;
        snprintf(extra, sizeof extra, "ns_per_call=%.3f", r.seconds * 1e9 / calls);
    }
    return bench_report("seq", &P, r.seconds, r.tasks, r.got, r.want, extra);
}
