/*
 * meh - the "embrace of meh" demo: gets nested far deeper than the pool is
 * wide, which deadlocks a naive thread pool, run to completion by libsf.
 *
 * The embrace of meh (Sonic Field's name for it) is a deadlock without a
 * mutex. Take a fixed pool of W threads where a task that needs a child's
 * result submits the child and blocks its thread until the child is done.
 * Nest that deeper than W: the first W levels each hold a pool thread while
 * they wait, the next child sits in the queue with no thread left to run it,
 * and every thread waits for a task that can never start. Here the chain is
 * 10,000 levels deep and the tree has up to 32,768 interior nodes waiting at
 * once, against a pool of SF_THREADS - 1 workers. The opposite fix, a pool
 * that grows a thread per blocked task, is no better: 10,000 threads of
 * stack and scheduler load for a computation that needs one.
 *
 * libsf does neither:
 *   - sf_do() only queues; nothing is submitted until someone gets.
 *   - Idle pool workers take submitted tasks, so at most W of them are busy
 *     (the soft cap). Beyond the cap nobody takes the task, and the get that
 *     needs it runs it directly on its own thread: the nesting goes onto that
 *     thread's stack instead of into the pool.
 *   - A get whose task is already running elsewhere does not block its thread
 *     either: it runs other pending work (steals) meanwhile, and sleeps only
 *     when there is nothing at all to run - and then the task it waits for is
 *     running on some thread and will finish.
 * So every thread is either running a task or waiting for a running one, and
 * the pool never grows: the peak number of busy workers printed at the end
 * stays within the configured workers however deep the nesting goes.
 *
 * The price is stack: nesting lives on thread stacks, so the workers get a
 * 64 MiB stack through sf_config, and the demo runs on a thread of its own
 * with the same, since the main thread's stack is whatever the system gives.
 *
 *     usage: SF_THREADS=2 ./meh
 *
 * Exit status: 0 all counts right, 1 a wrong count, a runtime failure, or no
 * progress for WATCHDOG_S seconds (a deadlock, if libsf had one).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sigaction, pthread attrs */
#endif

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sf.h"

#define CHAIN_DEPTH 10000
#define FANOUT 8
#define TREE_DEPTH 6
#define STACK_SIZE ((size_t)64 << 20)
/* A deadlock shows as a hang; the watchdog turns it into a failure. Generous,
 * because sanitizer builds on small machines are slow. */
#define WATCHDOG_S 300
#define STR(x) #x
#define XSTR(x) STR(x)

/* Threads in this process when the chain hit bottom: the proof that depth
 * did not turn into threads. */
static int threads_at_bottom = -1;

/* Counts /proc/self/task entries: Linux only, -1 elsewhere. */
static int count_os_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* A queue that failed to allocate a future still has the work done - on this
 * thread, which is what libsf would do at its cap anyway. */
static sf_future *spawn(void *(*fn)(void *), void *arg)
{
    sf_future *f = sf_do(fn, arg);
    if (!f)
        fprintf(stderr, "meh: sf_do: %s; running the task directly\n", strerror(errno));
    return f;
}

static void *collect(sf_future *f, void *(*fn)(void *), void *arg)
{
    if (!f)
        return fn(arg);
    void *r = sf_get(f);
    sf_release(f);
    return r;
}

/* One level of the chain: queue the level below and wait for it. Returns the
 * number of levels from here to the bottom. */
static void *chain_task(void *arg)
{
    intptr_t below = (intptr_t)arg;
    if (below == 0) {
        threads_at_bottom = count_os_threads();
        return (void *)1;
    }
    void *next = (void *)(below - 1);
    return (void *)((intptr_t)collect(spawn(chain_task, next), chain_task, next) + 1);
}

/* One node of the tree: queue all children, then get each. Returns the number
 * of nodes in this subtree. */
static void *tree_task(void *arg)
{
    intptr_t depth = (intptr_t)arg;
    if (depth == 0)
        return (void *)1;
    void *child = (void *)(depth - 1);
    sf_future *kids[FANOUT];
    for (int i = 0; i < FANOUT; i++)
        kids[i] = spawn(tree_task, child);
    intptr_t n = 1;
    for (int i = 0; i < FANOUT; i++)
        n += (intptr_t)collect(kids[i], tree_task, child);
    return (void *)n;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_alarm(int sig)
{
    static const char msg[] = "meh: no result after " XSTR(WATCHDOG_S) " s: deadlocked?\n";
    (void)sig;
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

/* Runs one phase from a fresh future and prints how its tasks ran. */
static long phase(const char *name, void *(*fn)(void *), intptr_t arg, sf_stats *before)
{
    double t0 = now_ms();
    long got = (long)(intptr_t)collect(spawn(fn, (void *)arg), fn, (void *)arg);
    double t = now_ms() - t0;
    sf_stats now;
    if (sf_stats_read(&now) < 0) {
        fprintf(stderr, "meh: sf_stats_read: %s\n", strerror(errno));
        exit(1);
    }
    printf("%-6s %.3f ms; tasks created %" PRIu64 ": run inline %" PRIu64 ", by the pool %"
           PRIu64 ", stolen %" PRIu64 "\n",
           name, t, now.created - before->created, now.run_inline - before->run_inline,
           now.run_pool - before->run_pool, now.run_stolen - before->run_stolen);
    *before = now;
    return got;
}

static void *demo(void *unused)
{
    (void)unused;
    int bad = 0;
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg); /* environment, then defaults... */
    cfg.stack_size = STACK_SIZE; /* ...but deep stacks for deep nesting */
    if (sf_init(&cfg) < 0) {
        fprintf(stderr, "meh: sf_init: %s\n", strerror(errno));
        return (void *)1;
    }
    sf_stats st;
    if (sf_stats_read(&st) < 0) {
        fprintf(stderr, "meh: sf_stats_read: %s\n", strerror(errno));
        return (void *)1;
    }
    printf("meh: %d thread%s run tasks: %d pool worker%s and this one\n", st.threads,
           st.threads == 1 ? "" : "s", st.workers, st.workers == 1 ? "" : "s");

    long levels = phase("chain:", chain_task, CHAIN_DEPTH - 1, &st);
    printf("       %ld levels of nested gets (want %d); %d OS threads in the process at "
           "the bottom\n", levels, CHAIN_DEPTH, threads_at_bottom);
    if (levels != CHAIN_DEPTH)
        bad = 1;

    long want = 0, width = 1;
    for (int d = 0; d <= TREE_DEPTH; d++, width *= FANOUT)
        want += width;
    long nodes = phase("tree:", tree_task, TREE_DEPTH, &st);
    printf("       %ld nodes, fan-out %d, depth %d (want %ld)\n", nodes, FANOUT, TREE_DEPTH,
           want);
    if (nodes != want)
        bad = 1;

    printf("pool:  %d worker%s configured, at most %d busy at once; nothing deadlocked\n",
           st.workers, st.workers == 1 ? "" : "s", st.peak_busy);
    if (st.peak_busy > st.workers || st.workers != st.threads - 1) {
        fprintf(stderr, "meh: WRONG: the pool went past its cap (threads %d, workers %d, "
                "peak busy %d)\n", st.threads, st.workers, st.peak_busy);
        bad = 1;
    }
    if (levels != CHAIN_DEPTH || nodes != want)
        fprintf(stderr, "meh: WRONG: chain %ld (want %d), tree %ld (want %ld)\n", levels,
                CHAIN_DEPTH, nodes, want);
    sf_shutdown();
    return (void *)(intptr_t)bad;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "meh: takes no arguments; usage: SF_THREADS=N meh\n");
        return 2;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(WATCHDOG_S);

    pthread_attr_t attr;
    pthread_t th;
    void *bad;
    int err = pthread_attr_init(&attr);
    if (!err)
        err = pthread_attr_setstacksize(&attr, STACK_SIZE);
    if (!err)
        err = pthread_create(&th, &attr, demo, NULL);
    if (err) {
        fprintf(stderr, "meh: cannot start the demo thread: %s\n", strerror(err));
        return 1;
    }
    pthread_attr_destroy(&attr);
    pthread_join(th, &bad);
    return bad ? 1 : 0;
}
