/*
 * deque.c - a light-task deque's shared part: sharing, taking back,
 * claiming (the algorithm and its invariants: deque.h).
 */
#include "queue/deque.h"

#include <errno.h>
#include <sys/mman.h>

static inline uint64_t pack(uint32_t tail, uint32_t split) { return (uint64_t)tail << 32 | split; }
static inline uint32_t tail_of(uint64_t ts) { return (uint32_t)(ts >> 32); }
static inline uint32_t split_of(uint64_t ts) { return (uint32_t)ts; }

/* The split the inline sync tests: the real one, or above every slot. */
static void set_pub_split(struct sf__deque *d, struct sf_light_slot *s)
{
    d->o_split = s;
    d->pub.split = d->slow ? (struct sf_light_slot *)UINTPTR_MAX : s;
}

int sf__deque_init(struct sf__deque *d, bool slow)
{
    size_t bytes = (size_t)SF__DEQUE_SLOTS * sizeof(struct sf_light_slot);
    /* Address space only: pages come as the deque grows, and are never
     * counted against overcommit (a thread's fibers each have one). */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        errno = ENOMEM;
        return -1;
    }
    d->base = p;
    d->end = d->base + SF__DEQUE_SLOTS;
    d->slow = slow;
    d->pub.head = d->base;
    set_pub_split(d, d->base);
    /* Relaxed, both: the deque is published to thieves by the release
     * store of its pointer (light.c). */
    __atomic_store_n(&d->pub.limit, slow ? d->base : d->end - 1, __ATOMIC_RELAXED);
    atomic_store_explicit(&d->ts, 0, memory_order_relaxed);
    atomic_store_explicit(&d->ask, false, memory_order_relaxed);
    return 0;
}

void sf__deque_destroy(struct sf__deque *d)
{
    if (d->base != NULL)
        munmap(d->base, (size_t)SF__DEQUE_SLOTS * sizeof(struct sf_light_slot));
    d->base = NULL;
}

bool sf__deque_share_range(const struct sf__deque *d, bool all, struct sf_light_slot **lo,
                           struct sf_light_slot **hi)
{
    struct sf_light_slot *s = d->o_split, *h = d->pub.head;
    if (h <= s)
        return false;
    *lo = s;
    *hi = all ? h : s + (h - s + 1) / 2;
    return true;
}

void sf__deque_unask(struct sf__deque *d)
{
    /* Relaxed, both: they order nothing. The limit first, then the flag:
     * an ask that lands between them finds the flag up and is merged into
     * the share this answers (a lost hint, which its thief repeats once the
     * flag is down), and one that lands after both is seen at the next
     * spawn. The other order could leave the flag up and the limit high,
     * and every later ask returning at the flag: no share again. */
    if (!d->slow) {
        struct sf_light_slot *asked = d->base;
        __atomic_compare_exchange_n(&d->pub.limit, &asked, d->end - 1, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
    }
    atomic_store_explicit(&d->ask, false, memory_order_relaxed);
}

void sf__deque_share_commit(struct sf__deque *d, struct sf_light_slot *hi)
{
    uint32_t s = sf__deque_index(d, hi);
    /* Relaxed load: only this thread writes split, and a stale tail fails
     * the CAS. Release on success: a thief that claims one of these slots
     * (acquire, sf__deque_claim) sees the fn, arg and root written before. */
    uint64_t ts = atomic_load_explicit(&d->ts, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&d->ts, &ts, pack(tail_of(ts), s),
                                                  memory_order_release, memory_order_relaxed))
        ;
    set_pub_split(d, hi);
    sf__deque_unask(d);
}

bool sf__deque_take_back(struct sf__deque *d, struct sf_light_slot *t)
{
    uint32_t i = sf__deque_index(d, t);
    /* Relaxed, all: the owner takes back its own slot, whose task it
     * wrote; the CAS only has to be atomic with the thieves' claims. One
     * slot, not the newer half of those shared as Lace's sync takes: the
     * half ran slower here (fib and uts-t1 at 2 threads), the thieves left
     * with too little to take. */
    uint64_t ts = atomic_load_explicit(&d->ts, memory_order_relaxed);
    for (;;) {
        if (tail_of(ts) > i)
            return false; /* (I3): a thief's claim passed it */
        if (atomic_compare_exchange_weak_explicit(&d->ts, &ts, pack(tail_of(ts), i),
                                                  memory_order_relaxed, memory_order_relaxed))
            break;
    }
    set_pub_split(d, t);
    return true;
}

void sf__deque_stolen_synced(struct sf__deque *d, struct sf_light_slot *t)
{
    uint32_t i = sf__deque_index(d, t);
    /* A plain store is safe: every slot of (t, split) was synced before t
     * and each was stolen (a taken-back one would have lowered split), so
     * tail == split and no thief's CAS can succeed until the owner's next
     * share (I1, I2). Relaxed: it publishes no slot. */
    atomic_store_explicit(&d->ts, pack(i, i), memory_order_relaxed);
    set_pub_split(d, t);
}

struct sf_light_slot *sf__deque_peek(struct sf__deque *d, uint64_t *ts)
{
    /* Acquire: pairs with the share's release, for the root read before
     * the claim (a guess all the same: deque.h). */
    uint64_t w = atomic_load_explicit(&d->ts, memory_order_acquire);
    if (tail_of(w) >= split_of(w))
        return NULL;
    *ts = w;
    return d->base + tail_of(w);
}

bool sf__deque_claim(struct sf__deque *d, uint64_t ts)
{
    /* Acquire on success: the CAS reads the last share's release (a CAS
     * continues the release sequence of the word), so fn, arg and root are
     * visible (deque.h, I4). */
    return atomic_compare_exchange_strong_explicit(&d->ts, &ts, pack(tail_of(ts) + 1, split_of(ts)),
                                                   memory_order_acquire, memory_order_relaxed);
}

void sf__deque_ask(struct sf__deque *d)
{
    /* Relaxed: a hint. Only the thief that raises the flag touches the
     * limit: pub.limit shares its line with head and split, which the
     * owner writes at every spawn and sync, and a thief that read it at
     * every look would pull that line from the owner each time. The flag
     * lives on the thieves' line (ts). An ask cannot be silenced
     * for good: the flag is up with the limit high only between a raise
     * and its limit store, or inside sf__deque_unask (limit first, then
     * the flag down), and a thief that finds the flag down asks anew. An
     * owner whose spawn finds the limit lowered shares whether or not the
     * flag has reached it. */
    if (atomic_load_explicit(&d->ask, memory_order_relaxed))
        return;
    atomic_store_explicit(&d->ask, true, memory_order_relaxed);
    if (!d->slow)
        __atomic_store_n(&d->pub.limit, d->base, __ATOMIC_RELAXED);
}
