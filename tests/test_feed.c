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
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/*
 * A grid of handed futures, waited for every way. ROWS plain threads each
 * make one row of lazy tasks; cell (r, c) gets its left neighbour (r, c-1),
 * made by the same thread, and the cell above (r-1, c), made by another
 * thread and handed over, with a wait kind drawn at random per cell and
 * edge, and returns their sum + 1 - so each cell's value is exact (a
 * binomial sum) and any lost or doubled run shows. Once every row is made
 * (a barrier), each thread gets its row's cells in a random order with
 * random plain-code wait kinds, while promises of a "peer" column feed
 * column 0: cell (r, 0) also waits for promise in[r], which thread r - 1
 * sets only once its own wait for cell (r - 1, 0) has returned - each
 * thread feeds the next and waits. No cycle of gets: it must end, exact,
 * at every SF_THREADS. SF_FEED_SEED=S repeats a run; SF_FEED_ROUNDS=N runs
 * N rounds (tools/soak runs hundreds).
 */
#define ROWS 4
#define COLS 24

enum task_kind { T_GET, T_WAIT, T_FOR_INF, T_ANY_INF, T_ALL_INF, T_KINDS };

struct cell {
    int r, c;
    unsigned kinds; /* the wait kinds of its two edges */
};

static struct cell cells[ROWS][COLS];
static sf_future *_Atomic grid[ROWS][COLS];
static sf_future *in_promise[ROWS];
static long expect_v[ROWS][COLS];
static atomic_long grid_wrong;

/* A task's wait for g, of kind k: g's value (a wrong one counted). */
static long task_wait(sf_future *g, int k)
{
    void *r = NULL;
    int rc = 0, which = -1;
    sf_future *const one[1] = {g};
    switch (k) {
    case T_GET:
        errno = 0;
        r = sf_get(g);
        rc = errno;
        break;
    case T_WAIT: rc = sf_wait(g, &r); break;
    case T_FOR_INF: rc = sf_wait_for(g, &r, INFINITY); break;
    case T_ANY_INF:
        rc = sf_wait_any(one, 1, INFINITY, &which);
        if (rc == 0)
            rc = sf_wait(g, &r);
        break;
    default:
        rc = sf_wait_all(one, 1, INFINITY);
        if (rc == 0)
            rc = sf_wait(g, &r);
        break;
    }
    if (rc != 0)
        atomic_fetch_add(&grid_wrong, 1);
    return (long)(intptr_t)r;
}

static void *cell_task(void *arg)
{
    struct cell *x = arg;
    long v = 1;
    if (x->c > 0)
        v += task_wait(atomic_load(&grid[x->r][x->c - 1]), (int)(x->kinds % T_KINDS));
    else if (x->r > 0)
        v += task_wait(in_promise[x->r], (int)(x->kinds % T_KINDS)) - 1;
    if (x->r > 0)
        v += task_wait(atomic_load(&grid[x->r - 1][x->c]), (int)(x->kinds / T_KINDS % T_KINDS));
    if (v != expect_v[x->r][x->c])
        atomic_fetch_add(&grid_wrong, 1);
    return (void *)(intptr_t)v;
}

static pthread_barrier_t grid_made;

struct row_arg {
    int r;
    unsigned seed;
};

static unsigned next_rand(unsigned *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void *row_main(void *arg)
{
    struct row_arg *a = arg;
    int r = a->r;
    unsigned seed = a->seed;
    for (int c = 0; c < COLS; c++) {
        cells[r][c] = (struct cell){r, c, next_rand(&seed) % (T_KINDS * T_KINDS)};
        sf_future *f = sf_do(cell_task, &cells[r][c]);
        ck_assert_ptr_nonnull(f);
        atomic_store(&grid[r][c], f);
    }
    pthread_barrier_wait(&grid_made);
    /* Column 0 first, in order: the feed of the next row follows it. */
    int k0 = (int)(next_rand(&seed) % K_WAIT_FOR_LOOP);
    if (wait_kind(atomic_load(&grid[r][0]), (enum kind)k0) != expect_v[r][0])
        atomic_fetch_add(&grid_wrong, 1);
    if (r + 1 < ROWS)
        ck_assert_int_eq(sf_promise_set(in_promise[r + 1], (void *)1), 0);
    /* The rest in a random order. */
    int order[COLS];
    for (int c = 0; c < COLS; c++)
        order[c] = c;
    for (int c = COLS - 1; c > 1; c--) {
        int j = 1 + (int)(next_rand(&seed) % (unsigned)c);
        int t = order[c];
        order[c] = order[j];
        order[j] = t;
    }
    for (int i = 1; i < COLS; i++) {
        int c = order[i];
        int k = (int)(next_rand(&seed) % K_WAIT_FOR_LOOP);
        if (wait_kind(atomic_load(&grid[r][c]), (enum kind)k) != expect_v[r][c])
            atomic_fetch_add(&grid_wrong, 1);
    }
    return NULL;
}

static void grid_round(unsigned seed)
{
    atomic_store(&grid_wrong, 0);
    for (int r = 0; r < ROWS; r++) {
        in_promise[r] = r > 0 ? sf_promise() : NULL;
        if (r > 0)
            ck_assert_ptr_nonnull(in_promise[r]);
    }
    ck_assert_int_eq(pthread_barrier_init(&grid_made, NULL, ROWS), 0);
    pthread_t t[ROWS];
    struct row_arg a[ROWS];
    for (int r = 0; r < ROWS; r++) {
        a[r] = (struct row_arg){r, seed * 2654435761u + (unsigned)r * 40503u + 1u};
        ck_assert_int_eq(pthread_create(&t[r], NULL, row_main, &a[r]), 0);
    }
    for (int r = 0; r < ROWS; r++)
        ck_assert_int_eq(pthread_join(t[r], NULL), 0);
    pthread_barrier_destroy(&grid_made);
    ck_assert_msg(atomic_load(&grid_wrong) == 0, "seed %u: %ld waits failed or values wrong",
                  seed, atomic_load(&grid_wrong));
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++)
            sf_release(atomic_load(&grid[r][c]));
        if (r > 0)
            sf_release(in_promise[r]);
    }
}

/* _i: SF_THREADS 1, 2, 4. */
START_TEST(grid_of_mixed_waits)
{
    tu_env_threads(threads_of[_i]);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            expect_v[r][c] = 1 + (c > 0 ? expect_v[r][c - 1] : 0) + (r > 0 ? expect_v[r - 1][c] : 0);
    const char *env = getenv("SF_FEED_SEED");
    unsigned seed = env != NULL ? (unsigned)strtoul(env, NULL, 10)
                                : (unsigned)tu_now_ms() ^ (unsigned)getpid();
    if (seed == 0)
        seed = 1;
    const char *rounds_env = getenv("SF_FEED_ROUNDS");
    long rounds = rounds_env != NULL ? strtol(rounds_env, NULL, 10) : 20;
    printf("# grid_of_mixed_waits: SF_THREADS=%d, seed %u, %ld rounds\n", threads_of[_i], seed,
           rounds);
    fflush(stdout);
    for (long i = 0; i < rounds; i++)
        grid_round(seed + (unsigned)i);
    sf_shutdown();
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
    TCase *tg = tcase_create("grid");
    tcase_set_timeout(tg, 120);
    tcase_add_loop_test(tg, grid_of_mixed_waits, 0, 3);
    suite_add_tcase(s, tg);
    return s;
}

TU_MAIN(feed_suite)
