/*
 * fft_leaves.c - the four-step FFT over FFTW leaves (fft_leaves.h).
 *
 * With n = n1 * n2, input x[j1 n2 + j2] and output X[k1 + n1 k2]:
 *
 *   X[k1 + n1 k2] = sum_j2 w_n2^(j2 k2) [ w_n^(j2 k1) sum_j1 x[j1 n2 + j2] w_n1^(j1 k1) ]
 *
 * Pass 1, over blocks of B adjacent columns j2 of x (an n1 x n2 matrix):
 * gather the block into a contiguous buffer of the thread's (B transforms
 * of n1 points at stride 1), run one FFTW plan for the B of them, and write
 * them, each multiplied by its twiddles w_n^(j2 k1), as rows j2 of `out`
 * seen as an n2 x n1 matrix: out[j2 n1 + k1] (B whole rows, contiguous).
 * Pass 2, over blocks of B adjacent columns k1 of that matrix: gather,
 * one FFTW plan for B transforms of n2 points, scatter back to the same
 * places, out[k2 n1 + k1] - which is X[k1 + n1 k2]. So the transposes of
 * the classic four-step cost nothing: the output lands in order, the
 * transform needs no scratch array of n points, and a run writes nothing
 * of the plan's but its thread's buffers, so one plan serves any number of
 * concurrent runs.
 *
 * Why buffers: a column of x or of out is n1 or n2 points 16 n2 or 16 n1
 * bytes apart (32 KiB at 2^22), a power of two: run in place, an FFT on it
 * would keep every point in the same few cache sets and on its own page.
 * The gather reads B points (B * 16 bytes: whole cache lines) per row and
 * the FFTW plans see unit stride in cache. Each pass reads and writes the
 * n points once.
 *
 * Twiddles: w_n^m for m = j2 k1 < n is hi[m >> s] * lo[m & (2^s - 1)], two
 * tables of about sqrt(n) points (a full one of n points would be one more
 * stream from memory as large as the data). Per row j2, v[q] = w^(j2 q) for
 * q < Q and, per chunk a, w^(j2 a Q); the element k1 = a Q + q multiplies by
 * their product - a loop over q with no table lookups. Every factor is
 * cos/sin of an exact index, so a twiddle is off by a few ulps, not by an
 * error that grows along a recurrence.
 *
 * Parallel loops: sf_for_range over the blocks of each pass, one block per
 * body call at most (grain 1): a block is B FFTs of 2^11 points at 2^22,
 * some 50-70 us of work, so the loop's own cost per body is lost in it,
 * and 256 blocks per pass leave the two threads nothing to wait for at
 * the end (grain 4 measured the same). Between the passes the first loop's
 * return is the barrier.
 *
 * The split: n1 = 2^floor(lg n / 2), n2 = n / n1 (square at even sizes).
 * At 2^22, one thread: n1 = 2^10 0.034 s, 2^11 0.030 s, 2^12 0.032 s.
 * Where the time goes there (one thread, passes timed apart, parts left
 * out in turn): pass 1 17.7 ms = gather 4.9 + FFTW 6 + twiddles and the
 * write of the rows 6.3 (a plain copy instead: 2.5); pass 2 12.8 ms =
 * gather and scatter 8.3 + FFTW 4.5. Twiddles in SSE2 and non-temporal
 * stores of the rows or of the scatter measured no faster.
 *
 * Below the cutoff a transform is a single FFTW plan run by the caller.
 * Medians on the 2-vCPU VM, FFTW_ESTIMATE, one plan against the four-step:
 * 2^13 32 / 41 us at one thread, 32 / 38 at two; 2^14 67 / 74 and 67 / 40;
 * 2^15 148 / 153 and 149 / 81; 2^16 325 / 288 and 330 / 208; 2^18 2181 /
 * 1152 and 2130 / 592. From 2^16 the four-step wins at any thread count;
 * from 2^14 it wins only when a second thread is idle, which it is not in
 * the reverb: its 8192-point transforms already run in the pipeline's
 * parallel tasks. Hence 65536.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "fft_leaves.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sf.h"

/* Columns per block. 8: a gathered row is 128 bytes (two whole lines), and
 * the block's two buffers at 2^22 (n1 = n2 = 2048) are 2 * 256 KiB, well
 * inside a core's L2; 4 and 16 measured slower (PREFETCH below). */
#define B 8
/* Chunk of the twiddle loop (Q above). */
#define Q 64
/* Rows ahead that a gather prefetches (PREFETCH below). */
#define PD 32
/* Per-thread buffers below this sf_thread_index(), as samples/audio/fft.c
 * keeps its own; a thread above it allocates per block. */
#define SLOTS 256

struct fftl_plan {
    size_t n, cut;
    int sign;
    fftw_plan whole;       /* n < cut: the whole transform */
    size_t n1, n2;         /* n = n1 * n2 (n >= cut) */
    fftw_plan col, row;    /* B transforms of n1 / n2 points, buffer a -> b */
    unsigned s;            /* twiddle split: lo has 2^s points, hi n >> s */
    double *lo, *hi;       /* (re, im) pairs */
    size_t buf;            /* points in each of a thread's two buffers */
    fftw_complex **scratch; /* SLOTS pointers, each to 2 * buf points or NULL */
};

static unsigned lg(size_t n)
{
    unsigned l = 0;
    while (((size_t)1 << l) < n)
        l++;
    return l;
}

/* w_n^m, sign FFTW's: (re, im) into t. */
static void root(double *t, size_t m, size_t n, int sign)
{
    const double a = 6.283185307179586476925286766559 * (double)m / (double)n;
    t[0] = cos(a);
    t[1] = sign * sin(a);
}

fftl_plan *fftl_new(size_t n, int sign, unsigned flags, size_t cutoff)
{
    if (n < 2 || (n & (n - 1)) != 0 || (sign != FFTW_FORWARD && sign != FFTW_BACKWARD) ||
        n > INT32_MAX) {
        errno = EINVAL;
        return NULL;
    }
    fftl_plan *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->n = n;
    p->cut = cutoff != 0 ? cutoff : FFTL_DEFAULT_CUTOFF;
    /* The four-step needs B columns in each direction. */
    if (p->cut < (size_t)B * B)
        p->cut = (size_t)B * B;
    p->sign = sign;
    if (n < p->cut) {
        fftw_complex *a = fftw_malloc(n * sizeof *a), *b = fftw_malloc(n * sizeof *b);
        if (a != NULL && b != NULL)
            p->whole = fftw_plan_dft_1d((int)n, a, b, sign, flags | FFTW_UNALIGNED);
        fftw_free(a), fftw_free(b);
        if (p->whole == NULL) {
            free(p);
            errno = ENOMEM;
            return NULL;
        }
        return p;
    }
    const unsigned l = lg(n);
    p->n1 = (size_t)1 << (l / 2);
    p->n2 = n / p->n1;
    p->s = (l + 1) / 2;
    p->buf = (size_t)B * (p->n1 > p->n2 ? p->n1 : p->n2);
    size_t nlo = (size_t)1 << p->s, nhi = n >> p->s;
    p->lo = malloc(2 * nlo * sizeof *p->lo);
    p->hi = malloc(2 * nhi * sizeof *p->hi);
    p->scratch = calloc(SLOTS, sizeof *p->scratch);
    fftw_complex *a = fftw_malloc(p->buf * sizeof *a), *b = fftw_malloc(p->buf * sizeof *b);
    if (p->lo != NULL && p->hi != NULL && p->scratch != NULL && a != NULL && b != NULL) {
        for (size_t t = 0; t < nlo; t++)
            root(p->lo + 2 * t, t, n, sign);
        for (size_t u = 0; u < nhi; u++)
            root(p->hi + 2 * u, u << p->s, n, sign);
        /* The buffers are scratch: FFTW may overwrite the input (a). */
        const unsigned f = flags | FFTW_DESTROY_INPUT;
        int n1 = (int)p->n1, n2 = (int)p->n2;
        p->col = fftw_plan_many_dft(1, &n1, B, a, NULL, 1, n1, b, NULL, 1, n1, sign, f);
        p->row = fftw_plan_many_dft(1, &n2, B, a, NULL, 1, n2, b, NULL, 1, n2, sign, f);
    }
    fftw_free(a), fftw_free(b);
    if (p->col == NULL || p->row == NULL) {
        fftl_free(p);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

void fftl_free(fftl_plan *p)
{
    if (p == NULL)
        return;
    if (p->whole != NULL)
        fftw_destroy_plan(p->whole);
    if (p->col != NULL)
        fftw_destroy_plan(p->col);
    if (p->row != NULL)
        fftw_destroy_plan(p->row);
    for (int i = 0; p->scratch != NULL && i < SLOTS; i++)
        fftw_free(p->scratch[i]);
    free(p->scratch), free(p->lo), free(p->hi);
    free(p);
}

size_t fftl_size(const fftl_plan *p)
{
    return p->n;
}

/* w_n^m for m < n from the two tables. */
static void twiddle(const fftl_plan *p, size_t m, double *t)
{
    const double *h = p->hi + 2 * (m >> p->s), *l = p->lo + 2 * (m & (((size_t)1 << p->s) - 1));
    t[0] = h[0] * l[0] - h[1] * l[1];
    t[1] = h[0] * l[1] + h[1] * l[0];
}

/* dst[k] = src[k] * w_n^(j k) for k < len (len a multiple of Q or below
 * it; j k < n). */
static void twiddle_row(const fftl_plan *p, const double *restrict src, double *restrict dst,
                        size_t j, size_t len)
{
    double v[2 * Q];
    const size_t q_n = len < Q ? len : Q;
    for (size_t q = 0; q < q_n; q++)
        twiddle(p, j * q, v + 2 * q);
    for (size_t a = 0; a < len; a += q_n) {
        double c[2];
        twiddle(p, j * a, c);
        const double *s = src + 2 * a;
        double *d = dst + 2 * a;
        for (size_t q = 0; q < q_n; q++) {
            double tr = c[0] * v[2 * q] - c[1] * v[2 * q + 1];
            double ti = c[0] * v[2 * q + 1] + c[1] * v[2 * q];
            double xr = s[2 * q], xi = s[2 * q + 1];
            d[2 * q] = xr * tr - xi * ti;
            d[2 * q + 1] = xr * ti + xi * tr;
        }
    }
}

/* The calling thread's two buffers (a, then b = a + buf), or, for a thread
 * past the slots, fresh ones that the caller frees (*own). Called by the loop
 * bodies only: out of memory, it fails the body (sf_fail, ENOMEM) and returns
 * NULL. Slot i is touched only by the thread holding sf_thread_index() i,
 * unique among live threads, and a body uses it with no libsf call
 * between its gather and its scatter, so no two bodies share one. */
static fftw_complex *buffers(const fftl_plan *p, fftw_complex **own)
{
    *own = NULL;
    int i = sf_thread_index();
    if (i >= 0 && i < SLOTS) {
        if (p->scratch[i] == NULL)
            p->scratch[i] = fftw_malloc(2 * p->buf * sizeof *p->scratch[i]);
        if (p->scratch[i] != NULL)
            return p->scratch[i];
    } else if ((*own = fftw_malloc(2 * p->buf * sizeof **own)) != NULL) {
        return *own;
    }
    sf_fail(ENOMEM, "fft_leaves: no memory for a buffer");
    return NULL;
}

/* A gather touches a new page and new lines at every row, 16 n2 or 16 n1
 * bytes on: the loop would wait for memory at each row, since the hardware
 * prefetchers follow no stream that sparse. Asking PD rows ahead keeps that
 * many rows' misses in flight. By measurement at 2^22 (best of 10, one
 * thread, the 2-vCPU VM): no prefetch 0.036 s, PD 8 0.031 s, 16 and 64
 * 0.029 s, 32 0.028 s; B 4 or 16 with any PD were slower than 8. The
 * scatter's writes gained nothing from a prefetch (nor from non-temporal
 * stores), so it has none. */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch((p), 0)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* The B columns starting at m of a matrix of `rows` rows, `stride` points
 * apart, into a as B contiguous transforms of `rows` points (both passes). */
static inline void gather(fftw_complex *restrict a, const fftw_complex *m, size_t rows,
                          size_t stride)
{
    for (size_t j = 0; j < rows; j++) {
        const fftw_complex *src = m + j * stride;
        if (j + PD < rows) {
            PREFETCH(src + PD * stride);
            PREFETCH(src + PD * stride + B - 1);
        }
        for (size_t c = 0; c < B; c++) {
            a[c * rows + j][0] = src[c][0];
            a[c * rows + j][1] = src[c][1];
        }
    }
}

struct run {
    const fftl_plan *p;
    const fftw_complex *in;
    fftw_complex *out;
};

static void pass1(long lo, long hi, void *ctx)
{
    const struct run *r = ctx;
    const fftl_plan *p = r->p;
    const size_t n1 = p->n1, n2 = p->n2;
    fftw_complex *own, *a = buffers(p, &own);
    if (a == NULL)
        return;
    fftw_complex *b = a + p->buf;
    for (long blk = lo; blk < hi; blk++) {
        const size_t J = (size_t)blk * B;
        gather(a, r->in + J, n1, n2);
        fftw_execute_dft(p->col, a, b);
        for (size_t c = 0; c < B; c++)
            twiddle_row(p, &b[c * n1][0], &r->out[(J + c) * n1][0], J + c, n1);
    }
    fftw_free(own);
}

static void pass2(long lo, long hi, void *ctx)
{
    const struct run *r = ctx;
    const fftl_plan *p = r->p;
    const size_t n1 = p->n1, n2 = p->n2;
    fftw_complex *own, *a = buffers(p, &own);
    if (a == NULL)
        return;
    fftw_complex *b = a + p->buf;
    for (long blk = lo; blk < hi; blk++) {
        const size_t K = (size_t)blk * B;
        gather(a, r->out + K, n2, n1);
        fftw_execute_dft(p->row, a, b);
        for (size_t k2 = 0; k2 < n2; k2++) {
            fftw_complex *dst = r->out + k2 * n1 + K;
            for (size_t c = 0; c < B; c++) {
                dst[c][0] = b[c * n2 + k2][0];
                dst[c][1] = b[c * n2 + k2][1];
            }
        }
    }
    fftw_free(own);
}

int fftl_execute(const fftl_plan *p, const fftw_complex *in, fftw_complex *out)
{
    if (p->whole != NULL) {
        /* An out-of-place complex plan leaves its input alone (FFTW's
         * default, FFTW_PRESERVE_INPUT); the cast only fits the API. */
        fftw_execute_dft(p->whole, (fftw_complex *)(uintptr_t)in, out);
        return 0;
    }
    struct run r = {p, in, out};
    if (sf_for_range(0, (long)(p->n2 / B), 1, pass1, &r) != 0)
        return -1;
    return sf_for_range(0, (long)(p->n1 / B), 1, pass2, &r);
}
