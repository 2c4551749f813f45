/*
 * test_errors.c - API misuse and resource failures: the documented return
 * value and errno, and a runtime that still works afterwards.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void *identity(void *arg) { return arg; }

/* The runtime works: a small computation gives its exact answer. */
static void assert_works(void)
{
    sf_future *f = sf_do(tu_fib, (void *)15L);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_eq(sf_get(f), (void *)610L);
    sf_release(f);
    sf_future *g = sf_do(identity, (void *)0x5eed);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_eq(sf_get(g), (void *)0x5eed);
    sf_release(g);
}

static void assert_not_running(void)
{
    sf_stats s;
    errno = 0;
    ck_assert_int_eq(sf_stats_read(&s), -1);
    ck_assert_int_eq(errno, ESRCH);
}

START_TEST(do_null_fn)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    errno = 0;
    ck_assert_ptr_null(sf_do(NULL, (void *)1));
    ck_assert_int_eq(errno, EINVAL);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 0); /* a failed sf_do leaves things as they were */
    assert_works();
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2 + tu_fib_tasks(15));
    sf_shutdown();
}
END_TEST

START_TEST(get_null)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    errno = 0;
    ck_assert_ptr_null(sf_get(NULL));
    ck_assert_int_eq(errno, EINVAL);
    assert_works();
    sf_shutdown();
}
END_TEST

/* The calls of failures and cancellation on NULL, and outside a task. */
START_TEST(failure_calls_misused)
{
    void *r = (void *)7L;
    ck_assert_int_eq(sf_wait(NULL, &r), EINVAL);
    ck_assert_ptr_eq(r, (void *)7L); /* left alone */
    errno = 0;
    ck_assert_int_eq(sf_cancel(NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_null(sf_error_message(NULL));
    errno = 0;
    ck_assert_int_eq(sf_fail(EIO, "not in a task"), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(sf_cancelled(), 0);
    errno = 0;
    ck_assert_ptr_null(sf_get_isolated(NULL));
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* A future kept past sf_shutdown: its memory stays mapped and reads as
 * released, so a get fails with EINVAL (sf.h) instead of crashing. */
static void *seven(void *arg) { return (void *)((long)arg + 7); }

START_TEST(get_after_shutdown_is_einval)
{
    tu_env_threads(2);
    sf_future *done = sf_do(seven, (void *)1L);
    sf_future *pending = sf_do(seven, (void *)2L);
    ck_assert_ptr_eq(sf_get(done), (void *)8L);
    sf_shutdown(); /* runs `pending`, then frees everything */
    errno = 0;
    ck_assert_ptr_null(sf_get(done));
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_ptr_null(sf_get(pending));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(sf_wait(done, NULL), EINVAL);
    /* Through the whole next runtime (the gets started it), however many
     * futures it makes: their memory rests meanwhile, and is not handed
     * out (runtime/future/future.c, Resting arenas). */
    for (int round = 0; round < 3; round++) {
        sf_future *many[1000];
        for (int k = 0; k < 100; k++) {
            for (int i = 0; i < 1000; i++)
                ck_assert_ptr_nonnull(many[i] = sf_do(seven, (void *)(long)i));
            for (int i = 0; i < 1000; i++)
                sf_release(many[i]);
        }
        errno = 0;
        ck_assert_ptr_null(sf_get(done));
        ck_assert_int_eq(errno, EINVAL);
        errno = 0;
        ck_assert_int_eq(sf_is_done(pending), -1);
        ck_assert_int_eq(errno, EINVAL);
        errno = 0;
        ck_assert_int_eq(sf_cancel(pending), -1);
        ck_assert_int_eq(errno, EINVAL);
        sf_release(done); /* released already: nothing happens */
    }
    /* A task in caller storage queued before the shutdown (and run by it:
     * nothing queued is lost): its get fails too. */
    sf_task t;
    ck_assert_int_eq(sf_task_do(&t, seven, (void *)3L), 0);
    sf_shutdown();
    errno = 0;
    ck_assert_ptr_null(sf_task_get(&t));
    ck_assert_int_eq(errno, EINVAL);
    sf_future *f = sf_do(seven, (void *)4L); /* a fresh runtime */
    ck_assert_ptr_eq(sf_get(f), (void *)11L);
    errno = 0;
    ck_assert_ptr_null(sf_task_get(&t));
    ck_assert_int_eq(errno, EINVAL);
    sf_release(f);
    sf_shutdown();
}
END_TEST

START_TEST(is_done_null)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    errno = 0;
    ck_assert_int_eq(sf_is_done(NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    assert_works();
    sf_shutdown();
}
END_TEST

START_TEST(stats_read_null)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    errno = 0;
    ck_assert_int_eq(sf_stats_read(NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    assert_works();
    sf_shutdown();
}
END_TEST

START_TEST(stats_read_not_running)
{
    tu_env_threads(2);
    assert_not_running();
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), 0);
    sf_shutdown();
    assert_not_running();
}
END_TEST

static sf_config bad_config(int i)
{
    sf_config c;
    memset(&c, 0, sizeof c);
    switch (i) {
    case 0: c.threads = -1; break;
    case 1: c.threads = SF_MAX_THREADS + 1; break;
    case 2: c.stack_size = 1000; break;
    case 3: c.stack_size = 64 * 1024 - 1; break;
    case 4: c.trace = SF_TRACE_CHROME + 1; break;
    case 5: c.trace = -1; break;
    }
    return c;
}

START_TEST(init_bad_config)
{
    tu_env_threads(2);
    int before = tu_os_threads();
    sf_config c = bad_config(_i);
    errno = 0;
    ck_assert_int_eq(sf_init(&c), -1);
    ck_assert_int_eq(errno, EINVAL);
    /* Nothing started. */
    assert_not_running();
    tu_assert_os_threads(before);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, 2);
    assert_works();
    sf_shutdown();
}
END_TEST

/* The smallest valid stack size works. */
START_TEST(init_min_stack)
{
    tu_env_threads(2);
    sf_config c;
    memset(&c, 0, sizeof c);
    c.stack_size = 64 * 1024;
    ck_assert_int_eq(sf_init(&c), 0);
    assert_works();
    sf_shutdown();
}
END_TEST

/* No worker can be created (no address space for a 64 TiB stack): sf_init
 * still succeeds, says so in one line, and every task runs in its getter. */
START_TEST(init_degrades_without_workers)
{
    tu_env_threads(1);
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 4;
    c.stack_size = (size_t)1 << 46;
    int before = tu_os_threads();
    struct tu_capture cap;
    tu_capture_begin(&cap);
    int rc = sf_init(&c);
    char *err = tu_capture_end(&cap);
    ck_assert_int_eq(rc, 0);
    static const char head[] = "libsf: started 0 of 3 pool workers (";
    static const char tail[] = "); running with 0\n";
    size_t n = strlen(err);
    ck_assert_msg(tu_count_lines(err) == 1 && strncmp(err, head, strlen(head)) == 0 &&
                      n > strlen(tail) && strcmp(err + n - strlen(tail), tail) == 0,
                  "stderr \"%s\"", err);
    free(err);
    tu_assert_os_threads(before); /* no thread was left behind */
    assert_works();
    sf_stats s; /* not tu_stats_quiet: it wants the full pool */
    ck_assert_int_eq(sf_stats_read(&s), 0);
    ck_assert_int_eq(s.threads, 4);
    ck_assert_int_eq(s.workers, 0);
    ck_assert_int_eq(s.peak_busy, 0);
    ck_assert_uint_eq(s.run_pool, 0);
    ck_assert_uint_eq(s.run_inline + s.run_stolen, s.created);
    ck_assert_uint_eq(s.created, 2 + tu_fib_tasks(15)); /* assert_works */
    sf_shutdown();
    assert_not_running();
}
END_TEST

START_TEST(init_twice_ebusy)
{
    tu_env_clean();
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 3;
    ck_assert_int_eq(sf_init(&c), 0);
    c.threads = 2;
    errno = 0;
    ck_assert_int_eq(sf_init(&c), -1);
    ck_assert_int_eq(errno, EBUSY);
    errno = 0;
    ck_assert_int_eq(sf_init(NULL), -1);
    ck_assert_int_eq(errno, EBUSY);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, 3); /* the running runtime is untouched */
    assert_works();
    sf_shutdown();
}
END_TEST

START_TEST(init_after_implicit_start_ebusy)
{
    tu_env_threads(2);
    sf_future *f = sf_do(identity, (void *)9);
    ck_assert_ptr_nonnull(f);
    errno = 0;
    ck_assert_int_eq(sf_init(NULL), -1);
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_ptr_eq(sf_get(f), (void *)9);
    sf_release(f);
    sf_shutdown();
}
END_TEST

START_TEST(init_after_shutdown)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    assert_works();
    sf_shutdown();
    assert_not_running();
    sf_config c;
    memset(&c, 0, sizeof c);
    c.threads = 3;
    ck_assert_int_eq(sf_init(&c), 0);
    sf_stats s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, 3);
    ck_assert_uint_eq(s.created, 0); /* counters since this sf_init */
    assert_works();
    sf_shutdown();
    ck_assert_int_eq(sf_init(NULL), 0);
    s = tu_stats_quiet();
    ck_assert_int_eq(s.threads, 2);
    assert_works();
    sf_shutdown();
}
END_TEST

START_TEST(release_null)
{
    tu_env_threads(2);
    sf_release(NULL); /* before any start: ignored, starts nothing */
    assert_not_running();
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(identity, (void *)3);
    sf_stats before = tu_stats_pending(1);
    sf_release(NULL);
    sf_stats after = tu_stats_pending(1);
    ck_assert_uint_eq(after.created, before.created);
    ck_assert_uint_eq(after.discarded, before.discarded);
    ck_assert_int_eq(sf_is_done(f), 0);
    ck_assert_ptr_eq(sf_get(f), (void *)3);
    sf_release(f);
    assert_works();
    sf_shutdown();
}
END_TEST

START_TEST(shutdown_not_running)
{
    tu_env_threads(2);
    struct tu_capture c;
    tu_capture_begin(&c);
    sf_shutdown();
    sf_shutdown();
    char *out = tu_capture_end(&c);
    ck_assert_str_eq(out, "");
    free(out);
    assert_not_running();
    ck_assert_int_eq(sf_init(NULL), 0);
    assert_works();
    sf_shutdown();
    sf_shutdown();
    assert_not_running();
}
END_TEST

#if !TU_SANITIZED
static size_t vm_size(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    ck_assert_ptr_nonnull(fp);
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof line, fp) != NULL)
        if (sscanf(line, "VmSize: %zu kB", &kb) == 1)
            break;
    fclose(fp);
    ck_assert_uint_gt(kb, 0);
    return kb * 1024;
}

/* Out of address space: sf_do fails with ENOMEM, and after the limit is
 * lifted everything made before still works and new work gives exact
 * results. */
START_TEST(do_enomem)
{
    enum { MAXF = 20000000, KEEP = 1000 };
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    assert_works();
    sf_future **fs = malloc(MAXF * sizeof *fs); /* reserved before the limit */
    ck_assert_ptr_nonnull(fs);
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
    lim = old;
    lim.rlim_cur = vm_size() + 16 * TU_MIB;
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
    long n = 0;
    int err = 0;
    for (; n < MAXF; n++) {
        errno = 0;
        sf_future *f = sf_do(identity, (void *)(n + 1));
        if (f == NULL) {
            err = errno;
            break;
        }
        fs[n] = f;
    }
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
    ck_assert_msg(n < MAXF, "sf_do never failed under RLIMIT_AS");
    ck_assert_msg(err == ENOMEM, "sf_do failed with errno %d (%s), want ENOMEM", err,
                  strerror(err));
    ck_assert_int_gt(n, KEEP);
    uint64_t before = 2 + tu_fib_tasks(15); /* assert_works */
    sf_stats s = tu_stats_pending((uint64_t)n);
    ck_assert_uint_eq(s.created, before + (uint64_t)n); /* the failed one not counted */
    /* The futures made before the failure are intact: release most of them
     * (pending: discarded), get the first KEEP. */
    for (long i = KEEP; i < n; i++)
        sf_release(fs[i]);
    s = tu_stats_pending(KEEP);
    ck_assert_uint_eq(s.discarded, (uint64_t)(n - KEEP));
    for (long i = 0; i < KEEP; i++) {
        void *v = sf_get(fs[i]);
        if (v != (void *)(i + 1))
            ck_abort_msg("future %ld: got %p, want %p", i, v, (void *)(i + 1));
        sf_release(fs[i]);
    }
    free(fs);
    assert_works();
    s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2 * before + (uint64_t)n);
    ck_assert_uint_eq(s.discarded, (uint64_t)(n - KEEP));
    sf_shutdown();
}
END_TEST
#endif

static Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("errors");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, do_null_fn);
    tcase_add_test(tc, get_null);
    tcase_add_test(tc, is_done_null);
    tcase_add_test(tc, failure_calls_misused);
#ifndef SF_DEBUG /* there a use after release is reported and aborts (test_debug) */
    tcase_add_test(tc, get_after_shutdown_is_einval);
#endif
    tcase_add_test(tc, stats_read_null);
    tcase_add_test(tc, stats_read_not_running);
    tcase_add_loop_test(tc, init_bad_config, 0, 6);
    tcase_add_test(tc, init_min_stack);
    tcase_add_test(tc, init_degrades_without_workers);
    tcase_add_test(tc, init_twice_ebusy);
    tcase_add_test(tc, init_after_implicit_start_ebusy);
    tcase_add_test(tc, init_after_shutdown);
    tcase_add_test(tc, release_null);
    tcase_add_test(tc, shutdown_not_running);
#if !TU_SANITIZED
    tcase_add_test(tc, do_enomem);
#endif
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(errors_suite)
