/*
 * run.h - the one path that runs a claimed task and completes its
 * future. Every runner goes through sf__run: a get of the future itself
 * (SF__HOW_INLINE, or WAIT_INLINE off the fast path), an idle pool worker
 * (POOL), a blocked get helping (STEAL), the drain at shutdown (DRAIN), a
 * sf_batch_wait helping its batch (WAIT).
 *
 * Completion has two cases, chosen by who runs the task:
 *  - INLINE: the runner is inside sf_get() of this very future, so the
 *    caller's reference is alive and no sf_release() can race (sf.h: release
 *    after every get returned). A release store of DONE suffices.
 *  - any other runner: the owner may release the future at any moment, so the
 *    runner publishes DONE with an exchange, which also tells it whether the
 *    future was orphaned meanwhile (then the runner frees it).
 * Either way, getters asleep on the future are found through f->waiters with
 * the asymmetric Dekker pair of platform.h: the runner's light fence (or the
 * exchange, a full barrier) here, the sleeper's heavy fence in get.c.
 *
 * A batch task (batch.h) completes by the exchange whoever runs it, then its
 * batch's accounting. Batch tasks never take the
 * fork-join fast path (they are in no thread's queue, so sf__get's
 * sf__pending_holds test fails), so only sf__run_claimed (and
 * sf__run_outermost, where it passes the flag on) runs a batch task, and the
 * fast path's copy carries no trace of it.
 */
#ifndef SF_RUN_H
#define SF_RUN_H

#include <limits.h>

#include "sched/after.h"
#include "sched/batch.h"
#include "sched/light.h"
#include "registry/cancel.h"

/* The out-of-line copy, for runners off the fork-join fast path. */
void sf__run_claimed(struct sf__thread *me, sf_future *f, uint64_t claimed, enum sf__how how);

/* Runs f's function on arg with me->region set to `region` (less
 * SF__REGION_ROOT, which only f carries), then restores it. A task made by
 * plain code (SF__REGION_PLAIN) opens a region of its own here (pending.h,
 * Regions; get.c, Plain code's waits). */
void *sf__run_in_region(struct sf__thread *me, sf_future *f, void *arg, uint32_t region);
/* A new region number (pending.h, Regions): below SF__REGION_SOFT, not 0. */
uint32_t sf__region_new(void);
/* The completion of a task that failed (f's state has FAILED): its message,
 * which becomes f's val. */
void *sf__run_failed(struct sf__thread *me, sf_future *f);
/* Completes f, which `me` (NULL: a thread without a struct) claimed from
 * PENDING as `claimed`, as cancelled without running it. */
void sf__run_cancelled(struct sf__thread *me, sf_future *f, uint64_t claimed);
/* An orphan that failed: nobody can see it now, so it is reported. */
void sf__run_orphan_failed(struct sf__thread *me, sf_future *f, uint64_t done);

/* sf__run of a task that no other task encloses on this thread (me->cur is
 * NULL): the same, timed into sf__sched(me)->c_busy_ns less the thread's
 * sleeps meanwhile (run.c). */
uint64_t sf__run_outermost(struct sf__thread *me, sf_future *f, uint64_t claimed,
                           enum sf__how how, bool traced, bool batch);

/* What sf__run_body runs: a task of a thread's queue, of a batch, or a
 * local future its maker claimed (future.h, Tasks in caller storage: no
 * other thread ever reads it, so nobody follows its runner or sleeps on
 * it, and its completion is a plain store). */
enum sf__run_kind { SF__RUN_QUEUED, SF__RUN_BATCH, SF__RUN_LOCAL };

/* What sf__run_body returns: the DONE state it stored, and the task's value
 * (a fast path returns it without reading f->val back; a failed task's is
 * its message). */
struct sf__ran {
    uint64_t done;
    void *val;
};

/* sf__run's body; `outer` is me->cur, which the caller read. */
static inline __attribute__((always_inline)) struct sf__ran
sf__run_body(struct sf__thread *me, sf_future *f, uint64_t claimed, enum sf__how how,
             bool traced, sf_future *outer, enum sf__run_kind kind)
{
    bool batch = kind == SF__RUN_BATCH, local = kind == SF__RUN_LOCAL;
    switch ((int)how) {
    case SF__HOW_INLINE:
    case SF__HOW_WAIT_INLINE: SF__BUMP(sf__sched(me)->c_inline); break;
    case SF__HOW_POOL: SF__BUMP(sf__sched(me)->c_pool); break;
    case SF__HOW_STEAL: SF__BUMP(sf__sched(me)->c_stolen); break;
    case SF__HOW_DRAIN: SF__BUMP(sf__sched(me)->c_drained); break;
    case SF__HOW_WAIT: SF__BUMP(sf__sched(me)->c_stolen); break; /* sf_stats: run_stolen */
    default: break;
    }
    SF__ASSERT(sf__status(claimed) == SF__RUNNING, "a task runs with the state its claim left");
    if (traced)
        sf__trace_start(me, claimed, how, sf__light_trace_fn(f));
    sf__witness_assert_none("a task starts");
    sf__sched(me)->cur = f;
#if defined(__SANITIZE_THREAD__)
    sf__sched(me)->depth++;
#endif
    /* The task's region is this thread's while it runs: what it makes
     * belongs to the region too, and its gets help only within it. Usually
     * it is the region already here; a switch goes out of line, keeping
     * the fork-join path free of a save and restore. Relaxed: written
     * before the claim we hold (push's release, or our own store). */
    uint32_t region = atomic_load_explicit(&f->region, memory_order_relaxed);
    void *arg = f->val;
    /* While it runs, runner names the fiber it runs on, for getters that
     * follow a chain of waits (get.c, Deadlock). Relaxed: they accept only
     * a pointer that is a registered thread's fiber, and check the chain
     * twice. */
    if (!local)
        __atomic_store_n(&f->runner, (void *)sf__sched(me)->fiber, __ATOMIC_RELAXED);
    void *r = SF__LIKELY(region == sf__sched(me)->region) ? f->u.fn(arg)
                                               : sf__run_in_region(me, f, arg, region);
    sf__sched(me)->cur = outer;
#if defined(__SANITIZE_THREAD__)
    sf__sched(me)->depth--;
#endif
    /* Trace before publishing: once DONE is visible the future may be
     * recycled, so only the local copy of its state names it afterwards. */
    if (traced)
        sf__trace_event(me, SF__EV_FDONE, claimed, 0);
    uint64_t done = sf__with_status(claimed, SF__DONE);
    /* Relaxed: FAILED (and SEEN with it) is set only by this thread, in
     * the task (sf_fail, sf_cancelled); others add only CANCEL or ORPHAN. */
    uint64_t now = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (SF__UNLIKELY(now & SF__FAILED)) {
        done |= now & (SF__FAILED | SF__SEEN);
        r = sf__run_failed(me, f); /* the message (msg); fail_code is set */
    }
    /* Read before DONE (f may be recycled after it); the batch stays until
     * this task is accounted for below (batch.h, Accounting). */
    struct sf_batch *b = batch ? sf__batch_of(done) : NULL;
    bool orphan = false;
    /* Relaxed: published by the release (or exchange) of DONE below. */
    __atomic_store_n(&f->val, r, __ATOMIC_RELAXED);
    /* A batch task publishes by exchange whoever runs it, as a runner
     * other than its get does: its handle's holder may release it at any
     * moment (a worker or a batch wait may be running it). */
    if (local) {
        SF__ASSERT_TRANSITION(atomic_load_explicit(&f->state, memory_order_relaxed), done);
        /* Relaxed: read by this thread alone; nobody sleeps on it. */
        atomic_store_explicit(&f->state, done, memory_order_relaxed);
        return (struct sf__ran){done, r};
    }
    bool inline_done = !batch && (how == SF__HOW_INLINE || how == SF__HOW_WAIT_INLINE);
    uintptr_t watch = 0;
    if (inline_done) {
        SF__ASSERT_TRANSITION(atomic_load_explicit(&f->state, memory_order_relaxed), done);
        /* Release: getters that load DONE (acquire) see val. A WATCHED
         * flag goes with this store: its makers raised waiters too
         * (after.h, Who closes). */
        atomic_store_explicit(&f->state, done, memory_order_release);
        /* Dekker with a sleeping getter (get.c) and with a continuation's
         * maker (after.c): light fence here, heavy fence there; one of us
         * sees the other's write. */
        sf__fence_light();
    } else {
        /* A CAS, not an exchange: continuations that wait for f (WATCHED)
         * have their list closed before DONE (after.h). acq_rel: release
         * publishes val; acquire takes over a future that sf_release()
         * orphaned, to free it. */
        uint64_t old = atomic_load_explicit(&f->state, memory_order_relaxed);
        bool closed = false;
        do
            sf__after_closing(f, old, &watch, &closed);
        while (!atomic_compare_exchange_weak_explicit(&f->state, &old, done, memory_order_acq_rel,
                                                      memory_order_relaxed));
        SF__ASSERT_TRANSITION(old, done);
        if (old & SF__ORPHAN) {
            /* Nobody holds it and nobody may get it: ours to free. */
            if (SF__UNLIKELY(done & SF__FAILED))
                sf__run_orphan_failed(me, f, done);
            sf__future_put(&me->free, f, done);
            orphan = true;
        }
    }
    /* Relaxed: ordered by the fence (or the exchange, a full barrier) above
     * against the sleeper's heavy fence. After DONE the owner may already
     * have recycled f; then this reads another incarnation's count and at
     * worst wakes its sleepers spuriously (they recheck), which type-stable
     * memory makes safe. */
    if (!orphan && SF__UNLIKELY(atomic_load_explicit(&f->waiters, memory_order_relaxed) != 0)) {
        if (inline_done)
            sf__after_inline_done(f, done); /* wakes, and fires a watch list */
        else
            sf__futex_wake(sf__future_futex(f), INT_MAX);
    }
    /* After DONE: a continuation's fn may get f at once. */
    if (SF__UNLIKELY(watch != 0))
        sf__after_fire(watch);
    /* Accounted after DONE: sf_batch_wait's return means every future of
     * the batch reads done. */
    if (batch)
        sf__batch_finished(b);
    return (struct sf__ran){done, r};
}

/*
 * Runs the task of f, which `me` claimed (its state is `claimed`, RUNNING),
 * and completes f. `how`, `traced` and `batch` are constants at every call
 * site, so each copy keeps only its own branches; traced is sf__trace_on or
 * false, batch is sf__is_batch_task(claimed) (only sf__run_claimed passes
 * true). No runtime lock may be held (debug.h checks). Returns the DONE state it
 * stored (FAILED tells a failure).
 *
 * Busy time (sf.h, sf_thread_stats.busy_ns) is the time a thread spends
 * inside tasks, awake: only an outermost execution - one that no other
 * task encloses on this thread (me->cur NULL) - is timed, from before its
 * start to after its completion, and everything nested in it (its gets, the
 * tasks they run, their waits) lies within; the thread's sleeps meanwhile
 * (thread.h, Sleep time) are taken out. A thread's first task, a worker's
 * every take, a foreign thread's outermost get go out of line here.
 *
 * The fork-join fast path (get.h) does not come here: it calls
 * sf__run_body directly, and pays nothing for busy time, not even a
 * branch. It is taken only by a get that passes sf__stack_room, and a
 * thread that runs no task has stack_red UINTPTR_MAX (thread.h), which
 * fails it: its gets go through sf__get_slow, then sf__run_claimed, then
 * here. sf__run_outermost lowers stack_red to the real red line while the
 * task runs and raises it again after. So the invariant the fast path
 * rests on: whenever sf__stack_room(me) is true, me->cur is not NULL.
 */
static inline __attribute__((always_inline)) uint64_t
sf__run(struct sf__thread *me, sf_future *f, uint64_t claimed, enum sf__how how, bool traced,
        bool batch)
{
    sf_future *outer = sf__sched(me)->cur;
    if (SF__UNLIKELY(outer == NULL))
        return sf__run_outermost(me, f, claimed, how, traced, batch);
    return sf__run_body(me, f, claimed, how, traced, outer,
                        batch ? SF__RUN_BATCH : SF__RUN_QUEUED)
        .done;
}

#endif /* SF_RUN_H */
