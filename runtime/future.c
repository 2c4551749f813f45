/*
 * future.c - layer 1: the memory of futures.
 *
 * Futures are 32 bytes, carved from 64 KiB slabs that live until
 * sf_shutdown. Each thread keeps a free list (future.h); a thread that frees
 * many more than it makes spills half to a global stash that others refill
 * from. Because slab memory is never returned while the runtime runs, a
 * pointer read from any queue slot, however stale, points at some future:
 * this type stability is what lets claimers read a stale slot and settle
 * everything with one CAS on the state word (pending.h). Concurrency Kit's
 * epoch reclamation would let slabs go back earlier, at the price of an
 * epoch section around every scan; type stability costs nothing per task.
 */
#include "future.h"

#include <stdlib.h>
#include <string.h>

#define SLAB_BYTES (64 * 1024)
#define SLAB_FUTURES ((SLAB_BYTES - 64) / sizeof(sf_future))

struct slab {
    struct slab *next;
    _Alignas(64) sf_future f[SLAB_FUTURES];
};

/* A leaf lock (debug.h): nothing is taken under it. */
static struct sf__lock slab_lock = SF__LOCK_INITIALIZER(SF__RANK_LEAF, "slab_lock");
static struct slab *slabs;
static sf_future *stash;

_Static_assert(sizeof(sf_future) == 32, "a future is 32 bytes: two per cache line");

sf_future *sf__future_refill(struct sf__freelist *fl)
{
    sf__lock(&slab_lock);
    if (stash != NULL) {
        /* Take at most half a spill's worth, so threads do not trade the
         * whole stash back and forth. */
        size_t n = 1;
        sf_future *head = stash, *last = stash;
        while (last->u.next != NULL && n < SF__SPILL_AT / 2) {
            last = last->u.next;
            n++;
        }
        stash = last->u.next;
        sf__unlock(&slab_lock);
        last->u.next = fl->head;
        fl->head = head;
        fl->n += n;
        return fl->head;
    }
    struct slab *s = aligned_alloc(64, sizeof *s);
    if (s == NULL) {
        sf__unlock(&slab_lock);
        return NULL;
    }
    memset(s, 0, sizeof *s); /* every state FREE, every waiters count 0 */
    s->next = slabs;
    slabs = s;
    sf__unlock(&slab_lock);
    for (size_t i = SLAB_FUTURES; i-- > 0;) {
        s->f[i].u.next = fl->head;
        fl->head = &s->f[i];
    }
    fl->n += SLAB_FUTURES;
    return fl->head;
}

void sf__future_spill(struct sf__freelist *fl)
{
    sf_future *head = fl->head, *last = head;
    for (size_t i = 1; i < SF__SPILL_AT / 2; i++)
        last = last->u.next;
    fl->head = last->u.next;
    fl->n -= SF__SPILL_AT / 2;
    sf__lock(&slab_lock);
    last->u.next = stash;
    stash = head;
    sf__unlock(&slab_lock);
}

void sf__future_free_shared(sf_future *f)
{
    sf__lock(&slab_lock);
    f->u.next = stash;
    stash = f;
    sf__unlock(&slab_lock);
}

void sf__futures_free_all(void)
{
    sf__lock(&slab_lock);
    while (slabs != NULL) {
        struct slab *next = slabs->next;
        free(slabs);
        slabs = next;
    }
    stash = NULL;
    sf__unlock(&slab_lock);
}

void sf__futures_after_fork(void)
{
    sf__lock_init(&slab_lock, SF__RANK_LEAF, "slab_lock");
    slabs = NULL;
    stash = NULL;
}

void sf__freelist_destroy(struct sf__freelist *fl)
{
#ifdef SF_DEBUG
    free(fl->quarantine);
    fl->quarantine = NULL;
#endif
    fl->head = NULL;
    fl->n = 0;
}

#ifdef SF_DEBUG
/* Holds f back from reuse; returns the future it displaced (now reusable),
 * or NULL. Without memory for the ring, f is reused at once. */
sf_future *sf__future_quarantine(struct sf__freelist *fl, sf_future *f)
{
    if (fl->quarantine == NULL &&
        (fl->quarantine = calloc(SF__QUARANTINE, sizeof *fl->quarantine)) == NULL)
        return f;
    sf_future *old = fl->quarantine[fl->qnext];
    fl->quarantine[fl->qnext] = f;
    fl->qnext = (fl->qnext + 1) % SF__QUARANTINE;
    return old;
}
#endif
