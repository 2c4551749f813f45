/*
 * bench_sfcpp.cpp - what include/sf.hpp costs over sf.h, on fib: one task
 * per call, no cutoff, so a task's overhead is nearly all the time.
 *
 *     bench_sfcpp fib threads=N [n=32]
 *         fib by sf::spawn, one RESULT line as bench_sf prints (runtime
 *         libsf-cpp; common.h): what callgrind-run counts.
 *     bench_sfcpp compare threads=N [n=30] [reps=7]
 *         in one process, reps rounds of five fibs - sf_do (bench_sf's),
 *         sf::spawn, sf::spawn of a noexcept lambda, sf_task
 *         (bench_sftask's), sf::task - one after the other, then one
 *         COMPARE line: each one's median seconds and the ratio of each C++
 *         median to its C one (1.00: no cost).
 *
 * The C functions here are bench_sf.c's fib, so the pairs differ in the API
 * alone. Exit status as common.h: 2 on a wrong result, 64 on bad usage.
 */
#include "workloads.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "sf.hpp"

/* ---- the five fibs ------------------------------------------------------- */

__attribute__((noinline)) static void *fib_c(void *arg)
{
    long n = (long)(intptr_t)arg;
    if (n < 2)
        return (void *)(intptr_t)n;
    sf_future *a = sf_do(fib_c, (void *)(intptr_t)(n - 1));
    if (a == nullptr)
        exit(3);
    long b = (long)(intptr_t)fib_c((void *)(intptr_t)(n - 2));
    long r = (long)(intptr_t)sf_get(a) + b;
    sf_release(a);
    return (void *)(intptr_t)r;
}

__attribute__((noinline)) static void *fib_ctask(void *arg)
{
    long n = (long)(intptr_t)arg;
    if (n < 2)
        return (void *)(intptr_t)n;
    sf_task t;
    if (sf_task_do(&t, fib_ctask, (void *)(intptr_t)(n - 1)) != 0)
        exit(3);
    long b = (long)(intptr_t)fib_ctask((void *)(intptr_t)(n - 2));
    return (void *)(intptr_t)((long)(intptr_t)sf_task_get(&t) + b);
}

__attribute__((noinline)) static long fib_spawn(long n)
{
    if (n < 2)
        return n;
    auto a = sf::spawn([n] { return fib_spawn(n - 1); });
    long b = fib_spawn(n - 2);
    return a.get() + b;
}

/* The same with a noexcept lambda: its task needs no catch (sf.hpp,
 * small_task), so its frames are the C version's. A throw in it - spawn's
 * ENOMEM - would terminate. */
__attribute__((noinline)) static long fib_spawn_nx(long n) noexcept
{
    if (n < 2)
        return n;
    auto a = sf::spawn([n]() noexcept { return fib_spawn_nx(n - 1); });
    long b = fib_spawn_nx(n - 2);
    return a.get() + b;
}

__attribute__((noinline)) static long fib_task(long n)
{
    if (n < 2)
        return n;
    sf::task t([n] { return fib_task(n - 1); });
    long b = fib_task(n - 2);
    return t.get() + b;
}

/* ---- fib as a runtime of the harness -------------------------------------- */

static struct bench_params P;

static struct bench_out run_fib(void) { return bench_value((uint64_t)fib_spawn(P.n)); }

static const struct bench_run_entry runs[] = {{"fib", run_fib}};

static void start(int threads)
{
    sf_config cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.threads = threads;
    cfg.stack_size = (size_t)64 << 20; /* bench_sf's */
    if (sf_init(&cfg) != 0) {
        std::fprintf(stderr, "libsf-cpp: sf_init failed: %s\n", std::strerror(errno));
        exit(3);
    }
    if ((uint64_t)fib_spawn(20) != bench_fib_expect(20)) { /* warm-up */
        std::fprintf(stderr, "libsf-cpp: warm-up fib(20) is wrong\n");
        exit(2);
    }
}

/* ---- compare -------------------------------------------------------------- */

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t k = v.size() / 2;
    return v.size() % 2 ? v[k] : (v[k - 1] + v[k]) / 2;
}

static int compare(int argc, char **argv)
{
    int threads = 1;
    long n = 30, reps = 7;
    for (int i = 2; i < argc; i++) {
        long v;
        if (std::sscanf(argv[i], "threads=%ld", &v) == 1 && v >= 1 && v <= SF_MAX_THREADS)
            threads = (int)v;
        else if (std::sscanf(argv[i], "n=%ld", &v) == 1 && v >= 2 && v <= 45)
            n = v;
        else if (std::sscanf(argv[i], "reps=%ld", &v) == 1 && v >= 1)
            reps = v;
        else {
            std::fprintf(stderr, "usage: %s compare threads=N [n=30] [reps=7]\n", argv[0]);
            return 64;
        }
    }
    start(threads);
    uint64_t want = bench_fib_expect(n);
    std::vector<double> t[5];
    for (long r = 0; r < reps; r++) {
        for (int k = 0; k < 5; k++) {
            double t0 = bench_now();
            uint64_t got = k == 0   ? (uint64_t)(intptr_t)fib_c((void *)(intptr_t)n)
                           : k == 1 ? (uint64_t)fib_spawn(n)
                           : k == 2 ? (uint64_t)fib_spawn_nx(n)
                           : k == 3 ? (uint64_t)(intptr_t)fib_ctask((void *)(intptr_t)n)
                                    : (uint64_t)fib_task(n);
            t[k].push_back(bench_now() - t0);
            if (got != want) {
                std::fprintf(stderr, "libsf-cpp: fib(%ld) variant %d gave %llu, not %llu\n", n, k,
                             (unsigned long long)got, (unsigned long long)want);
                return 2;
            }
        }
    }
    double m[5];
    for (int k = 0; k < 5; k++)
        m[k] = median(t[k]);
    std::printf("COMPARE\tthreads=%d\tn=%ld\treps=%ld\tsf_do_s=%.6f\tspawn_s=%.6f\tspawn_ratio=%.3f"
                "\tspawn_noexcept_s=%.6f\tspawn_noexcept_ratio=%.3f"
                "\tsf_task_s=%.6f\ttask_s=%.6f\ttask_ratio=%.3f\n",
                threads, n, reps, m[0], m[1], m[1] / m[0], m[2], m[2] / m[0], m[3], m[4],
                m[4] / m[3]);
    sf_shutdown();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && std::strcmp(argv[1], "compare") == 0)
        return compare(argc, argv);
    bench_parse(argc, argv, &P);
    if (std::strcmp(P.workload, "fib") != 0) {
        std::fprintf(stderr, "libsf-cpp: runs fib alone\n");
        return 64;
    }
    start(P.threads);
    sf_stats s0, s1;
    sf_stats_read(&s0);
    struct bench_result r = bench_run(argv[0], &P, runs, sizeof runs / sizeof runs[0]);
    sf_stats_read(&s1);
    if (s1.created - s0.created != r.tasks)
        std::fprintf(stderr, "WARNING libsf-cpp: sf_stats created %llu tasks, fib made %llu\n",
                     (unsigned long long)(s1.created - s0.created), (unsigned long long)r.tasks);
    int rc = bench_report("libsf-cpp", &P, r.seconds, r.tasks, r.got, r.want, "");
    sf_shutdown();
    return rc;
}
