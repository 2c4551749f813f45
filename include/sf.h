/*
 * sf.h - libsf, a lazy work-stealing task runtime for C11.
 *
 * libsf brings Sonic Field's lazy scheduler to C. sf_do() wraps a closure in a
 * future and queues it in the calling thread's pending queue: nothing runs yet.
 * sf_get() submits the thread's pending tasks and returns the result, running
 * whatever it must meanwhile. A soft cap on busy pool workers makes tasks beyond
 * it run inline in the thread that needs them, so nested gets can never exhaust
 * the pool, and a get that would block runs other pending work instead of
 * sleeping.
 *
 *     static void *fib(void *arg) {
 *         long n = (long)arg;
 *         if (n < 2) return (void *)n;
 *         sf_future *a = sf_do(fib, (void *)(n - 1));   // queued, not run
 *         long b = (long)fib((void *)(n - 2));
 *         long r = (long)sf_get(a) + b;                  // dispatches, helps, waits
 *         sf_release(a);
 *         return (void *)r;
 *     }
 *
 * Threads. SF_THREADS (or sf_config.threads) is the number of threads that run
 * tasks at once, the thread calling sf_get included, counted the way oneTBB and
 * OpenMP count them: the pool has SF_THREADS - 1 workers. Any thread may call
 * any function here; a thread that is not a pool worker simply runs tasks
 * itself while it gets.
 *
 * Errors. Functions that can fail return -1 or NULL and set errno; the runtime
 * stays usable after any failure. Bad environment values are reported with one
 * line on stderr naming the variable, and the documented default is used.
 *
 * Thread safety. Every function is thread-safe. sf_shutdown() is meant for
 * when no other thread calls libsf any more; one that still does is waited
 * for or held off, never crashed (see there, and docs/lifecycle.md). No
 * function is async-signal-safe: do not call libsf from a signal handler.
 *
 * The fast path. A get of the calling thread's newest queued task - the
 * fork-join case - runs it with no atomic read-modify-write and no fence
 * instruction while the task is private to its thread. It stops being
 * private when the thread publishes it: at a get while a pool worker is
 * idle, when a worker or a blocked getter asks for work, at thread exit.
 * Then the claim is one compare-and-swap. Without membarrier(2) (Linux
 * < 4.14) each private claim and each completion also costs a fence. A task
 * in caller storage (sf_task_do()) is never published where it lies: its
 * thread moves it into a libsf future first ("Tasks in caller storage").
 *
 * Waiting (docs/waiting.md). A get whose task runs on another thread helps
 * instead of sleeping: it parks - its stack stays where it is, on its own
 * thread - and the thread runs other pending work on another of its stacks
 * (a fiber) meanwhile. Helping never makes a wait depend on the work
 * helped with, so a get fails with EDEADLK only when the program's own gets
 * form a cycle ("When things go wrong"): futures may be handed to any task
 * or thread and got with sf_get(). A parked get goes on once its task is
 * done, when its thread next waits or finishes a piece of work. A get
 * inside a task then returns, and work its thread took on meanwhile stays
 * parked on that thread until it can go on; a get called outside any task
 * returns only once that work has finished too, so no work stays parked on
 * a thread that has left libsf. A thread blocked outside libsf (a mutex, a
 * condition variable, a barrier) runs nothing: a task must not block that
 * way on something that needs other tasks, and a lock held across a get
 * calls for sf_get_isolated(). A thread parks at most 64 stacks; beyond, a
 * get sleeps without helping. Tasks never move between threads: TLS and
 * errno stay the thread's.
 *
 * Deep chains. A get runs a task that has not started in its own frame, so
 * a chain of nested gets nests as deep as the program recurses. When a get
 * finds its frame in the last quarter of its thread's stack, it runs the
 * task on a fresh stack instead: a fiber of its thread, or a new thread
 * when it has none left (either with the workers' stack size,
 * sf_config.stack_size), which gets the task while the caller waits. A
 * chain a million gets deep thus completes with the default settings, on
 * one thread or many (sf_stats.fresh_stacks counts the fresh stacks). If
 * neither can be had, the get goes on in place while a sixteenth of the
 * stack is left, and then fails with EAGAIN (ENOMEM if it was memory that
 * lacked) instead of overflowing.
 *
 * fork(). The child of a process that uses libsf starts with no runtime: its
 * first sf_do() (or sf_init()) starts a fresh one, from the environment,
 * with its own pool; the parent goes on unaffected. Futures and sf_tasks
 * made before the fork are invalid in the child: there a get, wait,
 * sf_is_done() or sf_cancel() of one fails with EINVAL and a release does
 * nothing, whatever the parent was doing with it (the debug build names
 * the first such use and aborts). The child does not trace to SF_TRACE_FILE, which is the parent's trace (one
 * line on stderr says so if tracing was asked for); stderr or an sf_config
 * trace_file of its own work. Fork from a thread that is not running a
 * task: a child forked inside a task may only exec or _exit, as POSIX
 * requires of the child of any multithreaded process.
 *
 * dlopen() and dlclose(). Once loaded, libsf stays loaded until the process
 * ends: dlclose() does not unload it (libsf.so is linked with -z nodelete),
 * since its pool workers run its code between tasks. Its runtime, workers
 * included, runs until sf_shutdown() or exit, and a later dlopen() gets the
 * same library with the runtime as it was. A plugin that uses libsf calls
 * sf_shutdown() before it is closed if it wants the workers gone.
 *
 * Debug build. Configured with --enable-debug, libsf checks itself: every
 * state transition, owner-only data, the order of its locks, uses of a
 * future after sf_release() or a second sf_release(), handles of a runtime
 * that is gone (before a shutdown, or a forked parent's), misused sf_tasks,
 * calls that come while sf_shutdown() frees the runtime and a shutdown from
 * a signal handler; a violation prints one line on stderr naming it
 * ("libsf: sf_get(0x...): the future was released (use after sf_release)")
 * and aborts. A release build never aborts.
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

/* How sf_config.trace is chosen. */
enum sf_trace_mode {
    SF_TRACE_FROM_ENV = 0, /* read SF_TRACE (the default of a zeroed config) */
    SF_TRACE_ON = 1,       /* trace, whatever SF_TRACE says */
    SF_TRACE_OFF = 2,      /* do not trace, whatever SF_TRACE says */
    SF_TRACE_CHROME = 3    /* trace as Chrome Trace Event Format JSON (Perfetto,
                            * chrome://tracing; docs/trace-format.md), whatever
                            * SF_TRACE says */
};

/* How sf_config.stats is chosen. */
enum sf_stats_mode {
    SF_STATS_FROM_ENV = 0, /* read SF_STATS (the default of a zeroed config) */
    SF_STATS_ON = 1,       /* print the statistics table at shutdown */
    SF_STATS_OFF = 2       /* do not, whatever SF_STATS says */
};

/*
 * Runtime configuration for sf_init(). A zero-initialised struct means "the
 * environment, then the defaults" for every field.
 */
typedef struct sf_config {
    /* Threads that run tasks at once, the getting thread included; the pool
     * gets threads - 1 workers. 0: SF_THREADS, else the number of online CPUs.
     * Valid: 0..SF_MAX_THREADS. */
    int threads;
    /* enum sf_trace_mode. */
    int trace;
    /* Where the trace goes. NULL: SF_TRACE_FILE, else stderr. The file is
     * truncated. */
    const char *trace_file;
    /* Stack size of each pool worker, of each fiber a thread parks work on
     * ("Waiting") and of each fresh stack of a deep chain ("Deep chains"), in
     * bytes. 0: 8 MiB. Valid: 0 or >= 64 KiB. */
    size_t stack_size;
    /* enum sf_stats_mode: print the per-thread statistics table
     * (sf_stats_read_threads) on stderr at sf_shutdown(). */
    int stats;
} sf_config;

/*
 * Starts the runtime: reads and validates the configuration and starts the
 * pool's workers. cfg NULL means a zeroed sf_config (environment, defaults).
 *
 * Environment, read once here (or at the first sf_do() when sf_init() was not
 * called):
 *   SF_THREADS     threads that run tasks at once, 1..SF_MAX_THREADS;
 *                  default the number of online CPUs.
 *   SF_TRACE       1/true/yes/on (the text trace), chrome (Chrome Trace
 *                  Event Format JSON, see docs/trace-format.md) or
 *                  0/false/no/off, any case; default 0.
 *   SF_TRACE_FILE  a path; the trace goes there instead of stderr.
 *   SF_STATS       1/true/yes/on or 0/false/no/off, any case; default 0. On,
 *                  sf_shutdown() prints the per-thread statistics table on
 *                  stderr (see sf_stats_read_threads).
 * A bad value prints one line on stderr naming the variable and what is used
 * instead; it never fails sf_init().
 *
 * A field set in cfg wins over its environment variable, which is then not
 * read at all (so not reported either).
 *
 * Workers that cannot be created (no memory for their stacks, a thread
 * limit) do not fail the start: the runtime runs with those it got, down to
 * none, when every task runs in the thread that gets it, and says so in one
 * line on stderr: "libsf: started 1 of 3 pool workers (<reason>); running
 * with 1". sf_stats_read() reports the workers running.
 *
 * Returns 0, or -1 with errno:
 *   EINVAL  a cfg field is out of range (nothing is started);
 *   ENOENT, EACCES, ...  cfg->trace_file cannot be opened (open(2)'s error);
 *   EBUSY   the runtime is already running (sf_do() starts it implicitly),
 *           or stopping (called from a task that sf_shutdown() runs);
 *   EAGAIN  no thread-specific data key is left for libsf (the process
 *           holds PTHREAD_KEYS_MAX of them);
 *   ENOMEM  out of memory.
 */
SF_EXPORT int sf_init(const sf_config *cfg);

/*
 * Stops the runtime. Every task that is still pending (queued by sf_do() or
 * sf_batch_do(), neither started nor released) is run to completion first, in the calling
 * thread with the workers' help, so no queued task is lost (if the calling
 * thread cannot register for want of memory, the workers run them, or with
 * no worker one stderr line says they were not run); failures nobody saw go
 * to the unhandled-failure hook; then the workers are joined and all memory
 * is returned to the system. Every future and sf_task handle is invalid
 * afterwards, released or not: the futures' memory stays mapped, reading as
 * released futures, and is not reused by the next runtime, so through it a
 * get of such a handle fails with EINVAL (as does an sf_task_get() of an
 * sf_task queued before). The next sf_do() or sf_init() starts a fresh
 * runtime.
 *
 * Call it from a thread that is not running a task, after every other thread
 * has stopped calling libsf. The tasks it runs, and the tasks pool workers
 * are still running, may call any function: no lock is held while they run;
 * sf_do() and sf_get() work as usual, sf_init() fails with EBUSY. If another
 * thread is still inside a libsf call, the shutdown waits for that call to
 * end before it frees anything, and runs what it queued; a call that begins
 * while the runtime is being freed waits, then starts the next runtime (the
 * debug build names such a call and aborts). Called from inside a task, an
 * unhandled-failure hook, or a signal handler that interrupted a libsf call,
 * it prints one line on stderr ("libsf: sf_shutdown() called from inside a
 * task; ignored", "... from an unhandled-failure hook; ignored", "... while
 * this thread is inside a libsf call (a signal handler?); ignored"; the
 * debug build aborts on the last) and does nothing. Does nothing when the
 * runtime is not running, or is already stopping.
 */
SF_EXPORT void sf_shutdown(void);

/*
 * sf_shutdown() with a deadline, `seconds` from now: runs pending tasks as
 * sf_shutdown() does until the deadline, then discards every task that has
 * not started - each completes as cancelled, so a get of it sees ECANCELED
 * (sf_wait returns ECANCELED), and counts in sf_stats.cancelled - waits for
 * the tasks that are running to end, joins the workers and frees
 * everything, as sf_shutdown(). Nothing is leaked, and no task runs once it
 * has returned. Prints the statistics table when asked to (SF_STATS).
 *
 * After the deadline no task starts any more: idle pool workers take
 * nothing, a get that waits helps with nothing, and a task that any claimer
 * (a worker, a helping get, a get of a task queued on another thread, the
 * shutdown itself) claims is discarded instead of run. The one exception
 * is the fork-join fast path, which never looks at the clock: a task that
 * still runs (it started before the deadline) and gets a task it queued
 * itself may run it - or see ECANCELED if the shutdown discarded it first.
 * So tasks that running tasks queue after the deadline are discarded,
 * unless their maker's own get claims them first; either way their makers'
 * gets return. A task whose claim came before the deadline runs to its end,
 * however long; the call returns once it has.
 *
 * seconds == 0 discards everything pending at once (tasks already running
 * still end first); a deadline further than 10^9 seconds away is no
 * deadline (sf_shutdown()).
 *
 * Returns the number of tasks it discarded (0 when every pending task ran),
 * 0 if the runtime is not running or is already stopping, or -1 with errno:
 *   EINVAL   seconds is negative or NaN (nothing is done);
 *   EDEADLK  called from inside a task (a task or a pool worker), an
 *            unhandled-failure hook or a signal handler, as sf_shutdown():
 *            one line on stderr says so and nothing is done.
 * The rules of sf_shutdown() hold: call it from a thread that runs no
 * task, when no other thread calls libsf any more - or only calls that the
 * program knows return before this one does (say, a get that a task still
 * running waits for: a get of a discarded task returns ECANCELED at once).
 * Every future handle is invalid afterwards.
 */
SF_EXPORT long sf_shutdown_timeout(double seconds);

/*
 * Wraps fn(arg) in a future and queues it in the calling thread's pending
 * queue. Nothing runs yet: the task starts when this thread calls sf_get() on
 * any future (which submits all its pending tasks to the pool, oldest first),
 * or when a thread blocked in sf_get() takes it to help. Starts the runtime
 * from the environment if it is not running.
 *
 * The caller owns one reference to the future and must drop it with
 * sf_release().
 *
 * Returns the future, or NULL with errno:
 *   EINVAL  fn is NULL;
 *   ENOMEM  no memory for the future, its queue slot, or this thread's
 *           registration;
 *   EAGAIN  the implicit start of the runtime failed, or 131,071 (2^17 - 1)
 *           threads that use libsf are alive at once and this one
 *           cannot register.
 * A failed sf_do() leaves the runtime and every other future as they were.
 */
SF_EXPORT sf_future *sf_do(void *(*fn)(void *), void *arg);

/*
 * Returns fn(arg) of the future's task, running whatever it must first.
 *
 * A get submits the calling thread's pending tasks (an idle pool worker may
 * then take any of them, oldest first), runs the future's task directly if it
 * has not started yet, and otherwise, while the task runs elsewhere, runs
 * other pending work (its own pending tasks, then other threads', oldest
 * first) instead of sleeping. When there is nothing to run it spins briefly,
 * then sleeps until the task finishes.
 *
 * Any thread may call it on any future it holds, any number of times, also
 * concurrently; every call returns the same value. The task runs exactly once.
 * While it waits, its thread may run other tasks (see "Waiting" above).
 *
 * Fails with NULL and errno (set errno to 0 before the call to tell a failure
 * from a task that returned NULL):
 *   EINVAL  f is NULL, or f was already released and its memory not yet
 *           reused (a debug build reports that and aborts);
 *   EAGAIN  the task is not finished and this thread cannot register (2^17 - 1
 *           threads that use libsf alive at once), or the implicit start of
 *           the runtime failed; the task is then neither run nor waited for;
 *   ENOMEM  the task is not finished and there is no memory to register this
 *           thread.
 *   EAGAIN  also: the calling thread's stack is nearly full and neither a
 *           fiber nor a thread can be had to run the task on a fresh stack
 *           ("Deep chains"), or
 *   ENOMEM  no memory for either; the task is then not run by this get;
 *   EDEADLK this get closes a cycle of gets ("When things go wrong").
 * A get of a finished future never blocks; it fails only if the task failed
 * or was cancelled (then NULL, with errno the code or ECANCELED).
 */
SF_EXPORT void *sf_get(sf_future *f);

/*
 * sf_get() that helps only with f's own work. An ordinary get may start any
 * pending task while it waits; one that computes without waiting runs to its
 * end before the get can go on, so a get of a 0.3 s task may return after
 * 2 s if it helped with an unrelated 2 s task, and code that waits while
 * holding a lock may run a task that wants the same lock. An isolated get
 * helps only with f's own work, as oneTBB's this_task_arena::isolate():
 *   - if f has not started, it runs f here, and f with every task it makes
 *     (and they make, on any thread) forms a region: while a task of the
 *     region runs, the gets of its thread help only with tasks of the region;
 *   - if f already runs elsewhere, it helps only with tasks of f's region if
 *     f belongs to one (f was made inside an isolated get's task), else it
 *     waits without helping.
 * Anything else is as sf_get(): same result, same errors, same deadlock
 * freedom (which never rests on helping).
 */
SF_EXPORT void *sf_get_isolated(sf_future *f);

/*
 * Returns 1 if the future's task has finished (sf_get() would not run or wait
 * for anything), 0 if not, -1 with errno EINVAL if f is NULL or released (or
 * invalid: from before a shutdown or a fork). Never runs anything.
 */
SF_EXPORT int sf_is_done(const sf_future *f);

/*
 * Drops the caller's reference. A future released before its task started is
 * discarded: the task never runs and nothing leaks. A future released while its
 * task runs is freed when the task finishes. The handle is invalid afterwards;
 * release it once, after every sf_get() on it has returned. NULL is ignored.
 */
SF_EXPORT void sf_release(sf_future *f);

/*
 * Tasks in caller storage: strictly nested fork-join without the heap.
 *
 * A future made by sf_do() lives in libsf's memory until sf_release(). For
 * the tightest recursions (fib, tree walks, branch and bound) the handle -
 * allocated, released, its state kept for any thread - is about half of
 * what a task costs over a plain call (README, Performance). sf_task_do() instead
 * keeps the task in an sf_task the caller provides - usually a local
 * variable - and sf_task_get() returns its result; there is nothing to
 * release. The task is queued, submitted, stolen and run exactly like one
 * of sf_do(): lazily, never before a get or an idle worker's request.
 *
 * The price is a contract that makes it safe for libsf never to look at
 * that memory from another thread:
 *   - only the thread that called sf_task_do() may call sf_task_get() on it
 *     (another thread gets EPERM);
 *   - that thread must call sf_task_get() before the sf_task's memory goes
 *     away (the function returns, the block ends) or is used again, and
 *     before sf_shutdown(). Forgetting it is the same bug as a use after
 *     free;
 *   - the handle is not an sf_future: sf_release(), sf_cancel() and the
 *     other sf_future functions do not take it.
 * A debug build of libsf (configure --enable-debug) names the breaches it
 * can see, with one stderr line and abort(): sf_task_do() on an sf_task
 * whose task is still queued, an sf_task whose memory was reused before
 * its get (seen when its thread next looks at its queue), and one never
 * got when its thread exits or at sf_shutdown().
 * When another thread wants the work, the owner moves the task into a
 * libsf future of its own at its next get (the moment it would publish an
 * sf_do() task, see "The fast path"), so stealing, helping, isolation,
 * deadlock detection and deep chains behave as for sf_do(). Inside the task
 * everything works as in any other: sf_fail(), sf_cancelled(), gets,
 * loops, more tasks of either kind.
 */
typedef struct sf_task {
    void *sf_opaque_[4]; /* 32 bytes, pointer-aligned; never touch */
} sf_task;

/*
 * Queues fn(arg) in t, like sf_do() (it starts the runtime if needed).
 * Whatever t held is overwritten: t must not hold a task that is still
 * queued (one made and not yet got).
 *
 * Returns 0, or -1 with errno EINVAL (t or fn is NULL), ENOMEM (no memory
 * for its queue slot or this thread's registration) or EAGAIN (as sf_do());
 * t then holds no task.
 */
SF_EXPORT int sf_task_do(sf_task *t, void *(*fn)(void *), void *arg);

/*
 * Returns fn(arg) of t's task, running whatever it must first, as sf_get():
 * the same fast path, helping, waiting and errors. Afterwards t holds no
 * queued task (its memory may go), and further calls return the same
 * result. A task that failed or was cancelled gives NULL with errno its
 * code; its message, if it had one, stays readable through
 * sf_task_error_message() until the next sf_task_get() or loop of this
 * thread that fails. Also fails with:
 *   EPERM   t was made by another thread;
 *   EINVAL  t is NULL or holds no task;
 *   EDEADLK t's task is running on this thread, enclosing this get;
 *   ENOMEM  t's task had to move into a libsf future (this thread's stack
 *           is nearly full: "Deep chains") and there was no memory for it:
 *           the task is then dropped, never run.
 */
SF_EXPORT void *sf_task_get(sf_task *t);

/*
 * The message of the last sf_task_get(), sf_for() or sf_for_range() of this
 * thread that failed (sf_fail()'s text, from the task or from the loop's
 * failing body), or NULL if that failure had none or none failed. A call
 * that does not fail leaves it as it is. Valid until this thread's next
 * failing sf_task_get(), sf_for() or sf_for_range(), or its exit.
 */
SF_EXPORT const char *sf_task_error_message(void);

/*
 * Parallel loops over an index range.
 *
 * sf_for(from, to, body, ctx) runs body(i, ctx) for every i of [from, to)
 * exactly once, in parallel (unless a body fails the loop: "Failure"
 * below), and returns when all have returned. The range is split
 * statically among the participants (the calling thread and up to
 * SF_THREADS - 1 tasks, fewer for short ranges); each takes its indices one
 * at a time from the bottom of its part, with no atomic read-modify-write
 * and no fence (a compiler barrier where membarrier exists, as the fork-join
 * fast path); a participant whose part is done steals a contiguous chunk -
 * half of what is left, rounded up - from the top of the part with the most
 * left, and goes on with that as its own part. Participants stop when
 * nothing is left to steal (a count of the indices not yet run ends the
 * search at once when it reaches 0); sf_for returns once every participant
 * has ended, which it learns by getting their futures, so no stolen chunk
 * can be missed.
 *
 * Composition. sf_for is a get: it first submits the calling thread's
 * pending tasks (as sf_get does), makes its participants public so that an
 * idle worker takes them at once, and waits for them as a get does (helping
 * with other pending work). The calling thread can run the whole loop
 * alone, so sf_for never waits for a free worker: it works at any
 * SF_THREADS, 1 included, inside tasks, inside the body of another sf_for
 * (nested loops), and with sf_do()/sf_get() inside the body. Participants are
 * tasks made by the caller, so they count in sf_stats and show in the trace.
 *
 * A loop is isolated as a whole: while it runs, its calling thread and its
 * participants help (in their blocked gets) only with the loop's own work -
 * the participants and the tasks bodies make - and a get elsewhere never
 * runs that work while it waits; idle pool workers take it as usual. A
 * body may sf_get() a future made outside the loop (by the caller before
 * the loop, by another thread): tested with every index getting a future
 * the caller queued, plain and isolated gets, at SF_THREADS 1, 2 and 4.
 *
 * Failure. A loop is a failure scope: a body that calls sf_fail() fails the
 * loop, whatever thread or task it runs in, at any SF_THREADS. The first
 * failure's code and message stand (another body's later sf_fail() returns
 * -1 with errno EALREADY); no index starts after it - bodies running then
 * finish - and sf_for returns -1 with errno that code once they have, its
 * message readable through sf_task_error_message(). At one thread, an
 * sf_for whose body i fails has run exactly the indices from..i. Only a
 * body's own sf_fail() counts: a task it gets fails itself, and an inner
 * loop's failure is the inner sf_for's return value in the outer body. A
 * failure goes no further than its sf_for: a task running a loop fails
 * only if it calls sf_fail() itself.
 *
 * Every index may run on any thread, in any order; the indices of a part
 * run in increasing order on one thread.
 */

/*
 * Runs body(i, ctx) for every i with from <= i < to, exactly once, in
 * parallel, until a body fails the loop (see above); from == to does
 * nothing. Starts the runtime from the environment if it is not running.
 * If memory for the loop's bookkeeping cannot be had, the calling thread
 * runs the whole loop itself: that is not an error.
 *
 * Returns 0 once every body call has returned, or -1 with errno:
 *   the code of the first body that called sf_fail() (its message:
 *           sf_task_error_message()), once every body that started has
 *           returned; indices not started by then never run ("Failure");
 *   EINVAL  body is NULL, or to < from (nothing runs);
 *   EAGAIN, ENOMEM  the calling thread cannot register (as sf_do); nothing
 *           runs;
 *   EDEADLK a participant running on another thread is stuck in a cycle of
 *           gets through the caller's frames (see "When things go wrong");
 *           the indices it holds have not all run, and a body's failure is
 *           not reported.
 */
SF_EXPORT int sf_for(long from, long to, void (*body)(long i, void *ctx), void *ctx);

/*
 * sf_for with a body that takes sub-ranges: body(lo, hi, ctx) is called for
 * disjoint [lo, hi) that together cover [from, to) exactly, each holding at
 * most `grain` indices (grain 0: chosen by libsf, about 1/64 of a
 * participant's share, at least 1). A participant takes one grain at a time;
 * thieves still steal half of what is left of a part, so a grain bounds the
 * work a participant commits to, not the balance. For loops whose indices
 * are too cheap to pay a call each.
 *
 * Returns as sf_for; also EINVAL for grain < 0.
 */
SF_EXPORT int sf_for_range(long from, long to, long grain,
                           void (*body)(long lo, long hi, void *ctx), void *ctx);

/*
 * When things go wrong: failures, cancellation, deadlock.
 *
 * C has no exceptions, so a task fails by saying so: sf_fail() marks the
 * running task failed with an errno-style code and a message, and the task
 * then returns as usual (its return value is ignored); in a loop's body it
 * fails the loop instead ("Parallel loops"). Whoever gets that future sees
 * the failure instead of a result: sf_wait() returns the code, sf_get()
 * returns NULL with errno set to it, sf_error_message() reads the message.
 * A failure goes no further than the get that sees it: a parent
 * that gets a failed child decides what to do (return normally, or fail in
 * turn with sf_fail()).
 *
 * A failure nobody sees is not lost: a failed future released without any
 * get (sf_get, sf_get_isolated, sf_wait) or sf_error_message() on it since
 * it failed, or still unseen at sf_shutdown(), is reported to the
 * unhandled-failure hook (sf_on_unhandled) - in the releasing thread, or in
 * the one that finishes a task released while it ran; by default one line
 * on stderr:
 *   "libsf: unhandled failure of task <fn> (<code name>, <code>): <message>"
 * (<fn> is the task function's name where the dynamic linker knows it, else
 * its address; "(code <code>)" when the code has no errno name; "(no
 * message)" for none). A cancelled task is no failure to report: its
 * canceller knows. A task that saw its cancellation (sf_cancelled) and also
 * called sf_fail() ends with whichever came first.
 *
 * sf_cancel() stops a task that nobody needs: one that has not started
 * never runs; one that runs may ask sf_cancelled() and stop early. Getters
 * of a cancelled task see ECANCELED.
 *
 * A get that can never return fails instead of hanging: a task that gets
 * its own future, or one that closes a cycle of gets (A gets B while B,
 * running on another thread, gets A; or longer), gets EDEADLK. The other
 * gets of the cycle then complete once that task goes on. The check runs
 * only when a get is about to sleep, so the fork-join path pays nothing, and
 * it reports only a cycle it saw stand still twice, never a false one.
 */

/*
 * Inside a task: marks the running task failed with `code` (> 0, an errno
 * value or any positive number of the program's) and a printf-style message
 * (fmt may be NULL: no message; at most 1023 bytes are kept). Inside the
 * body of a loop (sf_for, sf_for_range), also one run by a thread that runs
 * no task, it fails the loop instead of the task the body runs in
 * ("Parallel loops", Failure). The first failure of a task or a loop
 * stands.
 *
 * Returns 0, or -1 with errno:
 *   EINVAL    code <= 0, or the calling thread is running neither a task nor
 *             a loop's body;
 *   EALREADY  the task or loop already failed (the earlier failure stands);
 *   ENOMEM    no memory for the message (the task or loop still fails, with
 *             no message).
 */
SF_EXPORT int sf_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * sf_get() with the failure as a return value: returns 0 and stores the
 * task's result in *result (if result is not NULL), or returns an error code
 * (and leaves *result alone):
 *   the task's sf_fail() code, or ECANCELED if it was cancelled;
 *   EDEADLK  this get closes a cycle of gets (see above);
 *   EINVAL   f is NULL or was released;
 *   EAGAIN, ENOMEM  as sf_get().
 */
SF_EXPORT int sf_wait(sf_future *f, void **result);

/*
 * The message of a failed future (sf_fail's), or NULL if it has none, has not
 * failed, or f is NULL. Valid until f is released. Counts as seeing the
 * failure (no unhandled report).
 */
SF_EXPORT const char *sf_error_message(const sf_future *f);

/*
 * Sets the unhandled-failure hook: hook(code, message, ctx) runs, in the
 * thread that releases the future (or calls sf_shutdown), for every failure
 * nobody saw (see above); message may be NULL. NULL restores the default
 * (one line on stderr). Holds for the life of the process. Without memory to
 * keep the new hook, one stderr line says so and the previous one stays.
 * The hook may call libsf - make and get tasks, on whatever thread it runs
 * - but not shut it down: it runs inside a libsf call, and sf_shutdown()
 * there is refused (see there).
 */
SF_EXPORT void sf_on_unhandled(void (*hook)(int code, const char *message, void *ctx),
                               void *ctx);

/*
 * Cancels f's task. If it has not started, it never runs: f is done at once
 * and its getters see ECANCELED. If it runs, it is asked to stop: while it
 * runs, sf_cancelled() returns 1 in it, and if it saw that, its getters see
 * ECANCELED; a task that finishes without asking keeps its result. A done
 * task is left as it is. The caller still releases f.
 *
 * Returns 0 if f was cancelled or asked to stop, 1 if it was already done,
 * or -1 with errno EINVAL (f is NULL or released).
 */
SF_EXPORT int sf_cancel(sf_future *f);

/*
 * Inside a task: 1 if someone called sf_cancel() on it (the task should stop
 * early; its getters will see ECANCELED), else 0. Outside a task: 0.
 */
SF_EXPORT int sf_cancelled(void);

/*
 * Fair batches: the eager way in.
 *
 * A batch is a group of tasks that the pool serves fairly against other
 * batches: idle pool workers take batch tasks one at a time from each batch
 * with pending work in turn (round-robin), before any plain task. A small
 * batch that arrives while a large one runs gets its share of the workers at
 * the next take instead of queuing behind it; when one batch drains, the
 * others get every worker.
 *
 * Unlike sf_do(), which is lazy, a batch is EAGER: its tasks are submitted as
 * they are added, so pool workers may start them with nobody calling
 * sf_get(). Adding to a batch does not submit the adder's own sf_do() tasks:
 * those stay lazy. A batch task is otherwise an ordinary future: sf_get(),
 * sf_wait(), sf_is_done(), sf_release() (before it started: it never runs),
 * sf_cancel(), sf_fail() and nesting work as on any future, and a get of one
 * that has not started runs it at once in the getting thread, so no get
 * depends on a free worker. A batch task belongs to no isolation region
 * (sf_get_isolated): it is its batch's, wherever it runs.
 *
 *     sf_batch *b = sf_batch_new();
 *     sf_future *f[100];
 *     for (int i = 0; i < 100; i++)
 *         f[i] = sf_batch_do(b, work, items + i);    // workers start at once
 *     sf_batch_wait(b);                               // helps, then waits
 *     for (int i = 0; i < 100; i++)
 *         sf_release(f[i]);
 *     sf_batch_close(b);
 */
typedef struct sf_batch sf_batch;

/*
 * A new, empty, open batch. Starts the runtime from the environment if it
 * is not running (as sf_do()). The handle is valid until sf_batch_close()
 * (or sf_shutdown(), which frees batches never closed).
 *
 * Returns the batch, or NULL with errno:
 *   ENOMEM  no memory for it, or for this thread's registration;
 *   EAGAIN  16,384 batches are open at once (close some), or the implicit
 *           start of the runtime failed, or this thread cannot register
 *           (as sf_do()).
 */
SF_EXPORT sf_batch *sf_batch_new(void);

/*
 * Adds fn(arg) to batch b as a task and submits it at once: an idle pool
 * worker may start it before anyone gets it (the batch's turn comes round,
 * see above). Returns its future, which the caller owns and releases as
 * any future (sf_release() before the task started discards it). Callable
 * from any thread, tasks included (a task may add to its own batch or to
 * others).
 *
 * Returns the future, or NULL with errno:
 *   EINVAL  b or fn is NULL;
 *   EPIPE   b is closed (only a task of b, still running, may call this
 *           after sf_batch_close(b); anyone else's handle is dead then);
 *   ENOMEM  no memory for the future, the batch's queue, or this thread's
 *           registration;
 *   EAGAIN  as sf_do().
 * A failed add leaves the batch as it was.
 */
SF_EXPORT sf_future *sf_batch_do(sf_batch *b, void *(*fn)(void *), void *arg);

/*
 * Waits until batch b has no unfinished task: every task added so far (and
 * any added while it waits) is done - run, failed, cancelled or discarded -
 * so sf_is_done() of each of their futures that is still held returns 1.
 * The calling thread helps: it runs b's pending tasks itself (and only
 * b's), so it returns at any SF_THREADS, 1 included; with nothing of b's to
 * run it sleeps until the tasks running elsewhere end. A batch fed without
 * pause may keep it waiting. Does not close b. Do not call it concurrently
 * with, or after, sf_batch_close(b).
 *
 * Returns 0, or -1 with errno:
 *   EINVAL   b is NULL;
 *   EDEADLK  the calling thread is running a task of b (directly, or below
 *            a get or wait inside it): that task cannot finish before the
 *            wait returns. Only this thread's own tasks are looked at: a
 *            cycle through other threads (a task of b, running elsewhere,
 *            getting a future whose task is this wait's caller) is not
 *            detected, and waits for ever;
 *   EAGAIN, ENOMEM  the calling thread cannot register (as sf_get()).
 */
SF_EXPORT int sf_batch_wait(sf_batch *b);

/*
 * Closes batch b: no more adds (sf_batch_do() fails with EPIPE). Its pending
 * tasks still run; once none is left unfinished, the batch leaves the pool's
 * rotation and frees itself (at once if it is drained already). The handle
 * is invalid afterwards, except to the batch's own running tasks (whose adds
 * fail with EPIPE); the futures stay valid and are still released by their
 * holders. NULL is ignored. Close a batch once.
 *
 * sf_shutdown() runs the pending tasks of every batch, closed or not, like
 * every pending sf_do() task, and frees the batches never closed.
 */
SF_EXPORT void sf_batch_close(sf_batch *b);

/* Counters since sf_init(), summed over every thread; see sf_stats_read(). */
typedef struct sf_stats {
    int threads;             /* the configured thread count (SF_THREADS) */
    int workers;             /* pool workers running: threads - 1, or fewer if
                              * some could not be created (sf_init) */
    int peak_busy;           /* most pool workers busy with a task at once */
    uint64_t created;        /* futures made by sf_do() and sf_batch_do() */
    uint64_t run_inline;     /* tasks run by a get of their own future */
    uint64_t run_pool;       /* submitted tasks (batch tasks included) taken by
                              * an idle pool worker */
    uint64_t run_stolen;     /* tasks run by a blocked get, helping, or by
                              * sf_batch_wait() */
    uint64_t discarded;      /* tasks released before they started */
    uint64_t cancelled;      /* tasks cancelled before they started (sf_cancel) */
    uint64_t gets_blocked;   /* gets that found their task running elsewhere */
    uint64_t sleeps;         /* times a blocked get slept with nothing to run */
    uint64_t fresh_stacks;   /* gets near the end of their stack that ran their
                              * task on a fresh one (see "Deep chains") */
    uint64_t parks;          /* times a stack parked: a get waiting for a task
                              * running elsewhere (or needing a fresh stack)
                              * while other work ran on another of its thread's
                              * stacks, or a thread yielding to parked ones */
    uint64_t resumes;        /* times a parked stack went on */
    uint64_t queued;         /* tasks pending now: made by sf_do() or
                              * sf_batch_do(), neither
                              * started, released nor cancelled (exact when
                              * quiet: created - run_inline - run_pool -
                              * run_stolen - discarded - cancelled) */
    int asleep;              /* threads asleep now in a get, waiting for a task
                              * that runs elsewhere (the trace's Asleep) */
} sf_stats;

/*
 * Fills *out with the runtime's counters. Exact once every thread is quiet
 * (no task running, no get in progress); while tasks run, each counter is
 * a recent value. created == run_inline + run_pool + run_stolen + discarded +
 * cancelled + (tasks still pending or running).
 *
 * Returns 0, or -1 with errno EINVAL (out is NULL) or ESRCH (runtime not
 * running).
 */
SF_EXPORT int sf_stats_read(sf_stats *out);

/*
 * One thread's share of the counters (sf_stats_read_threads). A row belongs
 * to a thread id of the runtime: a thread that exits leaves its id (and its
 * counts, which go on) to the next thread that registers.
 */
typedef struct sf_thread_stats {
    int id;                  /* the thread's id: the trace's Thread column */
    int is_worker;           /* 1: a pool worker; 0: a thread of the program */
    int asleep;              /* 1 while asleep in a get, now */
    uint64_t created;        /* futures it made with sf_do() or sf_batch_do() */
    uint64_t executed;       /* tasks it ran: the four below */
    uint64_t run_inline;     /* ... by a get of their own future */
    uint64_t run_pool;       /* ... taken as an idle pool worker (from a queue
                              * or a batch) */
    uint64_t run_stolen;     /* ... taken from a queue by a blocked get, helping,
                              * or from its batch by sf_batch_wait() */
    uint64_t run_drained;    /* ... run by sf_shutdown()'s drain (counted in no
                              * sf_stats field: it happens once stopping) */
    uint64_t discarded;      /* tasks it released before they started */
    uint64_t cancelled;      /* tasks it cancelled before they started (sf_cancel,
                              * or discarded past sf_shutdown_timeout's deadline) */
    uint64_t gets_blocked;   /* its gets that found their task running elsewhere */
    uint64_t steals_tried;   /* scans of other threads' queues for a task to take:
                              * a blocked get's helping, an idle worker's search */
    uint64_t steals_failed;  /* ... of which found nothing */
    uint64_t sleeps;         /* its blocked gets' sleeps (sf_stats.sleeps) */
    uint64_t idle_sleeps;    /* a worker's sleeps for want of submitted work */
    uint64_t fresh_stacks;   /* its gets that moved to a fresh stack */
    uint64_t parks;          /* its stacks' parks (sf_stats.parks) */
    uint64_t resumes;        /* ... and resumes */
    uint64_t busy_ns;        /* wall-clock time inside tasks: from the start to
                              * the end of every task it ran that no other task
                              * of the thread encloses; what such a task's gets
                              * run or wait for, nested in it, lies within */
    uint64_t avg_task_ns;    /* busy_ns / executed (0 if none): the time one
                              * task held the thread, nested tasks shared out */
} sf_thread_stats;

/*
 * Per-thread counters: fills rows[0 .. min(n, max) - 1], where n, the
 * return value, is the number of threads that have a row - every pool
 * worker, and every other thread that made, ran, released, cancelled or
 * waited for a task - in id order. Call with max 0 (rows may then be NULL)
 * to learn n. On a quiet runtime the rows sum exactly to sf_stats_read()'s
 * counters (created, run_inline, run_pool, run_stolen, discarded,
 * cancelled, gets_blocked, sleeps, fresh_stacks, asleep); while tasks run,
 * each is a recent value. Reading costs a pass over every thread, never a
 * lock, and nothing on the task path: each thread counts into its own
 * fields, which only it writes.
 *
 * SF_STATS=1 (or sf_config.stats) prints these rows as a table on stderr
 * at sf_shutdown(), after the last task has run, with a total row:
 *
 *   libsf stats: 2 threads (1 pool worker), 1346268 tasks created,
 *   1346268 run, 0 discarded, 0 cancelled           (one line on stderr)
 *   thread kind   executed  inline  pool stolen drained steals failed
 *        0 thread   680321  680312     0      9       0    719    710 ...
 *        1 worker   665947  665945     1      1       0    409    407 ...
 *    total         1346268 1346257     1     10       0   1128   1117 ...
 * (columns narrowed here), then sleeps, parks, idle (idle_sleeps), busy_ms
 * and avg_ns.
 *
 * Returns n, or -1 with errno EINVAL (max < 0, or rows NULL with max > 0)
 * or ESRCH (runtime not running).
 */
SF_EXPORT int sf_stats_read_threads(sf_thread_stats *rows, int max);

#ifdef __cplusplus
}
#endif

#endif /* SF_H */
