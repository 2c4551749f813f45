/*
 * test_failures.c - sf_fail, sf_wait, sf_error_message and sf_on_unhandled
 * (docs/failures.md): a task fails by saying so and then returns
 * as usual; every get of it sees the failure instead of a result, and no
 * other; a parent that gets a failed child decides what happens next; a
 * failure nobody saw reaches the unhandled-failure hook exactly once, when
 * the future is released or at sf_shutdown().
 *
 * Tasks wait for flags with a deadline (WAIT_MS) and report a timeout as a
 * wrong value, so a broken runtime fails a test instead of hanging it; the
 * tcase timeout is the watchdog beyond that.
 */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 10000L
/* What *result holds before an sf_wait() that must leave it alone. */
#define UNTOUCHED ((void *)0x5e5e5e)

/* ---- the counting hook ---- */

#define MAX_MSG 2048
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int hook_calls;
static int hook_code;
static int hook_msg_null;
static char hook_msg[MAX_MSG];
static void *hook_ctx;
static pthread_t hook_thread;
static int hook_token; /* its address is the ctx given to sf_on_unhandled */

static void counting_hook(int code, const char *message, void *ctx)
{
    pthread_mutex_lock(&hook_lock);
    hook_code = code;
    hook_msg_null = message == NULL;
    snprintf(hook_msg, sizeof hook_msg, "%s", message != NULL ? message : "");
    hook_ctx = ctx;
    hook_thread = pthread_self();
    pthread_mutex_unlock(&hook_lock);
    atomic_fetch_add(&hook_calls, 1);
}

static void assert_hook_calls(int want)
{
    ck_assert_int_eq(atomic_load(&hook_calls), want);
}

/* The last call of the hook was (code, message) with our ctx, in this thread. */
static void assert_last_hook(int code, const char *message)
{
    pthread_mutex_lock(&hook_lock);
    int c = hook_code, null = hook_msg_null;
    void *ctx = hook_ctx;
    pthread_t t = hook_thread;
    char msg[MAX_MSG];
    memcpy(msg, hook_msg, sizeof msg);
    pthread_mutex_unlock(&hook_lock);
    ck_assert_int_eq(c, code);
    if (message == NULL) {
        ck_assert_msg(null, "the hook got message \"%s\", want NULL", msg);
    } else {
        ck_assert_msg(!null, "the hook got a NULL message, want \"%s\"", message);
        ck_assert_str_eq(msg, message);
    }
    ck_assert_ptr_eq(ctx, &hook_token);
    ck_assert_msg(pthread_equal(t, pthread_self()),
                  "the hook ran in another thread than the one releasing (or shutting down)");
}

static void start(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
}

/* ---- tasks ---- */

static atomic_int runs;
static int fail_rc, fail_errno;
static pthread_t fail_thread;

/* sf_fail(EIO, "disk %d", 3), then returns a value that must be ignored. */
static void *fail_disk(void *arg)
{
    (void)arg;
    atomic_fetch_add(&runs, 1);
    fail_thread = pthread_self();
    errno = 0;
    fail_rc = sf_fail(EIO, "disk %d", 3);
    fail_errno = errno;
    return (void *)42L;
}

/* The runtime still works: a small computation gives its exact answer. */
static void assert_works(void)
{
    sf_future *f = sf_do(tu_fib, (void *)15L);
    ck_assert_ptr_nonnull(f);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_ptr_eq(r, (void *)610L);
    ck_assert_ptr_null(sf_error_message(f));
    sf_release(f);
}

/*
 * A failing task, parameterised, for the tests that need many of them. It
 * counts itself in *done once it has failed.
 */
struct failing {
    int code;
    const char *msg; /* sf_fail(code, "%s", msg); NULL: sf_fail(code, NULL) */
    atomic_int *done;
};

static void *fail_as_told(void *arg)
{
    struct failing *w = arg;
    int rc = w->msg != NULL ? sf_fail(w->code, "%s", w->msg) : sf_fail(w->code, NULL);
    if (rc == 0 && w->done != NULL)
        atomic_fetch_add(w->done, 1);
    return (void *)-1L;
}

/*
 * Runs failing tasks without any get of them: a root task, run by this
 * thread's get, makes them (fail_as_told(&w[i]) into fs[i]) and a gate task
 * that waits until *done reaches want; a foreign thread's get claims the
 * gate and runs it there; the root's get of the gate then finds it running
 * elsewhere and helps, running the failing tasks, which are of the root's
 * region (a pool worker may take some). The root's get sees only the gate.
 * Then waits with sf_is_done(), which runs nothing and sees nothing, until
 * each of fs is done. fresh: the root also reads sf_error_message() and
 * sf_is_done() of each before any of them ran (SF_THREADS=1 only, where no
 * worker can run them first); fresh_ok says both found them not failed
 * and not done.
 */
struct gate {
    atomic_int *count;
    int want;
    atomic_int started;
};

static void *gate_task(void *arg)
{
    struct gate *g = arg;
    atomic_store(&g->started, 1);
    double end = tu_now_ms() + (double)WAIT_MS;
    while (atomic_load(g->count) < g->want && tu_now_ms() < end)
        tu_sleep_ms(1);
    return atomic_load(g->count) >= g->want ? (void *)1L : (void *)-1L;
}

static void *get_on_thread(void *arg) { return sf_get(arg); }

struct unseen {
    struct failing *w;
    sf_future **fs;
    int n, want, fresh, fresh_ok, thread_made;
    struct gate g;
    sf_future *gf;
    pthread_t gt;
};

/* The root: its get of the gate gives the gate's value; -3 to -5 for a
 * setup that failed. */
static void *unseen_root(void *arg)
{
    struct unseen *u = arg;
    for (int i = 0; i < u->n; i++)
        if ((u->fs[i] = sf_do(fail_as_told, &u->w[i])) == NULL)
            return (void *)-3L;
    u->fresh_ok = 1;
    for (int i = 0; u->fresh && i < u->n; i++)
        if (sf_error_message(u->fs[i]) != NULL || sf_is_done(u->fs[i]) != 0)
            u->fresh_ok = 0;
    if ((u->gf = sf_do(gate_task, &u->g)) == NULL)
        return (void *)-3L;
    if (pthread_create(&u->gt, NULL, get_on_thread, u->gf) != 0)
        return (void *)-4L;
    u->thread_made = 1;
    if (!tu_wait_flag(&u->g.started, WAIT_MS))
        return (void *)-5L;
    return sf_get(u->gf);
}

/* Makes n failing tasks, fs[i] failing as w[i] says, counting themselves in
 * *done, and runs them unseen until *done reaches want. */
static void run_unseen(struct failing *w, sf_future **fs, int n, atomic_int *done, int want,
                       int fresh)
{
    for (int i = 0; i < n; i++)
        w[i].done = done;
    struct unseen u = {.w = w, .fs = fs, .n = n, .want = want, .fresh = fresh};
    u.g = (struct gate){.count = done, .want = want};
    sf_future *root = sf_do(unseen_root, &u);
    ck_assert_ptr_nonnull(root);
    void *mine = sf_get(root);
    void *theirs = NULL;
    if (u.thread_made)
        ck_assert_int_eq(pthread_join(u.gt, &theirs), 0);
    ck_assert_msg(mine != (void *)-3L && mine != (void *)-4L,
                  "setup: the root could not make its tasks");
    ck_assert_msg(mine != (void *)-5L, "setup: nobody started the gate task");
    ck_assert_msg(mine == (void *)1L, "setup: the failing tasks did not run while the gate waited");
    ck_assert_ptr_eq(theirs, (void *)1L);
    ck_assert_msg(u.fresh_ok, "sf_error_message or sf_is_done saw a task before it ran");
    sf_release(u.gf);
    sf_release(root);
    for (int i = 0; i < n; i++) {
        double end = tu_now_ms() + (double)WAIT_MS;
        while (sf_is_done(fs[i]) != 1 && tu_now_ms() < end)
            tu_sleep_ms(1);
        ck_assert_int_eq(sf_is_done(fs[i]), 1);
    }
}

/* One failed future, run and not seen: sf_fail(code, "%s", msg). */
static sf_future *failed_unseen(struct failing *w, atomic_int *done)
{
    sf_future *f = NULL;
    run_unseen(w, &f, 1, done, atomic_load(done) + 1, 0);
    return f;
}

/* ---- a failure as its getters see it ---- */

/* sf_wait gives the code and leaves *result alone; sf_get gives NULL with
 * errno; sf_error_message gives the message; the task's return value is
 * gone. _i: bit 0 the thread count (1, 2), bit 1 which get runs the task
 * (sf_wait, sf_get). Seen, then released: no unhandled report. */
START_TEST(fail_seen_by_every_get)
{
    start(1 + (_i & 1));
    sf_on_unhandled(counting_hook, &hook_token);
    sf_future *f = sf_do(fail_disk, NULL);
    ck_assert_ptr_nonnull(f);
    void *r = UNTOUCHED;
    if (_i & 2) {
        errno = 0;
        ck_assert_ptr_null(sf_get(f));
        ck_assert_int_eq(errno, EIO);
        ck_assert_int_eq(sf_wait(f, &r), EIO);
    } else {
        ck_assert_int_eq(sf_wait(f, &r), EIO);
        errno = 0;
        ck_assert_ptr_null(sf_get(f));
        ck_assert_int_eq(errno, EIO);
    }
    ck_assert_ptr_eq(r, UNTOUCHED);
    ck_assert_int_eq(fail_rc, 0);
    ck_assert_int_eq(atomic_load(&runs), 1);
    ck_assert_int_eq(sf_is_done(f), 1);
    ck_assert_int_eq(sf_wait(f, NULL), EIO);
    ck_assert_ptr_nonnull(sf_error_message(f));
    ck_assert_str_eq(sf_error_message(f), "disk 3");
    /* Again, after all that: a failure does not wear off. */
    errno = 0;
    ck_assert_ptr_null(sf_get(f));
    ck_assert_int_eq(errno, EIO);
    sf_release(f);
    assert_hook_calls(0);
    assert_works();
    sf_stats st = tu_stats_quiet(); /* a failed task ran: counted as any other */
    ck_assert_uint_eq(st.created, 1 + 1 + tu_fib_tasks(15));
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&runs), 1);
    assert_hook_calls(0);
}
END_TEST

/* fmt NULL: the task fails with no message. Codes need not be errno values. */
static void *fail_no_message(void *arg)
{
    fail_rc = sf_fail((int)(long)arg, NULL);
    return (void *)42L;
}

START_TEST(fail_without_message)
{
    start(1 + _i);
    static const int codes[] = {EPERM, 4242, INT_MAX};
    for (int k = 0; k < 3; k++) {
        sf_future *f = sf_do(fail_no_message, (void *)(long)codes[k]);
        ck_assert_ptr_nonnull(f);
        void *r = UNTOUCHED;
        ck_assert_int_eq(sf_wait(f, &r), codes[k]);
        ck_assert_int_eq(fail_rc, 0);
        ck_assert_ptr_eq(r, UNTOUCHED);
        ck_assert_ptr_null(sf_error_message(f));
        errno = 0;
        ck_assert_ptr_null(sf_get(f));
        ck_assert_int_eq(errno, codes[k]);
        sf_release(f);
    }
    sf_shutdown();
}
END_TEST

/* The first failure stands: a second sf_fail is -1/EALREADY and changes
 * nothing. */
static int second_rc, second_errno;

static void *fail_twice(void *arg)
{
    (void)arg;
    fail_rc = sf_fail(EIO, "first %s", "failure");
    errno = 0;
    second_rc = sf_fail(ENOSPC, "second %s", "failure");
    second_errno = errno;
    return (void *)42L;
}

START_TEST(first_failure_stands)
{
    start(1 + _i);
    sf_future *f = sf_do(fail_twice, NULL);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), EIO);
    ck_assert_ptr_eq(r, UNTOUCHED);
    ck_assert_int_eq(fail_rc, 0);
    ck_assert_int_eq(second_rc, -1);
    ck_assert_int_eq(second_errno, EALREADY);
    ck_assert_str_eq(sf_error_message(f), "first failure");
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* A code <= 0 is -1/EINVAL and does not fail the task: it returns its value. */
static int bad_rc[3], bad_errno[3];

static void *fail_bad_codes(void *arg)
{
    static const int bad[3] = {0, -EIO, INT_MIN};
    for (int k = 0; k < 3; k++) {
        errno = 0;
        bad_rc[k] = sf_fail(bad[k], "bad code %d", bad[k]);
        bad_errno[k] = errno;
    }
    return arg;
}

START_TEST(fail_bad_code_in_task)
{
    start(1 + _i);
    sf_on_unhandled(counting_hook, &hook_token);
    sf_future *f = sf_do(fail_bad_codes, (void *)99L);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(f, &r), 0);
    ck_assert_ptr_eq(r, (void *)99L);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(bad_rc[k], -1);
        ck_assert_int_eq(bad_errno[k], EINVAL);
    }
    ck_assert_ptr_null(sf_error_message(f));
    errno = 0;
    ck_assert_ptr_eq(sf_get(f), (void *)99L);
    ck_assert_int_eq(errno, 0);
    sf_release(f);
    sf_shutdown();
    assert_hook_calls(0);
}
END_TEST

/* Outside a task sf_fail is -1/EINVAL: before the runtime starts, in the
 * main thread, in a foreign thread, after a (failed) task ended; bad codes
 * too. The runtime works afterwards. */
static void *fail_outside(void *arg)
{
    (void)arg;
    errno = 0;
    if (sf_fail(EIO, "not in a task") != -1 || errno != EINVAL)
        return (void *)-1L;
    errno = 0;
    if (sf_fail(0, NULL) != -1 || errno != EINVAL)
        return (void *)-2L;
    return (void *)1L;
}

START_TEST(fail_outside_a_task)
{
    tu_env_threads(1 + _i);
    /* The runtime is not running yet. */
    ck_assert_ptr_eq(fail_outside(NULL), (void *)1L);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_ptr_eq(fail_outside(NULL), (void *)1L);
    errno = 0;
    ck_assert_int_eq(sf_fail(-1, "x"), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_eq(tu_run_on_thread(fail_outside, NULL, 0), (void *)1L);
    /* Right after a task failed in this thread's get, this thread is no
     * longer in a task. */
    sf_future *f = sf_do(fail_disk, NULL);
    ck_assert_int_eq(sf_wait(f, NULL), EIO);
    ck_assert_ptr_eq(fail_outside(NULL), (void *)1L);
    sf_release(f);
    assert_works();
    sf_shutdown();
}
END_TEST

/* ---- parents decide ---- */

/*
 * A parent gets its failed child and recovers: it returns normally, and its
 * getters see its result, no failure. _i: bit 0 threads (1, 2), bit 1 how
 * the parent gets the child (sf_wait, sf_get).
 */
static int p_rc, p_errno;
static void *p_val;
static char p_msg[MAX_MSG];
static int p_msg_null;

static void *parent_recovers(void *arg)
{
    long how = (long)arg;
    sf_future *c = sf_do(fail_disk, NULL);
    if (c == NULL)
        return (void *)-1L;
    p_val = UNTOUCHED;
    if (how == 0) {
        p_rc = sf_wait(c, &p_val);
    } else {
        errno = 0;
        p_val = sf_get(c);
        p_errno = errno;
    }
    const char *m = sf_error_message(c);
    p_msg_null = m == NULL;
    snprintf(p_msg, sizeof p_msg, "%s", m != NULL ? m : "");
    sf_release(c);
    return (void *)77L; /* handled: the parent's own result */
}

START_TEST(parent_recovers_from_failed_child)
{
    start(1 + (_i & 1));
    sf_on_unhandled(counting_hook, &hook_token);
    long how = (_i >> 1) & 1;
    sf_future *p = sf_do(parent_recovers, (void *)how);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(p, &r), 0);
    ck_assert_ptr_eq(r, (void *)77L);
    ck_assert_ptr_null(sf_error_message(p));
    errno = 0;
    ck_assert_ptr_eq(sf_get(p), (void *)77L);
    ck_assert_int_eq(errno, 0);
    if (how == 0) {
        ck_assert_int_eq(p_rc, EIO);
        ck_assert_ptr_eq(p_val, UNTOUCHED);
    } else {
        ck_assert_ptr_null(p_val);
        ck_assert_int_eq(p_errno, EIO);
    }
    ck_assert(!p_msg_null);
    ck_assert_str_eq(p_msg, "disk 3");
    sf_release(p);
    sf_shutdown();
    assert_hook_calls(0); /* the parent saw the child's failure */
}
END_TEST

/*
 * A parent fails in turn, with the code it chooses: the child's (the code
 * then propagates), or one of its own (the child's does not appear). _i: bit
 * 0 threads (1, 2), bit 1 which code.
 */
static void *parent_fails(void *arg)
{
    long own_code = (long)arg;
    sf_future *c = sf_do(fail_disk, NULL);
    if (c == NULL)
        return (void *)-1L;
    int rc = sf_wait(c, NULL);
    const char *m = sf_error_message(c);
    p_rc = sf_fail(own_code != 0 ? (int)own_code : rc, "child: %s", m != NULL ? m : "(none)");
    sf_release(c);
    return (void *)77L;
}

START_TEST(parent_fails_in_turn)
{
    start(1 + (_i & 1));
    sf_on_unhandled(counting_hook, &hook_token);
    long own_code = (_i & 2) ? ENOTRECOVERABLE : 0;
    sf_future *p = sf_do(parent_fails, (void *)own_code);
    void *r = UNTOUCHED;
    int want = own_code != 0 ? ENOTRECOVERABLE : EIO;
    ck_assert_int_eq(sf_wait(p, &r), want);
    ck_assert_ptr_eq(r, UNTOUCHED);
    ck_assert_int_eq(p_rc, 0);
    ck_assert_str_eq(sf_error_message(p), "child: disk 3");
    errno = 0;
    ck_assert_ptr_null(sf_get(p));
    ck_assert_int_eq(errno, want);
    sf_release(p);
    sf_shutdown();
    assert_hook_calls(0);
}
END_TEST

/*
 * Where the failed child ran does not matter. A parent task, run by main's
 * get, makes a child that fails after `go` is set, gets it, and recovers.
 *   _i 0: SF_THREADS=1, the child runs inline in the parent's get;
 *   _i 1: SF_THREADS=2, the child runs on the pool worker (the parent's get
 *         of a newer task submits it; the idle worker takes the oldest), and
 *         fails while the parent's get of it waits;
 *   _i 2: SF_THREADS=1, a foreign thread's get runs the child.
 * A helper thread sets `go` a little later, so that the parent's get is
 * (most likely) waiting when the failure happens; nothing depends on that.
 */
static atomic_int child_started, child_go;
static pthread_t child_thread;
static sf_future *child_f;
static atomic_int child_published;

static void *child_fails_late(void *arg)
{
    (void)arg;
    child_thread = pthread_self();
    atomic_store(&child_started, 1);
    if (!tu_wait_flag(&child_go, WAIT_MS))
        return (void *)-1L; /* no failure: the test sees a result instead */
    sf_fail(EIO, "late failure on %s", "purpose");
    return (void *)42L;
}

static void *wait_child_started(void *arg)
{
    return tu_wait_flag(&child_started, WAIT_MS) ? arg : (void *)-1L;
}

static void *set_go_later(void *arg)
{
    (void)arg;
    tu_sleep_ms(20);
    atomic_store(&child_go, 1);
    return NULL;
}

static void *foreign_gets_child(void *arg)
{
    (void)arg;
    if (!tu_wait_flag(&child_published, WAIT_MS))
        return (void *)-2L;
    errno = 0;
    void *v = sf_get(child_f);
    return v == NULL && errno == EIO ? (void *)1L : (void *)-1L;
}

static pthread_t parent_thread;
static int parent_setup_ok;

static void *parent_of_late_child(void *arg)
{
    long where = (long)arg;
    parent_thread = pthread_self();
    sf_future *c = sf_do(child_fails_late, NULL);
    if (c == NULL)
        return (void *)-1L;
    parent_setup_ok = 1;
    if (where == 1) {
        sf_future *x = sf_do(wait_child_started, (void *)5L);
        parent_setup_ok = sf_get(x) == (void *)5L;
        sf_release(x);
    } else if (where == 2) {
        child_f = c;
        atomic_store(&child_published, 1);
        parent_setup_ok = tu_wait_flag(&child_started, WAIT_MS);
    }
    pthread_t go;
    if (pthread_create(&go, NULL, set_go_later, NULL) != 0)
        atomic_store(&child_go, 1);
    else
        pthread_detach(go);
    p_val = UNTOUCHED;
    p_rc = sf_wait(c, &p_val);
    const char *m = sf_error_message(c);
    snprintf(p_msg, sizeof p_msg, "%s", m != NULL ? m : "(null)");
    if (where != 2) /* the foreign thread's get may still be returning */
        sf_release(c);
    return (void *)77L;
}

START_TEST(failed_child_inline_worker_or_foreign)
{
    long where = _i;
    start(where == 1 ? 2 : 1);
    sf_on_unhandled(counting_hook, &hook_token);
    pthread_t ft;
    if (where == 2)
        ck_assert_int_eq(pthread_create(&ft, NULL, foreign_gets_child, NULL), 0);
    sf_future *p = sf_do(parent_of_late_child, (void *)where);
    void *r = UNTOUCHED;
    ck_assert_int_eq(sf_wait(p, &r), 0);
    ck_assert_ptr_eq(r, (void *)77L);
    ck_assert_msg(parent_setup_ok, "setup: the child never started where it should");
    if (where == 0)
        ck_assert_msg(pthread_equal(child_thread, parent_thread), "the child did not run inline");
    else
        ck_assert_msg(!pthread_equal(child_thread, parent_thread),
                      "setup: the child ran in the parent's thread");
    ck_assert_int_eq(p_rc, EIO);
    ck_assert_ptr_eq(p_val, UNTOUCHED);
    ck_assert_str_eq(p_msg, "late failure on purpose");
    if (where == 2) {
        void *fv = NULL;
        ck_assert_int_eq(pthread_join(ft, &fv), 0);
        ck_assert_ptr_eq(fv, (void *)1L);
        ck_assert(pthread_equal(child_thread, ft));
        sf_release(child_f);
    }
    sf_release(p);
    sf_shutdown();
    assert_hook_calls(0);
}
END_TEST

/*
 * The failure belongs to the task that called sf_fail, also when that task
 * runs nested in another one's get (helping): P, run by main's get, makes a
 * gate and b; a foreign thread's get runs the gate, and P's get of the gate
 * waits and helps by running b, a task of P's region, which fails. P is not
 * failed: it returns its value, and can still fail itself.
 */
static atomic_int b_done, gate_published;
static int p_own_rc, p_setup_ok;

static void *gate_until_b(void *arg)
{
    atomic_store(&child_started, 1);
    return tu_wait_flag(&b_done, WAIT_MS) ? arg : (void *)-1L;
}

static void *b_fails(void *arg)
{
    (void)arg;
    fail_thread = pthread_self();
    fail_rc = sf_fail(EIO, "b");
    atomic_store(&b_done, 1);
    return (void *)42L;
}

static sf_future *gate_f, *b_f;

static void *foreign_gets_gate(void *arg)
{
    (void)arg;
    if (!tu_wait_flag(&gate_published, WAIT_MS))
        return (void *)-2L;
    return sf_get(gate_f);
}

static void *p_gets_gate(void *arg)
{
    parent_thread = pthread_self();
    gate_f = sf_do(gate_until_b, (void *)11L);
    b_f = sf_do(b_fails, NULL);
    if (gate_f == NULL || b_f == NULL)
        return (void *)-1L;
    atomic_store(&gate_published, 1);
    p_setup_ok = tu_wait_flag(&child_started, WAIT_MS);
    p_val = UNTOUCHED;
    p_rc = sf_wait(gate_f, &p_val);
    if ((long)arg == 1) {
        errno = 0;
        p_own_rc = sf_fail(EPIPE, "p");
    }
    return (void *)77L;
}

START_TEST(helped_task_fails_alone)
{
    start(1);
    long p_fails_too = _i;
    pthread_t ft;
    ck_assert_int_eq(pthread_create(&ft, NULL, foreign_gets_gate, NULL), 0);
    sf_future *p = sf_do(p_gets_gate, (void *)p_fails_too);
    ck_assert_ptr_nonnull(p);
    void *r = UNTOUCHED;
    int rc = sf_wait(p, &r);
    void *fv = NULL;
    ck_assert_int_eq(pthread_join(ft, &fv), 0);
    ck_assert_ptr_nonnull(gate_f);
    ck_assert_ptr_nonnull(b_f);
    ck_assert_msg(p_setup_ok, "setup: the foreign get never ran the gate");
    ck_assert_ptr_eq(fv, (void *)11L);
    ck_assert_int_eq(p_rc, 0);
    ck_assert_ptr_eq(p_val, (void *)11L);
    ck_assert(pthread_equal(parent_thread, pthread_self()));
    ck_assert_msg(pthread_equal(fail_thread, pthread_self()),
                  "setup: b did not run nested in P's get");
    ck_assert_int_eq(fail_rc, 0);
    if (p_fails_too) {
        ck_assert_int_eq(p_own_rc, 0); /* not EALREADY: b's failure was b's */
        ck_assert_int_eq(rc, EPIPE);
        ck_assert_ptr_eq(r, UNTOUCHED);
        ck_assert_str_eq(sf_error_message(p), "p");
    } else {
        ck_assert_int_eq(rc, 0);
        ck_assert_ptr_eq(r, (void *)77L);
        ck_assert_ptr_null(sf_error_message(p));
    }
    ck_assert_int_eq(sf_wait(b_f, &r), EIO);
    ck_assert_str_eq(sf_error_message(b_f), "b");
    ck_assert_int_eq(sf_wait(gate_f, &r), 0);
    ck_assert_ptr_null(sf_error_message(gate_f));
    sf_release(p);
    sf_release(b_f);
    sf_release(gate_f);
    sf_shutdown();
}
END_TEST

/* ---- the message ---- */

/* At most 1023 bytes are kept: a longer message is cut to its first 1023. */
static const size_t msg_lengths[] = {0, 1, 1022, 1023, 1024, 1025, 5000};
static char long_msg[6000];

static void *fail_long(void *arg)
{
    size_t len = (size_t)arg;
    char *m = malloc(len + 1);
    if (m == NULL)
        return (void *)-1L;
    memcpy(m, long_msg, len);
    m[len] = '\0';
    fail_rc = sf_fail(EMSGSIZE, "%s", m);
    free(m);
    return NULL;
}

START_TEST(message_kept_up_to_1023_bytes)
{
    start(1);
    for (size_t k = 0; k < sizeof long_msg; k++)
        long_msg[k] = (char)('a' + k % 26) ^ (char)(k / 26 % 2 ? 0x20 : 0);
    size_t len = msg_lengths[_i];
    sf_future *f = sf_do(fail_long, (void *)len);
    ck_assert_int_eq(sf_wait(f, NULL), EMSGSIZE);
    ck_assert_int_eq(fail_rc, 0);
    const char *m = sf_error_message(f);
    ck_assert_ptr_nonnull(m); /* fmt was not NULL: a message, maybe empty */
    size_t want = len < 1023 ? len : 1023;
    ck_assert_uint_eq(strlen(m), want);
    ck_assert_msg(memcmp(m, long_msg, want) == 0, "the message kept is not the first %zu bytes",
                  want);
    sf_release(f);
    sf_shutdown();
}
END_TEST

/* ---- the unhandled-failure hook ---- */

static atomic_int fails_done;

/* Released unseen: the hook runs once, in the releasing thread, with the
 * code, message and ctx; not at release (not yet), not again at shutdown. */
START_TEST(unhandled_when_released_unseen)
{
    start(1 + _i);
    sf_on_unhandled(counting_hook, &hook_token);
    struct failing w = {EIO, "disk 3", NULL};
    sf_future *f = failed_unseen(&w, &fails_done);
    assert_hook_calls(0); /* failed, unseen, but still held */
    sf_release(f);
    assert_hook_calls(1);
    assert_last_hook(EIO, "disk 3");
    /* With no message, the hook gets NULL. */
    struct failing w2 = {ENODEV, NULL, NULL};
    f = failed_unseen(&w2, &fails_done);
    sf_release(f);
    assert_hook_calls(2);
    assert_last_hook(ENODEV, NULL);
    assert_works();
    sf_shutdown();
    assert_hook_calls(2);
}
END_TEST

/* "Since it failed": an sf_error_message() before the task ran does not
 * count, and neither does sf_is_done(). The root that makes the task calls
 * both before it runs (run_unseen's fresh); SF_THREADS=1: no worker can run
 * the task before those calls. */
START_TEST(unhandled_seen_only_before_it_failed)
{
    start(1);
    sf_on_unhandled(counting_hook, &hook_token);
    struct failing w = {EIO, "disk 3", NULL};
    sf_future *f = NULL;
    run_unseen(&w, &f, 1, &fails_done, 1, 1);
    ck_assert_int_eq(sf_is_done(f), 1);
    assert_hook_calls(0);
    sf_release(f);
    assert_hook_calls(1);
    assert_last_hook(EIO, "disk 3");
    sf_shutdown();
    assert_hook_calls(1);
}
END_TEST

/* Seen by sf_get, sf_wait or sf_error_message (after the task ran
 * elsewhere), then released: no report, neither then nor at shutdown.
 * _i: bit 0 threads (1, 2), _i / 2 which call sees it. */
START_TEST(seen_then_released_not_reported)
{
    start(1 + (_i & 1));
    sf_on_unhandled(counting_hook, &hook_token);
    struct failing w = {EIO, "disk 3", NULL};
    sf_future *f = failed_unseen(&w, &fails_done);
    switch (_i / 2) {
    case 0:
        errno = 0;
        ck_assert_ptr_null(sf_get(f));
        ck_assert_int_eq(errno, EIO);
        break;
    case 1:
        ck_assert_int_eq(sf_wait(f, NULL), EIO);
        break;
    default:
        ck_assert_str_eq(sf_error_message(f), "disk 3");
        break;
    }
    sf_release(f);
    assert_hook_calls(0);
    sf_shutdown();
    assert_hook_calls(0);
}
END_TEST

/*
 * Never released: at sf_shutdown() the failures still unseen are reported,
 * in the thread calling it, and the seen ones are not: one that failed
 * unseen, one still pending at shutdown (shutdown runs it, it fails), one
 * seen by sf_wait, one seen by sf_error_message.
 */
#define SHUT_MSGS 2
static pthread_mutex_t shut_lock = PTHREAD_MUTEX_INITIALIZER;
static char shut_msg[SHUT_MSGS + 4][64];
static int shut_code[SHUT_MSGS + 4];
static atomic_int shut_calls;
static int shut_wrong;

static void shutdown_hook(int code, const char *message, void *ctx)
{
    pthread_mutex_lock(&shut_lock);
    int k = atomic_fetch_add(&shut_calls, 1);
    if (k < SHUT_MSGS + 4) {
        shut_code[k] = code;
        snprintf(shut_msg[k], sizeof shut_msg[k], "%s", message != NULL ? message : "(null)");
    }
    if (ctx != &hook_token || !pthread_equal(pthread_self(), hook_thread))
        shut_wrong++;
    pthread_mutex_unlock(&shut_lock);
}

static int shut_reported(int code, const char *message)
{
    int n = 0;
    for (int k = 0; k < atomic_load(&shut_calls) && k < SHUT_MSGS + 4; k++)
        if (shut_code[k] == code && strcmp(shut_msg[k], message) == 0)
            n++;
    return n;
}

START_TEST(unhandled_at_shutdown)
{
    start(1 + _i);
    hook_thread = pthread_self();
    sf_on_unhandled(shutdown_hook, &hook_token);
    struct failing ran = {EIO, "ran, unseen", NULL};
    struct failing seen_wait = {ENOSPC, "seen by sf_wait", NULL};
    struct failing seen_msg = {EROFS, "seen by sf_error_message", NULL};
    struct failing pending = {ENXIO, "pending at shutdown", NULL};
    sf_future *f1 = failed_unseen(&ran, &fails_done);
    sf_future *f2 = failed_unseen(&seen_wait, &fails_done);
    sf_future *f3 = failed_unseen(&seen_msg, &fails_done);
    ck_assert_int_eq(sf_wait(f2, NULL), ENOSPC);
    ck_assert_str_eq(sf_error_message(f3), "seen by sf_error_message");
    sf_future *f4 = sf_do(fail_as_told, &pending);
    ck_assert_ptr_nonnull(f4);
    ck_assert_int_eq(atomic_load(&shut_calls), 0);
    (void)f1;
    sf_shutdown(); /* f1..f4 never released: the handles die here */
    ck_assert_int_eq(atomic_load(&shut_calls), SHUT_MSGS);
    ck_assert_int_eq(shut_reported(EIO, "ran, unseen"), 1);
    ck_assert_int_eq(shut_reported(ENXIO, "pending at shutdown"), 1);
    ck_assert_int_eq(shut_wrong, 0);
}
END_TEST

/* The default hook: exactly one line on stderr, "libsf: unhandled failure
 * of task <fn> (<code name>, <code>): <message>"; here the code is EIO. */
static void assert_default_line(const char *out, const char *message)
{
    ck_assert_msg(tu_count_lines(out) == 1, "want one line on stderr, got:\n%s", out);
    ck_assert_msg(tu_count_prefixed(out, "libsf: unhandled failure of task ") == 1,
                  "want a line starting \"libsf: unhandled failure of task \", got:\n%s", out);
    char tail[256];
    snprintf(tail, sizeof tail, ", %d): %s\n", EIO, message);
    size_t len = strlen(out), tlen = strlen(tail);
    ck_assert_msg(len > tlen && strcmp(out + len - tlen, tail) == 0,
                  "the line does not end with \"%.*s\": %s", (int)tlen - 1, tail, out);
}

START_TEST(default_hook_prints_one_line)
{
    start(1 + _i);
    struct failing w = {EIO, "disk 3", NULL};
    sf_future *f = failed_unseen(&w, &fails_done);
    struct tu_capture cap;
    tu_capture_begin(&cap);
    sf_release(f);
    assert_works();
    sf_shutdown();
    char *out = tu_capture_end(&cap);
    assert_default_line(out, "disk 3");
    free(out);
}
END_TEST

START_TEST(default_hook_at_shutdown)
{
    start(1 + _i);
    struct failing w = {EIO, "tape 4", NULL};
    sf_future *f = failed_unseen(&w, &fails_done);
    (void)f;
    struct tu_capture cap;
    tu_capture_begin(&cap);
    sf_shutdown();
    char *out = tu_capture_end(&cap);
    assert_default_line(out, "tape 4");
    free(out);
}
END_TEST

/* sf_on_unhandled(NULL, NULL) restores the default. */
START_TEST(null_hook_restores_default)
{
    start(1 + _i);
    sf_on_unhandled(counting_hook, &hook_token);
    sf_on_unhandled(NULL, NULL);
    struct failing w = {EIO, "disk 3", NULL};
    sf_future *f = failed_unseen(&w, &fails_done);
    struct tu_capture cap;
    tu_capture_begin(&cap);
    sf_release(f);
    sf_shutdown();
    char *out = tu_capture_end(&cap);
    assert_default_line(out, "disk 3");
    free(out);
    assert_hook_calls(0);
}
END_TEST

/* The hook holds for the life of the process: set before the runtime
 * starts, it survives sf_shutdown() and the next start. */
START_TEST(hook_holds_for_the_process)
{
    tu_env_threads(1 + _i);
    sf_on_unhandled(counting_hook, &hook_token);
    ck_assert_int_eq(sf_init(NULL), 0);
    struct failing w = {EIO, "first runtime", NULL};
    sf_release(failed_unseen(&w, &fails_done));
    assert_hook_calls(1);
    assert_last_hook(EIO, "first runtime");
    sf_shutdown();
    ck_assert_int_eq(sf_init(NULL), 0);
    struct failing w2 = {EBADMSG, "second runtime", NULL};
    struct tu_capture cap;
    tu_capture_begin(&cap);
    sf_release(failed_unseen(&w2, &fails_done));
    char *out = tu_capture_end(&cap);
    ck_assert_msg(out[0] == '\0', "the default hook printed: %s", out);
    free(out);
    assert_hook_calls(2);
    assert_last_hook(EBADMSG, "second runtime");
    sf_shutdown();
    assert_hook_calls(2);
}
END_TEST

/* ---- hooks that call back ---- */

/*
 * A hook that calls sf_shutdown() runs inside a libsf call (the release that
 * reports, or the shutdown's own report), whose memory a shutdown would
 * free: both sf_shutdown and sf_shutdown_timeout are refused with one line
 * each, the hook runs once for its failure, and the runtime goes on. _i: bit
 * 0 the thread count (1, 2), bit 1 reported by sf_release (0) or at
 * sf_shutdown (1).
 */
static atomic_int hook_timeout_rc;

static void hook_calls_shutdown(int code, const char *message, void *ctx)
{
    counting_hook(code, message, ctx);
    sf_shutdown();
    errno = 0;
    long rc = sf_shutdown_timeout(0);
    atomic_store(&hook_timeout_rc, rc == -1 && errno == EDEADLK ? 1 : -1);
}

START_TEST(hook_calling_shutdown_is_refused)
{
    start(1 + (_i & 1));
    sf_on_unhandled(hook_calls_shutdown, &hook_token);
    atomic_store(&hook_timeout_rc, 0);
    struct failing w = {EIO, "disk 3", NULL};
    sf_future *f = failed_unseen(&w, &fails_done);
    struct tu_capture cap;
    tu_capture_begin(&cap);
    if (_i & 2)
        sf_shutdown(); /* f is never released: reported here */
    else
        sf_release(f);
    char *out = tu_capture_end(&cap);
    ck_assert_str_eq(out, "libsf: sf_shutdown() called from an unhandled-failure hook; ignored\n"
                          "libsf: sf_shutdown_timeout() called from an unhandled-failure hook; "
                          "ignored\n");
    free(out);
    assert_hook_calls(1);
    assert_last_hook(EIO, "disk 3");
    ck_assert_int_eq(atomic_load(&hook_timeout_rc), 1);
    if (!(_i & 2)) {
        assert_works();
        sf_shutdown();
        assert_hook_calls(1);
    }
}
END_TEST

/*
 * A hook that gets work done with libsf, on a pool worker: a failed task
 * released while it ran there is reported by the worker, outside any task
 * of its own, and the hook's sf_do/sf_get work as anywhere (the debug build
 * checks the fast path's invariant there).
 */
static atomic_int callback_result, callback_done, orphan_started, orphan_go;
static pthread_t callback_thread;

static void hook_gets(int code, const char *message, void *ctx)
{
    counting_hook(code, message, ctx);
    callback_thread = pthread_self();
    sf_future *g = sf_do(tu_fib, (void *)10L);
    long v = g != NULL ? (long)sf_get(g) : -1;
    sf_release(g);
    atomic_store(&callback_result, (int)v);
    atomic_store(&callback_done, 1);
}

static void *fail_when_told(void *arg)
{
    atomic_store(&orphan_started, 1);
    tu_wait_flag(&orphan_go, WAIT_MS);
    sf_fail(EIO, "released while it ran");
    return arg;
}

START_TEST(hook_on_a_worker_calls_back)
{
    start(2);
    sf_on_unhandled(hook_gets, &hook_token);
    sf_future *f = sf_do(fail_when_told, NULL);
    ck_assert_ptr_nonnull(f);
    /* The get submits both; the idle worker takes the oldest, f, and this
     * thread runs g itself. */
    sf_future *g = sf_do(tu_fib, (void *)5L);
    ck_assert_ptr_eq(sf_get(g), (void *)5L);
    sf_release(g);
    ck_assert_msg(tu_wait_flag(&orphan_started, WAIT_MS), "the worker did not take the task");
    sf_release(f); /* running: the worker frees it, and reports its failure */
    atomic_store(&orphan_go, 1);
    ck_assert_msg(tu_wait_flag(&callback_done, WAIT_MS), "the hook did not run");
    ck_assert_int_eq(atomic_load(&callback_result), 55);
    assert_hook_calls(1);
    ck_assert_int_eq(hook_code, EIO);
    ck_assert_str_eq(hook_msg, "released while it ran");
    ck_assert(!pthread_equal(callback_thread, pthread_self()));
    assert_works();
    sf_shutdown();
    assert_hook_calls(1);
}
END_TEST

/*
 * Many failures from many threads: 4 pthreads have 1000 failing tasks made
 * each. 750, made by a root task of the pthread's (run_unseen), run unseen,
 * and then 250 of them are seen by
 * sf_error_message and 500 released unseen; the other 250 are seen by the
 * get that runs them (sf_wait or sf_get). The hook, called from the 4
 * releasing threads at once, counts exactly the 2000 unseen ones, each once,
 * with its own code and message.
 */
#define NP 4
#define NT 1000
#define NBATCH 750
static atomic_int reported[NP][NT];
static atomic_int many_wrong;

static void many_hook(int code, const char *message, void *ctx)
{
    int p = -1, j = -1;
    if (ctx != &hook_token || message == NULL || sscanf(message, "p%d t%d", &p, &j) != 2 || p < 0 ||
        p >= NP || j < 0 || j >= NT || code != 1000 + j) {
        atomic_fetch_add(&many_wrong, 1);
        return;
    }
    atomic_fetch_add(&reported[p][j], 1);
    atomic_fetch_add(&hook_calls, 1);
}

struct many_job {
    int p;
    struct failing w[NT];
    char msg[NT][16];
    sf_future *f[NT];
    atomic_int done;
    int errors;
};

static void *many_thread(void *arg)
{
    struct many_job *m = arg;
    for (int j = 0; j < NT; j++) {
        snprintf(m->msg[j], sizeof m->msg[j], "p%d t%d", m->p, j);
        m->w[j] = (struct failing){1000 + j, m->msg[j], &m->done};
    }
    run_unseen(m->w, m->f, NBATCH, &m->done, NBATCH, 0);
    for (int j = 0; j < NBATCH; j++) {
        if (j % 3 == 0) {
            const char *msg = sf_error_message(m->f[j]);
            if (msg == NULL || strcmp(msg, m->msg[j]) != 0)
                m->errors++;
        }
        sf_release(m->f[j]);
    }
    for (int j = NBATCH; j < NT; j++) {
        if ((m->f[j] = sf_do(fail_as_told, &m->w[j])) == NULL)
            return (void *)-1L;
        if (j % 2) {
            void *r = UNTOUCHED;
            if (sf_wait(m->f[j], &r) != 1000 + j || r != UNTOUCHED)
                m->errors++;
        } else {
            errno = 0;
            if (sf_get(m->f[j]) != NULL || errno != 1000 + j)
                m->errors++;
        }
        sf_release(m->f[j]);
    }
    return NULL;
}

START_TEST(many_failures_many_threads)
{
    start(1 + _i);
    sf_on_unhandled(many_hook, &hook_token);
    static struct many_job jobs[NP];
    pthread_t t[NP];
    for (int p = 0; p < NP; p++) {
        jobs[p].p = p;
        ck_assert_int_eq(pthread_create(&t[p], NULL, many_thread, &jobs[p]), 0);
    }
    for (int p = 0; p < NP; p++) {
        void *rv = UNTOUCHED;
        ck_assert_int_eq(pthread_join(t[p], &rv), 0);
        ck_assert_ptr_null(rv);
        ck_assert_int_eq(jobs[p].errors, 0);
    }
    sf_shutdown();
    ck_assert_int_eq(atomic_load(&many_wrong), 0);
    int unseen = 0;
    for (int p = 0; p < NP; p++)
        for (int j = 0; j < NT; j++) {
            int want = j < NBATCH && j % 3 != 0;
            unseen += want;
            if (atomic_load(&reported[p][j]) != want)
                ck_abort_msg("thread %d task %d: reported %d times, want %d", p, j,
                             atomic_load(&reported[p][j]), want);
        }
    ck_assert_int_eq(unseen, NP * 500);
    assert_hook_calls(NP * 500);
}
END_TEST

static Suite *failures_suite(void)
{
    Suite *s = suite_create("failures");
    TCase *tc = tcase_create("fail");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, fail_seen_by_every_get, 0, 4);
    tcase_add_loop_test(tc, fail_without_message, 0, 2);
    tcase_add_loop_test(tc, first_failure_stands, 0, 2);
    tcase_add_loop_test(tc, fail_bad_code_in_task, 0, 2);
    tcase_add_loop_test(tc, fail_outside_a_task, 0, 2);
    tcase_add_loop_test(tc, message_kept_up_to_1023_bytes, 0,
                        (int)(sizeof msg_lengths / sizeof msg_lengths[0]));
    suite_add_tcase(s, tc);

    TCase *par = tcase_create("parents");
    tcase_set_timeout(par, 60);
    tcase_add_loop_test(par, parent_recovers_from_failed_child, 0, 4);
    tcase_add_loop_test(par, parent_fails_in_turn, 0, 4);
    tcase_add_loop_test(par, failed_child_inline_worker_or_foreign, 0, 3);
    tcase_add_loop_test(par, helped_task_fails_alone, 0, 2);
    suite_add_tcase(s, par);

    TCase *un = tcase_create("unhandled");
    tcase_set_timeout(un, 60);
    tcase_add_loop_test(un, unhandled_when_released_unseen, 0, 2);
    tcase_add_test(un, unhandled_seen_only_before_it_failed);
    tcase_add_loop_test(un, seen_then_released_not_reported, 0, 6);
    tcase_add_loop_test(un, unhandled_at_shutdown, 0, 2);
    tcase_add_loop_test(un, default_hook_prints_one_line, 0, 2);
    tcase_add_loop_test(un, default_hook_at_shutdown, 0, 2);
    tcase_add_loop_test(un, null_hook_restores_default, 0, 2);
    tcase_add_loop_test(un, hook_holds_for_the_process, 0, 2);
    tcase_add_loop_test(un, many_failures_many_threads, 0, 2);
    tcase_add_loop_test(un, hook_calling_shutdown_is_refused, 0, 4);
    tcase_add_test(un, hook_on_a_worker_calls_back);
    suite_add_tcase(s, un);
    return s;
}

TU_MAIN(failures_suite)
