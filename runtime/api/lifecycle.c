/*
 * lifecycle.c - starting and stopping the runtime, and its counters.
 *
 * Start: sf_init() or, implicitly, the first call of a thread that needs a
 * thread struct (sf__enter). Both go through start_runtime() under the life lock, so
 * concurrent first calls start one runtime.
 *
 * Stop: sf_shutdown() marks the runtime STOPPING under the life lock, then
 * drains every task still pending and joins the pool with no lock held:
 * drained tasks and workers' last tasks may call any libsf function, and
 * sf_init/sf_shutdown among them must answer (EBUSY, a stderr line) instead
 * of blocking on a lock the stopping thread holds. Only the final frees run
 * under the lock again; bumping the registry's generation makes every
 * thread's cached struct stale, so a later call registers afresh in a new
 * runtime.
 */
#include "api/lifecycle.h"
#include "sched/after.h"
#include "sched/get.h"
#include "sched/idle_hook.h"
#include "sched/light.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/config.h"
#include "api/stats.h"

/* Rank LIFE (debug.h): the outermost lock; the registry's may be taken under
 * it (the starter registers). Held only by start and stop, never while a
 * task runs. */
static struct sf__lock life = SF__LOCK_INITIALIZER(SF__RANK_LIFE, "life");
/* enum sf__life. Written under `life`. */
static _Atomic int state;
static int threads_cfg;
/* SF_STATS: print the statistics table at shutdown. Written at start under
 * `life`, read by the stopping thread, which took `life` after it. */
static bool stats_cfg;
/* This process is a child forked from one that used libsf: its runtimes do
 * not trace to SF_TRACE_FILE, the parent's trace file (opening it would
 * truncate the parent's trace); stderr or an sf_config file are fine. */
static bool fork_child;

/*
 * The watch (lifecycle.h). Started by the shutdown once promise.c has handed
 * over its sweep - or by that handing over, if it comes during a shutdown (a
 * drained task made the process's first promise) - and ended, joined,
 * after the last drain, before anything is freed: it reads the registry
 * and the slabs. A thread of its own because the threads that could look -
 * the stopping one, the workers - may all be inside gets that wait for the
 * very promises it cancels. No watch thread (pthread_create failed): the
 * shutdown goes on without one, and waits for promises as any get does.
 */
#define WATCH_TICK_NS 10000000L /* 10 ms between two sweeps */

/* promise.c's sweep, set once for the process. */
static void (*sweeper)(void **st, const struct sf__thread *stopper, uint64_t deadline_ns,
                       bool last);

static struct {
    /* 1 from the shutdown's set-up to its last drain: a sweep handed over
     * then starts the watch. seq_cst, as `sweeper`'s store and load: a
     * Dekker pair (below), so that either the shutdown sees the sweep or
     * the handing over sees the shutdown. */
    _Atomic int armed;
    /* A watch thread runs (CAS 0 -> 1 by whoever starts it). */
    _Atomic int started;
    _Atomic uint32_t stop; /* 1: the watch ends (a futex word) */
    pthread_t thread;
    /* What the sweeps are told, written before `armed` is set. */
    const struct sf__thread *stopper;
    uint64_t deadline_ns;
} watch;

static void *watch_main(void *arg)
{
    (void)arg;
    sf__thread_name("sf-shutdown", -1); /* docs/threads.md */
    /* Acquire: pairs with the store in sf__lifecycle_sweeper (the pointer
     * is all it publishes; whoever started us read it non-NULL). */
    void (*sweep)(void **, const struct sf__thread *, uint64_t, bool) =
        __atomic_load_n(&sweeper, __ATOMIC_ACQUIRE);
    void *st = NULL;
    /* Relaxed, each: `stop` only ends the loop; the join orders what we did
     * before the shutdown frees anything. */
    while (atomic_load_explicit(&watch.stop, memory_order_relaxed) == 0) {
        sf__futex_wait(&watch.stop, 0, WATCH_TICK_NS);
        if (atomic_load_explicit(&watch.stop, memory_order_relaxed) != 0)
            break;
        sweep(&st, watch.stopper, watch.deadline_ns, false);
    }
    sweep(&st, NULL, 0, true);
    return NULL;
}

/* Starts the watch thread unless one runs. */
static void watch_start(void)
{
    int none = 0;
    /* Relaxed: the CAS only elects the starter; the thread's creation
     * orders the fields it reads (written before `armed`, which the
     * starter read). */
    if (!atomic_compare_exchange_strong_explicit(&watch.started, &none, 1,
                                                 memory_order_relaxed, memory_order_relaxed))
        return;
    if (pthread_create(&watch.thread, NULL, watch_main, NULL) != 0)
        /* Relaxed: a later start may try again; nobody joins meanwhile. */
        atomic_store_explicit(&watch.started, 0, memory_order_relaxed);
}

void sf__lifecycle_sweeper(void (*sweep)(void **st, const struct sf__thread *stopper,
                                         uint64_t deadline_ns, bool last))
{
    /* seq_cst, with the load of `armed` after it: the pair above. */
    __atomic_store_n(&sweeper, sweep, __ATOMIC_SEQ_CST);
    if (atomic_load_explicit(&watch.armed, memory_order_seq_cst))
        watch_start();
}

/* The shutdown's set-up is done (its thread's struct known, its deadline
 * set): the watch may start. */
static void watch_begin(const struct sf__thread *stopper, uint64_t deadline_ns)
{
    watch.stopper = stopper;
    watch.deadline_ns = deadline_ns;
    /* Relaxed: no watch thread runs now (the last shutdown joined it). */
    atomic_store_explicit(&watch.stop, 0, memory_order_relaxed);
    /* seq_cst, with the load of `sweeper` after it: the pair above. */
    atomic_store_explicit(&watch.armed, 1, memory_order_seq_cst);
    if (__atomic_load_n(&sweeper, __ATOMIC_SEQ_CST) != NULL)
        watch_start();
}

/* After the last drain: no task runs and no other thread is inside libsf
 * (the pool joined, the registry closed), so nobody starts the watch any
 * more; it ends and is joined. */
static void watch_end(void)
{
    /* Relaxed: nobody reads it any more (every sweep was handed over by a
     * task or a call that has ended). */
    atomic_store_explicit(&watch.armed, 0, memory_order_relaxed);
    /* Relaxed: the thread's loop only ends on it; the join orders. */
    atomic_store_explicit(&watch.stop, 1, memory_order_relaxed);
    sf__futex_wake(&watch.stop, INT_MAX);
    /* Relaxed: whoever set it ran before the pool's join or the registry's
     * close, which ordered it before us. */
    if (atomic_load_explicit(&watch.started, memory_order_relaxed)) {
        pthread_join(watch.thread, NULL);
        atomic_store_explicit(&watch.started, 0, memory_order_relaxed);
    }
}

/* A thread that used libsf exits: nobody will answer a request for its
 * private tasks any more, so make them all public now (blocked getters and
 * idle workers can then help with them), write its trace lines, and add
 * its CPU time to its row. */
static void on_thread_exit(struct sf__thread *t)
{
#ifdef SF_DEBUG
    /* Every frame of the thread is gone: a marked slot left in its queue is
     * an sf_task it never got (sf.h). Named before the trim below, which
     * would read through it. */
    sf_future *left = sf__pending_local_left(&t->q);
    if (left != NULL)
        sf__misuse("thread %d exits with an sf_task (%p) never got", t->id, (void *)left);
#endif
    sf__pending_trim_top(&t->q, UINT64_MAX);
    if (sf__pending_publish(&t->q))
        sf__pool_notify();
    if (sf__trace_on)
        sf__trace_flush(t);
    /* No fiber of it is parked (an outermost call drains them before it
     * returns, park.c): their stacks go with it. */
    sf__park_release(t);
    /* Its CPU time stays in its row, read from its clock until now. */
    sf__thread_cpu_stop(t);
    /* Nobody asks this thread for a message any more (sf.h). */
    free(sf__entry(t)->task_msg);
    sf__entry(t)->task_msg = NULL;
}

/* Frees every thread's struct, with what each layer's part holds. Nobody
 * may use them any more. */
static void destroy_threads(void)
{
    for (int i = 0, n = sf__registry_count(); i < n; i++)
        free(sf__entry(sf__registry_get(i))->task_msg);
    sf__threads_free();
    sf__registry_destroy();
}

static int open_trace(struct sf__cfg *c)
{
    if (!c->trace)
        return 0;
    if (sf__trace_open(c->trace_file, c->trace == SF_TRACE_CHROME) == 0)
        return 0;
    int err = errno;
    if (!c->trace_file_from_env) { /* an sf_config path: the caller's error */
        errno = err;
        return -1;
    }
    fprintf(stderr, "libsf: SF_TRACE_FILE='%s' cannot be opened (%s); tracing to stderr\n",
            c->trace_file, strerror(err));
    return sf__trace_open(NULL, c->trace == SF_TRACE_CHROME);
}

/*
 * fork(): the child has one thread, the forking one, and a copy of memory in
 * which the parent's runtime may be in any state, its locks held or not.
 * The child forgets that runtime - its futures are invalid, its memory copy
 * leaks - and its next libsf call starts a fresh one. A fork from inside a
 * task leaves the child in that task's frames: POSIX lets such a child only
 * exec or _exit, and so does libsf (docs/limits.md).
 */
static void fork_child_reset(void)
{
    sf__lock_init(&life, SF__RANK_LIFE, "life");
    /* Relaxed: the child has one thread. */
    atomic_store_explicit(&state, SF__DOWN, memory_order_relaxed);
    fork_child = true;
    /* A watch thread of the parent's is not in the child. */
    atomic_store_explicit(&watch.armed, 0, memory_order_relaxed);
    atomic_store_explicit(&watch.started, 0, memory_order_relaxed);
    sf__pool_after_fork();
    sf__idle_hook_after_fork();
    sf__batch_after_fork();
    sf__after_reset();
    sf__cancel_after_fork();
    sf__trace_after_fork();
    sf__registry_after_fork();
    sf__futures_after_fork();
    sf__platform_after_fork();
}

static void register_fork_handler(void) { pthread_atfork(NULL, NULL, fork_child_reset); }

/* Called with `life` held and the runtime DOWN. Frees c's strings. */
static int start_runtime(struct sf__cfg *c)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handler);
    if (fork_child && c->trace && c->trace_file_from_env) {
        fprintf(stderr, "libsf: SF_TRACE_FILE='%s' is the parent's trace; this forked child "
                        "does not trace\n", c->trace_file);
        c->trace = false;
    }
    sf__platform_init();
    int rc = open_trace(c), err = errno;
    free(c->trace_file);
    c->trace_file = NULL;
    if (rc != 0) {
        errno = err;
        return -1;
    }
    /* The one upward callback of the runtime (runtime/LAYERS, its upward slot):
     * a thread's exit reaches libsf only through the pthread key that the
     * registry (layer 3) sets when a thread registers. Threads register
     * from layer 4 (sf__thread_register: pool workers and fresh stacks
     * there, callers through lifecycle.c), so the key cannot live above
     * the pool that registers its workers; and what an exit does - publish
     * the thread's queue, wake the pool, flush its trace, free its fibers
     * and its last message - is layers 2 to 5's, put together here, above
     * them all. */
    if (sf__registry_init(SF__UPPER_BYTES, on_thread_exit) != 0) {
        if (sf__trace_on)
            sf__trace_close();
        return -1;
    }
    threads_cfg = c->threads;
    sf__hang_start(c->hang_s); /* before any worker exists (hang.h) */
    stats_cfg = c->stats;
    sf__pool_configure(c->threads - 1, c->stack_size, c->on_thread_start, c->ctx);
    /* Release: a thread that sees UP (acquire, sf__enter_slow) sees the
     * configuration above. */
    atomic_store_explicit(&state, SF__UP, memory_order_release);
    struct sf__thread *me = sf__thread_register(false, 0); /* the starter is thread 0 */
    if (me != NULL && sf__trace_on) {
        sf__trace_restart_clock(); /* Time 0.000 is the Init line */
        sf__trace_event(me, SF__EV_INIT, (uint64_t)c->threads, (uint64_t)(c->threads - 1));
    }
    if (me == NULL) {
        err = errno;
        /* Relaxed: no thread can have used the runtime (we hold `life`,
         * every worker is joined); a later start reads it under `life`. */
        atomic_store_explicit(&state, SF__DOWN, memory_order_relaxed);
        if (sf__trace_on)
            sf__trace_close();
        destroy_threads();
        sf__futures_free_all();
        errno = err;
        return -1;
    }
    int want = c->threads - 1, got = sf__pool_start(want, &err);
    if (got < want)
        /* Degrade, do not fail: fewer workers only means less parallelism;
         * every task can still run in the thread that gets it. */
        fprintf(stderr, "libsf: started %d of %d pool workers (%s); running with %d\n", got,
                want, strerror(err), got);
    return 0;
}

SF_EXPORT int sf_init(const sf_config *cfg)
{
    struct sf__cfg c;
    if (sf__config_resolve(cfg, &c) != 0)
        return -1;
    if (sf__call_inside()) {
        /* A task, a hook: the runtime is up or stopping. Said without taking
         * `life`, which a start that waits for its workers' start hooks
         * holds (pool.c, worker_start). */
        free(c.trace_file);
        errno = EBUSY;
        return -1;
    }
    sf__lock(&life);
    int rc;
    /* Relaxed: state is written only under `life`, which we hold. */
    if (atomic_load_explicit(&state, memory_order_relaxed) != SF__DOWN) {
        /* Running, or stopping (sf_init from a task that sf_shutdown is
         * draining, or from a worker's last task). */
        free(c.trace_file);
        errno = EBUSY;
        rc = -1;
    } else {
        rc = start_runtime(&c);
    }
    sf__unlock(&life);
    return rc;
}

struct sf__thread *sf__enter_slow(void)
{
    SF__ASSERT(sf__call_inside(), "a thread registers inside a call (registry.h)");
    /* Acquire: pairs with start's release; the configuration is visible. */
    if (atomic_load_explicit(&state, memory_order_acquire) == SF__DOWN) {
        sf__lock(&life);
        int rc = 0;
        /* Relaxed: under `life`, state's only writer's lock. */
        if (atomic_load_explicit(&state, memory_order_relaxed) == SF__DOWN) {
            struct sf__cfg c;
            rc = sf__config_resolve(NULL, &c);
            if (rc == 0)
                rc = start_runtime(&c);
            if (rc != 0)
                errno = EAGAIN;
        }
        sf__unlock(&life);
        if (rc != 0)
            return NULL;
        struct sf__thread *me = sf__thread_self(); /* the starter registered in start */
        if (me != NULL)
            return me;
    }
    return sf__thread_register(false, 0);
}

/*
 * Thread indices (sf_thread_index, sf_thread_count) are the registry's ids,
 * which already have the contract sf.h promises: they are dense from 0 (a
 * new struct takes id nthreads, registry.c new_thread); a live thread keeps
 * its struct, so its id, until it exits or the runtime stops (a fiber never
 * leaves its thread, so neither does a parked task); a struct, with its id,
 * goes to a new thread only once its thread is dead (adoption, registry.c),
 * after mark_dead's release store that the adopter's acquire pairs with, so
 * the new holder of an index sees what the old one wrote; and an id is
 * made new only when no dead struct can be adopted, so the count is the
 * peak of live threads plus dead ones whose queues still held tasks.
 */
SF_EXPORT int sf_thread_index(void)
{
    SF__OUTERMOST("sf_thread_index", int, sf_thread_index());
    struct sf__thread *me = sf__enter();
    return me != NULL ? me->id : -1;
}

SF_EXPORT int sf_thread_count(void)
{
    SF__OUTERMOST("sf_thread_count", int, sf_thread_count());
    /* Registered first, so the caller's own index is below the count. */
    if (sf__enter() == NULL)
        return -1;
    return sf__registry_count();
}

/*
 * One pending task claimed from anywhere: this thread's queue (newest
 * first), then every thread's, private ones included, then the batches'
 * (open or closed). NULL: none was found in this pass (a running task may
 * queue more).
 *
 * The one place the drain and the discard find pending tasks: another
 * source of them plugs in here, as one more attempt before NULL.
 */
static sf_future *claim_pending(struct sf__thread *me, uint64_t *claimed)
{
    sf_future *f = sf__after_take(me, claimed);
    if (f == NULL)
        f = sf__pending_pop(&me->q, SF__REGION_ANY, claimed);
    for (int i = 0, nr = sf__registry_count(); f == NULL && i < nr; i++)
        f = sf__pending_steal(&sf__registry_get(i)->q, SF__STEAL_PRIVATE, SF__REGION_ANY, UINT64_MAX,
                              claimed);
    if (f == NULL)
        f = sf__batch_take(claimed);
    return f;
}

/*
 * Runs every task still pending anywhere until none is left and no worker is
 * busy (a running task may queue more). Past the pool's deadline
 * (sf_shutdown_timeout; pool.h) it discards what it claims instead of
 * running it - the check comes after the claim, so a task started here
 * started before the deadline - and keeps claiming until nothing is pending
 * and no worker runs a task, so tasks queued by the last running ones are
 * discarded too (or run by their maker's own get, which claims first).
 * Returns how many it ran.
 */
static unsigned long drain(struct sf__thread *me)
{
    unsigned long n = 0;
    for (;;) {
        uint64_t claimed;
        sf_future *f = claim_pending(me, &claimed);
        if (f != NULL) {
            if (SF__UNLIKELY(sf__pool_past_deadline())) {
                sf__pool_shed(me, f, claimed);
                continue;
            }
            sf__run_claimed(me, f, claimed, SF__HOW_DRAIN);
            n++;
            continue;
        }
        /* Relaxed: a worker is quiet once busy is 0 and nothing is pending;
         * the next loop rescans anyway, and the join in sf__pool_stop orders
         * everything the workers did before our frees. */
        if (atomic_load_explicit(&sf__pool.busy, memory_order_relaxed) == 0 &&
            atomic_load_explicit(&sf__after_live, memory_order_relaxed) == 0)
            return n;
        /* A busy worker may be waiting for a task parked on this thread (a
         * drained task's get helped with it): it goes on here (park.c). */
        if (!sf__park_any(me) || !sf__park_resume_ready(me, NULL))
            sched_yield();
        sf__hang_napped(me, SF__HANG_SHUTDOWN, NULL, 0); /* SF_HANG_REPORT (hang.h) */
    }
}

static void failure_at_shutdown(sf_future *f, uint64_t s)
{
    if (sf__status(s) != SF__DONE || !(s & SF__FAILED))
        return;
    if (!(s & SF__SEEN))
        /* Relaxed: every thread that wrote it was joined or synchronised
         * with us (sf.h: no calls race with sf_shutdown). */
        sf__failure_report((int)atomic_load_explicit(&f->fail_code, memory_order_relaxed), f->msg,
                           f->u.fn);
    free(f->msg);
    f->msg = NULL;
}

#ifdef SF_DEBUG
/* Debug build: an sf_task that t made is still queued, never got before
 * this shutdown (sf.h): named (`name`, the caller), without reading it. */
static void check_never_got(struct sf__thread *t, const char *name)
{
    sf_future *left = sf__pending_local_left(&t->q);
    if (left != NULL)
        sf__misuse("%s(): an sf_task (%p) was never got", name, (void *)left);
}
#endif

/* A shutdown called while this thread is inside a libsf call: from a task
 * or a pool worker, from an unhandled-failure hook, or from a signal
 * handler that interrupted a call. It would free what the interrupted call
 * still uses: refused, with one stderr line (`name` names the caller). */
static long refuse_reentrant(const char *name)
{
    struct sf__thread *me = sf__thread_self();
    if (sf__pool_in_start_hook()) {
        fprintf(stderr, "libsf: %s() called from an on_thread_start hook; ignored\n", name);
    } else if (me != NULL && (sf__sched(me)->cur != NULL || me->is_worker)) {
        fprintf(stderr, "libsf: %s() called from inside a task; ignored\n", name);
    } else if (sf__failure_in_hook()) {
        fprintf(stderr, "libsf: %s() called from an unhandled-failure hook; ignored\n", name);
    } else {
#ifdef SF_DEBUG
        sf__misuse("%s() called while this thread is inside a libsf call (a signal handler?): "
                   "no libsf function is async-signal-safe", name);
#else
        /* write(2), not stdio: this is most likely a signal handler. */
        static const char head[] = "libsf: ", tail[] =
            "() called while this thread is inside a libsf call (a signal handler?); ignored\n";
        ssize_t w = write(2, head, sizeof head - 1);
        w = write(2, name, strlen(name));
        w = write(2, tail, sizeof tail - 1);
        (void)w;
#endif
    }
    errno = EDEADLK;
    return -1;
}

/*
 * sf_shutdown and sf_shutdown_timeout: deadline_ns 0 is none. Returns the
 * tasks discarded past the deadline, or -1 with errno EDEADLK when called
 * from inside a libsf call (refuse_reentrant).
 *
 * Calls in flight on other threads (registry.h): a call that began before
 * the registry closes is waited for, and tasks it queued are run; one that
 * begins after it waits for the next runtime. Every call the program knows
 * to return before this one (sf.h) has returned by the close: the drain
 * and the join came first.
 */
static long stop(uint64_t deadline_ns, const char *name)
{
    if (sf__call_inside())
        return refuse_reentrant(name);
    sf__call_begin(name);
    sf__lock(&life);
    /* Relaxed, load and store: under `life`, which every writer holds;
     * readers outside it (sf__enter_slow, sf_stats_read) only tell DOWN from
     * not DOWN, and STOPPING publishes nothing. */
    if (atomic_load_explicit(&state, memory_order_relaxed) != SF__UP) {
        sf__unlock(&life); /* not running, or another shutdown is under way */
        sf__call_end();
        return 0;
    }
    atomic_store_explicit(&state, SF__STOPPING, memory_order_relaxed);
    sf__unlock(&life);
    /* Before anything is claimed: every claimer past the deadline sheds
     * (pool.h). */
    sf__pool_set_deadline(deadline_ns);
    /* No lock from here to the frees: tasks run. sf__enter registers this
     * thread if it never used libsf (the runtime is STOPPING, not DOWN, so it
     * starts nothing). */
    struct sf__thread *me = sf__enter();
#ifdef SF_DEBUG
    /* This thread runs no task (checked above), so none of its frames may
     * still own a queued sf_task: each is one it never got. Checked before
     * the drain, whose pop would run it - reading memory that may be gone. */
    if (me != NULL)
        check_never_got(me, name);
#endif
    /* From here until the last drain, unset promises that nothing can set
     * any more are cancelled (promise.c, Promises nobody can set). */
    watch_begin(me, deadline_ns);
    unsigned long drained = 0;
    if (me != NULL) {
        drained = drain(me);
        sf__park_drain(me);
    } else if (!sf__pool_drain())
        /* No struct for this thread and no worker to run what is pending:
         * say so rather than lose it quietly. */
        fprintf(stderr, "libsf: %s() could not register its thread (%s) and has no "
                        "worker: tasks still pending were not run\n",
                name, strerror(errno));
    sf__pool_stop();
    /* From here no other thread is inside libsf: calls in flight end first,
     * and no call begins. What they queued since the drain runs here. */
    sf__registry_close();
#ifdef SF_DEBUG
    /* Every task has ended, every worker is joined (each checked its own
     * queue as it exited) and no other thread is inside libsf: a marked
     * slot left anywhere now is an sf_task that a thread made and did not
     * get before this shutdown (sf.h). The drain's scans skipped it, never
     * reading it. */
    for (int i = 0, n = sf__registry_count(); i < n; i++)
        check_never_got(sf__registry_get(i), name);
#endif
    if (me != NULL) {
        drained += drain(me);
        sf__park_drain(me);
    }
    watch_end();
    /* Relaxed: every shedder was a worker (joined just now) or this thread,
     * or a getter whose call ended before the close (its release). */
    long shed = atomic_load_explicit(&sf__pool.shed, memory_order_relaxed);
    if (stats_cfg)
        sf__stats_print(threads_cfg); /* quiet now: every count is final */
    /* Failures nobody saw, on futures nobody released: reported now, with
     * no lock held (the hook is the program's code). */
    struct sf__futures_cursor walk = {0};
    uint64_t fs;
    for (sf_future *f; (f = sf__futures_next(&walk, &fs)) != NULL;)
        failure_at_shutdown(f, fs);
    if (sf__trace_on) {
        if (me != NULL)
            sf__trace_event(me, SF__EV_SHUTDOWN, drained, 0);
        sf__trace_close();
    }
    sf__lock(&life);
    sf__batch_free_all(); /* drained above; those never closed go now */
    sf__after_reset();    /* drained above: every continuation was taken */
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        sf__light_free(sf__registry_get(i)); /* every light run returned */
        sf__park_free(sf__registry_get(i)); /* nothing parked: every call drained */
    }
    destroy_threads();
    sf__futures_free_all();
    /* Relaxed: the next start reads it under `life`; sf__enter_slow's
     * acquire load only needs to see "not UP" to take the lock. */
    atomic_store_explicit(&state, SF__DOWN, memory_order_relaxed);
    /* DOWN first: a call that was waiting for the registry starts a fresh
     * runtime (under `life`, after we let it go). */
    sf__registry_reopen();
    sf__unlock(&life);
    sf__call_end();
    return shed;
}

SF_EXPORT void sf_shutdown(void)
{
    int saved = errno;
    (void)stop(0, "sf_shutdown");
    errno = saved;
}

/* Beyond this many seconds a deadline is none: it would not fit the clock's
 * 64 bits of nanoseconds safely, and no shutdown waits 30 years. */
#define FAR_SECONDS 1e9

SF_EXPORT long sf_shutdown_timeout(double seconds)
{
    if (!(seconds >= 0)) { /* negative, or NaN */
        errno = EINVAL;
        return -1;
    }
    uint64_t deadline = 0;
    if (seconds < FAR_SECONDS) {
        /* 0 seconds: the deadline is now, already past at the first claim
         * (a deadline of 0 would mean none, so at least 1). */
        deadline = sf__now_ns() + (uint64_t)(seconds * 1e9);
        if (deadline == 0)
            deadline = 1;
    }
    return stop(deadline, "sf_shutdown_timeout");
}

SF_EXPORT int sf_stats_read(sf_stats *out)
{
    if (out == NULL) {
        errno = EINVAL;
        return -1;
    }
    /* It reads every thread's struct (registry.h, Calls in flight). */
    SF__OUTERMOST("sf_stats_read", int, sf_stats_read(out));
    /* Acquire: pairs with start's release; threads_cfg and the pool are set. */
    if (atomic_load_explicit(&state, memory_order_acquire) == SF__DOWN) {
        errno = ESRCH;
        return -1;
    }
    sf__stats_sum(out);
    out->threads = threads_cfg;
    return 0;
}

SF_EXPORT int sf_stats_read_threads(sf_thread_stats *rows, int max)
{
    if (max < 0 || (rows == NULL && max > 0)) {
        errno = EINVAL;
        return -1;
    }
    SF__OUTERMOST("sf_stats_read_threads", int, sf_stats_read_threads(rows, max));
    /* Acquire: as in sf_stats_read. */
    if (atomic_load_explicit(&state, memory_order_acquire) == SF__DOWN) {
        errno = ESRCH;
        return -1;
    }
    return sf__stats_rows(rows, max);
}
