/*
 * after.h - continuations (sf_do_after): a task that becomes runnable when
 * its deps are done, and holds no thread, stack, fiber or queue slot until
 * then.
 *
 * Records. sf_do_after allocates one record for the continuation: its future
 * c, the count `left` of deps not yet done (plus one, the maker's hold
 * until every dep is registered) and one link per dep. c is WAITING
 * (future.h) meanwhile, its argument in val as a queued task's: to getters
 * a task that runs elsewhere and names no fiber, so they help, spin and
 * sleep as for a promise. Its flags while
 * WAITING: ORPHAN (released: it still runs, as others may wait for it),
 * CANCEL (ready: every dep is done, the record is on the ready list),
 * WATCHED (continuations wait for c).
 *
 * Watch lists. Each future has a watch word beside it (future.h,
 * sf__future_watch): 0, or a Treiber stack of the links of the
 * continuations that wait for it, or a closed mark - the tag of the
 * incarnation that closed it, shifted, with bit 0 set. A maker pushes its
 * link by CAS; the future's completion closes the word by exchange, taking
 * the list whole, and then decrements each link's record. A mark with
 * another incarnation's tag is stale (the word is never reset, the tag says
 * whose it is) and reads as an empty list. Every push and the close are
 * read-modify-writes of one word, so a link either gets on before the close
 * (and its completer fires it) or sees the mark of the incarnation it
 * waits for (its dep is done, or a few instructions from it: the maker
 * waits for DONE and counts the dep done itself).
 *
 * Who closes, and why the future's memory is still its own then. A future
 * is freed only after its completion (a holder's release of DONE, or the
 * completion of an orphan), so a completer that closes before it publishes
 * DONE reads the right incarnation's word. Each completion that publishes
 * with a read-modify-write (a runner other than the task's own get, a
 * promise's setter or canceller, a cancelled continuation, a task completed
 * unrun) sees WATCHED in the state it replaces, and closes first. The one
 * completion that publishes with a plain store - the fork-join fast path,
 * a task run in its own get (run.h, INLINE) - cannot see a flag set since
 * its claim, and pays nothing for one: a maker that watches a RUNNING task
 * that may end that way (not a promise, a batch task or a continuation)
 * also raises the future's waiters count, the word that completion already
 * reads after DONE (Dekker: its light fence, the maker's heavy one). It
 * closes after DONE, which is safe there: its own get holds the handle, so
 * nobody can free the future yet. The maker pushes its link before it
 * raises waiters: a completer that sees the raise (its load of waiters,
 * then an acquire fence, against the raise's release) sees the link; one
 * that does not is seen by the maker's second look at the state, which
 * then finds DONE and closes the word itself.
 *
 * The ready list. The last dep's completer, on whatever thread - an audio
 * callback that sets a promise included - marks c ready (CANCEL, by CAS
 * while c is still that WAITING incarnation), pushes the record on a
 * Treiber stack (one CAS), wakes an idle worker (sf__pool_notify: a futex
 * wake at most) and wakes getters asleep on c, whose futex word changed.
 * No allocation, no lock. Takers - idle workers, helping gets - pop under
 * ready_lock (a leaf): a taker moves the whole stack to its private FIFO by
 * exchange and reverses it, so records leave in the order they became
 * ready, and with one popper at a time no ABA can arise. A taker claims c
 * (WAITING|CANCEL -> RUNNING, keeping ORPHAN and WATCHED: sf__after_claim)
 * and runs it through sf__run_claimed as any task. A get of c claims it the
 * same way once it is ready, and runs it itself; so the claim is a CAS, and
 * a taker whose claim fails (c got, or cancelled, since) drops the record.
 * Either way c completes by a read-modify-write (never a get's plain
 * store), so a continuation of c needs no guard.
 *
 * A PENDING dep is claimed by the maker (its queue slot goes stale) and
 * put on the ready list too, by a node in its link: it runs on the pool
 * even if nobody gets it, and completes by a read-modify-write.
 *
 * Memory. A record lives from sf_do_after until its continuation is taken
 * (and its deps have all fired: `left` reached 0 first), so what lives is
 * bounded by the continuations not yet run.
 */
#ifndef SF_AFTER_H
#define SF_AFTER_H

#include "sched/idle.h"
#include "sched/thread.h"

/* A node of the ready list: a future to run. s is the state the taker
 * claims from: c's WAITING state for a continuation, the RUNNING state the
 * maker's claim left for a dep it took from a queue. */
struct sf__ready {
    struct sf__ready *next;
    sf_future *f;
    uint64_t s;
};

struct sf__after;

/* One dep of one continuation: its node on the dep's watch list. */
struct sf__after_link {
    struct sf__after_link *next;
    struct sf__after *a;
    bool counted;         /* raised the dep's waiters (above) */
    struct sf__ready run; /* the dep, when the maker took it from a queue */
};

struct sf__after {
    struct sf__ready ready; /* first: the ready list holds its address */
    _Atomic int left; /* deps not yet done, plus the maker's hold */
    int n;
    struct sf__after_link links[];
};

/* A continuation's tag: its maker's thread id, then the two top bits of
 * the sequence (a promise's tag has the top one alone, promise.h), then the
 * maker's count of continuations. It never matches a queue's push. */
#define SF__AFTER_SEQ (UINT64_C(3) << (SF__SEQ_BITS - 2))

/* Continuations made and not yet taken: sf_shutdown waits for them. */
extern _Atomic long sf__after_live;

/* The maker: puts l on the watch list of d, whose state *sp (acquire) is
 * RUNNING or WAITING. True: l will be fired by d's completion. False: d is
 * done, l is not on the list, the caller counts d done. guard: d is a
 * RUNNING task that may complete by its get's plain store (Who closes):
 * raises waiters, and a heavy fence. */
bool sf__after_watch(sf_future *d, uint64_t s, struct sf__after_link *l, bool guard);
/* A completer of f, whose state it replaces is s (with WATCHED), before it
 * publishes DONE (or after, where its caller holds f: Who closes): takes
 * f's watch list whole and closes it. Returns the list for sf__after_fire. */
uintptr_t sf__after_close(sf_future *f, uint64_t s);
/* After DONE: each link's dep is done. Any thread, no lock, no allocation. */
void sf__after_fire(uintptr_t list);
/* One dep of a done: the last makes it ready. */
void sf__after_dep_done(struct sf__after *a);
/* The completion of a task by its own get (run.h INLINE) found waiters:
 * wakes sleepers and fires a watch list if the word holds one. */
void sf__after_inline_done(sf_future *f, uint64_t done);
/* Claims continuation c, read as *sp, if it is ready: true with *sp its
 * RUNNING state, to run with sf__run_claimed (never as INLINE); false with
 * *sp reread. For a get of c. */
bool sf__after_claim(sf_future *c, uint64_t *sp);
/* A taker (idle worker, helping get): a future claimed RUNNING (*claimed),
 * a continuation or a dep of one, ready to run with sf__run_claimed; NULL
 * when the ready list is empty. */
sf_future *sf__after_take(struct sf__thread *me, uint64_t *claimed);
/* A hint: might the ready list hold a record? Relaxed (pool.h's sleep
 * protocol orders it with the heavy fence). */
bool sf__after_maybe_ready(void);
/* sf_cancel of continuation c, WAITING as s (its handle held): completed
 * at once, failed ECANCELED, unrun (its record is dropped by whoever takes
 * it once its deps are done). Returns as sf_cancel: 0, or 1 if it was
 * done first. */
int sf__after_cancel(struct sf__thread *me, sf_future *c, uint64_t s);
/* Puts the dep node r (a task the maker claimed) on the ready list. */
void sf__after_ready_push(struct sf__ready *r);
/* sf_shutdown, once nothing runs, and in a child after fork(): forgets the
 * ready list (a fork's records leak with the parent's futures). */
void sf__after_reset(void);

/* The completers' close, for a state read as s just before a CAS that
 * publishes DONE: closes once, if WATCHED. *list keeps what it took. */
static inline void sf__after_closing(sf_future *f, uint64_t s, uintptr_t *list, bool *closed)
{
    if (SF__UNLIKELY(s & SF__WATCHED) && !*closed) {
        *list = sf__after_close(f, s);
        *closed = true;
    }
}

#endif /* SF_AFTER_H */
