/*
 * config.h - the runtime's configuration, resolved once at start
 * from an sf_config, then the environment, then the defaults (config.c).
 */
#ifndef SF_CONFIG_H
#define SF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "sf.h"

struct sf__cfg {
    int threads;               /* threads that run tasks at once; pool = threads - 1 */
    int trace;                 /* 0: off, SF_TRACE_ON (text) or SF_TRACE_CHROME */
    char *trace_file;          /* malloc'd; NULL: stderr */
    bool trace_file_from_env;  /* a bad one is reported, not an error */
    size_t stack_size;         /* of each pool worker */
    bool stats;                /* print the statistics table at shutdown (stats.c) */
    double hang_s;             /* SF_HANG_REPORT: report a stall this long (hang.c); 0 off */
    void (*on_thread_start)(int index, void *ctx); /* sf_config's, or NULL (pool.c) */
    void *ctx;                 /* its argument */
};

/* Fills *out from cfg (NULL: all from the environment). Returns 0, or -1 with
 * errno EINVAL (a cfg field out of range) or ENOMEM. A bad environment value
 * is reported on stderr and replaced by its default, never an error. */
int sf__config_resolve(const sf_config *cfg, struct sf__cfg *out);

#endif /* SF_CONFIG_H */
