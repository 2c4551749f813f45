/*
 * feed_sf.c - a pipeline of handed futures fed by a plain thread: the
 * shape of an I/O thread feeding blocks to tasks while the main thread
 * takes the results in order.
 *
 *     feed_sf [items=20000] [threads=2] [work_us=5] [reps=5] [root=0|1]
 *
 * Each rep: the main thread makes `items` promises in[i] and `items` lazy
 * tasks stage(i) (sf_do); a plain pthread that never calls libsf otherwise
 * sets in[0], in[1], ... as fast as it can; stage(i) gets in[i], spins
 * work_us and returns the value + 1; the main thread gets stage(0),
 * stage(1), ... in order - or, root=1, a root task the main thread gets
 * makes the stages and gets them (a get inside a task helps with its
 * siblings; one of plain code does not). Uses only calls every libsf
 * version has, so that
 * tools/bench/feed-run can build it against an older tree side by side.
 *
 * Prints per rep: FEED<TAB>threads=T<TAB>items=N<TAB>seconds=..<TAB>
 *   per_item_us=.. (wall time over items), then one line
 *   FEED_MEDIAN<TAB>threads=T<TAB>per_item_us=.. (the median rep); exits 2
 *   if a value is wrong.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>

#include "sf.h"

static long items = 20000, work_us = 5, reps = 5;
static int in_root;
static sf_future **in;
static int wrong;

static void *feeder(void *arg)
{
    (void)arg;
    for (long i = 0; i < items; i++)
        if (sf_promise_set(in[i], (void *)(intptr_t)(i + 1)) != 0) {
            fprintf(stderr, "feed_sf: sf_promise_set: %s\n", strerror(errno));
            exit(3);
        }
    return NULL;
}

static void *stage(void *arg)
{
    long i = (long)(intptr_t)arg;
    void *v = sf_get(in[i]);
    double end = bench_now() + (double)work_us * 1e-6;
    while (bench_now() < end)
        ;
    return (void *)((intptr_t)v + 1);
}

/* Makes the stages, starts the feeder, gets the stages in order. */
static void *consume(void *arg)
{
    pthread_t *t = arg;
    sf_future **fs = calloc((size_t)items, sizeof *fs);
    if (fs == NULL)
        exit(3);
    for (long i = 0; i < items; i++)
        if ((fs[i] = sf_do(stage, (void *)(intptr_t)i)) == NULL)
            exit(3);
    if (pthread_create(t, NULL, feeder, NULL) != 0)
        exit(3);
    for (long i = 0; i < items; i++) {
        if (sf_get(fs[i]) != (void *)(intptr_t)(i + 2))
            wrong++;
        sf_release(fs[i]);
    }
    free(fs);
    return NULL;
}

static double one_rep(void)
{
    for (long i = 0; i < items; i++)
        if ((in[i] = sf_promise()) == NULL)
            exit(3);
    double t0 = bench_now();
    pthread_t t;
    if (in_root) {
        sf_future *r = sf_do(consume, &t);
        if (r == NULL)
            exit(3);
        (void)sf_get(r);
        sf_release(r);
    } else {
        consume(&t);
    }
    double took = bench_now() - t0;
    pthread_join(t, NULL);
    for (long i = 0; i < items; i++)
        sf_release(in[i]);
    return took;
}

int main(int argc, char **argv)
{
    int threads = 2;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "items=", 6) == 0)
            items = atol(argv[i] + 6);
        else if (strncmp(argv[i], "threads=", 8) == 0)
            threads = atoi(argv[i] + 8);
        else if (strncmp(argv[i], "work_us=", 8) == 0)
            work_us = atol(argv[i] + 8);
        else if (strncmp(argv[i], "reps=", 5) == 0)
            reps = atol(argv[i] + 5);
        else if (strcmp(argv[i], "root=0") == 0 || strcmp(argv[i], "root=1") == 0)
            in_root = argv[i][5] == '1';
        else {
            fprintf(stderr, "usage: %s [items=N] [threads=N] [work_us=N] [reps=N] [root=0|1]\n",
                    argv[0]);
            return 64;
        }
    }
    if (items < 1 || threads < 1 || work_us < 0 || reps < 1)
        return 64;
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = threads;
    cfg.trace = SF_TRACE_OFF;
    if (sf_init(&cfg) != 0) {
        fprintf(stderr, "feed_sf: sf_init: %s\n", strerror(errno));
        return 3;
    }
    in = calloc((size_t)items, sizeof *in);
    double *per = calloc((size_t)reps, sizeof *per);
    if (in == NULL || per == NULL)
        return 3;
    for (long r = 0; r < reps; r++) {
        double s = one_rep();
        per[r] = s / (double)items * 1e6;
        printf("FEED\tthreads=%d\titems=%ld\tseconds=%.4f\tper_item_us=%.3f\n", threads, items, s,
               per[r]);
    }
    bench_sort_doubles(per, reps);
    printf("FEED_MEDIAN\tthreads=%d\tper_item_us=%.3f\n", threads, per[reps / 2]);
    fflush(stdout);
    free(per);
    free(in);
    sf_shutdown();
    if (wrong) {
        fprintf(stderr, "feed_sf: %d gets returned a wrong value\n", wrong);
        return 2;
    }
    return 0;
}
