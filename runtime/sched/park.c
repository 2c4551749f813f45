/*
 * park.c - waits that park instead of stacking.
 *
 * The hazard this removes. A get whose task runs on another thread should
 * not just sleep: it helps, running other pending work meanwhile. Run on top
 * of the waiting frame, that work could return only to that frame, and the
 * frame only once the work ended: the wait depended on everything stacked
 * above it. A helped task that waited - directly or through others - for
 * the frame below it made a cycle the program does not have, and a get of a
 * short task returned only after the long one it helped with.
 *
 * Parking. Each thread has fibers (thread.h, struct sf__fiber): its own
 * stack, the base, and up to SF__FIBERS parking fibers with stacks of their
 * own (fiber.h: a context switch pinned to the thread, so TLS and errno stay
 * the thread's). A get that waits for f and finds work to help with parks:
 * the fiber it runs on stops where it is, waiting for f, and another fiber
 * runs the work (sf__park_run), then goes on helping within the same region
 * (get.c, Isolation). A parked fiber goes on - its thread switches back to
 * it - as soon as its future is done, at the next scheduling point of its
 * thread:
 *   - a fiber's job ends (fiber_main): it resumes a parked fiber that can go
 *     on, newest first, else finds more work, else resumes the newest parked
 *     fiber, which goes back to its own wait;
 *   - a get waits (get.c): before it helps or sleeps it resumes a parked
 *     fiber that can go on (sf__park_resume_ready), itself parking; so do
 *     the other waits in libsf - a batch wait (batches.c), a get waiting
 *     for a fresh-stack thread (get.c), sf_shutdown's drain waiting for
 *     busy workers (lifecycle.c) - since the parked fiber may be what they
 *     wait for;
 *   - a pool worker's loop, between tasks (pool.c);
 *   - an outermost call about to return to the program (lifecycle.h,
 *     SF__OUTERMOST), a pool worker or a fresh stack about to end: they
 *     drain (sf__park_drain), resuming parked fibers as their futures
 *     complete until none is left, so no frame stays parked on a thread that
 *     has left libsf.
 * The running fiber's per-stack state (struct sf__frame: the task running,
 * its failures, scopes, batch frames, region, stack bounds and red line) is
 * saved in it at every switch and the next fiber's restored (switch_to), so
 * every rule that speaks of "the task running here" speaks of the running
 * fiber. A task runs on one fiber from its start to its end, and while it
 * runs its future's val names that fiber (run.h).
 *
 * Why a program whose gets form no cycle cannot deadlock. get.c's argument
 * (a get claims and runs a task that has not started, needing nobody) holds
 * as it was; what parking changes is waiting. A parked fiber waits for one
 * future f, which is RUNNING: a fiber parks only when its future runs (a
 * PENDING one it claims and runs). f's task runs on some fiber, and goes on
 * when that fiber does: it is running now, or parked on a future of its own.
 * Follow the waits from fiber to fiber: the chain either reaches a fiber
 * that runs - on its thread, which runs it until it waits again - or comes
 * back to itself. Nothing else is in a chain: no fiber waits for the frames
 * above it, because none are above it - helped work runs on other fibers.
 * So every chain that does not close is a chain of tasks that will each end
 * once the one after it does, and the first of them is running; when it
 * ends its waiter can go on, and its thread resumes it at its next
 * scheduling point, which comes: a fiber whose job ended, a get that waits,
 * a worker between tasks, an outermost call that drains all reach one, and
 * a sleeping thread looks again within a bounded nap while it has parked
 * fibers (SF__PARKED_NAP_NS) - as long as the program's tasks wait for
 * other tasks only through libsf (below: a task blocked elsewhere holds
 * its thread). A closed chain is a cycle of gets the
 * program made: task A waits for B while B waits for A. The nesting of
 * frames on one fiber is the program's own too (a get runs a task that has
 * not started in its own frame, get.c step 3): helping never nests. Such a
 * cycle is what get.c's detector reports (EDEADLK), following fibers.
 *
 * Bounds. A thread parks at most SF__FIBERS fibers. A get that would need
 * one more - a thread with that many parked, or no memory for a stack -
 * does not help: it resumes parked fibers whose futures are done and
 * otherwise sleeps on its own future, as a get always could (deadlock
 * freedom never rested on helping: get.c). That cannot starve: the tasks it
 * does not help with are claimable by every other thread and by their own
 * getters, and each parked fiber waits for a task that runs (above), which
 * ends and lets it go on - resuming takes no new fiber. Stacks are the
 * workers' size (sf_config.stack_size), mapped with a guard page and kept
 * while their fiber is spare; beyond SPARE_KEPT spares a stack's pages are
 * given back. So a thread's fibers take SF__FIBERS stacks of address space
 * at most, and of memory what their deepest frames touched.
 *
 * What parking does not bound: a fiber that runs a long task cannot be
 * interrupted, so a parked fiber whose future completes goes on when that
 * task ends or itself waits. A get's latency is bounded by its own task and
 * the one helped task running when it completed, not by everything its
 * thread took on meanwhile. A frame resumed while fibers parked after it
 * stay parked (their futures still running) returns to its caller first:
 * those fibers go on at the thread's next scheduling point - or before an
 * outermost call returns, which is what bounds plain code's gets. So a task
 * that blocks outside libsf (a mutex, a barrier) holds up the work parked
 * on its thread until it returns or waits in libsf again; one that blocks
 * that way on something needing that work stalls (docs/waiting.md,
 * "Blocking outside libsf"). Fibers pinned to their thread cannot do
 * otherwise; moving a parked fiber to another thread would change its TLS
 * and errno in the middle of a task.
 */
#include "sched/park.h"
#include "sched/run.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#define SPARE_KEPT 4         /* spare fibers whose stacks keep their pages */

/* ---- wait records (get.c, Deadlock) ---------------------------------- */

static _Atomic uint64_t wait_clock;

uint64_t sf__wait_stamp(void)
{
    /* Relaxed: only uniqueness and order of stamps matter. */
    return atomic_fetch_add_explicit(&wait_clock, 1, memory_order_relaxed) + 1;
}

/* The fiber's thread: publishes its wait (a seqlock, see sf__wait_read).
 * Relaxed for the odd seq: the release stores after it keep it first. */
void sf__wait_publish(struct sf__fiber *fb, sf_future *w, uint64_t stamp)
{
    uint64_t seq = atomic_load_explicit(&fb->wait_seq, memory_order_relaxed);
    atomic_store_explicit(&fb->wait_seq, seq + 1, memory_order_relaxed);
    atomic_store_explicit(&fb->wait_stamp, stamp, memory_order_release);
    atomic_store_explicit(&fb->waiting_on, w, memory_order_release);
    atomic_store_explicit(&fb->wait_seq, seq + 2, memory_order_release);
}

/* Reads fb's wait consistently (false if it was being changed). Acquire,
 * all four: they keep their order, and pair with the release stores of
 * sf__wait_publish - a reader that sees any new field sees the odd seq
 * after it. */
bool sf__wait_read(struct sf__fiber *fb, sf_future **w, uint64_t *stamp)
{
    uint64_t s1 = atomic_load_explicit(&fb->wait_seq, memory_order_acquire);
    *w = atomic_load_explicit(&fb->waiting_on, memory_order_acquire);
    *stamp = atomic_load_explicit(&fb->wait_stamp, memory_order_acquire);
    uint64_t s2 = atomic_load_explicit(&fb->wait_seq, memory_order_acquire);
    return s1 == s2 && !(s1 & 1);
}

bool sf__park_is_fiber(const void *p)
{
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        struct sf__thread *t = sf__registry_get(i);
        if (&sf__sched(t)->base == p)
            return true;
        /* Acquire: pairs with the release that published the array. */
        struct sf__fiber *fs = atomic_load_explicit(&sf__sched(t)->fibers, memory_order_acquire);
        if (fs != NULL && (const char *)p >= (const char *)fs &&
            (const char *)p < (const char *)(fs + SF__FIBERS) &&
            ((const char *)p - (const char *)fs) % sizeof *fs == 0)
            return true;
    }
    return false;
}

/* ---- switching ------------------------------------------------------- */

static void save_frame(const struct sf__thread *me, struct sf__frame *f)
{
    f->cur = sf__sched(me)->cur;
    f->fails = sf__sched(me)->fails;
    f->scope = sf__sched(me)->scope;
    f->batch_frames = sf__batch_frames;
    f->stack_lo = sf__sched(me)->stack_lo;
    f->stack_size = sf__sched(me)->stack_size;
    f->stack_red = sf__sched(me)->stack_red;
    f->stack_red_task = sf__sched(me)->stack_red_task;
    f->region = sf__sched(me)->region;
    f->tdepth = sf__sched(me)->tdepth;
#if defined(__SANITIZE_THREAD__)
    f->depth = sf__sched(me)->depth;
#endif
}

static void load_frame(struct sf__thread *me, const struct sf__frame *f)
{
    sf__sched(me)->cur = f->cur;
    sf__sched(me)->fails = f->fails;
    sf__sched(me)->scope = f->scope;
    sf__batch_frames = f->batch_frames;
    sf__sched(me)->stack_lo = f->stack_lo;
    sf__sched(me)->stack_size = f->stack_size;
    sf__sched(me)->stack_red = f->stack_red;
    sf__sched(me)->stack_red_task = f->stack_red_task;
    sf__sched(me)->region = f->region;
    sf__sched(me)->tdepth = f->tdepth;
#if defined(__SANITIZE_THREAD__)
    sf__sched(me)->depth = f->depth;
#endif
}

/* Makes `to` the running fiber. `final`: the running one is done for good
 * (a parking fiber whose job is over, already spare): it is not resumed as
 * it is, and this does not return. */
static void switch_to(struct sf__thread *me, struct sf__fiber *to, bool final)
{
    struct sf__fiber *from = sf__sched(me)->fiber;
    SF__ASSERT(to->thread == me, "a fiber is resumed only on its own thread");
    SF__ASSERT(to != from, "a fiber switches to another");
    save_frame(me, &from->saved);
    load_frame(me, &to->saved);
    sf__sched(me)->fiber = to;
    SF__TRACE(me, FIBER, (uint64_t)to->index, 0);
    if (final)
        sf__ctx_switch_final(&from->ctx, &to->ctx);
    sf__ctx_switch(&from->ctx, &to->ctx);
}

/* ---- fibers ---------------------------------------------------------- */

struct sf__fiber *sf__park_fiber(struct sf__thread *me, size_t stack_size)
{
    struct sf__fiber *fb = sf__sched(me)->spare;
    if (fb != NULL) {
        sf__sched(me)->spare = fb->next;
        sf__sched(me)->nspare--;
        fb->cold = false;
        return fb;
    }
    if (sf__sched(me)->nfibers == SF__FIBERS)
        return NULL;
    /* Relaxed: our own store. */
    struct sf__fiber *fs = atomic_load_explicit(&sf__sched(me)->fibers, memory_order_relaxed);
    if (fs == NULL) {
        if ((fs = calloc(SF__FIBERS, sizeof *fs)) == NULL)
            return NULL;
        /* Release: a deadlock check that finds the array (acquire) finds it
         * zeroed, and each fiber's thread, set below before it runs a task
         * whose val names it. */
        atomic_store_explicit(&sf__sched(me)->fibers, fs, memory_order_release);
    }
    /* The array may be an exited thread's, kept for this struct's next
     * owner (sf__park_release): only the wait record carries over. */
    fb = &fs[sf__sched(me)->nfibers];
    if (sf__stack_alloc(&fb->stack, stack_size) != 0)
        return NULL;
    fb->thread = me;
    fb->cold = false;
    fb->index = sf__sched(me)->nfibers + 1;
    sf__sched(me)->nfibers++;
    return fb;
}

void sf__park_unfiber(struct sf__thread *me, struct sf__fiber *fb)
{
    fb->next = sf__sched(me)->spare;
    sf__sched(me)->spare = fb;
    sf__sched(me)->nspare++;
    if (sf__sched(me)->nspare <= SPARE_KEPT)
        return;
    /* Beyond the newest SPARE_KEPT spares, a stack keeps its mapping for
     * the next job and gives its memory back - not fb's, which may be the
     * stack this runs on (fiber_main). */
    struct sf__fiber *old = sf__sched(me)->spare;
    for (int k = 0; k < SPARE_KEPT; k++)
        old = old->next;
    for (; old != NULL && !old->cold; old = old->next) {
        sf__memory_discard((void *)old->stack.lo, old->stack.size);
        old->cold = true;
    }
}

void sf__park_release(struct sf__thread *me)
{
    /* Relaxed: the owner's own store, or a thread the caller outlives. */
    struct sf__fiber *fs = atomic_load_explicit(&sf__sched(me)->fibers, memory_order_relaxed);
    if (fs == NULL)
        return;
    for (int i = 0; i < sf__sched(me)->nfibers; i++) {
        sf__ctx_destroy(&fs[i].ctx);
        sf__stack_free(&fs[i].stack);
    }
    sf__sched(me)->nfibers = 0;
    sf__sched(me)->spare = NULL;
    sf__sched(me)->nspare = 0;
}

void sf__park_free(struct sf__thread *me)
{
    sf__park_release(me);
    /* Relaxed: a thread the caller outlives, no getter left (park.h). */
    struct sf__fiber *fs = atomic_load_explicit(&sf__sched(me)->fibers, memory_order_relaxed);
    free(fs);
    atomic_store_explicit(&sf__sched(me)->fibers, NULL, memory_order_relaxed);
}

/*
 * Order of resumption. A parked fiber can go on once what it waits for is
 * done (a get's future; a timed wait's future, one of its set, or its
 * deadline), or at once when it only yielded (a wait that resumed another
 * fiber and looks again when it gets the thread back: a drain, a batch
 * wait, a worker between tasks). Fibers whose wait is over go first,
 * newest first; a yielder only when none is. Otherwise two waits that
 * yield to each other - each resumes the other and parks - would pass the
 * thread back and forth for ever while an older fiber whose future is done
 * never runs, and that fiber may be the very task both wait for. Timed
 * waits never park as yielders and never resume one (sf__park_resume_done),
 * so two of them cannot pass the thread between them either: each sleeps
 * until a fiber's wait is over. A fiber whose deadline passes goes on at
 * the thread's next scheduling point, which a thread with fibers parked
 * reaches at least every SF__PARKED_NAP_NS.
 */
static bool is_done(sf_future *f)
{
    /* Acquire: the fiber, resumed, reads what the task wrote before DONE. */
    return sf__status(atomic_load_explicit(&f->state, memory_order_acquire)) == SF__DONE;
}

static bool yielded(const struct sf__fiber *fb)
{
    return fb->ready_on == NULL && fb->ready_n == 0 && fb->ready_until == UINT64_MAX;
}

/* Is fb's wait over (not counting a yield)? *now caches the clock. */
static bool wait_over(const struct sf__fiber *fb, uint64_t *now)
{
    if (fb->ready_on != NULL && is_done(fb->ready_on))
        return true;
    for (int i = 0; i < fb->ready_n; i++)
        if (is_done(fb->ready_set[i]))
            return true;
    if (fb->ready_until == UINT64_MAX)
        return false;
    if (*now == 0)
        *now = sf__now_ns();
    return *now >= fb->ready_until;
}

/* The newest parked fiber whose wait is over, else (when `yielders`) the
 * newest that yielded, taken off the list; NULL if none can go on. */
static struct sf__fiber *take_ready_of(struct sf__thread *me, bool yielders)
{
    uint64_t now = 0;
    struct sf__fiber **yp = NULL;
    for (struct sf__fiber **p = &sf__sched(me)->parked; *p != NULL; p = &(*p)->next) {
        if (yielded(*p)) {
            if (yp == NULL)
                yp = p;
        } else if (wait_over(*p, &now)) {
            yp = p;
            break;
        }
    }
    if (yp == NULL || (!yielders && yielded(*yp)))
        return NULL;
    struct sf__fiber *fb = *yp;
    *yp = fb->next;
    SF__BUMP(sf__sched(me)->c_resumes); /* it runs next */
    return fb;
}

static struct sf__fiber *take_ready(struct sf__thread *me) { return take_ready_of(me, true); }

/*
 * Every parking fiber starts here and never returns: it runs its job, then
 * helps - resuming first any parked fiber that can go on - and when it has
 * nothing left it resumes the newest parked fiber, which goes back to its
 * own wait. One is parked whenever a parking fiber runs: the base, which
 * never ends, runs or is parked.
 */
static void fiber_main(void *arg)
{
    struct sf__fiber *fb = arg;
    struct sf__thread *me = fb->thread;
    struct sf__park_job job = *(const struct sf__park_job *)fb->job;
    for (;;) {
        job.run(me, &job);
        struct sf__fiber *next = take_ready(me);
        if (next == NULL) {
            if (job.next(me, &job, fb->help_region))
                continue;
            next = sf__sched(me)->parked;
            SF__ASSERT(next != NULL, "a parking fiber runs only while another is parked");
            sf__sched(me)->parked = next->next;
            SF__BUMP(sf__sched(me)->c_resumes);
        }
        sf__park_unfiber(me, fb);
        switch_to(me, next, true);
    }
}

/* The running fiber parks until `ready` is DONE or *c holds (neither: it
 * yields, and may be resumed whenever its thread has nothing better to
 * run), and `to` runs. Returns once it is resumed. `shown` is the wait the
 * deadlock detector sees meanwhile (ready, or NULL for a future no other
 * thread may read: a task in caller storage); the fiber's wait is put back
 * as it was after. */
static void park_on(struct sf__thread *me, sf_future *ready, sf_future *shown,
                    const struct sf__park_until *c, struct sf__fiber *to)
{
    struct sf__fiber *self = sf__sched(me)->fiber;
    /* Relaxed: our own fields. */
    sf_future *was = atomic_load_explicit(&self->waiting_on, memory_order_relaxed);
    uint64_t stamp = atomic_load_explicit(&self->wait_stamp, memory_order_relaxed);
    sf__wait_publish(self, shown, sf__wait_stamp());
    self->ready_on = ready;
    self->ready_set = c->set;
    self->ready_n = c->n;
    self->ready_until = c->until;
    self->next = sf__sched(me)->parked;
    sf__sched(me)->parked = self;
    SF__BUMP(sf__sched(me)->c_parks);
    if (shown != NULL)
        SF__TRACE(me, PARK, atomic_load_explicit(&shown->state, memory_order_relaxed), 0);
    switch_to(me, to, false);
    sf__wait_publish(self, was, stamp);
}

static void park_until(struct sf__thread *me, sf_future *ready, sf_future *shown,
                       struct sf__fiber *to)
{
    static const struct sf__park_until none = {NULL, NULL, 0, UINT64_MAX};
    park_on(me, ready, shown, &none, to);
}

/* The running fiber parks waiting for f (NULL: it yields). */
static void park(struct sf__thread *me, sf_future *f, struct sf__fiber *to)
{
    park_until(me, f, f, to);
}

void sf__park_run(struct sf__thread *me, sf_future *f, struct sf__fiber *fb,
                  const struct sf__park_job *job, uint32_t region)
{
    /* A new stack, and the state of a stack that runs no task of its own:
     * the task the parker runs stays this thread's current one, so that a
     * task run here is not outermost (busy time counts the parker's, which
     * lasts), and its red line is the new stack's. */
    fb->job = job;
    fb->help_region = region;
    struct sf__frame *st = &fb->saved;
    *st = (struct sf__frame){0};
    st->cur = sf__sched(me)->cur;
    st->region = sf__sched(me)->region;
    st->stack_lo = fb->stack.lo;
    st->stack_size = fb->stack.size;
    st->stack_red_task = fb->stack.lo + fb->stack.size / 4;
    st->stack_red = sf__sched(me)->cur != NULL ? st->stack_red_task : UINTPTR_MAX;
    sf__ctx_make(&fb->ctx, &fb->stack, fiber_main, fb);
    park_until(me, job->over != NULL ? job->over : f, f, fb);
}

bool sf__park_resume_done(struct sf__thread *me, const struct sf__park_until *c)
{
    struct sf__fiber *fb = take_ready_of(me, false);
    if (fb == NULL)
        return false;
    park_on(me, c->one, c->one, c, fb);
    return true;
}

bool sf__park_resume_ready(struct sf__thread *me, sf_future *f)
{
    struct sf__fiber *fb = take_ready(me);
    if (fb == NULL)
        return false;
    park(me, f, fb);
    return true;
}

/* Sleeps until f is DONE or nap_ns pass: get.c's sleep without a get's
 * bookkeeping (a drain is no get), a nap (trace.h). */
static void nap_on(struct sf__thread *me, sf_future *f, long nap_ns)
{
    /* Relaxed: the heavy fence orders the increment before the state's
     * load, the Dekker pair with the runner's light fence (run.h). */
    atomic_fetch_add_explicit(&f->waiters, 1, memory_order_relaxed);
    sf__fence_heavy();
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (sf__status(s) != SF__DONE) {
        uint64_t began = sf__nap_begin(me);
        sf__futex_wait(sf__future_futex(f), (uint32_t)s, nap_ns);
        sf__nap_end(me, began);
    }
    atomic_fetch_sub_explicit(&f->waiters, 1, memory_order_relaxed);
}

bool sf__park_runs_here(const struct sf__thread *me, const sf_future *f)
{
    /* Relaxed: f is this thread's (a task in caller storage), and so is
     * the store of runner. */
    const void *v = __atomic_load_n(&f->runner, __ATOMIC_RELAXED);
    /* Relaxed: our own store. */
    const struct sf__fiber *fs = atomic_load_explicit(&sf__sched(me)->fibers, memory_order_relaxed);
    return v != sf__sched(me)->fiber &&
           (v == &sf__sched(me)->base || (fs != NULL && (const char *)v >= (const char *)fs &&
                               (const char *)v < (const char *)(fs + SF__FIBERS)));
}

/* None of this thread's parked fibers can go on: they wait, directly or
 * through a task in caller storage that another of them runs, for tasks
 * running elsewhere. Sleeps until the first parked fiber with a wait that
 * others see - one on a future, held by its parked get - is woken, or a
 * nap passes; a fiber parked for a task in caller storage shows no wait
 * (park_until: nobody else may read such a future), so with none but those
 * it naps without a future. */
static void nap_for_parked(struct sf__thread *me)
{
    for (struct sf__fiber *fb = sf__sched(me)->parked; fb != NULL; fb = fb->next) {
        /* Relaxed: our own store. */
        sf_future *w = atomic_load_explicit(&fb->waiting_on, memory_order_relaxed);
        if (w != NULL) {
            nap_on(me, w, SF__PARKED_NAP_NS);
            return;
        }
    }
    struct timespec ts = {0, 100000L};
    uint64_t began = sf__nap_begin(me);
    nanosleep(&ts, NULL);
    sf__nap_end(me, began);
}

void sf__park_wait_local(struct sf__thread *me, sf_future *f)
{
    /* Relaxed: this thread's own future; its completion is on this thread. */
    while (sf__status(atomic_load_explicit(&f->state, memory_order_relaxed)) != SF__DONE) {
        struct sf__fiber *fb = take_ready(me);
        if (fb != NULL) {
            park_until(me, f, NULL, fb);
            continue;
        }
        nap_for_parked(me);
    }
}

void sf__park_drain(struct sf__thread *me)
{
    while (sf__sched(me)->parked != NULL) {
        if (sf__park_resume_ready(me, NULL))
            continue;
        /* The newest may wait for a task in caller storage, and show no
         * future to nap on: nap_for_parked looks further. */
        nap_for_parked(me);
    }
}
