/*
 * mpi_pingpong.c - an 8-byte MPI ping-pong between ranks 0 and 1, four
 * ways in one job: raw MPI (MPI_Irecv + MPI_Isend + MPI_Waitall), libsf-mpi
 * futures progressed by libsf's idle hook only (SF_MPI_PROGRESS_HOOK), by
 * its progress thread only (SF_MPI_PROGRESS_THREAD), and by both
 * (SF_MPI_PROGRESS_AUTO, the default).
 *
 *     mpiexec -np 2 tools/bench/mpi_pingpong [rounds=R] [trips=N] [warmup=W]
 *                                            [threads=T] [nap=S]
 *
 * R rounds (default 10), each running the four ways back to back in a
 * rotating order (so none is always first after a barrier), each way N round
 * trips (default 2000) after W untimed ones (default 200, the warm-up),
 * sf_mpi_finalize() and sf_mpi_init() between the futures' modes. libsf
 * runs at T threads (default 1: the waiting get is the hook's only caller;
 * more puts idle pool workers on the hook too). nap: the progress thread's
 * max_nap (default 0: libsf-mpi's default).
 *
 * A round trip, rank 0: post the receive, post the send, wait for both
 * (raw: MPI_Waitall; futures: sf_wait of the receive's future from plain
 * code, which calls the idle hook while it waits, then of the send's).
 * Rank 1: post the receive, wait for it, post the send, wait for it. Rank 0
 * times each trip (CLOCK_MONOTONIC) and checks the 8 bytes that come back
 * (the trip's number, plus one); a wrong one exits 2.
 *
 * Rank 0 prints one line per way:
 *   RESULT<TAB>way=raw|hook|thread|auto<TAB>trips=N<TAB>median_us=M<TAB>p99_us=P
 *     <TAB>min_us=m<TAB>mean_us=a<TAB>threads=T<TAB>over10us=F<TAB>over100us=F
 *     <TAB>over1ms=F<TAB>sleeps0=S<TAB>sleeps1=S
 * over every timed trip of every round: overX the fraction of trips longer
 * than X, sleepsR the times rank R's gets slept per timed trip (sf_stats
 * sleeps, counted over the timed trips: where a futures trip's tail comes
 * from, a get that found nothing to do in its spins and yields); then one
 * RATIO line per futures way (its median and p99 over raw's).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sf.h"
#include "sf_mpi.h"

enum { RAW, HOOK, THREAD, AUTO, WAYS };
static const char *const way_name[WAYS] = {"raw", "hook", "thread", "auto"};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int rank;

static _Noreturn void fail(const char *what, int e)
{
    fprintf(stderr, "mpi_pingpong: rank %d: %s: %s\n", rank, what, strerror(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Waits for f (which must succeed) and releases it. */
static void wait_rel(sf_future *f, const char *what)
{
    if (f == NULL)
        fail(what, errno);
    int e = sf_wait(f, NULL);
    if (e != 0) {
        fprintf(stderr, "mpi_pingpong: rank %d: %s: %s\n", rank, what,
                sf_error_message(f) != NULL ? sf_error_message(f) : strerror(e));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    sf_release(f);
}

/* One round trip of message i; rank 0 returns its time in us. */
static double trip(int way, uint64_t i)
{
    uint64_t out = i, in = 0;
    MPI_Status st;
    double t0 = now_us();
    if (way == RAW) {
        MPI_Request r[2];
        if (rank == 0) {
            MPI_Irecv(&in, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(&out, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r[1]);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        } else {
            MPI_Irecv(&in, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r[0]);
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
            out = in + 1;
            MPI_Isend(&out, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r[1]);
            MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        }
    } else if (rank == 0) {
        sf_future *rf = sf_mpi_irecv(&in, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &st);
        sf_future *sfu = sf_mpi_isend(&out, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        wait_rel(rf, "receive");
        wait_rel(sfu, "send");
    } else {
        wait_rel(sf_mpi_irecv(&in, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &st), "receive");
        out = in + 1;
        wait_rel(sf_mpi_isend(&out, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD), "send");
    }
    double t = now_us() - t0;
    if (rank == 0 && in != i + 1) {
        fprintf(stderr, "mpi_pingpong: trip %llu came back as %llu\n", (unsigned long long)i,
                (unsigned long long)in);
        MPI_Abort(MPI_COMM_WORLD, 2);
        exit(2);
    }
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of sorted v[0..n): the nearest rank. */
static double quantile(const double *v, size_t n, double q)
{
    size_t i = (size_t)(q * (double)n + 0.999999);
    return v[i == 0 ? 0 : (i > n ? n : i) - 1];
}

static long arg(int argc, char **argv, const char *key, long def)
{
    size_t k = strlen(key);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], key, k) == 0 && argv[i][k] == '=')
            return strtol(argv[i] + k + 1, NULL, 10);
    return def;
}

static double argf(int argc, char **argv, const char *key, double def)
{
    size_t k = strlen(key);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], key, k) == 0 && argv[i][k] == '=')
            return strtod(argv[i] + k + 1, NULL);
    return def;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long rounds = arg(argc, argv, "rounds", 10), trips = arg(argc, argv, "trips", 2000),
               warmup = arg(argc, argv, "warmup", 200), threads = arg(argc, argv, "threads", 1);
    const double nap = argf(argc, argv, "nap", 0);
    if (size != 2 || provided < MPI_THREAD_MULTIPLE || rounds < 1 || trips < 1 || warmup < 0 ||
        threads < 1 || threads > SF_MAX_THREADS) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: needs 2 ranks, MPI_THREAD_MULTIPLE, rounds, trips, "
                            "threads >= 1\n");
        MPI_Finalize();
        return 64;
    }
    sf_config cfg = {.threads = (int)threads};
    if (sf_init(&cfg) != 0)
        fail("sf_init", errno);
    double *t[WAYS];
    for (int w = 0; w < WAYS; w++)
        if ((t[w] = malloc((size_t)(rounds * trips) * sizeof *t[w])) == NULL)
            fail("malloc", ENOMEM);
    uint64_t seq = 0;
    uint64_t sleeps[WAYS] = {0}; /* this rank's, over the timed trips */
    for (long r = 0; r < rounds; r++) {
        for (int j = 0; j < WAYS; j++) {
            const int w = (int)((r + j) % WAYS);
            if (w != RAW) {
                sf_mpi_config mc = {.progress = w == HOOK     ? SF_MPI_PROGRESS_HOOK
                                                : w == THREAD ? SF_MPI_PROGRESS_THREAD
                                                              : SF_MPI_PROGRESS_AUTO,
                                    .max_nap = nap};
                if (sf_mpi_init(&mc) != 0)
                    fail("sf_mpi_init", errno);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            for (long i = 0; i < warmup; i++)
                trip(w, seq++);
            sf_stats a, b;
            if (sf_stats_read(&a) != 0)
                fail("sf_stats_read", errno);
            for (long i = 0; i < trips; i++)
                t[w][r * trips + i] = trip(w, seq++);
            if (sf_stats_read(&b) != 0)
                fail("sf_stats_read", errno);
            sleeps[w] += b.sleeps - a.sleeps;
            if (w != RAW && sf_mpi_finalize(1.0) != 0)
                fail("sf_mpi_finalize: requests left", EBUSY);
        }
    }
    uint64_t theirs[WAYS];
    if (rank == 1)
        MPI_Send(sleeps, WAYS, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD);
    else
        MPI_Recv(theirs, WAYS, MPI_UINT64_T, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) {
        const size_t n = (size_t)(rounds * trips);
        double med[WAYS], p99[WAYS];
        for (int w = 0; w < WAYS; w++) {
            double sum = 0;
            size_t over[3] = {0};
            for (size_t i = 0; i < n; i++) {
                sum += t[w][i];
                over[0] += t[w][i] > 10;
                over[1] += t[w][i] > 100;
                over[2] += t[w][i] > 1000;
            }
            qsort(t[w], n, sizeof *t[w], cmp_double);
            med[w] = quantile(t[w], n, 0.5);
            p99[w] = quantile(t[w], n, 0.99);
            printf("RESULT\tway=%s\ttrips=%zu\tmedian_us=%.3f\tp99_us=%.3f\tmin_us=%.3f\t"
                   "mean_us=%.3f\tthreads=%ld\tover10us=%.4f\tover100us=%.4f\tover1ms=%.4f\t"
                   "sleeps0=%.3f\tsleeps1=%.3f\n",
                   way_name[w], n, med[w], p99[w], t[w][0], sum / (double)n, threads,
                   (double)over[0] / (double)n, (double)over[1] / (double)n,
                   (double)over[2] / (double)n, (double)sleeps[w] / (double)n,
                   (double)theirs[w] / (double)n);
        }
        for (int w = HOOK; w < WAYS; w++)
            printf("RATIO\tway=%s\tmedian=%.2f\tp99=%.2f\n", way_name[w], med[w] / med[RAW],
                   p99[w] / p99[RAW]);
    }
    for (int w = 0; w < WAYS; w++)
        free(t[w]);
    sf_shutdown();
    MPI_Finalize();
    return 0;
}
