/*
 * pending.c - the slow paths of a pending queue: creation, growth,
 * the owner's pop while it helps, trimming, publishing, and the claim scan
 * of other threads. The algorithm and its invariant are at the top of
 * pending.h.
 */
#include "queue/pending.h"

#include <stdlib.h>


static unsigned log2_of(uint64_t size) { return 63u - (unsigned)__builtin_clzll(size); }

#ifdef SF_DEBUG
/*
 * Debug build: the owner, about to read through slot i of r, which holds p.
 * A marked slot in [top, bottom) names a live, pending local future (pending.h,
 * Local futures) - unless the program let an sf_task's memory go before its
 * get (sf.h). The queue cannot tell a live frame from a dead one, but it can
 * tell whether the memory is still the future the slot was filled with:
 * PENDING under this queue, with the tag of the push that filled the slot
 * (whose low 32 bits the ring keeps beside it, Stale slots), and the slot's
 * index in waiters (sf__pending_put). A frame reused since (another call's
 * locals, another sf_task) breaks that, and the owner would otherwise read
 * garbage as a task. The exception is the slot that sf__pending_trim_slow
 * drops, whose future its caller just claimed (debug_claimed).
 */
static void check_marked(const struct sf__pending *q, const struct sf__ring *r, uint64_t i,
                         sf_future *p)
{
    if (p == q->debug_claimed)
        return;
    sf_future *f = sf__slot_future(p);
    /* Relaxed: this thread's own stores if it is still our future; else
     * whatever the memory holds now, which is what is checked. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    uint32_t w = atomic_load_explicit(&f->local_slot, memory_order_relaxed);
    if (!sf__pending_holds(q, s) || (uint32_t)sf__tag(s) != r->seq[i & r->mask] ||
        w != (uint32_t)i)
        sf__misuse("an sf_task (%p) was not got before its memory went away (sf_task_get it "
                   "before its frame returns)",
                   (void *)f);
}
#define CHECK_SLOT(q, r, i, p) (sf__slot_local(p) ? check_marked((q), (r), (i), (p)) : (void)0)
#else
#define CHECK_SLOT(q, r, i, p) ((void)0)
#endif

/* A ring's slots and, after them, their push counters (sf__ring.seq). */
static size_t ring_bytes(uint64_t size)
{
    return sizeof(struct sf__ring) + size * (sizeof(sf_future *) + sizeof(uint32_t));
}

static struct sf__ring *ring_new(uint64_t size)
{
    struct sf__ring *r = calloc(1, ring_bytes(size));
    if (r != NULL) {
        r->mask = size - 1;
        r->seq = (uint32_t *)(void *)&r->slot[size];
    }
    return r;
}

/* Owner: a ring of `size`, the spare of that size if there is one. */
static struct sf__ring *ring_get(struct sf__pending *q, uint64_t size)
{
    unsigned k = log2_of(size);
    if (k >= SF__RING_SIZES)
        return NULL;
    struct sf__ring *r = q->spare[k];
    if (r != NULL) {
        q->spare[k] = NULL;
        return r;
    }
    return ring_new(size);
}

/* Owner: copies [top, bottom) into r, publishes r, and keeps the old ring
 * as the spare of its size with its pages discarded. No spare of that size
 * exists: the old ring was made or taken when there was none, and since then
 * only rings of other sizes were made. */
static void ring_switch(struct sf__pending *q, struct sf__ring *r)
{
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    uint64_t tp = SF__OWN_LOAD(&q->top);
    struct sf__ring *old = SF__OWN_LOAD(&q->ring);
    for (uint64_t i = tp; i < b; i++) {
        /* Relaxed: the ring is published by the release store below. */
        atomic_store_explicit(&r->slot[i & r->mask], SF__OWN_LOAD(&old->slot[i & old->mask]),
                              memory_order_relaxed);
        r->seq[i & r->mask] = old->seq[i & old->mask];
    }
    /* Release: a scanner that loads the new ring (acquire) sees its slots. */
    atomic_store_explicit(&q->ring, r, memory_order_release);
    /* A scanner still reading the old ring finds NULL slots from now on
     * (skipped), or stale futures of this queue (claims check the tag). */
    if (old->mask + 1 >= SF__RING_SHRINK_MIN)
        sf__memory_discard(old->slot, ring_bytes(old->mask + 1) - sizeof *old);
    q->spare[log2_of(old->mask + 1)] = old;
}

int sf__pending_init(struct sf__pending *q, int id, uint64_t first)
{
    struct sf__ring *r = ring_new(SF__RING_MIN);
    if (r == NULL)
        return -1;
    atomic_init(&q->top, 0);
    atomic_init(&q->bottom, 0);
    q->seq = (uint64_t)(unsigned)id << SF__SEQ_BITS | first;
    q->tag0 = q->seq;
    q->tag_span = (((uint64_t)(unsigned)id + 1) << SF__SEQ_BITS) - q->tag0;
    q->pub_idx = 0;
    q->fl = NULL;
    q->id = id;
#ifdef SF_DEBUG
    q->debug_claimed = NULL;
#endif
    atomic_init(&q->sub_seq, q->seq);
    atomic_init(&q->pub_seq, q->seq);
    atomic_init(&q->ring, r);
    /* CHECK until the owner's first get settles it: a cancellation made
     * while this thread registers may have missed its queue (cancel.h). */
    atomic_init(&q->want, SF__WANT_CHECK);
    atomic_init(&q->push_public, 0);
    sf__gate_init(&q->gate);
    SF__OWNER_SET(q);
    return 0;
}

void sf__pending_destroy(struct sf__pending *q)
{
    /* Relaxed: nobody else uses q any more (the caller's contract). */
    sf__gate_destroy(&q->gate);
    free(atomic_load_explicit(&q->ring, memory_order_relaxed));
    for (unsigned k = 0; k < SF__RING_SIZES; k++) {
        free(q->spare[k]);
        q->spare[k] = NULL;
    }
    atomic_store_explicit(&q->ring, NULL, memory_order_relaxed);
}

/* Owner: drop up to max slots at the top that hold nothing pending here:
 * no future, one that is not pending in q, or a stale slot (pending.h,
 * Stale slots: the future is pending under a later push of ours). */
void sf__pending_trim_top(struct sf__pending *q, uint64_t max)
{
    SF__OWNER_CHECK(q, "trimming a pending queue");
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    uint64_t start = SF__OWN_LOAD(&q->top), tp = start;
    struct sf__ring *r = SF__OWN_LOAD(&q->ring);
    while (tp < b && tp - start < max) {
        sf_future *p = SF__OWN_LOAD(&r->slot[tp & r->mask]);
        CHECK_SLOT(q, r, tp, p);
        sf_future *f = sf__slot_future(p);
        /* Relaxed: a stale "not pending" only means the claim already
         * happened; nothing is read through f afterwards. The owner reads
         * its own latest push of f or something later, never an earlier
         * push (coherence), so a tag that matches the slot's is the push
         * that filled it. A marked slot is a live future of ours (Local
         * futures). */
        uint64_t s = f != NULL ? atomic_load_explicit(&f->state, memory_order_relaxed) : 0;
        if (sf__pending_holds(q, s) && (uint32_t)sf__tag(s) == r->seq[tp & r->mask])
            break;
        tp++;
    }
    if (tp != start)
        /* Relaxed: top is only where scanners start looking; every slot it
         * skips holds nothing they could claim. */
        atomic_store_explicit(&q->top, tp, memory_order_relaxed);
    /* A burst is over when a big ring is mostly empty: halve it (or more),
     * keeping it at least four times what it holds, so that a queue that
     * hovers around a size does not flip between two. */
    uint64_t held = b - tp, size = r->mask + 1;
    if (size >= SF__RING_SHRINK_MIN && held * 8 < size) {
        uint64_t want = SF__RING_MIN; /* a power of two >= 4 x held: <= size / 2 */
        while (want < held * 4)
            want *= 2;
        struct sf__ring *nr = ring_get(q, want);
        if (nr != NULL)
            ring_switch(q, nr);
    }
}

/* Owner: make room for one more slot, trimming or doubling the ring. */
bool sf__pending_grow(struct sf__pending *q)
{
    sf__pending_trim_top(q, UINT64_MAX);
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    uint64_t tp = SF__OWN_LOAD(&q->top);
    struct sf__ring *old = SF__OWN_LOAD(&q->ring);
    if (b - tp <= old->mask)
        return true;
    struct sf__ring *r = ring_get(q, (old->mask + 1) * 2);
    if (r == NULL)
        return false;
    ring_switch(q, r);
    return true;
}

/* Owner: claim its newest pending task (helping while a get waits), if
 * `region` admits it (pending.h, Regions). Tasks of a region are
 * the newest while its task runs here, so a newest one outside it means
 * none is left. */
sf_future *sf__pending_pop(struct sf__pending *q, uint32_t region, uint64_t *claimed)
{
    SF__OWNER_CHECK(q, "popping a pending queue");
    struct sf__ring *r = SF__OWN_LOAD(&q->ring);
    for (;;) {
        uint64_t b = SF__OWN_LOAD(&q->bottom);
        if (b == SF__OWN_LOAD(&q->top))
            return NULL;
        sf_future *p = SF__OWN_LOAD(&r->slot[(b - 1) & r->mask]);
        CHECK_SLOT(q, r, b - 1, p);
        sf_future *f = sf__slot_future(p);
        /* Relaxed: the claim below decides; a stale value only fails it. A
         * marked slot is a live future of ours (Local futures). */
        uint64_t s = f != NULL ? atomic_load_explicit(&f->state, memory_order_relaxed) : 0;
        if (sf__pending_holds(q, s)) {
            /* Relaxed: our own store at sf_do, as the state says. */
            if (region != SF__REGION_ANY &&
                !sf__region_admits(region, atomic_load_explicit(&f->region, memory_order_relaxed)))
                return NULL;
            if (!sf__pending_claim_own(q, f, &s, sf__with_status(s, SF__RUNNING)))
                continue; /* claimed or released meanwhile: look again */
            sf__pending_set_bottom(q, b - 1);
            /* A local future's local_slot held its index (sf__pending_put):
             * nobody sleeps on it, and its completion reads 0 as waiters. */
            if (sf__slot_local(SF__OWN_LOAD(&r->slot[(b - 1) & r->mask])))
                atomic_store_explicit(&f->local_slot, 0, memory_order_relaxed);
            *claimed = s;
            return f;
        }
        /* Not pending here: nothing to lose by dropping the slot. */
        sf__pending_set_bottom(q, b - 1);
    }
}

/*
 * Any thread but the owner: claim the oldest task of q that `flags` allow
 * and `region` admits (pending.h, Regions), looking at most `limit` slots from the top. Asks the
 * owner to publish (`want`) when it saw only private tasks.
 */
sf_future *sf__pending_steal(struct sf__pending *q, unsigned flags, uint32_t region, uint64_t limit,
                             uint64_t *claimed)
{
    /* Acquire on bottom and ring: the slots below bottom, and the ring's
     * contents, were published by the owner's release stores. top is only a
     * starting hint (relaxed). Acquire on the watermarks: pairs with their
     * release stores (the tasks below them were pushed before). */
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_acquire);
    uint64_t pub = atomic_load_explicit(&q->pub_seq, memory_order_acquire);
    uint64_t sub = (flags & SF__STEAL_SUBMITTED)
                       ? atomic_load_explicit(&q->sub_seq, memory_order_acquire)
                       : UINT64_MAX;
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_acquire);
    bool private_seen = false;
    uint64_t i;
    for (i = tp; i < b && i - tp < limit; i++) {
        /* Relaxed: published by the acquire load of bottom above. */
        sf_future *f = atomic_load_explicit(&r->slot[i & r->mask], memory_order_relaxed);
        if (f == NULL)
            continue;
        /* Another thread's stack: never read (Local futures). Its owner
         * promotes it when asked, as it publishes a private task. */
        if (sf__slot_local(f)) {
            private_seen = true;
            continue;
        }
        /* Relaxed: a hint; the claim below decides. Any pointer found in any
         * ring is a valid future (memory is type-stable), possibly recycled:
         * the tag check makes sure we claim only a task queued here, and the
         * seq checks that it is submitted and public. */
        uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
        if (!sf__pending_holds(q, s) || sf__tag(s) >= sub)
            continue;
        if (region != SF__REGION_ANY) {
            /* Acquire: pairs with the push's release of this state, after
             * which the maker's region is visible. A region read from a
             * later incarnation comes with a state change that fails the
             * claim below. */
            s = atomic_load_explicit(&f->state, memory_order_acquire);
            if (!sf__pending_holds(q, s) || sf__tag(s) >= sub ||
                !sf__region_admits(region, atomic_load_explicit(&f->region, memory_order_relaxed)))
                continue;
        }
        uint64_t run = sf__with_status(s, SF__RUNNING);
        if (sf__tag(s) >= pub) {
            if (!(flags & SF__STEAL_PRIVATE)) {
                private_seen = true;
                continue;
            }
            if (sf__claim_private_foreign(&q->gate, f, &s, run)) {
                *claimed = run;
                return f;
            }
            continue;
        }
        if (sf__claim_cas(f, &s, run)) {
            *claimed = run;
            return f;
        }
    }
    /* Ask the owner too when the window ended before bottom: the slots we
     * looked at were finished, and only the owner moves top past them (a
     * queue whose oldest tasks thieves took keeps them until its owner
     * trims, and thieves would see nothing behind them). The owner's poll
     * trims the top and publishes. Relaxed: a request; the owner polls it
     * at its next get. */
    if ((private_seen || i < b) &&
        !(atomic_load_explicit(&q->want, memory_order_relaxed) & SF__WANT_PUBLISH))
        atomic_fetch_or_explicit(&q->want, SF__WANT_PUBLISH, memory_order_relaxed);
    return NULL;
}

/* The index of a pending local future's slot from b (bottom) and lo, the
 * low 32 bits of that index kept in its waiters (sf__pending_put): the one
 * below b with those bits, as the slot is in [top, b) and b - top < 2^32 (a
 * ring of 2^32 slots would be 32 GiB). */
static inline uint64_t local_index(uint64_t b, uint32_t lo)
{
    return b - 1 - (uint32_t)((uint32_t)(b - 1) - lo);
}

/* Owner: the index in [tp, b) of r of the slot holding `slot`, a pending
 * local future marked; UINT64_MAX if none. local_index says where; if that
 * slot holds another, a search finds it. */
static uint64_t local_slot(struct sf__ring *r, uint64_t tp, uint64_t b, sf_future *slot)
{
    if (b <= tp)
        return UINT64_MAX;
    uint64_t i = local_index(
        b, atomic_load_explicit(&sf__slot_future(slot)->local_slot, memory_order_relaxed));
    if (i >= tp && SF__OWN_LOAD(&r->slot[i & r->mask]) == slot)
        return i;
    for (i = b; i > tp; i--)
        if (SF__OWN_LOAD(&r->slot[(i - 1) & r->mask]) == slot)
            return i - 1;
    return UINT64_MAX;
}

/* Owner: drops the slots at the bottom of [tp, b) that hold no pending
 * task (NULL, or a future claimed since) and returns the new bottom. The
 * ring keeps what they held until the next push. Relaxed loads of the
 * states: a stale "not pending" only means the claim already happened, and
 * nothing is read through a dropped slot. A marked slot is a live future
 * of ours (Local futures). */
static inline __attribute__((always_inline)) uint64_t
trim_bottom(struct sf__pending *q, struct sf__ring *r, uint64_t tp, uint64_t b)
{
    uint64_t b0 = b;
    while (b > tp) {
        sf_future *g = SF__OWN_LOAD(&r->slot[(b - 1) & r->mask]);
        CHECK_SLOT(q, r, b - 1, g);
        if (g != NULL && sf__pending_holds(q, atomic_load_explicit(&sf__slot_future(g)->state,
                                                                   memory_order_relaxed)))
            break;
        b--;
    }
    if (b != b0)
        sf__pending_set_bottom(q, b);
    return b;
}

/* Owner, after claiming the future whose slot holds `slot`, when that slot
 * was not the newest (pending.h, sf__pending_trim_slot). */
void sf__pending_trim_slow(struct sf__pending *q, sf_future *slot)
{
    SF__OWNER_CHECK(q, "trimming a pending queue");
    uint64_t b0 = SF__OWN_LOAD(&q->bottom);
    uint64_t tp = SF__OWN_LOAD(&q->top);
    struct sf__ring *r = SF__OWN_LOAD(&q->ring);
#ifdef SF_DEBUG
    /* A marked slot whose future is claimed: no pending one (check_marked). */
    q->debug_claimed = sf__slot_local(slot) ? slot : NULL;
#endif
    uint64_t b = trim_bottom(q, r, tp, b0);
    if (b > tp && SF__OWN_LOAD(&r->slot[tp & r->mask]) == slot) {
        /* It was the oldest (tasks got in the order they were made): move top
         * on, so workers scanning from it see pending tasks, not finished
         * ones. A few slots: the rest goes at the next trim. Its slot is
         * the first to go (claimed, it is not pending). */
        sf__pending_trim_top(q, 8);
#ifdef SF_DEBUG
        q->debug_claimed = NULL;
#endif
        return;
    }
#ifdef SF_DEBUG
    q->debug_claimed = NULL;
#endif
    if (!sf__slot_local(slot))
        return;
    /* A local future's slot between pending ones: cleared, since its memory
     * is about to be the caller's again (Local futures); a slot that
     * trim_bottom dropped (at or above the new bottom) needs nothing.
     * Relaxed: scanners never read through a marked slot, so they need no
     * order with this. */
    uint64_t i = local_slot(r, tp, b0, slot);
    if (i < b)
        atomic_store_explicit(&r->slot[i & r->mask], NULL, memory_order_relaxed);
}

/* Owner, after claiming the local future f whose slot was not the newest
 * (pending.h, sf__pending_trim_local): sf__pending_trim_slow for a local
 * future, without its searches - a node that gets its children in the
 * order it made them comes here for all but the last. f was pending until
 * the claim, so its slot i is in [top, bottom) at the index its local_slot
 * keeps.
 *
 * When the newest slot holds a local future too (pending: a marked slot in
 * [top, bottom) always does), that slot fills f's and bottom drops by one:
 * no hole is left. A node with k children got in the order it made them
 * thus fills about k/2 slots, and then finds the rest at the bottom, where
 * the fast path drops them, instead of leaving k - 1 holes for later trims
 * to pass one by one. Filling keeps the invariants: the slot takes its push
 * counter's bits along (Stale slots) and its future its new index; i >=
 * pub_idx since f's slot was marked, so no marked slot lands below pub_idx
 * (Local futures); and only the owner reads marked slots, so the order of
 * the stores is nobody else's business. Tasks in caller storage are never
 * claimed by thieves where they lie, so the order of the queue matters to
 * its owner alone: its pops while it helps take whatever is newest.
 *
 * Otherwise (the newest slot is a slab future, or finished) f's slot is
 * cleared first, since its memory is about to be the caller's again (Local
 * futures): then trim_bottom and trim_top pass it as a finished slot. */
void sf__pending_trim_local_slow(struct sf__pending *q, sf_future *f)
{
    SF__OWNER_CHECK(q, "trimming a pending queue");
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    uint64_t tp = SF__OWN_LOAD(&q->top);
    struct sf__ring *r = SF__OWN_LOAD(&q->ring);
    /* Relaxed: written by this thread alone (sf__pending_put). */
    uint64_t i = local_index(b, atomic_load_explicit(&f->local_slot, memory_order_relaxed));
    SF__ASSERT(b > tp && i >= tp && i >= q->pub_idx &&
                   SF__OWN_LOAD(&r->slot[i & r->mask]) == sf__slot_mark(f),
               "a claimed local future's slot is where its local_slot says");
    sf_future *g = SF__OWN_LOAD(&r->slot[(b - 1) & r->mask]);
    if (i < b - 1 && sf__slot_local(g)) {
        CHECK_SLOT(q, r, b - 1, g);
        /* Relaxed, the three: this thread's alone (a marked slot is read
         * by its owner only, local_slot as in sf__pending_put). */
        atomic_store_explicit(&r->slot[i & r->mask], g, memory_order_relaxed);
        r->seq[i & r->mask] = r->seq[(b - 1) & r->mask];
        atomic_store_explicit(&sf__slot_future(g)->local_slot, (uint32_t)i,
                              memory_order_relaxed);
        sf__pending_set_bottom(q, b - 1);
        return;
    }
    /* Relaxed: scanners never read through a marked slot, so they need no
     * order with this store. */
    atomic_store_explicit(&r->slot[i & r->mask], NULL, memory_order_relaxed);
    b = trim_bottom(q, r, tp, b);
    if (i == tp && b > tp)
        /* The oldest: move top on, as sf__pending_trim_slow does. */
        sf__pending_trim_top(q, 8);
}

/* Owner: promote the local future marked in slot i, p (Local futures): a
 * slab future from q->fl with the same task and tag takes the slot, and the
 * local one becomes MOVED, val naming it. False: no memory (it stays). */
static bool promote(struct sf__pending *q, struct sf__ring *r, uint64_t i, sf_future *p)
{
    CHECK_SLOT(q, r, i, p);
    sf_future *f = sf__slot_future(p);
    /* Relaxed: our own store (a marked slot is a live, pending local
     * future: nobody else writes it). */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    SF__ASSERT(sf__pending_holds(q, s), "a marked slot holds a pending local future");
    sf_future *g = q->fl != NULL ? sf__future_alloc(q->fl) : NULL;
    if (g == NULL)
        return false;
    g->u.fn = f->u.fn;
    /* Atomic (relaxed), as in sf_do: chain followers may read a slab
     * future's val at any time. Published by the release store of the
     * state below. */
    __atomic_store_n(&g->val, f->val, __ATOMIC_RELAXED);
    atomic_store_explicit(&g->region, atomic_load_explicit(&f->region, memory_order_relaxed),
                          memory_order_relaxed);
    /* Its lineage: the local future's (future.h). Release, up_tag first:
     * the walk of cancel.h. g->kids_up names g already (future.c); the
     * tasks g makes take g's incarnation, which is f's tag. */
    __atomic_store_n(&g->up_tag, f->kids_up_tag, __ATOMIC_RELEASE);
    __atomic_store_n(&g->up, f->kids_up, __ATOMIC_RELEASE);
    g->kids_up_tag = s;
    SF__ASSERT_TRANSITION(atomic_load_explicit(&g->state, memory_order_relaxed), s);
    /* Release, as in sf__pending_push: a claimer whose CAS reads this
     * state sees fn, val and region - also one that found g through this
     * slot before pub_seq says it is public. */
    atomic_store_explicit(&g->state, s, memory_order_release);
    /* Relaxed: scanners read g's task through g's state (above), and its
     * publicity through pub_seq (its release store). */
    atomic_store_explicit(&r->slot[i & r->mask], g, memory_order_relaxed);
    /* Relaxed, both: f is read by this thread alone. */
    __atomic_store_n(&f->moved_to, g, __ATOMIC_RELAXED);
    SF__ASSERT_TRANSITION(s, sf__with_status(s, SF__MOVED));
    atomic_store_explicit(&f->state, sf__with_status(s, SF__MOVED), memory_order_relaxed);
    return true;
}

/*
 * Owner: promote every local future in the slots from pub_idx (or top) to
 * bottom, and move pub_idx on. Stops at the first one it has no memory for,
 * which stays local (its getter promotes it or runs it; task.c). Returns
 * true if it promoted any.
 */
bool sf__pending_promote(struct sf__pending *q)
{
    SF__OWNER_CHECK(q, "promoting local futures");
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    uint64_t tp = SF__OWN_LOAD(&q->top);
    struct sf__ring *r = SF__OWN_LOAD(&q->ring);
    bool promoted = false;
    uint64_t i = q->pub_idx > tp ? q->pub_idx : tp;
    for (; i < b; i++) {
        sf_future *p = SF__OWN_LOAD(&r->slot[i & r->mask]);
        if (!sf__slot_local(p))
            continue;
        if (!promote(q, r, i, p))
            break;
        promoted = true;
    }
    q->pub_idx = i;
    return promoted;
}

/* Owner: promote the local future f, pending in q. False: no memory. */
bool sf__pending_promote_one(struct sf__pending *q, sf_future *f)
{
    SF__OWNER_CHECK(q, "promoting a local future");
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    uint64_t tp = SF__OWN_LOAD(&q->top);
    struct sf__ring *r = SF__OWN_LOAD(&q->ring);
    sf_future *p = sf__slot_mark(f);
    uint64_t i = local_slot(r, tp, b, p);
    SF__ASSERT(i != UINT64_MAX, "a pending local future has its slot");
    return i != UINT64_MAX && promote(q, r, i, p);
}

/*
 * Any thread: does q hold a pending task? Read-only, for deciding whether a
 * dead thread's queue may be adopted; exact only while q's owner is gone.
 */
bool sf__pending_has_pending(const struct sf__pending *q)
{
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_acquire);
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_acquire);
    for (; tp < b; tp++) {
        /* Relaxed: the caller synchronised with the owner's exit. */
        sf_future *f = atomic_load_explicit(&r->slot[tp & r->mask], memory_order_relaxed);
        /* A marked slot is never read by others (Local futures); a dead
         * owner left none, having got every local future it made. */
        if (f != NULL && !sf__slot_local(f) &&
            sf__pending_holds(q, atomic_load_explicit(&f->state, memory_order_relaxed)))
            return true;
    }
    return false;
}

#ifdef SF_DEBUG
/*
 * Debug build, owner: does the local future f hold a task queued in q - is
 * it PENDING under q, and does the slot its waiters names lie in [top,
 * bottom), hold f marked, with the low 32 bits of f's tag beside it? Read
 * before sf_task_do overwrites f (task.c), whatever f holds: memory that was
 * never a future of ours passes only if it names, by chance, a slot that
 * holds its own address marked and its tag's push counter too - garbage
 * does not; a got task is not PENDING, a promoted one MOVED.
 */
bool sf__pending_local_queued(const struct sf__pending *q, sf_future *f)
{
    SF__OWNER_CHECK(q, "looking up a local future");
    /* Relaxed, both: our own stores, if f is a future of ours. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (!sf__pending_holds(q, s))
        return false;
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    uint64_t tp = SF__OWN_LOAD(&q->top);
    const struct sf__ring *r = SF__OWN_LOAD(&q->ring);
    if (b <= tp)
        return false;
    uint64_t i = local_index(b, atomic_load_explicit(&f->local_slot, memory_order_relaxed));
    return i >= tp && SF__OWN_LOAD(&r->slot[i & r->mask]) == sf__slot_mark(f) &&
           r->seq[i & r->mask] == (uint32_t)sf__tag(s);
}

/*
 * Debug build: the local future of a marked slot in q's [top, bottom), NULL
 * if none - an sf_task its maker has not got. Reads the slots only, never
 * through them (the memory they name may be gone). Exact when q's owner is
 * this thread or quiet (exited, or joined), as at thread exit and shutdown
 * (lifecycle.c).
 */
sf_future *sf__pending_local_left(const struct sf__pending *q)
{
    /* Acquire on bottom and ring, relaxed on top and the slots: as in
     * sf__pending_has_pending. */
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_acquire);
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_acquire);
    for (; tp < b; tp++) {
        sf_future *p = atomic_load_explicit(&r->slot[tp & r->mask], memory_order_relaxed);
        if (sf__slot_local(p))
            return sf__slot_future(p);
    }
    return NULL;
}
#endif
