/*
 * failure.c - failure records and the unhandled-failure hook; see
 * failure.h.
 */
#include "sched/failure.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first failure of scope s stands; a later one is dropped. */
int sf__scope_fail(struct sf__scope *s, int code, char *msg)
{
    int none = 0;
    /* Relaxed: the CAS only has to pick one winner among the bodies (the
     * code's modification order does); what it publishes - the code, and
     * msg written below - reaches the scope's owner through the end of
     * every participant (parfor.c: their futures' completion, acquired by
     * its gets), or is this thread's own. Nothing reads msg before that. */
    if (!atomic_compare_exchange_strong_explicit(&s->code, &none, code, memory_order_relaxed,
                                                 memory_order_relaxed)) {
        free(msg);
        return EALREADY;
    }
    s->msg = msg; /* the winner's alone */
    /* Relaxed: a hint for the participants' next grain (sf__scope_stopped);
     * one that reads it late runs an index or two more, no more wrong. */
    atomic_store_explicit(&s->stop, true, memory_order_relaxed);
    return 0;
}

int sf__failure_set(struct sf__thread *me, int code, char *msg)
{
    struct sf__scope *s = sf__scope_here(me);
    if (s != NULL)
        return sf__scope_fail(s, code, msg);
    if (sf__sched(me)->cur == NULL) {
        free(msg);
        return EINVAL;
    }
    return sf__failure_set_task(me, code, msg, false);
}

int sf__failure_set_task(struct sf__thread *me, int code, char *msg, bool seen)
{
    sf_future *f = sf__sched(me)->cur;
    /* Relaxed: FAILED is ours alone to set; the CAS below decides against
     * the CANCEL and ORPHAN bits other threads may add meanwhile. */
    uint64_t s = atomic_load_explicit(&f->state, memory_order_relaxed);
    do {
        if (s & SF__FAILED) {
            free(msg);
            return EALREADY;
        }
    } while (!atomic_compare_exchange_weak_explicit(
        &f->state, &s, s | SF__FAILED | (seen ? SF__SEEN : 0), memory_order_relaxed,
        memory_order_relaxed));
    /* Relaxed, and so is the CAS above: both reach getters through the
     * completion's release of DONE. A getter that reads region before that
     * sees FAILED and ignores it (get.c, Isolation). */
    atomic_store_explicit(&f->fail_code, (uint32_t)code, memory_order_relaxed);
    if (msg == NULL)
        return 0;
    struct sf__failure *rec = malloc(sizeof *rec);
    if (rec == NULL) {
        free(msg);
        return ENOMEM;
    }
    rec->f = f;
    rec->msg = msg;
    rec->next = sf__sched(me)->fails;
    sf__sched(me)->fails = rec;
    return 0;
}

char *sf__failure_take_message(struct sf__thread *me, sf_future *f)
{
    struct sf__failure *rec = sf__sched(me)->fails;
    if (rec == NULL || rec->f != f)
        return NULL;
    sf__sched(me)->fails = rec->next;
    char *msg = rec->msg;
    free(rec);
    return msg;
}

/* Set once or now and then by sf_on_unhandled, read at every report: a
 * pair read without a lock could mix two settings, so they are one struct
 * behind one pointer. A reporter may still hold an old one, so none is ever
 * freed; all stay on a list (a program sets the hook a few times). */
struct hook {
    void (*fn)(int, const char *, void *);
    void *ctx;
    struct hook *older;
};
static _Atomic(struct hook *) hook;
static struct hook *hooks; /* every hook ever set; under hooks_lock */
static struct sf__lock hooks_lock = SF__LOCK_INITIALIZER(SF__RANK_LEAF, "hooks_lock");

void sf__failure_set_hook(void (*fn)(int, const char *, void *), void *ctx)
{
    struct hook *h = NULL;
    if (fn != NULL) {
        if ((h = malloc(sizeof *h)) == NULL) {
            fprintf(stderr, "libsf: sf_on_unhandled: no memory for the hook; the previous "
                            "one stays\n");
            return;
        }
        h->fn = fn;
        h->ctx = ctx;
        sf__lock(&hooks_lock);
        h->older = hooks;
        hooks = h;
        sf__unlock(&hooks_lock);
    }
    /* Release: a reporter that loads h (acquire) sees its fields. */
    atomic_store_explicit(&hook, h, memory_order_release);
}

/* Hooks running on this thread now (they may report in turn). */
static __thread int in_hook;

bool sf__failure_in_hook(void) { return in_hook != 0; }

void sf__failure_report(int code, const char *msg, void *(*fn)(void *))
{
    struct hook *h = atomic_load_explicit(&hook, memory_order_acquire);
    if (h != NULL) {
        in_hook++;
        h->fn(code, msg, h->ctx);
        in_hook--;
        return;
    }
    /* Named as the trace names a task's slice (trace.c, Names): static
     * functions too, from the module's symbol table. */
    char buf[32];
    const char *name = sf__trace_fn_name((const void *)fn, buf, sizeof buf);
    const char *what = strerrorname_np(code);
    fprintf(stderr, "libsf: unhandled failure of task %s (%s%s%d): %s\n", name,
            what != NULL ? what : "", what != NULL ? ", " : "code ", code,
            msg != NULL ? msg : "(no message)");
}

char *sf__failure_format(const char *fmt, va_list ap, bool *lost)
{
    *lost = false;
    if (fmt == NULL)
        return NULL;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    size_t size = n < 0 ? 1 : (size_t)n + 1 > SF__MESSAGE_MAX ? SF__MESSAGE_MAX : (size_t)n + 1;
    char *msg = malloc(size);
    if (msg != NULL)
        vsnprintf(msg, size, fmt, again);
    else
        *lost = true;
    va_end(again);
    return msg;
}
