/*
 * stats.h - the runtime's statistics, summed from the per-thread
 * counters (thread.h) on read: sf_stats totals, per-thread rows, and the
 * table SF_STATS prints at shutdown. The public entry points, which check
 * that a runtime runs, are lifecycle.c's.
 */
#ifndef SF_STATS_H
#define SF_STATS_H

#include "sf.h"

/* Fills every counter of *out but `threads` (lifecycle.c knows it). */
void sf__stats_sum(sf_stats *out);
/* sf_stats_read_threads without the checks: fills rows[0 .. min(n, max)),
 * returns n. */
int sf__stats_rows(sf_thread_stats *rows, int max);
/* Writes the table (sf.h, sf_stats_read_threads) to stderr in one write.
 * Call with every thread quiet (sf_shutdown: after the workers' join). */
void sf__stats_print(int threads);

#endif /* SF_STATS_H */
