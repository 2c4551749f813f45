/*
 * svg.c - the schedule as a picture: an SVG timeline, and a PNG of it made
 * by rsvg-convert (sched_svg, sched_png in schedule.h).
 *
 * Layout: a title with the trace's name and totals; one row per thread
 * (labelled with its name, tasks and busy share), time left to right over
 * PLOT_W pixels on an axis in ms with round ticks; in each row one band per
 * nesting depth (depth 0 on top, deeper tasks lower, depths from MAX_BANDS
 * on sharing the last band), each task a rectangle coloured by its kind;
 * under them a thin band for sleeps and idle spells; a legend at the foot.
 *
 * Fibers (docs/waiting.md). A thread keeps its one row; a thread that
 * switched fibers gets in it a lane per fiber it used - fiber 0, its own
 * stack, on top, then fibers 1, 2, ... - each lane with its own bands (a
 * slice's depth is its nesting on its own fiber) under a thin strip for
 * the fiber's markers. Lanes, not one stack of bands with a helped fiber's
 * bands offset below those of the fiber that parked, because only nesting
 * within a fiber is exact: a parked fiber keeps its tasks open while the
 * thread runs others, and the fiber that parked may, once resumed, nest
 * deeper than it was while the fiber it helped on is parked in turn, so any
 * fixed offset of one fiber's bands by another's can overlap; within a
 * fiber, slices never do. While a fiber is parked with tasks open, the
 * bands of those tasks are hatched from the switch away to the switch back
 * (SK_PARKED), so the solid parts of a row's lanes are what the thread ran,
 * one fiber at a time. A park (a get parks its fiber: a pause sign astride
 * the instant) and a resume (the thread switches to a fiber, a parked one
 * or a fresh one: a play sign starting at the instant) go in the strip of
 * the fiber concerned, in colours no task kind uses; the legend has both
 * and the hatch. Fibers from MAX_LANES - 1 on share the last lane, which
 * may then overlap as the last band does: four lanes hold the fibers of
 * fork-join code at a few threads (samples/fib at 2 or 3 threads parks up
 * to fibers 4 or 5) and bound a row's height. A thread that never switched
 * fibers is drawn as before: one lane, no strip, no label.
 *
 * Size stays bounded whatever the trace: a slice narrower than a pixel is
 * not drawn on its own but added to its band's coverage, one accumulator
 * per pixel column and kind; each column then gets the colour of the kind
 * that covered most of it with an opacity for the share covered (in
 * quarters), and equal neighbours merge into one rectangle. Past
 * SVG_MAX_RECTS rectangles, wide slices go to the coverage too. A parked
 * stretch is one hatched rectangle when at least a pixel wide and under the
 * same cap, else not drawn (its markers still are). Markers merge like
 * slices: at most one of a kind per pixel column and lane, at the first
 * one's time. So a row costs at most (lanes * MAX_BANDS + 1) * PLOT_W
 * coverage rectangles and lanes * SM_COUNT * PLOT_W markers, and the file at
 * most about SVG_MAX_RECTS + rows * (MAX_LANES * (MAX_BANDS + SM_COUNT) + 1)
 * * PLOT_W elements.
 */
#include "schedule.h"

#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define PLOT_W 1000     /* pixels of time */
#define LEFT 150        /* the labels' column */
#define RIGHT 30
#define TOP 64          /* title and subtitle above the rows */
#define BAND_H 7        /* one nesting level */
#define MARK_H 5        /* the sleep / idle band */
#define STRIP_H 8       /* a fiber's marker strip, above its lane's bands */
#define MAX_BANDS 8     /* per lane */
#define MAX_LANES 4     /* fibers 0, 1, 2, and 3 and up sharing the last */
#define ROW_PAD 6
#define SVG_MAX_RECTS 20000
#define LEGEND_ROWS 6   /* the task kinds; then sleeps, idle, parked, park, resume */

static const char *const colour[SK_COUNT] = {
    "#4e79a7", /* inline: blue */
    "#59a14f", /* wait-inlined: green */
    "#f28e2b", /* pool: orange */
    "#e15759", /* stolen: red */
    "#9c755f", /* drained: brown */
    "#edc948", /* batch-wait: yellow */
    "#b07aa1", /* asleep: purple */
    "#bab0ac", /* idle: grey */
    "url(#hatch)", /* parked: white stripes over the tasks it holds */
};

static const char *const meaning[SK_COUNT] = {
    "inline: a get ran its own task",
    "wait-inlined: a blocked get ran its own task",
    "pool: taken by an idle worker",
    "stolen: run by a blocked get, helping",
    "drained: run by sf_shutdown",
    "batch-wait: run by sf_batch_wait, helping its batch",
    "asleep: a get with nothing to run",
    "idle: a worker with nothing to take",
    "parked: tasks of a fiber its get parked (hatched)",
};

/* The markers: a pause sign where a get parks its fiber, a play sign where
 * the thread goes on with a fiber; near-black and teal, which no kind
 * uses. */
static const char *const mark_colour[SM_COUNT] = {"#1b1b1b", "#0a8f96"};
static const char *const mark_class[SM_COUNT] = {"park", "resume"};
static const char *const mark_meaning[SM_COUNT] = {
    "park: a get parks the fiber it runs on",
    "resume: the thread goes on with this fiber",
};

/* Text for an SVG attribute or element: the trace's name may hold
 * anything. */
static void put_text(FILE *o, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '&')
            fputs("&amp;", o);
        else if (c == '<')
            fputs("&lt;", o);
        else if (c == '>')
            fputs("&gt;", o);
        else if (c == '"')
            fputs("&quot;", o);
        else if (c < 0x20 || c == 0x7f)
            fputc('?', o);
        else
            fputc(c, o);
    }
}

/* Where a row's parts go. Task bands are numbered through the row, lane by
 * lane; band `total` is the sleep / idle band. */
struct layout {
    int lanes;               /* 1 for a thread that never switched fibers */
    int fibered;             /* it did: lanes get strips and labels */
    int bands[MAX_LANES];    /* task bands of each lane */
    int first[MAX_LANES];    /* the lane's first band */
    int total;               /* task bands in the row */
    double strip_y[MAX_LANES];
    double band_y[MAX_LANES * MAX_BANDS + 1]; /* the last: the sleep / idle band */
    double h;                /* the row's height */
};

static int lane_of(unsigned fiber)
{
    return fiber < MAX_LANES ? (int)fiber : MAX_LANES - 1;
}

/* Lays out thread t's row at row_y. */
static void lay_out(const struct sched_thread *t, double row_y, struct layout *L)
{
    unsigned top_fiber = 0;
    uint32_t deepest[MAX_LANES] = {0};
    for (size_t k = 0; k < t->n; k++) {
        const struct sched_slice *x = &t->s[k];
        if (x->fiber > top_fiber)
            top_fiber = x->fiber;
        if (x->kind < SK_SLEEP && x->depth > deepest[lane_of(x->fiber)])
            deepest[lane_of(x->fiber)] = x->depth;
    }
    for (size_t k = 0; k < t->nm; k++)
        if (t->m[k].fiber > top_fiber)
            top_fiber = t->m[k].fiber;
    L->lanes = lane_of(top_fiber) + 1;
    L->fibered = t->nm > 0 || top_fiber > 0;
    L->total = 0;
    double y = row_y + ROW_PAD / 2.0;
    for (int l = 0; l < L->lanes; l++) {
        L->bands[l] = deepest[l] + 1 < MAX_BANDS ? (int)deepest[l] + 1 : MAX_BANDS;
        L->first[l] = L->total;
        L->strip_y[l] = y;
        if (L->fibered)
            y += STRIP_H;
        for (int b = 0; b < L->bands[l]; b++, y += BAND_H)
            L->band_y[L->total + b] = y;
        L->total += L->bands[l];
    }
    L->band_y[L->total] = y + 1;
    L->h = y - row_y + MARK_H + 2 + ROW_PAD / 2.0;
}

struct canvas {
    FILE *o;
    double t0, us_per_px;
    size_t rects;
    double *cov;     /* [band][kind][px]: microseconds covered */
    const struct layout *L; /* the current row's */
    unsigned char *marked;  /* [lane][mark kind][px]: a marker drawn there */
};

static double *cov_at(struct canvas *c, int band, int kind)
{
    return c->cov + ((size_t)band * SK_COUNT + (size_t)kind) * PLOT_W;
}

/* Adds [a, b) of `kind` to band's coverage, column by column. */
static void cover(struct canvas *c, int band, int kind, double a, double b)
{
    double *v = cov_at(c, band, kind);
    double x0 = (a - c->t0) / c->us_per_px, x1 = (b - c->t0) / c->us_per_px;
    if (x1 <= x0) { /* an instant: give it its own weight, a hundredth of a pixel */
        int px = (int)x0;
        if (px >= 0 && px < PLOT_W)
            v[px] += c->us_per_px / 100;
        return;
    }
    for (int px = x0 < 0 ? 0 : (int)x0; px < PLOT_W && px < x1; px++) {
        double lo = px > x0 ? px : x0, hi = px + 1 < x1 ? px + 1 : x1;
        if (hi > lo)
            v[px] += (hi - lo) * c->us_per_px;
    }
}

/* Deeper bands a little lighter, so that nesting reads as nesting. */
static double depth_shade(int depth)
{
    return 1 - 0.07 * depth;
}

/* The row's band of a task at depth `depth` on lane `lane`. */
static int band_of(const struct layout *L, int lane, uint32_t depth)
{
    int b = depth < (uint32_t)L->bands[lane] ? (int)depth : L->bands[lane] - 1;
    return L->first[lane] + b;
}

/* One task, sleep or idle slice: a rectangle when at least a pixel wide and
 * under the cap, else coverage. */
static void slice(struct canvas *c, const struct sched_slice *x)
{
    const struct layout *L = c->L;
    int lane = lane_of(x->fiber);
    int band = x->kind < SK_SLEEP ? band_of(L, lane, x->depth) : L->total;
    double px0 = (x->t0 - c->t0) / c->us_per_px, w = (x->t1 - x->t0) / c->us_per_px;
    if (w < 1 || c->rects >= SVG_MAX_RECTS) {
        cover(c, band, x->kind, x->t0, x->t1);
        return;
    }
    c->rects++;
    double h = x->kind < SK_SLEEP ? BAND_H - 1 : MARK_H;
    fprintf(c->o, "<rect class=\"k%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\"",
            x->kind, LEFT + px0, L->band_y[band], w, h);
    if (band > L->first[lane] && band < L->total)
        fprintf(c->o, " fill-opacity=\"%.2f\"", depth_shade(band - L->first[lane]));
    fputs("/>\n", c->o);
}

/* A parked stretch: its tasks' bands hatched, when at least a pixel wide
 * and under the cap. Drawn after the slices that began before it, over
 * them (its fiber's open tasks). */
static void parked(struct canvas *c, const struct sched_slice *x)
{
    const struct layout *L = c->L;
    int lane = lane_of(x->fiber);
    double px0 = (x->t0 - c->t0) / c->us_per_px, w = (x->t1 - x->t0) / c->us_per_px;
    if (x->depth == 0 || w < 1 || c->rects >= SVG_MAX_RECTS)
        return;
    c->rects++;
    double y0 = L->band_y[L->first[lane]], y1 = L->band_y[band_of(L, lane, x->depth - 1)];
    fprintf(c->o, "<rect class=\"k%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\"/>\n",
            SK_PARKED, LEFT + px0, y0, w, y1 - y0 + BAND_H - 1);
}

/* A marker's sign at (x, y), its top: a park's two bars astride x, a
 * resume's triangle pointing on from x. The path starts at x. */
static void put_mark(FILE *o, int kind, double x, double y)
{
    if (kind == SM_PARK)
        fprintf(o, "<path class=\"%s\" d=\"M%.1f %.1fm-2.5 0h2v6h-2zm3 0h2v6h-2z\"/>",
                mark_class[kind], x, y);
    else
        fprintf(o, "<path class=\"%s\" d=\"M%.1f %.1fl5.5 3l-5.5 3z\"/>", mark_class[kind], x, y);
}

/* A park or resume sign in its fiber's strip, unless one of its kind is
 * drawn in that column already. The path starts at the instant's x. */
static void marker(struct canvas *c, const struct sched_mark *m)
{
    const struct layout *L = c->L;
    int lane = lane_of(m->fiber);
    double x = (m->t - c->t0) / c->us_per_px;
    int px = x < 0 ? 0 : x >= PLOT_W ? PLOT_W - 1 : (int)x;
    unsigned char *seen = c->marked + ((size_t)lane * SM_COUNT + m->kind) * PLOT_W;
    if (seen[px])
        return;
    seen[px] = 1;
    put_mark(c->o, m->kind, LEFT + x, L->strip_y[lane] + 1);
    fputc('\n', c->o);
}

/* Emits band's coverage: per column the kind that covered most, opacity by
 * the share covered, equal neighbours merged. */
static void flush_cover(struct canvas *c, int band)
{
    const struct layout *L = c->L;
    double y = L->band_y[band];
    double h = band < L->total ? BAND_H - 1 : MARK_H;
    /* the band's depth in its lane, for its shade */
    int depth = 0;
    for (int l = 0; l < L->lanes && band < L->total; l++)
        if (band >= L->first[l])
            depth = band - L->first[l];
    int run_kind = -1, run_q = 0, run_from = 0;
    for (int px = 0; px <= PLOT_W; px++) {
        int kind = -1, q = 0;
        if (px < PLOT_W) {
            double total = 0, best = 0;
            for (int k = 0; k < SK_COUNT; k++) {
                double v = cov_at(c, band, k)[px];
                total += v;
                if (v > best)
                    best = v, kind = k;
            }
            if (kind >= 0) {
                double share = total / c->us_per_px;
                q = share >= 0.75 ? 4 : share >= 0.5 ? 3 : share >= 0.25 ? 2 : 1;
            }
        }
        if (kind == run_kind && q == run_q)
            continue;
        if (run_kind >= 0)
            fprintf(c->o,
                    "<rect class=\"k%d\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.0f\" "
                    "fill-opacity=\"%.2f\"/>\n",
                    run_kind, LEFT + run_from, y, px - run_from, h,
                    run_q / 4.0 * (band < L->total ? depth_shade(depth) : 1));
        run_kind = kind;
        run_q = q;
        run_from = px;
    }
}

/* A round step for about `want` ticks over span microseconds: 1, 2 or 5
 * times a power of ten, in ms. */
static double tick_ms(double span_us, int want, int *decimals)
{
    double raw = span_us / 1000 / want, mag = 1;
    *decimals = 0;
    if (raw <= 0)
        return 1;
    while (mag * 10 <= raw)
        mag *= 10;
    while (mag > raw) {
        mag /= 10;
        (*decimals)++;
    }
    double step = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
    if (step >= 10 * mag && *decimals > 0)
        (*decimals)--;
    return step;
}

int sched_svg(const struct sched *s, FILE *o)
{
    /* Time 0 is the runtime's start (Init): the axis starts there. */
    double begin = s->have_time && s->t_begin < 0 ? s->t_begin : 0;
    double span = s->have_time ? s->t_end - begin : 0;
    if (span <= 0)
        span = 1;
    size_t nbands = MAX_LANES * MAX_BANDS + 1;
    struct canvas c = {o, begin, span / PLOT_W, 0, NULL, NULL, NULL};
    c.cov = malloc(sizeof *c.cov * nbands * SK_COUNT * PLOT_W);
    c.marked = malloc((size_t)MAX_LANES * SM_COUNT * PLOT_W);
    if (c.cov == NULL || c.marked == NULL) {
        free(c.cov);
        free(c.marked);
        fputs("sftrace: out of memory\n", stderr);
        return -1;
    }
    /* Totals, and the height of the rows. */
    uint64_t by_kind[SK_COUNT] = {0}, by_mark[SM_COUNT] = {0}, tasks = 0;
    size_t rows = 0;
    double height = TOP;
    for (size_t i = 0; i < s->nthr; i++) {
        const struct sched_thread *t = &s->thr[i];
        if (!t->seen)
            continue;
        for (size_t k = 0; k < t->n; k++) {
            by_kind[t->s[k].kind]++;
            tasks += t->s[k].kind < SK_SLEEP;
        }
        for (size_t k = 0; k < t->nm; k++)
            by_mark[t->m[k].kind]++;
        struct layout L;
        lay_out(t, height, &L);
        height += L.h;
        rows++;
    }
    double axis_y = height + 4;
    double legend_y = axis_y + 46;
    double total_h = legend_y + LEGEND_ROWS * 18 + 12;
    int total_w = LEFT + PLOT_W + RIGHT;

    fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
               "viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
               "font-size=\"12\">\n",
            total_w, total_h, total_w, total_h);
    /* The hatch of parked stretches: white stripes, the task's colour
     * showing between them. */
    fputs("<defs><pattern id=\"hatch\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"4\" fill=\"#ffffff\" "
          "fill-opacity=\"0.8\"/></pattern></defs>\n", o);
    fputs("<style>", o);
    for (int k = 0; k < SK_COUNT; k++)
        fprintf(o, ".k%d{fill:%s}", k, colour[k]);
    for (int k = 0; k < SM_COUNT; k++)
        fprintf(o, ".%s{fill:%s}", mark_class[k], mark_colour[k]);
    fputs("</style>\n", o);
    fprintf(o, "<rect width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n", total_w, total_h);
    fputs("<text x=\"12\" y=\"24\" font-size=\"17\" font-weight=\"bold\">libsf schedule: ", o);
    put_text(o, s->name);
    fputs("</text>\n", o);
    fprintf(o, "<text x=\"12\" y=\"46\" fill=\"#333333\">%zu thread%s", rows, rows == 1 ? "" : "s");
    if (s->threads_cfg)
        fprintf(o, " (SF_THREADS=%" PRIu64 ")", s->threads_cfg);
    fprintf(o, ", %" PRIu64 " tasks: %" PRIu64 " inline, %" PRIu64 " wait-inlined, %" PRIu64
               " pool, %" PRIu64 " stolen, %" PRIu64 " drained, %" PRIu64 " batch-wait; %" PRIu64
               " sleeps, %" PRIu64 " parks; span %.3f ms"
               "</text>\n",
            tasks, by_kind[SK_INLINE], by_kind[SK_WAIT], by_kind[SK_POOL], by_kind[SK_STOLEN],
            by_kind[SK_DRAINED], by_kind[SK_BATCH], by_kind[SK_SLEEP], by_mark[SM_PARK],
            span / 1000);

    /* Grid and axis. */
    int dec;
    double step = tick_ms(span, 10, &dec);
    fprintf(o, "<g stroke=\"#dddddd\">\n");
    for (double ms = 0; ms * 1000 <= span * 1.0001; ms += step)
        fprintf(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\"/>\n",
                LEFT + ms * 1000 / c.us_per_px, TOP - 4, LEFT + ms * 1000 / c.us_per_px, axis_y);
    fprintf(o, "</g>\n<line x1=\"%d\" y1=\"%.0f\" x2=\"%d\" y2=\"%.0f\" stroke=\"#333333\"/>\n",
            LEFT, axis_y, LEFT + PLOT_W, axis_y);
    for (double ms = 0; ms * 1000 <= span * 1.0001; ms += step) {
        double x = LEFT + ms * 1000 / c.us_per_px;
        fprintf(o, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#333333\"/>"
                   "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.*f</text>\n",
                x, axis_y, x, axis_y + 5, x, axis_y + 18, dec,
                begin / 1000 + ms);
    }
    fprintf(o, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#333333\">time since "
               "the runtime started (ms)</text>\n",
            LEFT + PLOT_W / 2, axis_y + 34);

    /* The rows. */
    double row_y = TOP;
    size_t r = 0;
    for (size_t i = 0; i < s->nthr; i++) {
        const struct sched_thread *t = &s->thr[i];
        if (!t->seen)
            continue;
        struct layout L;
        lay_out(t, row_y, &L);
        c.L = &L;
        uint64_t n = 0;
        for (size_t k = 0; k < t->n; k++)
            n += t->s[k].kind < SK_SLEEP;
        fprintf(o, "<g class=\"row\" id=\"thread-%zu\">\n", i);
        fprintf(o, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"/>\n", LEFT,
                row_y, PLOT_W, L.h, r % 2 ? "#ffffff" : "#f3f3f3");
        fputs("<text x=\"8\" y=\"", o);
        fprintf(o, "%.1f\" font-weight=\"bold\">", row_y + 14);
        put_text(o, t->name);
        fprintf(o, "</text>\n<text x=\"8\" y=\"%.1f\" font-size=\"10\" fill=\"#555555\">%" PRIu64
                   " tasks, %.0f%% busy</text>\n",
                row_y + 27, n, 100 * sched_busy(t) / span);
        if (L.fibered)
            for (int l = 0; l < L.lanes; l++) {
                if (l > 0) /* where the lane begins */
                    fprintf(o, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                               "stroke=\"#d0d0d0\"/>\n",
                            LEFT, L.strip_y[l], LEFT + PLOT_W, L.strip_y[l]);
                fprintf(o, "<text x=\"%d\" y=\"%.1f\" font-size=\"8\" fill=\"#777777\" "
                           "text-anchor=\"end\">fiber%s %d%s</text>\n",
                        LEFT - 4, L.strip_y[l] + 8, l == MAX_LANES - 1 ? "s" : "", l,
                        l == MAX_LANES - 1 ? "+" : "");
            }
        /* only the bands this row has: a row of one band clears one */
        memset(c.cov, 0, sizeof *c.cov * (size_t)(L.total + 1) * SK_COUNT * PLOT_W);
        memset(c.marked, 0, (size_t)MAX_LANES * SM_COUNT * PLOT_W);
        /* In start order, so that a hatch covers the tasks open when its
         * fiber parked and not those a fiber sharing its lane starts later. */
        for (size_t k = 0; k < t->n; k++) {
            if (t->s[k].kind == SK_PARKED)
                parked(&c, &t->s[k]);
            else
                slice(&c, &t->s[k]);
        }
        for (int b = 0; b <= L.total; b++)
            flush_cover(&c, b);
        for (size_t k = 0; k < t->nm; k++)
            marker(&c, &t->m[k]);
        fputs("</g>\n", o);
        row_y += L.h;
        r++;
    }

    /* The legend: the task kinds, then sleeps, idle spells, parked
     * stretches and the markers, then how to read depth and lanes. */
    fprintf(o, "<g class=\"legend\">\n");
    for (int k = 0; k < SK_COUNT + SM_COUNT; k++) {
        int col = k < SK_SLEEP ? 0 : 1, row = k < SK_SLEEP ? k : k - SK_SLEEP;
        double x = 12 + col * 360, y = legend_y + row * 18;
        const char *what = k < SK_COUNT ? meaning[k] : mark_meaning[k - SK_COUNT];
        if (k < SK_PARKED)
            fprintf(o, "<rect class=\"k%d\" x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"%d\"/>",
                    k, x, y, k < SK_SLEEP ? 10 : MARK_H + 2);
        else if (k == SK_PARKED) /* hatched over a task's colour */
            fprintf(o, "<rect class=\"k%d\" x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"10\"/>"
                       "<rect class=\"k%d\" x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"10\"/>",
                    SK_INLINE, x, y, SK_PARKED, x, y);
        else
            put_mark(o, k - SK_COUNT, x + (k - SK_COUNT == SM_PARK ? 7 : 4), y + 2);
        fprintf(o, "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", x + 20, y + 10, what);
    }
    static const char *const notes[] = {
        "nesting: a task nested in another is drawn",
        "one band lower (depths from %d on share the last);",
        "faded: tasks narrower than a pixel, by coverage;",
        "fibers: a lane per fiber of a thread that parked",
        "(0: its own stack; from %d on share the last)",
    };
    for (int k = 0; k < 5; k++) {
        fprintf(o, "<text x=\"732\" y=\"%.0f\" fill=\"#333333\">", legend_y + 10 + k * 18);
        fprintf(o, notes[k], k == 1 ? MAX_BANDS - 1 : MAX_LANES - 1);
        fputs("</text>\n", o);
    }
    fputs("</g>\n</svg>\n", o);
    free(c.cov);
    free(c.marked);
    return ferror(o) ? -1 : 0;
}

/* The path of prog on PATH, or NULL. */
static char *on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        return NULL;
    while (*path) {
        size_t n = strcspn(path, ":");
        char *f = malloc(n + strlen(prog) + 2);
        if (f == NULL)
            return NULL;
        snprintf(f, n + strlen(prog) + 2, "%.*s/%s", (int)n, path, prog);
        if (n > 0 && access(f, X_OK) == 0)
            return f;
        free(f);
        path += n + (path[n] == ':');
    }
    return NULL;
}

int sched_png(const struct sched *s, const char *png_path)
{
    char *conv = on_path("rsvg-convert");
    if (conv == NULL) {
        fprintf(stderr, "sftrace: --png needs rsvg-convert (Debian: apt-get install "
                        "librsvg2-bin), which is not on PATH; no PNG written\n");
        return -1;
    }
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/sftrace-XXXXXX", dir != NULL && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        fprintf(stderr, "sftrace: cannot make a temporary file %s: %s\n", tmp, strerror(errno));
        free(conv);
        return -1;
    }
    int bad = sched_svg(s, f) != 0;
    bad |= fclose(f) != 0;
    int rc = -1;
    if (!bad) {
        char *argv[] = {conv, (char *)"-f", (char *)"png", (char *)"-o", (char *)png_path, tmp,
                        NULL};
        pid_t pid;
        int err = posix_spawn(&pid, conv, NULL, NULL, argv, environ);
        int status = 0;
        if (err != 0)
            fprintf(stderr, "sftrace: cannot run %s: %s\n", conv, strerror(err));
        else if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
                 WEXITSTATUS(status) != 0) {
            fprintf(stderr, "sftrace: %s failed; no PNG written\n", conv);
            unlink(png_path); /* whatever it left is not a PNG to trust */
        } else
            rc = 0;
    } else {
        fprintf(stderr, "sftrace: cannot write the SVG to %s\n", tmp);
    }
    unlink(tmp);
    free(conv);
    return rc;
}
