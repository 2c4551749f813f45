/*
 * bench_sf.c - the workloads on libsf: sf_do() queues, sf_get() runs/gets,
 * sf_release() drops. Threads: sf_config.threads = N (N - 1 pool workers plus
 * the calling thread). See common.h for the command line.
 */
#include "common.h"

#include <stdbool.h>

#include <stdint.h>

#include "sf.h"

static struct bench_params P;

static void die_do(void)
{
    fprintf(stderr, "libsf: sf_do failed: %s\n", strerror(errno));
    exit(3);
}

static sf_future *do_or_die(void *(*fn)(void *), void *arg)
{
    sf_future *f = sf_do(fn, arg);
    if (!f)
        die_do();
    return f;
}

/* ---- fib: a = sf_do(fib, n-1); b = fib(n-2); r = get(a) + b ---------------- */

__attribute__((noinline)) static void *fib(void *arg)
{
    long n = (long)(intptr_t)arg;
    if (n < 2)
        return (void *)(intptr_t)n;
    sf_future *a = do_or_die(fib, (void *)(intptr_t)(n - 1));
    long b = (long)(intptr_t)fib((void *)(intptr_t)(n - 2));
    long r = (long)(intptr_t)sf_get(a) + b;
    sf_release(a);
    return (void *)(intptr_t)r;
}

/* ---- tput: outer parents from the main thread, inner children each ------- */

static void *tput_child(void *arg)
{
    bench_spin((uint64_t)(uintptr_t)arg, P.iters);
    return arg;
}

static void *tput_parent(void *arg)
{
    long i = (long)(intptr_t)arg;
    sf_future **c = malloc((size_t)P.inner * sizeof *c);
    if (!c)
        exit(3);
    for (long j = 0; j < P.inner; j++)
        c[j] = do_or_die(tput_child, (void *)(uintptr_t)(i * P.inner + j + 1));
    uint64_t sum = 0;
    for (long j = 0; j < P.inner; j++) {
        sum += (uint64_t)(uintptr_t)sf_get(c[j]);
        sf_release(c[j]);
    }
    free(c);
    return (void *)(uintptr_t)sum;
}

static uint64_t run_tput(void)
{
    sf_future **f = malloc((size_t)P.outer * sizeof *f);
    if (!f)
        exit(3);
    for (long i = 0; i < P.outer; i++)
        f[i] = do_or_die(tput_parent, (void *)(intptr_t)i);
    uint64_t sum = 0;
    for (long i = 0; i < P.outer; i++) {
        sum += (uint64_t)(uintptr_t)sf_get(f[i]);
        sf_release(f[i]);
    }
    free(f);
    return sum;
}

/* ---- uneven: items queued from the main thread, then got in order -------- */

static void *uneven_item(void *arg)
{
    long i = (long)(intptr_t)arg;
    bench_spin((uint64_t)(i + 1), bench_uneven_iters(&P, i));
    return (void *)(intptr_t)(i + 1);
}

static uint64_t run_uneven(void)
{
    sf_future **f = malloc((size_t)P.items * sizeof *f);
    if (!f)
        exit(3);
    for (long i = 0; i < P.items; i++)
        f[i] = do_or_die(uneven_item, (void *)(intptr_t)i);
    uint64_t sum = 0;
    for (long i = 0; i < P.items; i++) {
        sum += (uint64_t)(uintptr_t)sf_get(f[i]);
        sf_release(f[i]);
    }
    free(f);
    return sum;
}

/* ---- pfor: sf_for (part 0) or sf_for_range (part 1) ----------------------- */

static void pfor_item(long i, void *ctx)
{
    uint64_t *res = ctx;
    bench_spin((uint64_t)(i + 1), bench_pfor_iters(&P, i));
    res[i] = (uint64_t)(i + 1);
}

static void pfor_range(long lo, long hi, void *ctx)
{
    for (long i = lo; i < hi; i++)
        pfor_item(i, ctx);
}

static uint64_t run_pfor(void)
{
    uint64_t *res = calloc((size_t)P.items, sizeof *res);
    if (!res)
        exit(3);
    int rc = P.part == 0 ? sf_for(0, P.items, pfor_item, res)
                         : sf_for_range(0, P.items, 0, pfor_range, res);
    if (rc != 0) {
        fprintf(stderr, "libsf: sf_for failed: %s\n", strerror(errno));
        exit(3);
    }
    uint64_t sum = 0;
    for (long i = 0; i < P.items; i++)
        sum += res[i];
    free(res);
    return sum;
}

/* ---- nqueens: one task per valid placement -------------------------------- */

static void *nqueens(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg;
    unsigned n = (unsigned)P.n;
    unsigned row = NQ_ROW(s), cols = NQ_COLS(s), d1 = NQ_D1(s), d2 = NQ_D2(s);
    if (row == n)
        return (void *)(uintptr_t)NQ_RES(1, 1);
    unsigned mask = (1u << n) - 1;
    unsigned avail = ~(cols | d1 | d2) & mask;
    sf_future *c[16];
    int k = 0;
    while (avail) {
        unsigned bit = avail & -avail;
        avail &= avail - 1;
        c[k++] = do_or_die(nqueens, (void *)(uintptr_t)NQ_PACK(row + 1, cols | bit,
                                                               ((d1 | bit) << 1) & mask,
                                                               (d2 | bit) >> 1));
    }
    uint64_t sol = 0, nodes = 1;
    for (int i = 0; i < k; i++) {
        uint64_t r = (uint64_t)(uintptr_t)sf_get(c[i]);
        sf_release(c[i]);
        sol += NQ_SOL(r);
        nodes += NQ_NODES(r);
    }
    return (void *)(uintptr_t)NQ_RES(sol, nodes);
}

/* ---- meh: a chain of nested gets, and a tree ------------------------------ */

static void *chain(void *arg)
{
    long d = (long)(intptr_t)arg;
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return (void *)1;
    sf_future *f = do_or_die(chain, (void *)(intptr_t)(d + 1));
    long r = (long)(intptr_t)sf_get(f);
    sf_release(f);
    return (void *)(intptr_t)(r + 1);
}

static void *tree(void *arg)
{
    long d = (long)(intptr_t)arg;
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return (void *)1;
    sf_future *c[64];
    for (long i = 0; i < P.fanout; i++)
        c[i] = do_or_die(tree, (void *)(intptr_t)(d + 1));
    uint64_t sum = 1;
    for (long i = 0; i < P.fanout; i++) {
        sum += (uint64_t)(uintptr_t)sf_get(c[i]);
        sf_release(c[i]);
    }
    return (void *)(uintptr_t)sum;
}

static uint64_t get_release(sf_future *f)
{
    uint64_t r = (uint64_t)(uintptr_t)sf_get(f);
    sf_release(f);
    return r;
}

int main(int argc, char **argv)
{
    bench_parse(argc, argv, &P);
    const char *w = P.workload;

    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = P.threads;
    cfg.trace = SF_TRACE_FROM_ENV; /* the harness sets SF_TRACE=0; set it to 1 to trace */
    cfg.stack_size = (size_t)64 << 20; /* same worker stacks as the peers */
    if (sf_init(&cfg) != 0) {
        fprintf(stderr, "libsf: sf_init failed: %s\n", strerror(errno));
        return 3;
    }
    /* Warm up: let every worker start and touch its stack. */
    if ((uint64_t)(uintptr_t)get_release(do_or_die(fib, (void *)(intptr_t)20)) !=
        bench_fib_expect(20)) {
        fprintf(stderr, "libsf: warm-up fib(20) is wrong\n");
        return 2;
    }
    sf_stats s0, s1;
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    sf_stats_read(&s0);

    double t0, t1;
    uint64_t got, want, tasks;
    bool loop = false;
    if (strcmp(w, "fib") == 0) {
        t0 = bench_now();
        got = (uint64_t)(intptr_t)fib((void *)(intptr_t)P.n);
        t1 = bench_now();
        want = bench_fib_expect(P.n);
        tasks = bench_fib_tasks(P.n);
    } else if (strcmp(w, "tput") == 0) {
        t0 = bench_now();
        got = run_tput();
        t1 = bench_now();
        want = bench_tput_expect(P.outer, P.inner);
        tasks = (uint64_t)P.outer * (uint64_t)(P.inner + 1);
    } else if (strcmp(w, "uneven") == 0) {
        t0 = bench_now();
        got = run_uneven();
        t1 = bench_now();
        want = bench_uneven_expect(P.items);
        tasks = (uint64_t)P.items;
    } else if (strcmp(w, "pfor") == 0) {
        t0 = bench_now();
        got = run_pfor();
        t1 = bench_now();
        want = bench_uneven_expect(P.items);
        tasks = (uint64_t)P.items; /* items, as the peers count them */
        loop = true;
    } else if (strcmp(w, "nqueens") == 0) {
        t0 = bench_now();
        uint64_t r = (uint64_t)(uintptr_t)nqueens((void *)(uintptr_t)NQ_PACK(0, 0, 0, 0));
        t1 = bench_now();
        got = NQ_SOL(r);
        want = bench_nqueens_expect(P.n);
        tasks = NQ_NODES(r) - 1;
    } else if (strcmp(w, "chain") == 0) {
        t0 = bench_now();
        got = get_release(do_or_die(chain, (void *)1));
        t1 = bench_now();
        want = (uint64_t)P.depth;
        tasks = (uint64_t)P.depth;
    } else if (strcmp(w, "tree") == 0) {
        t0 = bench_now();
        got = get_release(do_or_die(tree, (void *)0));
        t1 = bench_now();
        want = bench_tree_nodes(P.fanout, P.depth);
        tasks = want;
    } else {
        bench_usage(argv[0]);
        return 64;
    }
    sf_stats_read(&s1);
    char extra[512];
    unsigned long long created = s1.created - s0.created;
    snprintf(extra, sizeof extra,
             "sf_created=%llu\tsf_inline=%llu\tsf_pool=%llu\tsf_stolen=%llu\t"
             "sf_discarded=%llu\tsf_blocked=%llu\tsf_sleeps=%llu\tsf_peak_busy=%d\t"
             "sf_workers=%d",
             created, (unsigned long long)(s1.run_inline - s0.run_inline),
             (unsigned long long)(s1.run_pool - s0.run_pool),
             (unsigned long long)(s1.run_stolen - s0.run_stolen),
             (unsigned long long)(s1.discarded - s0.discarded),
             (unsigned long long)(s1.gets_blocked - s0.gets_blocked),
             (unsigned long long)(s1.sleeps - s0.sleeps), s1.peak_busy, s1.workers);
    int rc = bench_report("libsf", &P, t1 - t0, tasks, got, want, extra);
    /* A loop makes its participants, not one task per item. */
    if (rc == 0 && (loop ? created > (uint64_t)s1.threads - 1 : created != tasks)) {
        /* A counter bug, not a wrong result: warn, the harness shows it. */
        fprintf(stderr, "WARNING libsf %s: sf_stats created %llu tasks, the workload made %llu\n",
                w, created, (unsigned long long)tasks);
    }
    if (rc == 0 && s1.workers != P.threads - 1) {
        fprintf(stderr, "WARNING libsf: %d workers for %d threads (expected threads - 1)\n",
                s1.workers, P.threads);
    }
    sf_shutdown();
    return rc;
}
