/*
 * pool.h - the fixed pool of workers, and how the threads that make
 * work public tell idle workers about it.
 */
#ifndef SF_POOL_H
#define SF_POOL_H

#include "sched/idle.h"

struct sf__thread;

/* Starts up to `workers` workers (sf__pool_configure first) and returns how
 * many it started: all of them, or those started before the first failure,
 * whose error (pthread_create's, or ENOMEM) is in *err. The pool runs with
 * what it got, down to none: every task then runs in the thread that gets
 * it. */
int sf__pool_start(int workers, int *err);
/* Sets what every thread reads of the pool without synchronising with its
 * start (the wake policy, the stack size of workers and fresh stacks, the
 * workers' start hook and its argument): call before the runtime is
 * published to other threads. */
void sf__pool_configure(int workers, size_t stack_size,
                        void (*on_thread_start)(int index, void *ctx), void *ctx);
/* Is the calling thread a worker inside its start hook (sf_config's
 * on_thread_start), which its sf_init() caller waits for? */
bool sf__pool_in_start_hook(void);
/* Stops and joins every worker. Takes no lock: a worker's last task may call
 * into libsf (sf_init, sf_shutdown) and must find no lock held. */
void sf__pool_stop(void);
/* Has the workers run every pending task, submitted or not, until none is
 * left anywhere and none runs: the drain of a shutdown whose thread could not
 * register. Returns false, running nothing, if there is no worker. */
bool sf__pool_drain(void);
/*
 * A shutdown's deadline (lifecycle.c, sf_shutdown_timeout). Once the clock
 * passes it, no task starts any more except through the fork-join fast path
 * (a get of the thread's own newest task, get.h, which never looks): every
 * other claimer - an idle worker's take, a helping get, a get of a task
 * queued elsewhere, the shutdown's own drain - checks after its claim and
 * completes the task as cancelled instead (sf__pool_shed). Checking after
 * the claim is what makes it exact: a task whose claim read the clock
 * before the deadline started before it.
 *
 * The deadline is set (relaxed) before the drain begins and read relaxed:
 * it orders nothing, each claimer decides alone about the task it claimed,
 * and either decision is a correct one (a claimer that has not seen the
 * store yet claimed within the hardware's store-visibility delay of the
 * start of the shutdown, long before any deadline). 0 seconds means
 * "now": set to the clock at the call.
 */
void sf__pool_set_deadline(uint64_t deadline_ns);
static inline bool sf__pool_past_deadline(void)
{
    uint64_t d = atomic_load_explicit(&sf__pool.deadline, memory_order_relaxed);
    return SF__UNLIKELY(d != 0) && sf__now_ns() >= d;
}
/* Completes f, claimed by `me` (RUNNING as `claimed`), as cancelled without
 * running it, and counts it in sf__pool.shed (and me's cancelled count). */
void sf__pool_shed(struct sf__thread *me, sf_future *f, uint64_t claimed);

/* In a child after fork(): the workers do not exist there; forget them. */
void sf__pool_after_fork(void);

#endif /* SF_POOL_H */
