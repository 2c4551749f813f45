/*
 * run.c - layer 4: the out-of-line copy of sf__run (run.h) for the runners
 * that are not a get of the task's own future.
 */
#include "run.h"

#include <errno.h>
#include <stdlib.h>

void *sf__run_in_region(struct sf__thread *me, sf_future *f, void *arg, uint32_t region)
{
    uint32_t outer = me->region;
    me->region = region;
    void *r = f->u.fn(arg);
    me->region = outer;
    return r;
}

void *sf__run_failed(struct sf__thread *me, sf_future *f) { return sf__failure_take_message(me, f); }

void sf__run_cancelled(struct sf__thread *me, sf_future *f, uint64_t claimed)
{
    /* Relaxed, both: published by the exchange of DONE below. */
    atomic_store_explicit(&f->region, ECANCELED, memory_order_relaxed);
    __atomic_store_n(&f->val, NULL, __ATOMIC_RELAXED);
    /* SEEN: a cancellation is no failure to report; its canceller knows. */
    uint64_t done = sf__with_status(claimed, SF__DONE) | SF__FAILED | SF__SEEN;
    /* acq_rel, as in sf__run: the future may have been orphaned since the
     * claim, and getters may be asleep on it. */
    uint64_t old = atomic_exchange_explicit(&f->state, done, memory_order_acq_rel);
    SF__ASSERT_TRANSITION(old, done);
    if (me != NULL)
        SF__BUMP(me->c_cancelled);
    if (old & SF__ORPHAN) {
        if (me != NULL) {
            sf__future_put(&me->free, f, done);
        } else {
            atomic_store_explicit(&f->state, SF__FREE, memory_order_relaxed);
            sf__future_free_shared(f);
        }
        return;
    }
    /* Relaxed: as in sf__run, after the exchange (a full barrier). */
    if (atomic_load_explicit(&f->waiters, memory_order_relaxed) != 0)
        sf__futex_wake(sf__future_futex(f), INT_MAX);
}

void sf__run_orphan_failed(struct sf__thread *me, sf_future *f, uint64_t done)
{
    (void)me;
    if (!(done & SF__SEEN))
        /* Relaxed: this thread wrote both just now. */
        sf__failure_report((int)atomic_load_explicit(&f->region, memory_order_relaxed),
                           f->val, f->u.fn);
    free(f->val);
}

uint64_t sf__run_outermost(struct sf__thread *me, sf_future *f, uint64_t claimed,
                           enum sf__how how, bool traced)
{
    /* The clock is read before the claim's task starts and after its
     * completion is published: the task's whole time, and its nested ones',
     * and no more than two reads per outermost task. */
    uint64_t t0 = sf__now_ns();
    /* A task runs here now: gets in it may take the fast path (run.h). */
    me->stack_red = me->stack_red_task;
    uint64_t done = traced ? sf__run_body(me, f, claimed, how, true, NULL)
                           : sf__run_body(me, f, claimed, how, false, NULL);
    me->stack_red = UINTPTR_MAX;
    SF__ADD(me->c_busy_ns, sf__now_ns() - t0);
    return done;
}

void sf__run_claimed(struct sf__thread *me, sf_future *f, uint64_t claimed, enum sf__how how)
{
    if (SF__UNLIKELY(sf__trace_on))
        (void)sf__run(me, f, claimed, how, true);
    else
        (void)sf__run(me, f, claimed, how, false);
}
