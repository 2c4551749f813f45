/*
 * fft.c - recursive radix-2 FFT whose halves are libsf tasks (see fft.h).
 *
 * Algorithm: decimation in time, out of place, radix 4. A transform of n
 * points reads its input with a stride (every fourth sample of its parent's):
 * out's four quarters get the DFTs of the samples r, r + 4, r + 8, ... for
 * r = 0..3, then n/4 radix-4 butterflies combine them in place with the
 * twiddles w^k, w^2k, w^3k, w = e^(-2 pi i / n), taken from the plan's table
 * at stride plan_n / n. Half the passes over the data of radix 2, and a
 * quarter of its recursive calls. 8 points take one radix-2 step (two
 * 4-point halves); sizes 2 and 4 are written out, 8 and 16 make no calls.
 *
 * Parallelism: at n >= cutoff three quarters are sf_do tasks while the
 * calling thread does the fourth, then it gets them (newest first: the
 * fork-join fast path); the butterfly pass over [0, n/4) splits in two tasks
 * the same way while a part holds at least cutoff points. The task
 * arguments live in this frame, which outlives them: every task made here is
 * got here before the frame returns (tree-shaped fork-join).
 *
 * Cutoff: 4096 points, by measurement (tools/bench/bench_fft cutoff, 2^20
 * points, medians of 5, on the 2-vCPU development VM at a quiet moment,
 * load average 1.7): sequential 51.5 ms; at 2 threads cutoffs 256, 512 and
 * 1024 take 38-40 ms, 2048 to 65536 take 23.6-25.0 ms (2048: 23.6, 4096:
 * 23.9); at 1 thread every cutoff is within 5% of sequential. 4096 is in
 * the flat part with room on both sides; a 4096-point task is ~50 us. The
 * reverb's 8192-point transforms split once.
 *
 * Leaves: a quarter below the cutoff made by a parallel level runs
 * sequentially, reading its input at a stride of 4 or more (1024 at 2^20
 * points: each sample on its own 16 KiB-apart line and page). It first
 * gathers that input into a buffer of its thread's (part(); sf_thread_index
 * picks the buffer) and transforms it at stride 1. By measurement (one
 * thread, user CPU time of 30 transforms of 2^20 points and the like, the
 * 2-vCPU development VM under load, medians of 3): 2^13 unchanged, 2^16 -8%,
 * 2^18 -38%, 2^20 -25%, 2^22 -21%. The sequential transform (cutoff above
 * n) makes no leaves and no libsf call, so it does not gather.
 *
 * Exactness: every output element is the same sequence of floating-point
 * operations whatever the cutoff and whichever thread runs which task, so the
 * parallel and sequential transforms are bit-identical.
 */
#include "fft.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sf.h"

/* Leaves get per-thread buffers below this thread index (sf_thread_index);
 * a thread with a higher one reads its leaves' input where it is, strided.
 * A plan is made before the runtime may be, so sf_thread_count() cannot
 * size the table: 256 pointers (2 KiB) cover every pool and any likely
 * program, and a thread past them only goes without the copy. */
#define SCRATCH_SLOTS 256
/* Leaves of fewer points read their input in place: too small to pay for
 * the copy. */
#define GATHER_MIN 64

struct fft_plan {
    size_t n;      /* the largest size; a power of two */
    size_t cutoff; /* sizes below it: no task */
    fft_cplx *w;   /* 3n/4 twiddles, w[k] = e^(-2 pi i k / n): radix 4 needs
                    * w^3k for k < n/4 */
    size_t leaf;   /* the largest leaf (below): points of each scratch buffer */
    /* scratch[i]: the buffer of the thread whose sf_thread_index() is i,
     * allocated at its first leaf, or NULL; the table is NULL in a plan
     * that makes no task (cutoff above n) or had no memory for it. Slot i
     * is read and written only by the thread that holds index i, which is
     * unique among live threads; a thread that takes over an exited one's
     * index sees what it wrote (sf.h), so a slot needs no lock. */
    fft_cplx **scratch;
};

static int is_pow2(size_t n)
{
    return n >= 2 && (n & (n - 1)) == 0;
}

fft_plan *fft_plan_new(size_t n, size_t cutoff)
{
    if (!is_pow2(n)) {
        errno = EINVAL;
        return NULL;
    }
    fft_plan *p = malloc(sizeof *p);
    if (p == NULL)
        return NULL;
    p->n = n;
    p->cutoff = cutoff == 0 ? FFT_DEFAULT_CUTOFF : cutoff;
    if (p->cutoff < 8)
        p->cutoff = 8; /* 8 points and fewer never make tasks anyway */
    const size_t nw = n / 4 * 3 > 1 ? n / 4 * 3 : 1;
    p->w = malloc(nw * sizeof *p->w);
    if (p->w == NULL) {
        free(p);
        return NULL;
    }
    /* Each twiddle straight from cos/sin (no recurrence), so each is within
     * an ulp or so and the error of the transform grows only as log n. */
    const double step = -2.0 * M_PI / (double)n;
    for (size_t k = 0; k < nw; k++)
        p->w[k] = CMPLX(cos(step * (double)k), sin(step * (double)k));
    /* A leaf is a quarter of a transform of at least cutoff points, and
     * itself below cutoff: at most min(cutoff - 1, n / 4) points. */
    p->leaf = p->cutoff - 1 < n / 4 ? p->cutoff - 1 : n / 4;
    p->scratch = p->cutoff <= n ? calloc(SCRATCH_SLOTS, sizeof *p->scratch) : NULL;
    return p;
}

void fft_plan_free(fft_plan *p)
{
    if (p != NULL) {
        for (int i = 0; p->scratch != NULL && i < SCRATCH_SLOTS; i++)
            free(p->scratch[i]);
        free(p->scratch);
        free(p->w);
        free(p);
    }
}

size_t fft_plan_size(const fft_plan *p)
{
    return p->n;
}

/* a * b without the C99 Annex G NaN/infinity handling (__muldc3), which the
 * inputs here never need: plain products, in a fixed order. */
static inline fft_cplx cmul(fft_cplx a, fft_cplx b)
{
    double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);
    return CMPLX(ar * br - ai * bi, ar * bi + ai * br);
}

/* One transform of the recursion. s is the sign of the exponent's imaginary
 * part: -1 forward, +1 backward (the twiddles are conjugated). */
struct job {
    const fft_plan *p;
    const fft_cplx *in;
    size_t is; /* input stride */
    fft_cplx *out;
    size_t n;
    size_t ws; /* twiddle stride: plan n / n */
    double s;
};

/* A part [lo, hi) of the butterfly pass of one transform. */
struct bjob {
    const struct job *j;
    size_t lo, hi;
};

/* Gets a future made in this frame; its task returns its non-NULL argument.
 * A failure here would leave a task pointing into this frame, so it is
 * fatal, with a message (it needs an exhausted system: see sf_get). */
static void join(sf_future *f)
{
    if (sf_get(f) == NULL) {
        perror("fft: sf_get");
        abort();
    }
    sf_release(f);
}

static void butterflies(const struct job *j, size_t lo, size_t hi)
{
    const fft_cplx *w = j->p->w;
    fft_cplx *a = j->out, *b = j->out + j->n / 2;
    const size_t ws = j->ws;
    const double s = -j->s; /* the table holds the forward (s = -1) twiddles */
    for (size_t k = lo; k < hi; k++) {
        fft_cplx wk = w[k * ws];
        fft_cplx t = cmul(CMPLX(creal(wk), s * cimag(wk)), b[k]);
        fft_cplx e = a[k];
        a[k] = e + t;
        b[k] = e - t;
    }
}

/* The radix-4 butterflies [lo, hi) of [0, n/4): out's quarters hold F0..F3;
 * with A = F0[k], B = w^k F1[k], C = w^2k F2[k], D = w^3k F3[k] and
 * J = e^(s i pi / 2) = s i, X[k + q n/4] = A + J^q B + J^2q C + J^3q D. */
static void butterflies4(const struct job *j, size_t lo, size_t hi)
{
    const fft_cplx *w = j->p->w;
    const size_t q = j->n / 4, ws = j->ws;
    fft_cplx *o0 = j->out, *o1 = o0 + q, *o2 = o1 + q, *o3 = o2 + q;
    const double s = j->s, c = -j->s; /* c conjugates the forward table */
    for (size_t k = lo; k < hi; k++) {
        fft_cplx w1 = w[k * ws], w2 = w[2 * k * ws], w3 = w[3 * k * ws];
        fft_cplx a = o0[k];
        fft_cplx b = cmul(CMPLX(creal(w1), c * cimag(w1)), o1[k]);
        fft_cplx cc = cmul(CMPLX(creal(w2), c * cimag(w2)), o2[k]);
        fft_cplx d = cmul(CMPLX(creal(w3), c * cimag(w3)), o3[k]);
        fft_cplx apc = a + cc, amc = a - cc, bpd = b + d, bmd = b - d;
        fft_cplx jbmd = CMPLX(-s * cimag(bmd), s * creal(bmd));
        o0[k] = apc + bpd;
        o1[k] = amc + jbmd;
        o2[k] = apc - bpd;
        o3[k] = amc - jbmd;
    }
}

static void *butterflies_task(void *arg);

static void butterflies_par(const struct bjob *bj)
{
    const size_t grain = bj->j->p->cutoff / 4; /* a radix-4 butterfly: 4 points */
    if (bj->hi - bj->lo < 2 * grain) {
        butterflies4(bj->j, bj->lo, bj->hi);
        return;
    }
    size_t mid = bj->lo + (bj->hi - bj->lo) / 2;
    struct bjob upper = {bj->j, mid, bj->hi}, lower = {bj->j, bj->lo, mid};
    sf_future *f = sf_do(butterflies_task, &upper);
    butterflies_par(&lower);
    if (f != NULL)
        join(f);
    else
        butterflies_par(&upper); /* no memory for a task: do it here */
}

static void *butterflies_task(void *arg)
{
    butterflies_par(arg);
    return arg;
}

static void *rec_task(void *arg);
static void part(const struct job *j);

/* The 4-point DFT of in[0], in[is], in[2 is], in[3 is] into out[0..3]. */
static inline void dft4(const fft_cplx *in, size_t is, fft_cplx *out, double s)
{
    fft_cplx x0 = in[0], x1 = in[is], x2 = in[2 * is], x3 = in[3 * is];
    fft_cplx a = x0 + x2, b = x0 - x2, c = x1 + x3, d = x1 - x3;
    fft_cplx id = CMPLX(-s * cimag(d), s * creal(d)); /* d times e^(s i pi / 2) = s i */
    out[0] = a + c;
    out[2] = a - c;
    out[1] = b + id;
    out[3] = b - id;
}

static void rec(const struct job *j)
{
    const fft_cplx *in = j->in;
    const size_t is = j->is;
    fft_cplx *out = j->out;
    switch (j->n) {
    case 2: {
        fft_cplx x0 = in[0], x1 = in[is];
        out[0] = x0 + x1;
        out[1] = x0 - x1;
        return;
    }
    case 4:
        dft4(in, is, out, j->s);
        return;
    case 8: /* one radix-2 step: two 4-point halves */
        dft4(in, 2 * is, out, j->s);
        dft4(in + is, 2 * is, out + 4, j->s);
        butterflies(j, 0, 4);
        return;
    case 16: /* one radix-4 step over four 4-point quarters, no calls */
        for (size_t r = 0; r < 4; r++)
            dft4(in + r * is, 4 * is, out + 4 * r, j->s);
        butterflies4(j, 0, 4);
        return;
    default:
        break;
    }
    const size_t q = j->n / 4;
    struct job parts[4];
    for (int r = 0; r < 4; r++)
        parts[r] = (struct job){j->p, in + (size_t)r * is, 4 * is, out + (size_t)r * q, q,
                                4 * j->ws, j->s};
    if (j->n < j->p->cutoff) {
        for (int r = 0; r < 4; r++)
            rec(&parts[r]);
        butterflies4(j, 0, q);
        return;
    }
    sf_future *f[3];
    for (int r = 0; r < 3; r++)
        f[r] = sf_do(rec_task, &parts[r]);
    part(&parts[3]);
    for (int r = 2; r >= 0; r--) {
        if (f[r] != NULL)
            join(f[r]);
        else
            part(&parts[r]); /* no memory for a task: do it here */
    }
    struct bjob all = {j, 0, q};
    butterflies_par(&all);
}

/* The calling thread's scratch buffer of p->leaf points, or NULL (no table,
 * an index past it, no memory). */
static fft_cplx *scratch(const fft_plan *p)
{
    int i = sf_thread_index();
    if (p->scratch == NULL || i < 0 || i >= SCRATCH_SLOTS)
        return NULL;
    if (p->scratch[i] == NULL)
        p->scratch[i] = malloc(p->leaf * sizeof *p->scratch[i]);
    return p->scratch[i];
}

/*
 * A quarter made by a parallel level. Below the cutoff it is a leaf: a
 * sequential transform that reads its input at a stride of 4 or more, each
 * sample in another cache line. It gathers the input into its thread's
 * scratch buffer first and transforms that, at stride 1 - the same values,
 * so the same results. The buffer is the thread's, not the task's: that
 * is safe because a leaf makes no libsf call between the gather and its
 * end (rec below the cutoff makes none), so no other task runs on this
 * thread meanwhile (docs/scheduling.md, Per-thread scratch).
 */
static void part(const struct job *j)
{
    fft_cplx *buf;
    if (j->n >= j->p->cutoff || j->n < GATHER_MIN || (buf = scratch(j->p)) == NULL) {
        rec(j);
        return;
    }
    for (size_t i = 0; i < j->n; i++)
        buf[i] = j->in[i * j->is];
    struct job g = *j;
    g.in = buf;
    g.is = 1;
    rec(&g);
}

static void *rec_task(void *arg)
{
    part(arg);
    return arg;
}

static int transform(const fft_plan *p, const fft_cplx *in, fft_cplx *out, size_t m, double s)
{
    if (p == NULL || in == NULL || out == NULL || !is_pow2(m) || m > p->n) {
        errno = EINVAL;
        return -1;
    }
    struct job j = {p, in, 1, out, m, p->n / m, s};
    rec(&j);
    return 0;
}

int fft_forward(const fft_plan *p, const fft_cplx *in, fft_cplx *out, size_t m)
{
    return transform(p, in, out, m, -1.0);
}

int fft_backward(const fft_plan *p, const fft_cplx *in, fft_cplx *out, size_t m)
{
    return transform(p, in, out, m, 1.0);
}

int fft_inverse(const fft_plan *p, const fft_cplx *in, fft_cplx *out, size_t m)
{
    if (transform(p, in, out, m, 1.0) != 0)
        return -1;
    const double scale = 1.0 / (double)m;
    for (size_t k = 0; k < m; k++)
        out[k] *= scale;
    return 0;
}

void fft_lowpass(fft_cplx *h, size_t L, double fc)
{
    const double pi = 3.14159265358979323846;
    double sum = 0;
    for (size_t i = 0; i < L; i++) {
        double t = (double)i - (double)(L - 1) / 2;
        double sinc = t == 0 ? 2 * fc : sin(2 * pi * fc * t) / (pi * t);
        double w = 0.42 - 0.5 * cos(2 * pi * (double)i / (double)(L - 1)) +
                   0.08 * cos(4 * pi * (double)i / (double)(L - 1));
        h[i] = sinc * w;
        sum += sinc * w;
    }
    for (size_t i = 0; i < L; i++)
        h[i] /= sum;
}
