/*
 * mandelbrot.c - the Mandelbrot set, one row per index of sf_for.
 *
 * The classic skewed loop: rows through the set cost up to `maxiter`
 * iterations a point, rows outside it a few, and the costly rows sit
 * together in the middle of the image. A static split would leave one
 * thread with most of the work; sf_for's thieves take half of what is left
 * of the busiest part, so the work spreads whatever its shape.
 *
 *   samples/mandelbrot [WIDTH [HEIGHT [MAXITER]]] [-o FILE.pgm] [-a]
 *
 * prints the number of points inside the set and a checksum of every
 * point's iteration count (the same at every SF_THREADS: each row is
 * computed by one body call, whoever runs it), the time, and how many
 * threads ran rows; -o writes the image as a PGM, -a draws it in ASCII.
 */
#include <sf.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct image {
    int w, h, maxiter;
    uint16_t *iters; /* w * h iteration counts, row by row */
};

static int escape_time(double cr, double ci, int maxiter)
{
    double zr = 0, zi = 0;
    int k = 0;
    while (k < maxiter && zr * zr + zi * zi <= 4.0) {
        double t = zr * zr - zi * zi + cr;
        zi = 2 * zr * zi + ci;
        zr = t;
        k++;
    }
    return k;
}

/* Which threads ran rows: a small table, for the summary line. */
#define MAX_SEEN 64
static pthread_t seen[MAX_SEEN];
static int nseen;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_thread(void)
{
    static _Thread_local int noted;
    if (noted)
        return;
    noted = 1;
    pthread_mutex_lock(&seen_lock);
    if (nseen < MAX_SEEN)
        seen[nseen++] = pthread_self();
    pthread_mutex_unlock(&seen_lock);
}

static void row(long y, void *ctx)
{
    struct image *im = ctx;
    note_thread();
    double ci = -1.25 + 2.5 * (double)y / im->h;
    for (int x = 0; x < im->w; x++) {
        double cr = -2.0 + 2.75 * (double)x / im->w;
        im->iters[(size_t)y * (size_t)im->w + (size_t)x] = (uint16_t)escape_time(cr, ci, im->maxiter);
    }
}

static int parse(const char *s, int lo, int hi, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "mandelbrot: %s '%s' is not a number from %d to %d\n", what, s, lo, hi);
        exit(64);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    struct image im = {640, 480, 2000, NULL};
    const char *pgm = NULL;
    int ascii = 0, pos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            pgm = argv[++i];
        } else if (strcmp(argv[i], "-a") == 0) {
            ascii = 1;
        } else if (pos == 0) {
            im.w = parse(argv[i], 1, 65536, "WIDTH"), pos++;
        } else if (pos == 1) {
            im.h = parse(argv[i], 1, 65536, "HEIGHT"), pos++;
        } else if (pos == 2) {
            im.maxiter = parse(argv[i], 1, 65535, "MAXITER"), pos++;
        } else {
            fprintf(stderr, "usage: mandelbrot [WIDTH [HEIGHT [MAXITER]]] [-o FILE.pgm] [-a]\n");
            return 64;
        }
    }
    im.iters = malloc((size_t)im.w * (size_t)im.h * sizeof im.iters[0]);
    if (im.iters == NULL) {
        fprintf(stderr, "mandelbrot: no memory for a %dx%d image\n", im.w, im.h);
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (sf_for(0, im.h, row, &im) != 0) {
        fprintf(stderr, "mandelbrot: sf_for: %s\n", strerror(errno));
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    sf_stats st;
    int threads = sf_stats_read(&st) == 0 ? st.threads : 0;
    sf_shutdown();

    uint64_t sum = 0, inside = 0;
    for (size_t i = 0; i < (size_t)im.w * (size_t)im.h; i++) {
        sum = sum * 1000003u + im.iters[i];
        inside += im.iters[i] == im.maxiter;
    }
    printf("mandelbrot %dx%d maxiter %d: %llu points inside, checksum %016llx\n", im.w, im.h,
           im.maxiter, (unsigned long long)inside, (unsigned long long)sum);
    fprintf(stderr, "%.3f s at SF_THREADS=%d; rows ran on %d thread%s\n",
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, threads,
            nseen, nseen == 1 ? "" : "s");
    if (ascii) {
        static const char shade[] = " .:-=+*#%@";
        int sy = im.h / 24 > 0 ? im.h / 24 : 1, sx = im.w / 72 > 0 ? im.w / 72 : 1;
        for (int y = 0; y < im.h; y += sy) {
            for (int x = 0; x < im.w; x += sx) {
                int k = im.iters[(size_t)y * (size_t)im.w + (size_t)x];
                putchar(k == im.maxiter ? '@' : shade[(k * 9) / im.maxiter]);
            }
            putchar('\n');
        }
    }
    if (pgm != NULL) {
        FILE *f = fopen(pgm, "wb");
        if (f == NULL) {
            fprintf(stderr, "mandelbrot: %s: %s\n", pgm, strerror(errno));
            return 1;
        }
        fprintf(f, "P5\n%d %d\n255\n", im.w, im.h);
        for (size_t i = 0; i < (size_t)im.w * (size_t)im.h; i++)
            fputc(im.iters[i] == im.maxiter ? 0 : 255 - (im.iters[i] * 255) / im.maxiter, f);
        if (fclose(f) != 0) {
            fprintf(stderr, "mandelbrot: %s: %s\n", pgm, strerror(errno));
            return 1;
        }
    }
    free(im.iters);
    return 0;
}
