/* tools/install/consumer_mpi.c - make installcheck's program for the
 * installed libsf-mpi, built with `pkg-config sf-mpi` and run at one rank:
 * a message to itself through futures, in every progress mode. */
#include <stdio.h>

#include <sf_mpi.h>

int main(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS ||
        provided < MPI_THREAD_MULTIPLE)
        return 1;
    long sum = 0;
    for (int mode = SF_MPI_PROGRESS_AUTO; mode <= SF_MPI_PROGRESS_THREAD; mode++) {
        sf_mpi_config cfg = {.progress = mode};
        if (sf_mpi_init(&cfg) != 0)
            return 2;
        int out = 20 + mode, in = 0;
        sf_future *r = sf_mpi_irecv(&in, 1, MPI_INT, 0, 5, MPI_COMM_SELF, NULL);
        sf_future *s = sf_mpi_isend(&out, 1, MPI_INT, 0, 5, MPI_COMM_SELF);
        if (r == NULL || s == NULL || sf_wait(r, NULL) != 0 || sf_wait(s, NULL) != 0)
            return 3;
        sf_release(r);
        sf_release(s);
        if (sf_mpi_finalize(1) != 0)
            return 4;
        sum += in;
    }
    sf_shutdown();
    MPI_Finalize();
    printf("libsf-mpi: %ld\n", sum);
    return 0;
}
