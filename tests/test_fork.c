/*
 * test_fork.c - fork() while libsf runs, a worker is busy and tasks are
 * pending: the child's first call starts a fresh runtime that gives exact
 * results, nothing hangs, the parent's handles fail with EINVAL in the
 * child, and the parent goes on unaffected.
 *
 * Under a sanitizer the runtime runs with SF_THREADS=1 (no pool worker):
 * ThreadSanitizer does not support starting threads in the child of a
 * multithreaded process, and its own runtime would make the child die.
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS (TU_SANITIZED ? 1 : 2)

/* The child's exit status, or -1 if it did not exit within timeout_ms (then
 * it is killed). */
static int wait_child(pid_t pid, long timeout_ms)
{
    int status;
    for (long waited = 0; waited < timeout_ms; waited += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        ck_assert_int_ne(r, -1);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        tu_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static atomic_int sleeper_started, sleeper_go;

static void *sleeper(void *arg)
{
    atomic_store(&sleeper_started, 1);
    tu_wait_flag(&sleeper_go, 10000);
    return arg;
}

static void *ident(void *arg) { return arg; }

/* Exit codes of the child, one per check, so a failure names itself. */
enum { C_OK, C_STATS_BEFORE, C_DO, C_FIB, C_STATS, C_COUNTS };

static int child_main(void)
{
    sf_stats s;
    errno = 0;
    if (sf_stats_read(&s) != -1 || errno != ESRCH)
        return C_STATS_BEFORE; /* the parent's runtime is not the child's */
    sf_future *f = sf_do(tu_fib, (void *)18L);
    if (f == NULL)
        return C_DO;
    if (sf_get(f) != (void *)tu_fib_exact(18))
        return C_FIB;
    sf_release(f);
    if (sf_stats_read(&s) != 0)
        return C_STATS;
    if (s.created != 1 + tu_fib_tasks(18) || s.threads != THREADS || s.workers != THREADS - 1 ||
        s.created != s.run_inline + s.run_pool + s.run_stolen)
        return C_COUNTS;
    sf_shutdown();
    return C_OK;
}

/* Forks while the parent's worker runs a task (not under a sanitizer: no
 * worker) and another task is pending. */
START_TEST(child_starts_a_fresh_runtime)
{
    tu_env_threads(THREADS);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *fib = sf_do(tu_fib, (void *)15L);
    ck_assert_ptr_eq(sf_get(fib), (void *)610L);
    sf_future *busy = sf_do(sleeper, (void *)7);
    sf_future *kick = sf_do(ident, NULL);
    ck_assert_ptr_null(sf_get(kick)); /* submits busy: the worker takes it */
    if (THREADS > 1)
        ck_assert_msg(tu_wait_flag(&sleeper_started, 10000), "no worker took the task");
    sf_future *pending = sf_do(ident, (void *)9); /* queued, never submitted */

    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(child_main());
    int rc = wait_child(pid, 20000);
    ck_assert_msg(rc == C_OK, "child ended with %d (-1: hung; see the enum)", rc);

    /* The parent is untouched. */
    atomic_store(&sleeper_go, 1);
    ck_assert_ptr_eq(sf_get(busy), (void *)7);
    ck_assert_ptr_eq(sf_get(pending), (void *)9);
    sf_release(busy);
    sf_release(kick);
    sf_release(pending);
    sf_release(fib);
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 1 + tu_fib_tasks(15) + 3);
    if (THREADS > 1)
        ck_assert_uint_ge(s.run_pool, 1); /* busy ran on the worker */
    sf_shutdown();
}
END_TEST

/*
 * Handles made before the fork are invalid in the child (docs/limits.md, fork()).
 * Using them fails with EINVAL - no hang waiting for a parent's thread,
 * no crash - whatever state the parent had them in: done, failed, running
 * on a worker, queued (submitted and public, or private), and tasks in
 * caller storage queued by the forking thread, or got before the fork;
 * before the child's first runtime and after it started. The debug build
 * names the first such use and aborts (pre_fork_handles_are_named).
 */
static struct {
    sf_future *done, *failed, *running, *published, *private1, *private2;
    sf_task task1, task2, got;
} pre;

#ifndef SF_DEBUG
static atomic_int slow_started, slow_go;

static void *slow(void *arg)
{
    atomic_store(&slow_started, 1);
    tu_wait_flag(&slow_go, 10000);
    return arg;
}

static void *failing(void *arg)
{
    sf_fail(EIO, "before the fork");
    return arg;
}


/* Exit codes of the child: which check failed. */
enum { P_OK, P_GET, P_WAIT, P_IS_DONE, P_CANCEL, P_TASK, P_GOT, P_FIB, P_GET_AFTER,
       P_TASK_AFTER };

static int einval_get(sf_future *f)
{
    errno = 0;
    return sf_get(f) == NULL && errno == EINVAL;
}

static int einval_task(sf_task *t)
{
    errno = 0;
    return sf_task_get(t) == NULL && errno == EINVAL;
}

static int pre_fork_child(void)
{
    sf_future *all[] = {pre.done, pre.failed, pre.running, pre.published, pre.private1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!einval_get(all[i]))
            return P_GET;
        if (sf_wait(all[i], NULL) != EINVAL)
            return P_WAIT;
        errno = 0;
        if (sf_is_done(all[i]) != -1 || errno != EINVAL)
            return P_IS_DONE;
        errno = 0;
        if (sf_cancel(all[i]) != -1 || errno != EINVAL)
            return P_CANCEL;
        sf_release(all[i]); /* nothing to release: no crash, no effect */
    }
    if (!einval_task(&pre.task1))
        return P_TASK;
    if (!einval_task(&pre.got))
        return P_GOT;
    /* The child's own runtime, on a thread whose id may be the parent's. */
    sf_future *f = sf_do(tu_fib, (void *)16L);
    if (f == NULL || sf_get(f) != (void *)tu_fib_exact(16))
        return P_FIB;
    sf_release(f);
    sf_task t;
    if (sf_task_do(&t, tu_fib, (void *)10L) != 0 || sf_task_get(&t) != (void *)55L)
        return P_FIB;
    if (!einval_get(pre.private2))
        return P_GET_AFTER;
    if (!einval_task(&pre.task2))
        return P_TASK_AFTER;
    sf_shutdown();
    return P_OK;
}

START_TEST(pre_fork_handles_fail_in_the_child)
{
    tu_env_threads(THREADS);
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&slow_started, 0);
    atomic_store(&slow_go, 0);
    ck_assert_int_eq(sf_task_do(&pre.got, ident, (void *)11L), 0);
    ck_assert_ptr_eq(sf_task_get(&pre.got), (void *)11L);
    pre.done = sf_do(tu_fib, (void *)12L);
    ck_assert_ptr_eq(sf_get(pre.done), (void *)144L);
    pre.failed = sf_do(failing, NULL);
    ck_assert_int_eq(sf_wait(pre.failed, NULL), EIO);
    /* Submitted and public: the worker takes the oldest and runs it; the
     * next waits, submitted, public. */
    pre.running = sf_do(slow, (void *)3L);
    pre.published = sf_do(ident, (void *)4L);
    sf_future *kick = sf_do(ident, NULL);
    ck_assert_ptr_null(sf_get(kick));
    sf_release(kick);
    if (THREADS > 1)
        ck_assert_msg(tu_wait_flag(&slow_started, 10000), "no worker took the task");
    pre.private1 = sf_do(ident, (void *)5L); /* queued after the last get: private */
    pre.private2 = sf_do(ident, (void *)6L);
    ck_assert_int_eq(sf_task_do(&pre.task1, ident, (void *)7L), 0);
    ck_assert_int_eq(sf_task_do(&pre.task2, ident, (void *)8L), 0);

    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(pre_fork_child());
    int rc = wait_child(pid, 20000);
    ck_assert_msg(rc == P_OK, "child ended with %d (-1: hung; see the enum)", rc);

    /* The parent is untouched. */
    ck_assert_ptr_eq(sf_task_get(&pre.task2), (void *)8L);
    ck_assert_ptr_eq(sf_task_get(&pre.task1), (void *)7L);
    atomic_store(&slow_go, 1);
    ck_assert_ptr_eq(sf_get(pre.running), (void *)3L);
    ck_assert_ptr_eq(sf_get(pre.published), (void *)4L);
    ck_assert_ptr_eq(sf_get(pre.private1), (void *)5L);
    ck_assert_ptr_eq(sf_get(pre.private2), (void *)6L);
    sf_future *all[] = {pre.done, pre.failed, pre.running, pre.published, pre.private1,
                        pre.private2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sf_release(all[i]);
    sf_shutdown();
}
END_TEST
#else
/* The debug build names the misuse: a pre-fork future's get, and a
 * pre-fork task's, each in a child of its own. */
/* Runs fn in a child (a grandchild of the test), whose stderr is ours, and
 * dies of the signal it died of. */
static void in_a_child(void (*fn)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        fn();
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        raise(WTERMSIG(status));
}

static void get_pre_fork_future(void) { sf_get(pre.private1); }
static void get_pre_fork_task(void) { sf_task_get(&pre.task1); }

static void set_up_pre_fork(void)
{
    tu_env_threads(1);
    sf_init(NULL);
    pre.private1 = sf_do(ident, (void *)5L);
    sf_task_do(&pre.task1, ident, (void *)7L);
}

static void pre_fork_future(void)
{
    set_up_pre_fork();
    in_a_child(get_pre_fork_future);
}

static void pre_fork_task(void)
{
    set_up_pre_fork();
    in_a_child(get_pre_fork_task);
}

START_TEST(pre_fork_handles_are_named)
{
    static const char *const future[] = {
        "libsf: sf_get(0x", "): the future belongs to a runtime that is gone (made before "
        "sf_shutdown(), or by the parent of fork())", NULL};
    static const char *const task[] = {
        "libsf: sf_task_get(0x", "): the sf_task was queued before sf_shutdown(), or by the "
        "parent of fork()", NULL};
    tu_expect_abort(pre_fork_future, future);
    tu_expect_abort(pre_fork_task, task);
}
END_TEST
#endif

/* A child of a process that traces to SF_TRACE_FILE does not touch that
 * file (opening it would truncate it): one stderr line says so. */
START_TEST(child_of_traced_parent_leaves_its_trace)
{
    char path[256], errpath[256];
    tu_tmp_path(path, sizeof path, "fork-trace");
    tu_tmp_path(errpath, sizeof errpath, "fork-stderr");
    tu_env_threads(THREADS);
    setenv("SF_TRACE", "1", 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *f = sf_do(tu_fib, (void *)10L);
    ck_assert_ptr_eq(sf_get(f), (void *)55L);
    sf_release(f);

    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(100);
        sf_future *g = sf_do(tu_fib, (void *)12L);
        int ok = g != NULL && sf_get(g) == (void *)144L;
        sf_release(g);
        sf_shutdown();
        _exit(ok ? 0 : 101);
    }
    ck_assert_int_eq(wait_child(pid, 20000), 0);
    char *err = tu_read_file(errpath);
    ck_assert_ptr_nonnull(err);
    char want[400];
    snprintf(want, sizeof want,
             "libsf: SF_TRACE_FILE='%s' is the parent's trace; this forked child does not "
             "trace\n",
             path);
    ck_assert_str_eq(err, want);
    free(err);
    unlink(errpath);

    sf_shutdown(); /* the parent's trace is whole: header to Shutdown */
    char *trace = tu_read_file(path);
    ck_assert_ptr_nonnull(trace);
    ck_assert_msg(strncmp(trace, "Thread\tQueue\tAsleep\tTime\tMessage...\n", 36) == 0,
                  "the parent's trace lost its header");
    char init[64];
    snprintf(init, sizeof init, "\tInit\tthreads=%d\tworkers=%d\n", THREADS, THREADS - 1);
    ck_assert_ptr_nonnull(strstr(trace, init));
    ck_assert_ptr_nonnull(strstr(trace, "\tShutdown\tdrained=0\n"));
    free(trace);
    unlink(path);
}
END_TEST

/* Fork after a shutdown: the child forgets nothing that is not there (the
 * runtime's thread key is gone; a key of the program's own must survive). */
static pthread_key_t user_key;

START_TEST(fork_after_shutdown)
{
    tu_env_threads(THREADS);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_shutdown();
    ck_assert_int_eq(pthread_key_create(&user_key, NULL), 0);
    ck_assert_int_eq(pthread_setspecific(user_key, (void *)0x77), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (pthread_getspecific(user_key) != (void *)0x77)
            _exit(1);
        sf_future *f = sf_do(tu_fib, (void *)12L);
        int ok = f != NULL && sf_get(f) == (void *)144L;
        sf_release(f);
        sf_shutdown();
        _exit(ok && pthread_getspecific(user_key) == (void *)0x77 ? 0 : 2);
    }
    ck_assert_int_eq(wait_child(pid, 20000), 0);
    ck_assert_ptr_eq(pthread_getspecific(user_key), (void *)0x77);
}
END_TEST

static Suite *fork_suite(void)
{
    Suite *s = suite_create("fork");
    TCase *tc = tcase_create("fork");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, child_starts_a_fresh_runtime);
    tcase_add_test(tc, child_of_traced_parent_leaves_its_trace);
    tcase_add_test(tc, fork_after_shutdown);
#ifndef SF_DEBUG
    tcase_add_test(tc, pre_fork_handles_fail_in_the_child);
#else
    tcase_add_test(tc, pre_fork_handles_are_named);
#endif
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(fork_suite)
