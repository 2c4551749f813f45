/*
 * test_visibility.c - the happens-before edges of docs/waiting.md ("What a
 * wait makes visible"), each carrying plain data between threads:
 *   - the maker's writes before sf_do() and sf_batch_do() are visible in
 *     the task;
 *   - a task's writes before it returns are visible after each wait that
 *     says it is done: sf_get, sf_get_isolated, sf_wait, sf_wait_for (with
 *     and without a deadline), sf_wait_any (one future, and a set),
 *     sf_wait_all, sf_is_done returning 1;
 *   - a setter's writes before sf_promise_set() or sf_promise_fail() are
 *     visible after the same waits, in plain code and in tasks;
 *   - a continuation (sf_do_after) sees what its maker wrote before the
 *     call and what each dep - a task, a promise's setter - wrote before it
 *     completed.
 * The data is plain (non-atomic) ints, written by one thread and read by
 * others with no synchronisation of the test's own in between, so
 * ThreadSanitizer reports a race if an edge is missing; every build checks
 * the exact values. Each case runs at SF_THREADS 1, 2 and 4, with several
 * threads making, running, setting and waiting at once.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

enum { WORDS = 8, ROUNDS = 4, K = 24, OBSERVERS = 3, MAKERS = 3 };

static const int threads_of[] = {1, 2, 4};

/* Plain data: each word follows from its seed. */
struct payload {
    int w[WORDS];
};

static void fill(struct payload *p, int seed)
{
    for (int i = 0; i < WORDS; i++)
        p->w[i] = seed * WORDS + i;
}

static atomic_int bad; /* payloads read with a wrong value */

static void check(const struct payload *p, int seed)
{
    for (int i = 0; i < WORDS; i++)
        if (p->w[i] != seed * WORDS + i) {
            atomic_fetch_add(&bad, 1);
            return;
        }
}

/* ------------------------------------------------------------------------
 * The maker's writes, in the task: sf_do and sf_batch_do, from plain
 * threads and from tasks.
 */

struct job {
    struct payload in;  /* written by the maker before sf_do */
    struct payload out; /* written by the task before it returns */
    int seed;
    int depth;          /* > 0: the task makes a child the same way */
    struct job *child;
};

static void *job_task(void *arg)
{
    struct job *j = arg;
    check(&j->in, j->seed);
    if (j->depth > 0) {
        /* A task as the maker: its writes before sf_do, in its child. */
        fill(&j->child->in, j->seed + 1);
        j->child->seed = j->seed + 1;
        j->child->depth = j->depth - 1;
        sf_future *f = sf_do(job_task, j->child);
        if (f == NULL || sf_get(f) != j->child)
            atomic_fetch_add(&bad, 1);
        check(&j->child->out, j->seed + 2);
        sf_release(f);
    }
    fill(&j->out, j->seed + 1);
    return j;
}

struct maker {
    int id;
    bool batch;
    pthread_t t;
};

static void *maker_main(void *arg)
{
    struct maker *m = arg;
    struct job *jobs = calloc(2 * K, sizeof *jobs);
    sf_future *fs[K];
    sf_batch *b = m->batch ? sf_batch_new() : NULL;
    if (jobs == NULL || (m->batch && b == NULL)) {
        atomic_fetch_add(&bad, 1000);
        return NULL;
    }
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < K; k++) {
            struct job *j = &jobs[k];
            j->seed = (m->id * ROUNDS + r) * 4 * K + 4 * k;
            fill(&j->in, j->seed);
            j->depth = k % 3 == 0;
            j->child = &jobs[K + k];
            fs[k] = m->batch ? sf_batch_do(b, job_task, j) : sf_do(job_task, j);
            if (fs[k] == NULL)
                atomic_fetch_add(&bad, 1000);
        }
        /* Oldest first: while this thread runs one, idle workers take the
         * newer ones. */
        for (int k = 0; k < K; k++) {
            if (fs[k] == NULL)
                continue;
            if (sf_get(fs[k]) != &jobs[k])
                atomic_fetch_add(&bad, 1);
            check(&jobs[k].out, jobs[k].seed + 1);
            sf_release(fs[k]);
        }
    }
    if (b != NULL)
        sf_batch_close(b);
    free(jobs);
    return NULL;
}

static void makers(int threads, bool batch)
{
    tu_env_threads(threads);
    atomic_store(&bad, 0);
    struct maker m[MAKERS];
    for (int i = 0; i < MAKERS; i++) {
        m[i] = (struct maker){.id = i, .batch = batch};
        ck_assert_int_eq(pthread_create(&m[i].t, NULL, maker_main, &m[i]), 0);
    }
    for (int i = 0; i < MAKERS; i++)
        ck_assert_int_eq(pthread_join(m[i].t, NULL), 0);
    ck_assert_int_eq(atomic_load(&bad), 0);
    sf_shutdown();
}

START_TEST(maker_to_task_sf_do) { makers(threads_of[_i], false); }
END_TEST

START_TEST(maker_to_task_sf_batch_do) { makers(threads_of[_i], true); }
END_TEST

/* ------------------------------------------------------------------------
 * What the task or the setter wrote, after each wait that says done.
 */

enum how {
    H_GET, H_GET_ISOLATED, H_WAIT, H_WAIT_FOR_INF, H_WAIT_FOR_0, H_WAIT_ANY_INF, H_WAIT_ANY_0,
    H_WAIT_ALL_INF, H_WAIT_ALL_0, H_IS_DONE, H_COUNT
};

/* The futures of a round and what each one's completer wrote. */
struct round {
    sf_future *fs[K];
    struct payload data[K];
    int seed[K];
    int code[K];        /* a failed promise's code, else 0 */
    atomic_int start;   /* the observers may look */
};

static void polite(void) { sched_yield(); }

/* One future's outcome, checked once a wait said it is done: its data,
 * and the value or code it ended with. */
static void check_done(struct round *rd, int k)
{
    check(&rd->data[k], rd->seed[k]);
    void *v = NULL;
    int rc = sf_wait_for(rd->fs[k], &v, 0);
    if (rc != rd->code[k] || (rc == 0 && v != &rd->data[k]))
        atomic_fetch_add(&bad, 1);
}

struct observer {
    struct round *rd;
    enum how how;
    int first;          /* where it starts in fs */
    pthread_t t;
};

static void observe_one(struct round *rd, int k, enum how how)
{
    sf_future *f = rd->fs[k];
    void *v = NULL;
    int which = -1;
    switch (how) {
    case H_GET:
        errno = 0;
        v = sf_get(f);
        if (v == NULL && errno != rd->code[k])
            atomic_fetch_add(&bad, 1);
        break;
    case H_GET_ISOLATED:
        errno = 0;
        v = sf_get_isolated(f);
        if (v == NULL && errno != rd->code[k])
            atomic_fetch_add(&bad, 1);
        break;
    case H_WAIT:
        (void)sf_wait(f, &v);
        break;
    case H_WAIT_FOR_INF:
        (void)sf_wait_for(f, &v, INFINITY);
        break;
    case H_WAIT_FOR_0:
        while (sf_wait_for(f, &v, 0) == ETIMEDOUT)
            polite();
        break;
    case H_WAIT_ANY_INF:
        if (sf_wait_any(&f, 1, INFINITY, &which) != 0)
            atomic_fetch_add(&bad, 1);
        break;
    case H_WAIT_ANY_0:
        while (sf_wait_any(&f, 1, 0, &which) == ETIMEDOUT)
            polite();
        break;
    case H_IS_DONE:
        while (sf_is_done(f) == 0)
            polite();
        break;
    default:
        break;
    }
    check_done(rd, k);
}

static void *observer_main(void *arg)
{
    struct observer *o = arg;
    struct round *rd = o->rd;
    while (atomic_load(&rd->start) == 0)
        polite();
    if (o->how == H_WAIT_ALL_INF || o->how == H_WAIT_ALL_0) {
        double s = o->how == H_WAIT_ALL_INF ? INFINITY : 0;
        int rc;
        while ((rc = sf_wait_all(rd->fs, K, s)) == ETIMEDOUT)
            polite();
        if (rc != 0)
            atomic_fetch_add(&bad, 1);
        for (int k = 0; k < K; k++)
            check_done(rd, k);
        return NULL;
    }
    if (o->how == H_WAIT_ANY_INF || o->how == H_WAIT_ANY_0) {
        /* Also the wait on a set: each future, as sf_wait_any names it. */
        sf_future *left[K];
        int idx[K], n = K;
        for (int k = 0; k < K; k++) {
            left[k] = rd->fs[(o->first + k) % K];
            idx[k] = (o->first + k) % K;
        }
        while (n > 0) {
            int which = -1;
            int rc = sf_wait_any(left, n, o->how == H_WAIT_ANY_INF ? INFINITY : 0, &which);
            if (rc == ETIMEDOUT) {
                polite();
                continue;
            }
            if (rc != 0 || which < 0 || which >= n) {
                atomic_fetch_add(&bad, 1);
                return NULL;
            }
            check_done(rd, idx[which]);
            left[which] = left[n - 1];
            idx[which] = idx[n - 1];
            n--;
        }
    }
    for (int k = 0; k < K; k++)
        observe_one(rd, (o->first + k) % K, o->how);
    return NULL;
}

/* Starts the observers of rd, which wait the way `how` says. */
static void observers_start(struct observer *o, struct round *rd, enum how how)
{
    for (int i = 0; i < OBSERVERS; i++) {
        o[i] = (struct observer){.rd = rd, .how = how, .first = i * K / OBSERVERS};
        ck_assert_int_eq(pthread_create(&o[i].t, NULL, observer_main, &o[i]), 0);
    }
}

static void observers_join(struct observer *o)
{
    for (int i = 0; i < OBSERVERS; i++)
        ck_assert_int_eq(pthread_join(o[i].t, NULL), 0);
}

/* Tasks: each writes its data, then returns its address. */
struct wtask {
    struct round *rd;
    int k;
};

static void *write_task(void *arg)
{
    struct wtask *t = arg;
    fill(&t->rd->data[t->k], t->rd->seed[t->k]);
    return &t->rd->data[t->k];
}

/* Gets every future of rd in turn: at SF_THREADS=1 the timed waits run
 * nothing, so the tasks run here. */
static void *runner_main(void *arg)
{
    struct round *rd = arg;
    while (atomic_load(&rd->start) == 0)
        polite();
    for (int k = 0; k < K; k++)
        (void)sf_wait(rd->fs[k], NULL);
    return NULL;
}

static void task_then_waits(int threads, enum how how)
{
    tu_env_threads(threads);
    atomic_store(&bad, 0);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    for (int r = 0; r < ROUNDS; r++) {
        struct round *rd = calloc(1, sizeof *rd);
        struct wtask *ts = calloc(K, sizeof *ts);
        ck_assert_ptr_nonnull(rd);
        ck_assert_ptr_nonnull(ts);
        struct observer o[OBSERVERS];
        observers_start(o, rd, how);
        pthread_t runner;
        ck_assert_int_eq(pthread_create(&runner, NULL, runner_main, rd), 0);
        for (int k = 0; k < K; k++) {
            rd->seed[k] = r * K + k;
            ts[k] = (struct wtask){rd, k};
            /* Half queued here (the runner or a helping get claims them),
             * half in a batch (the pool starts them at once). */
            rd->fs[k] = k % 2 ? sf_do(write_task, &ts[k]) : sf_batch_do(b, write_task, &ts[k]);
            ck_assert_ptr_nonnull(rd->fs[k]);
        }
        atomic_store(&rd->start, 1);
        observers_join(o);
        ck_assert_int_eq(pthread_join(runner, NULL), 0);
        for (int k = 0; k < K; k++)
            sf_release(rd->fs[k]);
        free(ts);
        free(rd);
    }
    sf_batch_close(b);
    ck_assert_int_eq(atomic_load(&bad), 0);
    sf_shutdown();
}

START_TEST(task_to_waiters)
{
    for (int h = 0; h < H_COUNT; h++)
        task_then_waits(threads_of[_i], (enum how)h);
}
END_TEST

/* Setters: plain threads that never call libsf otherwise, each completing
 * every MAKERS-th promise of the round, a third of them failed. */
struct setter {
    struct round *rd;
    int first;
    pthread_t t;
};

static void *setter_main(void *arg)
{
    struct setter *s = arg;
    struct round *rd = s->rd;
    while (atomic_load(&rd->start) == 0)
        polite();
    for (int k = s->first; k < K; k += MAKERS) {
        fill(&rd->data[k], rd->seed[k]);
        int rc = rd->code[k] != 0 ? sf_promise_fail(rd->fs[k], rd->code[k], NULL)
                                  : sf_promise_set(rd->fs[k], &rd->data[k]);
        if (rc != 0)
            atomic_fetch_add(&bad, 1);
    }
    return NULL;
}

/* A task that gets a promise and reads what its setter wrote. */
static void *promise_reader(void *arg)
{
    struct wtask *t = arg;
    observe_one(t->rd, t->k, H_GET);
    return NULL;
}

static void setter_then_waits(int threads, enum how how)
{
    tu_env_threads(threads);
    atomic_store(&bad, 0);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    for (int r = 0; r < ROUNDS; r++) {
        struct round *rd = calloc(1, sizeof *rd);
        struct wtask *ts = calloc(K, sizeof *ts);
        ck_assert_ptr_nonnull(rd);
        ck_assert_ptr_nonnull(ts);
        for (int k = 0; k < K; k++) {
            rd->seed[k] = r * K + k;
            rd->code[k] = k % 3 == 1 ? EPIPE : 0;
            rd->fs[k] = sf_promise();
            ck_assert_ptr_nonnull(rd->fs[k]);
        }
        struct observer o[OBSERVERS];
        observers_start(o, rd, how);
        /* Readers in tasks too, on the pool (at SF_THREADS=1: on the
         * thread that gets them, below). */
        sf_future *readers[K];
        for (int k = 0; k < K; k++) {
            ts[k] = (struct wtask){rd, k};
            readers[k] = sf_batch_do(b, promise_reader, &ts[k]);
            ck_assert_ptr_nonnull(readers[k]);
        }
        struct setter s[MAKERS];
        for (int i = 0; i < MAKERS; i++) {
            s[i] = (struct setter){.rd = rd, .first = i};
            ck_assert_int_eq(pthread_create(&s[i].t, NULL, setter_main, &s[i]), 0);
        }
        atomic_store(&rd->start, 1);
        for (int k = 0; k < K; k++) {
            ck_assert_int_eq(sf_wait(readers[k], NULL), 0);
            sf_release(readers[k]);
        }
        observers_join(o);
        for (int i = 0; i < MAKERS; i++)
            ck_assert_int_eq(pthread_join(s[i].t, NULL), 0);
        for (int k = 0; k < K; k++)
            sf_release(rd->fs[k]);
        free(ts);
        free(rd);
    }
    sf_batch_close(b);
    ck_assert_int_eq(atomic_load(&bad), 0);
    sf_shutdown();
}

START_TEST(setter_to_waiters)
{
    for (int h = 0; h < H_COUNT; h++)
        setter_then_waits(threads_of[_i], (enum how)h);
}
END_TEST

/* ------------------------------------------------------------------------
 * Continuations: the maker's writes and every dep's, in fn.
 */

enum { DEPS = 4, CONTS = 8 };

struct cont {
    struct payload in;  /* the maker's, before sf_do_after */
    struct payload out; /* the continuation's, before it returns */
    int seed;
    struct round *rd;   /* its deps: rd->fs[first .. DEPS) and their data */
    int first;
};

static void *cont_task(void *arg)
{
    struct cont *c = arg;
    check(&c->in, c->seed);
    for (int k = c->first; k < DEPS; k++)
        check(&c->rd->data[k], c->rd->seed[k]);
    fill(&c->out, c->seed + 1);
    return c;
}

struct cmaker {
    struct round *rd;
    int id, round;
    pthread_t t;
};

static void *cmaker_main(void *arg)
{
    struct cmaker *m = arg;
    struct cont cs[CONTS];
    sf_future *fs[CONTS];
    for (int i = 0; i < CONTS; i++) {
        cs[i].seed = 1000000 + ((m->round * MAKERS + m->id) * CONTS + i) * 2;
        cs[i].rd = m->rd;
        fill(&cs[i].in, cs[i].seed);
        /* Each on every dep, or on the last ones only. */
        cs[i].first = i % 2;
        fs[i] = sf_do_after(m->rd->fs + cs[i].first, DEPS - cs[i].first, cont_task, &cs[i]);
        if (fs[i] == NULL)
            atomic_fetch_add(&bad, 1000);
    }
    for (int i = 0; i < CONTS; i++) {
        if (fs[i] == NULL)
            continue;
        if (sf_get(fs[i]) != &cs[i])
            atomic_fetch_add(&bad, 1);
        check(&cs[i].out, cs[i].seed + 1);
        sf_release(fs[i]);
    }
    return NULL;
}

/* The promises among the deps (0 set, 1 failed), set by a plain thread. */
static void *csetter_main(void *arg)
{
    struct round *rd = arg;
    for (int k = 0; k < 2; k++) {
        fill(&rd->data[k], rd->seed[k]);
        int rc = k == 0 ? sf_promise_set(rd->fs[k], &rd->data[k])
                        : sf_promise_fail(rd->fs[k], EPIPE, NULL);
        if (rc != 0)
            atomic_fetch_add(&bad, 1);
    }
    return NULL;
}

START_TEST(deps_to_continuation)
{
    tu_env_threads(threads_of[_i]);
    atomic_store(&bad, 0);
    sf_batch *b = sf_batch_new();
    ck_assert_ptr_nonnull(b);
    for (int r = 0; r < ROUNDS; r++) {
        struct round *rd = calloc(1, sizeof *rd);
        struct wtask ts[DEPS];
        ck_assert_ptr_nonnull(rd);
        for (int k = 0; k < DEPS; k++) {
            rd->seed[k] = r * DEPS + k;
            ts[k] = (struct wtask){rd, k};
        }
        /* Deps: two promises, a batch task, a task queued here. */
        rd->fs[0] = sf_promise();
        rd->fs[1] = sf_promise();
        rd->fs[2] = sf_batch_do(b, write_task, &ts[2]);
        rd->fs[3] = sf_do(write_task, &ts[3]);
        for (int k = 0; k < DEPS; k++)
            ck_assert_ptr_nonnull(rd->fs[k]);
        struct cmaker m[MAKERS];
        for (int i = 0; i < MAKERS; i++) {
            m[i] = (struct cmaker){.rd = rd, .id = i, .round = r};
            ck_assert_int_eq(pthread_create(&m[i].t, NULL, cmaker_main, &m[i]), 0);
        }
        pthread_t setter;
        ck_assert_int_eq(pthread_create(&setter, NULL, csetter_main, rd), 0);
        for (int i = 0; i < MAKERS; i++)
            ck_assert_int_eq(pthread_join(m[i].t, NULL), 0);
        ck_assert_int_eq(pthread_join(setter, NULL), 0);
        for (int k = 0; k < DEPS; k++) {
            ck_assert_int_eq(sf_wait(rd->fs[k], NULL), k == 1 ? EPIPE : 0);
            sf_release(rd->fs[k]);
        }
        free(rd);
    }
    sf_batch_close(b);
    ck_assert_int_eq(atomic_load(&bad), 0);
    sf_shutdown();
}
END_TEST

static Suite *visibility_suite(void)
{
    Suite *s = suite_create("visibility");
    TCase *tc = tcase_create("visibility");
    tcase_set_timeout(tc, TU_SANITIZED ? 600 : 120);
    tcase_add_loop_test(tc, maker_to_task_sf_do, 0, 3);
    tcase_add_loop_test(tc, maker_to_task_sf_batch_do, 0, 3);
    tcase_add_loop_test(tc, task_to_waiters, 0, 3);
    tcase_add_loop_test(tc, setter_to_waiters, 0, 3);
    tcase_add_loop_test(tc, deps_to_continuation, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(visibility_suite)
