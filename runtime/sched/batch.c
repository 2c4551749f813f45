/*
 * batch.c - the batches' FIFOs, their ring and its round-robin
 * cursor, and their accounting (algorithm and invariants: batch.h).
 */
#include "sched/batch.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define FIFO_MIN 64     /* entries of a FIFO's first ring */
#define FIFO_KEEP 4096  /* an emptied ring larger than this is freed */
#define COUNT_MASK ((UINT64_C(1) << SF__BATCH_COUNT_BITS) - 1)

struct entry {
    sf_future *f;
    uint64_t state; /* the PENDING state the add stored: the claim's expected value */
};

struct sf_batch {
    /* Rank LEAF, under list_lock when both are held. Never held while a
     * task runs: only FIFO work, counting, a futex wake and malloc/free. */
    struct sf__lock lock;
    /* Under lock: */
    struct entry *fifo;        /* ring of cap entries (a power of two), or NULL */
    uint64_t head, tail, cap;  /* entries [head, tail) */
    uint64_t outstanding;      /* tasks added and not yet DONE (batch.h) */
    uint64_t adds;             /* the tags' add counter */
    bool closed;
    int sleepers;              /* sf_batch_wait callers asleep on wake */
    /* Futex word of sleepers: bumped under lock at an add they could help
     * with and when outstanding reaches 0. Atomic only for the futex. */
    _Atomic uint32_t wake;
    /* Set at creation, then read only. */
    uint32_t slot;
    /* In the ring of batches with work (Ring, below): written under both
     * list_lock and lock, so either one suffices to read it. */
    bool in_ring;
    struct sf_batch *prev, *next; /* the ring's links, under list_lock */
};

/*
 * Ring. The batches that may have pending tasks form a ring, and a take
 * walks it from the cursor, so a take costs the same however many batches
 * are open and idle. Invariant: a batch whose FIFO holds an entry is in the
 * ring, or the adder that put the entry there is about to insert it, before
 * it returns (and before its sf__pool_notify). An adder that finds in_ring
 * false under the batch's lock inserts it; a taker removes a batch only
 * when, holding both locks, it finds its FIFO empty; both read and write
 * in_ring under the batch's lock, so an add after a removal sees false and
 * an add before it leaves the FIFO non-empty. A batch that sf_batch_wait
 * emptied stays in the ring until a taker comes by and removes it.
 *
 * Rank BATCHES (debug.h): the ring, the cursor and the slots. Held while a
 * taker looks into batches (their locks nest under it), never while a task
 * runs.
 */
static struct sf__lock list_lock = SF__LOCK_INITIALIZER(SF__RANK_BATCHES, "batch list_lock");
static struct sf_batch *cursor; /* the batch to serve next; NULL: the ring is empty */
/* Batch by slot. Written under list_lock at creation and at the free; read
 * without it by sf__batch_of, for a task of the batch not yet accounted for:
 * the creation happened before the task's add (the handle went from creator
 * to adder), the add's release of PENDING before its claimer's acquire, and
 * the free after every finish (each under the batch's lock, which the freer
 * took), so every such read is ordered between the two writes. */
static struct sf_batch *slots[SF__BATCH_MAX];
/* Under list_lock: each slot's next add count, kept from batch to batch so
 * that a slot's tags do not repeat (batch.h); slots never used yet, from
 * next_slot on; the slots given back, a FIFO (the longest-free is reused
 * first) of nfree entries from free_head. */
static uint64_t slot_adds[SF__BATCH_MAX];
static uint32_t free_slots[SF__BATCH_MAX];
static uint32_t free_head, nfree, next_slot;
/* Entries in every FIFO (stale ones included). Changed under the batch's
 * lock; read without any lock as the hint that keeps idle workers off
 * list_lock, and as the worker's half of the sleep protocol (batch.h).
 * Relaxed: the fences of that protocol order it (pool.h). */
static _Atomic uint64_t queued;

__thread struct sf__batch_frame *sf__batch_frames;

struct sf_batch *sf__batch_new(void)
{
    struct sf_batch *b = calloc(1, sizeof *b);
    if (b == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sf__lock_init(&b->lock, SF__RANK_LEAF, "a batch's lock");
    sf__lock(&list_lock);
    if (next_slot < SF__BATCH_MAX) {
        b->slot = next_slot++;
    } else if (nfree > 0) {
        b->slot = free_slots[free_head];
        free_head = (free_head + 1) % SF__BATCH_MAX;
        nfree--;
    } else {
        sf__unlock(&list_lock);
        sf__lock_destroy(&b->lock);
        free(b);
        errno = EAGAIN;
        return NULL;
    }
    slots[b->slot] = b;
    b->adds = slot_adds[b->slot];
    sf__unlock(&list_lock);
    return b;
}

/* Under list_lock and b->lock: b joins the ring, last in the current round
 * (just before the cursor): a batch that gets work is served within one
 * round. */
static void ring_insert(struct sf_batch *b)
{
    if (cursor == NULL) {
        b->prev = b->next = b;
        cursor = b;
    } else {
        b->next = cursor;
        b->prev = cursor->prev;
        cursor->prev->next = b;
        cursor->prev = b;
    }
    b->in_ring = true;
}

/* Under list_lock and b->lock: b leaves the ring. */
static void ring_remove(struct sf_batch *b)
{
    if (b->next == b) {
        cursor = NULL;
    } else {
        b->prev->next = b->next;
        b->next->prev = b->prev;
        if (cursor == b)
            cursor = b->next;
    }
    b->in_ring = false;
}

struct sf_batch *sf__batch_of(uint64_t s)
{
    return slots[(sf__tag_seq(s) >> SF__BATCH_COUNT_BITS) & (SF__BATCH_MAX - 1)];
}

/* Under b->lock: room for one more entry. */
static bool fifo_room(struct sf_batch *b)
{
    if (b->tail - b->head < b->cap)
        return true;
    uint64_t cap = b->cap == 0 ? FIFO_MIN : b->cap * 2;
    struct entry *n = malloc(cap * sizeof *n);
    if (n == NULL)
        return false;
    for (uint64_t i = b->head; i != b->tail; i++)
        n[i & (cap - 1)] = b->fifo[i & (b->cap - 1)];
    free(b->fifo);
    b->fifo = n;
    b->cap = cap;
    return true;
}

/* Under b->lock: wakes its sf_batch_wait sleepers. */
static void wake_sleepers(struct sf_batch *b)
{
    if (b->sleepers == 0)
        return;
    /* Relaxed: the lock orders it against the sleepers' read of it. */
    atomic_fetch_add_explicit(&b->wake, 1, memory_order_relaxed);
    sf__futex_wake(&b->wake, INT_MAX);
}

int sf__batch_push(struct sf__thread *me, struct sf_batch *b, sf_future *f, uint64_t *state)
{
    sf__lock(&b->lock);
    if (b->closed) {
        sf__unlock(&b->lock);
        return EPIPE;
    }
    if (!fifo_room(b)) {
        sf__unlock(&b->lock);
        return ENOMEM;
    }
    uint64_t seq = (uint64_t)SF__NO_THREAD_ID << SF__SEQ_BITS |
                   (uint64_t)b->slot << SF__BATCH_COUNT_BITS | (b->adds++ & COUNT_MASK);
    uint64_t tagged = seq << SF__TAG_SHIFT | SF__PENDING;
    SF__ASSERT_TRANSITION(atomic_load_explicit(&f->state, memory_order_relaxed), tagged);
    /* A batch task belongs to its batch, not to the task that added it: no
     * cancellation above it reaches it (cancel.h). Release, up_tag first,
     * as every push writes them; the tasks it makes take its incarnation. */
    __atomic_store_n(&f->up_tag, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&f->up, NULL, __ATOMIC_RELEASE);
    f->kids_up_tag = tagged;
    /* Release: a getter that claims f through its handle, without this
     * lock, reads fn and val written before. */
    atomic_store_explicit(&f->state, tagged, memory_order_release);
    /* Before the entry is visible: the Do line comes before any start. */
    SF__TRACE(me, DO, tagged, 0);
    b->fifo[b->tail++ & (b->cap - 1)] = (struct entry){f, tagged};
    b->outstanding++;
    /* Relaxed: see `queued`. */
    atomic_fetch_add_explicit(&queued, 1, memory_order_relaxed);
    wake_sleepers(b);
    bool join = !b->in_ring;
    sf__unlock(&b->lock);
    if (join) { /* Ring: before we return, so before the adder's notify */
        sf__lock(&list_lock);
        sf__lock(&b->lock);
        if (!b->in_ring)
            ring_insert(b);
        sf__unlock(&b->lock);
        sf__unlock(&list_lock);
    }
    *state = tagged;
    return 0;
}

/* Under b->lock: claims its oldest pending task, dropping stale entries. */
static sf_future *take_locked(struct sf_batch *b, uint64_t *claimed)
{
    sf_future *f = NULL;
    while (f == NULL && b->head != b->tail) {
        struct entry e = b->fifo[b->head++ & (b->cap - 1)];
        atomic_fetch_sub_explicit(&queued, 1, memory_order_relaxed);
        uint64_t s = e.state, run = sf__with_status(s, SF__RUNNING);
        /* Fails only if the handle's holder discarded or cancelled it. */
        if (sf__claim_cas(e.f, &s, run)) {
            f = e.f;
            *claimed = run;
        }
    }
    if (b->head == b->tail && b->cap > FIFO_KEEP) {
        free(b->fifo);
        b->fifo = NULL;
        b->cap = 0;
    }
    return f;
}

sf_future *sf__batch_take(uint64_t *claimed)
{
    if (atomic_load_explicit(&queued, memory_order_relaxed) == 0)
        return NULL;
    sf__lock(&list_lock);
    sf_future *f = NULL;
    /* Every batch visited either serves a task or leaves the ring, so the
     * loop ends after at most one visit per batch in it. */
    while (f == NULL && cursor != NULL) {
        struct sf_batch *b = cursor;
        sf__lock(&b->lock);
        f = take_locked(b, claimed);
        if (b->head == b->tail) {
            ring_remove(b); /* moves the cursor on */
        } else {
            cursor = b->next; /* past the batch served: one task per batch per turn */
        }
        sf__unlock(&b->lock);
    }
    sf__unlock(&list_lock);
    return f;
}

sf_future *sf__batch_take_from(struct sf_batch *b, uint64_t *claimed)
{
    sf__lock(&b->lock);
    sf_future *f = take_locked(b, claimed);
    sf__unlock(&b->lock);
    return f;
}

bool sf__batch_maybe_pending(void)
{
    return atomic_load_explicit(&queued, memory_order_relaxed) != 0;
}

uint64_t sf__batch_outstanding(struct sf_batch *b)
{
    sf__lock(&b->lock);
    uint64_t n = b->outstanding;
    sf__unlock(&b->lock);
    return n;
}

/* b is closed and drained: nobody can reach it but through the ring and
 * the slots (its handle is dead, sf.h), so once out of them, it is ours. */
static void destroy(struct sf_batch *b)
{
    sf__lock(&list_lock);
    sf__lock(&b->lock);
    if (b->in_ring)
        ring_remove(b);
    sf__unlock(&b->lock);
    slots[b->slot] = NULL;
    slot_adds[b->slot] = b->adds;
    free_slots[(free_head + nfree++) % SF__BATCH_MAX] = b->slot;
    sf__unlock(&list_lock);
    /* Stale entries (tasks discarded or cancelled through their handles)
     * leave with it. Relaxed: see `queued`. */
    atomic_fetch_sub_explicit(&queued, b->tail - b->head, memory_order_relaxed);
    free(b->fifo);
    sf__lock_destroy(&b->lock);
    free(b);
}

void sf__batch_finished(struct sf_batch *b)
{
    sf__lock(&b->lock);
    SF__ASSERT(b->outstanding > 0, "a batch finished more tasks than it was given");
    bool drained = --b->outstanding == 0;
    if (drained)
        wake_sleepers(b);
    /* Only one thread sees both: close and the last finish are under the
     * lock, and nothing is added once closed. */
    bool gone = drained && b->closed;
    sf__unlock(&b->lock);
    if (gone)
        destroy(b);
}

void sf__batch_sleep(struct sf__thread *me, struct sf_batch *b, long nap_ns)
{
    sf__lock(&b->lock);
    if (b->head != b->tail || b->outstanding == 0) {
        sf__unlock(&b->lock);
        return;
    }
    b->sleepers++;
    /* Relaxed: read under the lock that every bump holds, so a bump after
     * this read changes the word before the futex compares it. */
    uint32_t seen = atomic_load_explicit(&b->wake, memory_order_relaxed);
    sf__unlock(&b->lock);
    uint64_t began = sf__nap_begin(me);
    sf__futex_wait(&b->wake, seen, nap_ns);
    sf__nap_end(me, began);
    sf__lock(&b->lock);
    b->sleepers--;
    sf__unlock(&b->lock);
}

void sf__batch_close(struct sf_batch *b)
{
    sf__lock(&b->lock);
    bool was = b->closed;
    b->closed = true;
    bool gone = !was && b->outstanding == 0;
    sf__unlock(&b->lock);
    if (gone)
        destroy(b);
}

void sf__batch_free_all(void)
{
    sf__lock(&list_lock);
    for (uint32_t i = 0; i < next_slot; i++) {
        struct sf_batch *b = slots[i];
        if (b != NULL) {
            free(b->fifo);
            sf__lock_destroy(&b->lock);
            free(b);
        }
    }
    cursor = NULL;
    memset(slots, 0, next_slot * sizeof slots[0]);
    memset(slot_adds, 0, next_slot * sizeof slot_adds[0]);
    free_head = nfree = next_slot = 0;
    /* Relaxed: no thread uses libsf now (sf.h). */
    atomic_store_explicit(&queued, 0, memory_order_relaxed);
    sf__unlock(&list_lock);
}

void sf__batch_after_fork(void)
{
    sf__lock_init(&list_lock, SF__RANK_BATCHES, "batch list_lock");
    cursor = NULL;
    memset(slots, 0, next_slot * sizeof slots[0]);
    memset(slot_adds, 0, next_slot * sizeof slot_adds[0]);
    free_head = nfree = next_slot = 0;
    /* Relaxed: the child has one thread. */
    atomic_store_explicit(&queued, 0, memory_order_relaxed);
    sf__batch_frames = NULL;
}
