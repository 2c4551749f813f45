/*
 * after.c - continuations: watch lists and the ready list (after.h holds
 * the algorithm and its invariants).
 */
#include "sched/after.h"
#include "sched/trace.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>

_Atomic long sf__after_live;

/* docs/continuations.md, Memory, states these sizes. */
_Static_assert(sizeof(struct sf__after) == 32 && sizeof(struct sf__after_link) == 48,
               "a record is 32 bytes plus 48 a dep");

/* The ready list: pushed by any thread (one CAS), emptied whole by a taker
 * under ready_lock into `fifo`, which only the holder of ready_lock reads
 * or writes. */
static _Atomic(struct sf__ready *) ready;
static struct sf__ready *fifo;
/* A leaf lock (debug.h): nothing is taken under it. */
static struct sf__lock ready_lock = SF__LOCK_INITIALIZER(SF__RANK_LEAF, "ready_lock");

/* A closed mark: the tag of state s, bit 0 set (links are aligned). */
static uintptr_t mark_of(uint64_t s) { return (uintptr_t)(sf__tag(s) << 1) | 1; }
static bool is_mark(uintptr_t w) { return (w & 1) != 0; }

bool sf__after_watch(sf_future *d, uint64_t s, struct sf__after_link *l, bool guard)
{
    /* WATCHED first: a completer that publishes by read-modify-write sees
     * it in the state it replaces, and closes the word before DONE.
     * Acquire, both ways: a DONE read makes d's result ours; the flag
     * itself publishes nothing (the push below does). */
    while (!(s & SF__WATCHED)) {
        if (sf__status(s) == SF__DONE)
            return false;
        if (atomic_compare_exchange_weak_explicit(&d->state, &s, s | SF__WATCHED,
                                                  memory_order_acquire, memory_order_acquire))
            break;
    }
    _Atomic uintptr_t *w = sf__future_watch(d);
    l->counted = guard;
    /* Relaxed load: the CAS below decides. */
    uintptr_t h = atomic_load_explicit(w, memory_order_relaxed);
    for (;;) {
        if (is_mark(h) && h == mark_of(s)) {
            /* Closed for this incarnation: its completer stores DONE next.
             * Acquire: its result is ours before the continuation's. */
            for (int i = 0; sf__status(atomic_load_explicit(&d->state, memory_order_acquire)) !=
                            SF__DONE;
                 i++)
                if (i < 64)
                    sf__pause();
                else
                    sched_yield();
            return false;
        }
        l->next = is_mark(h) ? NULL : (struct sf__after_link *)h;
        /* Release: the completer's exchange (acquire) reads l's fields. */
        if (atomic_compare_exchange_weak_explicit(w, &h, (uintptr_t)l, memory_order_release,
                                                  memory_order_relaxed))
            break;
    }
    if (!guard)
        return true;
    /* The raise after the push (after.h, Who closes). Release: a completer
     * that reads the raise and then reloads it with acquire
     * (sf__after_inline_done) sees our push. */
    atomic_fetch_add_explicit(&d->waiters, 1, memory_order_release);
    /* Dekker with the get's plain store of DONE and its light fence
     * (run.h): one of us sees the other's write. */
    sf__fence_heavy();
    uint64_t now = atomic_load_explicit(&d->state, memory_order_acquire);
    if (sf__status(now) == SF__DONE) {
        /* Maybe its completer missed our raise: close it ourselves. Our
         * caller holds d, so this is still its incarnation. */
        sf__after_fire(sf__after_close(d, s));
    }
    return true;
}

uintptr_t sf__after_close(sf_future *f, uint64_t s)
{
    /* acq_rel: acquire reads the pushed links' fields (their release); the
     * release orders nothing but costs nothing on an exchange. */
    uintptr_t h = atomic_exchange_explicit(sf__future_watch(f), mark_of(s), memory_order_acq_rel);
    if (is_mark(h))
        return 0;
    /* Each guarded link raised waiters once: lowered now, while f is still
     * ours (after.h, Who closes). Relaxed: a count only its own futex wake
     * reads, which tolerates a stale one. */
    for (struct sf__after_link *l = (struct sf__after_link *)h; l != NULL; l = l->next)
        if (l->counted)
            atomic_fetch_sub_explicit(&f->waiters, 1, memory_order_relaxed);
    return h;
}

void sf__after_fire(uintptr_t list)
{
    for (struct sf__after_link *l = (struct sf__after_link *)list, *next; l != NULL; l = next) {
        /* Read before the decrement: the record may go the moment it is 0. */
        next = l->next;
        sf__after_dep_done(l->a);
    }
}

void sf__after_ready_push(struct sf__ready *r)
{
    struct sf__ready *h = atomic_load_explicit(&ready, memory_order_relaxed);
    do
        r->next = h;
    /* Release: the taker's exchange (acquire) reads r and what the maker
     * and the deps wrote before. */
    while (!atomic_compare_exchange_weak_explicit(&ready, &h, r, memory_order_release,
                                                  memory_order_relaxed));
    sf__pool_notify();
}

void sf__after_dep_done(struct sf__after *a)
{
    /* acq_rel: every dep's completion (and the maker's registration)
     * happens before the last decrement, which the continuation's taker
     * acquires through the ready list. */
    if (atomic_fetch_sub_explicit(&a->left, 1, memory_order_acq_rel) != 1)
        return;
    sf_future *c = a->ready.f;
    uint64_t s = atomic_load_explicit(&c->state, memory_order_relaxed);
    bool marked = false;
    /* Mark it ready (CANCEL while WAITING) if it is still this WAITING
     * incarnation: a getter asleep on it sees its futex word change. A
     * cancelled one is left as it is: the taker drops the record. Release:
     * a get that claims c off this mark (sf__after_claim, acquire) sees
     * what the deps wrote, as a taker does through the push below. */
    while (sf__tag(s) == sf__tag(a->ready.s) && sf__status(s) == SF__WAITING &&
           !(s & SF__CANCEL)) {
        SF__ASSERT_TRANSITION(s, s | SF__CANCEL);
        if (atomic_compare_exchange_weak_explicit(&c->state, &s, s | SF__CANCEL,
                                                  memory_order_release, memory_order_relaxed)) {
            marked = true;
            break;
        }
    }
    sf__after_ready_push(&a->ready);
    /* Getters asleep on c help, and may take it (with no worker, they are
     * the only ones). The push's CAS and the notify's light fence before
     * this load, against the sleeper's heavy fence (get.c, sleep_on). After
     * the push a taker may have run c and freed it: a stale count wakes
     * another incarnation's sleepers at worst, who recheck (type-stable
     * memory, future.c). */
    if (marked && atomic_load_explicit(&c->waiters, memory_order_relaxed) != 0)
        sf__futex_wake(sf__future_futex(c), INT_MAX);
}

void sf__after_inline_done(sf_future *f, uint64_t done)
{
    sf__futex_wake(sf__future_futex(f), INT_MAX);
    /* Acquire: the caller's load read a maker's release raise of waiters
     * (or a later read-modify-write of it, in its release sequence); this
     * reads as late, so that maker's push, before its raise, is visible
     * below. A load, not a fence: ThreadSanitizer sees it. */
    (void)atomic_load_explicit(&f->waiters, memory_order_acquire);
    uintptr_t h = atomic_load_explicit(sf__future_watch(f), memory_order_relaxed);
    if (h != 0 && !is_mark(h))
        sf__after_fire(sf__after_close(f, done));
}

bool sf__after_maybe_ready(void)
{
    /* Relaxed, both: a hint. fifo is read without the lock: a torn view is
     * impossible for a pointer, and a stale one costs a look or a nap. */
    return atomic_load_explicit(&ready, memory_order_relaxed) != NULL ||
           __atomic_load_n(&fifo, __ATOMIC_RELAXED) != NULL;
}

/* The next node, FIFO, or NULL. */
static struct sf__ready *pop(void)
{
    if (!sf__after_maybe_ready())
        return NULL;
    sf__lock(&ready_lock);
    struct sf__ready *r = fifo;
    if (r == NULL) {
        /* Acquire: the pushes' release. */
        struct sf__ready *h = atomic_exchange_explicit(&ready, NULL, memory_order_acquire);
        while (h != NULL) { /* reversed: oldest first */
            struct sf__ready *next = h->next;
            h->next = r;
            r = h;
            h = next;
        }
    }
    if (r != NULL)
        __atomic_store_n(&fifo, r->next, __ATOMIC_RELAXED);
    sf__unlock(&ready_lock);
    return r;
}

bool sf__after_claim(sf_future *c, uint64_t *sp)
{
    uint64_t s = *sp;
    while (sf__status(s) == SF__WAITING && (s & SF__CANCEL) && !(s & SF__FAILED)) {
        uint64_t to = sf__with_status(s, SF__RUNNING) | (s & (SF__ORPHAN | SF__WATCHED));
        SF__ASSERT_TRANSITION(s, to);
        /* Acquire: its maker's writes (fn, val, lineage) and every dep's
         * completion, through the ready mark's release (sf__after_dep_done),
         * whose read-modify-writes of `left` acquired them all. */
        if (atomic_compare_exchange_weak_explicit(&c->state, &s, to, memory_order_acquire,
                                                  memory_order_acquire)) {
            /* What c's tasks take as their lineage (future.h): read only by
             * the thread that runs c, which claimed it after this store. */
            c->kids_up_tag = to;
            *sp = to;
            return true;
        }
    }
    *sp = s;
    return false;
}

sf_future *sf__after_take(struct sf__thread *me, uint64_t *claimed)
{
    (void)me;
    struct sf__ready *r;
    while ((r = pop()) != NULL) {
        sf_future *f = r->f;
        uint64_t want = r->s;
        if (sf__status(want) == SF__RUNNING) {
            /* A dep its maker claimed: ours to run, as claimed. */
            *claimed = want;
            return f;
        }
        /* Freed first: the claim below may fail, and if it succeeds the
         * record is no longer needed (c's argument is in c). */
        free(r);
        atomic_fetch_sub_explicit(&sf__after_live, 1, memory_order_relaxed);
        /* Acquire: f's fields, written by its maker before its first
         * release (sf_do_after's). */
        uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
        if (sf__tag(s) == sf__tag(want) && sf__after_claim(f, &s)) {
            *claimed = s;
            return f;
        }
        /* Got or cancelled (and maybe released and reused) since: dropped. */
    }
    return NULL;
}

int sf__after_cancel(struct sf__thread *me, sf_future *c, uint64_t s)
{
    /* First claim it (FAILED|SEEN while WAITING: a taker leaves it), then
     * write the failure - fail_code shares its word with the region a taker
     * would run it in, msg with its argument - then complete it. Acquire
     * on failure: a DONE reread is the caller's to read. */
    for (;;) {
        if (sf__status(s) != SF__WAITING)
            return sf__status(s) == SF__DONE ? 1 : 0; /* run, or being run */
        if (s & SF__FAILED)
            return 0; /* another cancel has it */
        SF__ASSERT_TRANSITION(s, s | SF__FAILED | SF__SEEN);
        if (atomic_compare_exchange_weak_explicit(&c->state, &s, s | SF__FAILED | SF__SEEN,
                                                  memory_order_acquire, memory_order_acquire))
            break;
    }
    if (me != NULL) {
        SF__TRACE(me, DISCARD, s, 0);
        SF__BUMP(sf__sched(me)->c_cancelled);
    }
    /* Relaxed, both: published by the completing CAS's release. */
    atomic_store_explicit(&c->fail_code, ECANCELED, memory_order_relaxed);
    __atomic_store_n(&c->msg, NULL, __ATOMIC_RELAXED);
    uint64_t c_s = s | SF__FAILED | SF__SEEN, to;
    uintptr_t watch = 0;
    bool closed = false;
    do {
        sf__after_closing(c, c_s, &watch, &closed);
        to = sf__with_status(c_s, SF__DONE) | SF__FAILED | SF__SEEN;
        SF__ASSERT_TRANSITION(c_s, to);
    /* acq_rel: release publishes the failure; ready or WATCHED may come
     * meanwhile (a reread, relaxed). Its handle is held (the caller's), so
     * it is not ORPHAN and stays ours. */
    } while (!atomic_compare_exchange_weak_explicit(&c->state, &c_s, to, memory_order_acq_rel,
                                                    memory_order_relaxed));
    if (watch != 0)
        sf__after_fire(watch);
    /* Relaxed: after the CAS, a full barrier, against a sleeper's heavy
     * fence (get.c). */
    if (atomic_load_explicit(&c->waiters, memory_order_relaxed) != 0)
        sf__futex_wake(sf__future_futex(c), INT_MAX);
    return 0;
}

void sf__after_reset(void)
{
    /* Relaxed: one thread runs now (the caller's contract). */
    atomic_store_explicit(&ready, NULL, memory_order_relaxed);
    fifo = NULL;
    atomic_store_explicit(&sf__after_live, 0, memory_order_relaxed);
    /* Usable whatever state a fork caught it in. */
    sf__lock_init(&ready_lock, SF__RANK_LEAF, "ready_lock");
}
