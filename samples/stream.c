/*
 * stream.c - a streaming block processor: audio in on stdin, a low-pass
 * filter per block under a deadline, a WAV out on stdout.
 *
 *   sox -n -t wav - synth 10 pinknoise | samples/stream | sox -t wav - out.wav
 *   samples/stream [-b FRAMES] [--deadline-ms N] <in >out.wav
 *
 * The input is anything libsndfile reads from a descriptor (WAV, FLAC, AU,
 * ... from a pipe or a file), mono or stereo, at any rate; the output is a
 * 16-bit PCM WAV of the same channels, rate and length (docs/pipelines.md).
 *
 * The parts (docs/pipelines.md walks through them):
 *  - a reader thread, a plain pthread that otherwise never calls libsf,
 *    reads the input in blocks of FRAMES frames (-b, a power of two from 16
 *    to 16384; 1024 by default) and completes each block's promise
 *    (sf_promise_set) with the block;
 *  - per block, two continuations (sf_do_after): `spectrum` runs once the
 *    promises of the block and of the one before are done, and transforms
 *    the two (2 * FRAMES points, samples/audio/fft.h) times the filter's
 *    spectrum; `output` runs once `spectrum` is done and transforms it back
 *    (overlap-save: the second half is the block filtered). They run on the
 *    pool, nobody's get holding a thread for them; each checks
 *    sf_cancelled() before each transform. The main thread makes them when
 *    it first waits with time left: then for every block made so far (as a
 *    first get submits every queued task);
 *  - at most IN_FLIGHT (8) blocks are in flight: the main thread makes a
 *    block's promise and pipeline only while fewer than 8 are unwritten, and
 *    the reader reads only blocks whose promise exists, so it is never more
 *    than 8 blocks ahead of the output;
 *  - the main thread waits for each block's output in order with
 *    sf_wait_for(); the deadline is the block's arrival (when the reader had
 *    it) plus --deadline-ms (default: the block's duration at the input's
 *    rate, FRAMES / rate). A block not done by then is late: sf_cancel() of
 *    both its futures, and the dry block (the input delayed by the filter's
 *    delay, so it lines up) is written instead. sf_wait_for() runs no task
 *    itself: the pool's workers compute the block while the main thread
 *    sleeps. At SF_THREADS=1 there is no pool: the main thread's sf_wait()
 *    runs the continuations, and a block that ends past its deadline is
 *    late too. A block the main thread reaches after its deadline
 *    (--deadline-ms 0) is late unless done already; with no wait that had
 *    time left, no block's continuations were ever made.
 *
 * The filter: a linear-phase low-pass FIR at an eighth of the sample rate,
 * FRAMES / 2 + 1 taps (a Blackman-windowed sinc, unit gain at 0 Hz), so its
 * delay is FRAMES / 4 frames; the output is the input filtered and delayed
 * by that, cut to the input's length. Every output block is the same
 * floating-point operations whatever the schedule, so with a deadline no
 * block misses the file is byte-identical at any SF_THREADS.
 *
 * stdout: on a regular file libsndfile writes the WAV with exact sizes; on a
 * pipe the sizes say "unknown length" (samples/audio/sound.h). One summary
 * line on stderr: blocks, late blocks (written dry), the worst lateness (the
 * most any block was settled - written or given up - past its deadline).
 * Exit status 0; 1 when the input cannot be read or the output written (one
 * stderr line); 2 for a usage error.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audio/fft.h"
#include "audio/sound.h"
#include "sf.h"

#define IN_FLIGHT 8
#define DEFAULT_BLOCK 1024

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct stream;

/* One block: its input, its pipeline and its buffers. The main thread makes
 * it, the reader fills x, n and arrival before completing `in`, the tasks
 * read x (after getting `in`) and write spec and y. It is freed once its own
 * pipeline and the next block's (which reads x) are done. */
typedef struct blk {
    struct stream *s;
    size_t k;          /* block number */
    size_t n;          /* frames the reader found: B, fewer at the end, 0 past it */
    double arrival;    /* now() when the reader had it */
    struct blk *prev;  /* block k - 1, NULL for k = 0 */
    struct blk *next;  /* the main thread's list, oldest first */
    struct blk *queue; /* the reader's queue */
    sf_future *in;     /* the promise, set by the reader to this blk */
    sf_future *spec, *out; /* the continuations, NULL until made */
    fft_cplx *x;       /* B frames (left + i right), zeros past n */
    fft_cplx *seg;     /* 2B: x of k - 1, then x of k */
    fft_cplx *spec_buf; /* 2B: its transform times the filter's */
    fft_cplx *y;       /* 2B: back in time; y[B .. 2B) is the block filtered */
} blk;

typedef struct stream {
    size_t B;     /* frames per block */
    int channels; /* 1 or 2 */
    fft_plan *plan;
    fft_cplx *H;  /* the filter's spectrum, 2B points */
    sound_reader in;

    /* The hand-off between the main thread and the reader: the main thread
     * queues blocks whose promise exists, the reader takes them in order and
     * counts the blocks it has filled. Guarded by m. */
    pthread_mutex_t m;
    pthread_cond_t c;
    blk *head, *tail; /* queued, not yet taken */
    size_t arrived;   /* blocks filled (their promise completed) */
    int ended;        /* the input ended (or failed): later blocks get n = 0 */
    int stop;         /* the main thread wants no more: serve the queue, exit */
    char err[256];    /* the read error, if the input failed */
} stream;

/* The reader thread: fills each queued block and completes its promise.
 * Every block ever queued gets its promise completed (set, or failed on a
 * read error), those past the end with n = 0, so no task's get of a promise
 * waits forever. */
static void *reader(void *arg)
{
    stream *s = arg;
    const size_t B = s->B;
    const int C = s->in.channels;
    double *buf = malloc(B * (size_t)C * sizeof *buf);
    int ended = 0, failed = 0;
    char why_copy[256] = "";
    pthread_mutex_lock(&s->m);
    for (;;) {
        while (s->head == NULL && !s->stop)
            pthread_cond_wait(&s->c, &s->m);
        blk *b = s->head;
        if (b == NULL)
            break; /* stop, and the queue is served */
        s->head = b->queue;
        if (s->head == NULL)
            s->tail = NULL;
        pthread_mutex_unlock(&s->m);

        long got = 0;
        if (!ended && buf == NULL) {
            snprintf(why_copy, sizeof why_copy, "%s", strerror(ENOMEM));
            ended = failed = 1;
        } else if (!ended) {
            const char *why = NULL;
            got = sound_reader_read(&s->in, buf, B, &why);
            if (got < 0) {
                snprintf(why_copy, sizeof why_copy, "%s", why);
                ended = failed = 1;
                got = 0;
            } else if ((size_t)got < B) {
                ended = 1;
            }
        }
        for (size_t i = 0; i < (size_t)got; i++)
            b->x[i] = C == 1 ? buf[i] : CMPLX(buf[2 * i], buf[2 * i + 1]);
        b->n = (size_t)got;
        b->arrival = now();
        /* The promise first: the main thread, once it sees `arrived`, may
         * wait for this block's output at once. The block's fields above
         * reach the tasks through the promise (set publishes, get sees), and
         * the main thread through m. */
        if (failed)
            sf_promise_fail(b->in, EIO, "stdin: %s", why_copy);
        else
            sf_promise_set(b->in, b);
        pthread_mutex_lock(&s->m);
        if (failed && s->err[0] == '\0')
            snprintf(s->err, sizeof s->err, "%s", why_copy);
        s->ended = ended;
        s->arrived++;
        pthread_cond_broadcast(&s->c);
    }
    pthread_mutex_unlock(&s->m);
    free(buf);
    return NULL;
}

/* The first stage, once the promises of this block and the one before are
 * done: the forward transform of both times the filter's. Returns spec_buf. */
static void *spectrum_task(void *arg)
{
    blk *b = arg;
    stream *s = b->s;
    const size_t B = s->B;
    if (sf_cancelled())
        return NULL;
    /* Its dependencies are done: these gets return at once. */
    if (sf_get(b->in) == NULL) {
        sf_fail(errno, "block %zu: its input: %s", b->k, sf_error_message(b->in));
        return NULL;
    }
    if (b->prev != NULL && sf_get(b->prev->in) == NULL) {
        sf_fail(errno, "block %zu: its input: %s", b->k - 1, sf_error_message(b->prev->in));
        return NULL;
    }
    for (size_t i = 0; i < B; i++) {
        b->seg[i] = b->prev != NULL ? b->prev->x[i] : 0;
        b->seg[B + i] = b->x[i];
    }
    if (sf_cancelled())
        return NULL;
    fft_forward(s->plan, b->seg, b->spec_buf, 2 * B);
    for (size_t i = 0; i < 2 * B; i++)
        b->spec_buf[i] *= s->H[i];
    return b->spec_buf;
}

/* The second stage, once `spectrum` is done: the inverse transform.
 * Returns the filtered block. */
static void *output_task(void *arg)
{
    blk *b = arg;
    stream *s = b->s;
    if (sf_cancelled())
        return NULL;
    errno = 0;
    fft_cplx *spec = sf_get(b->spec); /* done: returns at once */
    if (spec == NULL) {
        /* Cancelled with this block's pipeline: stop as asked. */
        if (errno != ECANCELED && !sf_cancelled())
            sf_fail(errno != 0 ? errno : EIO, "%s", sf_error_message(b->spec));
        return NULL;
    }
    if (sf_cancelled())
        return NULL;
    fft_inverse(s->plan, spec, b->y, 2 * s->B);
    return b->y + s->B;
}

/* The filter: taps h[0 .. L), L = B / 2 + 1, cutoff rate / 8. */
static int make_filter(stream *s)
{
    const size_t B = s->B, N = 2 * B, L = B / 2 + 1;
    fft_cplx *h = calloc(N, sizeof *h);
    s->H = malloc(N * sizeof *s->H);
    if (h == NULL || s->H == NULL) {
        free(h);
        return -1;
    }
    fft_lowpass(h, L, 0.125); /* cycles per sample */
    fft_forward(s->plan, h, s->H, N);
    free(h);
    return 0;
}

static blk *blk_new(stream *s, size_t k, blk *prev)
{
    const size_t B = s->B;
    blk *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->s = s;
    b->k = k;
    b->prev = prev;
    b->x = calloc(B, sizeof *b->x);
    b->seg = malloc(2 * B * sizeof *b->seg);
    b->spec_buf = malloc(2 * B * sizeof *b->spec_buf);
    b->y = malloc(2 * B * sizeof *b->y);
    if (b->x != NULL && b->seg != NULL && b->spec_buf != NULL && b->y != NULL &&
        (b->in = sf_promise()) != NULL)
        return b;
    free(b->x);
    free(b->seg);
    free(b->spec_buf);
    free(b->y);
    free(b);
    return NULL;
}

/* The block's continuations: `spectrum` after its promise and the previous
 * block's, `output` after `spectrum`. Returns 0, or -1 with errno. */
static int blk_graph(blk *b)
{
    sf_future *deps[2] = {b->in, b->prev != NULL ? b->prev->in : NULL};
    b->spec = sf_do_after(deps, b->prev != NULL ? 2 : 1, spectrum_task, b);
    if (b->spec == NULL)
        return -1;
    b->out = sf_do_after(&b->spec, 1, output_task, b);
    if (b->out == NULL) {
        int e = errno;
        sf_cancel(b->spec); /* it never runs if it has not started */
        errno = e;
        return -1;
    }
    return 0;
}

static void blk_free(blk *b)
{
    sf_release(b->out);
    sf_release(b->spec);
    sf_release(b->in);
    free(b->x);
    free(b->seg);
    free(b->spec_buf);
    free(b->y);
    free(b);
}

/* Done: nothing of b's pipeline runs or will run (none made: none will be
 * once b is written). */
static int pipeline_done(const blk *b)
{
    return (b->out == NULL || sf_is_done(b->out) == 1) &&
           (b->spec == NULL || sf_is_done(b->spec) == 1);
}

static void pipeline_cancel(blk *b)
{
    if (b->out != NULL)
        sf_cancel(b->out);
    if (b->spec != NULL)
        sf_cancel(b->spec);
}

static void usage(FILE *to)
{
    fprintf(to, "stream: usage: stream [-b FRAMES] [--deadline-ms N] <in >out.wav"
                " (FRAMES a power of two 16..16384, default %d; N >= 0, default a block's"
                " duration)\n",
            DEFAULT_BLOCK);
}

/* A non-negative number of milliseconds, the whole string. */
static int arg_ms(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(d >= 0) || d > 1e9)
        return -1;
    *out = d;
    return 0;
}

static int arg_block(const char *v, size_t *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 16 || n > 16384 || (n & (n - 1)) != 0)
        return -1;
    *out = (size_t)n;
    return 0;
}

/* Writes frames [0, n) of block b: its filtered output y, or dry. */
static int write_block(sound_writer *w, const stream *s, const blk *b, const fft_cplx *y,
                       double *buf, const char **why)
{
    const size_t B = s->B, D = B / 4, n = b->n;
    for (size_t j = 0; j < n; j++) {
        fft_cplx v;
        if (y != NULL)
            v = y[j];
        else if (j >= D)
            v = b->x[j - D];
        else
            v = b->prev != NULL ? b->prev->x[B + j - D] : 0;
        if (s->channels == 1) {
            buf[j] = creal(v);
        } else {
            buf[2 * j] = creal(v);
            buf[2 * j + 1] = cimag(v);
        }
    }
    return sound_write(w, buf, n, why);
}

int main(int argc, char **argv)
{
    size_t B = DEFAULT_BLOCK;
    double deadline_ms = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strncmp(a, "--deadline-ms=", 14) == 0) {
            v = a + 14;
        } else if (strcmp(a, "--deadline-ms") == 0 || strcmp(a, "-b") == 0) {
            if (i + 1 >= argc) {
                usage(stderr);
                return 2;
            }
            v = argv[++i];
        } else {
            usage(stderr);
            return 2;
        }
        if (a[1] == 'b' ? arg_block(v, &B) != 0 : arg_ms(v, &deadline_ms) != 0) {
            usage(stderr);
            return 2;
        }
    }
    if (isatty(STDOUT_FILENO)) {
        fprintf(stderr, "stream: stdout is a terminal: send it to a file or a pipe\n");
        return 2;
    }

    stream s = {.B = B};
    const char *why = NULL;
    if (sound_reader_open(&s.in, STDIN_FILENO, &why) != 0) {
        fprintf(stderr, "stream: stdin: %s\n", why);
        return 1;
    }
    if (s.in.channels > 2) {
        fprintf(stderr, "stream: stdin: %d channels: stream reads mono or stereo\n",
                s.in.channels);
        sound_reader_close(&s.in);
        return 1;
    }
    s.channels = s.in.channels;
    const int rate = s.in.rate;
    if (deadline_ms < 0)
        deadline_ms = 1000.0 * (double)B / rate;
    const double budget = deadline_ms / 1000;

    double *wbuf = malloc(B * 2 * sizeof *wbuf);
    s.plan = fft_plan_new(2 * B, 0);
    sound_writer w;
    if (wbuf == NULL || s.plan == NULL || make_filter(&s) != 0 ||
        sound_create_fd(&w, STDOUT_FILENO, s.channels, rate, &why) != 0) {
        fprintf(stderr, "stream: %s%s\n", why != NULL ? "stdout: " : "",
                why != NULL ? why : strerror(ENOMEM));
        sound_reader_close(&s.in);
        fft_plan_free(s.plan);
        free(s.H);
        free(wbuf);
        return 1;
    }
    pthread_mutex_init(&s.m, NULL);
    pthread_cond_init(&s.c, NULL);
    pthread_t rt;
    if (pthread_create(&rt, NULL, reader, &s) != 0) {
        fprintf(stderr, "stream: cannot start the reader thread\n");
        return 1;
    }

    /* A timed wait runs no task (sf.h): the pool computes the blocks while
     * this thread waits. With no pool (SF_THREADS=1) nothing would, so this
     * thread computes each block with sf_wait, and one that ends past its
     * deadline is late as well. */
    sf_stats pool = {0};
    int have_pool = sf_stats_read(&pool) == 0 && pool.workers > 0;
    blk *oldest = NULL, *newest = NULL, *cur = NULL; /* cur: the next to write */
    size_t made = 0, blocks = 0, late = 0, frames = 0;
    double worst = 0;
    int status = 0;
    for (;;) {
        /* Make pipelines up to IN_FLIGHT unwritten blocks, unless the input
         * has ended (a few made past the end are harmless: n = 0). */
        pthread_mutex_lock(&s.m);
        int ended = s.ended;
        pthread_mutex_unlock(&s.m);
        while (!ended && made < blocks + IN_FLIGHT) {
            blk *b = blk_new(&s, made, newest);
            if (b == NULL) {
                fprintf(stderr, "stream: block %zu: %s\n", made, strerror(ENOMEM));
                status = 1;
                break;
            }
            if (newest != NULL)
                newest->next = b;
            else
                oldest = b;
            newest = b;
            if (cur == NULL)
                cur = b;
            made++;
            pthread_mutex_lock(&s.m);
            if (s.tail != NULL)
                s.tail->queue = b;
            else
                s.head = b;
            s.tail = b;
            pthread_cond_broadcast(&s.c);
            pthread_mutex_unlock(&s.m);
        }
        if (status != 0 || cur == NULL)
            break;

        /* The block's arrival: the clock of its deadline. */
        pthread_mutex_lock(&s.m);
        while (s.arrived <= cur->k)
            pthread_cond_wait(&s.c, &s.m);
        int failed = s.err[0] != '\0';
        pthread_mutex_unlock(&s.m);
        if (failed) {
            fprintf(stderr, "stream: stdin: %s\n", s.err);
            status = 1;
            break;
        }
        blk *b = cur;
        if (b->n == 0)
            break;
        const double deadline = b->arrival + budget;
        const double left = deadline - now();
        void *y = NULL;
        int rc = 0;
        /* Time left: the continuations of every block made so far that has
         * none (this one's first), as a first get submits every queued
         * task: the pool computes later blocks while this one is waited
         * for. */
        for (blk *m = b; left > 0 && rc == 0 && m != NULL; m = m->next)
            if (m->out == NULL && blk_graph(m) != 0)
                rc = errno;
        if (rc != 0) {
            fprintf(stderr, "stream: block %zu: %s\n", b->k, strerror(rc));
            status = 1;
            break;
        }
        /* Past its deadline already (a slow block before it, or
         * --deadline-ms 0): only a block done now is in time. */
        rc = left <= 0 ? (b->out != NULL && sf_is_done(b->out) == 1 ? sf_wait(b->out, &y) : ETIMEDOUT)
             : have_pool ? sf_wait_for(b->out, &y, left)
                         : sf_wait(b->out, &y);
        const double settled = now();
        if (rc == 0 && !have_pool && settled > deadline)
            rc = ETIMEDOUT; /* computed here, but too late */
        if (rc == ETIMEDOUT) {
            /* Late: stop its pipeline; what runs of it checks sf_cancelled(). */
            pipeline_cancel(b);
            late++;
            y = NULL;
        } else if (rc != 0) {
            fprintf(stderr, "stream: block %zu: %s\n", b->k,
                    sf_error_message(b->out) != NULL ? sf_error_message(b->out) : strerror(rc));
            status = 1;
            break;
        }
        if (settled - deadline > worst)
            worst = settled - deadline;
        if (write_block(&w, &s, b, y, wbuf, &why) != 0) {
            fprintf(stderr, "stream: stdout: %s\n", why);
            status = 1;
            break;
        }
        blocks++;
        frames += b->n;
        cur = b->next;
        if (b->n < B)
            break;
        /* Free what no pipeline reads any more: a written block whose own
         * pipeline and whose successor's are done (a cancelled one that
         * was running finishes soon after its next sf_cancelled()). */
        while (oldest != NULL && oldest->next != NULL && oldest->next->k < blocks &&
               pipeline_done(oldest) && pipeline_done(oldest->next)) {
            blk *o = oldest;
            oldest = o->next;
            blk_free(o);
        }
    }

    /* Whatever was made and not written: cancel it; let the reader serve
     * its queue (every promise completed) and exit; then wait out every
     * pipeline before its buffers go. */
    for (blk *b = cur; b != NULL; b = b->next)
        pipeline_cancel(b);
    pthread_mutex_lock(&s.m);
    s.stop = 1;
    pthread_cond_broadcast(&s.c);
    pthread_mutex_unlock(&s.m);
    pthread_join(rt, NULL);
    for (blk *b = oldest; b != NULL; b = b->next) {
        if (b->out != NULL)
            sf_wait(b->out, NULL);
        if (b->spec != NULL)
            sf_wait(b->spec, NULL);
    }
    while (oldest != NULL) {
        blk *o = oldest;
        oldest = o->next;
        blk_free(o);
    }
    sound_reader_close(&s.in);
    if (sound_close(&w, status == 0 ? &why : NULL) != 0 && status == 0) {
        fprintf(stderr, "stream: stdout: %s\n", why);
        status = 1;
    }
    sf_stats st = {0};
    sf_stats_read(&st);
    if (status == 0)
        fprintf(stderr,
                "stream: %zu blocks of %zu frames (%zu frames, %s, %d Hz), %zu late (written "
                "dry), worst lateness %.3f ms, deadline %.3f ms, SF_THREADS=%d\n",
                blocks, B, frames, s.channels == 1 ? "mono" : "stereo", rate, late,
                worst * 1000, deadline_ms, st.threads);
    sf_shutdown();
    fft_plan_free(s.plan);
    free(s.H);
    free(wbuf);
    pthread_mutex_destroy(&s.m);
    pthread_cond_destroy(&s.c);
    return status;
}
