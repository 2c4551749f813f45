/*
 * args.h - the command-line values the audio samples (reverb, granular,
 * sfpiece) share: a length in seconds and a seed. Each parser accepts the
 * whole string or nothing: 0 with *out set, -1 (and *out untouched) for
 * anything else, which the sample reports as a usage error.
 */
#ifndef SF_SAMPLES_ARGS_H
#define SF_SAMPLES_ARGS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* A duration: 0 < seconds <= max. */
static inline int arg_seconds(const char *s, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > max)
        return -1;
    *out = v;
    return 0;
}

/* A seed: a decimal number that fits 64 bits, no sign. */
static inline int arg_seed(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
        return -1;
    *out = (uint64_t)v;
    return 0;
}

#endif /* SF_SAMPLES_ARGS_H */
