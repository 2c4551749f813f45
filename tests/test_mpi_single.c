/*
 * test_mpi_single.c - sf_mpi_init() refuses an MPI that cannot serve it
 * (ENOTSUP): not initialised yet, initialised with MPI_THREAD_SINGLE, and
 * finalised. One rank (tests/test-mpi.sh runs it under mpiexec -np 1); the
 * TAP goes to $SF_MPI_TAP. CK_NOFORK: the MPI states follow each other in
 * one process, in the order of the tests.
 */
#include <errno.h>
#include <stdlib.h>

#include <sf_mpi.h>

#include "testutil.h"

static int argc_;
static char **argv_;

START_TEST(before_init)
{
    int inited = 1;
    MPI_Initialized(&inited);
    ck_assert_int_eq(inited, 0);
    errno = 0;
    ck_assert_int_eq(sf_mpi_init(NULL), -1);
    ck_assert_int_eq(errno, ENOTSUP);
}
END_TEST

START_TEST(thread_single)
{
    int provided = -1;
    ck_assert_int_eq(MPI_Init_thread(&argc_, &argv_, MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    ck_assert_int_lt(provided, MPI_THREAD_MULTIPLE);
    sf_mpi_config cfg = {.progress = SF_MPI_PROGRESS_THREAD};
    errno = 0;
    ck_assert_int_eq(sf_mpi_init(&cfg), -1);
    ck_assert_int_eq(errno, ENOTSUP);
    /* Refused, it left the error handler alone. */
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    ck_assert(eh == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);
}
END_TEST

START_TEST(after_finalize)
{
    ck_assert_int_eq(MPI_Finalize(), MPI_SUCCESS);
    errno = 0;
    ck_assert_int_eq(sf_mpi_init(NULL), -1);
    ck_assert_int_eq(errno, ENOTSUP);
    errno = 0;
    ck_assert_int_eq(sf_mpi_finalize(0), -1);
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

static Suite *single_suite(void)
{
    Suite *s = suite_create("mpi_single");
    TCase *tc = tcase_create("mpi_single");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, before_init);
    tcase_add_test(tc, thread_single);
    tcase_add_test(tc, after_finalize);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    argc_ = argc;
    argv_ = argv;
    SRunner *sr = srunner_create(single_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    const char *tap = getenv("SF_MPI_TAP");
    srunner_set_tap(sr, tap != NULL ? tap : "-");
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    sf_shutdown();
    return failed == 0 ? 0 : 1;
}
