/*
 * test_granular - checks samples/audio/granular.c, in TAP.
 *
 *  - a piece rendered whole and rendered in stretches of 4096 frames (as
 *    sfpiece renders it) is the same, bit for bit: every grain sample is a
 *    pure function of the score, summed in the same order either way;
 *  - the rendering is bit-identical at SF_THREADS=1, 2 and 4;
 *  - the score: thousands of grains (a 20 s piece has more than 5,000),
 *    the same for the same seed, another for another seed; stretches past
 *    the end are silence; bad arguments give EINVAL;
 *  - with a source (granular_source: grains that play a sound, here 0.3 s of
 *    a tone shorter than the piece, so the reads loop): not silence and not
 *    the oscillators' rendering, bit-identical at SF_THREADS=1 and 2 and in
 *    stretches, and dropping the source gives the oscillators' rendering
 *    back bit for bit (the score is the same).
 * 4 s pieces (1 s under a sanitizer).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "granular.h"
#include "sf.h"
#include "tap.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SECONDS 1.0
#else
#define SECONDS 4.0
#endif
#define STRETCH 4096

static double *get(sf_future *f)
{
    double *v = f != NULL ? sf_get(f) : NULL;
    if (v == NULL) {
        printf("Bail out! a render failed: %s\n", strerror(errno));
        exit(1);
    }
    sf_release(f);
    return v;
}

/* The piece rendered whole at `threads`. */
static double *whole(const granular *g, int threads)
{
    start(threads);
    double *v = get(granular_render(g, 0, granular_frames(g)));
    sf_shutdown();
    return v;
}

int main(void)
{
    printf("1..12\n");
    granular *g = granular_new(SECONDS, 42);
    if (g == NULL) {
        printf("Bail out! granular_new: %s\n", strerror(errno));
        return 1;
    }
    const size_t frames = granular_frames(g), bytes = 2 * frames * sizeof(double);
    double *ref = whole(g, 1);
    int silent = 1;
    for (size_t i = 0; i < 2 * frames; i++)
        if (ref[i] != 0)
            silent = 0;
    report(frames == (size_t)(SECONDS * GRANULAR_RATE) && !silent,
           "a %.0f s piece (%zu grains in %zu clouds) renders %zu frames, not silence", SECONDS,
           granular_grains(g), granular_clouds(g), frames);
    for (int threads = 2; threads <= 4; threads += 2) {
        double *v = whole(g, threads);
        report(memcmp(v, ref, bytes) == 0, "SF_THREADS=%d renders it bit-identical to 1", threads);
        free(v);
    }
    /* In stretches, several queued at once, got in order. */
    start(2);
    double *parts = malloc(bytes + 2 * STRETCH * sizeof(double));
    size_t n = (frames + STRETCH - 1) / STRETCH;
    sf_future **fs = malloc(n * sizeof *fs);
    if (parts == NULL || fs == NULL) {
        printf("Bail out! out of memory\n");
        return 1;
    }
    for (size_t k = 0; k < n; k++)
        fs[k] = granular_render(g, k * STRETCH, STRETCH);
    int tail_silent = 1;
    for (size_t k = 0; k < n; k++) {
        double *v = get(fs[k]);
        memcpy(parts + 2 * k * STRETCH, v, 2 * STRETCH * sizeof *v);
        for (size_t i = k * STRETCH; i < (k + 1) * STRETCH; i++)
            if (i >= frames && (v[2 * (i - k * STRETCH)] != 0 || v[2 * (i - k * STRETCH) + 1] != 0))
                tail_silent = 0;
        free(v);
    }
    report(memcmp(parts, ref, bytes) == 0,
           "rendered in %zu stretches of %d frames at SF_THREADS=2: bit-identical to whole", n,
           STRETCH);
    report(tail_silent, "the frames past the piece's end are silence");
    double *past = get(granular_render(g, frames + 10, 100));
    int zero = 1;
    for (int i = 0; i < 200; i++)
        zero = zero && past[i] == 0;
    report(zero, "a stretch entirely past the end is silence");
    free(past);
    sf_shutdown();

    granular *big = granular_new(20, 42), *same = granular_new(SECONDS, 42),
             *other = granular_new(SECONDS, 43);
    report(big != NULL && granular_grains(big) > 5000 && same != NULL && other != NULL &&
               granular_grains(same) == granular_grains(g) &&
               granular_grains(other) != granular_grains(g),
           "a 20 s score has %zu grains (> 5,000); the same seed the same score, another seed "
           "another",
           big != NULL ? granular_grains(big) : 0);
    errno = 0;
    int ok = granular_new(0, 1) == NULL && errno == EINVAL;
    errno = 0;
    ok = ok && granular_new(3601, 1) == NULL && errno == EINVAL;
    errno = 0;
    ok = ok && granular_render(g, 0, 0) == NULL && errno == EINVAL;
    report(ok, "0 s, 3601 s and an empty stretch give EINVAL");
    granular_free(big), granular_free(same), granular_free(other);

    /* A source: a 0.3 s tone rising from 300 to 600 Hz, its phase summed
     * frame by frame. */
    const size_t src_n = (size_t)(0.3 * GRANULAR_RATE);
    double *src = malloc(src_n * sizeof *src), phase = 0;
    if (src == NULL) {
        printf("Bail out! out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < src_n; i++) {
        src[i] = 0.8 * sin(2 * M_PI * phase);
        phase += (300.0 + 300.0 * (double)i / (double)src_n) / GRANULAR_RATE;
    }
    granular_source(g, src, src_n);
    double *with = whole(g, 1);
    silent = 1;
    for (size_t i = 0; i < 2 * frames; i++)
        if (with[i] != 0)
            silent = 0;
    report(!silent && memcmp(with, ref, bytes) != 0,
           "with a %zu-frame source: not silence, not the oscillators' rendering", src_n);
    double *with2 = whole(g, 2);
    report(memcmp(with2, with, bytes) == 0,
           "with the source, SF_THREADS=2 renders it bit-identical to 1");
    start(2);
    for (size_t k = 0; k < n; k++)
        fs[k] = granular_render(g, k * STRETCH, STRETCH);
    for (size_t k = 0; k < n; k++) {
        double *v = get(fs[k]);
        memcpy(parts + 2 * k * STRETCH, v, 2 * STRETCH * sizeof *v);
        free(v);
    }
    sf_shutdown();
    report(memcmp(parts, with, bytes) == 0,
           "with the source, rendered in %zu stretches: bit-identical to whole", n);
    granular_source(g, NULL, 0);
    double *back = whole(g, 1);
    report(memcmp(back, ref, bytes) == 0,
           "the source dropped: the oscillators' rendering again, bit for bit");
    free(src), free(with), free(with2), free(back);
    granular_free(g);
    free(ref), free(parts), free(fs);
    return failures != 0;
}
