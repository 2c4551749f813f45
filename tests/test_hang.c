/*
 * test_hang.c - a stuck program says why (SF_HANG_REPORT, docs/debug.md),
 * and a program that exits without sf_shutdown() still reports.
 *
 * Each case runs this program again as a child (argv[1] names its part),
 * its environment set here, and reads its standard error:
 *  - a chain main -> link_a -> link_b -> link_c -> an unset promise (made
 *    by link_c), each link a get of a task running on another thread, is
 *    reported once, its names in order, before the promise is set at 2.5 s;
 *  - a task blocked on a mutex is the end of its chain;
 *  - an exit without sf_shutdown() reports an unhandled failure by its
 *    (static) function's name, leaves a closed Chrome trace, and, in the
 *    debug build, names the futures never released;
 *  - bad values of SF_HANG_REPORT get the one-line message.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

/* ---- the children ---------------------------------------------------- */

static _Atomic(sf_future *) promise;
static atomic_int started; /* links started: c, then b, then a */
static sf_future *fb, *fc;

static void *link_c(void *arg)
{
    (void)arg;
    sf_future *p = sf_promise();
    atomic_store(&promise, p);
    atomic_fetch_add(&started, 1);
    return sf_get(p);
}

static void *link_b(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    return sf_get(fc);
}

static void *link_a(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    return sf_get(fb);
}

static void *getter(void *f)
{
    sf_get(f);
    return NULL;
}

static void wait_started(int n)
{
    while (atomic_load(&started) < n)
        usleep(1000);
}

/* Each link's task runs on a thread of its own (a plain thread's get
 * claims it), so each get waits for a task running elsewhere; the main
 * thread's get waits for link_a. */
static void *set_later(void *p)
{
    usleep(2500000);
    sf_promise_set(p, (void *)7L);
    return NULL;
}

static int child_chain_run(void)
{
    fc = sf_do(link_c, NULL);
    fb = sf_do(link_b, NULL);
    sf_future *fa = sf_do(link_a, NULL);
    pthread_t t[3], setter;
    pthread_create(&t[0], NULL, getter, fc);
    wait_started(1);
    pthread_create(&setter, NULL, set_later, atomic_load(&promise));
    usleep(20000);
    pthread_create(&t[1], NULL, getter, fb);
    wait_started(2);
    usleep(20000);
    pthread_create(&t[2], NULL, getter, fa);
    wait_started(3);
    usleep(20000);
    void *r = sf_get(fa);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    pthread_join(setter, NULL);
    sf_release(fa);
    sf_release(fb);
    sf_release(fc);
    sf_release(atomic_load(&promise));
    sf_shutdown();
    return r == (void *)7L ? 0 : 5;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *blocked_task(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
    return (void *)3L;
}

static atomic_int held;

/* Holds the lock for 2.5 s. */
static void *holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    atomic_store(&held, 1);
    usleep(2500000);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static int child_blocked(void)
{
    pthread_t h, t;
    pthread_create(&h, NULL, holder, NULL);
    while (!atomic_load(&held))
        usleep(1000);
    sf_future *f = sf_do(blocked_task, NULL);
    pthread_create(&t, NULL, getter, f);
    wait_started(1);
    usleep(20000);
    void *r = sf_get(f);
    pthread_join(t, NULL);
    pthread_join(h, NULL);
    sf_release(f);
    sf_shutdown();
    return r == (void *)3L ? 0 : 5;
}

static void *failing_fn(void *arg)
{
    (void)arg;
    sf_fail(EIO, "the disk is gone");
    return NULL;
}

/* Exits without sf_shutdown(), with a failure nobody saw on a future
 * nobody released (a batch wait does not look at failures). */
static int child_exit(void)
{
    sf_batch *b = sf_batch_new();
    sf_future *f = sf_batch_do(b, failing_fn, NULL);
    if (f == NULL || sf_batch_wait(b) != 0)
        return 6;
    exit(0);
}

static int child_start(void)
{
    if (sf_init(NULL) != 0)
        return 3;
    sf_shutdown();
    return 0;
}

/* ---- the cases ------------------------------------------------------- */

static char *run_child(const char *part)
{
    char *argv[] = {(char *)"/proc/self/exe", (char *)part, NULL};
    char *out = NULL, *err = NULL;
    int status = tu_run_capture(argv, &out, &err);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child %s: status %#x, stderr: %s", part, status, err ? err : "");
    free(out);
    ck_assert_ptr_nonnull(err);
    return err;
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

START_TEST(chain_to_an_unset_promise_named)
{
    tu_env_threads(2);
    setenv("SF_HANG_REPORT", "1", 1);
    char *err = run_child("chain");
    ck_assert_msg(count(err, "no task has started or ended") == 1, "one report: %s", err);
    /* The line of the chain from main's wait, in order. */
    const char *a = strstr(err, "task link_a");
    ck_assert_msg(a != NULL, "link_a named: %s", err);
    const char *b = strstr(a, "task link_b");
    ck_assert_msg(b != NULL, "link_b after link_a: %s", err);
    const char *c = strstr(b, "task link_c");
    ck_assert_msg(c != NULL, "link_c after link_b: %s", err);
    const char *p = strstr(c, "unset, made by task link_c");
    ck_assert_msg(p != NULL, "the promise and its maker: %s", err);
    const char *eol = strchr(a, '\n');
    ck_assert_msg(eol == NULL || eol > p, "one line: %s", err);
    free(err);
}
END_TEST

START_TEST(task_blocked_outside_libsf_ends_the_chain)
{
    tu_env_threads(2);
    setenv("SF_HANG_REPORT", "1", 1);
    char *err = run_child("blocked");
    ck_assert_msg(count(err, "no task has started or ended") == 1, "one report: %s", err);
    const char *t = strstr(err, "task blocked_task");
    ck_assert_msg(t != NULL, "named: %s", err);
    ck_assert_msg(strstr(t, "blocked outside libsf") != NULL, "its ending: %s", err);
    free(err);
}
END_TEST

START_TEST(no_report_when_off)
{
    tu_env_threads(2);
    setenv("SF_HANG_REPORT", "0", 1);
    char *err = run_child("blocked");
    ck_assert_msg(count(err, "no task has started or ended") == 0, "no report: %s", err);
    free(err);
}
END_TEST

START_TEST(exit_without_shutdown_reports_and_closes_the_trace)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "hang-exit");
    /* One thread: the batch task runs in main's sf_batch_wait, so its slice
     * is in main's buffer, which the exit flushes. With a worker the task
     * may run there, and a worker's buffer is flushed only when it sleeps
     * (trace.c, sf__trace_at_exit): the file would lack the slice, or the
     * worker could still count itself busy (hang.c, at_exit). */
    tu_env_threads(1);
    setenv("SF_TRACE", "chrome", 1);
    setenv("SF_TRACE_FILE", path, 1);
    /* A process that exits without sf_shutdown keeps the runtime's memory
     * to its end, in arenas LeakSanitizer does not scan: not a leak of the
     * child's to report (an ASan build). */
    char asan[512];
    const char *was = getenv("ASAN_OPTIONS");
    snprintf(asan, sizeof asan, "%s%sdetect_leaks=0", was != NULL ? was : "",
             was != NULL && was[0] != '\0' ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
    char *err = run_child("exit");
    ck_assert_msg(count(err, "libsf: unhandled failure of task failing_fn (EIO, 5): the disk is "
                             "gone\n") == 1,
                  "the failure, named: %s", err);
#ifdef SF_DEBUG
    ck_assert_msg(strstr(err, "libsf: 1 future never released, of tasks: failing_fn (1)\n") !=
                      NULL,
                  "the future never released: %s", err);
#endif
    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    json_tokener *tok = json_tokener_new();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *v = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
    ck_assert_msg(v != NULL && json_tokener_get_error(tok) == json_tokener_success,
                  "valid JSON: %s", json_tokener_error_desc(json_tokener_get_error(tok)));
    ck_assert(json_object_is_type(v, json_type_array));
    ck_assert_ptr_nonnull(strstr(text, "\"name\":\"failing_fn\""));
    json_object_put(v);
    json_tokener_free(tok);
    free(text);
    unlink(path);
    free(err);
}
END_TEST

START_TEST(bad_values_rejected)
{
    static const char *const bad[] = {"abc", "-1", " 1", "1s", "nan", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("SF_HANG_REPORT", bad[i], 1);
        char *err = run_child("start");
        char want[128];
        snprintf(want, sizeof want, "libsf: SF_HANG_REPORT='%s' is not a number of seconds",
                 bad[i]);
        ck_assert_msg(strstr(err, want) != NULL && tu_count_lines(err) == 1,
                      "'%s' rejected in one line: %s", bad[i], err);
        free(err);
    }
    setenv("SF_HANG_REPORT", "0.5", 1);
    char *err = run_child("start");
    ck_assert_msg(err[0] == '\0', "0.5 accepted: %s", err);
    free(err);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hang");
    TCase *tc = tcase_create("hang");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, chain_to_an_unset_promise_named);
    tcase_add_test(tc, task_blocked_outside_libsf_ends_the_chain);
    tcase_add_test(tc, no_report_when_off);
    tcase_add_test(tc, exit_without_shutdown_reports_and_closes_the_trace);
    tcase_add_test(tc, bad_values_rejected);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        if (strcmp(argv[1], "chain") == 0)
            return child_chain_run();
        if (strcmp(argv[1], "blocked") == 0)
            return child_blocked();
        if (strcmp(argv[1], "exit") == 0)
            return child_exit();
        if (strcmp(argv[1], "start") == 0)
            return child_start();
        return 2;
    }
    SRunner *sr = srunner_create(suite());
    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
