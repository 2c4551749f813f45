/*
 * trace.h - SF_TRACE, the schedule trace. Its format is defined once
 * in trace_format.h (shared with tools/sftrace); docs/trace-format.md says
 * the same. SF_TRACE=chrome writes the same events as Chrome Trace Event
 * Format JSON instead (trace.c; docs/trace-format.md). Off, an event costs
 * one predictable branch.
 */
#ifndef SF_TRACE_H
#define SF_TRACE_H

#include "sched/thread.h"
#include "sched/trace_format.h"

enum sf__event {
#define SF__EV_ENUM(id, name, args, meaning) SF__EV_##id,
    SF_TRACE_EVENTS(SF__EV_ENUM)
#undef SF__EV_ENUM
    SF__EV_COUNT
};

/* How a task came to run: the FStart argument, and which counter it bumps. */
enum sf__how {
#define SF__HOW_ENUM(id, name, meaning) SF__HOW_##id,
    SF_TRACE_HOWS(SF__HOW_ENUM)
#undef SF__HOW_ENUM
    SF__HOW_COUNT,
    /* INLINE by a get's slow path (get.c: it submitted, found f still
     * pending, and claimed it): counted and written "inline" in the text
     * trace, "wait-inlined" in the Chrome trace. */
    SF__HOW_WAIT_INLINE = SF__HOW_COUNT
};

/* Tracing is on: set at start before any worker exists, cleared at stop
 * after they are joined, so every thread reads it without ordering. */
extern bool sf__trace_on;

/*
 * Starts tracing to path (NULL: stderr; the file is truncated) in the text
 * format (chrome false) or the Chrome Trace Event Format, and writes the
 * header (text) or the opening of the JSON array (chrome). Time 0 is this call (sf__trace_restart_clock moves it). Returns 0,
 * or -1 with open(2)'s errno.
 */
int sf__trace_open(const char *path, bool chrome);
/* Makes now Time 0.000 (the Init line). */
void sf__trace_restart_clock(void);
/* Flushes every thread's buffer, closes the JSON array of a Chrome trace,
 * and stops tracing. Quiet runtime only. */
void sf__trace_close(void);
/*
 * The process exits with the runtime up (no sf_shutdown; hang.c): writes
 * me's buffered lines (me: the calling thread's struct, or NULL), every
 * thread's but the pool workers' too when `others` (no thread but the
 * workers may be inside libsf: the registry is closed), closes the JSON
 * array of a Chrome trace, and sends every later write to /dev/null, so
 * that the file stays valid whatever the threads still running do.
 * Tracing stays on (other threads read sf__trace_on without ordering).
 */
void sf__trace_at_exit(struct sf__thread *me, bool others);
/* fn's name as a Chrome trace slice names it (trace.c, Names): its symbol,
 * exported or not, else its address written into buf (size bytes). Takes
 * the dynamic linker's lock and a leaf lock of ours: not under any other
 * lock. The name stays valid for the process's life. */
const char *sf__trace_fn_name(const void *fn, char *buf, size_t size);
/* In a child after fork(): stop tracing without writing the parent's
 * buffered lines (the parent writes them). */
void sf__trace_after_fork(void);
/* Writes t's buffered lines. Owner, or anyone once t's thread is quiet. */
void sf__trace_flush(struct sf__thread *t);

/*
 * Logs event ev for thread t (its owner). Arguments by the event's spec in
 * trace_format.h, in order: a task is its state word (any status; the tag
 * names it), a thread an id, a count a number, a how an enum sf__how.
 */
void sf__trace_event(struct sf__thread *t, enum sf__event ev, uint64_t a, uint64_t b);

/*
 * Logs FStart of the task `claimed` (its state word), run by t as `how`:
 * sf__trace_event's FStart, and the Chrome trace names the task's slice by
 * fn, the address of the task's function (trace.c, Names), which tracing
 * never calls.
 */
void sf__trace_start(struct sf__thread *t, uint64_t claimed, enum sf__how how, const void *fn);

/*
 * Logs event ev, as sf__trace_event, for a thread that has no buffer here:
 * one outside libsf's calls (a plain pthread, an audio callback, a thread
 * between two calls), which completes a promise. Its line names no thread
 * (Thread SF__NO_THREAD_ID, 131071) and is written at once with one
 * write(2): no buffer, no allocation, no lock of ours.
 */
void sf__trace_outside(enum sf__event ev, uint64_t a, uint64_t b);

#define SF__TRACE(t, ev, a, b)                                                     \
    do {                                                                       \
        if (SF__UNLIKELY(sf__trace_on))                                        \
            sf__trace_event((t), SF__EV_##ev, (uint64_t)(a), (uint64_t)(b));   \
    } while (0)

/*
 * The sleep of a wait that names no one task (the Nap and Nap End lines):
 * timed into the thread's sleep time (thread.h, Sleep time) and, when
 * tracing, logged, the thread's lines written out first as before a get's
 * sleep (a sleeping thread's lines should be readable). sf__nap_end takes
 * what sf__nap_begin returned.
 */
static inline uint64_t sf__nap_begin(struct sf__thread *me)
{
    if (SF__UNLIKELY(sf__trace_on)) {
        sf__trace_event(me, SF__EV_NAP, 0, 0);
        sf__trace_flush(me);
    }
    return sf__sleep_begin();
}

static inline void sf__nap_end(struct sf__thread *me, uint64_t began)
{
    sf__sleep_end(me, began);
    SF__TRACE(me, NAP_END, 0, 0);
}

#endif /* SF_TRACE_H */
