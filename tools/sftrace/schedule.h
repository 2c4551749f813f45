/*
 * schedule.h - sftrace's picture of a schedule, whatever format it came
 * from: per thread, the task slices (with their kind, fiber and nesting
 * depth), the sleeps of its gets and waits, the idle spells of a pool
 * worker, the spans a fiber spent parked with tasks open on it, and the
 * park, resume, promise-set and timeout instants; and the promises set
 * from outside libsf, at no thread. The text trace (sftrace.c) and the Chrome JSON trace
 * (schedule.c, sched_read_json) both fill it; the per-thread summary
 * (sched_summary) and the picture (sched_write_json's lines, drawn by
 * sftrace-plot with matplotlib) read it.
 *
 * Fibers (docs/waiting.md): a thread runs on its own stack, fiber 0, and on
 * up to SCHED_MAX_FIBER fibers its gets parked work on. Tasks nest per
 * fiber - a slice's depth counts the task slices open below it on its own
 * fiber - so slices of one fiber never overlap, while a task parked on one
 * fiber stays open as tasks run on another. Both formats say so: the text
 * trace's Fiber lines switch the stacks, and the JSON trace gives each
 * fiber a track of its own (tid fiber << 17 | thread) whose args.depth is
 * the fiber's.
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
    SK_SLEEP,   /* a get or a wait asleep (not a task; a wait of no one
                 * task - the trace's Nap - has task SCHED_NO_TASK) */
    SK_IDLE,    /* a pool worker idle, from Idle to its next event */
    SK_PARKED,  /* a fiber parked with `depth` task slices open on it, from
                 * the switch away from it to the switch back (not a task;
                 * a fiber parked with no task open has none) */
    SK_COUNT
};

/* The most fibers a thread has besides its own stack (runtime/sched/park.h,
 * SF__FIBERS): fibers are 0 to SCHED_MAX_FIBER. */
#define SCHED_MAX_FIBER 64

/* The highest thread id the model takes (both readers refuse a higher one
 * with an error naming it): the text trace keeps a thread in 16 bits, and a
 * process with more libsf threads alive at once than that is no schedule
 * anyone reads as a table or a picture. Per-thread arrays grow by doubling
 * up to SCHED_MAX_THREAD + 1 entries, a few MiB at most. */
#define SCHED_MAX_THREAD 65535

/* The latest time a trace may have, in microseconds: the text trace's Time
 * tops out at 99999999999.999 ms (about 3 years); the JSON reader refuses
 * a ts outside 0 to this, so that every time, difference and sum of the
 * model is a finite double. */
#define SCHED_MAX_TIME 1e14

extern const char *const sched_kind_name[SK_COUNT];

/* A task T.N as the model keeps it: T above bit 40, N below (a sequence
 * past 2^40 wraps, which only merges two waits of the summary). */
static inline uint64_t sched_task(uint64_t thread, uint64_t seq)
{
    return thread << 40 | (seq & ((UINT64_C(1) << 40) - 1));
}
#define SCHED_TASK_THREAD(key) ((key) >> 40)
#define SCHED_TASK_SEQ(key) ((key) & ((UINT64_C(1) << 40) - 1))
/* The task of a sleep that waits for no one task (the trace's Nap): above
 * every sched_task(). */
#define SCHED_NO_TASK UINT64_MAX

struct sched_slice {
    double t0, t1;
    uint64_t task;  /* the task (kind < SK_SLEEP) or awaited task (SK_SLEEP):
                     * sched_task(), or SCHED_NO_TASK for a sleep of no one
                     * task; 0 for SK_IDLE, SK_PARKED */
    uint32_t depth; /* task slices open below it on its fiber (SK_PARKED:
                     * task slices open on the parked fiber) */
    uint32_t fn;    /* a task slice's function: 1 + its index in sched.fn;
                     * 0: none known (a text trace, an older Chrome one) */
    uint8_t kind;   /* enum sched_kind */
    uint8_t fiber;  /* 0 to SCHED_MAX_FIBER: the fiber it is on */
};

/* An instant of a thread's fibers. */
enum sched_mark_kind {
    SM_PARK,    /* a get parks the fiber it runs on (text Park, JSON park) */
    SM_RESUME,  /* the thread switches to the fiber: a parked one goes on, or
                 * a fresh one starts (text Fiber, JSON resume) */
    SM_SET,     /* a promise completed: set, failed or cancelled (text Set,
                 * JSON set) */
    SM_TIMEOUT, /* a timed wait gave up at its deadline (text Timeout and
                 * Batch Timeout, JSON timeout) */
    SM_COUNT
};

extern const char *const sched_mark_name[SM_COUNT];

struct sched_mark {
    double t;
    uint8_t kind;  /* enum sched_mark_kind */
    uint8_t fiber; /* the fiber that parks, that runs from t on, or that
                    * sets or times out */
};

struct sched_thread {
    char name[32];                /* "main", "worker 1", "thread 3" */
    struct sched_slice *s;        /* in order of their start */
    size_t n, cap;
    struct sched_mark *m;         /* in the thread's order (time order) */
    size_t nm, mcap;
    int seen;
};

struct sched {
    struct sched_thread *thr; /* by thread id */
    size_t nthr;              /* the highest id made + 1 */
    size_t thrcap;            /* entries allocated in thr, all zeroed and named */
    double t_begin, t_end;    /* the first and last event of the trace */
    int have_time;
    uint64_t threads_cfg;     /* Init's threads= (0: no Init) */
    const char *name;         /* the trace's file name, for titles */
    char **fn;                /* the task functions named, each once */
    size_t nfn, fncap;
    struct sched_mark *gm;    /* marks of no thread: promises set from outside
                               * libsf's calls (SM_SET), in the trace's order */
    size_t ngm, gmcap;
};

/* The number of function `name` in s (1 and up: sched_slice.fn), added if
 * it is new. */
uint32_t sched_fn(struct sched *s, const char *name);

/* The thread with id `tid` (0 to SCHED_MAX_THREAD: the readers check),
 * made on first use (name "thread N"). */
struct sched_thread *sched_thread(struct sched *s, size_t tid);
/* Adds a slice on fiber `fiber` (0 to SCHED_MAX_FIBER) of thread tid. */
void sched_add(struct sched *s, size_t tid, unsigned fiber, double t0, double t1,
               enum sched_kind k, uint32_t depth, uint64_t task);
/* Adds an instant of thread tid's; a thread's marks come in its order. */
void sched_mark(struct sched *s, size_t tid, unsigned fiber, double t, enum sched_mark_kind k);
/* Adds an instant of no thread (s->gm). */
void sched_global_mark(struct sched *s, double t, enum sched_mark_kind k);
/* Sorts every thread's slices by start (outer before inner at a tie):
 * slices are added at their end. */
void sched_sort(struct sched *s);
/* Widens [t_begin, t_end] to cover t. */
void sched_time(struct sched *s, double t);

/*
 * Building the model from a trace's events, which come in each thread's
 * order (threads may interleave): sched_b_event for every event of a
 * thread, before what the event does (it ends an idle spell); slices begin
 * and end on a fiber's stack, their depth the task slices open under them
 * there; sched_b_resume switches the thread to a fiber, and a fiber it
 * leaves with tasks open is parked (SK_PARKED) until it switches back.
 * sched_b_finish ends what is still open at the trace's end, sorts the
 * model (sched_sort) and frees the builder.
 */
struct sched_build;
enum { SCHED_END_ANY, SCHED_END_TASK, SCHED_END_SLEEP }; /* what sched_b_end ends */
struct sched_build *sched_b_new(struct sched *s);
void sched_b_event(struct sched_build *b, size_t tid, double t);
/* kind: a task's (< SK_SLEEP), SK_SLEEP, or SK_COUNT for a slice that is
 * not drawn (its end still pairs with it). */
void sched_b_begin(struct sched_build *b, size_t tid, unsigned fiber, double t, int kind,
                   uint64_t task);
/* sched_b_begin of a task slice of function fn (sched_fn; 0: unknown). */
void sched_b_begin_fn(struct sched_build *b, size_t tid, unsigned fiber, double t, int kind,
                      uint64_t task, uint32_t fn);
/* Ends the fiber's innermost open slice if it is `what`; -1 if not (or none
 * is open): nothing ends. */
int sched_b_end(struct sched_build *b, size_t tid, unsigned fiber, double t, int what);
void sched_b_idle(struct sched_build *b, size_t tid, double t);
void sched_b_park(struct sched_build *b, size_t tid, unsigned fiber, double t);
void sched_b_resume(struct sched_build *b, size_t tid, unsigned fiber, double t);
void sched_b_finish(struct sched_build *b);

/*
 * Reads a Chrome JSON trace written by libsf (SF_TRACE=chrome) from buf
 * (len bytes, NUL-terminated) into *s, each event parsed by json-c.
 * Strict JSON, except that the closing "]" may be missing (a process that
 * exited without sf_shutdown). Every number the model takes is checked
 * before it is converted: a tid, ts or args.threads out of its range, or
 * not finite (json-c reads NaN and Infinity), is an error.
 * Returns 0, or -1 after printing "sftrace: NAME: byte N: why" on stderr
 * ("... byte N: event K: FIELD VALUE is not ..." for a bad number).
 */
int sched_read_json(struct sched *s, const char *buf, size_t len);

/* A thread's busy time: the union of its outermost task slices over all its
 * fibers, so that a task parked on one fiber while a helped task runs on
 * another counts once, less its sleeps within it (the thread is asleep
 * there, whatever task is open). */
double sched_busy(const struct sched_thread *t);

/* Frees what the model holds. */
void sched_free(struct sched *s);

/* Per thread: tasks run by kind, busy time and share, sleeps, time asleep,
 * the longest wait, idle time, parks, resumes, promises set and timeouts;
 * then the totals, and the promises set from outside libsf if any. */
void sched_summary(const struct sched *s, FILE *out);

/*
 * The profile by function: per task function, its tasks, total time (the
 * wall time of its slices, a slice nested on its fiber in one of the same
 * function counted once, inside the outer), self time (its slices' time
 * less the task slices nested in them, the time their fiber was parked and
 * their sleeps: time the thread spent awake on that function) and
 * self time's share of the span times the threads; by self time, most
 * first. Tasks of no known function are "(unnamed)".
 */
void sched_profile(const struct sched *s, FILE *out);

/*
 * Writes the model as JSON Lines, each line one object written by json-c:
 *   {"schedule": name, "threads_cfg": N, "t_begin": us, "t_end": us}
 * then per thread seen, in id order,
 *   {"thread": id, "name": "worker 1", "tasks": N, "busy": us}
 * then its slices in start order,
 *   {"thread": id, "kind": "pool", "t0": us, "t1": us, "depth": D, "fiber": F,
 *    "task": "T.N", "fn": "name"}   ("task" on task slices and on sleeps that
 *    wait for one, "fn" on task slices of a known function)
 * then its marks in its order,
 *   {"thread": id, "mark": "park", "resume", "set" or "timeout", "t": us,
 *    "fiber": F}
 * then the marks of no thread, in order,
 *   {"mark": "set", "t": us}
 * Times are microseconds with three decimals. Returns 0, or -1 on a write
 * error.
 */
int sched_write_json(const struct sched *s, FILE *out);

/* The picture's formats, in the order of sched_plot's outs. */
enum { SCHED_PNG, SCHED_SVG, SCHED_PDF, SCHED_FORMATS };

/*
 * Draws the model with the matplotlib script at `plot` (sftrace-plot), which
 * reads sched_write_json's lines on its stdin and writes each format whose
 * outs[] is not NULL to that file. Returns 0, or -1 when the script could
 * not run or failed (it says why on stderr: no matplotlib, say).
 */
int sched_plot(const struct sched *s, const char *plot, const char *const outs[SCHED_FORMATS]);

#endif /* SFTRACE_SCHEDULE_H */
