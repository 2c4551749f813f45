/*
 * claim.c - layer 1: the slow sides of the private claim protocol (claim.h).
 */
#include "claim.h"

void sf__gate_init(struct sf__gate *g)
{
    atomic_init(&g->claiming, NULL);
    atomic_init(&g->foreign, NULL);
    sf__lock_init(&g->flock, SF__RANK_LEAF, "a queue's flock");
}

void sf__gate_destroy(struct sf__gate *g) { sf__lock_destroy(&g->flock); }

bool sf__claim_private_contended(struct sf__gate *g, sf_future *f, uint64_t *sp, uint64_t to)
{
    /* A foreign claimer announced f too: wait for its verdict. While our
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
    sf__lock(&g->flock);
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
