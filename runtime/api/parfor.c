/*
 * parfor.c - parallel loops over an index range with stealable
 * ranges (sf_for, sf_for_range), after the work-stealing range partitioner
 * of seed 002.
 *
 * A loop of n indices (offsets 0..n-1 from `from`) is split statically into
 * P parts, P = min(running threads, grains). Participant 0 is the calling
 * thread; participants 1..P-1 are tasks it queues with sf_do, submits and
 * publishes (a loop is a get: idle workers should start at once). Each
 * participant owns one part, a struct part [lo, hi):
 *
 *   owner   takes [lo, lo + g) from the bottom: stores lo = lo + g, a light
 *           fence, loads hi; if the grain still fits under hi it is the
 *           owner's (no read-modify-write, no lock: the fork-join fast
 *           path's discipline). Otherwise it settles under the part's lock.
 *   thief   (a participant whose own part is empty) locks the part with the
 *           most left, lowers hi by half of what is left (rounded up), a
 *           heavy fence, reads lo again; if lo went past the new hi the
 *           owner may have taken indices above it, so it puts hi back and
 *           looks again. Otherwise [new hi, old hi) is its own part now.
 *
 * Why no index is run twice or lost: the owner's (store lo, load hi) and the
 * thief's (store hi, load lo) are an asymmetric Dekker pair (platform.h):
 * the light fence is a compiler barrier where membarrier exists, and the
 * thief's heavy fence makes every thread of the process execute a full
 * barrier. So either the owner's load sees the lowered hi, or the thief's
 * load sees the owner's lo - or both. If the owner sees it and its grain no
 * longer fits, it waits for the part's lock, behind which a thief has either
 * finished (hi is final) or put hi back, and takes what is below hi. If the
 * thief sees lo past its new hi, it backs off. If neither saw the other, the
 * owner's grain fit below the new hi and the thief's chunk is above it.
 *
 * Invariants (a part's lock held, which thieves always hold and the owner
 * holds on a conflict):
 *   - hi only changes under the lock, and is back to a final value when the
 *     lock is released; the owner decides its part is empty only under the
 *     lock, so a thief's passing lowering can never end a part early;
 *   - every offset of [0, n) is in exactly one of: some part's [lo, hi), a
 *     grain or chunk a participant has taken and is running, or done;
 *   - a part whose owner has not started (its task is still queued) is
 *     drained by thieves alone: half rounded up of one index is that index.
 *
 * Termination. `remaining` counts the indices not yet run: a participant
 * subtracts what it ran each time its part runs dry (one read-modify-write
 * per part, not per index), and a thief stops searching when it reads 0 or
 * finds no part with anything left. sf_for returns only once it has got the
 * future of every participant it made - a participant's future is done only
 * after every index it took has run - so no barrier can miss a steal: when
 * the caller's own search ends, every part is empty or owned by a running
 * participant, and those are waited for.
 *
 * Deadlock freedom. The calling thread alone can run the whole loop: its
 * search drains every part, those of participants that never started
 * included, and its get of a participant that has not started runs it in
 * place, where it finds nothing to do. Waiting is sf_get on futures the
 * caller made itself (tree-shaped, get.c), so nesting loops, loops in tasks
 * and gets in bodies all keep the runtime's deadlock freedom, at any
 * SF_THREADS. No lock is held while a body runs.
 *
 * Failure. A loop is a failure scope (failure.h, Scopes): each participant
 * runs its bodies under a frame naming the loop's scope, so a body's
 * sf_fail() fails the loop - the first code and message stand, a later one
 * is EALREADY - while a task a body runs (its get, or one it helps with)
 * fails itself as anywhere. A failure sets the scope's stop flag, which
 * every participant reads before each grain it takes and before it steals:
 * indices not started then are never run, bodies running finish. Stopping
 * leaves indices in the parts, so `remaining` never reaches 0; termination
 * does not rest on it (participants end at the flag, and sf_for still gets
 * every one). Once every participant has ended, the caller reads the scope
 * - ordered after every body by those gets - and returns its code, with
 * its message in this thread's task_msg (sf_task_error_message).
 *
 * Cancellation. A loop belongs to the task that runs it (docs/failures.md,
 * Cancellation): it keeps that task's lineage (cancel.h) - the caller's
 * own task, or for a loop in a body, the participant running that body,
 * whose lineage goes on to the outer loop's caller - and while a
 * cancellation is in effect every participant asks before each grain
 * whether one reaches it (a walk up the chain; otherwise one load). The
 * first to see one fails the scope with ECANCELED, which stops the loop as
 * a failure does: sf_for returns -1 with errno ECANCELED. Participant tasks
 * are sf_do tasks of the caller, so one not yet started when the
 * cancellation comes never starts (run.c); its part is drained by the
 * others, which stop too. sf_cancelled() in a body asks the same (futures.c)
 * and stops the loop the same way.
 *
 * Lifetime. The loop lives on the heap with a reference per participant
 * task and one for the caller: a participant drops its own when it ends, the
 * caller drops those of tasks that never ran. A participant left running
 * after a failed get (EDEADLK) thus keeps the loop alive until it ends.
 */
#include "api/lifecycle.h"
#include "sched/get.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>

/* A participant's part. Its own cache line: the owner writes lo at every
 * grain, thieves touch it only to steal. */
struct part {
    _Alignas(64) _Atomic unsigned long lo; /* next offset the owner takes */
    _Atomic unsigned long hi;              /* end of the part; lowered by thieves */
    _Atomic int lock;                      /* thieves; the owner on a conflict */
    _Atomic int ran;                       /* its task started (participants 1..) */
    sf_future *task;                       /* its task (participants 1..; the caller's) */
    struct loop *loop;
    int k;                                 /* index in loop->part */
};

struct loop {
    long from;
    unsigned long grain;
    void (*body)(long i, void *ctx);
    void (*rbody)(long lo, long hi, void *ctx);
    void *ctx;
    int parts;
    struct sf__scope fail; /* see Failure; read before each grain, written once */
    /* The caller's lineage (Cancellation): what a task it made would take
     * as its up and up_tag. Written before the participants are queued. */
    sf_future *up;
    uint64_t up_tag;
    _Alignas(64) _Atomic unsigned long remaining; /* indices not yet run */
    _Atomic int refs;                             /* see Lifetime */
    struct part part[];
};

/* The index at offset off of a loop starting at from: unsigned arithmetic,
 * since the offsets of [LONG_MIN, LONG_MAX) do not fit a long. */
static inline long index_at(long from, unsigned long off)
{
    return (long)((unsigned long)from + off);
}

/* The part's lock: held for a few loads and stores and one heavy fence,
 * never while a body runs. Acquire/release: it orders the part's hi and lo
 * between holders. */
static void part_lock(struct part *p)
{
    for (unsigned spins = 0; atomic_exchange_explicit(&p->lock, 1, memory_order_acquire);) {
        /* Relaxed: a read-only wait for the holder, retried by the exchange. */
        while (atomic_load_explicit(&p->lock, memory_order_relaxed)) {
            if (++spins < 64)
                sf__pause();
            else
                sched_yield(); /* the holder may be descheduled in its fence */
        }
    }
}

static void part_unlock(struct part *p) { atomic_store_explicit(&p->lock, 0, memory_order_release); }

/*
 * Owner: takes the next grain of its part into [*a, *b). Returns false when
 * the part is empty (decided under the lock: see the invariants).
 */
static inline bool take_grain(struct part *p, unsigned long g, unsigned long *a, unsigned long *b)
{
    /* Relaxed: lo is written by its owner alone outside the lock, and we
     * are the owner. */
    unsigned long i = atomic_load_explicit(&p->lo, memory_order_relaxed);
    unsigned long end = i + g < i ? ULONG_MAX : i + g;
    /* Relaxed, both: the Dekker pair with steal() is made by the fences.
     * The light fence keeps the store before the load (compiler barrier;
     * the thief's heavy fence does the CPU's part). */
    atomic_store_explicit(&p->lo, end, memory_order_relaxed);
    sf__fence_light();
    unsigned long h = atomic_load_explicit(&p->hi, memory_order_relaxed);
    if (SF__LIKELY(end <= h && i < end)) { /* i == end: saturated at the last offset */
        *a = i;
        *b = end;
        return true;
    }
    /* The grain does not fit: the end of the part, or a thief lowered hi.
     * Under the lock hi is final. Relaxed: ordered by the lock. */
    part_lock(p);
    h = atomic_load_explicit(&p->hi, memory_order_relaxed);
    end = end < h ? end : h;
    bool got = i < end;
    atomic_store_explicit(&p->lo, got ? end : h, memory_order_relaxed);
    part_unlock(p);
    *a = i;
    *b = end;
    return got;
}

/* Runs offsets [a, b). */
static inline void run_grain(const struct loop *L, unsigned long a, unsigned long b)
{
    if (L->rbody != NULL) {
        L->rbody(index_at(L->from, a), index_at(L->from, b), L->ctx);
        return;
    }
    for (unsigned long o = a; o < b; o++)
        L->body(index_at(L->from, o), L->ctx);
}

/* Left in part p, from racy reads: a hint for choosing a victim. Relaxed:
 * the steal rereads under the lock. */
static unsigned long left_hint(struct part *p)
{
    unsigned long lo = atomic_load_explicit(&p->lo, memory_order_relaxed);
    unsigned long hi = atomic_load_explicit(&p->hi, memory_order_relaxed);
    return hi > lo ? hi - lo : 0;
}

/*
 * Participant self, its part empty: steals half of what is left of the
 * part with the most left and makes it its own part. Returns false when
 * nothing is left to steal.
 */
static bool steal(struct loop *L, int self)
{
    struct part *mine = &L->part[self];
    for (;;) {
        /* Relaxed: a hint to stop searching; the indices themselves are
         * handed over under the parts' locks. */
        if (atomic_load_explicit(&L->remaining, memory_order_relaxed) == 0)
            return false;
        int victim = -1;
        unsigned long most = 0;
        for (int j = 0; j < L->parts; j++) {
            unsigned long left = j == self ? 0 : left_hint(&L->part[j]);
            if (left > most) {
                most = left;
                victim = j;
            }
        }
        if (victim < 0)
            return false;
        struct part *v = &L->part[victim];
        part_lock(v);
        /* Relaxed: hi is ours to change while we hold the lock; lo is the
         * owner's, read before and after the fence below. */
        unsigned long h = atomic_load_explicit(&v->hi, memory_order_relaxed);
        unsigned long lo = atomic_load_explicit(&v->lo, memory_order_relaxed);
        if (lo >= h) { /* emptied since the hint */
            part_unlock(v);
            continue;
        }
        unsigned long nh = h - (h - lo + 1) / 2;
        atomic_store_explicit(&v->hi, nh, memory_order_relaxed);
        /* The thief's side of the Dekker pair with take_grain(): after it, either
         * the owner sees nh or we see how far the owner got. */
        sf__fence_heavy();
        lo = atomic_load_explicit(&v->lo, memory_order_relaxed);
        if (lo > nh) {
            /* The owner may have taken offsets above nh: back off. */
            atomic_store_explicit(&v->hi, h, memory_order_relaxed);
            part_unlock(v);
            continue;
        }
        part_unlock(v);
        /* Our part was empty (decided under its lock by take_grain), so only
         * thieves look at it: they lock it, and read it under the lock. */
        part_lock(mine);
        atomic_store_explicit(&mine->lo, nh, memory_order_relaxed);
        atomic_store_explicit(&mine->hi, h, memory_order_relaxed);
        part_unlock(mine);
        return true;
    }
}

/* Has the loop stopped: failed (Failure), or reached by a cancellation,
 * which fails it with ECANCELED (Cancellation)? Asked before each grain. */
static inline bool loop_stopped(struct loop *L)
{
    if (sf__scope_stopped(&L->fail))
        return true;
    /* Relaxed: a hint; a cancellation this misses stops the next grain. */
    if (SF__LIKELY(atomic_load_explicit(&sf__cancel_asked, memory_order_relaxed) == 0) ||
        !sf__cancel_reaches(L->up, L->up_tag))
        return false;
    (void)sf__scope_fail(&L->fail, ECANCELED, NULL);
    return true;
}

/* The caller's lineage into L (Cancellation). */
static void loop_link(struct sf__thread *me, struct loop *L)
{
    sf_future *cur = sf__sched(me)->cur;
    L->up = cur != NULL ? cur->kids_up : NULL;
    L->up_tag = cur != NULL ? cur->kids_up_tag : 0;
}

/* Participant k's whole work: its part, then whatever it can steal, until
 * nothing is left or the loop stopped (Failure, Cancellation). */
static void participate(struct loop *L, int k)
{
    struct part *p = &L->part[k];
    for (;;) {
        unsigned long a, b, ran = 0;
        while (!loop_stopped(L) && take_grain(p, L->grain, &a, &b)) {
            run_grain(L, a, b);
            ran += b - a;
        }
        if (ran != 0)
            /* Relaxed: a count for the thieves' search (steal); what the
             * bodies wrote is published by the participants' futures. */
            atomic_fetch_sub_explicit(&L->remaining, ran, memory_order_relaxed);
        if (loop_stopped(L) || !steal(L, k))
            return;
    }
}

/* Drops a reference; the last one frees the loop, and the message of a
 * failure its caller did not take_grain (it returned another error: Lifetime).
 * acq_rel: every use of the loop by the other holders happens before the
 * free. */
static void loop_unref(struct loop *L)
{
    if (atomic_fetch_sub_explicit(&L->refs, 1, memory_order_acq_rel) == 1) {
        free(L->fail.msg);
        free(L);
    }
}

/* Participant k's work on `me`, its bodies under a frame of the loop's
 * failure scope that names the task running here now: the caller's own
 * (NULL when it runs none), or the participant's future. */
static void participate_in_scope(struct sf__thread *me, struct loop *L, int k)
{
    struct sf__scope_frame fr;
    sf__scope_push(me, &fr, &L->fail);
    participate(L, k);
    sf__scope_pop(me, &fr);
}

static void *participant_task(void *arg)
{
    struct part *p = arg;
    /* Relaxed: read by the caller after it sees our future DONE (acquire),
     * which our completion's release orders after this store. */
    atomic_store_explicit(&p->ran, 1, memory_order_relaxed);
    /* A task runs on a registered thread, with me->cur its future. */
    participate_in_scope(sf__thread_self(), p->loop, p->k);
    loop_unref(p->loop);
    return NULL;
}

/* The end of a loop whose every participant has ended: the code of its
 * failure, 0 if no body reported one; the failure's message becomes this
 * thread's (task_msg, lifecycle.h: freed at the next failure, at the
 * thread's exit, or at shutdown). */
static int loop_result(struct sf__thread *me, struct sf__scope *fail)
{
    /* Relaxed: every body ran on this thread or in a participant whose
     * future we got (acquire of its DONE) or found never run, so every
     * write to the scope happens before this read. */
    int code = atomic_load_explicit(&fail->code, memory_order_relaxed);
    if (code == 0)
        return 0;
    free(sf__entry(me)->task_msg);
    sf__entry(me)->task_msg = fail->msg;
    fail->msg = NULL;
    return code;
}

/* No loop structure (no memory, or one participant): the caller runs it,
 * under a scope of its own as the parts would be. */
static int run_alone(struct sf__thread *me, long from, unsigned long n, unsigned long g,
                     void (*body)(long, void *), void (*rbody)(long, long, void *), void *ctx)
{
    struct loop L = {.from = from, .grain = g, .body = body, .rbody = rbody, .ctx = ctx};
    sf__scope_init(&L.fail);
    loop_link(me, &L);
    struct sf__scope_frame fr;
    sf__scope_push(me, &fr, &L.fail);
    for (unsigned long a = 0, b; a < n && !loop_stopped(&L); a = b) {
        b = n - a > g ? a + g : n;
        run_grain(&L, a, b);
    }
    sf__scope_pop(me, &fr);
    int code = loop_result(me, &L.fail);
    if (code != 0) {
        errno = code;
        return -1;
    }
    return 0;
}

static int parallel_for(long from, long to, unsigned long grain, void (*body)(long, void *),
                        void (*rbody)(long, long, void *), void *ctx)
{
    unsigned long n = (unsigned long)to - (unsigned long)from;
    if (n == 0)
        return 0;
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return -1;
    /* Relaxed: a stale count only shapes the split (pool.h). */
    int threads = atomic_load_explicit(&sf__pool.workers, memory_order_relaxed) + 1;
    if (grain == 0) { /* about 1/64 of a participant's share */
        grain = n / ((unsigned long)threads * 64);
        if (grain == 0)
            grain = 1;
    }
    unsigned long grains = n / grain + (n % grain != 0);
    int parts = grains < (unsigned long)threads ? (int)grains : threads;
    struct loop *L = NULL;
    if (parts > 1)
        L = aligned_alloc(64, sizeof *L + (size_t)parts * sizeof L->part[0]);
    if (L == NULL)
        return run_alone(me, from, n, grain, body, rbody, ctx);
    L->from = from;
    L->grain = grain;
    L->body = body;
    L->rbody = rbody;
    L->ctx = ctx;
    L->parts = parts;
    sf__scope_init(&L->fail);
    loop_link(me, L);
    atomic_init(&L->remaining, n);
    atomic_init(&L->refs, parts); /* the caller and parts - 1 tasks */
    /* The static split, in whole grains. Written before the tasks that read
     * it are queued: sf_do's push publishes them (release). */
    unsigned long per = grains / (unsigned long)parts, extra = grains % (unsigned long)parts;
    unsigned long at = 0;
    for (int k = 0; k < parts; k++) {
        unsigned long len = (per + ((unsigned long)k < extra)) * grain;
        unsigned long end = n - at < len ? n : at + len;
        struct part *p = &L->part[k];
        atomic_init(&p->lo, at);
        atomic_init(&p->hi, end);
        atomic_init(&p->lock, 0);
        atomic_init(&p->ran, 0);
        p->loop = L;
        p->k = k;
        at = end;
    }
    /* The loop's own closed region (get.c, Isolation): its participants
     * and whatever bodies make are stamped with it (sf_do), this thread
     * helps only with them until the loop ends, and helpers outside the
     * loop never take them. */
    uint32_t outer_region = sf__sched(me)->region;
    sf__sched(me)->region = sf__region_new_closed();
    int made = 0;
    while (made < parts - 1 &&
           (L->part[made + 1].task = sf_do(participant_task, &L->part[made + 1])) != NULL)
        made++;
    for (int k = made + 1; k < parts; k++)
        loop_unref(L); /* never made: their parts are drained by thieves */
    /* A loop is a get: submit, and publish so that an idle worker can take
     * a participant without asking for it. */
    sf__get_submit(me, sf__trace_on);
    if (sf__pending_publish(&me->q))
        sf__pool_notify();
    participate_in_scope(me, L, 0);
    int err = 0;
    for (int k = 1; k <= made; k++) {
        sf_future *f = L->part[k].task;
        int rc = sf_wait(f, NULL);
        if (rc != 0 && sf_is_done(f) != 1) {
            /* The get could not run it (no stack, no thread) or closed a
             * cycle. If it has not started, it never will, and its part is
             * empty: our search drained it. If it runs, it keeps the loop
             * (Lifetime) and its indices may not all be done. */
            if (sf_cancel(f) == 0 && sf_is_done(f) != 1 && err == 0)
                err = rc;
        } else if (rc != 0 && rc != ECANCELED && err == 0) {
            /* No body fails its participant (Failure): one ends failed
             * only as cancelled, which loses no index here. Anything else
             * is passed on. */
            err = rc;
        }
        /* Acquire through sf_is_done: a DONE task's store of ran is
         * visible. A task that never ran leaves its reference to us. */
        if (sf_is_done(f) == 1 && !atomic_load_explicit(&L->part[k].ran, memory_order_relaxed))
            loop_unref(L);
        sf_release(f);
    }
    sf__sched(me)->region = outer_region;
    /* A participant still running (err) may yet fail the loop: its scope
     * is read only once every participant has ended. */
    if (err == 0)
        err = loop_result(me, &L->fail);
    loop_unref(L);
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

SF_EXPORT int sf_for(long from, long to, void (*body)(long i, void *ctx), void *ctx)
{
    if (body == NULL || to < from) {
        errno = EINVAL;
        return -1;
    }
    SF__OUTERMOST("sf_for", int, sf_for(from, to, body, ctx)); /* registry.h, Calls in flight */
    return parallel_for(from, to, 1, body, NULL, ctx);
}

SF_EXPORT int sf_for_range(long from, long to, long grain,
                           void (*body)(long lo, long hi, void *ctx), void *ctx)
{
    if (body == NULL || to < from || grain < 0) {
        errno = EINVAL;
        return -1;
    }
    SF__OUTERMOST("sf_for_range", int, sf_for_range(from, to, grain, body, ctx));
    return parallel_for(from, to, (unsigned long)grain, NULL, body, ctx);
}
