/*
 * test_feed.c - threads that both feed a pipeline and wait for it (sf.h,
 * "Waits from plain code"; docs/waiting.md, "Plain code's waits").
 *
 * The peer shape: a plain thread plays a remote peer. It completes promise
 * in[i] only once the reply to item i - WINDOW came back (it waits for
 * promise out[i - WINDOW]); task answer(i) gets in[i] and completes out[i];
 * the main thread makes N lazy answer tasks and gets them in order. No
 * cycle of gets: it must end at every SF_THREADS and N, whatever kind of
 * wait either side uses. A plain-code wait that helped with an unrelated
 * answer(k) would have to see it end before returning (its thread leaves
 * nothing parked), and answer(k) waits for a promise that the waiting
 * thread sets only after that.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define WINDOW 8

/* How a plain thread waits: the kinds the peer and main rotate through. */
enum kind { K_GET, K_WAIT, K_WAIT_FOR_INF, K_WAIT_FOR_LOOP, K_KINDS };

/* Waits for f in the way `k` says; returns its value, failing the test on
 * any error. */
static intptr_t wait_kind(sf_future *f, enum kind k)
{
    void *r = NULL;
    int rc;
    switch (k) {
    case K_GET:
        errno = 0;
        r = sf_get(f);
        ck_assert_int_eq(errno, 0);
        return (intptr_t)r;
    case K_WAIT:
        rc = sf_wait(f, &r);
        break;
    case K_WAIT_FOR_INF:
        rc = sf_wait_for(f, &r, INFINITY);
        break;
    default: /* finite slices, until done */
        while ((rc = sf_wait_for(f, &r, 0.01)) == ETIMEDOUT)
            ;
        break;
    }
    ck_assert_int_eq(rc, 0);
    return (intptr_t)r;
}

struct peer {
    int n;
    enum kind kind;
    sf_future **in, **out;
};

static struct peer *the_peer;

static void *answer(void *arg)
{
    intptr_t i = (intptr_t)arg;
    intptr_t v = (intptr_t)sf_get(the_peer->in[i]);
    ck_assert_int_eq(v, i);
    ck_assert_int_eq(sf_promise_set(the_peer->out[i], (void *)(v + 1000)), 0);
    return (void *)(2 * v);
}

static void *peer_main(void *arg)
{
    struct peer *p = arg;
    for (int i = 0; i < p->n; i++) {
        if (i >= WINDOW) {
            intptr_t v = wait_kind(p->out[i - WINDOW], (enum kind)((p->kind + i) % K_KINDS));
            ck_assert_int_eq(v, i - WINDOW + 1000);
        }
        ck_assert_int_eq(sf_promise_set(p->in[i], (void *)(intptr_t)i), 0);
    }
    return NULL;
}

static const int threads_of[] = {1, 2, 4};

/* _i: threads (1, 2, 4) times sizes; kinds rotate with the item. */
static void peer_shape(int threads, int n, enum kind kind)
{
    tu_env_threads(threads);
    struct peer p = {n, kind, calloc((size_t)n, sizeof(sf_future *)),
                     calloc((size_t)n, sizeof(sf_future *))};
    ck_assert_ptr_nonnull(p.in);
    ck_assert_ptr_nonnull(p.out);
    for (int i = 0; i < n; i++) {
        p.in[i] = sf_promise();
        p.out[i] = sf_promise();
        ck_assert_ptr_nonnull(p.in[i]);
        ck_assert_ptr_nonnull(p.out[i]);
    }
    the_peer = &p;
    sf_future **fs = calloc((size_t)n, sizeof *fs);
    ck_assert_ptr_nonnull(fs);
    for (int i = 0; i < n; i++)
        ck_assert_ptr_nonnull(fs[i] = sf_do(answer, (void *)(intptr_t)i));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, peer_main, &p), 0);
    for (int i = 0; i < n; i++) {
        /* Not K_WAIT_FOR_LOOP: at SF_THREADS=1 a finite wait never runs the
         * task, and nobody else would. */
        ck_assert_int_eq(wait_kind(fs[i], (enum kind)((kind + 2 * i) % K_WAIT_FOR_LOOP)), 2 * i);
        sf_release(fs[i]);
    }
    pthread_join(t, NULL);
    for (int i = 0; i < n; i++) {
        sf_release(p.in[i]);
        sf_release(p.out[i]);
    }
    sf_shutdown();
    free(fs);
    free(p.in);
    free(p.out);
}

START_TEST(peer_small)
{
    for (int k = 0; k < K_KINDS; k++)
        peer_shape(threads_of[_i], 20, (enum kind)k);
}
END_TEST

START_TEST(peer_600)
{
    for (int k = 0; k < K_KINDS; k++)
        peer_shape(threads_of[_i], 600, (enum kind)k);
}
END_TEST

START_TEST(peer_10000)
{
    peer_shape(threads_of[_i], 10000, K_GET);
    peer_shape(threads_of[_i], 10000, K_WAIT_FOR_INF);
}
END_TEST

static Suite *feed_suite(void)
{
    Suite *s = suite_create("feed");
    TCase *tc = tcase_create("feed");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, peer_small, 0, 3);
    tcase_add_loop_test(tc, peer_600, 0, 3);
    tcase_add_loop_test(tc, peer_10000, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(feed_suite)
