/*
 * pending.h - a thread's pending queue: single-owner push/pop at the bottom,
 * any-thread claim scans from the top (spmc).
 *
 * Algorithm. A ring of future pointers indexed by two monotonic 64-bit
 * counters, top <= bottom, both written only by the owning thread. The owner
 * pushes at bottom (sf_do), pops its newest entry at bottom (wait inlining,
 * helping) and advances top over entries that are no longer pending. Other
 * threads never write the queue: they read top, bottom and the ring and claim a
 * task by a CAS on the future's own state word (PENDING -> RUNNING). The CAS
 * is the only arbiter of who runs a task, so the queue itself needs no
 * agreement between owner and thieves (unlike a Chase-Lev deque, whose owner
 * pays a store-load fence on every pop to settle the last element); an entry
 * whose future was claimed elsewhere is just skipped and later dropped by the
 * owner. The price is that claimers may read stale entries, which the tag in
 * the state word (internal.h) makes harmless.
 *
 * Invariant (deadlock freedom rests on it, see get.c): every future that is
 * PENDING and was pushed by this thread is referenced by a slot in
 * [top, bottom) of the current ring. Push adds at bottom before anyone can
 * claim the future elsewhere; top and bottom move only past slots whose future
 * was claimed by the mover, is not PENDING, or is PENDING under another
 * queue's tag (then that queue references it).
 *
 * Submission. sub_seq is a watermark over the owner's push counter: a task
 * whose seq is below it was pushed before some sf_get of its thread, i.e. was
 * submitted, and an idle pool worker may take it. A task's seq lives in its
 * state tag, so the check needs no slot metadata and stays right however stale
 * the slot a worker read.
 *
 * Rings grow by doubling; old rings stay allocated until shutdown because a
 * scanner may still be reading them (their entries are stale but valid).
 */
#ifndef SF_PENDING_H
#define SF_PENDING_H

#include "internal.h"

#define SF__RING_MIN 256

int sf__pending_init(struct sf__pending *q, int id);
void sf__pending_destroy(struct sf__pending *q);
bool sf__pending_make_room(struct sf__thread *t);
sf_future *sf__pending_pop_own(struct sf__thread *t, uint64_t *claimed);
sf_future *sf__pending_steal(struct sf__thread *victim, bool only_submitted, uint64_t limit,
                             uint64_t *claimed);
bool sf__pending_empty(struct sf__thread *t);
void sf__pending_submit_slow(struct sf__thread *t, uint64_t old_sub);

/* Is s the state of a future that is pending in the queue of record id? */
static inline bool sf__pending_here(uint64_t s, int id)
{
    return sf__status(s) == SF__PENDING &&
           (sf__tag(s) >> SF__SEQ_BITS) == (uint64_t)(unsigned)id;
}

/* Owner: queue f. Returns false (f untouched) when the ring cannot grow. */
static inline bool sf__pending_push(struct sf__thread *t, sf_future *f)
{
    struct sf__pending *q = &t->q;
    /* Relaxed loads of top, bottom and ring: the owner is their only writer. */
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    if (SF__UNLIKELY(b - tp > r->mask)) {
        if (!sf__pending_make_room(t))
            return false;
        r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    }
    uint64_t seq = q->seq++;
    /* Release: whoever claims f by a CAS that reads this value (possibly
     * having found f through a stale slot, without the bottom store below)
     * must see fn and val written before it. */
    atomic_store_explicit(&f->state, (seq << SF__TAG_SHIFT) | SF__PENDING,
                          memory_order_release);
    /* Relaxed: the slot is published by the release store of bottom. */
    atomic_store_explicit(&r->slot[b & r->mask], f, memory_order_relaxed);
    /* Release: a scanner that loads bottom (acquire) sees the slot. */
    atomic_store_explicit(&q->bottom, b + 1, memory_order_release);
    return true;
}

/* Owner, after claiming f: drop f's slot if it is the newest one (the common
 * case of fork-join code); anywhere else it stays until tidied. */
static inline void sf__pending_forget(struct sf__thread *t, sf_future *f)
{
    struct sf__pending *q = &t->q;
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    if (b > tp && atomic_load_explicit(&r->slot[(b - 1) & r->mask], memory_order_relaxed) == f)
        /* Release keeps bottom a release sequence for scanners; a scanner
         * that still reads b sees f's slot and fails to claim it. */
        atomic_store_explicit(&q->bottom, b - 1, memory_order_release);
}

/* Owner: drop up to max entries at the top that are no longer pending here. */
static inline void sf__pending_tidy(struct sf__thread *t, int max)
{
    struct sf__pending *q = &t->q;
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    uint64_t start = tp;
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    while (tp < b && max-- > 0) {
        sf_future *f = atomic_load_explicit(&r->slot[tp & r->mask], memory_order_relaxed);
        /* Relaxed: a stale "not pending" only means the claim already
         * happened; nothing is read through f afterwards. */
        if (sf__pending_here(atomic_load_explicit(&f->state, memory_order_relaxed), t->id))
            break;
        tp++;
    }
    if (tp != start)
        /* Relaxed: top is only where scanners start looking; every slot it
         * skips holds nothing they could claim. */
        atomic_store_explicit(&q->top, tp, memory_order_relaxed);
}

/* Owner, at every sf_get: submit everything pushed since the last get. */
static inline void sf__pending_submit(struct sf__thread *t)
{
    struct sf__pending *q = &t->q;
    uint64_t old = atomic_load_explicit(&q->sub_seq, memory_order_relaxed);
    if (old == q->seq)
        return;
    sf__pending_tidy(t, 4);
    /* Release pairs with the acquire load of sub_seq by idle workers: the
     * tasks below the watermark were published before it (they were pushed
     * before this store, with their own release stores). */
    atomic_store_explicit(&q->sub_seq, q->seq, memory_order_release);
    if (SF__UNLIKELY(sf__rt.trace))
        sf__pending_submit_slow(t, old);
    /* Dekker with an idle worker going to sleep (pool.c, worker_idle): it
     * raises idle_sleepers, issues the heavy fence, then rescans for
     * submitted work; we store sub_seq, light fence, then read
     * idle_sleepers. One of the two sees the other's write. */
    sf__fence_light();
    /* Relaxed: ordered by the fence pair above. */
    if (atomic_load_explicit(&sf__rt.idle_sleepers, memory_order_relaxed) > 0)
        sf__pool_wake_one();
}

#endif /* SF_PENDING_H */
