/*
 * promise.c - promises. A promise is a future with no task: made
 * RUNNING by sf_promise, it is completed - set, failed or cancelled - by
 * whoever calls sf_promise_set, sf_promise_fail or sf_cancel, on any
 * thread, one that libsf does not know included.
 *
 * To getters it is a task running elsewhere: they help, spin, then sleep on
 * its state word, and the completion wakes them as a runner's does (run.h:
 * the completing CAS, a full barrier, against the sleeper's heavy fence).
 * Its runner word (val while RUNNING) names no fiber - NULL, or the value
 * being stored - so a getter that follows a chain of waits (get.c,
 * Deadlock) stops at a promise: a get of one is never reported as a
 * deadlock, as nothing of libsf's could complete it. Its region is 0: an
 * isolated get of it waits without helping (get.c, Isolation).
 *
 * A promise's state word. Its tag is its maker's thread id with a number
 * from PROMISE_SEQ up (that thread's count of promises): it never matches
 * a queue's push (those stay below 2^39 for years of pushes), so the trace
 * names it apart from the maker's tasks. Its flags mean:
 *
 *   RUNNING                  unset
 *   RUNNING|CANCEL           a setter (set or fail) claimed it and is
 *                            writing its value or failure: others lose
 *   RUNNING|FAILED|SEEN      sf_cancel claimed it (a cancel is no failure
 *                            to report); |CANCEL once the setter called
 *   DONE[|FAILED[|SEEN]]     set, or failed (SEEN once a getter saw it)
 *   DONE|FAILED|SEEN|CANCEL  cancelled, its setter's call still to come
 *   |ORPHAN                  released by its holder (sf_release) first
 *
 * The claim is what lets a setter write val, fail_code and msg with plain
 * (relaxed) stores and no lock: exactly one party completes a promise, by
 * CAS from RUNNING, and the loser learns what came first from the bits
 * (CANCEL alone: EALREADY; FAILED|SEEN: ECANCELED) without waiting for the
 * winner. The completion is a CAS too: sf_release may add ORPHAN meanwhile.
 *
 * Two owners. The holder of the handle releases it as any future; the
 * setter may call once whatever the holder did, so the promise stays until
 * both are done with it: released before its completion, it is ORPHAN and
 * its completion frees it; cancelled before its setter called, it keeps
 * CANCEL and the setter's call (ECANCELED) drops it, freeing the promise if
 * the holder has released it meanwhile (release_slow in futures.c adds ORPHAN
 * to a DONE|CANCEL promise instead of freeing it). A setter that never
 * calls keeps a cancelled promise until sf_shutdown. Frees by a completion
 * go to the deferred list (future.c, Deferred frees): no lock, nothing
 * allocated, whatever thread completes.
 */
#include "api/promise.h"
#include "api/lifecycle.h"
#include "sched/after.h"
#include "sched/get.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shutdown's sweep (below, Promises nobody can set). */
static void sweep(void **stp, const struct sf__thread *stopper, uint64_t deadline_ns, bool last);

/* A promise's tag numbers start here (above). */
#define PROMISE_SEQ SF__PROMISE_SEQ

SF_EXPORT sf_future *sf_promise(void)
{
    /* Outside any call (registry.h, Calls in flight). */
    SF__OUTERMOST("sf_promise", sf_future *, sf_promise());
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return NULL;
    /* Relaxed: a hint; handing it over twice does no harm. */
    static _Atomic bool handed;
    if (SF__UNLIKELY(!atomic_load_explicit(&handed, memory_order_relaxed))) {
        atomic_store_explicit(&handed, true, memory_order_relaxed);
        sf__lifecycle_sweeper(sweep);
    }
    sf__future_reclaim(&me->free); /* completed orphans come back here */
    sf_future *f = sf__future_alloc(&me->free);
    if (f == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    uint64_t n = SF__OWN_LOAD(&sf__sched(me)->c_promises);
    SF__BUMP(sf__sched(me)->c_promises);
    f->u.fn = SF__PROMISE_FN;
    sf__hang_promise_made(me, f); /* its maker, for the hang report (hang.h) */
    /* Relaxed, both: published by the release store of the state below.
     * No runner (above); no region. */
    __atomic_store_n(&f->val, NULL, __ATOMIC_RELAXED);
    atomic_store_explicit(&f->region, 0, memory_order_relaxed);
    uint64_t tag = (uint64_t)me->id << SF__SEQ_BITS | PROMISE_SEQ |
                   (n & ((PROMISE_SEQ >> 1) - 1)); /* below a continuation's bit (after.h) */
    uint64_t s = tag << SF__TAG_SHIFT | SF__RUNNING;
    SF__ASSERT_TRANSITION(SF__FREE, s);
    SF__TRACE(me, PROMISE, s, 0);
    /* Release: whoever gets the handle from us, through the program's own
     * synchronisation, sees u.fn and the rest. */
    atomic_store_explicit(&f->state, s, memory_order_release);
    return f;
}

/* The completion of p (state s) logged, before it is published: by this
 * thread if it is inside a libsf call (it has a buffer), else as a line from
 * outside (trace.h). */
static void trace_set(uint64_t s, int code)
{
    struct sf__thread *me = sf__thread_self();
    if (me != NULL)
        sf__trace_event(me, SF__EV_SET, s, (uint64_t)code);
    else
        sf__trace_outside(SF__EV_SET, s, (uint64_t)code);
}

/* Getters asleep on p are woken after its completion (state `done`, not
 * FREE). Relaxed load: ordered by the light fence below against the
 * sleeper's heavy fence; after DONE the holder may have recycled p, and a
 * stale count wakes sleepers spuriously at worst (type-stable memory,
 * run.h). */
static void wake(sf_future *p)
{
    /* Dekker with a sleeping getter (get.c, sleep_on; wait.c): the state
     * was written just before, then this fence, then waiters is read; the
     * getter increments waiters, fences heavily, then reads the state. One
     * of the two sees the other's write. A release CAS alone would let the
     * load of waiters move above it. */
    sf__fence_light();
    if (atomic_load_explicit(&p->waiters, memory_order_relaxed) != 0)
        sf__futex_wake(sf__future_futex(p), INT_MAX);
}

/*
 * The setter's claim of p: 0 with *claimed its state (RUNNING|CANCEL), or
 * an errno: EINVAL, EALREADY, ECANCELED (then the setter's call is
 * recorded: a cancelled promise released meanwhile is freed here).
 */
static int claim_to_set(sf_future *p, uint64_t *claimed)
{
    if (p == NULL)
        return EINVAL;
    /* Acquire: a DONE read here lets us read its fail_code. */
    uint64_t s = atomic_load_explicit(&p->state, memory_order_acquire);
    for (;;) {
        uint64_t st = sf__status(s);
        if (st == SF__FREE || (st != SF__RUNNING && st != SF__DONE) || !sf__is_promise(p, s))
            return EINVAL; /* released, gone with its runtime, or a task's */
        if (st == SF__DONE) {
            if (!(s & SF__CANCEL)) {
                /* Completed before, by a setter or a cancel whose setter
                 * has called. Relaxed: ordered by the acquire above. */
                bool cancelled = (s & SF__FAILED) &&
                    atomic_load_explicit(&p->fail_code, memory_order_relaxed) == ECANCELED;
                return cancelled ? ECANCELED : EALREADY;
            }
            /* Cancelled, this call still to come: record it. Released
             * meanwhile: the promise is ours to free. acq_rel: as the
             * completion's CAS below. */
            uint64_t to = (s & SF__ORPHAN) ? SF__FREE : s & ~SF__CANCEL;
            if (!atomic_compare_exchange_weak_explicit(&p->state, &s, to, memory_order_acq_rel,
                                                       memory_order_acquire))
                continue;
            if (to == SF__FREE)
                sf__future_free_deferred(p);
            return ECANCELED;
        }
        if (s & SF__FAILED) {
            /* sf_cancel claimed it: it completes it ECANCELED, and knows
             * from CANCEL that this call came. */
            if (s & SF__CANCEL)
                return ECANCELED;
            if (!atomic_compare_exchange_weak_explicit(&p->state, &s, s | SF__CANCEL,
                                                       memory_order_acquire,
                                                       memory_order_acquire))
                continue;
            return ECANCELED;
        }
        if (s & SF__CANCEL)
            return EALREADY; /* another setter claimed it */
        /* Acquire on failure: a DONE reread lets us read its fail_code; the
         * claim itself orders nothing (the completion publishes). */
        if (atomic_compare_exchange_weak_explicit(&p->state, &s, s | SF__CANCEL,
                                                  memory_order_acquire, memory_order_acquire)) {
            *claimed = s | SF__CANCEL;
            return 0;
        }
    }
}

/* Completes p, which this thread claimed as c: with val (code 0), or
 * failed with code and msg (malloc'd or NULL: owned from now on). */
static void complete(sf_future *p, uint64_t c, void *val, int code, char *msg)
{
    /* Relaxed, all: published by the completing CAS's release. A getter
     * following a chain of waits may read val while RUNNING (get.c): the
     * program's value is never one of our fibers. */
    if (code != 0) {
        atomic_store_explicit(&p->fail_code, (uint32_t)code, memory_order_relaxed);
        __atomic_store_n(&p->msg, msg, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&p->val, val, __ATOMIC_RELAXED);
    }
    /* Before publishing: once DONE, p may be recycled. */
    if (SF__UNLIKELY(sf__trace_on))
        trace_set(c, code);
    uint64_t to;
    uintptr_t watch = 0;
    bool closed = false;
    do {
        /* Continuations waiting for p: their list closed before DONE
         * (sched/after.h). No lock, no allocation. */
        sf__after_closing(p, c, &watch, &closed);
        to = (c & SF__ORPHAN) ? SF__FREE
                              : sf__with_status(c, SF__DONE) | (code != 0 ? SF__FAILED : 0);
    /* acq_rel: release publishes the value; acquire takes over a promise
     * that sf_release orphaned (its uses before ours). A failure rereads:
     * only ORPHAN or WATCHED can have come. */
    } while (!atomic_compare_exchange_weak_explicit(&p->state, &c, to, memory_order_acq_rel,
                                                    memory_order_relaxed));
    if (watch != 0)
        sf__after_fire(watch);
    if (to != SF__FREE) {
        wake(p);
        return;
    }
    /* Released first: nobody can see this failure, so it is reported here,
     * as a running task's orphan is by its runner (run.c). */
    if (code != 0) {
        sf__failure_report(code, msg, SF__PROMISE_FN);
        free(msg);
    }
    sf__future_free_deferred(p);
}

SF_EXPORT int sf_promise_set(sf_future *p, void *value)
{
    uint64_t c;
    int rc = claim_to_set(p, &c);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    complete(p, c, value, 0, NULL);
    return 0;
}

SF_EXPORT int sf_promise_fail(sf_future *p, int code, const char *fmt, ...)
{
    uint64_t c;
    int rc = code <= 0 ? EINVAL : claim_to_set(p, &c);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    /* The message after the claim: a call that loses allocates nothing.
     * Getters wait meanwhile; a cancel returns at once (claimed). */
    bool lost;
    va_list ap;
    va_start(ap, fmt);
    char *msg = sf__failure_format(fmt, ap, &lost);
    va_end(ap);
    complete(p, c, NULL, code, msg);
    if (lost) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/*
 * Cancels promise f, read RUNNING as s: 0 once cancelled here, 1 if it was
 * completed first (or a setter has it), -1 with errno EINVAL if it is no
 * unset promise. sweep: the shutdown's watch (below), which found f by
 * itself rather than through a handle: it cancels only the incarnation it
 * read (same tag), released or not; sf_cancel's handle must be unreleased.
 */
static int cancel(sf_future *f, uint64_t s, bool sweep)
{
    const uint64_t tag = sf__tag(s);
    for (;;) {
        if (sweep && sf__tag(s) != tag)
            return 1; /* completed, freed and made again since */
        if (sf__status(s) == SF__DONE)
            return 1;
        if (sf__status(s) != SF__RUNNING || ((s & SF__ORPHAN) && !sweep)) {
            errno = EINVAL;
            return -1;
        }
        if (s & SF__FAILED)
            return 0; /* another cancel has it */
        if (s & SF__CANCEL)
            return 1; /* a setter has it: as good as done, not cancelled */
        /* Acquire, both ways: a DONE reread lets the caller read the
         * result; the claim itself orders nothing. */
        if (atomic_compare_exchange_weak_explicit(&f->state, &s, s | SF__FAILED | SF__SEEN,
                                                  memory_order_acquire, memory_order_acquire))
            break;
    }
    uint64_t c = s | SF__FAILED | SF__SEEN;
    /* Relaxed, both: published by the CAS below. */
    atomic_store_explicit(&f->fail_code, ECANCELED, memory_order_relaxed);
    __atomic_store_n(&f->msg, NULL, __ATOMIC_RELAXED);
    if (SF__UNLIKELY(sf__trace_on))
        trace_set(c, ECANCELED);
    uint64_t to;
    uintptr_t watch = 0;
    bool closed = false;
    do {
        sf__after_closing(f, c, &watch, &closed); /* as in complete() */
        /* CANCEL flips: set, the setter has called; clear, it is to come
         * and marks the promise so (above, Two owners). */
        bool came = (c & SF__CANCEL) != 0;
        to = came && (c & SF__ORPHAN)
                 ? SF__FREE
                 : sf__with_status(c, SF__DONE) | SF__FAILED | SF__SEEN |
                       (came ? 0 : SF__CANCEL) | (c & SF__ORPHAN);
        /* acq_rel and a relaxed reread, as in complete(). */
    } while (!atomic_compare_exchange_weak_explicit(&f->state, &c, to, memory_order_acq_rel,
                                                    memory_order_relaxed));
    if (watch != 0)
        sf__after_fire(watch);
    if (to == SF__FREE)
        sf__future_free_deferred(f);
    else
        wake(f);
    return 0;
}

int sf__promise_cancel(sf_future *f, uint64_t s) { return cancel(f, s, false); }

/*
 * Promises nobody can set. sf_shutdown runs the pending work as far as it
 * can go; a task that waits, directly or through other tasks, for a promise
 * nobody will set would keep it waiting for ever - its drain for the task,
 * its join for a worker, its close for a call in flight. So from its set-up
 * to its last drain a watch thread (lifecycle.c) calls sweep() every 10 ms,
 * and sweep cancels such promises: their getters see ECANCELED, as after
 * sf_cancel, and the tasks end.
 *
 * Who can still set a promise. sf_shutdown is called once no other thread
 * calls libsf (sf.h); only calls already in flight are waited for. So a
 * promise can be set only by code that runs inside libsf: a task (on a
 * worker, the stopping thread, a fresh stack, or a thread whose call is in
 * flight), or the plain code of a call in flight (a loop body, a task in
 * caller storage run in place).
 *
 * What a sweep reads (look): every fiber's wait record (get.c, Deadlock:
 * the future its innermost get waits for, with a stamp unique to that
 * wait); every future not FREE, its state (with its tag) and, running, its
 * runner; each thread's asleep flag, and whether it is inside a call; and
 * progress: every thread's counters of tasks made, started, discarded,
 * cancelled, parks, resumes, promises, timeouts and busy time, the tasks
 * shed, and the clock of wait stamps. It sees a stall
 * when, at one look:
 *   S1 nothing is left to start: no future PENDING, no task queued;
 *   S2 every task that runs (a RUNNING future that is not a promise) runs
 *      on a fiber whose wait record names a future still RUNNING, and every
 *      fiber with a wait record waits for such a future;
 *   S3 every thread that holds a task - one runs on a fiber of its, or a
 *      fiber of its waits - is asleep in a wait, and so is every other
 *      thread inside a call but the stopping one and the workers (whose
 *      code outside tasks is libsf's own);
 * and a later look, at least QUIET_NS after it, reads exactly the same
 * records, states and runners, with S1 to S3, while no progress was made
 * at any sweep in between (no counter moved, no wait began: the stamp
 * clock moved only by the one each sweep takes).
 *
 * Why nothing could still set a promise then. Each task of the second look
 * was in the first in the same wait - same stamp, same incarnation - so it
 * stayed in that wait all along (a stamp names one wait, a tag one use of
 * a future): it ran none of its own code, and a wait returns only once its
 * future completes. No task ended or started between (the states and
 * counters), no fiber was parked or resumed, and no new wait began
 * anywhere, so no code ran that ends in a wait either: a thread that woke,
 * ran code and slept again would have begun a new wait, and one that runs
 * code now is not thread_asleep (S3) - code no record shows included, such as a
 * loop body of a plain thread's call, or a task in caller storage that a
 * helping fiber took, over a fiber parked in a wait. Sleepers wake every
 * nap (get.c, at most 20 ms) to look for work; QUIET_NS spans more than two
 * naps, and S1 says there was none. So through the whole interval nothing
 * ran but waits looking at futures that did not complete, and what could
 * complete one - code that runs - was nowhere: the same holds from then on,
 * for ever. The promises that fibers wait for, or getters sleep on
 * (`waiters`), can then only be cancelled, and are.
 *
 * Waits that leave no record - on a program's lock or condition, in
 * sf_wait_any or a batch wait - look like code that runs (its fiber has no
 * record, or its thread is not asleep): they only keep the sweep from
 * seeing a stall, and the shutdown waits as before. So does a thread asleep
 * in a timed wait (its timed_sleep flag): its deadline ends the wait and
 * its code goes on, and may set the promise - the stall, if it is one, is
 * seen once that code waits without a deadline.
 *
 * Why it ends. Every chain of waits of a stall ends at a promise: a task
 * waited for runs, so it waits in turn (S2), and the chain cannot come back
 * to a fiber on it (get.c fails such a get with EDEADLK, which is
 * progress). So a stall has a promise to cancel, each cancel completes one
 * of the finitely many unset promises, and its getters go on. Past
 * sf_shutdown_timeout's deadline no stall is needed: each sweep cancels
 * every unset promise that a fiber waits for or a getter sleeps on, as the
 * shutdown discards the tasks that have not started.
 *
 * Cost: nothing for a promise's set, get or cancel - the watch reads what
 * is there (wait records, the slabs under their lock, counters). A sweep
 * whose progress moved since the last stops there; the full look (every
 * slab) comes only once the runtime is quiet.
 */
#define QUIET_NS 50000000ULL /* 50 ms: more than two of a get's longest naps */

/* One record of a look: what it read, compared whole between two looks. */
struct rec {
    const void *a;
    uint64_t b, c;
};

struct sweep {
    uint64_t progress, stamp; /* at the last sweep */
    uint64_t quiet_since;     /* when `prev` was looked at; 0: no look kept */
    struct rec *prev, *cur;
    size_t nprev, ncur, capprev, capcur;
    struct rec *cand;         /* promises to cancel: (p, state read) */
    size_t ncand, capcand;
    bool lost;                /* a record could not be kept: no verdict */
    bool *holds;              /* per thread: it holds a task (look) */
    size_t capholds;
};

static void push(struct rec **v, size_t *n, size_t *cap, bool *lost, struct rec r)
{
    if (*n == *cap) {
        size_t c = *cap != 0 ? *cap * 2 : 256;
        struct rec *g = realloc(*v, c * sizeof *g);
        if (g == NULL) {
            *lost = true;
            return;
        }
        *v = g;
        *cap = c;
    }
    (*v)[(*n)++] = r;
}

static bool unset(const sf_future *p, uint64_t s)
{
    return sf__status(s) == SF__RUNNING && !(s & (SF__CANCEL | SF__FAILED)) &&
           sf__is_promise(p, s);
}

/* Relaxed, all: statistics, compared between two sweeps only. */
static uint64_t activity_sum(void)
{
    uint64_t p = (uint64_t)atomic_load_explicit(&sf__pool.shed, memory_order_relaxed);
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        const struct sf__sched *r = sf__sched(sf__registry_get(i));
#define C(x) atomic_load_explicit(&r->x, memory_order_relaxed)
        p += C(c_created) + C(c_inline) + C(c_pool) + C(c_stolen) + C(c_drained) +
             C(c_discarded) + C(c_cancelled) + C(c_fresh_stacks) + C(c_parks) + C(c_resumes) +
             C(c_promises) + C(c_timeouts) + C(c_busy_ns) + C(c_blocked);
#undef C
    }
    return p;
}

/* A fiber's wait: recorded (*waits: it has one); the promise it waits for,
 * if unset, is one to cancel. False if it breaks S2 (its future is not
 * RUNNING) or was being changed. */
static bool look_fiber(struct sweep *st, struct sf__fiber *fb, bool *waits)
{
    sf_future *w;
    uint64_t stamp;
    if (!sf__wait_read(fb, &w, &stamp))
        return false;
    if (w == NULL)
        return true;
    *waits = true;
    push(&st->cur, &st->ncur, &st->capcur, &st->lost, (struct rec){fb, (uintptr_t)w, stamp});
    /* Acquire: as a getter reads it (DONE orders what its runner wrote;
     * here only the verdict needs it). */
    uint64_t ws = atomic_load_explicit(&w->state, memory_order_acquire);
    if (unset(w, ws))
        push(&st->cand, &st->ncand, &st->capcand, &st->lost, (struct rec){w, ws, 0});
    return sf__status(ws) == SF__RUNNING;
}

/* The index of the registered thread (below n) whose fiber p is, or -1 -
 * sf__park_is_fiber, telling whose. */
static int owner_of(const void *p, int n)
{
    for (int i = 0; i < n; i++) {
        const struct sf__sched *r = sf__sched(sf__registry_get(i));
        if (&r->base == p)
            return i;
        /* Acquire: pairs with the release that published the array. */
        struct sf__fiber *fs = atomic_load_explicit(&r->fibers, memory_order_acquire);
        if (fs != NULL && (const char *)p >= (const char *)fs &&
            (const char *)p < (const char *)(fs + SF__FIBERS) &&
            ((const char *)p - (const char *)fs) % sizeof *fs == 0)
            return i;
    }
    return -1;
}

/* Relaxed: a snapshot of the flags (get.c, sleep_on), compared between
 * looks only. A timed wait's sleep is no stall: it returns at its deadline,
 * and its code goes on. */
static bool thread_asleep(struct sf__thread *t)
{
    return atomic_load_explicit(&sf__sched(t)->asleep, memory_order_relaxed) != 0 &&
           atomic_load_explicit(&sf__sched(t)->timed_sleep, memory_order_relaxed) == 0;
}

/* One look (above, What a sweep reads): fills st->cur and st->cand; true
 * if it sees S1 to S3. A thread "holds" a task while one runs on a fiber
 * of its or a fiber of its waits: it must then be thread_asleep (S3) - a worker
 * or the stopping thread too, as a task in caller storage that a helping
 * fiber took may compute there, under a fiber parked in a wait. */
static bool look(struct sweep *st, const struct sf__thread *stopper)
{
    st->ncur = st->ncand = 0;
    st->lost = false;
    int n = sf__registry_count();
    if ((size_t)n > st->capholds) {
        bool *h = realloc(st->holds, (size_t)n * sizeof *h);
        if (h == NULL)
            return false;
        st->holds = h;
        st->capholds = (size_t)n;
    }
    /* Queued: tasks made and not started, continuations waiting for their
     * deps among them (after.h), which hold no thread - the walk below
     * still finds every PENDING future. */
    bool stuck = sf__threads_queued() <=
                     (uint64_t)atomic_load_explicit(&sf__after_live, memory_order_relaxed) &&
                 !sf__after_maybe_ready();
    for (int i = 0; i < n; i++) {
        struct sf__thread *t = sf__registry_get(i);
        struct sf__sched *r = sf__sched(t);
        /* The plain code of a call in flight may compute at any time: such
         * a thread must be asleep whatever it holds. Relaxed: a flag set
         * at registration (stats.c reads it so). */
        if (t != stopper && !__atomic_load_n(&t->is_worker, __ATOMIC_RELAXED) &&
            sf__registry_inside(t) && !thread_asleep(t))
            stuck = false;
        bool waits = false;
        stuck &= look_fiber(st, &r->base, &waits);
        /* Acquire: pairs with the release that published the array. */
        struct sf__fiber *fs = atomic_load_explicit(&r->fibers, memory_order_acquire);
        for (int k = 0; fs != NULL && k < SF__FIBERS; k++)
            stuck &= look_fiber(st, &fs[k], &waits);
        st->holds[i] = waits;
    }
    sf__futures_scan_begin();
    struct sf__futures_cursor walk = {0};
    uint64_t s;
    for (sf_future *f; (f = sf__futures_next(&walk, &s)) != NULL;) {
        if (sf__status(s) == SF__PENDING)
            stuck = false;
        if (sf__status(s) == SF__WAITING) {
            /* A continuation: ready is work to start; waiting holds no
             * thread, and is part of the picture compared. */
            if (s & SF__CANCEL)
                stuck = false;
            push(&st->cur, &st->ncur, &st->capcur, &st->lost, (struct rec){f, s, 0});
            continue;
        }
        if (sf__status(s) != SF__RUNNING)
            continue;
        if (sf__is_promise(f, s)) {
            push(&st->cur, &st->ncur, &st->capcur, &st->lost, (struct rec){f, s, 0});
            /* Relaxed: a getter asleep on it, a hint (get.c, sleep_on); or
             * continuations that wait for it (WATCHED, sched/after.h). */
            if (unset(f, s) && ((s & SF__WATCHED) ||
                                atomic_load_explicit(&f->waiters, memory_order_relaxed) != 0))
                push(&st->cand, &st->ncand, &st->capcand, &st->lost, (struct rec){f, s, 0});
            continue;
        }
        /* Relaxed: as get.c's chain reads it (S2: its runner is a fiber in
         * a wait - that record, with the future it waits for RUNNING, was
         * checked above - and the next look compares it). */
        void *runner = __atomic_load_n(&f->runner, __ATOMIC_RELAXED);
        push(&st->cur, &st->ncur, &st->capcur, &st->lost, (struct rec){f, s, (uintptr_t)runner});
        int o = owner_of(runner, n);
        sf_future *w;
        uint64_t stamp;
        if (o < 0 || !sf__wait_read(runner, &w, &stamp) || w == NULL)
            stuck = false;
        else
            st->holds[o] = true;
    }
    sf__futures_scan_end();
    for (int i = 0; stuck && i < n; i++)
        if (st->holds[i] && !thread_asleep(sf__registry_get(i)))
            stuck = false;
    return stuck && !st->lost;
}

static void cancel_found(struct sweep *st)
{
    for (size_t i = 0; i < st->ncand; i++)
        (void)cancel((sf_future *)(uintptr_t)st->cand[i].a, st->cand[i].b, true);
}

static void sweep(void **stp, const struct sf__thread *stopper, uint64_t deadline_ns, bool last)
{
    struct sweep *st = *stp;
    if (last) {
        if (st != NULL) {
            free(st->prev);
            free(st->cur);
            free(st->cand);
            free(st->holds);
            free(st);
        }
        *stp = NULL;
        return;
    }
    if (st == NULL && (st = *stp = calloc(1, sizeof *st)) == NULL)
        return; /* no memory: no verdict this time */
    uint64_t now = sf__now_ns();
    bool late = deadline_ns != 0 && now >= deadline_ns;
    uint64_t p = activity_sum(), stamp = sf__wait_stamp();
    bool moved = p != st->progress || stamp != st->stamp + 1;
    st->progress = p;
    st->stamp = stamp;
    if (moved && !late) {
        st->quiet_since = 0;
        return;
    }
    bool stuck = look(st, stopper);
    if (late || !stuck) {
        if (late)
            cancel_found(st);
        st->quiet_since = 0;
        return;
    }
    if (st->quiet_since == 0 || st->ncur != st->nprev ||
        (st->ncur != 0 && memcmp(st->cur, st->prev, st->ncur * sizeof *st->cur) != 0)) {
        /* The first look of a quiet spell: kept, to compare. */
        struct rec *v = st->prev;
        size_t c = st->capprev;
        st->prev = st->cur;
        st->nprev = st->ncur;
        st->capprev = st->capcur;
        st->cur = v;
        st->capcur = c;
        st->ncur = 0;
        st->quiet_since = now;
        return;
    }
    if (now - st->quiet_since < QUIET_NS)
        return;
    cancel_found(st);
    st->quiet_since = 0;
}
