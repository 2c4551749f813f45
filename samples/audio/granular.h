/*
 * granular.h - granular synthesis on libsf, shared by samples/granular,
 * samples/sfpiece and their tests (see granular.c).
 *
 * A piece is a score made from a seed: clouds (textures with their own pitch
 * set, density, grain lengths, waveform, stereo spread and fade) of many
 * short grains (a windowed oscillator each, or a window on a source sound:
 * pitch, start, length, envelope, amplitude, pan). Rendering a stretch of
 * the piece is a task that gets one task per cloud, each of which gets one
 * task per grain. Every sample is a pure function of the score (and the
 * source), and the mix adds in a fixed order, so a rendering is the same bit
 * for bit whatever the number of threads, and the same whether the piece is
 * rendered whole or stretch by stretch.
 */
#ifndef SAMPLES_AUDIO_GRANULAR_H
#define SAMPLES_AUDIO_GRANULAR_H

#include <stddef.h>
#include <stdint.h>

#include "sf.h"

#define GRANULAR_RATE 44100

typedef struct granular granular;

/* The score of a piece of `seconds` (0 < seconds <= 3600) from `seed`. NULL
 * with errno EINVAL or ENOMEM. */
granular *granular_new(double seconds, uint64_t seed);
void granular_free(granular *g);
size_t granular_frames(const granular *g); /* the piece's length in frames */

/* Makes the grains play `frames` frames of mono `src` at GRANULAR_RATE
 * (looped, transposed by each grain's note, read from where the grain sits
 * in the piece: see granular.c) instead of oscillators; src NULL or frames 0
 * goes back to the oscillators. The score is unchanged. src is borrowed: it
 * must outlive every rendering. Call it before rendering, not during. */
void granular_source(granular *g, const double *src, size_t frames);
size_t granular_grains(const granular *g); /* grains in the score */
size_t granular_clouds(const granular *g);

/*
 * Makes (sf_do, nothing runs yet) the future of frames [first, first + n) of
 * the piece (zeros past its end): the task returns a malloc'd array of n
 * stereo frames, 2n doubles interleaved left, right (the layout of n
 * fft_cplx, L + iR: the reverb's input), which the getter frees. It gets a
 * task per cloud sounding in the stretch, which gets a task per grain; a
 * failure (no memory) fails the task with ENOMEM. NULL with errno if sf_do
 * fails.
 */
sf_future *granular_render(const granular *g, size_t first, size_t n);

/* The mix's soft limiter, applied by the programs before writing: tanh. */
double granular_limit(double x);

#endif
