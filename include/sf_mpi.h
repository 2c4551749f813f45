/*
 * sf_mpi.h - libsf-mpi: MPI requests as libsf futures.
 *
 * One libsf process per node, MPI between them. Each nonblocking MPI request
 * handed to libsf-mpi becomes a future that is done when MPI completes the
 * request, so a task or plain code waits for a message as it waits for a
 * task: sf_get(), sf_wait_for(), sf_do_after(). Requests progress through
 * libsf's idle hook (sf_on_idle(): idle workers and waiting gets call MPI)
 * and, where no libsf thread is idle, through a progress thread with a
 * bounded back-off (docs/mpi.md). libsf does not move tasks or data between
 * ranks: each rank runs its own runtime.
 *
 * Link with -lsf-mpi -lsf and MPI (pkg-config sf-mpi). Needs MPI initialised
 * with MPI_THREAD_MULTIPLE: any thread may call these functions while the
 * progress side calls MPI_Testsome.
 *
 * Errors: as sf.h - -1 or NULL with errno. A request MPI fails makes a
 * failed future: sf_get() returns NULL with errno SF_MPI_ERRNO(class), class
 * being the MPI error class, and sf_error_message() gives the call and
 * MPI_Error_string()'s text.
 */
#ifndef SF_MPI_H
#define SF_MPI_H

#include <mpi.h>
#include <sf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The failure code of a future whose request MPI failed with error class
 * `cls` (MPI_Error_class()): above every errno value, so a getter tells an
 * MPI failure from libsf's own (ECANCELED and the like). */
#define SF_MPI_ERRNO_BASE 0x4d5000
#define SF_MPI_ERRNO(cls) (SF_MPI_ERRNO_BASE + (cls))
/* The MPI error class of a failure code, or -1 if it is not an MPI one. */
#define SF_MPI_ERROR_CLASS(code) \
    ((code) >= SF_MPI_ERRNO_BASE && (code) <= SF_MPI_ERRNO_BASE + 0xfff \
         ? (code) - SF_MPI_ERRNO_BASE : -1)

/* Who calls MPI to progress requests (docs/mpi.md, Progress). */
enum sf_mpi_progress {
    SF_MPI_PROGRESS_FROM_ENV = 0, /* read SF_MPI_PROGRESS (auto, hook, thread); else auto */
    SF_MPI_PROGRESS_AUTO = 1,     /* the idle hook, and the progress thread when no libsf
                                   * thread has polled for a while */
    SF_MPI_PROGRESS_HOOK = 2,     /* the idle hook only: no thread (a request nobody
                                   * waits for progresses only while a libsf thread is idle) */
    SF_MPI_PROGRESS_THREAD = 3    /* the progress thread only: no idle hook */
};

/* Configuration for sf_mpi_init(). A zeroed one is the default. */
typedef struct sf_mpi_config {
    /* enum sf_mpi_progress. */
    int progress;
    /* Seconds the progress thread sleeps at most between two polls while
     * requests are in flight (its back-off's bound). 0: 0.001. Valid: 0 or
     * 1e-6..1. */
    double max_nap;
    /* Nonzero: leave the communicators' error handlers alone. Zero (the
     * default): sf_mpi_init() sets MPI_ERRORS_RETURN on MPI_COMM_WORLD and
     * MPI_COMM_SELF, and sf_mpi_finalize() restores theirs, so that an MPI
     * call that fails fails its future instead of aborting the job. */
    int keep_errhandler;
} sf_mpi_config;

/* Starts libsf-mpi in this process: after MPI_Init_thread() granted
 * MPI_THREAD_MULTIPLE, before any other call here; starts libsf's runtime if
 * needed and installs libsf's idle hook (sf_on_idle()) unless cfg->progress
 * says thread. cfg NULL: a zeroed config. Returns 0, or -1 with errno:
 * EINVAL (a cfg field out of range, or SF_MPI_PROGRESS bad: one stderr line
 * names it), ENOTSUP (MPI is not initialised, is finalised, or granted less
 * than MPI_THREAD_MULTIPLE), EALREADY (started already), EBUSY (another
 * idle hook is installed), or as sf_init(). */
int sf_mpi_init(const sf_mpi_config *cfg);

/* Stops libsf-mpi: progresses the requests in flight for up to `seconds`
 * (0: not at all; INFINITY: until all are done), then cancels the rest
 * (MPI_Cancel, then the request is freed): their futures fail with
 * ECANCELED. Removes the idle hook and stops the progress thread, so the
 * caller may then call MPI_Finalize(). sf_mpi_init() may start it again.
 * Returns the number of requests it cancelled, or -1 with errno: EINVAL
 * (not started, or seconds negative or NaN), EDEADLK (called from libsf's
 * idle hook). */
long sf_mpi_finalize(double seconds);

/* Hands request *req to libsf-mpi and returns a future done when MPI
 * completes it: its value is `status` (which MPI then filled), or NULL for
 * a NULL status or MPI_STATUS_IGNORE. *req becomes MPI_REQUEST_NULL: the
 * request is libsf-mpi's, and the caller must not test, wait or free it.
 * MPI_REQUEST_NULL gives a future done at once (status, if given, empty, as
 * MPI_Wait() leaves it). The caller holds the future as one from sf_do()
 * and releases it; a future released before its request completes is freed
 * when it completes. sf_cancel() of it completes it with ECANCELED at once;
 * the request stays with MPI until MPI completes it (a receive still takes
 * a message) or sf_mpi_finalize() cancels it (libsf gives a promise's
 * setter no look at a cancel before its own call). status, and the
 * request's buffer, must stay valid until the request completes: until the
 * future is done, or, once it is cancelled, until sf_mpi_finalize()
 * returns. Returns the future, or NULL with errno: EINVAL (req NULL,
 * or libsf-mpi not started), ENOMEM or EAGAIN (as sf_promise(); *req is
 * then left to the caller). */
sf_future *sf_mpi_request(MPI_Request *req, MPI_Status *status);

/* MPI_Isend() of MPI's arguments, as a future (sf_mpi_request()). A send
 * MPI refuses at once gives a failed future (SF_MPI_ERRNO), never a hang.
 * buf must stay valid and unchanged until the request completes
 * (sf_mpi_request()). Returns the future, or NULL with errno as
 * sf_mpi_request(). */
sf_future *sf_mpi_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                        MPI_Comm comm);

/* MPI_Irecv() of MPI's arguments, as a future (sf_mpi_request()) whose
 * value is status. A receive MPI refuses at once (an invalid rank, say)
 * gives a failed future, never a hang. buf and status must stay valid until
 * the request completes (sf_mpi_request()). Returns the future, or NULL
 * with errno as sf_mpi_request(). */
sf_future *sf_mpi_irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
                        MPI_Comm comm, MPI_Status *status);

#ifdef __cplusplus
}
#endif

#endif /* SF_MPI_H */
