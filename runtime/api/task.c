/*
 * task.c - tasks in caller storage (sf_task_do, sf_task_get,
 * sf_task_error_message; sf.h).
 *
 * An sf_task is an sf_future in the caller's memory: a local future
 * (future.h, Tasks in caller storage). That memory stops being a future the
 * moment its get returns, so the one rule everything here keeps is:
 *
 *   no thread but the maker ever reads a local future.
 *
 * Its queue slot is marked, and every other thread's scan skips marked
 * slots (pending.h, Local futures); sf_task_get refuses other threads
 * (EPERM) after reading only the state word's tag; and nobody ever waits on
 * a local future - a get that would wait (the task runs elsewhere) waits on
 * the slab future it was promoted to. So a local future has exactly two
 * lives:
 *   - run by its maker: claimed with plain stores (no gate: nobody else can
 *     claim it), its slot dropped before the task runs, completed in place;
 *     by sf_task_get here, or by the maker's pop while it helps (get.c),
 *     or by the maker's drain (lifecycle.c);
 *   - promoted (sf__pending_promote, at the maker's publish, or here before
 *     a get that must leave the fast path for a fresh stack): then it is
 *     MOVED, val naming a slab future with the same task and tag in its
 *     slot, and that one is an ordinary future in every respect. The get
 *     gets it, copies its end (result, or failure code and message) back
 *     and releases it.
 * Deadlock freedom is sf_get's (get.c): a local future's task is needed by
 * its maker alone, which claims it whatever it is doing (it is in the
 * maker's own queue), and after promotion it is any future.
 *
 * All of this rests on the program getting every sf_task before its memory
 * goes (sf.h). The debug build names the breaches (debug.h): sf_task_do on
 * an sf_task still queued (check_reuse, below), memory gone before the get
 * (pending.c, check_marked), an sf_task never got at thread exit or
 * shutdown (lifecycle.c).
 */
#include "api/lifecycle.h"
#include "sched/get.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(sf_task) == sizeof(struct sf_future), "an sf_task holds a future");
_Static_assert(_Alignof(sf_task) >= _Alignof(struct sf_future), "an sf_task holds a future");
_Static_assert(_Alignof(struct sf_future) > SF__SLOT_LOCAL, "a slot's mark is a free bit");

/* Writes f's task for `me`, made under the task `cur` (NULL: none; the
 * push comes after). */
static inline __attribute__((always_inline)) void fill_task(struct sf__thread *me, sf_future *f,
                                                        sf_future *cur, void *(*fn)(void *),
                                                        void *arg)
{
    /* Its lineage (cancel.h): nobody can cancel a local future, so the
     * tasks it makes take what cur's take, kept in its kids_up (future.h). */
    if (cur != NULL)
        memcpy(&f->kids_up, &cur->kids_up, sizeof f->kids_up + sizeof f->kids_up_tag);
    else
        memset(&f->kids_up, 0, sizeof f->kids_up + sizeof f->kids_up_tag);
    f->u.fn = fn;
    /* Relaxed, all: f is read by this thread alone until promoted, and
     * promotion copies it on this thread. (waiters: the push's.) */
    __atomic_store_n(&f->val, arg, __ATOMIC_RELAXED);
    atomic_store_explicit(&f->region, sf__sched(me)->region, memory_order_relaxed);
#ifdef SF_DEBUG
    /* FREE, so that the push's transition check holds whatever the memory
     * held. */
    atomic_store_explicit(&f->state, SF__FREE, memory_order_relaxed);
#endif
}

#ifdef SF_DEBUG
/* Debug build: t must not hold a task still queued (sf.h, sf_task_do): its
 * slot would name memory holding another task, or none, and the old task
 * would run at shutdown. Named before fill_task() overwrites it; t's memory may
 * hold anything, which sf__pending_local_queued's test of the slot and its
 * push counter does not mistake for a queued task. */
static void check_reuse(struct sf__thread *me, sf_task *t)
{
    if (sf__pending_local_queued(&me->q, (sf_future *)t))
        sf__misuse("sf_task_do(%p): the sf_task still holds a queued task (get it with "
                   "sf_task_get first)",
                   (void *)t);
}
#define CHECK_REUSE(me, t) check_reuse((me), (t))
#else
#define CHECK_REUSE(me, t) ((void)0)
#endif

/* sf_task_do off its fast path: bad arguments, a thread to register, a
 * ring to grow, a trace to write. */
static __attribute__((noinline, cold)) int task_do_slow(sf_task *t, void *(*fn)(void *), void *arg)
{
    if (t == NULL || fn == NULL) {
        errno = EINVAL;
        return -1;
    }
    SF__OUTERMOST("sf_task_do", int, sf_task_do(t, fn, arg)); /* registry.h, Calls in flight */
    struct sf__thread *me = sf__enter();
    if (me == NULL)
        return -1;
    CHECK_REUSE(me, t);
    sf_future *f = (sf_future *)t;
    fill_task(me, f, sf__sched(me)->cur, fn, arg);
    SF__BUMP(sf__sched(me)->c_created);
    if (!sf__pending_push_local(&me->q, f)) {
        atomic_store_explicit(&sf__sched(me)->c_created,
                              SF__OWN_LOAD(&sf__sched(me)->c_created) - 1, memory_order_relaxed);
        errno = ENOMEM;
        return -1;
    }
    SF__TRACE(me, DO, atomic_load_explicit(&f->state, memory_order_relaxed), 0);
    return 0;
}

SF_EXPORT int sf_task_do(sf_task *t, void *(*fn)(void *), void *arg)
{
    /* The fast path calls nothing, so it saves no registers: anything
     * unusual goes to task_do_slow, which starts over. */
    struct sf__thread *me = sf__thread_self();
    if (SF__UNLIKELY(t == NULL || fn == NULL || me == NULL || sf__trace_on))
        return task_do_slow(t, fn, arg);
    struct sf__pending_place at;
    if (SF__UNLIKELY(!sf__pending_room(&me->q, &at) || sf__sched(me)->cur == NULL))
        return task_do_slow(t, fn, arg); /* the ring must grow, or no task runs */
    CHECK_REUSE(me, t);
    sf_future *f = (sf_future *)t;
    fill_task(me, f, sf__sched(me)->cur, fn, arg);
    SF__BUMP(sf__sched(me)->c_created);
    sf__pending_put_at(&me->q, f, sf__slot_mark(f), true, at);
    return 0;
}

/* The end of the first get of f, DONE with FAILED: the code to errno, the
 * message to the thread; f->msg then names f itself, which no message is. */
static void *failed(struct sf__thread *me, sf_future *f)
{
    free(sf__entry(me)->task_msg);
    sf__entry(me)->task_msg = f->msg;
    __atomic_store_n(&f->msg, (char *)f, __ATOMIC_RELAXED);
    /* Relaxed: our own store (completion here, or the copy below). */
    errno = (int)atomic_load_explicit(&f->fail_code, memory_order_relaxed);
    return NULL;
}

/* f is DONE: its result, or its failure. A later get of a failed task
 * finds its message gone to the thread already. */
static inline void *done(struct sf__thread *me, sf_future *f, uint64_t s)
{
    if (SF__LIKELY(sf__done_ok(s)))
        return f->val;
    if (f->msg == (char *)f) {
        errno = (int)atomic_load_explicit(&f->fail_code, memory_order_relaxed);
        return NULL;
    }
    return failed(me, f);
}

/* f is MOVED: get the slab future it moved to, copy its end back into f
 * and release it. */
static void *get_moved(struct sf__thread *me, sf_future *f, uint64_t s, bool traced)
{
    sf_future *g = f->moved_to;
    /* Acquire: DONE makes the runner's val visible. */
    uint64_t gs = atomic_load_explicit(&g->state, memory_order_acquire);
    errno = 0;
    void *r = sf__status(gs) == SF__DONE && !traced ? g->val : sf__get(me, g, gs, traced);
    int err = errno;
    /* Acquire: as above, for the end sf__get saw. */
    gs = atomic_load_explicit(&g->state, memory_order_acquire);
    uint64_t end = sf__with_status(s, SF__DONE);
    if (sf__status(gs) != SF__DONE) {
        /* The get failed before g ended (EDEADLK, or no thread for a
         * fresh stack): g is released to its runner, or discarded, and f
         * ends with that error. */
        end |= SF__FAILED | SF__SEEN;
        r = NULL;
        atomic_store_explicit(&f->fail_code, (uint32_t)err, memory_order_relaxed);
        sf_release(g);
    } else {
        if (gs & SF__FAILED) {
            /* Ours now: the message (g's msg) moves to f, and g's release
             * frees none and reports none (seen). */
            sf__future_mark_seen(g, gs);
            end |= SF__FAILED | SF__SEEN;
            r = g->msg;
            atomic_store_explicit(&f->fail_code,
                                  atomic_load_explicit(&g->fail_code, memory_order_relaxed),
                                  memory_order_relaxed);
            __atomic_store_n(&g->msg, NULL, __ATOMIC_RELAXED);
        }
        sf_release(g);
    }
    __atomic_store_n(&f->val, r, __ATOMIC_RELAXED);
    SF__ASSERT_TRANSITION(s, end);
    /* Relaxed: f is read by this thread alone. */
    atomic_store_explicit(&f->state, end, memory_order_relaxed);
    return done(me, f, end);
}

/* f's task is PENDING in our queue with state s: claim it (plain stores:
 * nobody else claims a local future) and drop its slot before it runs,
 * while its memory is certainly ours. */
static inline uint64_t claim_local(struct sf__thread *me, sf_future *f, uint64_t s)
{
    uint64_t run = sf__with_status(s, SF__RUNNING);
    SF__ASSERT_TRANSITION(s, run);
    atomic_store_explicit(&f->state, run, memory_order_relaxed);
    sf__pending_trim_local(&me->q, f);
    /* Its slot's index, kept in local_slot while pending
     * (sf__pending_put): a completion off the fast path reads waiters. */
    atomic_store_explicit(&f->local_slot, 0, memory_order_relaxed);
    return run;
}

/* get_moved for a get that logged its GStart (traced): the get of the slab
 * future logs its own GStart and GDone (the same tag), and this get's
 * GDone closes the first. */
static void *get_moved_traced(struct sf__thread *me, sf_future *f, uint64_t s)
{
    void *r = get_moved(me, f, s, true);
    int err = errno;
    /* Relaxed: our own store (get_moved's). */
    sf__trace_event(me, SF__EV_GDONE, atomic_load_explicit(&f->state, memory_order_relaxed), 0);
    errno = err;
    return r;
}

/* Everything but the fork-join fast path: f's state is s, ours. */
static void *get_slow(struct sf__thread *me, sf_future *f, uint64_t s, bool traced)
{
    if (traced && sf__status(s) != SF__DONE)
        sf__trace_event(me, SF__EV_GSTART, s, 0);
    switch (sf__status(s)) {
    case SF__DONE:
        if (traced)
            sf__trace_event(me, SF__EV_GET, s, 0);
        return done(me, f, s);
    case SF__MOVED: return traced ? get_moved_traced(me, f, s) : get_moved(me, f, s, false);
    case SF__RUNNING:
        /* Ours: a fiber of this thread that helped took it and runs it
         * (wait for it), or it encloses this get (EDEADLK). */
        if (!sf__park_runs_here(me, f)) {
            errno = EDEADLK;
            return NULL;
        }
        sf__park_wait_local(me, f);
        /* Relaxed: completed on this thread. */
        return done(me, f, atomic_load_explicit(&f->state, memory_order_relaxed));
    case SF__PENDING: break;
    default: errno = EINVAL; return NULL;
    }
    sf__get_submit(me, traced);
    /* Relaxed: our own store; the submit may have promoted f. */
    s = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (sf__status(s) == SF__MOVED)
        return traced ? get_moved_traced(me, f, s) : get_moved(me, f, s, false);
    /* A thread that runs no task runs it here whatever its stack (as
     * sf__get_slow does); near the end of a task's stack it goes to a
     * fresh one as a slab future, which another thread may read. */
    if (sf__sched(me)->cur != NULL && !sf__stack_room(me)) {
        if (!sf__pending_promote_one(&me->q, f)) {
            /* No memory to move it: dropped, and said so. */
            uint64_t end = sf__with_status(claim_local(me, f, s), SF__DONE) | SF__FAILED | SF__SEEN;
            atomic_store_explicit(&f->fail_code, ENOMEM, memory_order_relaxed);
            __atomic_store_n(&f->msg, NULL, __ATOMIC_RELAXED);
            atomic_store_explicit(&f->state, end, memory_order_relaxed);
            SF__BUMP(sf__sched(me)->c_discarded);
            errno = ENOMEM;
            return NULL;
        }
        /* Relaxed: our own store (the promotion's). */
        s = atomic_load_explicit(&f->state, memory_order_relaxed);
        return traced ? get_moved_traced(me, f, s) : get_moved(me, f, s, false);
    }
    uint64_t run = claim_local(me, f, s);
    sf__run_claimed(me, f, run, SF__HOW_WAIT_INLINE);
    /* Relaxed: our own completion. */
    s = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (traced)
        sf__trace_event(me, SF__EV_GDONE, s, 0);
    return done(me, f, s);
}

/* sf_task_get off the fork-join fast path: starts over. */
static __attribute__((noinline, cold)) void *get_other(sf_task *t)
{
    sf_future *f = (sf_future *)t;
    if (f == NULL) {
        errno = EINVAL;
        return NULL;
    }
    SF__OUTERMOST("sf_task_get", void *, sf_task_get(t)); /* registry.h, Calls in flight */
    /* Relaxed: only the maker writes f, and only the maker goes on. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    uint64_t st = sf__status(s);
    /* Queued by a runtime that is gone - before an sf_shutdown, or in the
     * parent of a fork(): its queue, and any slab future it moved to, went
     * with it (sf.h), and the shutdown may have run it. Told by its push
     * counter (registry.h), whatever its state. */
    if (st != SF__FREE && sf__tag_seq(s) < sf__registry_seq_floor()) {
#ifdef SF_DEBUG
        sf__misuse("sf_task_get(%p): the sf_task was queued before sf_shutdown(), or by the "
                   "parent of fork()", (void *)t);
#endif
        errno = EINVAL;
        return NULL;
    }
    struct sf__thread *me = sf__thread_self();
    if (me == NULL || sf__tag_thread(s) != me->id || st == SF__FREE) {
        /* FREE: no task was queued in it (or zeroed memory); else another
         * thread's (a thread with no struct made none). */
        errno = st == SF__FREE ? EINVAL : EPERM;
        return NULL;
    }
    return sf__trace_on ? get_slow(me, f, s, true) : get_slow(me, f, s, false);
}

SF_EXPORT void *sf_task_get(sf_task *t)
{
    /* The fork-join fast path (get.h, sf__get) with the plain claim of a
     * local future: f is ours, pending, and nothing is to be published or
     * traced. Anything else goes to get_other, which starts over. */
    sf_future *f = (sf_future *)t;
    struct sf__thread *me = sf__thread_self();
    if (SF__UNLIKELY(f == NULL || me == NULL || sf__trace_on))
        return get_other(t);
    struct sf__pending *q = &me->q;
    /* Relaxed: only the maker writes f. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    /* sf__stack_room also fails in a thread that runs no task (run.h, busy
     * time), so me->cur is a task below. */
    /* Exactly a push of this queue: not one of an older queue of the same
     * id (get_other tells the caller). */
    if (SF__UNLIKELY(!sf__pending_holds_own(q, s) || !sf__stack_room(me) ||
                     atomic_load_explicit(&q->want, memory_order_relaxed)))
        return get_other(t);
    /* Submit (sf__get_submit): with a worker idle, publishing would promote
     * f - the slow path's business. */
    if (sf__pending_submit(q) != 0) {
        if (SF__UNLIKELY(sf__pool_has_idle())) {
            sf__pending_publish(q);
            sf__pool_notify();
            return get_other(t);
        }
        sf__pool_notify();
    }
    uint64_t run = sf__with_status(s, SF__RUNNING);
    SF__ASSERT_TRANSITION(s, run);
    atomic_store_explicit(&f->state, run, memory_order_relaxed);
    sf__pending_trim_local(q, f);
    struct sf__ran end =
        sf__run_body(me, f, run, SF__HOW_INLINE, false, sf__sched(me)->cur, SF__RUN_LOCAL);
    return SF__LIKELY(!(end.done & SF__FAILED)) ? end.val : failed(me, f);
}

SF_EXPORT const char *sf_task_error_message(void)
{
    SF__OUTERMOST("sf_task_error_message", const char *, sf_task_error_message());
    struct sf__thread *me = sf__thread_self();
    return me != NULL ? sf__entry(me)->task_msg : NULL;
}
