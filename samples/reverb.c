/*
 * reverb - convolution reverb of a long signal with libsf: a parallel FFT
 * (samples/audio/fft.c) under a pipeline of lazy futures, one per block's
 * forward FFT, spectrum multiply + inverse FFT, and overlap-add
 * (samples/audio/reverb.c).
 *
 *     usage: reverb [-s SECONDS] [-i IR_SECONDS] [-f IN] [-b BLOCK] [-w WINDOW] [-c] [-q] [-v]
 *                   [-o OUT]
 *       -s  length of the input, default 60 (44.1 kHz stereo, synthetic);
 *           with -f, the most of the file to read (default: all of it, up
 *           to an hour)
 *       -i  length of the impulse response, default 3 (decaying noise)
 *       -f  reverberate this sound file instead: any file libsndfile reads,
 *           mono (to both sides) or stereo, any rate (resampled to 44.1 kHz)
 *       -b  block size in frames, a power of two, default 4096
 *       -w  output blocks made ahead of the one written next, default 4
 *       -c  also run the sequential convolution (no libsf) and check that
 *           the output is bit-identical
 *       -q  quiet: no progress on stderr even on a terminal
 *       -v  also print libsf's counters (sf_stats) of the run
 *       -o  write the reverberated signal (70% dry, 30% wet) to a sound file,
 *           16-bit PCM where the format holds it; its extension picks the
 *           format among libsndfile's (.wav, .flac, .aiff, .ogg, ...; none:
 *           WAV)
 *     SF_THREADS=2 samples/reverb -c
 *     samples/reverb -f voice.flac -i 2 -o voice-hall.wav
 *
 * Prints one line: sizes, time, the output's checksum (FNV-1a of its
 * doubles: the same at every SF_THREADS). Exit status 0, 1 on a failure (an
 * input or output it cannot use: one line on stderr) or a mismatch, 2 on bad
 * usage.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audio/args.h"
#include "audio/reverb.h"
#include "audio/sound.h"
#include "sf.h"

#define RATE 44100.0

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static fft_cplx *out_buf;

static int to_buffer(void *ctx, size_t first, const fft_cplx *y, size_t n)
{
    fft_cplx *out = ctx;
    memcpy(out + first, y, n * sizeof *y);
    return 0;
}

static void progress(size_t done, size_t total)
{
    if (done % 16 == 0 || done == total)
        fprintf(stderr, "\rreverb: block %zu of %zu", done, total);
    if (done == total)
        fputc('\n', stderr);
}

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3u;
    return h;
}

/* -h: to stdout, status 0; a bad command line: to stderr, status 2. */
static int usage_to(FILE *out, int status)
{
    fprintf(out, "reverb: usage: reverb [-s SECONDS] [-i IR_SECONDS] [-f IN] [-b BLOCK] "
                 "[-w WINDOW] [-c] [-q] [-v] [-o OUT]\n");
    return status;
}

static int usage(void) { return usage_to(stderr, 2); }

int main(int argc, char **argv)
{
    double seconds = 60, ir_seconds = 3;
    size_t block = 4096;
    int check = 0, quiet = 0, verbose = 0, window = 0, seconds_given = 0;
    const char *wav = NULL, *in_path = NULL, *why = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "s:i:f:b:w:cqvo:h")) != -1) {
        switch (opt) {
        case 's':
            if (arg_seconds(optarg, 3600, &seconds) != 0)
                return usage();
            seconds_given = 1;
            break;
        case 'f': in_path = optarg; break;
        case 'i':
            if (arg_seconds(optarg, 60, &ir_seconds) != 0)
                return usage();
            break;
        case 'b': {
            char *end;
            unsigned long b = strtoul(optarg, &end, 10);
            if (*end != '\0' || b < 64 || b > (1ul << 20) || (b & (b - 1)) != 0)
                return usage();
            block = b;
            break;
        }
        case 'w': {
            char *end;
            long w = strtol(optarg, &end, 10);
            if (*end != '\0' || w < 1 || w > 1024)
                return usage();
            window = (int)w;
            break;
        }
        case 'c': check = 1; break;
        case 'q': quiet = 1; break;
        case 'v': verbose = 1; break;
        case 'o': wav = optarg; break;
        case 'h': return usage_to(stdout, 0);
        default: return usage();
        }
    }
    if (optind != argc)
        return usage();

    size_t n = (size_t)(seconds * RATE);
    const size_t m = (size_t)(ir_seconds * RATE);
    if (n == 0 || m == 0)
        return usage();
    /* The output's format first: a bad extension fails before the work. */
    const int format = wav != NULL ? sound_format(wav, 2, (int)RATE, &why) : -1;
    if (format == 0) {
        fprintf(stderr, "reverb: %s: %s\n", wav, why);
        return 1;
    }
    double *file = NULL;
    if (in_path != NULL) {
        file = sound_read(in_path, 2, (int)RATE, seconds_given ? n : 3600 * (size_t)RATE, &n, &why);
        if (file == NULL) {
            fprintf(stderr, "reverb: %s: %s\n", in_path, why);
            return 1;
        }
    }
    fft_cplx *in = malloc(n * sizeof *in);
    double *ir = malloc(m * sizeof *ir);
    if (in == NULL || ir == NULL) {
        perror("reverb");
        return 1;
    }
    if (file != NULL) {
        for (size_t i = 0; i < n; i++)
            in[i] = CMPLX(file[2 * i], file[2 * i + 1]);
        free(file);
    } else {
        reverb_demo_signal(in, n, RATE, 1);
    }
    reverb_demo_ir(ir, m, RATE, 2);
    reverb *r = reverb_new(ir, m, block, n, 0);
    const size_t len = r != NULL ? reverb_out_len(r) : 0;
    out_buf = r != NULL ? malloc(len * sizeof *out_buf) : NULL;
    if (out_buf == NULL) {
        perror("reverb");
        return 1;
    }

    sf_init(NULL);
    sf_stats st;
    sf_stats_read(&st);
    reverb_source src = reverb_array_source(in, n);
    int show = !quiet && isatty(2);
    double t0 = now();
    int rc = src.block != NULL ? reverb_run(r, src, to_buffer, out_buf, window, show ? progress : NULL)
                               : -1;
    double t = now() - t0;
    if (rc != 0) {
        int e = errno;
        fprintf(stderr, "reverb: %s\n", reverb_error(r) ? reverb_error(r) : strerror(e));
        return 1;
    }
    if (verbose) {
        sf_stats s2;
        sf_stats_read(&s2);
        printf("reverb: tasks created %llu, run inline %llu, by the pool %llu, stolen %llu; gets blocked %llu, slept %llu\n",
                (unsigned long long)s2.created, (unsigned long long)s2.run_inline,
                (unsigned long long)s2.run_pool, (unsigned long long)s2.run_stolen,
                (unsigned long long)s2.gets_blocked, (unsigned long long)s2.sleeps);
    }
    uint64_t sum = fnv(out_buf, len * sizeof *out_buf);
    printf("reverb: %.1f s of stereo at 44.1 kHz%s%s * a %.2f s impulse response, blocks of %zu: "
           "%.3f s at SF_THREADS=%d; output checksum %016llx\n",
           (double)n / RATE, in_path != NULL ? " from " : "", in_path != NULL ? in_path : "",
           ir_seconds, block, t, st.threads, (unsigned long long)sum);
    int status = 0;
    if (check) {
        fft_cplx *seq = malloc(len * sizeof *seq);
        double t1 = now();
        if (seq == NULL || reverb_run_seq(r, in, NULL, to_buffer, seq) != 0) {
            perror("reverb: reverb_run_seq");
            return 1;
        }
        double ts = now() - t1;
        int same = memcmp(seq, out_buf, len * sizeof *seq) == 0;
        printf("reverb: sequential (no libsf) %.3f s; outputs %s\n", ts,
               same ? "bit-identical" : "DIFFER");
        status = !same;
        free(seq);
    }
    if (wav != NULL) {
        double *frame = malloc(len * 2 * sizeof *frame);
        if (frame == NULL) {
            perror("reverb");
            return 1;
        }
        for (size_t i = 0; i < len; i++) {
            double dl = i < n ? creal(in[i]) : 0, dr = i < n ? cimag(in[i]) : 0;
            frame[2 * i] = 0.7 * dl + 0.3 * creal(out_buf[i]);
            frame[2 * i + 1] = 0.7 * dr + 0.3 * cimag(out_buf[i]);
        }
        sound_writer w;
        if (sound_create(&w, wav, format, 2, (int)RATE, &why) != 0) {
            fprintf(stderr, "reverb: %s: %s\n", wav, why);
            return 1;
        }
        int wrote = sound_write(&w, frame, len, &why) == 0;
        if (!wrote)
            sound_close(&w, NULL);
        if (!wrote || sound_close(&w, &why) != 0) {
            fprintf(stderr, "reverb: %s: %s\n", wav, why);
            return 1;
        }
        free(frame);
    }
    sf_shutdown();
    reverb_array_source_free(src);
    reverb_free(r);
    free(in), free(ir), free(out_buf);
    return status;
}
