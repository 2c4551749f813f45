/*
 * future.c - futures: their memory, sf_do, sf_release, and running a claimed
 * task to completion.
 *
 * Memory. Futures are 32 bytes, carved from 64 KiB slabs that live until
 * sf_shutdown. Each thread keeps a free list (no lock, no atomic on the hot
 * path); a thread that frees many more than it makes spills half to a global
 * stash that others refill from. Because slab memory is never returned while
 * the runtime runs, a pointer read from any queue slot, however stale, points
 * at some future: this type stability is what lets claimers read a stale slot
 * and settle everything with one CAS on the state word (pending.h).
 *
 * Completion. Two cases, chosen by who ran the task:
 *  - SF__HOW_INLINE: the runner is inside sf_get() of this very future, so the
 *    caller's reference is alive and no sf_release() can race (sf.h: release
 *    after every get returned). A release store of DONE suffices; sleeping
 *    getters are found through f->waiters with the asymmetric Dekker pair
 *    (light fence here, heavy fence in the sleeper, get.c).
 *  - any other runner: the owner may release the future at any moment, so the
 *    runner publishes DONE with an exchange, which also tells it whether the
 *    future was orphaned meanwhile (then the runner frees it).
 */
#include "pending.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define SLAB_BYTES (64 * 1024)
#define SLAB_FUTURES ((SLAB_BYTES - 64) / sizeof(sf_future))

struct slab {
    struct slab *next;
    _Alignas(64) sf_future f[SLAB_FUTURES];
};

/* Lock order: taken with no other libsf lock held, and nothing is taken
 * under it. */
static pthread_mutex_t slab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slab *slabs;
static sf_future *stash;
static size_t nstash;

_Static_assert(sizeof(sf_future) == 32, "a future is 32 bytes: two per cache line");

sf_future *sf__future_refill(struct sf__thread *t)
{
    pthread_mutex_lock(&slab_lock);
    if (stash != NULL) {
        /* Take at most half a spill's worth, so threads do not trade the
         * whole stash back and forth. */
        size_t n = 0;
        sf_future *head = stash, *last = stash;
        while (last->u.next != NULL && ++n < SF__SPILL_AT / 2)
            last = last->u.next;
        stash = last->u.next;
        nstash -= n + 1 > nstash ? nstash : n + 1;
        last->u.next = t->free;
        t->free = head;
        t->nfree += n + 1;
        pthread_mutex_unlock(&slab_lock);
        return t->free;
    }
    struct slab *s = aligned_alloc(64, sizeof *s);
    if (s == NULL) {
        pthread_mutex_unlock(&slab_lock);
        return NULL;
    }
    memset(s, 0, sizeof *s); /* every state FREE, every waiters count 0 */
    s->next = slabs;
    slabs = s;
    pthread_mutex_unlock(&slab_lock);
    for (size_t i = SLAB_FUTURES; i-- > 0;) {
        s->f[i].u.next = t->free;
        t->free = &s->f[i];
    }
    t->nfree += SLAB_FUTURES;
    return t->free;
}

void sf__future_spill(struct sf__thread *t)
{
    sf_future *head = t->free, *last = head;
    for (size_t i = 1; i < SF__SPILL_AT / 2; i++)
        last = last->u.next;
    t->free = last->u.next;
    t->nfree -= SF__SPILL_AT / 2;
    pthread_mutex_lock(&slab_lock);
    last->u.next = stash;
    stash = head;
    nstash += SF__SPILL_AT / 2;
    pthread_mutex_unlock(&slab_lock);
}

void sf__future_free(struct sf__thread *t, sf_future *f)
{
    if (t != NULL) {
        sf__future_put(t, f);
        return;
    }
    /* A thread that could not register: give it to all. */
    atomic_store_explicit(&f->state, SF__FREE, memory_order_relaxed);
    pthread_mutex_lock(&slab_lock);
    f->u.next = stash;
    stash = f;
    nstash++;
    pthread_mutex_unlock(&slab_lock);
}

void sf__slabs_free_all(void)
{
    pthread_mutex_lock(&slab_lock);
    while (slabs != NULL) {
        struct slab *next = slabs->next;
        free(slabs);
        slabs = next;
    }
    stash = NULL;
    nstash = 0;
    pthread_mutex_unlock(&slab_lock);
}

static const char *const how_name[] = {"inline", "pool", "steal", "drain"};

void sf__run(struct sf__thread *t, sf_future *f, uint64_t claimed, enum sf__how how)
{
    switch (how) {
    case SF__HOW_INLINE: SF__BUMP(t->c_inline); break;
    case SF__HOW_POOL: SF__BUMP(t->c_pool); break;
    case SF__HOW_STEAL: SF__BUMP(t->c_stolen); break;
    case SF__HOW_DRAIN: SF__BUMP(t->c_drained); break;
    }
    SF__TRACE(t, "FStart\t" SF__TASK_FMT "\t%s", SF__TASK_ARGS(claimed), how_name[how]);
    t->depth++;
    void *r = f->u.fn(f->val);
    t->depth--;
    /* Trace before publishing: once DONE is visible the future may be
     * recycled, so only the local copy of its state names it afterwards. */
    SF__TRACE(t, "FDone\t" SF__TASK_FMT, SF__TASK_ARGS(claimed));
    f->val = r;
    /* acq_rel: release publishes val; acquire takes over a future that
     * sf_release() orphaned, to free it. (SF__HOW_INLINE goes through
     * sf__run_inline instead, internal.h.) */
    uint64_t old = atomic_exchange_explicit(
        &f->state, (claimed & ~(SF__STATUS_MASK | SF__ORPHAN)) | SF__DONE, memory_order_acq_rel);
    if (old & SF__ORPHAN) {
        /* Nobody holds it and nobody may get it: ours to free. */
        sf__future_free(t, f);
        return;
    }
    /* Relaxed: ordered by the exchange (a full barrier) against the
     * sleeper's heavy fence. After DONE the owner may already have recycled
     * f; then this reads another incarnation's count and at worst wakes its
     * sleepers spuriously (they recheck), which type-stable memory makes
     * safe. */
    if (atomic_load_explicit(&f->waiters, memory_order_relaxed) != 0)
        sf__futex_wake(sf__futex_word(f), INT_MAX);
}

SF_EXPORT sf_future *sf_do(void *(*fn)(void *), void *arg)
{
    if (SF__UNLIKELY(fn == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    struct sf__thread *t = sf__self();
    if (SF__UNLIKELY(t == NULL))
        return NULL;
    sf_future *f = t->free;
    if (SF__UNLIKELY(f == NULL)) {
        f = sf__future_refill(t);
        if (f == NULL) {
            errno = ENOMEM;
            return NULL;
        }
    }
    t->free = f->u.next;
    t->nfree--;
    f->u.fn = fn;
    f->val = arg;
    /* Counted before the push, so the trace's Queue column (created minus
     * started) never sees a start before its creation. */
    SF__BUMP(t->c_created);
    if (SF__UNLIKELY(!sf__pending_push(t, f))) {
        atomic_store_explicit(&t->c_created,
                              atomic_load_explicit(&t->c_created, memory_order_relaxed) - 1,
                              memory_order_relaxed);
        f->u.next = t->free;
        t->free = f;
        t->nfree++;
        errno = ENOMEM;
        return NULL;
    }
    SF__TRACE(t, "Do\t" SF__TASK_FMT,
              SF__TASK_ARGS(atomic_load_explicit(&f->state, memory_order_relaxed)));
    return f;
}

SF_EXPORT void sf_release(sf_future *f)
{
    if (f == NULL)
        return;
    struct sf__thread *t = sf__self(); /* NULL: freed to the global stash */
    /* Acquire: if DONE, the runner's writes to f happen before our reuse. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    for (;;) {
        switch (sf__status(s)) {
        case SF__DONE:
            if (SF__LIKELY(t != NULL))
                sf__future_put(t, f);
            else
                sf__future_free(NULL, f);
            return;
        case SF__PENDING: {
            /* Claim it for nobody: the task never runs. Its queue slot goes
             * stale and is dropped by the queue's owner. */
            uint64_t queued = s; /* the claim overwrites s; the trace names the task */
            if (t != NULL && sf__tag_owner(s) == t->id ? sf__own_claim(t, f, &s, SF__FREE)
                                                        : sf__foreign_claim(f, &s, SF__FREE)) {
                if (t != NULL) {
                    SF__BUMP(t->c_discarded);
                    SF__TRACE(t, "Discard\t" SF__TASK_FMT, SF__TASK_ARGS(queued));
                }
                sf__future_free(t, f);
                return;
            }
            break;
        }
        case SF__RUNNING:
            /* Leave it to the runner, whose exchange sees the bit. */
            if (atomic_compare_exchange_weak_explicit(&f->state, &s, s | SF__ORPHAN,
                                                      memory_order_release,
                                                      memory_order_acquire))
                return;
            break;
        default: /* FREE: released twice; nothing sane to do */
            return;
        }
    }
}

SF_EXPORT int sf_is_done(const sf_future *f)
{
    if (f == NULL) {
        errno = EINVAL;
        return -1;
    }
    /* Acquire: a caller that sees 1 may read results the task produced. */
    return sf__status(atomic_load_explicit(&((sf_future *)f)->state, memory_order_acquire)) ==
           SF__DONE;
}
