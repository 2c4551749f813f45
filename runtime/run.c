/*
 * run.c - layer 4: the out-of-line copy of sf__run (run.h) for the runners
 * that are not a get of the task's own future.
 */
#include "run.h"

void *sf__run_in_region(struct sf__thread *me, sf_future *f, uint32_t region)
{
    uint32_t outer = me->region;
    me->region = region;
    void *r = f->u.fn(f->val);
    me->region = outer;
    return r;
}

void sf__run_claimed(struct sf__thread *me, sf_future *f, uint64_t claimed, enum sf__how how)
{
    if (SF__UNLIKELY(sf__trace_on))
        sf__run(me, f, claimed, how, true);
    else
        sf__run(me, f, claimed, how, false);
}
