/*
 * bench_seq.c - the sequential baselines: the same work as the task versions,
 * with plain calls instead of tasks. Recursive functions are noinline and keep
 * their results opaque (empty volatile asm) so gcc -O2 cannot inline, unroll
 * or loop-convert the recursion. See common.h for the command line.
 */
#include "common.h"

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
    } else {
        bench_usage(argv[0]);
        return 64;
    }
    return bench_report("seq", &p, t1 - t0, tasks, got, want, extra);
}
