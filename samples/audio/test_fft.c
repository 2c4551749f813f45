/*
 * test_fft - checks samples/audio/fft.c, in TAP (one line per case).
 *
 *  - against FFTW (when configure found it: SF_HAVE_FFTW), sizes
 *    2^10 .. 2^20, forward and inverse, at SF_THREADS=1 and 2: the relative
 *    RMS error sqrt(sum |ours - fftw|^2 / sum |fftw|^2) must be < 1e-12
 *    (double precision; this FFT measures 4e-16 .. 7e-16 here). Without
 *    FFTW each of those cases reports "# SKIP", never a silent pass;
 *  - against a direct O(n^2) DFT at 2^10 (long double sums), always;
 *  - the parallel transform is bit-identical to the sequential one (cutoff
 *    above n: no task) at every size, and inverse(forward(x)) == x within
 *    1e-12;
 *  - bad arguments give EINVAL.
 * The input is deterministic pseudo-random noise. Under ThreadSanitizer the
 * largest size is 2^14 (TSan makes the FFT ~30x slower), which the plan line
 * and each case name show.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SF_HAVE_FFTW
#include <fftw3.h>
#endif

#include "fft.h"
#include "sf.h"
#include "tap.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define MAX_LOG2 14
#else
#define MAX_LOG2 20
#endif
#define MIN_LOG2 10
#define TOLERANCE 1e-12

static void noise(fft_cplx *x, size_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15u + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double re = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double im = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        x[i] = CMPLX(re, im);
    }
}

static double rel_rms(const fft_cplx *a, const fft_cplx *b, size_t n)
{
    long double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double dr = creal(a[i]) - creal(b[i]), di = cimag(a[i]) - cimag(b[i]);
        num += (long double)dr * dr + (long double)di * di;
        den += (long double)creal(b[i]) * creal(b[i]) + (long double)cimag(b[i]) * cimag(b[i]);
    }
    return den > 0 ? (double)sqrtl(num / den) : (double)sqrtl(num);
}

/* Our transforms at one thread count against FFTW (or SKIP), and against the
 * sequential transform. */
static void against_fftw(int threads)
{
    const size_t nmax = (size_t)1 << MAX_LOG2;
    fft_plan *par = fft_plan_new(nmax, 0);
    fft_plan *seq = fft_plan_new(nmax, SIZE_MAX);
    fft_cplx *x = malloc(nmax * sizeof *x), *y = malloc(nmax * sizeof *y);
    fft_cplx *ref = malloc(nmax * sizeof *ref), *ys = malloc(nmax * sizeof *ys);
    if (!par || !seq || !x || !y || !ref || !ys) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    start(threads);
    for (int lg = MIN_LOG2; lg <= MAX_LOG2; lg++) {
        size_t n = (size_t)1 << lg;
        for (int inverse = 0; inverse <= 1; inverse++) {
            const char *dir = inverse ? "inverse" : "forward";
            noise(x, n, (uint64_t)lg * 2 + (uint64_t)inverse);
            int rc = inverse ? fft_inverse(par, x, y, n) : fft_forward(par, x, y, n);
            int rcs = inverse ? fft_inverse(seq, x, ys, n) : fft_forward(seq, x, ys, n);
            report(rc == 0 && rcs == 0 && memcmp(y, ys, n * sizeof *y) == 0,
                   "%s 2^%d, SF_THREADS=%d: parallel == sequential, bit for bit", dir, lg,
                   threads);
#ifdef SF_HAVE_FFTW
            fftw_plan fp = fftw_plan_dft_1d((int)n, (fftw_complex *)x, (fftw_complex *)ref,
                                            inverse ? FFTW_BACKWARD : FFTW_FORWARD,
                                            FFTW_ESTIMATE);
            fftw_execute(fp);
            fftw_destroy_plan(fp);
            if (inverse)
                for (size_t i = 0; i < n; i++)
                    ref[i] /= (double)n;
            double err = rel_rms(y, ref, n);
            report(err < TOLERANCE, "%s 2^%d, SF_THREADS=%d: relative RMS error vs FFTW %.2e < %.0e",
                   dir, lg, threads, err, TOLERANCE);
#else
            report(1, "%s 2^%d, SF_THREADS=%d: vs FFTW # SKIP FFTW (fftw3.h, -lfftw3) not found by configure",
                   dir, lg, threads);
#endif
        }
        /* Round trip. */
        noise(x, n, 77);
        fft_forward(par, x, y, n);
        fft_inverse(par, y, ref, n);
        double err = rel_rms(ref, x, n);
        report(err < TOLERANCE, "inverse(forward(x)) 2^%d, SF_THREADS=%d: relative RMS error %.2e",
               lg, threads, err);
    }
    sf_shutdown();
    fft_plan_free(par);
    fft_plan_free(seq);
    free(x), free(y), free(ref), free(ys);
}

/* A direct DFT of 2^10 points, long double accumulation. */
static void against_direct(void)
{
    const size_t n = 1024;
    fft_cplx *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *d = malloc(n * sizeof *d);
    fft_plan *p = fft_plan_new(n, 64);
    noise(x, n, 5);
    start(2);
    int rc = fft_forward(p, x, y, n);
    sf_shutdown();
    for (size_t k = 0; k < n; k++) {
        long double re = 0, im = 0;
        for (size_t j = 0; j < n; j++) {
            long double a = -2.0L * 3.14159265358979323846264338327950288L *
                            (long double)((j * k) % n) / (long double)n;
            long double c = cosl(a), s = sinl(a);
            re += creal(x[j]) * c - cimag(x[j]) * s;
            im += creal(x[j]) * s + cimag(x[j]) * c;
        }
        d[k] = CMPLX((double)re, (double)im);
    }
    double err = rel_rms(y, d, n);
    report(rc == 0 && err < TOLERANCE,
           "forward 2^10 (cutoff 64: tasks at every level), SF_THREADS=2: relative RMS error vs a direct DFT %.2e < %.0e",
           err, TOLERANCE);
    fft_plan_free(p);
    free(x), free(y), free(d);
}

static void bad_arguments(void)
{
    fft_cplx a[8] = {0}, b[8];
    fft_plan *p = fft_plan_new(8, 0);
    errno = 0;
    int ok = fft_plan_new(12, 0) == NULL && errno == EINVAL;
    errno = 0;
    ok = ok && fft_forward(p, a, b, 16) == -1 && errno == EINVAL;
    errno = 0;
    ok = ok && fft_forward(p, a, b, 6) == -1 && errno == EINVAL;
    errno = 0;
    ok = ok && fft_inverse(p, NULL, b, 8) == -1 && errno == EINVAL;
    ok = ok && fft_forward(p, a, b, 8) == 0;
    report(ok, "bad sizes and NULL give EINVAL; a plan transforms its own size");
    fft_plan_free(p);
}

int main(void)
{
    int sizes = MAX_LOG2 - MIN_LOG2 + 1;
    printf("1..%d\n", 2 * sizes * 5 + 2);
    printf("# sizes 2^%d .. 2^%d%s\n", MIN_LOG2, MAX_LOG2,
           MAX_LOG2 < 20 ? " (smaller under a sanitizer)" : "");
    against_fftw(1);
    against_fftw(2);
    against_direct();
    bad_arguments();
    return failures != 0;
}
