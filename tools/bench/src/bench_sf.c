/*
 * bench_sf.c - the workloads on libsf: sf_do() queues, sf_get() runs/gets,
 * sf_release() drops. Threads: sf_config.threads = N (N - 1 pool workers plus
 * the calling thread). See common.h for the command line.
 *
 * Built a second time with BENCH_SF_TASK (bench_sftask, runtime "libsf-task"):
 * every task that is got in the frame that made it - all of them but the
 * loops' - lives in that frame instead, an sf_task (sf_task_do,
 * sf_task_get; nothing to release). The workload code is the same, written
 * against SPAWN and JOIN below.
 */
#include "common.h"

#include <stdbool.h>

#include <stdint.h>

#include "sf.h"

#include <stdatomic.h>

#include "classic.h"

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

static uint64_t get_release(sf_future *f);

#ifdef BENCH_SF_TASK
#define RUNTIME_NAME "libsf-task"
typedef sf_task handle;
static void spawn(sf_task *t, void *(*fn)(void *), void *arg)
{
    if (sf_task_do(t, fn, arg) != 0)
        die_do();
}
#define SPAWN(h, fn, arg) spawn(&(h), (fn), (arg))
#define JOIN(h) ((uint64_t)(uintptr_t)sf_task_get(&(h)))
#else
#define RUNTIME_NAME "libsf"
typedef sf_future *handle;
#define SPAWN(h, fn, arg) ((h) = do_or_die((fn), (arg)))
#define JOIN(h) get_release(h)
#endif

/* ---- fib: a = sf_do(fib, n-1); b = fib(n-2); r = get(a) + b ---------------- */

__attribute__((noinline)) static void *fib(void *arg)
{
    long n = (long)(intptr_t)arg;
    if (n < 2)
        return (void *)(intptr_t)n;
    handle a;
    SPAWN(a, fib, (void *)(intptr_t)(n - 1));
    long b = (long)(intptr_t)fib((void *)(intptr_t)(n - 2));
    long r = (long)JOIN(a) + b;
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
    handle *c = malloc((size_t)P.inner * sizeof *c);
    if (!c)
        exit(3);
    for (long j = 0; j < P.inner; j++)
        SPAWN(c[j], tput_child, (void *)(uintptr_t)(i * P.inner + j + 1));
    uint64_t sum = 0;
    for (long j = 0; j < P.inner; j++)
        sum += JOIN(c[j]);
    free(c);
    return (void *)(uintptr_t)sum;
}

static uint64_t run_tput(void)
{
    handle *f = malloc((size_t)P.outer * sizeof *f);
    if (!f)
        exit(3);
    for (long i = 0; i < P.outer; i++)
        SPAWN(f[i], tput_parent, (void *)(intptr_t)i);
    uint64_t sum = 0;
    for (long i = 0; i < P.outer; i++)
        sum += JOIN(f[i]);
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
    handle *f = malloc((size_t)P.items * sizeof *f);
    if (!f)
        exit(3);
    for (long i = 0; i < P.items; i++)
        SPAWN(f[i], uneven_item, (void *)(intptr_t)i);
    uint64_t sum = 0;
    for (long i = 0; i < P.items; i++)
        sum += JOIN(f[i]);
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
    handle c[16];
    int k = 0;
    while (avail) {
        unsigned bit = avail & -avail;
        avail &= avail - 1;
        SPAWN(c[k], nqueens, (void *)(uintptr_t)NQ_PACK(row + 1, cols | bit,
                                                        ((d1 | bit) << 1) & mask,
                                                        (d2 | bit) >> 1));
        k++;
    }
    uint64_t sol = 0, nodes = 1;
    for (int i = 0; i < k; i++) {
        uint64_t r = JOIN(c[i]);
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
    handle f;
    SPAWN(f, chain, (void *)(intptr_t)(d + 1));
    long r = (long)JOIN(f);
    return (void *)(intptr_t)(r + 1);
}

static void *tree(void *arg)
{
    long d = (long)(intptr_t)arg;
    bench_spin((uint64_t)d, P.iters);
    if (d >= P.depth)
        return (void *)1;
    handle c[64];
    for (long i = 0; i < P.fanout; i++)
        SPAWN(c[i], tree, (void *)(intptr_t)(d + 1));
    uint64_t sum = 1;
    for (long i = 0; i < P.fanout; i++)
        sum += JOIN(c[i]);
    return (void *)(uintptr_t)sum;
}

static uint64_t get_release(sf_future *f)
{
    uint64_t r = (uint64_t)(uintptr_t)sf_get(f);
    sf_release(f);
    return r;
}

/* ---- UTS: every node sf_does all its children, then gets them in order ---- */

static int uts_kind;

static void *uts(void *arg)
{
    uint64_t node = (uint64_t)(uintptr_t)arg;
    if (P.work)
        bench_spin(node, P.work);
    int k = uts_children(node, uts_kind, P.b0, P.q_ppm, P.depth);
    handle buf[UTS_MAX_CHILDREN], *c = buf;
    if (k > UTS_MAX_CHILDREN && !(c = malloc((size_t)k * sizeof *c))) /* the T3 root */
        exit(3);
    for (int i = 0; i < k; i++)
        SPAWN(c[i], uts, (void *)(uintptr_t)uts_child_node(node, i));
    uint64_t n = 1;
    for (int i = 0; i < k; i++)
        n += JOIN(c[i]);
    if (c != buf)
        free(c);
    return (void *)(uintptr_t)n;
}

/* ---- cilksort: 4 quarter sorts, 2 merges, 1 merge; merges split in 2 ------ */
/* A job lives in its parent's frame: the parent gets it before returning. */

struct merge_job {
    const sort_elem *a, *b;
    long na, nb;
    sort_elem *dst;
};

struct sort_job {
    sort_elem *a, *tmp;
    long n;
};

/* Each returns the tasks it made (directly and below). */
static void *cmerge(void *arg)
{
    struct merge_job j = *(struct merge_job *)arg;
    if (j.na < j.nb) {
        const sort_elem *t = j.a;
        j.a = j.b;
        j.b = t;
        long tn = j.na;
        j.na = j.nb;
        j.nb = tn;
    }
    if (j.na == 0)
        return (void *)0;
    if (j.na + j.nb < SORT_MERGE_CUTOFF) {
        sort_merge_seq(j.a, j.na, j.b, j.nb, j.dst);
        return (void *)0;
    }
    long ma = j.na / 2, lb = sort_lower_bound(j.b, j.nb, j.a[ma]);
    j.dst[ma + lb] = j.a[ma];
    struct merge_job lo = {j.a, j.b, ma, lb, j.dst};
    struct merge_job hi = {j.a + ma + 1, j.b + lb, j.na - ma - 1, j.nb - lb, j.dst + ma + lb + 1};
    handle f0, f1;
    SPAWN(f0, cmerge, &lo);
    SPAWN(f1, cmerge, &hi);
    uint64_t t = 2 + JOIN(f0);
    t += JOIN(f1);
    return (void *)(uintptr_t)t;
}

static void *csort(void *arg)
{
    struct sort_job j = *(struct sort_job *)arg;
    if (j.n < SORT_QUICK_CUTOFF) {
        sort_seq(j.a, j.n);
        return (void *)0;
    }
    long q = j.n / 4;
    struct sort_job s[4] = {{j.a, j.tmp, q},
                            {j.a + q, j.tmp + q, q},
                            {j.a + 2 * q, j.tmp + 2 * q, q},
                            {j.a + 3 * q, j.tmp + 3 * q, j.n - 3 * q}};
    handle f[4];
    for (int i = 0; i < 4; i++)
        SPAWN(f[i], csort, &s[i]);
    uint64_t t = 6;
    for (int i = 0; i < 4; i++)
        t += JOIN(f[i]);
    struct merge_job m0 = {j.a, j.a + q, q, q, j.tmp};
    struct merge_job m1 = {j.a + 2 * q, j.a + 3 * q, q, j.n - 3 * q, j.tmp + 2 * q};
    SPAWN(f[0], cmerge, &m0);
    SPAWN(f[1], cmerge, &m1);
    t += JOIN(f[0]);
    t += JOIN(f[1]);
    struct merge_job all = {j.tmp, j.tmp + 2 * q, 2 * q, j.n - 2 * q, j.a};
    t += (uint64_t)(uintptr_t)cmerge(&all);
    return (void *)(uintptr_t)t;
}

/* ---- matmul: two phases of 4 quadrant products ------------------------------ */

struct mm_job {
    double *c;
    const double *a, *b;
    long n;
};

static void *matmul(void *arg)
{
    struct mm_job *j = arg;
    if (j->n <= MM_BASE) {
        mm_base(j->c, j->a, j->b, j->n, MM_LD(P.size));
        return NULL;
    }
    for (int phase = 0; phase < 2; phase++) {
        struct mm_job s[4];
        handle f[4];
        for (int q = 0; q < 4; q++) {
            mm_quadrant(j->c, j->a, j->b, j->n, MM_LD(P.size), phase, q, &s[q].c, &s[q].a,
                        &s[q].b);
            s[q].n = j->n / 2;
            SPAWN(f[q], matmul, &s[q]);
        }
        for (int q = 0; q < 4; q++)
            JOIN(f[q]);
    }
    return NULL;
}

/* ---- knapsack: "take" and "skip" as tasks, a shared best ------------------- */

static struct ks_item ks_items[KS_MAX_ITEMS];
/*
 * The best value found so far. Relaxed everywhere: it is only a pruning
 * hint, monotone (CAS-max), and a stale read only prunes less; the final
 * value is read after every task was got, and each sf_get orders the task's
 * writes before the getter's reads.
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

/* Returns the tasks made below this node. */
static void *knapsack(void *arg)
{
    struct ks_job j = *(struct ks_job *)arg;
    ks_improve(j.v);
    if (j.i == P.items ||
        ks_bound(ks_items, j.i, j.c, j.v) <= atomic_load_explicit(&ks_best, memory_order_relaxed))
        return (void *)0;
    const struct ks_item *it = &ks_items[j.i];
    struct ks_job take = {j.i + 1, j.c - it->weight, j.v + it->value};
    struct ks_job skip = {j.i + 1, j.c, j.v};
    handle ft, fs;
    bool fits = it->weight <= j.c;
    if (fits)
        SPAWN(ft, knapsack, &take);
    SPAWN(fs, knapsack, &skip);
    uint64_t t = 0;
    if (fits) /* got in order: take, then skip */
        t += 1 + JOIN(ft);
    t += 1 + JOIN(fs);
    return (void *)(uintptr_t)t;
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
    bench_wait_start();
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
        handle h;
        SPAWN(h, chain, (void *)1);
        got = JOIN(h);
        t1 = bench_now();
        want = (uint64_t)P.depth;
        tasks = (uint64_t)P.depth;
    } else if (strcmp(w, "tree") == 0) {
        t0 = bench_now();
        handle h;
        SPAWN(h, tree, (void *)0);
        got = JOIN(h);
        t1 = bench_now();
        want = bench_tree_nodes(P.fanout, P.depth);
        tasks = want;
    } else if (strcmp(w, "uts-t1") == 0 || strcmp(w, "uts-t3") == 0) {
        uts_kind = w[5] - '0';
        uint64_t root = UTS_NODE(uts_root((uint64_t)P.seed), 0);
        t0 = bench_now();
        got = (uint64_t)(uintptr_t)uts((void *)(uintptr_t)root);
        t1 = bench_now();
        want = uts_expect(uts_kind, P.b0, P.q_ppm, P.depth, (uint64_t)P.seed);
        tasks = got - 1;
    } else if (strcmp(w, "cilksort") == 0) {
        sort_elem *a, *tmp;
        sort_setup(P.size, (uint64_t)P.seed, &a, &tmp, &want);
        struct sort_job all = {a, tmp, P.size};
        t0 = bench_now();
        tasks = (uint64_t)(uintptr_t)csort(&all);
        t1 = bench_now();
        got = sort_check(a, P.size);
        free(a);
        free(tmp);
    } else if (strcmp(w, "matmul") == 0) {
        double *a, *b, *c;
        mm_setup(P.size, (uint64_t)P.seed, &a, &b, &c);
        struct mm_job all = {c, a, b, P.size};
        t0 = bench_now();
        matmul(&all);
        t1 = bench_now();
        mm_check(a, b, c, P.size, &got, &want);
        tasks = mm_tasks(P.size);
        mm_free(a);
    } else if (strcmp(w, "knapsack") == 0) {
        long cap = ks_instance(ks_items, P.items, (uint64_t)P.seed);
        struct ks_job root = {0, cap, 0};
        atomic_store_explicit(&ks_best, 0, memory_order_relaxed);
        t0 = bench_now();
        tasks = (uint64_t)(uintptr_t)knapsack(&root);
        t1 = bench_now();
        got = (uint64_t)atomic_load_explicit(&ks_best, memory_order_relaxed);
        want = (uint64_t)ks_expect(ks_items, P.items, cap);
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
    int rc = bench_report(RUNTIME_NAME, &P, t1 - t0, tasks, got, want, extra);
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
