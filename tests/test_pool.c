/*
 * test_pool.c - idle pool workers find the work that gets submit, whatever
 * order the program gets its futures in.
 *
 * Getting futures in the order they were made (oldest first) is how users
 * write loops over results, and it leaves finished tasks at the top of the
 * maker's queue when a worker took them: only the owner trims the top, and
 * a worker scans a bounded window from it. Before workers asked the owner
 * to trim (sf__pending_steal sets `want` when its window ends before the
 * bottom; the owner's poll trims, and wakes a worker when the top moved),
 * the worker ran exactly one window's worth - 256 tasks - of any such loop
 * and then slept while the main thread ran the rest.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

#define TASKS 4000

/* About 10 us of arithmetic. */
static void *work(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg;
    for (int i = 0; i < 10000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : "+r"(x));
    }
    return (void *)(uintptr_t)(x | 1);
}

/*
 * At SF_THREADS=2: 4,000 tasks of ~10 us made, then got in order. The worker
 * should run about half. It must run more than 800 (a fifth): far above the
 * 256 a stuck worker runs, far below half, so a loaded machine that slows
 * the worker cannot fail it.
 */
START_TEST(worker_shares_a_loop_of_in_order_gets)
{
    tu_env_threads(2);
    sf_future **f = malloc(TASKS * sizeof *f);
    ck_assert_ptr_nonnull(f);
    for (int round = 0; round < 2; round++) {
        sf_stats a, b;
        ck_assert_int_eq(round == 0 ? sf_init(NULL) : 0, 0);
        ck_assert_int_eq(sf_stats_read(&a), 0);
        for (int i = 0; i < TASKS; i++)
            ck_assert_ptr_nonnull(f[i] = sf_do(work, (void *)(uintptr_t)i));
        for (int i = 0; i < TASKS; i++) {
            if (sf_get(f[i]) == NULL)
                ck_abort_msg("task %d returned NULL", i);
            sf_release(f[i]);
        }
        ck_assert_int_eq(sf_stats_read(&b), 0);
        uint64_t pool = b.run_pool - a.run_pool;
        printf("# round %d: the worker ran %llu of %d tasks, the main thread %llu inline and "
               "%llu helping\n", round, (unsigned long long)pool, TASKS,
               (unsigned long long)(b.run_inline - a.run_inline),
               (unsigned long long)(b.run_stolen - a.run_stolen));
        ck_assert_uint_gt(pool, TASKS / 5);
    }
    free(f);
    tu_stats_quiet();
    sf_shutdown();
}
END_TEST

static Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, worker_shares_a_loop_of_in_order_gets);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(pool_suite)
