/*
 * get.h - sf_get's work once the caller has its thread struct: the
 * fork-join fast path inline, everything else in get.c (whose top comment
 * holds the deadlock-freedom argument).
 */
#ifndef SF_GET_H
#define SF_GET_H

#include "sched/hang.h"
#include "sched/pool.h"
#include "sched/run.h"

/* The rest of a get (below), or all of an isolated one (Isolation). */
void *sf__get_slow(struct sf__thread *me, sf_future *f, bool isolated);
/* A timed get of f, which runs no task here (get.c, Timed gets): 0 once f
 * is DONE; ETIMEDOUT when it is not by deadline_ns (sf__now_ns, finite);
 * EDEADLK or EINVAL. The caller submitted first. */
int sf__get_until(struct sf__thread *me, sf_future *f, uint64_t deadline_ns);
/* A task in state s (PENDING) is waited for by a timed wait, which will
 * not run it: offers it to the pool (get.c, Timed gets). */
void sf__get_offer(struct sf__thread *me, uint64_t s);
/* A get of f that leaves its outcome to the caller (no failure marked
 * seen, errno kept): 0 once f is DONE, else the errno a get fails with. */
int sf__get_wait(struct sf__thread *me, sf_future *f);
/* If f is PENDING, claims it and runs it here as a get would (step 3):
 * 0 (ran, or not PENDING: someone else has it), or a get's errno (no fresh
 * stack for it). */
int sf__get_run_pending(struct sf__thread *me, sf_future *f);
/* Takes one ready continuation (or a dep of one, after.h) and runs it
 * here: false if there was none. For waits that would otherwise wait for
 * work nobody runs (no pool worker). */
bool sf__get_run_ready(struct sf__thread *me);
/* A get's end on f, DONE with FAILED: marks the failure seen and returns
 * NULL with errno set to its code. */
void *sf__get_failed(sf_future *f);
/* A new closed region (pending.h, Regions; Isolation in get.c): a parallel loop's. */
uint32_t sf__region_new_closed(void);

/*
 * The caller's `want` (pending.h) is not 0: publishes its pending tasks if a
 * thief asked (and wakes workers), and drops SF__WANT_CHECK if no
 * cancellation is in effect any more (cancel.h). Returns true if the
 * caller's starts must still be checked: its get leaves the fork-join fast
 * path, whose claims are not checked.
 */
bool sf__get_answer(struct sf__thread *me);

/* sf__get_submit's second half: submits the caller's pending tasks,
 * publishes them too if a worker is idle, and tells idle workers. */
static inline __attribute__((always_inline)) void sf__get_submit_new(struct sf__thread *me,
                                                                    bool traced)
{
    uint64_t n = sf__pending_submit(&me->q);
    if (n != 0) {
        /* A worker is idle: publish now rather than make it ask through
         * `want` and wait for our next get, which may be a whole task away. */
        if (sf__pool_has_idle())
            sf__pending_publish(&me->q);
        if (traced)
            sf__trace_event(me, SF__EV_SUBMIT, n, 0);
        sf__pool_notify();
    }
}

/* At every get: answers `want` (sf__get_answer), then submits. */
static inline __attribute__((always_inline)) void sf__get_submit(struct sf__thread *me,
                                                                bool traced)
{
    /* Relaxed: a hint; a request missed now is seen at the next get. */
    if (SF__UNLIKELY(atomic_load_explicit(&me->q.want, memory_order_relaxed) != 0))
        (void)sf__get_answer(me);
    sf__get_submit_new(me, traced);
}

/* sf__get_submit for the waits of wait.c, which must stay real-time safe
 * (docs/realtime.md): answers a thief's request, but leaves a cancellation's
 * check bit (SF__WANT_CHECK) to the thread's next get, as settling it may
 * take a lock (cancel.c). The bit only makes starts checked, so leaving it
 * set is always safe. */
static inline __attribute__((always_inline)) void sf__get_submit_nolock(struct sf__thread *me,
                                                                       bool traced)
{
    if (SF__UNLIKELY(sf__pending_poll(&me->q)))
        sf__pool_notify();
    sf__get_submit_new(me, traced);
}

/*
 * The result of f, whose state the caller read as s (acquire, not DONE
 * unless traced). `traced` is a constant at each call site: the untraced copy
 * carries no trace test at all.
 *
 * The fast path of fork-join code: f is the caller's newest pending task,
 * usually private. Claim it (plain stores when private: no atomic
 * read-modify-write, no fence), drop its slot, run it here.
 */
static inline __attribute__((always_inline)) void *sf__get(struct sf__thread *me, sf_future *f,
                                                           uint64_t s, bool traced)
{
    if (traced && sf__status(s) == SF__DONE) { /* the untraced caller returns DONE itself */
        sf__trace_event(me, SF__EV_GET, s, 0);
        return sf__done_ok(s) ? f->val : sf__get_failed(f);
    }
    if (traced)
        sf__trace_event(me, SF__EV_GSTART, s, 0);
    /* sf__get_submit, with a way out: while a cancellation is in effect
     * (cancel.h) the task must not start here unchecked. Relaxed: as there. */
    if (SF__UNLIKELY(atomic_load_explicit(&me->q.want, memory_order_relaxed) != 0) &&
        sf__get_answer(me)) {
        sf__get_submit_new(me, traced);
        return sf__get_slow(me, f, false);
    }
    sf__get_submit_new(me, traced);
    /* Near the end of the stack, sf__get_slow runs f on a fresh one. A
     * thread that runs no task fails sf__stack_room too (run.h, busy
     * time): its task is timed on the slow path, so here me->cur is a task. */
    if (SF__LIKELY(sf__pending_holds(&me->q, s) && sf__stack_room(me))) {
        uint64_t run = sf__with_status(s, SF__RUNNING);
        if (SF__LIKELY(sf__pending_claim_own(&me->q, f, &s, run))) {
            sf__pending_trim(&me->q, f);
            SF__ASSERT(sf__sched(me)->cur != NULL, "the fast path runs only inside a task (run.h)");
            struct sf__ran end = sf__run_body(me, f, run, SF__HOW_INLINE, traced,
                                              sf__sched(me)->cur, SF__RUN_QUEUED);
            if (traced)
                sf__trace_event(me, SF__EV_GDONE, run, 0);
            return SF__LIKELY(!(end.done & SF__FAILED)) ? end.val : sf__get_failed(f);
        }
    }
    return sf__get_slow(me, f, false);
}

#endif /* SF_GET_H */
