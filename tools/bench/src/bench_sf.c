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
#include "workloads.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "sf.h"

#include <stdatomic.h>

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

static struct bench_out run_tput(void)
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
    return bench_value(sum);
}

/* ---- uneven: items queued from the main thread, then got in order -------- */

static void *uneven_item(void *arg)
{
    long i = (long)(intptr_t)arg;
    bench_spin((uint64_t)(i + 1), bench_uneven_iters(&P, i));
    return (void *)(intptr_t)(i + 1);
}

static struct bench_out run_uneven(void)
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
    return bench_value(sum);
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

static struct bench_out run_pfor(void)
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
    return bench_value(sum);
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

static void *uts(void *arg)
{
    uint64_t node = (uint64_t)(uintptr_t)arg;
    if (P.work)
        bench_spin(node, P.work);
    int k = uts_children(node, bench_in.uts_kind, P.b0, P.q_ppm, P.depth);
    /* As many handles as children, as a program would keep them: an sf_task
     * is 64 bytes, so a fixed array of UTS_MAX_CHILDREN would put 4 KiB in
     * every frame of a tree 1,885 levels deep (uts-t3). The T3 root's
     * thousands go to the heap. */
    handle buf[k >= 1 && k <= UTS_MAX_CHILDREN ? k : 1], *c = buf;
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

/* The instance workloads.h made. */
static const struct ks_item *const ks_items = bench_in.ks_items;
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

/* ---- pi: [lo, hi) halved down to single indices, both halves tasks ------- */

/* Returns the bits of the range's sum: left + right, the halving tree's
 * order (classic.h). */
static void *pi(void *arg)
{
    uint64_t r = (uint64_t)(uintptr_t)arg;
    long lo = PI_LO(r), hi = PI_HI(r);
    if (hi - lo == 1)
        return (void *)(uintptr_t)pi_bits(pi_term(lo, P.n));
    long m = lo + (hi - lo) / 2;
    handle a, b;
    SPAWN(a, pi, (void *)(uintptr_t)PI_RANGE(lo, m));
    SPAWN(b, pi, (void *)(uintptr_t)PI_RANGE(m, hi));
    double l = pi_double(JOIN(a));
    return (void *)(uintptr_t)pi_bits(l + pi_double(JOIN(b)));
}

/* ---- pipe: futures handed down a pipeline of the program's own threads ---- */
/*
 * Stage 0, a thread of the program, makes sf_do(pipe_work, i) for every item
 * and puts the futures in a bounded ring; stage k (0 < k < stages - 1),
 * another thread, takes ring k - 1's futures in order and puts a future of
 * the item's next value in ring k; the main thread, the last stage, gets ring
 * stages - 2's futures in order and checks every value (common.h,
 * bench_pipe_expect). tests/test_memory's pipeline, with work in every task.
 *
 * A middle stage hands most items on in a task and gets the rest itself:
 * item i when i % 4 == k % 4 (pipe_direct), a quarter of its items, and
 * neighbouring stages get different quarters.
 *   - handed on: sf_do(pipe_pass, f), a task that gets the handed future
 *     with a plain get (sf_wait: sf_get with the failure as the return
 *     value), releases it, works on the value and returns its next one;
 *   - got directly: the stage thread gets f itself (plain code, an
 *     outermost get), does the same work on the value and puts
 *     sf_do(pipe_next, its next value), a task that only returns it.
 *
 * Who runs what: a stage thread's direct get submits the pass tasks it
 * queued since its last one, so idle pool workers take them (oldest first)
 * and the pipeline runs on every thread. A get - the stage thread's, the main
 * thread's or a pass task's - whose future has not started runs it itself; one
 * whose future runs on another thread helps: it parks and runs other pending
 * work on another fiber of its thread until the future is done
 * (docs/waiting.md). The outermost gets (the stage threads' and the main
 * thread's) return once the work they took on has finished too.
 *
 * A get fails with EDEADLK only when the program's own gets form a cycle, and
 * this pipeline's never do: no get may fail. The benchmark counts such gets
 * anyway (pipe_failed_gets in the RESULT line, 0 in a correct run) and goes
 * on, so that a regression shows without failing the run: a pass task whose
 * get failed fails with PIPE_LOST, a stage that got directly hands on
 * sf_do(pipe_lost) (a task that fails with PIPE_LOST), every later stage
 * passes that on, and the main thread counts the items it lost (pipe_lost);
 * every other item is checked exactly. Any other failure is an error (exit 3).
 */
#define PIPE_RING 1024
#define PIPE_LOST 1000 /* a lost item's failure code: an earlier stage's get failed */

/*
 * A bounded ring between two threads: one puts, one takes. Either may have to
 * wait (the putter for room, the taker for an item), and they do so asleep on
 * a condition variable, not spinning: the stages are extra threads on the
 * benchmark's cores. A putter that found the ring full waits until it is half
 * empty, so a stage that runs ahead wakes once per half ring, not per item.
 */
struct pipe_ring {
    sf_future *slot[PIPE_RING];
    _Alignas(64) atomic_long head; /* next slot to take */
    _Alignas(64) atomic_long tail; /* next slot to put */
    _Alignas(64) atomic_int putter_waits, taker_waits;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static struct pipe_ring pipe_rings[BENCH_PIPE_MAX_STAGES - 1]; /* ring k: stage k -> k + 1 */
static atomic_ulong pipe_failed_gets;

/*
 * Waits on r until ready(r) holds. The flag is the Dekker pair with the other
 * side's index store (both seq_cst): the waiter sets it and then reads the
 * index; the other side stores the index and then reads the flag, so either
 * the waiter sees the new index or the other side sees the flag and signals,
 * under the mutex, after the waiter is in pthread_cond_wait.
 */
static void pipe_wait(struct pipe_ring *r, atomic_int *flag, bool (*ready)(struct pipe_ring *))
{
    pthread_mutex_lock(&r->mu);
    atomic_store(flag, 1);
    while (!ready(r))
        pthread_cond_wait(&r->cv, &r->mu);
    atomic_store(flag, 0);
    pthread_mutex_unlock(&r->mu);
}

static void pipe_signal(struct pipe_ring *r)
{
    pthread_mutex_lock(&r->mu);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static bool pipe_half_empty(struct pipe_ring *r)
{
    return atomic_load(&r->tail) - atomic_load(&r->head) <= PIPE_RING / 2;
}

static bool pipe_not_empty(struct pipe_ring *r)
{
    return atomic_load(&r->tail) != atomic_load(&r->head);
}

static void pipe_put(struct pipe_ring *r, sf_future *f)
{
    long t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t - atomic_load_explicit(&r->head, memory_order_acquire) >= PIPE_RING)
        pipe_wait(r, &r->putter_waits, pipe_half_empty);
    r->slot[t % PIPE_RING] = f;
    atomic_store(&r->tail, t + 1);
    if (atomic_load(&r->taker_waits))
        pipe_signal(r);
}

static sf_future *pipe_take(struct pipe_ring *r)
{
    long h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (atomic_load_explicit(&r->tail, memory_order_acquire) == h)
        pipe_wait(r, &r->taker_waits, pipe_not_empty);
    sf_future *f = r->slot[h % PIPE_RING];
    atomic_store(&r->head, h + 1);
    if (atomic_load(&r->putter_waits) && pipe_half_empty(r))
        pipe_signal(r);
    return f;
}

static void *pipe_work(void *arg)
{
    uint64_t v = bench_pipe_first((long)(intptr_t)arg);
    bench_spin(v, P.iters);
    return (void *)(uintptr_t)v;
}

/* Gets a handed future: 0 and its value, or the failure's code (counted if
 * it was this get's own EDEADLK). */
static int pipe_get(sf_future *f, uint64_t *v)
{
    void *r = NULL;
    int rc = sf_wait(f, &r);
    sf_release(f);
    if (rc == EDEADLK)
        atomic_fetch_add_explicit(&pipe_failed_gets, 1, memory_order_relaxed);
    else if (rc != 0 && rc != PIPE_LOST) {
        fprintf(stderr, "libsf: pipe: a get failed: %s\n", strerror(rc));
        exit(3);
    }
    *v = (uint64_t)(uintptr_t)r;
    return rc;
}

static void *pipe_pass(void *arg)
{
    uint64_t v;
    if (pipe_get(arg, &v) != 0) {
        sf_fail(PIPE_LOST, NULL);
        return NULL;
    }
    bench_spin(v, P.iters);
    return (void *)(uintptr_t)bench_pipe_next(v);
}

/* A directly got item's next value, as a future to hand on. */
static void *pipe_next(void *arg)
{
    return (void *)(uintptr_t)bench_pipe_next((uint64_t)(uintptr_t)arg);
}

/* A directly got item whose get failed: lost, as a pass task's. */
static void *pipe_lost(void *arg)
{
    (void)arg;
    sf_fail(PIPE_LOST, NULL);
    return NULL;
}

/* Whether middle stage k gets item i itself (see pipe above). */
static bool pipe_direct(long k, long i)
{
    return i % 4 == k % 4;
}

static void *pipe_stage(void *arg)
{
    long k = (long)(intptr_t)arg;
    for (long i = 0; i < P.items; i++) {
        sf_future *f;
        if (k == 0) {
            f = do_or_die(pipe_work, (void *)(intptr_t)i);
        } else if (!pipe_direct(k, i)) {
            f = do_or_die(pipe_pass, pipe_take(&pipe_rings[k - 1]));
        } else {
            uint64_t v;
            if (pipe_get(pipe_take(&pipe_rings[k - 1]), &v) != 0) {
                f = do_or_die(pipe_lost, NULL);
            } else {
                bench_spin(v, P.iters);
                f = do_or_die(pipe_next, (void *)(uintptr_t)v);
            }
        }
        pipe_put(&pipe_rings[k], f);
    }
    return NULL;
}

/* Returns the items accounted for: checked exact, or lost to a counted
 * failed get (no more lost items than failed gets). */
static uint64_t pipe_run(unsigned long *lost_out)
{
    long n = P.stages - 1; /* stage threads */
    pthread_t tid[BENCH_PIPE_MAX_STAGES];
    for (long k = 0; k < n; k++) {
        struct pipe_ring *r = &pipe_rings[k];
        atomic_init(&r->head, 0);
        atomic_init(&r->tail, 0);
        atomic_init(&r->putter_waits, 0);
        atomic_init(&r->taker_waits, 0);
        if (pthread_mutex_init(&r->mu, NULL) != 0 || pthread_cond_init(&r->cv, NULL) != 0)
            exit(3);
    }
    for (long k = 0; k < n; k++)
        if (pthread_create(&tid[k], NULL, pipe_stage, (void *)(intptr_t)k) != 0) {
            fprintf(stderr, "libsf: pipe: pthread_create failed\n");
            exit(3);
        }
    uint64_t good = 0;
    unsigned long lost = 0;
    for (long i = 0; i < P.items; i++) {
        uint64_t v;
        if (pipe_get(pipe_take(&pipe_rings[n - 1]), &v) != 0)
            lost++;
        else if (v == bench_pipe_expect(i, P.stages))
            good++;
        else if (good + lost == (uint64_t)i) /* the first wrong one */
            fprintf(stderr, "libsf: pipe: item %ld is %llu, expected %llu\n", i,
                    (unsigned long long)v, (unsigned long long)bench_pipe_expect(i, P.stages));
    }
    for (long k = 0; k < n; k++)
        pthread_join(tid[k], NULL);
    unsigned long failed = atomic_load(&pipe_failed_gets);
    *lost_out = lost;
    return good + (lost <= failed ? lost : failed);
}

/* ---- latency: a short task's get, behind a long task it helps with ------ */
/*
 * How soon a get returns when its thread helps with a long task meanwhile
 * (docs/waiting.md, When a get returns). Each round, the main thread makes S
 * (short iterations) and has the pool's one worker start it (threads=2), then
 * makes L (long_factor x short), which stays pending in its own queue, and S
 * is got while it runs: the getter finds S running on the worker and helps by
 * running L on another fiber of its thread. Timed: from S's end (its last act
 * reads the clock) to the getter's return. Three variants, `rounds` rounds
 * each:
 *   busy:          L computes. The getter is G, a task the main thread makes
 *                  after L and gets: G is its newest task, so the main
 *                  thread's get runs G inline, and G gets S. G's get returns
 *                  when L ends: L computes without waiting, and a running
 *                  task is not interrupted (about L's length after S's end).
 *   blocked:       the same, but L gets a future B that another thread of the
 *                  program (H) runs, and B ends L's length after S has ended
 *                  (it waits for S's end, then computes as long as L). L's get
 *                  parks, and G's get, a get inside a task, returns once S is
 *                  done and its thread reaches a scheduling point: soon after
 *                  S's end, while L still waits for B (L's get, asleep on B,
 *                  looks at its thread's parked fibers at least every
 *                  millisecond).
 *   blocked-plain: blocked with the main thread's own get of S as the getter,
 *                  plain code's get: it returns only once the work its thread
 *                  took on has finished, L included (about L's length after
 *                  S's end).
 * A round where L had not started when S ended measured nothing (the getter
 * found S done): it is counted as raced and left out.
 */
enum lat_kind { LAT_BUSY, LAT_BLOCKED, LAT_BLOCKED_PLAIN };

static struct {
    atomic_int s_started, go, b_started;
    atomic_llong s_end, l_start, l_end; /* CLOCK_MONOTONIC ns; 0: not yet */
    atomic_llong g_ret;          /* when G's get of S returned */
    _Atomic(sf_future *) b;      /* the blocked variants' B, made by H */
    atomic_long h_round;         /* main -> H: run the B of round id (0: none yet) */
    atomic_long h_done;          /* H -> main: round id's B got */
} lat;
static atomic_long lat_wrong; /* wrong values, counted by main and H */

static long long lat_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void lat_nap(void)
{
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

/* Spins until *flag is nonzero; a round's handshakes take microseconds
 * (a sleeping worker's wake-up included), so 10 s means the schedule went
 * wrong: give up rather than hang. */
static void lat_await(atomic_int *flag, const char *what)
{
    double limit = bench_now() + 10;
    while (!atomic_load(flag)) {
        sched_yield(); /* the thread it waits for may need this core */
        if (bench_now() > limit) {
            fprintf(stderr, "libsf: latency: %s did not happen within 10 s\n", what);
            exit(3);
        }
    }
}

static void *lat_nop(void *arg) { return arg; }

static void *lat_short(void *arg)
{
    atomic_store(&lat.s_started, 1);
    /* Held until the getter is about to get S, so that its get finds S
     * running and L pending. */
    while (!atomic_load(&lat.go))
        ;
    bench_spin(1, P.short_iters);
    atomic_store(&lat.s_end, lat_now());
    return arg;
}

static void *lat_long_busy(void *arg)
{
    atomic_store(&lat.l_start, lat_now());
    bench_spin(2, P.short_iters * P.long_factor);
    atomic_store(&lat.l_end, lat_now());
    return arg;
}

/* B, run by H: ends L's length after S. */
static void *lat_b(void *arg)
{
    atomic_store(&lat.b_started, 1);
    while (atomic_load(&lat.s_end) == 0)
        lat_nap();
    bench_spin(3, P.short_iters * P.long_factor);
    return arg;
}

static void *lat_long_blocked(void *arg)
{
    atomic_store(&lat.l_start, lat_now());
    void *r = NULL;
    int rc = sf_wait(atomic_load(&lat.b), &r); /* B runs on H: this get blocks */
    if (rc != 0) {
        fprintf(stderr, "libsf: latency: L's get of B failed: %s\n", strerror(rc));
        exit(3);
    }
    return r == arg ? arg : NULL;
}

/* G: the getter as a task; arg is S. Returns S's value. */
static void *lat_getter(void *arg)
{
    void *v = sf_get(arg); /* S runs on the worker: helps, running L */
    atomic_store(&lat.g_ret, lat_now());
    return v;
}

/* H: each round of the blocked variants, makes B and runs it by getting it. */
static void *lat_h(void *arg)
{
    (void)arg;
    long last = 0;
    for (long n = 0; n < 2 * P.rounds; n++) {
        long id;
        while ((id = atomic_load(&lat.h_round)) == last)
            lat_nap();
        last = id;
        sf_future *b = do_or_die(lat_b, (void *)(intptr_t)id);
        atomic_store(&lat.b, b);
        if (sf_get(b) != (void *)(intptr_t)id)
            lat_wrong++;
        atomic_store(&lat.h_done, id);
    }
    return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* The median of n values in us, or -1 if none. */
static double lat_median_us(long long *v, long n)
{
    if (n == 0)
        return -1;
    qsort(v, (size_t)n, sizeof *v, cmp_ll);
    return (double)v[n / 2] / 1e3;
}

/* One variant: `rounds` rounds; puts the median latency (us), the rounds
 * that raced and, for busy, L's median length (us). Round r of the variant
 * is round id kind x rounds + r + 1: the value S, L, G and B return. */
static void lat_variant(enum lat_kind kind, double *median_us, long *raced, double *long_us)
{
    bool blocked = kind != LAT_BUSY, plain = kind == LAT_BLOCKED_PLAIN;
    long long *ns = malloc((size_t)P.rounds * sizeof *ns);
    long long *len = malloc((size_t)P.rounds * sizeof *len);
    if (!ns || !len)
        exit(3);
    long n = 0, nlen = 0;
    *raced = 0;
    for (long r = 0; r < P.rounds; r++) {
        long id = (long)kind * P.rounds + r + 1;
        void *want = (void *)(intptr_t)id;
        atomic_store(&lat.s_started, 0);
        atomic_store(&lat.go, 0);
        atomic_store(&lat.b_started, 0);
        atomic_store(&lat.s_end, 0);
        atomic_store(&lat.l_start, 0);
        atomic_store(&lat.g_ret, 0);
        /* S, then a get of a task made after it: the get submits S, the idle
         * worker takes it (oldest first) and this thread runs the other. */
        sf_future *s = do_or_die(lat_short, want);
        get_release(do_or_die(lat_nop, NULL));
        lat_await(&lat.s_started, "a pool worker starting S");
        if (blocked) {
            /* B runs on H before L exists; the worker is busy with S, so
             * H's get keeps B to itself. */
            atomic_store(&lat.h_round, id);
            lat_await(&lat.b_started, "H starting B");
        }
        sf_future *l = do_or_die(blocked ? lat_long_blocked : lat_long_busy, want);
        long long ret;
        if (plain) {
            atomic_store(&lat.go, 1);
            void *v = sf_get(s); /* helps: runs L, and returns after it */
            ret = lat_now();
            if (v != want)
                lat_wrong++;
        } else {
            /* G is this thread's newest task: the get runs it inline. */
            sf_future *g = do_or_die(lat_getter, s);
            atomic_store(&lat.go, 1);
            if (get_release(g) != (uint64_t)id) /* returns after L: outermost */
                lat_wrong++;
            ret = atomic_load(&lat.g_ret);
        }
        if (get_release(l) != (uint64_t)id)
            lat_wrong++;
        long long s_end = atomic_load(&lat.s_end), l_start = atomic_load(&lat.l_start);
        sf_release(s);
        if (blocked) {
            while (atomic_load(&lat.h_done) != id)
                lat_nap();
            sf_release(atomic_load(&lat.b));
        } else {
            len[nlen++] = atomic_load(&lat.l_end) - l_start;
        }
        if (l_start < s_end)
            ns[n++] = ret - s_end;
        else
            ++*raced;
    }
    *median_us = lat_median_us(ns, n);
    if (long_us)
        *long_us = lat_median_us(len, nlen);
    free(ns);
    free(len);
}

struct lat_result {
    double busy_us, blocked_us, blocked_plain_us, long_us;
    long busy_raced, blocked_raced, blocked_plain_raced;
};

/* Returns 3 x rounds less the wrong values its gets saw (S's or G's, L's,
 * B's). */
static uint64_t lat_run(struct lat_result *res)
{
    lat_variant(LAT_BUSY, &res->busy_us, &res->busy_raced, &res->long_us);
    pthread_t h;
    if (pthread_create(&h, NULL, lat_h, NULL) != 0) {
        fprintf(stderr, "libsf: latency: pthread_create failed\n");
        exit(3);
    }
    lat_variant(LAT_BLOCKED, &res->blocked_us, &res->blocked_raced, NULL);
    lat_variant(LAT_BLOCKED_PLAIN, &res->blocked_plain_us, &res->blocked_plain_raced, NULL);
    pthread_join(h, NULL);
    long wrong = atomic_load(&lat_wrong);
    return (uint64_t)(3 * P.rounds - (wrong < 3 * P.rounds ? wrong : 3 * P.rounds));
}

/* ---- the runs (workloads.h) ------------------------------------------------- */

static struct bench_out run_fib(void)
{
    return bench_value((uint64_t)(intptr_t)fib((void *)(intptr_t)P.n));
}


static struct bench_out run_nqueens(void)
{
    return bench_value((uint64_t)(uintptr_t)nqueens((void *)(uintptr_t)NQ_PACK(0, 0, 0, 0)));
}

/* chain and tree: the root is a task too, as in the other programs. */
static struct bench_out run_chain(void)
{
    handle h;
    SPAWN(h, chain, (void *)1);
    return bench_value(JOIN(h));
}

static struct bench_out run_tree(void)
{
    handle h;
    SPAWN(h, tree, (void *)0);
    return bench_value(JOIN(h));
}

static struct bench_out run_uts(void)
{
    return bench_value((uint64_t)(uintptr_t)uts((void *)(uintptr_t)bench_in.uts_root));
}

static struct bench_out run_cilksort(void)
{
    struct sort_job all = {bench_in.sort_a, bench_in.sort_tmp, P.size};
    struct bench_out o = {0, (uint64_t)(uintptr_t)csort(&all)};
    return o;
}

static struct bench_out run_matmul(void)
{
    struct mm_job all = {bench_in.mm_c, bench_in.mm_a, bench_in.mm_b, P.size};
    matmul(&all);
    return bench_value(0);
}

static struct bench_out run_knapsack(void)
{
    struct ks_job root = {0, bench_in.ks_cap, 0};
    atomic_store_explicit(&ks_best, 0, memory_order_relaxed);
    uint64_t tasks = (uint64_t)(uintptr_t)knapsack(&root);
    struct bench_out o = {(uint64_t)atomic_load_explicit(&ks_best, memory_order_relaxed), tasks};
    return o;
}

static struct bench_out run_pi(void)
{
    return bench_value((uint64_t)(uintptr_t)pi((void *)(uintptr_t)PI_RANGE(0, P.n)));
}

/* ---- reduce: sf_reduce, the sum (shape 0) or the histogram (shape 1) ------- */

static void red_sum_leaf(long lo, long hi, void *acc, void *ctx)
{
    (void)ctx;
    *(double *)acc = bench_red_sum(lo, hi, *(double *)acc);
}

static void red_sum_join(void *acc, const void *right, void *ctx)
{
    (void)ctx;
    *(double *)acc += *(const double *)right;
}

static void red_hist_leaf(long lo, long hi, void *acc, void *ctx)
{
    (void)ctx;
    bench_red_count(lo, hi, acc);
}

static void red_hist_join(void *acc, const void *right, void *ctx)
{
    (void)ctx;
    bench_red_hist_join(acc, right);
}

static struct bench_out run_reduce(void)
{
    static struct bench_hist empty, h;
    double s = 0, zero = 0;
    int rc = P.shape == 0 ? sf_reduce(0, P.size, P.grain, &s, &zero, sizeof s, red_sum_leaf,
                                      red_sum_join, NULL)
                          : sf_reduce(0, P.size, P.grain, &h, &empty, sizeof h, red_hist_leaf,
                                      red_hist_join, NULL);
    if (rc != 0) {
        fprintf(stderr, "libsf: sf_reduce failed: %s\n", strerror(errno));
        exit(3);
    }
    return bench_value(P.shape == 0 ? bench_red_sum_value(s) : bench_red_hist_value(&h));
}

/* pipe and latency report more than their answer (main's extra fields). */
static unsigned long pipe_lost_items;
static struct lat_result lat_res;

static struct bench_out run_pipe(void) { return bench_value(pipe_run(&pipe_lost_items)); }
static struct bench_out run_latency(void) { return bench_value(lat_run(&lat_res)); }

static const struct bench_run_entry runs[] = {
    {"fib", run_fib},           {"tput", run_tput},       {"uneven", run_uneven},
    {"pfor", run_pfor},         {"nqueens", run_nqueens}, {"chain", run_chain},
    {"tree", run_tree},         {"uts-t1", run_uts},      {"uts-t3", run_uts},
    {"cilksort", run_cilksort}, {"matmul", run_matmul},   {"knapsack", run_knapsack},
    {"pi", run_pi},             {"pipe", run_pipe},       {"latency", run_latency},
    {"reduce", run_reduce},
};

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
    struct bench_result r = bench_run(argv[0], &P, runs, sizeof runs / sizeof runs[0]);
    bool loop = strcmp(w, "pfor") == 0 || strcmp(w, "reduce") == 0;
    sf_stats_read(&s1);
    char extra[640];
    unsigned long long created = s1.created - s0.created;
    snprintf(extra, sizeof extra,
             "sf_created=%llu\tsf_inline=%llu\tsf_pool=%llu\tsf_stolen=%llu\t"
             "sf_discarded=%llu\tsf_blocked=%llu\tsf_sleeps=%llu\tsf_parks=%llu\t"
             "sf_peak_busy=%d\tsf_workers=%d",
             created, (unsigned long long)(s1.run_inline - s0.run_inline),
             (unsigned long long)(s1.run_pool - s0.run_pool),
             (unsigned long long)(s1.run_stolen - s0.run_stolen),
             (unsigned long long)(s1.discarded - s0.discarded),
             (unsigned long long)(s1.gets_blocked - s0.gets_blocked),
             (unsigned long long)(s1.sleeps - s0.sleeps),
             (unsigned long long)(s1.parks - s0.parks), s1.peak_busy, s1.workers);
    if (strcmp(w, "pipe") == 0) /* failed gets: counted, not a wrong result (see pipe above) */
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                 "\tpipe_failed_gets=%lu\tpipe_lost=%lu", atomic_load(&pipe_failed_gets),
                 pipe_lost_items);
    if (strcmp(w, "latency") == 0) /* libsf only: no time compared across runtimes */
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                 "\tlat_busy_us=%.1f\tlat_blocked_us=%.1f\tlat_blocked_plain_us=%.1f"
                 "\tlat_long_us=%.1f\tlat_busy_raced=%ld\tlat_blocked_raced=%ld"
                 "\tlat_blocked_plain_raced=%ld",
                 lat_res.busy_us, lat_res.blocked_us, lat_res.blocked_plain_us, lat_res.long_us,
                 lat_res.busy_raced, lat_res.blocked_raced, lat_res.blocked_plain_raced);
    int rc = bench_report(RUNTIME_NAME, &P, r.seconds, r.tasks, r.got, r.want, extra);
    /* A loop (a reduce's too) makes its participants, not one task per item. */
    if (rc == 0 && (loop ? created > (uint64_t)s1.threads - 1 : created != r.tasks)) {
        /* A counter bug, not a wrong result: warn, the harness shows it. */
        fprintf(stderr, "WARNING libsf %s: sf_stats created %llu tasks, the workload made %llu\n",
                w, created, (unsigned long long)r.tasks);
    }
    if (rc == 0 && s1.workers != P.threads - 1) {
        fprintf(stderr, "WARNING libsf: %d workers for %d threads (expected threads - 1)\n",
                s1.workers, P.threads);
    }
    sf_shutdown();
    return rc;
}
