/*
 * reduce.c - sf_reduce, a deterministic parallel reduce built on
 * the parallel loop (parfor.c).
 *
 * The result is fixed by the arguments alone: [from, to) is cut into C
 * chunks of `grain` indices from `from` (the last may be shorter), and the
 * accumulators are joined as the balanced tree
 *
 *   R(c0, c1) = c1 - c0 == 1 ? chunk c0 : join(R(c0, m), R(m, c1)),
 *   m = c0 + (c1 - c0) / 2,
 *
 * left operand first. How the work is spread changes only who computes
 * which node, never a node's value, so a floating-point sum has the same
 * bits at every SF_THREADS.
 *
 * Spreading. The nodes at depth d of that tree, S = 2^d of them with
 * S <= C, are the frontier: every one exists (depth-d nodes hold
 * floor(C / S) or ceil(C / S) >= 1 chunks), they tile [0, C) in order,
 * and above them the tree is perfect - so the top d levels are the
 * perfect tree over the frontier's S results, joined bottom-up pairwise.
 * Frontier node k is one index of an sf_for(0, S): its body descends from
 * the root by the d bits of k and evaluates its subtree depth first, leaf
 * by leaf. The loop brings its stealing, its closed region, its failure
 * scope (a leaf's or join's sf_fail() fails the reduce as it fails a loop)
 * and whatever reaches loop bodies, and it returns once every subtree is
 * done; then the caller joins the top levels, under a scope of its own.
 * S is chosen from the thread count (about 16 per thread, so stealing has
 * room) and bounded by memory (below); one thread: S = 1, the whole tree
 * in the calling thread.
 *
 * Stopping. A subtree stops before its next leaf once the loop's scope has
 * failed (another leaf failed) or a cancellation reaches the task running
 * the reduce (sf_cancelled(), which in a body stops the loop: parfor.c,
 * Cancellation); its joins are skipped, and the reduce returns -1: the
 * failure's code, or ECANCELED. As for sf_for, the task itself ends
 * cancelled only if it asks sf_cancelled() itself.
 *
 * Memory. The frontier's S accumulators (one block, S * size bytes, S <= 16
 * x threads; S * size <= FRONTIER_BYTES, or S < 2 x threads: every thread
 * gets a subtree whatever the size), and per subtree
 * being evaluated its depth-first temporaries: one accumulator per level
 * below its root, at most 64 (ceil(log2(C / S))); on the body's stack when
 * they fit in SMALL_TEMPS bytes, else malloc'd for the subtree. The caller
 * keeps nothing else; *result is written only on success.
 */
#include "api/lifecycle.h"
#include "sched/get.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on the memory above (Memory). */
#define FRONTIER_BYTES ((size_t)4 << 20)
#define SMALL_TEMPS 512
/* Frontier nodes per thread: room for stealing to even out uneven leaves. */
#define PER_THREAD 16

struct reduce {
    long from;
    unsigned long n;      /* indices: to - from, as unsigned */
    unsigned long grain;
    unsigned long chunks; /* C */
    int depth;            /* d: the frontier is the 2^d nodes at depth d */
    const void *identity;
    size_t size;
    void (*leaf)(long lo, long hi, void *acc, void *ctx);
    void (*join)(void *acc, const void *right, void *ctx);
    void *ctx;
    unsigned char *acc;   /* S accumulators, frontier node k at k * size */
    /* A subtree stopped on a cancellation (Stopping). Relaxed: read by the
     * caller after sf_for returned, which orders every body before it. */
    _Atomic bool cancelled;
};

/* What a subtree's evaluation needs that does not change down the tree. */
struct walk {
    struct reduce *R;
    struct sf__scope *scope; /* the loop's, which this body runs in; or NULL */
};

/* Should the next leaf not start? (Stopping) */
static bool stop_here(const struct walk *w)
{
    if (w->scope != NULL && sf__scope_stopped(w->scope))
        return true;
    if (sf_cancelled()) {
        /* Relaxed: see struct reduce. */
        atomic_store_explicit(&w->R->cancelled, true, memory_order_relaxed);
        return true;
    }
    return false;
}

/* R(c0, c1) into out, with tmp the temporaries of the levels below
 * (one accumulator each). false: stopped, out is not a value. */
static bool eval(const struct walk *w, unsigned long c0, unsigned long c1, unsigned char *out,
                 unsigned char *tmp)
{
    const struct reduce *R = w->R;
    if (c1 - c0 == 1) {
        if (stop_here(w))
            return false;
        /* Offsets from `from`, unsigned: [LONG_MIN, LONG_MAX) has more
         * indices than a long counts. c0 < C, so c0 * grain < n. */
        unsigned long lo = c0 * R->grain;
        unsigned long hi = R->n - lo > R->grain ? lo + R->grain : R->n;
        memcpy(out, R->identity, R->size);
        R->leaf((long)((unsigned long)R->from + lo), (long)((unsigned long)R->from + hi), out,
                R->ctx);
        return true;
    }
    unsigned long m = c0 + (c1 - c0) / 2;
    if (!eval(w, c0, m, out, tmp + R->size) || !eval(w, m, c1, tmp, tmp + R->size))
        return false;
    R->join(out, tmp, R->ctx);
    return true;
}

/* Levels below a node of c chunks: ceil(log2(c)), the temporaries eval
 * needs (at most 64). */
static int height(unsigned long c)
{
    int h = 0;
    while (c > 1) {
        c = c - c / 2; /* the larger half, m's right */
        h++;
    }
    return h;
}

/* The body of the loop over the frontier: node k's subtree into acc[k]. */
static void subtree(long k, void *arg)
{
    struct reduce *R = arg;
    unsigned long c0 = 0, c1 = R->chunks;
    for (int b = R->depth - 1; b >= 0; b--) {
        unsigned long m = c0 + (c1 - c0) / 2;
        if (((unsigned long)k >> b) & 1)
            c0 = m;
        else
            c1 = m;
    }
    size_t temps = (size_t)height(c1 - c0) * R->size; /* no overflow: checked in sf_reduce */
    alignas(64) unsigned char small[SMALL_TEMPS];
    unsigned char *tmp = small;
    if (temps > sizeof small) {
        tmp = aligned_alloc(64, (temps + 63) & ~(size_t)63);
        if (tmp == NULL) {
            /* Fails the loop, and so the reduce, with ENOMEM. */
            (void)sf_fail(ENOMEM, "sf_reduce: no memory for %zu bytes of accumulators", temps);
            return;
        }
    }
    /* The loop runs this body under its scope frame, which names the task
     * running here (failure.h, Scopes): the scope a sf_fail() here reports
     * to. Its stop flag is the loop's own. */
    struct walk w = {.R = R, .scope = sf__scope_here(sf__thread_self())};
    (void)eval(&w, c0, c1, R->acc + (size_t)k * R->size, tmp);
    if (tmp != small)
        free(tmp);
}

/* The top d levels: the perfect tree over the frontier, bottom-up, each
 * pair left operand first, into acc[0]. Runs under a scope of its own, so
 * that a join's sf_fail() fails the reduce here as it does in the loop.
 * Returns 0 or the failure's code, its message then this thread's. */
static int join_top(struct sf__thread *me, struct reduce *R, unsigned long S)
{
    struct sf__scope fail;
    sf__scope_init(&fail);
    struct sf__scope_frame fr;
    sf__scope_push(me, &fr, &fail);
    for (unsigned long step = 1; step < S && !sf__scope_stopped(&fail); step *= 2)
        for (unsigned long k = 0; k + step < S && !sf__scope_stopped(&fail); k += 2 * step)
            R->join(R->acc + k * R->size, R->acc + (k + step) * R->size, R->ctx);
    sf__scope_pop(me, &fr);
    /* Relaxed: only this thread wrote it (the joins ran here). */
    int code = atomic_load_explicit(&fail.code, memory_order_relaxed);
    if (code == 0)
        return 0;
    free(sf__entry(me)->task_msg);
    sf__entry(me)->task_msg = fail.msg; /* as parfor.c's loop_result */
    return code;
}

static int run_reduce(long from, long to, unsigned long grain, void *result, const void *identity,
                  size_t size, void (*leaf)(long, long, void *, void *),
                  void (*join)(void *, const void *, void *), void *ctx)
{
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return -1;
    unsigned long n = (unsigned long)to - (unsigned long)from;
    struct reduce R = {
        .from = from,
        .n = n,
        .grain = grain,
        .chunks = n / grain + (n % grain != 0),
        .identity = identity,
        .size = size,
        .leaf = leaf,
        .join = join,
        .ctx = ctx,
    };
    atomic_init(&R.cancelled, false);
    if ((size_t)height(R.chunks) > SIZE_MAX / size) {
        errno = ENOMEM; /* the temporaries could not be counted, let alone had */
        return -1;
    }
    /* The frontier (Spreading, Memory). Relaxed: a stale count only shapes
     * the split (pool.h), never the result. */
    unsigned long threads =
        (unsigned long)atomic_load_explicit(&sf__pool.workers, memory_order_relaxed) + 1;
    unsigned long S = 1;
    int d = 0;
    if (threads > 1)
        while (S < PER_THREAD * threads && S <= R.chunks / 2 &&
               (S * 2 <= FRONTIER_BYTES / size || (S < threads && S * 2 <= (SIZE_MAX - 63) / size))) {
            S *= 2;
            d++;
        }
    R.depth = d;
    R.acc = aligned_alloc(64, (S * size + 63) & ~(size_t)63);
    if (R.acc == NULL) {
        errno = ENOMEM;
        return -1;
    }
    /* The loop: no need for a grain, its indices are whole subtrees. */
    int rc = sf_for(0, (long)S, subtree, &R);
    int err = rc == 0 ? 0 : errno;
    /* Relaxed: sf_for's return orders every body before this read. */
    if (err == 0 && atomic_load_explicit(&R.cancelled, memory_order_relaxed))
        err = ECANCELED;
    if (err == 0)
        err = join_top(me, &R, S);
    if (err == 0)
        memcpy(result, R.acc, size);
    free(R.acc);
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

SF_EXPORT int sf_reduce(long from, long to, long grain, void *result, const void *identity,
                        size_t size, void (*leaf)(long lo, long hi, void *acc, void *ctx),
                        void (*join)(void *acc, const void *right, void *ctx), void *ctx)
{
    if (from > to || grain < 1 || size == 0 || result == NULL || identity == NULL ||
        leaf == NULL || join == NULL) {
        errno = EINVAL;
        return -1;
    }
    if (from == to) {
        memmove(result, identity, size); /* result may be identity itself */
        return 0;
    }
    SF__OUTERMOST("sf_reduce", int,
                  sf_reduce(from, to, grain, result, identity, size, leaf, join, ctx));
    return run_reduce(from, to, (unsigned long)grain, result, identity, size, leaf, join, ctx);
}
