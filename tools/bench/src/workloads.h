/*
 * workloads.h - the one table of workloads every benchmark program runs
 * (C and C++), and the driver that runs one of them.
 *
 * A program supplies only its runtime's run functions, as a table of
 * { name, run } (a workload it does not run is not in it); the table here
 * gives each workload the rest: the inputs made before the clock starts,
 * the check of the exact result and the count of the tasks it makes, the
 * same for every runtime. bench_run joins the two by name and times the
 * run alone. A program starts and warms up its runtime before bench_run and
 * reports after it (bench_report, common.h).
 */
#ifndef BENCH_WORKLOADS_H
#define BENCH_WORKLOADS_H

#include "common.h"

#include "classic.h"

/* What a run gives back. */
struct bench_out {
    uint64_t value; /* its answer, as the workload's check reads it */
    uint64_t tasks; /* the tasks it made, where only the run knows (cilksort,
                       knapsack); unused by the other workloads */
};

typedef struct bench_out bench_run_fn(void);

/* A run whose answer is one value. */
static inline struct bench_out bench_value(uint64_t value)
{
    struct bench_out o = {value, 0};
    return o;
}

/* A program's run function for one workload. */
struct bench_run_entry {
    const char *name;
    bench_run_fn *run;
};

/*
 * The inputs of the classic workloads, made by their prepare before the
 * clock starts and read by every program's run functions: the tree's kind
 * and root, the arrays to sort, the matrices, the knapsack instance.
 */
static struct {
    int uts_kind; /* 1 or 3 */
    uint64_t uts_root;
    sort_elem *sort_a, *sort_tmp;
    uint64_t sort_want;
    double *mm_a, *mm_b, *mm_c;
    struct ks_item ks_items[KS_MAX_ITEMS];
    long ks_cap;
    double *red_x;       /* reduce, shape 0: the values summed */
    uint32_t *red_keys;  /* reduce, shape 1: the keys counted, < BENCH_RED_BINS */
    int red_order_free;  /* reduce: set by a run that sums in an order of its own */
} bench_in;

/* The measured run: its time, the answer and the one expected, the tasks. */
struct bench_result {
    double seconds;
    uint64_t got, want, tasks;
};

struct bench_workload {
    const char *name;
    /* Makes the inputs in bench_in; NULL when the parameters are all. */
    void (*prepare)(const struct bench_params *p);
    /* Sets r->got and r->want from the run's output, freeing the inputs. */
    void (*check)(const struct bench_params *p, const struct bench_out *o,
                  struct bench_result *r);
    /* The tasks the run made. */
    uint64_t (*tasks)(const struct bench_params *p, const struct bench_out *o);
};

/* ---- checks and task counts -------------------------------------------- */

/* The answer is the run's value, checked against want (the usual case). */
#define BENCH_CHECK(name, want_expr)                                                       \
    static void name(const struct bench_params *p, const struct bench_out *o,             \
                     struct bench_result *r)                                              \
    {                                                                                     \
        (void)p;                                                                          \
        r->got = o->value;                                                                \
        r->want = (want_expr);                                                            \
    }
#define BENCH_TASKS(name, expr)                                                            \
    static uint64_t name(const struct bench_params *p, const struct bench_out *o)         \
    {                                                                                     \
        (void)p;                                                                          \
        (void)o;                                                                          \
        return (expr);                                                                    \
    }

BENCH_CHECK(check_fib, bench_fib_expect(p->n))
BENCH_TASKS(tasks_fib, bench_fib_tasks(p->n))

/* Child j of parent i returns i * inner + j + 1; a parent per outer. */
BENCH_CHECK(check_tput, bench_tput_expect(p->outer, p->inner))
BENCH_TASKS(tasks_tput, (uint64_t)p->outer * (uint64_t)(p->inner + 1))

/* uneven and pfor: item i returns i + 1. A loop's tasks are its items, as
 * every runtime counts them (bench_sf checks sf_stats otherwise). */
BENCH_CHECK(check_items, bench_uneven_expect(p->items))
BENCH_TASKS(tasks_items, (uint64_t)p->items)

/* nqueens: the value is the root's NQ_RES; every placement is a task, the
 * empty board is none. */
static void check_nqueens(const struct bench_params *p, const struct bench_out *o,
                          struct bench_result *r)
{
    r->got = NQ_SOL(o->value);
    r->want = bench_nqueens_expect(p->n);
}
BENCH_TASKS(tasks_nqueens, NQ_NODES(o->value) - 1)

BENCH_CHECK(check_chain, (uint64_t)p->depth)
BENCH_TASKS(tasks_chain, (uint64_t)p->depth)

BENCH_CHECK(check_tree, bench_tree_nodes(p->fanout, p->depth))
BENCH_TASKS(tasks_tree, bench_tree_nodes(p->fanout, p->depth))

/* UTS: the value is the tree's node count; every node but the root is a task. */
static void prepare_uts(const struct bench_params *p)
{
    bench_in.uts_kind = p->workload[5] - '0';
    bench_in.uts_root = UTS_NODE(uts_root((uint64_t)p->seed), 0);
}
BENCH_CHECK(check_uts, uts_expect(bench_in.uts_kind, p->b0, p->q_ppm, p->depth,
                                  (uint64_t)p->seed))
BENCH_TASKS(tasks_uts, o->value - 1)

/* cilksort: the answer is the sorted array's fingerprint (sort_check). */
static void prepare_cilksort(const struct bench_params *p)
{
    sort_setup(p->size, (uint64_t)p->seed, &bench_in.sort_a, &bench_in.sort_tmp,
               &bench_in.sort_want);
}
static void check_cilksort(const struct bench_params *p, const struct bench_out *o,
                           struct bench_result *r)
{
    (void)o;
    r->got = sort_check(bench_in.sort_a, p->size);
    r->want = bench_in.sort_want;
    free(bench_in.sort_a);
    free(bench_in.sort_tmp);
}
BENCH_TASKS(tasks_run, o->tasks)

/* matmul: C += A B, checked as classic.h's mm_check says. */
static void prepare_matmul(const struct bench_params *p)
{
    mm_setup(p->size, (uint64_t)p->seed, &bench_in.mm_a, &bench_in.mm_b, &bench_in.mm_c);
}
static void check_matmul(const struct bench_params *p, const struct bench_out *o,
                         struct bench_result *r)
{
    (void)o;
    mm_check(bench_in.mm_a, bench_in.mm_b, bench_in.mm_c, p->size, &r->got, &r->want);
    mm_free(bench_in.mm_a);
}
BENCH_TASKS(tasks_matmul, mm_tasks(p->size))

/* knapsack: the value is the best found; the tasks depend on the schedule. */
static void prepare_knapsack(const struct bench_params *p)
{
    bench_in.ks_cap = ks_instance(bench_in.ks_items, p->items, (uint64_t)p->seed);
}
BENCH_CHECK(check_knapsack, (uint64_t)ks_expect(bench_in.ks_items, p->items, bench_in.ks_cap))

/* pi: the value is the sum's bits, exactly the halving tree's (classic.h),
 * which must itself be pi to within the midpoint rule's error; every node
 * but the root is a task, both halves of every split. */
static void check_pi(const struct bench_params *p, const struct bench_out *o,
                     struct bench_result *r)
{
    double want = pi_expect(p->n);
    r->got = o->value;
    r->want = pi_bits(want);
    if (!pi_plausible(want, p->n))
        r->want = ~r->want;
}
BENCH_TASKS(tasks_pi, 2 * (uint64_t)p->n - 2)

/* pipe: the value is the items accounted for; a task per item and stage,
 * the last stage (the main thread's gets) but none. */
BENCH_CHECK(check_pipe, (uint64_t)p->items)
BENCH_TASKS(tasks_pipe, (uint64_t)p->items * (uint64_t)(p->stages - 1))

/* latency: the value is the gets that saw the right value, three a round.
 * Each round makes S, the submitting task and L; G in busy and blocked, B
 * in blocked and blocked-plain (bench_sf.c). */
BENCH_CHECK(check_latency, (uint64_t)(3 * p->rounds))
BENCH_TASKS(tasks_latency, (uint64_t)p->rounds * (4 + 5 + 4))

/*
 * reduce: chunk c of [0, size) is [c * grain, min(size, (c + 1) * grain));
 * each chunk's accumulator starts at the identity (0, or empty bins) and its
 * leaf adds the chunk in index order; accumulators are joined as sf.h's
 * balanced tree R(c0, c1) = join(R(c0, m), R(m, c1)), m = c0 + (c1 - c0) / 2,
 * left operand first - the tree of sf_reduce, and of oneTBB's
 * parallel_deterministic_reduce over blocked_range(0, chunks, 1) (which
 * splits a range at the same middle). The leaves, the tree computed
 * sequentially (bench_seq's run, and the check's reference) and the check
 * are here, shared by every program.
 */
#define BENCH_RED_BINS 256

struct bench_hist {
    uint64_t bin[BENCH_RED_BINS];
};

static inline long bench_red_chunks(const struct bench_params *p)
{
    return (p->size + p->grain - 1) / p->grain;
}

/* Chunk c's [*lo, *hi). */
static inline void bench_red_chunk(const struct bench_params *p, long c, long *lo, long *hi)
{
    *lo = c * p->grain;
    *hi = p->size - *lo > p->grain ? *lo + p->grain : p->size;
}

/* The leaves: add [lo, hi) to an accumulator. */
static inline double bench_red_sum(long lo, long hi, double s)
{
    const double *x = bench_in.red_x;
    for (long i = lo; i < hi; i++)
        s += x[i];
    return s;
}

static inline void bench_red_count(long lo, long hi, struct bench_hist *h)
{
    const uint32_t *k = bench_in.red_keys;
    for (long i = lo; i < hi; i++)
        h->bin[k[i]]++;
}

static inline void bench_red_hist_join(struct bench_hist *a, const struct bench_hist *b)
{
    for (int k = 0; k < BENCH_RED_BINS; k++)
        a->bin[k] += b->bin[k];
}

/* The tree, sequentially. */
static BENCH_UNUSED double bench_red_sum_tree(const struct bench_params *p, long c0, long c1)
{
    if (c1 - c0 == 1) {
        long lo, hi;
        bench_red_chunk(p, c0, &lo, &hi);
        return bench_red_sum(lo, hi, 0.0);
    }
    long m = c0 + (c1 - c0) / 2;
    double l = bench_red_sum_tree(p, c0, m);
    return l + bench_red_sum_tree(p, m, c1);
}

static BENCH_UNUSED void bench_red_hist_tree(const struct bench_params *p, long c0, long c1,
                                             struct bench_hist *out)
{
    if (c1 - c0 == 1) {
        long lo, hi;
        memset(out, 0, sizeof *out);
        bench_red_chunk(p, c0, &lo, &hi);
        bench_red_count(lo, hi, out);
        return;
    }
    long m = c0 + (c1 - c0) / 2;
    struct bench_hist r;
    bench_red_hist_tree(p, c0, m, out);
    bench_red_hist_tree(p, m, c1, &r);
    bench_red_hist_join(out, &r);
}

/* A run's answer: the sum's bits, or a fingerprint of the bins. */
static inline uint64_t bench_red_sum_value(double s)
{
    uint64_t v;
    memcpy(&v, &s, sizeof v);
    return v;
}

static inline uint64_t bench_red_hist_value(const struct bench_hist *h)
{
    uint64_t v = 1469598103934665603ULL;
    for (int k = 0; k < BENCH_RED_BINS; k++)
        v = (v ^ h->bin[k]) * 1099511628211ULL;
    return v;
}

/* Values of magnitudes 10^-6 .. 10^6 (so the order of additions shows in
 * the bits), and keys spread over the bins; both from a hash of i. */
static void prepare_reduce(const struct bench_params *p)
{
    static const double scale[8] = {1e-6, 1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6, 0.5};
    if (p->shape == 0)
        bench_in.red_x = (double *)malloc((size_t)p->size * sizeof(double));
    else
        bench_in.red_keys = (uint32_t *)malloc((size_t)p->size * sizeof(uint32_t));
    if (bench_in.red_x == NULL && bench_in.red_keys == NULL)
        exit(3);
    for (long i = 0; i < p->size; i++) {
        uint64_t h = ((uint64_t)i + 1) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
        if (p->shape == 0)
            bench_in.red_x[i] = (double)(int64_t)((h >> 12) & 0xfffff) * scale[h & 7] *
                                ((h >> 40) & 1 ? 1.0 : -1.0);
        else
            bench_in.red_keys[i] = (uint32_t)((h >> 20) % BENCH_RED_BINS);
    }
}

/* Exact against the tree computed here, for every program that sums in the
 * tree's order; a run that sums in an order of its own (red_order_free:
 * OpenMP's reduction) passes within the bound that holds for any order,
 * (n - 1) u sum |x_i| (u = 2^-53), and shows as the tree's value. */
static void check_reduce(const struct bench_params *p, const struct bench_out *o,
                         struct bench_result *r)
{
    long chunks = bench_red_chunks(p);
    r->got = o->value;
    if (p->shape == 0) {
        double want = bench_red_sum_tree(p, 0, chunks), got, abs = 0;
        r->want = bench_red_sum_value(want);
        memcpy(&got, &o->value, sizeof got);
        for (long i = 0; i < p->size; i++)
            abs += bench_in.red_x[i] < 0 ? -bench_in.red_x[i] : bench_in.red_x[i];
        double err = got > want ? got - want : want - got;
        if (bench_in.red_order_free && err <= (double)(p->size - 1) * 0x1p-53 * abs * 1.01)
            r->got = r->want;
        free(bench_in.red_x);
    } else {
        struct bench_hist *h = (struct bench_hist *)malloc(sizeof *h);
        if (h == NULL)
            exit(3);
        bench_red_hist_tree(p, 0, chunks, h);
        r->want = bench_red_hist_value(h);
        free(h);
        free(bench_in.red_keys);
    }
}
/* A chunk is a task, as a loop's items are. */
BENCH_TASKS(tasks_reduce, (uint64_t)bench_red_chunks(p))

#undef BENCH_CHECK
#undef BENCH_TASKS

static const struct bench_workload bench_workloads[] = {
    {"fib", NULL, check_fib, tasks_fib},
    {"tput", NULL, check_tput, tasks_tput},
    {"uneven", NULL, check_items, tasks_items},
    {"pfor", NULL, check_items, tasks_items},
    {"nqueens", NULL, check_nqueens, tasks_nqueens},
    {"chain", NULL, check_chain, tasks_chain},
    {"tree", NULL, check_tree, tasks_tree},
    {"uts-t1", prepare_uts, check_uts, tasks_uts},
    {"uts-t3", prepare_uts, check_uts, tasks_uts},
    {"cilksort", prepare_cilksort, check_cilksort, tasks_run},
    {"matmul", prepare_matmul, check_matmul, tasks_matmul},
    {"knapsack", prepare_knapsack, check_knapsack, tasks_run},
    {"pi", NULL, check_pi, tasks_pi},
    {"pipe", NULL, check_pipe, tasks_pipe},
    {"latency", NULL, check_latency, tasks_latency},
    {"reduce", prepare_reduce, check_reduce, tasks_reduce},
};

/*
 * Runs p->workload with the program's run function from runs[0..n): makes
 * its inputs, times the run alone (CLOCK_MONOTONIC), checks it. A workload
 * this program does not run is a usage error (exit 64).
 */
static BENCH_UNUSED struct bench_result bench_run(const char *prog, const struct bench_params *p,
                                                  const struct bench_run_entry *runs, size_t n)
{
    const struct bench_workload *w = NULL;
    for (size_t i = 0; i < sizeof bench_workloads / sizeof bench_workloads[0]; i++)
        if (strcmp(bench_workloads[i].name, p->workload) == 0)
            w = &bench_workloads[i];
    bench_run_fn *run = NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(runs[i].name, p->workload) == 0)
            run = runs[i].run;
    if (w == NULL || run == NULL)
        bench_usage(prog);
    if (w->prepare)
        w->prepare(p);
    struct bench_result r;
    double t0 = bench_now();
    struct bench_out o = run();
    r.seconds = bench_now() - t0;
    w->check(p, &o, &r);
    r.tasks = w->tasks(p, &o);
    return r;
}

#endif /* BENCH_WORKLOADS_H */
