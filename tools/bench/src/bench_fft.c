/*
 * bench_fft - the audio samples' FFT and convolution reverb (samples/audio)
 * against plain sequential code, FFTW, and libsf over FFTW leaves, in one
 * run, as a Markdown table.
 *
 *     tools/bench/bench_fft [reps=5] [measure] [quick]   # in the build directory
 *     tools/bench/bench_fft cutoff [reps=5]              # the FFT cutoff sweep
 *     tools/bench/bench_fft check                        # the leaf engine vs FFTW
 *
 * Rows: the complex FFT of 2^20 and 2^22 points (forward, out of place) and
 * the reverb (60 s of 44.1 kHz stereo * a 3 s impulse response, blocks of
 * 4096: 646 blocks, FFTs of 8192 points). Columns:
 *   sequential   this FFT with no libsf call (cutoff above n; the reverb's
 *                plain loop, reverb_run_seq), no runtime started;
 *   libsf 1, 2   sf_init with threads = 1, 2 (the reverb: reverb_run, the
 *                pipeline of lazy futures);
 *   FFTW 1       fftw_plan_dft_1d with FFTW_ESTIMATE (FFTW_MEASURE with
 *                "measure"), only fftw_execute timed; the reverb: the same
 *                plain loop with FFTW's 8192-point transforms;
 *   FFTW 2       the same plan made after fftw_plan_with_nthreads(2)
 *                (libfftw3_threads);
 *   libsf+FFTW leaves 1, 2
 *                sf_init with threads = 1, 2 and the four-step FFT of
 *                fft_leaves.c: two sf_for_range passes whose leaves are
 *                FFTW plans (same planner flags as the FFTW columns), only
 *                fftl_execute timed; the reverb: reverb_run, the same
 *                pipeline as libsf's, with these transforms
 *                (reverb_set_engine; at 8192 points, below the engine's
 *                cutoff, each is one FFTW plan run in its pipeline task).
 * Ratios: libsf 2 / sequential, libsf 1 / libsf 2, libsf 2 / FFTW 1 and 2,
 * libsf+FFTW leaves 2 / FFTW 2. Each cell is the median of `reps` runs;
 * the configurations run interleaved (one rep of each, then again) so that
 * drift in a shared machine hits all alike. Every libsf result is compared
 * with the sequential one, bit for bit (fft.c promises it); the leaf
 * engine's FFTs with FFTW's own single-threaded result and its reverb with
 * the sequential reverb, within LEAF_TOLERANCE of the peak (other
 * roundings); a mismatch exits 2. "quick": 2^16 and 2^18 and a 10 s reverb.
 * /proc/loadavg is printed before and after: on a loaded machine the
 * figures are indicative only. Without FFTW its columns say "not run".
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SF_HAVE_FFTW
#include <fftw3.h>

#include "fft_leaves.h"
#endif

#include "audio/fft.h"
#include "audio/reverb.h"
#include "sf.h"

#define MAX_REPS 64

enum { SEQ, SF1, SF2, FFTW1, FFTW2, LV1, LV2, NCOLS };
static const char *col_name[NCOLS] = {"sequential",    "libsf 1 thread",
                                      "libsf 2 threads", "FFTW 1 thread",
                                      "FFTW 2 threads", "libsf+FFTW leaves 1 thread",
                                      "libsf+FFTW leaves 2 threads"};

/* The check of the FFTW-leaf engine against FFTW (it computes the same DFT
 * with other roundings): max |error| / max |reference| over the whole
 * output. A double-precision FFT of 2^22 points is off by some 1e-16 of
 * the peak (about 4e-16 measured); a wrong twiddle or index is off by
 * order 1. */
#define LEAF_TOLERANCE 1e-12

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_fft: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void start(int threads)
{
    sf_config cfg = {.threads = threads};
    if (sf_init(&cfg) != 0)
        die("sf_init");
}

static void noise(fft_cplx *x, size_t n)
{
    uint64_t s = 88172645463325252u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double re = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = CMPLX(re, (double)(s >> 11) / 9007199254740992.0 - 0.5);
    }
}

static void load(const char *when)
{
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fgets(buf, sizeof buf, f) == NULL)
            strcpy(buf, "?\n");
        fclose(f);
    }
    printf("load average %s: %s", when, buf);
}

#ifdef SF_HAVE_FFTW
/* max |y - ref| / max |ref| over n points (the FFTW-leaf engine's checks). */
static double rel_error(const fft_cplx *y, const fft_cplx *ref, size_t n)
{
    double err = 0, peak = 0;
    for (size_t i = 0; i < n; i++) {
        double e = cabs(y[i] - ref[i]), a = cabs(ref[i]);
        if (!(e <= err)) /* a NaN counts as infinitely wrong */
            err = e == e ? e : INFINITY;
        if (a > peak)
            peak = a;
    }
    return peak > 0 ? err / peak : err;
}
#endif

/* --- the FFT rows ------------------------------------------------------- */

static int use_measure;

static void fft_row(int lg, int reps, double *cell)
{
    const size_t n = (size_t)1 << lg;
    fft_cplx *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *ref = malloc(n * sizeof *ref);
    fft_plan *par = fft_plan_new(n, 0), *seq = fft_plan_new(n, SIZE_MAX);
    if (!x || !y || !ref || !par || !seq)
        die("out of memory");
    noise(x, n);
    fft_forward(seq, x, ref, n);
#ifdef SF_HAVE_FFTW
    fftw_complex *fi = fftw_malloc(n * sizeof *fi), *fo = fftw_malloc(n * sizeof *fo);
    fftw_complex *lo = fftw_malloc(n * sizeof *lo);
    fft_cplx *fref = malloc(n * sizeof *fref);
    unsigned flags = use_measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    fftw_plan_with_nthreads(1);
    fftw_plan p1 = fftw_plan_dft_1d((int)n, fi, fo, FFTW_FORWARD, flags);
#ifdef SF_HAVE_FFTW_THREADS
    fftw_plan_with_nthreads(2);
    fftw_plan p2 = fftw_plan_dft_1d((int)n, fi, fo, FFTW_FORWARD, flags);
    fftw_plan_with_nthreads(1);
#endif
    fftl_plan *lp = fftl_new(n, FFTW_FORWARD, flags, 0);
    if (!fi || !fo || !lo || !fref || !lp)
        die("FFTW plans");
    memcpy(fi, x, n * sizeof *fi); /* after planning: MEASURE overwrites the arrays */
    /* The leaf engine's reference: FFTW's own single-threaded result. */
    fftw_execute(p1);
    memcpy(fref, fo, n * sizeof *fref);
#endif
    double t[NCOLS][MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        fft_forward(seq, x, y, n);
        t[SEQ][r] = now() - t0;
        for (int th = 1; th <= 2; th++) {
            start(th);
            memset(y, 0, n * sizeof *y);
            t0 = now();
            fft_forward(par, x, y, n);
            t[th == 1 ? SF1 : SF2][r] = now() - t0;
            sf_shutdown();
            if (memcmp(y, ref, n * sizeof *y) != 0) {
                fprintf(stderr, "bench_fft: 2^%d at %d threads differs from sequential\n", lg, th);
                exit(2);
            }
        }
#ifdef SF_HAVE_FFTW
        t0 = now();
        fftw_execute(p1);
        t[FFTW1][r] = now() - t0;
#ifdef SF_HAVE_FFTW_THREADS
        t0 = now();
        fftw_execute(p2);
        t[FFTW2][r] = now() - t0;
#endif
        for (int th = 1; th <= 2; th++) {
            start(th);
            memset(lo, 0, n * sizeof *lo);
            t0 = now();
            if (fftl_execute(lp, fi, lo) != 0)
                die("fftl_execute");
            t[th == 1 ? LV1 : LV2][r] = now() - t0;
            sf_shutdown();
            double e = rel_error((const fft_cplx *)lo, fref, n);
            if (!(e < LEAF_TOLERANCE)) {
                fprintf(stderr,
                        "bench_fft: 2^%d over FFTW leaves at %d threads: error %.3g of the "
                        "peak against FFTW, not below %.0e\n",
                        lg, th, e, LEAF_TOLERANCE);
                exit(2);
            }
        }
#endif
    }
    for (int c = 0; c < NCOLS; c++)
        cell[c] = -1;
    cell[SEQ] = median(t[SEQ], reps);
    cell[SF1] = median(t[SF1], reps);
    cell[SF2] = median(t[SF2], reps);
#ifdef SF_HAVE_FFTW
    cell[FFTW1] = median(t[FFTW1], reps);
    cell[LV1] = median(t[LV1], reps);
    cell[LV2] = median(t[LV2], reps);
    fftw_destroy_plan(p1);
#ifdef SF_HAVE_FFTW_THREADS
    cell[FFTW2] = median(t[FFTW2], reps);
    fftw_destroy_plan(p2);
#endif
    fftl_free(lp);
    fftw_free(fi), fftw_free(fo), fftw_free(lo);
    free(fref);
#endif
    fft_plan_free(par), fft_plan_free(seq);
    free(x), free(y), free(ref);
}

/* --- the reverb row ----------------------------------------------------- */

static int to_buffer(void *ctx, size_t first, const fft_cplx *y, size_t n)
{
    memcpy((fft_cplx *)ctx + first, y, n * sizeof *y);
    return 0;
}

#ifdef SF_HAVE_FFTW
struct fftw_engine {
    fftw_plan fwd, inv;
    size_t n;
};

static void fftw_fwd(void *ctx, const fft_cplx *in, fft_cplx *out)
{
    struct fftw_engine *e = ctx;
    fftw_execute_dft(e->fwd, (fftw_complex *)(uintptr_t)in, (fftw_complex *)out);
}

static void fftw_inv(void *ctx, const fft_cplx *in, fft_cplx *out)
{
    struct fftw_engine *e = ctx;
    fftw_execute_dft(e->inv, (fftw_complex *)(uintptr_t)in, (fftw_complex *)out);
    const double s = 1.0 / (double)e->n;
    for (size_t i = 0; i < e->n; i++)
        out[i] *= s;
}

static void fftw_engine_make(struct fftw_engine *e, size_t n, int threads)
{
    fftw_complex *a = fftw_malloc(n * sizeof *a), *b = fftw_malloc(n * sizeof *b);
    unsigned flags = (use_measure ? FFTW_MEASURE : FFTW_ESTIMATE) | FFTW_UNALIGNED;
#ifdef SF_HAVE_FFTW_THREADS
    fftw_plan_with_nthreads(threads);
#else
    (void)threads;
#endif
    e->fwd = fftw_plan_dft_1d((int)n, a, b, FFTW_FORWARD, flags);
    e->inv = fftw_plan_dft_1d((int)n, a, b, FFTW_BACKWARD, flags);
#ifdef SF_HAVE_FFTW_THREADS
    fftw_plan_with_nthreads(1);
#endif
    e->n = n;
    fftw_free(a), fftw_free(b);
}

/* The FFTW-leaf engine (fft_leaves.h) for reverb_run's tasks: fftl_execute
 * may run in several tasks at once. A failure (no memory for the four-step's
 * buffers; the reverb's 2B points are below the cutoff, one FFTW plan, so
 * not expected) ends the benchmark: a reverb_engine cannot report one. */
struct leaf_engine {
    fftl_plan *fwd, *inv;
};

static void leaf_fwd(void *ctx, const fft_cplx *in, fft_cplx *out)
{
    struct leaf_engine *e = ctx;
    if (fftl_execute(e->fwd, (const fftw_complex *)in, (fftw_complex *)out) != 0)
        die("fftl_execute");
}

static void leaf_inv(void *ctx, const fft_cplx *in, fft_cplx *out)
{
    struct leaf_engine *e = ctx;
    if (fftl_execute(e->inv, (const fftw_complex *)in, (fftw_complex *)out) != 0)
        die("fftl_execute");
    const size_t n = fftl_size(e->inv);
    const double s = 1.0 / (double)n;
    for (size_t i = 0; i < n; i++)
        out[i] *= s;
}
#endif

/* One run of the reverb's pipeline (reverb_run, rv's engine) at `threads`
 * into y (len frames, zeroed first) in a runtime of its own: the seconds
 * of reverb_run alone. */
static double timed_pipeline(reverb *rv, reverb_source src, fft_cplx *y, size_t len, int threads)
{
    start(threads);
    memset(y, 0, len * sizeof *y);
    double t0 = now();
    if (reverb_run(rv, src, to_buffer, y, 0, NULL) != 0)
        die("reverb_run");
    double t = now() - t0;
    sf_shutdown();
    return t;
}

static void reverb_row(double seconds, int reps, double *cell)
{
    const double rate = 44100;
    const size_t n = (size_t)(seconds * rate), m = (size_t)(3 * rate), block = 4096;
    fft_cplx *in = malloc(n * sizeof *in);
    double *ir = malloc(m * sizeof *ir);
    if (in == NULL || ir == NULL)
        die("out of memory");
    reverb_demo_signal(in, n, rate, 1);
    reverb_demo_ir(ir, m, rate, 2);
    reverb *rv = reverb_new(ir, m, block, n, 0);
    if (rv == NULL)
        die("reverb_new");
    const size_t len = reverb_out_len(rv);
    fft_cplx *y = malloc(len * sizeof *y), *ref = malloc(len * sizeof *ref);
    if (y == NULL || ref == NULL)
        die("out of memory");
    reverb_source src = reverb_array_source(in, n);
    if (reverb_run_seq(rv, in, NULL, to_buffer, ref) != 0)
        die("reverb_run_seq");
#ifdef SF_HAVE_FFTW
    struct fftw_engine e1, e2;
    fftw_engine_make(&e1, 2 * block, 1);
    fftw_engine_make(&e2, 2 * block, 2);
    reverb_engine eng1 = {fftw_fwd, fftw_inv, &e1}, eng2 = {fftw_fwd, fftw_inv, &e2};
    unsigned flags = use_measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    struct leaf_engine le = {fftl_new(2 * block, FFTW_FORWARD, flags, 0),
                             fftl_new(2 * block, FFTW_BACKWARD, flags, 0)};
    if (le.fwd == NULL || le.inv == NULL)
        die("fftl_new");
    reverb_engine leaves = {leaf_fwd, leaf_inv, &le};
#endif
    double t[NCOLS][MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (reverb_run_seq(rv, in, NULL, to_buffer, y) != 0)
            die("reverb_run_seq");
        t[SEQ][r] = now() - t0;
        for (int th = 1; th <= 2; th++) {
            t[th == 1 ? SF1 : SF2][r] = timed_pipeline(rv, src, y, len, th);
            if (memcmp(y, ref, len * sizeof *y) != 0) {
                fprintf(stderr, "bench_fft: the reverb at %d threads differs from sequential\n",
                        th);
                exit(2);
            }
        }
#ifdef SF_HAVE_FFTW
        t0 = now();
        reverb_run_seq(rv, in, &eng1, to_buffer, y);
        t[FFTW1][r] = now() - t0;
#ifdef SF_HAVE_FFTW_THREADS
        t0 = now();
        reverb_run_seq(rv, in, &eng2, to_buffer, y);
        t[FFTW2][r] = now() - t0;
#endif
        /* The pipeline of lazy futures as in libsf's columns, its
         * transforms FFTW's: another rounding, so within a tolerance. */
        reverb_set_engine(rv, &leaves);
        for (int th = 1; th <= 2; th++) {
            t[th == 1 ? LV1 : LV2][r] = timed_pipeline(rv, src, y, len, th);
            double e = rel_error(y, ref, len);
            if (!(e < LEAF_TOLERANCE)) {
                fprintf(stderr,
                        "bench_fft: the reverb over FFTW leaves at %d threads: error %.3g of "
                        "the peak against sequential, not below %.0e\n",
                        th, e, LEAF_TOLERANCE);
                exit(2);
            }
        }
        reverb_set_engine(rv, NULL);
#endif
    }
    for (int c = 0; c < NCOLS; c++)
        cell[c] = -1;
    cell[SEQ] = median(t[SEQ], reps);
    cell[SF1] = median(t[SF1], reps);
    cell[SF2] = median(t[SF2], reps);
#ifdef SF_HAVE_FFTW
    cell[FFTW1] = median(t[FFTW1], reps);
    cell[LV1] = median(t[LV1], reps);
    cell[LV2] = median(t[LV2], reps);
#ifdef SF_HAVE_FFTW_THREADS
    cell[FFTW2] = median(t[FFTW2], reps);
#endif
    fftl_free(le.fwd), fftl_free(le.inv);
    fftw_destroy_plan(e1.fwd), fftw_destroy_plan(e1.inv);
    fftw_destroy_plan(e2.fwd), fftw_destroy_plan(e2.inv);
#endif
    reverb_array_source_free(src);
    reverb_free(rv);
    free(in), free(ir), free(y), free(ref);
}

static void print_row(const char *name, const double *cell)
{
    printf("| %s |", name);
    for (int c = 0; c < NCOLS; c++) {
        if (cell[c] < 0)
            printf(" not run |");
        else
            printf(" %.4f s |", cell[c]);
    }
    printf(" %.2f | %.2f |", cell[SF2] / cell[SEQ], cell[SF1] / cell[SF2]);
    if (cell[FFTW1] > 0)
        printf(" %.2f |", cell[SF2] / cell[FFTW1]);
    else
        printf(" - |");
    if (cell[FFTW2] > 0)
        printf(" %.2f | %.2f |\n", cell[SF2] / cell[FFTW2], cell[LV2] / cell[FFTW2]);
    else
        printf(" - | - |\n");
}

#ifdef SF_HAVE_FFTW
/* "check": the FFTW-leaf engine against FFTW's own plan at every size the
 * table does not time - 2^1 .. 2^21, odd sizes (n1 != n2) included, both
 * signs, its default cutoff and a cutoff of 64 (the four-step from its
 * smallest size up), at 1 and 2 threads - within LEAF_TOLERANCE. Exits 2
 * on the first miss. */
static void check_leaves(void)
{
    double worst = 0;
    int count = 0;
    for (int th = 1; th <= 2; th++) {
        start(th);
        for (int lg = 1; lg <= 21; lg++) {
            const size_t n = (size_t)1 << lg;
            fftw_complex *x = fftw_malloc(n * sizeof *x), *y = fftw_malloc(n * sizeof *y),
                         *ref = fftw_malloc(n * sizeof *ref);
            if (x == NULL || y == NULL || ref == NULL)
                die("out of memory");
            for (int sign = FFTW_FORWARD; sign <= FFTW_BACKWARD; sign += 2) {
                fftw_plan fp = fftw_plan_dft_1d((int)n, x, ref, sign, FFTW_ESTIMATE);
                noise((fft_cplx *)x, n);
                fftw_execute(fp);
                fftw_destroy_plan(fp);
                for (size_t cut = 0; cut <= 64; cut += 64) {
                    fftl_plan *lp = fftl_new(n, sign, FFTW_ESTIMATE, cut);
                    if (lp == NULL)
                        die("fftl_new");
                    memset(y, 0, n * sizeof *y);
                    if (fftl_execute(lp, x, y) != 0)
                        die("fftl_execute");
                    fftl_free(lp);
                    double e = rel_error((const fft_cplx *)y, (const fft_cplx *)ref, n);
                    count++;
                    if (!(e < LEAF_TOLERANCE)) {
                        fprintf(stderr,
                                "bench_fft: FFTW leaves, 2^%d points, sign %d, cutoff %zu, %d "
                                "threads: error %.3g of the peak, not below %.0e\n",
                                lg, sign, cut != 0 ? cut : (size_t)FFTL_DEFAULT_CUTOFF, th, e,
                                LEAF_TOLERANCE);
                        exit(2);
                    }
                    if (e > worst)
                        worst = e;
                }
            }
            fftw_free(x), fftw_free(y), fftw_free(ref);
        }
        sf_shutdown();
    }
    printf("FFTW leaves against FFTW: %d transforms (2^1 .. 2^21, both signs, cutoffs %d and "
           "64, 1 and 2 threads), max error %.2e of the peak < %.0e\n",
           count, FFTL_DEFAULT_CUTOFF, worst, LEAF_TOLERANCE);
}
#endif

/* The cutoff sweep: 2^20 points at 2 threads and at 1. */
static void sweep(int reps)
{
    const size_t n = (size_t)1 << 20;
    fft_cplx *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    if (x == NULL || y == NULL)
        die("out of memory");
    noise(x, n);
    fft_plan *sp = fft_plan_new(n, SIZE_MAX);
    double ts[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        fft_forward(sp, x, y, n);
        ts[r] = now() - t0;
    }
    fft_plan_free(sp);
    printf("FFT 2^20, sequential (no libsf): %.4f s\n\n", median(ts, reps));
    printf("| cutoff | 1 thread | 2 threads |\n|---:|---:|---:|\n");
    for (size_t cut = 256; cut <= 65536; cut *= 2) {
        fft_plan *p = fft_plan_new(n, cut);
        double t[2][MAX_REPS];
        for (int r = 0; r < reps; r++)
            for (int th = 1; th <= 2; th++) {
                start(th);
                double t0 = now();
                fft_forward(p, x, y, n);
                t[th - 1][r] = now() - t0;
                sf_shutdown();
            }
        printf("| %zu | %.4f s | %.4f s |\n", cut, median(t[0], reps), median(t[1], reps));
        fft_plan_free(p);
    }
    free(x), free(y);
}

int main(int argc, char **argv)
{
    int reps = 5, quick = 0, cutoff = 0, check = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "reps=", 5) == 0)
            reps = atoi(argv[i] + 5);
        else if (strcmp(argv[i], "measure") == 0)
            use_measure = 1;
        else if (strcmp(argv[i], "quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "cutoff") == 0)
            cutoff = 1;
        else if (strcmp(argv[i], "check") == 0)
            check = 1;
        else {
            fprintf(stderr,
                    "usage: bench_fft [reps=N] [measure] [quick] | cutoff [reps=N] | check\n");
            return 64;
        }
    }
    if (reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "bench_fft: reps must be 1..%d\n", MAX_REPS);
        return 64;
    }
#if defined(SF_HAVE_FFTW) && defined(SF_HAVE_FFTW_THREADS)
    if (fftw_init_threads() == 0)
        die("fftw_init_threads");
#endif
    if (check) {
#ifdef SF_HAVE_FFTW
        check_leaves();
        return 0;
#else
        fprintf(stderr, "bench_fft: check needs FFTW\n");
        return 77;
#endif
    }
    load("before");
    if (cutoff) {
        sweep(reps);
        load("after");
        return 0;
    }
    printf("medians of %d runs; FFTW plans: %s; libsf cutoff %d points", reps,
           use_measure ? "FFTW_MEASURE" : "FFTW_ESTIMATE", FFT_DEFAULT_CUTOFF);
#ifdef SF_HAVE_FFTW
    printf("; libsf+FFTW leaves: four-step from %d points, one FFTW plan below", FFTL_DEFAULT_CUTOFF);
#endif
    printf("\n\n");
    printf("| workload |");
    for (int c = 0; c < NCOLS; c++)
        printf(" %s |", col_name[c]);
    printf(" libsf 2 / seq | speed-up 1->2 | libsf 2 / FFTW 1 | libsf 2 / FFTW 2 |"
           " libsf+FFTW 2 / FFTW 2 |\n|---|");
    for (int c = 0; c < NCOLS + 5; c++)
        printf("---:|");
    printf("\n");
    double cell[NCOLS];
    int lg1 = quick ? 16 : 20, lg2 = quick ? 18 : 22;
    char name[96];
    fft_row(lg1, reps, cell);
    snprintf(name, sizeof name, "FFT 2^%d", lg1);
    print_row(name, cell);
    fft_row(lg2, reps, cell);
    snprintf(name, sizeof name, "FFT 2^%d", lg2);
    print_row(name, cell);
    double secs = quick ? 10 : 60;
    reverb_row(secs, reps, cell);
    snprintf(name, sizeof name, "reverb %.0f s * 3 s, blocks of 4096", secs);
    print_row(name, cell);
    printf("\n");
    load("after");
    return 0;
}
