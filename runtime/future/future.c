/*
 * future.c - the memory of futures.
 *
 * Futures are 64 bytes, one cache line, carved from 64 KiB slabs, 27 to a 2 MiB arena
 * mapped with mmap and aligned to its size; the arena's first 64 KiB hold
 * its header (the slabs' bookkeeping), so a future's slab is found from its
 * address alone. The next 256 KiB hold a watch word for each future slot
 * (sf__future_watch): pages that stay untouched, and cost nothing, until a
 * continuation waits for a future there. Each thread keeps a free list (future.h); a thread that
 * frees many more than it makes spills half to the global stash, kept per
 * slab, that others refill from.
 *
 * Type stability. Arenas stay mapped until sf_shutdown, so a pointer read
 * from any queue slot, however stale, points at some future: claimers read
 * a stale slot and settle everything with one CAS on the state word
 * (pending.h). Concurrency Kit's epoch reclamation would let memory go
 * earlier, at the price of an epoch section around every scan.
 *
 * Memory comes back anyway. When every future of a slab is in the stash,
 * the slab is taken off the stash and its pages are discarded (madvise
 * MADV_DONTNEED): the mapping stays, and reads find zeros - a FREE future,
 * no waiters, no region - which no claim can take (a claim expects
 * PENDING). Such a cold slab is the first to be handed out again. So after
 * a burst of tasks is released, its futures' memory returns to the system
 * as the spills complete slabs, bounded by what threads keep on their own
 * lists (SF__SPILL_AT each).
 *
 * Resting arenas. At sf_shutdown every arena is discarded (its futures read
 * as FREE) but stays mapped, and a program may still hold handles into it
 * - by mistake, say a thread that made a future before the shutdown and
 * gets it after. So a stopped runtime's arenas rest through the next
 * runtime, which maps its own, and only the one after reuses them: for the
 * whole next runtime such a handle reads as released (a get fails with
 * EINVAL) instead of naming another task. At most two runtimes' arenas
 * exist, the resting ones taking no memory but address space.
 *
 * Deferred frees. A completed promise whose handle was released first
 * (promise.c) is freed by the thread that completes it, which may be one
 * libsf does not know - an audio callback - and must then take no lock
 * and allocate nothing: it pushes the future on a lock-free list (a
 * Treiber stack: pushes only, one CAS each), which a thread with a free
 * list empties whole by one exchange (sf__future_reclaim, by sf_promise),
 * so no pop races a push and no ABA can arise. sf_shutdown and fork forget
 * the list with the arenas.
 *
 * Invariant: a future is in exactly one of: in use, one thread's free list,
 * its slab's stash list, the deferred list; a cold slab has all its futures in none and reads
 * as zeros. Slab bookkeeping is under slab_lock.
 */
#include "future/future.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SLAB_BYTES ((size_t)64 << 10)
#define SLAB_FUTURES (SLAB_BYTES / sizeof(sf_future))
#define ARENA_BYTES ((size_t)2 << 20)
#define ARENA_SLABS (ARENA_BYTES / SLAB_BYTES) /* slab 0 is the header */
/* Slabs 1 to 4: the watch words, one per 64-byte slot of the arena. */
#define WATCH_SLABS (ARENA_BYTES / sizeof(sf_future) * sizeof(uintptr_t) / SLAB_BYTES)
#define FIRST_SLAB (1 + WATCH_SLABS) /* the first slab of futures */

struct slab {
    sf_future *stash;         /* its futures in the stash */
    uint32_t n;               /* how many */
    struct slab *prev, *next; /* on the partial list while 0 < n; next: on cold */
    char *mem;
    bool cold;                /* discarded, or never used: reads as zeros */
};

struct arena {
    struct arena *next;
    struct slab slab[ARENA_SLABS]; /* [0, FIRST_SLAB) unused: the header's own */
};
_Static_assert(sizeof(struct arena) <= SLAB_BYTES, "an arena's header fits its first slab");

/* Deferred frees: FREE futures linked by u.next. */
static _Atomic(sf_future *) deferred;

/* A leaf lock (debug.h): nothing is taken under it. */
static struct sf__lock slab_lock = SF__LOCK_INITIALIZER(SF__RANK_LEAF, "slab_lock");
static struct arena *arenas;  /* this runtime's, newest first */
static struct arena *resting; /* the previous runtime's (Resting arenas) */
static struct slab *partial; /* slabs with futures in the stash */
static struct slab *cold;    /* slabs whose futures are all free and discarded */

_Static_assert(sizeof(sf_future) == 64, "a future is 64 bytes: a cache line of its own");
_Static_assert(FIRST_SLAB == 5, "the header and the watch words take five slabs");

_Atomic uintptr_t *sf__future_watch(const sf_future *f)
{
    uintptr_t a = (uintptr_t)f & ~(uintptr_t)(ARENA_BYTES - 1);
    return (_Atomic uintptr_t *)(a + SLAB_BYTES) + ((uintptr_t)f - a) / sizeof(sf_future);
}

/* The watch words of arena a, discarded: they read as zeros (no list). */
static void discard_watch(struct arena *a)
{
    sf__memory_discard((char *)a + SLAB_BYTES, WATCH_SLABS * SLAB_BYTES);
}

static struct slab *slab_of(const sf_future *f)
{
    struct arena *a = (struct arena *)((uintptr_t)f & ~(uintptr_t)(ARENA_BYTES - 1));
    return &a->slab[((uintptr_t)f - (uintptr_t)a) / SLAB_BYTES];
}

/* Under slab_lock. */
static void partial_remove(struct slab *sl)
{
    if (sl->prev != NULL)
        sl->prev->next = sl->next;
    else
        partial = sl->next;
    if (sl->next != NULL)
        sl->next->prev = sl->prev;
    sl->prev = sl->next = NULL;
}

/* Maps an arena and puts its slabs on the cold list. Under slab_lock. */
static bool arena_new(void)
{
    /* Twice the size, then trimmed to an aligned arena. */
    char *m = mmap(NULL, 2 * ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return false;
    char *a = (char *)(((uintptr_t)m + ARENA_BYTES - 1) & ~(uintptr_t)(ARENA_BYTES - 1));
    if (a > m)
        munmap(m, (size_t)(a - m));
    munmap(a + ARENA_BYTES, (size_t)(m + 2 * ARENA_BYTES - (a + ARENA_BYTES)));
    struct arena *ar = (struct arena *)a; /* fresh pages: zeros */
    ar->next = arenas;
    arenas = ar;
    for (size_t i = ARENA_SLABS; i-- > FIRST_SLAB;) {
        ar->slab[i].mem = a + i * SLAB_BYTES;
        ar->slab[i].cold = true;
        ar->slab[i].next = cold;
        cold = &ar->slab[i];
    }
    return true;
}

sf_future *sf__future_refill(struct sf__freelist *fl)
{
    sf__lock(&slab_lock);
    struct slab *sl = partial;
    if (sl != NULL) {
        /* One slab's stash at a time: at most SLAB_FUTURES, and whole
         * slabs stay together on few lists. */
        partial_remove(sl);
        sf_future *head = sl->stash, *last = head;
        while (last->u.next != NULL)
            last = last->u.next;
        last->u.next = fl->head;
        fl->head = head;
        fl->n += sl->n;
        sl->stash = NULL;
        sl->n = 0;
        sf__unlock(&slab_lock);
        return fl->head;
    }
    if (cold == NULL && !arena_new()) {
        sf__unlock(&slab_lock);
        return NULL;
    }
    sl = cold;
    cold = sl->next;
    sl->next = NULL;
    sl->cold = false;
    sf__unlock(&slab_lock);
    /* Ours alone now. Its memory reads as zeros: every state FREE, every
     * waiters count 0. Each slab future's kids_up names itself from now on
     * (future.h, Lineage): nothing else writes it while the slab is carved,
     * and a discarded slab is carved again here before any use. */
    sf_future *fs = (sf_future *)sl->mem;
    for (size_t i = SLAB_FUTURES; i-- > 0;) {
        fs[i].kids_up = &fs[i];
        fs[i].u.next = fl->head;
        fl->head = &fs[i];
    }
    fl->n += SLAB_FUTURES;
    return fl->head;
}

/* Puts f into its slab's stash list; a slab that becomes whole goes on
 * *done instead (its futures are unlinked). Under slab_lock. */
static void stash_one(sf_future *f, struct slab **done)
{
    struct slab *sl = slab_of(f);
    f->u.next = sl->stash;
    sl->stash = f;
    if (sl->n++ == 0) {
        sl->prev = NULL;
        sl->next = partial;
        if (partial != NULL)
            partial->prev = sl;
        partial = sl;
    }
    if (sl->n == SLAB_FUTURES) {
        partial_remove(sl);
        sl->stash = NULL;
        sl->n = 0;
        sl->next = *done;
        *done = sl;
    }
}

/* Discards the memory of whole slabs, then makes them cold. The discard
 * happens before anyone can refill from them: nobody else holds them. */
static void discard_and_cool(struct slab *done)
{
    if (done == NULL)
        return;
    struct slab *last = NULL;
    for (struct slab *sl = done; sl != NULL; sl = sl->next) {
        sf__memory_discard(sl->mem, SLAB_BYTES);
        last = sl;
    }
    sf__lock(&slab_lock);
    for (struct slab *sl = done; sl != NULL; sl = sl->next)
        sl->cold = true;
    last->next = cold;
    cold = done;
    sf__unlock(&slab_lock);
}

void sf__future_spill(struct sf__freelist *fl)
{
    sf_future *f = fl->head;
    struct slab *done = NULL;
    sf__lock(&slab_lock);
    for (size_t i = 0; i < SF__SPILL_AT / 2; i++) {
        sf_future *next = f->u.next;
        stash_one(f, &done);
        f = next;
    }
    sf__unlock(&slab_lock);
    fl->head = f;
    fl->n -= SF__SPILL_AT / 2;
    discard_and_cool(done);
}

void sf__future_free_shared(sf_future *f)
{
    struct slab *done = NULL;
    sf__lock(&slab_lock);
    stash_one(f, &done);
    sf__unlock(&slab_lock);
    discard_and_cool(done);
}

void sf__future_free_deferred(sf_future *f)
{
    /* Relaxed: the CAS below rereads it. */
    sf_future *head = atomic_load_explicit(&deferred, memory_order_relaxed);
    do
        f->u.next = head;
    /* Release: the reclaimer's acquire exchange sees u.next (each push is
     * an RMW, so the release sequence carries every earlier push too). */
    while (!atomic_compare_exchange_weak_explicit(&deferred, &head, f, memory_order_release,
                                                  memory_order_relaxed));
}

void sf__future_reclaim(struct sf__freelist *fl)
{
    /* Relaxed: a hint; a push missed now is reclaimed next time. */
    if (atomic_load_explicit(&deferred, memory_order_relaxed) == NULL)
        return;
    /* Acquire: pairs with the pushes' release; their links are visible. */
    sf_future *f = atomic_exchange_explicit(&deferred, NULL, memory_order_acquire);
    while (f != NULL) {
        sf_future *next = f->u.next;
        /* From an orphan's completion (future.h): the transition it made. */
        sf__future_put(fl, f, SF__RUNNING | SF__ORPHAN);
        f = next;
    }
}

sf_future *sf__futures_next(struct sf__futures_cursor *c, uint64_t *state)
{
    /* No lock: the caller may run user code (an unhandled-failure hook)
     * between two calls, and nobody else uses futures now - or holds
     * slab_lock (sf__futures_scan_begin), which keeps arenas and slabs as
     * they are. Arenas are only ever added at the head, so the cursor's
     * arena stays valid. */
    struct arena *a = c->arena != NULL ? c->arena : arenas;
    if (c->slab == 0)
        c->slab = FIRST_SLAB; /* the slabs below hold the arena's header */
    for (; a != NULL; a = a->next, c->slab = FIRST_SLAB, c->k = 0)
        for (; c->slab < ARENA_SLABS; c->slab++, c->k = 0) {
            if (a->slab[c->slab].cold)
                continue;
            sf_future *fs = (sf_future *)a->slab[c->slab].mem;
            while (c->k < SLAB_FUTURES) {
                sf_future *f = &fs[c->k++];
                /* Relaxed: nobody else uses futures now (the caller's
                 * contract), or the caller wants a snapshot and orders
                 * what it reads next itself. */
                uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
                if (s != SF__FREE) {
                    c->arena = a;
                    *state = s;
                    return f;
                }
            }
        }
    c->arena = NULL;
    return NULL;
}

void sf__futures_scan_begin(void) { sf__lock(&slab_lock); }
void sf__futures_scan_end(void) { sf__unlock(&slab_lock); }

/* Every slab of the arena list from `a` discarded and cold, pushed on
 * `cold`. Under slab_lock. */
static void cool_arenas(struct arena *a)
{
    for (; a != NULL; a = a->next) {
        discard_watch(a);
        for (size_t i = ARENA_SLABS; i-- > FIRST_SLAB;) {
            struct slab *sl = &a->slab[i];
            if (!sl->cold)
                sf__memory_discard(sl->mem, SLAB_BYTES);
            sl->stash = NULL;
            sl->n = 0;
            sl->prev = NULL;
            sl->cold = true;
            sl->next = cold;
            cold = sl;
        }
    }
}

void sf__futures_free_all(void)
{
    /* The arenas stay mapped, every slab discarded: a future kept past
     * sf_shutdown reads as FREE (a get of it fails with EINVAL). They rest
     * through the next runtime (Resting arenas); the resting ones before
     * them are this runtime's to reuse from now on. */
    /* Relaxed: nobody uses futures now. Its futures rest with their arenas. */
    atomic_store_explicit(&deferred, NULL, memory_order_relaxed);
    sf__lock(&slab_lock);
    partial = cold = NULL;
    struct arena *r = resting;
    resting = arenas;
    cool_arenas(resting);
    cold = NULL; /* resting slabs are discarded, but not handed out */
    cool_arenas(r);
    arenas = r;
    sf__unlock(&slab_lock);
}

bool sf__future_resting(const sf_future *f)
{
    const struct arena *a =
        (const struct arena *)((uintptr_t)f & ~(uintptr_t)(ARENA_BYTES - 1));
    sf__lock(&slab_lock);
    const struct arena *r = resting;
    while (r != NULL && r != a)
        r = r->next;
    sf__unlock(&slab_lock);
    return r != NULL;
}

void sf__futures_after_fork(void)
{
    sf__lock_init(&slab_lock, SF__RANK_LEAF, "slab_lock");
    /* Relaxed: the child has one thread. The parent's deferred futures go
     * with their arenas. */
    atomic_store_explicit(&deferred, NULL, memory_order_relaxed);
    /* The parent's futures are invalid here. Their pages are discarded
     * (in the child only: private memory) so that they read as FREE - a
     * get, wait, release or cancel of one fails with EINVAL instead of
     * waiting for a parent's thread - and they rest through the child's
     * first runtime like a stopped runtime's (Resting arenas). The slab
     * headers stay: the arena list is in them. */
    struct arena *last = NULL;
    for (struct arena *a = arenas; a != NULL; last = a, a = a->next) {
        discard_watch(a);
        for (size_t i = FIRST_SLAB; i < ARENA_SLABS; i++)
            sf__memory_discard(a->slab[i].mem, SLAB_BYTES);
    }
    if (last != NULL) {
        last->next = resting;
        resting = arenas;
    }
    arenas = NULL;
    partial = cold = NULL;
    /* The resting arenas' slab records still say what the parent's slabs
     * held: made cold at the child's first shutdown (cool_arenas). */
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
