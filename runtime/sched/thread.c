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
    sf__thread_cpu_start(t);
    return t;
}

/*
 * CPU time. A row's CPU time is its threads' (a struct goes to the next
 * thread that registers, with its counts): each thread's from its
 * registration on - its own code's between libsf calls too, for a thread of
 * the program - and the CPU clock says it. A live thread's is read from its
 * clock (pthread_getcpuclockid, taken at registration) by whoever reads the
 * row, so a worker that never sleeps is up to date too and the thread
 * itself pays nothing after its registration. At its exit (lifecycle.c,
 * the registry's exit hook) a thread adds what it used to c_cpu_ns and
 * stops being live: a thread that has exited has no clock to read. The
 * writes go under cpu_seq, as a fiber's wait record does (park.c,
 * sf__wait_publish): the odd seq first, release stores after it. A reader
 * that catches an exit between its check and its read of the clock finds
 * the clock gone (no time added) or still there (the exit's sum not yet
 * read): a snapshot a moment old, never the exited thread's time twice.
 */
static void cpu_write(struct sf__sched *s, uint64_t done, uint64_t base, clockid_t clock,
                      bool live)
{
    /* Relaxed: the owner's own seq. */
    uint64_t seq = atomic_load_explicit(&s->cpu_seq, memory_order_relaxed);
    atomic_store_explicit(&s->cpu_seq, seq + 1, memory_order_relaxed);
    atomic_store_explicit(&s->c_cpu_ns, done, memory_order_release);
    atomic_store_explicit(&s->cpu_base, base, memory_order_release);
    atomic_store_explicit(&s->cpu_clock, clock, memory_order_release);
    atomic_store_explicit(&s->cpu_live, live, memory_order_release);
    atomic_store_explicit(&s->cpu_seq, seq + 2, memory_order_release);
}

void sf__thread_cpu_start(struct sf__thread *t)
{
    struct sf__sched *s = sf__sched(t);
    clockid_t clock;
    uint64_t now;
    /* Without a clock the row keeps what earlier threads used. Relaxed:
     * the owner's own field. */
    bool live = sf__cpu_clock_self(&clock) && sf__cpu_ns(clock, &now);
    uint64_t done = atomic_load_explicit(&s->c_cpu_ns, memory_order_relaxed);
    cpu_write(s, done, live ? now : 0, live ? clock : 0, live);
}

void sf__thread_cpu_stop(struct sf__thread *t)
{
    struct sf__sched *s = sf__sched(t);
    /* Relaxed, all: the owner's own fields. */
    if (!atomic_load_explicit(&s->cpu_live, memory_order_relaxed))
        return;
    uint64_t done = atomic_load_explicit(&s->c_cpu_ns, memory_order_relaxed);
    uint64_t base = atomic_load_explicit(&s->cpu_base, memory_order_relaxed), now;
    if (sf__cpu_ns(atomic_load_explicit(&s->cpu_clock, memory_order_relaxed), &now) && now > base)
        done += now - base;
    cpu_write(s, done, 0, 0, false);
}

uint64_t sf__thread_cpu_ns(const struct sf__thread *t)
{
    const struct sf__sched *s = sf__sched(t);
    uint64_t done, base, s1, s2;
    clockid_t clock;
    bool live;
    /* Acquire, all: they keep their order, and pair with cpu_write's
     * release stores (a reader that sees a new field sees the odd seq
     * after it). A row being written is read again. */
    do {
        s1 = atomic_load_explicit(&s->cpu_seq, memory_order_acquire);
        done = atomic_load_explicit(&s->c_cpu_ns, memory_order_acquire);
        base = atomic_load_explicit(&s->cpu_base, memory_order_acquire);
        clock = atomic_load_explicit(&s->cpu_clock, memory_order_acquire);
        live = atomic_load_explicit(&s->cpu_live, memory_order_acquire);
        s2 = atomic_load_explicit(&s->cpu_seq, memory_order_acquire);
    } while (s1 != s2 || (s1 & 1));
    uint64_t now;
    if (live && sf__cpu_ns(clock, &now) && now > base)
        done += now - base;
    return done;
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
