/*
 * batches.c - the public entry points of fair batches
 * (sf_batch_new, sf_batch_do, sf_batch_wait, sf_batch_close). The batches
 * themselves, their fairness and their accounting are batch.h's; here the
 * arguments are checked, the call begun when it comes from outside libsf
 * (registry.h, Calls in flight), the calling thread found (starting the
 * runtime if needed), the pool told of additions, and sf_batch_wait helps.
 */
#include "api/lifecycle.h"
#include "sched/idle_hook.h"
#include "sched/get.h"

#include <errno.h>

#define SPIN_ROUNDS 64     /* sf_batch_wait: looks for work with pauses ... */
#define NAP_MIN_NS 200000L /* ... then sleeps, doubling up to NAP_MAX_NS */
#define NAP_MAX_NS 20000000L

SF_EXPORT sf_batch *sf_batch_new(void)
{
    SF__OUTERMOST("sf_batch_new", sf_batch *, sf_batch_new());
    if (sf__enter() == NULL)
        return NULL;
    return sf__batch_new();
}

SF_EXPORT sf_future *sf_batch_do(sf_batch *b, void *(*fn)(void *), void *arg)
{
    if (b == NULL || fn == NULL) {
        errno = EINVAL;
        return NULL;
    }
    SF__OUTERMOST("sf_batch_do", sf_future *, sf_batch_do(b, fn, arg));
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return NULL;
    sf_future *f = sf__future_alloc(&me->free);
    if (f == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    f->u.fn = fn;
    /* Atomic (relaxed), as in sf_do; the add's release store publishes it. */
    __atomic_store_n(&f->val, arg, __ATOMIC_RELAXED);
    /* A batch task belongs to no isolation region: the batch is its own
     * unit, served by whoever takes from it. Relaxed: as val. */
    atomic_store_explicit(&f->region, 0, memory_order_relaxed);
    SF__BUMP(sf__sched(me)->c_created); /* before the add, as in sf_do */
    uint64_t s;
    int e = sf__batch_push(me, b, f, &s);
    if (e != 0) {
        atomic_store_explicit(&sf__sched(me)->c_created,
                              SF__OWN_LOAD(&sf__sched(me)->c_created) - 1, memory_order_relaxed);
        sf__future_unalloc(&me->free, f);
        errno = e;
        return NULL;
    }
    /* Eager: the task is submitted now; a sleeping worker must hear of it
     * (the adder's half of the sleep protocol, batch.h and pool.h). */
    sf__pool_notify();
    return f;
}

/* sf_batch_wait until deadline_ns (sf__now_ns; UINT64_MAX: none), from
 * within a call: 0, or -1 with errno. */
static int batch_wait_until(sf_batch *b, uint64_t deadline_ns)
{
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return -1;
    /* A task of b running on this thread, at any depth, cannot finish
     * before this wait returns: waiting would hang. */
    for (struct sf__batch_frame *fr = sf__batch_frames; fr != NULL; fr = fr->next)
        if (fr->b == b) {
            errno = EDEADLK;
            return -1;
        }
    /* Running b's pending tasks here is what makes this wait return at any
     * SF_THREADS (1 included): like a get running its own task, it needs no
     * worker. A task of b running elsewhere is on its runner's stack, which
     * completes it (deadlock freedom of gets, get.c); we sleep meanwhile,
     * woken by an add (work for us) or by the last completion. With a
     * deadline (sf_batch_wait_for) no task starts here at all (get.c, Timed
     * gets): the pool runs them, and the wait returns late only by a parked
     * fiber resumed below and a wake-up. */
    bool timed = deadline_ns != UINT64_MAX;
    /* A timed wait's parked fibers (park.c, Order of resumption): only one
     * whose wait is over goes on; this one yields to it (the batch is no
     * future to park on) and looks again when it gets the thread back. */
    static const struct sf__park_until until = {NULL, NULL, 0, UINT64_MAX};
    unsigned rounds = 0;
    long nap = NAP_MIN_NS;
    for (;;) {
        uint64_t claimed;
        sf_future *f = NULL;
        /* With a deadline nothing runs here (get.c, Timed gets): the
         * batch's tasks are eager, the pool takes them. */
        if (!timed)
            f = sf__batch_take_from(b, &claimed);
        if (f != NULL) {
            /* Past a shutdown's deadline no task starts here either
             * (sf_shutdown_timeout; pool.h): claimed after it, so not
             * started, and completed as cancelled. */
            if (SF__UNLIKELY(sf__pool_past_deadline())) {
                sf__pool_shed(me, f, claimed);
            } else {
                /* Plain code's wait: this thread helps, in the task, with
                 * its own descendants only, as under plain code's get
                 * (get.c, Plain code's waits). Relaxed: f is ours; read on
                 * this thread. */
                if (sf__sched(me)->cur == NULL) {
                    uint32_t r = sf__region_new() | SF__REGION_SOFT;
                    atomic_store_explicit(&f->region, r | SF__REGION_ROOT, memory_order_relaxed);
                    sf__sched(me)->outer_help = r;
                }
                sf__run_claimed(me, f, claimed, SF__HOW_WAIT);
            }
            rounds = 0;
            nap = NAP_MIN_NS;
            continue;
        }
        if (sf__batch_outstanding(b) == 0)
            return 0;
        uint64_t now = timed ? sf__now_ns() : 0;
        if (timed && now >= deadline_ns) {
            SF__BUMP(sf__sched(me)->c_timeouts);
            SF__TRACE(me, BATCH_TIMEOUT, 0, 0);
            errno = ETIMEDOUT;
            return -1;
        }
        /* A task of b may be parked on another fiber of this thread (a get
         * helped with it): it goes on only here, while we wait (park.c). */
        if (sf__park_any(me) && (timed ? sf__park_resume_done(me, &until)
                                       : sf__park_resume_ready(me, NULL))) {
            rounds = 0;
            nap = NAP_MIN_NS;
            continue;
        }
        /* The idle hook, as a get calls it (get.c, spin_yield_sleep). */
        int hook = sf__idle_poll();
        if (hook == SF__HOOK_PROGRESS) {
            rounds = 0;
            nap = NAP_MIN_NS;
            continue;
        }
        if (rounds < SPIN_ROUNDS) {
            rounds++;
            for (int i = 0; i < 16; i++)
                sf__pause();
            continue;
        }
        /* With fibers parked, look at them again soon: their futures
         * complete without waking us. */
        long n = sf__park_any(me) && nap > SF__PARKED_NAP_NS ? SF__PARKED_NAP_NS : nap;
        if (hook == SF__HOOK_WAITING && n > SF__HOOK_NAP_NS)
            n = SF__HOOK_NAP_NS; /* called again within it (sf.h) */
        if (timed && (uint64_t)n > deadline_ns - now)
            n = (long)(deadline_ns - now); /* >= 1: a sleep, not "no limit" */
        sf__batch_sleep(me, b, n);
        sf__hang_napped(me, SF__HANG_BATCH, b, 0); /* SF_HANG_REPORT (hang.h) */
        nap = nap * 2 > NAP_MAX_NS ? NAP_MAX_NS : nap * 2;
    }
}

SF_EXPORT int sf_batch_wait(sf_batch *b)
{
    if (b == NULL) {
        errno = EINVAL;
        return -1;
    }
    SF__OUTERMOST("sf_batch_wait", int, sf_batch_wait(b));
    return batch_wait_until(b, UINT64_MAX);
}

/* sf_batch_wait_for with its deadline, which counts from the call. */
static int batch_wait_for_entry(sf_batch *b, uint64_t deadline_ns)
{
    SF__OUTERMOST("sf_batch_wait_for", int, batch_wait_for_entry(b, deadline_ns));
    return batch_wait_until(b, deadline_ns);
}

SF_EXPORT int sf_batch_wait_for(sf_batch *b, double seconds)
{
    if (b == NULL || !(seconds >= 0)) { /* NaN too */
        errno = EINVAL;
        return -1;
    }
    return batch_wait_for_entry(b, sf__deadline_ns(seconds));
}

SF_EXPORT void sf_batch_close(sf_batch *b)
{
    if (b == NULL)
        return;
    SF__OUTERMOST_VOID("sf_batch_close", sf_batch_close(b));
    sf__batch_close(b);
}
