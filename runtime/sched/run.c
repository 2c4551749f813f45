/*
 * run.c - the out-of-line copy of sf__run (run.h) for the runners
 * that are not a get of the task's own future, for outermost tasks (timed),
 * and for batch tasks (run with a frame naming their batch).
 */
#include "sched/run.h"

#include <errno.h>
#include <stdlib.h>

static _Atomic uint32_t last_region;

uint32_t sf__region_new(void)
{
    /* Relaxed: only uniqueness matters. 0 means "none", and the flags are
     * the caller's to add: a wrap skips 0. */
    uint32_t r;
    do
        r = (atomic_fetch_add_explicit(&last_region, 1, memory_order_relaxed) + 1) &
            (SF__REGION_SOFT - 1);
    while (r == 0);
    return r;
}

void *sf__run_in_region(struct sf__thread *me, sf_future *f, void *arg, uint32_t region)
{
    uint32_t outer = sf__sched(me)->region;
    if (region == SF__REGION_PLAIN) {
        /* Made by plain code: the root of a region of its own from now on,
         * so that a plain-code wait for it helps with its descendants only
         * (get.c, Plain code's waits). Soft: it only labels them - unless
         * this thread helps within a region, which this task, run inside
         * it, joins. Relaxed: the getters that read it treat an old value
         * as "no region yet" and look again. */
        uint32_t within = sf__region_helps(outer, sf__sched(me)->outer_help);
        if (within != 0) {
            region = within;
        } else {
            region = sf__region_new() | SF__REGION_SOFT;
            atomic_store_explicit(&f->region, region | SF__REGION_ROOT, memory_order_relaxed);
        }
    }
    sf__sched(me)->region = region & ~SF__REGION_ROOT;
    void *r = f->u.fn(arg);
    sf__sched(me)->region = outer;
    return r;
}

void *sf__run_failed(struct sf__thread *me, sf_future *f) { return sf__failure_take_message(me, f); }

void sf__run_cancelled(struct sf__thread *me, sf_future *f, uint64_t claimed)
{
    /* A batch task's batch, read before DONE: afterwards f may be recycled
     * (the batch stays until this task is accounted for). */
    struct sf_batch *b = sf__is_batch_task(claimed) ? sf__batch_of(claimed) : NULL;
    /* It never runs: the trace says so, as for a release before the start
     * (a task queued and neither run nor discarded is a fault of the trace,
     * which sftrace --check reports). */
    if (me != NULL)
        SF__TRACE(me, DISCARD, claimed, 0);
    /* Relaxed, both: published by the exchange of DONE below. */
    atomic_store_explicit(&f->fail_code, ECANCELED, memory_order_relaxed);
    __atomic_store_n(&f->msg, NULL, __ATOMIC_RELAXED);
    /* SEEN: a cancellation is no failure to report; its canceller knows. */
    uint64_t done = sf__with_status(claimed, SF__DONE) | SF__FAILED | SF__SEEN;
    /* acq_rel, as in sf__run: the future may have been orphaned since the
     * claim, and getters may be asleep on it; a CAS, to close its watch
     * list first (after.h). */
    uint64_t old = atomic_load_explicit(&f->state, memory_order_relaxed);
    uintptr_t watch = 0;
    bool closed = false;
    do
        sf__after_closing(f, old, &watch, &closed);
    while (!atomic_compare_exchange_weak_explicit(&f->state, &old, done, memory_order_acq_rel,
                                                  memory_order_relaxed));
    SF__ASSERT_TRANSITION(old, done);
    if (me != NULL)
        SF__BUMP(sf__sched(me)->c_cancelled);
    if (old & SF__ORPHAN) {
        if (me != NULL) {
            sf__future_put(&me->free, f, done);
        } else {
            atomic_store_explicit(&f->state, SF__FREE, memory_order_relaxed);
            sf__future_free_shared(f);
        }
    } else if (atomic_load_explicit(&f->waiters, memory_order_relaxed) != 0) {
        /* Relaxed: as in sf__run, after the exchange (a full barrier). */
        sf__futex_wake(sf__future_futex(f), INT_MAX);
    }
    if (watch != 0)
        sf__after_fire(watch);
    /* After DONE: a batch waiter that returns sees this future done. */
    if (b != NULL)
        sf__batch_finished(b);
}

void sf__run_orphan_failed(struct sf__thread *me, sf_future *f, uint64_t done)
{
    if (!(done & SF__SEEN)) {
        /* The hook may call libsf. If no task encloses this one here, the
         * thread runs none now (me->cur is back to NULL) while its red line
         * is still the task's (sf__run_outermost restores it after the
         * completion): raised for the hook, as for any thread that runs no
         * task, so that its gets take the slow path (run.h, the fast
         * path's invariant). */
        uintptr_t red = sf__sched(me)->stack_red;
        if (sf__sched(me)->cur == NULL)
            sf__sched(me)->stack_red = UINTPTR_MAX;
        /* Relaxed: this thread wrote both just now. */
        sf__failure_report((int)atomic_load_explicit(&f->fail_code, memory_order_relaxed),
                           f->msg, f->u.fn);
        sf__sched(me)->stack_red = red;
    }
    free(f->msg);
}

uint64_t sf__run_outermost(struct sf__thread *me, sf_future *f, uint64_t claimed,
                           enum sf__how how, bool traced, bool batch)
{
    /* The clock is read before the claim's task starts and after its
     * completion is published: the task's whole time, and its nested ones',
     * and no more than two reads per outermost task. Less this thread's
     * sleeps meanwhile (thread.h, Sleep time): each lies within the two
     * reads, so the difference is never negative. Relaxed: our own
     * counter. */
    uint64_t t0 = sf__now_ns();
    uint64_t slept = atomic_load_explicit(&sf__sched(me)->c_asleep_ns, memory_order_relaxed);
    /* A task runs here now: gets in it may take the fast path (run.h). */
    sf__sched(me)->stack_red = sf__sched(me)->stack_red_task;
    /* batch stays a variable here: one branch, off the fast path. */
    enum sf__run_kind kind = batch ? SF__RUN_BATCH : SF__RUN_QUEUED;
    uint64_t done = traced ? sf__run_body(me, f, claimed, how, true, NULL, kind).done
                           : sf__run_body(me, f, claimed, how, false, NULL, kind).done;
    sf__sched(me)->stack_red = UINTPTR_MAX;
    slept = atomic_load_explicit(&sf__sched(me)->c_asleep_ns, memory_order_relaxed) - slept;
    uint64_t ran = sf__now_ns() - t0;
    SF__ADD(sf__sched(me)->c_busy_ns, ran > slept ? ran - slept : 0);
    return done;
}

/* A batch task runs with a frame naming its batch on this thread's list
 * (sf_batch_wait's EDEADLK, batch.h). */
static __attribute__((noinline)) void run_batch_task(struct sf__thread *me, sf_future *f,
                                                     uint64_t claimed, enum sf__how how)
{
    struct sf__batch_frame frame = {sf__batch_of(claimed), sf__batch_frames};
    sf__batch_frames = &frame;
    if (SF__UNLIKELY(sf__trace_on))
        (void)sf__run(me, f, claimed, how, true, true);
    else
        (void)sf__run(me, f, claimed, how, false, true);
    sf__batch_frames = frame.next;
}

void sf__run_claimed(struct sf__thread *me, sf_future *f, uint64_t claimed, enum sf__how how)
{
    /* While a cancellation is in effect (cancel.h), a task that one reaches
     * never starts: it completes cancelled, its getters see ECANCELED. Not
     * a light task: each runs exactly once, and hears of the cancellation
     * through sf_cancelled() (light.h), wherever it runs. The
     * fork-join fast paths leave to here then (SF__WANT_CHECK). Relaxed: a
     * cancellation this misses is heard at the task's first
     * sf_cancelled(). */
    if (SF__UNLIKELY(atomic_load_explicit(&sf__cancel_asked, memory_order_relaxed) != 0) &&
        f->u.fn != sf__light_task_fn && sf__cancel_reaches_task(f)) {
        sf__run_cancelled(me, f, claimed);
        return;
    }
    if (SF__UNLIKELY(sf__is_batch_task(claimed)))
        run_batch_task(me, f, claimed, how);
    else if (SF__UNLIKELY(sf__trace_on))
        (void)sf__run(me, f, claimed, how, true, false);
    else
        (void)sf__run(me, f, claimed, how, false, false);
}
