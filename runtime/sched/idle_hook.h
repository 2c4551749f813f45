/*
 * idle_hook.h - the idle hook (sf_on_idle): a poll that threads of libsf
 * call when they have no task to run, one at a time.
 *
 * Who calls it: a pool worker at each look for work that found none and
 * before it sleeps (pool.c); a get or wait that found nothing to help with,
 * at each spin and before each sleep (get.c, wait.c). None of these is on
 * the fork-join fast path, so with no hook its whole cost is one relaxed
 * load on idle paths.
 *
 * State and invariants:
 *  - `busy` is a try-lock that guards fn and ctx. The setter takes it
 *    (waiting), writes both, releases; a caller takes it by exchange or goes
 *    on without the hook, and reads fn and ctx under it. So a call never
 *    pairs one hook's fn with another's ctx, and once the setter has
 *    removed the hook, no call of it runs or starts (sf_on_idle(NULL) may
 *    return and the caller free ctx).
 *  - `armed` mirrors fn != NULL for the lock-free look of every idle path;
 *    written under the lock, read relaxed: a stale value costs one look at
 *    the lock (armed) or a call missed by one look (not armed yet).
 *  - `last` is the last call's outcome (SF__HOOK_*), so that a thread that
 *    found the lock held still knows whether outside events are awaited,
 *    and caps its sleep (SF__HOOK_NAP_NS).
 *
 * Deadlock freedom: a call holds the lock only while poll runs, and poll
 * must not wait (sf.h); a thread that finds the lock held never waits for
 * it. Only the setter waits, and it refuses to from inside the hook
 * (EDEADLK), the one place that wait could not end.
 */
#ifndef SF_IDLE_HOOK_H
#define SF_IDLE_HOOK_H

#include <stdbool.h>

#include "platform/platform.h"
#include "sf.h"

/* A call's outcome, poll's return reduced to its sign. */
enum { SF__HOOK_NONE = -1, SF__HOOK_WAITING = 0, SF__HOOK_PROGRESS = 1 };

/* The longest sleep of a thread that calls the hook while it waits for
 * outside events (sf.h: 1 ms), and the first of a worker's naps. */
#define SF__HOOK_NAP_NS 1000000L
#define SF__HOOK_NAP_MIN_NS 20000L

struct sf__idle_hook {
    _Atomic int armed;   /* fn != NULL (top comment) */
    _Atomic int busy;    /* the try-lock */
    _Atomic int last;    /* the last call's outcome, SF__HOOK_* */
    _Atomic int napper;  /* a worker naps for the hook (pool.c) */
    sf_idle_fn fn;       /* guarded by busy */
    void *ctx;
};
extern struct sf__idle_hook sf__idle_hook;

int sf__idle_poll_slow(void);

/* Calls the hook if one is installed and no other thread is calling it:
 * SF__HOOK_PROGRESS, SF__HOOK_WAITING or SF__HOOK_NONE. A thread that finds
 * it busy gets the last call's outcome, never PROGRESS (it made none). */
static inline int sf__idle_poll(void)
{
    /* Relaxed: a hint (top comment, `armed`). */
    if (SF__LIKELY(!atomic_load_explicit(&sf__idle_hook.armed, memory_order_relaxed)))
        return SF__HOOK_NONE;
    return sf__idle_poll_slow();
}

/* Installs fn(ctx), or removes the hook (fn NULL) and returns once no call
 * of it runs. 0, or EBUSY (fn not NULL and one installed) or EDEADLK
 * (called from the hook). */
int sf__idle_hook_set(sf_idle_fn fn, void *ctx);

/* In a forked child: the parent's caller of the hook is not here. */
void sf__idle_hook_after_fork(void);

#endif /* SF_IDLE_HOOK_H */
