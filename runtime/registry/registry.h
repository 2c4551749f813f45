/*
 * registry.h - the threads that use libsf, and the global pending
 * set.
 *
 * Every thread that calls into libsf gets a struct sf__thread the first time
 * (registry.c), found again through TLS. The registry of all of them is the
 * global pending set: the union of their pending queues is every task not yet
 * started, and blocked getters, idle workers and the drain at shutdown search
 * it by scanning the queues. The registry never starts the runtime: a caller
 * that finds no thread for itself (sf__thread_self() == NULL) decides
 * (lifecycle.c).
 */
#ifndef SF_REGISTRY_H
#define SF_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "queue/pending.h"

struct sf__thread;

/*
 * Everything per thread. Owner-only fields are written by that thread alone.
 * The registry keeps what it needs to hand out, find, adopt and free a
 * thread; each layer above keeps its own
 * per-thread state in `upper`, as a struct declared in its own header and
 * reached through its accessor (thread.h, layer 4: sf__sched; lifecycle.h,
 * layer 5: sf__entry), at a constant offset - the fork-join fast path pays
 * nothing for the split. The registry zeroes `upper` when it makes a
 * struct, and leaves it alone otherwise: the owning layers start their part
 * at each registration (thread.c) and free what it holds (lifecycle.c).
 */
struct sf__thread {
    struct sf__pending q;      /* its pending queue (its own cache lines) */
    int id;                    /* index in the registry; the trace's Thread column,
                                * sf_thread_index() (lifecycle.c, Thread indices) */
    bool is_worker;            /* a pool worker (written with __atomic_store_n at
                                * registration: stats.c reads it) */
    _Atomic int alive;         /* 0 once its thread exited: may be adopted */
    _Atomic(unsigned *) tls_gen; /* its thread's sf__tls.gen while alive (Calls
                                  * in flight); under reg_lock */
    struct sf__thread *dead_next; /* on the registry's dead list (registry.c) */
    uint32_t rng;              /* sf__xorshift32 state, never 0 (owner) */
    uintptr_t stack_lo;        /* the thread's stack, lowest address (0: unknown) */
    size_t stack_size;         /* ... and size below its registration frame */
    struct sf__freelist free;  /* its free futures (owner) */
    /* The layers above: sf__registry_init's upper_size bytes. */
    _Alignas(64) unsigned char upper[];
};

/*
 * Calls in flight. A registry is freed at sf_shutdown, while other threads
 * may still be inside libsf: a program that shuts down too early, a hook or
 * a signal handler that calls back. So every call that a thread makes from
 * outside libsf - an outermost call - announces itself, and a registry is
 * freed only once it is closed: no call in flight on any other thread, and
 * none able to begin (one that tries waits until the registry is freed, and
 * then finds a fresh runtime, as any call after sf_shutdown does).
 *
 * The announcement costs the fork-join fast path nothing: it is what makes
 * sf__thread_self() find the thread's struct at all. A thread's `gen` (TLS)
 * is the registry's generation while it is inside a call and 0 outside, so
 * every outermost call finds no struct, leaves its fast path, and goes
 * through sf__call_begin (lifecycle.h, SF__OUTERMOST), which sets it; calls
 * nested in it (tasks, hooks) find the struct at once. Pool workers and
 * fresh stacks are inside for their whole life.
 *
 * The closer (sf__registry_close) and a beginning call form an asymmetric
 * Dekker pair (platform.h): the call stores its gen, light fence, loads
 * `closing`; the closer stores `closing`, heavy fence, loads every live
 * thread's gen (through its struct's tls_gen, under reg_lock, so that a
 * thread that exits - its TLS gone - is dead first). Either the closer sees
 * the call and waits for it to end, or the call sees `closing` and backs
 * off before it touches anything. A thread with no struct in this registry
 * yet (it registers inside the call) is counted in `outsiders` instead, by
 * sequentially consistent operations on both sides.
 */
struct sf__tls {
    struct sf__thread *me;  /* its struct, in the registry of generation me_gen */
    unsigned me_gen;
    /* me_gen while inside a call, else 0 (above). Written by this thread
     * with atomic stores and read by a closer with atomic loads; this
     * thread's own reads are plain (nobody else writes it), which lets
     * sf__thread_self compare it in one instruction. */
    unsigned gen;
    int inside;             /* an outermost call is in progress (or a worker's life) */
    bool outsider;          /* ... counted in `outsiders` at its beginning */
};
extern __thread struct sf__tls sf__tls __attribute__((tls_model("initial-exec")));
/* Bumped at every registry init and destroy, never 0: a cached registration
 * of an older generation is stale. */
extern _Atomic unsigned sf__registry_gen;

/* The calling thread's struct while it is inside a libsf call (Calls in
 * flight), or NULL: outside any call, or no struct in this registry. */
static inline struct sf__thread *sf__thread_self(void)
{
    struct sf__thread *me = sf__tls.me;
    /* gen is this thread's own (plain read). Relaxed: the registry's
     * generation changes only while no other thread is inside a call (a
     * destroy comes after a close; an init, while nobody is registered), so
     * a thread inside reads the value its call began with. */
    if (SF__LIKELY(me != NULL &&
                   sf__tls.gen == atomic_load_explicit(&sf__registry_gen, memory_order_relaxed)))
        return me;
    return NULL;
}

/* Is an outermost call in progress on this thread (Calls in flight)? */
static inline bool sf__call_inside(void) { return sf__tls.inside != 0; }

/*
 * The calling thread, outside any call, begins one: announces it, or waits
 * while the registry is closed and then begins (the debug build reports a
 * call that finds the registry closed: `what` names it). sf__call_end ends
 * it. Neither changes errno.
 */
void sf__call_begin(const char *what);
void sf__call_end(void);
/* A thread's exit: begins a call unless the registry is closed (false). */
bool sf__call_try_begin(void);
/* A thread libsf made (a pool worker, a fresh stack), before it registers:
 * inside a call for its whole life. Its life is within a call of another
 * thread: the shutdown that joins the workers, the get that waits for the
 * fresh stack. */
static inline void sf__call_begin_for_life(void) { sf__tls.inside = 1; }

/*
 * The calling thread, inside a call (its own is not waited for): closes the
 * registry - waits until no other thread is inside a call, after which none
 * can begin one until sf__registry_reopen, which comes after destroy.
 */
void sf__registry_close(void);
void sf__registry_reopen(void);
/* sf__registry_close without waiting: true once it is closed with no other
 * thread inside a call but the pool workers (inside for life: the caller
 * asks the pool about them), false - the registry open as before - if a call
 * is in flight on another thread. For a process's exit (hang.c). */
bool sf__registry_try_close(void);
/* Is t's thread alive and inside a call now? A snapshot, as a closer reads
 * it (sf__registry_close): for sf_shutdown's watch of promises nobody can
 * set (promise.c), which asks it of other threads. */
bool sf__registry_inside(struct sf__thread *t);

/* Threads registered at once, dead ones adopted: the ids future.h allows,
 * less the one that names no thread (SF__NO_THREAD_ID). */
#define SF__MAX_THREADS_REGISTERED (SF__MAX_THREAD_IDS - 1)

/*
 * Opens a registry whose structs have upper_size bytes of `upper`. on_exit(t)
 * runs on a registered thread when it exits (from a pthread key destructor),
 * before t is marked dead: the runtime's one upward callback (lifecycle.c
 * says why). Returns 0, or -1 with errno EAGAIN (no pthread key left).
 */
int sf__registry_init(size_t upper_size, void (*on_exit)(struct sf__thread *t));
/* Frees every thread's struct and queue. Nobody may use them any more. */
void sf__registry_destroy(void);
/*
 * Registers the calling thread (a pool worker when `worker`), adopting the
 * struct of an exited thread whose queue holds nothing pending, or making a
 * new one; the layers above start their parts (thread.h,
 * sf__thread_register, which is what callers call). Returns it, or NULL
 * with errno EAGAIN (SF__MAX_THREADS_REGISTERED live threads) or ENOMEM.
 * Takes the registry lock (debug.h: rank REGISTRY).
 */
struct sf__thread *sf__registry_register(bool worker);

/* In a child after fork(): forget every thread (only the forking one exists;
 * the structs' copies leak), so the next init starts an empty registry. */
void sf__registry_after_fork(void);

/* Every push counter of this registry's queues is at least this one, and
 * every counter of an earlier registry of this process, or of a forked
 * parent's, is below it. */
uint64_t sf__registry_seq_floor(void);

/* Threads registered so far (ids 0 .. count-1); only grows until destroy. */
int sf__registry_count(void);
/* Thread i < sf__registry_count(): valid until destroy. */
struct sf__thread *sf__registry_get(int i);


/*
 * The queue of the tasks that are in no thread's queue (SF__NO_THREAD_ID:
 * batch tasks, batch.h): never pushed to, never scanned, it only answers
 * claims. Its pub_seq is UINT64_MAX, so every such task is public and
 * sf__pending_claim_foreign claims it by CAS, needing nothing from anyone.
 */
extern struct sf__pending sf__no_thread_queue;

/* The queue that holds the task named by state s, a PENDING state read from
 * a future: its thread's, or sf__no_thread_queue. Every claimer that finds
 * a future by its handle (a get, sf_release, sf_cancel) goes through here. */
static inline struct sf__pending *sf__queue_of(uint64_t s)
{
    int t = sf__tag_thread(s);
    return SF__UNLIKELY(t == SF__NO_THREAD_ID) ? &sf__no_thread_queue : &sf__registry_get(t)->q;
}

/* Claims f, PENDING as *sp, by its handle for `me` (NULL: a thread without
 * a struct): PENDING -> `to` (RUNNING, or FREE for a discard). Its own
 * queue's task by the owner's claim, and its slot trimmed; another queue's
 * through its gate, which it opens (pending.h, Handed-over futures). True
 * with *sp = to; false with *sp the state that stopped it. */
static inline bool sf__claim_by_handle(struct sf__thread *me, sf_future *f, uint64_t *sp,
                                       uint64_t to)
{
    bool mine = me != NULL && sf__pending_holds(&me->q, *sp);
    struct sf__pending *q = sf__queue_of(*sp);
    if (!(mine ? sf__pending_claim_own(q, f, sp, to) : sf__pending_claim_handed(q, f, sp, to)))
        return false;
    if (mine)
        sf__pending_trim(q, f);
    return true;
}

/* Owner: its next pseudo-random number. */
static inline uint32_t sf__thread_rand(struct sf__thread *me) { return sf__xorshift32(&me->rng); }

#endif /* SF_REGISTRY_H */
