/*
 * test_debug.c - the self-checks of a debug build (./configure
 * --enable-debug, runtime/debug.h): each misuse or broken rule is reported
 * with one line naming it, then abort(). Built only in a debug build.
 *
 * Each case runs in a child process whose stderr goes to a pipe; the test
 * asserts that the child died of SIGABRT and what its report said.
 */
#include "testutil.h"

#include "pending.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SF_DEBUG
#error "test_debug is built in a debug build only (configure --enable-debug)"
#endif

/* Runs fn in a child; returns its stderr (malloc'd) and how it ended. */
static char *in_child(void (*fn)(void), int *sig)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 2);
        tu_env_clean();
        fn();
        _exit(0); /* not reported: the parent sees no signal */
    }
    close(p[1]);
    size_t len = 0, cap = 4096;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    ssize_t n;
    while ((n = read(p[0], out + len, cap - len - 1)) > 0)
        if ((len += (size_t)n) == cap - 1)
            ck_assert_ptr_nonnull(out = realloc(out, cap *= 2));
    out[len] = '\0';
    close(p[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    *sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return out;
}

/* The child aborted with exactly one line, which contains every part. */
static void expect_abort(void (*fn)(void), const char *const *parts)
{
    int sig;
    char *err = in_child(fn, &sig);
    ck_assert_msg(sig == SIGABRT, "the child ended with signal %d, stderr \"%s\"", sig, err);
    ck_assert_msg(tu_count_lines(err) == 1 && strncmp(err, "libsf: ", 7) == 0,
                  "want one \"libsf: \" line, got \"%s\"", err);
    for (; *parts != NULL; parts++)
        ck_assert_msg(strstr(err, *parts) != NULL, "\"%s\" not in \"%s\"", *parts, err);
    free(err);
}

static void *ident(void *arg) { return arg; }

static void get_after_release(void)
{
    sf_future *f = sf_do(ident, (void *)1);
    sf_get(f);
    sf_release(f);
    sf_get(f);
}

START_TEST(get_after_release_reported)
{
    static const char *const parts[] = {
        "libsf: sf_get(0x", "): the future was released (use after sf_release)", NULL};
    expect_abort(get_after_release, parts);
}
END_TEST

static void release_twice(void)
{
    sf_future *f = sf_do(ident, NULL);
    sf_get(f);
    sf_release(f);
    sf_release(f);
}

START_TEST(double_release_reported)
{
    static const char *const parts[] = {
        "libsf: sf_release(0x", "): the future was already released (double release)", NULL};
    expect_abort(release_twice, parts);
}
END_TEST

/* Released before it ran (discarded), then asked about. */
static void is_done_after_discard(void)
{
    sf_future *f = sf_do(ident, NULL);
    sf_release(f);
    sf_is_done(f);
}

START_TEST(is_done_after_release_reported)
{
    static const char *const parts[] = {"libsf: sf_is_done(0x",
                                        "): the future was released (use after sf_release)", NULL};
    expect_abort(is_done_after_discard, parts);
}
END_TEST

/* Thousands of futures made and released after it: the released one is
 * still held back from reuse, so the late get is still caught. */
static void get_after_release_and_more_work(void)
{
    sf_future *f = sf_do(ident, NULL);
    sf_get(f);
    sf_release(f);
    for (int i = 0; i < SF__QUARANTINE - 1; i++) {
        sf_future *g = sf_do(ident, NULL);
        sf_get(g);
        sf_release(g);
    }
    sf_get(f);
}

START_TEST(quarantine_keeps_released_futures_out_of_reuse)
{
    static const char *const parts[] = {"): the future was released (use after sf_release)",
                                        NULL};
    expect_abort(get_after_release_and_more_work, parts);
}
END_TEST

/* A correct program under the debug build: no report, normal exit. */
static void correct_program(void)
{
    for (int i = 0; i < 3; i++) {
        sf_future *f = sf_do(tu_fib, (void *)15L);
        if (sf_get(f) != (void *)610L)
            abort();
        sf_release(f);
    }
    sf_shutdown();
}

START_TEST(correct_program_runs_clean)
{
    int sig;
    char *err = in_child(correct_program, &sig);
    ck_assert_int_eq(sig, 0);
    ck_assert_str_eq(err, "");
    free(err);
}
END_TEST

/* The witness: locks only in rank order. */
static struct sf__lock leaf = SF__LOCK_INITIALIZER(SF__RANK_LEAF, "test_leaf");
static struct sf__lock outer = SF__LOCK_INITIALIZER(SF__RANK_LIFE, "test_outer");

static void lock_order_inverted(void)
{
    sf__lock(&outer); /* in order: fine */
    sf__lock(&leaf);
    sf__unlock(&leaf);
    sf__unlock(&outer);
    sf__lock(&leaf);
    sf__lock(&outer);
}

START_TEST(lock_order_violation_reported)
{
    static const char *const parts[] = {
        "lock order violated: taking test_outer (rank 1) while holding test_leaf (rank 4)", NULL};
    expect_abort(lock_order_inverted, parts);
}
END_TEST

static void unlock_not_held(void) { sf__unlock(&leaf); }

START_TEST(unlock_of_a_lock_not_held_reported)
{
    static const char *const parts[] = {"unlocking test_leaf, which this thread does not hold",
                                        NULL};
    expect_abort(unlock_not_held, parts);
}
END_TEST

/* No runtime lock may be held while a task runs. */
static void *inner(void *arg) { return arg; }
static void *holds_a_lock(void *arg)
{
    sf__lock(&leaf);
    sf_future *f = sf_do(inner, arg);
    sf_get(f); /* runs inner right here, under the lock */
    sf__unlock(&leaf);
    sf_release(f);
    return arg;
}

static void task_under_lock(void)
{
    sf_future *f = sf_do(holds_a_lock, NULL);
    sf_get(f);
}

START_TEST(task_started_under_a_lock_reported)
{
    static const char *const parts[] = {
        "a task starts while holding test_leaf: no runtime lock may be held then", NULL};
    expect_abort(task_under_lock, parts);
}
END_TEST

/* Owner-only queue operations from a thread that does not own the queue. */
static struct sf__pending q;
static _Alignas(64) sf_future fs[2];

static void *push_from_here(void *arg)
{
    (void)arg;
    fs[0].u.fn = ident;
    sf__pending_push(&q, &fs[0]);
    return NULL;
}

static void foreign_push(void)
{
    if (sf__pending_init(&q, 1) != 0)
        abort();
    tu_run_on_thread(push_from_here, NULL, 0);
}

START_TEST(owner_only_operation_by_another_thread_reported)
{
    static const char *const parts[] = {"pushing on a pending queue by a thread that does not own it",
                                        NULL};
    expect_abort(foreign_push, parts);
}
END_TEST

/* A state transition that future.h does not list: pushing a RUNNING future. */
static void push_running(void)
{
    if (sf__pending_init(&q, 1) != 0)
        abort();
    atomic_store(&fs[1].state, SF__RUNNING);
    fs[1].u.fn = ident;
    sf__pending_push(&q, &fs[1]);
}

START_TEST(illegal_transition_reported)
{
    static const char *const parts[] = {"assertion 'sf__transition_ok", "future state 0x2 -> 0x",
                                        NULL};
    expect_abort(push_running, parts);
}
END_TEST

static Suite *debug_suite(void)
{
    Suite *s = suite_create("debug");
    TCase *tc = tcase_create("debug");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, get_after_release_reported);
    tcase_add_test(tc, double_release_reported);
    tcase_add_test(tc, is_done_after_release_reported);
    tcase_add_test(tc, quarantine_keeps_released_futures_out_of_reuse);
    tcase_add_test(tc, correct_program_runs_clean);
    tcase_add_test(tc, lock_order_violation_reported);
    tcase_add_test(tc, unlock_of_a_lock_not_held_reported);
    tcase_add_test(tc, task_started_under_a_lock_reported);
    tcase_add_test(tc, owner_only_operation_by_another_thread_reported);
    tcase_add_test(tc, illegal_transition_reported);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(debug_suite)
