/*
 * pool.h - layer 4: the fixed pool of workers, and how the threads that make
 * work public tell idle workers about it.
 */
#ifndef SF_POOL_H
#define SF_POOL_H

#include "run.h"

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
    _Atomic int started, unregistered;       /* workers past registration, and
                                              * those of them it failed (pool.c) */
    int workers, nstarted;
    size_t stack_size;                       /* of workers, and of fresh stacks (get.c) */
    pthread_t *tids;
};
extern struct sf__pool sf__pool;

/* Starts up to `workers` workers (sf__pool_configure first) and returns how
 * many it started: all of them, or those started before the first failure,
 * whose error (pthread_create's, or ENOMEM) is in *err. The pool runs with
 * what it got, down to none: every task then runs in the thread that gets
 * it. */
int sf__pool_start(int workers, int *err);
/* Sets what every thread reads of the pool without synchronising with its
 * start (the wake policy, the stack size of workers and fresh stacks): call
 * before the runtime is published to other threads. */
void sf__pool_configure(int workers, size_t stack_size);
/* Stops and joins every worker. Takes no lock: a worker's last task may call
 * into libsf (sf_init, sf_shutdown) and must find no lock held. */
void sf__pool_stop(void);
void sf__pool_wake_one(void);
/* Has the workers run every pending task, submitted or not, until none is
 * left anywhere and none runs: the drain of a shutdown whose thread could not
 * register. Returns false, running nothing, if there is no worker. */
bool sf__pool_drain(void);
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
