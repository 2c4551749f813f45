/*
 * api.c - layer 5: the public entry points on futures: sf_do, sf_get,
 * sf_get_isolated, sf_release, sf_is_done. Each checks its arguments, finds the calling
 * thread (starting the runtime if needed, lifecycle.h) and hands over to the
 * layers below; the debug build also reports uses of released futures here.
 */
#include "lifecycle.h"

#include <errno.h>

/* Debug build: a future the caller released (FREE, or orphaned while its
 * task runs) must not be used again. The release build cannot tell a
 * recycled future from a live one, so it checks nothing beyond sf_get's
 * EINVAL on a FREE future. */
static inline void check_live(const sf_future *f, uint64_t s, const char *fn)
{
#ifdef SF_DEBUG
    if (sf__status(s) == SF__FREE || (s & SF__ORPHAN))
        sf__misuse("%s(%p): the future was released (use after sf_release)", fn, (void *)f);
#else
    (void)f;
    (void)s;
    (void)fn;
#endif
}

SF_EXPORT sf_future *sf_do(void *(*fn)(void *), void *arg)
{
    if (SF__UNLIKELY(fn == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    struct sf__thread *me = sf__enter();
    if (SF__UNLIKELY(me == NULL))
        return NULL;
    sf_future *f = sf__future_alloc(&me->free);
    if (SF__UNLIKELY(f == NULL)) {
        errno = ENOMEM;
        return NULL;
    }
    f->u.fn = fn;
    f->val = arg;
    /* Relaxed: published with the task by the push's release store. */
    atomic_store_explicit(&f->region, me->region, memory_order_relaxed);
    /* Counted before the push, so the trace's Queue column (created minus
     * started) never sees a start before its creation. */
    SF__BUMP(me->c_created);
    if (SF__UNLIKELY(!sf__pending_push(&me->q, f))) {
        atomic_store_explicit(&me->c_created, SF__OWN_LOAD(&me->c_created) - 1,
                              memory_order_relaxed);
        sf__future_unalloc(&me->free, f);
        errno = ENOMEM;
        return NULL;
    }
    /* Relaxed: this thread's own store, just made. */
    SF__TRACE(me, DO, atomic_load_explicit(&f->state, memory_order_relaxed), 0);
    return f;
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
        struct sf__thread *me = sf__enter();
        return SF__LIKELY(me != NULL) ? sf__get(me, f, s, true) : NULL;
    }
    if (sf__status(s) == SF__DONE)
        return f->val;
    struct sf__thread *me = sf__enter();
    if (SF__UNLIKELY(me == NULL))
        return NULL;
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
        return f->val;
    struct sf__thread *me = sf__enter();
    if (SF__UNLIKELY(me == NULL))
        return NULL;
    if (traced) {
        if (sf__status(s) == SF__DONE) {
            sf__trace_event(me, SF__EV_GET, s, 0);
            return f->val;
        }
        sf__trace_event(me, SF__EV_GSTART, s, 0);
    }
    /* No submit first, unlike sf_get: a worker could take f before we
     * claim it, outside a region; sf__get_slow submits once it blocks. */
    return sf__get_slow(me, f, true);
}

SF_EXPORT void sf_release(sf_future *f)
{
    if (f == NULL)
        return;
    struct sf__thread *me = sf__enter(); /* NULL: freed to the global stash */
    /* Acquire: if DONE, the runner's writes to f happen before our reuse. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
#ifdef SF_DEBUG
    if (sf__status(s) == SF__FREE || (s & SF__ORPHAN))
        sf__misuse("sf_release(%p): the future was already released (double release)",
                   (void *)f);
#endif
    for (;;) {
        switch (sf__status(s)) {
        case SF__DONE:
            if (SF__LIKELY(me != NULL)) {
                sf__future_put(&me->free, f, s);
            } else {
                /* Relaxed: as in sf__future_put; the stash's lock publishes
                 * f to its next user. */
                atomic_store_explicit(&f->state, SF__FREE, memory_order_relaxed);
                sf__future_free_shared(f);
            }
            return;
        case SF__PENDING: {
            /* Claim it for nobody: the task never runs. Its queue slot goes
             * stale: trimmed now if the queue is ours (so that a burst of
             * released tasks leaves the ring to shrink, pending.h), else by
             * its owner later. */
            uint64_t queued = s; /* the claim overwrites s; the trace names the task */
            bool mine = me != NULL && sf__pending_holds(&me->q, s);
            struct sf__pending *q = &sf__registry_get(sf__tag_thread(s))->q;
            if (mine ? sf__pending_claim_own(q, f, &s, SF__FREE)
                     : sf__pending_claim_foreign(q, f, &s, SF__FREE)) {
                if (mine)
                    sf__pending_trim(q, f);
                if (me != NULL) {
                    SF__BUMP(me->c_discarded);
                    SF__TRACE(me, DISCARD, queued, 0);
                    sf__future_put(&me->free, f, queued);
                } else {
                    sf__future_free_shared(f);
                }
                return;
            }
            break;
        }
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

SF_EXPORT int sf_is_done(const sf_future *f)
{
    if (f == NULL) {
        errno = EINVAL;
        return -1;
    }
    /* Acquire: a caller that sees 1 may read results the task produced. */
    uint64_t s = atomic_load_explicit(&((sf_future *)f)->state, memory_order_acquire);
    check_live(f, s, "sf_is_done");
    return sf__status(s) == SF__DONE;
}
