/*
 * promise.h - promises (sf_promise, sf_promise_set,
 * sf_promise_fail): futures with no task, which any thread completes
 * (promise.c). What the other entry points need to tell one.
 */
#ifndef SF_PROMISE_H
#define SF_PROMISE_H

#include "future/future.h"

/* A promise's u.fn: sf_promise itself, never called through this pointer.
 * It marks a future as a promise for as long as it is not FREE, and names
 * it in the unhandled-failure hook's default line ("task sf_promise"). */
#define SF__PROMISE_FN ((void *(*)(void *))(void (*)(void))sf_promise)

/* Is f, whose state is not FREE, a promise? Relaxed: u.fn is written
 * before its state's release store, which the caller's handle came after. */
#define SF__PROMISE_SEQ (UINT64_C(1) << (SF__SEQ_BITS - 1))
static inline bool sf__is_promise(const sf_future *f, uint64_t s)
{
    return (sf__tag_seq(s) & SF__PROMISE_SEQ) && sf__tag_thread(s) != SF__NO_THREAD_ID &&
           __atomic_load_n(&f->u.fn, __ATOMIC_RELAXED) == SF__PROMISE_FN;
}

/* sf_cancel of promise f, read RUNNING as s: returns as sf_cancel. */
int sf__promise_cancel(sf_future *f, uint64_t s);

#endif /* SF_PROMISE_H */
