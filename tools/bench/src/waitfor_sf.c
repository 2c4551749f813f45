/*
 * waitfor_sf.c - what a timed wait that does not time out costs against
 * sf_wait, on the same futures, side by side in one run.
 *
 *     waitfor_sf [batches=200] [per=1000] [threads=2] [spin_us=20]
 *
 * Three cases, each timed as `batches` batches of `per` calls, the two
 * calls alternating batch by batch so that both see the same machine:
 *   own      f = sf_do(noop) then the wait: sf_wait claims f's task and
 *            runs it here (the fork-join case: nobody else has started it);
 *            sf_wait_for, which runs no task, leaves it to a pool worker;
 *   done     a wait on a future already done (a result handed on);
 *   running  f is a batch task (submitted at once) that spins spin_us on a
 *            pool worker while this thread waits for it: sf_wait helps, spins
 *            and sleeps as a get does, sf_wait_for sleeps on f alone. Needs
 *            threads >= 2. One call per round, rounds = batches.
 * sf_wait_for's deadline is 10 s: it never times out here (a timeout is a
 * failure of the run, exit 2, as is a wrong result).
 *
 * Prints per case: WAITFOR<TAB>case=C<TAB>calls=N<TAB>wait_ns=..<TAB>
 *   wait_for_ns=..<TAB>ratio=.. - medians over the batches of the time per
 *   call (running: per round), ratio = wait_for_ns / wait_ns.
 */
#include "common.h"

#include <stdbool.h>

#include "sf.h"

static long batches = 200, per = 1000, spin_us = 20;
static int failures;

static void *noop(void *arg) { return arg; }

static void *spin(void *arg)
{
    double end = bench_now() + (double)spin_us * 1e-6;
    while (bench_now() < end)
        ;
    return arg;
}

static double median(double *v, long n)
{
    bench_sort_doubles(v, n);
    return v[n / 2];
}

/* One wait, checked: the value must be arg, and a timed wait must not time
 * out. */
static void wait_one(sf_future *f, bool timed, void *arg)
{
    void *r = NULL;
    int rc = timed ? sf_wait_for(f, &r, 10.0) : sf_wait(f, &r);
    if (rc != 0 || r != arg)
        failures++;
}

enum which_case { OWN, DONE, RUNNING };

/* Time of one batch of `per` calls (RUNNING: one round), in ns per call. */
static double one_batch(enum which_case c, bool timed, sf_batch *b)
{
    if (c == RUNNING) {
        sf_future *f = sf_batch_do(b, spin, (void *)7);
        if (f == NULL) {
            failures++;
            return 0;
        }
        double t0 = bench_now();
        wait_one(f, timed, (void *)7);
        double t = bench_now() - t0;
        sf_release(f);
        return t * 1e9;
    }
    sf_future *d = NULL;
    if (c == DONE) {
        d = sf_do(noop, (void *)5);
        wait_one(d, false, (void *)5);
    }
    double t0 = bench_now();
    for (long i = 0; i < per; i++) {
        if (c == OWN) {
            sf_future *f = sf_do(noop, (void *)(intptr_t)(i + 1));
            wait_one(f, timed, (void *)(intptr_t)(i + 1));
            sf_release(f);
        } else {
            wait_one(d, timed, (void *)5);
        }
    }
    double t = bench_now() - t0;
    if (d != NULL)
        sf_release(d);
    return t * 1e9 / (double)per;
}

int main(int argc, char **argv)
{
    int threads = 2;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "batches=", 8) == 0)
            batches = atol(argv[i] + 8);
        else if (strncmp(argv[i], "per=", 4) == 0)
            per = atol(argv[i] + 4);
        else if (strncmp(argv[i], "threads=", 8) == 0)
            threads = atoi(argv[i] + 8);
        else if (strncmp(argv[i], "spin_us=", 8) == 0)
            spin_us = atol(argv[i] + 8);
        else {
            fprintf(stderr, "usage: %s [batches=N] [per=N] [threads=N] [spin_us=N]\n",
                    argv[0]);
            return 64;
        }
    }
    if (batches < 2 || per < 1 || threads < 1 || spin_us < 0)
        return 64;
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = threads;
    cfg.trace = SF_TRACE_OFF;
    if (sf_init(&cfg) != 0) {
        fprintf(stderr, "waitfor_sf: sf_init: %s\n", strerror(errno));
        return 3;
    }
    sf_batch *b = sf_batch_new();
    double *plain = calloc((size_t)batches, sizeof *plain);
    double *timed = calloc((size_t)batches, sizeof *timed);
    if (b == NULL || plain == NULL || timed == NULL)
        return 3;
    static const char *const names[] = {"own", "done", "running"};
    for (int c = OWN; c <= RUNNING; c++) {
        if (c == RUNNING && threads < 2)
            break;
        for (long k = 0; k < batches; k++) {
            /* Alternate which goes first, so neither always follows the
             * other's warm caches. */
            bool first_timed = k % 2;
            double x = one_batch((enum which_case)c, first_timed, b);
            double y = one_batch((enum which_case)c, !first_timed, b);
            plain[k] = first_timed ? y : x;
            timed[k] = first_timed ? x : y;
        }
        double mp = median(plain, batches), mt = median(timed, batches);
        printf("WAITFOR\tcase=%s\tcalls=%ld\twait_ns=%.1f\twait_for_ns=%.1f\tratio=%.3f\n",
               names[c], c == RUNNING ? batches : batches * per, mp, mt, mt / mp);
        fflush(stdout);
    }
    sf_batch_close(b);
    free(plain);
    free(timed);
    sf_shutdown();
    if (failures) {
        fprintf(stderr, "waitfor_sf: %d waits failed, timed out or returned a wrong value\n",
                failures);
        return 2;
    }
    return 0;
}
