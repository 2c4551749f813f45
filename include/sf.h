/*
 * sf.h - libsf, a lazy work-stealing task runtime for C11.
 *
 * sf_do() queues a closure as a task and returns its future; nothing runs
 * yet. sf_get() submits the calling thread's queued tasks and returns the
 * task's result: it runs the task itself if the task has not started, and
 * helps with other pending work while it runs elsewhere. The pool is fixed:
 * SF_THREADS - 1 workers, started with the runtime, which with a getting
 * thread make SF_THREADS threads running tasks. A submitted task that no idle
 * worker takes runs in the thread that gets it, so nested gets never need a
 * free worker. README.md has an example.
 *
 * Errors: a function that fails returns -1 or NULL and sets errno (listed at
 * each); the runtime stays usable after any failure.
 * Threads: every function is thread-safe and may be called from any thread;
 * none is async-signal-safe. sf_shutdown() is for when no other thread calls
 * libsf any more. "Real-time safe" marks the calls that allocate nothing,
 * take no lock and make no system call but a futex wake (docs/realtime.md).
 * Memory: what a thread wrote before sf_do(), sf_batch_do(), sf_do_after(),
 * sf_promise_set() or sf_promise_fail() is visible to the task or the
 * getters; what a task wrote, after a get or wait that says it is done, and
 * in its continuations (docs/waiting.md, What a wait makes visible).
 * Concepts (scheduling, waiting, loops, batches, failures, tasks in caller
 * storage, tracing, statistics, the debug build, lifecycle, limits, the
 * threads libsf starts): docs/.
 */
#ifndef SF_H
#define SF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SF_BUILDING_LIBRARY) && defined(__GNUC__)
#define SF_EXPORT __attribute__((visibility("default")))
#else
#define SF_EXPORT
#endif

/* The most threads SF_THREADS or sf_config.threads may ask for. */
#define SF_MAX_THREADS 1024

/* A handle on one task and its result. Opaque; obtained from sf_do(). */
typedef struct sf_future sf_future;

/* How sf_config.trace is chosen (docs/tracing.md). */
enum sf_trace_mode {
    SF_TRACE_FROM_ENV = 0, /* read SF_TRACE (the default of a zeroed config) */
    SF_TRACE_ON = 1,       /* the text trace, whatever SF_TRACE says */
    SF_TRACE_OFF = 2,      /* no trace, whatever SF_TRACE says */
    SF_TRACE_CHROME = 3    /* Chrome Trace Event Format JSON, whatever SF_TRACE says */
};

/* How sf_config.stats is chosen (docs/statistics.md). */
enum sf_stats_mode {
    SF_STATS_FROM_ENV = 0, /* read SF_STATS (the default of a zeroed config) */
    SF_STATS_ON = 1,       /* print the statistics table at shutdown */
    SF_STATS_OFF = 2       /* do not, whatever SF_STATS says */
};

/* Configuration for sf_init(). A zero field means its environment variable,
 * then the default (docs/scheduling.md, Environment). One variable has no
 * field: SF_HANG_REPORT=S (seconds; 0 off; default 10 in the debug build,
 * else off) prints, once per stall, what each waiting thread waits for - a
 * chain of futures and their tasks' functions - when a get, wait, batch
 * wait or sf_shutdown() has waited S seconds while no task started or ended
 * anywhere (docs/debug.md). */
typedef struct sf_config {
    /* Threads that run tasks at once, the getter included (pool: threads - 1).
     * 0..SF_MAX_THREADS; 0: SF_THREADS, else the CPUs this process may run
     * on (its affinity mask: taskset, mpiexec's binding, a cpuset). */
    int threads;
    /* enum sf_trace_mode. */
    int trace;
    /* Where the trace goes (truncated first). NULL: SF_TRACE_FILE, else stderr. */
    const char *trace_file;
    /* Bytes of stack of each pool worker, fiber and fresh stack of a deep chain
     * (docs/waiting.md). 0: 8 MiB. Valid: 0 or >= 64 KiB. */
    size_t stack_size;
    /* enum sf_stats_mode: print the per-thread table on stderr at sf_shutdown(). */
    int stats;
    /* Called once on each pool worker before it runs any task, with its
     * sf_thread_index() and ctx: to set flush-to-zero, priority or affinity.
     * Not on other threads (the caller of sf_init() included). sf_init()
     * returns after every call has returned. It may call libsf, but sf_init()
     * fails with EBUSY and sf_shutdown() is refused; it must not wait for what
     * follows sf_init(). NULL: none (docs/threads.md). */
    void (*on_thread_start)(int index, void *ctx);
    /* Passed to on_thread_start. */
    void *ctx;
} sf_config;

/* Starts the runtime, reading the environment once. Optional: the first call
 * that needs a runtime (sf_do() and the like) starts one from the environment.
 * cfg NULL: a zeroed sf_config; a field set in cfg wins over its variable,
 * which is then not read. Workers that cannot be created do not fail it: it
 * runs with those it got, down to none, and says so in one stderr line.
 * Returns 0, or -1 with errno: EINVAL (a cfg field out of range; nothing is
 * started), EBUSY (running already, an on_thread_start hook included, or
 * stopping: called from a task that sf_shutdown() runs), EAGAIN (no
 * thread-specific data key left), ENOMEM, or open(2)'s error (ENOENT,
 * EACCES, ...) for cfg->trace_file. */
SF_EXPORT int sf_init(const sf_config *cfg);

/* Stops the runtime: runs every pending sf_do() and sf_batch_do() task, reports
 * failures nobody saw to the unhandled-failure hook, joins the workers and frees
 * everything. Once the work left can go no further - every task left waits,
 * directly or through other tasks, on a promise nobody has set - it cancels
 * those promises (their getters see ECANCELED), so the tasks end and it returns
 * (docs/lifecycle.md, Promises nobody sets). A process that exits without it
 * still has its unseen failures reported and its Chrome trace closed, when no
 * other thread is inside libsf (docs/debug.md). Every future and sf_task is
 * invalid afterwards (through the next runtime a get of one fails with EINVAL);
 * the next sf_do() or sf_init() starts a fresh one. Call it from a thread that
 * runs no task once other threads have stopped calling libsf (calls in flight
 * are waited for). From a task, a hook or a signal handler it prints one stderr
 * line and does nothing; so it does, silently, when the runtime is not running
 * or already stopping (docs/lifecycle.md). */
SF_EXPORT void sf_shutdown(void);

/* sf_shutdown() with a deadline `seconds` from now: runs pending tasks until
 * then, then discards every task not started (its getters see ECANCELED; it
 * counts in sf_stats.cancelled), cancels every unset promise that a task or
 * a call waits on (at the deadline at the latest), waits for the running ones
 * and frees everything. 0 discards at once; more than 10^9 is no deadline. The
 * rules of sf_shutdown() hold (docs/lifecycle.md, Shutdown with a deadline).
 * Returns the number of tasks discarded (0 if the runtime is not running or
 * already stopping), or -1 with errno EINVAL (seconds negative or NaN) or
 * EDEADLK (called from a task, a hook or a signal handler; one stderr line). */
SF_EXPORT long sf_shutdown_timeout(double seconds);

/* Queues fn(arg) in the calling thread's pending queue and returns its future.
 * Nothing runs until a get of this thread submits it, or a get of its future
 * or a helping get claims it (docs/scheduling.md). Starts the runtime from
 * the environment if needed.
 * The caller owns one reference: drop it with sf_release(). A failed call
 * changes nothing. Returns the future, or NULL with errno EINVAL (fn is NULL),
 * ENOMEM (no memory for the future, its queue slot or this thread's state) or
 * EAGAIN (the implicit start failed, or 2^17 - 1 threads that use libsf are
 * alive and this one cannot register). */
SF_EXPORT sf_future *sf_do(void *(*fn)(void *), void *arg);

/* A continuation: fn(arg) runs on the pool once every one of deps[0..n) is
 * done - succeeded, failed or cancelled, promises included - without anyone's
 * get. Until then it holds no thread, stack or queue slot (docs/continuations.md).
 * n 0: runnable at once. A dep not started yet is submitted to the pool. Inside
 * fn a get of a dep returns at once. It holds its own reference to each dep:
 * the caller may release its handles at once (a dep not started still runs).
 * Its future is got, waited for, cancelled (before it starts: it never runs,
 * getters see ECANCELED) and released as sf_do()'s. Returns the future, or
 * NULL with errno EINVAL (fn NULL, n < 0, deps NULL with n > 0, a NULL or
 * released dep), ENOMEM or EAGAIN (as sf_do()). */
SF_EXPORT sf_future *sf_do_after(sf_future *const *deps, int n, void *(*fn)(void *), void *arg);

/* Returns fn(arg) of f's task. Submits this thread's pending tasks, runs f's
 * task here if it has not started, else helps with other work until it is done
 * (docs/waiting.md). Called from plain code (not inside a task), it helps only
 * with f's own work - f and the tasks made under it - so a thread that feeds
 * promises may wait too (docs/waiting.md, Plain code's waits). Any thread may get any future it holds, any number of
 * times, concurrently too: the task runs once and every get returns its value.
 * Returns NULL with errno on failure (set errno to 0 first to tell it from a
 * task that returned NULL):
 *   the task's sf_fail() code, or ECANCELED (it was cancelled);
 *   EINVAL   f is NULL, released, or from before a shutdown or a fork;
 *   EDEADLK  this get closes a cycle of gets (docs/failures.md);
 *   EAGAIN   this thread cannot register (as sf_do()), the implicit start
 *            failed, or the stack is nearly full and no fresh one can be had;
 *   ENOMEM   no memory to register this thread or for a fresh stack.
 * On EAGAIN and ENOMEM this get neither runs nor waits for the task.
 * Real-time safe when f is done (docs/realtime.md). */
SF_EXPORT void *sf_get(sf_future *f);

/* sf_get() that helps only with f's own work: f and the tasks it makes, on any
 * thread (oneTBB's this_task_arena::isolate); if f runs elsewhere and belongs
 * to no such region, it waits without helping. For a get made while holding a
 * lock, or one that must not wait for an unrelated long task (docs/waiting.md,
 * Isolation). Result, errors and deadlock freedom as sf_get(). */
SF_EXPORT void *sf_get_isolated(sf_future *f);

/* Returns 1 if the future's task has finished (sf_get() would not run or wait
 * for anything), 0 if not, -1 with errno EINVAL if f is NULL or released (or
 * invalid: from before a shutdown or a fork). Never runs anything. A 1 makes
 * what the task wrote visible, as a get would. Real-time safe. */
SF_EXPORT int sf_is_done(const sf_future *f);

/* Drops the caller's reference. A future released before its task started is
 * discarded: the task never runs. One released while its task runs is freed
 * when the task ends. Release once, after every sf_get() on it has returned;
 * the handle is invalid afterwards. NULL is ignored. */
SF_EXPORT void sf_release(sf_future *f);

/* A task kept in storage the caller provides, usually a local variable: no
 * heap, nothing to release. Only the thread that made it may get it, and it
 * must before the storage goes away or is reused and before sf_shutdown(). It
 * is not an sf_future: sf_release(), sf_cancel() and the other sf_future
 * functions do not take it (docs/caller-storage.md). */
typedef struct sf_task {
    void *sf_opaque_[8]; /* 64 bytes, pointer-aligned; never touch */
} sf_task;

/* Queues fn(arg) in t, like sf_do() (it starts the runtime if needed). t must
 * not hold a task still queued (made and not yet got); it is overwritten.
 * Returns 0, or -1 with errno (t then holds no task) EINVAL (t or fn is NULL),
 * ENOMEM or EAGAIN (as sf_do()). */
SF_EXPORT int sf_task_do(sf_task *t, void *(*fn)(void *), void *arg);

/* Returns fn(arg) of t's task as sf_get() does: the same fast path, helping
 * and errors. Afterwards t holds no queued task (its storage may go), and
 * further calls return the same result. A failed or cancelled task gives NULL
 * with errno its code, its message in sf_task_error_message(). Also fails with:
 *   EPERM    t was made by another thread;
 *   EINVAL   t is NULL or holds no task;
 *   EDEADLK  t's task is running on this thread, enclosing this get;
 *   ENOMEM   t's task had to move into a future (a deep chain) and no memory
 *            was left for it: it is dropped, never run. */
SF_EXPORT void *sf_task_get(sf_task *t);

/* The message of this thread's last failing sf_task_get(), sf_for(),
 * sf_for_range() or sf_reduce() (sf_fail()'s text), or NULL if it had none or none failed.
 * Valid until this thread's next such failure, or its exit. */
SF_EXPORT const char *sf_task_error_message(void);

/* ---- Light tasks: fork-join synced in LIFO order (docs/light.md). ---- */

/* The version of sf_light.h's layout, which programs compile in (ENOTSUP). */
#define SF_LIGHT_ABI 2

/* One stack's deque of light tasks, handed to every light task. */
typedef struct sf_worker sf_worker;
/* A light task's function: w is the deque it may spawn on. */
typedef void *(*sf_light_fn)(sf_worker *w, void *arg);
struct sf_light_slot; /* sf_light.h: a deque's slot and struct sf_worker */

/* Runs fn(w, arg) as a light run on the calling thread (plain code or any
 * task) and returns its value, or NULL with errno: its first failure's code
 * (message: sf_task_error_message()), EINVAL (fn NULL), ENOTSUP (a program
 * compiled against another SF_LIGHT_ABI), EAGAIN or ENOMEM (as sf_do()). */
SF_EXPORT void *sf_light_run(int abi, sf_light_fn fn, void *arg);
static inline void *sf_light(sf_light_fn fn, void *arg)
{
    return sf_light_run(SF_LIGHT_ABI, fn, arg);
}

/* The spawns' and syncs' way into libsf: the slow sync returns the synced slot,
 * its value in u (zero if not run) until the next spawn; run: the sync's kind. */
SF_EXPORT void sf_spawn_slow(sf_worker *w, const struct sf_light_slot *t);
SF_EXPORT struct sf_light_slot *sf_sync_slow(sf_worker *w,
                                             void (*run)(sf_worker *, struct sf_light_slot *));
#include "sf_light.h" /* typed tasks' machinery; the spawns' slow cases */

/* Spawns fn(arg) on w, the worker handed to the caller; fn gets the worker of
 * the stack that runs it. Never fails: past the deque's room it runs at once. */
static inline void sf_spawn(sf_worker *w, sf_light_fn fn, void *arg)
{
    struct sf_light_slot *t = w->head;
    /* Relaxed: a thief's ask (a lowered limit) is a hint (deque.h). */
    if (__builtin_expect(t >= __atomic_load_n(&w->limit, __ATOMIC_RELAXED), 0)) {
        sf_spawn_cold_(w, fn, arg);
        return;
    }
    t->run = 0;
    t->u.call.fn = fn;
    t->u.call.arg = arg;
    w->head = t + 1;
}

/* The value of w's newest task not yet synced: run here unless stolen, else
 * waited for as sf_get() waits. Sync each spawn once, before returning. */
static inline void *sf_sync(sf_worker *w)
{
    struct sf_light_slot *t = w->head - 1;
    if (__builtin_expect(t < w->split, 0))
        return sf_sync_slow(w, 0)->u.value;
    w->head = t;
    return t->u.call.fn(w, t->u.call.arg);
}

/* Typed light tasks (sf_light.h), at file scope: SF_LIGHT_TASK(R, name, T1,
 * a1, ...) of 1 to 6 parameters declares `static R name(sf_worker *w, T1 a1,
 * ...)` for the program to define; the arguments, together, and R each take
 * at most SF_LIGHT_BYTES, by value in the deque, and the inline sync calls
 * name. SF_SPAWN and SF_SYNC are sf_spawn() and sf_sync() for it;
 * SF_LIGHT_RUN(name, a1, ..., &value) is its sf_light(), 0 or -1 with errno.
 * SF_LIGHT_VOID_TASK(name, T1, a1, ...): no value; SF_LIGHT_RUN(name, a1, ...). */
#define SF_SPAWN(w, name, ...) name##_sf_spawn_((w), __VA_ARGS__)
#define SF_SYNC(w, name) name##_sf_sync_(w)
#define SF_LIGHT_RUN(name, ...) name##_sf_light_(__VA_ARGS__)

/* Runs body(i, ctx) for every i in [from, to) exactly once, in parallel, and
 * returns when all have returned; from == to does nothing. Works at any
 * SF_THREADS, in tasks and nested in loops: the calling thread can run the
 * whole loop itself, as it does when memory for the loop's bookkeeping lacks.
 * A body's sf_fail() fails the loop: no index starts after it (docs/loops.md).
 * Returns 0, or -1 with errno the first failing body's code (once the bodies
 * running then have returned; message: sf_task_error_message()), EINVAL (body
 * NULL, or to < from), EAGAIN or ENOMEM (this thread cannot register; nothing
 * runs), or EDEADLK (a participant is in a cycle of gets through the caller's
 * frames; not every index has run). */
SF_EXPORT int sf_for(long from, long to, void (*body)(long i, void *ctx), void *ctx);

/* sf_for() whose body takes disjoint sub-ranges [lo, hi) that together cover
 * [from, to), each at most `grain` indices (0: libsf's choice, about 1/64 of a
 * participant's share). For indices too cheap to pay a call each.
 * Returns as sf_for(); also EINVAL for grain < 0. */
SF_EXPORT int sf_for_range(long from, long to, long grain,
                           void (*body)(long lo, long hi, void *ctx), void *ctx);

/* A deterministic parallel reduce over [from, to) (docs/loops.md, Reduce):
 * chunks of `grain` indices from `from` (the last may be shorter), whatever
 * the thread count; each chunk's accumulator starts as a copy of identity
 * (size bytes) and leaf(lo, hi, acc, ctx) adds the chunk to it; they are
 * joined as the balanced tree R(c0,c1) = c1-c0 == 1 ? chunk c0 :
 * join(R(c0,m), R(m,c1)), m = c0 + (c1-c0)/2, join(acc, right, ctx) adding
 * right into acc; *result gets the root (a copy of identity if from == to),
 * so the bits are the same at every SF_THREADS. Works where sf_for() does; a
 * leaf's or join's sf_fail() fails the reduce as a body's fails a loop.
 * Returns 0, or -1 with errno (*result untouched) EINVAL (from > to,
 * grain < 1, size 0, result, identity or a function NULL), ENOMEM, ECANCELED
 * (the task running it was cancelled: leaves stopped) or as sf_for(). */
SF_EXPORT int sf_reduce(long from, long to, long grain, void *result, const void *identity,
                        size_t size, void (*leaf)(long lo, long hi, void *acc, void *ctx),
                        void (*join)(void *acc, const void *right, void *ctx), void *ctx);

/* Inside a task: marks it failed with `code` (> 0: an errno value or the
 * program's own) and a printf-style message (fmt NULL: none; at most 1023
 * bytes kept); the task then returns as usual, its value ignored. Inside a
 * loop's body it fails the loop instead, in a light task its run. The first
 * failure stands (docs/failures.md).
 * Returns 0, or -1 with errno EINVAL (code <= 0, or neither in a task nor in
 * a loop's body), EALREADY (it failed already) or ENOMEM (no memory for the
 * message: it still fails, without one). */
SF_EXPORT int sf_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The message of a failed future (sf_fail()'s), or NULL if it has none, has
 * not failed, or f is NULL. Valid until f is released. Counts as seeing the
 * failure (it is then not reported as unhandled). Real-time safe. */
SF_EXPORT const char *sf_error_message(const sf_future *f);

/* Sets the hook that receives every failure nobody saw: hook(code, message,
 * ctx), message possibly NULL, runs in the thread that releases the future (or
 * ends its task, released while it ran) or calls sf_shutdown(). NULL
 * restores the default (one stderr line). Holds for the life of the process;
 * without memory for it the previous hook stays.
 * The hook may make and get tasks, but not shut libsf down (docs/failures.md). */
SF_EXPORT void sf_on_unhandled(void (*hook)(int code, const char *message, void *ctx),
                               void *ctx);

/* Cancels f's task. One not started never runs: f is done, its getters see
 * ECANCELED. A running one is asked to stop, and so, while it runs, is every
 * task it made, transitively (sf_do, sf_task_do; not a batch's tasks) and
 * every body of its loops on every thread: sf_cancelled() returns 1 in them,
 * those not started never run (their getters see ECANCELED), its loops stop
 * (ECANCELED). A task that asked ends cancelled (its getters see ECANCELED);
 * one that never asked keeps its result. The caller still releases f
 * (docs/failures.md, Cancellation).
 * Returns 0 if cancelled or asked to stop, 1 if already done, or -1 with errno
 * EINVAL (f is NULL or released). Real-time safe for a promise. */
SF_EXPORT int sf_cancel(sf_future *f);

/* Inside a task: 1 if it or a task above it (its maker, transitively) was
 * cancelled and still runs, else 0. It should stop early: it then ends
 * cancelled (its getters see ECANCELED). In a loop's body, 1 stops the loop
 * instead (it returns -1/ECANCELED); in a light task, also 1 once its run
 * failed. Outside a task: 0. */
SF_EXPORT int sf_cancelled(void);

/* sf_get() with the outcome as the return value: 0, with the task's result
 * stored in *result if result is not NULL; else the error, *result untouched:
 * the task's sf_fail() code, ECANCELED, EDEADLK, EINVAL, EAGAIN or ENOMEM, as
 * sf_get() sets them. Real-time safe when f is done. */
SF_EXPORT int sf_wait(sf_future *f, void **result);

/* Timed waits (docs/waiting.md, Timed waits and wait-any). seconds: 0 polls;
 * 10^9 or more, or INFINITY, is no deadline; negative or NaN fails with
 * EINVAL. With a deadline they never run a task on the calling thread: a
 * task nobody started is offered to the pool, so at SF_THREADS=1 it waits
 * for a later get or the shutdown. One exception: with no pool worker, a
 * timed wait on a continuation not started runs ready continuations, which
 * nobody else would (docs/continuations.md). They return by the deadline plus one
 * wake-up, or, inside a task, once a fiber of this thread that an earlier
 * get parked, and whose wait is over, has run until it waits again or
 * ends. With no deadline sf_wait_for() and sf_wait_all() wait as sf_wait()
 * does, and sf_wait_any() runs tasks nobody started. With 0 seconds they are
 * real-time safe: on done futures from any thread, else from a thread that
 * called libsf before (docs/realtime.md). */

/* sf_wait() with a deadline `seconds` from the call: 0 (the result stored in
 * *result if result is not NULL) or the task's outcome code as sf_wait()
 * gives them, or ETIMEDOUT when f is not done by then: f stays valid, its
 * task goes on, and a later wait sees its outcome. It submits this thread's
 * pending tasks; f's task, if nobody started it, is left to the pool (above).
 * Also EINVAL (f NULL or released; seconds negative or NaN) and, whatever
 * the deadline, EDEADLK: f's task encloses this wait on this thread, or the
 * wait closes a cycle of gets (as sf_get()). Counted in sf_stats.timeouts. */
SF_EXPORT int sf_wait_for(sf_future *f, void **result, double seconds);

/* Waits until one of fs[0 .. n) is done and stores in *which the lowest index
 * among those done when it looks. One done already: returns at once, running
 * nothing. Otherwise it submits this thread's pending tasks and, while none is
 * done, with no deadline runs the lowest-index task nobody has started
 * (claimed as sf_get() would), then looks again; with a deadline it runs
 * none (above). With only running ones left it sleeps on all of them: a completion wakes it within a wake-up (Linux 5.16's futex_waitv, up
 * to 128 futures not done), else within 1 ms. Returns 0, ETIMEDOUT, EINVAL
 * (fs or which NULL, n < 1, a NULL or released entry, seconds negative or
 * NaN), EDEADLK (every future not done runs below this wait on this thread),
 * or EAGAIN, ENOMEM (as sf_get(), running one). The deadlock detector does
 * not follow it: a cycle of waits through it hangs, or times out. */
SF_EXPORT int sf_wait_any(sf_future *const *fs, int n, double seconds, int *which);

/* Waits until every one of fs[0..n) is done (finished, failed or
 * cancelled: their outcomes are left to sf_wait or sf_get). Returns 0, or
 * ETIMEDOUT when some are not done after `seconds` (they go on), EDEADLK
 * when one could never finish first (a cycle of gets), or EINVAL: fs NULL
 * with n > 0, n < 0, an entry NULL or released, seconds negative or NaN.
 * The rules of sf_wait_for: with a deadline it runs no task here; with
 * none (INFINITY) it waits as sf_wait does for each. n = 0 returns 0. */
SF_EXPORT int sf_wait_all(sf_future *const *fs, int n, double seconds);

/* Promises (docs/pipelines.md; docs/failures.md, Promises): futures with no
 * task, completed by sf_promise_set() or sf_promise_fail() from any thread,
 * one that never otherwise calls libsf included. Every call on futures takes
 * them; a get of an unset one helps, then sleeps, and never fails with
 * EDEADLK; sf_cancel() completes an unset one at once (ECANCELED); and
 * sf_shutdown() does not wait for unset ones: it cancels those that tasks
 * still wait on once nothing else can run (their getters see ECANCELED), and
 * every handle becomes invalid. */

/* A new unset promise; starts the runtime if needed. The caller holds it as a
 * future from sf_do() and releases it; its setter's call needs no more
 * (sf_promise_set()).
 * Returns it, or NULL with errno ENOMEM or EAGAIN (as sf_do()). */
SF_EXPORT sf_future *sf_promise(void);

/* Completes promise p with value: its getters return it. Real-time safe from
 * any thread: it allocates nothing, takes no lock, makes no system call but a
 * futex wake and registers no thread (with SF_TRACE on, it writes one trace
 * line), so an audio callback may call it (docs/realtime.md). One call per
 * promise is the setter's, valid whatever p's holder did: a promise released
 * before it is completed, or cancelled before this call, waits for this call
 * (which frees a released one). Returns 0, or -1 with errno EALREADY (already
 * set or failed), ECANCELED (sf_cancel() came first: its getters saw ECANCELED) or EINVAL (p
 * is NULL, not a promise, completed and released, or from before a shutdown
 * or a fork). */
SF_EXPORT int sf_promise_set(sf_future *p, void *value);

/* Completes promise p as failed with `code` (> 0) and a printf-style message
 * (fmt NULL: none), as sf_fail() fails a task: getters see the code and
 * sf_error_message() the message, and a failure nobody saw goes to the
 * unhandled-failure hook (run by this call if p was released before). As
 * sf_promise_set(), except that it allocates the message: with fmt NULL it
 * allocates nothing and is real-time safe, unless p was released before (the
 * hook then runs here). Returns 0, or -1 with errno as sf_promise_set(),
 * EINVAL also for code <= 0, or ENOMEM (no memory for the message: p still
 * fails, without one). */
SF_EXPORT int sf_promise_fail(sf_future *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A fair batch: a group of tasks submitted as they are added (eager, unlike
 * sf_do()), which idle workers serve round-robin against other batches,
 * before any plain task. Its tasks are ordinary futures (docs/batches.md). */
typedef struct sf_batch sf_batch;

/* A new, empty, open batch; starts the runtime if needed. Valid until
 * sf_batch_close() (sf_shutdown() frees batches never closed). Returns it, or
 * NULL with errno ENOMEM or EAGAIN (16,384 batches are open, or as sf_do()). */
SF_EXPORT sf_batch *sf_batch_new(void);

/* Adds fn(arg) to b and submits it at once: an idle worker may start it before
 * anyone gets it. The caller owns the future and releases it (before it
 * started: it never runs). Any thread may add, tasks included. A failed add
 * leaves b as it was. Returns the future, or NULL with errno EINVAL
 * (b or fn is NULL), EPIPE (b is closed; only b's running tasks may still call
 * this), ENOMEM or EAGAIN (as sf_do()). */
SF_EXPORT sf_future *sf_batch_do(sf_batch *b, void *(*fn)(void *), void *arg);

/* Waits until no task of b is unfinished, those added meanwhile included; the
 * calling thread runs b's pending tasks itself (only b's), so it returns at
 * any SF_THREADS. Does not close b; do not call it with or after
 * sf_batch_close(b). Returns 0, or -1 with errno EINVAL (b is NULL), EDEADLK
 * (this thread runs a task of b, directly or below a get) or EAGAIN, ENOMEM
 * (this thread cannot register, as sf_get()). */
SF_EXPORT int sf_batch_wait(sf_batch *b);

/* sf_batch_wait() with a deadline (Timed waits, above): it runs none of b's
 * tasks itself - the pool does - unless seconds is no deadline. Returns 0, or
 * -1 with errno ETIMEDOUT (a task of b is not done by the deadline; they go
 * on) or sf_batch_wait()'s errors (EINVAL also for seconds negative or NaN). */
SF_EXPORT int sf_batch_wait_for(sf_batch *b, double seconds);

/* Closes b: later adds fail with EPIPE; its pending tasks still run, and it
 * frees itself once none is unfinished. The handle is invalid afterwards
 * except to b's running tasks; the futures stay valid. NULL is ignored. Close
 * a batch once. */
SF_EXPORT void sf_batch_close(sf_batch *b);

/* The idle hook's poll (docs/idle-hook.md): > 0 progress; 0 none, it waits
 * for outside events (MPI, sockets); < 0 it waits for nothing. */
typedef int (*sf_idle_fn)(void *ctx);

/* Installs poll(ctx) as the idle hook; wakes sleeping workers to call it.
 * Idle workers, and gets and waits of every kind, call it between looks and
 * before sleeping, one call at a time (a thread that finds it running goes
 * on); while it returns >= 0, one worker and each waiting get call it at
 * least every 1 ms. poll must not block, wait or call sf_on_idle(); it may
 * complete promises. poll NULL removes it, returning once no call runs.
 * It stays across sf_shutdown() and fork(). Returns 0, or -1 with errno
 * EBUSY (poll not NULL, one installed) or EDEADLK (called from the hook). */
SF_EXPORT int sf_on_idle(sf_idle_fn poll, void *ctx);

/* Counters since sf_init(), summed over every thread (docs/statistics.md). */
typedef struct sf_stats {
    int threads;             /* the configured thread count (SF_THREADS) */
    int workers;             /* pool workers running: threads - 1, or fewer (sf_init) */
    int peak_busy;           /* most pool workers busy with a task at once */
    uint64_t created;        /* tasks made (sf_do, sf_task_do, sf_batch_do) */
    uint64_t run_inline;     /* tasks run by a get of their own future */
    uint64_t run_pool;       /* submitted tasks taken by an idle pool worker */
    uint64_t run_stolen;     /* tasks run by a helping get, or by sf_batch_wait() */
    uint64_t discarded;      /* tasks released before they started */
    uint64_t cancelled;      /* tasks cancelled before they started */
    uint64_t gets_blocked;   /* gets that found their task running elsewhere */
    uint64_t sleeps;         /* times a blocked get slept with nothing to run */
    uint64_t fresh_stacks;   /* gets that ran their task on a fresh stack */
    uint64_t parks;          /* times a stack parked while its thread ran others */
    uint64_t resumes;        /* times a parked stack went on */
    uint64_t queued;         /* tasks made and not yet started, released or cancelled */
    int asleep;              /* threads asleep in a get now (the trace's Asleep) */
    uint64_t timeouts;       /* timed waits that returned ETIMEDOUT (sf_wait_for & co.) */
    uint64_t promises;       /* promises made (sf_promise); in no count above */
} sf_stats;

/* Fills *out: each counter a recent value while tasks run, exact once every
 * thread is quiet, when created == run_inline + run_pool + run_stolen +
 * discarded + cancelled + queued. Returns 0, or -1 with errno EINVAL (out is
 * NULL) or ESRCH (the runtime is not running). */
SF_EXPORT int sf_stats_read(sf_stats *out);

/* One thread's counters (sf_stats_read_threads). A thread that exits leaves
 * its id, and its counts, which go on, to the next thread that registers. */
typedef struct sf_thread_stats {
    int id;                  /* the thread's id: the trace's Thread column */
    int is_worker;           /* 1: a pool worker; 0: a thread of the program */
    int asleep;              /* 1 while asleep in a get, now */
    uint64_t created;        /* tasks it made */
    uint64_t executed;       /* tasks it ran: the four below */
    uint64_t run_inline;     /* ... by a get of their own future */
    uint64_t run_pool;       /* ... taken as an idle pool worker */
    uint64_t run_stolen;     /* ... by a helping get, or by sf_batch_wait() */
    uint64_t run_drained;    /* ... by sf_shutdown()'s drain (in no sf_stats field) */
    uint64_t discarded;      /* tasks it released before they started */
    uint64_t cancelled;      /* tasks it cancelled before they started (sf_cancel,
                              * or discarded past sf_shutdown_timeout's deadline) */
    uint64_t gets_blocked;   /* its gets that found their task running elsewhere */
    uint64_t steals_tried;   /* scans of other threads' queues for a task */
    uint64_t steals_failed;  /* ... of which found nothing */
    uint64_t sleeps;         /* its blocked gets' sleeps (sf_stats.sleeps) */
    uint64_t idle_sleeps;    /* a worker's sleeps for want of submitted work */
    uint64_t fresh_stacks;   /* its gets that moved to a fresh stack */
    uint64_t parks;          /* its stacks' parks (sf_stats.parks) */
    uint64_t resumes;        /* ... and resumes */
    uint64_t busy_ns;        /* wall-clock time in its outermost tasks, nesting included,
                              * less its sleeps in them (asleep_ns) */
    uint64_t avg_task_ns;    /* busy_ns / executed (0 if none) */
    uint64_t timeouts;       /* its timed waits that returned ETIMEDOUT (sf_stats.timeouts) */
    uint64_t promises;       /* promises it made (sf_promise) */
    uint64_t asleep_ns;      /* time asleep in its gets' and waits' sleeps, in tasks or not */
    uint64_t cpu_ns;         /* CPU time of its thread since it registered (its own code's
                              * too), and of the earlier threads of this id */
} sf_thread_stats;

/* Fills rows[0 .. min(n, max) - 1] in id order and returns n, the number of
 * threads with a row: every worker and every thread that made, ran, released,
 * cancelled or waited for a task. max 0 (rows may be NULL) just counts. On a
 * quiet runtime the rows sum to sf_stats_read()'s counters. Costs no lock.
 * Returns n, or -1 with errno EINVAL (max < 0, or rows NULL with max > 0) or
 * ESRCH (not running). */
SF_EXPORT int sf_stats_read_threads(sf_thread_stats *rows, int max);

/* The calling thread's index in [0, sf_thread_count()): unique among the live
 * threads that use libsf (pool workers included), the same for the thread's
 * whole life in this runtime - across gets and parks - and the id of
 * sf_thread_stats and the trace. An exited thread's index goes to a later
 * thread, which sees what the old one wrote. Registers the thread (and starts
 * the runtime) as sf_do() would. Returns it, or -1 with errno EAGAIN or ENOMEM. */
SF_EXPORT int sf_thread_index(void);

/* Indices handed out in this runtime so far: above every live thread's, and
 * the caller's; grows only until sf_shutdown(), and stays near the peak of live
 * threads. Per-thread scratch sized by it: docs/scheduling.md. Registers the
 * caller as sf_thread_index(). Returns it, or -1 with errno EAGAIN or ENOMEM. */
SF_EXPORT int sf_thread_count(void);

#ifdef __cplusplus
}
#endif

#endif /* SF_H */
