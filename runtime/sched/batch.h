/*
 * batch.h - fair batches (sf_batch_new, sf_batch_do, ...): groups of
 * tasks that the pool serves round-robin against each other, and the eager
 * way in (a batch's tasks are submitted as they are added).
 *
 * A batch task is an ordinary future whose tag names no thread: its thread id
 * is SF__NO_THREAD_ID (future.h), its sequence number the batch's slot in the
 * table of open batches (high SLOT_BITS) and the batch's add counter (low
 * bits). So it sits in no thread's pending queue: submitting and publishing
 * a thread's queue (sf__get_submit) never touch it, and adding to a batch
 * never submits or publishes the adder's plain tasks (laziness kept). Its
 * claims are CAS on its state word, like every public task's: from the
 * batch's queue (sf__batch_take, sf__batch_take_from), or from a handle
 * (a get, sf_release, sf_cancel) through sf__no_thread_queue (registry.h).
 *
 * Each batch holds a FIFO of (future, PENDING state) entries under its lock,
 * a leaf never held while a task runs. An entry whose CAS fails was
 * discarded or cancelled through its handle meanwhile: it is dropped (a
 * future recycled into the same batch under the same tag would be a pending
 * task of that batch all the same, so even that claim is a right one).
 * Invariant (deadlock freedom, with the handle claims): every PENDING batch
 * task has an entry in its batch's FIFO, and any thread that holds its
 * handle claims it by CAS with no lock and nobody's help.
 *
 * Fairness. The batches with pending tasks form a ring under list_lock,
 * with a cursor (batch.c, Ring); an idle pool worker (pool.c) takes one
 * task from the batch at the cursor and moves the cursor past it (or drops
 * the batch from the ring if it has no task left): each batch with work
 * gets one task in turn, whatever its size or age, and a batch that gets
 * work joins the ring last in the current round. A batch's tasks leave in
 * the order they were added.
 *
 * Accounting. `outstanding` counts the batch's tasks not yet DONE: one more
 * at each add, one less (sf__batch_finished) once a task's DONE is stored
 * (run.h), once a discard's claim freed it (sf_release), once a cancel
 * stored DONE (run.c). sf_batch_wait returns when it is 0, so the futures it
 * waited for read DONE. A closed batch whose count reaches 0 leaves the ring
 * and is freed by whoever brought it there: the last finisher, or the close.
 *
 * Sleep and wake. An add bumps `queued` (entries in every FIFO) and puts its
 * batch in the ring before the adder calls sf__pool_notify: a worker going
 * to sleep raises idle_sleepers, issues the heavy fence and rescans, reading
 * `queued` and the ring (sf__batch_take), so either it sees the entry or the
 * adder sees it asleep and wakes it (pool.h).
 *
 * Lock order: list_lock (rank BATCHES) -> a batch's lock (rank LEAF).
 */
#ifndef SF_BATCH_H
#define SF_BATCH_H

#include "sched/failure.h"

/* A batch task's tag: SF__NO_THREAD_ID, then the slot, then the add counter.
 * A slot's counter goes on from batch to batch (batch.c), and slots are
 * handed out fresh first, then the longest-free first, so tags repeat only
 * after about 2^40 adds, as a thread queue's. */
#define SF__BATCH_SLOT_BITS 14
#define SF__BATCH_COUNT_BITS (SF__SEQ_BITS - SF__BATCH_SLOT_BITS)
/* Batches open at once. */
#define SF__BATCH_MAX (1 << SF__BATCH_SLOT_BITS)

/* Is s (any state word not FREE) that of a batch task? */
static inline bool sf__is_batch_task(uint64_t s) { return s >= SF__NO_THREAD_MIN; }

/* A new open batch, or NULL with errno ENOMEM, or EAGAIN (SF__BATCH_MAX
 * batches open). */
struct sf_batch *sf__batch_new(void);
/* `me` queues f (FREE, its fn, val and region written) as a task of b: f
 * becomes PENDING (its state in *state), traced as a Do. 0, or EPIPE (b is
 * closed), ENOMEM (no room in the FIFO); then f is untouched. The caller
 * then tells the pool. */
int sf__batch_push(struct sf__thread *me, struct sf_batch *b, sf_future *f, uint64_t *state);
/* Claims the next pending task of the batches, round-robin (Fairness):
 * RUNNING as *claimed. NULL when none is pending. */
sf_future *sf__batch_take(uint64_t *claimed);
/* Claims the oldest pending task of b alone (sf_batch_wait helping). */
sf_future *sf__batch_take_from(struct sf_batch *b, uint64_t *claimed);
/* A hint: might a batch task be pending? Relaxed (Sleep and wake). */
bool sf__batch_maybe_pending(void);
/* The batch of the batch task in state s; valid while that task is not
 * accounted for (sf__batch_finished). */
struct sf_batch *sf__batch_of(uint64_t s);
/* One of b's tasks is DONE (or FREE: discarded). Call after that store. */
void sf__batch_finished(struct sf_batch *b);
/* b's unfinished tasks (a snapshot). */
uint64_t sf__batch_outstanding(struct sf_batch *b);
/* sf_batch_wait on thread me with nothing to run: sleeps until b gets a
 * pending task or drains, or nap_ns pass (a nap: trace.h). */
void sf__batch_sleep(struct sf__thread *me, struct sf_batch *b, long nap_ns);
/* No more adds; b frees itself once drained (maybe now). */
void sf__batch_close(struct sf_batch *b);
/* sf_shutdown, once every task ran and no thread uses libsf: frees every
 * batch still open (never closed). */
void sf__batch_free_all(void);
/* In a child after fork(): forget every batch (their copies leak). */
void sf__batch_after_fork(void);

/* The batch tasks running on this thread, innermost first (sf_batch_wait's
 * EDEADLK: a thread running a task of b cannot wait for b). Kept by
 * sf__run_claimed (run.c), the path every batch task runs through. */
struct sf__batch_frame {
    struct sf_batch *b;
    struct sf__batch_frame *next;
};
extern __thread struct sf__batch_frame *sf__batch_frames;

#endif /* SF_BATCH_H */
