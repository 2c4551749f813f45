/*
 * test_shutdown.c - sf_shutdown runs every task still pending (nothing queued
 * is lost), never runs a released one, refuses to run inside a task, and
 * leaves a runtime that the next call starts afresh.
 */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int thread_counts[] = {1, 2, 4};

static atomic_int counter;
#define NTASKS 100
static atomic_int runs[NTASKS];

static void *inc(void *arg)
{
    atomic_fetch_add(&counter, 1);
    return arg;
}

static void *inc_indexed(void *arg)
{
    atomic_fetch_add(&runs[(long)arg], 1);
    atomic_fetch_add(&counter, 1);
    return arg;
}

START_TEST(drains_pending)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (long i = 0; i < NTASKS; i++)
        ck_assert_ptr_nonnull(sf_do(inc, (void *)i)); /* handles die with the runtime */
    tu_sleep_ms(10);
    ck_assert_int_eq(atomic_load(&counter), 0); /* nobody got them: still queued */
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), NTASKS);
}
END_TEST

START_TEST(released_not_drained)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (long i = 0; i < NTASKS; i++) {
        sf_future *f = sf_do(inc_indexed, (void *)i);
        ck_assert_ptr_nonnull(f);
        if (i % 2 == 0)
            sf_release(f);
    }
    sf_stats s = tu_stats_pending(NTASKS / 2);
    ck_assert_uint_eq(s.discarded, NTASKS / 2);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), NTASKS / 2);
    for (long i = 0; i < NTASKS; i++)
        ck_assert_msg(atomic_load(&runs[i]) == (i % 2 == 0 ? 0 : 1), "task %ld ran %d times", i,
                      atomic_load(&runs[i]));
}
END_TEST

/* Tasks started during the drain queue more tasks; those run too. */
static void *spawner(void *arg)
{
    atomic_fetch_add(&counter, 1);
    for (int i = 0; i < 10; i++)
        if (sf_do(inc, NULL) == NULL)
            atomic_fetch_add(&counter, 1000000);
    return arg;
}

START_TEST(drains_tasks_queued_while_draining)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    for (int i = 0; i < 10; i++)
        ck_assert_ptr_nonnull(sf_do(spawner, NULL));
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 10 + 10 * 10);
}
END_TEST

/* Tasks queued by a thread that has exited are drained too. */
static void *queue_and_exit(void *arg)
{
    for (int i = 0; i < 10; i++)
        if (sf_do(inc, NULL) == NULL)
            atomic_fetch_add(&counter, 1000000);
    return arg;
}

START_TEST(drains_tasks_of_exited_thread)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    tu_run_on_thread(queue_and_exit, NULL, 0);
    tu_run_on_thread(queue_and_exit, NULL, 0);
    ck_assert_int_eq(atomic_load(&counter), 0);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 20);
}
END_TEST

/* Submitted tasks a worker may be running when shutdown starts: all finish. */
static void *slow_inc(void *arg)
{
    tu_sleep_ms(2);
    atomic_fetch_add(&counter, 1);
    return arg;
}

START_TEST(drains_with_busy_workers)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *last = NULL;
    for (int i = 0; i < 50; i++)
        last = sf_do(slow_inc, NULL);
    ck_assert_ptr_null(sf_get(last)); /* submits all 50 */
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 50);
}
END_TEST

/* Called from inside a task: one line on stderr, and nothing happens. */
static void *shutdown_inside(void *arg)
{
    sf_shutdown();
    return arg;
}

START_TEST(shutdown_inside_task_refused)
{
    tu_env_threads(1); /* no worker: `pending` stays pending until we get it */
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *pending = sf_do(inc, NULL);
    sf_future *f = sf_do(shutdown_inside, (void *)42);
    struct tu_capture c;
    tu_capture_begin(&c);
    void *v = sf_get(f);
    char *out = tu_capture_end(&c);
    ck_assert_ptr_eq(v, (void *)42);
    ck_assert_msg(tu_count_lines(out) == 1 && strncmp(out, "libsf: ", 7) == 0,
                  "want one libsf: line on stderr, got \"%s\"", out);
    free(out);
    /* Still running, the other future still valid and pending. */
    sf_stats s = tu_stats_pending(1);
    ck_assert_uint_eq(s.created, 2);
    ck_assert_int_eq(sf_is_done(pending), 0);
    ck_assert_ptr_null(sf_get(pending));
    ck_assert_int_eq(atomic_load(&counter), 1);
    sf_release(pending);
    sf_release(f);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 1);
}
END_TEST

/*
 * Tasks that sf_shutdown runs, and workers' last tasks, may call sf_init and
 * sf_shutdown. Before the fix, sf_shutdown drained and joined while holding
 * the lifecycle lock, so such a call blocked on that lock for ever: each test
 * below hung (and fails by its timeout if that comes back).
 */
static const char inside_line[] = "libsf: sf_shutdown() called from inside a task; ignored\n";
static atomic_int init_rc, init_errno, ran_on_worker, task_started, go;
static pthread_t main_thread;

/* The nested calls, with what they answered. */
static void *call_shutdown_and_init(void *arg)
{
    sf_shutdown(); /* refused: one line */
    errno = 0;
    atomic_store(&init_rc, sf_init(NULL));
    atomic_store(&init_errno, errno);
    atomic_store(&ran_on_worker, !pthread_equal(pthread_self(), main_thread));
    atomic_fetch_add(&counter, 1);
    return arg;
}

/* What the nested calls answered, on the thread expected, and the one line
 * on stderr (err, freed here). */
static void check_nested_calls(char *err, int on_worker)
{
    ck_assert_str_eq(err, inside_line);
    free(err);
    ck_assert_int_eq(atomic_load(&init_rc), -1);
    ck_assert_int_eq(atomic_load(&init_errno), EBUSY);
    ck_assert_int_eq(atomic_load(&ran_on_worker), on_worker);
}

/* SF_THREADS=1: the task is never got, so the drain of sf_shutdown runs it,
 * in this thread. */
START_TEST(drained_task_calls_shutdown_and_init)
{
    tu_env_threads(1);
    main_thread = pthread_self();
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_ptr_nonnull(sf_do(call_shutdown_and_init, NULL));
    struct tu_capture c;
    tu_capture_begin(&c);
    sf_shutdown();
    check_nested_calls(tu_capture_end(&c), 0);
    ck_assert_int_eq(atomic_load(&counter), 1);
    /* Down for real: stats say so, and a new runtime starts. */
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), -1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_shutdown();
}
END_TEST

/* The same from a pool worker: the task is submitted (by a get of a later
 * task) and an idle worker takes it; this thread never gets it. */
static void *worker_calls(void *arg)
{
    call_shutdown_and_init(arg);
    atomic_store(&task_started, 1);
    return arg;
}

START_TEST(worker_task_calls_shutdown_and_init)
{
    tu_env_threads(2);
    main_thread = pthread_self();
    ck_assert_int_eq(sf_init(NULL), 0);
    struct tu_capture c;
    tu_capture_begin(&c);
    sf_future *a = sf_do(worker_calls, NULL);
    sf_future *b = sf_do(inc, NULL);
    ck_assert_ptr_null(sf_get(b)); /* runs b here, submits a */
    int seen = tu_wait_flag(&task_started, 10000);
    char *err = tu_capture_end(&c);
    ck_assert_msg(seen, "no worker took the submitted task in 10 s");
    check_nested_calls(err, 1);
    sf_release(a);
    sf_release(b);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&counter), 2);
}
END_TEST

/* A worker's task calls them while this thread is inside sf_shutdown, which
 * waits for that very task (drain, then join). */
static void *worker_calls_during_shutdown(void *arg)
{
    atomic_store(&task_started, 1);
    tu_wait_flag(&go, 10000);
    tu_sleep_ms(50); /* the main thread is in sf_shutdown by now */
    return call_shutdown_and_init(arg);
}

START_TEST(worker_task_calls_them_during_shutdown)
{
    tu_env_threads(2);
    main_thread = pthread_self();
    ck_assert_int_eq(sf_init(NULL), 0);
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_ptr_nonnull(sf_do(worker_calls_during_shutdown, NULL));
    sf_future *b = sf_do(inc, NULL);
    ck_assert_ptr_null(sf_get(b));
    sf_release(b);
    int seen = tu_wait_flag(&task_started, 10000);
    atomic_store(&go, 1);
    sf_shutdown();
    char *err = tu_capture_end(&c);
    ck_assert_msg(seen, "no worker took the submitted task in 10 s");
    check_nested_calls(err, 1);
    ck_assert_int_eq(atomic_load(&counter), 2);
}
END_TEST

/* After shutdown the runtime is down; the next sf_do starts a fresh one,
 * reading the environment again. */
START_TEST(restart_after_shutdown)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(tu_fib, (void *)10L);
    ck_assert_ptr_eq(sf_get(f), (void *)55L);
    sf_release(f);
    int before = tu_os_threads();
    sf_shutdown();
    tu_assert_os_threads(before - 1); /* the worker was joined */
    sf_stats s;
    errno = 0;
    ck_assert_int_eq(sf_stats_read(&s), -1);
    ck_assert_int_eq(errno, ESRCH);

    tu_env_threads(3);
    f = sf_do(tu_fib, (void *)12L);
    ck_assert_ptr_nonnull(f);
    s = tu_stats_pending(1);
    ck_assert_int_eq(s.threads, 3);
    ck_assert_uint_eq(s.created, 1);
    ck_assert_ptr_eq(sf_get(f), (void *)144L);
    sf_release(f);
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 1 + tu_fib_tasks(12));
    sf_shutdown();
    tu_assert_os_threads(before - 1);
}
END_TEST

/* ---- other threads still inside libsf (sf.h, sf_shutdown) ---- */

/*
 * A call in flight on another thread when the shutdown comes: the shutdown
 * waits for it to end before it frees anything, and the call's work - here
 * a task running nested in it, which makes and gets tasks of its own after
 * the shutdown began - is exact.
 */
static atomic_int inflight_started, inflight_go;
static atomic_long inflight_value;

static void *holds_the_call(void *arg)
{
    atomic_store(&inflight_started, 1);
    tu_wait_flag(&inflight_go, 10000);
    sf_future *f = sf_do(tu_fib, (void *)15L);
    long v = f != NULL ? (long)sf_get(f) : -1;
    sf_release(f);
    return (void *)(v + (long)arg);
}

static void *caller_in_flight(void *arg)
{
    (void)arg;
    sf_future *f = sf_do(holds_the_call, (void *)1000L);
    /* Runs it here, nested in this get. Its last call: anything after it
     * could come while the runtime closes, the misuse the debug build
     * names (the handle dies with the runtime). */
    long v = f != NULL ? (long)sf_get(f) : -1;
    atomic_store(&inflight_value, v);
    return NULL;
}

static void *lets_it_go(void *arg)
{
    (void)arg;
    tu_sleep_ms(100); /* the shutdown is under way by then, or it waits */
    atomic_store(&inflight_go, 1);
    return NULL;
}

START_TEST(shutdown_waits_for_calls_in_flight)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&inflight_started, 0);
    atomic_store(&inflight_go, 0);
    atomic_store(&inflight_value, 0);
    pthread_t c, g;
    ck_assert_int_eq(pthread_create(&c, NULL, caller_in_flight, NULL), 0);
    ck_assert_int_eq(tu_wait_flag(&inflight_started, 10000), 1);
    ck_assert_int_eq(pthread_create(&g, NULL, lets_it_go, NULL), 0);
    sf_shutdown();
    pthread_join(c, NULL);
    pthread_join(g, NULL);
    ck_assert_int_eq(atomic_load(&inflight_value), 1610);
    sf_shutdown(); /* nothing more: no runtime, or the caller's restarted one */
}
END_TEST

#ifndef SF_DEBUG
/*
 * Threads that keep calling libsf while the program shuts it down again and
 * again (the order of shutdown got wrong). Nothing crashes, no call hangs
 * and no result is wrong: a call that began before a shutdown closed the
 * runtime is waited for; one that comes later waits and then starts the
 * next runtime; a loop is one call; and a handle made before a shutdown
 * and got after it reads as released (EINVAL), its memory resting through
 * the next runtime. The debug build names the misuse instead
 * (a_call_while_the_runtime_closes_is_named).
 */
#define CALLERS 3
#define ROUNDS (TU_SANITIZED ? 8 : 20)
static atomic_int callers_stop;
static atomic_long exact, failed_calls, wrong;

static void add_fib(long i, void *ctx)
{
    (void)i;
    atomic_long *sum = ctx;
    sf_future *f = sf_do(tu_fib, (void *)10L);
    if (f != NULL) {
        atomic_fetch_add(sum, (long)sf_get(f));
        sf_release(f);
    }
}

static void *keeps_calling(void *arg)
{
    (void)arg;
    while (!atomic_load(&callers_stop)) {
        sf_future *f = sf_do(tu_fib, (void *)12L);
        if (f == NULL) {
            atomic_fetch_add(&failed_calls, 1);
            continue;
        }
        errno = 0;
        long v = (long)sf_get(f);
        if (v == 144)
            atomic_fetch_add(&exact, 1);
        else if (v == 0 && errno != 0)
            atomic_fetch_add(&failed_calls, 1); /* made before a shutdown, got after it */
        else
            atomic_fetch_add(&wrong, 1);
        sf_release(f);
        atomic_long sum = 0;
        int rc = sf_for(0, 4, add_fib, &sum);
        if (rc == 0 && atomic_load(&sum) == 4 * 55)
            atomic_fetch_add(&exact, 1);
        else
            atomic_fetch_add(&wrong, 1);
        sf_stats st;
        if (sf_stats_read(&st) != 0 && errno != ESRCH)
            atomic_fetch_add(&wrong, 1);
    }
    return NULL;
}

START_TEST(other_threads_still_calling)
{
    tu_env_threads(thread_counts[_i]);
    atomic_store(&callers_stop, 0);
    atomic_store(&exact, 0);
    atomic_store(&failed_calls, 0);
    atomic_store(&wrong, 0);
    pthread_t t[CALLERS];
    for (int k = 0; k < CALLERS; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, keeps_calling, NULL), 0);
    for (int r = 0; r < ROUNDS; r++) {
        tu_sleep_ms(10);
        sf_shutdown();
    }
    atomic_store(&callers_stop, 1);
    for (int k = 0; k < CALLERS; k++)
        pthread_join(t[k], NULL);
    sf_shutdown();
    fprintf(stderr, "%d shutdowns under %d calling threads: %ld exact, %ld failed with an "
                    "error, %ld wrong\n",
            ROUNDS, CALLERS, atomic_load(&exact), atomic_load(&failed_calls), atomic_load(&wrong));
    ck_assert_int_eq(atomic_load(&wrong), 0);
    ck_assert_int_gt(atomic_load(&exact), 0);
}
END_TEST

#endif

/*
 * A signal handler that calls sf_shutdown() while the thread it interrupted
 * is blocked in sf_get(): no libsf function is async-signal-safe, and the
 * shutdown would free what the get uses. It is refused with one line
 * (written with write(2)), and the get returns its result; the debug build
 * names it and aborts (signal_handler_shutdown_is_named).
 */
static void shut_down_from_handler(int sig)
{
    (void)sig;
    sf_shutdown();
}

static atomic_int blocker_started, blocker_go;

static void *blocker(void *arg)
{
    atomic_store(&blocker_started, 1);
    tu_wait_flag(&blocker_go, 10000);
    return arg;
}

/* A runtime of 2 threads whose worker runs a task that waits for
 * blocker_go; returns its future. SIGUSR1 runs shut_down_from_handler. */
static sf_future *worker_blocked(void)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    struct sigaction sa = {.sa_handler = shut_down_from_handler};
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    atomic_store(&blocker_started, 0);
    atomic_store(&blocker_go, 0);
    sf_future *f = sf_do(blocker, (void *)7L);
    sf_future *g = sf_do(tu_fib, (void *)5L);
    ck_assert_ptr_eq(sf_get(g), (void *)5L); /* the idle worker takes f */
    sf_release(g);
    ck_assert_int_eq(tu_wait_flag(&blocker_started, 10000), 1);
    return f;
}

#ifndef SF_DEBUG
struct interrupter {
    pthread_t target;
};

static void *interrupts(void *arg)
{
    struct interrupter *in = arg;
    /* Until the target sleeps in its get (or 2 s: it is inside the get
     * anyway, spinning). */
    sf_stats st;
    for (int i = 0; i < 2000 && (sf_stats_read(&st) != 0 || st.asleep == 0); i++)
        tu_sleep_ms(1);
    pthread_kill(in->target, SIGUSR1);
    tu_sleep_ms(50);
    atomic_store(&blocker_go, 1);
    return NULL;
}

START_TEST(signal_handler_shutdown_is_refused)
{
    sf_future *f = worker_blocked();
    struct interrupter in = {pthread_self()};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, interrupts, &in), 0);
    struct tu_capture cap;
    tu_capture_begin(&cap);
    errno = 0;
    void *v = sf_get(f); /* blocked: f runs on the worker */
    int err = errno;
    char *out = tu_capture_end(&cap);
    pthread_join(t, NULL);
    ck_assert_ptr_eq(v, (void *)7L);
    ck_assert_int_eq(err, 0);
    ck_assert_str_eq(out, "libsf: sf_shutdown() called while this thread is inside a libsf "
                          "call (a signal handler?); ignored\n");
    free(out);
    sf_release(f);
    sf_shutdown();
    signal(SIGUSR1, SIG_DFL);
}
END_TEST
#else
/*
 * The debug build names both misuses and aborts: a call that another thread
 * begins while sf_shutdown() frees the runtime (here sf_stats_read, polled
 * until the shutdown, held open by a call in flight, closes the runtime),
 * and sf_shutdown() from a signal handler inside a call.
 */
static void *polls_stats(void *arg)
{
    (void)arg;
    sf_stats st;
    for (;;)
        (void)sf_stats_read(&st); /* aborts once the runtime closes */
    return NULL;
}

static void call_while_closing(void)
{
    tu_env_threads(2);
    sf_init(NULL);
    pthread_t c, p;
    pthread_create(&c, NULL, caller_in_flight, NULL); /* never let go: holds the close */
    tu_wait_flag(&inflight_started, 10000);
    pthread_create(&p, NULL, polls_stats, NULL);
    sf_shutdown();
}

START_TEST(a_call_while_the_runtime_closes_is_named)
{
    static const char *const parts[] = {
        "libsf: sf_stats_read() called while sf_shutdown() frees the runtime: every other "
        "thread must stop calling libsf before sf_shutdown()",
        NULL};
    tu_expect_abort(call_while_closing, parts);
}
END_TEST

static void *interrupts(void *arg)
{
    tu_sleep_ms(50);
    pthread_kill(*(pthread_t *)arg, SIGUSR1);
    return NULL;
}

static void shutdown_in_handler(void)
{
    sf_future *f = worker_blocked();
    pthread_t me = pthread_self(), t;
    pthread_create(&t, NULL, interrupts, &me);
    sf_get(f); /* blocked until the abort */
}

START_TEST(signal_handler_shutdown_is_named)
{
    static const char *const parts[] = {
        "libsf: sf_shutdown() called while this thread is inside a libsf call (a signal "
        "handler?): no libsf function is async-signal-safe",
        NULL};
    tu_expect_abort(shutdown_in_handler, parts);
}
END_TEST
#endif

/* ---- promises nobody can set (runtime/api/promise.c) ---- */

/* What one task saw: its get's result and errno, and on which pthread it
 * ran. */
struct seen {
    atomic_int started, done;
    void *result;
    int err;
    pthread_t thread;
};

#define SAW(e) ((void *)(intptr_t)(1000 + (e))) /* a task's value: the errno it saw */

static void *get_promise(void *arg)
{
    struct seen *w = arg;
    sf_future *p = w->result; /* handed in here, replaced by what the get saw */
    w->thread = pthread_self();
    atomic_store(&w->started, 1);
    errno = 0;
    void *r = sf_get(p);
    w->err = errno;
    w->result = r;
    atomic_store(&w->done, 1);
    return SAW(r == NULL ? w->err : 0);
}

START_TEST(a_task_waiting_on_an_unset_promise_is_cancelled)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    static struct seen w;
    memset(&w, 0, sizeof w);
    w.result = p;
    ck_assert_ptr_nonnull(sf_do(get_promise, &w)); /* pending: the drain runs it */
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&w.done), 1);
    ck_assert_ptr_null(w.result);
    ck_assert_int_eq(w.err, ECANCELED);
}
END_TEST

/* A chain of three tasks: link(3) gets link(2)'s future, which gets
 * link(1)'s, which gets the promise. Each records what its get saw. */
static struct seen links[3];
static sf_future *chain_promise;

static void *link_task(void *arg)
{
    long k = (long)arg;
    struct seen *w = &links[k - 1];
    atomic_store(&w->started, 1);
    errno = 0;
    void *r;
    if (k == 1) {
        r = sf_get(chain_promise);
    } else {
        sf_future *f = sf_do(link_task, (void *)(k - 1));
        r = sf_get(f);
        sf_release(f);
    }
    w->err = errno;
    w->result = r;
    atomic_store(&w->done, 1);
    return k == 1 ? SAW(r == NULL ? w->err : 0) : r;
}

START_TEST(a_chain_of_three_tasks_ending_at_an_unset_promise_ends)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    memset(links, 0, sizeof links);
    ck_assert_ptr_nonnull(chain_promise = sf_promise());
    ck_assert_ptr_nonnull(sf_do(link_task, (void *)3L));
    sf_shutdown();
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(atomic_load(&links[k].done), 1);
    /* The promise's getter saw ECANCELED; the two above it got its value. */
    ck_assert_ptr_null(links[0].result);
    ck_assert_int_eq(links[0].err, ECANCELED);
    ck_assert_ptr_eq(links[1].result, SAW(ECANCELED));
    ck_assert_ptr_eq(links[2].result, SAW(ECANCELED));
}
END_TEST

static void *ident_task(void *arg) { return arg; }

/* Submits what this thread queued (a get does), so that idle workers take
 * it. */
static void submit(void)
{
    sf_future *f = sf_do(ident_task, NULL);
    ck_assert_ptr_nonnull(f);
    sf_get(f);
    sf_release(f);
}

START_TEST(a_pool_worker_blocked_on_an_unset_promise_is_joined)
{
    int threads = thread_counts[_i];
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    static struct seen w[3];
    memset(w, 0, sizeof w);
    sf_future *ps[3];
    int n = threads > 1 ? threads - 1 : 1; /* one per worker */
    for (int i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(ps[i] = sf_promise());
        w[i].result = ps[i];
        ck_assert_ptr_nonnull(sf_do(get_promise, &w[i]));
    }
    submit();
    if (threads > 1) {
        /* Every worker took one and waits in its get. */
        for (int i = 0; i < n; i++) {
            ck_assert_int_eq(tu_wait_flag(&w[i].started, 5000), 1);
            ck_assert(!pthread_equal(w[i].thread, pthread_self()));
        }
    }
    sf_shutdown();
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(atomic_load(&w[i].done), 1);
        ck_assert_ptr_null(w[i].result);
        ck_assert_int_eq(w[i].err, ECANCELED);
    }
}
END_TEST

/* Task outer gets promise p_outer; its get helps with inner (queued before
 * it, so the drain pops outer first), which gets p_inner: on one thread,
 * outer's fiber is parked under inner's. */
static struct seen inner_w, outer_w;
static sf_future *inner_f;

static void *outer_task(void *arg)
{
    (void)arg;
    return get_promise(&outer_w);
}

START_TEST(a_parked_fiber_blocked_on_an_unset_promise_goes_on)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    memset(&inner_w, 0, sizeof inner_w);
    memset(&outer_w, 0, sizeof outer_w);
    ck_assert_ptr_nonnull(inner_w.result = sf_promise());
    ck_assert_ptr_nonnull(outer_w.result = sf_promise());
    ck_assert_ptr_nonnull(inner_f = sf_do(get_promise, &inner_w));
    ck_assert_ptr_nonnull(sf_do(outer_task, NULL));
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&inner_w.done), 1);
    ck_assert_int_eq(atomic_load(&outer_w.done), 1);
    ck_assert_ptr_null(inner_w.result);
    ck_assert_int_eq(inner_w.err, ECANCELED);
    ck_assert_ptr_null(outer_w.result);
    ck_assert_int_eq(outer_w.err, ECANCELED);
    if (thread_counts[_i] == 1) /* no worker: both ran here, outer parked */
        ck_assert(pthread_equal(inner_w.thread, outer_w.thread));
}
END_TEST

/* A plain thread's get of a task waiting for a promise: a call in flight at
 * the shutdown. */
struct plain_get {
    sf_future *f;
    void *result;
    int err;
    pthread_t thread;
};

static void *plain_get_main(void *arg)
{
    struct plain_get *g = arg;
    errno = 0;
    g->result = sf_get(g->f);
    g->err = errno;
    return NULL;
}

START_TEST(a_timed_out_wait_then_shutdown_returns)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_init(NULL), 0);
    static struct seen w;
    memset(&w, 0, sizeof w);
    ck_assert_ptr_nonnull(w.result = sf_promise());
    sf_future *f = sf_do(get_promise, &w);
    ck_assert_ptr_nonnull(f);
    /* Started elsewhere, by a plain thread's get, at every thread count. */
    static struct plain_get g;
    memset(&g, 0, sizeof g);
    g.f = f;
    ck_assert_int_eq(pthread_create(&g.thread, NULL, plain_get_main, &g), 0);
    ck_assert_int_eq(tu_wait_flag(&w.started, 5000), 1);
    void *r = (void *)1;
    ck_assert_int_eq(sf_wait_for(f, &r, 0.1), ETIMEDOUT);
    ck_assert_ptr_eq(r, (void *)1);
    sf_shutdown(); /* the plain thread's get is a call in flight */
    ck_assert_int_eq(pthread_join(g.thread, NULL), 0);
    ck_assert_int_eq(atomic_load(&w.done), 1);
    ck_assert_ptr_null(w.result);
    ck_assert_int_eq(w.err, ECANCELED);
    ck_assert_ptr_eq(g.result, SAW(ECANCELED));
}
END_TEST

/* A promise that a running task sets later is not cancelled: the task
 * computes (no wait) for a while, then sets it. */
static sf_future *late_p;
static atomic_int setter_done;

static void *set_later(void *arg)
{
    (void)arg;
    tu_spin_us(300000); /* 0.3 s, six times the watch's quiet spell */
    ck_assert_int_eq(sf_promise_set(late_p, (void *)42), 0);
    atomic_store(&setter_done, 1);
    return NULL;
}

/* A plain thread's get of a task waiting on late_p is in flight; `setter`,
 * queued here, sets late_p to `value`, and the shutdown's drain runs it:
 * the get sees the value, not a cancellation. */
static void shutdown_with_a_setter(void *(*setter)(void *), void *value)
{
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&setter_done, 0);
    static struct seen w;
    memset(&w, 0, sizeof w);
    ck_assert_ptr_nonnull(late_p = sf_promise());
    w.result = late_p;
    sf_future *f = sf_do(get_promise, &w);
    ck_assert_ptr_nonnull(f);
    static struct plain_get g;
    memset(&g, 0, sizeof g);
    g.f = f;
    ck_assert_int_eq(pthread_create(&g.thread, NULL, plain_get_main, &g), 0);
    ck_assert_int_eq(tu_wait_flag(&w.started, 5000), 1);
    ck_assert_ptr_nonnull(sf_do(setter, NULL)); /* the drain runs it */
    sf_shutdown();
    ck_assert_int_eq(pthread_join(g.thread, NULL), 0);
    ck_assert_int_eq(atomic_load(&setter_done), 1);
    ck_assert_ptr_eq(w.result, value);
    ck_assert_ptr_eq(g.result, SAW(0));
}

START_TEST(a_promise_a_running_task_sets_is_not_cancelled)
{
    tu_env_threads(thread_counts[_i]);
    shutdown_with_a_setter(set_later, (void *)42);
}
END_TEST

/* A promise that a task sets once its own timed wait gives up is not
 * cancelled: asleep in a wait with a deadline, the task is not stuck. It
 * waits 0.3 s (six times the watch's quiet spell) for a promise nobody
 * sets, then sets late_p. */
static sf_future *never_p;
static int timed_rc;

static void *set_after_timed_wait(void *arg)
{
    (void)arg;
    ck_assert_ptr_nonnull(never_p = sf_promise());
    timed_rc = sf_wait_for(never_p, NULL, 0.3);
    ck_assert_int_eq(sf_promise_set(late_p, (void *)43), 0);
    atomic_store(&setter_done, 1);
    return NULL;
}

START_TEST(a_promise_set_after_a_timed_wait_is_not_cancelled)
{
    tu_env_threads(thread_counts[_i]);
    timed_rc = -1;
    shutdown_with_a_setter(set_after_timed_wait, (void *)43);
    ck_assert_int_eq(timed_rc, ETIMEDOUT);
}
END_TEST

static Suite *shutdown_suite(void)
{
    Suite *s = suite_create("shutdown");
    int n = (int)(sizeof thread_counts / sizeof thread_counts[0]);
    TCase *tc = tcase_create("shutdown");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, drains_pending, 0, n);
    tcase_add_loop_test(tc, released_not_drained, 0, n);
    tcase_add_loop_test(tc, drains_tasks_queued_while_draining, 0, n);
    tcase_add_loop_test(tc, drains_tasks_of_exited_thread, 0, n);
    tcase_add_loop_test(tc, drains_with_busy_workers, 0, n);
    tcase_add_test(tc, shutdown_inside_task_refused);
    tcase_add_test(tc, drained_task_calls_shutdown_and_init);
    tcase_add_test(tc, worker_task_calls_shutdown_and_init);
    tcase_add_test(tc, worker_task_calls_them_during_shutdown);
    tcase_add_test(tc, restart_after_shutdown);
    suite_add_tcase(s, tc);

    TCase *inside = tcase_create("calls in flight");
    tcase_set_timeout(inside, 120);
    tcase_add_loop_test(inside, shutdown_waits_for_calls_in_flight, 0, n);
#ifndef SF_DEBUG
    tcase_add_loop_test(inside, other_threads_still_calling, 0, n);
    tcase_add_test(inside, signal_handler_shutdown_is_refused);
#else
    tcase_add_test(inside, a_call_while_the_runtime_closes_is_named);
    tcase_add_test(inside, signal_handler_shutdown_is_named);
#endif
    suite_add_tcase(s, inside);

    TCase *prom = tcase_create("promises nobody sets");
    tcase_set_timeout(prom, 30);
    tcase_add_loop_test(prom, a_task_waiting_on_an_unset_promise_is_cancelled, 0, n);
    tcase_add_loop_test(prom, a_chain_of_three_tasks_ending_at_an_unset_promise_ends, 0, n);
    tcase_add_loop_test(prom, a_pool_worker_blocked_on_an_unset_promise_is_joined, 0, n);
    tcase_add_loop_test(prom, a_parked_fiber_blocked_on_an_unset_promise_goes_on, 0, n);
    tcase_add_loop_test(prom, a_timed_out_wait_then_shutdown_returns, 0, n);
    tcase_add_loop_test(prom, a_promise_a_running_task_sets_is_not_cancelled, 0, n);
    tcase_add_loop_test(prom, a_promise_set_after_a_timed_wait_is_not_cancelled, 0, n);
    suite_add_tcase(s, prom);
    return s;
}

TU_MAIN(shutdown_suite)
