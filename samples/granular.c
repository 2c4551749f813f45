/*
 * granular - granular synthesis to a sound file with libsf: thousands of
 * short grains, each a task; a cloud task makes its grains and gets them,
 * the piece task gets its clouds (samples/audio/granular.c).
 *
 *     usage: granular [-s SECONDS] [-r SEED] [-f IN] [-o OUT] [-q]
 *       -s  length, default 20 (0 < SECONDS <= 3600)
 *       -r  seed of the score, default 1
 *       -f  grains of this sound instead of oscillators: any file libsndfile
 *           reads, mono or stereo (mixed to mono), any rate (resampled to
 *           44.1 kHz), up to an hour; the piece scans it from start to end
 *       -o  output path, default granular.wav; its extension picks the
 *           format among libsndfile's (.wav, .flac, .aiff, .ogg, ...; none:
 *           WAV)
 *       -q  print nothing on success
 *     SF_THREADS=2 samples/granular -s 10 -o cloud.wav
 *     samples/granular -s 10 -f voice.flac -o voice-cloud.flac
 *
 * The file is 44.1 kHz stereo, 16-bit PCM where the format holds it (WAV,
 * FLAC, AIFF, ...), and the same byte for byte for a seed, length and input
 * whatever SF_THREADS is (grains and clouds are summed in a fixed order).
 * Prints one line: the score, the time, the file. Exit status 0, 1 on a
 * failure (an input or output it cannot use: one line on stderr), 2 on bad
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
#include "audio/sound.h"
#include "sf.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* -h: to stdout, status 0; a bad command line: to stderr, status 2. */
static int usage_to(FILE *out, int status)
{
    fprintf(out, "granular: usage: granular [-s SECONDS] [-r SEED] [-f IN] [-o OUT] [-q]\n");
    return status;
}

static int usage(void) { return usage_to(stderr, 2); }

int main(int argc, char **argv)
{
    double seconds = 20;
    uint64_t seed = 1;
    const char *path = "granular.wav", *in = NULL, *why = NULL;
    int quiet = 0, opt;
    while ((opt = getopt(argc, argv, "s:r:f:o:qh")) != -1) {
        switch (opt) {
        case 's':
            if (arg_seconds(optarg, 3600, &seconds) != 0)
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

    /* The output's format first: a bad extension fails before the work. */
    const int format = sound_format(path, 2, GRANULAR_RATE, &why);
    if (format == 0) {
        fprintf(stderr, "granular: %s: %s\n", path, why);
        return 1;
    }
    double *src = NULL;
    size_t src_frames = 0;
    if (in != NULL &&
        (src = sound_read(in, 1, GRANULAR_RATE, 3600 * (size_t)GRANULAR_RATE, &src_frames,
                          &why)) == NULL) {
        fprintf(stderr, "granular: %s: %s\n", in, why);
        return 1;
    }
    granular *g = granular_new(seconds, seed);
    if (g == NULL) {
        perror("granular");
        return 1;
    }
    granular_source(g, src, src_frames);
    const size_t frames = granular_frames(g);
    sf_stats st;
    if (sf_init(NULL) != 0 || sf_stats_read(&st) != 0) {
        perror("granular: sf_init");
        return 1;
    }
    double t0 = now();
    sf_future *piece = granular_render(g, 0, frames);
    double *mix = NULL;
    int rc = piece != NULL ? sf_wait(piece, (void **)&mix) : errno;
    double t = now() - t0;
    if (rc != 0) {
        const char *msg = piece != NULL ? sf_error_message(piece) : NULL;
        fprintf(stderr, "granular: %s\n", msg != NULL ? msg : strerror(rc));
        return 1;
    }
    sf_release(piece);
    sf_shutdown();
    for (size_t i = 0; i < 2 * frames; i++)
        mix[i] = granular_limit(mix[i]);
    sound_writer w;
    if (sound_create(&w, path, format, 2, GRANULAR_RATE, &why) != 0) {
        fprintf(stderr, "granular: %s: %s\n", path, why);
        return 1;
    }
    if (sound_write(&w, mix, frames, &why) != 0) {
        sound_close(&w, NULL);
        fprintf(stderr, "granular: %s: %s\n", path, why);
        return 1;
    }
    if (sound_close(&w, &why) != 0) {
        fprintf(stderr, "granular: %s: %s\n", path, why);
        return 1;
    }
    if (!quiet)
        printf("granular: %.1f s of 44.1 kHz stereo, %zu grains in %zu clouds (seed %" PRIu64
               ")%s%s, rendered in %.3f s at SF_THREADS=%d -> %s\n",
               (double)frames / GRANULAR_RATE, granular_grains(g), granular_clouds(g), seed,
               in != NULL ? ", grains of " : "", in != NULL ? in : "", t, st.threads, path);
    free(mix);
    free(src);
    granular_free(g);
    return 0;
}
