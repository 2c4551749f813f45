/*
 * wait.c - waits with a deadline on futures (sf_wait_for) and the
 * wait for the first of several (sf_wait_any). sf_batch_wait_for is
 * batches.c's; the timed get itself, which helps nobody, is get.c's
 * (Timed gets).
 *
 * sf_wait_any waits for several futures, and a thread sleeps on one futex
 * word at a time - except through Linux's futex_waitv (5.16), which sleeps
 * on up to 128 words and returns when any is woken. Each future's runner
 * already wakes the sleepers counted in its `waiters` on its state word
 * (run.h), so the wait counts itself in every future's `waiters`, issues the
 * heavy fence and reads the states: the same Dekker pair as a get's sleep
 * (get.c, sleep_on), once per future, so that either a runner sees our count
 * and wakes its word, or we see its DONE before sleeping. Runners need
 * nothing new. Without futex_waitv (an older kernel, or more than 128
 * futures not done), it sleeps on the lowest-index future not done, in naps
 * of at most ANY_NAP_NS: that one wakes it at once, the others within a nap.
 */
#include "api/lifecycle.h"
#include "sched/get.h"
#include "sched/idle_hook.h"

#include <errno.h>

#define ANY_SPINS 64            /* looks with pauses before the first sleep */
#define ANY_NAP_NS 1000000L     /* the fallback's longest nap (sf.h's bound) */

/* The outcome of f, DONE: 0 with *result, or its failure code (seen). */
static int outcome(sf_future *f, void **result)
{
    /* Acquire: DONE makes the runner's val, and a failure's code, visible. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    if (s & SF__FAILED) {
        sf__future_mark_seen(f, s);
        /* Relaxed: ordered by the acquire above. */
        return (int)atomic_load_explicit(&f->fail_code, memory_order_relaxed);
    }
    if (result != NULL)
        *result = f->val;
    return 0;
}

/* The entry points' way out when sf__enter failed: its errno, returned,
 * and the caller's errno (saved) put back - these calls report by value. */
static int lost(int saved)
{
    int e = errno;
    errno = saved;
    return e;
}

/* Released (FREE, or orphaned while it runs): not a future to wait for. */
static bool released(uint64_t s) { return sf__status(s) == SF__FREE || (s & SF__ORPHAN); }

/* The arguments' futures, checked before a wait on a set: EINVAL if one is
 * NULL or released, else 0 with *first the lowest index done (-1: none)
 * and *ndone how many are. Acquire: DONE makes the runner's val visible to
 * a caller that returns at once. */
static int check_set(sf_future *const *fs, int n, int *first, int *ndone)
{
    *first = -1;
    *ndone = 0;
    for (int i = 0; i < n; i++) {
        if (fs[i] == NULL)
            return EINVAL;
        uint64_t s = atomic_load_explicit(&fs[i]->state, memory_order_acquire);
        if (released(s))
            return EINVAL;
        if (sf__status(s) == SF__DONE && (*ndone)++ == 0)
            *first = i;
    }
    return 0;
}

/* sf_wait_for with its deadline, which counts from the call. */
static int wait_for_entry(sf_future *f, void **result, uint64_t deadline_ns)
{
    SF__OUTERMOST("sf_wait_for", int, wait_for_entry(f, result, deadline_ns));
    int saved = errno;
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return lost(saved);
    bool traced = sf__trace_on;
    /* Acquire: as in sf_get. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    if (traced)
        sf__trace_event(me, sf__status(s) == SF__DONE ? SF__EV_GET : SF__EV_GSTART, s, 0);
    if (sf__status(s) == SF__DONE) {
        errno = saved;
        return outcome(f, result);
    }
    /* A get: this thread's queued tasks may run elsewhere from now on. */
    sf__get_submit_nolock(me, traced);
    int rc = sf__get_until(me, f, deadline_ns);
    if (rc == 0) {
        /* Acquire: as above. */
        s = atomic_load_explicit(&f->state, memory_order_acquire);
        SF__TRACE(me, GDONE, s, 0);
        rc = outcome(f, result);
    } else if (rc == ETIMEDOUT) {
        SF__BUMP(sf__sched(me)->c_timeouts);
        /* Relaxed: f stays RUNNING (or just finished): the trace names it. */
        SF__TRACE(me, TIMEOUT, atomic_load_explicit(&f->state, memory_order_relaxed), 0);
    }
    errno = saved;
    return rc;
}

SF_EXPORT int sf_wait_for(sf_future *f, void **result, double seconds)
{
    if (f == NULL || !(seconds >= 0)) /* NaN too */
        return EINVAL;
    /* Acquire: DONE makes the runner's val visible. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    if (released(s))
        return EINVAL;
    /* The quick answer: nothing to enter, and no clock to read (the
     * deadline is read below, a few instructions after the call). */
    if (sf__status(s) == SF__DONE && !sf__trace_on)
        return outcome(f, result);
    uint64_t deadline = sf__deadline_ns(seconds);
    /* No deadline: a wait, helping and running as a get does. */
    if (deadline == UINT64_MAX)
        return sf_wait(f, result);
    return wait_for_entry(f, result, deadline);
}

/* The lowest index of fs[0..n) that is DONE, or -1; *pending the lowest
 * PENDING one (-1: none); *stuck whether every future not done runs on the
 * caller's own fiber, below this wait (none can end first). */
static int scan(sf_future *const *fs, int n, const struct sf__fiber *mine, int *pending,
                bool *stuck)
{
    *pending = -1;
    *stuck = true;
    for (int i = 0; i < n; i++) {
        /* Acquire: DONE makes the runner's val visible to the caller. */
        uint64_t s = atomic_load_explicit(&fs[i]->state, memory_order_acquire);
        if (sf__status(s) == SF__DONE)
            return i;
        if (sf__status(s) == SF__PENDING && *pending < 0)
            *pending = i;
        /* Relaxed: compared with our own fiber only (get.c, Timed gets). */
        if (sf__status(s) != SF__RUNNING ||
            __atomic_load_n(&fs[i]->runner, __ATOMIC_RELAXED) != (const void *)mine)
            *stuck = false;
    }
    return -1;
}

/* Is one of fs[0..n) a continuation not started? Relaxed: a hint; the
 * caller's scan looks again. */
static bool any_waiting(sf_future *const *fs, int n)
{
    for (int i = 0; i < n; i++)
        if (sf__status(atomic_load_explicit(&fs[i]->state, memory_order_relaxed)) == SF__WAITING)
            return true;
    return false;
}

/* Sleeps until one of fs[0..n) is DONE, deadline_ns passes, or nap_ns
 * (> 0) do (top comment: the Dekker pair with every runner). */
static void sleep_on_any(struct sf__thread *me, sf_future *const *fs, int n,
                         uint64_t deadline_ns, long nap_ns)
{
    uint32_t *words[SF__FUTEX_WAITV_MAX];
    uint32_t vals[SF__FUTEX_WAITV_MAX];
    /* Relaxed: the heavy fence below orders the increments before our
     * reads of the states (get.c, sleep_on). */
    for (int i = 0; i < n; i++)
        atomic_fetch_add_explicit(&fs[i]->waiters, 1, memory_order_relaxed);
    /* Relaxed: a statistic for the trace's Asleep column; whether a
     * deadline ends the sleep, for the shutdown's sweep (promise.c). */
    atomic_store_explicit(&sf__sched(me)->asleep, 1, memory_order_relaxed);
    atomic_store_explicit(&sf__sched(me)->timed_sleep, deadline_ns != UINT64_MAX,
                          memory_order_relaxed);
    SF__BUMP(sf__sched(me)->c_sleeps);
    /* Pairs with each runner's light fence or exchange (run.h). */
    sf__fence_heavy();
    bool done = false;
    for (int i = 0; i < n && !done; i++) {
        uint64_t s = atomic_load_explicit(&fs[i]->state, memory_order_relaxed);
        done = sf__status(s) == SF__DONE;
        if (i < SF__FUTEX_WAITV_MAX) {
            words[i] = sf__future_futex(fs[i]);
            vals[i] = (uint32_t)s;
        }
    }
    uint64_t now = sf__now_ns();
    if (!done && now < deadline_ns) {
        uint64_t until = deadline_ns - now > (uint64_t)nap_ns ? now + (uint64_t)nap_ns
                                                               : deadline_ns;
        /* The kernel compares each word again: a DONE stored after our load
         * returns at once. The fallback sleeps on the first future (none is
         * done: the lowest not done), at least 1 ns (0 would be no limit).
         * A nap: it names no one future (trace.h). */
        uint64_t began = sf__nap_begin(me);
        if (sf__futex_waitv(words, vals, n, until) != 0)
            sf__futex_wait(words[0], vals[0],
                           until - now < (uint64_t)ANY_NAP_NS ? (long)(until - now) : ANY_NAP_NS);
        sf__nap_end(me, began);
    }
    /* Relaxed: as in sleep_on; a stale count costs a spurious wake. */
    atomic_store_explicit(&sf__sched(me)->asleep, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__sched(me)->timed_sleep, 0, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        atomic_fetch_sub_explicit(&fs[i]->waiters, 1, memory_order_relaxed);
}

/* sf_wait_any inside a call, the arguments checked. */
static int wait_any_entry(sf_future *const *fs, int n, uint64_t deadline_ns, int *which)
{
    SF__OUTERMOST("sf_wait_any", int, wait_any_entry(fs, n, deadline_ns, which));
    int saved = errno;
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return lost(saved);
    bool traced = sf__trace_on;
    sf__get_submit_nolock(me, traced);
    int rc = 0;
    unsigned spins = 0;
    long nap = ANY_NAP_NS / 8;
    bool offered = false;
    struct sf__park_until until = {NULL, fs, n, deadline_ns};
    for (;;) {
        int pending;
        bool stuck;
        int i = scan(fs, n, sf__sched(me)->fiber, &pending, &stuck);
        if (i >= 0) {
            *which = i;
            break;
        }
        if (pending >= 0 && deadline_ns == UINT64_MAX) {
            /* No deadline: a task nobody started runs here, as a get would
             * (at SF_THREADS=1 nobody else will), then we look again. */
            sf_future *f = fs[pending];
            /* Relaxed: the trace's name for it. */
            uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
            if (traced)
                sf__trace_event(me, SF__EV_GSTART, s, 0);
            int e = sf__get_run_pending(me, f);
            if (e != 0) {
                rc = e; /* no fresh stack for it */
                break;
            }
            SF__TRACE(me, GDONE, atomic_load_explicit(&f->state, memory_order_relaxed), 0);
            continue;
        }
        /* Continuations not started (after.h): an untimed wait runs ready
         * ones as it runs pending tasks; a timed one only when there is no
         * worker to. Relaxed: as everywhere sf__pool.workers is read. */
        if ((deadline_ns == UINT64_MAX ||
             atomic_load_explicit(&sf__pool.workers, memory_order_relaxed) == 0) &&
            any_waiting(fs, n) && sf__get_run_ready(me))
            continue;
        if (pending >= 0 && !offered) {
            /* A deadline: nothing runs here (get.c, Timed gets); the pool
             * may take them. */
            offered = true;
            for (int k = pending; k < n; k++) {
                /* Relaxed: sf__get_offer looks at the tag only; a claim
                 * meanwhile makes the offer moot. */
                uint64_t s = atomic_load_explicit(&fs[k]->state, memory_order_relaxed);
                if (sf__status(s) == SF__PENDING)
                    sf__get_offer(me, s);
            }
        }
        if (stuck) {
            rc = EDEADLK; /* every one encloses this wait */
            break;
        }
        uint64_t now = sf__now_ns();
        if (now >= deadline_ns) {
            SF__BUMP(sf__sched(me)->c_timeouts);
            /* Relaxed: the trace names the first future, still running. */
            SF__TRACE(me, TIMEOUT, atomic_load_explicit(&fs[0]->state, memory_order_relaxed), 0);
            rc = ETIMEDOUT;
            break;
        }
        /* A fiber of this thread parked by an earlier get may be what one
         * of fs waits for; it goes on only at our scheduling points
         * (get.c, Timed gets). */
        if (sf__park_any(me) && sf__park_resume_done(me, &until)) {
            spins = 0;
            continue;
        }
        /* The idle hook, as a get calls it (get.c, spin_yield_sleep). */
        int hook = sf__idle_poll();
        if (hook == SF__HOOK_PROGRESS) {
            spins = 0;
            continue;
        }
        if (spins < ANY_SPINS) {
            spins++;
            for (int k = 0; k < 16; k++)
                sf__pause();
            continue;
        }
        long cap = sf__park_any(me) && nap > SF__PARKED_NAP_NS ? SF__PARKED_NAP_NS : nap;
        if (hook == SF__HOOK_WAITING && cap > SF__HOOK_NAP_NS)
            cap = SF__HOOK_NAP_NS;
        sleep_on_any(me, fs, n, deadline_ns, cap);
        sf__hang_napped(me, SF__HANG_ANY, fs[0], n); /* SF_HANG_REPORT (hang.h) */
        /* With futex_waitv the nap only bounds a sleep that a wake ends;
         * without it the fallback's naps stay at most ANY_NAP_NS. */
        nap = nap * 2 > 20 * ANY_NAP_NS ? 20 * ANY_NAP_NS : nap * 2;
    }
    errno = saved;
    return rc;
}

SF_EXPORT int sf_wait_any(sf_future *const *fs, int n, double seconds, int *which)
{
    if (fs == NULL || n < 1 || which == NULL || !(seconds >= 0)) /* NaN too */
        return EINVAL;
    uint64_t deadline = sf__deadline_ns(seconds);
    int done, ndone;
    if (check_set(fs, n, &done, &ndone) != 0)
        return EINVAL;
    if (done >= 0) {
        *which = done; /* runs nothing, enters nothing */
        return 0;
    }
    return wait_any_entry(fs, n, deadline, which);
}

/* sf_wait_all inside a call, the arguments checked. */
static int wait_all_entry(sf_future *const *fs, int n, uint64_t deadline_ns)
{
    SF__OUTERMOST("sf_wait_all", int, wait_all_entry(fs, n, deadline_ns));
    int saved = errno;
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return lost(saved);
    sf__get_submit_nolock(me, sf__trace_on);
    bool timed = deadline_ns != UINT64_MAX;
    if (timed)
        /* Nothing runs here (get.c, Timed gets): every task not started is
         * offered to the pool at once, not as the loop reaches it. */
        for (int i = 0; i < n; i++) {
            /* Relaxed: sf__get_offer reads the tag only. */
            uint64_t s = atomic_load_explicit(&fs[i]->state, memory_order_relaxed);
            if (sf__status(s) == SF__PENDING)
                sf__get_offer(me, s);
        }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        /* Acquire: DONE makes what the runner wrote visible to the caller
         * (docs/waiting.md, What a wait makes visible). */
        uint64_t s = atomic_load_explicit(&fs[i]->state, memory_order_acquire);
        if (sf__status(s) == SF__DONE)
            continue;
        /* Traced as sf_wait_for's get of each one: its sleeps and naps
         * then belong to a get (docs/trace-format.md). */
        SF__TRACE(me, GSTART, s, 0);
        rc = timed ? sf__get_until(me, fs[i], deadline_ns) : sf__get_wait(me, fs[i]);
        if (rc == 0)
            SF__TRACE(me, GDONE, atomic_load_explicit(&fs[i]->state, memory_order_relaxed), 0);
        if (rc == ETIMEDOUT) {
            SF__BUMP(sf__sched(me)->c_timeouts);
            /* Relaxed: the trace names the future it timed out on. */
            SF__TRACE(me, TIMEOUT, atomic_load_explicit(&fs[i]->state, memory_order_relaxed), 0);
        }
    }
    errno = saved;
    return rc;
}

SF_EXPORT int sf_wait_all(sf_future *const *fs, int n, double seconds)
{
    if ((fs == NULL && n > 0) || n < 0 || !(seconds >= 0)) /* NaN too */
        return EINVAL;
    int first, ndone;
    if (check_set(fs, n, &first, &ndone) != 0)
        return EINVAL;
    if (ndone == n)
        return 0; /* runs nothing, enters nothing */
    /* Each future was seen DONE by an acquire load: check_set's, the loop's
     * or the get's that waited for it. */
    return wait_all_entry(fs, n, sf__deadline_ns(seconds));
}
