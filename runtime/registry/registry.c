/*
 * registry.c - thread structs, TLS, thread exit and adoption.
 *
 * Structs are never freed while the registry is open: a scanner may hold one
 * at any time. When a thread exits, its struct is marked dead; its queue stays
 * in the set (its pending tasks remain claimable) and a later thread adopts
 * the struct once the queue holds nothing pending.
 *
 * The table grows in chunks of CHUNK entries, allocated as ids reach them,
 * so a million-thread capacity costs one small static array. Entries and
 * chunks are published by the release store of nthreads; entries below it
 * never change while the registry is open, so a scanner reads them after an
 * acquire load of nthreads. Dead structs wait on a list for adoption, so a
 * registration looks at the dead, not at every thread.
 */
#include "registry/registry.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__thread struct sf__tls sf__tls __attribute__((tls_model("initial-exec")));
_Atomic unsigned sf__registry_gen;
/* Calls in flight (registry.h): the registry is closed (1) from
 * sf__registry_close to sf__registry_reopen; the futex word that calls
 * beginning meanwhile sleep on. */
static _Atomic uint32_t closing;
/* Calls in flight of threads with no struct in this registry at their
 * beginning. */
static _Atomic long outsiders;
/* Push counters of this registry's queues start here: above every counter
 * of the registries before it in this process and of a forked parent's, so
 * a task in caller storage left from those is told from this registry's
 * own (sf__registry_seq_floor). Written at destroy and after fork, when no
 * other thread uses the registry; read under reg_lock, or by threads that
 * registered after it was written. */
static uint64_t seq_floor;

#define CHUNK_BITS 10
#define CHUNK (1 << CHUNK_BITS)
static struct sf__thread **chunks[SF__MAX_THREAD_IDS / CHUNK];
/* Claims only, by CAS (registry.h); id and pub_seq are all that is read. */
struct sf__pending sf__no_thread_queue = {.pub_seq = UINT64_MAX, .id = SF__NO_THREAD_ID};
static _Atomic int nthreads;
/* Exited threads' structs, linked by dead_next; under reg_lock. */
static struct sf__thread *dead;
static pthread_key_t exit_key;
static bool exit_key_live; /* between init and destroy: only a live key is deleted */
/* lifecycle.c's on_thread_exit: the runtime's one sanctioned upward
 * callback (lifecycle.c, start_runtime, says why; runtime/LAYERS lists it). */
static void (*exit_hook)(struct sf__thread *t);
/* The bytes of each struct's `upper` (registry.h), fixed at init. */
static size_t upper_bytes;
/* Rank REGISTRY (debug.h): taken under the life lock at start, never the
 * reverse; only malloc's own locks are taken under it. */
static struct sf__lock reg_lock = SF__LOCK_INITIALIZER(SF__RANK_REGISTRY, "reg_lock");

int sf__registry_count(void)
{
    /* Acquire: pairs with the release in new_thread; threads[i < n] is set. */
    return atomic_load_explicit(&nthreads, memory_order_acquire);
}

struct sf__thread *sf__registry_get(int i) { return chunks[i >> CHUNK_BITS][i & (CHUNK - 1)]; }

/* Under reg_lock. */
static struct sf__thread *new_thread(int n)
{
    struct sf__thread ***c = &chunks[n >> CHUNK_BITS];
    if (*c == NULL && (*c = calloc(CHUNK, sizeof **c)) == NULL)
        return NULL;
    size_t bytes = (sizeof(struct sf__thread) + upper_bytes + 63) / 64 * 64;
    struct sf__thread *t = aligned_alloc(64, bytes);
    if (t == NULL)
        return NULL;
    memset(t, 0, bytes);
    if (sf__pending_init(&t->q, n, seq_floor) != 0) {
        free(t);
        return NULL;
    }
    t->q.fl = &t->free; /* promotion takes slab futures from here (pending.h) */
    t->id = n;
    t->rng = 2654435761u * (uint32_t)(n + 1);
    (*c)[n & (CHUNK - 1)] = t;
    /* Release: scanners that see the new count see the struct. */
    atomic_store_explicit(&nthreads, n + 1, memory_order_release);
    return t;
}

struct sf__thread *sf__registry_register(bool worker)
{
    sf__lock(&reg_lock);
    /* Relaxed: nthreads is written only under reg_lock, which we hold. */
    int n = atomic_load_explicit(&nthreads, memory_order_relaxed);
    struct sf__thread *t = NULL;
    /* A dead struct whose queue still holds pending tasks (left by a thread
     * that exited without getting them) stays on the list until a claimer
     * empties it. Acquire on alive: the dead thread's last writes to its
     * struct come first. */
    for (struct sf__thread **p = &dead; *p != NULL; p = &(*p)->dead_next) {
        if (atomic_load_explicit(&(*p)->alive, memory_order_acquire) == 0 &&
            !sf__pending_has_pending(&(*p)->q)) {
            t = *p;
            *p = t->dead_next;
            break;
        }
    }
    if (t == NULL) {
        if (n == SF__MAX_THREADS_REGISTERED) {
            sf__unlock(&reg_lock);
            errno = EAGAIN;
            return NULL;
        }
        if ((t = new_thread(n)) == NULL) {
            sf__unlock(&reg_lock);
            errno = ENOMEM;
            return NULL;
        }
    }
    sf__pending_adopt(&t->q);
    SF__OWNER_SET(&t->free);
    /* Atomic (relaxed): statistics read it from other threads (stats.c)
     * while an adopted struct changes kind; the owner reads it plainly. */
    __atomic_store_n(&t->is_worker, worker, __ATOMIC_RELAXED);
    /* Relaxed: alive is read under reg_lock, or as a hint. */
    atomic_store_explicit(&t->alive, 1, memory_order_relaxed);
    /* Relaxed: gen changes only at init and destroy, which do not race with
     * registration (Calls in flight); the value read is the one init wrote. */
    unsigned gen = atomic_load_explicit(&sf__registry_gen, memory_order_relaxed);
    /* Relaxed: read by a closer under reg_lock, which we hold. */
    atomic_store_explicit(&t->tls_gen, &sf__tls.gen, memory_order_relaxed);
    sf__unlock(&reg_lock);
    sf__tls.me = t;
    sf__tls.me_gen = gen;
    /* Registering is done inside a call (or by a worker, inside for life):
     * the struct is the call's from now on. Relaxed: this thread is counted
     * in `outsiders` until the call ends, which is what a closer waits for. */
    if (sf__tls.inside)
        __atomic_store_n(&sf__tls.gen, gen, __ATOMIC_RELAXED);
    /* The destructor runs the exit hook and marks the struct dead when this
     * thread exits. */
    pthread_setspecific(exit_key, t);
    return t;
}

/* t's thread exits: t is dead from now on, if it still belongs to the
 * registry (a destroy may have freed it: destroy bumps the generation under
 * reg_lock). Dead before its TLS goes, since a closer reads that TLS while
 * t is alive. */
static void mark_dead(struct sf__thread *t)
{
    sf__lock(&reg_lock);
    /* Relaxed: written under reg_lock, which we hold. */
    if (sf__tls.me_gen == atomic_load_explicit(&sf__registry_gen, memory_order_relaxed)) {
        /* Release: pairs with the acquire in sf__registry_register of an
         * adopter. */
        atomic_store_explicit(&t->alive, 0, memory_order_release);
        t->dead_next = dead;
        dead = t;
    }
    sf__unlock(&reg_lock);
}

static void exit_key_destructor(void *arg)
{
    struct sf__thread *t = arg;
    /* A thread that exits is an outermost call of its own (Calls in
     * flight): the exit hook works on its queue. A closed registry is being
     * freed: no hook then (the shutdown takes every pending task itself). */
    bool outer = !sf__call_inside();
    if (outer && !sf__call_try_begin()) {
        mark_dead(t);
        return;
    }
    exit_hook(t);
    mark_dead(t);
    if (outer)
        sf__call_end();
}

/* Announces the calling thread's call (Calls in flight); false if the
 * registry was closed, the call then undone. */
static bool announce(void)
{
    sf__tls.inside = 1;
    /* Relaxed: see sf__thread_self. */
    unsigned g = atomic_load_explicit(&sf__registry_gen, memory_order_relaxed);
    if (sf__tls.me != NULL && sf__tls.me_gen == g) {
        /* Relaxed: ordered before the load of closing by the light fence,
         * which pairs with the closer's heavy fence. */
        __atomic_store_n(&sf__tls.gen, g, __ATOMIC_RELAXED);
        sf__fence_light();
    } else {
        sf__tls.outsider = true;
        /* seq_cst, as the load of closing below and the closer's store and
         * load: one total order decides which of us sees the other. */
        atomic_fetch_add_explicit(&outsiders, 1, memory_order_seq_cst);
    }
    /* seq_cst for outsiders (above); acquire for the reopened registry: a
     * call that sees it open after a destroy sees the new generation. */
    if (atomic_load_explicit(&closing, memory_order_seq_cst) == 0) {
        /* A destroy and reopen between our generation read and this load:
         * begin again on the new registry. */
        if (atomic_load_explicit(&sf__registry_gen, memory_order_relaxed) == g)
            return true;
    }
    sf__call_end();
    return false;
}

void sf__call_begin(const char *what)
{
    while (!announce()) {
#ifdef SF_DEBUG
        /* Relaxed: a report, not a decision. */
        if (atomic_load_explicit(&closing, memory_order_relaxed))
            sf__misuse("%s() called while sf_shutdown() frees the runtime: every other "
                       "thread must stop calling libsf before sf_shutdown()", what);
#else
        (void)what;
#endif
        /* The registry is being freed: sleep until it is reopened (a
         * timeout, belt and braces). */
        sf__futex_wait(&closing, 1, 1000000L);
    }
}

bool sf__call_try_begin(void) { return announce(); }

void sf__call_end(void)
{
    /* Release: this call's uses of the registry happen before a closer's
     * acquire read of 0, after which it frees them. */
    __atomic_store_n(&sf__tls.gen, 0, __ATOMIC_RELEASE);
    if (sf__tls.outsider) {
        sf__tls.outsider = false;
        atomic_fetch_sub_explicit(&outsiders, 1, memory_order_release);
    }
    sf__tls.inside = 0;
}

/* Waits a little for another thread's call to end. */
static void nap(unsigned *rounds)
{
    if (++*rounds < 64) {
        sched_yield();
    } else {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
}

void sf__registry_close(void)
{
    /* seq_cst: the outsiders' side of the pair (announce). */
    atomic_store_explicit(&closing, 1, memory_order_seq_cst);
    /* Pairs with the light fence of every registered thread's announce. */
    sf__fence_heavy();
    unsigned rounds = 0;
    /* Acquire, both loops: the calls' uses of the registry happen before
     * their ends' release stores. Our own call counts once if it began
     * without a struct. */
    long self = sf__tls.outsider ? 1 : 0;
    while (atomic_load_explicit(&outsiders, memory_order_acquire) > self)
        nap(&rounds);
    /* Relaxed: see sf__thread_self. */
    unsigned g = atomic_load_explicit(&sf__registry_gen, memory_order_relaxed);
    for (int i = 0; i < sf__registry_count(); i++) {
        struct sf__thread *t = sf__registry_get(i);
        if (t == sf__tls.me)
            continue;
        for (;;) {
            /* Under reg_lock: a live thread's TLS stays until it is marked
             * dead (mark_dead, under the same lock). Relaxed for alive and
             * tls_gen: written under reg_lock. */
            sf__lock(&reg_lock);
            unsigned *tg = atomic_load_explicit(&t->tls_gen, memory_order_relaxed);
            bool in = atomic_load_explicit(&t->alive, memory_order_relaxed) && tg != NULL &&
                      __atomic_load_n(tg, __ATOMIC_ACQUIRE) == g;
            sf__unlock(&reg_lock);
            if (!in)
                break;
            nap(&rounds);
        }
    }
}

bool sf__registry_try_close(void)
{
    /* The pair of sf__registry_close, the same orders. */
    atomic_store_explicit(&closing, 1, memory_order_seq_cst);
    sf__fence_heavy();
    long self = sf__tls.outsider ? 1 : 0;
    bool quiet = atomic_load_explicit(&outsiders, memory_order_acquire) <= self;
    unsigned g = atomic_load_explicit(&sf__registry_gen, memory_order_relaxed);
    for (int i = 0; quiet && i < sf__registry_count(); i++) {
        struct sf__thread *t = sf__registry_get(i);
        if (t == sf__tls.me || __atomic_load_n(&t->is_worker, __ATOMIC_RELAXED))
            continue;
        sf__lock(&reg_lock);
        unsigned *tg = atomic_load_explicit(&t->tls_gen, memory_order_relaxed);
        quiet = !(atomic_load_explicit(&t->alive, memory_order_relaxed) && tg != NULL &&
                  __atomic_load_n(tg, __ATOMIC_ACQUIRE) == g);
        sf__unlock(&reg_lock);
    }
    if (!quiet)
        sf__registry_reopen();
    return quiet;
}

bool sf__registry_inside(struct sf__thread *t)
{
    /* Relaxed: see sf__thread_self. */
    unsigned g = atomic_load_explicit(&sf__registry_gen, memory_order_relaxed);
    /* Under reg_lock, relaxed for alive and tls_gen, as in the close above.
     * Relaxed for the gen itself: a snapshot, which orders nothing; the
     * watch draws conclusions only from two equal ones (promise.c). */
    sf__lock(&reg_lock);
    unsigned *tg = atomic_load_explicit(&t->tls_gen, memory_order_relaxed);
    bool in = atomic_load_explicit(&t->alive, memory_order_relaxed) && tg != NULL &&
              __atomic_load_n(tg, __ATOMIC_RELAXED) == g;
    sf__unlock(&reg_lock);
    return in;
}

void sf__registry_reopen(void)
{
    /* Release: a call that sees the registry open (announce) sees the
     * destroy before it, and the new generation. */
    atomic_store_explicit(&closing, 0, memory_order_release);
    sf__futex_wake(&closing, INT_MAX);
}

/* The floor above every push counter of the registry's queues: for the
 * next registry (destroy, after fork). Only while nobody else uses them. */
static void raise_floor(void)
{
    /* Relaxed: see the callers. */
    for (int i = 0, n = atomic_load_explicit(&nthreads, memory_order_relaxed); i < n; i++) {
        uint64_t c = sf__tag_seq(sf__registry_get(i)->q.seq << SF__TAG_SHIFT) + 1;
        if (c > seq_floor)
            seq_floor = c;
    }
}

uint64_t sf__registry_seq_floor(void) { return seq_floor; }

/* A new generation (never 0, which means "outside", registry.h). Relaxed:
 * see sf__thread_self. */
static void next_gen(void)
{
    if (atomic_fetch_add_explicit(&sf__registry_gen, 1, memory_order_relaxed) + 1 == 0)
        atomic_fetch_add_explicit(&sf__registry_gen, 1, memory_order_relaxed);
}

int sf__registry_init(size_t upper_size, void (*on_exit)(struct sf__thread *t))
{
    upper_bytes = upper_size;
    if (pthread_key_create(&exit_key, exit_key_destructor) != 0) {
        errno = EAGAIN;
        return -1;
    }
    exit_hook = on_exit;
    exit_key_live = true;
    next_gen();
    return 0;
}

void sf__registry_after_fork(void)
{
    sf__lock_init(&reg_lock, SF__RANK_REGISTRY, "reg_lock");
    /* The forking thread's exit must not run the hook on a struct of the
     * parent's runtime. A key deleted at shutdown may since belong to
     * someone else: delete only our live one. */
    if (exit_key_live)
        pthread_key_delete(exit_key);
    exit_key_live = false;
    /* Relaxed: the child has one thread. The parent's structs are still
     * readable here: their counters raise the floor (a task in caller
     * storage made before the fork is told from the child's own). */
    next_gen();
    raise_floor();
    atomic_store_explicit(&nthreads, 0, memory_order_relaxed);
    atomic_store_explicit(&closing, 0, memory_order_relaxed);
    atomic_store_explicit(&outsiders, 0, memory_order_relaxed);
    /* The parent's structs and chunks leak: their memory may be in any state. */
    memset(chunks, 0, sizeof chunks);
    dead = NULL;
    /* Outside any call: a fork inside one leaves a child that may only
     * exec or _exit (docs/limits.md). */
    sf__tls.me = NULL;
    sf__tls.gen = 0;
    sf__tls.inside = 0;
    sf__tls.outsider = false;
}

void sf__registry_destroy(void)
{
    /* Deleting the key first: no exit destructor starts on a freed struct;
     * one already running checks the generation, bumped under reg_lock
     * (mark_dead). */
    pthread_key_delete(exit_key);
    exit_key_live = false;
    sf__lock(&reg_lock);
    next_gen();
    sf__unlock(&reg_lock);
    /* Relaxed, both: nobody else uses the registry any more (it is closed,
     * Calls in flight; the workers are joined). */
    raise_floor();
    int n = atomic_load_explicit(&nthreads, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        struct sf__thread *t = sf__registry_get(i);
        sf__pending_destroy(&t->q);
        sf__freelist_destroy(&t->free);
        free(t);
    }
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0] && chunks[c] != NULL; c++) {
        free(chunks[c]);
        chunks[c] = NULL;
    }
    dead = NULL;
    atomic_store_explicit(&nthreads, 0, memory_order_relaxed);
    /* The closer's call goes on (it ends after the reopen): its struct is
     * gone, so none is found any more. */
    sf__tls.me = NULL;
}
