/*
 * idle_hook.c - the idle hook: its try-lock, its calls and its setting
 * (idle_hook.h has the invariants).
 */
#include "sched/idle_hook.h"

#include <errno.h>
#include <sched.h>

struct sf__idle_hook sf__idle_hook = {.last = SF__HOOK_NONE};

/* This thread is inside poll: sf_on_idle() from there would wait for
 * itself. */
static _Thread_local bool inside;

/* Takes the lock, waiting for a call that holds it to end. Acquire: pairs
 * with the release in unlock, so the previous holder's writes (a call's
 * `last`, a setter's fn and ctx) are seen. */
static void lock(void)
{
    while (atomic_exchange_explicit(&sf__idle_hook.busy, 1, memory_order_acquire) != 0)
        sched_yield(); /* a call runs poll, which does not wait: it ends */
}

/* Release: pairs with the acquire of the next holder (lock, or the
 * exchange in sf__idle_poll_slow). */
static void unlock(void) { atomic_store_explicit(&sf__idle_hook.busy, 0, memory_order_release); }

/* The outcome for a thread that found a call under way: the last one's,
 * never PROGRESS (this thread made none). Relaxed: a hint for its sleep. */
static int not_ours(void)
{
    int last = atomic_load_explicit(&sf__idle_hook.last, memory_order_relaxed);
    return last > SF__HOOK_WAITING ? SF__HOOK_WAITING : last;
}

int sf__idle_poll_slow(void)
{
    /* Relaxed: a look before the exchange, so that threads finding a call
     * under way do not each write the lock's line. */
    if (atomic_load_explicit(&sf__idle_hook.busy, memory_order_relaxed) != 0)
        return not_ours();
    /* Acquire: as in lock(). */
    if (atomic_exchange_explicit(&sf__idle_hook.busy, 1, memory_order_acquire) != 0)
        return not_ours();
    int r = SF__HOOK_NONE;
    sf_idle_fn fn = sf__idle_hook.fn;
    if (fn != NULL) {
        inside = true;
        int v = fn(sf__idle_hook.ctx);
        inside = false;
        r = v > 0 ? SF__HOOK_PROGRESS : v == 0 ? SF__HOOK_WAITING : SF__HOOK_NONE;
    }
    /* Relaxed: a hint (above); the unlock publishes it to the next holder. */
    atomic_store_explicit(&sf__idle_hook.last, r, memory_order_relaxed);
    unlock();
    return r;
}

int sf__idle_hook_set(sf_idle_fn fn, void *ctx)
{
    if (inside)
        return EDEADLK;
    lock();
    if (fn != NULL && sf__idle_hook.fn != NULL) {
        unlock();
        return EBUSY;
    }
    sf__idle_hook.fn = fn;
    sf__idle_hook.ctx = fn != NULL ? ctx : NULL;
    /* Relaxed, both: read as hints (idle_hook.h); the unlock orders them for
     * the next holder. A new hook starts as waiting for events: idle
     * threads call it before they sleep long. */
    atomic_store_explicit(&sf__idle_hook.armed, fn != NULL, memory_order_relaxed);
    atomic_store_explicit(&sf__idle_hook.last, fn != NULL ? SF__HOOK_WAITING : SF__HOOK_NONE,
                          memory_order_relaxed);
    unlock();
    return 0;
}

void sf__idle_hook_after_fork(void)
{
    /* The child has only the forking thread: a call under way in another
     * parent thread never ends here. One of this thread's own (a fork from
     * inside poll) releases the lock when poll returns. Relaxed: one thread. */
    if (!inside) {
        atomic_store_explicit(&sf__idle_hook.busy, 0, memory_order_relaxed);
        atomic_store_explicit(&sf__idle_hook.napper, 0, memory_order_relaxed);
    }
}
