/*
 * fft.h - a parallel complex FFT on libsf, shared by the audio samples
 * (samples/reverb, samples/sfpiece), their tests and tools/bench/bench_fft.
 *
 * A plan holds the twiddle factors of one power-of-two size n; it transforms
 * any power-of-two size m <= n (the reverb's blocks use one plan). The
 * transform is a recursive decimation in time, radix 4 (radix 2 at 8
 * points): the four quarters are transformed independently, three as sf_do
 * tasks while the calling thread does the fourth, then the butterflies
 * combine them (a big butterfly pass is split into tasks too). Below the
 * plan's cutoff the recursion runs sequentially with no libsf call at all,
 * so a cutoff above m is the plain sequential FFT (the benchmark's
 * baseline). A parallel transform's sequential leaves copy their strided
 * input into a buffer of their thread's, kept in the plan by
 * sf_thread_index() (fft.c, Leaves), freed with it. The result does not depend on the cutoff or on the schedule:
 * every output is the same sequence of floating-point operations.
 *
 * Conventions (FFTW's): forward X[k] = sum_j x[j] e^(-2 pi i jk/m), backward
 * with e^(+2 pi i jk/m), neither scaled; fft_inverse() is the backward
 * transform scaled by 1/m, so fft_inverse(fft_forward(x)) == x.
 */
#ifndef SAMPLES_AUDIO_FFT_H
#define SAMPLES_AUDIO_FFT_H

#include <complex.h>
#include <stddef.h>

typedef double complex fft_cplx;

/* C11's CMPLX(x, y), which glibc's complex.h defines only for compilers with
 * gcc's __builtin_complex (clang 14 has none): the same value through a
 * union, since C11 lays a complex out as an array of its two parts - exact
 * for every pair, where x + y * I would change signed zeros and infinities. */
#ifndef CMPLX
#define CMPLX(x, y) ((union { fft_cplx z; double p[2]; }){.p = {(double)(x), (double)(y)}}.z)
#endif

typedef struct fft_plan fft_plan;

/* The default cutoff (why this one: fft.c): transforms and butterfly passes
 * of fewer points run sequentially. */
#define FFT_DEFAULT_CUTOFF 4096

/* A plan for sizes up to n (a power of two >= 2). cutoff: sizes below it run
 * sequentially (0: FFT_DEFAULT_CUTOFF; SIZE_MAX: never a task). NULL with
 * errno EINVAL (n not a power of two) or ENOMEM. */
fft_plan *fft_plan_new(size_t n, size_t cutoff);
void fft_plan_free(fft_plan *p);
size_t fft_plan_size(const fft_plan *p);

/* out = DFT of in, m points (a power of two, 2 <= m <= the plan's n). in and
 * out must not overlap. Returns 0, or -1 with errno EINVAL (bad m, NULL). A
 * runtime failure (sf_get) aborts with a message: the tasks' frames are on
 * this stack and cannot be abandoned. */
int fft_forward(const fft_plan *p, const fft_cplx *in, fft_cplx *out, size_t m);

/* h[0..L) = a windowed-sinc (Blackman) low-pass of cutoff fc cycles per
 * sample, scaled to a gain of 1 at 0 Hz; L >= 2. The filter of
 * samples/stream and samples/jack. */
void fft_lowpass(fft_cplx *h, size_t L, double fc);
/* The backward DFT, unscaled (FFTW_BACKWARD). */
int fft_backward(const fft_plan *p, const fft_cplx *in, fft_cplx *out, size_t m);
/* The backward DFT scaled by 1/m: the inverse of fft_forward. */
int fft_inverse(const fft_plan *p, const fft_cplx *in, fft_cplx *out, size_t m);

#endif
