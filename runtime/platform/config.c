/*
 * config.c - the configuration: sf_config fields, then the environment, then
 * the defaults, each validated once at start.
 *
 * A bad sf_config field is API misuse: sf_init() fails with EINVAL. A bad
 * environment value is a user's typo: one line on stderr naming the variable,
 * the value and what is used instead, and the runtime starts anyway.
 */
#include "platform/config.h"
#include "platform/platform.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define DEFAULT_STACK ((size_t)8 << 20)
#define MIN_STACK ((size_t)64 << 10)

static int usable_cpus(void)
{
    int n = sf__usable_cpus();
    return n > SF_MAX_THREADS ? SF_MAX_THREADS : n;
}

/* A count from the environment: decimal digits only - no sign, no space
 * anywhere, not empty - from 1 to max; -1 for anything else, which the
 * caller reports. strtol alone would take leading space and a sign. */
static long env_count(const char *v, long max)
{
    long n = 0;
    if (*v == '\0')
        return -1;
    for (const char *p = v; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        n = n * 10 + (*p - '0');
        if (n > max)
            return -1; /* also keeps n far from overflowing */
    }
    return n >= 1 ? n : -1;
}

static int env_threads(void)
{
    int def = usable_cpus();
    const char *v = getenv("SF_THREADS");
    if (v == NULL)
        return def;
    long n = env_count(v, SF_MAX_THREADS);
    if (n < 0) {
        fprintf(stderr,
                "libsf: SF_THREADS='%s' is not a whole number from 1 to %d; using %d (the "
                "CPUs this process may run on)\n",
                v, SF_MAX_THREADS, def);
        return def;
    }
    return (int)n;
}

/* A boolean variable: 1/true/yes/on or 0/false/no/off, any case; unset is
 * off. `extra` (or NULL) is one more word accepted, returned as `extra_val`.
 * Anything else is reported, naming the variable, and means off (`off_means`
 * completes the message: what stays off). */
static int env_word(const char *name, const char *extra, int on_val, int extra_val,
                    const char *off_means)
{
    const char *v = getenv(name);
    if (v == NULL)
        return 0;
    if (extra != NULL && strcasecmp(v, extra) == 0)
        return extra_val;
    static const char *const on[] = {"1", "true", "yes", "on"};
    static const char *const off[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        if (strcasecmp(v, on[i]) == 0)
            return on_val;
        if (strcasecmp(v, off[i]) == 0)
            return 0;
    }
    fprintf(stderr, "libsf: %s='%s' is not one of 1/0/true/false/yes/no/on/off%s%s; %s\n", name,
            v, extra != NULL ? "/" : "", extra != NULL ? extra : "", off_means);
    return 0;
}

/* 0 (off), SF_TRACE_ON or SF_TRACE_CHROME. */
static int env_trace(void)
{
    return env_word("SF_TRACE", "chrome", SF_TRACE_ON, SF_TRACE_CHROME, "tracing stays off");
}

static bool env_stats(void)
{
    return env_word("SF_STATS", NULL, 1, 0, "statistics stay off") != 0;
}

/* SF_HANG_REPORT: seconds, a finite number, 0 or more (0: off), written
 * as strtod reads it but with nothing before or after it (no sign, no
 * space). Unset: HANG_DEFAULT_S in the debug build, off otherwise. */
#ifdef SF_DEBUG
#define HANG_DEFAULT_S 10.0
#else
#define HANG_DEFAULT_S 0.0
#endif
static double env_hang(void)
{
    const char *v = getenv("SF_HANG_REPORT");
    if (v == NULL)
        return HANG_DEFAULT_S;
    char *end;
    errno = 0;
    double s = strtod(v, &end);
    bool plain = (*v >= '0' && *v <= '9') || *v == '.';
    if (!plain || *end != '\0' || errno != 0 || !(s >= 0) || s > 1e9) {
        fprintf(stderr,
                "libsf: SF_HANG_REPORT='%s' is not a number of seconds from 0 (off) to 1e9; "
                "using %g%s\n",
                v, HANG_DEFAULT_S, HANG_DEFAULT_S == 0 ? " (off)" : "");
        return HANG_DEFAULT_S;
    }
    return s;
}

int sf__config_resolve(const sf_config *cfg, struct sf__cfg *out)
{
    static const sf_config zero;
    if (cfg == NULL)
        cfg = &zero;
    if (cfg->threads < 0 || cfg->threads > SF_MAX_THREADS ||
        cfg->trace < SF_TRACE_FROM_ENV || cfg->trace > SF_TRACE_CHROME ||
        (cfg->stack_size != 0 && cfg->stack_size < MIN_STACK) ||
        cfg->stats < SF_STATS_FROM_ENV || cfg->stats > SF_STATS_OFF) {
        errno = EINVAL;
        return -1;
    }
    out->threads = cfg->threads != 0 ? cfg->threads : env_threads();
    out->trace = cfg->trace == SF_TRACE_FROM_ENV ? env_trace()
                 : cfg->trace == SF_TRACE_OFF        ? 0
                                                     : cfg->trace;
    out->stats = cfg->stats == SF_STATS_ON || (cfg->stats == SF_STATS_FROM_ENV && env_stats());
    out->hang_s = env_hang();
    out->stack_size = cfg->stack_size != 0 ? cfg->stack_size : DEFAULT_STACK;
    out->on_thread_start = cfg->on_thread_start; /* no variable: sf_init() alone sets it */
    out->ctx = cfg->ctx;
    out->trace_file = NULL;
    out->trace_file_from_env = false;
    const char *path = cfg->trace_file;
    if (path == NULL && (path = getenv("SF_TRACE_FILE")) != NULL)
        out->trace_file_from_env = true;
    if (out->trace && path != NULL && (out->trace_file = strdup(path)) == NULL) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}
