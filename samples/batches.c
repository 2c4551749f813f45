/*
 * batches.c - fair batches in a server-like setting: a large background job
 * (one batch of many tasks) runs on the pool while small interactive
 * requests (one small batch each) keep arriving. Each request gets its share
 * of the workers at once, round-robin with the background batch, instead of
 * queuing behind it; the request's thread helps with its own batch while it
 * waits (sf_batch_wait). Prints each request's latency, then the background
 * job's result.
 *
 *     SF_THREADS=4 ./samples/batches
 *
 * The results (checksums) are exact whatever the schedule; the times are
 * this machine's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sf.h"

#define BACKGROUND 4000 /* tasks of the background job */
#define REQUESTS 6      /* interactive requests */
#define REQUEST_TASKS 8 /* tasks per request */
#define WORK 20000      /* iterations of a task: some tens of microseconds */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile uintptr_t sink; /* keeps the timing run below from being optimised out */

/* A task: a little hashing whose result depends only on its argument. */
static void *work(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
    for (int i = 0; i < WORK; i++)
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return (void *)(uintptr_t)(x & 0xffff);
}

int main(void)
{
    static sf_future *bg[BACKGROUND];
    sf_batch *job = sf_batch_new();
    if (job == NULL) {
        perror("sf_batch_new");
        return 1;
    }
    double t0 = now_ms();
    for (uintptr_t i = 0; i < BACKGROUND; i++)
        if ((bg[i] = sf_batch_do(job, work, (void *)i)) == NULL) {
            perror("sf_batch_do");
            return 1;
        }
    /* Time a task alone, to express latencies in task-lengths. */
    double a = now_ms();
    for (uintptr_t i = 0; i < 10; i++)
        sink = (uintptr_t)work((void *)i);
    double task_ms = (now_ms() - a) / 10;
    sf_stats st;
    sf_stats_read(&st);
    int runners = st.threads; /* the workers, and this thread when it waits */

    for (int r = 0; r < REQUESTS; r++) {
        struct timespec gap = {0, 20 * 1000000L}; /* a request every 20 ms */
        nanosleep(&gap, NULL);
        int left = 0;
        for (int i = 0; i < BACKGROUND; i++)
            left += sf_is_done(bg[i]) != 1;
        double start = now_ms();
        sf_batch *req = sf_batch_new();
        sf_future *f[REQUEST_TASKS];
        for (uintptr_t i = 0; i < REQUEST_TASKS; i++)
            f[i] = sf_batch_do(req, work, (void *)(1000000 + r * 100 + i));
        sf_batch_wait(req);
        double took = now_ms() - start;
        uint64_t sum = 0;
        for (int i = 0; i < REQUEST_TASKS; i++) {
            sum += (uintptr_t)sf_get(f[i]);
            sf_release(f[i]);
        }
        sf_batch_close(req);
        /* Behind the background job in one FIFO it would have waited for the
         * tasks still queued, spread over the threads. */
        printf("request %d: checksum %llu, %.2f ms = %.1f task-lengths (FIFO behind %d "
               "background tasks: ~%.0f ms)\n",
               r, (unsigned long long)sum, took, took / task_ms, left,
               left * task_ms / runners);
    }
    sf_batch_wait(job);
    uint64_t sum = 0;
    for (int i = 0; i < BACKGROUND; i++) {
        sum += (uintptr_t)sf_get(bg[i]);
        sf_release(bg[i]);
    }
    sf_batch_close(job);
    printf("background: checksum %llu, %d tasks in %.0f ms\n", (unsigned long long)sum,
           BACKGROUND, now_ms() - t0);
    sf_shutdown();
    return 0;
}
