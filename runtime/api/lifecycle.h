/*
 * lifecycle.h - the runtime's life (start, stop) and the calling
 * thread's way in, which starts the runtime when it is not running.
 */
#ifndef SF_LIFECYCLE_H
#define SF_LIFECYCLE_H

#include <errno.h>

#include "sched/park.h"

/* DOWN -> UP (sf_init, implicit start) -> STOPPING (sf_shutdown's drain and
 * join, no lock held) -> DOWN. */
enum sf__life { SF__DOWN = 0, SF__UP = 1, SF__STOPPING = 2 };

/* What the entry points keep per thread, in the struct's `upper` after the
 * scheduler's part (registry.h, thread.h). Owner only. */
struct sf__entry {
    /* The message of the last task in caller storage whose get failed here,
     * or of the last loop that failed here (task.c, parfor.c): freed at the
     * next such failure, at the thread's exit, or at shutdown. */
    char *task_msg;
};
/* The bytes every struct's `upper` holds: the scheduler's part, then ours. */
#define SF__UPPER_BYTES (SF__SCHED_BYTES + sizeof(struct sf__entry))

/* t's entry-point part. */
static inline struct sf__entry *sf__entry(struct sf__thread *t)
{
    return (struct sf__entry *)(void *)(t->upper + SF__SCHED_BYTES);
}

struct sf__thread *sf__enter_slow(void);

/*
 * The shutdown's watch of promises nobody can set (promise.c, "Promises
 * nobody can set"). While sf_shutdown runs the pending work, joins the pool
 * and waits for calls in flight, a thread of its own (lifecycle.c, "The
 * watch") calls sweep(&st, stopper, deadline_ns, false) every few
 * milliseconds - stopper: the stopping thread's struct (NULL: it has none);
 * deadline_ns: sf_shutdown_timeout's, 0 none; st: the sweep's own state,
 * NULL at first - and once sweep(&st, NULL, 0, true) at the end, which
 * frees it. promise.c hands its sweep over at its first promise (a slot
 * within layer 5: lifecycle.c cannot call promise.c, which calls it), so a
 * program that never made a promise never starts the watch.
 */
void sf__lifecycle_sweeper(void (*sweep)(void **st, const struct sf__thread *stopper,
                                         uint64_t deadline_ns, bool last));

/*
 * Inside a call (registry.h, Calls in flight): the calling thread's struct,
 * registering the thread and starting the runtime from the environment
 * first if needed. NULL with errno EAGAIN (the implicit start failed, or
 * SF__MAX_THREADS_REGISTERED threads are registered) or ENOMEM.
 */
static inline struct sf__thread *sf__enter(void)
{
    struct sf__thread *me = sf__thread_self();
    if (SF__LIKELY(me != NULL))
        return me;
    return sf__enter_slow();
}

/* An outermost call ends: no fiber of this thread stays parked once it has
 * left libsf (park.c), so it drains them first; then the call ends
 * (registry.h). The region its waits confined the thread to holds until
 * the drain is over: a fiber it resumes helps within it too (get.c, Plain
 * code's waits). Keeps errno. */
static inline void sf__outermost_end(void)
{
    struct sf__thread *me = sf__thread_self();
    if (me != NULL) {
        if (SF__UNLIKELY(sf__park_any(me))) {
            int e = errno;
            sf__park_drain(me);
            errno = e;
        }
        sf__sched(me)->outer_help = 0;
    }
    sf__call_end();
}

/*
 * The way into every entry point that may be called from outside libsf:
 * outside any call, runs `call` - the entry point again, with the same
 * arguments - as an outermost call (begun, so that a shutdown waits for
 * it, and ended after) and returns its value from the enclosing function;
 * inside a call, does nothing. `what` names the entry point.
 */
#define SF__OUTERMOST(what, type, call)                                           \
    do {                                                                           \
        if (SF__UNLIKELY(!sf__call_inside())) {                                    \
            sf__call_begin(what);                                                  \
            type sf__r_ = (call);                                                  \
            sf__outermost_end();                                                   \
            return sf__r_;                                                         \
        }                                                                          \
    } while (0)
/* The same for an entry point that returns nothing. */
#define SF__OUTERMOST_VOID(what, call)                                            \
    do {                                                                           \
        if (SF__UNLIKELY(!sf__call_inside())) {                                    \
            sf__call_begin(what);                                                  \
            (call);                                                                \
            sf__outermost_end();                                                   \
            return;                                                                \
        }                                                                          \
    } while (0)

#endif /* SF_LIFECYCLE_H */
