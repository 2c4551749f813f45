/*
 * hang.h - a stuck program says why (SF_HANG_REPORT; hang.c has the
 * design), and a program that exits without sf_shutdown() still reports.
 *
 * Every libsf wait that sleeps - a get (get.c, sleep_on), sf_wait_any
 * (wait.c), a batch wait (batches.c), the shutdown's drain
 * (lifecycle.c) - calls sf__hang_napped after each nap. Off (the default
 * outside the debug build), that is one predictable branch, and only on a
 * path that has just slept: the fork-join fast path never comes here.
 */
#ifndef SF_HANG_H
#define SF_HANG_H

#include "sched/thread.h"

/* What a napping wait waits for (struct sf__sched, hang_kind). */
enum sf__hang_kind {
    SF__HANG_NONE,
    SF__HANG_GET,      /* a get or a timed wait of one future (what: it) */
    SF__HANG_ANY,      /* sf_wait_any (what: its first future; n: how many) */
    SF__HANG_BATCH,    /* sf_batch_wait(_for) (what: the batch, never read) */
    SF__HANG_SHUTDOWN  /* sf_shutdown's drain (what: NULL) */
};

/* The stall a report needs, in nanoseconds; 0: off. Set at start before
 * any worker exists (sf__hang_start), as sf__trace_on, so every thread
 * reads it without ordering. */
extern uint64_t sf__hang_ns;

/* At start, from the configuration: seconds, 0 for off. Also forgets the
 * stall a report was printed for. */
void sf__hang_start(double seconds);

/* Out of line: the look of sf__hang_napped. */
void sf__hang_look(struct sf__thread *me, enum sf__hang_kind kind, const void *what, int n);

/* me's wait, which waits for `what` (kind; n futures for SF__HANG_ANY),
 * has just napped: records it for reporters, and reports the stall once no
 * task has started or ended anywhere for sf__hang_ns. */
static inline void sf__hang_napped(struct sf__thread *me, enum sf__hang_kind kind,
                                   const void *what, int n)
{
    if (SF__UNLIKELY(sf__hang_ns != 0))
        sf__hang_look(me, kind, what, n);
}

/* sf_promise made p on me: remembers the function of the task running
 * there (none: 0), which the report names at an unset promise. Kept in
 * p's up_tag, which a promise does not use otherwise: nothing walks a
 * lineage into a promise, which never runs as a task (cancel.h). Relaxed:
 * published with the promise by sf_promise's release store of its state,
 * and a reporter that reads it early only names the maker wrong. */
static inline void sf__hang_promise_made(struct sf__thread *me, sf_future *p)
{
    sf_future *cur = sf__sched(me)->cur;
    __atomic_store_n(&p->up_tag, cur != NULL ? (uint64_t)(uintptr_t)cur->u.fn : 0,
                     __ATOMIC_RELAXED);
}

#endif /* SF_HANG_H */
