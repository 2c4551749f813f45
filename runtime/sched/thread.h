/*
 * thread.h - what the scheduler keeps per thread (struct sf__sched,
 * in the registry's struct sf__thread, registry.h), and the fibers a thread
 * runs tasks on.
 *
 * The registry (layer 3) hands out, finds and adopts a thread's struct;
 * everything about the tasks it runs - the task running now, its failures
 * and failure scope, its isolation region, its stack's red line, its
 * fibers, its trace buffer, its counters - is this layer's, kept in the
 * struct's `upper` bytes and reached through sf__sched(me) at a constant
 * offset. Comments write me->cur for sf__sched(me)->cur, and so on for
 * every field below.
 */
#ifndef SF_THREAD_H
#define SF_THREAD_H

#include <stdbool.h>
#include <stddef.h>

#include "platform/fiber.h"
#include "registry/registry.h"

struct sf__failure;     /* failure.h */
struct sf__scope_frame; /* failure.h */
struct sf__batch_frame; /* batch.h */
struct sf__light;       /* light.h */

/* Fibers a thread may park on top of its own stack. A get that would need
 * one more waits without helping (park.c, Bounds). */
#define SF__FIBERS 64

/*
 * What a thread keeps per stack: the task running there, innermost, and what
 * goes with it. The thread's struct holds the running fiber's (where the
 * fork-join fast path reads it); a parked fiber holds its own here until it
 * runs again (park.c). Each field is documented at its place in struct
 * sf__sched.
 */
struct sf__frame {
    sf_future *cur;
    struct sf__failure *fails;
    struct sf__scope_frame *scope;
    struct sf__batch_frame *batch_frames; /* batch.h, sf__batch_frames */
    uintptr_t stack_lo, stack_red, stack_red_task;
    size_t stack_size;
    uint32_t region;
    int tdepth;
#if defined(__SANITIZE_THREAD__)
    unsigned depth;
#endif
};

/*
 * A stack that runs tasks on a thread: the thread's own (its base fiber),
 * or one its blocked gets park on (park.c). A task runs on one fiber from
 * start to end, and while it runs its future's runner names that fiber (run.h),
 * which is how a getter about to sleep follows a chain of waits (get.c,
 * Deadlock): a task can go on only when its fiber does.
 */
struct sf__fiber {
    /* The wait this fiber is in, NULL while it runs a task: written by its
     * thread under wait_seq (a seqlock: odd while it writes), read by
     * getters that follow a chain of waits. */
    _Atomic(sf_future *) waiting_on;
    _Atomic uint64_t wait_stamp; /* when that wait began, on a global clock */
    _Atomic uint64_t wait_seq;
    struct sf__thread *thread;   /* its thread, for good */
    /* Its thread's alone (park.c): */
    struct sf__ctx ctx;          /* its registers while it does not run */
    struct sf__stack stack;      /* a parking fiber's own stack (the base: none) */
    struct sf__frame saved;      /* the thread's per-stack state while it does not run */
    struct sf__fiber *next;      /* on its thread's parked or spare list */
    /* Parked: it may go on once ready_on is DONE, or one of ready_set[0..
     * ready_n), or ready_until (sf__now_ns) has passed; none of the three
     * set: at once (it yielded). waiting_on is what others see. */
    sf_future *ready_on;
    sf_future *const *ready_set;
    int ready_n;
    uint64_t ready_until;        /* UINT64_MAX: no deadline */
    uint32_t help_region;        /* a parking fiber helps within this region */
    bool cold;                   /* spare, its stack's pages given back */
    int index;                   /* 0: the base; 1..SF__FIBERS: parking fibers */
    /* A new fiber's first job (park.h, struct sf__park_job), in the parking
     * frame, which stays until the fiber has copied it. */
    const void *job;
    /* Its light tasks' deque (light.h), made at its first light run and
     * kept with the fiber: written once by its thread (release), read by
     * thieves through the thread's light_mask. */
    _Atomic(struct sf__light *) light;
};

/* The scheduler's part of a thread. Owner-only fields are written by that
 * thread alone. */
struct sf__sched {
    sf_future *cur;            /* the task running here, innermost; NULL: none (owner) */
#if defined(__SANITIZE_THREAD__)
    unsigned depth;            /* tasks running nested on this thread now (owner) */
#endif
    uint32_t region;           /* isolation region of the task running here, 0 none
                                * (owner; get.c, Isolation) */
    uint32_t outer_help;       /* during plain code's wait, the region its thread
                                * helps within, 0 none (owner; get.c, Plain
                                * code's waits) */
    uintptr_t stack_red;       /* a get below this address continues on a fresh
                                * stack (get.c): stack_red_task while the thread
                                * runs a task, UINTPTR_MAX while it runs none
                                * (cur NULL), so that such a get leaves the
                                * fork-join fast path (get.h) and its task is
                                * timed (run.h, busy time) at no cost to it (owner) */
    uintptr_t stack_red_task;  /* the red line: 0 when the stack is unknown */
    uintptr_t stack_lo;        /* the running stack, lowest address (0: unknown) */
    size_t stack_size;         /* ... and size below the thread's registration
                                * frame (a fiber's: all of it) */
    struct sf__failure *fails; /* failures of running tasks, innermost first (owner;
                                * failure.h) */
    struct sf__scope_frame *scope; /* innermost failure scope this thread runs
                                * bodies for (a loop's), NULL: none (owner;
                                * failure.h, Scopes) */
    struct sf__fiber *fiber;   /* the fiber running now (owner) */
    struct sf__fiber base;     /* the thread's own stack, as a fiber */
    struct sf__fiber *parked;  /* its parked fibers, newest first (owner; park.c) */
    struct sf__fiber *spare;   /* parking fibers with a stack and no job (owner) */
    int nspare;
    int nfibers;               /* parking fibers made so far (owner) */
    /* Its SF__FIBERS parking fibers (park.h), allocated at its first park
     * and kept until it is freed: written once by the owner (release),
     * read by deadlock checks on other threads (park.c, sf__park_is_fiber). */
    _Atomic(struct sf__fiber *) fibers;
    _Atomic int asleep;        /* 1 while asleep in a get (owner writes; trace reads) */
    _Atomic int timed_sleep;   /* 1 while that sleep is a timed wait's, which returns
                                * at its deadline (owner writes; the shutdown's
                                * sweep reads: promise.c) */
    /* The trace's line buffer (trace.c; owner only). Freed with the thread
     * (sf__threads_free). */
    char *tbuf;
    size_t tlen;
    /* The Chrome trace's state for this thread (trace.c; owner only): tasks
     * running nested here now, and whether its thread_name metadata was
     * written. */
    int tdepth;
    bool tnamed;
    uint64_t tfibers_named; /* bit k-1: fiber k's track is named (park.c) */
    /* Counters: written by the owner only (SF__BUMP, SF__ADD), read by anyone
     * (stats.c sums them). c_steal_tries/fails: scans of other threads'
     * queues by a helping get or an idle worker, and those that found
     * nothing; c_idle_sleeps: an idle worker's sleeps; c_busy_ns: time in
     * outermost task executions (run.h, sf__run_outermost); c_promises:
     * promises made (promise.c), which also numbers them for the trace. */
    _Atomic uint64_t c_created, c_inline, c_pool, c_stolen, c_drained, c_discarded,
        c_blocked, c_sleeps, c_fresh_stacks, c_cancelled, c_steal_tries, c_steal_fails,
        c_idle_sleeps, c_busy_ns, c_parks, c_resumes, c_promises;
    /* Timed waits (sf_wait_for, sf_wait_any, sf_batch_wait_for) that
     * returned ETIMEDOUT. */
    _Atomic uint64_t c_timeouts;
    /* Time asleep in its gets' and waits' sleeps, in a task or not (Sleep
     * time, below); c_busy_ns leaves out the part inside tasks (run.h). */
    _Atomic uint64_t c_asleep_ns;
    /* CPU time (thread.c, CPU time): c_cpu_ns, what the struct's earlier
     * threads used (added at their exits); while a thread owns it
     * (cpu_live), its CPU clock and that clock's reading at its
     * registration. Written by the owner under cpu_seq, a seqlock (odd
     * while it writes), read by anyone. */
    _Atomic uint64_t c_cpu_ns, cpu_base, cpu_seq;
    _Atomic clockid_t cpu_clock;
    _Atomic bool cpu_live;
    /* The hang report's (hang.c, SF_HANG_REPORT). What this thread's wait
     * waits for, as of its last nap (hang_kind, hang_what, hang_n) and when
     * that nap ended (hang_at, 0: never): written by the owner after each
     * nap, read by a reporter on another thread. */
    _Atomic int hang_kind;
    _Atomic(const void *) hang_what;
    _Atomic int hang_n;
    _Atomic uint64_t hang_at;
    /* The owner's own view of a stall (owner only): since when the sum of
     * every thread's task counters stood at hang_sum, and when it next sums
     * them. */
    uint64_t hang_since, hang_sum, hang_next;
    /* Fibers with a light deque (light.h): bit 0 the base, bit k fiber k
     * (bit 63 also every fiber above). Set by the owner (release), read by
     * every idle worker's scan: on a line of its own, away from the
     * counters the owner writes at every task. */
    _Alignas(64) _Atomic uint64_t light_mask;
};

/* The bytes struct sf__sched takes in `upper`: where the next layer's part
 * begins (lifecycle.h). */
#define SF__SCHED_BYTES ((sizeof(struct sf__sched) + 63) / 64 * 64)

/* t's scheduler part (of a const t too: a reader's promise, not the type's). */
static inline __attribute__((always_inline)) struct sf__sched *sf__sched(const struct sf__thread *t)
{
    return (struct sf__sched *)(void *)t->upper;
}

/*
 * Registers the calling thread (sf__registry_register: a pool worker when
 * `worker`) and starts its scheduler part: no task, no failure, no region,
 * its own stack as its running fiber, with the stack's bounds and red line.
 * stack_hint: the thread's stack size if the caller made the thread (0: not
 * known), for when the system cannot tell its bounds. Returns it, or NULL
 * with errno as sf__registry_register.
 */
struct sf__thread *sf__thread_register(bool worker, size_t stack_hint);

/*
 * Tasks queued and not started, over all threads: created minus started
 * (inline, pool, stolen, drained) minus discarded and cancelled. Each
 * counter is exact for its owner; the sum is a snapshot taken while others
 * move, so it is clamped at 0, and exact once every thread is quiet.
 */
uint64_t sf__threads_queued(void);
/* Threads asleep in a get now (their `asleep` flags). */
int sf__threads_asleep(void);

/*
 * Sleep time. Every sleep of a get or a wait - the futex sleep of a get, a
 * timed wait, sf_wait_any, a batch wait, a wait for parked fibers or for a
 * fresh stack's thread - is timed around the sleep alone, into
 * c_asleep_ns: a clock read before and after a system call that sleeps, and
 * nothing on any path that does not sleep. Spinning, yielding and helping
 * are no sleep (the tasks a wait helps with are busy time as ever).
 * sf__run_outermost takes a task's sleeps out of its busy time (run.h).
 */
static inline uint64_t sf__sleep_begin(void) { return sf__now_ns(); }
static inline void sf__sleep_end(struct sf__thread *me, uint64_t began)
{
    SF__ADD(sf__sched(me)->c_asleep_ns, sf__now_ns() - began);
}

/* CPU time (thread.c): the calling thread, registered as t, starts its
 * count (at registration) or adds it to t's row (at its exit); anyone reads
 * t's row, in nanoseconds. */
void sf__thread_cpu_start(struct sf__thread *t);
void sf__thread_cpu_stop(struct sf__thread *t);
uint64_t sf__thread_cpu_ns(const struct sf__thread *t);

/* Frees what every thread's scheduler part holds (the trace buffers), before
 * sf__registry_destroy frees the structs. Nobody may use them any more. */
void sf__threads_free(void);

/*
 * Owner: may a get run its task on this stack, nested in the caller's frame?
 * No once the frame is below the red line (get.c continues on a fresh
 * stack). Under ThreadSanitizer a thread also nests at most SF__TSAN_NEST
 * tasks, for its memory: it keeps, for good, a copy of the whole call stack
 * for each address that a release first touches, and a chain does that at
 * every level (its future), so n levels on one thread keep O(n^2) words -
 * gigabytes at tens of thousands of levels. A fresh stack starts a short call
 * stack, so with the bound a chain's cost grows linearly with its length.
 * (It also keeps far from ThreadSanitizer's limit of 65536 frames a thread,
 * at two frames a level.)
 */
#if defined(__SANITIZE_THREAD__)
#define SF__TSAN_NEST 1024u
#endif
static inline __attribute__((always_inline)) bool sf__stack_room(const struct sf__thread *me)
{
#if defined(__SANITIZE_THREAD__)
    if (sf__sched(me)->depth >= SF__TSAN_NEST)
        return false;
#endif
    return (uintptr_t)__builtin_frame_address(0) > sf__sched(me)->stack_red;
}

#endif /* SF_THREAD_H */
