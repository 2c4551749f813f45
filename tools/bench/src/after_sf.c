/*
 * after_sf.c - continuations (sf_do_after): the latency from sf_promise_set
 * to the start of its continuation, and a continuation's cost against an
 * sf_do + sf_get.
 *
 *     after_sf [threads=2] [rounds=2000] [delay_us=1000] [ops=200000]
 *
 * latency: each round the main thread makes a promise and a continuation
 * of it, hands the promise to a plain pthread (it never calls libsf
 * otherwise: an audio callback), and waits for the continuation. The
 * setter waits delay_us - the pool goes idle, its workers asleep - reads
 * the clock and sets the promise; the continuation reads the clock first
 * thing. The difference: from the set's call to the continuation running
 * on a worker. Beside it, the same rounds with the stage as a task asleep
 * in sf_get of the promise (what a stage was before continuations): from
 * the set to that get's return. The first 10% of the rounds are warm-up.
 * Needs a worker (threads >= 2).
 *
 * cost: ops times, on this thread, sf_do_after of one done dep + sf_get +
 * sf_release, against sf_do + sf_get + sf_release of the same function
 * (median of 5 repetitions, ns per op); and a chain of ops continuations,
 * each after the one before, made then run from an unset promise (ns per
 * link, one repetition).
 *
 * Prints tab-separated KEY=VALUE lines:
 *   LATENCY threads after_median_us after_p99_us get_median_us get_p99_us
 *   COST threads after_ns do_get_ns chain_ns
 * and exits 2 on a wrong result.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "sf.h"

static long rounds = 2000, delay_us = 1000, ops = 200000;
static _Atomic(sf_future *) slot;
static double set_at;      /* setter -> stage, published by the set */
static double started_at;  /* stage -> main, published by the stage's end */

static void *setter(void *arg)
{
    long n = (long)(intptr_t)arg;
    for (long i = 0; i < n; i++) {
        sf_future *p;
        while ((p = atomic_exchange_explicit(&slot, NULL, memory_order_acquire)) == NULL)
            ;
        struct timespec ts = {delay_us / 1000000, delay_us % 1000000 * 1000};
        nanosleep(&ts, NULL);
        set_at = bench_now();
        if (sf_promise_set(p, (void *)(intptr_t)(i + 1)) != 0)
            exit(3);
    }
    return NULL;
}

static void *stamp(void *arg)
{
    started_at = bench_now();
    return arg;
}

static void *getter(void *arg)
{
    void *v = sf_get(arg);
    started_at = bench_now();
    return v;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One series: as continuations (after) or as tasks asleep in a get. */
static void series(int after, double *med, double *p99)
{
    double *lat = malloc((size_t)rounds * sizeof *lat);
    pthread_t t;
    pthread_create(&t, NULL, setter, (void *)(intptr_t)rounds);
    for (long i = 0; i < rounds; i++) {
        sf_future *p = sf_promise();
        sf_future *c;
        if (after) {
            c = sf_do_after(&p, 1, stamp, (void *)(intptr_t)(i + 1));
        } else {
            c = sf_do(getter, p);
            /* Offered to the pool (a timed wait does): a worker starts it,
             * and it sleeps in its get before the set. */
            if (sf_wait_for(c, NULL, 0) == 0)
                exit(2);
        }
        atomic_store_explicit(&slot, p, memory_order_release);
        void *v = sf_get(c);
        if (v != (void *)(intptr_t)(i + 1))
            exit(2);
        lat[i] = (started_at - set_at) * 1e6;
        sf_release(c);
        sf_release(p);
    }
    pthread_join(t, NULL);
    long skip = rounds / 10, n = rounds - skip;
    qsort(lat + skip, (size_t)n, sizeof *lat, cmp);
    *med = lat[skip + n / 2];
    *p99 = lat[skip + n * 99 / 100];
    free(lat);
}

static void *leaf(void *arg) { return (void *)((intptr_t)arg + 1); }

static double cost(int after)
{
    double best[5];
    sf_future *done = sf_promise();
    sf_promise_set(done, NULL);
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        for (long i = 0; i < ops; i++) {
            sf_future *f = after ? sf_do_after(&done, 1, leaf, (void *)(intptr_t)i)
                                 : sf_do(leaf, (void *)(intptr_t)i);
            if (sf_get(f) != (void *)(intptr_t)(i + 1))
                exit(2);
            sf_release(f);
        }
        best[r] = (bench_now() - t0) / (double)ops * 1e9;
    }
    sf_release(done);
    qsort(best, 5, sizeof best[0], cmp);
    return best[2];
}

static void *link_fn(void *arg) { return arg; }

static double chain(void)
{
    sf_future *head = sf_promise();
    sf_future *prev = head;
    double t0 = bench_now();
    for (long i = 0; i < ops; i++) {
        sf_future *c = sf_do_after(&prev, 1, link_fn, (void *)(intptr_t)i);
        if (prev != head)
            sf_release(prev);
        prev = c;
    }
    sf_promise_set(head, NULL);
    if (sf_get(prev) != (void *)(intptr_t)(ops - 1))
        exit(2);
    double ns = (bench_now() - t0) / (double)ops * 1e9;
    sf_release(prev);
    sf_release(head);
    return ns;
}

/* Runs main's work inside a task, as a program's root would. */
static int threads = 2;
static void *root(void *arg)
{
    (void)arg;
    double am = 0, ap = 0, gm = 0, gp = 0;
    if (threads >= 2) {
        series(1, &am, &ap);
        series(0, &gm, &gp);
        printf("LATENCY\tthreads=%d\tafter_median_us=%.2f\tafter_p99_us=%.2f\tget_median_us=%.2f"
               "\tget_p99_us=%.2f\n",
               threads, am, ap, gm, gp);
    }
    double a = cost(1), d = cost(0), c = chain();
    printf("COST\tthreads=%d\tafter_ns=%.1f\tdo_get_ns=%.1f\tchain_ns=%.1f\n", threads, a, d, c);
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "threads=", 8) == 0)
            threads = atoi(argv[i] + 8);
        else if (strncmp(argv[i], "rounds=", 7) == 0)
            rounds = atol(argv[i] + 7);
        else if (strncmp(argv[i], "delay_us=", 9) == 0)
            delay_us = atol(argv[i] + 9);
        else if (strncmp(argv[i], "ops=", 4) == 0)
            ops = atol(argv[i] + 4);
        else {
            fprintf(stderr, "usage: %s [threads=N] [rounds=N] [delay_us=N] [ops=N]\n", argv[0]);
            return 64;
        }
    }
    if (threads < 1 || rounds < 10 || ops < 1)
        return 64;
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = threads;
    if (sf_init(&cfg) != 0)
        return 1;
    sf_future *r = sf_do(root, NULL);
    sf_get(r);
    sf_release(r);
    sf_shutdown();
    return 0;
}
