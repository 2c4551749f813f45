/*
 * test_claim.c - the claim protocol of pending.h under direct contention.
 *
 * A task the owner has not published is private: the owner claims it with
 * plain stores, and any other thread that needs that very future (a foreign
 * sf_get, sf_release or sf_cancel, a helper that takes private work after
 * spinning) claims it through the Dekker protocol with the owner; a claim by
 * handle also opens the owner's gate and asks it to publish its pushes, so
 * later rounds race a CAS against the owner's claim (claim.h, Opening the
 * gate; the protocol's race round after round is test_pending's
 * owner_and_foreign_claim_race, the opening's opening_gate_races_owner_claims).
 * These tests make the owner and several foreign threads race for the same
 * future over and over, in lock step, and check that every task ran exactly
 * once and that a future released by a foreign thread while the owner gets
 * another one is discarded exactly once. A broken protocol shows up as a
 * count of 2 (both claimed) or 0 (nobody did); ThreadSanitizer builds see the
 * double run as a race on the future's value. The last ones hand a queue of
 * private tasks over at once: the first claim by handle opens the owner's
 * gate, and the owner's own gets race the consumer's; and a thread that takes
 * an exited thread's queue over finds the gate closed again.
 */
#include "testutil.h"

#include <string.h>

#define ROUNDS (TU_SANITIZED ? 1500 : 20000)
#define RACERS 3

static atomic_int runs[ROUNDS];
static sf_future *_Atomic current;
static pthread_barrier_t start_line, finish_line;
static atomic_long wrong;

static void *counted(void *arg)
{
    atomic_fetch_add(&runs[(long)arg], 1);
    return (void *)((long)arg * 2 + 1);
}

static void spin_ns(unsigned ns)
{
    double end = tu_now_ms() + ns / 1e6;
    while (tu_now_ms() < end)
        ;
}

/* Each round: wait for the owner's new future, race it with sf_get. */
static void *racer(void *arg)
{
    (void)arg;
    for (long i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&start_line);
        sf_future *f = atomic_load(&current);
        if (sf_get(f) != (void *)(i * 2 + 1))
            atomic_fetch_add(&wrong, 1);
        pthread_barrier_wait(&finish_line);
    }
    return NULL;
}

static void race_gets(int threads)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(pthread_barrier_init(&start_line, NULL, RACERS + 1), 0);
    ck_assert_int_eq(pthread_barrier_init(&finish_line, NULL, RACERS + 1), 0);
    pthread_t tid[RACERS];
    for (int k = 0; k < RACERS; k++)
        ck_assert_int_eq(pthread_create(&tid[k], NULL, racer, NULL), 0);
    for (long i = 0; i < ROUNDS; i++) {
        sf_future *f = sf_do(counted, (void *)i); /* private: nobody asked for it */
        ck_assert_ptr_nonnull(f);
        atomic_store(&current, f);
        pthread_barrier_wait(&start_line);
        /* A racer's foreign claim spends a microsecond or so in membarrier;
         * start our get at varying points of it, so that across the rounds
         * the owner's claim meets the racers' at every stage of theirs. */
        spin_ns((unsigned)(i * 7919 % 4000));
        void *v = sf_get(f); /* the owner's plain claim races the racers' */
        pthread_barrier_wait(&finish_line);
        ck_assert_ptr_eq(v, (void *)(i * 2 + 1));
        sf_release(f);
    }
    for (int k = 0; k < RACERS; k++)
        ck_assert_int_eq(pthread_join(tid[k], NULL), 0);
    ck_assert_int_eq(atomic_load(&wrong), 0);
    for (long i = 0; i < ROUNDS; i++)
        if (atomic_load(&runs[i]) != 1)
            ck_abort_msg("task %ld ran %d times, want 1", i, atomic_load(&runs[i]));
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, ROUNDS);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, ROUNDS);
    ck_assert_uint_eq(s.discarded, 0);
    pthread_barrier_destroy(&start_line);
    pthread_barrier_destroy(&finish_line);
    sf_shutdown();
}

START_TEST(owner_and_foreign_gets_race_one_thread) { race_gets(1); }
END_TEST

START_TEST(owner_and_foreign_gets_race_two_threads) { race_gets(2); }
END_TEST

/* Each round the owner queues two private tasks; a foreign thread releases
 * the older one (a foreign discard through the protocol) while the owner
 * gets the newer one, which walks and trims the same queue. The released
 * task never runs; the got one runs once. */
static sf_future *_Atomic doomed;

static void *releaser(void *arg)
{
    (void)arg;
    for (long i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&start_line);
        sf_release(atomic_load(&doomed));
        pthread_barrier_wait(&finish_line);
    }
    return NULL;
}

START_TEST(foreign_release_races_owner_get)
{
    tu_env_threads(1);
    ck_assert_int_eq(sf_init(NULL), 0);
    ck_assert_int_eq(pthread_barrier_init(&start_line, NULL, 2), 0);
    ck_assert_int_eq(pthread_barrier_init(&finish_line, NULL, 2), 0);
    static atomic_int kept[ROUNDS];
    pthread_t tid;
    ck_assert_int_eq(pthread_create(&tid, NULL, releaser, NULL), 0);
    for (long i = 0; i < ROUNDS; i++) {
        sf_future *d = sf_do(counted, (void *)i);
        sf_future *k = sf_do(counted, (void *)(ROUNDS - 1 - i));
        ck_assert_ptr_nonnull(d);
        ck_assert_ptr_nonnull(k);
        atomic_store(&doomed, d);
        pthread_barrier_wait(&start_line);
        /* Our get of k submits d too and walks the queue; the releaser
         * claims d for nobody at the same time. */
        ck_assert_ptr_eq(sf_get(k), (void *)((ROUNDS - 1 - i) * 2 + 1));
        pthread_barrier_wait(&finish_line);
        atomic_fetch_add(&kept[ROUNDS - 1 - i], 1);
        sf_release(k);
    }
    ck_assert_int_eq(pthread_join(tid, NULL), 0);
    /* Task index j ran once as the kept task of round ROUNDS-1-j, and never
     * as the doomed task of round j. */
    for (long j = 0; j < ROUNDS; j++)
        if (atomic_load(&runs[j]) != 1)
            ck_abort_msg("task %ld ran %d times, want 1 (kept once, discarded once)", j,
                         atomic_load(&runs[j]));
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2 * ROUNDS);
    ck_assert_uint_eq(s.discarded, ROUNDS);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, ROUNDS);
    pthread_barrier_destroy(&start_line);
    pthread_barrier_destroy(&finish_line);
    sf_shutdown();
}
END_TEST

/* A producer queues BATCH tasks, nobody having asked for any, and hands
 * them all over; a consumer gets them in order while the producer computes
 * (own_too = 0) or gets them itself, newest first (own_too = 1). */
#define BATCH ROUNDS
static sf_future *handed[BATCH];
static atomic_int handed_ready, handed_got;

static void *catch_up(void *arg)
{
    while (!atomic_load(&handed_ready))
        ;
    if (arg != NULL) { /* drops them all, unrun (own_too = 2) */
        for (long i = 0; i < BATCH; i++) {
            sf_release(handed[i]);
            atomic_fetch_add(&handed_got, 1);
        }
        return NULL;
    }
    for (long i = 0; i < BATCH; i++) {
        if (sf_get(handed[i]) != (void *)(i * 2 + 1))
            atomic_fetch_add(&wrong, 1);
        atomic_fetch_add(&handed_got, 1);
    }
    return NULL;
}

/* own_too = 2: the consumer releases every future instead, and the
 * producer computes; none runs. */
static void hand_over_a_queue(int threads, int own_too)
{
    tu_env_threads(threads);
    ck_assert_int_eq(sf_init(NULL), 0);
    atomic_store(&handed_ready, 0);
    atomic_store(&handed_got, 0);
    pthread_t tid;
    ck_assert_int_eq(pthread_create(&tid, NULL, catch_up, own_too == 2 ? (void *)1 : NULL), 0);
    for (long i = 0; i < BATCH; i++) {
        handed[i] = sf_do(counted, (void *)i);
        ck_assert_ptr_nonnull(handed[i]);
    }
    atomic_store(&handed_ready, 1);
    if (own_too == 1) {
        for (long i = BATCH - 1; i >= 0; i--)
            ck_assert_ptr_eq(sf_get(handed[i]), (void *)(i * 2 + 1));
    } else {
        /* Computing, no libsf call: only the consumer's gets run them. */
        while (atomic_load(&handed_got) < BATCH)
            ;
    }
    ck_assert_int_eq(pthread_join(tid, NULL), 0);
    ck_assert_int_eq(atomic_load(&wrong), 0);
    int want = own_too == 2 ? 0 : 1;
    for (long i = 0; i < BATCH; i++) {
        if (atomic_load(&runs[i]) != want)
            ck_abort_msg("task %ld ran %d times, want %d", i, atomic_load(&runs[i]), want);
        if (own_too != 2)
            sf_release(handed[i]);
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, BATCH);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, own_too == 2 ? 0 : BATCH);
    ck_assert_uint_eq(s.discarded, own_too == 2 ? BATCH : 0);
    sf_shutdown();
}

START_TEST(consumer_catches_up_with_a_busy_producer) { hand_over_a_queue(2, 0); }
END_TEST

START_TEST(owner_gets_a_queue_it_handed_over) { hand_over_a_queue(1, 1); }
END_TEST

START_TEST(owner_gets_a_queue_it_handed_over_two_threads) { hand_over_a_queue(2, 1); }
END_TEST

START_TEST(consumer_releases_a_queue_unrun) { hand_over_a_queue(2, 2); }
END_TEST

/* Eight consumers get a busy producer's queued tasks at once, each every
 * eighth: several race to open the gate (one opens it under flock, the
 * others find it open) and then CAS against each other. Every task runs
 * once. */
#define CONSUMERS 8
static atomic_int consumers_done;

static void *slice_consumer(void *arg)
{
    long k = (long)arg;
    while (!atomic_load(&handed_ready))
        ;
    for (long i = k; i < BATCH; i += CONSUMERS)
        if (sf_get(handed[i]) != (void *)(i * 2 + 1))
            atomic_fetch_add(&wrong, 1);
    atomic_fetch_add(&consumers_done, 1);
    return NULL;
}

START_TEST(many_consumers_open_one_gate)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t tid[CONSUMERS];
    for (long k = 0; k < CONSUMERS; k++)
        ck_assert_int_eq(pthread_create(&tid[k], NULL, slice_consumer, (void *)k), 0);
    for (long i = 0; i < BATCH; i++)
        ck_assert_ptr_nonnull(handed[i] = sf_do(counted, (void *)i));
    atomic_store(&handed_ready, 1);
    while (atomic_load(&consumers_done) < CONSUMERS) /* computing: no libsf call */
        ;
    for (int k = 0; k < CONSUMERS; k++)
        ck_assert_int_eq(pthread_join(tid[k], NULL), 0);
    ck_assert_int_eq(atomic_load(&wrong), 0);
    for (long i = 0; i < BATCH; i++) {
        if (atomic_load(&runs[i]) != 1)
            ck_abort_msg("task %ld ran %d times, want 1", i, atomic_load(&runs[i]));
        sf_release(handed[i]);
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, BATCH);
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, BATCH);
    sf_shutdown();
}
END_TEST

/* A queue whose gate was opened outlives its thread: a producer queues
 * ADOPT_N tasks, a consumer gets them all (opening the producer's gate) and
 * the producer exits. A new thread takes its struct over, queue included:
 * the gate is closed again, so its fork-join claims are plain, and it hands
 * its own tasks to the same consumer, whose first get opens the gate anew
 * while the new thread gets them too, newest first. Every task runs once,
 * every value exact. */
#define ADOPT_N (ROUNDS / 4)
static sf_future *adopt_a[ADOPT_N], *adopt_c[ADOPT_N];
static atomic_int a_ready, a_taken, c_ready, runs_c[ADOPT_N];
static int idx_a, idx_c;

static void *counted_c(void *arg)
{
    atomic_fetch_add(&runs_c[(long)arg], 1);
    return (void *)((long)arg * 2 + 1);
}

static void *first_producer(void *arg)
{
    (void)arg;
    idx_a = sf_thread_index();
    for (long i = 0; i < ADOPT_N; i++)
        adopt_a[i] = sf_do(counted, (void *)i);
    atomic_store(&a_ready, 1);
    while (atomic_load(&a_taken) < ADOPT_N)
        ;
    return NULL; /* exits with its queue empty: its struct may be taken over */
}

static void *second_producer(void *arg)
{
    (void)arg;
    idx_c = sf_thread_index();
    if ((long)tu_fib((void *)15L) != tu_fib_exact(15))
        atomic_fetch_add(&wrong, 1);
    for (long i = 0; i < ADOPT_N; i++)
        adopt_c[i] = sf_do(counted_c, (void *)i);
    atomic_store(&c_ready, 1);
    for (long i = ADOPT_N - 1; i >= 0; i--)
        if (sf_get(adopt_c[i]) != (void *)(i * 2 + 1))
            atomic_fetch_add(&wrong, 1);
    if ((long)tu_fib((void *)15L) != tu_fib_exact(15))
        atomic_fetch_add(&wrong, 1);
    return NULL;
}

static void *adopt_consumer(void *arg)
{
    (void)arg;
    while (!atomic_load(&a_ready))
        ;
    for (long i = 0; i < ADOPT_N; i++) {
        if (sf_get(adopt_a[i]) != (void *)(i * 2 + 1))
            atomic_fetch_add(&wrong, 1);
        atomic_fetch_add(&a_taken, 1);
    }
    while (!atomic_load(&c_ready))
        ;
    for (long i = 0; i < ADOPT_N; i++)
        if (sf_get(adopt_c[i]) != (void *)(i * 2 + 1))
            atomic_fetch_add(&wrong, 1);
    return NULL;
}

START_TEST(a_queue_taken_over_starts_with_its_gate_closed)
{
    tu_env_threads(2);
    ck_assert_int_eq(sf_init(NULL), 0);
    pthread_t a, b, c;
    ck_assert_int_eq(pthread_create(&b, NULL, adopt_consumer, NULL), 0);
    ck_assert_int_eq(pthread_create(&a, NULL, first_producer, NULL), 0);
    ck_assert_int_eq(pthread_join(a, NULL), 0);
    ck_assert_int_eq(pthread_create(&c, NULL, second_producer, NULL), 0);
    ck_assert_int_eq(pthread_join(c, NULL), 0);
    ck_assert_int_eq(pthread_join(b, NULL), 0);
    ck_assert_int_eq(idx_c, idx_a); /* the same struct, queue and gate */
    ck_assert_int_eq(atomic_load(&wrong), 0);
    for (long i = 0; i < ADOPT_N; i++) {
        if (atomic_load(&runs[i]) != 1 || atomic_load(&runs_c[i]) != 1)
            ck_abort_msg("task %ld ran %d and %d times, want 1 and 1", i, atomic_load(&runs[i]),
                         atomic_load(&runs_c[i]));
        sf_release(adopt_a[i]);
        sf_release(adopt_c[i]);
    }
    sf_stats s = tu_stats_quiet();
    ck_assert_uint_eq(s.created, 2 * ADOPT_N + 2 * tu_fib_tasks(15));
    ck_assert_uint_eq(s.run_inline + s.run_pool + s.run_stolen, s.created);
    ck_assert_uint_eq(s.discarded, 0);
    sf_shutdown();
}
END_TEST

static Suite *claim_suite(void)
{
    Suite *s = suite_create("claim");
    TCase *tc = tcase_create("claim");
    tcase_set_timeout(tc, TU_SANITIZED ? 240 : 60);
    tcase_add_test(tc, owner_and_foreign_gets_race_one_thread);
    tcase_add_test(tc, owner_and_foreign_gets_race_two_threads);
    tcase_add_test(tc, foreign_release_races_owner_get);
    tcase_add_test(tc, consumer_catches_up_with_a_busy_producer);
    tcase_add_test(tc, owner_gets_a_queue_it_handed_over);
    tcase_add_test(tc, owner_gets_a_queue_it_handed_over_two_threads);
    tcase_add_test(tc, consumer_releases_a_queue_unrun);
    tcase_add_test(tc, many_consumers_open_one_gate);
    tcase_add_test(tc, a_queue_taken_over_starts_with_its_gate_closed);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(claim_suite)
