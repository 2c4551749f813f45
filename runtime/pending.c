/*
 * pending.c - the slow paths of a thread's pending queue: creation, growth,
 * the owner's pop while it helps, and the claim scan of other threads.
 * The algorithm and its invariant are at the top of pending.h.
 */
#include "pending.h"

#include <errno.h>
#include <stdlib.h>

static struct sf__ring *ring_new(uint64_t size)
{
    struct sf__ring *r = calloc(1, sizeof *r + size * sizeof r->slot[0]);
    if (r != NULL)
        r->mask = size - 1;
    return r;
}

int sf__pending_init(struct sf__pending *q, int id)
{
    struct sf__ring *r = ring_new(SF__RING_MIN);
    if (r == NULL)
        return -1;
    atomic_init(&q->top, 0);
    atomic_init(&q->bottom, 0);
    q->seq = (uint64_t)(unsigned)id << SF__SEQ_BITS;
    atomic_init(&q->sub_seq, q->seq);
    atomic_init(&q->ring, r);
    return 0;
}

void sf__pending_destroy(struct sf__pending *q)
{
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    while (r != NULL) {
        struct sf__ring *older = r->retired;
        free(r);
        r = older;
    }
    atomic_store_explicit(&q->ring, NULL, memory_order_relaxed);
}

bool sf__pending_make_room(struct sf__thread *t)
{
    struct sf__pending *q = &t->q;
    sf__pending_tidy(t, INT32_MAX);
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    struct sf__ring *old = atomic_load_explicit(&q->ring, memory_order_relaxed);
    if (b - tp <= old->mask)
        return true;
    struct sf__ring *r = ring_new((old->mask + 1) * 2);
    if (r == NULL)
        return false;
    for (uint64_t i = tp; i < b; i++)
        atomic_store_explicit(&r->slot[i & r->mask],
                              atomic_load_explicit(&old->slot[i & old->mask],
                                                   memory_order_relaxed),
                              memory_order_relaxed);
    /* A scanner may still read the old ring: keep it until shutdown. */
    r->retired = old;
    /* Release: a scanner that loads the new ring (acquire) sees its slots. */
    atomic_store_explicit(&q->ring, r, memory_order_release);
    return true;
}

sf_future *sf__pending_pop_own(struct sf__thread *t, uint64_t *claimed)
{
    struct sf__pending *q = &t->q;
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    for (;;) {
        uint64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
        uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
        if (b == tp)
            return NULL;
        sf_future *f = atomic_load_explicit(&r->slot[(b - 1) & r->mask], memory_order_relaxed);
        uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
        if (sf__pending_here(s, t->id)) {
            uint64_t run = (s & ~SF__STATUS_MASK) | SF__RUNNING;
            /* Acquire: we are about to read fn and val (see sf__pending_push). */
            if (!atomic_compare_exchange_strong_explicit(&f->state, &s, run,
                                                         memory_order_acquire,
                                                         memory_order_relaxed))
                continue; /* claimed or released meanwhile: look again */
            atomic_store_explicit(&q->bottom, b - 1, memory_order_release);
            *claimed = run;
            return f;
        }
        /* Not pending here: nothing to lose by dropping the slot. */
        atomic_store_explicit(&q->bottom, b - 1, memory_order_release);
    }
}

sf_future *sf__pending_steal(struct sf__thread *victim, bool only_submitted, uint64_t limit,
                             uint64_t *claimed)
{
    struct sf__pending *q = &victim->q;
    /* Acquire on bottom and ring: the slots below bottom, and the ring's
     * contents, were published by the owner's release stores. top is only a
     * starting hint (relaxed). */
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_acquire);
    uint64_t sub = only_submitted ? atomic_load_explicit(&q->sub_seq, memory_order_acquire)
                                  : UINT64_MAX;
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_acquire);
    for (uint64_t i = tp; i < b && i - tp < limit; i++) {
        sf_future *f = atomic_load_explicit(&r->slot[i & r->mask], memory_order_relaxed);
        if (f == NULL)
            continue;
        /* Relaxed: a hint; the CAS below decides. Any pointer found in any
         * ring is a valid future (memory is type-stable), possibly recycled:
         * the tag check makes sure we claim only a task queued here, and the
         * seq check that it was submitted. */
        uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
        if (!sf__pending_here(s, victim->id) || sf__tag(s) >= sub)
            continue;
        uint64_t run = (s & ~SF__STATUS_MASK) | SF__RUNNING;
        if (atomic_compare_exchange_strong_explicit(&f->state, &s, run, memory_order_acquire,
                                                    memory_order_relaxed)) {
            *claimed = run;
            return f;
        }
    }
    return NULL;
}

bool sf__pending_empty(struct sf__thread *t)
{
    sf__pending_tidy(t, INT32_MAX);
    return atomic_load_explicit(&t->q.top, memory_order_relaxed) ==
           atomic_load_explicit(&t->q.bottom, memory_order_relaxed);
}

void sf__pending_submit_slow(struct sf__thread *t, uint64_t old_sub)
{
    struct sf__pending *q = &t->q;
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    unsigned long n = 0;
    for (uint64_t i = atomic_load_explicit(&q->top, memory_order_relaxed); i < b; i++) {
        sf_future *f = atomic_load_explicit(&r->slot[i & r->mask], memory_order_relaxed);
        uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
        if (sf__pending_here(s, t->id) && sf__tag(s) >= old_sub)
            n++;
    }
    sf__trace(t, "Submit All\t%lu", n);
}
