/*
 * fft_leaves.h - a parallel complex FFT whose large transforms split into
 * libsf loops over FFTW plans for the leaves (fft_leaves.c), for bench_fft:
 * what a user combining FFTW's leaves with libsf's parallel structure would
 * write. Needs FFTW (SF_HAVE_FFTW).
 *
 * Conventions are FFTW's: sign FFTW_FORWARD (e^-2 pi i jk/n) or
 * FFTW_BACKWARD (e^+2 pi i jk/n), unscaled, out of place.
 */
#ifndef TOOLS_BENCH_FFT_LEAVES_H
#define TOOLS_BENCH_FFT_LEAVES_H

#include <stddef.h>

#include <fftw3.h>

typedef struct fftl_plan fftl_plan;

/* Transforms of fewer points than this are one FFTW plan run by the calling
 * thread (why this one: fft_leaves.c). */
#define FFTL_DEFAULT_CUTOFF 65536

/*
 * A plan for n points (a power of two >= 2). flags: FFTW's planner flags
 * (FFTW_ESTIMATE, FFTW_MEASURE), to which FFTW_UNALIGNED is added for a
 * transform below cutoff (0: FFTL_DEFAULT_CUTOFF), which runs on the
 * caller's arrays as they come. FFTW's planner is not thread-safe: make and
 * free plans in one thread, outside tasks. NULL with errno EINVAL or ENOMEM.
 */
fftl_plan *fftl_new(size_t n, int sign, unsigned flags, size_t cutoff);
void fftl_free(fftl_plan *p);
size_t fftl_size(const fftl_plan *p);

/*
 * out = the DFT of in (n points, not overlapping, any alignment). A plan
 * may run in several threads or tasks at once (it holds nothing a run
 * writes but per-thread buffers). From n = cutoff up, the two passes are
 * sf_for_range loops (so the runtime starts if it has not). Returns 0, or
 * -1 with errno (a loop's: ENOMEM, EAGAIN).
 */
int fftl_execute(const fftl_plan *p, const fftw_complex *in, fftw_complex *out);

#endif
