/*
 * schedule.h - sftrace's picture of a schedule, whatever format it came
 * from: per thread, the task slices (with their kind and nesting depth), the
 * sleeps of its gets and the idle spells of a pool worker. The text trace
 * (sftrace.c) and the Chrome JSON trace (schedule.c, sched_read_json) both
 * fill it; the per-thread summary (sched_summary) and the SVG timeline
 * (svg.c) read it.
 *
 * Times are microseconds since the runtime started, as doubles (the JSON
 * trace has nanosecond fractions; the text trace whole microseconds).
 */
#ifndef SFTRACE_SCHEDULE_H
#define SFTRACE_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a slice is: how its task came to run, or a sleep. */
enum sched_kind {
    SK_INLINE,  /* run by a get of its own future, on the fast path */
    SK_WAIT,    /* run by a get of its own future after it left the fast
                 * path ("wait-inlined"; the text trace says "inline") */
    SK_POOL,    /* taken by an idle pool worker */
    SK_STOLEN,  /* run by a blocked get, helping */
    SK_DRAINED, /* run by sf_shutdown */
    SK_BATCH,   /* run by sf_batch_wait, helping its batch ("batch-wait") */
    SK_SLEEP,   /* a get asleep (not a task) */
    SK_IDLE,    /* a pool worker idle, from Idle to its next event */
    SK_COUNT
};

extern const char *const sched_kind_name[SK_COUNT];

struct sched_slice {
    double t0, t1;
    uint64_t task;  /* the task (kind < SK_SLEEP) or awaited task (SK_SLEEP):
                     * thread << 40 | sequence; 0 for SK_IDLE */
    uint32_t depth; /* task slices open below it on its thread */
    uint8_t kind;   /* enum sched_kind */
};

struct sched_thread {
    char name[32];                /* "main", "worker 1", "thread 3" */
    struct sched_slice *s;        /* in order of their start */
    size_t n, cap;
    int seen;
};

struct sched {
    struct sched_thread *thr; /* by thread id */
    size_t nthr;
    double t_begin, t_end;    /* the first and last event of the trace */
    int have_time;
    uint64_t threads_cfg;     /* Init's threads= (0: no Init) */
    const char *name;         /* the trace's file name, for titles */
};

/* The thread with id `tid`, made on first use (name "thread N"). */
struct sched_thread *sched_thread(struct sched *s, size_t tid);
/* Adds a slice; its start must not precede the thread's previous slice's
 * start. */
void sched_add(struct sched *s, size_t tid, double t0, double t1, enum sched_kind k,
               uint32_t depth, uint64_t task);
/* Sorts every thread's slices by start (outer before inner at a tie):
 * slices are added at their end. */
void sched_sort(struct sched *s);
/* Widens [t_begin, t_end] to cover t. */
void sched_time(struct sched *s, double t);

/*
 * Reads a Chrome JSON trace written by libsf (SF_TRACE=chrome) from buf
 * (len bytes, NUL-terminated) into *s. Strict JSON, except that the
 * closing "]" may be missing (a process that exited without sf_shutdown).
 * Returns 0, or -1 after printing "NAME: byte N: why" on stderr.
 */
int sched_read_json(struct sched *s, const char *buf, size_t len);

/* Frees what the model holds. */
void sched_free(struct sched *s);

/* Per thread: tasks run by kind, busy time and share, sleeps, time asleep,
 * the longest wait, idle time; then the totals. */
void sched_summary(const struct sched *s, FILE *out);

/*
 * Writes the timeline as SVG: one row per thread, time left to right on an
 * axis in ms, task slices coloured by kind with nesting drawn as stacked
 * bands, sleeps and idle spells marked, a legend and a title. At most
 * SVG_MAX_RECTS slice rectangles: slices narrower than a pixel (and any
 * beyond the cap) are drawn as a per-band coverage strip instead.
 * Returns 0, or -1 on a write error.
 */
int sched_svg(const struct sched *s, FILE *out);

/* Renders the SVG to png_path with rsvg-convert (found on PATH). Returns 0,
 * or -1 after one line on stderr (rsvg-convert absent, or it failed). */
int sched_png(const struct sched *s, const char *png_path);

#endif /* SFTRACE_SCHEDULE_H */
