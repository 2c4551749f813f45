/*
 * internal.h - what the runtime's files share. Nothing here is exported:
 * the library is built with -fvisibility=hidden and only SF_EXPORT symbols of
 * sf.h leave it. Cross-file names carry the sf__ prefix; file statics have none.
 *
 * The objects and who owns them:
 *
 *   sf_future       one task and its result (future.c). Its 64-bit state word
 *                   is the single arbiter of who runs the task.
 *   struct sf__pending
 *                   a thread's pending queue: the futures it made with sf_do
 *                   that may not have started (pending.h, pending.c).
 *   struct sf__thread
 *                   everything per thread that uses libsf: its pending queue,
 *                   its free futures, its counters, its trace buffer
 *                   (registry.c). The registry of all of them is the global
 *                   pending set that blocked getters and idle workers search.
 *   sf__rt          the runtime: configuration, pool, lifetime (lifecycle.c,
 *                   pool.c).
 */
#ifndef SF_INTERNAL_H
#define SF_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sf.h"

#define SF__LIKELY(x) __builtin_expect(!!(x), 1)
#define SF__UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Relaxed is enough for every counter bumped through this macro: each counter
 * is written only by the thread owning the record that holds it (a plain
 * increment that other threads may read at any time), and readers (stats,
 * trace's Queue column) want a recent value, not an ordering with anything. */
#define SF__BUMP(c)                                                                \
    atomic_store_explicit(&(c), atomic_load_explicit(&(c), memory_order_relaxed) + 1, \
                          memory_order_relaxed)

/* ---------------------------------------------------------------------------
 * Futures (future.c)
 *
 * state = tag << SF__TAG_SHIFT | orphan bit | status. The tag names the push
 * that queued this incarnation of the future: the pushing thread's record id
 * in the high bits and that thread's push counter below (struct sf__pending's
 * seq). Futures are recycled, never returned to the system while the runtime
 * runs (type-stable memory), so a stale pointer found in an old queue slot is
 * always a valid future; a claimer that found it through a queue compares the
 * tag and cannot mistake a recycled future for the task it saw queued.
 *
 * Transitions (the only ones):
 *   FREE -> PENDING            sf_do, by the owner before publishing it
 *   PENDING -> RUNNING         claim: CAS, by exactly one of owner, worker, thief
 *   PENDING -> FREE            discard: CAS by sf_release before anyone started it
 *   RUNNING -> RUNNING|ORPHAN  sf_release while the task runs: CAS
 *   RUNNING -> DONE            completion (see sf__complete)
 *   DONE -> FREE               sf_release after completion
 *   RUNNING|ORPHAN -> FREE     completion of an orphan: the completer frees it
 * ------------------------------------------------------------------------- */
enum {
    SF__FREE = 0,
    SF__PENDING = 1,
    SF__RUNNING = 2,
    SF__DONE = 3
};
#define SF__STATUS_MASK UINT64_C(7)
#define SF__ORPHAN UINT64_C(8)
#define SF__TAG_SHIFT 4
/* Record ids take the top bits of a tag; the push counter the rest. */
#define SF__SEQ_BITS 40
#define SF__MAX_RECORDS 4096

struct sf_future {
    union {
        void *(*fn)(void *); /* the task, while not FREE */
        sf_future *next;     /* free-list link, while FREE */
    } u;
    void *val;                 /* the argument until the task runs, then its result */
    _Atomic uint64_t state;    /* see above; its low 32 bits are the futex word */
    _Atomic uint32_t waiters;  /* getters asleep on this future (get.c) */
    uint32_t unused;           /* pads the future to 32 bytes: two per cache line */
};

static inline uint64_t sf__status(uint64_t s) { return s & SF__STATUS_MASK; }
static inline uint64_t sf__tag(uint64_t s) { return s >> SF__TAG_SHIFT; }

/* How a task came to run, for the counters and the trace. */
enum sf__how { SF__HOW_INLINE = 0, SF__HOW_POOL, SF__HOW_STEAL, SF__HOW_DRAIN };

struct sf__thread;

sf_future *sf__future_refill(struct sf__thread *t);
void sf__future_free(struct sf__thread *t, sf_future *f);
void sf__future_spill(struct sf__thread *t);
void sf__run(struct sf__thread *t, sf_future *f, uint64_t claimed, enum sf__how how);
void sf__slabs_free_all(void);

/* ---------------------------------------------------------------------------
 * Pending queue (pending.h / pending.c)
 * ------------------------------------------------------------------------- */
struct sf__ring {
    uint64_t mask;                    /* size - 1, size a power of two */
    struct sf__ring *retired;         /* older rings, kept until shutdown */
    _Atomic(sf_future *) slot[];
};

struct sf__pending {
    /* Written by the owner only; read by any thread scanning for work. */
    _Atomic uint64_t top;      /* oldest slot that may still hold a pending task */
    _Atomic uint64_t bottom;   /* next slot to fill */
    _Atomic uint64_t sub_seq;  /* tasks of this thread with seq < sub_seq are submitted */
    _Atomic uint64_t pub_seq;  /* ... with seq < pub_seq are public: claimable by CAS */
    _Atomic(struct sf__ring *) ring;
    _Atomic(sf_future *) claiming; /* private future the owner is claiming */
    uint64_t seq;              /* next push counter, record id in the high bits (owner only) */

    /* Written by other threads (rarely), read by the owner at every call. */
    _Alignas(64) _Atomic int want;  /* someone wants the private tasks published */
    _Atomic(sf_future *) foreign;   /* private future another thread is claiming */
    pthread_mutex_t flock;          /* one foreign claimer at a time */
};

/* ---------------------------------------------------------------------------
 * Per-thread record (registry.c)
 * ------------------------------------------------------------------------- */
struct sf__thread {
    struct sf__pending q;
    int id;                    /* index in the registry; trace thread id */
    bool is_worker;
    _Atomic int alive;         /* 0 once its thread exited: may be adopted */
    unsigned depth;            /* tasks running nested on this thread now */
    uint32_t rng;              /* victim choice */
    sf_future *free;           /* free futures (owner only) */
    size_t nfree;
    /* Counters: written by the owner only (SF__BUMP), read by anyone. */
    _Atomic uint64_t c_created, c_inline, c_pool, c_stolen, c_drained, c_discarded,
        c_blocked, c_sleeps;
    /* Trace buffer (trace.c), owner only. */
    char *tbuf;
    size_t tlen;
};

struct sf__tls {
    struct sf__thread *rec;
    unsigned gen;
};
extern __thread struct sf__tls sf__tls __attribute__((tls_model("initial-exec")));

struct sf__thread *sf__self_slow(void);
struct sf__thread *sf__registry_get(int i);
int sf__registry_count(void);
void sf__registry_thread_exit(struct sf__thread *t);
int sf__registry_init(void);
void sf__registry_destroy(void);
struct sf__thread *sf__register_worker(void);

/* ---------------------------------------------------------------------------
 * Runtime (lifecycle.c, pool.c, park.c, config.c)
 * ------------------------------------------------------------------------- */
enum { SF__DOWN = 0, SF__UP = 1 };

struct sf__cfg {
    int threads;
    bool trace;
    char *trace_file;          /* NULL: stderr */
    bool trace_file_from_env;  /* a bad one is reported, not an error */
    size_t stack_size;
};

struct sf__rt {
    /* Read on every call (the generation check of sf__self): keep apart from
     * the counters below that change while tasks run. */
    _Atomic unsigned gen;      /* bumped at every start and stop */
    _Atomic int state;
    bool trace;
    int threads, workers;
    size_t stack_size;
    int trace_fd;
    uint64_t t0_ns;
    pthread_mutex_t life;      /* serialises start and stop */
    pthread_key_t exit_key;
    pthread_t *tids;
    int nstarted;

    _Alignas(64) _Atomic int busy;          /* pool workers running a taken task */
    _Atomic int peak_busy;
    _Atomic int stop;                       /* workers leave */
    _Atomic int asleep;                     /* getters asleep (trace column) */
    _Alignas(64) _Atomic uint32_t idle_seq; /* futex word of idle workers */
    _Atomic int idle_sleepers;              /* idle workers asleep on idle_seq */
    _Atomic int idle_workers;               /* idle workers, awake or asleep */
};
extern struct sf__rt sf__rt;

int sf__config_resolve(const sf_config *cfg, struct sf__cfg *out);
int sf__start_implicit(void);
int sf__pool_start(void);
void sf__pool_stop(void);
void sf__pool_wake_one(void);
uint64_t sf__now_ns(void);

/* Asymmetric fences (park.c): the hot side of a Dekker pair pays only a
 * compiler barrier (light) when the slow side issues membarrier (heavy),
 * which makes every running thread of the process execute a full barrier.
 * Without membarrier both fall back to seq_cst fences. */
extern bool sf__asym;
static inline void sf__fence_light(void)
{
    if (SF__LIKELY(sf__asym))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}
void sf__fence_heavy(void);
void sf__park_init(void);
/* Sleeps while *word == expect, at most timeout_ns (<=0: no limit). */
void sf__futex_wait(void *word, uint32_t expect, long timeout_ns);
void sf__futex_wake(void *word, int n);
static inline uint32_t *sf__futex_word(sf_future *f)
{
    /* The low half of the 64-bit state holds the status bits (little-endian). */
    return (uint32_t *)(void *)&f->state;
}

/* ---------------------------------------------------------------------------
 * Tracing (trace.c). Off: one predictable branch per event.
 * ------------------------------------------------------------------------- */
#define SF__TRACE(t, ...)                                                          \
    do {                                                                       \
        if (SF__UNLIKELY(sf__rt.trace))                                        \
            sf__trace((t), __VA_ARGS__);                                       \
    } while (0)
void sf__trace(struct sf__thread *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sf__trace_flush(struct sf__thread *t);
int sf__trace_open(const char *path);
void sf__trace_close(void);
/* "T.N" name of the task whose state word is s. */
#define SF__TASK_FMT "%llu.%llu"
#define SF__TASK_ARGS(s)                                                       \
    (unsigned long long)(sf__tag(s) >> SF__SEQ_BITS),                          \
        (unsigned long long)(sf__tag(s) & ((UINT64_C(1) << SF__SEQ_BITS) - 1))

/* The calling thread's record; registers it (and starts the runtime) on first
 * use. NULL with errno set when that fails. */
static inline struct sf__thread *sf__self(void)
{
    struct sf__thread *t = sf__tls.rec;
    /* Relaxed: gen only tells a thread that its cached record belongs to a
     * runtime that was shut down; sf_shutdown() may not race with other calls
     * (sf.h), so any later value read here was published before this thread's
     * next call by whatever synchronised it with the shutdown. */
    if (SF__LIKELY(t != NULL &&
                   sf__tls.gen == atomic_load_explicit(&sf__rt.gen, memory_order_relaxed)))
        return t;
    return sf__self_slow();
}

/* The thread's next pseudo-random number (xorshift32): where a scan of the
 * registry starts, so that thieves and idle workers spread over victims. */
static inline uint32_t sf__rand(struct sf__thread *t)
{
    uint32_t x = t->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return t->rng = x;
}

/* sf__future_free for a registered thread, inlined into the hot paths. */
#define SF__SPILL_AT 16384 /* a thread's free list longer than this spills half */
static inline void sf__future_put(struct sf__thread *t, sf_future *f)
{
    /* Relaxed: FREE is never the expected value of a claim, and the future's
     * next user publishes it afresh with a release store (sf__pending_push). */
    atomic_store_explicit(&f->state, SF__FREE, memory_order_relaxed);
    f->u.next = t->free;
    t->free = f;
    if (SF__UNLIKELY(++t->nfree > SF__SPILL_AT))
        sf__future_spill(t);
}

/* sf__run for SF__HOW_INLINE, inlined into sf_get: the runner is inside
 * sf_get() of f itself (see future.c on completion). */
static inline void sf__run_inline(struct sf__thread *t, sf_future *f, uint64_t claimed,
                                  bool traced)
{
    SF__BUMP(t->c_inline);
    if (traced)
        sf__trace(t, "FStart\t" SF__TASK_FMT "\tinline", SF__TASK_ARGS(claimed));
    t->depth++;
    void *r = f->u.fn(f->val);
    t->depth--;
    if (traced)
        sf__trace(t, "FDone\t" SF__TASK_FMT, SF__TASK_ARGS(claimed));
    f->val = r;
    /* Release: getters that load DONE (acquire) see val. */
    atomic_store_explicit(&f->state, (claimed & ~(SF__STATUS_MASK | SF__ORPHAN)) | SF__DONE,
                          memory_order_release);
    /* Dekker with a sleeping getter (get.c, sleep_on): light fence here,
     * heavy fence there; one of us sees the other's write. Relaxed load:
     * ordered by that pair. */
    sf__fence_light();
    if (SF__UNLIKELY(atomic_load_explicit(&f->waiters, memory_order_relaxed) != 0))
        sf__futex_wake(sf__futex_word(f), 0x7fffffff);
}

#endif /* SF_INTERNAL_H */
