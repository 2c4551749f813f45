/*
 * reverb.c - uniformly partitioned overlap-add convolution as a pipeline of
 * lazy libsf futures (see reverb.h).
 *
 * Algorithm. With block size B and FFT size 2B, the impulse response is cut
 * into P partitions of B frames, each zero-padded and transformed once:
 * H_p. Input block k, zero-padded, transforms to X_k. Output block j's
 * spectrum is Y_j = sum over p of X_(j-p) * H_p (for the blocks that exist),
 * y_j = IFFT(Y_j) covers output frames [jB, jB + 2B), and output block j is
 * the first half of y_j plus the second half of y_(j-1) (overlap-add).
 *
 * The pipeline. Three kinds of task, each a future made only when something
 * needs it:
 *   x_task(k):   gets input block k (the source's future, made here), FFT;
 *   y_task(j):   gets X_(j-p) for every p, multiplies and sums, IFFT;
 *   out_task(j): gets y_j and y_(j-1), adds the halves.
 * reverb_run makes out tasks `window` blocks ahead of the one it gets next;
 * nothing else is computed before an out task asks for it. X_k is needed by
 * up to P y tasks and y_j by two out tasks, whichever thread runs them, so
 * their futures live in slots: the first task to need one makes it (sf_do)
 * and publishes it (see need()): each exists once.
 * Each slot counts its users; the last one to finish with it frees the data
 * and releases the future.
 *
 * Deadlock freedom. Tasks depend only downwards (out -> y -> x -> input),
 * so the program's gets form no cycle, and plain gets are all it needs: a
 * get that waits for a slot's future running on another thread parks and
 * lets its thread help elsewhere, never making its wait depend on the work
 * it helped with (docs/waiting.md). samples/audio/test_reverb runs the
 * pipeline at 1, 2 and 4 threads.
 *
 * Determinism. Y_j sums p = 0, 1, ... in that order and the FFT is exact
 * whatever its schedule (fft.c), so the output does not depend on the number
 * of threads, and reverb_run_seq (a plain loop with the same arithmetic) is
 * bit-identical to it. Another engine (reverb_set_engine) keeps the first
 * property if its transforms do not depend on the schedule, and is
 * bit-identical to reverb_run_seq with that same engine.
 *
 * Errors. A failed get (an input block's task failed, or no memory) fails
 * the task that got it with the same code (sf_fail), and so on up to the
 * out task, whose failure reverb_run returns. A failed run cancels or waits
 * for every task it made (abandon) before it returns.
 */
#include "reverb.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot_arg {
    struct reverb *r;
    size_t k;
};

struct reverb {
    size_t B, n2, P;        /* block, FFT size 2B, IR partitions */
    size_t in_len, out_len; /* frames */
    size_t nin, nout;       /* input blocks, output blocks */
    fft_plan *plan;         /* 2B points, parallel */
    fft_plan *seq_plan;     /* 2B points, no tasks */
    fft_cplx *H;            /* P spectra of 2B points */
    reverb_engine engine;   /* reverb_run's transforms (reverb_set_engine) */
    int has_engine;         /* 0: plan's */
    /* The run's state (reverb_run). */
    reverb_source src;
    _Atomic(sf_future *) *x, *y; /* nin, nout slots */
    atomic_size_t *x_users, *y_users;
    struct slot_arg *x_arg, *y_arg, *out_arg;
    char error[512]; /* why the last run failed */
};

static size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

static void *xmalloc_fail(size_t n)
{
    void *p = malloc(n);
    if (p == NULL)
        sf_fail(ENOMEM, "reverb: out of memory (%zu bytes)", n);
    return p;
}

reverb *reverb_new(const double *ir, size_t ir_len, size_t block, size_t in_len, size_t cutoff)
{
    if (ir == NULL || ir_len == 0 || in_len == 0 || block < 2 || (block & (block - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    reverb *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->B = block;
    r->n2 = 2 * block;
    r->P = ceil_div(ir_len, block);
    r->in_len = in_len;
    r->out_len = in_len + ir_len - 1;
    r->nin = ceil_div(in_len, block);
    r->nout = ceil_div(r->out_len, block);
    r->plan = fft_plan_new(r->n2, cutoff);
    r->seq_plan = fft_plan_new(r->n2, SIZE_MAX);
    r->H = calloc(r->P * r->n2, sizeof *r->H);
    fft_cplx *pad = calloc(r->n2, sizeof *pad);
    if (r->plan == NULL || r->seq_plan == NULL || r->H == NULL || pad == NULL) {
        free(pad);
        reverb_free(r);
        errno = ENOMEM;
        return NULL;
    }
    for (size_t p = 0; p < r->P; p++) {
        size_t n = ir_len - p * block < block ? ir_len - p * block : block;
        for (size_t i = 0; i < r->n2; i++)
            pad[i] = i < n ? CMPLX(ir[p * block + i], 0.0) : 0.0;
        fft_forward(r->seq_plan, pad, r->H + p * r->n2, r->n2);
    }
    free(pad);
    return r;
}

void reverb_free(reverb *r)
{
    if (r == NULL)
        return;
    fft_plan_free(r->plan);
    fft_plan_free(r->seq_plan);
    free(r->H);
    free(r);
}

size_t reverb_out_len(const reverb *r)
{
    return r->out_len;
}

const char *reverb_error(const reverb *r)
{
    return r->error[0] != '\0' ? r->error : NULL;
}

size_t reverb_block(const reverb *r)
{
    return r->B;
}

void reverb_set_engine(reverb *r, const reverb_engine *engine)
{
    r->has_engine = engine != NULL;
    if (engine != NULL)
        r->engine = *engine;
}

/* acc += X * H_p over 2B points, in index order. */
static void mac(fft_cplx *restrict acc, const fft_cplx *restrict X, const fft_cplx *restrict H,
                size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double xr = creal(X[i]), xi = cimag(X[i]), hr = creal(H[i]), hi = cimag(H[i]);
        acc[i] += CMPLX(xr * hr - xi * hi, xr * hi + xi * hr);
    }
}

/* The users of X_k: y_j for j in [k, min(k + P - 1, nout - 1)]; of y_j: out_j
 * and out_(j+1) when it exists. */
static size_t x_users(const reverb *r, size_t k)
{
    size_t last = k + r->P - 1 < r->nout - 1 ? k + r->P - 1 : r->nout - 1;
    return last - k + 1;
}

static size_t y_users(const reverb *r, size_t j)
{
    return j + 1 < r->nout ? 2 : 1;
}

/*
 * The future in *slot, made by this call if the slot is empty. A slot goes
 * NULL -> BUSY -> future, once: the thread whose CAS takes it to BUSY makes
 * the future and stores it; a thread that finds BUSY yields until the store
 * (the window is one sf_do). So each slot's task exists once - a second copy
 * would drop its users' counts twice. The CAS's success needs no ordering
 * (it only claims the right to make the future), but C11 forbids a failure
 * order stronger than the success one, and a failed CAS may read a handle,
 * so both are acquire. The store of the handle is release and pairs with
 * those acquires and the acquire loads here: a reader sees the future sf_do
 * made. A failed sf_do puts NULL back (release; nothing to publish) and
 * returns NULL with errno.
 */
static char busy_marker;
#define BUSY ((sf_future *)(void *)&busy_marker)

static sf_future *need(_Atomic(sf_future *) *slot, void *(*fn)(void *), struct slot_arg *arg)
{
    sf_future *f = atomic_load_explicit(slot, memory_order_acquire);
    for (;;) {
        if (f == NULL) {
            if (atomic_compare_exchange_weak_explicit(slot, &f, BUSY, memory_order_acquire,
                                                      memory_order_acquire)) {
                sf_future *mine = sf_do(fn, arg);
                atomic_store_explicit(slot, mine, memory_order_release);
                return mine;
            }
            continue; /* f now holds what the slot held */
        }
        if (f != BUSY)
            return f;
        sched_yield();
        f = atomic_load_explicit(slot, memory_order_acquire);
    }
}

/*
 * Done with the data of a slot: the last of its users frees it and releases
 * the future. acq_rel: each user's release orders its reads of the data
 * before its decrement; the last one's acquire orders them before the free.
 */
static void drop(atomic_size_t *users, _Atomic(sf_future *) *slot, void *data)
{
    if (atomic_fetch_sub_explicit(users, 1, memory_order_acq_rel) == 1) {
        free(data);
        sf_release(atomic_load_explicit(slot, memory_order_relaxed));
        /* For the clean-up of a failed run only (abandon), which reads the
         * slot after this task's completion: relaxed suffices. */
        atomic_store_explicit(slot, NULL, memory_order_relaxed);
    }
}

/* Gets a future; every task here returns non-NULL, so NULL is a failure,
 * which fails the calling task with the same code and returns NULL. */
static void *get_or_fail(sf_future *f, const char *what, size_t k)
{
    errno = 0;
    void *v = sf_get(f);
    if (v == NULL) {
        int rc = errno != 0 ? errno : EIO;
        const char *msg = sf_error_message(f);
        sf_fail(rc, "reverb: %s %zu: %s", what, k, msg != NULL ? msg : strerror(rc));
    }
    return v;
}

/* X_k: the FFT of input block k, zero-padded to 2B. */
static void *x_task(void *arg)
{
    struct slot_arg *a = arg;
    reverb *r = a->r;
    sf_future *in = r->src.block(r->src.ctx, a->k, r->B);
    if (in == NULL) {
        sf_fail(errno != 0 ? errno : ENOMEM, "reverb: cannot make input block %zu", a->k);
        return NULL;
    }
    fft_cplx *blk = get_or_fail(in, "input block", a->k);
    sf_release(in);
    if (blk == NULL)
        return NULL;
    fft_cplx *pad = xmalloc_fail(r->n2 * sizeof *pad);
    fft_cplx *X = xmalloc_fail(r->n2 * sizeof *X);
    if (pad == NULL || X == NULL) {
        free(blk), free(pad), free(X);
        return NULL;
    }
    memcpy(pad, blk, r->B * sizeof *pad);
    memset(pad + r->B, 0, r->B * sizeof *pad);
    free(blk);
    if (r->has_engine)
        r->engine.forward(r->engine.ctx, pad, X);
    else
        fft_forward(r->plan, pad, X, r->n2);
    free(pad);
    return X;
}

/* y_j: IFFT of sum_p X_(j-p) H_p. The X futures are all made (or found)
 * first, so that the first get submits every new one at once and an idle
 * worker can take them while this thread transforms the first. */
static void *y_task(void *arg)
{
    struct slot_arg *a = arg;
    reverb *r = a->r;
    const size_t j = a->k;
    /* p runs over the partitions whose input block k = j - p exists. */
    size_t p_lo = j >= r->nin ? j - (r->nin - 1) : 0;
    size_t p_hi = j < r->P - 1 ? j : r->P - 1; /* inclusive */
    fft_cplx *acc = xmalloc_fail(r->n2 * sizeof *acc);
    fft_cplx *y = xmalloc_fail(r->n2 * sizeof *y);
    if (acc == NULL || y == NULL) {
        free(acc), free(y);
        return NULL;
    }
    memset(acc, 0, r->n2 * sizeof *acc);
    int ok = 1;
    if (p_lo <= p_hi) {
        for (size_t p = p_lo; p <= p_hi; p++) {
            size_t k = j - p;
            if (need(&r->x[k], x_task, &r->x_arg[k]) == NULL) {
                sf_fail(ENOMEM, "reverb: cannot make the FFT of block %zu", k);
                ok = 0;
                break;
            }
        }
        /* Every X in range is made now (or we failed); get them in p order. */
        for (size_t p = p_lo; ok && p <= p_hi; p++) {
            size_t k = j - p;
            sf_future *f = atomic_load_explicit(&r->x[k], memory_order_acquire);
            fft_cplx *X = get_or_fail(f, "FFT of input block", k);
            if (X == NULL) {
                ok = 0;
                break;
            }
            mac(acc, X, r->H + p * r->n2, r->n2);
            drop(&r->x_users[k], &r->x[k], X);
        }
    }
    if (!ok) {
        free(acc), free(y);
        return NULL;
    }
    if (r->has_engine)
        r->engine.inverse(r->engine.ctx, acc, y);
    else
        fft_inverse(r->plan, acc, y, r->n2);
    free(acc);
    return y;
}

/* Output block j: first half of y_j plus second half of y_(j-1). */
static void *out_task(void *arg)
{
    struct slot_arg *a = arg;
    reverb *r = a->r;
    const size_t j = a->k;
    fft_cplx *out = xmalloc_fail(r->B * sizeof *out);
    sf_future *fy = need(&r->y[j], y_task, &r->y_arg[j]);
    sf_future *fp = j > 0 ? need(&r->y[j - 1], y_task, &r->y_arg[j - 1]) : NULL;
    if (out == NULL || fy == NULL || (j > 0 && fp == NULL)) {
        if (out != NULL)
            sf_fail(ENOMEM, "reverb: cannot make the inverse FFT of block %zu", j);
        free(out);
        return NULL;
    }
    /* y_j first: it is this task's own work (nobody else needs it yet),
     * while y_(j-1) is likely running already for out_(j-1). */
    const fft_cplx *cur = get_or_fail(fy, "inverse FFT of block", j);
    const fft_cplx *prev = fp != NULL && cur != NULL ? get_or_fail(fp, "inverse FFT of block",
                                                                   j - 1)
                                                     : NULL;
    if (cur == NULL || (j > 0 && prev == NULL)) {
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < r->B; i++)
        out[i] = prev != NULL ? cur[i] + prev[r->B + i] : cur[i];
    drop(&r->y_users[j], &r->y[j], (void *)cur);
    if (j > 0)
        drop(&r->y_users[j - 1], &r->y[j - 1], (void *)prev);
    return out;
}

/* After a failed run: every slot future still held (its users did not all
 * finish) is cancelled if it has not started, waited for if it has, its data
 * freed and the future released, so that no task of this run outlives it.
 * The y slots first: once every y task is done, nothing touches an x slot
 * (out tasks, the only other users of y slots, are all done already). */
static void abandon(reverb *r)
{
    for (int pass = 0; pass < 2; pass++) {
        _Atomic(sf_future *) *slots = pass == 0 ? r->y : r->x;
        size_t n = pass == 0 ? r->nout : r->nin;
        for (size_t i = 0; i < n; i++) {
            sf_future *f = atomic_load_explicit(&slots[i], memory_order_acquire);
            if (f == NULL || f == BUSY)
                continue;
            sf_cancel(f);
            void *v;
            if (sf_wait(f, &v) == 0)
                free(v);
            sf_release(f);
        }
    }
}

static void free_run(reverb *r)
{
    free(r->x), free(r->y), free(r->x_users), free(r->y_users);
    free(r->x_arg), free(r->y_arg), free(r->out_arg);
    r->x = r->y = NULL;
    r->x_users = r->y_users = NULL;
    r->x_arg = r->y_arg = r->out_arg = NULL;
}

int reverb_run(reverb *r, reverb_source src, reverb_sink sink, void *sink_ctx, int window,
               void (*progress)(size_t done, size_t total))
{
    if (r == NULL || src.block == NULL || sink == NULL || window < 0) {
        errno = EINVAL;
        return -1;
    }
    const size_t w = window == 0 ? 4 : (size_t)window;
    r->error[0] = '\0';
    r->src = src;
    r->x = calloc(r->nin, sizeof *r->x);
    r->y = calloc(r->nout, sizeof *r->y);
    r->x_users = calloc(r->nin, sizeof *r->x_users);
    r->y_users = calloc(r->nout, sizeof *r->y_users);
    r->x_arg = calloc(r->nin, sizeof *r->x_arg);
    r->y_arg = calloc(r->nout, sizeof *r->y_arg);
    r->out_arg = calloc(r->nout, sizeof *r->out_arg);
    sf_future **outs = calloc(r->nout, sizeof *outs);
    if (!r->x || !r->y || !r->x_users || !r->y_users || !r->x_arg || !r->y_arg || !r->out_arg ||
        !outs) {
        free_run(r);
        free(outs);
        errno = ENOMEM;
        return -1;
    }
    for (size_t k = 0; k < r->nin; k++) {
        atomic_init(&r->x[k], NULL);
        atomic_init(&r->x_users[k], x_users(r, k));
        r->x_arg[k] = (struct slot_arg){r, k};
    }
    for (size_t j = 0; j < r->nout; j++) {
        atomic_init(&r->y[j], NULL);
        atomic_init(&r->y_users[j], y_users(r, j));
        r->y_arg[j] = (struct slot_arg){r, j};
        r->out_arg[j] = (struct slot_arg){r, j};
    }
    int rc = 0;
    size_t made = 0, j = 0;
    for (; j < r->nout; j++) {
        while (made < r->nout && made < j + w) {
            outs[made] = sf_do(out_task, &r->out_arg[made]);
            if (outs[made] == NULL)
                break;
            made++;
        }
        if (made <= j) { /* sf_do failed with nothing ahead to get */
            rc = errno;
            break;
        }
        void *blk;
        int e = sf_wait(outs[j], &blk);
        if (e != 0) {
            const char *msg = sf_error_message(outs[j]);
            snprintf(r->error, sizeof r->error, "output block %zu: %s", j,
                     msg != NULL ? msg : strerror(e));
            rc = e;
            break;
        }
        size_t first = j * r->B;
        size_t n = r->out_len - first < r->B ? r->out_len - first : r->B;
        int stop = sink(sink_ctx, first, blk, n);
        free(blk);
        sf_release(outs[j]);
        outs[j] = NULL;
        if (stop) {
            rc = ECANCELED;
            break;
        }
        if (progress != NULL)
            progress(j + 1, r->nout);
    }
    if (rc != 0) {
        /* Stop what is ahead: cancel the out tasks not got (wait for one
         * that started), then the slots' tasks (abandon). */
        for (size_t i = j; i < made; i++) {
            if (outs[i] == NULL)
                continue;
            sf_cancel(outs[i]);
            void *v;
            if (sf_wait(outs[i], &v) == 0)
                free(v);
            sf_release(outs[i]);
        }
        abandon(r);
    }
    free(outs);
    free_run(r);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}

static void seq_forward(void *ctx, const fft_cplx *in, fft_cplx *out)
{
    const fft_plan *p = ctx;
    fft_forward(p, in, out, fft_plan_size(p));
}

static void seq_inverse(void *ctx, const fft_cplx *in, fft_cplx *out)
{
    const fft_plan *p = ctx;
    fft_inverse(p, in, out, fft_plan_size(p));
}

int reverb_run_seq(reverb *r, const fft_cplx *in, const reverb_engine *engine, reverb_sink sink,
                   void *sink_ctx)
{
    if (r == NULL || in == NULL || sink == NULL) {
        errno = EINVAL;
        return -1;
    }
    reverb_engine own = {seq_forward, seq_inverse, r->seq_plan};
    const reverb_engine *e = engine != NULL ? engine : &own;
    const size_t B = r->B, n2 = r->n2, P = r->P;
    /* The spectra of the last P input blocks, X_k in ring[k % P]. */
    fft_cplx *ring = malloc(P * n2 * sizeof *ring);
    fft_cplx *pad = malloc(n2 * sizeof *pad), *acc = malloc(n2 * sizeof *acc);
    fft_cplx *y = malloc(n2 * sizeof *y), *prev = malloc(n2 * sizeof *prev);
    fft_cplx *out = malloc(B * sizeof *out);
    int rc = 0;
    if (!ring || !pad || !acc || !y || !prev || !out) {
        rc = ENOMEM;
        goto done;
    }
    for (size_t j = 0; j < r->nout; j++) {
        if (j < r->nin) {
            size_t n = r->in_len - j * B < B ? r->in_len - j * B : B;
            memcpy(pad, in + j * B, n * sizeof *pad);
            memset(pad + n, 0, (n2 - n) * sizeof *pad);
            e->forward(e->ctx, pad, ring + (j % P) * n2);
        }
        memset(acc, 0, n2 * sizeof *acc);
        size_t p_lo = j >= r->nin ? j - (r->nin - 1) : 0;
        size_t p_hi = j < P - 1 ? j : P - 1;
        for (size_t p = p_lo; p <= p_hi; p++)
            mac(acc, ring + ((j - p) % P) * n2, r->H + p * n2, n2);
        e->inverse(e->ctx, acc, y);
        for (size_t i = 0; i < B; i++)
            out[i] = j > 0 ? y[i] + prev[B + i] : y[i];
        size_t first = j * B;
        if (sink(sink_ctx, first, out, r->out_len - first < B ? r->out_len - first : B) != 0) {
            rc = ECANCELED;
            goto done;
        }
        fft_cplx *t = prev;
        prev = y;
        y = t;
    }
done:
    free(ring), free(pad), free(acc), free(y), free(prev), free(out);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}

/* The array source: block k is a copy of frames [kB, kB + B), zero-padded. */
struct array_src {
    const fft_cplx *x;
    size_t n;
};

struct array_block {
    const struct array_src *s;
    size_t k, frames;
};

static void *array_block_task(void *arg)
{
    struct array_block *b = arg;
    fft_cplx *blk = malloc(b->frames * sizeof *blk);
    if (blk == NULL) {
        sf_fail(ENOMEM, "reverb: out of memory for input block %zu", b->k);
        free(b);
        return NULL;
    }
    size_t first = b->k * b->frames;
    size_t n = first >= b->s->n ? 0 : b->s->n - first < b->frames ? b->s->n - first : b->frames;
    memcpy(blk, b->s->x + first, n * sizeof *blk);
    memset(blk + n, 0, (b->frames - n) * sizeof *blk);
    free(b);
    return blk;
}

static sf_future *array_block(void *ctx, size_t k, size_t frames)
{
    struct array_block *b = malloc(sizeof *b);
    if (b == NULL)
        return NULL;
    *b = (struct array_block){ctx, k, frames};
    sf_future *f = sf_do(array_block_task, b);
    if (f == NULL)
        free(b);
    return f;
}

reverb_source reverb_array_source(const fft_cplx *x, size_t n)
{
    struct array_src *s = malloc(sizeof *s);
    if (s != NULL)
        *s = (struct array_src){x, n};
    return (reverb_source){s != NULL ? array_block : NULL, s};
}

void reverb_array_source_free(reverb_source src)
{
    free(src.ctx);
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A uniform double in [-1, 1). */
static double uniform(uint64_t *s)
{
    return (double)(xorshift(s) >> 11) / 4503599627370496.0 - 1.0;
}

void reverb_demo_ir(double *ir, size_t n, double rate, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15u | 1;
    const double len = (double)n / rate;
    double energy = 0;
    for (size_t i = 0; i < n; i++) {
        double t = (double)i / rate;
        ir[i] = uniform(&s) * exp(-6.907755 * t / len); /* ln(1000): -60 dB at the end */
        energy += ir[i] * ir[i];
    }
    const double g = energy > 0 ? 1.0 / sqrt(energy) : 0;
    for (size_t i = 0; i < n; i++)
        ir[i] *= g;
}

void reverb_demo_signal(fft_cplx *x, size_t n, double rate, uint64_t seed)
{
    static const double scale[] = {220.0, 246.94, 277.18, 329.63, 369.99,
                                   440.0, 493.88, 554.37, 659.25, 739.99};
    uint64_t s = seed * 0x9E3779B97F4A7C15u | 1;
    memset(x, 0, n * sizeof *x);
    const size_t step = (size_t)(rate / 4), len = (size_t)(rate * 0.6);
    for (size_t start = 0, note = 0; start < n; start += step, note++) {
        double f = scale[xorshift(&s) % 10];
        double pan = (note % 3) / 2.0; /* left, centre, right */
        double amp = 0.25 + 0.1 * uniform(&s);
        for (size_t i = 0; i < len && start + i < n; i++) {
            double t = (double)i / rate;
            double v = amp * exp(-7.0 * t) * sin(2 * M_PI * f * t) *
                       (1.0 - exp(-t * 2000.0)); /* a 0.5 ms attack: no click */
            x[start + i] += CMPLX(v * (1.0 - pan), v * pan);
        }
    }
}
