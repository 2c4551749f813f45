/*
 * common.h - shared by every benchmark program of tools/bench (C and C++).
 *
 * Each program (bench_sf, bench_tbb, bench_gomp, bench_llomp, bench_seq) is
 * run as
 *
 *     PROGRAM WORKLOAD threads=N [key=value ...]
 *
 * runs WORKLOAD once, checks its result, and prints one line
 *
 *     RESULT<TAB>seconds=S<TAB>tasks=T<TAB>maxrss_kb=K<TAB>check=ok[<TAB>extra]
 *
 * where S is the wall time of the workload alone (the runtime is started and
 * warmed up before the clock starts), T the number of tasks it created and K
 * the process's peak RSS (getrusage ru_maxrss). A wrong result prints
 * check=FAIL and exits 2; bad arguments exit 64. workloads.h holds the table
 * of workloads (inputs, check, task count) and the driver that times one.
 *
 * Workloads and their keys (defaults are the full sizes):
 *   fib      n=32                    fib(n), one task per call, no cutoff
 *   tput     outer=10000 inner=100 iters=W
 *                                    outer tasks from the main thread, each
 *                                    submitting inner children and getting them
 *   uneven   items=200 short=S long_factor=5
 *                                    items of S spin iterations, every fifth
 *                                    long_factor times longer
 *   pfor     items=200 short=S long_factor=5 shape=0 part=0
 *                                    a parallel loop over items (each returns
 *                                    i + 1): shape 0 every fifth item long (the
 *                                    uneven batch), shape 1 the first tenth long
 *                                    (a skewed loop); part 0: sf_for, oneTBB
 *                                    auto_partitioner, omp schedule(dynamic,1);
 *                                    part 1: sf_for_range (grain chosen by
 *                                    libsf), simple_partitioner (grain 1),
 *                                    schedule(static)
 *   nqueens  n=13                    one task per valid placement
 *   chain    depth=10000 iters=W     a chain of nested gets depth deep
 *   tree     fanout=8 depth=6 iters=W  every node gets its fanout children;
 *                                    leaves at depth `depth` (root = 0)
 *   uts-t1   depth=10 seed=199 work=0
 *                                    UTS geometric tree (mean 4 children, none
 *                                    at depth `depth`), every node `work` spin
 *                                    iterations; see classic.h
 *   uts-t3   b0=4000 q_ppm=124875 seed=16 work=0
 *                                    UTS binomial tree (root b0 children, the
 *                                    others 8 with probability q_ppm / 10^6)
 *   cilksort size=10000000 seed=1    cilksort of `size` 32-bit ints
 *   matmul   size=1024 seed=1        recursive C += A B, size = 64 x 2^k
 *   knapsack items=33 seed=1         0/1 knapsack branch and bound (items <= 40)
 *   pi       n=100000000             the integral of 4 / (1 + x^2) over [0, 1)
 *                                    in n steps, [0, n) halved down to single
 *                                    indices, both halves of every split tasks
 *                                    (n <= 2^32 - 1)
 *   pipe     items=200000 stages=4 iters=1000
 *                                    a pipeline of `stages` program threads:
 *                                    stage 0 makes items futures of iters spin
 *                                    iterations, each later one gets a
 *                                    quarter of the previous stage's futures
 *                                    itself and wraps the others in tasks that
 *                                    get them (iters each), the main thread
 *                                    (the last stage) gets them in order
 *                                    (bench_sf, bench_seq only)
 *   latency  rounds=50 short=50000 long_factor=400  (threads=2)
 *                                    a get of a short task (short iterations)
 *                                    run by a pool worker while the getter's
 *                                    thread helps with a long one (long_factor
 *                                    x short): the long one computing or
 *                                    blocked in a get, the getter a task or
 *                                    (blocked) plain code (bench_sf only)
 *   reduce   size=10000000 grain=4096 shape=0
 *                                    a deterministic reduce over `size` indices
 *                                    in chunks of `grain`, joined as sf.h's
 *                                    balanced tree (workloads.h): shape 0 the
 *                                    sum of an array of doubles, shape 1 a
 *                                    histogram of an array of keys (256 bins)
 *   calib                            (bench_seq only) prints ns per spin iteration
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_UNUSED __attribute__((unused))

/* pipe: the most threads a pipeline may have, the main thread included. */
#define BENCH_PIPE_MAX_STAGES 16

/* Parameters of one run; every program parses the same set. */
struct bench_params {
    const char *workload;
    int threads;
    long n;           /* fib, nqueens; pi: steps (leaves) */
    long outer;       /* tput */
    long inner;       /* tput */
    long iters;       /* spin iterations of one tiny task (tput, chain, tree) */
    long items;       /* uneven */
    long short_iters; /* uneven: spin iterations of a short item */
    long long_factor; /* uneven: a long item is this many times a short one */
    long depth;       /* chain, tree */
    long fanout;      /* tree */
    long shape;       /* pfor: 0 uneven, 1 skewed */
    long part;        /* pfor: 0 dynamic, 1 static (see above) */
    long seed;        /* uts-t1, uts-t3, cilksort, matmul, knapsack */
    long b0;          /* uts-t3: children of the root */
    long q_ppm;       /* uts-t3: probability (ppm) that a node has 8 children */
    long work;        /* uts-t1, uts-t3: spin iterations per node */
    long size;        /* cilksort: elements; matmul: matrix side */
    long stages;      /* pipe: threads of the pipeline, the main thread included */
    long rounds;      /* latency: rounds of each variant */
    long grain;       /* reduce: indices per chunk */
};

/*
 * The unit of "real arithmetic": a dependent chain of 64-bit LCG steps. The
 * empty volatile asm makes x opaque at every step, so the compiler can neither
 * drop the loop nor compute it in closed form. About 1-1.5 ns per iteration on
 * current x86 (imul latency + add); run `bench_seq calib` to see.
 */
static inline uint64_t bench_spin(uint64_t x, long iters)
{
    for (long i = 0; i < iters; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

/* Sorts v[0 .. n) in increasing order: the latency programs take medians
 * and percentiles from it. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline void bench_sort_doubles(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
}

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * BENCH_START_NS in the environment (CLOCK_REALTIME nanoseconds): sleep
 * until then before the workload. tools/bench/run gives the two processes of
 * a pair run the same instant, so that their workloads run at once instead
 * of staggered by each process's start. Unset: no wait.
 */
static BENCH_UNUSED void bench_wait_start(void)
{
    const char *e = getenv("BENCH_START_NS");
    if (e == NULL || *e == '\0')
        return;
    char *end;
    errno = 0;
    unsigned long long ns = strtoull(e, &end, 10);
    if (errno != 0 || *end != '\0') {
        fprintf(stderr, "bench: BENCH_START_NS=%s is not a number of nanoseconds\n", e);
        exit(64);
    }
    struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static BENCH_UNUSED long bench_maxrss_kb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return ru.ru_maxrss;
}

static BENCH_UNUSED void bench_usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s fib|tput|uneven|pfor|nqueens|chain|tree|uts-t1|uts-t3|cilksort|matmul|"
            "knapsack|pi|pipe|latency|reduce threads=N [key=value...]\n"
            "keys: n outer inner iters items short long_factor depth fanout shape part seed b0 "
            "q_ppm work size stages rounds grain\n",
            prog);
    exit(64);
}

static BENCH_UNUSED int bench_parse(int argc, char **argv, struct bench_params *p)
{
    memset(p, 0, sizeof *p);
    p->threads = 1;
    p->n = -1;
    p->outer = 10000;
    p->inner = 100;
    p->iters = -1;
    p->items = -1;
    p->short_iters = -1;
    p->long_factor = -1;
    p->depth = -1;
    p->fanout = 8;
    p->seed = -1;
    p->b0 = 4000;
    p->q_ppm = 124875;
    p->work = 0;
    p->size = -1;
    p->stages = 4;
    p->rounds = 50;
    p->grain = 4096;
    if (argc < 2)
        bench_usage(argv[0]);
    p->workload = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq)
            bench_usage(argv[0]);
        size_t klen = (size_t)(eq - argv[i]);
        char *end;
        errno = 0;
        long v = strtol(eq + 1, &end, 10);
        if (errno || *end || end == eq + 1 || v < 0)
            bench_usage(argv[0]);
#define BENCH_KEY(name, field)                                                   \
    if (klen == strlen(name) && strncmp(argv[i], name, klen) == 0) {             \
        p->field = v;                                                            \
        continue;                                                                \
    }
        if (klen == 7 && strncmp(argv[i], "threads", 7) == 0) {
            if (v < 1 || v > 1024)
                bench_usage(argv[0]);
            p->threads = (int)v;
            continue;
        }
        BENCH_KEY("n", n)
        BENCH_KEY("outer", outer)
        BENCH_KEY("inner", inner)
        BENCH_KEY("iters", iters)
        BENCH_KEY("items", items)
        BENCH_KEY("short", short_iters)
        BENCH_KEY("long_factor", long_factor)
        BENCH_KEY("depth", depth)
        BENCH_KEY("fanout", fanout)
        BENCH_KEY("shape", shape)
        BENCH_KEY("part", part)
        BENCH_KEY("seed", seed)
        BENCH_KEY("b0", b0)
        BENCH_KEY("q_ppm", q_ppm)
        BENCH_KEY("work", work)
        BENCH_KEY("size", size)
        BENCH_KEY("stages", stages)
        BENCH_KEY("rounds", rounds)
        BENCH_KEY("grain", grain)
#undef BENCH_KEY
        bench_usage(argv[0]);
    }
    if (p->n < 0)
        p->n = strcmp(p->workload, "nqueens") == 0 ? 13
               : strcmp(p->workload, "pi") == 0    ? 100000000
                                                   : 32;
    const char *w = p->workload;
    if (p->depth < 0)
        p->depth = strcmp(w, "chain") == 0 ? 10000 : strcmp(w, "uts-t1") == 0 ? 10 : 6;
    if (p->items < 0)
        p->items = strcmp(w, "knapsack") == 0 ? 33 : strcmp(w, "pipe") == 0 ? 200000 : 200;
    if (p->iters < 0)
        p->iters = strcmp(w, "pipe") == 0 ? 1000 : 200;
    if (p->short_iters < 0)
        p->short_iters = strcmp(w, "latency") == 0 ? 50000 : 700000;
    if (p->long_factor < 0)
        p->long_factor = strcmp(w, "latency") == 0 ? 400 : 5;
    if (p->seed < 0)
        p->seed = strcmp(w, "uts-t1") == 0 ? 199 : strcmp(w, "uts-t3") == 0 ? 16 : 1;
    if (p->size < 0)
        p->size = strcmp(w, "matmul") == 0 ? 1024 : 10000000;
    /* uts-t1 keeps the depth in 8 bits of a node (classic.h UTS_NODE). */
    if (strcmp(w, "uts-t1") == 0 && p->depth > 250)
        bench_usage(argv[0]);
    if (strcmp(w, "uts-t3") == 0 && (p->b0 < 1 || p->q_ppm > 1000000))
        bench_usage(argv[0]);
    if (strcmp(w, "knapsack") == 0 && (p->items < 1 || p->items > 40))
        bench_usage(argv[0]);
    if (strcmp(w, "reduce") == 0 && (p->grain < 1 || p->size < 1 || p->shape > 1))
        bench_usage(argv[0]);
    if (strcmp(w, "cilksort") == 0 && p->size < 1)
        bench_usage(argv[0]);
    if (strcmp(w, "matmul") == 0) {
        long m = p->size;
        while (m > 64 && m % 2 == 0)
            m /= 2;
        if (m != 64 || p->size > 16384) /* 64 x 2^k: the quadrants halve down to the base */
            bench_usage(argv[0]);
    }
    if (strcmp(p->workload, "nqueens") == 0 && (p->n < 1 || p->n > 16))
        bench_usage(argv[0]);
    if (strcmp(p->workload, "fib") == 0 && p->n > 80)
        bench_usage(argv[0]);
    /* pi: a range [lo, hi) is one word, two 32-bit halves (classic.h PI_RANGE). */
    if (strcmp(p->workload, "pi") == 0 && (p->n < 1 || p->n > 0xffffffffL))
        bench_usage(argv[0]);
    if (strcmp(p->workload, "tree") == 0 && (p->fanout < 1 || p->fanout > 64))
        bench_usage(argv[0]);
    if (strcmp(p->workload, "chain") == 0 && p->depth < 1)
        bench_usage(argv[0]);
    if (strcmp(w, "pipe") == 0 && (p->stages < 2 || p->stages > BENCH_PIPE_MAX_STAGES))
        bench_usage(argv[0]);
    /* latency: one pool worker runs the short task; a second would take the long one. */
    if (strcmp(w, "latency") == 0 && (p->threads != 2 || p->rounds < 1))
        bench_usage(argv[0]);
    return 0;
}

/* ---- expected results ---------------------------------------------------- */

static BENCH_UNUSED uint64_t bench_fib_expect(long n)
{
    uint64_t a = 0, b = 1;
    for (long i = 0; i < n; i++) {
        uint64_t t = a + b;
        a = b;
        b = t;
    }
    return a;
}

/* Tasks of fib(n) with one task per call n >= 2: fib(n + 1) - 1. */
static BENCH_UNUSED uint64_t bench_fib_tasks(long n)
{
    return bench_fib_expect(n + 1) - 1;
}

/* Child j of parent i returns i * inner + j + 1, so the total is N(N+1)/2. */
static BENCH_UNUSED uint64_t bench_tput_expect(long outer, long inner)
{
    uint64_t n = (uint64_t)outer * (uint64_t)inner;
    return n * (n + 1) / 2;
}

/* Item i returns i + 1. */
static BENCH_UNUSED uint64_t bench_uneven_expect(long items)
{
    return (uint64_t)items * (uint64_t)(items + 1) / 2;
}

static BENCH_UNUSED long bench_uneven_iters(const struct bench_params *p, long i)
{
    return i % 5 == 0 ? p->short_iters * p->long_factor : p->short_iters;
}

/* pfor: item i's spin iterations. */
static BENCH_UNUSED long bench_pfor_iters(const struct bench_params *p, long i)
{
    if (p->shape == 0)
        return bench_uneven_iters(p, i);
    return i < p->items / 10 ? p->short_iters * p->long_factor : p->short_iters;
}

static BENCH_UNUSED uint64_t bench_nqueens_expect(long n)
{
    static const uint64_t known[17] = {0,     1,      0,       0,        2,        10,
                                       4,     40,     92,      352,      724,      2680,
                                       14200, 73712,  365596,  2279184,  14772512};
    return known[n];
}

/* Nodes of a tree of the given fanout with leaves at depth `depth`. */
static BENCH_UNUSED uint64_t bench_tree_nodes(long fanout, long depth)
{
    uint64_t total = 0, level = 1;
    for (long d = 0; d <= depth; d++) {
        total += level;
        level *= (uint64_t)fanout;
    }
    return total;
}

/*
 * pipe: item i leaves stage 0 as bench_pipe_first(i), and every later stage
 * but the last (the main thread, which checks) passes on bench_pipe_next of
 * what it got: one LCG step, a bijection, so items that come out swapped or
 * skip a stage show. Each stage but the last also spins `iters` on the
 * value, its work.
 */
static inline uint64_t bench_pipe_first(long i)
{
    return (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL;
}

static inline uint64_t bench_pipe_next(uint64_t v)
{
    return v * 6364136223846793005ULL + 1442695040888963407ULL;
}

static BENCH_UNUSED uint64_t bench_pipe_expect(long i, long stages)
{
    uint64_t v = bench_pipe_first(i);
    for (long k = 1; k < stages - 1; k++)
        v = bench_pipe_next(v);
    return v;
}

/*
 * n-queens state packed in one 64-bit word so a task needs no allocation:
 * row (8 bits) | cols (16) | diag1 (16) | diag2 (16). Boards up to 16.
 */
#define NQ_PACK(row, cols, d1, d2)                                               \
    ((uint64_t)(row) | ((uint64_t)(cols) << 8) | ((uint64_t)(d1) << 24) |         \
     ((uint64_t)(d2) << 40))
#define NQ_ROW(s) ((unsigned)((s)&0xff))
#define NQ_COLS(s) ((unsigned)(((s) >> 8) & 0xffff))
#define NQ_D1(s) ((unsigned)(((s) >> 24) & 0xffff))
#define NQ_D2(s) ((unsigned)(((s) >> 40) & 0xffff))

/* A node's result: solutions in the low 32 bits, tasks (placements) above. */
#define NQ_RES(sol, nodes) ((uint64_t)(sol) | ((uint64_t)(nodes) << 32))
#define NQ_SOL(r) ((r)&0xffffffffULL)
#define NQ_NODES(r) ((r) >> 32)

/* ---- reporting ------------------------------------------------------------ */

static BENCH_UNUSED int bench_report(const char *runtime, const struct bench_params *p,
                                     double seconds, uint64_t tasks, uint64_t got,
                                     uint64_t want, const char *extra)
{
    int ok = got == want;
    printf("RESULT\truntime=%s\tworkload=%s\tthreads=%d\tseconds=%.6f\ttasks=%llu\t"
           "maxrss_kb=%ld\tcheck=%s",
           runtime, p->workload, p->threads, seconds, (unsigned long long)tasks,
           bench_maxrss_kb(), ok ? "ok" : "FAIL");
    if (!ok)
        printf("\tgot=%llu\twant=%llu", (unsigned long long)got,
               (unsigned long long)want);
    if (extra && *extra)
        printf("\t%s", extra);
    printf("\n");
    fflush(stdout);
    if (!ok) {
        fprintf(stderr, "%s %s: wrong result %llu, expected %llu\n", runtime,
                p->workload, (unsigned long long)got, (unsigned long long)want);
        return 2;
    }
    return 0;
}

#endif /* BENCH_COMMON_H */
