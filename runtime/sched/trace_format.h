/*
 * trace_format.h - the one definition of libsf's trace format, shared by the
 * runtime that writes traces (runtime/sched/trace.c) and the tool that reads them
 * (tools/sftrace). docs/trace-format.md describes the same table; sftrace
 * --events prints it from here and tools/sftrace/test.sh compares the two.
 *
 * Freestanding: no runtime type, no libc beyond <stddef.h>, so a tool can
 * include it without linking libsf.
 *
 * A trace is a header line, SF_TRACE_HEADER, then one line per event:
 *
 *     Thread <TAB> Queue <TAB> Asleep <TAB> Time <TAB> Event [<TAB> arg]...
 *
 * Thread, Queue and Asleep are non-negative decimal integers (Thread 131071
 * only on a Set line: a promise completed outside libsf's calls); Time is
 * milliseconds since the runtime started with exactly three decimals.
 *
 * SF_TRACE_EVENTS(X) lists every event as
 *     X(ID, "name", "argument spec", "meaning")
 * The argument spec is a space-separated list of argument kinds, one per
 * tab-separated column after the event name:
 *     task      a task name T.N (T the queuing thread's id, N its sf_do count)
 *     thread    a thread id
 *     count     a non-negative decimal integer
 *     how       one of the names of SF_TRACE_HOWS
 *     key=count the literal "key=" followed by a count
 * An event with the empty spec has no argument column.
 */
#ifndef SF_TRACE_FORMAT_H
#define SF_TRACE_FORMAT_H

#include <stddef.h>

#define SF_TRACE_HEADER "Thread\tQueue\tAsleep\tTime\tMessage..."

/* The columns before the event name. */
#define SF_TRACE_FIXED_COLUMNS 4

#define SF_TRACE_EVENTS(X)                                                                 \
    X(INIT, "Init", "threads=count workers=count", "the runtime started")                 \
    X(DO, "Do", "task",                                                                    \
      "`sf_do` queued a task, or `sf_do_after` made a continuation (numbered as a "         \
      "promise is, from 2^38 + 2^37 (412316860416) up)")                                   \
    X(GSTART, "GStart", "task", "an `sf_get` on task began and the task was not done")    \
    X(GET, "Get", "task", "an `sf_get` found the task already done")                      \
    X(SUBMIT, "Submit All", "count",                                                       \
      "a get submitted the n tasks this thread queued since its previous get (an idle "    \
      "pool worker may now take them); a get with nothing new to submit writes no such "   \
      "line")                                                                              \
    X(TAKE, "Take", "task thread",                                                         \
      "an idle pool worker took a submitted task from a thread's queue")                  \
    X(STEAL, "Steal", "task thread",                                                       \
      "a blocked get took a pending task to run while it waits (on a fiber it parked on, "  \
      "which goes on helping)")                                                           \
    X(FSTART, "FStart", "task how", "a task starts running on this thread")               \
    X(FDONE, "FDone", "task", "the task finished on this thread")                         \
    X(NON_PENDING, "Non Pending", "task", "a get waiting on task found nothing to run")   \
    X(SLEEP, "Sleep", "task", "that get went to sleep")                                   \
    X(WAKE, "Wake", "task", "it woke up")                                                 \
    X(NAP, "Nap", "",                                                                      \
      "a wait that sleeps on no one task went to sleep: `sf_wait_any`, `sf_batch_wait`, "  \
      "a wait for this thread's parked fibers, or for a thread that runs a get on a "      \
      "fresh stack")                                                                       \
    X(NAP_END, "Nap End", "", "that wait woke up")                                        \
    X(GDONE, "GDone", "task", "the get that logged `GStart` returns")                     \
    X(DISCARD, "Discard", "task",                                                          \
      "the task never runs: its future was released or cancelled before it started (by "    \
      "`sf_cancel` of it, or of a task above it), or `sf_shutdown_timeout` discarded it "    \
      "past its deadline")                                                                 \
    X(IDLE, "Idle", "", "a pool worker found no submitted task and sleeps")               \
    X(PARK, "Park", "task",                                                                \
      "a get waiting on task parks the fiber it runs on (its stack stays where it is); "   \
      "another fiber of this thread runs next")                                           \
    X(FIBER, "Fiber", "count",                                                             \
      "this thread runs its fiber N from the next line on (0: its own stack; 1 and up: "   \
      "fibers its waits parked work on)")                                                 \
    X(TIMEOUT, "Timeout", "task",                                                          \
      "a timed wait (`sf_wait_for`, `sf_wait_any`: its first future) gave up on task, not "  \
      "done, at its deadline; it ends the get that logged `GStart` (if any), and the task "  \
      "goes on")                                                                           \
    X(BATCH_TIMEOUT, "Batch Timeout", "",                                                  \
      "`sf_batch_wait_for` gave up at its deadline, a task of its batch not done; the "     \
      "tasks go on")                                                                       \
    X(PROMISE, "Promise", "task",                                                         \
      "`sf_promise` made a promise, a future with no task, named as this thread's tasks "  \
      "are but numbered from 2^38 (274877906944) up")                                     \
    X(SET, "Set", "task count",                                                            \
      "the promise was completed: set (0), failed (its code) or cancelled (ECANCELED's "   \
      "code); Thread 131071 is a thread outside libsf's calls (a plain thread, an audio "  \
      "callback)")                                                                         \
    X(SHUTDOWN, "Shutdown", "drained=count", "`sf_shutdown` ran N still-pending tasks, then stopped")

/*
 * SF_TRACE_HOWS(X): how a task came to run, the `how` argument of FStart.
 *     X(ID, "name", "meaning")
 */
#define SF_TRACE_HOWS(X)                                                                   \
    X(INLINE, "inline", "run by a get of its own future")                                 \
    X(POOL, "pool", "taken by an idle pool worker")                                       \
    X(STEAL, "steal", "run by a blocked get, helping, on a fiber it parked on")           \
    X(DRAIN, "drain", "run by `sf_shutdown`")                                             \
    X(WAIT, "wait", "run by `sf_batch_wait`, helping its batch")

/*
 * The one parser of the argument specs above, shared by the runtime that
 * writes traces (runtime/sched/trace.c) and sftrace that reads them: both take an
 * event's columns from the same parse, so they cannot read a spec
 * differently. Static inline and without libc, like the rest of this
 * header.
 */

/* The argument kinds of the top comment. */
enum sf__trace_kind {
    SF__TK_TASK,   /* task */
    SF__TK_THREAD, /* thread */
    SF__TK_COUNT,  /* count */
    SF__TK_HOW,    /* how */
    SF__TK_KEY,    /* key=count */
};

/* The most arguments an event has; a spec with more is refused. */
#define SF__TRACE_MAX_ARGS 2
/* Room for a key with its '=' and the NUL ("threads=", "drained="). */
#define SF__TRACE_KEY_SIZE 16

struct sf__trace_args {
    int n;
    enum sf__trace_kind kind[SF__TRACE_MAX_ARGS];
    char key[SF__TRACE_MAX_ARGS][SF__TRACE_KEY_SIZE]; /* SF__TK_KEY: "threads=" */
};

/* Whether the n bytes at p are the word w. */
static inline int sf__trace_word_is(const char *p, size_t n, const char *w)
{
    size_t i = 0;
    while (i < n && w[i] != '\0' && p[i] == w[i])
        i++;
    return i == n && w[i] == '\0';
}

/*
 * Parses spec, a space-separated list of argument kinds, into *out.
 * Returns 0, or -1 when a word is no kind, a key is empty or too long, or
 * there are more than SF__TRACE_MAX_ARGS words: a bug in this header, which
 * each caller stops on.
 */
static inline int sf__trace_parse_spec(const char *spec, struct sf__trace_args *out)
{
    const char *p = spec;
    out->n = 0;
    while (*p != '\0') {
        size_t n = 0;
        while (p[n] != '\0' && p[n] != ' ')
            n++;
        if (n == 0 || out->n == SF__TRACE_MAX_ARGS)
            return -1;
        int i = out->n++;
        size_t eq = 0;
        while (eq < n && p[eq] != '=')
            eq++;
        if (sf__trace_word_is(p, n, "task")) {
            out->kind[i] = SF__TK_TASK;
        } else if (sf__trace_word_is(p, n, "thread")) {
            out->kind[i] = SF__TK_THREAD;
        } else if (sf__trace_word_is(p, n, "count")) {
            out->kind[i] = SF__TK_COUNT;
        } else if (sf__trace_word_is(p, n, "how")) {
            out->kind[i] = SF__TK_HOW;
        } else if (eq > 0 && eq + 1 < SF__TRACE_KEY_SIZE &&
                   sf__trace_word_is(p + eq, n - eq, "=count")) {
            out->kind[i] = SF__TK_KEY;
            for (size_t k = 0; k <= eq; k++)
                out->key[i][k] = p[k];
            out->key[i][eq + 1] = '\0';
        } else {
            return -1;
        }
        p += n + (p[n] == ' ');
    }
    return 0;
}

#endif /* SF_TRACE_FORMAT_H */
