/*
 * test_unload.c - a plugin host's use of libsf: dlopen, work, dlclose. libsf
 * is linked with -z nodelete, so dlclose() never unmaps it: its pool workers
 * (asleep in libsf's code, waking every 100 ms) and its thread-exit
 * destructor keep running code that stays mapped, and a later dlopen() gets
 * the same library with its runtime still running.
 *
 * The program is not linked against libsf: it opens the libsf.so just built
 * (LIBSF_SO, an absolute path from tests/local.mk) and reaches the API
 * through dlsym. sf.h is included for its types only. Without -z nodelete
 * the first case dies of SIGSEGV soon after its dlclose().
 */
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#ifndef LIBSF_SO
#error "LIBSF_SO must name the libsf.so to open (tests/local.mk)"
#endif

/* The API, as this process sees it through one dlopen(). */
struct api {
    void *handle;
    sf_future *(*do_)(void *(*fn)(void *), void *arg);
    void *(*get)(sf_future *f);
    void (*release)(sf_future *f);
    void (*shutdown)(void);
    int (*stats_read)(sf_stats *out);
};

/* tu_fib (testutil.c) calls the linked libsf, which this program has not:
 * fib here calls through the pointers of the open library. */
static struct api sf;

static void *sym(void *handle, const char *name)
{
    dlerror();
    void *p = dlsym(handle, name);
    const char *err = dlerror();
    ck_assert_msg(err == NULL && p != NULL, "dlsym(%s): %s", name, err != NULL ? err : "NULL");
    return p;
}

static struct api open_libsf(void)
{
    struct api a;
    a.handle = dlopen(LIBSF_SO, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(a.handle != NULL, "dlopen(%s): %s", LIBSF_SO, dlerror());
    /* POSIX allows converting dlsym's void * to a function pointer. */
    *(void **)&a.do_ = sym(a.handle, "sf_do");
    *(void **)&a.get = sym(a.handle, "sf_get");
    *(void **)&a.release = sym(a.handle, "sf_release");
    *(void **)&a.shutdown = sym(a.handle, "sf_shutdown");
    *(void **)&a.stats_read = sym(a.handle, "sf_stats_read");
    return a;
}

/* fib(n) with one sf_do per call with n >= 2, as tu_fib. */
static void *fib(void *arg)
{
    long n = (long)arg;
    if (n < 2)
        return (void *)n;
    sf_future *a = sf.do_(fib, (void *)(n - 1));
    ck_assert_ptr_nonnull(a);
    long b = (long)fib((void *)(n - 2));
    long r = (long)sf.get(a) + b;
    sf.release(a);
    return (void *)r;
}

static long fib_exact(int n)
{
    long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long t = a + b;
        a = b;
        b = t;
    }
    return a;
}

/* Futures fib(n) makes: fib(n+1) - 1 (testutil.h, tu_fib_tasks). */
static uint64_t fib_tasks(int n) { return (uint64_t)fib_exact(n + 1) - 1; }

/* Runs fib(n) as a task and checks its value; returns the futures made. */
static uint64_t run_fib(int n)
{
    sf_future *f = sf.do_(fib, (void *)(long)n);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq((long)sf.get(f), fib_exact(n));
    sf.release(f);
    return 1 + fib_tasks(n);
}

/* testutil.c calls libsf, so this program has its own. */
static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void setup_env(void)
{
    /* Two threads: one pool worker, which exists once the first task does
     * and sleeps in libsf's code between tasks. */
    unsetenv("SF_TRACE");
    unsetenv("SF_TRACE_FILE");
    unsetenv("SF_STATS");
    setenv("SF_THREADS", "2", 1);
}

/* A thread of the host that used libsf, and ends after the dlclose(): its
 * exit runs libsf's thread-exit destructor. */
static atomic_int user_ran, user_may_exit;
static atomic_ulong user_made;

static void *user_thread(void *arg)
{
    (void)arg;
    atomic_store(&user_made, run_fib(18));
    atomic_store(&user_ran, 1);
    while (!atomic_load(&user_may_exit))
        nap_ms(1);
    return NULL;
}

START_TEST(dlclose_keeps_the_pool_running)
{
    setup_env();
    sf = open_libsf();
    struct api first = sf;
    uint64_t made = run_fib(22);
    pthread_t user;
    ck_assert_int_eq(pthread_create(&user, NULL, user_thread, NULL), 0);
    while (!atomic_load(&user_ran))
        nap_ms(1);
    made += atomic_load(&user_made);
    sf_stats s;
    ck_assert_int_eq(sf.stats_read(&s), 0);
    ck_assert_int_eq(s.workers, 1);
    ck_assert_int_eq(dlclose(first.handle), 0);

    atomic_store(&user_may_exit, 1);
    ck_assert_int_eq(pthread_join(user, NULL), 0);
    /* The worker's idle nap is 100 ms: an unmapped library would kill the
     * process with SIGSEGV within the first of these naps. */
    for (int i = 0; i < 3; i++)
        nap_ms(100);

    /* Still loaded (RTLD_NOLOAD opens only what is), and the same library:
     * the same symbols, and the runtime still running with its counts. */
    void *still = dlopen(LIBSF_SO, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_msg(still != NULL, "libsf was unloaded by dlclose");
    ck_assert_int_eq(dlclose(still), 0);
    sf = open_libsf();
    ck_assert_ptr_eq(*(void **)&sf.do_, *(void **)&first.do_);
    ck_assert_ptr_eq(*(void **)&sf.get, *(void **)&first.get);
    ck_assert_ptr_eq(*(void **)&sf.release, *(void **)&first.release);
    ck_assert_ptr_eq(*(void **)&sf.shutdown, *(void **)&first.shutdown);
    made += run_fib(23);
    ck_assert_int_eq(sf.stats_read(&s), 0);
    ck_assert_int_eq(s.workers, 1);
    ck_assert_uint_eq(s.created, made); /* one runtime across both opens */
    sf.shutdown();
    ck_assert_int_eq(dlclose(sf.handle), 0);
}
END_TEST

/* A host that dlcloses libsf without sf_shutdown() and returns: the process
 * exits with the worker alive (Check's child exits after the test; a
 * signal there fails the case). */
START_TEST(dlclose_without_shutdown_then_exit)
{
    setup_env();
    sf = open_libsf();
    run_fib(22);
    ck_assert_int_eq(dlclose(sf.handle), 0);
}
END_TEST

static Suite *unload_suite(void)
{
    Suite *s = suite_create("unload");
    TCase *tc = tcase_create("unload");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, dlclose_keeps_the_pool_running);
    tcase_add_test(tc, dlclose_without_shutdown_then_exit);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(unload_suite)
