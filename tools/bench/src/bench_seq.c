/*
 * bench_seq.c - the sequential baselines: the same work as the task versions,
 * with plain calls instead of tasks. Recursive functions are noinline and keep
 * their results opaque (empty volatile asm) so gcc -O2 cannot inline, unroll
 * or loop-convert the recursion. See common.h for the command line.
 */
#include "common.h"

#include "classic.h"

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

__attribute__((noinline)) static uint64_t seq_tree(long d, const struct bench_params *p)
{
    bench_spin((uint64_t)d, p->iters);
    if (d >= p->depth)
        return 1;
    uint64_t sum = 1;
    for (long i = 0; i < p->fanout; i++)
        sum += seq_tree(d + 1, p);
    return sum;
}

/* ---- the classic workloads: the task versions' recursions, plain calls ---- */

static struct bench_params CP; /* parameters of the classic workloads */
static int uts_kind;

__attribute__((noinline)) static uint64_t seq_uts(uint64_t node)
{
    if (CP.work)
        bench_spin(node, CP.work);
    int k = uts_children(node, uts_kind, CP.b0, CP.q_ppm, CP.depth);
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
        mm_base(c, a, b, n, MM_LD(CP.size));
        return;
    }
    for (int phase = 0; phase < 2; phase++)
        for (int q = 0; q < 4; q++) {
            double *cq;
            const double *aq, *bq;
            mm_quadrant(c, a, b, n, MM_LD(CP.size), phase, q, &cq, &aq, &bq);
            seq_matmul(cq, aq, bq, n / 2);
        }
}

static struct ks_item ks_items[KS_MAX_ITEMS];
static long ks_best;

/* Returns the nodes below this one (the tasks the parallel version makes). */
__attribute__((noinline)) static uint64_t seq_knapsack(long i, long c, long v)
{
    if (v > ks_best)
        ks_best = v;
    if (i == CP.items || ks_bound(ks_items, i, c, v) <= ks_best)
        return 0;
    uint64_t t = 0;
    if (ks_items[i].weight <= c)
        t += 1 + seq_knapsack(i + 1, c - ks_items[i].weight, v + ks_items[i].value);
    t += 1 + seq_knapsack(i + 1, c, v);
    return t;
}

int main(int argc, char **argv)
{
    struct bench_params p;
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
    bench_parse(argc, argv, &p);
    p.threads = 1;
    const char *w = p.workload;
    double t0, t1;
    uint64_t got, want, tasks;
    char extra[128] = "";

    if (strcmp(w, "fib") == 0) {
        t0 = bench_now();
        got = (uint64_t)seq_fib(p.n);
        t1 = bench_now();
        want = bench_fib_expect(p.n);
        tasks = bench_fib_tasks(p.n);
        double calls = 2.0 * (double)bench_fib_expect(p.n + 1) - 1;
        snprintf(extra, sizeof extra, "ns_per_call=%.3f", (t1 - t0) * 1e9 / calls);
    } else if (strcmp(w, "tput") == 0) {
        t0 = bench_now();
        got = 0;
        for (long i = 0; i < p.outer; i++) {
            uint64_t s = 0;
            for (long j = 0; j < p.inner; j++)
                s += seq_child((uint64_t)(i * p.inner + j + 1), p.iters);
            got += s;
        }
        t1 = bench_now();
        want = bench_tput_expect(p.outer, p.inner);
        tasks = (uint64_t)p.outer * (uint64_t)(p.inner + 1);
    } else if (strcmp(w, "uneven") == 0) {
        t0 = bench_now();
        got = 0;
        for (long i = 0; i < p.items; i++)
            got += seq_child((uint64_t)(i + 1), bench_uneven_iters(&p, i));
        t1 = bench_now();
        want = bench_uneven_expect(p.items);
        tasks = (uint64_t)p.items;
    } else if (strcmp(w, "pfor") == 0) {
        t0 = bench_now();
        got = 0;
        for (long i = 0; i < p.items; i++)
            got += seq_child((uint64_t)(i + 1), bench_pfor_iters(&p, i));
        t1 = bench_now();
        want = bench_uneven_expect(p.items);
        tasks = (uint64_t)p.items;
    } else if (strcmp(w, "nqueens") == 0) {
        t0 = bench_now();
        uint64_t r = seq_nqueens(NQ_PACK(0, 0, 0, 0), (unsigned)p.n);
        t1 = bench_now();
        got = NQ_SOL(r);
        want = bench_nqueens_expect(p.n);
        tasks = NQ_NODES(r) - 1; /* every placement; the empty board is no task */
    } else if (strcmp(w, "chain") == 0) {
        t0 = bench_now();
        got = (uint64_t)seq_chain(1, p.depth, p.iters);
        t1 = bench_now();
        want = (uint64_t)p.depth;
        tasks = (uint64_t)p.depth;
    } else if (strcmp(w, "tree") == 0) {
        t0 = bench_now();
        got = seq_tree(0, &p);
        t1 = bench_now();
        want = bench_tree_nodes(p.fanout, p.depth);
        tasks = want;
    } else if (strcmp(w, "uts-t1") == 0 || strcmp(w, "uts-t3") == 0) {
        CP = p;
        uts_kind = w[5] - '0';
        uint64_t root = UTS_NODE(uts_root((uint64_t)p.seed), 0);
        t0 = bench_now();
        got = seq_uts(root);
        t1 = bench_now();
        want = uts_expect(uts_kind, p.b0, p.q_ppm, p.depth, (uint64_t)p.seed);
        tasks = got - 1; /* every node but the root */
    } else if (strcmp(w, "cilksort") == 0) {
        CP = p;
        sort_elem *a, *tmp;
        sort_setup(p.size, (uint64_t)p.seed, &a, &tmp, &want);
        t0 = bench_now();
        tasks = seq_cilksort(a, tmp, p.size);
        t1 = bench_now();
        got = sort_check(a, p.size);
        free(a);
        free(tmp);
    } else if (strcmp(w, "matmul") == 0) {
        CP = p;
        double *a, *b, *c;
        mm_setup(p.size, (uint64_t)p.seed, &a, &b, &c);
        t0 = bench_now();
        seq_matmul(c, a, b, p.size);
        t1 = bench_now();
        mm_check(a, b, c, p.size, &got, &want);
        tasks = mm_tasks(p.size);
        mm_free(a);
    } else if (strcmp(w, "knapsack") == 0) {
        CP = p;
        long cap = ks_instance(ks_items, p.items, (uint64_t)p.seed);
        ks_best = 0;
        t0 = bench_now();
        tasks = seq_knapsack(0, cap, 0);
        t1 = bench_now();
        got = (uint64_t)ks_best;
        want = (uint64_t)ks_expect(ks_items, p.items, cap);
    } else if (strcmp(w, "pipe") == 0) {
        /* The pipeline's work in one loop: stage 0's, then each passing
         * stage's transform, item by item; checked as the main thread of
         * bench_sf's pipe checks. */
        t0 = bench_now();
        got = 0;
        for (long i = 0; i < p.items; i++) {
            uint64_t v = seq_child(bench_pipe_first(i), p.iters);
            for (long k = 1; k < p.stages - 1; k++)
                v = bench_pipe_next(seq_child(v, p.iters));
            got += v == bench_pipe_expect(i, p.stages);
        }
        t1 = bench_now();
        want = (uint64_t)p.items;
        tasks = (uint64_t)p.items * (uint64_t)(p.stages - 1);
    } else {
        bench_usage(argv[0]);
        return 64;
    }
    return bench_report("seq", &p, t1 - t0, tasks, got, want, extra);
}
