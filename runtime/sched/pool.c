/*
 * pool.c - the pool of workers and its cap.
 *
 * The pool is fixed: threads - 1 workers started with the runtime, so at most
 * `threads` threads run tasks at once counting the one that gets (plus any
 * threads the program itself runs). That fixed size is the soft cap of
 * Sonic Field's scheduler: a submitted task goes to a worker only if one is
 * idle; when all are busy it stays in its submitter's queue and runs in the
 * thread that gets it (direct execution) or in a blocked getter that helps.
 * The pool never grows, so there is no slack to bound: busy <= workers.
 *
 * An idle worker takes only submitted tasks (SF__STEAL_SUBMITTED): laziness
 * means a task nobody got yet never starts on its own. Ready continuations
 * (after.h) and batch tasks are submitted when they become runnable (the
 * eager ways in): an idle worker serves the ready list first, then the
 * batches, round-robin, then the thread queues. It looks for work for
 * a short while, then sleeps on idle_seq; a get that submits new tasks wakes
 * one sleeper (sf__pool_notify).
 */
#include "sched/pool.h"
#include "sched/after.h"
#include "sched/idle_hook.h"
#include "sched/light.h"
#include "sched/park.h"
#include "sched/run.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define IDLE_SPINS 128          /* scans before an idle worker sleeps (see idle_spins) */
#define IDLE_NAP_NS 100000000L  /* belt and braces: rescan every 100 ms */
#define TAKE_SCAN 256           /* slots looked at per queue */

/* Scans an idle worker makes before it sleeps. Spinning trades a core for a
 * quicker start of the next submitted task; with more threads than cores
 * that core belongs to a thread with work, so idle workers sleep at once
 * (one scan, then the sleep protocol's rescan). Set by sf__pool_configure. */
static unsigned idle_spins = IDLE_SPINS;

/* Claims a task for an idle worker: the next batch task in round-robin
 * order (batch.h, Fairness) - batches are served before thread queues, one
 * task at a time, so a batch that arrives gets its share at the next take -
 * else a submitted task from some thread's queue, starting at a random one.
 * force: after spinning in vain, private submitted tasks too. *from is the
 * queue's thread id, SF__NO_THREAD_ID for a batch task. */
static sf_future *find_submitted(struct sf__thread *me, bool force, uint64_t *claimed,
                                 int *from, bool *light)
{
    *light = false;
    /* Ready continuations first: each waited for its deps, and a
     * pipeline's latency is theirs (after.h). */
    sf_future *b = sf__after_take(me, claimed);
    if (b != NULL) {
        *from = sf__tag_thread(*claimed); /* its maker's, as the trace names it */
        return b;
    }
    b = sf__batch_take(claimed);
    if (b != NULL) {
        *from = SF__NO_THREAD_ID;
        return b;
    }
    int n = sf__registry_count();
    unsigned flags = SF__STEAL_SUBMITTED | (force ? SF__STEAL_PRIVATE : 0);
    /* Relaxed: set once, before a wake-up of every worker (sf__pool_drain). */
    if (SF__UNLIKELY(atomic_load_explicit(&sf__pool.draining, memory_order_relaxed)))
        flags = SF__STEAL_PRIVATE;
    SF__BUMP(sf__sched(me)->c_steal_tries);
    for (int k = 0, i = (int)(sf__thread_rand(me) % (unsigned)n); k < n;
         k++, i = i + 1 == n ? 0 : i + 1) {
        struct sf__thread *v = sf__registry_get(i);
        /* Any region: an idle worker has no frame for a closed region's
         * work to depend on (future.h). */
        sf_future *f = sf__pending_steal(&v->q, flags, SF__REGION_ANY, TAKE_SCAN, claimed);
        if (f != NULL) {
            *from = v->id;
            return f;
        }
    }
    /* Light tasks: shared ones, and the owners of others asked to share. */
    b = sf__light_take(me, SF__REGION_ANY, claimed, from);
    if (b != NULL) {
        *light = true;
        return b;
    }
    SF__BUMP(sf__sched(me)->c_steal_fails);
    return NULL;
}

static void run_taken(struct sf__thread *me, sf_future *f, uint64_t claimed, int from)
{
    if (SF__UNLIKELY(sf__pool_past_deadline())) { /* claimed after it: not started */
        sf__pool_shed(me, f, claimed);
        return;
    }
    /* Relaxed: busy and peak_busy are statistics and the drain's "quiet"
     * test, which rescans anyway; nothing is ordered by them. */
    int b = atomic_fetch_add_explicit(&sf__pool.busy, 1, memory_order_relaxed) + 1;
    int p = atomic_load_explicit(&sf__pool.peak_busy, memory_order_relaxed);
    while (b > p && !atomic_compare_exchange_weak_explicit(&sf__pool.peak_busy, &p, b,
                                                           memory_order_relaxed,
                                                           memory_order_relaxed))
        ;
    SF__TRACE(me, TAKE, claimed, from);
    sf__run_claimed(me, f, claimed, SF__HOW_POOL);
    atomic_fetch_sub_explicit(&sf__pool.busy, 1, memory_order_relaxed);
}

/* Relaxed updates of idle_workers: a hint to submitters (sf__pool_has_idle). */
static void set_idle(bool *idle, bool now)
{
    if (*idle != now)
        atomic_fetch_add_explicit(&sf__pool.idle_workers, now ? 1 : -1, memory_order_relaxed);
    *idle = now;
}

/* Searching: a worker is awake and not running a task. One that takes a
 * task, and saw more submitted after it, hands the search on to a sleeper
 * if nobody else searches: sf__pool_notify skipped the wake while we
 * searched. Without more work in sight it wakes nobody, since a sleeper
 * woken for nothing costs a heavy fence (sf__pool_notify). Relaxed: the
 * counts are ordered where it matters by the fences of the sleep protocol;
 * here a stale one costs one wake too many, or one too few that a later
 * notify or the sleepers' timed rescan makes up for - never a lost task,
 * since every task also runs in the thread that gets it. A stolen light task
 * always hands on: it is fork-join work that spawns at once, so each thief
 * wakes the next and a light run reaches n workers in about log2(n) wakes,
 * not n (light.h). */
static void hand_on(int from, uint64_t claimed, bool light)
{
    if (atomic_load_explicit(&sf__pool.searching, memory_order_relaxed) == 0 &&
        atomic_load_explicit(&sf__pool.idle_sleepers, memory_order_relaxed) > 0 &&
        (light || sf__after_maybe_ready() ||
         (from == SF__NO_THREAD_ID ? sf__batch_maybe_pending()
                                   : sf__pending_more_submitted(&sf__registry_get(from)->q,
                                                                claimed))))
        sf__pool_wake_one();
}

static void stop_searching(void)
{
    atomic_fetch_sub_explicit(&sf__pool.searching, 1, memory_order_relaxed);
}

static void start_searching(void)
{
    atomic_fetch_add_explicit(&sf__pool.searching, 1, memory_order_relaxed);
}

/* A worker inside its start hook: a refused sf_shutdown() says so (lifecycle.c). */
static __thread bool in_start_hook;

bool sf__pool_in_start_hook(void) { return in_start_hook; }

/* A worker registered, before it runs a task or counts as started (so
 * sf_init() returns after this): its name, then the program's hook
 * (docs/threads.md). */
static void worker_start(struct sf__thread *me)
{
    sf__thread_name("sf-worker-", me->id);
    if (sf__pool.on_thread_start != NULL) {
        in_start_hook = true;
        sf__pool.on_thread_start(me->id, sf__pool.start_ctx);
        in_start_hook = false;
    }
}

static void *worker_main(void *arg)
{
    (void)arg;
    sf__call_begin_for_life();
    struct sf__thread *me = sf__thread_register(true, sf__pool.stack_size);
    if (me != NULL)
        worker_start(me);
    /* Release: sf__pool_start reads the counts (acquire) before it reports
     * the pool. */
    if (me == NULL) /* no struct: this worker never runs, the rest still do */
        atomic_fetch_add_explicit(&sf__pool.unregistered, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sf__pool.started, 1, memory_order_release);
    sf__futex_wake((uint32_t *)&sf__pool.started, 1);
    if (me == NULL)
        return NULL;
    unsigned spins = 0;
    long hook_nap = SF__HOOK_NAP_MIN_NS; /* the next nap for the idle hook */
    bool idle = false;
    uint64_t claimed;
    int from;
    start_searching();
    /* Acquire: pairs with the release store of stop in sf__pool_stop. */
    while (!atomic_load_explicit(&sf__pool.stop, memory_order_acquire)) {
        /* A worker's own tasks (queued by the tasks it ran) wait for a get
         * of it; publish them when a thief asks. */
        if (sf__pending_poll(&me->q))
            sf__pool_notify();
        /* Between tasks, a parked fiber whose future is done goes on
         * first; this loop, yielding, goes on after it (park.c). */
        if (sf__park_any(me))
            (void)sf__park_resume_ready(me, NULL);
        bool light;
        sf_future *f = find_submitted(me, false, &claimed, &from, &light);
        if (f != NULL) {
            set_idle(&idle, false);
            stop_searching();
            hand_on(from, claimed, light);
            run_taken(me, f, claimed, from);
            start_searching();
            spins = 0;
            continue;
        }
        set_idle(&idle, true);
        /* The idle hook between looks (idle_hook.h): progress outside may
         * have made work, so look again at once. */
        int hook = sf__idle_poll();
        if (hook == SF__HOOK_PROGRESS) {
            spins = 0;
            hook_nap = SF__HOOK_NAP_MIN_NS;
            continue;
        }
        if (++spins < idle_spins) {
            for (int i = 0; i < 32; i++)
                sf__pause();
            continue;
        }
        /* Going to sleep: Dekker with sf__pool_notify. We raise
         * idle_sleepers, read idle_seq, heavy fence, rescan; a submitter
         * makes its work visible (a batch adder: `queued`, batch.h), light
         * fence, reads idle_sleepers and bumps idle_seq. Either our rescan finds its tasks, or it sees us and its
         * bump makes the futex wait below return. Relaxed: ordered by the
         * heavy fence. */
        atomic_fetch_sub_explicit(&sf__pool.searching, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&sf__pool.idle_sleepers, 1, memory_order_relaxed);
        uint32_t seen = atomic_load_explicit(&sf__pool.idle_seq, memory_order_relaxed);
        sf__fence_heavy();
        f = find_submitted(me, true, &claimed, &from, &light);
        bool napper = false;
        /* Acquire: as the loop's test of stop. */
        if (f == NULL && !atomic_load_explicit(&sf__pool.stop, memory_order_acquire)) {
            SF__TRACE(me, IDLE, 0, 0);
            SF__BUMP(sf__sched(me)->c_idle_sleeps);
            if (sf__trace_on)
                sf__trace_flush(me); /* a sleeping thread's lines should be readable */
            /* With fibers parked, look at them again soon: their futures
             * complete without waking us. */
            long nap = sf__park_any(me) ? SF__PARKED_NAP_NS : IDLE_NAP_NS;
            /* The idle hook waits for outside events: one sleeping worker
             * calls it again after each nap, the naps doubling up to
             * SF__HOOK_NAP_NS; the others sleep as ever. Relaxed: a flag
             * that only picks that worker; two at once would cost naps. */
            if (hook == SF__HOOK_WAITING &&
                atomic_load_explicit(&sf__idle_hook.napper, memory_order_relaxed) == 0 &&
                atomic_exchange_explicit(&sf__idle_hook.napper, 1, memory_order_relaxed) == 0) {
                napper = true;
                nap = nap < hook_nap ? nap : hook_nap;
                hook_nap = hook_nap * 2 > SF__HOOK_NAP_NS ? SF__HOOK_NAP_NS : hook_nap * 2;
            }
            sf__futex_wait(&sf__pool.idle_seq, seen, nap);
            if (napper)
                atomic_store_explicit(&sf__idle_hook.napper, 0, memory_order_relaxed);
        }
        atomic_fetch_sub_explicit(&sf__pool.idle_sleepers, 1, memory_order_relaxed);
        /* After a nap for the hook, one look and one call before the next
         * nap, not a spin: the pool is idle, only the outside is awaited. */
        spins = napper ? idle_spins : 0;
        if (f != NULL) {
            set_idle(&idle, false);
            hand_on(from, claimed, light); /* not searching since the sleep protocol */
            run_taken(me, f, claimed, from);
        }
        start_searching();
    }
    stop_searching();
    set_idle(&idle, false);
    sf__park_drain(me); /* its fibers end with it */
    return NULL;
}

bool sf__pool_drain(void)
{
    /* Relaxed: written under the lifecycle lock, which the stopping thread
     * took (after the start) to enter STOPPING (pool.h). */
    if (atomic_load_explicit(&sf__pool.workers, memory_order_relaxed) == 0)
        return false;
    atomic_store_explicit(&sf__pool.draining, 1, memory_order_relaxed);
    /* Relaxed: the futex wake orders nothing; woken workers rescan. */
    atomic_fetch_add_explicit(&sf__pool.idle_seq, 1, memory_order_relaxed);
    sf__futex_wake(&sf__pool.idle_seq, INT_MAX);
    for (;;) {
        bool pending = sf__batch_maybe_pending() || sf__after_maybe_ready() ||
                       atomic_load_explicit(&sf__after_live, memory_order_relaxed) != 0;
        for (int i = 0, n = sf__registry_count(); i < n && !pending; i++)
            pending = sf__pending_has_pending(&sf__registry_get(i)->q);
        /* Relaxed: rechecked until both are quiet at once. */
        if (!pending && atomic_load_explicit(&sf__pool.busy, memory_order_relaxed) == 0)
            break;
        sf__futex_wake(&sf__pool.idle_seq, INT_MAX);
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    atomic_store_explicit(&sf__pool.draining, 0, memory_order_relaxed);
    return true;
}

void sf__pool_set_deadline(uint64_t deadline_ns)
{
    /* Relaxed, both: see pool.h; the shutdown thread reads shed after
     * joining every worker, and the join orders their additions. */
    atomic_store_explicit(&sf__pool.shed, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__pool.deadline, deadline_ns, memory_order_relaxed);
}

void sf__pool_shed(struct sf__thread *me, sf_future *f, uint64_t claimed)
{
    sf__run_cancelled(me, f, claimed);
    /* Relaxed: a count, read by the shutdown thread once every shedder is
     * joined or has returned to it (lifecycle.c). */
    atomic_fetch_add_explicit(&sf__pool.shed, 1, memory_order_relaxed);
}

void sf__pool_configure(int workers, size_t stack_size,
                        void (*on_thread_start)(int index, void *ctx), void *ctx)
{
    sf__pool.on_thread_start = on_thread_start;
    sf__pool.start_ctx = ctx;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    bool oversubscribed = cpus > 0 && workers + 1 > cpus;
    idle_spins = oversubscribed ? 1 : IDLE_SPINS;
    sf__pool.wake_below = oversubscribed ? (int)cpus : INT_MAX;
    sf__pool.stack_size = stack_size;
}

int sf__pool_start(int workers, int *err)
{
    /* Relaxed: see pool.h. */
    atomic_store_explicit(&sf__pool.workers, 0, memory_order_relaxed);
    sf__pool.nstarted = 0;
    *err = 0;
    /* Relaxed: no worker exists yet; pthread_create publishes these. */
    atomic_store_explicit(&sf__pool.stop, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__pool.busy, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__pool.peak_busy, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__pool.idle_sleepers, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__pool.searching, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__pool.idle_workers, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__pool.started, 0, memory_order_relaxed);
    atomic_store_explicit(&sf__pool.unregistered, 0, memory_order_relaxed);
    sf__pool_set_deadline(0);
    if (workers == 0)
        return 0;
    sf__pool.tids = calloc((size_t)workers, sizeof *sf__pool.tids);
    pthread_attr_t attr;
    if (sf__pool.tids == NULL || pthread_attr_init(&attr) != 0) {
        *err = ENOMEM;
        return 0;
    }
    pthread_attr_setstacksize(&attr, sf__pool.stack_size);
    /* The first failure ends the loop: the cause (no memory for a stack, a
     * thread limit) would fail the next ones too. */
    while (sf__pool.nstarted < workers &&
           (*err = pthread_create(&sf__pool.tids[sf__pool.nstarted], &attr, worker_main,
                                  NULL)) == 0)
        sf__pool.nstarted++;
    pthread_attr_destroy(&attr);
    /* Count only the workers that registered: one that found no memory
     * for its struct ended at once (it is joined at stop like the rest). */
    int n;
    while ((n = atomic_load_explicit(&sf__pool.started, memory_order_acquire)) <
           sf__pool.nstarted)
        sf__futex_wait((uint32_t *)&sf__pool.started, (uint32_t)n, 1000000L);
    int lost = atomic_load_explicit(&sf__pool.unregistered, memory_order_relaxed);
    if (lost > 0 && *err == 0)
        *err = ENOMEM;
    int running = sf__pool.nstarted - lost;
    /* Relaxed: see pool.h. */
    atomic_store_explicit(&sf__pool.workers, running, memory_order_relaxed);
    return running;
}

void sf__pool_after_fork(void)
{
    /* The parent's tids array leaks in the child: it is the parent's. */
    sf__pool.tids = NULL;
    sf__pool.nstarted = 0;
    atomic_store_explicit(&sf__pool.workers, 0, memory_order_relaxed);
}

void sf__pool_stop(void)
{
    /* Release: pairs with the workers' acquire load of stop. */
    atomic_store_explicit(&sf__pool.stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&sf__pool.idle_seq, 1, memory_order_relaxed);
    sf__futex_wake(&sf__pool.idle_seq, INT_MAX);
    for (int i = 0; i < sf__pool.nstarted; i++)
        pthread_join(sf__pool.tids[i], NULL);
    sf__pool.nstarted = 0;
    free(sf__pool.tids);
    sf__pool.tids = NULL;
}
