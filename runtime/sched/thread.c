/*
 * thread.c - a registered thread's scheduler part (thread.h).
 */
#include "sched/thread.h"

#include <stdlib.h>

/* Stack assumed below the registering frame when neither the system nor the
 * caller can tell: the smallest stack libsf allows (config.c). */
#define UNKNOWN_STACK ((size_t)64 << 10)

/* The calling thread's stack, below this frame, and its red line. */
static void measure_stack(struct sf__sched *s, size_t stack_hint)
{
    sf__stack_bounds(&s->stack_lo, &s->stack_size);
    /* The base fiber's context is the thread's whole stack (fiber.h: for the
     * sanitizers; 0 and 0 when unknown). */
    sf__ctx_init_thread(&s->base.ctx, s->stack_lo, s->stack_size);
    /* The mapping's top holds the thread's static TLS (ThreadSanitizer's
     * state alone is most of a megabyte there): count only what lies below
     * our frame. Later frames above it are near the top, where nothing
     * needs bounding. */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (s->stack_size != 0 && sp > s->stack_lo && sp - s->stack_lo < s->stack_size) {
        s->stack_size = sp - s->stack_lo;
    } else {
        /* Unknown (pthread_getattr_np failed, say for want of memory):
         * assume little, a half of a stack we made (its top also holds
         * the TLS) or the smallest libsf allows. Deep chains then move to
         * fresh stacks early, which costs threads, never a crash. */
        size_t assumed = stack_hint / 2 > UNKNOWN_STACK ? stack_hint / 2 : UNKNOWN_STACK;
        s->stack_size = assumed - assumed / 8;
        s->stack_lo = sp - assumed + assumed / 8;
    }
    /* The last quarter of the stack is left to the task that runs there and
     * to the user code it calls before its next get. */
    s->stack_red_task = s->stack_size != 0 ? s->stack_lo + s->stack_size / 4 : 0;
    s->stack_red = UINTPTR_MAX; /* no task runs here yet (thread.h) */
}

struct sf__thread *sf__thread_register(bool worker, size_t stack_hint)
{
    struct sf__thread *t = sf__registry_register(worker);
    if (t == NULL)
        return NULL;
    /* An adopted struct keeps what its last thread left: its fibers (park.h,
     * sf__park_release), its trace buffer, emptied at its exit. The rest
     * starts afresh. Only this thread writes it from now on; others read
     * base's wait (atomic), which its last thread left NULL. */
    struct sf__sched *s = sf__sched(t);
    s->cur = NULL;
#if defined(__SANITIZE_THREAD__)
    s->depth = 0;
#endif
    s->fails = NULL;
    s->scope = NULL;
    s->base.thread = t;
    s->base.index = 0;
    s->fiber = &s->base;
    s->parked = NULL;
    /* Relaxed: a wait of nobody's, as at its last thread's exit. */
    atomic_store_explicit(&s->base.waiting_on, NULL, memory_order_relaxed);
    s->region = 0;
    s->outer_help = 0;
    measure_stack(s, stack_hint);
    return t;
}

/* Relaxed loads, both: statistics (platform.h, SF__BUMP); a stale counter
 * makes a snapshot, never a wrong one once the threads are quiet. */
uint64_t sf__threads_queued(void)
{
    int64_t q = 0;
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        const struct sf__sched *r = sf__sched(sf__registry_get(i));
        q += (int64_t)(atomic_load_explicit(&r->c_created, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_inline, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_pool, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_stolen, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_drained, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_discarded, memory_order_relaxed) -
                       atomic_load_explicit(&r->c_cancelled, memory_order_relaxed));
    }
    return q < 0 ? 0 : (uint64_t)q;
}

int sf__threads_asleep(void)
{
    int a = 0;
    for (int i = 0, n = sf__registry_count(); i < n; i++)
        /* Relaxed: a statistic. */
        a += atomic_load_explicit(&sf__sched(sf__registry_get(i))->asleep, memory_order_relaxed);
    return a;
}

void sf__threads_free(void)
{
    for (int i = 0, n = sf__registry_count(); i < n; i++) {
        struct sf__sched *s = sf__sched(sf__registry_get(i));
        free(s->tbuf);
        s->tbuf = NULL;
        s->tlen = 0;
    }
}
