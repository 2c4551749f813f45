/*
 * sfpiece - a reverberated granular piece, rendered to a sound file by one
 * pipeline of libsf futures: the convolution reverb (samples/audio/reverb.c)
 * takes the granular synthesis (samples/audio/granular.c) as its input block
 * by block, each input block the future of a synthesis task (which gets its
 * clouds' tasks, which get their grains'). Nothing is computed before the
 * writer asks for the output block that needs it.
 *
 *     usage: sfpiece [-s SECONDS] [-r SEED] [-i IR_SECONDS] [-f IN] [-o OUT] [-q]
 *       -s  length of the piece, default 15 (0 < SECONDS <= 3600)
 *       -r  seed of the score, default 1
 *       -i  length of the reverb's impulse response, default 2.5
 *           (0 < IR_SECONDS <= 30); the file is that much longer
 *       -f  the grains play this sound instead of oscillators, as in
 *           samples/granular -f: any file libsndfile reads, mono or stereo
 *           (mixed to mono), any rate (resampled to 44.1 kHz), up to an hour
 *       -o  output path, default sfpiece.wav; its extension picks the format
 *           among libsndfile's (.wav, .flac, .aiff, .ogg, ...; none: WAV)
 *       -q  no summary line
 *     SF_THREADS=2 samples/sfpiece
 *     samples/sfpiece -f voice.flac -o voice-piece.flac
 *
 * 44.1 kHz stereo, 16-bit PCM where the format holds it (WAV, FLAC, AIFF,
 * ...), the same byte for byte whatever SF_THREADS is.
 * Progress goes to stderr when it is a terminal. Prints one line at the end:
 * the file, its duration, the time, the number of tasks. Exit status 0, 1 on
 * a failure (an input or output it cannot use: one line on stderr), 2 on bad
 * usage.
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
#include "audio/granular.h"
#include "audio/reverb.h"
#include "audio/sound.h"
#include "sf.h"

#define BLOCK 4096  /* frames per block: 93 ms, FFTs of 8192 points */
#define DRY 0.8     /* the direct sound, folded into the impulse response */
#define WET 0.35    /* the reverberated sound */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* -h: to stdout, status 0; a bad command line: to stderr, status 2. */
static int usage_to(FILE *out, int status)
{
    fprintf(out, "sfpiece: usage: sfpiece [-s SECONDS] [-r SEED] [-i IR_SECONDS] [-f IN] "
                 "[-o OUT] [-q]\n");
    return status;
}

static int usage(void) { return usage_to(stderr, 2); }

/* The reverb's input: block k is the synthesis of frames [k B, (k + 1) B). */
static sf_future *piece_block(void *ctx, size_t k, size_t frames)
{
    return granular_render(ctx, k * frames, frames);
}

struct sink {
    sound_writer w;
    const char *why; /* why a write failed */
    double buf[2 * BLOCK];
};

static int write_block(void *ctx, size_t first, const fft_cplx *y, size_t n)
{
    (void)first;
    struct sink *s = ctx;
    const double *lr = (const double *)y; /* L + iR: interleaved left, right */
    for (size_t i = 0; i < 2 * n; i++)
        s->buf[i] = granular_limit(lr[i]);
    return sound_write(&s->w, s->buf, n, &s->why) != 0;
}

/* Called in order from the writing thread: a line rewritten when the
 * percentage changes, erased at the end. */
static void progress(size_t done, size_t total)
{
    static size_t shown = (size_t)-1;
    size_t pct = done * 100 / total;
    if (pct != shown)
        fprintf(stderr, "\rsfpiece: %3zu%%", pct);
    shown = pct;
    if (done == total)
        fprintf(stderr, "\r             \r");
}

int main(int argc, char **argv)
{
    double seconds = 15, ir_seconds = 2.5;
    uint64_t seed = 1;
    const char *path = "sfpiece.wav", *in = NULL, *why = NULL;
    int quiet = 0, opt;
    while ((opt = getopt(argc, argv, "s:r:i:f:o:qh")) != -1) {
        switch (opt) {
        case 's':
            if (arg_seconds(optarg, 3600, &seconds) != 0)
                return usage();
            break;
        case 'i':
            if (arg_seconds(optarg, 30, &ir_seconds) != 0)
                return usage();
            break;
        case 'r':
            if (arg_seed(optarg, &seed) != 0)
                return usage();
            break;
        case 'f': in = optarg; break;
        case 'o': path = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': return usage_to(stdout, 0);
        default: return usage();
        }
    }
    if (optind != argc)
        return usage();

    const int format = sound_format(path, 2, GRANULAR_RATE, &why);
    if (format == 0) {
        fprintf(stderr, "sfpiece: %s: %s\n", path, why);
        return 1;
    }
    double t0 = now();
    double *src = NULL;
    size_t src_frames = 0;
    if (in != NULL &&
        (src = sound_read(in, 1, GRANULAR_RATE, 3600 * (size_t)GRANULAR_RATE, &src_frames,
                          &why)) == NULL) {
        fprintf(stderr, "sfpiece: %s: %s\n", in, why);
        return 1;
    }
    granular *g = granular_new(seconds, seed);
    const size_t m = (size_t)(ir_seconds * GRANULAR_RATE);
    double *ir = malloc((m > 0 ? m : 1) * sizeof *ir);
    struct sink *s = malloc(sizeof *s);
    if (g == NULL || ir == NULL || s == NULL || m == 0) {
        fprintf(stderr, "sfpiece: %s\n", m == 0 ? "impulse response too short" : strerror(errno));
        return 1;
    }
    granular_source(g, src, src_frames);
    reverb_demo_ir(ir, m, GRANULAR_RATE, seed + 1000);
    for (size_t i = 0; i < m; i++)
        ir[i] *= WET;
    ir[0] += DRY;
    const size_t frames = granular_frames(g);
    reverb *r = reverb_new(ir, m, BLOCK, frames, 0);
    if (r == NULL) {
        perror("sfpiece: reverb_new");
        return 1;
    }
    const size_t len = reverb_out_len(r);
    s->why = NULL;
    if (sound_create(&s->w, path, format, 2, GRANULAR_RATE, &why) != 0) {
        fprintf(stderr, "sfpiece: %s: %s\n", path, why);
        return 1;
    }
    sf_stats st;
    if (sf_init(NULL) != 0 || sf_stats_read(&st) != 0) {
        perror("sfpiece: sf_init");
        return 1;
    }
    int show = !quiet && isatty(2);
    int rc = reverb_run(r, (reverb_source){piece_block, g}, write_block, s, 0,
                        show ? progress : NULL);
    int e = errno;
    sf_stats after;
    if (sf_stats_read(&after) != 0)
        after.created = 0;
    sf_shutdown();
    if (rc != 0) {
        sound_close(&s->w, NULL);
        if (s->why != NULL)
            fprintf(stderr, "sfpiece: %s: %s\n", path, s->why);
        else
            fprintf(stderr, "sfpiece: %s\n",
                    reverb_error(r) != NULL ? reverb_error(r) : strerror(e));
        return 1;
    }
    if (sound_close(&s->w, &why) != 0) {
        fprintf(stderr, "sfpiece: %s: %s\n", path, why);
        return 1;
    }
    double t = now() - t0;
    if (!quiet)
        printf("sfpiece: %s: %.2f s of 44.1 kHz stereo (a %.2f s granular piece, %zu grains in "
               "%zu clouds, seed %" PRIu64 "%s%s, through a %.2f s convolution reverb) in %.2f s "
               "at SF_THREADS=%d, %" PRIu64 " tasks\n",
               path, (double)len / GRANULAR_RATE, (double)frames / GRANULAR_RATE,
               granular_grains(g), granular_clouds(g), seed, in != NULL ? ", grains of " : "",
               in != NULL ? in : "", ir_seconds, t, st.threads, after.created);
    reverb_free(r);
    granular_free(g);
    free(ir);
    free(s);
    free(src);
    return 0;
}
