/*
 * pending.h - a thread's pending queue: single-owner push/pop at the bottom,
 * claim scans by any thread from the top (spmc), with a private part that
 * the owner claims without any atomic read-modify-write.
 *
 * Algorithm. A ring of future pointers indexed by two monotonic 64-bit
 * counters, top <= bottom, both written only by the owning thread. The owner
 * pushes at bottom (sf_do), pops its newest entry at bottom (wait inlining,
 * helping) and advances top over entries that are no longer pending. Other
 * threads never write the ring or its indices: they claim a task by changing
 * the future's own state word. The state word is the only arbiter of who runs
 * a task, so owner and thieves need no agreement on indices (a Chase-Lev
 * deque's owner pays a store-load fence on every pop to settle the last
 * element; here an entry claimed elsewhere is just skipped and later dropped).
 * A claimer may read stale entries; the tag in the state word (internal.h)
 * makes that harmless.
 *
 * Private and public tasks (the split of Lace's deque, by sequence number
 * rather than index). A task whose seq is >= pub_seq is private: only the
 * owner claims it, with plain stores, so the fork-join fast path has no
 * atomic RMW and no fence. Tasks below pub_seq are public: anyone claims them
 * by CAS, the owner too. Thieves that find only private work set `want`; the
 * owner, which looks at `want` at every sf_get, then publishes everything it
 * has (pub_seq = seq). A thief that has asked and still finds nothing after
 * spinning (the owner may be deep in a long task) takes private tasks itself
 * through the Dekker protocol below (SF__SCAN_FORCE): slower, but no pending
 * task is ever out of a blocked getter's reach. pub_seq only grows, so a claimer that
 * saw a task's seq below some value of pub_seq knows the owner will never
 * claim that task with plain stores.
 *
 * A thread that must claim one particular private future it does not own (a
 * foreign sf_get of it, a foreign sf_release, the drain at shutdown) cannot
 * wait for the owner to publish: the owner may never call libsf again. It
 * runs a Dekker protocol with the owner instead (sf__foreign_claim): it
 * announces the future in `foreign`, issues the heavy asymmetric fence and
 * backs off if the owner announced the same future in `claiming`, else
 * claims it by CAS; the owner announces in `claiming`, issues the light
 * fence and, if it sees the future in `foreign`, waits for that claimer's
 * verdict, else checks that the state is still PENDING (a claimer that
 * finished before the announcement) and claims it with a plain store. The
 * membarrier puts a full barrier in the owner's instruction stream either
 * before its announcement (then the owner sees `foreign`, or the finished
 * claimer's CAS through `foreign`'s release/acquire) or after it (then the
 * claimer sees `claiming` and backs off). Owner wins ties.
 *
 * Invariant (deadlock freedom rests on it, see get.c): every future that is
 * PENDING and was pushed by this thread is referenced by a slot in
 * [top, bottom) of the current ring, and can be claimed by any thread
 * through sf__foreign_claim whatever the owner does. Push adds at bottom;
 * top and bottom move only past slots whose future the mover claimed, that
 * is not PENDING, or that is PENDING under another queue's tag (then that
 * queue references it).
 *
 * Submission. sub_seq is a watermark over the owner's push counter: a task
 * whose seq is below it was pushed before some sf_get of its thread, i.e. was
 * submitted, and an idle pool worker may take it once it is public.
 *
 * Rings grow by doubling; old rings stay allocated until shutdown because a
 * scanner may still be reading them (their entries are stale but valid).
 */
#ifndef SF_PENDING_H
#define SF_PENDING_H

#include "internal.h"

#define SF__RING_MIN 256

/* What a scan of another thread's queue may claim. */
enum sf__scan {
    SF__SCAN_TAKE = 1,   /* idle worker: only submitted tasks (laziness) */
    SF__SCAN_FORCE = 2,  /* private tasks too, by the Dekker protocol (slow) */
    SF__SCAN_HELP = 0,   /* blocked getter: any public task */
    SF__SCAN_DRAIN = SF__SCAN_FORCE /* shutdown: everything */
};

int sf__pending_init(struct sf__pending *q, int id);
void sf__pending_destroy(struct sf__pending *q);
bool sf__pending_make_room(struct sf__thread *t);
sf_future *sf__pending_pop_own(struct sf__thread *t, uint64_t *claimed);
sf_future *sf__pending_steal(struct sf__thread *victim, int mode, uint64_t limit,
                             uint64_t *claimed);
bool sf__pending_empty(struct sf__thread *t);
void sf__pending_submit_slow(struct sf__thread *t, uint64_t old_sub);
void sf__pending_publish(struct sf__thread *t);
void sf__pending_trim(struct sf__thread *t, sf_future *f);
bool sf__own_claim_contended(struct sf__thread *t, sf_future *f, uint64_t *sp, uint64_t to);
bool sf__foreign_claim(sf_future *f, uint64_t *sp, uint64_t to);

/* Is s the state of a future that is pending in the queue of record id? */
static inline bool sf__pending_here(uint64_t s, int id)
{
    return sf__status(s) == SF__PENDING &&
           (sf__tag(s) >> SF__SEQ_BITS) == (uint64_t)(unsigned)id;
}

/* The record id in a state's tag. */
static inline int sf__tag_owner(uint64_t s) { return (int)(sf__tag(s) >> SF__SEQ_BITS); }

/* Owner: publish if a thief asked. Called at every sf_get (and while a get
 * waits, and by idle workers for their own queues). */
static inline void sf__pending_poll(struct sf__thread *t)
{
    /* Relaxed: a hint; a request missed now is seen at the next call. */
    if (SF__UNLIKELY(atomic_load_explicit(&t->q.want, memory_order_relaxed)))
        sf__pending_publish(t);
}

/*
 * Owner: move its own future f from PENDING state *sp to state `to` (RUNNING
 * or FREE). Returns false, with *sp updated, if another thread claimed it
 * first. Private futures take plain stores and a compiler barrier; public
 * ones a CAS.
 */
static inline bool sf__own_claim(struct sf__thread *t, sf_future *f, uint64_t *sp, uint64_t to)
{
    struct sf__pending *q = &t->q;
    /* Relaxed: the owner is pub_seq's only writer. */
    if (sf__tag(*sp) < atomic_load_explicit(&q->pub_seq, memory_order_relaxed))
        /* Acquire: a claimer reads fn and val (see sf__pending_push). */
        return atomic_compare_exchange_strong_explicit(&f->state, sp, to, memory_order_acquire,
                                                       memory_order_relaxed);
    /* Dekker with sf__foreign_claim: announce, light fence, look. */
    atomic_store_explicit(&q->claiming, f, memory_order_relaxed);
    sf__fence_light();
    /* Acquire: if a foreign claimer already finished and cleared `foreign`
     * (release), its verdict on the state is visible to the load below. */
    if (SF__UNLIKELY(atomic_load_explicit(&q->foreign, memory_order_acquire) == f))
        return sf__own_claim_contended(t, f, sp, to);
    /* A foreign claimer may have come and gone before our announcement:
     * then it saw no claim of ours and may have taken f. Any later one sees
     * our announcement and backs off, so once the state is still what we
     * read, it stays ours. */
    uint64_t now = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (SF__UNLIKELY(now != *sp)) {
        atomic_store_explicit(&q->claiming, NULL, memory_order_release);
        *sp = now;
        return false;
    }
    /* Relaxed: no other thread writes a private future's state while we
     * announce it (foreign claimers back off, thieves take public ones). */
    atomic_store_explicit(&f->state, to, memory_order_relaxed);
    /* Release: a foreign claimer that sees claiming cleared (acquire) sees
     * the state above, so its CAS from PENDING fails. */
    atomic_store_explicit(&q->claiming, NULL, memory_order_release);
    *sp = to;
    return true;
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

/* Owner: drop up to max entries at the top that are no longer pending here. */
static inline void sf__pending_tidy(struct sf__thread *t, uint64_t max)
{
    struct sf__pending *q = &t->q;
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    uint64_t start = tp;
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    while (tp < b && tp - start < max) {
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

/* Owner, after claiming f: drop f's slot if it is the newest one, the
 * fork-join fast path. Otherwise trim (pending.c): slots below the newest
 * whose tasks finished (tasks got oldest first leave those behind), and the
 * top if f was the oldest. Without trimming a queue would grow with every
 * task ever made, not with the tasks pending. */
static inline void sf__pending_forget(struct sf__thread *t, sf_future *f)
{
    struct sf__pending *q = &t->q;
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_relaxed);
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    if (SF__LIKELY(b > tp &&
                   atomic_load_explicit(&r->slot[(b - 1) & r->mask], memory_order_relaxed) == f))
        /* Release keeps bottom a release sequence for scanners; a scanner
         * that still reads b sees f's slot and fails to claim it. */
        atomic_store_explicit(&q->bottom, b - 1, memory_order_release);
    else
        sf__pending_trim(t, f);
}

/* Owner, at every sf_get: submit everything pushed since the last get. */
static inline void sf__pending_submit(struct sf__thread *t)
{
    struct sf__pending *q = &t->q;
    uint64_t old = atomic_load_explicit(&q->sub_seq, memory_order_relaxed);
    if (old == q->seq)
        return;
    /* Release pairs with the acquire load of sub_seq by idle workers. */
    atomic_store_explicit(&q->sub_seq, q->seq, memory_order_release);
    if (SF__UNLIKELY(sf__rt.trace))
        sf__pending_submit_slow(t, old);
    /* A worker is idle: publish now rather than make it ask (it would wait
     * for our next call, which may be a whole task away). Relaxed: a hint;
     * a worker that goes idle just after asks through `want`. */
    if (atomic_load_explicit(&sf__rt.idle_workers, memory_order_relaxed) > 0)
        /* Release pairs with the scanners' acquire load of pub_seq. */
        atomic_store_explicit(&q->pub_seq, q->seq, memory_order_release);
    /* Dekker with an idle worker going to sleep (pool.c, worker_main): it
     * raises idle_sleepers, issues the heavy fence, then rescans for
     * submitted work; we store sub_seq, light fence, then read
     * idle_sleepers. One of the two sees the other's write. */
    sf__fence_light();
    /* Relaxed: ordered by the fence pair above. */
    if (atomic_load_explicit(&sf__rt.idle_sleepers, memory_order_relaxed) > 0)
        sf__pool_wake_one();
}

#endif /* SF_PENDING_H */
