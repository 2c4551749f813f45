/*
 * test_trace.c - SF_TRACE output, read by sftrace (tools/sftrace), the one
 * reader of the format (runtime/sched/trace_format.h): the test has no parser of
 * its own. Every trace the runtime writes here must pass `sftrace --check`,
 * which checks each line and what holds in any valid trace (tasks queued
 * once, started at most once and finished after their start, Take/Steal
 * followed by their FStart, gets and sleeps balanced, time monotonic per
 * thread...). On top of that, what is particular to these programs: at one
 * thread the exact sequence of events and Queue values (sftrace --untimed),
 * at two threads the counts of events against sf_stats (sftrace --counts);
 * a task asleep in a get shows its sleep, and no self or busy time for it
 * (sftrace --profile, --schedule).
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SFTRACE_BIN
#error "SFTRACE_BIN, the path of the built tools/sftrace/sftrace, comes from tests/local.mk"
#endif

/*
 * Runs `sftrace --check MODE TRACE` and returns its standard output
 * (malloc'd). Fails the test, quoting sftrace's list of problems, unless
 * sftrace exits 0: the trace is malformed or inconsistent. The trace file
 * is then left in place to be read; the callers remove it once it passed.
 */
static char *sftrace(const char *mode, const char *trace)
{
    char *argv[] = {(char *)SFTRACE_BIN, (char *)"--check", (char *)mode, (char *)trace, NULL};
    char *o, *e;
    int status = tu_run_capture(argv, &o, &e);
    ck_assert_msg(o != NULL && e != NULL, "sftrace %s left no output", mode);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "sftrace --check %s %s: %s %d:\n%s", mode, trace,
                  WIFEXITED(status) ? "exit" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), e);
    free(e);
    return o;
}

/* Whether text (sftrace's output) has line as one of its lines. */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

/*
 * Sums the counts of `sftrace --counts` lines ("thread<TAB>event<TAB>how
 * <TAB>count") of thread (-1: any), event (NULL: any) and how (NULL: any).
 */
static uint64_t count(const char *counts, int thread, const char *event, const char *how)
{
    uint64_t sum = 0;
    char line[256];
    for (const char *p = counts; *p != '\0';) {
        size_t n = strcspn(p, "\n");
        ck_assert_uint_lt(n, sizeof line);
        memcpy(line, p, n);
        line[n] = '\0';
        p += n + (p[n] == '\n');
        char *save = NULL;
        char *th = strtok_r(line, "\t", &save), *ev = strtok_r(NULL, "\t", &save);
        char *hw = strtok_r(NULL, "\t", &save), *c = strtok_r(NULL, "\t", &save);
        ck_assert_msg(c != NULL, "sftrace --counts line \"%s\" has not 4 columns", line);
        if ((thread < 0 || atoi(th) == thread) && (event == NULL || strcmp(ev, event) == 0) &&
            (how == NULL || strcmp(hw, how) == 0))
            sum += strtoull(c, NULL, 10);
    }
    return sum;
}

static atomic_int ran_a, ran_b, ran_c, ran_d;
static void *fa(void *arg) { atomic_fetch_add(&ran_a, 1); return arg; }
static void *fb(void *arg) { atomic_fetch_add(&ran_b, 1); return arg; }
static void *fc(void *arg) { atomic_fetch_add(&ran_c, 1); return arg; }
static void *fd(void *arg) { atomic_fetch_add(&ran_d, 1); return arg; }

/*
 * At SF_THREADS=1 the schedule of this program is fixed:
 *   A = sf_do(fa); B = sf_do(fb); get(B); get(A); get(B) again;
 *   C = sf_do(fc); release(C); release(A); release(B); D = sf_do(fd);
 *   sf_shutdown (drains D).
 * Expected events, from docs/trace-format.md (Queue = tasks made by sf_do and
 * neither started nor discarded; a task counts as started on its FStart line;
 * a get with no newly pending task to submit logs no Submit All).
 */
struct expect {
    long queue;
    const char *msg;
};

static const struct expect expected[] = {
    {0, "Init\tthreads=1\tworkers=0"},
    {1, "Do\t0.0"},
    {2, "Do\t0.1"},
    {2, "GStart\t0.1"},
    {2, "Submit All\t2"},
    {1, "FStart\t0.1\tinline"},
    {1, "FDone\t0.1"},
    {1, "GDone\t0.1"},
    {1, "GStart\t0.0"},
    {0, "FStart\t0.0\tinline"},
    {0, "FDone\t0.0"},
    {0, "GDone\t0.0"},
    {0, "Get\t0.1"},
    {1, "Do\t0.2"},
    {0, "Discard\t0.2"},
    {1, "Do\t0.3"},
    {0, "FStart\t0.3\tdrain"},
    {0, "FDone\t0.3"},
    {0, "Shutdown\tdrained=1"},
};

/*
 * The trace passes sftrace --check, and its events, in order, are exp: each
 * on thread 0 with the expected Queue and Asleep 0. sftrace --untimed prints
 * a header, then "Thread<TAB>Queue<TAB>Asleep<TAB>event..." per line.
 */
static void check_sequence(const char *trace, const struct expect *exp, int n)
{
    char *got = sftrace("--untimed", trace);
    const char *p = strchr(got, '\n'); /* past the header */
    ck_assert_ptr_nonnull(p);
    p++;
    for (int i = 0; i < n; i++) {
        char want[256];
        snprintf(want, sizeof want, "0\t%ld\t0\t%s", exp[i].queue, exp[i].msg);
        size_t len = strcspn(p, "\n");
        ck_assert_msg(len > 0, "%d events, want %d", i, n);
        ck_assert_msg(len == strlen(want) && memcmp(p, want, len) == 0,
                      "event %d: \"%.*s\", want \"%s\" (Thread, Queue, Asleep, event)", i + 1,
                      (int)len, p, want);
        p += len + 1;
    }
    ck_assert_msg(*p == '\0', "more than %d events: then \"%.*s\"", n, (int)strcspn(p, "\n"), p);
    free(got);
}

START_TEST(one_thread_exact_sequence)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "trace1");
    tu_env_threads(1);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *a = sf_do(fa, (void *)1);
    sf_future *b = sf_do(fb, (void *)2);
    ck_assert_ptr_eq(sf_get(b), (void *)2);
    ck_assert_ptr_eq(sf_get(a), (void *)1);
    ck_assert_ptr_eq(sf_get(b), (void *)2);
    sf_future *cf = sf_do(fc, (void *)3);
    sf_release(cf);
    sf_release(a);
    sf_release(b);
    sf_future *d = sf_do(fd, (void *)4);
    ck_assert_ptr_nonnull(d);
    sf_shutdown();
    char *err = tu_capture_end(&c);
    ck_assert_str_eq(err, ""); /* the trace went to the file only */
    free(err);
    ck_assert_int_eq(atomic_load(&ran_a), 1);
    ck_assert_int_eq(atomic_load(&ran_b), 1);
    ck_assert_int_eq(atomic_load(&ran_c), 0);
    ck_assert_int_eq(atomic_load(&ran_d), 1);
    check_sequence(path, expected, (int)(sizeof expected / sizeof expected[0]));
    unlink(path);
}
END_TEST

/* SF_TRACE=1 without SF_TRACE_FILE: the trace goes to stderr. */
START_TEST(trace_to_stderr)
{
    tu_env_threads(1);
    setenv("SF_TRACE", "1", 1);
    struct tu_capture c;
    tu_capture_begin(&c);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *a = sf_do(fa, (void *)1);
    ck_assert_ptr_eq(sf_get(a), (void *)1);
    sf_release(a);
    sf_shutdown();
    char *err = tu_capture_end(&c);
    char path[256];
    tu_tmp_path(path, sizeof path, "stderr-trace");
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(err, fp);
    fclose(fp);
    static const struct expect exp[] = {
        {0, "Init\tthreads=1\tworkers=0"},
        {1, "Do\t0.0"},
        {1, "GStart\t0.0"},
        {1, "Submit All\t1"},
        {0, "FStart\t0.0\tinline"},
        {0, "FDone\t0.0"},
        {0, "GDone\t0.0"},
        {0, "Shutdown\tdrained=0"},
    };
    check_sequence(path, exp, (int)(sizeof exp / sizeof exp[0]));
    free(err);
    unlink(path);
}
END_TEST

/*
 * Two threads, fib(15): the trace passes sftrace --check; every task is
 * queued, started and finished once; only threads 0 and 1 log; the tasks
 * run by how are what sf_stats counts.
 */
START_TEST(two_threads_fib15)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "trace2");
    tu_env_threads(2);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(tu_fib, (void *)15L);
    ck_assert_ptr_eq(sf_get(f), (void *)610L);
    sf_release(f);
    sf_stats s = tu_stats_quiet();
    uint64_t tasks = 1 + tu_fib_tasks(15);
    ck_assert_uint_eq(s.created, tasks);
    sf_shutdown();
    ck_assert_uint_eq(s.discarded, 0);

    char *c = sftrace("--counts", path);
    ck_assert_uint_eq(count(c, -1, NULL, NULL), count(c, 0, NULL, NULL) + count(c, 1, NULL, NULL));
    ck_assert_uint_eq(count(c, 0, "Init", NULL), 1);
    ck_assert_uint_eq(count(c, -1, "Init", NULL), 1);
    ck_assert_uint_eq(count(c, 0, "Shutdown", NULL), 1);
    ck_assert_uint_eq(count(c, -1, "Shutdown", NULL), 1);
    ck_assert_uint_eq(count(c, -1, "Do", NULL), tasks);
    ck_assert_uint_eq(count(c, -1, "FStart", NULL), tasks);
    ck_assert_uint_eq(count(c, -1, "FDone", NULL), tasks);
    ck_assert_uint_eq(count(c, -1, "Discard", NULL), 0);
    ck_assert_uint_eq(count(c, -1, "FStart", "inline"), s.run_inline);
    ck_assert_uint_eq(count(c, -1, "FStart", "pool"), s.run_pool);
    ck_assert_uint_eq(count(c, -1, "FStart", "steal"), s.run_stolen);
    ck_assert_uint_eq(count(c, -1, "FStart", "drain"), 0);
    ck_assert_uint_eq(count(c, -1, "Take", NULL), s.run_pool);
    ck_assert_uint_eq(count(c, -1, "Steal", NULL), s.run_stolen);
    free(c);

    /* Init and Shutdown are the first and last events (--check), on
     * thread 0 (above), with these arguments. */
    char *u = sftrace("--untimed", path);
    ck_assert_msg(has_line(u, "0\t0\t0\tInit\tthreads=2\tworkers=1"), "no Init threads=2 workers=1");
    ck_assert_msg(has_line(u, "0\t0\t0\tShutdown\tdrained=0"), "no Shutdown drained=0");
    free(u);
    unlink(path);
}
END_TEST

/* Tasks that never run because they were cancelled before they started, or
 * discarded by sf_shutdown_timeout's deadline, are in the trace as Discard
 * lines, so the trace passes --check: each queued task runs or is discarded.
 * _0: sf_shutdown_timeout(0); _1: sf_cancel of each, then release. */
START_TEST(cancelled_and_deadline_discards_are_traced)
{
    enum { N = 50 };
    char path[256];
    tu_tmp_path(path, sizeof path, "trace-discard");
    tu_env_threads(2);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&ran_a, 0);
    sf_future *f[N];
    for (int i = 0; i < N; i++)
        ck_assert_ptr_nonnull(f[i] = sf_do(fa, (void *)(long)i));
    if (_i == 0) {
        ck_assert_int_eq(sf_shutdown_timeout(0), N);
    } else {
        for (int i = 0; i < N; i++)
            ck_assert_int_eq(sf_cancel(f[i]), 0);
        for (int i = 0; i < N; i++)
            sf_release(f[i]);
        sf_shutdown();
    }
    ck_assert_int_eq(atomic_load(&ran_a), 0);
    char *c = sftrace("--counts", path);
    ck_assert_uint_eq(count(c, -1, "Do", NULL), N);
    ck_assert_uint_eq(count(c, -1, "Discard", NULL), N);
    ck_assert_uint_eq(count(c, -1, "FStart", NULL), 0);
    free(c);
    unlink(path);
}
END_TEST

/* A plain thread (no libsf call before it) sets a promise after 300 ms. */
static void *late_setter(void *p)
{
    tu_sleep_ms(300);
    ck_assert_int_eq(sf_promise_set(p, (void *)7L), 0);
    return NULL;
}

static void *get_promise(void *p) { return sf_get(p); }

/* Fields of the line of `sftrace --profile` that starts with name: its
 * tasks, total and self ms. */
static void profile_line(const char *text, const char *name, unsigned long *tasks, double *total,
                         double *self)
{
    const char *p = text;
    size_t n = strlen(name);
    while (p != NULL && !(strncmp(p, name, n) == 0 && p[n] == ' '))
        p = (p = strchr(p, '\n')) != NULL ? p + 1 : NULL;
    ck_assert_msg(p != NULL, "no %s line in:\n%s", name, text);
    ck_assert_msg(sscanf(p + n, "%lu %lf %lf", tasks, total, self) == 3, "line: %.*s",
                  (int)strcspn(p, "\n"), p);
}

/*
 * A task asleep ~300 ms in a get of a promise that a plain thread sets: the
 * trace shows the sleep (Sleep, Wake), the promise's Set from outside, and
 * sftrace --profile leaves the sleep out of the task's self time (its total
 * holds it), as --schedule does out of busy time. Bounds by order, not by
 * speed: self time and the thread's time asleep add up to the task's total
 * (each printed to the microsecond; counted whole, self time alone would
 * be the total), and the task's busy time is its self time.
 */
START_TEST(sleep_in_a_task_is_no_self_time)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "trace-sleep");
    tu_env_threads(1);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, late_setter, p), 0);
    sf_future *f = sf_do(get_promise, p);
    ck_assert_ptr_eq(sf_get(f), (void *)7L);
    pthread_join(t, NULL);
    sf_release(f);
    sf_release(p);
    sf_shutdown();
    char *c = sftrace("--counts", path);
    ck_assert_uint_ge(count(c, 0, "Sleep", NULL), 1);
    ck_assert_uint_eq(count(c, 0, "Wake", NULL), count(c, 0, "Sleep", NULL));
    ck_assert_uint_eq(count(c, -1, "Set", NULL), 1);
    free(c);
    char *prof = sftrace("--profile", path);
    unsigned long tasks;
    double total, self;
    profile_line(prof, "(unnamed)", &tasks, &total, &self);
    ck_assert_uint_eq(tasks, 1);
    free(prof);
    /* Main's row: tasks by kind, busy ms and share, sleeps, asleep ms. */
    char *sum = sftrace("--schedule", path);
    unsigned long ntasks, inl, wait, pool, stolen, drained, batch, sleeps;
    double busy, share, asleep;
    const char *row = strstr(sum, "\n     0 main ");
    ck_assert_msg(row != NULL, "no row of main in:\n%s", sum);
    ck_assert_int_eq(sscanf(row + 14, "%lu %lu %lu %lu %lu %lu %lu %lf %lf %lu %lf", &ntasks,
                            &inl, &wait, &pool, &stolen, &drained, &batch, &busy, &share, &sleeps,
                            &asleep), 11);
    ck_assert_uint_eq(ntasks, 1);
    ck_assert_uint_ge(sleeps, 1);
    ck_assert_msg(asleep >= 150, "asleep %.3f ms of a 300 ms wait", asleep);
    ck_assert_msg(self + asleep <= total + 0.002, "self %.3f + asleep %.3f ms > total %.3f ms",
                  self, asleep, total);
    ck_assert_msg(busy <= self + 0.001 && self <= busy + 0.001, "busy %.3f ms, self %.3f ms",
                  busy, self);
    free(sum);
    unlink(path);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, one_thread_exact_sequence);
    tcase_add_test(tc, trace_to_stderr);
    tcase_add_test(tc, two_threads_fib15);
    tcase_add_loop_test(tc, cancelled_and_deadline_discards_are_traced, 0, 2);
    tcase_add_test(tc, sleep_in_a_task_is_no_self_time);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(trace_suite)
