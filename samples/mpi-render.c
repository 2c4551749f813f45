/*
 * mpi-render - the granular piece (samples/audio/granular.c) low-pass
 * filtered over MPI ranks, every message a libsf future (libsf-mpi,
 * include/sf_mpi.h), written to a sound file by rank 0.
 *
 *     usage: mpi-render [-s SECONDS] [-r SEED] [-o OUT] [-q]
 *       -s  length of the piece, default 15 (0 < SECONDS <= 3600)
 *       -r  seed of the score, default 1
 *       -o  output path, default mpi-render.wav; its extension picks the
 *           format among libsndfile's (.wav, .flac, .aiff, ...; none: WAV)
 *       -q  no summary line
 *     mpiexec -np 4 samples/mpi-render -s 5 -o piece.flac
 *     samples/mpi-render             (one rank: no mpiexec needed)
 *
 * Rank 0 renders the piece block by block (BLOCK frames; each block the
 * future of a synthesis task that gets its clouds' tasks, which get their
 * grains', as in samples/sfpiece) a few blocks ahead, and sends block k,
 * with block k - 1 which its filter needs, to rank 1 + k % (ranks - 1):
 * round-robin over the other ranks. A filtering rank keeps WINDOW receives
 * posted; each received block is filtered by a continuation of its receive
 * (sf_do_after: an FFT low-pass by overlap-save, as samples/stream does, its
 * transforms libsf tasks, samples/audio/fft.h) and sent back. Rank 0 posts
 * the receive of a block's result before it sends the block, and writes the
 * results in order. Every send and receive is a future of libsf-mpi
 * (sf_mpi_isend, sf_mpi_irecv, sf_mpi_request of an MPI_Ibcast), got or
 * chained with sf_do_after; no MPI call waits for a message. At one rank
 * (or started without mpiexec) rank 0 runs the same filter as a task.
 *
 * The filter: a linear-phase low-pass FIR at an eighth of the sample rate,
 * BLOCK / 2 + 1 taps (a Blackman-windowed sinc, fft_lowpass), so the output
 * is the piece filtered and delayed by BLOCK / 4 frames, cut to the piece's
 * length, then through granular_limit(). Every output block is the same
 * floating-point operations on whichever rank and thread, so the file is
 * byte-identical at any number of ranks and any SF_THREADS.
 *
 * 44.1 kHz stereo, 16-bit PCM where the format holds it. Needs an MPI that
 * grants MPI_THREAD_MULTIPLE. SF_MPI_PROGRESS picks how requests progress
 * (docs/mpi.md). Prints one line at the end (rank 0, unless -q): the file,
 * its duration, the blocks, the ranks, the time from the first block to the
 * last write and the blocks per second over it. Exit status 0, 1 on a
 * failure (an output it cannot use, an MPI or libsf failure: one line on
 * stderr; a failure after the first block aborts the job), 2 on bad usage.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audio/args.h"
#include "audio/fft.h"
#include "audio/granular.h"
#include "audio/sound.h"
#include "sf.h"
#include "sf_mpi.h"

#define BLOCK 4096 /* frames per block: 93 ms, FFTs of 8192 points */
#define WINDOW 4   /* blocks in flight per filtering rank */
#define AHEAD 4    /* blocks rank 0 renders ahead of the one it sends */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* What every rank's filter shares: the plan and the filter's spectrum. */
typedef struct filter {
    fft_plan *plan;
    fft_cplx *H; /* 2 BLOCK points */
} filter;

/* One block in flight: on rank 0 at one rank, or on a filtering rank. The
 * buffers belong to the slot: a slot is reused only once its block's
 * receive, filter and send are all done. */
typedef struct slot {
    const filter *f;
    size_t k;          /* block number */
    fft_cplx *seg;     /* 2 BLOCK: block k - 1, then block k (the message in) */
    fft_cplx *spec;    /* 2 BLOCK: its transform times H */
    fft_cplx *out;     /* 2 BLOCK: back in time; out[BLOCK ..) is block k filtered */
    MPI_Status st;     /* the receive's */
    sf_future *recv;   /* the receive of seg (NULL at one rank) */
    sf_future *result; /* the filter's task (its value: the filtered block) or,
                        * on rank 0 with ranks, the receive of the filtered block */
    sf_future *send;   /* the send: of seg (rank 0) or of the filtered block */
} slot;

static int filter_new(filter *f)
{
    const size_t N = 2 * BLOCK, L = BLOCK / 2 + 1;
    fft_cplx *h = calloc(N, sizeof *h);
    f->plan = fft_plan_new(N, 0);
    f->H = malloc(N * sizeof *f->H);
    if (h == NULL || f->plan == NULL || f->H == NULL) {
        free(h);
        return -1;
    }
    fft_lowpass(h, L, 0.125); /* cycles per sample */
    fft_forward(f->plan, h, f->H, N);
    free(h);
    return 0;
}

/* The filter of one block, overlap-save: the transform of [block k - 1,
 * block k] times H, back; the second half is block k filtered. A task (a
 * continuation of the receive on a filtering rank): the transforms make
 * their own tasks. Returns the filtered block. */
static void *filter_task(void *arg)
{
    slot *s = arg;
    if (s->recv != NULL) {
        /* Done (a dependency): returns at once. */
        int e = sf_wait(s->recv, NULL);
        if (e != 0) {
            sf_fail(e, "block %zu: its receive: %s", s->k, sf_error_message(s->recv));
            return NULL;
        }
    }
    const size_t N = 2 * BLOCK;
    fft_forward(s->f->plan, s->seg, s->spec, N);
    for (size_t i = 0; i < N; i++)
        s->spec[i] *= s->f->H[i];
    fft_inverse(s->f->plan, s->spec, s->out, N);
    return s->out + BLOCK;
}

static slot *slots_new(size_t n, const filter *f)
{
    slot *s = calloc(n, sizeof *s);
    if (s == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        s[i].f = f;
        s[i].seg = malloc(2 * BLOCK * sizeof *s[i].seg);
        s[i].spec = malloc(2 * BLOCK * sizeof *s[i].spec);
        s[i].out = malloc(2 * BLOCK * sizeof *s[i].out);
        if (s[i].seg == NULL || s[i].spec == NULL || s[i].out == NULL)
            return NULL; /* the process ends: no need to free */
    }
    return s;
}

static void slots_free(slot *s, size_t n)
{
    for (size_t i = 0; s != NULL && i < n; i++) {
        free(s[i].seg);
        free(s[i].spec);
        free(s[i].out);
    }
    free(s);
}

static int rank, ranks;

/* A failure once the pipeline runs: other ranks wait for this one's
 * messages, so the job ends here. */
static _Noreturn void die(const char *what, const char *why)
{
    fprintf(stderr, "mpi-render: rank %d: %s: %s\n", rank, what, why);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Gets f, which must succeed; returns its value. */
static void *must(sf_future *f, const char *what)
{
    void *v = NULL;
    if (f == NULL)
        die(what, strerror(errno));
    int e = sf_wait(f, &v);
    if (e != 0)
        die(what, sf_error_message(f) != NULL ? sf_error_message(f) : strerror(e));
    return v;
}

/* The message tag of block k: MPI promises tags up to 32767. Blocks of one
 * pair of ranks go in order and at most WINDOW apart, so no two in flight
 * share one. */
static int tag_of(size_t k)
{
    return (int)(k % 32768);
}

/* A filtering rank: receives its blocks (k = rank - 1, + ranks - 1, ...),
 * filters each in a continuation of its receive, sends it back. */
static void filter_rank(const filter *f, size_t nblocks)
{
    const size_t step = (size_t)ranks - 1, first = (size_t)rank - 1;
    const size_t mine = nblocks > first ? (nblocks - first + step - 1) / step : 0;
    slot *s = slots_new(WINDOW, f);
    if (s == NULL)
        die("slots", strerror(ENOMEM));
    for (size_t i = 0; i < mine + WINDOW; i++) {
        if (i >= WINDOW) { /* finish the block of i - WINDOW: send it back */
            slot *b = &s[(i - WINDOW) % WINDOW];
            fft_cplx *y = must(b->result, "filter");
            b->send = sf_mpi_isend(y, 2 * BLOCK, MPI_DOUBLE, 0, tag_of(b->k), MPI_COMM_WORLD);
            if (b->send == NULL)
                die("sf_mpi_isend", strerror(errno));
            sf_release(b->result);
            sf_release(b->recv);
            b->result = b->recv = NULL;
        }
        if (i < mine) { /* start block i: its receive, its filter after it */
            slot *b = &s[i % WINDOW];
            if (b->send != NULL) { /* the slot's last block, on its way back */
                must(b->send, "send");
                sf_release(b->send);
                b->send = NULL;
            }
            b->k = first + i * step;
            b->recv = sf_mpi_irecv(b->seg, 4 * BLOCK, MPI_DOUBLE, 0, tag_of(b->k), MPI_COMM_WORLD,
                                   &b->st);
            if (b->recv == NULL)
                die("sf_mpi_irecv", strerror(errno));
            b->result = sf_do_after(&b->recv, 1, filter_task, b);
            if (b->result == NULL)
                die("sf_do_after", strerror(errno));
        }
    }
    for (size_t i = 0; i < WINDOW; i++)
        if (s[i].send != NULL) {
            must(s[i].send, "send");
            sf_release(s[i].send);
        }
    slots_free(s, WINDOW);
}

/* Rank 0: renders, sends, receives (or filters, at one rank) and writes. */
static int render_rank(const filter *f, const granular *g, size_t nblocks, sound_writer *w,
                       const char **why)
{
    const size_t frames = granular_frames(g);
    const size_t nslots = WINDOW * (ranks > 1 ? (size_t)ranks - 1 : 1);
    slot *s = slots_new(nslots, f);
    sf_future *ahead[AHEAD + 1] = {NULL};
    fft_cplx *prev = calloc(BLOCK, sizeof *prev); /* block -1: silence */
    double *buf = malloc(2 * BLOCK * sizeof *buf);
    if (s == NULL || prev == NULL || buf == NULL)
        die("render", strerror(ENOMEM));
    size_t made = 0; /* render futures made: blocks [0, made) */
    for (size_t k = 0; k < nblocks + nslots; k++) {
        if (k >= nslots) { /* write block k - nslots */
            const size_t j = k - nslots;
            slot *b = &s[j % nslots];
            const fft_cplx *y = must(b->result, "block");
            if (ranks > 1)
                y = b->out + BLOCK; /* the receive's buffer (its value is the status) */
            const size_t n = frames - j * BLOCK < BLOCK ? frames - j * BLOCK : BLOCK;
            const double *lr = (const double *)y; /* L + iR: interleaved left, right */
            for (size_t i = 0; i < 2 * n; i++)
                buf[i] = granular_limit(lr[i]);
            if (sound_write(w, buf, n, why) != 0)
                return -1;
            sf_release(b->result);
            b->result = NULL;
            if (b->send != NULL) {
                must(b->send, "send");
                sf_release(b->send);
                b->send = NULL;
            }
        }
        if (k >= nblocks)
            continue;
        /* Block k's synthesis, and those of the next AHEAD blocks: made now,
         * they are submitted by this get, so idle workers take them. */
        while (made < nblocks && made <= k + AHEAD) {
            ahead[made % (AHEAD + 1)] = granular_render(g, made * BLOCK, BLOCK);
            if (ahead[made % (AHEAD + 1)] == NULL)
                die("granular_render", strerror(errno));
            made++;
        }
        sf_future *r = ahead[k % (AHEAD + 1)];
        double *x = must(r, "synthesis");
        sf_release(r);
        slot *b = &s[k % nslots];
        b->k = k;
        memcpy(b->seg, prev, BLOCK * sizeof *prev);
        memcpy(b->seg + BLOCK, x, BLOCK * sizeof *prev);
        memcpy(prev, x, BLOCK * sizeof *prev);
        free(x);
        if (ranks == 1) {
            b->result = sf_do(filter_task, b);
        } else {
            /* The result's receive first, so the reply always finds it. */
            const int to = 1 + (int)(k % ((size_t)ranks - 1));
            b->result = sf_mpi_irecv(b->out + BLOCK, 2 * BLOCK, MPI_DOUBLE, to, tag_of(k),
                                     MPI_COMM_WORLD, &b->st);
            b->send = b->result == NULL ? NULL
                                        : sf_mpi_isend(b->seg, 4 * BLOCK, MPI_DOUBLE, to,
                                                       tag_of(k), MPI_COMM_WORLD);
            if (b->send == NULL)
                die("sf_mpi_isend/irecv", strerror(errno));
        }
        if (b->result == NULL)
            die("sf_do", strerror(errno));
    }
    slots_free(s, nslots);
    free(prev);
    free(buf);
    return 0;
}

/* -h: to stdout, status 0; a bad command line: to stderr, status 2. */
static int usage_to(FILE *out, int status)
{
    if (rank == 0)
        fprintf(out, "mpi-render: usage: mpi-render [-s SECONDS] [-r SEED] [-o OUT] [-q]\n");
    return status;
}

/* 0, or the exit status of a bad command line (2) or -h (0 after printing,
 * told by *stop). */
static int parse(int argc, char **argv, double *seconds, uint64_t *seed, const char **path,
                 int *quiet, int *stop)
{
    int opt;
    *stop = 1;
    while ((opt = getopt(argc, argv, "s:r:o:qh")) != -1) {
        switch (opt) {
        case 's':
            if (arg_seconds(optarg, 3600, seconds) != 0)
                return usage_to(stderr, 2);
            break;
        case 'r':
            if (arg_seed(optarg, seed) != 0)
                return usage_to(stderr, 2);
            break;
        case 'o': *path = optarg; break;
        case 'q': *quiet = 1; break;
        case 'h': return usage_to(stdout, 0);
        default: return usage_to(stderr, 2);
        }
    }
    if (optind != argc)
        return usage_to(stderr, 2);
    *stop = 0;
    return 0;
}

/* This process's rank as the launcher tells it (Open MPI, MPICH's Hydra,
 * PMIx), before MPI starts: 0 when none does. Only for who prints usage. */
static int launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL)
            return atoi(v);
    }
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = 15;
    uint64_t seed = 1;
    const char *path = "mpi-render.wav", *why = NULL;
    int quiet = 0, stop;
    /* The command line first: a usage error or -h needs no MPI (whose start
     * takes a second or more), every rank sees the same one, and rank 0
     * alone prints. */
    rank = launcher_rank();
    if (rank != 0)
        opterr = 0; /* getopt's messages: rank 0's only */
    int status = parse(argc, argv, &seconds, &seed, &path, &quiet, &stop);
    if (stop)
        return status;
    int provided;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "mpi-render: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "mpi-render: MPI grants no MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 1;
    }
    if (sf_mpi_init(NULL) != 0) {
        fprintf(stderr, "mpi-render: rank %d: sf_mpi_init: %s\n", rank, strerror(errno));
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }

    /* Rank 0 readies the score and the file, then tells every rank the
     * number of blocks, or -1 when it cannot: then all stop. */
    long long nblocks = -1;
    granular *g = NULL;
    sound_writer w;
    char err[300] = "";
    if (rank == 0) {
        const int format = sound_format(path, 2, GRANULAR_RATE, &why);
        if (format == 0)
            snprintf(err, sizeof err, "%s: %s", path, why);
        else if ((g = granular_new(seconds, seed)) == NULL)
            snprintf(err, sizeof err, "%s", strerror(errno));
        else if (sound_create(&w, path, format, 2, GRANULAR_RATE, &why) != 0)
            snprintf(err, sizeof err, "%s: %s", path, why);
        else
            nblocks = (long long)((granular_frames(g) + BLOCK - 1) / BLOCK);
    }
    MPI_Request req;
    if (MPI_Ibcast(&nblocks, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
        die("MPI_Ibcast", "failed");
    sf_future *bc = sf_mpi_request(&req, NULL);
    must(bc, "the block count's broadcast");
    sf_release(bc);
    if (nblocks < 0) {
        if (rank == 0)
            fprintf(stderr, "mpi-render: %s\n", err);
        sf_mpi_finalize(0);
        sf_shutdown();
        MPI_Finalize();
        granular_free(g);
        return 1;
    }

    filter f;
    if (filter_new(&f) != 0)
        die("filter", strerror(ENOMEM));
    sf_stats st;
    if (sf_stats_read(&st) != 0)
        st.threads = 0;
    double t0 = now();
    int rc = 0;
    if (rank == 0)
        rc = render_rank(&f, g, (size_t)nblocks, &w, &why);
    else
        filter_rank(&f, (size_t)nblocks);
    double t = now() - t0;
    if (rc != 0)
        die(path, why);
    long left = sf_mpi_finalize(1.0); /* none: every future above was got */
    sf_shutdown();
    MPI_Finalize();
    if (left != 0)
        fprintf(stderr, "mpi-render: rank %d: %ld requests left\n", rank, left);
    if (rank == 0) {
        if (sound_close(&w, &why) != 0) {
            fprintf(stderr, "mpi-render: %s: %s\n", path, why);
            return 1;
        }
        if (!quiet)
            printf("mpi-render: %s: %.2f s of 44.1 kHz stereo (seed %" PRIu64 "), %lld blocks "
                   "of %d frames over %d rank%s in %.3f s, %.1f blocks/s, "
                   "SF_THREADS=%d\n",
                   path, (double)granular_frames(g) / GRANULAR_RATE, seed, nblocks, BLOCK,
                   ranks, ranks > 1 ? "s" : "", t, (double)nblocks / t,
                   st.threads);
        granular_free(g);
    }
    fft_plan_free(f.plan);
    free(f.H);
    return left != 0;
}
