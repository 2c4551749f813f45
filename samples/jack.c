/*
 * jack.c - a JACK client that filters its input through a graph of libsf
 * continuations, with a process callback that never waits.
 *
 *   samples/jack [-n NAME] [-s SERVER] [-c CHANNELS] [-l PERIODS] [-t SECONDS]
 *                [--connect] [--record PREFIX]
 *   samples/jack --generate [-n NAME] [-s SERVER] [-c CHANNELS] [-t SECONDS]
 *                [--to CLIENT]...
 *   samples/jack --offline -b FRAMES [-c CHANNELS] [-l PERIODS] [--dry | --late FILE]
 *                <in.f32 >out.f32
 *   samples/jack --signal [-c CHANNELS] FRAMES >signal.f32
 *   samples/jack --find-signal -b FRAMES [-c CHANNELS] <in.f32
 *
 * The client (the default mode; docs/pipelines.md, "A real-time client"):
 *  - ports NAME:in_1 .. in_C and NAME:out_1 .. out_C (C = -c, 1 or 2;
 *    default 2); --connect connects them to the server's physical capture and
 *    playback ports;
 *  - the filter is samples/stream's: a linear-phase low-pass FIR at an eighth
 *    of the sample rate, B / 2 + 1 taps for a period of B frames (a power of
 *    two from 16 to 16384), applied by overlap-save with 2B-point FFTs
 *    (samples/audio/fft.h); it delays the signal by B / 4 frames;
 *  - per period p, a promise `in` and two continuations (sf_do_after):
 *    `spec` after the promises of p - 1 and p (the two blocks' transform
 *    times the filter's), `wet` after `spec` (the inverse transform, the
 *    block filtered, as floats). The callback completes p's promise with the
 *    input block; the graph runs on the pool;
 *  - the callback writes, at period p, block p - L (L = -l, default 4
 *    periods): the graph's output if it is done (sf_is_done) and produced
 *    one, else the dry block (the input delayed by the filter's delay, so it
 *    lines up), counted late. Before period L it writes silence;
 *  - the callback allocates nothing, takes no lock and never waits: it
 *    touches a preallocated ring of RING slots (block buffers, futures made
 *    ahead), a ring of dry input blocks of its own, atomics, memcpy,
 *    sf_promise_set and sf_is_done. The feeder, a plain thread, makes every
 *    period's promise and graph AHEAD periods early (sf_promise and
 *    sf_do_after allocate), cancels what the callback passed by (a promise
 *    it never took, a graph whose block was written dry), and frees a slot
 *    once no graph reads it. It sleeps in sf_wait_for() on the promise the
 *    callback completes next. At SF_THREADS=1 there is no pool: the feeder
 *    runs each graph with sf_wait() once its input is in;
 *  - -t SECONDS: stop after that many seconds of periods (rounded up), else
 *    run until SIGINT or SIGTERM; --record PREFIX (with -t) writes the input
 *    and the output as raw interleaved 32-bit floats, PREFIX.in and
 *    PREFIX.out, and the late periods' numbers, one a line, in PREFIX.late;
 *  - stderr: a line when the ports are up (`jack: NAME: running, ...`; NAME
 *    the server's, which appends a number to a name taken), and a summary at
 *    the end: periods, late, inputs the feeder had no slot ready for, xruns
 *    the server reported, the callback's longest run (wall and CPU time),
 *    and callbacks that used more than half a period of CPU (an xrun with
 *    none of those was not the client's doing).
 *
 * --generate: a client with ports NAME:out_1 .. out_C (default NAME
 * sfjack-gen) that plays the test signal (--signal) for -t SECONDS (default
 * 10) and then silence; with --to CLIENT it connects out_k to CLIENT:in_k
 * itself and starts the signal, at a period's start, once the connections
 * are made; without --to it starts at once.
 *
 * --offline: the client's output for an input, computed with no JACK and no
 * continuation: the same blocks through the same functions in a loop, so
 * bit-identical to every block the client wrote in time. --dry writes every
 * block dry, --late FILE the periods FILE lists (--record's PREFIX.late).
 * stdin: raw interleaved floats of C channels, a whole number of periods of
 * -b FRAMES; stdout the same length.
 *
 * --signal FRAMES: the test signal, raw interleaved floats: per channel a
 * sine below the filter's cutoff, one above it, and white noise.
 * --find-signal: reads a recorded input and prints one line: its blocks,
 * the silent ones before the signal, then how many are the signal's blocks
 * in order (and from which), how many of the signal's it skipped (periods
 * the client missed), and how many are neither.
 *
 * Exit status 0; 1 when the server cannot be reached, a port or file fails,
 * or the server stops the client (one stderr line); 2 for a usage error.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jack/jack.h>

#include "audio/fft.h"
#include "sf.h"

#define RING 32         /* slots: periods from the oldest a graph reads to AHEAD past the callback */
#define AHEAD 8         /* periods the feeder prepares ahead of the callback */
#define MAX_LATENCY 16  /* -l at most: the dry ring holds RING periods */
#define MAX_CHANNELS 2
#define MAX_TO 4
#define DEFAULT_LATENCY 4
#define PI 3.14159265358979323846

/* ---- The filter: samples/stream's, per block of B frames ---- */

typedef struct filter {
    size_t B;
    fft_plan *plan;
    fft_cplx *H; /* the filter's spectrum, 2B points */
} filter;

/* Taps h[0 .. L), L = B / 2 + 1, cutoff at an eighth of the rate. */
static int filter_init(filter *f, size_t B)
{
    const size_t N = 2 * B, L = B / 2 + 1;
    f->B = B;
    f->plan = fft_plan_new(N, 0);
    f->H = malloc(N * sizeof *f->H);
    fft_cplx *h = calloc(N, sizeof *h);
    if (f->plan == NULL || f->H == NULL || h == NULL) {
        free(h);
        return -1;
    }
    fft_lowpass(h, L, 0.125); /* cycles per sample */
    fft_forward(f->plan, h, f->H, N);
    free(h);
    return 0;
}

static void filter_free(filter *f)
{
    fft_plan_free(f->plan);
    free(f->H);
}

/* One block's input, C channels as one complex signal (left + i right). */
static void pack(const float *const *in, int C, size_t B, fft_cplx *x)
{
    for (size_t i = 0; i < B; i++)
        x[i] = C == 1 ? (fft_cplx)in[0][i] : CMPLX(in[0][i], in[1][i]);
}

/* The first stage: the previous block and this one (prev NULL: zeros), 2B
 * points, transformed and multiplied by the filter's spectrum. */
static void stage_spectrum(const filter *f, const fft_cplx *prev, const fft_cplx *x,
                           fft_cplx *seg, fft_cplx *spec)
{
    const size_t B = f->B;
    for (size_t i = 0; i < B; i++) {
        seg[i] = prev != NULL ? prev[i] : 0;
        seg[B + i] = x[i];
    }
    fft_forward(f->plan, seg, spec, 2 * B);
    for (size_t i = 0; i < 2 * B; i++)
        spec[i] *= f->H[i];
}

/* The second: back in time; the second half is the block filtered, written
 * as floats, channel after channel (wet[c * B + j]). */
static void stage_wet(const filter *f, const fft_cplx *spec, fft_cplx *y, int C, float *wet)
{
    const size_t B = f->B;
    fft_inverse(f->plan, spec, y, 2 * B);
    for (size_t j = 0; j < B; j++) {
        wet[j] = (float)creal(y[B + j]);
        if (C == 2)
            wet[B + j] = (float)cimag(y[B + j]);
    }
}

/* The dry block: the input of this block (x) and the one before (prev,
 * NULL: zeros) delayed by the filter's delay, B / 4 frames. Channel c of a
 * block is x[c * B .. c * B + B). */
static void dry_block(size_t B, int C, const float *prev, const float *x, float *const *out)
{
    const size_t D = B / 4;
    for (int c = 0; c < C; c++)
        for (size_t j = 0; j < B; j++)
            out[c][j] = j >= D ? x[c * B + j - D] : prev != NULL ? prev[c * B + B + j - D] : 0;
}

/* ---- The test signal ---- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Channel c's frame g: sines at 0.01 and 0.3 cycles a frame (0.013 and 0.27
 * on the right), below and above the cutoff, and white noise. */
static float test_signal(int c, uint64_t g)
{
    const double lo = c == 0 ? 0.01 : 0.013, hi = c == 0 ? 0.3 : 0.27;
    double noise = ((double)(mix64(2 * g + (uint64_t)c) >> 11) * 0x1p-53 - 0.5) * 0.2;
    return (float)(0.3 * sin(2 * PI * fmod(lo * (double)g, 1.0)) +
                   0.2 * sin(2 * PI * fmod(hi * (double)g, 1.0)) + noise);
}

/* ---- The client ---- */

/* One period's slot. The feeder owns the handles and prepares the slot for
 * period `k` (publishing it with seq); the callback writes x before it sets
 * `in`; the graph reads x (and the previous slot's) and writes seg, spec_buf,
 * y and wet. The feeder reuses it once the callback is past k + L and the
 * graphs of k and k + 1 are done. */
typedef struct slot {
    _Atomic long long seq; /* the period it is ready for: feeder (release), callback (acquire) */
    _Atomic long long wet_period; /* wet holds this period's block: `wet` (release), callback (acquire) */
    long long k;
    struct client *cl;
    struct slot *prev; /* period k - 1's slot, NULL for k = 0 */
    sf_future *in, *spec, *wet;
    fft_cplx *x, *seg, *spec_buf, *y;
    float *wet_buf; /* C * B */
} slot;

typedef struct client {
    jack_client_t *jc;
    int C;
    size_t B;
    long long L;
    long long stop_after; /* periods; -1: until a signal */
    jack_port_t *in[MAX_CHANNELS], *out[MAX_CHANNELS];
    filter f;
    slot ring[RING];
    float *dry; /* RING blocks of C * B: the callback's own copy of its input */
    /* The recording: the first rec_periods periods, interleaved. */
    long long rec_periods;
    float *rec_in, *rec_out;
    unsigned char *rec_late;

    /* The callback's: */
    long long period;                /* periods the callback has served */
    _Atomic long long served;        /* = period, published at the end of each (release) */
    _Atomic long long late, dropped; /* relaxed: read after the callback stopped */
    _Atomic long long odd;           /* periods of another size (the server changed it) */
    _Atomic long long worst_ns, worst_cpu_ns;
    _Atomic long long heavy;         /* callbacks that used over half a period of CPU */
    long long half_period_ns;
    _Atomic long long xruns;         /* the server's xrun notices */
    _Atomic int gone;                /* the server stopped the client */
    _Atomic long long new_size;      /* a buffer size that is not B, 0 if none */

    /* The feeder's: */
    int have_pool;
    long long next;   /* the next period to prepare */
    long long oldest; /* the oldest period whose slot is not free */
    long long checked, cancelled_to;
    _Atomic int stop;  /* main (release) -> feeder (acquire): the callback stopped */
    _Atomic int failed; /* the feeder could not make a promise or graph (relaxed: a flag) */
    char why[160];      /* why: read after the feeder is joined */
} client;

static slot *slot_of(client *cl, long long k)
{
    return &cl->ring[k % RING];
}

static long long ns_of(const struct timespec *a, const struct timespec *b)
{
    return (long long)(b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

/* `spec`: runs once the promises of k and k - 1 are done; sf_get of them
 * returns at once. A promise the callback never took was cancelled: no
 * block (NULL). */
static void *spec_fn(void *arg)
{
    slot *s = arg;
    if (sf_cancelled() || sf_get(s->in) == NULL ||
        (s->prev != NULL && sf_get(s->prev->in) == NULL))
        return NULL;
    stage_spectrum(&s->cl->f, s->prev != NULL ? s->prev->x : NULL, s->x, s->seg, s->spec_buf);
    return s->spec_buf;
}

/* `wet`: runs once `spec` is done. Publishes the block to the callback. */
static void *wet_fn(void *arg)
{
    slot *s = arg;
    if (sf_cancelled())
        return NULL;
    fft_cplx *spec = sf_get(s->spec);
    if (spec == NULL || sf_cancelled())
        return NULL;
    stage_wet(&s->cl->f, spec, s->y, s->cl->C, s->wet_buf);
    /* Pairs with the callback's acquire load: wet_buf is written. */
    atomic_store_explicit(&s->wet_period, s->k, memory_order_release);
    return s->wet_buf;
}

/* The process callback. Nothing here allocates, locks or waits. */
static int process(jack_nframes_t n, void *arg)
{
    client *cl = arg;
    struct timespec t0, c0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    const int C = cl->C;
    const size_t B = cl->B;
    float *in[MAX_CHANNELS], *out[MAX_CHANNELS];
    for (int c = 0; c < C; c++) {
        in[c] = jack_port_get_buffer(cl->in[c], n);
        out[c] = jack_port_get_buffer(cl->out[c], n);
    }
    const long long p = cl->period;
    if (n != B || (cl->stop_after >= 0 && p >= cl->stop_after)) {
        /* Another period size (main stops on it), or the run is over. */
        for (int c = 0; c < C; c++)
            memset(out[c], 0, n * sizeof *out[c]);
        if (n != B)
            atomic_fetch_add_explicit(&cl->odd, 1, memory_order_relaxed);
        return 0;
    }

    /* The input, copied once into the dry ring: everything else reads the
     * copy. (The port's buffer is another client's output, which that
     * client may still be writing after an xrun.) */
    float *d = cl->dry + (size_t)(p % RING) * (size_t)C * B;
    const float *dc[MAX_CHANNELS];
    for (int c = 0; c < C; c++) {
        memcpy(d + (size_t)c * B, in[c], B * sizeof *d);
        dc[c] = d + (size_t)c * B;
    }
    slot *s = slot_of(cl, p);
    /* Pairs with the feeder's release store: the slot's handles are made. */
    if (atomic_load_explicit(&s->seq, memory_order_acquire) == p) {
        pack(dc, C, B, s->x);
        sf_promise_set(s->in, s); /* publishes x to the graph */
    } else {
        atomic_fetch_add_explicit(&cl->dropped, 1, memory_order_relaxed);
    }

    /* The output: block q = p - L, wet if done, else dry. */
    const long long q = p - cl->L;
    int late = 0;
    if (q < 0) {
        for (int c = 0; c < C; c++)
            memset(out[c], 0, B * sizeof *out[c]);
    } else {
        slot *w = slot_of(cl, q);
        /* Acquire, with the feeder's release: w->wet is q's. Then the
         * graph's: sf_is_done (acquire) and wet_period (acquire, pairs with
         * wet_fn's release) say wet_buf holds q's block. */
        if (atomic_load_explicit(&w->seq, memory_order_acquire) == q && sf_is_done(w->wet) == 1 &&
            atomic_load_explicit(&w->wet_period, memory_order_acquire) == q) {
            for (int c = 0; c < C; c++)
                memcpy(out[c], w->wet_buf + (size_t)c * B, B * sizeof *out[c]);
        } else {
            const float *dq = cl->dry + (size_t)(q % RING) * (size_t)C * B;
            const float *dp = q > 0 ? cl->dry + (size_t)((q - 1) % RING) * (size_t)C * B : NULL;
            dry_block(B, C, dp, dq, out);
            late = 1;
            atomic_fetch_add_explicit(&cl->late, 1, memory_order_relaxed);
        }
    }

    if (p < cl->rec_periods) {
        float *ri = cl->rec_in + (size_t)p * B * (size_t)C;
        float *ro = cl->rec_out + (size_t)p * B * (size_t)C;
        for (size_t j = 0; j < B; j++)
            for (int c = 0; c < C; c++) {
                ri[j * (size_t)C + (size_t)c] = dc[c][j];
                ro[j * (size_t)C + (size_t)c] = out[c][j];
            }
        cl->rec_late[p] = (unsigned char)late;
    }
    cl->period = p + 1;

    struct timespec t1, c1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    long long wall = ns_of(&t0, &t1), cpu = ns_of(&c0, &c1);
    if (wall > atomic_load_explicit(&cl->worst_ns, memory_order_relaxed))
        atomic_store_explicit(&cl->worst_ns, wall, memory_order_relaxed);
    if (cpu > atomic_load_explicit(&cl->worst_cpu_ns, memory_order_relaxed))
        atomic_store_explicit(&cl->worst_cpu_ns, cpu, memory_order_relaxed);
    if (cpu > cl->half_period_ns)
        atomic_fetch_add_explicit(&cl->heavy, 1, memory_order_relaxed);
    /* Pairs with the feeder's acquire load: this period's set (or miss)
     * and its reads of slot q are over. */
    atomic_store_explicit(&cl->served, p + 1, memory_order_release);
    return 0;
}

static int on_xrun(void *arg)
{
    client *cl = arg;
    atomic_fetch_add_explicit(&cl->xruns, 1, memory_order_relaxed);
    return 0;
}

static void on_shutdown(void *arg)
{
    client *cl = arg;
    atomic_store_explicit(&cl->gone, 1, memory_order_relaxed);
}

static int on_buffer_size(jack_nframes_t n, void *arg)
{
    client *cl = arg;
    if (n != cl->B)
        atomic_store_explicit(&cl->new_size, (long long)n, memory_order_relaxed);
    return 0;
}

/* The feeder's: period k's promise and graph into its (free) slot. */
static int prepare(client *cl, long long k)
{
    slot *s = slot_of(cl, k);
    s->k = k;
    s->prev = k > 0 ? slot_of(cl, k - 1) : NULL;
    s->spec = s->wet = NULL;
    atomic_store_explicit(&s->wet_period, -1, memory_order_relaxed);
    s->in = sf_promise();
    if (s->in == NULL)
        return -1;
    sf_future *deps[2] = {s->in, s->prev != NULL ? s->prev->in : NULL};
    s->spec = sf_do_after(deps, s->prev != NULL ? 2 : 1, spec_fn, s);
    if (s->spec != NULL)
        s->wet = sf_do_after(&s->spec, 1, wet_fn, s);
    if (s->wet == NULL) {
        int e = errno;
        sf_release(s->spec); /* not started: it never runs */
        sf_cancel(s->in);
        sf_release(s->in);
        errno = e;
        return -1;
    }
    /* Pairs with the callback's acquire load. */
    atomic_store_explicit(&s->seq, k, memory_order_release);
    return 0;
}

static int graph_done(const slot *s)
{
    return sf_is_done(s->wet) == 1 && sf_is_done(s->spec) == 1;
}

static void slot_release(slot *s)
{
    sf_release(s->wet);
    sf_release(s->spec);
    sf_release(s->in);
    s->in = s->spec = s->wet = NULL;
}

static void *feeder(void *arg)
{
    client *cl = arg;
    const double period_s = (double)cl->B / jack_get_sample_rate(cl->jc);
    for (;;) {
        /* Read stop first: once it is set the callback has stopped, and
         * `served` is final. */
        int stop = atomic_load_explicit(&cl->stop, memory_order_acquire);
        const long long c = atomic_load_explicit(&cl->served, memory_order_acquire);
        const long long upto = c < cl->next ? c : cl->next;
        /* Promises the callback passed without taking (not ready in time):
         * it never will; cancelled, their graphs end at once. */
        for (; cl->checked < upto; cl->checked++) {
            slot *s = slot_of(cl, cl->checked);
            if (sf_is_done(s->in) != 1)
                sf_cancel(s->in);
        }
        /* Graphs whose block went out dry: stop them. */
        const long long past = c - cl->L < cl->next ? c - cl->L : cl->next;
        for (; cl->cancelled_to < past; cl->cancelled_to++) {
            slot *s = slot_of(cl, cl->cancelled_to);
            if (!graph_done(s)) {
                sf_cancel(s->wet);
                sf_cancel(s->spec);
            }
        }
        /* No pool: this thread runs the graphs whose input is in. */
        if (!cl->have_pool)
            for (long long q = cl->cancelled_to; q < upto; q++)
                if (sf_is_done(slot_of(cl, q)->wet) != 1)
                    sf_wait(slot_of(cl, q)->wet, NULL);
        /* Free slots: the callback is past their output and no graph reads
         * them (k + 1's reads k's input). */
        while (cl->oldest + 1 < cl->next && cl->oldest + cl->L < c &&
               graph_done(slot_of(cl, cl->oldest)) && graph_done(slot_of(cl, cl->oldest + 1)))
            slot_release(slot_of(cl, cl->oldest++));
        if (stop)
            break;
        /* After a failure, nothing more: the callback writes dry until main
         * stops it, and the graphs made still end. */
        while (!atomic_load_explicit(&cl->failed, memory_order_relaxed) &&
               cl->next < c + AHEAD && cl->next - cl->oldest < RING) {
            if (prepare(cl, cl->next) != 0) {
                snprintf(cl->why, sizeof cl->why, "period %lld: %s", cl->next, strerror(errno));
                atomic_store_explicit(&cl->failed, 1, memory_order_relaxed);
                break;
            }
            cl->next++;
        }
        /* Sleep until the callback completes its next promise (a futex
         * wake), or two periods. */
        if (c < cl->next && sf_is_done(slot_of(cl, c)->in) != 1) {
            sf_wait_for(slot_of(cl, c)->in, NULL, 2 * period_s);
        } else {
            struct timespec ts = {0, (long)(period_s * 1e9 / 8)};
            nanosleep(&ts, NULL);
        }
    }
    /* The callback has stopped: end every graph. */
    for (long long q = cl->oldest; q < cl->next; q++) {
        slot *s = slot_of(cl, q);
        if (sf_is_done(s->in) != 1)
            sf_cancel(s->in);
        sf_cancel(s->wet);
        sf_cancel(s->spec);
    }
    for (long long q = cl->oldest; q < cl->next; q++) {
        slot *s = slot_of(cl, q);
        sf_wait(s->wet, NULL);
        sf_wait(s->spec, NULL);
    }
    for (; cl->oldest < cl->next; cl->oldest++)
        slot_release(slot_of(cl, cl->oldest));
    return NULL;
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(FILE *to)
{
    fprintf(to, "jack: usage: jack [-n NAME] [-s SERVER] [-c 1|2] [-l PERIODS] [-t SECONDS]"
                " [--connect] [--record PREFIX] | jack --generate [-n NAME] [-s SERVER] [-c 1|2]"
                " [-t SECONDS] [--to CLIENT]... | jack --offline -b FRAMES [-c 1|2] [-l PERIODS]"
                " [--dry | --late FILE] <in.f32 >out.f32 | jack --signal [-c 1|2] FRAMES >out.f32 |"
                " jack --find-signal -b FRAMES [-c 1|2] <in.f32"
                " (PERIODS 1..%d, default %d; FRAMES a power of two 16..16384)\n",
            MAX_LATENCY, DEFAULT_LATENCY);
}

typedef struct options {
    enum { CLIENT, GENERATE, OFFLINE, SIGNAL, FIND } mode;
    const char *name, *server, *record, *late;
    const char *to[MAX_TO];
    int n_to;
    int channels;
    long long latency;
    double seconds; /* < 0: none */
    long long frames; /* -b, or --signal's FRAMES */
    int connect, dry;
} options;

static int arg_long(const char *v, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.mode = CLIENT, .channels = 2, .latency = DEFAULT_LATENCY, .seconds = -1,
                   .frames = -1};
    int i = 1;
    if (i < argc && strcmp(argv[i], "--generate") == 0)
        o->mode = GENERATE, i++;
    else if (i < argc && strcmp(argv[i], "--offline") == 0)
        o->mode = OFFLINE, i++;
    else if (i < argc && strcmp(argv[i], "--signal") == 0)
        o->mode = SIGNAL, i++;
    else if (i < argc && strcmp(argv[i], "--find-signal") == 0)
        o->mode = FIND, i++;
    for (; i < argc; i++) {
        const char *a = argv[i];
        long long n;
        if (strcmp(a, "--connect") == 0 && o->mode == CLIENT) {
            o->connect = 1;
            continue;
        }
        if (strcmp(a, "--dry") == 0 && o->mode == OFFLINE) {
            o->dry = 1;
            continue;
        }
        if (a[0] != '-' && o->mode == SIGNAL && o->frames < 0) {
            if (arg_long(a, 0, 1LL << 40, &o->frames) != 0)
                return -1;
            continue;
        }
        if (i + 1 >= argc)
            return -1;
        const char *v = argv[++i];
        if (strcmp(a, "-c") == 0) {
            if (arg_long(v, 1, MAX_CHANNELS, &n) != 0)
                return -1;
            o->channels = (int)n;
        } else if (strcmp(a, "-l") == 0 && (o->mode == CLIENT || o->mode == OFFLINE)) {
            if (arg_long(v, 1, MAX_LATENCY, &o->latency) != 0)
                return -1;
        } else if (strcmp(a, "--late") == 0 && o->mode == OFFLINE && *v) {
            o->late = v;
        } else if (strcmp(a, "-b") == 0 && (o->mode == OFFLINE || o->mode == FIND)) {
            if (arg_long(v, 16, 16384, &o->frames) != 0 || (o->frames & (o->frames - 1)) != 0)
                return -1;
        } else if (strcmp(a, "-t") == 0 && (o->mode == CLIENT || o->mode == GENERATE)) {
            char *end;
            errno = 0;
            o->seconds = strtod(v, &end);
            if (errno != 0 || end == v || *end != '\0' || !(o->seconds > 0) || o->seconds > 1e6)
                return -1;
        } else if (strcmp(a, "-n") == 0 && (o->mode == CLIENT || o->mode == GENERATE) && *v) {
            o->name = v;
        } else if (strcmp(a, "-s") == 0 && (o->mode == CLIENT || o->mode == GENERATE) && *v) {
            o->server = v;
        } else if (strcmp(a, "--record") == 0 && o->mode == CLIENT && *v) {
            o->record = v;
        } else if (strcmp(a, "--to") == 0 && o->mode == GENERATE && *v && o->n_to < MAX_TO) {
            o->to[o->n_to++] = v;
        } else {
            return -1;
        }
    }
    if ((o->mode == OFFLINE || o->mode == SIGNAL || o->mode == FIND) && o->frames < 0)
        return -1;
    if (o->dry && o->late != NULL)
        return -1;
    if (o->record != NULL && o->seconds < 0)
        return -1;
    return 0;
}

/* libjack's own messages: none while opening (a failed open prints several,
 * and jack_client_open's status says enough for one line), then each on
 * stderr, prefixed. */
static _Atomic int jack_quiet;

static void jack_message(const char *msg)
{
    if (!atomic_load_explicit(&jack_quiet, memory_order_relaxed))
        fprintf(stderr, "jack: libjack: %s\n", msg);
}

/* Opens a client named `want`, or the server's variant of it when that is
 * taken (JACK appends a number); its name into name[size]. */
static jack_client_t *open_client(const options *o, const char *want, char *name, size_t size)
{
    jack_status_t status;
    atomic_store_explicit(&jack_quiet, 1, memory_order_relaxed);
    jack_set_error_function(jack_message);
    jack_set_info_function(jack_message);
    jack_options_t opts = JackNoStartServer;
    jack_client_t *jc = o->server != NULL
                            ? jack_client_open(want, opts | JackServerName, &status, o->server)
                            : jack_client_open(want, opts, &status);
    if (jc == NULL) {
        fprintf(stderr,
                    "jack: cannot reach a JACK server%s%s (status 0x%x): start jackd, or run"
                    " under PipeWire as pw-jack samples/jack\n",
                    o->server != NULL ? " named " : "", o->server != NULL ? o->server : "",
                    (unsigned)status);
    }
    atomic_store_explicit(&jack_quiet, jc == NULL, memory_order_relaxed);
    if (jc != NULL)
        snprintf(name, size, "%s", jack_get_client_name(jc));
    return jc;
}

static int write_all(FILE *f, const void *p, size_t size, size_t n)
{
    return fwrite(p, size, n, f) == n ? 0 : -1;
}

/* PREFIX.in, PREFIX.out (raw floats) and PREFIX.late. */
static int write_record(const client *cl, const char *prefix, long long periods)
{
    const size_t per = cl->B * (size_t)cl->C;
    char path[4096];
    const char *ext[3] = {"in", "out", "late"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s.%s", prefix, ext[i]);
        FILE *f = fopen(path, "w");
        int bad = f == NULL;
        if (!bad && i < 2)
            bad = write_all(f, i == 0 ? cl->rec_in : cl->rec_out, sizeof(float),
                            per * (size_t)periods) != 0;
        for (long long p = 0; !bad && i == 2 && p < periods; p++)
            if (cl->rec_late[p] && fprintf(f, "%lld\n", p) < 0)
                bad = 1;
        if (f != NULL && fclose(f) != 0)
            bad = 1;
        if (bad) {
            fprintf(stderr, "jack: %s: %s\n", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* calloc, with every page written once: a fresh page faults on its first
 * write, which the callback must not take. */
static void *xcalloc(size_t n, size_t size, int *bad)
{
    void *p = calloc(n > 0 ? n : 1, size);
    if (p == NULL) {
        *bad = 1;
        return NULL;
    }
    for (size_t i = 0; i < n * size; i += 4096)
        ((volatile char *)p)[i] = 0;
    return p;
}

/* Connects our ports to the physical ones (--connect): capture k -> in_k,
 * out_k -> playback k. Missing physical ports are left alone. */
static void connect_physical(client *cl)
{
    const char **cap = jack_get_ports(cl->jc, NULL, JACK_DEFAULT_AUDIO_TYPE,
                                      JackPortIsPhysical | JackPortIsOutput);
    const char **play = jack_get_ports(cl->jc, NULL, JACK_DEFAULT_AUDIO_TYPE,
                                       JackPortIsPhysical | JackPortIsInput);
    for (int c = 0; c < cl->C; c++) {
        if (cap != NULL && cap[0] != NULL) {
            const char *from = cap[1] != NULL && c == 1 ? cap[1] : cap[0];
            if (jack_connect(cl->jc, from, jack_port_name(cl->in[c])) != 0)
                fprintf(stderr, "jack: cannot connect %s\n", from);
        }
        if (play != NULL && play[0] != NULL) {
            const char *to = play[1] != NULL && c == 1 ? play[1] : play[0];
            if (jack_connect(cl->jc, jack_port_name(cl->out[c]), to) != 0)
                fprintf(stderr, "jack: cannot connect to %s\n", to);
        }
    }
    jack_free(cap);
    jack_free(play);
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int run_client(const options *o)
{
    static client cl; /* the callback's and the feeder's; zeroed */
    char name[256];
    cl.C = o->channels;
    cl.L = o->latency;
    cl.jc = open_client(o, o->name != NULL ? o->name : "sfjack", name, sizeof name);
    if (cl.jc == NULL)
        return 1;
    const size_t B = jack_get_buffer_size(cl.jc);
    const jack_nframes_t rate = jack_get_sample_rate(cl.jc);
    if (B < 16 || B > 16384 || (B & (B - 1)) != 0) {
        fprintf(stderr, "jack: the server's period is %zu frames: samples/jack filters periods of"
                        " a power of two from 16 to 16384 frames\n", B);
        jack_client_close(cl.jc);
        return 1;
    }
    cl.B = B;
    cl.half_period_ns = (long long)(0.5e9 * (double)B / rate);
    cl.stop_after = o->seconds > 0 ? (long long)ceil(o->seconds * rate / (double)B) : -1;
    cl.rec_periods = o->record != NULL ? cl.stop_after : 0;
    int bad = 0;
    for (int c = 0; c < cl.C; c++) {
        char port[16];
        snprintf(port, sizeof port, "in_%d", c + 1);
        cl.in[c] = jack_port_register(cl.jc, port, JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
        snprintf(port, sizeof port, "out_%d", c + 1);
        cl.out[c] = jack_port_register(cl.jc, port, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        if (cl.in[c] == NULL || cl.out[c] == NULL)
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "jack: %s: cannot register its ports\n", name);
        jack_client_close(cl.jc);
        return 1;
    }
    /* Everything the callback touches, allocated and written once now (so
     * no page of it faults in the callback for the first time). */
    if (filter_init(&cl.f, B) != 0)
        bad = 1;
    for (int i = 0; i < RING; i++) {
        slot *s = &cl.ring[i];
        s->cl = &cl;
        atomic_init(&s->seq, -1);
        atomic_init(&s->wet_period, -1);
        s->x = xcalloc(B, sizeof *s->x, &bad);
        s->seg = xcalloc(2 * B, sizeof *s->seg, &bad);
        s->spec_buf = xcalloc(2 * B, sizeof *s->spec_buf, &bad);
        s->y = xcalloc(2 * B, sizeof *s->y, &bad);
        s->wet_buf = xcalloc(B * (size_t)cl.C, sizeof *s->wet_buf, &bad);
    }
    cl.dry = xcalloc((size_t)RING * B * (size_t)cl.C, sizeof *cl.dry, &bad);
    if (cl.rec_periods > 0) {
        const size_t n = (size_t)cl.rec_periods * B * (size_t)cl.C;
        cl.rec_in = xcalloc(n, sizeof *cl.rec_in, &bad);
        cl.rec_out = xcalloc(n, sizeof *cl.rec_out, &bad);
        cl.rec_late = xcalloc((size_t)cl.rec_periods, 1, &bad);
    }
    int status = 0;
    sf_stats pool = {0};
    cl.have_pool = sf_stats_read(&pool) == 0 && pool.workers > 0;
    /* The first periods' graphs before the callback can run. */
    while (!bad && cl.next < AHEAD) {
        if (prepare(&cl, cl.next) != 0) {
            fprintf(stderr, "jack: period %lld: %s\n", cl.next, strerror(errno));
            bad = 1;
            break;
        }
        cl.next++;
    }
    pthread_t ft;
    int feeding = 0;
    if (!bad && pthread_create(&ft, NULL, feeder, &cl) == 0)
        feeding = 1;
    else if (!bad)
        bad = 1;
    if (!bad && (jack_set_process_callback(cl.jc, process, &cl) != 0 ||
                 jack_set_xrun_callback(cl.jc, on_xrun, &cl) != 0 ||
                 jack_set_buffer_size_callback(cl.jc, on_buffer_size, &cl) != 0))
        bad = 1;
    if (!bad)
        jack_on_shutdown(cl.jc, on_shutdown, &cl);
    if (bad || jack_activate(cl.jc) != 0) {
        fprintf(stderr, "jack: %s: %s\n", name,
                bad ? "cannot set up its buffers or callbacks" : "cannot activate the client");
        status = 1;
    } else {
        if (o->connect)
            connect_physical(&cl);
        fprintf(stderr,
                "jack: %s: running, %d channel%s (in_1%s -> out_1%s), %zu frames at %u Hz,"
                " latency %lld periods%s\n",
                name, cl.C, cl.C == 1 ? "" : "s", cl.C == 2 ? ", in_2" : "",
                cl.C == 2 ? ", out_2" : "", B, (unsigned)rate, cl.L,
                cl.stop_after >= 0 ? "" : "; Ctrl-C stops it");
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        while (!interrupted && !atomic_load_explicit(&cl.gone, memory_order_relaxed) &&
               atomic_load_explicit(&cl.new_size, memory_order_relaxed) == 0 &&
               !atomic_load_explicit(&cl.failed, memory_order_relaxed) &&
               (cl.stop_after < 0 ||
                atomic_load_explicit(&cl.served, memory_order_acquire) < cl.stop_after))
            nap(0.01);
        if (atomic_load_explicit(&cl.gone, memory_order_relaxed)) {
            fprintf(stderr, "jack: %s: the server stopped the client\n", name);
            status = 1;
        } else {
            jack_deactivate(cl.jc);
        }
        if (atomic_load_explicit(&cl.new_size, memory_order_relaxed) != 0) {
            fprintf(stderr, "jack: %s: the server's period changed from %zu to %lld frames:"
                            " start samples/jack again\n",
                    name, B, atomic_load_explicit(&cl.new_size, memory_order_relaxed));
            status = 1;
        }
    }
    if (feeding) {
        /* The callback no longer runs (deactivated, or the server gone). */
        atomic_store_explicit(&cl.stop, 1, memory_order_release);
        pthread_join(ft, NULL);
        if (atomic_load_explicit(&cl.failed, memory_order_relaxed) && status == 0) {
            fprintf(stderr, "jack: %s: the feeder stopped: %s\n", name, cl.why);
            status = 1;
        }
    } else {
        for (; cl.oldest < cl.next; cl.oldest++) {
            slot *s = slot_of(&cl, cl.oldest);
            sf_cancel(s->in);
            sf_wait(s->wet, NULL);
            sf_wait(s->spec, NULL);
            slot_release(s);
        }
    }
    jack_client_close(cl.jc);
    const long long periods = atomic_load_explicit(&cl.served, memory_order_acquire);
    if (status == 0 && o->record != NULL &&
        write_record(&cl, o->record, periods < cl.rec_periods ? periods : cl.rec_periods) != 0)
        status = 1;
    sf_stats st = {0};
    sf_stats_read(&st);
    if (status == 0 || periods > 0)
        fprintf(stderr,
                "jack: %s: %lld periods of %zu frames at %u Hz, %lld late (written dry), %lld"
                " inputs with no graph ready, latency %lld periods, %lld xruns reported, longest"
                " callback %.1f us (CPU %.1f us), %lld callbacks over half a period of CPU,"
                " SF_THREADS=%d\n",
                name, periods, B, (unsigned)rate, atomic_load(&cl.late), atomic_load(&cl.dropped),
                cl.L, atomic_load(&cl.xruns), (double)atomic_load(&cl.worst_ns) / 1000,
                (double)atomic_load(&cl.worst_cpu_ns) / 1000, atomic_load(&cl.heavy), st.threads);
    sf_shutdown();
    filter_free(&cl.f);
    for (int i = 0; i < RING; i++) {
        slot *s = &cl.ring[i];
        free(s->x);
        free(s->seg);
        free(s->spec_buf);
        free(s->y);
        free(s->wet_buf);
    }
    free(cl.dry);
    free(cl.rec_in);
    free(cl.rec_out);
    free(cl.rec_late);
    return status;
}

/* ---- The generator ---- */

typedef struct generator {
    jack_client_t *jc;
    int C;
    jack_port_t *out[MAX_CHANNELS];
    long long frames; /* the signal's length */
    long long g;      /* frames played: the callback's */
    _Atomic long long played; /* = g (release), main (acquire) */
    _Atomic int go;           /* main (release) -> the callback (acquire) */
    _Atomic int gone;
} generator;

static int gen_process(jack_nframes_t n, void *arg)
{
    generator *gen = arg;
    float *out[MAX_CHANNELS];
    for (int c = 0; c < gen->C; c++)
        out[c] = jack_port_get_buffer(gen->out[c], n);
    if (!atomic_load_explicit(&gen->go, memory_order_acquire)) {
        for (int c = 0; c < gen->C; c++)
            memset(out[c], 0, n * sizeof *out[c]);
        return 0;
    }
    for (jack_nframes_t j = 0; j < n; j++) {
        long long g = gen->g + (long long)j;
        for (int c = 0; c < gen->C; c++)
            out[c][j] = g < gen->frames ? test_signal(c, (uint64_t)g) : 0.0f;
    }
    gen->g += n;
    atomic_store_explicit(&gen->played, gen->g, memory_order_release);
    return 0;
}

static void gen_shutdown(void *arg)
{
    generator *gen = arg;
    atomic_store_explicit(&gen->gone, 1, memory_order_relaxed);
}

static int run_generator(const options *o)
{
    static generator gen;
    char name[256];
    gen.C = o->channels;
    gen.jc = open_client(o, o->name != NULL ? o->name : "sfjack-gen", name, sizeof name);
    if (gen.jc == NULL)
        return 1;
    const jack_nframes_t rate = jack_get_sample_rate(gen.jc);
    gen.frames = (long long)ceil((o->seconds > 0 ? o->seconds : 10) * rate);
    for (int c = 0; c < gen.C; c++) {
        char port[16];
        snprintf(port, sizeof port, "out_%d", c + 1);
        gen.out[c] = jack_port_register(gen.jc, port, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        if (gen.out[c] == NULL) {
            fprintf(stderr, "jack: %s: cannot register its ports\n", name);
            jack_client_close(gen.jc);
            return 1;
        }
    }
    jack_set_process_callback(gen.jc, gen_process, &gen);
    jack_on_shutdown(gen.jc, gen_shutdown, &gen);
    if (jack_activate(gen.jc) != 0) {
        fprintf(stderr, "jack: %s: cannot activate the client\n", name);
        jack_client_close(gen.jc);
        return 1;
    }
    int status = 0;
    for (int t = 0; t < o->n_to && status == 0; t++) {
        int made = 0;
        for (int c = 0; c < gen.C; c++) {
            char to[512];
            snprintf(to, sizeof to, "%s:in_%d", o->to[t], c + 1);
            if (jack_port_by_name(gen.jc, to) != NULL &&
                jack_connect(gen.jc, jack_port_name(gen.out[c]), to) == 0)
                made++;
        }
        if (made == 0) {
            fprintf(stderr, "jack: %s: cannot connect to %s:in_1\n", name, o->to[t]);
            status = 1;
        }
    }
    if (status == 0) {
        /* The connections are in the server's graph once jack_connect has
         * returned; a few periods more, and the signal starts. */
        nap(4.0 * jack_get_buffer_size(gen.jc) / rate);
        atomic_store_explicit(&gen.go, 1, memory_order_release);
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        while (!interrupted && !atomic_load_explicit(&gen.gone, memory_order_relaxed) &&
               atomic_load_explicit(&gen.played, memory_order_acquire) < gen.frames)
            nap(0.01);
        if (atomic_load_explicit(&gen.gone, memory_order_relaxed)) {
            fprintf(stderr, "jack: %s: the server stopped the client\n", name);
            status = 1;
        } else {
            jack_deactivate(gen.jc);
        }
    }
    jack_client_close(gen.jc);
    long long played = atomic_load_explicit(&gen.played, memory_order_acquire);
    if (status == 0)
        fprintf(stderr, "jack: %s: %lld frames of the test signal (%d channel%s) at %u Hz\n", name,
                played < gen.frames ? played : gen.frames, gen.C, gen.C == 1 ? "" : "s",
                (unsigned)rate);
    return status;
}

/* ---- Offline ---- */

static int run_signal(const options *o)
{
    const int C = o->channels;
    float frame[MAX_CHANNELS];
    for (long long g = 0; g < o->frames; g++) {
        for (int c = 0; c < C; c++)
            frame[c] = test_signal(c, (uint64_t)g);
        if (write_all(stdout, frame, sizeof *frame, (size_t)C) != 0) {
            fprintf(stderr, "jack: stdout: %s\n", strerror(errno));
            return 1;
        }
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "jack: stdout: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* The next period number in a --late file (ascending, one a line), or
 * LLONG_MAX at its end; -1 on junk. */
static long long next_late(FILE *f, long long after)
{
    long long p;
    int n = fscanf(f, "%lld", &p);
    if (n == EOF)
        return LLONG_MAX;
    return n == 1 && p > after ? p : -1;
}

/* What the client writes for an input, every block in time (or, --dry,
 * every one late; --late FILE, the periods FILE lists late), with no JACK
 * and no libsf continuation. */

/* Reads one period of raw floats from stdin into buf: 1, or 0 at the end,
 * or -1 (said on stderr) for a read error or a partial period. */
static int read_period(float *buf, size_t per)
{
    size_t got = fread(buf, sizeof *buf, per, stdin);
    if (got == 0 && feof(stdin))
        return 0;
    if (got == per)
        return 1;
    fprintf(stderr, "jack: stdin: %s\n",
            ferror(stdin) ? strerror(errno)
                          : "not a whole number of periods of raw floats (-b, -c)");
    return -1;
}
static int run_offline(const options *o)
{
    const int C = o->channels;
    const size_t B = (size_t)o->frames, per = B * (size_t)C;
    const long long L = o->latency;
    FILE *lf = NULL;
    long long late = LLONG_MAX; /* the next period written dry */
    if (o->dry) {
        late = 0;
    } else if (o->late != NULL) {
        lf = fopen(o->late, "r");
        if (lf == NULL || (late = next_late(lf, -1)) < 0) {
            fprintf(stderr, "jack: %s: %s\n", o->late,
                    lf == NULL ? strerror(errno) : "not a list of ascending period numbers");
            if (lf != NULL)
                fclose(lf);
            return 1;
        }
    }
    filter f = {0};
    int bad = filter_init(&f, B) != 0;
    /* The last L + 1 periods: input (planar, as the callback's dry ring)
     * and, filtered, as the callback's slots. */
    const long long keep = L + 2;
    float *dry = xcalloc((size_t)keep * per, sizeof *dry, &bad);
    float *wet = xcalloc((size_t)keep * per, sizeof *wet, &bad);
    fft_cplx *x = xcalloc((size_t)keep * B, sizeof *x, &bad);
    fft_cplx *seg = xcalloc(2 * B, sizeof *seg, &bad);
    fft_cplx *spec = xcalloc(2 * B, sizeof *spec, &bad);
    fft_cplx *y = xcalloc(2 * B, sizeof *y, &bad);
    float *buf = xcalloc(per, sizeof *buf, &bad);
    float *outp = xcalloc(per, sizeof *outp, &bad);
    int status = 0;
    if (bad) {
        fprintf(stderr, "jack: %s\n", strerror(ENOMEM));
        status = 1;
    }
    for (long long p = 0; status == 0; p++) {
        int r = read_period(buf, per);
        if (r <= 0) {
            status = r < 0;
            break;
        }
        float *d = dry + (size_t)(p % keep) * per;
        const float *in[MAX_CHANNELS];
        for (int c = 0; c < C; c++) {
            for (size_t j = 0; j < B; j++)
                d[(size_t)c * B + j] = buf[j * (size_t)C + (size_t)c];
            in[c] = d + (size_t)c * B;
        }
        fft_cplx *xp = x + (size_t)(p % keep) * B;
        pack(in, C, B, xp);
        if (!o->dry) {
            stage_spectrum(&f, p > 0 ? x + (size_t)((p - 1) % keep) * B : NULL, xp, seg, spec);
            stage_wet(&f, spec, y, C, wet + (size_t)(p % keep) * per);
        }
        float *out[MAX_CHANNELS];
        for (int c = 0; c < C; c++)
            out[c] = outp + (size_t)c * B;
        const long long q = p - L;
        int dry_now = o->dry || p == late;
        if (p == late && lf != NULL && (late = next_late(lf, p)) < 0) {
            fprintf(stderr, "jack: %s: not a list of ascending period numbers\n", o->late);
            status = 1;
            break;
        }
        if (q < 0)
            memset(outp, 0, per * sizeof *outp);
        else if (dry_now)
            dry_block(B, C, q > 0 ? dry + (size_t)((q - 1) % keep) * per : NULL,
                      dry + (size_t)(q % keep) * per, out);
        else
            memcpy(outp, wet + (size_t)(q % keep) * per, per * sizeof *outp);
        for (size_t j = 0; j < B; j++)
            for (int c = 0; c < C; c++)
                buf[j * (size_t)C + (size_t)c] = out[c][j];
        if (write_all(stdout, buf, sizeof *buf, per) != 0) {
            fprintf(stderr, "jack: stdout: %s\n", strerror(errno));
            status = 1;
        }
    }
    if (status == 0 && lf != NULL && late != LLONG_MAX) {
        fprintf(stderr, "jack: %s: period %lld is past the input\n", o->late, late);
        status = 1;
    }
    if (status == 0 && fflush(stdout) != 0) {
        fprintf(stderr, "jack: stdout: %s\n", strerror(errno));
        status = 1;
    }
    if (lf != NULL)
        fclose(lf);
    filter_free(&f);
    free(dry);
    free(wet);
    free(x);
    free(seg);
    free(spec);
    free(y);
    free(buf);
    free(outp);
    sf_shutdown();
    return status;
}

/* --find-signal: the recorded input, block by block, against the test
 * signal: silence first, then blocks of the signal in order from its first
 * (a period the client missed skips one). One line on stdout. */
static int run_find(const options *o)
{
    const int C = o->channels;
    const size_t B = (size_t)o->frames, per = B * (size_t)C;
    float *buf = malloc(per * sizeof *buf), *sig = malloc(per * sizeof *sig);
    if (buf == NULL || sig == NULL) {
        fprintf(stderr, "jack: %s\n", strerror(ENOMEM));
        free(buf);
        free(sig);
        return 1;
    }
    long long blocks = 0, silent = 0, found = 0, skipped = 0, other = 0, first = -1, at = 0;
    int status = 0;
    for (;;) {
        int r = read_period(buf, per);
        if (r <= 0) {
            status = r < 0;
            break;
        }
        blocks++;
        size_t nz = 0;
        while (nz < per && buf[nz] == 0)
            nz++;
        if (first < 0 && nz == per) {
            silent++;
            continue;
        }
        /* The signal's blocks from `at` on, up to 1000 ahead. */
        long long match = -1;
        for (long long j = at; j < at + 1000 && match < 0; j++) {
            for (size_t i = 0; i < B; i++)
                for (int c = 0; c < C; c++)
                    sig[i * (size_t)C + (size_t)c] = test_signal(c, (uint64_t)j * B + i);
            if (memcmp(sig, buf, per * sizeof *buf) == 0)
                match = j;
        }
        if (match < 0) {
            other++;
            continue;
        }
        if (first < 0)
            first = match;
        else
            skipped += match - at;
        found++;
        at = match + 1;
    }
    if (status == 0)
        printf("%lld blocks: %lld silent, then %lld of the test signal in order from its block %lld"
               " (%lld skipped), %lld other\n",
               blocks, silent, found, first, skipped, other);
    free(buf);
    free(sig);
    return status;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
    options o;
    if (parse(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    if ((o.mode == OFFLINE || o.mode == SIGNAL) && isatty(STDOUT_FILENO)) {
        fprintf(stderr, "jack: stdout is a terminal: send it to a file or a pipe\n");
        return 2;
    }
    switch (o.mode) {
    case GENERATE:
        return run_generator(&o);
    case OFFLINE:
        return run_offline(&o);
    case SIGNAL:
        return run_signal(&o);
    case FIND:
        return run_find(&o);
    default:
        return run_client(&o);
    }
}
