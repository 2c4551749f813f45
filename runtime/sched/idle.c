/*
 * idle.c - the pool's shared state, and the wake of one idle worker
 * (idle.h).
 */
#include "sched/idle.h"
#include <limits.h>

struct sf__pool sf__pool;

void sf__pool_wake_one(void)
{
    /* Relaxed: the futex call orders nothing; the sleeper rescans itself. */
    atomic_fetch_add_explicit(&sf__pool.idle_seq, 1, memory_order_relaxed);
    sf__futex_wake(&sf__pool.idle_seq, 1);
}

void sf__pool_wake_all(void)
{
    /* Relaxed: a hint, as sf__pool_notify's (idle.h). */
    if (atomic_load_explicit(&sf__pool.idle_sleepers, memory_order_relaxed) == 0)
        return;
    /* Relaxed: as in sf__pool_wake_one. */
    atomic_fetch_add_explicit(&sf__pool.idle_seq, 1, memory_order_relaxed);
    sf__futex_wake(&sf__pool.idle_seq, INT_MAX);
}
