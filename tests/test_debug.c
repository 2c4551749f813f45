/*
 * test_debug.c - the self-checks of a debug build (./configure
 * --enable-debug, runtime/platform/debug.h): each misuse or broken rule is reported
 * with one line naming it, then abort(). Built only in a debug build.
 *
 * Each case runs in a child process whose stderr goes to a pipe
 * (tu_run_in_child); the test asserts that the child died of SIGABRT and
 * what its report said.
 */
#include "testutil.h"

#include "queue/pending.h"
#include "sched/pool.h"
#include "registry/registry.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SF_DEBUG
#error "test_debug is built in a debug build only (configure --enable-debug)"
#endif

/* What a child tells its parent before it aborts: the address of the
 * sf_task its report names, which only the child knows (a frame of its
 * stack). Shared memory, mapped by the parent before the fork. */
#define NOTE_MAX 64
static char *note;

static void note_init(void)
{
    if (note == NULL) {
        note = mmap(NULL, NOTE_MAX, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ck_assert_ptr_ne(note, MAP_FAILED);
    }
    memset(note, 0, NOTE_MAX);
}

static void note_address(const void *p) { snprintf(note, NOTE_MAX, "%p", p); }

/* The child aborted with exactly the line "libsf: <before><the address it
 * noted><after>". */
static void expect_abort_at(void (*fn)(void), const char *before, const char *after)
{
    note_init();
    int sig;
    char *err = tu_run_in_child(fn, &sig, NULL);
    ck_assert_msg(sig == SIGABRT, "the child ended with signal %d, stderr \"%s\"", sig, err);
    ck_assert_msg(note[0] != '\0', "the child noted no address; stderr \"%s\"", err);
    char want[512];
    snprintf(want, sizeof want, "libsf: %s%s%s\n", before, note, after);
    ck_assert_str_eq(err, want);
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
    tu_expect_abort(get_after_release, parts);
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
    tu_expect_abort(release_twice, parts);
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
    tu_expect_abort(is_done_after_discard, parts);
}
END_TEST

/* A future kept past sf_shutdown, used in the next runtime. */
static void get_after_shutdown(void)
{
    sf_future *f = sf_do(ident, (void *)1);
    sf_get(f);
    sf_shutdown();
    sf_release(sf_do(ident, (void *)2)); /* the next runtime */
    sf_get(f);
}

START_TEST(get_after_shutdown_reported)
{
    static const char *const parts[] = {
        "libsf: sf_get(0x", "): the future belongs to a runtime that is gone (made before "
        "sf_shutdown(), or by the parent of fork())", NULL};
    tu_expect_abort(get_after_shutdown, parts);
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
    tu_expect_abort(get_after_release_and_more_work, parts);
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
    char *err = tu_run_in_child(correct_program, &sig, NULL);
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
    tu_expect_abort(lock_order_inverted, parts);
}
END_TEST

static void unlock_not_held(void) { sf__unlock(&leaf); }

START_TEST(unlock_of_a_lock_not_held_reported)
{
    static const char *const parts[] = {"unlocking test_leaf, which this thread does not hold",
                                        NULL};
    tu_expect_abort(unlock_not_held, parts);
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
    /* One thread: this one runs it, with a free list that the first sf_do
     * filled (a worker taking it would refill its own under the lock, and
     * be stopped for that lock order first). */
    tu_env_threads(1);
    sf_future *f = sf_do(holds_a_lock, NULL);
    sf_get(f);
}

START_TEST(task_started_under_a_lock_reported)
{
    static const char *const parts[] = {
        "a task starts while holding test_leaf: no runtime lock may be held then", NULL};
    tu_expect_abort(task_under_lock, parts);
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
    if (sf__pending_init(&q, 1, 0) != 0)
        abort();
    tu_run_on_thread(push_from_here, NULL, 0);
}

START_TEST(owner_only_operation_by_another_thread_reported)
{
    static const char *const parts[] = {"pushing on a pending queue by a thread that does not own it",
                                        NULL};
    tu_expect_abort(foreign_push, parts);
}
END_TEST

/* A state transition that future.h does not list: pushing a RUNNING future. */
static void push_running(void)
{
    if (sf__pending_init(&q, 1, 0) != 0)
        abort();
    atomic_store(&fs[1].state, SF__RUNNING);
    fs[1].u.fn = ident;
    sf__pending_push(&q, &fs[1]);
}

START_TEST(illegal_transition_reported)
{
    static const char *const parts[] = {"assertion 'sf__transition_ok", "future state 0x2 -> 0x",
                                        NULL};
    tu_expect_abort(push_running, parts);
}
END_TEST

/*
 * Tasks in caller storage (sf.h): the misuses the release build cannot see,
 * each named with the sf_task's address.
 */

/* sf_task_do over an sf_task whose task is still queued. */
static void reuse_queued(void)
{
    tu_env_threads(1);
    sf_task t;
    note_address(&t);
    if (sf_task_do(&t, ident, (void *)1) != 0)
        abort();
    sf_task_do(&t, ident, (void *)2);
}

START_TEST(task_reused_while_queued_reported)
{
    expect_abort_at(reuse_queued, "sf_task_do(",
                    "): the sf_task still holds a queued task (get it with sf_task_get first)");
}
END_TEST

/* Queues a task in this frame and returns without getting it. */
static __attribute__((noinline)) void forget_task(void)
{
    sf_task t;
    if (sf_task_do(&t, ident, (void *)1) != 0)
        abort();
    note_address(&t);
}

/* Overwrites the frame forget_task left, as the next call at that depth
 * would (here with 0x5a: a state whose status is RUNNING). */
static __attribute__((noinline)) void scribble(void)
{
    volatile unsigned char buf[4096];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = 0x5a;
}

static const char gone[] =
    ") was not got before its memory went away (sf_task_get it before its frame returns)";

/* An idle worker: the next get publishes, promoting the local futures
 * first - the forgotten one's frame is someone else's now. (The worker may
 * ask through `want` first, having seen the marked slot: then the get's
 * poll trims the top first, reading the same slot. Either reports it.) */
static void forgotten_then_promoted(void)
{
    tu_env_threads(2);
    if (sf_init(NULL) != 0)
        abort();
    while (!sf__pool_has_idle())
        sched_yield(); /* the worker goes idle once started: it has no work */
    forget_task();
    scribble();
    sf_task u;
    if (sf_task_do(&u, ident, (void *)2) != 0)
        abort();
    sf_task_get(&u);
}

START_TEST(forgotten_task_promoted_reported)
{
    expect_abort_at(forgotten_then_promoted, "an sf_task (", gone);
}
END_TEST

/* A thief asks (`want`, as sf__pending_steal sets it on seeing only private
 * work or marked slots): the next get trims the top before publishing. */
static void forgotten_then_trimmed(void)
{
    tu_env_threads(1);
    if (sf_init(NULL) != 0)
        abort();
    forget_task();
    scribble();
    /* sf__tls.me: this thread's struct (sf__thread_self finds it only
     * inside a libsf call, registry.h). */
    atomic_store(&sf__tls.me->q.want, 1);
    sf_task u;
    if (sf_task_do(&u, ident, (void *)2) != 0)
        abort();
    sf_task_get(&u);
}

START_TEST(forgotten_task_trimmed_reported)
{
    expect_abort_at(forgotten_then_trimmed, "an sf_task (", gone);
}
END_TEST

/* The get of an older task, not the newest: its slot is cleared, and the
 * slots above it that hold no pending task are dropped from the bottom -
 * the first one read is the forgotten one's. */
static void forgotten_then_trimmed_at_bottom(void)
{
    tu_env_threads(1);
    sf_task u;
    if (sf_task_do(&u, ident, (void *)2) != 0)
        abort();
    forget_task();
    scribble();
    sf_task_get(&u);
}

START_TEST(forgotten_task_trimmed_at_bottom_reported)
{
    expect_abort_at(forgotten_then_trimmed_at_bottom, "an sf_task (", gone);
}
END_TEST

/* A get that waits helps with its thread's newest task first (get.c,
 * through sf__pending_pop; called here directly). */
static void forgotten_then_popped(void)
{
    tu_env_threads(1);
    if (sf_init(NULL) != 0)
        abort();
    forget_task();
    scribble();
    uint64_t claimed;
    sf__pending_pop(&sf__tls.me->q, SF__REGION_ANY, &claimed);
}

START_TEST(forgotten_task_popped_reported)
{
    expect_abort_at(forgotten_then_popped, "an sf_task (", gone);
}
END_TEST

static void *forget_on_thread(void *arg)
{
    (void)arg;
    forget_task();
    return NULL;
}

/* At one thread, this one is thread 0 (it starts the runtime), the new one
 * thread 1. */
static void thread_exits_with_task(void)
{
    tu_env_threads(1);
    if (sf_init(NULL) != 0)
        abort();
    tu_run_on_thread(forget_on_thread, NULL, 0);
}

START_TEST(thread_exit_with_a_task_never_got_reported)
{
    expect_abort_at(thread_exits_with_task, "thread 1 exits with an sf_task (", ") never got");
}
END_TEST

static void shutdown_with_task(void)
{
    tu_env_threads(1);
    forget_task();
    sf_shutdown();
}

START_TEST(shutdown_with_own_task_never_got_reported)
{
    expect_abort_at(shutdown_with_task, "sf_shutdown(): an sf_task (", ") was never got");
}
END_TEST

/* Another thread, alive, queued a task and stopped calling libsf without
 * getting it. */
static atomic_int queued;

static void *queue_and_stop(void *arg)
{
    (void)arg;
    sf_task t;
    if (sf_task_do(&t, ident, NULL) != 0)
        abort();
    note_address(&t);
    atomic_store(&queued, 1);
    for (;;)
        pause(); /* until the process aborts */
}

static void shutdown_with_other_threads_task(void)
{
    tu_env_threads(2);
    if (sf_init(NULL) != 0)
        abort();
    pthread_t th;
    if (pthread_create(&th, NULL, queue_and_stop, NULL) != 0)
        abort();
    while (!atomic_load(&queued))
        sched_yield();
    sf_shutdown();
}

START_TEST(shutdown_with_another_threads_task_never_got_reported)
{
    expect_abort_at(shutdown_with_other_threads_task, "sf_shutdown(): an sf_task (",
                    ") was never got");
}
END_TEST

/* Legitimate use: nothing to report. A tree of tasks in caller storage,
 * each node's children got in an order of their own, made and got on the
 * main thread, a worker and a thread that exits; promoted by an idle
 * worker's request; storage reused once got. */
static void *tree(void *arg)
{
    long d = (long)arg;
    if (d == 0)
        return (void *)1;
    static const int orders[4][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}};
    const int *o = orders[d % 4];
    sf_task t[4];
    for (int i = 0; i < 4; i++)
        if (sf_task_do(&t[i], tree, (void *)(d - 1)) != 0)
            abort();
    long sum = 0;
    for (int i = 0; i < 4; i++)
        sum += (long)sf_task_get(&t[o[i]]);
    return (void *)sum;
}

static uint64_t status_of(sf_task *t)
{
    sf_future *f = (sf_future *)(void *)t;
    return sf__status(atomic_load(&f->state));
}

static void *tree_on_thread(void *arg)
{
    if (tree(arg) != (void *)1024)
        abort();
    return NULL;
}

static void correct_tasks(void)
{
    tu_env_threads(2);
    if (sf_init(NULL) != 0)
        abort();
    while (!sf__pool_has_idle())
        sched_yield();
    /* With the worker idle, the first get publishes: every sf_task queued
     * so far is promoted, the ones not got yet stay MOVED until their get. */
    sf_task t[4];
    for (int i = 0; i < 4; i++)
        if (sf_task_do(&t[i], tree, (void *)5L) != 0)
            abort();
    if (sf_task_get(&t[2]) != (void *)1024)
        abort();
    for (int i = 0; i < 4; i++)
        if (i != 2 && status_of(&t[i]) != SF__MOVED)
            abort();
    for (int i = 3; i >= 0; i--)
        if (sf_task_get(&t[i]) != (void *)1024)
            abort();
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 4; i++) /* the same storage again, got since */
            if (sf_task_do(&t[i], tree, (void *)4L) != 0)
                abort();
        for (int i = 0; i < 4; i++)
            if (sf_task_get(&t[(i + round) % 4]) != (void *)256)
                abort();
    }
    tu_run_on_thread(tree_on_thread, (void *)5L, 0);
    sf_shutdown();
}

START_TEST(correct_tasks_run_clean)
{
    int sig;
    char *err = tu_run_in_child(correct_tasks, &sig, NULL);
    ck_assert_int_eq(sig, 0);
    ck_assert_str_eq(err, "");
    free(err);
}
END_TEST

/* Reports at once: REPORTERS threads trip a check together, each with a
 * long line (debug.c writes each report with one write). */
#define REPORTERS 8
#define REPORT_PAD 600
static atomic_int reporters_ready;

static void *report_at_once(void *arg)
{
    char pad[REPORT_PAD + 1];
    memset(pad, 'x', REPORT_PAD);
    pad[REPORT_PAD] = '\0';
    atomic_fetch_add(&reporters_ready, 1);
    while (atomic_load(&reporters_ready) < REPORTERS)
        ; /* all start their reports together */
    sf__misuse("reporter %d: %s", (int)(intptr_t)arg, pad);
}

static void many_reports(void)
{
    pthread_t t[REPORTERS];
    for (int i = 0; i < REPORTERS; i++)
        if (pthread_create(&t[i], NULL, report_at_once, (void *)(intptr_t)i) != 0)
            _exit(3);
    for (;;)
        pause(); /* the first report aborts the process */
}

START_TEST(reports_at_once_are_whole_lines)
{
    char pad[REPORT_PAD + 1];
    memset(pad, 'x', REPORT_PAD);
    pad[REPORT_PAD] = '\0';
    for (int run = 0; run < 20; run++) {
        int sig;
        char *err = tu_run_in_child(many_reports, &sig, NULL);
        ck_assert_msg(sig == SIGABRT, "the child ended with signal %d, stderr \"%s\"", sig, err);
        size_t lines = tu_count_lines(err);
        ck_assert_msg(lines >= 1 && lines <= REPORTERS, "%zu lines: \"%s\"", lines, err);
        ck_assert_msg(err[strlen(err) - 1] == '\n', "a line was cut: \"%s\"", err);
        /* Every line is one whole report, and no reporter wrote twice. */
        bool seen[REPORTERS] = {false};
        for (char *line = err, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
            *nl = '\0';
            int who = -1, at = 0;
            ck_assert_msg(sscanf(line, "libsf: reporter %d: %n", &who, &at) == 1 && at > 0,
                          "not a whole report: \"%s\"", line);
            ck_assert_msg(who >= 0 && who < REPORTERS && !seen[who], "reporter %d again", who);
            seen[who] = true;
            ck_assert_str_eq(line + at, pad);
        }
        free(err);
    }
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
    tcase_add_test(tc, get_after_shutdown_reported);
    tcase_add_test(tc, quarantine_keeps_released_futures_out_of_reuse);
    tcase_add_test(tc, correct_program_runs_clean);
    tcase_add_test(tc, lock_order_violation_reported);
    tcase_add_test(tc, unlock_of_a_lock_not_held_reported);
    tcase_add_test(tc, task_started_under_a_lock_reported);
    tcase_add_test(tc, owner_only_operation_by_another_thread_reported);
    tcase_add_test(tc, illegal_transition_reported);
    tcase_add_test(tc, task_reused_while_queued_reported);
    tcase_add_test(tc, forgotten_task_promoted_reported);
    tcase_add_test(tc, forgotten_task_trimmed_reported);
    tcase_add_test(tc, forgotten_task_trimmed_at_bottom_reported);
    tcase_add_test(tc, forgotten_task_popped_reported);
    tcase_add_test(tc, thread_exit_with_a_task_never_got_reported);
    tcase_add_test(tc, shutdown_with_own_task_never_got_reported);
    tcase_add_test(tc, shutdown_with_another_threads_task_never_got_reported);
    tcase_add_test(tc, correct_tasks_run_clean);
    tcase_add_test(tc, reports_at_once_are_whole_lines);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(debug_suite)
