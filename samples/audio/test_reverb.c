/*
 * test_reverb - checks samples/audio/reverb.c, in TAP (one line per case).
 *
 *  - the pipeline (reverb_run) against a direct O(N * M) convolution, long
 *    double sums, on short signals of several shapes (input shorter than a
 *    block, an exact number of blocks, an IR of one frame, an IR longer than
 *    the input): max |error| / max |direct| < 1e-12;
 *  - reverb_run at SF_THREADS=1, 2 and 4, with windows 1 and 8, is
 *    bit-identical to the sequential loop (reverb_run_seq), on 20 s of the
 *    demo signal * a 1 s IR (2 s and 0.5 s under a sanitizer);
 *  - reverb_run with an engine (reverb_set_engine) transforms through it,
 *    once per input and per output block, and with the FFT's own
 *    sequential transform as the engine stays bit-identical;
 *  - a failing input block fails the run with its code, a sink that stops
 *    it gives ECANCELED, and the runtime stays usable.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reverb.h"
#include "sf.h"
#include "tap.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define LONG_SECONDS 2.0
#define LONG_IR 0.5
#else
#define LONG_SECONDS 20.0
#define LONG_IR 1.0
#endif
#define TOLERANCE 1e-12

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    return p;
}

static int to_buffer(void *ctx, size_t first, const fft_cplx *y, size_t n)
{
    memcpy((fft_cplx *)ctx + first, y, n * sizeof *y);
    return 0;
}

static uint64_t rng = 12345;
static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

/* n random complex input frames and a random real IR of m taps. */
static void random_input(size_t n, size_t m, fft_cplx **x, double **h)
{
    *x = xmalloc(n * sizeof **x);
    *h = xmalloc(m * sizeof **h);
    for (size_t i = 0; i < n; i++)
        (*x)[i] = CMPLX(uniform(), uniform());
    for (size_t i = 0; i < m; i++)
        (*h)[i] = uniform();
}

static void direct_case(size_t n, size_t m, size_t block, int threads)
{
    fft_cplx *x;
    double *h;
    random_input(n, m, &x, &h);
    reverb *r = reverb_new(h, m, block, n, 64);
    size_t len = n + m - 1;
    fft_cplx *y = xmalloc(len * sizeof *y);
    memset(y, 0xff, len * sizeof *y); /* NaNs: every frame must be written */
    reverb_source src = reverb_array_source(x, n);
    start(threads);
    int rc = r != NULL ? reverb_run(r, src, to_buffer, y, 0, NULL) : -1;
    sf_shutdown();
    double maxerr = 0, maxref = 0;
    for (size_t t = 0; t < len; t++) {
        long double re = 0, im = 0;
        size_t lo = t >= n ? t - n + 1 : 0, hi = t < m - 1 ? t : m - 1;
        for (size_t k = lo; k <= hi; k++) {
            re += (long double)h[k] * creal(x[t - k]);
            im += (long double)h[k] * cimag(x[t - k]);
        }
        double er = fabs(creal(y[t]) - (double)re), ei = fabs(cimag(y[t]) - (double)im);
        if (!(er <= maxerr))
            maxerr = isnan(er) ? INFINITY : er;
        if (!(ei <= maxerr))
            maxerr = isnan(ei) ? INFINITY : ei;
        if (fabsl(re) > maxref)
            maxref = (double)fabsl(re);
        if (fabsl(im) > maxref)
            maxref = (double)fabsl(im);
    }
    double rel = maxref > 0 ? maxerr / maxref : maxerr;
    report(rc == 0 && r != NULL && len == reverb_out_len(r) && rel < TOLERANCE,
           "input %zu frames * IR %zu, blocks of %zu, SF_THREADS=%d: max error vs direct "
           "convolution %.2e of the peak < %.0e",
           n, m, block, threads, rel, TOLERANCE);
    reverb_array_source_free(src);
    reverb_free(r);
    free(x), free(h), free(y);
}

static void identical_to_sequential(void)
{
    const double rate = 44100;
    const size_t n = (size_t)(LONG_SECONDS * rate), m = (size_t)(LONG_IR * rate);
    fft_cplx *x = xmalloc(n * sizeof *x);
    double *h = xmalloc(m * sizeof *h);
    reverb_demo_signal(x, n, rate, 7);
    reverb_demo_ir(h, m, rate, 8);
    reverb *r = reverb_new(h, m, 1024, n, 512);
    if (r == NULL) {
        printf("Bail out! reverb_new: %s\n", strerror(errno));
        exit(1);
    }
    size_t len = reverb_out_len(r);
    fft_cplx *ref = xmalloc(len * sizeof *ref), *y = xmalloc(len * sizeof *y);
    int rc = reverb_run_seq(r, x, NULL, to_buffer, ref);
    report(rc == 0, "reverb_run_seq of %.1f s * %.1f s runs without libsf", LONG_SECONDS, LONG_IR);
    reverb_source src = reverb_array_source(x, n);
    static const int threads[] = {1, 2, 4};
    static const int windows[] = {1, 8};
    for (int t = 0; t < 3; t++)
        for (int w = 0; w < 2; w++) {
            memset(y, 0, len * sizeof *y);
            start(threads[t]);
            rc = reverb_run(r, src, to_buffer, y, windows[w], NULL);
            sf_shutdown();
            report(rc == 0 && memcmp(y, ref, len * sizeof *y) == 0,
                   "%.1f s * %.1f s, SF_THREADS=%d, window %d: bit-identical to the sequential "
                   "loop",
                   LONG_SECONDS, LONG_IR, threads[t], windows[w]);
        }
    reverb_array_source_free(src);
    reverb_free(r);
    free(x), free(h), free(ref), free(y);
}

/* An engine that counts its calls around the sequential FFT of 2B points:
 * the same arithmetic as the default engine, so the output must not move;
 * the counts show that the pipeline used it (the tasks call it on any
 * thread, hence atomics). */
struct counting {
    fft_plan *plan;
    atomic_size_t forward, inverse;
};

static void counting_forward(void *ctx, const fft_cplx *in, fft_cplx *out)
{
    struct counting *c = ctx;
    atomic_fetch_add(&c->forward, 1);
    fft_forward(c->plan, in, out, fft_plan_size(c->plan));
}

static void counting_inverse(void *ctx, const fft_cplx *in, fft_cplx *out)
{
    struct counting *c = ctx;
    atomic_fetch_add(&c->inverse, 1);
    fft_inverse(c->plan, in, out, fft_plan_size(c->plan));
}

static void engine_case(int threads)
{
    const size_t n = 5000, m = 900, block = 256;
    fft_cplx *x;
    double *h;
    random_input(n, m, &x, &h);
    reverb *r = reverb_new(h, m, block, n, 64);
    struct counting c = {fft_plan_new(2 * block, SIZE_MAX), 0, 0};
    if (r == NULL || c.plan == NULL) {
        printf("Bail out! reverb_new or fft_plan_new: %s\n", strerror(errno));
        exit(1);
    }
    size_t len = reverb_out_len(r);
    fft_cplx *ref = xmalloc(len * sizeof *ref), *y = xmalloc(len * sizeof *y);
    int rc = reverb_run_seq(r, x, NULL, to_buffer, ref);
    reverb_engine e = {counting_forward, counting_inverse, &c};
    reverb_set_engine(r, &e);
    reverb_source src = reverb_array_source(x, n);
    memset(y, 0, len * sizeof *y);
    start(threads);
    rc = rc == 0 ? reverb_run(r, src, to_buffer, y, 0, NULL) : rc;
    sf_shutdown();
    size_t nin = (n + block - 1) / block, nout = (len + block - 1) / block;
    size_t fw = atomic_load(&c.forward), inv = atomic_load(&c.inverse);
    report(rc == 0 && fw == nin && inv == nout && memcmp(y, ref, len * sizeof *y) == 0,
           "SF_THREADS=%d: reverb_run through an engine calls it %zu + %zu times (got %zu + "
           "%zu) and, with the sequential FFT as the engine, is bit-identical to the loop",
           threads, nin, nout, fw, inv);
    reverb_array_source_free(src);
    reverb_free(r);
    fft_plan_free(c.plan);
    free(x), free(h), free(ref), free(y);
}

/* A source whose block 3 fails with ENOSPC. */
static void *failing_block(void *arg)
{
    size_t k = (size_t)(uintptr_t)arg & 0xffff, frames = (size_t)(uintptr_t)arg >> 16;
    if (k == 3) {
        sf_fail(ENOSPC, "block %zu is unreadable", k);
        return NULL;
    }
    fft_cplx *b = calloc(frames, sizeof *b);
    if (b != NULL)
        b[0] = 1.0;
    return b;
}

static sf_future *failing_source(void *ctx, size_t k, size_t frames)
{
    (void)ctx;
    return sf_do(failing_block, (void *)(uintptr_t)(k | frames << 16));
}

static int stop_at_two(void *ctx, size_t first, const fft_cplx *y, size_t n)
{
    (void)y, (void)n;
    size_t *calls = ctx;
    ++*calls;
    return first >= 2 * 256;
}

static void quiet_hook(int code, const char *message, void *ctx)
{
    (void)code, (void)message, (void)ctx;
}

static void failures_case(int threads)
{
    double h[300];
    for (int i = 0; i < 300; i++)
        h[i] = 1.0 / (i + 1);
    reverb *r = reverb_new(h, 300, 256, 256 * 10, 0);
    fft_cplx *y = xmalloc(reverb_out_len(r) * sizeof *y);
    /* A failure in a task nobody gets is reported by the hook: the tasks a
     * failed run leaves behind are not the test's subject here. */
    sf_on_unhandled(quiet_hook, NULL);
    start(threads);
    errno = 0;
    int rc = reverb_run(r, (reverb_source){failing_source, NULL}, to_buffer, y, 0, NULL);
    int e = errno;
    const char *msg = reverb_error(r);
    report(rc == -1 && e == ENOSPC && msg != NULL && strstr(msg, "block 3 is unreadable") != NULL,
           "SF_THREADS=%d: an input block that fails (ENOSPC) fails the run with its code and "
           "message (got %d, %s: %s)",
           threads, rc, strerror(e), msg != NULL ? msg : "no message");
    fft_cplx *x = xmalloc(2560 * sizeof *x);
    for (int i = 0; i < 2560; i++)
        x[i] = i % 100 == 0;
    reverb_source src = reverb_array_source(x, 2560);
    size_t calls = 0;
    errno = 0;
    rc = reverb_run(r, src, stop_at_two, &calls, 0, NULL);
    e = errno;
    report(rc == -1 && e == ECANCELED && calls == 3,
           "SF_THREADS=%d: a sink that stops the run at block 2 gives ECANCELED after 3 calls",
           threads);
    rc = reverb_run(r, src, to_buffer, y, 0, NULL);
    report(rc == 0, "SF_THREADS=%d: the reverb and the runtime work after both", threads);
    sf_shutdown();
    reverb_array_source_free(src);
    reverb_free(r);
    free(x), free(y);
}

static void bad_arguments(void)
{
    double h[4] = {1, 0, 0, 0};
    errno = 0;
    int ok = reverb_new(h, 4, 100, 10, 0) == NULL && errno == EINVAL;
    errno = 0;
    ok = ok && reverb_new(NULL, 4, 64, 10, 0) == NULL && errno == EINVAL;
    errno = 0;
    ok = ok && reverb_new(h, 0, 64, 10, 0) == NULL && errno == EINVAL;
    reverb *r = reverb_new(h, 4, 64, 10, 0);
    errno = 0;
    ok = ok && r != NULL && reverb_run(r, (reverb_source){NULL, NULL}, to_buffer, NULL, 0, NULL) == -1 &&
         errno == EINVAL;
    report(ok, "bad block sizes, NULL or empty IR, a NULL source give EINVAL");
    reverb_free(r);
}

int main(void)
{
    printf("1..%d\n", 6 + 1 + 6 + 2 + 6 + 1);
    direct_case(3000, 700, 256, 2);  /* several blocks each */
    direct_case(100, 50, 256, 2);    /* both shorter than a block */
    direct_case(1024, 1, 256, 1);    /* IR of one frame: a copy */
    direct_case(512, 2000, 128, 4);  /* IR longer than the input */
    direct_case(4096, 513, 512, 2);  /* input an exact number of blocks */
    direct_case(2000, 1000, 64, 2);  /* many partitions */
    identical_to_sequential();
    engine_case(1);
    engine_case(2);
    failures_case(1);
    failures_case(2);
    bad_arguments();
    return failures != 0;
}
