/*
 * bench_omp.c - the workloads on OpenMP tasks (`omp task` + `omp taskwait`,
 * started by one thread in `parallel` + `single`). Built twice: gcc/libgomp
 * (bench_gomp) and clang/libomp (bench_llomp). Threads: OMP_NUM_THREADS=N
 * (set by the harness) and num_threads(N). See common.h for the command line.
 */
#include "workloads.h"

#include <omp.h>
#include <stdatomic.h>

#ifndef OMP_RUNTIME_NAME
#define OMP_RUNTIME_NAME "omp"
#endif

static struct bench_params P;

/* ---- fib ------------------------------------------------------------------- */

__attribute__((noinline)) static long fib(long n)
{
    if (n < 2)
        return n;
    long a = 0, b;
#pragma omp task shared(a) firstprivate(n)
    a = fib(n - 1);
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

/* ---- tput -------------------------------------------------------------------- */

static uint64_t tput_child(uint64_t v)
{
    bench_spin(v, P.iters);
    return v;
}

static uint64_t tput(void)
{
    uint64_t *part = calloc((size_t)P.outer, sizeof *part);
    if (!part)
        exit(3);
    for (long i = 0; i < P.outer; i++) {
#pragma omp task firstprivate(i) shared(part)
        {
            uint64_t *res = malloc((size_t)P.inner * sizeof *res);
            if (!res)
                exit(3);
            for (long j = 0; j < P.inner; j++) {
#pragma omp task firstprivate(i, j) shared(res)
                res[j] = tput_child((uint64_t)(i * P.inner + j + 1));
            }
#pragma omp taskwait
            uint64_t s = 0;
            for (long j = 0; j < P.inner; j++)
                s += res[j];
            free(res);
            part[i] = s;
        }
    }
#pragma omp taskwait
    uint64_t sum = 0;
    for (long i = 0; i < P.outer; i++)
        sum += part[i];
    free(part);
    return sum;
}

/* ---- uneven: one task per item ------------------------------------------------ */

static uint64_t uneven(void)
{
    uint64_t *res = calloc((size_t)P.items, sizeof *res);
    if (!res)
        exit(3);
    for (long i = 0; i < P.items; i++) {
#pragma omp task firstprivate(i) shared(res)
        {
            bench_spin((uint64_t)(i + 1), bench_uneven_iters(&P, i));
            res[i] = (uint64_t)(i + 1);
        }
    }
#pragma omp taskwait
    uint64_t sum = 0;
    for (long i = 0; i < P.items; i++)
        sum += res[i];
    free(res);
    return sum;
}

/* ---- nqueens ---------------------------------------------------------------------- */

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
    while (avail) {
        unsigned bit = avail & -avail;
        avail &= avail - 1;
        uint64_t child = NQ_PACK(row + 1, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1);
        int slot = k++;
#pragma omp task firstprivate(child, slot) shared(res)
        res[slot] = nqueens(child);
    }
#pragma omp taskwait
    uint64_t sol = 0, nodes = 1;
    for (int i = 0; i < k; i++) {
        sol += NQ_SOL(res[i]);
        nodes += NQ_NODES(res[i]);
    }
    return NQ_RES(sol, nodes);
}

/* ---- meh ---------------------------------------------------------------------------- */

static long chain(long d)
{
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return 1;
    long r = 0;
#pragma omp task shared(r) firstprivate(d)
    r = chain(d + 1);
#pragma omp taskwait
    return r + 1;
}

static uint64_t tree(long d)
{
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return 1;
    uint64_t res[64];
    for (long i = 0; i < P.fanout; i++) {
#pragma omp task shared(res) firstprivate(i, d)
        res[i] = tree(d + 1);
    }
#pragma omp taskwait
    uint64_t sum = 1;
    for (long i = 0; i < P.fanout; i++)
        sum += res[i];
    return sum;
}

/* ---- UTS: every node makes a task per child, then taskwait ----------------------- */

static uint64_t uts(uint64_t node)
{
    if (P.work)
        bench_spin(node, P.work);
    int k = uts_children(node, bench_in.uts_kind, P.b0, P.q_ppm, P.depth);
    uint64_t buf[UTS_MAX_CHILDREN], *res = buf;
    if (k > UTS_MAX_CHILDREN && !(res = malloc((size_t)k * sizeof *res))) /* the T3 root */
        exit(3);
    for (int i = 0; i < k; i++) {
        uint64_t child = uts_child_node(node, i);
#pragma omp task firstprivate(child, i) shared(res)
        res[i] = uts(child);
    }
#pragma omp taskwait
    uint64_t n = 1;
    for (int i = 0; i < k; i++)
        n += res[i];
    if (res != buf)
        free(res);
    return n;
}

/* ---- cilksort ------------------------------------------------------------------------ */

/* Each returns the tasks it made (directly and below). */
static uint64_t cmerge(const sort_elem *a, long na, const sort_elem *b, long nb, sort_elem *dst)
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
    uint64_t r0 = 0, r1 = 0;
#pragma omp task shared(r0) firstprivate(a, b, ma, lb, dst)
    r0 = cmerge(a, ma, b, lb, dst);
#pragma omp task shared(r1) firstprivate(a, b, na, nb, ma, lb, dst)
    r1 = cmerge(a + ma + 1, na - ma - 1, b + lb, nb - lb, dst + ma + lb + 1);
#pragma omp taskwait
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
    for (int i = 0; i < 4; i++) {
        long len = i < 3 ? q : n - 3 * q;
#pragma omp task shared(r) firstprivate(a, tmp, q, i, len)
        r[i] = csort(a + i * q, tmp + i * q, len);
    }
#pragma omp taskwait
#pragma omp task shared(r) firstprivate(a, tmp, q)
    r[4] = cmerge(a, q, a + q, q, tmp);
#pragma omp task shared(r) firstprivate(a, tmp, q, n)
    r[5] = cmerge(a + 2 * q, q, a + 3 * q, n - 3 * q, tmp + 2 * q);
#pragma omp taskwait
    uint64_t t = 6 + r[0] + r[1] + r[2] + r[3] + r[4] + r[5];
    return t + cmerge(tmp, 2 * q, tmp + 2 * q, n - 2 * q, a);
}

/* ---- matmul: two phases of 4 quadrant products ------------------------------------------ */

static void matmul(double *c, const double *a, const double *b, long n)
{
    if (n <= MM_BASE) {
        mm_base(c, a, b, n, MM_LD(P.size));
        return;
    }
    for (int phase = 0; phase < 2; phase++) {
        for (int q = 0; q < 4; q++) {
            double *cq;
            const double *aq, *bq;
            mm_quadrant(c, a, b, n, MM_LD(P.size), phase, q, &cq, &aq, &bq);
#pragma omp task firstprivate(cq, aq, bq, n)
            matmul(cq, aq, bq, n / 2);
        }
#pragma omp taskwait
    }
}

/* ---- knapsack: "take" and "skip" as tasks, a shared best (CAS-max) --------------------- */

/* The instance workloads.h made. */
static const struct ks_item *const ks_items = bench_in.ks_items;
/* Relaxed: a monotone pruning hint; the final read follows every taskwait. */
static _Atomic long ks_best;

static void ks_improve(long v)
{
    long b = atomic_load_explicit(&ks_best, memory_order_relaxed);
    while (v > b && !atomic_compare_exchange_weak_explicit(&ks_best, &b, v, memory_order_relaxed,
                                                           memory_order_relaxed))
        ;
}

/* Returns the tasks made below this node. */
static uint64_t knapsack(long i, long c, long v)
{
    ks_improve(v);
    if (i == P.items ||
        ks_bound(ks_items, i, c, v) <= atomic_load_explicit(&ks_best, memory_order_relaxed))
        return 0;
    const struct ks_item *it = &ks_items[i];
    uint64_t rt = 0, rs = 0;
    /*
     * "skip" is spawned first so that a thread that defers the tasks and
     * takes its newest first (libgomp at any count, libomp at 2+) visits
     * "take" first, as the sequential program, libsf and oneTBB do. A team of
     * one under libomp runs each task as it is made, so it visits "skip"
     * first and makes several times the nodes: that is its schedule.
     */
#pragma omp task shared(rs) firstprivate(i, c, v)
    rs = 1 + knapsack(i + 1, c, v);
    if (it->weight <= c) {
#pragma omp task shared(rt) firstprivate(i, c, v, it)
        rt = 1 + knapsack(i + 1, c - it->weight, v + it->value);
    }
#pragma omp taskwait
    return rt + rs;
}

/* ---- pi: [lo, hi) halved down to single indices, both halves tasks ----------------------- */

/* left + right after the taskwait, the halving tree's order (classic.h). */
static double pi(long lo, long hi)
{
    if (hi - lo == 1)
        return pi_term(lo, P.n);
    long m = lo + (hi - lo) / 2;
    double l = 0, r = 0;
#pragma omp task shared(l) firstprivate(lo, m)
    l = pi(lo, m);
#pragma omp task shared(r) firstprivate(m, hi)
    r = pi(m, hi);
#pragma omp taskwait
    return l + r;
}

/* ---- the runs (workloads.h) ------------------------------------------------------------- */

/* Every run but pfor's: a team of P.threads, one of which runs the root
 * (`single`) while the others take the tasks it makes. */
static uint64_t in_team(uint64_t (*root)(void))
{
    uint64_t r = 0;
#pragma omp parallel num_threads(P.threads)
#pragma omp single
    r = root();
    return r;
}

static uint64_t fib_root(void) { return (uint64_t)fib(P.n); }
static uint64_t nqueens_root(void) { return nqueens(NQ_PACK(0, 0, 0, 0)); }
static uint64_t uts_root_run(void) { return uts(bench_in.uts_root); }

/* chain and tree: the root is a task too, as in the other programs. */
static uint64_t chain_root(void)
{
    long r = 0;
#pragma omp task shared(r)
    r = chain(1);
#pragma omp taskwait
    return (uint64_t)r;
}

static uint64_t tree_root(void)
{
    uint64_t r = 0;
#pragma omp task shared(r)
    r = tree(0);
#pragma omp taskwait
    return r;
}

static uint64_t cilksort_root(void) { return csort(bench_in.sort_a, bench_in.sort_tmp, P.size); }

static uint64_t matmul_root(void)
{
    matmul(bench_in.mm_c, bench_in.mm_a, bench_in.mm_b, P.size);
    return 0;
}

static uint64_t knapsack_root(void) { return knapsack(0, bench_in.ks_cap, 0); }
static uint64_t pi_root(void) { return pi_bits(pi(0, P.n)); }

static struct bench_out run_fib(void) { return bench_value(in_team(fib_root)); }
static struct bench_out run_tput(void) { return bench_value(in_team(tput)); }
static struct bench_out run_uneven(void) { return bench_value(in_team(uneven)); }
static struct bench_out run_nqueens(void) { return bench_value(in_team(nqueens_root)); }
static struct bench_out run_chain(void) { return bench_value(in_team(chain_root)); }
static struct bench_out run_tree(void) { return bench_value(in_team(tree_root)); }
static struct bench_out run_uts(void) { return bench_value(in_team(uts_root_run)); }
static struct bench_out run_matmul(void) { return bench_value(in_team(matmul_root)); }
static struct bench_out run_pi(void) { return bench_value(in_team(pi_root)); }

static struct bench_out run_cilksort(void)
{
    struct bench_out o = {0, in_team(cilksort_root)};
    return o;
}

static struct bench_out run_knapsack(void)
{
    atomic_store_explicit(&ks_best, 0, memory_order_relaxed);
    uint64_t tasks = in_team(knapsack_root);
    struct bench_out o = {(uint64_t)atomic_load_explicit(&ks_best, memory_order_relaxed), tasks};
    return o;
}

/* pfor: the whole team shares the loop (omp for), no single. */
static struct bench_out run_pfor(void)
{
    uint64_t *res = calloc((size_t)P.items, sizeof *res);
    if (!res)
        exit(3);
#pragma omp parallel num_threads(P.threads)
    if (P.part == 0) {
#pragma omp for schedule(dynamic, 1)
        for (long i = 0; i < P.items; i++) {
            bench_spin((uint64_t)(i + 1), bench_pfor_iters(&P, i));
            res[i] = (uint64_t)(i + 1);
        }
    } else {
#pragma omp for schedule(static)
        for (long i = 0; i < P.items; i++) {
            bench_spin((uint64_t)(i + 1), bench_pfor_iters(&P, i));
            res[i] = (uint64_t)(i + 1);
        }
    }
    uint64_t sum = 0;
    for (long i = 0; i < P.items; i++)
        sum += res[i];
    free(res);
    return bench_value(sum);
}

/* reduce: the team shares the loop (omp for, static), with OpenMP's
 * reduction - a scalar for the sum, an array section for the histogram.
 * Its order of additions is its own, not the tree's: the sum is checked
 * within a bound (workloads.h), the counts exactly. The grain is not used. */
static struct bench_out run_reduce(void)
{
    long n = P.size;
    if (P.shape == 0) {
        const double *x = bench_in.red_x;
        double s = 0;
        bench_in.red_order_free = 1;
#pragma omp parallel for num_threads(P.threads) schedule(static) reduction(+ : s)
        for (long i = 0; i < n; i++)
            s += x[i];
        return bench_value(bench_red_sum_value(s));
    }
    const uint32_t *k = bench_in.red_keys;
    static struct bench_hist h;
    uint64_t *bin = h.bin;
#pragma omp parallel for num_threads(P.threads) schedule(static) reduction(+ : bin[:BENCH_RED_BINS])
    for (long i = 0; i < n; i++)
        bin[k[i]]++;
    return bench_value(bench_red_hist_value(&h));
}

static const struct bench_run_entry runs[] = {
    {"fib", run_fib},         {"tput", run_tput},       {"uneven", run_uneven},
    {"pfor", run_pfor},       {"nqueens", run_nqueens}, {"chain", run_chain},
    {"tree", run_tree},       {"uts-t1", run_uts},      {"uts-t3", run_uts},
    {"cilksort", run_cilksort}, {"matmul", run_matmul}, {"knapsack", run_knapsack},
    {"pi", run_pi},           {"reduce", run_reduce},
};

int main(int argc, char **argv)
{
    bench_parse(argc, argv, &P);
    int T = P.threads;
    omp_set_dynamic(0);
    omp_set_num_threads(T);

    /* Warm up: start the team. */
    long warm = 0;
#pragma omp parallel num_threads(T)
    {
#pragma omp single
        warm = fib(20);
    }
    if (warm != (long)bench_fib_expect(20))
        return 2;
    int team = 0;
#pragma omp parallel num_threads(T)
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    if (team != T) {
        fprintf(stderr, "%s: asked for %d threads, got a team of %d\n", OMP_RUNTIME_NAME, T, team);
        return 3;
    }
    struct bench_result r = bench_run(argv[0], &P, runs, sizeof runs / sizeof runs[0]);
    return bench_report(OMP_RUNTIME_NAME, &P, r.seconds, r.tasks, r.got, r.want, "");
}
