/*
 * xget_sf.c - the latency of a cross-thread get in libsf: one thread queues
 * a task and goes on computing (or sleeps), another gets the task's future.
 *
 *     xget_sf [rounds=2000] [threads=2] [owner=busy|asleep] [queued=N]
 *
 * The producer (a thread of the program) makes a trivial task with sf_do(),
 * hands the future to the consumer through an atomic slot and then, as a
 * pipeline stage that queues a block and computes the next, spins on plain
 * arithmetic (owner=busy) or sleeps in nanosleep (owner=asleep) until the
 * consumer is done with it. The producer never gets anything, so the task
 * is never submitted: nothing but the consumer's get can run it (the pool
 * stays out of it: laziness). The consumer (another thread of the program)
 * times sf_get() alone, from its call to its return; the task returns its
 * argument at once, so the time is the cost of claiming a task another
 * thread queued, not of running it. The first 10% of the rounds are warm-up
 * and not counted.
 *
 * queued=N: a consumer catching up with a producer. The producer queues N
 * tasks first, hands all N futures over at once and then computes (or
 * sleeps) until the consumer has got them all, one by one in the order
 * queued; every get is timed and counted (rounds is N). So the first get
 * finds N private tasks queued before anyone asked for them.
 *
 * Prints: XGET<TAB>owner=busy<TAB>queued=N<TAB>rounds=N<TAB>median_us=..<TAB>p90_us=..
 *         <TAB>min_us=..<TAB>max_us=..
 * and exits 2 if a get returned a wrong value.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "sf.h"

static void *identity(void *arg) { return arg; }

static _Atomic(sf_future *) slot; /* producer -> consumer */
static atomic_int consumed;       /* consumer -> producer: rounds done */
static long rounds = 2000;
static int owner_busy = 1;
static double *lat_us;
static int wrong;
static long queued;                      /* queued=N: the batch mode; 0: rounds */
static sf_future *_Atomic batch_ready;   /* queued=N: the first of the N futures */
static sf_future **batch;

/* Busy: a stage computing its next block, no libsf call meanwhile. */
static void owner_wait(long done_at_least)
{
    volatile uint64_t sink = 0;
    while (atomic_load_explicit(&consumed, memory_order_acquire) < done_at_least) {
        if (owner_busy) {
            sink = bench_spin(sink, 200);
        } else {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

static sf_future *make(long i)
{
    sf_future *f = sf_do(identity, (void *)(intptr_t)(i + 1));
    if (f == NULL) {
        fprintf(stderr, "xget_sf: sf_do: %s\n", strerror(errno));
        exit(3);
    }
    return f;
}

static void *producer(void *arg)
{
    (void)arg;
    if (queued > 0) {
        for (long i = 0; i < queued; i++)
            batch[i] = make(i);
        atomic_store_explicit(&batch_ready, batch[0], memory_order_release);
        owner_wait(queued);
        return NULL;
    }
    for (long i = 0; i < rounds; i++) {
        atomic_store_explicit(&slot, make(i), memory_order_release);
        owner_wait(i + 1);
    }
    return NULL;
}

/* Times the get of the future of round i and releases it. */
static void get_one(long i, sf_future *f)
{
    double t0 = bench_now();
    void *v = sf_get(f);
    double t1 = bench_now();
    if (v != (void *)(intptr_t)(i + 1))
        wrong++;
    sf_release(f);
    lat_us[i] = (t1 - t0) * 1e6;
    atomic_store_explicit(&consumed, (int)(i + 1), memory_order_release);
}

static void *consumer(void *arg)
{
    (void)arg;
    if (queued > 0) {
        while (atomic_load_explicit(&batch_ready, memory_order_acquire) == NULL)
            ;
        /* Let the producer get into its computing (or its sleep). */
        double until = bench_now() + 100e-6;
        while (bench_now() < until)
            ;
        for (long i = 0; i < queued; i++)
            get_one(i, batch[i]);
        return NULL;
    }
    for (long i = 0; i < rounds; i++) {
        sf_future *f;
        while ((f = atomic_exchange_explicit(&slot, NULL, memory_order_acquire)) == NULL)
            ;
        /* Let the producer get into its computing (or its sleep). */
        double until = bench_now() + 20e-6;
        while (bench_now() < until)
            ;
        get_one(i, f);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 2;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "rounds=", 7) == 0)
            rounds = atol(argv[i] + 7);
        else if (strncmp(argv[i], "threads=", 8) == 0)
            threads = atoi(argv[i] + 8);
        else if (strcmp(argv[i], "owner=busy") == 0)
            owner_busy = 1;
        else if (strcmp(argv[i], "owner=asleep") == 0)
            owner_busy = 0;
        else if (strncmp(argv[i], "queued=", 7) == 0)
            queued = atol(argv[i] + 7);
        else {
            fprintf(stderr, "usage: %s [rounds=N] [threads=N] [owner=busy|asleep] [queued=N]\n",
                    argv[0]);
            return 64;
        }
    }
    if (queued > 0)
        rounds = queued;
    if (rounds < 10 || threads < 1 || queued < 0 || queued > INT32_MAX)
        return 64;
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = threads;
    cfg.trace = SF_TRACE_OFF;
    if (sf_init(&cfg) != 0) {
        fprintf(stderr, "xget_sf: sf_init: %s\n", strerror(errno));
        return 3;
    }
    lat_us = calloc((size_t)rounds, sizeof *lat_us);
    batch = queued > 0 ? calloc((size_t)queued, sizeof *batch) : NULL;
    if (lat_us == NULL || (queued > 0 && batch == NULL))
        return 3;
    pthread_t p, c;
    if (pthread_create(&c, NULL, consumer, NULL) != 0 ||
        pthread_create(&p, NULL, producer, NULL) != 0) {
        fprintf(stderr, "xget_sf: pthread_create failed\n");
        return 3;
    }
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    /* A batch has no warm-up: its first get is the one that finds them all
     * private, and the point of the mode. */
    long skip = queued > 0 ? 0 : rounds / 10, n = rounds - skip;
    bench_sort_doubles(lat_us + skip, n);
    const double *s = lat_us + skip;
    printf("XGET\towner=%s\tqueued=%ld\trounds=%ld\tmedian_us=%.3f\tp90_us=%.3f\tmin_us=%.3f"
           "\tmax_us=%.3f\n",
           owner_busy ? "busy" : "asleep", queued, n, s[n / 2], s[n * 9 / 10], s[0], s[n - 1]);
    fflush(stdout);
    free(lat_us);
    free(batch);
    sf_shutdown();
    if (wrong) {
        fprintf(stderr, "xget_sf: %d gets returned a wrong value\n", wrong);
        return 2;
    }
    return 0;
}
