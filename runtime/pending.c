/*
 * pending.c - the slow paths of a thread's pending queue: creation, growth,
 * the owner's pop while it helps, and the claim scan of other threads.
 * The algorithm and its invariant are at the top of pending.h.
 */
#include "pending.h"

#include <ck_pr.h>
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
    atomic_init(&q->pub_seq, q->seq);
    atomic_init(&q->ring, r);
    atomic_init(&q->claiming, NULL);
    atomic_init(&q->want, 0);
    atomic_init(&q->foreign, NULL);
    pthread_mutex_init(&q->flock, NULL);
    return 0;
}

void sf__pending_destroy(struct sf__pending *q)
{
    pthread_mutex_destroy(&q->flock);
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
    sf__pending_tidy(t, UINT64_MAX);
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
            if (!sf__own_claim(t, f, &s, (s & ~SF__STATUS_MASK) | SF__RUNNING))
                continue; /* claimed or released meanwhile: look again */
            atomic_store_explicit(&q->bottom, b - 1, memory_order_release);
            *claimed = s;
            return f;
        }
        /* Not pending here: nothing to lose by dropping the slot. */
        atomic_store_explicit(&q->bottom, b - 1, memory_order_release);
    }
}

sf_future *sf__pending_steal(struct sf__thread *victim, int mode, uint64_t limit,
                             uint64_t *claimed)
{
    struct sf__pending *q = &victim->q;
    /* Acquire on bottom and ring: the slots below bottom, and the ring's
     * contents, were published by the owner's release stores. top is only a
     * starting hint (relaxed). Acquire on the watermarks: pairs with their
     * release stores (the tasks below them were pushed before). */
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    uint64_t b = atomic_load_explicit(&q->bottom, memory_order_acquire);
    uint64_t pub = atomic_load_explicit(&q->pub_seq, memory_order_acquire);
    uint64_t sub = (mode & SF__SCAN_TAKE) ? atomic_load_explicit(&q->sub_seq, memory_order_acquire)
                                          : UINT64_MAX;
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_acquire);
    bool private_seen = false;
    for (uint64_t i = tp; i < b && i - tp < limit; i++) {
        sf_future *f = atomic_load_explicit(&r->slot[i & r->mask], memory_order_relaxed);
        if (f == NULL)
            continue;
        /* Relaxed: a hint; the CAS below decides. Any pointer found in any
         * ring is a valid future (memory is type-stable), possibly recycled:
         * the tag check makes sure we claim only a task queued here, and the
         * seq checks that it is submitted and public. */
        uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
        if (!sf__pending_here(s, victim->id) || sf__tag(s) >= sub)
            continue;
        uint64_t run = (s & ~SF__STATUS_MASK) | SF__RUNNING;
        if (sf__tag(s) >= pub) {
            if (!(mode & SF__SCAN_FORCE)) {
                private_seen = true;
                continue;
            }
            if (sf__foreign_claim(f, &s, run)) {
                *claimed = run;
                return f;
            }
            continue;
        }
        if (atomic_compare_exchange_strong_explicit(&f->state, &s, run, memory_order_acquire,
                                                    memory_order_relaxed)) {
            *claimed = run;
            return f;
        }
    }
    /* Relaxed: a request; the owner polls it at its next call. */
    if (private_seen && !atomic_load_explicit(&q->want, memory_order_relaxed))
        atomic_store_explicit(&q->want, 1, memory_order_relaxed);
    return NULL;
}

void sf__pending_publish(struct sf__thread *t)
{
    struct sf__pending *q = &t->q;
    /* Cleared first: a request made after this is not lost. */
    atomic_store_explicit(&q->want, 0, memory_order_relaxed);
    sf__pending_tidy(t, UINT64_MAX);
    /* Release pairs with the scanners' acquire load of pub_seq. */
    atomic_store_explicit(&q->pub_seq, q->seq, memory_order_release);
    /* Same Dekker pair as sf__pending_submit: idle workers may be waiting
     * for exactly these tasks. */
    sf__fence_light();
    if (atomic_load_explicit(&sf__rt.idle_sleepers, memory_order_relaxed) > 0)
        sf__pool_wake_one();
}

bool sf__own_claim_contended(struct sf__thread *t, sf_future *f, uint64_t *sp, uint64_t to)
{
    struct sf__pending *q = &t->q;
    /* A foreign claimer announced f too: wait for its verdict. While our
     * claiming == f stands, later foreign claimers of f back off, so this
     * wait ends. Acquire: its verdict on f's state is visible after. */
    while (atomic_load_explicit(&q->foreign, memory_order_acquire) == f)
        ck_pr_stall();
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    bool ok = s == *sp;
    if (ok)
        atomic_store_explicit(&f->state, to, memory_order_relaxed);
    atomic_store_explicit(&q->claiming, NULL, memory_order_release);
    *sp = ok ? to : s;
    return ok;
}

bool sf__foreign_claim(sf_future *f, uint64_t *sp, uint64_t to)
{
    struct sf__thread *o = sf__registry_get(sf__tag_owner(*sp));
    struct sf__pending *q = &o->q;
    /* Acquire: pairs with the owner's release store of pub_seq. */
    if (sf__tag(*sp) < atomic_load_explicit(&q->pub_seq, memory_order_acquire))
        return atomic_compare_exchange_strong_explicit(&f->state, sp, to, memory_order_acquire,
                                                       memory_order_acquire);
    /* Lock order: flock is a leaf lock; nothing else is held or taken. */
    pthread_mutex_lock(&q->flock);
    atomic_store_explicit(&q->foreign, f, memory_order_relaxed);
    /* Pairs with the light fence in sf__own_claim: either the owner sees
     * our announcement and waits for our verdict, or we see its claim. */
    sf__fence_heavy();
    bool ok = false;
    /* Acquire: if the owner already cleared its claim, its state store is
     * visible and the CAS below fails. */
    if (atomic_load_explicit(&q->claiming, memory_order_acquire) != f)
        ok = atomic_compare_exchange_strong_explicit(&f->state, sp, to, memory_order_acquire,
                                                     memory_order_acquire);
    /* Release: the owner waiting in sf__own_claim_contended sees our CAS. */
    atomic_store_explicit(&q->foreign, NULL, memory_order_release);
    pthread_mutex_unlock(&q->flock);
    if (!ok) {
        /* The owner is claiming f: let it finish before anyone retries. */
        while (atomic_load_explicit(&q->claiming, memory_order_acquire) == f)
            ck_pr_stall();
        *sp = atomic_load_explicit(&f->state, memory_order_acquire);
    }
    return ok;
}

void sf__pending_trim(struct sf__thread *t, sf_future *f)
{
    struct sf__pending *q = &t->q;
    uint64_t b0 = atomic_load_explicit(&q->bottom, memory_order_relaxed), b = b0;
    uint64_t tp = atomic_load_explicit(&q->top, memory_order_relaxed);
    struct sf__ring *r = atomic_load_explicit(&q->ring, memory_order_relaxed);
    while (b > tp) {
        sf_future *g = atomic_load_explicit(&r->slot[(b - 1) & r->mask], memory_order_relaxed);
        /* Relaxed: a stale "not pending" only means the claim already
         * happened; nothing is read through g. */
        if (g != f &&
            sf__pending_here(atomic_load_explicit(&g->state, memory_order_relaxed), t->id))
            break;
        b--;
    }
    if (b != b0)
        /* Release: see sf__pending_forget. */
        atomic_store_explicit(&q->bottom, b, memory_order_release);
    if (b > tp && atomic_load_explicit(&r->slot[tp & r->mask], memory_order_relaxed) == f)
        /* f was the oldest (tasks got in the order they were made): move top
         * on, so workers scanning from it see pending tasks, not finished
         * ones. */
        sf__pending_tidy(t, 8);
}

bool sf__pending_empty(struct sf__thread *t)
{
    sf__pending_tidy(t, UINT64_MAX);
    return atomic_load_explicit(&t->q.top, memory_order_relaxed) ==
           atomic_load_explicit(&t->q.bottom, memory_order_relaxed);
}

void sf__pending_submit_slow(struct sf__thread *t, uint64_t old_sub)
{
    /* Counted by sequence number, not by scanning slots: a recycled future
     * can sit in a stale slot and its live one at once. */
    sf__trace(t, "Submit All\t%llu", (unsigned long long)(t->q.seq - old_sub));
}
