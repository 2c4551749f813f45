/*
 * pool.c - the pool of workers and its cap.
 *
 * The pool is fixed: threads - 1 workers started by sf_init, so at most
 * `threads` threads run tasks at once counting the one that gets (plus any
 * foreign threads the program itself runs). That fixed size is the cap of
 * the seed's design: a submitted task goes to a worker only if one is idle;
 * when all are busy it stays in its submitter's queue and runs in the thread
 * that gets it (direct execution) or in a blocked getter that helps. The pool
 * never grows, so there is no slack to bound: busy <= workers always.
 *
 * An idle worker takes only submitted tasks (below their queue's sub_seq,
 * pending.h): laziness means a task nobody got yet never starts on its own.
 * It looks for work for a short while, then sleeps on idle_seq; a get that
 * submits new tasks wakes one sleeper (sf__pending_submit).
 */
#include "pending.h"

#include <ck_pr.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#define IDLE_SPINS 128          /* scans before an idle worker sleeps */
#define IDLE_NAP_NS 100000000L  /* belt and braces: rescan every 100 ms */
#define TAKE_SCAN 256

/* force: after spinning in vain, take submitted private tasks too. */
static sf_future *find_submitted(struct sf__thread *t, bool force, uint64_t *claimed, int *from)
{
    int n = sf__registry_count();
    for (int k = 0, i = (int)(sf__rand(t) % (unsigned)n); k < n; k++, i = i + 1 == n ? 0 : i + 1) {
        struct sf__thread *v = sf__registry_get(i);
        sf_future *f = sf__pending_steal(v, SF__SCAN_TAKE | (force ? SF__SCAN_FORCE : 0),
                                         TAKE_SCAN, claimed);
        if (f != NULL) {
            *from = v->id;
            return f;
        }
    }
    return NULL;
}

static void take(struct sf__thread *t, sf_future *f, uint64_t claimed, int from)
{
    /* Relaxed: busy and peak_busy are statistics; nothing is ordered by them. */
    int b = atomic_fetch_add_explicit(&sf__rt.busy, 1, memory_order_relaxed) + 1;
    int p = atomic_load_explicit(&sf__rt.peak_busy, memory_order_relaxed);
    while (b > p && !atomic_compare_exchange_weak_explicit(&sf__rt.peak_busy, &p, b,
                                                           memory_order_relaxed,
                                                           memory_order_relaxed))
        ;
    SF__TRACE(t, "Take\t" SF__TASK_FMT "\t%d", SF__TASK_ARGS(claimed), from);
    sf__run(t, f, claimed, SF__HOW_POOL);
    atomic_fetch_sub_explicit(&sf__rt.busy, 1, memory_order_relaxed);
}

static void *worker_main(void *arg)
{
    (void)arg;
    struct sf__thread *t = sf__register_worker();
    if (t == NULL)
        return NULL; /* no record: this worker never runs, the rest still do */
    unsigned spins = 0;
    bool idle = false;
    uint64_t claimed;
    int from;
    /* Acquire: pairs with the release store of stop in sf__pool_stop. */
    while (!atomic_load_explicit(&sf__rt.stop, memory_order_acquire)) {
        sf__pending_poll(t);
        sf_future *f = find_submitted(t, false, &claimed, &from);
        /* Relaxed: idle_workers is a hint to submitters (pending.h). */
        if (f != NULL) {
            if (idle) {
                idle = false;
                atomic_fetch_sub_explicit(&sf__rt.idle_workers, 1, memory_order_relaxed);
            }
            take(t, f, claimed, from);
            spins = 0;
            continue;
        }
        if (!idle) {
            idle = true;
            atomic_fetch_add_explicit(&sf__rt.idle_workers, 1, memory_order_relaxed);
        }
        if (++spins < IDLE_SPINS) {
            for (int i = 0; i < 32; i++)
                ck_pr_stall();
            continue;
        }
        /* Going to sleep: Dekker with sf__pending_submit. We raise
         * idle_sleepers, read idle_seq, heavy fence, rescan; a submitter
         * stores sub_seq, light fence, reads idle_sleepers and bumps
         * idle_seq. Either our rescan finds its tasks, or it sees us and its
         * bump makes the futex wait below return. */
        atomic_fetch_add_explicit(&sf__rt.idle_sleepers, 1, memory_order_relaxed);
        uint32_t seen = atomic_load_explicit(&sf__rt.idle_seq, memory_order_relaxed);
        sf__fence_heavy();
        f = find_submitted(t, true, &claimed, &from);
        if (f == NULL && !atomic_load_explicit(&sf__rt.stop, memory_order_acquire)) {
            SF__TRACE(t, "Idle");
            sf__trace_flush(t);
            sf__futex_wait(&sf__rt.idle_seq, seen, IDLE_NAP_NS);
        }
        atomic_fetch_sub_explicit(&sf__rt.idle_sleepers, 1, memory_order_relaxed);
        spins = 0;
        if (f != NULL) {
            idle = false;
            atomic_fetch_sub_explicit(&sf__rt.idle_workers, 1, memory_order_relaxed);
            take(t, f, claimed, from);
        }
    }
    if (idle)
        atomic_fetch_sub_explicit(&sf__rt.idle_workers, 1, memory_order_relaxed);
    sf__trace_flush(t);
    return NULL;
}

void sf__pool_wake_one(void)
{
    /* Relaxed: the futex call orders nothing; the sleeper rescans itself. */
    atomic_fetch_add_explicit(&sf__rt.idle_seq, 1, memory_order_relaxed);
    sf__futex_wake(&sf__rt.idle_seq, 1);
}

int sf__pool_start(void)
{
    sf__rt.nstarted = 0;
    atomic_store_explicit(&sf__rt.stop, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__rt.busy, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__rt.peak_busy, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__rt.idle_sleepers, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__rt.idle_workers, 0, memory_order_relaxed);
    if (sf__rt.workers == 0)
        return 0;
    sf__rt.tids = calloc((size_t)sf__rt.workers, sizeof *sf__rt.tids);
    if (sf__rt.tids == NULL) {
        errno = ENOMEM;
        return -1;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, sf__rt.stack_size);
    for (int i = 0; i < sf__rt.workers; i++) {
        if (pthread_create(&sf__rt.tids[i], &attr, worker_main, NULL) != 0) {
            pthread_attr_destroy(&attr);
            sf__pool_stop();
            errno = EAGAIN;
            return -1;
        }
        sf__rt.nstarted++;
    }
    pthread_attr_destroy(&attr);
    return 0;
}

void sf__pool_stop(void)
{
    /* Release: pairs with the workers' acquire load of stop. */
    atomic_store_explicit(&sf__rt.stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&sf__rt.idle_seq, 1, memory_order_relaxed);
    sf__futex_wake(&sf__rt.idle_seq, INT_MAX);
    for (int i = 0; i < sf__rt.nstarted; i++)
        pthread_join(sf__rt.tids[i], NULL);
    sf__rt.nstarted = 0;
    free(sf__rt.tids);
    sf__rt.tids = NULL;
}
