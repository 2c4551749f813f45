/*
 * cancel.h - cancellation that reaches a task's whole tree (sf.h,
 * sf_cancel; docs/failures.md, Cancellation).
 *
 * Lineage. Every task records, when it is made, the cancellable task it was
 * made under (future.h, up and up_tag): the slab future running then, or,
 * when a local future runs (sf_task, which nobody can cancel), the task that
 * one was made under. So the lineage of a running task is a chain of slab
 * futures, each the maker (or the maker's maker) of the one below, and a
 * cancellation reaches a task exactly when some future of its chain has
 * CANCEL. The chain is read through type-stable memory (future.c): a link
 * counts only while the future it names is still the incarnation it names
 * (the tag of up_tag) and RUNNING; a task that ended cuts the chain there,
 * so a task left running by a maker that returned without getting it no
 * longer hears of cancellations above that maker.
 *
 * Walking a link (sf__cancel_reaches). The walker reads p's state (tag and
 * RUNNING), then p->up, then p->up_tag, each with acquire, then p's state
 * again. p's links are written at its push, up_tag then up, each with a
 * release store; a push of a later incarnation of the same memory comes
 * after this incarnation's end (its DONE, then FREE) in happens-before, so a
 * walker that reads either field of that later push synchronizes with its
 * release store and then sees the state past RUNNING at its second read,
 * and drops the pair. A pair it keeps is the one this incarnation wrote.
 * Links only go up - each names a task that was running when the one below
 * was made - so every walk ends.
 *
 * Cancellations in effect. A walk is needed only while some running task
 * has CANCEL. sf_cancel records each such task (sf__cancel_ask) in a short
 * list, whose length is sf__cancel_asked, before it sets the flag; entries
 * whose task ended are pruned lazily. While the count is not 0:
 *   - every claim off the fork-join fast path checks the task's lineage
 *     before it starts it (run.c): one that a cancellation reaches is
 *     completed as cancelled, unrun;
 *   - every thread's queue has SF__WANT_CHECK in `want` (pending.h), which
 *     the fork-join fast paths already test at every get (the thieves'
 *     request shares the word), so those gets leave the fast path for one
 *     that checks. A thread clears its own bit (sf__cancel_settle) once it
 *     reads the count 0: the canceller's store of the count and its
 *     setting of the bits, and the settler's clearing and its read of the
 *     count, are both seq_cst, so a settler that reads 0 read it before the
 *     canceller's store, whose bit then comes after the clear (a Dekker
 *     pair; the one who loses re-sets the bit).
 * The record and the bits come before the flag, and sf_cancel sets the flag
 * with a release that everyone who reads it acquires: a thread that has
 * seen a cancellation - sf_cancelled() said 1, or a walk found the flag -
 * checks every start after that. Starts that race a cancellation on other
 * threads may still begin: they are "started" and hear of it at their next
 * sf_cancelled().
 */
#ifndef SF_CANCEL_H
#define SF_CANCEL_H

#include <stdbool.h>
#include <stdint.h>

#include "registry/registry.h"

/* Running tasks with CANCEL recorded (and not yet pruned), plus one while
 * a record could not be allocated. Read relaxed as a hint by those who
 * then walk; seq_cst by sf__cancel_settle. */
extern _Atomic unsigned long sf__cancel_asked;

/* Is task p, of incarnation tag (a state word naming it), or a task above
 * it, asked to cancel? p NULL: no. Any thread; p must be a slab future or
 * NULL (links never name local futures). */
bool sf__cancel_reaches(sf_future *p, uint64_t tag);

/* The lineage of a running (or just claimed) task f, as its own thread
 * sees it: is it, or a task above it, asked to cancel? */
static inline bool sf__cancel_reaches_task(sf_future *f)
{
    return sf__cancel_reaches(f->kids_up, f->kids_up_tag);
}

/* sf_cancel is about to set CANCEL on f, RUNNING with state s: records it
 * and makes every thread check its starts. Takes cancel_lock (a leaf), then
 * sets each queue's bit; from inside a call (the registry must stay). */
void sf__cancel_ask(sf_future *f, uint64_t s);

/* Owner of q, whose want has SF__WANT_CHECK: drops the bit if no
 * cancellation is in effect any more (pruning ended ones first). */
void sf__cancel_settle(struct sf__pending *q);

/* In a child after fork(): no task of the parent runs here. */
void sf__cancel_after_fork(void);

#endif /* SF_CANCEL_H */
