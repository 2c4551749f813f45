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

/* pipe: the value is the items accounted for; a task per item and stage,
 * the last stage (the main thread's gets) but none. */
BENCH_CHECK(check_pipe, (uint64_t)p->items)
BENCH_TASKS(tasks_pipe, (uint64_t)p->items * (uint64_t)(p->stages - 1))

/* latency: the value is the gets that saw the right value, three a round.
 * Each round makes S, the submitting task and L; G in busy and blocked, B
 * in blocked and blocked-plain (bench_sf.c). */
BENCH_CHECK(check_latency, (uint64_t)(3 * p->rounds))
BENCH_TASKS(tasks_latency, (uint64_t)p->rounds * (4 + 5 + 4))

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
    {"pipe", NULL, check_pipe, tasks_pipe},
    {"latency", NULL, check_latency, tasks_latency},
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
