/*
 * mem_sf.c - bytes per live pending future in libsf.
 *
 *     mem_sf [count=1000000] [threads=N]
 *
 * Starts the runtime, then makes `count` futures with sf_do() and gets none
 * of them, so all stay pending in the main thread's queue. The resident set
 * (/proc/self/statm, second field, pages) is read before and after; the
 * difference over count is the cost of one pending future, queue slot
 * included. Then every future is released (discarded, never run) and RSS is
 * read again. The handle array is allocated and touched before the first
 * reading, so it is not counted.
 *
 * Prints: MEM<TAB>futures=N<TAB>bytes_per_future=B<TAB>rss_before_kb=..
 *         <TAB>rss_pending_kb=..<TAB>rss_released_kb=..<TAB>ran=R
 * and exits 2 if any released future's task ran, or sf_stats disagree.
 */
#include "common.h"

#include <unistd.h>

#include "sf.h"

static long ran;

static void *never(void *arg)
{
    __atomic_fetch_add(&ran, 1, __ATOMIC_RELAXED);
    return arg;
}

static long rss_pages(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = -1;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &res) != 2)
        res = -1;
    fclose(f);
    return res;
}

int main(int argc, char **argv)
{
    long count = 1000000;
    int threads = 2;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "count=", 6) == 0)
            count = atol(argv[i] + 6);
        else if (strncmp(argv[i], "threads=", 8) == 0)
            threads = atoi(argv[i] + 8);
        else {
            fprintf(stderr, "usage: %s [count=N] [threads=N]\n", argv[0]);
            return 64;
        }
    }
    if (count < 1 || threads < 1)
        return 64;
    sf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.threads = threads;
    cfg.trace = SF_TRACE_OFF;
    if (sf_init(&cfg) != 0) {
        fprintf(stderr, "mem_sf: sf_init: %s\n", strerror(errno));
        return 3;
    }
    sf_future **f = malloc((size_t)count * sizeof *f);
    if (!f)
        return 3;
    memset(f, 0, (size_t)count * sizeof *f);
    /* One future made and released first, so lazily made per-thread state
     * (the pending queue itself) exists before the first reading. */
    sf_release(sf_do(never, NULL));

    long page = sysconf(_SC_PAGESIZE);
    long before = rss_pages();
    for (long i = 0; i < count; i++) {
        f[i] = sf_do(never, (void *)(intptr_t)i);
        if (!f[i]) {
            fprintf(stderr, "mem_sf: sf_do #%ld: %s\n", i, strerror(errno));
            return 3;
        }
    }
    long pending = rss_pages();
    sf_stats st;
    memset(&st, 0, sizeof st);
    sf_stats_read(&st);
    for (long i = 0; i < count; i++)
        sf_release(f[i]);
    long released = rss_pages();
    sf_stats st2;
    memset(&st2, 0, sizeof st2);
    sf_stats_read(&st2);
    int rc = 0;
    long r = __atomic_load_n(&ran, __ATOMIC_RELAXED);
    if (r != 0) {
        fprintf(stderr, "mem_sf: %ld released pending futures ran\n", r);
        rc = 2;
    }
    if (st2.discarded < (uint64_t)count) {
        fprintf(stderr, "WARNING mem_sf: sf_stats discarded %llu, expected >= %ld\n",
                (unsigned long long)st2.discarded, count);
    }
    printf("MEM\tfutures=%ld\tbytes_per_future=%.1f\trss_before_kb=%ld\trss_pending_kb=%ld\t"
           "rss_released_kb=%ld\tran=%ld\tmaxrss_kb=%ld\n",
           count, (double)(pending - before) * (double)page / (double)count,
           before * page / 1024, pending * page / 1024, released * page / 1024, r,
           bench_maxrss_kb());
    fflush(stdout);
    free(f);
    sf_shutdown();
    return rc;
}
