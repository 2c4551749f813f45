/*
 * on_idle.c - sf_on_idle(), the idle hook's entry point (sched/idle_hook.h
 * has its callers, its lock and its invariants).
 */
#include "sched/idle_hook.h"

#include <errno.h>

/* Needs no runtime: the hook is the process's, read by whichever runtime
 * runs (sf.h). */
SF_EXPORT int sf_on_idle(sf_idle_fn poll, void *ctx)
{
    int e = sf__idle_hook_set(poll, ctx);
    if (e != 0) {
        errno = e;
        return -1;
    }
    return 0;
}
