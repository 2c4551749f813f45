/*
 * get.c - sf_get: submit, run directly, help, and only then sleep.
 *
 * A get on future f:
 *  1. f DONE: return its value.
 *  2. Submit every task this thread queued since its last get (pending.h):
 *     idle pool workers may now take them, oldest first.
 *  3. f PENDING, in this thread's queue or any other: claim it and run it
 *     here (wait inlining, seed 001; direct execution at the cap, seed 003).
 *     Also publish this thread's private tasks if a thief asked for them.
 *  4. f RUNNING elsewhere: help. Run this thread's own newest pending task,
 *     else the oldest pending task of another thread (the global pending set),
 *     and look at f again after each. With nothing to run: spin, yield, then
 *     sleep on f's state word until the runner wakes us, with a timeout that
 *     makes us look for new work now and then.
 *
 * Deadlock freedom (the "embrace of meh"), enforced by steps 3 and 4. A get
 * never waits for a task that nobody will start. If f has not started it is
 * PENDING, and step 3 claims it whatever queue holds it: a public task by
 * CAS, a private one of another thread through sf__foreign_claim, which needs
 * nothing from the owner (pending.h), so even an owner that never calls
 * libsf again cannot strand it. Otherwise f is RUNNING on some thread, which
 * is itself either computing or in a get of its own, and the same holds
 * there. No step needs a free pool worker: every task can run in the thread
 * that needs it, so a pool of any size, even none, finishes any computation
 * whose gets form no cycle. Helping (step 4) adds speed, and progress for
 * tasks that wait for each other by other means than sf_get (a flag, a
 * queue): after spinning, a blocked get takes other threads' private tasks
 * too (SF__SCAN_FORCE), so every task not yet started stays within its
 * reach whatever its owner is doing.
 * (As in every help-first runtime, a thread that runs a task while it waits
 * cannot return to its own wait before that task ends; a program in which
 * that helped task waits, directly or not, for the waiting thread's own
 * unfinished frame - only possible when futures are handed to tasks that did
 * not make them - can stall. Fork-join code, where each task gets only the
 * futures it made or was given by its maker, cannot.)
 */
#include "pending.h"

#include <ck_pr.h>
#include <errno.h>
#include <sched.h>

#define SPIN_ROUNDS 64      /* looks for work with pauses before yielding */
#define YIELD_ROUNDS 16     /* then looks after sched_yield before sleeping */
#define NAP_MIN_NS 200000L  /* first sleep; doubles up to NAP_MAX_NS */
#define NAP_MAX_NS 20000000L
#define STEAL_SCAN 256      /* slots looked at per victim queue */

/* Runs one pending task other than the awaited one. force: after spinning
 * in vain, take other threads' private tasks too (pending.h). */
static bool help(struct sf__thread *t, bool force)
{
    uint64_t claimed;
    int from = t->id;
    sf_future *g = sf__pending_pop_own(t, &claimed);
    if (g == NULL) {
        int n = sf__registry_count();
        if (n > 1) {
            for (int k = 0, i = (int)(sf__rand(t) % (unsigned)n); k < n && g == NULL;
                 k++, i = i + 1 == n ? 0 : i + 1) {
                struct sf__thread *v = sf__registry_get(i);
                if (v != t &&
                    (g = sf__pending_steal(v, force ? SF__SCAN_FORCE : SF__SCAN_HELP,
                                           STEAL_SCAN, &claimed)) != NULL)
                    from = v->id;
            }
        }
        if (g == NULL)
            return false;
    }
    SF__TRACE(t, "Steal\t" SF__TASK_FMT "\t%d", SF__TASK_ARGS(claimed), from);
    sf__run(t, g, claimed, SF__HOW_STEAL);
    return true;
}

/* Sleeps until f is DONE or nap_ns pass. */
static void sleep_on(struct sf__thread *t, sf_future *f, long nap_ns)
{
    /* Relaxed RMWs: the heavy fence below orders them before our reading of
     * the state, which is all the Dekker pair with sf__run needs. */
    atomic_fetch_add_explicit(&f->waiters, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sf__rt.asleep, 1, memory_order_relaxed);
    SF__BUMP(t->c_sleeps);
    if (SF__UNLIKELY(sf__rt.trace)) {
        uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
        sf__trace(t, "Sleep\t" SF__TASK_FMT, SF__TASK_ARGS(s));
        sf__trace_flush(t); /* a sleeping thread's lines should be readable */
    }
    /* Pairs with sf__fence_light in sf__run: either the runner sees our
     * waiters count and wakes us, or we see its DONE here. */
    sf__fence_heavy();
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (sf__status(s) != SF__DONE)
        /* The kernel compares the word again, so a DONE stored after our
         * load makes this return at once. */
        sf__futex_wait(sf__futex_word(f), (uint32_t)s, nap_ns);
    atomic_fetch_sub_explicit(&sf__rt.asleep, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&f->waiters, 1, memory_order_relaxed);
    SF__TRACE(t, "Wake\t" SF__TASK_FMT, SF__TASK_ARGS(s));
}

static void *get_slow(struct sf__thread *t, sf_future *f)
{
    unsigned rounds = 0;
    bool blocked = false, dry = false;
    long nap = NAP_MIN_NS;
    for (;;) {
        /* Acquire: DONE makes the runner's val visible. */
        uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
        uint64_t st = sf__status(s);
        if (st == SF__DONE)
            break;
        if (st == SF__PENDING) {
            uint64_t run = (s & ~SF__STATUS_MASK) | SF__RUNNING;
            bool mine = sf__tag_owner(s) == t->id;
            if (mine ? sf__own_claim(t, f, &s, run) : sf__foreign_claim(f, &s, run)) {
                if (mine)
                    sf__pending_forget(t, f);
                sf__run_inline(t, f, run, sf__rt.trace);
                break;
            }
            continue;
        }
        if (st != SF__RUNNING) { /* FREE: the caller released it before getting */
            errno = EINVAL;
            return NULL;
        }
        if (!blocked) {
            blocked = true;
            SF__BUMP(t->c_blocked);
        }
        sf__pending_poll(t); /* thieves may be waiting for our private tasks */
        /* Workers scan from our top: keep it on a pending task while we
         * wait (claims by others leave finished slots there). */
        sf__pending_tidy(t, UINT64_MAX);
        if (help(t, rounds >= SPIN_ROUNDS)) {
            rounds = 0;
            dry = false;
            nap = NAP_MIN_NS;
            continue;
        }
        if (!dry) {
            dry = true;
            SF__TRACE(t, "Non Pending\t" SF__TASK_FMT, SF__TASK_ARGS(s));
        }
        if (rounds < SPIN_ROUNDS) {
            rounds++;
            for (int i = 0; i < 16; i++)
                ck_pr_stall();
            continue;
        }
        if (rounds < SPIN_ROUNDS + YIELD_ROUNDS) {
            rounds++;
            sched_yield();
            continue;
        }
        sleep_on(t, f, nap);
        nap = nap * 2 > NAP_MAX_NS ? NAP_MAX_NS : nap * 2;
    }
    if (SF__UNLIKELY(sf__rt.trace)) {
        uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
        sf__trace(t, "GDone\t" SF__TASK_FMT, SF__TASK_ARGS(s));
    }
    return f->val;
}

/* The body of sf_get, specialised twice by the compiler: traced is a
 * constant, so the untraced copy carries no trace test at all. */
static inline __attribute__((always_inline)) void *get(sf_future *f, uint64_t s, bool traced)
{
    struct sf__thread *t = sf__self();
    if (SF__UNLIKELY(t == NULL))
        return NULL;
    if (sf__status(s) == SF__DONE) { /* traced only: the caller returns DONE */
        sf__trace(t, "Get\t" SF__TASK_FMT, SF__TASK_ARGS(s));
        return f->val;
    }
    if (traced)
        sf__trace(t, "GStart\t" SF__TASK_FMT, SF__TASK_ARGS(s));
    sf__pending_poll(t);
    sf__pending_submit(t);
    if (SF__LIKELY(sf__pending_here(s, t->id))) {
        /* The fast path of fork-join code: f is this thread's newest pending
         * task, usually private. Claim it and run it here. */
        uint64_t run = (s & ~SF__STATUS_MASK) | SF__RUNNING;
        if (SF__LIKELY(sf__own_claim(t, f, &s, run))) {
            sf__pending_forget(t, f);
            sf__run_inline(t, f, run, traced);
            if (traced)
                sf__trace(t, "GDone\t" SF__TASK_FMT, SF__TASK_ARGS(run));
            return f->val;
        }
    }
    return get_slow(t, f);
}

SF_EXPORT void *sf_get(sf_future *f)
{
    if (SF__UNLIKELY(f == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    /* Acquire: DONE makes the runner's val visible. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    if (SF__UNLIKELY(sf__rt.trace))
        return get(f, s, true);
    if (sf__status(s) == SF__DONE)
        return f->val;
    return get(f, s, false);
}
