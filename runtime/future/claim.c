/*
 * claim.c - the slow sides of the private claim protocol (claim.h).
 */
#include "future/claim.h"

void sf__gate_init(struct sf__gate *g)
{
    atomic_init(&g->claiming, NULL);
    atomic_init(&g->foreign, NULL);
    sf__lock_init(&g->flock, SF__RANK_LEAF, "a queue's flock");
}

void sf__gate_destroy(struct sf__gate *g) { sf__lock_destroy(&g->flock); }

void sf__gate_close(struct sf__gate *g)
{
    /* Under flock: no opener is between OPENING and OPEN, and no foreign
     * claimer has its future in `foreign`. Relaxed: whoever locks flock next
     * sees it; a claimer that read OPEN before fails its CAS (claim.h). */
    sf__lock(&g->flock);
    atomic_store_explicit(&g->foreign, NULL, memory_order_relaxed);
    sf__unlock(&g->flock);
}

bool sf__claim_private_contended(struct sf__gate *g, sf_future *f, uint64_t *sp, uint64_t to)
{
    /* Acquire, as in sf__claim_private_own. */
    sf_future *who = atomic_load_explicit(&g->foreign, memory_order_acquire);
    if (who == SF__GATE_OPENING || who == SF__GATE_OPEN) {
        /* Opening or open: others claim by CAS, so do we (claim.h, Opening
         * the gate). Relaxed: the opener waits only for `claiming` to
         * change; a claim by CAS needs nothing from it. */
        atomic_store_explicit(&g->claiming, NULL, memory_order_relaxed);
        return sf__claim_cas(f, sp, to);
    }
    /* A foreign claimer announced f, or another future: wait for its
     * verdict if it is f's (else there is nothing to wait for). While our
     * claiming == f stands, later foreign claimers of f back off, so this
     * wait ends. Acquire: its verdict on f's state is visible after. */
    while (atomic_load_explicit(&g->foreign, memory_order_acquire) == f)
        sf__pause();
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    bool ok = s == *sp;
    if (ok)
        /* Relaxed: the claiming store below publishes it (release). */
        atomic_store_explicit(&f->state, to, memory_order_relaxed);
    atomic_store_explicit(&g->claiming, NULL, memory_order_release);
    *sp = ok ? to : s;
    return ok;
}

bool sf__claim_private_foreign(struct sf__gate *g, sf_future *f, uint64_t *sp, uint64_t to)
{
    SF__ASSERT_TRANSITION(*sp, to);
    if (sf__gate_is_open(g))
        return sf__claim_cas(f, sp, to);
    sf__lock(&g->flock);
    /* Opened while we waited for the lock? Relaxed: the opener's stores
     * happen before its unlock, and so before our lock. */
    if (atomic_load_explicit(&g->foreign, memory_order_relaxed) == SF__GATE_OPEN) {
        sf__unlock(&g->flock);
        return sf__claim_cas(f, sp, to);
    }
    /* Relaxed: ordered before our load of `claiming` by the heavy fence. */
    atomic_store_explicit(&g->foreign, f, memory_order_relaxed);
    /* Pairs with the light fence in sf__claim_private_own: either the owner
     * sees our announcement and waits for our verdict, or we see its claim. */
    sf__fence_heavy();
    bool ok = false;
    /* Acquire: if the owner already cleared its claim, its state store is
     * visible and the CAS below fails. */
    if (atomic_load_explicit(&g->claiming, memory_order_acquire) != f)
        ok = atomic_compare_exchange_strong_explicit(&f->state, sp, to, memory_order_acquire,
                                                     memory_order_acquire);
    /* Release: the owner waiting in sf__claim_private_contended sees our CAS. */
    atomic_store_explicit(&g->foreign, NULL, memory_order_release);
    sf__unlock(&g->flock);
    if (!ok) {
        /* The owner is claiming f: let it finish before anyone retries. */
        while (atomic_load_explicit(&g->claiming, memory_order_acquire) == f)
            sf__pause();
        /* Acquire: the caller may act on the new state (a DONE's val). */
        *sp = atomic_load_explicit(&f->state, memory_order_acquire);
    } else {
        *sp = to;
    }
    return ok;
}

bool sf__claim_private_open(struct sf__gate *g, sf_future *f, uint64_t *sp, uint64_t to)
{
    SF__ASSERT_TRANSITION(*sp, to);
    if (sf__gate_is_open(g))
        return sf__claim_cas(f, sp, to);
    sf__lock(&g->flock);
    /* Under flock `foreign` is NULL (a foreign claimer clears it before it
     * unlocks) or OPEN. Relaxed: as in sf__claim_private_foreign. */
    if (atomic_load_explicit(&g->foreign, memory_order_relaxed) != SF__GATE_OPEN) {
        /* Relaxed: ordered before our load of `claiming` by the heavy
         * fence, as a foreign claimer's announcement. */
        atomic_store_explicit(&g->foreign, SF__GATE_OPENING, memory_order_relaxed);
        /* Pairs with the owner's light fence (claim.h, Opening the gate):
         * from here on the owner sees OPENING and claims by CAS, unless it
         * announced its claim before - then we see it below. */
        sf__fence_heavy();
        /* Acquire: a claim the owner ended (its release store of NULL, or
         * a later store of its own: C11's release sequence) is visible. */
        sf_future *c = atomic_load_explicit(&g->claiming, memory_order_acquire);
        if (c != NULL)
            /* The owner's claim of c may be a plain store that saw no
             * OPENING: wait it out. Its claims after it see OPENING and do
             * not wait for us, so this ends. */
            while (atomic_load_explicit(&g->claiming, memory_order_acquire) == c)
                sf__pause();
        /* Release: whoever sees OPEN (acquire) sees the plain claim we
         * waited for, and so fails to CAS its future. */
        atomic_store_explicit(&g->foreign, SF__GATE_OPEN, memory_order_release);
    }
    sf__unlock(&g->flock);
    return sf__claim_cas(f, sp, to);
}
