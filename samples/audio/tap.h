/*
 * tap.h - what the audio samples' TAP tests (test_fft.c, test_reverb.c,
 * test_granular.c) share: numbered "ok"/"not ok" lines on stdout, a count of
 * failures for the exit status, and starting libsf at a thread count (a
 * start that fails bails out of the whole test). Each test is one
 * translation unit, so the state is static here.
 */
#ifndef SF_SAMPLES_TAP_H
#define SF_SAMPLES_TAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sf.h"

static int test_no, failures;

static void report(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", ok ? "ok" : "not ok", ++test_no);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (!ok)
        failures++;
}

static void start(int threads)
{
    sf_config cfg = {.threads = threads};
    if (sf_init(&cfg) != 0) {
        printf("Bail out! sf_init(threads=%d): %s\n", threads, strerror(errno));
        exit(1);
    }
}

#endif /* SF_SAMPLES_TAP_H */
