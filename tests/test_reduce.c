/*
 * test_reduce.c - sf_reduce: the result is the balanced tree of the chunks'
 * accumulators, bit for bit, at 1, 2 and 4 threads and every grain; struct
 * accumulators are exact; it nests in tasks and loop bodies and its leaves
 * may get futures; a failing leaf or join fails it with its code and
 * message; misuse is EINVAL and runs nothing.
 *
 * The reference is the same tree computed here, sequentially, by the
 * formula of sf.h: any other order of the floating-point additions gives
 * other bits for these values (checked for grain 1), so equality with it
 * at every thread count is the determinism the call promises.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const int thread_counts[] = {1, 2, 4};
#define NCOUNTS (int)(sizeof thread_counts / sizeof thread_counts[0])

/* ---- a sum of doubles --------------------------------------------------- */

#define FROM (-37L)
#define N 10000L

/* Values of very different magnitudes, so the order of additions shows. */
static double value(long i)
{
    unsigned long h = ((unsigned long)i + 1000003UL) * 2654435761UL;
    return sin((double)i) * pow(10.0, (double)(h % 13) - 6.0);
}

static atomic_long leaves_run;

static void sum_leaf(long lo, long hi, void *acc, void *ctx)
{
    (void)ctx;
    double *s = acc;
    for (long i = lo; i < hi; i++)
        *s += value(i);
    atomic_fetch_add(&leaves_run, 1);
}

static void sum_join(void *acc, const void *right, void *ctx)
{
    (void)ctx;
    *(double *)acc += *(const double *)right;
}

typedef void leaf_fn(long lo, long hi, void *acc, void *ctx);

/* The tree of sf.h over chunks [c0, c1) of a range from `from`, sequentially. */
static double tree_sum(long from, long to, long grain, long c0, long c1, double identity,
                       leaf_fn *leaf)
{
    if (c1 - c0 == 1) {
        long lo = from + c0 * grain, hi = to - lo > grain ? lo + grain : to;
        double s = identity;
        leaf(lo, hi, &s, NULL);
        return s;
    }
    long m = c0 + (c1 - c0) / 2;
    double l = tree_sum(from, to, grain, c0, m, identity, leaf);
    double r = tree_sum(from, to, grain, m, c1, identity, leaf);
    sum_join(&l, &r, NULL);
    return l;
}

static double reference_of(long from, long to, long grain, double identity, leaf_fn *leaf)
{
    long chunks = (long)(((unsigned long)to - (unsigned long)from + (unsigned long)grain - 1) /
                         (unsigned long)grain);
    return tree_sum(from, to, grain, 0, chunks, identity, leaf);
}

static double reference_sum(long from, long to, long grain, double identity)
{
    return reference_of(from, to, grain, identity, sum_leaf);
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static const long grains[] = {1, 7, 1000, 3 * N};
#define NGRAINS (int)(sizeof grains / sizeof grains[0])

START_TEST(sum_is_the_tree_bit_for_bit)
{
    tu_env_threads(thread_counts[_i]);
    /* The values make the order matter: a plain left-to-right sum differs
     * from the tree of grain 1. */
    double linear = 0;
    for (long i = FROM; i < FROM + N; i++)
        linear += value(i);
    ck_assert(!same_bits(linear, reference_sum(FROM, FROM + N, 1, 0.0)));
    for (int g = 0; g < NGRAINS; g++) {
        for (int rep = 0; rep < 3; rep++) {
            double want = reference_sum(FROM, FROM + N, grains[g], 0.0);
            long chunks = (N + grains[g] - 1) / grains[g];
            double got = -1;
            atomic_store(&leaves_run, 0);
            ck_assert_int_eq(sf_reduce(FROM, FROM + N, grains[g], &got, &(double){0.0},
                                       sizeof got, sum_leaf, sum_join, NULL),
                             0);
            ck_assert_msg(same_bits(got, want), "grain %ld at %d threads: %.17g, tree %.17g",
                          grains[g], thread_counts[_i], got, want);
            ck_assert_int_eq(atomic_load(&leaves_run), chunks); /* one leaf per chunk */
        }
    }
    /* The identity starts every chunk: a non-zero one counts once per chunk. */
    double got;
    ck_assert_int_eq(
        sf_reduce(FROM, FROM + N, 7, &got, &(double){0.5}, sizeof got, sum_leaf, sum_join, NULL),
        0);
    ck_assert(same_bits(got, reference_sum(FROM, FROM + N, 7, 0.5)));
    /* A range of one index, and ranges of a few, at a grain of one. */
    for (long n = 1; n <= 9; n++) {
        ck_assert_int_eq(
            sf_reduce(5, 5 + n, 1, &got, &(double){0.0}, sizeof got, sum_leaf, sum_join, NULL), 0);
        ck_assert(same_bits(got, reference_sum(5, 5 + n, 1, 0.0)));
    }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

START_TEST(empty_range_gives_the_identity)
{
    tu_env_threads(thread_counts[_i]);
    double got = -1, id = 42.5;
    atomic_store(&leaves_run, 0);
    ck_assert_int_eq(sf_reduce(3, 3, 1, &got, &id, sizeof got, sum_leaf, sum_join, NULL), 0);
    ck_assert(same_bits(got, 42.5));
    ck_assert_int_eq(sf_reduce(LONG_MIN, LONG_MIN, 100, &got, &(double){-1.25}, sizeof got,
                               sum_leaf, sum_join, NULL),
                     0);
    ck_assert(same_bits(got, -1.25));
    /* result may be the identity itself */
    ck_assert_int_eq(sf_reduce(0, 0, 1, &id, &id, sizeof id, sum_leaf, sum_join, NULL), 0);
    ck_assert(same_bits(id, 42.5));
    ck_assert_int_eq(atomic_load(&leaves_run), 0);
    sf_shutdown();
}
END_TEST

/* ---- a histogram -------------------------------------------------------- */

#define BINS 64

struct hist {
    long bin[BINS];
    long total;
};

static int bin_of(long i) { return (int)(((unsigned long)i * 2654435761UL >> 7) % BINS); }

static void hist_leaf(long lo, long hi, void *acc, void *ctx)
{
    (void)ctx;
    struct hist *h = acc;
    for (long i = lo; i < hi; i++) {
        h->bin[bin_of(i)]++;
        h->total++;
    }
}

static void hist_join(void *acc, const void *right, void *ctx)
{
    (void)ctx;
    struct hist *a = acc;
    const struct hist *b = right;
    for (int k = 0; k < BINS; k++)
        a->bin[k] += b->bin[k];
    a->total += b->total;
}

static void hist_reference(long from, long to, struct hist *h)
{
    memset(h, 0, sizeof *h);
    hist_leaf(from, to, h, NULL);
}

START_TEST(histogram_is_exact)
{
    tu_env_threads(thread_counts[_i]);
    struct hist id, got, want;
    memset(&id, 0, sizeof id);
    hist_reference(-5000, 95000, &want);
    const long gs[] = {1, 13, 4096, 1000000};
    for (int g = 0; g < 4; g++) {
        memset(&got, 0xff, sizeof got);
        ck_assert_int_eq(
            sf_reduce(-5000, 95000, gs[g], &got, &id, sizeof got, hist_leaf, hist_join, NULL), 0);
        ck_assert_mem_eq(&got, &want, sizeof got);
    }
    /* An accumulator larger than the frontier's memory bound: S falls back
     * towards one subtree per thread, the result does not change. */
    size_t big = ((size_t)1 << 19) + 8; /* longs: over 4 MiB */
    long *bid = calloc(big, sizeof *bid), *bgot = malloc(big * sizeof *bgot);
    ck_assert_ptr_nonnull(bid);
    ck_assert_ptr_nonnull(bgot);
    /* leaf and join of the first BINS longs and total only, reading the
     * rest untouched: the struct's layout over a larger block. */
    ck_assert_int_eq(sf_reduce(-5000, 95000, 9000, bgot, bid, big * sizeof *bgot, hist_leaf,
                               hist_join, NULL),
                     0);
    ck_assert_mem_eq(bgot, &want, sizeof want);
    for (size_t k = sizeof want / sizeof *bgot; k < big; k++)
        ck_assert_int_eq(bgot[k], 0);
    free(bid);
    free(bgot);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* ---- composition --------------------------------------------------------- */

static void *reduce_task(void *arg)
{
    long grain = (long)(intptr_t)arg;
    double got;
    if (sf_reduce(FROM, FROM + N, grain, &got, &(double){0.0}, sizeof got, sum_leaf, sum_join,
                  NULL) != 0)
        return NULL;
    double *p = malloc(sizeof *p);
    *p = got;
    return p;
}

START_TEST(nested_in_tasks)
{
    tu_env_threads(thread_counts[_i]);
    sf_future *f[4];
    for (int g = 0; g < 4; g++)
        f[g] = sf_do(reduce_task, (void *)(intptr_t)grains[g]);
    for (int g = 0; g < 4; g++) {
        double *p = sf_get(f[g]);
        ck_assert_ptr_nonnull(p);
        ck_assert(same_bits(*p, reference_sum(FROM, FROM + N, grains[g], 0.0)));
        free(p);
        sf_release(f[g]);
    }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

#define OUTER 24
static double outer_got[OUTER];
static int outer_rc[OUTER];

/* Body i: the reduce of [i * 100, i * 100 + 1000 + i) at grain 1 + i % 5. */
static void outer_body(long i, void *ctx)
{
    (void)ctx;
    long from = i * 100, to = from + 1000 + i;
    outer_rc[i] = sf_reduce(from, to, 1 + i % 5, &outer_got[i], &(double){0.0}, sizeof(double),
                            sum_leaf, sum_join, NULL);
}

START_TEST(nested_in_loop_bodies)
{
    tu_env_threads(thread_counts[_i]);
    ck_assert_int_eq(sf_for(0, OUTER, outer_body, NULL), 0);
    for (int i = 0; i < OUTER; i++) {
        ck_assert_int_eq(outer_rc[i], 0);
        long from = i * 100L, to = from + 1000 + i;
        ck_assert(same_bits(outer_got[i], reference_sum(from, to, 1 + i % 5, 0.0)));
    }
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

static void *chunk_task(void *arg)
{
    long *r = arg;
    double *s = malloc(sizeof *s);
    *s = 0;
    sum_leaf(r[0], r[1], s, NULL);
    return s;
}

static void *two_task(void *arg)
{
    (void)arg;
    return (void *)2;
}

/* A leaf that gets a future it makes (its chunk's sum) and one the caller
 * made before the reduce (ctx): the sum of every value plus 2 per chunk. */
static void getting_leaf(long lo, long hi, void *acc, void *ctx)
{
    long r[2] = {lo, hi};
    sf_future *f = sf_do(chunk_task, r);
    ck_assert_ptr_nonnull(f);
    double *s = sf_get(f);
    ck_assert_ptr_nonnull(s);
    *(double *)acc += *s;
    free(s);
    sf_release(f);
    ck_assert_ptr_eq(sf_get(ctx), (void *)2);
    *(double *)acc += 2;
}

static void *getting_task(void *arg)
{
    sf_future *two = arg;
    double got;
    if (sf_reduce(FROM, FROM + 2000, 3, &got, &(double){0.0}, sizeof got, getting_leaf, sum_join,
                  two) != 0)
        return NULL;
    double *p = malloc(sizeof *p);
    *p = got;
    return p;
}

/* getting_leaf without futures: the chunk's sum from 0, added, then 2. */
static void plain_getting_leaf(long lo, long hi, void *acc, void *ctx)
{
    (void)ctx;
    double s = 0;
    sum_leaf(lo, hi, &s, NULL);
    *(double *)acc += s;
    *(double *)acc += 2;
}

static double getting_reference(long from, long to, long grain)
{
    return reference_of(from, to, grain, 0.0, plain_getting_leaf);
}

START_TEST(leaves_get_futures)
{
    tu_env_threads(thread_counts[_i]);
    sf_future *two = sf_do(two_task, NULL);
    double got;
    ck_assert_int_eq(sf_reduce(FROM, FROM + N, 7, &got, &(double){0.0}, sizeof got, getting_leaf,
                               sum_join, two),
                     0);
    ck_assert(same_bits(got, getting_reference(FROM, FROM + N, 7)));
    /* The same inside a task. */
    sf_future *f = sf_do(getting_task, two);
    double *p = sf_get(f);
    ck_assert_ptr_nonnull(p);
    ck_assert(same_bits(*p, getting_reference(FROM, FROM + 2000, 3)));
    free(p);
    sf_release(f);
    sf_release(two);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* ---- failures ------------------------------------------------------------ */

#define FAIL_AT 500L

static void failing_leaf(long lo, long hi, void *acc, void *ctx)
{
    (void)ctx;
    sum_leaf(lo, hi, acc, NULL);
    if (lo <= FAIL_AT && FAIL_AT < hi)
        ck_assert_int_eq(sf_fail(77, "leaf %ld", lo), 0);
}

struct failed {
    int rc, err;
    char *msg;
    double got;
};

static void run_failing(struct failed *r, long grain)
{
    r->got = 123.0;
    errno = 0;
    r->rc = sf_reduce(0, N, grain, &r->got, &(double){0.0}, sizeof r->got, failing_leaf, sum_join,
                      NULL);
    r->err = errno;
    const char *m = sf_task_error_message();
    r->msg = m != NULL ? strdup(m) : NULL;
}

static void *failing_task(void *arg)
{
    run_failing(arg, 1);
    return (void *)7;
}

static void check_failed(const struct failed *r, const char *msg)
{
    ck_assert_int_eq(r->rc, -1);
    ck_assert_int_eq(r->err, 77);
    ck_assert_ptr_nonnull(r->msg);
    ck_assert_str_eq(r->msg, msg);
    ck_assert(same_bits(r->got, 123.0)); /* *result untouched */
}

START_TEST(a_failing_leaf_fails_the_reduce)
{
    int threads = thread_counts[_i];
    tu_env_threads(threads);
    struct failed r;
    atomic_store(&leaves_run, 0);
    run_failing(&r, 1);
    check_failed(&r, "leaf 500");
    free(r.msg);
    /* Depth first, left to right: at one thread exactly the leaves up to
     * the failing one ran. */
    if (threads == 1)
        ck_assert_int_eq(atomic_load(&leaves_run), FAIL_AT + 1);
    run_failing(&r, 64);
    check_failed(&r, "leaf 448");
    free(r.msg);
    /* In a task: the reduce fails, its task does not. */
    sf_future *f = sf_do(failing_task, &r);
    void *v = NULL;
    ck_assert_int_eq(sf_wait(f, &v), 0);
    ck_assert_ptr_eq(v, (void *)7);
    sf_release(f);
    check_failed(&r, "leaf 500");
    free(r.msg);
    /* The runtime goes on: a good reduce right after. */
    double got;
    ck_assert_int_eq(
        sf_reduce(FROM, FROM + N, 7, &got, &(double){0.0}, sizeof got, sum_leaf, sum_join, NULL),
        0);
    ck_assert(same_bits(got, reference_sum(FROM, FROM + N, 7, 0.0)));
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

/* A join that fails at the root (the join that sees all N indices),
 * wherever the root runs: in a subtree at one thread, in the caller's top
 * levels at more. */
struct counted {
    double sum;
    long count;
};

static void counted_leaf(long lo, long hi, void *acc, void *ctx)
{
    (void)ctx;
    struct counted *c = acc;
    sum_leaf(lo, hi, &c->sum, NULL);
    c->count += hi - lo;
}

static void failing_join(void *acc, const void *right, void *ctx)
{
    (void)ctx;
    struct counted *a = acc;
    const struct counted *b = right;
    a->sum += b->sum;
    a->count += b->count;
    if (a->count == N)
        ck_assert_int_eq(sf_fail(78, "root join"), 0);
}

START_TEST(a_failing_join_fails_the_reduce)
{
    tu_env_threads(thread_counts[_i]);
    struct counted id = {0, 0}, got = {1, 1};
    errno = 0;
    ck_assert_int_eq(sf_reduce(0, N, 10, &got, &id, sizeof got, counted_leaf, failing_join, NULL),
                     -1);
    ck_assert_int_eq(errno, 78);
    ck_assert_str_eq(sf_task_error_message(), "root join");
    ck_assert_int_eq(got.count, 1);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

static sf_future *self_slot;
#define CANCEL_AT 300L

static void cancelling_leaf(long lo, long hi, void *acc, void *ctx)
{
    sum_leaf(lo, hi, acc, ctx);
    if (lo == CANCEL_AT)
        ck_assert_int_eq(sf_cancel(self_slot), 0);
}

static void *cancelled_task(void *arg)
{
    struct failed *r = arg;
    errno = 0;
    r->rc = sf_reduce(0, N, 1, &r->got, &(double){0.0}, sizeof r->got, cancelling_leaf, sum_join,
                      NULL);
    r->err = errno;
    return (void *)7;
}

/* At one thread every leaf runs in the task's thread, which sees the
 * cancellation: no leaf starts after it, and the reduce says why. The task
 * did not ask itself, so it keeps its own result. */
START_TEST(a_cancelled_task_stops_its_reduce)
{
    tu_env_threads(1);
    struct failed r = {.got = 5.0};
    atomic_store(&leaves_run, 0);
    self_slot = sf_do(cancelled_task, &r);
    void *v = NULL;
    ck_assert_int_eq(sf_wait(self_slot, &v), 0);
    ck_assert_ptr_eq(v, (void *)7);
    sf_release(self_slot);
    ck_assert_int_eq(r.rc, -1);
    ck_assert_int_eq(r.err, ECANCELED);
    ck_assert(same_bits(r.got, 5.0));
    ck_assert_int_eq(atomic_load(&leaves_run), CANCEL_AT + 1);
    sf_shutdown();
}
END_TEST

START_TEST(misuse_is_einval_and_runs_nothing)
{
    tu_env_threads(2);
    double got = 9.0, id = 0;
    atomic_store(&leaves_run, 0);
#define EINVAL_CASE(call)                                                                          \
    do {                                                                                           \
        errno = 0;                                                                                 \
        ck_assert_int_eq((call), -1);                                                              \
        ck_assert_int_eq(errno, EINVAL);                                                           \
    } while (0)
    EINVAL_CASE(sf_reduce(10, 9, 1, &got, &id, sizeof got, sum_leaf, sum_join, NULL));
    EINVAL_CASE(sf_reduce(LONG_MAX, LONG_MIN, 1, &got, &id, sizeof got, sum_leaf, sum_join, NULL));
    EINVAL_CASE(sf_reduce(0, 10, 0, &got, &id, sizeof got, sum_leaf, sum_join, NULL));
    EINVAL_CASE(sf_reduce(0, 10, -1, &got, &id, sizeof got, sum_leaf, sum_join, NULL));
    EINVAL_CASE(sf_reduce(0, 10, LONG_MIN, &got, &id, sizeof got, sum_leaf, sum_join, NULL));
    EINVAL_CASE(sf_reduce(0, 10, 1, &got, &id, 0, sum_leaf, sum_join, NULL));
    EINVAL_CASE(sf_reduce(0, 10, 1, NULL, &id, sizeof got, sum_leaf, sum_join, NULL));
    EINVAL_CASE(sf_reduce(0, 10, 1, &got, NULL, sizeof got, sum_leaf, sum_join, NULL));
    EINVAL_CASE(sf_reduce(0, 10, 1, &got, &id, sizeof got, NULL, sum_join, NULL));
    EINVAL_CASE(sf_reduce(0, 10, 1, &got, &id, sizeof got, sum_leaf, NULL, NULL));
    EINVAL_CASE(sf_reduce(0, 0, 1, &got, &id, sizeof got, sum_leaf, NULL, NULL));
#undef EINVAL_CASE
    ck_assert(same_bits(got, 9.0));
    ck_assert_int_eq(atomic_load(&leaves_run), 0);
    sf_stats s;
    ck_assert_int_eq(sf_stats_read(&s), -1); /* nothing started the runtime */
    ck_assert_int_eq(errno, ESRCH);
    /* The extremes of long: every chunk of [LONG_MIN, LONG_MIN + 10) and of
     * [LONG_MAX - 10, LONG_MAX), with a grain that covers either at once. */
    ck_assert_int_eq(sf_reduce(LONG_MAX - 10, LONG_MAX, LONG_MAX, &got, &id, sizeof got,
                               sum_leaf, sum_join, NULL),
                     0);
    ck_assert(same_bits(got, reference_sum(LONG_MAX - 10, LONG_MAX, 10, 0.0)));
    ck_assert_int_eq(sf_reduce(LONG_MIN, LONG_MIN + 10, 3, &got, &id, sizeof got, sum_leaf,
                               sum_join, NULL),
                     0);
    ck_assert(same_bits(got, reference_sum(LONG_MIN, LONG_MIN + 10, 3, 0.0)));
    sf_shutdown();
}
END_TEST

static Suite *reduce_suite(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, sum_is_the_tree_bit_for_bit, 0, NCOUNTS);
    tcase_add_loop_test(tc, empty_range_gives_the_identity, 0, NCOUNTS);
    tcase_add_loop_test(tc, histogram_is_exact, 0, NCOUNTS);
    tcase_add_loop_test(tc, nested_in_tasks, 0, NCOUNTS);
    tcase_add_loop_test(tc, nested_in_loop_bodies, 0, NCOUNTS);
    tcase_add_loop_test(tc, leaves_get_futures, 0, NCOUNTS);
    tcase_add_loop_test(tc, a_failing_leaf_fails_the_reduce, 0, NCOUNTS);
    tcase_add_loop_test(tc, a_failing_join_fails_the_reduce, 0, NCOUNTS);
    tcase_add_test(tc, a_cancelled_task_stops_its_reduce);
    tcase_add_test(tc, misuse_is_einval_and_runs_nothing);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(reduce_suite)
