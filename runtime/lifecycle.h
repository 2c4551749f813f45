/*
 * lifecycle.h - layer 5: the runtime's life (start, stop) and the calling
 * thread's way in, which starts the runtime when it is not running.
 */
#ifndef SF_LIFECYCLE_H
#define SF_LIFECYCLE_H

#include "get.h"

/* DOWN -> UP (sf_init, implicit start) -> STOPPING (sf_shutdown's drain and
 * join, no lock held) -> DOWN. */
enum sf__life { SF__DOWN = 0, SF__UP = 1, SF__STOPPING = 2 };

struct sf__thread *sf__enter_slow(void);

/*
 * The calling thread's struct, registering the thread and starting the
 * runtime from the environment first if needed. NULL with errno EAGAIN (the
 * implicit start failed, or SF__MAX_THREADS_REGISTERED threads are
 * registered) or ENOMEM.
 */
static inline struct sf__thread *sf__enter(void)
{
    struct sf__thread *me = sf__thread_self();
    if (SF__LIKELY(me != NULL))
        return me;
    return sf__enter_slow();
}

#endif /* SF_LIFECYCLE_H */
