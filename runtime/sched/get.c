/*
 * get.c - sf_get beyond the fast path: run directly, help, and only
 * then sleep.
 *
 * A get on future f (sf__get in get.h, then sf__get_slow here):
 *  1. f DONE: return its value.
 *  2. Submit every task this thread queued since its last get (pending.h):
 *     idle pool workers may now take them, oldest first. Publish this
 *     thread's private tasks if a thief asked for them.
 *  3. f PENDING, in this thread's queue or any other: claim it and run it
 *     here (wait inlining, as in Duffy's work-stealing pool; direct
 *     execution at the cap, as in Sonic Field's scheduler).
 *  4. f RUNNING elsewhere: help. Resume a parked fiber of this thread whose
 *     future is done; else claim this thread's own newest pending task, or
 *     the oldest pending task of another thread (the global pending set),
 *     and run it on another fiber while this one parks (park.c); look at f
 *     again each time this fiber goes on. With nothing to run: spin, yield,
 *     then sleep on f's state word until the runner wakes us, with a
 *     timeout that makes us look for new work (and at parked fibers) now
 *     and then.
 *
 * Deadlock freedom (the "embrace of meh"), enforced by steps 3 and 4. A get
 * never waits for a task that nobody will start. If f has not started it is
 * PENDING, and step 3 claims it whatever queue holds it: a public task by
 * CAS, a private one of another thread through the gate (claim.h), which
 * needs nothing from the owner, so even an owner that never calls libsf
 * again cannot strand it. A batch task (batch.h) is in no thread's queue:
 * its tag routes the claim to sf__no_thread_queue (registry.h,
 * sf__queue_of), whose tasks are all public, so it is a CAS too, needing
 * neither a worker nor its batch's lock - whatever the batch's FIFO and
 * the pool are doing. Otherwise f is RUNNING on some thread, which is
 * itself either computing or in a get of its own, and the same holds there.
 * No step needs a free pool worker: every task can run in the thread that
 * needs it, so a pool of any size, even none, finishes any computation whose
 * gets form no cycle. Helping (step 4) adds speed, and progress for tasks
 * that wait for each other by other means than sf_get (a flag, a queue):
 * after spinning, a blocked get in a task takes other threads' private
 * tasks too (SF__STEAL_PRIVATE), so every task not yet started stays within
 * its reach whatever its owner is doing. A get of plain code helps only
 * with its own task's work (Plain code's waits); idle workers still take
 * every submitted task.
 *
 * Helping never makes this wait depend on the helped work: it runs on
 * another fiber, and this one goes on once f is done whatever that work is
 * doing (park.c: why only the program's own cycles of gets deadlock).
 */
#include "sched/get.h"
#include "sched/idle_hook.h"
#include "sched/light.h"
#include "sched/after.h"
#include "sched/park.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define SPIN_ROUNDS 64      /* looks for work with pauses before yielding */
#define YIELD_ROUNDS 16     /* then looks after sched_yield before sleeping */
#define NAP_MIN_NS 200000L  /* first sleep; doubles up to NAP_MAX_NS */
#define NAP_MAX_NS 20000000L


/*
 * Deadlock. A get that can never return: f runs on a fiber that waits,
 * through a chain of gets, for a task running on this very fiber below the
 * get - its own future, or one of the futures of its callers. A fiber goes
 * back to an outer frame only when the inner one ends, and helped work runs
 * on other fibers, so the links are: f RUNNING names the fiber it runs on
 * (runner, run.h); a fiber names the future its innermost get waits for
 * (waiting_on, with a stamp from a global clock), published when that get
 * parks or first sleeps - a get stuck in a cycle does one or the other
 * sooner or later, and one that does neither pays nothing. A chain that
 * comes back to this fiber is a cycle. Nobody on a cycle can go on; to
 * break it, the get that closed it - the one that went to sleep last -
 * fails with EDEADLK, and the others complete once its task goes on.
 *
 * No false cycle: links are read one at a time while threads move, so a
 * chain counts only if the same chain, link for link (states with their
 * tags, runners, waits with their stamps), is read twice, before two sleeps.
 * Each link then held from its first reading to its second (a state with the
 * same tag is the same incarnation, RUNNING until it ends; a wait with the
 * same stamp is the same wait, in progress until it ends), so all of them
 * held at once between the two passes: a real cycle, which never resolves.
 * A runner is accepted only if it is a fiber of a registered thread (the
 * word holds the task's argument until the runner overwrites it, and a program
 * cannot pass our structs as arguments). A future that runs on our own
 * fiber (f RUNNING here) is a cycle at once: our frame cannot end before
 * this get. The check runs only before a sleep, so the fork-join path never
 * pays for it. Links run from fiber to fiber (thread.h, struct sf__fiber):
 * a task goes on only when the fiber it runs on does, and a fiber waits for
 * one future at a time.
 */
#define CHAIN_MAX 64

struct link {
    sf_future *h;           /* a future RUNNING ... */
    uint64_t s;             /* ... in this state ... */
    struct sf__fiber *r;    /* ... on this fiber, which waits ... */
    sf_future *w;           /* ... for this future ... */
    uint64_t stamp;         /* ... since this time */
};

struct watch {
    int n;            /* links of the last cycle seen, 0: none */
    struct link *prev;
};

static bool is_fiber(const void *p) { return sf__park_is_fiber(p); }

/* The chain of waits from f: the number of links of a cycle back to our
 * fiber me, 0 if it ends or goes elsewhere. */
static int chain(struct sf__fiber *me, sf_future *f, struct link *l)
{
    sf_future *h = f;
    for (int n = 0; n < CHAIN_MAX; n++) {
        /* Acquire: a runner's store of runner precedes its later waits. */
        uint64_t s = atomic_load_explicit(&h->state, memory_order_acquire);
        if (sf__status(s) != SF__RUNNING)
            return 0;
        void *v = __atomic_load_n(&h->runner, __ATOMIC_RELAXED);
        struct sf__fiber *r = v == (void *)me ? me : is_fiber(v) ? v : NULL;
        if (r == NULL)
            return 0;
        l[n] = (struct link){h, s, r, NULL, 0};
        if (r == me)
            return n + 1;
        if (!sf__wait_read(r, &l[n].w, &l[n].stamp) || l[n].w == NULL)
            return 0;
        h = l[n].w;
    }
    return 0;
}

/* Before a sleep in a get of f: true if this get closes a cycle of gets. Its
 * own frame, out of line: the chains live only during the call. */
static __attribute__((noinline)) bool closes_cycle(struct sf__thread *me, sf_future *f,
                                                   struct watch *w)
{
    struct link now[CHAIN_MAX];
    int n = chain(sf__sched(me)->fiber, f, now);
    if (n == 1)
        return true; /* f runs here, below this get */
    bool same = n > 0 && n == w->n && memcmp(now, w->prev, (size_t)n * sizeof now[0]) == 0;
    if (n > 0 && w->prev == NULL && (w->prev = malloc(CHAIN_MAX * sizeof now[0])) == NULL)
        n = 0; /* no memory to compare with: no verdict, ever */
    w->n = n;
    if (n > 0)
        memcpy(w->prev, now, (size_t)n * sizeof now[0]);
    if (!same)
        return false;
    /* Relaxed: our own stamp. */
    uint64_t mine = atomic_load_explicit(&sf__sched(me)->fiber->wait_stamp, memory_order_relaxed);
    for (int i = 0; i < n - 1; i++)
        if (now[i].stamp > mine)
            return false; /* a later wait closed it: that get fails */
    return true;
}

/* The calling thread waits for f from now on (Deadlock); returns the wait it
 * was in, to restore. */
static struct link begin_wait(struct sf__thread *me, sf_future *f)
{
    struct sf__fiber *fb = sf__sched(me)->fiber;
    /* Relaxed: our own fields. */
    struct link outer = {.w = atomic_load_explicit(&fb->waiting_on, memory_order_relaxed),
                         .stamp = atomic_load_explicit(&fb->wait_stamp, memory_order_relaxed)};
    sf__wait_publish(fb, f, sf__wait_stamp());
    return outer;
}

/* Back in what we were in before: running a task (NULL), or an outer
 * wait. */
static void end_wait(struct sf__thread *me, struct link outer)
{
    sf__wait_publish(sf__sched(me)->fiber, outer.w, outer.stamp);
}

/*
 * Deep chains. Running the awaited task is never refused, so a chain of
 * nested gets nests as deep as the program recurses, and a million levels do
 * not fit any stack. A get whose frame is below its stack's red line (the
 * last quarter of the stack, thread.c; sf__stack_room) runs its task on a
 * fresh stack instead: a fiber of this thread (get_on_fiber) gets f there -
 * claiming it and running it, or helping and waiting like any getter -
 * while this one parks until f is done. A chain thus continues on a new
 * stack each time one fills, and the fibers go back to the spares as it
 * unwinds. A thread that has no fiber left (SF__FIBERS parked, or no
 * memory) starts a new thread instead, registered like any foreign thread,
 * and waits for it, going on meanwhile with its parked fibers as they can.
 * Deadlock freedom is unchanged: the waiting fiber holds no lock, and its
 * pending tasks stay claimable by anyone (top comment).
 */
struct fresh {
    sf_future *f;
    bool isolated;
    int err;
    _Atomic uint32_t over; /* 1 once the new thread is done with f (a futex) */
};

static void *fresh_main(void *arg)
{
    struct fresh *fr = arg;
    sf__call_begin_for_life();
    struct sf__thread *me = sf__thread_register(false, sf__pool.stack_size);
    if (me == NULL) {
        fr->err = errno != 0 ? errno : ENOMEM;
    } else {
        sf__thread_name("sf-fresh-", me->id); /* docs/threads.md */
        errno = 0;
        (void)sf__get_slow(me, fr->f, fr->isolated);
        int e = errno;
        sf__park_drain(me); /* its fibers end with it */
        errno = e;
        /* The getter holds f while it waits for us, so f is not recycled:
         * not DONE means this get failed, with errno. Acquire: pairs with
         * the runner's release of DONE; the getter reads val after our
         * exit. */
        if (sf__status(atomic_load_explicit(&fr->f->state, memory_order_acquire)) != SF__DONE)
            fr->err = errno != 0 ? errno : EINVAL;
    }
    /* Over either way, a failed registration included: the getter waits for
     * this word, not for the join (get_on_fresh_stack).
     * Relaxed: a wake-up only; the join orders err and f for the getter. */
    atomic_store_explicit(&fr->over, 1, memory_order_relaxed);
    sf__futex_wake(&fr->over, 1);
    return NULL;
}

/* Gets f on a new thread: 0 once f is DONE, or an errno (pthread_create's,
 * or the new thread's registration's). */
static int get_on_fresh_stack(struct sf__thread *me, sf_future *f, bool isolated)
{
    struct fresh fr = {f, isolated, 0, 0};
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return ENOMEM;
    pthread_attr_setstacksize(&attr, sf__pool.stack_size);
    pthread_t t;
    int e = pthread_create(&t, &attr, fresh_main, &fr);
    pthread_attr_destroy(&attr);
    if (e != 0)
        return e;
    SF__BUMP(sf__sched(me)->c_fresh_stacks);
    /* We wait for f there, as a get would (Deadlock), going on with our
     * parked fibers as they can: the chain may need one of them (park.c).
     * Relaxed: a hint to stop waiting; the join orders what the new thread
     * did before our reads. */
    struct link outer = begin_wait(me, f);
    while (!atomic_load_explicit(&fr.over, memory_order_relaxed)) {
        if (sf__park_any(me) && sf__park_resume_ready(me, NULL))
            continue;
        uint64_t began = sf__nap_begin(me);
        sf__futex_wait(&fr.over, 0, sf__park_any(me) ? SF__PARKED_NAP_NS : 0);
        sf__nap_end(me, began);
    }
    pthread_join(t, NULL);
    end_wait(me, outer);
    return fr.err;
}

/* Less than a sixteenth of the stack left: too little to run a task here.
 * Under ThreadSanitizer, also past 5/4 of its nesting bound (thread.h),
 * which stands for the stack there: levels beyond the bound take four
 * frames each (through sf__get_slow). */
static bool stack_exhausted(const struct sf__thread *me)
{
#if defined(__SANITIZE_THREAD__)
    if (sf__sched(me)->depth >= SF__TSAN_NEST / 4 * 5)
        return true;
#endif
    const struct sf__sched *s = sf__sched(me);
    return (uintptr_t)__builtin_frame_address(0) - s->stack_lo < s->stack_size / 16;
}

/*
 * Isolation. Helping means a get may start any pending task, however long,
 * and a helped task that computes without waiting runs to its end before
 * the get's fiber can go on: a get of a 0.3 s task can take 2 s because its
 * thread helped with an unrelated 2 s one, and code that waits while
 * holding a lock may run a task that wants the same lock. An isolated get
 * (sf_get_isolated) helps only with the work of its own task, as oneTBB's
 * this_task_arena::isolate does: a task belongs to a region (f->region),
 * inherited from the task that made it (sf_do stamps the maker's
 * me->region, sf__run sets me->region to the task's while it runs), and a
 * thread whose running task is in a region helps, in every get, only with
 * tasks of that region. An isolated get that runs its task itself opens a
 * new region for it (and its descendants, wherever they run); one whose
 * task already runs elsewhere helps with that task's region if it has one,
 * else it waits without helping. Waiting without helping never costs
 * deadlock freedom, which rests on step 3 alone (top comment).
 *
 * Closed regions (pending.h, Regions). A parallel loop (parfor.c) runs in a region of
 * its own with the closed bit: its caller and its participants help only
 * with the loop's work, and a thread outside it - a get in no region
 * included - never runs a participant or anything a body made while it
 * waits; only idle workers (and the loop's own threads) take them. A body
 * may get a future made outside the loop (tests/test_combined).
 */
uint32_t sf__region_new_closed(void) { return sf__region_new() | SF__REGION_CLOSED; }

/*
 * Plain code's waits. A wait called by plain code (no task runs on the
 * thread: main, a thread of the program's) is an outermost call, which
 * leaves nothing parked on its thread when it returns (park.c): it drains
 * what its thread helped with first. So whatever it helped with must be
 * able to end without this thread going on past the call - and a task the
 * program made for other reasons may wait for exactly that: a thread that
 * feeds promises and waits for results (an I/O loop, an MPI rank, an audio
 * host) sets promise k only after its wait returns, and a task it helped
 * with may wait for promise k. Java's ForkJoinPool never lets an external
 * join run unrelated tasks for this reason. So plain code's waits help with
 * the work of what they wait for and nothing else:
 *   - a get of f that has not started claims f first and only then submits
 *     its thread's queue (a worker that took f first would leave this
 *     thread nothing to help with), and runs f as the root of a new region
 *     R (SF__REGION_ROOT on f: "f opened R"). From then until the outermost
 *     call has returned - its drain included - every get on this thread
 *     helps only with tasks of R (outer_help, thread.h), whatever task or
 *     fiber it is in; R's tasks are f and those made under it, wherever
 *     they run;
 *   - a get of f running elsewhere helps within f's region only if f opened
 *     it (its root bit): a region f inherited from its maker holds f's
 *     siblings too. A task made by plain code opens a region of its own
 *     when it starts wherever it runs (SF__REGION_PLAIN, sf__run_in_region),
 *     so a get of one a worker took helps with its descendants; a get of a
 *     promise, or of a task another task made, helps with nothing;
 *   - R is soft (pending.h, Regions): the threads that run its tasks
 *     elsewhere help with anything, as inside any task - a get inside a
 *     task leaves nothing to drain, so helping there is as safe as ever.
 * What a plain-code wait helps with is then f's own work: every fiber it
 * parks runs a task of R, and its drain waits for R's tasks only. One
 * shape still stalls it: a task of R, left running by f (made and not
 * got), that waits for what this thread does after the call returns
 * (docs/waiting.md says so). Deadlock freedom never rested on helping (top
 * comment). A plain-code batch wait runs its batch's tasks the same way
 * (batches.c); timed waits run nothing (Timed gets).
 */

/* Sleeps until f is DONE or nap_ns pass. */
static void sleep_on(struct sf__thread *me, sf_future *f, long nap_ns)
{
    /* Relaxed: the heavy fence below orders the increment before our reading
     * of the state, which is all the Dekker pair with sf__run needs. */
    atomic_fetch_add_explicit(&f->waiters, 1, memory_order_relaxed);
    /* Relaxed: a statistic for the trace's Asleep column. */
    atomic_store_explicit(&sf__sched(me)->asleep, 1, memory_order_relaxed);
    SF__BUMP(sf__sched(me)->c_sleeps);
    if (SF__UNLIKELY(sf__trace_on)) {
        sf__trace_event(me, SF__EV_SLEEP, atomic_load_explicit(&f->state, memory_order_relaxed),
                        0);
        sf__trace_flush(me); /* a sleeping thread's lines should be readable */
    }
    /* Pairs with the light fence in sf__run: either the runner sees our
     * waiters count and wakes us, or we see its DONE here. */
    sf__fence_heavy();
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    if (sf__status(s) != SF__DONE) {
        /* The kernel compares the word again, so a DONE stored after our
         * load makes this return at once. Timed: not busy (thread.h). */
        uint64_t began = sf__sleep_begin();
        sf__futex_wait(sf__future_futex(f), (uint32_t)s, nap_ns);
        sf__sleep_end(me, began);
    }
    /* Relaxed: a statistic, and a count a runner reads only to decide
     * whether to wake; a stale non-zero costs one spurious wake. */
    atomic_store_explicit(&sf__sched(me)->asleep, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&f->waiters, 1, memory_order_relaxed);
    SF__TRACE(me, WAKE, s, 0);
    sf__hang_napped(me, SF__HANG_GET, f, 1); /* SF_HANG_REPORT (hang.h) */
}

void *sf__get_failed(sf_future *f)
{
    /* Acquire: the caller saw DONE; the code was written before it. */
    sf__future_mark_seen(f, atomic_load_explicit(&f->state, memory_order_acquire));
    /* Relaxed: ordered by the acquire above. */
    errno = (int)atomic_load_explicit(&f->fail_code, memory_order_relaxed);
    return NULL;
}

#define STEAL_SCAN 256      /* slots looked at per victim queue */

/* A pending task to help with, claimed: this thread's newest, then another
 * thread's oldest public one (private ones too, through the gate, when
 * force: pending.h), of `region` (Isolation). NULL: none, or past a
 * shutdown's deadline - nothing starts by helping then (lifecycle.c,
 * sf_shutdown_timeout), which deadlock freedom allows (it rests on step 3
 * alone, top comment). */
static sf_future *find_help(struct sf__thread *me, bool force, uint32_t region,
                            uint64_t *claimed, int *from)
{
    if (SF__UNLIKELY(sf__pool_past_deadline()))
        return NULL;
    sf_future *g;
    /* Ready continuations are in no region: helped with outside one. */
    if ((region == 0 || region == SF__REGION_ANY) && (g = sf__after_take(me, claimed)) != NULL) {
        *from = sf__tag_thread(*claimed); /* its maker's, as the trace names it */
        return g;
    }
    *from = me->id;
    g = sf__pending_pop(&me->q, region, claimed);
    if (g != NULL)
        return g;
    SF__BUMP(sf__sched(me)->c_steal_tries);
    int n = sf__registry_count();
    unsigned flags = force ? SF__STEAL_PRIVATE : 0;
    for (int k = 0, i = (int)(sf__thread_rand(me) % (unsigned)n); k < n;
         k++, i = i + 1 == n ? 0 : i + 1) {
        struct sf__thread *v = sf__registry_get(i);
        if (v != me && (g = sf__pending_steal(&v->q, flags, region, STEAL_SCAN, claimed)) != NULL) {
            *from = v->id;
            return g;
        }
    }
    if ((g = sf__light_take(me, region, claimed, from)) != NULL)
        return g;
    SF__BUMP(sf__sched(me)->c_steal_fails);
    return NULL;
}

/* A fiber's job (park.h): run the task a waiting get claimed to help with
 * (a claim after a shutdown's deadline sheds it: not started). */
static void help_job(struct sf__thread *me, struct sf__park_job *job)
{
    if (SF__UNLIKELY(sf__pool_past_deadline())) {
        sf__pool_shed(me, job->f, job->claimed);
        return;
    }
    SF__TRACE(me, STEAL, job->claimed, job->from);
    sf__run_claimed(me, job->f, job->claimed, SF__HOW_STEAL);
}

/* Between two looks at f while it runs elsewhere, and between two helped
 * tasks: thieves that asked for our private tasks are answered, and our
 * top is kept on a pending task - workers scan from there, and claims by
 * others leave finished slots. */
static void answer_thieves(struct sf__thread *me)
{
    /* Relaxed: as in sf__get_submit. */
    if (atomic_load_explicit(&me->q.want, memory_order_relaxed) != 0)
        (void)sf__get_answer(me);
    sf__pending_trim_top(&me->q, UINT64_MAX);
}

bool sf__get_answer(struct sf__thread *me)
{
    /* Relaxed, both: the bits are hints, and sf__cancel_settle orders its
     * own accesses. */
    if (atomic_load_explicit(&me->q.want, memory_order_relaxed) & SF__WANT_CHECK)
        sf__cancel_settle(&me->q);
    if (sf__pending_poll(&me->q))
        sf__pool_notify();
    return (atomic_load_explicit(&me->q.want, memory_order_relaxed) & SF__WANT_CHECK) != 0;
}

/* A fiber's next job, once its last is done: more help within region - with
 * the waiting get's bookkeeping first, as it does between two helped tasks
 * (answer_thieves). */
static bool next_help(struct sf__thread *me, struct sf__park_job *job, uint32_t region)
{
    answer_thieves(me);
    job->f = find_help(me, false, region, &job->claimed, &job->from);
    job->run = help_job;
    return job->f != NULL;
}

bool sf__get_run_ready(struct sf__thread *me)
{
    if (SF__UNLIKELY(sf__pool_past_deadline()))
        return false;
    uint64_t claimed;
    sf_future *f = sf__after_take(me, &claimed);
    if (f == NULL)
        return false;
    SF__TRACE(me, STEAL, claimed, sf__tag_thread(claimed));
    sf__run_claimed(me, f, claimed, SF__HOW_STEAL);
    return true;
}

/* No next job: a wait that runs ready continuations only runs one per
 * look at its future. */
static bool next_none(struct sf__thread *me, struct sf__park_job *job, uint32_t region)
{
    (void)me;
    (void)job;
    (void)region;
    return false;
}

/* A fiber's job (park.h): get job->f there, on a fresh stack (Deep
 * chains). The parked getter looks at f again when it goes on. */
static void get_on_fiber(struct sf__thread *me, struct sf__park_job *job)
{
    int saved = errno;
    (void)sf__get_slow(me, job->f, job->isolated);
    errno = saved;
    /* The parker may go on (and release f) only now: this fiber may have
     * parked on f too, in a help that resumed another fiber. Release: the
     * parker reads f after it (acquire, take_ready). */
    atomic_store_explicit(&job->over->state, sf__with_status(0, SF__DONE), memory_order_release);
    job->over = NULL;
}

/* A slow get of f, across its looks at f. */
struct slow_get {
    struct sf__thread *me;
    sf_future *f;
    bool isolated;
    bool plain;               /* called by plain code (Plain code's waits) */
    /* Helping stays within the region of the task running here, if any;
     * an isolated get's within its task's (Isolation). */
    uint32_t region;
    bool may_help;
    bool blocked;             /* f was seen RUNNING elsewhere */
    bool dry;                 /* no work found since the last helped task */
    unsigned rounds;          /* looks without work: spins, then yields */
    long nap;                 /* the next sleep's length */
    bool published;           /* our wait is published (Deadlock) ... */
    struct link outer_wait;   /* ... and this is the one it replaced */
    struct watch watch;       /* the chain seen before the last sleep */
    int err;                  /* the get fails with this errno */
};

/* What a look at f decided: look again; f is DONE (or was shed: DONE
 * soon, with ECANCELED); the get fails (w->err); or (get_deep) f is still
 * to be claimed, in place. */
enum look { LOOK_AGAIN, LOOK_DONE, LOOK_FAILED, LOOK_IN_PLACE };

/* Helped or went on: the next wait starts its backoff afresh. */
static void backoff_reset(struct slow_get *w)
{
    w->rounds = 0;
    w->dry = false;
    w->nap = NAP_MIN_NS;
}

/* f is PENDING (state s) and this frame is below the red line in a task
 * (Deep chains): get f on a fresh stack - a fiber of this thread, else a
 * new thread. LOOK_AGAIN once that is done (f DONE, or claimed meanwhile);
 * LOOK_FAILED with w->err when no fresh stack can be had and this one is
 * exhausted; LOOK_IN_PLACE when none can be had but room is left here. */
static enum look get_deep(struct sf__thread *me, struct slow_get *w)
{
    struct sf__fiber *fb = sf__park_fiber(me, sf__pool.stack_size);
    if (fb != NULL) {
        /* A fiber of this thread gets f; we park until it is done, and look
         * again. */
        SF__BUMP(sf__sched(me)->c_fresh_stacks);
        /* We wait for the fiber's get to end, not for f: the fiber may
         * still be parked on f when f is done (get_on_fiber). */
        sf_future over;
        memset(&over, 0, sizeof over); /* FREE: not DONE */
        struct sf__park_job job = {.run = get_on_fiber, .next = next_help, .f = w->f,
                                   .isolated = w->isolated, .over = &over};
        sf__park_run(me, w->f, fb, &job, w->region);
        return LOOK_AGAIN;
    }
    int e = get_on_fresh_stack(me, w->f, w->isolated);
    if (e == 0)
        return LOOK_AGAIN; /* f is DONE now */
    if ((e != EAGAIN && e != ENOMEM) || stack_exhausted(me)) {
        w->err = e;
        return LOOK_FAILED;
    }
    /* No thread (or no memory) for a fresh stack, but room left here. */
    return LOOK_IN_PLACE;
}

/* Step 3 (top comment): f is PENDING in state s - claim it, whatever queue
 * holds it, and run it here. LOOK_DONE once it ran (or was shed past a
 * shutdown's deadline: DONE either way); LOOK_AGAIN when another claimer
 * won, or a fresh stack got it; LOOK_FAILED with w->err. */
static enum look claim_and_run_here(struct sf__thread *me, struct slow_get *w, uint64_t s)
{
    sf_future *f = w->f;
    /* A thread that runs no task yet runs f here whatever its stack: a
     * fresh stack would be no bigger. */
    if (SF__UNLIKELY(!sf__stack_room(me)) && sf__sched(me)->cur != NULL) {
        enum look l = get_deep(me, w);
        if (l != LOOK_IN_PLACE)
            return l;
    }
    uint64_t run = sf__with_status(s, SF__RUNNING);
    bool mine = sf__pending_holds(&me->q, s);
    struct sf__pending *q = sf__queue_of(s);
    /* Another thread's task, got by its handle: if it is private, its owner
     * is asked to publish what it pushes from now on, and its gate opens
     * for what it queued before (pending.h, Handed-over futures). */
    if (!(mine ? sf__pending_claim_own(q, f, &s, run) : sf__pending_claim_handed(q, f, &s, run)))
        return LOOK_AGAIN;
    if (mine)
        sf__pending_trim(q, f);
    /* Past a shutdown's deadline a task no longer starts here either: its
     * getters, this one included, see ECANCELED (sf_shutdown_timeout). */
    if (SF__UNLIKELY(sf__pool_past_deadline())) {
        sf__pool_shed(me, f, run);
        return LOOK_DONE;
    }
    /* Relaxed: f is ours now; sf__run reads it on this thread, and a
     * getter elsewhere reads it as a hint (first_block). */
    if (w->isolated) {
        atomic_store_explicit(&f->region, sf__region_new() | SF__REGION_ROOT,
                              memory_order_relaxed);
    } else if (w->plain) {
        /* f's region, soft: its runners elsewhere help as ever, this thread
         * only within it (Plain code's waits). */
        uint32_t r = sf__region_new() | SF__REGION_SOFT;
        atomic_store_explicit(&f->region, r | SF__REGION_ROOT, memory_order_relaxed);
        sf__sched(me)->outer_help = r;
        /* Submitted only now that f is ours: a worker that took f first
         * would leave this thread nothing to help with. */
        sf__get_submit(me, sf__trace_on);
    }
    sf__run_claimed(me, f, run, SF__HOW_WAIT_INLINE);
    return LOOK_DONE;
}

/* An isolated or plain get of f, RUNNING elsewhere (state s), learns the
 * region it may help within: an isolated get, f's (Isolation); plain
 * code's, f's own only - one f opened, not its maker's (Plain code's
 * waits). */
static void learn_region(struct slow_get *w, uint64_t s)
{
    /* Relaxed: a hint. The maker's region was published with the push; a
     * getter that claimed f, or f's start, may have just set a new one
     * that we miss (plain code looks again at its next try). Either way we
     * help within one region, or not at all. A task that failed already
     * keeps its code there (fail_code): no region then. */
    uint32_t r = atomic_load_explicit(&w->f->region, memory_order_relaxed);
    if (w->plain)
        w->may_help = (r & SF__REGION_ROOT) && !(s & SF__FAILED);
    else
        w->may_help = (r & ~SF__REGION_ROOT) != 0 && !(s & SF__FAILED);
    w->region = r & ~SF__REGION_ROOT;
    /* What this thread helps with, then, in the tasks it helps with too. */
    if (w->plain && w->may_help)
        sf__sched(w->me)->outer_help = w->region;
}

/* f was first seen RUNNING elsewhere (state s): counted, and an isolated
 * or plain get learns the region it may help within. */
static void first_block(struct sf__thread *me, struct slow_get *w, uint64_t s)
{
    w->blocked = true;
    SF__BUMP(sf__sched(me)->c_blocked);
    sf__light_offer(me); /* this stack's light tasks, stealable while it waits */
    if (!w->isolated && !w->plain)
        return;
    learn_region(w, s);
    /* What this thread queued may run on workers meanwhile (sf_get_isolated
     * did not submit before claiming). */
    sf__get_submit(me, sf__trace_on);
}

/* Step 4's helping (top comment), f RUNNING elsewhere: a parked fiber of
 * ours whose future is done goes on first; then work to help with runs on
 * another fiber while this one parks (park.c). True if either happened: we
 * went on later, and look at f again. */
static bool help(struct sf__thread *me, struct slow_get *w)
{
    if (sf__park_any(me) && sf__park_resume_ready(me, w->f))
        return true;
    if (!w->may_help && w->plain)
        /* f may have opened its region since we looked (sf__run_in_region).
         * Relaxed: the FAILED bit only; a stale one costs a look. */
        learn_region(w, atomic_load_explicit(&w->f->state, memory_order_relaxed));
    /* A wait that helps with nothing else - plain code's, an isolated one
     * - still runs ready continuations while it waits for one that has not
     * started: with no idle worker nobody else would (after.h). A
     * continuation does not wait (its deps are done), so this wait depends
     * on no unrelated work; docs/continuations.md asks that fn not block. */
    bool ready_only = false;
    if (!w->may_help || (w->region != 0 && w->region != SF__REGION_ANY)) {
        /* Relaxed: a hint; the get loop looks at f again. */
        ready_only = sf__status(atomic_load_explicit(&w->f->state, memory_order_relaxed)) ==
                         SF__WAITING &&
                     sf__after_maybe_ready();
        if (!ready_only && !w->may_help)
            return false;
    }
    /* Plain code runs a ready continuation on its own stack, as its
     * outermost task: a fiber would cost a context, and under
     * ThreadSanitizer a fiber of its own, per continuation. Inside a task,
     * on a fiber as any help (park.c). */
    if (ready_only && sf__sched(me)->cur == NULL)
        return sf__get_run_ready(me);
    struct sf__fiber *fb = sf__park_fiber(me, sf__pool.stack_size);
    if (fb == NULL)
        return false;
    struct sf__park_job job = {.run = help_job, .next = ready_only ? next_none : next_help};
    if (ready_only) {
        job.f = SF__UNLIKELY(sf__pool_past_deadline()) ? NULL : sf__after_take(me, &job.claimed);
        job.from = job.f != NULL ? sf__tag_thread(job.claimed) : 0;
    } else {
        job.f = find_help(me, w->rounds >= SPIN_ROUNDS, w->region, &job.claimed, &job.from);
    }
    if (job.f == NULL) {
        sf__park_unfiber(me, fb);
        return false;
    }
    sf__park_run(me, w->f, fb, &job, w->region);
    return true;
}

/* Step 4 with nothing to help with: spin (SPIN_ROUNDS looks with pauses),
 * yield (YIELD_ROUNDS looks after sched_yield), then sleep on f, with naps
 * doubling up to NAP_MAX_NS (shorter while fibers are parked here: they
 * may go on). Before each sleep, a get that closes a cycle of gets fails
 * with EDEADLK (Deadlock): false then, with w->err. */
static bool spin_yield_sleep(struct sf__thread *me, struct slow_get *w)
{
    /* The idle hook at each round (idle_hook.h): what it completed may be
     * f, or work to help with, so look again at once. */
    int hook = sf__idle_poll();
    if (hook == SF__HOOK_PROGRESS) {
        backoff_reset(w);
        return true;
    }
    if (w->rounds < SPIN_ROUNDS) {
        w->rounds++;
        for (int i = 0; i < 16; i++)
            sf__pause();
        return true;
    }
    if (w->rounds < SPIN_ROUNDS + YIELD_ROUNDS) {
        w->rounds++;
        sched_yield();
        return true;
    }
    /* The wait is published at the first sleep: a get stuck in a cycle
     * sleeps sooner or later, and one that never sleeps pays nothing. */
    if (!w->published) {
        w->published = true;
        w->outer_wait = begin_wait(me, w->f);
    }
    if (closes_cycle(me, w->f, &w->watch)) {
        w->err = EDEADLK;
        return false;
    }
    long nap = sf__park_any(me) && w->nap > SF__PARKED_NAP_NS ? SF__PARKED_NAP_NS : w->nap;
    /* While the hook waits for outside events, it is called again within
     * SF__HOOK_NAP_NS: f may be what they complete. */
    sleep_on(me, w->f, hook == SF__HOOK_WAITING && nap > SF__HOOK_NAP_NS ? SF__HOOK_NAP_NS : nap);
    w->nap = w->nap * 2 > NAP_MAX_NS ? NAP_MAX_NS : w->nap * 2;
    return true;
}

/* The slow get's state before its first look at f. */
static struct slow_get slow_get_init(struct sf__thread *me, sf_future *f, bool isolated)
{
    bool plain = !isolated && sf__sched(me)->cur == NULL;
    return (struct slow_get){.me = me, .f = f, .isolated = isolated, .plain = plain,
                             .region = sf__region_helps(sf__sched(me)->region,
                                                        sf__sched(me)->outer_help),
                             .may_help = !plain, .nap = NAP_MIN_NS};
}

/* Steps 3 and 4 of the top comment, looking at f again after each: 0 once
 * f is DONE, else the errno the get fails with. */
static int get_loop(struct sf__thread *me, sf_future *f, bool isolated)
{
    struct slow_get w = slow_get_init(me, f, isolated);
    for (;;) {
        /* Acquire: DONE makes the runner's val visible. */
        uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
        uint64_t st = sf__status(s);
        if (st == SF__DONE)
            break;
        if (st == SF__PENDING) {
            enum look l = claim_and_run_here(me, &w, s);
            if (l == LOOK_AGAIN)
                continue;
            break;
        }
        /* Plain code (no task here) runs it as its outermost task, on its
         * own stack; a task, when the stack has room. */
        if (st == SF__WAITING && (s & SF__CANCEL) &&
            (sf__sched(me)->cur == NULL || sf__stack_room(me)) && sf__after_claim(f, &s)) {
            /* A ready continuation: run here, as a get runs its own task
             * nobody started (after.h). */
            SF__TRACE(me, STEAL, s, sf__tag_thread(s));
            sf__run_claimed(me, f, s, SF__HOW_STEAL);
            continue;
        }
        if ((st != SF__RUNNING && st != SF__WAITING) || (s & SF__ORPHAN)) {
            /* FREE or orphaned: the caller released it before getting. */
            w.err = EINVAL;
            break;
        }
        if (!w.blocked)
            first_block(me, &w, s);
        answer_thieves(me);
        if (help(me, &w)) {
            backoff_reset(&w);
            continue;
        }
        if (!w.dry) {
            w.dry = true;
            SF__TRACE(me, NON_PENDING, s, 0);
        }
        if (!spin_yield_sleep(me, &w))
            break;
    }
    if (w.published)
        end_wait(me, w.outer_wait);
    free(w.watch.prev);
    return w.err;
}

void *sf__get_slow(struct sf__thread *me, sf_future *f, bool isolated)
{
    int e = get_loop(me, f, isolated);
    if (e != 0) {
        errno = e;
        return NULL;
    }
    /* Acquire: DONE was read with acquire in the loop; this reads it again
     * for the trace and the failure bit. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    SF__TRACE(me, GDONE, s, 0);
    return SF__LIKELY(!(s & SF__FAILED)) ? f->val : sf__get_failed(f);
}

int sf__get_wait(struct sf__thread *me, sf_future *f) { return get_loop(me, f, false); }

int sf__get_run_pending(struct sf__thread *me, sf_future *f)
{
    struct slow_get w = slow_get_init(me, f, false);
    /* Acquire: as any look at f. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
    if (sf__status(s) != SF__PENDING)
        return 0;
    enum look l = claim_and_run_here(me, &w, s);
    free(w.watch.prev);
    return l == LOOK_FAILED ? w.err : 0;
}

/*
 * Timed gets (sf_wait_for, sf_wait_any, sf_wait_all: wait.c). A wait with a
 * deadline never computes: it runs no task on the calling thread - not f's,
 * not helped work - so it returns by its deadline plus one wake-up whatever
 * the tasks do (compute for a minute, wait for a promise nobody sets), as
 * C++'s std::future::wait_for on a deferred future does. A task not started
 * is offered to the pool instead (sf__get_offer): the caller submitted its
 * own queue, and a task of its own is published and the workers told; a
 * task another thread queued is asked for (its owner publishes at its next
 * get, and its getters claim it as ever). At SF_THREADS=1 there is no pool:
 * the wait times out and the task waits for a later get or the shutdown -
 * the same rule at every thread count. With no deadline the entry points
 * call a get instead.
 *
 * Parked fibers. f may run on a fiber of this thread that an earlier get
 * parked (the caller is a task on a fiber above it), or wait, through a
 * chain of gets, for one; such a fiber goes on only at this thread's
 * scheduling points, and this wait is one (park.c). So it resumes a parked
 * fiber whose wait is over - never one that only yielded (park.c, Order of
 * resumption) - parking until f is done or the deadline passes, and looks
 * again when it gets the thread back. That fiber's run up to its next
 * scheduling point is the one way a wait inside a task can be late; plain
 * code (an outermost call) has no parked fibers.
 *
 * Deadlock freedom: it waits for nothing but its deadline. Cycles: it
 * publishes its wait and looks for a cycle before each sleep, like a get
 * (Deadlock), so a timed wait that closes a cycle of gets fails with
 * EDEADLK whatever its deadline - it could never succeed - and one whose f
 * runs below it on its own fiber fails at once.
 */
void sf__get_offer(struct sf__thread *me, uint64_t s)
{
    if (sf__pending_holds(&me->q, s)) {
        /* Ours, submitted by the caller: public now, so an idle worker may
         * take it without asking us - we will not get again before the
         * deadline. */
        if (sf__pending_publish(&me->q))
            sf__pool_notify();
        return;
    }
    if (sf__is_batch_task(s))
        return; /* batches are eager: the pool serves them already */
    struct sf__pending *q = sf__queue_of(s);
    /* Another thread's: ask it to publish, as a thief that found only
     * private tasks does (pending.h). Relaxed: a hint its next get reads. */
    sf__pending_ask_public(q);
    if (!(atomic_load_explicit(&q->want, memory_order_relaxed) & SF__WANT_PUBLISH))
        atomic_fetch_or_explicit(&q->want, SF__WANT_PUBLISH, memory_order_relaxed);
}

int sf__get_until(struct sf__thread *me, sf_future *f, uint64_t deadline_ns)
{
    struct slow_get w = {.me = me, .f = f, .nap = NAP_MIN_NS};
    struct sf__park_until until = {f, NULL, 0, deadline_ns};
    bool offered = false;
    int rc = 0;
    for (;;) {
        /* Acquire: DONE makes the runner's val visible. */
        uint64_t s = atomic_load_explicit(&f->state, memory_order_acquire);
        uint64_t st = sf__status(s);
        if (st == SF__DONE)
            break;
        if (st != SF__PENDING && ((st != SF__RUNNING && st != SF__WAITING) ||
                                  (s & SF__ORPHAN))) {
            rc = EINVAL; /* released before this wait */
            break;
        }
        /* Relaxed: compared only with our own fiber, whose pointer only this
         * thread stores as a runner (run.h) - an equal value is our store. */
        if (st == SF__RUNNING &&
            __atomic_load_n(&f->runner, __ATOMIC_RELAXED) == (void *)sf__sched(me)->fiber) {
            rc = EDEADLK; /* f encloses this wait: it cannot end first */
            break;
        }
        if (st == SF__PENDING && !offered) {
            offered = true;
            sf__get_offer(me, s);
        }
        /* A continuation not started, and no worker to run the ready ones:
         * this wait runs them (after.h), or nobody would. Relaxed: as
         * sf__pool.workers is read everywhere. */
        if (st == SF__WAITING && atomic_load_explicit(&sf__pool.workers, memory_order_relaxed) == 0 &&
            sf__get_run_ready(me)) {
            backoff_reset(&w);
            continue;
        }
        if (!w.blocked) {
            w.blocked = true;
            SF__BUMP(sf__sched(me)->c_blocked);
        }
        uint64_t now = sf__now_ns();
        if (now >= deadline_ns) {
            rc = ETIMEDOUT;
            break;
        }
        answer_thieves(me);
        /* Parked fibers (above): one whose wait is over runs until its next
         * scheduling point, then this wait goes on. */
        if (sf__park_any(me) && sf__park_resume_done(me, &until)) {
            backoff_reset(&w);
            continue;
        }
        /* The idle hook (idle_hook.h), as in spin_yield_sleep: not a task,
         * and it does not wait (sf.h), so the deadline holds. */
        int hook = sf__idle_poll();
        if (hook == SF__HOOK_PROGRESS) {
            backoff_reset(&w);
            continue;
        }
        if (w.rounds < SPIN_ROUNDS) {
            w.rounds++;
            for (int i = 0; i < 16; i++)
                sf__pause();
            continue;
        }
        if (st == SF__RUNNING) {
            if (!w.published) {
                w.published = true;
                w.outer_wait = begin_wait(me, f);
            }
            if (closes_cycle(me, f, &w.watch)) {
                rc = EDEADLK;
                break;
            }
        }
        long nap = w.nap;
        if (sf__park_any(me) && nap > SF__PARKED_NAP_NS)
            nap = SF__PARKED_NAP_NS;
        if (hook == SF__HOOK_WAITING && nap > SF__HOOK_NAP_NS)
            nap = SF__HOOK_NAP_NS;
        if ((uint64_t)nap > deadline_ns - now)
            nap = (long)(deadline_ns - now);
        /* Relaxed, both: our own flag, a snapshot for the shutdown's sweep,
         * which compares two looks (promise.c). */
        atomic_store_explicit(&sf__sched(me)->timed_sleep, 1, memory_order_relaxed);
        sleep_on(me, f, nap);
        atomic_store_explicit(&sf__sched(me)->timed_sleep, 0, memory_order_relaxed);
        w.nap = w.nap * 2 > NAP_MAX_NS ? NAP_MAX_NS : w.nap * 2;
    }
    if (w.published)
        end_wait(me, w.outer_wait);
    if (w.watch.prev != NULL) /* a timed wait calls no allocator before it sleeps */
        free(w.watch.prev);
    return rc;
}
