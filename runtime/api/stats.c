/*
 * stats.c - statistics, read from the counters each thread keeps
 * in its own struct (thread.h, struct sf__sched).
 *
 * Writing costs the task path nothing shared: every counter is written by
 * its owner alone with a plain relaxed store (SF__BUMP, SF__ADD), in the
 * owner's struct, so there is no atomic read-modify-write and no cache
 * line another thread writes. The fork-join path bumps one counter it
 * bumped before these statistics existed (c_inline) and tests one pointer
 * it loads anyway (the running task, me->cur, for busy time:
 * run.h). Reading sums over the registry with relaxed loads: each counter is its owner's latest value
 * some moment ago, so sums are snapshots, exact once every thread is
 * quiet. Nothing here takes a lock: the registry's table only grows while
 * the runtime runs (registry.h), and the caller keeps it from being freed
 * (sf.h: no call races with sf_shutdown).
 */
#include "api/stats.h"
#include "sched/pool.h"
#include "sched/thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Relaxed: statistics (platform.h, SF__BUMP). */
#define LOAD(c) atomic_load_explicit(&(c), memory_order_relaxed)

static void row_of(struct sf__thread *t, sf_thread_stats *r)
{
    memset(r, 0, sizeof *r);
    r->id = t->id;
    /* Relaxed: the registration's store; a struct being adopted reads as
     * either kind, a snapshot like the counters. */
    r->is_worker = __atomic_load_n(&t->is_worker, __ATOMIC_RELAXED);
    r->asleep = LOAD(sf__sched(t)->asleep);
    r->created = LOAD(sf__sched(t)->c_created);
    r->run_inline = LOAD(sf__sched(t)->c_inline);
    r->run_pool = LOAD(sf__sched(t)->c_pool);
    r->run_stolen = LOAD(sf__sched(t)->c_stolen);
    r->run_drained = LOAD(sf__sched(t)->c_drained);
    r->executed = r->run_inline + r->run_pool + r->run_stolen + r->run_drained;
    r->discarded = LOAD(sf__sched(t)->c_discarded);
    r->cancelled = LOAD(sf__sched(t)->c_cancelled);
    r->gets_blocked = LOAD(sf__sched(t)->c_blocked);
    r->steals_tried = LOAD(sf__sched(t)->c_steal_tries);
    r->steals_failed = LOAD(sf__sched(t)->c_steal_fails);
    r->sleeps = LOAD(sf__sched(t)->c_sleeps);
    r->idle_sleeps = LOAD(sf__sched(t)->c_idle_sleeps);
    r->fresh_stacks = LOAD(sf__sched(t)->c_fresh_stacks);
    r->parks = LOAD(sf__sched(t)->c_parks);
    r->resumes = LOAD(sf__sched(t)->c_resumes);
    r->busy_ns = LOAD(sf__sched(t)->c_busy_ns);
    r->avg_task_ns = r->executed != 0 ? r->busy_ns / r->executed : 0;
    r->timeouts = LOAD(sf__sched(t)->c_timeouts);
    r->promises = LOAD(sf__sched(t)->c_promises);
    r->asleep_ns = LOAD(sf__sched(t)->c_asleep_ns);
    r->cpu_ns = sf__thread_cpu_ns(t); /* its clock, if it lives (thread.c) */
}

/* A thread has a row if it is a worker or has done anything at all (its
 * CPU time alone, which any registered thread has, makes none). */
static bool has_row(const sf_thread_stats *r)
{
    return r->is_worker || r->asleep || r->created || r->executed || r->discarded ||
           r->cancelled || r->gets_blocked || r->steals_tried || r->sleeps ||
           r->fresh_stacks || r->parks || r->busy_ns || r->timeouts || r->promises ||
           r->asleep_ns;
}

void sf__stats_sum(sf_stats *out)
{
    memset(out, 0, sizeof *out);
    out->workers = LOAD(sf__pool.workers);
    out->peak_busy = LOAD(sf__pool.peak_busy);
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        struct sf__thread *t = sf__registry_get(i);
        out->created += LOAD(sf__sched(t)->c_created);
        out->run_inline += LOAD(sf__sched(t)->c_inline);
        out->run_pool += LOAD(sf__sched(t)->c_pool);
        out->run_stolen += LOAD(sf__sched(t)->c_stolen);
        out->discarded += LOAD(sf__sched(t)->c_discarded);
        out->cancelled += LOAD(sf__sched(t)->c_cancelled);
        out->gets_blocked += LOAD(sf__sched(t)->c_blocked);
        out->sleeps += LOAD(sf__sched(t)->c_sleeps);
        out->fresh_stacks += LOAD(sf__sched(t)->c_fresh_stacks);
        out->parks += LOAD(sf__sched(t)->c_parks);
        out->resumes += LOAD(sf__sched(t)->c_resumes);
        out->timeouts += LOAD(sf__sched(t)->c_timeouts);
        out->promises += LOAD(sf__sched(t)->c_promises);
    }
    out->queued = sf__threads_queued();
    out->asleep = sf__threads_asleep();
}

int sf__stats_rows(sf_thread_stats *rows, int max)
{
    int k = 0;
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        sf_thread_stats r;
        row_of(sf__registry_get(i), &r);
        if (!has_row(&r))
            continue;
        if (k < max)
            rows[k] = r;
        k++;
    }
    return k;
}

static void print_row(FILE *o, const char *who, const char *kind, const sf_thread_stats *r)
{
    fprintf(o,
            "%6s %-6s %10llu %10llu %10llu %10llu %8llu %10llu %10llu %7llu %8llu %7llu %10.2f "
            "%9llu %10.2f %10.2f %8llu %8llu\n",
            who, kind, (unsigned long long)r->executed, (unsigned long long)r->run_inline,
            (unsigned long long)r->run_pool, (unsigned long long)r->run_stolen,
            (unsigned long long)r->run_drained, (unsigned long long)r->steals_tried,
            (unsigned long long)r->steals_failed, (unsigned long long)r->sleeps,
            (unsigned long long)r->parks, (unsigned long long)r->idle_sleeps,
            (double)r->busy_ns / 1e6, (unsigned long long)r->avg_task_ns,
            (double)r->asleep_ns / 1e6, (double)r->cpu_ns / 1e6,
            (unsigned long long)r->timeouts, (unsigned long long)r->promises);
}

void sf__stats_print(int threads)
{
    int n = sf__stats_rows(NULL, 0);
    sf_thread_stats *rows = calloc(n > 0 ? (size_t)n : 1, sizeof *rows);
    char *text = NULL;
    size_t len = 0;
    FILE *o = rows != NULL ? open_memstream(&text, &len) : NULL;
    if (o == NULL) {
        fprintf(stderr, "libsf: no memory for the statistics table\n");
        free(rows);
        return;
    }
    n = sf__stats_rows(rows, n); /* quiet: the same rows as counted */
    sf_thread_stats tot;
    memset(&tot, 0, sizeof tot);
    for (int i = 0; i < n; i++) {
        tot.created += rows[i].created;
        tot.executed += rows[i].executed;
        tot.run_inline += rows[i].run_inline;
        tot.run_pool += rows[i].run_pool;
        tot.run_stolen += rows[i].run_stolen;
        tot.run_drained += rows[i].run_drained;
        tot.discarded += rows[i].discarded;
        tot.cancelled += rows[i].cancelled;
        tot.steals_tried += rows[i].steals_tried;
        tot.steals_failed += rows[i].steals_failed;
        tot.sleeps += rows[i].sleeps;
        tot.parks += rows[i].parks;
        tot.idle_sleeps += rows[i].idle_sleeps;
        tot.busy_ns += rows[i].busy_ns;
        tot.timeouts += rows[i].timeouts;
        tot.promises += rows[i].promises;
        tot.asleep_ns += rows[i].asleep_ns;
        tot.cpu_ns += rows[i].cpu_ns;
    }
    tot.avg_task_ns = tot.executed != 0 ? tot.busy_ns / tot.executed : 0;
    fprintf(o, "libsf stats: %d thread%s (%d pool worker%s), %llu tasks created, %llu run, "
               "%llu discarded, %llu cancelled\n",
            threads, threads == 1 ? "" : "s", LOAD(sf__pool.workers), LOAD(sf__pool.workers) == 1 ? "" : "s",
            (unsigned long long)tot.created, (unsigned long long)tot.executed,
            (unsigned long long)tot.discarded, (unsigned long long)tot.cancelled);
    fprintf(o, "%6s %-6s %10s %10s %10s %10s %8s %10s %10s %7s %8s %7s %10s %9s %10s %10s %8s "
               "%8s\n",
            "thread", "kind", "executed", "inline", "pool", "stolen", "drained", "steals",
            "failed", "sleeps", "parks", "idle", "busy_ms", "avg_ns", "asleep_ms", "cpu_ms",
            "timeouts", "promises");
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", rows[i].id);
        print_row(o, id, rows[i].is_worker ? "worker" : "thread", &rows[i]);
    }
    print_row(o, "total", "", &tot);
    if (fclose(o) == 0 && text != NULL)
        fwrite(text, 1, len, stderr);
    else
        fprintf(stderr, "libsf: no memory for the statistics table\n");
    free(text);
    free(rows);
}
