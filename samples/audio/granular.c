/*
 * granular.c - granular synthesis as nested libsf tasks (see granular.h).
 *
 * The score. granular_new draws, from the seed (xorshift64), a few clouds
 * that overlap in time - about one every 2.5 s, each 3 to 8 s long - and for
 * each cloud its grains, Poisson-spaced over its span: start frame, length
 * (the cloud's range, 15..250 ms), pitch (a note of the cloud's pentatonic
 * set, octave shifted, slightly detuned), start phase, amplitude (scaled by
 * the cloud's fade in/out at the grain's start) and pan. Grains are kept per
 * cloud sorted by start, with the cloud's longest grain, so the grains that
 * sound in a stretch are found by binary search.
 *
 * A grain's sample i is env(i / len) * amp * osc(phase0 + i * f / rate), a
 * pure function of i: Hann envelope, and an oscillator read from a
 * 4096-entry sine table with linear interpolation (sine, 2-operator FM, or
 * a 4-harmonic additive tone, per cloud). Rendering a grain in parts
 * therefore gives the same samples as rendering it whole.
 *
 * With a source (granular_source), osc is replaced by a read of the source,
 * looped, with linear interpolation, at pos0 + i * ratio: the grain plays
 * the source transposed by its note (ratio: the note within the octave and
 * the octave shift, one down to two up, from the same draws as its pitch),
 * from a point that scans the source across the piece (a grain starting at
 * a fraction x of the piece reads from x of the source, plus up to 50 ms
 * drawn from its phase). The score's draws are the same with or without a
 * source, and the sample is still a pure function of i.
 *
 * The tasks. render (one stretch) -> one task per cloud that sounds in it ->
 * one task per grain that sounds in it, made in batches of 64 (bounding the
 * grain buffers alive at once), each batch got in index order and summed
 * into the cloud's buffer, then the clouds summed in cloud order. Tree
 * shaped: every task gets only the futures it made. No float add races: a
 * sample's sum is sum over clouds in order of sum over grains in order,
 * whatever thread computed each term, so the result does not depend on the
 * schedule or on SF_THREADS.
 */
#include "granular.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TABLE 4096
#define BATCH 64

enum wave { WAVE_SINE, WAVE_FM, WAVE_ADDITIVE };

struct grain {
    size_t start, len; /* frames */
    double inc;        /* cycles per frame: f / rate */
    double phase0;     /* cycles */
    double ratio;      /* source frames per frame, with a source */
    double pos0;       /* source frames, in [0, source frames), with a source */
    double amp, gl, gr; /* amplitude, left and right gains */
};

struct cloud {
    size_t start, end; /* frames in which its grains sound: [start, end) */
    size_t first, count; /* its grains: g->grains[first, first + count) */
    size_t maxlen;
    enum wave wave;
};

struct granular {
    size_t frames;
    size_t nclouds, ngrains;
    struct cloud *clouds;
    struct grain *grains;
    const double *src; /* the source, mono, or NULL: oscillators */
    size_t src_frames;
    double table[TABLE + 1]; /* sin(2 pi k / TABLE), one extra for interpolation */
};

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double unit(uint64_t *s) /* [0, 1) */
{
    return (double)(next(s) >> 11) / 9007199254740992.0;
}

static double range(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * unit(s);
}

granular *granular_new(double seconds, uint64_t seed)
{
    if (!(seconds > 0) || seconds > 3600) {
        errno = EINVAL;
        return NULL;
    }
    /* What each cloud draws, kept while its grains are drawn. */
    struct cloud_spec {
        double start, len, density, lmin, lmax, root, spread, pan, width;
    } *spec = NULL;
    granular *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    for (int k = 0; k <= TABLE; k++)
        g->table[k] = sin(2 * M_PI * k / TABLE);
    const double rate = GRANULAR_RATE;
    g->frames = (size_t)(seconds * rate);
    uint64_t s = (seed + 1) * 0x9E3779B97F4A7C15u;
    if (s == 0)
        s = 1;
    /* Clouds: one every ~2.5 s, the first at 0, each 3..8 s (cut at the end). */
    size_t cap = (size_t)(seconds / 2.0) + 2;
    g->clouds = calloc(cap, sizeof *g->clouds);
    spec = malloc(cap * sizeof *spec);
    if (g->clouds == NULL || spec == NULL)
        goto fail;
    size_t gcap = 0;
    double t = 0;
    while (t < seconds && g->nclouds < cap) {
        size_t c = g->nclouds++;
        spec[c].start = t;
        spec[c].len = fmin(range(&s, 3, 8), seconds - t);
        spec[c].density = range(&s, 120, 450); /* grains per second */
        spec[c].lmin = range(&s, 0.015, 0.06);
        spec[c].lmax = spec[c].lmin + range(&s, 0.03, 0.19);
        static const double roots[] = {110.0, 130.81, 146.83, 164.81, 196.0, 220.0};
        spec[c].root = roots[next(&s) % 6];
        spec[c].spread = range(&s, 1, 3); /* octaves */
        spec[c].pan = range(&s, 0.15, 0.85);
        spec[c].width = range(&s, 0.1, 0.5);
        g->clouds[c].wave = (enum wave)(next(&s) % 3);
        gcap += (size_t)(spec[c].density * spec[c].len * 1.5) + 16;
        t += range(&s, 1.5, 3.5);
    }
    g->grains = malloc(gcap * sizeof *g->grains);
    if (g->grains == NULL)
        goto fail;
    static const int penta[] = {0, 2, 4, 7, 9};
    for (size_t c = 0; c < g->nclouds; c++) {
        struct cloud *cl = &g->clouds[c];
        cl->first = g->ngrains;
        cl->start = (size_t)(spec[c].start * rate);
        cl->end = cl->start;
        const double fade = fmin(1.0, spec[c].len / 3);
        /* Loudness: about density * mean length grains overlap; their sum
         * grows as its square root. */
        const double amp = 0.5 / sqrt(spec[c].density * (spec[c].lmin + spec[c].lmax) / 2 + 1);
        double at = range(&s, 0, 0.01);
        while (at < spec[c].len && g->ngrains < gcap) {
            struct grain *gr = &g->grains[g->ngrains++];
            gr->start = cl->start + (size_t)(at * rate);
            gr->len = (size_t)(range(&s, spec[c].lmin, spec[c].lmax) * rate);
            if (gr->start + gr->len > g->frames)
                gr->len = g->frames > gr->start ? g->frames - gr->start : 0;
            int semis = penta[next(&s) % 5] + 12 * (int)(next(&s) % (unsigned)(spec[c].spread + 1));
            const double detune = range(&s, -0.08, 0.08);
            double f = spec[c].root * pow(2.0, (semis + detune) / 12.0);
            gr->inc = f / rate;
            /* The note within the octave, the octave shift (0..3) as -1..+2. */
            const int octave = semis / 12 < 3 ? semis / 12 : 3;
            gr->ratio = pow(2.0, (semis % 12 + detune) / 12.0) * (double)(1 << octave) / 2;
            gr->phase0 = unit(&s);
            /* Fade in over the cloud's first third, out over its last. */
            double env = fmin(1.0, fmin(at / fade, (spec[c].len - at) / fade));
            gr->amp = amp * env * range(&s, 0.5, 1.0);
            double pan = fmin(1.0, fmax(0.0, spec[c].pan + spec[c].width * range(&s, -1, 1)));
            gr->gl = cos(pan * M_PI / 2);
            gr->gr = sin(pan * M_PI / 2);
            if (gr->len > cl->maxlen)
                cl->maxlen = gr->len;
            if (gr->start + gr->len > cl->end)
                cl->end = gr->start + gr->len;
            at += -log(1.0 - unit(&s)) / spec[c].density; /* Poisson spacing */
        }
        cl->count = g->ngrains - cl->first;
    }
    free(spec);
    return g;
fail:
    free(spec);
    granular_free(g);
    errno = ENOMEM;
    return NULL;
}

void granular_free(granular *g)
{
    if (g != NULL) {
        free(g->clouds);
        free(g->grains);
        free(g);
    }
}

void granular_source(granular *g, const double *src, size_t frames)
{
    g->src = frames > 0 ? src : NULL;
    g->src_frames = frames;
    const double n = (double)frames, jitter = 0.05 * GRANULAR_RATE;
    for (size_t k = 0; g->src != NULL && k < g->ngrains; k++) {
        struct grain *gr = &g->grains[k];
        double at = (double)gr->start / (double)g->frames * n + gr->phase0 * jitter;
        gr->pos0 = fmod(at, n);
    }
}

size_t granular_frames(const granular *g)
{
    return g->frames;
}

size_t granular_grains(const granular *g)
{
    return g->ngrains;
}

size_t granular_clouds(const granular *g)
{
    return g->nclouds;
}

double granular_limit(double x)
{
    return tanh(x);
}

/* The table's sine of p cycles, p >= 0 (so truncation is floor, without a
 * libm call on baseline x86-64). p - trunc(p) is exact and below 1, and
 * p * TABLE scales by a power of two, so k <= TABLE - 1. */
static inline double tsin(const double *table, double p)
{
    p -= (double)(uint64_t)p;
    double x = p * TABLE;
    size_t k = (size_t)x;
    double frac = x - (double)k;
    return table[k] + frac * (table[k + 1] - table[k]);
}

static inline double osc(const double *table, enum wave w, double p)
{
    switch (w) {
    case WAVE_FM:
        return tsin(table, p + 1.0 + 0.35 * tsin(table, 2.0 * p)); /* + 1 cycle: >= 0 */
    case WAVE_ADDITIVE:
        return 0.6 * tsin(table, p) + 0.25 * tsin(table, 2 * p) + 0.1 * tsin(table, 3 * p) +
               0.05 * tsin(table, 4 * p);
    default:
        return tsin(table, p);
    }
}

/* The source at p >= 0 frames, looped: x[k] + frac (x[k + 1] - x[k]),
 * k + 1 wrapping to 0 at the end. */
static inline double src_at(const granular *g, double p)
{
    const double n = (double)g->src_frames;
    if (p >= n)
        p = fmod(p, n);
    size_t k = (size_t)p;
    double frac = p - (double)k;
    size_t k1 = k + 1 < g->src_frames ? k + 1 : 0;
    return g->src[k] + frac * (g->src[k1] - g->src[k]);
}

/* --- tasks -------------------------------------------------------------- */

struct grain_job {
    const granular *g;
    const struct grain *gr;
    enum wave wave;
    size_t from, n; /* the grain's samples [from, from + n) */
};

/* A grain's samples [from, from + n), mono, malloc'd. */
static void *grain_task(void *arg)
{
    const struct grain_job *j = arg;
    const struct grain *gr = j->gr;
    double *out = malloc(j->n * sizeof *out);
    if (out == NULL) {
        sf_fail(ENOMEM, "granular: no memory for a grain of %zu frames", j->n);
        return NULL;
    }
    const double inv_len = 1.0 / (double)gr->len;
    for (size_t i = 0; i < j->n; i++) {
        double k = (double)(j->from + i);
        /* Hann: 0.5 - 0.5 cos(2 pi x) = 0.5 - 0.5 sin(2 pi (x + 1/4)) */
        double env = 0.5 - 0.5 * tsin(j->g->table, k * inv_len + 0.25);
        double v = j->g->src != NULL ? src_at(j->g, gr->pos0 + k * gr->ratio)
                                     : osc(j->g->table, j->wave, gr->phase0 + k * gr->inc);
        out[i] = gr->amp * env * v;
    }
    return out;
}

struct cloud_job {
    const granular *g;
    const struct cloud *cl;
    size_t first, n; /* the stretch of the piece */
};

/* The cloud's part of the stretch: frames [max(first, cloud start),
 * min(first + n, cloud end)), stereo, malloc'd. */
static void *cloud_task(void *arg)
{
    const struct cloud_job *cj = arg;
    const granular *g = cj->g;
    const struct cloud *cl = cj->cl;
    const size_t a = cj->first, b = cj->first + cj->n;
    /* The buffer covers only where the cloud sounds: [ca, cb). */
    const size_t ca = a > cl->start ? a : cl->start, cb = b < cl->end ? b : cl->end;
    double *mix = calloc(2 * (cb - ca), sizeof *mix);
    if (mix == NULL) {
        sf_fail(ENOMEM, "granular: no memory for a cloud's %zu frames", cb - ca);
        return NULL;
    }
    /* The first grain that may sound at a: grains start in order, none is
     * longer than maxlen, so every one starting before a - maxlen is over. */
    const struct grain *gs = g->grains + cl->first;
    size_t lo = 0, hi = cl->count;
    size_t from = a > cl->maxlen ? a - cl->maxlen : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (gs[mid].start < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    struct grain_job jobs[BATCH];
    sf_future *fs[BATCH];
    size_t i = lo;
    int failed = 0;
    while (i < cl->count && gs[i].start < b && !failed) {
        /* A batch of up to BATCH grains that sound in [a, b). */
        size_t nb = 0;
        for (; i < cl->count && gs[i].start < b && nb < BATCH; i++) {
            const struct grain *gr = &gs[i];
            if (gr->start + gr->len <= a || gr->len == 0)
                continue;
            size_t s0 = gr->start > a ? gr->start : a;
            size_t s1 = gr->start + gr->len < b ? gr->start + gr->len : b;
            jobs[nb] = (struct grain_job){g, gr, cl->wave, s0 - gr->start, s1 - s0};
            fs[nb] = sf_do(grain_task, &jobs[nb]);
            if (fs[nb] == NULL) {
                sf_fail(ENOMEM, "granular: no memory for a grain task");
                failed = 1;
                break;
            }
            nb++;
        }
        /* Get them in index order, sum in that order. */
        for (size_t k = 0; k < nb; k++) {
            const double *s = sf_get(fs[k]);
            if (s == NULL && !failed) {
                sf_fail(ENOMEM, "granular: a grain failed: %s",
                        sf_error_message(fs[k]) ? sf_error_message(fs[k]) : "no memory");
                failed = 1;
            }
            if (s != NULL && !failed) {
                const struct grain *gr = jobs[k].gr;
                size_t off = gr->start + jobs[k].from - ca;
                double *m = mix + 2 * off;
                for (size_t t = 0; t < jobs[k].n; t++) {
                    m[2 * t] += gr->gl * s[t];
                    m[2 * t + 1] += gr->gr * s[t];
                }
            }
            free((void *)s);
            sf_release(fs[k]);
        }
    }
    if (failed) {
        free(mix);
        return NULL;
    }
    return mix;
}

struct render_job {
    const granular *g;
    size_t first, n;
};

static void *render_task(void *arg)
{
    struct render_job *rj = arg;
    const granular *g = rj->g;
    const size_t a = rj->first, b = rj->first + rj->n;
    double *out = calloc(2 * rj->n, sizeof *out);
    struct cloud_job *jobs = malloc(g->nclouds * sizeof *jobs);
    sf_future **fs = malloc(g->nclouds * sizeof *fs);
    size_t nc = 0;
    int failed = out == NULL || jobs == NULL || fs == NULL;
    if (failed)
        sf_fail(ENOMEM, "granular: no memory for a stretch of %zu frames", rj->n);
    for (size_t c = 0; c < g->nclouds && !failed; c++) {
        const struct cloud *cl = &g->clouds[c];
        if (cl->end <= a || cl->start >= b || cl->end <= cl->start)
            continue;
        jobs[nc] = (struct cloud_job){g, cl, a, rj->n};
        fs[nc] = sf_do(cloud_task, &jobs[nc]);
        if (fs[nc] == NULL) {
            sf_fail(ENOMEM, "granular: no memory for a cloud task");
            failed = 1;
            break;
        }
        nc++;
    }
    for (size_t c = 0; c < nc; c++) {
        const double *m = sf_get(fs[c]);
        if (m == NULL && !failed) {
            const char *msg = sf_error_message(fs[c]);
            sf_fail(errno != 0 ? errno : ENOMEM, "%s", msg != NULL ? msg : "a cloud failed");
            failed = 1;
        }
        if (m != NULL && !failed) {
            const struct cloud *cl = jobs[c].cl;
            const size_t ca = a > cl->start ? a : cl->start, cb = b < cl->end ? b : cl->end;
            double *o = out + 2 * (ca - a);
            for (size_t t = 0; t < 2 * (cb - ca); t++)
                o[t] += m[t];
        }
        free((void *)m);
        sf_release(fs[c]);
    }
    free(jobs);
    free(fs);
    free(rj);
    if (failed) {
        free(out);
        return NULL;
    }
    return out;
}

sf_future *granular_render(const granular *g, size_t first, size_t n)
{
    if (g == NULL || n == 0) {
        errno = EINVAL;
        return NULL;
    }
    struct render_job *rj = malloc(sizeof *rj);
    if (rj == NULL)
        return NULL;
    *rj = (struct render_job){g, first, n};
    sf_future *f = sf_do(render_task, rj);
    if (f == NULL)
        free(rj);
    return f;
}
