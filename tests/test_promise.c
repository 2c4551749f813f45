/*
 * test_promise.c - promises (sf_promise, sf_promise_set, sf_promise_fail):
 * futures with no task, completed by any thread, one that never calls libsf
 * otherwise included. Most cases run at SF_THREADS 1, 2 and 3 (the loop
 * index).
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SFTRACE_BIN
#error "SFTRACE_BIN, the path of the built tools/sftrace/sftrace, comes from tests/local.mk"
#endif

/* A plain pthread (it never calls libsf otherwise) that sets or fails a
 * promise after a pause. */
struct setter {
    sf_future *p;
    void *value;
    int code;         /* 0: set with value; else fail with this code */
    long delay_ms;
    int rc, err;      /* what the call returned */
    pthread_t thread;
};

static void *setter_main(void *arg)
{
    struct setter *s = arg;
    tu_sleep_ms(s->delay_ms);
    errno = 0;
    s->rc = s->code == 0 ? sf_promise_set(s->p, s->value)
                         : sf_promise_fail(s->p, s->code, "failed with %d", s->code);
    s->err = errno;
    return NULL;
}

static void setter_start(struct setter *s, sf_future *p, void *value, int code, long delay_ms)
{
    *s = (struct setter){.p = p, .value = value, .code = code, .delay_ms = delay_ms};
    ck_assert_int_eq(pthread_create(&s->thread, NULL, setter_main, s), 0);
}

static void setter_join(struct setter *s)
{
    ck_assert_int_eq(pthread_join(s->thread, NULL), 0);
}

static void start(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
}

/* Gets the promise in arg from inside a task: the innermost of the chain. */
static void *get_promise(void *arg)
{
    errno = 0;
    void *v = sf_get(arg);
    ck_assert_int_ne(errno, EDEADLK);
    return (void *)((long)v + 1);
}

/* A task that gets a task that gets the promise: nested gets. */
static void *get_nested(void *arg)
{
    sf_future *inner = sf_do(get_promise, arg);
    ck_assert_ptr_nonnull(inner);
    errno = 0;
    void *v = sf_get(inner);
    ck_assert_int_ne(errno, EDEADLK);
    sf_release(inner);
    return (void *)((long)v + 10);
}

/* Tasks blocked on a promise inside nested gets - at SF_THREADS=1 the only
 * thread sleeps there - complete once a plain pthread sets it, and no get
 * sees EDEADLK: a chain of waits ends at a promise. */
START_TEST(set_by_a_plain_thread_wakes_nested_getters)
{
    start(_i);
    sf_future *p = sf_promise();
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sf_is_done(p), 0);
    sf_future *a = sf_do(get_nested, p), *b = sf_do(get_nested, p), *c = sf_do(get_promise, p);
    struct setter s;
    setter_start(&s, p, (void *)100L, 0, 100);
    errno = 0;
    ck_assert_ptr_eq(sf_get(a), (void *)111L);
    ck_assert_ptr_eq(sf_get(b), (void *)111L);
    ck_assert_ptr_eq(sf_get(c), (void *)101L);
    ck_assert_int_eq(errno, 0);
    setter_join(&s);
    ck_assert_int_eq(s.rc, 0);
    ck_assert_int_eq(sf_is_done(p), 1);
    void *r = NULL;
    ck_assert_int_eq(sf_wait(p, &r), 0);
    ck_assert_ptr_eq(r, (void *)100L);
    ck_assert_ptr_eq(sf_get_isolated(p), (void *)100L);
    sf_release(a);
    sf_release(b);
    sf_release(c);
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* An isolated get of an unset promise waits (a promise is in no region)
 * and returns the value. */
START_TEST(isolated_get_waits)
{
    start(_i);
    sf_future *p = sf_promise();
    struct setter s;
    setter_start(&s, p, (void *)7L, 0, 50);
    errno = 0;
    ck_assert_ptr_eq(sf_get_isolated(p), (void *)7L);
    ck_assert_int_eq(errno, 0);
    setter_join(&s);
    sf_release(p);
    sf_shutdown();
}
END_TEST

START_TEST(set_twice_is_ealready)
{
    start(_i);
    sf_future *p = sf_promise();
    ck_assert_int_eq(sf_promise_set(p, (void *)1L), 0);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(p, (void *)2L), -1);
    ck_assert_int_eq(errno, EALREADY);
    errno = 0;
    ck_assert_int_eq(sf_promise_fail(p, EIO, NULL), -1);
    ck_assert_int_eq(errno, EALREADY);
    ck_assert_ptr_eq(sf_get(p), (void *)1L);
    ck_assert_int_eq(sf_cancel(p), 1); /* already done: no change */
    ck_assert_ptr_eq(sf_get(p), (void *)1L);
    sf_release(p);

    sf_future *f = sf_promise();
    ck_assert_int_eq(sf_promise_fail(f, ERANGE, "once"), 0);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(f, NULL), -1);
    ck_assert_int_eq(errno, EALREADY);
    ck_assert_int_eq(sf_wait(f, NULL), ERANGE);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* sf_cancel of an unset promise: done at once, getters see ECANCELED, and
 * the setter's call, before the release or after it, is ECANCELED. */
START_TEST(set_after_cancel_is_ecanceled)
{
    start(_i);
    sf_future *p = sf_promise();
    sf_future *g = sf_do(get_promise, p); /* a getter that will see it */
    struct setter s;
    setter_start(&s, p, NULL, 0, 0);
    setter_join(&s); /* set first: the cancel below finds it done */
    ck_assert_int_eq(s.rc, 0);
    ck_assert_int_eq(sf_cancel(p), 1);
    ck_assert_ptr_eq(sf_get(g), (void *)1L);
    sf_release(g);
    sf_release(p);

    p = sf_promise();
    ck_assert_int_eq(sf_cancel(p), 0);
    ck_assert_int_eq(sf_is_done(p), 1);
    errno = 0;
    ck_assert_ptr_null(sf_get(p));
    ck_assert_int_eq(errno, ECANCELED);
    ck_assert_int_eq(sf_wait(p, NULL), ECANCELED);
    ck_assert_ptr_null(sf_error_message(p));
    ck_assert_int_eq(sf_cancel(p), 1);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(p, (void *)5L), -1);
    ck_assert_int_eq(errno, ECANCELED);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(p, (void *)5L), -1); /* still held: still cancelled */
    ck_assert_int_eq(errno, ECANCELED);
    sf_release(p);

    /* Cancelled and released before its setter called: the setter's call
     * is still ECANCELED, and frees it (LeakSanitizer, ASan). */
    p = sf_promise();
    ck_assert_int_eq(sf_cancel(p), 0);
    sf_release(p);
    setter_start(&s, p, NULL, EIO, 0);
    setter_join(&s);
    ck_assert_int_eq(s.rc, -1);
    ck_assert_int_eq(s.err, ECANCELED);
    sf_shutdown();
}
END_TEST

/* A getter asleep on a promise that is cancelled wakes with ECANCELED. */
static void *cancel_later(void *arg)
{
    tu_sleep_ms(50);
    ck_assert_int_eq(sf_cancel(arg), 0);
    return NULL;
}

START_TEST(cancel_wakes_getters)
{
    start(_i);
    sf_future *p = sf_promise();
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, cancel_later, p), 0);
    errno = 0;
    ck_assert_ptr_null(sf_get(p));
    ck_assert_int_eq(errno, ECANCELED);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    sf_release(p);
    sf_shutdown();
}
END_TEST

START_TEST(fail_reaches_getters)
{
    start(_i);
    sf_future *p = sf_promise();
    sf_future *g = sf_do(get_promise, p);
    struct setter s;
    setter_start(&s, p, NULL, EPIPE, 50);
    errno = 0;
    ck_assert_ptr_eq(sf_get(g), (void *)1L); /* get_promise adds 1 to NULL */
    setter_join(&s);
    ck_assert_int_eq(s.rc, 0);
    errno = 0;
    ck_assert_ptr_null(sf_get(p));
    ck_assert_int_eq(errno, EPIPE);
    ck_assert_int_eq(sf_wait(p, NULL), EPIPE);
    ck_assert_str_eq(sf_error_message(p), "failed with 32");
    sf_release(g);
    sf_release(p);

    p = sf_promise();
    errno = 0;
    ck_assert_int_eq(sf_promise_fail(p, 0, "no"), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(sf_promise_fail(p, -3, NULL), -1);
    ck_assert_int_eq(sf_promise_fail(p, 77, NULL), 0); /* the program's own code */
    ck_assert_int_eq(sf_wait(p, NULL), 77);
    ck_assert_ptr_null(sf_error_message(p));
    sf_release(p);
    sf_shutdown();
}
END_TEST

static void *ident(void *arg) { return arg; }

START_TEST(einval_cases)
{
    start(_i);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(NULL, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_promise_fail(NULL, EIO, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    /* A task's future is no promise: pending, or done. */
    sf_future *f = sf_do(ident, (void *)3L);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(f, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_eq(sf_get(f), (void *)3L);
    errno = 0;
    ck_assert_int_eq(sf_promise_fail(f, EIO, "x"), -1);
    ck_assert_int_eq(errno, EINVAL);
    sf_release(f);
    /* Nor is a task whose function is sf_promise (it makes one): pending,
     * then done. */
    f = sf_do((void *(*)(void *))(void (*)(void))sf_promise, NULL); /* via void (*)(void): no -Wcast-function-type */
    errno = 0;
    ck_assert_int_eq(sf_promise_set(f, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    sf_future *made = sf_get(f);
    ck_assert_ptr_nonnull(made);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(f, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(sf_cancel(f), 1); /* a done task, not a promise to cancel */
    ck_assert_int_eq(sf_promise_set(made, (void *)9L), 0);
    ck_assert_ptr_eq(sf_get(made), (void *)9L);
    sf_release(made);
    sf_release(f);
#ifndef SF_DEBUG
    /* Completed and released: gone (the debug build names such a use). */
    sf_future *p = sf_promise();
    ck_assert_int_eq(sf_promise_set(p, NULL), 0);
    sf_release(p);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(p, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
#endif
    sf_shutdown();
}
END_TEST

static atomic_int hook_calls, hook_code;
static char hook_msg[64];

static void hook(int code, const char *message, void *ctx)
{
    (void)ctx;
    atomic_store(&hook_code, code);
    snprintf(hook_msg, sizeof hook_msg, "%s", message != NULL ? message : "(none)");
    atomic_fetch_add(&hook_calls, 1);
}

/* Released before it is set: the set (from a plain thread) frees it, and a
 * later promise reuses the memory; no leak, no use after free (ASan). */
START_TEST(release_before_set)
{
    start(_i);
    for (int k = 0; k < 100; k++) {
        sf_future *p = sf_promise();
        ck_assert_ptr_nonnull(p);
        sf_release(p);
        struct setter s;
        setter_start(&s, p, (void *)1L, 0, 0);
        setter_join(&s);
        ck_assert_int_eq(s.rc, 0);
    }
    sf_stats st;
    ck_assert_int_eq(sf_stats_read(&st), 0);
    ck_assert_uint_eq(st.promises, 100);
    sf_shutdown();
}
END_TEST

/* A failure nobody saw goes to the hook: failed then released unseen (by the
 * release), or released then failed (by the failing call). Seen or
 * cancelled: no report. */
START_TEST(unhandled_failures_reach_the_hook)
{
    start(_i);
    sf_on_unhandled(hook, NULL);
    atomic_store(&hook_calls, 0);
    sf_future *p = sf_promise();
    ck_assert_int_eq(sf_promise_fail(p, ENOSPC, "full"), 0);
    ck_assert_int_eq(atomic_load(&hook_calls), 0);
    sf_release(p);
    ck_assert_int_eq(atomic_load(&hook_calls), 1);
    ck_assert_int_eq(atomic_load(&hook_code), ENOSPC);
    ck_assert_str_eq(hook_msg, "full");

    p = sf_promise();
    sf_release(p);
    struct setter s;
    setter_start(&s, p, NULL, EIO, 0);
    setter_join(&s);
    ck_assert_int_eq(s.rc, 0);
    ck_assert_int_eq(atomic_load(&hook_calls), 2);
    ck_assert_int_eq(atomic_load(&hook_code), EIO);
    ck_assert_str_eq(hook_msg, "failed with 5");

    p = sf_promise();
    ck_assert_int_eq(sf_promise_fail(p, EIO, NULL), 0);
    ck_assert_int_eq(sf_wait(p, NULL), EIO); /* seen */
    sf_release(p);
    p = sf_promise();
    ck_assert_int_eq(sf_cancel(p), 0);
    sf_release(p);
    ck_assert_int_eq(atomic_load(&hook_calls), 2);

    /* Failed, never released: reported at shutdown. */
    p = sf_promise();
    ck_assert_int_eq(sf_promise_fail(p, EBADF, "kept"), 0);
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&hook_calls), 3);
    ck_assert_int_eq(atomic_load(&hook_code), EBADF);
    sf_on_unhandled(NULL, NULL);
}
END_TEST

/* A pipeline: a plain thread sets promises in order while this thread gets
 * them in order, often before they are set. */
#define PIPELINE 100000

struct pipeline {
    sf_future **ps;
    int n;
};

static void *produce(void *arg)
{
    struct pipeline *pl = arg;
    for (int i = 0; i < pl->n; i++) {
        int rc = sf_promise_set(pl->ps[i], (void *)(long)i);
        ck_assert_int_eq(rc, 0);
        if (i % 1024 == 0)
            sched_yield();
    }
    return NULL;
}

START_TEST(pipeline_of_promises)
{
    start(_i);
    struct pipeline pl = {malloc(PIPELINE * sizeof(sf_future *)), PIPELINE};
    ck_assert_ptr_nonnull(pl.ps);
    for (int i = 0; i < PIPELINE; i++)
        ck_assert_ptr_nonnull(pl.ps[i] = sf_promise());
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, produce, &pl), 0);
    for (int i = 0; i < PIPELINE; i++) {
        errno = 0;
        ck_assert_ptr_eq(sf_get(pl.ps[i]), (void *)(long)i);
        ck_assert_int_eq(errno, 0);
        sf_release(pl.ps[i]);
    }
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    free(pl.ps);
    sf_shutdown();
}
END_TEST

/* A set racing a cancel, or a release: one of them completes the promise,
 * and every call agrees on which (the set is 0 exactly when the cancel found
 * it done), with no leak and no use after free (the sanitizers). */
#define RACES 5000

static _Atomic(sf_future *) race_slot;
static atomic_int race_rc[RACES];

static void *race_setter(void *arg)
{
    (void)arg;
    for (int i = 0; i < RACES; i++) {
        sf_future *p;
        while ((p = atomic_exchange(&race_slot, NULL)) == NULL)
            ;
        errno = 0;
        int rc = sf_promise_set(p, (void *)(long)(i + 1));
        atomic_store(&race_rc[i], rc == 0 ? 0 : errno);
    }
    return NULL;
}

START_TEST(set_races_cancel_and_release)
{
    start(_i);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, race_setter, NULL), 0);
    int cancelled = 0, released_first = 0;
    for (int i = 0; i < RACES; i++) {
        atomic_store(&race_rc[i], -1);
        sf_future *p = sf_promise();
        ck_assert_ptr_nonnull(p);
        while (atomic_load(&race_slot) != NULL) /* the setter took the last one */
            sched_yield();
        atomic_store(&race_slot, p);
        if (i % 2 == 1) { /* the release races the set: the set frees it */
            sf_release(p);
            released_first++;
            continue;
        }
        int c = sf_cancel(p);
        void *v = NULL;
        int w = sf_wait(p, &v);
        while (atomic_load(&race_rc[i]) == -1)
            sched_yield();
        int rc = atomic_load(&race_rc[i]);
        if (c == 0) { /* the cancel came first */
            ck_assert_int_eq(w, ECANCELED);
            ck_assert_int_eq(rc, ECANCELED);
            cancelled++;
        } else {
            ck_assert_int_eq(c, 1);
            ck_assert_int_eq(w, 0);
            ck_assert_ptr_eq(v, (void *)(long)(i + 1));
            ck_assert_int_eq(rc, 0);
        }
        sf_release(p);
    }
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    for (int i = 1; i < RACES; i += 2)
        ck_assert_int_eq(atomic_load(&race_rc[i]), 0);
    ck_assert_int_eq(released_first, RACES / 2);
    (void)cancelled; /* how many of each: the scheduler's choice */
    sf_shutdown();
}
END_TEST

/* sf_stats: promises have their own count, and created == run_inline +
 * run_pool + run_stolen + discarded + cancelled + queued still holds. */
START_TEST(stats_count_promises_apart)
{
    start(_i);
    sf_future *ps[5];
    for (int k = 0; k < 5; k++)
        ps[k] = sf_promise();
    sf_future *g = sf_do(get_promise, ps[0]);
    ck_assert_int_eq(sf_promise_set(ps[0], NULL), 0);
    ck_assert_ptr_eq(sf_get(g), (void *)1L);
    ck_assert_int_eq(sf_cancel(ps[1]), 0);
    ck_assert_int_eq(sf_promise_fail(ps[2], EIO, NULL), 0);
    sf_stats s = tu_stats_quiet(); /* the identity, with ps[3] and ps[4] unset */
    ck_assert_uint_eq(s.promises, 5);
    ck_assert_uint_eq(s.created, 1);
    ck_assert_uint_eq(s.cancelled, 0);
    ck_assert_uint_eq(s.queued, 0);
    sf_thread_stats rows[8];
    int n = sf_stats_read_threads(rows, 8);
    ck_assert_int_ge(n, 1);
    uint64_t sum = 0;
    for (int i = 0; i < n && i < 8; i++)
        sum += rows[i].promises;
    ck_assert_uint_eq(sum, 5);
    ck_assert_int_eq(sf_wait(ps[2], NULL), EIO);
    for (int k = 0; k < 5; k++)
        sf_release(ps[k]);
    sf_release(g);
    sf_shutdown();
}
END_TEST

/* sf_shutdown with promises still unset returns; their handles are
 * invalid afterwards (EINVAL). */
START_TEST(shutdown_with_unset_promises)
{
    start(_i);
    sf_future *p = sf_promise(), *q = sf_promise();
    sf_release(q); /* released unset: freed with the runtime */
    sf_shutdown();
    errno = 0;
    ck_assert_int_eq(sf_promise_set(p, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_promise_set(q, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* A promise made before fork() is invalid in the child. */
START_TEST(fork_child_sees_einval)
{
    start(1); /* no worker: the sanitizers' fork rule (test_fork.c) */
    sf_future *p = sf_promise();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        errno = 0;
        int ok = sf_promise_set(p, NULL) == -1 && errno == EINVAL;
        _exit(ok ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(sf_promise_set(p, (void *)2L), 0); /* the parent's is untouched */
    ck_assert_ptr_eq(sf_get(p), (void *)2L);
    sf_release(p);
    sf_shutdown();
}
END_TEST

/* Sets a promise from inside a task: its Set line is that thread's. */
static void *set_in_task(void *arg)
{
    ck_assert_int_eq(sf_promise_set(arg, (void *)9L), 0);
    return NULL;
}

/* sftrace with options `a` and `b` (NULL: none) on trace (the text trace:
 * --check --summary; a Chrome trace, which sftrace reads with json-c:
 * --schedule): exit status
 * 0, else the test fails quoting its stderr. */
static void sftrace_run(const char *a, const char *b, const char *trace)
{
    char *argv[] = {(char *)SFTRACE_BIN, (char *)a, (char *)(b != NULL ? b : trace),
                    (char *)(b != NULL ? trace : NULL), NULL};
    char *o, *e;
    int status = tu_run_capture(argv, &o, &e);
    free(o);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sftrace %s %s %s:\n%s", a,
                  b != NULL ? b : "", trace, e != NULL ? e : "");
    free(e);
}

/* A trace with promises made, got, set from outside libsf (Thread 131071)
 * and from a task, failed and cancelled passes sftrace --check, and shows
 * each completion. */
/* Runs the promises of the trace tests with SF_TRACE=mode into path. */
static void traced_promises(int threads, const char *mode, const char *path)
{
    tu_env_threads(threads);
    setenv("SF_TRACE", mode, 1);
    setenv("SF_TRACE_FILE", path, 1);
    ck_assert_int_eq(sf_init(NULL), 0);
    sf_future *p = sf_promise(), *q = sf_promise(), *r = sf_promise(), *c = sf_promise();
    sf_future *g = sf_do(get_nested, p);
    struct setter s;
    setter_start(&s, p, (void *)1L, 0, 50);
    ck_assert_ptr_eq(sf_get(g), (void *)12L);
    setter_join(&s);
    sf_future *t = sf_do(set_in_task, q);
    ck_assert_ptr_null(sf_get(t));
    ck_assert_ptr_eq(sf_get(q), (void *)9L);
    setter_start(&s, r, NULL, EIO, 0);
    setter_join(&s);
    ck_assert_int_eq(sf_wait(r, NULL), EIO);
    ck_assert_int_eq(sf_cancel(c), 0);
    ck_assert_int_eq(sf_wait(c, NULL), ECANCELED);
    sf_future *unset = sf_promise(); /* stays unset through the shutdown */
    sf_future *all[] = {p, q, r, c, g, t, unset};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        sf_release(all[k]);
    sf_shutdown();
}

START_TEST(trace_with_promises_passes_sftrace)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "promise-trace");
    traced_promises(_i, "1", path);
    sftrace_run("--check", "--summary", path);
    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(tu_count_prefixed(text, "131071\t"), 2); /* p's and r's */
    ck_assert_ptr_nonnull(strstr(text, "\tSet\t"));
    ck_assert_ptr_nonnull(strstr(text, "\tPromise\t"));
    free(text);
    unlink(path);
}
END_TEST

/* The same as a Chrome trace: valid JSON that sftrace reads, with a "set"
 * event for each completion - global ones for those from outside. */
START_TEST(chrome_trace_with_promises_is_read)
{
    char path[256];
    tu_tmp_path(path, sizeof path, "promise-chrome");
    traced_promises(_i, "chrome", path);
    sftrace_run("--schedule", NULL, path);
    char *text = tu_read_file(path);
    ck_assert_ptr_nonnull(text);
    size_t sets = 0, global = 0;
    for (const char *q = text; (q = strstr(q, "\"name\":\"set\"")) != NULL; q++)
        sets++;
    for (const char *q = text; (q = strstr(q, "{\"ph\":\"i\",\"s\":\"g\"")) != NULL; q++)
        global++;
    ck_assert_uint_eq(sets, 4);
    ck_assert_uint_eq(global, 2);
    free(text);
    unlink(path);
}
END_TEST

static Suite *promise_suite(void)
{
    Suite *s = suite_create("promise");
    TCase *tc = tcase_create("promise");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, set_by_a_plain_thread_wakes_nested_getters, 1, 4);
    tcase_add_loop_test(tc, isolated_get_waits, 1, 4);
    tcase_add_loop_test(tc, set_twice_is_ealready, 1, 4);
    tcase_add_loop_test(tc, set_after_cancel_is_ecanceled, 1, 4);
    tcase_add_loop_test(tc, cancel_wakes_getters, 1, 4);
    tcase_add_loop_test(tc, fail_reaches_getters, 1, 4);
    tcase_add_loop_test(tc, einval_cases, 1, 4);
    tcase_add_loop_test(tc, release_before_set, 1, 4);
    tcase_add_loop_test(tc, unhandled_failures_reach_the_hook, 1, 4);
    tcase_add_loop_test(tc, pipeline_of_promises, 1, 4);
    tcase_add_loop_test(tc, set_races_cancel_and_release, 1, 4);
    tcase_add_loop_test(tc, stats_count_promises_apart, 1, 4);
    tcase_add_loop_test(tc, shutdown_with_unset_promises, 1, 4);
    tcase_add_test(tc, fork_child_sees_einval);
    tcase_add_loop_test(tc, trace_with_promises_passes_sftrace, 1, 4);
    tcase_add_loop_test(tc, chrome_trace_with_promises_is_read, 1, 4);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(promise_suite)
