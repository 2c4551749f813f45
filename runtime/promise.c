/*
 * promise.c - layer 5: promises. A promise is a future with no task: made
 * RUNNING by sf_promise, it is completed - set, failed or cancelled - by
 * whoever calls sf_promise_set, sf_promise_fail or sf_cancel, on any
 * thread, one that libsf does not know included.
 *
 * To getters it is a task running elsewhere: they help, spin, then sleep on
 * its state word, and the completion wakes them as a runner's does (run.h:
 * the completing CAS, a full barrier, against the sleeper's heavy fence).
 * Its runner word (val while RUNNING) names no fiber - NULL, or the value
 * being stored - so a getter that follows a chain of waits (get.c,
 * Deadlock) stops at a promise: a get of one is never reported as a
 * deadlock, as nothing of libsf's could complete it. Its region is 0: an
 * isolated get of it waits without helping (get.c, Isolation).
 *
 * A promise's state word. Its tag is its maker's thread id with a number
 * from PROMISE_SEQ up (that thread's count of promises): it never matches
 * a queue's push (those stay below 2^39 for years of pushes), so the trace
 * names it apart from the maker's tasks. Its flags mean:
 *
 *   RUNNING                  unset
 *   RUNNING|CANCEL           a setter (set or fail) claimed it and is
 *                            writing its value or failure: others lose
 *   RUNNING|FAILED|SEEN      sf_cancel claimed it (a cancel is no failure
 *                            to report); |CANCEL once the setter called
 *   DONE[|FAILED[|SEEN]]     set, or failed (SEEN once a getter saw it)
 *   DONE|FAILED|SEEN|CANCEL  cancelled, its setter's call still to come
 *   |ORPHAN                  released by its holder (sf_release) first
 *
 * The claim is what lets a setter write val, fail_code and msg with plain
 * (relaxed) stores and no lock: exactly one party completes a promise, by
 * CAS from RUNNING, and the loser learns what came first from the bits
 * (CANCEL alone: EALREADY; FAILED|SEEN: ECANCELED) without waiting for the
 * winner. The completion is a CAS too: sf_release may add ORPHAN meanwhile.
 *
 * Two owners. The holder of the handle releases it as any future; the
 * setter may call once whatever the holder did, so the promise stays until
 * both are done with it: released before its completion, it is ORPHAN and
 * its completion frees it; cancelled before its setter called, it keeps
 * CANCEL and the setter's call (ECANCELED) drops it, freeing the promise if
 * the holder has released it meanwhile (release_slow in api.c adds ORPHAN
 * to a DONE|CANCEL promise instead of freeing it). A setter that never
 * calls keeps a cancelled promise until sf_shutdown. Frees by a completion
 * go to the deferred list (future.c, Deferred frees): no lock, nothing
 * allocated, whatever thread completes.
 */
#include "promise.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* A promise's tag numbers start here (above). */
#define PROMISE_SEQ SF__PROMISE_SEQ

SF_EXPORT sf_future *sf_promise(void)
{
    /* Outside any call (registry.h, Calls in flight). */
    SF__OUTERMOST("sf_promise", sf_future *, sf_promise());
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return NULL;
    sf__future_reclaim(&me->free); /* completed orphans come back here */
    sf_future *f = sf__future_alloc(&me->free);
    if (f == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    uint64_t n = SF__OWN_LOAD(&sf__sched(me)->c_promises);
    SF__BUMP(sf__sched(me)->c_promises);
    f->u.fn = SF__PROMISE_FN;
    sf__hang_promise_made(me, f); /* its maker, for the hang report (hang.h) */
    /* Relaxed, both: published by the release store of the state below.
     * No runner (above); no region. */
    __atomic_store_n(&f->val, NULL, __ATOMIC_RELAXED);
    atomic_store_explicit(&f->region, 0, memory_order_relaxed);
    uint64_t tag = (uint64_t)me->id << SF__SEQ_BITS | PROMISE_SEQ |
                   (n & (PROMISE_SEQ - 1));
    uint64_t s = tag << SF__TAG_SHIFT | SF__RUNNING;
    SF__ASSERT_TRANSITION(SF__FREE, s);
    SF__TRACE(me, PROMISE, s, 0);
    /* Release: whoever gets the handle from us, through the program's own
     * synchronisation, sees u.fn and the rest. */
    atomic_store_explicit(&f->state, s, memory_order_release);
    return f;
}

/* The completion of p (state s) logged, before it is published: by this
 * thread if it is inside a libsf call (it has a buffer), else as a line from
 * outside (trace.h). */
static void trace_set(uint64_t s, int code)
{
    struct sf__thread *me = sf__thread_self();
    if (me != NULL)
        sf__trace_event(me, SF__EV_SET, s, (uint64_t)code);
    else
        sf__trace_outside(SF__EV_SET, s, (uint64_t)code);
}

/* Getters asleep on p are woken after its completion (state `done`, not
 * FREE). Relaxed load: ordered by the light fence below against the
 * sleeper's heavy fence; after DONE the holder may have recycled p, and a
 * stale count wakes sleepers spuriously at worst (type-stable memory,
 * run.h). */
static void wake(sf_future *p)
{
    /* Dekker with a sleeping getter (get.c, sleep_on; wait.c): the state
     * was written just before, then this fence, then waiters is read; the
     * getter increments waiters, fences heavily, then reads the state. One
     * of the two sees the other's write. A release CAS alone would let the
     * load of waiters move above it. */
    sf__fence_light();
    if (atomic_load_explicit(&p->waiters, memory_order_relaxed) != 0)
        sf__futex_wake(sf__future_futex(p), INT_MAX);
}

/*
 * The setter's claim of p: 0 with *claimed its state (RUNNING|CANCEL), or
 * an errno: EINVAL, EALREADY, ECANCELED (then the setter's call is
 * recorded: a cancelled promise released meanwhile is freed here).
 */
static int claim(sf_future *p, uint64_t *claimed)
{
    if (p == NULL)
        return EINVAL;
    /* Acquire: a DONE read here lets us read its fail_code. */
    uint64_t s = atomic_load_explicit(&p->state, memory_order_acquire);
    for (;;) {
        uint64_t st = sf__status(s);
        if (st == SF__FREE || (st != SF__RUNNING && st != SF__DONE) || !sf__is_promise(p, s))
            return EINVAL; /* released, gone with its runtime, or a task's */
        if (st == SF__DONE) {
            if (!(s & SF__CANCEL)) {
                /* Completed before, by a setter or a cancel whose setter
                 * has called. Relaxed: ordered by the acquire above. */
                bool cancelled = (s & SF__FAILED) &&
                    atomic_load_explicit(&p->fail_code, memory_order_relaxed) == ECANCELED;
                return cancelled ? ECANCELED : EALREADY;
            }
            /* Cancelled, this call still to come: record it. Released
             * meanwhile: the promise is ours to free. acq_rel: as the
             * completion's CAS below. */
            uint64_t to = (s & SF__ORPHAN) ? SF__FREE : s & ~SF__CANCEL;
            if (!atomic_compare_exchange_weak_explicit(&p->state, &s, to, memory_order_acq_rel,
                                                       memory_order_acquire))
                continue;
            if (to == SF__FREE)
                sf__future_free_deferred(p);
            return ECANCELED;
        }
        if (s & SF__FAILED) {
            /* sf_cancel claimed it: it completes it ECANCELED, and knows
             * from CANCEL that this call came. */
            if (s & SF__CANCEL)
                return ECANCELED;
            if (!atomic_compare_exchange_weak_explicit(&p->state, &s, s | SF__CANCEL,
                                                       memory_order_acquire,
                                                       memory_order_acquire))
                continue;
            return ECANCELED;
        }
        if (s & SF__CANCEL)
            return EALREADY; /* another setter claimed it */
        /* Acquire on failure: a DONE reread lets us read its fail_code; the
         * claim itself orders nothing (the completion publishes). */
        if (atomic_compare_exchange_weak_explicit(&p->state, &s, s | SF__CANCEL,
                                                  memory_order_acquire, memory_order_acquire)) {
            *claimed = s | SF__CANCEL;
            return 0;
        }
    }
}

/* Completes p, which this thread claimed as c: with val (code 0), or
 * failed with code and msg (malloc'd or NULL: owned from now on). */
static void complete(sf_future *p, uint64_t c, void *val, int code, char *msg)
{
    /* Relaxed, all: published by the completing CAS's release. A getter
     * following a chain of waits may read val while RUNNING (get.c): the
     * program's value is never one of our fibers. */
    if (code != 0) {
        atomic_store_explicit(&p->fail_code, (uint32_t)code, memory_order_relaxed);
        __atomic_store_n(&p->msg, msg, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&p->val, val, __ATOMIC_RELAXED);
    }
    /* Before publishing: once DONE, p may be recycled. */
    if (SF__UNLIKELY(sf__trace_on))
        trace_set(c, code);
    uint64_t to;
    do
        to = (c & SF__ORPHAN) ? SF__FREE
                              : sf__with_status(c, SF__DONE) | (code != 0 ? SF__FAILED : 0);
    /* acq_rel: release publishes the value; acquire takes over a promise
     * that sf_release orphaned (its uses before ours). A failure rereads:
     * only ORPHAN can have come. */
    while (!atomic_compare_exchange_weak_explicit(&p->state, &c, to, memory_order_acq_rel,
                                                  memory_order_relaxed));
    if (to != SF__FREE) {
        wake(p);
        return;
    }
    /* Released first: nobody can see this failure, so it is reported here,
     * as a running task's orphan is by its runner (run.c). */
    if (code != 0)
        sf__failure_report(code, msg, SF__PROMISE_FN);
    free(msg);
    sf__future_free_deferred(p);
}

SF_EXPORT int sf_promise_set(sf_future *p, void *value)
{
    uint64_t c;
    int rc = claim(p, &c);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    complete(p, c, value, 0, NULL);
    return 0;
}

SF_EXPORT int sf_promise_fail(sf_future *p, int code, const char *fmt, ...)
{
    uint64_t c;
    int rc = code <= 0 ? EINVAL : claim(p, &c);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    /* The message after the claim: a call that loses allocates nothing.
     * Getters wait meanwhile; a cancel returns at once (claimed). */
    bool lost;
    va_list ap;
    va_start(ap, fmt);
    char *msg = sf__failure_format(fmt, ap, &lost);
    va_end(ap);
    complete(p, c, NULL, code, msg);
    if (lost) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

int sf__promise_cancel(sf_future *f, uint64_t s)
{
    for (;;) {
        if (sf__status(s) == SF__DONE)
            return 1;
        if (sf__status(s) != SF__RUNNING || (s & SF__ORPHAN)) {
            errno = EINVAL;
            return -1;
        }
        if (s & SF__FAILED)
            return 0; /* another cancel has it */
        if (s & SF__CANCEL)
            return 1; /* a setter has it: as good as done, not cancelled */
        /* Acquire, both ways: a DONE reread lets the caller read the
         * result; the claim itself orders nothing. */
        if (atomic_compare_exchange_weak_explicit(&f->state, &s, s | SF__FAILED | SF__SEEN,
                                                  memory_order_acquire, memory_order_acquire))
            break;
    }
    uint64_t c = s | SF__FAILED | SF__SEEN;
    /* Relaxed, both: published by the CAS below. */
    atomic_store_explicit(&f->fail_code, ECANCELED, memory_order_relaxed);
    __atomic_store_n(&f->msg, NULL, __ATOMIC_RELAXED);
    if (SF__UNLIKELY(sf__trace_on))
        trace_set(c, ECANCELED);
    uint64_t to;
    do {
        /* CANCEL flips: set, the setter has called; clear, it is to come
         * and marks the promise so (above, Two owners). */
        bool came = (c & SF__CANCEL) != 0;
        to = came && (c & SF__ORPHAN)
                 ? SF__FREE
                 : sf__with_status(c, SF__DONE) | SF__FAILED | SF__SEEN |
                       (came ? 0 : SF__CANCEL) | (c & SF__ORPHAN);
        /* acq_rel and a relaxed reread, as in complete(). */
    } while (!atomic_compare_exchange_weak_explicit(&f->state, &c, to, memory_order_acq_rel,
                                                    memory_order_relaxed));
    if (to == SF__FREE)
        sf__future_free_deferred(f);
    else
        wake(f);
    return 0;
}
