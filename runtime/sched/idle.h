/*
 * idle.h - the pool's shared state, and how a thread that made work
 * claimable wakes an idle worker (sf__pool_notify). Apart from pool.h so
 * that the layers' units below the pool (the continuations of after.h,
 * made ready by a completion inside sf__run) can wake it too; pool.c owns
 * the workers and their sleep.
 */
#ifndef SF_IDLE_H
#define SF_IDLE_H

#include <pthread.h>

#include "future/future.h"


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

/* Bumps idle_seq and wakes one sleeping worker. */
void sf__pool_wake_one(void);
/* Wakes every sleeping worker, if any sleeps: for work about to appear that
 * they should all come and ask for (a light run from plain code, spawn.c).
 * No fence: a worker that sleeps on regardless rescans within its nap. */
void sf__pool_wake_all(void);

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

#endif /* SF_IDLE_H */
