/*
 * do_after.c - sf_do_after, the entry point of continuations: checks the
 * arguments, makes the continuation's future WAITING and its record, and
 * puts a link on each dep's watch list (sched/after.h holds the algorithm).
 *
 * Each dep, as the maker reads its state:
 *   DONE     counted done at once;
 *   PENDING  claimed by its handle (as sf_release claims one, but to run
 *            it): its queue slot goes stale, it is watched and put on the
 *            ready list, where an idle worker or a helping get takes it;
 *   RUNNING  watched - with the guard of after.h (waiters and the heavy
 *            fence) unless it is a promise or a batch task, which no get
 *            completes by a plain store;
 *   WAITING  (another continuation) watched.
 * The maker's own hold on `left` is dropped last, so the continuation
 * cannot become ready, run and be released while links are still being
 * put on lists.
 */
#include "api/lifecycle.h"
#include "api/promise.h"
#include "sched/after.h"
#include "sched/get.h"

#include <errno.h>
#include <stdlib.h>

/* Continuations made, for their tags (after.h). Relaxed: only uniqueness
 * matters, and the tag's thread id keeps two threads' numbers apart. */
static _Atomic uint64_t made;

/* Links dep d to a by l; false if d is done (nothing linked). */
static bool link_dep(struct sf__thread *me, sf_future *d, struct sf__after_link *l)
{
    /* Acquire: a DONE read makes d's result visible before the
     * continuation's start (which the maker's release of `left` orders). */
    uint64_t s = atomic_load_explicit(&d->state, memory_order_acquire);
    for (;;) {
        switch ((int)sf__status(s)) {
        case SF__DONE:
            return false;
        case SF__PENDING:
            /* Claimed by its handle (registry.h), as sf_release's discard
             * claims one, but to run it. */
            if (!sf__claim_by_handle(me, d, &s, sf__with_status(s, SF__RUNNING)))
                continue;
            /* Ours now: watched before it can run, so its completion - by
             * a read-modify-write, run from the ready list - closes the
             * list. */
            (void)sf__after_watch(d, s, l, false);
            l->run = (struct sf__ready){NULL, d, s};
            sf__after_ready_push(&l->run);
            return true;
        case SF__RUNNING:
            return sf__after_watch(d, s, l, !sf__is_promise(d, s) && !sf__is_batch_task(s));
        case SF__WAITING:
            return sf__after_watch(d, s, l, false);
        default: /* FREE: released meanwhile, which sf.h forbids */
            return false;
        }
    }
}

SF_EXPORT sf_future *sf_do_after(sf_future *const *deps, int n, void *(*fn)(void *), void *arg)
{
    if (fn == NULL || n < 0 || (n > 0 && deps == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        /* Relaxed: a look for misuse; the links read again. */
        if (deps[i] == NULL ||
            sf__status(atomic_load_explicit(&deps[i]->state, memory_order_relaxed)) == SF__FREE) {
            errno = EINVAL;
            return NULL;
        }
    }
    /* Outside any call (registry.h, Calls in flight). */
    SF__OUTERMOST("sf_do_after", sf_future *, sf_do_after(deps, n, fn, arg));
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return NULL;
    struct sf__after *a = malloc(sizeof *a + (size_t)n * sizeof a->links[0]);
    if (a == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sf_future *c = sf__future_alloc(&me->free);
    if (c == NULL) {
        free(a);
        errno = ENOMEM;
        return NULL;
    }
    /* Its lineage, as sf_do's (cancel.h): the task running here. Release,
     * up_tag first: the walk of cancel.h. */
    sf_future *cur = sf__sched(me)->cur;
    __atomic_store_n(&c->up_tag, cur != NULL ? cur->kids_up_tag : 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->up, cur != NULL ? cur->kids_up : NULL, __ATOMIC_RELEASE);
    c->u.fn = fn;
    /* Relaxed, both: published by the state's release store below. Its
     * argument, as a queued task's (a getter's chain of waits ends here:
     * it names no fiber); no region: it runs wherever it is taken. */
    __atomic_store_n(&c->val, arg, __ATOMIC_RELAXED);
    atomic_store_explicit(&c->region, 0, memory_order_relaxed);
    uint64_t k = atomic_fetch_add_explicit(&made, 1, memory_order_relaxed);
    uint64_t tag = (uint64_t)me->id << SF__SEQ_BITS | SF__AFTER_SEQ |
                   (k & ((SF__AFTER_SEQ >> 1) - 1));
    uint64_t s = tag << SF__TAG_SHIFT | SF__WAITING;
    a->ready = (struct sf__ready){NULL, c, s};
    a->n = n;
    /* Relaxed: published to the deps' completers by the pushes of the
     * links (release). */
    atomic_store_explicit(&a->left, n + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sf__after_live, 1, memory_order_relaxed);
    SF__BUMP(sf__sched(me)->c_created);
    SF__TRACE(me, DO, s, 0);
    SF__ASSERT_TRANSITION(SF__FREE, s);
    /* Release: whoever gets the handle from us sees its fields; before the
     * links, whose firing CASes this state. */
    atomic_store_explicit(&c->state, s, memory_order_release);
    int done = 0;
    for (int i = 0; i < n; i++) {
        struct sf__after_link *l = &a->links[i];
        l->a = a;
        l->run.f = NULL;
        if (!link_dep(me, deps[i], l))
            done++;
    }
    /* Relaxed: the maker's hold, dropped below by an acq_rel decrement,
     * orders these. */
    if (done != 0)
        atomic_fetch_sub_explicit(&a->left, done, memory_order_relaxed);
    sf__after_dep_done(a); /* the maker's hold */
    return c;
}
