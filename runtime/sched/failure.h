/*
 * failure.h - what sf_fail leaves behind until its task completes,
 * and the report of failures nobody saw (the unhandled-failure hook).
 *
 * A failure lives in the future itself: FAILED (and SEEN) in its state word,
 * the code in f->region (no longer needed once the task runs), the message
 * in f->val once the task completes (val names the runner until then,
 * run.h). Until completion the message waits on the runner's list of
 * messages (me->fails), innermost task first: a task's nested tasks complete
 * before it, so its message is at the head when it completes.
 *
 * Scopes. A failure scope other than a task - a parallel loop's (parfor.c)
 * - is a struct sf__scope: what its bodies' sf_fail() calls report fails
 * the scope, not the task a body happens to run in. A thread keeps a stack
 * of frames (me->scope, innermost first, each in the frame of the code that
 * pushed it), one pushed around the bodies it runs for a scope. A frame
 * names the task that ran on the thread when it was pushed (me->cur, NULL at
 * the outermost level), and a sf_fail() goes to the innermost frame's scope
 * only while that task is me->cur again: a task that a body runs (its own
 * get, or one it helps with) is me->cur instead while it runs, and fails
 * itself, as everywhere. Frames nest with the calls that push them: while
 * a frame is innermost, me->cur is its task or a task nested in it, never
 * an enclosing one that an outer frame names - the innermost frame decides.
 */
#ifndef SF_FAILURE_H
#define SF_FAILURE_H

#include "sched/trace.h"

#include <stdarg.h>

struct sf__failure {
    sf_future *f;
    char *msg;
    struct sf__failure *next;
};

/* The bytes kept of a failure's message (sf_fail, sf_promise_fail), the NUL
 * included. */
#define SF__MESSAGE_MAX 1024

/*
 * A failure's message: fmt formatted with ap into a malloc'd string of at
 * most SF__MESSAGE_MAX bytes, or NULL for fmt NULL. Without memory it
 * returns NULL and sets *lost (the failure stands without a message).
 */
char *sf__failure_format(const char *fmt, va_list ap, bool *lost);

/*
 * A scope's failure. The first failure stands: code goes 0 -> code once,
 * by CAS, and its winner alone then writes msg. The scope's owner reads
 * both once no body can run any more (parfor.c: after it got every
 * participant's future, whose completion orders the bodies' writes before
 * its read). stop is set with the code: bodies not yet started are skipped.
 */
struct sf__scope {
    _Atomic int code;  /* 0: not failed */
    _Atomic bool stop; /* a hint: read before each grain (relaxed) */
    bool light;        /* a light run's (light.h): sf_cancelled() reads stop */
    char *msg;         /* the first failure's message (malloc'd), or NULL */
};

/* A thread's entry on its stack of scopes; lives in the pusher's frame. */
struct sf__scope_frame {
    struct sf__scope *scope;
    sf_future *task; /* me->cur at the push: only its own sf_fail goes to scope */
    struct sf__scope_frame *outer;
};

static inline void sf__scope_init(struct sf__scope *s)
{
    atomic_init(&s->code, 0);
    atomic_init(&s->stop, false);
    s->light = false;
    s->msg = NULL;
}

/* Owner: runs what follows for scope s until the matching pop. */
static inline void sf__scope_push(struct sf__thread *me, struct sf__scope_frame *fr,
                                  struct sf__scope *s)
{
    fr->scope = s;
    fr->task = sf__sched(me)->cur;
    fr->outer = sf__sched(me)->scope;
    sf__sched(me)->scope = fr;
}

static inline void sf__scope_pop(struct sf__thread *me, struct sf__scope_frame *fr)
{
    SF__ASSERT(sf__sched(me)->scope == fr, "scope frames pop in the order they were pushed");
    sf__sched(me)->scope = fr->outer;
}

/* Owner: the scope a sf_fail() here reports to, or NULL: the task me->cur. */
static inline struct sf__scope *sf__scope_here(const struct sf__thread *me)
{
    const struct sf__scope_frame *fr = sf__sched(me)->scope;
    return fr != NULL && fr->task == sf__sched(me)->cur ? fr->scope : NULL;
}

/* Has scope s failed? A hint (relaxed): a stale false runs a grain more. */
static inline bool sf__scope_stopped(const struct sf__scope *s)
{
    return atomic_load_explicit(&s->stop, memory_order_relaxed);
}

/*
 * sf_fail()'s: fails the scope of this thread's innermost frame if that
 * frame names me->cur (sf__scope_here), else the task me->cur, with code
 * and msg (malloc'd, owned from now on; NULL for none). Returns 0,
 * EALREADY (the scope or task failed already: msg is freed), ENOMEM (no
 * memory to keep msg: the task fails without it) or EINVAL (no scope and
 * no task: msg is freed).
 */
int sf__failure_set(struct sf__thread *me, int code, char *msg);
/* Fails scope s with code and msg (malloc'd, owned from now on; NULL for
 * none) as a body's sf_fail() would: 0, or EALREADY (it failed already:
 * msg is freed). */
int sf__scope_fail(struct sf__scope *s, int code, char *msg);
/*
 * The task me->cur alone, whatever scope is here: marks it failed with code
 * and msg, as sf__failure_set. SEEN too when `seen` (a cancellation the task
 * saw: its canceller knows; sf_cancelled() asks about the task, so the task
 * is what ends cancelled).
 */
int sf__failure_set_task(struct sf__thread *me, int code, char *msg, bool seen);
/* At f's completion on me: its message, taken off the list, or NULL. */
char *sf__failure_take_message(struct sf__thread *me, sf_future *f);
/* Reports a failure nobody saw through the hook (default: a stderr line
 * naming fn as the trace names it, sf__trace_fn_name). The hook is the program's code and may call libsf, but not
 * sf_shutdown (lifecycle.c refuses it: the report runs inside a call). */
void sf__failure_report(int code, const char *msg, void *(*fn)(void *));
/* Is this thread running an unhandled-failure hook? */
bool sf__failure_in_hook(void);
void sf__failure_set_hook(void (*hook)(int, const char *, void *), void *ctx);

#endif /* SF_FAILURE_H */
