/*
 * future.h - layer 1: a future, its state word, and its memory.
 *
 * The state word is the single arbiter of who runs a task (the claim is a
 * change of it, never a lock held while the task runs):
 *
 *   state = tag << SF__TAG_SHIFT | orphan bit | status
 *
 * The tag names the push that queued this incarnation of the future: the
 * queuing thread's id in its high bits, that thread's push counter below.
 * Futures are recycled, never returned to the system while the runtime runs
 * (type-stable memory, future.c), so a stale pointer found in an old queue
 * slot is always a valid future; a claimer that found it through a queue
 * compares the tag and cannot mistake a recycled future for the task it saw
 * queued.
 *
 * Transitions (the only ones; a debug build asserts each, sf__transition_ok):
 *   FREE -> PENDING            push, by the queuing thread before publishing it
 *   PENDING -> RUNNING         claim: by exactly one of owner, worker, helper
 *   PENDING -> FREE            discard: sf_release before anyone started it
 *   RUNNING -> RUNNING|ORPHAN  sf_release while the task runs
 *   RUNNING -> DONE            completion (run.h)
 *   DONE -> FREE               sf_release after completion
 *   RUNNING|ORPHAN -> FREE     completion of an orphan: the runner frees it
 */
#ifndef SF_FUTURE_H
#define SF_FUTURE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "debug.h"
#include "platform.h"
#include "sf.h"

enum sf__status {
    SF__FREE = 0,
    SF__PENDING = 1,
    SF__RUNNING = 2,
    SF__DONE = 3
};
#define SF__STATUS_MASK UINT64_C(7)
#define SF__ORPHAN UINT64_C(8)
#define SF__TAG_SHIFT 4
/* A tag's push counter takes SF__SEQ_BITS; the thread id the bits above. */
#define SF__SEQ_BITS 40
/* Thread ids the registry hands out: all a tag holds (64 - SF__TAG_SHIFT -
 * SF__SEQ_BITS bits), about a million live threads. */
#define SF__MAX_THREAD_IDS (1 << 20)
_Static_assert(SF__MAX_THREAD_IDS <= (1 << (64 - SF__TAG_SHIFT - SF__SEQ_BITS)),
               "every thread id fits a tag");

struct sf_future {
    union {
        void *(*fn)(void *); /* the task, while not FREE */
        sf_future *next;     /* free-list link, while FREE */
    } u;
    void *val;                 /* the argument until the task runs, then its result */
    _Atomic uint64_t state;    /* see above; sf__future_futex is the futex word */
    _Atomic uint32_t waiters;  /* getters asleep on this future (get.c) */
    /* The isolation region the task belongs to, 0 for none (get.c,
     * Isolation): written by its maker before the push publishes it, and by
     * an isolated get that claimed it; read by claimers that filter. */
    _Atomic uint32_t region;
};

static inline uint64_t sf__status(uint64_t s) { return s & SF__STATUS_MASK; }
static inline uint64_t sf__tag(uint64_t s) { return s >> SF__TAG_SHIFT; }
/* The id of the thread whose queue the push named by s went to. */
static inline int sf__tag_thread(uint64_t s) { return (int)(sf__tag(s) >> SF__SEQ_BITS); }
/* That thread's push counter. */
static inline uint64_t sf__tag_seq(uint64_t s)
{
    return sf__tag(s) & ((UINT64_C(1) << SF__SEQ_BITS) - 1);
}
/* s with its status replaced (the tag kept, the orphan bit dropped). */
static inline uint64_t sf__with_status(uint64_t s, enum sf__status st)
{
    return (s & ~(SF__STATUS_MASK | SF__ORPHAN)) | (uint64_t)st;
}

/* Is from -> to one of the transitions above? For the debug build's checks. */
static inline int sf__transition_ok(uint64_t from, uint64_t to)
{
    uint64_t f = sf__status(from), t = sf__status(to);
    bool same_tag = sf__tag(from) == sf__tag(to);
    switch (f) {
    case SF__FREE: return t == SF__PENDING;
    case SF__PENDING: return (t == SF__RUNNING && same_tag && !(to & SF__ORPHAN)) || to == SF__FREE;
    case SF__RUNNING:
        if (from & SF__ORPHAN)
            return to == SF__FREE || (t == SF__DONE && same_tag);
        return (t == SF__DONE && same_tag) || to == (from | SF__ORPHAN);
    case SF__DONE: return to == SF__FREE;
    default: return 0;
    }
}
#define SF__ASSERT_TRANSITION(from, to)                                            \
    SF__ASSERT(sf__transition_ok((from), (to)), "future state %#llx -> %#llx",     \
               (unsigned long long)(from), (unsigned long long)(to))

/* The futex word getters sleep on: the half of the state that holds the
 * status bits. */
static inline uint32_t *sf__future_futex(sf_future *f) { return sf__futex_low_half(&f->state); }

/*
 * A thread's free futures. Owner only: no lock and no atomic on the hot path.
 * A list longer than SF__SPILL_AT spills half to a global stash that other
 * threads refill from. A debug build keeps the last SF__QUARANTINE released
 * futures out of reuse, so a use after release finds the future FREE (and
 * reports it) instead of finding someone else's task.
 */
#define SF__SPILL_AT 16384
#define SF__QUARANTINE 4096
struct sf__freelist {
    sf_future *head;
    size_t n;
    SF__OWNER_FIELD
#ifdef SF_DEBUG
    sf_future **quarantine; /* ring of SF__QUARANTINE, allocated on first use */
    size_t qnext;
#endif
};

sf_future *sf__future_refill(struct sf__freelist *fl);
void sf__future_spill(struct sf__freelist *fl);
/* Frees f (FREE already) to the global stash: for a thread with no list. */
void sf__future_free_shared(sf_future *f);
/* Returns every slab to the system: only when no thread holds a future
 * (sf_shutdown). */
void sf__futures_free_all(void);
void sf__freelist_destroy(struct sf__freelist *fl);
/* In a child after fork(), whose only thread holds no libsf lock: forget
 * every slab (the parent's futures are invalid here; their copies leak) and
 * make the lock usable whatever state the fork caught it in. */
void sf__futures_after_fork(void);
#ifdef SF_DEBUG
sf_future *sf__future_quarantine(struct sf__freelist *fl, sf_future *f);
#endif

/* A FREE future from the list, or NULL when no memory is left. */
static inline sf_future *sf__future_alloc(struct sf__freelist *fl)
{
    SF__OWNER_CHECK(fl, "taking a future from a free list");
    sf_future *f = fl->head;
    if (SF__UNLIKELY(f == NULL) && (f = sf__future_refill(fl)) == NULL)
        return NULL;
    fl->head = f->u.next;
    fl->n--;
    return f;
}

/* Gives back a future that sf__future_alloc returned and nobody saw. */
static inline void sf__future_unalloc(struct sf__freelist *fl, sf_future *f)
{
    f->u.next = fl->head;
    fl->head = f;
    fl->n++;
}

/* Frees f into the owner's list. f's state is from (for the debug check). */
static inline void sf__future_put(struct sf__freelist *fl, sf_future *f, uint64_t from)
{
    SF__OWNER_CHECK(fl, "freeing a future into a free list");
    SF__ASSERT_TRANSITION(from, SF__FREE);
    (void)from;
    /* Relaxed: FREE is never the expected value of a claim, and the future's
     * next user publishes it afresh with a release store (sf__pending_push). */
    atomic_store_explicit(&f->state, SF__FREE, memory_order_relaxed);
#ifdef SF_DEBUG
    if ((f = sf__future_quarantine(fl, f)) == NULL)
        return;
#endif
    f->u.next = fl->head;
    fl->head = f;
    if (SF__UNLIKELY(++fl->n > SF__SPILL_AT))
        sf__future_spill(fl);
}

#endif /* SF_FUTURE_H */
