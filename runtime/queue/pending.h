/*
 * pending.h - a thread's pending queue, as a data structure on its
 * own: single-owner push/pop at the bottom, claims by any thread from the top
 * (spmc), with a private part the owner claims without any atomic
 * read-modify-write. It knows nothing of the runtime: no globals, no trace,
 * no waking. Operations that make work claimable by others return so, and
 * the caller decides whom to tell.
 *
 * Algorithm. A ring of future pointers indexed by two monotonic 64-bit
 * counters, top <= bottom, both written only by the owning thread. The owner
 * pushes at bottom (sf_do), pops its newest entry at bottom (helping) and
 * trims entries that are no longer pending from either end. Other threads
 * never write the ring or its indices: they claim a task by changing the
 * future's own state word (claim.h). The state word is the only arbiter of
 * who runs a task, so owner and thieves need no agreement on indices (a
 * Chase-Lev deque's owner pays a store-load fence on every pop to settle the
 * last element; here an entry claimed elsewhere is just skipped and later
 * trimmed). A claimer may read stale entries; the tag in the state word
 * (future.h) makes that harmless.
 *
 * Private and public tasks (the split of Lace's deque, by sequence number
 * rather than index). A task whose seq is >= pub_seq is private: only the
 * owner claims it, with plain stores, so the fork-join fast path has no
 * atomic read-modify-write and no fence. Tasks below pub_seq are public:
 * anyone claims them by CAS, the owner too. A thief that finds only private
 * work sets `want`; the owner, which polls `want` at every sf_get, then
 * publishes everything it has (pub_seq = seq). A thief also sets `want`
 * when its bounded window from the top held only finished slots: only the
 * owner moves top, and the poll trims it (tasks got oldest first, which
 * thieves took, would otherwise hide everything behind them). A thief that must have a
 * private task now takes it through the gate's Dekker protocol
 * (SF__STEAL_PRIVATE, claim.h): slower, but no pending task is ever out of
 * reach whatever its owner does. pub_seq only grows, so a claimer that saw a
 * task's seq below some value of pub_seq knows the owner will never claim
 * that task with plain stores.
 *
 * Handed-over futures. A get (or a release, or a cancel) of another
 * thread's private future by its handle (a pipeline: one thread queues
 * blocks while it computes, another gets them) must take the gate, whose
 * heavy fence interrupts a running owner (tens of microseconds on a VM), and
 * the owner may never get anything, so `want` would go unheard. Such a getter sets `push_public`
 * (sf__pending_ask_public) before it takes the gate; from then on the
 * owner's every push publishes its queue (pub_seq = seq), so the getters of
 * its later tasks claim them by CAS. The tasks it queued before the request
 * stay private, but the getter's claim opens the gate (claim.h, Opening the
 * gate): one heavy fence, after which every claim of them is a CAS too, so
 * a consumer catching up with a producer that queued a thousand blocks and
 * went on computing pays one fence, not a thousand. The flag stays set and
 * the gate open for the thread's life (a pipeline keeps handing over): its
 * own claims cost a CAS from then on instead of plain stores. A thread that
 * takes the queue over once it is empty starts with both reset
 * (sf__pending_adopt). Publishing is not submitting: idle workers still take
 * only submitted tasks.
 *
 * Local futures (future.h, Tasks in caller storage). A slot may hold a
 * future in its owner's stack, marked by bit 0 of the pointer
 * (SF__SLOT_LOCAL; futures are 8-byte aligned). Such memory is not
 * type-stable, so only the owner reads through a marked slot: every other
 * scan (sf__pending_steal, sf__pending_has_pending) skips it as it skips a
 * private task - asking the owner to publish - and the owner's publish
 * promotes it first (sf__pending_promote): a slab future with the same tag
 * takes its slot. pub_idx (owner only) is how far promotion went:
 *   every slot of [top, min(pub_idx, bottom)) is unmarked,
 * kept by lowering pub_idx with bottom. And every marked slot in
 * [top, bottom) is a live local future, PENDING: its getter - the owner -
 * drops the slot when it claims it (sf__pending_trim_local, which fills a
 * marked slot it cannot drop with the newest marked slot, or clears it,
 * found by the index kept in the future's local_slot while it is pending),
 * and so does the owner's pop; a task in
 * caller storage is only ever claimed by its owner (task.c). So the owner
 * never reads a dead frame either - unless the program breaks sf.h's
 * contract and lets an sf_task's memory go before its get: the debug build
 * checks, before every read through a marked slot, that the memory is still
 * the future that filled it (pending.c, check_marked).
 *
 * Submission. sub_seq is a watermark over the owner's push counter: a task
 * whose seq is below it was pushed before some sf_get of its thread, i.e.
 * was submitted, and an idle pool worker may take it once it is public
 * (SF__STEAL_SUBMITTED; laziness: idle workers start nothing else).
 *
 * Invariant (deadlock freedom rests on it, see get.c): every future that is
 * PENDING under this queue's tag is referenced by a slot in [top, bottom) of
 * the current ring, and can be claimed by any thread through
 * sf__pending_claim_foreign whatever the owner does - but for a local
 * future, which no thread but its maker claims or waits for (Local
 * futures), so no other thread's progress depends on it. Push adds at bottom;
 * top and bottom move only past slots whose future the mover claimed, that
 * is not PENDING under this queue's tag (then it is no task of ours, or no
 * longer pending), or that is stale (below).
 *
 * Stale slots. A slot keeps its pointer after another thread claims the
 * task, and futures are recycled: a future got and released elsewhere may
 * come back through the global stash and be pushed here again while its
 * old slot is still in [top, bottom) - a pipeline whose producer never gets
 * anything trims only when its ring is full. The old slot then points at a
 * future PENDING under this queue's id, but under a later push. The slots of
 * [top, bottom) were filled in index order (bottom only moves up by a push,
 * and moving it down drops the newest slots), so a future's latest push is
 * its highest slot and every lower slot naming it is stale. The ring keeps,
 * beside each slot, the low 32 bits of the push counter that filled it
 * (sf__ring.seq): a slot whose future's tag has other low bits is stale,
 * and the top passes it. Only the top needs it: the bottom's slot naming a
 * pending future is its latest push, and claiming through a stale slot
 * claims the future's real task, tag checked. Low bits only: a stale slot
 * that matches (2^32 pushes later) is taken for live and pins the top until
 * that task is claimed, as any pending task does; a live one never fails.
 *
 * Size. A queue holds its pending tasks plus few finished slots, not every
 * task ever made: the owner trims after every claim of its own
 * (sf__pending_trim), while it waits and when its ring is full
 * (sf__pending_trim_top).
 *
 * Rings grow by doubling, and shrink by halves once a burst is over
 * (sf__pending_trim_top). A replaced ring stays allocated until the queue
 * is destroyed, because a scanner may still be reading it: its entries are
 * stale but valid futures of this queue, or NULL. So it is kept as the spare
 * of its size, its pages discarded (read as NULL slots afterwards), and
 * reused when the queue needs that size again: at most one ring of each size
 * exists, live or spare, so a queue's rings take at most twice its largest.
 */
#ifndef SF_PENDING_H
#define SF_PENDING_H

#include "future/claim.h"

#define SF__RING_MIN 256
#define SF__RING_SHRINK_MIN (SF__RING_MIN * 64) /* smaller rings never shrink */

struct sf__ring {
    uint64_t mask;            /* size - 1, size a power of two */
    /* Beside each slot, the low 32 bits of the push counter of the push that
     * filled it (owner only; Stale slots). In the same allocation. */
    uint32_t *seq;
    _Atomic(sf_future *) slot[];
};
#define SF__RING_SIZES 48     /* log2 of a ring's size is below this */

struct sf__pending {
    /* Written by the owner only; read by any thread scanning for work. */
    _Atomic uint64_t top;     /* oldest slot that may still hold a pending task */
    _Atomic uint64_t bottom;  /* next slot to fill */
    _Atomic uint64_t sub_seq; /* tasks with seq < sub_seq are submitted */
    _Atomic uint64_t pub_seq; /* ... with seq < pub_seq are public: claimable by CAS */
    _Atomic(struct sf__ring *) ring;
    uint64_t seq;             /* next tag: thread id << SF__SEQ_BITS | push counter */
    uint64_t pub_idx;         /* promotion went this far (Local futures) */
    struct sf__freelist *fl;  /* the owner's free futures, for promotion; NULL: none */
    struct sf__ring *spare[SF__RING_SIZES]; /* replaced rings by log2 size (owner) */
    int id;                   /* the owner's thread id, the high bits of every tag */
    uint64_t tag0, tag_span;  /* its tags are [tag0, tag0 + tag_span): this queue's
                               * pushes since its init (sf__pending_holds_own) */
    SF__OWNER_FIELD
#ifdef SF_DEBUG
    /* The marked slot whose future sf__pending_trim_slow is dropping, just
     * claimed (RUNNING): the one marked slot of [top, bottom) that is not a
     * pending local future (pending.c, check_marked). NULL otherwise. */
    sf_future *debug_claimed;
#endif

    /* Written by other threads (rarely), read by the owner at every get
     * (want) and push (push_public). */
    _Alignas(64) _Atomic unsigned want; /* SF__WANT_ bits, below */
    _Atomic int push_public;       /* a getter took a private task by its handle:
                                    * every push publishes (Handed-over futures) */
    struct sf__gate gate;          /* foreign claims of private tasks */
};

/* want's bits. PUBLISH: a thief wants the private tasks published (set by
 * thieves, cleared by the owner's publish). CHECK: starts must be checked
 * for cancellation (cancel.h: set by sf_cancel on every queue, cleared by
 * the owner once none is in effect). Both make the owner's next get leave
 * the fork-join fast path, which tests the word once. */
#define SF__WANT_PUBLISH 1u
#define SF__WANT_CHECK 2u

/* Any thread: q's owner must check its starts (cancel.h). seq_cst: the
 * Dekker pair with sf__pending_want_settle (cancel.h). */
static inline void sf__pending_want_check(struct sf__pending *q)
{
    atomic_fetch_or_explicit(&q->want, SF__WANT_CHECK, memory_order_seq_cst);
}

/* Owner: its starts need no check (cancel.h says when); seq_cst as above. */
static inline void sf__pending_want_settle(struct sf__pending *q)
{
    atomic_fetch_and_explicit(&q->want, ~SF__WANT_CHECK, memory_order_seq_cst);
}

/* A slot's mark for a local future (Local futures). */
#define SF__SLOT_LOCAL ((uintptr_t)1)
static inline bool sf__slot_local(const sf_future *p) { return ((uintptr_t)p & SF__SLOT_LOCAL) != 0; }
static inline sf_future *sf__slot_future(sf_future *p)
{
    return (sf_future *)((uintptr_t)p & ~SF__SLOT_LOCAL);
}
static inline sf_future *sf__slot_mark(sf_future *f)
{
    return (sf_future *)((uintptr_t)f | SF__SLOT_LOCAL);
}

/* What sf__pending_steal may claim, as flags (0: any public task). */
enum sf__steal_flags {
    SF__STEAL_SUBMITTED = 1, /* only submitted tasks (an idle worker: laziness) */
    SF__STEAL_PRIVATE = 2    /* private ones too, through the gate (slow) */
};

/* Initialises an empty queue owned by the calling thread, for thread `id`,
 * whose push counter starts at `first` (below 2^SF__SEQ_BITS). Returns 0,
 * or -1 (no memory for the ring). */
int sf__pending_init(struct sf__pending *q, int id, uint64_t first);
/* Frees the rings. Nobody may use q any more. */
void sf__pending_destroy(struct sf__pending *q);
/* The calling thread takes over q, whose owner has exited and which holds
 * no pending task (registry.c): it starts afresh, its pushes private and
 * its gate closed (Handed-over futures). */
static inline void sf__pending_adopt(struct sf__pending *q)
{
    SF__OWNER_SET(q);
    /* Relaxed: a hint (Handed-over futures). */
    atomic_store_explicit(&q->push_public, 0, memory_order_relaxed);
    sf__gate_close(&q->gate);
}

/* Is s the state of a future that is pending in q? */
static inline bool sf__pending_holds(const struct sf__pending *q, uint64_t s)
{
    return sf__status(s) == SF__PENDING && sf__tag_thread(s) == q->id;
}

/* Is s the state of a future pending in q under a push of q's own, since
 * its init? sf__pending_holds, less a task of an older queue of the same
 * id (a previous runtime's, or a forked parent's: tasks in caller storage
 * outlive both, task.c). One subtraction more than sf__pending_holds. */
static inline bool sf__pending_holds_own(const struct sf__pending *q, uint64_t s)
{
    return sf__status(s) == SF__PENDING && sf__tag(s) - q->tag0 < q->tag_span;
}

/*
 * Regions: the claim filter of isolation (get.c, Isolation, says why and
 * who opens regions; a future's region field holds its task's). Pops and
 * steals admit only the tasks that the claimer's region allows. A helper -
 * a blocked get running other pending work - passes the region it helps
 * within: 0 outside any region, which admits every task but those of
 * closed regions; a region, which admits its own tasks only. A closed
 * region (SF__REGION_CLOSED set: a parallel loop's, parfor.c) is helped
 * with by its own threads and by idle workers alone. Idle workers and the
 * drain pass SF__REGION_ANY.
 *
 * Two more bits, for the waits of plain code (get.c, Plain code's waits):
 * SF__REGION_ROOT is set on one future only, the task that opened the
 * region (its runner drops it from the region its children inherit), so
 * a getter can tell a future's own region from its maker's. SF__REGION_SOFT
 * marks a region that only labels descendants: its threads help with
 * anything, as outside a region, but a plain-code wait helps within it
 * alone. A task made by plain code opens one when it starts
 * (SF__REGION_PLAIN until then), and so does a task a plain-code wait runs
 * itself. Region numbers are below SF__REGION_SOFT, so no number carries a
 * flag and none is SF__REGION_ANY.
 */
#define SF__REGION_CLOSED 0x80000000u
#define SF__REGION_ROOT 0x40000000u
#define SF__REGION_SOFT 0x20000000u
#define SF__REGION_PLAIN SF__REGION_SOFT /* made by plain code, not started */
#define SF__REGION_ANY 0xffffffffu

static inline bool sf__region_admits(uint32_t helper, uint32_t task)
{
    return helper == SF__REGION_ANY ||
           (helper == 0 ? !(task & SF__REGION_CLOSED) : task == helper);
}

/* What a thread whose running task is in `region` helps within: a region
 * of its own (isolated, closed), or else `outer` - the region a wait of
 * plain code confines its thread to, 0 for none: anything outside closed
 * regions (get.c, Plain code's waits). */
static inline uint32_t sf__region_helps(uint32_t region, uint32_t outer)
{
    return region != 0 && !(region & SF__REGION_SOFT) ? region : outer;
}

bool sf__pending_grow(struct sf__pending *q);
sf_future *sf__pending_pop(struct sf__pending *q, uint32_t region, uint64_t *claimed);
sf_future *sf__pending_steal(struct sf__pending *q, unsigned flags, uint32_t region, uint64_t limit,
                             uint64_t *claimed);
void sf__pending_trim_slow(struct sf__pending *q, sf_future *slot);
void sf__pending_trim_local_slow(struct sf__pending *q, sf_future *f);
bool sf__pending_promote(struct sf__pending *q);
bool sf__pending_promote_one(struct sf__pending *q, sf_future *f);
void sf__pending_trim_top(struct sf__pending *q, uint64_t max);
bool sf__pending_has_pending(const struct sf__pending *q);
#ifdef SF_DEBUG
/* The debug build's checks of tasks in caller storage (pending.c). */
bool sf__pending_local_queued(const struct sf__pending *q, sf_future *f);
sf_future *sf__pending_local_left(const struct sf__pending *q);
#endif

/* Where the owner's next push goes: its bottom and ring, and the ring's
 * mask, read once by sf__pending_room for the sf__pending_put_at that
 * follows (nothing but the owner changes them; a fast path that fills its
 * future in between would otherwise read them all again). */
struct sf__pending_place {
    uint64_t b, mask;
    struct sf__ring *r;
};

/* Owner: can one more slot be filled without growing the ring? *at is
 * where it goes. */
static inline __attribute__((always_inline)) bool
sf__pending_room(const struct sf__pending *q, struct sf__pending_place *at)
{
    at->b = SF__OWN_LOAD(&q->bottom);
    at->r = SF__OWN_LOAD(&q->ring);
    at->mask = at->r->mask;
    return at->b - SF__OWN_LOAD(&q->top) <= at->mask;
}

static inline bool sf__pending_has_room(const struct sf__pending *q)
{
    struct sf__pending_place at;
    return sf__pending_room(q, &at);
}

/*
 * Owner: queue f, whose fn and val are written, in a slot holding `slot` (f,
 * or f marked local), at `at` (sf__pending_room said there is room, and no
 * push came since).
 */
static inline __attribute__((always_inline)) void
sf__pending_put_at(struct sf__pending *q, sf_future *f, sf_future *slot, bool local,
                   struct sf__pending_place at)
{
    SF__OWNER_CHECK(q, "pushing on a pending queue");
    SF__ASSERT(at.b == SF__OWN_LOAD(&q->bottom) && at.r == SF__OWN_LOAD(&q->ring),
               "a push at the place sf__pending_room read");
    uint64_t b = at.b;
    struct sf__ring *r = at.r;
    uint64_t i = b & at.mask;
    uint32_t *seqs = r->seq;
    uint64_t n = q->seq++;
    uint64_t tagged = (n << SF__TAG_SHIFT) | SF__PENDING;
    SF__ASSERT_TRANSITION(atomic_load_explicit(&f->state, memory_order_relaxed), tagged);
    /* The push counter's low bits (SF__SEQ_BITS > 32), for the top's trim
     * (Stale slots). */
    seqs[i] = (uint32_t)n;
    /* What the tasks this one makes take as their up_tag (future.h,
     * Lineage): a slab future's own incarnation. Plain: read by its runner,
     * which claims it through the state stored next. */
    if (!local)
        f->kids_up_tag = tagged;
    /* Release: whoever claims f by a CAS that reads this value (possibly
     * having found f through a stale slot, without the bottom store below)
     * must see fn and val written before it. A local future is read by
     * this thread alone, and its promotion publishes a copy afresh. */
    atomic_store_explicit(&f->state, tagged, local ? memory_order_relaxed : memory_order_release);
    /* Relaxed: the slot is published by the release store of bottom. */
    atomic_store_explicit(&r->slot[i], slot, memory_order_relaxed);
    /* A local future has no sleepers (future.h): its local_slot holds the low
     * bits of its slot's index while it is pending, for the owner's trims
     * (sf__pending_trim_local and its slow path, and sf__pending_trim_slow
     * of a marked slot); its claimer zeroes it off the fast path. Relaxed: this
     * thread's alone. */
    if (local)
        atomic_store_explicit(&f->local_slot, (uint32_t)b, memory_order_relaxed);
    /* Release: a scanner that loads bottom (acquire) sees the slot. */
    atomic_store_explicit(&q->bottom, b + 1, memory_order_release);
    /* Relaxed: a hint; a push that misses a fresh request only leaves that
     * task private, which its getter takes through the gate as before. A
     * local future is got by its owner alone: nobody asks for it. */
    if (!local && SF__UNLIKELY(atomic_load_explicit(&q->push_public, memory_order_relaxed)))
        /* Release pairs with the claimers' acquire load of pub_seq: they
         * see the task's state stored above. q->seq only grows. */
        atomic_store_explicit(&q->pub_seq, q->seq, memory_order_release);
}

/* sf__pending_put_at the owner's next place. There is room. */
static inline __attribute__((always_inline)) void
sf__pending_put(struct sf__pending *q, sf_future *f, sf_future *slot, bool local)
{
    struct sf__pending_place at;
    (void)sf__pending_room(q, &at);
    sf__pending_put_at(q, f, slot, local, at);
}

/* sf__pending_put, growing the ring first if needed. Returns false (f
 * untouched) when it cannot grow. */
static inline __attribute__((always_inline)) bool
sf__pending_push_slot(struct sf__pending *q, sf_future *f, sf_future *slot, bool local)
{
    if (SF__UNLIKELY(!sf__pending_has_room(q)) && !sf__pending_grow(q))
        return false;
    sf__pending_put(q, f, slot, local);
    return true;
}

/* Owner: queue the slab future f (sf_do). */
static inline bool sf__pending_push(struct sf__pending *q, sf_future *f)
{
    return sf__pending_push_slot(q, f, f, false);
}

/* Owner: queue the local future f (sf_task_do; Local futures). */
static inline bool sf__pending_push_local(struct sf__pending *q, sf_future *f)
{
    return sf__pending_push_slot(q, f, sf__slot_mark(f), true);
}

/*
 * Any thread but q's owner, about to take a private task of q by its handle
 * (not by scanning): ask the owner to push publicly from now on (Handed-over
 * futures).
 */
static inline void sf__pending_ask_public(struct sf__pending *q)
{
    /* Relaxed: a hint the owner reads at its next push; loaded first so
     * that getters do not keep writing the owner's line. */
    if (!atomic_load_explicit(&q->push_public, memory_order_relaxed))
        atomic_store_explicit(&q->push_public, 1, memory_order_relaxed);
}

/*
 * Owner: move its own future f from PENDING state *sp to state `to` (RUNNING,
 * or FREE to discard it). Returns false, with *sp updated, if another thread
 * claimed it first. Private futures take plain stores and a compiler barrier
 * (claim.h); public ones a CAS.
 */
static inline bool sf__pending_claim_own(struct sf__pending *q, sf_future *f, uint64_t *sp,
                                         uint64_t to)
{
    SF__OWNER_CHECK(q, "claiming as the owner");
    SF__ASSERT(sf__pending_holds(q, *sp), "claiming a future that is not pending here");
    if (sf__tag(*sp) < SF__OWN_LOAD(&q->pub_seq))
        return sf__claim_cas(f, sp, to);
    return sf__claim_private_own(&q->gate, f, sp, to);
}

/*
 * Any thread but q's owner: claim f, pending in q with state *sp, moving it
 * to `to`. Returns false, with *sp updated, if someone else claimed it first.
 */
static inline bool sf__pending_claim_foreign(struct sf__pending *q, sf_future *f, uint64_t *sp,
                                             uint64_t to)
{
    /* Acquire: pairs with the owner's release store of pub_seq. */
    if (sf__tag(*sp) < atomic_load_explicit(&q->pub_seq, memory_order_acquire))
        return sf__claim_cas(f, sp, to);
    return sf__claim_private_foreign(&q->gate, f, sp, to);
}

/*
 * Any thread but q's owner, taking f, pending in q with state *sp, by its
 * handle (a get, release or cancel: Handed-over futures): as
 * sf__pending_claim_foreign, and it asks the owner to publish its pushes
 * from now on and leaves q's gate open.
 */
static inline bool sf__pending_claim_handed(struct sf__pending *q, sf_future *f, uint64_t *sp,
                                            uint64_t to)
{
    /* Acquire: as in sf__pending_claim_foreign. */
    if (sf__tag(*sp) < atomic_load_explicit(&q->pub_seq, memory_order_acquire))
        return sf__claim_cas(f, sp, to);
    sf__pending_ask_public(q);
    return sf__claim_private_open(&q->gate, f, sp, to);
}

/* Owner, lowering bottom to b: keeps pub_idx <= bottom (Local futures). */
static inline void sf__pending_set_bottom(struct sf__pending *q, uint64_t b)
{
    /* Release keeps bottom a release sequence for scanners; a scanner
     * that still reads the old bottom sees a claimed slot and fails to
     * claim it (or skips it, marked). */
    atomic_store_explicit(&q->bottom, b, memory_order_release);
    if (q->pub_idx > b)
        q->pub_idx = b;
}

/*
 * Owner, after claiming its own future whose slot holds `slot` (the future,
 * marked if local): drop the slot if it is the newest one (the fork-join
 * fast path); otherwise trim finished slots at the bottom, and at the top if
 * it was the oldest (tasks got oldest first leave those behind). A marked
 * slot is gone from [top, bottom) or cleared afterwards (Local futures).
 */
static inline void sf__pending_trim_slot(struct sf__pending *q, sf_future *slot)
{
    SF__OWNER_CHECK(q, "trimming a pending queue");
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    uint64_t tp = SF__OWN_LOAD(&q->top);
    struct sf__ring *r = SF__OWN_LOAD(&q->ring);
    if (SF__LIKELY(b > tp && SF__OWN_LOAD(&r->slot[(b - 1) & r->mask]) == slot))
        sf__pending_set_bottom(q, b - 1);
    else
        sf__pending_trim_slow(q, slot);
}

/* The same for a slab future f. */
static inline void sf__pending_trim(struct sf__pending *q, sf_future *f)
{
    sf__pending_trim_slot(q, f);
}

/*
 * The same for a local future f just claimed by the owner, before anything
 * else touches the queue or f's waiters: its slot's index is in waiters
 * (sf__pending_put), so the newest-slot test needs no load through the
 * ring. Matching the low 32 bits of bottom - 1 is enough: f's slot is in
 * [top, bottom) (they move only past slots whose task was claimed, and f
 * was pending until the claim just before this call), and two indices of
 * that range 2^32 apart would need a ring of 32 GiB of slots.
 */
static inline void sf__pending_trim_local(struct sf__pending *q, sf_future *f)
{
    SF__OWNER_CHECK(q, "trimming a pending queue");
    uint64_t b = SF__OWN_LOAD(&q->bottom);
    /* Relaxed: written by this thread alone (sf__pending_put). */
    uint32_t idx = atomic_load_explicit(&f->local_slot, memory_order_relaxed);
    if (SF__LIKELY(b > SF__OWN_LOAD(&q->top) && (uint32_t)(b - 1) == idx))
        sf__pending_set_bottom(q, b - 1);
    else
        sf__pending_trim_local_slow(q, f); /* gets out of order (pending.c) */
}

/*
 * Owner, at every get: submit everything pushed since the last get. Returns
 * how many tasks were newly submitted; when it is not 0, idle workers may
 * want to hear of it (the caller's business).
 */
static inline uint64_t sf__pending_submit(struct sf__pending *q)
{
    SF__OWNER_CHECK(q, "submitting a pending queue");
    uint64_t old = SF__OWN_LOAD(&q->sub_seq);
    if (old == q->seq)
        return 0;
    /* Release pairs with the acquire load of sub_seq by idle workers. */
    atomic_store_explicit(&q->sub_seq, q->seq, memory_order_release);
    return q->seq - old;
}

/*
 * Anyone, after claiming the submitted task `claimed` from q: were tasks
 * submitted after it? A hint (they may be claimed already): a worker that
 * took one of several hands the search on to a sleeper (pool.c). Relaxed: a
 * hint read; whoever acts on it rescans.
 */
static inline bool sf__pending_more_submitted(const struct sf__pending *q, uint64_t claimed)
{
    return sf__tag(claimed) + 1 < atomic_load_explicit(&q->sub_seq, memory_order_relaxed);
}

/*
 * Owner: make every task pushed so far public, local futures promoted first
 * (Local futures). Returns true if some became public now (the caller may
 * wake whoever waits for work).
 */
static inline bool sf__pending_publish(struct sf__pending *q)
{
    SF__OWNER_CHECK(q, "publishing a pending queue");
    /* Cleared first: a request made after this is not lost. Relaxed: a
     * hint, like the thief's. A read-modify-write, and only when set:
     * SF__WANT_CHECK, another thread's, shares the word. */
    if (atomic_load_explicit(&q->want, memory_order_relaxed) & SF__WANT_PUBLISH)
        atomic_fetch_and_explicit(&q->want, ~SF__WANT_PUBLISH, memory_order_relaxed);
    bool promoted = q->pub_idx < SF__OWN_LOAD(&q->bottom) && sf__pending_promote(q);
    if (SF__OWN_LOAD(&q->pub_seq) == q->seq)
        return promoted;
    /* Release pairs with the scanners' acquire load of pub_seq. */
    atomic_store_explicit(&q->pub_seq, q->seq, memory_order_release);
    return true;
}

/*
 * Owner: publish if a thief asked, with the top trimmed so that thieves
 * scanning from it find pending tasks first (a thief's window of slots may
 * have held only finished ones: sf__pending_steal). Returns true if tasks
 * became public or the top moved, either of which may show a thief work it
 * could not see (the caller wakes whoever waits for work).
 */
static inline bool sf__pending_poll(struct sf__pending *q)
{
    /* Relaxed: a hint; a request missed now is seen at the next call. */
    if (SF__LIKELY(!(atomic_load_explicit(&q->want, memory_order_relaxed) & SF__WANT_PUBLISH)))
        return false;
    uint64_t top = SF__OWN_LOAD(&q->top);
    sf__pending_trim_top(q, UINT64_MAX);
    bool published = sf__pending_publish(q);
    return published || SF__OWN_LOAD(&q->top) != top;
}

#endif /* SF_PENDING_H */
