/*
 * test_mpi.c - libsf-mpi (sf_mpi.h) under mpiexec, at 2 and 4 ranks
 * (tests/test-mpi.sh runs it). Ranks pair up (0-1, 2-3): each test runs on
 * every rank in the same order, so the ranks stay in step. Check runs the
 * tests in this one process (CK_NOFORK: MPI is initialised once); rank 0
 * writes the TAP, to $SF_MPI_TAP, the others report their failures on
 * stderr and in their exit status. Every result is exact: values, counts,
 * error codes and messages, never speed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sf_mpi.h>

#include "testutil.h"

static int rank, size, partner;
/* The progress modes every mode-dependent test runs in. */
static const int modes[] = {SF_MPI_PROGRESS_HOOK, SF_MPI_PROGRESS_AUTO, SF_MPI_PROGRESS_THREAD};
#define NMODES ((int)(sizeof modes / sizeof modes[0]))
static const char *const mode_names[] = {"env", "auto", "hook", "thread"};

static void start(int mode)
{
    sf_mpi_config cfg = {.progress = mode};
    ck_assert_msg(sf_mpi_init(&cfg) == 0, "sf_mpi_init(%s): errno %d", mode_names[mode], errno);
}

static void stop(long want_cancelled)
{
    long n = sf_mpi_finalize(INFINITY);
    ck_assert_int_eq(n, want_cancelled);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* sf_get() of an MPI future that must succeed; releases it. */
static void *get_ok(sf_future *f)
{
    ck_assert_ptr_nonnull(f);
    errno = 0;
    void *v = sf_get(f);
    int e = errno;
    ck_assert_msg(e == 0, "get: errno %d (%s)", e, sf_error_message(f) ? sf_error_message(f) : "-");
    sf_release(f);
    return v;
}

/* ---- Ping-pong ------------------------------------------------------------ */

#define ROUNDS 300

/* One round trip of round i: the lower rank of the pair sends i*3+1, the
 * upper returns it plus 7. Returns what the lower rank got back (the upper:
 * what it got). */
static long round_trip(long i)
{
    long out, in = -1;
    MPI_Status st;
    if (rank < partner) {
        out = i * 3 + 1;
        sf_future *r = sf_mpi_irecv(&in, 1, MPI_LONG, partner, 7, MPI_COMM_WORLD, &st);
        sf_future *s = sf_mpi_isend(&out, 1, MPI_LONG, partner, 7, MPI_COMM_WORLD);
        ck_assert_ptr_null(get_ok(s));
        ck_assert_ptr_eq(get_ok(r), &st);
    } else {
        sf_future *r = sf_mpi_irecv(&in, 1, MPI_LONG, partner, 7, MPI_COMM_WORLD, &st);
        ck_assert_ptr_eq(get_ok(r), &st);
        out = in + 7;
        sf_future *s = sf_mpi_isend(&out, 1, MPI_LONG, partner, 7, MPI_COMM_WORLD);
        ck_assert_ptr_null(get_ok(s));
    }
    ck_assert_int_eq(st.MPI_SOURCE, partner);
    ck_assert_int_eq(st.MPI_TAG, 7);
    int count = -1;
    MPI_Get_count(&st, MPI_LONG, &count);
    ck_assert_int_eq(count, 1);
    return in;
}

static void check_round(long i, long got)
{
    if (rank < partner)
        ck_assert_int_eq(got, i * 3 + 1 + 7);
    else
        ck_assert_int_eq(got, i * 3 + 1);
}

START_TEST(pingpong_plain)
{
    for (int m = 0; m < NMODES; m++) {
        start(modes[m]);
        for (long i = 0; i < ROUNDS; i++)
            check_round(i, round_trip(i));
        stop(0);
    }
}
END_TEST

static void *round_task(void *arg)
{
    long i = (long)(intptr_t)arg;
    return (void *)(intptr_t)round_trip(i);
}

/* Each round trip a task (got at once: the next round's messages must
 * follow), and the whole loop inside one task too. */
static void *rounds_task(void *arg)
{
    (void)arg;
    for (long i = 0; i < ROUNDS; i++) {
        sf_future *f = sf_do(round_task, (void *)(intptr_t)i);
        check_round(i, (long)(intptr_t)get_ok(f));
    }
    return (void *)1;
}

START_TEST(pingpong_tasks)
{
    for (int m = 0; m < NMODES; m++) {
        start(modes[m]);
        sf_future *f = sf_do(rounds_task, NULL);
        ck_assert_ptr_eq(get_ok(f), (void *)1);
        stop(0);
    }
}
END_TEST

/* ---- 10,000 requests in flight -------------------------------------------- */

#define MANY 5000

START_TEST(many_in_flight)
{
    start(SF_MPI_PROGRESS_FROM_ENV);
    int *in = malloc(MANY * sizeof *in), *out = malloc(MANY * sizeof *out);
    sf_future **fs = malloc(2 * MANY * sizeof *fs);
    ck_assert(in != NULL && out != NULL && fs != NULL);
    for (int i = 0; i < MANY; i++) {
        in[i] = -1;
        out[i] = rank * 1000000 + i;
        fs[i] = sf_mpi_irecv(&in[i], 1, MPI_INT, partner, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ck_assert_ptr_nonnull(fs[i]);
    }
    for (int i = 0; i < MANY; i++) {
        /* Sent in the reverse order of the tags: each receive matches by tag. */
        int j = MANY - 1 - i;
        fs[MANY + i] = sf_mpi_isend(&out[j], 1, MPI_INT, partner, j, MPI_COMM_WORLD);
        ck_assert_ptr_nonnull(fs[MANY + i]);
    }
    for (int i = 0; i < 2 * MANY; i++)
        ck_assert_ptr_null(get_ok(fs[i]));
    for (int i = 0; i < MANY; i++)
        ck_assert_int_eq(in[i], partner * 1000000 + i);
    free(in);
    free(out);
    free(fs);
    stop(0);
}
END_TEST

/* ---- Failures --------------------------------------------------------------- */

/* f failed with MPI error class cls, its message `what: ` and MPI's text. */
static void check_mpi_failure(sf_future *f, int cls, const char *what)
{
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(sf_wait(f, NULL), SF_MPI_ERRNO(cls));
    ck_assert_int_eq(SF_MPI_ERROR_CLASS(SF_MPI_ERRNO(cls)), cls);
    char text[MPI_MAX_ERROR_STRING], want[MPI_MAX_ERROR_STRING + 64];
    int len = 0;
    MPI_Error_string(cls, text, &len);
    snprintf(want, sizeof want, "%s: %s", what, text);
    const char *msg = sf_error_message(f);
    ck_assert_ptr_nonnull(msg);
    ck_assert_str_eq(msg, want);
    sf_release(f);
}

START_TEST(invalid_rank)
{
    for (int m = 0; m < NMODES; m++) {
        start(modes[m]);
        int x = 0;
        check_mpi_failure(sf_mpi_irecv(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD, NULL),
                          MPI_ERR_RANK, "MPI_Irecv");
        check_mpi_failure(sf_mpi_isend(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD), MPI_ERR_RANK,
                          "MPI_Isend");
        check_mpi_failure(sf_mpi_isend(&x, 1, MPI_INT, partner, -3, MPI_COMM_WORLD), MPI_ERR_TAG,
                          "MPI_Isend");
        stop(0);
    }
    ck_assert_int_eq(SF_MPI_ERROR_CLASS(ECANCELED), -1);
}
END_TEST

/* Receives nobody sends to: finalize cancels them, their futures fail. */
START_TEST(finalize_unmatched)
{
    for (int m = 0; m < NMODES; m++) {
        start(modes[m]);
        int x[3];
        MPI_Status st[3];
        sf_future *f[3];
        for (int i = 0; i < 3; i++)
            f[i] = sf_mpi_irecv(&x[i], 1, MPI_INT, partner, 900 + i, MPI_COMM_WORLD, &st[i]);
        /* One that completes: finalize progresses it first. */
        int y = -1, z = rank;
        sf_future *r = sf_mpi_irecv(&y, 1, MPI_INT, partner, 950, MPI_COMM_WORLD, NULL);
        sf_future *s = sf_mpi_isend(&z, 1, MPI_INT, partner, 950, MPI_COMM_WORLD);
        ck_assert_int_eq(sf_mpi_finalize(0.2), 3);
        ck_assert_int_eq(sf_wait(r, NULL), 0);
        ck_assert_int_eq(sf_wait(s, NULL), 0);
        ck_assert_int_eq(y, partner);
        sf_release(r);
        sf_release(s);
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(sf_wait(f[i], NULL), ECANCELED);
            ck_assert_ptr_nonnull(sf_error_message(f[i]));
            sf_release(f[i]);
        }
        /* Stopped: requests are refused. */
        errno = 0;
        ck_assert_ptr_null(sf_mpi_irecv(&y, 1, MPI_INT, partner, 0, MPI_COMM_WORLD, NULL));
        ck_assert_int_eq(errno, EINVAL);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}
END_TEST

/* ---- Requests --------------------------------------------------------------- */

START_TEST(request_null)
{
    start(SF_MPI_PROGRESS_FROM_ENV);
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    memset(&st, 0x55, sizeof st);
    sf_future *f = sf_mpi_request(&req, &st);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(sf_is_done(f), 1);
    ck_assert_ptr_eq(sf_get(f), &st);
    ck_assert_int_eq(st.MPI_SOURCE, MPI_ANY_SOURCE);
    ck_assert_int_eq(st.MPI_TAG, MPI_ANY_TAG);
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    ck_assert_int_eq(count, 0);
    sf_release(f);
    f = sf_mpi_request(&req, MPI_STATUS_IGNORE);
    ck_assert_int_eq(sf_is_done(f), 1);
    ck_assert_ptr_null(get_ok(f));
    errno = 0;
    ck_assert_ptr_null(sf_mpi_request(NULL, NULL));
    ck_assert_int_eq(errno, EINVAL);
    stop(0);
}
END_TEST

/* A request the caller made: it becomes libsf-mpi's. */
START_TEST(request_handed)
{
    start(SF_MPI_PROGRESS_FROM_ENV);
    double in[4] = {0}, out[4] = {rank + 0.5, rank + 1.5, rank + 2.5, rank + 3.5};
    MPI_Request rr, sr;
    MPI_Status st;
    MPI_Irecv(in, 4, MPI_DOUBLE, partner, 31, MPI_COMM_WORLD, &rr);
    MPI_Isend(out, 4, MPI_DOUBLE, partner, 31, MPI_COMM_WORLD, &sr);
    sf_future *r = sf_mpi_request(&rr, &st);
    sf_future *s = sf_mpi_request(&sr, NULL);
    ck_assert(rr == MPI_REQUEST_NULL && sr == MPI_REQUEST_NULL);
    ck_assert_ptr_eq(get_ok(r), &st);
    ck_assert_ptr_null(get_ok(s));
    ck_assert_int_eq(st.MPI_SOURCE, partner);
    for (int i = 0; i < 4; i++)
        ck_assert(in[i] == partner + i + 0.5);
    stop(0);
}
END_TEST

/* A future released before its request completes: the request still
 * takes its message (the next receive gets the next one), and is freed. */
START_TEST(released_early)
{
    for (int m = 0; m < NMODES; m++) {
        start(modes[m]);
        int a = -1, b = -1, one = 1, two = 2;
        sf_release(sf_mpi_irecv(&a, 1, MPI_INT, partner, 40, MPI_COMM_WORLD, NULL));
        sf_future *r = sf_mpi_irecv(&b, 1, MPI_INT, partner, 40, MPI_COMM_WORLD, NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        sf_release(sf_mpi_isend(&one, 1, MPI_INT, partner, 40, MPI_COMM_WORLD));
        sf_future *s = sf_mpi_isend(&two, 1, MPI_INT, partner, 40, MPI_COMM_WORLD);
        ck_assert_ptr_null(get_ok(r));
        ck_assert_ptr_null(get_ok(s));
        ck_assert_int_eq(b, 2);
        stop(0); /* all four done: none to cancel */
        ck_assert_int_eq(a, 1);
    }
}
END_TEST

/* sf_cancel() of a pending receive: its getters see ECANCELED at once;
 * finalize then cancels the MPI request (nobody sent to it). */
START_TEST(cancel_pending)
{
    for (int m = 0; m < NMODES; m++) {
        start(modes[m]);
        int x = -1;
        sf_future *f = sf_mpi_irecv(&x, 1, MPI_INT, partner, 50, MPI_COMM_WORLD, NULL);
        ck_assert_int_eq(sf_cancel(f), 0);
        ck_assert_int_eq(sf_wait(f, NULL), ECANCELED);
        sf_release(f);
        ck_assert_int_eq(sf_mpi_finalize(0), 1);
        ck_assert_int_eq(x, -1);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}
END_TEST

/* ---- Starting and stopping ---------------------------------------------------- */

static int noop_poll(void *ctx)
{
    (void)ctx;
    return -1;
}

START_TEST(init_errors)
{
    sf_mpi_config cfg = {0};
    errno = 0;
    ck_assert_int_eq(sf_mpi_finalize(0), -1);
    ck_assert_int_eq(errno, EINVAL);
    int x = 0;
    errno = 0;
    ck_assert_ptr_null(sf_mpi_isend(&x, 1, MPI_INT, partner, 0, MPI_COMM_WORLD));
    ck_assert_int_eq(errno, EINVAL);
    MPI_Request req = MPI_REQUEST_NULL;
    errno = 0;
    ck_assert_ptr_null(sf_mpi_request(&req, NULL));
    ck_assert_int_eq(errno, EINVAL);

    const double bad_naps[] = {-1, 1e-7, 1.5, NAN};
    for (int i = 0; i < 4; i++) {
        cfg = (sf_mpi_config){.max_nap = bad_naps[i]};
        errno = 0;
        ck_assert_int_eq(sf_mpi_init(&cfg), -1);
        ck_assert_int_eq(errno, EINVAL);
    }
    cfg = (sf_mpi_config){.progress = 4};
    errno = 0;
    ck_assert_int_eq(sf_mpi_init(&cfg), -1);
    ck_assert_int_eq(errno, EINVAL);
    cfg = (sf_mpi_config){.progress = -1};
    errno = 0;
    ck_assert_int_eq(sf_mpi_init(&cfg), -1);
    ck_assert_int_eq(errno, EINVAL);

    /* A bad SF_MPI_PROGRESS: one stderr line naming it. */
    const char *old = getenv("SF_MPI_PROGRESS");
    char *saved = old != NULL ? strdup(old) : NULL;
    setenv("SF_MPI_PROGRESS", "sometimes", 1);
    struct tu_capture cap;
    tu_capture_begin(&cap);
    errno = 0;
    int rc = sf_mpi_init(NULL);
    int e = errno;
    char *err = tu_capture_end(&cap);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(e, EINVAL);
    ck_assert_int_eq(tu_count_lines(err), 1);
    ck_assert_ptr_nonnull(strstr(err, "SF_MPI_PROGRESS"));
    free(err);
    for (int m = 1; m <= 3; m++) {
        setenv("SF_MPI_PROGRESS", mode_names[m], 1);
        ck_assert_int_eq(sf_mpi_init(NULL), 0);
        ck_assert_int_eq(sf_mpi_finalize(0), 0);
    }
    if (saved != NULL)
        setenv("SF_MPI_PROGRESS", saved, 1);
    else
        unsetenv("SF_MPI_PROGRESS");
    free(saved);

    /* EALREADY, then a valid max_nap. */
    cfg = (sf_mpi_config){.max_nap = 1e-6};
    ck_assert_int_eq(sf_mpi_init(&cfg), 0);
    errno = 0;
    ck_assert_int_eq(sf_mpi_init(&cfg), -1);
    ck_assert_int_eq(errno, EALREADY);
    errno = 0;
    ck_assert_int_eq(sf_mpi_finalize(-1), -1);
    ck_assert_int_eq(errno, EINVAL);
    errno = 0;
    ck_assert_int_eq(sf_mpi_finalize(NAN), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(sf_mpi_finalize(0), 0);

    /* EBUSY: another idle hook; the thread mode installs none. */
    ck_assert_int_eq(sf_on_idle(noop_poll, NULL), 0);
    for (int m = 1; m <= 2; m++) {
        cfg = (sf_mpi_config){.progress = m};
        errno = 0;
        ck_assert_int_eq(sf_mpi_init(&cfg), -1);
        ck_assert_int_eq(errno, EBUSY);
    }
    cfg = (sf_mpi_config){.progress = SF_MPI_PROGRESS_THREAD};
    ck_assert_int_eq(sf_mpi_init(&cfg), 0);
    ck_assert_int_eq(sf_mpi_finalize(0), 0);
    ck_assert_int_eq(sf_on_idle(NULL, NULL), 0);
    MPI_Barrier(MPI_COMM_WORLD);
}
END_TEST

/* Error handlers: MPI_ERRORS_RETURN while started, the previous ones after;
 * keep_errhandler leaves them alone. */
START_TEST(errhandlers)
{
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    ck_assert(eh == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);
    start(SF_MPI_PROGRESS_FROM_ENV);
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    ck_assert(eh == MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &eh);
    ck_assert(eh == MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    stop(0);
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    ck_assert(eh == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);
    sf_mpi_config cfg = {.keep_errhandler = 1};
    ck_assert_int_eq(sf_mpi_init(&cfg), 0);
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    ck_assert(eh == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);
    stop(0);
}
END_TEST

/* A receive too short for its message fails when it completes, in the
 * poller (MPI_ERR_TRUNCATE in its status). Released first, its failure
 * goes to the unhandled-failure hook, run there: a finalize from it is
 * refused (EDEADLK). */
static atomic_int hook_ran;
static long hook_rc;
static int hook_errno, hook_code;

static void on_unhandled(int code, const char *message, void *ctx)
{
    (void)message;
    (void)ctx;
    int saved = errno;
    errno = 0;
    hook_rc = sf_mpi_finalize(0);
    hook_errno = errno;
    errno = saved;
    hook_code = code;
    atomic_store(&hook_ran, 1);
}

START_TEST(truncated)
{
    for (int m = 0; m < NMODES; m++) {
        start(modes[m]);
        int two[2] = {rank, rank + 1}, one = -1, three = 3;
        if (rank > partner) {
            sf_future *f = sf_mpi_irecv(&one, 1, MPI_INT, partner, 60, MPI_COMM_WORLD, NULL);
            check_mpi_failure(f, MPI_ERR_TRUNCATE, "MPI_Irecv");
            atomic_store(&hook_ran, 0);
            sf_on_unhandled(on_unhandled, NULL);
            /* Released before the message is sent: the poller fails it. */
            sf_release(sf_mpi_irecv(&one, 1, MPI_INT, partner, 60, MPI_COMM_WORLD, NULL));
            MPI_Barrier(MPI_COMM_WORLD);
            ck_assert_ptr_null(get_ok(sf_mpi_irecv(&three, 1, MPI_INT, partner, 61, MPI_COMM_WORLD, NULL)));
            ck_assert_int_eq(tu_wait_flag(&hook_ran, 10000), 1);
            sf_on_unhandled(NULL, NULL);
            ck_assert_int_eq(hook_rc, -1);
            ck_assert_int_eq(hook_errno, EDEADLK);
            ck_assert_int_eq(hook_code, SF_MPI_ERRNO(MPI_ERR_TRUNCATE));
            ck_assert_int_eq(three, partner);
        } else {
            ck_assert_ptr_null(get_ok(sf_mpi_isend(two, 2, MPI_INT, partner, 60, MPI_COMM_WORLD)));
            MPI_Barrier(MPI_COMM_WORLD);
            ck_assert_ptr_null(get_ok(sf_mpi_isend(two, 2, MPI_INT, partner, 60, MPI_COMM_WORLD)));
            ck_assert_ptr_null(get_ok(sf_mpi_isend(&rank, 1, MPI_INT, partner, 61, MPI_COMM_WORLD)));
        }
        stop(0);
    }
}
END_TEST

/* ---- The pipeline: the prototype's hang shape --------------------------------- */

#define BLOCK 64
#define WINDOW 2

struct block {
    long b;
    double data[BLOCK];
};

/* The upper rank's stage: receives block b, filters it, sends it back. A
 * get of an earlier block may run this task inside its wait: it waits for
 * a block the lower rank sends only once earlier results came back. */
static void *filter_task(void *arg)
{
    long b = (long)(intptr_t)arg;
    struct block *blk = malloc(sizeof *blk);
    if (blk == NULL)
        return NULL;
    MPI_Status st;
    sf_future *r = sf_mpi_irecv(blk->data, BLOCK, MPI_DOUBLE, partner, (int)b, MPI_COMM_WORLD, &st);
    if (r == NULL || sf_wait(r, NULL) != 0) {
        sf_release(r);
        free(blk);
        return NULL;
    }
    sf_release(r);
    for (int i = 0; i < BLOCK; i++)
        blk->data[i] = blk->data[i] * 2 + 1;
    sf_future *s =
        sf_mpi_isend(blk->data, BLOCK, MPI_DOUBLE, partner, 100000 + (int)b, MPI_COMM_WORLD);
    int rc = s != NULL ? sf_wait(s, NULL) : -1;
    sf_release(s);
    free(blk);
    return rc == 0 ? (void *)1 : NULL;
}

/* The lower rank's stage: renders block b and sends it. */
static void *render_task(void *arg)
{
    struct block *blk = arg;
    for (int i = 0; i < BLOCK; i++)
        blk->data[i] = (double)(blk->b * 1000 + i);
    sf_future *s =
        sf_mpi_isend(blk->data, BLOCK, MPI_DOUBLE, partner, (int)blk->b, MPI_COMM_WORLD);
    int rc = s != NULL ? sf_wait(s, NULL) : -1;
    sf_release(s);
    return rc == 0 ? (void *)1 : NULL;
}

/* Its results: a task per block that receives it back. */
static void *collect_task(void *arg)
{
    struct block *blk = arg;
    sf_future *r = sf_mpi_irecv(blk->data, BLOCK, MPI_DOUBLE, partner, 100000 + (int)blk->b,
                                MPI_COMM_WORLD, NULL);
    int rc = r != NULL ? sf_wait(r, NULL) : -1;
    sf_release(r);
    return rc == 0 ? (void *)1 : NULL;
}

/* `blocks` blocks through the pair, at most WINDOW ahead of their results. */
static void pipeline(long blocks)
{
    if (rank > partner) {
        sf_future **fs = malloc((size_t)blocks * sizeof *fs);
        ck_assert_ptr_nonnull(fs);
        /* Every stage made at once, got in order. */
        for (long b = 0; b < blocks; b++)
            fs[b] = sf_do(filter_task, (void *)(intptr_t)b);
        for (long b = 0; b < blocks; b++)
            ck_assert_ptr_eq(get_ok(fs[b]), (void *)1);
        free(fs);
        return;
    }
    struct block *out = calloc((size_t)blocks, sizeof *out);
    struct block *back = calloc((size_t)blocks, sizeof *back);
    sf_future **sent = calloc((size_t)blocks, sizeof *sent);
    sf_future **got = calloc((size_t)blocks, sizeof *got);
    ck_assert(out != NULL && back != NULL && sent != NULL && got != NULL);
    for (long b = 0; b < blocks; b++) {
        out[b].b = back[b].b = b;
        got[b] = sf_do(collect_task, &back[b]);
    }
    for (long b = 0; b < blocks && b < WINDOW; b++)
        sent[b] = sf_do(render_task, &out[b]);
    for (long b = 0; b < blocks; b++) {
        ck_assert_ptr_eq(get_ok(got[b]), (void *)1);
        for (int i = 0; i < BLOCK; i++)
            ck_assert(back[b].data[i] == (double)(b * 1000 + i) * 2 + 1);
        ck_assert_ptr_eq(get_ok(sent[b]), (void *)1);
        if (b + WINDOW < blocks)
            sent[b + WINDOW] = sf_do(render_task, &out[b + WINDOW]);
    }
    free(out);
    free(back);
    free(sent);
    free(got);
}

START_TEST(pipeline_modes)
{
    for (int m = 0; m < NMODES; m++) {
        start(modes[m]);
        pipeline(64);
        stop(0);
    }
}
END_TEST

/* No hang in 100 runs: 100 rounds of start, a short pipeline and stop,
 * through the three modes in turn. */
START_TEST(repeated)
{
    int rounds = getenv("SF_MPI_ROUNDS") != NULL ? atoi(getenv("SF_MPI_ROUNDS")) : 100;
    for (int i = 0; i < rounds; i++) {
        start(modes[i % NMODES]);
        pipeline(8);
        stop(0);
    }
}
END_TEST

/* After each test, even one that failed half-way: libsf-mpi stopped. */
static void teardown(void)
{
    sf_mpi_finalize(0);
}

static Suite *mpi_suite(void)
{
    Suite *s = suite_create("mpi");
    TCase *tc = tcase_create("mpi");
    /* The whole run is under timeout(1) in tests/test-mpi.sh. */
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, init_errors);
    tcase_add_test(tc, errhandlers);
    tcase_add_test(tc, request_null);
    tcase_add_test(tc, request_handed);
    tcase_add_test(tc, pingpong_plain);
    tcase_add_test(tc, pingpong_tasks);
    tcase_add_test(tc, invalid_rank);
    tcase_add_test(tc, truncated);
    tcase_add_test(tc, released_early);
    tcase_add_test(tc, cancel_pending);
    tcase_add_test(tc, finalize_unmatched);
    tcase_add_test(tc, many_in_flight);
    tcase_add_test(tc, pipeline_modes);
    tcase_add_test(tc, repeated);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS ||
        provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "test_mpi: MPI_Init_thread granted %d, not MPI_THREAD_MULTIPLE\n",
                provided);
        return 99;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size % 2 != 0) {
        fprintf(stderr, "test_mpi: run it at an even number of ranks\n");
        MPI_Finalize();
        return 99;
    }
    partner = rank ^ 1;
    SRunner *sr = srunner_create(mpi_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    const char *tap = getenv("SF_MPI_TAP");
    srunner_set_tap(sr, rank == 0 && tap != NULL ? tap : "/dev/null");
    /* Every rank's log, written as the tests end: a rank that hangs later
     * still shows which test failed on it (tests/test-mpi.sh prints them). */
    char log[4096];
    const char *dir = getenv("SF_MPI_LOG");
    if (dir != NULL) {
        snprintf(log, sizeof log, "%s.%d", dir, rank);
        srunner_set_log(sr, log);
    }
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    if (failed > 0) {
        TestResult **tr = srunner_failures(sr);
        for (int i = 0; i < failed; i++)
            fprintf(stderr, "rank %d: %s:%d: %s: %s\n", rank, tr_lfile(tr[i]), tr_lno(tr[i]),
                    tr_tcname(tr[i]), tr_msg(tr[i]));
        free(tr);
    }
    srunner_free(sr);
    sf_shutdown();
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}
