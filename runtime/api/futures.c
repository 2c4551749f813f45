/*
 * futures.c - the public entry points on futures: sf_do, sf_get,
 * sf_get_isolated, sf_wait, sf_release, sf_is_done, and those of failures and
 * cancellation (sf_fail, sf_error_message, sf_on_unhandled, sf_cancel,
 * sf_cancelled). Each checks its arguments, finds the calling
 * thread (starting the runtime if needed, lifecycle.h) and hands over to the
 * layers below; the debug build also reports uses of released futures here.
 */
#include "api/lifecycle.h"
#include "sched/get.h"
#include "api/promise.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef SF_DEBUG
/* Debug build: a use of f, FREE or orphaned, which `fn` names: `what` is
 * the misuse when f is its caller's own released future. */
static _Noreturn void report_dead(const sf_future *f, const char *fn, const char *what)
{
    if (sf__future_resting(f))
        sf__misuse("%s(%p): the future belongs to a runtime that is gone (made before "
                   "sf_shutdown(), or by the parent of fork())", fn, (void *)f);
    sf__misuse("%s(%p): %s", fn, (void *)f, what);
}
#endif

/* Debug build: a future the caller released (FREE, or orphaned while its
 * task runs) must not be used again, nor one of a runtime that is gone.
 * The release build cannot tell a recycled future from a live one, so it
 * checks nothing beyond the EINVAL of a FREE future (sf_get, sf_is_done,
 * sf_cancel). */
static inline void check_live(const sf_future *f, uint64_t s, const char *fn)
{
#ifdef SF_DEBUG
    if (sf__status(s) == SF__FREE || (s & SF__ORPHAN))
        report_dead(f, fn, "the future was released (use after sf_release)");
#else
    (void)f;
    (void)s;
    (void)fn;
#endif
}

/* Fills f with fn(arg) for `me`, made under the task `cur` (NULL: none;
 * the push publishes it). */
static inline __attribute__((always_inline)) void fill_future(struct sf__thread *me, sf_future *f,
                                                        sf_future *cur, void *(*fn)(void *),
                                                        void *arg)
{
    /* Its lineage (cancel.h): what cur's tasks take. Release, up_tag first:
     * the walk of cancel.h, "Walking a link". */
    __atomic_store_n(&f->up_tag, cur != NULL ? cur->kids_up_tag : 0, __ATOMIC_RELEASE);
    __atomic_store_n(&f->up, cur != NULL ? cur->kids_up : NULL, __ATOMIC_RELEASE);
    f->u.fn = fn;
    /* Atomic (relaxed, a plain store): a getter following a chain of waits
     * may read a stale future's val at any time (get.c, Deadlock). The push
     * publishes it. */
    __atomic_store_n(&f->val, arg, __ATOMIC_RELAXED);
    /* Relaxed: published with the task by the push's release store. A task
     * of plain code is the root of a region of its own once it starts
     * (get.c, Plain code's waits); cur is a constant where sf_do's fast
     * path inlines this, which has a task. */
    atomic_store_explicit(&f->region, cur != NULL ? sf__sched(me)->region : SF__REGION_PLAIN,
                          memory_order_relaxed);
    /* Counted before the push, so the trace's Queue column (created minus
     * started) never sees a start before its creation. */
    SF__BUMP(sf__sched(me)->c_created);
}

/* sf_do off its fast path: bad arguments, a call from outside libsf, a
 * thread to register, a free list to refill, a ring to grow, a trace. */
static __attribute__((noinline)) sf_future *future_do_slow(void *(*fn)(void *), void *arg)
{
    if (fn == NULL) {
        errno = EINVAL;
        return NULL;
    }
    /* Outside any call (registry.h, Calls in flight). */
    SF__OUTERMOST("sf_do", sf_future *, future_do_slow(fn, arg));
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return NULL;
    sf_future *f = sf__future_alloc(&me->free);
    if (f == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    fill_future(me, f, sf__sched(me)->cur, fn, arg);
    /* Before the push: once pushed, the task may be taken at once, and its
     * Take or Steal must not come before its Do. Its tag is the push
     * counter's next value, which only this thread moves. */
    uint64_t tag = (me->q.seq << SF__TAG_SHIFT) | SF__PENDING;
    SF__TRACE(me, DO, tag, 0);
    if (!sf__pending_push(&me->q, f)) {
        /* Not queued after all: the trace says so (the counter did not move:
         * the next Do names that tag anew). */
        SF__TRACE(me, DISCARD, tag, 0);
        atomic_store_explicit(&sf__sched(me)->c_created,
                              SF__OWN_LOAD(&sf__sched(me)->c_created) - 1, memory_order_relaxed);
        sf__future_unalloc(&me->free, f);
        errno = ENOMEM;
        return NULL;
    }
    return f;
}

SF_EXPORT sf_future *sf_do(void *(*fn)(void *), void *arg)
{
    /* The fork-join fast path calls nothing, so it saves no registers:
     * anything unusual goes to future_do_slow, which starts over. */
    struct sf__thread *me = sf__thread_self();
    struct sf__pending_place at;
    if (SF__UNLIKELY(fn == NULL || me == NULL || sf__trace_on || me->free.head == NULL ||
                     !sf__pending_room(&me->q, &at) || sf__sched(me)->cur == NULL))
        return future_do_slow(fn, arg);
    sf_future *f = sf__future_alloc_nonempty(&me->free);
    fill_future(me, f, sf__sched(me)->cur, fn, arg);
    sf__pending_put_at(&me->q, f, f, false, at);
    return f;
}

/* sf_get from outside any call (registry.h, Calls in flight), or by a
 * thread with no struct yet. Plain code's get (no task runs here) goes to
 * the slow path at once, which claims f before it submits (get.c, Plain
 * code's waits). */
static __attribute__((noinline)) void *get_entry(sf_future *f)
{
    SF__OUTERMOST("sf_get", void *, get_entry(f));
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return NULL;
    /* Acquire: as in sf_get. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    bool traced = sf__trace_on;
    if (sf__sched(me)->cur != NULL)
        return traced ? sf__get(me, f, s, true)
               : sf__status(s) == SF__DONE ? (sf__done_ok(s) ? f->val : sf__get_failed(f))
                                           : sf__get(me, f, s, false);
    if (traced)
        sf__trace_event(me, sf__status(s) == SF__DONE ? SF__EV_GET : SF__EV_GSTART, s, 0);
    if (sf__status(s) == SF__DONE)
        return sf__done_ok(s) ? f->val : sf__get_failed(f);
    return sf__get_slow(me, f, false);
}

SF_EXPORT void *sf_get(sf_future *f)
{
    if (SF__UNLIKELY(f == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    /* Acquire: DONE makes the runner's val visible. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    check_live(f, s, "sf_get");
    if (SF__UNLIKELY(sf__trace_on)) {
        struct sf__thread *me = sf__thread_self();
        return SF__LIKELY(me != NULL) ? sf__get(me, f, s, true) : get_entry(f);
    }
    if (sf__status(s) == SF__DONE)
        return SF__LIKELY(sf__done_ok(s)) ? f->val : sf__get_failed(f);
    struct sf__thread *me = sf__thread_self();
    if (SF__UNLIKELY(me == NULL))
        return get_entry(f);
    return sf__get(me, f, s, false);
}

SF_EXPORT void *sf_get_isolated(sf_future *f)
{
    if (SF__UNLIKELY(f == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    /* Acquire: DONE makes the runner's val visible. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    check_live(f, s, "sf_get_isolated");
    bool traced = sf__trace_on;
    if (sf__status(s) == SF__DONE && !traced)
        return sf__done_ok(s) ? f->val : sf__get_failed(f);
    SF__OUTERMOST("sf_get_isolated", void *, sf_get_isolated(f));
    struct sf__thread *me = sf__enter();
    if (SF__UNLIKELY(me == NULL))
        return NULL;
    if (traced) {
        if (sf__status(s) == SF__DONE) {
            sf__trace_event(me, SF__EV_GET, s, 0);
            return sf__done_ok(s) ? f->val : sf__get_failed(f);
        }
        sf__trace_event(me, SF__EV_GSTART, s, 0);
    }
    /* No submit first, unlike sf_get: a worker could take f before we
     * claim it, outside a region; sf__get_slow submits once it blocks. */
    return sf__get_slow(me, f, true);
}

/* sf_release of f, whose state the caller read as s, off the fast path: a
 * failure to report, a task to discard or orphan, a thread to register, a
 * call from outside libsf. */
static __attribute__((noinline)) void release_slow(sf_future *f, uint64_t s)
{
    /* Outside any call (registry.h, Calls in flight): begun, then from the
     * top, since the state may have changed meanwhile. */
    SF__OUTERMOST_VOID("sf_release", sf_release(f));
    struct sf__thread *me = sf__enter(); /* NULL: freed to the global stash */
    for (;;) {
        switch (sf__status(s)) {
        case SF__DONE: {
            if (SF__UNLIKELY(s & SF__CANCEL)) {
                /* A cancelled promise whose setter is still to call: that
                 * call frees it (promise.c, Two owners). Release: as for a
                 * running task's orphan below. */
                if (atomic_compare_exchange_weak_explicit(&f->state, &s, s | SF__ORPHAN,
                                                          memory_order_release,
                                                          memory_order_acquire))
                    return;
                break;
            }
            /* A failure nobody saw is reported (failure.h), once f is
             * freed: the hook is the program's code, and whatever it does
             * (say, another failure's release) finds f gone, not unseen. */
            bool report = (s & SF__FAILED) && !(s & SF__SEEN);
            int code = 0;
            void *(*fn)(void *) = NULL;
            char *msg = NULL;
            if (SF__UNLIKELY(s & SF__FAILED)) {
                /* Relaxed: ordered by the acquire load of DONE. */
                code = (int)atomic_load_explicit(&f->fail_code, memory_order_relaxed);
                fn = f->u.fn;
                msg = f->msg; /* the message goes with the future */
                __atomic_store_n(&f->msg, NULL, __ATOMIC_RELAXED); /* as in sf_do */
            }
            if (SF__LIKELY(me != NULL)) {
                sf__future_put(&me->free, f, s);
            } else {
                /* Relaxed: as in sf__future_put; the stash's lock publishes
                 * f to its next user. */
                atomic_store_explicit(&f->state, SF__FREE, memory_order_relaxed);
                sf__future_free_shared(f);
            }
            if (report)
                sf__failure_report(code, msg, fn);
            free(msg);
            return;
        }
        case SF__PENDING: {
            /* Claim it for nobody: the task never runs. Its queue slot goes
             * stale: trimmed now if the queue is ours (so that a burst of
             * released tasks leaves the ring to shrink, pending.h), else by
             * its owner later. */
            uint64_t queued = s; /* the claim overwrites s; the trace names the task */
            /* By its handle, as a get (registry.h). */
            if (sf__claim_by_handle(me, f, &s, SF__FREE)) {
                /* A batch task: its batch stays until this discard is
                 * accounted for (batch.h); its FIFO entry goes stale. */
                struct sf_batch *b = sf__is_batch_task(queued) ? sf__batch_of(queued) : NULL;
                if (me != NULL) {
                    SF__BUMP(sf__sched(me)->c_discarded);
                    SF__TRACE(me, DISCARD, queued, 0);
                    sf__future_put(&me->free, f, queued);
                } else {
                    sf__future_free_shared(f);
                }
                if (b != NULL)
                    sf__batch_finished(b);
                return;
            }
            break;
        }
        case SF__WAITING: /* a continuation: it still runs, then frees itself */
        case SF__RUNNING:
            /* Leave it to the runner, whose exchange sees the bit and frees
             * f. Release: our own earlier uses of f (gets that read val)
             * happen before the runner's acquire and its reuse of f.
             * Acquire on failure: a DONE read here is handled above. */
            if (atomic_compare_exchange_weak_explicit(&f->state, &s, s | SF__ORPHAN,
                                                      memory_order_release,
                                                      memory_order_acquire))
                return;
            break;
        default: /* FREE: released twice; nothing sane to do in a release build */
            return;
        }
    }
}

SF_EXPORT void sf_release(sf_future *f)
{
    if (f == NULL)
        return;
    /* Acquire: if DONE, the runner's writes to f happen before our reuse. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
#ifdef SF_DEBUG
    if (sf__status(s) == SF__FREE || (s & SF__ORPHAN))
        report_dead(f, "sf_release", "the future was already released (double release)");
#endif
    /* The fork-join fast path: a future that ended well goes back to this
     * thread's free list, with no register saved (release_slow is a tail
     * call). */
    struct sf__thread *me = sf__thread_self();
    if (SF__LIKELY(me != NULL && sf__done_ok(s))) {
        sf__future_put(&me->free, f, s);
        return;
    }
    release_slow(f, s);
}

SF_EXPORT int sf_is_done(const sf_future *f)
{
    if (f == NULL) {
        errno = EINVAL;
        return -1;
    }
    /* Acquire: a caller that sees 1 may read results the task produced. */
    uint64_t s = atomic_load_explicit(&((sf_future *)f)->state, memory_order_acquire);
    check_live(f, s, "sf_is_done");
    if (SF__UNLIKELY(sf__status(s) == SF__FREE)) { /* released, or a runtime's that is gone */
        errno = EINVAL;
        return -1;
    }
    return sf__status(s) == SF__DONE;
}

SF_EXPORT int sf_wait(sf_future *f, void **result)
{
    if (f == NULL)
        return EINVAL;
    int saved = errno;
    errno = 0;
    void *r = sf_get(f);
    int rc = errno;
    /* Acquire: as in sf_get. The caller holds f, so it is not recycled. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    if (sf__status(s) == SF__DONE) {
        if (s & SF__FAILED) {
            /* Relaxed: ordered by the acquire above. */
            rc = (int)atomic_load_explicit(&f->fail_code, memory_order_relaxed);
        } else {
            rc = 0;
            if (result != NULL)
                *result = r;
        }
    } else if (rc == 0) {
        rc = EINVAL; /* not done and no reason given: released under us */
    }
    errno = saved;
    return rc;
}

SF_EXPORT const char *sf_error_message(const sf_future *f)
{
    if (f == NULL)
        return NULL;
    sf_future *m = (sf_future *)f; /* marking it seen is no change the caller sees */
    /* Acquire: the message was written before DONE. */
    uint64_t s = atomic_load_explicit(&m->state, memory_order_acquire);
    check_live(f, s, "sf_error_message");
    if (sf__status(s) != SF__DONE || !(s & SF__FAILED))
        return NULL;
    sf__future_mark_seen(m, s);
    return m->msg;
}

SF_EXPORT void sf_on_unhandled(void (*hook)(int code, const char *message, void *ctx), void *ctx)
{
    sf__failure_set_hook(hook, ctx);
}


SF_EXPORT int sf_fail(int code, const char *fmt, ...)
{
    struct sf__thread *me = sf__thread_self();
    /* A task, or a loop's body run by a thread that runs no task (a frame
     * naming none is innermost: failure.h, Scopes). */
    if (code <= 0 || me == NULL || (sf__sched(me)->cur == NULL && sf__scope_here(me) == NULL)) {
        errno = EINVAL;
        return -1;
    }
    bool lost;
    va_list ap;
    va_start(ap, fmt);
    char *msg = sf__failure_format(fmt, ap, &lost);
    va_end(ap);
    int rc = sf__failure_set(me, code, msg);
    if (rc == 0 && lost)
        rc = ENOMEM;
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}

SF_EXPORT int sf_cancelled(void)
{
    struct sf__thread *me = sf__thread_self();
    if (me == NULL)
        return 0;
    /* A light task hears of its run's failure (sf.h, Light tasks). */
    struct sf__scope *ls = sf__scope_here(me);
    if (ls != NULL && ls->light && sf__scope_stopped(ls))
        return 1;
    sf_future *cur = sf__sched(me)->cur;
    if (cur == NULL)
        return 0;
    /* The task's own flag, else - only while some task is asked to cancel
     * - the tasks above it (cancel.h, Lineage). Acquire: a task that hears
     * of its cancellation has its later starts checked (sf_cancel's release
     * of CANCEL). Relaxed, the count: a hint, set before any CANCEL. */
    uint64_t s = atomic_load_explicit(&cur->state, memory_order_acquire);
    if (!(s & SF__CANCEL) &&
        (atomic_load_explicit(&sf__cancel_asked, memory_order_relaxed) == 0 ||
         !sf__cancel_reaches_task(cur)))
        return 0;
    /* In a loop's body the loop was told: it stops and returns ECANCELED
     * (parfor.c, Cancellation); the task running it ends cancelled only if
     * it asks itself. */
    struct sf__scope *sc = sf__scope_here(me);
    if (sc != NULL) {
        (void)sf__scope_fail(sc, ECANCELED, NULL);
        return 1;
    }
    /* The task was told: it ends cancelled (unless it failed already). */
    (void)sf__failure_set_task(me, ECANCELED, NULL, true);
    return 1;
}

SF_EXPORT int sf_cancel(sf_future *f)
{
    if (f == NULL) {
        errno = EINVAL;
        return -1;
    }
    /* Acquire: a DONE read here lets the caller read the result. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    check_live(f, s, "sf_cancel");
    struct sf__thread *me = NULL;
    bool asked = false;
    for (;;) {
        switch (sf__status(s)) {
        case SF__DONE:
            return 1;
        case SF__PENDING: {
            /* Claiming needs this thread's struct: from outside any call,
             * begun and started over (registry.h, Calls in flight). */
            SF__OUTERMOST("sf_cancel", int, sf_cancel(f));
            if (me == NULL && (me = sf__enter()) == NULL)
                return -1;
            /* Claim it as a runner would, then complete it unrun. */
            uint64_t run = sf__with_status(s, SF__RUNNING);
            if (sf__claim_by_handle(me, f, &s, run)) {
                sf__run_cancelled(me, f, run);
                return 0;
            }
            break;
        }
        case SF__WAITING:
            if (s & SF__ORPHAN) {
                errno = EINVAL;
                return -1;
            }
            /* A continuation not started: completed at once, unrun. */
            if (SF__UNLIKELY(sf__trace_on))
                SF__OUTERMOST("sf_cancel", int, sf_cancel(f));
            return sf__after_cancel(sf__thread_self(), f, s);
        case SF__RUNNING:
            if (sf__is_promise(f, s)) {
                /* No task to ask: completed at once. Traced, inside a call:
                 * its Set line is this thread's if it has one. */
                if (SF__UNLIKELY(sf__trace_on))
                    SF__OUTERMOST("sf_cancel", int, sf_cancel(f));
                return sf__promise_cancel(f, s);
            }
            if (s & SF__ORPHAN) {
                errno = EINVAL;
                return -1;
            }
            if (s & SF__CANCEL)
                return 0;
            /* Recording it needs the registry (cancel.h): from outside any
             * call, begun and started over (registry.h, Calls in flight). */
            SF__OUTERMOST("sf_cancel", int, sf_cancel(f));
            /* Its whole tree hears of it (cancel.h): recorded, and every
             * thread told to check its starts, before the flag is set. */
            if (!asked) {
                sf__cancel_ask(f, s);
                asked = true;
            }
            /* Release: whoever reads CANCEL (acquire: sf_cancelled, the
             * lineage walk) sees the check bits set above, so its later
             * starts are checked. Acquire: a failed CAS rereads the state,
             * which may be a DONE whose result the caller then reads. */
            if (atomic_compare_exchange_weak_explicit(&f->state, &s, s | SF__CANCEL,
                                                      memory_order_acq_rel,
                                                      memory_order_acquire))
                return 0;
            break;
        default: /* FREE: released */
            errno = EINVAL;
            return -1;
        }
    }
}
