/*
 * future.h - a future, its state word, and its memory.
 *
 * The state word is the single arbiter of who runs a task (the claim is a
 * change of it, never a lock held while the task runs):
 *
 *   state = tag << SF__TAG_SHIFT | flags | status
 *
 * Flags: ORPHAN (released while it runs), CANCEL (sf_cancel asked the
 * running task to stop), FAILED (done with a failure: msg holds the message,
 * fail_code the code), SEEN (a getter saw that failure: no unhandled report),
 * WATCHED (continuations wait for it: its completion closes its watch list
 * first, sched/after.h).
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
 *   RUNNING -> RUNNING|CANCEL  sf_cancel while the task runs
 *   RUNNING -> RUNNING|FAILED  sf_fail in the task (|SEEN too: sf_cancelled
 *                              said yes, and a cancelled task is no news)
 *   RUNNING -> DONE[|FAILED]   completion (run.h); also a cancelled pending
 *                              task, claimed and completed unrun
 *   DONE|FAILED -> +SEEN       a getter saw the failure
 *   DONE -> FREE               sf_release after completion
 *   RUNNING|ORPHAN -> FREE     completion of an orphan: the runner frees it
 *   PENDING -> MOVED           a task in caller storage promoted (below)
 *   MOVED -> DONE[|FAILED|SEEN] its getter copied the slab future's end back
 *   FREE -> RUNNING            sf_promise: a future with no task; a
 *                              promise's further states and flags are
 *                              promise.c's, outside this list
 *   FREE -> WAITING            sf_do_after: a continuation whose deps are
 *                              not all done; its flags while WAITING are
 *                              after.h's (ORPHAN: released; CANCEL: ready)
 *   WAITING -> RUNNING         its claim off the ready list, by one thread
 *   WAITING -> DONE|FAILED|SEEN  sf_cancel before it ran (claimed first by
 *                              WAITING|FAILED|SEEN, after.c)
 *   RUNNING/WAITING -> +WATCHED  a continuation began to wait for it
 * (CANCEL and ORPHAN combine; the runner's completion drops both.)
 *
 * While RUNNING, runner names the fiber that runs it (run.h), which is
 * how a getter about to sleep follows a chain of waits (get.c, Deadlock).
 *
 * Tasks in caller storage (sf_task, task.c). A future may also live in
 * memory the caller owns - a frame of its stack - that stops being a future
 * when the caller's get returns. Such a local future is not type-stable, so
 * it must never be read by any thread but the one that made it: its queue
 * slot carries a mark that every other thread's scan skips (pending.h,
 * Local futures), it is got only by its maker, and nobody waits on it. To
 * let others run its task, its owner promotes it: copies the task into a
 * slab future with the same tag, puts that one in the slot, and marks the
 * local one MOVED, its moved_to naming the slab future. A MOVED future's getter
 * gets the slab future instead and copies its end back.
 */
#ifndef SF_FUTURE_H
#define SF_FUTURE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/debug.h"
#include "platform/platform.h"
#include "sf.h"

enum sf__status {
    SF__FREE = 0,
    SF__PENDING = 1,
    SF__RUNNING = 2,
    SF__DONE = 3,
    SF__MOVED = 4, /* a task in caller storage whose task moved to a slab future
                    * (moved_to); below, Tasks in caller storage */
    SF__WAITING = 5 /* a continuation whose deps are not all done (after.h):
                     * to getters, a task that runs elsewhere */
};
#define SF__STATUS_MASK UINT64_C(7)
#define SF__ORPHAN UINT64_C(8)
#define SF__CANCEL UINT64_C(16)
#define SF__FAILED UINT64_C(32)
#define SF__SEEN UINT64_C(64)
#define SF__WATCHED UINT64_C(128)
#define SF__FLAGS (SF__ORPHAN | SF__CANCEL | SF__FAILED | SF__SEEN | SF__WATCHED)
#define SF__TAG_SHIFT 8
/* A tag's push counter takes SF__SEQ_BITS; the thread id the bits above. */
#define SF__SEQ_BITS 39
/* Thread ids the registry hands out: all a tag holds (64 - SF__TAG_SHIFT -
 * SF__SEQ_BITS bits), 131,072 live threads. */
#define SF__MAX_THREAD_IDS (1 << 17)
_Static_assert(SF__MAX_THREAD_IDS <= (1 << (64 - SF__TAG_SHIFT - SF__SEQ_BITS)),
               "every thread id fits a tag");
/* The last id is no thread's: it tags the tasks that are in no thread's
 * pending queue, the tasks of batches (batch.h). The registry never hands it
 * out, so a tag names a batch task exactly when its state word is at least
 * SF__NO_THREAD_MIN (one compare with a constant, run.h). */
#define SF__NO_THREAD_ID (SF__MAX_THREAD_IDS - 1)
#define SF__NO_THREAD_MIN ((uint64_t)SF__NO_THREAD_ID << (SF__TAG_SHIFT + SF__SEQ_BITS))

struct sf_future {
    union {
        void *(*fn)(void *); /* the task, while not FREE */
        sf_future *next;     /* free-list link, while FREE */
    } u;
    /* One word, named by what the state says it holds. A slab future's is
     * stored with relaxed atomics, since a getter that follows a chain of
     * waits may read it at any time (get.c, Deadlock); each access says
     * which store publishes it. */
    union {
        void *val;           /* PENDING: the argument; DONE: the result */
        void *runner;        /* RUNNING: the struct sf__fiber it runs on
                              * (run.h), for getters that follow a chain of
                              * waits (get.c, Deadlock) */
        char *msg;           /* DONE|FAILED: the failure's message (malloc'd,
                              * or NULL), the future's until a getter takes it */
        sf_future *moved_to; /* MOVED: the slab future its task moved to
                              * (below, Tasks in caller storage) */
    };
    _Atomic uint64_t state;  /* see above; sf__future_futex is the futex word */
    union {
        _Atomic uint32_t waiters;    /* a slab future: getters asleep on it (get.c) */
        _Atomic uint32_t local_slot; /* a local future while pending: the low
                                      * bits of its queue slot's index (pending.h,
                                      * Local futures); nobody sleeps on it, and
                                      * its claimer zeroes it (as waiters) */
    };
    union {
        /* Not FAILED: the isolation region the task belongs to, 0 for none
         * (get.c, Isolation): written by its maker before the push
         * publishes it, and by an isolated get that claimed it; read by
         * claimers that filter. */
        _Atomic uint32_t region;
        /* FAILED: the failure's code (failure.h), which replaces the
         * region once the task has failed. */
        _Atomic uint32_t fail_code;
    };
    /* Lineage (cancel.h): the task above this one, whose cancellation
     * reaches it. A slab future's up is the cancellable task that was
     * running when it was made (the maker, or the maker's own up when the
     * maker is a local future, which nobody can cancel), NULL for none (made
     * outside any task, a batch task, a promise); up_tag is up's state word
     * then, whose tag names that incarnation. Written by the maker before the
     * push publishes the task, each by a release store, up_tag first, and
     * never again while the task lives; read by any thread that walks the
     * lineage (cancel.c), which accepts them only while this future is still
     * the incarnation it reached. A local future keeps neither: nobody but
     * its maker reads it (Tasks in caller storage). */
    sf_future *up;   /* __atomic builtins: the walk of cancel.h */
    uint64_t up_tag;
    /* What a task made while this one runs takes as its up and up_tag: a
     * slab future names itself (kids_up is set when its slab is carved,
     * future.c, and stays; kids_up_tag is written at each push), a local
     * future names its own up (written at its push). So a push copies two
     * words without asking which kind of future is running. Read by the
     * thread running this future, which claimed it after they were
     * written. */
    sf_future *kids_up;
    uint64_t kids_up_tag;
};
/* task.c copies kids_up and kids_up_tag as one 16-byte block. */
_Static_assert(offsetof(struct sf_future, kids_up_tag) ==
                   offsetof(struct sf_future, kids_up) + sizeof(sf_future *),
               "kids_up_tag follows kids_up");

static inline uint64_t sf__status(uint64_t s) { return s & SF__STATUS_MASK; }
static inline uint64_t sf__tag(uint64_t s) { return s >> SF__TAG_SHIFT; }
/* The id of the thread whose queue the push named by s went to. */
static inline int sf__tag_thread(uint64_t s) { return (int)(sf__tag(s) >> SF__SEQ_BITS); }
/* That thread's push counter. */
static inline uint64_t sf__tag_seq(uint64_t s)
{
    return sf__tag(s) & ((UINT64_C(1) << SF__SEQ_BITS) - 1);
}
/* s with its status replaced (the tag kept, the flags dropped). */
static inline uint64_t sf__with_status(uint64_t s, enum sf__status st)
{
    return (s & ~(SF__STATUS_MASK | SF__FLAGS)) | (uint64_t)st;
}

/* Marks a failed future's failure seen (no unhandled report); returns its
 * state. Relaxed: SEEN only tells release and shutdown not to report, and
 * the CAS fails only on a concurrent SEEN, which is as good. */
static inline uint64_t sf__future_mark_seen(sf_future *f, uint64_t s)
{
    while (!(s & SF__SEEN) &&
           !atomic_compare_exchange_weak_explicit(&f->state, &s, s | SF__SEEN,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    return s | SF__SEEN;
}

/* Done with a result (not a failure): the getters' fast test. */
static inline bool sf__done_ok(uint64_t s) { return (s & (SF__STATUS_MASK | SF__FAILED)) == SF__DONE; }

/* Is from -> to one of the transitions above? For the debug build's checks. */
static inline int sf__transition_ok(uint64_t from, uint64_t to)
{
    uint64_t f = sf__status(from), t = sf__status(to);
    bool same_tag = sf__tag(from) == sf__tag(to);
    switch (f) {
    case SF__FREE: /* RUNNING: sf_promise; WAITING: sf_do_after */
        return t == SF__PENDING || t == SF__RUNNING || t == SF__WAITING;
    case SF__PENDING:
        return ((t == SF__RUNNING || t == SF__MOVED) && same_tag && !(to & SF__FLAGS)) ||
               to == SF__FREE;
    case SF__RUNNING:
        if (t == SF__DONE)
            return same_tag && !(to & (SF__ORPHAN | SF__CANCEL | SF__WATCHED)) &&
                   (to & SF__FAILED || !(to & SF__SEEN));
        if (to == SF__FREE)
            return (from & SF__ORPHAN) != 0;
        /* Flags only come: sf_release, sf_cancel, sf_fail, sf_cancelled,
         * a continuation's watch. */
        return t == SF__RUNNING && (to & ~SF__FLAGS) == (from & ~SF__FLAGS) &&
               (to & from) == from;
    case SF__DONE: return to == SF__FREE || to == (from | SF__SEEN);
    case SF__MOVED: return t == SF__DONE && same_tag; /* its getter copies the end back */
    case SF__WAITING:
        if (t == SF__RUNNING) /* the claim keeps ORPHAN and WATCHED, drops ready */
            return same_tag && !(from & SF__FAILED) &&
                   !(to & (SF__CANCEL | SF__FAILED | SF__SEEN)) &&
                   (to & (SF__ORPHAN | SF__WATCHED)) == (from & (SF__ORPHAN | SF__WATCHED));
        if (t == SF__DONE) /* cancelled before it ran */
            return same_tag && (to & SF__FLAGS) == (SF__FAILED | SF__SEEN);
        if (to == SF__FREE) /* cancelled, released before */
            return (from & SF__ORPHAN) != 0;
        /* Flags only come: release, ready, a watch, a cancel's claim
         * (FAILED|SEEN, after.c). */
        return t == SF__WAITING && (to & ~SF__FLAGS) == (from & ~SF__FLAGS) &&
               (to & from) == from;
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
/* Gives every slab's memory back to the system (the mappings stay, reading
 * as FREE futures): only when no thread uses a future (sf_shutdown). */
void sf__futures_free_all(void);
/* A walk over every future not FREE: only when no thread uses a future
 * (sf_shutdown, before sf__futures_free_all). A cursor starts zeroed;
 * sf__futures_next returns the next such future and its state, or NULL
 * once every one was seen. (A walk, not a visitor function: layer 1 calls
 * no code of the layers above it.) */
struct sf__futures_cursor {
    void *arena; /* future.c's arena list, NULL: from the first */
    size_t slab, k;
};
sf_future *sf__futures_next(struct sf__futures_cursor *c, uint64_t *state);
/* The same walk while other threads use futures (sf_shutdown's watch of
 * promises nobody can set, promise.c): between these two calls, which hold
 * slab_lock (a leaf: the walker takes no lock in between), the arena list and the slabs in use stay put; each state
 * is a snapshot that may change the moment it is read. */
void sf__futures_scan_begin(void);
void sf__futures_scan_end(void);
void sf__freelist_destroy(struct sf__freelist *fl);
/* f's watch word: the head of the list of continuations waiting for it
 * (sched/after.h, which owns its values). A word beside the future, not in
 * it: a future is one cache line, and the word is touched only by the
 * continuations' slow paths. Zero while no continuation ever waited. */
_Atomic uintptr_t *sf__future_watch(const sf_future *f);
/* Frees f, FREE already, from any thread - one that libsf does not know
 * too - allocating nothing and taking no lock: onto the deferred list
 * (future.c, Deferred frees), which sf__future_reclaim empties. */
void sf__future_free_deferred(sf_future *f);
/* Moves every future of the deferred list onto fl (its owner). */
void sf__future_reclaim(struct sf__freelist *fl);
/* Is f in an arena of a runtime that is gone (future.c, Resting arenas): a
 * future of a stopped runtime, or of a forked parent's? For reports. */
bool sf__future_resting(const sf_future *f);
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

/* sf__future_alloc of a list the caller saw non-empty: no refill, so a
 * fast path that takes it calls nothing (and saves no registers). */
static inline sf_future *sf__future_alloc_nonempty(struct sf__freelist *fl)
{
    SF__OWNER_CHECK(fl, "taking a future from a free list");
    sf_future *f = fl->head;
    SF__ASSERT(f != NULL, "the free list is not empty");
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
