/*
 * reverb.h - convolution reverb on libsf: uniformly partitioned overlap-add
 * convolution as a pipeline of lazy futures (see reverb.c), shared by
 * samples/reverb, samples/sfpiece, their tests and tools/bench/bench_fft.
 *
 * A signal is a sequence of complex frames, the left channel in the real part
 * and the right one in the imaginary part (so interleaved stereo doubles are
 * already in this layout, and one complex convolution with a real impulse
 * response reverberates both channels at once). Mono: imaginary parts 0.
 */
#ifndef SAMPLES_AUDIO_REVERB_H
#define SAMPLES_AUDIO_REVERB_H

#include <stddef.h>
#include <stdint.h>

#include "fft.h"
#include "sf.h"

typedef struct reverb reverb;

/*
 * Where the input comes from, block by block. block(ctx, k, frames) makes
 * (sf_do) and returns the future of input block k: its task returns a
 * malloc'd array of `frames` fft_cplx, frames [k * frames, (k + 1) * frames)
 * of the input, zeros past its end; the reverb frees it. block is called
 * lazily, inside the task that needs the block, and returns NULL (errno set)
 * on failure.
 */
typedef struct reverb_source {
    sf_future *(*block)(void *ctx, size_t k, size_t frames);
    void *ctx;
} reverb_source;

/* Receives the output in order, block by block, in the thread that called
 * reverb_run: frames [first, first + n). Returns 0, or nonzero to stop the
 * run (reverb_run then returns -1 with errno ECANCELED). */
typedef int (*reverb_sink)(void *ctx, size_t first, const fft_cplx *y, size_t n);

/* A reverb for an input of in_len frames and the real impulse response ir of
 * ir_len frames, in blocks of `block` frames (a power of two; FFTs of 2 *
 * block points whose tasks split down to `cutoff` points, 0: the FFT's
 * default). The output has in_len + ir_len - 1 frames. NULL with errno
 * EINVAL or ENOMEM. */
reverb *reverb_new(const double *ir, size_t ir_len, size_t block, size_t in_len, size_t cutoff);
void reverb_free(reverb *r);
size_t reverb_out_len(const reverb *r);
size_t reverb_block(const reverb *r);

/* The pipeline: computes the output lazily, `window` output blocks ahead of
 * the one the sink gets next (0: 4), and hands each to sink in order.
 * progress, if not NULL, is called after each block with (done, total)
 * blocks. Returns 0, or -1 with errno (ENOMEM, ECANCELED from the sink,
 * or a failure of the input's tasks). Call it from a thread that is not
 * running a task (its deadlock-freedom argument, in reverb.c, counts on no
 * task frame beneath it). */
int reverb_run(reverb *r, reverb_source src, reverb_sink sink, void *sink_ctx, int window,
               void (*progress)(size_t done, size_t total));

/* Why the last reverb_run failed (the chain of task failure messages from
 * the output block down to the input's), or NULL. */
const char *reverb_error(const reverb *r);

/* The FFT engine of reverb_run_seq: out = forward DFT / inverse DFT (scaled
 * by 1/n) of n = 2 * block points. */
typedef struct reverb_engine {
    void (*forward)(void *ctx, const fft_cplx *in, fft_cplx *out);
    void (*inverse)(void *ctx, const fft_cplx *in, fft_cplx *out);
    void *ctx;
} reverb_engine;

/* The engine of reverb_run's transforms from now on (NULL, the default:
 * this FFT's parallel plan; the struct is copied). Its functions run in
 * reverb_run's tasks, several at once, so they must be safe to call
 * concurrently (FFTW's fftw_execute_dft is). With an engine whose
 * arithmetic differs from this FFT's, reverb_run's output is no longer
 * bit-identical to reverb_run_seq's (engine NULL); tools/bench/bench_fft
 * runs the pipeline over FFTW leaves this way. */
void reverb_set_engine(reverb *r, const reverb_engine *engine);

/* The same convolution with no libsf at all: a plain loop over the blocks of
 * an input array, same arithmetic in the same order, so with engine NULL
 * (this FFT, sequential) its output is bit-identical to reverb_run's. Other
 * engines (FFTW in tools/bench) for comparison. Returns 0 or -1 (ENOMEM,
 * ECANCELED). */
int reverb_run_seq(reverb *r, const fft_cplx *in, const reverb_engine *engine, reverb_sink sink,
                   void *sink_ctx);

/* A source reading an array of n frames (which must outlive the run). The
 * returned source holds a malloc'd context: free it with
 * reverb_array_source_free. */
reverb_source reverb_array_source(const fft_cplx *x, size_t n);
void reverb_array_source_free(reverb_source src);

/* Demo material, deterministic for a seed: a synthetic impulse response of
 * n frames at `rate` Hz - noise decaying by 60 dB over its length, scaled to
 * unit energy - and a test signal of n stereo frames: plucked tones from a
 * pentatonic scale every quarter second, panned in turn. */
void reverb_demo_ir(double *ir, size_t n, double rate, uint64_t seed);
void reverb_demo_signal(fft_cplx *x, size_t n, double rate, uint64_t seed);

#endif
