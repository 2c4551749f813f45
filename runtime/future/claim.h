/*
 * claim.h - claiming a future, the change of its state word that
 * decides who runs its task (or discards it).
 *
 * A public future is claimed by CAS, by anyone (sf__claim_cas). A private
 * future is claimed by its owner with plain stores, no read-modify-write and
 * no fence (sf__claim_private_own): that is the fork-join fast path. A
 * thread that must claim one particular private future it does not own (a
 * get or release of another thread's future, the drain at shutdown, a helper
 * that spun in vain) cannot wait for the owner, which may never call libsf
 * again; it runs a Dekker protocol with the owner through the owner's gate
 * (sf__claim_private_foreign). Which futures are private is the queue's
 * business (pending.h); this layer only gives the two sides of the claim.
 *
 * The protocol. The foreign claimer announces the future in `foreign`,
 * issues the heavy fence, backs off if the owner announced the same future in
 * `claiming`, and else claims by CAS. The owner announces in `claiming`,
 * issues the light fence and, if it sees the future in `foreign`, waits for
 * that claimer's verdict; otherwise it checks that the state is still the
 * PENDING it read (a claimer that finished before the announcement took it)
 * and claims with a plain store. The membarrier behind the heavy fence puts
 * a full barrier in the owner's instruction stream either before its
 * announcement (then the owner sees `foreign`, or the finished claimer's CAS
 * through `foreign`'s release/acquire) or after it (then the claimer sees
 * `claiming` and backs off). The owner wins ties. One foreign claimer at a
 * time per gate (flock), so `foreign` names at most one future.
 *
 * Invariant: while `claiming` == f, no thread other than the owner changes
 * f's state, so the owner's plain store cannot be lost - unless the gate is
 * open (below), when the owner claims by CAS too.
 *
 * Opening the gate. A thread that gets (or releases, or cancels) another
 * thread's private futures by their handles (a consumer catching up with a
 * busy producer) would pay the heavy fence for each. Instead its first claim
 * opens the gate (sf__claim_private_open): under flock it sets `foreign` to
 * OPENING, issues the heavy fence, waits for the plain claim the owner may
 * be making (the one named in `claiming`; later ones see OPENING), then sets
 * OPEN. From then on every claim of the queue's private tasks - the owner's
 * included - is a CAS, with no fence and no lock: the owner's claim, which
 * tests `foreign` for NULL, turns to sf__claim_private_contended, which sees
 * OPENING or OPEN and CASes. The membarrier argument above, with OPENING for
 * f, gives: either the owner sees OPENING and CASes, or the opener sees its
 * claim and waits it out. Only after that wait does any other thread claim
 * by CAS through the gate (it must see OPEN, set after the wait). A gate
 * stays open while its queue lives, and closes (sf__gate_close) only when
 * the queue holds no pending task, as a new thread takes it over: then a
 * claimer still acting on an OPEN it read fails its CAS, since the state it
 * read has changed for good (a later push has a later tag), and flock keeps
 * out an opener midway.
 */
#ifndef SF_CLAIM_H
#define SF_CLAIM_H

#include "future/future.h"

struct sf__gate {
    _Atomic(sf_future *) claiming; /* written by the owner only */
    _Atomic(sf_future *) foreign;  /* written under flock only: NULL, the
                                    * future a foreign claimer takes, or
                                    * SF__GATE_OPENING/SF__GATE_OPEN */
    struct sf__lock flock;         /* a leaf lock: one foreign claimer at a time */
};

/* `foreign` while the gate opens and once it is open (Opening the gate).
 * Futures are 64-byte aligned: no future has these addresses. */
#define SF__GATE_OPENING ((sf_future *)1)
#define SF__GATE_OPEN ((sf_future *)2)

/* g's owner, while no future is pending under g's queue: closes g (Opening
 * the gate). Takes flock (a leaf). */
void sf__gate_close(struct sf__gate *g);

/* Any thread: is g open? Acquire: pairs with the opener's release of OPEN,
 * after which the plain claim it waited for is visible to the caller's CAS. */
static inline bool sf__gate_is_open(struct sf__gate *g)
{
    return atomic_load_explicit(&g->foreign, memory_order_acquire) == SF__GATE_OPEN;
}

void sf__gate_init(struct sf__gate *g);
void sf__gate_destroy(struct sf__gate *g);

/* Anyone, on a public future: PENDING state *sp -> `to`. True with *sp = to,
 * as every claim leaves it; false, with *sp updated, if the state was no
 * longer *sp. */
static inline bool sf__claim_cas(sf_future *f, uint64_t *sp, uint64_t to)
{
    SF__ASSERT_TRANSITION(*sp, to);
    /* Acquire: the claimer reads fn and val, written before the state's
     * release store in sf__pending_push. */
    if (!atomic_compare_exchange_strong_explicit(&f->state, sp, to, memory_order_acquire,
                                                 memory_order_acquire))
        return false;
    *sp = to;
    return true;
}

bool sf__claim_private_contended(struct sf__gate *g, sf_future *f, uint64_t *sp, uint64_t to);

/* The owner, on a private future of its own: PENDING state *sp -> `to`. */
static inline bool sf__claim_private_own(struct sf__gate *g, sf_future *f, uint64_t *sp,
                                         uint64_t to)
{
    SF__ASSERT_TRANSITION(*sp, to);
    /* Relaxed: ordered against the foreign claimer's loads by the fence
     * pair below, not by this store's own order. */
    atomic_store_explicit(&g->claiming, f, memory_order_relaxed);
    sf__fence_light();
    /* Acquire: if a foreign claimer already finished and cleared `foreign`
     * (release), its verdict on the state is visible to the load below. Any
     * foreign claim in flight, or an opening or open gate, goes out of line:
     * one test, as cheap as comparing with f. */
    if (SF__UNLIKELY(atomic_load_explicit(&g->foreign, memory_order_acquire) != NULL))
        return sf__claim_private_contended(g, f, sp, to);
    /* A foreign claimer may have come and gone before our announcement:
     * then it saw no claim of ours and may have taken f. Any later one sees
     * our announcement and backs off, so if the state is still what we read,
     * it stays ours. Relaxed: the acquire above ordered a finished claimer's
     * CAS before this load. */
    uint64_t now = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (SF__UNLIKELY(now != *sp)) {
        atomic_store_explicit(&g->claiming, NULL, memory_order_release);
        /* Acquire, unlike the load above: the caller acts on the new state
         * (sf_release frees a DONE future for reuse, a get reads its val),
         * so the runner's writes must come first; pairs with the runner's
         * release of DONE. */
        *sp = atomic_load_explicit(&f->state, memory_order_acquire);
        return false;
    }
    /* Relaxed: nobody else writes f's state while we announce it (the
     * invariant above). */
    atomic_store_explicit(&f->state, to, memory_order_relaxed);
    /* Release: a foreign claimer that sees claiming cleared (acquire) sees
     * the state above, so its CAS from PENDING fails. */
    atomic_store_explicit(&g->claiming, NULL, memory_order_release);
    *sp = to;
    return true;
}

/* Any thread but the owner, on a private future guarded by g: PENDING state
 * *sp -> `to`. Takes g's flock (a leaf) and the heavy fence, unless g is
 * open: then one CAS. */
bool sf__claim_private_foreign(struct sf__gate *g, sf_future *f, uint64_t *sp, uint64_t to);

/* The same, and g stays open after it: the claims of its private futures by
 * anyone are CASes from now on (Opening the gate). For a thread that takes
 * private futures of g's owner by their handles, which will likely go on. */
bool sf__claim_private_open(struct sf__gate *g, sf_future *f, uint64_t *sp, uint64_t to);

#endif /* SF_CLAIM_H */
