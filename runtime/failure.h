/*
 * failure.h - layer 4: what sf_fail leaves behind until its task completes,
 * and the report of failures nobody saw (the unhandled-failure hook).
 *
 * A failure lives in the future itself: FAILED (and SEEN) in its state word,
 * the code in f->region (no longer needed once the task runs), the message
 * in f->val once the task completes (val names the runner until then,
 * run.h). Until completion the message waits on the runner's list of
 * messages (me->fails), innermost task first: a task's nested tasks complete
 * before it, so its message is at the head when it completes.
 */
#ifndef SF_FAILURE_H
#define SF_FAILURE_H

#include "trace.h"

struct sf__failure {
    sf_future *f;
    char *msg;
    struct sf__failure *next;
};

/*
 * In the task me->cur: marks it failed with code and msg (malloc'd, owned
 * from now on; NULL for none). SEEN too when `seen` (a cancellation the
 * task saw: its canceller knows). Returns 0, EALREADY (it failed already:
 * msg is freed) or ENOMEM (no memory to keep msg: the task fails without
 * it).
 */
int sf__failure_set(struct sf__thread *me, int code, char *msg, bool seen);
/* At f's completion on me: its message, taken off the list, or NULL. */
char *sf__failure_take_message(struct sf__thread *me, sf_future *f);
/* Reports a failure nobody saw through the hook (default: a stderr line
 * naming fn). The hook is the program's code and may call libsf, but not
 * sf_shutdown (lifecycle.c refuses it: the report runs inside a call). */
void sf__failure_report(int code, const char *msg, void *(*fn)(void *));
/* Is this thread running an unhandled-failure hook? */
bool sf__failure_in_hook(void);
void sf__failure_set_hook(void (*hook)(int, const char *, void *), void *ctx);

#endif /* SF_FAILURE_H */
