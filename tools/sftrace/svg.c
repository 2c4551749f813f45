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
 * Size stays bounded whatever the trace: a slice narrower than a pixel is
 * not drawn on its own but added to its band's coverage, one accumulator
 * per pixel column and kind; each column then gets the colour of the kind
 * that covered most of it with an opacity for the share covered (in
 * quarters), and equal neighbours merge into one rectangle. Past
 * SVG_MAX_RECTS rectangles, wide slices go to the coverage too. So a row
 * costs at most (bands + 1) * PLOT_W coverage rectangles, and the file at
 * most about SVG_MAX_RECTS + rows * (MAX_BANDS + 1) * PLOT_W rectangles.
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
#define MAX_BANDS 8
#define ROW_PAD 6
#define SVG_MAX_RECTS 20000

static const char *const colour[SK_COUNT] = {
    "#4e79a7", /* inline: blue */
    "#59a14f", /* wait-inlined: green */
    "#f28e2b", /* pool: orange */
    "#e15759", /* stolen: red */
    "#9c755f", /* drained: brown */
    "#edc948", /* batch-wait: yellow */
    "#b07aa1", /* asleep: purple */
    "#bab0ac", /* idle: grey */
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

struct canvas {
    FILE *o;
    double t0, us_per_px;
    size_t rects;
    double *cov; /* [band][kind][px]: microseconds covered */
    int bands;   /* task bands of the current row */
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

static double band_y(int band, double row_y)
{
    return row_y + ROW_PAD / 2.0 + band * BAND_H;
}

/* Deeper bands a little lighter, so that nesting reads as nesting. */
static double depth_shade(int band)
{
    return 1 - 0.07 * band;
}

/* One slice: a rectangle when at least a pixel wide and under the cap,
 * else coverage. */
static void slice(struct canvas *c, const struct sched_slice *x, double row_y)
{
    int band = x->kind < SK_SLEEP
                   ? (int)(x->depth < (uint32_t)c->bands ? x->depth : (uint32_t)c->bands - 1)
                   : c->bands;
    double px0 = (x->t0 - c->t0) / c->us_per_px, w = (x->t1 - x->t0) / c->us_per_px;
    if (w < 1 || c->rects >= SVG_MAX_RECTS) {
        cover(c, band, x->kind, x->t0, x->t1);
        return;
    }
    c->rects++;
    double y = x->kind < SK_SLEEP ? band_y(band, row_y) : band_y(c->bands, row_y) + 1;
    double h = x->kind < SK_SLEEP ? BAND_H - 1 : MARK_H;
    fprintf(c->o, "<rect class=\"k%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\"",
            x->kind, LEFT + px0, y, w, h);
    if (band > 0 && band < c->bands)
        fprintf(c->o, " fill-opacity=\"%.2f\"", depth_shade(band));
    fputs("/>\n", c->o);
}

/* Emits band's coverage: per column the kind that covered most, opacity by
 * the share covered, equal neighbours merged. */
static void flush_cover(struct canvas *c, int band, double row_y)
{
    double y = band < c->bands ? band_y(band, row_y) : band_y(c->bands, row_y) + 1;
    double h = band < c->bands ? BAND_H - 1 : MARK_H;
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
                    run_q / 4.0 * (band < c->bands ? depth_shade(band) : 1));
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
    struct canvas c = {o, begin, span / PLOT_W, 0, NULL, 1};
    c.cov = malloc(sizeof *c.cov * (MAX_BANDS + 1) * SK_COUNT * PLOT_W);
    if (c.cov == NULL) {
        fputs("sftrace: out of memory\n", stderr);
        return -1;
    }
    /* Totals, and the height of each row. */
    uint64_t by_kind[SK_COUNT] = {0}, tasks = 0;
    size_t rows = 0;
    int bands[1 + 4096];
    double height = TOP;
    for (size_t i = 0; i < s->nthr; i++) {
        const struct sched_thread *t = &s->thr[i];
        if (!t->seen)
            continue;
        uint32_t deepest = 0;
        for (size_t k = 0; k < t->n; k++) {
            by_kind[t->s[k].kind]++;
            tasks += t->s[k].kind < SK_SLEEP;
            if (t->s[k].kind < SK_SLEEP && t->s[k].depth > deepest)
                deepest = t->s[k].depth;
        }
        if (rows < 4096)
            bands[rows] = deepest + 1 < MAX_BANDS ? (int)deepest + 1 : MAX_BANDS;
        else
            bands[4096] = MAX_BANDS;
        height += ROW_PAD + bands[rows < 4096 ? rows : 4096] * BAND_H + MARK_H + 2;
        rows++;
    }
    double axis_y = height + 4;
    double legend_y = axis_y + 46;
    double total_h = legend_y + 4 * 18 + 12;
    int total_w = LEFT + PLOT_W + RIGHT;

    fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
               "viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
               "font-size=\"12\">\n",
            total_w, total_h, total_w, total_h);
    fputs("<style>", o);
    for (int k = 0; k < SK_COUNT; k++)
        fprintf(o, ".k%d{fill:%s}", k, colour[k]);
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
               " sleeps; span %.3f ms"
               "</text>\n",
            tasks, by_kind[SK_INLINE], by_kind[SK_WAIT], by_kind[SK_POOL], by_kind[SK_STOLEN],
            by_kind[SK_DRAINED], by_kind[SK_BATCH], by_kind[SK_SLEEP], span / 1000);

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
        c.bands = bands[r < 4096 ? r : 4096];
        double row_h = ROW_PAD + c.bands * BAND_H + MARK_H + 2;
        uint64_t n = 0;
        double busy = 0;
        for (size_t k = 0; k < t->n; k++)
            if (t->s[k].kind < SK_SLEEP) {
                n++;
                if (t->s[k].depth == 0)
                    busy += t->s[k].t1 - t->s[k].t0;
            }
        fprintf(o, "<g class=\"row\" id=\"thread-%zu\">\n", i);
        fprintf(o, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"/>\n", LEFT,
                row_y, PLOT_W, row_h, r % 2 ? "#ffffff" : "#f3f3f3");
        fputs("<text x=\"8\" y=\"", o);
        fprintf(o, "%.1f\" font-weight=\"bold\">", row_y + 14);
        put_text(o, t->name);
        fprintf(o, "</text>\n<text x=\"8\" y=\"%.1f\" font-size=\"10\" fill=\"#555555\">%" PRIu64
                   " tasks, %.0f%% busy</text>\n",
                row_y + 27, n, 100 * busy / span);
        memset(c.cov, 0, sizeof *c.cov * (MAX_BANDS + 1) * SK_COUNT * PLOT_W);
        for (size_t k = 0; k < t->n; k++)
            slice(&c, &t->s[k], row_y);
        for (int b = 0; b <= c.bands; b++)
            flush_cover(&c, b, row_y);
        fputs("</g>\n", o);
        row_y += row_h;
        r++;
    }

    /* The legend: the kinds in two columns, then how to read depth. */
    fprintf(o, "<g class=\"legend\">\n");
    for (int k = 0; k < SK_COUNT; k++) {
        double x = 12 + (k % 2) * 360, y = legend_y + (k / 2) * 18;
        fprintf(o, "<rect class=\"k%d\" x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"%d\"/>"
                   "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                k, x, y, k < SK_SLEEP ? 10 : MARK_H + 2, x + 20, y + 10, meaning[k]);
    }
    fprintf(o, "<text x=\"732\" y=\"%.0f\" fill=\"#333333\">nesting: a task nested in "
               "another is drawn</text>\n"
               "<text x=\"732\" y=\"%.0f\" fill=\"#333333\">one band lower (depths from %d on "
               "share the last);</text>\n"
               "<text x=\"732\" y=\"%.0f\" fill=\"#333333\">faded: tasks narrower than a pixel, "
               "by coverage</text>\n</g>\n",
            legend_y + 10, legend_y + 28, MAX_BANDS - 1, legend_y + 46);
    fputs("</svg>\n", o);
    free(c.cov);
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
