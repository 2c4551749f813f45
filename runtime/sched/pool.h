/*
 * pool.h - the fixed pool of workers, and how the threads that make
 * work public tell idle workers about it.
 */
#ifndef SF_POOL_H
#define SF_POOL_H

#include <pthread.h>

#include "future/future.h"

struct sf__thread;

struct sf__pool {
    /* Read by every get that submits: apart from the counters below. */
    _Alignas(64) _Atomic int idle_workers;   /* idle workers, awake or asleep */
    _Atomic int idle_sleepers;               /* idle workers asleep on idle_seq */
    _Alignas(64) _Atomic uint32_t idle_seq;  /* futex word of idle workers */
    /* Read by every notify, with idle_sleepers: one more line. */
    _Alignas(64) _Atomic int busy;           /* workers running a taken task */
    _Atomic int searching;                   /* awake workers looking for a task */
    int wake_below;                          /* busy workers past which a notify wakes
                                              * none: the CPUs, or INT_MAX (pool.c) */
    _Atomic int peak_busy;
    _Atomic int stop;                        /* workers leave */
    _Atomic int draining;                    /* workers take any pending task (pool.c) */
    _Atomic uint64_t deadline;               /* a shutdown's deadline (sf__now_ns), 0:
                                              * none (sf__pool_past_deadline) */
    _Atomic long shed;                       /* tasks discarded past it (sf__pool_shed) */
    _Atomic int started, unregistered;       /* workers past registration, and
                                              * those of them it failed (pool.c) */
    /* Workers running. Written at start (under the lifecycle lock, after
     * the runtime is UP, since workers register) and in a forked child;
     * read by any thread, relaxed: a stale count (0 while a start is under
     * way) only shapes a parallel loop's split or a statistic. */
    _Atomic int workers;
    int nstarted;
    size_t stack_size;                       /* of workers, and of fresh stacks (get.c) */
    pthread_t *tids;
    void (*on_thread_start)(int index, void *ctx); /* sf_config's, or NULL (pool.c,
                                              * worker_start); set with stack_size */
    void *start_ctx;                         /* its argument */
};
extern struct sf__pool sf__pool;

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
void sf__pool_wake_one(void);
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

/* Is a worker idle? A hint for submitters (pending.h, sf__pending_submit):
 * relaxed, a worker that goes idle just after asks through `want`. */
static inline bool sf__pool_has_idle(void)
{
    return atomic_load_explicit(&sf__pool.idle_workers, memory_order_relaxed) > 0;
}

/*
 * Call after making work claimable by idle workers (submitting, publishing):
 * wakes one if any sleeps and none is awake looking for work. Dekker with a
 * worker going to sleep (pool.c, worker_main): it lowers searching, raises
 * idle_sleepers, issues the heavy fence, then rescans; we made our work
 * visible, issue the light fence, then read searching and idle_sleepers.
 * Either its rescan sees our work or we see both its writes and wake it.
 * A searcher we saw either finds our work, or goes to sleep through that same
 * rescan, or takes other work and, if it saw more, wakes the next (pool.c).
 * With more threads than CPUs, no wake either while as many workers as CPUs
 * are busy: a woken worker would only take a core from one with a task, and
 * the work we submitted is ours to run anyway (a get runs its own tasks).
 * Waking needlessly is what costs: a worker that finds nothing goes back to
 * sleep through a heavy fence, an interrupt to every CPU of the process.
 */
static inline void sf__pool_notify(void)
{
    sf__fence_light();
    /* Relaxed, all three: ordered by the fence pair above (busy is a cap,
     * whose staleness costs one wake too many or too few). */
    if (atomic_load_explicit(&sf__pool.idle_sleepers, memory_order_relaxed) > 0 &&
        atomic_load_explicit(&sf__pool.searching, memory_order_relaxed) == 0 &&
        atomic_load_explicit(&sf__pool.busy, memory_order_relaxed) < sf__pool.wake_below)
        sf__pool_wake_one();
}

#endif /* SF_POOL_H */
