/*
 * promise_sf.c - the latency from sf_promise_set to the wake of a getter
 * asleep on the promise.
 *
 *     promise_sf [rounds=3000] [threads=2] [delay_us=1000] [wait=get|for]
 *
 * wait=for waits with sf_wait_for and a 10 s deadline instead of sf_get (a
 * timeout is a failure of the run, exit 2).
 *
 * Each round, this thread (a libsf thread) makes a promise, hands it to a
 * plain pthread that never calls libsf otherwise (an I/O thread, an audio
 * callback), and gets it. The setter waits delay_us - long enough for the
 * get to find nothing to help with, spin, yield and go to sleep on the
 * promise's state word - then reads the clock and sets the promise. The
 * getter reads the clock when sf_get returns: the difference is the time
 * from the set's call to the getter running again (the setter's futex wake,
 * the kernel's wake-up, the get's return). The first 10% of the rounds are
 * warm-up and not counted.
 *
 * Prints: PROMISE<TAB>wait=W<TAB>rounds=N<TAB>median_us=..<TAB>p90_us=..
 *         <TAB>p99_us=..<TAB>min_us=..<TAB>max_us=..<TAB>sleeps=S (the runtime's sf_stats.sleeps: at
 *         least one per round when the getter slept before each set)
 * and exits 2 if a get returned a wrong value.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "sf.h"

static _Atomic(sf_future *) slot; /* getter -> setter */
static long rounds = 3000, delay_us = 1000;
static int timed; /* wait=for */
static double set_at;             /* setter -> getter, published by the set */
static double *lat_us;
static int wrong;

static void *setter(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        sf_future *p;
        while ((p = atomic_exchange_explicit(&slot, NULL, memory_order_acquire)) == NULL)
            ;
        struct timespec ts = {delay_us / 1000000, delay_us % 1000000 * 1000};
        nanosleep(&ts, NULL);
        set_at = bench_now();
        if (sf_promise_set(p, (void *)(intptr_t)(i + 1)) != 0) {
            fprintf(stderr, "promise_sf: sf_promise_set: %s\n", strerror(errno));
            exit(3);
        }
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
        else if (strncmp(argv[i], "delay_us=", 9) == 0)
            delay_us = atol(argv[i] + 9);
        else if (strcmp(argv[i], "wait=get") == 0 || strcmp(argv[i], "wait=for") == 0)
            timed = argv[i][5] == 'f';
        else {
            fprintf(stderr, "usage: %s [rounds=N] [threads=N] [delay_us=N] [wait=get|for]\n",
                    argv[0]);
            return 64;
        }
    }
    if (rounds < 10 || threads < 1 || delay_us < 0)
        return 64;
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = threads;
    cfg.trace = SF_TRACE_OFF;
    if (sf_init(&cfg) != 0) {
        fprintf(stderr, "promise_sf: sf_init: %s\n", strerror(errno));
        return 3;
    }
    lat_us = calloc((size_t)rounds, sizeof *lat_us);
    if (lat_us == NULL)
        return 3;
    pthread_t t;
    if (pthread_create(&t, NULL, setter, NULL) != 0) {
        fprintf(stderr, "promise_sf: pthread_create failed\n");
        return 3;
    }
    for (long i = 0; i < rounds; i++) {
        sf_future *p = sf_promise();
        if (p == NULL) {
            fprintf(stderr, "promise_sf: sf_promise: %s\n", strerror(errno));
            return 3;
        }
        atomic_store_explicit(&slot, p, memory_order_release);
        void *v = NULL;
        if (!timed)
            v = sf_get(p);
        else if (sf_wait_for(p, &v, 10.0) != 0)
            wrong++;
        double now = bench_now();
        if (v != (void *)(intptr_t)(i + 1))
            wrong++;
        lat_us[i] = (now - set_at) * 1e6; /* set_at: published by the set */
        sf_release(p);
    }
    pthread_join(t, NULL);
    sf_stats st;
    sf_stats_read(&st);
    long skip = rounds / 10, n = rounds - skip;
    bench_sort_doubles(lat_us + skip, n);
    const double *s = lat_us + skip;
    printf("PROMISE\twait=%s\trounds=%ld\tmedian_us=%.3f\tp90_us=%.3f\tp99_us=%.3f\t"
           "min_us=%.3f\tmax_us=%.3f\tsleeps=%llu\n",
           timed ? "for" : "get", n, s[n / 2], s[n * 9 / 10], s[n * 99 / 100], s[0], s[n - 1],
           (unsigned long long)st.sleeps);
    fflush(stdout);
    free(lat_us);
    sf_shutdown();
    if (wrong) {
        fprintf(stderr, "promise_sf: %d gets returned a wrong value\n", wrong);
        return 2;
    }
    return 0;
}
